//! The `SPECC_*` environment settings: one table, one reader.
//!
//! Owns: the table ([`SETTINGS`], and [`TEST_SETTINGS`] for the variables
//! only tests, interop checks and benchmarks read), one parse function per
//! setting, and [`check`], which the CLI calls before anything else so that
//! a value it cannot use is refused (exit 1) rather than replaced. The
//! compiler and the runtime read their settings here and nowhere else.
//!
//! | name | values | default | what it does |
//! |---|---|---|---|
//! | `SPECC_THREADS` | a positive integer (checked) | the cores, at most 2 | the threads a training step uses (at most 2) |
//! | `SPECC_GEMM_ISA` | `avx512`, `avx2`, `scalar` (checked; the CPU must run it) | the best the CPU runs | the matrix-product kernel: same bits, another speed |
//! | `SPECC_GEMM_EPILOGUE` | `auto`, `never` or `off` (checked) | `auto` | `never`: a dense layer's bias add and relu stay loops instead of fusing into its GEMM |
//! | `SPECC_RUNTIME_ADAM` | `auto`, `never` or `off` (checked) | `auto` | `never`: Adam's update stays Cranelift's loops instead of calling the runtime's `specc_adam` |
//! | `SPECC_WINOGRAD` | `auto`, `always`, `never` or `off` (others: `auto`) | `auto` | which 3×3 convolutions Winograd computes: those the cost model favours, every one that fits, none |
//! | `SPECC_WINOGRAD_TILE` | `auto`, `2`, `4` (checked) | `auto` | forces the Winograd tile F(2×2) or F(4×4) |
//! | `SPECC_WINOGRAD_BLOCK` | a positive integer (others: the default) | the cost model's | images per block of the fused Winograd transforms (for measurements) |
//! | `SPECC_SHARED_EXCHANGE` | `0` or anything else | on | `0`: replicas on one node exchange gradients by allreduce instead of shared memory |
//! | `SPECC_SHARD_TABLES` | `0` or anything else | on | `0`: replicas shard only the tables a spec partitions; every other table is replicated |
//! | `SPECC_FAULT_PANIC` | `<rank>:<n>` (checked) | off | a failure drill: replica `rank` of an `mpirun` job panics at its `n`-th all-to-all exchange (the job must end with the panic's message, not hang) |
//!
//! Test settings (read by tests, interop checks and benchmarks, never by
//! `specc`):
//!
//! | name | read by | what it does |
//! |---|---|---|
//! | `SPECC_GOLDEN_DIR` | `tests/common`, `image/tests`, `.ci/run` | another draw of TF's golden numbers instead of `tests/golden` |
//! | `SPECC_GOLDEN_ERRORS` | `tests/common` | prints the worst errors of each golden comparison |
//! | `SPECC_FILETEST` | `tests/suite/filetests.rs` | runs only the filetests whose name contains it |
//! | `SPECC_DECODE_CSV` | `interop/test_decode_csv.py` | the `decode_csv` example binary to check |
//! | `SPECC_PARSE_EXAMPLES` | `interop/test_parse_example.py`, `interop/test_sequence_example.py` | the `parse_examples` example binary to check |
//! | `SPECC_WRITE_CHECKPOINT` | `interop/` | the `write_checkpoint` example binary to check |
//! | `SPECC_WRITE_EXAMPLES` | `interop/test_tfrecord.py` | the `write_examples` example binary to check |
//! | `SPECC_WRITE_EVENTS` | `interop/test_summaries.py` | the `write_events` example binary to check |
//! | `SPECC_IMAGE_CODEC` | `interop/test_image_codecs.py` | the image codec example binary to check |
//! | `SPECC_PEER_YNN_AVX2` | `benches/avx2_peers` | `1`: caps the peers' XNNPACK at AVX2 |
//! | `SPECC_PEER_YNN_LOG` | `benches/avx2_peers` | the file the AVX2 cap logs to |
//! | `SPECC_INTEROP_VENV` | `tools/test` | where the interop suite's virtualenv is (default `target/interop-venv`) |
//! | `SPECC_INTEROP_SEED` | `interop/test_blocks.py`, `interop/test_wide_deep.py`, `interop/test_matmul.py`, `interop/test_shape_ops.py`, `interop/test_layer_library.py`, `interop/test_einsum.py`, `interop/test_dynamic_rnn.py`, `interop/test_text_rnn.py`, `interop/test_text_split.py`, `interop/test_tflite_rnn.py`, `interop/test_image_summaries.py`, `interop/test_fake_quant.py`, `interop/test_ema_serving.py`, `interop/test_csv_options.py`, `interop/test_tflite_raw_inputs.py`, `interop/test_sequence_example.py`, `interop/test_tflite_qat.py`, `interop/test_warm_start_vocab.py`, `interop/test_spec_optimizers.py` | the seed the interop tests draw shapes, sizes and values from (default 2026; any seed passes) |
//! | `SPECC_MPI_HOSTS_NET` | `tools/mpi-hosts` | the first two octets of the simulated hosts' subnets (default `10.77`) |
//!
//! Rules common to all: a setting that is unset or empty (after trimming)
//! takes its default; words are matched trimmed and in any case. A
//! "checked" setting's other values are errors with the texts below, which
//! [`check`] reports (the library then uses the default). Every value is
//! read once per process and kept (no caller changes the environment of a
//! running process).
//!
//! Invariants: this table, [`SETTINGS`] and the functions agree (a unit
//! test compares the tables with the constants, and checks that no other
//! source file reads a `SPECC_*` variable that is not listed); so does the
//! user documentation's `## Environment` table (`docs/cli.md`), checked by
//! another.

