//! The forward IR lowered to TFLite and run by specc's TFLite interpreter,
//! against the reference interpreter of the IR (`specc_compiler::interp`,
//! float64) with the same parameters and inputs: 1e-5 relative.

use std::collections::HashMap;

use ndarray::{ArrayD, IxDyn};
use specc_compiler::export::tflite::{export_tflite, TfliteExport};
use specc_compiler::interp::{self, Tensor};
use specc_grammar::{Code, SourceFile};
use specc_tflite::BuiltinOperator as B;

const BATCH: usize = 5;

/// Deterministic values in [-1, 1).
pub(crate) fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

struct Case {
    text: String,
    model: specc_compiler::Model,
    params: HashMap<String, ArrayD<f32>>,
}

fn case(body: &str, params: &[(&str, &[usize])]) -> Case {
    case_of(6, body, params)
}

/// A spec whose input `x` has `features` values, `body` binding `logits`.
fn case_of(features: usize, body: &str, params: &[(&str, &[usize])]) -> Case {
    let decls: String = params
        .iter()
        .map(|(n, d)| format!("  {n}: {d:?} = zeros\n"))
        .collect();
    let last = features - 1;
    let text = format!(
        "model t\ndata synthetic(rows = 8, features = {features})\nfeatures {{ x = numeric(x0..x{last}) }}\nlabel label: int\n\
         params {{\n{decls}}}\n{body}\nloss = mean(sparse_softmax_cross_entropy(label, logits))\n\
         optimizer gradient_descent(learning_rate = 0.1)\ntrain {{ batch = 4, steps = 1 }}\n"
    );
    let model =
        specc_compiler::check(&SourceFile::new("t.spec", text.clone())).unwrap_or_else(|d| {
            panic!(
                "{:?}\n{text}",
                d.iter().map(|d| &d.message).collect::<Vec<_>>()
            )
        });
    let params = params
        .iter()
        .enumerate()
        .map(|(k, (n, d))| {
            let len = d.iter().product();
            let v = ArrayD::from_shape_vec(IxDyn(d), values(len, k as u64 + 11)).unwrap();
            (n.to_string(), v)
        })
        .collect();
    Case {
        text,
        model,
        params,
    }
}

/// Exports `outputs`, runs both interpreters on a batch, compares every value.
fn check(c: &Case, outputs: &[&str], batch: Option<u32>) -> specc_tflite::Model {
    let g = &c.model.graph;
    let outs: Vec<(String, specc_compiler::ir::NodeId)> = outputs
        .iter()
        .map(|&o| {
            let node = c
                .model
                .bindings
                .iter()
                .find(|b| b.0 == o)
                .expect("binding")
                .1;
            (o.to_string(), node)
        })
        .collect();
    let request = TfliteExport {
        graph: g,
        params: &c.params,
        inputs: &["x".to_string()],
        outputs: &outs,
        batch,
    };
    let model = export_tflite(&request).expect("exports");
    // Through the file format.
    let model = specc_tflite::from_bytes(&specc_tflite::to_bytes(&model)).expect("reads back");

    let width = g
        .inputs
        .iter()
        .find(|l| l.name == "x")
        .and_then(|l| l.shape.0[1].fixed())
        .expect("x: [B, features]") as usize;
    let x = values(BATCH * width, 99);
    let xa = ArrayD::from_shape_vec(IxDyn(&[BATCH, width]), x.clone()).unwrap();
    let got = specc_tflite::run(&model, &[xa.view()]).expect("runs");

    let inputs: Vec<Tensor> = g
        .inputs
        .iter()
        .map(|l| {
            if l.name == "x" {
                Tensor::new(vec![BATCH, width], x.iter().map(|&v| v as f64).collect())
            } else {
                Tensor::new(vec![BATCH], vec![0.0; BATCH])
            }
        })
        .collect();
    let vars = param_tensors(g, &c.params);
    let env = interp::Env {
        inputs: &inputs,
        vars: &vars,
        batch: BATCH,
        global_step: 0.0,
    };
    let want = interp::eval(g, &env, &outs.iter().map(|o| o.1).collect::<Vec<_>>());
    for ((name, _), (got, want)) in outs.iter().zip(got.iter().zip(&want)) {
        assert_eq!(got.shape(), want.dims.as_slice(), "{name}: shape");
        for (i, (&a, &b)) in got.iter().zip(&want.data).enumerate() {
            let tol = 1e-5 * b.abs().max(1e-2);
            assert!(
                (a as f64 - b).abs() <= tol,
                "{name}[{i}]: tflite {a} vs reference {b}"
            );
        }
    }
    model
}

