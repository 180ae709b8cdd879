//! Learning-rate schedules: the `tf.compat.v1.train` decay functions as builtins.
//!
//! Owns: one table row per schedule, with TF's signature (`global_step` in
//! TF's position, defaulting to the current global step) and its formula in
//! the float32 order of operations of the graph TF actually runs. A schedule
//! is an ordinary scalar expression of `global_step`, so it is computed once
//! per step inside the compiled step and can feed any schedulable
//! hyperparameter, or be composed (`linear_warmup(cosine_decay(...), 100)`).
//!
//! TF's graph is not the Python source's: in graph mode Grappler's constant
//! folding rewrites it before it runs, and the rewrites change float32 bits.
//! These are mirrored here, because they decide on which side of a floor,
//! ceil or restart boundary a step lands (`tools/schedule_boundaries.py`
//! records TF's values there, `tests/golden/extra/schedule_boundaries.json`):
//! - `x / c` with a constant `c` becomes `x * (1 / c)`, the reciprocal rounded
//!   to float32 (`ReduceDivToReciprocalMul`): `41 * (1 / 41) < 1`, so
//!   `exponential_decay(staircase)` with `decay_steps = 41` does not decay at
//!   step 41, and `cosine_decay_restarts(first_decay_steps = 17, t_mul = 1.25)`
//!   finishes its first period at step 17 (`log(1.25) * (1 / log(1.25)) < 1`);
//! - constant factors are folded together and pushed down
//!   (`ConstantPushDown`: `c1 * (x * c2)` is `x * (c1 * c2)`), in float32;
//! - constant subexpressions (`log(t_mul)`, `exp(-decay_rate)`) are computed
//!   by TF's kernels, i.e. the C library's `logf`/`expf`, here by Rust's
//!   `f32::ln`/`f32::exp` (the same library on the same platform);
//! - `pow(x, c)` with `c` in {2, 3, 1, 0.5, 0, -0.5, -1} becomes
//!   multiplications, `sqrt` or a reciprocal (`ConvertPow`).
//!
//! What is computed at run time (`log`, `exp`, `pow`, `cos` of a step) uses
//! specc's own functions, within an ulp or two of the C library's.
//!
//! Invariants: step-like arguments (`decay_steps`, boundaries) are
//! compile-time numbers, checked here; every schedule is a float32 scalar.

use std::f32::consts::PI;

use specc_grammar::ast::{Expr, ExprKind};
use specc_grammar::{Code, Diagnostic};

use super::args::{self, opt, req, Bound, Param};
use super::expr::{Lowerer, R};
use super::functions::Builtin;
use crate::ir::{BinaryOp, DType, Graph, NodeId, UnaryOp};

/// The signature shared by exponential_decay, natural_exp_decay and
/// inverse_time_decay.
const DECAY_RATE_PARAMS: &[Param] = &[
    req("learning_rate"),
    opt("global_step"),
    req("decay_steps"),
    req("decay_rate"),
    opt("staircase"),
];

