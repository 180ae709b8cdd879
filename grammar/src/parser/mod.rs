//! The parser: spec text to [`SpecFile`], or one [`Diagnostic`].
//!
//! Owns: running the scan and the pest grammar, and turning pest's parse tree
//! into the AST (spans, numbers, escapes, operator chains), plus the few syntax
//! rules the grammar leaves to code: comparisons do not chain, numbers must be
//! representable, expressions may not nest deeper than [`MAX_EXPR_DEPTH`]
//! (operator chains such as a long sum are one level, not one per operator).
//!
//! Invariants: [`parse`] never panics and never recurses deeper than the
//! bracket nesting the scan admits ([`crate::scan::MAX_NESTING`]); every span
//! covers exactly the node's source text, without surrounding whitespace or
//! comments; a parenthesized expression's span includes its parentheses.

use pest::iterators::{Pair, Pairs};
use pest::Parser as _;

use crate::ast::*;
use crate::code::Code;
use crate::diag::Diagnostic;
use crate::{errors, scan};

mod blocks;
use blocks::{block_def, for_loop, tuple_binding};
mod optimizer_def;
use optimizer_def::optimizer_def;

#[derive(pest_derive::Parser)]
#[grammar = "spec.pest"]
pub(crate) struct SpecParser;

/// The deepest expression tree accepted (calls, lists, indexing, unary
/// minus, and one level per operator chain of one precedence: `a + b + c` is
/// one level, `a + b * c` two). Later stages walk expressions recursively;
/// this bounds their recursion, and a chain's operands are walked in a loop.
pub const MAX_EXPR_DEPTH: usize = 256;

/// The largest integer literal: every integer up to 2^53 is exact in an f64.
const MAX_INT: u64 = 1 << 53;

/// Parses a whole spec. The error, if any, is the first syntax error.
///
/// ```
/// use specc_grammar::{ast::Item, parse, Code, SourceFile};
///
/// let spec = parse("model m\nh = relu(x @ W)").unwrap();
/// assert!(matches!(spec.items[0], Item::Model(_)));
///
/// let src = "params {\n  W [2] = zeros\n}";
/// let err = parse(src).unwrap_err();
/// assert_eq!(err.code, Code::ParseError);
/// assert_eq!(err.message, "expected `:` after `W`, found `[`");
/// let text = err.render(&SourceFile::new("x.spec", src), false);
/// assert!(text.contains("x.spec:2:5"));
/// ```
pub fn parse(src: &str) -> Result<SpecFile, Diagnostic> {
    if src.len() >= crate::library::BASE as usize {
        return Err(Diagnostic::new(
            Code::ParseError,
            Span::new(0, 0),
            "the spec is too large (3.75 GiB or more)",
        ));
    }
    parse_text(src)
}

/// Parses a text of specc's library ([`crate::library`]): every span of the
/// result (and of an error) is offset by `base`, so a diagnostic says which
/// text it points into.
pub(crate) fn parse_at(src: &str, base: u32) -> Result<SpecFile, Diagnostic> {
    SPAN_BASE.with(|b| b.set(base));
    let r = parse_text(src);
    SPAN_BASE.with(|b| b.set(0));
    r.map_err(|mut d| {
        if d.span.start < base {
            d.span = Span {
                start: d.span.start.saturating_add(base),
                end: d.span.end.saturating_add(base),
            };
        }
        d
    })
}

