"""specc's `parse_example` / `parse_single_example` with `SparseFeature`
(and the other feature kinds beside it) against TensorFlow's, on random
Examples that TensorFlow writes: indices unsorted, duplicated, missing in
some records, one and two dimensions, `already_sorted` both ways; and
Examples that both must refuse (index and value counts that differ).
Indices and shapes must be equal, values equal at each index; the values of
a duplicated index are compared as a set (TF's `sparse_reorder` leaves them
in the order its unstable `std::sort` happens to give).

Run: SPECC_PARSE_EXAMPLES=target/debug/examples/parse_examples \
     /work/venv-tf/bin/python -m pytest interop/test_parse_example.py
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

RNG = np.random.default_rng(20261125)
N = 31
SIZE = 9
SIZE2 = [4, 6]


@pytest.fixture(scope="session")
def parser():
    return runtime_example("parse_examples", "SPECC_PARSE_EXAMPLES")


def make_examples(mismatch=False):
    out = []
    for i in range(N):
        feats = {}
        if i % 6 != 2:
            n = int(RNG.integers(0, 6))
            ix = RNG.integers(0, SIZE, n).tolist()
            if n > 2 and i % 3 == 0:
                ix[1] = ix[0]  # a duplicate index
            vals = RNG.standard_normal(n).astype(np.float32).tolist()
            if mismatch and i == 17:
                vals = vals + [1.0]
            feats["ix"] = tf.train.Feature(int64_list=tf.train.Int64List(value=ix))
            feats["val"] = tf.train.Feature(float_list=tf.train.FloatList(value=vals))
            feats["words"] = tf.train.Feature(bytes_list=tf.train.BytesList(
                value=[f"w{v}".encode() for v in ix]))
            r = RNG.integers(0, SIZE2[0], n).tolist()
            c = RNG.integers(0, SIZE2[1], n).tolist()
            feats["r"] = tf.train.Feature(int64_list=tf.train.Int64List(value=r))
            feats["c"] = tf.train.Feature(int64_list=tf.train.Int64List(value=c))
        feats["label"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 4]))
        out.append(tf.train.Example(features=tf.train.Features(feature=feats)))
    return out


def write(tmp_path, examples):
    path = tmp_path / "ex.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as w:
        for ex in examples:
            w.write(ex.SerializeToString())
    return path


def specs(already_sorted):
    ours = {
        "sp": {"kind": "sparse", "index_keys": ["ix"], "value_key": "val", "dtype": "float32",
               "size": [SIZE], "already_sorted": already_sorted},
        "words_sp": {"kind": "sparse", "index_keys": ["ix"], "value_key": "words",
                     "dtype": "string", "size": [SIZE], "already_sorted": already_sorted},
        "grid": {"kind": "sparse", "index_keys": ["r", "c"], "value_key": "val",
                 "dtype": "float32", "size": SIZE2, "already_sorted": already_sorted},
        "val": {"kind": "varlen", "dtype": "float32"},
        "label": {"kind": "fixed", "shape": [1], "dtype": "int64", "default": None},
    }
    theirs = {
        "sp": tf.io.SparseFeature("ix", "val", tf.float32, SIZE, already_sorted=already_sorted),
        "words_sp": tf.io.SparseFeature("ix", "words", tf.string, SIZE,
                                        already_sorted=already_sorted),
        "grid": tf.io.SparseFeature(["r", "c"], "val", tf.float32, SIZE2,
                                    already_sorted=already_sorted),
        "val": tf.io.VarLenFeature(tf.float32),
        "label": tf.io.FixedLenFeature([1], tf.int64),
    }
    return ours, theirs


def specc_parse(parser, tmp_path, path, spec, single):
    desc = tmp_path / "spec.json"
    desc.write_text(json.dumps({"path": str(path), "compression": "", "single": single,
                                "spec": spec}))
    out = subprocess.run([parser, str(desc)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def as_json_values(t):
    v = t.numpy().reshape(-1)
    if v.dtype == object:
        return [bytes(x).hex() for x in v]
    if v.dtype == np.float32:
        return [float(x) for x in v]
    return [int(x) for x in v]


def runs(indices, values):
    """Values grouped by index: the values of a duplicated index as a sorted
    run (TF orders them as its unstable std::sort leaves them; specc keeps
    the order of the values)."""
    out, k = [], 0
    while k < len(indices):
        j = k
        while j < len(indices) and indices[j] == indices[k]:
            j += 1
        out.append((indices[k], sorted(values[k:j], key=repr)))
        k = j
    return out


def compare(name, want, got):
    if isinstance(want, tf.SparseTensor):
        indices = want.indices.numpy().tolist()
        assert got["indices"] == indices, name
        assert runs(indices, got["values"]) == runs(indices, as_json_values(want.values)), name
        assert got["dense_shape"] == want.dense_shape.numpy().tolist(), name
    else:
        assert got["shape"] == list(want.shape), name
        assert got["values"] == as_json_values(want), name


@pytest.mark.parametrize("already_sorted", [False, True])
def test_parse_example_equals_tfs(parser, tmp_path, already_sorted):
    examples = make_examples()
    path = write(tmp_path, examples)
    ours, theirs = specs(already_sorted)
    got = specc_parse(parser, tmp_path, path, ours, False)
    assert "ok" in got, got
    want = tf.io.parse_example([e.SerializeToString() for e in examples], theirs)
    for name in theirs:
        compare(name, want[name], got["ok"][name])


@pytest.mark.parametrize("already_sorted", [False, True])
def test_parse_single_example_equals_tfs(parser, tmp_path, already_sorted):
    examples = make_examples()
    path = write(tmp_path, examples)
    ours, theirs = specs(already_sorted)
    got = specc_parse(parser, tmp_path, path, ours, True)
    assert "ok" in got, got
    assert len(got["ok"]) == len(examples)
    for ex, g in zip(examples, got["ok"]):
        want = tf.io.parse_single_example(ex.SerializeToString(), theirs)
        for name in theirs:
            compare(name, want[name], g[name])


def test_counts_that_differ_are_refused_by_both(parser, tmp_path):
    examples = make_examples(mismatch=True)
    path = write(tmp_path, examples)
    ours, theirs = specs(False)
    got = specc_parse(parser, tmp_path, path, {"sp": ours["sp"]}, False)
    assert "record 17" in got.get("error", ""), got
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
        tf.io.parse_example([e.SerializeToString() for e in examples], {"sp": theirs["sp"]})