use std::sync::OnceLock;

use crate::sgemm::Isa;

/// One row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting {
    pub name: &'static str,
    /// The values it takes.
    pub values: &'static str,
    pub default: &'static str,
    /// What it does.
    pub what: &'static str,
}

pub const THREADS: &str = "SPECC_THREADS";
pub const GEMM_ISA: &str = "SPECC_GEMM_ISA";
pub const GEMM_EPILOGUE: &str = "SPECC_GEMM_EPILOGUE";
pub const RUNTIME_ADAM: &str = "SPECC_RUNTIME_ADAM";
pub const WINOGRAD: &str = "SPECC_WINOGRAD";
pub const WINOGRAD_TILE: &str = "SPECC_WINOGRAD_TILE";
pub const WINOGRAD_BLOCK: &str = "SPECC_WINOGRAD_BLOCK";
pub const SHARED_EXCHANGE: &str = "SPECC_SHARED_EXCHANGE";
pub const SHARD_TABLES: &str = "SPECC_SHARD_TABLES";
pub const FAULT_PANIC: &str = "SPECC_FAULT_PANIC";

/// The settings `specc` reads (the first table of the module doc).
pub const SETTINGS: &[Setting] = &[
    Setting {
        name: THREADS,
        values: "a positive integer (checked)",
        default: "the cores, at most 2",
        what: "the threads a training step uses (at most 2)",
    },
    Setting {
        name: GEMM_ISA,
        values: "`avx512`, `avx2`, `scalar` (checked; the CPU must run it)",
        default: "the best the CPU runs",
        what: "the matrix-product kernel: same bits, another speed",
    },
    Setting {
        name: GEMM_EPILOGUE,
        values: "`auto`, `never` or `off` (checked)",
        default: "`auto`",
        what: "`never`: a dense layer's bias add and relu stay loops instead of fusing into its GEMM",
    },
    Setting {
        name: RUNTIME_ADAM,
        values: "`auto`, `never` or `off` (checked)",
        default: "`auto`",
        what: "`never`: Adam's update stays Cranelift's loops instead of calling the runtime's `specc_adam`",
    },
    Setting {
        name: WINOGRAD,
        values: "`auto`, `always`, `never` or `off` (others: `auto`)",
        default: "`auto`",
        what: "which 3×3 convolutions Winograd computes: those the cost model favours, every one that fits, none",
    },
    Setting {
        name: WINOGRAD_TILE,
        values: "`auto`, `2`, `4` (checked)",
        default: "`auto`",
        what: "forces the Winograd tile F(2×2) or F(4×4)",
    },
    Setting {
        name: WINOGRAD_BLOCK,
        values: "a positive integer (others: the default)",
        default: "the cost model's",
        what: "images per block of the fused Winograd transforms (for measurements)",
    },
    Setting {
        name: SHARED_EXCHANGE,
        values: "`0` or anything else",
        default: "on",
        what: "`0`: replicas on one node exchange gradients by allreduce instead of shared memory",
    },
    Setting {
        name: SHARD_TABLES,
        values: "`0` or anything else",
        default: "on",
        what: "`0`: replicas shard only the tables a spec partitions; every other table is replicated",
    },
    Setting {
        name: FAULT_PANIC,
        values: "`<rank>:<n>` (checked)",
        default: "off",
        what: "a failure drill: replica `rank` of an `mpirun` job panics at its `n`-th all-to-all exchange (the job must end with the panic's message, not hang)",
    },
];

