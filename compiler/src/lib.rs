//! specc-compiler: from a checked spec to a JIT-compiled training step.
//!
//! Code map (the path a spec takes):
//! - [`sema`]: AST to [`model::Model`] (names, dtypes, shapes, diagnostics),
//!   one module per kind of item.
//! - [`model`]: the checked model: graph, inputs, variables, metrics,
//!   optimizer, settings, and its IR functions `eval`, `grad`, `step`.
//! - [`ir`]: the tensor SSA graph, its builder and its text form.
//! - [`autodiff`]: reverse mode, one VJP rule per op in `autodiff::rules`.
//! - [`optim`]: gradients, clipping, optimizer slots and updates as IR (the
//!   `step` function); `optim::table` has one entry per optimizer.
//! - [`passes`]: rewrite rules, dead code and common subexpressions.
//! - [`layout`]: variables, constants and inputs to arenas and offsets.
//! - [`plan`]: kernels and buffers (fusion, views, scratch, threads).
//! - [`codegen`]: Cranelift functions from plans, JIT.
//! - [`driver`]: the whole pipeline, and [`driver::Program`], the compiled code.
//! - [`debug`]: where a non-finite loss came from: the `check` function and
//!   what its outputs say (the replay that runs it is `specc::run`'s).
//! - [`export`]: the trained forward model as a file: [`export::tflite`]
//!   (the forward IR lowered to a TensorFlow Lite model) and [`export::aot`]
//!   (an inference function, its weights and a C entry point as an object
//!   file, and its C header).
//! - [`interp`]: a float64 reference interpreter of the IR (tests, gradcheck).
//! - [`verify`]: the invariants of the IR, the layout and the plan, checked
//!   after every pass in debug builds (and so in tests).
//!
//! The crate is "spec → program": running a program (data, hooks,
//! checkpoints, run settings) is `specc::run`'s.
//!
//! Invariant: user errors come back as `Diagnostic`s, never panics.

pub mod autodiff;
pub mod codegen;
pub mod debug;
pub mod driver;
pub mod export;
pub mod interp;
pub mod ir;
pub mod layout;
pub mod model;
pub mod optim;
pub mod passes;
pub mod plan;
pub mod sema;
pub mod verify;

use specc_grammar::{ast::SpecFile, Diagnostic, SourceFile};

pub use model::Model;

/// Runs `f`, turning a panic (a compiler bug) into an "internal compiler
/// error" diagnostic that names the pass it happened in, when one was
/// running ([`verify::in_pass`]).
pub fn guard<T>(f: impl FnOnce() -> Result<T, Vec<Diagnostic>>) -> Result<T, Vec<Diagnostic>> {
    // A pass recorded by a panic caught elsewhere is not this one's.
    let _ = verify::take_panicked_pass();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(e) => {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            // Most compiler panics already say what they are.
            let msg = msg
                .strip_prefix("internal compiler error: ")
                .unwrap_or(&msg);
            let message = match verify::take_panicked_pass() {
                // A violation's message names its pass already.
                Some(pass) if !msg.starts_with("after `") => {
                    format!("internal compiler error in `{pass}`: {msg}")
                }
                _ => format!("internal compiler error: {msg}"),
            };
            Err(vec![verify::internal_error(message)])
        }
    }
}

/// The model name used when a spec has no `model` item: the file stem.
pub fn default_name(src: &SourceFile) -> String {
    std::path::Path::new(&src.path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into())
}

/// Parses a spec.
pub fn parse(src: &SourceFile) -> Result<SpecFile, Vec<Diagnostic>> {
    specc_grammar::parse(&src.text).map_err(|d| vec![d])
}

/// Parses and checks a spec: the forward model with its `eval` function.
pub fn check(src: &SourceFile) -> Result<Model, Vec<Diagnostic>> {
    guard(|| {
        let ast = parse(src)?;
        let dir = std::path::Path::new(&src.path).parent();
        let model = verify::in_pass("sema", || sema::check_in(&ast, &default_name(src), dir))?;
        verify::after("sema", || verify::ir::model(&model))?;
        Ok(model)
    })
}

/// Parses, checks and differentiates a spec, and builds its training step.
pub fn build(src: &SourceFile) -> Result<Model, Vec<Diagnostic>> {
    build_replicated(src, None)
}

/// [`build`] for a model trained by `replicas` data-parallel replicas (the
/// step split at the gradient exchange, see [`optim::replicas`]).
pub fn build_replicated(src: &SourceFile, replicas: Option<u32>) -> Result<Model, Vec<Diagnostic>> {
    build_replicated_with(src, replicas, false)
}

/// [`build_replicated`]; with `shared_exchange`, the step sums the replicas'
/// exchange values itself, read from memory they share (one node).
pub fn build_replicated_with(
    src: &SourceFile,
    replicas: Option<u32>,
    shared_exchange: bool,
) -> Result<Model, Vec<Diagnostic>> {
    guard(|| {
        let ast = parse(src)?;
        let dir = std::path::Path::new(&src.path).parent();
        let mut model = verify::in_pass("sema", || sema::check_in(&ast, &default_name(src), dir))?;
        verify::after("sema", || verify::ir::model(&model))?;
        model.replicas = replicas;
        model.shared_exchange = shared_exchange && replicas.is_some();
        verify::in_pass("optim::build", || optim::build(&mut model))?;
        verify::after("optim::build", || verify::ir::built(&model))?;
        Ok(model)
    })
}
