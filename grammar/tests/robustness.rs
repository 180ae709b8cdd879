//! `parse` and `render` must not panic on any input: random token soups,
//! mutations of a real spec, pathological nesting. Deterministic (xorshift).

use crate::common;

use specc_grammar::ast::{ExprKind, Item, Span};
use specc_grammar::{parse, Code, Diagnostic, SourceFile};

const SPEC: &str = include_str!("../../specs/digits_mlp.spec");

/// xorshift64*: tiny, deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const PIECES: &[&str] = &[
    "model",
    "data",
    "label",
    "features",
    "params",
    "optimizer",
    "train",
    "metrics",
    "from",
    "x",
    "W1",
    "relu",
    "true",
    "B",
    "px0..px63",
    "0",
    "16",
    "0.5",
    "1e-4",
    "1e",
    "1.",
    "1.5.3",
    "99999999999999999999",
    "\"s\"",
    "\"a\\\"b\"",
    "\"",
    "\\",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    "=",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "+",
    "-",
    "*",
    "/",
    "@",
    "..",
    ".",
    "#c\n",
    " ",
    " ",
    "\n",
    "\n",
    "\t",
    "\r\n",
    "é",
    "😀",
    "\u{0}",
    "\u{2028}",
    ";",
    "$",
];

/// Parses `src`; on success checks the AST's spans, on failure checks the
/// diagnostic's span and that it renders with the right location.
fn check(src: &str) {
    match parse(src) {
        Ok(file) => common::check_spans(src, &file),
        Err(d) => {
            assert!(d.span.start <= d.span.end, "{src:?}: {d:?}");
            assert!(d.span.end as usize <= src.len(), "{src:?}: {d:?}");
            assert!(
                src.is_char_boundary(d.span.start as usize),
                "{src:?}: {d:?}"
            );
            assert!(src.is_char_boundary(d.span.end as usize), "{src:?}: {d:?}");
            assert!(!d.message.is_empty());
            check_render(src, &d);
        }
    }
}

fn check_render(text: &str, d: &Diagnostic) {
    let src = SourceFile::new("f.spec", text);
    let out = d.render(&src, false);
    let (line, col) = src.line_col(d.span.start.min(d.span.end));
    assert!(
        out.contains(&format!("f.spec:{line}:{col}\n")),
        "{text:?}: location {line}:{col} missing in\n{out}"
    );
    d.render(&src, true);
}

#[test]
fn random_token_soups() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..2000 {
        let n = rng.below(40);
        let src: String = (0..n).map(|_| rng.pick(PIECES)).collect();
        check(&src);
    }
}

#[test]
fn mutations_of_the_doc_example() {
    let example = SPEC;
    check(example);
    let mut rng = Rng(42);
    for _ in 0..2000 {
        let mut src = example.to_string();
        for _ in 0..1 + rng.below(3) {
            let mut at = rng.below(src.len() + 1);
            while !src.is_char_boundary(at) {
                at -= 1;
            }
            match rng.below(3) {
                0 => src.insert_str(at, rng.pick(PIECES)),
                1 => {
                    let mut end = (at + 1 + rng.below(6)).min(src.len());
                    while !src.is_char_boundary(end) {
                        end += 1;
                    }
                    src.replace_range(at..end, "");
                }
                _ => src.truncate(at),
            }
        }
        check(&src);
    }
}

#[test]
fn random_spans_render() {
    let mut rng = Rng(7);
    let texts = ["", "\n", "model m", "a\r\nb\n", "é😀\n\tx\n", SPEC];
    for _ in 0..1000 {
        let text = texts[rng.below(texts.len())];
        let mut span = || {
            let limit = text.len() + 3;
            Span {
                start: rng.below(limit) as u32,
                end: rng.below(limit) as u32,
            }
        };
        let (a, b) = (span(), span());
        let d = Diagnostic::new(Code::InternalError, a, "m")
            .with_label("l")
            .with_secondary(b, "s")
            .with_help("h");
        check_render(text, &d);
    }
}

#[test]
fn pathological_nesting_is_an_error_not_a_crash() {
    let n = 10_000;
    for (open, close) in [("(", ")"), ("[", "]"), ("f(", ")"), ("params {", "}")] {
        let src = format!("x = {}a{}", open.repeat(n), close.repeat(n));
        let d = parse(&src).expect_err("too deep");
        assert!(d.message.contains("nested too deeply"), "{}", d.message);
        let src = format!("x = {}", open.repeat(n));
        assert!(parse(&src).is_err());
    }
    for src in [
        format!("x = {}a", "-".repeat(20_000)),
        format!("x = a{}", "[0]".repeat(20_000)),
    ] {
        let d = parse(&src).expect_err("too deep");
        assert!(d.message.contains("too deeply nested"), "{}", d.message);
    }
}

#[test]
fn long_flat_inputs_parse() {
    let src = "x = f(a, b)\n".repeat(5_000);
    assert_eq!(parse(&src).map(|f| f.items.len()), Ok(5_000));
    let src = format!("x = [{}]", "1, ".repeat(10_000));
    assert!(parse(&src).is_ok());
}

/// Operator chains are lists, not nesting: 100,000-term sums and products
/// parse, print (`--emit ast`) and drop without deep recursion, in the
/// 2 MiB stack of a test thread.
#[test]
fn long_operator_chains_are_flat() {
    for (op, n) in [("+", 100_000), ("/", 10_000)] {
        let src = format!("x = a{}", format!(" {op} b").repeat(n));
        let f = parse(&src).expect("a long chain parses");
        let Item::Let(b) = &f.items[0] else { panic!() };
        let ExprKind::Binary(first, rest) = &b.value.kind else {
            panic!("{:?}", b.value.kind)
        };
        assert_eq!(first.kind, ExprKind::Ident("a".into()));
        assert_eq!(rest.len(), n);
        assert!(rest.iter().all(|o| o.op.symbol() == op));
        assert_eq!(b.value.span.end as usize, src.len());
        let printed = specc_grammar::print::print_spec(&f);
        let expected = format!("{}a{}", format!("({op} ").repeat(n), " b)".repeat(n));
        assert!(printed.starts_with(&format!("(let x {expected})")));
    }
    // Mixed precedences: a sum of products is two levels.
    let n = 10_000;
    let src = format!("x = a{}", " + b * c".repeat(n));
    let f = parse(&src).expect("parses");
    let Item::Let(b) = &f.items[0] else { panic!() };
    let ExprKind::Binary(_, rest) = &b.value.kind else {
        panic!()
    };
    assert_eq!(rest.len(), n);
    assert!(matches!(&rest[7].rhs.kind, ExprKind::Binary(_, r) if r.len() == 1));
}
