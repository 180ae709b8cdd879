//! The forward IR lowered to TFLite and run by specc's TFLite interpreter,
//! against the reference interpreter of the IR (`specc_compiler::interp`,
//! float64) with the same parameters and inputs: 1e-5 relative.

use std::collections::HashMap;

use ndarray::{ArrayD, IxDyn};
use specc_compiler::interp::{self, Tensor};
use specc_compiler::tflite::{export_tflite, TfliteExport};
use specc_grammar::SourceFile;
use specc_tflite::BuiltinOperator as B;

const BATCH: usize = 5;

/// Deterministic values in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

struct Case {
    text: String,
    model: specc_compiler::Model,
    params: HashMap<String, ArrayD<f32>>,
}

fn case(body: &str, params: &[(&str, &[usize])]) -> Case {
    let decls: String = params
        .iter()
        .map(|(n, d)| format!("  {n}: {d:?} = zeros\n"))
        .collect();
    let text = format!(
        "model t\ndata synthetic(rows = 8, features = 6)\nfeatures {{ x = numeric(x0..x5) }}\nlabel label: int\n\
         params {{\n{decls}}}\n{body}\nloss = mean(sparse_softmax_cross_entropy(label, logits))\n\
         optimizer gradient_descent(learning_rate = 0.1)\ntrain {{ batch = 4, steps = 1 }}\n"
    );
    let model =
        specc_compiler::check(&SourceFile::new("t.spec", text.clone())).unwrap_or_else(|d| {
            panic!(
                "{:?}\n{text}",
                d.iter().map(|d| &d.message).collect::<Vec<_>>()
            )
        });
    let params = params
        .iter()
        .enumerate()
        .map(|(k, (n, d))| {
            let len = d.iter().product();
            let v = ArrayD::from_shape_vec(IxDyn(d), values(len, k as u64 + 11)).unwrap();
            (n.to_string(), v)
        })
        .collect();
    Case {
        text,
        model,
        params,
    }
}

/// Exports `outputs`, runs both interpreters on a batch, compares every value.
fn check(c: &Case, outputs: &[&str], batch: Option<u32>) -> specc_tflite::Model {
    let g = &c.model.graph;
    let outs: Vec<(String, specc_compiler::ir::NodeId)> = outputs
        .iter()
        .map(|&o| {
            let node = c
                .model
                .bindings
                .iter()
                .find(|b| b.0 == o)
                .expect("binding")
                .1;
            (o.to_string(), node)
        })
        .collect();
    let request = TfliteExport {
        graph: g,
        params: &c.params,
        inputs: &["x".to_string()],
        outputs: &outs,
        batch,
    };
    let model = export_tflite(&request).expect("exports");
    // Through the file format.
    let model = specc_tflite::from_bytes(&specc_tflite::to_bytes(&model)).expect("reads back");

    let x = values(BATCH * 6, 99);
    let xa = ArrayD::from_shape_vec(IxDyn(&[BATCH, 6]), x.clone()).unwrap();
    let got = specc_tflite::run(&model, &[xa.view()]).expect("runs");

    let inputs: Vec<Tensor> = g
        .inputs
        .iter()
        .map(|l| {
            if l.name == "x" {
                Tensor::new(vec![BATCH, 6], x.iter().map(|&v| v as f64).collect())
            } else {
                Tensor::new(vec![BATCH], vec![0.0; BATCH])
            }
        })
        .collect();
    let vars: Vec<Tensor> = g
        .vars
        .iter()
        .map(|l| {
            let v = &c.params[&l.name];
            Tensor::new(v.shape().to_vec(), v.iter().map(|&x| x as f64).collect())
        })
        .collect();
    let env = interp::Env {
        inputs: &inputs,
        vars: &vars,
        batch: BATCH,
        global_step: 0.0,
    };
    let want = interp::eval(g, &env, &outs.iter().map(|o| o.1).collect::<Vec<_>>());
    for ((name, _), (got, want)) in outs.iter().zip(got.iter().zip(&want)) {
        assert_eq!(got.shape(), want.dims.as_slice(), "{name}: shape");
        for (i, (&a, &b)) in got.iter().zip(&want.data).enumerate() {
            let tol = 1e-5 * b.abs().max(1e-2);
            assert!(
                (a as f64 - b).abs() <= tol,
                "{name}[{i}]: tflite {a} vs reference {b}"
            );
        }
    }
    model
}

fn builtins(m: &specc_tflite::Model) -> Vec<B> {
    m.subgraphs[0]
        .operators
        .iter()
        .map(|op| m.builtin(op).unwrap())
        .collect()
}

