//! Runtime checks (`tf.debugging`) and the origin of a non-finite loss, end
//! to end: a check that fails at a known step stops `fit` with that step, the
//! check's span and message (and the CLI renders them with a caret); passing
//! checks train to the same bits as the spec without them; the static checks
//! are compile errors; a NaN or infinite loss is traced to the first value of
//! the spec that became non-finite in that step.
//!
//! The specs are digits_mlp with one piece added; a check fails at a known
//! step by depending on `global_step` (the step before which it is `K` is
//! step `K + 1`), so every expected step comes from the constant written into
//! the spec, and every expected span from the spec's text.

use std::path::PathBuf;
use std::process::Command;

use specc::run::replay::find_nan_origin;
use specc_compiler::debug::ValueKind;
use specc_compiler::driver::{compile, Functions, Options, Program};
use specc_grammar::{Code, SourceFile};
use specc_runtime::abi::AssertionValue;
use specc_runtime::data::{self, Source};
use specc_runtime::session::Session;
use specc_runtime::source::ShuffledBatches;
use specc_runtime::train::{fit, NanTensorHook, StopAtStepHook, TrainError};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn digits_mlp() -> String {
    std::fs::read_to_string(format!("{ROOT}/specs/digits_mlp.spec")).unwrap()
}

/// digits_mlp with `from` replaced by `to` (exactly once).
fn digits_with(from: &str, to: &str) -> String {
    let base = digits_mlp();
    assert_eq!(base.matches(from).count(), 1, "digits_mlp has one {from:?}");
    base.replacen(from, to, 1)
}

/// digits_mlp with `line` added before its loss.
fn digits_plus(line: &str) -> String {
    digits_with("\nloss = ", &format!("\n{line}\nloss = "))
}

fn build(text: &str) -> (Program, data::Dataset) {
    let program = compile(&SourceFile::new("d.spec", text), Functions::TRAIN)
        .unwrap_or_else(|d| panic!("{d:?}"));
    let ds = data::load(
        &Source::csv(format!("{ROOT}/specs/data/digits.csv")),
        &program.model.input_specs(),
    )
    .unwrap();
    (program, ds)
}

/// The run's batch source, as `specc run` makes it (all rows).
fn batches<'d>(program: &Program, ds: &'d data::Dataset, s: &Session) -> ShuffledBatches<'d> {
    let t = &program.model.train;
    let rows: Vec<u32> = (0..ds.rows as u32).collect();
    ShuffledBatches::new(ds, &s.layout, rows, t.batch as usize, t.shuffle, t.seed).unwrap()
}

/// Every variable's bits, by TF name.
type VariableBits = Vec<(String, Vec<u32>)>;

/// Trains `steps` steps (with NanTensorHook); the result and the session's
/// variables' bits.
fn train(text: &str, steps: u64) -> (Result<u64, TrainError>, VariableBits) {
    let (program, ds) = build(text);
    let mut s = program.session().unwrap();
    let mut source = batches(&program, &ds, &s);
    let r = fit(
        &mut s,
        &mut source,
        &mut [
            &mut StopAtStepHook::num_steps(steps),
            &mut NanTensorHook::default(),
        ],
    )
    .map(|f| f.steps);
    let bits = s
        .layout
        .vars
        .iter()
        .map(|v| {
            let b = s
                .var(&v.name)
                .unwrap()
                .iter()
                .map(|x| x.to_bits())
                .collect();
            (v.name.clone(), b)
        })
        .collect();
    (r, bits)
}

/// The byte range of `needle` (exactly once) in `text`.
fn span_of(text: &str, needle: &str) -> (usize, usize) {
    assert_eq!(text.matches(needle).count(), 1, "{needle:?}");
    let start = text.find(needle).unwrap();
    (start, start + needle.len())
}

/// The global step at which the checks below first fail (step K + 1).
const K: i64 = 3;

