"""`Model.export_tflite` and `Model.export_object` of specc's Python package
against `specc export` and LiteRT.

A model is trained from a DataFrame in Python and saved; `specc export`
exports that checkpoint, and the model exports its values in memory:

- the TF Lite file and its `.features.json` are the CLI's, byte for byte,
  as a float model and quantized (dynamic range; full-integer calibrated on
  the CSV with int8 inputs and uint8 outputs), and with the moving
  averages of a spec with `ema`;
- the object file and its C header are the CLI's, byte for byte;
- LiteRT (the `ai-edge-litert` package, TF Lite's runtime) runs the
  exported model through its `serving_default` signature on every row, and
  its outputs equal `Model.predict` on the DataFrame;
- what the export refuses raises the error of its kind: a spec TF Lite
  cannot express a `SpecError` with the CLI's code and position, options
  that do not fit a `ValueError` naming them.
"""

import json
import subprocess

import numpy as np
import pandas as pd
import pytest
from ai_edge_litert.interpreter import Interpreter

import specc as pyspecc
from conftest import ROOT

DIGITS_SPEC = ROOT / "specs" / "digits_mlp.spec"
EMA_SPEC = ROOT / "specs" / "digits_mlp_ema.spec"
DIGITS_CSV = ROOT / "specs" / "data" / "digits.csv"
STEPS = 30


def trained(spec, directory):
    """`spec` trained STEPS steps from a DataFrame and saved in `directory`:
    the model and its checkpoint's prefix."""
    model = pyspecc.compile(spec)
    model.fit(pd.read_csv(DIGITS_CSV), steps=STEPS)
    return model, model.save(directory)


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    d = tmp_path_factory.mktemp("digits")
    model, prefix = trained(DIGITS_SPEC, d / "ckpt")
    return {"model": model, "prefix": prefix, "dir": d}


def cli_export(specc, spec, prefix, out, *flags):
    r = subprocess.run(
        [specc, "export", str(spec), "--checkpoint", str(prefix), "-o", str(out), *flags],
        capture_output=True, text=True,
    )
    assert r.returncode == 0, r.stderr
    return r


def same_files(a, b, suffixes):
    for s in suffixes:
        assert (a.parent / (a.name + s)).read_bytes() == (b.parent / (b.name + s)).read_bytes(), s


# (name, Python keywords, CLI flags): each its own test.
TFLITE_CASES = [
    ("float", {}, []),
    ("dynamic", {"quantize": "dynamic"}, ["--quantize", "dynamic"]),
    (
        "int8_calibrated",
        {
            "quantize": "int8",
            "representative_data": DIGITS_CSV,
            "samples": 64,
            "inference_input_type": "int8",
            "inference_output_type": "uint8",
        },
        [
            "--quantize", "int8", "--representative-data", str(DIGITS_CSV), "--samples", "64",
            "--inference-input-type", "int8", "--inference-output-type", "uint8",
        ],
    ),
    ("fixed_batch", {"batch": 16}, ["--batch", "16"]),
    ("fetch", {"fetch": "logits"}, ["--fetch", "logits"]),
]


@pytest.mark.parametrize("kwargs,flags", [c[1:] for c in TFLITE_CASES],
                         ids=[c[0] for c in TFLITE_CASES])
def test_export_tflite_writes_specc_exports_bytes(specc, digits, kwargs, flags, tmp_path):
    py = tmp_path / "py.tflite"
    cli = tmp_path / "cli.tflite"
    written = digits["model"].export_tflite(py, **kwargs)
    cli_export(specc, DIGITS_SPEC, digits["prefix"], cli, "--format", "tflite", *flags)
    assert py.read_bytes() == cli.read_bytes()
    # The features file names the spec both were given, and is the same.
    assert json.loads((tmp_path / "py.tflite.features.json").read_text()) == json.loads(
        (tmp_path / "cli.tflite.features.json").read_text()
    )
    assert written["path"] == str(py)
    assert written["bytes"] == py.stat().st_size
    assert written["moving_averages"] is False
    mode = kwargs.get("quantize")
    assert (written["quantization"] or {}).get("mode") == mode
    if mode == "int8":
        assert written["quantization"]["calibrated_rows"] == kwargs["samples"]
        assert written["quantization"]["inference_input_type"] == "int8"


