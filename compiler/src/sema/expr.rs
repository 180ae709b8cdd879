//! Lowering expressions to IR, with name, dtype and shape checks.
//!
//! Owns: [`Env`] (what names mean) and [`Lowerer`], which turns an AST
//! expression into a graph node or a diagnostic pointing at the offending
//! text. Builtin functions are in [`super::functions`].
//!
//! Invariants: a node is only built after its operands' dtypes and shapes
//! have been checked, so the graph builder never sees bad shapes; every node
//! created while lowering an expression carries that expression's span (the
//! partial results of an operator chain carry the span up to their operand);
//! operator chains are lowered in a loop, so a chain of any length lowers in
//! bounded stack; no expression of finite constants lowers to a node that
//! the passes would fold to inf or NaN (`non-finite-constant`).

use std::collections::HashMap;

use specc_grammar::ast::{chain_spans, BinOp, Expr, ExprKind, IndexItem, Operation, Span};
use specc_grammar::{Code, Diagnostic};

use super::args::{self, describe};
use crate::interp;
use crate::ir::{shape, BinaryOp, DType, Dim, Graph, NodeId, Op, Shape};
use crate::passes::rules;

/// What a name refers to.
#[derive(Clone, Debug)]
pub struct Entry {
    /// `None` when the definition had an error (uses are silently poisoned).
    pub value: Option<NodeId>,
    pub span: Span,
    pub what: &'static str,
}

#[derive(Default)]
pub struct Env {
    pub entries: HashMap<String, Entry>,
}

impl Env {
    /// Defines a name, or reports a duplicate.
    pub fn define(
        &mut self,
        name: &str,
        span: Span,
        what: &'static str,
        value: Option<NodeId>,
    ) -> Result<(), Diagnostic> {
        if let Some(prev) = self.entries.get(name) {
            return Err(Diagnostic::new(
                Code::DuplicateName,
                span,
                format!("`{name}` is defined twice"),
            )
            .with_label("second definition")
            .with_secondary(prev.span, format!("first defined here as a {}", prev.what)));
        }
        self.entries
            .insert(name.to_string(), Entry { value, span, what });
        Ok(())
    }

    /// Poisons a name whose definition had an error, unless something
    /// already defines it: its uses then report nothing more.
    pub fn poison(&mut self, name: &str, span: Span, what: &'static str) {
        self.entries.entry(name.to_string()).or_insert(Entry {
            value: None,
            span,
            what,
        });
    }
}

/// A use of an int input as ids: class ids of exactly `classes` classes, or
/// (`at_most`) row ids of a table with `classes` rows.
#[derive(Clone, Debug)]
pub struct ClassUse {
    pub input: u32,
    pub classes: u32,
    pub span: Span,
    pub at_most: bool,
}

/// The value of a constant expression, as far as sema knows it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Known {
    pub value: f64,
    /// The float32 value the passes fold it to; otherwise (an op the step
    /// computes with its own polynomials) the float64 value of the op.
    pub exact: bool,
}

pub struct Lowerer<'a> {
    pub g: &'a mut Graph,
    pub env: &'a Env,
    pub class_uses: &'a mut Vec<ClassUse>,
    /// The values of constant expressions lowered so far (`-1.0` is
    /// `neg(1.0)` in the IR, and `sqrt(-1.0)` must see its value).
    pub constants: &'a mut HashMap<NodeId, Known>,
    /// The runtime checks lowered so far (`check_numerics` in expressions,
    /// `assert_*` statements).
    pub assertions: &'a mut Vec<crate::model::Assertion>,
    /// The variables the step assigns besides the optimizer (`batch_norm`'s
    /// moving statistics); checked when the model is built.
    pub state_updates: &'a mut Vec<crate::model::StateUpdate>,
}

pub type R<T> = Result<T, Diagnostic>;

