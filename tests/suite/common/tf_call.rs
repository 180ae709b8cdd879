//! The TF Python calls the golden files record (`"column"` fields such as
//! `crossed_column(['city', bucketized_column(numeric_column('price'),
//! [0.0, 1.0, 5.0])], hash_bucket_size=1000)`), parsed, and turned into the
//! runtime's feature-column descriptions with TF's defaults, so a test takes
//! every name and hyperparameter from the file.
//!
//! Grammar: a call `name(args, key=value)`, lists `[..]`, tuples `(..)`,
//! strings in single or double quotes, ints, floats, dotted names
//! (`tf.int64`), `None`/`True`/`False`, and `lambda x: EXPR` with `+ - * /`,
//! brackets and numbers (a normalizer). Text after the first call is
//! returned as it is (the files add remarks there).
#![allow(dead_code)]

use std::num::NonZeroU64;

use specc_runtime::data::NormExpr;
use specc_runtime::feature_column::{
    CategoricalColumn, CrossKey, KeyDType, NumericColumn, Vocabulary,
};

/// A parsed Python value.
#[derive(Clone, Debug, PartialEq)]
pub enum Py {
    Call {
        name: String,
        args: Vec<Py>,
        kwargs: Vec<(String, Py)>,
    },
    Str(String),
    Int(i64),
    Float(f64),
    List(Vec<Py>),
    Name(String),
    Lambda(NormExpr),
}

impl Py {
    /// A call's argument: positional `i`, or the keyword `key`.
    pub fn arg(&self, i: usize, key: &str) -> Option<&Py> {
        match self {
            Py::Call { args, kwargs, .. } => args
                .get(i)
                .or_else(|| kwargs.iter().find(|(k, _)| k == key).map(|(_, v)| v)),
            _ => None,
        }
    }

    pub fn call_name(&self) -> Option<&str> {
        match self {
            Py::Call { name, .. } => Some(name),
            _ => None,
        }
    }

    pub fn str(&self) -> &str {
        match self {
            Py::Str(s) => s,
            other => panic!("expected a string, got {other:?}"),
        }
    }

    pub fn int(&self) -> i64 {
        match self {
            Py::Int(v) => *v,
            other => panic!("expected an int, got {other:?}"),
        }
    }

    pub fn float(&self) -> f64 {
        match self {
            Py::Int(v) => *v as f64,
            Py::Float(v) => *v,
            other => panic!("expected a number, got {other:?}"),
        }
    }

    pub fn list(&self) -> &[Py] {
        match self {
            Py::List(v) => v,
            other => panic!("expected a list, got {other:?}"),
        }
    }

