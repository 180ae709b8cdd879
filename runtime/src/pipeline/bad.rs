//! The bad-record policy (`on_bad_record = "error" | "skip"`) and the report
//! of skipped records.
//!
//! Owns: [`OnBadRecord`], [`BadRecords`] (the count of skipped records and
//! the first [`SHOWN`] of them, each a [`DataError`] naming the file, the
//! line or record, the column and what is wrong).
//!
//! Invariants: a bad record is a row the readers or transforms refuse (a
//! wrong field count, a cell that does not parse, a missing feature without
//! a default, an Example that does not decode, an id out of the model's
//! range); with `Error` the first one ends the run, with `Skip` it is
//! counted and never silently dropped. A damaged file (a TFRecord CRC
//! mismatch, a truncated record, a damaged gzip stream, an I/O error, a row
//! over the length limit) is always an error: after it the framing of the
//! rest of the file is lost. Records are counted when the training thread
//! reaches them (not when a worker reads ahead), so the report is the same
//! whatever the number of threads.

use std::fmt;

use crate::data::DataError;

/// How many skipped records the report lists.
pub const SHOWN: usize = 5;

/// What a bad record does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnBadRecord {
    /// The run stops with an error naming the record (the default).
    #[default]
    Error,
    /// The record is skipped and counted.
    Skip,
}

impl OnBadRecord {
    /// The spec's name: `"error"` or `"skip"`.
    pub fn from_name(name: &str) -> Option<OnBadRecord> {
        match name {
            "error" => Some(OnBadRecord::Error),
            "skip" => Some(OnBadRecord::Skip),
            _ => None,
        }
    }
}

/// The skipped records: how many, and the first few.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BadRecords {
    pub count: u64,
    /// The first [`SHOWN`] skipped records, in stream order.
    pub first: Vec<DataError>,
}

impl BadRecords {
    /// Counts one more skipped record.
    pub fn add(&mut self, e: DataError) {
        self.count += 1;
        if self.first.len() < SHOWN {
            self.first.push(e);
        }
    }

    /// Adds the records of `other` (which come after these).
    pub fn extend(&mut self, other: &BadRecords) {
        self.count += other.count;
        let room = SHOWN.saturating_sub(self.first.len());
        self.first.extend(other.first.iter().take(room).cloned());
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        self.count = 0;
        self.first.clear();
    }
}

impl fmt::Display for BadRecords {
    /// `skipped N bad records; the first: FILE:LINE: ...; FILE:LINE: ...`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "skipped {} bad record{}",
            self.count,
            if self.count == 1 { "" } else { "s" }
        )?;
        if !self.first.is_empty() {
            write!(
                f,
                "; the first{}: ",
                if self.first.len() == 1 {
                    String::new()
                } else {
                    format!(" {}", self.first.len())
                }
            )?;
            for (i, e) in self.first.iter().enumerate() {
                if i > 0 {
                    write!(f, "; ")?;
                }
                write!(f, "{e}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_first_few_and_counts_all() {
        let mut b = BadRecords::default();
        for i in 0..(SHOWN + 3) {
            b.add(DataError::at("f.csv", Some(i + 2), Some("x"), "bad"));
        }
        assert_eq!(b.count, (SHOWN + 3) as u64);
        assert_eq!(b.first.len(), SHOWN);
        assert_eq!(b.first[0].row, Some(2));
        let text = b.to_string();
        assert!(
            text.starts_with(&format!("skipped {} bad records", SHOWN + 3)),
            "{text}"
        );
        assert!(text.contains("f.csv:2: column `x`: bad"), "{text}");
        let mut c = BadRecords::default();
        c.extend(&b);
        assert_eq!(c, b);
    }

    #[test]
    fn policy_names() {
        assert_eq!(OnBadRecord::from_name("skip"), Some(OnBadRecord::Skip));
        assert_eq!(OnBadRecord::from_name("error"), Some(OnBadRecord::Error));
        assert_eq!(OnBadRecord::from_name("drop"), None);
    }
}
