//! A checkpoint's matrix remapped from an old vocabulary to a new one: TF's
//! `checkpoint_ops` as `warm_start` uses them for a variable with a
//! `VocabInfo`.
//!
//! Owns: [`read_vocab`] (a vocabulary file as TF's `TextFileInitializer`
//! reads it with `WHOLE_LINE`: one entry a line, without its `\n` or
//! `\r\n`; only the first `size` lines when a size is given, and fewer
//! lines than that is an error), [`generate_vocab_remapping`] (TF's
//! `GenerateVocabRemapping`: each new entry's line in the old vocabulary,
//! or none; a repeated old entry is an error, as TF's hash table refuses
//! it) and [`remap_matrix`] (TF's `_load_and_remap_matrix`: along the
//! vocabulary's axis, an entry found in the old vocabulary takes the old
//! row (axis 0) or column (axis 1); the other entries take the backup
//! initializer's values drawn as one `[missing, 1]` tensor and laid out in
//! row-major order of the missing positions; then the OOV buckets, one
//! more draw of `[num_oov_buckets, cols]` (axis 0) or `[rows,
//! num_oov_buckets]` (axis 1)).
//!
//! Invariants: the variable is `[new_vocab_size + num_oov_buckets, cols]`
//! (axis 0) or `[rows, new_vocab_size + num_oov_buckets]` (axis 1), the old
//! tensor has the variable's columns (axis 0) or at least its rows (axis
//! 1), and every remapped index is inside the old tensor; otherwise an
//! error saying which sizes disagree. Never panics.

use std::path::Path;

use crate::init::{initialize, Initializer};

/// The entries of the vocabulary file `path`, one a line; with `size`, the
/// first `size` (the file must have that many). `what` names the file's
/// role in messages (`new_vocab of `emb``).
pub fn read_vocab(path: &Path, size: Option<u64>, what: &str) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{what} {}: cannot read it: {e}", path.display()))?;
    let mut lines: Vec<String> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l).to_string())
        .collect();
    if text.ends_with('\n') || text.is_empty() {
        lines.pop();
    }
    if let Some(n) = size {
        if (lines.len() as u64) < n {
            return Err(format!(
                "{what} {}: the file has {} line{}, but the vocabulary's size is {n}",
                path.display(),
                lines.len(),
                if lines.len() == 1 { "" } else { "s" }
            ));
        }
        lines.truncate(n as usize);
    }
    Ok(lines)
}

/// For each entry of `new`, its position in `old` (or `None`), and how many
/// were found. A repeated entry of `old` is an error naming it.
pub fn generate_vocab_remapping(
    new: &[String],
    old: &[String],
) -> Result<(Vec<Option<usize>>, usize), String> {
    let mut index = std::collections::HashMap::with_capacity(old.len());
    for (i, entry) in old.iter().enumerate() {
        if let Some(first) = index.insert(entry.as_str(), i) {
            return Err(format!(
                "the old vocabulary has `{entry}` twice (lines {} and {})",
                first + 1,
                i + 1
            ));
        }
    }
    let remapping: Vec<Option<usize>> =
        new.iter().map(|e| index.get(e.as_str()).copied()).collect();
    let present = remapping.iter().filter(|r| r.is_some()).count();
    Ok((remapping, present))
}

/// The new value of a `shape` variable from the checkpoint's `old` matrix
/// (`old_shape`): along `axis`, entry `i` of the new vocabulary takes the
/// old entry `remapping[i]`, or the backup initializer's value; then
/// `num_oov_buckets` newly initialized entries (module doc). `backup` of
/// `None` is zeros.
pub fn remap_matrix(
    old: &[f32],
    old_shape: [usize; 2],
    shape: [usize; 2],
    axis: usize,
    remapping: &[Option<usize>],
    num_oov_buckets: usize,
    backup: Option<&Initializer>,
) -> Result<Vec<f32>, String> {
    let zeros = Initializer::Zeros;
    let init = backup.unwrap_or(&zeros);
    let draw = |dims: [usize; 2]| -> Result<Vec<f32>, String> {
        let mut v = vec![0f32; dims[0] * dims[1]];
        initialize(init, &dims, &mut v).map_err(|e| format!("backup_initializer: {e}"))?;
        Ok(v)
    };
    if old.len() != old_shape[0] * old_shape[1] {
        return Err(format!(
            "the old tensor has {} values, not {} × {}",
            old.len(),
            old_shape[0],
            old_shape[1]
        ));
    }
    let vocab = remapping.len();
    let along = shape.get(axis).copied().ok_or("axis must be 0 or 1")?;
    if along != vocab + num_oov_buckets {
        return Err(format!(
            "the variable is [{}, {}], but along axis {axis} new_vocab_size {vocab} + num_oov_buckets {num_oov_buckets} = {}",
            shape[0],
            shape[1],
            vocab + num_oov_buckets
        ));
    }
    let present = remapping.iter().filter(|r| r.is_some()).count();
    let (rows, cols) = (shape[0], shape[1]);
    // The part loaded from the checkpoint: (rows, cols) without OOV buckets.
    let (load_rows, load_cols) = if axis == 0 {
        (vocab, cols)
    } else {
        (rows, vocab)
    };
    if axis == 0 && old_shape[1] != cols {
        return Err(format!(
            "the checkpoint's tensor has {} columns, the variable {cols} (axis 0 remaps rows; the columns must agree)",
            old_shape[1]
        ));
    }
    if axis == 1 && old_shape[0] < rows {
        return Err(format!(
            "the checkpoint's tensor has {} rows, fewer than the variable's {rows} (axis 1 remaps columns; rows are kept)",
            old_shape[0]
        ));
    }
    let limit = old_shape[axis];
    if let Some(i) = remapping.iter().flatten().find(|&&i| i >= limit) {
        return Err(format!(
            "old vocabulary entry {} (line {}) has no {} in the checkpoint's tensor, which has {limit}",
            i,
            i + 1,
            if axis == 0 { "row" } else { "column" }
        ));
    }
    let missing = if axis == 0 {
        (vocab - present) * cols
    } else {
        rows * (vocab - present)
    };
    let fill = draw([missing, 1])?;
    let mut next = fill.iter();
    let mut out = vec![0f32; rows * cols];
    for r in 0..load_rows {
        for c in 0..load_cols {
            let source = if axis == 0 {
                remapping[r].map(|o| o * old_shape[1] + c)
            } else {
                remapping[c].map(|o| r * old_shape[1] + o)
            };
            out[r * cols + c] = match source {
                Some(i) => old[i],
                None => *next
                    .next()
                    .ok_or("fewer initial values than missing entries")?,
            };
        }
    }
    if num_oov_buckets > 0 {
        if axis == 0 {
            let oov = draw([num_oov_buckets, cols])?;
            out[vocab * cols..].copy_from_slice(&oov);
        } else {
            let oov = draw([rows, num_oov_buckets])?;
            for r in 0..rows {
                out[r * cols + vocab..(r + 1) * cols]
                    .copy_from_slice(&oov[r * num_oov_buckets..(r + 1) * num_oov_buckets]);
            }
        }
    }
    Ok(out)
}
