//! `specc run` where nobody watches: log lines instead of a progress bar when
//! stderr is not a terminal, the last JSON line of a failed run, and the
//! warning for a run that diverges without becoming NaN.

use crate::cli;

use cli::{replace, specc, workdir, BASE};

const SUITE: &str = "cli_run_unattended";

fn run(name: &str, spec: &str, args: &[&str]) -> (i32, String, String) {
    let dir = workdir(SUITE, name);
    std::fs::write(dir.join("spec.spec"), spec).unwrap();
    let mut all = vec!["run", "spec.spec"];
    all.extend_from_slice(args);
    specc(&dir, &all)
}

fn last_json(stdout: &str) -> serde_json::Value {
    let line = stdout.lines().last().expect("a JSON line");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

#[test]
fn a_run_without_a_terminal_logs_its_first_and_last_step() {
    let (code, out, err) = run("logs", BASE, &["--json"]);
    assert_eq!(code, 0, "{err}");
    let json = last_json(&out);
    let steps = json["steps"].as_u64().unwrap();
    let logs: Vec<&str> = err.lines().filter(|l| l.starts_with("step ")).collect();
    assert_eq!(logs.len(), 2, "{err}");
    assert!(logs[0].starts_with(&format!("step 1/{steps} ")), "{err}");
    // The last line is the last step, with the loss --json reports.
    let loss = json["last_loss"].as_f64().unwrap();
    assert!(
        logs[1].starts_with(&format!("step {steps}/{steps}  loss {loss:.4}  ")),
        "{err}"
    );
    assert!(!err.contains("warning"), "{err}");
}

#[test]
fn a_nan_loss_still_prints_the_json_line_with_the_error_and_the_step() {
    let spec = replace(
        "adam(learning_rate = 0.01)",
        "gradient_descent(learning_rate = 1e30)",
    );
    let (code, out, err) = run("nan", &spec, &["--json"]);
    assert_eq!(code, 1, "{err}");
    let json = last_json(&out);
    let error = json["error"].as_str().unwrap();
    assert!(error.contains("NaN") || error.contains("inf"), "{error}");
    let step = json["steps"].as_u64().unwrap();
    assert!(step >= 1, "{json}");
    assert!(
        error.contains(&format!("at step {step} ")),
        "{error} / {json}"
    );
    assert_eq!(json["global_step"].as_u64(), Some(step));
    assert_eq!(json["model"], "tiny");
}

#[test]
fn a_data_error_still_prints_the_json_line_naming_the_file_line_and_column() {
    let dir = workdir(SUITE, "data_error");
    std::fs::write(dir.join("spec.spec"), BASE).unwrap();
    std::fs::write(
        dir.join("data.csv"),
        "x0,x1,x2,x3,y\n1,2,3,4,0\n1,2,x,4,1\n",
    )
    .unwrap();
    let (code, out, err) = specc(&dir, &["run", "spec.spec", "--json"]);
    assert_eq!(code, 1, "{err}");
    let json = last_json(&out);
    let error = json["error"].as_str().unwrap();
    // File, line and column of the bad cell.
    assert!(
        error.contains("data.csv:3") && error.contains("`x2`"),
        "{error}"
    );
    assert_eq!(json["steps"], 0);
}

#[test]
fn a_spec_error_still_prints_the_json_line() {
    let (code, out, _) = run("spec_error", &replace("relu(", "relux("), &["--json"]);
    assert_eq!(code, 2);
    assert!(last_json(&out)["error"]
        .as_str()
        .unwrap()
        .contains("spec.spec"));
}

#[test]
fn a_loss_that_grows_by_orders_of_magnitude_gets_a_warning() {
    let spec = replace("adam(learning_rate = 0.01)", "adam(learning_rate = 1e6)");
    let (code, out, err) = run("diverges", &spec, &["--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(last_json(&out)["last_loss"].as_f64().unwrap().is_finite());
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(warnings[0].contains("diverging"), "{err}");
}
