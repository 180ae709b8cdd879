"""LiteRT runs the dynamic-range (hybrid) convolutional networks
`specc export --quantize dynamic` writes.

Dynamic-range quantization stores the weights of FULLY_CONNECTED, CONV_2D,
DEPTHWISE_CONV_2D and TRANSPOSE_CONV with at least 1024 values as int8 per
output channel; the activations stay float and each hybrid kernel quantizes
its input on the fly (per row, or per image for the convolutions). After
that the arithmetic is integer sums and a few float products per output, so
specc's interpreter and LiteRT's reference kernels (`BUILTIN_REF`) agree bit
for bit whenever their inputs are the same bits:

- A small model whose every hybrid operator reads bits both interpreters
  compute alike (a reshape, an exact SUB, hybrid operators), one output per
  hybrid convolution: CONV_2D with stride 2, SAME's odd padding, a bias and
  a fused RELU; explicit padding as PAD + VALID; dilation; 1x1; one output
  channel (LiteRT's per-tensor kernel, symmetric input quantization);
  DEPTHWISE_CONV_2D with stride 3, a bias and a fused RELU6; TRANSPOSE_CONV
  with stride 2: each output bit-equal to LiteRT's reference kernels, and
  within 2e-2 of the output's largest value of LiteRT's default
  interpreter, whose XNNPACK delegate quantizes the hybrid inputs its own
  way (observed: up to 1.04e-2, three hybrid layers deep).
- The same for a Keras model converted by TF's own converter
  (`optimizations=[tf.lite.Optimize.DEFAULT]`, no representative data):
  Conv2D, DepthwiseConv2D, Conv2DTranspose with a bias (TRANSPOSE_CONV
  version 3) and a one-filter Conv2D, run by `specc predict --tflite`.
- digits_cnn (specs/digits_cnn.spec) trained 300 steps, exported float and
  dynamic: K1 (288 values) stays float, K2 and both dense weights are int8.
  Its first CONV_2D is float, and specc's float kernels round a sum once
  (f64) where LiteRT's reference kernel rounds every f32 addition: K1's
  outputs differ in the last bit on about a third of the values, which moves
  a hybrid input by one quantization step when it sits on a rounding
  boundary. The probabilities then differ from LiteRT's reference kernels
  by up to 3.8e-4 (the test allows 4e-3) and from its default interpreter
  (XNNPACK's own hybrid FULLY_CONNECTED) by up to 1.8e-3 (allowed 2e-2); the
  classes are the same on every row.
- The accuracy of the dynamic digits_cnn is within one percentage point of
  the float model's on all rows and on the 359 held-out rows, and its
  classes agree with the float model's on at least 99% of the rows.
- TF's converter, on the same digits_cnn weights, writes the same int8
  filters and per-channel scales, keeps the same tensors float, gives the
  hybrid operators the same versions, and LiteRT's reference kernels run
  its model and specc's to the same probabilities bit for bit.
"""

import json

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from tflite_digits import (DIGITS, ROOT, accuracies, branches_spec, digits_cnn_models,
                           keras_digits_cnn, load_digits, predict, run)

MLP = ROOT / "specs" / "digits_mlp.spec"


def litert(model, inputs, resolver=OpResolverType.AUTO):
    interp = Interpreter(model_path=str(model), experimental_op_resolver_type=resolver)
    return interp.get_signature_runner("serving_default")(**inputs)


def operators(specc, model):
    """(builtin, version) of each operator, from `specc inspect --json`."""
    info = json.loads(run(specc, "inspect", model, "--json").stdout)
    return [(op["builtin"], op["version"]) for op in info["subgraphs"][0]["operators"]]


def tensors(model):
    """name -> (dtype, shape, values, scales, quantized_dimension)."""
    interp = Interpreter(model_path=str(model))
    out = {}
    for d in interp.get_tensor_details():
        q = d["quantization_parameters"]
        try:
            values = interp.get_tensor(d["index"])
        except ValueError:
            values = None
        out[d["name"]] = (d["dtype"], tuple(d["shape"]), values, q["scales"],
                          q["quantized_dimension"])
    return out


