//! The checked model: the IR graph plus everything else a spec declares.
//!
//! Owns: [`Model`] and its parts (data source, inputs, variables, metrics,
//! optimizer (its table entry and argument values), training settings, and
//! the IR functions `eval`, `predict`, `grad`, `step` and, on request,
//! `check`), the runtime checks (`assertions`) and where each binding is written.
//! Sema creates it; autodiff and the optimizer stage add the `grad` and
//! `step` functions and the optimizer's variables; passes rewrite its graph.
//!
//! Invariants: `inputs` is parallel to `graph.inputs` and `vars` to
//! `graph.vars`; every function's roots are nodes of `graph`.

use specc_grammar::ast::Span;
use specc_runtime::config::{
    CheckpointConfig, EvaluateConfig, LoggingConfig, SummaryConfig, WarmStart,
};
use specc_runtime::data::{Dataset, InputKind, InputSpec, Source};
use specc_runtime::init::Initializer;
/// Metrics are the runtime's: it evaluates them (one definition, one place
/// that names their outputs).
pub use specc_runtime::metrics::{Metric, MetricKind};
/// How long to train is the runtime's too (it turns epochs into steps).
pub use specc_runtime::train::Duration;
use specc_runtime::train::TrainConfig;

use crate::ir::{Function, Graph, NodeId, Output};
use crate::optim::table::OptimizerDef;

/// A `data` or `eval_data` item: where its rows come from, as the runtime
/// describes a source ([`Source`]: a CSV file, synthetic rows, files the
/// input pipeline streams, images decoded into memory through the image
/// input's pipeline), with its paths as written in the spec (relative to the
/// spec's directory; [`Model::data_source`] resolves them), and where the
/// spec names it (the path, or the call).
#[derive(Clone, Debug, PartialEq)]
pub struct DataItem {
    pub source: Source,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputRole {
    Feature,
    Label,
}

/// One graph input and how the runtime fills it.
#[derive(Clone, Debug, PartialEq)]
pub struct InputInfo {
    pub role: InputRole,
    pub spec: InputSpec,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum VarKind {
    /// A variable declared in `params`.
    Param { trainable: bool },
    /// An optimizer slot of a parameter (TF's `W/Adam`), by slot name (`m`).
    Slot { param: u32, slot: String },
    /// A non-slot optimizer variable (TF's `beta1_power`).
    Optimizer,
    /// The moving average of a parameter (TF's `W/ExponentialMovingAverage`).
    Average { param: u32 },
    /// What replicas exchange between `replica_grad` and `step` (a gradient,
    /// the loss, a state update; an `IndexedSlices`'s ids and rows when
    /// `gather`): not model state, never saved.
    Exchange { gather: bool },
    /// Replica `replica`'s summed exchange values as the `step` reads them
    /// with a shared exchange ([`Model::shared_exchange`]): a read-only view
    /// of that replica's `Exchange { gather: false }` arena, at the same
    /// offsets (the runtime points arena `exchange/peer/<replica>` at it).
    ExchangePeer { replica: u32 },
    /// The rows of partitioned table `table` that this replica's batch looks
    /// up, fetched from their owners before `replica_grad` (see
    /// [`crate::optim::sharded`]): scratch, never saved.
    Fetched { table: u32 },
}

#[derive(Clone, Debug, PartialEq)]
pub struct VarInfo {
    pub kind: VarKind,
    pub init: Initializer,
    /// Where the spec declared it (params only).
    pub span: Option<Span>,
    /// A partitioned variable's partitions along its first axis (TF's
    /// `partitioner`, `get_variable(.., partitioner)`): each partition's
    /// rows, in order, summing to the first dimension; empty when the
    /// variable is not partitioned. Slots and moving averages take their
    /// parameter's.
    pub partitions: Vec<u64>,
}

/// The schedulable arguments of the optimizer (`learning_rate`, `momentum`,
/// `decay`, `rho`): any scalar expression (a constant, a schedule of
/// `global_step`, ...) as a graph node computed once per step, by TF name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hypers(pub Vec<(String, NodeId)>);

impl Hypers {
    pub fn nodes(&self) -> Vec<NodeId> {
        self.0.iter().map(|&(_, n)| n).collect()
    }
    pub fn nodes_mut(&mut self) -> Vec<&mut NodeId> {
        self.0.iter_mut().map(|(_, n)| n).collect()
    }
}

/// A compile-time argument of the optimizer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Constant {
    Number(f32),
    Flag(bool),
}

/// The optimizer: its entry in the table of `tf.compat.v1.train` optimizers
/// and the value of every argument of that entry (given or defaulted,
/// checked), by TF name.
#[derive(Clone, Debug, PartialEq)]
pub struct OptimizerSpec {
    pub def: &'static OptimizerDef,
    pub hypers: Hypers,
    pub constants: Vec<(&'static str, Constant)>,
    /// An optimizer written in the spec (`optimizer_def`): `def` is then
    /// [`crate::optim::defined::ENTRY`], `hypers` the definition's
    /// hyperparameters in its order, and `constants` empty.
    pub defined: Option<crate::optim::defined::Bound>,
    pub span: Span,
}

impl OptimizerSpec {
    /// The spec's name for the optimizer (`adam`, or an `optimizer_def`'s).
    pub fn name(&self) -> &str {
        match &self.defined {
            Some(b) => &b.def.name,
            None => self.def.name,
        }
    }

