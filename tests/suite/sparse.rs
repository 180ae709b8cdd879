//! Sparse gradients: the step of a model with a large embedding table. With a
//! lazy optimizer no kernel of the step visits the whole table (the work is
//! proportional to the ids in the batch); Adam is not lazy in TF, so its step
//! has full-table loops. The same holds when the table's rows are a
//! sequence read by a recurrent layer (`dynamic_rnn` over
//! `sequence_input_layer`). The numbers themselves are checked against TF in
//! `golden_optimizers.rs` (sections `sparse*`).
//!
//! The test reads the plan's structure, not its text: the work of every kernel
//! (loop domain, GEMM m·k·n, row kernel ids × row length, at the compiled
//! batch size) and the kernels that address the table or one of its slots
//! (a buffer in an arena with the table's shape), so a flattened loop or a
//! GEMM whose k is the table's rows is counted like any other loop.

use specc_compiler::driver::{plan_model, Functions};
use specc_compiler::plan::{Kernel, Loc, Plan, Source, View};
use specc_grammar::SourceFile;

const ROWS: u64 = 1_000_000;
const WIDTH: u64 = 8;
const BATCH: u64 = 256;

fn step_plan(optimizer: &str) -> Plan {
    step_plan_of("embedding_lookup(E, item)", optimizer)
}

/// The step's plan with the table looked up by `lookup`.
fn step_plan_of(lookup: &str, optimizer: &str) -> Plan {
    let spec = format!(
        "model big_table\n\
         data csv(\"data.csv\")\n\
         features {{ item = integer(item, num_buckets = {ROWS}) }}\n\
         label y: float from y\n\
         params {{\n  E: [{ROWS}, {WIDTH}] = random_uniform(seed = 1)\n  w: [{WIDTH}, 1] = glorot_uniform(seed = 2)\n}}\n\
         z = {lookup} @ w\n\
         loss = mean(sigmoid_cross_entropy(y, z))\n\
         optimizer {optimizer}\n\
         train {{ batch = {BATCH}, steps = 10 }}\n"
    );
    let planned = plan_model(&SourceFile::new("big_table.spec", spec), Functions::TRAIN)
        .unwrap_or_else(|d| {
            panic!(
                "{optimizer}: {:?}",
                d.iter().map(|d| &d.message).collect::<Vec<_>>()
            )
        });
    let step = planned.plans.into_iter().next().unwrap();
    assert_eq!(step.name, "step");
    step
}

/// The elements a kernel works on at the compiled batch size.
fn work(k: &Kernel) -> u64 {
    let b = BATCH as i64;
    match k {
        Kernel::Loop(l) => l.domain.numel(BATCH),
        Kernel::Gemm { m, k, n, .. } => (m.eval(b) * k.eval(b) * n.eval(b)) as u64,
        Kernel::ArgMax { shape, .. } => shape.numel(BATCH),
        Kernel::Rows(r) => r.n.eval(b) as u64 * r.row_len,
        Kernel::Window(w) => w.images.eval(b) as u64 * u64::from(w.window.patch_len()),
        Kernel::Winograd(w) => w.images.eval(b) as u64 * w.tiles() * w.groups(),
        Kernel::Recurrence(r) => {
            r.rows.eval(b) as u64 * u64::from(r.steps) * r.cell.gate_width() as u64
        }
    }
}

/// Every view a kernel reads or writes through.
fn views(k: &Kernel) -> Vec<&View> {
    match k {
        Kernel::Loop(l) => {
            let mut v: Vec<&View> = l
                .sources
                .iter()
                .filter_map(|(_, s)| match s {
                    Source::Load(view, _) => Some(view),
                    _ => None,
                })
                .collect();
            v.extend(l.stores.iter().map(|(_, view)| view));
            v.extend(l.reductions.iter().filter_map(|r| r.dest.as_ref()));
            v
        }
        Kernel::Gemm {
            a, b, c, epilogue, ..
        } => {
            let mut v = vec![a, b, c];
            v.extend(epilogue.iter().filter_map(|e| e.bias.as_ref()));
            v
        }
        Kernel::ArgMax { src, dst, .. } => vec![src, dst],
        Kernel::Rows(r) => {
            let mut v = vec![&r.ids, &r.dst];
            v.extend(r.src.as_ref());
            v.extend(r.first.as_ref());
            v
        }
        Kernel::Window(w) => vec![&w.src, &w.dst],
        Kernel::Winograd(w) => [
            Some(&w.x),
            w.u.as_ref(),
            w.y.as_ref(),
            w.v.as_ref(),
            w.dy.as_ref(),
            w.dx.as_ref(),
            w.du.as_ref(),
        ]
        .into_iter()
        .flatten()
        .collect(),
        Kernel::Recurrence(r) => r.inputs.iter().chain([&r.dst]).collect(),
    }
}

/// Whether a kernel addresses the table or one of its slots: a variable (an
/// arena buffer) with the table's `ROWS × WIDTH` elements.
fn touches_table(plan: &Plan, k: &Kernel) -> bool {
    views(k).iter().any(|v| {
        let buf = plan.buffer(v.buf);
        matches!(buf.loc, Loc::Arena { .. }) && buf.shape.numel(BATCH) == ROWS * WIDTH
    })
}