thread_local! {
    /// What [`span_of`] adds to every offset ([`parse_at`]); 0 for a spec.
    static SPAN_BASE: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

fn parse_text(src: &str) -> Result<SpecFile, Diagnostic> {
    let scan = scan::scan(src);
    if let Some(d) = scan.too_deep {
        return Err(d);
    }
    match SpecParser::parse(Rule::file, src) {
        Ok(pairs) => {
            let file = file(pairs)?;
            check_separators(src, &scan, &file)?;
            Ok(file)
        }
        Err(e) => Err(errors::from_pest(src, &scan, &e)),
    }
}

type Result<T, E = Diagnostic> = std::result::Result<T, E>;

/// The span of a pair, without trailing whitespace or comments.
///
/// pest skips whitespace before an optional or repeated element even when
/// the element is then absent, so a rule such as `sum = { product ~ (add_op
/// ~ product)* }` can end after trailing whitespace. Its last token, found by
/// following the last child down to a token rule, ends where the text does.
fn span_of(pair: &Pair<'_, Rule>) -> Span {
    let start = pair.as_span().start();
    let mut last = pair.clone();
    loop {
        let is_token = matches!(
            last.as_rule(),
            Rule::ident | Rule::callee | Rule::number | Rule::string | Rule::boolean
        );
        match last.clone().into_inner().last() {
            Some(child) if !is_token => last = child,
            _ => break,
        }
    }
    let base = SPAN_BASE.with(std::cell::Cell::get) as usize;
    Span::new(base + start, base + last.as_span().end().max(start))
}

/// A parse tree that does not have the shape the grammar promises: a bug in
/// this file, reported instead of panicking.
fn internal(span: Span, what: &str) -> Diagnostic {
    Diagnostic::new(
        Code::InternalError,
        span,
        format!("internal parser error: unexpected parse tree ({what})"),
    )
    .with_label("while parsing this")
    .with_help("this is a bug in specc; please report it with the spec that triggered it")
}

/// Is this rule punctuation, skipped when walking children?
fn is_punct(rule: Rule) -> bool {
    matches!(
        rule,
        Rule::eq
            | Rule::arg_eq
            | Rule::colon
            | Rule::comma
            | Rule::tuple_comma
            | Rule::lbrace
            | Rule::rbrace
            | Rule::lparen
            | Rule::rparen
            | Rule::lbracket
            | Rule::rbracket
            | Rule::call_open
            | Rule::index_open
            | Rule::dotdot
            | Rule::kw_model
            | Rule::kw_data
            | Rule::kw_eval_data
            | Rule::kw_label
            | Rule::kw_features
            | Rule::kw_params
            | Rule::kw_optimizer
            | Rule::kw_optimizer_def
            | Rule::kw_slot
            | Rule::kw_global
            | Rule::kw_update
            | Rule::kw_finish
            | Rule::kw_sparse
            | Rule::kw_clip
            | Rule::kw_ema
            | Rule::kw_train
            | Rule::kw_metrics
            | Rule::kw_outputs
            | Rule::kw_checkpoint
            | Rule::kw_summaries
            | Rule::kw_logging
            | Rule::kw_evaluate
            | Rule::kw_init_from_checkpoint
            | Rule::kw_warm_start
            | Rule::kw_from
            | Rule::kw_block
            | Rule::kw_for
            | Rule::kw_in
            | Rule::kw_if
            | Rule::kw_else
            | Rule::kw_return
            | Rule::kw_scope
    )
}

/// Block entries must be separated by a comma or a line break: the grammar
/// alone would also accept `train { batch = 64 steps = 10 }`.
fn check_separators(src: &str, scan: &scan::Scan, file: &SpecFile) -> Result<()> {
    fn spans<T>(b: &Block<T>, span: impl Fn(&T) -> Span) -> (Span, Vec<Span>) {
        (b.keyword, b.entries.iter().map(span).collect())
    }
    let token_text = |index: Option<usize>| {
        index
            .and_then(|i| scan.tokens.get(i))
            .and_then(|t| src.get(t.start..t.end))
            .unwrap_or("")
    };
    for item in &file.items {
        let (keyword, entries) = match item {
            Item::Features(b) => spans(b, |e| e.span),
            Item::Params(b) => spans(b, |e| e.span),
            Item::Metrics(b) => spans(b, |e| e.span),
            Item::Outputs(b) => spans(b, |e| e.span),
            other => match other.settings_block() {
                Some((_, b)) => spans(b, |e| e.span),
                None => continue,
            },
        };
        for pair in entries.windows(2) {
            let base = SPAN_BASE.with(std::cell::Cell::get);
            let (prev_end, next) = (
                (pair[0].end - base) as usize,
                (pair[1].start - base) as usize,
            );
            let gap = src.get(prev_end..next).unwrap_or("");
            if gap.contains([',', '\n']) {
                continue;
            }
            let last = token_text(scan.token_before(prev_end));
            let found = token_text(scan.token_at(next));
            let width = found.chars().next().map_or(0, char::len_utf8);
            let block = src
                .get(keyword.start as usize - base as usize..keyword.end as usize - base as usize)
                .unwrap_or("block");
            return Err(Diagnostic::new(
                Code::ParseError,
                Span::new(next, next + width),
                format!("expected `,` or a line break after `{last}`, found `{found}`"),
            )
            .with_label("expected `,` or a line break before this entry")
            .with_help(format!(
                "entries of `{block}` are separated by commas or line breaks"
            )));
        }
    }
    Ok(())
}

/// The non-punctuation children of a pair, with their parent's span for errors.
struct Children<'i> {
    inner: Pairs<'i, Rule>,
    span: Span,
}