/// The graph's variables as the reference interpreter's tensors, from
/// `params` by name.
pub(crate) fn param_tensors(
    g: &specc_compiler::ir::Graph,
    params: &HashMap<String, ArrayD<f32>>,
) -> Vec<Tensor> {
    g.vars
        .iter()
        .map(|l| {
            let v = &params[&l.name];
            Tensor::new(v.shape().to_vec(), v.iter().map(|&x| x as f64).collect())
        })
        .collect()
}

pub(crate) fn builtins(m: &specc_tflite::Model) -> Vec<B> {
    m.subgraphs[0]
        .operators
        .iter()
        .map(|op| m.builtin(op).unwrap())
        .collect()
}

#[test]
fn mlp_is_two_fully_connected_operators() {
    let c = case(
        "h = relu(x @ W1 + b1)\nlogits = h @ W2 + b2",
        &[("W1", &[6, 8]), ("b1", &[8]), ("W2", &[8, 3]), ("b2", &[3])],
    );
    let m = check(&c, &["logits"], None);
    assert_eq!(builtins(&m), vec![B::FullyConnected, B::FullyConnected]);
    let g = &m.subgraphs[0];
    // Weights as TFLite wants them: [units, depth], W1 transposed.
    let w = &g.tensors[g.operators[0].inputs[1] as usize];
    assert_eq!(w.shape, vec![8, 6]);
    assert_eq!(w.name, "W1/transpose");
    let w1 = &c.params["W1"];
    let data = specc_tflite::model::f32_values(&m.buffers[w.buffer as usize].data).unwrap();
    assert_eq!(
        data[6 * 3 + 2],
        w1[[2, 3]],
        "row 3 (unit), column 2 (input)"
    );
    assert_eq!(g.tensors[0].shape_signature, Some(vec![-1, 6]));
}

#[test]
fn softmax_log_softmax_mean_and_argmax() {
    let c = case(
        "h = tanh(x @ W1 + b1)\nlogits = h @ W2 + b2\nprobs = softmax(logits)\nlp = log_softmax(logits)\n\
         avg = mean(h, axis = 1)\ncls = argmax(logits)\nall = mean(h)",
        &[("W1", &[6, 8]), ("b1", &[8]), ("W2", &[8, 3]), ("b2", &[3])],
    );
    let m = check(&c, &["probs", "lp", "avg", "cls", "logits"], None);
    let ops = builtins(&m);
    for op in [B::Softmax, B::LogSoftmax, B::Mean, B::ArgMax, B::Tanh] {
        assert!(ops.contains(&op), "{op:?} in {ops:?}");
    }
    // A mean over the batch needs the batch size: fine with a fixed batch.
    let m = check(&c, &["all"], Some(BATCH as u32));
    assert!(builtins(&m).contains(&B::Mean));
}

