//! Every kind of spec error through the CLI: exit code 2, the diagnostic's code,
//! file:line:column and a caret under the offending text (snapshotted), never a panic.
//! Data errors exit 1 and name the file, row and column.

use crate::cli;

use std::path::PathBuf;

use cli::{replace, specc, specc_env, BASE, DATA};

const SUITE: &str = "cli_errors";

fn workdir(name: &str) -> PathBuf {
    cli::workdir(SUITE, name)
}

/// Checks a spec that must fail with `code`; returns the rendered diagnostics.
fn fails(name: &str, spec: &str, code: &str) -> String {
    cli::fails(SUITE, name, spec, code)
}

macro_rules! case {
    ($name:ident, $spec:expr, $code:literal) => {
        #[test]
        fn $name() {
            let err = fails(stringify!($name), &$spec, $code);
            insta::assert_snapshot!(err);
        }
    };
}

#[test]
fn base_spec_is_valid() {
    let dir = workdir("valid");
    std::fs::write(dir.join("spec.spec"), BASE).unwrap();
    let (status, out, err) = specc(&dir, &["check", "spec.spec"]);
    assert_eq!(status, 0, "{err}");
    assert!(out.contains("ok"), "{out}");
}

case!(
    parse_error,
    replace("relu(x @ W1 + b1)", "relu(x @ W1 + )"),
    "parse-error"
);
case!(
    reshape_moving_the_batch,
    replace(
        "relu(x @ W1 + b1)",
        "relu(reshape(stack([x[:, 0:2], x[:, 2:4]]), [B, 4]) @ W1 + b1)"
    ),
    "reshape-shape"
);
case!(
    gather_along_the_batch,
    replace("relu(x @ W1 + b1)", "relu(gather(x, [0, 1]) @ W1 + b1)"),
    "bad-axis"
);
case!(
    gather_index_out_of_range,
    replace(
        "relu(x @ W1 + b1)",
        "relu(gather(x, [3, 4, 0, 1], axis = 1) @ W1 + b1)"
    ),
    "argument-out-of-range"
);
case!(
    gather_batch_dims_of_other_sizes,
    replace(
        "relu(x @ W1 + b1)",
        "relu(gather(x, [[0], [1]], axis = 1, batch_dims = 1) @ W1 + b1)"
    ),
    "shape-mismatch"
);
case!(
    gather_the_batch_twice,
    replace(
        "relu(x @ W1 + b1)",
        "relu(reduce_sum(gather(x, y, axis = 1), axis = 0) @ W1 + b1)"
    ),
    "shape-mismatch"
);
case!(
    softmax_mask_not_broadcasting,
    replace(
        "relu(x @ W1 + b1)",
        "relu(softmax(x, mask = [1.0, 0.0]) @ W1 + b1)"
    ),
    "broadcast-shape"
);
case!(
    tile_the_batch,
    replace("relu(x @ W1 + b1)", "relu(tile(x, [2, 1]) @ W1 + b1)"),
    "bad-axis"
);
case!(
    squeeze_an_axis_not_of_size_one,
    replace("relu(x @ W1 + b1)", "relu(squeeze(x, axis = 1) @ W1 + b1)"),
    "bad-axis"
);
case!(
    unknown_name,
    replace("h @ W2 + b2", "h @ W3 + b2"),
    "unknown-name"
);
case!(
    duplicate_name,
    replace("logits = h @ W2 + b2", "h = h @ W2 + b2"),
    "duplicate-name"
);
case!(
    unknown_function,
    replace("relu(x @ W1 + b1)", "rellu(x @ W1 + b1)"),
    "unknown-function"
);
case!(
    wrong_arity,
    replace("relu(x @ W1 + b1)", "relu(x @ W1, b1)"),
    "wrong-arity"
);
case!(
    unknown_argument,
    replace("mean(sparse", "reduce_mean(axes = 0, input_tensor = sparse"),
    "unknown-argument"
);
case!(
    missing_argument,
    replace("relu(x @ W1 + b1)", "relu(matmul(x) + b1)"),
    "missing-argument"
);
case!(
    duplicate_argument,
    replace(
        "adam(learning_rate = 0.01)",
        "adam(learning_rate = 0.01, learning_rate = 0.1)"
    ),
    "duplicate-argument"
);
case!(
    matmul_shape,
    replace("h @ W2 + b2", "x @ W2 + b2"),
    "matmul-shape"
);
case!(
    broadcast_shape,
    replace("h @ W2 + b2", "h @ W2 + b1"),
    "broadcast-shape"
);
case!(
    bad_initializer,
    replace("glorot_uniform(seed = 1)", "glorot(seed = 1)"),
    "bad-initializer"
);
case!(
    bad_constant_shape,
    replace(
        "b2: [3]    = zeros",
        "b2: [3]    = constant(value = [1, 2])"
    ),
    "bad-initializer"
);
case!(
    bad_axis,
    replace(
        "relu(x @ W1 + b1)",
        "relu(x @ W1 + b1) * reduce_sum(x, axis = 2, keepdims = true)"
    ),
    "bad-axis"
);
case!(
    loss_not_scalar,
    replace(
        "mean(sparse_softmax_cross_entropy(y, logits))",
        "sparse_softmax_cross_entropy(y, logits)"
    ),
    "loss-not-scalar"
);
case!(
    missing_loss,
    replace("loss   = mean", "cost   = mean"),
    "missing-loss"
);
case!(
    label_kind,
    replace("label y: int", "label y: float"),
    "label-kind"
);
case!(
    no_gradient,
    replace(
        "b2: [3]    = zeros",
        "b2: [3]    = zeros\n  W3: [3, 3] = zeros"
    ),
    "no-gradient"
);
case!(
    not_differentiable,
    replace(
        "loss   = mean(",
        "loss   = mean(cast(argmax(logits), float32)) + mean("
    ),
    "not-differentiable"
);
case!(
    shape_assertion,
    replace(
        "logits = h @ W2 + b2",
        "logits = h @ W2 + b2\nassert_shape(h, [B, 16])"
    ),
    "shape-assertion"
);
case!(
    reshape_shape,
    replace(
        "logits = h @ W2 + b2",
        "logits = reshape(h, [B, 5]) @ W2 + b2"
    ),
    "reshape-shape"
);
case!(
    dtype_mismatch,
    replace("h @ W2 + b2", "h @ W2 + b2 + y"),
    "dtype-mismatch"
);
case!(
    unknown_optimizer,
    replace("adam(learning_rate = 0.01)", "nadam(learning_rate = 0.01)"),
    "unknown-optimizer"
);
case!(
    bad_learning_rate,
    replace("adam(learning_rate = 0.01)", "adam(learning_rate = -0.01)"),
    "argument-out-of-range"
);
case!(
    adagrad_accumulator_not_positive,
    replace(
        "adam(learning_rate = 0.01)",
        "adagrad(learning_rate = 0.1, initial_accumulator_value = 0)"
    ),
    "argument-out-of-range"
);
case!(
    ftrl_positive_learning_rate_power,
    replace(
        "adam(learning_rate = 0.01)",
        "ftrl(learning_rate = 0.1, learning_rate_power = 0.5)"
    ),
    "argument-out-of-range"
);
case!(
    negative_l1,
    replace(
        "adam(learning_rate = 0.01)",
        "proximal_gradient_descent(learning_rate = 0.1, l1_regularization_strength = -1)"
    ),
    "argument-out-of-range"
);
case!(
    momentum_needs_momentum,
    replace(
        "adam(learning_rate = 0.01)",
        "momentum(learning_rate = 0.1)"
    ),
    "missing-argument"
);
case!(
    bad_setting,
    replace("train { batch = 4, steps = 10 }", "train { steps = 10 }"),
    "bad-setting"
);
case!(
    zero_steps,
    replace("steps = 10", "steps = 0"),
    "bad-setting"
);
case!(
    zero_epochs,
    replace("steps = 10", "epochs = 0"),
    "bad-setting"
);
case!(
    bad_column_range,
    replace("x0..x3", "x0..z3"),
    "bad-column-range"
);
case!(
    duplicate_item,
    replace(
        "train { batch = 4, steps = 10 }",
        "train { batch = 4, steps = 10 }\ntrain { batch = 8, steps = 10 }"
    ),
    "duplicate-item"
);
case!(
    missing_item,
    replace("train { batch = 4, steps = 10 }", ""),
    "missing-item"
);
case!(
    bad_index,
    replace("h @ W2 + b2", "h[:, 9:] @ W2 + b2"),
    "bad-index"
);
case!(
    bad_metric,
    replace(
        "accuracy(y, argmax(logits))",
        "precision(y, argmax(logits))"
    ),
    "bad-metric"
);
case!(
    bad_shape,
    replace("b1: [8]    = zeros", "b1: [B]    = zeros"),
    "bad-shape"
);
case!(
    shape_mismatch,
    replace("accuracy(y, argmax(logits))", "accuracy(y, logits)"),
    "shape-mismatch"
);

