//! Atomic file writes: a file specc writes (a checkpoint's bundle and state
//! file, `run.yaml`, predictions, a converted file, an exported model) is
//! replaced whole or not at all.
//!
//! Owns: [`AtomicFile`] (a temporary file beside its destination, renamed
//! onto it), [`write_atomic`] (the whole protocol around a closure that
//! writes), [`sync_dir`], and the temporaries' names ([`temp_path`],
//! [`is_temporary`], [`sweep_temporaries`]: what a killed process left).
//!
//! Invariants:
//! - The temporary is `NAME.tmpPID-N` in the destination's directory (the
//!   same file system, so the rename is atomic; `N` counts this process's
//!   temporaries, so two writes of one file never share one).
//! - [`AtomicFile::commit`]: flush, fsync the file, rename it onto the
//!   destination, fsync the directory (Unix), so the new file survives a
//!   crash once `commit` returns. [`AtomicFile::persist`] is the same
//!   without the directory sync, for several files renamed in order and
//!   then made durable by one [`sync_dir`].
//! - Until the rename, the destination is untouched; a failure before it,
//!   or an [`AtomicFile`] dropped without being persisted, removes the
//!   temporary. (A process killed mid-write leaves its temporary, which
//!   [`sweep_temporaries`] removes.)

use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Buffer size of an [`AtomicFile`]'s writer.
const BUFFER: usize = 1 << 16;

/// Temporaries made by this process so far (the `N` of `NAME.tmpPID-N`).
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A new temporary path beside `dest`: `NAME.tmpPID-N`.
pub fn temp_path(dest: &Path) -> PathBuf {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed) + 1;
    let mut p = dest.as_os_str().to_owned();
    p.push(format!(".tmp{}-{n}", std::process::id()));
    PathBuf::from(p)
}

/// Whether `name` is a temporary's file name (`NAME.tmpPID-N`).
pub fn is_temporary(name: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    name.rsplit_once(".tmp")
        .and_then(|(_, tail)| tail.split_once('-'))
        .is_some_and(|(pid, n)| digits(pid) && digits(n))
}

/// Removes the temporaries a killed process left in `dir` whose names
/// start with `prefix` (`""`: all); best effort.
pub fn sweep_temporaries(dir: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with(prefix)
            && is_temporary(name)
            && e.file_type().is_ok_and(|t| t.is_file())
        {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Makes the renames in `dir` durable (fsync of the directory; nothing on
/// systems without it).
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// The directory a path's file is in (`.` for a bare name).
fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// A failed step of an atomic write: what was being done, to which file
/// (the destination: the temporary is an implementation detail).
#[derive(Debug)]
pub struct AtomicError {
    /// The destination.
    pub path: PathBuf,
    /// `write` (creating, writing the temporary), `sync`, `replace`,
    /// `sync the directory of`.
    pub step: &'static str,
    pub error: io::Error,
}

impl fmt::Display for AtomicError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot {} {}: {}",
            self.step,
            self.path.display(),
            self.error
        )
    }
}

impl std::error::Error for AtomicError {}

impl From<AtomicError> for String {
    fn from(e: AtomicError) -> String {
        e.to_string()
    }
}

/// A file being written: a buffered temporary beside its destination.
/// Write to it (it is [`Write`]), then [`commit`](Self::commit) it; dropped
/// otherwise, the temporary is removed.
#[derive(Debug)]
pub struct AtomicFile {
    file: Option<BufWriter<File>>,
    tmp: PathBuf,
    dest: PathBuf,
}

impl AtomicFile {
    /// Creates the temporary of `dest`.
    pub fn create(dest: &Path) -> Result<AtomicFile, AtomicError> {
        let tmp = temp_path(dest);
        let file = File::create(&tmp).map_err(|error| AtomicError {
            path: dest.to_path_buf(),
            step: "write",
            error,
        })?;
        Ok(AtomicFile {
            file: Some(BufWriter::with_capacity(BUFFER, file)),
            tmp,
            dest: dest.to_path_buf(),
        })
    }

    /// The destination.
    pub fn path(&self) -> &Path {
        &self.dest
    }

    /// The temporary being written.
    pub fn temp_path(&self) -> &Path {
        &self.tmp
    }

    fn fail(&self, step: &'static str, error: io::Error) -> AtomicError {
        AtomicError {
            path: self.dest.clone(),
            step,
            error,
        }
    }

    /// Flushes the buffer and fsyncs the temporary (its length is then
    /// [`len`](Self::len)).
    pub fn sync(&mut self) -> Result<(), AtomicError> {
        let Some(w) = self.file.as_mut() else {
            return Ok(());
        };
        w.flush().map_err(|e| self.fail("write", e))?;
        let synced = self
            .file
            .as_ref()
            .map_or(Ok(()), |w| w.get_ref().sync_all());
        synced.map_err(|e| self.fail("sync", e))
    }

    /// The bytes written so far (after a flush or [`sync`](Self::sync):
    /// all of them).
    pub fn len(&self) -> u64 {
        self.file
            .as_ref()
            .and_then(|w| w.get_ref().metadata().ok())
            .map_or(0, |m| m.len())
    }