#[test]
fn elementwise_shapes_and_constants() {
    let c = case(
        "h = x @ W1\nk = sigmoid(h) * h - exp(h / 4) + abs(h) * s\n\
         m = maximum(k, -h) + where(h > 0.5, h, square(h))\n\
         r = reshape(transpose(reshape(m, [-1, 2, 4]), perm = [0, 2, 1]), [-1, 8])\n\
         logits = concat([r, h * 2.0, reciprocal(1.5 + abs(k))], axis = 1) @ W2\n\
         c2 = minimum(2.0 * s, s + 1.0)",
        &[("W1", &[6, 8]), ("s", &[8]), ("W2", &[24, 3])],
    );
    check(&c, &["logits", "m"], None);
    check(&c, &["logits"], Some(BATCH as u32));
}

#[test]
fn unsupported_ops_are_diagnostics_at_their_span() {
    let c = case(
        "h = x @ W1\nlogits = softplus(h) @ W2",
        &[("W1", &[6, 8]), ("W2", &[8, 3])],
    );
    let node = c.model.bindings.iter().find(|b| b.0 == "logits").unwrap().1;
    let e = export_tflite(&TfliteExport {
        graph: &c.model.graph,
        params: &c.params,
        inputs: &["x".to_string()],
        outputs: &[("logits".to_string(), node)],
        batch: None,
    })
    .unwrap_err();
    assert_eq!(e.code, Code::TfliteUnsupported);
    assert!(
        e.message.contains("`softplus` cannot be exported"),
        "{}",
        e.message
    );
    // The caret is under the call.
    assert_eq!(
        &c.text[e.span.start as usize..e.span.end as usize],
        "softplus(h)"
    );

    // A missing parameter value is an error too.
    let c2 = case("logits = x @ W2", &[("W2", &[6, 3])]);
    let node = c2
        .model
        .bindings
        .iter()
        .find(|b| b.0 == "logits")
        .unwrap()
        .1;
    let e = export_tflite(&TfliteExport {
        graph: &c2.model.graph,
        params: &HashMap::new(),
        inputs: &["x".to_string()],
        outputs: &[("logits".to_string(), node)],
        batch: None,
    })
    .unwrap_err();
    assert!(
        e.message.contains("no value for parameter `W2`"),
        "{}",
        e.message
    );
}

// Convolutions and pools: sema's im2col lowerings back to TFLite's
// operators, every value against the reference interpreter.

/// The options of the model's only operator of kind `op`.
fn options_of(m: &specc_tflite::Model, op: B) -> specc_tflite::BuiltinOptions {
    let g = &m.subgraphs[0];
    let mut found = g.operators.iter().filter(|o| m.builtin(o) == Some(op));
    let first = found
        .next()
        .unwrap_or_else(|| panic!("no {op:?} in {:?}", builtins(m)));
    assert!(found.next().is_none(), "one {op:?} in {:?}", builtins(m));
    first.options.clone()
}

/// Images `img [B, h, w, c]` from `x`, `y` the expression under test.
fn image_case(hwc: [usize; 3], y: &str, params: &[(&str, &[usize])]) -> Case {
    let [h, w, c] = hwc;
    let body = format!(
        "img = reshape(x, [B, {h}, {w}, {c}])\ny = {y}\nlogits = reduce_sum(y, axis = [1, 2])"
    );
    case_of(h * w * c, &body, params)
}

fn conv_options(
    padding: specc_tflite::Padding,
    strides: [i32; 2],
    dilations: [i32; 2],
    act: specc_tflite::ActivationFunctionType,
) -> specc_tflite::BuiltinOptions {
    specc_tflite::BuiltinOptions::Conv2D {
        padding,
        stride_h: strides[0],
        stride_w: strides[1],
        fused_activation_function: act,
        dilation_h_factor: dilations[0],
        dilation_w_factor: dilations[1],
    }
}

use specc_tflite::{ActivationFunctionType as Act, BuiltinOptions as O, Padding as P};

