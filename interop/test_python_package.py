"""specc's Python package (python/, built and installed into the venv by
tools/test) against the CLI and TensorFlow.

- digits (specs/digits_mlp.spec) trained from a pandas DataFrame of
  specs/data/digits.csv writes the same checkpoint bytes as `specc run` on
  the CSV with the same steps (the spec's seed and shuffle), and so do a
  fit from a dict of its columns' arrays and one from the CSV's path, and
  `fit(epochs=1)` as `specc run --set epochs=1`;
- the titanic spec (a string label through its vocabulary, vocabulary,
  hashed and crossed categorical columns, a numeric column whose missing
  cells take its default) trained from a DataFrame with string columns and
  NaN ages writes the same checkpoint bytes as `specc run`;
- `Model.predict` on the DataFrame equals `specc predict` on the CSV from
  the same checkpoint: the same columns, the same float32 values, the same
  class ids;
- a bad spec raises `specc.SpecError` whose text is `specc check`'s
  stderr and whose code, line and column are the diagnostic's;
- a model trained step by step in Python (`train_step`) and saved restores
  in TensorFlow: `tf.train.load_variable` equals `Model.variables()` for
  every variable, and the global step is the steps taken.
"""

import subprocess

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

import specc as pyspecc
from conftest import ROOT

DIGITS_SPEC = ROOT / "specs" / "digits_mlp.spec"
DIGITS_CSV = ROOT / "specs" / "data" / "digits.csv"
TITANIC_SPEC = ROOT / "specs" / "titanic.spec"
TITANIC_CSV = ROOT / "specs" / "data" / "titanic.csv"
# Steps of the digits runs: more than one epoch of its 1438 training rows
# in batches of 64 (the shuffle's second epoch included).
DIGITS_STEPS = 40
TITANIC_STEPS = 50
CKPT_FILES = [".index", ".data-00000-of-00001"]


def specc_run(specc, spec, steps, ckpt):
    subprocess.run(
        [specc, "run", str(spec), "--steps", str(steps), "--checkpoint-dir", str(ckpt)],
        check=True, capture_output=True, text=True,
    )


def checkpoint_bytes(directory, step):
    return {s: (directory / f"model.ckpt-{step}{s}").read_bytes() for s in CKPT_FILES}


@pytest.fixture(scope="module")
def digits_cli(specc, tmp_path_factory):
    """`specc run` of digits for DIGITS_STEPS steps: its checkpoint directory."""
    ckpt = tmp_path_factory.mktemp("digits") / "cli"
    specc_run(specc, DIGITS_SPEC, DIGITS_STEPS, ckpt)
    return ckpt


def test_dataframe_fit_writes_specc_runs_checkpoint_bytes(digits_cli, tmp_path):
    df = pd.read_csv(DIGITS_CSV)
    model = pyspecc.compile(DIGITS_SPEC)
    r = model.fit(df, steps=DIGITS_STEPS, checkpoint_dir=tmp_path / "py")
    assert r["global_step"] == DIGITS_STEPS == model.global_step
    assert r["checkpoint"] == str(tmp_path / "py" / f"model.ckpt-{DIGITS_STEPS}")
    # digits.csv: 1797 rows, 20 % held out (the spec's default split).
    assert r["train"]["rows"] + r["held_out"]["rows"] == len(df) == 1797
    assert checkpoint_bytes(tmp_path / "py", DIGITS_STEPS) == checkpoint_bytes(
        digits_cli, DIGITS_STEPS
    )


def test_dict_of_arrays_fit_writes_specc_runs_checkpoint_bytes(digits_cli, tmp_path):
    df = pd.read_csv(DIGITS_CSV)
    columns = {c: df[c].to_numpy() for c in df.columns}
    model = pyspecc.compile(DIGITS_SPEC)
    model.fit(columns, steps=DIGITS_STEPS, checkpoint_dir=tmp_path / "py")
    assert checkpoint_bytes(tmp_path / "py", DIGITS_STEPS) == checkpoint_bytes(
        digits_cli, DIGITS_STEPS
    )


def test_path_fit_writes_specc_runs_checkpoint_bytes(digits_cli, tmp_path):
    model = pyspecc.compile(DIGITS_SPEC)
    model.fit(DIGITS_CSV, steps=DIGITS_STEPS, checkpoint_dir=tmp_path / "py")
    assert checkpoint_bytes(tmp_path / "py", DIGITS_STEPS) == checkpoint_bytes(
        digits_cli, DIGITS_STEPS
    )


