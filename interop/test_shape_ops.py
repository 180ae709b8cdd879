"""`expand_dims`, `squeeze`, `stack`, `tile`, `sequence_mask`, `split`,
`unstack`, `transpose` and `reshape` moving the batch axis, `gather` with any
axis and `batch_dims`, and the masked softmax against TF.

A spec builds each op on `a = reshape(x, [B, T, D]) @ W` (axes, multiples,
lengths and ids drawn from SPECC_INTEROP_SEED; any seed passes), weights the
results into a loss, and takes one gradient-descent step of rate 1: its `W`
must be TF's `W - dloss/dW` (the same ops under a GradientTape), which checks
the ops' values and gradients together (the mask through the values it
keeps). The later tests also compare the values themselves: the spec's
`outputs`, by `specc predict` from the stepped checkpoint, against TF's ops
on the same weights; the last exports such a model to TF Lite, run by LiteRT.
"""

import os
import subprocess

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

from conftest import literal, litert_equals_predict, write_rows  # noqa: E402

SEED = int(os.environ.get("SPECC_INTEROP_SEED", "2026"))


def test_shape_ops_and_their_gradients(specc, tmp_path):
    rng = np.random.default_rng(SEED + 3)
    t, d = (int(v) for v in rng.integers(2, 5, 2))
    rows = int(rng.integers(3, 9))
    expand_axis = int(rng.choice([1, 2, 3, -1, -2]))
    stack_axis = int(rng.choice([1, 2, 3, -1]))
    mt, md = (int(v) for v in rng.integers(1, 4, 2))
    x = rng.normal(size=(rows, t * d)).astype(np.float32)
    lengths = rng.integers(0, t + 1, rows).astype(np.float32)
    w = rng.normal(size=(d, d)).astype(np.float32)
    a_shape = (rows, t, d)
    exp_shape = list(a_shape)
    exp_shape.insert(expand_axis % 4, 1)
    stack_shape = list(a_shape)
    stack_shape.insert(stack_axis % 4, 2)
    g1 = rng.normal(size=exp_shape[1:]).astype(np.float32)
    g2 = rng.normal(size=stack_shape[1:]).astype(np.float32)
    g3 = rng.normal(size=(t * mt, d * md)).astype(np.float32)
    with open(tmp_path / "train.csv", "w") as f:
        f.write(",".join(f"x{i}" for i in range(t * d)) + ",n,y\n")
        for r in range(rows):
            f.write(",".join(repr(float(v)) for v in x[r]) + f",{lengths[r]},0\n")
    (tmp_path / "spec.spec").write_text(f"""model shape_ops
data csv("train.csv")
label y: int
features {{
  x = numeric(x0..x{t * d - 1})
  n = numeric(n)
}}
params {{ W: [{d}, {d}] = constant(value = {literal(w)}) }}
a = reshape(x, [B, {t}, {d}]) @ W
e = expand_dims(a, {expand_axis})
s = squeeze(e, axis = {expand_axis})
st = stack([s, a * 2.0], axis = {stack_axis})
ti = tile(a, [1, {mt}, {md}])
mask = sequence_mask(reshape(n, [B]), {t})
masked = a * expand_dims(mask, 2)
loss = mean(reduce_sum(square(e) * {literal(g1)}, axis = [1, 2, 3]) + reduce_sum(st * {literal(g2)}, axis = [1, 2, 3]) + reduce_sum(square(ti) * {literal(g3)}, axis = [1, 2]) + reduce_sum(square(masked), axis = [1, 2]))
optimizer gradient_descent(learning_rate = 1.0)
train {{ batch = {rows}, steps = 1, eval_fraction = 0 }}
""")
    subprocess.run([specc, "run", "spec.spec", "--checkpoint-dir", "ckpt"],
                   cwd=tmp_path, check=True, capture_output=True, text=True)
    got = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(tmp_path / "ckpt"))).get_tensor("W")

    data = np.loadtxt(tmp_path / "train.csv", delimiter=",", skiprows=1, dtype=np.float32, ndmin=2)
    xs, ns = data[:, :t * d], data[:, t * d]
    var = tf.Variable(w)
    with tf.GradientTape() as tape:
        a = tf.matmul(tf.reshape(xs, [rows, t, d]), var)
        e = tf.expand_dims(a, expand_axis)
        s = tf.squeeze(e, axis=expand_axis)
        st = tf.stack([s, a * 2.0], axis=stack_axis)
        ti = tf.tile(a, [1, mt, md])
        mask = tf.sequence_mask(ns, t, dtype=tf.float32)
        masked = a * tf.expand_dims(mask, 2)
        loss = tf.reduce_mean(tf.reduce_sum(tf.square(e) * g1, axis=[1, 2, 3])
                              + tf.reduce_sum(st * g2, axis=[1, 2, 3])
                              + tf.reduce_sum(tf.square(ti) * g3, axis=[1, 2])
                              + tf.reduce_sum(tf.square(masked), axis=[1, 2]))
    want = w - tape.gradient(loss, var).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_split_and_unstack_tuples_and_their_gradients(specc, tmp_path):
    """`s0, s1, ... = split(a, sizes, axis = 1)` and `u0, u1, ... = unstack(a,
    axis = 2)` bound as tuples, weighted into a loss, against tf.split and
    tf.unstack."""
    rng = np.random.default_rng(SEED + 4)
    t, d = (int(v) for v in rng.integers(2, 6, 2))
    rows = int(rng.integers(2, 9))
    # At least two parts (a tuple binds two or more names).
    cuts = sorted(rng.choice(np.arange(1, t), int(rng.integers(1, t)), replace=False))
    sizes = [int(b - a) for a, b in zip([0, *cuts], [*cuts, t])]
    x = rng.normal(size=(rows, t * d)).astype(np.float32)
    w = rng.normal(size=(d, d)).astype(np.float32)
    gs = [rng.normal(size=(n, d)).astype(np.float32) for n in sizes]
    hs = [rng.normal(size=(t,)).astype(np.float32) for _ in range(d)]
    s_names = [f"s{i}" for i in range(len(sizes))]
    u_names = [f"u{j}" for j in range(d)]
    terms = [f"reduce_sum(square({n}) * {literal(g)}, axis = [1, 2])" for n, g in zip(s_names, gs)]
    terms += [f"reduce_sum({n} * {literal(h)}, axis = 1)" for n, h in zip(u_names, hs)]
    sizes_text = f"[{', '.join(map(str, sizes))}]"
    with open(tmp_path / "train.csv", "w") as f:
        f.write(",".join(f"x{i}" for i in range(t * d)) + ",y\n")
        for r in range(rows):
            f.write(",".join(repr(float(v)) for v in x[r]) + ",0\n")
    (tmp_path / "spec.spec").write_text(f"""model tuples
data csv("train.csv")
label y: int
features {{ x = numeric(x0..x{t * d - 1}) }}
params {{ W: [{d}, {d}] = constant(value = {literal(w)}) }}
a = reshape(x, [B, {t}, {d}]) @ W
{", ".join(s_names)} = split(a, {sizes_text}, axis = 1)
{", ".join(u_names)} = unstack(a, axis = 2)
loss = mean({" + ".join(terms)})
optimizer gradient_descent(learning_rate = 1.0)
train {{ batch = {rows}, steps = 1, eval_fraction = 0 }}
""")
    subprocess.run([specc, "run", "spec.spec", "--checkpoint-dir", "ckpt"],
                   cwd=tmp_path, check=True, capture_output=True, text=True)
    got = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(tmp_path / "ckpt"))).get_tensor("W")
    data = np.loadtxt(tmp_path / "train.csv", delimiter=",", skiprows=1, dtype=np.float32, ndmin=2)
    var = tf.Variable(w)
    with tf.GradientTape() as tape:
        a = tf.matmul(tf.reshape(data[:, :t * d], [rows, t, d]), var)
        parts = tf.split(a, sizes, axis=1)
        cols = tf.unstack(a, axis=2)
        loss = tf.reduce_mean(
            tf.add_n([tf.reduce_sum(tf.square(p) * g, axis=[1, 2]) for p, g in zip(parts, gs)]
                     + [tf.reduce_sum(u * h, axis=1) for u, h in zip(cols, hs)]))
    want = w - tape.gradient(loss, var).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _step_and_predict(specc, run, spec, names):
    """`specc run` one step of `spec` in `run`; the checkpoint's `names` and
    the rows `specc predict` writes for train.csv from it."""
    (run / "spec.spec").write_text(spec)
    go = lambda *args: subprocess.run([specc, *args], cwd=run, check=True,
                                      capture_output=True, text=True).stdout
    go("run", "spec.spec", "--checkpoint-dir", "ckpt")
    ckpt = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(run / "ckpt")))
    lines = go("predict", "spec.spec", "--checkpoint", "ckpt", "--data", "train.csv").strip().split("\n")
    out = np.array([[float(c) for c in line.split(",")] for line in lines[1:]])
    return [ckpt.get_tensor(n) for n in names], out


