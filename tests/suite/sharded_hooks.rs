//! The hooks of a run whose tables are sharded across replicas
//! (`summary::sharded`, `train::sharded_checkpoint`): the histogram of a
//! sharded table is the whole table's, as one process writes it, and every
//! replica sweeps its own data files of the checkpoints replica 0 sweeps,
//! each replica with a checkpoint directory of its own (no shared file
//! system).
//!
//! Replicas run as threads (`replicas::Threads`), each with the hooks
//! `specc run` gives it: replica 0 writes the summaries and lists the
//! checkpoints, the others take part in both.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use specc::run::hooks::TensorLogHook;
use specc_runtime::abi::VarRole;
use specc_runtime::checkpoint::{BundleReader, CheckpointManager, CheckpointState};
use specc_runtime::data;
use specc_runtime::source::ShuffledBatches;
use specc_runtime::summary::sharded::{ShardedHistogramHook, ShardedHistograms};
use specc_runtime::summary::{
    event_files, read_events, Histogram, HistogramProto, SummarySaverHook, SummaryWriter,
    ValueKind, What,
};
use specc_runtime::train::replicas::Collective;
use specc_runtime::train::sharded::Ownership;
use specc_runtime::train::sharded_checkpoint::{Leader, ShardedSaverHook};
use specc_runtime::train::{fit_with, Hook, StopAtStepHook, Timer, Trainer};
use specc_testkit::tmp::TempDir;

use crate::replicas::{compile_replica, Threads};
use crate::sharded::CTR_DEEP;

/// Summaries every this many global steps.
const SUMMARY_STEPS: u64 = 5;
/// Steps trained: the last one writes summaries (1, 6, 11).
const STEPS: u64 = 11;

/// Where a run writes: its summaries (replica 0's) and each replica's
/// checkpoint directory, with the checkpoints' period and `max_to_keep`.
struct Dirs {
    summaries: PathBuf,
    checkpoints: Vec<PathBuf>,
    every_steps: u64,
    max_to_keep: usize,
}

/// A sharded parameter as one replica holds it: name, logical shape, the
/// rows it holds (`(first row, rows)` in its order), its values.
type Rows = (String, Vec<usize>, Vec<(usize, usize)>, Vec<f32>);

/// What a replica ends with: its sharded parameters' rows, every trainable
/// parameter's name, and (replica 0) the lines logging the first embedding
/// table (`logging { tensors }`).
type Ended = (Vec<Rows>, Vec<String>, Vec<String>);

