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
- `data tfrecord(.., sequence_example = true)`: SequenceExamples TF writes
  (a label and a numeric column in the context, one word and `d`
  temperatures a step in the feature lists, empty steps) through specc's
  sequence columns (`specc predict` of the layer and its length) equal
  TF's `sequence_numeric_column` and `indicator_column` of a sequence
  vocabulary column over `tf.io.parse_sequence_example`'s output.
- `numeric_column(decode_raw(..))` / `numeric_column(parse_tensor(..))`
  over Examples TF writes (`ndarray.tobytes` in either byte order,
  `tf.io.serialize_tensor`, random types and shapes) equal TF's
  `tf.io.decode_raw` / `tf.io.parse_tensor` cast to float32; `specc
  convert` writes TF's `serialize_tensor` bytes, byte for byte, and raw
  bytes `decode_raw` reads back, and converts them back to the CSV's values.

Types, sizes and values are drawn from SPECC_INTEROP_SEED (any seed passes).

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


@pytest.fixture(scope="session")
def specc():
    from conftest import binary
    return binary("SPECC", "debug/specc", ["--bin", "specc"])


def run(specc, cwd, *args):
    return subprocess.run([specc, *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def predict_jsonl(specc, cwd, data):
    run(specc, cwd, "run", "spec.spec", "--checkpoint-dir", "ckpt")
    out = run(specc, cwd, "predict", "spec.spec", "--checkpoint", "ckpt", "--data", data,
              "--format", "jsonl")
    return [json.loads(line) for line in out.strip().split("\n")]


VOCAB = ["a", "b", "c"]


def test_sequence_columns_from_sequence_examples_equal_tfs(specc, tmp_path):
    """`tfrecord(.., sequence_example = true)` through specc's sequence
    columns against TF's `sequence_numeric_column` and `indicator_column`
    of a `sequence_categorical_column_with_vocabulary_list` over what
    `tf.io.parse_sequence_example` parses (context: the label and a numeric
    column; feature lists: one word a step, `d` temperatures a step, empty
    steps in the middle and at the end)."""
    from tensorflow.python.feature_column import feature_column_v2 as fc2
    from tensorflow.python.feature_column import sequence_feature_column as sfc

    rng = rng_for("sequence_columns")
    d = int(rng.integers(1, 4))
    t_max = int(rng.integers(3, 7))
    n = int(rng.integers(6, 20))
    default = float(np.float32(rng.standard_normal()))
    records = []
    for i in range(n):
        steps = int(rng.integers(0, t_max + 1))
        words, temps = [], []
        for _ in range(steps):
            empty = rng.random() < 0.2
            words.append(tf.train.Feature() if empty and rng.random() < 0.5 else
                         strings([] if empty else [rng.choice(VOCAB + ["zz"]).encode()]))
            temps.append(floats([] if empty else
                                rng.standard_normal(d).astype(np.float32).tolist()))
        context = {"y": ints([i % 2])}
        if rng.random() < 0.8:
            context["age"] = floats([float(np.float32(rng.uniform(0, 80)))])
        records.append(sequence_example(context, {"words": words, "temp": temps}))
    write(tmp_path, records)
    (tmp_path / "spec.spec").write_text(f"""model seq
data tfrecord("seq.tfrecord", sequence_example = true)
label y: int
features {{
  words = sequence_categorical_column_with_vocabulary_list(words, {json.dumps(VOCAB)}, num_oov_buckets = 1, max_values = {t_max})
  temp = sequence_numeric_column(temp, shape = {d}, default_value = {default!r}, max_values = {t_max})
  age = numeric_column(age, default_value = 40)
  seq = sequence_input_layer(indicator_column(words), temp)
  n = sequence_length(seq)
  ctx = input_layer(age)
}}
params {{ W: [{d + 4}, 2] = zeros }}
logits = reduce_sum(seq, 1) @ W + ctx
loss = mean(sparse_softmax_cross_entropy(y, logits))
outputs {{ seq = seq, n = n, ctx = ctx }}
optimizer gradient_descent(learning_rate = 0.1)
train {{ batch = 4, steps = 1 }}
""")
    got = predict_jsonl(specc, tmp_path, "seq.tfrecord")

    words = sfc.sequence_categorical_column_with_vocabulary_list("words", VOCAB, num_oov_buckets=1)
    temp = sfc.sequence_numeric_column("temp", shape=(d,), default_value=default)
    age = fc2.numeric_column("age", default_value=40.0)
    columns = [fc2.indicator_column(words), temp]
    ctx, lists, _ = tf.io.parse_sequence_example(
        [r.SerializeToString() for r in records],
        context_features=fc2.make_parse_example_spec_v2([age]),
        sequence_features=fc2.make_parse_example_spec_v2(columns))
    cache = fc2.FeatureTransformationCache({**ctx, **lists})
    dense = {c.name: c.get_sequence_dense_tensor(cache, None) for c in columns}
    width = d + len(VOCAB) + 1
    want = np.zeros((n, t_max, width), np.float32)
    steps = 0
    for k, name in enumerate(sorted(dense)):  # by column name: temp, words_indicator
        v = dense[name].dense_tensor.numpy()
        steps = v.shape[1]
        lo = 0 if name == "temp" else d
        want[:, :steps, lo:lo + v.shape[2]] = v
    # Past the batch's longest sequence (TF pads to it, specc to max_values):
    # temp's default, no word.
    want[:, steps:, :d] = default
    lengths = dense["temp"].sequence_length.numpy()
    assert (lengths == dense["words_indicator"].sequence_length.numpy()).all()
    assert [g["n"] for g in got] == lengths.tolist()
    np.testing.assert_array_equal(np.array([g["seq"] for g in got], np.float32), want)
    np.testing.assert_array_equal(np.array([g["ctx"] for g in got], np.float32).reshape(-1),
                                  ctx["age"].numpy().reshape(-1))


RAW_TYPES = [tf.uint8, tf.int8, tf.uint16, tf.int16, tf.int32, tf.int64, tf.float16,
             tf.bfloat16, tf.float32, tf.float64, tf.bool]
TENSOR_TYPES = RAW_TYPES + [tf.uint32, tf.uint64]


def random_values(rng, dtype, shape):
    if dtype.is_floating:
        return tf.cast(rng.standard_normal(shape) * 100, dtype).numpy()
    if dtype == tf.bool:
        return rng.random(shape) < 0.5
    lo = max(dtype.min, -(2 ** 40))
    hi = min(dtype.max, 2 ** 40)
    return rng.integers(lo, hi, shape, endpoint=True).astype(dtype.as_numpy_dtype)


def test_decode_raw_and_parse_tensor_equal_tfs(specc, tmp_path):
    """Examples TF writes with a `decode_raw` feature (`ndarray.tobytes`,
    either byte order) and a `serialize_tensor` one, of random types and
    shapes: specc's `numeric_column(decode_raw(..))` and
    `numeric_column(parse_tensor(..))` give what TF's `tf.io.decode_raw` and
    `tf.io.parse_tensor`, cast to float32, give."""
    rng = rng_for("decode_raw_parse_tensor")
    raw_type = RAW_TYPES[int(rng.integers(len(RAW_TYPES)))]
    tensor_type = TENSOR_TYPES[int(rng.integers(len(TENSOR_TYPES)))]
    little = bool(rng.random() < 0.5)
    k = int(rng.integers(1, 6))
    dims = [int(x) for x in rng.integers(1, 4, int(rng.integers(0, 3)))]
    size = int(np.prod(dims))
    n = int(rng.integers(4, 12))
    examples = []
    for i in range(n):
        px = random_values(rng, raw_type, [k])
        px = px.astype(px.dtype.newbyteorder("<" if little else ">"))
        t = tf.constant(random_values(rng, tensor_type, dims), tensor_type)
        examples.append(tf.train.Example(features=tf.train.Features(feature={
            "px": strings([px.tobytes()]),
            "t": strings([tf.io.serialize_tensor(t).numpy()]),
            "y": ints([i % 2]),
        })))
    path = tmp_path / "ex.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as w:
        for e in examples:
            w.write(e.SerializeToString())
    (tmp_path / "spec.spec").write_text(f"""model bytes
data tfrecord("ex.tfrecord")
label y: int
features {{
  px = numeric_column(decode_raw(px, {raw_type.name}, little_endian = {str(little).lower()}), shape = {k})
  t = numeric_column(parse_tensor(t, {tensor_type.name}), shape = {dims or [1]})
  x = input_layer(px, t)
}}
params {{ W: [{k + size}, 2] = zeros }}
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
outputs {{ x = x }}
optimizer gradient_descent(learning_rate = 0.1)
train {{ batch = 4, steps = 1 }}
""")
    got = np.array([g["x"] for g in predict_jsonl(specc, tmp_path, "ex.tfrecord")], np.float32)
    parsed = tf.io.parse_example([e.SerializeToString() for e in examples], {
        "px": tf.io.FixedLenFeature([], tf.string), "t": tf.io.FixedLenFeature([], tf.string)})
    px = tf.cast(tf.io.decode_raw(parsed["px"], raw_type, little_endian=little), tf.float32)
    t = tf.stack([tf.reshape(tf.cast(tf.io.parse_tensor(s, tensor_type), tf.float32), [-1])
                  for s in parsed["t"]])
    np.testing.assert_array_equal(got, tf.concat([px, t], 1).numpy())


def test_convert_writes_tfs_serialize_tensor_and_decode_raw_bytes(specc, tmp_path):
    """`specc convert` of a CSV whose cells hold a tensor's values: the
    `parse_tensor` key is TF's `serialize_tensor` of the values in the
    column's shape, byte for byte; the `decode_raw` key decodes with TF's
    `decode_raw` to the values; and the TFRecord converts back to the CSV's
    values."""
    rng = rng_for("convert_tensors")
    tensor_type = [tf.float32, tf.float64, tf.int32, tf.int64, tf.uint8, tf.float16][
        int(rng.integers(6))]
    raw_type = [tf.int16, tf.float32, tf.uint16, tf.float64][int(rng.integers(4))]
    dims = [int(x) for x in rng.integers(1, 4, 2)]
    size = int(np.prod(dims))
    n = int(rng.integers(3, 9))
    rows = [(random_values(rng, tensor_type, dims), random_values(rng, raw_type, [3]))
            for _ in range(n)]

    def text(v):
        return " ".join(repr(x.item()) if isinstance(x.item(), float) else str(x.item())
                        for x in np.asarray(v, np.float64 if v.dtype.kind == "f" else v.dtype).reshape(-1))

    (tmp_path / "data.csv").write_text("y,t,r\n" + "".join(
        f"{i % 2},{text(t)},{text(r)}\n" for i, (t, r) in enumerate(rows)))
    (tmp_path / "spec.spec").write_text(f"""model conv
data csv("data.csv")
label y: int
features {{
  t = numeric_column(parse_tensor(t, {tensor_type.name}), shape = {dims})
  r = numeric_column(decode_raw(r, {raw_type.name}), shape = 3)
  x = input_layer(t, r)
}}
params {{ W: [{size + 3}, 2] = zeros }}
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer gradient_descent(learning_rate = 0.1)
train {{ batch = 2, steps = 1 }}
""")
    run(specc, tmp_path, "convert", "spec.spec", "--data", "data.csv", "-o", "out.tfrecord")
    records = [tf.train.Example.FromString(r.numpy())
               for r in tf.data.TFRecordDataset(str(tmp_path / "out.tfrecord"))]
    assert len(records) == n
    for rec, (t, r) in zip(records, rows):
        t_bytes = rec.features.feature["t"].bytes_list.value[0]
        assert t_bytes == tf.io.serialize_tensor(tf.constant(t, tensor_type)).numpy()
        r_bytes = rec.features.feature["r"].bytes_list.value[0]
        np.testing.assert_array_equal(tf.io.decode_raw(r_bytes, raw_type).numpy(), r)
    run(specc, tmp_path, "convert", "spec.spec", "--data", "out.tfrecord", "-o", "back.csv")
    back = (tmp_path / "back.csv").read_text().strip().split("\n")
    assert back[0] == "y,t,r"
    for line, (t, r) in zip(back[1:], rows):
        _, tb, rb = line.split(",")
        # The shortest text of each value in its type: it reads back to it.
        np.testing.assert_array_equal(np.array(tb.split(), np.float64).astype(t.dtype),
                                      t.reshape(-1))
        np.testing.assert_array_equal(np.array(rb.split(), np.float64).astype(r.dtype), r)
