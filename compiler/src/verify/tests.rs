//! The verifier against deliberately broken plans, layouts and models (each
//! test breaks one invariant of a real plan and expects its name), and
//! every shipped spec, in every function, through it.

use std::path::{Path, PathBuf};

use specc_grammar::SourceFile;

use super::{ir, layout, plan, Violation};
use crate::driver::{plan_model_with, Functions, Options, Planned};
use crate::ir::{Dim, Op, Shape};
use crate::plan::{BufId, Kernel, Loc, Mode, Plan, Source};

/// A small MLP trained with Adam (in-place updates merged into one loop,
/// gradients in a scratch chain), with `outputs` for a predict function.
const MLP: &str = "model mlp
data synthetic(rows = 64, features = 6, classes = 3, seed = 1)
label label: int
features { x = numeric(x0..x5) }
params {
  W1: [6, 32] = glorot_uniform(seed = 1)
  b1: [32] = zeros
  W2: [32, 3] = glorot_uniform(seed = 2)
  b2: [3] = zeros
}
h = relu(x @ W1 + b1)
logits = h @ W2 + b2
loss = mean(sparse_softmax_cross_entropy(label, logits))
optimizer adam(learning_rate = 0.01)
train { batch = 64, steps = 1 }
outputs { probs = softmax(logits) }
";

fn planned(text: &str, which: Functions, threads: usize) -> Planned {
    planned_replicas(text, which, threads, None)
}

/// [`planned`], split for `replicas` data-parallel replicas.
fn planned_replicas(
    text: &str,
    which: Functions,
    threads: usize,
    replicas: Option<u32>,
) -> Planned {
    let src = SourceFile::new("t.spec", text.to_string());
    // The defaults, whatever the environment says.
    let options = Options {
        threads,
        winograd: crate::passes::winograd::Winograd::Auto,
        winograd_tile: None,
        gemm_epilogue: true,
        replicas,
        ..Options::default()
    };
    plan_model_with(&src, which, &options).unwrap_or_else(|d| panic!("{d:?}"))
}

/// The planned function named `name` and its plan.
fn function<'p>(p: &'p Planned, name: &str) -> (&'p crate::ir::Function, &'p Plan) {
    let fs = &p.model.functions;
    let f = [
        Some(&fs.eval),
        fs.step.as_ref(),
        fs.predict.as_ref(),
        fs.grad.as_ref(),
        fs.replica_grad.as_ref(),
    ]
    .into_iter()
    .flatten()
    .find(|f| f.name == name)
    .expect("the function");
    let pl = p.plans.iter().find(|pl| pl.name == name).expect("its plan");
    (f, pl)
}

fn verify(p: &Planned, f: &crate::ir::Function, pl: &Plan) -> Result<(), Violation> {
    plan::plan(&p.model.graph, f, &p.placement, pl)
}

fn expect(r: Result<(), Violation>, invariant: &str) -> Violation {
    let v = r.expect_err("a broken invariant");
    assert_eq!(v.invariant, invariant, "{v}");
    v
}

/// The first kernel whose accesses satisfy `pick`.
fn kernel_where(pl: &Plan, pick: impl Fn(&Kernel) -> bool) -> usize {
    pl.kernels.iter().position(pick).expect("such a kernel")
}

fn reads(k: &Kernel, b: BufId) -> bool {
    k.reads_writes().0.contains(&b)
}

#[test]
fn the_plans_of_a_spec_verify() {
    for threads in [1, 2] {
        let p = planned(MLP, Functions::ALL, threads);
        for name in ["step", "eval", "predict", "grad"] {
            let (f, pl) = function(&p, name);
            assert_eq!(verify(&p, f, pl), Ok(()), "{name}, {threads} threads");
        }
    }
}

