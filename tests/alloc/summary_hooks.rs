//! The summary hooks in a real training loop: `SummarySaverHook` writes every
//! scalar output of the step (`loss`, `learning_rate`, `global_norm`) and the
//! parameters' histograms at TF's steps (the first, then every N global
//! steps), with the values the step produced; `StepCounterHook` writes
//! `global_step/sec`; evaluations go to `eval/` under the training tags; and
//! between two writes the hooks allocate nothing on the training thread.

use specc_testkit::alloc::ThreadCount;
use specc_testkit::tmp::TempDir;

use specc_compiler::driver::{compile, Functions, Program};
use specc_grammar::SourceFile;
use specc_runtime::data::{self, Dataset};
use specc_runtime::source::ShuffledBatches;
use specc_runtime::summary::hooks::{create_eval_writer, EVAL_DIR, STEPS_PER_SEC_TAG};
use specc_runtime::summary::{
    event_files, read_events, EvaluationSummaryHook, Event, Histogram, StepCounterHook,
    SummarySaverHook, SummaryWriter, ValueKind, What,
};
use specc_runtime::train::{
    fit, EvaluationHook, Hook, RunContext, StepValues, StopAtStepHook, TrainError,
};

/// A fresh directory for test `name`, removed when dropped.
fn temp_dir(name: &str) -> TempDir {
    TempDir::new(&format!("summary-hooks-{name}"))
}

fn program(spec: &str) -> (Program, Dataset) {
    let root = env!("CARGO_MANIFEST_DIR");
    let text = std::fs::read_to_string(format!("{root}/specs/{spec}")).unwrap();
    let program = compile(&SourceFile::new(spec, text), Functions::TRAIN).unwrap();
    let ds = data::load(
        &program.model.data_source(format!("{root}/specs").as_ref()),
        &program.model.input_specs(),
    )
    .unwrap();
    (program, ds)
}

/// Records every step's values and, at chosen global steps, the parameters.
#[derive(Default)]
struct Recorder {
    steps: Vec<StepValues>,
    params_at: Vec<i64>,
    params: Vec<(i64, String, Vec<f32>)>,
}

impl Hook for Recorder {
    fn after_run(&mut self, ctx: &mut RunContext<'_>, v: &StepValues) -> Result<(), TrainError> {
        self.steps.push(*v);
        if self.params_at.contains(&v.global_step) {
            for var in &ctx.session().layout.vars {
                if matches!(var.kind, specc_runtime::abi::VarRole::Param { .. }) {
                    let x = ctx.session().var(&var.name).unwrap().to_vec();
                    self.params.push((v.global_step, var.name.clone(), x));
                }
            }
        }
        Ok(())
    }
}

fn summaries(events: &[Event]) -> Vec<(i64, &specc_runtime::summary::Summary)> {
    events
        .iter()
        .filter_map(|e| match &e.what {
            What::Summary(s) => Some((e.step, s)),
            _ => None,
        })
        .collect()
}

