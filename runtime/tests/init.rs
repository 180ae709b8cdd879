//! Initializers: the benchmark's glorot_uniform bit for bit, TF semantics and
//! statistics of the others.

use crate::common;

use common::{as_f64s, assert_f32_exact, fixture};
use specc_runtime::init::{fans, initialize, Initializer};
use specc_runtime::prng::SplitMix64;

fn init(i: &Initializer, shape: &[usize]) -> Vec<f32> {
    let n: usize = shape.iter().product();
    let mut out = vec![f32::NAN; n];
    initialize(i, shape, &mut out).unwrap();
    out
}

fn mean_std(v: &[f32]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().map(|&x| f64::from(x)).sum::<f64>() / n;
    let var = v
        .iter()
        .map(|&x| (f64::from(x) - mean).powi(2))
        .sum::<f64>()
        / n;
    (mean, var.sqrt())
}

#[test]
fn glorot_uniform_matches_bench_64x128() {
    let fx = fixture("prng_check.json");
    let w = init(&Initializer::GlorotUniform { seed: 1 }, &[64, 128]);
    let row0 = as_f64s(&fx["glorot_64x128_seed1_row0_first8"]);
    for (k, &want) in row0.iter().enumerate() {
        assert_f32_exact(w[k], want, &format!("element {k}"));
    }
    let sum: f64 = w.iter().map(|&x| f64::from(x)).sum();
    let want = fx["glorot_64x128_seed1_sum"].as_f64().unwrap();
    assert!(
        ((sum - want) / want).abs() < 1e-9,
        "sum {sum} vs bench {want}"
    );
}

#[test]
fn glorot_uniform_matches_bench_30x1() {
    let fx = fixture("prng_check.json");
    let w = init(&Initializer::GlorotUniform { seed: 1 }, &[30, 1]);
    for (k, &want) in as_f64s(&fx["glorot_30x1_seed1_first5"]).iter().enumerate() {
        assert_f32_exact(w[k], want, &format!("element {k}"));
    }
    let limit = (6.0f64 / 31.0).sqrt() as f32;
    assert!(w.iter().all(|x| x.abs() <= limit));
}

#[test]
fn fans_follow_tf() {
    assert_eq!(fans(&[]), (1.0, 1.0));
    assert_eq!(fans(&[7]), (7.0, 7.0));
    assert_eq!(fans(&[3, 5]), (3.0, 5.0));
    // conv kernel [kh, kw, in, out]: receptive field 3*3.
    assert_eq!(fans(&[3, 3, 16, 32]), (144.0, 288.0));
    assert_eq!(fans(&[2, 4, 6]), (8.0, 12.0));
}

#[test]
fn zeros_ones_constant() {
    assert!(init(&Initializer::Zeros, &[2, 3]).iter().all(|&x| x == 0.0));
    assert!(init(&Initializer::Ones, &[4]).iter().all(|&x| x == 1.0));
    assert_eq!(init(&Initializer::Constant(vec![2.5]), &[3]), vec![2.5; 3]);
    assert_eq!(
        init(&Initializer::Constant(vec![1.0, 2.0, 3.0, 4.0]), &[2, 2]),
        vec![1.0, 2.0, 3.0, 4.0]
    );
    assert_eq!(init(&Initializer::Constant(vec![9.0]), &[]), vec![9.0]);
    let mut out = vec![0.0; 4];
    let e = initialize(&Initializer::Constant(vec![1.0, 2.0]), &[2, 2], &mut out).unwrap_err();
    assert!(e.contains("2 values") && e.contains("4 elements"), "{e}");
    assert!(initialize(&Initializer::Constant(vec![]), &[2, 2], &mut out).is_err());
}

#[test]
fn wrong_buffer_length_is_an_error() {
    let mut out = vec![0.0; 5];
    let e = initialize(&Initializer::Zeros, &[2, 3], &mut out).unwrap_err();
    assert!(e.contains("5") && e.contains("6"), "{e}");
}

#[test]
fn zero_sized_shapes_draw_nothing() {
    let mut out: Vec<f32> = vec![];
    initialize(&Initializer::GlorotUniform { seed: 1 }, &[0, 4], &mut out).unwrap();
    initialize(&Initializer::GlorotNormal { seed: 1 }, &[4, 0], &mut out).unwrap();
}

