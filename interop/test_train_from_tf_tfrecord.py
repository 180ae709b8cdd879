"""specc trains from TFRecord files that TensorFlow wrote.

TensorFlow writes a table of rows (a string city, an int64 id, a float
price, a 0/1 label) as `tf.train.Example`s with `tf.io.TFRecordWriter`,
plain and GZIP. specc streams them through feature columns (a hashed city,
an identity id, a numeric price, a cross, `linear_model`) with FTRL, and
the trained variables, read back from specc's checkpoint by TensorFlow's
own reader, are bit for bit those of the same spec streamed from the CSV
of the same rows: the same ids, the same batches, the same updates.
The cross crosses two columns: a cross of a raw key would differ, in TF as
in specc, since a CSV cell is a dense input and an Example feature a sparse
one, and TF's SparseCross takes sparse inputs first.

Run: SPECC=target/debug/specc /work/venv-tf/bin/python -m pytest interop/test_train_from_tf_tfrecord.py
"""

import os
import subprocess

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

RNG = np.random.default_rng(20261123)
N = 203
CITIES = ["paris", "london", "tokyo", "berlin", "lima", "oslo", "quito"]


def rows():
    out = []
    for _ in range(N):
        city = CITIES[RNG.integers(len(CITIES))]
        cid = int(RNG.integers(0, 50))
        price = float(np.float32(RNG.normal(3.0, 2.0)))
        y = int(RNG.random() < (0.7 if city in ("paris", "tokyo") else 0.3))
        out.append((city, cid, price, y))
    return out


ROWS = rows()


def spec(data_item):
    return f"""model from_tf
{data_item}
label y: float
features {{
  city  = categorical_column_with_hash_bucket(city, 64)
  cid   = categorical_column_with_identity(cid, 50)
  price = numeric_column(price)
  cross = crossed_column([city, cid], hash_bucket_size = 128)
  logits = linear_model(city, cid, price, cross)
}}
loss = sum(sigmoid_cross_entropy(y, reshape(logits, [B])))
optimizer ftrl(learning_rate = 0.1, l1_regularization_strength = 0.001)
train {{ batch = 8, epochs = 3, shuffle = 0 }}
"""


def write_csv(path):
    with open(path, "w") as f:
        f.write("city,cid,price,y\n")
        for city, cid, price, y in ROWS:
            # price is a float32 value held in a double: its repr parses back exactly.
            f.write(f"{city},{cid},{price!r},{y}\n")


def write_tfrecord(path, compression):
    opts = tf.io.TFRecordOptions(compression_type=compression)
    with tf.io.TFRecordWriter(str(path), opts) as w:
        for city, cid, price, y in ROWS:
            ex = tf.train.Example(
                features=tf.train.Features(
                    feature={
                        "city": tf.train.Feature(bytes_list=tf.train.BytesList(value=[city.encode()])),
                        "cid": tf.train.Feature(int64_list=tf.train.Int64List(value=[cid])),
                        "price": tf.train.Feature(float_list=tf.train.FloatList(value=[price])),
                        "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[y])),
                    }
                )
            )
            w.write(ex.SerializeToString())


def train(specc, directory, data_item):
    directory.mkdir()
    (directory / "model.spec").write_text(spec(data_item))
    ckpt = directory / "ckpt"
    p = subprocess.run(
        [specc, "run", str(directory / "model.spec"), "--checkpoint-dir", str(ckpt)],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    reader = tf.train.load_checkpoint(str(ckpt))
    names = sorted(n for n, _ in tf.train.list_variables(str(ckpt)))
    return {n: reader.get_tensor(n) for n in names}


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_specc_trains_from_tensorflows_tfrecords_as_from_the_csv(specc, tmp_path, compression):
    data = tmp_path / "data"
    data.mkdir()
    write_csv(data / "rows.csv")
    write_tfrecord(data / "rows.tfrecord", compression)
    from_csv = train(specc, tmp_path / "csv", f'data csv("{data / "rows.csv"}", stream = true)')
    from_tf = train(
        specc,
        tmp_path / "tfrecord",
        f'data tfrecord("{data / "rows.tfrecord"}", compression = "{compression}")',
    )
    assert from_csv.keys() == from_tf.keys()
    assert "linear_model/city/weights" in from_tf
    for name, want in from_csv.items():
        got = from_tf[name]
        assert got.shape == want.shape, name
        assert got.dtype == want.dtype, name
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), name
    # Training moved the weights: the comparison is not of two zero tables.
    assert np.count_nonzero(from_tf["linear_model/city/weights"]) > 0


def test_python_fit_of_a_tfrecord_path_trains_as_specc_run(specc, tmp_path):
    """specc's Python package: `Model.fit(path)` of TensorFlow's TFRecord
    file (the spec's `data` item says how to read it) trains the variables
    `specc run` trains, bit for bit."""
    import specc as pyspecc

    data = tmp_path / "data"
    data.mkdir()
    write_tfrecord(data / "rows.tfrecord", "GZIP")
    item = f'data tfrecord("{data / "elsewhere.tfrecord"}", compression = "GZIP")'
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "model.spec").write_text(spec(item))
    subprocess.run(
        [specc, "run", str(tmp_path / "cli" / "model.spec"), "--data", str(data / "rows.tfrecord"),
         "--checkpoint-dir", str(tmp_path / "cli" / "ckpt")],
        check=True, capture_output=True, text=True,
    )
    model = pyspecc.compile(tmp_path / "cli" / "model.spec")
    r = model.fit(data / "rows.tfrecord", checkpoint_dir=tmp_path / "py")
    # 3 epochs of N rows, repeated then batched (tf.data's order): batches
    # of 8 across the epochs' boundaries, the last one short.
    assert r["global_step"] == -(-3 * N // 8)
    cli = tf.train.load_checkpoint(str(tmp_path / "cli" / "ckpt"))
    py = tf.train.load_checkpoint(str(tmp_path / "py"))
    names = sorted(n for n, _ in tf.train.list_variables(str(tmp_path / "cli" / "ckpt")))
    assert "linear_model/city/weights" in names
    for name in names:
        assert py.get_tensor(name).tobytes() == cli.get_tensor(name).tobytes(), name
    assert np.count_nonzero(py.get_tensor("linear_model/city/weights")) > 0
