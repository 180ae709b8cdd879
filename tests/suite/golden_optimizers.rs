//! TF's optimizer trajectories (`golden/optimizers.json`) against specc's compiled
//! training step, for every setting of every section (dense, sparse, sparse_alt
//! and the dense equivalents), each as its own test, plus one test over the
//! whole file so a setting the list lacks is still checked. Each setting is
//! checked twice:
//!
//! - The update rule ([`check_update`]): from every recorded state of TF
//!   (variables, slots, other optimizer variables, global step) with TF's
//!   gradient at that state fed in exactly, one step of specc's optimizer
//!   gives TF's next state: every variable, slot (by TF's slot variable
//!   name) and other optimizer variable. Tolerance: `1e-6 * |want| + 5e-7 *
//!   S` (S the quantity's trajectory scale, below): the operations are TF's
//!   kernels' in their order (`optim::table`), and the results differ from
//!   TF's by the last bits where a function is not correctly rounded in one
//!   or the other (Eigen's vectorized `rsqrt` refines a hardware estimate;
//!   specc's `pow` is its own polynomial). Measured on the original data and
//!   four other draws (`SPECC_GOLDEN_ERRORS=1`): at most 2.2e-7 relative
//!   among values of at least 1% of their scale, 1.9e-7 * S.
//! - The trajectory ([`check_setting`]): the real problem's compiled step,
//!   its own gradients, from TF's initial state. At every recorded state
//!   (after initialization and after each step) the test compares the
//!   global step, every variable, every other optimizer variable, the loss
//!   and the gradient at that state (`grads_at_this_state`, through the
//!   compiled `grad` function, with the batch of the next step: an
//!   `IndexedSlices` gradient is compared by its dense value, and its indices
//!   must be the batch's ids); the loss of step k is also compared through
//!   the step's own `loss` output. specc's variables must be exactly the ones
//!   TF creates. The slots are compared by the update check only: their
//!   trajectory carries the gradient's rounding, and an adaptive slot
//!   (Adadelta's `accum_update`, which divides the gradient by its own
//!   history) turns a gradient's last-bit difference where it nearly cancels
//!   into a relative error of its own (on some draws 4e-6 of a 1e-6-sized
//!   slot) that says nothing about the optimizer.
//!
//! Shapes, initial values, data, ids, batch sizes, the number of states and
//! the constructor arguments all come from the file; an optimizer class
//! specc does not know fails the test.
//!
//! Trajectory tolerance: `|got - want| <= 1e-6 * |want| + 2.5e-6 * S`, where
//! S is the quantity's trajectory scale: the largest magnitude the variable,
//! slot, gradient or loss (any element) takes in any state. The floor is
//! relative to S, not to 1, because the errors are: specc's GEMM uses FMA
//! where the CPU has it and TF's CPU kernels do not, TF's graph multiplies by
//! the float32 reciprocal of a static batch size where specc divides by the
//! runtime one, so predictions and per-example gradients differ in their
//! last bits; a residual `prediction - target` keeps that absolute error as
//! it shrinks, so near convergence a gradient (and the updates and
//! variables built from it, an element crossing zero) has the absolute
//! error of the early, large values, not a relative one. Measured on the
//! original data and three other TensorFlow draws (`SPECC_GOLDEN_ERRORS=1`):
//! at most 1.12e-6 * S on the dense problems (through the GEMM), 6.6e-7 * S
//! on the sparse ones; the floor is twice the worst.

use crate::common;

use common::dense_problem::{dataset, dense_spec};
use common::{array, assert_all_close, golden, int, ints, num, scale, Tol};
use specc_compiler::driver::{compile, Functions, ProgramSession};
use specc_grammar::SourceFile;
use specc_runtime::data::{Dataset, InputData, Values};

const REL: f64 = 1e-6;
const FLOOR: f64 = 2.5e-6;
/// The update check's tolerance (see the module doc).
const UPDATE_REL: f64 = 1e-6;
const UPDATE_FLOOR: f64 = 5e-7;

/// The tolerance of a quantity: REL relative, with a floor of FLOOR times the
/// largest magnitude the quantity (any element) takes over all states.
fn tol(states: &[serde_json::Value], f: impl Fn(&serde_json::Value) -> Vec<f64>) -> Tol<'static> {
    let trajectory = states.iter().map(|st| scale(&f(st))).fold(0.0, f64::max);
    Tol::scaled(REL, FLOOR, trajectory)
}

