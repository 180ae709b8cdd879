"""The digits data, the spec pieces and the digits_cnn models the TFLite
interop tests share (`test_tflite.py`, `test_tflite_cnn.py`,
`test_tflite_cnn_int8.py`, `test_tflite_cnn_dynamic.py`)."""

import pathlib
import subprocess

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
DIGITS = ROOT / "specs" / "data" / "digits.csv"
CNN = ROOT / "specs" / "digits_cnn.spec"


def digits_header(name):
    """The start of a spec `name` on the digits data: the 64 pixels scaled
    to 0..1 as the feature `pixels`, the label as `label`."""
    return (f"model {name}\n"
            f'data csv("{DIGITS}")\n'
            "label label: int\n"
            "features {\n"
            "  pixels = numeric(px0..px63, normalizer = x / 16)\n"
            "}\n")


def branches_spec(name, body, branches):
    """A spec `name` on the digits data with one line per branch of
    `branches` (output name: expression) where `body` (a format string, after
    the features) has `{branches}`, and the spatial mean of each branch but
    `y_conv1d` where it has `{means}`."""
    lines = "\n".join(f"{k} = {v}" for k, v in branches.items())
    means = ", ".join(f"reduce_mean({k}, axis = [1, 2])" for k in branches if k != "y_conv1d")
    return digits_header(name) + body.format(branches=lines, means=means)


def load_digits():
    """The digits rows: (pixels scaled to 0..1 as float32 [1797, 64], labels as int64)."""
    data = np.loadtxt(DIGITS, delimiter=",", skiprows=1, dtype=np.float32)
    return (data[:, :64] / np.float32(16)).astype(np.float32), data[:, 64].astype(np.int64)


def run(*args):
    """Runs a command (arguments as strings), which must succeed."""
    return subprocess.run([str(a) for a in args], check=True, capture_output=True, text=True)


def predict(specc, spec, model, out, data=DIGITS):
    """`specc predict SPEC --tflite MODEL --data DATA -o OUT`: the CSV's
    header and its rows as float32 [rows, columns]."""
    run(specc, "predict", spec, "--tflite", model, "--data", data, "-o", out)
    with open(out) as f:
        header = f.readline().strip().split(",")
    return header, np.loadtxt(out, delimiter=",", skiprows=1, dtype=np.float32, ndmin=2)


def digits_cnn_models(specc, dir, quantized, extra):
    """digits_cnn trained 300 steps into `dir/ckpt`, exported float and
    quantized (`quantized`.tflite with the export arguments `extra`), each
    run by `specc predict --tflite` on every digits row: dict(dir, files
    (name -> dict(model, probs, cls)), pixels, labels)."""
    run(specc, "run", CNN, "--steps", "300", "--checkpoint-dir", dir / "ckpt")
    out = {}
    for name, args in [("float", []), (quantized, extra)]:
        model = dir / f"{name}.tflite"
        run(specc, "export", CNN, "--checkpoint", dir / "ckpt", "--format", "tflite",
            "-o", model, *args)
        _, pred = predict(specc, CNN, model, dir / f"{name}.csv")
        out[name] = dict(model=model, probs=pred[:, :10], cls=pred[:, 10].astype(np.int64))
    pixels, labels = load_digits()
    return dict(dir=dir, files=out, pixels=pixels, labels=labels)


def accuracies(digits_cnn):
    """The accuracy of each of `digits_cnn_models`' files on all rows and on
    the 359 held-out rows: (name -> all rows, name -> held out)."""
    labels = digits_cnn["labels"]
    files = digits_cnn["files"]
    acc = {k: float((v["cls"] == labels).mean()) for k, v in files.items()}
    held = {k: float((v["cls"][1438:] == labels[1438:]).mean()) for k, v in files.items()}
    return acc, held


def keras_digits_cnn(tf, ckpt):
    """digits_cnn as a Keras model (`pixels` in, `probs` out) holding the
    weights of the checkpoint `ckpt`."""
    r = tf.train.load_checkpoint(str(ckpt))
    w = {n: r.get_tensor(n) for n in ["K1", "b1", "K2", "b2", "W3", "b3", "W4", "b4"]}
    inp = tf.keras.Input((64,), name="pixels")
    x = tf.keras.layers.Lambda(lambda t: tf.reshape(t, [-1, 8, 8, 1]))(inp)
    x = tf.keras.layers.Conv2D(32, 3, padding="same", activation="relu")(x)
    x = tf.keras.layers.Conv2D(64, 3, padding="same", activation="relu")(x)
    x = tf.keras.layers.MaxPooling2D(2, 2)(x)
    x = tf.keras.layers.Lambda(lambda t: tf.reshape(t, [-1, 1024]))(x)
    x = tf.keras.layers.Dense(128, activation="relu")(x)
    logits = tf.keras.layers.Dense(10)(x)
    model = tf.keras.Model(inp, {"probs": tf.keras.layers.Softmax()(logits)})
    model.set_weights([w["K1"], w["b1"], w["K2"], w["b2"], w["W3"], w["b3"], w["W4"], w["b4"]])
    return model
