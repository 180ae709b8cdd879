//! The batch-source boundary: what fills the step's input buffers.
//!
//! Owns: [`BatchSource`] (fills the next batch into the session's input
//! buffers and says how many rows it filled, or that it is exhausted),
//! [`BatchBuffers`] (those buffers, by model input, f32 or i32, room for
//! `max_batch` rows), [`Binding`] (which input of an in-memory [`Dataset`]
//! feeds each model input, checked once), and the in-memory sources:
//! [`ShuffledBatches`] (endless training batches in the [`BatchOrder`], every
//! batch full) and [`SequentialBatches`] (one pass over given rows in order,
//! the last batch short: evaluation).
//!
//! A streaming reader (CSV chunks, TFRecord) is another implementation: it
//! runs its column transforms straight into [`BatchBuffers`].
//!
//! Invariants:
//! - A source fills the first `rows * per_example` elements of every model
//!   input's buffer, `1 <= rows <= max_batch`, or returns 0 (exhausted) and
//!   fills nothing; [`Session::fill`](crate::session::Session::fill) refuses a
//!   larger count.
//! - A source's errors are [`DataError`]s (file, row, column), never panics.
//! - The in-memory sources allocate nothing per batch, and their bound data
//!   is valid for the model: widths and types match, every row id is in the
//!   data, and every int32 id is in the model's range (`0..num_classes`).

use crate::abi::{ElemType, InputLayout, Layout};
use crate::batches::{self, BatchOrder};
use crate::data::{DataError, Dataset, Values, ValuesMut};
use crate::feature_column::PADDING_ID;
use crate::memory::AlignedBuf;

/// The file named in errors about in-memory data.
pub const IN_MEMORY: &str = "in-memory data";

/// Produces batches for a compiled function's inputs.
pub trait BatchSource {
    /// Fills the next batch into `buffers`; returns the number of rows filled
    /// (`1..=buffers.max_batch()`), or 0 when the source is exhausted.
    fn next_batch(&mut self, buffers: &mut BatchBuffers<'_>) -> Result<usize, DataError>;

    /// The source's position, as integers a checkpoint keeps (TF keeps a
    /// `tf.data` iterator's state the same way), so a resumed run reads the
    /// same batches as one that never stopped; `None` if the source cannot
    /// say (then a resumed run starts the source over).
    fn position(&self) -> Option<Vec<i64>> {
        None
    }

    /// Moves the source to a position [`position`](Self::position) returned.
    fn seek(&mut self, position: &[i64]) -> Result<(), String> {
        let _ = position;
        Err("this batch source cannot move to a saved position".into())
    }
}

/// The input buffers of a session, by model input (the layout's order), each
/// with room for `max_batch` rows.
pub struct BatchBuffers<'a> {
    pub(crate) layout: &'a [InputLayout],
    pub(crate) buffers: &'a mut [AlignedBuf],
    pub(crate) max_batch: usize,
}

impl<'a> BatchBuffers<'a> {
    /// Buffers outside a session (tests, embedding): `buffers[i]` holds
    /// `max_batch * layout[i].per_example` elements of input `i`.
    pub fn new(
        layout: &'a [InputLayout],
        buffers: &'a mut [AlignedBuf],
        max_batch: usize,
    ) -> Result<BatchBuffers<'a>, String> {
        if layout.len() != buffers.len() {
            return Err("one buffer per input is needed".into());
        }
        for (l, b) in layout.iter().zip(buffers.iter()) {
            let need = max_batch.saturating_mul(l.per_example);
            let have = match l.elem {
                ElemType::F32 => b.f32s().len(),
                ElemType::I32 => b.i32s().len(),
            };
            if have < need {
                return Err(format!(
                    "the buffer of input `{}` holds {have} elements, fewer than {need}",
                    l.name
                ));
            }
        }
        Ok(BatchBuffers {
            layout,
            buffers,
            max_batch,
        })
    }

    /// The most rows a batch may have.
    pub fn max_batch(&self) -> usize {
        self.max_batch
    }

    /// The model's inputs (name, element type, elements per example).
    pub fn inputs(&self) -> &[InputLayout] {
        self.layout
    }

    /// The buffer of model input `i`: `max_batch * per_example` elements.
    ///
    /// # Panics
    /// If `i` is not an input index.
    pub fn input_mut(&mut self, i: usize) -> ValuesMut<'_> {
        let n = self.max_batch * self.layout[i].per_example;
        match self.layout[i].elem {
            ElemType::F32 => ValuesMut::F32(&mut self.buffers[i].f32s_mut()[..n]),
            ElemType::I32 => ValuesMut::I32(&mut self.buffers[i].i32s_mut()[..n]),
        }
    }
}

/// Which dataset input feeds each model input, checked against the model:
/// the same name, width and element type, and ids in the model's range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    /// `map[i]`: the dataset input of model input `i`.
    map: Vec<usize>,
    /// Rows of the bound data set.
    rows: usize,
}

