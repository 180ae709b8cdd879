"""Image input throughput: specc's pipeline against tf.data doing the same.

Writes N JPEGs (WxH, default 500x375; the issue's goal is stated for
224x224; quality 90, smooth random content, TF's encoder) into DIR/0/, then times decode -> resize 256x256 -> random_crop 224x224x3 ->
random_flip_left_right over all of them, best of PASSES passes:
  - TF 2.21: tf.data.Dataset.list_files -> map(read_file, decode_jpeg,
    resize, random_crop, random_flip_left_right,
    num_parallel_calls=AUTOTUNE) -> batch(64) -> prefetch, iterated eagerly;
  - specc: runtime/examples/image_pipeline.rs (the same transforms through
    specc_runtime::data::images on 2 threads, chunks of 64).
Run: /work/venv-tf/bin/python benches/image_pipeline.py [N] [DIR] [WxH]
(the example must be built: cargo build --release -p specc-runtime --example image_pipeline).
"""
import os
import subprocess
import sys
import time

import numpy as np
import tensorflow as tf

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
SIZE = sys.argv[3] if len(sys.argv) > 3 else "500x375"
W, H = (int(v) for v in SIZE.split("x"))
DIR = sys.argv[2] if len(sys.argv) > 2 else f"/tmp/specc_image_bench_{SIZE}"
PASSES = 3

tf.config.threading.set_intra_op_parallelism_threads(2)
tf.config.threading.set_inter_op_parallelism_threads(2)

os.makedirs(os.path.join(DIR, "0"), exist_ok=True)
rng = np.random.default_rng(0)
for i in range(N):
    path = os.path.join(DIR, "0", f"{i:05d}.jpg")
    if os.path.exists(path):
        continue
    small = rng.uniform(0, 255, size=(12, 16, 3)).astype(np.float32)
    img = tf.image.resize(small[None], (H, W), method="bicubic")[0]
    img = tf.cast(tf.clip_by_value(img + rng.normal(0, 8, img.shape), 0, 255), tf.uint8)
    tf.io.write_file(path, tf.io.encode_jpeg(img, quality=90))


def tf_pass():
    def load(p):
        x = tf.io.decode_jpeg(tf.io.read_file(p), channels=3)
        x = tf.image.resize(x, (256, 256))
        x = tf.image.random_crop(x, (224, 224, 3))
        return tf.image.random_flip_left_right(x)

    ds = (
        tf.data.Dataset.list_files(os.path.join(DIR, "0", "*.jpg"), shuffle=False)
        .map(load, num_parallel_calls=tf.data.AUTOTUNE)
        .batch(64)
        .prefetch(tf.data.AUTOTUNE)
    )
    start = time.perf_counter()
    n = 0
    for b in ds:
        n += int(b.shape[0])
    return n / (time.perf_counter() - start)


# specc first: once TF has run, its idle thread pools share the cores
# with the subprocess.
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
target = os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target"))
exe = os.path.join(target, "release", "examples", "image_pipeline")
out = subprocess.run([exe, DIR, "2", str(PASSES)], capture_output=True, text=True, check=True)
print(out.stdout.strip().splitlines()[-1])

tf_rate = max(tf_pass() for _ in range(PASSES))
print(f"tf.data images_per_s {tf_rate:.0f}")
