//! STRING tensors, the hash table operators and BUCKETIZE: a hand-built
//! model with an initialization subgraph (CALL_ONCE), written and read back
//! equal, and run by the interpreter against values known here (TF Lite's
//! semantics: the first import fills a table and later ones are no-ops,
//! the first of duplicate keys wins, a missing key takes the default,
//! BUCKETIZE is upper_bound with NaN past every boundary).

use ndarray::{ArrayD, IxDyn};
use specc_tflite::model::{string_bytes, string_values};
use specc_tflite::{
    from_bytes, to_bytes, Buffer, BuiltinOperator as B, BuiltinOptions, Interpreter, ModelBuilder,
    Operator, SubGraph, Tensor, TensorType, Value,
};

const TABLE: i32 = 7;

fn table_options() -> BuiltinOptions {
    BuiltinOptions::Hashtable {
        table_id: TABLE,
        key_dtype: TensorType::String,
        value_dtype: TensorType::Int64,
    }
}

fn tensor(name: &str, tensor_type: TensorType, shape: &[i32], buffer: u32) -> Tensor {
    Tensor {
        shape: shape.to_vec(),
        shape_signature: None,
        tensor_type,
        buffer,
        name: name.into(),
        quantization: None,
        is_variable: false,
    }
}

/// words [B] (STRING), x [B] (FLOAT32) -> ids (INT64, default -5),
/// buckets (INT32, boundaries 0, 10, 20), size (INT64); with `init`, the
/// table filled by CALL_ONCE's subgraph: "a" -> 0 (and a later "a" -> 9),
/// "b" -> 1, "" -> -1, then a second import of "a" -> 5 that is a no-op.
fn model(init: bool) -> specc_tflite::Model {
    let mut m = ModelBuilder::new();
    let words = m.tensor("words", TensorType::String, &[-1]);
    let x = m.tensor("x", TensorType::Float32, &[-1]);
    if init {
        m.operator(
            B::CallOnce,
            &[],
            &[],
            BuiltinOptions::CallOnce {
                init_subgraph_index: 1,
            },
        );
    }
    let h = m.tensor("table", TensorType::Resource, &[1]);
    m.operator(B::Hashtable, &[], &[h], table_options());
    let default = m.constant(
        "default",
        TensorType::Int64,
        &[],
        (-5i64).to_le_bytes().to_vec(),
        None,
    );
    let ids = m.tensor("ids", TensorType::Int64, &[-1]);
    m.operator(
        B::HashtableFind,
        &[h, words, default],
        &[ids],
        BuiltinOptions::None,
    );
    let buckets = m.tensor("buckets", TensorType::Int32, &[-1]);
    m.operator(
        B::Bucketize,
        &[x],
        &[buckets],
        BuiltinOptions::Bucketize {
            boundaries: vec![0.0, 10.0, 20.0],
        },
    );
    let size = m.tensor("size", TensorType::Int64, &[1]);
    m.operator(B::HashtableSize, &[h], &[size], BuiltinOptions::None);
    let mut model = m.finish(
        &[("words".into(), words), ("x".into(), x)],
        &[
            ("ids".into(), ids),
            ("buckets".into(), buckets),
            ("size".into(), size),
        ],
    );
    if init {
        let mut buffer = |data: Vec<u8>| {
            model.buffers.push(Buffer { data });
            (model.buffers.len() - 1) as u32
        };
        let keys = buffer(string_bytes(&["a", "b", "", "a"]));
        let values = buffer(
            [0i64, 1, -1, 9]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
        );
        let keys2 = buffer(string_bytes(&["a"]));
        let values2 = buffer(5i64.to_le_bytes().to_vec());
        let code = |model: &mut specc_tflite::Model, b: B| {
            model
                .operator_codes
                .iter()
                .position(|c| c.builtin_code == b)
                .unwrap_or_else(|| {
                    model.operator_codes.push(specc_tflite::OperatorCode {
                        builtin_code: b,
                        custom_code: None,
                        version: 1,
                    });
                    model.operator_codes.len() - 1
                }) as u32
        };
        let (hashtable, import) = (
            code(&mut model, B::Hashtable),
            code(&mut model, B::HashtableImport),
        );
        let op = |opcode_index, inputs: &[i32], outputs: &[i32], options| Operator {
            opcode_index,
            inputs: inputs.to_vec(),
            outputs: outputs.to_vec(),
            options,
        };
        model.subgraphs.push(SubGraph {
            tensors: vec![
                tensor("table", TensorType::Resource, &[1], 0),
                tensor("keys", TensorType::String, &[4], keys),
                tensor("values", TensorType::Int64, &[4], values),
                tensor("keys2", TensorType::String, &[1], keys2),
                tensor("values2", TensorType::Int64, &[1], values2),
            ],
            inputs: vec![],
            outputs: vec![],
            operators: vec![
                op(hashtable, &[], &[0], table_options()),
                op(import, &[0, 1, 2], &[], BuiltinOptions::None),
                op(import, &[0, 3, 4], &[], BuiltinOptions::None),
            ],
            name: "init".into(),
        });
    }
    model.validate().unwrap();
    model
}