#[test]
fn a_kernel_before_the_kernel_it_reads_from() {
    let p = planned(MLP, Functions::TRAIN, 1);
    let (f, pl) = function(&p, "eval");
    let mut pl = pl.clone();
    // A kernel reading a scratch buffer, moved to the front.
    let i = kernel_where(&pl, |k| {
        k.reads_writes()
            .0
            .iter()
            .any(|&b| matches!(pl.buffer(b).loc, Loc::Scratch { .. }))
    });
    let k = pl.kernels.remove(i);
    pl.kernels.insert(0, k);
    let m = pl.modes.remove(i);
    pl.modes.insert(0, m);
    let v = expect(verify(&p, f, &pl), "reads-after-writes");
    assert!(v.detail.starts_with("k0 reads"), "{v}");
}

#[test]
fn a_view_past_the_end_of_its_buffer() {
    let p = planned(MLP, Functions::TRAIN, 1);
    let (f, pl) = function(&p, "eval");
    let mut pl = pl.clone();
    let i = kernel_where(
        &pl,
        |k| matches!(k, Kernel::Loop(l) if !l.stores.is_empty()),
    );
    let Kernel::Loop(l) = &mut pl.kernels[i] else {
        unreachable!()
    };
    l.stores[0].1.offset.c += 1;
    let v = expect(verify(&p, f, &pl), "accesses-in-bounds");
    assert!(
        v.detail.starts_with(&format!("k{i}: a store reaches")),
        "{v}"
    );
}

#[test]
fn a_buffer_too_small_for_the_largest_batch() {
    let p = planned(MLP, Functions::TRAIN, 1);
    let (f, pl) = function(&p, "eval");
    let mut pl = pl.clone();
    // A [B, 32] scratch buffer sized for batch 32: in bounds up to 32 rows.
    let b = pl
        .buffers
        .iter()
        .position(|b| {
            matches!(b.loc, Loc::Scratch { .. })
                && b.shape == Shape(vec![Dim::Batch, Dim::Fixed(32)])
        })
        .expect("the hidden layer's buffer");
    pl.buffers[b].shape = Shape::fixed(&[32, 32]);
    let v = expect(verify(&p, f, &pl), "accesses-in-bounds");
    assert!(v.detail.ends_with("at batch 64"), "{v}");
}

#[test]
fn two_live_scratch_buffers_in_the_same_bytes() {
    let p = planned(MLP, Functions::TRAIN, 1);
    let (f, pl) = function(&p, "step");
    let mut pl = pl.clone();
    // A kernel that reads one scratch buffer and writes another: both are
    // live at it.
    let scratch = |pl: &Plan, b: BufId| matches!(pl.buffer(b).loc, Loc::Scratch { .. });
    let (r, w) = pl
        .kernels
        .iter()
        .find_map(|k| {
            let (rs, ws) = k.reads_writes();
            let r = rs.into_iter().find(|&b| scratch(&pl, b))?;
            let w = ws.into_iter().find(|&b| scratch(&pl, b) && b != r)?;
            Some((r, w))
        })
        .expect("a kernel from scratch to scratch");
    let at = pl.buffer(r).loc.clone();
    pl.buffers[w.0 as usize].loc = at;
    let v = expect(verify(&p, f, &pl), "scratch-lifetimes");
    assert!(
        v.detail.contains(&format!("{r}")) || v.detail.contains("chain"),
        "{v}"
    );
}

/// The first chain of the MLP's step (Adam's merged update reads the
/// gradients of W1, b1, W2 and b2 from one scratch block).
fn a_chain(pl: &Plan) -> crate::plan::merge::Chain {
    let c = pl.chains.first().expect("a chain").clone();
    assert!(c.members.len() >= 2, "{c:?}");
    c
}

