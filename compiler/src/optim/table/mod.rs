//! The optimizers of `tf.compat.v1.train`, one table entry each.
//!
//! Owns: [`OptimizerDef`], everything specc knows about one optimizer: TF's
//! class and the spec's name for it, its constructor arguments (TF's names,
//! defaults, checks, and which accept a schedule), its slots and non-slot
//! variables, its dense update rule, its sparse handling and its `_finish`.
//! Each optimizer is one file of this module holding its entry and rules;
//! [`OPTIMIZERS`] lists them. Sema binds a spec's `optimizer` item against an
//! entry ([`by_name`]) into a [`crate::model::OptimizerSpec`]; the step
//! builder ([`super::build`]) and the sparse paths ([`super::sparse`]) read
//! the same entry. Nothing else dispatches on the optimizer. An optimizer
//! written in the spec (`optimizer_def`) is configured with the entry
//! [`super::defined::ENTRY`], whose rules read its definition; [`slots`]
//! and [`globals`] read the definition's.
//!
//! Invariants:
//! - The formulas and the order of float operations of every rule follow
//!   TF's C++ kernels (`training_ops.cc`: `ApplyAdam`, `SparseApplyFtrl`, ...),
//!   so results agree with TF to the last bits where float arithmetic allows.
//! - A rule returns the new value of each slot of [`slots`], in that order,
//!   and `finish` one value per global (`optim::build` asserts both).
//! - A rule reads only arguments its entry declares, with the kind declared
//!   (the tests below run every rule of every entry).
//! - Slot suffixes are TF's: the class without `Optimizer` (TF's default
//!   `name`) for the first slot created, then `_1`, `_2`, ... in creation order.

pub mod adadelta;
pub mod adagrad;
pub mod adagrad_da;
pub mod adam;
pub mod ftrl;
pub mod gradient_descent;
pub mod momentum;
pub mod proximal_adagrad;
pub mod proximal_gradient_descent;
pub mod rmsprop;

use crate::ir::{BinaryOp, Graph, NodeId, UnaryOp};
use crate::model::OptimizerSpec;

/// Every optimizer, in the order `unknown-optimizer` lists them.
pub static OPTIMIZERS: &[&OptimizerDef] = &[
    &gradient_descent::GRADIENT_DESCENT,
    &momentum::MOMENTUM,
    &adagrad::ADAGRAD,
    &adagrad_da::ADAGRAD_DA,
    &adadelta::ADADELTA,
    &adam::ADAM,
    &ftrl::FTRL,
    &rmsprop::RMSPROP,
    &proximal_adagrad::PROXIMAL_ADAGRAD,
    &proximal_gradient_descent::PROXIMAL_GRADIENT_DESCENT,
];

/// The optimizer a spec names (`adam`).
pub fn by_name(name: &str) -> Option<&'static OptimizerDef> {
    OPTIMIZERS.iter().copied().find(|d| d.name == name)
}

/// The optimizer of a TF class (`AdamOptimizer`, without its module path).
pub fn by_class(class: &str) -> Option<&'static OptimizerDef> {
    OPTIMIZERS.iter().copied().find(|d| d.class == class)
}

/// One optimizer: what sema checks and what the step builder emits.
pub struct OptimizerDef {
    /// The spec's name (`adam`).
    pub name: &'static str,
    /// TF's class (`AdamOptimizer`).
    pub class: &'static str,
    /// Constructor arguments in TF's signature order (the positional order).
    pub args: &'static [ArgDef],
    /// Per-parameter slots, in TF's creation order.
    pub slots: &'static [SlotDef],
    /// Non-slot scalar variables (`beta1_power`), in creation order.
    pub globals: &'static [GlobalDef],
    /// The dense update of one parameter (`Apply*`).
    pub dense: Rule,
    /// How an `IndexedSlices` gradient is applied.
    pub sparse: Sparse,
    /// `_finish`: new values of the globals, from their values before the step.
    pub finish: Finish,
}

impl OptimizerDef {
    /// TF's default `name`, the prefix of slot suffixes (`Adam`).
    pub fn tf_name(&self) -> &'static str {
        self.class.trim_end_matches("Optimizer")
    }
}

