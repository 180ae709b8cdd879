//! TensorFlow's histogram of a tensor (`tensorflow/core/lib/histogram`'s
//! `Histogram` with its default buckets, what `tf.compat.v1.summary.histogram`
//! and TensorBoard's histogram and distribution dashboards show).
//!
//! Owns: [`default_bucket_limits`] (TF's exponential limits: `±1e-12·1.1^k`
//! below `1e20`, then `±DBL_MAX`, and `0`), [`Histogram`] (counts per
//! bucket, min, max, num, sum, sum of squares, all in float64) and its
//! [`HistogramProto`] (TF's `EncodeToProto` without zero buckets: every run of
//! empty buckets becomes one empty bucket at the run's last limit, and an
//! empty histogram is one empty bucket at `DBL_MAX`), and its state as
//! float64 words ([`Histogram::state`], [`Histogram::merge_state`]: the
//! histogram of a tensor whose parts several processes hold).
//!
//! Invariants: a value `v` (a float32 subnormal flushed to zero, as TF's
//! kernels do) counts in the first bucket whose limit is greater
//! than `v` (`std::upper_bound`), so bucket `i` holds
//! `limits[i-1] <= v < limits[i]`; `sum` and `sum_squares` add the values as
//! float64 in the order given, as TF does; the limits are computed once per
//! process, by the same repeated float64 multiplication as TF, so they are
//! TF's bits.

use std::sync::OnceLock;

/// A histogram as TF stores it in a `Summary.Value` (`HistogramProto`):
/// `bucket[i]` values below `bucket_limit[i]` and at or above the previous limit.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HistogramProto {
    pub min: f64,
    pub max: f64,
    pub num: f64,
    pub sum: f64,
    pub sum_squares: f64,
    pub bucket_limit: Vec<f64>,
    pub bucket: Vec<f64>,
}

/// TF's default bucket limits (`InitDefaultBuckets`): `-DBL_MAX`, the
/// negated exponential limits descending, `0`, the exponential limits
/// `1e-12·1.1^k` (k from 0 while below `1e20`), `DBL_MAX`.
pub fn default_bucket_limits() -> &'static [f64] {
    static LIMITS: OnceLock<Vec<f64>> = OnceLock::new();
    LIMITS.get_or_init(|| {
        let mut pos = Vec::new();
        let mut v = 1.0e-12;
        while v < 1.0e20 {
            pos.push(v);
            v *= 1.1;
        }
        pos.push(f64::MAX);
        let mut all: Vec<f64> = pos.iter().rev().map(|&x| -x).collect();
        all.push(0.0);
        all.extend_from_slice(&pos);
        all
    })
}

/// Counts of values in TF's default buckets.
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    limits: &'static [f64],
    buckets: Vec<f64>,
    min: f64,
    max: f64,
    num: f64,
    sum: f64,
    sum_squares: f64,
}

impl Default for Histogram {
    fn default() -> Histogram {
        Histogram::new()
    }
}

impl Histogram {
    /// An empty histogram over TF's default buckets (min `DBL_MAX`, max
    /// `-DBL_MAX`, as TF's `Clear`).
    pub fn new() -> Histogram {
        let limits = default_bucket_limits();
        Histogram {
            limits,
            buckets: vec![0.0; limits.len()],
            min: f64::MAX,
            max: -f64::MAX,
            num: 0.0,
            sum: 0.0,
            sum_squares: 0.0,
        }
    }

    /// Empties the histogram, keeping its memory.
    pub fn clear(&mut self) {
        self.buckets.fill(0.0);
        self.min = f64::MAX;
        self.max = -f64::MAX;
        self.num = 0.0;
        self.sum = 0.0;
        self.sum_squares = 0.0;
    }

    /// Adds one value (TF's `Histogram::Add`). An infinity counts in the
    /// last bucket, a NaN in the first, and either makes the sums non-finite;
    /// callers that follow TF's summary op refuse non-finite values first
    /// ([`Histogram::add_finite`]).
    #[inline]
    pub fn add(&mut self, value: f64) {
        let b = self.limits.partition_point(|&l| l <= value);
        let b = b.min(self.buckets.len() - 1);
        self.buckets[b] += 1.0;
        if self.min > value {
            self.min = value;
        }
        if self.max < value {
            self.max = value;
        }
        self.num += 1.0;
        self.sum += value;
        self.sum_squares += value * value;
    }

    /// Adds a float32 value as TF's `HistogramSummary` kernel does: its CPU
    /// kernels run with denormals flushed, so a subnormal input counts as a
    /// zero of its sign.
    #[inline]
    pub fn add_f32(&mut self, value: f32) {
        let v = if value.is_subnormal() {
            0.0f32.copysign(value)
        } else {
            value
        };
        self.add(f64::from(v));
    }

