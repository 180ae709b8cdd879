//! `dynamic_rnn` by finite differences, one test per cell and option: the
//! LSTM (plain, each of `use_peepholes`, `cell_clip`, `num_proj`,
//! `proj_clip`, `forget_bias` and `activation`, and all together), the GRU
//! (with its initializers, and another activation), the basic cell (each
//! activation), `multi_rnn_cell`, `sequence_length` (lengths 0 and T among
//! the rows), `initial_state` and `time_major`.
//!
//! Each spec feeds `x` (plus a trainable `shift`, so the input's gradient is
//! checked, summed over the batch) through the layer, and its loss is
//! `sum(outputs * w_out) + Σ sum(state_i * w_state_i)` with random weights.
//! Every element of every trainable variable is checked twice against the
//! central difference of the loss computed in float64 by the reference
//! interpreter: the interpreter's own gradients (the VJP of
//! `Op::Recurrence` and the float64 backward loop, to 1e-6) and the
//! compiled step's (the JIT and the float32 loops, to 1e-3, as
//! `super::check`). The compiled loss equals the interpreter's.

use super::{literal, Rng};
use crate::common;

use specc_compiler::driver::Options;
use specc_compiler::interp;
use specc_runtime::data::{Dataset, InputData, Values};

/// Rows of the batch (odd: vector loops run their scalar tails).
const BATCH: usize = 5;

/// One `dynamic_rnn` case.
struct Rnn {
    name: &'static str,
    /// The cell expression.
    cell: &'static str,
    /// `T`, `D`.
    steps: usize,
    depth: usize,
    /// The final state's widths in `tf.nest.flatten` order; the last is the
    /// outputs' width.
    widths: &'static [usize],
    lengths: bool,
    initial_state: bool,
    time_major: bool,
}

const fn rnn(name: &'static str, cell: &'static str, widths: &'static [usize]) -> Rnn {
    Rnn {
        name,
        cell,
        steps: 4,
        depth: 3,
        widths,
        lengths: false,
        initial_state: false,
        time_major: false,
    }
}

impl Rnn {
    const fn lengths(self) -> Rnn {
        Rnn {
            lengths: true,
            ..self
        }
    }
    const fn initial_state(self) -> Rnn {
        Rnn {
            initial_state: true,
            ..self
        }
    }
    const fn time_major(self) -> Rnn {
        Rnn {
            time_major: true,
            ..self
        }
    }
}

