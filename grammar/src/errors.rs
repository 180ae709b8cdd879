//! Turning a pest parse failure into a [`Diagnostic`] a person can act on.
//!
//! Owns: the wording of every syntax error: which grammar rules are named how
//! ([`phrase`]), which expected tokens are worth mentioning, what was found
//! instead, and the context notes (unclosed brackets, the form of the
//! statement or block being written).
//!
//! Invariants: messages never contain pest rule names; the primary span is
//! one character wide at the offending token, or empty right after the last
//! token when the input ended too early; nothing here panics, whatever the
//! error position.

use crate::ast::Span;
use crate::code::Code;
use crate::diag::Diagnostic;
use crate::parser::Rule;
use crate::scan::{closer_of, Scan, TokKind, Token};

/// How an expected rule is worded and ranked in "expected A, B or C".
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    /// Something that starts a new construct (an expression, a name...).
    Start,
    /// Punctuation the construct needs next (`=`, `:`, `,`, closers).
    Punct,
    /// A token that would only extend what came before (an operator, `(`
    /// after a name): mentioned only when nothing else is expected.
    Continuation,
    /// The next statement or the end of the file.
    Boundary,
}

/// The words for one grammar rule as an expected token.
fn phrase(rule: Rule) -> (Class, &'static str) {
    use Class::*;
    match rule {
        Rule::file | Rule::item => (Boundary, "a statement"),
        Rule::EOI => (Boundary, "end of input"),
        Rule::model_item
        | Rule::data_item
        | Rule::eval_data_item
        | Rule::label_item
        | Rule::features_item
        | Rule::params_item
        | Rule::optimizer_item
        | Rule::optimizer_def_item
        | Rule::clip_item
        | Rule::ema_item
        | Rule::train_item
        | Rule::checkpoint_item
        | Rule::summaries_item
        | Rule::logging_item
        | Rule::evaluate_item
        | Rule::init_item
        | Rule::warm_item
        | Rule::metrics_item
        | Rule::outputs_item
        | Rule::statement_item
        | Rule::let_item
        | Rule::block_item
        | Rule::for_item
        | Rule::tuple_let_item => (Boundary, "a statement"),
        Rule::stmt
        | Rule::for_stmt
        | Rule::if_stmt
        | Rule::return_stmt
        | Rule::tuple_binding
        | Rule::kw_block
        | Rule::kw_for
        | Rule::kw_if
        | Rule::kw_return => (Start, "a statement"),
        Rule::block_param => (Start, "a parameter name"),
        Rule::opt_entry
        | Rule::opt_slot
        | Rule::opt_global
        | Rule::opt_update
        | Rule::opt_finish
        | Rule::opt_sparse
        | Rule::kw_slot
        | Rule::kw_global
        | Rule::kw_update
        | Rule::kw_finish
        | Rule::kw_sparse => (Start, "`slot`, `global`, `update`, `sparse` or `finish`"),
        Rule::block_scope | Rule::kw_scope => (Continuation, "`scope`"),
        Rule::kw_in => (Punct, "`in`"),
        Rule::kw_else => (Continuation, "`else`"),
        Rule::kw_model
        | Rule::kw_data
        | Rule::kw_eval_data
        | Rule::kw_label
        | Rule::kw_features
        | Rule::kw_params
        | Rule::kw_optimizer
        | Rule::kw_optimizer_def
        | Rule::kw_clip
        | Rule::kw_ema
        | Rule::kw_train
        | Rule::kw_checkpoint
        | Rule::kw_summaries
        | Rule::kw_logging
        | Rule::kw_evaluate
        | Rule::kw_init_from_checkpoint
        | Rule::kw_warm_start
        | Rule::kw_metrics
        | Rule::kw_outputs => (Boundary, "a statement"),
        Rule::kw_from => (Continuation, "`from`"),
        // Silent rules: pest never reports them, but the match must be total.
        Rule::WHITESPACE | Rule::COMMENT => (Punct, "whitespace"),
        Rule::column => (Start, "a column name or range"),
        Rule::index_item => (Start, "an index or slice"),
        Rule::primary => (Start, "an expression"),
        Rule::ident_char => (Start, "a name"),
        Rule::escape => (Start, "a string"),
        Rule::column_list | Rule::range => (Start, "a column name or range"),
        Rule::binding => (Start, "`NAME = EXPRESSION`"),
        Rule::param_decl => (Start, "a parameter `NAME: [DIMS] = INIT`"),
        Rule::param_option | Rule::kwarg => (Start, "`NAME = VALUE`"),
        Rule::metric_decl => (Start, "a metric"),
        Rule::assignment_map => (
            Start,
            "an assignment map `{ \"CHECKPOINT NAME\": \"PARAMETER\" }`",
        ),
        Rule::map_entry => (Start, "an entry `\"CHECKPOINT NAME\": \"PARAMETER\"`"),
        Rule::warm_arg => (Start, "`NAME = VALUE`"),
        Rule::warm_map => (Start, "a map `{ \"VARIABLE\": VALUE }`"),
        Rule::warm_entry => (Start, "an entry `\"VARIABLE\": VALUE`"),
        Rule::shape => (Start, "a shape `[d0, d1, ...]`"),
        Rule::expr
        | Rule::disjunction
        | Rule::conjunction
        | Rule::comparison
        | Rule::sum
        | Rule::product
        | Rule::unary
        | Rule::postfix
        | Rule::slice_bound
        | Rule::paren
        | Rule::list
        | Rule::number
        | Rule::boolean
        | Rule::neg => (Start, "an expression"),
        Rule::string | Rule::string_body => (Start, "a string"),
        Rule::slice => (Start, "an index or slice"),
        Rule::index_suffix | Rule::index_open => (Continuation, "`[`"),
        Rule::call | Rule::call_open => (Continuation, "`(`"),
        Rule::arg => (Start, "an argument"),
        Rule::ident | Rule::callee => (Start, "a name"),
        Rule::cmp_op | Rule::add_op | Rule::mul_op | Rule::and_op | Rule::or_op => {
            (Continuation, "an operator")
        }
        Rule::dotdot => (Continuation, "`..`"),
        Rule::tuple_comma => (Continuation, "`,`"),
        Rule::arg_eq => (Continuation, "`=`"),
        Rule::eq => (Punct, "`=`"),
        Rule::colon => (Punct, "`:`"),
        Rule::comma => (Punct, "`,`"),
        Rule::lbrace => (Punct, "`{`"),
        Rule::rbrace => (Punct, "`}`"),
        Rule::lparen => (Punct, "`(`"),
        Rule::rparen => (Punct, "`)`"),
        Rule::lbracket => (Punct, "`[`"),
        Rule::rbracket => (Punct, "`]`"),
    }
}

