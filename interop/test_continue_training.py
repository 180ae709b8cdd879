"""TensorFlow continues training from a specc checkpoint.

specc trains a linear regression with Adam for 20 steps and saves a
checkpoint. A tf.compat.v1 program builds the same model under the same
variable names (`w`, `b`, their `Adam`/`Adam_1` slots, `beta1_power`,
`beta2_power`, `global_step`), restores the checkpoint with `Saver`, and
trains 10 more steps on the same full batches. specc resumes from the same
checkpoint for the same 10 steps. Both must end at the same global step with
the same variables and slots (float32 round-off apart: the two sum in
different orders).
"""

import json
import shutil
import subprocess

import numpy as np
import tensorflow as tf

SPEC = """model linreg
data csv("data.csv")
label y: float from y
features { x = numeric(x0, x1, x2) }
params {
  w: [3, 1] = glorot_uniform(seed = 1)
  b: [1]    = zeros
}
pred = x @ w + b
loss = mean(square(pred - y))
optimizer adam(learning_rate = 0.05)
train { batch = 32, steps = 20, shuffle = 0, eval_fraction = 0 }
"""

ROWS = 32
LEARNING_RATE = 0.05


def make_data(dir):
    rng = np.random.default_rng(7)
    x = rng.normal(size=(ROWS, 3)).astype(np.float32)
    y = (x @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)
    y += rng.normal(scale=0.1, size=y.shape).astype(np.float32)
    with open(dir / "data.csv", "w") as f:
        f.write("x0,x1,x2,y\n")
        for r in range(ROWS):
            f.write(",".join(repr(float(v)) for v in [*x[r], y[r, 0]]) + "\n")
    # What the CSV reader parses back: float32 of the decimal text.
    data = np.loadtxt(dir / "data.csv", delimiter=",", skiprows=1, dtype=np.float32)
    return data[:, :3], data[:, 3:]


def specc_run(specc, dir, steps, ckpt):
    out = subprocess.run(
        [specc, "run", "spec.spec", "--json", "--steps", str(steps), "--checkpoint-dir", ckpt],
        cwd=dir, check=True, capture_output=True, text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def tf_continue(prefix, x, y, steps):
    """Restores `prefix` into tf.compat.v1 variables and trains `steps` steps."""
    g = tf.Graph()
    with g.as_default():
        tf.compat.v1.disable_eager_execution()
        w = tf.compat.v1.get_variable("w", shape=[3, 1], dtype=tf.float32)
        b = tf.compat.v1.get_variable("b", shape=[1], dtype=tf.float32)
        gs = tf.compat.v1.train.get_or_create_global_step()
        pred = tf.matmul(tf.constant(x), w) + b
        loss = tf.reduce_mean(tf.square(pred - tf.constant(y)))
        train = tf.compat.v1.train.AdamOptimizer(LEARNING_RATE).minimize(loss, global_step=gs)
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session(graph=g) as sess:
            saver.restore(sess, str(prefix))
            for _ in range(steps):
                sess.run(train)
            return {v.op.name: sess.run(v) for v in tf.compat.v1.global_variables()}


def test_tensorflow_restores_a_specc_checkpoint_and_continues_training(specc, tmp_path):
    x, y = make_data(tmp_path)
    (tmp_path / "spec.spec").write_text(SPEC)
    specc_run(specc, tmp_path, 20, "ck")
    shutil.copytree(tmp_path / "ck", tmp_path / "ck_specc")
    prefix = tf.train.latest_checkpoint(str(tmp_path / "ck"))
    assert prefix.endswith("model.ckpt-20")

    tf_vars = tf_continue(prefix, x, y, 10)
    assert tf_vars["global_step"] == 30

    specc_run(specc, tmp_path, 30, "ck_specc")
    reader = tf.train.load_checkpoint(str(tmp_path / "ck_specc"))
    assert reader.get_tensor("global_step") == 30
    for name in ["w", "b", "w/Adam", "w/Adam_1", "b/Adam", "b/Adam_1", "beta1_power", "beta2_power"]:
        ours = reader.get_tensor(name)
        np.testing.assert_allclose(ours, tf_vars[name], rtol=2e-5, err_msg=name)
    # The 10 steps moved the variables far more than the tolerance.
    start = tf.train.load_checkpoint(prefix)
    assert np.max(np.abs(start.get_tensor("w") - tf_vars["w"])) > 1e-3
