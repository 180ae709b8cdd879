//! The runtime's f32 `exp`, `tanh` and `σ` (`specc_runtime::rnn::Real`,
//! what the recurrent time loops compute with) against the compiled
//! ones (`codegen::math`), bit for bit: the loops' gates are the compiled
//! step's. Over dense sweeps, every power of two, the neighbours of each
//! branch and overflow threshold, special values and random bit patterns,
//! through the vector and the scalar paths.

use crate::jit;

use jit::{run, Emit, Jit, Mode};
use specc_compiler::codegen::math;
use specc_runtime::rnn::Real;

/// Every f32 within this many steps of a threshold.
const WALK: usize = 4096;

fn check(name: &str, emit: Emit, runtime: fn(f32) -> f32, thresholds: &[f32]) {
    let mut jit = Jit::native();
    let dense = [(-110.0, 95.0, 200_001), (-2.0, 2.0, 200_001)];
    let xs = jit::sweep(&dense, thresholds, WALK, 500_000, 0x2545_F491);
    for mode in [Mode::Vector, Mode::ScalarOnly] {
        let f = jit.compile_map(&format!("{name}_{mode:?}"), emit, mode);
        let ys = run(f, &xs);
        let bad: Vec<String> = xs
            .iter()
            .zip(&ys)
            .filter(|(&x, &y)| !jit::same_bits(runtime(x), y))
            .take(10)
            .map(|(&x, &y)| {
                format!(
                    "{name}({x:e} = {:#010x}): runtime {:e}, compiled {y:e}",
                    x.to_bits(),
                    runtime(x)
                )
            })
            .collect();
        assert!(bad.is_empty(), "{mode:?}:\n{}", bad.join("\n"));
    }
}

#[test]
fn exp_is_the_compiled_exp() {
    let thresholds = [88.722_84, -103.972_08, -87.336_55, 0.0, -104.0, 88.76];
    check("exp", math::exp, <f32 as Real>::exp, &thresholds);
}

#[test]
fn tanh_is_the_compiled_tanh() {
    check(
        "tanh",
        math::tanh,
        <f32 as Real>::tanh,
        &[0.625, -0.625, 0.0, 9.0, -9.0],
    );
}

#[test]
fn sigmoid_is_the_compiled_sigmoid() {
    let thresholds = [0.0, -88.0, 88.0, -103.972_08, 103.972_08, 17.0, -17.0];
    check(
        "sigmoid",
        math::sigmoid,
        <f32 as Real>::sigmoid,
        &thresholds,
    );
}