def test_epochs_train_as_specc_run_with_set_epochs(specc, tmp_path):
    subprocess.run(
        [specc, "run", str(DIGITS_SPEC), "--set", "epochs=1", "--checkpoint-dir",
         str(tmp_path / "cli")],
        check=True, capture_output=True, text=True,
    )
    model = pyspecc.compile(DIGITS_SPEC)
    r = model.fit(pd.read_csv(DIGITS_CSV), epochs=1, checkpoint_dir=tmp_path / "py")
    # One pass over the 1438 training rows in batches of 64.
    assert r["global_step"] == -(-1438 // 64)
    step = r["global_step"]
    assert checkpoint_bytes(tmp_path / "py", step) == checkpoint_bytes(tmp_path / "cli", step)


def test_titanic_dataframe_with_string_columns_trains_as_specc_run(specc, tmp_path):
    specc_run(specc, TITANIC_SPEC, TITANIC_STEPS, tmp_path / "cli")
    # pandas' float parser (round-trip in pandas 3): the ages as specc parses them.
    df = pd.read_csv(TITANIC_CSV)
    assert df["age"].isna().sum() > 0 and df["sex"].dtype != np.float64
    model = pyspecc.compile(TITANIC_SPEC)
    model.fit(df, steps=TITANIC_STEPS, checkpoint_dir=tmp_path / "py")
    assert checkpoint_bytes(tmp_path / "py", TITANIC_STEPS) == checkpoint_bytes(
        tmp_path / "cli", TITANIC_STEPS
    )


def test_predict_equals_specc_predict(specc, digits_cli):
    out = subprocess.run(
        [specc, "predict", str(DIGITS_SPEC), "--checkpoint", str(digits_cli),
         "--data", str(DIGITS_CSV)],
        check=True, capture_output=True, text=True,
    ).stdout.strip().split("\n")
    header = out[0].split(",")
    cells = [line.split(",") for line in out[1:]]
    model = pyspecc.compile(DIGITS_SPEC)
    model.restore(digits_cli)
    assert model.global_step == DIGITS_STEPS
    got = model.predict(pd.read_csv(DIGITS_CSV).drop(columns="label"))
    assert list(got.columns) == header == [f"probs_{k}" for k in range(10)] + ["class"]
    assert len(got) == len(cells) == 1797
    probs = np.array([[np.float32(c) for c in row[:10]] for row in cells], dtype=np.float32)
    np.testing.assert_array_equal(got[header[:10]].to_numpy(), probs)
    assert got["class"].dtype == np.int64
    np.testing.assert_array_equal(got["class"].to_numpy(), [int(row[10]) for row in cells])


BAD_LINE = "logits = h @ W3 + b2"


def bad_spec_text():
    text = DIGITS_SPEC.read_text()
    assert "logits = h @ W2 + b2" in text
    return text.replace("logits = h @ W2 + b2", BAD_LINE)


def test_spec_error_is_the_cli_diagnostic(specc, tmp_path, monkeypatch):
    (tmp_path / "bad.spec").write_text(bad_spec_text())
    cli = subprocess.run(
        [specc, "check", "bad.spec"], cwd=tmp_path, capture_output=True, text=True,
    )
    assert cli.returncode == 2
    monkeypatch.chdir(tmp_path)
    with pytest.raises(pyspecc.SpecError) as e:
        pyspecc.compile("bad.spec")
    lines = bad_spec_text().split("\n")
    line = next(i for i, l in enumerate(lines) if l == BAD_LINE) + 1
    assert str(e.value) == cli.stderr.rstrip("\n")
    assert (e.value.code, e.value.line, e.value.column, e.value.path) == (
        "unknown-name", line, BAD_LINE.index("W3") + 1, "bad.spec",
    )
    assert len(e.value.diagnostics) == 1


def test_spec_error_of_a_spec_text(tmp_path):
    with pytest.raises(pyspecc.SpecError) as e:
        pyspecc.compile(bad_spec_text())
    lines = bad_spec_text().split("\n")
    line = next(i for i, l in enumerate(lines) if l == BAD_LINE) + 1
    assert (e.value.code, e.value.line, e.value.column, e.value.path) == (
        "unknown-name", line, BAD_LINE.index("W3") + 1, "<string>",
    )
    assert f"<string>:{line}:{BAD_LINE.index('W3') + 1}" in str(e.value)


def test_a_missing_dataframe_column_is_a_data_error():
    df = pd.read_csv(DIGITS_CSV).rename(columns={"label": "labels"})
    model = pyspecc.compile(DIGITS_SPEC)
    with pytest.raises(pyspecc.DataError, match=r"column `label`.*did you mean `labels`"):
        model.fit(df, steps=1)
    assert model.global_step == 0


def test_trained_in_python_restores_in_tensorflow(tmp_path):
    df = pd.read_csv(DIGITS_CSV)
    pixels = df[[f"px{i}" for i in range(64)]].to_numpy(dtype=np.float32) / 16
    labels = df["label"].to_numpy()
    model = pyspecc.compile(DIGITS_SPEC)
    before = model.variables()
    steps = 7
    for s in range(steps):
        rows = slice(s * 64, (s + 1) * 64)
        loss = model.train_step({"pixels": pixels[rows], "label": labels[rows]})
        assert np.isfinite(loss) and loss > 0
    assert model.global_step == steps
    prefix = model.save(tmp_path / "ckpt")
    assert prefix == str(tmp_path / "ckpt" / f"model.ckpt-{steps}")
    after = model.variables()
    assert not np.array_equal(before["W1"], after["W1"])
    names = {n for n, _ in tf.train.list_variables(prefix)}
    assert names == set(after) | {"global_step"}
    for name, value in after.items():
        np.testing.assert_array_equal(tf.train.load_variable(prefix, name), value, err_msg=name)
    assert tf.train.load_variable(prefix, "global_step") == steps
    # And back: a fresh model restored from it holds the same variables.
    fresh = pyspecc.compile(DIGITS_SPEC)
    fresh.restore(tmp_path / "ckpt")
    for name, value in fresh.variables().items():
        np.testing.assert_array_equal(value, after[name], err_msg=name)
