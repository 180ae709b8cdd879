//! Helpers shared by the integration tests: an s-expression printer for
//! expressions and a walker that checks every span of an AST.

#![allow(dead_code)]

use specc_grammar::ast::*;

/// `a + b * c` as `(+ a (* b c))`, to assert tree shapes compactly.
pub fn sexpr(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Number { value, is_int } => {
            if *is_int {
                format!("{value}")
            } else {
                format!("{value:?}f")
            }
        }
        ExprKind::Str(s) => format!("{s:?}"),
        ExprKind::Bool(b) => b.to_string(),
        ExprKind::Ident(name) => name.clone(),
        ExprKind::Range(a, b) => format!("{a}..{b}"),
        ExprKind::Call(c) => call(c),
        ExprKind::List(items) => {
            let items: Vec<String> = items.iter().map(sexpr).collect();
            format!("[{}]", items.join(" "))
        }
        ExprKind::Unary(x) => format!("(neg {})", sexpr(x)),
        ExprKind::Binary(first, rest) => rest.iter().fold(sexpr(first), |acc, o| {
            format!("({} {acc} {})", o.op.symbol(), sexpr(&o.rhs))
        }),
        ExprKind::Index(x, items) => {
            let items: Vec<String> = items
                .iter()
                .map(|i| match i {
                    IndexItem::Index(e) => sexpr(e),
                    IndexItem::Slice { start, end, .. } => format!(
                        "{}:{}",
                        start.as_ref().map(sexpr).unwrap_or_default(),
                        end.as_ref().map(sexpr).unwrap_or_default()
                    ),
                })
                .collect();
            format!("(index {} {})", sexpr(x), items.join(" "))
        }
    }
}

pub fn call(c: &Call) -> String {
    let args: Vec<String> = c
        .args
        .iter()
        .map(|a| match &a.name {
            Some(n) => format!("{n}={}", sexpr(&a.value)),
            None => sexpr(&a.value),
        })
        .collect();
    format!("{}({})", c.func, args.join(", "))
}

/// Parses `src`, panicking with the rendered diagnostic if it fails.
pub fn parse_ok(src: &str) -> SpecFile {
    match specc_grammar::parse(src) {
        Ok(f) => {
            check_spans(src, &f);
            f
        }
        Err(d) => panic!(
            "expected {src:?} to parse:\n{}",
            d.render(&specc_grammar::SourceFile::new("test.spec", src), false)
        ),
    }
}

/// The expression bound by the first top-level `name = ...`.
pub fn binding<'a>(f: &'a SpecFile, name: &str) -> &'a Expr {
    f.items
        .iter()
        .find_map(|i| match i {
            Item::Let(b) if b.name.name == name => Some(&b.value),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no binding {name}"))
}

/// `x = EXPR` parsed and printed as an s-expression.
pub fn expr(text: &str) -> String {
    let src = format!("x = {text}");
    sexpr(binding(&parse_ok(&src), "x"))
}

/// Checks that every span in the AST is tight: inside the text, non-empty,
/// without surrounding whitespace, and (for names) exactly the name.
pub fn check_spans(src: &str, f: &SpecFile) {
    let mut c = SpanCheck { src };
    for item in &f.items {
        c.item(item);
    }
}

struct SpanCheck<'a> {
    src: &'a str,
}

