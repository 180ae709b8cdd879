"""specc's `warm_start(..)` initializes variables as TF's
`tf.compat.v1.train.warm_start` does, vocabularies remapped.

TensorFlow (graph mode) writes a checkpoint of an old model: a matrix
trained against an old vocabulary (`old_E`, rows per old entry for axis 0,
columns for axis 1) and a dense `W`. The new model has the matrix `E` over
a new vocabulary (some old entries in another order, some new ones, OOV
buckets) and `W`, and both initialize them from the checkpoint with
`vars_to_warm_start = "E|W"` (a bias `c` of the new size stays out),
`var_name_to_vocab_info = {"E": VocabInfo(new, size, oov, old, old_size,
backup, axis)}` and `var_name_to_prev_var_name = {"E": "old_E"}`.

specc's warm-started values are those of the checkpoint after one step of
a loss multiplied by 0 (each update is exactly zero). TF's are the
variables after `global_variables_initializer()`. `W` and every remapped
row or column equal TF's exactly; with a `zeros` or `constant` backup
initializer so does every new entry and OOV bucket; with a random one the
same entries are newly initialized (none of them equals the checkpoint's)
and the others copied.

Vocabularies, sizes, the OOV buckets, `old_vocab_size`, the axis and the
values are drawn from SPECC_INTEROP_SEED (any seed passes).
"""

import os
import subprocess

import numpy as np
import pytest
import tensorflow as tf

from conftest import literal

SEED = int(os.environ.get("SPECC_INTEROP_SEED", "2026"))
BACKUPS = ["zeros", "constant", "random"]


def draw(backup):
    rng = np.random.default_rng(SEED + BACKUPS.index(backup))
    pool = [f"tok{i}" for i in range(40)]
    rng.shuffle(pool)
    n_old = int(rng.integers(3, 12))
    old = pool[:n_old]
    old_size = int(rng.choice([-1, int(rng.integers(1, n_old + 1))]))
    kept = rng.choice(old, size=int(rng.integers(1, n_old + 1)), replace=False).tolist()
    fresh = pool[n_old:n_old + int(rng.integers(0, 5))]
    new = kept + fresh
    rng.shuffle(new)
    # Extra lines past new_vocab_size are not read.
    size = int(rng.integers(max(1, len(new) - 2), len(new) + 1))
    oov = int(rng.integers(0, 3))
    axis = int(rng.integers(0, 2))
    d = int(rng.integers(1, 5))
    old_shape = (n_old, d) if axis == 0 else (d, n_old)
    shape = (size + oov, d) if axis == 0 else (d, size + oov)
    return dict(
        old=old, new=new, old_size=old_size, size=size, oov=oov, axis=axis, d=d,
        old_E=rng.normal(size=old_shape).astype(np.float32),
        W=rng.normal(size=(d, 2)).astype(np.float32),
        shape=shape, constant=float(rng.normal()),
    )


def backup_text(p, backup):
    return {"zeros": "zeros", "constant": f"constant({p['constant']!r})",
            "random": "random_normal(stddev = 1, seed = 5)"}[backup]


def tf_backup(p, backup):
    return {"zeros": tf.compat.v1.zeros_initializer(),
            # `constant_initializer` cannot take the symbolic shape
            # `_load_and_remap_matrix` gives it: the same values by `fill`.
            "constant": lambda shape, dtype=tf.float32, partition_info=None: tf.fill(
                shape, tf.constant(p["constant"], dtype)),
            "random": tf.compat.v1.random_normal_initializer(stddev=1.0, seed=5)}[backup]


def write_old_checkpoint(p, path):
    g = tf.Graph()
    with g.as_default():
        v = [tf.compat.v1.get_variable("old_E", initializer=p["old_E"]),
             tf.compat.v1.get_variable("W", initializer=p["W"])]
        saver = tf.compat.v1.train.Saver(v)
        with tf.compat.v1.Session(graph=g) as s:
            s.run(tf.compat.v1.global_variables_initializer())
            return saver.save(s, str(path))


def tf_warm_started(p, backup, ckpt, tmp_path):
    g = tf.Graph()
    with g.as_default():
        E = tf.compat.v1.get_variable("E", shape=p["shape"], initializer=tf.compat.v1.ones_initializer())
        W = tf.compat.v1.get_variable("W", shape=(p["d"], 2), initializer=tf.compat.v1.ones_initializer())
        c = tf.compat.v1.get_variable("c", shape=(2 if p["axis"] == 0 else p["shape"][1],), initializer=tf.compat.v1.zeros_initializer())
        info = tf.compat.v1.train.VocabInfo(
            new_vocab=str(tmp_path / "new.txt"), new_vocab_size=p["size"], num_oov_buckets=p["oov"],
            old_vocab=str(tmp_path / "old.txt"), old_vocab_size=p["old_size"],
            backup_initializer=tf_backup(p, backup), axis=p["axis"])
        tf.compat.v1.train.warm_start(ckpt, vars_to_warm_start="E|W",
                                      var_name_to_vocab_info={"E": info},
                                      var_name_to_prev_var_name={"E": "old_E"})
        with tf.compat.v1.Session(graph=g) as s:
            s.run(tf.compat.v1.global_variables_initializer())
            return s.run(E), s.run(W), s.run(c)