/// The variables only tests, interop checks and benchmarks read (the
/// second table of the module doc: name, read by, what it does).
pub const TEST_SETTINGS: &[(&str, &str, &str)] = &[
    (
        "SPECC_GOLDEN_DIR",
        "`tests/common`, `image/tests`, `.ci/run`",
        "another draw of TF's golden numbers instead of `tests/golden`",
    ),
    (
        "SPECC_GOLDEN_ERRORS",
        "`tests/common`",
        "prints the worst errors of each golden comparison",
    ),
    (
        "SPECC_FILETEST",
        "`tests/suite/filetests.rs`",
        "runs only the filetests whose name contains it",
    ),
    (
        "SPECC_DECODE_CSV",
        "`interop/test_decode_csv.py`",
        "the `decode_csv` example binary to check",
    ),
    (
        "SPECC_PARSE_EXAMPLES",
        "`interop/test_parse_example.py`, `interop/test_sequence_example.py`",
        "the `parse_examples` example binary to check",
    ),
    (
        "SPECC_WRITE_CHECKPOINT",
        "`interop/`",
        "the `write_checkpoint` example binary to check",
    ),
    (
        "SPECC_WRITE_EXAMPLES",
        "`interop/test_tfrecord.py`",
        "the `write_examples` example binary to check",
    ),
    (
        "SPECC_WRITE_EVENTS",
        "`interop/test_summaries.py`",
        "the `write_events` example binary to check",
    ),
    (
        "SPECC_IMAGE_CODEC",
        "`interop/test_image_codecs.py`",
        "the image codec example binary to check",
    ),
    (
        "SPECC_PEER_YNN_AVX2",
        "`benches/avx2_peers`",
        "`1`: caps the peers' XNNPACK at AVX2",
    ),
    (
        "SPECC_PEER_YNN_LOG",
        "`benches/avx2_peers`",
        "the file the AVX2 cap logs to",
    ),
    (
        "SPECC_INTEROP_VENV",
        "`tools/test`",
        "where the interop suite's virtualenv is (default `target/interop-venv`)",
    ),
    (
        "SPECC_INTEROP_SEED",
        "`interop/test_blocks.py`, `interop/test_wide_deep.py`, `interop/test_matmul.py`, `interop/test_shape_ops.py`, `interop/test_layer_library.py`, `interop/test_einsum.py`, `interop/test_dynamic_rnn.py`, `interop/test_text_rnn.py`, `interop/test_text_split.py`, `interop/test_tflite_rnn.py`, `interop/test_image_summaries.py`, `interop/test_fake_quant.py`, `interop/test_ema_serving.py`, `interop/test_csv_options.py`, `interop/test_tflite_raw_inputs.py`, `interop/test_sequence_example.py`, `interop/test_tflite_qat.py`, `interop/test_warm_start_vocab.py`, `interop/test_spec_optimizers.py`",
        "the seed the interop tests draw shapes, sizes and values from (default 2026; any seed passes)",
    ),
    (
        "SPECC_MPI_HOSTS_NET",
        "`tools/mpi-hosts`",
        "the first two octets of the simulated hosts' subnets (default `10.77`)",
    ),
];

/// A setting's value as the process started with it: `None` when unset or
/// empty after trimming (the default), else the text (not UTF-8: lossily).
pub fn value(name: &str) -> Option<String> {
    let v = std::env::var_os(name)?;
    let s = v.to_string_lossy();
    (!s.trim().is_empty()).then(|| s.into_owned())
}

