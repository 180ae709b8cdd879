"""A table read by several lookups trains sparsely, as TensorFlow's does.

`shared_embeddings([name, sex])` (TF's `shared_embedding_columns`) is one
table looked up once per column. TF sums the two lookups' gradients as one
`IndexedSlices` (`aggregate_indexed_slices_gradients`) and its optimizers
apply them sparsely: under Momentum and FTRL, a row the batch does not look
up keeps its value and its slots (a dense update of the summed gradient
would decay Momentum's accumulated velocity into every row, and FTRL's
would set every untouched row to its closed-form value, zero). specc and
TF's graph (`tf.compat.v1` feature columns, `input_layer`, the same
optimizer) start from the same values (constants written into the spec),
train on the same batches (the rows in two alternating halves, so rows are
looked up in some steps and not in others), and every variable and slot,
named alike, equals specc's to 1e-5 relative.

The rows (a subset of the Titanic data), the hash buckets and the step count
are drawn from SPECC_INTEROP_SEED (any seed passes).
"""

import csv
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

SEED = int(os.environ.get("SPECC_INTEROP_SEED", "2026"))
ROOT = Path(__file__).resolve().parent.parent

OPTIMIZERS = {
    "momentum": ("momentum(learning_rate = 0.1, momentum = 0.9)",
                 lambda: tf.compat.v1.train.MomentumOptimizer(0.1, 0.9)),
    "ftrl": ("ftrl(learning_rate = 0.2, l1_regularization_strength = 0.001)",
             lambda: tf.compat.v1.train.FtrlOptimizer(0.2, l1_regularization_strength=0.001)),
}


def text_of(values):
    """A nested list of numbers, as the spec's `constant(value = ...)`."""
    if values.ndim == 0:
        return repr(float(values))
    return "[" + ", ".join(text_of(v) for v in values) + "]"


def spec_text(half, buckets, optimizer, table, w):
    return f"""model shared
data csv("data/titanic.csv")
label survived: vocabulary ["no", "yes"]
features {{
  name = categorical_column_with_hash_bucket(name, {buckets})
  sex  = categorical_column_with_hash_bucket(sex, {buckets})
  deep = input_layer(shared_embeddings([name, sex], dimension = 4,
                                       initializer = constant(value = {text_of(table)})))
}}
params {{
  w: [8, 1] = constant(value = {text_of(w)})
  b: [1] = zeros
}}
logits = reshape(deep @ w + b, [B])
loss = mean(sigmoid_cross_entropy(cast(survived, float32), logits))
optimizer {optimizer}
train {{ batch = {half}, steps = 1, shuffle = 0, eval_fraction = 0 }}
"""


def tf_train(halves, buckets, make_optimizer, table, w0, steps):
    """TF's graph from the same initial values, `steps` steps on the halves
    in turn; its variables."""
    with tf.Graph().as_default():
        fc = tf.compat.v1.feature_column
        name_in = tf.compat.v1.placeholder(tf.string, [None, 1])
        sex_in = tf.compat.v1.placeholder(tf.string, [None, 1])
        label_in = tf.compat.v1.placeholder(tf.float32, [None])
        features = {"name": name_in, "sex": sex_in}
        name = tf.feature_column.categorical_column_with_hash_bucket("name", buckets)
        sex = tf.feature_column.categorical_column_with_hash_bucket("sex", buckets)
        columns = fc.shared_embedding_columns(
            [name, sex], 4, initializer=tf.constant_initializer(table))
        deep = fc.input_layer(features, columns)
        w = tf.compat.v1.get_variable("w", initializer=tf.constant(w0))
        b = tf.compat.v1.get_variable("b", [1], initializer=tf.zeros_initializer())
        logits = tf.reshape(tf.matmul(deep, w) + b, [-1])
        loss = tf.reduce_mean(
            tf.nn.sigmoid_cross_entropy_with_logits(labels=label_in, logits=logits))
        step = tf.compat.v1.train.get_or_create_global_step()
        train = make_optimizer().minimize(loss, global_step=step)
        feeds = [{name_in: [[r["name"]] for r in h],
                  sex_in: [[r["sex"]] for r in h],
                  label_in: [1.0 if r["survived"] == "yes" else 0.0 for r in h]}
                 for h in halves]
        with tf.compat.v1.Session() as s:
            s.run(tf.compat.v1.global_variables_initializer())
            for k in range(steps):
                s.run(train, feeds[k % 2])
            return {v.op.name: s.run(v) for v in tf.compat.v1.global_variables()}


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_a_shared_embedding_table_trains_sparsely_as_tf(specc, tmp_path, optimizer):
    spec_opt, make_optimizer = OPTIMIZERS[optimizer]
    rng = np.random.default_rng(SEED)
    with open(ROOT / "specs" / "data" / "titanic.csv", newline="") as f:
        all_rows = list(csv.DictReader(f))
    half = int(rng.integers(20, 60))
    picked = sorted(rng.choice(len(all_rows), 2 * half, replace=False))
    rows = [all_rows[i] for i in picked]
    halves = [rows[:half], rows[half:]]
    buckets = int(rng.integers(64, 256))
    steps = int(rng.integers(6, 16))
    # Values of three decimals: the same float32 in the spec's text and in TF.
    table = np.round(rng.uniform(-0.5, 0.5, (buckets, 4)), 3).astype(np.float32)
    w0 = np.round(rng.uniform(-0.7, 0.7, (8, 1)), 3).astype(np.float32)
    (tmp_path / "data").mkdir()
    with open(tmp_path / "data" / "titanic.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(all_rows[0]))
        w.writeheader()
        w.writerows(rows)
    (tmp_path / "spec.spec").write_text(spec_text(half, buckets, spec_opt, table, w0))
    subprocess.run([specc, "run", "spec.spec", "--steps", str(steps), "--checkpoint-dir", "ckpt"],
                   cwd=tmp_path, check=True, capture_output=True, text=True)
    last = tf.train.latest_checkpoint(str(tmp_path / "ckpt"))
    want = tf_train(halves, buckets, make_optimizer, table, w0, steps)

    reader = tf.train.load_checkpoint(last)
    ours = {n for n, _ in tf.train.list_variables(last) if not n.startswith("specc/")}
    assert ours == set(want), "the same variables and slots by name"
    assert int(reader.get_tensor("global_step")) == steps
    name = "input_layer/name_sex_shared_embedding/embedding_weights"
    assert name in want, sorted(want)
    for v in sorted(want):
        np.testing.assert_allclose(reader.get_tensor(v), want[v],
                                   rtol=1e-5, atol=1e-6, err_msg=v)
    # Not vacuous: some rows were looked up and moved, and some were not.
    moved = np.any(reader.get_tensor(name) != table, axis=1)
    assert 0 < moved.sum() < buckets