#[test]
fn mlp_is_two_fully_connected_operators() {
    let c = case(
        "h = relu(x @ W1 + b1)\nlogits = h @ W2 + b2",
        &[("W1", &[6, 8]), ("b1", &[8]), ("W2", &[8, 3]), ("b2", &[3])],
    );
    let m = check(&c, &["logits"], None);
    assert_eq!(builtins(&m), vec![B::FullyConnected, B::FullyConnected]);
    let g = &m.subgraphs[0];
    // Weights as TFLite wants them: [units, depth], W1 transposed.
    let w = &g.tensors[g.operators[0].inputs[1] as usize];
    assert_eq!(w.shape, vec![8, 6]);
    assert_eq!(w.name, "W1/transpose");
    let w1 = &c.params["W1"];
    let data = specc_tflite::model::f32_values(&m.buffers[w.buffer as usize].data).unwrap();
    assert_eq!(
        data[6 * 3 + 2],
        w1[[2, 3]],
        "row 3 (unit), column 2 (input)"
    );
    assert_eq!(g.tensors[0].shape_signature, Some(vec![-1, 6]));
}

#[test]
fn softmax_log_softmax_mean_and_argmax() {
    let c = case(
        "h = tanh(x @ W1 + b1)\nlogits = h @ W2 + b2\nprobs = softmax(logits)\nlp = log_softmax(logits)\n\
         avg = mean(h, axis = 1)\ncls = argmax(logits)\nall = mean(h)",
        &[("W1", &[6, 8]), ("b1", &[8]), ("W2", &[8, 3]), ("b2", &[3])],
    );
    let m = check(&c, &["probs", "lp", "avg", "cls", "logits"], None);
    let ops = builtins(&m);
    for op in [B::Softmax, B::LogSoftmax, B::Mean, B::ArgMax, B::Tanh] {
        assert!(ops.contains(&op), "{op:?} in {ops:?}");
    }
    // A mean over the batch needs the batch size: fine with a fixed batch.
    let m = check(&c, &["all"], Some(BATCH as u32));
    assert!(builtins(&m).contains(&B::Mean));
}

#[test]
fn elementwise_shapes_and_constants() {
    let c = case(
        "h = x @ W1\nk = sigmoid(h) * h - exp(h / 4) + abs(h) * s\n\
         m = maximum(k, -h) + where(h > 0.5, h, square(h))\n\
         r = reshape(transpose(reshape(m, [-1, 2, 4]), perm = [0, 2, 1]), [-1, 8])\n\
         logits = concat([r, h * 2.0, reciprocal(1.5 + abs(k))], axis = 1) @ W2\n\
         c2 = minimum(2.0 * s, s + 1.0)",
        &[("W1", &[6, 8]), ("s", &[8]), ("W2", &[24, 3])],
    );
    check(&c, &["logits", "m"], None);
    check(&c, &["logits"], Some(BATCH as u32));
}

#[test]
fn unsupported_ops_are_diagnostics_at_their_span() {
    let c = case(
        "h = x @ W1\nlogits = softplus(h) @ W2",
        &[("W1", &[6, 8]), ("W2", &[8, 3])],
    );
    let node = c.model.bindings.iter().find(|b| b.0 == "logits").unwrap().1;
    let e = export_tflite(&TfliteExport {
        graph: &c.model.graph,
        params: &c.params,
        inputs: &["x".to_string()],
        outputs: &[("logits".to_string(), node)],
        batch: None,
    })
    .unwrap_err();
    assert_eq!(e.code, "tflite-unsupported");
    assert!(
        e.message.contains("`softplus` cannot be exported"),
        "{}",
        e.message
    );
    // The caret is under the call.
    assert_eq!(
        &c.text[e.span.start as usize..e.span.end as usize],
        "softplus(h)"
    );

    // A missing parameter value is an error too.
    let c2 = case("logits = x @ W2", &[("W2", &[6, 3])]);
    let node = c2
        .model
        .bindings
        .iter()
        .find(|b| b.0 == "logits")
        .unwrap()
        .1;
    let e = export_tflite(&TfliteExport {
        graph: &c2.model.graph,
        params: &HashMap::new(),
        inputs: &["x".to_string()],
        outputs: &[("logits".to_string(), node)],
        batch: None,
    })
    .unwrap_err();
    assert!(
        e.message.contains("no value for parameter `W2`"),
        "{}",
        e.message
    );
}