impl std::fmt::Debug for OptimizerDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.class)
    }
}

impl PartialEq for OptimizerDef {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

/// A dense (or non-lazy sparse) update of one parameter.
pub type Rule = fn(&mut Graph, &OptimizerSpec, &UpdateInputs) -> UpdateOutputs;
/// A lazy sparse update of the touched rows; `row_len` is the elements per
/// row (TF's `inner_dim`, whose value 1 takes other code paths).
pub type RowRule = fn(&mut Graph, &OptimizerSpec, &UpdateInputs, u64) -> UpdateOutputs;
/// `_finish`: the new values of the globals.
pub type Finish = fn(&mut Graph, &OptimizerSpec, &[NodeId]) -> Vec<NodeId>;

/// The three ways TF's `tf.compat.v1.train` applies sparse gradients to
/// resource variables (see [`super::sparse`]).
#[derive(Clone, Copy)]
pub enum Sparse {
    /// `resource_scatter_add(var, ids, delta)` with the rows this computes,
    /// duplicates one at a time (`_resource_apply_sparse_duplicate_indices`).
    /// Only for optimizers without slots.
    ScatterAdd(fn(&mut Graph, &OptimizerSpec, &UpdateInputs) -> NodeId),
    /// Not lazy: this rule runs on the dense value of the slices (zero in
    /// untouched rows), so every row of the variable and slots moves.
    NonLazy(Rule),
    /// Lazy: duplicate ids summed, the touched rows gathered, updated by this
    /// row rule (`SparseApply*`), scattered back; other rows stay frozen.
    Lazy(RowRule),
}

/// A constructor argument.
pub struct ArgDef {
    /// TF's argument name.
    pub name: &'static str,
    pub kind: ArgKind,
}

pub enum ArgKind {
    /// Any float32 scalar expression (a number, a schedule of `global_step`),
    /// computed in the step. Required when there is no default; a constant
    /// value must be positive (`positive`) or else finite.
    Schedule {
        default: Option<f32>,
        positive: bool,
    },
    /// A compile-time number, finite and satisfying `check`.
    Number { default: f32, check: Check },
    /// `true` or `false`, false by default.
    Flag,
}

impl ArgDef {
    pub fn required(&self) -> bool {
        matches!(self.kind, ArgKind::Schedule { default: None, .. })
    }
}

/// TF's argument checks (the `ValueError`s of the constructors and kernels).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    Positive,
    NonNegative,
    /// In [0, 1).
    UnitInterval,
    /// Zero or negative.
    NonPositive,
}

impl Check {
    pub fn holds(self, v: f64) -> bool {
        match self {
            Check::Positive => v > 0.0,
            Check::NonNegative => v >= 0.0,
            Check::UnitInterval => (0.0..1.0).contains(&v),
            Check::NonPositive => v <= 0.0,
        }
    }
    /// "must be ..." in diagnostics.
    pub fn words(self) -> &'static str {
        match self {
            Check::Positive => "positive",
            Check::NonNegative => "non-negative",
            Check::UnitInterval => "in [0, 1)",
            Check::NonPositive => "zero or negative",
        }
    }
}

/// The learning rate, required (positive, any schedule).
const LEARNING_RATE: ArgDef = learning_rate(None);

const fn learning_rate(default: Option<f32>) -> ArgDef {
    ArgDef {
        name: "learning_rate",
        kind: ArgKind::Schedule {
            default,
            positive: true,
        },
    }
}

/// A schedulable argument (finite); required without a default.
const fn schedule(name: &'static str, default: Option<f32>) -> ArgDef {
    ArgDef {
        name,
        kind: ArgKind::Schedule {
            default,
            positive: false,
        },
    }
}

const fn number(name: &'static str, default: f32, check: Check) -> ArgDef {
    ArgDef {
        name,
        kind: ArgKind::Number { default, check },
    }
}

const fn flag(name: &'static str) -> ArgDef {
    ArgDef {
        name,
        kind: ArgKind::Flag,
    }
}

/// TF's l1/l2 regularization strengths (non-negative, 0 by default).
const L1: ArgDef = number("l1_regularization_strength", 0.0, Check::NonNegative);
const L2: ArgDef = number("l2_regularization_strength", 0.0, Check::NonNegative);

