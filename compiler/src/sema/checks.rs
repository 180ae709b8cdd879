//! Runtime checks: TF's `tf.debugging` ops.
//!
//! Owns: the table of checks (`CHECKS`: TF's names and argument names),
//! their lowering and the static ones' diagnostics.
//! - `check_numerics(tensor, message)` and `assert_all_finite(x, message)`
//!   are expressions that return their tensor (an identity: the gradient
//!   passes through, as TF's); the step computes one scalar that is 2 when
//!   the tensor has a NaN, 1 when it has an infinity, 0 otherwise (two sums
//!   fused into the loop that computes the tensor, see [`non_finite_flag`]).
//! - `assert_equal`, `assert_none_equal`, `assert_less`, `assert_less_equal`,
//!   `assert_greater`, `assert_greater_equal` (x, y broadcast), and
//!   `assert_positive`, `assert_negative`, `assert_non_negative`,
//!   `assert_non_positive`, `assert_near(x, y, rtol, atol)` are statements;
//!   the step computes one scalar per check: how many elements fail it
//!   (TF's condition, so a NaN fails every comparison but `!=`).
//! - `assert_rank`, `assert_rank_at_least` and `assert_type` are static in
//!   specc (shapes and dtypes are known when compiling): a failure is a
//!   compile error with a caret, and nothing is computed. So is a comparison
//!   of constants (as TF checks constant operands when building the graph).
//!
//! Invariants: a check adds no node to any value the spec computes (its
//! nodes only feed its own scalar), so the values it watches, and training,
//! are unchanged; each runtime check is one [`Assertion`] of the model in
//! source order, whose value reduces its predicate over the tensor with sums
//! (fused into the loops where the planner allows, no branch per element).

use specc_grammar::ast::{Call, Expr};
use specc_grammar::{Code, Diagnostic};
use specc_runtime::abi::AssertionValue;

use super::args::{self, opt, req, Bound, Param};
use super::expr::{Lowerer, R};
use crate::ir::{BinaryOp, DType, NodeId};
use crate::model::Assertion;

/// How a check is computed.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// `check_numerics` / `assert_all_finite`: an expression returning `x`.
    Finite,
    /// `x OP y` must hold element-wise.
    Compare(BinaryOp),
    /// `x OP 0` must hold element-wise.
    Sign(BinaryOp),
    /// `|x - y| <= atol + rtol * |y|`.
    Near,
    /// Static: the rank.
    Rank { at_least: bool },
    /// Static: the dtype.
    Type,
}

struct Check {
    name: &'static str,
    params: &'static [Param<'static>],
    kind: Kind,
    /// TF's condition in words (`x < y`).
    condition: &'static str,
}

const XY: &[Param] = &[
    req("x"),
    req("y"),
    opt("message"),
    opt("summarize"),
    opt("name"),
];
const X: &[Param] = &[req("x"), opt("message"), opt("summarize"), opt("name")];

const fn cmp(name: &'static str, op: BinaryOp, condition: &'static str) -> Check {
    Check {
        name,
        params: XY,
        kind: Kind::Compare(op),
        condition,
    }
}

const fn sign(name: &'static str, op: BinaryOp, condition: &'static str) -> Check {
    Check {
        name,
        params: X,
        kind: Kind::Sign(op),
        condition,
    }
}

