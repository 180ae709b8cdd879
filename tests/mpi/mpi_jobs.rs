//! What the MPI tests share (tests/mpi/mpi.rs on one node, tests/mpi/mpi_hosts.rs
//! on simulated hosts): specc and the specs, jobs
//! that must succeed or fail, and the comparison of checkpoints.
//!
//! No test depends on the machine's speed: a test waits for events (a
//! checkpoint at a step, a job's end), and the only time limit is
//! [`HANG_GUARD`], which only a hung job reaches.
//!
//! The models are compared through their checkpoints (TF's format, read with
//! the runtime's reader): every variable, the global step and the batch
//! position.
#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use specc_runtime::checkpoint::{latest_checkpoint, BundleReader};

pub const SPECC: &str = env!("CARGO_BIN_EXE_specc");

/// How long a test waits for an event (a checkpoint, a job's end) before
/// calling the job hung: far beyond what any machine, however slow or
/// loaded, takes for what the tests run.
pub const HANG_GUARD: Duration = Duration::from_secs(600);

/// A spec of `specs/` by name, or a spec's path.
pub fn spec(name: &str) -> String {
    if Path::new(name).is_absolute() {
        return name.to_string();
    }
    format!("{}/specs/{name}", env!("CARGO_MANIFEST_DIR"))
}

pub fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("specc-mpi-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub fn run_ok(mut c: Command) -> Output {
    let out = c.output().expect("starts");
    assert!(
        out.status.success(),
        "{:?} failed: {}\n{}",
        c,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Every tensor of the latest checkpoint in `dir`: float32 values, int64
/// (global step, batch position) as their values.
pub fn checkpoint(dir: &Path) -> Vec<(String, Vec<f64>)> {
    let prefix = latest_checkpoint(dir).unwrap().expect("a checkpoint");
    let r = BundleReader::open(&prefix).unwrap();
    r.list_variables()
        .into_iter()
        .map(|(name, _, shape)| {
            let n: usize = shape.iter().product::<usize>().max(1);
            // A sliced (partitioned) tensor's full entry holds no bytes:
            // its size is its elements'.
            let width = r.entry(&name).unwrap().dtype.size();
            let mut bytes = vec![0u8; n * width];
            r.load_into(&name, &mut bytes).unwrap();
            let values = bytes
                .chunks(width)
                .map(|c| match width {
                    4 => f64::from(f32::from_le_bytes(c.try_into().unwrap())),
                    8 => i64::from_le_bytes(c.try_into().unwrap()) as f64,
                    _ => panic!("`{name}`: {width}-byte elements"),
                })
                .collect();
            (name, values)
        })
        .collect()
}

/// The same model within `1e-6` (L2, relative, per variable) and `4e-6`
/// (largest element, relative to the variable's largest magnitude); the
/// int64 tensors (global step, batch position) equal.
pub fn assert_close(one: &[(String, Vec<f64>)], many: &[(String, Vec<f64>)], what: &str) {
    // A replica of a streamed source keeps no position (`specc/batch_order`).
    let model = |c: &[(String, Vec<f64>)]| -> Vec<(String, Vec<f64>)> {
        c.iter()
            .filter(|(n, _)| !n.starts_with("specc/") || many.iter().any(|(m, _)| m == n))
            .cloned()
            .collect()
    };
    let (one, many) = (&model(one)[..], &model(many)[..]);
    let names = |c: &[(String, Vec<f64>)]| c.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(one), names(many), "{what}: the checkpoints' tensors");
    for ((name, x), (_, y)) in one.iter().zip(many) {
        assert_eq!(x.len(), y.len(), "{what}: `{name}`");
        if name == "global_step" || name.starts_with("specc/") {
            assert_eq!(x, y, "{what}: `{name}`");
            continue;
        }
        let norm = x.iter().map(|v| v * v).sum::<f64>().sqrt();
        let scale = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let diff = x
            .iter()
            .zip(y)
            .map(|(p, q)| (p - q).powi(2))
            .sum::<f64>()
            .sqrt();
        let worst = x
            .iter()
            .zip(y)
            .fold(0.0f64, |m, (p, q)| m.max((p - q).abs()));
        if scale == 0.0 {
            assert_eq!(worst, 0.0, "{what}: `{name}`");
            continue;
        }
        assert!(
            diff / norm < 1e-6 && worst / scale < 4e-6,
            "{what}: `{name}` differs by {:e} (L2) / {:e} (max), relative",
            diff / norm,
            worst / scale
        );
    }
}

/// Runs a job that must fail (not hang); its stderr.
pub fn failing(mut c: Command) -> String {
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let out = wait_for_end(c.spawn().unwrap());
    assert!(!out.status.success(), "{c:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Both checkpoints hold the same bits in every tensor.
pub fn assert_same_bits(a: &Path, b: &Path, what: &str) {
    let (x, y) = (checkpoint(a), checkpoint(b));
    assert_eq!(x.len(), y.len(), "{what}");
    for ((name, p), (_, q)) in x.iter().zip(&y) {
        assert!(
            p.iter()
                .map(|v| v.to_bits())
                .eq(q.iter().map(|v| v.to_bits())),
            "`{name}` differs: {what}"
        );
    }
}

/// The step of the latest checkpoint in `dir` (None before the first).
pub fn checkpoint_step(dir: &Path) -> Option<i64> {
    let p = latest_checkpoint(dir).ok().flatten()?;
    Some(
        p.display()
            .to_string()
            .rsplit('-')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0),
    )
}

/// Waits until the latest checkpoint `job` wrote in `dir` is at `step` or
/// later; its step. A job that ends first fails, with its output.
pub fn wait_for_checkpoint(job: &mut Child, dir: &Path, step: i64) -> i64 {
    let t0 = Instant::now();
    loop {
        if let Some(at) = checkpoint_step(dir).filter(|&at| at >= step) {
            return at;
        }
        if let Some(status) = job.try_wait().unwrap() {
            let mut err = String::new();
            if let Some(e) = job.stderr.as_mut() {
                let _ = e.read_to_string(&mut err);
            }
            panic!("the job ended ({status}) before a checkpoint at step {step}: {err}");
        }
        assert!(
            t0.elapsed() < HANG_GUARD,
            "no checkpoint at step {step} after {HANG_GUARD:?}: the job hangs"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits for `child` to end; its output. A job still running after
/// [`HANG_GUARD`] hangs: it is killed and the test fails.
pub fn wait_for_end(mut child: Child) -> Output {
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > HANG_GUARD {
            let _ = child.kill();
            panic!("the job still runs after {HANG_GUARD:?}: it hangs");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// `mpirun`, allowed to run as root (CI runs as root).
pub fn mpirun_command() -> Command {
    let mut c = Command::new("mpirun");
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none");
    c
}
