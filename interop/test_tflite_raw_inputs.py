"""LiteRT runs the raw-input models `specc export --format tflite
--raw-inputs` writes: the feature columns (vocabulary lookups in TF Lite's
hash tables, BUCKETIZE, defaults and normalizers) inside the model.

Titanic and credit without their hashed columns (titanic's name, the
crosses) are trained, exported with raw inputs, and run by LiteRT's default
interpreter on rows of their CSV files, fed as TF's CSV reader gives them:
a vocabulary column's cells as strings (bytes, as they are), a numeric
column's as float32, a missing numeric cell NaN. The rows are drawn from
SPECC_INTEROP_SEED (which rows, how many steps are trained), and some of
their cells are blanked or replaced by a value outside the vocabulary
(missing cells and unknown words; titanic has its own missing ages). The
probabilities equal `specc predict` with the checkpoint on the same CSV
within 1e-5 relative and the classes exactly, and `specc predict --tflite`
(specc's interpreter on the raw cells) gives the same. The model's inputs
are one per raw column (STRING for vocabulary columns, FLOAT32 for
numeric ones), and its operators include CALL_ONCE, HASHTABLE_FIND and
BUCKETIZE.
"""

import csv
import os
import subprocess

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter

from tflite_digits import ROOT

SEED = int(os.environ.get("SPECC_INTEROP_SEED", "2026"))
DATA = ROOT / "specs" / "data"
OUTPUTS = "outputs {\n  probability = sigmoid(logits)\n  class       = cast(logits > 0, int32)\n}\n"


def titanic():
    text = (ROOT / "specs" / "titanic.spec").read_text()
    for old, new in [
        ("  name   = categorical_column_with_hash_bucket(name, 64)\n", ""),
        ("  cross  = crossed_column([sex, pclass], hash_bucket_size = 16)\n", ""),
        (", embedding_column(name, dimension = 4))", ")"),
        ("linear_model(ages, sex, pclass, cross)", "linear_model(ages, sex, pclass)"),
        ("W1: [10, 8]", "W1: [6, 8]"),
        ('"data/titanic.csv"', f'"{DATA / "titanic.csv"}"'),
    ]:
        assert old in text
        text = text.replace(old, new)
    return text


def credit():
    text = (ROOT / "specs" / "credit.spec").read_text()
    for old, new in [
        ("  home_x_job = crossed_column([home, job], hash_bucket_size = 64)\n", ""),
        (", job, home_x_job)", ", job)"),
        ('"data/credit.csv"', f'"{DATA / "credit.csv"}"'),
    ]:
        assert old in text
        text = text.replace(old, new)
    return text + OUTPUTS


# Per model: its spec, its data, the columns whose cells may be blanked
# (the numeric ones with a default, and the vocabulary ones), the
# vocabulary columns, and the model's raw inputs.
CASES = {
    "titanic": (titanic, "titanic.csv", ["sex", "pclass"], ["sex", "pclass"],
                ["age", "sex", "pclass"]),
    "credit": (credit, "credit.csv", ["Income", "Assets", "Debt", "Home", "Marital", "Records", "Job"],
               ["Home", "Marital", "Records", "Job"],
               ["Seniority", "Time", "Age", "Expenses", "Income", "Assets", "Debt", "Amount", "Price",
                "Home", "Job", "Marital", "Records"]),
}


def run(specc, cwd, *args):
    return subprocess.run([specc, *map(str, args)], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout


def read_predictions(path):
    rows = list(csv.reader(open(path)))
    assert rows[0] == ["probability", "class"]
    return (np.array([float(r[0]) for r in rows[1:]]), np.array([int(r[1]) for r in rows[1:]]))


@pytest.mark.parametrize("case", list(CASES))
def test_litert_runs_the_raw_input_model_as_specc_predict(specc, tmp_path, case):
    make_spec, data, blank, vocabulary, inputs = CASES[case]
    rng = np.random.default_rng([SEED, list(CASES).index(case)])
    (tmp_path / "model.spec").write_text(make_spec())
    steps = int(rng.integers(60, 200))
    run(specc, tmp_path, "run", "model.spec", "--steps", steps, "--checkpoint-dir", "ckpt")
    run(specc, tmp_path, "export", "model.spec", "--checkpoint", "ckpt", "--format", "tflite",
        "-o", "raw.tflite", "--raw-inputs")

    # Drawn rows, some cells blanked or outside the vocabulary.
    with open(DATA / data, newline="") as f:
        reader = csv.DictReader(f)
        header, rows = reader.fieldnames, list(reader)
    picked = [dict(rows[i]) for i in rng.choice(len(rows), size=int(rng.integers(200, 400)), replace=False)]
    for row in picked:
        for col in blank:
            u = rng.random()
            if u < 0.08:
                row[col] = ""
            elif u < 0.12 and col in vocabulary:
                row[col] = "unknown " + col
    with open(tmp_path / "rows.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=header)
        w.writeheader()
        w.writerows(picked)

    run(specc, tmp_path, "predict", "model.spec", "--checkpoint", "ckpt", "--data", "rows.csv",
        "-o", "compiled.csv")
    want_p, want_c = read_predictions(tmp_path / "compiled.csv")
    assert len(want_p) == len(picked) and set(want_c) == {0, 1}

    interp = Interpreter(model_path=str(tmp_path / "raw.tflite"))
    ops = [op["op_name"] for op in interp._get_ops_details()]
    for op in ["CALL_ONCE", "HASHTABLE", "HASHTABLE_FIND", "BUCKETIZE"]:
        assert op in ops, ops
    runner = interp.get_signature_runner("serving_default")
    feeds = {}
    for name, d in runner.get_input_details().items():
        if name in vocabulary:
            assert d["dtype"] == np.bytes_, (name, d["dtype"])
            feeds[name] = np.array([r[name].encode() for r in picked], dtype=object)
        else:
            assert d["dtype"] == np.float32, (name, d["dtype"])
            feeds[name] = np.array([float(r[name]) if r[name].strip() else np.nan for r in picked],
                                   dtype=np.float32)
    assert sorted(runner.get_input_details()) == sorted(inputs)
    out = runner(**feeds)
    got_p, got_c = out["probability"].astype(np.float64), out["class"]
    assert np.all(np.abs(got_p - want_p) <= 1e-5 * np.abs(want_p)), np.max(np.abs(got_p - want_p) / want_p)
    assert (got_c == want_c).all(), (got_c != want_c).sum()

    # specc's interpreter on the same raw cells.
    run(specc, tmp_path, "predict", "model.spec", "--tflite", "raw.tflite", "--data", "rows.csv",
        "-o", "tflite.csv")
    tfl_p, tfl_c = read_predictions(tmp_path / "tflite.csv")
    assert np.all(np.abs(tfl_p - want_p) <= 1e-5 * np.abs(want_p))
    assert (tfl_c == want_c).all()
