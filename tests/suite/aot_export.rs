//! `specc export --format object`: a trained digits MLP as an object file,
//! linked into a C program (`tests/aot/predict.c`) with the machine's `cc`
//! and run on rows read from a file. Its outputs must equal, bit for bit,
//! those of the same function JIT-compiled into a specc `Session` with the
//! same checkpoint restored, for 1 row, a full chunk, a row count that is
//! not a multiple of the chunk, and every row of the data set (many chunks);
//! and its logits must classify the rows exactly as the eval function's
//! accuracy says. Also: the header's constants, the wrapper's argument
//! checks, and the command's errors.

use crate::cli;

use std::path::{Path, PathBuf};
use std::process::Command;

use cli::specc;
use specc_compiler::codegen;
use specc_compiler::driver::{compile, Functions, Program};
use specc_compiler::export::aot::predict_function;
use specc_compiler::plan;
use specc_grammar::SourceFile;
use specc_runtime::abi::FunctionLayout;
use specc_runtime::checkpoint::{latest_checkpoint, BundleReader};
use specc_runtime::data::{self, Dataset, Values};
use specc_runtime::session::Session;
use specc_runtime::train::evaluate_rows;

const FETCH: [&str; 2] = ["h", "logits"];

/// An empty work directory for case `name` (a checkpoint left by an
/// earlier run would be resumed).
fn fresh(name: &str) -> PathBuf {
    let dir = cli::workdir("aot_export", name);
    std::fs::remove_dir_all(&dir).unwrap();
    cli::workdir("aot_export", name)
}

fn digits_spec() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("specs/digits_mlp.spec")
}

/// Trains `spec` for a few steps into `dir/ck`, exports `FETCH` to
/// `dir/model.o`, and compiles `predict.c` against it.
fn setup(dir: &Path, spec: &Path) -> PathBuf {
    let spec = spec.to_str().unwrap();
    let (code, _, err) = specc(
        dir,
        &["run", spec, "--steps", "40", "--checkpoint-dir", "ck"],
    );
    assert_eq!(code, 0, "{err}");
    let mut args = vec![
        "export",
        spec,
        "--checkpoint",
        "ck",
        "--format",
        "object",
        "-o",
        "model.o",
    ];
    for f in FETCH {
        args.extend(["--fetch", f]);
    }
    let (code, out, err) = specc(dir, &args);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("model.o"), "{out}");
    link_c(dir, "predict")
}

/// The program of a spec, its dataset, and a session with the function
/// that computes `FETCH` (JIT-compiled from the same plan the object holds)
/// and the checkpoint of `dir/ck` restored; `input` names the one input.
struct Reference {
    program: Program,
    data: Dataset,
    predict: Session,
    input: &'static str,
}

fn reference(dir: &Path, path: &Path, input: &'static str) -> Reference {
    let path = path.to_path_buf();
    let text = std::fs::read_to_string(&path).unwrap();
    let src = SourceFile::new(path.display().to_string(), text);
    let program = compile(&src, Functions::TRAIN).unwrap_or_else(|d| panic!("{d:?}"));
    let model = &program.model;
    let data = data::load(
        &model.data_source(path.parent().unwrap()),
        &model.input_specs(),
    )
    .unwrap();
    let fetch: Vec<String> = FETCH.iter().map(|s| s.to_string()).collect();
    let f = predict_function(model, &fetch).unwrap();
    let p = plan::plan(&model.graph, &f, &program.placement, 1);
    let jit = codegen::compile(&model.graph, &[&p], false, false, true).unwrap();
    let layout = FunctionLayout {
        name: p.name.clone(),
        outputs: p.outputs.clone(),
        scratch_bytes: p.scratch_bytes as usize,
        threads: 1,
        assertions: Vec::new(),
    };
    let f = jit.function(&p.name).unwrap();
    // The JIT code must outlive the session: leak it (one per test process).
    std::mem::forget(jit);
    // SAFETY: `f` was compiled from a plan over this layout, single-threaded.
    let mut predict =
        unsafe { Session::new(program.placement.layout.clone(), vec![(layout, f)]) }.unwrap();
    let prefix = latest_checkpoint(dir.join("ck")).unwrap().unwrap();
    predict
        .restore(&BundleReader::open(&prefix).unwrap())
        .unwrap();
    Reference {
        program,
        data,
        predict,
        input,
    }
}

