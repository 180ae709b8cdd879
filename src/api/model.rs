//! [`Model`]: a compiled spec and the session that holds its trained state.
//!
//! Owns: compiling a spec (a path or text) into a session with every
//! function (`step`, `eval`, and `predict` when the spec has `outputs`),
//! one training step or an evaluation or a prediction over named arrays,
//! the variables by TF name as arrays, and TF checkpoints (save and load).
//!
//! Invariants: the session is dropped before the program whose code it
//! calls (field order), and the program lives in a `Box` that never moves,
//! so the session's function pointers stay valid for the `Model`'s life; a
//! refused call (bad input, unknown name, unreadable checkpoint) leaves the
//! model as it was.

use std::path::{Path, PathBuf};

use ndarray::{ArrayD, ArrayViewD, IxDyn};
use specc_compiler::driver::{compile, Functions, Program};
use specc_compiler::ir::{Dim, Function};
use specc_compiler::model::InputRole;
use specc_grammar::SourceFile;
use specc_runtime::abi::{ElemType, VarRole, OUTPUT_LOSS};
use specc_runtime::checkpoint::{BundleReader, CheckpointManager};
use specc_runtime::data::{load, load_frame, Dataset, FrameColumn, InputSpec, Source, Values};
use specc_runtime::session::Session;
use specc_runtime::train::{evaluate, Evaluation};

use super::arrays::{ArraySource, InputInfo};
use super::error::Error;

/// A compiled spec and its trained state (see the module doc).
pub struct Model {
    // Dropped first: it calls the program's code.
    pub(crate) session: Session,
    pub(crate) program: Box<Program>,
    /// The spec as compiled.
    source: SourceFile,
}

