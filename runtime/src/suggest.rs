//! Edit distance for "did you mean" suggestions, shared by the compiler's
//! diagnostics (names in a spec) and the data readers (column names).
//!
//! Owns: [`edit_distance`], the one Levenshtein distance in specc, and
//! [`closest`], the rule for names (used by the compiler's
//! `sema::args::suggest`, run configuration keys and checkpoint tensors);
//! other messages keep their own rule (the CSV reader's, case-insensitive,
//! for a missing column).
//! Invariant: the distance counts `char`s (Unicode scalar values), not bytes.

/// The Levenshtein distance between `a` and `b`: the fewest insertions,
/// deletions and substitutions of one `char` that turn `a` into `b`.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitute = prev[j] + usize::from(ca != cb);
            cur[j + 1] = substitute.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The closest candidate within a small edit distance: at most a third of
/// `name`'s length (1 to 3); ties go to the shorter, then the alphabetically
/// first. The rule of "did you mean" for names (a spec's names, run
/// configuration keys, checkpoint tensors).
pub fn closest<'c>(name: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let limit = (name.chars().count() / 3).clamp(1, 3);
    candidates
        .into_iter()
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, c)| (*d, c.len(), *c))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::edit_distance;

    #[test]
    fn known_distances() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("flaw", "lawn"), 2);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("abc", ""), 3);
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("adam", "adam"), 0);
        assert_eq!(edit_distance("adamw", "adam"), 1);
        assert_eq!(edit_distance("ab", "ba"), 2);
    }

    #[test]
    fn counts_chars_not_bytes() {
        assert_eq!(edit_distance("größe", "grösse"), 2);
        assert_eq!(edit_distance("é", "e"), 1);
    }

    #[test]
    fn is_symmetric() {
        for (a, b) in [("learning_rate", "learnig_rte"), ("x0", "px3"), ("W1", "")] {
            assert_eq!(edit_distance(a, b), edit_distance(b, a), "{a} {b}");
        }
    }
}