case!(
    unknown_clipping,
    replace(
        "optimizer adam(learning_rate = 0.01)",
        "optimizer adam(learning_rate = 0.01)\nclip by_l1_norm(clip_norm = 1.0)"
    ),
    "unknown-function"
);
case!(
    clip_norm_not_positive,
    replace(
        "optimizer adam(learning_rate = 0.01)",
        "optimizer adam(learning_rate = 0.01)\nclip global_norm(clip_norm = 0)"
    ),
    "argument-out-of-range"
);
case!(
    clip_bound_does_not_broadcast,
    replace(
        "optimizer adam(learning_rate = 0.01)",
        "optimizer adam(learning_rate = 0.01)\nclip by_value(clip_value_min = [-1, -2, -3, -4, -5], clip_value_max = 1)"
    ),
    "shape-mismatch"
);
case!(
    clip_axis_out_of_range,
    replace(
        "optimizer adam(learning_rate = 0.01)",
        "optimizer adam(learning_rate = 0.01)\nclip by_norm(clip_norm = 1, axes = [1])"
    ),
    "shape-mismatch"
);
case!(
    ema_decay_out_of_range,
    replace(
        "optimizer adam(learning_rate = 0.01)",
        "optimizer adam(learning_rate = 0.01)\nema 1.5"
    ),
    "argument-out-of-range"
);
case!(
    ema_unknown_option,
    replace(
        "optimizer adam(learning_rate = 0.01)",
        "optimizer adam(learning_rate = 0.01)\nema 0.99, num_update = true"
    ),
    "unknown-argument"
);
case!(
    duplicate_ema,
    replace(
        "optimizer adam(learning_rate = 0.01)",
        "optimizer adam(learning_rate = 0.01)\nema 0.99\nema 0.9"
    ),
    "duplicate-item"
);