/// The rows of the float input `name`, and its width.
fn pixels<'a>(data: &'a Dataset, name: &str) -> (&'a [f32], usize) {
    let input = data.inputs.iter().find(|i| i.name == name).unwrap();
    match &input.values {
        Values::F32(v) => (v, input.width),
        Values::I32(_) => panic!("{name} is floats"),
    }
}

impl Reference {
    /// `h` and `logits` of `rows` rows from row 0, concatenated per row.
    fn outputs(&mut self, rows: usize) -> Vec<f32> {
        let (px, width) = pixels(&self.data, self.input);
        let s = &mut self.predict;
        let max = s.max_batch();
        let input = s.layout.inputs.iter().position(|i| i.name == self.input);
        let input = input.unwrap();
        let mut out = Vec::new();
        let mut r0 = 0;
        while r0 < rows {
            let n = (rows - r0).min(max);
            s.input_f32_mut(input)[..n * width].copy_from_slice(&px[r0 * width..(r0 + n) * width]);
            s.call(0, n).unwrap();
            let h = s.output(0, "h", n).unwrap().to_vec();
            let logits = s.output(0, "logits", n).unwrap().to_vec();
            let (hw, lw) = (h.len() / n, logits.len() / n);
            for r in 0..n {
                out.extend_from_slice(&h[r * hw..(r + 1) * hw]);
                out.extend_from_slice(&logits[r * lw..(r + 1) * lw]);
            }
            r0 += n;
        }
        out
    }
}

