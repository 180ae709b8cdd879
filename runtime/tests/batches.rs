//! Batch order against the benchmark's vectors (W1 digits, W2 cancer), the
//! other shuffle regimes, the held-out split (plain and stratified) and
//! gathering.

use crate::common;

use common::fixture;
use specc_runtime::batches::{
    gather_f32, gather_i32, held_out_split, split_rows, split_rows_stratified, BatchOrder,
};
use specc_runtime::data::{Dataset, InputData, Values};
use specc_runtime::prng::SplitMix64;

fn batches(n: usize, buffer: usize, seed: u64, batch: usize, count: usize) -> Vec<Vec<u32>> {
    let mut order = BatchOrder::new(n, buffer, seed);
    (0..count)
        .map(|_| {
            let mut b = vec![0u32; batch];
            order.next_batch(&mut b);
            b
        })
        .collect()
}

fn as_rows(v: &serde_json::Value) -> Vec<Vec<u32>> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap() as u32)
                .collect()
        })
        .collect()
}

#[test]
fn digits_w1_first_batches() {
    // W1: 1797 rows, batch 64, shuffle seed 7.
    let fx = fixture("prng_check.json");
    let want = as_rows(&fx["digits_batches_first2"]);
    assert_eq!(want.len(), 2);
    assert_eq!(batches(1797, 1797, 7, 64, 2), want);
}

