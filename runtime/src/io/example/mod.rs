//! `tf.train.Example` and `tf.train.SequenceExample`, `tf.io.parse_example`
//! and `tf.io.parse_sequence_example`.
//!
//! The protos (tensorflow/core/example/{example,feature}.proto) are a
//! handful of small messages, so they are decoded and encoded by hand with
//! [`super::proto`] rather than with a code generator:
//! `Example { Features features = 1 }`, `Features { map<string, Feature>
//! feature = 1 }`, `Feature { oneof kind { BytesList bytes_list = 1;
//! FloatList float_list = 2; Int64List int64_list = 3 } }` (each list:
//! `repeated value = 1`, floats and int64s packed or not),
//! `SequenceExample { Features context = 1; FeatureLists feature_lists = 2 }`,
//! `FeatureLists { map<string, FeatureList> feature_list = 1 }`,
//! `FeatureList { repeated Feature feature = 1 }`.
//!
//! Owns: the message types ([`Example`], [`SequenceExample`], [`Feature`],
//! [`DType`]) and [`ExampleError`]; its parts:
//! - `decode`: the wire bytes into the types (protobuf's merge rules);
//! - `encode`: the one Example encoder, from the types or from borrowed
//!   feature values ([`FeatureRef`], [`encode_example_into`]: what
//!   `specc convert` streams a row through);
//! - `parse`: [`FeatureSpec`] and [`parse_example`] /
//!   [`parse_single_example`] into plain Rust values ([`Parsed`]), and
//!   [`read_examples`] (a TFRecord file of Examples);
//! - `sequence`: [`parse_sequence_example`] /
//!   [`parse_single_sequence_example`] (a SequenceExample's `context` and
//!   `feature_lists`, [`ParsedSequence`]) and [`read_sequence_examples`].
//!
//! Invariants: decoding never panics on any bytes; every error says which
//! record and which feature. Maps are `BTreeMap`s, so encoding writes map
//! entries in key order: the bytes equal protobuf's deterministic
//! serialization (`SerializeToString(deterministic=True)`).

use std::collections::BTreeMap;
use std::fmt;

mod decode;
mod encode;
mod parse;
#[cfg(test)]
mod parse_tests;
mod sequence;

pub use encode::{encode_example_into, FeatureRef};
pub use parse::{
    parse_example, parse_single_example, read_examples, FeatureSpec, Parsed, ReadError, Values,
};
pub use sequence::{
    parse_sequence_example, parse_single_sequence_example, read_sequence_examples, ParsedSequence,
};

/// One feature: the `kind` oneof of `tf.train.Feature`.
#[derive(Clone, Debug, PartialEq)]
pub enum Feature {
    /// A `Feature` with no kind set (decodes as zero values of any type).
    Unset,
    BytesList(Vec<Vec<u8>>),
    FloatList(Vec<f32>),
    Int64List(Vec<i64>),
}

/// `tf.train.Features`: feature name → feature.
pub type Features = BTreeMap<String, Feature>;

/// `tf.train.Example`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Example {
    pub features: Features,
}

/// `tf.train.SequenceExample`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SequenceExample {
    pub context: Features,
    pub feature_lists: BTreeMap<String, Vec<Feature>>,
}

/// A value type of parsing (`tf.float32`, `tf.int64`, `tf.string`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DType {
    Float32,
    Int64,
    String,
}

impl DType {
    /// TF's name (`float32`, `int64`, `string`).
    pub fn tf_name(self) -> &'static str {
        match self {
            DType::Float32 => "float32",
            DType::Int64 => "int64",
            DType::String => "string",
        }
    }

    /// Parses `float32`/`int64`/`string` (with or without `tf.`).
    pub fn from_tf_name(name: &str) -> Option<DType> {
        match name.strip_prefix("tf.").unwrap_or(name) {
            "float32" | "float" => Some(DType::Float32),
            "int64" => Some(DType::Int64),
            "string" => Some(DType::String),
            _ => None,
        }
    }
}

