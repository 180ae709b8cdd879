//! The image sources and their examples in a fixed order: a directory of
//! one sub-directory per class (Keras's `image_dataset_from_directory`), a
//! CSV of paths and labels, TFRecord Examples with encoded image bytes
//! ([`ImageSource`], [`list_examples`]); and what `specc predict` reads
//! ([`list_unlabeled`]).
//!
//! Invariants: class directories sorted by name (their position is the
//! label id, Keras's `labels="inferred"`), files sorted within each (only
//! `.png .jpg .jpeg .gif .bmp`, any case, hidden entries skipped); CSV rows
//! and TFRecord records in file order; an error names the file, and the
//! CSV line or TFRecord record.

use std::path::{Path, PathBuf};

use specc_image::codec::Format;

use super::IMAGE_COLUMN;
use crate::data::DataError;
use crate::io::example::{Example, Feature};
use crate::io::tfrecord::{self, Compression};

/// Where the images come from.
#[derive(Debug, Clone, PartialEq)]
pub enum ImageSource {
    /// `image_dataset_from_directory(dir, labels="inferred")`: one
    /// sub-directory per class.
    Directory { dir: PathBuf },
    /// A CSV file with a header, a column of image paths (relative to the
    /// CSV's directory) and a column of int labels.
    Csv {
        path: PathBuf,
        path_column: String,
        label_column: String,
    },
    /// TFRecord files of `tf.train.Example`s: a bytes feature with the
    /// encoded image and an int64 label.
    TfRecord {
        paths: Vec<PathBuf>,
        compression: Compression,
        image_key: String,
        label_key: String,
    },
}

impl ImageSource {
    /// How the source is named in messages: its directory, CSV or files.
    pub fn display(&self) -> String {
        match self {
            ImageSource::Directory { dir } => dir.display().to_string(),
            ImageSource::Csv { path, .. } => path.display().to_string(),
            ImageSource::TfRecord { paths, .. } => paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}

/// One example: where its bytes are, and its label.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageExample {
    /// The file the bytes come from (the image file, or the TFRecord file).
    pub file: PathBuf,
    /// The CSV line (1-based) or TFRecord record (0-based), when there is one.
    pub row: Option<usize>,
    /// The encoded bytes, for TFRecord sources (`None`: read `file`).
    pub bytes: Option<Vec<u8>>,
    /// The label id.
    pub label: i64,
}

/// The encoded image (one bytes value under `image_key`) and the label (one
/// int64 under `label_key`) of an image `tf.train.Example`, the image taken
/// out of it; an error names the feature (image first) and what is wrong.
pub(crate) fn take_image_and_label<'k>(
    example: &mut Example,
    image_key: &'k str,
    label_key: &'k str,
) -> Result<(Vec<u8>, i64), (&'k str, String)> {
    let bytes = match example.features.remove(image_key) {
        Some(Feature::BytesList(mut b)) if b.len() == 1 => b.swap_remove(0),
        Some(f) => {
            return Err((
                image_key,
                format!(
                    "expected one bytes value (the encoded image), found {}",
                    f.kind()
                ),
            ))
        }
        None => return Err((image_key, "missing feature".into())),
    };
    let label = match example.features.get(label_key) {
        Some(Feature::Int64List(v)) if v.len() == 1 => v[0],
        Some(f) => {
            return Err((
                label_key,
                format!("expected one int64 label, found {}", f.kind()),
            ))
        }
        None => return Err((label_key, "missing feature".into())),
    };
    Ok((bytes, label))
}

impl ImageExample {
    pub(super) fn error(&self, message: impl Into<String>) -> DataError {
        DataError::at(
            &self.file.display().to_string(),
            self.row,
            Some(IMAGE_COLUMN),
            message,
        )
    }
}

/// The examples of a source, in order, and the class names (a directory's
/// sub-directories; empty for the other sources).
pub fn list_examples(source: &ImageSource) -> Result<(Vec<ImageExample>, Vec<String>), DataError> {
    match source {
        ImageSource::Directory { dir } => list_directory(dir),
        ImageSource::Csv {
            path,
            path_column,
            label_column,
        } => list_csv(path, path_column, Some(label_column)).map(|e| (e, Vec::new())),
        ImageSource::TfRecord {
            paths,
            compression,
            image_key,
            label_key,
        } => list_tfrecord(paths, *compression, image_key, label_key).map(|e| (e, Vec::new())),
    }
}

