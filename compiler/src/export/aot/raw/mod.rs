//! The raw-features entry point of an object (`SYMBOL_raw`): a row's cells
//! as strings in, the model's outputs out, with the spec's feature-column
//! transforms compiled into the object.
//!
//! Owns: [`RawPlan`], what the entry point computes per row, built from the
//! model inputs an object reads ([`RawPlan::build`]): the raw keys a row
//! holds (its cells, in the order the inputs first read them) and, per
//! input, how its values come from those cells ([`RawInput`], [`RawColumn`]);
//! the code itself is emitted by `emit` (over the hashing of `hash`).
//!
//! What is compiled (a CSV text cell as TF 2.21 reads it; the runtime's
//! `feature_column::transform` rules): `numeric_column` of shape 1 (its
//! `default_value` for a blank cell, its normalizer in f64, rounded once to
//! a finite float32), `numeric` and `integer` plain inputs (expression
//! normalizers), `categorical_column_with_hash_bucket` (strings and int64),
//! `_with_identity`, `_with_vocabulary_list` / `_file` (strings and int64,
//! OOV buckets or `default_value`), `bucketized_column` of a shape-1 source
//! and `crossed_column` over raw keys and such columns, with their ids and
//! weights inputs (`indicator_column`, `embedding_column`, `linear_model`).
//! A model with another input (`sep`, weighted or sequence columns,
//! `normalizer = standardize`, images) gets no raw entry point:
//! [`RawPlan::build`] says why.
//!
//! A cell equal to the spec's CSV `na_value` is blank, as the CSV reader
//! makes it; `column_defaults` stay the caller's.
//!
//! Invariants: a row gives every categorical column at most one value (a
//! dense text cell: slot 0, the other slots padding), so the slots and
//! weights are the runtime's; a vocabulary lists each value once, at its
//! first position; numbers are read by the C library's `strtod` only after
//! the word is checked to be a decimal number Rust's `str::parse::<f64>`
//! reads alike (digits, `.`, `+`, `-`, `e`, `E`; both round correctly), in
//! the "C" locale's `.`.

pub mod emit;
pub mod hash;

use specc_runtime::data::{InputKind, InputSpec, NormExpr, Normalizer};
use specc_runtime::feature_column::{
    CategoricalColumn, CrossKey, FeatureInput, KeyDType, NumericColumn, Vocabulary,
};

/// One number read from a cell: a plain `numeric` column, a
/// `numeric_column` of shape 1, a bucketized column's source.
#[derive(Clone, Debug, PartialEq)]
pub struct Number {
    /// The cell (an index into [`RawPlan::keys`]).
    pub key: usize,
    /// A blank cell's value after the normalizer (`None`: a blank cell is
    /// an error; also when the default does not normalize to a finite
    /// float32, as the runtime fails then).
    pub default: Option<f32>,
    pub normalizer: Option<NormExpr>,
}

/// A categorical column over a row's cells: at most one value per row.
#[derive(Clone, Debug, PartialEq)]
pub enum RawColumn {
    /// `Fingerprint64(cell) % buckets` (int64: of the decimal string of the
    /// parsed value); a blank string, an empty or `-1` int64 cell gives none.
    Hash {
        key: usize,
        dtype: KeyDType,
        buckets: u64,
    },
    /// The int64 value; outside `[0, num_buckets)`: `default`, if any.
    Identity {
        key: usize,
        num_buckets: u64,
        default: Option<i64>,
    },
    /// The vocabulary position (`table` indexes [`RawPlan::vocabularies`]),
    /// else `size + Fingerprint64 % oov`, else `default`.
    Vocabulary {
        key: usize,
        dtype: KeyDType,
        table: usize,
        size: i64,
        oov: u64,
        default: i64,
    },
    /// The number of boundaries `<=` the value, in float32.
    Bucketized {
        source: Number,
        boundaries: Vec<f32>,
    },
    /// `FingerprintCat64` from `start` over the leaves, column leaves
    /// first (TF's sparse inputs), then raw keys, each in key order.
    Crossed {
        leaves: Vec<Leaf>,
        start: u64,
        buckets: u64,
    },
}

impl RawColumn {
    /// The runtime's weights transform hashes nothing (`need_ids` false):
    /// a present value of a hash or cross column weighs 1 whatever its id.
    pub fn always_weighted(&self) -> bool {
        matches!(self, RawColumn::Hash { .. } | RawColumn::Crossed { .. })
    }
}

