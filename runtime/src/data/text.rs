//! How a CSV text cell reads as the values of the raw feature key it holds:
//! the typing half of the one CSV reader ([`super::csv_file`] splits a file
//! into records and fields; this types one field).
//!
//! Owns: [`TextRule`], the rule of each kind of input for a text cell, and
//! [`TextRule::read`] ([`TextRule::read_split`] for a key a column splits
//! by its `sep`); [`parse_spec`], each raw key a model's inputs read with
//! its TF type and rule (what `specc convert` writes, and the type a CSV
//! option's default or filter compares a column as). `specc run` applies the same rules inside its column
//! transforms ([`super::columns`] for plain inputs, the feature columns'
//! raw readers for feature columns); `specc convert` applies them here to
//! write the values `specc run` would read into a `tf.train.Example`, so a
//! CSV file and its conversion read the same.
//!
//! Invariants: each rule calls the very function `specc run` calls for it
//! (no second parser); a missing cell (see [`TextRule::read`]) is
//! [`TextValues::Missing`], never an error; errors are the messages
//! `specc run` gives for the same cell. What a model then requires of a
//! value is not a reading rule and is not checked here: that a float be
//! finite (`inf`, `nan` and `1e39` read as TF reads them: float32 `inf`,
//! `nan`, `inf`), that an id be below the class count.

use super::columns::{check_id, parse_number, read_text_number, Cell};
use super::{InputKind, InputSpec};
use crate::feature_column::{
    make_parse_example_spec, raw, BytesDecoder, FeatureInput, KeyValues, Sep,
};
use crate::io::example::{DType, FeatureSpec};

/// The rule a text cell is read by: the rule of the input that reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextRule {
    /// A plain float input's cell: one number (trimmed, correctly rounded).
    Number,
    /// A plain class-id input's cell: one number that is a whole,
    /// non-negative id (`2`, `2.0`); the class range is the model's.
    ClassId,
    /// A feature column's float key: whitespace-separated numbers (a numeric
    /// column of shape k reads k).
    Numbers,
    /// A feature column's int64 key: one decimal integer, trimmed.
    Int64,
    /// A string key: the bytes as they are.
    String,
}

/// The values of one cell under a [`TextRule`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TextValues<'c> {
    /// No value: TF's default applies.
    Missing,
    /// float32 values, in the `floats` buffer given to [`TextRule::read`].
    Floats,
    /// int64 values, in the `ints` buffer given to [`TextRule::read`].
    Int64s,
    /// One string, the cell itself.
    Bytes(&'c [u8]),
    /// Strings, in the `strings` buffer given to [`TextRule::read_split`].
    BytesList,
}

impl TextRule {
    /// The values of `cell` (the CSV `na_value` already replaced by an
    /// empty cell). Missing: an empty cell, or for the numeric rules one of
    /// whitespace only. Numbers go to `floats` or `ints` (cleared first).
    pub fn read<'c>(
        self,
        cell: &'c [u8],
        floats: &mut Vec<f32>,
        ints: &mut Vec<i64>,
    ) -> Result<TextValues<'c>, String> {
        floats.clear();
        ints.clear();
        let blank = cell.trim_ascii().is_empty();
        Ok(match self {
            TextRule::String if cell.is_empty() => TextValues::Missing,
            TextRule::String => TextValues::Bytes(cell),
            _ if blank => TextValues::Missing,
            TextRule::Number => {
                floats.push(read_text_number(cell)? as f32);
                TextValues::Floats
            }
            TextRule::ClassId => {
                ints.push(i64::from(check_id(parse_number(Cell::Text(cell))?, None)?));
                TextValues::Int64s
            }
            TextRule::Numbers => {
                for word in raw::text_words(cell) {
                    floats.push(read_text_number(word)? as f32);
                }
                TextValues::Floats
            }
            TextRule::Int64 => match raw::ints(Cell::Text(cell))? {
                raw::Ints::One(v) => {
                    ints.push(v);
                    TextValues::Int64s
                }
                _ => TextValues::Missing,
            },
        })
    }
}

