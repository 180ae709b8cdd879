"""Inference throughput: `specc predict` against TensorFlow and JAX doing the same
inference with the same weights (read from specc's checkpoint), in the same run.

Two models (issue 9, "Predict"):
  digits  specs/digits_mlp.spec (probs = softmax(logits), class = argmax) over the
          digits rows repeated to --rows rows
  ctr     specs/ctr_ftrl.spec (probability = sigmoid(logit)) over the W5 CTR file:
          eight hashed columns, two crosses, three numeric columns, linear_model;
          TF builds the same tf.feature_column model (the same variable names, so its
          Saver restores specc's checkpoint); JAX has no string hashing or feature
          columns, so it is not a CTR peer.

Each peer is timed two ways, each the median of --reps runs:
  file    CSV file on disk to the predictions on disk (CSV): reading, parsing (and
          hashing), the model, writing. specc: `specc predict` in a fresh process
          (its wall time less its compile time is also reported).
  memory  the model alone on the parsed inputs already in memory: specc through its
          library API (`Model::predict`, the example `predict_throughput`, batches of
          the spec's batch size), TF (tf.function) and JAX (jit) on numpy arrays in
          batches of 1024 (CTR: specc only; TF's feature columns need its pipeline).
Rows/s is rows / seconds. Run from the repository root:

  python benches/predict_peers.py --specc target/release/specc --ctr CTR.csv

(the CTR file: `python ../shared/bench/peers/make_ctr.py --rows 1000000 --seed 1 --out CTR.csv`).
Trains each spec first with `specc run --checkpoint-dir` (untimed).
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


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr}")
    return r


def train(specc, spec, data, ckpt, extra=()):
    run([specc, "run", spec, "--data", data, "--checkpoint-dir", ckpt, *extra])


def time_specc(specc, spec, ckpt, data, out, reps):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        run([specc, "predict", spec, "--checkpoint", ckpt, "--data", data, "-o", out])
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def specc_memory(specc, spec, ckpt, data, reps):
    """The library API's predict on rows already in memory (the example
    `predict_throughput`, built next to the specc binary): (rows, seconds)."""
    exe = os.path.join(os.path.dirname(specc), "examples", "predict_throughput")
    if not os.path.exists(exe):
        print(f"note: {exe} not built (cargo build --release --example predict_throughput); "
              "no specc memory row", file=sys.stderr)
        return None
    r = json.loads(run([exe, spec, ckpt, data, str(reps)]).stdout.strip().splitlines()[-1])
    return r["rows"], r["seconds"]


def median_time(f, reps):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def digits(args, tmp):
    import pandas as pd
    import tensorflow as tf

    src = pd.read_csv("specs/data/digits.csv")
    reps = -(-args.rows // len(src))
    big = pd.concat([src] * reps, ignore_index=True).iloc[: args.rows]
    data = os.path.join(tmp, "digits_big.csv")
    big.to_csv(data, index=False)
    ckpt = os.path.join(tmp, "digits_ckpt")
    train(args.specc, "specs/digits_mlp.spec", "specs/data/digits.csv", ckpt, ("--steps", "3000"))
    reader = tf.train.load_checkpoint(ckpt)
    w = {k: reader.get_tensor(k) for k in ["W1", "b1", "W2", "b2"]}
    px = [f"px{i}" for i in range(64)]
    out = os.path.join(tmp, "digits_out.csv")
    rows = len(big)
    results = []

    t = time_specc(args.specc, "specs/digits_mlp.spec", ckpt, data, out, args.reps)
    specc_out = pd.read_csv(out)
    results.append(("specc", "file", rows, t))
    m = specc_memory(args.specc, "specs/digits_mlp.spec", ckpt, data, args.reps)
    if m:
        results.append(("specc", "memory", m[0], m[1]))

    # TensorFlow: the same MLP as a tf.function over batches of 1024.
    W1, b1, W2, b2 = (tf.constant(w[k]) for k in ["W1", "b1", "W2", "b2"])

    @tf.function(jit_compile=False)
    def tf_model(x):
        logits = tf.nn.relu(x @ W1 + b1) @ W2 + b2
        return tf.nn.softmax(logits), tf.argmax(logits, 1)

    def tf_file():
        x = pd.read_csv(data)[px].to_numpy(np.float32) / 16
        probs, cls = [], []
        for i in range(0, len(x), 1024):
            p, c = tf_model(x[i:i + 1024])
            probs.append(p.numpy())
            cls.append(c.numpy())
        p, c = np.concatenate(probs), np.concatenate(cls)
        frame = pd.DataFrame(p, columns=[f"probs_{k}" for k in range(10)])
        frame["class"] = c
        frame.to_csv(out, index=False)
        return p, c

    p, c = tf_file()
    # The same predictions as specc's (the same weights, float32).
    agree = float(np.mean(specc_out["class"].to_numpy() == c))
    worst = float(np.max(np.abs(specc_out[[f"probs_{k}" for k in range(10)]].to_numpy() - p)))
    results.append(("tf", "file", rows, median_time(tf_file, args.reps)))
    x = big[px].to_numpy(np.float32) / 16

    def tf_memory():
        for i in range(0, len(x), 1024):
            p, c = tf_model(x[i:i + 1024])
        p.numpy()

    tf_memory()
    results.append(("tf", "memory", rows, median_time(tf_memory, args.reps)))

    import jax
    import jax.numpy as jnp

    jw = {k: jnp.asarray(v) for k, v in w.items()}

    @jax.jit
    def jax_model(x):
        logits = jax.nn.relu(x @ jw["W1"] + jw["b1"]) @ jw["W2"] + jw["b2"]
        return jax.nn.softmax(logits), jnp.argmax(logits, 1)

    def jax_memory():
        for i in range(0, len(x) - 1023, 1024):
            p, c = jax_model(x[i:i + 1024])
        p.block_until_ready()

    jax_memory()
    results.append(("jax", "memory", rows, median_time(jax_memory, args.reps)))

    def jax_file():
        xx = pd.read_csv(data)[px].to_numpy(np.float32) / 16
        probs, cls = [], []
        for i in range(0, len(xx) - 1023, 1024):
            p, c = jax_model(xx[i:i + 1024])
            probs.append(np.asarray(p))
            cls.append(np.asarray(c))
        frame = pd.DataFrame(np.concatenate(probs), columns=[f"probs_{k}" for k in range(10)])
        frame["class"] = np.concatenate(cls)
        frame.to_csv(out, index=False)

    results.append(("jax", "file", rows, median_time(jax_file, args.reps)))
    return results, {"class_agreement_with_tf": agree, "max_abs_prob_diff_vs_tf": worst}


def ctr(args, tmp):
    import pandas as pd
    import tensorflow as tf

    data = args.ctr
    ckpt = os.path.join(tmp, "ctr_ckpt")
    # The W5 model trained one pass (untimed), the checkpoint at the end.
    train(args.specc, "specs/ctr_ftrl.spec", data, ckpt)
    out = os.path.join(tmp, "ctr_out.csv")
    rows = sum(1 for _ in open(data)) - 1
    results = []
    t = time_specc(args.specc, "specs/ctr_ftrl.spec", ckpt, data, out, args.reps)
    specc_p = pd.read_csv(out)["probability"].to_numpy()
    results.append(("specc", "file", rows, t))
    m = specc_memory(args.specc, "specs/ctr_ftrl.spec", ckpt, data, args.reps)
    if m:
        results.append(("specc", "memory", m[0], m[1]))

    tf1 = tf.compat.v1
    cat = ["hour_of_day", "device_type", "country", "site", "device_model", "advertiser",
           "ad_id", "user_id"]
    num = ["bid_price", "session_depth", "user_hist_ctr"]
    names = ["click"] + cat + num
    fc = tf1.feature_column
    defaults = [[0.0]] + [[""]] * len(cat) + [[0.0]] * len(num)

    # One graph per timed run (its iterator is one-shot): built and restored
    # untimed; timed from the first batch to the predictions written.
    def tf_run():
        g2 = tf.Graph()
        with g2.as_default():
            cols2 = [fc.categorical_column_with_hash_bucket(c, 2 ** 18) for c in cat]
            cols2 += [fc.crossed_column(["advertiser", "site"], 2 ** 18),
                      fc.crossed_column(["hour_of_day", "device_type"], 2 ** 18)]
            cols2 += [fc.numeric_column("bid_price", normalizer_fn=tf.math.log1p),
                      fc.numeric_column("session_depth", normalizer_fn=tf.math.log1p),
                      fc.numeric_column("user_hist_ctr")]
            ds2 = tf.data.TextLineDataset(data).skip(1).batch(1024)
            ds2 = ds2.map(lambda l: dict(zip(names, tf.io.decode_csv(l, defaults)))).prefetch(2)
            feats2 = tf1.data.make_one_shot_iterator(ds2).get_next()
            logits2 = fc.linear_model(feats2, cols2, units=1, sparse_combiner="sum")
            prob2 = tf.sigmoid(tf.reshape(logits2, [-1]))
            saver2 = tf1.train.Saver(var_list=tf1.global_variables())
            with tf1.Session(graph=g2) as s2:
                saver2.restore(s2, tf.train.latest_checkpoint(ckpt))
                t = time.perf_counter()
                probs = []
                try:
                    while True:
                        probs.append(s2.run(prob2))
                except tf.errors.OutOfRangeError:
                    pass
                p = np.concatenate(probs)
                pd.DataFrame({"probability": p}).to_csv(out, index=False)
                return time.perf_counter() - t, p

    times = []
    for _ in range(args.reps):
        t, p = tf_run()
        times.append(t)
    worst = float(np.max(np.abs(p - specc_p)))
    results.append(("tf", "file", rows, statistics.median(times)))
    return results, {"max_abs_prob_diff_vs_tf": worst}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--specc", default="target/release/specc")
    ap.add_argument("--rows", type=int, default=1_000_000, help="digits rows (the data repeated)")
    ap.add_argument("--ctr", help="the W5 CTR CSV (skip the CTR model without it)")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="specc-predict-bench-")
    try:
        for name, f in [("digits", digits), ("ctr", ctr)]:
            if name == "ctr" and not args.ctr:
                continue
            results, checks = f(args, tmp)
            for peer, mode, rows, t in results:
                print(json.dumps({"model": name, "peer": peer, "mode": mode, "rows": rows,
                                  "seconds": round(t, 4), "rows_per_s": round(rows / t)}))
            print(json.dumps({"model": name, **checks}))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
