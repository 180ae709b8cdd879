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
