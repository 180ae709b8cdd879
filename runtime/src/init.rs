//! Parameter initializers, with TensorFlow's names and semantics, driven by the
//! splitmix64 stream of [`crate::prng`].
//!
//! Every initializer fills a float32 buffer of a given shape, element i in
//! row-major order. The random ones draw from a fresh stream with state `seed`:
//!
//! - `RandomUniform { minval, maxval }`: `u_i` = `uniform01_f32` of output
//!   i+1; `w_i = u_i * (maxval - minval) + minval` in f32 arithmetic (TF's
//!   order of operations).
//! - `RandomNormal { mean, stddev }`: `n_i` = normal number i of the stream
//!   ([`SplitMix64::normal_f64`], one normal per two outputs, so element i uses
//!   outputs 2i+1 and 2i+2); `w_i = f32(n_i) * stddev + mean` in f32.
//! - `TruncatedNormal { mean, stddev }`: as `RandomNormal`, but a normal with
//!   `|n| > 2` is discarded and redrawn from the same stream (TF truncates at
//!   two standard deviations), so element positions in the stream are no longer
//!   fixed.
//! - `GlorotUniform`: exactly the benchmark's `glorot_uniform`:
//!   `limit = f32(sqrt(6 / (fan_in + fan_out)))` (computed in f64, rounded
//!   once), `u_i` = `uniform01_f32` of output i+1, `w_i = (2u_i - 1) * limit`
//!   in f32 arithmetic (the subtraction is exact; one rounding in the product).
//! - `GlorotNormal`: TF2's `VarianceScaling(scale = 1, mode = "fan_avg",
//!   distribution = "truncated_normal")`: `TruncatedNormal` with mean 0 and
//!   `stddev = f32(sqrt(1 / max(1, (fan_in + fan_out) / 2)) / 0.87962566103423978)`
//!   (the constant is the std of a standard normal truncated to [-2, 2]).
//! - `Zeros`, `Ones`, `Constant(v)`: `v` of length 1 is broadcast, a `v` of
//!   exactly `numel` values is copied in row-major order.
//!
//! Fans follow TF's `_compute_fans` ([`fans`]). An empty shape is a scalar
//! (numel 1); a shape with a zero dimension has numel 0 and nothing is drawn.
//! Errors (never panics): `out.len() != numel`, a constant of the wrong length,
//! non-finite parameters, a negative stddev.

use crate::prng::SplitMix64;

/// A parameter initializer (TF's names).
#[derive(Debug, Clone, PartialEq)]
pub enum Initializer {
    Zeros,
    Ones,
    /// Length 1 (broadcast to the whole shape) or exactly numel values.
    Constant(Vec<f32>),
    RandomUniform {
        minval: f32,
        maxval: f32,
        seed: u64,
    },
    RandomNormal {
        mean: f32,
        stddev: f32,
        seed: u64,
    },
    TruncatedNormal {
        mean: f32,
        stddev: f32,
        seed: u64,
    },
    GlorotUniform {
        seed: u64,
    },
    GlorotNormal {
        seed: u64,
    },
}

/// The standard deviation of a standard normal truncated to [-2, 2] (TF's
/// constant in `VarianceScaling`).
const TRUNCATED_NORMAL_STD: f64 = 0.879_625_661_034_239_8;

/// TF's `_compute_fans`: rank 0 → (1, 1); rank 1 → (n, n); rank 2 →
/// (s0, s1); rank r > 2 → receptive field `rf = prod(shape[..r-2])`,
/// `(s[r-2] * rf, s[r-1] * rf)`.
pub fn fans(shape: &[usize]) -> (f64, f64) {
    match shape.len() {
        0 => (1.0, 1.0),
        1 => (shape[0] as f64, shape[0] as f64),
        2 => (shape[0] as f64, shape[1] as f64),
        r => {
            let rf: f64 = shape[..r - 2].iter().map(|&d| d as f64).product();
            (shape[r - 2] as f64 * rf, shape[r - 1] as f64 * rf)
        }
    }
}

/// Number of elements of `shape` (1 for a scalar), or an error on overflow.
fn numel(shape: &[usize]) -> Result<usize, String> {
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| format!("shape {shape:?} has too many elements"))
}

fn check_finite(what: &str, v: f32) -> Result<(), String> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(format!("{what} must be finite, got {v}"))
    }
}

