"""Interop of specc's TFRecord files of tf.train.Example with real TensorFlow.

specc writes Examples (the runtime example `write_examples`, JSON in) plain,
GZIP and ZLIB; TensorFlow reads them with `tf.data.TFRecordDataset` and
`tf.io.parse_example` and must get exactly the values written; for
uncompressed files the bytes equal those of `tf.io.TFRecordWriter` writing
`SerializeToString(deterministic=True)` of the same Examples.

Run: SPECC_WRITE_EXAMPLES=target/debug/examples/write_examples \
     /work/venv-tf/bin/python -m pytest interop/test_tfrecord.py
(default: built with cargo).
"""

import json
import os
import subprocess

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

from conftest import runtime_example  # noqa: E402

RNG = np.random.default_rng(20260124)
N = 23


@pytest.fixture(scope="session")
def writer():
    return runtime_example("write_examples", "SPECC_WRITE_EXAMPLES")


def make_examples():
    """Random Examples: float, int64 and bytes features, some missing, some
    empty, awkward values (extreme int64s, subnormal and huge floats)."""
    out = []
    for i in range(N):
        ex = {}
        if i % 5 != 1:
            n = int(RNG.integers(0, 4))
            vals = RNG.standard_normal(n).astype(np.float32) * np.float32(10.0 ** RNG.integers(-30, 30))
            ex["f"] = ("float_list", [float(v) for v in vals])
        if i % 7 != 2:
            n = int(RNG.integers(1, 5))
            vals = [int(v) for v in RNG.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)]
            vals[0] = [-(2**63), 2**63 - 1, 0, -1][i % 4]
            ex["i"] = ("int64_list", vals)
        n = int(RNG.integers(0, 3))
        ex["b"] = ("bytes_list", [bytes(RNG.integers(0, 256, int(RNG.integers(0, 6)), dtype=np.uint8)) for _ in range(n)])
        ex["label"] = ("int64_list", [i % 3])
        out.append(ex)
    return out


def to_json(examples):
    res = []
    for ex in examples:
        res.append({
            k: {"kind": kind, "values": [v.hex() for v in vals] if kind == "bytes_list" else vals}
            for k, (kind, vals) in ex.items()
        })
    return res


def to_proto(ex):
    feats = {}
    for k, (kind, vals) in ex.items():
        if kind == "float_list":
            feats[k] = tf.train.Feature(float_list=tf.train.FloatList(value=vals))
        elif kind == "int64_list":
            feats[k] = tf.train.Feature(int64_list=tf.train.Int64List(value=vals))
        else:
            feats[k] = tf.train.Feature(bytes_list=tf.train.BytesList(value=vals))
    return tf.train.Example(features=tf.train.Features(feature=feats))


def specc_write(writer, tmp_path, examples, compression):
    path = tmp_path / f"ours-{compression or 'plain'}.tfrecord"
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"path": str(path), "compression": compression,
                                "examples": to_json(examples)}))
    subprocess.run([writer, str(spec)], check=True)
    return path


SPEC = {
    "f": tf.io.VarLenFeature(tf.float32),
    "i": tf.io.VarLenFeature(tf.int64),
    "b": tf.io.VarLenFeature(tf.string),
    "label": tf.io.FixedLenFeature([1], tf.int64),
}


def tf_parse(path, compression):
    ds = tf.data.TFRecordDataset([str(path)], compression_type=compression).batch(1000)
    serialized = next(iter(ds))
    return tf.io.parse_example(serialized, SPEC)


def check_parsed(parsed, examples):
    assert parsed["label"].numpy().tolist() == [ex["label"][1] for ex in examples]
    for name in ("f", "i", "b"):
        sp = parsed[name]
        want_idx, want_vals = [], []
        for r, ex in enumerate(examples):
            vals = ex.get(name, (None, []))[1]
            want_idx += [[r, j] for j in range(len(vals))]
            want_vals += vals
        assert sp.indices.numpy().tolist() == want_idx, name
        got = sp.values.numpy()
        if name == "f":
            assert np.array_equal(got.view(np.uint32),
                                  np.array(want_vals, dtype=np.float32).view(np.uint32)), name
        else:
            assert got.tolist() == want_vals, name


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_tf_parses_specc_examples_exactly(tmp_path, writer, compression):
    examples = make_examples()
    path = specc_write(writer, tmp_path, examples, compression)
    check_parsed(tf_parse(path, compression), examples)


def test_specc_writes_tfs_bytes_uncompressed(tmp_path, writer):
    examples = make_examples()
    ours = specc_write(writer, tmp_path, examples, "")
    theirs = tmp_path / "theirs.tfrecord"
    with tf.io.TFRecordWriter(str(theirs)) as w:
        for ex in examples:
            w.write(to_proto(ex).SerializeToString(deterministic=True))
    assert ours.read_bytes() == theirs.read_bytes()
