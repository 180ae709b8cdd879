"""Tables sharded across MPI ranks: the histograms the ranks write together,
as TensorBoard reads them.

A wide-and-deep model over hashed ids with a `fixed_size_partitioner` on
its tables trains on N ranks (`mpirun -np N specc run`) with
`summaries { histograms = true }`. Each rank holds only its partitions'
rows; rank 0 writes one histogram per table. Checked, for every table,
at the last step (which writes): TensorBoard's `EventAccumulator` reads
the histogram TF's own `tf.compat.v1.summary.histogram` makes of the whole
table as the job's checkpoint holds it (`tf.train.load_variable`): the
same bucket limits, counts, min, max and num, and sum and sum of squares
to 1e-6 relative (the ranks add their partial sums).

The rank count, partitions, hash buckets, embedding width, steps and the
summaries' period are drawn from SPECC_INTEROP_SEED (any seed passes).
"""

import os
import subprocess
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402
from tensorboard.backend.event_processing.event_accumulator import (  # noqa: E402
    EventAccumulator,
)

from test_sharded_mpi_checkpoint import latest, mpirun  # noqa: E402
from test_sharded_mpi_checkpoint import spec_text as checkpoint_spec  # noqa: E402

SEED = int(os.environ.get("SPECC_INTEROP_SEED", "2026"))
ROOT = Path(__file__).resolve().parent.parent


def draw():
    rng = np.random.default_rng(SEED + 31)
    ranks = int(rng.integers(2, 4))
    parts = int(rng.integers(ranks, 2 * ranks + 2))
    buckets = int(rng.choice([4096, 8192, 16384]))
    dim = int(rng.integers(2, 9))
    every = int(rng.integers(1, 4))
    # The last step writes: 1, then every `every` steps.
    steps = 1 + every * int(rng.integers(1, 4))
    return ranks, parts, buckets, dim, every, steps


def spec_text(parts, buckets, dim, every, steps, summaries):
    """test_sharded_mpi_checkpoint's model, writing histograms every `every` steps."""
    return (checkpoint_spec(parts, buckets, dim, steps)
            + f'summaries {{ dir = "{summaries}", every_steps = {every}, histograms = true }}\n')



def tf_histogram(values):
    """TF's HistogramProto of `values` (its summary op, as a job writes it)."""
    g = tf.Graph()
    with g.as_default():
        s = tf.compat.v1.summary.histogram("t", tf.constant(values))
        with tf.compat.v1.Session(graph=g) as sess:
            summary = tf.compat.v1.Summary.FromString(sess.run(s))
    return summary.value[0].histo


def test_tensorboard_reads_whole_tables_histograms_of_sharded_ranks(specc, tmp_path):
    ranks, parts, buckets, dim, every, steps = draw()
    events, ckpt = tmp_path / "events", tmp_path / "ckpt"
    spec = tmp_path / "ctr_deep.spec"
    spec.write_text(spec_text(parts, buckets, dim, every, steps, events))
    cmd, env = mpirun(ranks)
    out = subprocess.run(cmd + [specc, "run", str(spec), "--checkpoint-dir", str(ckpt)],
                         check=True, capture_output=True, text=True, env=env)
    assert "tables are sharded across the replicas" in out.stderr, out.stderr
    prefix = latest(ckpt)
    assert prefix.endswith(f"-{steps}")

    acc = EventAccumulator(str(events), size_guidance={"histograms": 0})
    acc.Reload()
    tags = acc.Tags()["histograms"]
    tables = [n for n, _ in tf.train.list_variables(prefix)
              if n.startswith(("input_layer/", "linear_model/site"))
              and n.endswith("weights")]
    assert len(tables) == 3, tables
    for name in tables:
        assert name in tags, (name, tags)
        h = acc.Histograms(name)[-1]
        assert h.step == steps, (name, h.step)
        got = h.histogram_value
        want = tf_histogram(tf.train.load_variable(prefix, name))
        assert got.num == want.num == np.prod(tf.train.load_variable(prefix, name).shape)
        assert (got.min, got.max) == (want.min, want.max), name
        assert list(got.bucket_limit) == list(want.bucket_limit), name
        assert list(got.bucket) == list(want.bucket), name
        for a, b in [(got.sum, want.sum), (got.sum_squares, want.sum_squares)]:
            assert abs(a - b) <= 1e-6 * max(abs(a), abs(b)), (name, a, b)