impl<'i> Children<'i> {
    fn of(pair: Pair<'i, Rule>) -> Children<'i> {
        let span = span_of(&pair);
        Children {
            inner: pair.into_inner(),
            span,
        }
    }

    fn next(&mut self) -> Option<Pair<'i, Rule>> {
        self.inner.by_ref().find(|p| !is_punct(p.as_rule()))
    }

    /// The next child, which must exist.
    fn expect(&mut self, what: &str) -> Result<Pair<'i, Rule>> {
        self.next().ok_or_else(|| internal(self.span, what))
    }

    /// The next child, which must be an identifier.
    fn ident(&mut self) -> Result<Ident> {
        let pair = self.expect("a name")?;
        if !matches!(pair.as_rule(), Rule::ident | Rule::callee) {
            return Err(internal(span_of(&pair), "a name"));
        }
        Ok(ident(&pair))
    }
}

fn ident(pair: &Pair<'_, Rule>) -> Ident {
    Ident {
        name: pair.as_str().to_string(),
        span: span_of(pair),
    }
}

fn file(mut pairs: Pairs<'_, Rule>) -> Result<SpecFile> {
    let Some(file) = pairs.next() else {
        return Err(internal(Span::default(), "empty parse"));
    };
    let mut items = Vec::new();
    for pair in file.into_inner() {
        match pair.as_rule() {
            Rule::item => {
                let span = span_of(&pair);
                let inner = pair
                    .into_inner()
                    .next()
                    .ok_or_else(|| internal(span, "an item"))?;
                items.push(item(inner)?);
            }
            Rule::EOI => {}
            _ => return Err(internal(span_of(&pair), "an item")),
        }
    }
    Ok(SpecFile { items })
}

fn item(pair: Pair<'_, Rule>) -> Result<Item> {
    let rule = pair.as_rule();
    let span = span_of(&pair);
    let keyword = pair
        .clone()
        .into_inner()
        .next()
        .map_or(span, |p| span_of(&p));
    let mut c = Children::of(pair);
    Ok(match rule {
        Rule::model_item => Item::Model(c.ident()?),
        Rule::data_item => Item::Data(call(c.expect("a call")?)?),
        Rule::eval_data_item => Item::EvalData(call(c.expect("a call")?)?),
        Rule::optimizer_item => Item::Optimizer(call(c.expect("a call")?)?),
        Rule::clip_item => Item::Clip(call(c.expect("a call")?)?),
        Rule::ema_item => {
            let decay = expr(c.expect("a decay")?)?;
            let mut options = Vec::new();
            while let Some(option) = c.next() {
                options.push(named_arg(option)?);
            }
            Item::Ema(EmaDecl {
                decay,
                options,
                span,
            })
        }
        Rule::statement_item => Item::Statement(call(c.expect("a call")?)?),
        Rule::let_item => Item::Let(binding(c.expect("a binding")?)?),
        Rule::block_item => Item::BlockDef(block_def(span, c)?),
        Rule::optimizer_def_item => Item::OptimizerDef(optimizer_def(span, c)?),
        Rule::for_item => Item::For(for_loop(c.expect("a loop")?)?),
        Rule::tuple_let_item => Item::TupleLet(tuple_binding(c.expect("a binding")?)?),
        Rule::label_item => {
            let name = c.ident()?;
            let dtype = c.ident()?;
            let mut vocabulary = None;
            let mut columns_list = None;
            while let Some(p) = c.next() {
                match p.as_rule() {
                    Rule::list => vocabulary = Some(list(p)?.0),
                    _ => columns_list = Some(columns(p)?),
                }
            }
            Item::Label(LabelDecl {
                name,
                dtype,
                columns: columns_list,
                vocabulary,
                span,
            })
        }
        Rule::features_item => Item::Features(block(keyword, span, c, binding)?),
        Rule::params_item => Item::Params(block(keyword, span, c, param_decl)?),
        Rule::train_item => Item::Train(block(keyword, span, c, named_arg)?),
        Rule::metrics_item => Item::Metrics(block(keyword, span, c, metric_decl)?),
        Rule::outputs_item => Item::Outputs(block(keyword, span, c, binding)?),
        Rule::checkpoint_item => Item::Checkpoint(block(keyword, span, c, named_arg)?),
        Rule::summaries_item => Item::Summaries(block(keyword, span, c, named_arg)?),
        Rule::logging_item => Item::Logging(block(keyword, span, c, named_arg)?),
        Rule::evaluate_item => Item::Evaluate(block(keyword, span, c, named_arg)?),
        Rule::init_item => {
            let path = str_lit(c.expect("a path")?)?;
            let map = c.expect("an assignment map")?;
            let map_span = span_of(&map);
            let mut entries = Children::of(map);
            let mut assignment_map = Vec::new();
            while let Some(entry) = entries.next() {
                let mut e = Children::of(entry);
                let from = str_lit(e.expect("a checkpoint name")?)?;
                let to = str_lit(e.expect("a parameter name")?)?;
                assignment_map.push((from, to));
            }
            Item::InitFromCheckpoint(InitFromCheckpoint {
                path,
                assignment_map,
                map_span,
                span,
            })
        }
        Rule::warm_item => {
            let path = str_lit(c.expect("a path")?)?;
            let mut args = Vec::new();
            while let Some(a) = c.next() {
                let a_span = span_of(&a);
                let mut e = Children::of(a);
                let name = e.ident()?;
                let v = e.expect("a value")?;
                let value = if v.as_rule() == Rule::warm_map {
                    let map_span = span_of(&v);
                    let mut entries = Vec::new();
                    let mut m = Children::of(v);
                    while let Some(entry) = m.next() {
                        let mut e = Children::of(entry);
                        let key = str_lit(e.expect("a variable name")?)?;
                        let value = expr(e.expect("a value")?)?;
                        entries.push((key, value));
                    }
                    WarmValue::Map {
                        entries,
                        span: map_span,
                    }
                } else {
                    WarmValue::Expr(expr(v)?)
                };
                args.push(WarmArg {
                    name,
                    value,
                    span: a_span,
                });
            }
            Item::WarmStart(WarmStartItem { path, args, span })
        }
        _ => return Err(internal(span, "an item")),
    })
}

