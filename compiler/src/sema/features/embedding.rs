//! `embedding_column` and `shared_embeddings` (their arguments and tables),
//! and the lowering of the dense views of a categorical column: an
//! embedding (TF's `safe_embedding_lookup_sparse`, which `linear_model`'s
//! weight tables use too) and an `indicator_column` (summed one-hots).
//!
//! Invariants: a table's dimension is in [1, 2^20]; the default
//! initializer is TF's `truncated_normal(0, 1/sqrt(dimension))` seeded by
//! the table's name without the layer scope (the same in every layer); the
//! columns of `shared_embeddings` have the same number of buckets and share
//! one table, named by the collection; a lookup's only use of its table is
//! one `gather`, so the table's gradient is an `IndexedSlices`.

use specc_grammar::ast::{Call, Expr, ExprKind, Span};
use specc_grammar::{Code, Diagnostic};
use specc_runtime::init::Initializer;
use specc_runtime::prng::fnv1a64;

use super::inputs::categorical_inputs;
use super::layers::variable;
use super::sequence::sequence_refused;
use super::{bad, categorical, Categorical, Column, Embedding};
use crate::ir::{BinaryOp, Dim, NodeId, UnaryOp};
use crate::model::ClipKind;
use crate::sema::args::{self, opt, req};
use crate::sema::expr::R;
use crate::sema::{partitioner, State};

/// `embedding_lookup_sparse`'s combiners.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combiner {
    Sum,
    Mean,
    Sqrtn,
}

impl Combiner {
    pub(super) fn parse(e: &Expr) -> R<Combiner> {
        let s = match &e.kind {
            ExprKind::Str(s) | ExprKind::Ident(s) => s.as_str(),
            _ => {
                return Err(Diagnostic::new(
                    Code::ArgumentType,
                    e.span,
                    format!(
                        "expected \"mean\", \"sqrtn\" or \"sum\", found {}",
                        args::describe(e)
                    ),
                )
                .with_label("not a combiner"))
            }
        };
        match s {
            "sum" => Ok(Combiner::Sum),
            "mean" => Ok(Combiner::Mean),
            "sqrtn" => Ok(Combiner::Sqrtn),
            other => {
                let mut d = Diagnostic::new(
                    Code::UnknownChoice,
                    e.span,
                    format!("unknown combiner `{other}`"),
                )
                .with_label("not a combiner");
                if let Some(s) = args::suggest(other, ["mean", "sqrtn", "sum"]) {
                    d = d.with_help(format!("did you mean `{s}`?"));
                }
                Err(d.with_help("TF's combiners: \"mean\", \"sqrtn\", \"sum\""))
            }
        }
    }
}

/// `dimension`, `combiner`, `initializer`, `max_norm`, `trainable` of an
/// embedding column (bound at `first`).
fn embedding_args(
    b: &args::Bound,
    first: usize,
    table_name: &str,
    rows: u64,
) -> R<(u32, Combiner, Initializer, Option<f32>, bool)> {
    let de = b.req(first);
    let dimension = args::eval_count(de, "dimension")?;
    if dimension == 0 || dimension > 1 << 20 {
        return Err(bad(
            Code::ArgumentOutOfRange,
            de.span,
            format!("dimension must be in [1, 2^20], got {dimension}"),
            if dimension == 0 { "zero" } else { "too large" },
        ));
    }
    let combiner = b
        .get(first + 1)
        .map(Combiner::parse)
        .transpose()?
        .unwrap_or(Combiner::Mean);
    let initializer = match b.get(first + 2) {
        Some(e) if !args::is_none(e) => {
            crate::sema::params::initializer(e, table_name, &[rows as u32, dimension as u32])?
        }
        // TF: truncated_normal(mean 0, stddev 1/sqrt(dimension)); the seed is
        // derived from the table's name, like a parameter's.
        _ => Initializer::TruncatedNormal {
            mean: 0.0,
            stddev: (1.0 / (dimension as f64).sqrt()) as f32,
            seed: fnv1a64(table_name.as_bytes()),
        },
    };
    let max_norm = match b.get(first + 3) {
        Some(e) if !args::is_none(e) => Some(args::eval_positive(e, "max_norm")?),
        _ => None,
    };
    let trainable = b
        .get(first + 4)
        .map(args::eval_bool)
        .transpose()?
        .unwrap_or(true);
    Ok((dimension as u32, combiner, initializer, max_norm, trainable))
}

