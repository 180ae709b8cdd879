//! Semantic checking: from the AST to a [`Model`].
//!
//! Owns: the meaning of every item (data, label, features, params, bindings,
//! assertions, optimizer, train, clip, ema, metrics), name resolution, and
//! the diagnostics for them. This module drives the items in order and keeps
//! the checking `State`; each kind of item has its module: [`data`],
//! [`inputs`] (label and the plain features), [`features`]
//! (`tf.feature_column`, `input_layer`, `linear_model`), [`params`], [`statements`],
//! [`optimizer`], [`settings`] (train, clip, ema), [`metrics`] and
//! [`outputs`] (what `predict` returns).
//! Expressions are lowered by [`expr`] with the builtins of [`functions`] and
//! [`schedules`]; [`args`] binds and evaluates arguments. At the end, [`sizes`]
//! refuses tensors too large to address.
//! [`features`] has a module per kind of column (as the runtime's
//! `feature_column::transform`), [`functions`] the builtin table with its
//! lowerings by family.
//!
//! Invariants: checking never panics and reports every independent error
//! (an error in one item poisons the names it defines, so later uses do not
//! repeat it); names must be defined before they are used; a returned model's
//! loss is a float32 scalar, and every tensor fits [`sizes`]' limits.

pub mod activations;
pub mod args;
pub(crate) mod blocks;
pub mod checks;
pub mod convolution;
pub(crate) mod csv;
pub mod data;
pub mod expr;
pub mod features;
pub mod functions;
pub mod image_color;
pub mod image_crop_resize;
pub mod image_draw;
pub mod image_geometry;
pub mod image_glimpse;
pub mod image_ops;
pub mod image_resize;
pub(crate) mod image_transforms;
pub mod images;
pub mod inputs;
pub mod layers;
pub mod metrics;
pub mod normalization;
pub mod optimizer;
pub mod optimizer_def;
pub mod outputs;
pub mod params;
pub mod partitioner;
pub(crate) mod recurrent;
pub mod run;
pub mod schedules;
pub mod settings;
pub mod sizes;
pub mod statements;
pub(crate) mod warm_start;

use std::collections::HashMap;

use specc_grammar::ast::{Ident, Item, Span, SpecFile};
use specc_grammar::{Code, Diagnostic};
use specc_runtime::config::{
    CheckpointConfig, EvaluateConfig, LoggingConfig, SummaryConfig, WarmStart,
};

use crate::ir::{DType, Dim, Function, Graph, NodeId, Output};
use crate::model::{DataItem, Functions, InputInfo, Metric, Model, TrainSettings, VarInfo};
use expr::{ClassUse, Env, Lowerer};
use specc_runtime::metrics::MetricOutput;