fn block<'i, T>(
    keyword: Span,
    span: Span,
    mut c: Children<'i>,
    entry: fn(Pair<'i, Rule>) -> Result<T>,
) -> Result<Block<T>> {
    let mut entries = Vec::new();
    while let Some(pair) = c.next() {
        entries.push(entry(pair)?);
    }
    Ok(Block {
        keyword,
        entries,
        span,
    })
}

/// A string token as a [`StrLit`].
fn str_lit(pair: Pair<'_, Rule>) -> Result<StrLit> {
    let e = leaf(pair)?;
    match e.kind {
        ExprKind::Str(value) => Ok(StrLit {
            value,
            span: e.span,
        }),
        _ => Err(internal(e.span, "a string")),
    }
}

fn columns(pair: Pair<'_, Rule>) -> Result<Vec<Expr>> {
    let mut out = Vec::new();
    let mut c = Children::of(pair);
    while let Some(col) = c.next() {
        let span = span_of(&col);
        out.push(match col.as_rule() {
            Rule::ident => Expr::new(ExprKind::Ident(col.as_str().to_string()), span),
            Rule::string => leaf(col)?,
            Rule::range => range(col)?,
            _ => return Err(internal(span, "a column")),
        });
    }
    Ok(out)
}

pub(super) fn binding(pair: Pair<'_, Rule>) -> Result<Binding> {
    let span = span_of(&pair);
    let mut c = Children::of(pair);
    let name = c.ident()?;
    let value = expr(c.expect("an expression")?)?;
    Ok(Binding { name, value, span })
}

/// `name = value` as an [`Arg`] with a name (`train` entries, param options).
fn named_arg(pair: Pair<'_, Rule>) -> Result<Arg> {
    let span = span_of(&pair);
    let mut c = Children::of(pair);
    let name = c.ident()?;
    let value = expr(c.expect("an expression")?)?;
    Ok(Arg {
        name: Some(name),
        value,
        span,
    })
}