/// Every check, by TF name (`tf.debugging.*`).
const CHECKS: &[Check] = &[
    Check {
        name: "check_numerics",
        params: &[req("tensor"), req("message"), opt("name")],
        kind: Kind::Finite,
        condition: "tensor is finite",
    },
    Check {
        name: "assert_all_finite",
        params: &[req("x"), req("message"), opt("name")],
        kind: Kind::Finite,
        condition: "x is finite",
    },
    cmp("assert_equal", BinaryOp::Eq, "x == y"),
    cmp("assert_none_equal", BinaryOp::Ne, "x != y"),
    cmp("assert_less", BinaryOp::Lt, "x < y"),
    cmp("assert_less_equal", BinaryOp::Le, "x <= y"),
    cmp("assert_greater", BinaryOp::Gt, "x > y"),
    cmp("assert_greater_equal", BinaryOp::Ge, "x >= y"),
    sign("assert_positive", BinaryOp::Gt, "x > 0"),
    sign("assert_negative", BinaryOp::Lt, "x < 0"),
    sign("assert_non_negative", BinaryOp::Ge, "x >= 0"),
    sign("assert_non_positive", BinaryOp::Le, "x <= 0"),
    Check {
        name: "assert_near",
        params: &[
            req("x"),
            req("y"),
            opt("rtol"),
            opt("atol"),
            opt("message"),
            opt("summarize"),
            opt("name"),
        ],
        kind: Kind::Near,
        condition: "|x - y| <= atol + rtol * |y|",
    },
    Check {
        name: "assert_rank",
        params: &[req("x"), req("rank"), opt("message"), opt("name")],
        kind: Kind::Rank { at_least: false },
        condition: "rank(x) == rank",
    },
    Check {
        name: "assert_rank_at_least",
        params: &[req("x"), req("rank"), opt("message"), opt("name")],
        kind: Kind::Rank { at_least: true },
        condition: "rank(x) >= rank",
    },
    Check {
        name: "assert_type",
        params: &[req("tensor"), req("tf_type"), opt("message"), opt("name")],
        kind: Kind::Type,
        condition: "dtype(tensor) == tf_type",
    },
];

/// TF's default tolerance of `assert_near` for float32: `10 * eps`.
pub const NEAR_DEFAULT_TOL: f32 = 10.0 * f32::EPSILON;

/// Whether `name` is a check usable as a statement.
pub fn is_check(name: &str) -> bool {
    CHECKS.iter().any(|c| c.name == name)
}

/// The names of the checks (for "is a statement" help and suggestions).
pub fn names() -> impl Iterator<Item = &'static str> {
    CHECKS.iter().map(|c| c.name)
}

/// Whether `name` is a check that is also an expression (returns its tensor).
pub fn is_expression(name: &str) -> bool {
    CHECKS
        .iter()
        .any(|c| c.name == name && matches!(c.kind, Kind::Finite))
}

