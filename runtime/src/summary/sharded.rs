//! Histograms of tables sharded across replicas (`train::sharded`): the
//! histogram of the whole logical table, as one process writes it, though
//! no replica holds the whole table.
//!
//! Owns: [`ShardedHistograms`] (each replica counts its real rows of every
//! sharded parameter, not the padding nor the spare row, and the replicas
//! combine their counts with one allgather, [`Collective::all_gather_f64`])
//! and [`ShardedHistogramHook`], a replica's part in the histograms when
//! another replica writes them.
//!
//! Invariants: every replica combines at the same global steps (the
//! [`SummarySaverHook`](super::SummarySaverHook)'s timer counts global
//! steps, which the replicas share), in one collective per write whatever
//! the tables; the combined counts, min, max and num are the one process's
//! exactly; sum and sum of squares add each replica's float64 partial sums
//! in replica order, so they differ from one process's by rounding only;
//! a non-finite value on any replica fails the write on every replica,
//! naming the table's first such element in logical order.

use std::rc::Rc;

use super::histogram::{Histogram, HistogramProto};
use super::hooks::StepTimer;
use crate::abi::VarRole;
use crate::session::Session;
use crate::train::replicas::Collective;
use crate::train::sharded::Ownership;
use crate::train::{Hook, RunContext, StepValues, TrainError};

/// One sharded parameter: its name and where its real rows are.
#[derive(Clone, Debug)]
struct Table {
    name: String,
    /// Floats per row.
    row_len: usize,
    /// This replica's logical rows, `(first row, rows)` in its order: the
    /// first rows of its variable.
    ranges: Vec<(usize, usize)>,
}

impl Table {
    /// The floats this replica holds of real rows.
    fn len(&self) -> usize {
        self.ranges.iter().map(|&(_, rows)| rows).sum::<usize>() * self.row_len
    }

    /// The logical element of this replica's element `i` (< [`Table::len`]).
    fn logical(&self, i: usize) -> usize {
        let (mut row, col) = (i / self.row_len.max(1), i % self.row_len.max(1));
        for &(start, rows) in &self.ranges {
            if row < rows {
                return (start + row) * self.row_len + col;
            }
            row -= rows;
        }
        i
    }
}

/// A non-finite value of a sharded table: TF's "NaN in summary histogram".
#[derive(Clone, Debug, PartialEq)]
pub struct NonFinite {
    pub tag: String,
    /// Its first non-finite element in the logical table (row-major).
    pub element: usize,
    pub value: f32,
}

/// The histograms of a session's sharded parameters, combined across the
/// replicas (see the module doc).
pub struct ShardedHistograms {
    comm: Rc<dyn Collective>,
    tables: Vec<Table>,
    local: Histogram,
    send: Vec<f64>,
    recv: Vec<f64>,
}

/// Words per table in the exchange: the first non-finite element (or -1)
/// and its value, then the histogram's state.
fn table_words() -> usize {
    2 + Histogram::state_words()
}

impl ShardedHistograms {
    /// The histograms of `session`'s sharded parameters (trainable tables,
    /// not their slots or moving averages), in layout order, over `comm`;
    /// `None` when none is sharded.
    pub fn new(session: &Session, comm: Rc<dyn Collective>) -> Option<ShardedHistograms> {
        let layout = &session.layout;
        let rank = comm.rank();
        let tables: Vec<Table> = layout
            .vars
            .iter()
            .filter(|v| matches!(v.kind, VarRole::Param { .. }))
            .filter_map(|v| {
                let t = layout.shard_of(v)?;
                Some(Table {
                    name: v.name.clone(),
                    row_len: v.shape.iter().skip(1).product(),
                    ranges: Ownership::new(&v.partitions, t.replicas).ranges(rank),
                })
            })
            .collect();
        (!tables.is_empty()).then(|| ShardedHistograms {
            comm,
            tables,
            local: Histogram::new(),
            send: Vec::new(),
            recv: Vec::new(),
        })
    }

    /// Whether `name` is one of the sharded parameters.
    pub fn contains(&self, name: &str) -> bool {
        self.tables.iter().any(|t| t.name == name)
    }

    /// The histogram of each whole sharded parameter, `(name, histogram)`
    /// in layout order. A collective: every replica calls it at the same
    /// steps. A non-finite value anywhere is the same error on every
    /// replica (the first table's, in layout order).
    pub fn combine(
        &mut self,
        session: &Session,
    ) -> Result<Vec<(String, HistogramProto)>, NonFinite> {
        let words = table_words();
        self.send.clear();
        for t in &self.tables {
            let values = session.var(&t.name).unwrap_or(&[]);
            let values = &values[..t.len().min(values.len())];
            self.local.clear();
            match self.local.add_finite(values) {
                Ok(()) => self.send.extend_from_slice(&[-1.0, 0.0]),
                Err(i) => {
                    self.send
                        .extend_from_slice(&[t.logical(i) as f64, f64::from(values[i])]);
                }
            }
            self.local.state(&mut self.send);
        }
        let n = self.comm.replicas();
        self.recv.clear();
        self.recv.resize(self.send.len() * n, 0.0);
        self.comm.all_gather_f64(&self.send, &mut self.recv);
        let per_replica = self.send.len();
        let mut out = Vec::with_capacity(self.tables.len());
        for (k, t) in self.tables.iter().enumerate() {
            let mut whole = Histogram::new();
            let mut bad: Option<(usize, f32)> = None;
            for r in 0..n {
                let at = r * per_replica + k * words;
                let part = &self.recv[at..at + words];
                if part[0] >= 0.0 {
                    let e = part[0] as usize;
                    if bad.is_none_or(|(b, _)| e < b) {
                        bad = Some((e, part[1] as f32));
                    }
                }
                whole.merge_state(&part[2..]);
            }
            if let Some((element, value)) = bad {
                return Err(NonFinite {
                    tag: t.name.clone(),
                    element,
                    value,
                });
            }
            out.push((t.name.clone(), whole.to_proto()));
        }
        Ok(out)
    }
}

/// A replica's part in the histograms of the sharded tables when another
/// replica writes the summaries: it combines at the steps the writer's
/// [`SummarySaverHook`](super::SummarySaverHook) writes (every
/// `every_steps` global steps, the same timer) and keeps nothing.
pub struct ShardedHistogramHook {
    timer: StepTimer,
    histograms: ShardedHistograms,
}

impl ShardedHistogramHook {
    /// Takes part every `every_steps` global steps (0 counts as 1), as a
    /// `SummarySaverHook::new(_, every_steps, true)` writes.
    pub fn new(histograms: ShardedHistograms, every_steps: u64) -> ShardedHistogramHook {
        ShardedHistogramHook {
            timer: StepTimer::new(every_steps),
            histograms,
        }
    }
}

impl Hook for ShardedHistogramHook {
    fn begin(&mut self, _ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        self.timer.last = None;
        Ok(())
    }

    #[inline]
    fn after_run(&mut self, ctx: &mut RunContext<'_>, v: &StepValues) -> Result<(), TrainError> {
        if !self.timer.due(v.global_step) {
            return Ok(());
        }
        self.timer.last = Some(v.global_step);
        match self.histograms.combine(ctx.session()) {
            Ok(_) => Ok(()),
            Err(e) => Err(TrainError::Hook(format!(
                "NaN in summary histogram for: {} (element {} is {}) at global step {}",
                e.tag, e.element, e.value, v.global_step
            ))),
        }
    }
}
