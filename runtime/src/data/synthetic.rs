//! Synthetic source: seeded random columns `x0..x{features-1}` and `label`
//! (definitions in [`super::SyntheticSpec`]). Every value is computed by random
//! access into its splitmix64 stream, so a subset of columns needs no
//! materialization of the others. Values reach the inputs' column transforms
//! as numbers, a chunk of [`CHUNK_ROWS`] rows at a time.

use super::{Builder, CellRows, DataError, Dataset, Distribution, InputSpec, SyntheticSpec};
use crate::memory::{available_memory, human_bytes};
use crate::prng::{box_muller, u64_to_uniform01_f32, SplitMix64};

/// Rows per chunk handed to the transforms.
const CHUNK_ROWS: usize = 256;

/// The `file` of errors about synthetic data.
pub(super) const FILE: &str = "synthetic";

#[derive(Clone, Copy)]
enum Column {
    Feature(u64),
    Label,
}

pub(super) fn load(spec: &SyntheticSpec, inputs: &[InputSpec]) -> Result<Dataset, DataError> {
    if spec.rows == 0 {
        return Err(DataError::new(FILE, "rows must be at least 1"));
    }
    if spec.rows > u32::MAX as usize {
        return Err(DataError::new(
            FILE,
            format!("rows = {} is too large (at most {})", spec.rows, u32::MAX),
        ));
    }
    if spec.classes == Some(0) {
        return Err(DataError::new(FILE, "classes must be at least 1"));
    }
    let features = spec.features as u64;
    if (spec.rows as u64)
        .checked_mul(features)
        .and_then(|n| n.checked_mul(2))
        .is_none()
    {
        return Err(DataError::new(FILE, "rows * features is too large"));
    }

    let mut plan: Vec<Vec<Column>> = Vec::with_capacity(inputs.len());
    for inp in inputs {
        let mut cols = Vec::with_capacity(inp.columns.len());
        for name in &inp.columns {
            cols.push(resolve(name, spec.features).ok_or_else(|| {
                let scheme = match spec.features {
                    0 => "`label` (features = 0)".to_string(),
                    1 => "`x0` and `label`".to_string(),
                    f => format!("`x0` .. `x{}` and `label`", f - 1),
                };
                DataError::at(
                    FILE,
                    None,
                    Some(name),
                    format!("no such column; synthetic data has the columns {scheme}"),
                )
            })?);
        }
        plan.push(cols);
    }

    let mut builder = Builder::new(inputs);
    // All rows at once: refused, with both numbers, when they cannot fit.
    let bytes = builder.bytes_for(spec.rows);
    if let Some(have) = available_memory().filter(|&have| bytes > have) {
        return Err(DataError::new(
            FILE,
            format!(
                "{} rows take {} of memory, but the machine has {} available",
                spec.rows,
                human_bytes(bytes),
                human_bytes(have)
            ),
        ));
    }
    builder
        .reserve(spec.rows)
        .map_err(|e| DataError::new(FILE, e))?;
    let mut numbers: Vec<Vec<f64>> = vec![Vec::new(); inputs.len()];
    let total = spec.rows as u64;
    let mut r0 = 0u64;
    while r0 < total {
        let n = (total - r0).min(CHUNK_ROWS as u64);
        for (buf, cols) in numbers.iter_mut().zip(&plan) {
            buf.clear();
            for r in r0..r0 + n {
                buf.extend(cols.iter().map(|&col| value(spec, col, r)));
            }
        }
        builder
            .push(n as usize, |t| {
                CellRows::numbers(&numbers[t], plan[t].len())
            })
            .map_err(|(t, e)| {
                DataError::at(
                    FILE,
                    Some((r0 as usize) + e.row + 1),
                    Some(&inputs[t].columns[e.column]),
                    e.message,
                )
            })?;
        r0 += n;
    }
    let out = builder.finish(inputs).map_err(|(t, e)| {
        DataError::at(FILE, None, Some(&inputs[t].columns[e.column]), e.message)
    })?;
    Ok(Dataset {
        rows: spec.rows,
        inputs: out,
    })
}

/// `x{i}` (canonical decimal, i < features) or `label`.
fn resolve(name: &str, features: usize) -> Option<Column> {
    if name == "label" {
        return Some(Column::Label);
    }
    let digits = name.strip_prefix('x')?;
    let i: usize = digits.parse().ok()?;
    (i < features && i.to_string() == digits).then_some(Column::Feature(i as u64))
}

/// The raw value of `col` in row `r`.
#[inline]
fn value(spec: &SyntheticSpec, col: Column, r: u64) -> f64 {
    match col {
        Column::Feature(c) => {
            let i = r * spec.features as u64 + c;
            match spec.distribution {
                Distribution::Uniform => {
                    f64::from(u64_to_uniform01_f32(SplitMix64::output(spec.seed, i + 1)))
                }
                Distribution::Normal => normal_f32(spec.seed, i),
            }
        }
        Column::Label => match spec.classes {
            Some(c) => (SplitMix64::output(spec.label_seed, r + 1) % u64::from(c)) as f64,
            None => normal_f32(spec.label_seed, r),
        },
    }
}

/// `f32(n_i)` as f64, n_i the i-th (0-based) normal of stream `seed`.
#[inline]
fn normal_f32(seed: u64, i: u64) -> f64 {
    let z1 = SplitMix64::output(seed, 2 * i + 1);
    let z2 = SplitMix64::output(seed, 2 * i + 2);
    f64::from(box_muller(z1, z2) as f32)
}