/// Checking state, filled item by item.
#[derive(Default)]
pub(crate) struct State {
    pub graph: Graph,
    pub env: Env,
    pub errors: Vec<Diagnostic>,
    pub name: Option<(String, Span)>,
    pub data: Option<(DataItem, Span)>,
    /// `eval_data`: what evaluations read instead of a held-out split.
    pub eval_data: Option<(DataItem, Span)>,
    /// Where the CSV options of `data` and `eval_data` were written (see
    /// [`csv::check_columns`]).
    pub data_csv: Option<csv::CsvSpans>,
    pub eval_csv: Option<csv::CsvSpans>,
    /// The image input's pipeline (`features { x = image(...) }`).
    pub image_input: Option<(specc_runtime::data::images::ImagePipeline, Span)>,
    /// An `image(...)` input was declared (even if it had an error).
    pub image_input_attempted: bool,
    pub inputs: Vec<InputInfo>,
    pub vars: Vec<VarInfo>,
    pub loss: Option<(NodeId, Span)>,
    pub loss_defined: bool,
    pub metrics: Vec<Metric>,
    pub metric_outputs: Vec<Output>,
    pub optimizers: Vec<crate::model::OptimizerGroup>,
    /// The spec's `optimizer_def`s, checked, and where each is named.
    pub optimizer_defs: Vec<(std::sync::Arc<crate::optim::defined::Defined>, Span)>,
    /// The names of `optimizer_def`s that had errors (their uses are not
    /// reported again).
    pub failed_optimizer_defs: Vec<String>,
    pub train: Option<(TrainSettings, Span)>,
    pub class_uses: Vec<ClassUse>,
    pub shape_symbols: HashMap<String, (Dim, Span)>,
    pub bindings: Vec<(String, NodeId)>,
    pub binding_spans: Vec<Span>,
    pub assertions: Vec<crate::model::Assertion>,
    pub state_updates: Vec<crate::model::StateUpdate>,
    /// Items that were written but had errors (not reported missing again).
    pub attempted: Vec<&'static str>,
    pub clips: Vec<crate::model::ClipSpec>,
    pub ema: Option<crate::model::EmaSpec>,
    pub report_global_norm: bool,
    /// Values of the constant expressions lowered so far (see `Lowerer::constants`).
    pub constants: HashMap<NodeId, expr::Known>,
    pub checkpoint: Option<(CheckpointConfig, Span)>,
    /// `summaries { .. }`, its keyword and the spans of its
    /// `histogram_tensors` then `image_tensors`.
    pub summaries: Option<(SummaryConfig, Span, Vec<Span>)>,
    /// The logging settings and the spans of the tensor names (checked at the end).
    pub logging: Option<(LoggingConfig, Span, Vec<Span>)>,
    pub evaluate: Option<(EvaluateConfig, Span)>,
    /// `init_from_checkpoint(..)` or `warm_start(..)` and its item.
    pub(crate) warm_start: Option<(WarmStart, warm_start::WarmItem)>,
    /// The feature columns of the `features` block (see [`features`]).
    pub features: features::Features,
    /// The spec's directory (files a spec names, e.g. a vocabulary file,
    /// are relative to it); `None`: the working directory.
    pub spec_dir: Option<std::path::PathBuf>,
    /// The `outputs` item's keyword, once seen.
    pub outputs_span: Option<Span>,
    /// The checked outputs of `outputs`, in source order.
    pub outputs: Vec<Output>,
    /// Every output name written, with its span (duplicates).
    pub output_spans: Vec<(String, Span)>,
    /// The spec's blocks and the state of their expansion.
    pub(crate) blocks: blocks::Blocks,
}