@pytest.fixture(scope="module")
def digits_cnn(specc, tmp_path_factory):
    dir = tmp_path_factory.mktemp("tflite_cnn_dynamic")
    return digits_cnn_models(specc, dir, "dynamic", ["--quantize", "dynamic"])


@pytest.mark.parametrize("resolver, bound", [(OpResolverType.BUILTIN_REF, 4e-3),
                                             (OpResolverType.AUTO, 2e-2)])
def test_dynamic_digits_cnn_near_litert(digits_cnn, resolver, bound):
    m = digits_cnn["files"]["dynamic"]
    out = litert(m["model"], dict(pixels=digits_cnn["pixels"]), resolver)
    assert out["probs"].shape == (1797, 10)
    diff = np.abs(out["probs"] - m["probs"])
    print(f"{resolver}: max {diff.max():.2e}, {(diff > 0).sum()} of {diff.size} differ")
    assert diff.max() <= bound, diff.max()
    assert (out["class"] == m["cls"]).all()
    # Not the float model's numbers: the hybrid kernels moved them.
    assert (m["probs"] != digits_cnn["files"]["float"]["probs"]).mean() > 0.5


def test_dynamic_digits_cnn_accuracy_within_one_point_of_float(digits_cnn):
    f, q = digits_cnn["files"]["float"], digits_cnn["files"]["dynamic"]
    acc, held = accuracies(digits_cnn)
    agree = float((f["cls"] == q["cls"]).mean())
    print(f"digits_cnn accuracy, all rows: float {acc['float']:.4f}, "
          f"dynamic {acc['dynamic']:.4f}; held-out: float {held['float']:.4f}, "
          f"dynamic {held['dynamic']:.4f}; classes agree on {agree:.4f}; "
          f"probabilities within {np.abs(f['probs'] - q['probs']).max():.2e}")
    assert acc["float"] > 0.95
    assert abs(acc["dynamic"] - acc["float"]) <= 0.01
    assert abs(held["dynamic"] - held["float"]) <= 0.015
    assert agree >= 0.99


def test_dynamic_digits_cnn_file_has_hybrid_convolutions(specc, digits_cnn):
    model = digits_cnn["files"]["dynamic"]["model"]
    assert operators(specc, model) == [
        ("RESHAPE", 1), ("CONV_2D", 1), ("CONV_2D", 5), ("MAX_POOL_2D", 1), ("RESHAPE", 1),
        ("FULLY_CONNECTED", 12), ("FULLY_CONNECTED", 12), ("ARG_MAX", 1), ("SOFTMAX", 1)]
    t = tensors(model)
    # K1 [32, 3, 3, 1] has 288 values, fewer than 1024: float.
    assert t["K1/filter"][0] == np.float32
    dtype, shape, w, scales, axis = t["K2/filter"]
    assert (dtype, shape, axis, len(scales)) == (np.int8, (64, 3, 3, 32), 0, 64)
    # Each output channel reaches +-127 scaled by its own max.
    assert (np.abs(w.astype(int)).reshape(64, -1).max(axis=1) == 127).all()
    # The biases stay float.
    assert t["b2"][0] == np.float32


@pytest.fixture(scope="module")
def tf_digits_cnn(digits_cnn):
    """TF's converter on digits_cnn's weights, dynamic range (no data)."""
    import tensorflow as tf
    conv = tf.lite.TFLiteConverter.from_keras_model(keras_digits_cnn(tf, digits_cnn["dir"] / "ckpt"))
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    path = digits_cnn["dir"] / "tf_digits_cnn_dynamic.tflite"
    path.write_bytes(conv.convert())
    return path


def weights_by_shape(model):
    """The constant tensors of rank >= 2 by shape: (dtype, values, scales, axis)."""
    out = {}
    for dtype, shape, values, scales, axis in tensors(model).values():
        if values is not None and len(shape) >= 2 and dtype in (np.int8, np.float32):
            out[shape] = (dtype, values, scales, axis)
    return out