/// A word setting's value, trimmed and in lower case (`None`: default).
fn word(name: &str) -> Option<String> {
    value(name).map(|s| s.trim().to_ascii_lowercase())
}

/// `SPECC_THREADS`: the count when it is a positive integer.
pub fn threads() -> Result<Option<usize>, String> {
    static V: OnceLock<Result<Option<usize>, String>> = OnceLock::new();
    V.get_or_init(|| {
        let Some(s) = value(THREADS) else {
            return Ok(None);
        };
        match s.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(Some(n)),
            _ => Err(format!(
                "SPECC_THREADS must be a positive integer (steps use at most 2 threads), got {s:?}"
            )),
        }
    })
    .clone()
}

/// `SPECC_GEMM_ISA`: the kernel when it names one this CPU runs.
pub fn gemm_isa() -> Result<Option<Isa>, String> {
    static V: OnceLock<Result<Option<Isa>, String>> = OnceLock::new();
    V.get_or_init(|| {
        let Some(s) = value(GEMM_ISA) else {
            return Ok(None);
        };
        let t = s.trim();
        let isa = [Isa::Avx512, Isa::Avx2, Isa::Scalar]
            .into_iter()
            .find(|i| i.name().eq_ignore_ascii_case(t))
            .ok_or_else(|| format!("SPECC_GEMM_ISA must be avx512, avx2 or scalar, got {s:?}"))?;
        if isa.is_available() {
            Ok(Some(isa))
        } else {
            Err(format!(
                "SPECC_GEMM_ISA={t}: this CPU does not support the {t} kernel"
            ))
        }
    })
    .clone()
}

/// An `auto` / `never` (`off`) setting: whether it is on.
fn auto_or_never(name: &'static str) -> Result<bool, String> {
    match word(name).as_deref() {
        None | Some("auto") => Ok(true),
        Some("never" | "off") => Ok(false),
        Some(_) => Err(format!(
            "{name} must be auto or never, got {:?}",
            value(name).unwrap_or_default()
        )),
    }
}

/// `SPECC_GEMM_EPILOGUE`: whether a GEMM's bias add and relu may fuse.
pub fn gemm_epilogue() -> Result<bool, String> {
    static V: OnceLock<Result<bool, String>> = OnceLock::new();
    V.get_or_init(|| auto_or_never(GEMM_EPILOGUE)).clone()
}

/// `SPECC_RUNTIME_ADAM`: whether generated code may call `specc_adam`.
pub fn runtime_adam() -> Result<bool, String> {
    static V: OnceLock<Result<bool, String>> = OnceLock::new();
    V.get_or_init(|| auto_or_never(RUNTIME_ADAM)).clone()
}

/// `SPECC_WINOGRAD`'s mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WinogradMode {
    /// The convolutions the cost model favours.
    Auto,
    /// Every convolution that fits.
    Always,
    /// None.
    Never,
}

/// `SPECC_WINOGRAD`: `never`/`off`, `always`; anything else `auto`.
pub fn winograd() -> WinogradMode {
    static V: OnceLock<WinogradMode> = OnceLock::new();
    *V.get_or_init(|| match word(WINOGRAD).as_deref() {
        Some("never" | "off") => WinogradMode::Never,
        Some("always") => WinogradMode::Always,
        _ => WinogradMode::Auto,
    })
}

/// `SPECC_WINOGRAD_TILE`: the tile size forced (2 or 4), `None` for `auto`.
pub fn winograd_tile() -> Result<Option<u32>, String> {
    static V: OnceLock<Result<Option<u32>, String>> = OnceLock::new();
    V.get_or_init(|| match word(WINOGRAD_TILE).as_deref() {
        None | Some("auto") => Ok(None),
        Some("2") => Ok(Some(2)),
        Some("4") => Ok(Some(4)),
        Some(_) => Err(format!(
            "SPECC_WINOGRAD_TILE must be auto, 2 or 4, got {:?}",
            value(WINOGRAD_TILE).unwrap_or_default()
        )),
    })
    .clone()
}

/// `SPECC_WINOGRAD_BLOCK`: the images per block, when a positive integer.
pub fn winograd_block() -> Option<u32> {
    static V: OnceLock<Option<u32>> = OnceLock::new();
    *V.get_or_init(|| {
        value(WINOGRAD_BLOCK)
            .and_then(|s| s.trim().parse::<u32>().ok())
            .filter(|&b| b > 0)
    })
}