impl SpanCheck<'_> {
    fn text(&self, span: Span) -> &str {
        let t = self
            .src
            .get(span.range())
            .unwrap_or_else(|| panic!("span {span:?} outside the text"));
        assert!(!t.is_empty(), "empty span {span:?}");
        assert_eq!(t, t.trim(), "span {span:?} is not tight: {t:?}");
        t
    }

    fn ident(&mut self, i: &Ident) {
        assert_eq!(self.text(i.span), i.name, "ident span");
    }

    fn item(&mut self, item: &Item) {
        match item {
            Item::Model(i) => self.ident(i),
            Item::Data(c)
            | Item::EvalData(c)
            | Item::Optimizer(c)
            | Item::Clip(c)
            | Item::Statement(c) => self.call(c),
            Item::Ema(e) => {
                let t = self.text(e.span);
                assert!(t.starts_with("ema"), "{t:?}");
                self.expr(&e.decay);
                for o in &e.options {
                    self.arg(o);
                }
                let last = e.options.last().map_or(e.decay.span, |o| o.span);
                assert_eq!(e.span.end, last.end, "ema span ends with its last part");
            }
            Item::Label(l) => {
                let t = self.text(l.span);
                assert!(t.starts_with("label"), "{t:?}");
                self.ident(&l.name);
                self.ident(&l.dtype);
                for c in l.columns.iter().flatten() {
                    self.expr(c);
                }
            }
            Item::Features(b) | Item::Outputs(b) => self.block(b, |c, e| c.binding(e)),
            Item::Params(b) => self.params(b),
            Item::Let(b) => self.binding(b),
            Item::BlockDef(d) => {
                let t = self.text(d.span);
                assert!(t.starts_with("block") && t.ends_with('}'), "{t:?}");
                self.ident(&d.name);
                for p in &d.params {
                    self.ident(&p.name);
                    let t = self.text(p.span).to_string();
                    assert!(t.starts_with(&p.name.name), "{t:?}");
                    if let Some(e) = &p.default {
                        self.expr(e);
                        assert_eq!(p.span.end, e.span.end);
                    }
                }
                if let Some(s) = &d.scope {
                    let t = self.text(s.span);
                    assert!(t.starts_with('"') && t.ends_with('"'), "{t:?}");
                }
                for s in &d.body {
                    self.stmt(s);
                }
            }
            Item::OptimizerDef(d) => {
                let t = self.text(d.span);
                assert!(t.starts_with("optimizer_def") && t.ends_with('}'), "{t:?}");
                self.ident(&d.name);
                for p in &d.params {
                    self.ident(&p.name);
                    if let Some(e) = &p.default {
                        self.expr(e);
                        assert_eq!(p.span.end, e.span.end);
                    }
                }
                for e in &d.entries {
                    let sections = match e {
                        OptEntry::Slot(b) | OptEntry::Global(b) => {
                            self.binding(b);
                            vec![]
                        }
                        OptEntry::Update(s) | OptEntry::Finish(s) => vec![s],
                        OptEntry::Sparse { mode, rule, span } => {
                            self.ident(mode);
                            assert!(self.text(*span).starts_with("sparse"));
                            rule.iter().collect()
                        }
                    };
                    for s in sections {
                        let t = self.text(s.span);
                        assert!(
                            t.ends_with(if s.body.is_empty() { t } else { "}" }),
                            "{t:?}"
                        );
                        self.text(s.keyword);
                        for b in &s.body {
                            self.binding(b);
                        }
                    }
                }
            }
            Item::For(f) => self.stmt(&Stmt::For(f.clone())),
            Item::TupleLet(t) => self.stmt(&Stmt::TupleLet(t.clone())),
            Item::Train(b)
            | Item::Checkpoint(b)
            | Item::Summaries(b)
            | Item::Logging(b)
            | Item::Evaluate(b) => self.block(b, |c, a| c.arg(a)),
            Item::InitFromCheckpoint(i) => {
                let t = self.text(i.span);
                assert!(
                    t.starts_with("init_from_checkpoint") && t.ends_with(')'),
                    "{t:?}"
                );
                let p = self.text(i.path.span);
                assert!(p.starts_with('"') && p.ends_with('"'), "{p:?}");
                let m = self.text(i.map_span);
                assert!(m.starts_with('{') && m.ends_with('}'), "{m:?}");
                for (a, b) in &i.assignment_map {
                    for s in [a, b] {
                        let t = self.text(s.span);
                        assert!(t.starts_with('"') && t.ends_with('"'), "{t:?}");
                    }
                }
            }
            Item::WarmStart(w) => {
                let t = self.text(w.span);
                assert!(t.starts_with("warm_start") && t.ends_with(')'), "{t:?}");
                for a in &w.args {
                    self.text(a.span);
                    match &a.value {
                        WarmValue::Expr(e) => self.expr(e),
                        WarmValue::Map { entries, span } => {
                            let m = self.text(*span);
                            assert!(m.starts_with('{') && m.ends_with('}'), "{m:?}");
                            for (k, v) in entries {
                                let t = self.text(k.span);
                                assert!(t.starts_with('"') && t.ends_with('"'), "{t:?}");
                                self.expr(v);
                            }
                        }
                    }
                }
            }
            Item::Metrics(b) => self.block(b, |c, m| {
                c.text(m.span);
                if let Some(n) = &m.name {
                    c.ident(n);
                }
                c.expr(&m.value);
                assert_eq!(m.span.end, m.value.span.end);
            }),
        }
    }

    fn params(&mut self, b: &Block<ParamDecl>) {
        self.block(b, |c, p| {
            let t = c.text(p.span).to_string();
            assert!(t.starts_with(&p.name.name), "{t:?}");
            c.ident(&p.name);
            let shape = c.text(p.shape_span);
            assert!(shape.starts_with('[') && shape.ends_with(']'), "{shape:?}");
            for d in &p.shape {
                c.expr(d);
            }
            c.expr(&p.init);
            for o in &p.options {
                c.arg(o);
            }
            let last = p.options.last().map_or(p.init.span, |o| o.span);
            assert_eq!(p.span.end, last.end, "param span ends with its last part");
        })
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Params(b) => self.params(b),
            Stmt::Let(b) => self.binding(b),
            Stmt::Call(c) => self.call(c),
            Stmt::TupleLet(t) => {
                let text = self.text(t.span).to_string();
                for n in &t.names {
                    self.ident(n);
                }
                self.expr(&t.value);
                assert!(text.starts_with(&t.names[0].name), "{text:?}");
                assert_eq!(t.span.end, t.value.span.end);
            }
            Stmt::For(f) => {
                let t = self.text(f.span);
                assert!(t.starts_with("for") && t.ends_with('}'), "{t:?}");
                self.ident(&f.var);
                self.call(&f.range);
                for s in &f.body {
                    self.stmt(s);
                }
            }
            Stmt::If(i) => {
                let t = self.text(i.span);
                assert!(t.starts_with("if") && t.ends_with('}'), "{t:?}");
                self.expr(&i.cond);
                for s in i.then.iter().chain(&i.otherwise) {
                    self.stmt(s);
                }
            }
            Stmt::Return(r) => {
                let t = self.text(r.span);
                assert!(t.starts_with("return"), "{t:?}");
                for v in &r.values {
                    self.expr(v);
                }
                assert_eq!(r.span.end, r.values.last().map_or(0, |v| v.span.end));
            }
        }
    }

    fn block<T>(&mut self, b: &Block<T>, mut entry: impl FnMut(&mut Self, &T)) {
        let kw = self.text(b.keyword).to_string();
        let t = self.text(b.span);
        assert!(t.starts_with(&kw) && t.ends_with('}'), "{t:?}");
        for e in &b.entries {
            entry(self, e);
        }
    }

    fn binding(&mut self, b: &Binding) {
        self.text(b.span);
        self.ident(&b.name);
        self.expr(&b.value);
        assert_eq!(b.span.start, b.name.span.start);
        assert_eq!(b.span.end, b.value.span.end);
    }

    fn arg(&mut self, a: &Arg) {
        self.text(a.span);
        if let Some(n) = &a.name {
            self.ident(n);
            assert_eq!(a.span.start, n.span.start);
        } else {
            assert_eq!(a.span.start, a.value.span.start);
        }
        self.expr(&a.value);
        assert_eq!(a.span.end, a.value.span.end);
    }

    fn call(&mut self, c: &Call) {
        let t = self.text(c.span).to_string();
        assert!(t.starts_with(&c.func.name) && t.ends_with(')'), "{t:?}");
        self.ident(&c.func);
        for a in &c.args {
            self.arg(a);
        }
    }

    fn expr(&mut self, e: &Expr) {
        let t = self.text(e.span).to_string();
        let within = |inner: Span| assert!(e.span.start <= inner.start && inner.end <= e.span.end);
        // A parenthesized expression's span includes the parentheses.
        let mut t = t.as_str();
        if !matches!(e.kind, ExprKind::Binary(..) | ExprKind::Index(..)) {
            while let Some(inner) = t.strip_prefix('(').and_then(|t| t.strip_suffix(')')) {
                t = inner.trim();
            }
        }
        let t = t.to_string();
        match &e.kind {
            ExprKind::Number { value, .. } => assert_eq!(t.parse::<f64>().ok(), Some(*value)),
            ExprKind::Str(_) => assert!(t.starts_with('"') && t.ends_with('"')),
            ExprKind::Bool(b) => assert_eq!(t, b.to_string()),
            ExprKind::Ident(name) => assert_eq!(&t, name),
            ExprKind::Range(a, b) => {
                self.ident(a);
                self.ident(b);
                assert_eq!((e.span.start, e.span.end), (a.span.start, b.span.end));
            }
            ExprKind::Call(c) => {
                within(c.span);
                self.call(c);
            }
            ExprKind::List(items) => {
                assert!(t.starts_with('[') && t.ends_with(']'), "{t:?}");
                for i in items {
                    within(i.span);
                    self.expr(i);
                }
            }
            ExprKind::Unary(x) => {
                assert!(t.starts_with('-'), "{t:?}");
                within(x.span);
                self.expr(x);
            }
            ExprKind::Binary(first, rest) => {
                within(first.span);
                self.expr(first);
                // Only the parentheses of a parenthesized chain lie outside its operands.
                let src = self.src;
                let outside = move |a: u32, b: u32, paren: char| {
                    let t = &src[a as usize..b as usize];
                    assert!(t.chars().all(|c| c == paren || c.is_whitespace()), "{t:?}");
                };
                outside(e.span.start, first.span.start, '(');
                let mut end = first.span.end;
                for o in rest {
                    assert!(end <= o.op_span.start && o.op_span.end <= o.rhs.span.start);
                    assert_eq!(self.text(o.op_span), o.op.symbol());
                    within(o.rhs.span);
                    self.expr(&o.rhs);
                    end = o.rhs.span.end;
                }
                outside(end, e.span.end, ')');
            }
            ExprKind::Index(x, items) => {
                assert!(t.ends_with(']') || t.ends_with(')'), "{t:?}");
                within(x.span);
                self.expr(x);
                for i in items {
                    match i {
                        IndexItem::Index(x) => self.expr(x),
                        IndexItem::Slice { start, end, span } => {
                            assert!(self.text(*span).contains(':'));
                            for b in [start, end].into_iter().flatten() {
                                self.expr(b);
                            }
                        }
                    }
                }
            }
        }
    }
}
