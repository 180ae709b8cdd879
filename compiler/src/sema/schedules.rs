//! Learning-rate schedules: the `tf.compat.v1.train` decay functions as builtins.
//!
//! Owns: one table row per schedule, with TF's signature (`global_step` in
//! TF's position, defaulting to the current global step) and its formula in
//! the float32 order of operations of TF's `LearningRateSchedule`s. A schedule
//! is an ordinary scalar expression of `global_step`, so it is computed once
//! per step inside the compiled step and can feed any schedulable
//! hyperparameter, or be composed (`linear_warmup(cosine_decay(...), 100)`).
//!
//! Invariants: step-like arguments (`decay_steps`, boundaries) are
//! compile-time numbers, checked here; every schedule is a float32 scalar.

use std::f32::consts::PI;

use specc_grammar::ast::{Expr, ExprKind};
use specc_grammar::Diagnostic;

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
            // TF: ExponentialDecay with decay_rate = exp(-decay_rate)
            let (lr, step) = (scalar(lw, b.req(0))?, step(lw, b)?);
            let ds = positive(b.req(2), "decay_steps")?;
            let r = lw.g.scalar(number(b.req(3))?);
            let nr = lw.g.neg(r);
            let rate = lw.g.unary(UnaryOp::Exp, nr);
            let staircase = b.flag(4)?;
            Ok(exponential(lw.g, lr, step, ds, rate, staircase))
        },
    },
    Builtin {
        name: "inverse_time_decay",
        params: DECAY_RATE_PARAMS,
        lower: |lw, b, _| {
            // lr / (1 + decay_rate * p), p = step / decay_steps (floored if staircase)
            let (lr, step) = (scalar(lw, b.req(0))?, step(lw, b)?);
            let ds = positive(b.req(2), "decay_steps")?;
            let rate = number(b.req(3))?;
            let g = &mut *lw.g;
            let dsn = g.scalar(ds);
            let mut p = g.div(step, dsn);
            if b.flag(4)? {
                p = g.unary(UnaryOp::Floor, p);
            }
            let rn = g.scalar(rate);
            let rp = g.mul(rn, p);
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
                    "bad-argument",
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
                    "bad-argument",
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
            let (num, den) = if cycle {
                // multiplier = step == 0 ? 1 : ceil(step / decay_steps)
                let zero = g.scalar(0.0);
                let is0 = g.binary(BinaryOp::Eq, step, zero);
                let q = g.div(step, dsn);
                let cq = g.unary(UnaryOp::Ceil, q);
                let one = g.scalar(1.0);
                let mult = g.select(is0, one, cq);
                (step, g.mul(dsn, mult))
            } else {
                (g.binary(BinaryOp::Min, step, dsn), dsn)
            };
            let p = g.div(num, den);
            let endn = g.scalar(end);
            let span = g.sub(lr, endn);
            let one = g.scalar(1.0);
            let omp = g.sub(one, p);
            let pw = g.scalar(power);
            let f = g.binary(BinaryOp::Pow, omp, pw);
            let d = g.mul(span, f);
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
            let (lr, step) = (scalar(lw, b.req(0))?, step(lw, b)?);
            let ds = positive(b.req(2), "decay_steps")?;
            let alpha = opt_number(b.get(3), 0.0)?;
            let g = &mut *lw.g;
            let dsn = g.scalar(ds);
            let s = g.binary(BinaryOp::Min, step, dsn);
            let frac = g.div(s, dsn);
            let cd = half_cosine(g, frac, None);
            Ok(blend(g, lr, cd, alpha))
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
                    "bad-argument",
                    span,
                    format!("t_mul must be positive, got {t_mul}"),
                )
                .with_label("not positive"));
            }
            let g = &mut *lw.g;
            let fd = g.scalar(fds);
            let frac = g.div(step, fd);
            let (i_restart, frac) = if t_mul == 1.0 {
                let i = g.unary(UnaryOp::Floor, frac);
                (i, g.sub(frac, i))
            } else {
                // i = floor(log(1 - frac (1 - t_mul)) / log(t_mul))
                let one = g.scalar(1.0);
                let tm = g.scalar(t_mul);
                let omt = g.sub(one, tm);
                let fo = g.mul(frac, omt);
                let a = g.sub(one, fo);
                let la = g.unary(UnaryOp::Log, a);
                let lt = g.unary(UnaryOp::Log, tm);
                let q = g.div(la, lt);
                let i = g.unary(UnaryOp::Floor, q);
                // sum_r = (1 - t_mul^i) / (1 - t_mul); frac = (frac - sum_r) / t_mul^i
                let ti = g.binary(BinaryOp::Pow, tm, i);
                let num = g.sub(one, ti);
                let sum_r = g.div(num, omt);
                let d = g.sub(frac, sum_r);
                (i, g.div(d, ti))
            };
            let mm = g.scalar(m_mul);
            let m_fac = g.binary(BinaryOp::Pow, mm, i_restart);
            let cd = half_cosine(g, frac, Some(m_fac));
            Ok(blend(g, lr, cd, alpha))
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
            // std = sqrt(initial_variance / (1 + step)^variance_decay)
            let g = &mut *lw.g;
            let one = g.scalar(1.0);
            let s1 = g.add(one, step);
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
    let dsn = g.scalar(ds);
    let mut p = g.div(step, dsn);
    if staircase {
        p = g.unary(UnaryOp::Floor, p);
    }
    let f = g.binary(BinaryOp::Pow, rate, p);
    g.mul(lr, f)
}

/// `0.5 * [m_fac *] (1 + cos(pi * frac))`, in TF's order.
fn half_cosine(g: &mut Graph, frac: NodeId, m_fac: Option<NodeId>) -> NodeId {
    let pi = g.scalar(PI);
    let a = g.mul(pi, frac);
    let c = g.unary(UnaryOp::Cos, a);
    let one = g.scalar(1.0);
    let oc = g.add(one, c);
    let half = g.scalar(0.5);
    match m_fac {
        Some(m) => {
            let hm = g.mul(half, m);
            g.mul(hm, oc)
        }
        None => g.mul(half, oc),
    }
}

/// `lr * ((1 - alpha) * decayed + alpha)`.
fn blend(g: &mut Graph, lr: NodeId, decayed: NodeId, alpha: f32) -> NodeId {
    let one = g.scalar(1.0);
    let al = g.scalar(alpha);
    let oma = g.sub(one, al);
    let d = g.mul(oma, decayed);
    let d = g.add(d, al);
    g.mul(lr, d)
}

/// linear_cosine_decay (with `noise` added to the linear part: the noisy variant).
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
    let mut linear = g.div(rem, dsn);
    if let Some(n) = noise {
        linear = g.add(linear, n);
    }
    let frac = g.div(s, dsn);
    let two_p = g.scalar(2.0 * num_periods);
    let fraction = g.mul(two_p, frac);
    let cd = half_cosine(g, fraction, None);
    let al = g.scalar(alpha);
    let al_lin = g.add(al, linear);
    let lcd = g.mul(al_lin, cd);
    let be = g.scalar(beta);
    let lcd = g.add(lcd, be);
    Ok(g.mul(lr, lcd))
}

/// A float32 scalar expression argument.
fn scalar(lw: &mut Lowerer, e: &Expr) -> R<NodeId> {
    let v = lw.float(e)?;
    if !lw.g.shape(v).is_scalar() {
        return Err(Diagnostic::new(
            "bad-argument",
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
            "bad-argument",
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
