//! TF's gradient clipping (`golden/clipping.json`) against specc's compiled
//! training step.
//!
//! Each case clips the tensors named in its `inputs`. specc clips gradients, so
//! the test makes each input the gradient of a zero-initialized parameter:
//! `loss = sum(reduce_sum(p_A * A) + ...)` has gradient exactly `A` for `p_A`,
//! the spec's `clip` item processes the gradients, and one step of gradient
//! descent with learning rate 1 leaves `p_A = 0 - 1 * clipped(A) = -clipped(A)`
//! exactly. `global_norm` cases read the step's `global_norm` output (the
//! metric). The clipping arguments come from the case's `call` text, and so
//! does the order of the tensors (the call's list; `inputs` is a JSON object,
//! whose order a reader need not keep): a name is that input, `None` is
//! skipped (TF's list of clipped tensors leaves it out too), a literal is the
//! input holding that value.
//!
//! `clip_by_global_norm` with `use_norm` returns `use_norm` as the global
//! norm: the spec's `use_norm` is that returned value (and must be the
//! call's), so the clipped tensors check that specc clips with it; the step's
//! `global_norm` metric, the gradients' own norm, is compared with the norm of
//! the inputs computed here in float64.
//!
//! Every case is its own test, plus one test of any case the list lacks.
//! Tolerance: 1e-6 relative, with a floor of 1e-6 times the largest magnitude
//! of the tensor (a clipped tensor is its input times one float32 factor).

use crate::common;

use common::{array, assert_all_close, golden, num, scale, Tol};
use specc_compiler::driver::{compile, Functions};
use specc_grammar::SourceFile;
use specc_runtime::data::{Dataset, InputData, Values};

const REL: f64 = 1e-6;
const FLOOR: f64 = 1e-6;

fn tol(want: &[f64]) -> Tol<'static> {
    Tol::scaled(REL, FLOOR, scale(want))
}