/// The examples `specc predict` reads from `data` for a spec whose source is
/// `like`: a directory's image files (any depth, sorted by path), a CSV's
/// path column (`like`'s, else `path`), or TFRecord Examples' encoded image
/// (`like`'s key, else `image/encoded`). No label is read (labels are 0).
pub fn list_unlabeled(data: &Path, like: &ImageSource) -> Result<Vec<ImageExample>, DataError> {
    let file = data.display().to_string();
    if data.is_dir() {
        let files = image_files_under(data)?;
        if files.is_empty() {
            return Err(DataError::new(
                &file,
                "no image files (.png, .jpg, .jpeg, .gif, .bmp) in the directory",
            ));
        }
        return Ok(files
            .into_iter()
            .map(|f| ImageExample {
                file: f,
                row: None,
                bytes: None,
                label: 0,
            })
            .collect());
    }
    let name = file.to_ascii_lowercase();
    if name.ends_with(".csv") {
        let column = match like {
            ImageSource::Csv { path_column, .. } => path_column.as_str(),
            _ => "path",
        };
        return list_csv(data, column, None);
    }
    let (image_key, compression) = match like {
        ImageSource::TfRecord {
            image_key,
            compression,
            ..
        } => (image_key.as_str(), *compression),
        _ => ("image/encoded", Compression::None),
    };
    let records =
        tfrecord::read_file(data, compression).map_err(|e| DataError::new(&file, e.to_string()))?;
    let mut out = Vec::with_capacity(records.len());
    for (i, r) in records.iter().enumerate() {
        let example = Example::decode(r, i)
            .map_err(|e| DataError::at(&file, Some(i), None, e.to_string()))?;
        match example.features.get(image_key) {
            Some(Feature::BytesList(b)) if b.len() == 1 => out.push(ImageExample {
                file: data.to_path_buf(),
                row: Some(i),
                bytes: Some(b[0].clone()),
                label: 0,
            }),
            _ => {
                return Err(DataError::at(
                    &file,
                    Some(i),
                    Some(image_key),
                    "expected one bytes value (the encoded image)",
                ))
            }
        }
    }
    if out.is_empty() {
        return Err(DataError::new(&file, "no records"));
    }
    Ok(out)
}

