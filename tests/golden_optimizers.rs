//! TF's optimizer trajectories (`golden/optimizers.json`) against specc's compiled
//! training step: every variable, slot and optimizer variable after each of the
//! 20 steps, for every setting of every section (dense, sparse, sparse_alt and
//! the dense equivalents), each as its own test. Shapes, initial values, data,
//! ids and constructor arguments all come from the file.

mod common;

/// |got - want| <= TOL * max(|want|, 1): 1e-6 relative, with a unit floor for values
/// near zero. specc's GEMM uses FMA where the CPU has it and TF's small matmuls do
/// not, so activations can differ in the last bit; at lr 0.5 that shows as ~1e-7
/// absolute on weights crossing zero.
const TOL: f64 = 1e-6;

use common::dense_problem::{dataset, dense_spec};
use common::{array, close, golden, num};
use specc_compiler::driver::{compile, Functions};
use specc_grammar::SourceFile;
use specc_runtime::data::{Dataset, InputData, Values};

/// The spec optimizer call for a golden setting, from its class and kwargs.
fn optimizer_call(setting: &serde_json::Value) -> Option<String> {
    let class = setting["optimizer_class"].as_str()?;
    let name = match class.rsplit('.').next()? {
        "GradientDescentOptimizer" => "gradient_descent",
        "MomentumOptimizer" => "momentum",
        "AdagradOptimizer" => "adagrad",
        "AdagradDAOptimizer" => "adagrad_da",
        "AdadeltaOptimizer" => "adadelta",
        "AdamOptimizer" => "adam",
        "FtrlOptimizer" => "ftrl",
        "RMSPropOptimizer" => "rmsprop",
        "ProximalAdagradOptimizer" => "proximal_adagrad",
        "ProximalGradientDescentOptimizer" => "proximal_gradient_descent",
        _ => return None,
    };
    let kwargs = setting["kwargs"].as_object()?;
    let args: Vec<String> = kwargs
        .iter()
        // AdagradDA's global_step is the model's own.
        .filter(|(k, _)| k.as_str() != "global_step")
        .map(|(k, v)| match v {
            serde_json::Value::Bool(b) => format!("{k} = {b}"),
            v => format!("{k} = {:e}", num(v)),
        })
        .collect();
    Some(format!("{name}({})", args.join(", ")))
}

/// The spec of the sparse problem (`_meta.problem_sparse`): rows of the table
/// `emb` looked up by ids, squared error against targets `t`. With `dense`,
/// the rows are `one_hot(ids) @ emb`, whose gradient is a dense tensor.
fn sparse_spec(problem: &serde_json::Value, items: &str, dense: bool) -> String {
    let (ed, _) = array(&problem["emb_init"]);
    let (rows, width) = (ed[0], ed[1]);
    let lookup = if dense {
        format!("one_hot(ids, {rows}) @ emb")
    } else {
        "embedding_lookup(emb, ids)".to_string()
    };
    format!(
        "model sparse\n\
         data synthetic(rows = 4, features = {f})\n\
         features {{ ids = integer(x0, num_buckets = {rows}) }}\n\
         label t: float from x1..x{width}\n\
         params {{\n  emb: [{rows}, {width}] = constant(value = {e})\n}}\n\
         rows = {lookup}\n\
         loss = reduce_mean(square(rows - t))\n\
         {items}\n\
         train {{ batch = 4, steps = 20 }}\n",
        f = width + 1,
        e = common::literal(&problem["emb_init"]),
    )
}

/// The sparse problem's data: one batch per step (ids change per step in
/// `sparse_alt`, read from the setting's `ids_used_by_step`).
fn sparse_dataset(
    problem: &serde_json::Value,
    setting: &serde_json::Value,
    steps: usize,
) -> Dataset {
    let (td, t) = array(&problem["t"]);
    let batch_ids = |k: usize| -> Vec<i32> {
        let ids = match setting.get("ids_used_by_step") {
            Some(by_step) => &by_step[k.to_string()],
            None => &problem["ids"],
        };
        ids.as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap() as i32)
            .collect()
    };
    let mut ids = Vec::new();
    let mut ts = Vec::new();
    for k in 1..=steps {
        ids.extend(batch_ids(k));
        ts.extend(t.iter().map(|&x| x as f32));
    }
    Dataset::from_inputs(
        steps * td[0],
        vec![
            InputData::new("ids", 1, Values::I32(ids)),
            InputData::new("t", td[1], Values::F32(ts)),
        ],
    )
    .unwrap()
}

