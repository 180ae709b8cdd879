//! Quantization-aware training (`fake_quant_with_min_max_vars` and its
//! per-channel and constant-range forms): the outputs are TF 2.21's kernel
//! arithmetic in float32 (the nudged range, `quant_zero`, the steps), and
//! one SGD step moves the input, `min` and `max` by TF's straight-through
//! gradient (the upstream gradient inside the nudged range, its sums below
//! and above it); TF's special case of a zero range (`min = max = 0`:
//! zeros, the whole gradient to the input); the argument errors. (Against TF itself, bit for bit, on
//! drawn sizes and ranges: `interop/test_fake_quant.py`.)

use ndarray::{Array1, Array2};
use specc::Model;

/// TF 2.21's `FakeQuantWithMinMaxVarsFunctor` for one value (`divide`:
/// `_vars` divides by the scale; `_args`, `_per_channel` multiply by the
/// recomputed inverse), and the nudged bounds.
fn tf_fake_quant(
    x: f32,
    lo: f32,
    hi: f32,
    bits: u32,
    narrow: bool,
    divide: bool,
) -> (f32, f32, f32) {
    let qmin = if narrow { 1.0f32 } else { 0.0 };
    let qmax = ((1u32 << bits) - 1) as f32;
    let scale = (hi - lo) / (qmax - qmin);
    let inv = (qmax - qmin) / (hi - lo);
    let zp_from_min = qmin - lo / scale;
    let zp = if zp_from_min < qmin {
        qmin
    } else if zp_from_min > qmax {
        qmax
    } else {
        zp_from_min.round()
    };
    let (nmin, nmax) = ((qmin - zp) * scale, (qmax - zp) * scale);
    let quant_zero = (-nmin * inv + 0.5).floor();
    let cs = x.min(nmax).max(nmin) - nmin;
    let s = if divide { cs / scale } else { cs * inv };
    ((s - quant_zero + 0.5).floor() * scale, nmin, nmax)
}

fn spec(q: &str, bounds: &str) -> String {
    format!(
        "data synthetic(rows = 8, features = 4)
features {{
  x = numeric(x0..x3)
  w = numeric(x0..x3)
}}
params {{
  shift: [4] = zeros{bounds}
}}
xs = x + shift
q = {q}
loss = reduce_sum(q * w)
optimizer gradient_descent(learning_rate = 1.0)
train {{ batch = 6, steps = 1 }}
outputs {{ q = q }}
"
    )
}

const XS: [[f32; 4]; 6] = [
    [-3.0, -1.25, -0.4, 0.0],
    [0.07, 0.33, 0.5, 0.9],
    [1.0, 1.3, 1.7, 2.2],
    [2.6, 3.1, -0.013, 0.61],
    [-0.9, 0.25, 1.49, 1.51],
    [4.0, -2.0, 0.125, 0.875],
];

fn batch() -> Array2<f32> {
    Array2::from_shape_vec((6, 4), XS.concat()).unwrap()
}

#[test]
fn the_outputs_are_tfs_kernel_and_the_step_its_straight_through_gradient() {
    let (lo, hi, bits) = (-0.93f32, 2.07f32, 4);
    let text = spec(
        "fake_quant_with_min_max_vars(xs, qmin, qmax, num_bits = 4)",
        &format!("\n  qmin: [] = constant(value = {lo})\n  qmax: [] = constant(value = {hi})"),
    );
    let mut m = Model::from_source("fq.spec", &text).unwrap();
    let x = batch();
    let out = m
        .predict(&[("x", x.view().into_dyn()), ("w", x.view().into_dyn())])
        .unwrap();
    let q = &out[0].1;
    let (mut below, mut above) = (0.0f64, 0.0f64);
    let mut inside = [0.0f64; 4];
    for (r, row) in XS.iter().enumerate() {
        for (k, &v) in row.iter().enumerate() {
            let (want, nmin, nmax) = tf_fake_quant(v, lo, hi, bits, false, true);
            assert_eq!(q[[r, k]], want, "q({v})");
            // The upstream gradient of sum(q * w) is w = x.
            if v < nmin {
                below += f64::from(v);
            } else if v > nmax {
                above += f64::from(v);
            } else {
                inside[k] += f64::from(v);
            }
        }
    }
    assert!(
        below != 0.0 && above != 0.0,
        "values on both sides of the range"
    );
    m.train_step(&[("x", x.view().into_dyn()), ("w", x.view().into_dyn())])
        .unwrap();
    let moved = |name: &str, before: f32| {
        f64::from(before) - f64::from(m.parameter(name).unwrap().iter().next().copied().unwrap())
    };
    assert!(
        (moved("qmin", lo) - below).abs() < 1e-5,
        "min's gradient: {} vs {below}",
        moved("qmin", lo)
    );
    assert!(
        (moved("qmax", hi) - above).abs() < 1e-5,
        "max's gradient: {} vs {above}",
        moved("qmax", hi)
    );
    let shift = m.parameter("shift").unwrap();
    for k in 0..4 {
        assert!(
            (f64::from(-shift[[k]]) - inside[k]).abs() < 1e-5,
            "x's gradient, column {k}"
        );
    }
}

