"""TensorBoard reads what `specc run` writes into its checkpoint directory.

A run with summaries every 10 steps, parameter histograms and a held-out
evaluation every 15 steps: TensorBoard's EventMultiplexer sees two runs, `.`
(train: loss, learning_rate, accuracy, global_step/sec, a histogram per
parameter, of the activation `h` and of every gradient) and `eval` (loss, accuracy) under the same tags, at the steps TF's
hooks would write them, and the last eval values are the held-out numbers the
run reports; its Text tab holds the spec and the resolved configuration.
TF's `tf.train.load_checkpoint` reads the checkpoint beside them.
"""

import json
import subprocess

import numpy as np
import tensorflow as tf
from tensorboard.backend.event_processing import event_accumulator, event_multiplexer

SPEC = """model tiny
data csv("data.csv")
label y: int
features { x = numeric(x0..x3) }
params {
  W1: [4, 8] = glorot_uniform(seed = 1)
  b1: [8]    = zeros
  W2: [8, 3] = glorot_uniform(seed = 2)
  b2: [3]    = zeros
}
h      = relu(x @ W1 + b1)
logits = h @ W2 + b2
loss   = mean(sparse_softmax_cross_entropy(y, logits))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 40, eval_fraction = 0.5 }
metrics { accuracy(y, argmax(logits)) }
summaries { every_steps = 10, histograms = true, histogram_tensors = [h], gradient_histograms = true }
evaluate { every_steps = 15 }
"""


def test_tensorboard_reads_the_train_and_eval_runs_of_specc_run(specc, tmp_path):
    rng = np.random.default_rng(3)
    rows = [[*rng.normal(size=4).round(3), int(rng.integers(3))] for _ in range(20)]
    (tmp_path / "data.csv").write_text(
        "x0,x1,x2,x3,y\n" + "".join(",".join(str(v) for v in r) + "\n" for r in rows)
    )
    (tmp_path / "spec.spec").write_text(SPEC)
    out = subprocess.run(
        [specc, "run", "spec.spec", "--json", "--checkpoint-dir", "ck"],
        cwd=tmp_path, check=True, capture_output=True, text=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])

    # Keep every histogram (TensorBoard samples them down to 1 by default).
    mux = event_multiplexer.EventMultiplexer(size_guidance={event_accumulator.HISTOGRAMS: 0})
    mux.AddRunsFromDirectory(str(tmp_path / "ck"))
    mux.Reload()
    runs = mux.Runs()
    assert set(runs) == {".", "eval"}, runs
    train = runs["."]
    for tag in ["loss", "learning_rate", "accuracy"]:
        assert tag in train["scalars"], train
        assert [e.step for e in mux.Scalars(".", tag)] == [1, 11, 21, 31], tag
    assert "global_step/sec" in train["scalars"]
    assert [e.value for e in mux.Scalars(".", "learning_rate")] == [np.float32(0.01)] * 4
    for p in ["W1", "b1", "W2", "b2"]:
        assert [h.step for h in mux.Histograms(".", p)] == [1, 11, 21, 31], p

    # Opt-in histograms of an activation (the batch's h, 4 rows of 8) and
    # of every gradient.
    assert [h.histogram_value.num for h in mux.Histograms(".", "h")] == [32] * 4
    for p, n in [("W1", 32), ("b1", 8), ("W2", 24), ("b2", 3)]:
        hs = mux.Histograms(".", "gradients/" + p)
        assert [h.step for h in hs] == [1, 11, 21, 31] and hs[0].histogram_value.num == n, p

    # The histogram of W2 at the last write has W2's element count.
    last = mux.Histograms(".", "W2")[-1].histogram_value
    assert last.num == 8 * 3

    ev = runs["eval"]
    assert {"loss", "accuracy"} <= set(ev["scalars"]), ev
    assert [e.step for e in mux.Scalars("eval", "loss")] == [15, 30, 40]
    assert mux.Scalars("eval", "loss")[-1].value == np.float32(result["eval"]["loss"])
    assert mux.Scalars("eval", "accuracy")[-1].value == np.float32(result["eval"]["accuracy"])

    # TensorBoard's Text tab: the spec as written and the resolved
    # configuration, as `tf.summary.text` writes them, at the first step.
    assert {"spec", "config"} <= set(mux.PluginRunToTagToContent("text")["."]), mux.PluginRunToTagToContent("text")
    spec_text = mux.Tensors(".", "spec")
    assert [t.step for t in spec_text] == [1]
    spec_md = tf.make_ndarray(spec_text[0].tensor_proto).item().decode()
    assert spec_md == "```\n" + SPEC.rstrip() + "\n```"
    config_md = tf.make_ndarray(mux.Tensors(".", "config")[0].tensor_proto).item().decode()
    assert "  summaries:\n" in config_md and "    every_steps: 10\n" in config_md, config_md

    reader = tf.train.load_checkpoint(str(tmp_path / "ck"))
    assert reader.get_tensor("global_step") == 40
    assert reader.get_variable_to_shape_map()["W2"] == [8, 3]