impl State {
    pub fn lowerer(&mut self) -> Lowerer<'_> {
        Lowerer {
            g: &mut self.graph,
            env: &self.env,
            class_uses: &mut self.class_uses,
            constants: &mut self.constants,
            assertions: &mut self.assertions,
            state_updates: &mut self.state_updates,
        }
    }

    /// After a definition's error, its name is poisoned (if nothing defines it
    /// yet), so its uses do not repeat the error as "unknown name".
    fn poison_on_error(
        &mut self,
        r: Result<(), Diagnostic>,
        name: &Ident,
        what: &'static str,
    ) -> Result<(), Diagnostic> {
        if r.is_err() {
            self.env.poison(&name.name, name.span, what);
        }
        r
    }

    fn item(&mut self, item: &Item) -> Result<(), Diagnostic> {
        match item {
            Item::Model(id) => {
                if let Some((_, prev)) = &self.name {
                    return Err(duplicate_item("model", id.span, *prev));
                }
                self.name = Some((id.name.clone(), id.span));
                Ok(())
            }
            Item::Data(call) => {
                self.attempted.push("data");
                data::data(self, call)
            }
            Item::EvalData(call) => data::eval_data(self, call),
            Item::Label(decl) => {
                let r = inputs::label(self, decl);
                self.poison_on_error(r, &decl.name, "label")
            }
            Item::Features(block) => {
                for b in &block.entries {
                    let r = match &b.value.kind {
                        specc_grammar::ast::ExprKind::Call(c) if c.func.name == "image" => {
                            images::image_feature(self, b, c)
                        }
                        specc_grammar::ast::ExprKind::Call(c)
                            if features::handles(&c.func.name) =>
                        {
                            features::feature(self, b, c)
                        }
                        specc_grammar::ast::ExprKind::Call(c)
                            if c.func.name != "numeric" && c.func.name != "integer" =>
                        {
                            Err(features::unknown(c))
                        }
                        _ => inputs::feature(self, b),
                    };
                    if let Err(d) = self.poison_on_error(r, &b.name, "feature") {
                        self.errors.push(d);
                    }
                }
                Ok(())
            }
            Item::Params(block) => {
                for p in &block.entries {
                    let r = params::param(self, p);
                    if let Err(d) = self.poison_on_error(r, &p.name, "parameter") {
                        self.errors.push(d);
                    }
                }
                Ok(())
            }
            Item::Let(b) => blocks::let_binding(self, b),
            Item::TupleLet(t) => blocks::tuple_binding(self, t),
            Item::BlockDef(d) => blocks::define(self, d),
            // Checked before every other item (`check_in`).
            Item::OptimizerDef(_) => Ok(()),
            Item::For(f) => blocks::top_for(self, f),
            Item::Statement(call) => match blocks::call_statement(self, call) {
                Some(r) => r,
                None => statements::statement(self, call),
            },
            Item::Optimizer(call) => {
                self.attempted.push("optimizer");
                let group = optimizer::optimizer_item(self, call)?;
                self.optimizers.push(group);
                Ok(())
            }
            Item::Clip(call) => {
                let (call, var_list) = optimizer::split_var_list(call)?;
                let mut c = settings::clip(&call)?;
                c.var_list = var_list;
                self.clips.push(c);
                Ok(())
            }
            Item::Ema(decl) => {
                if let Some(prev) = &self.ema {
                    return Err(duplicate_item("ema", decl.span, prev.span));
                }
                self.ema = Some(settings::ema(decl)?);
                Ok(())
            }
            Item::Train(block) => {
                self.attempted.push("train");
                if let Some((_, prev)) = &self.train {
                    return Err(duplicate_item("train", block.keyword, *prev));
                }
                let t = settings::train(block)?;
                self.train = Some((t, block.keyword));
                Ok(())
            }
            Item::Checkpoint(block) => {
                if let Some((_, prev)) = &self.checkpoint {
                    return Err(duplicate_item("checkpoint", block.keyword, *prev));
                }
                self.checkpoint = Some((run::checkpoint(block)?, block.keyword));
                Ok(())
            }
            Item::Summaries(block) => {
                if let Some((_, prev, _)) = &self.summaries {
                    return Err(duplicate_item("summaries", block.keyword, *prev));
                }
                let (s, spans) = run::summaries(block)?;
                self.summaries = Some((s, block.keyword, spans));
                Ok(())
            }
            Item::Logging(block) => {
                if let Some((_, prev, _)) = &self.logging {
                    return Err(duplicate_item("logging", block.keyword, *prev));
                }
                let (l, spans) = run::logging(block)?;
                self.logging = Some((l, block.keyword, spans));
                Ok(())
            }
            Item::Evaluate(block) => {
                if let Some((_, prev)) = &self.evaluate {
                    return Err(duplicate_item("evaluate", block.keyword, *prev));
                }
                self.evaluate = Some((run::evaluate(block)?, block.keyword));
                Ok(())
            }
            Item::InitFromCheckpoint(i) => {
                if let Some((_, prev)) = &self.warm_start {
                    return Err(duplicate_item("init_from_checkpoint", i.span, prev.span()));
                }
                let ws = run::init_from_checkpoint(i)?;
                self.warm_start = Some((ws, warm_start::WarmItem::Init(i.clone())));
                Ok(())
            }
            Item::WarmStart(w) => {
                if let Some((_, prev)) = &self.warm_start {
                    return Err(duplicate_item("warm_start", w.span, prev.span()));
                }
                let ws = warm_start::warm_start(w)?;
                self.warm_start = Some((ws, warm_start::WarmItem::Settings(Box::new(w.clone()))));
                Ok(())
            }
            Item::Outputs(block) => outputs::outputs(self, block),
            Item::Metrics(block) => {
                for m in &block.entries {
                    if let Err(d) = metrics::metric(self, m) {
                        self.errors.push(d);
                    }
                }
                Ok(())
            }
        }
    }
}

fn duplicate_item(what: &str, span: Span, prev: Span) -> Diagnostic {
    Diagnostic::new(
        Code::DuplicateItem,
        span,
        format!("a spec has one `{what}`"),
    )
    .with_label(format!("second `{what}`"))
    .with_secondary(prev, "first one here")
}

