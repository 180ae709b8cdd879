//! Metrics: what a spec's `metrics` item declares ([`Metric`]), the names of
//! the eval outputs each one reads ([`MetricOutput`], the one place those
//! names are spelled), and the streaming accumulators: TF's bucketed ROC AUC
//! and a weighted mean.
//!
//! [`Auc`] reproduces `tf.compat.v1.metrics.auc(labels, predictions,
//! num_thresholds = T, curve = 'ROC', summation_method = 'trapezoidal')`:
//!
//! - thresholds (float32, as TF builds them from Python floats):
//!   `[0 - 1e-7] + [(i + 1) / (T - 1) for i in 0..T-2] + [1 + 1e-7]`;
//! - a prediction p (float32) counts as positive at threshold t iff `p > t`;
//!   a label counts as positive iff it is non-zero (TF casts labels to bool);
//! - predictions must lie in `[0, 1]` (TF asserts it; NaN fails too);
//! - from the confusion counts tp, fn, tn, fp per threshold (`epsilon = 1e-6`):
//!   `rec = (tp + eps) / (tp + fn + eps)`, `fpr = fp / (fp + tn + eps)`,
//!   `auc = sum_i (fpr[i] - fpr[i+1]) * (rec[i] + rec[i+1]) / 2`.
//!
//! The per-threshold quantities are computed in float32 like TF's graph; the
//! final sum is accumulated in f64 (TF's float32 reduction order is an Eigen
//! detail; the difference is below float32 resolution of the result).
//! Counts are kept as exact integers (TF's float32 counters are exact up to
//! 2^24 examples).
//!
//! Invariant: an `update` either applies to every example or, on error, to
//! none. `update` costs O(n log T): each prediction is binary-searched into a
//! histogram of "number of thresholds below it"; the confusion counts are
//! suffix sums of that histogram, formed in `value`.
//!
//! [`MeanMetric`] is `tf.compat.v1.metrics.mean`: `sum(value * weight) /
//! sum(weight)`, 0 when the total weight is 0 (TF's `div_no_nan`).

/// How a metric is computed from the eval function's outputs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MetricKind {
    /// Fraction of elements where labels == predictions
    /// (`tf.compat.v1.metrics.accuracy`): reads [`MetricOutput::Sum`].
    Accuracy,
    /// TF's bucketed ROC AUC: reads [`MetricOutput::Labels`] and
    /// [`MetricOutput::Predictions`].
    Auc { num_thresholds: u32 },
    /// Mean of a tensor over all its elements: reads [`MetricOutput::Sum`].
    Mean,
}

/// A metric of a model: its name (the key `specc run` reports it under), its
/// kind, and the size of its per-example tensor. The compiler builds these
/// from the spec; the runtime evaluates them ([`crate::train::evaluate`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Metric {
    pub name: String,
    pub kind: MetricKind,
    /// Elements per example of the metric's tensor (the per-batch count is
    /// this times the batch size).
    pub per_example: u64,
}

/// An eval output a metric reads. The output of metric `m` is named
/// `metric/m/sum`, `metric/m/labels` or `metric/m/predictions`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricOutput {
    /// The batch's sum of the compared or averaged values (a scalar).
    Sum,
    /// Per-example labels as float32 (AUC).
    Labels,
    /// Per-example predictions (AUC).
    Predictions,
}

impl MetricOutput {
    /// The output's name for the metric called `metric`.
    pub fn name(self, metric: &str) -> String {
        let part = match self {
            MetricOutput::Sum => "sum",
            MetricOutput::Labels => "labels",
            MetricOutput::Predictions => "predictions",
        };
        format!("metric/{metric}/{part}")
    }
}

impl Metric {
    /// The name of this metric's output `part`.
    pub fn output(&self, part: MetricOutput) -> String {
        part.name(&self.name)
    }
}

/// Streaming ROC AUC with TF's bucketed, trapezoidal definition.
#[derive(Debug, Clone, PartialEq)]
pub struct Auc {
    thresholds: Vec<f32>,
    /// `pos[k]`: positive examples with exactly k thresholds strictly below
    /// their prediction (k in 0..=T).
    pos: Vec<u64>,
    /// Same for negative examples.
    neg: Vec<u64>,
}

/// Largest accepted `num_thresholds` (guards against absurd allocations).
pub const MAX_AUC_THRESHOLDS: usize = 1 << 24;