/// Trains `STEPS` steps of `text` as replica `comm.rank()` (one process when
/// `comm` is None) with the run's hooks.
fn train_part(text: &str, comm: Option<Rc<dyn Collective>>, dirs: &Dirs) -> Ended {
    let program = compile_replica(text, comm.as_ref(), false);
    let model = &program.model;
    let specs = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/specs"));
    let ds = data::load(&model.data_source(specs), &model.input_specs()).unwrap();
    let mut s = program.session().unwrap();
    let rank = comm.as_ref().map_or(0, |c| c.rank());
    s.set_replica(rank).unwrap();
    let cfg = model.train.config(STEPS);
    let rows: Vec<u32> = (0..ds.rows as u32).collect();
    let batches =
        ShuffledBatches::new(&ds, &s.layout, rows, cfg.batch, cfg.shuffle, cfg.seed).unwrap();
    let (mut batches, trainer) = match &comm {
        None => (batches, Trainer::new(&s).unwrap()),
        Some(c) => (
            batches.shard(c.rank(), c.replicas()),
            Trainer::replicated(&s, c.clone(), false).unwrap(),
        ),
    };
    let mut stop = StopAtStepHook::num_steps(STEPS);
    let writer = (rank == 0).then(|| SummaryWriter::create(&dirs.summaries).unwrap());
    let sharded = comm.clone().and_then(|c| ShardedHistograms::new(&s, c));
    let mut summaries: Box<dyn Hook> = match (&writer, sharded) {
        (Some(w), sharded) => {
            Box::new(SummarySaverHook::new(w.clone(), SUMMARY_STEPS, true).with_sharded(sharded))
        }
        (None, Some(sharded)) => Box::new(ShardedHistogramHook::new(sharded, SUMMARY_STEPS)),
        (None, None) => panic!("replica {rank} has no sharded table"),
    };
    let mut saver = comm.clone().map(|c| {
        let leader = (rank == 0).then(|| Leader {
            manager: CheckpointManager::new(&dirs.checkpoints[0], Some(dirs.max_to_keep), None)
                .unwrap(),
            timer: Timer::new(Some(dirs.every_steps), None),
            report: None,
        });
        ShardedSaverHook::new(c, leader).with_directory(&dirs.checkpoints[rank])
    });
    let embedding = s
        .layout
        .vars
        .iter()
        .find(|v| matches!(v.kind, VarRole::Param { .. }) && v.name.contains("embedding"))
        .map(|v| v.name.clone())
        .unwrap();
    let lines = RefCell::new(Vec::new());
    let mut log = (rank == 0).then(|| {
        let print = |l: &str| lines.borrow_mut().push(l.to_string());
        let timer = Timer::new(Some(SUMMARY_STEPS), None);
        TensorLogHook::new(vec![embedding], &[], timer, STEPS as i64, print)
    });
    let mut hooks: Vec<&mut dyn Hook> = vec![&mut stop, &mut *summaries];
    if let Some(l) = log.as_mut() {
        hooks.push(l);
    }
    if let Some(s) = saver.as_mut() {
        hooks.push(s);
    }
    fit_with(trainer, &mut s, &mut batches, &mut hooks).unwrap();
    drop(hooks);
    drop(summaries);
    drop(log);
    if let Some(w) = writer {
        w.close().unwrap();
    }
    let layout = &s.layout;
    let mut params = Vec::new();
    let mut tables = Vec::new();
    for v in &layout.vars {
        if !matches!(v.kind, VarRole::Param { .. }) {
            continue;
        }
        params.push(v.name.clone());
        if let Some(t) = layout.shard_of(v) {
            let mut shape = v.shape.clone();
            shape[0] = t.rows;
            let ranges = Ownership::new(&v.partitions, t.replicas).ranges(rank);
            tables.push((
                v.name.clone(),
                shape,
                ranges,
                s.var(&v.name).unwrap().to_vec(),
            ));
        }
    }
    (tables, params, lines.into_inner())
}

/// The histograms in the event files of `dir`: `(step, tag, histogram)`.
fn histograms(dir: &Path) -> Vec<(i64, String, HistogramProto)> {
    let files = event_files(dir).unwrap();
    assert_eq!(files.len(), 1, "{files:?}");
    let mut out = Vec::new();
    for e in read_events(&files[0]).unwrap() {
        if let What::Summary(s) = e.what {
            for v in s.values {
                if let ValueKind::Histo(h) = v.kind {
                    out.push((e.step, v.tag, h));
                }
            }
        }
    }
    out
}

/// A sharded run: its tables put back together from the replicas' rows,
/// replica 0's parameters and lines logged, the run's directories.
struct Sharded {
    tables: Vec<(String, Vec<f32>)>,
    params: Vec<String>,
    logged: Vec<String>,
    dirs: Dirs,
    _temps: Vec<TempDir>,
}

/// `n` replicas train `CTR_DEEP`, each with its own checkpoint directory.
fn train_sharded(n: usize, tag: &str) -> Sharded {
    let temps: Vec<TempDir> = (0..=n)
        .map(|k| TempDir::new(&format!("sharded_hooks_{tag}_{k}")))
        .collect();
    let dirs = Arc::new(Dirs {
        summaries: temps[n].path().to_path_buf(),
        checkpoints: temps[..n].iter().map(|t| t.path().to_path_buf()).collect(),
        every_steps: 2,
        max_to_keep: 2,
    });
    let handles: Vec<_> = Threads::group(n)
        .into_iter()
        .map(|t| {
            let dirs = dirs.clone();
            std::thread::spawn(move || train_part(CTR_DEEP, Some(Rc::new(t)), &dirs))
        })
        .collect();
    let mut parts: Vec<Ended> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let mut tables = Vec::new();
    for (k, (name, shape, _, _)) in parts[0].0.iter().enumerate() {
        let row_len: usize = shape[1..].iter().product();
        let mut full = vec![f32::NAN; shape.iter().product()];
        for (rows, _, _) in &parts {
            let (_, _, ranges, local) = &rows[k];
            let mut at = 0;
            for &(start, count) in ranges {
                full[start * row_len..(start + count) * row_len]
                    .copy_from_slice(&local[at..at + count * row_len]);
                at += count * row_len;
            }
        }
        assert!(
            full.iter().all(|v| !v.is_nan()),
            "`{name}`: rows no replica holds"
        );
        tables.push((name.clone(), full));
    }
    let (_, params, logged) = parts.swap_remove(0);
    Sharded {
        tables,
        params,
        logged,
        dirs: Arc::try_unwrap(dirs).ok().unwrap(),
        _temps: temps,
    }
}

