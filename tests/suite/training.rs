//! End-to-end training of the shipped specs through the CLI, against known
//! accuracies: digits_mlp reaches at least 97% on its held-out split and
//! cancer_logreg at least 95% (the targets of the issue; the data sets' usual
//! results for these models). Plus properties of the runtime that training
//! relies on: the loop and its hooks (`fit`, stop, NaN, periodic evaluation,
//! variables by name), batch sources, the held-out split, epochs to steps,
//! and the errors a library user gets for bad batches and ids.

use std::process::Command;

use specc_compiler::driver::{compile, Functions};
use specc_grammar::SourceFile;
use specc_runtime::batches::{split_rows, split_rows_stratified, BatchOrder};
use specc_runtime::data::{self, Dataset, InputData, Source, Values};
use specc_runtime::metrics::{Metric, MetricKind};
use specc_runtime::source::{SequentialBatches, ShuffledBatches};
use specc_runtime::train::{
    evaluate_rows, fit, Duration, EvaluationHook, Hook, NanTensorHook, RunContext, StepValues,
    StopAtStepHook, TrainError,
};

fn run_json(spec: &str, extra: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_specc"))
        .arg("run")
        .arg(spec)
        .arg("--json")
        .args(extra)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let last = stdout.lines().last().expect("output");
    serde_json::from_str(last).unwrap_or_else(|e| panic!("last line is not JSON ({e}): {last}"))
}

/// A shipped spec's text.
fn read_spec(name: &str) -> String {
    std::fs::read_to_string(format!("{}/specs/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// A data file of `specs/data/` loaded for a compiled program's inputs.
fn load_csv(program: &specc_compiler::driver::Program, file: &str) -> data::Dataset {
    let path = format!("{}/specs/data/{file}", env!("CARGO_MANIFEST_DIR"));
    data::load(&Source::csv(path), &program.model.input_specs()).unwrap()
}

/// digits_mlp (the W1 workload, unchanged) trained three times as long: at
/// 3000 steps it classifies 349 of the 359 held-out digits (97.2%), one
/// mistake above the 97% target; from 8000 steps on it settles at 352
/// (98.05%), so the target holds with three mistakes to spare, and the
/// held-out loss (0.080) with a fifth.
#[test]
fn digits_mlp_reaches_97_percent_held_out() {
    let r = run_json("specs/digits_mlp.spec", &["--steps", "9000"]);
    assert_eq!(r["steps"], 9000);
    assert_eq!(r["eval"]["rows"], 359);
    let acc = r["eval"]["accuracy"].as_f64().unwrap();
    assert!(acc >= 0.97, "held-out accuracy {acc}");
    let loss = r["eval"]["loss"].as_f64().unwrap();
    assert!(loss <= 0.1, "held-out loss {loss}");
    assert!(r["train"]["accuracy"].as_f64().unwrap() >= 0.99);
}

#[test]
fn cancer_logreg_reaches_95_percent_held_out() {
    let r = run_json("specs/cancer_logreg.spec", &[]);
    let acc = r["eval"]["accuracy"].as_f64().unwrap();
    assert!(acc >= 0.95, "held-out accuracy {acc}");
    let auc = r["eval"]["auc"].as_f64().unwrap();
    assert!(auc >= 0.97, "held-out auc {auc}");
}

#[test]
fn steps_and_eval_fraction_flags_override_the_spec() {
    let r = run_json(
        "specs/cancer_logreg.spec",
        &["--steps", "10", "--eval-fraction", "0.5"],
    );
    assert_eq!(r["steps"], 10);
    let (train, eval) = (
        r["train"]["rows"].as_u64().unwrap(),
        r["eval"]["rows"].as_u64().unwrap(),
    );
    assert_eq!(train + eval, 569);
    assert!((eval as i64 - 285).abs() <= 1, "eval rows {eval}");
}

/// The batch size is a runtime loop bound: evaluating 100 rows in batches of
/// 64 + 36 gives the same loss as one row at a time (up to summation order).
#[test]
fn a_short_last_batch_needs_no_recompile_and_computes_the_same() {
    let text = read_spec("digits_mlp.spec");
    let program = compile(&SourceFile::new("digits_mlp.spec", text), Functions::TRAIN).unwrap();
    let ds = load_csv(&program, "digits.csv");
    let metrics = [Metric {
        name: "accuracy".into(),
        kind: MetricKind::Accuracy,
        per_example: 1,
    }];
    let rows: Vec<u32> = (0..100).collect();
    let mut s = program.session().unwrap();
    let batched = evaluate_rows(&mut s, &ds, &rows, &metrics).unwrap();
    let mut one_by_one = 0.0;
    for r in &rows {
        one_by_one += evaluate_rows(&mut s, &ds, &[*r], &metrics).unwrap().loss;
    }
    one_by_one /= rows.len() as f64;
    assert!(
        (batched.loss - one_by_one).abs() < 1e-5 * one_by_one.abs().max(1.0),
        "{} vs {one_by_one}",
        batched.loss
    );
    // Untrained, glorot-initialized: about chance.
    assert!(batched.loss > 1.5 && batched.loss < 3.5, "{}", batched.loss);
}

/// Every optimizer's example spec (`specs/optimizers/`) trains logistic
/// regression on the breast cancer data to the accuracy that model reaches.
#[test]
fn every_optimizer_example_learns_the_cancer_data() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/specs/optimizers");
    let mut specs: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "spec"))
        .collect();
    specs.sort();
    assert_eq!(
        specs.len(),
        12,
        "one example per tf.compat.v1.train optimizer, and adamw and lamb of specc's library"
    );
    for spec in specs {
        let r = run_json(spec.to_str().unwrap(), &[]);
        let train = r["train"]["accuracy"].as_f64().unwrap();
        let held = r["eval"]["accuracy"].as_f64().unwrap();
        let name = spec.display();
        assert!(train >= 0.98, "{name}: train accuracy {train}");
        assert!(held >= 0.94, "{name}: held-out accuracy {held}");
    }
}

