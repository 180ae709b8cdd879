//! The abstract syntax tree of a `.spec` file.
//!
//! Owns: the shape of parsed specs, with a [`Span`] on every node a diagnostic
//! may point at. Invariants: the AST is purely syntactic (no name resolution,
//! no shapes); every span is a byte range into the source text it was parsed
//! from; items keep source order.

use std::fmt;

/// A byte range `start..end` into the spec source.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }
    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// An identifier with its position.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

impl fmt::Display for Ident {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// A whole spec file: its items in source order.
#[derive(Clone, Debug, PartialEq)]
pub struct SpecFile {
    pub items: Vec<Item>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// `model NAME`
    Model(Ident),
    /// `data csv("path.csv")` or `data synthetic(rows = .., ..)`
    Data(Call),
    /// `eval_data csv("test.csv")`: what evaluations read
    EvalData(Call),
    /// `label NAME: int` / `label NAME: float from c0, c1..c3` /
    /// `label NAME: vocabulary ["no", "yes"]`
    Label(LabelDecl),
    /// `features { name = numeric(...) ... }`
    Features(Block<Binding>),
    /// `params { W: [64, 128] = glorot_uniform(seed = 1) ... }`
    Params(Block<ParamDecl>),
    /// `name = expr` at top level
    Let(Binding),
    /// A call used as a statement, e.g. `assert_shape(h, [B, 128])`.
    Statement(Call),
    /// `optimizer adam(learning_rate = 0.001)`
    Optimizer(Call),
    /// `clip global_norm(5.0)`: gradient processing before the optimizer.
    Clip(Call),
    /// `ema 0.999, num_updates = true`: moving averages of the parameters.
    Ema(EmaDecl),
    /// `train { batch = 64, steps = 3000 }`
    Train(Block<Arg>),
    /// `metrics { accuracy(label, argmax(logits)) acc2 = ... }`
    Metrics(Block<MetricDecl>),
    /// `outputs { probs = softmax(logits), class = argmax(logits, 1) }`:
    /// what inference returns, by name.
    Outputs(Block<Binding>),
    /// `checkpoint { dir = "runs/x", every_steps = 1000, keep = 5 }`
    Checkpoint(Block<Arg>),
    /// `summaries { dir = "runs/x", every_steps = 100, histograms = false }`
    Summaries(Block<Arg>),
    /// `logging { every_steps = 100, tensors = [loss, h1] }`
    Logging(Block<Arg>),
    /// `evaluate { every_steps = 500 }`
    Evaluate(Block<Arg>),
    /// `init_from_checkpoint("path", { "old/": "new/", "W1": "layer1/W" })`
    InitFromCheckpoint(InitFromCheckpoint),
    /// `warm_start("path", vars_to_warm_start = ".*", var_name_to_vocab_info = { .. })`
    WarmStart(WarmStartItem),
    /// `block NAME(PARAMS) { ... }`: a definition, expanded at each call.
    BlockDef(BlockDef),
    /// `optimizer_def NAME(HYPERS) { slot .. update { .. } .. }`: an
    /// optimizer written in the spec.
    OptimizerDef(OptimizerDef),
    /// `for i in range(N) { ... }` at the top level.
    For(ForLoop),
    /// `a, b = f(...)`.
    TupleLet(TupleBinding),
}

/// A block definition: a named, parameterized piece of a spec that declares
/// its own parameters (under the variable scope of each call) and returns
/// one value or a tuple.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockDef {
    pub name: Ident,
    pub params: Vec<BlockParam>,
    /// `scope "NAME"`: the calls' default scope name (else the block's name).
    pub scope: Option<StrLit>,
    pub body: Vec<Stmt>,
    pub span: Span,
}

/// An optimizer definition: its hyperparameters (with defaults), then its
/// entries in source order (validated by sema: one `update`, at most one
/// `sparse` and one `finish`).
#[derive(Clone, Debug, PartialEq)]
pub struct OptimizerDef {
    pub name: Ident,
    pub params: Vec<BlockParam>,
    pub entries: Vec<OptEntry>,
    pub span: Span,
}

/// One entry of an `optimizer_def` body.
#[derive(Clone, Debug, PartialEq)]
pub enum OptEntry {
    /// `slot m = zeros`: a slot of every variable, and its initial value.
    Slot(Binding),
    /// `global beta1_power = beta1`: a non-slot scalar variable.
    Global(Binding),
    /// `update { var = var - learning_rate * grad }`: the dense rule.
    Update(OptSection),
    /// `sparse rows` / `sparse densify`, with an optional rule of its own.
    Sparse {
        mode: Ident,
        rule: Option<OptSection>,
        span: Span,
    },
    /// `finish { beta1_power = beta1_power * beta1 }`: the non-slot
    /// variables' update, once per step.
    Finish(OptSection),
}