case!(
    embedding_ids_not_int,
    replace(
        "h      = relu(x @ W1 + b1)",
        "h      = relu(reduce_sum(embedding_lookup(W1, x), axis = 1) + b1)"
    ),
    "label-kind"
);
case!(
    embedding_table_with_batch,
    replace(
        "h      = relu(x @ W1 + b1)",
        "h      = relu(embedding_lookup(x, [0, 1]) @ W1 + b1)"
    ),
    "bad-shape"
);
case!(
    integer_needs_num_buckets,
    replace(
        "x = numeric(x0..x3)",
        "x = numeric(x0..x3)\n  ids = integer(y)"
    ),
    "missing-argument"
);
case!(
    integer_unknown_argument,
    replace(
        "x = numeric(x0..x3)",
        "x = numeric(x0..x3)\n  ids = integer(y, num_bucket = 3)"
    ),
    "unknown-argument"
);
case!(
    ids_beyond_the_table,
    replace(
        "x = numeric(x0..x3)",
        "x = numeric(x0..x3)\n  ids = integer(y, num_buckets = 9)"
    )
    .replace(
        "relu(x @ W1 + b1)",
        "relu(x @ W1 + embedding_lookup(W2, ids) @ transpose(W2))"
    ),
    "bad-shape"
);

#[test]
fn an_id_out_of_range_is_a_data_error_naming_file_row_and_column() {
    let dir = workdir("id_range");
    let spec = replace(
        "x = numeric(x0..x3)",
        "x = numeric(x0..x3)\n  ids = integer(x3, num_buckets = 8)",
    )
    .replace(
        "relu(x @ W1 + b1)",
        "relu(x @ W1 + b1 + embedding_lookup(W2, ids) @ transpose(W2))",
    );
    std::fs::write(dir.join("spec.spec"), spec).unwrap();
    let (status, _, err) = specc(&dir, &["run", "spec.spec"]);
    // x3 holds 4, 2, 2, 1, 8: the 8 on line 6 is beyond num_buckets = 8.
    assert_eq!(status, 1, "{err}");
    assert!(
        err.contains("data.csv:6") && err.contains("x3") && err.contains("out of range"),
        "{err}"
    );
}

