"""LiteRT runs what `specc export --quantize dynamic|int8` writes.

specc trains digits_mlp (all 1797 rows), exports it float, dynamic-range
quantized and full-integer int8 (calibrated on 500 rows), and predicts every
row with each file in its own interpreter (`specc predict --tflite`).
LiteRT runs the same files through their `serving_default` signature:

- int8: LiteRT's default interpreter equals specc's int8 interpreter
  within one quantization step of the output (1/256 for the softmax; on
  these rows bit-equal) and its reference kernels (`BUILTIN_REF`) bit for
  bit, the class exactly; a model TF's own converter quantized runs in
  specc bit-equal to LiteRT's reference kernels too;
- dynamic: the hybrid FULLY_CONNECTED is deterministic integer arithmetic
  plus a few float operations per output: LiteRT's reference kernels
  (`BUILTIN_REF`) equal specc's bit for bit, its builtin kernels (without
  the XNNPACK delegate, which quantizes the inputs its own way; the
  optimized float SOFTMAX rounds otherwise) within 1e-5 relative (observed:
  below 5e-7);
- accuracy of the int8 model on all rows is within 1 percentage point of
  the float model's (both printed);
- the int8 file has the types and parameters TF's converter writes
  (int8 per-channel weights, int32 biases, softmax output 1/256 and -128).
"""

import pathlib
import subprocess

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter, OpResolverType

ROOT = pathlib.Path(__file__).resolve().parent.parent
SPEC = ROOT / "specs" / "digits_mlp.spec"
DIGITS = ROOT / "specs" / "data" / "digits.csv"


@pytest.fixture(scope="module")
def models(specc, tmp_path_factory):
    dir = tmp_path_factory.mktemp("tflite_int8")
    subprocess.run([specc, "run", str(SPEC), "--steps", "600", "--checkpoint-dir", str(dir / "ckpt")],
                   check=True, capture_output=True, text=True)
    files = {}
    for name, extra in [("float", []), ("dynamic", ["--quantize", "dynamic"]),
                        ("int8", ["--quantize", "int8", "--representative-data", str(DIGITS),
                                  "--samples", "500"])]:
        out = dir / f"{name}.tflite"
        subprocess.run([specc, "export", str(SPEC), "--checkpoint", str(dir / "ckpt"),
                        "--format", "tflite", "-o", str(out)] + extra,
                       check=True, capture_output=True, text=True)
        pred = dir / f"{name}.csv"
        subprocess.run([specc, "predict", str(SPEC), "--tflite", str(out), "--data", str(DIGITS),
                        "-o", str(pred)], check=True, capture_output=True, text=True)
        ours = np.loadtxt(pred, delimiter=",", skiprows=1, dtype=np.float32)
        files[name] = dict(model=out, probs=ours[:, :10], cls=ours[:, 10].astype(np.int64))
    data = np.loadtxt(DIGITS, delimiter=",", skiprows=1, dtype=np.float32)
    pixels = (data[:, :64] / np.float32(16)).astype(np.float32)
    labels = data[:, 64].astype(np.int64)
    return dict(files=files, pixels=pixels, labels=labels)


def litert(model, pixels, resolver=OpResolverType.AUTO):
    interp = Interpreter(model_path=str(model), experimental_op_resolver_type=resolver)
    return interp.get_signature_runner("serving_default")(pixels=pixels)


@pytest.mark.parametrize("resolver", [OpResolverType.AUTO, OpResolverType.BUILTIN_REF])
def test_int8_equals_litert(models, resolver):
    m = models["files"]["int8"]
    out = litert(m["model"], models["pixels"], resolver)
    steps = np.abs(out["probs"] - m["probs"]) * 256
    assert steps.max() <= 1.0 + 1e-6, steps.max()
    if resolver == OpResolverType.BUILTIN_REF:
        # The same integer arithmetic: bit-equal on every row.
        assert (steps > 0).sum() == 0
    assert (out["class"] == m["cls"]).all()


def test_dynamic_is_bit_equal_to_litert_reference_kernels(models):
    m = models["files"]["dynamic"]
    out = litert(m["model"], models["pixels"], OpResolverType.BUILTIN_REF)
    diff = np.abs(m["probs"] - out["probs"])
    assert (m["probs"] == out["probs"]).all(), (diff.max(), (diff > 0).sum())
    assert (out["class"] == m["cls"]).all()