/// The digits MLP with a schedule, global-norm clipping and moving averages
/// learns as well as the plain one, with and without the averages, and reports
/// the last step's learning rate (the cosine schedule's end value) and norm.
#[test]
fn digits_with_clipping_and_moving_averages() {
    let r = run_json("specs/digits_mlp_ema.spec", &["--eval-with-averages"]);
    let acc = r["eval"]["accuracy"].as_f64().unwrap();
    let acc_avg = r["eval_averages"]["accuracy"].as_f64().unwrap();
    assert!(acc >= 0.97, "held-out accuracy {acc}");
    assert!(acc_avg >= 0.97, "held-out accuracy with averages {acc_avg}");
    // cosine_decay(0.003, 3000, alpha = 0.05) at step 2999 (the last step's
    // global_step) is 0.003 * ((1 - 0.05) * 0.5 * (1 + cos(pi * 2999/3000)) + 0.05).
    let t = 2999.0f64 / 3000.0;
    let want = 0.003 * ((1.0 - 0.05) * 0.5 * (1.0 + (std::f64::consts::PI * t).cos()) + 0.05);
    let lr = r["learning_rate"].as_f64().unwrap();
    assert!(
        (lr - want).abs() < 1e-6 * want,
        "learning rate {lr}, want {want}"
    );
    let norm = r["global_norm"].as_f64().unwrap();
    assert!(norm.is_finite() && norm > 0.0, "global norm {norm}");
}

/// With `ema 1` the shadows never move: evaluating with the averages is
/// evaluating the initial model, and swapping back restores the trained one.
#[test]
fn averages_with_decay_one_stay_at_the_initial_values() {
    let text = read_spec("cancer_logreg.spec").replace("train {", "ema 1.0\ntrain {");
    let program = compile(&SourceFile::new("cancer.spec", text), Functions::TRAIN).unwrap();
    let ds = load_csv(&program, "breast_cancer.csv");
    let mut s = program.session().unwrap();
    let initial_w = s.var("W").unwrap().to_vec();
    assert_eq!(s.var("W/ExponentialMovingAverage").unwrap(), &initial_w[..]);
    let rows: Vec<u32> = (0..ds.rows as u32).collect();
    let before = evaluate_rows(&mut s, &ds, &rows, &[]).unwrap().loss;
    let mut batches = ShuffledBatches::new(&ds, &s.layout, rows.clone(), 32, 569, 7).unwrap();
    let trained = fit(
        &mut s,
        &mut batches,
        &mut [&mut StopAtStepHook::num_steps(200)],
    )
    .unwrap();
    assert_eq!(trained.steps, 200);
    let trained_w = s.var("W").unwrap().to_vec();
    assert_ne!(trained_w, initial_w);
    assert_eq!(s.var("W/ExponentialMovingAverage").unwrap(), &initial_w[..]);
    let after = evaluate_rows(&mut s, &ds, &rows, &[]).unwrap().loss;
    assert!(after < before * 0.5, "{after} vs {before}");
    s.swap_averages();
    assert_eq!(s.var("W").unwrap(), &initial_w[..]);
    let averaged = evaluate_rows(&mut s, &ds, &rows, &[]).unwrap().loss;
    assert_eq!(averaged, before);
    s.swap_averages();
    assert_eq!(s.var("W").unwrap(), &trained_w[..]);
}