/// Every schedule builtin.
pub const SCHEDULES: &[Builtin] = &[
    Builtin {
        name: "exponential_decay",
        params: DECAY_RATE_PARAMS,
        lower: |lw, b, _| {
            let (lr, step) = (scalar(lw, b.req(0))?, step(lw, b)?);
            let ds = positive(b.req(2), "decay_steps")?;
            let rate = lw.g.scalar(number(b.req(3))?);
            let staircase = b.flag(4)?;
            Ok(exponential(lw.g, lr, step, ds, rate, staircase))
        },
    },
    Builtin {
        name: "natural_exp_decay",
        params: DECAY_RATE_PARAMS,
        lower: |lw, b, _| {
            // TF: ExponentialDecay with decay_rate = exp(-decay_rate), a constant
            // that Grappler folds with TF's Exp kernel (the C library's expf).
            let (lr, step) = (scalar(lw, b.req(0))?, step(lw, b)?);
            let ds = positive(b.req(2), "decay_steps")?;
            let rate = lw.g.scalar((-number(b.req(3))?).exp());
            let staircase = b.flag(4)?;
            Ok(exponential(lw.g, lr, step, ds, rate, staircase))
        },
    },
    Builtin {
        name: "inverse_time_decay",
        params: DECAY_RATE_PARAMS,
        lower: |lw, b, _| {
            // lr / (1 + decay_rate * p), p = step / decay_steps (floored if
            // staircase); without the floor TF folds decay_rate / decay_steps.
            let (lr, step) = (scalar(lw, b.req(0))?, step(lw, b)?);
            let ds = positive(b.req(2), "decay_steps")?;
            let rate = number(b.req(3))?;
            let g = &mut *lw.g;
            let rp = if b.flag(4)? {
                let p = div_const(g, step, ds);
                let p = g.unary(UnaryOp::Floor, p);
                let rn = g.scalar(rate);
                g.mul(rn, p)
            } else {
                let c = g.scalar(rate * recip(ds));
                g.mul(step, c)
            };
            let one = g.scalar(1.0);
            let den = g.add(one, rp);
            Ok(g.div(lr, den))
        },
    },
    Builtin {
        name: "piecewise_constant",
        params: &[req("x"), req("boundaries"), req("values")],
        lower: |lw, b, c| {
            // values[i] while x <= boundaries[i]; values[-1] after the last boundary.
            let x = scalar(lw, b.req(0))?;
            let bounds = number_list(b.req(1))?;
            let values = number_list(b.req(2))?;
            if values.len() != bounds.len() + 1 {
                return Err(Diagnostic::new(
                    Code::ConflictingArguments,
                    c.span,
                    format!(
                        "piecewise_constant needs one more value than boundaries, got {} boundaries and {} values",
                        bounds.len(),
                        values.len()
                    ),
                )
                .with_label("mismatched lengths"));
            }
            if bounds.windows(2).any(|w| w[0] >= w[1]) {
                return Err(Diagnostic::new(
                    Code::MalformedArgument,
                    b.req(1).span,
                    "boundaries must increase",
                )
                .with_label("not increasing"));
            }
            let g = &mut *lw.g;
            let mut r = g.scalar(values[bounds.len()] as f32);
            for i in (0..bounds.len()).rev() {
                let bi = g.scalar(bounds[i] as f32);
                let le = g.binary(BinaryOp::Le, x, bi);
                let vi = g.scalar(values[i] as f32);
                r = g.select(le, vi, r);
            }
            Ok(r)
        },
    },
    Builtin {
        name: "polynomial_decay",
        params: &[
            req("learning_rate"),
            opt("global_step"),
            req("decay_steps"),
            opt("end_learning_rate"),
            opt("power"),
            opt("cycle"),
        ],
        lower: |lw, b, _| {
            let (lr, step) = (scalar(lw, b.req(0))?, step(lw, b)?);
            let ds = positive(b.req(2), "decay_steps")?;
            let end = opt_number(b.get(3), 0.0001)?;
            let power = opt_number(b.get(4), 1.0)?;
            let cycle = b.flag(5)?;
            let g = &mut *lw.g;
            let dsn = g.scalar(ds);
            let p = if cycle {
                // multiplier = step == 0 ? 1 : ceil(step / decay_steps)
                let zero = g.scalar(0.0);
                let is0 = g.binary(BinaryOp::Eq, step, zero);
                let q = div_const(g, step, ds);
                let cq = g.unary(UnaryOp::Ceil, q);
                let one = g.scalar(1.0);
                let mult = g.select(is0, one, cq);
                let den = g.mul(dsn, mult);
                g.div(step, den)
            } else {
                let s = g.binary(BinaryOp::Min, step, dsn);
                div_const(g, s, ds)
            };
            let endn = g.scalar(end);
            let span = match g.op(lr).scalar_value() {
                Some(v) => g.scalar(v - end),
                None => g.sub(lr, endn),
            };
            let one = g.scalar(1.0);
            let omp = g.sub(one, p);
            let d = if power == 3.0 && g.op(span).scalar_value().is_some() {
                // x * square(x) with the constant span pushed onto x:
                // square(x) * (span * x).
                let sq = g.mul(omp, omp);
                let sx = g.mul(span, omp);
                g.mul(sq, sx)
            } else {
                let f = pow_const(g, omp, power);
                g.mul(span, f)
            };
            Ok(g.add(d, endn))
        },
    },
    Builtin {
        name: "cosine_decay",
        params: &[
            req("learning_rate"),
            opt("global_step"),
            req("decay_steps"),
            opt("alpha"),
        ],
        lower: |lw, b, _| {
            // TF folds pi * (s / decay_steps) into s * (pi * (1 / decay_steps)),
            // and (1 - alpha) * 0.5 * (1 + cos) into (cos + 1) * (0.5 * (1 - alpha)),
            // where alpha is a Python float: 1 - alpha is rounded once from float64.
            let (lr, step) = (scalar(lw, b.req(0))?, step(lw, b)?);
            let ds = positive(b.req(2), "decay_steps")?;
            let alpha = b.get(3).map(args::eval_number).transpose()?.unwrap_or(0.0);
            let g = &mut *lw.g;
            let dsn = g.scalar(ds);
            let s = g.binary(BinaryOp::Min, step, dsn);
            let c = g.scalar(PI * recip(ds));
            let arg = g.mul(s, c);
            let factor = g.scalar(0.5 * (1.0 - alpha) as f32);
            Ok(cosine_blend(g, lr, arg, factor, alpha as f32))
        },
    },
    Builtin {
        name: "cosine_decay_restarts",
        params: &[
            req("learning_rate"),
            opt("global_step"),
            req("first_decay_steps"),
            opt("t_mul"),
            opt("m_mul"),
            opt("alpha"),
        ],
        lower: |lw, b, _| {
            let (lr, step) = (scalar(lw, b.req(0))?, step(lw, b)?);
            let fds = positive(b.req(2), "first_decay_steps")?;
            let t_mul = opt_number(b.get(3), 2.0)?;
            let m_mul = opt_number(b.get(4), 1.0)?;
            let alpha = opt_number(b.get(5), 0.0)?;
            if t_mul <= 0.0 {
                let span = b.get(3).map(|e| e.span).unwrap_or(b.call_span);
                return Err(Diagnostic::new(
                    Code::ArgumentOutOfRange,
                    span,
                    format!("t_mul must be positive, got {t_mul}"),
                )
                .with_label("not positive"));
            }
            let g = &mut *lw.g;
            let frac = div_const(g, step, fds);
            let (i_restart, frac) = if t_mul == 1.0 {
                let i = g.unary(UnaryOp::Floor, frac);
                (i, g.sub(frac, i))
            } else {
                // i = floor(log(1 - frac (1 - t_mul)) / log(t_mul)), the division
                // by the constant log(t_mul) a multiplication by its reciprocal:
                // this decides whether a step at a restart boundary ends the
                // period or starts the next.
                let one = g.scalar(1.0);
                let omt = 1.0 - t_mul;
                let omtn = g.scalar(omt);
                let fo = g.mul(frac, omtn);
                let a = g.sub(one, fo);
                let la = g.unary(UnaryOp::Log, a);
                let q = div_const(g, la, t_mul.ln());
                let i = g.unary(UnaryOp::Floor, q);
                // sum_r = (1 - t_mul^i) / (1 - t_mul); frac = (frac - sum_r) / t_mul^i
                let tm = g.scalar(t_mul);
                let ti = g.binary(BinaryOp::Pow, tm, i);
                let num = g.sub(one, ti);
                let sum_r = div_const(g, num, omt);
                let d = g.sub(frac, sum_r);
                (i, g.div(d, ti))
            };
            // 0.5 * m_mul^i * (1 + cos(pi * frac)), scaled by the float32 (1 - alpha):
            // TF folds the constants into (cos + 1) * ((0.5 * (1 - alpha)) * m_mul^i).
            let mm = g.scalar(m_mul);
            let m_fac = g.binary(BinaryOp::Pow, mm, i_restart);
            let k = g.scalar(0.5 * (1.0 - alpha));
            let factor = g.mul(k, m_fac);
            let pi = g.scalar(PI);
            let arg = g.mul(pi, frac);
            Ok(cosine_blend(g, lr, arg, factor, alpha))
        },
    },
    Builtin {
        name: "linear_cosine_decay",
        params: &[
            req("learning_rate"),
            opt("global_step"),
            req("decay_steps"),
            opt("num_periods"),
            opt("alpha"),
            opt("beta"),
        ],
        lower: |lw, b, _| linear_cosine(lw, b, None),
    },
    Builtin {
        name: "noisy_linear_cosine_decay",
        params: &[
            req("learning_rate"),
            opt("global_step"),
            req("decay_steps"),
            opt("initial_variance"),
            opt("variance_decay"),
            opt("num_periods"),
            opt("alpha"),
            opt("beta"),
            opt("seed"),
        ],
        lower: |lw, b, _| {
            let iv = opt_number(b.get(3), 1.0)?;
            let vd = opt_number(b.get(4), 0.55)?;
            let seed = match b.get(8) {
                Some(e) => args::eval_count(e, "seed")?,
                None => 0,
            };
            let step = step(lw, b)?;
            let ds = positive(b.req(2), "decay_steps")?;
            // std = sqrt(initial_variance / (1 + min(step, decay_steps))^variance_decay)
            let g = &mut *lw.g;
            let one = g.scalar(1.0);
            let dsn = g.scalar(ds);
            let s = g.binary(BinaryOp::Min, step, dsn);
            let s1 = g.add(one, s);
            let vdn = g.scalar(vd);
            let pw = g.binary(BinaryOp::Pow, s1, vdn);
            let ivn = g.scalar(iv);
            let var = g.div(ivn, pw);
            let std = g.unary(UnaryOp::Sqrt, var);
            let noise = g.intern(
                crate::ir::Op::NormalNoise { seed },
                vec![step],
                DType::F32,
                crate::ir::Shape::scalar(),
            );
            let n = g.mul(noise, std);
            linear_cosine(lw, b, Some(n))
        },
    },
    Builtin {
        name: "linear_warmup",
        params: &[
            req("schedule"),
            req("warmup_steps"),
            opt("warmup_learning_rate"),
        ],
        lower: |lw, b, _| {
            // tf-models' LinearWarmup: from warmup_learning_rate at step 0 linearly to
            // schedule(warmup_steps) at warmup_steps, then schedule(step).
            let sched = scalar(lw, b.req(0))?;
            let w = positive(b.req(1), "warmup_steps")?;
            let wlr = opt_number(b.get(2), 0.0)?;
            let g = &mut *lw.g;
            let wn = g.scalar(w);
            let at_w = g.replace_global_step(sched, wn);
            let step = g.global_step();
            let w0 = g.scalar(wlr);
            let d = g.sub(at_w, w0);
            let f = g.div(step, wn);
            let fd = g.mul(f, d);
            let warm = g.add(w0, fd);
            let before = g.binary(BinaryOp::Lt, step, wn);
            Ok(g.select(before, warm, sched))
        },
    },
];

