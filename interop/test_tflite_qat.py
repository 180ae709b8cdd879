"""Quantization-aware training exported to int8 TF Lite: LiteRT runs the
model `specc export --quantize int8` writes from a QAT spec's fake
quantizations (no representative data), and TF 2.21's converter, given an
equivalent graph with the same fake quantizations and values, writes the
same quantization parameters.

A digits MLP (hidden units, training steps and the activations' initial
ranges drawn from SPECC_INTEROP_SEED) fake-quantizes its input
(`fake_quant_with_min_max_args(min = 0, max = 1)`), both weight matrices
(per tensor, symmetric ranges `max|w|` with `narrow_range`), its hidden
layer and its logits (trained `min`, `max`), trained with its ranges, and
exported with `--quantize int8` alone:

- LiteRT's reference kernels (`BUILTIN_REF`) run it on every digits row
  with `specc predict --tflite`'s probabilities bit for bit and its
  classes exactly (its default interpreter within one step, 1/256);
- TF's converter (`tf.lite.Optimize.DEFAULT`, no representative dataset)
  on a `tf.function` with `tf.quantization.fake_quant_with_min_max_vars`
  at the same places, the checkpoint's values, writes the same operators,
  the same scales and zero points for every activation, weight and bias
  (a bias scale within one float32 ulp: TF multiplies the double scales of
  the ranges, specc the float32 scales the model stores), and the same int8
  weights and int32 biases.
"""

import zlib

import numpy as np
import pytest
import tensorflow as tf
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from tflite_digits import DIGITS, digits_header, load_digits, predict, run

SEED = int(__import__("os").environ.get("SPECC_INTEROP_SEED", "2026"))


def problem():
    rng = np.random.default_rng([SEED, zlib.crc32(b"tflite_qat")])
    units = int(rng.integers(16, 49))
    steps = int(rng.integers(100, 301))
    h_max = float(np.float32(rng.uniform(3, 8)))
    l_lo = float(np.float32(rng.uniform(-12, -6)))
    l_hi = float(np.float32(rng.uniform(6, 12)))
    return units, steps, h_max, l_lo, l_hi


def spec(units, steps, h_max, l_lo, l_hi):
    return digits_header("qat") + f"""params {{
  W1: [64, {units}] = glorot_uniform(seed = 1)
  b1: [{units}] = zeros
  W2: [{units}, 10] = glorot_uniform(seed = 2)
  b2: [10] = zeros
  h_min: [] = constant(value = 0)
  h_max: [] = constant(value = {h_max!r})
  logits_min: [] = constant(value = {l_lo!r})
  logits_max: [] = constant(value = {l_hi!r})
}}
m1 = stop_gradient(reduce_max(abs(W1)))
m2 = stop_gradient(reduce_max(abs(W2)))
W1q = fake_quant_with_min_max_vars(W1, -m1, m1, narrow_range = true)
W2q = fake_quant_with_min_max_vars(W2, -m2, m2, narrow_range = true)
x = fake_quant_with_min_max_args(pixels, min = 0, max = 1)
h = fake_quant_with_min_max_vars(relu(x @ W1q + b1), h_min, h_max)
logits = fake_quant_with_min_max_vars(h @ W2q + b2, logits_min, logits_max)
loss = mean(sparse_softmax_cross_entropy(label, logits))
optimizer adam(learning_rate = 0.001)
train {{ batch = 64, steps = {steps}, shuffle = 1797, seed = 7 }}
outputs {{
  probs = softmax(logits)
  class = argmax(logits, 1)
}}
"""


@pytest.fixture(scope="module")
def qat(specc, tmp_path_factory):
    d = tmp_path_factory.mktemp("qat")
    units, steps, h_max, l_lo, l_hi = problem()
    (d / "qat.spec").write_text(spec(units, steps, h_max, l_lo, l_hi))
    run(specc, "run", d / "qat.spec", "--checkpoint-dir", d / "ckpt")
    run(specc, "export", d / "qat.spec", "--checkpoint", d / "ckpt", "--format", "tflite",
        "--quantize", "int8", "-o", d / "int8.tflite")
    return d


def litert(model, pixels, resolver):
    interp = Interpreter(model_path=str(model), experimental_op_resolver_type=resolver)
    runner = interp.get_signature_runner("serving_default")
    out = runner(pixels=pixels)
    return out["probs"], out["class"]


