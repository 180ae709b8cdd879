//! Batch order (shuffled epochs), the held-out split, and gathering the rows
//! of a batch.
//!
//! [`BatchOrder`] produces an endless stream of row indices in `0..n_rows`,
//! cut into full batches (a batch may straddle two epochs; there is never a
//! partial batch). One splitmix64 stream with state `seed` drives it and is
//! never reset. Three regimes, by `shuffle_buffer`:
//!
//! - `shuffle_buffer >= n_rows` (full shuffle): exactly the benchmark's batch
//!   order. Each epoch starts from `p = [0, 1, ..., n-1]` and applies
//!   Fisher–Yates: `for i = n-1 down to 1: j = next() % (i+1); swap(p[i], p[j])`
//!   (n-1 outputs per epoch); the index stream is the concatenation of epochs.
//! - `shuffle_buffer` 0 or 1: data order `0, 1, ..., n-1`, repeated; the
//!   stream is not used.
//! - `1 < shuffle_buffer < n_rows`: `tf.data`'s `shuffle(buffer).repeat()`
//!   semantics, driven by our stream. Per epoch the buffer is filled with
//!   indices `0..buffer`; each output draws `j = next() % len(buffer)`, emits
//!   `buffer[j]` and replaces it with the next unread index of the epoch, or,
//!   once the epoch is read, removes it (`swap_remove`). When the buffer is
//!   empty the next epoch starts (the buffer is refilled from index 0).
//!
//! An epoch is generated lazily when its first index is needed, so
//! [`BatchOrder::epochs_started`] counts epochs that have contributed at least
//! one index. `next_batch` never allocates.
//!
//! [`BatchOrder::state`] and [`BatchOrder::restore`] save and restore the
//! position in the order exactly — the stream, the epoch's permutation or
//! shuffle buffer, the position in it — so a resumed run draws the same
//! batches as one that never stopped (checkpoints keep it as an int64
//! tensor).
//!
//! [`split_rows`] draws the held-out split from its own stream
//! ([`held_out_split`] picks it, or its stratified form); [`gather_f32`]
//! and [`gather_i32`] copy the rows of a batch into a contiguous buffer.

use crate::data::Dataset;
use crate::prng::SplitMix64;

/// Mixed into the seed of the held-out split's stream so that it differs from
/// the batch order's stream for the same `seed`.
pub const SPLIT_SEED_XOR: u64 = 0x5EED_5EED_5EED_5EED;

#[derive(Debug, Clone)]
enum Mode {
    /// Data order.
    Sequential,
    /// Full Fisher–Yates permutation per epoch, in `buf` (len n).
    Permutation,
    /// tf.data shuffle buffer: `buf[..len]` holds the candidates.
    Buffer { len: usize, next_in: u32 },
}

/// The layout version of [`BatchOrder::state`].
const STATE_VERSION: i64 = 1;

/// An endless, deterministic stream of row indices, served in batches.
#[derive(Debug, Clone)]
pub struct BatchOrder {
    n: usize,
    buffer_size: usize,
    mode: Mode,
    rng: SplitMix64,
    /// The current permutation (full shuffle) or the shuffle buffer.
    buf: Vec<u32>,
    /// Position within the current epoch (sequential / permutation modes).
    pos: usize,
    /// True once the current epoch's data is exhausted (or before the first).
    epoch_done: bool,
    epochs: usize,
}

impl BatchOrder {
    /// The batch order for `n_rows` rows (see the module doc for the meaning
    /// of `shuffle_buffer`).
    ///
    /// # Panics
    /// If `n_rows` is 0 or exceeds `u32::MAX` (the loader never produces such
    /// data sets).
    pub fn new(n_rows: usize, shuffle_buffer: usize, seed: u64) -> BatchOrder {
        assert!(
            n_rows > 0,
            "BatchOrder::new: a data set has at least one row"
        );
        assert!(
            n_rows <= u32::MAX as usize,
            "BatchOrder::new: at most u32::MAX rows"
        );
        let (mode, cap) = if shuffle_buffer <= 1 {
            (Mode::Sequential, 0)
        } else if shuffle_buffer >= n_rows {
            (Mode::Permutation, n_rows)
        } else {
            (Mode::Buffer { len: 0, next_in: 0 }, shuffle_buffer)
        };
        BatchOrder {
            n: n_rows,
            buffer_size: shuffle_buffer.min(n_rows),
            mode,
            rng: SplitMix64::new(seed),
            buf: vec![0; cap],
            pos: 0,
            epoch_done: true,
            epochs: 0,
        }
    }

