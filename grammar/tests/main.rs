//! The grammar's integration tests, one binary (`cargo test -p
//! specc-grammar --test grammar`): each file a module (`parse::...`);
//! snapshots in `snapshots/`, named `grammar__<file>__<name>.snap`.

mod common;
mod errors;
mod parse;
mod render;
mod robustness;
