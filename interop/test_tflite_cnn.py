"""TensorFlow Lite runs the convolutional networks `specc export --format tflite` writes.

- digits_cnn (specs/digits_cnn.spec), trained a few steps and exported: LiteRT
  (`ai_edge_litert`) runs it on every digits row, and its probabilities equal
  specc's compiled `predict` with the checkpoint, and TF's own `tf.nn.conv2d`,
  `tf.nn.max_pool2d` and dense layers from the checkpoint's weights (float64),
  within 1e-5 relative; its classes are specc's.
- A small model with one branch per TFLite operator specc exports (CONV_2D
  with stride 2 and SAME's odd padding, explicit padding, dilation, conv1d and
  1x1; DEPTHWISE_CONV_2D with multiplier 2; separable; AVERAGE_POOL_2D SAME;
  MAX_POOL_2D with overlapping windows; TRANSPOSE_CONV), trained a few steps:
  every branch LiteRT computes equals the same `tf.nn` op of TF on the
  checkpoint's weights within 1e-5 relative.
"""

import csv
import subprocess

import numpy as np
import pytest
import tensorflow as tf
from ai_edge_litert.interpreter import Interpreter
from tflite_digits import DIGITS, ROOT, branches_spec, load_digits

BRANCHES = {
    "y_stride": "relu(bias_add(conv2d(img, K1, strides = 2, padding = \"SAME\"), b1))",
    "y_explicit": "conv2d(img, K2, strides = 1, padding = [[0, 0], [2, 0], [1, 1], [0, 0]])",
    "y_dilated": "conv2d(img, K3, strides = 1, padding = \"SAME\", dilations = 2)",
    "y_conv1d": "conv1d(reshape(pixels, [B, 16, 4]), K4, stride = 2, padding = \"SAME\")",
    "y_depthwise": "depthwise_conv2d(img, D1, strides = 1, padding = \"VALID\")",
    "y_separable": "separable_conv2d(img, D2, P2, strides = 1, padding = \"SAME\")",
    "y_avg": "avg_pool2d(img, ksize = 3, strides = 2, padding = \"SAME\")",
    "y_max": "max_pool2d(img, ksize = 3, strides = 2, padding = \"VALID\")",
    "y_1x1": "conv2d(img, K5, strides = 1, padding = \"VALID\")",
    "y_transpose": "conv2d_transpose(img, T1, [1, 16, 16, 2], strides = 2, padding = \"SAME\")",
}

SMALL = """params {{
  K1: [3, 3, 2, 4] = glorot_uniform(seed = 1)
  b1: [4]          = zeros
  K2: [3, 3, 2, 3] = glorot_uniform(seed = 2)
  K3: [3, 3, 2, 3] = glorot_uniform(seed = 3)
  K4: [3, 4, 3]    = glorot_uniform(seed = 4)
  D1: [3, 3, 2, 2] = glorot_uniform(seed = 5)
  D2: [3, 3, 2, 2] = glorot_uniform(seed = 6)
  P2: [1, 1, 4, 3] = glorot_uniform(seed = 7)
  K5: [1, 1, 2, 3] = glorot_uniform(seed = 8)
  T1: [3, 3, 2, 2] = glorot_uniform(seed = 9)
  W: [29, 10]      = glorot_uniform(seed = 10)
  b: [10]          = zeros
}}
x   = reshape(pixels, [B, 8, 8, 1])
img = concat([x, x * x], axis = 3)
{branches}
f = concat([{means}, reduce_mean(y_conv1d, axis = 1)], axis = 1)
logits = f @ W + b
loss = mean(sparse_softmax_cross_entropy(label, logits))
optimizer adam(learning_rate = 0.01)
train {{ batch = 64, steps = 20, shuffle = 1797, seed = 7 }}
"""


def small_spec():
    return branches_spec("small_cnn", SMALL, BRANCHES)


def load_pixels():
    return load_digits()[0]


def assert_close(got, want, name):
    """1e-5 relative, with a floor of 1e-5 of the output's largest magnitude
    (a float32 sum's error scales with its terms, not its value)."""
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape, f"{name}: shape {got.shape} vs {want.shape}"
    tol = 1e-5 * np.maximum(np.abs(want), np.abs(want).max())
    bad = np.abs(got - want) > tol
    assert not bad.any(), (
        f"{name}: {bad.sum()} values differ, first at {np.argwhere(bad)[0]}: "
        f"{got[bad][0]} vs {want[bad][0]}")


def litert(model, **feeds):
    return Interpreter(model_path=str(model)).get_signature_runner("serving_default")(**feeds)


@pytest.fixture(scope="module")
def digits_cnn(specc, tmp_path_factory):
    dir = tmp_path_factory.mktemp("tflite_cnn")
    spec = ROOT / "specs" / "digits_cnn.spec"
    subprocess.run([specc, "run", str(spec), "--steps", "40", "--checkpoint-dir", str(dir / "ckpt")],
                   check=True, capture_output=True, text=True)
    model = dir / "cnn.tflite"
    subprocess.run([specc, "export", str(spec), "--checkpoint", str(dir / "ckpt"),
                    "--format", "tflite", "-o", str(model)],
                   check=True, capture_output=True, text=True)
    out = dir / "compiled.csv"
    subprocess.run([specc, "predict", str(spec), "--data", str(DIGITS), "--checkpoint",
                    str(dir / "ckpt"), "-o", str(out)],
                   check=True, capture_output=True, text=True)
    with open(out) as f:
        rows = list(csv.reader(f))[1:]
    compiled = np.array([[float(v) for v in r] for r in rows])
    return dict(dir=dir, model=model, compiled=compiled, pixels=load_pixels())


