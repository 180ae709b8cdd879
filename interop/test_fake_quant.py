"""Quantization-aware training: specc's `fake_quant_with_min_max_vars`,
`fake_quant_with_min_max_vars_per_channel` and `fake_quant_with_min_max_args`
against TF 2.21's ops and their gradients.

A spec fake-quantizes `x + shift` (`shift` trainable, so the input's
gradient is checked too) with trainable `min`, `max` (scalars, or one per
channel), and takes ONE step of plain SGD of rate 1 on `loss = sum(q * w)`:
the checkpoint after the step minus the one before (the same spec with `w
= 0`) is minus the gradient. TF computes `q` and `tf.gradients` of the same
loss from the same values. The outputs equal TF's bit for bit; the
gradients (TF's straight-through estimator: the upstream gradient where
`nudged_min <= x <= nudged_max`, its sums below and above to `min` and
`max`) to 1e-6 relative (float32 sums in another order). Shapes, ranges
(some not containing 0, so the nudged zero point clamps), `num_bits`,
`narrow_range` and values (some exactly on the nudged bounds) are drawn
from SPECC_INTEROP_SEED; `vars_zero_range` is TF's special case `min = max
= 0` (zeros, the whole gradient to the input, none to the range).
"""

import json
import os
import subprocess
import zlib

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

from conftest import literal  # noqa: E402

SEED = int(os.environ.get("SPECC_INTEROP_SEED", "2026"))
CASES = ["vars", "vars_narrow", "vars_positive_range", "vars_zero_range", "per_channel", "args"]


def f32(v):
    return repr(float(np.float32(v)))


def problem(name):
    rng = np.random.default_rng([SEED, zlib.crc32(name.encode())])
    b, d = int(rng.integers(3, 8)), int(rng.integers(1, 6))
    bits = int(rng.integers(2, 9))
    narrow = name == "vars_narrow"
    if name == "per_channel":
        lo = rng.uniform(-3, 0.5, d).astype(np.float32)
        hi = (lo + rng.uniform(0.5, 4, d)).astype(np.float32)
    else:
        lo = np.float32(rng.uniform(0.2, 1.0) if name == "vars_positive_range" else rng.uniform(-4, -0.1))
        hi = np.float32(lo + rng.uniform(0.5, 6))
    if name == "vars_zero_range":  # TF's special case: zeros, the gradient to the input
        lo, hi = np.float32(0), np.float32(0)
    x = (rng.uniform(-6, 6, (b, d))).astype(np.float32)
    w = rng.uniform(-1, 1, (b, d)).astype(np.float32)
    return b, d, bits, narrow, lo, hi, x, w


def spec(name, b, d, bits, narrow, lo, hi, on):
    per = name == "per_channel"
    shape = f"[{d}]" if per else "[]"
    if per:
        init_lo, init_hi = f"constant(value = {literal(lo)})", f"constant(value = {literal(hi)})"
    else:
        init_lo, init_hi = f"constant(value = {f32(lo)})", f"constant(value = {f32(hi)})"
    bounds = "" if name == "args" else f"""
  qmin: {shape} = {init_lo}
  qmax: {shape} = {init_hi}"""
    opts = f"num_bits = {bits}, narrow_range = {'true' if narrow else 'false'}"
    if name == "args":
        q = f"fake_quant_with_min_max_args(xs, min = {f32(lo)}, max = {f32(hi)}, {opts})"
    elif per:
        q = f"fake_quant_with_min_max_vars_per_channel(xs, qmin, qmax, {opts})"
    else:
        q = f"fake_quant_with_min_max_vars(xs, qmin, qmax, {opts})"
    return f"""model fq
data csv("train.csv")
features {{
  x = numeric(x0..x{d - 1})
  wt = numeric(w0..w{d - 1})
}}
params {{
  shift: [{d}] = zeros{bounds}
  on: [] = constant(value = {on}), trainable = false
}}
xs = x + shift
q = {q}
loss = reduce_sum(q * wt) * on
optimizer gradient_descent(learning_rate = 1.0)
train {{ batch = {b}, steps = 1, eval_fraction = 0 }}
outputs {{ q = q }}
"""