fn check_normal_params(mean: f32, stddev: f32) -> Result<(), String> {
    check_finite("mean", mean)?;
    check_finite("stddev", stddev)?;
    if stddev < 0.0 {
        return Err(format!("stddev must be >= 0, got {stddev}"));
    }
    Ok(())
}

/// Fill `out` (row-major, `shape`) with `init`. See the module doc for the
/// exact definition of every initializer.
pub fn initialize(init: &Initializer, shape: &[usize], out: &mut [f32]) -> Result<(), String> {
    let n = numel(shape)?;
    if out.len() != n {
        return Err(format!(
            "initializer output buffer has {} elements but shape {shape:?} has {n}",
            out.len()
        ));
    }
    match init {
        Initializer::Zeros => out.fill(0.0),
        Initializer::Ones => out.fill(1.0),
        Initializer::Constant(v) => {
            if v.len() == 1 {
                out.fill(v[0]);
            } else if v.len() == n {
                out.copy_from_slice(v);
            } else {
                return Err(format!(
                    "constant initializer has {} values but shape {shape:?} has {n} elements \
                     (give one value to broadcast, or exactly {n})",
                    v.len()
                ));
            }
        }
        // The random ones: their stream, drawn into place.
        _ if n == 0
            && matches!(
                init,
                Initializer::GlorotUniform { .. } | Initializer::GlorotNormal { .. }
            ) => {}
        _ => StreamInit::new(init, shape)?.fill(out),
    }
    Ok(())
}

/// Fills `out` with the rows of `init`'s values for a tensor of `shape`
/// that `rows` lists (`(first logical row, rows)` ranges, in order, placed
/// back to back): what [`initialize`] would put there, without holding the
/// whole tensor. A random initializer's stream is drawn through (its
/// draws are sequential), so a replica holding part of a table gets that
/// part of the one-process table, bit for bit. `out` past the ranges is
/// left as it is.
pub fn initialize_rows(
    init: &Initializer,
    shape: &[usize],
    rows: &[(usize, usize)],
    out: &mut [f32],
) -> Result<(), String> {
    let n = numel(shape)?;
    let first = shape.first().copied().unwrap_or(1);
    let row_len = n.checked_div(first).unwrap_or(0);
    let wanted: usize = rows.iter().map(|&(_, r)| r * row_len).sum();
    if out.len() < wanted || rows.iter().any(|&(s, r)| s + r > first) {
        return Err(format!(
            "rows {rows:?} of shape {shape:?} do not fit {} elements",
            out.len()
        ));
    }
    let draws_stream = !matches!(
        init,
        Initializer::Zeros | Initializer::Ones | Initializer::Constant(_)
    );
    if !draws_stream {
        let mut at = 0;
        for &(start, count) in rows {
            let len = count * row_len;
            match init {
                Initializer::Zeros => out[at..at + len].fill(0.0),
                Initializer::Ones => out[at..at + len].fill(1.0),
                Initializer::Constant(v) if v.len() == 1 => out[at..at + len].fill(v[0]),
                Initializer::Constant(v) if v.len() == n => {
                    out[at..at + len].copy_from_slice(&v[start * row_len..start * row_len + len])
                }
                _ => {
                    // The wrong length: initialize's own error.
                    initialize(init, shape, &mut vec![0.0; n])?;
                }
            }
            at += len;
        }
        return Ok(());
    }
    // The stream in order: the rows before each range drawn and dropped,
    // the range's drawn into place.
    let mut gen = StreamInit::new(init, shape)?;
    let (mut at, mut row) = (0, 0);
    for &(start, count) in rows {
        if start < row {
            return Err(format!("rows {rows:?} are not in order"));
        }
        gen.advance((start - row) * row_len);
        let len = count * row_len;
        gen.fill(&mut out[at..at + len]);
        at += len;
        row = start + count;
    }
    Ok(())
}

/// A random initializer's stream, drawn in order across calls.
struct StreamInit {
    kind: StreamKind,
    s: SplitMix64,
}

enum StreamKind {
    Uniform { scale: f32, offset: f32 },
    Normal { mean: f32, stddev: f32 },
    Truncated { mean: f32, stddev: f32 },
    Glorot { limit: f32 },
}