/// The spec optimizer call for a golden setting, from its class and kwargs.
fn optimizer_call(name: &str, setting: &serde_json::Value) -> String {
    let class = setting["optimizer_class"]
        .as_str()
        .unwrap_or_else(|| panic!("{name}: no optimizer_class"));
    let optimizer = match class.rsplit('.').next().unwrap() {
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
        other => panic!("{name}: specc has no optimizer for TF's {other}"),
    };
    let kwargs = setting["kwargs"]
        .as_object()
        .unwrap_or_else(|| panic!("{name}: no kwargs"));
    let args: Vec<String> = kwargs
        .iter()
        // AdagradDA's global_step is the model's own.
        .filter(|(k, _)| k.as_str() != "global_step")
        .map(|(k, v)| match v {
            serde_json::Value::Bool(b) => format!("{k} = {b}"),
            v => format!("{k} = {:e}", num(v)),
        })
        .collect();
    format!("{optimizer}({})", args.join(", "))
}

/// The sparse problem (`_meta.problem_sparse`): rows of the table `emb`
/// looked up by `batch` ids, squared error against targets `t`. With `dense`,
/// the rows are `one_hot(ids) @ emb`, whose gradient is a dense tensor.
fn sparse_spec(problem: &serde_json::Value, items: &str, dense: bool, batch: usize) -> String {
    let (ed, _) = array(&problem["emb_init"]);
    let (td, _) = array(&problem["t"]);
    let (rows, width) = (ed[0], ed[1]);
    assert_eq!(td, [batch, width], "t is one target row per id");
    let lookup = if dense {
        format!("one_hot(ids, {rows}) @ emb")
    } else {
        "embedding_lookup(emb, ids)".to_string()
    };
    format!(
        "model sparse\n\
         data synthetic(rows = {batch}, features = {f})\n\
         features {{ ids = integer(x0, num_buckets = {rows}) }}\n\
         label t: float from x1..x{width}\n\
         params {{\n  emb: [{rows}, {width}] = constant(value = {e})\n}}\n\
         rows = {lookup}\n\
         loss = reduce_mean(square(rows - t))\n\
         {items}\n\
         train {{ batch = {batch}, steps = 1 }}\n",
        f = width + 1,
        e = common::literal(&problem["emb_init"]),
    )
}

/// The ids of training step `k` (1-based) of a sparse setting: the problem's
/// ids, or in `sparse_alt*` the alternating `ids_alt` (`ids_used_by_step`
/// records them for the steps the file runs; past those, `_meta` states the
/// rule: step k uses `ids_alt[(k - 1) % 2]`).
fn step_ids(meta: &serde_json::Value, setting: &serde_json::Value, k: usize) -> Vec<i64> {
    if setting["problem"]
        .as_str()
        .unwrap()
        .starts_with("sparse_alt")
    {
        let alt = meta["problem_sparse_alt"]["ids_alt"]
            .as_array()
            .expect("ids_alt");
        let by_rule = ints(&alt[(k - 1) % alt.len()]);
        if let Some(recorded) = setting["ids_used_by_step"].get(k.to_string()) {
            assert_eq!(ints(recorded), by_rule, "ids of step {k}");
        }
        by_rule
    } else {
        ints(&meta["problem_sparse"]["ids"])
    }
}

/// One setting, compiled, with the data of every batch it trains on (and the
/// batch after the last, for the gradient at the last state).
struct Problem {
    text: String,
    data: Dataset,
    batch: usize,
    /// Each batch's first row in `data` (step k trains on batch k - 1).
    batch_start: Vec<usize>,
    /// The ids of each batch (sparse problems).
    ids: Vec<Vec<i64>>,
}

