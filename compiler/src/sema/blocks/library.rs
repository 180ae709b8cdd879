//! The blocks of specc's library (`layers.dense`, ...; the texts are
//! `specc_grammar::library`'s), as the expansion of a call sees them.
//!
//! Owns: parsing each library text once per thread and finding a block by
//! its qualified name (`LIB.NAME`).
//!
//! Invariants: a library block is called only by its qualified name, so a
//! spec's own block `dense` and `layers.dense` are different blocks; inside
//! a library block a plain name calls a builtin (or another library block by
//! its qualified name), never the spec's blocks; the block's spans are
//! offset into its library text, so its errors render there.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::rc::Rc;

use specc_grammar::ast::{BlockDef, Item};
use specc_grammar::library::{self, LibraryFile};

type Defs = HashMap<String, Rc<BlockDef>>;

thread_local! {
    static PARSED: Vec<OnceCell<Defs>> = library::FILES.iter().map(|_| OnceCell::new()).collect();
}

/// The blocks of `file`, by their own (unqualified) names. A text that
/// does not parse has none (a unit test parses every text).
fn with_defs<T>(file: &LibraryFile, f: impl FnOnce(&Defs) -> T) -> T {
    let index = library::FILES
        .iter()
        .position(|g| g.name == file.name)
        .unwrap_or(0);
    PARSED.with(|cells| {
        let defs = cells[index].get_or_init(|| {
            let Ok(spec) = file.parse() else {
                return Defs::new();
            };
            spec.items
                .into_iter()
                .filter_map(|i| match i {
                    Item::BlockDef(b) => Some((b.name.name.clone(), Rc::new(b))),
                    _ => None,
                })
                .collect()
        });
        f(defs)
    })
}

/// The library block a qualified name calls (`layers.dense`).
pub(crate) fn block(qualified: &str) -> Option<Rc<BlockDef>> {
    let (file, name) = library::split_name(qualified)?;
    with_defs(file, |defs| defs.get(name).cloned())
}

/// The qualified names of the library `lib`'s blocks, sorted (for
/// did-you-mean); none if there is no such library.
pub(crate) fn names(lib: &str) -> Vec<String> {
    let Some(file) = library::file(lib) else {
        return Vec::new();
    };
    let mut names: Vec<String> = with_defs(file, |defs| {
        defs.keys().map(|n| format!("{lib}.{n}")).collect()
    });
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_are_found_by_qualified_name_only() {
        let dense = block("layers.dense").expect("layers.dense");
        assert_eq!(dense.name.name, "dense");
        assert!(block("dense").is_none());
        assert!(block("layers.no_such_layer").is_none());
        assert!(block("nolib.dense").is_none());
        assert!(names("layers").contains(&"layers.dense".to_string()));
        assert!(names("nolib").is_empty());
    }
}