impl Auc {
    /// An empty AUC accumulator with `num_thresholds` thresholds (TF's
    /// default is 200). Needs `2 <= num_thresholds <= 2^24`.
    pub fn new(num_thresholds: usize) -> Result<Auc, String> {
        if !(2..=MAX_AUC_THRESHOLDS).contains(&num_thresholds) {
            return Err(format!(
                "auc: num_thresholds must be between 2 and {MAX_AUC_THRESHOLDS}, got {num_thresholds}"
            ));
        }
        let t = num_thresholds;
        let kepsilon = 1e-7f64;
        let mut thresholds = Vec::with_capacity(t);
        thresholds.push((0.0 - kepsilon) as f32);
        for i in 0..t - 2 {
            thresholds.push(((i + 1) as f64 / (t - 1) as f64) as f32);
        }
        thresholds.push((1.0 + kepsilon) as f32);
        Ok(Auc {
            thresholds,
            pos: vec![0; t + 1],
            neg: vec![0; t + 1],
        })
    }

    /// The thresholds, ascending (float32, as TF uses them).
    pub fn thresholds(&self) -> &[f32] {
        &self.thresholds
    }

    /// Add a batch. `labels` and `predictions` have the same length; every
    /// prediction must be in `[0, 1]`. On error nothing is added.
    pub fn update(&mut self, labels: &[f32], predictions: &[f32]) -> Result<(), String> {
        if labels.len() != predictions.len() {
            return Err(format!(
                "auc: {} labels but {} predictions",
                labels.len(),
                predictions.len()
            ));
        }
        if let Some((i, p)) = predictions
            .iter()
            .enumerate()
            .find(|(_, p)| !(0.0..=1.0).contains(*p))
        {
            return Err(format!(
                "auc: predictions must be in [0, 1], got {p} at position {i}"
            ));
        }
        for (&l, &p) in labels.iter().zip(predictions) {
            let k = self.thresholds.partition_point(|&t| t < p);
            if l != 0.0 {
                self.pos[k] += 1;
            } else {
                self.neg[k] += 1;
            }
        }
        Ok(())
    }

    /// The confusion counts per threshold: `(tp, fn, tn, fp)`, each of length
    /// `num_thresholds`.
    pub fn confusion(&self) -> (Vec<u64>, Vec<u64>, Vec<u64>, Vec<u64>) {
        let t = self.thresholds.len();
        let total_pos: u64 = self.pos.iter().sum();
        let total_neg: u64 = self.neg.iter().sum();
        let (mut tp, mut fp) = (vec![0u64; t], vec![0u64; t]);
        // tp[i] = #positives with more than i thresholds below = sum(pos[i+1..]).
        let (mut sp, mut sn) = (0u64, 0u64);
        for i in (0..t).rev() {
            sp += self.pos[i + 1];
            sn += self.neg[i + 1];
            tp[i] = sp;
            fp[i] = sn;
        }
        let fn_: Vec<u64> = tp.iter().map(|&x| total_pos - x).collect();
        let tn: Vec<u64> = fp.iter().map(|&x| total_neg - x).collect();
        (tp, fn_, tn, fp)
    }

    /// The current AUC (0 when no example has been added, as TF).
    pub fn value(&self) -> f64 {
        let (tp, fn_, tn, fp) = self.confusion();
        let eps = 1.0e-6f32;
        let t = tp.len();
        let rec = |i: usize| (tp[i] as f32 + eps) / (tp[i] as f32 + fn_[i] as f32 + eps);
        let fpr = |i: usize| fp[i] as f32 / (fp[i] as f32 + tn[i] as f32 + eps);
        let mut sum = 0.0f64;
        for i in 0..t - 1 {
            let term = (fpr(i) - fpr(i + 1)) * ((rec(i) + rec(i + 1)) / 2.0);
            sum += f64::from(term);
        }
        sum
    }

    /// Forget all examples.
    pub fn reset(&mut self) {
        self.pos.fill(0);
        self.neg.fill(0);
    }
}

/// Weighted streaming mean (`tf.compat.v1.metrics.mean`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MeanMetric {
    sum: f64,
    weight: f64,
}

impl MeanMetric {
    /// An empty mean.
    pub fn new() -> MeanMetric {
        MeanMetric::default()
    }

    /// Add `value` with `weight`.
    pub fn update(&mut self, value: f64, weight: f64) {
        self.sum += value * weight;
        self.weight += weight;
    }

    /// `sum(value * weight) / sum(weight)`, or 0 when the total weight is 0.
    pub fn value(&self) -> f64 {
        if self.weight == 0.0 {
            0.0
        } else {
            self.sum / self.weight
        }
    }

    /// Total weight so far.
    pub fn weight(&self) -> f64 {
        self.weight
    }

    /// Forget all values.
    pub fn reset(&mut self) {
        *self = MeanMetric::default();
    }
}