#[test]
fn a_zero_range_gives_zeros_and_its_gradient_to_the_input() {
    // TF's special case of min = max = 0 (per tensor, and per channel for
    // the channels whose range is zero): output 0, the whole upstream
    // gradient to the input, none to the range.
    for (q, bounds, zero) in [
        (
            "fake_quant_with_min_max_vars(xs, qmin, qmax)",
            "\n  qmin: [] = zeros\n  qmax: [] = zeros",
            [true; 4],
        ),
        (
            "fake_quant_with_min_max_vars_per_channel(xs, qmin, qmax)",
            "\n  qmin: [4] = constant(value = [0, -1, 0, 0])\n  qmax: [4] = constant(value = [0, 1, 0, 2])",
            [true, false, true, false],
        ),
    ] {
        let mut m = Model::from_source("fq.spec", &spec(q, bounds)).unwrap();
        let x = batch();
        let feeds = [("x", x.view().into_dyn()), ("w", x.view().into_dyn())];
        let out = m.predict(&feeds).unwrap();
        for (r, row) in XS.iter().enumerate() {
            for (k, &v) in row.iter().enumerate() {
                if zero[k] {
                    assert_eq!(out[0].1[[r, k]], 0.0, "{q}: q({v})");
                } else {
                    let (lo, hi) = ([0.0, -1.0, 0.0, 0.0][k], [0.0, 1.0, 0.0, 2.0][k]);
                    let want = tf_fake_quant(v, lo, hi, 8, false, false).0;
                    assert_eq!(out[0].1[[r, k]], want, "{q}: q({v})");
                }
            }
        }
        let (qmin, qmax) = (m.parameter("qmin").unwrap(), m.parameter("qmax").unwrap());
        m.train_step(&feeds).unwrap();
        let shift = m.parameter("shift").unwrap();
        for k in (0..4).filter(|&k| zero[k]) {
            // The upstream gradient of sum(q * w) is w = x, all of it.
            let sum: f64 = XS.iter().map(|row| f64::from(row[k])).sum();
            assert!(
                (f64::from(-shift[[k]]) - sum).abs() < 1e-5,
                "{q}: x's gradient, column {k}"
            );
        }
        let after = (m.parameter("qmin").unwrap(), m.parameter("qmax").unwrap());
        for (k, z) in zero.iter().enumerate() {
            let at = |a: &ndarray::ArrayD<f32>| a.iter().nth(k.min(a.len() - 1)).copied().unwrap();
            if *z {
                assert_eq!((at(&after.0), at(&after.1)), (at(&qmin), at(&qmax)), "{q}: range {k}");
            }
        }
    }
}

#[test]
fn per_channel_and_constant_ranges_follow_tfs_kernels() {
    let (lo, hi) = ([-1.0f32, -0.5, -2.0, 0.3], [1.0f32, 2.5, 0.1, 1.9]);
    let text = spec(
        "fake_quant_with_min_max_vars_per_channel(xs, qmin, qmax, num_bits = 5, narrow_range = true)",
        &format!(
            "\n  qmin: [4] = constant(value = {:?})\n  qmax: [4] = constant(value = {:?})",
            lo, hi
        ),
    );
    let mut m = Model::from_source("fq.spec", &text).unwrap();
    let x = batch();
    let out = m
        .predict(&[("x", x.view().into_dyn()), ("w", x.view().into_dyn())])
        .unwrap();
    for (r, row) in XS.iter().enumerate() {
        for (k, &v) in row.iter().enumerate() {
            let want = tf_fake_quant(v, lo[k], hi[k], 5, true, false).0;
            assert_eq!(out[0].1[[r, k]], want, "channel {k}: q({v})");
        }
    }
    let text = spec(
        "fake_quant_with_min_max_args(xs, min = -1.5, max = 2.25, num_bits = 3)",
        "",
    );
    let mut m = Model::from_source("fq.spec", &text).unwrap();
    let out = m
        .predict(&[("x", x.view().into_dyn()), ("w", x.view().into_dyn())])
        .unwrap();
    let levels: Vec<f32> = XS
        .iter()
        .flatten()
        .map(|&v| tf_fake_quant(v, -1.5, 2.25, 3, false, false).0)
        .collect();
    assert_eq!(out[0].1.iter().copied().collect::<Vec<f32>>(), levels);
    let distinct: std::collections::BTreeSet<u32> = levels.iter().map(|v| v.to_bits()).collect();
    assert!(distinct.len() <= 8, "3 bits: at most 8 levels");
    let _ = Array1::<f32>::zeros(1);
}

#[test]
fn bad_arguments_are_caret_errors() {
    for (q, bounds, want) in [
        (
            "fake_quant_with_min_max_vars(xs, qmin, qmax, num_bits = 17)",
            "\n  qmin: [] = constant(value = -1.0)\n  qmax: [] = constant(value = 1.0)",
            "num_bits must be between 2 and 16, got 17",
        ),
        (
            "fake_quant_with_min_max_vars(xs, qmin, qmax)",
            "\n  qmin: [4] = zeros\n  qmax: [] = constant(value = 1.0)",
            "`min` of a per-tensor fake quantization is a scalar, got [4]",
        ),
        (
            "fake_quant_with_min_max_vars_per_channel(xs, qmin, qmax)",
            "\n  qmin: [3] = zeros\n  qmax: [4] = zeros",
            "`min` must be [4], one per channel of the last axis, got [3]",
        ),
        (
            "fake_quant_with_min_max_args(xs, min = 2.0, max = 1.0)",
            "",
            "the range [2, 1] is empty: min must be below max",
        ),
    ] {
        let text = spec(q, bounds);
        let err = Model::from_source("fq.spec", &text)
            .err()
            .unwrap_or_else(|| panic!("{q} compiles"))
            .to_string();
        assert!(err.contains(want), "{want} not in\n{err}");
    }
}
