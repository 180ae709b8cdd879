"""Interop of specc's TF V2 checkpoints with real TensorFlow.

TensorFlow writes checkpoints (its SaveV2 kernel, and tf.compat.v1.train.Saver)
that `specc inspect` must read exactly; specc writes checkpoints (the runtime
example `write_checkpoint`, and its CheckpointManager) that
`tf.train.load_checkpoint`, `tf.train.list_variables` and
`tf.train.latest_checkpoint` must read exactly; and for the same tensors both
write the same bytes.

Run: SPECC=target/debug/specc SPECC_WRITE_CHECKPOINT=target/debug/examples/write_checkpoint \
     /work/venv-tf/bin/python -m pytest interop/test_checkpoint.py
(defaults: target/debug/... under the repository, built with cargo when missing).
"""

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

from conftest import runtime_example  # noqa: E402


@pytest.fixture(scope="session")
def writer():
    return runtime_example("write_checkpoint", "SPECC_WRITE_CHECKPOINT")


RNG = np.random.default_rng(20260123)

SHAPES = [[], [5], [3, 4], [0], [2, 0, 3], [2, 3, 4]]


def random_array(dtype, shape):
    """Random values of a TF dtype name, with the awkward ones for floats."""
    n = int(np.prod(shape)) if shape else 1
    if dtype in ("float32", "float64", "float16", "bfloat16"):
        x = RNG.standard_normal(n) * 10.0 ** RNG.integers(-30, 30, n)
        special = [np.nan, np.inf, -np.inf, -0.0, 1e-42]
        x[: min(n, len(special))] = special[: min(n, len(special))]
        if dtype in ("float16", "bfloat16"):
            x = np.clip(RNG.standard_normal(n) * 100, -6e4, 6e4)
        arr = tf.constant(x.reshape(shape), dtype=getattr(tf, dtype)).numpy()
    elif dtype == "bool":
        arr = RNG.integers(0, 2, n).astype(bool).reshape(shape)
    else:
        info = np.iinfo(dtype)
        arr = RNG.integers(info.min, info.max, n, dtype=dtype, endpoint=True).reshape(shape)
    return arr


DTYPES = ["float32", "float64", "int32", "int64", "bool", "int8", "int16",
          "uint8", "uint16", "uint32", "uint64", "float16", "bfloat16"]


def variables():
    """name -> array, of every dtype and shape."""
    out = {}
    for d in DTYPES:
        for i, s in enumerate(SHAPES):
            out[f"{d}/v{i}"] = random_array(d, s)
    return out


def tf_save(prefix, arrays):
    names = sorted(arrays)
    tf.raw_ops.SaveV2(
        prefix=str(prefix),
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=[tf.constant(arrays[n]) for n in names],
    )


def json_value(x, dtype):
    if dtype in ("float16", "bfloat16"):
        return int(np.asarray(x).view(np.uint16))  # raw bits for the writer
    if dtype == "bool":
        return bool(x)
    if dtype.startswith(("int", "uint")):
        return int(x)
    x = float(x)
    if np.isnan(x):
        return "nan"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def spec_json(arrays):
    tensors = []
    for name, a in arrays.items():
        dtype = tf.as_dtype(a.dtype).name
        tensors.append({
            "name": name,
            "dtype": dtype,
            "shape": list(a.shape),
            "values": [json_value(x, dtype) for x in a.reshape(-1)],
        })
    return tensors


def specc_write(writer, tmp_path, arrays, **where):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"tensors": spec_json(arrays), **where}))
    subprocess.run([writer, str(spec)], check=True)


