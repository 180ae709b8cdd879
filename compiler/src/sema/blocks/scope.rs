//! TF 1.x variable-scope names for block calls.
//!
//! Owns: how a call's scope is named, as `tf.compat.v1.variable_scope`
//! names it: an unnamed call takes its block's name as `default_name` and
//! is made unique among the scopes opened so far under the same parent
//! (`dense`, `dense_1`, `dense_2`, ...); a named call (`name = "logits"`)
//! takes the name as it is. Opening a scope counts it and resets the counts
//! of the scopes below it, so re-entering a scope (`reuse = true`) names
//! the blocks inside it as the first entry did.
//!
//! Invariant: the names are a pure function of the order of the calls,
//! which is the order of the spec's text (TF's Python call order).

use std::collections::HashMap;

/// The scopes opened so far, by full name, with how often each was opened
/// since its parent was last entered.
#[derive(Default)]
pub(crate) struct Scopes {
    counts: HashMap<String, usize>,
}

/// `parent/name`, or `name` at the top.
pub(crate) fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}/{name}")
    }
}

impl Scopes {
    fn count(&self, full: &str) -> usize {
        self.counts.get(full).copied().unwrap_or(0)
    }

    /// The unique name for a scope opened with `default_name` under `parent`
    /// (TF's `_get_unique_variable_scope`): the name itself while no scope
    /// of that full name was opened, else the first free `name_1`, `name_2`, ...
    pub fn unique(&self, parent: &str, default_name: &str) -> String {
        let full = join(parent, default_name);
        if self.count(&full) == 0 {
            return default_name.to_string();
        }
        let mut i = 1;
        while self.count(&format!("{full}_{i}")) > 0 {
            i += 1;
        }
        format!("{default_name}_{i}")
    }

    /// Opens the scope `full` (TF's `open_variable_scope`): counts it, and
    /// forgets the counts of every scope below it.
    pub fn open(&mut self, full: &str) {
        *self.counts.entry(full.to_string()).or_insert(0) += 1;
        let below = format!("{full}/");
        for (name, n) in self.counts.iter_mut() {
            if name.starts_with(&below) {
                *n = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_names_count_up_per_parent() {
        let mut s = Scopes::default();
        let open = |s: &mut Scopes, parent: &str, name: &str| {
            let n = s.unique(parent, name);
            let full = join(parent, &n);
            s.open(&full);
            full
        };
        assert_eq!(open(&mut s, "", "dense"), "dense");
        assert_eq!(open(&mut s, "", "dense"), "dense_1");
        assert_eq!(open(&mut s, "tower", "dense"), "tower/dense");
        assert_eq!(open(&mut s, "", "dense"), "dense_2");
        // A chosen name takes a count, so a default name skips it.
        s.open("block_1");
        assert_eq!(open(&mut s, "", "block"), "block");
        assert_eq!(open(&mut s, "", "block"), "block_2");
    }

    #[test]
    fn reentering_a_scope_names_its_inner_scopes_again() {
        let mut s = Scopes::default();
        s.open("shared");
        let first = s.unique("shared", "dense");
        s.open(&join("shared", &first));
        s.open("shared");
        assert_eq!(s.unique("shared", "dense"), "dense");
    }
}
