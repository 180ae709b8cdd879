//! `partitioner = ...`: TF's variable partitioners, and the partitions they
//! give a variable (TF's `get_variable(.., partitioner)`).
//!
//! Owns: the two partitioners, `fixed_size_partitioner(num_shards)` and
//! `min_max_variable_partitioner(max_partitions = 1, min_slice_size =
//! 262144)` (TF's `tf.compat.v1` names, arguments and defaults; axis 0
//! only), their checking into a [`Partitioner`] (`bad-partitioner`), and
//! the rows each partition gets: TF's partitioner functions, then
//! `_iter_slices` (the first `rows % n` partitions one row longer).
//!
//! Invariants: the partitions are along the first axis, in order, each at
//! least one row, summing to the first dimension; a variable of one
//! partition gets none (`VarInfo::partitions` empty: TF saves a single
//! full slice as an ordinary entry); a scalar cannot be partitioned. The
//! partitions change only how checkpoints store the variable, never its
//! values or the training step.

use specc_grammar::ast::{Expr, ExprKind, Span};
use specc_grammar::{Code, Diagnostic};

use super::args::{self, opt, req};
use super::expr::R;

/// TF's `min_max_variable_partitioner` default `min_slice_size`: 256 KiB.
pub const MIN_SLICE_SIZE: u64 = 256 << 10;

/// The bytes of a float32, TF's `dtype.size` for the variables specc makes.
pub const FLOAT32_BYTES: u64 = 4;

/// The partitioners, by TF name.
pub const PARTITIONERS: &[&str] = &["fixed_size_partitioner", "min_max_variable_partitioner"];

/// A checked `partitioner = ...` argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Partitioner {
    /// `fixed_size_partitioner(num_shards)`: `min(num_shards, rows)`
    /// partitions.
    FixedSize { num_shards: u64 },
    /// `min_max_variable_partitioner(max_partitions, min_slice_size)`: as
    /// many partitions as slices of at least `min_slice_size` bytes, at
    /// most `max_partitions` and the rows.
    MinMax {
        max_partitions: u64,
        min_slice_size: u64,
    },
}

fn bad(span: Span, message: String, label: &str) -> Diagnostic {
    Diagnostic::new(Code::BadPartitioner, span, message).with_label(label)
}

/// A positive integer argument `what` of a partitioner.
fn positive(e: &Expr, what: &str) -> R<u64> {
    let v = args::eval_int(e)?;
    if v < 1 {
        return Err(bad(
            e.span,
            format!("{what} must be at least 1, got {v}"),
            "not positive",
        ));
    }
    Ok(v as u64)
}

impl Partitioner {
    /// Checks a `partitioner = ...` value: a call of one of
    /// [`PARTITIONERS`].
    pub fn parse(e: &Expr) -> R<Partitioner> {
        let ExprKind::Call(c) = &e.kind else {
            return Err(bad(
                e.span,
                format!("expected a partitioner, found {}", args::describe(e)),
                "not a partitioner",
            )
            .with_help("write fixed_size_partitioner(num_shards) or min_max_variable_partitioner(max_partitions)"));
        };
        match c.func.name.as_str() {
            "fixed_size_partitioner" => {
                let b = args::bind("fixed_size_partitioner", c, &[req("num_shards")])?;
                Ok(Partitioner::FixedSize {
                    num_shards: positive(b.req(0), "num_shards")?,
                })
            }
            "min_max_variable_partitioner" => {
                let b = args::bind(
                    "min_max_variable_partitioner",
                    c,
                    &[opt("max_partitions"), opt("min_slice_size")],
                )?;
                let max_partitions = match b.get(0) {
                    Some(e) => positive(e, "max_partitions")?,
                    None => 1,
                };
                let min_slice_size = match b.get(1) {
                    Some(e) => positive(e, "min_slice_size")?,
                    None => MIN_SLICE_SIZE,
                };
                Ok(Partitioner::MinMax {
                    max_partitions,
                    min_slice_size,
                })
            }
            other => {
                let mut d = bad(
                    c.func.span,
                    format!("unknown partitioner `{other}`"),
                    "not a partitioner",
                );
                if let Some(s) = args::suggest(other, PARTITIONERS.iter().copied()) {
                    d = d.with_help(format!("did you mean `{s}`?"));
                }
                Err(d.with_help(
                    "TF's partitioners: fixed_size_partitioner, min_max_variable_partitioner",
                ))
            }
        }
    }

