//! The `checkpoint` state file: TF's `CheckpointState` in protobuf text
//! format, which names the latest checkpoint of a directory.
//!
//! Owns: [`CheckpointState`] (writing it as Python's `text_format` does:
//! `model_checkpoint_path`, then each `all_model_checkpoint_paths`, each
//! `all_model_checkpoint_timestamps`, `last_preserved_timestamp`; strings
//! C-escaped, non-ASCII bytes as octal), its tolerant parser (any field
//! order, comments, unknown fields skipped, relative or absolute paths), and
//! [`latest_checkpoint`] (`tf.train.latest_checkpoint`).
//!
//! Invariants: [`CheckpointState::to_text`] of what `tf.compat.v1.train.Saver`
//! records is byte-identical to TF's file; parsing never panics, and a line
//! it cannot read is an error naming the file and the line.

use std::path::{Path, PathBuf};

use super::bundle::index_path;
use super::CheckpointError;
use super::CheckpointErrorKind::{Corrupt, NotFound};

/// The state file's name in a checkpoint directory.
pub const STATE_FILE: &str = "checkpoint";

/// TF's `CheckpointState` proto.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckpointState {
    /// The latest checkpoint's prefix (relative to the directory, or absolute).
    pub model_checkpoint_path: String,
    /// Every checkpoint not yet deleted, oldest first (the latest last).
    pub all_model_checkpoint_paths: Vec<String>,
    /// Seconds since the epoch at which each of them was saved (written by
    /// `tf.train.CheckpointManager`; `tf.compat.v1.train.Saver` leaves it out).
    pub all_model_checkpoint_timestamps: Vec<f64>,
    /// When the last checkpoint kept by `keep_checkpoint_every_n_hours` was saved.
    pub last_preserved_timestamp: Option<f64>,
}

fn escape(s: &str, out: &mut String) {
    for &b in s.as_bytes() {
        match b {
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            b'"' => out.push_str("\\\""),
            b'\'' => out.push_str("\\'"),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\{b:03o}")),
        }
    }
}

/// A double as Python's `repr` prints it in the range timestamps live in.
fn fmt_double(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e16 {
        format!("{v:.1}")
    } else if v.is_nan() {
        "nan".to_string()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        format!("{v}")
    }
}

impl CheckpointState {
    /// The file's text, as TF writes it.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let string_field = |s: &mut String, name: &str, v: &str| {
            s.push_str(name);
            s.push_str(": \"");
            escape(v, s);
            s.push_str("\"\n");
        };
        string_field(&mut s, "model_checkpoint_path", &self.model_checkpoint_path);
        for p in &self.all_model_checkpoint_paths {
            string_field(&mut s, "all_model_checkpoint_paths", p);
        }
        for t in &self.all_model_checkpoint_timestamps {
            s.push_str(&format!(
                "all_model_checkpoint_timestamps: {}\n",
                fmt_double(*t)
            ));
        }
        if let Some(t) = self.last_preserved_timestamp.filter(|&t| t != 0.0) {
            s.push_str(&format!("last_preserved_timestamp: {}\n", fmt_double(t)));
        }
        s
    }

    /// Parses the text of the state file `file` (named in errors).
    pub fn parse(text: &str, file: &Path) -> Result<CheckpointState, CheckpointError> {
        let mut st = CheckpointState::default();
        for (i, line) in text.lines().enumerate() {
            let err =
                |m: String| CheckpointError::new(Corrupt, file, format!("line {}: {m}", i + 1));
            let mut rest = line.trim();
            while !rest.is_empty() && !rest.starts_with('#') {
                let name_len = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                if name_len == 0 {
                    return Err(err(format!(
                        "expected a field name, found {:?}",
                        trunc(rest)
                    )));
                }
                let name = &rest[..name_len];
                rest = rest[name_len..].trim_start();
                rest = rest
                    .strip_prefix(':')
                    .ok_or_else(|| err(format!("expected `:` after `{name}`")))?
                    .trim_start();
                let value;
                (value, rest) =
                    parse_value(rest).map_err(|m| err(format!("field `{name}`: {m}")))?;
                rest = rest
                    .trim_start()
                    .trim_start_matches([';', ','])
                    .trim_start();
                let number = |v: &Value| match v {
                    Value::Number(x) => Ok(*x),
                    Value::Text(_) => Err(err(format!("field `{name}` needs a number"))),
                };
                let text = |v: Value| match v {
                    Value::Text(s) => Ok(s),
                    Value::Number(_) => Err(err(format!("field `{name}` needs a quoted string"))),
                };
                match name {
                    "model_checkpoint_path" => st.model_checkpoint_path = text(value)?,
                    "all_model_checkpoint_paths" => {
                        st.all_model_checkpoint_paths.push(text(value)?)
                    }
                    "all_model_checkpoint_timestamps" => {
                        st.all_model_checkpoint_timestamps.push(number(&value)?)
                    }
                    "last_preserved_timestamp" => {
                        st.last_preserved_timestamp = Some(number(&value)?)
                    }
                    _ => {}
                }
            }
        }
        if st.model_checkpoint_path.is_empty() {
            return Err(CheckpointError::new(
                Corrupt,
                file,
                "no `model_checkpoint_path`: not a checkpoint state file",
            ));
        }
        Ok(st)
    }

    /// The state file of `dir`; `Ok(None)` when there is none.
    pub fn read(dir: &Path) -> Result<Option<CheckpointState>, CheckpointError> {
        let file = dir.join(STATE_FILE);
        match std::fs::read(&file) {
            Ok(bytes) => {
                let text = String::from_utf8(bytes).map_err(|_| {
                    CheckpointError::new(
                        Corrupt,
                        &file,
                        "not UTF-8 text: not a checkpoint state file",
                    )
                })?;
                CheckpointState::parse(&text, &file).map(Some)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(CheckpointError::io(&file, "read the checkpoint state", &e)),
        }
    }

    /// `path` of this state (relative to `dir`, or absolute) as a path.
    pub fn resolve(dir: &Path, path: &str) -> PathBuf {
        let p = Path::new(path);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            dir.join(p)
        }
    }
}

