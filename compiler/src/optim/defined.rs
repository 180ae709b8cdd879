//! Optimizers written in the spec (`optimizer_def`): the checked rule and
//! its lowering into the training step.
//!
//! Owns: [`Defined`], an `optimizer_def` after sema has resolved every name
//! (`sema::optimizer_def` builds it and reports every error with a caret),
//! and the lowering of its rules to IR: the dense `update`, the `sparse`
//! handling (`rows`: TF's `_apply_sparse`, the rule on the touched rows with
//! duplicate ids summed, as the built-ins' lazy paths; `densify`: the rule
//! on the dense value of the slices, as TF's Adam does), and `finish` (the
//! non-slot variables, once per step, from their values before the step,
//! as TF's `_finish`). The step builder ([`super::build`]) reads a defined
//! optimizer through the same [`super::table`] functions as a built-in one.
//!
//! Invariants: lowering cannot fail: every name is resolved, every value
//! assigned to `var` or a slot has the variable's shape, every value
//! assigned to a global is a scalar, and no reduction runs on rows (sema's
//! checks); statements
//! run in order, an assignment rebinding its target for the statements
//! after it; a slot a rule does not assign keeps its value.

use std::sync::Arc;

use specc_grammar::ast::Span;

use super::table::{OptimizerDef, Sparse, UpdateInputs, UpdateOutputs};
use crate::ir::{BinaryOp, Graph, NodeId, UnaryOp};
use crate::model::OptimizerSpec;

/// An `optimizer_def`, resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Defined {
    pub name: String,
    /// Hyperparameters in signature order: name and default (none: required).
    pub hypers: Vec<(String, Option<f32>)>,
    /// Slots in creation order (`W/NAME`).
    pub slots: Vec<Declared>,
    /// Non-slot scalar variables in creation order.
    pub globals: Vec<Declared>,
    /// The dense rule.
    pub update: Vec<Assign>,
    pub sparse: SparseMode,
    /// The sparse rule, when it is not `update`.
    pub sparse_rule: Option<Vec<Assign>>,
    /// The globals' update (`finish`).
    pub finish: Vec<Assign>,
    /// Locals of the rules (indices of [`Target::Local`], [`Ex::Local`]).
    pub locals: usize,
    pub span: Span,
}

/// A slot or a global and its initial value.
#[derive(Clone, Debug, PartialEq)]
pub struct Declared {
    pub name: String,
    pub init: Init,
    pub span: Span,
}

/// An initial value: a number, or a hyperparameter's (constant) value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Init {
    Value(f32),
    Hyper(usize),
}

/// How an `IndexedSlices` gradient is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SparseMode {
    /// TF's `_apply_sparse`: duplicates summed, the touched rows of the
    /// variable and its slots gathered, updated, scattered back.
    Rows,
    /// The rule on the dense value of the slices (zero in untouched rows).
    Densify,
}

/// One statement: `target = value`.
#[derive(Clone, Debug, PartialEq)]
pub struct Assign {
    pub target: Target,
    pub value: Ex,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Target {
    Var,
    Slot(usize),
    Global(usize),
    Local(usize),
}

/// A resolved expression: scalars broadcast against the variable's shape.
#[derive(Clone, Debug, PartialEq)]
pub enum Ex {
    Const(f32),
    Hyper(usize),
    Var,
    Grad,
    Slot(usize),
    Global(usize),
    /// The global step before this step's increment, as float32.
    Step,
    Local(usize),
    Unary(UnaryOp, Box<Ex>),
    /// `1 / sqrt(x)`.
    Rsqrt(Box<Ex>),
    Binary(BinaryOp, Box<Ex>, Box<Ex>),
    /// `where(cond, a, b)`: `a` where `cond` is non-zero.
    Where(Box<Ex>, Box<Ex>, Box<Ex>),
    /// Over every element: `sum`, or `norm` (`sqrt(sum(square(x)))`).
    Reduce(Reduction, Box<Ex>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    Sum,
    Norm,
}

/// A defined optimizer bound at an `optimizer` item: the definition and the
/// constant initial values of its slots and globals.
#[derive(Clone, Debug, PartialEq)]
pub struct Bound {
    pub def: Arc<Defined>,
    pub slot_inits: Vec<f32>,
    pub global_inits: Vec<f32>,
}

/// The table entry every defined optimizer is configured with: its rules
/// read the definition from [`OptimizerSpec::defined`] (its arguments,
/// slots and globals are the definition's, not this entry's).
pub static ENTRY: OptimizerDef = OptimizerDef {
    name: "optimizer_def",
    class: "DefinedOptimizer",
    args: &[],
    slots: &[],
    globals: &[],
    dense,
    sparse: Sparse::NonLazy(sparse_rule),
    finish,
};

/// How a defined optimizer applies an `IndexedSlices` gradient.
pub fn sparse_handling(b: &Bound) -> Sparse {
    match b.def.sparse {
        SparseMode::Rows => Sparse::Lazy(rows),
        SparseMode::Densify => Sparse::NonLazy(sparse_rule),
    }
}

/// What the names of a rule are bound to while lowering it.
struct Env<'a> {
    o: &'a OptimizerSpec,
    var: Option<NodeId>,
    grad: Option<NodeId>,
    slots: Vec<NodeId>,
    globals: Vec<NodeId>,
    locals: Vec<Option<NodeId>>,
    step: NodeId,
}

impl Env<'_> {
    fn run(&mut self, g: &mut Graph, rule: &[Assign]) {
        for a in rule {
            let v = self.eval(g, &a.value);
            match a.target {
                Target::Var => self.var = Some(v),
                Target::Slot(i) => self.slots[i] = v,
                Target::Global(i) => self.globals[i] = v,
                Target::Local(i) => self.locals[i] = Some(v),
            }
        }
    }