/// `SPECC_SHARED_EXCHANGE`: false only when it is `0`.
pub fn shared_exchange() -> bool {
    static V: OnceLock<bool> = OnceLock::new();
    *V.get_or_init(|| value(SHARED_EXCHANGE).is_none_or(|v| v.trim() != "0"))
}

/// Whether replicas shard large lookup tables the spec does not partition
/// (`SPECC_SHARD_TABLES`, on unless `0`).
pub fn shard_tables() -> bool {
    static V: OnceLock<bool> = OnceLock::new();
    *V.get_or_init(|| value(SHARD_TABLES).is_none_or(|v| v.trim() != "0"))
}

/// `SPECC_FAULT_PANIC`: `(rank, n)` when replica `rank` is to panic at its
/// `n`-th all-to-all exchange (a failure drill; `n` counts from 1).
pub fn fault_panic() -> Result<Option<(usize, u64)>, String> {
    static V: OnceLock<Result<Option<(usize, u64)>, String>> = OnceLock::new();
    V.get_or_init(|| {
        let Some(v) = value(FAULT_PANIC).filter(|v| !v.trim().is_empty()) else {
            return Ok(None);
        };
        v.trim()
            .split_once(':')
            .and_then(|(r, n)| Some((r.trim().parse().ok()?, n.trim().parse().ok()?)))
            .filter(|&(_, n)| n > 0)
            .map(Some)
            .ok_or_else(|| format!("SPECC_FAULT_PANIC must be <rank>:<n> (n from 1), got {v:?}"))
    })
    .clone()
}