def spec_text(p, backup):
    rows, cols = p["shape"]
    if p["axis"] == 0:
        features = f"ids = integer(i, num_buckets = {rows})"
        model = "logits = embedding_lookup(E, ids) @ W + c"
        c = 2
    else:
        features = f"x = numeric(x0..x{p['d'] - 1})"
        model = "logits = x @ E + c + mean(x @ W)"
        c = cols
    info = (f'vocab_info(new_vocab = "new.txt", new_vocab_size = {p["size"]}, '
            f'num_oov_buckets = {p["oov"]}, old_vocab = "old.txt", old_vocab_size = {p["old_size"]}, '
            f'backup_initializer = {backup_text(p, backup)}, axis = {p["axis"]})')
    return f"""model warm
data csv("train.csv")
label y: int
features {{ {features} }}
params {{
  E: [{rows}, {cols}] = ones
  W: [{p['d']}, 2] = ones
  c: [{c}] = zeros
}}
{model}
# Multiplied by 0: the one step changes nothing, so the checkpoint holds
# the warm-started values.
loss = 0 * mean(sparse_softmax_cross_entropy(y, logits))
optimizer gradient_descent(learning_rate = 1)
train {{ batch = 2, steps = 1, shuffle = 0, eval_fraction = 0 }}
warm_start("old/model.ckpt", vars_to_warm_start = "E|W",
           var_name_to_vocab_info = {{ "E": {info} }},
           var_name_to_prev_var_name = {{ "E": "old_E" }})
"""


def write_train(p, path):
    with open(path, "w") as f:
        if p["axis"] == 0:
            f.write("i,y\n0,0\n1,1\n")
        else:
            f.write(",".join(f"x{k}" for k in range(p["d"])) + ",y\n")
            f.write(",".join("0.5" for _ in range(p["d"])) + ",0\n")
            f.write(",".join("1.5" for _ in range(p["d"])) + ",1\n")


def expected_copies(p):
    """For each entry of the new vocabulary along the axis: the old index it
    copies (TF's `generate_vocab_remapping`), or None."""
    old = p["old"] if p["old_size"] == -1 or p["axis"] == 1 else p["old"][:p["old_size"]]
    return [old.index(t) if t in old else None for t in p["new"][:p["size"]]]


@pytest.mark.parametrize("backup", BACKUPS)
def test_warm_start_remaps_as_tensorflow(specc, tmp_path, backup):
    p = draw(backup)
    (tmp_path / "old.txt").write_text("".join(t + "\n" for t in p["old"]))
    (tmp_path / "new.txt").write_text("".join(t + "\n" for t in p["new"]))
    ckpt = write_old_checkpoint(p, tmp_path / "old" / "model.ckpt")
    E_tf, W_tf, c_tf = tf_warm_started(p, backup, ckpt, tmp_path)

    write_train(p, tmp_path / "train.csv")
    (tmp_path / "spec.spec").write_text(spec_text(p, backup))
    r = subprocess.run([specc, "run", "spec.spec", "--checkpoint-dir", "new"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "2 parameters initialized from" in r.stderr, r.stderr
    reader = tf.train.load_checkpoint(str(tmp_path / "new"))
    E, W, c = reader.get_tensor("E"), reader.get_tensor("W"), reader.get_tensor("c")

    np.testing.assert_array_equal(W, W_tf)
    np.testing.assert_array_equal(W, p["W"])
    # `c` is not selected: both keep its initializer's zeros.
    np.testing.assert_array_equal(c, c_tf)
    np.testing.assert_array_equal(c, np.zeros_like(c))
    assert E.shape == E_tf.shape == p["shape"]

    # Move the vocabulary's axis first: entry i is E[i].
    E_, E_tf_ = (E, E_tf) if p["axis"] == 0 else (E.T, E_tf.T)
    old_ = p["old_E"] if p["axis"] == 0 else p["old_E"].T
    copies = expected_copies(p)
    for i, src in enumerate(copies):
        if src is not None:
            np.testing.assert_array_equal(E_[i], old_[src])
            np.testing.assert_array_equal(E_[i], E_tf_[i])
    new_entries = [i for i, s in enumerate(copies) if s is None] + list(range(p["size"], p["size"] + p["oov"]))
    if backup == "random":
        # Newly initialized, as TF's: no such entry is a row of the checkpoint.
        for i in new_entries:
            for row in (E_[i], E_tf_[i]):
                assert np.all(np.isfinite(row))
                assert not any(np.array_equal(row, o) for o in old_)
        if len(new_entries) * p["d"] > 1:
            assert np.std(E_[new_entries]) > 0
    else:
        np.testing.assert_array_equal(E, E_tf)
        want = 0.0 if backup == "zeros" else np.float32(p["constant"])
        for i in new_entries:
            np.testing.assert_array_equal(E_[i], np.full(p["d"], want, np.float32))


def test_warm_start_refuses_a_vocabulary_of_the_wrong_size(specc, tmp_path):
    p = draw("zeros")
    (tmp_path / "old.txt").write_text("".join(t + "\n" for t in p["old"]))
    (tmp_path / "new.txt").write_text("".join(t + "\n" for t in p["new"]))
    write_train(p, tmp_path / "train.csv")
    wrong = spec_text(p, "zeros").replace(f"new_vocab_size = {p['size']}", f"new_vocab_size = {p['size'] + 1}")
    (tmp_path / "spec.spec").write_text(wrong)
    r = subprocess.run([specc, "check", "spec.spec"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode != 0
    assert "new_vocab_size" in r.stderr and "^" in r.stderr, r.stderr
