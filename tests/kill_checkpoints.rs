//! Crash safety of checkpoints, for real: `specc run` saving a checkpoint
//! after every step is killed with SIGKILL at pseudo-random moments, 60
//! times over the same directory; after each kill the state file's latest
//! checkpoint must open and every tensor must load with its CRC intact, and
//! the next run resumes from it.

#![cfg(unix)]

mod cli;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use specc_runtime::checkpoint::{latest_checkpoint, BundleReader};

const KILLS: usize = 60;

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
        // Three kills in four land while it trains and saves: after its first
        // line ("compiled ..."), so that a slow machine's start-up does not
        // take the moments; the fourth anywhere, start-up included.
        let mut first_line = String::new();
        if kill % 4 != 3 {
            let stderr = child.stderr.as_mut().unwrap();
            BufReader::new(stderr).read_line(&mut first_line).unwrap();
        }
        std::thread::sleep(Duration::from_millis(1 + next() % 60));
        child.kill().unwrap(); // SIGKILL
        let out = child.wait_with_output().unwrap();
        let err = first_line + &String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "kill {kill}: {err}");
        let Some(prefix) = latest_checkpoint(&ckpt)
            .unwrap_or_else(|e| panic!("kill {kill}: the state file is broken: {e}"))
        else {
            continue; // killed before the first save
        };
        let reader = BundleReader::open(&prefix)
            .unwrap_or_else(|e| panic!("kill {kill}: the latest checkpoint does not open: {e}"));
        let tensors = reader
            .load_all()
            .unwrap_or_else(|e| panic!("kill {kill}: a tensor does not load: {e}"));
        let step = tensors
            .iter()
            .find(|(n, _)| n == "global_step")
            .map(|(_, t)| format!("{t:?}"))
            .expect("global_step");
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
    // The runs got somewhere: most kills found a checkpoint, and resumed
    // runs moved the global step on.
    assert!(steps_seen.len() >= KILLS / 2, "{steps_seen:?}");
    steps_seen.dedup();
    assert!(steps_seen.len() >= KILLS / 4, "{steps_seen:?}");
}