def test_transpose_and_reshape_moving_the_batch(specc, tmp_path):
    """`[B, T, D]` to time-major `[T, B, D]` (a product there, a reshape
    inside the batch), a drawn permutation, and a time-major `stack`; the
    output is the time-major value moved back to `[B, D, T]`."""
    rng = np.random.default_rng(SEED + 5)
    t, d = (int(v) for v in rng.integers(2, 5, 2))
    rows = int(rng.integers(3, 9))
    perm = [int(v) for v in rng.permutation(3)]
    x = rng.normal(size=(rows, t * d)).astype(np.float32)
    w = rng.normal(size=(d, d)).astype(np.float32)
    permuted = [(rows, t, d)[p] for p in perm]
    g1 = rng.normal(size=(t, 1, d, 1)).astype(np.float32)
    g2 = rng.normal(size=[1 if p == 0 else n for p, n in zip(perm, permuted)]).astype(np.float32)
    g3 = rng.normal(size=(2, 1, d)).astype(np.float32)
    not_b = [i for i, p in enumerate(perm) if p != 0]
    write_rows(tmp_path / "train.csv", x, np.zeros(rows))
    spec = f"""model time_major
data csv("train.csv")
label y: int
features {{ x = numeric(x0..x{t * d - 1}) }}
params {{ W: [{d}, {d}] = constant(value = {literal(w)}) }}
a = reshape(x, [B, {t}, {d}]) @ W
tm = tanh(transpose(a, [1, 0, 2]) @ W)
r = reshape(tm, [{t}, B, {d}, 1])
p = transpose(a, {perm})
st = stack([a[:, 0, :], a[:, {t - 1}, :] * 2.0])
loss = mean(reduce_sum(square(r) * {literal(g1)}, axis = [0, 2, 3]) + reduce_sum(square(p) * {literal(g2)}, axis = {not_b}) + reduce_sum(st * {literal(g3)}, axis = [0, 2]))
optimizer gradient_descent(learning_rate = 1.0)
train {{ batch = {rows}, steps = 1, eval_fraction = 0 }}
outputs {{ back = transpose(tm, [1, 2, 0]) }}
"""
    (got,), out = _step_and_predict(specc, tmp_path, spec, ["W"])

    xs = np.loadtxt(tmp_path / "train.csv", delimiter=",", skiprows=1, dtype=np.float32, ndmin=2)[:, :-1]
    var = tf.Variable(w)
    with tf.GradientTape() as tape:
        a = tf.matmul(tf.reshape(xs, [rows, t, d]), var)
        tm = tf.tanh(tf.matmul(tf.transpose(a, [1, 0, 2]), var))
        r = tf.reshape(tm, [t, rows, d, 1])
        p = tf.transpose(a, perm)
        st = tf.stack([a[:, 0, :], a[:, t - 1, :] * 2.0])
        loss = tf.reduce_mean(tf.reduce_sum(tf.square(r) * g1, axis=[0, 2, 3])
                              + tf.reduce_sum(tf.square(p) * g2, axis=not_b)
                              + tf.reduce_sum(st * g3, axis=[0, 2]))
    want = w - tape.gradient(loss, var).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    stepped = tf.constant(got)
    a = tf.matmul(tf.reshape(xs, [rows, t, d]), stepped)
    back = tf.transpose(tf.tanh(tf.matmul(tf.transpose(a, [1, 0, 2]), stepped)), [1, 2, 0])
    np.testing.assert_allclose(out, back.numpy().reshape(rows, -1), rtol=1e-5, atol=1e-6)


