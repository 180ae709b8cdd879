"""TensorFlow serves specc's moving averages as `specc --use-averages` does.

specc trains a two-layer classifier with gradient descent on one full batch
and `ema DECAY` over all parameters or over a chosen `var_list`, and saves a
checkpoint. Then:

- TensorFlow (graph mode, tf.compat.v1) trains the same model from the same
  initial values for the same steps, with
  `ExponentialMovingAverage(decay, num_updates).apply(var_list)` run after
  each training step, and saves its checkpoint: both checkpoints hold the
  same shadows (`W1/ExponentialMovingAverage`, ... only for the chosen
  variables) with the same values, and the same variables.
- TensorFlow builds the model, creates the same shadows and restores
  specc's checkpoint with `Saver(ema.variables_to_restore(...))` (every
  trainable variable averaged: `variables_to_restore()`; a subset:
  `variables_to_restore(tf.compat.v1.moving_average_variables())`, as
  `variables_to_restore()` would look for averages of every trainable
  variable). Its logits on new rows equal `specc predict --use-averages`'s
  (or, when the spec says `use_averages = true`, plain `specc predict`'s),
  the TF Lite model `specc export --use-averages` writes run in LiteRT
  gives them too, and its loss on the rows equals `specc evaluate`'s; all
  to 1e-5 relative. Without the averages specc's predictions are the
  trained values' (TF restoring with a plain `Saver`).

Sizes, values, the decay, `num_updates` and the subset are drawn from
SPECC_INTEROP_SEED (any seed passes).
"""

import json
import os
import subprocess

import numpy as np
import pytest
import tensorflow as tf

from conftest import literal, write_rows

SEED = int(os.environ.get("SPECC_INTEROP_SEED", "2026"))
PARAMS = ["W1", "b1", "W2", "b2"]
LEARNING_RATE = 0.5


def draw(case):
    """The problem of `case` ("all" or "subset"): sizes, initial values,
    data, the moving average's settings."""
    rng = np.random.default_rng(SEED + (0 if case == "all" else 1))
    d, h, c = int(rng.integers(2, 6)), int(rng.integers(2, 8)), int(rng.integers(2, 5))
    rows, steps = int(rng.integers(16, 48)), int(rng.integers(5, 16))
    init = {
        "W1": rng.normal(scale=0.8, size=(d, h)),
        "b1": rng.normal(scale=0.2, size=(h,)),
        "W2": rng.normal(scale=0.8, size=(h, c)),
        "b2": rng.normal(scale=0.2, size=(c,)),
    }
    init = {k: v.astype(np.float32) for k, v in init.items()}
    x = rng.normal(size=(rows, d)).astype(np.float32)
    y = rng.integers(0, c, size=rows)
    new = rng.normal(size=(int(rng.integers(5, 40)), d)).astype(np.float32)
    eval_y = rng.integers(0, c, size=len(new))
    if case == "all":
        subset = list(PARAMS)
    else:
        k = int(rng.integers(1, len(PARAMS)))
        subset = sorted(rng.choice(PARAMS, size=k, replace=False).tolist(), key=PARAMS.index)
    return dict(
        d=d, c=c, steps=steps, init=init, x=x, y=y, new=new, eval_y=eval_y, subset=subset,
        decay=float(rng.choice([0.5, 0.7, 0.9])), num_updates=bool(rng.integers(0, 2)),
    )


def spec_text(p, case):
    ema = f"ema {p['decay']}"
    if p["num_updates"]:
        ema += ", num_updates = true"
    if case == "subset":
        ema += ", var_list = [" + ", ".join(f'"{v}"' for v in p["subset"]) + "], use_averages = true"
    params = "\n".join(
        f"  {n}: {list(v.shape)} = constant(value = {literal(v)})" for n, v in p["init"].items()
    )
    return f"""model mlp
data csv("train.csv")
label y: int
features {{ x = numeric(x0..x{p['d'] - 1}) }}
params {{
{params}
}}
h      = tanh(x @ W1 + b1)
logits = h @ W2 + b2
loss   = mean(sparse_softmax_cross_entropy(y, logits))
optimizer gradient_descent(learning_rate = {LEARNING_RATE})
{ema}
train {{ batch = {len(p['x'])}, steps = {p['steps']}, shuffle = 0, eval_fraction = 0 }}
outputs {{ logits = logits }}
"""


class Model:
    """The classifier in a tf.compat.v1 graph with `p`'s initial values,
    the global step, and `ExponentialMovingAverage.apply(p["subset"])`."""

    def __init__(self, p, x, y):
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.vars = {n: tf.compat.v1.get_variable(n, initializer=v) for n, v in p["init"].items()}
            self.gs = tf.compat.v1.train.get_or_create_global_step()
            v = self.vars
            hidden = tf.tanh(tf.matmul(tf.constant(x), v["W1"]) + v["b1"])
            self.logits = tf.matmul(hidden, v["W2"]) + v["b2"]
            self.loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=tf.constant(y, tf.int32), logits=self.logits))
            self.train = tf.compat.v1.train.GradientDescentOptimizer(LEARNING_RATE).minimize(
                self.loss, global_step=self.gs)
            self.ema = tf.compat.v1.train.ExponentialMovingAverage(
                p["decay"], num_updates=self.gs if p["num_updates"] else None)
            self.ema_op = self.ema.apply([v[n] for n in p["subset"]])
            self.init = tf.compat.v1.global_variables_initializer()

    def session(self):
        return tf.compat.v1.Session(graph=self.graph)


