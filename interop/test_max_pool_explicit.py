"""`max_pool2d` with explicit padding equals TensorFlow's, forward and gradient.

TF's `tf.nn.max_pool2d(x, ksize, strides, padding=[[0, 0], [t, b], [l, r],
[0, 0]])` pads with -inf (a padded cell never wins) and sends each window's
gradient to its first maximum in window order. specc computes the pooled
values of one image (`specc predict`) and their gradient: the image is a
row of `train.csv` plus a parameter `P` of zeros; the loss is
`sum(max_pool2d(image) * G)` with `G` random and not trainable; one step of
gradient descent with learning rate 1 leaves `P = -d loss / d image` in the
checkpoint, where TF reads it and `G` (and `specc predict` pools the
image plus that trained `P`, compared with TF's pooling of the same sum). The image's values are small
integers, so windows have tied maxima and the tie rule is checked too.
"""

import subprocess

import numpy as np
import pytest
import tensorflow as tf

# (height, width, channels, ksize, strides, [[t, b], [l, r]])
CASES = [
    (5, 5, 3, [3, 3], [2, 2], [[1, 1], [1, 2]]),
    (6, 4, 2, [3, 2], [2, 1], [[2, 0], [0, 1]]),
    (4, 7, 1, [2, 3], [1, 3], [[1, 0], [2, 2]]),
    (3, 3, 2, [3, 3], [1, 1], [[2, 2], [2, 2]]),
]


def out_size(n, k, s, before, after):
    return (n + before + after - k) // s + 1


def spec(h, w, c, ksize, strides, pads):
    (t, b), (l, r) = pads
    oh = out_size(h, ksize[0], strides[0], t, b)
    ow = out_size(w, ksize[1], strides[1], l, r)
    last = h * w * c - 1
    pool = (f"max_pool2d(img, ksize = {ksize}, strides = {strides}, "
            f"padding = [[0, 0], [{t}, {b}], [{l}, {r}], [0, 0]])")
    return f"""model pool
data csv("train.csv")
label y: int
features {{ x = numeric(x0..x{last}) }}
params {{
  P: [{h}, {w}, {c}] = zeros
  G: [{oh}, {ow}, {c}] = random_uniform(minval = -1, maxval = 1, seed = 5), trainable = false
}}
img    = reshape(x, [B, {h}, {w}, {c}]) + P
pooled = {pool}
loss   = reduce_sum(pooled * G)
optimizer gradient_descent(learning_rate = 1.0)
train {{ batch = 1, steps = 1 }}
outputs {{ pooled = reshape(pooled, [B, {oh * ow * c}]) }}
""", (oh, ow)


def write_rows(path, x, label):
    with open(path, "w") as f:
        f.write(",".join(f"x{i}" for i in range(x.size)) + (",y" if label else "") + "\n")
        f.write(",".join(repr(float(v)) for v in x.ravel()) + (",0" if label else "") + "\n")


@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[:3])))
def test_max_pool2d_explicit_padding_equals_tensorflow(specc, tmp_path, case):
    h, w, c, ksize, strides, pads = case
    text, (oh, ow) = spec(h, w, c, ksize, strides, pads)
    rng = np.random.default_rng(h * 100 + w * 10 + c)
    # Small integers, some negative: ties within windows, and maxima below
    # zero where a zero padding would wrongly win.
    x = rng.integers(-4, 2, size=(1, h, w, c)).astype(np.float32)
    write_rows(tmp_path / "train.csv", x, True)
    write_rows(tmp_path / "new.csv", x, False)
    (tmp_path / "pool.spec").write_text(text)
    subprocess.run([specc, "run", "pool.spec", "--checkpoint-dir", "ckpt"],
                   cwd=tmp_path, check=True, capture_output=True, text=True)
    got = subprocess.run(
        [specc, "predict", "pool.spec", "--checkpoint", "ckpt", "--data", "new.csv"],
        cwd=tmp_path, check=True, capture_output=True, text=True).stdout
    lines = got.strip().split("\n")
    pooled = np.array([float(v) for v in lines[1].split(",")], dtype=np.float32)

    reader = tf.train.load_checkpoint(str(tf.train.latest_checkpoint(str(tmp_path / "ckpt"))))
    g = reader.get_tensor("G")
    grad = -reader.get_tensor("P")
    assert g.shape == (oh, ow, c)

    (t, b), (l, r) = pads
    image = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(image)
        want = tf.nn.max_pool2d(image, ksize, strides,
                                padding=[[0, 0], [t, b], [l, r], [0, 0]])
        loss = tf.reduce_sum(want * g)
    want_grad = tape.gradient(loss, image).numpy()[0]
    assert want.shape == (1, oh, ow, c)
    # `specc predict` pools the image plus the trained P.
    trained = tf.nn.max_pool2d(image + (-grad), ksize, strides,
                               padding=[[0, 0], [t, b], [l, r], [0, 0]])
    np.testing.assert_allclose(pooled, trained.numpy().ravel(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-6, atol=1e-7)
    # The gradient is not all zero: each window sends G somewhere.
    assert np.count_nonzero(want_grad) > 0
