//! `specc library [BLOCK]`: specc's layer library as spec text, to read and
//! to imitate.
//!
//! Owns: printing a library text whole, or one block of it (by `dense` or
//! `layers.dense`) with the comment above it. The texts are
//! [`specc_grammar::library`]'s; an unknown block is an error naming the
//! closest one.

use specc_grammar::library::{self, LibraryFile};
use specc_runtime::suggest::closest;

use crate::Failure;

/// Prints the library, or the block `name` of it.
pub fn run(name: Option<&str>) -> Result<(), Failure> {
    let Some(name) = name else {
        for f in library::FILES {
            print!("{}", f.text);
        }
        return Ok(());
    };
    let (file, block) = match library::split_name(name) {
        Some(found) => found,
        None => (&library::FILES[0], name),
    };
    match block_text(file, block) {
        Some(text) => {
            print!("{text}");
            Ok(())
        }
        None => {
            let names = block_names(file);
            let mut msg = format!("specc's `{}` library has no block `{block}`", file.name);
            if let Some(s) = closest(block, names.iter().map(String::as_str)) {
                msg.push_str(&format!("; did you mean `{s}`?"));
            }
            msg.push_str(&format!(" (its blocks: {})", names.join(", ")));
            Err(Failure::Other(msg))
        }
    }
}

/// The names of the blocks of `file`, in order.
fn block_names(file: &LibraryFile) -> Vec<String> {
    file.text
        .lines()
        .filter_map(|l| l.strip_prefix("block "))
        .filter_map(|l| l.split('(').next())
        .map(|n| n.trim().to_string())
        .collect()
}

/// The definition of block `name` with the comment lines just above it.
fn block_text(file: &LibraryFile, name: &str) -> Option<String> {
    let lines: Vec<&str> = file.text.lines().collect();
    let head = format!("block {name}(");
    let at = lines.iter().position(|l| l.starts_with(&head))?;
    let mut first = at;
    while first > 0 && lines[first - 1].starts_with('#') {
        first -= 1;
    }
    let end = (at..lines.len()).find(|&i| lines[i] == "}")?;
    Some(lines[first..=end].join("\n") + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_block_with_its_comment() {
        let f = &library::FILES[0];
        let text = block_text(f, "dense").unwrap();
        assert!(text.starts_with("# tf.compat.v1.layers.dense"), "{text}");
        assert!(text.trim_end().ends_with('}'));
        assert!(block_names(f).contains(&"conv2d".to_string()));
        assert!(block_text(f, "nothing").is_none());
    }
}