#[test]
fn conv2d_stride_2_same_with_odd_padding_is_one_conv_2d() {
    // Height 6, 3 taps, stride 2: SAME pads 1 cell, after the image;
    // width 5 pads 1 on each side. Bias and relu fused.
    let c = image_case(
        [6, 5, 2],
        "relu(bias_add(conv2d(img, K, strides = 2, padding = \"SAME\"), b))",
        &[("K", &[3, 3, 2, 4]), ("b", &[4])],
    );
    let m = check(&c, &["y"], None);
    assert_eq!(builtins(&m), vec![B::Reshape, B::Conv2d]);
    assert_eq!(
        options_of(&m, B::Conv2d),
        conv_options(P::Same, [2, 2], [1, 1], Act::Relu)
    );
    // The filter is TFLite's [out, KH, KW, in].
    let g = &m.subgraphs[0];
    let conv = g
        .operators
        .iter()
        .find(|o| m.builtin(o) == Some(B::Conv2d))
        .unwrap();
    let f = &g.tensors[conv.inputs[1] as usize];
    assert_eq!(
        (f.name.as_str(), f.shape.as_slice()),
        ("K/filter", &[4, 3, 3, 2][..])
    );
    let data = specc_tflite::model::f32_values(&m.buffers[f.buffer as usize].data).unwrap();
    assert_eq!(
        data[((3 * 3 + 2) * 3 + 1) * 2 + 1],
        c.params["K"][[2, 1, 1, 3]]
    );
    check(&c, &["y"], Some(BATCH as u32));
}

#[test]
fn conv2d_explicit_padding_is_pad_then_valid() {
    // Two rows above and none below, one column each side: neither SAME
    // nor VALID.
    let c = image_case(
        [5, 4, 3],
        "conv2d(img, K, strides = [2, 1], padding = [[0, 0], [2, 0], [1, 1], [0, 0]])",
        &[("K", &[3, 2, 3, 2])],
    );
    let m = check(&c, &["y"], None);
    assert_eq!(builtins(&m), vec![B::Reshape, B::Pad, B::Conv2d]);
    assert_eq!(
        options_of(&m, B::Conv2d),
        conv_options(P::Valid, [2, 1], [1, 1], Act::None)
    );
}

#[test]
fn conv2d_with_dilation_and_relu6() {
    let c = image_case(
        [7, 6, 2],
        "relu6(conv2d(img, K, strides = 1, padding = \"SAME\", dilations = 2))",
        &[("K", &[3, 3, 2, 3])],
    );
    let m = check(&c, &["y"], None);
    assert_eq!(builtins(&m), vec![B::Reshape, B::Conv2d]);
    assert_eq!(
        options_of(&m, B::Conv2d),
        conv_options(P::Same, [1, 1], [2, 2], Act::Relu6)
    );
}

#[test]
fn conv1d_is_conv_2d_over_a_height_of_1() {
    let c = case_of(
        40,
        "seq = reshape(x, [B, 10, 4])\ny = conv1d(seq, K, stride = 2, padding = \"VALID\")\nlogits = reduce_sum(y, axis = 1)",
        &[("K", &[3, 4, 5])],
    );
    let m = check(&c, &["y"], None);
    assert!(builtins(&m).contains(&B::Conv2d), "{:?}", builtins(&m));
    assert_eq!(
        options_of(&m, B::Conv2d),
        conv_options(P::Valid, [1, 2], [1, 1], Act::None)
    );
}

#[test]
fn depthwise_conv2d_with_multiplier_2() {
    let c = image_case(
        [5, 5, 3],
        "relu(bias_add(depthwise_conv2d(img, D, strides = 2, padding = \"SAME\"), b))",
        &[("D", &[3, 3, 3, 2]), ("b", &[6])],
    );
    let m = check(&c, &["y"], None);
    assert_eq!(builtins(&m), vec![B::Reshape, B::DepthwiseConv2d]);
    assert_eq!(
        options_of(&m, B::DepthwiseConv2d),
        O::DepthwiseConv2D {
            padding: P::Same,
            stride_w: 2,
            stride_h: 2,
            depth_multiplier: 2,
            fused_activation_function: Act::Relu,
            dilation_w_factor: 1,
            dilation_h_factor: 1,
        }
    );
}