def run(specc, cwd, *args):
    r = subprocess.run([specc, *args], cwd=cwd, capture_output=True, text=True)
    assert r.returncode == 0, f"specc {' '.join(args)}: {r.stderr}"


@pytest.mark.parametrize("name", CASES)
def test_fake_quant_equals_tf(specc, tmp_path, name):
    b, d, bits, narrow, lo, hi, x, w = problem(name)
    # Put some inputs exactly on TF's nudged bounds (the masks' edges).
    with tf.Graph().as_default(), tf.compat.v1.Session() as s:
        probe = tf.constant(np.array([[-1e6, 1e6]] * d, np.float32).T)
        if name == "per_channel":
            ends = s.run(tf.quantization.fake_quant_with_min_max_vars_per_channel(
                probe, lo, hi, num_bits=bits, narrow_range=narrow))
            x[0], x[-1] = ends[0], ends[1]
        else:
            ends = s.run(tf.quantization.fake_quant_with_min_max_vars(
                probe, lo, hi, num_bits=bits, narrow_range=narrow))
            x[0, 0], x[-1, -1] = ends[0, 0], ends[1, 0]
    with open(tmp_path / "train.csv", "w") as f:
        f.write(",".join([f"x{i}" for i in range(d)] + [f"w{i}" for i in range(d)]) + "\n")
        for r, rw in zip(x, w):
            f.write(",".join(repr(float(v)) for v in [*r, *rw]) + "\n")
    (tmp_path / "zero.spec").write_text(spec(name, b, d, bits, narrow, lo, hi, "0.0"))
    (tmp_path / "spec.spec").write_text(spec(name, b, d, bits, narrow, lo, hi, "1.0"))
    run(specc, tmp_path, "run", "zero.spec", "--checkpoint-dir", "ck0")
    run(specc, tmp_path, "run", "spec.spec", "--checkpoint-dir", "ck1")
    run(specc, tmp_path, "predict", "zero.spec", "--checkpoint", "ck0", "--data", "train.csv",
        "--output", "q.jsonl")
    before = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(tmp_path / "ck0")))
    after = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(tmp_path / "ck1")))
    got_q = np.array([json.loads(line)["q"] for line in (tmp_path / "q.jsonl").read_text().splitlines()],
                     np.float32)

    with tf.Graph().as_default(), tf.compat.v1.Session() as s:
        xs = tf.constant(x) + tf.Variable(np.zeros(d, np.float32))
        mn, mx = tf.Variable(lo), tf.Variable(hi)
        if name == "args":
            q = tf.quantization.fake_quant_with_min_max_args(xs, min=float(lo), max=float(hi),
                                                             num_bits=bits, narrow_range=narrow)
        elif name == "per_channel":
            q = tf.quantization.fake_quant_with_min_max_vars_per_channel(xs, mn, mx, num_bits=bits,
                                                                         narrow_range=narrow)
        else:
            q = tf.quantization.fake_quant_with_min_max_vars(xs, mn, mx, num_bits=bits, narrow_range=narrow)
        loss = tf.reduce_sum(q * w)
        shift = [v for v in tf.compat.v1.global_variables()][0]
        grads = tf.gradients(loss, [shift, mn, mx])
        s.run(tf.compat.v1.global_variables_initializer())
        want_q, g_shift, g_min, g_max = s.run([q] + [g if g is not None else tf.zeros_like(v)
                                                      for g, v in zip(grads, [shift, mn, mx])])

    np.testing.assert_array_equal(got_q, want_q, err_msg=f"{name}: q")
    assert not np.array_equal(want_q, x), f"the values were quantized: {name} bits {bits} [{lo}, {hi}] x {x}"
    names = [("shift", g_shift)] + ([] if name == "args" else [("qmin", g_min), ("qmax", g_max)])
    for n, g in names:
        delta = before.get_tensor(n).astype(np.float64) - after.get_tensor(n)
        scale = max(np.abs(g).max(initial=0.0), 1e-6)
        np.testing.assert_allclose(delta, g, rtol=1e-6, atol=1e-6 * scale + 4e-7 * np.abs(before.get_tensor(n)).max(initial=0.0),
                                   err_msg=f"{name}: gradient of {n}")