fn problem(name: &str, setting: &serde_json::Value, meta: &serde_json::Value) -> Problem {
    let items = format!("optimizer {}", optimizer_call(name, setting));
    let states = setting["states"].as_array().expect("states").len();
    match setting["problem"].as_str().expect("problem") {
        "dense" => {
            let p = &meta["problem_dense"];
            let data = dataset(p);
            let batch = data.rows;
            Problem {
                text: dense_spec(p, &items),
                data,
                batch,
                batch_start: vec![0; states],
                ids: vec![],
            }
        }
        kind => {
            let p = &meta["problem_sparse"];
            let (td, t) = array(&p["t"]);
            let batch = td[0];
            let ids: Vec<Vec<i64>> = (1..=states).map(|k| step_ids(meta, setting, k)).collect();
            let mut flat = Vec::new();
            let mut ts = Vec::new();
            for (k, batch_ids) in ids.iter().enumerate() {
                assert_eq!(batch_ids.len(), batch, "{name}: ids of step {}", k + 1);
                flat.extend(batch_ids.iter().map(|&i| i as i32));
                ts.extend(t.iter().map(|&x| x as f32));
            }
            let data = Dataset::from_inputs(
                states * batch,
                vec![
                    InputData::new("ids", 1, Values::I32(flat)),
                    InputData::new("t", td[1], Values::F32(ts)),
                ],
            )
            .unwrap();
            let dense = kind.ends_with("dense_equivalent");
            Problem {
                text: sparse_spec(p, &items, dense, batch),
                data,
                batch,
                batch_start: (0..states).map(|k| k * batch).collect(),
                ids,
            }
        }
    }
}

/// Gathers batch `b` (the batch of training step `b + 1`) into the session.
fn gather(s: &mut ProgramSession, p: &Problem, b: usize) {
    let first = p.batch_start[b] as u32;
    let rows: Vec<u32> = (first..first + p.batch as u32).collect();
    s.gather(&p.data, &rows).unwrap();
}

/// The dense value of a golden gradient (an `IndexedSlices` is summed into
/// zeros by index, as TF densifies it), checking its indices against `ids`.
fn dense_gradient(what: &str, want: &serde_json::Value, ids: Option<&[i64]>) -> Vec<f64> {
    if want.get("kind").and_then(|k| k.as_str()) != Some("IndexedSlices") {
        return array(want).1;
    }
    let indices = ints(&want["indices"]);
    if let Some(ids) = ids {
        assert_eq!(
            indices, ids,
            "{what}: IndexedSlices indices are the batch's ids"
        );
    }
    let (vd, values) = array(&want["values"]);
    let shape: Vec<usize> = ints(&want["dense_shape"])
        .iter()
        .map(|&d| d as usize)
        .collect();
    assert_eq!(vd[0], indices.len(), "{what}: one row per index");
    let row = vd[1..].iter().product::<usize>();
    assert_eq!(
        shape[1..].iter().product::<usize>(),
        row,
        "{what}: row size"
    );
    let mut dense = vec![0.0f64; shape.iter().product()];
    for (i, &r) in indices.iter().enumerate() {
        for j in 0..row {
            // TF sums duplicates in float32.
            let sum = dense[r as usize * row + j] as f32 + values[i * row + j] as f32;
            dense[r as usize * row + j] = f64::from(sum);
        }
    }
    dense
}