/// A braced list of assignments (`update { ... }`), evaluated in order.
#[derive(Clone, Debug, PartialEq)]
pub struct OptSection {
    /// The keyword (`update`).
    pub keyword: Span,
    pub body: Vec<Binding>,
    pub span: Span,
}

/// A parameter of a block, with its default value if it has one.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockParam {
    pub name: Ident,
    pub default: Option<Expr>,
    pub span: Span,
}

/// A statement of a block, `for` or `if` body.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    Params(Block<ParamDecl>),
    Let(Binding),
    TupleLet(TupleBinding),
    Call(Call),
    For(ForLoop),
    If(IfStmt),
    Return(Return),
}

/// `for VAR in range(...) { BODY }`.
#[derive(Clone, Debug, PartialEq)]
pub struct ForLoop {
    pub var: Ident,
    pub range: Call,
    pub body: Vec<Stmt>,
    pub span: Span,
}

/// `if COND { THEN } else { ELSE }` on a compile-time condition.
#[derive(Clone, Debug, PartialEq)]
pub struct IfStmt {
    pub cond: Expr,
    pub then: Vec<Stmt>,
    pub otherwise: Vec<Stmt>,
    pub span: Span,
}

/// `return a` or `return a, b`.
#[derive(Clone, Debug, PartialEq)]
pub struct Return {
    pub values: Vec<Expr>,
    pub span: Span,
}

/// `a, b = value`: the names bound to a tuple's parts in order.
#[derive(Clone, Debug, PartialEq)]
pub struct TupleBinding {
    pub names: Vec<Ident>,
    pub value: Expr,
    pub span: Span,
}

/// A string literal with its position (quotes included in the span).
#[derive(Clone, Debug, PartialEq)]
pub struct StrLit {
    pub value: String,
    pub span: Span,
}

/// `init_from_checkpoint(PATH, { "CKPT NAME OR SCOPE": "PARAM NAME OR SCOPE", .. })`:
/// TF's `tf.compat.v1.train.init_from_checkpoint` and its `assignment_map`.
#[derive(Clone, Debug, PartialEq)]
pub struct InitFromCheckpoint {
    pub path: StrLit,
    /// The entries in source order: (checkpoint side, spec side).
    pub assignment_map: Vec<(StrLit, StrLit)>,
    /// The `{ .. }` of the map.
    pub map_span: Span,
    pub span: Span,
}

/// `warm_start(PATH, NAME = VALUE, ..)`: TF's
/// `tf.compat.v1.train.warm_start(ckpt_to_initialize_from, ..)`; sema gives
/// the arguments their meaning.
#[derive(Clone, Debug, PartialEq)]
pub struct WarmStartItem {
    pub path: StrLit,
    /// The keyword arguments in source order.
    pub args: Vec<WarmArg>,
    pub span: Span,
}

/// One `NAME = VALUE` of [`WarmStartItem`].
#[derive(Clone, Debug, PartialEq)]
pub struct WarmArg {
    pub name: Ident,
    pub value: WarmValue,
    pub span: Span,
}

/// The value of a [`WarmArg`]: an expression, or a dict literal
/// `{ "VARIABLE": VALUE, .. }` (only here, like the assignment map).
#[derive(Clone, Debug, PartialEq)]
pub enum WarmValue {
    Expr(Expr),
    Map {
        /// The entries in source order.
        entries: Vec<(StrLit, Expr)>,
        /// The `{ .. }`.
        span: Span,
    },
}

impl Item {
    /// The settings block of a keyword-block item (`train`, `checkpoint`,
    /// `summaries`, `logging`, `evaluate`) and its keyword.
    pub fn settings_block(&self) -> Option<(&'static str, &Block<Arg>)> {
        Some(match self {
            Item::Train(b) => ("train", b),
            Item::Checkpoint(b) => ("checkpoint", b),
            Item::Summaries(b) => ("summaries", b),
            Item::Logging(b) => ("logging", b),
            Item::Evaluate(b) => ("evaluate", b),
            _ => return None,
        })
    }
}

/// A braced block: its entries and the span of the keyword that opened it.
#[derive(Clone, Debug, PartialEq)]
pub struct Block<T> {
    pub keyword: Span,
    pub entries: Vec<T>,
    pub span: Span,
}

/// `name = expr`
#[derive(Clone, Debug, PartialEq)]
pub struct Binding {
    pub name: Ident,
    pub value: Expr,
    pub span: Span,
}

