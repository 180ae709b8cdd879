//! `specc_tflite::quantize::set_inference_types` (TF's converter's
//! `inference_input_type`, `inference_output_type`) on a small model built
//! here — x `[-1, 3]` → FULLY_CONNECTED → logits → SOFTMAX (probs) and
//! ARG_MAX (class) — quantized full-integer: the boundary tensors' types,
//! scales and zero points as TF 2.21's converter writes them (int8: the
//! QUANTIZE and DEQUANTIZE removed, the names kept; uint8: a QUANTIZE
//! uint8 → int8 after the input and int8 → uint8 before the output, zero
//! points + 128), the class output INT32 untouched; the integer model
//! computes the float-interface model's values bit for bit; the interpreter's
//! uint8 QUANTIZE (TFLite's `Requantize`) moves the zero point exactly.

use ndarray::{ArrayD, IxDyn};
use specc_tflite::model::Quantization;
use specc_tflite::quantize::{quantize_int8, set_inference_types, Calibration, InferenceType};
use specc_tflite::{
    ActivationFunctionType, BuiltinOperator as B, BuiltinOptions, Interpreter, Model, ModelBuilder,
    TensorType, Value,
};

use InferenceType::{Float32, Int8, Uint8};

fn float_model() -> Model {
    let mut b = ModelBuilder::new();
    let x = b.tensor("x", TensorType::Float32, &[-1, 3]);
    let w = b.constant_f32(
        "w",
        &[4, 3],
        &[
            0.9, -0.4, 0.3, -0.7, 0.8, 0.1, 0.2, 0.5, -0.9, -0.3, -0.2, 0.6,
        ],
    );
    let bias = b.constant_f32("b", &[4], &[0.1, -0.2, 0.05, 0.0]);
    let logits = b.tensor("logits", TensorType::Float32, &[-1, 4]);
    let probs = b.tensor("probs", TensorType::Float32, &[-1, 4]);
    let axis = b.constant_i32("axis", &[1], &[1]);
    let class = b.tensor("class", TensorType::Int32, &[-1]);
    b.operator(
        B::FullyConnected,
        &[x, w, bias],
        &[logits],
        BuiltinOptions::FullyConnected {
            fused_activation_function: ActivationFunctionType::None,
            keep_num_dims: false,
            asymmetric_quantize_inputs: false,
        },
    );
    b.operator(
        B::ArgMax,
        &[logits, axis],
        &[class],
        BuiltinOptions::ArgMax {
            output_type: TensorType::Int32,
        },
    );
    b.operator(
        B::Softmax,
        &[logits],
        &[probs],
        BuiltinOptions::Softmax { beta: 1.0 },
    );
    b.finish(
        &[("x".into(), x)],
        &[("probs".into(), probs), ("class".into(), class)],
    )
}

/// 40 rows in [-2, 3).
fn rows() -> ArrayD<f32> {
    let v: Vec<f32> = (0..120)
        .map(|i| ((i * 37) % 100) as f32 / 20.0 - 2.0)
        .collect();
    ArrayD::from_shape_vec(IxDyn(&[40, 3]), v).unwrap()
}

/// The model quantized full-integer with a float interface.
fn int8_model() -> Model {
    let float = float_model();
    let mut c = Calibration::new(&float);
    c.run(
        &Interpreter::new(&float).unwrap(),
        vec![Value::F32(rows())],
        40,
    )
    .unwrap();
    quantize_int8(&float, Some(&c)).unwrap()
}

fn ops(m: &Model) -> Vec<(B, i32)> {
    m.subgraphs[0]
        .operators
        .iter()
        .map(|o| {
            let code = &m.operator_codes[o.opcode_index as usize];
            (code.builtin_code, code.version)
        })
        .collect()
}

fn per_tensor(q: &Option<Quantization>) -> (f32, i64) {
    let q = q.as_ref().expect("quantized");
    assert_eq!((q.scale.len(), q.zero_point.len()), (1, 1));
    (q.scale[0], q.zero_point[0])
}

/// The signature's tensor `name` (inputs or outputs).
fn signature_tensor<'m>(m: &'m Model, name: &str) -> &'m specc_tflite::Tensor {
    let sig = &m.signature_defs[0];
    let t = sig
        .inputs
        .iter()
        .chain(&sig.outputs)
        .find(|t| t.name == name)
        .unwrap();
    &m.subgraphs[0].tensors[t.tensor_index as usize]
}

/// The float-interface model's QUANTIZE output and DEQUANTIZE input
/// parameters: the input's and the probabilities'.
fn body_params(q: &Model) -> ((f32, i64), (f32, i64)) {
    let g = &q.subgraphs[0];
    let first = &g.operators[0];
    let last = g.operators.last().unwrap();
    assert_eq!(q.builtin(first), Some(B::Quantize));
    assert_eq!(q.builtin(last), Some(B::Dequantize));
    (
        per_tensor(&g.tensors[first.outputs[0] as usize].quantization),
        per_tensor(&g.tensors[last.inputs[0] as usize].quantization),
    )
}

