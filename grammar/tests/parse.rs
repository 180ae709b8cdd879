//! Specs that must parse, and the AST they must produce.

use crate::common;

use common::{binding, call, expr, parse_ok, sexpr};
use specc_grammar::ast::*;

const DOC_EXAMPLE: &str = r#"# digits_mlp: 64 -> 128 relu -> 10 on the UCI digits
model digits_mlp

data csv("data/digits.csv")
label label: int

features {
  pixels = numeric(px0..px63, normalizer = x / 16)
}

params {
  W1: [64, 128] = glorot_uniform(seed = 1)
  b1: [128]     = zeros
  W2: [128, 10] = glorot_uniform(seed = 2)
  b2: [10]      = zeros
}

h      = relu(pixels @ W1 + b1)
logits = h @ W2 + b2
assert_shape(h, [B, 128])
loss   = mean(sparse_softmax_cross_entropy(label, logits))

optimizer adam(learning_rate = 0.001)
train { batch = 64, steps = 3000, shuffle = 1797, seed = 7 }
metrics { accuracy(label, argmax(logits)) }
"#;

fn text(src: &str, span: Span) -> &str {
    &src[span.range()]
}

#[test]
fn the_readme_shows_the_bundled_default_spec() {
    // The README's example is specs/digits_mlp.spec from `model` on; keep them in sync.
    let readme = include_str!("../../README.md");
    let spec = include_str!("../../specs/digits_mlp.spec");
    let body = &spec[spec.find("model digits_mlp").expect("model item")..];
    assert!(
        readme.contains(body.trim_end()),
        "README.md's example differs from specs/digits_mlp.spec"
    );
}

#[test]
fn parses_the_bundled_default_spec() {
    let f = parse_ok(include_str!("../../specs/digits_mlp.spec"));
    assert_eq!(f.items.len(), 14);
    assert!(matches!(&f.items[13], Item::Outputs(o) if o.entries.len() == 2));
}

