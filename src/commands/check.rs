//! `specc check SPEC`: every static check, including that each parameter gets
//! a gradient, and the memory a training session of the model needs.

use std::path::Path;

use specc_compiler::driver::{plan_model, Functions};
use specc_runtime::memory::{available_memory, human_bytes};

use super::report;
use crate::Failure;
use specc::spec::read_spec;

pub fn run(spec: &Path) -> Result<(), Failure> {
    let src = read_spec(spec)?;
    // Every stage but code generation: the plans give the session's memory.
    let planned = plan_model(&src, Functions::TRAIN).map_err(|d| report(&d, &src))?;
    let model = &planned.model;
    let params = model.trainable_params();
    let values: u64 = params
        .iter()
        .map(|&p| model.graph.vars[p as usize].shape.fixed_numel())
        .sum();
    println!(
        "{}: ok: model `{}`, {} trainable parameters ({values} values), loss {}",
        src.path,
        model.name,
        params.len(),
        model.graph.shape(model.loss)
    );
    let needs = planned.memory();
    let fits = match available_memory() {
        Some(have) if needs.total() > have => format!(
            "; more than the {} this machine has available, so `specc run` would refuse it",
            human_bytes(have)
        ),
        _ => String::new(),
    };
    println!("memory: {needs}{fits}");
    Ok(())
}
