//! The run directory's record: `DIR/run.yaml`.
//!
//! Owns: what a run writes next to its checkpoints so that it can be
//! reproduced and resumed safely — specc's version, the spec (path, sha256
//! and its whole text), the effective configuration (every setting, by the
//! keys of a `--config` file), the overrides that were applied, and every
//! data file (path, size, sha256) — and the check a resume makes against it
//! ([`RunRecord::check_resume`]).
//!
//! Invariants: `run.yaml` is replaced atomically (a temporary file in the
//! same directory, synced, then renamed over it, then the directory synced),
//! so a reader sees the old record or the new one, never a mix; reading it
//! back gives the record that was written ([`RunRecord::read`] of
//! [`RunRecord::write`] is the identity); a resume refuses a changed spec
//! (its sha256 differs) and warns about changed data or optimizer overrides.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::yaml::{self, Kind, Node};
use crate::io::atomic;

/// The file name of the record in a run directory.
pub const RUN_YAML: &str = "run.yaml";

/// One data file a run read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataRecord {
    pub path: String,
    pub size: u64,
    pub sha256: String,
}

impl DataRecord {
    /// Size and sha256 of the file at `path` (read in 1 MiB chunks).
    pub fn of(path: &Path) -> Result<DataRecord, String> {
        let cannot = |e: std::io::Error| format!("cannot read {}: {e}", path.display());
        let mut f = File::open(path).map_err(cannot)?;
        let mut h = Sha256::new();
        let mut buf = vec![0u8; 1 << 20];
        let mut size = 0u64;
        loop {
            let n = f.read(&mut buf).map_err(cannot)?;
            if n == 0 {
                break;
            }
            size += n as u64;
            h.update(&buf[..n]);
        }
        Ok(DataRecord {
            path: path.display().to_string(),
            size,
            sha256: hex(&h.finalize()),
        })
    }
}

/// The sha256 of `bytes`, in lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        write!(s, "{x:02x}").ok();
    }
    s
}

/// What `run.yaml` holds.
#[derive(Clone, Debug, PartialEq)]
pub struct RunRecord {
    /// specc's version (`CARGO_PKG_VERSION` of the binary that wrote it).
    pub specc_version: String,
    pub spec_path: String,
    /// sha256 of the spec file's text as written by the user (overrides
    /// are recorded apart, so a resume with more `--steps` is the same spec).
    pub spec_sha256: String,
    pub spec_text: String,
    /// The effective configuration: (dotted key of a `--config` file, value
    /// as YAML text), e.g. `("checkpoint.every_steps", "1000")`.
    pub config: Vec<(String, String)>,
    /// The overrides applied over the spec: (key, value as given).
    pub overrides: Vec<(String, String)>,
    pub data: Vec<DataRecord>,
}

/// What a resume learns from comparing records.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResumeCheck {
    /// Differences the run continues with (changed data, optimizer overrides).
    pub warnings: Vec<String>,
}

impl RunRecord {
    /// A record of the spec at `spec_path` with text `spec_text`.
    pub fn new(spec_path: &Path, spec_text: &str) -> RunRecord {
        RunRecord {
            specc_version: String::new(),
            spec_path: spec_path.display().to_string(),
            spec_sha256: sha256_hex(spec_text.as_bytes()),
            spec_text: spec_text.to_string(),
            config: Vec::new(),
            overrides: Vec::new(),
            data: Vec::new(),
        }
    }

    /// The `config` (nested by section) and `overrides` parts of
    /// [`RunRecord::to_yaml`]: the configuration the run resolved.
    pub fn config_yaml(&self) -> String {
        let mut s = String::from("config:");
        write_nested(&mut s, &self.config);
        s.push_str("overrides:");
        if self.overrides.is_empty() {
            s.push_str(" []\n");
        } else {
            s.push('\n');
            for (k, v) in &self.overrides {
                writeln!(
                    s,
                    "  - key: {}\n    value: {}",
                    yaml::quote(k),
                    yaml::quote(v)
                )
                .ok();
            }
        }
        s
    }

