//! TF's CSV reading options (`tf.data.experimental.make_csv_dataset`,
//! `CsvDataset`, `tf.io.decode_csv`) and what they make of one file's
//! columns and records.
//!
//! Owns: [`CsvReadOptions`] (as a `data csv(...)` item gives them:
//! `field_delim`, `use_quote_delim`, `na_value`, `header`, `column_names`,
//! `select_columns`, `column_defaults`, `comment`, `filter`) and
//! [`CsvColumns`], the options resolved against one file: its column
//! names, the selected columns, what a missing field of each becomes, the
//! field-count rule and the filter over its fields.
//! [`CsvColumns::prepare`] turns a record the file reader
//! ([`super::csv_file`]) split into the one the column transforms read, or
//! drops it (the filter). Every CSV source reads through it: `specc run`
//! in memory and streamed, `specc predict`, `specc convert`.
//!
//! TF's rules, kept:
//! - `header = true` (the default): the first record of a file is its
//!   header; the column names are `column_names` when given (the header is
//!   then skipped unread, as `CsvDataset(header=True)`), else the header's.
//!   `header = false`: every record is data and `column_names` name the
//!   columns (the spec's check requires them).
//! - `select_columns`: names or indices of the columns read, in file order
//!   (sorted, as TF sorts them); the others cannot be read. A record needs
//!   the fields up to the last selected one (later ones are not looked at);
//!   without it, exactly one field per column.
//! - a field that is empty (`""` quoted too) or equal to `na_value` is
//!   missing; with `column_defaults` (one per selected column, else one per
//!   column) it takes its column's default, or is an error if the default
//!   is a type only (TF's required column). A column without a default
//!   keeps the field empty: the input that reads it decides (a number is
//!   then an error; a feature column's key takes its `default_value`).
//! - `filter` ([`super::csv_filter`]) sees the fields with the defaults
//!   applied; a row it refuses is dropped (not a bad record).
//!
//! Invariants: resolving a file's columns is the only place a column name
//! becomes a field index (a name missing from the file gets a "did you
//! mean"); [`CsvColumns::prepare`] never panics and, once its scratch
//! record has grown, allocates nothing; an error names the field.

use super::csv_filter::{ResolvedFilter, RowFilter};
use super::DataError;
use crate::io::csv::{CsvType, RecordDefault};
use crate::suggest::edit_distance;

/// A column of `select_columns`: by name or by index (from 0).
#[derive(Clone, Debug, PartialEq)]
pub enum ColumnRef {
    Name(String),
    Index(usize),
}

/// The options of a CSV source (TF's names and defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct CsvReadOptions {
    /// The field delimiter (TF's `","`).
    pub field_delim: u8,
    /// Whether `"` quotes fields (TF's `True`).
    pub use_quote_delim: bool,
    /// A field equal to it is missing (TF's `""`: only empty fields).
    pub na_value: Option<String>,
    /// Whether the first record of each file is a header (TF's `True`).
    pub header: bool,
    /// The columns' names, one per field; `None`: the header's.
    pub column_names: Option<Vec<String>>,
    /// The columns read; `None`: all.
    pub select_columns: Option<Vec<ColumnRef>>,
    /// One per selected column (else per column): what a missing field
    /// becomes ([`RecordDefault::Missing`]: no default).
    pub column_defaults: Option<Vec<RecordDefault>>,
    /// A line starting with this byte is skipped (none by default).
    pub comment: Option<u8>,
    /// The rows kept.
    pub filter: Option<RowFilter>,
}

impl Default for CsvReadOptions {
    fn default() -> CsvReadOptions {
        CsvReadOptions {
            field_delim: b',',
            use_quote_delim: true,
            na_value: None,
            header: true,
            column_names: None,
            select_columns: None,
            column_defaults: None,
            comment: None,
            filter: None,
        }
    }
}

impl CsvReadOptions {
    /// The same options without the filter: how `specc predict` reads a
    /// file (one prediction per row).
    pub fn without_filter(&self) -> CsvReadOptions {
        CsvReadOptions {
            filter: None,
            ..self.clone()
        }
    }
}

/// What a missing field of a column becomes.
#[derive(Clone, Debug, PartialEq)]
enum Missing {
    /// Stays empty (the input reading it decides).
    Keep,
    /// The default, as text the column transforms read back to it.
    Default(Vec<u8>),
    /// An error (TF's empty default).
    Required(CsvType),
}