#[test]
fn separable_conv2d_is_depthwise_then_1x1_conv() {
    let c = image_case(
        [4, 5, 2],
        "separable_conv2d(img, D, P, strides = 1, padding = \"VALID\")",
        &[("D", &[2, 3, 2, 2]), ("P", &[1, 1, 4, 3])],
    );
    let m = check(&c, &["y"], None);
    assert_eq!(
        builtins(&m),
        vec![B::Reshape, B::DepthwiseConv2d, B::Conv2d]
    );
    let g = &m.subgraphs[0];
    let conv = g
        .operators
        .iter()
        .find(|o| m.builtin(o) == Some(B::Conv2d))
        .unwrap();
    assert_eq!(g.tensors[conv.inputs[1] as usize].shape, vec![3, 1, 1, 4]);
}

#[test]
fn conv2d_1x1_multiplies_the_images_by_the_kernel() {
    // Stride 1: sema multiplies the images themselves (no patches).
    let c = image_case(
        [3, 4, 5],
        "conv2d(img, K, strides = 1, padding = \"SAME\") + conv2d(img, L, strides = 1, padding = \"VALID\")",
        &[("K", &[1, 1, 5, 2]), ("L", &[1, 1, 5, 2])],
    );
    let m = check(&c, &["y"], None);
    assert_eq!(builtins(&m), vec![B::Reshape, B::Conv2d, B::Conv2d, B::Add]);
    let g = &m.subgraphs[0];
    for op in g
        .operators
        .iter()
        .filter(|o| m.builtin(o) == Some(B::Conv2d))
    {
        assert_eq!(g.tensors[op.inputs[1] as usize].shape, vec![2, 1, 1, 5]);
        assert_eq!(
            g.tensors[op.outputs[0] as usize].shape_signature,
            Some(vec![-1, 3, 4, 2])
        );
        assert_eq!(
            op.options,
            conv_options(P::Valid, [1, 1], [1, 1], Act::None)
        );
    }
    // Stride 2: patches of one tap.
    let c = image_case(
        [5, 4, 5],
        "conv2d(img, K, strides = 2, padding = \"SAME\")",
        &[("K", &[1, 1, 5, 2])],
    );
    let m = check(&c, &["y"], None);
    assert_eq!(
        options_of(&m, B::Conv2d),
        conv_options(P::Valid, [2, 2], [1, 1], Act::None)
    );
}

#[test]
fn average_pool_same_divides_by_the_cells_inside_the_image() {
    let c = image_case(
        [5, 6, 2],
        "avg_pool2d(img, ksize = 3, strides = 2, padding = \"SAME\")",
        &[],
    );
    let m = check(&c, &["y"], None);
    assert_eq!(builtins(&m), vec![B::Reshape, B::AveragePool2d]);
    assert_eq!(
        options_of(&m, B::AveragePool2d),
        O::Pool2D {
            padding: P::Same,
            stride_w: 2,
            stride_h: 2,
            filter_width: 3,
            filter_height: 3,
            fused_activation_function: Act::None,
        }
    );
    // VALID, every window whole.
    let c = image_case(
        [5, 6, 2],
        "avg_pool2d(img, ksize = [2, 3], strides = [1, 3], padding = \"VALID\")",
        &[],
    );
    assert_eq!(
        builtins(&check(&c, &["y"], None)),
        vec![B::Reshape, B::AveragePool2d]
    );
}

