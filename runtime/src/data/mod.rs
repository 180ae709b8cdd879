//! Data sources (CSV files, seeded synthetic data) loaded into an in-memory
//! [`Dataset`]: one row-major float32 or int32 array per model input.
//!
//! A source reads raw cells and hands them, a chunk of rows at a time, to one
//! [`ColumnTransform`] per input ([`columns`]), which parses and normalizes
//! them into typed values; the source never interprets a cell itself.
//!
//! What this module guarantees:
//! - Only the requested columns are read; each input's array is
//!   `[rows, width]` row-major with `width` = number of its columns, in the
//!   order the columns were listed.
//! - A `Float` input holds `Values::F32`; a `ClassId` input holds `Values::I32`,
//!   has exactly one column, no normalizer, and every value is an integer
//!   `>= 0` (and `< num_classes` when given); a feature column's ids input
//!   also holds the padding id -1 in slots without an id.
//! - Normalizers are applied per value in f64 and rounded to f32 once:
//!   `Expr` evaluates the tree with `X` = the raw value; `Standardize` computes,
//!   per column over all rows, the mean and population std (ddof 0) in f64
//!   (NumPy's summation order, see [`norm::mean_std`]) and stores
//!   `f32((x - mean) / std)`. A constant column (all values equal) standardizes
//!   to 0.0 everywhere (as scikit-learn's `StandardScaler`) instead of dividing
//!   by a zero (or rounding-noise) std.
//! - Every stored float is finite: a raw value, or a normalized value, that is
//!   NaN, infinite, or overflows float32 is an error.
//! - Errors never panic; they are [`DataError`]s naming the file, and where it
//!   applies the row and column. For CSV, `row` is the 1-based line number in
//!   the file (the header is line 1, so the first data row is usually line 2);
//!   for synthetic data the file is `synthetic` and `row` is the 1-based row.
//!   The error reported is the first bad cell in row-major order.
//! - Memory is bounded by the data, not by a malformed file: a CSV row longer
//!   than [`MAX_CSV_ROW_BYTES`] is an error, and so is a data set of more than
//!   [`MAX_ROWS`] rows.
//!
//! CSV: read under the source's options ([`CsvReadOptions`]: a header row by
//! default); cells are trimmed and parsed as f64 (Rust's `str::parse`,
//! correctly rounded); an empty cell is a missing value, which is an error
//! unless `column_defaults` gives it a value; a row with a different number
//! of fields than there are columns is an error; zero data rows is an error.
//!
//! Synthetic: columns `x0..x{features-1}` and `label`; see [`SyntheticSpec`].

pub mod columns;
pub mod csv_file;
pub mod csv_filter;
pub mod csv_options;
pub mod frame;
pub mod images;
pub mod norm;
mod synthetic;
pub mod text;

use std::fmt;
use std::path::PathBuf;

use crate::abi::ElemType;

pub use columns::{Cell, CellRows, ColumnTransform, ValuesMut};
pub use csv_options::CsvReadOptions;
pub use frame::{load_frame, ColumnValues, FrameColumn};
pub use norm::{NormExpr, NormFunc};

/// The longest row of a CSV file, in bytes (its line terminator included;
/// a quoted field may span lines): 1 MiB. A longer row is an error naming the
/// file and line, so a file that never ends a line (`/dev/zero`) or a header
/// of millions of columns cannot exhaust memory.
pub const MAX_CSV_ROW_BYTES: usize = 1 << 20;

/// The most rows a data set may have (row ids are `u32`).
pub const MAX_ROWS: usize = u32::MAX as usize;

/// Where the rows come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A CSV file, read under TF's CSV options (a header row by default).
    Csv {
        path: PathBuf,
        options: CsvReadOptions,
    },
    /// Seeded random data.
    Synthetic(SyntheticSpec),
    /// Files streamed by the input pipeline ([`crate::pipeline`]); [`load`]
    /// refuses it (`specc run` streams it).
    Stream(crate::pipeline::StreamSpec),
    /// Images decoded and transformed into memory ([`images`]): the input
    /// whose column is [`images::IMAGE_COLUMN`] gets the pixels, the one
    /// whose column is [`images::LABEL_COLUMN`] the labels.
    Images(ImagesSpec),
}