#[test]
fn eval_with_averages_needs_an_ema_item() {
    let dir = workdir("no_ema");
    std::fs::write(dir.join("spec.spec"), BASE).unwrap();
    let (status, _, err) = specc(&dir, &["run", "spec.spec", "--eval-with-averages"]);
    assert_eq!(status, 1, "{err}");
    assert!(err.contains("ema"), "{err}");
}

#[test]
fn several_independent_errors_are_all_reported() {
    let spec =
        replace("h @ W2 + b2", "h @ W3 + b2").replace("adam(learning_rate = 0.01)", "nadam()");
    let err = fails("several", &spec, "unknown-name");
    assert!(err.contains("error[unknown-optimizer]"), "{err}");
}

#[test]
fn missing_column_is_a_data_error_naming_file_and_column() {
    let dir = workdir("missing_column");
    std::fs::write(dir.join("spec.spec"), replace("x0..x3", "x0, x1, x2, x9")).unwrap();
    let (status, _, err) = specc(&dir, &["run", "spec.spec"]);
    assert_eq!(status, 1, "{err}");
    assert!(err.contains("data.csv") && err.contains("x9"), "{err}");
}

#[test]
fn bad_cell_is_a_data_error_naming_file_row_and_column() {
    let dir = workdir("bad_cell");
    std::fs::write(dir.join("spec.spec"), BASE).unwrap();
    std::fs::write(
        dir.join("data.csv"),
        DATA.replace("-1,0,1,2,2", "-1,zero,1,2,2"),
    )
    .unwrap();
    let (status, _, err) = specc(&dir, &["run", "spec.spec"]);
    assert_eq!(status, 1, "{err}");
    assert!(
        err.contains("data.csv:4") && err.contains("x1") && err.contains("zero"),
        "{err}"
    );
}

#[test]
fn class_id_out_of_range_is_a_data_error() {
    let dir = workdir("class_range");
    std::fs::write(dir.join("spec.spec"), BASE).unwrap();
    std::fs::write(dir.join("data.csv"), DATA.replace("2,7,1,8,1", "2,7,1,8,3")).unwrap();
    let (status, _, err) = specc(&dir, &["run", "spec.spec"]);
    assert_eq!(status, 1, "{err}");
    assert!(err.contains("data.csv:6") && err.contains('y'), "{err}");
}

#[test]
fn missing_spec_file_is_an_error_not_a_panic() {
    let dir = workdir("no_file");
    let (status, _, err) = specc(&dir, &["check", "nope.spec"]);
    assert_eq!(status, 1, "{err}");
    assert!(err.contains("nope.spec"), "{err}");
}

/// A spec larger than 16 MiB, or one that never ends, is refused with the
/// limit, not read until memory runs out.
#[test]
fn a_spec_larger_than_16_mib_is_refused() {
    let dir = workdir("huge_spec");
    let mut text = BASE.to_string();
    text.push_str(&"#".repeat((16 << 20) + 1 - text.len()));
    std::fs::write(dir.join("huge.spec"), text).unwrap();
    for path in ["huge.spec", "/dev/zero"] {
        let (status, _, err) = specc(&dir, &["check", path]);
        assert_eq!(status, 1, "{path}: {err}");
        assert!(
            err.contains(path) && err.contains("larger than 16 MiB (16777216 bytes)"),
            "{path}: {err}"
        );
    }
}

