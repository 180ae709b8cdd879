//! A token scan of the source, run before the grammar.
//!
//! Owns: the errors that are best found by a lexer (unterminated strings,
//! unknown escapes, brackets nested too deeply) and the token-level context
//! that `errors.rs` uses to word pest's errors (the offending token, the one
//! before it, the unclosed bracket around it).
//!
//! Invariants: scanning never fails and never panics; tokens are in source
//! order, do not overlap and never include whitespace or comments; the scan
//! stops at the first bracket nested more than [`MAX_NESTING`] deep, before
//! the (recursive) grammar is run on the text.

use crate::ast::Span;
use crate::code::Code;
use crate::diag::Diagnostic;

/// The deepest bracket nesting accepted. Deeper input is rejected before
/// parsing, which keeps pest's recursive descent far from the stack's end:
/// 128 levels take about 1.2 MiB of stack in a debug build, under the 2 MiB
/// of a test thread (pest's own stack guard turns any overflow that remains
/// into an error).
pub(crate) const MAX_NESTING: usize = 128;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TokKind {
    /// An identifier or keyword.
    Word,
    /// Something starting with a digit (maybe malformed, e.g. `1.5.3`).
    Number,
    Str,
    /// An operator, bracket or any other character.
    Punct,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Token {
    pub kind: TokKind,
    pub start: usize,
    pub end: usize,
    /// How many brackets are open before this token.
    pub depth: usize,
}

/// An opening bracket and where it is closed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Open {
    /// Index of the bracket's token.
    pub token: usize,
    pub ch: char,
    /// Byte offset of the matching closer, if any.
    pub close: Option<usize>,
}

#[derive(Debug, Default)]
pub(crate) struct Scan {
    pub tokens: Vec<Token>,
    pub opens: Vec<Open>,
    /// Byte offsets of closing brackets that close nothing.
    pub unmatched_closers: Vec<usize>,
    /// The first lexical error, with the offset where it starts.
    pub lex_error: Option<(usize, Diagnostic)>,
    /// Set when brackets nest deeper than [`MAX_NESTING`]; the scan stops there.
    pub too_deep: Option<Diagnostic>,
}

pub(crate) fn closer_of(open: char) -> char {
    match open {
        '(' => ')',
        '[' => ']',
        _ => '}',
    }
}