fn missing_item(what: &str, example: &str) -> Diagnostic {
    Diagnostic::new(
        Code::MissingItem,
        Span::default(),
        format!("the spec has no `{what}`"),
    )
    .with_label(format!("`{what}` is required"))
    .with_help(format!("add for example: {example}"))
}

/// Checks a parsed spec. `default_name` names the model when it has no `model` item.
pub fn check(file: &SpecFile, default_name: &str) -> Result<Model, Vec<Diagnostic>> {
    check_in(file, default_name, None)
}

/// [`check`], with the spec's directory (files the spec names are relative
/// to it).
pub fn check_in(
    file: &SpecFile,
    default_name: &str,
    spec_dir: Option<&std::path::Path>,
) -> Result<Model, Vec<Diagnostic>> {
    let mut st = State {
        spec_dir: spec_dir.map(|d| d.to_path_buf()),
        ..State::default()
    };
    // Optimizer definitions first: an `optimizer` item may precede the
    // definition it names.
    for item in &file.items {
        if let Item::OptimizerDef(def) = item {
            if let Err(d) = optimizer_def::define(&mut st, def) {
                st.errors.push(d);
                st.failed_optimizer_defs.push(def.name.name.clone());
            }
        }
    }
    for item in &file.items {
        if let Err(d) = st.item(item) {
            st.errors.push(d);
        }
    }
    finish(st, default_name)
}

