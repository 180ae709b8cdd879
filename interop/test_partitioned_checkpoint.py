"""Partitioned variables: specc's sliced checkpoints and TF's, both ways.

`specs/wide_deep.spec` with a `partitioner` on its embedding column (an
Adagrad slot) and on its `linear_model` (FTRL's two slots, the bias too) is
TF's graph with `variable_scope(partitioner=fixed_size_partitioner(k))`
around `input_layer` and `linear_model`. Checked, to 1e-5 relative:

- specc's checkpoint, as TF reads it: `tf.train.load_variable` gives each
  full tensor, equal to `specc inspect`'s; TF's `Saver` restores it into a
  graph with the same partitioners and trains on to specc's last checkpoint
  (the same trajectory), and into a graph with other partitioners (the
  same logical values); `init_from_checkpoint` loads it into a graph with
  other partitioners.
- TF's checkpoint, written by a sharded `Saver` from variables on two CPU
  devices (a data file per device, `num_shards` > 1) with other partitions than the
  spec's: `specc inspect` lists it (full shapes, TF's slices), `specc
  predict` restores its parameters and gives TF's probabilities, `specc
  run` resumes from it (every variable, slot and the global step) and
  its next step is TF's, and `init_from_checkpoint` warm-starts from it as
  TF's does.
- A checkpoint saved as several processes would (the runtime's
  `write_shard` per shard, then `CheckpointManager::save_sharded`, through
  the `write_checkpoint` example): TF lists and loads it and its `Saver`
  restores it into another partitioning.

The rows (a subset of the Titanic data), the step count and every partition
count are drawn from SPECC_INTEROP_SEED (any seed passes).
"""

import csv
import glob
import json
import os
import subprocess
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

SEED = int(os.environ.get("SPECC_INTEROP_SEED", "2026"))
ROOT = Path(__file__).resolve().parent.parent
SCOPES = {"input_layer/": "input_layer/", "linear_model/": "linear_model/", "dnn/": "dnn/"}


def draw():
    """The rows, steps and partition counts of this seed."""
    rng = np.random.default_rng(SEED)
    with open(ROOT / "specs" / "data" / "titanic.csv", newline="") as f:
        all_rows = list(csv.DictReader(f))
    n = int(rng.integers(60, 200))
    rows = [all_rows[i] for i in sorted(rng.choice(len(all_rows), n, replace=False))]
    steps = int(rng.integers(3, 9))
    # (embedding table, linear_model) partitions: the spec's, TF's other.
    ours = (int(rng.integers(2, 7)), int(rng.integers(2, 5)))
    other = (ours[0] + int(rng.integers(1, 4)), ours[1] + int(rng.integers(1, 3)))
    return rows, steps, ours, other


def spec_text(n, parts, init_from=None):
    """wide_deep.spec partitioned by `parts`, training on all `n` rows as one
    batch in file order (optionally warm-started from `init_from`)."""
    text = (ROOT / "specs" / "wide_deep.spec").read_text()
    emb, lin = parts
    text = text.replace(
        "embedding_column(name, dimension = 4)",
        f"embedding_column(name, dimension = 4, partitioner = fixed_size_partitioner({emb}))")
    text = text.replace(
        "linear_model(ages, sex, pclass, cross)",
        f"linear_model(ages, sex, pclass, cross, partitioner = fixed_size_partitioner({lin}))")
    start = text.index("train {")
    end = text.index("}", start) + 1
    train = f"train {{ batch = {n}, steps = 1, eval_fraction = 0 }}"
    text = text[:start] + train + text[end:]
    if init_from:
        maps = ", ".join(f'"{k}": "{v}"' for k, v in SCOPES.items())
        text += f'\ninit_from_checkpoint("{init_from}", {{ {maps} }})\n'
    return text


