"""Latency of one row and throughput of a batch: specc's AOT object (`specc export
--format object`, linked into a C program) against LiteRT running the same model
exported as TensorFlow Lite (`specc export --format tflite`), on digits_mlp's logits.

  python benches/aot_vs_litert.py --specc target/release/specc

Trains digits_mlp (untimed), exports both, then times, on one thread:
  - 1 row: the median over many calls of one call with one row;
  - a batch of B rows (B = 64 and 4096): rows / median seconds of one call.
The C harness calls `specc_predict` in a loop with FTZ/DAZ set (as specc runs);
LiteRT calls `invoke()` on an interpreter resized to the batch
(`num_threads=1`). Prints one JSON line per measurement.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <xmmintrin.h>
#include <pmmintrin.h>
#include "model.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int rows = atoi(argv[1]), reps = atoi(argv[2]);
    _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
    _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
    float *in = malloc(sizeof(float) * rows * SPECC_PREDICT_INPUT_WIDTH);
    float *out = malloc(sizeof(float) * rows * SPECC_PREDICT_OUTPUT_WIDTH);
    for (long i = 0; i < (long)rows * SPECC_PREDICT_INPUT_WIDTH; i++) in[i] = (float)(i % 17) / 16.0f;
    double *t = malloc(sizeof(double) * reps);
    for (int w = 0; w < 10; w++) specc_predict(in, out, rows);
    for (int r = 0; r < reps; r++) {
        double a = now();
        specc_predict(in, out, rows);
        t[r] = now() - a;
    }
    qsort(t, reps, sizeof(double), cmp);
    printf("%.9f %f\n", t[reps / 2], out[0]);
    return 0;
}
"""


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr}")
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--specc", default="target/release/specc")
    args = ap.parse_args()
    specc = os.path.abspath(args.specc)
    tmp = tempfile.mkdtemp(prefix="specc-aot-bench-")
    try:
        spec = os.path.abspath("specs/digits_mlp.spec")
        ckpt = os.path.join(tmp, "ckpt")
        run([specc, "run", spec, "--steps", "300", "--checkpoint-dir", ckpt])
        run([specc, "export", spec, "--checkpoint", ckpt, "--format", "object",
             "-o", os.path.join(tmp, "model.o"), "--fetch", "logits"])
        run([specc, "export", spec, "--checkpoint", ckpt, "--format", "tflite",
             "-o", os.path.join(tmp, "model.tflite"), "--fetch", "logits"])
        with open(os.path.join(tmp, "main.c"), "w") as f:
            f.write(HARNESS)
        exe = os.path.join(tmp, "bench")
        run(["cc", "-O2", "-msse3", "-o", exe, os.path.join(tmp, "main.c"),
             os.path.join(tmp, "model.o"), "-lm"], cwd=tmp)

        from ai_edge_litert.interpreter import Interpreter

        for rows, reps in [(1, 20001), (64, 2001), (4096, 101)]:
            t = float(run(["taskset", "-c", "0", exe, str(rows), str(reps)]).stdout.split()[0])
            print(json.dumps({"model": "digits_mlp logits", "peer": "specc_aot", "rows": rows,
                              "seconds_per_call": t, "rows_per_s": round(rows / t)}))
            interp = Interpreter(model_path=os.path.join(tmp, "model.tflite"), num_threads=1)
            inp = interp.get_input_details()[0]
            interp.resize_tensor_input(inp["index"], [rows, 64])
            interp.allocate_tensors()
            x = (np.arange(rows * 64, dtype=np.float32).reshape(rows, 64) % 17) / 16
            interp.set_tensor(inp["index"], x)
            for _ in range(10):
                interp.invoke()
            ts = []
            for _ in range(reps):
                a = time.perf_counter()
                interp.invoke()
                ts.append(time.perf_counter() - a)
            t = statistics.median(ts)
            print(json.dumps({"model": "digits_mlp logits", "peer": "litert", "rows": rows,
                              "seconds_per_call": t, "rows_per_s": round(rows / t)}))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