def test_gather_with_an_axis_and_batch_dims(specc, tmp_path):
    """`tf.gather` along the time axis of `[B, T, D]` by drawn constant ids
    (repeats included), along the last axis by a matrix of ids, along axis 1
    of a parameter table `G`, and per example (`batch_dims = 1`) by ids read
    from the data: `W` and `G` after one step, and the per-example gather's
    values."""
    rng = np.random.default_rng(SEED + 6)
    t, d = (int(v) for v in rng.integers(2, 6, 2))
    rows = int(rng.integers(3, 9))
    k, v = (int(n) for n in rng.integers(1, 6, 2))
    kk = int(rng.integers(2, 6))  # ids columns (one column reads as [B])
    idx_t = rng.integers(0, t, k)
    idx_d = rng.integers(0, d, (2, int(rng.integers(1, 4))))
    idx_g = rng.integers(0, v, kk)
    x = rng.normal(size=(rows, t * d)).astype(np.float32)
    ids = rng.integers(0, t, (rows, kk))
    w = rng.normal(size=(d, d)).astype(np.float32)
    table = rng.normal(size=(d, v)).astype(np.float32)
    g1 = rng.normal(size=(k, d)).astype(np.float32)
    g2 = rng.normal(size=(t, *idx_d.shape)).astype(np.float32)
    g3 = rng.normal(size=(kk, d)).astype(np.float32)
    g4 = rng.normal(size=(kk,)).astype(np.float32)
    with open(tmp_path / "train.csv", "w") as f:
        f.write(",".join([f"x{i}" for i in range(t * d)] + [f"i{j}" for j in range(kk)]) + ",y\n")
        for r in range(rows):
            f.write(",".join([repr(float(c)) for c in x[r]] + [str(int(c)) for c in ids[r]]) + ",0\n")
    lit = lambda a: literal(np.asarray(a, dtype=np.float32))
    spec = f"""model gathers
data csv("train.csv")
label y: int
features {{
  x = numeric(x0..x{t * d - 1})
  ids = integer(i0..i{kk - 1}, num_buckets = {t})
}}
params {{
  W: [{d}, {d}] = constant(value = {literal(w)})
  G: [{d}, {v}] = constant(value = {literal(table)})
}}
a = reshape(x, [B, {t}, {d}]) @ W
by_time = gather(a, {lit(idx_t)}, axis = 1)
by_feature = gather(a, {lit(idx_d)}, axis = -1)
per_example = gather(a, ids, axis = 1, batch_dims = 1)
from_table = reduce_sum(a, axis = 1) @ gather(G, {lit(idx_g)}, axis = 1)
loss = mean(reduce_sum(square(by_time) * {literal(g1)}, axis = [1, 2]) + reduce_sum(square(by_feature) * {literal(g2)}, axis = [1, 2, 3]) + reduce_sum(square(per_example) * {literal(g3)}, axis = [1, 2]) + reduce_sum(square(from_table) * {literal(g4)}, axis = 1))
optimizer gradient_descent(learning_rate = 1.0)
train {{ batch = {rows}, steps = 1, eval_fraction = 0 }}
outputs {{ per_example = per_example }}
"""
    (got_w, got_g), out = _step_and_predict(specc, tmp_path, spec, ["W", "G"])

    xs = x.reshape(rows, t, d)
    var, gvar = tf.Variable(w), tf.Variable(table)
    with tf.GradientTape() as tape:
        a = tf.matmul(xs, var)
        by_time = tf.gather(a, idx_t, axis=1)
        by_feature = tf.gather(a, idx_d, axis=-1)
        per_example = tf.gather(a, ids, axis=1, batch_dims=1)
        from_table = tf.matmul(tf.reduce_sum(a, axis=1), tf.gather(gvar, idx_g, axis=1))
        loss = tf.reduce_mean(tf.reduce_sum(tf.square(by_time) * g1, axis=[1, 2])
                              + tf.reduce_sum(tf.square(by_feature) * g2, axis=[1, 2, 3])
                              + tf.reduce_sum(tf.square(per_example) * g3, axis=[1, 2])
                              + tf.reduce_sum(tf.square(from_table) * g4, axis=1))
    dw, dg = tape.gradient(loss, [var, gvar])
    np.testing.assert_allclose(got_w, w - dw.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_g, table - tf.convert_to_tensor(dg).numpy(), rtol=1e-5, atol=1e-5)
    stepped = tf.gather(tf.matmul(xs, tf.constant(got_w)), ids, axis=1, batch_dims=1)
    np.testing.assert_allclose(out, stepped.numpy().reshape(rows, -1), rtol=1e-5, atol=1e-6)