    fn is_none(&self) -> bool {
        matches!(self, Py::Name(n) if n == "None")
    }
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.at < self.s.len() && self.s[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.at).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) {
        assert!(
            self.eat(c),
            "expected {:?} at {} in {:?}",
            c as char,
            self.at,
            String::from_utf8_lossy(self.s)
        );
    }

    fn ident(&mut self) -> String {
        self.ws();
        let start = self.at;
        while self.at < self.s.len()
            && (self.s[self.at].is_ascii_alphanumeric() || b"_.".contains(&self.s[self.at]))
        {
            self.at += 1;
        }
        String::from_utf8_lossy(&self.s[start..self.at]).into_owned()
    }

    fn number(&mut self) -> Py {
        self.ws();
        let start = self.at;
        while self.at < self.s.len()
            && (self.s[self.at].is_ascii_digit() || b"+-.eE".contains(&self.s[self.at]))
        {
            // A sign only at the start or after an exponent.
            if b"+-".contains(&self.s[self.at])
                && self.at > start
                && !b"eE".contains(&self.s[self.at - 1])
            {
                break;
            }
            self.at += 1;
        }
        let t = std::str::from_utf8(&self.s[start..self.at]).expect("ASCII");
        match t.parse::<i64>() {
            Ok(v) => Py::Int(v),
            Err(_) => Py::Float(t.parse().unwrap_or_else(|_| panic!("bad number {t:?}"))),
        }
    }

    fn seq(&mut self, close: u8) -> Vec<Py> {
        let mut items = Vec::new();
        while !self.eat(close) {
            items.push(self.value());
            if !self.eat(b',') {
                self.expect(close);
                break;
            }
        }
        items
    }

    fn value(&mut self) -> Py {
        match self.peek() {
            Some(q @ (b'\'' | b'"')) => {
                self.at += 1;
                let start = self.at;
                while self.at < self.s.len() && self.s[self.at] != q {
                    self.at += 1;
                }
                let s = String::from_utf8_lossy(&self.s[start..self.at]).into_owned();
                self.at += 1;
                Py::Str(s)
            }
            Some(b'[') => {
                self.at += 1;
                Py::List(self.seq(b']'))
            }
            Some(b'(') => {
                self.at += 1;
                Py::List(self.seq(b')'))
            }
            Some(c) if c.is_ascii_digit() || c == b'-' || c == b'.' => self.number(),
            _ => {
                let name = self.ident();
                assert!(!name.is_empty(), "unexpected text at {}", self.at);
                if name == "lambda" {
                    let var = self.ident();
                    self.expect(b':');
                    return Py::Lambda(self.expr(&var));
                }
                if self.eat(b'(') {
                    let mut args = Vec::new();
                    let mut kwargs = Vec::new();
                    while !self.eat(b')') {
                        let save = self.at;
                        let key = self.ident();
                        if !key.is_empty()
                            && self.peek() == Some(b'=')
                            && self.s.get(self.at + 1) != Some(&b'=')
                        {
                            self.at += 1;
                            kwargs.push((key, self.value()));
                        } else {
                            self.at = save;
                            args.push(self.value());
                        }
                        if !self.eat(b',') {
                            self.expect(b')');
                            break;
                        }
                    }
                    Py::Call { name, args, kwargs }
                } else {
                    Py::Name(name)
                }
            }
        }
    }

    // expr := term (('+'|'-') term)*; term := unary (('*'|'/') unary)*;
    // unary := '-' unary | atom; atom := number | var | '(' expr ')'.
    fn expr(&mut self, var: &str) -> NormExpr {
        let mut a = self.term(var);
        loop {
            if self.eat(b'+') {
                a = NormExpr::Add(Box::new(a), Box::new(self.term(var)));
            } else if self.eat(b'-') {
                a = NormExpr::Sub(Box::new(a), Box::new(self.term(var)));
            } else {
                return a;
            }
        }
    }

    fn term(&mut self, var: &str) -> NormExpr {
        let mut a = self.unary(var);
        loop {
            if self.eat(b'*') {
                a = NormExpr::Mul(Box::new(a), Box::new(self.unary(var)));
            } else if self.eat(b'/') {
                a = NormExpr::Div(Box::new(a), Box::new(self.unary(var)));
            } else {
                return a;
            }
        }
    }

    fn unary(&mut self, var: &str) -> NormExpr {
        if self.eat(b'-') {
            return NormExpr::Neg(Box::new(self.unary(var)));
        }
        if self.eat(b'(') {
            let e = self.expr(var);
            self.expect(b')');
            return e;
        }
        match self.peek() {
            Some(c) if c.is_ascii_digit() || c == b'.' => NormExpr::Const(self.number().float()),
            _ => {
                let name = self.ident();
                assert_eq!(name, var, "unsupported name in a lambda");
                NormExpr::X
            }
        }
    }
}

/// The first Python value of `text` and the text after it.
pub fn parse(text: &str) -> (Py, &str) {
    let mut p = Parser {
        s: text.as_bytes(),
        at: 0,
    };
    let v = p.value();
    (v, &text[p.at..])
}

/// `tf.int64` / `tf.string` (None: not given).
fn key_dtype(v: Option<&Py>) -> Option<KeyDType> {
    match v {
        Some(Py::Name(n)) if n.ends_with("int64") || n.ends_with("int32") => Some(KeyDType::Int64),
        Some(Py::Name(n)) if n.ends_with("string") => Some(KeyDType::String),
        Some(Py::Name(n)) if n == "None" => None,
        None => None,
        Some(other) => panic!("unsupported dtype {other:?}"),
    }
}