/// Words that start a statement form (or, for `from`, continue `label`).
const KEYWORDS: [&str; 13] = [
    "model",
    "data",
    "label",
    "features",
    "params",
    "optimizer",
    "train",
    "checkpoint",
    "summaries",
    "logging",
    "evaluate",
    "metrics",
    "from",
];

const BLOCK_KEYWORDS: [&str; 8] = [
    "features",
    "params",
    "train",
    "checkpoint",
    "summaries",
    "logging",
    "evaluate",
    "metrics",
];

/// Converts pest's error into our diagnostic. `scan` is the token scan of
/// the same `src`.
pub(crate) fn from_pest(src: &str, scan: &Scan, err: &pest::error::Error<Rule>) -> Diagnostic {
    use pest::error::{ErrorVariant, InputLocation};
    let pos = match err.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((start, _)) => start,
    };
    let at = skip_trivia(src, pos.min(src.len()));
    if let Some((lex_at, d)) = &scan.lex_error {
        if *lex_at <= at {
            return d.clone();
        }
    }
    match &err.variant {
        ErrorVariant::ParsingError { positives, .. } => {
            Context::new(src, scan, at).diagnose(positives)
        }
        // pest's own call or stack limits: only reachable by pathological input.
        ErrorVariant::CustomError { .. } => Diagnostic::new(
            Code::ParseError,
            Span::new(at, at),
            "the spec is too deeply nested to parse",
        )
        .with_label("parsing gave up here"),
    }
}