/// The image files below `dir` (any depth), sorted by path: how Keras
/// walks a class directory.
fn image_files_under(dir: &Path) -> Result<Vec<PathBuf>, DataError> {
    let mut stack = vec![dir.to_path_buf()];
    let mut files = Vec::new();
    while let Some(d) = stack.pop() {
        for (name, path, is_dir) in sorted_entries(&d)? {
            if is_dir {
                stack.push(path);
            } else if Format::from_extension(&name).is_some() {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

fn sorted_entries(dir: &Path) -> Result<Vec<(String, PathBuf, bool)>, DataError> {
    let file = dir.display().to_string();
    let entries = std::fs::read_dir(dir)
        .map_err(|e| DataError::new(&file, format!("cannot read the directory: {e}")))?;
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| DataError::new(&file, e.to_string()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let is_dir = path.is_dir();
        out.push((name, path, is_dir));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

fn list_directory(dir: &Path) -> Result<(Vec<ImageExample>, Vec<String>), DataError> {
    let file = dir.display().to_string();
    let classes: Vec<(String, PathBuf)> = sorted_entries(dir)?
        .into_iter()
        .filter(|e| e.2)
        .map(|e| (e.0, e.1))
        .collect();
    if classes.is_empty() {
        return Err(DataError::new(
            &file,
            "no class sub-directories (image_dataset_from_directory expects one directory per class)",
        ));
    }
    let mut examples = Vec::new();
    for (label, (_, class_dir)) in classes.iter().enumerate() {
        let files = image_files_under(class_dir)?;
        examples.extend(files.into_iter().map(|f| ImageExample {
            file: f,
            row: None,
            bytes: None,
            label: label as i64,
        }));
    }
    if examples.is_empty() {
        return Err(DataError::new(
            &file,
            "no image files (.png, .jpg, .jpeg, .gif, .bmp) in the class directories",
        ));
    }
    Ok((examples, classes.into_iter().map(|c| c.0).collect()))
}

/// The examples of an image CSV: each row's path (relative to the CSV's
/// directory) and, with `label_column`, its integer label (else 0). Read by
/// the one CSV reader ([`crate::data::csv_file::CsvFile`]: header,
/// quoting, gzip, row limit, line numbers as for every CSV source).
fn list_csv(
    path: &Path,
    path_column: &str,
    label_column: Option<&str>,
) -> Result<Vec<ImageExample>, DataError> {
    let file = path.display().to_string();
    let base = path.parent().unwrap_or(Path::new("."));
    let mut csv =
        crate::data::csv_file::CsvFile::open(path, &file, &crate::data::CsvReadOptions::default())?;
    let columns: Vec<String> = std::iter::once(path_column)
        .chain(label_column)
        .map(str::to_string)
        .collect();
    let plan = csv.plan(&file, [columns.as_slice()])?;
    let (pi, li) = (plan[0][0], plan[0].get(1).copied());
    let mut record = crate::data::csv_file::ByteRecord::new();
    let mut scratch = crate::data::csv_file::ByteRecord::new();
    let mut out = Vec::new();
    while let Some(line) = csv.read_kept(&file, &mut record, &mut scratch)? {
        let text = |i: usize| String::from_utf8_lossy(record.get(i).unwrap_or(b"")).into_owned();
        let p = text(pi);
        let p = p.trim();
        if p.is_empty() {
            return Err(DataError::at(
                &file,
                Some(line),
                Some(path_column),
                "empty path",
            ));
        }
        let label: i64 = match (li, label_column) {
            (Some(li), Some(label_column)) => {
                let label_text = text(li);
                let label_text = label_text.trim();
                label_text.parse().map_err(|_| {
                    DataError::at(
                        &file,
                        Some(line),
                        Some(label_column),
                        format!("`{label_text}` is not an integer label"),
                    )
                })?
            }
            _ => 0,
        };
        out.push(ImageExample {
            file: base.join(p),
            row: Some(line),
            bytes: None,
            label,
        });
    }
    if out.is_empty() {
        return Err(DataError::new(&file, "no rows"));
    }
    Ok(out)
}

fn list_tfrecord(
    paths: &[PathBuf],
    compression: Compression,
    image_key: &str,
    label_key: &str,
) -> Result<Vec<ImageExample>, DataError> {
    let mut out = Vec::new();
    for path in paths {
        let file = path.display().to_string();
        let records = tfrecord::read_file(path, compression)
            .map_err(|e| DataError::new(&file, e.to_string()))?;
        for (i, r) in records.iter().enumerate() {
            let mut example = Example::decode(r, i)
                .map_err(|e| DataError::at(&file, Some(i), None, e.to_string()))?;
            let (bytes, label) = take_image_and_label(&mut example, image_key, label_key)
                .map_err(|(key, m)| DataError::at(&file, Some(i), Some(key), m))?;
            out.push(ImageExample {
                file: path.clone(),
                row: Some(i),
                bytes: Some(bytes),
                label,
            });
        }
    }
    if out.is_empty() {
        return Err(DataError::new(
            &paths
                .first()
                .map_or_else(String::new, |p| p.display().to_string()),
            "no records",
        ));
    }
    Ok(out)
}

impl ImageExample {
    /// The encoded bytes: held (a TFRecord's), or read from the file.
    pub fn read(&self) -> Result<std::borrow::Cow<'_, [u8]>, DataError> {
        match &self.bytes {
            Some(b) => Ok(std::borrow::Cow::Borrowed(b)),
            None => std::fs::read(&self.file)
                .map(std::borrow::Cow::Owned)
                .map_err(|e| self.error(format!("cannot read: {e}"))),
        }
    }

    /// The example as `specc predict` names it: its file, and for a
    /// TFRecord its record (`images.tfrecord#12`).
    pub fn key(&self) -> String {
        match (&self.bytes, self.row) {
            (Some(_), Some(r)) => format!("{}#{r}", self.file.display()),
            _ => self.file.display().to_string(),
        }
    }
}