/// `numeric_column(key, shape=(1,), default_value=None, dtype, normalizer_fn=None)`.
pub fn numeric_column(v: &Py) -> NumericColumn {
    assert_eq!(v.call_name(), Some("numeric_column"), "{v:?}");
    let key = v.arg(0, "key").expect("key").str().to_string();
    let shape = match v.arg(1, "shape") {
        None => 1,
        Some(Py::Int(k)) => *k as usize,
        Some(Py::List(dims)) => dims.iter().map(|d| d.int() as usize).product(),
        Some(other) => panic!("bad shape {other:?}"),
    };
    let default_value = match v.arg(2, "default_value") {
        None => None,
        Some(d) if d.is_none() => None,
        Some(Py::List(items)) => Some(items.iter().map(Py::float).collect()),
        Some(x) => Some(vec![x.float(); shape]),
    };
    let normalizer = match v.arg(4, "normalizer_fn") {
        None => None,
        Some(Py::Lambda(e)) => Some(e.clone()),
        Some(other) => panic!("unsupported normalizer_fn {other:?}"),
    };
    NumericColumn {
        key,
        shape,
        default_value,
        normalizer,
        decode: None,
    }
}

fn nonzero(v: &Py) -> NonZeroU64 {
    NonZeroU64::new(v.int() as u64).expect("a positive size")
}

/// A categorical column call with TF's defaults. `raw_dtype` gives the
/// dtype of a crossed column's raw string key (the type of its input).
pub fn categorical_column(v: &Py, raw_dtype: &dyn Fn(&str) -> KeyDType) -> CategoricalColumn {
    let name = v.call_name().unwrap_or_else(|| panic!("not a call: {v:?}"));
    match name {
        "categorical_column_with_hash_bucket" => CategoricalColumn::HashBucket {
            key: v.arg(0, "key").expect("key").str().to_string(),
            hash_bucket_size: nonzero(v.arg(1, "hash_bucket_size").expect("size")),
            dtype: key_dtype(v.arg(2, "dtype")).unwrap_or(KeyDType::String),
            values: Default::default(),
        },
        "categorical_column_with_identity" => CategoricalColumn::Identity {
            key: v.arg(0, "key").expect("key").str().to_string(),
            num_buckets: v.arg(1, "num_buckets").expect("num_buckets").int() as u64,
            default_value: v
                .arg(2, "default_value")
                .filter(|d| !d.is_none())
                .map(Py::int),
            values: Default::default(),
        },
        "categorical_column_with_vocabulary_list" => {
            let list = v.arg(1, "vocabulary_list").expect("vocabulary_list").list();
            let dtype = key_dtype(v.arg(2, "dtype")).unwrap_or(match list.first() {
                Some(Py::Int(_)) => KeyDType::Int64,
                _ => KeyDType::String,
            });
            let vocabulary = match dtype {
                KeyDType::String => {
                    Vocabulary::Strings(list.iter().map(|s| s.str().as_bytes().to_vec()).collect())
                }
                KeyDType::Int64 => Vocabulary::Ints(list.iter().map(Py::int).collect()),
            };
            CategoricalColumn::Vocabulary {
                key: v.arg(0, "key").expect("key").str().to_string(),
                vocabulary,
                vocabulary_file: None,
                num_oov_buckets: v.arg(4, "num_oov_buckets").map_or(0, |n| n.int() as u64),
                default_value: v.arg(3, "default_value").map_or(-1, Py::int),
                values: Default::default(),
            }
        }
        "bucketized_column" => CategoricalColumn::Bucketized {
            source: numeric_column(v.arg(0, "source_column").expect("source_column")),
            boundaries: v
                .arg(1, "boundaries")
                .expect("boundaries")
                .list()
                .iter()
                .map(Py::float)
                .collect(),
        },
        "crossed_column" => CategoricalColumn::Crossed {
            keys: v
                .arg(0, "keys")
                .expect("keys")
                .list()
                .iter()
                .map(|k| match k {
                    Py::Str(s) => CrossKey::Raw {
                        key: s.clone(),
                        dtype: raw_dtype(s),
                        sep: None,
                    },
                    c => CrossKey::Column(Box::new(categorical_column(c, raw_dtype))),
                })
                .collect(),
            hash_bucket_size: nonzero(v.arg(1, "hash_bucket_size").expect("hash_bucket_size")),
            hash_key: v
                .arg(2, "hash_key")
                .filter(|d| !d.is_none())
                .map(|k| k.int() as u64),
        },
        "weighted_categorical_column" => CategoricalColumn::Weighted {
            categorical: Box::new(categorical_column(
                v.arg(0, "categorical_column").expect("categorical_column"),
                raw_dtype,
            )),
            weight_feature_key: v
                .arg(1, "weight_feature_key")
                .expect("weight_feature_key")
                .str()
                .to_string(),
        },
        other => panic!("not a categorical column: {other}"),
    }
}