def write_rows(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def model(rows, parts, devices=("/cpu:0", "/cpu:0")):
    """TF's graph of the spec (in the default graph): the logits, with the
    embedding table and the linear model partitioned by `parts`, the deep
    part on `devices[0]`, the wide on `devices[1]`."""
    fc = tf.compat.v1.feature_column
    ages_v = np.array([[float(r["age"]) if r["age"] else 30.0] for r in rows], np.float32)
    features = {
        "age": tf.constant(ages_v),
        "sex": tf.constant([[r["sex"]] for r in rows]),
        "pclass": tf.constant([[r["pclass"]] for r in rows]),
        "name": tf.constant([[r["name"]] for r in rows]),
    }
    age = tf.feature_column.numeric_column("age", default_value=30.0,
                                           normalizer_fn=lambda x: (x - 30.0) / 15.0)
    ages = tf.feature_column.bucketized_column(
        tf.feature_column.numeric_column("age", default_value=30.0), [10, 20, 30, 40, 50, 60])
    sex = tf.feature_column.categorical_column_with_vocabulary_list("sex", ["female", "male"])
    pclass = tf.feature_column.categorical_column_with_vocabulary_list("pclass", ["1st", "2nd", "3rd"])
    name = tf.feature_column.categorical_column_with_hash_bucket("name", 64)
    cross = tf.feature_column.crossed_column([sex, pclass], hash_bucket_size=16)
    root = tf.compat.v1.get_variable_scope()
    fixed = tf.compat.v1.fixed_size_partitioner
    with tf.device(devices[0]):
        with tf.compat.v1.variable_scope(root, partitioner=fixed(parts[0])):
            deep = fc.input_layer(features, [age, tf.feature_column.indicator_column(sex),
                                             tf.feature_column.indicator_column(pclass),
                                             tf.feature_column.embedding_column(name, 4)])

        def dense(h, units, activation=None, name=None):
            with tf.compat.v1.variable_scope(name, default_name="dense"):
                k = tf.compat.v1.get_variable("kernel", [h.shape[-1], units])
                b = tf.compat.v1.get_variable("bias", [units], initializer=tf.zeros_initializer())
                y = tf.matmul(h, k) + b
                return activation(y) if activation else y

        with tf.compat.v1.variable_scope(None, default_name="dnn"):
            h = dense(deep, 16, tf.nn.relu)
            h = dense(h, 8, tf.nn.relu)
            out = dense(h, 1, name="logits")
    with tf.device(devices[1]):
        with tf.compat.v1.variable_scope(root, partitioner=fixed(parts[1])):
            wide = fc.linear_model(features, [ages, sex, pclass, cross])
    return tf.reshape(out + wide, [-1])


def train_op(rows, logits):
    """The spec's step: FTRL on linear_model/, Adagrad on the rest."""
    labels = tf.constant([1.0 if r["survived"] == "yes" else 0.0 for r in rows])
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))
    step = tf.compat.v1.train.get_or_create_global_step()
    trainable = tf.compat.v1.trainable_variables()
    linear = [v for v in trainable if v.op.name.startswith("linear_model/")]
    deep_vars = [v for v in trainable if not v.op.name.startswith("linear_model/")]
    grads = tf.gradients(loss, linear + deep_vars)
    ops = [tf.compat.v1.train.FtrlOptimizer(0.2).apply_gradients(zip(grads[:len(linear)], linear)),
           tf.compat.v1.train.AdagradOptimizer(0.05).apply_gradients(
               zip(grads[len(linear):], deep_vars))]
    with tf.control_dependencies(ops):
        return step.assign_add(1)


def logical(sess):
    """Every variable's value under its checkpoint name: a partitioned
    variable's parts concatenated in order (TF's save_slice_info)."""
    parts = {}
    for v in tf.compat.v1.global_variables():
        info = v._save_slice_info
        name = info.full_name if info else v.op.name
        offset = info.var_offset[0] if info else 0
        parts.setdefault(name, []).append((offset, sess.run(v)))
    return {n: p[0][1] if len(p) == 1 else
            np.concatenate([x for _, x in sorted(p, key=lambda q: q[0])])
            for n, p in parts.items()}


def partitions(sess, name):
    """How many parts TF's graph has of the variable `name`."""
    return sum(1 for v in tf.compat.v1.global_variables()
               if v._save_slice_info and v._save_slice_info.full_name == name)


