//! The file list of a streaming source: paths and glob patterns expanded to
//! files, as `tf.data.Dataset.list_files(pattern, shuffle=False)` does.
//!
//! Owns: [`expand`] and the pattern matcher ([`matches()`]: `*` any run of
//! characters, `?` one character, `[abc]`, `[a-z]`, `[!a]` one character of
//! a class; none of them matches `/`).
//!
//! Invariants: the list is deterministic — each pattern's matches sorted by
//! path (bytes), patterns in the order given, a file matched twice listed
//! once; a pattern that matches nothing is an error naming the pattern; a
//! plain path (no wildcard) must exist; directories are never listed as
//! files; names starting with `.` match only a pattern that starts with `.`.

use std::path::{Component, Path, PathBuf};

use crate::data::DataError;

/// True when `s` has a wildcard (`*`, `?`, `[`).
pub fn is_pattern(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// The files of `patterns`, in order (see the module doc).
pub fn expand(patterns: &[PathBuf]) -> Result<Vec<PathBuf>, DataError> {
    let mut out: Vec<PathBuf> = Vec::new();
    for p in patterns {
        let shown = p.display().to_string();
        let mut found = if is_pattern(&shown) {
            let found = walk(p).map_err(|e| DataError::new(&shown, e))?;
            if found.is_empty() {
                return Err(DataError::new(&shown, "no file matches the pattern"));
            }
            found
        } else {
            match std::fs::metadata(p) {
                Ok(m) if m.is_dir() => {
                    return Err(DataError::new(
                        &shown,
                        "is a directory; name its files or a pattern (`dir/*.csv`)",
                    ))
                }
                Ok(_) => vec![p.clone()],
                Err(e) => return Err(DataError::new(&shown, format!("cannot open the file: {e}"))),
            }
        };
        found.sort_by(|a, b| {
            a.as_os_str()
                .as_encoded_bytes()
                .cmp(b.as_os_str().as_encoded_bytes())
        });
        for f in found {
            if !out.contains(&f) {
                out.push(f);
            }
        }
    }
    Ok(out)
}

/// The files matching `pattern`, component by component.
fn walk(pattern: &Path) -> Result<Vec<PathBuf>, String> {
    let mut bases: Vec<PathBuf> = vec![PathBuf::new()];
    let comps: Vec<Component<'_>> = pattern.components().collect();
    for (i, c) in comps.iter().enumerate() {
        let last = i + 1 == comps.len();
        let name = c.as_os_str();
        let text = name.to_string_lossy();
        if !matches!(c, Component::Normal(_)) || !is_pattern(&text) {
            for b in &mut bases {
                b.push(name);
            }
            continue;
        }
        let mut next = Vec::new();
        for b in &bases {
            let dir = if b.as_os_str().is_empty() {
                Path::new(".")
            } else {
                b.as_path()
            };
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for e in entries {
                let e = e.map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
                let n = e.file_name();
                let nb = n.as_encoded_bytes();
                if nb.first() == Some(&b'.') && !text.starts_with('.') {
                    continue;
                }
                if matches(text.as_bytes(), nb) {
                    next.push(b.join(&n));
                }
            }
            let _ = last;
        }
        bases = next;
    }
    Ok(bases.into_iter().filter(|p| p.is_file()).collect())
}

/// Does the file name `name` match the pattern `pat` (see the module doc)?
pub fn matches(pat: &[u8], name: &[u8]) -> bool {
    // Iterative matching with one backtrack point for the last `*`.
    let (mut p, mut n) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        if p < pat.len() {
            match pat[p] {
                b'*' => {
                    star = Some((p, n));
                    p += 1;
                    continue;
                }
                b'?' if name[n] != b'/' => {
                    p += 1;
                    n += 1;
                    continue;
                }
                b'[' => {
                    if let Some((ok, len)) = class(&pat[p..], name[n]) {
                        if ok {
                            p += len;
                            n += 1;
                            continue;
                        }
                    } else if name[n] == b'[' {
                        // An unclosed `[` is a literal.
                        p += 1;
                        n += 1;
                        continue;
                    }
                }
                c if c == name[n] && c != b'?' && c != b'*' => {
                    p += 1;
                    n += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((sp, sn)) if name[sn] != b'/' => {
                p = sp + 1;
                n = sn + 1;
                star = Some((sp, sn + 1));
            }
            _ => return false,
        }
    }
    pat[p..].iter().all(|&c| c == b'*')
}

/// A character class at the start of `pat` (`[...]`): whether `c` is in it
/// and the class's length; `None` when the `[` is not closed.
fn class(pat: &[u8], c: u8) -> Option<(bool, usize)> {
    let mut i = 1;
    let negate = matches!(pat.get(i), Some(b'!') | Some(b'^'));
    if negate {
        i += 1;
    }
    let mut hit = false;
    let mut first = true;
    while i < pat.len() {
        let x = pat[i];
        if x == b']' && !first {
            return Some((hit != negate && c != b'/', i + 1));
        }
        first = false;
        if i + 2 < pat.len() && pat[i + 1] == b'-' && pat[i + 2] != b']' {
            if (x..=pat[i + 2]).contains(&c) {
                hit = true;
            }
            i += 3;
        } else {
            if x == c {
                hit = true;
            }
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards() {
        assert!(matches(b"part-*.csv", b"part-0001.csv"));
        assert!(matches(b"part-*.csv", b"part-.csv"));
        assert!(!matches(b"part-*.csv", b"part-1.csv.gz"));
        assert!(matches(b"part-*.csv*", b"part-1.csv.gz"));
        assert!(matches(b"p?rt", b"part"));
        assert!(!matches(b"p?rt", b"prt"));
        assert!(matches(b"x[0-3].csv", b"x2.csv"));
        assert!(!matches(b"x[0-3].csv", b"x7.csv"));
        assert!(matches(b"x[!0-3].csv", b"x7.csv"));
        assert!(matches(b"x[ab]", b"xb"));
        assert!(matches(b"*", b"anything"));
        assert!(matches(b"a*b*c", b"aXXbYYc"));
        assert!(!matches(b"a*b*c", b"aXXbYY"));
        assert!(matches(b"[", b"["));
    }

    #[test]
    fn expands_sorted_and_refuses_no_match() {
        let d = std::env::temp_dir().join(format!("specc-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("sub")).unwrap();
        for n in [
            "b-2.csv",
            "b-10.csv",
            "a-1.csv",
            ".hidden.csv",
            "sub/c-1.csv",
        ] {
            std::fs::write(d.join(n), "x\n1\n").unwrap();
        }
        let got = expand(&[d.join("*-*.csv")]).unwrap();
        let names: Vec<String> = got
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a-1.csv", "b-10.csv", "b-2.csv"]);
        let nested = expand(&[d.join("s*/c-*.csv")]).unwrap();
        assert_eq!(nested, [d.join("sub/c-1.csv")]);
        let e = expand(&[d.join("zzz-*.csv")]).unwrap_err();
        assert!(e.file.ends_with("zzz-*.csv"), "{e}");
        assert!(e.message.contains("no file matches"), "{e}");
        let e = expand(&[d.join("missing.csv")]).unwrap_err();
        assert!(e.message.contains("cannot open"), "{e}");
        // Twice the same file: listed once.
        let both = expand(&[d.join("a-1.csv"), d.join("a-*.csv")]).unwrap();
        assert_eq!(both.len(), 1);
        let _ = std::fs::remove_dir_all(&d);
    }
}