    /// The learning rate the step reports: the argument `learning_rate`
    /// (a defined optimizer without one reports 0).
    pub fn learning_rate(&self, g: &mut crate::ir::Graph) -> NodeId {
        match self.hypers.0.iter().find(|(n, _)| n == "learning_rate") {
            Some(&(_, node)) => node,
            None if self.defined.is_some() => g.scalar(0.0),
            None => self.undeclared("schedulable", "learning_rate"),
        }
    }

    /// The node of schedulable argument `name`.
    ///
    /// Panics if the entry declares no such argument (a bug in the table).
    pub fn hyper(&self, name: &str) -> NodeId {
        match self.hypers.0.iter().find(|(n, _)| n == name) {
            Some(&(_, node)) => node,
            None => self.undeclared("schedulable", name),
        }
    }

    /// The value of number argument `name`.
    pub fn number(&self, name: &str) -> f32 {
        match self.constant(name) {
            Some(Constant::Number(v)) => v,
            _ => self.undeclared("number", name),
        }
    }

    /// The value of flag argument `name`.
    pub fn flag(&self, name: &str) -> bool {
        match self.constant(name) {
            Some(Constant::Flag(v)) => v,
            _ => self.undeclared("flag", name),
        }
    }

    fn constant(&self, name: &str) -> Option<Constant> {
        self.constants
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, c)| c)
    }

    fn undeclared(&self, kind: &str, name: &str) -> ! {
        panic!(
            "optimizer table: `{}` reads {kind} argument `{name}`, which its entry does not declare",
            self.name()
        )
    }
}

/// The variables an optimizer or a clip applies to (TF's `var_list`):
/// patterns over TF names, where `*` matches any text (`"dnn/*"`,
/// `"linear_model/*"`) and any other character itself. `None` in a
/// [`OptimizerGroup`] or [`ClipSpec`]: every trainable variable.
#[derive(Clone, Debug, PartialEq)]
pub struct VarList {
    pub patterns: Vec<(String, Span)>,
    pub span: Span,
}

impl VarList {
    /// Whether variable `name` is in the list.
    pub fn contains(&self, name: &str) -> bool {
        self.patterns.iter().any(|(p, _)| glob(p, name))
    }
}

/// `*`-pattern matching of a whole name.
pub fn glob(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first) || name.len() < first.len() + last.len() || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

/// One optimizer of the step and the variables it trains (TF's
/// `apply_gradients` of one optimizer; several are grouped into one train
/// op with one `global_step` increment, as `DNNLinearCombinedClassifier`
/// does).
#[derive(Clone, Debug, PartialEq)]
pub struct OptimizerGroup {
    pub spec: OptimizerSpec,
    /// `None`: every trainable variable (the spec has one optimizer).
    pub var_list: Option<VarList>,
}