/// The text of a default value, which the cell readers read back to the
/// same value (floats as their shortest round-trip decimal).
fn default_text(d: &RecordDefault) -> Missing {
    match d {
        RecordDefault::Required(t) => Missing::Required(*t),
        RecordDefault::Missing(_) => Missing::Keep,
        RecordDefault::Float32(x) => Missing::Default(format!("{x}").into_bytes()),
        RecordDefault::Float64(x) => Missing::Default(format!("{x}").into_bytes()),
        RecordDefault::Int32(x) => Missing::Default(x.to_string().into_bytes()),
        RecordDefault::Int64(x) => Missing::Default(x.to_string().into_bytes()),
        RecordDefault::String(s) => Missing::Default(s.clone()),
    }
}

/// The options resolved against one file (see the module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct CsvColumns {
    /// Every column's name, one per field.
    pub names: Vec<String>,
    /// The header's line (1-based); `None` without a header.
    pub header_line: Option<usize>,
    /// Whether `names` are the header's (else `column_names`).
    from_header: bool,
    /// The selected fields, increasing; `None`: all.
    selected: Option<Vec<usize>>,
    /// Per field (of `names`): what a missing field becomes.
    missing: Vec<Missing>,
    na_value: Option<Vec<u8>>,
    filter: Option<ResolvedFilter>,
    /// Whether a record may need rewriting (`na_value` or a default).
    rewrites: bool,
}

impl CsvColumns {
    /// `opts` over a file whose columns are `names` (the header's, or
    /// `column_names`). Errors name the file and the column.
    pub fn resolve(
        opts: &CsvReadOptions,
        names: Vec<String>,
        header_line: Option<usize>,
        file: &str,
    ) -> Result<CsvColumns, DataError> {
        let mut cols = CsvColumns {
            missing: vec![Missing::Keep; names.len()],
            names,
            header_line,
            from_header: opts.column_names.is_none(),
            selected: None,
            na_value: opts.na_value.as_ref().map(|s| s.as_bytes().to_vec()),
            filter: None,
            rewrites: false,
        };
        if let Some(sel) = &opts.select_columns {
            let mut fields = Vec::with_capacity(sel.len());
            for c in sel {
                let i = match c {
                    ColumnRef::Name(n) => cols
                        .lookup(n)
                        .map_err(|(row, m)| DataError::at(file, row, Some(n), m))?,
                    ColumnRef::Index(i) if *i < cols.names.len() => *i,
                    ColumnRef::Index(i) => {
                        return Err(DataError::new(
                            file,
                            format!(
                                "select_columns has column {i}, but the file has {} columns \
                                 (from 0 to {})",
                                cols.names.len(),
                                cols.names.len().saturating_sub(1)
                            ),
                        ))
                    }
                };
                if fields.contains(&i) {
                    return Err(DataError::at(
                        file,
                        None,
                        Some(&cols.names[i]),
                        "select_columns selects this column twice",
                    ));
                }
                fields.push(i);
            }
            fields.sort_unstable();
            cols.selected = Some(fields);
        }
        if let Some(defaults) = &opts.column_defaults {
            let fields: Vec<usize> = match &cols.selected {
                Some(s) => s.clone(),
                None => (0..cols.names.len()).collect(),
            };
            if defaults.len() != fields.len() {
                return Err(DataError::new(
                    file,
                    format!(
                        "column_defaults has {} values but the file has {} {}columns: \
                         one default per {}column",
                        defaults.len(),
                        fields.len(),
                        if cols.selected.is_some() {
                            "selected "
                        } else {
                            ""
                        },
                        if cols.selected.is_some() {
                            "selected "
                        } else {
                            ""
                        },
                    ),
                ));
            }
            for (&i, d) in fields.iter().zip(defaults) {
                cols.missing[i] = default_text(d);
            }
        }
        cols.rewrites = cols.na_value.is_some() || cols.missing.iter().any(|m| *m != Missing::Keep);
        if let Some(f) = &opts.filter {
            let resolved = f
                .resolve(&mut |c| cols.field(c).map_err(|(_, m)| m))
                .map_err(|(c, m)| DataError::at(file, None, Some(&c), format!("filter: {m}")))?;
            cols.filter = Some(resolved);
        }
        Ok(cols)
    }

