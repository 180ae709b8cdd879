"""The digits data and the spec pieces the TFLite interop tests share
(`test_tflite.py`, `test_tflite_cnn.py`, `test_tflite_cnn_int8.py`)."""

import pathlib

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
DIGITS = ROOT / "specs" / "data" / "digits.csv"


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