fn trunc(s: &str) -> &str {
    match s.char_indices().nth(20) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

enum Value {
    Text(String),
    Number(f64),
}

/// One value (adjacent quoted strings concatenate) and the rest of the line.
fn parse_value(s: &str) -> Result<(Value, &str), String> {
    if s.starts_with('"') || s.starts_with('\'') {
        let mut bytes = Vec::new();
        let mut rest = s;
        while let Some(q) = rest.chars().next().filter(|&c| c == '"' || c == '\'') {
            rest = unquote(&rest[1..], q as u8, &mut bytes)?.trim_start();
        }
        let text = String::from_utf8(bytes).map_err(|_| "the string is not UTF-8".to_string())?;
        return Ok((Value::Text(text), rest));
    }
    let end = s
        .find(|c: char| c.is_whitespace() || c == ';' || c == ',' || c == '#')
        .unwrap_or(s.len());
    let word = &s[..end];
    let x = match word.to_ascii_lowercase().as_str() {
        "inf" | "infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        "nan" => f64::NAN,
        w => w
            .trim_end_matches(['f', 'F'])
            .parse::<f64>()
            .map_err(|_| format!("expected a quoted string or a number, found {:?}", trunc(s)))?,
    };
    Ok((Value::Number(x), &s[end..]))
}

/// Reads a string body after its opening quote `q` into `out`; returns what
/// follows the closing quote.
fn unquote<'a>(s: &'a str, q: u8, out: &mut Vec<u8>) -> Result<&'a str, String> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            c if c == q => return Ok(&s[i + 1..]),
            b'\\' => {
                let c = *b.get(i + 1).ok_or("a `\\` ends the line")?;
                i += 2;
                match c {
                    b'n' => out.push(b'\n'),
                    b'r' => out.push(b'\r'),
                    b't' => out.push(b'\t'),
                    b'a' => out.push(7),
                    b'b' => out.push(8),
                    b'f' => out.push(12),
                    b'v' => out.push(11),
                    b'0'..=b'7' => {
                        let mut v = u32::from(c - b'0');
                        for _ in 0..2 {
                            match b.get(i) {
                                Some(&d @ b'0'..=b'7') => {
                                    v = v * 8 + u32::from(d - b'0');
                                    i += 1;
                                }
                                _ => break,
                            }
                        }
                        out.push(u8::try_from(v).map_err(|_| "octal escape above \\377")?);
                    }
                    b'x' => {
                        let hex: String = s[i..]
                            .chars()
                            .take_while(char::is_ascii_hexdigit)
                            .take(2)
                            .collect();
                        let v =
                            u8::from_str_radix(&hex, 16).map_err(|_| "`\\x` without hex digits")?;
                        i += hex.len();
                        out.push(v);
                    }
                    b'"' | b'\'' | b'\\' | b'?' => out.push(c),
                    other => return Err(format!("unknown escape `\\{}`", other as char)),
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Err("unterminated string".to_string())
}

/// `tf.train.latest_checkpoint(dir)`: the prefix the state file of `dir`
/// names; `Ok(None)` without a state file; an error when the state file is
/// unreadable or names a checkpoint whose index is gone.
pub fn latest_checkpoint(dir: impl AsRef<Path>) -> Result<Option<PathBuf>, CheckpointError> {
    let dir = dir.as_ref();
    let Some(st) = CheckpointState::read(dir)? else {
        return Ok(None);
    };
    let prefix = CheckpointState::resolve(dir, &st.model_checkpoint_path);
    let index = index_path(&prefix);
    if !index.is_file() {
        return Err(CheckpointError::new(
            NotFound,
            dir.join(STATE_FILE),
            format!(
                "names the checkpoint {}, but {} does not exist",
                st.model_checkpoint_path,
                index.display()
            ),
        ));
    }
    Ok(Some(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_escapes_and_timestamps() {
        let st = CheckpointState {
            model_checkpoint_path: "dir \"q\"/é\\model.ckpt-3".to_string(),
            all_model_checkpoint_paths: vec![
                "a".to_string(),
                "dir \"q\"/é\\model.ckpt-3".to_string(),
            ],
            all_model_checkpoint_timestamps: vec![1700000000.0, 1700000001.25],
            last_preserved_timestamp: Some(1699999999.5),
        };
        let text = st.to_text();
        assert!(
            text.contains("all_model_checkpoint_timestamps: 1700000000.0\n"),
            "{text}"
        );
        assert!(text.contains("\\303\\251"), "{text}");
        assert_eq!(
            CheckpointState::parse(&text, Path::new("checkpoint")).unwrap(),
            st
        );
    }

    #[test]
    fn garbage_names_file_and_line() {
        let e = CheckpointState::parse(
            "model_checkpoint_path: \"a\"\n\nall_model_checkpoint_paths \"b\"\n",
            Path::new("d/checkpoint"),
        )
        .unwrap_err();
        assert_eq!(e.file, Path::new("d/checkpoint"));
        assert!(e.message.starts_with("line 3:"), "{e}");
        for bad in [
            "model_checkpoint_path: \"a",
            "model_checkpoint_path: 1x",
            "@",
        ] {
            assert!(
                CheckpointState::parse(bad, Path::new("c")).is_err(),
                "{bad}"
            );
        }
    }
}