/// Pixel intensities as ids into an embedding table (a sparse gradient,
/// applied lazily by Adagrad) learn the digits as well as the dense MLP.
#[test]
fn digits_embedding_reaches_97_percent_held_out() {
    let r = run_json("specs/digits_embedding.spec", &[]);
    let acc = r["eval"]["accuracy"].as_f64().unwrap();
    assert!(acc >= 0.97, "held-out accuracy {acc}");
}

/// A residual network written with blocks in a loop (`specs/digits_resnet.spec`)
/// classifies at least 98.5% of the held-out digits (it reaches 99.2%: 3
/// mistakes of 359, with 2 to spare).
#[test]
fn digits_resnet_reaches_98_5_percent_held_out() {
    let r = run_json("specs/digits_resnet.spec", &[]);
    assert_eq!(r["eval"]["rows"], 359);
    let acc = r["eval"]["accuracy"].as_f64().unwrap();
    assert!(acc >= 0.985, "held-out accuracy {acc}");
}

/// A convolutional network written with specc's layer library
/// (`specs/digits_layers.spec`) classifies at least 98.5% of the held-out
/// digits (it reaches 99.2%: 3 mistakes of 359, with 2 to spare).
#[test]
fn digits_layers_reaches_98_5_percent_held_out() {
    let r = run_json("specs/digits_layers.spec", &[]);
    assert_eq!(r["eval"]["rows"], 359);
    let acc = r["eval"]["accuracy"].as_f64().unwrap();
    assert!(acc >= 0.985, "held-out accuracy {acc}");
}

/// W8's LSTM over the rows of the digits (`specs/digits_lstm.spec`, TF's
/// `LSTMCell(128)` in `dynamic_rnn`) classifies at least 97% of the
/// held-out digits after its 4,000 steps (97.2%: 10 mistakes of 359; the
/// run is the same bits on every machine).
#[test]
fn digits_lstm_reaches_97_percent_held_out() {
    let r = run_json("specs/digits_lstm.spec", &[]);
    assert_eq!(r["eval"]["rows"], 359);
    let acc = r["eval"]["accuracy"].as_f64().unwrap();
    assert!(acc >= 0.97, "held-out accuracy {acc}");
}

/// The LSTM sentiment classifier on the Rotten Tomatoes snippets
/// (`specs/text_lstm.spec`: words split by `sep = whitespace`, a hashed
/// sequence column's embeddings into `dynamic_rnn(lstm_cell(32))`, its
/// outputs averaged over each snippet's length) classifies at least 71% of
/// the 973 held-out snippets after its 730 steps (it reaches 72.05%: 701;
/// the run is the same bits on every machine).
#[test]
fn text_lstm_reaches_71_percent_held_out() {
    let r = run_json("specs/text_lstm.spec", &[]);
    assert_eq!(r["steps"], 730);
    assert_eq!(r["eval"]["rows"], 973);
    let acc = r["eval"]["accuracy"].as_f64().unwrap();
    assert!(acc >= 0.71, "held-out accuracy {acc}");
}

/// Its bag-of-words baseline (`specs/baselines/text_bow.spec`:
/// `linear_model` over the same split words, no word order) classifies at
/// least 70% of the same held-out snippets (70.91%: 690 of 973).
#[test]
fn text_bow_reaches_70_percent_held_out() {
    let r = run_json("specs/baselines/text_bow.spec", &[]);
    assert_eq!(r["steps"], 4863);
    assert_eq!(r["eval"]["rows"], 973);
    let acc = r["eval"]["accuracy"].as_f64().unwrap();
    assert!(acc >= 0.70, "held-out accuracy {acc}");
}