/// Lowers a check called as `call`; returns the checked tensor for
/// `check_numerics` / `assert_all_finite`, `None` for the others.
pub fn lower(lw: &mut Lowerer, call: &Call) -> R<Option<NodeId>> {
    let name = call.func.name.as_str();
    let Some(check) = CHECKS.iter().find(|c| c.name == name) else {
        return Err(Diagnostic::new(
            Code::UnknownFunction,
            call.func.span,
            format!("`{name}` is not a check"),
        ));
    };
    let b = args::bind(name, call, check.params)?;
    let message_at = check.params.iter().position(|p| p.name == "message");
    let message = match message_at.and_then(|i| b.get(i)) {
        Some(e) => args::eval_string(e)?.to_string(),
        None => String::new(),
    };
    let g = &mut *lw;
    let (flag, value, result) = match check.kind {
        Kind::Finite => {
            let x = g.float(b.req(0))?;
            (non_finite(g, x), AssertionValue::NonFinite, Some(x))
        }
        Kind::Compare(op) => {
            let (x, y) = operands(g, &b, call)?;
            if let Some(holds) = constant_holds(g, x, y, |x, y| compare(op, x, y)) {
                return static_outcome(holds, check, call, &message);
            }
            let holds = g.g.binary(op, x, y);
            (count_failures(g, holds), AssertionValue::Count, None)
        }
        Kind::Sign(op) => {
            let x = g.lower(b.req(0))?;
            let x = g.g.cast(x, DType::F32);
            let zero = g.g.scalar(0.0);
            if let Some(holds) = constant_holds(g, x, zero, |x, y| compare(op, x, y)) {
                return static_outcome(holds, check, call, &message);
            }
            let holds = g.g.binary(op, x, zero);
            (count_failures(g, holds), AssertionValue::Count, None)
        }
        Kind::Near => {
            let (x, y) = operands(g, &b, call)?;
            let tol = |i: usize| -> R<f32> {
                match b.get(i) {
                    None => Ok(NEAR_DEFAULT_TOL),
                    Some(e) if args::is_none(e) => Ok(NEAR_DEFAULT_TOL),
                    Some(e) => {
                        let v = args::eval_number(e)?;
                        if !(v >= 0.0 && v.is_finite()) {
                            return Err(Diagnostic::new(
                                Code::ArgumentOutOfRange,
                                e.span,
                                format!("a tolerance must be a finite number >= 0, found {v}"),
                            )
                            .with_label("not a tolerance"));
                        }
                        Ok(v as f32)
                    }
                }
            };
            let (rtol, atol) = (tol(2)?, tol(3)?);
            // In the step's float32 operations and order.
            let near = |x: f32, y: f32| (x - y).abs() <= atol + rtol * y.abs();
            if let Some(holds) = constant_holds(g, x, y, near) {
                return static_outcome(holds, check, call, &message);
            }
            let diff = g.g.sub(x, y);
            let diff = g.g.unary(crate::ir::UnaryOp::Abs, diff);
            let ay = g.g.unary(crate::ir::UnaryOp::Abs, y);
            let rtol = g.g.scalar(rtol);
            let atol = g.g.scalar(atol);
            let scaled = g.g.mul(rtol, ay);
            let bound = g.g.add(atol, scaled);
            let holds = g.g.binary(BinaryOp::Le, diff, bound);
            (count_failures(g, holds), AssertionValue::Count, None)
        }
        Kind::Rank { at_least } => {
            let x = g.lower(b.req(0))?;
            let rank = args::eval_int(b.req(1))?;
            let shape = g.g.shape(x).clone();
            let actual = shape.rank() as i64;
            let ok = if at_least {
                actual >= rank
            } else {
                actual == rank
            };
            if !ok {
                let want = if at_least { "at least " } else { "" };
                return Err(static_failure(
                    Code::RankAssertion,
                    call,
                    &message,
                    format!("`{name}` failed: the tensor has rank {actual}, expected {want}{rank}"),
                    format!("rank {actual}, not {want}{rank}"),
                )
                .with_secondary(b.req(0).span, format!("this is {shape}")));
            }
            return Ok(None);
        }
        Kind::Type => {
            let x = g.lower(b.req(0))?;
            let te = b.req(1);
            let want = match args::eval_ident(te)? {
                "float32" | "tf.float32" => DType::F32,
                "int32" | "tf.int32" => DType::I32,
                other => {
                    return Err(Diagnostic::new(
                        Code::UnknownChoice,
                        te.span,
                        format!("unknown type `{other}`"),
                    )
                    .with_label("not a specc type")
                    .with_help("specc's tensors are float32 or int32"))
                }
            };
            let actual = g.g.dtype(x);
            if actual != want {
                let tf = |d: DType| match d {
                    DType::F32 => "float32",
                    DType::I32 => "int32",
                };
                return Err(static_failure(
                    Code::TypeAssertion,
                    call,
                    &message,
                    format!(
                        "`{name}` failed: the tensor is {}, expected {}",
                        tf(actual),
                        tf(want)
                    ),
                    format!("{}, not {}", tf(actual), tf(want)),
                )
                .with_secondary(b.req(0).span, tf(actual)));
            }
            return Ok(None);
        }
    };
    lw.assertions.push(Assertion {
        kind: check.name,
        condition: check.condition.to_string(),
        message,
        span: call.span,
        value,
        node: flag,
    });
    Ok(result)
}