    /// Fill `out` with the next `out.len()` row indices.
    pub fn next_batch(&mut self, out: &mut [u32]) {
        for slot in out.iter_mut() {
            *slot = self.next_index();
        }
    }

    /// Number of epochs that have contributed at least one index so far.
    pub fn epochs_started(&self) -> usize {
        self.epochs
    }

    /// The position in the order, as integers: `[version, n, buffer_size,
    /// mode, len, next_in, stream state, pos, epoch_done, epochs, buf...]`.
    pub fn state(&self) -> Vec<i64> {
        let (mode, len, next_in) = match self.mode {
            Mode::Sequential => (0, 0, 0),
            Mode::Permutation => (1, 0, 0),
            Mode::Buffer { len, next_in } => (2, len as i64, i64::from(next_in)),
        };
        let mut v = vec![
            STATE_VERSION,
            self.n as i64,
            self.buffer_size as i64,
            mode,
            len,
            next_in,
            self.rng.state() as i64,
            self.pos as i64,
            i64::from(self.epoch_done),
            self.epochs as i64,
        ];
        v.extend(self.buf.iter().map(|&b| i64::from(b)));
        v
    }

    /// Restores a position saved by [`state`](Self::state) into this order,
    /// which must be the order of the same rows and shuffle buffer (the seed
    /// is part of the state). An inconsistent state is an error, not a panic.
    pub fn restore(&mut self, state: &[i64]) -> Result<(), String> {
        const HEAD: usize = 10;
        let bad = |why: &str| Err(format!("the saved batch order is not valid: {why}"));
        if state.len() < HEAD || state[0] != STATE_VERSION {
            return bad("unknown layout");
        }
        if state[1] != self.n as i64 || state[2] != self.buffer_size as i64 {
            return Err(format!(
                "the saved batch order is over {} rows with a shuffle buffer of {}; \
                 this run has {} rows and a buffer of {}",
                state[1], state[2], self.n, self.buffer_size
            ));
        }
        let buf = &state[HEAD..];
        if buf.len() != self.buf.len() || buf.iter().any(|&b| b < 0 || b as u64 >= self.n as u64) {
            return bad("its buffer does not fit the rows");
        }
        let (len, next_in, pos) = (state[4], state[5], state[7]);
        let in_range = |x: i64, hi: usize| (0..=hi as i64).contains(&x);
        let mode = match state[3] {
            0 if matches!(self.mode, Mode::Sequential) => Mode::Sequential,
            1 if matches!(self.mode, Mode::Permutation) => Mode::Permutation,
            2 if matches!(self.mode, Mode::Buffer { .. })
                && in_range(len, self.buf.len())
                && in_range(next_in, self.n) =>
            {
                Mode::Buffer {
                    len: len as usize,
                    next_in: next_in as u32,
                }
            }
            _ => return bad("its mode does not match the shuffle buffer"),
        };
        if !in_range(pos, self.n) || !(0..=1).contains(&state[8]) || state[9] < 0 {
            return bad("its position is out of range");
        }
        self.mode = mode;
        self.rng = SplitMix64::new(state[6] as u64);
        self.pos = pos as usize;
        self.epoch_done = state[8] == 1;
        self.epochs = state[9] as usize;
        for (d, &b) in self.buf.iter_mut().zip(buf) {
            *d = b as u32;
        }
        Ok(())
    }

    #[inline]
    fn next_index(&mut self) -> u32 {
        if self.epoch_done {
            self.start_epoch();
        }
        match &mut self.mode {
            Mode::Sequential => {
                let i = self.pos as u32;
                self.pos += 1;
                self.epoch_done = self.pos == self.n;
                i
            }
            Mode::Permutation => {
                let i = self.buf[self.pos];
                self.pos += 1;
                self.epoch_done = self.pos == self.n;
                i
            }
            Mode::Buffer { len, next_in } => {
                let j = (self.rng.next_u64() % *len as u64) as usize;
                let i = self.buf[j];
                if (*next_in as usize) < self.n {
                    self.buf[j] = *next_in;
                    *next_in += 1;
                } else {
                    *len -= 1;
                    self.buf[j] = self.buf[*len];
                }
                self.epoch_done = *len == 0;
                i
            }
        }
    }

