"""Shared fixtures of the interop suite: the specc binaries under test.

`SPECC` is the `specc` binary (default: target/debug/specc, which
`cargo test --workspace` builds). Example binaries of the runtime crate are
found next to it (target/debug/examples/NAME) and built on demand.
"""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
TARGET = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))


@pytest.fixture(scope="session")
def specc():
    path = pathlib.Path(os.environ.get("SPECC", TARGET / "debug" / "specc"))
    if not path.exists():
        subprocess.run(["cargo", "build", "--bin", "specc"], cwd=ROOT, check=True)
    return str(path)


def runtime_example(name):
    """Builds (if needed) and returns the path of a runtime example binary."""
    subprocess.run(
        ["cargo", "build", "-p", "specc-runtime", "--example", name],
        cwd=ROOT,
        check=True,
    )
    return str(TARGET / "debug" / "examples" / name)
