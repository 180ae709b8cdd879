"""Text into a GRU: specc's sequence feature columns over CSV cells split
by `sep = whitespace`, fed to `dynamic_rnn`, against TF 2.21's.

The spec reads a CSV column of sentences as a
`sequence_categorical_column_with_vocabulary_list` (`sep = whitespace`, OOV
buckets) or `_with_hash_bucket`, embeds it per step with
`sequence_input_layer(embedding_column(..))`, runs `dynamic_rnn(gru_cell(H),
seq, sequence_length = sequence_length(seq))` (or a GRU each way in
`bidirectional_dynamic_rnn`, the final states concatenated) and classifies
the final state (`h @ W + b`, softmax cross-entropy, mean over the batch);
it takes ONE step of plain SGD of rate 1, so the checkpoint after the step
minus the one before is minus the gradient (the one before is the same
spec's with the loss times 0).

TF's `SequenceFeatures` layer is Keras 2's and TF 2.21's Keras 3 has none,
so TF builds the columns as TF1 contrib's `sequence_input_layer` did: the
`tf.feature_column` sequence column's `_get_sequence_dense_tensor` over
`tf.strings.split` of the same cells (runs of whitespace; an empty cell has
no words), under the scopes `sequence_input_layer/text_embedding`, which
gives the table's name, then `tf.compat.v1.nn.dynamic_rnn` (or
`bidirectional_dynamic_rnn`) with the legacy `GRUCell` and the same dense
layer. It restores specc's checkpoint by name; its logits equal `specc
predict`'s, and `tf.gradients` of the loss (the table's an `IndexedSlices`,
summed per row) the step's deltas, to 1e-5 relative. (TF pads to the batch's
longest sentence, specc to `max_values`: the steps between are past every
length in both.)

Rows (sentences of 0 to T words, unknown words among them), the vocabulary,
sizes and separators are drawn from SPECC_INTEROP_SEED (any seed passes).
"""

import csv
import json
import os
import zlib

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402
from tensorflow.python.feature_column import feature_column as fc_v1  # noqa: E402
from tensorflow.python.keras.layers.legacy_rnn import rnn_cell_impl as rnn_cell  # noqa: E402

from test_dynamic_rnn import assert_close, one_sgd_step  # noqa: E402

SEED = int(os.environ.get("SPECC_INTEROP_SEED", "2026"))
SPACES = [" ", "  ", "\t", " \t ", "\x0b"]