impl Binding {
    /// Matches the model's inputs to the dataset's by name and checks them.
    pub fn new(data: &Dataset, inputs: &[InputLayout]) -> Result<Binding, String> {
        let map = inputs
            .iter()
            .map(|i| {
                let k = data
                    .inputs
                    .iter()
                    .position(|d| d.name == i.name)
                    .ok_or_else(|| format!("the data has no input `{}`", i.name))?;
                let d = &data.inputs[k];
                let ok = d.width == i.per_example
                    && d.values.len() == data.rows * d.width
                    && matches!(
                        (&d.values, i.elem),
                        (Values::F32(_), ElemType::F32) | (Values::I32(_), ElemType::I32)
                    );
                if !ok {
                    return Err(format!(
                        "input `{}` does not match the model's shape or type",
                        i.name
                    ));
                }
                if let Values::I32(ids) = &d.values {
                    check_ids(&i.name, ids, d.width, i.num_classes, i.padding)?;
                }
                Ok(k)
            })
            .collect::<Result<_, String>>()?;
        Ok(Binding {
            map,
            rows: data.rows,
        })
    }

    /// Copies rows `rows` of `data` (the dataset this binding was made for)
    /// into the first `rows.len()` rows of the buffers.
    pub fn gather(
        &self,
        data: &Dataset,
        rows: &[u32],
        buffers: &mut BatchBuffers<'_>,
    ) -> Result<(), String> {
        fits(rows.len(), buffers.max_batch)?;
        if data.rows != self.rows || self.map.len() != buffers.layout.len() {
            return Err("the data is not the data set this binding was made for".into());
        }
        check_rows(data, rows)?;
        self.gather_unchecked(data, rows, buffers);
        Ok(())
    }

    /// [`gather`](Self::gather) for rows known to be valid (from a
    /// [`BatchOrder`] over checked rows) and a batch known to fit.
    fn gather_unchecked(&self, data: &Dataset, rows: &[u32], buffers: &mut BatchBuffers<'_>) {
        for (i, &k) in self.map.iter().enumerate() {
            let d = &data.inputs[k];
            let n = rows.len() * d.width;
            match (&d.values, buffers.input_mut(i)) {
                (Values::F32(v), ValuesMut::F32(dst)) => {
                    batches::gather_f32(v, d.width, rows, &mut dst[..n])
                }
                (Values::I32(v), ValuesMut::I32(dst)) => {
                    batches::gather_i32(v, d.width, rows, &mut dst[..n])
                }
                // `new` checked the types.
                _ => {}
            }
        }
    }
}

/// The model's id rule: every id in `0..num_classes` (or `>= 0`), or the
/// padding id -1 when the input is a feature column's ids (`padding`).
fn check_ids(
    name: &str,
    ids: &[i32],
    width: usize,
    num_classes: Option<u32>,
    padding: bool,
) -> Result<(), String> {
    let bad = |&id: &i32| {
        if id < 0 {
            !(padding && id == PADDING_ID)
        } else {
            num_classes.is_some_and(|c| id as u32 >= c)
        }
    };
    let Some(k) = ids.iter().position(bad) else {
        return Ok(());
    };
    let id = ids[k];
    let row = k / width.max(1) + 1;
    Err(match num_classes {
        Some(c) if id >= 0 => {
            format!("input `{name}`, row {row}: id {id} is out of range: expected 0 <= id < {c}")
        }
        _ => format!("input `{name}`, row {row}: an id must be a non-negative integer, got {id}"),
    })
}

/// Checks that a batch of `rows` rows fits buffers of `max_batch` rows.
fn fits(rows: usize, max_batch: usize) -> Result<(), String> {
    if rows > max_batch {
        return Err(format!(
            "a batch of {rows} rows is larger than the compiled maximum {max_batch}"
        ));
    }
    Ok(())
}

/// Checks a source's batch size: at least 1, and it [`fits`].
fn check_batch_size(batch: usize, max_batch: usize) -> Result<(), String> {
    if batch == 0 {
        return Err("the batch size must be at least 1".into());
    }
    fits(batch, max_batch)
}

/// Checks that every row id is a row of the data.
fn check_rows(data: &Dataset, rows: &[u32]) -> Result<(), String> {
    if let Some(&r) = rows.iter().find(|&&r| r as usize >= data.rows) {
        return Err(format!(
            "row {r} is out of range: the data has {} rows",
            data.rows
        ));
    }
    Ok(())
}

/// Endless training batches from an in-memory dataset: `rows` (indices into
/// the data) in the [`BatchOrder`] (bench Fisher–Yates epochs or a tf.data
/// shuffle buffer), `batch` rows every batch, batches straddling epochs (TF's
/// `shuffle().repeat().batch(drop_remainder = True)`). Never exhausted.
#[derive(Debug)]
pub struct ShuffledBatches<'d> {
    data: &'d Dataset,
    binding: Binding,
    order: BatchOrder,
    rows: Vec<u32>,
    idx: Vec<u32>,
    batch_rows: Vec<u32>,
    /// A replica's slice of every batch (`start..end` of its rows), in a
    /// data-parallel run; the whole batch otherwise.
    shard: std::ops::Range<usize>,
}