def test_tf_converter_quantizes_digits_cnn_as_specc(specc, digits_cnn, tf_digits_cnn):
    ours = weights_by_shape(digits_cnn["files"]["dynamic"]["model"])
    theirs = weights_by_shape(tf_digits_cnn)
    shapes = [(32, 3, 3, 1), (64, 3, 3, 32), (128, 1024), (10, 128)]
    for shape in shapes:
        (d1, v1, s1, a1), (d2, v2, s2, a2) = ours[shape], theirs[shape]
        assert d1 == d2, (shape, d1, d2)
        if d1 == np.int8:
            assert a1 == a2 == 0, shape
            np.testing.assert_array_equal(s1, s2, err_msg=str(shape))
            np.testing.assert_array_equal(v1, v2, err_msg=str(shape))
        else:
            np.testing.assert_array_equal(v1, v2, err_msg=str(shape))
    assert [d for d, *_ in (ours[s] for s in shapes)] == [np.float32, np.int8, np.int8, np.int8]
    ops = [o for o in operators(specc, tf_digits_cnn) if o[0] in ("CONV_2D", "FULLY_CONNECTED")]
    # TF writes one operator code per builtin: its float CONV_2D shares the
    # hybrid one's version 5.
    assert ops == [("CONV_2D", 5), ("CONV_2D", 5), ("FULLY_CONNECTED", 12),
                   ("FULLY_CONNECTED", 12)], ops
    # The same model: LiteRT's reference kernels give the same bits.
    pixels = dict(pixels=digits_cnn["pixels"])
    want = litert(tf_digits_cnn, pixels, OpResolverType.BUILTIN_REF)["probs"]
    got = litert(digits_cnn["files"]["dynamic"]["model"], pixels,
                 OpResolverType.BUILTIN_REF)["probs"]
    assert (want == got).all(), (np.abs(want - got).max(), (want != got).sum())


BRANCHES = {
    "y_stride": "relu(bias_add(conv2d(h, K1, strides = 2, padding = \"SAME\"), b1))",
    "y_explicit": "conv2d(h, K2, strides = 1, padding = [[0, 0], [2, 0], [1, 1], [0, 0]])",
    "y_dilated": "conv2d(h, K3, strides = 1, padding = \"SAME\", dilations = 2)",
    "y_1x1": "conv2d(h, K4, strides = 1, padding = \"VALID\")",
    "y_one": "conv2d(h, K5, strides = 1, padding = \"SAME\")",
    "y_depthwise": "relu6(bias_add(depthwise_conv2d(h, D1, strides = 3, padding = \"VALID\"), bd))",
    "y_transpose": "conv2d_transpose(s, T1, [1, 8, 8, 8], strides = 2, padding = \"SAME\")",
}

# Every filter has at least 1024 values: every convolution is hybrid, and
# the first one reads `img`, which both interpreters compute alike (a
# reshape and an exact subtraction); with no activation, `h` is signed.
SMALL = """params {{
  K0: [3, 3, 1, 128] = glorot_uniform(seed = 1)
  K1: [3, 3, 128, 2] = glorot_uniform(seed = 2)
  b1: [2]            = zeros
  K2: [3, 3, 128, 2] = glorot_uniform(seed = 3)
  K3: [3, 3, 128, 2] = glorot_uniform(seed = 4)
  K4: [1, 1, 128, 8] = glorot_uniform(seed = 5)
  K5: [3, 3, 128, 1] = glorot_uniform(seed = 6)
  D1: [3, 3, 128, 1] = glorot_uniform(seed = 7)
  bd: [128]          = zeros
  S: [2, 2, 128, 8]  = glorot_uniform(seed = 8)
  T1: [4, 4, 8, 8]   = glorot_uniform(seed = 9), trainable = false
  W: [151, 10]       = glorot_uniform(seed = 10)
  b: [10]            = zeros
}}
img = reshape(pixels, [B, 8, 8, 1]) - 0.5
h = conv2d(img, K0, strides = 1, padding = "SAME")
s = conv2d(h, S, strides = 2, padding = "VALID")
{branches}
f = concat([{means}], axis = 1)
logits = f @ W + b
loss = mean(sparse_softmax_cross_entropy(label, logits))
optimizer adam(learning_rate = 0.01)
train {{ batch = 64, steps = 20, shuffle = 1797, seed = 7 }}
"""