    fn eval(&self, g: &mut Graph, e: &Ex) -> NodeId {
        let bound = |n: Option<NodeId>| n.expect("optimizer_def: sema resolved this name");
        match e {
            Ex::Const(v) => g.scalar(*v),
            Ex::Hyper(i) => self.o.hypers.0[*i].1,
            Ex::Var => bound(self.var),
            Ex::Grad => bound(self.grad),
            Ex::Slot(i) => self.slots[*i],
            Ex::Global(i) => self.globals[*i],
            Ex::Step => self.step,
            Ex::Local(i) => bound(self.locals[*i]),
            Ex::Unary(op, x) => {
                let x = self.eval(g, x);
                g.unary(*op, x)
            }
            Ex::Rsqrt(x) => {
                let x = self.eval(g, x);
                let s = g.unary(UnaryOp::Sqrt, x);
                let one = g.scalar(1.0);
                g.div(one, s)
            }
            Ex::Binary(op, a, b) => {
                let a = self.eval(g, a);
                let b = self.eval(g, b);
                g.binary(*op, a, b)
            }
            Ex::Where(c, a, b) => {
                let c = self.eval(g, c);
                let a = self.eval(g, a);
                let b = self.eval(g, b);
                g.select(c, a, b)
            }
            Ex::Reduce(r, x) => {
                let x = self.eval(g, x);
                match r {
                    Reduction::Sum => g.sum_all(x),
                    Reduction::Norm => {
                        let sq = g.unary(UnaryOp::Square, x);
                        let s = g.sum_all(sq);
                        g.unary(UnaryOp::Sqrt, s)
                    }
                }
            }
        }
    }
}

/// The definition of a configured optimizer that is defined in the spec.
fn def(o: &OptimizerSpec) -> &Defined {
    &o.defined
        .as_ref()
        .expect("optimizer table: the defined entry without a definition")
        .def
}

fn rule_env<'a>(o: &'a OptimizerSpec, u: &UpdateInputs) -> Env<'a> {
    let d = def(o);
    Env {
        o,
        var: Some(u.param),
        grad: Some(u.grad),
        slots: u.slots.to_vec(),
        globals: u.globals.to_vec(),
        locals: vec![None; d.locals],
        step: u.step,
    }
}

fn outputs(env: Env) -> UpdateOutputs {
    UpdateOutputs {
        param: env
            .var
            .expect("optimizer_def: sema requires `var` assigned"),
        slots: env.slots,
    }
}

/// The dense rule (`update`) of one variable.
pub fn dense(g: &mut Graph, o: &OptimizerSpec, u: &UpdateInputs) -> UpdateOutputs {
    let mut env = rule_env(o, u);
    env.run(g, &def(o).update);
    outputs(env)
}

/// The sparse rule (its own, or `update`) on rows or on the dense value.
pub fn sparse_rule(g: &mut Graph, o: &OptimizerSpec, u: &UpdateInputs) -> UpdateOutputs {
    let d = def(o);
    let mut env = rule_env(o, u);
    env.run(g, d.sparse_rule.as_deref().unwrap_or(&d.update));
    outputs(env)
}

/// The sparse rule on the touched rows (`row_len` is unused: the rule is
/// the same for every row length).
pub fn rows(g: &mut Graph, o: &OptimizerSpec, u: &UpdateInputs, _row_len: u64) -> UpdateOutputs {
    sparse_rule(g, o, u)
}

/// `finish`: the globals' new values from their values before the step.
pub fn finish(g: &mut Graph, o: &OptimizerSpec, globals: &[NodeId]) -> Vec<NodeId> {
    let step = g.global_step();
    let mut env = Env {
        o,
        var: None,
        grad: None,
        slots: vec![],
        globals: globals.to_vec(),
        locals: vec![None; def(o).locals],
        step,
    };
    env.run(g, &def(o).finish);
    env.globals
}
