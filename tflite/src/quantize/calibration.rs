//! Calibration: the range of every float activation over representative
//! rows, run in specc's float interpreter (what full-integer quantization
//! chooses its activations' parameters from, [`super::asymmetric_params`]).
//!
//! Invariants: only a batch's first `rows` rows widen a range (a
//! fixed-batch model's padding rows are not calibrated on); non-finite
//! values are ignored.

use super::Result;
use crate::interpreter::{Interpreter, Value};
use crate::model::Model;

/// The range of every float tensor the model computes or reads as an input,
/// over the rows run so far.
pub struct Calibration {
    ranges: Vec<Option<(f32, f32)>>,
    rows: usize,
}

impl Calibration {
    pub fn new(model: &Model) -> Calibration {
        Calibration {
            ranges: vec![None; model.subgraphs.first().map_or(0, |g| g.tensors.len())],
            rows: 0,
        }
    }

    /// Runs `inputs` (in the subgraph's input order) through the float model
    /// and widens the ranges with the first `rows` rows of every tensor (a
    /// fixed-batch model's padding rows are not calibrated on).
    pub fn run(
        &mut self,
        interpreter: &Interpreter<'_>,
        inputs: Vec<Value>,
        rows: usize,
    ) -> Result<()> {
        let ranges = &mut self.ranges;
        interpreter.invoke_observed(inputs, &mut |t, v| {
            if let (Value::F32(a), Some(r)) = (v, ranges.get_mut(t)) {
                let a = a.as_standard_layout();
                let take = match a.shape().first() {
                    Some(&b) if b > rows => rows * (a.len() / b),
                    _ => a.len(),
                };
                for &x in a.iter().take(take).filter(|x| x.is_finite()) {
                    *r = Some(match *r {
                        None => (x, x),
                        Some((lo, hi)) => (lo.min(x), hi.max(x)),
                    });
                }
            }
        })?;
        self.rows += rows;
        Ok(())
    }

    /// Rows calibrated on.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The calibrated `[min, max]` of tensor `t`.
    pub fn range(&self, t: usize) -> Option<(f32, f32)> {
        self.ranges.get(t).copied().flatten()
    }
}
