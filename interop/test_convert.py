"""`specc convert` with real TensorFlow.

A CSV of floats and ints with missing cells (and a quoted string column the
spec does not read) converts to TFRecord (plain, GZIP, ZLIB); TensorFlow
reads it with `tf.data.TFRecordDataset` + `tf.io.parse_example` under the
parse spec (`FixedLenFeature([1])` with a default: a missing cell was left
out, so the default applies) and gets exactly what `tf.io.decode_csv` reads
from the same CSV with the same defaults. The other way: a TFRecord file
TensorFlow wrote from the CSV's values (missing ones left out) converts
back to a CSV whose values are the CSV's, bit for bit. Uncompressed, the
file `specc convert` writes is byte for byte `tf.io.TFRecordWriter`'s.

Run: SPECC=target/debug/specc /work/venv-tf/bin/python -m pytest interop/test_convert.py
"""

import os
import subprocess

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

RNG = np.random.default_rng(20261124)
N = 57
FLOATS = ["x0", "x1", "x2"]
LABEL = "y"
CLASSES = 3

SPEC = f"""model conv
data csv("data.csv")
label {LABEL}: int
features {{
  x = numeric({", ".join(FLOATS)})
}}
params {{
  W: [{len(FLOATS)}, {CLASSES}] = zeros
}}
logits = x @ W
loss = mean(sparse_softmax_cross_entropy({LABEL}, logits))
optimizer gradient_descent(learning_rate = 0.1)
train {{ batch = 4, steps = 1 }}
"""

FLOAT_DEFAULT = -7.25
INT_DEFAULT = -1


def make_csv(path):
    """Columns x0, note (quoted strings, unread), x1, y, x2; some cells
    empty; floats of every magnitude written as float32 reprs, some with
    spaces around them."""
    header = ["x0", "note", "x1", LABEL, "x2"]
    lines = [",".join(header)]
    for i in range(N):
        cells = []
        for name in header:
            if name == "note":
                cells.append('"a ""quoted"", note\nover two lines"' if i % 9 == 0 else f"n{i}")
            elif name == LABEL:
                cells.append("" if i % 11 == 5 else str(int(RNG.integers(0, CLASSES))))
            elif RNG.random() < 0.15:
                cells.append("")
            else:
                v = np.float32(RNG.standard_normal() * 10.0 ** RNG.integers(-30, 30))
                text = repr(float(v))
                cells.append(f" {text} " if i % 7 == 3 else text)
        lines.append(",".join(cells))
    path.write_text("\n".join(lines) + "\n")
    return path


def tf_csv_values(path):
    """The CSV as tf.io.decode_csv reads it (the parse spec's defaults)."""
    header, *rows = path.read_text().split("\n")
    # Records: join the quoted field's two lines again.
    records, cur = [], None
    for line in rows:
        if cur is not None:
            cur += "\n" + line
            if cur.count('"') % 2 == 0:
                records.append(cur)
                cur = None
        elif line.count('"') % 2 == 1:
            cur = line
        elif line:
            records.append(line)
    cols = header.split(",")
    defaults = [[FLOAT_DEFAULT] if c in FLOATS else [INT_DEFAULT] if c == LABEL else [""]
                for c in cols]
    defaults = [tf.constant(d, tf.int64 if c == LABEL else None) for c, d in zip(cols, defaults)]
    out = tf.io.decode_csv(tf.constant(records), defaults)
    return {c: v.numpy() for c, v in zip(cols, out) if c in FLOATS or c == LABEL}


def parse_spec():
    spec = {k: tf.io.FixedLenFeature([1], tf.float32, default_value=[FLOAT_DEFAULT])
            for k in FLOATS}
    spec[LABEL] = tf.io.FixedLenFeature([1], tf.int64, default_value=[INT_DEFAULT])
    return spec