fn finish(mut st: State, default_name: &str) -> Result<Model, Vec<Diagnostic>> {
    data::check_streaming(&mut st);
    csv::check_columns(&mut st);
    data::check_eval_data(&mut st);
    data::resolve_feature_lists(&mut st);
    images::check(&mut st);
    if st.data.is_none() && !st.attempted.contains(&"data") {
        st.errors
            .push(missing_item("data", "data csv(\"data/train.csv\")"));
    }
    if !st.loss_defined {
        st.errors.push(
            Diagnostic::new(Code::MissingLoss, Span::default(), "the spec defines no `loss`")
                .with_label("training needs a loss")
                .with_help("add a scalar binding, e.g. loss = mean(sparse_softmax_cross_entropy(label, logits))"),
        );
    }
    if let Some((loss, span)) = st.loss {
        let s = st.graph.shape(loss).clone();
        if !s.is_scalar() || st.graph.dtype(loss) != DType::F32 {
            let mut d = Diagnostic::new(
                Code::LossNotScalar,
                span,
                format!(
                    "the loss must be a float32 scalar, but it is {}{s}",
                    st.graph.dtype(loss)
                ),
            )
            .with_label(format!("this is {s}"));
            d = d.with_help("reduce it, e.g. loss = mean(...)");
            st.errors.push(d);
        }
    }
    optimizer::check_groups(&mut st);
    if st.optimizers.is_empty() && !st.attempted.contains(&"optimizer") {
        st.errors.push(missing_item(
            "optimizer",
            "optimizer adam(learning_rate = 0.001)",
        ));
    }
    if st.train.is_none() && !st.attempted.contains(&"train") {
        st.errors
            .push(missing_item("train", "train { batch = 32, steps = 1000 }"));
    }
    // Class ids: every use of a label must agree on the number of classes.
    let mut classes: HashMap<u32, (u32, Span)> = HashMap::new();
    for u in st.class_uses.iter().filter(|u| !u.at_most) {
        match classes.get(&u.input) {
            Some((c, prev)) if *c != u.classes => {
                let name = st.graph.inputs[u.input as usize].name.clone();
                st.errors.push(
                    Diagnostic::new(
                        Code::LabelKind,
                        u.span,
                        format!(
                            "`{name}` is used with {} classes here but {c} elsewhere",
                            u.classes
                        ),
                    )
                    .with_label(format!("{} classes", u.classes))
                    .with_secondary(*prev, format!("{c} classes")),
                );
            }
            _ => {
                classes.insert(u.input, (u.classes, u.span));
            }
        }
    }
    for (i, (c, _)) in classes {
        if let specc_runtime::data::InputKind::ClassId { num_classes } =
            &mut st.inputs[i as usize].spec.kind
        {
            *num_classes = Some(c);
        }
    }
    // Row ids: the declared (or class) range must fit every table they index;
    // undeclared ids are checked against the smallest table when loaded.
    for u in st.class_uses.iter().filter(|u| u.at_most) {
        let name = st.graph.inputs[u.input as usize].name.clone();
        if let specc_runtime::data::InputKind::ClassId { num_classes } =
            &mut st.inputs[u.input as usize].spec.kind
        {
            match num_classes {
                Some(n) if *n > u.classes => st.errors.push(
                    Diagnostic::new(
                        Code::BadShape,
                        u.span,
                        format!(
                            "`{name}` has ids up to {} but the table has {} rows",
                            *n - 1,
                            u.classes
                        ),
                    )
                    .with_label(format!("a table of {} rows", u.classes))
                    .with_help(format!(
                        "give the table at least {n} rows, or lower num_buckets"
                    )),
                ),
                Some(_) => {}
                None => *num_classes = Some(u.classes),
            }
        }
    }
    check_run_names(&mut st);
    check_state_updates(&mut st);
    if st.errors.iter().all(|d| d.code == Code::Poisoned) {
        let batch = st.train.as_ref().map_or(1, |(t, _)| t.batch);
        st.errors.extend(sizes::check(&st.graph, &st.vars, batch));
    }
    st.errors.retain(|d| d.code != Code::Poisoned);
    if !st.errors.is_empty() {
        st.errors.sort_by_key(|d| (d.span.start, d.span.end));
        // A loop reports an error of its body once, not once per iteration.
        st.errors.dedup_by(|a, b| {
            (a.code, a.span, &a.message, &a.label, &a.secondary)
                == (b.code, b.span, &b.message, &b.label, &b.secondary)
        });
        return Err(st.errors);
    }
    let (loss, loss_span) = st.loss.expect("checked above");
    let mut eval = Function::new("eval");
    eval.outputs.push(Output {
        name: specc_runtime::abi::OUTPUT_LOSS.into(),
        node: loss,
    });
    let step_outputs = run_step_outputs(&st);
    eval.outputs.extend(st.metric_outputs);
    let predict = st.outputs_span.map(|_| {
        let mut f = Function::new("predict");
        f.outputs = st.outputs;
        f
    });
    Ok(Model {
        name: st
            .name
            .map(|(n, _)| n)
            .unwrap_or_else(|| default_name.to_string()),
        graph: st.graph,
        data: st.data.expect("checked above").0,
        eval_data: st.eval_data.map(|(d, _)| d),
        inputs: st.inputs,
        vars: st.vars,
        loss,
        loss_span,
        metrics: st.metrics,
        optimizers: st.optimizers,
        train: st.train.expect("checked above").0,
        functions: Functions {
            eval,
            predict,
            grad: None,
            step: None,
            summary_step: None,
            check: None,
            replica_grad: None,
        },
        bindings: st.bindings,
        binding_spans: st.binding_spans,
        block_calls: st.blocks.expanded_calls,
        assertions: st.assertions,
        state_updates: st.state_updates,
        clips: st.clips,
        ema: st.ema,
        report_global_norm: st.report_global_norm,
        checkpoint: st.checkpoint.map(|c| c.0).unwrap_or_default(),
        summaries: st.summaries.map(|c| c.0).unwrap_or_default(),
        logging: st.logging.map(|c| c.0).unwrap_or_default(),
        evaluate: st.evaluate.map(|c| c.0).unwrap_or_default(),
        warm_start: st.warm_start.map(|c| c.0),
        step_outputs,
        replicas: None,
        shared_exchange: false,
        sharded: Vec::new(),
    })
}