/// Data whose row never ends (`/dev/zero`), or a header of millions of
/// columns, stops at the row limit with the file and the line.
#[test]
fn a_csv_row_longer_than_1_mib_is_a_data_error() {
    let dir = workdir("long_row");
    std::fs::write(dir.join("spec.spec"), BASE).unwrap();
    let (status, _, err) = specc(&dir, &["run", "spec.spec", "--data", "/dev/zero"]);
    assert_eq!(status, 1, "{err}");
    assert!(
        err.contains("/dev/zero:1: ") && err.contains("1 MiB"),
        "{err}"
    );
    let header: Vec<String> = (0..300_000).map(|i| format!("c{i}")).collect();
    std::fs::write(dir.join("wide.csv"), header.join(",") + "\n1\n").unwrap();
    let (status, _, err) = specc(&dir, &["run", "spec.spec", "--data", "wide.csv"]);
    assert_eq!(status, 1, "{err}");
    assert!(
        err.contains("wide.csv:1: the row is longer than 1048576 bytes (1 MiB)"),
        "{err}"
    );
    // A long row after good ones names its own line.
    let long = format!("{DATA}{}\n", "1".repeat(1 << 20));
    std::fs::write(dir.join("data.csv"), long).unwrap();
    let (status, _, err) = specc(&dir, &["run", "spec.spec"]);
    assert_eq!(status, 1, "{err}");
    assert!(err.contains("data.csv:7: the row is longer"), "{err}");
}

/// `--steps` takes a positive number: `-1` and `0` say so (instead of
/// "unexpected argument"); a spec that trains for 0 steps is refused by
/// `check` (`zero_steps`), so `run` refuses it before training, even with
/// `--steps`.
#[test]
fn steps_must_be_positive() {
    let dir = workdir("steps");
    std::fs::write(dir.join("spec.spec"), BASE).unwrap();
    for steps in ["-1", "0"] {
        let (status, out, err) = specc(&dir, &["run", "spec.spec", "--steps", steps]);
        assert_eq!(status, 2, "{steps}: {err}");
        assert!(
            err.contains("steps must be a positive integer (at least 1)"),
            "{steps}: {err}"
        );
        assert!(out.is_empty(), "{out}");
    }
    let (status, _, err) = specc(&dir, &["bench", "spec.spec", "--steps", "-5"]);
    assert_eq!(status, 2, "{err}");
    assert!(err.contains("steps must be a positive integer"), "{err}");
    std::fs::write(dir.join("zero.spec"), replace("steps = 10", "steps = 0")).unwrap();
    for extra in [&[][..], &["--steps", "3"][..]] {
        let args = [&["run", "zero.spec"][..], extra].concat();
        let (status, out, err) = specc(&dir, &args);
        assert_eq!(status, 2, "{args:?}: {err}");
        assert!(
            err.contains("error[bad-setting]: steps must be at least 1, got 0"),
            "{args:?}: {err}"
        );
        assert!(out.is_empty(), "{args:?}: {out}");
    }
    // --steps overrides a valid duration.
    let (status, out, err) = specc(&dir, &["run", "spec.spec", "--steps", "3"]);
    assert_eq!(status, 0, "{err}");
    assert!(out.starts_with("trained 3 steps"), "{out}");
}

/// A negative `--eval-fraction` reaches specc's own range check.
#[test]
fn eval_fraction_must_be_in_range() {
    let dir = workdir("eval_fraction");
    std::fs::write(dir.join("spec.spec"), BASE).unwrap();
    for f in ["-0.5", "1"] {
        let (status, _, err) = specc(&dir, &["run", "spec.spec", "--eval-fraction", f]);
        assert_eq!(status, 1, "{f}: {err}");
        assert!(
            err.contains("--eval-fraction must be in [0, 1)"),
            "{f}: {err}"
        );
    }
}