@pytest.mark.parametrize("resolver", [OpResolverType.BUILTIN_REF, OpResolverType.AUTO])
def test_litert_runs_the_qat_model_as_specc(specc, qat, resolver):
    pixels, _ = load_digits()
    header, rows = predict(specc, qat / "qat.spec", qat / "int8.tflite", qat / "p.csv")
    assert header[-1] == "class"
    probs, cls = litert(qat / "int8.tflite", pixels, resolver)
    if resolver == OpResolverType.BUILTIN_REF:
        np.testing.assert_array_equal(probs, rows[:, :10])
        np.testing.assert_array_equal(cls, rows[:, 10].astype(np.int64))
    else:
        np.testing.assert_allclose(probs, rows[:, :10], rtol=0, atol=1 / 256 + 1e-7)
        assert (cls == rows[:, 10]).mean() >= 0.99


def quantization(details):
    q = details["quantization_parameters"]
    return q["scales"].astype(np.float32), q["zero_points"].astype(np.int64)


def test_tf_converter_writes_the_same_parameters(specc, qat):
    ck = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(qat / "ckpt")))
    v = {n: ck.get_tensor(n) for n in ["W1", "b1", "W2", "b2", "h_min", "h_max",
                                        "logits_min", "logits_max"]}
    m1, m2 = np.abs(v["W1"]).max(), np.abs(v["W2"]).max()

    @tf.function(input_signature=[tf.TensorSpec([None, 64], tf.float32, name="pixels")])
    def f(pixels):
        fq = tf.quantization.fake_quant_with_min_max_vars
        x = tf.quantization.fake_quant_with_min_max_args(pixels, min=0.0, max=1.0)
        w1 = fq(tf.constant(v["W1"]), -m1, m1, narrow_range=True)
        w2 = fq(tf.constant(v["W2"]), -m2, m2, narrow_range=True)
        h = fq(tf.nn.relu(tf.matmul(x, w1) + v["b1"]), v["h_min"], v["h_max"])
        logits = fq(tf.matmul(h, w2) + v["b2"], v["logits_min"], v["logits_max"])
        return {"probs": tf.nn.softmax(logits), "class": tf.argmax(logits, 1, output_type=tf.int32)}

    c = tf.lite.TFLiteConverter.from_concrete_functions([f.get_concrete_function()], f)
    c.optimizations = [tf.lite.Optimize.DEFAULT]
    (qat / "tf.tflite").write_bytes(c.convert())

    def by_op(path):
        interp = Interpreter(model_path=str(path),
                             experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        interp.allocate_tensors()
        tensors = {t["index"]: t for t in interp.get_tensor_details()}
        ops = [o for o in interp._get_ops_details() if o["op_name"] != "DELEGATE"]
        return ops, tensors

    (tf_ops, tf_t), (ours, our_t) = by_op(qat / "tf.tflite"), by_op(qat / "int8.tflite")
    # The same operators, in an order that may differ (TF's order is its own).
    assert sorted(o["op_name"] for o in tf_ops) == sorted(o["op_name"] for o in ours)
    for name in ["QUANTIZE", "FULLY_CONNECTED", "SOFTMAX", "ARG_MAX", "DEQUANTIZE"]:
        a = [o for o in tf_ops if o["op_name"] == name]
        b = [o for o in ours if o["op_name"] == name]
        # FULLY_CONNECTED: the first layer's weights are [units, 64].
        key = (lambda t: lambda o: t[o["inputs"][1]]["shape"][1] != 64 if name == "FULLY_CONNECTED" else 0)
        assert len(a) == len(b), name
        for oa, ob in zip(sorted(a, key=key(tf_t)), sorted(b, key=key(our_t))):
            pairs = [(oa["outputs"][0], ob["outputs"][0])]
            if name == "FULLY_CONNECTED":
                pairs += [(oa["inputs"][i], ob["inputs"][i]) for i in (0, 1, 2)]
            for k, (ta, tb) in enumerate(pairs):
                sa, za = quantization(tf_t[ta])
                sb, zb = quantization(our_t[tb])
                if k == 3:
                    # The bias scale `input_scale × weight_scale`: TF
                    # multiplies the ranges' double scales, specc the
                    # float32 ones the model stores (one ulp apart at most).
                    np.testing.assert_allclose(sb, sa, rtol=1.2e-7, atol=0,
                                               err_msg=f"{name}: scales of {our_t[tb]['name']}")
                else:
                    np.testing.assert_array_equal(sb, sa, err_msg=f"{name}: scales of {our_t[tb]['name']}")
                np.testing.assert_array_equal(zb, za, err_msg=f"{name}: zero points of {our_t[tb]['name']}")
            if name == "FULLY_CONNECTED":
                ia, ib = Interpreter(model_path=str(qat / "tf.tflite")), Interpreter(model_path=str(qat / "int8.tflite"))
                ia.allocate_tensors()
                ib.allocate_tensors()
                for i in (1, 2):
                    np.testing.assert_array_equal(ib.get_tensor(ob["inputs"][i]), ia.get_tensor(oa["inputs"][i]),
                                                  err_msg=f"{name}: values of {our_t[ob['inputs'][i]]['name']}")
