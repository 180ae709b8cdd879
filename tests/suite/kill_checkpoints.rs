//! Crash safety of checkpoints, for real: `specc run` saving a checkpoint
//! after every step is killed with SIGKILL at pseudo-random moments, 60
//! times over the same directory; after each kill the state file's latest
//! checkpoint must open and every tensor must load with its CRC intact, and
//! the next run resumes from it.
//!
//! Nothing here depends on the machine's speed: three kills in four wait for
//! the run's own first save (the state file naming a newer checkpoint, an
//! event, however long start-up takes) and then land a pseudo-random 1 to
//! 60 ms later, somewhere in the following steps and saves; the fourth lands
//! anywhere, start-up included. So every kill from the first on finds a
//! checkpoint, and each of the waiting ones a newer one than its run
//! started from. The only time limit is a hang guard.

#![cfg(unix)]

use crate::cli;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use specc_runtime::checkpoint::{latest_checkpoint, BundleReader};

const KILLS: usize = 60;
/// How long a run may take to save its first checkpoint before the test
/// calls it hung: far beyond any machine's start-up.
const HANG_GUARD: Duration = Duration::from_secs(600);

/// The latest checkpoint the state file of `ckpt` names (None before the
/// first save); the state file is written atomically, so it always parses.
fn latest(ckpt: &Path, kill: usize) -> Option<PathBuf> {
    latest_checkpoint(ckpt).unwrap_or_else(|e| panic!("kill {kill}: the state file is broken: {e}"))
}

/// Waits until the state file names another checkpoint than `before`: the
/// run has saved one. A run that ends first, or saves nothing within the
/// hang guard, fails.
fn wait_for_a_save(child: &mut Child, ckpt: &Path, before: &Option<PathBuf>, kill: usize) {
    let start = Instant::now();
    while latest(ckpt, kill) == *before {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("kill {kill}: the run ended ({status}) before saving a checkpoint");
        }
        assert!(
            start.elapsed() < HANG_GUARD,
            "kill {kill}: no checkpoint saved in {HANG_GUARD:?}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The global step of a complete checkpoint (every tensor loads, CRCs
/// checked).
fn global_step(prefix: &Path, kill: usize) -> i64 {
    let reader = BundleReader::open(prefix)
        .unwrap_or_else(|e| panic!("kill {kill}: the latest checkpoint does not open: {e}"));
    let mut tensors = reader
        .load_all()
        .unwrap_or_else(|e| panic!("kill {kill}: a tensor does not load: {e}"));
    let (_, t) = tensors
        .iter_mut()
        .find(|(n, _)| n == "global_step")
        .expect("global_step");
    i64::from_le_bytes(t.bytes().try_into().expect("an int64 scalar"))
}

#[test]
fn a_run_killed_at_any_moment_leaves_its_latest_checkpoint_complete() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kill_checkpoints");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("data.csv"), cli::DATA).unwrap();
    std::fs::write(dir.join("spec.spec"), cli::BASE).unwrap();
    let ckpt = dir.join("ck");
    // A fixed pseudo-random sequence of delays (splitmix64), 1 to 60 ms.
    let mut state = 0x5eed_u64;
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut steps_seen = Vec::new();
    for kill in 0..KILLS {
        let before = latest(&ckpt, kill);
        let step_before = before.as_ref().map(|p| global_step(p, kill));
        let mut child = Command::new(env!("CARGO_BIN_EXE_specc"))
            .args(["run", "spec.spec", "--steps", "1000000000"])
            .args([
                "--checkpoint-dir",
                "ck",
                "--checkpoint-every-steps",
                "1",
                "--keep",
                "3",
            ])
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Its stderr, read to the end so that the run never waits on a full
        // pipe.
        let mut stderr = child.stderr.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        let waits = kill % 4 != 3;
        if waits {
            wait_for_a_save(&mut child, &ckpt, &before, kill);
        }
        std::thread::sleep(Duration::from_millis(1 + next() % 60));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let err = reader.join().unwrap();
        assert!(!err.contains("panicked"), "kill {kill}: {err}");
        let Some(prefix) = latest(&ckpt, kill) else {
            assert!(!waits, "kill {kill}: no checkpoint after a save");
            continue; // killed before the first save
        };
        let step = global_step(&prefix, kill);
        if waits {
            assert!(
                step_before.is_none_or(|b| step > b),
                "kill {kill}: the run saved, yet the latest checkpoint is at step {step}, \
                 the one it resumed from at {step_before:?}"
            );
        }
        steps_seen.push(step);
    }
    // A last run to the end sweeps the temporaries killed saves left.
    let (code, _, err) = cli::specc(
        &dir,
        &["run", "spec.spec", "--steps", "1", "--checkpoint-dir", "ck"],
    );
    assert!(code == 0 && err.contains("nothing to train"), "{err}");
    let left: Vec<_> = std::fs::read_dir(&ckpt)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // The first kill waited for a save: every kill found a checkpoint, and
    // the global step never went back.
    assert_eq!(steps_seen.len(), KILLS, "{steps_seen:?}");
    assert!(
        steps_seen.windows(2).all(|w| w[0] <= w[1]),
        "{steps_seen:?}"
    );
}
