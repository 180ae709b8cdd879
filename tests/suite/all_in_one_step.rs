//! The whole training step of a spec with Adam, a learning-rate schedule,
//! global-norm clipping and moving averages is one compiled function: the
//! `--emit step` IR updates every parameter, slot, optimizer variable and
//! shadow, the program has one function per plan (`step`, `eval`), and the
//! machine code of `step` refers to nothing but the runtime's kernels: every
//! relocation Cranelift emitted (which would show a call to another function,
//! or a library call Cranelift adds while lowering, such as `fmaf`, `ceilf` or
//! `memcpy`) targets `specc_sgemm`, once per GEMM, or `specc_adam`, once for
//! the merged update (Adam, clipping and moving averages in one loop), on one
//! thread and on two.

use std::process::Command;

use specc_compiler::codegen;
use specc_compiler::driver::{plan_model_with, Functions, Options};
use specc_compiler::plan::Kernel;
use specc_grammar::SourceFile;

const SPEC: &str = "specs/digits_mlp_ema.spec";

fn emit(stage: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_specc"))
        .args(["compile", SPEC, "--emit", stage])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_step_ir_updates_everything() {
    let step = emit("step");
    let spec = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/specs/digits_mlp_ema.spec"
    ))
    .unwrap();
    assert!(spec.contains("adam(") && spec.contains("clip global_norm(") && spec.contains("ema "));
    for p in ["W1", "b1", "W2", "b2"] {
        for var in [
            p.to_string(),
            format!("{p}/Adam"),
            format!("{p}/Adam_1"),
            format!("{p}/ExponentialMovingAverage"),
        ] {
            assert!(
                step.lines()
                    .any(|l| l.trim_start().starts_with(&format!("{var} <- %"))),
                "no update of {var} in the step IR"
            );
        }
    }
    for var in ["beta1_power", "beta2_power"] {
        assert!(step.contains(&format!("{var} <- %")), "no update of {var}");
    }
    assert!(step.contains("global_step <- global_step + 1"));
    assert!(step.contains("out learning_rate = %"));
    assert!(step.contains("out global_norm = %"));
}

#[test]
fn the_step_is_one_function_whose_only_calls_are_gemm_and_adam() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/",
        "specs/digits_mlp_ema.spec"
    ))
    .unwrap();
    let src = SourceFile::new(SPEC, text);
    for threads in [1, 2] {
        let options = Options {
            threads,
            runtime_adam: true,
            gemm_epilogue: true,
            ..Options::default()
        };
        let planned = plan_model_with(&src, Functions::TRAIN, &options).unwrap();
        let names: Vec<&str> = planned.plans.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["step", "eval"], "one function per plan");
        let step = &planned.plans[0];
        let gemms = step
            .kernels
            .iter()
            .filter(|k| matches!(k, Kernel::Gemm { .. }))
            .count();
        // Forward: x @ W1, h @ W2. Backward: dlogits @ W2ᵀ, hᵀ @ dlogits, xᵀ @ dh.
        assert_eq!(gemms, 5, "GEMM kernels in the step");
        let targets = codegen::relocation_targets(&planned.model.graph, step).unwrap();
        // The hidden layer's bias and relu run as its GEMM's epilogue.
        let fused = step
            .kernels
            .iter()
            .filter(|k| {
                matches!(
                    k,
                    Kernel::Gemm {
                        epilogue: Some(_),
                        ..
                    }
                )
            })
            .count();
        assert_eq!(fused, 1, "GEMMs with an epilogue");
        let count = |name: &str| targets.iter().filter(|t| *t == name).count();
        assert_eq!(
            count("specc_sgemm") + count("specc_sgemm_ep"),
            gemms,
            "{threads} thread(s): one reference to specc_sgemm(_ep) per GEMM, {targets:?}"
        );
        assert_eq!(
            count("specc_sgemm_ep"),
            fused,
            "{threads} thread(s): one reference to specc_sgemm_ep per fused GEMM, {targets:?}"
        );
        assert_eq!(
            count("specc_adam"),
            1,
            "{threads} thread(s): one reference to specc_adam, {targets:?}"
        );
        assert_eq!(
            targets.len(),
            gemms + 1,
            "{threads} thread(s): the step's machine code refers to {targets:?}"
        );
        // specc itself emits only direct calls (a call through a loaded pointer
        // would need no relocation).
        let clif = codegen::clif_text(&planned.model.graph, step).unwrap();
        for l in clif.lines() {
            assert!(!l.contains("call_indirect"), "indirect call: {l}");
            assert!(!l.contains("return_call"), "tail call: {l}");
        }
    }
}

/// Dense updates are one vectorized pass per arena: the update of all four
/// parameters (and their Adam slots and moving averages) is a single loop
/// over the 9,610 elements they span (W1 8192, b1 128, W2 1280, b2 10).
#[test]
fn dense_updates_are_one_pass_over_each_arena() {
    let plan = emit("plan");
    let step = plan.split("plan eval").next().unwrap();
    // Buffers in arenas: `bN = %x : f32[..] @ arena A + O`.
    let arena_bufs: Vec<String> = step
        .lines()
        .filter(|l| l.contains(" @ arena "))
        .filter_map(|l| l.trim().split(' ').next().map(str::to_string))
        .collect();
    // Kernels that store into any arena.
    let mut writers = Vec::new();
    let mut current = String::new();
    for l in step.lines() {
        let t = l.trim();
        if t.starts_with('k') && t.contains(": ") {
            current = t.to_string();
        }
        if let Some(dst) = t.strip_prefix("store ").and_then(|r| r.split("-> ").nth(1)) {
            let buf = dst.split('[').next().unwrap();
            if arena_bufs.iter().any(|b| b == buf) && !writers.contains(&current) {
                writers.push(current.clone());
            }
        }
    }
    assert_eq!(writers.len(), 1, "kernels writing variables: {writers:?}");
    assert!(writers[0].contains("loop over [9610]"), "{}", writers[0]);
}

/// W9's transformer (`specs/text_transformer.spec`): each batched product
/// (attention's `q @ k^T` and weighted sums, forward and backward) is one
/// call of `specc_sgemm_batched` per thread's share of its groups, not a
/// loop of `specc_sgemm` calls: the step's machine code refers to it once
/// per batched GEMM kernel, and to `specc_sgemm(_ep)` once per other GEMM.
#[test]
fn batched_products_are_one_runtime_call_each() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/specs/text_transformer.spec"
    ))
    .unwrap();
    let src = SourceFile::new("specs/text_transformer.spec", text);
    for threads in [1, 2] {
        let options = Options {
            threads,
            ..Options::default()
        };
        let planned = plan_model_with(&src, Functions::TRAIN, &options).unwrap();
        for plan in &planned.plans {
            let gemms = |batched: bool| {
                plan.kernels
                    .iter()
                    .filter(
                        |k| matches!(k, Kernel::Gemm { groups, .. } if groups.is_some() == batched),
                    )
                    .count()
            };
            let targets = codegen::relocation_targets(&planned.model.graph, plan).unwrap();
            let count = |name: &str| targets.iter().filter(|t| *t == name).count();
            assert!(gemms(true) > 0, "{}: no batched GEMM", plan.name);
            assert_eq!(
                count("specc_sgemm_batched"),
                gemms(true),
                "{threads} thread(s), {}: {targets:?}",
                plan.name
            );
            assert_eq!(
                count("specc_sgemm") + count("specc_sgemm_ep"),
                gemms(false),
                "{threads} thread(s), {}: {targets:?}",
                plan.name
            );
        }
    }
}