/// One leaf of a cross.
#[derive(Clone, Debug, PartialEq)]
pub enum Leaf {
    /// A raw string key: its cell's fingerprint (a blank cell too).
    Str(usize),
    /// A raw int64 key: the parsed value's bits (an empty cell: no value).
    Int(usize),
    /// A column's id.
    Column(RawColumn),
}

/// How one model input's values come from a row's cells.
#[derive(Clone, Debug, PartialEq)]
pub enum RawInput {
    /// f32 values, one number per entry.
    Numbers(Vec<Number>),
    /// i32 class ids: a whole number in `[0, num_classes)` per cell.
    ClassIds {
        keys: Vec<usize>,
        num_classes: Option<u32>,
    },
    /// A categorical column's ids: slot 0 its value's id (-1 for none),
    /// the other `max_values - 1` slots -1.
    Ids {
        column: RawColumn,
        max_values: usize,
        check_range: bool,
        num_buckets: u64,
    },
    /// The same column's weights: 1 or 0 in slot 0, 0 after.
    Weights {
        column: RawColumn,
        max_values: usize,
    },
}

/// A vocabulary as the object embeds it.
#[derive(Clone, Debug, PartialEq)]
pub enum VocabularyTable {
    Strings(Vec<Vec<u8>>),
    Ints(Vec<i64>),
}

/// What the raw entry point computes: the row's cells and each input.
#[derive(Clone, Debug, PartialEq)]
pub struct RawPlan {
    /// The raw keys, one cell each per row, in this order.
    pub keys: Vec<String>,
    /// One per object input, in row order.
    pub inputs: Vec<RawInput>,
    pub vocabularies: Vec<VocabularyTable>,
    /// The spec's CSV `na_value`: a cell equal to it is missing (blank),
    /// as the CSV reader makes it.
    pub na_value: Option<Vec<u8>>,
}

/// The index of `key` in `keys`, added when new.
fn key_index(keys: &mut Vec<String>, key: &str) -> usize {
    match keys.iter().position(|k| k == key) {
        Some(i) => i,
        None => {
            keys.push(key.to_string());
            keys.len() - 1
        }
    }
}

/// `x` through the normalizer, rounded once, if a finite float32.
pub fn normalize(normalizer: Option<&NormExpr>, x: f64) -> Option<f32> {
    let v = normalizer.map_or(x, |e| e.eval(x));
    let y = v as f32;
    y.is_finite().then_some(y)
}

impl RawPlan {
    /// The plan of `inputs` (the object's inputs, in row order), or why
    /// they cannot be computed from raw cells.
    pub fn build(inputs: &[&InputSpec]) -> Result<RawPlan, String> {
        let mut plan = RawPlan {
            keys: Vec::new(),
            inputs: Vec::new(),
            vocabularies: Vec::new(),
            na_value: None,
        };
        for spec in inputs {
            let input = plan
                .input(spec)
                .map_err(|why| format!("input `{}`: {why}", spec.name))?;
            plan.inputs.push(input);
        }
        Ok(plan)
    }

    fn input(&mut self, spec: &InputSpec) -> Result<RawInput, String> {
        let Some(feature) = &spec.feature else {
            return match (spec.kind, &spec.normalizer) {
                (_, Normalizer::Standardize) => {
                    Err("`normalizer = standardize` is fitted on the training rows".to_string())
                }
                (InputKind::Float, n) => {
                    let normalizer = match n {
                        Normalizer::Expr(e) => Some(e.clone()),
                        _ => None,
                    };
                    Ok(RawInput::Numbers(
                        spec.columns
                            .iter()
                            .map(|c| Number {
                                key: key_index(&mut self.keys, c),
                                default: None,
                                normalizer: normalizer.clone(),
                            })
                            .collect(),
                    ))
                }
                (InputKind::ClassId { num_classes }, _) => Ok(RawInput::ClassIds {
                    keys: spec
                        .columns
                        .iter()
                        .map(|c| key_index(&mut self.keys, c))
                        .collect(),
                    num_classes,
                }),
            };
        };
        match feature {
            FeatureInput::Dense(c) => Ok(RawInput::Numbers(vec![self.number(c)?])),
            FeatureInput::Ids {
                column,
                max_values,
                check_range,
                prune_nonpositive_weights: _,
            } => Ok(RawInput::Ids {
                column: self.column(column)?,
                max_values: *max_values,
                check_range: *check_range,
                num_buckets: column.num_buckets(),
            }),
            FeatureInput::Weights { column, max_values } => Ok(RawInput::Weights {
                column: self.column(column)?,
                max_values: *max_values,
            }),
            FeatureInput::LabelVocabulary { .. } => Err("a label is not a feature".to_string()),
            FeatureInput::SequenceDense { .. } | FeatureInput::SequenceLength { .. } => {
                Err("sequence columns are not compiled into the object".to_string())
            }
        }
    }

