//! `is_nan`, `is_inf`, `is_finite` and `zero_fraction` (`tf.math`'s) in the
//! compiled step, on values that are NaN (the log of a negative), infinite
//! (the log of 0) and finite, against what IEEE arithmetic says of each
//! element; and their errors. (TF's results are booleans; specc's are 1.0
//! and 0.0, as its comparisons are.)

use ndarray::Array2;
use specc::Model;

const SPEC: &str = "data synthetic(rows = 8, features = 4, classes = 2)
label label: int
features { x = numeric(x0..x3) }
params { W: [4, 2] = zeros }
logits = x @ W
y = log(x)
loss = mean(sparse_softmax_cross_entropy(label, logits))
optimizer gradient_descent(learning_rate = 0.1)
train { batch = 4, steps = 1 }
outputs {
  nan = is_nan(y)
  inf = is_inf(y)
  finite = is_finite(y)
  zeros = zero_fraction(relu(x)) + 0 * reduce_sum(x, 1)
}
";

#[test]
fn the_predicates_say_what_ieee_says_of_each_element() {
    let rows: [[f32; 4]; 3] = [
        [-1.0, 0.0, 1.0, 2.0],
        [0.5, -0.5, 0.0, 3.0],
        [4.0, 1e-30, 7.0, -2.0],
    ];
    let x = Array2::from_shape_vec((3, 4), rows.concat()).unwrap();
    let mut model = Model::from_source("predicates.spec", SPEC).unwrap();
    let out = model.predict(&[("x", x.view().into_dyn())]).unwrap();
    let get = |name: &str| {
        out.iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no output {name}"))
            .1
            .clone()
    };
    let (nan, inf, finite, zeros) = (get("nan"), get("inf"), get("finite"), get("zeros"));
    let flag = |b: bool| if b { 1.0f32 } else { 0.0 };
    // relu(x) over the whole batch: the elements <= 0.
    let nonpositive = rows.iter().flatten().filter(|&&v| v <= 0.0).count();
    let fraction = nonpositive as f32 / 12.0;
    for (r, row) in rows.iter().enumerate() {
        for (k, &v) in row.iter().enumerate() {
            let y = v.ln();
            assert_eq!(nan[[r, k]], flag(y.is_nan()), "is_nan(log({v}))");
            assert_eq!(inf[[r, k]], flag(y.is_infinite()), "is_inf(log({v}))");
            assert_eq!(finite[[r, k]], flag(y.is_finite()), "is_finite(log({v}))");
        }
        assert_eq!(zeros[[r]], fraction, "zero_fraction over the batch");
    }
    // Every kind is present, so none of the assertions is vacuous.
    assert!(nan.iter().any(|&v| v == 1.0) && inf.iter().any(|&v| v == 1.0));
    assert!(finite.iter().any(|&v| v == 1.0) && finite.iter().any(|&v| v == 0.0));
}

#[test]
fn a_predicate_takes_one_tensor() {
    let text = SPEC.replace("nan = is_nan(y)", "nan = is_nan(y, y)");
    let err = Model::from_source("predicates.spec", &text)
        .err()
        .expect("two arguments are refused");
    let text = err.to_string();
    assert!(text.contains("is_nan"), "{text}");
}
