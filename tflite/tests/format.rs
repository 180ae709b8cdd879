//! The flatbuffer written and read back, and the interpreter on hand-built
//! models against values computed here.

use ndarray::{arr1, arr2, ArrayD, IxDyn};
use specc_tflite::schema::options_type;
use specc_tflite::{
    from_bytes, run, to_bytes, ActivationFunctionType, BuiltinOperator as B, BuiltinOptions,
    Interpreter, ModelBuilder, Quantization, TensorType, Value,
};

const W: [f32; 6] = [0.5, -1.0, 2.0, 1.5, 0.25, -0.75]; // [2 units, 3 inputs]
const BIAS: [f32; 2] = [0.1, -0.2];

/// x [B, 3] -> FULLY_CONNECTED(W, b, RELU) -> SOFTMAX(beta 2) -> probs;
/// ARG_MAX(fc) -> class; SUM(x, axis 1) -> total.
fn mlp() -> specc_tflite::Model {
    let mut m = ModelBuilder::new();
    let x = m.tensor("x", TensorType::Float32, &[-1, 3]);
    let w = m.constant_f32("W", &[2, 3], &W);
    let b = m.constant_f32("b", &[2], &BIAS);
    let h = m.tensor("h", TensorType::Float32, &[-1, 2]);
    m.operator(
        B::FullyConnected,
        &[x, w, b],
        &[h],
        BuiltinOptions::FullyConnected {
            fused_activation_function: ActivationFunctionType::Relu,
            keep_num_dims: false,
            asymmetric_quantize_inputs: false,
        },
    );
    let probs = m.tensor("probs", TensorType::Float32, &[-1, 2]);
    m.operator(
        B::Softmax,
        &[h],
        &[probs],
        BuiltinOptions::Softmax { beta: 2.0 },
    );
    let axis = m.constant_i32("axis", &[], &[1]);
    let class = m.tensor("class", TensorType::Int32, &[-1]);
    m.operator(
        B::ArgMax,
        &[h, axis],
        &[class],
        BuiltinOptions::ArgMax {
            output_type: TensorType::Int32,
        },
    );
    let axes = m.constant_i32("axes", &[1], &[1]);
    let total = m.tensor("total", TensorType::Float32, &[-1]);
    m.operator(
        B::Sum,
        &[x, axes],
        &[total],
        BuiltinOptions::Reducer { keep_dims: false },
    );
    m.finish(
        &[("x".into(), x)],
        &[
            ("probs".into(), probs),
            ("class".into(), class),
            ("total".into(), total),
        ],
    )
}

fn expected_mlp(x: &[[f32; 3]]) -> (Vec<[f32; 2]>, Vec<i32>, Vec<f32>) {
    let mut probs = Vec::new();
    let mut class = Vec::new();
    let mut total = Vec::new();
    for r in x {
        let h: Vec<f32> = (0..2)
            .map(|u| (BIAS[u] + (0..3).map(|i| W[u * 3 + i] * r[i]).sum::<f32>()).max(0.0))
            .collect();
        let m = h[0].max(h[1]);
        let e: Vec<f32> = h.iter().map(|v| ((v - m) * 2.0).exp()).collect();
        probs.push([e[0] / (e[0] + e[1]), e[1] / (e[0] + e[1])]);
        class.push(if h[1] > h[0] { 1 } else { 0 });
        total.push(r.iter().sum());
    }
    (probs, class, total)
}

#[test]
fn round_trip_keeps_every_field() {
    let mut model = mlp();
    // Quantization parameters (per channel along axis 0) and an int8 tensor.
    model.subgraphs[0].tensors[1].quantization = Some(Quantization {
        min: vec![-1.0, -2.0],
        max: vec![1.0, 2.0],
        scale: vec![0.0078125, 0.015625],
        zero_point: vec![0, -3],
        quantized_dimension: 0,
    });
    let bytes = to_bytes(&model);
    assert_eq!(&bytes[4..8], b"TFL3");
    let back = from_bytes(&bytes).expect("reads");
    assert_eq!(back, model);
    // The same bytes again from what was read.
    assert_eq!(to_bytes(&back), bytes);

    let g = &back.subgraphs[0];
    assert_eq!(g.tensors[0].shape, vec![1, 3]);
    assert_eq!(g.tensors[0].shape_signature, Some(vec![-1, 3]));
    assert_eq!(back.signature_defs[0].signature_key, "serving_default");
    assert_eq!(back.signature_defs[0].outputs[1].name, "class");
    assert_eq!(
        back.metadata_string("min_runtime_version").as_deref(),
        Some("1.14.0")
    );
    let codes: Vec<B> = back.operator_codes.iter().map(|c| c.builtin_code).collect();
    assert_eq!(
        codes,
        vec![B::FullyConnected, B::Softmax, B::ArgMax, B::Sum]
    );
    assert_eq!(
        g.operators[1].options,
        BuiltinOptions::Softmax { beta: 2.0 },
        "SoftmaxOptions.beta"
    );
}

