"""specc's `dynamic_rnn` and `bidirectional_dynamic_rnn` against TF 2.21's
`tf.compat.v1.nn.dynamic_rnn` and `tf.compat.v1.nn.bidirectional_dynamic_rnn`.

Each case is a cell (LSTM plain; LSTM with peepholes, cell_clip, num_proj,
proj_clip and a forget_bias other than 1; GRU; basic RNN with tanh and with
relu; a `multi_rnn_cell` of two cells) with and without `sequence_length`,
and a few with an `initial_state` or `time_major`; and an LSTM forward with
a GRU backward in `bidirectional_dynamic_rnn` (plain, with lengths,
time-major, with both initial states), and a stack forward with an LSTM with
every option backward. A spec feeds the rows of a CSV (`x` plus a trainable
`shift`, so the input's gradient is checked too, summed over the batch)
through the layer and takes ONE step of plain SGD of rate 1 on `loss =
sum(outputs * w_outputs) + sum_i sum(state_i * w_state_i)` (both outputs, fw
and bw, weighted, for the bidirectional layer): the checkpoint after the
step minus the one before is minus the gradient. The checkpoint before the
step is the same spec's with every loss weight 0 (its gradients are exactly
0, so its step leaves the initial values).

TF builds the same graph in graph mode with the cells of
`tf.compat.v1.nn.rnn_cell` (`LSTMCell`, `GRUCell`, `BasicRNNCell`,
`MultiRNNCell`; under Keras 3 that module cannot give them, so they are
taken from TF's own copy, `tensorflow.python.keras.layers.legacy_rnn.
rnn_cell_impl`, the classes `tf.compat.v1.nn.rnn_cell` exports under Keras
2), finds every one of its variables by name and shape in specc's initial
checkpoint (and no other trainable one there), restores it with a `Saver`,
and computes the outputs, the final state's tensors (`tf.nest.flatten`
order) and `tf.gradients` of the same loss. specc's `predict` on the same
rows gives the outputs and states, its step the gradients: all equal TF's
to 1e-5 relative (elementwise, with a floor of 1e-5 of the tensor's largest
magnitude, and for the step's deltas the float32 rounding of `w - g`).

A trained `specs/digits_lstm.spec` checkpoint restores into TF's graph by
name and gives the logits `specc predict` does.

Sizes (B, T, D, H, num_proj), lengths (0 and T among them), clip values,
initializer seeds, data and loss weights are drawn from SPECC_INTEROP_SEED
(any seed passes).
"""

import json
import os
import subprocess
import zlib

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402
from tensorflow.python.keras.layers.legacy_rnn import rnn_cell_impl as rnn_cell  # noqa: E402

from conftest import ROOT, literal  # noqa: E402

SEED = int(os.environ.get("SPECC_INTEROP_SEED", "2026"))

# The options each case runs with (beside its cell).
LENGTHS, INITIAL, TIME_MAJOR = "lengths", "initial_state", "time_major"


class Cell:
    """One cell as specc writes it and as TF builds it, and its state's
    widths in `tf.nest.flatten` order."""

    def __init__(self, spec, tf_cell, widths):
        self.spec = spec
        self.tf_cell = tf_cell
        self.widths = widths


def num(v):
    """A float32 value as exact spec text."""
    return repr(float(np.float32(v)))


def lstm(rng, h):
    seed = int(rng.integers(1, 1000))
    return Cell(f"lstm_cell({h}, initializer = glorot_uniform(seed = {seed}))",
                lambda: rnn_cell.LSTMCell(h), [h, h])


