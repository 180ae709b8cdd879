//! splitmix64 against the benchmark's test vectors (`prng_check.json`).

use crate::common;

use common::{as_f64s, as_u64s, assert_f32_exact, fixture};
use specc_runtime::prng::{fnv1a64, SplitMix64};

#[test]
fn splitmix64_matches_bench_vectors() {
    let fx = fixture("prng_check.json");
    for (seed, key) in [
        (1u64, "splitmix64_seed1_first5"),
        (7, "splitmix64_seed7_first5"),
    ] {
        let want = as_u64s(&fx[key]);
        let mut s = SplitMix64::new(seed);
        let got: Vec<u64> = (0..want.len()).map(|_| s.next_u64()).collect();
        assert_eq!(got, want, "{key}");
        for (k, &w) in want.iter().enumerate() {
            assert_eq!(
                SplitMix64::output(seed, k as u64 + 1),
                w,
                "{key} random access"
            );
        }
    }
}

#[test]
fn uniform01_f32_matches_bench_vectors() {
    let fx = fixture("prng_check.json");
    let want = as_f64s(&fx["uniform01_f32_seed42_first5"]);
    let mut s = SplitMix64::new(42);
    for &w in &want {
        let u = s.uniform01_f32();
        assert_f32_exact(u, w, "uniform01_f32 seed 42");
    }
}

#[test]
fn uniform01_f64_definition() {
    let mut a = SplitMix64::new(3);
    let mut b = SplitMix64::new(3);
    for _ in 0..1000 {
        let z = a.next_u64();
        let u = b.uniform01_f64();
        assert_eq!(u, (z >> 11) as f64 / 2f64.powi(53));
        assert!((0.0..1.0).contains(&u));
    }
}

#[test]
fn skip_advances_the_counter() {
    let mut a = SplitMix64::new(99);
    let mut b = SplitMix64::new(99);
    for _ in 0..37 {
        a.next_u64();
    }
    b.skip(37);
    assert_eq!(a, b);
    assert_eq!(a.next_u64(), b.next_u64());
    assert_eq!(
        SplitMix64::new(99).clone().next_u64(),
        SplitMix64::output(99, 1)
    );
}

#[test]
fn normal_uses_two_outputs_box_muller() {
    let mut s = SplitMix64::new(5);
    let mut raw = SplitMix64::new(5);
    for _ in 0..100 {
        let n = s.normal_f64();
        let z1 = raw.next_u64();
        let z2 = raw.next_u64();
        let u1 = ((z1 >> 11) + 1) as f64 * 2f64.powi(-53);
        let u2 = (z2 >> 11) as f64 * 2f64.powi(-53);
        let want = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        assert_eq!(n, want);
    }
    assert_eq!(s, raw);
}

#[test]
fn normal_statistics() {
    let mut s = SplitMix64::new(2024);
    let n = 100_000;
    let xs: Vec<f64> = (0..n).map(|_| s.normal_f64()).collect();
    let mean = xs.iter().sum::<f64>() / n as f64;
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
    assert!(mean.abs() < 0.01, "mean {mean}");
    assert!((var.sqrt() - 1.0).abs() < 0.01, "std {}", var.sqrt());
    let within1 = xs.iter().filter(|x| x.abs() <= 1.0).count() as f64 / n as f64;
    assert!((within1 - 0.6827).abs() < 0.01, "P(|n| <= 1) = {within1}");
}

#[test]
fn fnv1a64_reference_vectors() {
    // Published FNV-1a 64-bit test vectors.
    assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
}