def test_masked_softmax_as_keras(specc, tmp_path):
    """`softmax(scores, mask = m)` against `keras.layers.Softmax()(scores,
    mask)`: attention scores `[B, T, T]` with a `[B, 1, T]` mask from
    `sequence_mask` (lengths drawn from 0, a row masked whole, to T), and a
    `[B, T, 1]` mask over axis 1; values and gradients."""
    import keras

    rng = np.random.default_rng(SEED + 7)
    t, d = (int(v) for v in rng.integers(2, 6, 2))
    rows = int(rng.integers(3, 9))
    x = rng.normal(size=(rows, t * d)).astype(np.float32)
    lengths = rng.integers(0, t + 1, rows).astype(np.float32)
    w = rng.normal(size=(d, d)).astype(np.float32)
    g1 = rng.normal(size=(t, t)).astype(np.float32)
    g2 = rng.normal(size=(t, t)).astype(np.float32)
    with open(tmp_path / "train.csv", "w") as f:
        f.write(",".join(f"x{i}" for i in range(t * d)) + ",n,y\n")
        for r in range(rows):
            f.write(",".join(repr(float(v)) for v in x[r]) + f",{lengths[r]},0\n")
    spec = f"""model masked
data csv("train.csv")
label y: int
features {{
  x = numeric(x0..x{t * d - 1})
  n = numeric(n)
}}
params {{ W: [{d}, {d}] = constant(value = {literal(w)}) }}
a = reshape(x, [B, {t}, {d}]) @ W
scores = matmul(a, a, transpose_b = true) * 0.5
mask = sequence_mask(reshape(n, [B]), {t})
p = softmax(scores, mask = expand_dims(mask, 1))
q = softmax(scores, axis = 1, mask = expand_dims(mask, 2))
loss = mean(reduce_sum(p * {literal(g1)}, axis = [1, 2]) + reduce_sum(q * {literal(g2)}, axis = [1, 2]))
optimizer gradient_descent(learning_rate = 1.0)
train {{ batch = {rows}, steps = 1, eval_fraction = 0 }}
outputs {{ p = p }}
"""
    (got,), out = _step_and_predict(specc, tmp_path, spec, ["W"])

    xs = x.reshape(rows, t, d)
    mask = tf.sequence_mask(lengths, t)
    def attention(wv):
        a = tf.matmul(xs, wv)
        scores = tf.matmul(a, a, transpose_b=True) * 0.5
        p = keras.layers.Softmax()(scores, mask=tf.expand_dims(mask, 1))
        q = keras.layers.Softmax(axis=1)(scores, mask=tf.expand_dims(mask, 2))
        return p, q
    var = tf.Variable(w)
    with tf.GradientTape() as tape:
        p, q = attention(var)
        loss = tf.reduce_mean(tf.reduce_sum(p * g1, axis=[1, 2]) + tf.reduce_sum(q * g2, axis=[1, 2]))
    want = w - tape.gradient(loss, var).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    p, _ = attention(tf.constant(got))
    np.testing.assert_allclose(out, p.numpy().reshape(rows, -1), rtol=1e-5, atol=1e-6)


