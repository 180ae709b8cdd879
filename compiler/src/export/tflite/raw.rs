//! Raw inputs (`specc export --format tflite --raw-inputs`): the feature
//! columns' preprocessing put in front of an exported model as TF Lite
//! builtin operators, so the model takes the raw columns of a row.
//!
//! Owns: [`with_raw_inputs`] (the rewrite of an exported model, float or
//! quantized, whose subgraph inputs are the spec's dense inputs), the
//! refusals of the columns TF Lite has no builtins for, and
//! [`RAW_INPUTS_METADATA`].
//!
//! What the model takes: one input per raw column, named by the column, in
//! the order the exported inputs first read them, `[batch]` (`[batch, k]`
//! for a numeric column of shape k): STRING for a
//! `categorical_column_with_vocabulary_list`/`_file` key (the cell's bytes
//! as they are; `""` is a missing cell), FLOAT32 for a `numeric_column`
//! and a `bucketized_column`'s source (NaN is a missing cell).
//!
//! How each input the model read becomes an operator chain (TF's column
//! semantics, as `specc_runtime::feature_column::transform` computes them):
//! - `numeric_column`: a missing value (NaN: `NOT_EQUAL(x, x)`) takes
//!   `default_value` (SELECT_V2), then the `normalizer_fn` as operators
//!   (ADD, SUB, MUL, DIV, NEG, LOG, EXP, SQRT, ABS, SQUARE; `log1p(x)` is
//!   `LOG(x + 1)`), in float32 where the runtime computes in float64 and
//!   rounds once; without a default a missing value stays NaN.
//! - a vocabulary column's ids: HASHTABLE_FIND in a table of the
//!   vocabulary (STRING to INT64, `""` mapped to -1, as TF drops an empty
//!   string), the default `default_value`; CAST to INT32; an id below -1
//!   becomes -1, the padding id. The tables are filled once by an
//!   initialization subgraph (HASHTABLE, HASHTABLE_IMPORT) that CALL_ONCE,
//!   the model's first operator, runs: TF's converter's layout for
//!   `tf.lookup.StaticHashTable`.
//! - a `bucketized_column`'s ids: its source as above, BUCKETIZE with the
//!   boundaries (float32), plus `j * (len(boundaries) + 1)` for value j of
//!   a source of shape k > 1.
//! - a categorical column's weights: 1 where the id is present
//!   (`CAST(GREATER_EQUAL(ids, 0))`), 0 for the padding id.
//!
//! Each chain ends in RESHAPE to the tensor that was the input (renamed
//! `preprocessed/<input>`), so the exported operators run unchanged.
//!
//! Invariants: a column whose ids need hashing (`categorical_column_with_hash_bucket`,
//! `crossed_column`, a vocabulary with `num_oov_buckets`) and any input
//! without a raw lowering here (identity and int64 vocabulary columns,
//! weighted and sequence columns, split cells, plain inputs) is a
//! `tflite-unsupported` diagnostic at the column's span, never a
//! different model; the model passes `Model::validate`.

use std::collections::HashMap;

use specc_grammar::ast::Span;
use specc_grammar::{Code, Diagnostic};
use specc_runtime::data::{InputSpec, NormExpr, NormFunc};
use specc_runtime::feature_column::{CategoricalColumn, FeatureInput, NumericColumn, Vocabulary};
use specc_tflite::model::{f32_bytes, i32_bytes, string_bytes};
use specc_tflite::schema::options_type as ot;
use specc_tflite::{
    Buffer, BuiltinOperator as B, BuiltinOptions, Metadata, Model, Operator, OperatorCode,
    SubGraph, Tensor, TensorMap, TensorType,
};

use super::R;

/// The metadata entry of a raw-input model: the raw columns, one per
/// line, in the signature's order.
pub const RAW_INPUTS_METADATA: &str = "specc_raw_inputs";

/// One input of the exported model and the spec's description of it.
pub struct RawSource<'a> {
    /// The signature name of the input (the graph input's name).
    pub name: &'a str,
    pub spec: &'a InputSpec,
    /// Where the spec declares its column.
    pub span: Span,
}

