"""specc's `tf.train.SequenceExample` input against TensorFlow's.

- `parse_sequence_example` / `parse_single_sequence_example`: TensorFlow
  writes random SequenceExamples (`tf.train.SequenceExample`: context
  features, feature lists whose steps hold several values, empty steps,
  trailing empty steps, missing lists, steps without a kind); specc's
  `parse_examples` example binary parses them under the same context and
  sequence specs (`FixedLenFeature`, `VarLenFeature`,
  `FixedLenSequenceFeature`) and must return exactly what
  `tf.io.parse_sequence_example` returns (values, indices, dense shapes,
  the lengths of the dense feature lists), and refuse what TF refuses.

Sizes and values are drawn from SPECC_INTEROP_SEED (any seed passes).

Run: SPECC=target/debug/specc SPECC_PARSE_EXAMPLES=target/debug/examples/parse_examples \
     /work/venv-tf/bin/python -m pytest interop/test_sequence_example.py
(default: built with cargo).
"""

import json
import os
import subprocess
import zlib

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

from conftest import runtime_example  # noqa: E402

SEED = int(os.environ.get("SPECC_INTEROP_SEED", "2026"))


def rng_for(name):
    return np.random.default_rng([SEED, zlib.crc32(name.encode())])


@pytest.fixture(scope="session")
def parser():
    return runtime_example("parse_examples", "SPECC_PARSE_EXAMPLES")


def floats(v):
    return tf.train.Feature(float_list=tf.train.FloatList(value=v))


def ints(v):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=v))


def strings(v):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=v))


def sequence_example(context, lists):
    return tf.train.SequenceExample(
        context=tf.train.Features(feature=context),
        feature_lists=tf.train.FeatureLists(feature_list={
            k: tf.train.FeatureList(feature=v) for k, v in lists.items()}))


def random_examples(rng, n, d):
    """`n` SequenceExamples: context `age` (float, missing in some) and
    `id` (int64, 0..3 values); lists `temp` (d floats a step), `words`
    (0..3 strings a step, some steps without a kind), `ids` (0..2 ints a
    step, missing in some records)."""
    out = []
    for i in range(n):
        context = {"id": ints(rng.integers(-5, 50, int(rng.integers(0, 4))).tolist())}
        if rng.random() < 0.8:
            context["age"] = floats([float(np.float32(rng.standard_normal() * 30))])
        steps = int(rng.integers(0, 6))
        lists = {
            "temp": [floats(rng.standard_normal(d).astype(np.float32).tolist())
                     for _ in range(steps)],
            "words": [tf.train.Feature() if rng.random() < 0.1 else
                      strings([f"w{int(x)}".encode() for x in rng.integers(0, 9, int(rng.integers(0, 4)))])
                      for _ in range(int(rng.integers(0, 6)))],
        }
        if rng.random() < 0.7:
            lists["ids"] = [ints(rng.integers(0, 99, int(rng.integers(0, 3))).tolist())
                            for _ in range(int(rng.integers(0, 5)))]
        out.append(sequence_example(context, lists))
    return out


def write(tmp_path, records, name="seq.tfrecord"):
    path = tmp_path / name
    with tf.io.TFRecordWriter(str(path)) as w:
        for r in records:
            w.write(r.SerializeToString())
    return path


def specs(d):
    ours_context = {
        "age": {"kind": "fixed", "shape": [1], "dtype": "float32", "default": [-1.5]},
        "id": {"kind": "varlen", "dtype": "int64"},
    }
    ours_sequence = {
        "temp": {"kind": "fixed_sequence", "shape": [d], "dtype": "float32", "allow_missing": True},
        "words": {"kind": "varlen", "dtype": "string"},
        "ids": {"kind": "varlen", "dtype": "int64"},
    }
    context = {
        "age": tf.io.FixedLenFeature([1], tf.float32, default_value=[-1.5]),
        "id": tf.io.VarLenFeature(tf.int64),
    }
    sequence = {
        "temp": tf.io.FixedLenSequenceFeature([d], tf.float32, allow_missing=True),
        "words": tf.io.VarLenFeature(tf.string),
        "ids": tf.io.VarLenFeature(tf.int64),
    }
    return ours_context, ours_sequence, context, sequence


