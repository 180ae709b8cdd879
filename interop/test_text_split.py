"""Text in from CSV: `sep` splits a cell as `tf.strings.split` does, and the
feature columns over the pieces equal TensorFlow's over the SparseTensor.

specc trains a model whose features split CSV cells: a sentence by runs of
whitespace (`sep = whitespace`, TF's `sep=None`), genres by `"|"` (empty
pieces kept), ids by whitespace or `";"`; an `input_layer` of an
`indicator_column` and an `embedding_column` (`mean`), and a `linear_model`
over the columns and a `crossed_column` (of the split words as a raw key,
`string(text, sep = whitespace)`, and the genres; or of the genres and the
ids, both truncated). TF builds the
same columns (`tf.compat.v1.feature_column`) in graph mode over
`tf.strings.split` of the same cells (an empty cell has no values, as specc
reads the missing value TF drops from a dense column; with
`on_overflow = "truncate"`, the first `max_values` pieces), restores specc's
checkpoint by name, and its `input_layer` and `linear_model` equal the
`deep` and `wide` outputs of `specc predict` on the same CSV to 1e-5
relative.

Rows, words, lengths, vocabularies, sizes and steps are drawn from
SPECC_INTEROP_SEED (any seed passes).
"""

import csv
import json
import os
import subprocess

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

SEED = int(os.environ.get("SPECC_INTEROP_SEED", "2026"))
GENRES = ["Animation", "Children", "Comedy", "Drama", "Horror"]


def draw(rng, truncate):
    """The case: rows of (text, genres, ids, y) cells and the sizes."""
    words = [f"w{i}" for i in range(int(rng.integers(5, 30)))] + ["café", "naïve"]
    longest = int(rng.integers(3, 9))
    num_ids = int(rng.integers(3, 12))
    spaces = [" ", "  ", "\t", " \t ", "\x0b"]
    rows = []
    for _ in range(int(rng.integers(40, 120))):
        n = int(rng.integers(0, longest + 1))
        text = ""
        for k in range(n):
            text += (rng.choice(spaces) if k else "") + rng.choice(words)
        if rng.random() < 0.3:
            text = rng.choice(spaces) + text
        if rng.random() < 0.3:
            text += rng.choice(spaces)
        g = [rng.choice(GENRES + ["Noir", ""]) for _ in range(int(rng.integers(0, 4)))]
        genres = "|".join(g)
        ids = [str(int(rng.integers(0, num_ids))) for _ in range(int(rng.integers(0, 4)))]
        ids = (";" if truncate else " ").join(ids)
        rows.append({"text": text, "g": genres, "ids": ids, "y": int(rng.integers(0, 2))})
    case = {
        "rows": rows,
        "buckets": int(rng.integers(10, 200)),
        "dimension": int(rng.integers(1, 5)),
        "cross_buckets": int(rng.integers(5, 100)),
        "num_ids": num_ids,
        "oov": 0 if truncate else 1,
        "steps": int(rng.integers(5, 30)),
        "ids_sep": ";" if truncate else None,
    }
    # Enough for every row, or (truncating) fewer than the longest rows.
    case["max_words"] = max(1, longest - 2) if truncate else longest
    case["max_genres"] = 2 if truncate else 3
    case["max_ids"] = 2 if truncate else 3
    return case


def spec_text(case, truncate):
    overflow = ', on_overflow = "truncate"' if truncate else ""
    ids_sep = f'"{case["ids_sep"]}"' if case["ids_sep"] else "whitespace"
    genres = ", ".join(f'"{g}"' for g in GENRES)
    d = case["dimension"]
    if truncate:
        cross = f'crossed_column([genres, ids], hash_bucket_size = {case["cross_buckets"]})'
    else:
        most = case["max_words"] * case["max_genres"]
        cross = (f'crossed_column([string(text, sep = whitespace), genres], '
                 f'hash_bucket_size = {case["cross_buckets"]}, max_values = {most})')
    return f"""model text_split
data csv("train.csv")
label y: int
features {{
  words  = categorical_column_with_hash_bucket(text, {case["buckets"]}, sep = whitespace, max_values = {case["max_words"]}{overflow})
  genres = categorical_column_with_vocabulary_list(g, [{genres}], num_oov_buckets = {case["oov"]}, sep = "|", max_values = {case["max_genres"]}{overflow})
  ids    = categorical_column_with_identity(ids, {case["num_ids"]}, sep = {ids_sep}, max_values = {case["max_ids"]}{overflow})
  cross  = {cross}
  deep   = input_layer(indicator_column(genres), embedding_column(words, dimension = {d}), indicator_column(ids))
  wide   = linear_model(words, genres, ids, cross)
}}
params {{
  V: [{len(GENRES) + case["oov"] + d + case["num_ids"]}, 1] = glorot_uniform(seed = 1)
}}
logits = reshape(deep @ V + wide, [B])
loss   = mean(sigmoid_cross_entropy(cast(y, float32), logits))
optimizer adagrad(learning_rate = 0.3)
train {{ batch = 16, steps = {case["steps"]}, shuffle = 64, seed = 2, eval_fraction = 0 }}
outputs {{
  deep = deep
  wide = wide
}}
"""