#[test]
fn a_buffer_twice_in_a_chain() {
    let p = planned(MLP, Functions::TRAIN, 1);
    let (f, pl) = function(&p, "step");
    let mut pl = pl.clone();
    // The chain's last gradient listed again.
    let c = a_chain(&pl);
    let last = c.members[c.members.len() - 1];
    pl.chains[0].members.push(last);
    let v = expect(verify(&p, f, &pl), "scratch-chains");
    assert!(
        v.detail.ends_with(&format!(
            "{} ({}) is twice in chain 0",
            last.0,
            pl.buffer(last.0).node
        )),
        "{v}"
    );
}

#[test]
fn a_chained_buffer_away_from_its_chain() {
    let p = planned(MLP, Functions::TRAIN, 1);
    let (f, pl) = function(&p, "step");
    let mut pl = pl.clone();
    let (b, _) = a_chain(&pl).members[1];
    let Loc::Scratch { offset } = pl.buffer(b).loc else {
        panic!("chained in scratch")
    };
    pl.buffers[b.0 as usize].loc = Loc::Scratch {
        offset: offset + 64,
    };
    let v = expect(verify(&p, f, &pl), "scratch-chains");
    assert!(v.detail.starts_with(&format!("chain 0's {b}")), "{v}");
}

/// Two biases of one sum have one gradient (one node, hash-consed), which
/// `replica_grad` copies into the exchange once per bias; the copies of
/// `b1`, `W` and `b2` are adjacent update loops of one signature, but one
/// merged loop cannot read that buffer at two offsets of its chain
/// (`plan::merge` chained it twice, and the merged copy read `W`'s
/// gradient from past the chain: `scratch-offsets` broken after
/// `plan::memory`, and the wide-and-deep CTR model of two embedding
/// columns, a dense layer and a linear model broke `scratch-lifetimes`).
const TWIN_BIASES: &str = "model twin_biases
data synthetic(rows = 64, features = 3, classes = 2, seed = 1)
label label: int
features { x = numeric(x0..x2) }
params {
  b1: [2] = zeros
  W: [3, 2] = zeros
  b2: [2] = zeros
}
loss = mean(sparse_softmax_cross_entropy(label, x @ W + b1 + b2))
optimizer gradient_descent(learning_rate = 0.1)
train { batch = 8, steps = 1 }
";

#[test]
fn a_gradient_two_exchange_copies_read_is_chained_once() {
    // 2 and 4 replicas copy the sums as they are (3 weigh them by rows).
    for replicas in [2, 3, 4] {
        let p = planned_replicas(TWIN_BIASES, Functions::TRAIN, 1, Some(replicas));
        let (f, pl) = function(&p, "replica_grad");
        assert_eq!(verify(&p, f, pl), Ok(()), "{replicas} replicas");
        if replicas == 3 {
            // Each replica weighs its sums by its rows: b2's copy reads
            // b1's weighted gradient from the exchange, not the sum.
            continue;
        }
        // The bias gradient's buffer, and W's.
        let g = &p.model.graph;
        let grad = |shape: &[u32]| {
            pl.buffers
                .iter()
                .position(|b| {
                    matches!(b.loc, Loc::Scratch { .. })
                        && b.shape == Shape::fixed(shape)
                        && !matches!(g.op(b.node), Op::Var(_))
                })
                .map(|b| BufId(b as u32))
        };
        let (bias, w) = (grad(&[2]).expect("the bias gradient"), grad(&[3, 2]));
        let w = w.expect("W's gradient");
        // b1's and W's copies merge (W 16 elements after b1, as in the
        // arenas); b2's is a loop of its own.
        assert_eq!(
            pl.chains,
            [crate::plan::merge::Chain {
                members: vec![(bias, 0), (w, 16)],
                len: 22,
            }],
            "{replicas} replicas"
        );
        let copies_of_bias = pl
            .kernels
            .iter()
            .filter(|k| reads(k, bias) && matches!(k, Kernel::Loop(l) if l.reductions.is_empty()))
            .count();
        assert_eq!(copies_of_bias, 2, "{replicas} replicas");
    }
}

