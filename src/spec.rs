//! Reading a spec file.
//!
//! Owns: [`read_spec`] and its limit, [`MAX_SPEC_BYTES`].
//! Invariant: a file that is too large, unreadable or not UTF-8 is an error
//! naming it (the message every command prints), never a panic or a process
//! that grows without bound.

use std::io::Read;
use std::path::Path;

use specc_grammar::SourceFile;

/// The largest spec file specc reads: 16 MiB (the biggest shipped spec is a
/// few KiB), so a file that never ends (`/dev/zero`) is an error, not a
/// process that grows until it is killed.
pub const MAX_SPEC_BYTES: u64 = 16 << 20;

/// Reads a spec file (UTF-8, at most [`MAX_SPEC_BYTES`]); the error says
/// why it cannot.
pub fn read_spec(path: &Path) -> Result<SourceFile, String> {
    let cannot = |e: std::io::Error| format!("cannot read {}: {e}", path.display());
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    file.take(MAX_SPEC_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_SPEC_BYTES {
        return Err(format!(
            "cannot read {}: the file is larger than 16 MiB ({MAX_SPEC_BYTES} bytes), the limit for a spec",
            path.display()
        ));
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        format!(
            "cannot read {}: stream did not contain valid UTF-8",
            path.display()
        )
    })?;
    Ok(SourceFile::new(path.display().to_string(), text))
}