def specc_convert(specc, workdir, *args):
    (workdir / "s.spec").write_text(SPEC)
    r = subprocess.run([specc, "convert", "s.spec", *args], cwd=workdir,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r


def assert_bits_equal(got, want, what):
    got = np.asarray(got).reshape(-1)
    want = np.asarray(want).reshape(-1)
    assert got.shape == want.shape, what
    if got.dtype == np.float32:
        assert np.array_equal(got.view(np.uint32), want.astype(np.float32).view(np.uint32)), what
    else:
        assert got.tolist() == want.tolist(), what


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_tf_reads_what_specc_convert_writes(specc, tmp_path, compression):
    make_csv(tmp_path / "data.csv")
    args = ["--data", "data.csv", "-o", "out.tfrecord"]
    if compression:
        args += ["--compression", compression]
    specc_convert(specc, tmp_path, *args)
    ds = tf.data.TFRecordDataset([str(tmp_path / "out.tfrecord")],
                                 compression_type=compression).batch(10000)
    parsed = tf.io.parse_example(next(iter(ds)), parse_spec())
    want = tf_csv_values(tmp_path / "data.csv")
    for k in FLOATS + [LABEL]:
        assert_bits_equal(parsed[k].numpy(), want[k], k)


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_a_tfrecord_tf_wrote_converts_back_to_the_csv_values(specc, tmp_path, compression):
    make_csv(tmp_path / "data.csv")
    values = tf_csv_values(tmp_path / "data.csv")
    # Which cells were missing: those equal to the defaults (the random
    # floats never are).
    path = tmp_path / "tf.tfrecord"
    with tf.io.TFRecordWriter(str(path), options=tf.io.TFRecordOptions(
            compression_type=compression)) as w:
        for i in range(N):
            feats = {}
            for k in FLOATS:
                if values[k][i] != np.float32(FLOAT_DEFAULT):
                    feats[k] = tf.train.Feature(float_list=tf.train.FloatList(value=[values[k][i]]))
            if values[LABEL][i] != INT_DEFAULT:
                feats[LABEL] = tf.train.Feature(int64_list=tf.train.Int64List(value=[values[LABEL][i]]))
            ex = tf.train.Example(features=tf.train.Features(feature=feats))
            w.write(ex.SerializeToString())
    specc_convert(specc, tmp_path, "--data", "tf.tfrecord", "-o", "back.csv")
    header, *rows = (tmp_path / "back.csv").read_text().splitlines()
    cols = header.split(",")
    assert sorted(cols) == sorted(FLOATS + [LABEL])
    assert len(rows) == N
    for c, k in enumerate(cols):
        cells = [r.split(",")[c] for r in rows]
        if k == LABEL:
            got = [int(x) if x else INT_DEFAULT for x in cells]
            assert got == values[k].tolist(), k
        else:
            got = np.array([np.float32(x) if x else np.float32(FLOAT_DEFAULT) for x in cells],
                           dtype=np.float32)
            assert_bits_equal(got, values[k], k)


def test_specc_convert_writes_tfs_bytes_uncompressed(specc, tmp_path):
    """The file equals tf.io.TFRecordWriter's of the same Examples
    (SerializeToString(deterministic=True)), missing cells left out."""
    make_csv(tmp_path / "data.csv")
    specc_convert(specc, tmp_path, "--data", "data.csv", "-o", "out.tfrecord")
    values = tf_csv_values(tmp_path / "data.csv")
    theirs = tmp_path / "theirs.tfrecord"
    with tf.io.TFRecordWriter(str(theirs)) as w:
        for i in range(N):
            feats = {}
            for k in FLOATS:
                if values[k][i] != np.float32(FLOAT_DEFAULT):
                    feats[k] = tf.train.Feature(float_list=tf.train.FloatList(value=[values[k][i]]))
            if values[LABEL][i] != INT_DEFAULT:
                feats[LABEL] = tf.train.Feature(int64_list=tf.train.Int64List(value=[values[LABEL][i]]))
            ex = tf.train.Example(features=tf.train.Features(feature=feats))
            w.write(ex.SerializeToString(deterministic=True))
    assert (tmp_path / "out.tfrecord").read_bytes() == theirs.read_bytes()
