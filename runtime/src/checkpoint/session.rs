//! A session's variables to and from a checkpoint, under TF's names.
//!
//! Owns: [`Session::checkpoint_tensors`] and [`Session::checkpoint_partitions`] (every variable, slot, optimizer
//! variable and moving average of the layout, plus `global_step` as an int64
//! scalar; constants are not saved) and the one restore,
//! [`Session::restore_selected`], of a [`Selection`]: every saved variable
//! and the global step (TF's `Saver.restore`, [`Session::restore`]: a
//! resumed run, an export), the parameters only (inference: a checkpoint
//! without optimizer slots serves), or the pairs of an assignment map
//! (`init_from_checkpoint`, whose tensors may have other names). Extra
//! tensors in the checkpoint are ignored.
//!
//! Invariants: every pair is checked (the tensor present, float32, the
//! variable's shape) before any is loaded, so a refused restore (a missing
//! tensor, a shape or dtype mismatch) changes nothing in the session;
//! restoring reads each tensor straight into the session's memory and
//! checks its CRC (a corrupt tensor is an error naming it; variables before
//! it may then already be restored).

use super::bundle::BundleReader;
use super::slices::Partitions;
use super::tensor::{shape_string, DType, Tensor, TensorRef};
use super::CheckpointError;
use super::CheckpointErrorKind::Mismatch;
use crate::abi::VarRole;
use crate::config::warm_start::Assignment;
use crate::session::Session;

/// TF's name of the global step.
pub const GLOBAL_STEP: &str = "global_step";

/// Which of a session's variables a restore sets, from which tensors.
#[derive(Clone, Copy, Debug)]
pub enum Selection<'a> {
    /// Every saved variable (parameters, slots, optimizer variables, moving
    /// averages) and the global step, each from the tensor of its TF name:
    /// TF's `Saver.restore`.
    All,
    /// The parameters (`VarRole::Param`), each from the tensor of its TF
    /// name; optimizer slots, moving averages and the global step are not
    /// needed.
    Parameters,
    /// The pairs of an assignment map
    /// ([`warm_start::resolve`](crate::config::warm_start::resolve)): each
    /// parameter from its tensor; the global step is left as it is.
    Assignments(&'a [Assignment]),
}

impl Selection<'_> {
    /// How messages name the variables it sets.
    fn noun(&self) -> &'static str {
        match self {
            Selection::All => "variable",
            Selection::Parameters | Selection::Assignments(_) => "parameter",
        }
    }
}

impl Session {
    /// `(TF name, view)` of everything a checkpoint of this session holds.
    pub fn checkpoint_tensors(&self) -> Vec<(&str, TensorRef<'_>)> {
        let mut out = Vec::with_capacity(self.layout.vars.len() + 1);
        for v in &self.layout.vars {
            if !v.kind.is_state() {
                continue;
            }
            if let Some(t) = self
                .var(&v.name)
                .and_then(|values| TensorRef::f32(&v.shape, values).ok())
            {
                out.push((v.name.as_str(), t));
            }
        }
        if let Ok(t) = TensorRef::i64(&[], std::slice::from_ref(&self.global_step)) {
            out.push((GLOBAL_STEP, t));
        }
        out
    }

    /// The partitioned variables among [`Session::checkpoint_tensors`] and
    /// their partitions' rows: a save writes them in slices, as TF saves a
    /// variable with a `partitioner`.
    pub fn checkpoint_partitions(&self) -> Partitions {
        self.layout
            .vars
            .iter()
            .filter(|v| v.kind.is_state() && v.partitions.len() > 1)
            .map(|v| (v.name.clone(), v.partitions.clone()))
            .collect()
    }

    /// Copies every saved variable and the global step back from `reader`
    /// ([`Selection::All`]).
    pub fn restore(&mut self, reader: &BundleReader) -> Result<(), CheckpointError> {
        self.restore_selected(reader, Selection::All)
    }

