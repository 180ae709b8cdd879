"""`einsum` and `matmul` over several (and broadcast) batch axes against TF.

Each case is an equation of `tf.einsum` (or a `tf.linalg.matmul` of batches
of matrices) over operands of sizes drawn from SPECC_INTEROP_SEED (any seed
passes). An operand with the batch `B` is `reshape(x[:, cols], [B, ...]) * P`
(a parameter `P` of one example's shape), one without is a parameter. A
spec computes `loss = mean(reduce_sum(square(E) * G, ...))` of the result
`E` (weights `G` drawn) and takes one gradient-descent step of rate 1: each
parameter in its checkpoint must be TF's `P - dloss/dP` (GradientTape over
`tf.einsum` / `tf.linalg.matmul`), which checks the values and gradients
together. An einsum spec of Keras MultiHeadAttention's equations also
exports to TF Lite, and LiteRT computes what `specc predict` does.
"""

import os
import subprocess

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

from conftest import literal, litert_equals_predict, write_rows  # noqa: E402

SEED = int(os.environ.get("SPECC_INTEROP_SEED", "2026"))

# (name, equation, the letter that is the batch B or None).
EINSUMS = [
    ("transpose", "ij->ji", None),
    ("reduce_middle", "bij->bj", None),
    ("reduce_middle_batch", "bij->bj", "b"),
    ("implicit", "ij,jk", None),
    ("projection", "btd,de->bte", None),
    ("projection_batch", "btd,de->bte", "b"),
    ("scores", "bqhd,bkhd->bhqk", "b"),
    ("weighted_values", "bhqk,bkhd->bqhd", "b"),
    ("mha_projection", "abc,cde->abde", "a"),
    ("mha_scores", "aecd,abcd->acbe", "a"),
    ("mha_values", "acbe,aecd->abcd", "a"),
    ("mha_output", "abcd,cde->abe", "a"),
    ("batch_contracted", "bi,bj->ij", "b"),
]

# (name, shape of a, shape of b, transpose_a, transpose_b); "B" is the batch
# and lower-case letters are drawn sizes.
MATMULS = [
    ("two_batch_axes", ("B", "h", "t", "d"), ("B", "h", "d", "s"), False, False),
    ("two_batch_axes_ta", ("B", "h", "d", "t"), ("B", "h", "d", "s"), True, False),
    ("two_batch_axes_tb", ("B", "h", "t", "d"), ("B", "h", "s", "d"), False, True),
    ("two_batch_axes_ta_tb", ("B", "h", "d", "t"), ("B", "h", "s", "d"), True, True),
    ("broadcast_heads", ("h", "t", "d"), ("B", "h", "d", "s"), False, False),
    ("broadcast_one", (1, "t", "d"), ("B", "d", "e"), False, False),
    ("matrix_by_batch", ("t", "d"), ("B", "d", "e"), False, False),
    ("batch_by_matrix_ta", ("B", "d", "t"), ("d", "e"), True, False),
    ("fixed_broadcast", ("g", "h", "t", "d"), ("h", "s", "d"), False, True),
]


def operand_dims(shape, sizes):
    return [sizes[d] if isinstance(d, str) else d for d in shape]


def run_case(specc, tmp_path, rng, shapes, batched_out, spec_expr, tf_expr):
    """Operands of `shapes` (first entry "B" for a batch), the spec's
    `E = spec_expr(names)` and TF's `tf_expr(tensors)`; checks one step."""
    rows = int(rng.integers(2, 7))
    cols, params, per = 0, [], []
    for s in shapes:
        batched = s[0] == "B"
        dims = [int(d) for d in (s[1:] if batched else s)]
        params.append(rng.normal(size=dims).astype(np.float32))
        n = int(np.prod(dims)) if batched else 0
        per.append((batched, dims, cols, cols + n))
        cols += n
    cols = max(cols, 1)
    x = rng.normal(size=(rows, cols)).astype(np.float32)
    write_rows(tmp_path / "train.csv", x, np.zeros(rows))
    names = []
    lines = []
    for k, (batched, dims, c0, c1) in enumerate(per):
        if batched:
            lines.append(f"o{k} = reshape(x[:, {c0}:{c1}], [B, {', '.join(map(str, dims))}]) * P{k}")
            names.append(f"o{k}")
        else:
            names.append(f"P{k}")

    data = np.loadtxt(tmp_path / "train.csv", delimiter=",", skiprows=1, dtype=np.float32, ndmin=2)[:, :-1]
    variables = [tf.Variable(p) for p in params]

    def operands():
        return [tf.reshape(data[:, c0:c1], [rows, *dims]) * v if batched else v
                for (batched, dims, c0, c1), v in zip(per, variables)]

    out_shape = tf_expr(operands()).shape
    g = rng.normal(size=out_shape[1:] if batched_out else out_shape).astype(np.float32)
    if batched_out:
        axes = list(range(1, len(out_shape)))
        loss_text = f"mean(reduce_sum(square(E) * {literal(g)}, axis = {axes}))"
    else:
        loss_text = f"reduce_sum(square(E) * {literal(g)}) + 0.0 * mean(x)"
    params_text = "\n".join(f"  P{k}: {list(p.shape)} = constant(value = {literal(p)})"
                            for k, p in enumerate(params))
    body = "\n".join(lines)
    (tmp_path / "spec.spec").write_text(f"""model einsum
data csv("train.csv")
label y: int
features {{ x = numeric(x0..x{cols - 1}) }}
params {{
{params_text}
}}
{body}
E = {spec_expr(names)}
loss = {loss_text}
optimizer gradient_descent(learning_rate = 1.0)
train {{ batch = {rows}, steps = 1, eval_fraction = 0 }}
""")
    subprocess.run([specc, "run", "spec.spec", "--checkpoint-dir", "ckpt"],
                   cwd=tmp_path, check=True, capture_output=True, text=True)
    ckpt = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(tmp_path / "ckpt")))

    with tf.GradientTape() as tape:
        e = tf_expr(operands())
        if batched_out:
            loss = tf.reduce_mean(tf.reduce_sum(tf.square(e) * g, axis=list(range(1, len(e.shape)))))
        else:
            loss = tf.reduce_sum(tf.square(e) * g)
    grads = tape.gradient(loss, variables)
    for k, (p, gr) in enumerate(zip(params, grads)):
        np.testing.assert_allclose(ckpt.get_tensor(f"P{k}"), p - gr.numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=f"P{k}")


