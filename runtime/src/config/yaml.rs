//! YAML for run configuration: a tree with positions, and quoting for the
//! files specc writes.
//!
//! Owns: reading a YAML document (with the maintained `saphyr-parser`) into
//! a [`Node`] tree where every node knows its line and column, so that
//! every message about a config file can name `FILE:LINE:COLUMN`; YAML 1.2's
//! core schema for plain scalars ([`Node::int`], [`Node::number`],
//! [`Node::bool`], [`Node::is_null`]); and [`quote`] / [`block`], the
//! scalar forms [`super::record`] writes.
//!
//! Invariants: reading never panics; one document at most; a mapping never
//! holds a key twice (an error naming both lines); anchors and aliases are
//! refused (a run configuration has no use for them, and refusing them
//! bounds the tree by the text).

use std::borrow::Cow;

use saphyr_parser::{Event, Parser, ScalarStyle};

/// A position in a YAML text: line and column, both from 1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pos {
    pub line: usize,
    pub col: usize,
}

/// A YAML node and where it starts.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub kind: Kind,
    pub pos: Pos,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// A scalar's text; `plain` when unquoted (only plain scalars are typed:
    /// `"5"` is a string, `5` an integer).
    Scalar {
        text: String,
        plain: bool,
    },
    Seq(Vec<Node>),
    /// Entries in document order.
    Map(Vec<(Node, Node)>),
}

impl Node {
    /// The text of a scalar (any scalar reads as a string).
    pub fn str(&self) -> Option<&str> {
        match &self.kind {
            Kind::Scalar { text, .. } => Some(text),
            _ => None,
        }
    }

    fn plain(&self) -> Option<&str> {
        match &self.kind {
            Kind::Scalar { text, plain: true } => Some(text),
            _ => None,
        }
    }

    /// `~`, `null`, or nothing (YAML 1.2 core schema).
    pub fn is_null(&self) -> bool {
        matches!(self.plain(), Some("" | "~" | "null" | "Null" | "NULL"))
    }

    /// A plain `true` or `false` (any of YAML 1.2's spellings).
    pub fn bool(&self) -> Option<bool> {
        match self.plain()? {
            "true" | "True" | "TRUE" => Some(true),
            "false" | "False" | "FALSE" => Some(false),
            _ => None,
        }
    }

    /// A plain integer: decimal with an optional sign, `0o` octal or `0x` hex.
    pub fn int(&self) -> Option<i64> {
        let t = self.plain()?;
        if let Some(h) = t.strip_prefix("0x") {
            return i64::from_str_radix(h, 16).ok();
        }
        if let Some(o) = t.strip_prefix("0o") {
            return i64::from_str_radix(o, 8).ok();
        }
        let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        t.parse().ok()
    }

    /// A plain number: an integer or a float (`1e-3`, `.5`, `.inf`, `.nan`).
    pub fn number(&self) -> Option<f64> {
        if let Some(i) = self.int() {
            return Some(i as f64);
        }
        let t = self.plain()?;
        match t {
            ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => return Some(f64::INFINITY),
            "-.inf" | "-.Inf" | "-.INF" => return Some(f64::NEG_INFINITY),
            ".nan" | ".NaN" | ".NAN" => return Some(f64::NAN),
            _ => {}
        }
        // [-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?
        let b = t.strip_prefix(['-', '+']).unwrap_or(t).as_bytes();
        let mut i = 0;
        let digits = |i: &mut usize| {
            let s = *i;
            while *i < b.len() && b[*i].is_ascii_digit() {
                *i += 1;
            }
            *i > s
        };
        let int_part = digits(&mut i);
        if i < b.len() && b[i] == b'.' {
            i += 1;
            if !digits(&mut i) && !int_part {
                return None;
            }
        } else if !int_part {
            return None;
        }
        if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
            i += 1;
            if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
                i += 1;
            }
            if !digits(&mut i) {
                return None;
            }
        }
        if i != b.len() {
            return None;
        }
        t.parse().ok()
    }

    /// What the node is, for "expected X, found Y".
    pub fn describe(&self) -> String {
        match &self.kind {
            Kind::Seq(_) => "a list".into(),
            Kind::Map(_) => "a mapping".into(),
            Kind::Scalar { .. } if self.is_null() => "nothing (null)".into(),
            Kind::Scalar { text, plain } => {
                let short: String = text.chars().take(40).collect();
                if *plain && self.bool().is_some() {
                    format!("the boolean `{short}`")
                } else if *plain && self.number().is_some() {
                    format!("the number `{short}`")
                } else {
                    format!("the string {short:?}")
                }
            }
        }
    }
}

