//! `tf.compat.v1.nn.dynamic_rnn` and its cells: `lstm_cell`
//! (`LSTMCell` / `TFLiteLSTMCell`), `gru_cell` (`GRUCell`), `basic_rnn_cell`
//! (`BasicRNNCell` / `TfLiteRNNCell`) and `multi_rnn_cell` (`MultiRNNCell`).
//!
//! Owns: reading a cell expression (a static description, never a
//! tensor), the cells' variables under TF's scopes (`rnn/lstm_cell/kernel`,
//! `rnn/multi_rnn_cell/cell_0/gru_cell/gates/bias`, ...), their
//! initializers (TF's defaults: glorot_uniform kernels, zero biases, the
//! GRU's gate bias 1), and the lowering of one layer: the input projection
//! of every step as one product, the runtime's time loop
//! (`Op::Recurrence`), the outputs zeroed past each row's length, and the
//! final state read from the loop's tape.
//!
//! Invariants: `dynamic_rnn` returns, in `tf.nest.flatten` order, the
//! outputs and then the final state's tensors (an LSTM's `(c, h)`, a GRU's
//! or basic cell's `h`, a stack's cells in order); the scope is TF's
//! `variable_scope(scope or "rnn")` (a named scope: a second unscoped
//! layer with an unnamed cell of the same kind is TF's "already exists"
//! error), each cell's its `name` or its kind made unique under it.

use specc_grammar::ast::{Call, Expr, ExprKind, Span};
use specc_grammar::{Code, Diagnostic};
use specc_runtime::rnn::{Activation, Cell, CellKind};

use super::args::{self, opt, req, Bound};
use super::blocks::declare_variable;
use super::expr::R;
use super::State;
use crate::ir::recurrence::RnnInputs;
use crate::ir::{BinaryOp, DType, Dim, NodeId, Shape};

/// The cell constructors (`dynamic_rnn`'s first argument, never tensors).
pub(crate) const CELLS: &[&str] = &["lstm_cell", "gru_cell", "basic_rnn_cell", "multi_rnn_cell"];

/// One cell as written: its description, its scope's name and initializers.
struct CellSpec {
    cell: Cell,
    /// `name = "..."`, else the kind's snake-case name made unique.
    name: Option<String>,
    base: &'static str,
    /// LSTM `initializer`, GRU `kernel_initializer`.
    kernel_init: Option<Expr>,
    /// GRU `bias_initializer`.
    bias_init: Option<Expr>,
    span: Span,
}

fn not_a_cell(e: &Expr) -> Diagnostic {
    Diagnostic::new(
        Code::ArgumentType,
        e.span,
        "`dynamic_rnn`'s cell is a cell constructor call",
    )
    .with_label("not a cell")
    .with_help("e.g. lstm_cell(128), gru_cell(64), basic_rnn_cell(32), multi_rnn_cell([lstm_cell(64), lstm_cell(64)])")
}

/// Reads a cell expression.
/// A cell argument: its cells, and whether they are a stack
/// (`multi_rnn_cell([...])`).
fn cell_tree(e: &Expr) -> R<(Vec<CellSpec>, bool)> {
    let ExprKind::Call(c) = &e.kind else {
        return Err(not_a_cell(e));
    };
    match c.func.name.as_str() {
        "multi_rnn_cell" => {
            let b = args::bind("multi_rnn_cell", c, &[req("cells")])?;
            let list = b.req(0);
            let ExprKind::List(items) = &list.kind else {
                return Err(Diagnostic::new(
                    Code::ArgumentType,
                    list.span,
                    "`multi_rnn_cell` takes a list of cells",
                )
                .with_label("not a list"));
            };
            if items.is_empty() {
                return Err(Diagnostic::new(
                    Code::EmptyArgument,
                    list.span,
                    "`multi_rnn_cell` needs at least one cell",
                )
                .with_label("no cells"));
            }
            let mut cells = Vec::with_capacity(items.len());
            for item in items {
                match cell_tree(item)? {
                    (mut one, false) => cells.append(&mut one),
                    (_, true) => {
                        return Err(Diagnostic::new(
                            Code::ArgumentType,
                            item.span,
                            "a stack inside a stack: list its cells in one `multi_rnn_cell`",
                        )
                        .with_label("nested stack"))
                    }
                }
            }
            Ok((cells, true))
        }
        "lstm_cell" | "gru_cell" | "basic_rnn_cell" => Ok((vec![one_cell(c)?], false)),
        _ => Err(not_a_cell(e)),
    }
}