class Problem:
    """The sentences, labels, vocabulary and sizes."""

    def __init__(self, name, hashed, bidirectional):
        rng = np.random.default_rng([SEED, zlib.crc32(name.encode())])
        self.hashed, self.bidirectional = hashed, bidirectional
        words = [f"w{i}" for i in range(int(rng.integers(4, 12)))]
        self.vocab = list(rng.choice(words, int(rng.integers(2, len(words))), replace=False))
        self.oov = int(rng.integers(1, 3))
        self.buckets = int(rng.integers(2, 20))
        self.t = int(rng.integers(3, 8))
        self.d = int(rng.integers(1, 6))
        self.h = int(rng.integers(1, 7))
        self.seed = int(rng.integers(1, 1000))
        self.b = int(rng.integers(4, 13))
        self.texts, self.labels = [], []
        for i in range(self.b):
            # One empty sentence and one of T words.
            n = 0 if i == 0 else self.t if i == 1 else int(rng.integers(0, self.t + 1))
            text = ""
            for k in range(n):
                text += (rng.choice(SPACES) if k else "") + rng.choice(words)
            if rng.random() < 0.3:
                text = rng.choice(SPACES) + text
            self.texts.append(text)
            self.labels.append(int(rng.integers(0, 2)))

    def write_csv(self, path):
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["label", "text"])
            for y, text in zip(self.labels, self.texts):
                w.writerow([y, text])

    def table_rows(self):
        return self.buckets if self.hashed else len(self.vocab) + self.oov

    def spec(self, weighted):
        vocab = ", ".join(f'"{w}"' for w in self.vocab)
        scale = "" if weighted else " * 0.0"
        if self.hashed:
            column = f"sequence_categorical_column_with_hash_bucket(text, {self.buckets}"
        else:
            column = f"sequence_categorical_column_with_vocabulary_list(text, [{vocab}], num_oov_buckets = {self.oov}"
        gru = (f"gru_cell({self.h}, bias_initializer = random_uniform(minval = -0.5, maxval = 0.5, "
               f"seed = {self.seed + 2}))")
        if self.bidirectional:
            layer = f"of, ob, hf, hb = bidirectional_dynamic_rnn({gru}, {gru}, seq, sequence_length = n)\nh = concat([hf, hb], 1)"
        else:
            layer = f"outputs, h = dynamic_rnn({gru}, seq, sequence_length = n)"
        width = 2 * self.h if self.bidirectional else self.h
        return f"""model text_rnn
data csv("train.csv")
label label: int
features {{
  words = {column}, sep = whitespace, max_values = {self.t})
  seq = sequence_input_layer(embedding_column(words, dimension = {self.d}))
  n = sequence_length(seq)
}}
params {{
  W: [{width}, 2] = glorot_uniform(seed = {self.seed})
  b: [2] = random_uniform(seed = {self.seed + 1})
}}
{layer}
logits = h @ W + b
loss = mean(sparse_softmax_cross_entropy(label, logits)){scale}
optimizer gradient_descent(learning_rate = 1.0)
train {{ batch = {self.b}, steps = 1, eval_fraction = 0 }}
outputs {{
  logits = logits
}}
"""

    def tf_reference(self, prefix):
        """TF's logits and gradients by variable name, from the variables of
        the checkpoint `prefix` (restored by name)."""
        g = tf.Graph()
        with g.as_default():
            words = tf.strings.split(tf.constant(self.texts)).to_sparse()
            if self.hashed:
                column = tf.feature_column.sequence_categorical_column_with_hash_bucket(
                    "text", self.buckets)
            else:
                column = tf.feature_column.sequence_categorical_column_with_vocabulary_list(
                    "text", self.vocab, num_oov_buckets=self.oov)
            embedding = tf.feature_column.embedding_column(column, self.d)
            with tf.compat.v1.variable_scope("sequence_input_layer"):
                with tf.compat.v1.variable_scope("text_embedding"):
                    seq, length = embedding._get_sequence_dense_tensor(
                        fc_v1._LazyBuilder({"text": words}))
            if self.bidirectional:
                _, (hf, hb) = tf.compat.v1.nn.bidirectional_dynamic_rnn(
                    rnn_cell.GRUCell(self.h), rnn_cell.GRUCell(self.h), seq,
                    sequence_length=length, dtype=tf.float32)
                h = tf.concat([hf, hb], 1)
            else:
                _, h = tf.compat.v1.nn.dynamic_rnn(rnn_cell.GRUCell(self.h), seq,
                                                   sequence_length=length, dtype=tf.float32)
            w = tf.compat.v1.get_variable("W", [h.shape[1], 2])
            b = tf.compat.v1.get_variable("b", [2])
            logits = h @ w + b
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=tf.constant(self.labels), logits=logits))
            variables = tf.compat.v1.global_variables()
            grads = [tf.convert_to_tensor(gr) for gr in tf.gradients(loss, variables)]
            with tf.compat.v1.Session(graph=g) as s:
                tf.compat.v1.train.Saver(var_list=variables).restore(s, prefix)
                s.run(tf.compat.v1.tables_initializer())
                out, gr = s.run([logits, grads])
            names = [v.op.name for v in variables]
            return out, dict(zip(names, gr)), names


# (test id, hash bucket column (else a vocabulary list), bidirectional).
CASES = [
    ("vocabulary_list", False, False),
    ("hash_bucket", True, False),
    ("vocabulary_list_bidirectional", False, True),
]


def gru_names(scope):
    return {f"{scope}/gru_cell/{part}/{v}" for part in ("gates", "candidate") for v in ("kernel", "bias")}


@pytest.mark.parametrize("name,hashed,bidirectional", CASES, ids=[c[0] for c in CASES])
def test_text_through_a_gru_equals_tf(specc, tmp_path, name, hashed, bidirectional):
    pr = Problem(name, hashed, bidirectional)
    prefix, before, after = one_sgd_step(specc, tmp_path, pr)

    logits, grads, names = pr.tf_reference(prefix)
    table = "sequence_input_layer/text_embedding/embedding_weights"
    rnn = (gru_names("bidirectional_rnn/fw") | gru_names("bidirectional_rnn/bw")
           if bidirectional else gru_names("rnn"))
    assert set(names) == {table, "W", "b"} | rnn
    ours = {n for n in before.get_variable_to_shape_map()
            if n != "global_step" and not n.startswith("specc/")}
    assert ours == set(names)
    assert before.get_tensor(table).shape == (pr.table_rows(), pr.d)

    rows = [json.loads(line) for line in (tmp_path / "predicted.jsonl").read_text().splitlines()]
    assert_close(f"{name}: logits", [r["logits"] for r in rows], logits)
    for n in names:
        w0, w1 = before.get_tensor(n), after.get_tensor(n)
        ulps = 4 * np.finfo(np.float32).eps * np.abs(w0).max(initial=0.0)
        assert_close(f"{name}: gradient of {n}", w0.astype(np.float64) - w1, grads[n], floor=ulps)
    # The table's rows no sentence names get no gradient, in TF and in specc.
    untouched = ~np.any(grads[table] != 0, axis=1)
    assert np.any(~untouched)
    assert np.array_equal(before.get_tensor(table)[untouched], after.get_tensor(table)[untouched])
