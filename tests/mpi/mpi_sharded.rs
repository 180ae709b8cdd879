//! `mpirun -np N specc run` with tables sharded across the ranks
//! (`optim::sharded`, `train::sharded`): the CTR spec's ten hashed
//! `linear_model` tables (2^18 rows each, so sharded without a
//! `partitioner`) under FTRL, against one process on the global batch,
//! through the checkpoints replica 0 writes with the whole tables; and a
//! table shared by several columns (`shared_embeddings`).
#![cfg(feature = "mpi")]

use crate::mpi::{train, train_exchanging};
use crate::mpi_jobs::*;

const CTR: &str = "ctr_ftrl.spec";
const STEPS: u64 = 40;

/// `np` ranks sharding the tables train the model one process trains.
fn sharded_ranks_match_one_process(np: usize, shared: bool) {
    let one = temp_dir(&format!("sharded-one-{np}-{shared}"));
    let many = temp_dir(&format!("sharded-{np}-{shared}"));
    train(CTR, 0, STEPS, &one);
    let out = train_exchanging(CTR, np, STEPS, &many, shared);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("10 tables are sharded across the replicas"),
        "the job says it shards the tables: {stderr}"
    );
    assert_close(
        &checkpoint(&one),
        &checkpoint(&many),
        &format!("{CTR}, {np} ranks sharding its tables"),
    );
}

#[test]
fn two_ranks_shard_the_tables() {
    sharded_ranks_match_one_process(2, true);
}

#[test]
fn three_ranks_shard_the_tables() {
    sharded_ranks_match_one_process(3, true);
}

#[test]
fn four_ranks_shard_the_tables() {
    sharded_ranks_match_one_process(4, true);
}

#[test]
fn two_ranks_shard_the_tables_over_allreduce() {
    sharded_ranks_match_one_process(2, false);
}

/// The checkpoint holds whole tables: a job of 2 ranks continues with 3,
/// then 4 with one process, and ends where one process does.
#[test]
fn a_sharded_job_resumes_with_other_numbers_of_ranks() {
    let dir = temp_dir("sharded-resume");
    train(CTR, 2, STEPS / 4, &dir);
    for (np, steps) in [(3, STEPS / 2), (1, 3 * STEPS / 4), (4, STEPS)] {
        let out = train(CTR, np, steps, &dir);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("resumed from"), "{np} ranks: {stderr}");
    }
    let one = temp_dir("sharded-resume-one");
    train(CTR, 0, STEPS, &one);
    assert_close(
        &checkpoint(&one),
        &checkpoint(&dir),
        "resumed on 2, 3, 1 and 4 ranks",
    );
}