#[test]
fn random_uniform_definition_and_range() {
    let (minval, maxval) = (-0.25f32, 0.75f32);
    let w = init(
        &Initializer::RandomUniform {
            minval,
            maxval,
            seed: 11,
        },
        &[100_000],
    );
    let mut s = SplitMix64::new(11);
    for &x in &w[..100] {
        assert_eq!(x, s.uniform01_f32() * (maxval - minval) + minval);
    }
    assert!(w.iter().all(|&x| (minval..maxval).contains(&x)));
    let (mean, std) = mean_std(&w);
    assert!((mean - 0.25).abs() < 0.005, "mean {mean}");
    assert!((std - 1.0 / 12f64.sqrt()).abs() < 0.005, "std {std}");
}

#[test]
fn random_normal_definition_and_statistics() {
    let (mean, stddev) = (0.5f32, 2.0f32);
    let w = init(
        &Initializer::RandomNormal {
            mean,
            stddev,
            seed: 3,
        },
        &[100_000],
    );
    let mut s = SplitMix64::new(3);
    for &x in &w[..100] {
        assert_eq!(x, s.normal_f64() as f32 * stddev + mean);
    }
    let (m, sd) = mean_std(&w);
    assert!((m - 0.5).abs() < 0.03, "mean {m}");
    assert!((sd - 2.0).abs() < 0.03, "std {sd}");
}

#[test]
fn truncated_normal_respects_the_bound() {
    let (mean, stddev) = (1.0f32, 0.1f32);
    let w = init(
        &Initializer::TruncatedNormal {
            mean,
            stddev,
            seed: 8,
        },
        &[100_000],
    );
    assert!(w.iter().all(|&x| (f64::from(x) - 1.0).abs() <= 0.2 + 1e-6));
    let (m, sd) = mean_std(&w);
    assert!((m - 1.0).abs() < 0.002, "mean {m}");
    // std of a standard normal truncated to [-2, 2].
    assert!((sd - 0.1 * 0.879_625_661).abs() < 0.002, "std {sd}");
    // Redraws come from the same stream: the first accepted normals are the
    // first normals with |n| <= 2.
    let mut s = SplitMix64::new(8);
    let mut k = 0;
    while k < 100 {
        let n = s.normal_f64();
        if n.abs() <= 2.0 {
            assert_eq!(w[k], n as f32 * stddev + mean);
            k += 1;
        }
    }
}

#[test]
fn glorot_normal_is_tf2_variance_scaling() {
    let shape = [300, 200];
    let w = init(&Initializer::GlorotNormal { seed: 4 }, &shape);
    let param_std = (2.0f64 / 500.0).sqrt() / 0.879_625_661_034_239_8;
    assert!(w
        .iter()
        .all(|&x| f64::from(x).abs() <= 2.0 * param_std + 1e-6));
    let (m, sd) = mean_std(&w);
    assert!(m.abs() < 0.001, "mean {m}");
    // The truncated distribution has exactly the glorot variance 2/(in+out).
    let want = (2.0f64 / 500.0).sqrt();
    assert!((sd - want).abs() / want < 0.01, "std {sd} vs {want}");
}

#[test]
fn deterministic_and_seed_dependent() {
    for make in [
        |seed| Initializer::GlorotUniform { seed },
        |seed| Initializer::GlorotNormal { seed },
        |seed| Initializer::RandomNormal {
            mean: 0.0,
            stddev: 1.0,
            seed,
        },
        |seed| Initializer::RandomUniform {
            minval: -1.0,
            maxval: 1.0,
            seed,
        },
        |seed| Initializer::TruncatedNormal {
            mean: 0.0,
            stddev: 1.0,
            seed,
        },
    ] {
        let a = init(&make(5), &[16, 8]);
        let b = init(&make(5), &[16, 8]);
        let c = init(&make(6), &[16, 8]);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.iter().all(|x| x.is_finite()));
    }
}

#[test]
fn bad_parameters_are_errors() {
    let mut out = vec![0.0; 4];
    for bad in [
        Initializer::RandomNormal {
            mean: 0.0,
            stddev: -1.0,
            seed: 0,
        },
        Initializer::TruncatedNormal {
            mean: f32::NAN,
            stddev: 1.0,
            seed: 0,
        },
        Initializer::RandomUniform {
            minval: 0.0,
            maxval: f32::INFINITY,
            seed: 0,
        },
    ] {
        assert!(initialize(&bad, &[4], &mut out).is_err(), "{bad:?}");
    }
}