impl TextRule {
    /// The values of `cell` for a base column with `sep` (only
    /// [`TextRule::String`] and [`TextRule::Int64`] keys have one): its
    /// pieces, every one kept (none truncated), as the column's transform
    /// reads them; strings go to `strings`, int64s to `ints` (cleared
    /// first). Missing: a cell without pieces (an empty one; a blank one
    /// for int64s).
    pub fn read_split(
        self,
        cell: &[u8],
        sep: &Sep,
        strings: &mut Vec<Vec<u8>>,
        ints: &mut Vec<i64>,
    ) -> Result<TextValues<'static>, String> {
        strings.clear();
        ints.clear();
        let values = KeyValues {
            sep: Some(sep.clone()),
            truncate: None,
        };
        let n = match self {
            TextRule::Int64 => {
                raw::each_int(Cell::Text(cell), &values, false, |_, x| ints.push(x))?
            }
            _ => raw::each_string(Cell::Text(cell), &values, false, |_, s| {
                strings.push(s.to_vec())
            })?,
        };
        Ok(match (n, self) {
            (0, _) => TextValues::Missing,
            (_, TextRule::Int64) => TextValues::Int64s,
            _ => TextValues::BytesList,
        })
    }
}

/// One raw feature key of the parse spec: its type, the rule a CSV cell
/// of it is read by (that of the first input that reads it), and the `sep`
/// its columns split a cell by (the Example then holds the pieces).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseKey {
    pub key: String,
    pub dtype: DType,
    pub rule: TextRule,
    pub sep: Option<Sep>,
    /// A numeric column reads the key's bytes (`decode_raw`,
    /// `parse_tensor`), `shape` values: the Example holds them encoded.
    pub decode: Option<(BytesDecoder, usize)>,
}

/// How a spec writes a key's `sep` in a message.
fn sep_text(sep: &Option<Sep>) -> String {
    match sep {
        None => "whole (no sep)".to_string(),
        Some(s) => format!("split by sep = {}", s.spec_text()),
    }
}

/// How a spec writes a key's bytes decoder in a message.
fn decode_text(d: &Option<(BytesDecoder, usize)>) -> String {
    match d {
        None => "as its values".to_string(),
        Some((d, _)) => format!("through {}", d.function()),
    }
}