/// Whether `holds(x, y)` for two exact float32 constants (`None` when either
/// is not one: the step checks it). TF checks constant operands when it
/// builds the graph, too.
fn constant_holds(
    lw: &Lowerer,
    x: NodeId,
    y: NodeId,
    holds: impl Fn(f32, f32) -> bool,
) -> Option<bool> {
    let (kx, ky) = (lw.known(x)?, lw.known(y)?);
    (kx.exact && ky.exact).then(|| holds(kx.value as f32, ky.value as f32))
}

/// A comparison as the step computes it (a NaN fails all but `!=`).
fn compare(op: BinaryOp, x: f32, y: f32) -> bool {
    match op {
        BinaryOp::Eq => x == y,
        BinaryOp::Ne => x != y,
        BinaryOp::Lt => x < y,
        BinaryOp::Le => x <= y,
        BinaryOp::Gt => x > y,
        _ => x >= y,
    }
}

/// A check of constants: nothing to compute when it holds, a compile error
/// when it does not.
fn static_outcome(holds: bool, check: &Check, call: &Call, message: &str) -> R<Option<NodeId>> {
    if holds {
        return Ok(None);
    }
    Err(static_failure(
        Code::AssertionFailed,
        call,
        message,
        format!(
            "`{}` fails for constants: Condition {} does not hold",
            check.name, check.condition
        ),
        "always fails".into(),
    ))
}

/// A static check's failure, with the user's message as help.
fn static_failure(
    code: Code,
    call: &Call,
    message: &str,
    text: String,
    label: String,
) -> Diagnostic {
    let d = Diagnostic::new(code, call.span, text).with_label(label);
    if message.is_empty() {
        d
    } else {
        d.with_help(message.to_string())
    }
}

/// `x` and `y` as float32 (int operands converted, as comparisons do),
/// checked to broadcast.
fn operands(lw: &mut Lowerer, b: &Bound, call: &Call) -> R<(NodeId, NodeId)> {
    let (ex, ey): (&Expr, &Expr) = (b.req(0), b.req(1));
    let x = lw.lower(ex)?;
    let y = lw.lower(ey)?;
    let x = lw.g.cast(x, DType::F32);
    let y = lw.g.cast(y, DType::F32);
    lw.check_broadcast(x, y, ex.span, ey.span, call.span, call.func.name.as_str())?;
    Ok((x, y))
}

/// Over every element of the 1.0/0.0 tensor `holds`: how many are 0.
fn count_failures(lw: &mut Lowerer, holds: NodeId) -> NodeId {
    let one = lw.g.scalar(1.0);
    let fails = lw.g.sub(one, holds);
    lw.g.sum_all(fails)
}

/// Over every element of `x`: 2 if one is NaN, else 1 if one is infinite,
/// else 0 (see [`non_finite_flag`]).
fn non_finite(lw: &mut Lowerer, x: NodeId) -> NodeId {
    non_finite_flag(lw.g, x)
}

/// The non-finite flag of `x`, built in `g` (shared with the search for a
/// NaN's origin): two sums over the elements, fused into one loop — `x - x`
/// (0 for a finite element, NaN for an infinite or NaN one, so the sum is
/// NaN when any element is not finite) and `x != x` (the NaNs) — then, on
/// scalars, `(sum1 != sum1) + (sum2 > 0)`. Two additions, a subtraction and
/// a compare per element; no branch.
pub fn non_finite_flag(g: &mut crate::ir::Graph, x: NodeId) -> NodeId {
    let zero = g.scalar(0.0);
    let d = g.sub(x, x);
    let any_non_finite = g.sum_all(d);
    let nan = g.binary(BinaryOp::Ne, x, x);
    let nans = g.sum_all(nan);
    let non_finite = g.binary(BinaryOp::Ne, any_non_finite, any_non_finite);
    let has_nan = g.binary(BinaryOp::Gt, nans, zero);
    g.add(non_finite, has_nan)
}