/// The checked settings: the first error (threads, kernel, Adam, epilogue,
/// tile), which the CLI reports before doing anything (exit 1).
pub fn check() -> Result<(), String> {
    threads()?;
    gemm_isa()?;
    runtime_adam()?;
    gemm_epilogue()?;
    winograd_tile()?;
    fault_panic()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;

    /// The rows of the module doc's table that starts with `header`: the
    /// first cell of each (the name, without its backquotes).
    fn doc_names(header: &str) -> Vec<String> {
        let src = include_str!("settings.rs");
        let mut rows = src
            .lines()
            .skip_while(|l| l.trim() != header)
            .skip(2)
            .take_while(|l| l.starts_with("//! |"));
        let mut names = Vec::new();
        for row in rows.by_ref() {
            let cell = row.trim_start_matches("//! |").split('|').next().unwrap();
            names.push(cell.trim().trim_matches('`').to_string());
        }
        names
    }

    #[test]
    fn the_module_doc_lists_the_settings_of_the_table() {
        let names: Vec<&str> = SETTINGS.iter().map(|s| s.name).collect();
        assert_eq!(
            doc_names("//! | name | values | default | what it does |"),
            names
        );
        for s in SETTINGS {
            let row = format!(
                "//! | `{}` | {} | {} | {} |",
                s.name, s.values, s.default, s.what
            );
            assert!(
                include_str!("settings.rs").lines().any(|l| l == row),
                "the doc's row of {} differs from SETTINGS: {row}",
                s.name
            );
        }
        let tests: Vec<&str> = TEST_SETTINGS.iter().map(|t| t.0).collect();
        assert_eq!(doc_names("//! | name | read by | what it does |"), tests);
    }

    /// The `SPECC_*` rows of the user documentation's `## Environment`
    /// table (`docs/*.md` or `README.md`), by file; none before the
    /// documentation has such a section.
    fn documented() -> Vec<(PathBuf, Vec<String>)> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files = vec![root.join("README.md")];
        if let Ok(entries) = std::fs::read_dir(root.join("docs")) {
            files.extend(entries.flatten().map(|e| e.path()));
        }
        let mut out = Vec::new();
        for f in files {
            let Ok(text) = std::fs::read_to_string(&f) else {
                continue;
            };
            let Some(at) = text.find("\n## Environment\n") else {
                continue;
            };
            let names = text[at + 1..]
                .lines()
                .skip(1)
                .take_while(|l| !l.starts_with("## "))
                .filter_map(|l| l.strip_prefix("| `SPECC_"))
                .map(|rest| format!("SPECC_{}", rest.split('`').next().unwrap_or_default()))
                .collect();
            out.push((f, names));
        }
        out
    }

    /// The user documentation's table of settings lists those of the
    /// table here, no more, no fewer.
    #[test]
    fn the_documentation_lists_the_same_settings() {
        let mut want: Vec<String> = SETTINGS.iter().map(|s| s.name.to_string()).collect();
        want.sort();
        for (file, mut names) in documented() {
            names.sort();
            assert_eq!(names, want, "{}'s ## Environment table", file.display());
        }
    }

    /// Every `.rs` file under `dir`.
    fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name();
            if name == "target" || name.to_string_lossy().starts_with('.') {
                continue;
            }
            if p.is_dir() {
                sources(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }

    /// The one reader: no other Rust source reads a `SPECC_*` setting of
    /// the table, and every `SPECC_*` variable read anywhere is listed.
    #[test]
    fn settings_are_read_here_only_and_every_variable_is_listed() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files = Vec::new();
        sources(&root, &mut files);
        assert!(files.len() > 50, "the workspace's sources: {}", files.len());
        let listed: Vec<&str> = SETTINGS
            .iter()
            .map(|s| s.name)
            .chain(TEST_SETTINGS.iter().map(|t| t.0))
            .collect();
        for f in &files {
            if f.ends_with("runtime/src/settings.rs") {
                continue;
            }
            let text = std::fs::read_to_string(f).unwrap();
            for call in ["var(\"SPECC_", "var_os(\"SPECC_"] {
                for (at, _) in text.match_indices(call) {
                    let rest = &text[at + call.len() - "SPECC_".len()..];
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                        .collect();
                    assert!(
                        listed.contains(&name.as_str()),
                        "{}: reads {name}, which the settings table does not list",
                        f.display()
                    );
                    assert!(
                        !SETTINGS.iter().any(|s| s.name == name),
                        "{}: reads {name} itself; read it through specc_runtime::settings",
                        f.display()
                    );
                }
            }
        }
    }

    /// Every `SPECC_*` variable the scripts, interop checks and benchmarks
    /// name is listed (the `SPECC_PREDICT_*` names of an exported header
    /// are C constants, not variables).
    #[test]
    fn every_variable_the_scripts_name_is_listed() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let listed: Vec<&str> = SETTINGS
            .iter()
            .map(|s| s.name)
            .chain(TEST_SETTINGS.iter().map(|t| t.0))
            .collect();
        let mut files = Vec::new();
        for dir in ["tools", ".ci", "interop", "benches"] {
            let mut stack = vec![root.join(dir)];
            while let Some(d) = stack.pop() {
                let Ok(entries) = std::fs::read_dir(&d) else {
                    continue;
                };
                for e in entries.flatten() {
                    let p = e.path();
                    if p.is_dir() {
                        stack.push(p);
                    } else {
                        files.push(p);
                    }
                }
            }
        }
        assert!(files.len() > 10, "the scripts: {}", files.len());
        for f in files {
            let Ok(text) = std::fs::read_to_string(&f) else {
                continue;
            };
            for (at, _) in text.match_indices("SPECC_") {
                let name: String = text[at..]
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                if name.starts_with("SPECC_PREDICT_") {
                    continue;
                }
                assert!(
                    listed.contains(&name.as_str()),
                    "{}: names {name}, which the settings table does not list",
                    f.display()
                );
            }
        }
    }

    #[test]
    fn unset_settings_take_their_defaults() {
        // The test process is not given any of them (cargo test's
        // environment); each reads as its default.
        for s in SETTINGS {
            if std::env::var_os(s.name).is_some() {
                return;
            }
        }
        assert_eq!(threads(), Ok(None));
        assert_eq!(gemm_isa(), Ok(None));
        assert_eq!(gemm_epilogue(), Ok(true));
        assert_eq!(runtime_adam(), Ok(true));
        assert_eq!(winograd(), WinogradMode::Auto);
        assert_eq!(winograd_tile(), Ok(None));
        assert_eq!(winograd_block(), None);
        assert!(shared_exchange());
        assert_eq!(check(), Ok(()));
    }
}