impl Source {
    /// A CSV file with TF's default options (a header row, `,`, quotes).
    pub fn csv(path: impl Into<PathBuf>) -> Source {
        Source::Csv {
            path: path.into(),
            options: CsvReadOptions::default(),
        }
    }

    /// The CSV options of a CSV source, in memory or streamed (`None` for
    /// any other source).
    pub fn csv_options(&self) -> Option<&CsvReadOptions> {
        match self {
            Source::Csv { options, .. } => Some(options),
            Source::Stream(s) => match &s.format {
                crate::pipeline::Format::Csv(options) => Some(&**options),
                _ => None,
            },
            _ => None,
        }
    }

    /// The source with its relative paths (files, patterns, directories)
    /// taken under `dir`: a spec's source, whose paths are written relative
    /// to the spec's directory, made usable from the current directory.
    pub fn under(&self, dir: &std::path::Path) -> Source {
        match self {
            Source::Csv { path, options } => Source::Csv {
                path: dir.join(path),
                options: options.clone(),
            },
            Source::Synthetic(s) => Source::Synthetic(s.clone()),
            Source::Stream(spec) => {
                let mut spec = spec.clone();
                for p in &mut spec.paths {
                    *p = dir.join(&*p);
                }
                Source::Stream(spec)
            }
            Source::Images(spec) => {
                use images::ImageSource;
                let mut spec = spec.clone();
                match &mut spec.source {
                    ImageSource::Directory { dir: d } => *d = dir.join(&*d),
                    ImageSource::Csv { path, .. } => *path = dir.join(&*path),
                    ImageSource::TfRecord { paths, .. } => {
                        for p in paths {
                            *p = dir.join(&*p);
                        }
                    }
                }
                Source::Images(spec)
            }
        }
    }
}

/// An image source and the pipeline of its image input.
#[derive(Debug, Clone, PartialEq)]
pub struct ImagesSpec {
    pub source: images::ImageSource,
    pub pipeline: images::ImagePipeline,
    /// Worker threads (`threads`), and the bad-image policy.
    pub threads: usize,
    pub on_bad_record: crate::pipeline::OnBadRecord,
    /// Whether the random transforms apply (training) and their seed.
    pub training: bool,
    pub seed: u64,
}

/// Seeded random data with columns `x0..x{features-1}` and `label`.
///
/// - Features, `Uniform`: element i (row-major over `[rows, features]`) is
///   `uniform01_f32` of output i+1 of the stream `seed` (the benchmark's W3 `X`).
/// - Features, `Normal`: element i is `f32(n_i)`, `n_i` the i-th normal of the
///   stream `seed` (outputs 2i+1 and 2i+2, [`crate::prng::SplitMix64::normal_f64`]).
/// - Label with `classes = Some(c)`: row r is output r+1 of the stream
///   `label_seed` modulo c (the benchmark's W3 labels).
/// - Label with `classes = None`: row r is `f32(n_r)`, the r-th normal of the
///   stream `label_seed`.
///
/// Each column is computed by random access into its stream, so requesting a
/// subset of the columns gives the same values as requesting all of them.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticSpec {
    pub rows: usize,
    pub features: usize,
    pub classes: Option<u32>,
    pub seed: u64,
    pub label_seed: u64,
    pub distribution: Distribution,
}

/// Distribution of synthetic features.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    Normal,
    Uniform,
}

/// One model input: a name, the source columns it is made of, its type and
/// normalizer.
#[derive(Debug, Clone, PartialEq)]
pub struct InputSpec {
    pub name: String,
    pub columns: Vec<String>,
    pub kind: InputKind,
    pub normalizer: Normalizer,
    /// The feature column this input comes from, when it is one of the
    /// inputs of `tf.feature_column` (ids, weights, dense values, a string
    /// label); `None` for the plain `numeric` / `integer` inputs.
    pub feature: Option<crate::feature_column::FeatureInput>,
}

/// The element type of an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// float32, any number of columns.
    Float,
    /// int32 ids (class labels, or the ids of an `integer` feature), one or
    /// more columns; values must be integral, `>= 0`, and `< num_classes`
    /// when given.
    ClassId { num_classes: Option<u32> },
}

/// How raw f64 values become stored float32 values.
#[derive(Debug, Clone, PartialEq)]
pub enum Normalizer {
    None,
    Standardize,
    Expr(NormExpr),
}

