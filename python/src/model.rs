//! `specc._specc.Model`: a compiled spec and its trained state, for Python.
//!
//! Owns: the Python-facing calls on a `specc::Model` — a training step, an
//! evaluation, a prediction over numpy arrays; the variables as numpy
//! arrays; TF checkpoints; and `fit`, a whole run (`specc::run`, what
//! `specc run` does) from the spec's data, a data file, or a frame's
//! columns, that starts from this model's state and leaves the trained
//! state in it.
//!
//! Invariants: arrays come in as C-contiguous float32 (and float64 frame
//! columns) that the Python package made, borrowed without a copy while the
//! call runs; results go out as arrays the caller owns. The GIL is released
//! while compiled code runs or data is read (the model is then held by its
//! lock, so two Python threads never step one model at once). A refused
//! call leaves the model as it was (a failed `fit` too: its state is copied
//! in only when the run succeeds; a run that Ctrl-C or a callback ended
//! early succeeded, at the step it stopped at).

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use numpy::{PyArrayDyn, PyReadonlyArray1, PyReadonlyArrayDyn};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use specc::run::{self, Flags, Given, Quiet, Request};
use specc_grammar::SourceFile;
use specc_runtime::data::{ColumnValues, FrameColumn};

use crate::errors::{model_error, run_error};
use crate::observe::PyObserver;

/// A `specc::Model` made by `specc::Model::from_source`, which may move
/// between threads.
///
/// `specc::Model` is not `Send` as a type: its session keeps raw pointers
/// into its buffers, and may hold a prologue and attached arenas, which a
/// data-parallel job's replicas install (their MPI windows and sharded
/// tables' exchange), and which need not be `Send`.
pub struct Owned(pub specc::Model);

// SAFETY: the model is made by `specc::Model::from_source` and only ever
// changed through the library's `&mut` calls, none of which installs a
// prologue or attaches an arena (only `run::replicas` does, on a run's own
// model, which never lands here). What it holds is then its own: the raw
// pointers point into buffers the session owns (`AlignedBuf`, which is
// `Send`), and the compiled code it calls has no thread-local state. So it
// may be used from another thread, one at a time: `Model` keeps it behind a
// `Mutex`, and the GIL is only released inside a call that holds the lock.
unsafe impl Send for Owned {}

/// A compiled spec and its trained state.
#[pyclass(module = "specc._specc", name = "Model")]
pub struct Model {
    model: Mutex<Owned>,
    /// The spec file (or the name of a spec given as text).
    spec_path: PathBuf,
    /// The spec's text, when it was given as text.
    spec_text: Option<String>,
    /// The overrides it was compiled with (`--set KEY=VALUE`).
    sets: Vec<String>,
}

impl Model {
    /// Wraps a compiled model (made by `specc::Model::from_source`: see
    /// [`Owned`]) of the spec at `spec_path` (or of `spec_text`) compiled
    /// with `sets`.
    pub fn new(
        model: Owned,
        spec_path: PathBuf,
        spec_text: Option<String>,
        sets: Vec<String>,
    ) -> Model {
        Model {
            model: Mutex::new(model),
            spec_path,
            spec_text,
            sets,
        }
    }

    pub fn lock(&self) -> Locked<'_> {
        // A panic never happens under the lock (every call returns errors);
        // if one did, the model's state is still whole between calls.
        Locked(self.model.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// The model, locked.
pub struct Locked<'a>(MutexGuard<'a, Owned>);

impl std::ops::Deref for Locked<'_> {
    type Target = specc::Model;
    fn deref(&self) -> &specc::Model {
        &self.0 .0
    }
}

impl std::ops::DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut specc::Model {
        &mut self.0 .0
    }
}

/// Named arrays borrowed from numpy, as the library's views.
fn views<'a>(
    batch: &'a [(String, PyReadonlyArrayDyn<'_, f32>)],
) -> Vec<(&'a str, ndarray::ArrayViewD<'a, f32>)> {
    batch
        .iter()
        .map(|(n, a)| (n.as_str(), a.as_array()))
        .collect()
}