/// Skips whitespace and comments from `offset`.
fn skip_trivia(src: &str, mut offset: usize) -> usize {
    let bytes = src.as_bytes();
    while offset < bytes.len() {
        match bytes[offset] {
            b' ' | b'\t' | b'\r' | b'\n' => offset += 1,
            // The UTF-8 byte order mark, U+FEFF.
            0xEF if bytes.get(offset..offset + 3) == Some(&[0xEF, 0xBB, 0xBF]) => offset += 3,
            b'#' => {
                offset = src
                    .get(offset..)
                    .and_then(|rest| rest.find('\n'))
                    .map_or(src.len(), |n| offset + n)
            }
            _ => break,
        }
    }
    offset
}

/// What surrounds the error position.
struct Context<'a> {
    src: &'a str,
    scan: &'a Scan,
    /// Where the offending token starts (or the end of the text).
    at: usize,
    /// The offending token; `None` at the end of the input.
    found: Option<Token>,
    /// The token before it.
    prev: Option<usize>,
}

impl<'a> Context<'a> {
    fn new(src: &'a str, scan: &'a Scan, at: usize) -> Context<'a> {
        let found_idx = scan.token_at(at);
        let found = found_idx.and_then(|i| scan.tokens.get(i)).copied();
        let at = found.map_or(at, |t| t.start);
        let prev = scan.token_before(at);
        Context {
            src,
            scan,
            at,
            found,
            prev,
        }
    }

    fn char_at(&self, offset: usize) -> Option<char> {
        self.src.get(offset..).and_then(|s| s.chars().next())
    }

    fn text(&self, t: &Token) -> &'a str {
        self.src.get(t.start..t.end).unwrap_or("")
    }

    fn prev_token(&self) -> Option<&'a Token> {
        self.prev.and_then(|i| self.scan.tokens.get(i))
    }

    fn prev_text(&self) -> Option<&'a str> {
        self.prev_token().map(|t| self.text(t))
    }

    /// "`x`", "a string", "end of input".
    fn found_words(&self) -> String {
        match &self.found {
            None if self.at >= self.src.len() => "end of input".to_string(),
            None => describe_char(self.char_at(self.at)),
            Some(t) => match t.kind {
                TokKind::Str => "a string".to_string(),
                TokKind::Punct => {
                    let text = self.text(t);
                    match text.chars().count() {
                        1 => describe_char(text.chars().next()),
                        _ => quote(text),
                    }
                }
                TokKind::Word | TokKind::Number => quote(self.text(t)),
            },
        }
    }

    /// The primary span: the first character of the offending token, or an
    /// empty span right after the last token at the end of the input.
    fn span(&self) -> Span {
        match &self.found {
            Some(t) => {
                let width = self.text(t).chars().next().map_or(0, char::len_utf8);
                Span::new(t.start, t.start + width)
            }
            None if self.at < self.src.len() => {
                let width = self.char_at(self.at).map_or(0, char::len_utf8);
                Span::new(self.at, self.at + width)
            }
            None => {
                let end = self.prev_token().map_or(0, |t| t.end);
                Span::new(end, end)
            }
        }
    }

    fn diagnose(&self, positives: &[Rule]) -> Diagnostic {
        let found = self.found_words();
        let span = self.span();
        let found_char = self.found.map(|t| self.text(&t)).unwrap_or("");
        let open = self.scan.open_at(self.at);

        // A closing bracket that closes nothing.
        if self.found.is_some() && self.scan.unmatched_closers.contains(&self.at) {
            let opener = match found_char {
                ")" => '(',
                "]" => '[',
                _ => '{',
            };
            return self.with_context(
                Diagnostic::new(Code::ParseError, span, format!("unmatched `{found_char}`"))
                    .with_label(format!("this `{found_char}` has no matching `{opener}`")),
            );
        }

        // A malformed number, such as `1.5.3` or `12abc`.
        if let Some(t) = self.found.filter(|t| t.kind == TokKind::Number) {
            if !is_valid_number(self.text(&t)) {
                return Diagnostic::new(Code::ParseError, span, format!("invalid number {found}"))
                    .with_label("not a valid number")
                    .with_help("numbers are written like `16`, `0.5`, `1e-4` or `2.5E3`");
            }
        }

        let expected = self.expected(positives);
        let after = match self.prev_token() {
            Some(t) if t.kind != TokKind::Str => format!(" after {}", quote(self.text(t))),
            _ => String::new(),
        };

        // The input ended inside a bracket: say which one.
        if self.found.is_none() {
            if let Some(open) = open {
                let closer = closer_of(open.ch);
                let closer_words = format!("`{closer}`");
                let open_span = self.token_span(open.token);
                if expected.contains(&closer_words) {
                    let what = self.describe_open(open.token, open.ch);
                    return self.with_context(
                        Diagnostic::new(
                            Code::ParseError,
                            span,
                            format!("expected {closer_words} to close {what}, found end of input"),
                        )
                        .with_label(format!("expected {closer_words}"))
                        .with_secondary(open_span, format!("unclosed `{}`", open.ch)),
                    );
                }
            }
        }

        let list = join(&expected);
        let mut d = Diagnostic::new(
            Code::ParseError,
            span,
            format!("expected {list}{after}, found {found}"),
        )
        .with_label(format!("expected {list}"));
        if let Some(open) = open {
            let mismatched = matches!(found_char, ")" | "]" | "}")
                && !found_char.starts_with(closer_of(open.ch));
            if open.close.is_none() || mismatched {
                d = d.with_secondary(
                    self.token_span(open.token),
                    format!("unclosed `{}`", open.ch),
                );
            }
        }
        self.with_context(d)
    }

    /// The words for the expected tokens, deduplicated, most useful first.
    fn expected(&self, positives: &[Rule]) -> Vec<String> {
        let mut rules: Vec<Rule> = positives.to_vec();
        // After a keyword, `=` and `(` are only there because a binding or a
        // call may be named like the keyword: not what the user is writing.
        let after_keyword = self.prev_text().is_some_and(|p| KEYWORDS.contains(&p));
        if after_keyword
            && rules
                .iter()
                .any(|r| !matches!(r, Rule::eq | Rule::call_open))
        {
            rules.retain(|r| !matches!(r, Rule::eq | Rule::call_open));
        }
        let mut phrases: Vec<(Class, &'static str)> = rules.iter().map(|r| phrase(*r)).collect();
        phrases.sort_by_key(|(class, _)| *class);
        let has = |c: Class| phrases.iter().any(|(class, _)| *class == c);
        let (has_start, has_punct, has_boundary) =
            (has(Class::Start), has(Class::Punct), has(Class::Boundary));
        phrases.retain(|(class, words)| match class {
            // Operators only help when nothing structural is expected here.
            Class::Continuation if has_start || has_punct => false,
            Class::Continuation if has_boundary => *words == "an operator",
            _ => true,
        });
        if phrases.iter().any(|(_, w)| *w == "a statement") {
            phrases.retain(|(_, w)| *w != "end of input");
        }
        if phrases.iter().any(|(_, w)| *w == "an index or slice") {
            phrases.retain(|(_, w)| *w != "an expression");
        }
        let in_label = matches!(self.statement_keyword(), Some("label" | "from"));
        let mut out: Vec<String> = Vec::new();
        for (_, words) in phrases {
            let words = match (words, self.prev_text()) {
                // In `label NAME: TYPE from COLUMNS`.
                ("a name" | "a string", Some("from" | ",")) if in_label => "a column name or range",
                ("a name", Some(":")) if in_label => "a type (`int` or `float`)",
                (w, _) => w,
            };
            if !out.iter().any(|o| o == words) {
                out.push(words.to_string());
            }
        }
        if out.is_empty() {
            out.push("something else".to_string());
        }
        out
    }

    fn token_span(&self, idx: usize) -> Span {
        self.scan
            .tokens
            .get(idx)
            .map_or(Span::default(), |t| Span::new(t.start, t.end))
    }

    /// "the `params` block", "the call to `adam`", "the list".
    fn describe_open(&self, idx: usize, ch: char) -> String {
        let before = idx
            .checked_sub(1)
            .and_then(|i| self.scan.tokens.get(i))
            .map(|t| (t.kind, self.text(t)));
        match (ch, before) {
            ('{', Some((TokKind::Word, w))) => format!("the `{w}` block"),
            ('{', _) => "the block".to_string(),
            ('(', Some((TokKind::Word, w))) => format!("the call to `{w}`"),
            ('(', _) => "the parenthesis".to_string(),
            ('[', Some((TokKind::Word, _))) => "the index".to_string(),
            ('[', Some((_, ")" | "]"))) => "the index".to_string(),
            ('[', Some((_, ":"))) => "the shape".to_string(),
            _ => "the list".to_string(),
        }
    }

    /// Adds notes about the statement or block the error is in.
    fn with_context(&self, mut d: Diagnostic) -> Diagnostic {
        let found_text = self.found.map(|t| self.text(&t)).unwrap_or("");
        let prev_text = self.prev_text().unwrap_or("");
        let open = self.scan.open_at(self.at);

        // `params {` where `params` could not start a block.
        if found_text == "{" && BLOCK_KEYWORDS.contains(&prev_text) {
            match open {
                Some(o) if o.ch == '{' && o.close.is_none() => {
                    let outer = self.describe_open(o.token, '{');
                    let o_span = self.token_span(o.token);
                    d.secondary.retain(|(span, _)| *span != o_span);
                    d = d
                        .with_secondary(o_span, format!("{outer} is still open"))
                        .with_help(format!("is a `}}` missing before `{prev_text}`?"));
                    return d;
                }
                None => {
                    d = d.with_help(format!(
                        "`{prev_text}` was read as a name in the expression before it; \
                         is that expression missing something?"
                    ));
                    return d;
                }
                _ => {}
            }
        }

        let prev_is_number = self
            .prev_token()
            .is_some_and(|t| t.kind == TokKind::Number && t.end == self.at);
        let digits_follow = self
            .char_at(self.at + 1)
            .is_some_and(|c| c.is_ascii_digit());
        match (prev_text, found_text) {
            (number, ".") if prev_is_number => {
                return d.with_help(format!("write `{number}.0`: a `.` needs digits after it"));
            }
            (_, ".") if digits_follow => {
                return d.with_help("write `0.5` rather than `.5`: a `.` needs digits before it");
            }
            (")", "+" | "-" | "*" | "/" | "@" | "<" | ">" | "<=" | ">=" | "==" | "!=")
                if open.is_none() && self.statement_keyword().is_none() =>
            {
                return d.with_help(
                    "only a call can stand alone as a statement; \
                     to compute a value, bind it: `NAME = EXPRESSION`",
                );
            }
            ("*", "*") => {
                return d.with_help("there is no `**` operator: write `square(x)` or `x * x`");
            }
            (_, ";") => return d.with_help("no `;` is needed: a statement ends by itself"),
            (_, "==") if open.is_none() && self.statement_keyword().is_none() => {
                return d.with_help("`==` compares two values; a binding is `NAME = EXPRESSION`");
            }
            _ => {}
        }

        // Inside a block: show the form of its entries.
        if let Some(o) = open.filter(|o| o.ch == '{') {
            let keyword = o
                .token
                .checked_sub(1)
                .and_then(|i| self.scan.tokens.get(i))
                .map(|t| self.text(t));
            if let Some(help) = keyword.and_then(block_help) {
                d = d.with_help(help);
            }
            return d;
        }
        if open.is_some() {
            return d;
        }

        // At the top level: the form of the statement being written.
        if let Some(help) = self.statement_keyword().and_then(statement_help) {
            d = d.with_help(help);
        }
        d
    }

    /// The keyword starting the top-level statement the error is in, if the
    /// statement is a keyword form (not a binding or call named like one).
    fn statement_keyword(&self) -> Option<&'a str> {
        let tokens = &self.scan.tokens;
        let mut i = self.prev?;
        loop {
            let t = tokens.get(i)?;
            let before = self.src.get(..t.start).unwrap_or("");
            let line_start = before.rfind('\n').map_or(0, |n| n + 1);
            let first_on_line = before
                .get(line_start..)
                .is_some_and(|s| s.trim().is_empty());
            if t.depth == 0 && first_on_line {
                break;
            }
            i = i.checked_sub(1)?;
        }
        let word = tokens.get(i).map(|t| self.text(t))?;
        let next = tokens.get(i + 1).map(|t| self.text(t));
        if matches!(next, Some("=" | "(")) {
            return None;
        }
        KEYWORDS.iter().find(|k| **k == word).copied()
    }
}