/// The loaded data: `rows` rows of every input.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    pub rows: usize,
    pub inputs: Vec<InputData>,
}

/// One input's values, row-major `[rows, width]`.
#[derive(Debug, Clone, PartialEq)]
pub struct InputData {
    pub name: String,
    pub width: usize,
    pub values: Values,
}

/// Typed storage of an input.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    F32(Vec<f32>),
    I32(Vec<i32>),
}

impl Values {
    /// Number of stored elements.
    pub fn len(&self) -> usize {
        match self {
            Values::F32(v) => v.len(),
            Values::I32(v) => v.len(),
        }
    }

    /// True when no element is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The float32 values, if this is `F32`.
    pub fn as_f32(&self) -> Option<&[f32]> {
        match self {
            Values::F32(v) => Some(v),
            Values::I32(_) => None,
        }
    }

    /// The int32 values, if this is `I32`.
    pub fn as_i32(&self) -> Option<&[i32]> {
        match self {
            Values::I32(v) => Some(v),
            Values::F32(_) => None,
        }
    }
}

impl InputData {
    /// An input from in-memory values (row-major `[rows, width]`).
    pub fn new(name: impl Into<String>, width: usize, values: Values) -> InputData {
        InputData {
            name: name.into(),
            width,
            values,
        }
    }
}

impl Dataset {
    /// A dataset from in-memory inputs (for tests and embedding). Checks that
    /// every input holds exactly `rows * width` values, that widths are
    /// non-zero, that names are unique, that there are at most [`MAX_ROWS`]
    /// rows, and that every int32 value is an id (`>= 0`, the rule [`load`]
    /// applies) or the feature columns' padding id -1
    /// ([`crate::feature_column::PADDING_ID`]). The rest is the model's:
    /// binding the data to a session ([`crate::source::Binding`]) checks the
    /// ids' upper bound, and allows -1 only in a feature column's ids.
    pub fn from_inputs(rows: usize, inputs: Vec<InputData>) -> Result<Dataset, String> {
        if rows > MAX_ROWS {
            return Err(format!("{rows} rows is more than the limit of {MAX_ROWS}"));
        }
        for (i, inp) in inputs.iter().enumerate() {
            if inp.width == 0 {
                return Err(format!("input `{}` has width 0", inp.name));
            }
            let want = rows.checked_mul(inp.width);
            if want != Some(inp.values.len()) {
                return Err(format!(
                    "input `{}` has {} values, expected rows * width = {rows} * {}",
                    inp.name,
                    inp.values.len(),
                    inp.width
                ));
            }
            if inputs[..i].iter().any(|o| o.name == inp.name) {
                return Err(format!("two inputs are named `{}`", inp.name));
            }
            if let Values::I32(ids) = &inp.values {
                let padding = crate::feature_column::PADDING_ID;
                if let Some(k) = ids.iter().position(|&id| id < 0 && id != padding) {
                    return Err(format!(
                        "input `{}`, row {}: an id must be a non-negative integer, got {}",
                        inp.name,
                        k / inp.width + 1,
                        ids[k]
                    ));
                }
            }
        }
        Ok(Dataset { rows, inputs })
    }

    /// The input named `name`.
    pub fn input(&self, name: &str) -> Option<&InputData> {
        self.inputs.iter().find(|i| i.name == name)
    }
}

/// A data loading error: the file, and where it applies the row (1-based
/// line number for CSV) and the column.
///
/// Displays as `FILE[:ROW]: [column `COL`: ]MESSAGE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataError {
    pub file: String,
    pub row: Option<usize>,
    pub column: Option<String>,
    pub message: String,
}

impl DataError {
    pub(crate) fn new(file: &str, message: impl Into<String>) -> DataError {
        DataError {
            file: file.to_string(),
            row: None,
            column: None,
            message: message.into(),
        }
    }