const EMBEDDING_ARGS: [args::Param; 5] = [
    req("dimension"),
    opt("combiner"),
    opt("initializer"),
    opt("max_norm"),
    opt("trainable"),
];

pub(super) fn embedding_column(st: &mut State, c: &Call) -> R<Column> {
    let mut params = vec![req("categorical_column")];
    params.extend(EMBEDDING_ARGS);
    params.push(opt("partitioner"));
    let b = args::bind("embedding_column", c, &params)?;
    let partitioner = partitioner::argument(b.get(6))?;
    let cat = categorical(st, b.req(0))?;
    // The table's name in an input_layer (the initializer's default seed).
    let table = format!("{}_embedding/embedding_weights", cat.column.name());
    let (dimension, combiner, initializer, max_norm, trainable) =
        embedding_args(&b, 1, &table, cat.column.num_buckets())?;
    Ok(Column::Embedding(Box::new(Embedding {
        categorical: cat,
        dimension,
        combiner,
        initializer,
        max_norm,
        trainable,
        shared: None,
        partitioner,
    })))
}

pub(super) fn shared_embeddings(st: &mut State, c: &Call) -> R<Column> {
    let mut params = vec![req("categorical_columns")];
    params.extend(EMBEDDING_ARGS);
    params.push(opt("shared_embedding_collection_name"));
    params.push(opt("partitioner"));
    let b = args::bind("shared_embeddings", c, &params)?;
    let partitioner = partitioner::argument(b.get(7))?;
    let le = b.req(0);
    let ExprKind::List(items) = &le.kind else {
        return Err(bad(
            Code::ArgumentType,
            le.span,
            format!(
                "categorical_columns must be a list, found {}",
                args::describe(le)
            ),
            "not a list",
        ));
    };
    if items.is_empty() {
        return Err(bad(
            Code::EmptyArgument,
            le.span,
            "shared_embeddings needs at least one column",
            "empty",
        ));
    }
    let mut cats = Vec::new();
    for it in items {
        let cat = categorical(st, it)?;
        if cat.sequence {
            return Err(sequence_refused(
                it.span,
                &cat.column.name(),
                "shared_embeddings",
            ));
        }
        if let Some(first) = cats.first() {
            let first: &Categorical = first;
            if first.column.num_buckets() != cat.column.num_buckets() {
                return Err(bad(Code::ConflictingArguments,
                    it.span,
                    format!(
                        "all columns of shared_embeddings have the same number of buckets: `{}` has {}, `{}` has {}",
                        first.column.name(),
                        first.column.num_buckets(),
                        cat.column.name(),
                        cat.column.num_buckets()
                    ),
                    "different num_buckets",
                ));
            }
        }
        cats.push(cat);
    }
    let name = match b.get(6) {
        Some(e) => args::eval_string(e)?.to_string(),
        None => {
            let mut names: Vec<String> = cats.iter().map(|c| c.column.name()).collect();
            names.sort();
            format!("{}_shared_embedding", names.join("_"))
        }
    };
    let table = format!("{name}/embedding_weights");
    let rows = cats[0].column.num_buckets();
    let (dimension, combiner, initializer, max_norm, trainable) =
        embedding_args(&b, 1, &table, rows)?;
    Ok(Column::Shared(
        cats.into_iter()
            .map(|categorical| Embedding {
                categorical,
                dimension,
                combiner,
                initializer: initializer.clone(),
                max_norm,
                trainable,
                shared: Some(name.clone()),
                partitioner,
            })
            .collect(),
    ))
}

/// `[B, K]` weights as `[B, K, d]` (for rows `[B, K, d]`).
pub(super) fn spread(st: &mut State, w: NodeId, d: u32) -> NodeId {
    let g = &mut st.graph;
    let mut s = g.shape(w).clone();
    s.0.push(Dim::Fixed(1));
    let w3 = g.reshape(w, &s);
    s.0.pop();
    s.0.push(Dim::Fixed(d));
    g.broadcast_to(w3, &s)
}

/// A per-row `[B]` divisor as `[B, d]`; 0 becomes 1 (a row without ids
/// stays 0, as TF's safe lookup gives).
fn row_divisor(st: &mut State, den: NodeId, d: u32) -> NodeId {
    let g = &mut st.graph;
    let zero = g.scalar(0.0);
    let zs = g.shape(den).clone();
    let zero = g.broadcast_to(zero, &zs);
    let is_zero = g.binary(BinaryOp::Eq, den, zero);
    let den = g.add(den, is_zero);
    let mut s = g.shape(den).clone();
    s.0.push(Dim::Fixed(1));
    let den2 = g.reshape(den, &s);
    s.0.pop();
    s.0.push(Dim::Fixed(d));
    g.broadcast_to(den2, &s)
}