#[test]
fn an_unaligned_scratch_buffer() {
    let p = planned(MLP, Functions::TRAIN, 1);
    let (f, pl) = function(&p, "eval");
    let mut pl = pl.clone();
    let b = pl
        .buffers
        .iter()
        .position(|b| matches!(b.loc, Loc::Scratch { offset } if offset > 0))
        .expect("a scratch buffer");
    let Loc::Scratch { offset } = pl.buffers[b].loc else {
        unreachable!()
    };
    pl.buffers[b].loc = Loc::Scratch { offset: offset - 4 };
    expect(verify(&p, f, &pl), "scratch-offsets");
}

#[test]
fn a_split_kernel_in_a_one_thread_plan() {
    let p = planned(MLP, Functions::TRAIN, 1);
    let (f, pl) = function(&p, "eval");
    let mut pl = pl.clone();
    assert_eq!(pl.threads, 1);
    let i = kernel_where(&pl, |k| matches!(k, Kernel::Gemm { .. }));
    pl.modes[i] = Mode::Split;
    let v = expect(verify(&p, f, &pl), "thread-modes");
    assert_eq!(v.detail, format!("k{i}: a one-thread plan splits it"));
}

#[test]
fn a_barrier_removed_from_a_two_thread_plan() {
    // The digits MLP's step splits its products between two threads.
    let text = std::fs::read_to_string(specs().join("digits_mlp.spec")).expect("the spec");
    let p = planned(&text, Functions::TRAIN, 2);
    let (f, pl) = function(&p, "step");
    assert_eq!(pl.threads, 2, "a two-thread step");
    let mut pl = pl.clone();
    let i = pl.syncs.before.iter().position(|&b| b).expect("a barrier");
    pl.syncs.before[i] = false;
    let v = expect(verify(&p, f, &pl), "barriers-current");
    assert!(
        v.detail.contains(&format!("need [k{i}")) || v.detail.contains(&format!(" k{i}")),
        "{v}"
    );
}

#[test]
fn an_output_no_kernel_writes() {
    let p = planned(MLP, Functions::ALL, 1);
    let (f, pl) = function(&p, "predict");
    let mut pl = pl.clone();
    let i = kernel_where(&pl, |k| {
        k.reads_writes()
            .1
            .iter()
            .any(|&b| pl.buffer(b).loc == Loc::Output(0))
    });
    pl.kernels.remove(i);
    pl.modes.remove(i);
    pl.syncs.before.remove(i);
    let v = expect(
        plan::function(&p.model.graph, f, &p.placement, &pl),
        "outputs-written",
    );
    assert!(v.detail.contains("`probs`"), "{v}");
}

#[test]
fn a_variable_read_after_its_update() {
    let p = planned(MLP, Functions::TRAIN, 1);
    let (f, pl) = function(&p, "step");
    let mut pl = pl.clone();
    // W1's leaf buffer, read by the forward product; run that product
    // again at the end, after the update wrote W1 in place.
    let g = &p.model.graph;
    let w1 = pl
        .buffers
        .iter()
        .position(|b| matches!(g.op(b.node), Op::Var(0)))
        .map(|b| BufId(b as u32))
        .expect("W1's buffer");
    let i = kernel_where(&pl, |k| matches!(k, Kernel::Gemm { .. }) && reads(k, w1));
    let again = pl.kernels[i].clone();
    pl.kernels.push(again);
    pl.modes.push(Mode::Single);
    let v = expect(verify(&p, f, &pl), "variables-read-before-overwritten");
    assert!(v.detail.contains("`W1`"), "{v}");
}

#[test]
fn a_loop_body_out_of_order() {
    let p = planned(MLP, Functions::TRAIN, 1);
    let (f, pl) = function(&p, "eval");
    let mut pl = pl.clone();
    let g = &p.model.graph;
    // A loop whose second body node reads its first.
    let i = kernel_where(
        &pl,
        |k| matches!(k, Kernel::Loop(l) if l.body.len() >= 2 && g.inputs_of(l.body[1]).contains(&l.body[0])),
    );
    let Kernel::Loop(l) = &mut pl.kernels[i] else {
        unreachable!()
    };
    l.body.swap(0, 1);
    let v = expect(verify(&p, f, &pl), "loop-structure");
    assert!(
        v.detail.contains("neither computes before it nor loads"),
        "{v}"
    );
}