    /// An error at `row` (1-based line for CSV) and `column`, where known.
    pub fn at(
        file: &str,
        row: Option<usize>,
        column: Option<&str>,
        message: impl Into<String>,
    ) -> DataError {
        DataError {
            file: file.to_string(),
            row,
            column: column.map(str::to_string),
            message: message.into(),
        }
    }
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(r) = self.row {
            write!(f, ":{r}")?;
        }
        write!(f, ": ")?;
        if let Some(c) = &self.column {
            write!(f, "column `{c}`: ")?;
        }
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for DataError {}

/// Load the requested inputs from `source`.
pub fn load(source: &Source, inputs: &[InputSpec]) -> Result<Dataset, DataError> {
    match source {
        Source::Csv { path, options } => {
            let file = path.display().to_string();
            check_specs(&file, inputs)?;
            csv_file::load(path, &file, options, inputs)
        }
        Source::Synthetic(spec) => {
            check_specs(synthetic::FILE, inputs)?;
            synthetic::load(spec, inputs)
        }
        Source::Images(spec) => load_images(spec, inputs),
        Source::Stream(spec) => Err(DataError::new(
            &spec
                .paths
                .first()
                .map_or_else(String::new, |p| p.display().to_string()),
            "this source streams (a TFRecord, a glob pattern or pipeline options): \
             `specc run` trains from it; this command needs the rows in memory \
             (a single CSV file without pipeline options)",
        )),
    }
}

fn load_images(spec: &ImagesSpec, inputs: &[InputSpec]) -> Result<Dataset, DataError> {
    load_images_with_report(spec, inputs).map(|(d, _)| d)
}

/// Loads an image source ([`Source::Images`]) and reports what it kept and
/// skipped (for [`images::Augmenter`]).
pub fn load_images_with_report(
    spec: &ImagesSpec,
    inputs: &[InputSpec],
) -> Result<(Dataset, images::LoadReport), DataError> {
    let by_column = |c: &str| {
        inputs
            .iter()
            .find(|i| i.columns.len() == 1 && i.columns[0] == c)
    };
    let image = by_column(images::IMAGE_COLUMN).ok_or_else(|| {
        DataError::new(
            "images",
            "the spec declares no image input (`features { x = image(...) }`)",
        )
    })?;
    if let Some(other) = inputs.iter().find(|i| {
        i.columns.len() != 1
            || (i.columns[0] != images::IMAGE_COLUMN && i.columns[0] != images::LABEL_COLUMN)
    }) {
        return Err(DataError::new(
            "images",
            format!(
                "an image source has the columns `{}` and `{}` only; input `{}` reads {:?}",
                images::IMAGE_COLUMN,
                images::LABEL_COLUMN,
                other.name,
                other.columns
            ),
        ));
    }
    let label = by_column(images::LABEL_COLUMN);
    let num_classes = label.and_then(|l| match l.kind {
        InputKind::ClassId { num_classes } => num_classes,
        _ => None,
    });
    let options = images::LoadOptions {
        threads: spec.threads,
        on_bad_record: spec.on_bad_record,
        training: spec.training,
        seed: spec.seed,
        epoch: 0,
        num_classes,
    };
    let (mut ds, report) = images::load(
        &spec.source,
        &spec.pipeline,
        &image.name,
        label.map(|l| l.name.as_str()),
        &options,
    )?;
    if let Some(l) = label {
        if !matches!(l.kind, InputKind::ClassId { .. }) {
            let i = ds.inputs.iter().position(|d| d.name == l.name);
            if let Some(i) = i {
                let v: Vec<f32> = ds.inputs[i]
                    .values
                    .as_i32()
                    .unwrap_or(&[])
                    .iter()
                    .map(|&x| x as f32)
                    .collect();
                ds.inputs[i].values = Values::F32(v);
            }
        }
    }
    for e in report.skipped.iter().take(5) {
        eprintln!("skipped bad image: {e}");
    }
    Ok((ds, report))
}

/// Checks on the input specs that do not depend on the data.
fn check_specs(file: &str, inputs: &[InputSpec]) -> Result<(), DataError> {
    for (i, inp) in inputs.iter().enumerate() {
        let err = |msg: String| Err(DataError::new(file, format!("input `{}`: {msg}", inp.name)));
        if inputs[..i].iter().any(|o| o.name == inp.name) {
            return err("two inputs have this name".to_string());
        }
        if inp.columns.is_empty() {
            return err("no columns".to_string());
        }
        if let Some(feature) = &inp.feature {
            check_feature(inp, feature)
                .map_err(|m| DataError::new(file, format!("input `{}`: {m}", inp.name)))?;
        }
        if let InputKind::ClassId { num_classes } = inp.kind {
            if inp.normalizer != Normalizer::None {
                return err("a class-id input cannot have a normalizer".to_string());
            }
            if num_classes == Some(0) {
                return err("num_classes must be at least 1".to_string());
            }
        }
    }
    Ok(())
}

/// A feature-column input's spec agrees with its description: its columns
/// are the column's raw keys (a string label: one column), its kind is the
/// one its values have, and its normalizer is the column's own.
fn check_feature(
    inp: &InputSpec,
    feature: &crate::feature_column::FeatureInput,
) -> Result<(), String> {
    use crate::feature_column::FeatureInput;
    let keys = feature.raw_keys();
    match feature {
        FeatureInput::LabelVocabulary { .. } if inp.columns.len() != 1 => {
            return Err(format!(
                "a string label reads one column, not {}",
                inp.columns.len()
            ))
        }
        FeatureInput::LabelVocabulary { .. } => {}
        _ if keys != inp.columns => {
            return Err(format!(
                "the columns are {:?} but the feature column reads {:?}",
                inp.columns, keys
            ))
        }
        _ => {}
    }
    let float = matches!(
        feature,
        FeatureInput::Dense(_) | FeatureInput::Weights { .. } | FeatureInput::SequenceDense { .. }
    );
    if float != (inp.kind == InputKind::Float) {
        return Err(format!(
            "the input's kind {:?} does not match the feature column's values",
            inp.kind
        ));
    }
    if inp.normalizer != Normalizer::None {
        return Err("a feature column input takes its normalizer from the column".to_string());
    }
    Ok(())
}

/// The arrays of a data set being loaded: one [`ColumnTransform`] per input,
/// fed chunk by chunk, and the values it wrote.
/// The fewest rows of a chunk that [`Builder::push`] transforms on two
/// threads (below it, a thread costs more than it saves).
pub(crate) const PARALLEL_ROWS: usize = 1024;

pub(crate) struct Builder {
    transforms: Vec<Box<dyn ColumnTransform>>,
    /// A second set of the same transforms for a second thread (see
    /// [`Builder::push`]); `None` with one thread or a fitted transform.
    twins: Option<Vec<Box<dyn ColumnTransform>>>,
    values: Vec<Values>,
    rows: usize,
}

impl Builder {
    /// A builder for `inputs`; call [`Builder::reserve`] before pushing rows.
    pub(crate) fn new(inputs: &[InputSpec]) -> Builder {
        let transforms: Vec<Box<dyn ColumnTransform>> =
            inputs.iter().map(columns::transform_for).collect();
        let values = transforms
            .iter()
            .map(|t| match t.elem() {
                ElemType::F32 => Values::F32(Vec::new()),
                ElemType::I32 => Values::I32(Vec::new()),
            })
            .collect();
        let twins = (crate::threads::threads() > 1 && !transforms.iter().any(|t| t.is_fitted()))
            .then(|| inputs.iter().map(columns::transform_for).collect());
        Builder {
            transforms,
            twins,
            values,
            rows: 0,
        }
    }