/// Runs the C program on the first `rows` rows; returns its outputs.
fn run_c(exe: &Path, dir: &Path, px: &[f32], width: usize, rows: usize) -> Vec<f32> {
    let input = dir.join(format!("in{rows}.bin"));
    let output = dir.join(format!("out{rows}.bin"));
    let bytes: Vec<u8> = px[..rows * width]
        .iter()
        .flat_map(|x| x.to_ne_bytes())
        .collect();
    std::fs::write(&input, bytes).unwrap();
    let r = Command::new(exe).arg(&input).arg(&output).output().unwrap();
    assert!(
        r.status.success(),
        "predict: {}",
        String::from_utf8_lossy(&r.stderr)
    );
    let stdout = String::from_utf8_lossy(&r.stdout);
    assert!(stdout.starts_with(&format!("rows {rows}\n")), "{stdout}");
    std::fs::read(&output)
        .unwrap()
        .chunks_exact(4)
        .map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[test]
fn the_linked_object_computes_what_specc_computes() {
    let dir = fresh("digits");
    let exe = setup(&dir, &digits_spec());
    let mut reference = reference(&dir, &digits_spec(), "pixels");
    let total = reference.data.rows;
    let max = reference.predict.max_batch();
    assert_eq!(max, 64);
    assert!(total > 20 * max);
    let (px, width) = pixels(&reference.data, "pixels");
    let px = px.to_vec();
    let out_width = 128 + 10;
    for rows in [1, max, 100, total] {
        let c = run_c(&exe, &dir, &px, width, rows);
        let expected = reference.outputs(rows);
        assert_eq!(c.len(), rows * out_width, "{rows} rows");
        assert_eq!(expected.len(), c.len());
        let differ: Vec<(usize, f32, f32)> = c
            .iter()
            .zip(&expected)
            .enumerate()
            .filter(|(_, (a, b))| a.to_bits() != b.to_bits())
            .map(|(i, (a, b))| (i, *a, *b))
            .take(10)
            .collect();
        assert!(
            differ.is_empty(),
            "{rows} rows: (index, object, specc) {differ:?}"
        );
        // Not all zeros: the ReLU layer has live units and the logits vary.
        assert!(c.iter().any(|&x| x > 0.0) && c.iter().any(|&x| x < 0.0));
    }

    // The object's logits classify the rows as the eval function counts them.
    let c = run_c(&exe, &dir, &px, width, total);
    let labels = match &reference
        .data
        .inputs
        .iter()
        .find(|i| i.name == "label")
        .unwrap()
        .values
    {
        Values::I32(v) => v.clone(),
        Values::F32(_) => panic!("labels are ints"),
    };
    let correct = (0..total)
        .filter(|&r| {
            let logits = &c[r * out_width + 128..(r + 1) * out_width];
            let mut best = 0;
            for (j, &x) in logits.iter().enumerate() {
                if x > logits[best] {
                    best = j;
                }
            }
            best as i32 == labels[r]
        })
        .count();
    let mut eval = reference.program.session().unwrap();
    let prefix = latest_checkpoint(dir.join("ck")).unwrap().unwrap();
    eval.restore(&BundleReader::open(&prefix).unwrap()).unwrap();
    let all: Vec<u32> = (0..total as u32).collect();
    let e = evaluate_rows(
        &mut eval,
        &reference.data,
        &all,
        &reference.program.model.metrics,
    )
    .unwrap();
    let accuracy = e.metrics.iter().find(|m| m.0 == "accuracy").unwrap().1;
    assert_eq!(correct as f64 / total as f64, accuracy);
    assert!(
        accuracy > 0.5,
        "40 steps of Adam learn something: {accuracy}"
    );
}

/// A 600 -> 37 -> 5 MLP on synthetic data: widths that exercise every
/// remainder path of the object's SGEMM (37 columns: 8-, 4- and 1-column
/// tiles; 15 rows: 4-, 2- and 1-row blocks) and two k blocks (600 >
/// 512), so equal bits check the blocked kernels against the runtime's
/// recipe.
#[test]
fn the_object_gemm_matches_at_odd_widths_and_two_k_blocks() {
    let dir = fresh("odd");
    let spec = dir.join("odd.spec");
    std::fs::write(
        &spec,
        "model odd_mlp\n\
         data synthetic(rows = 300, features = 600, classes = 5, seed = 4, label_seed = 5, distribution = uniform)\n\
         label label: int\n\
         features {\n  x = numeric(x0..x599)\n}\n\
         params {\n\
         \x20 W1: [600, 37] = glorot_uniform(seed = 1)\n\
         \x20 b1: [37] = zeros\n\
         \x20 W2: [37, 5] = glorot_uniform(seed = 2)\n\
         \x20 b2: [5] = zeros\n\
         }\n\
         h = relu(x @ W1 + b1)\n\
         logits = h @ W2 + b2\n\
         loss = mean(sparse_softmax_cross_entropy(label, logits))\n\
         optimizer adam(learning_rate = 0.001)\n\
         train { batch = 64, steps = 100, shuffle = 300, seed = 7 }\n",
    )
    .unwrap();
    let exe = setup(&dir, &spec);
    let mut reference = reference(&dir, &spec, "x");
    assert_eq!(reference.predict.max_batch(), 64);
    let (px, width) = pixels(&reference.data, "x");
    assert_eq!(width, 600);
    let px = px.to_vec();
    let out_width = 37 + 5;
    for rows in [1, 15, 64, 100, 300] {
        let c = run_c(&exe, &dir, &px, width, rows);
        let expected = reference.outputs(rows);
        assert_eq!(c.len(), rows * out_width, "{rows} rows");
        assert_eq!(expected.len(), c.len());
        let differ: Vec<(usize, f32, f32)> = c
            .iter()
            .zip(&expected)
            .enumerate()
            .filter(|(_, (a, b))| a.to_bits() != b.to_bits())
            .map(|(i, (a, b))| (i, *a, *b))
            .take(10)
            .collect();
        assert!(
            differ.is_empty(),
            "{rows} rows: (index, object, specc) {differ:?}"
        );
        assert!(c.iter().any(|&x| x > 0.0) && c.iter().any(|&x| x < 0.0));
    }
}

#[test]
fn the_header_describes_the_rows_and_the_wrapper_checks_its_arguments() {
    let dir = fresh("header");
    let exe = setup(&dir, &digits_spec());
    let h = std::fs::read_to_string(dir.join("model.h")).unwrap();
    for line in [
        "int specc_predict(const float *in, float *out, int rows);",
        "#define SPECC_PREDICT_INPUT_WIDTH 64",
        "#define SPECC_PREDICT_OUTPUT_WIDTH 138",
        "#define SPECC_PREDICT_MAX_BATCH 64",
        "  SPECC_PREDICT_IN_PIXELS_OFFSET = 0,",
        "  SPECC_PREDICT_IN_PIXELS_WIDTH = 64,",
        "  SPECC_PREDICT_OUT_H_OFFSET = 0,",
        "  SPECC_PREDICT_OUT_H_WIDTH = 128,",
        "  SPECC_PREDICT_OUT_LOGITS_OFFSET = 128,",
        "  SPECC_PREDICT_OUT_LOGITS_WIDTH = 10,",
    ] {
        assert!(h.lines().any(|l| l == line), "no line {line:?} in\n{h}");
    }
    let rc = |rows: &str| {
        let r = Command::new(&exe).args(["--rows", rows]).output().unwrap();
        String::from_utf8_lossy(&r.stdout).trim().to_string()
    };
    assert_eq!(rc("-1"), "rc -1");
    assert_eq!(rc("0"), "rc 0");
    assert_eq!(rc("130"), "rc 0");
}

#[test]
fn export_errors_name_the_problem() {
    let dir = fresh("errors");
    let spec = digits_spec();
    let spec = spec.to_str().unwrap();
    let (code, _, err) = specc(
        &dir,
        &["run", spec, "--steps", "2", "--checkpoint-dir", "ck"],
    );
    assert_eq!(code, 0, "{err}");
    let export_to = |object: &str, extra: &[&str]| {
        let mut args = vec![
            "export",
            spec,
            "--checkpoint",
            "ck",
            "--format",
            "object",
            "-o",
            object,
        ];
        args.extend_from_slice(extra);
        specc(&dir, &args)
    };
    let export = |extra: &[&str]| export_to("m.o", extra);
    // Without --fetch: the spec's `outputs` item (digits_mlp: probs, class).
    let (code, _, err) = export_to("outputs.o", &[]);
    assert_eq!(code, 0, "{err}");
    let h = std::fs::read_to_string(dir.join("outputs.h")).unwrap();
    assert!(
        h.contains("SPECC_PREDICT_OUT_PROBS_WIDTH = 10,")
            && h.contains("SPECC_PREDICT_OUT_CLASS_WIDTH = 1,"),
        "{h}"
    );
    // A spec without `outputs` needs --fetch.
    let text = std::fs::read_to_string(spec).unwrap();
    let start = text.find("outputs {").expect("digits_mlp has outputs");
    let end = start + text[start..].find('}').unwrap() + 1;
    let bare = dir.join("bare.spec");
    let data = std::path::Path::new(spec)
        .parent()
        .unwrap()
        .join("data/digits.csv");
    std::fs::write(
        &bare,
        text[..start].replace("data/digits.csv", data.to_str().unwrap()) + &text[end..],
    )
    .unwrap();
    let bare = bare.to_str().unwrap();
    let (code, _, err) = specc(
        &dir,
        &[
            "export",
            bare,
            "--checkpoint",
            "ck",
            "--format",
            "object",
            "-o",
            "b.o",
        ],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("--fetch NAME") && err.contains("`logits`") && err.contains("outputs"),
        "{err}"
    );
    let (code, _, err) = export(&["--fetch", "logit"]);
    assert_eq!(code, 1);
    assert!(err.contains("no binding `logit`"), "{err}");
    let (code, _, err) = export(&["--fetch", "loss"]);
    assert_eq!(code, 1);
    assert!(err.contains("label `label`"), "{err}");
    let (code, _, err) = export(&["--fetch", "logits", "--symbol", "2x"]);
    assert_eq!(code, 1);
    assert!(err.contains("`2x` is not a C identifier"), "{err}");
    assert!(!dir.join("m.o").exists() && !dir.join("m.h").exists());
    // A checkpoint of another model.
    let wide = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("specs/wide_mlp.spec");
    let (code, _, err) = specc(
        &dir,
        &[
            "export",
            wide.to_str().unwrap(),
            "--checkpoint",
            "ck",
            "--format",
            "object",
            "-o",
            "m.o",
            "--fetch",
            "logits",
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("model.ckpt-2.index") && err.contains("`W1`"),
        "{err}"
    );
    let (code, _, err) = export_to("no/such/dir/m.o", &["--fetch", "logits"]);
    assert_eq!(code, 1);
    assert!(err.contains("cannot write no/such/dir/m.o"), "{err}");
    let (code, _, err) = export(&["--fetch", "logits"]);
    assert_eq!(code, 0, "{err}");
    assert!(dir.join("m.o").exists() && dir.join("m.h").exists());
}

/// `tests/aot/PROGRAM.c` compiled and linked with `dir/model.o` (and its
/// header in `dir`) into `dir/PROGRAM`, as a C user of the export does.
pub fn link_c(dir: &Path, program: &str) -> PathBuf {
    let exe = dir.join(program);
    let c = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/aot/{program}.c"));
    let cc = Command::new("cc")
        .args(["-O2", "-std=c99", "-Wall", "-Werror", "-I"])
        .arg(dir)
        .arg(&c)
        .arg(dir.join("model.o"))
        .args(["-lm", "-o"])
        .arg(&exe)
        .output()
        .expect("the C compiler `cc` runs");
    assert!(
        cc.status.success(),
        "cc: {}",
        String::from_utf8_lossy(&cc.stderr)
    );
    exe
}
