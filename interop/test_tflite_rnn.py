"""Recurrent layers exported to TF Lite, run by LiteRT (`ai-edge-litert`).

Each case is one of `test_dynamic_rnn.py`'s problems (its sizes, lengths
with 0 and T among them, initial states and values drawn from
SPECC_INTEROP_SEED; any seed passes): a `dynamic_rnn` or
`bidirectional_dynamic_rnn` with an LSTM (plain, and with peepholes,
cell_clip, num_proj, proj_clip, another forget_bias), a basic cell (tanh,
relu), a GRU, and stacks mixing them, with and without `sequence_length`,
time-major inputs and (for a GRU) an initial state. Its spec is trained
zero steps (the initial checkpoint), `specc predict` gives the outputs and
final states, and `specc export --format tflite --batch B` writes the
outputs and every final `h` (TF Lite's fused LSTM keeps `c` inside).
LiteRT runs the model on the same rows: every output equals `predict`'s to
1e-5 relative, and `specc predict --tflite` (specc's own interpreter)
equals LiteRT's. The model holds UNIDIRECTIONAL_SEQUENCE_LSTM for each
LSTM, UNIDIRECTIONAL_SEQUENCE_RNN for each basic cell and builtins for a
GRU, and gives the same result when invoked twice (its state variables are
zeroed at the start of each invocation).

Dynamic-range quantization (`--quantize dynamic`) of layers large enough
for it (32 to 47 units): LiteRT runs TF Lite's hybrid LSTM and RNN kernels
(int8 weights, per-row quantized inputs) and its outputs equal `specc
predict --tflite` of the same file (specc's hybrid kernels) to 1e-5, and
the float model's to 5%.
"""

import json
import subprocess

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter

import test_dynamic_rnn as rnn
from test_dynamic_rnn import CELLS, LENGTHS, INITIAL, TIME_MAJOR, Problem, assert_close, run


def multi_lstm(rng, h):
    first, second = rnn.lstm(rng, h), rnn.lstm_options(rng, int(rng.integers(1, 6)))
    return rnn.Cell(f"multi_rnn_cell([{first.spec}, {second.spec}])", None,
                    first.widths + second.widths)


def large(make):
    """`make`'s cell with 32 to 47 units (weights of at least 1024 values)."""
    return lambda rng, h: make(rng, 32 + int(rng.integers(0, 16)))


def large_lstm_options(rng, h):
    """An LSTM of every option with 32 to 47 units and a projection of at
    least 32 (its recurrent weights `[H, P]` have at least 1024 values)."""
    h = 32 + int(rng.integers(0, 16))
    p = 32 + int(rng.integers(0, h - 31))
    cell_clip, proj_clip = (float(np.float32(rng.uniform(a, b))) for a, b in ((0.15, 0.45), (0.03, 0.2)))
    spec = (f"lstm_cell({h}, use_peepholes = true, cell_clip = {rnn.num(cell_clip)}, "
            f"initializer = glorot_uniform(seed = {int(rng.integers(1, 1000))}), num_proj = {p}, "
            f"proj_clip = {rnn.num(proj_clip)}, forget_bias = 0.5)")
    return rnn.Cell(spec, None, [h, p])


CELLS.setdefault("multi_lstm", multi_lstm)
CELLS.setdefault("large_lstm_options", large_lstm_options)
CELLS.setdefault("large_basic_tanh", large(rnn.basic_tanh))
CELLS.setdefault("large_gru", large(rnn.gru))

# Which final-state tensors are an `h` (`tf.nest.flatten` order): TF Lite's
# fused LSTM gives the outputs, not `c`.
H_MASK = {"lstm": [False, True], "lstm_options": [False, True], "large_lstm_options": [False, True],
          "gru": [True], "large_gru": [True], "basic_tanh": [True], "basic_relu": [True],
          "large_basic_tanh": [True], "multi_rnn_cell": [False, True, True],
          "multi_lstm": [False, True, False, True]}