#[test]
fn max_pool_with_overlapping_windows_and_the_tiling_view() {
    let c = image_case(
        [7, 6, 3],
        "max_pool2d(img, ksize = 3, strides = 2, padding = \"SAME\")",
        &[],
    );
    let m = check(&c, &["y"], None);
    assert_eq!(builtins(&m), vec![B::Reshape, B::MaxPool2d]);
    assert_eq!(
        options_of(&m, B::MaxPool2d),
        O::Pool2D {
            padding: P::Same,
            stride_w: 2,
            stride_h: 2,
            filter_width: 3,
            filter_height: 3,
            fused_activation_function: Act::None,
        }
    );
    // An explicit padding equal to SAME's (7 rows, windows of 3 by 2: one
    // cell on each side; 6 columns: none before, one after) is SAME.
    let c = image_case(
        [7, 6, 3],
        "max_pool2d(img, ksize = 3, strides = 2, padding = [[0, 0], [1, 1], [0, 1], [0, 0]])",
        &[],
    );
    let m = check(&c, &["y"], None);
    assert!(matches!(
        options_of(&m, B::MaxPool2d),
        O::Pool2D {
            padding: P::Same,
            ..
        }
    ));
    // 2×2 windows tiling a 6×4 image: sema's reshape/transpose view.
    let c = image_case(
        [6, 4, 2],
        "max_pool2d(img, ksize = 2, strides = 2, padding = \"VALID\")",
        &[],
    );
    let m = check(&c, &["y"], None);
    assert_eq!(builtins(&m), vec![B::Reshape, B::MaxPool2d]);
    assert!(matches!(
        options_of(&m, B::MaxPool2d),
        O::Pool2D {
            padding: P::Valid,
            filter_width: 2,
            filter_height: 2,
            ..
        }
    ));
}

#[test]
fn conv2d_transpose_is_transpose_conv() {
    let c = image_case(
        [3, 4, 3],
        "conv2d_transpose(img, T, [5, 6, 8, 2], strides = 2, padding = \"SAME\")",
        &[("T", &[3, 3, 2, 3])],
    );
    // The dynamic batch: the output shape from the input's (SHAPE).
    let m = check(&c, &["y"], None);
    assert_eq!(
        builtins(&m),
        vec![B::Reshape, B::Shape, B::Mul, B::Add, B::TransposeConv]
    );
    assert_eq!(
        options_of(&m, B::TransposeConv),
        O::TransposeConv {
            padding: P::Same,
            stride_w: 2,
            stride_h: 2,
            fused_activation_function: Act::None,
        }
    );
    let m = check(&c, &["y"], Some(BATCH as u32));
    assert_eq!(builtins(&m), vec![B::Reshape, B::TransposeConv]);
    let c = image_case(
        [3, 4, 3],
        "conv2d_transpose(img, T, [5, 7, 9, 2], strides = 2, padding = \"VALID\")",
        &[("T", &[3, 3, 2, 3])],
    );
    check(&c, &["y"], None);
}

/// The diagnostic of exporting `y`.
fn refused(c: &Case) -> specc_grammar::Diagnostic {
    let node = c.model.bindings.iter().find(|b| b.0 == "y").unwrap().1;
    export_tflite(&TfliteExport {
        graph: &c.model.graph,
        params: &c.params,
        inputs: &["x".to_string()],
        outputs: &[("y".to_string(), node)],
        batch: None,
    })
    .unwrap_err()
}