/// W9's transformer written with blocks and batched products
/// (`specs/text_transformer.spec`) meets the workload's check after its 500
/// steps: training accuracy 0.72-0.82 and loss 0.47-0.60 on all 4,096
/// sequences (../shared/bench/WORKLOADS.md, W9).
#[test]
fn text_transformer_meets_the_w9_check_at_500_steps() {
    let r = run_json("specs/text_transformer.spec", &[]);
    assert_eq!(r["steps"], 500);
    assert_eq!(r["train"]["rows"], 4096);
    let acc = r["train"]["accuracy"].as_f64().unwrap();
    let loss = r["train"]["loss"].as_f64().unwrap();
    assert!((0.72..=0.82).contains(&acc), "train accuracy {acc}");
    assert!((0.47..=0.60).contains(&loss), "train loss {loss}");
}

/// The cancer model, compiled, with its data.
fn cancer(text: &str) -> (specc_compiler::driver::Program, data::Dataset) {
    let program = compile(&SourceFile::new("cancer.spec", text), Functions::TRAIN).unwrap();
    let ds = load_csv(&program, "breast_cancer.csv");
    (program, ds)
}

/// Every variable's bits, by name.
fn variable_bits(s: &specc_runtime::session::Session) -> Vec<(String, Vec<u32>)> {
    s.layout
        .vars
        .iter()
        .map(|v| {
            let bits = s
                .var(&v.name)
                .unwrap()
                .iter()
                .map(|x| x.to_bits())
                .collect();
            (v.name.clone(), bits)
        })
        .collect()
}

/// Records every step's loss.
#[derive(Default)]
struct Losses(Vec<f32>);

impl Hook for Losses {
    fn after_run(&mut self, _ctx: &mut RunContext<'_>, v: &StepValues) -> Result<(), TrainError> {
        self.0.push(v.loss);
        Ok(())
    }
}

/// `fit` over `ShuffledBatches` is exactly the bench's loop written with the
/// low-level calls: rows in the `BatchOrder`, gathered, one step each.
#[test]
fn fit_computes_the_same_bits_as_the_bench_loop_by_hand() {
    let (program, ds) = cancer(&read_spec("cancer_logreg.spec"));
    let t = &program.model.train;
    let (batch, steps) = (t.batch as usize, 300u64); // 300 * 32 rows: 17 epochs
    let rows: Vec<u32> = (0..ds.rows as u32).collect();

    let mut s = program.session().unwrap();
    let mut batches = ShuffledBatches::new(&ds, &s.layout, rows, batch, t.shuffle, t.seed).unwrap();
    let mut losses = Losses::default();
    let summary = fit(
        &mut s,
        &mut batches,
        &mut [&mut StopAtStepHook::num_steps(steps), &mut losses],
    )
    .unwrap();
    assert_eq!((summary.steps, summary.exhausted), (steps, false));
    assert_eq!(s.global_step, steps as i64);
    assert_eq!(
        batches.epochs_started(),
        (steps as usize * batch).div_ceil(ds.rows)
    );

    let mut by_hand = program.session().unwrap();
    by_hand.bind(&ds).unwrap();
    let step = by_hand.function_index("step").unwrap();
    let mut order = BatchOrder::new(ds.rows, t.shuffle, t.seed);
    let mut idx = vec![0u32; batch];
    let mut hand_losses = Vec::new();
    for _ in 0..steps {
        order.next_batch(&mut idx);
        by_hand.gather(&ds, &idx).unwrap();
        by_hand.call(step, batch).unwrap();
        hand_losses.push(by_hand.output(step, "loss", batch).unwrap()[0]);
    }
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&losses.0), bits(&hand_losses));
    assert_eq!(variable_bits(&s), variable_bits(&by_hand));
}

/// A hook that checks the order of the calls, reads and writes a variable
/// by its TF name, and stops the run.
#[derive(Default)]
struct Probe {
    begins: u32,
    befores: u64,
    afters: u64,
    ends: u32,
    global_step_before: i64,
}

