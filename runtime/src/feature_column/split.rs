//! `sep` and `on_overflow` of a categorical column: how a CSV cell becomes
//! several values, and what happens to the values past `max_values`.
//!
//! Owns: [`Sep`] and [`pieces`], TF's `tf.strings.split(input, sep)` on one
//! string, byte for byte; [`KeyValues`], the reading rule a base
//! categorical column carries (`sep`, and the truncation of
//! `on_overflow = "truncate"`).
//!
//! TF's rules (`StringSplitV2`, Python's `str.split`):
//! - [`Sep::Whitespace`] (TF's `sep=None`): runs of ASCII whitespace
//!   (space, `\t`, `\n`, `\v`, `\f`, `\r`: `absl::ascii_isspace`) separate
//!   the pieces; no piece is empty, so a blank string has none;
//! - [`Sep::Delimiter`] (a non-empty string): every occurrence, left to
//!   right and not overlapping, separates two pieces, which may be empty
//!   (`"a||b"` split on `"|"` is `a`, `""`, `b`; `""` is one empty piece).
//!
//! Where it applies (the module doc of `transform` has the rest): to a CSV
//! text cell of a column with `sep`, whose pieces are then the values of
//! TF's SparseTensor (none dropped), an empty cell having none (the
//! missing value TF drops from a dense column); never to an Example
//! feature, which is a list already (TF's feature columns split nothing).
//!
//! Invariants: no allocation; the pieces borrow the input.

/// How a cell is split into values (a column's `sep`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Sep {
    /// `sep = whitespace`: TF's `tf.strings.split(s)` (`sep=None`).
    Whitespace,
    /// `sep = "|"`: TF's `tf.strings.split(s, sep="|")`; never empty.
    Delimiter(Vec<u8>),
}

impl Sep {
    /// As a spec writes it: `whitespace`, or the delimiter quoted.
    pub fn spec_text(&self) -> String {
        match self {
            Sep::Whitespace => "whitespace".to_string(),
            Sep::Delimiter(d) => format!("{:?}", String::from_utf8_lossy(d)),
        }
    }
}

/// How a base categorical column reads its key's values: split (`sep`) or
/// not, and bounded by an error (the default) or by truncation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct KeyValues {
    /// `None`: a CSV cell is one value (TF reads a dense string column so).
    pub sep: Option<Sep>,
    /// `on_overflow = "truncate"`: the first `n` values are kept (`n` is
    /// the column's `max_values`); `None`: more than `max_values` values is
    /// an error naming the row and column.
    pub truncate: Option<usize>,
}

impl KeyValues {
    /// One value per CSV cell, more than `max_values` an error.
    pub const AS_IS: KeyValues = KeyValues {
        sep: None,
        truncate: None,
    };
}

/// TF's whitespace (`absl::ascii_isspace`): Rust's ASCII whitespace and `\v`.
#[inline]
pub fn is_tf_space(b: u8) -> bool {
    b.is_ascii_whitespace() || b == 0x0b
}

/// The pieces of `text` split by `sep`, as `tf.strings.split` gives them.
pub fn pieces<'a>(text: &'a [u8], sep: &'a Sep) -> Pieces<'a> {
    Pieces {
        rest: Some(text),
        sep,
    }
}

/// The iterator [`pieces`] returns.
#[derive(Clone, Debug)]
pub struct Pieces<'a> {
    /// What is left to split; `None` when done.
    rest: Option<&'a [u8]>,
    sep: &'a Sep,
}

impl<'a> Iterator for Pieces<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = self.rest?;
        match self.sep {
            Sep::Whitespace => {
                let start = rest.iter().position(|&b| !is_tf_space(b));
                let Some(start) = start else {
                    self.rest = None;
                    return None;
                };
                let word = &rest[start..];
                let end = word.iter().position(|&b| is_tf_space(b));
                let end = end.unwrap_or(word.len());
                self.rest = Some(&word[end..]);
                Some(&word[..end])
            }
            Sep::Delimiter(d) => {
                let at = if d.is_empty() || d.len() > rest.len() {
                    None
                } else {
                    rest.windows(d.len()).position(|w| w == d.as_slice())
                };
                match at {
                    Some(i) => {
                        self.rest = Some(&rest[i + d.len()..]);
                        Some(&rest[..i])
                    }
                    None => {
                        self.rest = None;
                        Some(rest)
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &str, sep: &Sep) -> Vec<String> {
        pieces(s.as_bytes(), sep)
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect()
    }

    /// The expectations are TF 2.21's `tf.strings.split(...).to_list()`.
    #[test]
    fn whitespace_runs_separate_and_no_piece_is_empty() {
        let ws = Sep::Whitespace;
        assert_eq!(split("a\x0bb c\t\td\n", &ws), ["a", "b", "c", "d"]);
        assert_eq!(split("  good   movie ", &ws), ["good", "movie"]);
        assert!(split("", &ws).is_empty());
        assert!(split(" \t\r\n\x0c", &ws).is_empty());
        // Not TF's whitespace: U+00A0 and the ASCII separators.
        assert_eq!(split("x\u{a0}y a\x1cb", &ws), ["x\u{a0}y", "a\x1cb"]);
    }

    #[test]
    fn a_delimiter_keeps_empty_pieces() {
        let bar = Sep::Delimiter(b"|".to_vec());
        assert_eq!(split("a||b", &bar), ["a", "", "b"]);
        assert_eq!(split("", &bar), [""]);
        assert_eq!(split("|", &bar), ["", ""]);
        assert_eq!(split("Animation|Children", &bar), ["Animation", "Children"]);
        let two = Sep::Delimiter(b"<>".to_vec());
        assert_eq!(split("a<>b<>", &two), ["a", "b", ""]);
        assert_eq!(split("a<b", &two), ["a<b"]);
        let aa = Sep::Delimiter(b"aa".to_vec());
        assert_eq!(split("aaaa", &aa), ["", "", ""]);
        assert_eq!(split("aaa", &aa), ["", "a"]);
    }

    #[test]
    fn spec_text_is_how_a_spec_writes_it() {
        assert_eq!(Sep::Whitespace.spec_text(), "whitespace");
        assert_eq!(Sep::Delimiter(b"|".to_vec()).spec_text(), "\"|\"");
    }
}