#[test]
fn a_gemm_of_the_wrong_size() {
    let p = planned(MLP, Functions::TRAIN, 1);
    let (f, pl) = function(&p, "eval");
    let mut pl = pl.clone();
    let i = kernel_where(&pl, |k| matches!(k, Kernel::Gemm { .. }));
    let Kernel::Gemm { k, .. } = &mut pl.kernels[i] else {
        unreachable!()
    };
    k.c += 1;
    expect(verify(&p, f, &pl), "gemm-geometry");
}

#[test]
fn a_store_into_an_input() {
    let p = planned(MLP, Functions::TRAIN, 1);
    let (f, pl) = function(&p, "eval");
    let mut pl = pl.clone();
    let input = pl
        .buffers
        .iter()
        .position(|b| matches!(b.loc, Loc::Input(_)) && b.dtype == crate::ir::DType::F32)
        .map(|b| BufId(b as u32))
        .expect("the features' buffer");
    // A loop that fills the features with zeros.
    let (n, shape) = (pl.buffer(input).node, pl.buffer(input).shape.clone());
    let v = crate::plan::View::contiguous(input, &shape).expect("a view");
    pl.kernels.push(Kernel::Loop(crate::plan::LoopKernel {
        domain: shape,
        reduce_axes: vec![],
        body: vec![],
        sources: vec![(n, Source::Const(0.0))],
        stores: vec![(n, v)],
        reductions: vec![],
    }));
    pl.modes.push(Mode::Single);
    let v = expect(verify(&p, f, &pl), "leaves-read-only");
    assert!(v.detail.contains(&format!("writes {input}")), "{v}");
}

#[test]
fn layouts_that_share_or_misalign_bytes() {
    let p = planned(MLP, Functions::TRAIN, 1);
    assert_eq!(layout::placement(&p.model, &p.placement), Ok(()));
    // W1 and b1 in the same bytes.
    let mut place = p.placement.clone();
    let b1 = p
        .model
        .graph
        .vars
        .iter()
        .position(|v| v.name == "b1")
        .expect("b1");
    place.vars[b1] = place.vars[0];
    place.layout.vars[b1].offset = place.vars[0].1;
    let v = layout::placement(&p.model, &place).unwrap_err();
    assert_eq!(v.invariant, "no-shared-bytes", "{v}");
    // b1 off the 16-element grid.
    let mut place = p.placement.clone();
    place.vars[b1].1 += 4;
    place.layout.vars[b1].offset += 4;
    let v = layout::placement(&p.model, &place).unwrap_err();
    assert_eq!(v.invariant, "aligned-offsets", "{v}");
}

#[test]
fn a_model_whose_function_updates_a_variable_twice() {
    let p = planned(MLP, Functions::TRAIN, 1);
    let mut m = p.model.clone();
    let step = m.functions.step.as_mut().expect("step");
    let first = step.updates[0];
    step.updates.push(first);
    let v = ir::model(&m).unwrap_err();
    assert_eq!(v.invariant, "function-updates", "{v}");
    assert!(v.detail.ends_with("twice"), "{v}");
}

#[test]
fn a_stop_gradient_left_after_optimize() {
    let p = planned(MLP, Functions::TRAIN, 1);
    let mut m = p.model.clone();
    let out = m.functions.eval.outputs[0].node;
    let s = m.graph.stop_gradient(out);
    m.functions.eval.outputs[0].node = s;
    assert_eq!(ir::model(&m), Ok(()));
    let v = ir::optimized(&m).unwrap_err();
    assert_eq!(v.invariant, "simplified", "{v}");
}