impl Feature {
    /// The number of values.
    pub fn len(&self) -> usize {
        match self {
            Feature::Unset => 0,
            Feature::BytesList(v) => v.len(),
            Feature::FloatList(v) => v.len(),
            Feature::Int64List(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// An empty feature of the same kind (for type checks).
    fn kind_of(f: &Feature) -> Feature {
        match f {
            Feature::Unset => Feature::Unset,
            Feature::BytesList(_) => Feature::BytesList(Vec::new()),
            Feature::FloatList(_) => Feature::FloatList(Vec::new()),
            Feature::Int64List(_) => Feature::Int64List(Vec::new()),
        }
    }

    /// TF's name of the kind (`bytes_list`, `float_list`, `int64_list`).
    pub fn kind(&self) -> &'static str {
        match self {
            Feature::Unset => "kind not set",
            Feature::BytesList(_) => "bytes_list",
            Feature::FloatList(_) => "float_list",
            Feature::Int64List(_) => "int64_list",
        }
    }
}

/// Why a record could not be decoded or parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct ExampleError {
    /// The record (example) number, from 0; `None` when the parse spec
    /// itself is wrong.
    pub record: Option<usize>,
    /// The feature concerned, where there is one.
    pub feature: Option<String>,
    pub what: String,
}

impl fmt::Display for ExampleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.record {
            Some(r) => write!(f, "record {r}")?,
            None => write!(f, "the parse spec")?,
        }
        if let Some(name) = &self.feature {
            write!(f, ", feature '{name}'")?;
        }
        write!(f, ": {}", self.what)
    }
}

impl std::error::Error for ExampleError {}

#[cfg(test)]
pub(crate) mod testdata {
    use super::{Example, Feature};

    /// An Example with every kind of list, an empty one among them.
    pub(crate) fn example() -> Example {
        let mut ex = Example::default();
        ex.features
            .insert("b".into(), Feature::BytesList(vec![b"x".to_vec(), vec![]]));
        ex.features
            .insert("f".into(), Feature::FloatList(vec![1.5, -2.0]));
        ex.features
            .insert("i".into(), Feature::Int64List(vec![-1, i64::MAX]));
        ex.features.insert("e".into(), Feature::FloatList(vec![]));
        ex
    }
}

#[cfg(test)]
mod tests {
    use super::super::proto::Encoder;
    use super::testdata::example;
    use super::*;

    #[test]
    fn examples_and_sequence_examples_round_trip() {
        let ex = example();
        assert_eq!(Example::decode(&ex.encode(), 0).unwrap(), ex);
        let seq = SequenceExample {
            context: ex.features.clone(),
            feature_lists: [(
                "s".to_string(),
                vec![Feature::Int64List(vec![1, 2]), Feature::Unset],
            )]
            .into(),
        };
        assert_eq!(SequenceExample::decode(&seq.encode(), 0).unwrap(), seq);
    }

    #[test]
    fn unpacked_lists_decode_like_packed() {
        // Feature { float_list { value: 1.0 value: 2.0 } } unpacked, and
        // int64_list with an unpacked -1.
        let mut e = Encoder::new();
        e.message(2, |l| {
            l.float(1, 1.0);
            l.float(1, 2.0);
        });
        assert_eq!(
            Feature::decode(&e.finish()).unwrap(),
            Feature::FloatList(vec![1.0, 2.0])
        );
        let mut e = Encoder::new();
        e.message(3, |l| l.int64(1, -1));
        assert_eq!(
            Feature::decode(&e.finish()).unwrap(),
            Feature::Int64List(vec![-1])
        );
    }

    #[test]
    fn no_bytes_make_it_panic() {
        let good = example().encode();
        for cut in 0..good.len() {
            let _ = Example::decode(&good[..cut], 0);
            let _ = SequenceExample::decode(&good[..cut], 0);
        }
        for bit in 0..good.len() * 8 {
            let mut b = good.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            let _ = Example::decode(&b, 0);
            let _ = SequenceExample::decode(&b, 0);
        }
    }
}