impl Lowerer<'_> {
    /// Lowers an expression to a tensor node.
    pub fn lower(&mut self, e: &Expr) -> R<NodeId> {
        let saved = self.g.current_span;
        self.g.current_span = Some(e.span);
        let r = self
            .lower_inner(e)
            .and_then(|v| self.finite_constant(v, e.span));
        self.g.current_span = saved;
        r
    }

    fn lower_inner(&mut self, e: &Expr) -> R<NodeId> {
        match &e.kind {
            ExprKind::Number { value, .. } => Ok(self.g.scalar(f32_literal(*value, e.span)?)),
            ExprKind::Ident(name) => self.name(name, e.span),
            ExprKind::List(_) => self.constant(e),
            ExprKind::Unary(x) => {
                let v = self.float(x)?;
                Ok(self.g.neg(v))
            }
            ExprKind::Binary(first, rest) => self.chain(first, rest, e.span),
            ExprKind::Call(call) => super::functions::lower_call(self, call),
            ExprKind::Index(x, items) => self.index(x, items, e.span),
            ExprKind::Str(_) | ExprKind::Bool(_) | ExprKind::Range(..) => Err(Diagnostic::new(
                Code::ArgumentType,
                e.span,
                format!("expected a tensor, found {}", describe(e)),
            )
            .with_label("not a tensor")),
        }
    }

    fn name(&mut self, name: &str, span: Span) -> R<NodeId> {
        if name == "global_step" && !self.env.entries.contains_key(name) {
            // TF's global_step (before this step's increment), as float32.
            return Ok(self.g.global_step());
        }
        match self.env.entries.get(name) {
            Some(Entry { value: Some(v), .. }) => Ok(*v),
            Some(Entry {
                value: None,
                what,
                span: defined,
            }) if *what == super::features::CATEGORICAL
                || *what == super::features::DENSE_COLUMN =>
            {
                let help = if *what == super::features::CATEGORICAL {
                    "wrap it in indicator_column or embedding_column inside input_layer, or pass it to linear_model"
                } else {
                    "use it inside input_layer (or linear_model), and that layer's binding in the computation"
                };
                Err(Diagnostic::new(
                    Code::ArgumentType,
                    span,
                    format!("`{name}` is a {what}, not a tensor"),
                )
                .with_label(format!("a {what}"))
                .with_secondary(*defined, "defined here")
                .with_help(help))
            }
            Some(Entry { value: None, .. }) => Err(Diagnostic::new(Code::Poisoned, span, "")),
            None => {
                let mut d =
                    Diagnostic::new(Code::UnknownName, span, format!("unknown name `{name}`"))
                        .with_label("not defined");
                if name == "B" {
                    d = d.with_help(
                        "`B` (the batch size) is only a dimension in shapes, not a value",
                    );
                } else if let Some(s) =
                    args::suggest(name, self.env.entries.keys().map(|k| k.as_str()))
                {
                    d = d.with_help(format!("did you mean `{s}`?"));
                } else {
                    d = d.with_help("names must be defined (as a feature, label, parameter or binding) before they are used");
                }
                Err(d)
            }
        }
    }

    /// Lowers `e` and checks it is float32.
    pub fn float(&mut self, e: &Expr) -> R<NodeId> {
        let v = self.lower(e)?;
        self.expect_float(v, e.span)
    }

    /// Checks that the value of the expression at `span` is float32.
    fn expect_float(&self, v: NodeId, span: Span) -> R<NodeId> {
        if self.g.dtype(v) != DType::F32 {
            return Err(Diagnostic::new(
                Code::DtypeMismatch,
                span,
                "expected a float32 tensor, found int32",
            )
            .with_label("int32")
            .with_help("convert it with cast(x, float32)"));
        }
        Ok(v)
    }

    /// The value of `n` if it is a constant expression (looking through
    /// broadcasts and reshapes of one).
    pub(crate) fn known(&self, mut n: NodeId) -> Option<Known> {
        loop {
            if let Some(k) = self.constants.get(&n) {
                return Some(*k);
            }
            match self.g.op(n) {
                Op::Scalar(bits) => {
                    return Some(Known {
                        value: f64::from(f32::from_bits(*bits)),
                        exact: true,
                    })
                }
                Op::BroadcastTo(_) | Op::Reshape(_) => n = self.g.inputs_of(n)[0],
                _ => return None,
            }
        }
    }

    /// `v`, unless it is an op on finite constants whose value is inf or NaN
    /// (`1 / 0`, `sqrt(-1)`, `1e30 * 1e30`, `log(0)`, `exp(1000)`): the step
    /// would compute that value on every call, and training would fail far
    /// from the cause. Folded ops are judged by the value the passes fold them
    /// to; the others (computed by the step's polynomials) by their float64
    /// value, reported only when NaN or beyond twice float32's range, where
    /// the step's result is inf however it rounds.
    fn finite_constant(&mut self, v: NodeId, span: Span) -> R<NodeId> {
        let op = self.g.op(v);
        if !matches!(op, Op::Unary(_) | Op::Binary(_)) {
            return Ok(v);
        }
        let args: Option<Vec<Known>> = self.g.inputs_of(v).iter().map(|&i| self.known(i)).collect();
        let Some(args) = args.filter(|a| a.iter().all(|k| k.value.is_finite())) else {
            return Ok(v);
        };
        let exact: Option<Vec<f32>> = args
            .iter()
            .map(|k| k.exact.then_some(k.value as f32))
            .collect();
        let k = match (exact.and_then(|a| rules::fold(op, &a)), op, args.as_slice()) {
            (Some(c), _, _) => Known {
                value: f64::from(c),
                exact: true,
            },
            (None, Op::Unary(u), [a]) => Known {
                value: interp::unary(*u, a.value),
                exact: false,
            },
            (None, Op::Binary(b), [a, c]) => Known {
                value: interp::binary(*b, a.value, c.value),
                exact: false,
            },
            _ => return Ok(v),
        };
        self.constants.insert(v, k);
        let overflows = k.value.abs() > 2.0 * f64::from(f32::MAX);
        if k.value.is_nan() || (k.exact && k.value.is_infinite()) || overflows {
            let shown = if k.value.is_nan() {
                "NaN"
            } else if k.value > 0.0 {
                "inf"
            } else {
                "-inf"
            };
            return Err(non_finite(span, shown));
        }
        Ok(v)
    }

    /// A chain `a op b op c ...` (whose text is at `whole`), lowered left to
    /// right in a loop (a chain may have any length); each partial result has
    /// its own span.
    fn chain(&mut self, first: &Expr, rest: &[Operation], whole: Span) -> R<NodeId> {
        let mut acc = self.lower(first)?;
        for (lhs_span, span, o) in chain_spans(first, rest, whole) {
            let saved = self.g.current_span;
            self.g.current_span = Some(span);
            let r = self
                .binary(o.op, acc, lhs_span, &o.rhs, span)
                .and_then(|v| self.finite_constant(v, span));
            self.g.current_span = saved;
            acc = r?;
        }
        Ok(acc)
    }

    /// A tensor constant from a (nested) list of numbers.
    pub fn constant(&mut self, e: &Expr) -> R<NodeId> {
        let (dims, values) = constant_values(e)?;
        let shape = Shape::fixed(&dims);
        Ok(self.g.tensor(DType::F32, shape, values))
    }

    /// `x op b`, where `x` is the lowered left operand (the source text at
    /// `xs`) and `span` covers both operands.
    fn binary(&mut self, op: BinOp, x: NodeId, xs: Span, b: &Expr, span: Span) -> R<NodeId> {
        if matches!(op, BinOp::And | BinOp::Or) {
            return Err(Diagnostic::new(
                Code::UnsupportedArgument,
                span,
                format!(
                    "`{}` joins the conditions of a data source's `filter` or of a static \
                     `if`, not tensors",
                    op.symbol()
                ),
            )
            .with_label("an operand is a tensor")
            .with_help(if op == BinOp::And {
                "for 0/1 masks multiply them: (a > 0) * (b > 0)"
            } else {
                "for 0/1 masks take the larger: maximum(a > 0, b > 0)"
            }));
        }
        if matches!(op, BinOp::FloorDiv | BinOp::Mod) {
            return Err(Diagnostic::new(
                Code::DtypeMismatch,
                span,
                format!(
                    "`{}` divides static integers (sizes, loop variables), not tensors",
                    op.symbol()
                ),
            )
            .with_label("an operand is a tensor")
            .with_help("for tensors write floor(a / b), or a - b * floor(a / b)"));
        }
        if op == BinOp::MatMul {
            let x = self.expect_float(x, xs)?;
            let y = self.float(b)?;
            return self.matmul(x, y, false, false, xs, b.span, span);
        }
        let cmp = match op {
            BinOp::Eq => Some(BinaryOp::Eq),
            BinOp::Ne => Some(BinaryOp::Ne),
            BinOp::Lt => Some(BinaryOp::Lt),
            BinOp::Le => Some(BinaryOp::Le),
            BinOp::Gt => Some(BinaryOp::Gt),
            BinOp::Ge => Some(BinaryOp::Ge),
            _ => None,
        };
        let (x, y) = if cmp.is_some() {
            // Comparisons accept int operands (e.g. labels == argmax(logits)).
            let y = self.lower(b)?;
            (self.g.cast(x, DType::F32), self.g.cast(y, DType::F32))
        } else {
            let y = self.lower(b)?;
            for (v, sp) in [(x, xs), (y, b.span)] {
                if self.g.dtype(v) == DType::I32 {
                    return Err(Diagnostic::new(
                        Code::DtypeMismatch,
                        sp,
                        format!(
                            "`{}` needs float32 operands, but this is int32",
                            op.symbol()
                        ),
                    )
                    .with_label("int32")
                    .with_help("convert it with cast(x, float32)"));
                }
            }
            (x, y)
        };
        self.check_broadcast(x, y, xs, b.span, span, op.symbol())?;
        let bop = match (cmp, op) {
            (Some(c), _) => c,
            (None, BinOp::Add) => BinaryOp::Add,
            (None, BinOp::Sub) => BinaryOp::Sub,
            (None, BinOp::Mul) => BinaryOp::Mul,
            (None, BinOp::Div) => BinaryOp::Div,
            (None, other) => {
                return Err(Diagnostic::new(
                    Code::InternalError,
                    span,
                    format!("operator `{}` reached arithmetic", other.symbol()),
                ))
            }
        };
        Ok(self.g.binary(bop, x, y))
    }

    /// Checks that two operands broadcast; the error shows both shapes.
    pub fn check_broadcast(
        &self,
        x: NodeId,
        y: NodeId,
        xs: Span,
        ys: Span,
        span: Span,
        what: &str,
    ) -> R<Shape> {
        let (sx, sy) = (self.g.shape(x), self.g.shape(y));
        shape::broadcast(sx, sy).map_err(|msg| {
            Diagnostic::new(
                Code::BroadcastShape,
                span,
                format!("operands of `{what}` do not broadcast: {sx} and {sy}"),
            )
            .with_label(msg)
            .with_secondary(xs, format!("this is {sx}"))
            .with_secondary(ys, format!("this is {sy}"))
            .with_help(
                "broadcasting aligns shapes from the right; each dimension must match or be 1",
            )
        })
    }

    /// A checked matrix product.
    #[allow(clippy::too_many_arguments)]
    pub fn matmul(
        &mut self,
        x: NodeId,
        y: NodeId,
        ta: bool,
        tb: bool,
        xs: Span,
        ys: Span,
        span: Span,
    ) -> R<NodeId> {
        let (sx, sy) = (self.g.shape(x).clone(), self.g.shape(y).clone());
        // As tf.linalg.matmul: the last two axes of each operand are its
        // matrices, the leading ones its batch axes, which broadcast
        // (NumPy's rules). `[..., M, K] @ [K, N]` is one GEMM of `a`'s rows
        // (the IR's matrix of `a`'s leading dims by its last one); other
        // batches are `Op::BatchMatMul` over the broadcast batch axes, an
        // operand whose batch axes broadcast materialized (`BroadcastTo`).
        let rank_error = |s: &Shape, sp: Span| {
            Diagnostic::new(
                Code::MatmulShape,
                sp,
                format!(
                    "matmul needs a matrix or a batch of them (rank 2 or more), but this is {s}"
                ),
            )
            .with_label(format!("rank {}", s.rank()))
            .with_help("reshape it, or use `*` for an elementwise product")
        };
        if sx.rank() < 2 {
            return Err(rank_error(&sx, xs));
        }
        if sy.rank() < 2 {
            return Err(rank_error(&sy, ys));
        }
        // Operands that do not fit: the message, a label, both shapes marked.
        let mismatch = |message: String, label: String| {
            Diagnostic::new(Code::MatmulShape, span, message)
                .with_label(label)
                .with_secondary(xs, format!("this is {sx}"))
                .with_secondary(ys, format!("this is {sy}"))
        };
        let shapes_error =
            |msg: String| mismatch(format!("matmul shapes do not match: {sx} @ {sy}"), msg);
        if sy.rank() == 2 {
            // `[..., K, M]` with transpose_a: each matrix of `a` transposed
            // first (its last two axes swapped; the batch stays first).
            let (x, ta) = if ta && sx.rank() > 2 {
                let r = sx.rank();
                let mut perm: Vec<usize> = (0..r).collect();
                perm.swap(r - 2, r - 1);
                shape::matmul(
                    &shape::transpose(&sx, &perm).map_err(shapes_error)?,
                    &sy,
                    false,
                    tb,
                )
                .map_err(shapes_error)?;
                (self.g.transpose(x, &perm), false)
            } else {
                shape::matmul(&sx, &sy, ta, tb).map_err(shapes_error)?;
                (x, ta)
            };
            return Ok(self.g.matmul(x, y, ta, tb));
        }
        let split = |s: &Shape| {
            let r = s.rank();
            (Shape(s.0[..r - 2].to_vec()), Shape(s.0[r - 2..].to_vec()))
        };
        let ((bx, mx), (by, my)) = (split(&sx), split(&sy));
        let batch = shape::broadcast(&bx, &by).map_err(|msg| {
            mismatch(
                format!("the batch axes of matmul's operands do not broadcast: {sx} @ {sy}"),
                msg,
            )
            .with_help(
                "batch axes (all but the last two) broadcast as NumPy's: each must match or be 1",
            )
        })?;
        if batch.0[1..].contains(&Dim::Batch) {
            return Err(mismatch(
                format!(
                    "matmul's batch axes have the batch dimension `B` after the first: {sx} @ {sy}"
                ),
                format!("batch axes {batch}"),
            )
            .with_help("a batch of products over `B` has `B` as its first axis"));
        }
        let groups = u8::try_from(batch.rank()).map_err(|_| {
            mismatch(
                format!("matmul of {} batch axes", batch.rank()),
                "too many batch axes".into(),
            )
        })?;
        let full = |m: &Shape| Shape(batch.0.iter().chain(&m.0).copied().collect());
        let (fx, fy) = (full(&mx), full(&my));
        shape::batch_matmul(&fx, &fy, ta, tb, batch.rank()).map_err(shapes_error)?;
        let x = self.g.broadcast_to(x, &fx);
        let y = self.g.broadcast_to(y, &fy);
        Ok(self.g.grouped_matmul(x, y, ta, tb, groups))
    }

    /// Normalizes an axis argument against a rank (`bad-axis` on error).
    pub fn axis(&self, e: &Expr, rank: usize) -> R<usize> {
        let a = args::eval_int(e)?;
        shape::axis(a, rank).map_err(|msg| {
            Diagnostic::new(Code::BadAxis, e.span, msg).with_label(format!("axis {a}"))
        })
    }

    /// An axis list (`None`: all axes).
    pub fn axes(&self, e: Option<&Expr>, rank: usize) -> R<Vec<usize>> {
        match e {
            None => Ok((0..rank).collect()),
            Some(e) if args::is_none(e) => Ok((0..rank).collect()),
            Some(e) => {
                let list = args::eval_int_list(e)?;
                let mut out = Vec::new();
                for a in list {
                    let ax = shape::axis(a, rank).map_err(|msg| {
                        Diagnostic::new(Code::BadAxis, e.span, msg).with_label(format!("axis {a}"))
                    })?;
                    if out.contains(&ax) {
                        return Err(Diagnostic::new(
                            Code::BadAxis,
                            e.span,
                            format!("axis {a} appears twice"),
                        )
                        .with_label("repeated axis"));
                    }
                    out.push(ax);
                }
                Ok(out)
            }
        }
    }

    fn index(&mut self, x: &Expr, items: &[IndexItem], span: Span) -> R<NodeId> {
        let v = self.lower(x)?;
        let s = self.g.shape(v).clone();
        if items.len() > s.rank() {
            return Err(Diagnostic::new(
                Code::BadIndex,
                span,
                format!(
                    "{} indices for a tensor of rank {} ({s})",
                    items.len(),
                    s.rank()
                ),
            )
            .with_label("too many indices"));
        }
        let mut begin = Vec::new();
        let mut sliced = Vec::new();
        let mut kept = Vec::new();
        for (axis, d) in s.0.iter().enumerate() {
            let item = items.get(axis);
            let full = matches!(
                item,
                None | Some(IndexItem::Slice {
                    start: None,
                    end: None,
                    ..
                })
            );
            if *d == Dim::Batch {
                if !full {
                    let sp = match item {
                        Some(IndexItem::Index(e)) => e.span,
                        Some(IndexItem::Slice { span, .. }) => *span,
                        None => span,
                    };
                    return Err(Diagnostic::new(
                        Code::BadIndex,
                        sp,
                        "the batch dimension can only be taken whole (`:`)",
                    )
                    .with_label("indexes the batch dimension"));
                }
                begin.push(0);
                sliced.push(Dim::Batch);
                kept.push(Dim::Batch);
                continue;
            }
            let n = i64::from(d.fixed().unwrap_or(0));
            let norm = |e: &Expr, allow_end: bool| -> R<i64> {
                let i = args::eval_int(e)?;
                let j = if i < 0 { i + n } else { i };
                let hi = if allow_end { n } else { n - 1 };
                if j < 0 || j > hi {
                    return Err(Diagnostic::new(
                        Code::BadIndex,
                        e.span,
                        format!("index {i} is out of range for a dimension of size {n}"),
                    )
                    .with_label("out of range"));
                }
                Ok(j)
            };
            match item {
                None => {
                    begin.push(0);
                    sliced.push(*d);
                    kept.push(*d);
                }
                Some(IndexItem::Index(e)) => {
                    let i = norm(e, false)?;
                    begin.push(i as u32);
                    sliced.push(Dim::Fixed(1));
                }
                Some(IndexItem::Slice {
                    start,
                    end,
                    span: sp,
                }) => {
                    let a = match start {
                        Some(e) => norm(e, true)?,
                        None => 0,
                    };
                    let b = match end {
                        Some(e) => norm(e, true)?,
                        None => n,
                    };
                    if b <= a {
                        return Err(Diagnostic::new(
                            Code::BadIndex,
                            *sp,
                            format!("empty slice {a}:{b}"),
                        )
                        .with_label("selects nothing"));
                    }
                    begin.push(a as u32);
                    sliced.push(Dim::Fixed((b - a) as u32));
                    kept.push(Dim::Fixed((b - a) as u32));
                }
            }
        }
        let sl = self.g.slice(v, &begin, &Shape(sliced));
        Ok(self.g.reshape(sl, &Shape(kept)))
    }
}

