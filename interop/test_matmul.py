"""`matmul` of a batch of matrices by a matrix against TensorFlow.

`[B, T, D] @ [D, E]` (and `transpose_b`) is `tf.linalg.matmul`'s broadcast
product. A spec computes `loss = mean(reduce_sum(square(x @ W) * G))` over a
batch and takes one gradient-descent step with learning rate 1; the `W` in
its checkpoint must be TF's `W - dloss/dW` (GradientTape over
`tf.linalg.matmul`), which checks the product and its gradient together.
Shapes and values are drawn from SPECC_INTEROP_SEED (any seed passes).
"""

import os
import subprocess

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

from conftest import literal, litert_equals_predict, write_rows  # noqa: E402

SEED = int(os.environ.get("SPECC_INTEROP_SEED", "2026"))


def test_batched_matmul_by_a_matrix_and_its_gradient(specc, tmp_path):
    rng = np.random.default_rng(SEED)
    for transpose_b in (False, True):
        t, d, e = (int(v) for v in rng.integers(2, 7, 3))
        rows = int(rng.integers(2, 9))
        x = rng.normal(size=(rows, t * d)).astype(np.float32)
        w = rng.normal(size=(e, d) if transpose_b else (d, e)).astype(np.float32)
        g = rng.normal(size=(t, e)).astype(np.float32)
        run = tmp_path / f"tb{int(transpose_b)}"
        run.mkdir()
        write_rows(run / "train.csv", x, np.zeros(rows))
        dims = f"[{e}, {d}]" if transpose_b else f"[{d}, {e}]"
        (run / "spec.spec").write_text(f"""model matmul
data csv("train.csv")
label y: int
features {{ x = numeric(x0..x{t * d - 1}) }}
params {{ W: {dims} = constant(value = {literal(w)}) }}
seq = reshape(x, [B, {t}, {d}])
prod = matmul(seq, W, transpose_b = {str(transpose_b).lower()})
loss = mean(reduce_sum(square(prod) * {literal(g)}, axis = [1, 2]))
optimizer gradient_descent(learning_rate = 1.0)
train {{ batch = {rows}, steps = 1, eval_fraction = 0 }}
""")
        subprocess.run([specc, "run", "spec.spec", "--checkpoint-dir", "ckpt"],
                       cwd=run, check=True, capture_output=True, text=True)
        got = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(run / "ckpt"))).get_tensor("W")

        parsed = np.loadtxt(run / "train.csv", delimiter=",", skiprows=1, dtype=np.float32, ndmin=2)
        seq = tf.constant(parsed[:, :-1].reshape(rows, t, d))
        var = tf.Variable(w)
        with tf.GradientTape() as tape:
            y = tf.linalg.matmul(seq, var, transpose_b=transpose_b)
            loss = tf.reduce_mean(tf.reduce_sum(tf.square(y) * g, axis=[1, 2]))
        want = w - tape.gradient(loss, var).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6,
                                   err_msg=f"transpose_b={transpose_b}")


def test_batched_products_with_transposes_and_their_gradients(specc, tmp_path):
    """`[B, M, K] @ [B, K, N]` with every transpose (attention's `q @ k^T`)."""
    rng = np.random.default_rng(SEED + 1)
    for ta in (False, True):
        for tb in (False, True):
            r, d, n = (int(v) for v in rng.integers(2, 6, 3))
            rows = int(rng.integers(2, 9))
            # A = q @ Wq is [B, R, D]; the second operand fits it.
            k_dim = r if ta else d
            b_shape = (n, k_dim) if tb else (k_dim, n)
            cols = r * d + b_shape[0] * b_shape[1]
            x = rng.normal(size=(rows, cols)).astype(np.float32)
            wq = rng.normal(size=(d, d)).astype(np.float32)
            out_m = d if ta else r
            g = rng.normal(size=(out_m, n)).astype(np.float32)
            run = tmp_path / f"ta{int(ta)}tb{int(tb)}"
            run.mkdir()
            write_rows(run / "train.csv", x, np.zeros(rows))
            (run / "spec.spec").write_text(f"""model batched
data csv("train.csv")
label y: int
features {{ x = numeric(x0..x{cols - 1}) }}
params {{ Wq: [{d}, {d}] = constant(value = {literal(wq)}) }}
q = reshape(x[:, 0:{r * d}], [B, {r}, {d}])
other = reshape(x[:, {r * d}:{cols}], [B, {b_shape[0]}, {b_shape[1]}])
prod = matmul(q @ Wq, other, transpose_a = {str(ta).lower()}, transpose_b = {str(tb).lower()})
loss = mean(reduce_sum(square(prod) * {literal(g)}, axis = [1, 2]))
optimizer gradient_descent(learning_rate = 1.0)
train {{ batch = {rows}, steps = 1, eval_fraction = 0 }}
""")
            subprocess.run([specc, "run", "spec.spec", "--checkpoint-dir", "ckpt"],
                           cwd=run, check=True, capture_output=True, text=True)
            ckpt = tf.train.latest_checkpoint(str(run / "ckpt"))
            got = tf.train.load_checkpoint(ckpt).get_tensor("Wq")

            parsed = np.loadtxt(run / "train.csv", delimiter=",", skiprows=1,
                                dtype=np.float32, ndmin=2)[:, :-1]
            q = tf.constant(parsed[:, :r * d].reshape(rows, r, d))
            other = tf.constant(parsed[:, r * d:].reshape(rows, *b_shape))
            var = tf.Variable(wq)
            with tf.GradientTape() as tape:
                prod = tf.linalg.matmul(tf.linalg.matmul(q, var), other,
                                        transpose_a=ta, transpose_b=tb)
                loss = tf.reduce_mean(tf.reduce_sum(tf.square(prod) * g, axis=[1, 2]))
            want = wq - tape.gradient(loss, var).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6,
                                       err_msg=f"transpose_a={ta} transpose_b={tb}")