def specc_cmd(specc, tmp_path, *args):
    return subprocess.run([specc, *args], cwd=tmp_path, check=True, capture_output=True,
                          text=True).stdout


def table(csv):
    return np.array([[float(c) for c in line.split(",")] for line in csv.strip().split("\n")[1:]])


@pytest.fixture(params=["all", "subset"])
def trained(request, specc, tmp_path):
    case = request.param
    p = draw(case)
    write_rows(tmp_path / "train.csv", p["x"], p["y"])
    write_rows(tmp_path / "new.csv", p["new"])
    write_rows(tmp_path / "eval.csv", p["new"], p["eval_y"])
    (tmp_path / "spec.spec").write_text(spec_text(p, case))
    specc_cmd(specc, tmp_path, "run", "spec.spec", "--checkpoint-dir", "ckpt")
    # What the CSV reader parses back: float32 of the decimal text.
    p["x"] = np.loadtxt(tmp_path / "train.csv", delimiter=",", skiprows=1, dtype=np.float32,
                        ndmin=2)[:, :-1]
    p["new"] = np.loadtxt(tmp_path / "new.csv", delimiter=",", skiprows=1, dtype=np.float32,
                          ndmin=2)
    return case, p, tf.train.latest_checkpoint(str(tmp_path / "ckpt"))


def test_tensorflow_trains_the_same_shadows(trained, tmp_path):
    case, p, prefix = trained
    m = Model(p, p["x"], p["y"])
    with m.session() as sess:
        sess.run(m.init)
        for _ in range(p["steps"]):
            sess.run(m.train)
            sess.run(m.ema_op)
        with m.graph.as_default():
            tf_prefix = tf.compat.v1.train.Saver().save(sess, str(tmp_path / "tf" / "model.ckpt"))
    ours = tf.train.load_checkpoint(prefix)
    theirs = tf.train.load_checkpoint(tf_prefix)
    shadows = lambda r: sorted(n for n in r.get_variable_to_shape_map() if n.endswith("/ExponentialMovingAverage"))
    assert shadows(ours) == shadows(theirs) == [f"{n}/ExponentialMovingAverage" for n in sorted(p["subset"])]
    assert ours.get_tensor("global_step") == theirs.get_tensor("global_step") == p["steps"]
    for name in PARAMS + shadows(theirs):
        np.testing.assert_allclose(ours.get_tensor(name), theirs.get_tensor(name), rtol=1e-5,
                                   atol=1e-6, err_msg=name)
    # The averages trail the variables by far more than the tolerance.
    apart = max(np.max(np.abs(theirs.get_tensor(n) - theirs.get_tensor(f"{n}/ExponentialMovingAverage")))
                for n in p["subset"])
    assert apart > 1e-3


def tf_serving(p, prefix, rows, labels, averages):
    """TF's logits and loss on `rows` with specc's checkpoint restored by
    `variables_to_restore` (or a plain Saver without `averages`)."""
    m = Model(p, rows, labels)
    with m.graph.as_default():
        if not averages:
            var_list = None
        elif set(p["subset"]) == set(PARAMS):
            var_list = m.ema.variables_to_restore()
        else:
            var_list = m.ema.variables_to_restore(tf.compat.v1.moving_average_variables())
        saver = tf.compat.v1.train.Saver(var_list)
    with m.session() as sess:
        saver.restore(sess, prefix)
        return sess.run([m.logits, m.loss])


def test_tensorflow_serves_the_averages_as_specc_does(trained, specc, tmp_path):
    case, p, prefix = trained
    labels = p["eval_y"].astype(np.int32)
    want, want_loss = tf_serving(p, prefix, p["new"], labels, averages=True)
    raw, raw_loss = tf_serving(p, prefix, p["new"], labels, averages=False)
    assert np.max(np.abs(want - raw)) > 1e-4
    predict = ["predict", "spec.spec", "--checkpoint", "ckpt", "--data", "new.csv"]
    # The subset's spec says `use_averages = true`: plain predict serves them.
    flag = ["--use-averages"] if case == "all" else []
    np.testing.assert_allclose(table(specc_cmd(specc, tmp_path, *predict, *flag)), want,
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(table(specc_cmd(specc, tmp_path, *predict, "--use-averages=false")),
                               raw, rtol=1e-5, atol=1e-6)

    evaluate = ["evaluate", "spec.spec", "--checkpoint", "ckpt", "--data", "eval.csv", "--json"]
    for extra, loss in [(flag, want_loss), (["--use-averages=false"], raw_loss)]:
        got = json.loads(specc_cmd(specc, tmp_path, *evaluate, *extra).strip().split("\n")[-1])
        assert got["use_averages"] == (loss is want_loss)
        np.testing.assert_allclose(got["eval"]["loss"], loss, rtol=1e-5)

    from ai_edge_litert.interpreter import Interpreter
    specc_cmd(specc, tmp_path, "export", "spec.spec", "--checkpoint", "ckpt", "--format", "tflite",
              "-o", "model.tflite", *flag)
    it = Interpreter(model_path=str(tmp_path / "model.tflite"))
    inp = it.get_input_details()[0]
    it.resize_tensor_input(inp["index"], p["new"].shape)
    it.allocate_tensors()
    it.set_tensor(inp["index"], p["new"])
    it.invoke()
    np.testing.assert_allclose(it.get_tensor(it.get_output_details()[0]["index"]), want,
                               rtol=1e-5, atol=1e-6)