    fn start_epoch(&mut self) {
        self.epochs += 1;
        self.pos = 0;
        self.epoch_done = false;
        match &mut self.mode {
            Mode::Sequential => {}
            Mode::Permutation => fisher_yates(&mut self.buf, &mut self.rng),
            Mode::Buffer { len, next_in } => {
                for (k, b) in self.buf.iter_mut().enumerate() {
                    *b = k as u32;
                }
                *len = self.buffer_size;
                *next_in = self.buffer_size as u32;
            }
        }
    }
}

/// `p = [0, 1, ..., n-1]`, then `for i = n-1 down to 1: j = next() % (i+1);
/// swap(p[i], p[j])`.
fn fisher_yates(p: &mut [u32], rng: &mut SplitMix64) {
    for (k, v) in p.iter_mut().enumerate() {
        *v = k as u32;
    }
    for i in (1..p.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        p.swap(i, j);
    }
}

/// Deterministic held-out split of `0..n_rows`: `(train, eval)`, both sorted
/// ascending.
///
/// A Fisher–Yates permutation of `0..n_rows` (as one epoch of
/// [`BatchOrder`]) is drawn from the stream with state
/// `seed ^ 0x5EED_5EED_5EED_5EED`; its first `k` entries are the eval rows,
/// the rest the train rows, with `k = round(n_rows * eval_fraction)` (half
/// away from zero). Validation: a fraction that is not finite or `<= 0` gives
/// everything to train; `k` is clamped to `n_rows - 1` so that train is never
/// empty (for `n_rows >= 1`).
pub fn split_rows(n_rows: usize, eval_fraction: f64, seed: u64) -> (Vec<u32>, Vec<u32>) {
    let all = || (0..n_rows as u32).collect::<Vec<u32>>();
    if n_rows == 0 || !eval_fraction.is_finite() || eval_fraction <= 0.0 {
        return (all(), Vec::new());
    }
    let k = ((n_rows as f64 * eval_fraction).round() as usize).min(n_rows - 1);
    if k == 0 {
        return (all(), Vec::new());
    }
    let mut p = vec![0u32; n_rows];
    fisher_yates(&mut p, &mut SplitMix64::new(seed ^ SPLIT_SEED_XOR));
    let mut eval = p[..k].to_vec();
    let mut train = p[k..].to_vec();
    eval.sort_unstable();
    train.sort_unstable();
    (train, eval)
}

/// A held-out split stratified by class: each class's rows are split with
/// [`split_rows`]'s rule (its own permutation from the stream `seed`, its own
/// `round(n_c * eval_fraction)`), so train and eval keep the class
/// proportions. Classes are visited in ascending order, all drawing from one
/// stream. Returns `(train, eval)` sorted ascending.
pub fn split_rows_stratified(
    labels: &[i32],
    eval_fraction: f64,
    seed: u64,
) -> (Vec<u32>, Vec<u32>) {
    let n_rows = labels.len();
    let all = || (0..n_rows as u32).collect::<Vec<u32>>();
    if n_rows == 0 || !eval_fraction.is_finite() || eval_fraction <= 0.0 {
        return (all(), Vec::new());
    }
    let mut classes: Vec<i32> = labels.to_vec();
    classes.sort_unstable();
    classes.dedup();
    let mut rng = SplitMix64::new(seed ^ SPLIT_SEED_XOR);
    let (mut train, mut eval) = (Vec::new(), Vec::new());
    for c in classes {
        let rows: Vec<u32> = (0..n_rows as u32)
            .filter(|&r| labels[r as usize] == c)
            .collect();
        let k = ((rows.len() as f64 * eval_fraction).round() as usize)
            .min(rows.len().saturating_sub(1));
        let mut p = vec![0u32; rows.len()];
        fisher_yates(&mut p, &mut rng);
        for (i, &j) in p.iter().enumerate() {
            if i < k {
                eval.push(rows[j as usize]);
            } else {
                train.push(rows[j as usize]);
            }
        }
    }
    if train.is_empty() {
        return (all(), Vec::new());
    }
    train.sort_unstable();
    eval.sort_unstable();
    (train, eval)
}

