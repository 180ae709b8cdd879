//! GEMM epilogues (`plan::epilogue`): a bias/relu loop folded into the GEMM
//! before it trains to exactly the same bits as the separate loop, on one
//! thread and on two (the threads split C, each applying the epilogue to
//! its block), for every epilogue form (bias and relu, relu alone, bias
//! alone).

use specc_compiler::driver::{compile_with, Functions, Options};
use specc_compiler::plan::{GemmEpilogue, Kernel, Plan};
use specc_grammar::SourceFile;
use specc_runtime::data;
use specc_runtime::source::ShuffledBatches;
use specc_runtime::train::Trainer;

fn read_spec(name: &str) -> String {
    std::fs::read_to_string(format!("{}/specs/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// W1's MLP with two more layers, `relu(h @ W3)` (relu alone) and
/// `h2 @ W4 + b3` (bias alone, read by the logits' GEMM), at batch 1024 (a
/// step worth two threads).
fn digits_variant() -> String {
    let s = read_spec("digits_mlp.spec");
    for piece in [
        "  b2: [10]      = zeros\n}",
        "logits = h @ W2 + b2",
        "batch = 64",
    ] {
        assert!(s.contains(piece), "digits_mlp.spec has no {piece:?}");
    }
    s.replace(
        "  b2: [10]      = zeros\n}",
        "  b2: [10]      = zeros\n  W3: [128, 32] = glorot_uniform(seed = 3)\n  \
         W4: [32, 128] = glorot_uniform(seed = 4)\n  b3: [128]     = zeros\n}",
    )
    .replace(
        "logits = h @ W2 + b2",
        "h2     = relu(h @ W3)\nh3     = h2 @ W4 + b3\nlogits = h3 @ W2 + b2",
    )
    .replace("batch = 64", "batch = 1024")
}

/// W3's MLP on 1024 rows (two 784 -> 1024 -> 1024 relu layers).
fn wide_mlp() -> String {
    let spec = read_spec("wide_mlp.spec");
    assert!(spec.contains("rows = 8192"));
    spec.replace("rows = 8192", "rows = 1024")
}

/// The epilogues of a plan's GEMMs, in kernel order.
fn epilogues(p: &Plan) -> Vec<GemmEpilogue> {
    p.kernels
        .iter()
        .filter_map(|k| match k {
            Kernel::Gemm {
                epilogue: Some(e), ..
            } => Some(e.clone()),
            _ => None,
        })
        .collect()
}

/// Trains `steps` steps: the step's plan, the losses and every variable's
/// values.
fn train(text: &str, threads: usize, fused: bool, steps: usize) -> (Plan, Vec<u32>, Vec<u32>) {
    let src = SourceFile::new("spec.spec", text.to_string());
    let program = compile_with(
        &src,
        Functions::TRAIN,
        &Options {
            threads,
            gemm_epilogue: fused,
            ..Options::default()
        },
    )
    .unwrap();
    let step = program.plans[0].clone();
    let model = &program.model;
    let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/specs"));
    let ds = data::load(&model.data_source(dir), &model.input_specs()).unwrap();
    let mut s = program.session().unwrap();
    let cfg = model.train.config(steps as u64);
    let rows: Vec<u32> = (0..ds.rows as u32).collect();
    let mut batches =
        ShuffledBatches::new(&ds, &s.layout, rows, cfg.batch, cfg.shuffle, cfg.seed).unwrap();
    let mut trainer = Trainer::new(&s).unwrap();
    let losses: Vec<u32> = (0..steps)
        .map(|_| {
            trainer
                .step(&mut s, &mut batches)
                .unwrap()
                .unwrap()
                .loss
                .to_bits()
        })
        .collect();
    let vars = s
        .layout
        .vars
        .iter()
        .flat_map(|v| s.var(&v.name).unwrap().to_vec())
        .map(f32::to_bits)
        .collect();
    (step, losses, vars)
}

/// Every combination of fusion and threads gives the unfused one-thread
/// bits; the fused plans have the `expected` epilogues (bias?, relu), the
/// unfused ones none.
fn same_bits(what: &str, text: &str, steps: usize, expected: &[(bool, bool)]) {
    let (p0, loss0, vars0) = train(text, 1, false, steps);
    assert!(epilogues(&p0).is_empty(), "{what}: fusion off");
    assert!(
        loss0.windows(2).any(|w| w[0] != w[1]),
        "{what}: training moved"
    );
    for (threads, fused) in [(1, true), (2, false), (2, true)] {
        let (p, loss, vars) = train(text, threads, fused, steps);
        assert_eq!(p.threads as usize, threads, "{what}: planned threads");
        let forms: Vec<(bool, bool)> = epilogues(&p)
            .iter()
            .map(|e| (e.bias.is_some(), e.relu))
            .collect();
        if fused {
            assert_eq!(forms, expected, "{what}: {threads} thread(s)");
        } else {
            assert!(forms.is_empty(), "{what}: fusion off");
        }
        assert_eq!(
            loss, loss0,
            "{what}: {threads} thread(s), fused {fused}: losses"
        );
        let diff = vars.iter().zip(&vars0).filter(|(a, b)| a != b).count();
        assert_eq!(
            (vars.len(), diff),
            (vars0.len(), 0),
            "{what}: {threads} thread(s), fused {fused}: variables differ"
        );
    }
}

#[test]
fn fused_epilogues_train_to_the_same_bits_digits() {
    same_bits(
        "digits variant",
        &digits_variant(),
        8,
        &[(true, true), (false, true), (true, false)],
    );
}

#[test]
fn fused_epilogues_train_to_the_same_bits_wide_mlp() {
    same_bits("wide_mlp", &wide_mlp(), 3, &[(true, true), (true, true)]);
}