/// `lr * decay_rate ^ p`, `p = step / decay_steps` (floored when `staircase`).
fn exponential(
    g: &mut Graph,
    lr: NodeId,
    step: NodeId,
    ds: f32,
    rate: NodeId,
    staircase: bool,
) -> NodeId {
    let mut p = div_const(g, step, ds);
    if staircase {
        p = g.unary(UnaryOp::Floor, p);
    }
    let f = g.binary(BinaryOp::Pow, rate, p);
    g.mul(f, lr)
}

/// The float32 reciprocal of a constant, as Grappler folds `1 / c`.
fn recip(c: f32) -> f32 {
    1.0 / c
}

/// `x / c` for a constant `c`, as TF's graph computes it: `x * (1 / c)`.
fn div_const(g: &mut Graph, x: NodeId, c: f32) -> NodeId {
    let r = g.scalar(recip(c));
    g.mul(x, r)
}

/// `x ^ power` for a constant power, with Grappler's `ConvertPow` rewrites
/// (3 is handled by the caller, where TF folds a constant factor into it).
fn pow_const(g: &mut Graph, x: NodeId, power: f32) -> NodeId {
    match power {
        1.0 => x,
        2.0 => g.mul(x, x),
        3.0 => {
            let sq = g.mul(x, x);
            g.mul(x, sq)
        }
        0.5 => g.unary(UnaryOp::Sqrt, x),
        0.0 => g.scalar(1.0),
        -0.5 => {
            let r = g.unary(UnaryOp::Sqrt, x);
            let one = g.scalar(1.0);
            g.div(one, r)
        }
        -1.0 => {
            let one = g.scalar(1.0);
            g.div(one, x)
        }
        _ => {
            let p = g.scalar(power);
            g.binary(BinaryOp::Pow, x, p)
        }
    }
}