/// Runs one golden setting (of any section) through the compiled step and
/// compares every state.
fn check_setting(name: &str, setting: &serde_json::Value, meta: &serde_json::Value) {
    let p = problem(name, setting, meta);
    let src = SourceFile::new(format!("{name}.spec"), p.text.clone());
    let program = compile(&src, Functions::ALL).unwrap_or_else(|d| {
        panic!(
            "{name}: {:?}\n{}",
            d.iter().map(|d| d.message.clone()).collect::<Vec<_>>(),
            p.text
        )
    });
    let mut s = program.session().unwrap();
    s.bind(&p.data).unwrap();
    let step = s.function_index("step").unwrap();
    let grad = s.function_index("grad").unwrap();
    let states = setting["states"].as_array().unwrap();

    // specc's variables are exactly TF's: the variables, their slots (TF's
    // names) and the other optimizer variables.
    let first = &states[0];
    let mut want_vars: Vec<String> = first["variables"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    for slots in setting["slot_variable_names"].as_object().unwrap().values() {
        for slot in slots.as_object().unwrap().values() {
            want_vars.push(slot.as_str().unwrap().to_string());
        }
    }
    for v in setting["other_optimizer_variable_names"]
        .as_array()
        .unwrap()
    {
        want_vars.push(v.as_str().unwrap().to_string());
    }
    let mut got_vars: Vec<String> = s.layout.vars.iter().map(|v| v.name.clone()).collect();
    want_vars.sort();
    got_vars.sort();
    assert_eq!(got_vars, want_vars, "{name}: variables");

    let loss_tol = tol(states, |st| vec![num(&st["loss"])]);

    for (k, state) in states.iter().enumerate() {
        let at = format!("{name} state {k}");
        assert_eq!(int(&state["step"]), k as i64, "{at}: states in order");
        if k > 0 {
            // Step k trains on batch k - 1; its loss is evaluated at states[k - 1].
            gather(&mut s, &p, k - 1);
            s.call(step, p.batch).unwrap();
            let loss = s.output(step, "loss", p.batch).unwrap()[0];
            let want = num(&states[k - 1]["loss"]);
            assert_all_close(
                &format!("{name} loss of step {k}"),
                &[loss],
                &[want],
                loss_tol,
            );
        }
        assert_eq!(
            s.global_step,
            int(&state["global_step"]),
            "{at}: global_step"
        );
        for (var, want) in state["variables"].as_object().unwrap() {
            let got = s
                .var(var)
                .unwrap_or_else(|| panic!("{at}: no variable {var}"));
            let (_, want) = array(want);
            let t = tol(states, |st| array(&st["variables"][var]).1);
            assert_all_close(&format!("{at} {var}"), got, &want, t);
        }
        // The slots: compared by `check_update` (see the module doc).
        for (var, want) in state["other_optimizer_variables"].as_object().unwrap() {
            let got = s
                .var(var)
                .unwrap_or_else(|| panic!("{at}: no variable {var}"));
            let t = tol(states, |st| {
                vec![num(&st["other_optimizer_variables"][var])]
            });
            assert_all_close(&format!("{at} {var}"), got, &[num(want)], t);
        }

        // The loss and gradients at this state, on the next step's batch.
        gather(&mut s, &p, k);
        let global_step = s.global_step;
        s.call(grad, p.batch).unwrap();
        assert_eq!(s.global_step, global_step, "{at}: grad does not step");
        let loss = s.output(grad, "loss", p.batch).unwrap()[0];
        assert_all_close(
            &format!("{at} loss"),
            &[loss],
            &[num(&state["loss"])],
            loss_tol,
        );
        let grads = state["grads_at_this_state"].as_object().unwrap();
        assert_eq!(
            grads.len(),
            state["variables"].as_object().unwrap().len(),
            "{at}: a gradient per variable"
        );
        for (var, want) in grads {
            let what = format!("{at} gradient of {var}");
            let ids = p.ids.get(k).map(Vec::as_slice);
            let want = dense_gradient(&what, want, ids);
            let got = s
                .output(grad, &format!("grad/{var}"), p.batch)
                .unwrap_or_else(|| panic!("{what}: no output"));
            let t = tol(states, |st| {
                dense_gradient(&what, &st["grads_at_this_state"][var], None)
            });
            assert_all_close(&what, got, &want, t);
        }
    }
}

/// The spec that applies a given gradient: each variable of the setting
/// (its shape from the file, its value set before every step) with a loss
/// whose gradient is exactly the gradient fed: `reduce_sum(v * g_v)` with
/// `g_v` a non-trainable parameter for a dense gradient, and
/// `reduce_sum(embedding_lookup(v, ids) * rows)` with the `IndexedSlices`'
/// indices as the batch's `ids` and its values as the batch's `rows` for a
/// sparse one (TF's kinds in `gradient_kinds`). Returns the spec and the
/// batch (the number of indices; 1 without a sparse gradient).
fn update_spec(name: &str, setting: &serde_json::Value) -> (String, usize) {
    let first = &setting["states"][0];
    let kinds = setting["gradient_kinds"]
        .as_object()
        .expect("gradient_kinds");
    let (mut params, mut loss, mut data) = (String::new(), Vec::new(), None);
    for (var, value) in first["variables"].as_object().expect("variables") {
        let (dims, _) = array(value);
        let shape = common::shape_text(&dims);
        params += &format!("  {var}: {shape} = zeros\n");
        match kinds.get(var).and_then(|k| k.as_str()) {
            Some("dense") => {
                params += &format!("  {}: {shape} = zeros, trainable = false\n", fed(var));
                loss.push(format!("reduce_sum({var} * {})", fed(var)));
            }
            Some("IndexedSlices") => {
                assert!(data.is_none(), "{name}: one IndexedSlices gradient at most");
                let g = &first["grads_at_this_state"][var];
                let batch = ints(&g["indices"]).len();
                let width: usize = dims[1..].iter().product();
                assert_eq!(dims.len(), 2, "{name}: {var} is a table of rows");
                data = Some(format!(
                    "data synthetic(rows = {batch}, features = {})\n\
                     features {{ ids = integer(x0, num_buckets = {}) }}\n\
                     label rows: float from x1..x{width}\n",
                    width + 1,
                    dims[0]
                ));
                loss.push(format!("reduce_sum(embedding_lookup({var}, ids) * rows)"));
            }
            other => panic!("{name}: gradient kind {other:?} of {var}"),
        }
    }
    let batch = setting["states"][0]["grads_at_this_state"]
        .as_object()
        .expect("grads_at_this_state")
        .values()
        .find(|g| g.get("kind").is_some())
        .map_or(1, |g| ints(&g["indices"]).len());
    let text = format!(
        "model update\n{}params {{\n{params}}}\nloss = {}\noptimizer {}\ntrain {{ batch = {batch}, steps = 1 }}\n",
        data.unwrap_or_else(|| "data synthetic(rows = 1, features = 1)\n".to_string()),
        loss.join(" + "),
        optimizer_call(name, setting),
    );
    (text, batch)
}

/// The parameter holding the dense gradient fed for `var`.
fn fed(var: &str) -> String {
    format!("fed_gradient_of_{var}")
}

/// The update rule alone: from each recorded state of TF (variables, slots,
/// other optimizer variables and global step set to TF's) with TF's
/// gradient at that state fed ([`update_spec`]), one step of specc's
/// optimizer gives TF's next state. The gradient being TF's bits, the only
/// differences are the rounding of the update's own operations.
fn check_update(name: &str, setting: &serde_json::Value) {
    let (text, batch) = update_spec(name, setting);
    let src = SourceFile::new(format!("{name}.update.spec"), text.clone());
    let program = compile(&src, Functions::ALL).unwrap_or_else(|d| {
        panic!(
            "{name}: {:?}\n{text}",
            d.iter().map(|d| d.message.clone()).collect::<Vec<_>>()
        )
    });
    let mut s = program.session().unwrap();
    let step = s.function_index("step").unwrap();
    let states = setting["states"].as_array().unwrap();
    let slot_names = &setting["slot_variable_names"];
    // The sparse gradient of every state as the batches of one dataset.
    let sparse = states[0]["grads_at_this_state"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, g)| g.get("kind").is_some())
        .map(|(var, _)| var.clone());
    if let Some(var) = &sparse {
        let (mut ids, mut rows) = (Vec::new(), Vec::new());
        for st in states {
            let g = &st["grads_at_this_state"][var];
            let indices = ints(&g["indices"]);
            assert_eq!(indices.len(), batch, "{name}: indices of every state");
            ids.extend(indices.iter().map(|&i| i as i32));
            rows.extend(array(&g["values"]).1.iter().map(|&x| x as f32));
        }
        let width = rows.len() / ids.len();
        let data = Dataset::from_inputs(
            ids.len(),
            vec![
                InputData::new("ids", 1, Values::I32(ids)),
                InputData::new("rows", width, Values::F32(rows)),
            ],
        )
        .unwrap();
        s.bind(&data).unwrap();
        let all: Vec<u32> = (0..data.rows as u32).collect();
        // Gathered state by state below.
        s.gather(&data, &all[..batch]).unwrap();
        update_states(name, &mut s, states, slot_names, step, batch, |s, k| {
            let first = (k * batch) as u32;
            s.gather(&data, &all[first as usize..first as usize + batch])
                .unwrap();
        });
    } else {
        update_states(name, &mut s, states, slot_names, step, batch, |_, _| {});
    }
}

