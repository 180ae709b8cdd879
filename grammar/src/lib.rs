//! specc-grammar: the `.spec` language.
//!
//! Code map:
//! - `spec.pest`: the grammar (pest, PEG).
//! - [`ast`]: the syntax tree with byte spans.
//! - `scan`: a token pre-pass: lexical errors, bracket depth, error context.
//! - `parser`: pest pairs to [`ast`] ([`parse`]).
//! - `errors`: pest's parse errors worded as [`Diagnostic`]s.
//! - [`code`]: the diagnostic codes ([`Code`]), their explanations
//!   (`specc explain`, `docs/errors.md`).
//! - [`diag`]: diagnostics and their rendering (file:line:column, caret).
//! - [`library`]: specc's blocks in spec text (`layers.dense`, ...).
//! - [`print`](mod@print): the AST as text (`specc compile --emit ast`).
//!
//! Invariant: nothing here panics on any input text.

pub mod ast;
pub mod code;
pub mod diag;
mod errors;
pub mod library;
mod parser;
pub mod print;
mod scan;

pub use code::Code;
pub use diag::{Diagnostic, SourceFile};
pub use parser::{parse, MAX_EXPR_DEPTH};
