//! TF's gradient clipping (`golden/clipping.json`) against specc's compiled
//! training step.
//!
//! Each case clips the tensors named in its `inputs`. specc clips gradients, so
//! the test makes each input the gradient of a zero-initialized parameter:
//! `loss = sum(reduce_sum(p_A * A) + ...)` has gradient exactly `A` for `p_A`,
//! the spec's `clip` item processes the gradients, and one step of gradient
//! descent with learning rate 1 leaves `p_A = 0 - 1 * clipped(A) = -clipped(A)`
//! exactly. `global_norm` cases read the step's `global_norm` output (the
//! metric). The clipping arguments come from the case's `call` text.

mod common;

use common::{array, close, golden, num};
use specc_compiler::driver::{compile, Functions};
use specc_grammar::SourceFile;
use specc_runtime::data::{Dataset, InputData, Values};

/// The tolerance the issue asks of every golden comparison.
const REL: f64 = 1e-5;
const ABS: f64 = 1e-6;

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

/// The spec's clip item (None for a plain `global_norm`) for a TF call.
fn clip_item(call: &str) -> Option<String> {
    let (name, args) = parse_call(call);
    let mut positional = Vec::new();
    let mut keywords = Vec::new();
    for a in &args[1..] {
        match a.split_once('=') {
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

fn dims_text(dims: &[usize]) -> String {
    let d: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
    format!("[{}]", d.join(", "))
}

/// The spec for one case: a frozen constant and a zero parameter per input.
fn spec(case: &serde_json::Value, inputs: &[(String, serde_json::Value)]) -> String {
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
    let clip = clip_item(case["call"].as_str().unwrap()).unwrap_or_default();
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

fn check_case(case: &serde_json::Value) {
    let name = case["name"].as_str().unwrap();
    let inputs: Vec<(String, serde_json::Value)> = case["inputs"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let text = spec(case, &inputs);
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

    let output = &case["output"];
    let (clipped, norm): (Vec<&serde_json::Value>, Option<&serde_json::Value>) = match output {
        serde_json::Value::Object(o) => (
            o["list_clipped"].as_array().unwrap().iter().collect(),
            Some(&o["global_norm"]),
        ),
        // `global_norm`: a number; the clip_by_* of one tensor: that tensor.
        v if v.is_array() => (vec![v], None),
        v => (vec![], Some(v)),
    };
    assert!(
        clipped.is_empty() || clipped.len() == inputs.len(),
        "{name}: {} outputs for {} inputs",
        clipped.len(),
        inputs.len()
    );
    for ((input, _), want) in inputs.iter().zip(&clipped) {
        let got = s.var(&format!("p_{input}")).unwrap();
        let (_, want) = array(want);
        assert_eq!(got.len(), want.len(), "{name} {input}");
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            close(&format!("{name} {input}[{i}]"), -(g as f64), w, REL, ABS);
        }
    }
    // The global norm is TF's `use_norm` when one is given; the metric always
    // reports the gradients' own norm.
    let use_norm = case["call"].as_str().unwrap().contains("use_norm");
    if let (Some(norm), false) = (norm, use_norm) {
        let got = s.output(step, "global_norm", 1).unwrap()[0] as f64;
        close(&format!("{name} global_norm"), got, num(norm), REL, ABS);
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

/// Every case the golden file holds.
#[test]
fn every_case_in_the_file() {
    let g = golden("clipping.json");
    for case in g["cases"].as_array().unwrap() {
        check_case(case);
    }
}

macro_rules! cases {
    ($($test:ident => $name:literal),* $(,)?) => {
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
