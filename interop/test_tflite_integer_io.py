"""LiteRT runs the integer-only models `specc export --quantize int8
--inference-input-type int8|uint8 --inference-output-type int8|uint8` writes.

digits_mlp (600 steps) and digits_cnn (300 steps), each exported float,
full-integer with a float interface (`int8`), and with int8 (`int8_io`) and
uint8 (`uint8_io`) inputs and outputs, all calibrated on the first 500 rows:

- LiteRT (its default interpreter and its reference kernels) runs each
  integer model on every digits row, fed the pixels quantized with the
  model's own input scale and zero point (`get_input_details`, TFLite's
  QUANTIZE: `round(x / scale) + zero_point`, halves away from zero); its
  integer probabilities, dequantized with the output's scale and zero
  point, equal the float-interface model's in the same interpreter bit for
  bit and its classes exactly (only the boundary changed), and equal
  `specc predict --tflite` on the integer model (bit for bit with the
  reference kernels; the default interpreter within the one-step and
  class bounds `test_tflite_int8.py` and `test_tflite_cnn_int8.py` allow);
- the classes equal the float model's but on the few rows int8
  quantization moves, rows the float model decides by a margin of at most
  0.05 between its top two probabilities (at most 1% of the rows, as the
  accuracy bound of the int8 tests; observed: digits_mlp none, digits_cnn
  one, row 129, whose float probabilities 0.4966 and 0.4901 become a tie
  at 0.4922);
- TF 2.21's converter, given digits_mlp's weights and the same 500 rows with
  `inference_input_type` and `inference_output_type` uint8 (and int8),
  writes the boundary as specc does: the same operators and versions, the
  input UINT8 with a QUANTIZE v1 to INT8 whose zero point is 128 below, the
  probabilities INT8 → QUANTIZE v1 → UINT8 (scale 1/256, zero point 0), the
  same input scale and zero points; specc's interpreter runs TF's integer
  models bit-equal to LiteRT's reference kernels.
"""

import json

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from tflite_digits import CNN, DIGITS, ROOT, load_digits, predict, run

MLP = ROOT / "specs" / "digits_mlp.spec"
SPECS = {"mlp": (MLP, "600"), "cnn": (CNN, "300")}
EXPORTS = {"int8": ("float32", "float32"), "int8_io": ("int8", "int8"),
           "uint8_io": ("uint8", "uint8")}
RESOLVERS = [OpResolverType.AUTO, OpResolverType.BUILTIN_REF]


def quantize(x, scale, zero_point, dtype):
    """TFLite's QUANTIZE: x / scale in float32, rounded half away from zero
    (in float64, exactly), + zero_point, saturated to `dtype`."""
    v = (x / np.float32(scale)).astype(np.float64)
    q = np.sign(v) * np.floor(np.abs(v) + 0.5) + zero_point
    info = np.iinfo(dtype)
    return np.clip(q, info.min, info.max).astype(dtype)


def litert(model, pixels, resolver):
    """The model's `serving_default` outputs on `pixels` (float32 rows),
    quantized first for an integer input; the probabilities dequantized:
    (probs as float32, class, the raw probs)."""
    interp = Interpreter(model_path=str(model), experimental_op_resolver_type=resolver)
    runner = interp.get_signature_runner("serving_default")
    inp = runner.get_input_details()["pixels"]
    if inp["dtype"] != np.float32:
        scale, zero_point = inp["quantization"]
        pixels = quantize(pixels, scale, zero_point, inp["dtype"])
    out = runner(pixels=pixels)
    raw = out["probs"]
    probs = raw
    if raw.dtype != np.float32:
        scale, zero_point = runner.get_output_details()["probs"]["quantization"]
        probs = (np.float64(scale) * (raw.astype(np.int32) - zero_point)).astype(np.float32)
    return probs, out["class"], raw


def exported(specc, dir, key):
    """SPECS[key] trained into `dir/ckpt`, exported float and as each of
    EXPORTS, each run by `specc predict --tflite` on every digits row."""
    spec, steps = SPECS[key]
    run(specc, "run", spec, "--steps", steps, "--checkpoint-dir", dir / "ckpt")
    files = {}
    for name, types in [("float", None), *EXPORTS.items()]:
        model = dir / f"{name}.tflite"
        extra = [] if types is None else [
            "--quantize", "int8", "--representative-data", DIGITS, "--samples", "500",
            "--inference-input-type", types[0], "--inference-output-type", types[1]]
        run(specc, "export", spec, "--checkpoint", dir / "ckpt", "--format", "tflite",
            "-o", model, *extra)
        _, pred = predict(specc, spec, model, dir / f"{name}.csv")
        files[name] = dict(model=model, probs=pred[:, :10], cls=pred[:, 10].astype(np.int64))
    pixels, labels = load_digits()
    return dict(name=key, dir=dir, files=files, pixels=pixels, labels=labels)