impl Hook for Probe {
    fn begin(&mut self, ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        self.begins += 1;
        assert_eq!(ctx.global_step(), 0);
        assert!(ctx.last_step().is_none());
        assert_eq!(ctx.variable("W").unwrap().shape(), &[30, 1]);
        Ok(())
    }
    fn before_run(&mut self, ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        self.befores += 1;
        assert_eq!(self.befores, self.afters + 1, "before_run once per step");
        self.global_step_before = ctx.global_step();
        Ok(())
    }
    fn after_run(&mut self, ctx: &mut RunContext<'_>, v: &StepValues) -> Result<(), TrainError> {
        self.afters += 1;
        assert_eq!(v.step, self.afters);
        assert_eq!(v.global_step, self.global_step_before + 1);
        assert_eq!(ctx.global_step(), v.global_step);
        assert_eq!(v.rows, 32);
        assert_eq!(ctx.step_output("loss").unwrap(), &[v.loss]);
        assert_eq!(v.learning_rate, Some(0.1));
        assert_eq!(v.global_norm, None);
        if v.step == 3 {
            ctx.variable_mut("W").unwrap().fill(0.25);
            ctx.request_stop();
        }
        Ok(())
    }
    fn end(&mut self, ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        self.ends += 1;
        assert_eq!(ctx.last_step().unwrap().step, 3);
        Ok(())
    }
}

#[test]
fn hooks_run_around_every_step_and_can_stop_the_run_and_write_variables() {
    let (program, ds) = cancer(&read_spec("cancer_logreg.spec"));
    let rows: Vec<u32> = (0..ds.rows as u32).collect();
    let mut s = program.session().unwrap();
    let mut batches = ShuffledBatches::new(&ds, &s.layout, rows, 32, 569, 7).unwrap();
    let mut probe = Probe::default();
    let summary = fit(
        &mut s,
        &mut batches,
        &mut [&mut probe, &mut StopAtStepHook::num_steps(100)],
    )
    .unwrap();
    assert_eq!((summary.steps, summary.last.unwrap().step), (3, 3));
    assert_eq!(
        (probe.begins, probe.befores, probe.afters, probe.ends),
        (1, 3, 3, 1)
    );
    // The write after the third step is what the session holds: no step ran after it.
    assert!(s.var("W").unwrap().iter().all(|&w| w == 0.25));
    // StopAtStepHook by global step: 5 more steps from global step 3.
    let summary = fit(
        &mut s,
        &mut batches,
        &mut [&mut StopAtStepHook::last_step(8)],
    )
    .unwrap();
    assert_eq!((summary.steps, s.global_step), (5, 8));
    // Already there: no step at all.
    let summary = fit(
        &mut s,
        &mut batches,
        &mut [&mut StopAtStepHook::last_step(8)],
    )
    .unwrap();
    assert_eq!((summary.steps, summary.last), (0, None));
}

/// NanTensorHook fails the run at the first non-finite loss, naming the step
/// and the global step; without failing, it stops the run there.
#[test]
fn nan_tensor_hook_stops_at_the_first_non_finite_loss() {
    let text =
        read_spec("cancer_logreg.spec").replace("learning_rate = 0.1", "learning_rate = 1e38");
    let (program, ds) = cancer(&text);
    let rows: Vec<u32> = (0..ds.rows as u32).collect();
    let mut s = program.session().unwrap();
    let mut batches = ShuffledBatches::new(&ds, &s.layout, rows.clone(), 32, 569, 7).unwrap();
    let mut losses = Losses::default();
    let err = fit(
        &mut s,
        &mut batches,
        &mut [
            &mut StopAtStepHook::num_steps(1000),
            &mut losses,
            &mut NanTensorHook::default(),
        ],
    )
    .unwrap_err();
    let n = losses.0.len() as u64;
    assert!((2..1000).contains(&n), "{n} steps");
    assert!(losses.0[..n as usize - 1].iter().all(|l| l.is_finite()));
    let last = losses.0[n as usize - 1];
    assert!(!last.is_finite());
    let TrainError::NanLoss {
        step,
        global_step,
        loss,
    } = err
    else {
        panic!("{err:?}");
    };
    assert_eq!(
        (step, global_step, loss.to_bits()),
        (n, n as i64, last.to_bits())
    );
    assert_eq!(
        err.to_string(),
        format!(
            "the loss became {last} at step {n} (global_step {n}); lower the learning rate or check the data"
        )
    );

    let mut s = program.session().unwrap();
    let mut batches = ShuffledBatches::new(&ds, &s.layout, rows, 32, 569, 7).unwrap();
    let mut nan = NanTensorHook {
        fail_on_nan_loss: false,
        stopped_at: None,
    };
    let summary = fit(
        &mut s,
        &mut batches,
        &mut [&mut StopAtStepHook::num_steps(1000), &mut nan],
    )
    .unwrap();
    assert_eq!(summary.steps, n);
    assert_eq!(nan.stopped_at.unwrap().step, n);
}

