//! TF's learning-rate schedules (`golden/schedules.json`) against specc's,
//! computed inside the compiled step: each case becomes the learning rate of
//! a tiny model, the global step is set to each recorded step, and the step's
//! `learning_rate` output is compared with TF's float32 value (1e-5 relative
//! or 1e-6 absolute). Every case in the file is checked.

mod common;

use common::{close, golden, num};
use specc_compiler::driver::{compile, Functions};
use specc_grammar::SourceFile;

/// The spec call for a case: TF's function name and arguments as keywords.
fn call(case: &serde_json::Value) -> Option<String> {
    let name = case["function"].as_str()?.rsplit('.').next()?.to_string();
    let args = case["args"].as_object()?;
    let mut parts: Vec<String> = Vec::new();
    if name == "piecewise_constant" {
        parts.push("x = global_step".into());
    }
    for (k, v) in args {
        let text = match v {
            serde_json::Value::Bool(b) => b.to_string(),
            serde_json::Value::Array(items) => {
                let xs: Vec<String> = items.iter().map(|x| format!("{:e}", num(x))).collect();
                format!("[{}]", xs.join(", "))
            }
            v => format!("{:e}", num(v)),
        };
        parts.push(format!("{k} = {text}"));
    }
    Some(format!("{name}({})", parts.join(", ")))
}

fn spec(lr: &str) -> String {
    format!(
        "model schedule\ndata synthetic(rows = 4, features = 2)\nfeatures {{ x = numeric(x0, x1) }}\n\
         params {{ w: [2] = ones }}\nloss = reduce_sum(x * w)\n\
         optimizer gradient_descent(learning_rate = {lr})\ntrain {{ batch = 4, steps = 1 }}\n"
    )
}

#[test]
fn every_schedule_in_the_file_matches_tensorflow() {
    let g = golden("schedules.json");
    let mut checked = 0;
    for case in g["cases"].as_array().unwrap() {
        let Some(values) = case["values"].as_array() else {
            continue; // noisy_linear_cosine_decay records only its signature
        };
        let lr = call(case).unwrap();
        let text = spec(&lr);
        let program = compile(&SourceFile::new("s.spec", text.clone()), Functions::TRAIN)
            .unwrap_or_else(|d| {
                panic!(
                    "{lr}: {:?}",
                    d.iter().map(|d| d.message.clone()).collect::<Vec<_>>()
                )
            });
        let mut s = program.session().unwrap();
        let step = s.function_index("step").unwrap();
        for v in values {
            let gs = v["global_step"].as_i64().unwrap();
            s.global_step = gs;
            s.call(step, 4).unwrap();
            let got = s.output(step, "learning_rate", 4).unwrap()[0] as f64;
            close(
                &format!("{lr} at step {gs}"),
                got,
                num(&v["value"]),
                1e-5,
                1e-6,
            );
            checked += 1;
        }
    }
    assert!(checked >= 200, "only {checked} schedule values checked");
}

#[test]
fn noisy_linear_cosine_decay_is_seeded_noise_around_linear_cosine() {
    let run = |seed: u64| -> Vec<f32> {
        let lr = format!("noisy_linear_cosine_decay(0.1, decay_steps = 100, seed = {seed})");
        let program = compile(&SourceFile::new("n.spec", spec(&lr)), Functions::TRAIN).unwrap();
        let mut s = program.session().unwrap();
        let step = s.function_index("step").unwrap();
        (0..200)
            .map(|gs| {
                s.global_step = gs;
                s.call(step, 4).unwrap();
                s.output(step, "learning_rate", 4).unwrap()[0]
            })
            .collect()
    };
    let (a, b, c) = (run(1), run(1), run(2));
    assert_eq!(a, b, "the same seed gives the same schedule");
    assert_ne!(a, c, "another seed gives other noise");
    assert!(a.iter().all(|v| v.is_finite()));
    // Past decay_steps the linear and cosine parts are 0: lr * (noise * cos_part + beta) = lr * beta.
    assert!((a[150] - 0.1 * 0.001).abs() < 1e-6, "{}", a[150]);
}

#[test]
fn linear_warmup_ramps_to_the_schedule() {
    let lr = "linear_warmup(exponential_decay(0.1, decay_steps = 10, decay_rate = 0.5), warmup_steps = 4)";
    let program = compile(&SourceFile::new("w.spec", spec(lr)), Functions::TRAIN).unwrap();
    let mut s = program.session().unwrap();
    let step = s.function_index("step").unwrap();
    let at = |s: &mut specc_compiler::driver::ProgramSession, gs: i64| {
        s.global_step = gs;
        s.call(step, 4).unwrap();
        s.output(step, "learning_rate", 4).unwrap()[0] as f64
    };
    let target = 0.1 * 0.5f64.powf(0.4);
    close("warmup start", at(&mut s, 0), 0.0, 1e-6, 1e-7);
    close("warmup middle", at(&mut s, 2), target / 2.0, 1e-5, 1e-7);
    close("after warmup", at(&mut s, 4), target, 1e-5, 1e-7);
    close("schedule", at(&mut s, 20), 0.1 * 0.25, 1e-5, 1e-7);
}
