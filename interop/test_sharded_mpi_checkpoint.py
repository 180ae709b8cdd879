"""Tables sharded across MPI ranks: the checkpoint the ranks write together,
as TF reads it.

A wide-and-deep model over hashed ids (two `embedding_column`s under
Adagrad, a `linear_model` under FTRL) with a `fixed_size_partitioner` on
its tables trains on N ranks (`mpirun -np N specc run`), each rank holding
its partitions' rows and writing them to its own data file
(`.data-<rank>-of-<N>`), rank 0 the index. Checked:

- TF lists the checkpoint: one logical variable per table and slot, with
  its full shape, in N data files;
- `tf.train.load_variable` of every variable equals what one process
  training on the global batch saves, to 1e-5 relative to the variable's
  largest magnitude (the replicas' partial sums add up in another order);
- TF's `Saver` restores the tables and their slots into a graph whose
  `get_variable` partitions them otherwise, with the same logical values.

The rank count, partitions, hash buckets, embedding width and steps are
drawn from SPECC_INTEROP_SEED (any seed passes).
"""

import glob
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

SEED = int(os.environ.get("SPECC_INTEROP_SEED", "2026"))
ROOT = Path(__file__).resolve().parent.parent


def draw():
    rng = np.random.default_rng(SEED + 30)
    ranks = int(rng.integers(2, 4))
    parts = int(rng.integers(ranks, 2 * ranks + 2))
    buckets = int(rng.choice([4096, 8192, 16384]))
    dim = int(rng.integers(2, 9))
    steps = int(rng.integers(3, 9))
    return ranks, parts, buckets, dim, steps


def spec_text(parts, buckets, dim, steps):
    data = ROOT / "specs" / "data" / "ctr_sample.csv"
    p = f"partitioner = fixed_size_partitioner({parts})"
    return f"""model ctr_deep
data csv("{data}")
label click: float
features {{
  user_id = categorical_column_with_hash_bucket(user_id, {buckets})
  ad_id   = categorical_column_with_hash_bucket(ad_id, {buckets})
  site    = categorical_column_with_hash_bucket(site, {buckets})
  deep = input_layer(embedding_column(user_id, dimension = {dim}, {p}),
                     embedding_column(ad_id, dimension = {dim}, {p}))
  wide = linear_model(site, {p})
}}
block dnn(x) {{
  h = layers.dense(x, 8, activation = relu)
  return layers.dense(h, 1, name = "logits")
}}
logit = reshape(dnn(deep) + wide, [B])
loss = mean(sigmoid_cross_entropy(click, logit))
optimizer ftrl(learning_rate = 0.1, var_list = "linear_model/*")
optimizer adagrad(learning_rate = 0.05, var_list = ["dnn/*", "input_layer/*"])
train {{ batch = 60, steps = {steps}, shuffle = 0, eval_fraction = 0 }}
"""


def mpirun(ranks):
    exe = shutil.which("mpirun")
    assert exe, "mpirun (OpenMPI) is installed by tools/install-mpi"
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none")
    return [exe, "--oversubscribe", "--bind-to", "none", "-np", str(ranks)], env


def latest(directory):
    return tf.train.latest_checkpoint(str(directory))


def test_tf_reads_the_checkpoint_sharded_ranks_write(specc, tmp_path):
    ranks, parts, buckets, dim, steps = draw()
    spec = tmp_path / "ctr_deep.spec"
    spec.write_text(spec_text(parts, buckets, dim, steps))
    one, many = tmp_path / "one", tmp_path / "many"
    subprocess.run([specc, "run", str(spec), "--checkpoint-dir", str(one)], check=True,
                   capture_output=True)
    cmd, env = mpirun(ranks)
    out = subprocess.run(cmd + [specc, "run", str(spec), "--checkpoint-dir", str(many)],
                         check=True, capture_output=True, text=True, env=env)
    assert "tables are sharded across the replicas" in out.stderr, out.stderr

    a, b = latest(one), latest(many)
    assert b.endswith(f"-{steps}")
    assert len(glob.glob(b + ".data-*")) == ranks
    assert glob.glob(b + f".data-00000-of-{ranks:05d}")
    want = dict(tf.train.list_variables(a))
    got = dict(tf.train.list_variables(b))
    assert got == want
    tables = [n for n in got if n.startswith(("input_layer/", "linear_model/site"))]
    assert len(tables) >= 3 * 2, tables
    for name in got:
        x, y = tf.train.load_variable(a, name), tf.train.load_variable(b, name)
        if np.issubdtype(x.dtype, np.floating):
            scale = max(float(np.max(np.abs(x))), 1e-30)
            assert float(np.max(np.abs(x - y))) / scale < 1e-5, name
        else:
            np.testing.assert_array_equal(x, y, err_msg=name)

    # TF's Saver restores the sharded tables into its own, other partitioning.
    other = parts + 1 + SEED % 3
    g = tf.Graph()
    with g.as_default():
        made = {}
        for name in tables:
            shape = got[name]
            made[name] = tf.compat.v1.get_variable(
                name, shape=shape, dtype=tf.float32,
                initializer=tf.compat.v1.zeros_initializer(),
                partitioner=tf.compat.v1.fixed_size_partitioner(other))
        saver = tf.compat.v1.train.Saver(made)
        with tf.compat.v1.Session(graph=g) as sess:
            saver.restore(sess, b)
            for name, v in made.items():
                np.testing.assert_array_equal(
                    sess.run(v.as_tensor()), tf.train.load_variable(b, name), err_msg=name)