/// Periodic evaluation: every 40 steps and at the end, each equal to
/// evaluating the model at that point.
#[test]
fn evaluation_hook_evaluates_every_n_steps_and_at_the_end() {
    let (program, ds) = cancer(&read_spec("cancer_logreg.spec"));
    let model = &program.model;
    let (train, held_out) = model.held_out_split(&ds, 0.2);
    let mut s = program.session().unwrap();
    let mut batches = ShuffledBatches::new(&ds, &s.layout, train, 32, 569, 7).unwrap();
    let mut eval = EvaluationHook::new(40, &ds, &held_out, &model.metrics);
    fit(
        &mut s,
        &mut batches,
        &mut [&mut StopAtStepHook::num_steps(100), &mut eval],
    )
    .unwrap();
    let steps: Vec<i64> = eval.results.iter().map(|(g, _)| *g).collect();
    assert_eq!(steps, [40, 80, 100]);
    let now = evaluate_rows(&mut s, &ds, &held_out, &model.metrics).unwrap();
    assert_eq!(eval.results[2].1, now);
    assert_eq!(now.rows, held_out.len());
    let names: Vec<&str> = now.metrics.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["accuracy", "auc"]);
    // Training helps: the loss at 100 steps is below the one at 40.
    assert!(eval.results[2].1.loss < eval.results[0].1.loss);
}

/// A source that runs out ends the loop: one pass over 100 rows in batches
/// of 32 is four steps, the last of 4 rows.
#[test]
fn a_source_that_runs_out_ends_the_loop() {
    let (program, ds) = cancer(&read_spec("cancer_logreg.spec"));
    let rows: Vec<u32> = (0..100).collect();
    let mut s = program.session().unwrap();
    let mut one_pass = SequentialBatches::new(&ds, &s.layout, &rows, 32).unwrap();
    let mut losses = Losses::default();
    let summary = fit(&mut s, &mut one_pass, &mut [&mut losses]).unwrap();
    assert!(summary.exhausted);
    assert_eq!(summary.steps, 4);
    assert_eq!(summary.last.unwrap().rows, 4);
    assert_eq!(losses.0.len(), 4);
    one_pass.rewind();
    assert_eq!(fit(&mut s, &mut one_pass, &mut []).unwrap().steps, 4);
}

/// Ids from memory get the loader's checks: negative ids other than the
/// feature columns' padding id -1 are refused by `Dataset::from_inputs`;
/// -1 in a plain id input, and ids beyond the model's range, when bound to
/// it; with the input and the row, instead of being clamped into the table.
#[test]
fn ids_from_memory_are_checked_not_clamped() {
    let text = read_spec("digits_embedding.spec");
    let program = compile(&SourceFile::new("emb.spec", text), Functions::TRAIN).unwrap();
    let mut s = program.session().unwrap();
    let dataset = |pixel: i32| {
        let mut pixels = vec![0i32; 2 * 64];
        pixels[64 + 5] = pixel;
        Dataset::from_inputs(
            2,
            vec![
                InputData::new("pixels", 64, Values::I32(pixels)),
                InputData::new("label", 1, Values::I32(vec![3, 4])),
            ],
        )
    };
    let e = dataset(-2).unwrap_err();
    assert!(
        e.contains("`pixels`") && e.contains("row 2") && e.contains("non-negative"),
        "{e}"
    );
    let e = s.bind(&dataset(-1).unwrap()).unwrap_err();
    assert!(
        e.contains("`pixels`") && e.contains("row 2") && e.contains("non-negative"),
        "{e}"
    );
    let ok = dataset(16).unwrap();
    s.bind(&ok).unwrap();
    let bad = dataset(17).unwrap();
    let e = s.bind(&bad).unwrap_err();
    assert_eq!(
        e,
        "input `pixels`, row 2: id 17 is out of range: expected 0 <= id < 17"
    );
    let e = ShuffledBatches::new(&bad, &s.layout, vec![0, 1], 2, 0, 0).unwrap_err();
    assert!(e.contains("out of range"), "{e}");
    // A class label beyond the logits.
    let labels = Dataset::from_inputs(
        1,
        vec![
            InputData::new("pixels", 64, Values::I32(vec![0; 64])),
            InputData::new("label", 1, Values::I32(vec![10])),
        ],
    )
    .unwrap();
    let e = s.bind(&labels).unwrap_err();
    assert!(e.contains("`label`") && e.contains("0 <= id < 10"), "{e}");
}

