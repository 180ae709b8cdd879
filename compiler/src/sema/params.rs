//! The `params` block: trainable (and frozen) variables and their
//! initializers.
//!
//! Owns: checking a parameter's fixed shape, its options (`trainable`,
//! `partitioner`: its partitions, [`super::partitioner`]) and
//! its initializer (TF's names and defaults: `zeros`, `glorot_uniform(seed
//! = ..)`, ...) into a graph variable and its [`VarInfo`].
//! Invariants: parameters have fixed positive dimensions (never `B`); an
//! initializer without a seed gets one derived from the parameter's name, so
//! initial values do not depend on declaration order; a `constant` value is
//! one number or exactly the parameter's shape.

use specc_grammar::ast::{Arg, Expr, ExprKind, ParamDecl, Span};
use specc_grammar::{Code, Diagnostic};
use specc_runtime::init::Initializer;
use specc_runtime::prng::fnv1a64;

use super::args::{self, opt, req};
use super::expr::{constant_values, R};
use super::partitioner::Partitioner;
use super::State;
use crate::ir::{DType, Shape};
use crate::model::{VarInfo, VarKind};

pub(crate) const INITIALIZERS: &[&str] = &[
    "zeros",
    "ones",
    "constant",
    "random_uniform",
    "random_normal",
    "truncated_normal",
    "glorot_uniform",
    "glorot_normal",
];

pub(crate) fn param(st: &mut State, p: &ParamDecl) -> R<()> {
    param_named(st, p, &p.name.name, false)
}

/// A parameter whose variable is named `tf_name` (its name under the
/// variable scope of a block call, `dense_1/kernel`). With `reuse`, the
/// variable must exist with this shape (TF's `reuse = True`) and the
/// parameter's name is bound to it; without, a new variable is made (the
/// caller has made sure the name is free).
pub(crate) fn param_named(st: &mut State, p: &ParamDecl, tf_name: &str, reuse: bool) -> R<()> {
    let dims = dims(p)?;
    if reuse {
        let existing = st.graph.vars.iter().position(|v| v.name == tf_name);
        let Some(v) = existing else {
            return Err(Diagnostic::new(
                Code::VariableScope,
                p.name.span,
                format!("variable `{tf_name}` does not exist, and this call reuses its scope"),
            )
            .with_label("nothing to reuse")
            .with_help("`reuse = true` shares the variables an earlier call with the same `name` made; make that call first"));
        };
        let have = st.graph.vars[v].shape.clone();
        if have != Shape::fixed(&dims) {
            return Err(Diagnostic::new(
                Code::VariableScope,
                p.shape_span,
                format!(
                    "variable `{tf_name}` is {have}, but this reuse declares it {}",
                    Shape::fixed(&dims)
                ),
            )
            .with_label("another shape"));
        }
        let node = st.graph.var(v as u32);
        return st
            .env
            .define(&p.name.name, p.name.span, "parameter", Some(node));
    }
    // `partitioner = ...` is the one option that is not a flag.
    let is_partitioner = |o: &&Arg| o.name.as_ref().is_some_and(|n| n.name == "partitioner");
    let flag_args: Vec<Arg> = p
        .options
        .iter()
        .filter(|o| !is_partitioner(o))
        .cloned()
        .collect();
    let flags = args::flag_options(
        &flag_args,
        &["trainable", "partitioner"],
        "parameters have",
        "parameter options: trainable, partitioner",
    )?;
    let trainable = flags.get("trainable", true);
    let partitions = match p.options.iter().rfind(is_partitioner) {
        Some(o) => {
            let part = Partitioner::parse(&o.value)?;
            let dims: Vec<u64> = dims.iter().map(|&d| u64::from(d)).collect();
            part.partitions(&dims, super::partitioner::FLOAT32_BYTES, o.value.span)?
        }
        None => Vec::new(),
    };
    let shape = Shape::fixed(&dims);
    let init = initializer(&p.init, tf_name, &dims)?;
    let v = st.graph.add_var(tf_name, DType::F32, shape);
    st.vars.push(VarInfo {
        kind: VarKind::Param { trainable },
        init,
        span: Some(p.name.span),
        partitions,
    });
    let node = st.graph.var(v);
    st.env
        .define(&p.name.name, p.name.span, "parameter", Some(node))
}

/// A parameter's fixed dimensions.
fn dims(p: &ParamDecl) -> R<Vec<u32>> {
    let mut dims = Vec::new();
    for d in &p.shape {
        if matches!(&d.kind, ExprKind::Ident(n) if n == "B") {
            return Err(Diagnostic::new(
                Code::BadShape,
                d.span,
                "parameters have fixed shapes; the batch dimension B is not allowed",
            )
            .with_label("B"));
        }
        let v = args::eval_int(d)?;
        if v <= 0 || v > u32::MAX as i64 {
            return Err(Diagnostic::new(
                Code::BadShape,
                d.span,
                format!("dimension {v} must be a positive integer"),
            )
            .with_label("bad dimension"));
        }
        dims.push(v as u32);
    }
    Ok(dims)
}