fn param_decl(pair: Pair<'_, Rule>) -> Result<ParamDecl> {
    let span = span_of(&pair);
    let mut c = Children::of(pair);
    let name = c.ident()?;
    let shape_pair = c.expect("a shape")?;
    let shape_span = span_of(&shape_pair);
    let mut shape = Vec::new();
    let mut dims = Children::of(shape_pair);
    while let Some(dim) = dims.next() {
        shape.push(expr(dim)?);
    }
    let init = expr(c.expect("an initializer")?)?;
    let mut options = Vec::new();
    while let Some(option) = c.next() {
        options.push(named_arg(option)?);
    }
    Ok(ParamDecl {
        name,
        shape,
        shape_span,
        init,
        options,
        span,
    })
}

fn metric_decl(pair: Pair<'_, Rule>) -> Result<MetricDecl> {
    let span = span_of(&pair);
    let mut c = Children::of(pair);
    let first = c.expect("a metric")?;
    let (name, value) = if first.as_rule() == Rule::ident {
        (Some(ident(&first)), expr(c.expect("an expression")?)?)
    } else {
        (None, expr(first)?)
    };
    Ok(MetricDecl { name, value, span })
}

fn call(pair: Pair<'_, Rule>) -> Result<Call> {
    Ok(call_with_depth(pair)?.0)
}

/// A call and the depth of its deepest argument.
fn call_with_depth(pair: Pair<'_, Rule>) -> Result<(Call, usize)> {
    let span = span_of(&pair);
    let mut c = Children::of(pair);
    let func = c.ident()?;
    let mut args = Vec::new();
    let mut depth = 0;
    while let Some(arg) = c.next() {
        let arg_span = span_of(&arg);
        let mut a = Children::of(arg);
        let first = a.expect("an argument")?;
        let (name, value) = if first.as_rule() == Rule::ident {
            (Some(ident(&first)), a.expect("an expression")?)
        } else {
            (None, first)
        };
        let value = expr_d(value)?;
        depth = depth.max(value.1);
        args.push(Arg {
            name,
            value: value.0,
            span: arg_span,
        });
    }
    Ok((Call { func, args, span }, depth))
}

fn range(pair: Pair<'_, Rule>) -> Result<Expr> {
    let span = span_of(&pair);
    let mut c = Children::of(pair);
    let from = c.ident()?;
    let to = c.ident()?;
    Ok(Expr::new(ExprKind::Range(from, to), span))
}

pub(super) fn expr(pair: Pair<'_, Rule>) -> Result<Expr> {
    Ok(expr_d(pair)?.0)
}

/// An expression and its depth (1 for a leaf).
type Built = (Expr, usize);

/// Wraps a new node over children of depth `depth`, refusing trees deeper
/// than [`MAX_EXPR_DEPTH`]. `at` is where to point if it is too deep.
fn node(kind: ExprKind, span: Span, depth: usize, at: Span) -> Result<Built> {
    let depth = depth + 1;
    if depth > MAX_EXPR_DEPTH {
        return Err(Diagnostic::new(
            Code::ParseError,
            at,
            format!("expression is too deeply nested (more than {MAX_EXPR_DEPTH} levels)"),
        )
        .with_label("the expression is too deep here")
        .with_help("split it into several named bindings"));
    }
    Ok((Expr::new(kind, span), depth))
}

fn binop(pair: &Pair<'_, Rule>) -> Result<BinOp> {
    Ok(match pair.as_str() {
        "+" => BinOp::Add,
        "-" => BinOp::Sub,
        "*" => BinOp::Mul,
        "/" => BinOp::Div,
        "//" => BinOp::FloorDiv,
        "%" => BinOp::Mod,
        "@" => BinOp::MatMul,
        "==" => BinOp::Eq,
        "!=" => BinOp::Ne,
        "<" => BinOp::Lt,
        "<=" => BinOp::Le,
        ">" => BinOp::Gt,
        ">=" => BinOp::Ge,
        "and" => BinOp::And,
        "or" => BinOp::Or,
        _ => return Err(internal(span_of(pair), "an operator")),
    })
}

/// Builds any expression rule.
///
/// Recursion here follows bracket nesting only, and its frames must stay
/// small (debug builds, 2 MiB test threads): wrapper rules with a single
/// child are skipped in a loop, and each node kind is built by its own
/// function.
fn expr_d(pair: Pair<'_, Rule>) -> Result<Built> {
    let pair = skip_wrappers(pair);
    match pair.as_rule() {
        Rule::disjunction | Rule::conjunction | Rule::comparison | Rule::sum | Rule::product => {
            binary_chain(pair)
        }
        Rule::unary => unary(pair),
        Rule::postfix => postfix(pair),
        Rule::call => call_expr(pair),
        Rule::paren => paren(pair),
        Rule::list => list(pair),
        _ => leaf(pair).map(|e| (e, 1)),
    }
}

