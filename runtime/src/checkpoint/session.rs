//! A session's variables to and from a checkpoint, under TF's names.
//!
//! Owns: [`Session::checkpoint_tensors`] (every variable, slot, optimizer
//! variable and moving average of the layout, plus `global_step` as an int64
//! scalar; constants are not saved) and [`Session::restore`] (TF's
//! `Saver.restore`: every one of them must be in the checkpoint with its
//! shape; extra tensors in the checkpoint are ignored).
//!
//! Invariants: a refused restore (a missing tensor, a shape or dtype
//! mismatch) changes nothing in the session; restoring reads each tensor
//! straight into the session's memory and checks its CRC (a corrupt tensor
//! is an error naming it; variables before it may then already be restored).

use super::bundle::BundleReader;
use super::tensor::{shape_string, DType, Tensor, TensorRef};
use super::CheckpointError;
use super::CheckpointErrorKind::Mismatch;
use crate::session::Session;

/// TF's name of the global step.
pub const GLOBAL_STEP: &str = "global_step";

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

    /// Copies every saved variable and the global step back from `reader`.
    pub fn restore(&mut self, reader: &BundleReader) -> Result<(), CheckpointError> {
        let index = reader.index_file().to_path_buf();
        let mut names = Vec::new();
        for v in &self.layout.vars {
            if !v.kind.is_state() {
                continue;
            }
            let e = reader.entry(&v.name).ok_or_else(|| {
                CheckpointError::tensor(
                    Mismatch,
                    &index,
                    &v.name,
                    "the model's variable is not in the checkpoint",
                )
            })?;
            if e.dtype != DType::Float || e.shape != v.shape {
                return Err(CheckpointError::tensor(
                    Mismatch,
                    &index,
                    &v.name,
                    format!(
                        "the checkpoint has a {} tensor of shape {}, the model a float32 variable of shape {}",
                        e.dtype,
                        shape_string(&e.shape),
                        shape_string(&v.shape)
                    ),
                ));
            }
            names.push(v.name.clone());
        }
        let step = match reader.entry(GLOBAL_STEP) {
            Some(e) if e.shape.is_empty() && matches!(e.dtype, DType::Int64 | DType::Int32) => {
                match reader.load(GLOBAL_STEP)? {
                    Tensor::I64(a) => a.iter().next().copied().unwrap_or(0),
                    Tensor::I32(a) => a.iter().next().map_or(0, |&x| i64::from(x)),
                    _ => 0,
                }
            }
            Some(e) => {
                return Err(CheckpointError::tensor(
                    Mismatch,
                    &index,
                    GLOBAL_STEP,
                    format!(
                        "is a {} tensor of shape {}, not an integer scalar",
                        e.dtype,
                        shape_string(&e.shape)
                    ),
                ))
            }
            None => {
                return Err(CheckpointError::tensor(
                    Mismatch,
                    &index,
                    GLOBAL_STEP,
                    "the model's variable is not in the checkpoint",
                ))
            }
        };
        for name in &names {
            if let Some(dst) = self.var_mut(name) {
                reader.load_f32_into(name, dst)?;
            }
        }
        self.global_step = step;
        Ok(())
    }
}