/// A Python call `f(a, b, k=v) trailing text` split into the function's last
/// dotted name and its top-level arguments.
fn parse_call(call: &str) -> (String, Vec<String>) {
    let open = call.find('(').expect("a call");
    let name = call[..open].rsplit('.').next().unwrap().trim().to_string();
    let mut depth = 0;
    let mut args = Vec::new();
    let mut cur = String::new();
    for ch in call[open + 1..].chars() {
        match ch {
            '(' | '[' => depth += 1,
            ')' | ']' if depth > 0 => depth -= 1,
            ')' => break,
            ',' if depth == 0 => {
                args.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    if !cur.trim().is_empty() {
        args.push(cur.trim().to_string());
    }
    (name, args)
}

/// A Python argument as spec text: `tf.constant(10.0)` is its value.
fn value(arg: &str) -> String {
    let a = arg.trim();
    match a.strip_prefix("tf.constant(") {
        Some(rest) => rest.trim_end_matches(')').to_string(),
        None => a.to_string(),
    }
}

/// The spec's clip item (None for a plain `global_norm`) for a TF call;
/// `use_norm`, when given, replaces the call's.
fn clip_item(call: &str, use_norm: Option<f64>) -> Option<String> {
    let (name, args) = parse_call(call);
    let mut positional = Vec::new();
    let mut keywords = Vec::new();
    for a in &args[1..] {
        match a.split_once('=') {
            Some((k, v)) if k.trim() == "use_norm" => {
                let given: f64 = value(v).parse().expect("a number");
                let used = use_norm.expect("the norm TF returns");
                assert_eq!(given as f32, used as f32, "{call}: TF returns use_norm");
                keywords.push(format!("use_norm = {used:e}"));
            }
            Some((k, v)) => keywords.push(format!("{} = {}", k.trim(), value(v))),
            None => positional.push(value(a)),
        }
    }
    let (rule, names): (&str, &[&str]) = match name.as_str() {
        "clip_by_value" => ("by_value", &["clip_value_min", "clip_value_max"]),
        "clip_by_norm" => ("by_norm", &["clip_norm", "axes"]),
        "clip_by_average_norm" => ("by_average_norm", &["clip_norm"]),
        "clip_by_global_norm" => ("global_norm", &["clip_norm", "use_norm"]),
        "global_norm" => return None,
        other => panic!("unknown clipping call {other}"),
    };
    assert!(
        positional.len() <= names.len(),
        "{call}: more positional arguments than {name} takes"
    );
    let mut all: Vec<String> = positional
        .iter()
        .zip(names)
        .map(|(v, k)| format!("{k} = {v}"))
        .collect();
    all.extend(keywords);
    Some(format!("clip {rule}({})", all.join(", ")))
}

/// A JSON tensor as a spec literal; infinities as `1 / 0`.
fn literal(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(literal).collect();
            format!("[{}]", parts.join(", "))
        }
        other => {
            let x = num(other);
            if x.is_infinite() {
                format!("{}1 / 0", if x < 0.0 { "-" } else { "" })
            } else {
                format!("{x:e}")
            }
        }
    }
}

/// A Python literal (`[1.0, inf]`) as JSON.
fn python_literal(text: &str) -> Option<serde_json::Value> {
    let mut json = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, json: &mut String| {
        match word.as_str() {
            "inf" | "nan" => json.push_str(&format!("\"{word}\"")),
            _ => json.push_str(word),
        }
        word.clear();
    };
    for ch in text.chars() {
        if ch.is_ascii_alphabetic() {
            word.push(ch);
        } else {
            flush(&mut word, &mut json);
            json.push(ch);
        }
    }
    flush(&mut word, &mut json);
    let json = json.replace("-\"inf\"", "\"-inf\"");
    serde_json::from_str(&json).ok()
}

/// Whether two JSON tensors hold the same float32 numbers (the call text
/// writes Python floats: `1.6`; NaN equal to NaN).
fn same_values(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    let ((da, va), (db, vb)) = (array(a), array(b));
    da == db
        && va
            .iter()
            .zip(&vb)
            .all(|(&x, &y)| x as f32 == y as f32 || (x.is_nan() && y.is_nan()))
}

/// The case's inputs in the order of the call's first argument (a tensor or
/// a list): a name is that input, `None` is skipped, anything else is the
/// one remaining input with that value.
fn inputs_in_call_order(case: &serde_json::Value) -> Vec<(String, serde_json::Value)> {
    let call = case["call"].as_str().unwrap();
    let inputs = case["inputs"].as_object().expect("inputs");
    let (_, args) = parse_call(call);
    let first = args[0].trim();
    let elements: Vec<String> = match first.strip_prefix('[').and_then(|f| f.strip_suffix(']')) {
        Some(list) => parse_call(&format!("list({list})")).1,
        None => vec![first.to_string()],
    };
    let mut order: Vec<Option<String>> = elements
        .iter()
        .filter(|e| e.as_str() != "None")
        .map(|e| inputs.contains_key(e.as_str()).then(|| e.clone()))
        .collect();
    for (slot, element) in order
        .iter_mut()
        .zip(elements.iter().filter(|e| *e != "None"))
    {
        if slot.is_some() {
            continue;
        }
        let named: Vec<&String> = inputs.keys().collect();
        let literal = python_literal(element);
        let matches: Vec<&String> = named
            .into_iter()
            .filter(|k| !elements.contains(k))
            .filter(|k| match &literal {
                Some(l) => same_values(l, &inputs[k.as_str()]),
                None => true,
            })
            .collect();
        assert_eq!(
            matches.len(),
            1,
            "{call}: which input is `{element}`? candidates {matches:?}"
        );
        *slot = Some(matches[0].clone());
    }
    let order: Vec<String> = order.into_iter().map(Option::unwrap).collect();
    let mut sorted = order.clone();
    sorted.sort();
    let mut keys: Vec<String> = inputs.keys().cloned().collect();
    keys.sort();
    assert_eq!(sorted, keys, "{call}: every input once");
    order
        .into_iter()
        .map(|k| {
            let v = inputs[&k].clone();
            (k, v)
        })
        .collect()
}

fn dims_text(dims: &[usize]) -> String {
    let d: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
    format!("[{}]", d.join(", "))
}

/// The spec for one case: a frozen constant and a zero parameter per input.
fn spec(
    case: &serde_json::Value,
    inputs: &[(String, serde_json::Value)],
    use_norm: Option<f64>,
) -> String {
    let mut params = String::new();
    let mut terms = Vec::new();
    for (name, v) in inputs {
        let (dims, _) = array(v);
        let d = dims_text(&dims);
        params += &format!(
            "  g_{name}: {d} = constant(value = {}), trainable = false\n  p_{name}: {d} = zeros()\n",
            literal(v)
        );
        terms.push(format!("reduce_sum(p_{name} * g_{name})"));
    }
    let clip = clip_item(case["call"].as_str().unwrap(), use_norm).unwrap_or_default();
    format!(
        "model clipping\n\
         data synthetic(rows = 1, features = 1)\n\
         features {{ x = numeric(x0) }}\n\
         label y: float from y0\n\
         params {{\n{params}}}\n\
         loss = {}\n\
         optimizer gradient_descent(learning_rate = 1)\n\
         {clip}\n\
         metrics {{ global_norm }}\n\
         train {{ batch = 1, steps = 1 }}\n",
        terms.join(" + "),
    )
}

/// The global norm of tensors, in float64.
fn norm_of(inputs: &[(String, serde_json::Value)]) -> f64 {
    inputs
        .iter()
        .flat_map(|(_, v)| array(v).1)
        .map(|x| x * x)
        .sum::<f64>()
        .sqrt()
}

fn check_case(case: &serde_json::Value) {
    let name = case["name"].as_str().unwrap();
    let call = case["call"].as_str().unwrap();
    let inputs = inputs_in_call_order(case);
    let output = &case["output"];
    // What the case records: the clipped tensors (in call order, without the
    // None entries) and/or the global norm TF returns.
    let (clipped, norm): (Vec<&serde_json::Value>, Option<f64>) = match output {
        serde_json::Value::Object(o) => (
            o["list_clipped"]
                .as_array()
                .expect("list_clipped")
                .iter()
                .collect(),
            Some(num(&o["global_norm"])),
        ),
        // The clip_by_* of one tensor: that tensor.
        v if v.is_array() => (vec![v], None),
        // `global_norm`: a number.
        v => (vec![], Some(num(v))),
    };
    let use_norm = call
        .contains("use_norm")
        .then(|| norm.expect("a returned norm"));
    let text = spec(case, &inputs, use_norm);
    let src = SourceFile::new(format!("{name}.spec"), text.clone());
    let program = compile(&src, Functions::TRAIN).unwrap_or_else(|d| {
        panic!(
            "{name}: {:?}\n{text}",
            d.iter().map(|d| d.message.clone()).collect::<Vec<_>>()
        )
    });
    let data = Dataset::from_inputs(
        1,
        vec![
            InputData::new("x", 1, Values::F32(vec![0.0])),
            InputData::new("y", 1, Values::F32(vec![0.0])),
        ],
    )
    .unwrap();
    let mut s = program.session().unwrap();
    s.bind(&data).unwrap();
    s.gather(&data, &[0]).unwrap();
    let step = s.function_index("step").unwrap();
    s.call(step, 1).unwrap();

    if !clipped.is_empty() {
        assert_eq!(
            clipped.len(),
            inputs.len(),
            "{name}: {} clipped tensors for {} inputs",
            clipped.len(),
            inputs.len()
        );
    }
    for ((input, _), want) in inputs.iter().zip(&clipped) {
        // p = 0 - 1 * clipped
        let got: Vec<f32> = s
            .var(&format!("p_{input}"))
            .unwrap()
            .iter()
            .map(|&p| -p)
            .collect();
        let (_, want) = array(want);
        assert_all_close(&format!("{name} clipped {input}"), &got, &want, tol(&want));
    }
    let metric = s.output(step, "global_norm", 1).unwrap();
    match (norm, use_norm) {
        // TF returns the gradients' global norm: the metric is that norm.
        (Some(norm), None) => assert_all_close(
            &format!("{name} global_norm"),
            metric,
            &[norm],
            tol(&[norm]),
        ),
        // TF returns use_norm (checked through the clipped tensors above); the
        // metric is still the gradients' own norm.
        (Some(_), Some(_)) => {
            let own = norm_of(&inputs);
            assert_all_close(
                &format!("{name} global_norm metric"),
                metric,
                &[own],
                tol(&[own]),
            )
        }
        (None, _) => {}
    }
}

fn run(case_name: &str) {
    let g = golden("clipping.json");
    let case = g["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == case_name)
        .unwrap_or_else(|| panic!("no clipping case {case_name}"));
    check_case(case);
}

/// The cases of the file without a test of their own (a regenerated file
/// with more cases is still checked); every named case must be in the file.
#[test]
fn every_other_case_in_the_file() {
    let g = golden("clipping.json");
    let all = g["cases"].as_array().unwrap();
    let others = all
        .iter()
        .filter(|c| !NAMED.contains(&c["name"].as_str().unwrap()))
        .map(|c| (c["name"].as_str().unwrap().to_string(), c));
    common::check_all(others, |_, c| check_case(c));
    for name in NAMED {
        assert!(
            all.iter().any(|c| c["name"] == *name),
            "no clipping case {name}"
        );
    }
}

macro_rules! cases {
    ($($test:ident => $name:literal),* $(,)?) => {
        /// The cases with a test of their own.
        const NAMED: &[&str] = &[$($name),*];
        $(
            #[test]
            fn $test() {
                run($name);
            }
        )*
    };
}

cases! {
    clip_by_value => "clip_by_value",
    clip_by_value_tensor_bounds => "clip_by_value_tensor_bounds",
    clip_by_norm => "clip_by_norm",
    clip_by_norm_axes0 => "clip_by_norm_axes0",
    clip_by_norm_axes1 => "clip_by_norm_axes1",
    clip_by_norm_below => "clip_by_norm_below",
    clip_by_norm_zeros => "clip_by_norm_zeros",
    clip_by_norm_vector => "clip_by_norm_vector",
    clip_by_average_norm => "clip_by_average_norm",
    clip_by_average_norm_below => "clip_by_average_norm_below",
    global_norm => "global_norm",
    global_norm_with_none => "global_norm_with_none",
    clip_by_global_norm => "clip_by_global_norm",
    clip_by_global_norm_use_norm => "clip_by_global_norm_use_norm",
    clip_by_global_norm_below => "clip_by_global_norm_below",
    clip_by_global_norm_use_norm_below => "clip_by_global_norm_use_norm_below",
    clip_by_global_norm_with_none => "clip_by_global_norm_with_none",
    clip_by_global_norm_inf => "clip_by_global_norm_inf",
}

/// The tensors follow the call, not the (sorted) keys of `inputs`.
#[test]
fn inputs_follow_the_order_of_the_call() {
    let case = serde_json::json!({
        "call": "tf.clip_by_global_norm([b_t, None, [inf, 1.6], A], 2.0)",
        "inputs": {"A": [1.0], "b_t": [2.0, 3.0], "x": ["inf", 1.600000023841858]},
    });
    let names: Vec<String> = inputs_in_call_order(&case)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["b_t", "x", "A"]);
}
