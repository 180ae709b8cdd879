//! Spec text for tests: values and shapes as spec literals, and the small
//! valid spec (with its data) that the CLI error tests change one piece of.

use crate::golden::num;

/// A JSON value as spec literal text (nested lists of floats, full precision).
pub fn literal(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(literal).collect();
            format!("[{}]", parts.join(", "))
        }
        other => format!("{:e}", num(other)),
    }
}

/// Dims as spec shape text: `[2, 3]`.
pub fn shape_text(dims: &[usize]) -> String {
    let d: Vec<String> = dims.iter().map(|x| x.to_string()).collect();
    format!("[{}]", d.join(", "))
}

/// A valid spec; each case replaces one piece of it.
pub const BASE: &str = r#"model tiny
data csv("data.csv")
label y: int
features {
  x = numeric(x0..x3)
}
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
train { batch = 4, steps = 10 }
metrics { accuracy(y, argmax(logits)) }
"#;

/// The base spec's `data.csv`.
pub const DATA: &str =
    "x0,x1,x2,x3,y\n1,2,3,4,0\n0.5,1,1.5,2,1\n-1,0,1,2,2\n3,1,4,1,0\n2,7,1,8,1\n";

/// The base spec with the first `from` replaced by `to`.
pub fn replace(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "base spec has no {from:?}");
    BASE.replacen(from, to, 1)
}