#[test]
fn parses_the_doc_example() {
    let src = DOC_EXAMPLE;
    let f = parse_ok(src);
    assert_eq!(f.items.len(), 12);

    let Item::Model(name) = &f.items[0] else {
        panic!("{:?}", f.items[0])
    };
    assert_eq!(name.name, "digits_mlp");
    assert_eq!(text(src, name.span), "digits_mlp");

    let Item::Data(data) = &f.items[1] else {
        panic!()
    };
    assert_eq!(call(data), r#"csv("data/digits.csv")"#);
    assert_eq!(text(src, data.span), r#"csv("data/digits.csv")"#);

    let Item::Label(label) = &f.items[2] else {
        panic!()
    };
    assert_eq!(
        (label.name.name.as_str(), label.dtype.name.as_str()),
        ("label", "int")
    );
    assert_eq!(label.columns, None);
    assert_eq!(text(src, label.span), "label label: int");

    let Item::Features(features) = &f.items[3] else {
        panic!()
    };
    assert_eq!(text(src, features.keyword), "features");
    assert!(text(src, features.span).starts_with("features {"));
    assert!(text(src, features.span).ends_with('}'));
    assert_eq!(features.entries.len(), 1);
    assert_eq!(features.entries[0].name.name, "pixels");
    assert_eq!(
        sexpr(&features.entries[0].value),
        "numeric(px0..px63, normalizer=(/ x 16))"
    );

    let Item::Params(params) = &f.items[4] else {
        panic!()
    };
    let names: Vec<&str> = params
        .entries
        .iter()
        .map(|p| p.name.name.as_str())
        .collect();
    assert_eq!(names, ["W1", "b1", "W2", "b2"]);
    let w1 = &params.entries[0];
    assert_eq!(
        w1.shape.iter().map(sexpr).collect::<Vec<_>>(),
        ["64", "128"]
    );
    assert_eq!(text(src, w1.shape_span), "[64, 128]");
    assert_eq!(sexpr(&w1.init), "glorot_uniform(seed=1)");
    assert_eq!(
        text(src, w1.span),
        "W1: [64, 128] = glorot_uniform(seed = 1)"
    );
    assert_eq!(sexpr(&params.entries[1].init), "zeros");
    assert!(params.entries.iter().all(|p| p.options.is_empty()));

    let h = binding(&f, "h");
    assert_eq!(sexpr(h), "relu((+ (@ pixels W1) b1))");
    assert_eq!(text(src, h.span), "relu(pixels @ W1 + b1)");
    let logits = binding(&f, "logits");
    assert_eq!(sexpr(logits), "(+ (@ h W2) b2)");
    let ExprKind::Binary(lhs, rest) = &logits.kind else {
        panic!()
    };
    assert_eq!(rest[0].op, BinOp::Add);
    assert_eq!(text(src, rest[0].op_span), "+");
    assert_eq!(text(src, lhs.span), "h @ W2");
    assert_eq!(text(src, logits.span), "h @ W2 + b2");

    let Item::Statement(assert) = &f.items[7] else {
        panic!()
    };
    assert_eq!(call(assert), "assert_shape(h, [B 128])");
    assert_eq!(
        sexpr(binding(&f, "loss")),
        "mean(sparse_softmax_cross_entropy(label, logits))"
    );

    let Item::Optimizer(opt) = &f.items[9] else {
        panic!()
    };
    assert_eq!(call(opt), "adam(learning_rate=0.001f)");

    let Item::Train(train) = &f.items[10] else {
        panic!()
    };
    let settings: Vec<String> = train
        .entries
        .iter()
        .map(|a| format!("{}={}", a.name.as_ref().unwrap(), sexpr(&a.value)))
        .collect();
    assert_eq!(
        settings,
        ["batch=64", "steps=3000", "shuffle=1797", "seed=7"]
    );
    assert_eq!(text(src, train.keyword), "train");
    assert_eq!(
        text(src, train.span),
        "train { batch = 64, steps = 3000, shuffle = 1797, seed = 7 }"
    );

    let Item::Metrics(metrics) = &f.items[11] else {
        panic!()
    };
    assert_eq!(metrics.entries.len(), 1);
    assert_eq!(metrics.entries[0].name, None);
    assert_eq!(
        sexpr(&metrics.entries[0].value),
        "accuracy(label, argmax(logits))"
    );
}

#[test]
fn precedence_and_associativity() {
    assert_eq!(expr("a + b * c"), "(+ a (* b c))");
    assert_eq!(expr("a * b + c"), "(+ (* a b) c)");
    assert_eq!(expr("a - b - c"), "(- (- a b) c)");
    assert_eq!(expr("a / b / c"), "(/ (/ a b) c)");
    assert_eq!(expr("a @ b * c / d"), "(/ (* (@ a b) c) d)");
    assert_eq!(expr("-a @ b"), "(@ (neg a) b)");
    assert_eq!(expr("- -a"), "(neg (neg a))");
    assert_eq!(expr("-x[0]"), "(neg (index x 0))");
    assert_eq!(expr("a - -b"), "(- a (neg b))");
    assert_eq!(expr("x[0, :]"), "(index x 0 :)");
    assert_eq!(expr("x[i, a:b, :, a:, :b]"), "(index x i a:b : a: :b)");
    assert_eq!(expr("x[0][1:]"), "(index (index x 0) 1:)");
    assert_eq!(expr("f(x)[0]"), "(index f(x) 0)");
    assert_eq!(expr("a @ b + c > 0"), "(> (+ (@ a b) c) 0)");
    assert_eq!(expr("a == b + 1"), "(== a (+ b 1))");
    assert_eq!(expr("(a + b) * c"), "(* (+ a b) c)");
    assert_eq!(expr("(a < b) * (b >= c)"), "(* (< a b) (>= b c))");
    for op in ["==", "!=", "<", "<=", ">", ">="] {
        assert_eq!(expr(&format!("a {op} b")), format!("({op} a b)"));
    }
}

#[test]
fn and_binds_tighter_than_or_and_looser_than_comparisons() {
    assert_eq!(expr("a > 0 and b == \"x\""), "(and (> a 0) (== b \"x\"))");
    assert_eq!(
        expr("a > 0 or b < 1 and c != 2"),
        "(or (> a 0) (and (< b 1) (!= c 2)))"
    );
    assert_eq!(expr("(a or b) and c"), "(and (or a b) c)");
    assert_eq!(expr("a and b and c"), "(and (and a b) c)");
    // Not reserved: a name that starts with a keyword, or is one.
    assert_eq!(expr("android + order"), "(+ android order)");
    assert_eq!(expr("f(and, or)"), "f(and, or)");
}

#[test]
fn parenthesized_spans_include_the_parentheses() {
    let src = "x = (a + b) * c";
    let f = parse_ok(src);
    let e = binding(&f, "x");
    assert_eq!(text(src, e.span), "(a + b) * c");
    let ExprKind::Binary(lhs, _) = &e.kind else {
        panic!()
    };
    assert_eq!(text(src, lhs.span), "(a + b)");
}

#[test]
fn literals() {
    assert_eq!(expr("16"), "16");
    assert_eq!(expr("0.5"), "0.5f");
    assert_eq!(expr("1e-4"), "0.0001f");
    assert_eq!(expr("2E+3"), "2000.0f");
    assert_eq!(expr("9007199254740992"), "9007199254740992");
    assert_eq!(expr("true"), "true");
    assert_eq!(expr("false"), "false");
    assert_eq!(expr("truest"), "truest");
    assert_eq!(expr("[]"), "[]");
    assert_eq!(expr("[1, 2,]"), "[1 2]");
    assert_eq!(expr("[[1, 2, 3], [4, 5, 6]]"), "[[1 2 3] [4 5 6]]");
    assert_eq!(
        expr(r#""a \"quoted\" \\ path""#),
        r#""a \"quoted\" \\ path""#
    );
    let f = parse_ok(r#"x = "say \"hi\" \\o/""#);
    let ExprKind::Str(s) = &binding(&f, "x").kind else {
        panic!()
    };
    assert_eq!(s, r#"say "hi" \o/"#);
    let f = parse_ok("x = 3\ny = 3.0\nz = 3e0");
    let is_int = |n| match binding(&f, n).kind {
        ExprKind::Number { is_int, .. } => is_int,
        _ => panic!(),
    };
    assert!(is_int("x"));
    assert!(!is_int("y"));
    assert!(!is_int("z"));
}

#[test]
fn calls_with_positional_and_keyword_arguments() {
    assert_eq!(
        expr("reduce_sum(x, axis = [0, -1], keepdims = false)"),
        "reduce_sum(x, axis=[0 (neg 1)], keepdims=false)"
    );
    assert_eq!(expr("f()"), "f()");
    assert_eq!(expr("f(a,)"), "f(a)");
    assert_eq!(expr("f (a)"), "f(a)");
    assert_eq!(expr("f(a == b)"), "f((== a b))");
    assert_eq!(expr("f(\n  a,\n  b = 2,\n)"), "f(a, b=2)");
}

#[test]
fn blocks_loops_and_tuples() {
    let src = "block dense(x, units, activation = None) {\n  params { kernel: [shape(x)[-1], units] = zeros }\n  y = x @ kernel\n  if units > 1 {\n    y = y * 2\n  } else {\n    y = y\n  }\n  for i in range(2) {\n    y = relu(y)\n  }\n  check_numerics(y, \"y\")\n  return activation(y), y\n}\nfor i in range(1, 5, 2) { h = dense(h, i) }\na, b = dense(x, 4 // 2 % 3)";
    let f = parse_ok(src);
    assert_eq!(f.items.len(), 3);
    let Item::BlockDef(d) = &f.items[0] else {
        panic!("{:?}", f.items[0])
    };
    assert_eq!(d.name.name, "dense");
    let params: Vec<(&str, bool)> = d
        .params
        .iter()
        .map(|p| (p.name.name.as_str(), p.default.is_some()))
        .collect();
    assert_eq!(
        params,
        [("x", false), ("units", false), ("activation", true)]
    );
    let kinds: Vec<&str> = d
        .body
        .iter()
        .map(|s| match s {
            Stmt::Params(_) => "params",
            Stmt::Let(_) => "let",
            Stmt::If(i) if i.then.len() == 1 && i.otherwise.len() == 1 => "if-else",
            Stmt::For(l) if l.var.name == "i" && l.body.len() == 1 => "for",
            Stmt::Call(_) => "call",
            Stmt::Return(r) if r.values.len() == 2 => "return2",
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        ["params", "let", "if-else", "for", "call", "return2"]
    );
    let Item::For(l) = &f.items[1] else { panic!() };
    assert_eq!(l.range.args.len(), 3);
    let Item::TupleLet(t) = &f.items[2] else {
        panic!()
    };
    let names: Vec<&str> = t.names.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(sexpr(&t.value), "dense(x, (% (// 4 2) 3))");
    let f = parse_ok("block conv2d_layer(x) scope \"conv2d\" {\n  return x\n}\nscope = 2");
    let Item::BlockDef(d) = &f.items[0] else {
        panic!()
    };
    assert_eq!(d.scope.as_ref().map(|s| s.value.as_str()), Some("conv2d"));
    assert_eq!(sexpr(binding(&f, "scope")), "2");
    // The new words are names where no statement form fits.
    let f = parse_ok(
        "block = 1
for = block
return = 2
in = 3 % 2
else = in // 1
if = f(if)",
    );
    assert_eq!(f.items.len(), 6);
    assert_eq!(sexpr(binding(&f, "else")), "(// in 1)");
}

#[test]
fn keywords_are_not_reserved() {
    let src = "label label: int\nlabel = 3\ndata = label + 1\ntrain = data\nmodel = f(model)\nx = params * metrics";
    let f = parse_ok(src);
    let Item::Label(l) = &f.items[0] else {
        panic!()
    };
    assert_eq!(
        (l.name.name.as_str(), l.dtype.name.as_str()),
        ("label", "int")
    );
    assert_eq!(sexpr(binding(&f, "label")), "3");
    assert_eq!(sexpr(binding(&f, "data")), "(+ label 1)");
    assert_eq!(sexpr(binding(&f, "train")), "data");
    assert_eq!(sexpr(binding(&f, "model")), "f(model)");
    assert_eq!(sexpr(binding(&f, "x")), "(* params metrics)");
    // A keyword followed by more letters is a name.
    let f = parse_ok("modelx = 1\nlabels = 2\nfrom_x = 3");
    assert_eq!(f.items.len(), 3);
}

#[test]
fn label_forms() {
    let src = "label y: float from y0, y1..y3, z";
    let f = parse_ok(src);
    let Item::Label(l) = &f.items[0] else {
        panic!()
    };
    assert_eq!(l.dtype.name, "float");
    let cols: Vec<String> = l.columns.as_ref().unwrap().iter().map(sexpr).collect();
    assert_eq!(cols, ["y0", "y1..y3", "z"]);
    assert_eq!(text(src, l.span), src);
    let ExprKind::Range(a, b) = &l.columns.as_ref().unwrap()[1].kind else {
        panic!()
    };
    assert_eq!((text(src, a.span), text(src, b.span)), ("y1", "y3"));

    // Headers that are not names are quoted, exactly as in the file.
    let src =
        "label y: float from \"größe\", px0..px3, \"price ($)\"\nx = numeric(\"Größe der Klasse\")";
    let f = parse_ok(src);
    let Item::Label(l) = &f.items[0] else {
        panic!()
    };
    let cols: Vec<String> = l.columns.as_ref().unwrap().iter().map(sexpr).collect();
    assert_eq!(cols, ["\"größe\"", "px0..px3", "\"price ($)\""]);
    assert_eq!(
        text(src, l.columns.as_ref().unwrap()[2].span),
        "\"price ($)\""
    );
    assert_eq!(sexpr(binding(&f, "x")), "numeric(\"Größe der Klasse\")");
    let printed = specc_grammar::print::print_spec(&f);
    assert!(printed.starts_with("(label y float (from \"größe\" px0..px3 \"price ($)\"))"));

    // `from` on the next line that is not followed by columns is a binding.
    let f = parse_ok("label y: float\nfrom = 3");
    assert_eq!(f.items.len(), 2);
    let Item::Label(l) = &f.items[0] else {
        panic!()
    };
    assert_eq!(l.columns, None);
}

#[test]
fn params_with_options_and_constants() {
    let src = "params {\n  c: [2, 3] = constant(value = [[1, 2, 3], [4, 5, 6]]), trainable = false\n  d: [] = zeros, trainable = true, other = 1, e: [1] = ones\n}";
    let f = parse_ok(src);
    let Item::Params(p) = &f.items[0] else {
        panic!()
    };
    assert_eq!(p.entries.len(), 3);
    let c = &p.entries[0];
    assert_eq!(sexpr(&c.init), "constant(value=[[1 2 3] [4 5 6]])");
    assert_eq!(c.options.len(), 1);
    assert_eq!(c.options[0].name.as_ref().unwrap().name, "trainable");
    assert_eq!(sexpr(&c.options[0].value), "false");
    assert_eq!(
        text(src, c.span),
        "c: [2, 3] = constant(value = [[1, 2, 3], [4, 5, 6]]), trainable = false"
    );
    let d = &p.entries[1];
    assert!(d.shape.is_empty());
    assert_eq!(d.options.len(), 2);
    assert_eq!(p.entries[2].name.name, "e");
}

#[test]
fn comments_everywhere() {
    let src = "# leading\nmodel # after keyword\n  m # after name\nparams { # open\n  # inside\n  W: [ # in shape\n 2 ] = # before init\n zeros # after init\n} # after block\nx = a + # mid expression\n  b # end\n# trailing";
    let f = parse_ok(src);
    assert_eq!(f.items.len(), 3);
    let x = binding(&f, "x");
    assert_eq!(sexpr(x), "(+ a b)");
    assert_eq!(text(src, x.span), "a + # mid expression\n  b");
    let Item::Params(p) = &f.items[1] else {
        panic!()
    };
    assert_eq!(
        text(src, p.entries[0].span),
        "W: [ # in shape\n 2 ] = # before init\n zeros"
    );
}

#[test]
fn blocks_with_commas_newlines_and_nothing() {
    let f = parse_ok(
        "train { batch = 64, steps = 10, }\ntrain {\n batch = 1\n steps = 2,\n seed = 3\n}",
    );
    let sizes: Vec<usize> = f
        .items
        .iter()
        .map(|i| match i {
            Item::Train(b) => b.entries.len(),
            _ => panic!(),
        })
        .collect();
    assert_eq!(sizes, [2, 3]);

    let f = parse_ok("features {}\nparams { }\ntrain {\n}\nmetrics { # none\n}");
    assert_eq!(f.items.len(), 4);
    for item in &f.items {
        let n = match item {
            Item::Features(b) => b.entries.len(),
            Item::Params(b) => b.entries.len(),
            Item::Train(b) => b.entries.len(),
            Item::Metrics(b) => b.entries.len(),
            _ => panic!(),
        };
        assert_eq!(n, 0);
    }

    let f = parse_ok("metrics { accuracy(label, argmax(logits)), acc2 = mean(loss)\n auc(label, p, num_thresholds = 200) }");
    let Item::Metrics(m) = &f.items[0] else {
        panic!()
    };
    let names: Vec<Option<&str>> = m
        .entries
        .iter()
        .map(|e| e.name.as_ref().map(|n| n.name.as_str()))
        .collect();
    assert_eq!(names, [None, Some("acc2"), None]);
}

#[test]
fn empty_and_blank_inputs() {
    assert!(parse_ok("").items.is_empty());
    assert!(parse_ok("  \n\t\r\n").items.is_empty());
    assert!(parse_ok("# only a comment").items.is_empty());
    assert!(parse_ok("# comment\n# another\n").items.is_empty());
}

#[test]
fn byte_order_mark() {
    assert_eq!(parse_ok("\u{FEFF}model m\nx = 1").items.len(), 2);
}

#[test]
fn crlf_line_endings() {
    let src = DOC_EXAMPLE.replace('\n', "\r\n");
    assert_eq!(parse_ok(&src).items.len(), 12);
}

#[test]
fn statements_in_any_order() {
    let f = parse_ok("metrics { mean(loss) }\nloss = 1\nmodel m\nassert_shape(x, [B, 2])");
    assert!(matches!(f.items[0], Item::Metrics(_)));
    assert!(matches!(f.items[3], Item::Statement(_)));
}

#[test]
fn synthetic_data() {
    let f = parse_ok(
        "data synthetic(rows = 8192, features = 784, classes = 10, distribution = uniform)",
    );
    let Item::Data(d) = &f.items[0] else { panic!() };
    assert_eq!(
        call(d),
        "synthetic(rows=8192, features=784, classes=10, distribution=uniform)"
    );
}

#[test]
fn deep_but_allowed_nesting_parses() {
    let depth = 128;
    let src = format!("x = {}a{}", "(".repeat(depth), ")".repeat(depth));
    assert_eq!(sexpr(binding(&parse_ok(&src), "x")), "a");
    let src = format!("x = {}1{}", "[".repeat(depth), "]".repeat(depth));
    parse_ok(&src);
    let src = format!("x = {}a", "-".repeat(200));
    parse_ok(&src);
}

#[test]
fn clip_and_ema_items() {
    let src = "clip global_norm(5.0)\nclip by_value(-1, 1)\nema 0.999, num_updates = true\nema = 3\nclip = 2\n";
    let f = parse_ok(src);
    assert_eq!(f.items.len(), 5);
    let Item::Clip(c) = &f.items[0] else {
        panic!("{:?}", f.items[0])
    };
    assert_eq!(c.func.name, "global_norm");
    let Item::Ema(e) = &f.items[2] else {
        panic!("{:?}", f.items[2])
    };
    assert_eq!(text(src, e.decay.span), "0.999");
    assert_eq!(e.options.len(), 1);
    // Keywords are not reserved: `ema = 3` and `clip = 2` are bindings.
    assert!(matches!(&f.items[3], Item::Let(b) if b.name.name == "ema"));
    assert!(matches!(&f.items[4], Item::Let(b) if b.name.name == "clip"));
}

/// The run's items: four `key = value` blocks, and `init_from_checkpoint`
/// with its map literal; keywords stay usable as names.
#[test]
fn run_items_parse() {
    let src = r#"checkpoint { dir = "runs/d", every_steps = 1000, keep = 5 }
summaries {
  every_steps = 100
  histograms = true
}
logging { tensors = [loss, h1], every_secs = 30 }
evaluate { every_steps = 500 }
init_from_checkpoint("runs/pre", { "old/scope/": "new/scope/", "W1": "layer1/W", })
init_from_checkpoint("p", {})
checkpoint = 3
"#;
    let f = parse_ok(src);
    let blocks: Vec<(&str, usize)> = f
        .items
        .iter()
        .filter_map(|i| i.settings_block())
        .map(|(k, b)| (k, b.entries.len()))
        .collect();
    assert_eq!(
        blocks,
        [
            ("checkpoint", 3),
            ("summaries", 2),
            ("logging", 2),
            ("evaluate", 1)
        ]
    );
    let Item::InitFromCheckpoint(i) = &f.items[4] else {
        panic!("{:?}", f.items[4]);
    };
    assert_eq!(i.path.value, "runs/pre");
    let map: Vec<(&str, &str)> = i
        .assignment_map
        .iter()
        .map(|(a, b)| (a.value.as_str(), b.value.as_str()))
        .collect();
    assert_eq!(map, [("old/scope/", "new/scope/"), ("W1", "layer1/W")]);
    assert_eq!(text(src, i.assignment_map[1].1.span), "\"layer1/W\"");
    let Item::InitFromCheckpoint(empty) = &f.items[5] else {
        panic!("{:?}", f.items[5]);
    };
    assert!(empty.assignment_map.is_empty());
    assert!(matches!(&f.items[6], Item::Let(b) if b.name.name == "checkpoint"));
    let printed = specc_grammar::print::print_spec(&f);
    assert!(
        printed.contains("(checkpoint dir=\"runs/d\" every_steps=1000 keep=5)"),
        "{printed}"
    );
    assert!(
        printed.contains("(init_from_checkpoint \"runs/pre\" (\"old/scope/\" \"new/scope/\") (\"W1\" \"layer1/W\"))"),
        "{printed}"
    );
}

/// A malformed map says what an entry looks like; a block's entries need
/// separators like `train`'s.
#[test]
fn run_item_syntax_errors() {
    let e = specc_grammar::parse("init_from_checkpoint(\"p\", { \"a\" \"b\" })").unwrap_err();
    assert_eq!(e.message, "expected `:`, found a string", "{e:?}");
    let e = specc_grammar::parse("checkpoint { dir = \"x\" keep = 5 }").unwrap_err();
    assert!(
        e.message.starts_with("expected `,` or a line break"),
        "{e:?}"
    );
    let e = specc_grammar::parse("logging { every_steps 5 }").unwrap_err();
    assert!(e.message.contains("expected `=`"), "{e:?}");
}

#[test]
fn outputs_block() {
    let src = "outputs {\n  probs = softmax(logits), class = argmax(logits, 1)\n  logit = logits\n}\noutputs = 3";
    let f = parse_ok(src);
    let Item::Outputs(o) = &f.items[0] else {
        panic!("{:?}", f.items[0])
    };
    assert_eq!(text(src, o.keyword), "outputs");
    let entries: Vec<(String, String)> = o
        .entries
        .iter()
        .map(|b| (b.name.name.clone(), sexpr(&b.value)))
        .collect();
    assert_eq!(
        entries,
        [
            ("probs".to_string(), "softmax(logits)".to_string()),
            ("class".to_string(), "argmax(logits, 1)".to_string()),
            ("logit".to_string(), "logits".to_string()),
        ]
    );
    // Keywords are not reserved: `outputs = 3` is a binding.
    assert!(matches!(&f.items[1], Item::Let(b) if b.name.name == "outputs"));
}

#[test]
fn parses_an_optimizer_definition_with_tight_spans() {
    let src = "optimizer_def sgdm(learning_rate, momentum = 0.9) {\n  slot accum = zeros\n  global n = 0\n  update {\n    accum = accum * momentum + grad\n    var = var - learning_rate * accum\n  }\n  sparse rows\n  finish { n = n + 1 }\n}\noptimizer sgdm(learning_rate = 0.1)\n";
    let f = parse_ok(src);
    common::check_spans(src, &f);
    let Item::OptimizerDef(d) = &f.items[0] else {
        panic!("{:?}", f.items[0])
    };
    assert_eq!(d.name.name, "sgdm");
    assert_eq!(d.params.len(), 2);
    assert!(d.params[0].default.is_none() && d.params[1].default.is_some());
    let kinds: Vec<&str> = d
        .entries
        .iter()
        .map(|e| match e {
            OptEntry::Slot(_) => "slot",
            OptEntry::Global(_) => "global",
            OptEntry::Update(_) => "update",
            OptEntry::Sparse { rule: None, .. } => "sparse",
            OptEntry::Sparse { .. } => "sparse with a rule",
            OptEntry::Finish(_) => "finish",
        })
        .collect();
    assert_eq!(kinds, ["slot", "global", "update", "sparse", "finish"]);
    let OptEntry::Update(u) = &d.entries[2] else {
        panic!()
    };
    assert_eq!(u.body.len(), 2);
    assert_eq!(u.body[1].name.name, "var");
    assert!(matches!(f.items[1], Item::Optimizer(_)));
    // `sparse densify { ... }` keeps its rule; keywords stay plain names elsewhere.
    let src = "optimizer_def o(lr) {\n  update { var = var - lr * grad }\n  sparse densify { var = var - lr * grad }\n}\nslot = 3\nupdate = slot + 1\n";
    let f = parse_ok(src);
    common::check_spans(src, &f);
    let Item::OptimizerDef(d) = &f.items[0] else {
        panic!()
    };
    assert!(
        matches!(&d.entries[1], OptEntry::Sparse { mode, rule: Some(r), .. } if mode.name == "densify" && r.body.len() == 1)
    );
    assert!(matches!(f.items[1], Item::Let(_)) && matches!(f.items[2], Item::Let(_)));
}
