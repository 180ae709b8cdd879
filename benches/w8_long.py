#!/usr/bin/env python3
"""W8 over longer sequences: W8's model (digits_lstm, ../shared/bench/WORKLOADS.md,
"W8 digits_lstm") on sequences of T steps, against the same peers, in one
interleaved run.

Definition (W8 at T): each digit's 8 rows repeated T / 8 times, so step t
is image row t mod 8 (x[n, t, d] = px{8 (t mod 8) + d} / 16, T a multiple of
8); the labels, LSTMCell(128) with its initial weights, the dense layer,
Adam 1e-3, batch 64 and the batch order are W8's. T = 8 is W8 itself. The
FLOPs per step grow linearly with T (the gate matmul at every step).

specc's side is `specc bench` of specs/digits_lstm.spec with the rows tiled
(`rows = tile(reshape(pixels, [B, 8, 8]), [1, T / 8, 1])`). The peers are
the W8 peer script's (../shared/bench/peers/w8_digits_lstm.py: tf.function
with the cell unrolled over T, JAX's lax.scan, torch.nn.LSTM), its module
constants set to T before it runs.

    python benches/w8_long.py [--t 8,64,256] [--steps 300] [--peers ...] [--out FILE]

prints one JSON line per run (specc's `specc bench` line, the peers' W8
lines with `"t"`), then a table of steps/s and milliseconds per step and per
time step. BENCH is ../shared/bench, SPECC a release specc binary; run it
with the peers' virtualenv's python.
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
BENCH = pathlib.Path(os.environ.get("BENCH", ROOT.parent / "shared" / "bench")).resolve()
SPECC = os.environ.get("SPECC", str(ROOT / "target" / "release" / "specc"))
PEERS = ["tf_function", "jax_jit", "torch_eager"]


def configure(w8, t):
    """Sets the W8 peer module's constants and data to T = t."""
    import numpy as np
    w8.T = t
    w8.NAME = f"digits_lstm_t{t}"
    w8.F_LSTM = 2 * w8.B * t * (w8.D + w8.H) * 4 * w8.H
    w8.FWD_FLOPS = w8.F_LSTM + w8.F_DENSE
    w8.FLOPS_PER_STEP = 3 * w8.FWD_FLOPS
    w8.F_DGRAD_X = 2 * w8.B * t * w8.D * 4 * w8.H
    w8.FLOPS_EXACT_PER_STEP = w8.FLOPS_PER_STEP - w8.F_DGRAD_X - w8.F_DGRAD_H0

    def load_sequences():
        x, y = w8.common.load_digits()
        return np.tile(x.reshape(-1, 8, w8.D), (1, t // 8, 1)), y

    w8.load_sequences = load_sequences


def peer_once(peer, t, steps, threads):
    """One peer's measurement in this process (the W8 script's worker)."""
    sys.path.insert(0, str(BENCH / "peers"))
    import w8_digits_lstm as w8
    w8.common.quiet_env()
    w8.common.apply_threads(threads)
    configure(w8, t)
    r = w8.worker(peer, threads, steps)
    r["t"] = t
    print(json.dumps(r), flush=True)


def specc_spec(t):
    text = (ROOT / "specs" / "digits_lstm.spec").read_text()
    data = ROOT / "specs" / "data" / "digits.csv"
    rows = "rows = reshape(pixels, [B, 8, 8])"
    assert rows in text
    text = text.replace('data csv("data/digits.csv")', f'data csv("{data}")')
    text = text.replace(rows, f"rows = tile(reshape(pixels, [B, 8, 8]), [1, {t // 8}, 1])")
    f = tempfile.NamedTemporaryFile("w", suffix=f"_t{t}.spec", delete=False)
    f.write(text)
    f.close()
    return f.name


def last_json(stdout):
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    return json.loads(lines[-1]) if lines else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--t", default="8,64,256", help="sequence lengths (multiples of 8)")
    ap.add_argument("--steps", type=int, default=300, help="steps per run (the peers time the last steps - 100)")
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--threads", default="default")
    ap.add_argument("--out", default="w8_long.jsonl")
    ap.add_argument("--peer", help=argparse.SUPPRESS)
    a = ap.parse_args()
    ts = [int(t) for t in a.t.split(",")]
    if any(t % 8 for t in ts):
        raise SystemExit("every T must be a multiple of 8")
    if a.peer:
        peer_once(a.peer, ts[0], a.steps, a.threads)
        return
    results = []
    with open(a.out, "w") as out:
        for t in ts:
            spec = specc_spec(t)
            p = subprocess.run([SPECC, "bench", spec, "--steps", str(a.steps)], capture_output=True, text=True)
            os.unlink(spec)
            r = last_json(p.stdout) or {"error": p.stderr[-600:]}
            r.update({"peer": "specc", "t": t})
            results.append(r)
            out.write(json.dumps(r) + "\n")
            print(json.dumps(r), flush=True)
            for peer in [p for p in a.peers.split(",") if p]:
                p = subprocess.run([sys.executable, __file__, "--peer", peer, "--t", str(t),
                                    "--steps", str(a.steps), "--threads", a.threads],
                                   capture_output=True, text=True)
                r = last_json(p.stdout) or {"peer": peer, "t": t, "error": p.stderr[-600:]}
                results.append(r)
                out.write(json.dumps(r) + "\n")
                print(json.dumps(r), flush=True)
    print(f"\n{'T':>5} {'peer':<14} {'steps/s':>9} {'ms/step':>9} {'us/time step':>13}")
    for r in results:
        sps = r.get("steady_steps_per_s")
        if not sps:
            print(f"{r['t']:>5} {r.get('peer', '?'):<14} error")
            continue
        ms = 1e3 / sps
        print(f"{r['t']:>5} {r['peer']:<14} {sps:>9.1f} {ms:>9.2f} {1e3 * ms / r['t']:>13.1f}")


if __name__ == "__main__":
    main()