def run(specc, cwd, *args):
    return subprocess.run([specc, *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def assert_values(got, want):
    assert sorted(got) == sorted(want), "the same variables by name"
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)


def saved(prefix):
    """A checkpoint's tensors by name (specc's resume state aside)."""
    r = tf.train.load_checkpoint(prefix)
    return {n: r.get_tensor(n) for n, _ in tf.train.list_variables(prefix)
            if not n.startswith("specc/") and n != "global_step"}


def test_tf_reads_and_restores_specc_partitioned_checkpoint(specc, tmp_path):
    rows, steps, ours, other = draw()
    (tmp_path / "data").mkdir()
    write_rows(tmp_path / "data" / "titanic.csv", rows)
    (tmp_path / "spec.spec").write_text(spec_text(len(rows), ours))
    for d, k in [("first", 1), ("last", steps)]:
        run(specc, tmp_path, "run", "spec.spec", "--steps", str(k), "--checkpoint-dir", d)
    first = tf.train.latest_checkpoint(str(tmp_path / "first"))
    last = tf.train.latest_checkpoint(str(tmp_path / "last"))
    want = saved(last)

    # specc lists one logical variable per partitioned table, with slices.
    listed = json.loads(run(specc, tmp_path, "inspect", "--json", last))["variables"]
    table = "input_layer/name_embedding/embedding_weights"
    sliced = {v["name"]: len(v["slices"]) for v in listed if "slices" in v}
    assert sliced[table] == sliced[table + "/Adagrad"] == ours[0]
    assert sliced["linear_model/pclass_X_sex/weights/Ftrl_1"] == ours[1]
    # tf.train.load_variable reads each full tensor as specc wrote it.
    for name in sliced:
        mine = json.loads(run(specc, tmp_path, "inspect", "--json", last, "--tensor", name))
        np.testing.assert_array_equal(tf.train.load_variable(last, name),
                                      np.array(mine["values"], np.float32), err_msg=name)

    # Saver restores the first step into the same partitioning; TF trains on.
    with tf.Graph().as_default():
        train = train_op(rows, model(rows, ours))
        with tf.compat.v1.Session() as s:
            s.run(tf.compat.v1.tables_initializer())
            tf.compat.v1.train.Saver().restore(s, first)
            assert partitions(s, table) == ours[0]
            for _ in range(steps - 1):
                s.run(train)
            got = logical(s)
            assert int(got.pop("global_step")) == steps
    assert_values(got, want)

    # ... and the last into another partitioning.
    with tf.Graph().as_default():
        train_op(rows, model(rows, other))
        with tf.compat.v1.Session() as s:
            tf.compat.v1.train.Saver().restore(s, last)
            assert partitions(s, table) == other[0]
            got = logical(s)
            got.pop("global_step")
    assert_values(got, want)

    # init_from_checkpoint into another partitioning (parameters only).
    with tf.Graph().as_default():
        model(rows, other)
        tf.compat.v1.train.init_from_checkpoint(last, SCOPES)
        with tf.compat.v1.Session() as s:
            s.run(tf.compat.v1.global_variables_initializer())
            got = logical(s)
    assert_values(got, {n: v for n, v in want.items() if n in got})
    assert table in got and "linear_model/bias_weights" in got


def tf_sharded_checkpoint(rows, steps, parts, directory):
    """TF trains `steps` steps and saves with a sharded Saver from two CPU
    devices; returns its probabilities and, after one more step, its
    variables."""
    config = tf.compat.v1.ConfigProto(device_count={"CPU": 2}, inter_op_parallelism_threads=1,
                                      intra_op_parallelism_threads=1)
    with tf.Graph().as_default():
        logits = model(rows, parts, devices=("/cpu:0", "/cpu:1"))
        train = train_op(rows, logits)
        with tf.compat.v1.Session(config=config) as s:
            s.run(tf.compat.v1.global_variables_initializer())
            s.run(tf.compat.v1.tables_initializer())
            for _ in range(steps):
                s.run(train)
            saver = tf.compat.v1.train.Saver(sharded=True)
            prefix = saver.save(s, str(directory / "model.ckpt"), global_step=steps)
            probabilities = s.run(tf.sigmoid(logits))
            s.run(train)
            after = logical(s)
    return prefix, probabilities, after


def test_specc_restores_tfs_sharded_partitioned_checkpoint(specc, tmp_path):
    rows, steps, ours, other = draw()
    (tmp_path / "data").mkdir()
    write_rows(tmp_path / "data" / "titanic.csv", rows)
    (tmp_path / "spec.spec").write_text(spec_text(len(rows), ours))
    tfdir = tmp_path / "tf"
    tfdir.mkdir()
    prefix, probabilities, after = tf_sharded_checkpoint(rows, steps, other, tfdir)
    shards = glob.glob(prefix + ".data-*")
    assert len(shards) >= 2, "several data shards (one per device, and the step's)"

    # specc lists TF's logical variables, full shapes, TF's slices.
    listed = json.loads(run(specc, tmp_path, "inspect", "--json", prefix))["variables"]
    assert {v["name"]: v["shape"] for v in listed} == {
        n: s for n, s in tf.train.list_variables(prefix)}
    table = "input_layer/name_embedding/embedding_weights"
    by_name = {v["name"]: v for v in listed}
    assert len(by_name[table + "/Adagrad"]["slices"]) == other[0]
    assert len(by_name["linear_model/bias_weights/Ftrl"].get("slices", [])) == 0

    # predict restores the parameters into the spec's own partitioning.
    out = run(specc, tmp_path, "predict", "spec.spec", "--checkpoint", prefix,
              "--data", "data/titanic.csv", "--format", "jsonl")
    got = np.array([json.loads(line)["probability"] for line in out.strip().split("\n")])
    np.testing.assert_allclose(got, probabilities, rtol=1e-5, atol=1e-6)

    # run resumes from it (every variable, slot, the global step): its next
    # step is TF's.
    run(specc, tmp_path, "run", "spec.spec", "--steps", str(steps + 1),
        "--checkpoint-dir", str(tfdir))
    last = tf.train.latest_checkpoint(str(tfdir))
    assert last.endswith(f"model.ckpt-{steps + 1}")
    assert int(tf.train.load_variable(last, "global_step")) == steps + 1
    after.pop("global_step")
    assert_values(saved(last), after)

    # init_from_checkpoint from it: the parameters, fresh slots; one step.
    (tmp_path / "warm.spec").write_text(spec_text(len(rows), ours, init_from=prefix))
    run(specc, tmp_path, "run", "warm.spec", "--steps", "1", "--checkpoint-dir", "warm")
    with tf.Graph().as_default():
        logits = model(rows, ours)
        tf.compat.v1.train.init_from_checkpoint(prefix, SCOPES)
        train = train_op(rows, logits)
        with tf.compat.v1.Session() as s:
            s.run(tf.compat.v1.global_variables_initializer())
            s.run(tf.compat.v1.tables_initializer())
            s.run(train)
            want = logical(s)
            want.pop("global_step")
    assert_values(saved(tf.train.latest_checkpoint(str(tmp_path / "warm"))), want)


def test_tf_reads_a_checkpoint_saved_by_several_processes(specc, tmp_path):
    """The runtime's multi-process save (`write_shard` per process, then
    `CheckpointManager::save_sharded`), done by the `write_checkpoint`
    example: TF lists, loads and restores it into its own partitioning."""
    from conftest import runtime_example

    writer = runtime_example("write_checkpoint", "SPECC_WRITE_CHECKPOINT")
    rng = np.random.default_rng(SEED)
    shards = int(rng.integers(2, 5))
    rows, dim = int(rng.integers(shards, 40)), int(rng.integers(1, 6))
    tensors = {
        "emb": rng.standard_normal((rows, dim)).astype(np.float32),
        "emb/Adagrad": rng.random((rows, dim)).astype(np.float32),
        "bias": rng.standard_normal(shards - 1).astype(np.float32),
        "global_step": np.int64(rng.integers(1, 1000)),
    }
    dtypes = {"global_step": "int64"}
    spec = {"manager": {"dir": str(tmp_path / "ckpt"), "step": 7}, "shards": shards,
            "tensors": [{"name": n, "dtype": dtypes.get(n, "float32"),
                         "shape": list(np.shape(v)), "values": np.asarray(v).tolist()}
                        for n, v in tensors.items()]}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    subprocess.run([writer, str(tmp_path / "spec.json")], check=True)
    prefix = tf.train.latest_checkpoint(str(tmp_path / "ckpt"))
    assert prefix.endswith("model.ckpt-7")
    assert len(glob.glob(prefix + f".data-*-of-{shards:05d}")) == shards
    assert dict(tf.train.list_variables(prefix)) == {
        n: list(np.shape(v)) for n, v in tensors.items()}
    for n, v in tensors.items():
        np.testing.assert_array_equal(tf.train.load_variable(prefix, n), v, err_msg=n)
    listed = json.loads(run(specc, tmp_path, "inspect", "--json", prefix))["variables"]
    assert {v["name"]: len(v.get("slices", [])) for v in listed} == {
        "emb": shards, "emb/Adagrad": shards, "bias": 0, "global_step": 0}

    # Saver restores it into a graph with another partitioning.
    k = int(rng.integers(1, rows + 1))
    with tf.Graph().as_default():
        emb = tf.compat.v1.get_variable("emb", [rows, dim],
                                        partitioner=tf.compat.v1.fixed_size_partitioner(k))
        bias = tf.compat.v1.get_variable("bias", [shards - 1])
        with tf.compat.v1.Session() as s:
            tf.compat.v1.train.Saver([emb, bias]).restore(s, prefix)
            np.testing.assert_array_equal(s.run(tf.concat(list(emb), 0)), tensors["emb"])
            np.testing.assert_array_equal(s.run(bias), tensors["bias"])