/// A rank killed while the job exchanges rows ends the job with an error,
/// and nobody waits forever in an all-to-all.
#[test]
fn a_dead_rank_stops_a_sharded_job() {
    let dir = temp_dir("sharded-dead-rank");
    let mut c = crate::mpi::mpirun(3);
    c.arg(SPECC)
        .args(["run", &spec(CTR), "--steps", "100000000"])
        .arg("--checkpoint-dir")
        .arg(&dir)
        .args(["--checkpoint-every-steps", "50"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut job = c.spawn().unwrap();
    wait_for_checkpoint(&mut job, &dir, 100);
    let ranks = crate::mpi::ranks_of(job.id());
    assert_eq!(ranks.len(), 3, "mpirun's children: {ranks:?}");
    // SAFETY: signalling a process this test's job started.
    unsafe { libc::kill(ranks[2], libc::SIGKILL) };
    let out = wait_for_end(job);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("exited on signal 9"), "{stderr}");
    // The checkpoints written are whole, and one process resumes from them.
    let at = checkpoint_step(&dir).expect("a checkpoint");
    let resumed = train(CTR, 0, at as u64 + 10, &dir);
    assert!(
        String::from_utf8_lossy(&resumed.stderr).contains("resumed from"),
        "one process resumes the killed job's checkpoint"
    );
}

/// A rank that panics mid-job (a bug; `SPECC_FAULT_PANIC`'s drill makes
/// rank 1 panic at its 720th all-to-all, about step 120 at six a step) ends
/// the job at once with the panic's message: its panic hook aborts the MPI
/// job rather than finalizing MPI while the others wait for it in an
/// exchange. The checkpoints written before are whole.
#[test]
fn a_panicking_rank_ends_a_sharded_job() {
    let dir = temp_dir("sharded-panic");
    let mut c = crate::mpi::mpirun(3);
    c.env("SPECC_FAULT_PANIC", "1:720")
        .arg(SPECC)
        .args(["run", &spec(CTR), "--steps", "100000000"])
        .arg("--checkpoint-dir")
        .arg(&dir)
        .args(["--checkpoint-every-steps", "50"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let out = wait_for_end(c.spawn().unwrap());
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("SPECC_FAULT_PANIC: replica 1 panics at its all-to-all 720"),
        "the panic's message: {stderr}"
    );
    let at = checkpoint_step(&dir).expect("a checkpoint before the panic");
    assert!((50..=120).contains(&at), "the last checkpoint: step {at}");
    let resumed = train(CTR, 0, at as u64 + 10, &dir);
    assert!(
        String::from_utf8_lossy(&resumed.stderr).contains("resumed from"),
        "one process resumes the job's checkpoint"
    );
}

/// A table of 2^21 rows of 16 floats with FTRL's two slots (384 MiB), too
/// large for one process under a 200 MiB data limit (`prlimit --data`:
/// RLIMIT_DATA, the heap and private mappings), trains on 4 ranks under the
/// same limit each, each holding a quarter of the rows, to one process's
/// loss; every rank's peak resident memory is reported, and is a fraction
/// of one process's.
#[test]
fn four_ranks_train_a_table_one_process_cannot_hold() {
    const LIMIT: u64 = 200 << 20;
    let dir = temp_dir("sharded-memory");
    let data = format!("{}/specs/data/ctr_sample.csv", env!("CARGO_MANIFEST_DIR"));
    let text = format!(
        "model big_table\n\
         data csv({data:?})\n\
         label click: float\n\
         features {{\n  \
           user_id = categorical_column_with_hash_bucket(user_id, 2097152)\n  \
           deep = input_layer(embedding_column(user_id, dimension = 16))\n\
         }}\n\
         params {{\n  w: [16, 1] = zeros\n  b: [1] = zeros\n}}\n\
         logit = reshape(deep @ w + b, [B])\n\
         loss = mean(sigmoid_cross_entropy(click, logit))\n\
         optimizer ftrl(learning_rate = 0.1)\n\
         train {{ batch = 256, steps = 12, shuffle = 0 }}\n"
    );
    let spec = dir.join("big_table.spec");
    std::fs::write(&spec, text).unwrap();
    let spec = spec.display().to_string();
    let json = |out: &std::process::Output| -> serde_json::Value {
        let stdout = String::from_utf8_lossy(&out.stdout);
        serde_json::from_str(stdout.lines().last().unwrap_or_default()).expect("a JSON line")
    };
    // One process without a limit: the reference.
    let mut c = std::process::Command::new(SPECC);
    c.args(["run", &spec, "--json"]);
    let one = json(&run_ok(c));
    // One process under the limit: refused, with the sizes.
    let mut c = std::process::Command::new("prlimit");
    c.arg(format!("--data={LIMIT}"))
        .arg(SPECC)
        .args(["run", &spec]);
    let stderr = failing(c);
    assert!(
        stderr.contains("cannot allocate") && stderr.contains("384.2 MiB"),
        "{stderr}"
    );
    // Four ranks under the limit each.
    let mut c = crate::mpi::mpirun(4);
    c.arg("prlimit")
        .arg(format!("--data={LIMIT}"))
        .arg(SPECC)
        .args(["run", &spec, "--json"]);
    let out = run_ok(c);
    let many = json(&out);
    let (a, b) = (
        one["last_loss"].as_f64().unwrap(),
        many["last_loss"].as_f64().unwrap(),
    );
    assert!(((a - b) / a).abs() < 1e-5, "last loss {a} against {b}");
    let peaks: Vec<u64> = many["peak_rss_bytes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let one_peak = one["peak_rss_bytes"][0].as_u64().unwrap();
    eprintln!("peak RSS: one process {one_peak}, ranks {peaks:?}");
    assert_eq!(peaks.len(), 4);
    for p in peaks {
        assert!(
            p < LIMIT && p < one_peak / 2,
            "a rank's peak {p} against {one_peak}"
        );
    }
}

/// `np` ranks train `spec` for `STEPS` steps into `dir` with every table
/// replicated (`SPECC_SHARD_TABLES=0`).
fn train_replicated(spec: &str, np: usize, dir: &std::path::Path) -> std::process::Output {
    let mut c = crate::mpi::mpirun(np);
    c.env("SPECC_SHARD_TABLES", "0")
        .args(["-x", "SPECC_SHARD_TABLES"])
        .arg(SPECC)
        .args(["run", spec, "--steps", &STEPS.to_string()])
        .arg("--checkpoint-dir")
        .arg(dir);
    run_ok(c)
}

/// Sharded or replicated (`SPECC_SHARD_TABLES=0`: every rank holds every
/// table, the ids and rows gathered to all), the job trains the same bits:
/// each row's gradient is summed in the same order, the dense gradients by
/// the same exchange.
#[test]
fn sharding_changes_where_rows_live_not_the_bits() {
    for np in [2, 3] {
        let sharded = temp_dir(&format!("sharded-bits-{np}"));
        let replicated = temp_dir(&format!("replicated-bits-{np}"));
        train(CTR, np, STEPS, &sharded);
        let out = train_replicated(&spec(CTR), np, &replicated);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("sharded"),
            "SPECC_SHARD_TABLES=0: {stderr}"
        );
        assert_same_bits(
            &sharded,
            &replicated,
            &format!("{np} ranks, sharded against replicated"),
        );
    }
}

/// A sharded job evaluates (periodically, then the training rows and the
/// held-out rows) with every rank fetching the rows of each batch: the
/// numbers one process reports.
#[test]
fn a_sharded_job_evaluates_as_one_process() {
    let spec = spec(CTR);
    let args = [
        "run",
        &spec,
        "--steps",
        "30",
        "--set",
        "evaluate.every_steps=10",
        "--json",
    ];
    let run = |np: usize| {
        let (json, stderr) = run_json(np, &args);
        assert_eq!(stderr.matches("eval @ 20").count(), 1, "{stderr}");
        json
    };
    assert_same_evaluations(&run(0), &run(3));
}

/// `specc ARGS` (with `--json`) as one process (`np` 0) or on `np` ranks:
/// its last JSON line, and its stderr.
fn run_json(np: usize, args: &[&str]) -> (serde_json::Value, String) {
    let out = if np == 0 {
        let mut c = std::process::Command::new(SPECC);
        c.args(args);
        run_ok(c)
    } else {
        let mut c = crate::mpi::mpirun(np);
        c.arg(SPECC).args(args);
        run_ok(c)
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json =
        serde_json::from_str(stdout.lines().last().unwrap_or_default()).expect("a JSON line");
    (json, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Two runs' final evaluations (the training rows and the held-out rows)
/// agree: loss and AUC to 1e-5 relative, the same rows.
fn assert_same_evaluations(one: &serde_json::Value, many: &serde_json::Value) {
    for set in ["train", "eval"] {
        for key in ["loss", "auc"] {
            let (a, b) = (
                one[set][key].as_f64().unwrap(),
                many[set][key].as_f64().unwrap(),
            );
            assert!(((a - b) / a).abs() < 1e-5, "{set} {key}: {a} against {b}");
        }
        assert_eq!(one[set]["rows"], many[set]["rows"], "{set}");
    }
}

/// A 2-rank job writing histograms every 13 steps and keeping 2 of its
/// checkpoints (every 10 steps): each sharded table's histogram at the last
/// step is the whole table's, the one in the final checkpoint, as one
/// process writes it; and only the two listed checkpoints' files are left.
#[test]
fn a_sharded_job_writes_whole_tables_histograms_and_sweeps_every_ranks_files() {
    use specc_runtime::summary::{event_files, read_events, Histogram, ValueKind, What};
    let (ckpt, summaries) = (
        temp_dir("sharded-histograms-ckpt"),
        temp_dir("sharded-histograms-events"),
    );
    let mut c = crate::mpi::mpirun(2);
    c.arg(SPECC)
        .args(["run", &spec(CTR), "--steps", &STEPS.to_string()])
        .args(["--checkpoint-every-steps", "10", "--keep", "2"])
        .arg("--checkpoint-dir")
        .arg(&ckpt)
        .arg("--summary-dir")
        .arg(&summaries)
        .args(["--set", "summaries.every_steps=13"])
        .args(["--set", "summaries.histograms=true"]);
    run_ok(c);
    let mut names: Vec<String> = std::fs::read_dir(&ckpt)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("model.ckpt-"))
        .collect();
    names.sort();
    let files = |step: u64| {
        [0, 1]
            .map(|r| format!("model.ckpt-{step}.data-0000{r}-of-00002"))
            .into_iter()
            .chain([format!("model.ckpt-{step}.index")])
    };
    let kept: Vec<String> = files(30).chain(files(STEPS)).collect();
    assert_eq!(names, kept, "the files of the kept checkpoints only");
    let events = event_files(&summaries).unwrap();
    assert_eq!(events.len(), 1, "{events:?}");
    let mut last = Vec::new();
    for e in read_events(&events[0]).unwrap() {
        if let (What::Summary(s), true) = (e.what, e.step == STEPS as i64) {
            last.extend(s.values.into_iter().filter_map(|v| match v.kind {
                ValueKind::Histo(h) => Some((v.tag, h)),
                _ => None,
            }));
        }
    }
    let tables: Vec<(String, Vec<f64>)> = checkpoint(&ckpt)
        .into_iter()
        .filter(|(n, _)| n.starts_with("linear_model/") && n.ends_with("/weights"))
        .collect();
    // The ten hashed tables are sharded (2^18 rows each); the others are
    // replicated, and their histograms are those of the same values too.
    let sharded = tables.iter().filter(|(_, v)| v.len() == 1 << 18).count();
    assert_eq!(sharded, 10, "the CTR spec's sharded tables");
    for (name, values) in &tables {
        let written: Vec<_> = last.iter().filter(|(t, _)| t == name).collect();
        assert_eq!(written.len(), 1, "`{name}`: one histogram at step {STEPS}");
        let got = &written[0].1;
        let mut whole = Histogram::new();
        for &v in values {
            whole.add_f32(v as f32);
        }
        let want = whole.to_proto();
        assert_eq!(
            got.num as usize,
            values.len(),
            "`{name}`: every real row once"
        );
        assert_eq!(
            (&got.bucket_limit, &got.bucket, got.min, got.max),
            (&want.bucket_limit, &want.bucket, want.min, want.max),
            "`{name}`"
        );
        for (a, b) in [(got.sum, want.sum), (got.sum_squares, want.sum_squares)] {
            assert!(
                (a - b).abs() <= 1e-6 * a.abs().max(b.abs()),
                "`{name}`: {a} against {b}"
            );
        }
    }
}

/// One table shared by three hashed columns (`shared_embeddings`, 2 MiB,
/// sharded without a partitioner) under Adagrad, and two of the columns'
/// `linear_model` tables under FTRL: 2 ranks fetch each batch's distinct
/// ids of the three columns once, train the model one process does and
/// evaluate it as one process does.
#[test]
fn two_ranks_shard_a_table_shared_by_three_columns() {
    let dir = temp_dir("sharded-shared-spec");
    let data = format!("{}/specs/data/ctr_sample.csv", env!("CARGO_MANIFEST_DIR"));
    let text = format!(
        "model ctr_shared\n\
         data csv({data:?})\n\
         label click: float\n\
         features {{\n  \
           user_id = categorical_column_with_hash_bucket(user_id, 65536)\n  \
           ad_id = categorical_column_with_hash_bucket(ad_id, 65536)\n  \
           site = categorical_column_with_hash_bucket(site, 65536)\n  \
           deep = input_layer(shared_embeddings([user_id, ad_id, site], dimension = 8))\n  \
           wide = linear_model(site, user_id)\n\
         }}\n\
         params {{\n  w: [24, 1] = glorot_uniform(seed = 4)\n  b: [1] = zeros\n}}\n\
         logit = reshape(deep @ w + b + wide, [B])\n\
         loss = mean(sigmoid_cross_entropy(click, logit))\n\
         optimizer ftrl(learning_rate = 0.1, var_list = \"linear_model/*\")\n\
         optimizer adagrad(learning_rate = 0.05, var_list = [\"w\", \"b\", \"*shared_embedding/*\"])\n\
         train {{ batch = 64, epochs = 1, shuffle = 0, eval_fraction = 0.2, eval_split = \"last\" }}\n\
         metrics {{\n  auc(click, sigmoid(logit))\n}}\n"
    );
    let spec = dir.join("ctr_shared.spec");
    std::fs::write(&spec, text).unwrap();
    let spec = spec.display().to_string();
    let one = temp_dir("sharded-shared-one");
    let many = temp_dir("sharded-shared-2");
    train(&spec, 0, STEPS, &one);
    let out = train(&spec, 2, STEPS, &many);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("3 tables are sharded across the replicas"),
        "the job says it shards the tables: {stderr}"
    );
    assert_close(
        &checkpoint(&one),
        &checkpoint(&many),
        "a shared table on 2 ranks",
    );
    // One process sums the lookups' rows as one IndexedSlices too, example
    // by example: replicated, the job trains the same bits.
    let replicated = temp_dir("sharded-shared-2-replicated");
    train_replicated(&spec, 2, &replicated);
    assert_same_bits(
        &many,
        &replicated,
        "a shared table, sharded against replicated",
    );
    // The ranks evaluate together, fetching the rows of every batch.
    let args = ["run", &spec, "--steps", "30", "--json"];
    assert_same_evaluations(&run_json(0, &args).0, &run_json(2, &args).0);
}