def lstm_options(rng, h):
    p = int(rng.integers(1, h + 3))
    cell_clip = float(np.float32(rng.uniform(0.15, 0.45)))
    proj_clip = float(np.float32(rng.uniform(0.03, 0.2)))
    forget_bias = float(np.float32(rng.uniform(-1.0, 0.8)))
    seed = int(rng.integers(1, 1000))
    spec = (f"lstm_cell({h}, use_peepholes = true, cell_clip = {num(cell_clip)}, "
            f"initializer = glorot_uniform(seed = {seed}), num_proj = {p}, "
            f"proj_clip = {num(proj_clip)}, forget_bias = {num(forget_bias)})")
    return Cell(spec, lambda: rnn_cell.LSTMCell(
        h, use_peepholes=True, cell_clip=cell_clip, num_proj=p, proj_clip=proj_clip,
        forget_bias=forget_bias), [h, p])


def gru(rng, h):
    seed = int(rng.integers(1, 1000))
    spec = (f"gru_cell({h}, kernel_initializer = glorot_uniform(seed = {seed}), "
            f"bias_initializer = random_uniform(minval = -0.5, maxval = 0.5, seed = {seed + 1}))")
    return Cell(spec, lambda: rnn_cell.GRUCell(h), [h])


def basic_tanh(rng, h):
    return Cell(f"basic_rnn_cell({h})", lambda: rnn_cell.BasicRNNCell(h), [h])


def basic_relu(rng, h):
    return Cell(f"basic_rnn_cell({h}, activation = relu)",
                lambda: rnn_cell.BasicRNNCell(h, activation=tf.nn.relu), [h])


def multi(rng, h):
    first = lstm_options(rng, h)
    second = gru(rng, int(rng.integers(1, 6)))
    return Cell(f"multi_rnn_cell([{first.spec}, {second.spec}])",
                lambda: rnn_cell.MultiRNNCell([first.tf_cell(), second.tf_cell()]),
                first.widths + second.widths)


CELLS = {"lstm": lstm, "lstm_options": lstm_options, "gru": gru,
         "basic_tanh": basic_tanh, "basic_relu": basic_relu, "multi_rnn_cell": multi}

# (test id, cell, options); a pair of cells is `bidirectional_dynamic_rnn`'s
# forward and backward cells.
CASES = [(f"{name}{'_' + LENGTHS if lengths else ''}", name, {LENGTHS} if lengths else set())
         for name in CELLS for lengths in (False, True)] + [
    ("lstm_initial_state", "lstm", {LENGTHS, INITIAL}),
    ("multi_rnn_cell_initial_state", "multi_rnn_cell", {INITIAL}),
    ("lstm_options_time_major", "lstm_options", {LENGTHS, TIME_MAJOR}),
    ("gru_time_major_initial_state", "gru", {LENGTHS, INITIAL, TIME_MAJOR}),
]
LSTM_GRU = {"bidirectional_rnn/fw/lstm_cell/kernel", "bidirectional_rnn/fw/lstm_cell/bias"} | {
    f"bidirectional_rnn/bw/gru_cell/{part}/{v}" for part in ("gates", "candidate") for v in ("kernel", "bias")}
# (test id, (fw cell, bw cell), options, some of TF's variable names).
BIDIRECTIONAL_CASES = [
    ("bidirectional", ("lstm", "gru"), set(), LSTM_GRU),
    ("bidirectional_lengths", ("lstm", "gru"), {LENGTHS}, LSTM_GRU),
    ("bidirectional_time_major", ("lstm", "gru"), {LENGTHS, TIME_MAJOR}, LSTM_GRU),
    ("bidirectional_initial_state", ("lstm", "gru"), {LENGTHS, INITIAL}, LSTM_GRU),
    ("bidirectional_stacked", ("multi_rnn_cell", "lstm_options"), {LENGTHS, INITIAL, TIME_MAJOR},
     {"bidirectional_rnn/fw/multi_rnn_cell/cell_0/lstm_cell/w_f_diag",
      "bidirectional_rnn/fw/multi_rnn_cell/cell_1/gru_cell/candidate/kernel",
      "bidirectional_rnn/bw/lstm_cell/projection/kernel"}),
]


