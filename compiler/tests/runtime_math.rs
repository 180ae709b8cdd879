//! The runtime's f32 `exp`, `tanh` and `σ` (`specc_runtime::rnn::Real`,
//! what the recurrent time loops compute with) against the compiled
//! ones (`codegen::math`), bit for bit: the loops' gates are the compiled
//! step's. Over dense sweeps, every power of two, the neighbours of each
//! branch and overflow threshold, special values and random bit patterns,
//! through the vector and the scalar paths.

use crate::jit;

use jit::{run, Emit, Jit, Mode, XorShift};
use specc_compiler::codegen::math;
use specc_runtime::rnn::Real;

/// Every f32 within this many steps of a threshold.
const WALK: usize = 4096;

fn inputs(thresholds: &[f32]) -> Vec<f32> {
    let mut v: Vec<f32> = Vec::new();
    let n = 200_000;
    for (lo, hi) in [(-110.0f64, 95.0f64), (-2.0, 2.0)] {
        v.extend((0..=n).map(|i| (lo + (hi - lo) * (i as f64 / n as f64)) as f32));
    }
    for k in -149..=127 {
        let p = 2f64.powi(k) as f32;
        v.extend([p, -p]);
    }
    v.extend([
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::MAX,
        -f32::MAX,
        f32::from_bits(1),
        -f32::from_bits(1),
    ]);
    for &t in thresholds {
        let (mut up, mut down) = (t, t);
        v.push(t);
        for _ in 0..WALK {
            up = up.next_up();
            down = down.next_down();
            v.extend([up, down]);
        }
    }
    let mut rng = XorShift(0x2545_F491);
    v.extend((0..500_000).map(|_| f32::from_bits(rng.next_u32())));
    v
}

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn check(name: &str, emit: Emit, runtime: fn(f32) -> f32, thresholds: &[f32]) {
    let mut jit = Jit::native();
    let xs = inputs(thresholds);
    for mode in [Mode::Vector, Mode::ScalarOnly] {
        let f = jit.compile_map(&format!("{name}_{mode:?}"), emit, mode);
        let ys = run(f, &xs);
        let bad: Vec<String> = xs
            .iter()
            .zip(&ys)
            .filter(|(&x, &y)| !same(runtime(x), y))
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