#[test]
fn summary_saver_writes_every_scalar_output_and_histograms_at_tfs_steps() {
    let (program, ds) = program("digits_mlp_ema.spec");
    let mut s = program.session().unwrap();
    let rows: Vec<u32> = (0..ds.rows as u32).collect();
    let mut batches = ShuffledBatches::new(&ds, &s.layout, rows, 64, 1797, 7).unwrap();
    let dir = temp_dir("saver");
    let writer = SummaryWriter::create(&dir).unwrap();
    let mut saver = SummarySaverHook::new(writer.clone(), 10, true);
    let mut rec = Recorder {
        params_at: vec![1, 11, 21],
        ..Recorder::default()
    };
    fit(
        &mut s,
        &mut batches,
        &mut [&mut StopAtStepHook::num_steps(25), &mut rec, &mut saver],
    )
    .unwrap();
    writer.close().unwrap();
    assert_eq!(
        saver.scalar_tags().collect::<Vec<_>>(),
        ["loss", "learning_rate", "global_norm"]
    );

    let events = read_events(writer.path()).unwrap();
    // file_version, SessionLog START at the first step, then the summaries.
    assert!(matches!(events[0].what, What::FileVersion(_)));
    match &events[1].what {
        What::SessionLog(l) => assert_eq!((events[1].step, l.status), (1, 1)),
        other => panic!("{other:?}"),
    }
    let sums = summaries(&events);
    let steps: Vec<i64> = sums.iter().map(|(s, _)| *s).collect();
    assert_eq!(steps, [1, 11, 21]);
    for (step, summary) in sums {
        let v = rec.steps.iter().find(|v| v.global_step == step).unwrap();
        let scalar = |tag: &str| {
            summary
                .values
                .iter()
                .find(|x| x.tag == tag)
                .and_then(|x| x.as_scalar())
        };
        assert_eq!(scalar("loss"), Some(f64::from(v.loss)), "step {step}");
        assert_eq!(
            scalar("learning_rate"),
            v.learning_rate.map(f64::from),
            "step {step}"
        );
        assert_eq!(
            scalar("global_norm"),
            v.global_norm.map(f64::from),
            "step {step}"
        );
        let params: Vec<_> = rec.params.iter().filter(|p| p.0 == step).collect();
        assert_eq!(params.len(), 4);
        for (_, name, values) in params {
            let got = summary
                .values
                .iter()
                .find(|x| &x.tag == name)
                .unwrap_or_else(|| panic!("no histogram of {name}"));
            let mut want = Histogram::new();
            want.add_finite(values).unwrap();
            assert_eq!(
                got.kind,
                ValueKind::Histo(want.to_proto()),
                "{name} at {step}"
            );
        }
        // Nothing but the scalars and the parameters (no slots, no averages).
        assert_eq!(summary.values.len(), 3 + 4);
    }
}

#[test]
fn step_counter_writes_global_step_per_sec_every_n_steps() {
    let (program, ds) = program("cancer_logreg.spec");
    let mut s = program.session().unwrap();
    let rows: Vec<u32> = (0..ds.rows as u32).collect();
    let mut batches = ShuffledBatches::new(&ds, &s.layout, rows, 32, 569, 7).unwrap();
    let dir = temp_dir("counter");
    let writer = SummaryWriter::create(&dir).unwrap();
    let mut counter = StepCounterHook::new(writer.clone(), 10);
    fit(
        &mut s,
        &mut batches,
        &mut [&mut StopAtStepHook::num_steps(35), &mut counter],
    )
    .unwrap();
    writer.close().unwrap();
    let events = read_events(writer.path()).unwrap();
    let sums = summaries(&events);
    // The first step starts the clock; then steps 11, 21, 31.
    let steps: Vec<i64> = sums.iter().map(|(s, _)| *s).collect();
    assert_eq!(steps, [11, 21, 31]);
    for (_, summary) in &sums {
        assert_eq!(summary.values.len(), 1);
        assert_eq!(summary.values[0].tag, STEPS_PER_SEC_TAG);
        let rate = summary.values[0].as_scalar().unwrap();
        assert!(rate.is_finite() && rate > 0.0, "{rate}");
    }
    let last = sums.last().unwrap().1.values[0].as_scalar().unwrap();
    assert_eq!(
        counter.steps_per_sec().map(|r| f64::from(r as f32)),
        Some(last)
    );
}