/// The keys a model's inputs read, in the order the inputs first name them,
/// each once. A key read as two types, or split by two `sep`s (or split
/// and whole), is an error: an Example holds one list for it.
///
/// This is the `make_parse_example_spec` of the inputs (every key one value,
/// `FixedLenFeature([1])`-like); a multi-valued column's keys are the same.
pub fn parse_spec(inputs: &[InputSpec]) -> Result<Vec<ParseKey>, String> {
    let mut keys: Vec<ParseKey> = Vec::new();
    let mut add =
        |key: &str,
         dtype: DType,
         rule: TextRule,
         sep: Option<Sep>,
         decode: Option<(BytesDecoder, usize)>| match keys.iter().find(|k| k.key == key) {
            Some(k) if k.dtype != dtype => Err(format!(
                "the spec reads the feature '{key}' both as {} and as {}",
                k.dtype.tf_name(),
                dtype.tf_name()
            )),
            Some(k) if k.sep != sep => Err(format!(
                "the spec reads the feature '{key}' both {} and {}: \
                 a tf.train.Example holds one list of its values",
                sep_text(&k.sep),
                sep_text(&sep)
            )),
            Some(k) if k.decode != decode => Err(format!(
                "the spec reads the feature '{key}' both {} and {}: \
                 a tf.train.Example holds one list of its values",
                decode_text(&k.decode),
                decode_text(&decode)
            )),
            Some(_) => Ok(()),
            None => {
                keys.push(ParseKey {
                    key: key.to_string(),
                    dtype,
                    rule,
                    sep,
                    decode,
                });
                Ok(())
            }
        };
    // Keys in the order of the inputs; a feature column's by TF's parse spec
    // (`make_parse_example_spec`, one definition in the runtime), the other
    // inputs' by their element type.
    for input in inputs {
        match &input.feature {
            None => {
                let (dtype, rule) = match input.kind {
                    InputKind::Float => (DType::Float32, TextRule::Number),
                    InputKind::ClassId { .. } => (DType::Int64, TextRule::ClassId),
                };
                for c in &input.columns {
                    add(c, dtype, rule, None, None)?;
                }
            }
            Some(FeatureInput::LabelVocabulary { .. }) => {
                for c in &input.columns {
                    add(c, DType::String, TextRule::String, None, None)?;
                }
            }
            Some(column) => {
                let seps = column.key_seps();
                let decoded = column.decoded_columns();
                for (key, spec) in make_parse_example_spec(std::slice::from_ref(column))? {
                    let dtype = match spec {
                        FeatureSpec::FixedLen { dtype, .. }
                        | FeatureSpec::VarLen { dtype }
                        | FeatureSpec::FixedLenSequence { dtype, .. }
                        | FeatureSpec::Sparse { dtype, .. } => dtype,
                    };
                    let rule = match dtype {
                        DType::Float32 => TextRule::Numbers,
                        DType::Int64 => TextRule::Int64,
                        DType::String => TextRule::String,
                    };
                    let decode = decoded
                        .iter()
                        .find(|c| c.key == key)
                        .and_then(|c| Some((c.decode.clone()?, c.shape)));
                    let mut read = seps.iter().filter(|(k, _)| *k == key).peekable();
                    if read.peek().is_none() {
                        add(&key, dtype, rule, None, decode.clone())?;
                    }
                    for (_, sep) in read {
                        add(&key, dtype, rule, sep.clone(), decode.clone())?;
                    }
                }
            }
        }
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(rule: TextRule, cell: &str) -> Result<(TextValues<'_>, Vec<f32>, Vec<i64>), String> {
        let (mut f, mut i) = (Vec::new(), Vec::new());
        let v = rule.read(cell.as_bytes(), &mut f, &mut i)?;
        Ok((v, f, i))
    }

    #[test]
    fn each_rule_reads_as_the_transforms_do() {
        assert_eq!(
            read(TextRule::Number, " 1.5 ").unwrap(),
            (TextValues::Floats, vec![1.5], vec![])
        );
        assert_eq!(
            read(TextRule::ClassId, "2.0").unwrap(),
            (TextValues::Int64s, vec![], vec![2])
        );
        assert_eq!(
            read(TextRule::Numbers, "1 2.5\t-3").unwrap(),
            (TextValues::Floats, vec![1.0, 2.5, -3.0], vec![])
        );
        assert_eq!(
            read(TextRule::Int64, " -12 ").unwrap(),
            (TextValues::Int64s, vec![], vec![-12])
        );
        assert_eq!(
            read(TextRule::String, " a ").unwrap().0,
            TextValues::Bytes(b" a ")
        );
    }

    #[test]
    fn empty_cells_are_missing_and_blank_ones_for_numbers() {
        for rule in [
            TextRule::Number,
            TextRule::ClassId,
            TextRule::Numbers,
            TextRule::Int64,
        ] {
            assert_eq!(read(rule, "").unwrap().0, TextValues::Missing, "{rule:?}");
            assert_eq!(
                read(rule, " \t").unwrap().0,
                TextValues::Missing,
                "{rule:?}"
            );
        }
        assert_eq!(read(TextRule::String, "").unwrap().0, TextValues::Missing);
        assert_eq!(
            read(TextRule::String, " ").unwrap().0,
            TextValues::Bytes(b" ")
        );
    }

    #[test]
    fn values_a_model_refuses_still_read_as_tf_reads_them() {
        let (_, f, _) = read(TextRule::Number, "1e39").unwrap();
        assert_eq!(f, [f32::INFINITY]);
        let (_, f, _) = read(TextRule::Numbers, "-INF nan").unwrap();
        assert_eq!(f[0], f32::NEG_INFINITY);
        assert!(f[1].is_nan());
        let (_, _, i) = read(TextRule::ClassId, "7").unwrap();
        assert_eq!(i, [7], "the class range is the model's");
    }

    #[test]
    fn split_cells_read_as_the_columns_with_sep_do() {
        let (mut s, mut i) = (Vec::new(), Vec::new());
        let bar = Sep::Delimiter(b"|".to_vec());
        let v = TextRule::String.read_split(b"a||b", &bar, &mut s, &mut i);
        assert_eq!(v, Ok(TextValues::BytesList));
        assert_eq!(s, [b"a".to_vec(), vec![], b"b".to_vec()]);
        let v = TextRule::String.read_split(b"", &bar, &mut s, &mut i);
        assert_eq!((v, s.len()), (Ok(TextValues::Missing), 0));
        let v = TextRule::Int64.read_split(b" 3 -1\t4", &Sep::Whitespace, &mut s, &mut i);
        assert_eq!((v, i.as_slice()), (Ok(TextValues::Int64s), &[3, -1, 4][..]));
        let e = TextRule::Int64.read_split(b"3|x", &bar, &mut s, &mut i);
        assert_eq!(
            e,
            Err("cannot parse \"x\" (value 2 of the cell split by sep = \"|\") as an int64".into())
        );
    }

    #[test]
    fn bad_cells_give_the_transforms_messages() {
        let e = read(TextRule::Number, "abc").unwrap_err();
        assert_eq!(e, "cannot parse \"abc\" as a number");
        let e = read(TextRule::Numbers, "1 x").unwrap_err();
        assert_eq!(e, "cannot parse \"x\" as a number");
        let e = read(TextRule::ClassId, "0.5").unwrap_err();
        assert_eq!(e, "an id must be a non-negative integer, got 0.5");
        let e = read(TextRule::Int64, "1.5").unwrap_err();
        assert_eq!(e, "cannot parse \"1.5\" as an int64");
    }
}

#[cfg(test)]
mod parse_spec_tests {
    use std::num::NonZeroU64;

    use crate::data::Normalizer;
    use crate::feature_column::NumericColumn;
    use crate::feature_column::{CategoricalColumn, CrossKey, KeyDType, Vocabulary};

    use super::*;

    fn input(columns: &[&str], kind: InputKind, feature: Option<FeatureInput>) -> InputSpec {
        InputSpec {
            name: "in".into(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            kind,
            normalizer: Normalizer::None,
            feature,
        }
    }

    fn numeric(key: &str) -> NumericColumn {
        NumericColumn {
            key: key.into(),
            shape: 1,
            default_value: None,
            normalizer: None,
            decode: None,
        }
    }

    fn keys(inputs: &[InputSpec]) -> Vec<(String, &'static str)> {
        parse_spec(inputs)
            .unwrap()
            .into_iter()
            .map(|k| (k.key, k.dtype.tf_name()))
            .collect()
    }

    fn k(key: &str, dtype: &'static str) -> (String, &'static str) {
        (key.to_string(), dtype)
    }

    #[test]
    fn plain_inputs_are_float32_and_ids_int64_each_key_once() {
        let inputs = [
            input(&["y"], InputKind::ClassId { num_classes: None }, None),
            input(&["a", "b"], InputKind::Float, None),
            input(&["b", "a"], InputKind::Float, None),
        ];
        assert_eq!(
            keys(&inputs),
            [k("y", "int64"), k("a", "float32"), k("b", "float32")]
        );
    }

    #[test]
    fn feature_columns_read_their_raw_keys_with_tfs_types() {
        let size = NonZeroU64::new(10).unwrap();
        let hashed = CategoricalColumn::HashBucket {
            key: "city".into(),
            hash_bucket_size: size,
            dtype: KeyDType::String,
            values: Default::default(),
        };
        let crossed = CategoricalColumn::Crossed {
            keys: vec![
                CrossKey::Raw {
                    key: "ad".into(),
                    dtype: KeyDType::Int64,
                    sep: None,
                },
                CrossKey::Column(Box::new(CategoricalColumn::Bucketized {
                    source: numeric("age"),
                    boundaries: vec![18.0, 65.0],
                })),
            ],
            hash_bucket_size: size,
            hash_key: None,
        };
        let weighted = CategoricalColumn::Weighted {
            categorical: Box::new(CategoricalColumn::Vocabulary {
                key: "tag".into(),
                vocabulary: Vocabulary::Ints(vec![3, 4]),
                vocabulary_file: None,
                num_oov_buckets: 0,
                default_value: -1,
                values: Default::default(),
            }),
            weight_feature_key: "tag_w".into(),
        };
        let identity = CategoricalColumn::Identity {
            key: "id".into(),
            num_buckets: 5,
            default_value: None,
            values: Default::default(),
        };
        let ids = |c: &CategoricalColumn| FeatureInput::Ids {
            column: c.clone(),
            max_values: 1,
            check_range: false,
            prune_nonpositive_weights: false,
        };
        let float = InputKind::Float;
        let inputs = [
            input(
                &["label"],
                InputKind::ClassId {
                    num_classes: Some(2),
                },
                Some(FeatureInput::LabelVocabulary {
                    vocabulary: vec![b"No".to_vec(), b"Yes".to_vec()],
                }),
            ),
            input(&["x"], float, Some(FeatureInput::Dense(numeric("x")))),
            input(&["city"], float, Some(ids(&hashed))),
            input(
                &["city"],
                float,
                Some(FeatureInput::Weights {
                    column: hashed.clone(),
                    max_values: 1,
                }),
            ),
            input(&["ad", "age"], float, Some(ids(&crossed))),
            input(&["tag", "tag_w"], float, Some(ids(&weighted))),
            input(&["id"], float, Some(ids(&identity))),
        ];
        assert_eq!(
            keys(&inputs),
            [
                k("label", "string"),
                k("x", "float32"),
                k("city", "string"),
                k("ad", "int64"),
                k("age", "float32"),
                k("tag", "int64"),
                k("tag_w", "float32"),
                k("id", "int64"),
            ]
        );
    }

    #[test]
    fn a_key_read_as_two_types_is_an_error() {
        let inputs = [
            input(&["a"], InputKind::Float, None),
            input(&["a"], InputKind::ClassId { num_classes: None }, None),
        ];
        let e = parse_spec(&inputs).unwrap_err();
        assert!(e.contains("'a' both as float32 and as int64"), "{e}");
    }
}
