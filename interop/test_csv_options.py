"""A CSV source's options (`data csv(...)`) against TensorFlow's CSV readers.

Each case draws a CSV file and TF's options for it: `field_delim` (`,`,
`;`, `|` or a tab), `use_quote_delim` (quoted cells holding the delimiter,
or quotes as data), `na_value`, `header` (or none, with `column_names`; or
a header renamed by `column_names`), `select_columns` (by name or index),
`column_defaults` (values, some fields `na_value` or empty), comment lines,
and a `filter` on the raw columns (numbers, the int label and an unread
string column, joined by `and` / `or`). `specc convert` writes the rows the
spec reads, with those options, to TFRecord; TensorFlow reads the same file
with `tf.data.experimental.make_csv_dataset(..., shuffle=False)` (or, with
comment lines, which TF's CSV datasets do not skip, `TextLineDataset`, a
`filter` of the comment lines and `tf.io.decode_csv`) and
`dataset.filter(lambda row: ...)`, and the records equal TF's rows: the
same rows, floats bit for bit, labels exactly.

Files, options, values and conditions are drawn from SPECC_INTEROP_SEED
(any seed passes).

Run: SPECC=target/debug/specc /work/venv-tf/bin/python -m pytest interop/test_csv_options.py
"""

import os
import subprocess

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

SEED = int(os.environ.get("SPECC_INTEROP_SEED", "2026"))
CASES = 6
COLUMNS = ["a", "s", "b", "k", "junk"]
WORDS = ["red", "green", "blue x", "a,b", "a;b"]


def f32_text(rng):
    """A float32 written as its shortest text (both readers round it alike)."""
    v = np.float32(rng.standard_normal() * 10.0 ** rng.integers(-3, 4))
    return repr(float(v)).replace("e+", "e")


def draw(case):
    rng = np.random.default_rng([SEED, case])
    o = {
        "field_delim": str(rng.choice([",", ";", "|", "\t"])),
        "use_quote_delim": bool(rng.random() < 0.6),
        "na_value": str(rng.choice(["", "NA", "?"])),
        "comment": bool(rng.random() < 0.4),
        # "header": the file has one; "rename": one, renamed by column_names;
        # "none": none, column_names name the columns.
        "header": str(rng.choice(["header", "rename", "none"])),
    }
    order = list(rng.permutation(COLUMNS))
    o["order"] = order
    o["select"] = str(rng.choice(["all", "names", "indices"]))
    o["defaults"] = {
        "a": float(np.float32(rng.standard_normal())),
        "b": float(np.float32(rng.standard_normal())),
        "k": int(rng.integers(0, 3)),
        "s": str(rng.choice(WORDS[:3])),
        "junk": "",
    }
    d = o["field_delim"]
    rows = []
    for _ in range(int(rng.integers(30, 90))):
        row = {}
        for c in COLUMNS:
            r = rng.random()
            if c in ("a", "b"):
                row[c] = f32_text(rng)
            elif c == "k":
                row[c] = str(int(rng.integers(0, 3)))
            elif c == "s":
                w = str(rng.choice(WORDS))
                if not o["use_quote_delim"]:
                    # Quotes are data; no cell holds the delimiter.
                    w = w.replace(d, "_") + ('"' if r < 0.2 else "")
                elif d in w or r < 0.2:
                    w = '"' + w.replace('"', '""') + '"'
                row[c] = w
            else:
                row[c] = "j"
            if c != "junk" and r > 0.85:
                row[c] = o["na_value"]  # missing: the default
        rows.append(row)
    o["rows"] = rows
    # The filter: on a float column, the label and the string column.
    t = float(np.float32(rng.standard_normal() * 0.5))
    word = str(rng.choice(WORDS[:3]))
    o["filter"] = (str(rng.choice(["a", "b"])), t, int(rng.integers(0, 3)), word,
                   str(rng.choice(["and", "or"])))
    return o


def write(o, path):
    d = o["field_delim"]
    lines = []
    if o["comment"]:
        lines.append("# a comment" + d + "with the delimiter")
    if o["header"] != "none":
        names = o["order"] if o["header"] == "header" else [c.upper() for c in o["order"]]
        lines.append(d.join(names))
    for i, row in enumerate(o["rows"]):
        if o["comment"] and i % 7 == 3:
            lines.append("#" + d.join(["x"] * 2))
        lines.append(d.join(row[c] for c in o["order"]))
    path.write_text("\n".join(lines) + "\n")


def selection(o):
    """select_columns as TF takes them (names or indices, unsorted), and the
    selected columns in file order; None: all."""
    wanted = ["k", "b", "s", "a"]
    if o["select"] == "all":
        return None, list(o["order"])
    idx = sorted(o["order"].index(c) for c in wanted)
    cols = [o["order"][i] for i in idx]
    if o["select"] == "names":
        return wanted, cols
    return [o["order"].index(c) for c in wanted], cols