fn assert_relative(a: f64, b: f64, what: &str) {
    assert!(
        (a - b).abs() <= 1e-6 * a.abs().max(b.abs()),
        "{what}: {a} against {b}"
    );
}

/// `got`'s counts, min, max and num are `want`'s exactly; its sums to 1e-6.
fn assert_same_histogram(got: &HistogramProto, want: &HistogramProto, what: &str) {
    assert_eq!(got.bucket_limit, want.bucket_limit, "{what}: bucket limits");
    assert_eq!(got.bucket, want.bucket, "{what}: bucket counts");
    assert_eq!(
        (got.min, got.max, got.num),
        (want.min, want.max, want.num),
        "{what}: min, max, num"
    );
    assert_relative(got.sum, want.sum, &format!("{what}: sum"));
    assert_relative(
        got.sum_squares,
        want.sum_squares,
        &format!("{what}: sum_squares"),
    );
}

/// The histogram of each table sharded across `n` replicas, written by
/// replica 0, is the whole table's: what one process writes of the table
/// the replicas hold together, and of the table one process trains.
fn histograms_are_the_whole_tables(n: usize) {
    let run = train_sharded(n, &format!("histograms{n}"));
    let (tables, params, dirs) = (&run.tables, &run.params, &run.dirs);
    assert_eq!(tables.len(), 4, "the sharded tables");
    let written = histograms(&dirs.summaries);
    // Every parameter has one histogram at every write: none is missing
    // (a sharded table is no longer one replica's rows) or twice.
    let tags: Vec<&str> = written.iter().map(|(_, t, _)| t.as_str()).collect();
    let expected_writes = [1, 6, 11];
    assert_eq!(tags.len(), params.len() * expected_writes.len(), "{tags:?}");
    assert_eq!(
        tags.iter().copied().collect::<BTreeSet<_>>(),
        params.iter().map(String::as_str).collect::<BTreeSet<_>>()
    );
    for (name, full) in tables {
        let steps: Vec<i64> = written
            .iter()
            .filter(|w| &w.1 == name)
            .map(|w| w.0)
            .collect();
        assert_eq!(steps, expected_writes, "`{name}` written at");
        let last = &written.iter().rfind(|w| &w.1 == name).unwrap().2;
        let mut whole = Histogram::new();
        whole.add_finite(full).unwrap();
        assert_eq!(
            last.num as usize,
            full.len(),
            "`{name}`: every real row, once"
        );
        assert_same_histogram(last, &whole.to_proto(), &format!("`{name}`, {n} replicas"));
    }
    // One process training the same model writes the same histograms, up
    // to the model's own difference (the replicas' dense partial sums add
    // up in another order: the tables agree to 1e-6, not bit for bit), so
    // min and max to 1e-6 too; the counts are the same.
    let one_dir = TempDir::new(&format!("sharded_hooks_histograms{n}_one"));
    let one = Dirs {
        summaries: one_dir.path().to_path_buf(),
        checkpoints: Vec::new(),
        every_steps: 0,
        max_to_keep: 0,
    };
    train_part(CTR_DEEP, None, &one);
    let alone = histograms(&one.summaries);
    for (name, _) in tables {
        let pick = |w: &[(i64, String, HistogramProto)]| {
            w.iter()
                .filter(|x| &x.1 == name)
                .map(|x| (x.0, x.2.clone()))
                .collect::<Vec<_>>()
        };
        let (mine, theirs) = (pick(&written), pick(&alone));
        assert_eq!(mine.len(), theirs.len(), "`{name}`: writes");
        for ((step, got), (_, want)) in mine.iter().zip(&theirs) {
            let what = format!("`{name}` at step {step}, one process");
            assert_eq!(got.bucket_limit, want.bucket_limit, "{what}: bucket limits");
            assert_eq!(got.bucket, want.bucket, "{what}: bucket counts");
            assert_eq!(got.num, want.num, "{what}: num");
            for (a, b, x) in [
                (got.min, want.min, "min"),
                (got.max, want.max, "max"),
                (got.sum, want.sum, "sum"),
                (got.sum_squares, want.sum_squares, "sum_squares"),
            ] {
                assert_relative(a, b, &format!("{what}: {x}"));
            }
        }
    }
}

