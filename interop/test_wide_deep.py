"""Wide & Deep with two optimizers trains as TensorFlow's graph does.

`specs/wide_deep.spec`'s model (TF's `DNNLinearCombinedClassifier`: a
`linear_model` trained by FTRL, `input_layer` and a DNN trained by Adagrad,
one global step) is built in TF's graph mode with `tf.compat.v1`'s feature
columns, `variable_scope` and the two optimizers grouped into one train op.
specc trains one step and saves a checkpoint; TF restores it (every variable,
slot and the global step, by name), trains the remaining steps on the same
batch, and each of its variables equals specc's after all steps to 1e-5
relative.

The rows (a subset of the Titanic data) and the step count are drawn from
SPECC_INTEROP_SEED (any seed passes).
"""

import csv
import os
import subprocess
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

SEED = int(os.environ.get("SPECC_INTEROP_SEED", "2026"))
ROOT = Path(__file__).resolve().parent.parent


def spec_text(rows):
    """specs/wide_deep.spec, training on every row as one batch in file order."""
    text = (ROOT / "specs" / "wide_deep.spec").read_text()
    start = text.index("train {")
    end = text.index("}", start) + 1
    train = f"train {{ batch = {rows}, steps = 1, eval_fraction = 0 }}"
    return text[:start] + train + text[end:]


def tf_train(rows, prefix, steps):
    """TF's graph: restore `prefix`, train `steps` steps; its variables."""
    with tf.Graph().as_default():
        return tf_train_in_graph(rows, prefix, steps)


def tf_train_in_graph(rows, prefix, steps):
    fc = tf.compat.v1.feature_column
    ages_v = np.array([[float(r["age"]) if r["age"] else 30.0] for r in rows], np.float32)
    features = {
        "age": tf.constant(ages_v),
        "sex": tf.constant([[r["sex"]] for r in rows]),
        "pclass": tf.constant([[r["pclass"]] for r in rows]),
        "name": tf.constant([[r["name"]] for r in rows]),
    }
    labels = tf.constant([1.0 if r["survived"] == "yes" else 0.0 for r in rows])
    age = tf.feature_column.numeric_column("age", default_value=30.0,
                                           normalizer_fn=lambda x: (x - 30.0) / 15.0)
    ages = tf.feature_column.bucketized_column(
        tf.feature_column.numeric_column("age", default_value=30.0), [10, 20, 30, 40, 50, 60])
    sex = tf.feature_column.categorical_column_with_vocabulary_list("sex", ["female", "male"])
    pclass = tf.feature_column.categorical_column_with_vocabulary_list("pclass", ["1st", "2nd", "3rd"])
    name = tf.feature_column.categorical_column_with_hash_bucket("name", 64)
    cross = tf.feature_column.crossed_column([sex, pclass], hash_bucket_size=16)
    deep = fc.input_layer(features, [age, tf.feature_column.indicator_column(sex),
                                     tf.feature_column.indicator_column(pclass),
                                     tf.feature_column.embedding_column(name, 4)])
    wide = fc.linear_model(features, [ages, sex, pclass, cross])

    def dense(h, units, activation=None, name=None):
        with tf.compat.v1.variable_scope(name, default_name="dense"):
            k = tf.compat.v1.get_variable("kernel", [h.shape[-1], units])
            b = tf.compat.v1.get_variable("bias", [units], initializer=tf.zeros_initializer())
            y = tf.matmul(h, k) + b
            return activation(y) if activation else y

    with tf.compat.v1.variable_scope(None, default_name="dnn"):
        h = dense(deep, 16, tf.nn.relu)
        h = dense(h, 8, tf.nn.relu)
        out = dense(h, 1, name="logits")
    logits = tf.reshape(out + wide, [-1])
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))
    step = tf.compat.v1.train.get_or_create_global_step()
    trainable = tf.compat.v1.trainable_variables()
    linear = [v for v in trainable if v.op.name.startswith("linear_model/")]
    deep_vars = [v for v in trainable if not v.op.name.startswith("linear_model/")]
    grads = tf.gradients(loss, linear + deep_vars)
    ftrl = tf.compat.v1.train.FtrlOptimizer(0.2)
    adagrad = tf.compat.v1.train.AdagradOptimizer(0.05)
    ops = [ftrl.apply_gradients(zip(grads[:len(linear)], linear)),
           adagrad.apply_gradients(zip(grads[len(linear):], deep_vars))]
    with tf.control_dependencies(ops):
        train = step.assign_add(1)
    saver = tf.compat.v1.train.Saver()
    with tf.compat.v1.Session() as s:
        s.run(tf.compat.v1.tables_initializer())
        saver.restore(s, prefix)
        for _ in range(steps):
            s.run(train)
        names = sorted(v.op.name for v in tf.compat.v1.global_variables())
        values = {v.op.name: s.run(v) for v in tf.compat.v1.global_variables()}
    return names, values


def test_wide_and_deep_with_ftrl_and_adagrad_equals_tf(specc, tmp_path):
    rng = np.random.default_rng(SEED)
    with open(ROOT / "specs" / "data" / "titanic.csv", newline="") as f:
        all_rows = list(csv.DictReader(f))
    n = int(rng.integers(60, 200))
    picked = sorted(rng.choice(len(all_rows), n, replace=False))
    rows = [all_rows[i] for i in picked]
    steps = int(rng.integers(20, 51))
    (tmp_path / "data").mkdir()
    with open(tmp_path / "data" / "titanic.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(all_rows[0]))
        w.writeheader()
        w.writerows(rows)
    (tmp_path / "spec.spec").write_text(spec_text(n))
    for d, k in [("first", 1), ("last", steps)]:
        subprocess.run([specc, "run", "spec.spec", "--steps", str(k), "--checkpoint-dir", d],
                       cwd=tmp_path, check=True, capture_output=True, text=True)
    first = tf.train.latest_checkpoint(str(tmp_path / "first"))
    last = tf.train.latest_checkpoint(str(tmp_path / "last"))
    names, values = tf_train(rows, first, steps - 1)

    # specc's own resume state (`specc/batch_order`) aside.
    ours = [n for n, _ in tf.train.list_variables(last) if not n.startswith("specc/")]
    assert sorted(ours) == names, "the same variables, slots and global step by name"
    reader = tf.train.load_checkpoint(last)
    assert int(reader.get_tensor("global_step")) == steps
    for name in names:
        got = reader.get_tensor(name)
        want = values[name]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)
    # Both optimizers' slots are there, under TF's names.
    assert any(n.endswith("/Ftrl_1") for n in names)
    assert "dnn/dense/kernel/Adagrad" in names
