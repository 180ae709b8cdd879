"""TensorFlow Lite runs what `specc export --format tflite` writes.

specc trains a small digits MLP (all 1797 rows, no held-out split) and
exports its logits, softmax, log-softmax, the top probability, the class and
an elementwise expression. LiteRT's `Interpreter` (the `ai-edge-litert`
package, TFLite's runtime) runs the file through its `serving_default`
signature on every row:

- every output equals the same model computed here in float64 from the
  checkpoint's variables (read with `tf.train.load_checkpoint`) within 1e-5
  relative;
- the accuracy of the exported class on all rows equals the accuracy specc's
  own eval function reports for the same rows (`specc run --json`);
- TF's `tf.lite.Interpreter` loads the same file and agrees with LiteRT;
- a fixed-batch export runs with that batch;
- an expression TFLite has no builtin for is refused with a diagnostic.
"""

import json
import subprocess

import numpy as np
import pytest
import tensorflow as tf
from ai_edge_litert.interpreter import Interpreter
from tflite_digits import DIGITS, ROOT, digits_header, load_digits

SPEC = digits_header("digits_tflite") + """params {
  W1: [64, 32] = glorot_uniform(seed = 1)
  b1: [32]     = zeros
  W2: [32, 10] = glorot_uniform(seed = 2)
  b2: [10]     = zeros
}
h      = relu(pixels @ W1 + b1)
logits = h @ W2 + b2
probs  = softmax(logits)
lp     = log_softmax(logits)
conf   = reduce_max(probs, axis = 1)
class  = argmax(logits)
g      = sigmoid(h) * tanh(h) - exp(h / 8) + maximum(h, 0.5)
soft   = softplus(logits)
loss = mean(sparse_softmax_cross_entropy(label, logits))
optimizer adam(learning_rate = 0.01)
train { batch = 64, steps = 150, shuffle = 1797, seed = 7, eval_fraction = 0 }
metrics { accuracy(label, argmax(logits)) }
"""

OUTPUTS = ["logits", "probs", "lp", "conf", "class", "g"]


@pytest.fixture(scope="module")
def trained(specc, tmp_path_factory):
    dir = tmp_path_factory.mktemp("tflite")
    spec = dir / "digits.spec"
    spec.write_text(SPEC)
    run = subprocess.run(
        [specc, "run", str(spec), "--checkpoint-dir", str(dir / "ckpt"), "--json"],
        check=True, capture_output=True, text=True,
    )
    result = json.loads(run.stdout.strip().splitlines()[-1])
    model = dir / "digits.tflite"
    args = [specc, "export", str(spec), "--checkpoint", str(dir / "ckpt"),
            "--format", "tflite", "-o", str(model)]
    for o in OUTPUTS:
        args += ["--fetch", o]
    subprocess.run(args, check=True, capture_output=True, text=True)
    pixels, labels = load_digits()
    return dict(dir=dir, spec=spec, model=model, result=result, pixels=pixels, labels=labels)


def reference(ckpt_dir, pixels):
    """The spec's model in float64 from the checkpoint's variables."""
    r = tf.train.load_checkpoint(str(ckpt_dir))
    w1, b1, w2, b2 = (r.get_tensor(n).astype(np.float64) for n in ["W1", "b1", "W2", "b2"])
    x = pixels.astype(np.float64)
    h = np.maximum(x @ w1 + b1, 0.0)
    logits = h @ w2 + b2
    z = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    lp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    g = 1 / (1 + np.exp(-h)) * np.tanh(h) - np.exp(h / 8) + np.maximum(h, 0.5)
    return dict(logits=logits, probs=probs, lp=lp, conf=probs.max(axis=1),
                cls=logits.argmax(axis=1), g=g)


def litert_outputs(model, pixels):
    interp = Interpreter(model_path=str(model))
    runner = interp.get_signature_runner("serving_default")
    return runner(pixels=pixels)


def assert_close(got, want, name):
    """1e-5 relative, with a floor of 1e-5 of the output's largest magnitude
    (a float32 dot product's error scales with its terms, not its sum)."""
    got = np.asarray(got, np.float64)
    tol = 1e-5 * np.maximum(np.abs(want), np.abs(want).max())
    bad = np.abs(got - want) > tol
    assert not bad.any(), f"{name}: {bad.sum()} values differ, first at {np.argwhere(bad)[0]}: {got[bad][0]} vs {want[bad][0]}"


