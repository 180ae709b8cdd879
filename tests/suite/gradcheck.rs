//! `specc gradcheck` on the shipped specs: the compiled gradients of one batch
//! agree with float64 finite differences, and the command says so in JSON.

use std::process::Command;

/// [`gradcheck`] of a spec given as text (written to a temporary directory).
fn gradcheck_text(name: &str, text: &str) -> serde_json::Value {
    let dir = specc_testkit::tmp::TempDir::new(&format!("gradcheck_{name}"));
    let spec = dir.path().join(format!("{name}.spec"));
    std::fs::write(&spec, text).unwrap();
    gradcheck(spec.to_str().unwrap())
}

fn gradcheck(spec: &str) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_specc"))
        .args(["gradcheck", spec, "--samples", "24", "--json"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap()).unwrap()
}

#[test]
fn digits_mlp_gradients_match_finite_differences() {
    let r = gradcheck("specs/digits_mlp.spec");
    assert_eq!(r["passed"], true);
    let worst = r["worst_relative_error"].as_f64().unwrap();
    assert!(worst < 1e-3, "worst relative error {worst}");
    assert_eq!(r["params"].as_array().unwrap().len(), 4);
}

#[test]
fn cancer_logreg_gradients_match_finite_differences() {
    let r = gradcheck("specs/cancer_logreg.spec");
    assert_eq!(r["passed"], true);
    assert!(r["worst_relative_error"].as_f64().unwrap() < 1e-3);
}

/// A streamed source: the first batch comes through the input pipeline
/// (here titanic's feature columns, the data marked `stream = true`).
#[test]
fn a_streamed_spec_checks_its_first_batch() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("specs/titanic.spec")).unwrap();
    let data = root.join("specs/data/titanic.csv");
    assert!(text.contains("data csv(\"data/titanic.csv\")"));
    let streamed = text.replace(
        "data csv(\"data/titanic.csv\")",
        &format!("data csv(\"{}\", stream = true)", data.display()),
    );
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("gradcheck_stream");
    std::fs::create_dir_all(&dir).unwrap();
    let spec = dir.join("titanic_streamed.spec");
    std::fs::write(&spec, streamed).unwrap();
    let r = gradcheck(spec.to_str().unwrap());
    assert_eq!(r["passed"], true, "{r}");
    assert!(r["worst_relative_error"].as_f64().unwrap() < 1e-2, "{r}");
}

/// Products of batches of matrices (`[B, T, D] @ [D, E]`, and attention's
/// `[B, T, D] @ [B, S, D]^T` and `[B, T, S] @ [B, S, D]`): their gradients
/// through a single-head attention match finite differences.
#[test]
fn batched_products_in_attention_match_finite_differences() {
    let r = gradcheck_text(
        "attention",
        "data synthetic(rows = 32, features = 12, classes = 3)
label label: int
features { x = numeric(x0..x11) }
params {
  Wq: [4, 4] = glorot_uniform(seed = 1)
  Wk: [4, 4] = glorot_uniform(seed = 2)
  Wv: [4, 4] = glorot_uniform(seed = 3)
  Wo: [4, 3] = glorot_uniform(seed = 4)
}
seq = reshape(x, [B, 3, 4])
q = seq @ Wq
k = seq @ Wk
v = seq @ Wv
scores = softmax(matmul(q, k, transpose_b = true) * 0.5)
logits = reduce_mean(matmul(scores, v) @ Wo, axis = 1)
loss = mean(sparse_softmax_cross_entropy(label, logits))
optimizer adam(learning_rate = 0.01)
train { batch = 8, steps = 10 }
",
    );
    assert_eq!(r["passed"], true);
    let worst = r["worst_relative_error"].as_f64().unwrap();
    assert!(worst < 1e-3, "worst relative error {worst}");
    assert_eq!(r["params"].as_array().unwrap().len(), 4);
}