class Problem:
    """One case's sizes, data and loss weights. `cells` is one cell's name
    (`dynamic_rnn`) or a pair (`bidirectional_dynamic_rnn`'s fw and bw)."""

    def __init__(self, name, cells, options):
        rng = np.random.default_rng([SEED, zlib.crc32(name.encode())])
        self.b = int(rng.integers(3, 10))
        self.t = int(rng.integers(2, 7))
        self.d = int(rng.integers(1, 6))
        self.bidirectional = not isinstance(cells, str)
        names = cells if self.bidirectional else [cells]
        self.cells = [CELLS[c](rng, int(rng.integers(1, 7))) for c in names]
        self.time_major = TIME_MAJOR in options
        self.x = rng.normal(size=(self.b, self.t * self.d)).astype(np.float32)
        self.lengths = None
        if LENGTHS in options:
            lengths = rng.integers(0, self.t + 1, self.b)
            lengths[:2] = [0, self.t]
            self.lengths = rng.permutation(lengths)
        # Every state tensor's width, in `tf.nest.flatten` order (fw's, then bw's).
        self.widths = [w for c in self.cells for w in c.widths]
        self.initial = None
        if INITIAL in options:
            self.initial = [rng.normal(size=(self.b, w)).astype(np.float32)
                            for w in self.widths]
        # One output per cell (fw, bw), each as wide as the cell's last h.
        self.outputs = ["outputs_fw", "outputs_bw"] if self.bidirectional else ["outputs"]
        self.w_outs = [rng.uniform(-1, 1, (self.t, c.widths[-1])).astype(np.float32)
                       for c in self.cells]
        self.w_states = [rng.uniform(-1, 1, w).astype(np.float32) for w in self.widths]

    def write_csv(self, path):
        heads = [f"x{i}" for i in range(self.t * self.d)]
        cols = [self.x]
        if self.lengths is not None:
            heads.append("n")
            cols.append(self.lengths[:, None].astype(np.float32))
        if self.initial is not None:
            heads += [f"s{i}" for i in range(sum(self.widths))]
            cols += self.initial
        rows = np.concatenate(cols, 1)
        with open(path, "w") as f:
            f.write(",".join(heads) + "\n")
            for r in rows:
                f.write(",".join(repr(float(v)) for v in r) + "\n")

    def spec(self, weighted):
        """The spec; `weighted = False` zeroes every loss weight."""
        t, d, k = self.t, self.d, len(self.widths)
        scale = 1.0 if weighted else 0.0
        features = [f"  x = numeric(x0..x{t * d - 1})"]
        params = [f"  shift: [{t}, {d}] = zeros"]
        for out, w in zip(self.outputs, self.w_outs):
            w = w * scale + 0.0  # no -0.0
            if self.time_major:
                w = w[:, None, :]
            params.append(f"  w_{out}: {list(w.shape)} = constant(value = {literal(w)}), trainable = false")
        for i, w in enumerate(self.w_states):
            params.append(f"  w_state_{i}: [{len(w)}] = constant(value = {literal(w * scale + 0.0)}), trainable = false")
        args = [c.spec for c in self.cells] + ["xs"]
        if self.lengths is not None:
            features.append("  n = numeric(n)")
            args.append("sequence_length = reshape(n, [B])")
        if self.initial is not None:
            at, states = 0, []
            for i, w in enumerate(self.widths):
                cols = f"s{at}" if w == 1 else f"s{at}..s{at + w - 1}"
                features.append(f"  s_{i} = numeric({cols})")
                params.append(f"  state_shift_{i}: [{w}] = zeros")
                states.append(f"s_{i} + state_shift_{i}")
                at += w
            if self.bidirectional:
                fw = len(self.cells[0].widths)
                args.append(f"initial_state_fw = [{', '.join(states[:fw])}]")
                args.append(f"initial_state_bw = [{', '.join(states[fw:])}]")
            else:
                args.append(f"initial_state = [{', '.join(states)}]")
        xs = f"reshape(x, [B, {t}, {d}]) + shift"
        if self.time_major:
            xs = f"transpose({xs}, [1, 0, 2])"
            args.append("time_major = true")
        names = [f"st{i}" for i in range(k)]
        layer = "bidirectional_dynamic_rnn" if self.bidirectional else "dynamic_rnn"
        loss = " + ".join([f"reduce_sum({o} * w_{o})" for o in self.outputs]
                          + [f"reduce_sum({n} * w_state_{i})" for i, n in enumerate(names)])
        shown = [f"transpose({o}, [1, 0, 2])" if self.time_major else o for o in self.outputs]
        nl = "\n"
        return f"""model rnn
data csv("train.csv")
features {{
{nl.join(features)}
}}
params {{
{nl.join(params)}
}}
xs = {xs}
{', '.join(self.outputs + names)} = {layer}({', '.join(args)})
loss = {loss}
optimizer gradient_descent(learning_rate = 1.0)
train {{ batch = {self.b}, steps = 1, eval_fraction = 0 }}
outputs {{
{nl.join(f'  {o} = {v}' for o, v in zip(self.outputs, shown))}
{nl.join(f'  {n} = {n}' for n in names)}
}}
"""

    def tf_reference(self, prefix):
        """TF's outputs (batch-major, one per cell), flattened final state,
        and gradients by variable name, from the variables of the checkpoint
        `prefix` (restored by name); and TF's variable names."""
        g = tf.Graph()
        with g.as_default():
            zeros = tf.compat.v1.zeros_initializer()
            shift = tf.compat.v1.get_variable("shift", [self.t, self.d], initializer=zeros)
            xs = tf.constant(self.x.reshape(self.b, self.t, self.d)) + shift
            w_outs = [tf.constant(w) for w in self.w_outs]
            if self.time_major:
                xs = tf.transpose(xs, [1, 0, 2])
                w_outs = [w[:, None, :] for w in w_outs]
            cells = [c.tf_cell() for c in self.cells]
            kwargs = {"dtype": tf.float32, "time_major": self.time_major}
            if self.lengths is not None:
                kwargs["sequence_length"] = tf.constant(self.lengths, tf.int32)
            initial = None
            if self.initial is not None:
                initial = [tf.constant(s) + tf.compat.v1.get_variable(
                    f"state_shift_{i}", [s.shape[1]], initializer=zeros)
                    for i, s in enumerate(self.initial)]
            if self.bidirectional:
                if initial is not None:
                    fw = len(self.cells[0].widths)
                    kwargs["initial_state_fw"] = tf.nest.pack_sequence_as(cells[0].state_size, initial[:fw])
                    kwargs["initial_state_bw"] = tf.nest.pack_sequence_as(cells[1].state_size, initial[fw:])
                outputs, state = tf.compat.v1.nn.bidirectional_dynamic_rnn(*cells, xs, **kwargs)
            else:
                if initial is not None:
                    kwargs["initial_state"] = tf.nest.pack_sequence_as(cells[0].state_size, initial)
                outputs, state = tf.compat.v1.nn.dynamic_rnn(cells[0], xs, **kwargs)
                outputs = (outputs,)
            states = tf.nest.flatten(state)
            assert [s.shape[1] for s in states] == self.widths
            loss = tf.add_n([tf.reduce_sum(o * w) for o, w in zip(outputs, w_outs)]
                            + [tf.reduce_sum(s * w) for s, w in zip(states, self.w_states)])
            if self.time_major:
                outputs = [tf.transpose(o, [1, 0, 2]) for o in outputs]
            variables = tf.compat.v1.global_variables()
            grads = tf.gradients(loss, variables)

            shapes = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
            for v in variables:
                assert v.op.name in shapes, f"TF's {v.op.name} is not in specc's checkpoint"
                assert shapes[v.op.name] == v.shape.as_list(), v.op.name
            with tf.compat.v1.Session(graph=g) as s:
                tf.compat.v1.train.Saver(var_list=variables).restore(s, prefix)
                out, st, gr = s.run([list(outputs), states, grads])
            names = [v.op.name for v in variables]
            return out, st, dict(zip(names, gr)), names