#[test]
fn int8_interface_removes_the_quantize_and_dequantize() {
    let q = int8_model();
    let ((xs, xz), (ps, pz)) = body_params(&q);
    assert_eq!((ps, pz), (1.0 / 256.0, -128));
    let m = set_inference_types(&q, Int8, Int8).unwrap();
    assert_eq!(
        ops(&m),
        vec![(B::FullyConnected, 4), (B::ArgMax, 2), (B::Softmax, 2)]
    );
    assert_eq!(
        m.subgraphs[0].tensors.len(),
        q.subgraphs[0].tensors.len() - 2
    );
    let x = signature_tensor(&m, "x");
    assert_eq!((x.name.as_str(), x.tensor_type), ("x", TensorType::Int8));
    assert_eq!(per_tensor(&x.quantization), (xs, xz));
    let p = signature_tensor(&m, "probs");
    assert_eq!(
        (p.name.as_str(), p.tensor_type),
        ("probs", TensorType::Int8)
    );
    assert_eq!(per_tensor(&p.quantization), (ps, pz));
    let c = signature_tensor(&m, "class");
    assert_eq!(c.tensor_type, TensorType::Int32);
    // The subgraph's inputs and outputs are the signature's tensors.
    let g = &m.subgraphs[0];
    let sig = &m.signature_defs[0];
    assert_eq!(g.inputs, vec![sig.inputs[0].tensor_index as i32]);
    let outs: Vec<i32> = sig.outputs.iter().map(|t| t.tensor_index as i32).collect();
    assert_eq!(g.outputs, outs);
    // The FULLY_CONNECTED reads the input itself.
    assert_eq!(g.operators[0].inputs[0], g.inputs[0]);
}

#[test]
fn uint8_interface_shifts_the_zero_points_by_128() {
    let q = int8_model();
    let ((xs, xz), (ps, pz)) = body_params(&q);
    let m = set_inference_types(&q, Uint8, Uint8).unwrap();
    assert_eq!(
        ops(&m),
        vec![
            (B::Quantize, 1),
            (B::FullyConnected, 4),
            (B::ArgMax, 2),
            (B::Softmax, 2),
            (B::Quantize, 1),
        ]
    );
    assert_eq!(m.subgraphs[0].tensors.len(), q.subgraphs[0].tensors.len());
    let x = signature_tensor(&m, "x");
    assert_eq!(x.tensor_type, TensorType::Uint8);
    assert_eq!(per_tensor(&x.quantization), (xs, xz + 128));
    let p = signature_tensor(&m, "probs");
    assert_eq!(
        (p.name.as_str(), p.tensor_type),
        ("probs", TensorType::Uint8)
    );
    assert_eq!(per_tensor(&p.quantization), (ps, pz + 128));
    assert_eq!(per_tensor(&p.quantization), (1.0 / 256.0, 0));
    assert_eq!(signature_tensor(&m, "class").tensor_type, TensorType::Int32);
}

#[test]
fn float32_interface_is_the_model_unchanged_and_mixed_types_apply_to_each_side() {
    let q = int8_model();
    assert_eq!(set_inference_types(&q, Float32, Float32).unwrap(), q);
    let m = set_inference_types(&q, Int8, Float32).unwrap();
    assert_eq!(signature_tensor(&m, "x").tensor_type, TensorType::Int8);
    assert_eq!(
        signature_tensor(&m, "probs").tensor_type,
        TensorType::Float32
    );
    assert_eq!(ops(&m).last(), Some(&(B::Dequantize, 2)));
    let m = set_inference_types(&q, Float32, Uint8).unwrap();
    assert_eq!(signature_tensor(&m, "x").tensor_type, TensorType::Float32);
    assert_eq!(signature_tensor(&m, "probs").tensor_type, TensorType::Uint8);
    assert_eq!(ops(&m)[0], (B::Quantize, 1));
}