/// Runs [`check_update`]'s steps: `feed(s, k)` gathers state k's sparse
/// gradient; dense gradients are set here.
fn update_states(
    name: &str,
    s: &mut ProgramSession,
    states: &[serde_json::Value],
    slot_names: &serde_json::Value,
    step: usize,
    batch: usize,
    feed: impl Fn(&mut ProgramSession, usize),
) {
    let set = |s: &mut ProgramSession, var: &str, v: &[f64]| {
        let dst = s
            .var_mut(var)
            .unwrap_or_else(|| panic!("{name}: no variable {var}"));
        assert_eq!(dst.len(), v.len(), "{name}: size of {var}");
        for (d, &x) in dst.iter_mut().zip(v) {
            *d = x as f32;
        }
    };
    // Each quantity's trajectory scale, for the floor of its tolerance.
    let tol_of = |f: &dyn Fn(&serde_json::Value) -> Vec<f64>| {
        let s = states.iter().map(|st| scale(&f(st))).fold(0.0, f64::max);
        Tol::scaled(UPDATE_REL, UPDATE_FLOOR, s)
    };
    for (k, pair) in states.windows(2).enumerate() {
        let (now, next) = (&pair[0], &pair[1]);
        let at = format!("{name} update {k} -> {}", k + 1);
        for (var, v) in now["variables"].as_object().unwrap() {
            set(s, var, &array(v).1);
        }
        for (var, slots) in now["slots"].as_object().unwrap() {
            for (slot, v) in slots.as_object().unwrap() {
                set(s, slot_names[var][slot].as_str().unwrap(), &array(v).1);
            }
        }
        for (var, v) in now["other_optimizer_variables"].as_object().unwrap() {
            set(s, var, &[num(v)]);
        }
        for (var, g) in now["grads_at_this_state"].as_object().unwrap() {
            if g.get("kind").is_none() {
                set(s, &fed(var), &array(g).1);
            }
        }
        feed(s, k);
        s.global_step = int(&now["global_step"]);
        s.call(step, batch).unwrap();
        assert_eq!(
            s.global_step,
            int(&next["global_step"]),
            "{at}: global_step"
        );
        for (var, want) in next["variables"].as_object().unwrap() {
            let t = tol_of(&|st| array(&st["variables"][var]).1);
            assert_all_close(
                &format!("{at} {var}"),
                s.var(var).unwrap(),
                &array(want).1,
                t,
            );
        }
        for (var, slots) in next["slots"].as_object().unwrap() {
            for (slot, want) in slots.as_object().unwrap() {
                let tf_name = slot_names[var][slot].as_str().unwrap();
                let t = tol_of(&|st| array(&st["slots"][var][slot]).1);
                assert_all_close(
                    &format!("{at} {tf_name}"),
                    s.var(tf_name).unwrap(),
                    &array(want).1,
                    t,
                );
            }
        }
        for (var, want) in next["other_optimizer_variables"].as_object().unwrap() {
            let t = tol_of(&|st| vec![num(&st["other_optimizer_variables"][var])]);
            assert_all_close(&format!("{at} {var}"), s.var(var).unwrap(), &[num(want)], t);
        }
    }
}