    /// The field of a column the file has, selected or not; when it has
    /// none or several, the line to blame (the header's, for an ambiguous
    /// name) and why.
    fn lookup(&self, name: &str) -> Result<usize, (Option<usize>, String)> {
        let mut found = self
            .names
            .iter()
            .enumerate()
            .filter(|(_, n)| *n == name)
            .map(|(i, _)| i);
        match (found.next(), found.next()) {
            (Some(i), None) => Ok(i),
            (Some(a), Some(b)) => {
                let mut all = vec![a + 1, b + 1];
                all.extend(found.map(|i| i + 1));
                Err((
                    self.header_line,
                    format!(
                        "the {} has {} columns with this name (fields {}); the column is ambiguous",
                        if self.from_header {
                            "header"
                        } else {
                            "column_names"
                        },
                        all.len(),
                        all.iter()
                            .map(usize::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ))
            }
            (None, _) => Err((
                None,
                missing_column_message(name, &self.names, self.from_header),
            )),
        }
    }

    /// The field of a column a transform or the filter may read: in the
    /// file once, and selected.
    pub fn field(&self, name: &str) -> Result<usize, (Option<usize>, String)> {
        let i = self.lookup(name)?;
        match &self.selected {
            Some(s) if !s.contains(&i) => Err((
                None,
                format!(
                    "not among select_columns ({})",
                    s.iter()
                        .map(|&k| self.names[k].as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
            _ => Ok(i),
        }
    }

    /// A record's field count: one per column, or (with `select_columns`)
    /// at least up to the last selected field.
    pub fn check_fields(&self, file: &str, line: usize, fields: usize) -> Result<(), DataError> {
        match &self.selected {
            None if fields != self.names.len() => Err(if self.from_header {
                super::csv_file::wrong_field_count(file, line, fields, self.names.len())
            } else {
                DataError::at(
                    file,
                    Some(line),
                    None,
                    format!(
                        "the row has {fields} fields but column_names names {}",
                        self.names.len()
                    ),
                )
            }),
            Some(s) => match s.last() {
                Some(&last) if fields <= last => Err(DataError::at(
                    file,
                    Some(line),
                    None,
                    format!(
                        "the row has {fields} fields but select_columns reads field {} (`{}`)",
                        last + 1,
                        self.names[last]
                    ),
                )),
                _ => Ok(()),
            },
            None => Ok(()),
        }
    }

    /// `na_value` and `column_defaults` applied to `rec` (rewritten through
    /// `scratch` when a field changes), then the filter: `Ok(false)` when
    /// the filter drops the row. An error names the field (a required field
    /// missing, a field the filter cannot compare). Field counts are
    /// checked before ([`check_fields`](Self::check_fields)).
    pub fn prepare(
        &self,
        rec: &mut csv::ByteRecord,
        scratch: &mut csv::ByteRecord,
    ) -> Result<bool, (usize, String)> {
        if self.rewrites {
            let na = self.na_value.as_deref();
            let missing = |f: &[u8]| f.is_empty() || Some(f) == na;
            // A field changes when it is `na_value` (it becomes empty or
            // its default), or empty with a default (or required).
            let changes = rec.iter().enumerate().any(|(i, f)| {
                missing(f)
                    && (!f.is_empty() || !matches!(self.missing.get(i), Some(Missing::Keep) | None))
            });
            if changes {
                scratch.clear();
                for (i, f) in rec.iter().enumerate() {
                    if !missing(f) {
                        scratch.push_field(f);
                        continue;
                    }
                    match self.missing.get(i) {
                        Some(Missing::Default(d)) => scratch.push_field(d),
                        Some(Missing::Required(t)) => {
                            return Err((
                                i,
                                format!(
                                    "the field is required (no default {} value in \
                                     column_defaults) but missing",
                                    t.tf_name()
                                ),
                            ))
                        }
                        Some(Missing::Keep) | None => scratch.push_field(b""),
                    }
                }
                scratch.set_position(rec.position().cloned());
                std::mem::swap(rec, scratch);
            }
        }
        match &self.filter {
            None => Ok(true),
            Some(f) => f.keep(&|i| rec.get(i).unwrap_or(b"")),
        }
    }

    /// The name of field `i` (for messages).
    pub fn name(&self, i: usize) -> &str {
        self.names.get(i).map_or("", String::as_str)
    }
}

/// "not found in the header; did you mean `X`? the header has N columns: a, b, ..."
pub(crate) fn missing_column_message(col: &str, names: &[String], header: bool) -> String {
    let mut msg = if header {
        "not found in the header".to_string()
    } else {
        "not among column_names".to_string()
    };
    let best = names
        .iter()
        .filter(|h| !h.is_empty())
        .map(|h| (suggestion_distance(col, h), h))
        .min_by_key(|(d, _)| *d);
    if let Some((d, h)) = best {
        let limit = (col.chars().count().max(h.chars().count()) / 3).max(2);
        if d <= limit {
            msg.push_str(&format!("; did you mean `{h}`?"));
        }
    }
    const SHOW: usize = 8;
    let shown: Vec<&str> = names.iter().take(SHOW).map(String::as_str).collect();
    msg.push_str(&format!(
        "; {} {} column{}: {}{}",
        if header {
            "the header has"
        } else {
            "column_names has"
        },
        names.len(),
        if names.len() == 1 { "" } else { "s" },
        shown.join(", "),
        if names.len() > SHOW { ", ..." } else { "" }
    ));
    msg
}

/// Edit distance, with a case-only difference counting as an exact match.
fn suggestion_distance(a: &str, b: &str) -> usize {
    if a.eq_ignore_ascii_case(b) {
        0
    } else {
        edit_distance(a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::csv_filter::{CmpOp, FilterValue};

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    fn record(fields: &[&str]) -> csv::ByteRecord {
        csv::ByteRecord::from(fields.to_vec())
    }

    #[test]
    fn what_only_the_file_can_say_is_an_error_naming_it() {
        let header = names(&["a", "b", "c"]);
        let resolve = |o: &CsvReadOptions| CsvColumns::resolve(o, header.clone(), Some(1), "f.csv");
        let o = CsvReadOptions {
            select_columns: Some(vec![ColumnRef::Index(3)]),
            ..CsvReadOptions::default()
        };
        let e = resolve(&o).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("f.csv: select_columns has column 3"),
            "{e}"
        );
        let o = CsvReadOptions {
            column_defaults: Some(vec![RecordDefault::Int32(0); 2]),
            ..CsvReadOptions::default()
        };
        let e = resolve(&o).unwrap_err();
        assert!(
            e.message
                .contains("column_defaults has 2 values but the file has 3 columns"),
            "{e}"
        );
        let o = CsvReadOptions {
            filter: Some(RowFilter::Compare {
                column: "bb".into(),
                op: CmpOp::Eq,
                value: FilterValue::Number(1.0),
                dtype: CsvType::Float64,
            }),
            ..CsvReadOptions::default()
        };
        let e = resolve(&o).unwrap_err();
        assert_eq!(e.column.as_deref(), Some("bb"));
        assert!(
            e.message
                .starts_with("filter: not found in the header; did you mean `b`?"),
            "{e}"
        );
    }

    #[test]
    fn na_values_and_defaults_rewrite_a_record_and_required_fields_fail() {
        let o = CsvReadOptions {
            na_value: Some("NA".into()),
            header: false,
            column_names: Some(names(&["a", "b", "c"])),
            column_defaults: Some(vec![
                RecordDefault::Float32(0.5),
                RecordDefault::String(b"d".to_vec()),
                RecordDefault::Required(CsvType::Int64),
            ]),
            ..CsvReadOptions::default()
        };
        let cols = CsvColumns::resolve(&o, names(&["a", "b", "c"]), None, "f.csv").unwrap();
        let mut scratch = csv::ByteRecord::new();
        let mut r = record(&["NA", "", "7"]);
        assert_eq!(cols.prepare(&mut r, &mut scratch), Ok(true));
        assert_eq!(r, record(&["0.5", "d", "7"]));
        let mut r = record(&["1", "x", "NA"]);
        let e = cols.prepare(&mut r, &mut scratch).unwrap_err();
        assert_eq!(e.0, 2);
        assert!(e.1.contains("no default int64 value"), "{}", e.1);
        // Without a default a missing field stays empty for its input.
        let plain = CsvReadOptions {
            na_value: Some("NA".into()),
            ..CsvReadOptions::default()
        };
        let cols = CsvColumns::resolve(&plain, names(&["a", "b"]), Some(1), "f.csv").unwrap();
        let mut r = record(&["NA", "\"NA\""]);
        assert_eq!(cols.prepare(&mut r, &mut scratch), Ok(true));
        // Quotes here are data (the reader has removed any quoting).
        assert_eq!(r, record(&["", "\"NA\""]));
        let e = cols.check_fields("f.csv", 4, 3).unwrap_err();
        assert_eq!(
            e.to_string(),
            "f.csv:4: the row has 3 fields but the header has 2"
        );
        let named = CsvColumns::resolve(&o, names(&["a", "b", "c"]), None, "f.csv").unwrap();
        let e = named.check_fields("f.csv", 2, 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "f.csv:2: the row has 1 fields but column_names names 3"
        );
    }
}