/// A numpy array (taken over, not copied) of an array the library made.
fn to_numpy(py: Python<'_>, a: ndarray::ArrayD<f32>) -> Bound<'_, PyArrayDyn<f32>> {
    PyArrayDyn::from_owned_array(py, a)
}

/// One frame column from Python: a C-contiguous float64 array, or a list
/// of bytes (text cells).
enum Column<'py> {
    Numbers(PyReadonlyArray1<'py, f64>),
    Text(Vec<Vec<u8>>),
}

#[pymethods]
impl Model {
    /// The model's name (its `model` item, or the file name).
    #[getter]
    fn name(&self) -> String {
        self.lock().name().to_string()
    }

    /// TF's global step: the training steps taken (restored with a checkpoint).
    #[getter]
    fn global_step(&self) -> i64 {
        self.lock().global_step()
    }

    /// The most rows one training step takes (the spec's batch).
    #[getter]
    fn max_batch(&self) -> usize {
        self.lock().max_batch()
    }

    /// The compiled model's inputs: `(name, elements per row, integer, label)`.
    fn inputs(&self) -> Vec<(String, usize, bool, bool)> {
        self.lock()
            .inputs()
            .into_iter()
            .map(|i| (i.name, i.per_example, i.integer, i.label))
            .collect()
    }

    /// One training step on named float32 arrays; the loss. The GIL is
    /// released while the step runs.
    fn train_step(
        &self,
        py: Python<'_>,
        batch: Vec<(String, PyReadonlyArrayDyn<'_, f32>)>,
    ) -> PyResult<f32> {
        let views = views(&batch);
        py.detach(|| self.lock().train_step(&views))
            .map_err(|e| model_error(py, e))
    }

    /// The mean loss, the rows and the metrics over named float32 arrays.
    fn evaluate<'py>(
        &self,
        py: Python<'py>,
        batch: Vec<(String, PyReadonlyArrayDyn<'_, f32>)>,
    ) -> PyResult<Eval> {
        let views = views(&batch);
        let e = py
            .detach(|| self.lock().evaluate(&views))
            .map_err(|e| model_error(py, e))?;
        Ok((e.loss, e.rows, e.metrics))
    }

    /// The spec's `outputs` over named float32 arrays: `(name, array)`.
    fn predict<'py>(
        &self,
        py: Python<'py>,
        batch: Vec<(String, PyReadonlyArrayDyn<'_, f32>)>,
    ) -> PyResult<Vec<(String, Bound<'py, PyArrayDyn<f32>>)>> {
        let views = views(&batch);
        let out = py
            .detach(|| self.lock().predict(&views))
            .map_err(|e| model_error(py, e))?;
        Ok(out.into_iter().map(|(n, a)| (n, to_numpy(py, a))).collect())
    }

    /// A CSV file through the spec's columns and feature columns: the model
    /// inputs as `(name, array)` (the label too when `label`).
    fn read_csv<'py>(
        &self,
        py: Python<'py>,
        path: PathBuf,
        label: bool,
    ) -> PyResult<Vec<(String, Bound<'py, PyArrayDyn<f32>>)>> {
        let out = py
            .detach(|| self.lock().read_csv(&path, label))
            .map_err(|e| model_error(py, e))?;
        Ok(out.into_iter().map(|(n, a)| (n, to_numpy(py, a))).collect())
    }

    /// A frame's named columns (float64 arrays, or lists of bytes) through
    /// the spec's columns and feature columns, as `read_csv` reads a CSV's:
    /// the model inputs as `(name, array)` (the label too when `label`).
    fn read_frame<'py>(
        &self,
        py: Python<'py>,
        columns: Vec<(String, Bound<'py, PyAny>)>,
        frame_name: String,
        label: bool,
    ) -> PyResult<Vec<(String, Bound<'py, PyArrayDyn<f32>>)>> {
        let out = with_frame(columns, |frame| {
            py.detach(|| self.lock().read_frame(&frame_name, frame, label))
                .map_err(|e| model_error(py, e))
        })?;
        Ok(out.into_iter().map(|(n, a)| (n, to_numpy(py, a))).collect())
    }

    /// The spec's `outputs` in order: `(name, integer)`.
    fn outputs(&self) -> Vec<(String, bool)> {
        self.lock().outputs()
    }

    /// Every variable a checkpoint holds, by TF name: `(name, array)`.
    fn variables<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Vec<(String, Bound<'py, PyArrayDyn<f32>>)>> {
        let m = self.lock();
        m.variables()
            .into_iter()
            .map(|(n, _)| {
                let a = m.parameter(&n).map_err(|e| model_error(py, e))?;
                Ok((n, to_numpy(py, a)))
            })
            .collect()
    }

    /// Sets a variable (a name of `variables()`) to a float32 array of its shape.
    fn set_variable(
        &self,
        py: Python<'_>,
        name: &str,
        value: PyReadonlyArrayDyn<'_, f32>,
    ) -> PyResult<()> {
        self.lock()
            .set_parameter(name, value.as_array())
            .map_err(|e| model_error(py, e))
    }

    /// Saves a TF checkpoint `DIR/model.ckpt-<global step>`; its prefix.
    fn save(&self, py: Python<'_>, dir: PathBuf) -> PyResult<PathBuf> {
        py.detach(|| self.lock().save_checkpoint(&dir))
            .map_err(|e| model_error(py, e))
    }

    /// Restores from a TF checkpoint (a prefix, or a directory's latest);
    /// the prefix read.
    fn restore(&self, py: Python<'_>, path: PathBuf) -> PyResult<PathBuf> {
        py.detach(|| self.lock().load_checkpoint(&path))
            .map_err(|e| model_error(py, e))
    }

    /// A whole run from this model's state (see the package's `Model.fit`):
    /// `data` a data file in place of the spec's (`--data`), or `columns`
    /// a frame's named columns, or neither (the spec's `data`); `eval_data`
    /// a file, or `eval_columns` a frame's columns, evaluated instead of a
    /// held-out split. `watcher` (the package's `Watcher`) hears the run
    /// every `every_steps` global steps (`observe::PyObserver`), and Ctrl-C
    /// ends it at a step boundary. Returns a dict of what the run did; an
    /// exception that stopped it (KeyboardInterrupt, a callback's) is
    /// raised once the trained state is in the model. The GIL is released
    /// while it runs.
    #[pyo3(signature = (data=None, columns=None, frame_name="DataFrame".to_string(), steps=None, sets=Vec::new(), checkpoint_dir=None, checkpoint_every_steps=None, summary_dir=None, eval_data=None, eval_columns=None, eval_frame_name="DataFrame".to_string(), watcher=None, every_steps=1))]
    #[allow(clippy::too_many_arguments)]
    fn fit<'py>(
        &self,
        py: Python<'py>,
        data: Option<PathBuf>,
        columns: Option<Vec<(String, Bound<'py, PyAny>)>>,
        frame_name: String,
        steps: Option<u64>,
        sets: Vec<String>,
        checkpoint_dir: Option<PathBuf>,
        checkpoint_every_steps: Option<u64>,
        summary_dir: Option<PathBuf>,
        eval_data: Option<PathBuf>,
        eval_columns: Option<Vec<(String, Bound<'py, PyAny>)>>,
        eval_frame_name: String,
        watcher: Option<Py<PyAny>>,
        every_steps: u64,
    ) -> PyResult<Bound<'py, PyDict>> {
        if data.is_some() && columns.is_some() {
            return Err(PyValueError::new_err(
                "fit takes a data path or columns, not both",
            ));
        }
        if eval_data.is_some() && eval_columns.is_some() {
            return Err(PyValueError::new_err(
                "fit takes an eval_data path or eval columns, not both",
            ));
        }
        let mut all_sets = self.sets.clone();
        all_sets.extend(sets);
        let request = Request {
            sets: all_sets,
            flags: Flags {
                data,
                steps,
                checkpoint_dir,
                checkpoint_every_steps,
                summary_dir,
                ..Flags::default()
            },
            eval_data,
            ..Request::new(&self.spec_path)
        };
        let spec = self
            .spec_text
            .as_ref()
            .map(|t| SourceFile::new(self.spec_path.display().to_string(), t.clone()));
        let given_frame = columns.is_some();
        let given_eval_frame = eval_columns.is_some();
        let mut observer = PyObserver::new(watcher, every_steps);
        let eval_columns = eval_columns.unwrap_or_default();
        let summary = with_frame(columns.unwrap_or_default(), |frame| {
            with_frame(eval_columns, |eval_frame| {
                let frame = given_frame.then_some((frame, frame_name));
                let eval_frame = given_eval_frame.then_some((eval_frame, eval_frame_name));
                let observer = &mut observer;
                Ok(py.detach(move || -> Result<Summary, run::Error> {
                    let mut model = self.lock();
                    let given = Given {
                        spec,
                        frame,
                        eval_frame,
                        start: Some(&*model),
                    };
                    let outcome =
                        run::prepare_given(&request, given, None, &mut Quiet)?.fit(observer)?;
                    model
                        .copy_state_from(&outcome.model)
                        .map_err(|e| run::Error::Session(e.to_string()))?;
                    Ok(Summary {
                        global_step: outcome.global_step,
                        steps: outcome.steps,
                        epochs: outcome.epochs,
                        loss: outcome.last.as_ref().map(|l| l.loss),
                        train: outcome.train.map(|e| (e.loss, e.rows, e.metrics)),
                        held_out: outcome.held_out.map(|e| (e.loss, e.rows, e.metrics)),
                        checkpoint: outcome.checkpoint,
                    })
                }))
            })
        })?;
        let s = summary.map_err(|e| run_error(py, e))?;
        // Stopped by an exception (Ctrl-C's KeyboardInterrupt, a
        // callback's): the trained state is in the model; raise it now.
        if let Some(e) = observer.error.take() {
            return Err(e);
        }
        let d = PyDict::new(py);
        d.set_item("global_step", s.global_step)?;
        d.set_item("steps", s.steps)?;
        d.set_item("epochs", s.epochs)?;
        d.set_item("loss", s.loss)?;
        d.set_item("train", s.train)?;
        d.set_item("held_out", s.held_out)?;
        d.set_item("checkpoint", s.checkpoint)?;
        d.set_item("stopped", observer.stopped)?;
        Ok(d)
    }

    fn __repr__(&self) -> PyResult<String> {
        let m = self
            .model
            .try_lock()
            .map_err(|_| PyRuntimeError::new_err("the model is busy"))?;
        Ok(format!(
            "<specc.Model {} at global step {}>",
            m.0.name(),
            m.0.global_step()
        ))
    }
}

/// Calls `f` with `columns` (from Python: each a C-contiguous float64
/// array, borrowed, or a list of bytes, copied) as frame columns.
fn with_frame<'py, R>(
    columns: Vec<(String, Bound<'py, PyAny>)>,
    f: impl FnOnce(&[FrameColumn<'_>]) -> PyResult<R>,
) -> PyResult<R> {
    let mut held: Vec<(String, Column<'py>)> = Vec::with_capacity(columns.len());
    for (name, obj) in columns {
        let c = match obj.extract::<PyReadonlyArray1<'py, f64>>() {
            Ok(a) => Column::Numbers(a),
            Err(_) => Column::Text(obj.extract::<Vec<Vec<u8>>>().map_err(|_| {
                PyValueError::new_err(format!(
                    "column `{name}`: a float64 array or a list of bytes"
                ))
            })?),
        };
        held.push((name, c));
    }
    let texts: Vec<Vec<&[u8]>> = held
        .iter()
        .map(|(_, c)| match c {
            Column::Text(t) => t.iter().map(Vec::as_slice).collect(),
            Column::Numbers(_) => Vec::new(),
        })
        .collect();
    let mut frame: Vec<FrameColumn<'_>> = Vec::with_capacity(held.len());
    for ((name, c), t) in held.iter().zip(&texts) {
        let values = match c {
            Column::Numbers(a) => ColumnValues::Numbers(a.as_slice().map_err(|_| {
                PyValueError::new_err(format!("column `{name}` is not contiguous"))
            })?),
            Column::Text(_) => ColumnValues::Text(t),
        };
        frame.push(FrameColumn { name, values });
    }
    f(&frame)
}

/// An evaluation as Python gets it: `(mean loss, rows, [(metric, value)])`.
type Eval = (f64, usize, Vec<(String, f64)>);

/// What a run did, as `fit` reports it.
struct Summary {
    global_step: i64,
    steps: u64,
    epochs: u64,
    loss: Option<f32>,
    train: Option<Eval>,
    held_out: Option<Eval>,
    checkpoint: Option<PathBuf>,
}