def write_csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
        w.writerow(["text", "g", "ids", "y"])
        for r in rows:
            w.writerow([r["text"], r["g"], r["ids"], r["y"]])


def split(cells, sep, limit):
    """`tf.strings.split(cells, sep)` as a SparseTensor, an empty cell
    without values, each row's first `limit` values when given."""
    cells = tf.constant(cells)
    pieces = tf.strings.split(cells, sep=sep)
    keep = tf.repeat(tf.not_equal(cells, ""), pieces.row_lengths())
    lengths = tf.where(tf.equal(cells, ""), tf.zeros_like(pieces.row_lengths()),
                       pieces.row_lengths())
    pieces = tf.RaggedTensor.from_row_lengths(tf.boolean_mask(pieces.values, keep), lengths)
    if limit is not None:
        pieces = pieces[:, :limit]
    return pieces.to_sparse()


def tf_layers(case, truncate, prefix):
    """TF's input_layer and linear_model over the split cells, from specc's
    checkpoint."""
    rows = case["rows"]
    with tf.Graph().as_default():
        fc = tf.compat.v1.feature_column
        limit = (lambda k: case[k]) if truncate else (lambda k: None)
        ids = split([r["ids"] for r in rows], case["ids_sep"], limit("max_ids"))
        features = {
            "text": split([r["text"] for r in rows], None, limit("max_words")),
            "g": split([r["g"] for r in rows], "|", limit("max_genres")),
            "ids": tf.SparseTensor(ids.indices, tf.strings.to_number(ids.values, tf.int64),
                                   ids.dense_shape),
        }
        words = fc.categorical_column_with_hash_bucket("text", case["buckets"])
        genres = fc.categorical_column_with_vocabulary_list(
            "g", GENRES, num_oov_buckets=case["oov"])
        ids_col = fc.categorical_column_with_identity("ids", case["num_ids"])
        # TF crosses no hashed column: the words as the raw key, split.
        keys = [genres, ids_col] if truncate else ["text", genres]
        cross = fc.crossed_column(keys, hash_bucket_size=case["cross_buckets"])
        deep = fc.input_layer(features, [fc.indicator_column(genres),
                                         fc.embedding_column(words, case["dimension"]),
                                         fc.indicator_column(ids_col)])
        wide = fc.linear_model(features, [words, genres, ids_col, cross])
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as s:
            s.run(tf.compat.v1.tables_initializer())
            saver.restore(s, prefix)
            return s.run([deep, wide])


@pytest.mark.parametrize("truncate", [False, True], ids=["error", "truncate"])
def test_split_columns_equal_tf_over_tf_strings_split(specc, tmp_path, truncate):
    rng = np.random.default_rng([SEED, int(truncate)])
    case = draw(rng, truncate)
    write_csv(tmp_path / "train.csv", case["rows"])
    (tmp_path / "spec.spec").write_text(spec_text(case, truncate), encoding="utf-8")

    def run(*args):
        return subprocess.run([specc, *args], cwd=tmp_path, capture_output=True, text=True)

    if truncate:
        # The same spec without truncation refuses a row over max_values,
        # naming the file, line, column and count.
        strict = spec_text(case, truncate).replace(', on_overflow = "truncate"', "")
        (tmp_path / "strict.spec").write_text(strict, encoding="utf-8")
        out = run("run", "strict.spec")
        assert out.returncode != 0
        assert "train.csv:" in out.stderr and "more than max_values" in out.stderr, out.stderr
    out = run("run", "spec.spec", "--checkpoint-dir", "ckpt")
    assert out.returncode == 0, out.stderr
    out = run("predict", "spec.spec", "--checkpoint", "ckpt", "--data", "train.csv",
              "--output", "p.jsonl")
    assert out.returncode == 0, out.stderr
    got = [json.loads(l) for l in (tmp_path / "p.jsonl").read_text().splitlines()]
    deep, wide = tf_layers(case, truncate, tf.train.latest_checkpoint(str(tmp_path / "ckpt")))
    assert len(got) == len(case["rows"])
    np.testing.assert_allclose(np.array([r["deep"] for r in got], np.float32), deep,
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.array([r["wide"] for r in got], np.float32).reshape(-1, 1),
                               wide, rtol=1e-5, atol=1e-6)
    # The model learned something: the linear part is not all zeros.
    assert np.abs(wide).max() > 0