#[test]
fn what_tflite_cannot_express_is_refused_at_its_call() {
    // TRANSPOSE_CONV has no dilation.
    let c = image_case(
        [4, 4, 3],
        "atrous_conv2d_transpose(img, T, [5, 4, 4, 2], rate = 2, padding = \"SAME\")",
        &[("T", &[3, 3, 2, 3])],
    );
    let e = refused(&c);
    assert_eq!(e.code, Code::TfliteUnsupported);
    assert!(
        e.message.contains("TRANSPOSE_CONV has no dilation"),
        "{}",
        e.message
    );
    assert_eq!(
        &c.text[e.span.start as usize..e.span.end as usize],
        "atrous_conv2d_transpose(img, T, [5, 4, 4, 2], rate = 2, padding = \"SAME\")"
    );
    // A max pool's explicit padding that is neither SAME nor VALID: TF's
    // converter refuses it too, and PAD's zeros could win a max.
    let c = image_case(
        [5, 5, 2],
        "max_pool2d(img, ksize = 3, strides = 2, padding = [[0, 0], [2, 0], [1, 1], [0, 0]])",
        &[],
    );
    let e = refused(&c);
    assert_eq!(e.code, Code::TfliteUnsupported);
    assert!(
        e.message
            .contains("MAX_POOL_2D takes SAME or VALID padding"),
        "{}",
        e.message
    );
    assert_eq!(
        &c.text[e.span.start as usize..e.span.end as usize],
        "max_pool2d(img, ksize = 3, strides = 2, padding = [[0, 0], [2, 0], [1, 1], [0, 0]])"
    );
    // A convolution by a kernel computed from the input.
    let c = image_case(
        [4, 4, 1],
        "conv2d(img, reshape(reduce_sum(x, axis = 0)[0:9], [3, 3, 1, 1]), strides = 1, padding = \"VALID\")",
        &[],
    );
    let e = refused(&c);
    assert_eq!(e.code, Code::TfliteUnsupported);
    assert!(
        e.message.contains("not a convolution by a constant kernel"),
        "{}",
        e.message
    );
}

/// The values of constant tensor `name` of `m`, as f32 (float or int8).
fn constant(m: &specc_tflite::Model, name: &str) -> (specc_tflite::Tensor, Vec<f32>) {
    let t = m.subgraphs[0]
        .tensors
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no tensor {name}"))
        .clone();
    let data = &m.buffers[t.buffer as usize].data;
    let v = match t.tensor_type {
        specc_tflite::TensorType::Int8 => data.iter().map(|&b| f32::from(b as i8)).collect(),
        _ => specc_tflite::model::f32_values(data).unwrap(),
    };
    (t, v)
}