enum Open {
    Seq(Pos, Vec<Node>),
    Map(Pos, Vec<(Node, Node)>, Option<Node>),
}

fn pos(m: &saphyr_parser::Marker) -> Pos {
    Pos {
        line: m.line(),
        col: m.col() + 1,
    }
}

/// Reads one YAML document; `None` when the text holds none (empty or only
/// comments). Errors are `LINE:COLUMN: message` (the caller adds the file).
pub fn parse(text: &str) -> Result<Option<Node>, String> {
    let mut stack: Vec<Open> = Vec::new();
    let mut root: Option<Node> = None;
    let mut documents = 0;
    for ev in Parser::new_from_str(text) {
        let (ev, span) = ev.map_err(|e| {
            let p = pos(e.marker());
            format!("{}:{}: {}", p.line, p.col, e.info())
        })?;
        let at = pos(&span.start);
        let done = match ev {
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    return Err(format!(
                        "{}:{}: a second YAML document; a run configuration is one document",
                        at.line, at.col
                    ));
                }
                None
            }
            Event::Alias(_) => {
                return Err(format!(
                    "{}:{}: aliases (`*name`) are not supported in a run configuration",
                    at.line, at.col
                ))
            }
            Event::Scalar(v, style, anchor, _) => {
                if anchor != 0 {
                    return Err(format!(
                        "{}:{}: anchors (`&name`) are not supported in a run configuration",
                        at.line, at.col
                    ));
                }
                Some(Node {
                    kind: Kind::Scalar {
                        text: Cow::into_owned(v),
                        plain: style == ScalarStyle::Plain,
                    },
                    pos: at,
                })
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) if anchor != 0 => {
                return Err(format!(
                    "{}:{}: anchors (`&name`) are not supported in a run configuration",
                    at.line, at.col
                ))
            }
            Event::SequenceStart(..) => {
                stack.push(Open::Seq(at, Vec::new()));
                None
            }
            Event::MappingStart(..) => {
                stack.push(Open::Map(at, Vec::new(), None));
                None
            }
            Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                Some(Open::Seq(p, items)) => Some(Node {
                    kind: Kind::Seq(items),
                    pos: p,
                }),
                Some(Open::Map(p, entries, _)) => Some(Node {
                    kind: Kind::Map(entries),
                    pos: p,
                }),
                None => None,
            },
            _ => None,
        };
        let Some(node) = done else { continue };
        match stack.last_mut() {
            None => root = Some(node),
            Some(Open::Seq(_, items)) => items.push(node),
            Some(Open::Map(_, entries, key)) => match key.take() {
                None => {
                    if let Some((prev, _)) = entries
                        .iter()
                        .find(|(k, _)| k.str().is_some() && k.str() == node.str())
                    {
                        return Err(format!(
                            "{}:{}: the key `{}` is given twice (first on line {})",
                            node.pos.line,
                            node.pos.col,
                            node.str().unwrap_or(""),
                            prev.pos.line
                        ));
                    }
                    *key = Some(node);
                }
                Some(k) => entries.push((k, node)),
            },
        }
    }
    Ok(root)
}

/// `s` as a YAML double-quoted scalar (exact for any text).
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c == '\u{7f}' || c == '\u{feff}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `s` as the value of a mapping key whose key is at `indent` spaces: a
/// literal block (`|2+` / `|2-`, readable and exact) when the text allows
/// one, else [`quote`]. The caller ends the line after it, as after any
/// value: that line break is part of a `|2+` block's text.
pub fn block(s: &str, indent: usize) -> String {
    let core = s.trim_end_matches('\n');
    let blockable = !core.is_empty()
        && s.chars()
            .all(|c| c == '\n' || c == '\t' || (c >= ' ' && c != '\u{7f}' && c != '\u{feff}'));
    if !blockable {
        return quote(s);
    }
    let pad = " ".repeat(indent + 2);
    let breaks = s.len() - core.len();
    let mut out = format!("|2{}", if breaks > 0 { '+' } else { '-' });
    for line in core.split('\n') {
        out.push('\n');
        if !line.is_empty() {
            out.push_str(&pad);
            out.push_str(line);
        }
    }
    for _ in 1..breaks {
        out.push('\n');
    }
    out
}