/// The dims and row-major values of a nested list of numbers.
pub fn constant_values(e: &Expr) -> R<(Vec<u32>, Vec<f32>)> {
    match &e.kind {
        ExprKind::List(items) => {
            if items.is_empty() {
                return Err(Diagnostic::new(Code::EmptyArgument, e.span, "empty list")
                    .with_label("a tensor constant needs at least one element"));
            }
            let mut dims0: Option<Vec<u32>> = None;
            let mut values = Vec::new();
            for it in items {
                let (d, v) = constant_values(it)?;
                match &dims0 {
                    None => dims0 = Some(d),
                    Some(d0) if *d0 != d => {
                        return Err(Diagnostic::new(
                            Code::MalformedArgument,
                            it.span,
                            "ragged list: elements have different shapes",
                        )
                        .with_label("differs from the first element"))
                    }
                    _ => {}
                }
                values.extend(v);
            }
            let mut dims = vec![items.len() as u32];
            dims.extend(dims0.unwrap_or_default());
            Ok((dims, values))
        }
        _ => {
            let v = args::eval_number(e)?;
            Ok((vec![], vec![f32_literal(v, e.span)?]))
        }
    }
}

/// A compile-time number as the float32 the step computes with: a finite
/// value beyond float32's range would silently become inf.
fn f32_literal(v: f64, span: Span) -> R<f32> {
    let f = v as f32;
    if v.is_finite() && !f.is_finite() {
        return Err(Diagnostic::new(
            Code::NonFiniteConstant,
            span,
            format!("{v:e} is beyond float32's range"),
        )
        .with_label(format!("{f} in float32"))
        .with_help("float32 values are at most about 3.4e38 in magnitude"));
    }
    Ok(f)
}

/// `non-finite-constant`: an expression of constants whose float32 value is `value` (inf or NaN).
pub fn non_finite(span: Span, value: &str) -> Diagnostic {
    Diagnostic::new(
        Code::NonFiniteConstant,
        span,
        format!("this constant expression evaluates to {value}"),
    )
    .with_label(format!("{value} at compile time"))
    .with_help(
        "the step would compute this value on every call and training would produce NaN; \
         look for a division by zero, the square root or log of a negative number, or a \
         value beyond float32's range (about 3.4e38)",
    )
}
