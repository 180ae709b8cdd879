"""TensorFlow computes the same predictions as `specc predict` from the checkpoint.

specc trains a two-layer classifier (a normalizer on the features, relu,
softmax) for 60 steps and saves a checkpoint. TensorFlow reads the
checkpoint's variables with `tf.train.load_checkpoint` and computes the
spec's `outputs` (probabilities, logits, class) with TF ops on a data file
without the label column; `specc predict` writes them as CSV and as JSON
lines. They match to 1e-5 relative, row for row, in input order.
"""

import json
import subprocess

import numpy as np
import tensorflow as tf

from conftest import write_rows

SPEC = """model mlp
data csv("train.csv")
label y: int
features { x = numeric(x0..x3, normalizer = (x - 1) / 2) }
params {
  W1: [4, 16] = glorot_uniform(seed = 1)
  b1: [16]    = zeros
  W2: [16, 3] = glorot_uniform(seed = 2)
  b2: [3]     = zeros
}
h      = relu(x @ W1 + b1)
logits = h @ W2 + b2
loss   = mean(sparse_softmax_cross_entropy(y, logits))
optimizer adam(learning_rate = 0.02)
train { batch = 16, steps = 60, shuffle = 64, seed = 3 }
outputs {
  probs  = softmax(logits)
  logits = logits
  class  = argmax(logits, 1)
}
"""


def tf_outputs(prefix, x):
    reader = tf.train.load_checkpoint(prefix)
    v = {n: tf.constant(reader.get_tensor(n)) for n in ["W1", "b1", "W2", "b2"]}
    xs = (tf.constant(x) - 1.0) / 2.0
    h = tf.nn.relu(tf.matmul(xs, v["W1"]) + v["b1"])
    logits = tf.matmul(h, v["W2"]) + v["b2"]
    return {
        "probs": tf.nn.softmax(logits).numpy(),
        "logits": logits.numpy(),
        "class": tf.argmax(logits, axis=1).numpy(),
    }


def test_specc_predict_equals_tensorflow(specc, tmp_path):
    rng = np.random.default_rng(11)
    x = rng.normal(loc=1.0, scale=2.0, size=(200, 4)).astype(np.float32)
    y = (x[:, 0] > x[:, 1]).astype(int) + (x[:, 2] > 1.0).astype(int)
    write_rows(tmp_path / "train.csv", x, y)
    (tmp_path / "spec.spec").write_text(SPEC)
    subprocess.run(
        [specc, "run", "spec.spec", "--checkpoint-dir", "ckpt"],
        cwd=tmp_path, check=True, capture_output=True, text=True,
    )
    # 77 new rows, no label column: batches of 32 end with a short one.
    new = rng.normal(loc=1.0, scale=2.0, size=(77, 4)).astype(np.float32)
    write_rows(tmp_path / "new.csv", new)
    # What the CSV reader parses back: float32 of the decimal text.
    parsed = np.loadtxt(tmp_path / "new.csv", delimiter=",", skiprows=1, dtype=np.float32)
    want = tf_outputs(str(tf.train.latest_checkpoint(str(tmp_path / "ckpt"))), parsed)

    base = [specc, "predict", "spec.spec", "--checkpoint", "ckpt", "--data", "new.csv",
            "--batch", "32"]
    csv = subprocess.run(base, cwd=tmp_path, check=True, capture_output=True, text=True).stdout
    lines = csv.strip().split("\n")
    assert lines[0].split(",") == (
        [f"probs_{k}" for k in range(3)] + [f"logits_{k}" for k in range(3)] + ["class"]
    )
    table = np.array([[float(c) for c in l.split(",")] for l in lines[1:]])
    assert table.shape == (77, 7)
    np.testing.assert_allclose(table[:, 0:3], want["probs"], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(table[:, 3:6], want["logits"], rtol=1e-5, atol=1e-6)
    assert (table[:, 6] == want["class"]).all()

    subprocess.run(base + ["--output", "p.jsonl"], cwd=tmp_path, check=True,
                   capture_output=True, text=True)
    rows = [json.loads(l) for l in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert len(rows) == 77
    assert list(rows[0]) == ["probs", "logits", "class"]
    np.testing.assert_allclose(np.array([r["probs"] for r in rows]), want["probs"],
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.array([r["logits"] for r in rows]), want["logits"],
                               rtol=1e-5, atol=1e-6)
    assert [r["class"] for r in rows] == want["class"].tolist()