impl StreamInit {
    fn new(init: &Initializer, shape: &[usize]) -> Result<StreamInit, String> {
        let (kind, seed) = match *init {
            Initializer::RandomUniform {
                minval,
                maxval,
                seed,
            } => {
                check_finite("minval", minval)?;
                check_finite("maxval", maxval)?;
                let scale = maxval - minval;
                if !scale.is_finite() {
                    return Err(format!(
                        "maxval - minval overflows float32 (minval {minval}, maxval {maxval})"
                    ));
                }
                (
                    StreamKind::Uniform {
                        scale,
                        offset: minval,
                    },
                    seed,
                )
            }
            Initializer::RandomNormal { mean, stddev, seed } => {
                check_normal_params(mean, stddev)?;
                (StreamKind::Normal { mean, stddev }, seed)
            }
            Initializer::TruncatedNormal { mean, stddev, seed } => {
                check_normal_params(mean, stddev)?;
                (StreamKind::Truncated { mean, stddev }, seed)
            }
            Initializer::GlorotUniform { seed } => {
                let (fan_in, fan_out) = fans(shape);
                let limit = (6.0 / (fan_in + fan_out)).sqrt() as f32;
                (StreamKind::Glorot { limit }, seed)
            }
            Initializer::GlorotNormal { seed } => {
                let (fan_in, fan_out) = fans(shape);
                let scale = 1.0 / f64::max(1.0, (fan_in + fan_out) / 2.0);
                let stddev = (scale.sqrt() / TRUNCATED_NORMAL_STD) as f32;
                (StreamKind::Truncated { mean: 0.0, stddev }, seed)
            }
            Initializer::Zeros | Initializer::Ones | Initializer::Constant(_) => {
                return Err("not a random initializer".into())
            }
        };
        Ok(StreamInit {
            kind,
            s: SplitMix64::new(seed),
        })
    }

    /// Draws and drops the stream's next `values` values (skipped where
    /// each takes a fixed number of outputs).
    fn advance(&mut self, values: usize) {
        match self.kind {
            StreamKind::Uniform { .. } | StreamKind::Glorot { .. } => self.s.skip(values as u64),
            StreamKind::Normal { .. } => self.s.skip(2 * values as u64),
            StreamKind::Truncated { .. } => {
                let mut scratch = [0.0f32; 1024];
                let mut left = values;
                while left > 0 {
                    let take = left.min(scratch.len());
                    self.fill(&mut scratch[..take]);
                    left -= take;
                }
            }
        }
    }

    /// The stream's next `out.len()` values, as `initialize` computes them.
    fn fill(&mut self, out: &mut [f32]) {
        let s = &mut self.s;
        match self.kind {
            StreamKind::Uniform { scale, offset } => {
                for w in out {
                    *w = s.uniform01_f32() * scale + offset;
                }
            }
            StreamKind::Normal { mean, stddev } => {
                for w in out {
                    *w = s.normal_f64() as f32 * stddev + mean;
                }
            }
            StreamKind::Truncated { mean, stddev } => {
                for w in out {
                    let n = loop {
                        let n = s.normal_f64();
                        if n.abs() <= 2.0 {
                            break n;
                        }
                    };
                    *w = n as f32 * stddev + mean;
                }
            }
            StreamKind::Glorot { limit } => {
                for w in out {
                    *w = (2.0f32 * s.uniform01_f32() - 1.0f32) * limit;
                }
            }
        }
    }
}

#[cfg(test)]
mod rows_tests {
    use super::*;

    #[test]
    fn rows_are_the_whole_tensors_rows() {
        let inits = [
            Initializer::Zeros,
            Initializer::Constant(vec![0.5]),
            Initializer::Constant((0..30).map(|i| i as f32).collect()),
            Initializer::RandomUniform {
                minval: -1.0,
                maxval: 2.0,
                seed: 7,
            },
            Initializer::RandomNormal {
                mean: 0.5,
                stddev: 2.0,
                seed: 8,
            },
            Initializer::TruncatedNormal {
                mean: 0.0,
                stddev: 1.0,
                seed: 9,
            },
            Initializer::GlorotUniform { seed: 10 },
            Initializer::GlorotNormal { seed: 11 },
        ];
        let shape = [10, 3];
        for init in &inits {
            let mut whole = vec![0.0; 30];
            initialize(init, &shape, &mut whole).unwrap();
            let ranges = [(1, 2), (6, 3), (9, 1)];
            let mut part = vec![f32::NAN; 18 + 3];
            initialize_rows(init, &shape, &ranges, &mut part).unwrap();
            let want: Vec<f32> = ranges
                .iter()
                .flat_map(|&(s, n)| whole[s * 3..(s + n) * 3].to_vec())
                .collect();
            assert_eq!(part[..18], want[..], "{init:?}");
            assert!(part[18..].iter().all(|v| v.is_nan()), "{init:?}");
        }
    }
}