fn run(section: &str, setting_name: &str) {
    let g = golden("optimizers.json");
    let setting = &g[section][setting_name];
    assert!(!setting.is_null(), "no {section} setting {setting_name}");
    let name = format!("{section}/{setting_name}");
    check_update(&name, setting);
    check_setting(&name, setting, &g["_meta"]);
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

/// Every setting of every section the golden file holds that has no test of
/// its own below (a regenerated file with other settings is still checked),
/// all checked before failing.
#[test]
fn every_other_setting_in_the_file() {
    let g = golden("optimizers.json");
    let mut found: Vec<&str> = g
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .filter(|k| !k.starts_with('_'))
        .collect();
    found.sort();
    let mut known = SECTIONS.to_vec();
    known.sort();
    assert_eq!(found, known, "the file's sections");
    let others = SECTIONS.iter().flat_map(|section| {
        g[*section]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(name, _)| !NAMED.contains(&name.as_str()))
            .map(move |(name, setting)| (format!("{section}/{name}"), setting))
    });
    common::check_all(others, |name, setting| {
        check_update(name, setting);
        check_setting(name, setting, &g["_meta"])
    });
}

macro_rules! settings {
    ($($test:ident => $name:literal),* $(,)?) => {
        /// The settings with a test of their own in every section.
        const NAMED: &[&str] = &[$($name),*];
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