fn describe(plan: &Plan) -> String {
    plan.kernels
        .iter()
        .map(|k| {
            format!(
                "  work {:>10} table {:5} {k:?}",
                work(k),
                touches_table(plan, k)
            )
        })
        .map(|s| s.chars().take(200).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn lazy_optimizers_touch_only_the_rows_of_the_batch() {
    for opt in [
        "gradient_descent(learning_rate = 0.1)",
        "momentum(learning_rate = 0.1, momentum = 0.9)",
        "adagrad(learning_rate = 0.1)",
        "adagrad_da(learning_rate = 0.1)",
        "adadelta(learning_rate = 1.0)",
        "ftrl(learning_rate = 0.1, l1_regularization_strength = 0.01)",
        "rmsprop(learning_rate = 0.01, centered = true)",
        "proximal_adagrad(learning_rate = 0.1)",
        "proximal_gradient_descent(learning_rate = 0.1)",
    ] {
        assert_lazy(&step_plan(opt), opt);
    }
}

/// `tf.gather` on axis 0 is `embedding_lookup`: its gradient stays an
/// `IndexedSlices`, applied to the batch's rows only.
#[test]
fn gather_on_axis_0_updates_only_the_rows_of_the_batch() {
    for lookup in ["gather(E, item)", "gather(E, item, axis = 0)"] {
        assert_lazy(
            &step_plan_of(lookup, "adagrad(learning_rate = 0.1)"),
            lookup,
        );
    }
}

/// No kernel of `p` works on the whole table, and row kernels alone read
/// and update it.
fn assert_lazy(p: &Plan, what: &str) {
    // No kernel's work grows with the table: the largest is a few times
    // the batch's rows (BATCH ids × WIDTH), far below ROWS.
    let bound = 16 * BATCH * WIDTH;
    for k in &p.kernels {
        assert!(
            work(k) <= bound,
            "{what}: a kernel works on {} elements (bound {bound}):\n{}",
            work(k),
            describe(p)
        );
    }
    // The table and its slots are read and written only by row kernels
    // over the batch's ids.
    let on_table: Vec<&Kernel> = p.kernels.iter().filter(|k| touches_table(p, k)).collect();
    assert!(
        !on_table.is_empty() && on_table.iter().all(|k| matches!(k, Kernel::Rows(_))),
        "{what}: kernels on the table:\n{}",
        describe(p)
    );
    // And the table is updated (a row scatter or scatter-add into it).
    assert!(
        on_table.iter().any(|k| matches!(k, Kernel::Rows(r) if {
            let buf = p.buffer(r.dst.buf);
            matches!(buf.loc, Loc::Arena { .. }) && buf.shape.numel(BATCH) == ROWS * WIDTH
        })),
        "{what}: no row kernel writes the table:\n{}",
        describe(p)
    );
}

/// A table of sequence embeddings (`sequence_input_layer` over a hash
/// bucket column of words split by `sep = whitespace`) read by a GRU
/// through `dynamic_rnn`: the gradient flows back through the recurrent
/// layer and still reaches the table as rows. Only row kernels address the
/// table and its slot, one of them writes it, and no kernel's work grows
/// with the table (the recurrence and its products work on B·T rows).
#[test]
fn a_sequence_embedding_read_by_a_gru_updates_only_the_rows_of_the_batch() {
    let spec = format!(
        "model text_rnn\n\
         data csv(\"data.csv\")\n\
         label y: int\n\
         features {{\n  \
           words = sequence_categorical_column_with_hash_bucket(text, {ROWS}, sep = whitespace, max_values = 8)\n  \
           seq = sequence_input_layer(embedding_column(words, dimension = {WIDTH}))\n  \
           n = sequence_length(seq)\n\
         }}\n\
         params {{ W: [4, 2] = glorot_uniform(seed = 1) }}\n\
         outputs, h = dynamic_rnn(gru_cell(4), seq, sequence_length = n)\n\
         loss = mean(sparse_softmax_cross_entropy(y, h @ W))\n\
         optimizer adagrad(learning_rate = 0.1)\n\
         train {{ batch = {BATCH}, steps = 10 }}\n"
    );
    let planned = plan_model(&SourceFile::new("text_rnn.spec", spec), Functions::TRAIN)
        .unwrap_or_else(|d| panic!("{:?}", d.iter().map(|d| &d.message).collect::<Vec<_>>()));
    let p = planned.plans.into_iter().next().unwrap();
    assert_eq!(p.name, "step");
    assert!(
        p.kernels.iter().any(|k| matches!(k, Kernel::Recurrence(_))),
        "the GRU runs as a recurrence:\n{}",
        describe(&p)
    );
    for k in &p.kernels {
        assert!(
            work(k) < ROWS,
            "a kernel works on {} elements:\n{}",
            work(k),
            describe(&p)
        );
    }
    let on_table: Vec<&Kernel> = p.kernels.iter().filter(|k| touches_table(&p, k)).collect();
    assert!(
        !on_table.is_empty() && on_table.iter().all(|k| matches!(k, Kernel::Rows(_))),
        "kernels on the table:\n{}",
        describe(&p)
    );
    assert!(
        on_table.iter().any(|k| matches!(k, Kernel::Rows(r) if {
            let buf = p.buffer(r.dst.buf);
            matches!(buf.loc, Loc::Arena { .. }) && buf.shape.numel(BATCH) == ROWS * WIDTH
        })),
        "no row kernel writes the table:\n{}",
        describe(&p)
    );
}

#[test]
fn adam_updates_every_row_as_tf_does() {
    let p = step_plan("adam(learning_rate = 0.01)");
    assert!(
        p.kernels
            .iter()
            .any(|k| touches_table(&p, k) && work(k) >= ROWS * WIDTH),
        "Adam is not lazy: m and v decay on every row\n{}",
        describe(&p)
    );
}