/// A positive integer argument.
fn units(e: &Expr, what: &str) -> R<u32> {
    let v = args::eval_int(e)?;
    if !(1..=1 << 20).contains(&v) {
        return Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            e.span,
            format!("{what} must be from 1 to 1048576, got {v}"),
        )
        .with_label("out of range"));
    }
    Ok(v as u32)
}

/// A clip value: `None`, or a positive number (f32 bits).
fn clip(e: Option<&Expr>, what: &str) -> R<Option<u32>> {
    let Some(e) = e.filter(|e| !args::is_none(e)) else {
        return Ok(None);
    };
    let v = args::eval_number(e)?;
    if !(v > 0.0 && v.is_finite()) {
        return Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            e.span,
            format!("{what} must be a positive number, got {v}"),
        )
        .with_label("out of range"));
    }
    Ok(Some((v as f32).to_bits()))
}

/// `activation`: tanh (TF's default), relu, sigmoid, or linear.
fn activation(e: Option<&Expr>) -> R<Activation> {
    let Some(e) = e.filter(|e| !args::is_none(e)) else {
        return Ok(Activation::Tanh);
    };
    let name = match &e.kind {
        ExprKind::Ident(n) => n.as_str(),
        ExprKind::Str(s) => s.as_str(),
        _ => "",
    };
    Ok(match name {
        "tanh" => Activation::Tanh,
        "relu" => Activation::Relu,
        "sigmoid" => Activation::Sigmoid,
        "linear" | "identity" => Activation::Linear,
        _ => {
            return Err(Diagnostic::new(
                Code::UnknownChoice,
                e.span,
                "a cell's activation is tanh, relu, sigmoid or linear",
            )
            .with_label("not one of them"))
        }
    })
}

fn name_arg(e: Option<&Expr>) -> R<Option<String>> {
    match e.filter(|e| !args::is_none(e)) {
        Some(e) => Ok(Some(args::eval_string(e)?.to_string())),
        None => Ok(None),
    }
}

fn initializer_arg(e: Option<&Expr>) -> Option<Expr> {
    e.filter(|e| !args::is_none(e)).cloned()
}