/// `SPECC_THREADS` that is not a positive integer is refused, not replaced
/// by the core count.
#[test]
fn specc_threads_must_be_a_positive_integer() {
    let dir = workdir("threads_env");
    std::fs::write(dir.join("spec.spec"), BASE).unwrap();
    for v in ["abc", "0", "-1", "1.5"] {
        let (status, _, err) = specc_env(&dir, &["run", "spec.spec"], &[("SPECC_THREADS", v)]);
        assert_eq!(status, 1, "{v}: {err}");
        assert!(
            err.contains("SPECC_THREADS must be a positive integer") && err.contains(v),
            "{v}: {err}"
        );
    }
    let (status, _, err) = specc_env(&dir, &["run", "spec.spec"], &[("SPECC_THREADS", "1")]);
    assert_eq!(status, 0, "{err}");
}

/// `SPECC_GEMM_ISA` naming no kernel is refused; a kernel the CPU runs is
/// accepted (and gives the same results: every kernel has the same bits).
#[test]
fn specc_gemm_isa_must_name_a_kernel() {
    let dir = workdir("gemm_isa_env");
    std::fs::write(dir.join("spec.spec"), BASE).unwrap();
    for v in ["avx", "sse", "fast"] {
        let (status, _, err) = specc_env(&dir, &["run", "spec.spec"], &[("SPECC_GEMM_ISA", v)]);
        assert_eq!(status, 1, "{v}: {err}");
        assert!(
            err.contains("SPECC_GEMM_ISA must be avx512, avx2 or scalar") && err.contains(v),
            "{v}: {err}"
        );
    }
    let (status, base, err) = specc_env(&dir, &["run", "spec.spec"], &[("SPECC_GEMM_ISA", "")]);
    assert_eq!(status, 0, "{err}");
    let (status, scalar, err) =
        specc_env(&dir, &["run", "spec.spec"], &[("SPECC_GEMM_ISA", "scalar")]);
    assert_eq!(status, 0, "{err}");
    // The final metrics line (the others carry the speed).
    let metrics = |out: &str| {
        out.lines()
            .find(|l| l.contains("train: loss"))
            .map(str::to_owned)
    };
    assert!(metrics(&base).is_some(), "{base}");
    assert_eq!(metrics(&base), metrics(&scalar));
}

/// `var` set to any of `bad` is refused with "`var` must be auto or never";
/// `never` trains to the same final metrics as the default.
fn auto_or_never_setting(var: &str, dirname: &str, bad: &[&str]) {
    let dir = workdir(dirname);
    std::fs::write(dir.join("spec.spec"), BASE).unwrap();
    for v in bad {
        let (status, _, err) = specc_env(&dir, &["run", "spec.spec"], &[(var, v)]);
        assert_eq!(status, 1, "{v}: {err}");
        assert!(
            err.contains(&format!("{var} must be auto or never")) && err.contains(v),
            "{v}: {err}"
        );
    }
    let metrics = |out: &str| {
        out.lines()
            .find(|l| l.contains("train: loss"))
            .map(str::to_owned)
    };
    let (status, base, err) = specc_env(&dir, &["run", "spec.spec"], &[]);
    assert_eq!(status, 0, "{err}");
    let (status, never, err) = specc_env(&dir, &["run", "spec.spec"], &[(var, "never")]);
    assert_eq!(status, 0, "{err}");
    assert!(metrics(&base).is_some(), "{base}");
    assert_eq!(metrics(&base), metrics(&never));
}

/// `SPECC_RUNTIME_ADAM` other than auto or never is refused; `never`
/// (Cranelift's update loops) trains to the same final metrics as the default.
#[test]
fn specc_runtime_adam_must_be_auto_or_never() {
    auto_or_never_setting(
        "SPECC_RUNTIME_ADAM",
        "runtime_adam_env",
        &["yes", "always", "1"],
    );
}

/// `SPECC_GEMM_EPILOGUE` other than auto or never is refused; `never`
/// (GEMM epilogues off) trains to the same final metrics as the default.
#[test]
fn specc_gemm_epilogue_must_be_auto_or_never() {
    auto_or_never_setting(
        "SPECC_GEMM_EPILOGUE",
        "gemm_epilogue_env",
        &["always", "on", "1"],
    );
}