ROWS = 200


def columns(header, pred, names):
    """The CSV columns of each output `name` (`name` or `name_i_j_k`)."""
    out = {}
    for name in names:
        cols = [i for i, h in enumerate(header) if h == name or h.startswith(name + "_")
                and h[len(name) + 1:].replace("_", "").isdigit()]
        out[name] = pred[:, cols]
    return out


@pytest.fixture(scope="module")
def first_rows(tmp_path_factory):
    """The first ROWS rows of the digits data, as a CSV file and the pixels."""
    path = tmp_path_factory.mktemp("digits_rows") / "rows.csv"
    with open(DIGITS) as f:
        path.write_text("".join(f.readline() for _ in range(ROWS + 1)))
    pixels, _ = load_digits()
    return path, pixels[:ROWS]


@pytest.fixture(scope="module")
def small(specc, first_rows, tmp_path_factory):
    dir = tmp_path_factory.mktemp("tflite_small_cnn_dynamic")
    spec = dir / "small.spec"
    spec.write_text(branches_spec("small_cnn_dynamic", SMALL, BRANCHES))
    run(specc, "run", spec, "--checkpoint-dir", dir / "ckpt")
    model = dir / "small.tflite"
    args = [specc, "export", spec, "--checkpoint", dir / "ckpt", "--format", "tflite",
            "-o", model, "--quantize", "dynamic"]
    for name in BRANCHES:
        args += ["--fetch", name]
    run(*args)
    rows, pixels = first_rows
    header, pred = predict(specc, spec, model, dir / "small.csv", data=rows)
    return dict(model=model, pixels=pixels, ours=columns(header, pred, BRANCHES))


def test_small_dynamic_operators(specc, small):
    ops = operators(specc, small["model"])
    convolutions = [o for o in ops if "CONV" in o[0]]
    # K0, S, the five CONV_2D branches; the depthwise; the transposed.
    assert sorted(convolutions) == [("CONV_2D", 5)] * 7 + [("DEPTHWISE_CONV_2D", 6),
                                                           ("TRANSPOSE_CONV", 2)], ops
    t = tensors(small["model"])
    for name, axis, channels in [("K0/filter", 0, 128), ("K1/filter", 0, 2),
                                 ("K5/filter", 0, 1), ("D1/filter", 3, 128),
                                 ("T1/filter", 0, 8), ("K4/filter", 0, 8), ("S/filter", 0, 8)]:
        dtype, shape, w, scales, qaxis = t[name]
        assert (dtype, qaxis, len(scales)) == (np.int8, axis, channels), (name, dtype, qaxis)
        assert shape[axis] == channels
        # Symmetric per channel: each channel's largest magnitude is 127.
        m = np.abs(np.moveaxis(w.astype(int), axis, 0)).reshape(channels, -1).max(axis=1)
        assert (m == 127).all(), name


@pytest.mark.parametrize("name", list(BRANCHES))
def test_small_dynamic_branch_bit_equal_to_litert_reference(small, name):
    out = litert(small["model"], dict(pixels=small["pixels"]), OpResolverType.BUILTIN_REF)[name]
    ours = small["ours"][name]
    want = out.reshape(len(out), -1)
    assert want.shape == ours.shape, (want.shape, ours.shape)
    diff = np.abs(want - ours)
    assert (want == ours).all(), (diff.max(), (diff > 0).sum())
    # Not a constant: the branch's values spread.
    assert len(np.unique(ours)) > 100


