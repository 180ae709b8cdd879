"""specc's `tf.io.decode_csv` (runtime/src/io/csv.rs) against TensorFlow's.

The runtime example `decode_csv` decodes the same records under the same
options; for every record both succeed with the same values (floats bit
for bit, strings byte for byte) or both fail. The records are TF's
documented cases (quotes, `""` escapes, empty and `na_value` fields, field
counts, whitespace around numbers, select_cols) and random ones built from
an alphabet of the characters that matter.

Run: SPECC_DECODE_CSV=target/debug/examples/decode_csv \
     /work/venv-tf/bin/python -m pytest interop/test_decode_csv.py
(default: built with cargo).
"""

import json
import os
import subprocess

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

from conftest import runtime_example  # noqa: E402

RNG = np.random.default_rng(20261123)

DTYPES = {"float32": tf.float32, "float64": tf.float64, "int32": tf.int32,
          "int64": tf.int64, "string": tf.string}


@pytest.fixture(scope="session")
def decoder():
    return runtime_example("decode_csv", "SPECC_DECODE_CSV")


def tf_decode(record, defaults, kw):
    rd = [tf.constant([], DTYPES[t]) if d is None else tf.constant([d], DTYPES[t])
          for t, d in defaults]
    try:
        out = tf.io.decode_csv(tf.constant([record]), rd, **kw)
    except (tf.errors.InvalidArgumentError, ValueError):
        return None
    return [x.numpy()[0] for x in out]


def specc_decode(decoder, tmp_path, records, defaults, kw):
    spec = {"record_defaults": [{"type": t, "default": d} for t, d in defaults],
            "records": records, **kw}
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    out = subprocess.run([decoder, str(path)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def same(tf_value, ours, dtype):
    if dtype == "string":
        return tf_value.hex() == ours
    if dtype in ("float32", "float64"):
        npt = np.float32 if dtype == "float32" else np.float64
        x = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf}.get(ours, ours)
        a, b = npt(tf_value), npt(x)
        return (np.isnan(a) and np.isnan(b)) or a.tobytes() == b.tobytes()
    return int(tf_value) == ours


def check(decoder, tmp_path, records, defaults, kw=None):
    kw = kw or {}
    ours = specc_decode(decoder, tmp_path, records, defaults, kw)
    sel = kw.get("select_cols")
    types = [t for t, _ in defaults]
    for record, got in zip(records, ours):
        want = tf_decode(record, defaults, kw)
        if want is None:
            assert "error" in got, f"{record!r}: TF fails, specc gives {got}"
            continue
        assert "ok" in got, f"{record!r}: TF gives {want}, specc fails: {got}"
        assert len(got["ok"]) == len(want), record
        for t, w, g in zip(types, want, got["ok"]):
            assert same(w, g, t), f"{record!r} (select_cols {sel}): TF {w!r}, specc {g!r}"


CASES = [
    '1,2.5,x', '1,,x', ',2,x', '"a",2,"x""y"', '1,2,"a,b"', 'a"b,2,3',
    '1,2,"ab"c', '1,2,"ab', '"",2,x', ' 1 , 2.5 ,x', '1,2', '1,2,3,4', '',
    '1,2,', '1,2,""', '+5,-0,y', '1,1e40,z', '1,inf,z', '1,-Infinity,z',
    '1,NaN,z', '1,0x10,z', '1,1.,z', '1,.5,z', '1,1_0,z', '1.5,2,x',
    '99999999999,2,x', '-2147483648,2,x', '2147483648,2,x', '1,2,\r',
    '1,2,x\r', '\r1,2,x', '1,2,"a\nb"', '1,2,"a\rb"', '1, 2 ,  ', '"1","2","3"',
    '" 1 ",2,x', 'NA,2,x', '"NA",NA,NA', '1,2,"""', '1,2,""""', '1,"2",',
]


@pytest.mark.parametrize("na_value", ["", "NA"])
def test_documented_cases(decoder, tmp_path, na_value):
    defaults = [("int32", 7), ("float32", 9.5), ("string", "d")]
    check(decoder, tmp_path, CASES, defaults, {"na_value": na_value})


def test_required_columns(decoder, tmp_path):
    defaults = [("int64", None), ("float64", None), ("string", None)]
    check(decoder, tmp_path, CASES, defaults)


def test_select_cols(decoder, tmp_path):
    records = CASES + ['1,2,3,4,5', 'a"b,2,3,4', '1,2,3,a"b', '1,2,3,', '1,2,3']
    check(decoder, tmp_path, records, [("int32", 0), ("string", "e")],
          {"select_cols": [1, 3]})
    check(decoder, tmp_path, records, [("string", "e")], {"select_cols": [0]})


def test_field_delim_and_no_quoting(decoder, tmp_path):
    records = ['1;"a;b";3', '1;2;3', '1,2,3', '"a";2;3', '1;;', 'x";2;3']
    defaults = [("string", "e"), ("string", "f"), ("int32", 0)]
    check(decoder, tmp_path, records, defaults, {"field_delim": ";"})
    check(decoder, tmp_path, CASES, [("string", "e"), ("string", "f"), ("string", "g")],
          {"use_quote_delim": False})


def test_random_records(decoder, tmp_path):
    alphabet = ['"', ',', '1', '2', '.', 'a', ' ', '\n', '-', 'e', '""']
    records = ["".join(RNG.choice(alphabet, int(RNG.integers(0, 9)))) for _ in range(400)]
    check(decoder, tmp_path, records, [("string", "e"), ("float32", 1.0), ("int64", 2)])
    check(decoder, tmp_path, records, [("string", "e"), ("string", "f")],
          {"select_cols": [0, 2]})