#[test]
fn constant_data_is_16_byte_aligned() {
    let model = mlp();
    let bytes = to_bytes(&model);
    for buf in &model.buffers {
        if buf.data.len() < 8 {
            continue;
        }
        let at = bytes
            .windows(buf.data.len())
            .position(|w| w == buf.data.as_slice())
            .expect("the data is in the file");
        assert_eq!(at % 16, 0, "buffer at byte {at}");
    }
}

#[test]
fn operator_codes_above_127_use_the_placeholder_byte() {
    let mut m = ModelBuilder::new();
    let a = m.tensor("a", TensorType::Float32, &[2]);
    let s = m.constant_i32("shape", &[2], &[3, 2]);
    let y = m.tensor("y", TensorType::Float32, &[3, 2]);
    m.operator(B::BroadcastTo, &[a, s], &[y], BuiltinOptions::None);
    let model = m.finish(&[("a".into(), a)], &[("y".into(), y)]);
    let bytes = to_bytes(&model);
    let back = from_bytes(&bytes).unwrap();
    assert_eq!(back.operator_codes[0].builtin_code, B::BroadcastTo);
    assert_eq!(B::BroadcastTo.code(), 130);
    let out = run(&back, &[arr1(&[1.0f32, 2.0]).into_dyn().view()]).unwrap();
    assert_eq!(
        out[0],
        arr2(&[[1.0f32, 2.0], [1.0, 2.0], [1.0, 2.0]]).into_dyn()
    );
}

#[test]
fn corrupt_files_are_errors_not_panics() {
    let bytes = to_bytes(&mlp());
    assert!(from_bytes(b"not a model")
        .unwrap_err()
        .contains("not a TensorFlow Lite model"));
    // Every truncation and a flipped byte at many positions: an error or a
    // model, never a panic.
    for cut in (0..bytes.len()).step_by(7) {
        let _ = from_bytes(&bytes[..cut]);
    }
    for pos in (0..bytes.len()).step_by(3) {
        let mut b = bytes.clone();
        b[pos] ^= 0xA5;
        let _ = from_bytes(&b);
    }
    let mut b = bytes.clone();
    b.truncate(bytes.len() / 2);
    assert!(from_bytes(&b).is_err());
}

#[test]
fn validate_names_bad_indices() {
    let mut model = mlp();
    model.subgraphs[0].operators[0].inputs[1] = 99;
    let e = model.validate().unwrap_err();
    assert!(e.contains("operator 0's input names tensor 99"), "{e}");
    let mut model = mlp();
    model.buffers[1].data.pop();
    let e = model.validate().unwrap_err();
    assert!(e.contains("tensor 1 `W`"), "{e}");
}

#[test]
fn interpreter_runs_the_mlp() {
    let rows = [
        [1.0f32, 2.0, 3.0],
        [-1.0, 0.5, 0.0],
        [0.0, 0.0, 0.0],
        [3.0, -2.0, 1.0],
    ];
    let model = mlp();
    let x =
        ArrayD::from_shape_vec(IxDyn(&[4, 3]), rows.iter().flatten().copied().collect()).unwrap();
    let out = run(&model, &[x.view()]).unwrap();
    let (probs, class, total) = expected_mlp(&rows);
    assert_eq!(out[0].shape(), &[4, 2]);
    for (i, p) in probs.iter().enumerate() {
        for u in 0..2 {
            let got = out[0][[i, u]];
            assert!(
                (got - p[u]).abs() <= 1e-6,
                "probs[{i}][{u}] {got} vs {}",
                p[u]
            );
        }
    }
    let class_f: Vec<f32> = class.iter().map(|&c| c as f32).collect();
    assert_eq!(out[1].iter().copied().collect::<Vec<_>>(), class_f);
    assert_eq!(out[2].iter().copied().collect::<Vec<_>>(), total);
    // The typed entry point keeps ARG_MAX's INT32.
    let interp = Interpreter::new(&model).unwrap();
    let typed = interp.invoke(vec![Value::F32(x.clone())]).unwrap();
    assert_eq!(
        typed[1],
        Value::I32(ArrayD::from_shape_vec(IxDyn(&[4]), class).unwrap())
    );
}