    fn number(&mut self, c: &NumericColumn) -> Result<Number, String> {
        if c.shape != 1 {
            return Err(format!(
                "`numeric_column({})` has shape {}: only shape 1 is compiled into the object",
                c.key, c.shape
            ));
        }
        Ok(Number {
            key: key_index(&mut self.keys, &c.key),
            default: c
                .default_value
                .as_ref()
                .and_then(|d| d.first())
                .and_then(|&d| normalize(c.normalizer.as_ref(), d)),
            normalizer: c.normalizer.clone(),
        })
    }

    fn column(&mut self, c: &CategoricalColumn) -> Result<RawColumn, String> {
        let no_sep = |values: &specc_runtime::feature_column::KeyValues, key: &str| {
            if values.sep.is_some() {
                Err(format!(
                    "`{key}` splits its cells (`sep`): not compiled into the object"
                ))
            } else {
                Ok(())
            }
        };
        match c {
            CategoricalColumn::HashBucket {
                key,
                hash_bucket_size,
                dtype,
                values,
            } => {
                no_sep(values, key)?;
                Ok(RawColumn::Hash {
                    key: key_index(&mut self.keys, key),
                    dtype: *dtype,
                    buckets: hash_bucket_size.get(),
                })
            }
            CategoricalColumn::Identity {
                key,
                num_buckets,
                default_value,
                values,
            } => {
                no_sep(values, key)?;
                Ok(RawColumn::Identity {
                    key: key_index(&mut self.keys, key),
                    num_buckets: *num_buckets,
                    default: *default_value,
                })
            }
            CategoricalColumn::Vocabulary {
                key,
                vocabulary,
                num_oov_buckets,
                default_value,
                values,
                ..
            } => {
                no_sep(values, key)?;
                let (dtype, table) = match vocabulary {
                    Vocabulary::Strings(v) => {
                        (KeyDType::String, VocabularyTable::Strings(v.clone()))
                    }
                    Vocabulary::Ints(v) => (KeyDType::Int64, VocabularyTable::Ints(v.clone())),
                };
                self.vocabularies.push(table);
                Ok(RawColumn::Vocabulary {
                    key: key_index(&mut self.keys, key),
                    dtype,
                    table: self.vocabularies.len() - 1,
                    size: vocabulary.len() as i64,
                    oov: *num_oov_buckets,
                    default: *default_value,
                })
            }
            CategoricalColumn::Bucketized { source, boundaries } => Ok(RawColumn::Bucketized {
                source: self.number(source)?,
                boundaries: boundaries.iter().map(|&b| b as f32).collect(),
            }),
            CategoricalColumn::Crossed {
                keys,
                hash_bucket_size,
                hash_key,
            } => {
                let mut flat = Vec::new();
                leaves(keys, &mut flat);
                let mut columns = Vec::new();
                let mut raw = Vec::new();
                for k in flat {
                    match k {
                        CrossKey::Raw { key, dtype, sep } => {
                            if sep.is_some() {
                                return Err(format!(
                                    "the cross key `{key}` splits its cells (`sep`): not compiled into the object"
                                ));
                            }
                            let i = key_index(&mut self.keys, key);
                            raw.push(match dtype {
                                KeyDType::String => Leaf::Str(i),
                                KeyDType::Int64 => Leaf::Int(i),
                            });
                        }
                        CrossKey::Column(c) => columns.push(Leaf::Column(self.column(c)?)),
                    }
                }
                columns.extend(raw);
                Ok(RawColumn::Crossed {
                    leaves: columns,
                    start: specc_runtime::hash::cross_start(hash_key.unwrap_or(0)),
                    buckets: hash_bucket_size.get(),
                })
            }
            CategoricalColumn::Weighted { .. } => Err(format!(
                "`{}` is a weighted column: not compiled into the object",
                c.name()
            )),
        }
    }
}

/// A cross's leaf-level keys, nested crosses flattened (TF's
/// `_collect_leaf_level_keys`).
fn leaves<'c>(keys: &'c [CrossKey], out: &mut Vec<&'c CrossKey>) {
    for k in keys {
        match k {
            CrossKey::Column(c) => match c.as_ref() {
                CategoricalColumn::Crossed { keys, .. } => leaves(keys, out),
                _ => out.push(k),
            },
            CrossKey::Raw { .. } => out.push(k),
        }
    }
}