/// `expand_dims`, `squeeze`, `stack`, `tile`, `unstack`, `split` and a
/// `sequence_mask` factor: their gradients match finite differences.
#[test]
fn shape_ops_match_finite_differences() {
    let r = gradcheck_text(
        "shape_ops",
        "data synthetic(rows = 32, features = 6, classes = 3)
label label: int
features { x = numeric(x0..x5) }
params {
  W: [2, 3] = glorot_uniform(seed = 1)
  V: [3, 3] = glorot_uniform(seed = 2)
}
seq = reshape(x, [B, 3, 2])
e = expand_dims(seq @ W, 2)
s = squeeze(e, axis = 2)
st = stack([s, s * 2.0], axis = 1)
t = tile(reduce_sum(st, axis = 1), [1, 2, 1])
m = sequence_mask(cast(argmax(x, 1), float32), 6)
u0, u1, u2 = unstack(t, axis = 2)
p, q = split(u0 + u1 * u2, 2, axis = 1)
logits = reduce_mean(t @ V, axis = 1) * reduce_mean(m, axis = 1, keepdims = true) + (p * q) @ V
loss = mean(sparse_softmax_cross_entropy(label, logits))
optimizer adam(learning_rate = 0.01)
train { batch = 8, steps = 10 }
",
    );
    assert_eq!(r["passed"], true);
    let worst = r["worst_relative_error"].as_f64().unwrap();
    assert!(worst < 1e-3, "worst relative error {worst}");
}

/// Time-major code (`[B, T, D]` to `[T, B, D]` and back, a stack of
/// per-step `[B, D]` values on axis 0), `gather` along the time axis (by
/// constant ids, and per example with `batch_dims = 1`) and attention with
/// a Keras mask from `sequence_mask`: their gradients match finite
/// differences through the whole step.
#[test]
fn time_major_gathers_and_masked_attention_match_finite_differences() {
    let r = gradcheck_text(
        "time_major",
        "data synthetic(rows = 32, features = 13, classes = 3)
label label: int
features {
  x = numeric(x0..x11)
  n = numeric(x12)
}
params {
  W: [4, 4] = glorot_uniform(seed = 1)
  V: [4, 3] = glorot_uniform(seed = 2)
}
seq = reshape(x, [B, 3, 4])
tm = tanh(transpose(seq, [1, 0, 2]) @ W)
s0, s1, s2 = unstack(tm, axis = 0)
steps = stack([s2, s0 * s1, s1])
back = transpose(steps, [1, 0, 2])
picked = gather(back, [2, 0, 0, 1], axis = 1)
last = gather(back, cast(argmax(x[:, 0:3], 1), int32), axis = 1, batch_dims = 1)
mask = expand_dims(sequence_mask(reshape(abs(n) * 2.0 + 1.0, [B]), 4), 1)
scores = matmul(picked, picked, transpose_b = true) * 0.5
att = matmul(softmax(scores, mask = mask), picked)
logits = reduce_mean(att @ V, axis = 1) + last @ V
loss = mean(sparse_softmax_cross_entropy(label, logits))
optimizer adam(learning_rate = 0.01)
train { batch = 8, steps = 10 }
",
    );
    assert_eq!(r["passed"], true);
    let worst = r["worst_relative_error"].as_f64().unwrap();
    assert!(worst < 1e-3, "worst relative error {worst}");
    assert_eq!(r["params"].as_array().unwrap().len(), 2);
}

/// The layer library's `multi_head_attention` (einsum projections to heads,
/// masked attention with and without dropout's path, the output
/// projection) and `layer_normalization`: their gradients match finite
/// differences through the whole step.
#[test]
fn library_attention_matches_finite_differences() {
    for dropout in ["0.0", "0.5"] {
        let r = gradcheck_text(
            "library_attention",
            &format!(
                "data synthetic(rows = 32, features = 12, classes = 3)
label label: int
features {{ x = numeric(x0..x11) }}
seq = reshape(x, [B, 4, 3])
mask = expand_dims(sequence_mask(floor(cast(argmax(x, 1), float32) / 3.0), 4), 1)
a = layers.multi_head_attention(seq, seq, 2, 2, attention_mask = mask, value_dim = 3, dropout = {dropout})
h = layers.layer_normalization(seq + a)
logits = layers.dense(reduce_mean(h, axis = 1), 3)
loss = mean(sparse_softmax_cross_entropy(label, logits))
optimizer adam(learning_rate = 0.01)
train {{ batch = 8, steps = 10 }}
"
            ),
        );
        assert_eq!(r["passed"], true, "dropout {dropout}");
        let worst = r["worst_relative_error"].as_f64().unwrap();
        assert!(
            worst < 1e-3,
            "dropout {dropout}: worst relative error {worst}"
        );
        assert_eq!(
            r["params"].as_array().unwrap().len(),
            12,
            "dropout {dropout}"
        );
    }
}