    /// The number of partitions for a variable of shape `dims` whose
    /// elements have `dtype_bytes` bytes (TF's partitioner functions).
    pub fn count(&self, dims: &[u64], dtype_bytes: u64) -> u64 {
        let rows = dims.first().copied().unwrap_or(1);
        match *self {
            Partitioner::FixedSize { num_shards } => num_shards.min(rows),
            Partitioner::MinMax {
                max_partitions,
                min_slice_size,
            } => {
                // Python: total_size_bytes / min_slice_size, a float, ceiled.
                let total = dims.iter().product::<u64>() * dtype_bytes;
                let wanted = (total as f64 / min_slice_size as f64).ceil() as u64;
                rows.min(max_partitions).min(wanted).max(1)
            }
        }
    }

    /// The partitions' rows for a variable of shape `dims` (`span`: the
    /// partitioner, for the error on a scalar); empty for one partition.
    pub fn partitions(&self, dims: &[u64], dtype_bytes: u64, span: Span) -> R<Vec<u64>> {
        if dims.is_empty() {
            return Err(bad(
                span,
                "a scalar cannot be partitioned: a partitioner splits the first axis".to_string(),
                "on a scalar",
            ));
        }
        Ok(split_rows(dims[0], self.count(dims, dtype_bytes)))
    }
}

/// `rows` split into `n` partitions as TF's `_iter_slices` does: the first
/// `rows % n` one row longer; empty when `n` is 1 (or 0).
pub fn split_rows(rows: u64, n: u64) -> Vec<u64> {
    if n <= 1 {
        return Vec::new();
    }
    let (base, extra) = (rows / n, rows % n);
    (0..n).map(|i| base + u64::from(i < extra)).collect()
}

/// The `partitioner` argument of a call (absent or `none`: not
/// partitioned), checked.
pub fn argument(e: Option<&Expr>) -> R<Option<Partitioner>> {
    e.filter(|e| !args::is_none(e))
        .map(Partitioner::parse)
        .transpose()
}

/// The partitions `p` gives a float32 variable of fixed shape `dims` (not
/// a scalar: the layers' tables and weights); none without a partitioner.
pub fn of_float32(p: Option<Partitioner>, dims: &[u32]) -> Vec<u64> {
    let dims: Vec<u64> = dims.iter().map(|&d| u64::from(d)).collect();
    match (p, dims.first()) {
        (Some(p), Some(&rows)) => split_rows(rows, p.count(&dims, FLOAT32_BYTES)),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_size_gives_the_first_partitions_the_extra_rows() {
        let p = Partitioner::FixedSize { num_shards: 3 };
        assert_eq!(
            p.partitions(&[7, 3], 4, Span::default()).unwrap(),
            [3, 2, 2]
        );
        assert_eq!(p.partitions(&[2, 3], 4, Span::default()).unwrap(), [1, 1]);
        assert!(p
            .partitions(&[1, 3], 4, Span::default())
            .unwrap()
            .is_empty());
        assert!(p.partitions(&[], 4, Span::default()).is_err());
    }

    #[test]
    fn min_max_counts_slices_of_the_minimum_size() {
        // 1000 x 64 float32 = 256000 bytes; slices of 65536: ceil(3.9) = 4.
        let p = Partitioner::MinMax {
            max_partitions: 8,
            min_slice_size: 65536,
        };
        assert_eq!(p.count(&[1000, 64], 4), 4);
        assert_eq!(
            p.partitions(&[1000, 64], 4, Span::default()).unwrap(),
            [250; 4]
        );
        // Capped by max_partitions, by the rows; at least one.
        let cap = Partitioner::MinMax {
            max_partitions: 2,
            min_slice_size: 1,
        };
        assert_eq!(cap.count(&[1000, 64], 4), 2);
        assert_eq!(cap.count(&[1, 64], 4), 1);
        let default = Partitioner::MinMax {
            max_partitions: 100,
            min_slice_size: MIN_SLICE_SIZE,
        };
        assert_eq!(default.count(&[10, 10], 4), 1);
        // 300000 x 1 float32 = 1.2e6 bytes / 262144 = 4.58: 5.
        assert_eq!(default.count(&[300000, 1], 4), 5);
    }
}