/// Runs one golden setting (of any section) through the compiled step and
/// compares every state. Returns false if specc has no such optimizer.
fn check_setting(name: &str, setting: &serde_json::Value, meta: &serde_json::Value) -> bool {
    let Some(opt) = optimizer_call(setting) else {
        return false;
    };
    let items = format!("optimizer {opt}");
    let states = setting["states"].as_array().unwrap();
    let steps = states.len() - 1;
    let problem_kind = setting["problem"].as_str().unwrap_or("dense");
    let (text, data, batch) = match problem_kind {
        "dense" => {
            let p = &meta["problem_dense"];
            let data = dataset(p);
            let b = data.rows;
            (dense_spec(p, &items), data, b)
        }
        kind => {
            let p = &meta["problem_sparse"];
            let dense = kind.ends_with("dense_equivalent");
            let data = sparse_dataset(p, setting, steps);
            let b = array(&p["t"]).0[0];
            (sparse_spec(p, &items, dense), data, b)
        }
    };
    let src = SourceFile::new(format!("{name}.spec"), text.clone());
    let program = compile(&src, Functions::TRAIN).unwrap_or_else(|d| {
        panic!(
            "{name}: {:?}\n{text}",
            d.iter().map(|d| d.message.clone()).collect::<Vec<_>>()
        )
    });
    let mut s = program.session().unwrap();
    s.bind(&data).unwrap();
    let step = s.function_index("step").unwrap();
    for (k, state) in states.iter().enumerate() {
        if k > 0 {
            // Step k trains on batch k (the same rows every step on the dense problem).
            let first = if data.rows == batch {
                0
            } else {
                (k - 1) * batch
            };
            let rows: Vec<u32> = (first as u32..(first + batch) as u32).collect();
            s.gather(&data, &rows).unwrap();
            s.call(step, batch).unwrap();
            let loss = s.output(step, "loss", batch).unwrap()[0] as f64;
            // The loss computed by step k is evaluated at states[k-1].
            close(
                &format!("{name} loss before step {k}"),
                loss,
                num(&states[k - 1]["loss"]),
                1e-5,
                1e-6,
            );
        }
        assert_eq!(
            s.global_step,
            state["global_step"].as_i64().unwrap(),
            "{name} global_step"
        );
        for (var, want) in state["variables"].as_object().unwrap() {
            let got = s
                .var(var)
                .unwrap_or_else(|| panic!("{name}: no variable {var}"));
            let (_, want) = array(want);
            for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                close(
                    &format!("{name} step {k} {var}[{i}]"),
                    g as f64,
                    w,
                    TOL,
                    TOL,
                );
            }
        }
        for (var, slots) in state["slots"].as_object().unwrap() {
            for (slot, want) in slots.as_object().unwrap() {
                let tf_name = setting["slot_variable_names"][var][slot].as_str().unwrap();
                let got = s
                    .var(tf_name)
                    .unwrap_or_else(|| panic!("{name}: no slot {tf_name}"));
                let (_, want) = array(want);
                for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                    close(
                        &format!("{name} step {k} {tf_name}[{i}]"),
                        g as f64,
                        w,
                        TOL,
                        TOL,
                    );
                }
            }
        }
        for (var, want) in state["other_optimizer_variables"].as_object().unwrap() {
            let got = s
                .var(var)
                .unwrap_or_else(|| panic!("{name}: no variable {var}"))[0]
                as f64;
            close(&format!("{name} step {k} {var}"), got, num(want), TOL, TOL);
        }
    }
    true
}

fn run(section: &str, setting_name: &str) {
    let g = golden("optimizers.json");
    let setting = &g[section][setting_name];
    assert!(!setting.is_null(), "no {section} setting {setting_name}");
    assert!(
        check_setting(&format!("{section}/{setting_name}"), setting, &g["_meta"]),
        "{section}/{setting_name} is not implemented"
    );
}

/// The sections of the golden file: the dense problem, the sparse one (an
/// `IndexedSlices` gradient with a duplicate id), the sparse one with ids
/// alternating between steps (where lazy updates differ from dense ones), and
/// the dense equivalents of both (the same rows through a one-hot matmul).
const SECTIONS: &[&str] = &[
    "dense",
    "sparse",
    "sparse_dense_equivalent",
    "sparse_alt",
    "sparse_alt_dense_equivalent",
];

/// Every setting of every section the golden file holds (a regenerated file
/// with other settings under the same keys is checked unchanged).
#[test]
fn every_setting_in_the_file() {
    let g = golden("optimizers.json");
    for section in SECTIONS {
        let settings = g[*section].as_object().unwrap();
        for (name, setting) in settings {
            assert!(
                check_setting(&format!("{section}/{name}"), setting, &g["_meta"]),
                "{section}/{name}: optimizer not supported"
            );
        }
    }
}

macro_rules! settings {
    ($($test:ident => $name:literal),* $(,)?) => {
        mod dense {
            $( #[test] fn $test() { super::run("dense", $name); } )*
        }
        mod sparse {
            $( #[test] fn $test() { super::run("sparse", $name); } )*
        }
        mod sparse_dense_equivalent {
            $( #[test] fn $test() { super::run("sparse_dense_equivalent", $name); } )*
        }
        mod sparse_alt {
            $( #[test] fn $test() { super::run("sparse_alt", $name); } )*
        }
        mod sparse_alt_dense_equivalent {
            $( #[test] fn $test() { super::run("sparse_alt_dense_equivalent", $name); } )*
        }
    };
}

settings! {
    gd_lr0_1 => "gd_lr0.1",
    gd_lr0_5 => "gd_lr0.5",
    momentum => "momentum",
    momentum_nesterov => "momentum_nesterov",
    adagrad => "adagrad",
    adagrad_da => "adagrad_da",
    adagrad_da_l1_l2 => "adagrad_da_l1_l2",
    adadelta_defaults => "adadelta_defaults",
    adadelta_lr1 => "adadelta_lr1",
    adam => "adam",
    adam_custom => "adam_custom",
    ftrl => "ftrl",
    ftrl_l1_l2 => "ftrl_l1_l2",
    ftrl_l2_shrinkage => "ftrl_l2_shrinkage",
    ftrl_lr_power_minus_0_3 => "ftrl_lr_power_-0.3",
    ftrl_beta0_5_l2 => "ftrl_beta0.5_l2",
    rmsprop => "rmsprop",
    rmsprop_momentum => "rmsprop_momentum",
    rmsprop_centered => "rmsprop_centered",
    proximal_adagrad => "proximal_adagrad",
    proximal_gd => "proximal_gd",
}