/// `lstm_cell(...)`, `gru_cell(...)` or `basic_rnn_cell(...)`.
fn one_cell(c: &Call) -> R<CellSpec> {
    let kind = c.func.name.as_str();
    let mut cell = Cell {
        kind: CellKind::Basic,
        units: 0,
        num_proj: None,
        use_peepholes: false,
        forget_bias: 1.0f32.to_bits(),
        cell_clip: None,
        proj_clip: None,
        activation: Activation::Tanh,
    };
    let (b, base): (Bound, &'static str) = match kind {
        "lstm_cell" => {
            let b = args::bind(
                kind,
                c,
                &[
                    req("num_units"),
                    opt("use_peepholes"),
                    opt("cell_clip"),
                    opt("initializer"),
                    opt("num_proj"),
                    opt("proj_clip"),
                    opt("forget_bias"),
                    opt("activation"),
                    opt("name"),
                ],
            )?;
            cell.kind = CellKind::Lstm;
            cell.use_peepholes = b.flag(1)?;
            cell.cell_clip = clip(b.get(2), "cell_clip")?;
            cell.num_proj = match b.get(4).filter(|e| !args::is_none(e)) {
                Some(e) => Some(units(e, "num_proj")?),
                None => None,
            };
            cell.proj_clip = clip(b.get(5), "proj_clip")?;
            if let (Some(_), None) = (cell.proj_clip, cell.num_proj) {
                return Err(Diagnostic::new(
                    Code::ConflictingArguments,
                    b.req(5).span,
                    "proj_clip clips the projection, and this cell has no num_proj",
                )
                .with_label("nothing to clip"));
            }
            if let Some(e) = b.get(6) {
                let v = args::eval_number(e)?;
                if !v.is_finite() {
                    return Err(Diagnostic::new(
                        Code::ArgumentOutOfRange,
                        e.span,
                        "forget_bias must be finite",
                    )
                    .with_label("not finite"));
                }
                cell.forget_bias = (v as f32).to_bits();
            }
            cell.activation = activation(b.get(7))?;
            (b, "lstm_cell")
        }
        "gru_cell" => {
            let b = args::bind(
                kind,
                c,
                &[
                    req("num_units"),
                    opt("activation"),
                    opt("kernel_initializer"),
                    opt("bias_initializer"),
                    opt("name"),
                ],
            )?;
            cell.kind = CellKind::Gru;
            cell.activation = activation(b.get(1))?;
            (b, "gru_cell")
        }
        _ => {
            let b = args::bind(kind, c, &[req("num_units"), opt("activation"), opt("name")])?;
            cell.activation = activation(b.get(1))?;
            (b, "basic_rnn_cell")
        }
    };
    cell.units = units(b.req(0), "num_units")?;
    let (kernel_init, bias_init, name) = match cell.kind {
        CellKind::Lstm => (initializer_arg(b.get(3)), None, name_arg(b.get(8))?),
        CellKind::Gru => (
            initializer_arg(b.get(2)),
            initializer_arg(b.get(3)),
            name_arg(b.get(4))?,
        ),
        CellKind::Basic => (None, None, name_arg(b.get(2))?),
    };
    Ok(CellSpec {
        cell,
        name,
        base,
        kernel_init,
        bias_init,
        span: c.span,
    })
}

/// A variable of a cell: `scope/local`, initialized by `init` (an
/// initializer expression) or TF's default `default`.
fn variable(
    st: &mut State,
    scope: &str,
    local: &str,
    dims: &[u32],
    init: Option<&Expr>,
    default: &str,
    span: Span,
) -> R<NodeId> {
    let name = format!("{scope}/{local}");
    let fallback = Expr::new(ExprKind::Ident(default.to_string()), span);
    let init = super::params::initializer(init.unwrap_or(&fallback), &name, dims)?;
    declare_variable(st, &name, dims, init, span)
}

