"""Images between specc and TensorFlow.

- TensorFlow decodes the PNGs specc encodes to exactly the pixels specc
  encoded (RGB, grey, RGBA), and the JPEGs specc encodes at quality 90 to
  pixels as close to the original as those of TF's own encoder (mean error
  at most 1.25 times TF's plus a quarter level).
- specc decodes TensorFlow's PNGs exactly and its JPEGs within
  `JPEG_MAX_LEVEL_DIFF` (12) levels of TensorFlow's own decode (TF's
  default INTEGER_FAST IDCT against zune-jpeg's accurate one).
- TensorFlow writes the digits as PNG-encoded `tf.train.Example`s (the
  TF-slim keys `image/encoded`, `image/class/label`) and as a folder of PNG
  files (`tf.io.write_file`); specc trains the same CNN from both sources
  to the same bits.

Run: SPECC=target/debug/specc /work/venv-tf/bin/python -m pytest interop/test_image_codecs.py
"""

import json
import os
import subprocess

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

from conftest import ROOT, binary  # noqa: E402

JPEG_MAX_LEVEL_DIFF = 12


@pytest.fixture(scope="session")
def codec():
    return binary(
        "SPECC_IMAGE_CODEC",
        "debug/examples/image_codec",
        ["-p", "specc-image", "--example", "image_codec"],
    )


