"""A spec written with blocks restores into TensorFlow's graph by name.

specc names a block call's variables as TF 1.x variable scopes name them
(`tf.compat.v1.variable_scope(None, default_name=...)`, a chosen name, nested
scopes, `reuse=True`). Here a spec with a `dense` block, a `tower` block that
calls it in a loop, a named call and a reused scope trains a few steps and
saves a checkpoint; TensorFlow builds the same model in graph mode with
`variable_scope` and `get_variable`, restores the checkpoint with a `Saver`
over its own variables (which fails on any name the checkpoint lacks), and
its logits on new rows equal `specc predict`'s.

The model's sizes, the data and the rows are drawn from SPECC_INTEROP_SEED
(any seed passes).
"""

import os
import subprocess

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

from conftest import write_rows  # noqa: E402

SEED = int(os.environ.get("SPECC_INTEROP_SEED", "2026"))

BLOCKS = """
block dense(x, units, activation = None) {
  params {
    kernel: [shape(x)[-1], units] = glorot_uniform
    bias: [units] = zeros
  }
  return activation(x @ kernel + bias)
}

block tower(x, depth, width) {
  h = x
  for i in range(depth) {
    h = dense(h, width, activation = relu)
  }
  return h
}
"""


def spec(features, depth, width, classes):
    return f"""model blocks
data csv("train.csv")
label y: int
features {{ x = numeric(x0..x{features - 1}) }}
{BLOCKS}
z = dense(x, {width}, name = "shared") + dense(x * 2.0, {width}, name = "shared", reuse = true)
t = tower(relu(z), {depth}, {width})
h = tower(t, 1, {width})
logits = dense(h, {classes}, name = "logits")
loss = mean(sparse_softmax_cross_entropy(y, logits))
optimizer adam(learning_rate = 0.01)
train {{ batch = 16, steps = 12, shuffle = 64, seed = 3 }}
outputs {{ logits = logits }}
"""


def tf_logits(prefix, x, depth, width, classes):
    """The same model in TF's graph mode, restored from specc's checkpoint."""
    g = tf.Graph()
    with g.as_default():
        inp = tf.compat.v1.placeholder(tf.float32, [None, x.shape[1]])

        def dense(h, units, activation=None, name=None, reuse=None):
            with tf.compat.v1.variable_scope(name, default_name="dense", reuse=reuse):
                k = tf.compat.v1.get_variable("kernel", [h.shape[-1], units])
                b = tf.compat.v1.get_variable("bias", [units])
                y = tf.matmul(h, k) + b
                return activation(y) if activation else y

        def tower(h, depth, width):
            with tf.compat.v1.variable_scope(None, default_name="tower"):
                for _ in range(depth):
                    h = dense(h, width, activation=tf.nn.relu)
                return h

        z = dense(inp, width, name="shared") + dense(inp * 2.0, width, name="shared", reuse=True)
        h = tower(tf.nn.relu(z), depth, width)
        h = tower(h, 1, width)
        logits = dense(h, classes, name="logits")
        names = sorted(v.op.name for v in tf.compat.v1.global_variables())
        saver = tf.compat.v1.train.Saver(var_list=tf.compat.v1.global_variables())
        with tf.compat.v1.Session(graph=g) as s:
            saver.restore(s, prefix)
            return names, s.run(logits, {inp: x})


def test_a_block_model_restores_into_tf_variable_scopes(specc, tmp_path):
    rng = np.random.default_rng(SEED)
    features = int(rng.integers(2, 7))
    depth = int(rng.integers(1, 4))
    width = int(rng.integers(2, 9))
    classes = int(rng.integers(2, 5))
    x = rng.normal(size=(64, features)).astype(np.float32)
    y = rng.integers(0, classes, 64)
    write_rows(tmp_path / "train.csv", x, y)
    (tmp_path / "spec.spec").write_text(spec(features, depth, width, classes))
    subprocess.run([specc, "run", "spec.spec", "--checkpoint-dir", "ckpt"],
                   cwd=tmp_path, check=True, capture_output=True, text=True)
    prefix = tf.train.latest_checkpoint(str(tmp_path / "ckpt"))

    new = rng.normal(size=(int(rng.integers(5, 40)), features)).astype(np.float32)
    write_rows(tmp_path / "new.csv", new)
    parsed = np.loadtxt(tmp_path / "new.csv", delimiter=",", skiprows=1, dtype=np.float32, ndmin=2)
    names, want = tf_logits(prefix, parsed, depth, width, classes)

    # TF's names, made by variable_scope, are exactly specc's parameters.
    expected = ["shared/kernel", "shared/bias"]
    for t, d in [("tower", depth), ("tower_1", 1)]:
        for i in range(d):
            scope = f"{t}/dense" + (f"_{i}" if i else "")
            expected += [f"{scope}/kernel", f"{scope}/bias"]
    expected += ["logits/kernel", "logits/bias"]
    assert names == sorted(expected)
    in_checkpoint = {n for n, _ in tf.train.list_variables(prefix)}
    assert set(expected) <= in_checkpoint
    assert "tower/dense/kernel/Adam" in in_checkpoint

    out = subprocess.run([specc, "predict", "spec.spec", "--checkpoint", "ckpt", "--data", "new.csv"],
                         cwd=tmp_path, check=True, capture_output=True, text=True).stdout
    lines = out.strip().split("\n")
    assert lines[0].split(",") == [f"logits_{k}" for k in range(classes)]
    got = np.array([[float(c) for c in l.split(",")] for l in lines[1:]])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