# The operator each cell's layer becomes (a GRU: builtins, no sequence operator).
OPERATORS = {"lstm": ["UNIDIRECTIONAL_SEQUENCE_LSTM"], "lstm_options": ["UNIDIRECTIONAL_SEQUENCE_LSTM"],
             "large_lstm_options": ["UNIDIRECTIONAL_SEQUENCE_LSTM"], "gru": [], "large_gru": [],
             "basic_tanh": ["UNIDIRECTIONAL_SEQUENCE_RNN"], "basic_relu": ["UNIDIRECTIONAL_SEQUENCE_RNN"],
             "large_basic_tanh": ["UNIDIRECTIONAL_SEQUENCE_RNN"],
             "multi_rnn_cell": ["UNIDIRECTIONAL_SEQUENCE_LSTM"],
             "multi_lstm": ["UNIDIRECTIONAL_SEQUENCE_LSTM"] * 2}

# (test id, cell or (fw, bw) cells, options).
CASES = [(f"{name}{'_' + LENGTHS if lengths else ''}", name, {LENGTHS} if lengths else set())
         for name in ("lstm", "lstm_options", "basic_tanh", "basic_relu", "gru", "multi_rnn_cell",
                      "multi_lstm")
         for lengths in (False, True)] + [
    ("lstm_options_time_major", "lstm_options", {LENGTHS, TIME_MAJOR}),
    ("gru_time_major_initial_state", "gru", {LENGTHS, INITIAL, TIME_MAJOR}),
    ("bidirectional_lengths", ("lstm", "gru"), {LENGTHS}),
    ("bidirectional_time_major", ("lstm_options", "basic_relu"), {LENGTHS, TIME_MAJOR}),
]
DYNAMIC_CASES = [
    ("large_lstm_options", "large_lstm_options", {LENGTHS}),
    ("large_basic_tanh", "large_basic_tanh", set()),
    ("large_gru", "large_gru", {LENGTHS}),
]


def exported(specc, tmp_path, name, cells, options, quantize=False):
    """The case's problem, its `predict` rows, the exported names and the
    float model (and with `quantize`, the dynamic-range one)."""
    pr = Problem(name, cells, options)
    pr.write_csv(tmp_path / "train.csv")
    text = pr.spec(weighted=False)
    # The exported outputs batch-major, as `predict` writes the outputs item
    # (`--fetch` names bindings, and a time-major layer's are [T, B, H]).
    exported_outputs = pr.outputs
    if pr.time_major:
        exported_outputs = [f"{o}_batch_major" for o in pr.outputs]
        text += "".join(f"{e} = transpose({o}, [1, 0, 2])\n" for e, o in zip(exported_outputs, pr.outputs))
    (tmp_path / "spec.spec").write_text(text)
    run(specc, tmp_path, "run", "spec.spec", "--checkpoint-dir", "ckpt")
    run(specc, tmp_path, "predict", "spec.spec", "--checkpoint", "ckpt", "--data", "train.csv",
        "--output", "predicted.jsonl")
    predicted = [json.loads(line) for line in (tmp_path / "predicted.jsonl").read_text().splitlines()]
    names = [c for c in ([cells] if isinstance(cells, str) else cells)]
    mask = [m for c in names for m in H_MASK[c]]
    states = [f"st{i}" for i, h in enumerate(mask) if h]
    fetch = [a for n in exported_outputs + states for a in ("--fetch", n)]
    args = ["export", "spec.spec", "--checkpoint", "ckpt", "--format", "tflite", "--batch", str(pr.b),
            *fetch]
    run(specc, tmp_path, *args, "-o", "model.tflite")
    if quantize:
        run(specc, tmp_path, *args, "--quantize", "dynamic", "-o", "dynamic.tflite")
    want_ops = [op for c in names for op in OPERATORS[c]]
    # (the model's name, the name `predict` writes it under).
    fetched = list(zip(exported_outputs, pr.outputs)) + [(n, n) for n in states]
    return pr, predicted, fetched, want_ops