def inspect(specc, *args):
    out = subprocess.run([specc, "inspect", *map(str, args)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def as_float64(values):
    flat = np.array(values, dtype=object).reshape(-1) if isinstance(values, list) else np.array([values], dtype=object)
    return np.array([{"nan": np.nan, "inf": np.inf, "-inf": -np.inf}.get(v, v) if isinstance(v, str) else v
                     for v in flat], dtype=np.float64)


def assert_exact(got_values, want, name):
    """specc's JSON values equal the array exactly (bits, NaN for NaN)."""
    dtype = tf.as_dtype(want.dtype).name
    if dtype in ("float32", "float64", "float16", "bfloat16"):
        got = as_float64(got_values)
        exp = want.astype(np.float64).reshape(-1)
        assert got.shape == exp.shape, name
        same = (got.view(np.uint64) == exp.view(np.uint64)) | (np.isnan(got) & np.isnan(exp))
        assert same.all(), (name, got[~same], exp[~same])
    else:
        got = np.array(got_values, dtype=object).reshape(-1) if want.shape else [got_values]
        assert [type(g) for g in got] == [bool if dtype == "bool" else int] * want.size, name
        assert list(got) == want.reshape(-1).tolist(), name


def test_specc_reads_tf_checkpoint_exactly(tmp_path, specc):
    arrays = variables()
    prefix = tmp_path / "tf" / "model.ckpt-1"
    tf_save(prefix, arrays)
    listed = inspect(specc, prefix, "--json")["variables"]
    assert [(v["name"], v["shape"]) for v in listed] == [
        (n, list(s)) for n, s in tf.train.list_variables(str(prefix))]
    for name, a in arrays.items():
        out = inspect(specc, prefix, "--json", "--tensor", name)
        assert out["dtype"] == tf.as_dtype(a.dtype).name, name
        assert out["shape"] == list(a.shape), name
        assert_exact(out["values"], a, name)


def test_tf_reads_specc_checkpoint_exactly(tmp_path, writer):
    arrays = variables()
    prefix = tmp_path / "specc" / "model.ckpt-2"
    prefix.parent.mkdir()
    specc_write(writer, tmp_path, arrays, prefix=str(prefix))
    reader = tf.train.load_checkpoint(str(prefix))
    dtypes = reader.get_variable_to_dtype_map()
    shapes = reader.get_variable_to_shape_map()
    assert sorted(dtypes) == sorted(arrays)
    assert [n for n, _ in tf.train.list_variables(str(prefix))] == sorted(arrays)
    for name, a in arrays.items():
        assert dtypes[name] == tf.as_dtype(a.dtype), name
        assert list(shapes[name]) == list(a.shape), name
        got = reader.get_tensor(name)
        assert got.dtype == a.dtype and got.shape == a.shape, name
        assert got.tobytes() == a.tobytes(), name


def test_specc_writes_the_same_bytes_as_tf(tmp_path, writer):
    arrays = variables()
    tf_prefix = tmp_path / "tf" / "model.ckpt-3"
    tf_save(tf_prefix, arrays)
    ours = tmp_path / "specc" / "model.ckpt-3"
    ours.parent.mkdir()
    specc_write(writer, tmp_path, arrays, prefix=str(ours))
    for suffix in (".index", ".data-00000-of-00001"):
        assert Path(f"{ours}{suffix}").read_bytes() == Path(f"{tf_prefix}{suffix}").read_bytes(), suffix


def test_index_of_many_blocks_is_tfs(tmp_path, writer, specc):
    """More than 256 KiB of index entries: several data blocks, restart points,
    and leveldb's separators as index keys, byte for byte."""
    arrays = {f"layer_{i:05d}/kernel/ExponentialMovingAverage": np.float32(i) * np.float32(0.5)
              for i in range(9000)}
    arrays = {k: np.asarray(v, dtype=np.float32) for k, v in arrays.items()}
    tf_prefix = tmp_path / "tf" / "model.ckpt-4"
    tf_save(tf_prefix, arrays)
    assert Path(f"{tf_prefix}.index").stat().st_size > 262144
    ours = tmp_path / "specc" / "model.ckpt-4"
    ours.parent.mkdir()
    specc_write(writer, tmp_path, arrays, prefix=str(ours))
    assert Path(f"{ours}.index").read_bytes() == Path(f"{tf_prefix}.index").read_bytes()
    name = sorted(arrays)[-1]
    out = inspect(specc, tf_prefix, "--json", "--tensor", name)
    assert_exact(out["values"], arrays[name], name)


def test_tf_follows_specc_state_file(tmp_path, writer):
    arrays = {"w": random_array("float32", [3, 2]), "global_step": np.asarray(7, np.int64)}
    d = tmp_path / "run"
    for step in (5, 6, 7):
        specc_write(writer, tmp_path, arrays, manager={"dir": str(d), "step": step, "max_to_keep": 2})
    assert tf.train.latest_checkpoint(str(d)) == str(d / "model.ckpt-7")
    st = tf.train.get_checkpoint_state(str(d))
    assert [Path(p).name for p in st.all_model_checkpoint_paths] == ["model.ckpt-6", "model.ckpt-7"]
    assert len(st.all_model_checkpoint_timestamps) == 2
    assert not Path(d / "model.ckpt-5.index").exists()
    reader = tf.train.load_checkpoint(str(d))
    assert reader.get_tensor("w").tobytes() == arrays["w"].tobytes()


def test_specc_follows_tf_saver_state_file(tmp_path, specc):
    d = tmp_path / "saver"
    init = random_array("float64", [4])
    g = tf.Graph()
    with g.as_default():
        v = tf.compat.v1.get_variable("v", initializer=tf.constant(init))
        step = tf.compat.v1.train.get_or_create_global_step()
        saver = tf.compat.v1.train.Saver(max_to_keep=2)
        with tf.compat.v1.Session(graph=g) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for s in (1, 2, 3):
                sess.run(step.assign(s))
                saver.save(sess, str(d / "model.ckpt"), global_step=s)
            want = sess.run(v)
    out = inspect(specc, d, "--json")
    assert out["checkpoint"].endswith("model.ckpt-3")
    assert {x["name"]: x["dtype"] for x in out["variables"]} == {"v": "float64", "global_step": "int64"}
    assert_exact(inspect(specc, d, "--json", "--tensor", "v")["values"], want, "v")
    assert inspect(specc, d, "--json", "--tensor", "global_step")["values"] == 3


def test_specc_reads_tf_sharded_checkpoint(tmp_path, specc):
    """Saver(sharded=True) over two CPU devices: two data shards, one index."""
    d = tmp_path / "sharded"
    d.mkdir()
    a0, a1 = random_array("float32", [3, 5]), random_array("int64", [4])
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:0"):
            v0 = tf.compat.v1.get_variable("dev0/v", initializer=tf.constant(a0))
        with tf.device("/cpu:1"):
            v1 = tf.compat.v1.get_variable("dev1/v", initializer=tf.constant(a1))
        saver = tf.compat.v1.train.Saver(sharded=True)
        config = tf.compat.v1.ConfigProto(device_count={"CPU": 2})
        with tf.compat.v1.Session(graph=g, config=config) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            prefix = saver.save(sess, str(d / "model.ckpt"), global_step=9)
            want0, want1 = sess.run([v0, v1])
    shards = sorted(p.name for p in d.glob("model.ckpt-9.data-*"))
    assert shards == ["model.ckpt-9.data-00000-of-00002", "model.ckpt-9.data-00001-of-00002"]
    assert_exact(inspect(specc, prefix, "--json", "--tensor", "dev0/v")["values"], want0, "dev0/v")
    assert_exact(inspect(specc, prefix, "--json", "--tensor", "dev1/v")["values"], want1, "dev1/v")
    # A missing shard is named.
    Path(d / shards[1]).unlink()
    out = subprocess.run([specc, "inspect", prefix], capture_output=True, text=True)
    assert out.returncode == 1
    assert shards[1] in out.stderr and "missing data shard" in out.stderr, out.stderr


def test_tf_saver_restores_specc_checkpoint_and_trains_on(tmp_path, writer):
    """A tf.compat.v1 program with the same variable names (Adam's slots and
    beta powers, global_step) restores specc's checkpoint and continues."""
    arrays = {
        "w": random_array("float32", [3, 2]),
        "w/Adam": random_array("float32", [3, 2]),
        "w/Adam_1": np.abs(random_array("float32", [3, 2])),
        "beta1_power": np.asarray(0.5, np.float32),
        "beta2_power": np.asarray(0.9, np.float32),
        "global_step": np.asarray(41, np.int64),
    }
    for k in ("w", "w/Adam", "w/Adam_1"):
        arrays[k] = np.nan_to_num(arrays[k], nan=0.5, posinf=1.0, neginf=-1.0).clip(-1e3, 1e3)
    d = tmp_path / "run"
    specc_write(writer, tmp_path, arrays, manager={"dir": str(d), "step": 41})
    g = tf.Graph()
    with g.as_default():
        w = tf.compat.v1.get_variable("w", shape=[3, 2], dtype=tf.float32)
        step = tf.compat.v1.train.get_or_create_global_step()
        loss = tf.reduce_sum(w * w)
        opt = tf.compat.v1.train.AdamOptimizer(0.01)
        train = opt.minimize(loss, global_step=step)
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session(graph=g) as sess:
            saver.restore(sess, tf.train.latest_checkpoint(str(d)))
            got = sess.run({"w": w, "w/Adam": opt.get_slot(w, "m"), "w/Adam_1": opt.get_slot(w, "v"),
                            "global_step": step})
            b1, b2 = sess.run(opt._get_beta_accumulators())
            for k in ("w", "w/Adam", "w/Adam_1"):
                assert got[k].tobytes() == arrays[k].tobytes(), k
            assert got["global_step"] == 41
            assert (b1, b2) == (arrays["beta1_power"], arrays["beta2_power"])
            sess.run(train)
            assert sess.run(step) == 42
            assert np.isfinite(sess.run(w)).all()