def test_exported_tflite_runs_in_litert_as_the_model_predicts(digits, tmp_path):
    model = digits["model"]
    path = tmp_path / "digits.tflite"
    written = model.export_tflite(path)
    df = pd.read_csv(DIGITS_CSV)
    features = json.loads((tmp_path / "digits.tflite.features.json").read_text())
    [inp] = features["inputs"]
    assert written["inputs"] == [inp["name"]]
    # digits_mlp's one dense input: the 64 pixels over 16 (its normalizer).
    pixels = (df[[f"px{i}" for i in range(64)]].to_numpy() / 16).astype(np.float32)
    runner = Interpreter(model_path=str(path)).get_signature_runner()
    got = runner(**{inp["name"]: pixels})
    want = model.predict(df)
    assert set(got) == set(written["outputs"])
    for name in written["outputs"]:
        g = np.asarray(got[name])
        # predict's columns: NAME, or NAME_0, NAME_1, ... of a wider output.
        cols = [name] if name in want else [c for c in want if c.rsplit("_", 1)[0] == name]
        w = want[cols].to_numpy().reshape(g.shape)
        if np.issubdtype(g.dtype, np.integer):
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_export_object_writes_specc_exports_bytes(specc, digits, tmp_path):
    py = tmp_path / "py.o"
    cli = tmp_path / "cli.o"
    written = digits["model"].export_object(py, symbol="digits_predict")
    cli_export(specc, DIGITS_SPEC, digits["prefix"], cli, "--format", "object",
               "--symbol", "digits_predict")
    assert py.read_bytes() == cli.read_bytes()
    assert (tmp_path / "py.h").read_bytes() == (tmp_path / "cli.h").read_bytes()
    same_files(py, cli, [".features.json"])
    assert written["header"] == str(tmp_path / "py.h")
    assert written["symbol"] == "digits_predict"
    assert written["in_width"] == 64 and written["bytes"] == py.stat().st_size
    assert "digits_predict" in (tmp_path / "py.h").read_text()


@pytest.mark.parametrize("use_averages", [True, False], ids=["averages", "trained_values"])
def test_moving_averages_export_as_specc_export_does(specc, use_averages, tmp_path):
    model, prefix = trained(EMA_SPEC, tmp_path / "ckpt")
    py = tmp_path / "py.tflite"
    cli = tmp_path / "cli.tflite"
    # digits_mlp_ema has no `outputs` item: its logits.
    written = model.export_tflite(py, fetch="logits", use_averages=use_averages)
    cli_export(specc, EMA_SPEC, prefix, cli, "--format", "tflite", "--fetch", "logits",
               f"--use-averages={str(use_averages).lower()}")
    assert py.read_bytes() == cli.read_bytes()
    assert written["moving_averages"] is use_averages
    other = tmp_path / "other.tflite"
    model.export_tflite(other, fetch="logits", use_averages=not use_averages)
    # The averages are not the trained values after STEPS steps.
    assert other.read_bytes() != py.read_bytes()


def test_a_spec_tflite_cannot_express_raises_spec_error(specc, tmp_path):
    text = DIGITS_SPEC.read_text().replace(
        "\noutputs {", "\nsoft = softplus(logits)\noutputs {", 1
    )
    spec = tmp_path / "soft.spec"
    text = text.replace('csv("data/', f'csv("{DIGITS_CSV.parent}/')
    spec.write_text(text)
    model = pyspecc.compile(spec)
    with pytest.raises(pyspecc.SpecError) as e:
        model.export_tflite(tmp_path / "soft.tflite", fetch="soft")
    cli = subprocess.run(
        [specc, "export", str(spec), "--checkpoint", str(model.save(tmp_path / "ck")),
         "--format", "tflite", "-o", str(tmp_path / "cli.tflite"), "--fetch", "soft"],
        capture_output=True, text=True,
    )
    assert cli.returncode == 2
    assert e.value.code == "tflite-unsupported" and e.value.code in cli.stderr
    line = text.splitlines().index("soft = softplus(logits)") + 1
    assert e.value.line == line
    assert f"{spec}:{line}:{e.value.column}" in cli.stderr
    assert not (tmp_path / "soft.tflite").exists()


# (name, call, what the message names): each its own test.
REFUSALS = [
    ("unknown_quantization", lambda m, p: m.export_tflite(p, quantize="int4"), "int4"),
    (
        "boundary_type_without_int8",
        lambda m, p: m.export_tflite(p, inference_input_type="int8"),
        "--inference-input-type int8 is for --quantize int8",
    ),
    (
        "representative_data_without_int8",
        lambda m, p: m.export_tflite(p, representative_data=DIGITS_CSV),
        "--representative-data is for --quantize int8",
    ),
    ("unknown_binding", lambda m, p: m.export_tflite(p, fetch="nope"), "no binding `nope`"),
    (
        "output_reading_the_label",
        lambda m, p: m.export_tflite(p, fetch="loss"),
        "read the label `label`",
    ),
    ("averages_without_ema", lambda m, p: m.export_object(p, use_averages=True), "ema"),
]


@pytest.mark.parametrize("call,names", [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
def test_options_that_do_not_fit_raise_value_error(digits, call, names, tmp_path):
    out = tmp_path / "model.out"
    with pytest.raises(ValueError) as e:
        call(digits["model"], out)
    assert names in str(e.value)
    assert not out.exists()
