//! Diagnostics: what every stage of specc reports when the user's input is wrong.
//!
//! Owns: the [`Diagnostic`] value (a [`Code`], a message, a primary span
//! with a label, secondary spans, help notes) and its rendering to text with
//! file:line:column and a caret under the offending source.
//! Invariants: rendering never panics, whatever the span (spans past the end
//! of the source are clamped); rendering without color is byte-for-byte
//! deterministic, so it can be snapshot-tested.

use crate::ast::Span;
use crate::code::Code;

/// A spec's text and the path it is reported under.
#[derive(Clone, Debug)]
pub struct SourceFile {
    pub path: String,
    pub text: String,
}

impl SourceFile {
    pub fn new(path: impl Into<String>, text: impl Into<String>) -> SourceFile {
        SourceFile {
            path: path.into(),
            text: text.into(),
        }
    }

    /// 1-based line and column (in characters) of a byte offset, clamped to the
    /// text (an offset inside a multi-byte character counts as that character).
    pub fn line_col(&self, offset: u32) -> (usize, usize) {
        line_col(&self.text, offset)
    }
}

/// 1-based line and column (in characters) of a byte offset of `text`.
fn line_col(text: &str, offset: u32) -> (usize, usize) {
    let offset = floor_char_boundary(text, offset as usize);
    let mut line = 1;
    let mut line_start = 0;
    for (i, c) in text.char_indices() {
        if i >= offset {
            break;
        }
        if c == '\n' {
            line += 1;
            line_start = i + 1;
        }
    }
    let col = text
        .get(line_start..offset)
        .map(|s| s.chars().count())
        .unwrap_or(0)
        + 1;
    (line, col)
}

/// The text a span points into: the spec, or a text of specc's library
/// (whose spans are offset by its base, [`crate::library`]).
struct Text<'a> {
    path: &'a str,
    text: &'a str,
    base: u32,
}

impl<'a> Text<'a> {
    fn of(src: &'a SourceFile, span: Span) -> Text<'a> {
        match crate::library::file_of(span) {
            Some(f) => Text {
                path: f.path,
                text: f.text,
                base: f.base,
            },
            None => Text {
                path: &src.path,
                text: &src.text,
                base: 0,
            },
        }
    }

    /// `span` as offsets into this text.
    fn local(&self, span: Span) -> Span {
        Span {
            start: span.start.saturating_sub(self.base),
            end: span.end.saturating_sub(self.base),
        }
    }

    fn line_col(&self, offset: u32) -> (usize, usize) {
        line_col(self.text, offset)
    }
}

/// One error about the user's input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The kind of error, printed as its stable kebab-case text
    /// (`error[unknown-name]`).
    pub code: Code,
    /// One line saying what is wrong.
    pub message: String,
    /// Where it is wrong.
    pub span: Span,
    /// The text printed under the caret.
    pub label: String,
    /// Other places worth showing (e.g. the first definition of a duplicate).
    pub secondary: Vec<(Span, String)>,
    /// `help:` lines.
    pub help: Vec<String>,
}

impl Diagnostic {
    pub fn new(code: Code, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            message: message.into(),
            span,
            label: String::new(),
            secondary: Vec::new(),
            help: Vec::new(),
        }
    }

    pub fn with_label(mut self, label: impl Into<String>) -> Diagnostic {
        self.label = label.into();
        self
    }

    pub fn with_secondary(mut self, span: Span, label: impl Into<String>) -> Diagnostic {
        self.secondary.push((span, label.into()));
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help.push(help.into());
        self
    }
}

/// The largest char boundary of `text` at or before `offset` (clamped to the text).
fn floor_char_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

const BOLD_RED: &str = "\u{1b}[1;31m";
const BOLD: &str = "\u{1b}[1m";
const BLUE: &str = "\u{1b}[1;34m";
const RED: &str = "\u{1b}[1;31m";
const RESET: &str = "\u{1b}[0m";

/// A label placed on a source line.
struct Mark<'a> {
    line: usize,
    /// 1-based column (in characters) of its start.
    col: usize,
    /// Display columns (0-based) of the underline.
    from: usize,
    to: usize,
    text: &'a str,
    primary: bool,
}

/// A source line as displayed: tabs become four spaces, control characters
/// U+FFFD (so nothing in a spec can move the terminal's cursor).
fn display_line(line: &str) -> String {
    line.chars()
        .map(|c| match c {
            '\t' => "    ".to_string(),
            c if c.is_control() => "\u{FFFD}".to_string(),
            c => c.to_string(),
        })
        .collect()
}

/// Display width of the first `chars` characters of a line.
fn display_width(line: &str, chars: usize) -> usize {
    line.chars()
        .take(chars)
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum()
}

/// Where a span's underline goes: its first line, from its start to its end
/// (or to the end of that line), at least one column wide.
fn place<'a>(src: &Text, span: Span, text: &'a str, primary: bool) -> Mark<'a> {
    let (a, b) = (span.start.min(span.end), span.start.max(span.end));
    let a = floor_char_boundary(src.text, a as usize) as u32;
    let b = floor_char_boundary(src.text, b as usize) as u32;
    let (l0, c0) = src.line_col(a);
    let (l1, c1) = src.line_col(b);
    let line = src
        .text
        .split('\n')
        .nth(l0 - 1)
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .unwrap_or("");
    let from = display_width(line, c0 - 1);
    let to = if l1 == l0 {
        display_width(line, c1 - 1)
    } else {
        display_width(line, line.chars().count())
    };
    Mark {
        line: l0,
        col: c0,
        from,
        to: to.max(from + 1),
        text,
        primary,
    }
}