/// TF's `safe_embedding_lookup_sparse(table, ids, weights, combiner,
/// max_norm)` over `[B, K]` ids and weights (padding: id -1, weight 0, which
/// gathers zeros and touches no row of the table's update): rows
/// gathered, clipped to `max_norm`, weighted, summed over K, and divided by
/// the row's weight sum (`mean`) or the root of its squared weights
/// (`sqrtn`); non-positive weights are pruned for those two, as TF does.
/// Gives `[B, D]`. The table's gradient is one `gather`'s (an IndexedSlices).
pub(super) fn lookup(
    st: &mut State,
    table: NodeId,
    ids: NodeId,
    weights: NodeId,
    combiner: Combiner,
    max_norm: Option<f32>,
) -> NodeId {
    let d = st.graph.shape(table).0[1].fixed().unwrap_or(1);
    let mut rows = st.graph.gather(table, ids);
    if let Some(clip_norm) = max_norm {
        let mut r = [rows];
        crate::optim::clip::apply(
            &mut st.graph,
            &ClipKind::ByNorm {
                clip_norm,
                axes: Some(vec![2]),
            },
            &mut r,
        );
        rows = r[0];
    }
    let w = if combiner == Combiner::Sum {
        weights
    } else {
        let zero = st.graph.scalar(0.0);
        let s = st.graph.shape(weights).clone();
        let zero = st.graph.broadcast_to(zero, &s);
        st.graph.binary(BinaryOp::Max, weights, zero)
    };
    let wb = spread(st, w, d);
    let weighted = st.graph.mul(rows, wb);
    let sum = st.graph.reduce_sum(weighted, &[1]);
    match combiner {
        Combiner::Sum => sum,
        Combiner::Mean => {
            let ws = st.graph.reduce_sum(w, &[1]);
            let den = row_divisor(st, ws, d);
            st.graph.div(sum, den)
        }
        Combiner::Sqrtn => {
            let w2 = st.graph.mul(w, w);
            let ws = st.graph.reduce_sum(w2, &[1]);
            let root = st.graph.unary(UnaryOp::Sqrt, ws);
            let den = row_divisor(st, root, d);
            st.graph.div(sum, den)
        }
    }
}

/// `indicator_column`: per example, the sum over its slots of weight ×
/// one_hot(id, num_buckets) (counts for repeated ids, the weights of a
/// weighted column; an id out of range contributes nothing).
pub(super) fn indicator(st: &mut State, cat: &Categorical, span: Span) -> NodeId {
    let (ids, w) = categorical_inputs(st, cat, false, false, span);
    let n = cat.column.num_buckets() as u32;
    let hot = st.graph.one_hot(ids, n);
    let wb = spread(st, w, n);
    let weighted = st.graph.mul(hot, wb);
    st.graph.reduce_sum(weighted, &[1])
}

/// The embedding table of a column in a layer's scope. A shared table is
/// one variable per collection, made in the scope of the first layer that
/// reads it (`input_layer/<collection>/embedding_weights`, as TF's
/// `shared_embedding_columns` in `input_layer` names it); later layers
/// reuse it, as TF's collection does.
pub(super) fn embedding_table(st: &mut State, e: &Embedding, scope: &str, span: Span) -> NodeId {
    let collection = e
        .shared
        .as_ref()
        .map(|c| format!("shared embedding collection {c}"));
    if let Some(&table) = collection.as_ref().and_then(|c| st.features.vars.get(c)) {
        return table;
    }
    let name = match &e.shared {
        Some(collection) => format!("{scope}/{collection}/embedding_weights"),
        None => format!(
            "{scope}/{}_embedding/embedding_weights",
            e.categorical.column.name()
        ),
    };
    let rows = e.categorical.column.num_buckets() as u32;
    // The default initializer's seed is derived from the name without the
    // scope (the same in every layer).
    let dims = [rows, e.dimension];
    let table = variable(
        st,
        &name,
        &dims,
        e.initializer.clone(),
        e.trainable,
        span,
        partitioner::of_float32(e.partitioner, &dims),
    );
    if let Some(c) = collection {
        st.features.vars.insert(c, table);
    }
    table
}
