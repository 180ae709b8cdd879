//! Malformed specs: each must fail with a `parse-error` whose rendering
//! (color off) is snapshotted, so the wording and the caret are reviewed.

use specc_grammar::{parse, Code, Diagnostic, SourceFile};

/// Words from the grammar that must never reach a user.
const RULE_NAMES: [&str; 12] = [
    "_item",
    "kw_",
    "call_open",
    "index_open",
    "arg_eq",
    "rbrace",
    "lparen",
    "EOI",
    "slice_bound",
    "postfix",
    "param_decl",
    "metric_decl",
];

fn error(src: &str) -> Diagnostic {
    let d = match parse(src) {
        Ok(f) => panic!("expected {src:?} to fail, got {f:?}"),
        Err(d) => d,
    };
    assert_eq!(d.code, Code::ParseError);
    assert!(d.span.start <= d.span.end && d.span.end as usize <= src.len());
    for word in RULE_NAMES {
        assert!(!d.message.contains(word), "{word} in {:?}", d.message);
        assert!(!d.label.contains(word), "{word} in {:?}", d.label);
    }
    d
}

fn render(src: &str) -> String {
    error(src).render(&SourceFile::new("specs/bad.spec", src), false)
}

macro_rules! snap {
    ($name:ident, $src:expr) => {
        #[test]
        fn $name() {
            insta::assert_snapshot!(stringify!($name), render($src));
        }
    };
}

snap!(
    params_entry_without_colon,
    "params {\n  W1 [64, 128] = zeros\n}\n"
);
snap!(
    params_entry_with_equals_instead_of_colon,
    "params {\n  W1 = zeros\n}\n"
);
snap!(
    params_entry_without_initializer,
    "params { W1: [64, 128] = }"
);
snap!(
    params_shape_without_comma,
    "params {\n  W1: [64 128] = zeros\n}\n"
);
snap!(params_without_brace, "params W1: [1] = zeros");
snap!(
    unclosed_params_block,
    "model m\nparams {\n  W1: [64] = zeros\n\n"
);
snap!(model_without_name, "model\n");
snap!(label_without_colon, "label y int");
snap!(label_without_type, "label y:\n");
snap!(label_trailing_comma, "label y: float from a, b,\n");
snap!(train_entry_without_equals, "train { batch 64 }");
snap!(train_entry_with_colon, "train {\n  batch: 64\n}");
snap!(metric_without_value, "metrics { acc = }");
snap!(
    entries_without_separator,
    "train { batch = 64 steps = 3000 }"
);
snap!(data_without_call, "data csv\n");
snap!(
    unclosed_call_at_end,
    "optimizer adam(learning_rate = 0.001\n"
);
snap!(
    unclosed_call_before_next_line,
    "h = relu(x\nlogits = h @ W2\n"
);
snap!(unclosed_paren_at_end, "x = (1 +");
snap!(unclosed_list_at_end, "x = [1, 2");
snap!(mismatched_bracket, "x = [1, 2)");
snap!(mismatched_paren, "x = (a]");
snap!(unmatched_closer, "x = a)");
snap!(unmatched_brace_at_start, "}\nmodel m");
snap!(missing_comma_between_arguments, "h = f(a b)");
snap!(empty_argument, "h = relu(,)");
snap!(dangling_operator, "x = 1 +\n");
snap!(two_values_without_operator, "x = 1 2");
snap!(power_operator, "y = x ** 2");
snap!(semicolon, "model m;\n");
snap!(stray_character, "x = $");
snap!(double_equals_in_binding, "x == 1");
snap!(slice_with_two_colons, "x = y[1:2:3]");
snap!(empty_index, "x = y[]");
snap!(invalid_number, "x = 1.5.3");
snap!(number_ending_with_dot, "x = 2.");
snap!(number_starting_with_dot, "x = .5");
snap!(expression_as_statement, "relu(x) + 1");
snap!(number_followed_by_letters, "x = 12abc");
snap!(integer_too_large, "x = 99999999999999999999");
snap!(float_too_large, "x = 1e999");
snap!(float_too_small, "x = 1e-999");
snap!(
    unterminated_string,
    "data csv(\"data/digits.csv)\nmodel m\n"
);
snap!(unknown_escape, "data csv(\"data\\digits.csv\")");
snap!(chained_comparison, "x = a < b < c");
snap!(
    block_left_open_before_next_block,
    "features {\n  a = numeric(px0..px3)\nparams {\n  W: [1] = zeros\n}\n"
);
snap!(keyword_read_as_name, "x = 1 +\nparams { W: [1] = zeros }");
snap!(error_after_unicode_and_tabs, "x = \"héllo wörld\"\n\ty = é");
snap!(
    error_on_line_twelve,
    "model m\n\n\n\n\n\n\n\n\n\n\nloss = mean(x, axis = )\n"
);

#[test]
fn brackets_nested_too_deeply() {
    let src = format!("x = {}a{}", "(".repeat(129), ")".repeat(129));
    let d = error(&src);
    assert_eq!(
        d.message,
        "brackets are nested too deeply (more than 128 levels)"
    );
    assert_eq!(d.span.start as usize, 4 + 128);
    insta::assert_snapshot!(
        "brackets_nested_too_deeply",
        render(&format!("x = f({}", "[".repeat(200)))
    );
}

#[test]
fn expression_nested_too_deeply() {
    for src in [
        format!("x = {}a", "-".repeat(300)),
        format!("x = a{}", "[0]".repeat(300)),
        // Operators of different precedences nest: each bracket here holds a
        // sum whose last term is a product (two levels).
        format!("x = {}a{}", "(a + a * ".repeat(128), ")".repeat(128)),
    ] {
        let d = error(&src);
        assert!(
            d.message.starts_with("expression is too deeply nested"),
            "{}",
            d.message
        );
    }
    // 256 levels are fine.
    assert!(parse(&format!("x = {}a", "-".repeat(255))).is_ok());
    // A chain of one precedence is one level, whatever its length.
    for n in [255, 256, 1_000] {
        assert!(parse(&format!("x = a{}", " + a".repeat(n))).is_ok(), "{n}");
    }
}

#[test]
fn errors_at_the_end_point_after_the_last_token() {
    let src = "model m\nparams {\n  W1: [64] = zeros   # done\n\n\n";
    let d = error(src);
    let end = src.find("zeros").unwrap() + "zeros".len();
    assert_eq!((d.span.start as usize, d.span.end as usize), (end, end));
    assert_eq!(d.secondary.len(), 1);
    assert_eq!(&src[d.secondary[0].0.range()], "{");
}

#[test]
fn spans_are_at_most_one_character_for_syntax_errors() {
    for src in [
        "x = )",
        "x = é",
        "params { W [1] = zeros }",
        "x = \"abc",
        "model",
    ] {
        let d = error(src);
        let text = &src[d.span.range()];
        assert!(text.chars().count() <= 1, "{src:?}: {text:?}");
    }
}