    /// True when nothing has reached the file yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Syncs the temporary and renames it onto the destination, without
    /// syncing the directory (see [`sync_dir`]).
    pub fn persist(mut self) -> Result<(), AtomicError> {
        self.sync()?;
        self.file = None;
        std::fs::rename(&self.tmp, &self.dest).map_err(|error| AtomicError {
            path: self.dest.clone(),
            step: "replace",
            error,
        })?;
        // Renamed: nothing left to remove on drop.
        self.tmp = PathBuf::new();
        Ok(())
    }

    /// [`persist`](Self::persist), then [`sync_dir`] of the destination's
    /// directory: durable once it returns.
    pub fn commit(self) -> Result<(), AtomicError> {
        let dest = self.dest.clone();
        self.persist()?;
        sync_dir(parent(&dest)).map_err(|error| AtomicError {
            path: dest,
            step: "sync the directory of",
            error,
        })
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.file.as_mut() {
            Some(w) => w.write(buf),
            None => Err(io::Error::other("the file was already persisted")),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self.file.as_mut() {
            Some(w) => w.write_all(buf),
            None => Err(io::Error::other("the file was already persisted")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.as_mut().map_or(Ok(()), |w| w.flush())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            self.file = None;
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Writes `path` atomically: `write` fills a temporary beside it, which is
/// committed ([`AtomicFile::commit`]) when `write` succeeds and removed when
/// it fails (or panics), leaving `path` as it was.
pub fn write_atomic<T, E: From<AtomicError>>(
    path: &Path,
    write: impl FnOnce(&mut AtomicFile) -> Result<T, E>,
) -> Result<T, E> {
    let mut file = AtomicFile::create(path)?;
    let value = write(&mut file)?;
    file.commit()?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("specc-atomic-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn names(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_write_replaces_the_file_whole() {
        let d = dir("replace");
        let p = d.join("out.txt");
        std::fs::write(&p, "old").unwrap();
        let n = write_atomic(&p, |w| -> Result<usize, String> {
            w.write_all(b"new contents").map_err(|e| e.to_string())?;
            Ok(12)
        })
        .unwrap();
        assert_eq!(n, 12);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new contents");
        assert_eq!(names(&d), ["out.txt"]);
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let d = dir("fail");
        let p = d.join("out.txt");
        std::fs::write(&p, "old").unwrap();
        let e = write_atomic(&p, |w| -> Result<(), String> {
            w.write_all(&[b'x'; 200_000]).map_err(|e| e.to_string())?;
            Err("the input ended early".into())
        })
        .unwrap_err();
        assert_eq!(e, "the input ended early");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
        assert_eq!(names(&d), ["out.txt"]);
    }

    #[test]
    fn a_panicking_write_leaves_no_temporary() {
        let d = dir("panic");
        let p = d.join("new.txt");
        let r = std::panic::catch_unwind(|| {
            let _ = write_atomic(&p, |w| -> Result<(), String> {
                w.write_all(b"partial").unwrap();
                panic!("stop");
            });
        });
        assert!(r.is_err());
        assert!(names(&d).is_empty(), "{:?}", names(&d));
    }

    #[test]
    fn a_destination_that_cannot_be_replaced_is_an_error_naming_it() {
        let d = dir("dest_dir");
        let p = d.join("taken");
        std::fs::create_dir(&p).unwrap();
        std::fs::write(p.join("inside"), "x").unwrap();
        let e: String = write_atomic(&p, |w| -> Result<(), String> {
            w.write_all(b"x").map_err(|e| e.to_string())
        })
        .unwrap_err();
        assert!(
            e.starts_with(&format!("cannot replace {}: ", p.display())),
            "{e}"
        );
        assert_eq!(names(&d), ["taken"], "no temporary left");
        let e = write_atomic(&d.join("no/such/dir/f"), |_| Ok::<(), String>(())).unwrap_err();
        assert!(e.starts_with("cannot write "), "{e}");
        assert!(
            e.contains("no/such/dir/f: "),
            "names the file, not its temporary: {e}"
        );
    }

    #[test]
    fn temporaries_are_named_apart_and_recognised() {
        let p = Path::new("d/model.ckpt-1.index");
        let (a, b) = (temp_path(p), temp_path(p));
        assert_ne!(a, b);
        for t in [&a, &b] {
            let name = t.file_name().unwrap().to_str().unwrap();
            assert!(name.starts_with("model.ckpt-1.index.tmp"), "{name}");
            assert!(is_temporary(name), "{name}");
        }
        for not in [
            "model.ckpt-1.index",
            "a.tmp",
            "a.tmp12",
            "a.tmp-3",
            "a.tmpx-3",
            "a.tmp1-",
        ] {
            assert!(!is_temporary(not), "{not}");
        }
    }

    #[test]
    fn a_sweep_removes_only_temporaries_with_the_prefix() {
        let d = dir("sweep");
        for n in [
            "run.yaml",
            "run.yaml.tmp12-3",
            "other.tmp12-3",
            "run.yaml.tmp",
        ] {
            std::fs::write(d.join(n), "x").unwrap();
        }
        sweep_temporaries(&d, "run.yaml");
        assert_eq!(names(&d), ["other.tmp12-3", "run.yaml", "run.yaml.tmp"]);
        sweep_temporaries(&d, "");
        assert_eq!(names(&d), ["run.yaml", "run.yaml.tmp"]);
    }
}
