//! `specc explain [CODE]`: what a diagnostic code means, as `rustc --explain`.
//!
//! Owns: looking a code up by its text (also as printed, `error[CODE]`), the
//! did-you-mean of an unknown code, what replaced a retired code, the list
//! of codes, and `--markdown` (`docs/errors.md`). The texts are [`specc_grammar::Code`]'s.

use specc_grammar::code::{self, Code};
use specc_runtime::suggest::closest;

use crate::Failure;

/// Prints `code`'s explanation (for a retired code, the codes that replaced
/// it); without a code, every code with its summary; with `markdown`,
/// `docs/errors.md`. An unknown code is an error (exit 1) with the closest
/// code.
pub fn run(code: Option<&str>, markdown: bool) -> Result<(), Failure> {
    if markdown {
        print!("{}", code::markdown());
        return Ok(());
    }
    let Some(name) = code else {
        print!("{}", list());
        return Ok(());
    };
    if let Some(text) = code::retired(name.trim()) {
        print!("{text}");
        return Ok(());
    }
    let c = lookup(name).map_err(Failure::Other)?;
    print!("{}", c.explain());
    Ok(())
}

/// The code `name` names: its text, or the text as printed (`error[CODE]`,
/// `[CODE]`). An unknown name is an error naming the closest code, if one
/// is close.
pub fn lookup(name: &str) -> Result<Code, String> {
    let name = name.trim();
    let bare = name.strip_prefix("error").unwrap_or(name);
    let bare = bare
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .unwrap_or(bare);
    if let Some(c) = Code::from_name(bare) {
        return Ok(c);
    }
    let mut msg = format!("no diagnostic code `{name}`");
    if let Some(s) = closest(bare, Code::shown().map(Code::as_str)) {
        msg.push_str(&format!("; did you mean `{s}`?"));
    }
    msg.push_str(" (`specc explain` lists the codes)");
    Err(msg)
}

/// Every shown code and its summary, one a line, the codes aligned.
fn list() -> String {
    let width = Code::shown().map(|c| c.as_str().len()).max().unwrap_or(0);
    let mut out = String::from(
        "Every error about a spec has one of these codes, printed as error[CODE];\n\
         `specc explain CODE` explains one.\n\n",
    );
    for c in Code::shown() {
        out.push_str(&format!("  {:width$}  {}\n", c.as_str(), c.summary()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_takes_the_code_as_printed() {
        assert_eq!(lookup("unknown-name"), Ok(Code::UnknownName));
        assert_eq!(lookup("error[unknown-name]"), Ok(Code::UnknownName));
        assert_eq!(lookup("[unknown-name]"), Ok(Code::UnknownName));
        assert_eq!(lookup(" unknown-name\n"), Ok(Code::UnknownName));
    }

    #[test]
    fn an_unknown_code_suggests_the_closest() {
        let e = lookup("unknown-nam").unwrap_err();
        assert!(e.contains("did you mean `unknown-name`?"), "{e}");
        let e = lookup("zzzz").unwrap_err();
        assert!(!e.contains("did you mean"), "{e}");
        assert!(e.starts_with("no diagnostic code `zzzz`"), "{e}");
        // The internal marker is not a code users see.
        assert!(lookup("poisoned").is_err());
    }

    #[test]
    fn the_list_has_every_shown_code_once() {
        let l = list();
        for c in Code::shown() {
            let line = l
                .lines()
                .find(|line| line.split_whitespace().next() == Some(c.as_str()))
                .unwrap_or_else(|| panic!("{c} not listed"));
            assert!(line.ends_with(c.summary()), "{line}");
        }
        assert!(!l.contains("poisoned"));
    }
}