def assert_close(what, got, want, floor=0.0):
    """1e-5 relative, with a floor of 1e-5 of the largest `|want|` (and `floor`)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, TF's {want.shape}"
    atol = 1e-5 * max(np.abs(want).max(initial=0.0), 1e-6) + floor
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=atol, err_msg=what)


def run(specc, cwd, *args):
    r = subprocess.run([specc, *args], cwd=cwd, capture_output=True, text=True)
    assert r.returncode == 0, f"specc {' '.join(args)}: {r.stderr}"
    return r.stdout


def one_sgd_step(specc, tmp_path, pr):
    """Writes `pr`'s CSV and its two specs, trains each one step (the
    unweighted spec's loss is 0, so its checkpoint holds the initial
    values) and predicts with the first on the CSV. The initial
    checkpoint's prefix, and readers of it and of the stepped one."""
    pr.write_csv(tmp_path / "train.csv")
    (tmp_path / "initial.spec").write_text(pr.spec(weighted=False))
    (tmp_path / "spec.spec").write_text(pr.spec(weighted=True))
    run(specc, tmp_path, "run", "initial.spec", "--checkpoint-dir", "ckpt0")
    run(specc, tmp_path, "run", "spec.spec", "--checkpoint-dir", "ckpt1")
    run(specc, tmp_path, "predict", "initial.spec", "--checkpoint", "ckpt0", "--data", "train.csv",
        "--output", "predicted.jsonl")
    prefix = tf.train.latest_checkpoint(str(tmp_path / "ckpt0"))
    after = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(tmp_path / "ckpt1")))
    return prefix, tf.train.load_checkpoint(prefix), after