@pytest.fixture(scope="module")
def mlp(specc, tmp_path_factory):
    return exported(specc, tmp_path_factory.mktemp("integer_io_mlp"), "mlp")


@pytest.fixture(scope="module")
def cnn(specc, tmp_path_factory):
    return exported(specc, tmp_path_factory.mktemp("integer_io_cnn"), "cnn")


@pytest.fixture(params=list(SPECS))
def models(request):
    return request.getfixturevalue(request.param)


@pytest.mark.parametrize("resolver", RESOLVERS, ids=["default", "reference"])
@pytest.mark.parametrize("name", ["int8_io", "uint8_io"])
def test_litert_runs_the_integer_model_as_the_float_interface_model(models, name, resolver):
    files, px = models["files"], models["pixels"]
    m = files[name]
    dtype = np.int8 if name == "int8_io" else np.uint8
    interp = Interpreter(model_path=str(m["model"]))
    runner = interp.get_signature_runner("serving_default")
    assert runner.get_input_details()["pixels"]["dtype"] == dtype
    assert runner.get_output_details()["probs"]["dtype"] == dtype
    assert runner.get_output_details()["class"]["dtype"] == np.int32
    probs, cls, raw = litert(m["model"], px, resolver)
    assert raw.dtype == dtype and raw.shape == (1797, 10)
    want_probs, want_cls, _ = litert(files["int8"]["model"], px, resolver)
    # Only the boundary changed: the same integers, the same classes.
    assert (probs == want_probs).all(), np.abs(probs - want_probs).max() * 256
    assert (cls == want_cls).all(), (cls != want_cls).sum()
    # specc's interpreter on the integer model.
    steps = np.abs(probs - m["probs"]) * 256
    if resolver == OpResolverType.BUILTIN_REF:
        assert (steps == 0).all(), (steps.max(), (steps > 0).sum())
        assert (cls == m["cls"]).all()
    else:
        print(f"{models['name']} {name}: LiteRT's default kernels differ from specc by "
              f"{steps.max():.0f} steps on {(steps > 0).sum()} of {steps.size} probabilities, "
              f"{(cls != m['cls']).sum()} classes")
        assert (steps > 0).sum() < 0.01 * steps.size and steps.max() <= 16
        assert (cls == m["cls"]).all()
    # specc predicts the float-interface model's numbers too.
    assert (m["probs"] == files["int8"]["probs"]).all()
    assert (m["cls"] == files["int8"]["cls"]).all()


@pytest.mark.parametrize("name", ["int8_io", "uint8_io"])
def test_integer_model_classes_are_the_float_models(models, name):
    files, px = models["files"], models["pixels"]
    _, cls, _ = litert(files[name]["model"], px, OpResolverType.AUTO)
    float_probs, float_cls, _ = litert(files["float"]["model"], px, OpResolverType.AUTO)
    moved = np.nonzero(cls != float_cls)[0]
    top2 = np.sort(float_probs, axis=1)[:, -2:]
    margin = top2[:, 1] - top2[:, 0]
    labels = models["labels"]
    print(f"{models['name']} {name}: {len(moved)} of {len(px)} rows have another class than "
          f"the float model's (rows {moved.tolist()}, the float model's margins between its "
          f"top two probabilities {margin[moved].round(4).tolist()}); accuracy float "
          f"{(float_cls == labels).mean():.4f}, {name} {(cls == labels).mean():.4f}")
    assert (float_cls == labels).mean() > 0.9
    assert len(moved) <= 0.01 * len(px)
    # Only rows the float model decides by a small margin move (a step of
    # the int8 logits moves a probability near 1/2 by about 0.05).
    assert (margin[moved] <= 0.05).all()


def inspect(specc, model):
    """`specc inspect MODEL --json`: the first subgraph's operators as
    (builtin, version), its tensors, and the signature's tensors by name."""
    j = json.loads(run(specc, "inspect", model, "--json").stdout)
    g = j["subgraphs"][0]
    sig = j["signature_defs"][0]
    named = {t["name"]: g["tensors"][t["tensor"]] for t in sig["inputs"] + sig["outputs"]}
    return [(o["builtin"], o["version"]) for o in g["operators"]], g, named