def test_time_major_gathers_and_a_masked_softmax_export_to_tflite(specc, tmp_path):
    """A model moving B (time-major products and a stack), gathering along
    the time axis (constant ids and `batch_dims = 1`) and attending with a
    mask exports to TF Lite; LiteRT computes what `specc predict` does."""
    rng = np.random.default_rng(SEED + 8)
    t, d = (int(v) for v in rng.integers(2, 6, 2))
    classes = int(rng.integers(2, 5))
    idx_t = rng.integers(0, t, int(rng.integers(2, 6)))
    x = rng.normal(size=(48, t * d + 1)).astype(np.float32)
    x[:, -1] = rng.integers(0, t + 1, 48)
    write_rows(tmp_path / "train.csv", x, rng.integers(0, classes, 48))
    (tmp_path / "spec.spec").write_text(f"""model time_major
data csv("train.csv")
label y: int
features {{
  x = numeric(x0..x{t * d - 1})
  n = numeric(x{t * d})
}}
params {{
  W: [{d}, {d}] = glorot_uniform(seed = 1)
  Wo: [{d}, {classes}] = glorot_uniform(seed = 2)
}}
seq = reshape(x, [B, {t}, {d}])
tm = tanh(transpose(seq, [1, 0, 2]) @ W)
back = transpose(stack([tm[0], tm[{t - 1}]]) + reduce_mean(tm, axis = 0), [1, 0, 2])
picked = gather(transpose(tm, [1, 0, 2]), {literal(idx_t.astype(np.float32))}, axis = 1)
last = gather(seq, cast(argmax(seq[:, :, 0], 1), int32), axis = 1, batch_dims = 1)
mask = expand_dims(sequence_mask(reshape(n, [B]), {t}), 1)
att = matmul(softmax(matmul(picked, seq, transpose_b = true), mask = mask), seq)
logits = reduce_mean(att @ Wo, axis = 1) + reduce_mean(back @ Wo, axis = 1) + last @ Wo
loss = mean(sparse_softmax_cross_entropy(y, logits))
optimizer adam(learning_rate = 0.01)
train {{ batch = 16, steps = 20 }}
outputs {{ logits = logits }}
""")
    new = rng.normal(size=(int(rng.integers(3, 20)), t * d + 1)).astype(np.float32)
    new[:, -1] = rng.integers(0, t + 1, len(new))
    litert_equals_predict(specc, tmp_path, new,
                          feeds=lambda rows: {"x": rows[:, :t * d], "n": rows[:, t * d:]})