    /// The record as YAML text.
    pub fn to_yaml(&self) -> String {
        let mut s = String::new();
        s.push_str("# The run whose checkpoints are in this directory, written by specc.\n");
        s.push_str("# A resume refuses a spec whose sha256 differs.\n");
        writeln!(s, "specc_version: {}", yaml::quote(&self.specc_version)).ok();
        s.push_str("spec:\n");
        writeln!(s, "  path: {}", yaml::quote(&self.spec_path)).ok();
        writeln!(s, "  sha256: {}", yaml::quote(&self.spec_sha256)).ok();
        writeln!(s, "  text: {}", yaml::block(&self.spec_text, 2)).ok();
        s.push_str(&self.config_yaml());
        s.push_str("data:");
        if self.data.is_empty() {
            s.push_str(" []\n");
        } else {
            s.push('\n');
            for d in &self.data {
                writeln!(
                    s,
                    "  - path: {}\n    size: {}\n    sha256: {}",
                    yaml::quote(&d.path),
                    d.size,
                    yaml::quote(&d.sha256)
                )
                .ok();
            }
        }
        s
    }

    /// Writes `DIR/run.yaml` atomically (creating `DIR` if needed).
    pub fn write(&self, dir: &Path) -> Result<PathBuf, String> {
        let path = dir.join(RUN_YAML);
        let fail =
            |what: &str, p: &Path, e: std::io::Error| format!("cannot {what} {}: {e}", p.display());
        std::fs::create_dir_all(dir).map_err(|e| fail("create the directory", dir, e))?;
        // Temporaries of runs killed while writing (best effort).
        atomic::sweep_temporaries(dir, RUN_YAML);
        atomic::write_atomic(&path, |f| {
            f.write_all(self.to_yaml().as_bytes())
                .map_err(|e| fail("write", f.path(), e))
        })?;
        Ok(path)
    }

    /// Reads `DIR/run.yaml`; `Ok(None)` when the directory has none.
    pub fn read(dir: &Path) -> Result<Option<RunRecord>, String> {
        let path = dir.join(RUN_YAML);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        RunRecord::parse(&text)
            .map(Some)
            .map_err(|e| format!("{}:{e}", path.display()))
    }

    /// Parses the text of a `run.yaml`; errors are `LINE:COLUMN: message`.
    pub fn parse(text: &str) -> Result<RunRecord, String> {
        let root = yaml::parse(text)?.ok_or("1:1: the file is empty")?;
        let field = |m: &Node, key: &str| -> Result<Node, String> {
            entries(m)?
                .iter()
                .find(|(k, _)| k.str() == Some(key))
                .map(|(_, v)| v.clone())
                .ok_or_else(|| format!("{}:{}: no `{key}`", m.pos.line, m.pos.col))
        };
        let string = |n: &Node| -> Result<String, String> {
            n.str()
                .map(str::to_string)
                .ok_or_else(|| format!("{}:{}: expected a string", n.pos.line, n.pos.col))
        };
        let spec = field(&root, "spec")?;
        let mut config = Vec::new();
        flatten(&field(&root, "config")?, "", &mut config)?;
        let list = |key: &str| -> Result<Vec<Node>, String> {
            match field(&root, key)?.kind {
                Kind::Seq(items) => Ok(items),
                _ => Err(format!("`{key}` is not a list")),
            }
        };
        let mut overrides = Vec::new();
        for o in list("overrides")? {
            overrides.push((string(&field(&o, "key")?)?, string(&field(&o, "value")?)?));
        }
        let mut data = Vec::new();
        for d in list("data")? {
            let size = field(&d, "size")?;
            data.push(DataRecord {
                path: string(&field(&d, "path")?)?,
                size: size
                    .int()
                    .and_then(|v| u64::try_from(v).ok())
                    .ok_or_else(|| {
                        format!(
                            "{}:{}: expected a size in bytes",
                            size.pos.line, size.pos.col
                        )
                    })?,
                sha256: string(&field(&d, "sha256")?)?,
            });
        }
        Ok(RunRecord {
            specc_version: string(&field(&root, "specc_version")?)?,
            spec_path: string(&field(&spec, "path")?)?,
            spec_sha256: string(&field(&spec, "sha256")?)?,
            spec_text: string(&field(&spec, "text")?)?,
            config,
            overrides,
            data,
        })
    }

