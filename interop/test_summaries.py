"""TensorBoard (and TensorFlow, where installed) read the event files specc writes.

specc writes the files with the runtime's `write_events` example (the
SummaryWriter, the histogram code and `write_evaluation` the training hooks
use) from a JSON description; TensorBoard's `EventAccumulator` and
`EventMultiplexer` must then see the same tags, steps and values, and
histograms equal to the ones TensorFlow's own `tf.compat.v1.summary.histogram`
computes from the same float32 values.

The binary: `SPECC_WRITE_EVENTS` if set, else target/debug/examples/write_events
(built with cargo when missing).
"""

import json
import math
import pathlib
import subprocess

import numpy as np
import pytest
from tensorboard.backend.event_processing import event_accumulator, event_multiplexer

from conftest import runtime_example

import tensorflow as tf  # the reference: the suite's venv pins it

DISTRIBUTIONS = {
    "empty": [],
    "constant": [0.25] * 17,
    "zeros": [0.0] * 5,
    "negative": [-3.0, -2.5, -1e-3, -7.0, -7.0],
    "huge": [1e30, -1e30, 3.4028234663852886e38, -3.4028234663852886e38, 3e38],
    "tiny": [1e-13, -1e-13, 1e-12, -1e-12, 1e-45, 0.0],
    "ramp": [(i - 500) * 0.013 for i in range(1001)],
    "normal": np.random.default_rng(7).normal(0.0, 0.05, size=4096).tolist(),
}


@pytest.fixture(scope="session")
def write_events():
    return runtime_example("write_events", "SPECC_WRITE_EVENTS")