    /// Makes room for `rows` more rows of every input, or says that the data
    /// does not fit in memory (an allocation failure is an error, not an abort).
    pub(crate) fn reserve(&mut self, rows: usize) -> Result<(), String> {
        for (transform, values) in self.transforms.iter().zip(&mut self.values) {
            let n = rows.saturating_mul(transform.width());
            let ok = match values {
                Values::F32(v) => v.try_reserve(n).is_ok(),
                Values::I32(v) => v.try_reserve(n).is_ok(),
            };
            if !ok {
                return Err(format!(
                    "cannot allocate memory for {} rows: the data does not fit in memory",
                    self.rows.saturating_add(rows)
                ));
            }
        }
        Ok(())
    }

    /// The bytes `rows` rows of every input take once loaded.
    pub(crate) fn bytes_for(&self, rows: usize) -> u64 {
        let width: usize = self.transforms.iter().map(|t| t.width()).sum();
        (rows as u64).saturating_mul(width as u64).saturating_mul(4)
    }

    /// Rows added so far.
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    /// Adds a chunk of `rows` rows; `cells(t)` is transform `t`'s cells. On
    /// error, the first bad cell in row-major order (row, then input, then
    /// column) as `(input, error)`.
    ///
    /// With a second set of transforms ([`Builder::twins`]: more than one
    /// thread, no fitted transform) and a chunk of at least
    /// [`PARALLEL_ROWS`] rows, a second thread transforms the second half of
    /// the chunk's rows while this one does the first (transforms keep no
    /// state from row to row, so the values are the same).
    pub(crate) fn push<'c>(
        &mut self,
        rows: usize,
        cells: impl FnMut(usize) -> CellRows<'c>,
    ) -> Result<(), (usize, columns::CellError)> {
        let cells: Vec<CellRows<'c>> = (0..self.transforms.len()).map(cells).collect();
        let split = match &self.twins {
            Some(_) if rows >= PARALLEL_ROWS => rows / 2,
            _ => rows,
        };
        let mut outs: Vec<(ValuesMut<'_>, ValuesMut<'_>)> = self
            .transforms
            .iter()
            .zip(&mut self.values)
            .map(|(transform, values)| {
                let w = transform.width();
                match values {
                    Values::F32(v) => {
                        let s = v.len();
                        v.resize(s + rows * w, 0.0);
                        let (a, b) = v[s..].split_at_mut(split * w);
                        (ValuesMut::F32(a), ValuesMut::F32(b))
                    }
                    Values::I32(v) => {
                        let s = v.len();
                        v.resize(s + rows * w, 0);
                        let (a, b) = v[s..].split_at_mut(split * w);
                        (ValuesMut::I32(a), ValuesMut::I32(b))
                    }
                }
            })
            .collect();
        fn run<'v>(
            transforms: &mut [Box<dyn ColumnTransform>],
            cells: impl Fn(usize) -> CellRows<'v>,
            outs: impl Iterator<Item = ValuesMut<'v>>,
            row_offset: usize,
        ) -> Option<(usize, columns::CellError)> {
            let mut first: Option<(usize, columns::CellError)> = None;
            for (t, (transform, out)) in transforms.iter_mut().zip(outs).enumerate() {
                if let Err(mut e) = transform.transform(&cells(t), out) {
                    e.row += row_offset;
                    // Each transform reports its own first bad cell; the
                    // earliest row wins, and in a row the earlier input.
                    if first.as_ref().is_none_or(|(_, f)| e.row < f.row) {
                        first = Some((t, e));
                    }
                }
            }
            first
        }
        let (heads, tails): (Vec<_>, Vec<_>) = outs.drain(..).unzip();
        let first = match (&mut self.twins, split < rows) {
            (Some(twins), true) => {
                let transforms = &mut self.transforms;
                let cells = &cells;
                let (fa, fb) = std::thread::scope(|s| {
                    let h = s.spawn(move || {
                        run(
                            twins,
                            |t| cells[t].slice(split, rows),
                            tails.into_iter(),
                            split,
                        )
                    });
                    let fa = run(
                        transforms,
                        |t| cells[t].slice(0, split),
                        heads.into_iter(),
                        0,
                    );
                    (fa, h.join())
                });
                let fb = fb.map_err(|_| {
                    let message = "internal error: a loader thread panicked".to_string();
                    (
                        0,
                        columns::CellError {
                            row: 0,
                            column: 0,
                            message,
                        },
                    )
                })?;
                fa.or(fb)
            }
            _ => run(&mut self.transforms, |t| cells[t], heads.into_iter(), 0),
        };
        match first {
            Some(e) => Err(e),
            None => {
                self.rows += rows;
                Ok(())
            }
        }
    }

    /// The inputs' data, after the fitted transforms have written theirs. On
    /// error, `(input, error)`.
    pub(crate) fn finish(
        self,
        inputs: &[InputSpec],
    ) -> Result<Vec<InputData>, (usize, columns::ColumnError)> {
        let mut out = Vec::with_capacity(inputs.len());
        for (t, ((mut transform, mut values), spec)) in self
            .transforms
            .into_iter()
            .zip(self.values)
            .zip(inputs)
            .enumerate()
        {
            if transform.is_fitted() {
                let dst = match &mut values {
                    Values::F32(v) => ValuesMut::F32(v),
                    Values::I32(v) => ValuesMut::I32(v),
                };
                transform.finish(dst).map_err(|e| (t, e))?;
            }
            debug_assert_eq!(values.len(), self.rows * transform.width());
            out.push(InputData {
                name: spec.name.clone(),
                width: transform.width(),
                values,
            });
        }
        Ok(out)
    }
}