/// The tiled pooling's input gradient, a function output, is copied out of
/// the transposed view over the transposed 6-D shape (`plan::resolve`).
#[test]
fn a_tiled_pooling_gradient_is_copied_over_its_windows() {
    let text = "model pool
data synthetic(rows = 4, features = 1)
params {
  a: [2, 8, 6, 3] = glorot_uniform(seed = 1)
}
y = max_pool2d(a, ksize = 2, strides = 2, padding = \"VALID\")
loss = reduce_sum(y * y)
optimizer gradient_descent(learning_rate = 0.1)
train { batch = 1, steps = 1 }
";
    let which = Functions {
        grad: true,
        ..Functions::TRAIN
    };
    let p = planned(text, which, 1);
    let (f, pl) = function(&p, "grad");
    assert_eq!(verify(&p, f, pl), Ok(()));
    let out = pl
        .buffers
        .iter()
        .position(|b| b.loc == Loc::Output(1))
        .map(|b| BufId(b as u32))
        .expect("grad/a's buffer");
    let copies: Vec<&Shape> = pl
        .kernels
        .iter()
        .filter_map(|k| match k {
            Kernel::Loop(l) if l.body.is_empty() && l.stores.iter().any(|(_, v)| v.buf == out) => {
                Some(&l.domain)
            }
            _ => None,
        })
        .collect();
    assert_eq!(copies, [&Shape::fixed(&[2, 4, 2, 3, 2, 3])]);
}

fn specs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs")
}

/// Every shipped spec (`specs/`, `specs/optimizers/`), in every function
/// (the `check` function too), on one thread and on two, through every
/// check after every pass. (The suites compile them again in debug
/// builds: the snapshots of every stage, the filetests, the runs.)
#[test]
fn every_shipped_spec_verifies_in_every_function() {
    let mut paths = Vec::new();
    for dir in [specs(), specs().join("optimizers")] {
        for e in std::fs::read_dir(&dir).expect("the specs") {
            let path = e.expect("an entry").path();
            if path.extension().is_some_and(|x| x == "spec") {
                paths.push(path);
            }
        }
    }
    paths.sort();
    assert!(paths.len() >= 19, "{paths:?}");
    for path in paths {
        let text = std::fs::read_to_string(&path).expect("the spec");
        let src = SourceFile::new(path.display().to_string(), text);
        for threads in [1, 2] {
            let which = Functions {
                check: true,
                ..Functions::ALL
            };
            let options = Options {
                threads,
                ..Options::default()
            };
            if let Err(d) = plan_model_with(&src, which, &options) {
                panic!("{}, {threads} threads: {:?}", path.display(), d);
            }
        }
    }
}

#[test]
fn a_winograd_accumulator_over_a_live_buffer() {
    // W7's second convolution runs as a fused Winograd kernel whose filter
    // gradient has a second accumulator past the planned scratch.
    let text = std::fs::read_to_string(specs().join("digits_cnn.spec")).expect("the spec");
    let p = planned(&text, Functions::TRAIN, 1);
    let (f, pl) = function(&p, "step");
    let mut pl = pl.clone();
    let i = kernel_where(
        &pl,
        |k| matches!(k, Kernel::Winograd(w) if w.acc_bytes() > 0),
    );
    // The accumulator moved onto a buffer the kernel reads.
    let Kernel::Winograd(w) = &pl.kernels[i] else {
        unreachable!()
    };
    let Loc::Scratch { offset } = pl.buffer(w.dy.as_ref().expect("dy").buf).loc else {
        panic!("dy in scratch")
    };
    let Kernel::Winograd(w) = &mut pl.kernels[i] else {
        unreachable!()
    };
    w.acc = offset;
    let v = expect(verify(&p, f, &pl), "winograd-scratch");
    assert!(
        v.detail.starts_with(&format!("k{i}'s second accumulator")),
        "{v}"
    );
}