/// `check_numerics(h, "hidden layer")` on a hidden layer that becomes NaN
/// when `global_step` reaches K: `fit` stops at step K + 1 with the
/// message, TF's "Tensor had NaN values", and the span of the call.
#[test]
fn check_numerics_reports_its_message_span_and_step() {
    let call = format!(
        "check_numerics(relu(pixels @ W1 + b1) + 0 * log({K} - global_step), \"hidden layer\")"
    );
    let text = digits_with("relu(pixels @ W1 + b1)", &call);
    let (r, _) = train(&text, 100);
    let e = r.unwrap_err();
    let TrainError::Assertion {
        step,
        global_step,
        assertion,
        value,
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!((*step, *global_step), (K as u64 + 1, K + 1));
    assert_eq!(assertion.kind, "check_numerics");
    assert_eq!(assertion.message, "hidden layer");
    assert_eq!(assertion.value, AssertionValue::NonFinite);
    assert_eq!(assertion.span, span_of(&text, &call));
    assert_eq!(*value, 2.0, "NaN");
    assert!(
        e.to_string()
            .contains("hidden layer: Tensor had NaN values"),
        "{e}"
    );
}

/// An infinity without a NaN is TF's "Tensor had Inf values".
#[test]
fn check_numerics_tells_an_infinity_from_a_nan() {
    let call = format!("check_numerics(log({K} - global_step + 0 * b1), \"log\")");
    let text = digits_plus(&format!("z = {call}"));
    let (r, _) = train(&text, 100);
    let e = r.unwrap_err();
    let TrainError::Assertion {
        step,
        assertion,
        value,
        ..
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(*step, K as u64 + 1);
    assert_eq!(*value, 1.0, "inf, no NaN");
    assert_eq!(assertion.describe(*value), "Tensor had Inf values");
}

/// `assert_less(x, y, message)` fails at the first step where it does not
/// hold, naming its line and counting the failing elements (all of `h`).
#[test]
fn assert_less_reports_the_step_and_the_failing_elements() {
    let call = format!("assert_less(h * 0 + global_step, {K}, message = \"too far\")");
    let text = digits_plus(&call);
    let (program, _) = build(&text);
    let (r, _) = train(&text, 100);
    let e = r.unwrap_err();
    let TrainError::Assertion {
        step,
        assertion,
        value,
        ..
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(*step, K as u64 + 1);
    assert_eq!(assertion.kind, "assert_less");
    assert_eq!(assertion.message, "too far");
    assert_eq!(assertion.span, span_of(&text, &call));
    // Every element of h fails: batch * width.
    let h = program
        .model
        .bindings
        .iter()
        .find(|b| b.0 == "h")
        .unwrap()
        .1;
    let per_row = program.model.graph.shape(h).fixed_numel();
    let elements = program.model.train.batch as u64 * per_row;
    assert_eq!(*value, elements as f32);
    assert!(
        e.to_string().contains(&format!(
            "too far: Condition x < y did not hold element-wise ({elements} elements)"
        )),
        "{e}"
    );
}

/// `assert_positive(x)` holds while `K - global_step > 0`.
#[test]
fn assert_positive_fails_when_its_value_reaches_zero() {
    let call = format!("assert_positive({K} - global_step)");
    let text = digits_plus(&call);
    let (r, _) = train(&text, 100);
    let e = r.unwrap_err();
    let TrainError::Assertion {
        step,
        assertion,
        value,
        ..
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!((*step, *value), (K as u64 + 1, 1.0));
    assert_eq!(assertion.span, span_of(&text, &call));
    assert_eq!(assertion.condition, "x > 0");
}

/// `assert_near(x, y)` uses TF's float32 defaults, `rtol = atol = 10 * eps`:
/// `1 + n * eps` is near 1 while `n * eps <= 10 * eps + 10 * eps * 1`, so it
/// first fails at n = 21.
#[test]
fn assert_near_uses_tf_default_tolerances() {
    let eps = f32::EPSILON;
    let tol = 10.0 * eps + 10.0 * eps * 1.0;
    let first_fail = (tol / eps) as i64 + 1;
    let call = format!("assert_near(1.0 + global_step * {eps:e}, 1.0)");
    let text = digits_plus(&call);
    let (r, _) = train(&text, 100);
    let e = r.unwrap_err();
    let TrainError::Assertion { step, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(*step, first_fail as u64 + 1, "{e}");
    // With atol = 0 and rtol = 10 * eps it fails at n = 11.
    let call = format!("assert_near(1.0 + global_step * {eps:e}, 1.0, atol = 0)");
    let (r, _) = train(&digits_plus(&call), 100);
    let e = r.unwrap_err();
    let TrainError::Assertion { step, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(*step, (10.0 * eps / eps) as u64 + 2, "{e}");
}

/// Checks that hold change nothing: the variables after training are the
/// same bits as without them.
#[test]
fn passing_checks_train_to_the_same_bits() {
    let steps = 60;
    let (r0, plain) = train(&digits_mlp(), steps);
    assert_eq!(r0.unwrap(), steps);
    let checked = digits_with(
        "relu(pixels @ W1 + b1)",
        "check_numerics(relu(pixels @ W1 + b1), \"hidden layer\")",
    )
    .replacen(
        "\nloss = ",
        "\nassert_non_negative(h)\nassert_less(logits, 1e30, message = \"bounded\")\n\
         assert_near(h, h)\nassert_equal(label, label)\nassert_rank(logits, 2)\n\
         assert_type(label, int32)\nz = assert_all_finite(logits, \"logits\")\nloss = ",
        1,
    );
    let (r1, with_checks) = train(&checked, steps);
    assert_eq!(r1.unwrap(), steps);
    assert_eq!(plain.len(), with_checks.len());
    for (a, b) in plain.iter().zip(&with_checks) {
        assert!(a == b, "variable {} differs with checks", a.0);
    }
}

/// A spec without checks has no check outputs and nothing to read.
#[test]
fn a_spec_without_checks_has_no_check_outputs() {
    let (program, _) = build(&digits_mlp());
    let s = program.session().unwrap();
    let step = s.function_index("step").unwrap();
    assert!(s.function_layout(step).assertions.is_empty());
    assert!(s.function_layout(step).outputs.iter().all(|o| !o
        .name
        .starts_with(specc_runtime::abi::OUTPUT_ASSERTION_PREFIX)));
}

/// `assert_rank` and `assert_type` are static: compile errors with a caret
/// under the call.
#[test]
fn static_checks_are_compile_errors() {
    for (call, code) in [
        ("assert_rank(h, 3, message = \"rank\")", Code::RankAssertion),
        ("assert_rank_at_least(h, 3)", Code::RankAssertion),
        ("assert_type(label, float32)", Code::TypeAssertion),
        ("assert_type(h, int32)", Code::TypeAssertion),
    ] {
        let text = digits_plus(call);
        let d = specc_compiler::check(&SourceFile::new("d.spec", text.as_str()))
            .map(|_| ())
            .unwrap_err();
        assert_eq!(d.len(), 1, "{call}: {d:?}");
        assert_eq!(d[0].code, code, "{call}");
        let (s, e) = span_of(&text, call);
        assert_eq!((d[0].span.start as usize, d[0].span.end as usize), (s, e));
    }
    // Checks of constants are decided when compiling, as TF does.
    let x = 2.0f32;
    let y = x / 4.0;
    for (call, fails) in [
        (format!("assert_less({x}, {y})"), true),
        (format!("assert_greater({x}, {y})"), false),
        (format!("assert_positive(-{y})"), true),
        (format!("assert_near({x}, {x} + {y})"), true),
        (format!("assert_equal({x}, {x})"), false),
    ] {
        let text = digits_plus(&call);
        match specc_compiler::build(&SourceFile::new("d.spec", text.as_str())) {
            Err(d) => {
                assert!(fails, "{call}: {d:?}");
                assert_eq!(d[0].code, Code::AssertionFailed, "{call}");
                let (s, e) = span_of(&text, &call);
                assert_eq!((d[0].span.start as usize, d[0].span.end as usize), (s, e));
            }
            Ok(model) => {
                assert!(!fails, "{call} should fail");
                assert!(model.assertions.is_empty(), "{call}: nothing left to check");
            }
        }
    }
    // And they pass silently when they hold.
    for call in ["assert_rank(h, 2)", "assert_type(h, float32)"] {
        specc_compiler::check(&SourceFile::new("d.spec", digits_plus(call)))
            .unwrap_or_else(|d| panic!("{call}: {d:?}"));
    }
}

/// Bad arguments are diagnostics: a missing message, an unknown type, a
/// negative tolerance, a check used as a value.
#[test]
fn bad_check_arguments_are_diagnostics() {
    for (line, code) in [
        ("z = check_numerics(h)", Code::MissingArgument),
        ("assert_type(h, float64)", Code::UnknownChoice),
        ("assert_near(h, h, rtol = -1)", Code::ArgumentOutOfRange),
        ("z = assert_less(h, 1.0)", Code::UnknownFunction),
        ("assert_less(h, logits)", Code::BroadcastShape),
    ] {
        let d = specc_compiler::check(&SourceFile::new("d.spec", digits_plus(line)))
            .map(|_| ())
            .unwrap_err();
        assert_eq!(d[0].code, code, "{line}: {d:?}");
    }
}

/// The replay finds the first non-finite binding of the failing step: `a`
/// stays finite, `z = log(a)` becomes -inf, `w` and the loss follow it.
#[test]
fn nan_origin_is_the_first_non_finite_binding() {
    let value = "log(a)";
    let text = digits_with(
        "\nloss = mean(sparse_softmax_cross_entropy(label, logits))",
        &format!(
            "\na = {K} - global_step\nz = {value}\nw = z * 2\n\
             loss = mean(sparse_softmax_cross_entropy(label, logits)) + 0.001 * w"
        ),
    );
    let (r, _) = train(&text, 100);
    let e = r.unwrap_err();
    let TrainError::NanLoss { step, .. } = e else {
        panic!("{e:?}")
    };
    assert_eq!(step, K as u64 + 1);
    let (program, ds) = build(&text);
    let s = program.session().unwrap();
    let mut replay = batches(&program, &ds, &s);
    let src = SourceFile::new("d.spec", text.as_str());
    let origin = find_nan_origin(&src, &Options::default(), step, &mut replay, None).unwrap();
    assert_eq!(
        (origin.kind, origin.name.as_str()),
        (ValueKind::Binding, "z")
    );
    assert!(!origin.nan, "log(0) is -inf");
    assert_eq!(origin.step, step);
    let (s0, e0) = span_of(&text, &format!("z = {value}"));
    let value_start = s0 + "z = ".len();
    assert_eq!(
        (origin.span.start as usize, origin.span.end as usize),
        (value_start, e0)
    );
    assert_eq!(origin.operation, None, "the whole value is the operation");
    let d = origin.diagnostic();
    assert_eq!(d.code, Code::NonFiniteValue);
    let shown = d.render(&src, false);
    let (line, col) = src.line_col(origin.span.start);
    assert!(shown.contains(&format!("d.spec:{line}:{col}")), "{shown}");
}

/// Inside the binding, the first operation that is not finite is named too
/// (a secondary caret), in evaluation order: `log(a)` before the products
/// and the sum that follow it.
#[test]
fn nan_origin_names_the_first_operation_inside_the_binding() {
    let operation = "log(a)";
    let value = format!("1 + 0.5 * {operation} * 2");
    let text = digits_with(
        "\nloss = mean(sparse_softmax_cross_entropy(label, logits))",
        &format!(
            "\na = {K} - global_step\nz = {value}\n\
             loss = mean(sparse_softmax_cross_entropy(label, logits)) + 0.001 * z"
        ),
    );
    let (r, _) = train(&text, 100);
    let TrainError::NanLoss { step, .. } = r.unwrap_err() else {
        panic!()
    };
    let (program, ds) = build(&text);
    let s = program.session().unwrap();
    let mut replay = batches(&program, &ds, &s);
    let src = SourceFile::new("d.spec", text.as_str());
    let origin = find_nan_origin(&src, &Options::default(), step, &mut replay, None).unwrap();
    assert_eq!(origin.name, "z");
    let (vs, ve) = span_of(&text, &format!("z = {value}"));
    let value_start = vs + "z = ".len();
    assert_eq!(
        (origin.span.start as usize, origin.span.end as usize),
        (value_start, ve)
    );
    let op = origin.operation.expect("an operation inside z");
    let op_start = value_start + value.find(operation).unwrap();
    assert_eq!(
        (op.start as usize, op.end as usize),
        (op_start, op_start + operation.len())
    );
    let d = origin.diagnostic();
    assert_eq!(d.secondary.len(), 1);
}

/// A NaN (not an infinity) is told apart: `log` of a negative value.
#[test]
fn nan_origin_tells_nan_from_inf() {
    let text = digits_with(
        "\nloss = mean(sparse_softmax_cross_entropy(label, logits))",
        &format!(
            "\nz = log({K}.5 - global_step)\n\
             loss = mean(sparse_softmax_cross_entropy(label, logits)) + 0.001 * z"
        ),
    );
    let (r, _) = train(&text, 100);
    let TrainError::NanLoss { step, .. } = r.unwrap_err() else {
        panic!()
    };
    // K.5 - global_step is negative first at global step K + 1.
    assert_eq!(step, K as u64 + 2);
    let (program, ds) = build(&text);
    let s = program.session().unwrap();
    let mut replay = batches(&program, &ds, &s);
    let src = SourceFile::new("d.spec", text.as_str());
    let origin = find_nan_origin(&src, &Options::default(), step, &mut replay, None).unwrap();
    assert_eq!(origin.name, "z");
    assert!(origin.nan);
}

/// A parameter that the previous step's update made infinite is the origin
/// (parameters come before the bindings that use them).
#[test]
fn nan_origin_can_be_a_parameter() {
    let text = digits_with("params {\n", "params {\n  s: [] = ones\n")
        .replacen(
            "\nloss = mean(sparse_softmax_cross_entropy(label, logits))",
            "\nloss = mean(sparse_softmax_cross_entropy(label, logits)) + 1e30 * s",
            1,
        )
        .replacen(
            "adam(learning_rate = 0.001)",
            "gradient_descent(learning_rate = 1e10)",
            1,
        );
    let (r, _) = train(&text, 100);
    let TrainError::NanLoss { step, .. } = r.unwrap_err() else {
        panic!()
    };
    assert_eq!(step, 2, "s = 1 - 1e10 * 1e30 is -inf after step 1");
    let (program, ds) = build(&text);
    let s = program.session().unwrap();
    let mut replay = batches(&program, &ds, &s);
    let src = SourceFile::new("d.spec", text.as_str());
    let origin = find_nan_origin(&src, &Options::default(), step, &mut replay, None).unwrap();
    assert_eq!(
        (origin.kind, origin.name.as_str(), origin.nan),
        (ValueKind::Parameter, "s", false)
    );
}

/// A replay that does not reproduce the run is an error, not a wrong answer.
#[test]
fn a_replay_that_does_not_reproduce_is_an_error() {
    let text = digits_mlp();
    let (program, ds) = build(&text);
    let s = program.session().unwrap();
    let mut replay = batches(&program, &ds, &s);
    let src = SourceFile::new("d.spec", text.as_str());
    let e = find_nan_origin(&src, &Options::default(), 3, &mut replay, None).unwrap_err();
    assert!(e.to_string().contains("does not reproduce"), "{e}");
}

fn workdir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("runtime_checks")
        .join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `specc run` on a spec text (its data path made absolute).
fn specc_run(name: &str, text: &str) -> (i32, String) {
    let dir = workdir(name);
    let text = text.replace("data/digits.csv", &format!("{ROOT}/specs/data/digits.csv"));
    std::fs::write(dir.join("spec.spec"), &text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_specc"))
        .args(["run", "spec.spec", "--steps", "100"])
        .current_dir(&dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The caret line of a rendering: the columns of `^` under `line`.
fn caret_under(rendered: &str, source_line: &str) -> (usize, usize) {
    let lines: Vec<&str> = rendered.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.ends_with(source_line))
        .unwrap_or_else(|| panic!("no line {source_line:?} in\n{rendered}"));
    let gutter = lines[i].len() - source_line.len();
    let carets = lines[i + 1];
    let first = carets.find('^').expect("a caret line") - gutter;
    let n = carets.matches('^').count();
    (first, n)
}

/// The CLI renders a failed check like a compile error: the code, the step,
/// the message, and carets under exactly the call; exit code 1.
#[test]
fn cli_renders_a_failed_check_with_a_caret_and_the_step() {
    let call = format!("check_numerics(h + 0 * log({K} - global_step), \"hidden layer\")");
    let text = digits_plus(&format!("hc = {call}"));
    let (status, err) = specc_run("check", &text);
    assert_eq!(status, 1, "{err}");
    let step = K + 1;
    assert!(
        err.contains(&format!(
            "error[assertion-failed]: `check_numerics` failed at step {step} (global_step {step}): hidden layer : Tensor had NaN values"
        )),
        "{err}"
    );
    let line = format!("hc = {call}");
    assert_eq!(
        caret_under(&err, &line),
        ("hc = ".len(), call.len()),
        "{err}"
    );
    assert!(
        err.trim_end()
            .ends_with("a runtime check of spec.spec failed"),
        "{err}"
    );
    insta::assert_snapshot!("cli_failed_check", diagnostics(&err));
}

/// The rendering from the first diagnostic on (without the timing line).
fn diagnostics(err: &str) -> &str {
    &err[err.find("error[").expect("a diagnostic")..]
}

/// A static check renders as a compile error (exit 2) with the user's
/// message as help.
#[test]
fn cli_renders_a_static_check_as_a_compile_error() {
    let dir = workdir("static");
    let text = digits_plus("assert_rank(h, 3, message = \"h is a batch of vectors\")")
        .replace("data/digits.csv", &format!("{ROOT}/specs/data/digits.csv"));
    std::fs::write(dir.join("spec.spec"), &text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_specc"))
        .args(["check", "spec.spec"])
        .current_dir(&dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    insta::assert_snapshot!("cli_static_check", diagnostics(&err));
}

/// The CLI names the binding where a non-finite loss came from, with a
/// caret under its value, before the loss's own message.
#[test]
fn cli_names_the_origin_of_a_nan_loss() {
    let text = digits_with(
        "\nloss = mean(sparse_softmax_cross_entropy(label, logits))",
        &format!(
            "\nz = log({K} - global_step)\n\
             loss = mean(sparse_softmax_cross_entropy(label, logits)) + 0.001 * z"
        ),
    );
    let (status, err) = specc_run("nan", &text);
    assert_eq!(status, 1, "{err}");
    let step = K + 1;
    assert!(
        err.contains(&format!(
            "error[non-finite-value]: `z` is the first value to become infinite in step {step}"
        )),
        "{err}"
    );
    let line = format!("z = log({K} - global_step)");
    assert_eq!(
        caret_under(&err, &line),
        ("z = ".len(), line.len() - "z = ".len()),
        "{err}"
    );
    assert!(
        err.trim_end()
            .ends_with("lower the learning rate or check the data"),
        "{err}"
    );
    insta::assert_snapshot!("cli_nan_origin", diagnostics(&err));
}

/// wide_mlp (a step planned for two threads) with `edit` applied, trained
/// `steps` steps on `threads` threads: the plan's thread count, the result,
/// and the variables' bits.
fn wide_mlp_on(
    edit: impl Fn(String) -> String,
    threads: usize,
    steps: u64,
) -> (u32, Result<u64, TrainError>, VariableBits) {
    let text = edit(std::fs::read_to_string(format!("{ROOT}/specs/wide_mlp.spec")).unwrap());
    let options = Options {
        threads,
        ..Options::default()
    };
    let program = specc_compiler::driver::compile_with(
        &SourceFile::new("wide.spec", text.as_str()),
        Functions::TRAIN,
        &options,
    )
    .unwrap_or_else(|d| panic!("{d:?}"));
    let model = &program.model;
    let ds = data::load(
        &model.data_source(format!("{ROOT}/specs").as_ref()),
        &model.input_specs(),
    )
    .unwrap();
    let mut s = program.session().unwrap();
    let mut source = batches(&program, &ds, &s);
    let r = fit(
        &mut s,
        &mut source,
        &mut [
            &mut StopAtStepHook::num_steps(steps),
            &mut NanTensorHook::default(),
        ],
    )
    .map(|f| f.steps);
    let bits = s
        .layout
        .vars
        .iter()
        .map(|v| {
            let b = s
                .var(&v.name)
                .unwrap()
                .iter()
                .map(|x| x.to_bits())
                .collect();
            (v.name.clone(), b)
        })
        .collect();
    (program.plans[0].threads, r, bits)
}

/// On two threads (each taking its share of the checked loops), passing
/// checks change no bit, and a failing one fails at the same step with the
/// same value as on one thread.
#[test]
fn checks_on_two_threads() {
    let steps = 3;
    let checked = |t: String| {
        t.replacen(
            "relu(x @ W1 + b1)",
            "check_numerics(relu(x @ W1 + b1), \"h1\")",
            1,
        )
        .replacen("\nloss = ", "\nassert_non_negative(h2)\nloss = ", 1)
    };
    let (t, r, plain) = wide_mlp_on(|t| t, 2, steps);
    assert_eq!((t, r.unwrap()), (2, steps));
    let (t, r, with_checks) = wide_mlp_on(checked, 2, steps);
    assert_eq!((t, r.unwrap()), (2, steps));
    assert!(plain == with_checks, "checks changed the variables");

    let k = steps as i64 - 2;
    let failing = move |t: String| {
        checked(t).replacen(
            "\nloss = ",
            &format!("\nassert_less(h1 * 0 + global_step, {k})\nloss = "),
            1,
        )
    };
    let mut seen = Vec::new();
    for threads in [1, 2] {
        let (t, r, _) = wide_mlp_on(failing, threads, steps);
        assert_eq!(t as usize, threads);
        let e = r.unwrap_err();
        let TrainError::Assertion { step, value, .. } = e else {
            panic!("{e:?}")
        };
        seen.push((step, value.to_bits()));
    }
    assert_eq!(seen[0].0, k as u64 + 1);
    assert_eq!(seen[0], seen[1]);
}