/// Gradient processing before the optimizer, as `tf.clip_by_*`.
#[derive(Clone, Debug, PartialEq)]
pub enum ClipKind {
    /// `tf.clip_by_value` of every gradient; each bound broadcasts against it.
    ByValue { min: ClipBound, max: ClipBound },
    /// `tf.clip_by_norm` of every gradient (over `axes`, or all axes).
    ByNorm {
        clip_norm: f32,
        axes: Option<Vec<i64>>,
    },
    /// `tf.compat.v1.clip_by_average_norm` of every gradient.
    ByAverageNorm { clip_norm: f32 },
    /// `tf.clip_by_global_norm` of all gradients together.
    GlobalNorm {
        clip_norm: f32,
        use_norm: Option<f32>,
    },
}

/// A bound of `clip by_value`: a number (no dims) or a constant tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct ClipBound {
    pub dims: Vec<u32>,
    pub values: Vec<f32>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ClipSpec {
    pub kind: ClipKind,
    /// The gradients it clips (`None`: all).
    pub var_list: Option<VarList>,
    pub span: Span,
}

/// `tf.train.ExponentialMovingAverage` of the trainable parameters
/// (`ema.apply(var_list)`), and whether inference uses the averages.
#[derive(Clone, Debug, PartialEq)]
pub struct EmaSpec {
    pub decay: f32,
    /// Use the global step as `num_updates`: decay = min(decay, (1+n)/(10+n)).
    pub num_updates: bool,
    /// The parameters averaged (`apply(var_list)`); `None`: every
    /// trainable parameter.
    pub var_list: Option<VarList>,
    /// `use_averages = true`: `predict`, `evaluate` and `export` restore
    /// each averaged parameter from its shadow unless told otherwise
    /// (`--use-averages=false`).
    pub use_averages: bool,
    pub span: Span,
}

/// The checkpoint name of `var`'s moving average (TF's
/// `ExponentialMovingAverage.average_name`: `W/ExponentialMovingAverage`).
pub fn average_name(var: &str) -> String {
    format!("{var}/ExponentialMovingAverage")
}

#[derive(Clone, Debug, PartialEq)]
pub struct TrainSettings {
    pub batch: u32,
    pub duration: Duration,
    /// Shuffle buffer size; 0 keeps data order.
    pub shuffle: usize,
    pub seed: u64,
    pub eval_fraction: f64,
    /// Seed of the held-out split (independent of the shuffle seed).
    pub split_seed: u64,
    /// Which rows are held out.
    pub eval_split: EvalSplit,
    /// `replicas_to_aggregate` / `total_num_replicas` (TF's
    /// `SyncReplicasOptimizer`): the number of data-parallel replicas the
    /// spec is written for; `None` when it does not say.
    pub sync_replicas: Option<SyncReplicas>,
}

/// The replicas a spec is written for (`train { total_num_replicas = N }`):
/// an MPI job must have exactly `total` ranks; every replica's gradient is
/// aggregated (TF's `replicas_to_aggregate = total_num_replicas`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncReplicas {
    pub total: u32,
    pub span: Span,
}

/// How the held-out rows are chosen (`train { eval_split = .. }`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EvalSplit {
    /// A seeded random draw, stratified by the class label (the default).
    #[default]
    Random,
    /// The last `eval_fraction` of the rows in file order: the training rows
    /// are the first `floor(n * (1 - eval_fraction))` (time-ordered data,
    /// as W5's 80/20 split).
    Last,
}

impl TrainSettings {
    /// The number of training steps over `train_rows` rows (`epochs` become
    /// `ceil(epochs * train_rows / batch)` steps).
    pub fn steps(&self, train_rows: usize) -> u64 {
        self.duration.steps(train_rows, self.batch as usize)
    }

    /// The runtime's training loop settings for `steps` steps.
    pub fn config(&self, steps: u64) -> TrainConfig {
        TrainConfig {
            batch: self.batch as usize,
            steps,
            shuffle: self.shuffle,
            seed: self.seed,
        }
    }
}