def check_equals_tf(specc, tmp_path, name, cells, options):
    """Runs the case's two specs and `predict`, and compares specc's
    variable names, outputs, final state and one step's deltas with TF's."""
    pr = Problem(name, cells, options)
    prefix, before, after = one_sgd_step(specc, tmp_path, pr)

    outputs, states, grads, names = pr.tf_reference(prefix)

    # specc's trainable variables are TF's, by name.
    constants = {f"w_{o}" for o in pr.outputs} | {f"w_state_{i}" for i in range(len(pr.widths))}
    ours = {n for n in before.get_variable_to_shape_map()
            if n != "global_step" and not n.startswith("specc/") and n not in constants}
    assert ours == set(names)

    rows = [json.loads(line) for line in (tmp_path / "predicted.jsonl").read_text().splitlines()]
    assert len(rows) == pr.b
    for o, want in zip(pr.outputs, outputs):
        assert_close(f"{name}: {o}", [r[o] for r in rows], want)
        if pr.lengths is not None:
            past = np.arange(pr.t)[None, :] >= pr.lengths[:, None]
            assert not np.any(np.array([r[o] for r in rows])[past]), f"{o} past the length are 0"
    for i, want in enumerate(states):
        assert_close(f"{name}: final state {i}", [r[f"st{i}"] for r in rows], want)

    moved = False
    for n in names:
        w0, w1 = before.get_tensor(n), after.get_tensor(n)
        # w1 is float32(w0 - g): its rounding, a few ulps of w0, is part of the delta.
        ulps = 4 * np.finfo(np.float32).eps * np.abs(w0).max(initial=0.0)
        assert_close(f"{name}: gradient of {n}", w0.astype(np.float64) - w1, grads[n], floor=ulps)
        moved |= bool(np.any(w0 != w1))
    assert moved, "the step changed the weights"
    return names


@pytest.mark.parametrize("name,cell,options", CASES, ids=[c[0] for c in CASES])
def test_dynamic_rnn_equals_tf(specc, tmp_path, name, cell, options):
    check_equals_tf(specc, tmp_path, name, cell, options)


