//! Tables sharded across replicas (`optim::sharded`, `train::sharded`)
//! against one process training on the global batch.
//!
//! Replicas run as threads exchanging through memory (the `Collective`
//! contract MPI keeps, `replicas::Threads`). Each holds only its rows of a
//! sharded table; put back together, the tables, their slots and every
//! replicated variable must be the model one process trains, up to the
//! order in which the replicas' dense partial sums add up (the sparse rows
//! are summed in the one process's order).

use std::rc::Rc;
use std::sync::Arc;

use specc_runtime::data;
use specc_runtime::source::ShuffledBatches;
use specc_runtime::train::replicas::{check_identical, Collective};
use specc_runtime::train::sharded::Ownership;
use specc_runtime::train::Trainer;

use crate::replicas::{assert_same_model, compile_replica, read_spec, Threads, Trained};

/// `(first row, rows)` ranges of a table, in a replica's order.
type Ranges = Vec<(usize, usize)>;

/// One replica's state after training: every state variable (a sharded
/// one's rows as this replica holds them), the losses.
struct Part {
    rank: usize,
    vars: Vec<(String, Vec<f32>)>,
    /// For each sharded variable: its name, logical shape and the rows
    /// this replica holds (`(first row, rows)` ranges in its order).
    sharded: Vec<(String, Vec<usize>, Ranges)>,
    losses: Vec<f32>,
    /// The sharded tables.
    tables: usize,
}

/// Trains `steps` steps of `text` as replica `comm.rank()` (one process
/// when `comm` is None).
fn train_part(text: &str, steps: usize, comm: Option<Rc<dyn Collective>>, shared: bool) -> Part {
    let program = compile_replica(text, comm.as_ref(), shared);
    let model = &program.model;
    let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/specs"));
    let ds = data::load(&model.data_source(dir), &model.input_specs()).unwrap();
    let mut s = program.session().unwrap();
    let rank = comm.as_ref().map_or(0, |c| c.rank());
    s.set_replica(rank).unwrap();
    let cfg = model.train.config(steps as u64);
    let rows: Vec<u32> = (0..ds.rows as u32).collect();
    let batches =
        ShuffledBatches::new(&ds, &s.layout, rows, cfg.batch, cfg.shuffle, cfg.seed).unwrap();
    let (mut batches, mut trainer) = match &comm {
        None => (batches, Trainer::new(&s).unwrap()),
        Some(c) => (
            batches.shard(c.rank(), c.replicas()),
            Trainer::replicated(&s, c.clone(), false).unwrap(),
        ),
    };
    let losses = (0..steps)
        .map(|_| trainer.step(&mut s, &mut batches).unwrap().unwrap().loss)
        .collect();
    if let Some(c) = &comm {
        assert_eq!(check_identical(&s, &**c), Ok(()), "replicas differ");
    }
    let layout = &s.layout;
    let mut sharded = Vec::new();
    let mut vars = Vec::new();
    for v in layout.vars.iter().filter(|v| v.kind.is_state()) {
        vars.push((v.name.clone(), s.var(&v.name).unwrap().to_vec()));
        if let Some(t) = layout.shard_of(v) {
            let mut shape = v.shape.clone();
            shape[0] = t.rows;
            let own = Ownership::new(&v.partitions, t.replicas);
            sharded.push((v.name.clone(), shape, own.ranges(rank)));
        }
    }
    Part {
        rank,
        vars,
        sharded,
        losses,
        tables: layout.sharded.len(),
    }
}

/// The model `n` replicas train, each table put back together from the
/// replicas' rows; checks that every replicated variable is the same on all.
fn train_sharded(text: &str, steps: usize, n: usize, shared: bool) -> (Trained, usize) {
    let text = Arc::new(text.to_string());
    let handles: Vec<_> = Threads::group(n)
        .into_iter()
        .map(|t| {
            let text = text.clone();
            std::thread::spawn(move || train_part(&text, steps, Some(Rc::new(t)), shared))
        })
        .collect();
    let parts: Vec<Part> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let first = &parts[0];
    let mut vars = Vec::new();
    for (k, (name, values)) in first.vars.iter().enumerate() {
        match first.sharded.iter().find(|(s, _, _)| s == name) {
            None => {
                for p in &parts[1..] {
                    assert!(
                        p.vars[k]
                            .1
                            .iter()
                            .map(|v| v.to_bits())
                            .eq(values.iter().map(|v| v.to_bits())),
                        "`{name}` differs between replicas"
                    );
                }
                vars.push((name.clone(), values.clone()));
            }
            Some((_, shape, _)) => {
                let row_len: usize = shape[1..].iter().product();
                let mut full = vec![f32::NAN; shape.iter().product()];
                for p in &parts {
                    let (_, _, ranges) = p.sharded.iter().find(|(s, _, _)| s == name).unwrap();
                    let local = &p.vars[k].1;
                    let mut at = 0;
                    for &(start, rows) in ranges {
                        full[start * row_len..(start + rows) * row_len]
                            .copy_from_slice(&local[at..at + rows * row_len]);
                        at += rows * row_len;
                    }
                }
                assert!(
                    full.iter().all(|v| !v.is_nan()),
                    "`{name}`: rows no replica holds"
                );
                vars.push((name.clone(), full));
            }
        }
    }
    let tables = first.tables;
    assert_eq!(first.rank, 0);
    let losses = first.losses.clone();
    (Trained { vars, losses }, tables)
}

fn one_process(text: &str, steps: usize) -> Trained {
    let p = train_part(text, steps, None, false);
    Trained {
        vars: p.vars,
        losses: p.losses,
    }
}