/// The IR entry points of a model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Functions {
    /// Forward only: `loss` and the metric outputs.
    pub eval: Function,
    /// Inference: the spec's `outputs`, by name, computed from the features
    /// and parameters only (it reads no label input); `None` without an
    /// `outputs` item.
    pub predict: Option<Function>,
    /// Forward and backward: `loss` and `grad/<param>` for every trainable param.
    pub grad: Option<Function>,
    /// One training step: `loss`, and the updates of every variable.
    pub step: Option<Function>,
    /// The same step that also returns what the run's hooks read
    /// ([`Model::step_outputs`]: metric sums for summaries, logged tensors),
    /// called only on the steps a hook writes or logs (TF's `SessionRunArgs`
    /// fetches of `before_run`); `None` when the run reads nothing more.
    pub summary_step: Option<Function>,
    /// Forward only, for finding where a non-finite loss came from: one
    /// non-finite flag per feature, parameter and binding (see [`crate::debug`]).
    /// Built only on request, never for training.
    pub check: Option<Function>,
    /// Trained by replicas ([`Model::replicas`]): forward and backward on one
    /// replica's rows, writing the exchange variables the `step` then reads
    /// (see [`crate::optim::replicas`]).
    pub replica_grad: Option<Function>,
}

/// A variable the training step assigns besides the optimizer's updates: a
/// One expanded block call, for `specc compile --emit ir`: the call as
/// specialized (static arguments as their values), its variable scope and
/// the variables it declared there (none when it reuses the scope).
#[derive(Clone, Debug, PartialEq)]
pub struct BlockCall {
    /// Calls this one is inside (0 for a call in the spec's top level).
    pub depth: usize,
    pub call: String,
    pub scope: String,
    pub reuse: bool,
    /// The names (under `scope`) of the variables it declared.
    pub variables: Vec<String>,
}

/// The block calls as `--emit ir` prints them: one line per call, nested
/// by depth, `call  -> scope SCOPE: VARIABLES`.
pub fn print_block_calls(calls: &[BlockCall]) -> String {
    let mut out = String::from("block calls:\n");
    for c in calls {
        let vars = if c.reuse {
            " (reused)".to_string()
        } else if c.variables.is_empty() {
            String::new()
        } else {
            format!(": {}", c.variables.join(", "))
        };
        out.push_str(&format!(
            "{}{}  -> scope {}{vars}\n",
            "  ".repeat(c.depth + 1),
            c.call,
            c.scope
        ));
    }
    out
}

/// `batch_norm`'s moving mean and variance (TF's `UPDATE_OPS`), applied in
/// `step` only, after everything else is computed.
#[derive(Clone, Debug, PartialEq)]
pub struct StateUpdate {
    /// The variable (a parameter declared `trainable = false`).
    pub var: u32,
    pub value: NodeId,
    /// The call that updates it.
    pub span: Span,
}

/// A runtime check of the spec (`tf.debugging`: `check_numerics`,
/// `assert_less`, ...): `node` is an f32 scalar that is 0 when the check
/// holds; the step returns it as output `assert/<i>` (its index in
/// [`Model::assertions`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Assertion {
    /// TF's op name (`check_numerics`, `assert_positive`, ...).
    pub kind: &'static str,
    /// The condition in words (`x > 0`).
    pub condition: String,
    /// The user's message (empty when none).
    pub message: String,
    /// The call in the spec.
    pub span: Span,
    pub value: specc_runtime::abi::AssertionValue,
    pub node: NodeId,
}

