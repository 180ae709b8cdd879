//! A flat sum is not nesting: `x + b + b + ...` with 255, 1,000 and 100,000
//! terms checks, compiles and computes the exact value, forward and backward,
//! and the float64 interpreter agrees. (255 terms used to be rejected as "too
//! deeply nested", and every stage must walk such a chain without recursion.)
//!
//! The data are small integers and `b` is 0.5, so every partial sum is a
//! multiple of 0.5 far below 2^23: float32 computes it exactly.

use std::path::Path;

use specc_compiler::driver::{compile, Functions};
use specc_compiler::interp::{self, Tensor};
use specc_grammar::SourceFile;
use specc_runtime::data::{self, Values};

/// The rows of tests/data/quoted_columns.csv: (größe, price ($)).
const ROWS: [[f32; 2]; 4] = [[1.0, 2.0], [-3.0, 4.0], [5.0, -6.0], [7.0, 8.0]];

fn spec(n: usize) -> String {
    spec_with(&format!("s = x{}\n", " + b".repeat(n)))
}

/// The same value as a chain of `n` bindings `s1 = s0 + b`, `s2 = s1 + b`, ...
fn binding_chain(n: usize) -> String {
    let mut body = "s0 = x\n".to_string();
    for i in 1..=n {
        body.push_str(&format!("s{i} = s{} + b\n", i - 1));
    }
    spec_with(&format!("{body}s = s{n}\n"))
}

fn spec_with(body: &str) -> String {
    let csv = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/quoted_columns.csv");
    format!(
        "model long_sum\n\
         data csv(\"{}\")\n\
         label y: int from \"Klasse der Probe\"\n\
         features {{ x = numeric(\"größe\", \"price ($)\") }}\n\
         params {{ b: [2] = constant(value = 0.5) }}\n\
         {}\
         loss = mean(s)\n\
         optimizer gradient_descent(learning_rate = 0.1)\n\
         train {{ batch = 4, steps = 1 }}\n",
        csv.display(),
        body
    )
}

/// mean(x + n·b) over the four rows, and its gradient for each element of b.
fn expected(n: usize) -> (f32, f32) {
    let sum: f32 = ROWS.iter().flatten().sum();
    (sum / 8.0 + 0.5 * n as f32, n as f32 / 2.0)
}

fn compiled_loss_and_gradient(text: &str, n: usize) {
    let src = SourceFile::new("long_sum.spec", text);
    let program = compile(&src, Functions::ALL).unwrap_or_else(|d| panic!("{n} terms: {d:?}"));
    let model = &program.model;
    let data = data::load(&model.data_source(Path::new(".")), &model.input_specs()).unwrap();
    let mut s = program.session().unwrap();
    s.bind(&data).unwrap();
    s.gather(&data, &[0, 1, 2, 3]).unwrap();
    let f = s.function_index("grad").unwrap();
    s.call(f, 4).unwrap();
    let (loss, grad) = expected(n);
    assert_eq!(s.output(f, "loss", 4).unwrap(), [loss], "{n} terms: loss");
    assert_eq!(
        s.output(f, "grad/b", 4).unwrap(),
        [grad, grad],
        "{n} terms: grad/b"
    );
}

#[test]
fn a_sum_of_255_terms_compiles_and_is_exact() {
    compiled_loss_and_gradient(&spec(255), 255);
}

#[test]
fn a_sum_of_1000_terms_compiles_and_is_exact() {
    compiled_loss_and_gradient(&spec(1000), 1000);
}

/// The gradient of this sum is a chain of 100,000 scalar adds: every stage,
/// the planner included, walks it without recursion and in near-linear time.
#[test]
fn a_sum_of_100000_terms_compiles_and_is_exact() {
    compiled_loss_and_gradient(&spec(100_000), 100_000);
}

#[test]
fn a_sum_of_100000_terms_checks_and_interprets() {
    check_and_interpret(&spec(100_000), 100_000);
}

/// The same IR chain as the 100,000-term sum, from 20,000 items (parsing
/// 100,000 items takes about 15 s in a debug build; each item is checked on
/// its own, so the item count adds no depth).
#[test]
fn a_chain_of_20000_bindings_checks_and_interprets() {
    check_and_interpret(&binding_chain(20_000), 20_000);
}

#[test]
fn a_chain_of_1000_bindings_compiles_and_is_exact() {
    compiled_loss_and_gradient(&binding_chain(1000), 1000);
}

fn check_and_interpret(text: &str, n: usize) {
    let src = SourceFile::new("long_sum.spec", text);
    let model = specc_compiler::build(&src).unwrap_or_else(|d| panic!("{d:?}"));
    let data = data::load(&model.data_source(Path::new(".")), &model.input_specs()).unwrap();
    let inputs: Vec<Tensor> = model
        .graph
        .inputs
        .iter()
        .map(|leaf| {
            let d = data.input(&leaf.name).unwrap();
            let values: Vec<f64> = match &d.values {
                Values::F32(v) => v.iter().map(|&x| x as f64).collect(),
                Values::I32(v) => v.iter().map(|&x| x as f64).collect(),
            };
            let dims = if d.width > 1 {
                vec![4, d.width]
            } else {
                vec![4]
            };
            Tensor::new(dims, values)
        })
        .collect();
    let vars: Vec<Tensor> = model
        .graph
        .vars
        .iter()
        .map(|v| {
            let k = v.shape.fixed_numel() as usize;
            Tensor::new(vec![k], vec![0.5; k])
        })
        .collect();
    let env = interp::Env {
        inputs: &inputs,
        vars: &vars,
        batch: 4,
        global_step: 0.0,
    };
    let grad = model.functions.grad.as_ref().unwrap();
    let roots = [model.loss, grad.output("grad/b").unwrap()];
    let out = interp::eval(&model.graph, &env, &roots);
    let (loss, g) = expected(n);
    assert_eq!(out[0].data, [loss as f64]);
    assert_eq!(out[1].data, [g as f64, g as f64]);
}
