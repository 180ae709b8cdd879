//! specc's library: blocks written in spec text and shipped inside specc
//! (`layers.dense`, `layers.conv2d`, ...), which a user reads
//! (`specc library`) and imitates.
//!
//! Owns: the library's texts, their names and the paths diagnostics show,
//! and where their spans live: a library text is parsed with every span
//! offset by its file's base ([`LibraryFile::base`], at or above [`BASE`]),
//! so a [`Diagnostic`] pointing inside a library block renders against that
//! text, and one pointing at the user's call against the spec.
//!
//! Invariants: a spec's spans are below [`BASE`] (`parse` refuses larger
//! texts); each library text is below [`FILE_SPAN`] bytes and parses (a
//! test parses every one); the block `NAME` of library `LIB` is called as
//! `LIB.NAME`, and its calls are scoped under `NAME` as TF's layers are.

use crate::ast::{Item, Span, SpecFile};
use crate::diag::Diagnostic;

/// The first offset of library spans; a spec is shorter.
pub const BASE: u32 = 0xF000_0000;

/// The offsets each library file's spans occupy.
pub const FILE_SPAN: u32 = 1 << 24;

/// One text of the library.
#[derive(Clone, Copy, Debug)]
pub struct LibraryFile {
    /// The qualifier of its blocks (`layers` in `layers.dense`).
    pub name: &'static str,
    /// The path diagnostics show for it.
    pub path: &'static str,
    pub text: &'static str,
    /// The offset of its spans.
    pub base: u32,
}

/// Every library text.
pub const FILES: &[LibraryFile] = &[
    LibraryFile {
        name: "layers",
        path: "<specc>/layers.spec",
        text: include_str!("../library/layers.spec"),
        base: BASE,
    },
    LibraryFile {
        name: "optimizers",
        path: "<specc>/optimizers.spec",
        text: include_str!("../library/optimizers.spec"),
        base: BASE + FILE_SPAN,
    },
];

/// The library `name` (`layers`).
pub fn file(name: &str) -> Option<&'static LibraryFile> {
    FILES.iter().find(|f| f.name == name)
}

/// The library text a span points into, if it is not the spec's.
pub fn file_of(span: Span) -> Option<&'static LibraryFile> {
    FILES
        .iter()
        .find(|f| span.start >= f.base && span.start - f.base < FILE_SPAN)
}

/// `layers.dense` → the library `layers` and the block `dense`.
pub fn split_name(qualified: &str) -> Option<(&'static LibraryFile, &str)> {
    let (lib, name) = qualified.split_once('.')?;
    Some((file(lib)?, name))
}

impl LibraryFile {
    /// The text parsed, its spans offset by [`LibraryFile::base`]; only
    /// `block` and `optimizer_def` items.
    pub fn parse(&self) -> Result<SpecFile, Diagnostic> {
        let file = crate::parser::parse_at(self.text, self.base)?;
        let definition = |i: &Item| matches!(i, Item::BlockDef(_) | Item::OptimizerDef(_));
        if !file.items.iter().all(definition) {
            return Err(Diagnostic::new(
                crate::Code::InternalError,
                Span::new(self.base as usize, self.base as usize),
                format!("{} holds an item that is not a definition", self.path),
            ));
        }
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_library_text_parses_with_offset_spans() {
        for f in FILES {
            assert!(f.text.len() < FILE_SPAN as usize);
            let spec = f
                .parse()
                .unwrap_or_else(|d| panic!("{}: {}", f.path, d.message));
            assert!(!spec.items.is_empty());
            for item in &spec.items {
                let (name, span) = match item {
                    crate::ast::Item::BlockDef(b) => (&b.name.name, b.span),
                    crate::ast::Item::OptimizerDef(d) => (&d.name.name, d.span),
                    _ => panic!("not a definition"),
                };
                assert!(span.start >= f.base, "{span:?}");
                assert_eq!(file_of(span).map(|g| g.name), Some(f.name));
                assert_eq!(
                    split_name(&format!("{}.{}", f.name, name)).map(|(g, n)| (g.name, n)),
                    Some((f.name, name.as_str()))
                );
            }
        }
    }
}