#[derive(Clone, Debug)]
pub struct Model {
    pub name: String,
    pub graph: Graph,
    pub data: DataItem,
    /// `eval_data`: the rows evaluations read (instead of a held-out split
    /// of `data`); a file source, never synthetic.
    pub eval_data: Option<DataItem>,
    pub inputs: Vec<InputInfo>,
    pub vars: Vec<VarInfo>,
    pub loss: NodeId,
    pub loss_span: Span,
    pub metrics: Vec<Metric>,
    /// The optimizers, in source order; every trainable variable is in
    /// exactly one (sema checks it).
    pub optimizers: Vec<OptimizerGroup>,
    pub train: TrainSettings,
    pub functions: Functions,
    /// Named bindings (`h = ...`) in source order.
    pub bindings: Vec<(String, NodeId)>,
    /// Where each binding's value is written, parallel to `bindings`.
    pub binding_spans: Vec<Span>,
    /// Every block call expanded, in the order of expansion.
    pub block_calls: Vec<BlockCall>,
    /// The runtime checks, in source order.
    pub assertions: Vec<Assertion>,
    /// What the step assigns besides the optimizer (see [`StateUpdate`]).
    pub state_updates: Vec<StateUpdate>,
    /// Gradient clipping, applied in order.
    pub clips: Vec<ClipSpec>,
    pub ema: Option<EmaSpec>,
    /// The `global_norm` metric: the step reports the gradients' global norm.
    pub report_global_norm: bool,
    /// `checkpoint { .. }` (directories relative to the spec's directory).
    pub checkpoint: CheckpointConfig,
    /// `summaries { .. }`.
    pub summaries: SummaryConfig,
    /// `logging { .. }`.
    pub logging: LoggingConfig,
    /// `evaluate { .. }`.
    pub evaluate: EvaluateConfig,
    /// `init_from_checkpoint(..)`.
    pub warm_start: Option<WarmStart>,
    /// Outputs the summary step adds for the run's hooks (summaries of the
    /// metrics, logged tensors); empty without `summaries` and `logging {
    /// tensors }`.
    pub step_outputs: Vec<Output>,
    /// How many replicas train the model together (`None`: one process,
    /// one `step`); set before [`crate::optim::build`].
    pub replicas: Option<u32>,
    /// The replicas share memory (one node): instead of an allreduce, the
    /// `step` reads every replica's exchange values and sums them in replica
    /// order itself (see [`crate::optim::replicas`]).
    pub shared_exchange: bool,
    /// The partitioned tables whose rows are sharded across the replicas
    /// (set by [`crate::optim::sharded::shard`]; empty for one process).
    pub sharded: Vec<ShardedTable>,
}

/// A table sharded across the replicas: each holds only its partitions'
/// rows ([`crate::optim::sharded`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ShardedTable {
    /// The parameter (its variable holds this replica's rows and a spare one).
    pub table: u32,
    /// The rows this replica's batch looks up (`Fetched`).
    pub fetched: u32,
    /// The id inputs the lookups read; the runtime rewrites them into
    /// positions in `fetched`.
    pub ids: Vec<u32>,
    /// The table's logical rows (its declared first dimension).
    pub rows: u64,
}

impl Model {
    /// What the runtime needs to load each input, in input order.
    pub fn input_specs(&self) -> Vec<InputSpec> {
        self.inputs.iter().map(|i| i.spec.clone()).collect()
    }

    /// The runtime source of the model's data; a CSV path is relative to
    /// `spec_dir`, the directory of the spec.
    pub fn data_source(&self, spec_dir: &std::path::Path) -> Source {
        self.data.source.under(spec_dir)
    }

    /// The `eval_data` item's source, its paths resolved against the spec's
    /// directory.
    pub fn eval_data_source(&self, spec_dir: &std::path::Path) -> Option<Source> {
        self.eval_data.as_ref().map(|d| d.source.under(spec_dir))
    }

    /// The feature-list keys when the spec's TFRecord sources hold
    /// `tf.train.SequenceExample`s (`tfrecord(.., sequence_example =
    /// true)`, as `data` or `eval_data`): other TFRecord files the model
    /// reads (`specc predict --data`) are read the same way.
    pub fn feature_lists(&self) -> Option<Vec<String>> {
        [Some(&self.data), self.eval_data.as_ref()]
            .into_iter()
            .flatten()
            .find_map(|d| match &d.source {
                Source::Stream(s) => match &s.format {
                    specc_runtime::pipeline::Format::TfRecord {
                        feature_lists: Some(k),
                        ..
                    } => Some(k.clone()),
                    _ => None,
                },
                _ => None,
            })
    }
}