/// A seed per test, from its name.
fn seed(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Each row's length: 0 and T among them, the others in between.
fn lengths(steps: usize) -> Vec<f32> {
    (0..BATCH)
        .map(|r| [0, steps, 1, steps - 1, steps / 2][r % 5] as f32)
        .collect()
}

/// The spec text and the batch of one case.
fn spec_and_data(c: &Rnn, rng: &mut Rng) -> (String, Dataset) {
    let (t, d) = (c.steps, c.depth);
    let p = *c.widths.last().unwrap();
    let f32s = |v: Vec<f64>| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
    let mut features = vec![format!("x = numeric(x0..x{})", t * d - 1)];
    let mut inputs = vec![InputData::new(
        "x",
        t * d,
        Values::F32(f32s(rng.values(BATCH * t * d, -1.0, 1.0, 0.0))),
    )];
    let shift = rng.values(t * d, -0.5, 0.5, 0.0);
    let mut params = vec![format!(
        "shift: [{t}, {d}] = constant(value = {})",
        literal(&[t, d], &shift)
    )];
    let mut args = vec![c.cell.to_string(), "xs".to_string()];
    let mut columns = t * d;
    if c.lengths {
        features.push(format!("n = numeric(x{columns})"));
        inputs.push(InputData::new("n", 1, Values::F32(lengths(t))));
        args.push("sequence_length = reshape(n, [B])".into());
        columns += 1;
    }
    if c.initial_state {
        let mut states = Vec::new();
        for (i, &w) in c.widths.iter().enumerate() {
            features.push(format!("s_{i} = numeric(x{columns}..x{})", columns + w - 1));
            inputs.push(InputData::new(
                format!("s_{i}"),
                w,
                Values::F32(f32s(rng.values(BATCH * w, -1.0, 1.0, 0.0))),
            ));
            let v = rng.values(w, -0.5, 0.5, 0.0);
            params.push(format!(
                "state_shift_{i}: [{w}] = constant(value = {})",
                literal(&[w], &v)
            ));
            states.push(format!("s_{i} + state_shift_{i}"));
            columns += w;
        }
        args.push(format!("initial_state = [{}]", states.join(", ")));
    }
    let w_dims = if c.time_major {
        vec![t, 1, p]
    } else {
        vec![t, p]
    };
    let w_out = rng.values(t * p, -1.0, 1.0, 0.1);
    params.push(format!(
        "w_out: {w_dims:?} = constant(value = {}), trainable = false",
        literal(&w_dims, &w_out)
    ));
    let mut loss = vec!["reduce_sum(outputs * w_out)".to_string()];
    let names: Vec<String> = (0..c.widths.len()).map(|i| format!("st{i}")).collect();
    for (i, &w) in c.widths.iter().enumerate() {
        let v = rng.values(w, -1.0, 1.0, 0.1);
        params.push(format!(
            "w_state_{i}: [{w}] = constant(value = {}), trainable = false",
            literal(&[w], &v)
        ));
        loss.push(format!("reduce_sum({} * w_state_{i})", names[i]));
    }
    let mut xs = format!("reshape(x, [B, {t}, {d}]) + shift");
    if c.time_major {
        xs = format!("transpose({xs}, [1, 0, 2])");
        args.push("time_major = true".into());
    }
    let text = format!(
        "model fd_rnn\ndata synthetic(rows = 8, features = {columns})\nfeatures {{\n  {}\n}}\nparams {{\n  {}\n}}\nxs = {xs}\noutputs, {} = dynamic_rnn({})\nloss = {}\noptimizer gradient_descent(learning_rate = 0.1)\ntrain {{ batch = {BATCH}, steps = 1 }}\n",
        features.join("\n  "),
        params.join("\n  "),
        names.join(", "),
        args.join(", "),
        loss.join(" + "),
    );
    (text, Dataset::from_inputs(BATCH, inputs).unwrap())
}

fn check(c: &Rnn) {
    let mut rng = Rng(seed(c.name));
    let (text, ds) = spec_and_data(c, &mut rng);
    let program = super::compile_case(c.name, &text, &Options::default());
    let super::GradRun {
        model,
        s,
        gf,
        inputs,
        mut vars,
    } = super::grad_run(&program, c.name, &text, &ds);

    // The interpreter's gradients: every `grad/NAME` output of the step.
    let grad_fn = model.functions.grad.as_ref().unwrap();
    let (names, roots): (Vec<&str>, Vec<_>) = grad_fn
        .outputs
        .iter()
        .filter_map(|o| o.name.strip_prefix("grad/").map(|n| (n, o.node)))
        .unzip();
    let env = interp::Env {
        inputs: &inputs,
        vars: &vars,
        batch: BATCH,
        global_step: 0.0,
    };
    let interp_grads = interp::eval(&model.graph, &env, &roots);

    let trainable = model.trainable_params();
    assert_eq!(names.len(), trainable.len(), "{}: {names:?}", c.name);
    for p in trainable {
        let name = model.var_name(p).to_string();
        let at = names.iter().position(|n| *n == name).unwrap();
        let exact = &interp_grads[at].data;
        let jit: Vec<f64> = s
            .output(gf, &format!("grad/{name}"), BATCH)
            .unwrap()
            .iter()
            .map(|&g| f64::from(g))
            .collect();
        assert_eq!(exact.len(), jit.len(), "{}: {name}", c.name);
        assert!(
            exact.iter().any(|&g| g != 0.0),
            "{}: the gradient of {name} is 0: the check would be empty\n{text}",
            c.name
        );
        let scale = exact.iter().fold(1e-3f64, |m, g| m.max(g.abs()));
        for i in 0..jit.len() {
            let fd = common::central_difference(model, &inputs, &mut vars, BATCH, p as usize, i);
            let g = exact[i];
            assert!(
                (g - fd).abs() <= 1e-6 * g.abs().max(fd.abs()) + 1e-7 * scale,
                "{}: d loss / d {name}[{i}]: interpreter {g:e}, finite differences {fd:e}\n{text}",
                c.name
            );
            let g = jit[i];
            assert!(
                (g - fd).abs() <= 1e-3 * g.abs().max(fd.abs()) + 1e-4 * scale,
                "{}: d loss / d {name}[{i}]: compiled {g:e}, finite differences {fd:e}\n{text}",
                c.name
            );
        }
    }
}

macro_rules! rnn_tests {
    ($($test:ident: $case:expr;)*) => {
        $(
            #[test]
            fn $test() {
                let c: Rnn = $case;
                assert_eq!(c.name, stringify!($test));
                check(&c);
            }
        )*
    };
}

rnn_tests! {
    lstm: rnn("lstm", "lstm_cell(3)", &[3, 3]);
    lstm_lengths: rnn("lstm_lengths", "lstm_cell(3)", &[3, 3]).lengths();
    lstm_peepholes: rnn("lstm_peepholes", "lstm_cell(3, use_peepholes = true)", &[3, 3]);
    lstm_cell_clip: rnn("lstm_cell_clip", "lstm_cell(3, cell_clip = 0.3, forget_bias = 2.0)", &[3, 3]);
    lstm_num_proj: rnn("lstm_num_proj", "lstm_cell(4, num_proj = 2)", &[4, 2]);
    lstm_proj_clip: rnn("lstm_proj_clip", "lstm_cell(4, num_proj = 3, proj_clip = 0.05)", &[4, 3]);
    lstm_forget_bias: rnn("lstm_forget_bias", "lstm_cell(3, forget_bias = -0.5)", &[3, 3]);
    lstm_relu: rnn("lstm_relu", "lstm_cell(3, activation = relu)", &[3, 3]);
    lstm_sigmoid: rnn("lstm_sigmoid", "lstm_cell(3, activation = sigmoid)", &[3, 3]);
    lstm_linear: rnn("lstm_linear", "lstm_cell(3, activation = linear)", &[3, 3]);
    lstm_initializer: rnn("lstm_initializer", "lstm_cell(3, initializer = random_uniform(minval = -0.8, maxval = 0.8, seed = 5), use_peepholes = true, num_proj = 2)", &[3, 2]);
    lstm_every_option: rnn("lstm_every_option", "lstm_cell(6, use_peepholes = true, cell_clip = 0.4, num_proj = 5, proj_clip = 0.1, forget_bias = 0.5)", &[6, 5]).lengths();
    gru: rnn("gru", "gru_cell(3)", &[3]);
    gru_lengths: rnn("gru_lengths", "gru_cell(3)", &[3]).lengths();
    gru_initializers: rnn("gru_initializers", "gru_cell(4, kernel_initializer = glorot_normal(seed = 3), bias_initializer = random_uniform(minval = -0.5, maxval = 0.5, seed = 4))", &[4]);
    gru_relu: rnn("gru_relu", "gru_cell(3, activation = relu)", &[3]);
    basic_tanh: rnn("basic_tanh", "basic_rnn_cell(3)", &[3]);
    basic_relu: rnn("basic_relu", "basic_rnn_cell(3, activation = relu)", &[3]);
    basic_sigmoid: rnn("basic_sigmoid", "basic_rnn_cell(3, activation = sigmoid)", &[3]);
    basic_linear: rnn("basic_linear", "basic_rnn_cell(2, activation = linear)", &[2]);
    basic_lengths: rnn("basic_lengths", "basic_rnn_cell(3)", &[3]).lengths();
    multi_rnn_cell: rnn("multi_rnn_cell", "multi_rnn_cell([lstm_cell(3, num_proj = 2), gru_cell(2), basic_rnn_cell(3)])", &[3, 2, 2, 3]);
    multi_rnn_cell_lengths: rnn("multi_rnn_cell_lengths", "multi_rnn_cell([gru_cell(3), lstm_cell(2, use_peepholes = true)])", &[3, 2, 2]).lengths();
    lstm_initial_state: rnn("lstm_initial_state", "lstm_cell(3, num_proj = 2)", &[3, 2]).lengths().initial_state();
    gru_initial_state: rnn("gru_initial_state", "gru_cell(3)", &[3]).initial_state();
    basic_initial_state: rnn("basic_initial_state", "basic_rnn_cell(3)", &[3]).lengths().initial_state();
    multi_rnn_cell_initial_state: rnn("multi_rnn_cell_initial_state", "multi_rnn_cell([lstm_cell(3), basic_rnn_cell(2)])", &[3, 3, 2]).initial_state();
    lstm_time_major: rnn("lstm_time_major", "lstm_cell(3, use_peepholes = true)", &[3, 3]).lengths().time_major();
    gru_time_major_initial_state: rnn("gru_time_major_initial_state", "gru_cell(2)", &[2]).initial_state().time_major();
}
