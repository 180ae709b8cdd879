"""specc's layer library computes what Keras's layers compute, under the
same variable names.

A spec written with `layers.conv2d`, `layers.batch_normalization`,
`layers.max_pooling2d`, `layers.flatten`, `layers.layer_normalization`,
`layers.embedding`, `layers.dense` and `layers.dropout` trains a few steps
and saves a checkpoint. Keras (TF 2.21's Keras 3) builds the same layers,
named as specc's scopes are; every Keras variable path (`conv2d/kernel`,
`batch_normalization/moving_mean`, `embedding/embeddings`, ...) must be a
checkpoint tensor of the same shape, loaded into the layer; Keras's
inference logits on new rows then equal `specc predict`'s (the moving
statistics normalize, dropout is off).

Sizes, data and rows are drawn from SPECC_INTEROP_SEED (any seed passes).
"""

import os
import subprocess

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

SEED = int(os.environ.get("SPECC_INTEROP_SEED", "2026"))


def spec(h, w, filters, vocab, dim, units, classes):
    n = h * w
    return f"""model library
data csv("train.csv")
label y: int
features {{
  x = numeric(x0..x{n - 1})
  ids = integer(k0..k1, num_buckets = {vocab})
}}
img = reshape(x, [B, {h}, {w}, 1])
c = layers.conv2d(img, {filters}, 3, padding = "same", activation = relu)
nrm = layers.batch_normalization(c)
p = layers.max_pooling2d(nrm, 2, 2)
f = layers.layer_normalization(layers.flatten(p))
e = layers.flatten(layers.embedding(ids, {vocab}, {dim}))
hid = layers.dense(concat([f, e], 1), {units}, activation = relu)
logits = layers.dense(layers.dropout(hid, rate = 0.1), {classes}, name = "logits")
loss = mean(sparse_softmax_cross_entropy(y, logits))
optimizer adam(learning_rate = 0.01)
train {{ batch = 16, steps = 15, shuffle = 64, seed = 3 }}
outputs {{ logits = logits }}
"""


def write(path, x, ids, y=None):
    head = [f"x{i}" for i in range(x.shape[1])] + ["k0", "k1"] + (["y"] if y is not None else [])
    with open(path, "w") as f:
        f.write(",".join(head) + "\n")
        for r in range(len(x)):
            cells = [repr(float(v)) for v in x[r]] + [str(int(v)) for v in ids[r]]
            if y is not None:
                cells.append(str(int(y[r])))
            f.write(",".join(cells) + "\n")


def test_library_layers_equal_keras_layers_by_name(specc, tmp_path):
    rng = np.random.default_rng(SEED)
    h, w = int(rng.integers(2, 6)) * 2, int(rng.integers(2, 6)) * 2
    filters, vocab, dim = int(rng.integers(2, 7)), int(rng.integers(3, 12)), int(rng.integers(2, 5))
    units, classes = int(rng.integers(3, 10)), int(rng.integers(2, 5))
    rows = 64
    x = rng.normal(size=(rows, h * w)).astype(np.float32)
    ids = rng.integers(0, vocab, (rows, 2))
    y = rng.integers(0, classes, rows)
    write(tmp_path / "train.csv", x, ids, y)
    (tmp_path / "spec.spec").write_text(spec(h, w, filters, vocab, dim, units, classes))
    subprocess.run([specc, "run", "spec.spec", "--checkpoint-dir", "ckpt"],
                   cwd=tmp_path, check=True, capture_output=True, text=True)
    prefix = tf.train.latest_checkpoint(str(tmp_path / "ckpt"))
    reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()

    L = keras.layers
    conv = L.Conv2D(filters, 3, padding="same", activation="relu", name="conv2d")
    bn = L.BatchNormalization(name="batch_normalization")
    pool = L.MaxPooling2D(2, 2)
    ln = L.LayerNormalization(name="layer_normalization")
    emb = L.Embedding(vocab, dim, name="embedding")
    dense = L.Dense(units, activation="relu", name="dense")
    out = L.Dense(classes, name="logits")

    def logits(xb, kb):
        img = tf.reshape(xb, [-1, h, w, 1])
        p = pool(bn(conv(img), training=False))
        f = ln(tf.reshape(p, [tf.shape(p)[0], -1]))
        e = tf.reshape(emb(kb), [tf.shape(kb)[0], -1])
        return out(dense(tf.concat([f, e], 1)))

    new_rows = int(rng.integers(5, 40))
    new_x = rng.normal(size=(new_rows, h * w)).astype(np.float32)
    new_ids = rng.integers(0, vocab, (new_rows, 2))
    write(tmp_path / "new.csv", new_x, new_ids)
    logits(new_x[:1], new_ids[:1])  # builds the layers

    paths = []
    for layer in [conv, bn, ln, emb, dense, out]:
        for v in layer.weights:
            assert v.path in shapes, f"{v.path} is not in specc's checkpoint"
            assert list(v.shape) == shapes[v.path], v.path
            v.assign(reader.get_tensor(v.path))
            paths.append(v.path)
    assert sorted(paths) == sorted([
        "conv2d/kernel", "conv2d/bias",
        "batch_normalization/gamma", "batch_normalization/beta",
        "batch_normalization/moving_mean", "batch_normalization/moving_variance",
        "layer_normalization/gamma", "layer_normalization/beta",
        "embedding/embeddings", "dense/kernel", "dense/bias",
        "logits/kernel", "logits/bias",
    ])
    # The step moved the moving statistics off their initial values.
    assert np.abs(reader.get_tensor("batch_normalization/moving_mean")).max() > 0

    parsed = np.loadtxt(tmp_path / "new.csv", delimiter=",", skiprows=1, dtype=np.float32, ndmin=2)
    want = logits(parsed[:, : h * w], parsed[:, h * w:].astype(np.int64)).numpy()
    got_text = subprocess.run(
        [specc, "predict", "spec.spec", "--checkpoint", "ckpt", "--data", "new.csv"],
        cwd=tmp_path, check=True, capture_output=True, text=True).stdout
    lines = got_text.strip().split("\n")
    assert lines[0].split(",") == [f"logits_{k}" for k in range(classes)]
    got = np.array([[float(c) for c in l.split(",")] for l in lines[1:]])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dropout", [0.0, 0.25])