/// Replica 0 logs a sharded table (`logging { tensors }`) as the logical
/// table: its shape, and its first values, which are replica 0's first rows.
fn logged_tables_are_the_whole_tables(n: usize) {
    let run = train_sharded(n, &format!("logging{n}"));
    let (name, full) = run
        .tables
        .iter()
        .find(|(t, _)| t.contains("embedding"))
        .unwrap();
    let first: Vec<String> = full[..6].iter().map(f32::to_string).collect();
    let rows = full.len() / 8;
    let want = format!(
        "step {STEPS}: {name} = [{rows}, 8] [{} ...]",
        first.join(" ")
    );
    assert_eq!(run.logged.last(), Some(&want), "{:?}", run.logged);
}

#[test]
fn a_table_sharded_on_two_replicas_is_logged_whole() {
    logged_tables_are_the_whole_tables(2);
}

#[test]
fn a_table_sharded_on_three_replicas_is_logged_whole() {
    logged_tables_are_the_whole_tables(3);
}

#[test]
fn histograms_of_tables_sharded_on_two_replicas_are_the_whole_tables() {
    histograms_are_the_whole_tables(2);
}

#[test]
fn histograms_of_tables_sharded_on_three_replicas_are_the_whole_tables() {
    histograms_are_the_whole_tables(3);
}

/// The files of directory `dir`, sorted.
fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Three replicas, each with its own checkpoint directory, save every 2
/// steps and keep 2 checkpoints: each directory ends with its files of
/// the two listed checkpoints only, and put together they are the model.
#[test]
fn every_replica_sweeps_its_files_of_the_checkpoints_replica_0_sweeps() {
    let n = 3;
    let run = train_sharded(n, "sweep");
    let (tables, dirs) = (&run.tables, &run.dirs);
    // Saves at steps 2, 4, 6, 8, 10 and at the end, 11: 10 and 11 are kept.
    let state = CheckpointState::read(&dirs.checkpoints[0])
        .unwrap()
        .unwrap();
    assert_eq!(
        state.all_model_checkpoint_paths,
        ["model.ckpt-10", "model.ckpt-11"]
    );
    let data = |step: u64, r: usize| format!("model.ckpt-{step}.data-{r:05}-of-{n:05}");
    assert_eq!(
        files(&dirs.checkpoints[0]),
        [
            "checkpoint".to_string(),
            data(10, 0),
            "model.ckpt-10.index".into(),
            data(11, 0),
            "model.ckpt-11.index".into(),
        ]
    );
    for r in 1..n {
        assert_eq!(
            files(&dirs.checkpoints[r]),
            [data(10, r), data(11, r)],
            "replica {r}'s directory"
        );
    }
    // Copied together, the latest checkpoint holds the tables the replicas
    // trained, bit for bit.
    for r in 1..n {
        let from = dirs.checkpoints[r].join(data(11, r));
        std::fs::copy(&from, dirs.checkpoints[0].join(data(11, r))).unwrap();
    }
    let reader = BundleReader::open(dirs.checkpoints[0].join("model.ckpt-11")).unwrap();
    for (name, full) in tables {
        let mut read = vec![0.0f32; full.len()];
        reader.load_f32_into(name, &mut read).unwrap();
        assert!(
            read.iter()
                .map(|v| v.to_bits())
                .eq(full.iter().map(|v| v.to_bits())),
            "`{name}` in the checkpoint"
        );
    }
}