/// Every interface computes the float-interface model's values: the same
/// integers in the body, the same classes, the same dequantized
/// probabilities (`Interpreter::run` quantizes float inputs with the
/// input's parameters and dequantizes the outputs).
#[test]
fn integer_interfaces_compute_the_float_interface_values() {
    let q = int8_model();
    let x = rows();
    let want = specc_tflite::run(&q, &[x.view()]).unwrap();
    for (i, o) in [
        (Int8, Int8),
        (Uint8, Uint8),
        (Int8, Uint8),
        (Uint8, Float32),
    ] {
        let m = set_inference_types(&q, i, o).unwrap();
        let got = specc_tflite::run(&m, &[x.view()]).unwrap();
        assert_eq!(got, want, "{i:?} {o:?}");
    }
    // Given integers: the uint8 input is the int8 one + 128.
    let (i8m, u8m) = (
        set_inference_types(&q, Int8, Int8).unwrap(),
        set_inference_types(&q, Uint8, Uint8).unwrap(),
    );
    let xi = Value::from_f32(x.clone(), signature_tensor(&i8m, "x")).unwrap();
    let xu = Value::from_f32(x, signature_tensor(&u8m, "x")).unwrap();
    let (Value::I8(a), Value::U8(b)) = (&xi, &xu) else {
        panic!("{xi:?} {xu:?}")
    };
    assert!(a
        .iter()
        .zip(b)
        .all(|(&a, &b)| i32::from(a) + 128 == i32::from(b)));
    assert!(a.iter().any(|&v| v != a[[0, 0]]));
    let oi = Interpreter::new(&i8m).unwrap().invoke(vec![xi]).unwrap();
    let ou = Interpreter::new(&u8m).unwrap().invoke(vec![xu]).unwrap();
    let (Value::I8(pi), Value::U8(pu)) = (&oi[0], &ou[0]) else {
        panic!("{oi:?} {ou:?}")
    };
    assert!(pi
        .iter()
        .zip(pu)
        .all(|(&a, &b)| i32::from(a) + 128 == i32::from(b)));
    assert_eq!(oi[1], ou[1]);
}

/// QUANTIZE uint8 → int8 and back with one scale moves every value by the
/// zero points' difference; with another scale it is TFLite's
/// `Requantize` (`MultiplyByQuantizedMultiplier` as LiteRT's build
/// compiles it, gemmlowp's double rounding: half away from zero;
/// saturated).
#[test]
fn quantize_between_uint8_and_int8_requantizes() {
    let quant = |s: f32, z: i64| Quantization {
        scale: vec![s],
        zero_point: vec![z],
        ..Quantization::default()
    };
    let run = |from: TensorType, zf: i64, to: TensorType, so: f32, zo: i64, x: Value| {
        let mut b = ModelBuilder::new();
        let a = b.quantized_tensor("a", from, &[256], quant(0.5, zf));
        let y = b.quantized_tensor("y", to, &[256], quant(so, zo));
        b.operator(B::Quantize, &[a], &[y], BuiltinOptions::None);
        let m = b.finish(&[("a".into(), a)], &[("y".into(), y)]);
        Interpreter::new(&m)
            .unwrap()
            .invoke(vec![x])
            .unwrap()
            .remove(0)
    };
    let all_u8: Vec<u8> = (0..=255).collect();
    let u = Value::U8(ArrayD::from_shape_vec(IxDyn(&[256]), all_u8.clone()).unwrap());
    let Value::I8(y) = run(TensorType::Uint8, 128, TensorType::Int8, 0.5, 0, u.clone()) else {
        panic!()
    };
    assert!(y
        .iter()
        .zip(&all_u8)
        .all(|(&y, &u)| i32::from(y) == i32::from(u) - 128));
    let i = Value::I8(y.clone());
    let Value::U8(back) = run(TensorType::Int8, 0, TensorType::Uint8, 0.5, 128, i) else {
        panic!()
    };
    assert_eq!(back.as_slice().unwrap(), &all_u8[..]);
    // Scale 0.5 to 2.0: (u - 128) / 4 rounded half away from zero, + 100,
    // saturated at 127.
    let Value::I8(y) = run(TensorType::Uint8, 128, TensorType::Int8, 2.0, 100, u) else {
        panic!()
    };
    // u = 0: -128 / 4 = -32; 2: -126 → -63 → -31.5 → -32; 129: 1 → 1 →
    // 0.5 → 1 (twice rounded); 255: 127 / 4 + 100 saturates.
    assert_eq!((y[0], y[2], y[129], y[255]), (68, 68, 101, 127));
    for (&y, &u) in y.iter().zip(&all_u8) {
        let half = (f64::from(i32::from(u) - 128) / 2.0).ceil();
        let want = ((half / 2.0).round() as i32 + 100).clamp(-128, 127);
        assert_eq!(i32::from(y), want, "u = {u}");
    }
}

#[test]
fn a_model_without_a_quantized_boundary_is_refused() {
    let float = float_model();
    let e = set_inference_types(&float, Int8, Int8).unwrap_err();
    assert!(e.contains("input `x` is not read by one QUANTIZE"), "{e}");
    // Outputs only: the float model's probabilities come from a SOFTMAX.
    let e = set_inference_types(&float, Float32, Uint8).unwrap_err();
    assert!(
        e.contains("output `probs` is not computed by a DEQUANTIZE"),
        "{e}"
    );
}