    /// Adds every value of a float32 tensor ([`Histogram::add_f32`]); a NaN
    /// or infinity is refused (TF's "Nan in summary histogram" error) with
    /// its position, and then nothing was added.
    pub fn add_finite(&mut self, values: &[f32]) -> Result<(), usize> {
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(i);
        }
        for &v in values {
            self.add_f32(v);
        }
        Ok(())
    }

    /// The number of values added.
    pub fn num(&self) -> f64 {
        self.num
    }

    /// The count of every default bucket (for tests and custom encodings).
    pub fn buckets(&self) -> &[f64] {
        &self.buckets
    }

    /// The histogram's state as float64 words, for an exchange between
    /// processes: min, max, num, sum, sum of squares, then every bucket's
    /// count ([`Histogram::state_words`] in all).
    pub fn state(&self, out: &mut Vec<f64>) {
        out.extend_from_slice(&[self.min, self.max, self.num, self.sum, self.sum_squares]);
        out.extend_from_slice(&self.buckets);
    }

    /// The length of [`Histogram::state`].
    pub fn state_words() -> usize {
        5 + default_bucket_limits().len()
    }

    /// Adds the values a histogram of `state` ([`Histogram::state`]) counted,
    /// as if they came after this one's: counts, num, sum and sum of
    /// squares add up (in that order: TF's values of a tensor that is the
    /// two tensors concatenated, up to the rounding of the sums), min and
    /// max are the extremes. `state` is shorter than
    /// [`Histogram::state_words`]: nothing changes.
    pub fn merge_state(&mut self, state: &[f64]) {
        if state.len() < 5 + self.buckets.len() {
            return;
        }
        self.min = self.min.min(state[0]);
        self.max = self.max.max(state[1]);
        self.num += state[2];
        self.sum += state[3];
        self.sum_squares += state[4];
        for (b, c) in self.buckets.iter_mut().zip(&state[5..]) {
            *b += c;
        }
    }

    /// TF's `EncodeToProto(proto, preserve_zero_buckets = false)`.
    pub fn to_proto(&self) -> HistogramProto {
        let mut p = HistogramProto {
            min: self.min,
            max: self.max,
            num: self.num,
            sum: self.sum,
            sum_squares: self.sum_squares,
            bucket_limit: Vec::new(),
            bucket: Vec::new(),
        };
        let n = self.buckets.len();
        let mut i = 0;
        while i < n {
            let mut end = self.limits[i];
            let mut count = self.buckets[i];
            i += 1;
            if count <= 0.0 {
                while i < n && self.buckets[i] <= 0.0 {
                    end = self.limits[i];
                    count = self.buckets[i];
                    i += 1;
                }
            }
            p.bucket_limit.push(end);
            p.bucket.push(count);
        }
        if p.bucket.is_empty() {
            p.bucket_limit.push(f64::MAX);
            p.bucket.push(0.0);
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_limits_are_symmetric_sorted_and_end_at_dbl_max() {
        let l = default_bucket_limits();
        assert_eq!(l.len() % 2, 1);
        let mid = l.len() / 2;
        assert_eq!(l[mid], 0.0);
        assert_eq!(l[mid + 1], 1e-12);
        assert_eq!(l[l.len() - 1], f64::MAX);
        assert_eq!(l[0], -f64::MAX);
        assert!(l.windows(2).all(|w| w[0] < w[1]));
        for k in 0..mid {
            assert_eq!(l[k], -l[l.len() - 1 - k]);
        }
        assert!(l[l.len() - 2] < 1e20 && l[l.len() - 2] * 1.1 >= 1e20);
    }

    #[test]
    fn empty_histogram_is_one_empty_bucket_at_dbl_max() {
        let p = Histogram::new().to_proto();
        assert_eq!(p.bucket_limit, [f64::MAX]);
        assert_eq!(p.bucket, [0.0]);
        assert_eq!((p.min, p.max, p.num), (f64::MAX, -f64::MAX, 0.0));
    }

    #[test]
    fn a_value_on_a_limit_counts_above_it() {
        let mut h = Histogram::new();
        h.add(0.0);
        let p = h.to_proto();
        // The run of empty buckets up to the limit 0, then [0, 1e-12), then the rest.
        assert_eq!(p.bucket_limit, [0.0, 1e-12, f64::MAX]);
        assert_eq!(p.bucket, [0.0, 1.0, 0.0]);
    }

    #[test]
    fn subnormal_inputs_count_as_zeros_as_in_tfs_kernels() {
        let mut h = Histogram::new();
        h.add_finite(&[1e-45, -1e-45, 0.0]).unwrap();
        let p = h.to_proto();
        assert_eq!((p.sum, p.num, p.min, p.max), (0.0, 3.0, 0.0, 0.0));
        assert_eq!(p.bucket, [0.0, 3.0, 0.0]);
    }

    #[test]
    fn merged_states_are_the_histogram_of_the_values_together() {
        // Sums exact in float64 whatever the order.
        let (a, b) = ([-3.5f32, 0.0, 1e-30, 2.25], [7.0f32, -0.125, 2.25]);
        let mut whole = Histogram::new();
        whole.add_finite(&a).unwrap();
        whole.add_finite(&b).unwrap();
        let (mut ha, mut hb) = (Histogram::new(), Histogram::new());
        ha.add_finite(&a).unwrap();
        hb.add_finite(&b).unwrap();
        let mut state = Vec::new();
        hb.state(&mut state);
        assert_eq!(state.len(), Histogram::state_words());
        ha.merge_state(&state);
        assert_eq!(ha.to_proto(), whole.to_proto());
        // An empty histogram's state changes nothing.
        state.clear();
        Histogram::new().state(&mut state);
        ha.merge_state(&state);
        assert_eq!(ha, whole);
    }

    #[test]
    fn non_finite_values_are_refused_with_their_position() {
        let mut h = Histogram::new();
        assert_eq!(h.add_finite(&[1.0, f32::NAN]), Err(1));
        assert_eq!(h.num(), 0.0);
        assert_eq!(h.add_finite(&[f32::INFINITY]), Err(0));
    }
}
