//! Serving with moving averages: which checkpoint tensor each parameter is
//! read from when `predict`, `evaluate` or `export` uses the `ema` item's
//! averages — TF's `Saver(ema.variables_to_restore(moving_average_variables()))`,
//! which restores every averaged variable `W` from `W/ExponentialMovingAverage`
//! and every other variable from itself.
//!
//! Owns: [`Serving`] (whether the averages are used: `--use-averages[=BOOL]`,
//! else the spec's `ema ..., use_averages = true`) and the restore map it
//! makes, with its errors: averages asked for by a spec without `ema`, and a
//! checkpoint without the average of an averaged parameter (naming both).
//!
//! Invariants: the averaged parameters are the checked model's
//! ([`Model::averaged_params`]: the trainable parameters of the `ema` item's
//! `var_list`), the ones a training step of the same spec keeps shadows of;
//! without the averages every parameter is read from its own name; a
//! checkpoint is checked for every tensor before anything is restored, so
//! a refused restore changes nothing.

use std::path::Path;

use specc_compiler::model::{average_name, Model};
use specc_runtime::abi::VarRole;
use specc_runtime::checkpoint::{BundleReader, Selection};
use specc_runtime::config::warm_start::Assignment;
use specc_runtime::session::Session;

/// Where the choice to use the averages came from (for messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// `--use-averages` on the command line.
    Flag,
    /// The spec's `ema ..., use_averages = true`.
    Spec,
}

/// Which tensor each parameter is restored from for inference.
#[derive(Clone, Debug, PartialEq)]
pub struct Serving {
    /// The averaged parameters' names, when the averages are used (empty
    /// otherwise).
    averaged: Vec<String>,
    /// Why the averages are used (`None`: they are not).
    origin: Option<Origin>,
}

impl Serving {
    /// The raw weights: every parameter from its own tensor.
    pub fn raw() -> Serving {
        Serving {
            averaged: Vec::new(),
            origin: None,
        }
    }

    /// Resolves `flag` (`--use-averages[=BOOL]`; `None`: not given) against
    /// the spec's default (`ema ..., use_averages = true`). Asking for the
    /// averages of a spec without an `ema` item is an error naming `spec`.
    pub fn resolve(model: &Model, flag: Option<bool>, spec: &Path) -> Result<Serving, String> {
        let origin = match (flag, &model.ema) {
            (Some(false), _) | (None, None) => return Ok(Serving::raw()),
            (Some(true), None) => {
                return Err(format!(
                    "--use-averages: {} has no moving averages; add `ema DECAY` to the spec \
                     (and train it) to serve them",
                    spec.display()
                ))
            }
            (Some(true), Some(_)) => Origin::Flag,
            (None, Some(e)) if e.use_averages => Origin::Spec,
            (None, Some(_)) => return Ok(Serving::raw()),
        };
        Ok(Serving {
            averaged: model
                .averaged_params()
                .into_iter()
                .map(|p| model.var_name(p).to_string())
                .collect(),
            origin: Some(origin),
        })
    }

    /// Whether the averages are used.
    pub fn uses_averages(&self) -> bool {
        self.origin.is_some()
    }

    /// The averaged parameters, in declaration order (empty without the
    /// averages).
    pub fn averaged(&self) -> &[String] {
        &self.averaged
    }

    /// The checkpoint tensor parameter `param` is read from: its moving
    /// average when it has one and the averages are used, else itself.
    pub fn tensor(&self, param: &str) -> String {
        if self.averaged.iter().any(|a| a == param) {
            average_name(param)
        } else {
            param.to_string()
        }
    }

    /// Checks that `reader`'s checkpoint holds the average of every
    /// averaged parameter: an error names the first missing one, its
    /// tensor, the checkpoint, and how to do without.
    pub fn check(&self, reader: &BundleReader) -> Result<(), String> {
        let place = format!("the checkpoint {}", reader.prefix().display());
        self.check_in(&place, |t| reader.entry(t).is_some())
    }

    /// [`Serving::check`] of a session's variables (a model trained in
    /// this process) instead of a checkpoint's tensors.
    pub fn check_session(&self, session: &Session) -> Result<(), String> {
        self.check_in("the model", |t| session.layout.var(t).is_some())
    }

    /// The check of [`Serving::check`]: `has` says whether `place` (a
    /// checkpoint, a model) holds a tensor.
    fn check_in(&self, place: &str, has: impl Fn(&str) -> bool) -> Result<(), String> {
        let Some(origin) = self.origin else {
            return Ok(());
        };
        let Some(missing) = self.averaged.iter().find(|p| !has(&average_name(p))) else {
            return Ok(());
        };
        let (why, off) = match origin {
            Origin::Flag => ("--use-averages", "leave out --use-averages"),
            Origin::Spec => (
                "the spec's `ema ..., use_averages = true`",
                "pass --use-averages=false",
            ),
        };
        Err(format!(
            "{why}: {place} has no moving average of `{missing}` (no tensor `{}`: \
             it was trained without an `ema` over `{missing}`); {off} to use the trained values",
            average_name(missing)
        ))
    }

    /// `(tensor, parameter)` for every parameter of `session` (trainable or
    /// not): what [`Serving::restore`] reads.
    pub fn restore_map(&self, session: &Session) -> Vec<Assignment> {
        session
            .layout
            .vars
            .iter()
            .filter(|v| matches!(v.kind, VarRole::Param { .. }))
            .map(|v| Assignment {
                tensor: self.tensor(&v.name),
                param: v.name.clone(),
            })
            .collect()
    }

    /// Restores every parameter of `session` from `reader`'s checkpoint,
    /// each averaged one from its moving average when the averages are
    /// used (optimizer slots and the global step are not read). Nothing is
    /// written unless every tensor is there with its parameter's shape.
    pub fn restore(&self, session: &mut Session, reader: &BundleReader) -> Result<(), String> {
        self.check(reader)?;
        if !self.uses_averages() {
            return session
                .restore_selected(reader, Selection::Parameters)
                .map_err(|e| e.to_string());
        }
        let map = self.restore_map(session);
        session
            .restore_selected(reader, Selection::Assignments(&map))
            .map_err(|e| e.to_string())
    }

    /// Sets every parameter of `session` from `from`'s variables (a
    /// session of the same spec, compiled with other functions: a model
    /// trained in this process), each averaged one from its moving average
    /// when the averages are used; optimizer slots and the global step are
    /// not set. Nothing is written unless every tensor is there with its
    /// parameter's shape.
    pub fn copy_params(&self, session: &mut Session, from: &Session) -> Result<(), String> {
        self.check_session(from)?;
        let map = self.restore_map(session);
        for a in &map {
            let want = session.layout.var(&a.param).map(|v| v.shape.clone());
            match (from.variable(&a.tensor), want) {
                (Some(v), Some(shape)) if v.shape() == shape.as_slice() => {}
                (Some(v), Some(shape)) => {
                    return Err(format!(
                        "the model's `{}` has shape {:?}, and `{}` {shape:?}",
                        a.tensor,
                        v.shape(),
                        a.param
                    ))
                }
                _ => return Err(format!("the model has no variable `{}`", a.tensor)),
            }
        }
        for a in &map {
            if let (Some(v), Some(mut d)) =
                (from.variable(&a.tensor), session.variable_mut(&a.param))
            {
                d.assign(&v);
            }
        }
        Ok(())
    }

    /// How a command's summary line says where the weights came from:
    /// `" (moving averages)"`, or nothing.
    pub fn note(&self) -> &'static str {
        if self.uses_averages() {
            " (moving averages)"
        } else {
            ""
        }
    }
}