pub(crate) fn initializer(e: &Expr, param: &str, dims: &[u32]) -> R<Initializer> {
    let (name, span, args_list): (&str, Span, &[Arg]) = match &e.kind {
        ExprKind::Ident(n) => (n, e.span, &[]),
        ExprKind::Call(c) => (&c.func.name, c.func.span, &c.args),
        ExprKind::Number { .. } | ExprKind::List(_) | ExprKind::Unary(_) => {
            return Err(Diagnostic::new(
                Code::BadInitializer,
                e.span,
                "a parameter's initializer is a function like zeros or glorot_uniform(seed = 1)",
            )
            .with_label("not an initializer")
            .with_help("for fixed values write constant(value = ...)"))
        }
        _ => {
            return Err(Diagnostic::new(
                Code::BadInitializer,
                e.span,
                format!("expected an initializer, found {}", args::describe(e)),
            )
            .with_label("not an initializer"))
        }
    };
    let default_seed = fnv1a64(param.as_bytes());
    let seed_of = |x: Option<&Expr>| -> R<u64> {
        x.map(|e| args::eval_count(e, "seed"))
            .transpose()
            .map(|s| s.unwrap_or(default_seed))
    };
    let num = |x: Option<&Expr>, d: f64| -> R<f64> {
        x.map(args::eval_number).transpose().map(|v| v.unwrap_or(d))
    };
    let bind = |params: &[args::Param]| args::bind_args(name, args_list, e.span, params);
    match name {
        "zeros" => {
            bind(&[])?;
            Ok(Initializer::Zeros)
        }
        "ones" => {
            bind(&[])?;
            Ok(Initializer::Ones)
        }
        "constant" => {
            let b = bind(&[req("value")])?;
            let ve = b.req(0);
            let (vdims, values) = constant_values(ve)?;
            if !vdims.is_empty() && vdims != dims {
                return Err(Diagnostic::new(
                    Code::BadInitializer,
                    ve.span,
                    format!(
                        "the constant has shape {} but `{param}` is {}",
                        Shape::fixed(&vdims),
                        Shape::fixed(dims)
                    ),
                )
                .with_label("wrong shape")
                .with_help(
                    "give a single number, or a nested list of exactly the parameter's shape",
                ));
            }
            Ok(Initializer::Constant(values))
        }
        "random_uniform" => {
            let b = bind(&[opt("minval"), opt("maxval"), opt("seed")])?;
            let lo = num(b.get(0), -0.05)?;
            let hi = num(b.get(1), 0.05)?;
            if lo >= hi {
                return Err(Diagnostic::new(
                    Code::BadInitializer,
                    e.span,
                    format!("random_uniform needs minval < maxval, got {lo} and {hi}"),
                )
                .with_label("empty range"));
            }
            Ok(Initializer::RandomUniform {
                minval: lo as f32,
                maxval: hi as f32,
                seed: seed_of(b.get(2))?,
            })
        }
        "random_normal" | "truncated_normal" => {
            let b = bind(&[opt("mean"), opt("stddev"), opt("seed")])?;
            let mean = num(b.get(0), 0.0)? as f32;
            let stddev = num(b.get(1), 0.05)?;
            if stddev < 0.0 {
                return Err(Diagnostic::new(
                    Code::BadInitializer,
                    b.get(1).map(|x| x.span).unwrap_or(e.span),
                    format!("stddev must not be negative, got {stddev}"),
                )
                .with_label("negative stddev"));
            }
            let seed = seed_of(b.get(2))?;
            let stddev = stddev as f32;
            Ok(if name == "random_normal" {
                Initializer::RandomNormal { mean, stddev, seed }
            } else {
                Initializer::TruncatedNormal { mean, stddev, seed }
            })
        }
        "glorot_uniform" | "glorot_normal" => {
            let b = bind(&[opt("seed")])?;
            let seed = seed_of(b.get(0))?;
            Ok(if name == "glorot_uniform" {
                Initializer::GlorotUniform { seed }
            } else {
                Initializer::GlorotNormal { seed }
            })
        }
        other => {
            let mut d = Diagnostic::new(
                Code::BadInitializer,
                span,
                format!("unknown initializer `{other}`"),
            )
            .with_label("not an initializer");
            if let Some(s) = args::suggest(other, INITIALIZERS.iter().copied()) {
                d = d.with_help(format!("did you mean `{s}`?"));
            }
            Err(d.with_help(format!("initializers: {}", INITIALIZERS.join(", "))))
        }
    }
}
