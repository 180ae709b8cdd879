//! `specc gradcheck SPEC`: the compiled gradients of one batch against central
//! finite differences of the loss, computed in float64 by the reference
//! interpreter. Reports the worst relative error per parameter; fails (exit 1)
//! above 1e-2.

use std::path::Path;

use specc_compiler::driver::{compile, Functions};
use specc_compiler::interp::{self, Tensor};
use specc_runtime::abi::grad_output;
use specc_runtime::train::TrainConfig;

use super::report;
use crate::Failure;
use specc::run::data::{data_source, TrainingData};
use specc::spec::read_spec;

const TOLERANCE: f64 = 1e-2;

pub fn run(spec: &Path, data: Option<&Path>, samples: usize, json: bool) -> Result<(), Failure> {
    if samples == 0 {
        return Err(Failure::Other("--samples must be at least 1".into()));
    }
    let src = read_spec(spec)?;
    let program = compile(&src, Functions::ALL).map_err(|d| report(&d, &src))?;
    let model = &program.model;
    let mut s = program.session()?;
    // The first training batch (all rows, the spec's batch order); a
    // streaming source's first batch through the input pipeline. An image
    // input's random transforms are not drawn: the batch is their
    // evaluation form.
    let data = TrainingData::open(model, data_source(model, spec, data)?, false)?;
    let all_rows: Vec<u32> = data
        .dataset()
        .map_or(Vec::new(), |d| (0..d.rows as u32).collect());
    let cfg = TrainConfig {
        batch: data.dataset().map_or(model.train.batch as usize, |d| {
            (model.train.batch as usize).min(d.rows)
        }),
        ..model.train.config(1)
    };
    let layout = s.layout.clone();
    let mut batches = data.batches(&layout, &model.input_specs(), all_rows, &cfg, None)?;
    let rows = s
        .fill(&mut batches)
        .map_err(|e| Failure::Other(e.to_string()))?;
    if rows == 0 {
        return Err(Failure::Other("the data has no rows".into()));
    }
    let batch = rows;
    let gf = s.function_index("grad").ok_or("no grad function")?;
    s.call(gf, rows)?;

    // The same batch, as the step saw it, as float64 tensors for the interpreter.
    let inputs: Vec<Tensor> = model
        .graph
        .inputs
        .iter()
        .enumerate()
        .map(|(i, leaf)| {
            let width = s.layout.inputs[i].per_example;
            let mut dims = vec![batch];
            if leaf.shape.rank() > 1 {
                dims.push(width);
            }
            let data = match (s.input_f32(i, batch), s.input_i32(i, batch)) {
                (Some(v), _) => v.iter().map(|&x| f64::from(x)).collect(),
                (_, Some(v)) => v.iter().map(|&x| f64::from(x)).collect(),
                _ => Vec::new(),
            };
            Tensor::new(dims, data)
        })
        .collect();
    let mut vars: Vec<Tensor> = model
        .graph
        .vars
        .iter()
        .map(|leaf| {
            let dims: Vec<usize> = leaf.shape.concrete(1).iter().map(|&d| d as usize).collect();
            let data = s
                .var(&leaf.name)
                .expect("every var is laid out")
                .iter()
                .map(|&x| x as f64)
                .collect();
            Tensor::new(dims, data)
        })
        .collect();
    let loss_at = |vars: &[Tensor]| -> f64 {
        let env = interp::Env {
            inputs: &inputs,
            vars,
            batch,
            global_step: 0.0,
        };
        interp::eval(&model.graph, &env, &[model.loss])[0].data[0]
    };

    let mut report_rows = Vec::new();
    let mut worst = 0.0f64;
    for p in model.trainable_params() {
        let name = model.var_name(p).to_string();
        let grad = s
            .output(gf, &grad_output(&name), batch)
            .ok_or("missing gradient")?
            .to_vec();
        let n = grad.len();
        let k = samples.min(n).max(1);
        let mut perr = 0.0f64;
        for j in 0..k {
            let i = j * n / k;
            let w = vars[p as usize].data[i];
            let h = 1e-5 * w.abs().max(1.0);
            vars[p as usize].data[i] = w + h;
            let lp = loss_at(&vars);
            vars[p as usize].data[i] = w - h;
            let lm = loss_at(&vars);
            vars[p as usize].data[i] = w;
            let fd = (lp - lm) / (2.0 * h);
            let g = grad[i] as f64;
            let scale = g.abs().max(fd.abs());
            let err = if scale < 1e-7 {
                0.0
            } else {
                (g - fd).abs() / scale
            };
            perr = perr.max(err);
        }
        worst = worst.max(perr);
        report_rows.push((name, k, perr));
    }
    for (name, k, e) in &report_rows {
        println!("{name:>16}: {k:>4} elements, worst relative error {e:.2e}");
    }
    let ok = worst <= TOLERANCE;
    println!(
        "gradcheck {}: worst relative error {worst:.2e} (tolerance {TOLERANCE:.0e})",
        if ok { "passed" } else { "FAILED" }
    );
    if json {
        let params: Vec<serde_json::Value> = report_rows
            .iter()
            .map(|(n, k, e)| serde_json::json!({"param": n, "checked": k, "worst_relative_error": e}))
            .collect();
        println!(
            "{}",
            serde_json::json!({"model": model.name, "batch": batch, "worst_relative_error": worst, "passed": ok, "params": params})
        );
    }
    if ok {
        Ok(())
    } else {
        Err(Failure::Other(format!(
            "gradients differ from finite differences by {worst:.2e}"
        )))
    }
}