@pytest.mark.parametrize("name,equation,batch", EINSUMS, ids=[c[0] for c in EINSUMS])
def test_einsum_and_its_gradient(specc, tmp_path, name, equation, batch):
    rng = np.random.default_rng(SEED + sum(map(ord, name)))
    inputs, _, output = equation.partition("->")
    if not _:
        used = inputs.replace(",", "")
        output = "".join(sorted(c for c in used if used.count(c) == 1))
    sizes = {c: int(rng.integers(2, 5)) for c in sorted(set(inputs.replace(",", "")))}
    shapes = [tuple("B" if c == batch else sizes[c] for c in s) for s in inputs.split(",")]
    run_case(specc, tmp_path, rng, shapes, batch is not None and batch in output,
             lambda names: f'einsum("{equation}", {", ".join(names)})',
             lambda ts: tf.einsum(equation, *ts))


@pytest.mark.parametrize("name,a,b,ta,tb", MATMULS, ids=[c[0] for c in MATMULS])
def test_matmul_of_batches_and_its_gradient(specc, tmp_path, name, a, b, ta, tb):
    rng = np.random.default_rng(SEED + 7 + sum(map(ord, name)))
    sizes = {c: int(rng.integers(2, 5)) for c in "ghtdse"}
    shapes = [tuple(d if d == "B" else operand_dims([d], sizes)[0] for d in s) for s in (a, b)]
    flags = f"transpose_a = {str(ta).lower()}, transpose_b = {str(tb).lower()}"
    run_case(specc, tmp_path, rng, shapes, "B" in a or "B" in b,
             lambda names: f"matmul({names[0]}, {names[1]}, {flags})",
             lambda ts: tf.linalg.matmul(ts[0], ts[1], transpose_a=ta, transpose_b=tb))


def test_multi_head_attention_einsums_export_to_tflite(specc, tmp_path):
    """Keras MultiHeadAttention's equations in a spec export to TF Lite, and
    LiteRT computes the probabilities `specc predict` does."""
    rng = np.random.default_rng(SEED + 9)
    t, d, heads, key = (int(v) for v in rng.integers(2, 5, 4))
    classes = int(rng.integers(2, 5))
    rows = 48
    x = rng.normal(size=(rows, t * d)).astype(np.float32)
    write_rows(tmp_path / "train.csv", x, rng.integers(0, classes, rows))
    (tmp_path / "spec.spec").write_text(f"""model mha
data csv("train.csv")
label y: int
features {{ x = numeric(x0..x{t * d - 1}) }}
params {{
  Wq: [{d}, {heads}, {key}] = glorot_uniform(seed = 1)
  Wk: [{d}, {heads}, {key}] = glorot_uniform(seed = 2)
  Wv: [{d}, {heads}, {key}] = glorot_uniform(seed = 3)
  Wo: [{heads}, {key}, {classes}] = glorot_uniform(seed = 4)
}}
seq = reshape(x, [B, {t}, {d}])
q = einsum("abc,cde->abde", seq, Wq)
k = einsum("abc,cde->abde", seq, Wk)
v = einsum("abc,cde->abde", seq, Wv)
scores = softmax(einsum("aecd,abcd->acbe", k, q) * 0.5)
attended = einsum("acbe,aecd->abcd", scores, v)
logits = reduce_mean(einsum("abcd,cde->abe", attended, Wo), axis = 1)
loss = mean(sparse_softmax_cross_entropy(y, logits))
optimizer adam(learning_rate = 0.01)
train {{ batch = 16, steps = 30 }}
outputs {{ probabilities = softmax(logits) }}
""")
    new = rng.normal(size=(int(rng.integers(3, 20)), t * d)).astype(np.float32)
    litert_equals_predict(specc, tmp_path, new, batch_matmuls=2)
