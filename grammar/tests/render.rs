//! Rendering of diagnostics: the header, the location, the snippet with its
//! labels, the help lines; determinism and clamping of bad spans.

use specc_grammar::ast::Span;
use specc_grammar::diag::render_all;
use specc_grammar::{Code, Diagnostic, SourceFile};

const SPEC: &str = "model m\nparams {\n  W1: [64, 128] = zeros\n}\nh = relu(x @ W3)\n";

fn at(src: &str, needle: &str) -> Span {
    let start = src.find(needle).expect("needle");
    Span::new(start, start + needle.len())
}

fn unknown_name() -> Diagnostic {
    Diagnostic::new(Code::UnknownName, at(SPEC, "W3"), "unknown name `W3`")
        .with_label("not defined")
        .with_secondary(at(SPEC, "W1"), "a similar name is defined here")
        .with_help("did you mean `W1`?")
        .with_help("names must be defined before they are used")
}

#[test]
fn renders_header_location_snippet_labels_and_help() {
    let out = unknown_name().render(&SourceFile::new("specs/x.spec", SPEC), false);
    insta::assert_snapshot!("unknown_name", out);
    assert!(out.starts_with("error[unknown-name]: unknown name `W3`\n"));
    assert!(out.contains("specs/x.spec:5:14"));
    assert!(out.contains("5 | h = relu(x @ W3)"));
    assert!(
        out.contains("  |              ^^ not defined"),
        "a caret under the name:\n{out}"
    );
    assert!(out.contains("not defined"));
    assert!(out.contains("a similar name is defined here"));
    assert!(out.contains("help: did you mean `W1`?"));
    assert!(out.contains("help: names must be defined before they are used"));
    assert!(!out.contains('\u{1b}'));
    assert!(out.lines().all(|l| l == l.trim_end()), "no trailing spaces");
}

#[test]
fn rendering_is_deterministic() {
    let src = SourceFile::new("specs/x.spec", SPEC);
    let d = unknown_name();
    assert_eq!(d.render(&src, false), d.render(&src, false));
    assert_eq!(d.render(&src, true), d.render(&src, true));
}

#[test]
fn color_output_has_escapes_and_the_same_words() {
    let out = unknown_name().render(&SourceFile::new("specs/x.spec", SPEC), true);
    assert!(out.contains('\u{1b}'));
    // The help lines come last.
    let last = out.lines().last().unwrap();
    assert!(last.contains("help"), "{out}");
    for words in [
        "error[unknown-name]",
        "unknown name `W3`",
        "specs/x.spec:5:14",
        "did you mean",
    ] {
        assert!(out.contains(words), "{words} in {out}");
    }
}

#[test]
fn a_diagnostic_without_label_or_help() {
    let d = Diagnostic::new(Code::DuplicateName, at(SPEC, "zeros"), "something is off");
    let out = d.render(&SourceFile::new("a.spec", SPEC), false);
    insta::assert_snapshot!("no_label_no_help", out);
    assert!(!out.contains("help"));
}

#[test]
fn multi_line_secondary_span() {
    let d = Diagnostic::new(Code::DuplicateItem, at(SPEC, "W1"), "wrong entry")
        .with_label("here")
        .with_secondary(
            at(SPEC, "params {\n  W1: [64, 128] = zeros\n}"),
            "in this block",
        );
    let out = d.render(&SourceFile::new("a.spec", SPEC), false);
    insta::assert_snapshot!("multi_line_secondary", out);
    assert!(out.contains("a.spec:3:3"));
}

#[test]
fn empty_span_at_end_of_file() {
    for text in ["", "x", "x\n", "x\n\n", "x\r\n"] {
        let end = text.len();
        let d =
            Diagnostic::new(Code::ParseError, Span::new(end, end), "ends here").with_label("here");
        let src = SourceFile::new("e.spec", text);
        let out = d.render(&src, false);
        let (line, col) = src.line_col(end as u32);
        assert!(
            out.contains(&format!("e.spec:{line}:{col}")),
            "{text:?}:\n{out}"
        );
        assert!(out.contains("here"), "{text:?}:\n{out}");
    }
    let out = Diagnostic::new(Code::ParseError, Span::new(2, 2), "ends here")
        .with_label("expected `}`")
        .render(&SourceFile::new("e.spec", "x\n"), false);
    insta::assert_snapshot!("empty_span_after_final_newline", out);
}

#[test]
fn out_of_range_and_reversed_spans_are_clamped() {
    let src = SourceFile::new("c.spec", "model m\nx = é + 1\n");
    let spans = [
        Span::new(1000, 2000),
        Span { start: 9, end: 3 },
        Span::new(13, 14), // inside `é`
        Span::new(0, u32::MAX as usize),
        Span {
            start: u32::MAX,
            end: 0,
        },
    ];
    for span in spans {
        let d = Diagnostic::new(Code::InternalError, span, "m")
            .with_label("l")
            .with_secondary(Span::new(5000, 1), "s");
        let out = d.render(&src, false);
        let (line, col) = src.line_col(span.start.min(span.end));
        assert!(
            out.contains(&format!("c.spec:{line}:{col}")),
            "{span:?}:\n{out}"
        );
    }
}

#[test]
fn line_and_column_agree_with_line_col_on_odd_characters() {
    // Only \n breaks lines; other separators and control characters must not
    // shift the reported column or reach the terminal.
    let text = "a\rb\u{0B}c\u{0C}d\u{85}e\u{2028}f\u{2029}g\u{1b}[31m\nh\tij = 1";
    let src = SourceFile::new("odd.spec", text);
    for (offset, _) in text.char_indices() {
        let d = Diagnostic::new(Code::InternalError, Span::new(offset, offset + 1), "m")
            .with_label("l");
        let out = d.render(&src, false);
        let (line, col) = src.line_col(offset as u32);
        assert!(
            out.contains(&format!("odd.spec:{line}:{col}\n")),
            "{offset}:\n{out}"
        );
        assert!(!out.contains('\u{1b}'), "control characters are not echoed");
    }
}

#[test]
fn multi_line_messages_stay_on_one_line() {
    let d =
        Diagnostic::new(Code::InternalError, Span::new(0, 1), "first\nsecond").with_label("a\nb");
    let out = d.render(&SourceFile::new("m.spec", "model m"), false);
    assert!(out.starts_with("error[internal-error]: first second\n"));
}

#[test]
fn render_all_separates_diagnostics() {
    let src = SourceFile::new("specs/x.spec", SPEC);
    let a = unknown_name();
    let b = Diagnostic::new(Code::UnknownFunction, at(SPEC, "model"), "second problem");
    let out = render_all(&[a.clone(), b.clone()], &src, false);
    assert_eq!(
        out,
        format!("{}\n{}", a.render(&src, false), b.render(&src, false))
    );
    assert_eq!(render_all(&[], &src, false), "");
}