/// The held-out split of a data set: `(train, held_out)` row ids, both
/// ascending, with `fraction` of the rows held out (seeded by `seed`).
/// Stratified by class ([`split_rows_stratified`]) when `stratify_by` names
/// an int32 input of one column (the class label), else [`split_rows`].
pub fn held_out_split(
    data: &Dataset,
    stratify_by: Option<&str>,
    fraction: f64,
    seed: u64,
) -> (Vec<u32>, Vec<u32>) {
    let labels = stratify_by
        .and_then(|name| data.input(name))
        .filter(|d| d.width == 1)
        .and_then(|d| d.values.as_i32());
    match labels {
        Some(labels) => split_rows_stratified(labels, fraction, seed),
        None => split_rows(data.rows, fraction, seed),
    }
}

/// Copy rows `rows` of the row-major `[_, width]` array `src` into `dst`
/// (`[rows.len(), width]`).
///
/// # Panics
/// If `dst.len() != rows.len() * width` or a row index is out of range
/// (caller bugs: batch indices come from a [`BatchOrder`] over the same data).
pub fn gather_f32(src: &[f32], width: usize, rows: &[u32], dst: &mut [f32]) {
    gather(src, width, rows, dst)
}

/// [`gather_f32`] for int32 data (class ids).
///
/// # Panics
/// As [`gather_f32`].
pub fn gather_i32(src: &[i32], width: usize, rows: &[u32], dst: &mut [i32]) {
    gather(src, width, rows, dst)
}

#[inline]
fn gather<T: Copy>(src: &[T], width: usize, rows: &[u32], dst: &mut [T]) {
    assert_eq!(
        dst.len(),
        rows.len() * width,
        "gather: destination has the wrong length"
    );
    if width == 0 {
        return;
    }
    if width == 1 {
        for (d, &r) in dst.iter_mut().zip(rows) {
            *d = src[r as usize];
        }
        return;
    }
    for (d, &r) in dst.chunks_exact_mut(width).zip(rows) {
        let s = r as usize * width;
        d.copy_from_slice(&src[s..s + width]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draw(o: &mut BatchOrder, batches: usize, batch: usize) -> Vec<u32> {
        let mut out = vec![0; batches * batch];
        for chunk in out.chunks_mut(batch) {
            o.next_batch(chunk);
        }
        out
    }

    #[test]
    fn a_restored_order_continues_exactly() {
        // Sequential, full shuffle and a shuffle buffer; positions inside an
        // epoch, at its end and before the first.
        for (n, buffer) in [(10, 0), (10, 10), (10, 4), (7, 3)] {
            for before in [0, 1, 3, 5] {
                let mut a = BatchOrder::new(n, buffer, 42);
                draw(&mut a, before, 3);
                let saved = a.state();
                let rest = draw(&mut a, 9, 3);
                let mut b = BatchOrder::new(n, buffer, 7);
                b.restore(&saved).unwrap();
                assert_eq!(
                    draw(&mut b, 9, 3),
                    rest,
                    "n {n} buffer {buffer} after {before}"
                );
                assert_eq!(a.epochs_started(), b.epochs_started());
            }
        }
    }

    #[test]
    fn a_state_of_other_rows_or_garbage_is_refused() {
        let a = BatchOrder::new(10, 4, 1);
        let saved = a.state();
        let err = BatchOrder::new(11, 4, 1).restore(&saved).unwrap_err();
        assert!(err.contains("10 rows") && err.contains("11 rows"), "{err}");
        assert!(BatchOrder::new(10, 10, 1).restore(&saved).is_err());
        for k in 0..saved.len() {
            let mut bad = saved.clone();
            bad[k] = -5;
            if k == 6 {
                continue; // any stream state is valid
            }
            assert!(
                BatchOrder::new(10, 4, 1).restore(&bad).is_err(),
                "field {k}"
            );
        }
        assert!(BatchOrder::new(10, 4, 1).restore(&saved[..3]).is_err());
    }
}