fn opener_of(close: char) -> char {
    match close {
        ')' => '(',
        ']' => '[',
        _ => '{',
    }
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

pub(crate) fn scan(src: &str) -> Scan {
    let mut out = Scan::default();
    let bytes = src.as_bytes();
    // Indices into `out.opens` of the brackets still open.
    let mut stack: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < src.len() {
        // `i` is always at a character boundary; `get` keeps that unprovable
        // fact from ever becoming a panic.
        let Some(c) = src.get(i..).and_then(|rest| rest.chars().next()) else {
            break;
        };
        let start = i;
        let depth = stack.len();
        if matches!(c, ' ' | '\t' | '\r' | '\n' | '\u{FEFF}') {
            i += c.len_utf8();
            continue;
        }
        if c == '#' {
            i = src
                .get(i..)
                .and_then(|rest| rest.find('\n'))
                .map_or(src.len(), |n| i + n);
            continue;
        }
        let kind = if c.is_ascii_alphabetic() || c == '_' {
            i = end_of_word(src, i);
            TokKind::Word
        } else if c.is_ascii_digit() {
            i = end_of_number(src, i);
            TokKind::Number
        } else if c == '"' {
            i = scan_string(src, i, &mut out);
            TokKind::Str
        } else {
            let two = bytes.get(i..i + 2).unwrap_or(&[]);
            i += if matches!(two, b"==" | b"!=" | b"<=" | b">=" | b"..") {
                2
            } else {
                c.len_utf8()
            };
            TokKind::Punct
        };
        let token = out.tokens.len();
        out.tokens.push(Token {
            kind,
            start,
            end: i,
            depth,
        });
        match c {
            '(' | '[' | '{' => {
                if stack.len() >= MAX_NESTING {
                    out.too_deep = Some(too_deep(start, c));
                    return out;
                }
                stack.push(out.opens.len());
                out.opens.push(Open {
                    token,
                    ch: c,
                    close: None,
                });
            }
            ')' | ']' | '}' => match stack.last() {
                Some(&top) if out.opens[top].ch == opener_of(c) => {
                    out.opens[top].close = Some(start);
                    stack.pop();
                }
                // A mismatched closer closes nothing; the opener stays open.
                Some(_) => {}
                None => out.unmatched_closers.push(start),
            },
            _ => {}
        }
    }
    out
}

fn too_deep(start: usize, c: char) -> Diagnostic {
    Diagnostic::new(
        Code::ParseError,
        Span::new(start, start + 1),
        format!("brackets are nested too deeply (more than {MAX_NESTING} levels)"),
    )
    .with_label(format!("this `{c}` is {} levels deep", MAX_NESTING + 1))
    .with_help("split the expression into several named bindings")
}

fn end_of_word(src: &str, mut i: usize) -> usize {
    let bytes = src.as_bytes();
    while i < bytes.len() && is_ident_char(bytes[i] as char) {
        i += 1;
    }
    i
}

/// The end of a number-like token: digits, letters, `_`, a `.` followed by a
/// digit, and a sign right after an exponent `e`. Over-eager on purpose, so
/// malformed numbers such as `1.5.3` or `12abc` are one token.
fn end_of_number(src: &str, mut i: usize) -> usize {
    let bytes = src.as_bytes();
    while i < bytes.len() {
        let b = bytes[i];
        let next_is_digit = bytes.get(i + 1).is_some_and(|n| n.is_ascii_digit());
        let after_exponent = i > 0 && matches!(bytes[i - 1], b'e' | b'E');
        if is_ident_char(b as char)
            || (b == b'.' && next_is_digit)
            || (matches!(b, b'+' | b'-') && after_exponent && next_is_digit)
        {
            i += 1;
        } else {
            break;
        }
    }
    i
}

/// Scans the string starting at the `"` at `start`; returns its end (after
/// the closing quote, or at the end of the line if it is unterminated).
fn scan_string(src: &str, start: usize, out: &mut Scan) -> usize {
    let mut chars = src.get(start + 1..).unwrap_or("").char_indices();
    while let Some((k, c)) = chars.next() {
        let at = start + 1 + k;
        match c {
            '"' => return at + 1,
            '\n' => {
                lex_error(out, start, unterminated(start));
                return at;
            }
            '\\' => match chars.next() {
                Some((_, '"' | '\\')) => {}
                Some((_, '\n')) | None => {
                    lex_error(out, start, unterminated(start));
                    return src.len().min(at + 1);
                }
                Some((_, e)) => {
                    let d = Diagnostic::new(
                        Code::ParseError,
                        Span::new(at, at + 1 + e.len_utf8()),
                        format!("unknown escape `\\{e}` in string"),
                    )
                    .with_label("unknown escape")
                    .with_help(
                        "the only escapes are `\\\"` and `\\\\`; in a path, `/` works on every system",
                    );
                    // Keyed by the string's start: that is where the grammar fails.
                    lex_error(out, start, d);
                }
            },
            _ => {}
        }
    }
    lex_error(out, start, unterminated(start));
    src.len()
}

fn unterminated(start: usize) -> Diagnostic {
    Diagnostic::new(
        Code::ParseError,
        Span::new(start, start + 1),
        "unterminated string",
    )
    .with_label("this string has no closing `\"`")
    .with_help("a string ends with `\"` on the same line; write `\\\"` for a quote inside it")
}

fn lex_error(out: &mut Scan, at: usize, d: Diagnostic) {
    if out.lex_error.is_none() {
        out.lex_error = Some((at, d));
    }
}

impl Scan {
    /// The index of the token that contains `offset` or starts at it.
    pub(crate) fn token_at(&self, offset: usize) -> Option<usize> {
        let idx = self.tokens.partition_point(|t| t.end <= offset);
        self.tokens
            .get(idx)
            .filter(|t| t.start <= offset)
            .map(|_| idx)
    }

    /// The index of the last token that ends at or before `offset`.
    pub(crate) fn token_before(&self, offset: usize) -> Option<usize> {
        self.tokens
            .partition_point(|t| t.end <= offset)
            .checked_sub(1)
    }

    /// The innermost bracket open at `offset`: opened before it and not
    /// closed before it.
    pub(crate) fn open_at(&self, offset: usize) -> Option<&Open> {
        self.opens
            .iter()
            .filter(|o| {
                self.tokens.get(o.token).is_some_and(|t| t.start < offset)
                    && o.close.is_none_or(|c| c >= offset)
            })
            .max_by_key(|o| o.token)
    }
}
