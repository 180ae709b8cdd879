"""Image summaries (`summaries { image_tensors, max_images }`) against TF's
own `tf.compat.v1.summary.image` on the same batch.

A spec reads rows of H·W·C values as images `img = reshape(x, [B, H, W,
C])` and writes image summaries of its first training batch (the CSV's
first B rows; no shuffling). TF's `summary.image("img", batch,
max_outputs)` of those rows gives the same tags (`img/image` for one image,
`img/image/<i>` for more), the same sizes and colorspace, and PNGs that
decode to the same pixels (its `ImageSummary` normalization: non-negative
images scaled to a maximum of 255, signed ones centred at 128). Sizes,
channels (1, 3, 4), the batch, `max_images` and the values (some images
non-negative, some signed) are drawn from SPECC_INTEROP_SEED.
"""

import os
import subprocess
import zlib

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402
from tensorflow.core.framework import summary_pb2  # noqa: E402
from tensorflow.python.summary.summary_iterator import summary_iterator  # noqa: E402

SEED = int(os.environ.get("SPECC_INTEROP_SEED", "2026"))
CASES = ["gray", "rgb", "rgba", "one_image"]


def problem(name):
    rng = np.random.default_rng([SEED, zlib.crc32(name.encode())])
    h, w = (int(v) for v in rng.integers(2, 10, 2))
    c = {"gray": 1, "rgb": 3, "rgba": 4, "one_image": int(rng.choice([1, 3]))}[name]
    b = int(rng.integers(2, 7))
    m = 1 if name == "one_image" else int(rng.integers(2, b + 2))
    x = rng.normal(scale=float(rng.uniform(0.5, 50)), size=(b, h * w * c)).astype(np.float32)
    # Every other image non-negative (the other normalization).
    x[::2] = np.abs(x[::2])
    return h, w, c, b, m, x


@pytest.mark.parametrize("name", CASES)
def test_image_summaries_equal_tfs(specc, tmp_path, name):
    h, w, c, b, m, x = problem(name)
    n = h * w * c
    cols = [f"x{i}" for i in range(n)]
    with open(tmp_path / "data.csv", "w") as f:
        f.write(",".join(cols + ["y"]) + "\n")
        for k, r in enumerate(x):
            f.write(",".join(repr(float(v)) for v in r) + f",{k % 2}\n")
    (tmp_path / "spec.spec").write_text(f"""model images
data csv("data.csv")
label y: int
features {{ x = numeric(x0..x{n - 1}) }}
params {{ W: [{n}, 2] = zeros }}
img = reshape(x, [B, {h}, {w}, {c}])
logits = x @ W
loss = mean(sparse_softmax_cross_entropy(y, logits))
optimizer gradient_descent(learning_rate = 0.1)
train {{ batch = {b}, steps = 1, eval_fraction = 0 }}
summaries {{ every_steps = 1, image_tensors = [img], max_images = {m} }}
""")
    subprocess.run([specc, "run", "spec.spec", "--checkpoint-dir", "ck"], cwd=tmp_path,
                   check=True, capture_output=True, text=True)
    files = [f for f in os.listdir(tmp_path / "ck") if f.startswith("events.out.tfevents")]
    assert len(files) == 1
    ours = {}
    for e in summary_iterator(str(tmp_path / "ck" / files[0])):
        for v in e.summary.value:
            if v.HasField("image"):
                ours[v.tag] = (e.step, v.image)

    batch = x.reshape(b, h, w, c)
    theirs = summary_pb2.Summary()
    with tf.Graph().as_default(), tf.compat.v1.Session() as s:
        theirs.ParseFromString(s.run(tf.compat.v1.summary.image("img", tf.constant(batch), max_outputs=m)))
    assert sorted(ours) == sorted(v.tag for v in theirs.value), (sorted(ours), [v.tag for v in theirs.value])
    for v in theirs.value:
        step, image = ours[v.tag]
        assert step == 1
        assert (image.height, image.width, image.colorspace) == (v.image.height, v.image.width, v.image.colorspace)
        got = tf.io.decode_png(image.encoded_image_string).numpy()
        want = tf.io.decode_png(v.image.encoded_image_string).numpy()
        np.testing.assert_array_equal(got, want, err_msg=v.tag)
