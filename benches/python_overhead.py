#!/usr/bin/env python3
"""What specc's Python package costs beside the CLI and the Rust library
(issue 31's two figures; docs/python.md, "Performance").

1. fit: ``Model.fit`` from a pandas DataFrame against ``specc run`` on the
   same data as CSV: the wall clock of the whole job (reading the data,
   compiling, training, the final evaluations), same spec, same steps, same
   bits. Side A is ``specc run SPEC --steps N --json`` as a subprocess,
   timed around it. Side B is a fresh ``python`` subprocess that times
   ``pd.read_csv`` + ``specc.compile`` + ``fit`` (its interpreter start and
   imports are reported apart, as "process"). Side C is ``fit`` alone, in
   this process, on a DataFrame read once. Target: B within 5% of A.
2. train_step: one ``Model.train_step(batch)`` call from Python against
   ``specc::Model::train_step`` from Rust (``examples/train_step_loop.rs``)
   on the same arrays, each in a fresh process: warm-up steps, then timed
   blocks of calls; a round's figure is its blocks' median ns per call.
   Side C is the extension's own call (``Model._m.train_step``) on arrays
   already converted. Target: Python - Rust at most 5 us.

Sides run interleaved (A, B, C, A, B, C, ... one round at a time); the
table gives each side's median over the rounds and its min-max, with the
CPU model beside every figure. Both sides of a pair must train the same
thing: the same last loss (fit: also the final evaluations; train_step:
the same f32 bits after the same number of steps), or the script stops
with an error.

    cargo build --release --bin specc --example train_step_loop
    VENV/bin/python benches/python_overhead.py [--rounds N] [--quick] [--part fit|step|all]
        [--fit-scale X] [--json OUT]

VENV has numpy, pandas and a release wheel of specc (see docs/python.md).
``--quick`` is a smoke run (tiny counts, two rounds): it checks that the
harness works, its figures mean nothing.
"""

import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# fit cases: (name, spec, csv, training steps: about 3 s of training at the
# 25,000 and 160,000 steps/s of a quiet AMD EPYC Zen 5; --fit-scale
# multiplies them, --quick makes them 300). A job's fixed costs (the data
# read, the compiles) are then what a few-seconds job pays.
FIT_CASES = [
    ("digits_mlp", "specs/digits_mlp.spec", "specs/data/digits.csv", 75000),
    ("titanic", "specs/titanic.spec", "specs/data/titanic.csv", 400000),
]

# train_step cases: (name, spec, rows, warm-up steps, blocks, calls per block).
STEP_CASES = [
    ("tiny_logreg", "benches/python_overhead_tiny.spec", 8, 20000, 15, 20000),
    ("digits_mlp", "specs/digits_mlp.spec", 64, 500, 15, 500),
]
QUICK_STEP = (200, 3, 200)  # warm-up, blocks, calls


def cpu_model():
    """The CPU's model name (/proc/cpuinfo), or the platform's."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def last_json(stdout, what):
    """The JSON object on the last line of a child's stdout."""
    lines = [l for l in stdout.splitlines() if l.strip()]
    if not lines:
        raise SystemExit(f"{what}: printed nothing")
    return json.loads(lines[-1])


def child(cmd, what):
    """Runs cmd (in the repository); (wall seconds, its JSON line)."""
    t = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(
            f"{what} failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}"
        )
    return wall, last_json(p.stdout, what)


# ---- workers (run in a fresh process by the harness) ----


def step_batch(model, rows):
    """The fixed batch examples/train_step_loop.rs makes (its batch_value),
    built with numpy: the same float32 bits."""
    import numpy as np

    batch = {}
    for j, inp in enumerate(model.inputs):
        k = np.arange(rows * inp["per_example"], dtype=np.int64)
        if inp["integer"] or inp["label"]:
            v = (k % 2).astype(np.float32)
        else:
            v = ((k * 7919 + j * 104729) % 1000).astype(np.float32) / np.float32(1000)
        batch[inp["name"]] = v.reshape(rows, inp["per_example"])
    return batch