def test_litert_runs_digits_cnn_as_specc_predicts(digits_cnn):
    out = litert(digits_cnn["model"], pixels=digits_cnn["pixels"])
    compiled = digits_cnn["compiled"]
    assert out["probs"].shape == (1797, 10)
    assert_close(out["probs"], compiled[:, :10], "probs")
    np.testing.assert_array_equal(out["class"], compiled[:, 10].astype(np.int32))


def test_litert_runs_digits_cnn_as_tf_computes_it(digits_cnn):
    r = tf.train.load_checkpoint(str(digits_cnn["dir"] / "ckpt"))
    w = {n: r.get_tensor(n).astype(np.float64)
         for n in ["K1", "b1", "K2", "b2", "W3", "b3", "W4", "b4"]}
    x = digits_cnn["pixels"].astype(np.float64).reshape(-1, 8, 8, 1)
    h1 = tf.nn.relu(tf.nn.conv2d(x, w["K1"], 1, "SAME") + w["b1"])
    h2 = tf.nn.relu(tf.nn.conv2d(h1, w["K2"], 1, "SAME") + w["b2"])
    p = tf.nn.max_pool2d(h2, 2, 2, "VALID")
    h3 = tf.nn.relu(tf.reshape(p, [-1, 1024]) @ w["W3"] + w["b3"])
    probs = tf.nn.softmax(h3 @ w["W4"] + w["b4"]).numpy()
    out = litert(digits_cnn["model"], pixels=digits_cnn["pixels"])
    assert_close(out["probs"], probs, "probs")


@pytest.fixture(scope="module")
def small(specc, tmp_path_factory):
    dir = tmp_path_factory.mktemp("tflite_small_cnn")
    spec = dir / "small.spec"
    spec.write_text(small_spec())
    subprocess.run([specc, "run", str(spec), "--checkpoint-dir", str(dir / "ckpt")],
                   check=True, capture_output=True, text=True)
    model = dir / "small.tflite"
    args = [specc, "export", str(spec), "--checkpoint", str(dir / "ckpt"),
            "--format", "tflite", "-o", str(model)]
    for name in BRANCHES:
        args += ["--fetch", name]
    subprocess.run(args, check=True, capture_output=True, text=True)
    pixels = load_pixels()[:200]
    return dict(dir=dir, model=model, pixels=pixels, out=litert(model, pixels=pixels))


def tf_branches(ckpt, pixels):
    """Every branch, by TF's own ops in float64 from the checkpoint."""
    r = tf.train.load_checkpoint(str(ckpt))
    w = {n: r.get_tensor(n).astype(np.float64)
         for n in ["K1", "b1", "K2", "K3", "K4", "D1", "D2", "P2", "K5", "T1"]}
    p = pixels.astype(np.float64)
    x = p.reshape(-1, 8, 8, 1)
    img = np.concatenate([x, x * x], axis=3)
    n = len(p)
    return {
        "y_stride": tf.nn.relu(tf.nn.conv2d(img, w["K1"], 2, "SAME") + w["b1"]),
        "y_explicit": tf.nn.conv2d(img, w["K2"], 1, [[0, 0], [2, 0], [1, 1], [0, 0]]),
        "y_dilated": tf.nn.conv2d(img, w["K3"], 1, "SAME", dilations=2),
        "y_conv1d": tf.nn.conv1d(p.reshape(-1, 16, 4), w["K4"], 2, "SAME"),
        "y_depthwise": tf.nn.depthwise_conv2d(img, w["D1"], [1, 1, 1, 1], "VALID"),
        "y_separable": tf.nn.separable_conv2d(img, w["D2"], w["P2"], [1, 1, 1, 1], "SAME"),
        "y_avg": tf.nn.avg_pool2d(img, 3, 2, "SAME"),
        "y_max": tf.nn.max_pool2d(img, 3, 2, "VALID"),
        "y_1x1": tf.nn.conv2d(img, w["K5"], 1, "VALID"),
        "y_transpose": tf.nn.conv2d_transpose(img, w["T1"], [n, 16, 16, 2], 2, "SAME"),
    }


@pytest.mark.parametrize("name", list(BRANCHES))
def test_litert_runs_each_convolution_as_tf_nn_does(small, name):
    want = tf_branches(small["dir"] / "ckpt", small["pixels"])[name]
    assert_close(small["out"][name], np.asarray(want), name)


def test_small_cnn_operators(specc, small):
    import json
    info = json.loads(subprocess.run([specc, "inspect", str(small["model"]), "--json"],
                                     check=True, capture_output=True, text=True).stdout)
    ops = {op["builtin"] for op in info["subgraphs"][0]["operators"]}
    for op in ["CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D",
               "TRANSPOSE_CONV", "PAD"]:
        assert op in ops, (op, ops)
    # No im2col left: no BATCH_MATMUL, no GATHER.
    assert "BATCH_MATMUL" not in ops and "GATHER" not in ops, ops