def test_attention_exports_to_tflite_batch_matmul(specc, tmp_path):
    """Single-head attention exports with BATCH_MATMUL; LiteRT runs it as
    `specc predict` computes it."""
    rng = np.random.default_rng(SEED + 2)
    t, d = (int(v) for v in rng.integers(2, 7, 2))
    classes = int(rng.integers(2, 5))
    rows = 48
    x = rng.normal(size=(rows, t * d)).astype(np.float32)
    write_rows(tmp_path / "train.csv", x, rng.integers(0, classes, rows))
    (tmp_path / "spec.spec").write_text(f"""model attention
data csv("train.csv")
label y: int
features {{ x = numeric(x0..x{t * d - 1}) }}
params {{
  Wq: [{d}, {d}] = glorot_uniform(seed = 1)
  Wk: [{d}, {d}] = glorot_uniform(seed = 2)
  Wv: [{d}, {d}] = glorot_uniform(seed = 3)
  Wo: [{d}, {classes}] = glorot_uniform(seed = 4)
}}
seq = reshape(x, [B, {t}, {d}])
scores = softmax(matmul(seq @ Wq, seq @ Wk, transpose_b = true) * 0.5)
logits = reduce_mean(matmul(scores, seq @ Wv) @ Wo, axis = 1)
loss = mean(sparse_softmax_cross_entropy(y, logits))
optimizer adam(learning_rate = 0.01)
train {{ batch = 16, steps = 30 }}
outputs {{ logits = logits }}
""")
    new = rng.normal(size=(int(rng.integers(3, 20)), t * d)).astype(np.float32)
    litert_equals_predict(specc, tmp_path, new, batch_matmuls=2)


def test_the_w9_transformer_exports_to_tflite(specc, tmp_path):
    """`specs/text_transformer.spec` (W9: two encoder layers of four heads)
    exports to TF Lite, each layer's two einsums a BATCH_MATMUL over the
    batch and the heads, and LiteRT's probabilities and classes on drawn
    rows equal `specc predict`'s."""
    from pathlib import Path

    from ai_edge_litert.interpreter import Interpreter

    root = Path(__file__).resolve().parent.parent
    (tmp_path / "data").mkdir()
    text = (root / "specs" / "data" / "text.csv").read_text().splitlines()
    (tmp_path / "data" / "text.csv").write_text("\n".join(text) + "\n")
    (tmp_path / "spec.spec").write_text((root / "specs" / "text_transformer.spec").read_text())
    run = lambda *args: subprocess.run([specc, *args], cwd=tmp_path, check=True,
                                       capture_output=True, text=True).stdout
    run("run", "spec.spec", "--steps", "10", "--checkpoint-dir", "ckpt")
    run("export", "spec.spec", "--checkpoint", "ckpt", "--format", "tflite", "--output", "w9.tflite")
    rng = np.random.default_rng(SEED + 5)
    picked = sorted(rng.choice(np.arange(1, len(text)), int(rng.integers(5, 40)), replace=False))
    header = ",".join(text[0].split(",")[:64])
    rows = [",".join(text[i].split(",")[:64]) for i in picked]
    (tmp_path / "new.csv").write_text(header + "\n" + "\n".join(rows) + "\n")
    lines = run("predict", "spec.spec", "--checkpoint", "ckpt", "--data", "new.csv").strip().split("\n")
    want = np.array([[float(c) for c in l.split(",")] for l in lines[1:]])

    it = Interpreter(model_path=str(tmp_path / "w9.tflite"))
    assert [op["op_name"] for op in it._get_ops_details()].count("BATCH_MATMUL") == 2 * 2
    inp = it.get_input_details()[0]
    x = np.array([[float(c) for c in r.split(",")] for r in rows]).astype(inp["dtype"])
    it.resize_tensor_input(inp["index"], x.shape)
    it.allocate_tensors()
    it.set_tensor(inp["index"], x)
    it.invoke()
    probs, classes = (it.get_tensor(o["index"]) for o in it.get_output_details())
    np.testing.assert_allclose(probs, want[:, :2], rtol=1e-5, atol=1e-6)
    assert (classes.reshape(-1) == want[:, 2]).all()