/// `lr * (alpha + (cos(arg) + 1) * factor)`: `(1 - alpha) * 0.5 * (1 + cos(arg))
/// + alpha` with TF's constants folded into `factor`.
fn cosine_blend(g: &mut Graph, lr: NodeId, arg: NodeId, factor: NodeId, alpha: f32) -> NodeId {
    let c = g.unary(UnaryOp::Cos, arg);
    let one = g.scalar(1.0);
    let oc = g.add(c, one);
    let d = g.mul(oc, factor);
    let al = g.scalar(alpha);
    let d = g.add(al, d);
    g.mul(d, lr)
}

/// linear_cosine_decay (with `noise` added to the linear part: the noisy variant).
/// TF folds `pi * (2 * num_periods) * (s / decay_steps)` into
/// `s * (pi * ((2 * num_periods) * (1 / decay_steps)))`.
fn linear_cosine(lw: &mut Lowerer, b: &Bound, noise: Option<NodeId>) -> R<NodeId> {
    let noisy = noise.is_some();
    let (periods_i, alpha_i, beta_i) = if noisy { (5, 6, 7) } else { (3, 4, 5) };
    let (lr, step) = (scalar(lw, b.req(0))?, step(lw, b)?);
    let ds = positive(b.req(2), "decay_steps")?;
    let num_periods = opt_number(b.get(periods_i), 0.5)?;
    let alpha = opt_number(b.get(alpha_i), 0.0)?;
    let beta = opt_number(b.get(beta_i), 0.001)?;
    let g = &mut *lw.g;
    let dsn = g.scalar(ds);
    let s = g.binary(BinaryOp::Min, step, dsn);
    let rem = g.sub(dsn, s);
    let mut linear = div_const(g, rem, ds);
    if let Some(n) = noise {
        linear = g.add(linear, n);
    }
    let c = g.scalar(PI * ((2.0 * num_periods) * recip(ds)));
    let arg = g.mul(s, c);
    let cos = g.unary(UnaryOp::Cos, arg);
    let one = g.scalar(1.0);
    let oc = g.add(cos, one);
    let half = g.scalar(0.5);
    let cd = g.mul(oc, half);
    let al = g.scalar(alpha);
    let al_lin = g.add(al, linear);
    let lcd = g.mul(al_lin, cd);
    let be = g.scalar(beta);
    let lcd = g.add(be, lcd);
    Ok(g.mul(lcd, lr))
}

