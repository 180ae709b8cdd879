//! [`CsvError`]: why a record could not be decoded, and where.
//!
//! Invariants: an error names the column (its number in the record, from 0;
//! its header name when the caller gives the header) whenever one field is
//! at fault, and the line when the caller knows it
//! ([`CsvError::at_line`]).

use std::fmt;

/// A record that could not be decoded: the line (when the caller knows it),
/// the column (from 0; its name when known), and why.
#[derive(Clone, Debug, PartialEq)]
pub struct CsvError {
    pub line: Option<u64>,
    pub column: Option<usize>,
    pub column_name: Option<String>,
    pub what: String,
}

impl CsvError {
    pub(super) fn new(column: Option<usize>, what: String) -> CsvError {
        CsvError {
            line: None,
            column,
            column_name: None,
            what,
        }
    }

    /// The same error at line `line` (1-based).
    pub fn at_line(mut self, line: u64) -> CsvError {
        self.line = Some(line);
        self
    }

    /// The same error naming its column by `names` (a header).
    pub fn with_names<S: AsRef<str>>(mut self, names: &[S]) -> CsvError {
        if let Some(c) = self.column {
            self.column_name = names.get(c).map(|s| s.as_ref().to_string());
        }
        self
    }
}

impl fmt::Display for CsvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        if let Some(l) = self.line {
            write!(f, "line {l}")?;
            sep = ", ";
        }
        if let Some(c) = self.column {
            write!(f, "{sep}column {c}")?;
            if let Some(n) = &self.column_name {
                write!(f, " ('{n}')")?;
            }
            sep = ", ";
        }
        if sep.is_empty() {
            write!(f, "{}", self.what)
        } else {
            write!(f, ": {}", self.what)
        }
    }
}

impl std::error::Error for CsvError {}