@pytest.mark.parametrize("name,cells,options,some_names", BIDIRECTIONAL_CASES,
                         ids=[c[0] for c in BIDIRECTIONAL_CASES])
def test_bidirectional_dynamic_rnn_equals_tf(specc, tmp_path, name, cells, options, some_names):
    """`bidirectional_dynamic_rnn(cell_fw, cell_bw, ..)` against TF's
    `bidirectional_dynamic_rnn`: the variables under TF's
    `bidirectional_rnn/fw/` and `bidirectional_rnn/bw/`, both outputs (the
    backward one reversed back within each row's length), both final
    states and the step's gradients."""
    names = check_equals_tf(specc, tmp_path, name, cells, options)
    assert some_names <= set(names)


def test_a_trained_digits_lstm_restores_into_tf_by_name(specc, tmp_path):
    """`specs/digits_lstm.spec` trained a few steps (Adam); TF's graph of
    the same model (`LSTMCell(128)` in `dynamic_rnn`, `h @ W + b`) restores
    its checkpoint by name, and its logits on held rows equal the spec's
    (the spec's outputs with `logits` added) from `specc predict`."""
    rng = np.random.default_rng([SEED, zlib.crc32(b"digits_lstm")])
    data = ROOT / "specs" / "data" / "digits.csv"
    text = (ROOT / "specs" / "digits_lstm.spec").read_text()
    assert 'data csv("data/digits.csv")' in text and "outputs {\n" in text
    text = text.replace('data csv("data/digits.csv")', f'data csv("{data}")')
    text = text.replace("outputs {\n", "outputs {\n  logits = logits\n")
    (tmp_path / "spec.spec").write_text(text)
    steps = int(rng.integers(3, 11))
    run(specc, tmp_path, "run", "spec.spec", "--steps", str(steps), "--checkpoint-dir", "ckpt")
    prefix = tf.train.latest_checkpoint(str(tmp_path / "ckpt"))
    reader = tf.train.load_checkpoint(prefix)
    assert int(reader.get_tensor("global_step")) == steps

    lines = data.read_text().splitlines()
    picked = sorted(rng.choice(len(lines) - 1, int(rng.integers(20, 80)), replace=False) + 1)
    (tmp_path / "new.csv").write_text("\n".join([lines[0]] + [lines[i] for i in picked]) + "\n")
    parsed = np.loadtxt(tmp_path / "new.csv", delimiter=",", skiprows=1, dtype=np.float32, ndmin=2)
    head = lines[0].split(",")
    pixels = parsed[:, [head.index(f"px{i}") for i in range(64)]]

    g = tf.Graph()
    with g.as_default():
        rows = tf.reshape(tf.constant(pixels) / 16, [-1, 8, 8])
        _, state = tf.compat.v1.nn.dynamic_rnn(rnn_cell.LSTMCell(128), rows, dtype=tf.float32)
        w = tf.compat.v1.get_variable("W", [128, 10])
        b = tf.compat.v1.get_variable("b", [10])
        logits = state.h @ w + b
        variables = tf.compat.v1.global_variables()
        names = sorted(v.op.name for v in variables)
        with tf.compat.v1.Session(graph=g) as s:
            tf.compat.v1.train.Saver(var_list=variables).restore(s, prefix)
            want = s.run(logits)
    assert names == ["W", "b", "rnn/lstm_cell/bias", "rnn/lstm_cell/kernel"]
    # Adam's slots are there too, under TF's names.
    assert "rnn/lstm_cell/kernel/Adam_1" in reader.get_variable_to_shape_map()

    run(specc, tmp_path, "predict", "spec.spec", "--checkpoint", "ckpt", "--data", "new.csv",
        "--output", "predicted.jsonl")
    got = [json.loads(line)["logits"] for line in (tmp_path / "predicted.jsonl").read_text().splitlines()]
    assert_close("digits_lstm logits", got, want)
