//! Steps on two threads (SPMD: both threads run the compiled step, splitting
//! its kernels) compute exactly the same bits as on one thread: GEMMs are
//! split by blocks of C and loops along non-reduced dimensions only; row
//! kernels run on thread 0 between barriers, which sit only where one thread
//! reads or overwrites what the other touched (`plan::threads::syncs`). Checked on a dense MLP and on an
//! embedding model (gather, first occurrence, duplicate sums, row scatter),
//! each trained past the end of an epoch (a new shuffle of the rows).

use specc_compiler::driver::{compile_with, Functions, Options};
use specc_compiler::ir::WinogradTile;
use specc_compiler::passes::winograd::Winograd;
use specc_compiler::plan::{BufId, Kernel, Mode, Plan, Source, WindowOp};
use specc_grammar::SourceFile;
use specc_runtime::data;
use specc_runtime::source::ShuffledBatches;
use specc_runtime::train::Trainer;
use specc_runtime::twin::StallGuard;

fn read_spec(name: &str) -> String {
    std::fs::read_to_string(format!("{}/specs/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// wide_mlp on 1024 rows (4 steps an epoch), so that the step is worth two
/// threads and a few steps cross an epoch.
fn wide_mlp() -> String {
    let spec = read_spec("wide_mlp.spec");
    assert!(spec.contains("rows = 8192") && spec.contains("batch = 256"));
    spec.replace("rows = 8192", "rows = 1024")
}

/// digits_embedding with batches of 512 (the step is then worth two threads;
/// 1797 rows make an epoch of 4 steps).
fn digits_embedding() -> String {
    let spec = read_spec("digits_embedding.spec");
    assert!(spec.contains("batch = 64"));
    spec.replace("batch = 64", "batch = 512")
}

/// Variables by name after training.
type Vars = Vec<(String, Vec<f32>)>;

/// Trains `steps` steps on `threads` threads: the plan's threads, whether the
/// step has row kernels, the variables and the losses.
/// How a step computes its 3×3 convolutions: which run as Winograd (then
/// the step must have its transforms), with which tile if forced, and
/// whether the fused kernels call the runtime's transforms (else
/// Cranelift's).
#[derive(Clone, Copy)]
struct Conv {
    winograd: Winograd,
    tile: Option<WinogradTile>,
    runtime: bool,
}

/// Every convolution direct.
const DIRECT: Conv = Conv {
    winograd: Winograd::Never,
    tile: None,
    runtime: true,
};

/// The default: Winograd where the cost model says, each with its tile.
const AUTO: Conv = Conv {
    winograd: Winograd::Auto,
    tile: None,
    runtime: true,
};

/// Every 3×3 stride-1 convolution as Winograd with `tile`.
fn winograd_with(tile: WinogradTile) -> Conv {
    Conv {
        winograd: Winograd::Always,
        tile: Some(tile),
        runtime: true,
    }
}

fn train_with(text: &str, threads: usize, steps: usize, conv: Conv) -> (u32, bool, Vars, Vec<f32>) {
    let (threads, has_rows, vars, losses, _) = train_guarded(text, threads, steps, conv, None);
    (threads, has_rows, vars, losses)
}

/// [`train_with`], with the step's one-thread twin (which it must have) run
/// when `twin` says so; also returns the calls on two threads and on the twin.
fn train_guarded(
    text: &str,
    threads: usize,
    steps: usize,
    conv: Conv,
    twin: Option<StallGuard>,
) -> (u32, bool, Vars, Vec<f32>, Option<(u64, u64)>) {
    let src = SourceFile::new("spec.spec", text.to_string());
    let program = compile_with(
        &src,
        Functions::TRAIN,
        &Options {
            threads,
            winograd: conv.winograd,
            winograd_tile: conv.tile,
            runtime_winograd: conv.runtime,
            ..Options::default()
        },
    )
    .unwrap();
    let step = &program.plans[0];
    let has_rows = step.kernels.iter().any(|k| matches!(k, Kernel::Rows(_)));
    let has_winograd = step.kernels.iter().any(|k| match k {
        Kernel::Window(w) => w.op == WindowOp::WinogradInputGrad,
        Kernel::Winograd(w) => w.dx.is_some() && w.du.is_some(),
        _ => false,
    });
    assert_eq!(has_winograd, conv.winograd != Winograd::Never);
    if let Some(tile) = conv.tile {
        assert!(
            step.kernels.iter().all(|k| match k {
                Kernel::Window(w) => w.tile.is_none_or(|t| t == tile),
                Kernel::Winograd(w) => w.tile == tile,
                _ => true,
            }),
            "every Winograd kernel has the forced tile {tile:?}"
        );
    }
    let model = &program.model;
    let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/specs"));
    let ds = data::load(&model.data_source(dir), &model.input_specs()).unwrap();
    let mut s = program.session().unwrap();
    if let Some(guard) = twin {
        let (f, twin) = program.twins()[0];
        assert_eq!(f, 0, "the step has a twin");
        s.set_twin(f, twin, guard).unwrap();
    }
    let cfg = model.train.config(steps as u64);
    assert!(
        (steps as u64) * cfg.batch as u64 > ds.rows as u64,
        "{steps} steps of {} rows stay within the first epoch of {}",
        cfg.batch,
        ds.rows
    );
    let rows: Vec<u32> = (0..ds.rows as u32).collect();
    let mut batches =
        ShuffledBatches::new(&ds, &s.layout, rows, cfg.batch, cfg.shuffle, cfg.seed).unwrap();
    let mut trainer = Trainer::new(&s).unwrap();
    let losses: Vec<f32> = (0..steps)
        .map(|_| trainer.step(&mut s, &mut batches).unwrap().unwrap().loss)
        .collect();
    let vars = s
        .layout
        .vars
        .iter()
        .map(|v| (v.name.clone(), s.var(&v.name).unwrap().to_vec()))
        .collect();
    (step.threads, has_rows, vars, losses, s.twin_counts(0))
}

fn same_bits_on_one_and_two_threads(what: &str, text: &str, steps: usize) -> bool {
    same_bits_with(what, text, steps, DIRECT)
}

fn same_bits_with(what: &str, text: &str, steps: usize, conv: Conv) -> bool {
    let (t1, rows1, vars1, loss1) = train_with(text, 1, steps, conv);
    let (t2, rows2, vars2, loss2) = train_with(text, 2, steps, conv);
    assert_eq!(t1, 1);
    assert_eq!(t2, 2, "{what}: the step should be planned for two threads");
    assert_eq!(rows1, rows2);
    assert_eq!(
        loss1.iter().map(|l| l.to_bits()).collect::<Vec<_>>(),
        loss2.iter().map(|l| l.to_bits()).collect::<Vec<_>>(),
        "{what}: losses"
    );
    assert_eq!(vars1.len(), vars2.len());
    for ((n1, v1), (n2, v2)) in vars1.iter().zip(&vars2) {
        assert_eq!(n1, n2);
        assert_eq!(v1.len(), v2.len());
        let diff = v1
            .iter()
            .zip(v2)
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .count();
        assert_eq!(
            diff, 0,
            "{what}: {n1}: {diff} values differ between one and two threads"
        );
    }
    assert!(loss1.iter().all(|l| l.is_finite()), "{what}: {loss1:?}");
    // Training moved: the losses are not all the same.
    assert!(loss1.windows(2).any(|w| w[0] != w[1]), "{what}: {loss1:?}");
    rows1
}

/// digits_mlp (W1): a short step, planned for two threads with a one-thread
/// twin (`Plan::twin`) that the session runs while two threads stall. Calls
/// alternating between the two codes compute the same bits as one thread.
#[test]
fn a_short_step_and_its_one_thread_twin_compute_the_same_bits_as_one_thread() {
    let text = read_spec("digits_mlp.spec");
    let steps = 40;
    let (t1, _, vars1, loss1, counts1) = train_guarded(&text, 1, steps, DIRECT, None);
    assert_eq!((t1, counts1), (1, None), "one thread: no twin");
    let (t2, _, vars2, loss2, counts2) =
        train_guarded(&text, 2, steps, DIRECT, Some(StallGuard::alternating()));
    assert_eq!(t2, 2, "digits_mlp's step is planned for two threads");
    let half = steps as u64 / 2;
    assert_eq!(counts2, Some((half, half)), "calls alternate");
    assert_eq!(
        loss1.iter().map(|l| l.to_bits()).collect::<Vec<_>>(),
        loss2.iter().map(|l| l.to_bits()).collect::<Vec<_>>()
    );
    assert!(loss1.windows(2).any(|w| w[0] != w[1]), "{loss1:?}");
    for ((n, v1), (_, v2)) in vars1.iter().zip(&vars2) {
        let diff = v1
            .iter()
            .zip(v2)
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .count();
        assert_eq!(diff, 0, "{n}: {diff} values differ");
    }
}

/// A session pairs a function only with a one-thread twin of the same
/// outputs: the program's own pairing is accepted, anything else refused.
#[test]
fn a_twin_must_be_a_one_thread_function_with_the_same_outputs() {
    let src = SourceFile::new("spec.spec", read_spec("digits_mlp.spec"));
    let program = compile_with(
        &src,
        Functions::TRAIN,
        &Options {
            threads: 2,
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(program.twins(), vec![(0, program.plans.len())]);
    let (f, twin) = program.twins()[0];
    let mut s = program.session().unwrap();
    let guard = StallGuard::default;
    s.set_twin(f, twin, guard()).unwrap();
    let e = s.set_twin(twin, f, guard()).unwrap_err();
    assert!(e.contains("cannot stand in for"), "{e}");
    assert!(s.set_twin(f, f, guard()).is_err());
    assert!(s.set_twin(f, twin + 1, guard()).is_err());
    // The eval function (one thread, other outputs) cannot stand in either.
    let e = s.set_twin(f, 1, guard()).unwrap_err();
    assert!(e.contains("cannot stand in for"), "{e}");
}

#[test]
fn two_threads_compute_the_same_bits_as_one() {
    let rows = same_bits_on_one_and_two_threads("wide_mlp", &wide_mlp(), 6);
    assert!(!rows, "wide_mlp has no row kernels");
}

#[test]
fn two_threads_compute_the_same_bits_as_one_with_row_kernels() {
    let rows = same_bits_on_one_and_two_threads("digits_embedding", &digits_embedding(), 6);
    assert!(rows, "digits_embedding's step has row kernels");
}

/// Single-head attention over 16 steps of 32 features at batch 256: the
/// batched products (a GEMM per example, the threads taking contiguous
/// ranges of examples) give one thread's bits on two.
#[test]
fn two_threads_compute_the_same_bits_as_one_with_batched_products() {
    let text = "data synthetic(rows = 512, features = 512, classes = 4)
label label: int
features { x = numeric(x0..x511) }
params {
  Wq: [32, 32] = glorot_uniform(seed = 1)
  Wk: [32, 32] = glorot_uniform(seed = 2)
  Wv: [32, 32] = glorot_uniform(seed = 3)
  Wo: [32, 4] = glorot_uniform(seed = 4)
}
seq = reshape(x, [B, 16, 32])
scores = softmax(matmul(seq @ Wq, seq @ Wk, transpose_b = true) * 0.17)
logits = reduce_mean(matmul(scores, seq @ Wv) @ Wo, axis = 1)
loss = mean(sparse_softmax_cross_entropy(label, logits))
optimizer adam(learning_rate = 0.001)
train { batch = 256, steps = 4 }
";
    same_bits_on_one_and_two_threads("attention", text, 4);
}

/// Time-major code (a product and a stack on `[T, B, D]`, so the threads cut
/// loops and GEMMs whose rows are `T·B`), gathers along the time axis (a
/// fused select-and-sum) and a masked softmax give one thread's bits on two.
#[test]
fn two_threads_compute_the_same_bits_as_one_with_time_major_values_and_gathers() {
    let text = "data synthetic(rows = 512, features = 513, classes = 4)
label label: int
features {
  x = numeric(x0..x511)
  n = numeric(x512)
}
params {
  W: [32, 32] = glorot_uniform(seed = 1)
  Wo: [32, 4] = glorot_uniform(seed = 2)
}
seq = reshape(x, [B, 16, 32])
tm = tanh(transpose(seq, [1, 0, 2]) @ W)
back = transpose(stack([tm[0], tm[15]]) + reduce_mean(tm, axis = 0), [1, 0, 2])
picked = gather(transpose(tm, [1, 0, 2]), [3, 0, 7, 7, 15], axis = 1)
last = gather(seq, cast(argmax(seq[:, :, 0], 1), int32), axis = 1, batch_dims = 1)
mask = expand_dims(sequence_mask(reshape(abs(n) * 8.0, [B]), 16), 1)
att = matmul(softmax(matmul(picked, seq, transpose_b = true) * 0.17, mask = mask), seq)
logits = reduce_mean(att @ Wo, axis = 1) + reduce_mean(back @ Wo, axis = 1) + last @ Wo
loss = mean(sparse_softmax_cross_entropy(label, logits))
optimizer adam(learning_rate = 0.001)
train { batch = 256, steps = 4 }
";
    same_bits_on_one_and_two_threads("time-major", text, 4);
}

/// W7's CNN at batch 512, plus a small convolution and pooling of a
/// parameter image whose window kernels are too small to split (thread 0
/// runs them while the other waits).
fn digits_cnn() -> String {
    let spec = read_spec("digits_cnn.spec");
    assert!(spec.contains("batch = 64") && spec.contains("b4: [10]           = zeros"));
    spec.replace("batch = 64", "batch = 512")
        .replace(
            "b4: [10]           = zeros",
            "b4: [10]           = zeros\n  Q: [1, 5, 4, 2] = glorot_uniform(seed = 5)\n  KQ: [3, 2, 2, 3] = glorot_uniform(seed = 6)",
        )
        .replace(
            "loss = mean(sparse_softmax_cross_entropy(label, logits))",
            "small = max_pool2d(relu(conv2d(Q, KQ, strides = [2, 1], padding = \"SAME\")), ksize = 2, strides = 1, padding = \"SAME\")\nloss = mean(sparse_softmax_cross_entropy(label, logits)) + 0.01 * reduce_sum(small * small)",
        )
}

#[test]
fn two_threads_compute_the_same_bits_as_one_with_convolutions() {
    let text = digits_cnn();
    assert!(text.contains("small ="));
    let rows = same_bits_on_one_and_two_threads("digits_cnn", &text, 6);
    assert!(!rows, "digits_cnn has no row kernels");
}

/// The same with every 3×3 stride-1 convolution as Winograd F(2×2, 3×3):
/// the transforms split by images, the batched GEMMs by groups.
#[test]
fn two_threads_compute_the_same_bits_as_one_with_winograd_f2x2_convolutions() {
    let text = digits_cnn();
    let conv = winograd_with(WinogradTile::F2);
    let rows = same_bits_with("digits_cnn winograd f2x2", &text, 6, conv);
    assert!(!rows, "digits_cnn has no row kernels");
}

/// The same with F(4×4, 3×3).
#[test]
fn two_threads_compute_the_same_bits_as_one_with_winograd_f4x4_convolutions() {
    let text = digits_cnn();
    let conv = winograd_with(WinogradTile::F4);
    let rows = same_bits_with("digits_cnn winograd f4x4", &text, 6, conv);
    assert!(!rows, "digits_cnn has no row kernels");
}

/// The fused Winograd kernels' transforms in Cranelift (`codegen::winograd`,
/// as an object file has them) compute the runtime's bits
/// (`specc_runtime::winograd`, AVX-512 or AVX2 lanes): 6 steps of the CNN
/// with every convolution as Winograd with `tile`, every loss and variable.
fn cranelift_transforms_compute_the_runtimes_bits(tile: WinogradTile) {
    let text = digits_cnn();
    let runtime = winograd_with(tile);
    let cranelift = Conv {
        runtime: false,
        ..runtime
    };
    let (_, _, vars1, loss1) = train_with(&text, 1, 6, runtime);
    let (_, _, vars2, loss2) = train_with(&text, 1, 6, cranelift);
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&loss1), bits(&loss2), "{tile:?}: losses");
    assert_eq!(vars1.len(), vars2.len());
    for ((n1, v1), (n2, v2)) in vars1.iter().zip(&vars2) {
        assert_eq!(n1, n2);
        assert_eq!(bits(v1), bits(v2), "{tile:?}: {n1}");
    }
}

#[test]
fn cranelift_winograd_f2x2_transforms_compute_the_runtimes_bits() {
    cranelift_transforms_compute_the_runtimes_bits(WinogradTile::F2);
}

#[test]
fn cranelift_winograd_f4x4_transforms_compute_the_runtimes_bits() {
    cranelift_transforms_compute_the_runtimes_bits(WinogradTile::F4);
}

/// Trains `steps` steps of `text` with `threads` threads allowed: the step's
/// planned threads and whether the session started its worker thread.
fn worker_after_training(text: &str, threads: usize, steps: usize) -> (u32, bool) {
    let src = SourceFile::new("spec.spec", text.to_string());
    let program = compile_with(
        &src,
        Functions::TRAIN,
        &Options {
            threads,
            ..Options::default()
        },
    )
    .unwrap();
    let model = &program.model;
    let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/specs"));
    let ds = data::load(&model.data_source(dir), &model.input_specs()).unwrap();
    let mut s = program.session().unwrap();
    let cfg = model.train.config(steps as u64);
    let rows: Vec<u32> = (0..ds.rows as u32).collect();
    let mut batches =
        ShuffledBatches::new(&ds, &s.layout, rows, cfg.batch, cfg.shuffle, cfg.seed).unwrap();
    let mut trainer = Trainer::new(&s).unwrap();
    assert!(!s.worker_started(), "no worker before the first step");
    for _ in 0..steps {
        let loss = trainer.step(&mut s, &mut batches).unwrap().unwrap().loss;
        assert!(loss.is_finite());
    }
    (program.plans[0].threads, s.worker_started())
}

/// A tiny model (W2 cancer_logreg) with two cores allowed is planned for one
/// thread, and its session never starts the worker thread: nothing spins,
/// sleeps or wakes beside the training thread. wide_mlp, worth two threads,
/// starts it on its first step.
#[test]
fn a_one_thread_plan_starts_no_worker_thread() {
    let (threads, worker) = worker_after_training(&read_spec("cancer_logreg.spec"), 2, 40);
    assert_eq!(threads, 1, "cancer_logreg's step is worth one thread");
    assert!(!worker, "a one-thread plan must not start the worker");
    let (threads, worker) = worker_after_training(&wide_mlp(), 2, 1);
    assert_eq!(threads, 2, "wide_mlp's step is worth two threads");
    assert!(worker, "a two-thread plan runs thread 1 on the worker");
}

/// The buffers kernel `k` reads and writes, by buffer id.
fn reads_writes(k: &Kernel) -> (Vec<BufId>, Vec<BufId>) {
    match k {
        Kernel::Loop(l) => (
            l.sources
                .iter()
                .filter_map(|(_, s)| match s {
                    Source::Load(v, _) => Some(v.buf),
                    _ => None,
                })
                .collect(),
            l.stores
                .iter()
                .map(|(_, v)| v.buf)
                .chain(
                    l.reductions
                        .iter()
                        .filter_map(|r| r.dest.as_ref().map(|v| v.buf)),
                )
                .collect(),
        ),
        Kernel::Gemm {
            a, b, c, epilogue, ..
        } => (
            [a.buf, b.buf]
                .into_iter()
                .chain(
                    epilogue
                        .iter()
                        .filter_map(|e| e.bias.as_ref().map(|v| v.buf)),
                )
                .collect(),
            vec![c.buf],
        ),
        Kernel::ArgMax { src, dst, .. } => (vec![src.buf], vec![dst.buf]),
        Kernel::Window(w) => (vec![w.src.buf], vec![w.dst.buf]),
        Kernel::Winograd(w) => w.reads_writes(),
        Kernel::Recurrence(r) => (r.inputs.iter().map(|v| v.buf).collect(), vec![r.dst.buf]),
        Kernel::Rows(r) => (
            [Some(&r.ids), r.src.as_ref(), r.first.as_ref()]
                .into_iter()
                .flatten()
                .map(|v| v.buf)
                .collect(),
            vec![r.dst.buf],
        ),
    }
}

/// Checks a two-thread plan's barriers independently of the planner: when a
/// kernel reads a buffer an earlier kernel wrote and one of the two runs on
/// thread 0 alone, the other split, a barrier lies between them (two split
/// kernels may hand over without one when their parts line up: a product's
/// rows and the loops over them; `tests/suite/barriers.rs` checks those element
/// by element). Returns the barriers.
fn check_barriers(what: &str, plan: &Plan) -> usize {
    assert_eq!(plan.threads, 2, "{what}: planned for two threads");
    let n = plan.kernels.len();
    assert_eq!(
        plan.syncs.before.len(),
        n,
        "{what}: a barrier flag per kernel"
    );
    let rw: Vec<_> = plan.kernels.iter().map(reads_writes).collect();
    for j in 0..n {
        for i in 0..j {
            let handed_over = rw[j].0.iter().any(|b| rw[i].1.contains(b));
            let mixed = plan.modes[i] != plan.modes[j];
            if handed_over && mixed {
                assert!(
                    plan.syncs.before[i + 1..=j].iter().any(|&b| b),
                    "{what}: k{j} reads what k{i} wrote on another thread, with no barrier between"
                );
            }
        }
    }
    plan.syncs.count()
}

/// Barriers sit where one thread reads what the other wrote, and not
/// between kernels that thread 0 runs alone one after the other (W3's loss
/// kernels k4..k9 run on thread 0 with none between them; its two hidden
/// layers' bias/relu loops are GEMM epilogues); a barrier after
/// every kernel, as before, fails the count.
#[test]
fn barriers_where_threads_hand_data_over() {
    for (what, text) in [
        ("wide_mlp", wide_mlp()),
        ("digits_embedding", digits_embedding()),
        ("digits_cnn", digits_cnn()),
    ] {
        let src = SourceFile::new("spec.spec", text);
        let program = compile_with(
            &src,
            Functions::TRAIN,
            &Options {
                threads: 2,
                gemm_epilogue: true,
                ..Options::default()
            },
        )
        .unwrap();
        let step = &program.plans[0];
        let barriers = check_barriers(what, step);
        let singles_in_a_row = (1..step.kernels.len())
            .filter(|&j| step.modes[j - 1] == Mode::Single && step.modes[j] == Mode::Single)
            .count();
        assert!(singles_in_a_row > 0, "{what}: kernels on thread 0 in a row");
        assert!(
            barriers + singles_in_a_row <= step.kernels.len(),
            "{what}: {barriers} barriers, {singles_in_a_row} Single kernels after Single ones, {} kernels",
            step.kernels.len()
        );
        if what == "wide_mlp" {
            for j in 5..=9 {
                assert_eq!(step.modes[j], Mode::Single, "wide_mlp: k{j} on thread 0");
                assert!(!step.syncs.before[j], "wide_mlp: no barrier before k{j}");
            }
        }
    }
}

/// W7's CNN at batch 61 with its second convolution by Winograd blocks of
/// images (`plan::winofuse`: two blocks of 31 and 30 images, one a thread,
/// the filter gradient summed in two halves) with `conv` trains as with
/// direct convolution, on two threads and on one: the losses of the first
/// `early` steps within `early_rel` relative, all 30 within `rel`.
///
/// Adam's first steps divide each gradient element by its own size, so an
/// element whose rounding differs in sign moves by the whole learning rate;
/// the trajectories then drift apart at a rate set by the rounding.
/// F(2×2) rounds like direct convolution (1e-7 of the loss every step);
/// F(4×4)'s transforms round about 10× more (its `G` has 1/6 and 1/24), its
/// losses agree to 4e-5 for 3 steps and drift to about 1.4e-2 by step 30.
fn winograd_blocks_train_digits_cnn_as_direct_convolution(
    conv: Conv,
    early: usize,
    early_rel: f32,
    rel: f32,
) {
    let text = read_spec("digits_cnn.spec");
    assert!(text.contains("batch = 64"));
    let text = text.replace("batch = 64", "batch = 61");
    for threads in [2, 1] {
        let (_, _, _, direct) = train_with(&text, threads, 30, DIRECT);
        let (_, _, _, wino) = train_with(&text, threads, 30, conv);
        for (i, (d, w)) in direct.iter().zip(&wino).enumerate() {
            let tol = if i < early { early_rel } else { rel };
            assert!(
                (d - w).abs() <= tol * d.abs(),
                "{threads} threads, step {i}: direct {d}, winograd {w}"
            );
        }
    }
}

/// The default (W7's 8×8 outputs take F(4×4, 3×3); the tile is asserted).
#[test]
fn winograd_f4x4_blocks_train_digits_cnn_as_direct_convolution() {
    let conv = Conv {
        tile: Some(WinogradTile::F4),
        ..AUTO
    };
    winograd_blocks_train_digits_cnn_as_direct_convolution(conv, 3, 1e-4, 3e-2);
}

#[test]
fn winograd_f2x2_blocks_train_digits_cnn_as_direct_convolution() {
    let conv = winograd_with(WinogradTile::F2);
    winograd_blocks_train_digits_cnn_as_direct_convolution(conv, 30, 1e-6, 1e-6);
}