/// Descends through `expr`, through operator rules without an operator and
/// through `postfix` without an index: they add nothing to the tree.
fn skip_wrappers(mut pair: Pair<'_, Rule>) -> Pair<'_, Rule> {
    loop {
        let wrapper = matches!(
            pair.as_rule(),
            Rule::expr
                | Rule::slice_bound
                | Rule::disjunction
                | Rule::conjunction
                | Rule::comparison
                | Rule::sum
                | Rule::product
                | Rule::unary
                | Rule::postfix
        );
        if !wrapper {
            return pair;
        }
        let mut inner = pair.clone().into_inner();
        match (inner.next(), inner.next()) {
            (Some(only), None) => pair = only,
            _ => return pair,
        }
    }
}

#[inline(never)]
fn leaf(pair: Pair<'_, Rule>) -> Result<Expr> {
    let span = span_of(&pair);
    Ok(match pair.as_rule() {
        Rule::number => number(&pair)?,
        Rule::string => {
            let body = pair.into_inner().next().map_or("", |p| p.as_str());
            Expr::new(ExprKind::Str(unescape(body)), span)
        }
        Rule::boolean => Expr::new(ExprKind::Bool(pair.as_str() == "true"), span),
        Rule::ident => Expr::new(ExprKind::Ident(pair.as_str().to_string()), span),
        Rule::range => range(pair)?,
        _ => return Err(internal(span, "an expression")),
    })
}

#[inline(never)]
fn call_expr(pair: Pair<'_, Rule>) -> Result<Built> {
    let span = span_of(&pair);
    let (call, depth) = call_with_depth(pair)?;
    let at = call.func.span;
    node(ExprKind::Call(call), span, depth, at)
}

/// `(e)`: the parentheses belong to the expression's span.
#[inline(never)]
fn paren(pair: Pair<'_, Rule>) -> Result<Built> {
    let span = span_of(&pair);
    let (mut inner, depth) = expr_d(Children::of(pair).expect("an expression")?)?;
    inner.span = span;
    Ok((inner, depth))
}

#[inline(never)]
fn list(pair: Pair<'_, Rule>) -> Result<Built> {
    let span = span_of(&pair);
    let mut items = Vec::new();
    let mut depth = 0;
    let mut c = Children::of(pair);
    while let Some(item) = c.next() {
        let (e, d) = expr_d(item)?;
        depth = depth.max(d);
        items.push(e);
    }
    let at = Span::new(span.start as usize, span.start as usize + 1);
    node(ExprKind::List(items), span, depth, at)
}

/// `a OP b OP c ...`: one chain node, whatever its length (a chain is not
/// nesting). Comparisons may not chain.
#[inline(never)]
fn binary_chain(pair: Pair<'_, Rule>) -> Result<Built> {
    let is_comparison = pair.as_rule() == Rule::comparison;
    let mut inner = pair.into_inner();
    let Some(first) = inner.next() else {
        return Err(internal(Span::default(), "an operand"));
    };
    let (first, mut depth) = expr_d(first)?;
    let mut rest = Vec::new();
    while let Some(op) = inner.next() {
        let op_span = span_of(&op);
        let bin = binop(&op)?;
        if is_comparison {
            if let Some(first_op) = rest.first().map(|o: &Operation| o.op_span) {
                return Err(chained_comparison(first_op, op_span));
            }
        }
        let rhs = inner
            .next()
            .ok_or_else(|| internal(op_span, "an operand"))?;
        let (rhs, rhs_depth) = expr_d(rhs)?;
        depth = depth.max(rhs_depth);
        rest.push(Operation {
            op: bin,
            op_span,
            rhs,
        });
    }
    let Some(last) = rest.last() else {
        return Ok((first, depth));
    };
    let span = first.span.to(last.rhs.span);
    let at = rest[0].op_span;
    node(ExprKind::Binary(Box::new(first), rest), span, depth, at)
}

fn chained_comparison(first: Span, second: Span) -> Diagnostic {
    Diagnostic::new(
        Code::ParseError,
        second,
        "comparison operators cannot be chained",
    )
    .with_label("a second comparison")
    .with_secondary(first, "the first comparison")
    .with_help("compare two values at a time, e.g. `(a < b) * (b < c)` for `a < b < c`")
}

/// `- - x`: the minus signs, then the operand.
#[inline(never)]
fn unary(pair: Pair<'_, Rule>) -> Result<Built> {
    let span = span_of(&pair);
    let mut negs = Vec::new();
    let mut operand = None;
    for p in pair.into_inner() {
        if p.as_rule() == Rule::neg {
            negs.push(span_of(&p));
        } else {
            operand = Some(p);
        }
    }
    let operand = operand.ok_or_else(|| internal(span, "an operand"))?;
    let (mut e, mut depth) = expr_d(operand)?;
    for neg in negs.into_iter().rev() {
        let span = neg.to(e.span);
        (e, depth) = node(ExprKind::Unary(Box::new(e)), span, depth, neg)?;
    }
    Ok((e, depth))
}

/// `x[..][..]`: the operand, then each index suffix.
#[inline(never)]
fn postfix(pair: Pair<'_, Rule>) -> Result<Built> {
    let span = span_of(&pair);
    let mut inner = pair.into_inner();
    let first = inner.next().ok_or_else(|| internal(span, "an operand"))?;
    let (mut e, mut depth) = expr_d(first)?;
    for suffix in inner {
        let suffix_span = span_of(&suffix);
        let mut items = Vec::new();
        let mut c = Children::of(suffix);
        while let Some(item) = c.next() {
            if item.as_rule() == Rule::slice {
                let (slice, d) = slice(item)?;
                depth = depth.max(d);
                items.push(slice);
            } else {
                let (index, d) = expr_d(item)?;
                depth = depth.max(d);
                items.push(IndexItem::Index(index));
            }
        }
        let at = Span::new(suffix_span.start as usize, suffix_span.start as usize + 1);
        let span = e.span.to(suffix_span);
        (e, depth) = node(ExprKind::Index(Box::new(e), items), span, depth, at)?;
    }
    Ok((e, depth))
}

/// `a:b`, `:`, `a:`, `:b`: a bound before the colon is the start.
fn slice(pair: Pair<'_, Rule>) -> Result<(IndexItem, usize)> {
    let span = span_of(&pair);
    let (mut start, mut end) = (None, None);
    let mut seen_colon = false;
    let mut depth = 0;
    for p in pair.into_inner() {
        match p.as_rule() {
            Rule::colon => seen_colon = true,
            Rule::slice_bound => {
                let (e, d) = expr_d(p)?;
                depth = depth.max(d);
                if seen_colon {
                    end = Some(e);
                } else {
                    start = Some(e);
                }
            }
            _ => return Err(internal(span_of(&p), "a slice")),
        }
    }
    Ok((IndexItem::Slice { start, end, span }, depth))
}

fn number(pair: &Pair<'_, Rule>) -> Result<Expr> {
    let text = pair.as_str();
    let span = span_of(pair);
    let is_int = !text.contains(['.', 'e', 'E']);
    let bad = |message: String, label: &str, help: String| {
        Diagnostic::new(Code::ParseError, span, message)
            .with_label(label)
            .with_help(help)
    };
    let value = if is_int {
        match text.parse::<u64>() {
            Ok(v) if v <= MAX_INT => v as f64,
            _ => {
                return Err(bad(
                    format!("integer `{text}` is too large"),
                    "too large",
                    format!("integers must be at most 2^53 = {MAX_INT}"),
                ))
            }
        }
    } else {
        let Ok(value) = text.parse::<f64>() else {
            return Err(internal(span, "a number"));
        };
        if !value.is_finite() {
            return Err(bad(
                format!("number `{text}` is too large"),
                "too large for a 64-bit float",
                "numbers must be at most about 1.8e308".to_string(),
            ));
        }
        let mantissa = text.split(['e', 'E']).next().unwrap_or("");
        if value == 0.0 && mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
            return Err(bad(
                format!("number `{text}` is too small"),
                "rounds to 0 as a 64-bit float",
                "write `0` if zero is meant".to_string(),
            ));
        }
        value
    };
    Ok(Expr::new(ExprKind::Number { value, is_int }, span))
}

/// The text of a string literal: `\"` and `\\` are the only escapes.
fn unescape(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}