/// `x [B, T, D]` through one cell under `parent`: the outputs `[B, T, P]`
/// (zero past each row's length) and the final state's tensors.
fn layer(
    st: &mut State,
    spec: &CellSpec,
    parent: &str,
    x: NodeId,
    lengths: Option<NodeId>,
    initial: &[NodeId],
) -> R<(NodeId, Vec<NodeId>)> {
    let cell = spec.cell;
    let scope = st
        .blocks
        .open_scope(parent, spec.name.as_deref(), spec.base);
    let xs = st.graph.shape(x).clone();
    let (b, t, d) = (
        xs.0[0],
        xs.0[1].fixed().unwrap_or(0),
        xs.0[2].fixed().unwrap_or(0),
    );
    let (h, p) = (cell.units, cell.output_size() as u32);
    let g = cell.gate_width() as u32;
    let span = spec.span;
    let ki = spec.kernel_init.as_ref();
    let (xproj, wh, peepholes, proj) = match cell.kind {
        CellKind::Lstm | CellKind::Basic => {
            let kernel = variable(
                st,
                &scope,
                "kernel",
                &[d + p, g],
                ki,
                "glorot_uniform",
                span,
            )?;
            let bias = variable(st, &scope, "bias", &[g], None, "zeros", span)?;
            let peepholes = if cell.use_peepholes {
                let mut rows = Vec::new();
                for diag in ["w_i_diag", "w_f_diag", "w_o_diag"] {
                    let v = variable(st, &scope, diag, &[h], ki, "glorot_uniform", span)?;
                    rows.push(st.graph.reshape(v, &Shape::fixed(&[1, h])));
                }
                Some(st.graph.concat(&rows, 0))
            } else {
                None
            };
            let proj = match cell.num_proj {
                Some(_) => {
                    let name = "projection/kernel";
                    Some(variable(
                        st,
                        &scope,
                        name,
                        &[h, p],
                        ki,
                        "glorot_uniform",
                        span,
                    )?)
                }
                None => None,
            };
            let xproj = input_projection(st, x, kernel, bias, d);
            let wh = st.graph.slice(kernel, &[d, 0], &Shape::fixed(&[p, g]));
            (xproj, wh, peepholes, proj)
        }
        CellKind::Gru => {
            let bi = spec.bias_init.as_ref();
            let gk = variable(
                st,
                &scope,
                "gates/kernel",
                &[d + h, 2 * h],
                ki,
                "glorot_uniform",
                span,
            )?;
            let gb = variable(st, &scope, "gates/bias", &[2 * h], bi, "ones", span)?;
            let ck = variable(
                st,
                &scope,
                "candidate/kernel",
                &[d + h, h],
                ki,
                "glorot_uniform",
                span,
            )?;
            let cb = variable(st, &scope, "candidate/bias", &[h], bi, "zeros", span)?;
            let xg = input_projection(st, x, gk, gb, d);
            let xc = input_projection(st, x, ck, cb, d);
            let xproj = st.graph.concat(&[xg, xc], 2);
            let gh = st.graph.slice(gk, &[d, 0], &Shape::fixed(&[h, 2 * h]));
            let ch = st.graph.slice(ck, &[d, 0], &Shape::fixed(&[h, h]));
            (xproj, st.graph.concat(&[gh, ch], 1), None, None)
        }
    };
    let (c0, h0) = match (cell.kind, initial) {
        (_, []) => (None, None),
        (CellKind::Lstm, [c0, h0]) => (Some(*c0), Some(*h0)),
        (_, [h0]) => (None, Some(*h0)),
        _ => unreachable!("initial states checked by the caller"),
    };
    let inputs = RnnInputs {
        xproj,
        wh,
        peepholes,
        proj,
        lengths,
        h0,
        c0,
    };
    let tape = st.graph.recurrence(cell, inputs);
    let mut outputs = st.graph.tape_field(tape, 1, t, 0, p as usize);
    if let Some(len) = lengths {
        // Zero past each row's length: t < len[b].
        let mask = st.graph.sequence_mask(len, t);
        let mask = st
            .graph
            .reshape(mask, &Shape(vec![b, Dim::Fixed(t), Dim::Fixed(1)]));
        outputs = st.graph.mul(outputs, mask);
    }
    let last = |st: &mut State, at: usize, width: u32| {
        let v = st.graph.tape_field(tape, t, 1, at, width as usize);
        st.graph.reshape(v, &Shape(vec![b, Dim::Fixed(width)]))
    };
    let state = match cell.tape().c {
        Some(c_at) => vec![last(st, c_at, h), last(st, 0, p)],
        None => vec![last(st, 0, p)],
    };
    Ok((outputs, state))
}

/// `x [B, T, D] @ kernel[0:D] + bias`: every step's input projection at once.
fn input_projection(st: &mut State, x: NodeId, kernel: NodeId, bias: NodeId, d: u32) -> NodeId {
    let cols = st.graph.shape(kernel).0[1].fixed().unwrap_or(0);
    let wx = st.graph.slice(kernel, &[0, 0], &Shape::fixed(&[d, cols]));
    let xw = st.graph.matmul(x, wx, false, false);
    let s = st.graph.shape(xw).clone();
    let bias = st.graph.broadcast_to(bias, &s);
    st.graph.add(xw, bias)
}