@pytest.mark.parametrize("name", list(BRANCHES))
def test_small_dynamic_branch_near_litert_default(small, name):
    out = litert(small["model"], dict(pixels=small["pixels"]), OpResolverType.AUTO)[name]
    want = out.reshape(len(out), -1)
    ours = small["ours"][name]
    rel = np.abs(want - ours).max() / np.abs(want).max()
    print(f"{name}: LiteRT default interpreter within {rel:.1e} of the largest value")
    # XNNPACK quantizes the inputs of its hybrid convolutions its own way:
    # an input can land one step (1/255 of its image's range) away, and the
    # branches are up to three hybrid layers deep (observed: up to 1.04e-2).
    assert rel <= 2e-2, rel


KERAS_OUTPUTS = ["a", "d", "t", "one"]


def keras_cnn(tf):
    """A Keras CNN on the first ROWS digits (a fixed batch: the transposed
    convolution's output shape is a constant) with one output per hybrid
    convolution; the first convolution reads the pixels less 0.5."""
    inp = tf.keras.Input((64,), batch_size=ROWS, name="pixels")
    x = tf.keras.layers.Reshape((8, 8, 1))(inp)
    x = tf.keras.layers.Lambda(lambda v: v - 0.5)(x)
    init = lambda s: tf.keras.initializers.RandomNormal(stddev=0.5, seed=s)
    h = tf.keras.layers.Conv2D(128, 3, padding="same", kernel_initializer=init(1),
                               bias_initializer=init(2))(x)
    a = tf.keras.layers.Conv2D(2, 3, strides=2, padding="same", activation="relu",
                               kernel_initializer=init(3), bias_initializer=init(4))(h)
    d = tf.keras.layers.DepthwiseConv2D(3, strides=3, padding="valid", activation="relu6",
                                        depthwise_initializer=init(5),
                                        bias_initializer=init(6))(h)
    s = tf.keras.layers.Conv2D(8, 2, strides=2, kernel_initializer=init(7),
                               bias_initializer=init(8))(h)
    t = tf.keras.layers.Conv2DTranspose(8, 4, strides=2, padding="same",
                                        kernel_initializer=init(9), bias_initializer=init(10))(s)
    one = tf.keras.layers.Conv2D(1, 3, padding="same", kernel_initializer=init(11),
                                 bias_initializer=init(12))(h)
    return tf.keras.Model(inp, dict(a=a, d=d, t=t, one=one))


@pytest.fixture(scope="module")
def tf_cnn(specc, first_rows, tmp_path_factory):
    import tensorflow as tf
    tf.random.set_seed(3)
    dir = tmp_path_factory.mktemp("tf_cnn_dynamic")
    conv = tf.lite.TFLiteConverter.from_keras_model(keras_cnn(tf))
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    model = dir / "tf_cnn_dynamic.tflite"
    model.write_bytes(conv.convert())
    rows, pixels = first_rows
    header, pred = predict(specc, MLP, model, dir / "ours.csv", data=rows)
    return dict(model=model, pixels=pixels, ours=columns(header, pred, KERAS_OUTPUTS))


def test_tf_converted_dynamic_cnn_operators(specc, tf_cnn):
    ops = set(operators(specc, tf_cnn["model"]))
    assert {("CONV_2D", 5), ("DEPTHWISE_CONV_2D", 6), ("TRANSPOSE_CONV", 3)} <= ops, ops


@pytest.mark.parametrize("name", KERAS_OUTPUTS)
def test_tf_converted_dynamic_cnn_runs_in_specc_as_in_litert_reference(tf_cnn, name):
    out = litert(tf_cnn["model"], dict(pixels=tf_cnn["pixels"]), OpResolverType.BUILTIN_REF)
    want = out[name].reshape(ROWS, -1)
    ours = tf_cnn["ours"][name]
    assert want.shape == ours.shape, (want.shape, ours.shape)
    assert len(np.unique(want)) > 100
    assert (ours == want).all(), (np.abs(ours - want).max(), (ours != want).sum())
