//! The documentation's links: every relative link in README.md,
//! ARCHITECTURE.md and docs/*.md names a file of the repository and, with a
//! `#fragment`, a heading of that file (GitHub's anchor of it); and the index,
//! docs/README.md, links every page of docs/.

use std::collections::BTreeSet;
use std::fs;
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Markdown files whose links are checked.
fn documents() -> Vec<PathBuf> {
    let root = root();
    let mut files = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    let mut pages: Vec<PathBuf> = fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    files.extend(pages);
    files
}

/// The text outside fenced code blocks and inline code spans, line by line
/// (1-based line numbers), so a `[x](y)` inside code is not a link.
fn prose_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut prose = String::new();
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code {
                prose.push(c);
            }
        }
        out.push((i + 1, prose));
    }
    out
}

/// The targets of the inline links `[text](target)` of one line.
fn link_targets(line: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        match after.find(')') {
            Some(end) => {
                targets.push(after[..end].trim().to_string());
                rest = &after[end..];
            }
            None => break,
        }
    }
    targets
}

/// GitHub's anchor of a heading: lower case, letters, digits, `-` and `_`
/// kept, spaces to `-`, everything else dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown file's headings (a repeated one gets `-1`,
/// `-2`, ... as on GitHub).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let heading = line.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let base = slug(heading);
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

fn is_external(target: &str) -> bool {
    ["http://", "https://", "mailto:"]
        .iter()
        .any(|scheme| target.starts_with(scheme))
}

#[test]
fn every_relative_link_resolves_to_a_file_and_heading() {
    let root = root();
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = fs::read_to_string(&doc).expect("read a document");
        let dir = doc.parent().expect("a document's directory");
        let shown = doc
            .strip_prefix(&root)
            .unwrap_or(&doc)
            .display()
            .to_string();
        for (line, prose) in prose_lines(&text) {
            for target in link_targets(&prose) {
                if is_external(&target) {
                    continue;
                }
                checked += 1;
                let (path, fragment) = match target.split_once('#') {
                    Some((path, fragment)) => (path, Some(fragment)),
                    None => (target.as_str(), None),
                };
                let file = if path.is_empty() {
                    doc.clone()
                } else {
                    dir.join(path)
                };
                if !file.exists() {
                    broken.push(format!("{shown}:{line}: `{target}`: no file {path}"));
                    continue;
                }
                if let Some(fragment) = fragment {
                    let is_markdown = file.extension().is_some_and(|e| e == "md");
                    let target_text = if is_markdown {
                        fs::read_to_string(&file).expect("read a linked document")
                    } else {
                        String::new()
                    };
                    if !is_markdown || !anchors(&target_text).contains(fragment) {
                        broken.push(format!(
                            "{shown}:{line}: `{target}`: no heading #{fragment} in {}",
                            file.strip_prefix(&root).unwrap_or(&file).display()
                        ));
                    }
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} relative links found");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_index_links_every_page_of_docs() {
    let docs = root().join("docs");
    let index = fs::read_to_string(docs.join("README.md")).expect("docs/README.md");
    let linked: BTreeSet<String> = prose_lines(&index)
        .iter()
        .flat_map(|(_, prose)| link_targets(prose))
        .map(|t| t.split('#').next().unwrap_or_default().to_string())
        .collect();
    let missing: Vec<String> = documents()
        .iter()
        .filter(|p| p.parent() == Some(docs.as_path()))
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .filter(|name| name != "README.md" && !linked.contains(name))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/README.md does not link {missing:?}"
    );
}

#[test]
fn slugs_are_githubs() {
    assert_eq!(
        slug(" `--data` and `--eval-data`"),
        "--data-and---eval-data"
    );
    assert_eq!(
        slug(" TFRecord, tf.train.Example and CSV (tf.io)"),
        "tfrecord-tftrainexample-and-csv-tfio"
    );
    assert_eq!(
        slug(" Warm start: `init_from_checkpoint`"),
        "warm-start-init_from_checkpoint"
    );
    let repeated = anchors("# A\n## Notes\n```\n# not a heading\n```\n## Notes\n");
    assert_eq!(
        repeated.into_iter().collect::<Vec<_>>(),
        ["a", "notes", "notes-1"]
    );
    assert_eq!(
        link_targets("see [x](a.md#b) and [y](#c), not ]( alone"),
        ["a.md#b", "#c"]
    );
}
