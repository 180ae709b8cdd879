"""Shared fixtures of the interop suite: the specc binaries under test.

`SPECC` names the `specc` binary (default: target/debug/specc, which
`cargo test --workspace` builds). The runtime's example binaries (writers of
checkpoints, event files, Examples) are found under target/debug/examples,
or through their own variable (`SPECC_WRITE_CHECKPOINT`, ...); without one,
cargo builds them first (a no-op when they are up to date).
"""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
TARGET = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))


def binary(env, path, build):
    """`$env` if set; else target/`path`, built first with `cargo build build...`."""
    if env in os.environ:
        return os.environ[env]
    subprocess.run(["cargo", "build", "-q", *build], cwd=ROOT, check=True)
    return str(TARGET / path)


def runtime_example(name, env):
    """A runtime example binary (`$env` if set, else built with cargo)."""
    return binary(env, f"debug/examples/{name}", ["-p", "specc-runtime", "--example", name])


@pytest.fixture(scope="session")
def specc():
    return binary("SPECC", "debug/specc", ["--bin", "specc"])


def write_rows(path, x, y=None):
    """A CSV of float columns `x0..`, and int labels `y` if given."""
    with open(path, "w") as f:
        f.write(",".join(f"x{i}" for i in range(x.shape[1])) + (",y" if y is not None else "") + "\n")
        for r in range(len(x)):
            cells = [repr(float(v)) for v in x[r]]
            if y is not None:
                cells.append(str(int(y[r])))
            f.write(",".join(cells) + "\n")


def literal(a):
    """A numpy array as spec literal text (nested lists of exact floats)."""
    if a.ndim == 0:
        return repr(float(a))
    return "[" + ", ".join(literal(x) for x in a) + "]"


def litert_equals_predict(specc, tmp_path, new, feeds=None, batch_matmuls=None):
    """Trains `tmp_path/spec.spec` (its `train.csv` written), exports it to
    TF Lite, and checks that LiteRT's first output on the rows `new` equals
    `specc predict`'s (1e-5 relative). `feeds` maps the rows as read back
    from the CSV to the model's inputs by name (default: all to the one
    input); with `batch_matmuls`, the model has that many BATCH_MATMULs."""
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    def run(*args):
        return subprocess.run([specc, *args], cwd=tmp_path, check=True,
                              capture_output=True, text=True).stdout

    run("run", "spec.spec", "--checkpoint-dir", "ckpt")
    run("export", "spec.spec", "--checkpoint", "ckpt", "--format", "tflite",
        "--output", "model.tflite")
    write_rows(tmp_path / "new.csv", new)
    lines = run("predict", "spec.spec", "--checkpoint", "ckpt", "--data", "new.csv").strip().split("\n")
    want = np.array([[float(c) for c in l.split(",")] for l in lines[1:]])

    it = Interpreter(model_path=str(tmp_path / "model.tflite"))
    if batch_matmuls is not None:
        assert [op["op_name"] for op in it._get_ops_details()].count("BATCH_MATMUL") == batch_matmuls
    parsed = np.loadtxt(tmp_path / "new.csv", delimiter=",", skiprows=1, dtype=np.float32, ndmin=2)
    inputs = it.get_input_details()
    values = feeds(parsed) if feeds else {inputs[0]["name"]: parsed}
    for i in inputs:
        it.resize_tensor_input(i["index"], values[i["name"]].shape)
    it.allocate_tensors()
    for i in inputs:
        it.set_tensor(i["index"], values[i["name"]])
    it.invoke()
    got = it.get_tensor(it.get_output_details()[0]["index"])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