impl<'d> ShuffledBatches<'d> {
    /// Batches of `batch` rows drawn from `rows` of `data` for a model with
    /// `layout`; `shuffle` and `seed` as [`BatchOrder::new`].
    pub fn new(
        data: &'d Dataset,
        layout: &Layout,
        rows: Vec<u32>,
        batch: usize,
        shuffle: usize,
        seed: u64,
    ) -> Result<ShuffledBatches<'d>, String> {
        if rows.is_empty() {
            return Err("no training rows".into());
        }
        check_batch_size(batch, layout.max_batch)?;
        if rows.len() > u32::MAX as usize {
            return Err(format!("more than {} rows", u32::MAX));
        }
        check_rows(data, &rows)?;
        let binding = Binding::new(data, &layout.inputs)?;
        Ok(ShuffledBatches {
            data,
            binding,
            order: BatchOrder::new(rows.len(), shuffle, seed),
            rows,
            idx: vec![0; batch],
            batch_rows: vec![0; batch],
            shard: 0..batch,
        })
    }

    /// Replica `rank`'s share of the same batches, for a data-parallel run of
    /// `replicas` replicas: every replica draws the global batch order and
    /// keeps its contiguous slice ([`crate::train::replicas::shard_rows`]), so
    /// the replicas' rows together are the batch one process would train on.
    pub fn shard(mut self, rank: usize, replicas: usize) -> ShuffledBatches<'d> {
        use crate::train::replicas::{shard_rows, shard_start};
        let batch = self.batch_rows.len();
        let start = shard_start(batch, replicas, rank);
        self.shard = start..start + shard_rows(batch, replicas)[rank];
        self
    }

    /// Epochs that have contributed at least one row so far.
    pub fn epochs_started(&self) -> usize {
        self.order.epochs_started()
    }

    /// The rows (indices into the data) of the last batch.
    pub fn last_batch_rows(&self) -> &[u32] {
        &self.batch_rows[self.shard.clone()]
    }
}

impl BatchSource for ShuffledBatches<'_> {
    fn next_batch(&mut self, buffers: &mut BatchBuffers<'_>) -> Result<usize, DataError> {
        fits(self.batch_rows.len(), buffers.max_batch).map_err(|m| DataError::new(IN_MEMORY, m))?;
        self.order.next_batch(&mut self.idx);
        for (r, &i) in self.batch_rows.iter_mut().zip(&self.idx) {
            *r = self.rows[i as usize];
        }
        let rows = &self.batch_rows[self.shard.clone()];
        self.binding.gather_unchecked(self.data, rows, buffers);
        Ok(rows.len())
    }

    fn position(&self) -> Option<Vec<i64>> {
        Some(self.order.state())
    }

    fn seek(&mut self, position: &[i64]) -> Result<(), String> {
        self.order.restore(position)
    }
}

/// One pass over `rows` of an in-memory dataset, in the given order, in
/// batches of `batch` rows; the last batch may be short (the batch size is a
/// runtime loop bound, so no recompile).
#[derive(Debug)]
pub struct SequentialBatches<'d> {
    data: &'d Dataset,
    binding: Binding,
    rows: &'d [u32],
    batch: usize,
    pos: usize,
}

impl<'d> SequentialBatches<'d> {
    /// `rows` of `data` for a model with `layout`, `batch` rows at a time
    /// (at most the compiled maximum).
    pub fn new(
        data: &'d Dataset,
        layout: &Layout,
        rows: &'d [u32],
        batch: usize,
    ) -> Result<SequentialBatches<'d>, String> {
        check_batch_size(batch, layout.max_batch)?;
        check_rows(data, rows)?;
        Ok(SequentialBatches {
            data,
            binding: Binding::new(data, &layout.inputs)?,
            rows,
            batch,
            pos: 0,
        })
    }

    /// Starts the pass again from the first row.
    pub fn rewind(&mut self) {
        self.pos = 0;
    }
}

impl BatchSource for SequentialBatches<'_> {
    fn next_batch(&mut self, buffers: &mut BatchBuffers<'_>) -> Result<usize, DataError> {
        let n = self
            .batch
            .min(buffers.max_batch)
            .min(self.rows.len() - self.pos);
        if n == 0 {
            return Ok(0);
        }
        let chunk = &self.rows[self.pos..self.pos + n];
        self.binding.gather_unchecked(self.data, chunk, buffers);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_ids_allows_the_padding_id_only_in_feature_column_ids() {
        let ids = [2, PADDING_ID, 0, 1];
        assert_eq!(check_ids("c/ids", &ids, 2, Some(3), true), Ok(()));
        let e = check_ids("label", &ids, 2, Some(3), false).unwrap_err();
        assert!(e.contains("`label`, row 1") && e.contains("-1"), "{e}");
        let below = [2, PADDING_ID - 1, 0, 1];
        let e = check_ids("c/ids", &below, 2, None, true).unwrap_err();
        assert!(
            e.contains("row 1") && e.contains(&(PADDING_ID - 1).to_string()),
            "{e}"
        );
        let over = [2, PADDING_ID, 0, 3];
        let e = check_ids("c/ids", &over, 2, Some(3), true).unwrap_err();
        assert!(
            e.contains("row 2") && e.contains("id 3 is out of range"),
            "{e}"
        );
    }
}