impl Model {
    /// Compiles the spec at `path` (its data is not read: the arrays given
    /// to the calls are the data).
    pub fn from_path(path: impl AsRef<Path>) -> Result<Model, Error> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Io(format!("cannot read {}: {e}", path.display())))?;
        Model::compile(SourceFile::new(path.display().to_string(), text))
    }

    /// Compiles spec text; `name` is the file name its diagnostics show.
    pub fn from_source(name: &str, text: &str) -> Result<Model, Error> {
        Model::compile(SourceFile::new(name, text.to_string()))
    }

    fn compile(src: SourceFile) -> Result<Model, Error> {
        let program = compile(&src, Functions::ALL).map_err(|d| Error::Spec {
            rendered: specc_grammar::diag::render_all(&d, &src, false),
            diagnostics: d,
        })?;
        Model::from_program(program, src).map_err(Error::Session)
    }

    /// A model of `program` (compiled from `source`) with a fresh session
    /// (variables initialized); the error says why the session cannot be
    /// made (memory).
    pub(crate) fn from_program(program: Program, source: SourceFile) -> Result<Model, String> {
        let program = Box::new(program);
        // SAFETY: the functions were generated from this program's plans for
        // this layout's ABI; the program is boxed (its code does not move)
        // and outlives the session (the session field drops first).
        let session = unsafe { program.new_session() }?;
        Ok(Model {
            session,
            program,
            source,
        })
    }

    /// The spec as compiled (a run's overrides written into it): what
    /// [`crate::export`] compiles to export this model.
    pub fn source(&self) -> &SourceFile {
        &self.source
    }

    /// The model's name (its `model` item, or the file name).
    pub fn name(&self) -> &str {
        &self.program.model.name
    }

    /// The compiled model's inputs, in order.
    pub fn inputs(&self) -> Vec<InputInfo> {
        self.session
            .layout
            .inputs
            .iter()
            .map(|l| InputInfo {
                name: l.name.clone(),
                per_example: l.per_example,
                integer: l.elem == ElemType::I32,
                num_classes: l.num_classes,
                label: self.is_label(&l.name),
            })
            .collect()
    }

    /// The most rows one call of the compiled code takes: a training step's
    /// batch can be at most this; evaluation and prediction split larger
    /// arrays into batches of it.
    pub fn max_batch(&self) -> usize {
        self.session.max_batch()
    }

    /// TF's `global_step`: the training steps taken (restored with a
    /// checkpoint).
    pub fn global_step(&self) -> i64 {
        self.session.global_step
    }

    /// Every variable a checkpoint holds, by TF name, with its shape:
    /// parameters, optimizer slots (`W/Adam`), optimizer variables
    /// (`beta1_power`) and moving averages.
    pub fn variables(&self) -> Vec<(String, Vec<usize>)> {
        self.session
            .layout
            .vars
            .iter()
            .filter(|v| v.kind.is_state())
            .map(|v| (v.name.clone(), v.shape.clone()))
            .collect()
    }

    /// The names of the trainable parameters.
    pub fn parameter_names(&self) -> Vec<String> {
        self.session
            .layout
            .vars
            .iter()
            .filter(|v| matches!(v.kind, VarRole::Param { trainable: true }))
            .map(|v| v.name.clone())
            .collect()
    }

    /// A variable's current value (any name of [`Model::variables`]).
    pub fn parameter(&self, name: &str) -> Result<ArrayD<f32>, Error> {
        self.session
            .variable(name)
            .map(|v| v.to_owned())
            .ok_or_else(|| self.unknown_variable(name))
    }

    /// Sets a variable (any name of [`Model::variables`]) to `value`, which
    /// must have its shape.
    pub fn set_parameter(&mut self, name: &str, value: ArrayViewD<'_, f32>) -> Result<(), Error> {
        let unknown = self.unknown_variable(name);
        let mut v = self.session.variable_mut(name).ok_or(unknown)?;
        if v.shape() != value.shape() {
            return Err(Error::Parameter(format!(
                "`{name}` has shape {:?}, the value {:?}",
                v.shape(),
                value.shape()
            )));
        }
        v.assign(&value);
        Ok(())
    }

    /// Sets every variable of [`Model::variables`] and the global step to
    /// `other`'s (a model of the same spec, compiled with other functions:
    /// a run's model, a model restored elsewhere). A variable `other` does
    /// not have, or has with another shape, is an error, and nothing is set.
    pub fn copy_state_from(&mut self, other: &Model) -> Result<(), Error> {
        let names = self.variables();
        for (name, shape) in &names {
            match other.session.variable(name) {
                Some(v) if v.shape() == shape.as_slice() => {}
                Some(v) => {
                    return Err(Error::Parameter(format!(
                        "`{name}` has shape {shape:?} here and {:?} in the other model",
                        v.shape()
                    )))
                }
                None => {
                    return Err(Error::Parameter(format!(
                        "the other model has no variable `{name}`"
                    )))
                }
            }
        }
        for (name, _) in &names {
            if let (Some(v), Some(mut d)) = (
                other.session.variable(name),
                self.session.variable_mut(name),
            ) {
                d.assign(&v);
            }
        }
        self.session.global_step = other.session.global_step;
        Ok(())
    }

    fn unknown_variable(&self, name: &str) -> Error {
        Error::Parameter(format!(
            "the model has no variable `{name}`; its parameters: {}",
            self.parameter_names().join(", ")
        ))
    }

    /// One training step (forward, backward, optimizer update; the global
    /// step advances) on a batch of at most [`Model::max_batch`] rows: every
    /// input, the label included, by name. Returns the batch's loss.
    pub fn train_step(&mut self, batch: &[(&str, ArrayViewD<'_, f32>)]) -> Result<f32, Error> {
        let f = self.function("step")?;
        let reads = vec![true; self.session.layout.inputs.len()];
        let mut source = ArraySource::new(&self.session.layout.inputs, &reads, batch)?;
        let rows = source.rows();
        if rows == 0 || rows > self.max_batch() {
            return Err(Error::Input(format!(
                "a training step takes 1 to {} rows, got {rows}",
                self.max_batch()
            )));
        }
        self.session
            .fill(&mut source)
            .map_err(|e| Error::Input(e.to_string()))?;
        self.session.call(f, rows).map_err(Error::Session)?;
        self.session
            .output(f, OUTPUT_LOSS, rows)
            .map(|l| l[0])
            .ok_or_else(|| Error::Session("the step has no loss output".into()))
    }

    /// The mean loss and the spec's metrics over any number of rows (every
    /// input and the label, by name), in batches of [`Model::max_batch`].
    pub fn evaluate(&mut self, batch: &[(&str, ArrayViewD<'_, f32>)]) -> Result<Evaluation, Error> {
        let reads = vec![true; self.session.layout.inputs.len()];
        let mut source = ArraySource::new(&self.session.layout.inputs, &reads, batch)?;
        evaluate(&mut self.session, &mut source, &self.program.model.metrics)
            .map_err(|e| Error::Session(e.to_string()))
    }

    /// The spec's `outputs` over any number of rows (the inputs without the
    /// label, by name), in batches of [`Model::max_batch`]: `(name, array)`
    /// in the item's order, each `[rows, ...]` with the output's shape.
    pub fn predict(
        &mut self,
        batch: &[(&str, ArrayViewD<'_, f32>)],
    ) -> Result<Vec<(String, ArrayD<f32>)>, Error> {
        let f = self.function("predict")?;
        let reads: Vec<bool> = self
            .session
            .layout
            .inputs
            .iter()
            .map(|l| !self.is_label(&l.name))
            .collect();
        let mut source = ArraySource::new(&self.session.layout.inputs, &reads, batch)?;
        let rows = source.rows();
        let layout = self.session.function_layout(f).clone();
        let mut values: Vec<Vec<f32>> = layout
            .outputs
            .iter()
            .map(|o| Vec::with_capacity(o.len(rows)))
            .collect();
        loop {
            let n = self
                .session
                .fill(&mut source)
                .map_err(|e| Error::Input(e.to_string()))?;
            if n == 0 {
                break;
            }
            self.session.call(f, n).map_err(Error::Session)?;
            for (k, (o, v)) in layout.outputs.iter().zip(&mut values).enumerate() {
                match o.elem {
                    ElemType::F32 => {
                        if let Some(x) = self.session.output_at(f, k, n) {
                            v.extend_from_slice(x);
                        }
                    }
                    ElemType::I32 => {
                        if let Some(x) = self.session.output_i32(f, &o.name, n) {
                            v.extend(x.iter().map(|&i| i as f32));
                        }
                    }
                }
            }
        }
        let ir = self.ir_function("predict");
        layout
            .outputs
            .iter()
            .zip(values)
            .map(|(o, v)| {
                let dims = self.output_dims(ir, &o.name, rows, o.per_example);
                let a = ArrayD::from_shape_vec(IxDyn(&dims), v)
                    .map_err(|e| Error::Session(format!("output `{}`: {e}", o.name)))?;
                Ok((o.name.clone(), a))
            })
            .collect()
    }

    /// Restores every variable and the global step from a TF checkpoint: a
    /// prefix (`DIR/model.ckpt-100`) or a directory (its latest checkpoint).
    /// Returns the prefix read.
    pub fn load_checkpoint(&mut self, path: impl AsRef<Path>) -> Result<PathBuf, Error> {
        let prefix =
            crate::run::restore::checkpoint_prefix(path.as_ref()).map_err(Error::Checkpoint)?;
        let reader = BundleReader::open(&prefix).map_err(Error::Checkpoint)?;
        self.session.restore(&reader).map_err(Error::Checkpoint)?;
        Ok(prefix)
    }

    /// Saves every variable and the global step as a TF checkpoint
    /// `DIR/model.ckpt-<global step>` (the directory's `checkpoint` state
    /// file names it the latest; earlier checkpoints are kept). Returns the
    /// prefix written.
    pub fn save_checkpoint(&mut self, dir: impl AsRef<Path>) -> Result<PathBuf, Error> {
        let mut manager = CheckpointManager::new(dir.as_ref(), None, None)
            .map_err(Error::Checkpoint)?
            .with_partitions(self.session.checkpoint_partitions());
        let step = self.session.global_step;
        manager
            .save(step, &self.session.checkpoint_tensors())
            .map_err(Error::Checkpoint)
    }

    fn function(&self, name: &str) -> Result<usize, Error> {
        self.session.function_index(name).ok_or_else(|| {
            Error::Session(match name {
                "predict" if self.program.model.functions.predict.is_some() => format!(
                    "this model of {} was compiled without its `predict` function (a run's \
                     model trains and evaluates): load its checkpoint into Model::from_path \
                     to predict",
                    self.name()
                ),
                "predict" => format!(
                    "{} has no `outputs {{ ... }}` item, so there is nothing to predict",
                    self.name()
                ),
                _ => format!("{} has no `{name}` function", self.name()),
            })
        })
    }

    fn is_label(&self, input: &str) -> bool {
        self.program
            .model
            .inputs
            .iter()
            .any(|i| i.role == InputRole::Label && i.spec.name == input)
    }

    /// Reads a CSV file through the spec's columns, normalizers and feature
    /// columns into one array per model input (`[rows, ...]`, ids as whole
    /// numbers), ready for [`Model::train_step`], [`Model::evaluate`] or
    /// [`Model::predict`]. The file is read with the CSV options of the
    /// spec's `data` item (delimiter, header, defaults, ...) but its
    /// `filter`: every row comes out. With `label = false` the label column
    /// need not exist (rows to predict).
    pub fn read_csv(
        &self,
        path: impl AsRef<Path>,
        label: bool,
    ) -> Result<Vec<(String, ArrayD<f32>)>, Error> {
        let specs = self.input_specs(label);
        // The spec's CSV options, but its filter: one row out per row in.
        let options = self
            .program
            .model
            .data
            .source
            .csv_options()
            .map(|o| o.without_filter())
            .unwrap_or_default();
        let source = Source::Csv {
            path: path.as_ref().to_path_buf(),
            options,
        };
        let data = load(&source, &specs).map_err(|e| Error::Input(e.to_string()))?;
        dataset_arrays(&data)
    }

    /// The model inputs' column specs, the label's only with `label`.
    fn input_specs(&self, label: bool) -> Vec<InputSpec> {
        self.program
            .model
            .inputs
            .iter()
            .filter(|i| label || i.role != InputRole::Label)
            .map(|i| i.spec.clone())
            .collect()
    }

    /// Reads named columns in memory (a DataFrame's: `frame` names it in
    /// errors) through the spec's columns, normalizers and feature columns,
    /// as [`Model::read_csv`] reads a CSV file's columns, into one array per
    /// model input; with `label = false` the label column need not exist.
    pub fn read_frame(
        &self,
        frame: &str,
        columns: &[FrameColumn<'_>],
        label: bool,
    ) -> Result<Vec<(String, ArrayD<f32>)>, Error> {
        let specs = self.input_specs(label);
        let data = load_frame(frame, columns, &specs).map_err(|e| Error::Input(e.to_string()))?;
        dataset_arrays(&data)
    }

    /// The spec's `outputs`, in order, each with whether its values are
    /// ids (int32, returned by [`Model::predict`] as whole numbers); empty
    /// without a `predict` function.
    pub fn outputs(&self) -> Vec<(String, bool)> {
        let Some(f) = self.session.function_index("predict") else {
            return Vec::new();
        };
        self.session
            .function_layout(f)
            .outputs
            .iter()
            .map(|o| (o.name.clone(), o.elem == ElemType::I32))
            .collect()
    }

    /// The IR function compiled under `name`.
    fn ir_function(&self, name: &str) -> Option<&Function> {
        let f = &self.program.model.functions;
        match name {
            "eval" => Some(&f.eval),
            "step" => f.step.as_ref(),
            "grad" => f.grad.as_ref(),
            "predict" => f.predict.as_ref(),
            _ => None,
        }
    }

    /// An output's array shape for `rows` rows: its IR shape with the batch
    /// dimension as `rows`, or `[rows, per_example]`.
    fn output_dims(
        &self,
        f: Option<&Function>,
        name: &str,
        rows: usize,
        per_example: usize,
    ) -> Vec<usize> {
        let node = f.and_then(|f| f.outputs.iter().find(|o| o.name == name).map(|o| o.node));
        match node {
            Some(n) => self
                .program
                .model
                .graph
                .shape(n)
                .0
                .iter()
                .map(|d| match d {
                    Dim::Batch => rows,
                    Dim::Fixed(k) => *k as usize,
                })
                .collect(),
            None => vec![rows, per_example],
        }
    }
}

/// A data set's inputs as arrays (`[rows]`, or `[rows, width]`; ids as
/// whole numbers).
fn dataset_arrays(data: &Dataset) -> Result<Vec<(String, ArrayD<f32>)>, Error> {
    data.inputs
        .iter()
        .map(|d| {
            let v: Vec<f32> = match &d.values {
                Values::F32(v) => v.clone(),
                Values::I32(v) => v.iter().map(|&x| x as f32).collect(),
            };
            let shape = if d.width == 1 {
                vec![data.rows]
            } else {
                vec![data.rows, d.width]
            };
            ArrayD::from_shape_vec(IxDyn(&shape), v)
                .map(|a| (d.name.clone(), a))
                .map_err(|e| Error::Input(format!("input `{}`: {e}", d.name)))
        })
        .collect()
}
