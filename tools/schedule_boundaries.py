#!/usr/bin/env python3
"""TensorFlow's learning-rate schedules at and around their boundaries.

Writes tests/golden/extra/schedule_boundaries.json: the values that
tf.compat.v1.train's decay functions compute (graph mode, float32, default
Grappler rewrites, one thread, oneDNN off) at the global steps where a
floor/ceil/restart changes value, and one step either side of each:

- cosine_decay_restarts for t_mul in {2, 1.25, 1.5, 3, 1.1, 0.8, 0.5, 1} and
  several first_decay_steps, around every restart up to a few thousand steps
  (for t_mul < 1 also past the point where the periods run out);
- the staircase forms of exponential_decay, natural_exp_decay and
  inverse_time_decay, and polynomial_decay with cycle = True, at multiples of
  decay_steps (where step * (1 / decay_steps) can round below or above the
  integer), for several powers;
- cosine_decay and linear_cosine_decay around decay_steps.

Each case is built in a graph of its own (as a training graph holds one
schedule) with global_step an int64 scalar placeholder fed one step per
Session.run. The file has the format of schedules.json.

Usage (from the repository root, with TensorFlow 2.21 installed):
    python tools/schedule_boundaries.py > tests/golden/extra/schedule_boundaries.json
"""

import json
import math
import os
import sys

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.compat.v1.disable_eager_execution()

MAX_STEP = 5000
RESTARTS = 12  # restarts per cosine_decay_restarts case
MULTIPLES = 6  # multiples of decay_steps per case, plus up to 6 that round off


def restart_steps(first, t_mul):
    """Steps at and around each restart of cosine_decay_restarts (real-valued
    restart i is at first * (t_mul^i - 1) / (t_mul - 1), or i * first)."""
    steps = {0, 1, first - 1, first, first + 1}
    if t_mul == 1.0:
        bounds = [i * first for i in range(1, RESTARTS + 1)]
    elif t_mul > 1.0:
        bounds = []
        i = 1
        while True:
            b = first * (t_mul**i - 1.0) / (t_mul - 1.0)
            if b > MAX_STEP or i > RESTARTS:
                break
            bounds.append(b)
            i += 1
    else:
        limit = first / (1.0 - t_mul)
        bounds = []
        for i in range(1, RESTARTS + 1):
            b = first * (1.0 - t_mul**i) / (1.0 - t_mul)
            if limit - b < 1.0:
                break
            bounds.append(b)
        # Past the last period: TF takes the log of a non-positive number.
        steps |= {math.floor(limit), math.ceil(limit), math.ceil(limit) + 1, 2 * math.ceil(limit)}
    for b in bounds:
        lo = math.floor(b)
        steps |= {lo - 1, lo, lo + 1, lo + 2}
    return sorted(s for s in steps if 0 <= s <= MAX_STEP)


def multiples(ds, count=MULTIPLES):
    steps = {0, 1}
    for k in range(1, count + 1):
        steps |= {k * ds - 1, k * ds, k * ds + 1}
    # Multiples where step * fl(1/ds) does not round to k.
    r = np.float32(1.0) / np.float32(ds)
    off = [k * ds for k in range(1, MAX_STEP // ds + 1) if np.float32(np.float32(k * ds) * r) != k]
    for s in off[:MULTIPLES]:
        steps |= {s - 1, s, s + 1}
    return sorted(x for x in steps if 0 <= x <= MAX_STEP)


def cases():
    out = []
    combos = [(0.9, 0.1), (1.0, 0.0), (0.5, 0.05)]
    n = 0
    for t_mul in [2.0, 1.25, 1.5, 3.0, 1.1, 0.8, 0.5, 1.0]:
        for first in [1, 4, 7, 17, 20, 41, 100]:
            m_mul, alpha = combos[n % len(combos)]
            n += 1
            args = dict(learning_rate=0.2, first_decay_steps=first, t_mul=t_mul, m_mul=m_mul, alpha=alpha)
            out.append(("cosine_decay_restarts", args, restart_steps(first, t_mul)))
    for ds in [41, 7, 3, 100, 49]:
        for staircase in [True, False]:
            out.append(("exponential_decay", dict(learning_rate=0.1, decay_steps=ds, decay_rate=0.5, staircase=staircase), multiples(ds)))
            out.append(("natural_exp_decay", dict(learning_rate=0.1, decay_steps=ds, decay_rate=0.3, staircase=staircase), multiples(ds)))
            out.append(("inverse_time_decay", dict(learning_rate=0.1, decay_steps=ds, decay_rate=0.7, staircase=staircase), multiples(ds)))
    for ds in [7, 13, 41, 100]:
        for power in [1.0, 2.0, 3.0, 0.5, 1.7]:
            for cycle in [True, False]:
                out.append(("polynomial_decay", dict(learning_rate=0.1, decay_steps=ds, end_learning_rate=0.001, power=power, cycle=cycle), multiples(ds, 6)))
    for ds in [7, 17, 100]:
        for alpha in [0.0, 0.1]:
            out.append(("cosine_decay", dict(learning_rate=0.1, decay_steps=ds, alpha=alpha), multiples(ds, 2) + list(range(ds // 2 - 2, ds // 2 + 3))))
        for num_periods, alpha, beta in [(0.5, 0.0, 0.001), (2.0, 0.1, 0.01), (1.3, 0.0, 0.0)]:
            out.append(("linear_cosine_decay", dict(learning_rate=0.1, decay_steps=ds, num_periods=num_periods, alpha=alpha, beta=beta), multiples(ds, 2)))
    return out


def number(x):
    x = float(np.float32(x))
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def main():
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    result = []
    for function, args, steps in cases():
        graph = tf.Graph()
        with graph.as_default():
            global_step = tf.compat.v1.placeholder(tf.int64, [])
            lr = getattr(tf.compat.v1.train, function)(global_step=global_step, **args)
            with tf.compat.v1.Session(config=config) as sess:
                values = [{"global_step": s, "value": number(sess.run(lr, {global_step: s}))} for s in sorted(set(steps))]
        result.append({
            "function": "tf.compat.v1.train." + function,
            "args": args,
            "output_dtype": "float32",
            "values": values,
        })
    meta = {
        "tensorflow_version": tf.__version__,
        "numpy_version": np.__version__,
        "mode": "graph (tf.compat.v1.disable_eager_execution, tf.compat.v1.Session), default Grappler rewrites",
        "session_config": "intra_op_parallelism_threads=1, inter_op_parallelism_threads=1",
        "env": {"TF_ENABLE_ONEDNN_OPTS": os.environ["TF_ENABLE_ONEDNN_OPTS"]},
        "number_encoding": "float32 values written as repr(float64(value)) (exact); non-finite as strings 'nan','inf','-inf'",
        "generator": "tools/schedule_boundaries.py (python tools/schedule_boundaries.py > tests/golden/extra/schedule_boundaries.json)",
        "description": "Each case in a graph of its own: global_step = tf.compat.v1.placeholder(tf.int64, []), "
        "lr = tf.compat.v1.train.<function>(global_step=global_step, **args), one Session.run per step. "
        "Steps at and around every boundary where a floor, ceil or restart changes the value. "
        "Grappler (on by default) rewrites x / c for a constant c into x * (1 / c) in float32 and folds "
        "constant factors together, which decides on which side of a boundary a step lands.",
    }
    # One line per case (the values are many and short).
    lines = ['{', ' "_meta": ' + json.dumps(meta, indent=1).replace("\n", "\n ") + ',', ' "cases": [']
    lines.append(",\n".join("  " + json.dumps(c) for c in result))
    lines += [' ]', '}']
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