#[test]
fn digits_w1_batch_28_straddles_two_epochs() {
    // Batch 28 covers stream positions 1792..1856: the last 5 indices of
    // epoch 0 and the first 59 of epoch 1.
    let fx = fixture("prng_check.json");
    let want: Vec<u32> = fx["digits_batch28_straddles_epochs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect();
    let mut order = BatchOrder::new(1797, 1797, 7);
    let mut b = vec![0u32; 64];
    for k in 0..28 {
        order.next_batch(&mut b);
        assert_eq!(order.epochs_started(), 1, "batch {k}");
    }
    order.next_batch(&mut b);
    assert_eq!(b, want);
    assert_eq!(order.epochs_started(), 2);
}

#[test]
fn cancer_w2_first_batch() {
    // W2: 569 rows, batch 32, shuffle seed 7.
    let fx = fixture("prng_check.json");
    assert_eq!(
        batches(569, 569, 7, 32, 1),
        as_rows(&fx["cancer_batches_first1"])
    );
}

#[test]
fn full_shuffle_epochs_are_permutations_and_buffer_beyond_n_is_the_same() {
    let n = 100;
    let a: Vec<u32> = batches(n, n, 3, 10, 30).concat();
    let b: Vec<u32> = batches(n, 10 * n, 3, 10, 30).concat();
    assert_eq!(a, b);
    for e in 0..3 {
        let mut ep = a[e * n..(e + 1) * n].to_vec();
        assert_ne!(ep, (0..n as u32).collect::<Vec<_>>());
        ep.sort_unstable();
        assert_eq!(ep, (0..n as u32).collect::<Vec<_>>());
    }
    // Different epochs are different permutations.
    assert_ne!(a[..n], a[n..2 * n]);
}

#[test]
fn no_shuffle_is_data_order() {
    for buffer in [0, 1] {
        let got = batches(5, buffer, 9, 3, 4).concat();
        assert_eq!(got, vec![0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1]);
    }
    let mut o = BatchOrder::new(5, 0, 0);
    assert_eq!(o.epochs_started(), 0);
    let mut b = [0u32; 5];
    o.next_batch(&mut b);
    assert_eq!(o.epochs_started(), 1);
    o.next_batch(&mut b[..1]);
    assert_eq!(o.epochs_started(), 2);
}

/// The documented tf.data `shuffle(buffer).repeat()` rule, written plainly.
fn reference_buffer_shuffle(n: usize, buffer: usize, seed: u64, count: usize) -> Vec<u32> {
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::new();
    while out.len() < count {
        let mut buf: Vec<u32> = (0..buffer as u32).collect();
        let mut next = buffer as u32;
        while !buf.is_empty() && out.len() < count {
            let j = (rng.next_u64() % buf.len() as u64) as usize;
            out.push(buf[j]);
            if (next as usize) < n {
                buf[j] = next;
                next += 1;
            } else {
                buf.swap_remove(j);
            }
        }
    }
    out
}

#[test]
fn shuffle_buffer_smaller_than_data() {
    let (n, buffer) = (50, 8);
    let got = batches(n, buffer, 11, 7, 40).concat();
    assert_eq!(got, reference_buffer_shuffle(n, buffer, 11, 280));
    for e in 0..5 {
        let mut ep = got[e * n..(e + 1) * n].to_vec();
        // A bounded buffer only delays an index by a bounded amount.
        for (pos, &i) in ep.iter().enumerate() {
            assert!((i as usize) < pos + buffer, "epoch {e} pos {pos} index {i}");
        }
        ep.sort_unstable();
        assert_eq!(ep, (0..n as u32).collect::<Vec<_>>());
    }
    // Epoch 0 is a real shuffle, and the order is deterministic.
    assert_ne!(got[..n], (0..n as u32).collect::<Vec<_>>()[..]);
    assert_eq!(got, batches(n, buffer, 11, 7, 40).concat());
    assert_ne!(got, batches(n, buffer, 12, 7, 40).concat());
}

#[test]
fn split_is_deterministic_sorted_and_disjoint() {
    let n = 569;
    let (train, eval) = split_rows(n, 0.2, 7);
    assert_eq!(eval.len(), 114); // round(113.8)
    assert_eq!(train.len(), n - 114);
    assert!(train.windows(2).all(|w| w[0] < w[1]));
    assert!(eval.windows(2).all(|w| w[0] < w[1]));
    let mut all: Vec<u32> = train.iter().chain(&eval).copied().collect();
    all.sort_unstable();
    assert_eq!(all, (0..n as u32).collect::<Vec<_>>());
    assert_eq!(split_rows(n, 0.2, 7), (train.clone(), eval.clone()));
    assert_ne!(split_rows(n, 0.2, 8).1, eval);

    // The eval rows are the first k of one Fisher-Yates epoch drawn from the
    // stream seeded with seed ^ 0x5EED5EED5EED5EED.
    let mut order = BatchOrder::new(n, n, 7 ^ 0x5EED_5EED_5EED_5EED);
    let mut first = vec![0u32; 114];
    order.next_batch(&mut first);
    first.sort_unstable();
    assert_eq!(first, eval);
}

#[test]
fn split_edge_cases() {
    let all: Vec<u32> = (0..10).collect();
    assert_eq!(split_rows(10, 0.0, 1), (all.clone(), vec![]));
    assert_eq!(split_rows(10, f64::NAN, 1), (all.clone(), vec![]));
    assert_eq!(split_rows(10, -0.5, 1), (all, vec![]));
    assert_eq!(split_rows(10, 0.04, 1).1.len(), 0);
    assert_eq!(split_rows(10, 0.05, 1).1.len(), 1); // 0.5 rounds away from zero
                                                    // Train keeps at least one row.
    let (train, eval) = split_rows(10, 0.99, 1);
    assert_eq!((train.len(), eval.len()), (1, 9));
    let (train, eval) = split_rows(10, 1.0, 1);
    assert_eq!((train.len(), eval.len()), (1, 9));
    assert_eq!(split_rows(0, 0.5, 1), (vec![], vec![]));
}

/// The held-out split picks its rule by the label: stratified by a class-id
/// input of one column, plain otherwise. The stratified rule keeps each
/// class's share (`round(n_c * fraction)` held out).
#[test]
fn held_out_split_is_stratified_by_a_class_label() {
    let labels: Vec<i32> = (0..100).map(|r| if r % 10 < 7 { 0 } else { 1 }).collect();
    let data = Dataset::from_inputs(
        100,
        vec![
            InputData::new("y", 1, Values::I32(labels.clone())),
            InputData::new("z", 1, Values::F32(vec![0.5; 100])),
            InputData::new("pair", 2, Values::I32(vec![1; 200])),
        ],
    )
    .unwrap();
    let (train, held) = held_out_split(&data, Some("y"), 0.2, 3);
    assert_eq!(
        (train.clone(), held.clone()),
        split_rows_stratified(&labels, 0.2, 3)
    );
    let held_ones = held.iter().filter(|&&r| labels[r as usize] == 1).count();
    assert_eq!((held.len(), held_ones), (20, 6)); // 14 of 70 zeros, 6 of 30 ones
    assert_eq!(train.len(), 80);
    for not_a_label in [None, Some("z"), Some("pair"), Some("nope")] {
        assert_eq!(
            held_out_split(&data, not_a_label, 0.2, 3),
            split_rows(100, 0.2, 3),
            "{not_a_label:?}"
        );
    }
}

#[test]
fn gather_rows() {
    let src: Vec<f32> = (0..12).map(|v| v as f32).collect(); // [4, 3]
    let mut dst = vec![0.0f32; 9];
    gather_f32(&src, 3, &[3, 0, 3], &mut dst);
    assert_eq!(dst, vec![9.0, 10.0, 11.0, 0.0, 1.0, 2.0, 9.0, 10.0, 11.0]);
    let labels = [5, 6, 7, 8];
    let mut out = [0i32; 4];
    gather_i32(&labels, 1, &[2, 2, 0, 3], &mut out);
    assert_eq!(out, [7, 7, 5, 8]);
    let mut two = [0i32; 4];
    gather_i32(&[1, 2, 3, 4], 2, &[1, 0], &mut two);
    assert_eq!(two, [3, 4, 1, 2]);
}