impl Model {
    /// The class-id label input, if the model has one (the held-out split is
    /// stratified by it).
    pub fn class_label(&self) -> Option<&str> {
        self.inputs
            .iter()
            .find(|i| {
                i.role == InputRole::Label && matches!(i.spec.kind, InputKind::ClassId { .. })
            })
            .map(|i| i.spec.name.as_str())
    }

    /// The held-out split of `data`: `(train, held_out)` rows, `fraction` of
    /// them held out: stratified by the class label and seeded by
    /// `split_seed`, or the last rows in file order ([`EvalSplit::Last`]).
    pub fn held_out_split(&self, data: &Dataset, fraction: f64) -> (Vec<u32>, Vec<u32>) {
        if self.train.eval_split == EvalSplit::Last {
            let n = data.rows;
            let train = ((n as f64) * (1.0 - fraction)).floor() as usize;
            let train = train.clamp(usize::from(n > 0), n);
            return (
                (0..train as u32).collect(),
                (train as u32..n as u32).collect(),
            );
        }
        specc_runtime::batches::held_out_split(
            data,
            self.class_label(),
            fraction,
            self.train.split_seed,
        )
    }

    /// With [`EvalSplit::Last`], the training rows of `n` rows: the first
    /// `floor(n * (1 - eval_fraction))` (at least 1 when there is a row).
    pub fn train_rows(&self, n: usize) -> usize {
        self.train_rows_of(n, self.train.eval_fraction)
    }

    fn train_rows_of(&self, n: usize, fraction: f64) -> usize {
        (((n as f64) * (1.0 - fraction)).floor() as usize).clamp(usize::from(n > 0), n)
    }

    /// Indices of the trainable parameters, in declaration order.
    pub fn trainable_params(&self) -> Vec<u32> {
        self.vars
            .iter()
            .enumerate()
            .filter(|(_, v)| matches!(v.kind, VarKind::Param { trainable: true }))
            .map(|(i, _)| i as u32)
            .collect()
    }

    /// The parameters with a moving average, in declaration order: the
    /// trainable parameters the `ema` item's `var_list` holds (all of
    /// them without one); none without an `ema` item.
    pub fn averaged_params(&self) -> Vec<u32> {
        let Some(ema) = &self.ema else {
            return Vec::new();
        };
        self.trainable_params()
            .into_iter()
            .filter(|&p| {
                ema.var_list
                    .as_ref()
                    .is_none_or(|l| l.contains(self.var_name(p)))
            })
            .collect()
    }

    /// The optimizer group training variable `v`: the first whose
    /// `var_list` holds it (sema makes sure there is exactly one).
    pub fn optimizer_of(&self, v: u32) -> usize {
        let name = self.var_name(v);
        self.optimizers
            .iter()
            .position(|g| g.var_list.as_ref().is_none_or(|l| l.contains(name)))
            .unwrap_or(0)
    }

    /// The first optimizer's spec (the one whose learning rate the step
    /// reports).
    pub fn optimizer(&self) -> &OptimizerSpec {
        &self.optimizers[0].spec
    }

    /// The partitions of variable `v` in checkpoints: a parameter's own, a
    /// slot's or moving average's its parameter's (TF's slot creator copies
    /// the primary's `save_slice_info`); rows of the first axis, in order.
    pub fn partitions_of(&self, v: u32) -> Vec<usize> {
        let info = &self.vars[v as usize];
        let own = match &info.kind {
            VarKind::Slot { param, .. } | VarKind::Average { param } => {
                &self.vars[*param as usize].partitions
            }
            _ => &info.partitions,
        };
        own.iter().map(|&r| r as usize).collect()
    }

    pub fn var_name(&self, v: u32) -> &str {
        &self.graph.vars[v as usize].name
    }

    /// Adds a variable to the graph and the model.
    pub fn add_var(
        &mut self,
        name: &str,
        shape: crate::ir::Shape,
        kind: VarKind,
        init: Initializer,
    ) -> u32 {
        let i = self.graph.add_var(name, crate::ir::DType::F32, shape);
        self.vars.push(VarInfo {
            kind,
            init,
            span: None,
            partitions: Vec::new(),
        });
        i
    }
}
