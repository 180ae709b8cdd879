#!/usr/bin/env bash
# W8 (digits_lstm) against its peers in one interleaved run: three
# rounds of specc then each fast peer (2,000 steps, default threads), then
# torch.compile once; one JSON line each (docs/performance.md, "W8").
#
#   benches/w8_interleaved.sh [OUT.jsonl]
#
# BENCH is ../shared/bench (its peers and specc_hook.py), VENV the peers'
# virtualenv (run_peers.sh makes it), SPECC a release specc binary.
set -u
cd "$(dirname "$0")/.."
BENCH="${BENCH:-../shared/bench}"
PY="${VENV:-$HOME/.cache/specc-bench-venv}/bin/python"
SPECC="${SPECC:-$PWD/target/release/specc}"
OUT="${1:-w8_bench.jsonl}"
: > "$OUT"
for round in 1 2 3; do
  "$PY" "$BENCH/peers/specc_hook.py" --workload digits_lstm --reps 1 --threads default -- \
    "$SPECC" bench specs/digits_lstm.spec --steps 2000 >> "$OUT"
  for peer in tf_function tf_function_xla jax_jit torch_eager; do
    "$PY" "$BENCH/peers/w8_digits_lstm.py" --threads default --reps 1 --peers "$peer" >> "$OUT"
  done
done
"$PY" "$BENCH/peers/w8_digits_lstm.py" --threads default --reps 1 --peers torch_compile >> "$OUT"