impl Diagnostic {
    /// Renders this diagnostic in the style of rustc:
    ///
    /// ```text
    /// error[unknown-name]: unknown name `W3`
    ///   --> specs/x.spec:14:14
    ///    |
    /// 14 | logits = h @ W3 + b2
    ///    |              ^^ not defined
    ///    |
    ///    = help: did you mean `W2`?
    /// ```
    ///
    /// The primary span is underlined with `^`, secondary spans with `-`; a
    /// span over several lines is underlined to the end of its first line; an
    /// empty span gets one caret. With `color == false` the output is
    /// deterministic plain text without trailing spaces. Never panics:
    /// out-of-range, reversed or mid-character spans are clamped.
    pub fn render(&self, src: &SourceFile, color: bool) -> String {
        let paint = |code: &str, text: &str| {
            if color {
                format!("{code}{text}{RESET}")
            } else {
                text.to_string()
            }
        };
        // The texts the marks point into, the primary's first: the spec,
        // or a text of specc's library (a block's body).
        let mut spans: Vec<(Span, &str, bool)> = vec![(self.span, &self.label, true)];
        spans.extend(self.secondary.iter().map(|(s, l)| (*s, l.as_str(), false)));
        let mut texts: Vec<Text> = Vec::new();
        let mut marks: Vec<(usize, Mark)> = Vec::new();
        for (span, label, primary) in spans {
            let text = Text::of(src, span);
            let k = match texts.iter().position(|t| t.path == text.path) {
                Some(k) => k,
                None => {
                    texts.push(text);
                    texts.len() - 1
                }
            };
            let t = &texts[k];
            marks.push((k, place(t, t.local(span), label, primary)));
        }
        let gutter = marks
            .iter()
            .map(|(_, m)| m.line.to_string().len())
            .max()
            .unwrap_or(1);
        let pad = " ".repeat(gutter);
        let bar = paint(BLUE, "|");

        let mut out = String::new();
        if color {
            out.push_str(&format!(
                "{BOLD_RED}error[{}]{RESET}{BOLD}: {}{RESET}\n",
                self.code,
                one_line(&self.message)
            ));
        } else {
            out.push_str(&format!(
                "error[{}]: {}\n",
                self.code,
                one_line(&self.message)
            ));
        }
        for (k, text) in texts.iter().enumerate() {
            let here: Vec<&Mark> = marks
                .iter()
                .filter(|(f, _)| *f == k)
                .map(|(_, m)| m)
                .collect();
            // The spec's header points at the primary span; another text's
            // at its first mark.
            let at = if k == 0 {
                text.line_col(text.local(self.span).start.min(text.local(self.span).end))
            } else {
                (here[0].line, here[0].col)
            };
            if k > 0 {
                out.push_str(&format!("{pad} {bar}\n"));
            }
            out.push_str(&format!(
                "{pad}{} {}:{}:{}\n",
                paint(BLUE, if k == 0 { "-->" } else { ":::" }),
                text.path,
                at.0,
                at.1
            ));
            out.push_str(&format!("{pad} {bar}\n"));
            let lines: Vec<&str> = text
                .text
                .split('\n')
                .map(|l| l.strip_suffix('\r').unwrap_or(l))
                .collect();
            let mut shown: Vec<usize> = here.iter().map(|m| m.line).collect();
            shown.sort_unstable();
            shown.dedup();
            let mut prev: Option<usize> = None;
            for &l in &shown {
                if let Some(p) = prev {
                    if l == p + 2 {
                        let text = display_line(lines.get(p).copied().unwrap_or(""));
                        out.push_str(format!("{:>gutter$} {bar} {}", p + 1, text).trim_end());
                        out.push('\n');
                    } else if l > p + 2 {
                        out.push_str(&format!("{}\n", paint(BLUE, "...")));
                    }
                }
                let text = display_line(lines.get(l - 1).copied().unwrap_or(""));
                let head = format!("{:>gutter$} {bar} {text}", paint(BLUE, &l.to_string()));
                out.push_str(head.trim_end());
                out.push('\n');
                let mut on_line: Vec<&&Mark> = here.iter().filter(|m| m.line == l).collect();
                on_line.sort_by_key(|m| (m.from, !m.primary));
                for m in on_line {
                    let ch = if m.primary { "^" } else { "-" };
                    let underline = paint(
                        if m.primary { RED } else { BLUE },
                        &ch.repeat(m.to - m.from),
                    );
                    let label = if m.text.is_empty() {
                        String::new()
                    } else {
                        format!(
                            " {}",
                            paint(if m.primary { RED } else { BLUE }, &one_line(m.text))
                        )
                    };
                    out.push_str(&format!(
                        "{pad} {bar} {}{underline}{label}\n",
                        " ".repeat(m.from)
                    ));
                }
                prev = Some(l);
            }
        }
        if !self.help.is_empty() {
            out.push_str(&format!("{pad} {bar}\n"));
            for help in &self.help {
                let mut parts = help.lines();
                let first = parts.next().unwrap_or("");
                let line = format!(
                    "{pad} {} {}: {first}",
                    paint(BLUE, "="),
                    paint(BOLD, "help")
                );
                out.push_str(line.trim_end());
                out.push('\n');
                for more in parts {
                    out.push_str(&format!("{pad}         {more}\n"));
                }
            }
        }
        out
    }
}

/// Joins a multi-line text into one line (messages and labels are one line).
fn one_line(text: &str) -> String {
    if text.contains(['\n', '\r']) {
        text.split(['\n', '\r'])
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    } else {
        text.to_string()
    }
}

/// Renders several diagnostics, separated by blank lines.
pub fn render_all(diags: &[Diagnostic], src: &SourceFile, color: bool) -> String {
    diags
        .iter()
        .map(|d| d.render(src, color))
        .collect::<Vec<_>>()
        .join("\n")
}