/// The state tensors a cell takes and returns: an LSTM's `c [B, H]` and
/// `h [B, P]`, another cell's `h [B, H]`.
fn state_shapes(cell: &Cell, b: Dim) -> Vec<Shape> {
    let h = Shape(vec![b, Dim::Fixed(cell.output_size() as u32)]);
    match cell.kind {
        CellKind::Lstm => vec![Shape(vec![b, Dim::Fixed(cell.units)]), h],
        _ => vec![h],
    }
}

/// The inputs as `[B, T, D]` (transposed from `[T, B, D]` when time-major).
fn sequences(st: &mut State, e: &Expr, time_major: bool, what: &str) -> R<NodeId> {
    let x = st.lowerer().float(e)?;
    let xs = st.graph.shape(x).clone();
    let fixed = |d: Dim| d.fixed().filter(|&n| n > 0);
    let ok = xs.rank() == 3
        && fixed(xs.0[2]).is_some()
        && fixed(xs.0[usize::from(!time_major)]).is_some();
    if !ok {
        return Err(Diagnostic::new(
            Code::BadShape,
            e.span,
            format!(
                "`{what}`'s inputs are {}, got {xs}",
                if time_major { "[T, B, D]" } else { "[B, T, D]" }
            ),
        )
        .with_label("not a batch of sequences"));
    }
    Ok(if time_major {
        st.graph.transpose(x, &[1, 0, 2])
    } else {
        x
    })
}

/// `sequence_length` as f32 `[B]`, or `None`.
fn lengths_arg(st: &mut State, e: Option<&Expr>, batch: Dim) -> R<Option<NodeId>> {
    let Some(e) = e.filter(|e| !args::is_none(e)) else {
        return Ok(None);
    };
    let v = st.lowerer().lower(e)?;
    if st.graph.shape(v) != &Shape(vec![batch]) {
        return Err(Diagnostic::new(
            Code::ShapeMismatch,
            e.span,
            format!(
                "sequence_length is {}, not one length per sequence, [{batch}]",
                st.graph.shape(v)
            ),
        )
        .with_label("not [B]"));
    }
    Ok(Some(match st.graph.dtype(v) {
        DType::F32 => v,
        _ => st.graph.cast(v, DType::F32),
    }))
}