/// `model` (one subgraph, its inputs the `sources`) taking raw columns
/// instead (see the module doc); `batch`: the fixed batch, if any.
pub fn with_raw_inputs(model: &Model, sources: &[RawSource<'_>], batch: Option<u32>) -> R<Model> {
    let mut e = Edit {
        m: model.clone(),
        ops: Vec::new(),
        init: SubGraph {
            name: "init".into(),
            ..SubGraph::default()
        },
        batch: batch.map_or(-1, |b| b as i32),
        raw: Vec::new(),
        ids: HashMap::new(),
    };
    if e.m.subgraphs.len() != 1 {
        return Err(diagnostic(
            Span::default(),
            "the exported model has more than one subgraph".into(),
        ));
    }
    let mut done = Vec::new();
    for s in sources {
        let Some(t) = e.m.subgraphs[0]
            .inputs
            .iter()
            .copied()
            .find(|&t| e.m.subgraphs[0].tensors[t as usize].name == s.name)
        else {
            return Err(diagnostic(
                s.span,
                format!("`{}` is not an input of the exported model", s.name),
            ));
        };
        e.lower(s, t)?;
        done.push(t);
    }
    e.finish(&done)
}

fn diagnostic(span: Span, message: String) -> Diagnostic {
    Diagnostic::new(Code::TfliteUnsupported, span, message)
}

/// The refusal of input `s` with `why`.
fn refuse(s: &RawSource<'_>, why: &str, hashed: bool) -> Diagnostic {
    let d = diagnostic(
        s.span,
        format!(
            "`{}` cannot take a raw input in TF Lite (--raw-inputs): {why}",
            s.name
        ),
    );
    if hashed {
        d.with_help(
            "TF Lite has no builtin operator that hashes; export without --raw-inputs (the app \
             computes the ids as `.features.json` describes), or with `--format object`, whose \
             `specc_predict_raw` takes a row's raw cells and hashes them as training does",
        )
    } else {
        d.with_help(
            "export without --raw-inputs (the app computes this input as `.features.json` \
             describes), or with `--format object`, whose `specc_predict_raw` takes a row's raw cells",
        )
    }
}

/// The type of a raw column.
#[derive(Clone, Copy, PartialEq)]
enum RawType {
    String,
    Float { width: usize },
}

struct Edit {
    m: Model,
    /// The operators before the exported ones.
    ops: Vec<Operator>,
    /// The initialization subgraph (the tables' contents).
    init: SubGraph,
    batch: i32,
    /// The raw columns: key, type, tensor.
    raw: Vec<(String, RawType, i32)>,
    /// The INT32 ids `[batch, k]` of a categorical column, by its name.
    ids: HashMap<String, i32>,
}

impl Edit {
    fn graph(&mut self) -> &mut SubGraph {
        &mut self.m.subgraphs[0]
    }

    fn push_tensor(g: &mut SubGraph, name: &str, ty: TensorType, dims: &[i32], buffer: u32) -> i32 {
        let dynamic = dims.iter().any(|&d| d < 0);
        g.tensors.push(Tensor {
            shape: dims.iter().map(|&d| if d < 0 { 1 } else { d }).collect(),
            shape_signature: dynamic.then(|| dims.to_vec()),
            tensor_type: ty,
            buffer,
            name: name.into(),
            quantization: None,
            is_variable: false,
        });
        (g.tensors.len() - 1) as i32
    }

    /// An activation tensor of the main subgraph.
    fn tensor(&mut self, name: &str, ty: TensorType, dims: &[i32]) -> i32 {
        Edit::push_tensor(&mut self.m.subgraphs[0], name, ty, dims, 0)
    }

    /// A constant tensor of the main subgraph (`init`: of the
    /// initialization subgraph).
    fn constant(
        &mut self,
        init: bool,
        name: &str,
        ty: TensorType,
        dims: &[i32],
        data: Vec<u8>,
    ) -> i32 {
        self.m.buffers.push(Buffer { data });
        let buffer = (self.m.buffers.len() - 1) as u32;
        let g = if init {
            &mut self.init
        } else {
            &mut self.m.subgraphs[0]
        };
        Edit::push_tensor(g, name, ty, dims, buffer)
    }

    fn scalar_f32(&mut self, name: &str, v: f32) -> i32 {
        self.constant(false, name, TensorType::Float32, &[], f32_bytes(&[v]))
    }

    fn scalar_i32(&mut self, name: &str, v: i32) -> i32 {
        self.constant(false, name, TensorType::Int32, &[], i32_bytes(&[v]))
    }

    fn operator(
        &mut self,
        b: B,
        inputs: &[i32],
        outputs: &[i32],
        options: BuiltinOptions,
    ) -> Operator {
        let codes = &mut self.m.operator_codes;
        let index = codes
            .iter()
            .position(|c| c.builtin_code == b && c.version == 1)
            .unwrap_or_else(|| {
                codes.push(OperatorCode {
                    builtin_code: b,
                    custom_code: None,
                    version: 1,
                });
                codes.len() - 1
            });
        Operator {
            opcode_index: index as u32,
            inputs: inputs.to_vec(),
            outputs: outputs.to_vec(),
            options,
        }
    }

    /// Appends an operator to the preprocessing; returns its output.
    fn op(&mut self, b: B, inputs: &[i32], out: i32, options: BuiltinOptions) -> i32 {
        let op = self.operator(b, inputs, &[out], options);
        self.ops.push(op);
        out
    }

    /// A new tensor like `like` (its dims) of type `ty`, from `b`.
    fn unary(
        &mut self,
        b: B,
        like: i32,
        ty: TensorType,
        name: &str,
        x: &[i32],
        options: BuiltinOptions,
    ) -> i32 {
        let dims = self.dims(like);
        let out = self.tensor(name, ty, &dims);
        self.op(b, x, out, options)
    }

    /// The dims of tensor `t` (-1 for a dynamic batch).
    fn dims(&mut self, t: i32) -> Vec<i32> {
        let t = &self.graph().tensors[t as usize];
        t.shape_signature.clone().unwrap_or_else(|| t.shape.clone())
    }

    /// The raw input of column `key` (created on first use).
    fn raw(&mut self, s: &RawSource<'_>, key: &str, ty: RawType) -> R<i32> {
        if let Some((_, have, t)) = self.raw.iter().find(|(k, _, _)| k == key) {
            if *have != ty {
                return Err(refuse(
                    s,
                    &format!("its column `{key}` is read as both a string and a number, or with two shapes"),
                    false,
                ));
            }
            return Ok(*t);
        }
        let (tt, dims) = match ty {
            RawType::String => (TensorType::String, vec![self.batch]),
            RawType::Float { width: 1 } => (TensorType::Float32, vec![self.batch]),
            RawType::Float { width } => (TensorType::Float32, vec![self.batch, width as i32]),
        };
        let t = self.tensor(key, tt, &dims);
        self.raw.push((key.to_string(), ty, t));
        Ok(t)
    }

    /// Input `s` (tensor `t` of the exported model) from raw columns.
    fn lower(&mut self, s: &RawSource<'_>, t: i32) -> R<()> {
        let want = self.graph().tensors[t as usize].tensor_type;
        let (value, ty) =
            match &s.spec.feature {
                Some(FeatureInput::Dense(col)) => (self.numeric(s, col)?, TensorType::Float32),
                Some(FeatureInput::Ids {
                    column, max_values, ..
                }) => (self.ids(s, column, *max_values)?, TensorType::Int32),
                Some(FeatureInput::Weights { column, max_values }) => {
                    let ids = self.ids(s, column, *max_values)?;
                    let zero = self.scalar_i32(&format!("{}/zero", s.name), 0);
                    let present = self.unary(
                        B::GreaterEqual,
                        ids,
                        TensorType::Bool,
                        &format!("{}/present", s.name),
                        &[ids, zero],
                        BuiltinOptions::None,
                    );
                    let w = self.unary(
                        B::Cast,
                        ids,
                        TensorType::Float32,
                        &format!("{}/value", s.name),
                        &[present],
                        BuiltinOptions::Cast {
                            in_data_type: TensorType::Bool,
                            out_data_type: TensorType::Float32,
                        },
                    );
                    (w, TensorType::Float32)
                }
                Some(FeatureInput::SequenceDense { .. } | FeatureInput::SequenceLength { .. }) => {
                    return Err(refuse(s, "sequence columns have no raw lowering", false))
                }
                Some(FeatureInput::LabelVocabulary { .. }) => {
                    return Err(refuse(
                        s,
                        "a label is not an input of an exported model",
                        false,
                    ))
                }
                None => return Err(refuse(
                    s,
                    "a plain input has no feature column to lower; declare it with numeric_column",
                    false,
                )),
            };
        if want != ty {
            return Err(refuse(
                s,
                &format!("the exported input is {want}, its column gives {ty} (an integer-only model's inputs are quantized)"),
                false,
            ));
        }
        // Renamed: the raw column may have the input's name.
        let name = format!("preprocessed/{}", s.name);
        self.graph().tensors[t as usize].name = name.clone();
        let dims = self.dims(t);
        let shape = self.constant(
            false,
            &format!("{name}/shape"),
            TensorType::Int32,
            &[dims.len() as i32],
            i32_bytes(&dims),
        );
        self.op(
            B::Reshape,
            &[value, shape],
            t,
            BuiltinOptions::Reshape { new_shape: dims },
        );
        Ok(())
    }

    /// A numeric column's values: the raw column, its default for NaN,
    /// its normalizer.
    fn numeric(&mut self, s: &RawSource<'_>, col: &NumericColumn) -> R<i32> {
        let x = self.raw(s, &col.key, RawType::Float { width: col.shape })?;
        let prefix = format!("{}/{}", s.name, col.key);
        let mut x = x;
        if let Some(d) = &col.default_value {
            let values: Vec<f32> = d.iter().map(|&v| v as f32).collect();
            let dims: &[i32] = if col.shape == 1 {
                &[]
            } else {
                &[col.shape as i32]
            };
            let dt = self.constant(
                false,
                &format!("{prefix}/default_value"),
                TensorType::Float32,
                dims,
                f32_bytes(&values),
            );
            let missing = self.unary(
                B::NotEqual,
                x,
                TensorType::Bool,
                &format!("{prefix}/missing"),
                &[x, x],
                BuiltinOptions::None,
            );
            x = self.unary(
                B::SelectV2,
                x,
                TensorType::Float32,
                &format!("{prefix}/with_default"),
                &[missing, dt, x],
                BuiltinOptions::Empty(ot::SELECT_V2),
            );
        }
        if let Some(e) = &col.normalizer {
            x = match self.norm(e, x, &prefix) {
                Operand::Tensor(t) => t,
                Operand::Const(_) => {
                    return Err(refuse(
                        s,
                        &format!("its normalizer `{e}` does not read x"),
                        false,
                    ))
                }
            };
        }
        Ok(x)
    }

    /// The normalizer expression `e` over `x` as operators (constant
    /// subexpressions folded in float64).
    fn norm(&mut self, e: &NormExpr, x: i32, prefix: &str) -> Operand {
        if !reads_x(e) {
            return Operand::Const(e.eval(0.0));
        }
        let n = self.ops.len();
        let name = format!("{prefix}/normalizer_{n}");
        let tensor = |me: &mut Edit, o: Operand| match o {
            Operand::Tensor(t) => t,
            Operand::Const(c) => me.scalar_f32(&format!("{name}/c"), c as f32),
        };
        let f = TensorType::Float32;
        match e {
            NormExpr::X => Operand::Tensor(x),
            NormExpr::Const(c) => Operand::Const(*c),
            NormExpr::Neg(a) => {
                let a = self.norm(a, x, prefix);
                let a = tensor(self, a);
                Operand::Tensor(self.unary(B::Neg, x, f, &name, &[a], BuiltinOptions::None))
            }
            NormExpr::Add(a, b)
            | NormExpr::Sub(a, b)
            | NormExpr::Mul(a, b)
            | NormExpr::Div(a, b) => {
                let (a, b) = (self.norm(a, x, prefix), self.norm(b, x, prefix));
                let (a, b) = (tensor(self, a), tensor(self, b));
                let none = Default::default();
                let (op, options) = match e {
                    NormExpr::Add(..) => (
                        B::Add,
                        BuiltinOptions::Add {
                            fused_activation_function: none,
                        },
                    ),
                    NormExpr::Sub(..) => (
                        B::Sub,
                        BuiltinOptions::Sub {
                            fused_activation_function: none,
                        },
                    ),
                    NormExpr::Mul(..) => (
                        B::Mul,
                        BuiltinOptions::Mul {
                            fused_activation_function: none,
                        },
                    ),
                    _ => (
                        B::Div,
                        BuiltinOptions::Div {
                            fused_activation_function: none,
                        },
                    ),
                };
                Operand::Tensor(self.unary(op, x, f, &name, &[a, b], options))
            }
            NormExpr::Func(func, a) => {
                let a = self.norm(a, x, prefix);
                let mut a = tensor(self, a);
                let (op, options) = match func {
                    NormFunc::Log => (B::Log, BuiltinOptions::None),
                    NormFunc::Log1p => {
                        let one = self.scalar_f32(&format!("{name}/one"), 1.0);
                        a = self.unary(
                            B::Add,
                            x,
                            f,
                            &format!("{name}/plus_one"),
                            &[a, one],
                            BuiltinOptions::Add {
                                fused_activation_function: Default::default(),
                            },
                        );
                        (B::Log, BuiltinOptions::None)
                    }
                    NormFunc::Exp => (B::Exp, BuiltinOptions::Empty(ot::EXP)),
                    NormFunc::Sqrt => (B::Sqrt, BuiltinOptions::None),
                    NormFunc::Abs => (B::Abs, BuiltinOptions::None),
                    NormFunc::Square => (B::Square, BuiltinOptions::None),
                };
                Operand::Tensor(self.unary(op, x, f, &name, &[a], options))
            }
        }
    }

    /// A categorical column's INT32 ids `[batch]` or `[batch, k]` (one
    /// chain per column, shared by its ids and weights inputs).
    fn ids(&mut self, s: &RawSource<'_>, column: &CategoricalColumn, max_values: usize) -> R<i32> {
        let name = column.name();
        if let Some(&t) = self.ids.get(&name) {
            return Ok(t);
        }
        let ids = match column {
            CategoricalColumn::HashBucket { .. } => {
                return Err(refuse(
                    s,
                    "categorical_column_with_hash_bucket hashes its values",
                    true,
                ))
            }
            CategoricalColumn::Crossed { .. } => {
                return Err(refuse(s, "crossed_column hashes the crossed values", true))
            }
            CategoricalColumn::Vocabulary {
                num_oov_buckets, ..
            } if *num_oov_buckets > 0 => {
                return Err(refuse(
                    s,
                    "the vocabulary's num_oov_buckets hash the values outside it",
                    true,
                ))
            }
            CategoricalColumn::Vocabulary { values, .. }
                if values.sep.is_some() || max_values != 1 =>
            {
                return Err(refuse(
                    s,
                    "a cell split into several values (sep) has no TF Lite builtin",
                    false,
                ))
            }
            CategoricalColumn::Vocabulary {
                key,
                vocabulary: Vocabulary::Strings(words),
                default_value,
                ..
            } => self.vocabulary(s, key, words, *default_value)?,
            CategoricalColumn::Vocabulary { .. } => return Err(refuse(
                s,
                "an int64 vocabulary: TF Lite's tables map strings to int64, not int64 to int64",
                false,
            )),
            CategoricalColumn::Bucketized { source, boundaries } => {
                let x = self.numeric(s, source)?;
                let boundaries: Vec<f32> = boundaries.iter().map(|&b| b as f32).collect();
                let n = boundaries.len() as i32 + 1;
                let b = self.unary(
                    B::Bucketize,
                    x,
                    TensorType::Int32,
                    &format!("{name}/bucket"),
                    &[x],
                    BuiltinOptions::Bucketize { boundaries },
                );
                if source.shape == 1 {
                    b
                } else {
                    let offsets: Vec<i32> = (0..source.shape as i32).map(|j| j * n).collect();
                    let o = self.constant(
                        false,
                        &format!("{name}/offsets"),
                        TensorType::Int32,
                        &[source.shape as i32],
                        i32_bytes(&offsets),
                    );
                    self.unary(
                        B::Add,
                        b,
                        TensorType::Int32,
                        &format!("{name}/ids"),
                        &[b, o],
                        BuiltinOptions::Add {
                            fused_activation_function: Default::default(),
                        },
                    )
                }
            }
            CategoricalColumn::Identity { .. } => {
                return Err(refuse(
                    s,
                    "categorical_column_with_identity has no raw lowering (its int64 cells)",
                    false,
                ))
            }
            CategoricalColumn::Weighted { .. } => {
                return Err(refuse(
                    s,
                    "weighted_categorical_column has no raw lowering",
                    false,
                ))
            }
        };
        self.ids.insert(name, ids);
        Ok(ids)
    }

    /// A string vocabulary's ids: its table (filled by the initialization
    /// subgraph), HASHTABLE_FIND, CAST to INT32, the padding id for any
    /// negative default.
    fn vocabulary(
        &mut self,
        s: &RawSource<'_>,
        key: &str,
        words: &[Vec<u8>],
        default: i64,
    ) -> R<i32> {
        let x = self.raw(s, key, RawType::String)?;
        let table_id = (self.init.operators.len() / 2) as i32 + 1;
        let options = BuiltinOptions::Hashtable {
            table_id,
            key_dtype: TensorType::String,
            value_dtype: TensorType::Int64,
        };
        // The table: the vocabulary's positions, `""` (which TF drops) -1.
        let mut keys: Vec<&[u8]> = Vec::with_capacity(words.len() + 1);
        let mut values: Vec<i64> = Vec::with_capacity(words.len() + 1);
        for (i, w) in words.iter().enumerate() {
            if !w.is_empty() {
                keys.push(w);
                values.push(i as i64);
            }
        }
        keys.push(b"");
        values.push(-1);
        let n = keys.len() as i32;
        let kt = self.constant(
            true,
            &format!("{key}/vocabulary"),
            TensorType::String,
            &[n],
            string_bytes(&keys),
        );
        let vt = self.constant(
            true,
            &format!("{key}/ids"),
            TensorType::Int64,
            &[n],
            values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        );
        let h = Edit::push_tensor(
            &mut self.init,
            &format!("{key}/table"),
            TensorType::Resource,
            &[1],
            0,
        );
        let hashtable = self.operator(B::Hashtable, &[], &[h], options.clone());
        let import = self.operator(B::HashtableImport, &[h, kt, vt], &[], BuiltinOptions::None);
        self.init.operators.extend([hashtable, import]);
        // The lookup in the main subgraph.
        let handle = self.tensor(&format!("{key}/table"), TensorType::Resource, &[1]);
        self.op(B::Hashtable, &[], handle, options);
        let d = self.constant(
            false,
            &format!("{key}/default_value"),
            TensorType::Int64,
            &[],
            default.to_le_bytes().to_vec(),
        );
        let found = self.unary(
            B::HashtableFind,
            x,
            TensorType::Int64,
            &format!("{key}/lookup"),
            &[handle, x, d],
            BuiltinOptions::None,
        );
        let mut ids = self.unary(
            B::Cast,
            x,
            TensorType::Int32,
            &format!("{key}/ids"),
            &[found],
            BuiltinOptions::Cast {
                in_data_type: TensorType::Int64,
                out_data_type: TensorType::Int32,
            },
        );
        if default < -1 {
            let pad = self.scalar_i32(&format!("{key}/padding_id"), -1);
            ids = self.unary(
                B::Maximum,
                x,
                TensorType::Int32,
                &format!("{key}/ids_padded"),
                &[ids, pad],
                BuiltinOptions::Empty(ot::MAXIMUM_MINIMUM),
            );
        }
        Ok(ids)
    }

    /// The model: raw inputs, CALL_ONCE and the preprocessing before the
    /// exported operators, the initialization subgraph, the signature and
    /// the metadata.
    fn finish(mut self, replaced: &[i32]) -> R<Model> {
        let tables = !self.init.operators.is_empty();
        let mut ops = Vec::new();
        if tables {
            ops.push(self.operator(
                B::CallOnce,
                &[],
                &[],
                BuiltinOptions::CallOnce {
                    init_subgraph_index: 1,
                },
            ));
        }
        ops.append(&mut self.ops);
        let raw: Vec<(String, i32)> = self.raw.iter().map(|(k, _, t)| (k.clone(), *t)).collect();
        let g = &mut self.m.subgraphs[0];
        ops.append(&mut g.operators);
        g.operators = ops;
        g.inputs.retain(|t| !replaced.contains(t));
        let kept: Vec<i32> = g.inputs.clone();
        g.inputs = raw.iter().map(|r| r.1).chain(kept).collect();
        if tables {
            self.m.subgraphs.push(std::mem::take(&mut self.init));
        }
        for sig in &mut self.m.signature_defs {
            sig.inputs
                .retain(|m| !replaced.contains(&(m.tensor_index as i32)));
            let kept = std::mem::take(&mut sig.inputs);
            sig.inputs = raw
                .iter()
                .map(|(k, t)| TensorMap {
                    name: k.clone(),
                    tensor_index: *t as u32,
                })
                .chain(kept)
                .collect();
        }
        // TF Lite 2.8 runs the table operators and BUCKETIZE builtins (the
        // version TF's converter records for them); a later one the model
        // needs already stays.
        let parse =
            |v: &str| -> Vec<u32> { v.split('.').map(|p| p.parse().unwrap_or(0)).collect() };
        let have = self
            .m
            .metadata_string("min_runtime_version")
            .unwrap_or_default();
        if parse(&have) < vec![2, 8, 0] {
            let mut version = b"2.8.0".to_vec();
            version.resize(16, 0);
            self.set_metadata("min_runtime_version", version);
        }
        let names: Vec<&str> = raw.iter().map(|r| r.0.as_str()).collect();
        self.set_metadata(RAW_INPUTS_METADATA, names.join("\n").into_bytes());
        self.m
            .validate()
            .map_err(|e| diagnostic(Span::default(), format!("internal error: {e}")))?;
        Ok(self.m)
    }

    fn set_metadata(&mut self, name: &str, data: Vec<u8>) {
        self.m.buffers.push(Buffer { data });
        let buffer = (self.m.buffers.len() - 1) as u32;
        match self.m.metadata.iter_mut().find(|m| m.name == name) {
            Some(m) => m.buffer = buffer,
            None => self.m.metadata.push(Metadata {
                name: name.into(),
                buffer,
            }),
        }
    }
}

/// A normalizer's value: an operator's tensor, or a constant not yet made
/// a tensor.
enum Operand {
    Tensor(i32),
    Const(f64),
}

fn reads_x(e: &NormExpr) -> bool {
    match e {
        NormExpr::X => true,
        NormExpr::Const(_) => false,
        NormExpr::Neg(a) | NormExpr::Func(_, a) => reads_x(a),
        NormExpr::Add(a, b) | NormExpr::Sub(a, b) | NormExpr::Mul(a, b) | NormExpr::Div(a, b) => {
            reads_x(a) || reads_x(b)
        }
    }
}
