"""`Model.fit`'s run controls from Python (python/, built and installed into
the venv by tools/test), against the CLI and TensorFlow.

- Ctrl-C: SIGINT to a process in a long `fit` (the GIL released) ends it at
  a step boundary with KeyboardInterrupt; the model keeps the trained state
  (its global step the interrupted step) and TF's `tf.train.load_checkpoint`
  reads the checkpoint of that step from `checkpoint_dir`;
- callbacks: the losses a callback gets every step equal the losses `specc
  run` writes to its summaries (global steps 1, 4, 7, 10 with
  `summaries.every_steps=3`) and its `--json` last loss; `every_steps=3`
  calls at global steps 3, 6, 9, 12; a periodic evaluation's callback gets
  the numbers of the held-out evaluation at that step; a callback returning
  False or raising StopIteration ends training after that step (with its
  checkpoint), another exception ends it and is raised by `fit`;
- progress: `progress=True` with or without tqdm trains to the same bits;
- `eval_data` as a DataFrame evaluates as the same rows as a CSV file do,
  and `Model.evaluate(df)` equals `specc evaluate` on the CSV's rows.
"""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

import specc as pyspecc
from conftest import ROOT

DIGITS_SPEC = ROOT / "specs" / "digits_mlp.spec"
DIGITS_CSV = ROOT / "specs" / "data" / "digits.csv"
SUMMARY_EVERY = 3
STEPS = 12

INTERRUPTED = f"""
import signal
import sys
import specc
# Ctrl-C as in a terminal: a process started in the background by a
# non-interactive shell (CI's) inherits SIGINT ignored, and Python then
# installs no KeyboardInterrupt handler of its own.
signal.signal(signal.SIGINT, signal.default_int_handler)
m = specc.compile({str(DIGITS_SPEC)!r})
try:
    m.fit(steps=10**9, checkpoint_dir=sys.argv[1], checkpoint_every_steps=50, progress=False)
except KeyboardInterrupt:
    print("interrupted at", m.global_step, flush=True)
    raise
"""


def test_sigint_stops_fit_at_a_step_boundary_with_a_checkpoint(tmp_path):
    ckpt = tmp_path / "ckpt"
    child = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED, str(ckpt)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        # Wait (without a deadline of its own: pytest's) for the first
        # periodic checkpoint, then interrupt the run mid-training.
        while not (ckpt / "checkpoint").exists() and child.poll() is None:
            time.sleep(0.05)
        assert child.poll() is None, child.communicate()
        child.send_signal(signal.SIGINT)
        # A hang guard, not a timing: an ignored interrupt trains forever.
        out, err = child.communicate(timeout=300)
    finally:
        if child.poll() is None:
            child.kill()
    # An uncaught KeyboardInterrupt: Python's exit on SIGINT.
    assert child.returncode in (-signal.SIGINT, 130), err
    assert err.rstrip().endswith("KeyboardInterrupt"), err
    step = int(out.split("interrupted at")[1])
    assert step > 50
    latest = tf.train.latest_checkpoint(str(ckpt))
    assert latest == str(ckpt / f"model.ckpt-{step}")
    reader = tf.train.load_checkpoint(latest)
    assert reader.get_tensor("global_step") == step


def summary_losses(directory):
    out = {}
    for f in directory.glob("events.out.tfevents.*"):
        for e in tf.compat.v1.train.summary_iterator(str(f)):
            for v in e.summary.value:
                if v.tag == "loss":
                    out[e.step] = v.simple_value
    return out


def test_callback_losses_are_the_runs_losses(specc, tmp_path):
    cli = subprocess.run(
        [specc, "run", str(DIGITS_SPEC), "--steps", str(STEPS), "--json",
         "--summary-dir", str(tmp_path / "cli"),
         "--set", f"summaries.every_steps={SUMMARY_EVERY}"],
        check=True, capture_output=True, text=True,
    )
    last_loss = json.loads(cli.stdout.strip().split("\n")[-1])["last_loss"]
    written = summary_losses(tmp_path / "cli")
    assert sorted(written) == list(range(1, STEPS, SUMMARY_EVERY))

    every, third = {}, []

    class Every:
        def on_step(self, step, logs):
            every[step] = logs["loss"]
            assert logs["rows"] == 64

    model = pyspecc.compile(DIGITS_SPEC)
    r = model.fit(
        pd.read_csv(DIGITS_CSV), steps=STEPS, progress=False,
        callbacks=[Every()],
    )
    assert sorted(every) == list(range(1, STEPS + 1))
    for step, loss in written.items():
        assert np.float32(every[step]) == np.float32(loss), step
    assert every[STEPS] == r["loss"] == np.float32(last_loss)
    assert r["stopped"] is False

    again = pyspecc.compile(DIGITS_SPEC)
    again.fit(
        steps=STEPS, progress=False, every_steps=3,
        callbacks=lambda step, logs: third.append((step, logs["loss"])),
    )
    assert third == [(s, every[s]) for s in range(3, STEPS + 1, 3)]


