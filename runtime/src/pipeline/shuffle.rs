//! The shuffle buffer over streamed rows: `tf.data`'s
//! `shuffle(buffer_size).repeat()` with specc's random stream, the same
//! rule as the in-memory [`BatchOrder`](crate::batches::BatchOrder)'s
//! buffer mode.
//!
//! Owns: [`RowBuffer`]: up to `capacity` rows of every input (typed, in the
//! step's format). Per epoch it is filled with the first `capacity` rows of
//! the stream; each output draws `j = next() % len`, emits slot `j` and
//! refills it with the next row of the epoch, or, once the epoch is read,
//! moves the last slot into it. With a capacity of 1 (`shuffle` 0 or 1)
//! rows come in stream order and the random stream is not used.
//!
//! Invariants: memory is `capacity` rows, allocated as the first epoch fills
//! the buffer and never again; copying a row allocates nothing.

use crate::data::{Values, ValuesMut};

/// Rows of every input, slot by slot.
pub(crate) struct RowBuffer {
    pub(crate) values: Vec<Values>,
    pub(crate) widths: Vec<usize>,
    pub(crate) capacity: usize,
    /// Slots holding a row.
    pub(crate) len: usize,
    /// Slots allocated.
    allocated: usize,
}

impl RowBuffer {
    pub(crate) fn new(template: &[Values], widths: &[usize], capacity: usize) -> RowBuffer {
        RowBuffer {
            values: template
                .iter()
                .map(|v| match v {
                    Values::F32(_) => Values::F32(Vec::new()),
                    Values::I32(_) => Values::I32(Vec::new()),
                })
                .collect(),
            widths: widths.to_vec(),
            capacity: capacity.max(1),
            len: 0,
            allocated: 0,
        }
    }

    /// Makes slot `slot` (`<= allocated`) exist.
    pub(crate) fn ensure(&mut self, slot: usize) {
        if slot < self.allocated {
            return;
        }
        self.allocated = slot + 1;
        for (v, &w) in self.values.iter_mut().zip(&self.widths) {
            let n = self.allocated * w;
            match v {
                Values::F32(v) => v.resize(n, 0.0),
                Values::I32(v) => v.resize(n, 0),
            }
        }
    }

    /// Copies row `row` of `src` (values by input) into slot `slot`.
    pub(crate) fn put(&mut self, slot: usize, src: &[Values], row: usize) {
        self.ensure(slot);
        for ((d, s), &w) in self.values.iter_mut().zip(src).zip(&self.widths) {
            copy_row(s, row, w, d, slot);
        }
    }

    /// Moves the row of slot `from` into slot `to`.
    pub(crate) fn move_slot(&mut self, from: usize, to: usize) {
        if from == to {
            return;
        }
        for (v, &w) in self.values.iter_mut().zip(&self.widths) {
            match v {
                Values::F32(v) => v.copy_within(from * w..(from + 1) * w, to * w),
                Values::I32(v) => v.copy_within(from * w..(from + 1) * w, to * w),
            }
        }
    }

    /// Writes the row of slot `slot`, input `k`, into row `row` of `dst`.
    #[inline]
    pub(crate) fn write(&self, k: usize, slot: usize, dst: ValuesMut<'_>, row: usize) {
        let w = self.widths[k];
        match (&self.values[k], dst) {
            (Values::F32(s), ValuesMut::F32(d)) => {
                d[row * w..(row + 1) * w].copy_from_slice(&s[slot * w..(slot + 1) * w])
            }
            (Values::I32(s), ValuesMut::I32(d)) => {
                d[row * w..(row + 1) * w].copy_from_slice(&s[slot * w..(slot + 1) * w])
            }
            // The source checked the types against the model's when built.
            _ => {}
        }
    }
}

/// Copies row `row` of `src` into row `slot` of `dst` (same type, width `w`).
pub(crate) fn copy_row(src: &Values, row: usize, w: usize, dst: &mut Values, slot: usize) {
    match (src, dst) {
        (Values::F32(s), Values::F32(d)) => {
            d[slot * w..(slot + 1) * w].copy_from_slice(&s[row * w..(row + 1) * w])
        }
        (Values::I32(s), Values::I32(d)) => {
            d[slot * w..(slot + 1) * w].copy_from_slice(&s[row * w..(row + 1) * w])
        }
        _ => {}
    }
}

/// Appends row `row` of `src` to `dst`.
pub(crate) fn push_row(src: &Values, row: usize, w: usize, dst: &mut Values) {
    match (src, dst) {
        (Values::F32(s), Values::F32(d)) => d.extend_from_slice(&s[row * w..(row + 1) * w]),
        (Values::I32(s), Values::I32(d)) => d.extend_from_slice(&s[row * w..(row + 1) * w]),
        _ => {}
    }
}
