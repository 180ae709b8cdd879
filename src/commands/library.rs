//! `specc library [BLOCK]`: specc's library (layers, optimizers) as spec
//! text, to read and to imitate.
//!
//! Owns: printing the library whole, one text of it (`optimizers`), or one
//! definition of it (a block by `dense` or `layers.dense`, an optimizer by
//! `optimizers.adamw`) with the comment above it. The texts are
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
    if let Some(f) = library::file(name) {
        print!("{}", f.text);
        return Ok(());
    }
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

/// The definitions (blocks, optimizers) of `file`, in order (as its parser
/// reads them): name and span.
fn blocks(file: &LibraryFile) -> Vec<(String, specc_grammar::ast::Span)> {
    file.parse()
        .map(|spec| {
            spec.items
                .into_iter()
                .filter_map(|i| match i {
                    specc_grammar::ast::Item::BlockDef(b) => Some((b.name.name, b.span)),
                    specc_grammar::ast::Item::OptimizerDef(d) => Some((d.name.name, d.span)),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The names of the definitions of `file`, in order.
fn block_names(file: &LibraryFile) -> Vec<String> {
    blocks(file).into_iter().map(|b| b.0).collect()
}

/// The definition `name` with the comment lines just above it.
fn block_text(file: &LibraryFile, name: &str) -> Option<String> {
    let (_, span) = blocks(file).into_iter().find(|b| b.0 == name)?;
    let (start, end) = (
        (span.start - file.base) as usize,
        (span.end - file.base) as usize,
    );
    let before: Vec<&str> = file.text[..start].lines().collect();
    let comments = before
        .iter()
        .rev()
        .take_while(|l| l.starts_with('#'))
        .count();
    let mut text = before[before.len() - comments..].join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(&file.text[start..end]);
    text.push('\n');
    Some(text)
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
        let o = library::file("optimizers").unwrap();
        let text = block_text(o, "lamb").unwrap();
        assert!(text.starts_with("# optax.lamb"), "{text}");
        assert_eq!(block_names(o), ["adamw", "lamb"]);
    }
}