/// The initial value of a slot or global.
#[derive(Clone, Copy, Debug)]
pub enum Init {
    Value(f32),
    /// The value of a number argument (`initial_accumulator_value`).
    Arg(&'static str),
}

/// A per-parameter slot.
pub struct SlotDef {
    /// TF's slot name (`m`), as `get_slot` knows it.
    pub name: &'static str,
    pub init: Init,
    /// Created only when this flag argument is true (RMSProp's `mg`).
    pub only_if: Option<&'static str>,
}

const fn slot(name: &'static str, init: Init) -> SlotDef {
    SlotDef {
        name,
        init,
        only_if: None,
    }
}

/// A non-slot scalar variable such as `beta1_power`.
pub struct GlobalDef {
    pub name: &'static str,
    pub init: Init,
}

/// A slot of a configured optimizer.
#[derive(Clone, Debug, PartialEq)]
pub struct Slot {
    pub name: String,
    /// TF's variable suffix (`Adam_1` in `W/Adam_1`).
    pub suffix: String,
    pub init: f32,
}

fn init_value(o: &OptimizerSpec, init: Init) -> f32 {
    match init {
        Init::Value(v) => v,
        Init::Arg(name) => o.number(name),
    }
}

/// The slots of a configured optimizer, in creation order, with TF's
/// suffixes (a defined optimizer's slot `m` is `W/m`).
pub fn slots(o: &OptimizerSpec) -> Vec<Slot> {
    if let Some(b) = &o.defined {
        return b
            .def
            .slots
            .iter()
            .zip(&b.slot_inits)
            .map(|(s, &init)| Slot {
                name: s.name.clone(),
                suffix: s.name.clone(),
                init,
            })
            .collect();
    }
    let created = o
        .def
        .slots
        .iter()
        .filter(|s| s.only_if.is_none_or(|f| o.flag(f)));
    created
        .enumerate()
        .map(|(i, s)| Slot {
            name: s.name.to_string(),
            suffix: match i {
                0 => o.def.tf_name().to_string(),
                i => format!("{}_{i}", o.def.tf_name()),
            },
            init: init_value(o, s.init),
        })
        .collect()
}

/// The globals of a configured optimizer with their initial values.
pub fn globals(o: &OptimizerSpec) -> Vec<(String, f32)> {
    if let Some(b) = &o.defined {
        return b
            .def
            .globals
            .iter()
            .zip(&b.global_inits)
            .map(|(gd, &init)| (gd.name.clone(), init))
            .collect();
    }
    o.def
        .globals
        .iter()
        .map(|gd| (gd.name.to_string(), init_value(o, gd.init)))
        .collect()
}

/// What a rule sees for one parameter (or its touched rows).
#[derive(Clone, Copy)]
pub struct UpdateInputs<'a> {
    pub param: NodeId,
    pub grad: NodeId,
    /// The slots' values, in [`slots`] order.
    pub slots: &'a [NodeId],
    pub globals: &'a [NodeId],
    /// The learning rate at this step (a scalar node).
    pub lr: NodeId,
    /// The global step before this step's increment, as f32.
    pub step: NodeId,
}

/// New values: the parameter and each slot, in [`slots`] order.
pub struct UpdateOutputs {
    pub param: NodeId,
    pub slots: Vec<NodeId>,
}

/// `_finish` of the optimizers without globals.
fn no_finish(_: &mut Graph, _: &OptimizerSpec, _: &[NodeId]) -> Vec<NodeId> {
    vec![]
}

/// Arithmetic helpers that read like the kernels' Eigen expressions.
struct B<'g> {
    g: &'g mut Graph,
}