def per_tensor(t):
    q = t["quantization"]
    assert len(q["scale"]) == 1
    return q["scale"][0], q["zero_point"][0]


def keras_digits_mlp(tf, ckpt):
    """digits_mlp as a Keras model (`pixels` in, `probs` and an INT32
    `class` out) holding the checkpoint's weights."""
    r = tf.train.load_checkpoint(str(ckpt))
    inp = tf.keras.Input((64,), name="pixels")
    h = tf.keras.layers.Dense(128, activation="relu")(inp)
    logits = tf.keras.layers.Dense(10)(h)
    cls = tf.keras.layers.Lambda(lambda t: tf.argmax(t, axis=1, output_type=tf.int32))(logits)
    model = tf.keras.Model(inp, {"probs": tf.keras.layers.Softmax()(logits), "class": cls})
    model.set_weights([r.get_tensor(n) for n in ["W1", "b1", "W2", "b2"]])
    return model


def test_tf_converter_writes_the_same_integer_boundary(specc, mlp, tmp_path):
    import tensorflow as tf
    models = mlp
    px = models["pixels"]
    keras = keras_digits_mlp(tf, models["dir"] / "ckpt")
    for name, tf_type in [("uint8_io", tf.uint8), ("int8_io", tf.int8)]:
        conv = tf.lite.TFLiteConverter.from_keras_model(keras)
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = lambda: ([px[i:i + 1]] for i in range(500))
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        conv.inference_input_type = tf_type
        conv.inference_output_type = tf_type
        theirs_file = tmp_path / f"tf_{name}.tflite"
        theirs_file.write_bytes(conv.convert())
        ops_tf, g_tf, tf_named = inspect(specc, theirs_file)
        ops_us, g_us, us_named = inspect(specc, models["files"][name]["model"])
        # The same operators and versions (TF may order SOFTMAX and ARG_MAX
        # otherwise), the same boundary operators at each end.
        assert sorted(ops_tf) == sorted(ops_us), (ops_tf, ops_us)
        assert ops_tf[0] == ops_us[0] and ops_tf[-1] == ops_us[-1]
        for sig in ["pixels", "probs", "class"]:
            assert tf_named[sig]["type"] == us_named[sig]["type"], sig
        assert us_named["class"]["type"] == "INT32"
        # The input: the same scale and zero point (the pixels' range [0, 1]).
        assert per_tensor(tf_named["pixels"]) == pytest.approx(per_tensor(us_named["pixels"]))
        assert per_tensor(us_named["probs"]) == ((1 / 256, 0) if name == "uint8_io" else (1 / 256, -128))
        assert per_tensor(tf_named["probs"]) == pytest.approx(per_tensor(us_named["probs"]))
        if name == "uint8_io":
            for g, named in [(g_tf, tf_named), (g_us, us_named)]:
                # QUANTIZE uint8 -> int8 after the input, int8 -> uint8 at
                # the output, each with the zero point moved by 128.
                (s, z), (ps, pz) = per_tensor(named["pixels"]), per_tensor(named["probs"])
                ts = g["tensors"]
                first = next(o for o in g["operators"] if named["pixels"] is ts[o["inputs"][0]])
                q = ts[first["outputs"][0]]
                assert q["type"] == "INT8" and per_tensor(q) == (s, z - 128)
                last = next(o for o in g["operators"] if named["probs"] is ts[o["outputs"][0]])
                assert last["builtin"] == "QUANTIZE"
                p = ts[last["inputs"][0]]
                assert p["type"] == "INT8" and per_tensor(p) == (ps, pz - 128)
        # specc runs TF's integer model as LiteRT's reference kernels do.
        _, ours = predict(specc, MLP, theirs_file, tmp_path / f"tf_{name}.csv")
        probs, cls, _ = litert(theirs_file, px, OpResolverType.BUILTIN_REF)
        header = (tmp_path / f"tf_{name}.csv").read_text().splitlines()[0].split(",")
        col = header.index("class")
        prob_cols = [header.index(f"probs_{k}") for k in range(10)]
        assert (ours[:, prob_cols] == probs).all(), np.abs(ours[:, prob_cols] - probs).max()
        assert (ours[:, col].astype(np.int64) == cls).all()