/// An `initial_state` argument: the state's tensors of `cells`, in
/// `tf.nest.flatten` order (none: zeros).
fn initial_arg(st: &mut State, e: Option<&Expr>, cells: &[CellSpec], batch: Dim) -> R<Vec<NodeId>> {
    let Some(e) = e.filter(|e| !args::is_none(e)) else {
        return Ok(Vec::new());
    };
    let wanted: Vec<Shape> = cells
        .iter()
        .flat_map(|s| state_shapes(&s.cell, batch))
        .collect();
    let parts: Vec<&Expr> = match &e.kind {
        ExprKind::List(items) => items.iter().collect(),
        _ => vec![e],
    };
    if parts.len() != wanted.len() {
        return Err(Diagnostic::new(
            Code::ShapeMismatch,
            e.span,
            format!(
                "the cell's state is {} tensor{} ({}), in tf.nest.flatten order",
                wanted.len(),
                if wanted.len() == 1 { "" } else { "s" },
                wanted
                    .iter()
                    .map(Shape::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
        .with_label(format!("{} given", parts.len())));
    }
    let mut values = Vec::with_capacity(parts.len());
    for (p, w) in parts.iter().zip(&wanted) {
        let v = st.lowerer().float(p)?;
        if st.graph.shape(v) != w {
            return Err(Diagnostic::new(
                Code::ShapeMismatch,
                p.span,
                format!(
                    "this state tensor is {}, the cell's is {w}",
                    st.graph.shape(v)
                ),
            )
            .with_label("another shape"));
        }
        values.push(v);
    }
    Ok(values)
}

/// The cells run in the opened scope `scope` over `x [B, T, D]`: the last
/// cell's outputs and every cell's final state.
fn run_cells(
    st: &mut State,
    cells: &[CellSpec],
    stacked: bool,
    scope: &str,
    mut x: NodeId,
    lengths: Option<NodeId>,
    initial: &[NodeId],
) -> R<(NodeId, Vec<NodeId>)> {
    let batch = st.graph.shape(x).0[0];
    let cells_scope = if stacked {
        st.blocks.open_scope(scope, None, "multi_rnn_cell")
    } else {
        scope.to_string()
    };
    let mut states = Vec::new();
    let mut taken = 0;
    for (i, spec) in cells.iter().enumerate() {
        let n = state_shapes(&spec.cell, batch).len();
        let init = if initial.is_empty() {
            initial
        } else {
            &initial[taken..taken + n]
        };
        taken += n;
        let scope = if stacked {
            st.blocks
                .open_scope(&cells_scope, Some(&format!("cell_{i}")), "cell")
        } else {
            cells_scope.clone()
        };
        let (out, state) = layer(st, spec, &scope, x, lengths, init)?;
        x = out;
        states.extend(state);
    }
    Ok((x, states))
}

/// A `scope` argument, else `default`.
fn scope_arg(e: Option<&Expr>, default: &str) -> R<String> {
    match e.filter(|e| !args::is_none(e)) {
        Some(e) => Ok(args::eval_string(e)?.to_string()),
        None => Ok(default.to_string()),
    }
}

/// `dynamic_rnn(cell, inputs, sequence_length = None, initial_state = None,
/// time_major = false, scope = None)`: the outputs, then the final state's
/// tensors (see the module docs).
pub(crate) fn dynamic_rnn(st: &mut State, c: &Call) -> R<Vec<NodeId>> {
    at_call(st, c, dynamic_rnn_at)
}

/// `lower(st, c)` with the nodes it makes pointing at the call (for the
/// diagnostics of later stages, e.g. export).
fn at_call(
    st: &mut State,
    c: &Call,
    lower: fn(&mut State, &Call) -> R<Vec<NodeId>>,
) -> R<Vec<NodeId>> {
    let saved = st.graph.current_span.replace(c.span);
    let r = lower(st, c);
    st.graph.current_span = saved;
    r
}

fn dynamic_rnn_at(st: &mut State, c: &Call) -> R<Vec<NodeId>> {
    let b = args::bind(
        "dynamic_rnn",
        c,
        &[
            req("cell"),
            req("inputs"),
            opt("sequence_length"),
            opt("initial_state"),
            opt("time_major"),
            opt("scope"),
        ],
    )?;
    let (cells, stacked) = cell_tree(b.req(0))?;
    let time_major = b.flag(4)?;
    let x = sequences(st, b.req(1), time_major, "dynamic_rnn")?;
    let batch = st.graph.shape(x).0[0];
    let lengths = lengths_arg(st, b.get(2), batch)?;
    let initial = initial_arg(st, b.get(3), &cells, batch)?;
    let parent = st.blocks.scope().to_string();
    let name = scope_arg(b.get(5), "rnn")?;
    let scope = st.blocks.open_scope(&parent, Some(&name), "rnn");
    let (mut out, states) = run_cells(st, &cells, stacked, &scope, x, lengths, &initial)?;
    if time_major {
        out = st.graph.transpose(out, &[1, 0, 2]);
    }
    let mut values = vec![out];
    values.extend(states);
    Ok(values)
}

/// `x [B, T, D]` with each row's first `len` steps reversed (TF's
/// `reverse_sequence`; all `T` without lengths): a per-row gather along
/// the time axis.
fn reverse_sequence(st: &mut State, x: NodeId, lengths: Option<NodeId>) -> NodeId {
    let xs = st.graph.shape(x).clone();
    let (b, t) = (xs.0[0], xs.0[1].fixed().unwrap_or(0));
    let bt = Shape(vec![b, Dim::Fixed(t)]);
    let steps = st.graph.iota(1, &bt);
    let len = match lengths {
        Some(l) => {
            let col = st.graph.reshape(l, &Shape(vec![b, Dim::Fixed(1)]));
            st.graph.broadcast_to(col, &bt)
        }
        None => st.graph.fill(t as f32, &bt),
    };
    // t < len ? len - 1 - t : t
    let inside = st.graph.binary(BinaryOp::Lt, steps, len);
    let one = st.graph.fill(1.0, &bt);
    let last = st.graph.sub(len, one);
    let mirrored = st.graph.sub(last, steps);
    let ids = st.graph.select(inside, mirrored, steps);
    let ids = st.graph.cast(ids, DType::I32);
    super::functions::select_gather(&mut st.lowerer(), x, ids, 1, 1)
}

/// `bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs, sequence_length =
/// None, initial_state_fw = None, initial_state_bw = None, time_major =
/// false, scope = None)`: the forward and the backward outputs, then the
/// forward and the backward final states' tensors (`tf.nest.flatten` of
/// TF's `((output_fw, output_bw), (state_fw, state_bw))`); variables under
/// `bidirectional_rnn/fw/` and `bidirectional_rnn/bw/`. The backward cell
/// reads each row's first `len` steps reversed, and its outputs are
/// reversed back.
pub(crate) fn bidirectional_dynamic_rnn(st: &mut State, c: &Call) -> R<Vec<NodeId>> {
    at_call(st, c, bidirectional_at)
}

fn bidirectional_at(st: &mut State, c: &Call) -> R<Vec<NodeId>> {
    let b = args::bind(
        "bidirectional_dynamic_rnn",
        c,
        &[
            req("cell_fw"),
            req("cell_bw"),
            req("inputs"),
            opt("sequence_length"),
            opt("initial_state_fw"),
            opt("initial_state_bw"),
            opt("time_major"),
            opt("scope"),
        ],
    )?;
    let (fw_cells, fw_stacked) = cell_tree(b.req(0))?;
    let (bw_cells, bw_stacked) = cell_tree(b.req(1))?;
    let time_major = b.flag(6)?;
    let x = sequences(st, b.req(2), time_major, "bidirectional_dynamic_rnn")?;
    let batch = st.graph.shape(x).0[0];
    let lengths = lengths_arg(st, b.get(3), batch)?;
    let init_fw = initial_arg(st, b.get(4), &fw_cells, batch)?;
    let init_bw = initial_arg(st, b.get(5), &bw_cells, batch)?;
    let parent = st.blocks.scope().to_string();
    let name = scope_arg(b.get(7), "bidirectional_rnn")?;
    let scope = st
        .blocks
        .open_scope(&parent, Some(&name), "bidirectional_rnn");
    let fw_scope = st.blocks.open_scope(&scope, Some("fw"), "fw");
    let (mut out_fw, states_fw) =
        run_cells(st, &fw_cells, fw_stacked, &fw_scope, x, lengths, &init_fw)?;
    let bw_scope = st.blocks.open_scope(&scope, Some("bw"), "bw");
    let x_rev = reverse_sequence(st, x, lengths);
    let (tmp, states_bw) = run_cells(
        st, &bw_cells, bw_stacked, &bw_scope, x_rev, lengths, &init_bw,
    )?;
    let mut out_bw = reverse_sequence(st, tmp, lengths);
    if time_major {
        out_fw = st.graph.transpose(out_fw, &[1, 0, 2]);
        out_bw = st.graph.transpose(out_bw, &[1, 0, 2]);
    }
    let mut values = vec![out_fw, out_bw];
    values.extend(states_fw);
    values.extend(states_bw);
    Ok(values)
}