    /// Compares the record of the checkpoints in `dir` (`self`) with the
    /// run about to resume from them (`current`): a changed spec is an
    /// error; changed data or optimizer overrides are warnings.
    pub fn check_resume(&self, current: &RunRecord, dir: &Path) -> Result<ResumeCheck, String> {
        if self.spec_sha256 != current.spec_sha256 {
            return Err(format!(
                "the spec changed since the checkpoint in {} was written: sha256 {}, now {} ({} has the spec it was trained with; start a new run directory, or restore that spec)",
                dir.display(),
                self.spec_sha256,
                current.spec_sha256,
                dir.join(RUN_YAML).display()
            ));
        }
        let mut warnings = Vec::new();
        for (i, d) in current.data.iter().enumerate() {
            match self.data.get(i) {
                Some(old) if old.sha256 == d.sha256 && old.size == d.size => {}
                Some(old) => warnings.push(format!(
                    "the data changed since the checkpoint in {} was written: {} had {} bytes, sha256 {}; {} has {} bytes, sha256 {}",
                    dir.display(),
                    old.path,
                    old.size,
                    old.sha256,
                    d.path,
                    d.size,
                    d.sha256
                )),
                None => warnings.push(format!(
                    "the checkpoint in {} was trained without the data file {}",
                    dir.display(),
                    d.path
                )),
            }
        }
        // The optimizer's settings: a changed one is named with both values.
        let value = |r: &RunRecord, k: &str| {
            r.config
                .iter()
                .find(|(key, _)| key == k)
                .map_or("(not set)".to_string(), |(_, v)| v.clone())
        };
        let mut keys: Vec<&str> = self
            .config
            .iter()
            .chain(&current.config)
            .map(|(k, _)| k.as_str())
            .filter(|k| k.starts_with("optimizer."))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        for k in keys {
            let (old, new) = (value(self, k), value(current, k));
            if old != new {
                warnings.push(format!(
                    "{k} changed since the checkpoint in {} was written: {old}, now {new}",
                    dir.display()
                ));
            }
        }
        Ok(ResumeCheck { warnings })
    }
}

fn entries(n: &Node) -> Result<&[(Node, Node)], String> {
    match &n.kind {
        Kind::Map(e) => Ok(e),
        _ => Err(format!("{}:{}: expected a mapping", n.pos.line, n.pos.col)),
    }
}

/// `config` as nested mappings: `a.b: v` under `a:`. Values are YAML text.
fn write_nested(s: &mut String, config: &[(String, String)]) {
    if config.is_empty() {
        s.push_str(" {}\n");
        return;
    }
    s.push('\n');
    let mut section: Option<&str> = None;
    for (k, v) in config {
        match k.split_once('.') {
            Some((sec, key)) => {
                if section != Some(sec) {
                    writeln!(s, "  {sec}:").ok();
                    section = Some(sec);
                }
                writeln!(s, "    {key}: {v}").ok();
            }
            None => {
                section = None;
                writeln!(s, "  {k}: {v}").ok();
            }
        }
    }
}

/// The inverse of [`write_nested`]: scalars and lists as YAML text.
fn flatten(n: &Node, prefix: &str, out: &mut Vec<(String, String)>) -> Result<(), String> {
    for (k, v) in entries(n)? {
        let key = k.str().unwrap_or_default();
        let full = if prefix.is_empty() {
            key.to_string()
        } else {
            format!("{prefix}.{key}")
        };
        match &v.kind {
            Kind::Map(_) => flatten(v, &full, out)?,
            _ => out.push((full, yaml_text(v))),
        }
    }
    Ok(())
}

/// A node back as the YAML text `write_nested` writes: plain scalars as
/// they are, others quoted, lists in flow form.
pub fn yaml_text(n: &Node) -> String {
    match &n.kind {
        Kind::Scalar { text, plain: true } => text.clone(),
        Kind::Scalar { text, .. } => yaml::quote(text),
        Kind::Seq(items) => {
            let v: Vec<String> = items.iter().map(yaml_text).collect();
            format!("[{}]", v.join(", "))
        }
        Kind::Map(e) => {
            let v: Vec<String> = e
                .iter()
                .map(|(k, v)| format!("{}: {}", yaml_text(k), yaml_text(v)))
                .collect();
            format!("{{{}}}", v.join(", "))
        }
    }
}