/// The step's outputs the run's hooks read besides the loss and the learning
/// rate: with summaries (a `summaries` or `checkpoint` directory), every
/// metric's batch sum (TF's summaries of the
/// metric on the training batch; AUC is only evaluated on rows, not per
/// batch); with `logging { tensors }`, every logged binding, feature, label
/// or parameter under its own name, and a logged metric's sum. Nothing
/// without those items: the step stays as it was.
fn run_step_outputs(st: &State) -> Vec<Output> {
    let mut out: Vec<Output> = Vec::new();
    let mut add = |o: &Output| {
        if !out.iter().any(|e| e.name == o.name) {
            out.push(o.clone());
        }
    };
    let summed = |m: &Metric| {
        let sum = MetricOutput::Sum.name(&m.name);
        st.metric_outputs.iter().filter(move |o| o.name == sum)
    };
    // Summaries go to the checkpoint directory when they have none (TF's
    // MonitoredTrainingSession).
    let summaries = st
        .summaries
        .as_ref()
        .is_some_and(|(s, _, _)| s.dir.is_some())
        || st.checkpoint.as_ref().is_some_and(|(c, _)| c.dir.is_some());
    if summaries {
        st.metrics.iter().flat_map(summed).for_each(&mut add);
        // `histogram_tensors`, `image_tensors`: each named value, for its
        // histogram or its images.
        use specc_runtime::abi::{HISTOGRAM_OUTPUT_PREFIX, IMAGE_OUTPUT_PREFIX};
        if let Some((s, _, _)) = &st.summaries {
            let named = (s
                .histogram_tensors
                .iter()
                .map(|n| (HISTOGRAM_OUTPUT_PREFIX, n)))
            .chain(s.image_tensors.iter().map(|n| (IMAGE_OUTPUT_PREFIX, n)));
            for (prefix, name) in named {
                if let Some(node) = st.env.entries.get(name).and_then(|e| e.value) {
                    add(&Output {
                        name: format!("{prefix}{name}"),
                        node,
                    });
                }
            }
        }
    }
    if let Some((l, _, _)) = &st.logging {
        let fixed = [
            specc_runtime::abi::OUTPUT_LOSS,
            specc_runtime::abi::OUTPUT_LEARNING_RATE,
            "global_step",
        ];
        for name in l.tensors.iter().filter(|n| !fixed.contains(&n.as_str())) {
            if let Some(node) = st.env.entries.get(name).and_then(|e| e.value) {
                add(&Output {
                    name: name.clone(),
                    node,
                });
            } else if let Some(m) = st.metrics.iter().find(|m| m.name == *name) {
                summed(m).for_each(&mut add);
            }
        }
    }
    out
}