def spec_text(o):
    def q(s):
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'

    args = [q("data.csv"), f"field_delim = {q(o['field_delim'])}",
            f"use_quote_delim = {str(o['use_quote_delim']).lower()}",
            f"na_value = {q(o['na_value'])}"]
    if o["comment"]:
        args.append('comment = "#"')
    if o["header"] == "none":
        args.append("header = false")
    if o["header"] != "header":
        args.append("column_names = [" + ", ".join(q(c) for c in o["order"]) + "]")
    sel, cols = selection(o)
    if sel is not None:
        args.append("select_columns = [" + ", ".join(
            q(c) if isinstance(c, str) else str(c) for c in sel) + "]")
    dv = o["defaults"]
    lit = {"a": repr, "b": repr, "k": str, "s": q, "junk": q}
    args.append("column_defaults = [" + ", ".join(lit[c](dv.get(c, "")) for c in cols) + "]")
    col, t, k, word, join = o["filter"]
    args.append(f"filter = {col} > {t!r} {join} k != {k} and s != {q(word)}")
    return f"""model csvopts
data csv({", ".join(args)})
label k: int
features {{
  x = numeric(a, b)
}}
params {{
  W: [2, 3] = zeros
}}
logits = x @ W
loss = mean(sparse_softmax_cross_entropy(k, logits))
optimizer gradient_descent(learning_rate = 0.1)
train {{ batch = 2, steps = 1 }}
"""


def tf_rows(o, path):
    """The rows TF reads (make_csv_dataset, or decode_csv of the lines that
    are not comments) and keeps under the filter: (a, b, k) each."""
    sel, cols = selection(o)
    dv = o["defaults"]
    types = {"a": tf.float32, "b": tf.float32, "k": tf.int32, "s": tf.string, "junk": tf.string}
    defaults = [tf.constant([dv[c]], types[c]) for c in cols]
    kw = dict(field_delim=o["field_delim"], use_quote_delim=o["use_quote_delim"],
              na_value=o["na_value"])
    if not o["comment"]:
        ds = tf.data.experimental.make_csv_dataset(
            str(path), batch_size=1, column_names=o["order"] if o["header"] != "header" else None,
            column_defaults=defaults, select_columns=sel, header=o["header"] != "none",
            num_epochs=1, shuffle=False, **kw).unbatch()
    else:
        lines = tf.data.TextLineDataset(str(path)).filter(
            lambda line: tf.logical_not(tf.strings.regex_full_match(line, "#.*")))
        if o["header"] != "none":
            lines = lines.skip(1)
        select_cols = None if sel is None else sorted(o["order"].index(c) for c in cols)
        ds = lines.map(lambda line: dict(zip(cols, tf.io.decode_csv(
            line, defaults, select_cols=select_cols, **kw))))
    col, t, k, word, join = o["filter"]

    def keep(row):
        first = row[col] > t
        rest = tf.logical_and(row["k"] != k, row["s"] != word)
        if join == "and":
            return tf.logical_and(first, rest)
        return tf.logical_or(first, rest)

    ds = ds.filter(keep)
    return [(np.float32(r["a"]), np.float32(r["b"]), int(r["k"])) for r in ds.as_numpy_iterator()]


def specc_rows(specc, tmp_path):
    out = subprocess.run([specc, "convert", "spec.spec", "--data", "data.csv", "-o", "rows.tfrecord"],
                         cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    spec = {"a": tf.io.FixedLenFeature([1], tf.float32),
            "b": tf.io.FixedLenFeature([1], tf.float32),
            "k": tf.io.FixedLenFeature([1], tf.int64)}
    rows = []
    for rec in tf.data.TFRecordDataset(str(tmp_path / "rows.tfrecord")):
        ex = tf.io.parse_single_example(rec, spec)
        rows.append((np.float32(ex["a"][0]), np.float32(ex["b"][0]), int(ex["k"][0])))
    return rows


@pytest.mark.parametrize("case", range(CASES))
def test_specc_reads_the_rows_tf_reads(specc, tmp_path, case):
    o = draw(case)
    write(o, tmp_path / "data.csv")
    (tmp_path / "spec.spec").write_text(spec_text(o))
    want = tf_rows(o, tmp_path / "data.csv")
    got = specc_rows(specc, tmp_path)
    assert 0 < len(want) < len(o["rows"]), "the filter keeps some rows and drops some"
    assert len(got) == len(want), (len(got), len(want), spec_text(o))
    for i, (g, w) in enumerate(zip(got, want)):
        assert g[0].tobytes() == w[0].tobytes() and g[1].tobytes() == w[1].tobytes(), (i, g, w)
        assert g[2] == w[2], (i, g, w)


def test_a_required_field_missing_fails_in_both(specc, tmp_path):
    """`column_defaults` with a dtype alone: TF's required column. A missing
    field stops both readers; specc names the file, line and column."""
    (tmp_path / "data.csv").write_text("a;b;k\n1.5;2;0\n2.5;NA;1\n")
    spec = spec_text({"field_delim": ";", "use_quote_delim": True, "na_value": "NA",
                      "comment": False, "header": "header", "order": ["a", "b", "k"],
                      "select": "all", "defaults": {"a": 0.0, "b": 0.0, "k": 0},
                      "filter": ("a", 0.0, 0, "", "and")})
    start, end = spec.index("column_defaults"), spec.index(")\nlabel")
    spec = spec[:start] + "column_defaults = [float32, float32, int32]" + spec[end:]
    (tmp_path / "spec.spec").write_text(spec)
    with pytest.raises(tf.errors.InvalidArgumentError, match="required"):
        list(tf.data.experimental.make_csv_dataset(
            str(tmp_path / "data.csv"), batch_size=1, field_delim=";", na_value="NA",
            column_defaults=[tf.float32, tf.float32, tf.int32], num_epochs=1, shuffle=False))
    out = subprocess.run([specc, "convert", "spec.spec", "--data", "data.csv", "-o", "x.tfrecord"],
                         cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode != 0
    assert "data.csv:3: column `b`: the field is required" in out.stderr, out.stderr