def worker_fit(spec, csv, steps):
    import pandas as pd

    import specc

    t0 = time.perf_counter()
    df = pd.read_csv(csv)
    t1 = time.perf_counter()
    model = specc.compile(spec)
    t2 = time.perf_counter()
    r = model.fit(df, steps=steps, progress=False)
    t3 = time.perf_counter()
    print(json.dumps({"job_s": t3 - t0, "read_s": t1 - t0, "compile_s": t2 - t1,
                      "fit_s": t3 - t2, "result": r}))


def worker_step(spec, rows, warmup, blocks, calls, raw):
    import specc

    model = specc.compile(spec)
    batch = step_batch(model, rows)
    if raw:  # the extension's call on arrays already converted
        from specc._model import _arrays

        step, arg = model._m.train_step, _arrays(batch)
    else:
        step, arg = model.train_step, batch
    loss = float("nan")
    for _ in range(warmup):
        loss = step(arg)
    per_call = []
    clock = time.perf_counter_ns
    for _ in range(blocks):
        t = clock()
        for _ in range(calls):
            loss = step(arg)
        per_call.append((clock() - t) / calls)
    print(json.dumps({"ns_per_call": statistics.median(per_call), "blocks_ns": per_call,
                      "global_step": model.global_step, "loss": loss,
                      "loss_bits": f32_bits(loss)}))


# ---- the harness ----


def summary(xs):
    return statistics.median(xs), min(xs), max(xs)


def fmt(xs, scale=1.0, digits=3):
    m, lo, hi = summary([x * scale for x in xs])
    return f"{m:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def verdict(args, met):
    """Whether a figure meets its target (a --quick run's figures say nothing)."""
    return "(quick)" if args.quick else "ok" if met else "OVER"


def same_fit(name, run, fit):
    """Fails loudly unless `specc run --json` and fit trained the same."""
    pairs = [("last loss", run["last_loss"], fit["loss"]),
             ("steps", run["global_step"], fit["global_step"])]
    for key, fkey in (("train", "train"), ("eval", "held_out")):
        a, b = run.get(key), fit.get(fkey)
        if (a is None) != (b is None):
            raise SystemExit(f"{name}: `specc run` and fit differ: {key} {a} vs {b}")
        for m in a or {}:
            pairs.append((f"{key} {m}", a[m], b.get(m)))
    bad = [(k, a, b) for k, a, b in pairs if a != b]
    if bad:
        raise SystemExit(f"{name}: `specc run` and fit did not train the same: {bad}")