#[test]
fn interpreter_shape_operators() {
    // x [2, 3] -> TRANSPOSE -> [3, 2] -> RESHAPE [-1] -> [6];
    // CONCATENATION(x, x, axis 0) -> MEAN(axis 0, keep_dims) -> [1, 3];
    // GATHER(x, [1, 0, 1]) -> [3, 3]; SUB(x, MUL(x, 2)) broadcast with a [3] row.
    let mut m = ModelBuilder::new();
    let x = m.tensor("x", TensorType::Float32, &[2, 3]);
    let perm = m.constant_i32("perm", &[2], &[1, 0]);
    let t = m.tensor("t", TensorType::Float32, &[3, 2]);
    m.operator(
        B::Transpose,
        &[x, perm],
        &[t],
        BuiltinOptions::Empty(options_type::TRANSPOSE),
    );
    let shape = m.constant_i32("shape", &[1], &[-1]);
    let flat = m.tensor("flat", TensorType::Float32, &[6]);
    m.operator(
        B::Reshape,
        &[t, shape],
        &[flat],
        BuiltinOptions::Reshape {
            new_shape: vec![-1],
        },
    );
    let cat = m.tensor("cat", TensorType::Float32, &[4, 3]);
    m.operator(
        B::Concatenation,
        &[x, x],
        &[cat],
        BuiltinOptions::Concatenation {
            axis: 0,
            fused_activation_function: ActivationFunctionType::None,
        },
    );
    let axes = m.constant_i32("axes", &[1], &[0]);
    let mean = m.tensor("mean", TensorType::Float32, &[1, 3]);
    m.operator(
        B::Mean,
        &[cat, axes],
        &[mean],
        BuiltinOptions::Reducer { keep_dims: true },
    );
    let ids = m.constant_i32("ids", &[3], &[1, 0, 1]);
    let gathered = m.tensor("gathered", TensorType::Float32, &[3, 3]);
    m.operator(
        B::Gather,
        &[x, ids],
        &[gathered],
        BuiltinOptions::Gather {
            axis: 0,
            batch_dims: 0,
        },
    );
    let row = m.constant_f32("row", &[3], &[10.0, 20.0, 30.0]);
    let diff = m.tensor("diff", TensorType::Float32, &[2, 3]);
    m.operator(
        B::Sub,
        &[row, x],
        &[diff],
        BuiltinOptions::Sub {
            fused_activation_function: ActivationFunctionType::None,
        },
    );
    let model = m.finish(
        &[("x".into(), x)],
        &[
            ("flat".into(), flat),
            ("mean".into(), mean),
            ("gathered".into(), gathered),
            ("diff".into(), diff),
        ],
    );
    let model = from_bytes(&to_bytes(&model)).unwrap();
    let x = arr2(&[[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]]).into_dyn();
    let out = run(&model, &[x.view()]).unwrap();
    assert_eq!(out[0], arr1(&[1.0f32, 4.0, 2.0, 5.0, 3.0, 6.0]).into_dyn());
    assert_eq!(out[1], arr2(&[[2.5f32, 3.5, 4.5]]).into_dyn());
    assert_eq!(
        out[2],
        arr2(&[[4.0f32, 5.0, 6.0], [1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]).into_dyn()
    );
    assert_eq!(
        out[3],
        arr2(&[[9.0f32, 18.0, 27.0], [6.0, 15.0, 24.0]]).into_dyn()
    );
}

#[test]
fn interpreter_errors_name_the_operator() {
    let mut m = ModelBuilder::new();
    let x = m.tensor("x", TensorType::Float32, &[2, 2]);
    let ids = m.tensor("ids", TensorType::Int32, &[1]);
    let y = m.tensor("y", TensorType::Float32, &[1, 2]);
    m.operator(
        B::Gather,
        &[x, ids],
        &[y],
        BuiltinOptions::Gather {
            axis: 0,
            batch_dims: 0,
        },
    );
    let model = m.finish(&[("x".into(), x), ("ids".into(), ids)], &[("y".into(), y)]);
    let x = arr2(&[[1.0f32, 2.0], [3.0, 4.0]]).into_dyn();
    let e = run(&model, &[x.view(), arr1(&[5.0f32]).into_dyn().view()]).unwrap_err();
    assert!(
        e.contains("operator 0 (GATHER): index 5 is out of range [0, 2)"),
        "{e}"
    );
    let e = run(&model, &[x.view(), arr1(&[0.5f32]).into_dyn().view()]).unwrap_err();
    assert!(e.contains("input `ids` is INT32"), "{e}");
    let e = run(&model, &[x.view()]).unwrap_err();
    assert!(e.contains("2 inputs, 1 were given"), "{e}");
    let wrong = arr2(&[[1.0f32, 2.0, 3.0]]).into_dyn();
    let e = run(&model, &[wrong.view(), arr1(&[0.0f32]).into_dyn().view()]).unwrap_err();
    assert!(e.contains("input `x` is FLOAT32 of shape [2, 2]"), "{e}");
}
