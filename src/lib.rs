//! specc as a library: compile a `.spec` file, train it step by step on
//! arrays, evaluate, predict, and read and write its parameters and TF
//! checkpoints, from a Rust program.
//!
//! ```no_run
//! use specc::{ndarray::ArrayD, Model};
//!
//! let mut model = Model::from_path("specs/digits_mlp.spec")?;
//! let pixels = ArrayD::<f32>::zeros(vec![64, 64]);
//! let labels = ArrayD::<f32>::zeros(vec![64]);
//! let loss = model.train_step(&[("pixels", pixels.view()), ("label", labels.view())])?;
//! let out = model.predict(&[("pixels", pixels.view())])?;
//! model.save_checkpoint("/tmp/digits")?;
//! # Ok::<(), specc::Error>(())
//! ```
//!
//! Everything `specc run` does — the run configuration, the data, warm
//! start and resume, checkpoints, summaries, periodic evaluation, replicas,
//! the origin of a NaN loss — is [`run`]: a [`run::Request`] prepared and
//! fit with a [`run::Observer`] to a [`run::Outcome`] (see its doc and
//! `examples/run_spec.rs`).
//!
//! Owns: [`Model`] (a compiled spec and its session: the trained state),
//! [`Error`], [`run`] (a training run), [`averages`] (serving with the
//! moving averages), [`export`] (TF Lite and object files, from a
//! checkpoint or a [`Model`]) and [`spec`] (reading a spec file).
//! Arrays cross the API as [`ndarray`] arrays: `ArrayViewD<f32>`
//! in (an int32 input — class labels, ids — takes whole numbers as f32),
//! `ArrayD<f32>` out; the first axis is the batch. The crates underneath
//! ([`grammar`], [`compiler`], [`runtime`]) are re-exported for what the
//! façade does not cover (the input pipeline, hooks, feature-column
//! transforms) and for the types its errors carry (a spec's diagnostics and
//! their codes, a checkpoint error and its kind).
//!
//! Invariants: nothing here panics on user input (a wrong name, shape or
//! value is an [`Error`] saying which); a [`Model`] owns the compiled code its
//! session calls, so it can be moved and kept freely.

#![deny(missing_docs)]

mod api;
pub mod averages;
pub mod export;
pub mod run;
pub mod spec;

pub use api::arrays::InputInfo;
pub use api::error::Error;
pub use api::model::Model;
pub use ndarray;
pub use specc_compiler as compiler;
pub use specc_grammar as grammar;
pub use specc_runtime as runtime;