def part_fit(args, cpu, out):
    import pandas as pd

    import specc

    rows = []
    for name, spec, csv, steps in FIT_CASES:
        steps = 300 if args.quick else max(1, round(steps * args.fit_scale))
        a, b, proc, c, parts = [], [], [], [], []
        df = pd.read_csv(os.path.join(ROOT, csv))
        for r in range(args.rounds):
            wall, run = child([args.specc, "run", spec, "--steps", str(steps), "--json"],
                              f"specc run {spec}")
            a.append(wall)
            wall, w = child([args.python, __file__, "--worker", "fit", spec, csv, str(steps)],
                            f"fit worker {spec}")
            same_fit(name, run, w["result"])
            b.append(w["job_s"])
            proc.append(wall)
            parts.append(w)
            model = specc.compile(os.path.join(ROOT, spec))
            t = time.perf_counter()
            fit = model.fit(df, steps=steps, progress=False)
            c.append(time.perf_counter() - t)
            same_fit(name, run, fit)
            print(f"  fit {name} round {r + 1}: run {a[-1]:.3f} s, python job {b[-1]:.3f} s "
                  f"(process {proc[-1]:.3f} s), fit in process {c[-1]:.3f} s", file=sys.stderr)
        ratio = statistics.median(b) / statistics.median(a)
        rows.append(
            f"| {name} | {steps} | {fmt(a)} | {fmt(b)} | {100 * (ratio - 1):+.1f}% "
            f"{verdict(args, ratio <= 1.05)} | {fmt(proc)} | {fmt(c)} | {cpu} |"
        )
        out.append({"part": "fit", "case": name, "steps": steps, "cpu": cpu,
                    "specc_run_s": a, "python_job_s": b, "python_process_s": proc,
                    "fit_in_process_s": c, "python_parts": parts})
    print(f"\n`fit` from a DataFrame against `specc run` on the CSV: wall seconds, "
          f"median [min, max] of {args.rounds} interleaved rounds\n")
    print("| spec | steps | `specc run` (A) | read_csv + compile + fit (B) | B vs A (target +5%) "
          "| B's process (with imports) | fit alone, in process | CPU |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows), flush=True)


def part_step(args, cpu, out):
    rows = []
    for name, spec, n, warmup, blocks, calls in STEP_CASES:
        if args.quick:
            warmup, blocks, calls = QUICK_STEP
        counts = [str(n), str(warmup), str(blocks), str(calls)]
        a, b, c, over = [], [], [], []
        for r in range(args.rounds):
            _, rust = child([args.step_loop, spec] + counts, f"train_step_loop {spec}")
            _, py = child([args.python, __file__, "--worker", "step", spec] + counts,
                          f"train_step worker {spec}")
            _, raw = child([args.python, __file__, "--worker", "step-raw", spec] + counts,
                           f"train_step worker (raw) {spec}")
            for side in (py, raw):
                if (side["loss_bits"], side["global_step"]) != (rust["loss_bits"],
                                                                 rust["global_step"]):
                    raise SystemExit(
                        f"{name}: Rust and Python did not train the same: Rust loss "
                        f"{rust['loss']} at step {rust['global_step']}, Python "
                        f"{side['loss']} at step {side['global_step']}")
            a.append(rust["ns_per_call"])
            b.append(py["ns_per_call"])
            c.append(raw["ns_per_call"])
            over.append(b[-1] - a[-1])
            print(f"  train_step {name} round {r + 1}: Rust {a[-1]:.0f} ns, Python "
                  f"{b[-1]:.0f} ns, extension {c[-1]:.0f} ns", file=sys.stderr)
        m = statistics.median(over)
        rows.append(
            f"| {name} | {n} | {fmt(a, digits=0)} | {fmt(b, digits=0)} | "
            f"{fmt(over, digits=0)} {verdict(args, m <= 5000)} | {fmt(c, digits=0)} | {cpu} |"
        )
        out.append({"part": "train_step", "case": name, "rows": n, "warmup": warmup,
                    "blocks": blocks, "calls": calls, "cpu": cpu, "rust_ns": a,
                    "python_ns": b, "extension_ns": c})
    print(f"\nOne `train_step` call: ns per call, median [min, max] of {args.rounds} "
          f"interleaved rounds (each round: the median of its blocks)\n")
    print("| spec | rows | Rust `Model::train_step` (A) | Python `Model.train_step` (B) "
          "| B - A (target 5000) | the extension's call alone | CPU |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 7; --quick 2)")
    p.add_argument("--quick", action="store_true", help="a smoke run: tiny counts")
    p.add_argument("--part", choices=["fit", "step", "all"], default="all",
                   help="fit: Model.fit against specc run; step: train_step against Rust")
    p.add_argument("--fit-scale", type=float, default=1.0,
                   help="multiply the fit part's steps (default 1: about 3 s of training)")
    p.add_argument("--json", metavar="OUT", help="also write every round's figures as JSON")
    p.add_argument("--specc", default=os.path.join(ROOT, "target/release/specc"))
    p.add_argument("--step-loop", default=os.path.join(ROOT, "target/release/examples/train_step_loop"))
    p.add_argument("--python", default=sys.executable, help="the Python of side B (default: this one)")
    p.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        kind, rest = args.worker[0], args.worker[1:]
        if kind == "fit":
            worker_fit(rest[0], rest[1], int(rest[2]))
        else:
            worker_step(rest[0], *map(int, rest[1:5]), raw=kind == "step-raw")
        return
    if args.rounds is None:
        args.rounds = 2 if args.quick else 7
    for exe in (args.specc, args.step_loop):
        if not os.path.exists(exe):
            raise SystemExit(f"no {exe}: cargo build --release --bin specc --example train_step_loop")
    cpu = cpu_model()
    out = []
    if args.part in ("fit", "all"):
        part_fit(args, cpu, out)
    if args.part in ("step", "all"):
        part_step(args, cpu, out)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