/// `label NAME: TYPE [from COLUMNS]`
#[derive(Clone, Debug, PartialEq)]
pub struct LabelDecl {
    pub name: Ident,
    /// `int` or `float` (validated by sema).
    pub dtype: Ident,
    /// The columns after `from`; `None` means the single column `name`.
    /// Entries are `Expr::Ident`, `Expr::Range` or `Expr::Str` (a quoted
    /// header such as `"price ($)"`).
    pub columns: Option<Vec<Expr>>,
    /// The list after the type (`label y: vocabulary ["no", "yes"]`): the
    /// label's vocabulary, a list of strings (validated by sema).
    pub vocabulary: Option<Expr>,
    pub span: Span,
}

/// `NAME: [d0, d1] = initializer(args) [, key = value]*`
#[derive(Clone, Debug, PartialEq)]
pub struct ParamDecl {
    pub name: Ident,
    /// The dimension expressions (integer literals after checking).
    pub shape: Vec<Expr>,
    pub shape_span: Span,
    /// The initializer: `Expr::Ident` (`zeros`) or `Expr::Call` (`glorot_uniform(seed = 1)`).
    pub init: Expr,
    /// Trailing options such as `trainable = false`.
    pub options: Vec<Arg>,
    pub span: Span,
}

/// `ema DECAY [, key = value]*`
#[derive(Clone, Debug, PartialEq)]
pub struct EmaDecl {
    pub decay: Expr,
    pub options: Vec<Arg>,
    pub span: Span,
}

/// An entry of `metrics { .. }`: an optional name and the metric call.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricDecl {
    pub name: Option<Ident>,
    pub value: Expr,
    pub span: Span,
}

/// `f(a, b, key = c)`
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    pub func: Ident,
    pub args: Vec<Arg>,
    pub span: Span,
}

/// A call argument, positional (`name == None`) or keyword.
#[derive(Clone, Debug, PartialEq)]
pub struct Arg {
    pub name: Option<Ident>,
    pub value: Expr,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    /// `//`: integer division of static sizes (Python's floor division).
    FloorDiv,
    /// `%`: the remainder of static sizes (Python's, with the divisor's sign).
    Mod,
    MatMul,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// `and`, `or`: conditions (a data source's `filter`, a static `if`).
    And,
    Or,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::FloorDiv => "//",
            BinOp::Mod => "%",
            BinOp::MatMul => "@",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "and",
            BinOp::Or => "or",
        }
    }
}

/// One entry inside `x[...]`.
#[derive(Clone, Debug, PartialEq)]
pub enum IndexItem {
    /// `x[2]`: selects one position and drops the axis.
    Index(Expr),
    /// `x[a:b]`, `x[:]`, `x[a:]`, `x[:b]`.
    Slice {
        start: Option<Expr>,
        end: Option<Expr>,
        span: Span,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// A numeric literal. `is_int` is true when written without `.`/exponent.
    Number {
        value: f64,
        is_int: bool,
    },
    Str(String),
    Bool(bool),
    Ident(String),
    /// `px0..px63`: a range of column names.
    Range(Ident, Ident),
    Call(Call),
    /// `[a, b, c]`
    List(Vec<Expr>),
    Unary(Box<Expr>),
    /// `a op b op c ...`: operators of one precedence level applied from the
    /// left, `((a op b) op c)`. A chain is a list, not nested nodes, so a
    /// sum of 100,000 terms is one level deep: an expression's depth is its
    /// real nesting (brackets, calls, operators of different precedence).
    /// `rest` is never empty; comparisons have exactly one operation.
    Binary(Box<Expr>, Vec<Operation>),
    /// `x[...]`
    Index(Box<Expr>, Vec<IndexItem>),
}

/// One step of a [`ExprKind::Binary`] chain: `op rhs`.
#[derive(Clone, Debug, PartialEq)]
pub struct Operation {
    pub op: BinOp,
    /// The operator's position.
    pub op_span: Span,
    pub rhs: Expr,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

impl Expr {
    pub fn new(kind: ExprKind, span: Span) -> Expr {
        Expr { kind, span }
    }
}

/// The partial results of a chain `first op1 e1 op2 e2 ...` whose text is
/// at `whole`, left to right: for each operation, the span of its left
/// operand (everything before the operator) and of the partial result it
/// produces (the last one is `whole`, which includes any parentheses).
pub fn chain_spans<'a>(
    first: &Expr,
    rest: &'a [Operation],
    whole: Span,
) -> impl Iterator<Item = (Span, Span, &'a Operation)> + 'a {
    let start = first.span;
    let mut lhs = start;
    let last = rest.len().saturating_sub(1);
    rest.iter().enumerate().map(move |(i, o)| {
        let result = if i == last {
            whole
        } else {
            start.to(o.rhs.span)
        };
        let item = (lhs, result, o);
        lhs = result;
        item
    })
}