def run_writer(write_events, tmp_path, description):
    logdir = tmp_path / "run"
    description = dict(description, dir=str(logdir))
    desc = tmp_path / "description.json"
    desc.write_text(json.dumps(description))
    out = subprocess.run(
        [write_events, str(desc)], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    return logdir, out.stdout.split()


def accumulator(path):
    acc = event_accumulator.EventAccumulator(
        str(path),
        size_guidance={
            event_accumulator.SCALARS: 0,
            event_accumulator.HISTOGRAMS: 0,
            event_accumulator.COMPRESSED_HISTOGRAMS: 0,
        },
    )
    acc.Reload()
    return acc


def f32(x):
    return float(np.float32(x))


def tf_histogram(values):
    """What tf.compat.v1.summary.histogram computes for these float32 values."""
    graph = tf.Graph()
    with graph.as_default():
        op = tf.compat.v1.summary.histogram("h", tf.constant(np.array(values, np.float32)))
        with tf.compat.v1.Session(graph=graph) as sess:
            summary = tf.compat.v1.Summary.FromString(sess.run(op))
    h = summary.value[0].histo
    return {
        "min": h.min,
        "max": h.max,
        "num": h.num,
        "sum": h.sum,
        "sum_squares": h.sum_squares,
        "bucket_limit": list(h.bucket_limit),
        "bucket": list(h.bucket),
    }


def test_event_accumulator_reads_scalars(write_events, tmp_path):
    events = [
        {"step": 1, "scalars": {"loss": 2.302585, "learning_rate": 0.001}},
        {"step": 101, "scalars": {"loss": 0.75, "learning_rate": 0.00095, "global_step/sec": 812.5}},
        {"step": 201, "scalars": {"loss": 0.1, "learning_rate": 0.0009, "global_step/sec": 790.25}},
    ]
    logdir, files = run_writer(write_events, tmp_path, {"events": events})
    assert pathlib.Path(files[0]).name.startswith("events.out.tfevents.")
    acc = accumulator(logdir)
    tags = acc.Tags()
    assert sorted(tags["scalars"]) == ["global_step/sec", "learning_rate", "loss"]
    for tag in tags["scalars"]:
        want = [(e["step"], f32(e["scalars"][tag])) for e in events if tag in e["scalars"]]
        got = [(s.step, s.value) for s in acc.Scalars(tag)]
        assert got == want, tag
    assert acc.FirstEventTimestamp() > 0


def test_event_accumulator_reads_histograms_as_tensorflow_computes_them(write_events, tmp_path):
    events = [
        {"step": 1, "histograms": DISTRIBUTIONS},
        {"step": 2, "histograms": {k: [x * 2 for x in v] for k, v in DISTRIBUTIONS.items()
                                   if k not in ("huge",)}},
    ]
    logdir, _ = run_writer(write_events, tmp_path, {"events": events})
    acc = accumulator(logdir)
    assert sorted(acc.Tags()["histograms"]) == sorted(DISTRIBUTIONS)
    assert sorted(acc.Tags()["distributions"]) == sorted(DISTRIBUTIONS)
    for tag in DISTRIBUTIONS:
        got = acc.Histograms(tag)
        want_events = [e for e in events if tag in e["histograms"]]
        assert [h.step for h in got] == [e["step"] for e in want_events], tag
        for h, e in zip(got, want_events):
            want = tf_histogram(e["histograms"][tag])
            v = h.histogram_value
            what = f"{tag} at step {h.step}"
            assert (v.min, v.max, v.num) == (want["min"], want["max"], want["num"]), what
            assert v.sum == pytest.approx(want["sum"], rel=1e-12, abs=1e-300), what
            assert v.sum_squares == pytest.approx(want["sum_squares"], rel=1e-12), what
            assert list(v.bucket_limit) == want["bucket_limit"], what
            assert list(v.bucket) == want["bucket"], what
        # The distribution dashboard's compression works on it.
        assert len(acc.CompressedHistograms(tag)) == len(want_events)


def test_eval_run_overlays_the_training_run(write_events, tmp_path):
    description = {
        "events": [{"step": s, "scalars": {"loss": 1.0 / s}} for s in (1, 11, 21)],
        "eval": [
            {"step": 10, "loss": 0.5, "metrics": {"accuracy": 0.75, "auc": 0.8}},
            {"step": 20, "loss": 0.25, "metrics": {"accuracy": 0.875, "auc": 0.9}},
        ],
    }
    logdir, files = run_writer(write_events, tmp_path, description)
    assert pathlib.Path(files[1]).parent == logdir / "eval"
    mux = event_multiplexer.EventMultiplexer(
        size_guidance={event_accumulator.SCALARS: 0}
    ).AddRunsFromDirectory(str(logdir))
    mux.Reload()
    runs = mux.Runs()
    assert sorted(runs) == [".", "eval"]
    assert "loss" in runs["."]["scalars"] and "loss" in runs["eval"]["scalars"]
    evals = description["eval"]
    assert [(s.step, s.value) for s in mux.Scalars("eval", "loss")] == [
        (e["step"], f32(e["loss"])) for e in evals
    ]
    for metric in ("accuracy", "auc"):
        assert [(s.step, s.value) for s in mux.Scalars("eval", metric)] == [
            (e["step"], f32(e["metrics"][metric])) for e in evals
        ]


def test_tensorflow_summary_iterator_reads_our_file(write_events, tmp_path):
    events = [{"step": 5, "scalars": {"loss": 0.5}, "histograms": {"W": [1.0, -1.0, 0.5]}}]
    _, files = run_writer(write_events, tmp_path, {"events": events})
    read = list(tf.compat.v1.train.summary_iterator(files[0]))
    assert read[0].file_version == "brain.Event:2"
    assert read[0].wall_time == math.floor(read[0].wall_time)
    assert str(int(read[0].wall_time)) in pathlib.Path(files[0]).name
    summary = read[1]
    assert summary.step == 5
    assert [v.tag for v in summary.summary.value] == ["loss", "W"]
    assert summary.summary.value[0].simple_value == 0.5
    assert list(summary.summary.value[1].histo.bucket) == tf_histogram([1.0, -1.0, 0.5])["bucket"]