def feeds(pr):
    """The model's inputs by name, from the CSV's columns."""
    f = {"x": pr.x}
    if pr.lengths is not None:
        f["n"] = pr.lengths[:, None].astype(np.float32)
    if pr.initial is not None:
        for i, s in enumerate(pr.initial):
            f[f"s_{i}"] = s
    return f


def litert(model, pr):
    interp = Interpreter(model_path=str(model))
    runner = interp.get_signature_runner("serving_default")
    first = runner(**feeds(pr))
    first = {k: np.array(v) for k, v in first.items()}
    again = runner(**feeds(pr))
    for k, v in again.items():
        np.testing.assert_array_equal(v, first[k], err_msg=f"{k}: a second invocation differs")
    return first, interp


def specc_tflite(specc, tmp_path, model, out):
    run(specc, tmp_path, "predict", "spec.spec", "--tflite", model, "--data", "train.csv",
        "--output", out)
    return [json.loads(line) for line in (tmp_path / out).read_text().splitlines()]


def operators(interp):
    return [d["op_name"] for d in interp._get_ops_details()]


@pytest.mark.parametrize("name,cells,options", CASES, ids=[c[0] for c in CASES])
def test_litert_runs_the_exported_layer_as_specc_predicts(specc, tmp_path, name, cells, options):
    pr, predicted, fetched, want_ops = exported(specc, tmp_path, name, cells, options)
    got, interp = litert(tmp_path / "model.tflite", pr)
    ours = specc_tflite(specc, tmp_path, "model.tflite", "tflite.jsonl")
    assert len(predicted) == pr.b
    for n, p in fetched:
        want = np.array([r[p] for r in predicted], np.float32)
        assert_close(f"{name}: LiteRT's {n}", got[n], want)
        assert_close(f"{name}: specc's interpreter's {n}", [r[n] for r in ours], got[n])
    ops = operators(interp)
    sequence = [op for op in ops if op.startswith("UNIDIRECTIONAL_SEQUENCE")]
    assert sorted(sequence) == sorted(want_ops), ops


@pytest.mark.parametrize("name,cells,options", DYNAMIC_CASES, ids=[c[0] for c in DYNAMIC_CASES])
def test_litert_runs_the_hybrid_layer_as_specc_does(specc, tmp_path, name, cells, options):
    pr, predicted, fetched, want_ops = exported(specc, tmp_path, name, cells, options, quantize=True)
    got, interp = litert(tmp_path / "dynamic.tflite", pr)
    ours = specc_tflite(specc, tmp_path, "dynamic.tflite", "dynamic.jsonl")
    details = interp.get_tensor_details()
    assert any(d["dtype"] == np.int8 for d in details), "weights are int8"
    for n, p in fetched:
        float_value = np.array([r[p] for r in predicted], np.float32)
        assert_close(f"{name}: specc's hybrid {n}", [r[n] for r in ours], got[n])
        scale = np.abs(float_value).max(initial=0.0)
        worst = np.abs(got[n] - float_value).max(initial=0.0)
        assert worst <= 0.05 * max(scale, 1e-3), f"{name}: {n} hybrid vs float differ by {worst} of {scale}"


def test_an_export_without_a_batch_is_refused(specc, tmp_path):
    pr = Problem("lstm", "lstm", set())
    pr.write_csv(tmp_path / "train.csv")
    (tmp_path / "spec.spec").write_text(pr.spec(weighted=False))
    run(specc, tmp_path, "run", "spec.spec", "--checkpoint-dir", "ckpt")
    r = subprocess.run([specc, "export", "spec.spec", "--checkpoint", "ckpt", "--format", "tflite",
                        "--fetch", "outputs", "-o", "model.tflite"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    assert "only with a fixed batch size" in r.stderr
    assert not (tmp_path / "model.tflite").exists()