def test_multi_head_attention_equals_keras(specc, tmp_path, dropout):
    """`layers.multi_head_attention` against Keras's MultiHeadAttention:
    cross-attention of a query sequence over a value sequence with its own
    key, a `value_dim` of its own, a padding mask from each row's length
    (a row masked whole included), with and without dropout (Keras runs
    `dot_product_attention` without, its masked softmax with: a row masked
    whole attends evenly in one, to nothing in the other); Keras's variables
    (`multi_head_attention/query/kernel` ...) are loaded by path from
    specc's checkpoint, and the logits equal `specc predict`'s."""
    rng = np.random.default_rng(SEED + 1)
    t, s = int(rng.integers(2, 6)), int(rng.integers(2, 6))
    d, heads = int(rng.integers(2, 7)), int(rng.integers(1, 4))
    key_dim, value_dim = int(rng.integers(2, 6)), int(rng.integers(2, 6))
    classes, rows = int(rng.integers(2, 4)), 48
    q = rng.normal(size=(rows, t * d)).astype(np.float32)
    v = rng.normal(size=(rows, s * d)).astype(np.float32)
    k = rng.normal(size=(rows, s * d)).astype(np.float32)
    lengths = rng.integers(0, s + 1, rows)
    cols = np.concatenate([q, v, k, lengths[:, None].astype(np.float32)], 1)
    from conftest import write_rows
    write_rows(tmp_path / "train.csv", cols, rng.integers(0, classes, rows))
    n = t * d + 2 * s * d
    (tmp_path / "spec.spec").write_text(f"""model mha
data csv("train.csv")
label y: int
features {{
  q = numeric(x0..x{t * d - 1})
  v = numeric(x{t * d}..x{t * d + s * d - 1})
  k = numeric(x{t * d + s * d}..x{n - 1})
  n = numeric(x{n})
}}
mask = expand_dims(sequence_mask(reshape(n, [B]), {s}), 1)
a = layers.multi_head_attention(reshape(q, [B, {t}, {d}]), reshape(v, [B, {s}, {d}]), {heads}, {key_dim}, key = reshape(k, [B, {s}, {d}]), attention_mask = mask, value_dim = {value_dim}, dropout = {dropout})
logits = layers.dense(reshape(a, [B, {t * d}]), {classes}, name = "logits")
loss = mean(sparse_softmax_cross_entropy(y, logits))
optimizer adam(learning_rate = 0.01)
train {{ batch = 16, steps = 10, shuffle = 48, seed = 3, eval_fraction = 0 }}
outputs {{ logits = logits }}
""")
    subprocess.run([specc, "run", "spec.spec", "--checkpoint-dir", "ckpt"],
                   cwd=tmp_path, check=True, capture_output=True, text=True)
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(tmp_path / "ckpt")))
    shapes = reader.get_variable_to_shape_map()

    mha = keras.layers.MultiHeadAttention(heads, key_dim, value_dim=value_dim, dropout=dropout,
                                          name="multi_head_attention")
    out = keras.layers.Dense(classes, name="logits")

    def logits(x):
        b = x.shape[0]
        qs = tf.reshape(x[:, : t * d], [b, t, d])
        vs = tf.reshape(x[:, t * d: t * d + s * d], [b, s, d])
        ks = tf.reshape(x[:, t * d + s * d: n], [b, s, d])
        m = tf.tile(tf.sequence_mask(x[:, n], s)[:, None, :], [1, t, 1])
        a = mha(qs, vs, key=ks, attention_mask=m)
        return out(tf.reshape(a, [b, t * d]))

    new = np.concatenate([
        rng.normal(size=(rows, n)).astype(np.float32),
        rng.integers(0, s + 1, rows)[:, None].astype(np.float32)], 1)
    write_rows(tmp_path / "new.csv", new)
    parsed = np.loadtxt(tmp_path / "new.csv", delimiter=",", skiprows=1, dtype=np.float32, ndmin=2)
    logits(parsed[:1])  # builds the layers
    paths = []
    for layer in [mha, out]:
        for w in layer.weights:
            assert w.path in shapes, f"{w.path} is not in specc's checkpoint"
            assert list(w.shape) == shapes[w.path], w.path
            w.assign(reader.get_tensor(w.path))
            paths.append(w.path)
    assert sorted(paths) == sorted(
        [f"multi_head_attention/{p}/{v}" for p in ["query", "key", "value", "attention_output"]
         for v in ["kernel", "bias"]] + ["logits/kernel", "logits/bias"])
    want = logits(parsed).numpy()
    text = subprocess.run(
        [specc, "predict", "spec.spec", "--checkpoint", "ckpt", "--data", "new.csv"],
        cwd=tmp_path, check=True, capture_output=True, text=True).stdout
    got = np.array([[float(c) for c in l.split(",")] for l in text.strip().split("\n")[1:]])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