/// The names the run's items mention: logged tensors (any name the spec
/// defines, a metric, `global_step` or `learning_rate`) and the parameters
/// of `init_from_checkpoint`'s assignment map.
fn check_run_names(st: &mut State) {
    if let Some((l, _, spans)) = &st.logging {
        let fixed = ["global_step", specc_runtime::abi::OUTPUT_LEARNING_RATE];
        for (name, span) in l.tensors.iter().zip(spans) {
            let known = st.env.entries.contains_key(name)
                || st.metrics.iter().any(|m| m.name == *name)
                || fixed.contains(&name.as_str());
            if known {
                continue;
            }
            let mut candidates: Vec<&str> = st.env.entries.keys().map(|k| k.as_str()).collect();
            candidates.extend(st.metrics.iter().map(|m| m.name.as_str()));
            candidates.extend(fixed);
            candidates.sort_unstable();
            let mut d = Diagnostic::new(
                Code::UnknownName,
                *span,
                format!("unknown tensor `{name}` in `logging`"),
            )
            .with_label("not defined");
            if let Some(s) = args::suggest(name, candidates.iter().copied()) {
                d = d.with_help(format!("did you mean `{s}`?"));
            } else {
                d = d.with_help(
                    "logging prints any name the spec defines (a binding, feature, label or parameter), a metric, `global_step` or `learning_rate`",
                );
            }
            st.errors.push(d);
        }
    }
    if let Some((s, _, spans)) = &st.summaries {
        let named = s.histogram_tensors.iter().chain(&s.image_tensors);
        let images = s.histogram_tensors.len();
        for (k, (name, span)) in named.zip(spans).enumerate() {
            if let Some(node) = st.env.entries.get(name).and_then(|e| e.value) {
                let shape = st.graph.shape(node);
                let channels = shape.0.last().and_then(|d| d.fixed());
                let is_images = shape.rank() == 4
                    && shape.0[0] == crate::ir::Dim::Batch
                    && matches!(channels, Some(1 | 3 | 4))
                    && st.graph.dtype(node) == crate::ir::DType::F32;
                if k >= images && !is_images {
                    st.errors.push(
                        Diagnostic::new(
                            Code::BadSetting,
                            *span,
                            format!(
                                "`{name}` is {} {shape}, not a batch of images [B, H, W, C] with 1, 3 or 4 channels",
                                st.graph.dtype(node)
                            ),
                        )
                        .with_label("not images")
                        .with_help("image_tensors names float images of the batch: an `image(...)` feature, or e.g. `reshape(x, [B, H, W, C])`"),
                    );
                }
                continue;
            }
            let known = st.env.entries.contains_key(name);
            let candidates: Vec<&str> = st.env.entries.keys().map(|k| k.as_str()).collect();
            let mut d = Diagnostic::new(
                Code::UnknownName,
                *span,
                format!(
                    "unknown tensor `{name}` in `summaries`' {}",
                    if k >= images {
                        "image_tensors"
                    } else {
                        "histogram_tensors"
                    }
                ),
            )
            .with_label(if known { "has no value" } else { "not defined" });
            if let Some(s) = args::suggest(name, candidates.iter().copied()) {
                d = d.with_help(format!("did you mean `{s}`?"));
            } else {
                d = d.with_help(
                    "these name values the spec defines: a binding, a feature or a parameter",
                );
            }
            if !known {
                st.errors.push(d);
            }
        }
    }
    if let Some((ws, warm_start::WarmItem::Settings(item))) = &st.warm_start {
        let dims: Vec<(&str, Vec<u32>)> = st
            .vars
            .iter()
            .zip(&st.graph.vars)
            .filter(|(v, _)| matches!(v.kind, crate::model::VarKind::Param { .. }))
            .map(|(_, leaf)| {
                let d = leaf.shape.0.iter().map(|d| d.fixed().unwrap_or(0));
                (leaf.name.as_str(), d.collect())
            })
            .collect();
        let params: Vec<(&str, &[u32])> = dims.iter().map(|(n, d)| (*n, &d[..])).collect();
        if let Some(settings) = &ws.settings {
            let errors = warm_start::check_names(item, settings, &params);
            st.errors.extend(errors);
        }
    }
    if let Some((_, warm_start::WarmItem::Init(item))) = &st.warm_start {
        let params: Vec<&str> = st
            .vars
            .iter()
            .zip(&st.graph.vars)
            .filter(|(v, _)| matches!(v.kind, crate::model::VarKind::Param { .. }))
            .map(|(_, leaf)| leaf.name.as_str())
            .collect();
        // A parameter that failed to check is poisoned: do not call it unknown.
        let poisoned: Vec<&str> = st
            .env
            .entries
            .iter()
            .filter(|(_, e)| e.value.is_none() && e.what == "parameter")
            .map(|(k, _)| k.as_str())
            .collect();
        let mut all = params.clone();
        all.extend(poisoned);
        let errors = run::check_assignment_map(item, &all);
        st.errors.extend(errors);
    }
}

/// Each variable a layer updates in the step (`batch_norm`'s moving
/// statistics) is a parameter declared `trainable = false`, updated once.
fn check_state_updates(st: &mut State) {
    let mut seen: Vec<(u32, specc_grammar::ast::Span)> = Vec::new();
    for u in &st.state_updates {
        let info = &st.vars[u.var as usize];
        let name = st.graph.vars[u.var as usize].name.clone();
        if info.kind != (crate::model::VarKind::Param { trainable: false }) {
            st.errors.push(
                Diagnostic::new(
                    Code::TrainableStatistic,
                    u.span,
                    format!("`{name}` is updated by the step, so it must not also be trained"),
                )
                .with_label("updates it")
                .with_help(format!("declare it with `trainable = false`: `{name}: [..] = zeros, trainable = false`")),
            );
        }
        if let Some(&(_, first)) = seen.iter().find(|s| s.0 == u.var) {
            st.errors.push(
                Diagnostic::new(
                    Code::UpdatedTwice,
                    u.span,
                    format!("`{name}` is updated by two layers"),
                )
                .with_label("second update")
                .with_secondary(first, "first update"),
            );
        }
        seen.push((u.var, u.span));
    }
}