/// `--quantize dynamic` (`specc_tflite::quantize::quantize_dynamic`) of the
/// convolutions: the filters of CONV_2D, DEPTHWISE_CONV_2D and
/// TRANSPOSE_CONV with at least 1024 values become int8 per output channel
/// (scale `max|w| / 127` of each channel along the output-channel dimension,
/// values `round(w / scale)`), the operators TFLite's hybrid kernels
/// (versions 5, 6 and 2), a smaller filter and the biases stay float; the
/// hybrid outputs differ from the float model's by no more than the
/// quantization allows: each of a output's `n` products `x · w` moves by
/// at most `|w| · s_in/2 + |x| · s_w/2 + s_in · s_w/4` (half an input step of
/// its image, half a weight step of its channel).
#[test]
fn dynamic_range_quantizes_large_convolution_filters_per_output_channel() {
    use specc_tflite::quantize::quantize_dynamic;
    let body = "img = reshape(x, [B, 4, 4, 16])\n\
        y1 = relu(bias_add(conv2d(img, K, strides = 1, padding = \"SAME\"), b))\n\
        y2 = depthwise_conv2d(img, D, strides = 1, padding = \"VALID\")\n\
        y3 = conv2d_transpose(img, T, [5, 8, 8, 8], strides = 2, padding = \"SAME\")\n\
        y4 = conv2d(img, S, strides = 1, padding = \"VALID\")\n\
        logits = reduce_sum(y1, axis = [1, 2])";
    let c = case_of(
        256,
        body,
        &[
            ("K", &[3, 3, 16, 8]),
            ("b", &[8]),
            ("D", &[3, 3, 16, 8]),
            ("T", &[3, 3, 8, 16]),
            ("S", &[2, 2, 16, 4]),
        ],
    );
    let outputs = ["y1", "y2", "y3", "y4"];
    let float = check(&c, &outputs, None);
    let (dynamic, n) = quantize_dynamic(&float).unwrap();
    assert_eq!(n, 3);
    let versions: Vec<(B, i32)> = dynamic.subgraphs[0]
        .operators
        .iter()
        .filter(|o| {
            matches!(
                dynamic.builtin(o),
                Some(B::Conv2d | B::DepthwiseConv2d | B::TransposeConv)
            )
        })
        .map(|o| {
            let code = &dynamic.operator_codes[o.opcode_index as usize];
            (code.builtin_code, code.version)
        })
        .collect();
    assert_eq!(
        versions,
        [
            (B::Conv2d, 5),
            (B::DepthwiseConv2d, 6),
            (B::TransposeConv, 2),
            (B::Conv2d, 1)
        ]
    );
    for (name, axis, channels) in [("K/filter", 0, 8), ("D/filter", 3, 128), ("T/filter", 0, 8)] {
        let (t, q) = constant(&dynamic, name);
        let (f, w) = constant(&float, name);
        assert_eq!(t.tensor_type, specc_tflite::TensorType::Int8, "{name}");
        assert_eq!(t.shape, f.shape);
        let quant = t.quantization.unwrap();
        assert_eq!(quant.quantized_dimension as usize, axis, "{name}");
        assert_eq!(quant.zero_point, vec![0; channels]);
        let inner: usize = t.shape[axis + 1..].iter().map(|&d| d as usize).product();
        let channel = |k: usize| (k / inner) % channels;
        let mut max = vec![0f32; channels];
        for (k, &v) in w.iter().enumerate() {
            max[channel(k)] = max[channel(k)].max(v.abs());
        }
        for (ch, &m) in max.iter().enumerate() {
            assert_eq!(quant.scale[ch], m / 127.0, "{name} channel {ch}");
        }
        for (k, (&qv, &wv)) in q.iter().zip(&w).enumerate() {
            let exact = f64::from(wv) / f64::from(quant.scale[channel(k)]);
            assert!((f64::from(qv) - exact).abs() <= 0.5 + 1e-4, "{name}[{k}]");
        }
    }
    // S has 256 values: float, as the biases.
    let (s, _) = constant(&dynamic, "S/filter");
    assert_eq!(s.tensor_type, specc_tflite::TensorType::Float32);
    assert_eq!(
        constant(&dynamic, "b").0.tensor_type,
        specc_tflite::TensorType::Float32
    );
    // Within the quantization's error of the float model.
    let x = values(BATCH * 256, 99);
    let xa = ArrayD::from_shape_vec(IxDyn(&[BATCH, 256]), x.clone()).unwrap();
    let want = specc_tflite::run(&float, &[xa.view()]).unwrap();
    let got = specc_tflite::run(&dynamic, &[xa.view()]).unwrap();
    // Every image spans [-1, 1): an input step of at most 2/255.
    let s_in = 2.0 / 255.0;
    for (k, (name, products, filter)) in [
        ("y1", 9 * 16, "K/filter"),
        ("y2", 9, "D/filter"),
        ("y3", 9 * 16, "T/filter"),
    ]
    .into_iter()
    .enumerate()
    {
        let (_, w) = constant(&float, filter);
        let wmax = w.iter().fold(0f64, |m, &v| m.max(f64::from(v.abs())));
        let s_w = wmax / 127.0;
        let bound = products as f64 * (wmax * s_in / 2.0 + s_w / 2.0 + s_in * s_w / 4.0);
        let diff = got[k]
            .iter()
            .zip(want[k].iter())
            .fold(0f64, |m, (&a, &b)| m.max(f64::from((a - b).abs())));
        eprintln!("{name}: {diff:.3e} (bound {bound:.3e})");
        assert!(diff <= bound, "{name}: {diff} > {bound}");
        // Quantized: not the float model's values.
        assert!(diff > 0.0, "{name}");
    }
    assert_eq!(got[3], want[3], "y4 stays float");
}