def test_evaluation_callback_gets_the_held_out_numbers():
    seen = []

    class Evaluations:
        def on_evaluation(self, step, logs):
            seen.append((step, logs))

    model = pyspecc.compile(DIGITS_SPEC, **{"evaluate.every_steps": 5})
    r = model.fit(steps=10, progress=False, callbacks=[Evaluations()])
    assert [s for s, _ in seen] == [5, 10]
    # The evaluation at the last step is the run's final held-out one.
    assert seen[1][1] == r["held_out"]
    assert seen[0][1]["rows"] == r["held_out"]["rows"] == 359
    assert seen[0][1]["loss"] != seen[1][1]["loss"]


@pytest.mark.parametrize("how", ["false", "stop_iteration"])
def test_a_callback_stops_training_after_its_step(how, tmp_path):
    def stop_at_7(step, logs):
        if step == 7:
            if how == "false":
                return False
            raise StopIteration
        return None

    model = pyspecc.compile(DIGITS_SPEC)
    r = model.fit(steps=STEPS, checkpoint_dir=tmp_path, progress=False, callbacks=stop_at_7)
    assert r["stopped"] is True
    assert r["global_step"] == model.global_step == 7
    assert r["checkpoint"] == str(tmp_path / "model.ckpt-7")
    assert tf.train.load_variable(r["checkpoint"], "global_step") == 7
    # The state trained so far: as a run of 7 steps.
    seven = pyspecc.compile(DIGITS_SPEC)
    seven.fit(steps=7, progress=False)
    for name, value in seven.variables().items():
        np.testing.assert_array_equal(model.variables()[name], value, err_msg=name)


def test_a_callbacks_exception_ends_training_and_is_raised():
    def fail(step, logs):
        if step == 4:
            raise ZeroDivisionError("from the callback")

    model = pyspecc.compile(DIGITS_SPEC)
    with pytest.raises(ZeroDivisionError, match="from the callback"):
        model.fit(steps=STEPS, progress=False, callbacks=[fail])
    assert model.global_step == 4


def test_a_callback_of_another_kind_is_refused():
    model = pyspecc.compile(DIGITS_SPEC)
    with pytest.raises(TypeError, match="on_step"):
        model.fit(steps=1, callbacks=[object()])
    assert model.global_step == 0


@pytest.mark.parametrize("tqdm_installed", [True, False])
def test_progress_bar_trains_the_same_bits(tqdm_installed, monkeypatch, capsys):
    plain = pyspecc.compile(DIGITS_SPEC)
    plain.fit(steps=STEPS, progress=False)
    if not tqdm_installed:
        # `import tqdm.auto` then fails, as without tqdm.
        monkeypatch.setitem(sys.modules, "tqdm", None)
        monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    else:
        import tqdm  # noqa: F401  (interop/requirements.txt installs it)
    shown = pyspecc.compile(DIGITS_SPEC)
    shown.fit(steps=STEPS, progress=True)
    err = capsys.readouterr().err
    assert (f"{STEPS}/{STEPS}" in err) == tqdm_installed
    for name, value in plain.variables().items():
        np.testing.assert_array_equal(shown.variables()[name], value, err_msg=name)


def test_dataframe_eval_data_evaluates_as_the_csv(tmp_path):
    df = pd.read_csv(DIGITS_CSV)
    held = df.iloc[::5].reset_index(drop=True)
    held_csv = tmp_path / "held.csv"
    held.to_csv(held_csv, index=False)
    from_csv = pyspecc.compile(DIGITS_SPEC)
    a = from_csv.fit(df, steps=STEPS, eval_data=held_csv, progress=False)
    from_frame = pyspecc.compile(DIGITS_SPEC)
    b = from_frame.fit(df, steps=STEPS, eval_data=held, progress=False)
    assert a["held_out"]["rows"] == len(held) == 360
    assert b["held_out"] == a["held_out"]
    assert b["train"] == a["train"] and b["train"]["rows"] == len(df)
    # A dict of its columns too.
    from_dict = pyspecc.compile(DIGITS_SPEC)
    c = from_dict.fit(
        df, steps=STEPS, progress=False,
        eval_data={k: held[k].to_numpy() for k in held.columns},
    )
    assert c["held_out"] == a["held_out"]


def test_evaluate_dataframe_equals_specc_evaluate(specc, tmp_path):
    model = pyspecc.compile(DIGITS_SPEC)
    model.fit(steps=STEPS, checkpoint_dir=tmp_path, progress=False)
    cli = subprocess.run(
        [specc, "evaluate", str(DIGITS_SPEC), "--checkpoint", str(tmp_path),
         "--data", str(DIGITS_CSV), "--json"],
        check=True, capture_output=True, text=True,
    )
    want = json.loads(cli.stdout.strip().split("\n")[-1])["eval"]
    got = model.evaluate(pd.read_csv(DIGITS_CSV))
    assert got["rows"] == want["rows"] == 1797
    assert got["loss"] == want["loss"]
    assert got["accuracy"] == want["accuracy"]