/// A batch beyond the compiled maximum, an empty batch, or rows that are
/// not in the data are errors a library user can handle, not panics.
#[test]
fn bad_batches_are_errors_not_panics() {
    let (program, ds) = cancer(&read_spec("cancer_logreg.spec"));
    let mut s = program.session().unwrap();
    let step = s.function_index("step").unwrap();
    let max = s.max_batch();
    assert_eq!(max, 32);
    let rows: Vec<u32> = (0..33).collect();
    assert!(s
        .gather(&ds, &rows[..1])
        .unwrap_err()
        .contains("before bind"));
    s.bind(&ds).unwrap();
    let e = s.gather(&ds, &rows).unwrap_err();
    assert!(e.contains("33 rows") && e.contains("32"), "{e}");
    assert!(s.gather(&ds, &[569]).unwrap_err().contains("out of range"));
    s.gather(&ds, &rows[..32]).unwrap();
    assert!(s.call(step, 33).unwrap_err().contains("33"));
    assert!(s.call(step, 0).is_err());
    assert!(s.call(99, 1).is_err());
    assert_eq!(s.global_step, 0, "a refused call runs nothing");
    s.call(step, 32).unwrap();
    assert_eq!(s.global_step, 1);
    let e = ShuffledBatches::new(&ds, &s.layout, rows.clone(), 33, 0, 0).unwrap_err();
    assert!(e.contains("larger than the compiled maximum"), "{e}");
    assert!(ShuffledBatches::new(&ds, &s.layout, vec![], 32, 0, 0).is_err());
    assert!(ShuffledBatches::new(&ds, &s.layout, vec![569], 32, 0, 0).is_err());
    assert!(SequentialBatches::new(&ds, &s.layout, &rows, 0).is_err());
}

/// The held-out split is stratified by the class label when the model has
/// one (digits: every class keeps its share), and plain otherwise (cancer's
/// float label).
#[test]
fn the_held_out_split_is_stratified_by_the_class_label() {
    let text = read_spec("digits_mlp.spec");
    let program = compile(&SourceFile::new("digits.spec", text), Functions::TRAIN).unwrap();
    let ds = load_csv(&program, "digits.csv");
    let model = &program.model;
    assert_eq!(model.class_label(), Some("label"));
    let (train, held) = model.held_out_split(&ds, 0.2);
    let labels = ds.input("label").unwrap().values.as_i32().unwrap();
    assert_eq!(train.len() + held.len(), ds.rows);
    for c in 0..10 {
        let n = labels.iter().filter(|&&l| l == c).count();
        let h = held.iter().filter(|&&r| labels[r as usize] == c).count();
        assert_eq!(h, (n as f64 * 0.2).round() as usize, "class {c}");
    }
    assert_eq!(
        (train, held),
        split_rows_stratified(labels, 0.2, model.train.split_seed)
    );

    let (program, ds) = cancer(&read_spec("cancer_logreg.spec"));
    assert_eq!(program.model.class_label(), None);
    assert_eq!(
        program.model.held_out_split(&ds, 0.2),
        split_rows(569, 0.2, program.model.train.split_seed)
    );
}

/// `epochs` become `ceil(epochs * train rows / batch)` steps: cancer holds out
/// 114 of 569 rows, so 2 epochs of the 455 others in batches of 32 are 29 steps.
#[test]
fn epochs_become_steps_over_the_training_rows() {
    assert_eq!(Duration::Epochs(2).steps(455, 32), 29);
    assert_eq!(Duration::Epochs(1).steps(64, 64), 1);
    assert_eq!(Duration::Steps(7).steps(455, 32), 7);
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("epochs");
    std::fs::create_dir_all(&dir).unwrap();
    let spec = dir.join("cancer_epochs.spec");
    let text = read_spec("cancer_logreg.spec")
        .replace("steps = 5000", "epochs = 2")
        .replace(
            "data/breast_cancer.csv",
            concat!(env!("CARGO_MANIFEST_DIR"), "/specs/data/breast_cancer.csv"),
        );
    std::fs::write(&spec, text).unwrap();
    let r = run_json(spec.to_str().unwrap(), &[]);
    assert_eq!(r["steps"], 29);
    assert_eq!(r["train"]["rows"], 455);
}
