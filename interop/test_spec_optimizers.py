"""specc's optimizer library (`adamw`, `lamb`, written as `optimizer_def`s in
`grammar/library/optimizers.spec`) trains as optax does.

A linear regression `x @ W + b` with a mean squared error is trained on one
full batch for K steps by `specc run` (the spec names `adamw(...)` or
`lamb(...)` with drawn hyperparameters, the learning rate a constant or a
`cosine_decay` schedule) and by optax (`optax.adamw`, `optax.lamb`, the
learning rate a number or `optax.cosine_decay_schedule`) on jax's gradient
of the same loss. specc's checkpoint, read by TensorFlow, holds each
variable and its slots as `W/mu`, `W/nu`; they equal optax's parameters
and its `ScaleByAdamState`'s `mu` and `nu` to 1e-4 relative.

Sizes, values, K and the hyperparameters are drawn from SPECC_INTEROP_SEED
(any seed passes).
"""

import os
import subprocess

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402
import tensorflow as tf  # noqa: E402

from conftest import literal  # noqa: E402

SEED = int(os.environ.get("SPECC_INTEROP_SEED", "2026"))
CASES = ["adamw", "lamb"]


def f32(v):
    """A drawn number as the float32 both sides compute with, as text."""
    return repr(float(np.float32(v)))


def draw(name):
    rng = np.random.default_rng(SEED + 10 * CASES.index(name))
    d, k = int(rng.integers(2, 6)), int(rng.integers(1, 4))
    rows, steps = int(rng.integers(8, 32)), int(rng.integers(3, 9))
    hyper = {
        "b1": f32(rng.choice([0.8, 0.9, 0.95])),
        "b2": f32(rng.choice([0.99, 0.999])),
        "eps": f32(rng.choice([1e-8, 1e-6, 1e-4]) if name == "adamw" else rng.choice([1e-6, 1e-4])),
        "weight_decay": f32(rng.choice([1e-4, 0.01, 0.1])),
    }
    return dict(
        d=d, k=k, steps=steps,
        W=rng.normal(scale=0.5, size=(d, k)).astype(np.float32),
        b=rng.normal(scale=0.1, size=(k,)).astype(np.float32),
        x=rng.normal(size=(rows, d)).astype(np.float32),
        y=rng.normal(size=(rows, k)).astype(np.float32),
        lr=f32(rng.choice([0.003, 0.01, 0.05])),
        schedule=bool(rng.integers(0, 2)),
        decay_steps=int(rng.integers(2, 10)),
        alpha=f32(rng.choice([0.0, 0.1])),
        hyper=hyper,
    )


def spec_text(name, p):
    lr = p["lr"]
    if p["schedule"]:
        lr = f"cosine_decay({lr}, decay_steps = {p['decay_steps']}, alpha = {p['alpha']})"
    hyper = ", ".join(f"{k} = {v}" for k, v in p["hyper"].items())
    xs = f"x0..x{p['d'] - 1}"
    ys = ", ".join(f"y{j}" for j in range(p["k"]))
    return f"""
data csv("train.csv")
label y: float from {ys}
features {{ x = numeric({xs}) }}
params {{
  W: {list(p['W'].shape)} = constant(value = {literal(p['W'])})
  b: {list(p['b'].shape)} = constant(value = {literal(p['b'])})
}}
loss = mean(square(x @ W + b - y))
optimizer {name}(learning_rate = {lr}, {hyper})
train {{ batch = {len(p['x'])}, steps = {p['steps']}, eval_fraction = 0 }}
"""


def write_csv(path, p):
    cols = [f"x{i}" for i in range(p["d"])] + [f"y{j}" for j in range(p["k"])]
    with open(path, "w") as f:
        f.write(",".join(cols) + "\n")
        for xr, yr in zip(p["x"], p["y"]):
            f.write(",".join(repr(float(v)) for v in [*xr, *yr]) + "\n")


def optax_train(name, p):
    lr = float(p["lr"])
    if p["schedule"]:
        lr = optax.cosine_decay_schedule(lr, p["decay_steps"], alpha=float(p["alpha"]))
    h = {k: float(v) for k, v in p["hyper"].items()}
    opt = getattr(optax, name)(lr, b1=h["b1"], b2=h["b2"], eps=h["eps"],
                               weight_decay=h["weight_decay"])
    params = {"W": jnp.asarray(p["W"]), "b": jnp.asarray(p["b"])}
    x, y = jnp.asarray(p["x"]), jnp.asarray(p["y"])

    def loss(q):
        return jnp.mean(jnp.square(x @ q["W"] + q["b"] - y))

    state = opt.init(params)
    for _ in range(p["steps"]):
        grads = jax.grad(loss)(params)
        updates, state = opt.update(grads, state, params)
        params = optax.apply_updates(params, updates)
    adam = next(s for s in jax.tree_util.tree_leaves(
        state, is_leaf=lambda s: hasattr(s, "mu")) if hasattr(s, "mu"))
    return params, adam


@pytest.mark.parametrize("name", CASES)
def test_specc_trains_as_optax(name, specc, tmp_path):
    p = draw(name)
    write_csv(tmp_path / "train.csv", p)
    (tmp_path / "spec.spec").write_text(spec_text(name, p))
    subprocess.run([specc, "run", "spec.spec", "--checkpoint-dir", "ckpt"], cwd=tmp_path,
                   check=True, capture_output=True, text=True)
    ours = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(tmp_path / "ckpt")))
    assert int(ours.get_tensor("global_step")) == p["steps"]
    params, adam = optax_train(name, p)
    for v in ["W", "b"]:
        for got, want, what in [
            (ours.get_tensor(v), params[v], v),
            (ours.get_tensor(f"{v}/mu"), adam.mu[v], f"{v}/mu"),
            (ours.get_tensor(f"{v}/nu"), adam.nu[v], f"{v}/nu"),
        ]:
            want = np.asarray(want)
            scale = float(np.max(np.abs(want)))
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * scale, err_msg=what)
