//! Vocabulary files: `categorical_column_with_vocabulary_file`'s
//! `vocabulary_file`, read as TF's `index_table_from_file` reads it.
//!
//! Owns: [`read_vocabulary_file`]. One entry per line, the whole line (its
//! `\n` or `\r\n` removed, nothing trimmed), in file order (an empty line
//! is an error, as TF's initializer refuses it); the first
//! `vocabulary_size` lines when a size is given (a file with fewer lines is
//! an error, as TF's table initializer refuses it); int64 vocabularies parse
//! each line as a decimal integer.
//!
//! Invariants: every error names the file and, where there is one, the line
//! (1-based); a duplicate entry is an error naming both lines (TF's table
//! refuses a key twice); memory is bounded by the file (and a line longer
//! than [`MAX_LINE_BYTES`] is an error).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use super::{KeyDType, Vocabulary};

/// The longest vocabulary line, in bytes (1 MiB).
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Reads a vocabulary file (see the module doc). Errors read
/// `FILE:LINE: message` or `FILE: message`.
pub fn read_vocabulary_file(
    path: &Path,
    vocabulary_size: Option<usize>,
    dtype: KeyDType,
) -> Result<Vocabulary, String> {
    let file = path.display();
    let f = std::fs::File::open(path)
        .map_err(|e| format!("{file}: cannot open the vocabulary file: {e}"))?;
    let mut reader = BufReader::new(f);
    let mut strings: Vec<Vec<u8>> = Vec::new();
    let mut ints: Vec<i64> = Vec::new();
    let mut seen_str: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut seen_int: HashMap<i64, usize> = HashMap::new();
    let mut line = Vec::new();
    let mut n = 0usize;
    loop {
        if vocabulary_size.is_some_and(|size| n >= size) {
            break;
        }
        line.clear();
        let read = (&mut reader)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("{file}:{}: cannot read the vocabulary file: {e}", n + 1))?;
        if read == 0 {
            break;
        }
        n += 1;
        if line.last() == Some(&b'\n') {
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
        } else if line.len() > MAX_LINE_BYTES {
            return Err(format!(
                "{file}:{n}: the line is longer than {MAX_LINE_BYTES} bytes"
            ));
        }
        if line.is_empty() {
            // TF: "Invalid content in FILE: empty line found".
            return Err(format!("{file}:{n}: empty line in the vocabulary file"));
        }
        match dtype {
            KeyDType::String => {
                if let Some(first) = seen_str.insert(line.clone(), n) {
                    return Err(format!(
                        "{file}:{n}: duplicate vocabulary entry {:?} (first on line {first})",
                        String::from_utf8_lossy(&line)
                    ));
                }
                strings.push(line.clone());
            }
            KeyDType::Int64 => {
                let v = std::str::from_utf8(&line)
                    .ok()
                    .and_then(|s| s.parse::<i64>().ok())
                    .ok_or_else(|| {
                        format!(
                            "{file}:{n}: cannot parse {:?} as an int64",
                            String::from_utf8_lossy(&line)
                        )
                    })?;
                if let Some(first) = seen_int.insert(v, n) {
                    return Err(format!(
                        "{file}:{n}: duplicate vocabulary entry {v} (first on line {first})"
                    ));
                }
                ints.push(v);
            }
        }
    }
    if let Some(size) = vocabulary_size {
        if n < size {
            return Err(format!(
                "{file}: vocabulary_size is {size} but the file has {n} lines"
            ));
        }
    }
    if n == 0 {
        return Err(format!("{file}: the vocabulary file is empty"));
    }
    Ok(match dtype {
        KeyDType::String => Vocabulary::Strings(strings),
        KeyDType::Int64 => Vocabulary::Ints(ints),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &[u8]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("specc-vocab-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn lines_and_sizes() {
        let p = write("a.txt", b"paris\r\nlondon\ntokyo\n");
        let v = read_vocabulary_file(&p, None, KeyDType::String).unwrap();
        assert_eq!(
            v,
            Vocabulary::Strings(vec![
                b"paris".to_vec(),
                b"london".to_vec(),
                b"tokyo".to_vec()
            ])
        );
        let v = read_vocabulary_file(&p, Some(2), KeyDType::String).unwrap();
        assert_eq!(v.len(), 2);
        let e = read_vocabulary_file(&p, Some(4), KeyDType::String).unwrap_err();
        assert!(
            e.contains("a.txt") && e.contains("vocabulary_size is 4"),
            "{e}"
        );
    }

    #[test]
    fn errors_name_file_and_line() {
        let p = write("dup.txt", b"a\nb\na\n");
        let e = read_vocabulary_file(&p, None, KeyDType::String).unwrap_err();
        assert!(e.contains("dup.txt:3") && e.contains("line 1"), "{e}");
        // A size that stops before the duplicate reads fine.
        assert_eq!(
            read_vocabulary_file(&p, Some(2), KeyDType::String)
                .unwrap()
                .len(),
            2
        );
        let p = write("empty.txt", b"a\n\nb\n");
        let e = read_vocabulary_file(&p, None, KeyDType::String).unwrap_err();
        assert!(e.contains("empty.txt:2") && e.contains("empty line"), "{e}");
        let p = write("ints.txt", b"10\n20\nx\n");
        let e = read_vocabulary_file(&p, None, KeyDType::Int64).unwrap_err();
        assert!(e.contains("ints.txt:3") && e.contains("\"x\""), "{e}");
        assert_eq!(
            read_vocabulary_file(&p, Some(2), KeyDType::Int64).unwrap(),
            Vocabulary::Ints(vec![10, 20])
        );
        let e = read_vocabulary_file(Path::new("/nonexistent/v.txt"), None, KeyDType::String)
            .unwrap_err();
        assert!(e.contains("/nonexistent/v.txt"), "{e}");
    }
}