fn inputs() -> Vec<Value> {
    let words: Vec<Vec<u8>> = ["b", "a", "", "c", " a"]
        .iter()
        .map(|w| w.as_bytes().to_vec())
        .collect();
    vec![
        Value::Str(ArrayD::from_shape_vec(IxDyn(&[5]), words).unwrap()),
        Value::F32(
            ArrayD::from_shape_vec(IxDyn(&[5]), vec![-1.0, 0.0, 9.5, 20.0, f32::NAN]).unwrap(),
        ),
    ]
}

#[test]
fn string_buffers_round_trip() {
    let words = ["", "male", "", "3rd class", "é"];
    let data = string_bytes(&words);
    // The count, 6 offsets, then 15 bytes.
    assert_eq!(data.len(), 4 + 6 * 4 + 15);
    assert_eq!(&data[..8], &[5, 0, 0, 0, 28, 0, 0, 0]);
    let back = string_values(&data).unwrap();
    assert_eq!(
        back,
        words
            .iter()
            .map(|w| w.as_bytes().to_vec())
            .collect::<Vec<_>>()
    );
    assert_eq!(string_values(&string_bytes::<&str>(&[])), Some(vec![]));
    // A count or an offset past the buffer.
    assert_eq!(string_values(&data[..20]), None);
    let mut bad = data.clone();
    bad[8] = 200;
    assert_eq!(string_values(&bad), None);
}

#[test]
fn tables_and_bucketize_round_trip_and_run() {
    let m = model(true);
    let back = from_bytes(&to_bytes(&m)).unwrap();
    assert_eq!(back, m);
    let out = Interpreter::new(&back).unwrap().invoke(inputs()).unwrap();
    // "a" keeps its first value 0 (not 9, nor the second import's 5); ""
    // is the table's -1; "c" and " a" (not trimmed) take the default.
    let ids: Vec<i64> = match &out[0] {
        Value::I64(a) => a.iter().copied().collect(),
        v => panic!("{}", v.type_name()),
    };
    assert_eq!(ids, [1, 0, -1, -5, -5]);
    // upper_bound over [0, 10, 20]: -1 -> 0, 0 -> 1, 9.5 -> 1, 20 -> 3,
    // NaN -> 3.
    assert_eq!(
        out[1],
        Value::I32(ArrayD::from_shape_vec(IxDyn(&[5]), vec![0, 1, 1, 3, 3]).unwrap())
    );
    assert_eq!(
        out[2],
        Value::I64(ArrayD::from_shape_vec(IxDyn(&[1]), vec![3]).unwrap())
    );
    // Invoking again gives the same (the tables are rebuilt the same).
    let again = Interpreter::new(&back).unwrap().invoke(inputs()).unwrap();
    assert_eq!(again, out);
}

#[test]
fn a_lookup_before_an_import_is_an_error() {
    let m = model(false);
    let err = Interpreter::new(&m).unwrap().invoke(inputs()).unwrap_err();
    assert_eq!(
        err,
        "operator 1 (HASHTABLE_FIND): table 7 is looked up before it is imported"
    );
    // A STRING input given floats.
    let mut wrong = inputs();
    wrong.swap(0, 1);
    let err = Interpreter::new(&model(true))
        .unwrap()
        .invoke(wrong)
        .unwrap_err();
    assert!(err.contains("input `words` is STRING"), "{err}");
}