#[test]
fn evaluations_go_to_eval_under_the_training_tags() {
    let (program, ds) = program("cancer_logreg.spec");
    let model = &program.model;
    let (train, held_out) = model.held_out_split(&ds, 0.2);
    let mut s = program.session().unwrap();
    let mut batches = ShuffledBatches::new(&ds, &s.layout, train, 32, 569, 7).unwrap();
    let dir = temp_dir("eval");
    let train_writer = SummaryWriter::create(&dir).unwrap();
    let eval_writer = create_eval_writer(&dir).unwrap();
    let mut saver = SummarySaverHook::new(train_writer.clone(), 10, false);
    let mut eval = EvaluationSummaryHook::new(
        EvaluationHook::new(10, &ds, &held_out, &model.metrics),
        Some(eval_writer.clone()),
    );
    fit(
        &mut s,
        &mut batches,
        &mut [&mut StopAtStepHook::num_steps(25), &mut saver, &mut eval],
    )
    .unwrap();
    train_writer.close().unwrap();
    eval_writer.close().unwrap();
    assert_eq!(eval_writer.path().parent().unwrap(), dir.join(EVAL_DIR));
    assert_eq!(event_files(dir.join(EVAL_DIR)).unwrap().len(), 1);
    let events = read_events(eval_writer.path()).unwrap();
    let sums = summaries(&events);
    let results = &eval.evaluation.results;
    assert_eq!(sums.len(), results.len());
    assert_eq!(
        results.iter().map(|r| r.0).collect::<Vec<_>>(),
        [10, 20, 25]
    );
    let train_tags: Vec<String> = summaries(&read_events(train_writer.path()).unwrap())[0]
        .1
        .values
        .iter()
        .map(|v| v.tag.clone())
        .collect();
    for ((step, summary), (gs, e)) in sums.iter().zip(results) {
        assert_eq!(step, gs);
        let got: Vec<(&str, f64)> = summary
            .values
            .iter()
            .map(|v| (v.tag.as_str(), v.as_scalar().unwrap()))
            .collect();
        let mut want = vec![("loss", f64::from(e.loss as f32))];
        want.extend(
            e.metrics
                .iter()
                .map(|(n, v)| (n.as_str(), f64::from(*v as f32))),
        );
        assert_eq!(got, want);
        // `loss` is a tag of both runs, so TensorBoard overlays them.
        assert!(train_tags.iter().any(|t| t == "loss"));
    }
}

/// Counts the training thread's allocations from the end of step `from` to
/// the end of step `to`.
struct CountAllocations {
    from: u64,
    to: u64,
    count: Option<ThreadCount>,
    allocations: Option<usize>,
}

impl Hook for CountAllocations {
    fn after_run(&mut self, _ctx: &mut RunContext<'_>, v: &StepValues) -> Result<(), TrainError> {
        if v.step == self.from {
            self.count = Some(ThreadCount::start());
        }
        if v.step == self.to {
            self.allocations = self.count.take().map(|c| c.allocations());
        }
        Ok(())
    }
}

#[test]
fn summary_hooks_allocate_nothing_between_writes() {
    let (program, ds) = program("digits_mlp_ema.spec");
    let mut s = program.session().unwrap();
    let rows: Vec<u32> = (0..ds.rows as u32).collect();
    let mut batches = ShuffledBatches::new(&ds, &s.layout, rows, 64, 1797, 7).unwrap();
    let dir = temp_dir("alloc");
    let writer = SummaryWriter::create(&dir).unwrap();
    let mut saver = SummarySaverHook::new(writer.clone(), 100, true);
    let mut counter = StepCounterHook::new(writer.clone(), 100);
    // Writes at global steps 1 and 101; measured: steps 20 to 100.
    let mut count = CountAllocations {
        from: 20,
        to: 100,
        count: None,
        allocations: None,
    };
    fit(
        &mut s,
        &mut batches,
        &mut [
            &mut StopAtStepHook::num_steps(110),
            &mut saver,
            &mut counter,
            &mut count,
        ],
    )
    .unwrap();
    writer.close().unwrap();
    assert_eq!(count.allocations, Some(0));
    assert_eq!(summaries(&read_events(writer.path()).unwrap()).len(), 2 + 1);
}

/// A histogram of a non-finite parameter is an error, as TF's summary op
/// makes it, naming the parameter.
#[test]
fn a_non_finite_parameter_histogram_is_an_error_naming_it() {
    let (program, ds) = program("cancer_logreg.spec");
    let mut s = program.session().unwrap();
    s.var_mut("W").unwrap()[3] = f32::NAN;
    let rows: Vec<u32> = (0..ds.rows as u32).collect();
    let mut batches = ShuffledBatches::new(&ds, &s.layout, rows, 32, 569, 7).unwrap();
    let dir = temp_dir("nan");
    let writer = SummaryWriter::create(&dir).unwrap();
    let mut saver = SummarySaverHook::new(writer.clone(), 10, true);
    let e = fit(
        &mut s,
        &mut batches,
        &mut [&mut StopAtStepHook::num_steps(5), &mut saver],
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(text.contains("histogram for: W"), "{text}");
    assert!(
        text.contains(&writer.path().display().to_string()),
        "{text}"
    );
    writer.close().unwrap();
}