def picture(h, w, c, seed):
    """A smooth image with some texture (JPEG-friendly), uint8 [h, w, c]."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    planes = []
    for k in range(c):
        base = 128 + 90 * np.sin((x + 3 * k) / 7.0) * np.cos((y - 2 * k) / 5.0)
        planes.append(base + rng.normal(0, 6, size=(h, w)))
    return np.clip(np.stack(planes, axis=-1), 0, 255).astype(np.uint8)


def encode(codec, tmp_path, image, quality=None):
    h, w, c = image.shape
    raw = tmp_path / f"in_{h}_{w}_{c}.raw"
    raw.write_bytes(image.tobytes())
    out = tmp_path / f"out_{h}_{w}_{c}_{quality}.img"
    cmd = [codec, "encode-png", str(h), str(w), str(c), str(raw), str(out)]
    if quality is not None:
        cmd = [codec, "encode-jpeg", str(h), str(w), str(c), str(quality), str(raw), str(out)]
    subprocess.run(cmd, check=True)
    return out.read_bytes()


def decode(codec, tmp_path, data, channels):
    f = tmp_path / "tf_encoded.img"
    f.write_bytes(data)
    raw = tmp_path / "decoded.raw"
    p = subprocess.run(
        [codec, "decode", str(f), str(channels), str(raw)],
        check=True,
        capture_output=True,
        text=True,
    )
    shape = [int(d) for d in p.stdout.split()]
    return np.frombuffer(raw.read_bytes(), dtype=np.uint8).reshape(shape)


@pytest.mark.parametrize("channels", [1, 3, 4])
def test_tensorflow_decodes_specc_png_exactly(codec, tmp_path, channels):
    image = picture(23, 31, channels, seed=channels)
    data = encode(codec, tmp_path, image)
    got = tf.io.decode_png(data, channels=channels).numpy()
    assert got.shape == image.shape
    assert np.array_equal(got, image)


@pytest.mark.parametrize("channels", [1, 3])
def test_tensorflow_decodes_specc_jpeg_close_to_the_pixels(codec, tmp_path, channels):
    image = picture(48, 64, channels, seed=10 + channels)
    data = encode(codec, tmp_path, image, quality=90)
    got = tf.io.decode_jpeg(data, channels=channels).numpy().astype(np.int32)
    assert got.shape == image.shape
    err = np.abs(got - image.astype(np.int32)).mean()
    # As close to the pixels as TF's own encoder at the same quality.
    tf_bytes = tf.io.encode_jpeg(image, quality=90).numpy()
    tf_err = np.abs(tf.io.decode_jpeg(tf_bytes).numpy().astype(np.int32) - image).mean()
    assert err <= 1.25 * tf_err + 0.25, f"mean error {err}, TF's encoder {tf_err}"
    # specc's own decode of its bytes agrees with TF's decode of them.
    ours = decode(codec, tmp_path, data, channels).astype(np.int32)
    assert np.abs(ours - got).max() <= JPEG_MAX_LEVEL_DIFF


@pytest.mark.parametrize("channels", [1, 3, 4])
def test_specc_decodes_tensorflow_png_exactly(codec, tmp_path, channels):
    image = picture(19, 27, channels, seed=20 + channels)
    data = tf.io.encode_png(image).numpy()
    got = decode(codec, tmp_path, data, channels)
    assert np.array_equal(got, image)


@pytest.mark.parametrize("channels", [1, 3])
def test_specc_decodes_tensorflow_jpeg_within_the_bound(codec, tmp_path, channels):
    image = picture(40, 56, channels, seed=30 + channels)
    data = tf.io.encode_jpeg(image, quality=90).numpy()
    want = tf.io.decode_jpeg(data, channels=channels).numpy().astype(np.int32)
    got = decode(codec, tmp_path, data, channels).astype(np.int32)
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= JPEG_MAX_LEVEL_DIFF


def digits():
    """The digits as 8×8×1 uint8 images (pixels 0..16 times 15) and labels."""
    rows = np.loadtxt(ROOT / "specs" / "data" / "digits.csv", delimiter=",", skiprows=1)
    with open(ROOT / "specs" / "data" / "digits.csv") as f:
        header = f.readline().strip().split(",")
    px = [header.index(f"px{i}") for i in range(64)]
    label = header.index("label")
    images = (rows[:, px] * 15).astype(np.uint8).reshape(-1, 8, 8, 1)
    return images, rows[:, label].astype(np.int64)


CNN = """model tf_images
DATA
label label: int
features {
  image = image(decode_image(channels = 1), resize([8, 8]))
}
params {
  K1: [3, 3, 1, 8]  = glorot_uniform(seed = 1)
  b1: [8]           = zeros
  W2: [128, 10]     = glorot_uniform(seed = 2)
  b2: [10]          = zeros
}
h      = relu(bias_add(conv2d(image / 255, K1, strides = 1, padding = "SAME"), b1))
p      = max_pool2d(h, ksize = 2, strides = 2, padding = "VALID")
logits = reshape(p, [B, 128]) @ W2 + b2
loss = mean(sparse_softmax_cross_entropy(label, logits))
optimizer adam(learning_rate = 0.01)
train { batch = 32, steps = 300, shuffle = 1797, seed = 7 }
metrics { accuracy(label, argmax(logits)) }
"""


def run(specc, directory, data_item):
    spec = directory / "model.spec"
    spec.write_text(CNN.replace("DATA", data_item))
    p = subprocess.run([specc, "run", "--json", str(spec)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_specc_trains_from_tensorflows_image_tfrecords_as_from_its_png_folder(specc, tmp_path):
    images, labels = digits()
    folder = tmp_path / "digits"
    record = tmp_path / "digits.tfrecord"
    with tf.io.TFRecordWriter(str(record)) as w:
        for i, (image, label) in enumerate(zip(images, labels)):
            png = tf.io.encode_png(image)
            # Keras's folder convention: one sub-directory per class, files in
            # name order (the zero-padded index keeps TFRecord order).
            path = folder / str(label) / f"{i:05d}.png"
            tf.io.write_file(str(path), png)
            ex = tf.train.Example(
                features=tf.train.Features(
                    feature={
                        "image/encoded": tf.train.Feature(
                            bytes_list=tf.train.BytesList(value=[png.numpy()])
                        ),
                        "image/class/label": tf.train.Feature(
                            int64_list=tf.train.Int64List(value=[int(label)])
                        ),
                    }
                )
            )
            w.write(ex.SerializeToString())
    # The folder lists class 0's files first: the TFRecord in the same order.
    order = np.argsort(labels, kind="stable")
    sorted_record = tmp_path / "sorted.tfrecord"
    with tf.io.TFRecordWriter(str(sorted_record)) as w:
        for rec in np.array(list(tf.data.TFRecordDataset(str(record)).as_numpy_iterator()), dtype=object)[order]:
            w.write(rec)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    from_tf = run(specc, tmp_path / "a", f'data image_tfrecord("{sorted_record}")')
    from_folder = run(specc, tmp_path / "b", f'data image_dataset_from_directory("{folder}")')
    assert from_tf["last_loss"] == from_folder["last_loss"]
    assert from_tf["eval"] == from_folder["eval"]
    assert from_tf["eval"]["accuracy"] > 0.9, from_tf