    /// Copies the variables `what` selects from `reader` (and, for
    /// [`Selection::All`], the global step), checking every one before
    /// loading any.
    pub fn restore_selected(
        &mut self,
        reader: &BundleReader,
        what: Selection<'_>,
    ) -> Result<(), CheckpointError> {
        let index = reader.index_file().to_path_buf();
        let noun = what.noun();
        // (tensor in the checkpoint, variable of the session).
        let pairs: Vec<(String, String)> = match what {
            Selection::All => self
                .layout
                .vars
                .iter()
                .filter(|v| v.kind.is_state())
                .map(|v| (v.name.clone(), v.name.clone()))
                .collect(),
            Selection::Parameters => self
                .layout
                .vars
                .iter()
                .filter(|v| matches!(v.kind, VarRole::Param { .. }))
                .map(|v| (v.name.clone(), v.name.clone()))
                .collect(),
            Selection::Assignments(a) => a
                .iter()
                .map(|a| (a.tensor.clone(), a.param.clone()))
                .collect(),
        };
        for (tensor, var) in &pairs {
            let v = self.layout.var(var).ok_or_else(|| {
                CheckpointError::tensor(
                    Mismatch,
                    &index,
                    tensor,
                    format!("the model has no {noun} `{var}`"),
                )
            })?;
            let e = reader.entry(tensor).ok_or_else(|| {
                let known: Vec<&str> = reader.entries().iter().map(|(n, _)| n.as_str()).collect();
                let mut m = format!("the model's {noun} is not in the checkpoint");
                if let Some(s) = crate::suggest::closest(tensor, known.iter().copied()) {
                    m.push_str(&format!(" (it has `{s}`)"));
                }
                CheckpointError::tensor(Mismatch, &index, tensor, m)
            })?;
            // A sharded table's checkpoint is the whole (logical) table.
            let logical = match self.layout.shard_of(v) {
                Some(t) => {
                    let mut shape = v.shape.clone();
                    shape[0] = t.rows;
                    shape
                }
                None => v.shape.clone(),
            };
            if e.dtype != DType::Float || e.shape != logical {
                return Err(CheckpointError::tensor(
                    Mismatch,
                    &index,
                    tensor,
                    format!(
                        "the checkpoint has a {} tensor of shape {}, the model a float32 {noun} of shape {}",
                        e.dtype,
                        shape_string(&e.shape),
                        shape_string(&logical)
                    ),
                ));
            }
        }
        let step = match what {
            Selection::All => Some(global_step(reader)?),
            Selection::Parameters | Selection::Assignments(_) => None,
        };
        for (tensor, var) in &pairs {
            let sharded = self
                .layout
                .var(var)
                .and_then(|v| Some((v, self.layout.shard_of(v)?)))
                .map(|(v, t)| {
                    let own = crate::train::sharded::Ownership::new(&v.partitions, t.replicas);
                    (
                        own.ranges(self.replica()),
                        v.shape[1..].iter().product::<usize>(),
                    )
                });
            match sharded {
                // This replica's rows of the whole table, read alone.
                Some((ranges, row_len)) => {
                    if let Some(dst) = self.var_mut(var) {
                        let mut at = 0;
                        for (start, rows) in ranges {
                            let len = rows * row_len;
                            reader.load_rows_f32_into(
                                tensor,
                                start..start + rows,
                                &mut dst[at..at + len],
                            )?;
                            at += len;
                        }
                    }
                }
                None => {
                    if let Some(dst) = self.var_mut(var) {
                        reader.load_f32_into(tensor, dst)?;
                    }
                }
            }
        }
        if let Some(step) = step {
            self.global_step = step;
        }
        Ok(())
    }
}

/// The checkpoint's global step: an integer scalar.
fn global_step(reader: &BundleReader) -> Result<i64, CheckpointError> {
    let index = reader.index_file();
    match reader.entry(GLOBAL_STEP) {
        Some(e) if e.shape.is_empty() && matches!(e.dtype, DType::Int64 | DType::Int32) => {
            Ok(match reader.load(GLOBAL_STEP)? {
                Tensor::I64(a) => a.iter().next().copied().unwrap_or(0),
                Tensor::I32(a) => a.iter().next().map_or(0, |&x| i64::from(x)),
                _ => 0,
            })
        }
        Some(e) => Err(CheckpointError::tensor(
            Mismatch,
            index,
            GLOBAL_STEP,
            format!(
                "is a {} tensor of shape {}, not an integer scalar",
                e.dtype,
                shape_string(&e.shape)
            ),
        )),
        None => Err(CheckpointError::tensor(
            Mismatch,
            index,
            GLOBAL_STEP,
            "the model's variable is not in the checkpoint",
        )),
    }
}