/// `SPECC_WINOGRAD_TILE` other than auto, 2 or 4 is refused (exit 1, the
/// value named); each accepted value compiles W7's spec, and its plan
/// names the tile.
#[test]
fn specc_winograd_tile_must_be_auto_2_or_4() {
    let dir = workdir("winograd_tile_env");
    let spec = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("specs/digits_cnn.spec");
    let spec = spec.to_str().unwrap();
    for v in ["3", "f4", "always"] {
        let (status, _, err) = specc_env(
            &dir,
            &["compile", spec, "--emit", "plan"],
            &[("SPECC_WINOGRAD_TILE", v)],
        );
        assert_eq!(status, 1, "{v}: {err}");
        assert!(
            err.contains("SPECC_WINOGRAD_TILE must be auto, 2 or 4") && err.contains(v),
            "{v}: {err}"
        );
    }
    for (v, tile) in [("auto", "f4x4"), ("2", "f2x2"), ("4", "f4x4")] {
        let (status, out, err) = specc_env(
            &dir,
            &["compile", spec, "--emit", "plan"],
            &[("SPECC_WINOGRAD_TILE", v)],
        );
        assert_eq!(status, 0, "{v}: {err}");
        assert!(out.contains(&format!("winograd %23 {tile}")), "{v}: {out}");
    }
}

/// `gradcheck --samples 0` would check nothing: refused.
#[test]
fn gradcheck_needs_at_least_one_sample() {
    let dir = workdir("samples");
    std::fs::write(dir.join("spec.spec"), BASE).unwrap();
    for n in ["0", "-2"] {
        let (status, out, err) = specc(&dir, &["gradcheck", "spec.spec", "--samples", n]);
        assert_eq!(status, 2, "{n}: {err}");
        assert!(
            err.contains("samples must be a positive integer (at least 1)"),
            "{n}: {err}"
        );
        assert!(!out.contains("passed"), "{out}");
    }
    let (status, out, err) = specc(&dir, &["gradcheck", "spec.spec", "--samples", "1"]);
    assert_eq!(status, 0, "{err}");
    assert!(out.contains("1 elements"), "{out}");
}

/// A loss that becomes NaN stops the run with the step and the global step.
#[test]
fn a_nan_loss_stops_the_run_naming_the_step() {
    let dir = workdir("nan");
    std::fs::write(
        dir.join("spec.spec"),
        replace(
            "adam(learning_rate = 0.01)",
            "gradient_descent(learning_rate = 1e38)",
        ),
    )
    .unwrap();
    let (status, out, err) = specc(&dir, &["run", "spec.spec", "--json"]);
    assert_eq!(status, 1, "{err}");
    assert!(
        err.contains("error: the loss became")
            && err.contains(" at step ")
            && err.contains("(global_step ")
            && err.ends_with("); lower the learning rate or check the data\n"),
        "{err}"
    );
    // `--json` still prints its line: the error and the step reached.
    let json: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert!(err.contains(json["error"].as_str().unwrap()), "{out}");
}

/// A feature or parameter whose definition fails is poisoned: its uses in
/// later bindings report nothing more (one error each, not an "unknown name"
/// at every use).
#[test]
fn failed_definitions_are_not_reported_again_at_their_uses() {
    let spec = replace(
        "x = numeric(x0..x3)",
        "x = numeric(x0..x3, normalizer = bogus)",
    )
    .replace("W1: [4, 8]", "W1: [4, 0]");
    let dir = workdir("poisoned");
    std::fs::write(dir.join("spec.spec"), spec).unwrap();
    let (status, _, err) = specc(&dir, &["check", "spec.spec"]);
    assert_eq!(status, 2, "{err}");
    assert_eq!(err.matches("error[").count(), 2, "{err}");
    assert!(
        err.contains("error[unknown-name]: unknown name `bogus`"),
        "{err}"
    );
    assert!(err.contains("error[bad-shape]: dimension 0"), "{err}");
    assert!(err.contains("specc found 2 errors"), "{err}");
}