/// `n` replicas sharding every table of `spec` train what one process does.
pub(crate) fn sharded_matches_one_process(
    spec: &str,
    n: usize,
    steps: usize,
    tables: usize,
    shared: bool,
) {
    let mut one = one_process(spec, steps);
    let (mut many, sharded) = train_sharded(spec, steps, n, shared);
    // A sharded table's variable is declared after the others.
    one.vars.sort_by(|a, b| a.0.cmp(&b.0));
    many.vars.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(sharded, tables, "sharded tables");
    assert_eq!(
        one.vars.iter().map(|v| &v.0).collect::<Vec<_>>(),
        many.vars.iter().map(|v| &v.0).collect::<Vec<_>>()
    );
    assert_same_model(&one, &many, n, "sharded replicas");
}

#[test]
fn two_replicas_shard_the_ctr_tables_under_ftrl() {
    sharded_matches_one_process(&read_spec("ctr_ftrl.spec"), 2, 6, 10, false);
}

#[test]
fn three_replicas_shard_the_ctr_tables_under_ftrl() {
    sharded_matches_one_process(&read_spec("ctr_ftrl.spec"), 3, 6, 10, false);
}

#[test]
fn four_replicas_shard_the_ctr_tables_under_ftrl() {
    sharded_matches_one_process(&read_spec("ctr_ftrl.spec"), 4, 6, 10, false);
}

/// Wide and deep over hashed ids: two embedding tables (2 MiB, truncated
/// normal draws) under Adagrad with a dense layer, two `linear_model`
/// tables under FTRL, a mean loss.
pub(crate) const CTR_DEEP: &str = r#"
model ctr_deep
data csv("data/ctr_sample.csv")
label click: float
features {
  user_id = categorical_column_with_hash_bucket(user_id, 65536)
  ad_id   = categorical_column_with_hash_bucket(ad_id, 65536)
  site    = categorical_column_with_hash_bucket(site, 262144)
  deep = input_layer(embedding_column(user_id, dimension = 8), embedding_column(ad_id, dimension = 8))
  wide = linear_model(site, user_id)
}
block dnn(x) {
  h = layers.dense(x, 16, activation = relu)
  return layers.dense(h, 1, name = "logits")
}
logit = reshape(dnn(deep) + wide, [B])
loss = mean(sigmoid_cross_entropy(click, logit))
optimizer ftrl(learning_rate = 0.1, var_list = "linear_model/*")
optimizer adagrad(learning_rate = 0.05, var_list = ["dnn/*", "input_layer/*"])
train { batch = 64, epochs = 1, shuffle = 0 }
ema 0.99
"#;

#[test]
fn two_replicas_shard_embeddings_under_adagrad() {
    sharded_matches_one_process(CTR_DEEP, 2, 20, 4, false);
}

/// Tables the spec partitions (five partitions on two replicas: three on
/// the first, round robin), small enough not to be sharded otherwise.
#[test]
fn two_replicas_shard_the_tables_a_spec_partitions() {
    let text = CTR_DEEP
        .replace("65536", "4096")
        .replace("262144", "4096")
        .replace(
            "dimension = 8)",
            "dimension = 8, partitioner = fixed_size_partitioner(5))",
        )
        .replace(
            "linear_model(site, user_id)",
            "linear_model(site, user_id, partitioner = fixed_size_partitioner(3))",
        );
    // Two embedding tables, two linear tables (and the linear model's
    // bias, which TF's linear_model partitions too, though it has one row).
    sharded_matches_one_process(&text, 2, 20, 4, false);
}

#[test]
fn three_replicas_shard_embeddings_under_adagrad() {
    sharded_matches_one_process(CTR_DEEP, 3, 20, 4, false);
}

#[test]
fn three_replicas_sharing_memory_shard_embeddings() {
    sharded_matches_one_process(CTR_DEEP, 3, 20, 4, true);
}

/// The diagnostic compiling `text` for `n` replicas gives.
pub(crate) fn refusal(text: &str, n: u32) -> specc_grammar::Diagnostic {
    let src = specc_grammar::SourceFile::new("spec.spec", text.to_string());
    let options = specc_compiler::driver::Options {
        threads: 1,
        replicas: Some(n),
        ..specc_compiler::driver::Options::default()
    };
    match specc_compiler::driver::compile_with(
        &src,
        specc_compiler::driver::Functions::TRAIN,
        &options,
    ) {
        Ok(_) => panic!("compiled"),
        Err(mut d) => d.remove(0),
    }
}

#[test]
fn a_norm_over_a_sharded_gradient_is_refused_with_a_caret() {
    let text = format!("{CTR_DEEP}clip global_norm(clip_norm = 5.0)\n");
    let d = refusal(&text, 2);
    assert!(d.message.contains("clipping by a norm"), "{}", d.message);
    assert!(d.message.contains("input_layer/"), "{}", d.message);
    assert_eq!(
        &text[d.span.start as usize..d.span.end as usize],
        "global_norm(clip_norm = 5.0)"
    );
    // The same clip of the dense layers alone is fine.
    let dense = format!("{CTR_DEEP}clip global_norm(clip_norm = 5.0, var_list = \"dnn/*\")\n");
    let src = specc_grammar::SourceFile::new("spec.spec", dense);
    assert!(specc_compiler::driver::compile_with(
        &src,
        specc_compiler::driver::Functions::TRAIN,
        &specc_compiler::driver::Options {
            threads: 1,
            replicas: Some(3),
            ..specc_compiler::driver::Options::default()
        }
    )
    .is_ok());
}