def specc_parse(parser, tmp_path, path, context, sequence, single):
    desc = tmp_path / "spec.json"
    desc.write_text(json.dumps({"path": str(path), "compression": "", "single": single,
                                "context": context, "sequence": sequence}))
    out = subprocess.run([parser, str(desc)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def as_json_values(t):
    v = t.numpy().reshape(-1)
    if v.dtype == object:
        return [bytes(x).hex() for x in v]
    if v.dtype == np.float32:
        return [float(x) for x in v]
    return [int(x) for x in v]


def compare(name, want, got):
    if isinstance(want, tf.SparseTensor):
        assert got["indices"] == want.indices.numpy().tolist(), name
        assert got["values"] == as_json_values(want.values), name
        assert got["dense_shape"] == want.dense_shape.numpy().tolist(), name
    else:
        assert got["shape"] == list(want.shape), name
        assert got["values"] == as_json_values(want), name


def test_parse_sequence_example_equals_tfs(parser, tmp_path):
    rng = rng_for("parse_sequence_example")
    d = int(rng.integers(1, 4))
    examples = random_examples(rng, int(rng.integers(8, 30)), d)
    path = write(tmp_path, examples)
    ours_context, ours_sequence, context, sequence = specs(d)
    got = specc_parse(parser, tmp_path, path, ours_context, ours_sequence, False)
    assert "ok" in got, got
    ctx, lists, lengths = tf.io.parse_sequence_example(
        [e.SerializeToString() for e in examples], context_features=context,
        sequence_features=sequence)
    for name in context:
        compare(name, ctx[name], got["ok"]["context"][name])
    for name in sequence:
        compare(name, lists[name], got["ok"]["feature_lists"][name])
    assert got["ok"]["lengths"] == {k: v.numpy().tolist() for k, v in lengths.items()}


def test_parse_single_sequence_example_equals_tfs(parser, tmp_path):
    rng = rng_for("parse_single_sequence_example")
    d = int(rng.integers(1, 4))
    examples = random_examples(rng, int(rng.integers(5, 15)), d)
    path = write(tmp_path, examples)
    ours_context, ours_sequence, context, sequence = specs(d)
    got = specc_parse(parser, tmp_path, path, ours_context, ours_sequence, True)
    assert "ok" in got, got
    assert len(got["ok"]) == len(examples)
    for ex, g in zip(examples, got["ok"]):
        ctx, lists = tf.io.parse_single_sequence_example(
            ex.SerializeToString(), context_features=context, sequence_features=sequence)
        for name in context:
            compare(name, ctx[name], g["context"][name])
        for name in sequence:
            compare(name, lists[name], g["feature_lists"][name])


@pytest.mark.parametrize("case", ["short_step", "missing_list", "wrong_type", "missing_context"])
def test_what_tf_refuses_specc_refuses(parser, tmp_path, case):
    rng = rng_for(case)
    d = int(rng.integers(2, 4))
    examples = random_examples(rng, 6, d)
    bad = int(rng.integers(0, 6))
    ours_context, ours_sequence, context, sequence = specs(d)
    ex = examples[bad]
    if case == "short_step":
        ex.feature_lists.feature_list["temp"].feature.append(floats([1.0] * (d - 1)))
    elif case == "missing_list":
        ours_sequence["temp"]["allow_missing"] = False
        sequence["temp"] = tf.io.FixedLenSequenceFeature([d], tf.float32)
        del ex.feature_lists.feature_list["temp"]
    elif case == "wrong_type":
        ex.feature_lists.feature_list["ids"].feature.append(floats([1.0]))
    else:
        for e in examples:
            e.context.feature["age"].float_list.value[:] = [2.5]
        ours_context["age"]["default"] = None
        context["age"] = tf.io.FixedLenFeature([1], tf.float32)
        del ex.context.feature["age"]
    path = write(tmp_path, examples)
    got = specc_parse(parser, tmp_path, path, ours_context, ours_sequence, False)
    assert f"record {bad}" in got.get("error", ""), got
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
        tf.io.parse_sequence_example([e.SerializeToString() for e in examples],
                                     context_features=context, sequence_features=sequence)