def test_dynamic_equals_litert_builtin_kernels(models):
    m = models["files"]["dynamic"]
    out = litert(m["model"], models["pixels"], OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    want = out["probs"].astype(np.float64)
    tol = 1e-5 * np.maximum(np.abs(want), np.abs(want).max())
    assert (np.abs(m["probs"] - want) <= tol).all(), np.abs(m["probs"] - want).max()
    assert (out["class"] == m["cls"]).all()


def test_int8_accuracy_within_one_point_of_float(models):
    labels = models["labels"]
    acc = {k: float((f["cls"] == labels).mean()) for k, f in models["files"].items()}
    print(f"accuracy on {len(labels)} digits rows: float {acc['float']:.4f}, "
          f"dynamic {acc['dynamic']:.4f}, int8 {acc['int8']:.4f}")
    assert acc["float"] > 0.9
    assert abs(acc["int8"] - acc["float"]) <= 0.01
    assert abs(acc["dynamic"] - acc["float"]) <= 0.01


def test_int8_file_has_tflite_quantization(models):
    interp = Interpreter(model_path=str(models["files"]["int8"]["model"]))
    details = {d["name"]: d for d in interp.get_tensor_details()}
    w1 = details["W1/transpose"]
    assert w1["dtype"] == np.int8
    q = w1["quantization_parameters"]
    assert len(q["scales"]) == 128 and q["quantized_dimension"] == 0
    assert (q["zero_points"] == 0).all()
    w = interp.get_tensor(w1["index"])
    assert np.abs(w).max() == 127 and w.min() >= -127
    b1 = details["b1"]
    assert b1["dtype"] == np.int32
    probs = details["probs/int8"]
    assert probs["dtype"] == np.int8
    assert probs["quantization"] == (pytest.approx(1 / 256), -128)
    inputs = interp.get_input_details()
    assert inputs[0]["dtype"] == np.float32


def test_tf_converted_int8_model_runs_in_specc_as_in_litert(specc, models, tmp_path):
    """A model TF's own converter quantized (random weights large enough to
    spread the softmax over many values, int8 biases, its calibration) runs
    in `specc predict --tflite` bit-equal to LiteRT: specc's int8 kernels
    are TFLite's reference integer arithmetic, not only consistent with
    specc's own exporter."""
    import tensorflow as tf
    tf.random.set_seed(3)
    inp = tf.keras.Input((64,), name="pixels")
    h = tf.keras.layers.Dense(128, activation="relu", kernel_initializer=tf.keras.initializers.RandomNormal(stddev=1.0, seed=1),
                              bias_initializer=tf.keras.initializers.RandomNormal(stddev=0.5, seed=3))(inp)
    l = tf.keras.layers.Dense(10, kernel_initializer=tf.keras.initializers.RandomNormal(stddev=0.3, seed=2))(h)
    m = tf.keras.Model(inp, {"probs": tf.keras.layers.Softmax()(l)})
    px = models["pixels"]
    conv = tf.lite.TFLiteConverter.from_keras_model(m)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = lambda: ([px[i:i + 1]] for i in range(200))
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    model = tmp_path / "tf_int8.tflite"
    model.write_bytes(conv.convert())
    pred = tmp_path / "tf_int8.csv"
    subprocess.run([specc, "predict", str(SPEC), "--tflite", str(model), "--data", str(DIGITS),
                    "-o", str(pred)], check=True, capture_output=True, text=True)
    ours = np.loadtxt(pred, delimiter=",", skiprows=1, dtype=np.float32)
    for resolver in [OpResolverType.AUTO, OpResolverType.BUILTIN_REF]:
        want = litert(model, px, resolver)["probs"]
        assert len(np.unique(want)) > 100
        steps = np.abs(ours - want) * 256
        assert steps.max() <= 1.0 + 1e-6, steps.max()
        if resolver == OpResolverType.BUILTIN_REF:
            # The reference kernels: bit-equal. (The default interpreter's
            # optimized softmax differs by one step on 1 of 17970 values.)
            assert (steps > 0).sum() == 0, (steps > 0).sum()