impl B<'_> {
    fn c(&mut self, v: f32) -> NodeId {
        self.g.scalar(v)
    }
    fn add(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.g.add(a, b)
    }
    fn sub(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.g.sub(a, b)
    }
    fn mul(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.g.mul(a, b)
    }
    fn div(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.g.div(a, b)
    }
    fn sqrt(&mut self, a: NodeId) -> NodeId {
        self.g.unary(UnaryOp::Sqrt, a)
    }
    /// Eigen's `rsqrt`: 1 / sqrt(x).
    fn rsqrt(&mut self, a: NodeId) -> NodeId {
        let s = self.sqrt(a);
        let one = self.c(1.0);
        self.div(one, s)
    }
    fn square(&mut self, a: NodeId) -> NodeId {
        self.g.unary(UnaryOp::Square, a)
    }
    fn sign(&mut self, a: NodeId) -> NodeId {
        self.g.unary(UnaryOp::Sign, a)
    }
    fn abs(&mut self, a: NodeId) -> NodeId {
        self.g.unary(UnaryOp::Abs, a)
    }
    fn max(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.g.binary(BinaryOp::Max, a, b)
    }
    fn min(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.g.binary(BinaryOp::Min, a, b)
    }
    fn pow(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.g.binary(BinaryOp::Pow, a, b)
    }
    fn gt(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.g.binary(BinaryOp::Gt, a, b)
    }
    fn select(&mut self, c: NodeId, a: NodeId, b: NodeId) -> NodeId {
        self.g.select(c, a, b)
    }
    /// `1 - x` for a constant x, as TF's `static_cast<T>(1) - x()`.
    fn one_minus(&mut self, x: f32) -> NodeId {
        let one = self.c(1.0);
        let x = self.c(x);
        self.sub(one, x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{DType, Dim, Shape};
    use crate::model::{Constant, Hypers};
    use specc_grammar::ast::Span;

    fn number_arg(def: &OptimizerDef, name: &str) -> bool {
        def.args
            .iter()
            .any(|a| a.name == name && matches!(a.kind, ArgKind::Number { .. }))
    }

    #[test]
    fn names_and_classes_are_unique_and_found() {
        for (i, d) in OPTIMIZERS.iter().enumerate() {
            assert!(d.class.ends_with("Optimizer"), "{}", d.class);
            assert_eq!(by_name(d.name), Some(*d));
            assert_eq!(by_class(d.class).map(|x| x.name), Some(d.name));
            for e in &OPTIMIZERS[..i] {
                assert!(d.name != e.name && d.class != e.class, "{} twice", d.name);
            }
        }
        assert_eq!(by_class("AdamOptimizer").map(|d| d.name), Some("adam"));
        assert!(by_name("adamw").is_none() && by_class("adam").is_none());
    }

    #[test]
    fn every_reference_inside_an_entry_is_declared() {
        for d in OPTIMIZERS {
            assert_eq!(d.args[0].name, "learning_rate", "{}", d.name);
            for (i, a) in d.args.iter().enumerate() {
                assert!(d.args[..i].iter().all(|b| b.name != a.name), "{}", a.name);
                if let ArgKind::Number { default, check } = a.kind {
                    assert!(check.holds(f64::from(default)), "{}: {}", d.name, a.name);
                }
            }
            let inits = d.slots.iter().map(|s| s.init);
            for init in inits.chain(d.globals.iter().map(|g| g.init)) {
                if let Init::Arg(n) = init {
                    assert!(number_arg(d, n), "{}: {n}", d.name);
                }
            }
            for f in d.slots.iter().filter_map(|s| s.only_if) {
                let flag = d.args.iter().find(|a| a.name == f);
                assert!(matches!(flag.map(|a| &a.kind), Some(ArgKind::Flag)), "{f}");
            }
            if matches!(d.sparse, Sparse::ScatterAdd(_)) {
                assert!(d.slots.is_empty(), "{}: scatter-add keeps no slots", d.name);
            }
        }
    }

    /// The optimizer with every number at its default (`alt`: at another
    /// valid value, so l1 and shrinkage branches run) and the given flags.
    fn configured(g: &mut Graph, d: &'static OptimizerDef, alt: bool, flags: u32) -> OptimizerSpec {
        let mut hypers = Vec::new();
        let mut constants = Vec::new();
        let mut k = 0;
        for a in d.args {
            match a.kind {
                ArgKind::Schedule { default, .. } => {
                    hypers.push((a.name.to_string(), g.scalar(default.unwrap_or(0.5))));
                }
                ArgKind::Number { default, check } => {
                    let v = match (alt, check) {
                        (false, _) => default,
                        (true, Check::NonPositive) => -0.7,
                        (true, _) => 0.25,
                    };
                    constants.push((a.name, Constant::Number(v)));
                }
                ArgKind::Flag => {
                    constants.push((a.name, Constant::Flag(flags >> k & 1 == 1)));
                    k += 1;
                }
            }
        }
        OptimizerSpec {
            def: d,
            hypers: Hypers(hypers),
            constants,
            defined: None,
            span: Span::default(),
        }
    }

    /// Every rule of every entry, dense and sparse (rows of 1 and 3
    /// elements), for every flag setting: each reads only declared arguments,
    /// updates every slot, and finishes every global.
    #[test]
    fn every_rule_runs_and_updates_every_slot_and_global() {
        for d in OPTIMIZERS {
            let nflags = d
                .args
                .iter()
                .filter(|a| matches!(a.kind, ArgKind::Flag))
                .count();
            for flags in 0..1u32 << nflags {
                for alt in [false, true] {
                    for width in [1, 3] {
                        let mut g = Graph::new();
                        let o = configured(&mut g, d, alt, flags);
                        let slot_defs = slots(&o);
                        let shape = Shape::fixed(&[5, width]);
                        let p = g.add_var("p", DType::F32, shape.clone());
                        let param = g.var(p);
                        let slot_nodes: Vec<NodeId> = slot_defs
                            .iter()
                            .map(|s| {
                                let v = g.add_var(&s.suffix, DType::F32, shape.clone());
                                g.var(v)
                            })
                            .collect();
                        let global_nodes: Vec<NodeId> = globals(&o)
                            .iter()
                            .map(|(name, _)| {
                                let v = g.add_var(name, DType::F32, Shape::scalar());
                                g.var(v)
                            })
                            .collect();
                        let ids = g.add_input("ids", DType::I32, Shape(vec![Dim::Batch]));
                        let ids = g.input(ids);
                        let rows = g.add_input(
                            "rows",
                            DType::F32,
                            Shape(vec![Dim::Batch, Dim::Fixed(width)]),
                        );
                        let rows = g.input(rows);
                        let step = g.global_step();
                        let u = UpdateInputs {
                            param,
                            grad: param,
                            slots: &slot_nodes,
                            globals: &global_nodes,
                            lr: o.hyper("learning_rate"),
                            step,
                        };
                        let dense = (d.dense)(&mut g, &o, &u);
                        assert_eq!(dense.slots.len(), slot_nodes.len(), "{}", d.name);
                        let u = UpdateInputs { grad: rows, ..u };
                        let sparse = super::super::sparse::update(&mut g, &o, &u, ids);
                        assert_eq!(sparse.slots.len(), slot_nodes.len(), "{}", d.name);
                        assert_eq!(g.shape(sparse.param), &shape, "{}", d.name);
                        let finished = (d.finish)(&mut g, &o, &global_nodes);
                        assert_eq!(finished.len(), global_nodes.len(), "{}", d.name);
                    }
                }
            }
        }
    }

    #[test]
    fn slot_suffixes_are_numbered_in_creation_order() {
        let mut g = Graph::new();
        let suffixes = |o: &OptimizerSpec| -> Vec<(String, String)> {
            slots(o).into_iter().map(|s| (s.suffix, s.name)).collect()
        };
        let plain = configured(&mut g, &rmsprop::RMSPROP, false, 0);
        let centered = configured(&mut g, &rmsprop::RMSPROP, false, 1);
        let s = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert_eq!(
            suffixes(&plain),
            [s("RMSProp", "rms"), s("RMSProp_1", "momentum")]
        );
        assert_eq!(
            suffixes(&centered),
            [
                s("RMSProp", "rms"),
                s("RMSProp_1", "mg"),
                s("RMSProp_2", "momentum")
            ]
        );
        let adam = configured(&mut g, &adam::ADAM, true, 0);
        assert_eq!(suffixes(&adam), [s("Adam", "m"), s("Adam_1", "v")]);
        assert_eq!(
            globals(&adam),
            [
                ("beta1_power".to_string(), 0.25),
                ("beta2_power".to_string(), 0.25)
            ]
        );
        let ftrl = configured(&mut g, &ftrl::FTRL, true, 0);
        assert_eq!(slots(&ftrl)[0].init, 0.25, "initial_accumulator_value");
    }
}