fn block_help(keyword: &str) -> Option<&'static str> {
    Some(match keyword {
        "features" => "each entry of `features` is `NAME = numeric(COLUMNS, normalizer = EXPR)`",
        "params" => {
            "each entry of `params` is `NAME: [d0, d1, ...] = INIT`, \
             e.g. `W1: [64, 128] = glorot_uniform(seed = 1)`"
        }
        "train" => "each entry of `train` is `key = value`, e.g. `batch = 64`",
        "checkpoint" => "each entry of `checkpoint` is `key = value`, e.g. `every_steps = 1000`",
        "summaries" => "each entry of `summaries` is `key = value`, e.g. `every_steps = 100`",
        "logging" => "each entry of `logging` is `key = value`, e.g. `tensors = [loss]`",
        "evaluate" => "each entry of `evaluate` is `key = value`, e.g. `every_steps = 500`",
        "metrics" => {
            "each entry of `metrics` is a metric, optionally named: \
             `acc = accuracy(label, argmax(logits))`"
        }
        _ => return None,
    })
}

fn statement_help(keyword: &str) -> Option<&'static str> {
    Some(match keyword {
        "model" => "the model is named with `model NAME`, e.g. `model digits_mlp`",
        "data" => {
            "the data is `data csv(\"PATH\")` or `data synthetic(rows = N, features = F, ...)`"
        }
        "label" | "from" => {
            "a label is `label NAME: int`, `label NAME: float` or `label NAME: float from COLUMNS`"
        }
        "optimizer" => "the optimizer is a call, e.g. `optimizer adam(learning_rate = 0.001)`",
        "features" => "a features block is `features { NAME = numeric(COLUMNS) ... }`",
        "params" => "a params block is `params { NAME: [d0, d1] = INIT ... }`",
        "train" => "a train block is `train { batch = 64, steps = 1000 }`",
        "checkpoint" => {
            "a checkpoint block is `checkpoint { dir = \"runs/NAME\", every_steps = 1000, keep = 5 }`"
        }
        "summaries" => "a summaries block is `summaries { dir = \"runs/NAME\", every_steps = 100 }`",
        "logging" => "a logging block is `logging { every_steps = 100, tensors = [loss] }`",
        "evaluate" => "an evaluate block is `evaluate { every_steps = 500 }`",
        "metrics" => "a metrics block is `metrics { accuracy(label, argmax(logits)) }`",
        _ => return None,
    })
}

/// `A`, `A or B`, `A, B or C`.
fn join(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// Puts code in backticks, shortened if long.
fn quote(text: &str) -> String {
    const MAX: usize = 24;
    if text.chars().count() > MAX {
        let short: String = text.chars().take(MAX - 3).collect();
        format!("`{short}...`")
    } else {
        format!("`{text}`")
    }
}

fn describe_char(c: Option<char>) -> String {
    match c {
        None => "end of input".to_string(),
        Some('`') => "a backtick".to_string(),
        Some(c) if c.is_control() || c.is_whitespace() || c == '\u{FEFF}' => {
            format!("the character U+{:04X}", c as u32)
        }
        Some(c) => format!("`{c}`"),
    }
}

/// Whether a number-like token is a number of the grammar: `16`, `0.5`, `1e-4`.
fn is_valid_number(text: &str) -> bool {
    let b = text.as_bytes();
    let digits = |mut i: usize| {
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        (i > start).then_some(i)
    };
    let Some(mut i) = digits(0) else {
        return false;
    };
    if b.get(i) == Some(&b'.') {
        match digits(i + 1) {
            Some(j) => i = j,
            None => return false,
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        match digits(i) {
            Some(j) => i = j,
            None => return false,
        }
    }
    i == b.len()
}