def test_litert_runs_the_exported_model(trained):
    out = litert_outputs(trained["model"], trained["pixels"])
    assert sorted(out) == sorted(OUTPUTS)
    ref = reference(trained["dir"] / "ckpt", trained["pixels"])
    for name in ["logits", "probs", "lp", "conf", "g"]:
        assert out[name].dtype == np.float32
        assert_close(out[name], ref[name], name)
    assert out["class"].dtype == np.int32
    # Equal wherever the top two logits are not a near-tie.
    top2 = np.sort(ref["logits"], axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 1e-4
    assert (out["class"][clear] == ref["cls"][clear]).all()


def test_exported_accuracy_is_specc_eval_accuracy(trained):
    out = litert_outputs(trained["model"], trained["pixels"])
    accuracy = float((out["class"] == trained["labels"]).mean())
    train = trained["result"]["train"]
    assert train["rows"] == len(trained["labels"])
    assert accuracy == pytest.approx(train["accuracy"], abs=1e-12)
    assert accuracy > 0.85


def test_tf_lite_interpreter_accepts_the_file(trained):
    interp = tf.lite.Interpreter(model_path=str(trained["model"]))
    sigs = interp.get_signature_list()
    assert sorted(sigs["serving_default"]["inputs"]) == ["pixels"]
    assert sorted(sigs["serving_default"]["outputs"]) == sorted(OUTPUTS)
    got = interp.get_signature_runner("serving_default")(pixels=trained["pixels"][:100])
    ref = reference(trained["dir"] / "ckpt", trained["pixels"][:100])
    for name in ["logits", "probs", "lp", "conf", "g"]:
        assert_close(got[name], ref[name], name)


def test_fixed_batch_export(specc, trained):
    model = trained["dir"] / "fixed.tflite"
    subprocess.run(
        [specc, "export", str(trained["spec"]), "--checkpoint", str(trained["dir"] / "ckpt"),
         "--format", "tflite", "-o", str(model), "--fetch", "probs", "--batch", "16"],
        check=True, capture_output=True, text=True,
    )
    interp = Interpreter(model_path=str(model))
    detail = interp.get_input_details()[0]
    assert list(detail["shape"]) == [16, 64]
    assert list(detail["shape_signature"]) == [16, 64]
    out = interp.get_signature_runner("serving_default")(pixels=trained["pixels"][:16])
    ref = reference(trained["dir"] / "ckpt", trained["pixels"][:16])
    assert_close(out["probs"], ref["probs"], "probs")


def test_inspect_lists_operators_and_signature(specc, trained):
    text = subprocess.run([specc, "inspect", str(trained["model"])],
                          check=True, capture_output=True, text=True).stdout
    for word in ["FULLY_CONNECTED", "SOFTMAX", "LOG_SOFTMAX", "ARG_MAX", "REDUCE_MAX",
                 "signature `serving_default`", "pixels", "W1/transpose"]:
        assert word in text, word
    info = json.loads(subprocess.run([specc, "inspect", str(trained["model"]), "--json"],
                                     check=True, capture_output=True, text=True).stdout)
    ops = [op["builtin"] for op in info["subgraphs"][0]["operators"]]
    assert ops[:2] == ["FULLY_CONNECTED", "FULLY_CONNECTED"]
    tensors = {t["name"]: t for t in info["subgraphs"][0]["tensors"]}
    assert tensors["pixels"]["shape"] == [-1, 64]
    assert tensors["W1/transpose"]["shape"] == [32, 64] and tensors["W1/transpose"]["constant"]


def test_unsupported_expression_is_refused(specc, trained):
    model = trained["dir"] / "soft.tflite"
    r = subprocess.run(
        [specc, "export", str(trained["spec"]), "--checkpoint", str(trained["dir"] / "ckpt"),
         "--format", "tflite", "-o", str(model), "--fetch", "soft"],
        capture_output=True, text=True,
    )
    assert r.returncode == 2
    assert "tflite-unsupported" in r.stderr and "softplus" in r.stderr
    assert "soft   = softplus(logits)" in r.stderr
    assert not model.exists()


def test_feature_column_model_runs_in_litert_with_padding_ids(specc, tmp_path):
    """titanic (vocabulary, hashed, bucketized and crossed columns, an embedding
    and indicators) exports and runs in LiteRT on the inputs its
    `.features.json` describes; a padding id (-1, weight 0) reads nothing: the
    outputs equal those with any valid id at weight 0, and stay finite."""
    spec = ROOT / "specs" / "titanic.spec"
    subprocess.run(
        [specc, "run", str(spec), "--steps", "20", "--checkpoint-dir", str(tmp_path / "ck")],
        check=True, capture_output=True, text=True,
    )
    model = tmp_path / "titanic.tflite"
    subprocess.run(
        [specc, "export", str(spec), "--checkpoint", str(tmp_path / "ck"), "--format", "tflite",
         "-o", str(model)],
        check=True, capture_output=True, text=True,
    )
    described = json.loads((tmp_path / "titanic.tflite.features.json").read_text())
    by_name = {i["name"]: i for i in described["inputs"]}
    interp = Interpreter(model_path=str(model))
    runner = interp.get_signature_runner("serving_default")
    rows = 6
    rng = np.random.default_rng(3)

    def buckets(column):
        t = column["type"]
        if t == "categorical_column_with_vocabulary_list":
            return len(column["vocabulary_list"]) + column["num_oov_buckets"]
        if t == "bucketized_column":
            return len(column["boundaries"]) + 1
        return column.get("hash_bucket_size", column.get("num_buckets"))

    feeds = {}
    for name, info in by_name.items():
        if info["kind"] == "ids":
            n = buckets(info["column"])
            feeds[name] = rng.integers(0, n, size=(rows, info["max_values"])).astype(np.int32)
        elif info["kind"] == "weights":
            feeds[name] = np.ones((rows, info["max_values"]), np.float32)
        else:
            feeds[name] = rng.normal(size=(rows, info["column"]["shape"])).astype(np.float32)
    # The signature's inputs are the described ones, by name.
    assert sorted(interp.get_signature_list()["serving_default"]["inputs"]) == sorted(by_name)

    def run(f):
        return runner(**f)

    # The hashed name of row 0: padding (-1, weight 0) against id 5 at weight 0.
    padded = dict(feeds)
    padded["name/ids"] = feeds["name/ids"].copy()
    padded["name/weights"] = feeds["name/weights"].copy()
    padded["name/ids"][0, 0] = -1
    padded["name/weights"][0, 0] = 0.0
    zero_weight = dict(padded)
    zero_weight["name/ids"] = padded["name/ids"].copy()
    zero_weight["name/ids"][0, 0] = 5
    a, b = run(padded), run(zero_weight)
    for out in a:
        assert np.all(np.isfinite(a[out].astype(np.float64))), out
        np.testing.assert_array_equal(a[out], b[out], err_msg=out)
    # The other rows are not affected by row 0's padding.
    c = run(feeds)
    np.testing.assert_array_equal(a["probability"][1:], c["probability"][1:])
