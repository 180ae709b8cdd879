"""TensorBoard reads what `specc evaluate --checkpoint-dir` writes.

A linear softmax model is trained for 30 steps with a checkpoint every 10
(all kept, no held-out rows, so `specc run` writes no evaluation of its own); `specc evaluate --checkpoint-dir ck --eval-data eval.csv --json`
evaluates each checkpoint once. TensorBoard's EventMultiplexer finds the
`eval` run beside the training run with one point per checkpoint at its
global step, its `loss` and `accuracy` the float32 of specc's JSON; and each
value is the model's math on eval.csv with the weights TF's
`tf.train.load_checkpoint` reads from that checkpoint (global step included).
"""

import json
import subprocess

import numpy as np
import tensorflow as tf
from tensorboard.backend.event_processing import event_multiplexer

SPEC = """model linear
data csv("train.csv")
label y: int
features { x = numeric(x0..x2) }
params {
  W: [3, 3] = glorot_uniform(seed = 3)
  b: [3]    = zeros
}
logits = x @ W + b
loss   = mean(sparse_softmax_cross_entropy(y, logits))
optimizer adam(learning_rate = 0.05)
train { batch = 8, steps = 30, shuffle = 40, seed = 1 }
metrics { accuracy(y, argmax(logits, 1)) }
"""


def rows(rng, n):
    x = rng.normal(size=(n, 3)).round(2)
    y = np.where(x[:, 0] > x[:, 1], 0, np.where(x[:, 1] > x[:, 2], 1, 2))
    return x, y


def write(path, x, y):
    path.write_text(
        "x0,x1,x2,y\n" + "".join(f"{a},{b},{c},{int(l)}\n" for (a, b, c), l in zip(x, y))
    )


def test_tensorboard_reads_one_eval_point_per_checkpoint(specc, tmp_path):
    rng = np.random.default_rng(5)
    write(tmp_path / "train.csv", *rows(rng, 40))
    ex, ey = rows(rng, 23)
    write(tmp_path / "eval.csv", ex, ey)
    (tmp_path / "linear.spec").write_text(SPEC)
    subprocess.run(
        [specc, "run", "linear.spec", "--checkpoint-dir", "ck",
         "--checkpoint-every-steps", "10", "--keep", "0", "--eval-fraction", "0"],
        cwd=tmp_path, check=True, capture_output=True, text=True,
    )
    out = subprocess.run(
        [specc, "evaluate", "linear.spec", "--checkpoint-dir", "ck",
         "--eval-data", "eval.csv", "--json"],
        cwd=tmp_path, check=True, capture_output=True, text=True,
    )
    results = [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]
    assert [r["global_step"] for r in results] == [10, 20, 30]

    mux = event_multiplexer.EventMultiplexer()
    mux.AddRunsFromDirectory(str(tmp_path / "ck"))
    mux.Reload()
    assert "eval" in mux.Runs()
    for tag in ["loss", "accuracy"]:
        points = mux.Scalars("eval", tag)
        assert [p.step for p in points] == [10, 20, 30], tag
        want = [np.float32(r["eval"][tag]) for r in results]
        assert [np.float32(p.value) for p in points] == want, tag

    for r in results:
        ckpt = tf.train.load_checkpoint(str(tmp_path / r["checkpoint"]))
        assert ckpt.get_tensor("global_step") == r["global_step"]
        W = ckpt.get_tensor("W").astype(np.float64)
        b = ckpt.get_tensor("b").astype(np.float64)
        logits = ex @ W + b
        z = logits - logits.max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        loss = -logp[np.arange(len(ey)), ey].mean()
        accuracy = (logits.argmax(axis=1) == ey).mean()
        assert r["eval"]["rows"] == len(ey)
        np.testing.assert_allclose(r["eval"]["loss"], loss, rtol=1e-5)
        np.testing.assert_allclose(r["eval"]["accuracy"], accuracy, rtol=1e-12)