/// A float32 scalar expression argument.
fn scalar(lw: &mut Lowerer, e: &Expr) -> R<NodeId> {
    let v = lw.float(e)?;
    if !lw.g.shape(v).is_scalar() {
        return Err(Diagnostic::new(
            Code::BadShape,
            e.span,
            format!("expected a scalar, but this is {}", lw.g.shape(v)),
        )
        .with_label("not a scalar"));
    }
    Ok(v)
}

/// The `global_step` argument (index 1), defaulting to the current global step.
fn step(lw: &mut Lowerer, b: &Bound) -> R<NodeId> {
    match b.get(1) {
        Some(e) => scalar(lw, e),
        None => Ok(lw.g.global_step()),
    }
}

fn number(e: &Expr) -> R<f32> {
    Ok(args::eval_number(e)? as f32)
}

fn opt_number(e: Option<&Expr>, default: f32) -> R<f32> {
    e.map(number).transpose().map(|v| v.unwrap_or(default))
}

fn positive(e: &Expr, what: &str) -> R<f32> {
    args::eval_positive(e, what)
}

fn number_list(e: &Expr) -> R<Vec<f64>> {
    match &e.kind {
        ExprKind::List(items) => items.iter().map(args::eval_number).collect(),
        _ => Err(Diagnostic::new(
            Code::ArgumentType,
            e.span,
            format!("expected a list of numbers, found {}", args::describe(e)),
        )
        .with_label("expected [..]")),
    }
}

/// Looks a schedule up by name.
pub fn find(name: &str) -> Option<&'static Builtin> {
    SCHEDULES.iter().find(|b| b.name == name)
}
