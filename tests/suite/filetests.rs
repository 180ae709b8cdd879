//! Filetests: tiny specs under `tests/filetests/` with expectations on the text
//! of one compiler stage, so a regression points at the pass that caused it
//! (the whole-spec snapshots of `emit_snapshots.rs` only show that something
//! changed). Cranelift's filetests and LLVM's FileCheck are the model.
//!
//! A filetest is a complete spec whose comments hold directives:
//!
//! ```text
//! # emit: step                  the stage to compile (`specc compile --emit STAGE`);
//!                               starts a section, a file may have several
//! # threads: 2                  SPECC_THREADS for the sections that follow (default 1)
//! # check: PATTERN              the first line at or after the position that matches;
//!                               the position moves to the line after it
//! # nextln: PATTERN             the line right after the previous match matches
//! # not: PATTERN                no line between the previous match and the next
//!                               matched line (or the end of the section) matches
//! ```
//!
//! A pattern is literal text that must occur in the line (surrounding spaces of
//! the pattern are ignored), except for variables: `$name` matches a token
//! (letters, digits and `_ % . /`, e.g. `%12`, `b3`, `W/Adam`) and binds it at
//! its first match in the section; later uses match the bound text only. `$_`
//! matches any token without binding. So `# check: $m = matmul` then
//! `# check: reduce_sum axes=[0] $m` says that the reduction reads that matmul,
//! whatever the node numbers are.
//!
//! A failure names the file, the line of the directive and the directive, and
//! shows the emitted text with the position where matching stood. Every file is
//! checked and all failures are reported together. `SPECC_FILETEST=text` runs
//! only the files whose path contains `text`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One directive, with the line of the file it is on.
#[derive(Clone, Debug, PartialEq)]
enum Directive {
    Check(Pattern),
    NextLine(Pattern),
    Not(Pattern),
}

#[derive(Clone, Debug, PartialEq)]
struct Located {
    line: usize,
    text: String,
    directive: Directive,
}

/// The directives of one `emit:` section.
#[derive(Clone, Debug, PartialEq)]
struct Section {
    stage: String,
    threads: u32,
    line: usize,
    directives: Vec<Located>,
}

#[derive(Clone, Debug, PartialEq)]
enum Piece {
    Literal(String),
    /// `$name`; `None` for `$_`.
    Var(Option<String>),
}

#[derive(Clone, Debug, PartialEq)]
struct Pattern(Vec<Piece>);

const STAGES: &[&str] = &["ast", "ir", "grad", "step", "plan", "clif"];

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '%' | '.' | '/')
}

impl Pattern {
    fn parse(text: &str) -> Result<Pattern, String> {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut chars = text.trim().chars().peekable();
        while let Some(c) = chars.next() {
            if c != '$' {
                literal.push(c);
                continue;
            }
            let mut name = String::new();
            while let Some(&n) = chars.peek() {
                if n.is_ascii_alphanumeric() || n == '_' {
                    name.push(n);
                    chars.next();
                } else {
                    break;
                }
            }
            if name.is_empty() || name.starts_with(|d: char| d.is_ascii_digit()) {
                return Err(format!("`$` must start a variable name in `{text}`"));
            }
            if !literal.is_empty() {
                pieces.push(Piece::Literal(std::mem::take(&mut literal)));
            }
            pieces.push(Piece::Var((name != "_").then_some(name)));
        }
        if !literal.is_empty() {
            pieces.push(Piece::Literal(literal));
        }
        if pieces.is_empty() {
            return Err("empty pattern".into());
        }
        Ok(Pattern(pieces))
    }

    /// Matches somewhere in `line`; returns the bindings it makes.
    fn find(&self, line: &str, vars: &HashMap<String, String>) -> Option<Vec<(String, String)>> {
        (0..=line.len())
            .filter(|&i| line.is_char_boundary(i))
            .find_map(|start| self.match_at(line, start, vars))
    }

    fn match_at(
        &self,
        line: &str,
        start: usize,
        vars: &HashMap<String, String>,
    ) -> Option<Vec<(String, String)>> {
        let mut at = start;
        let mut bound: Vec<(String, String)> = Vec::new();
        for piece in &self.0 {
            let rest = &line[at..];
            let known = match piece {
                Piece::Literal(s) => Some(s.as_str()),
                Piece::Var(Some(name)) => vars
                    .get(name)
                    .or_else(|| bound.iter().find(|(n, _)| n == name).map(|(_, v)| v))
                    .map(String::as_str),
                Piece::Var(None) => None,
            };
            let starts_token = line[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !is_token_char(c));
            match known {
                Some(text) => {
                    if !rest.starts_with(text) {
                        return None;
                    }
                    at += text.len();
                    // A variable matches whole tokens: `%1` is not in `%10`.
                    let ends_token = line[at..].chars().next().is_none_or(|c| !is_token_char(c));
                    if matches!(piece, Piece::Var(_)) && !(starts_token && ends_token) {
                        return None;
                    }
                }
                None => {
                    // A token starts here and is taken whole.
                    let len = rest
                        .char_indices()
                        .find(|&(_, c)| !is_token_char(c))
                        .map_or(rest.len(), |(i, _)| i);
                    if len == 0 || !starts_token {
                        return None;
                    }
                    if let Piece::Var(Some(name)) = piece {
                        bound.push((name.clone(), rest[..len].to_string()));
                    }
                    at += len;
                }
            }
        }
        Some(bound)
    }
}

/// Reads the directives of a filetest.
fn parse_directives(text: &str) -> Result<Vec<Section>, String> {
    let mut sections: Vec<Section> = Vec::new();
    let mut threads = 1;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let Some(comment) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let Some((key, value)) = comment.trim_start().split_once(':') else {
            continue;
        };
        let value = value.trim();
        let pattern = || Pattern::parse(value).map_err(|e| format!("line {n}: {e}"));
        let directive = match key {
            "emit" => {
                if !STAGES.contains(&value) {
                    return Err(format!("line {n}: unknown stage `{value}`"));
                }
                sections.push(Section {
                    stage: value.to_string(),
                    threads,
                    line: n,
                    directives: Vec::new(),
                });
                continue;
            }
            "threads" => {
                threads = value
                    .parse()
                    .map_err(|_| format!("line {n}: `threads: {value}` is not a number"))?;
                continue;
            }
            "check" => Directive::Check(pattern()?),
            "nextln" => Directive::NextLine(pattern()?),
            "not" => Directive::Not(pattern()?),
            _ => continue,
        };
        let Some(section) = sections.last_mut() else {
            return Err(format!("line {n}: `{key}:` before any `emit:`"));
        };
        section.directives.push(Located {
            line: n,
            text: format!("{key}: {value}"),
            directive,
        });
    }
    if sections.is_empty() {
        return Err("no `# emit: STAGE` directive".into());
    }
    if let Some(s) = sections.iter().find(|s| s.directives.is_empty()) {
        return Err(format!(
            "line {}: `emit: {}` checks nothing",
            s.line, s.stage
        ));
    }
    Ok(sections)
}

/// A failed directive: its line in the file, its text, and what went wrong.
#[derive(Debug, PartialEq)]
struct Failure {
    line: usize,
    directive: String,
    problem: String,
    /// The line of the emitted text where matching stood (1-based; 0: start).
    at: usize,
}

/// Matches a section's directives, in order, against the emitted text.
fn run_section(section: &Section, emitted: &str) -> Result<(), Failure> {
    let lines: Vec<&str> = emitted.lines().collect();
    let mut vars: HashMap<String, String> = HashMap::new();
    // The next line to search, and the line of the previous match.
    let mut pos = 0usize;
    let mut last: Option<usize> = None;
    let mut pending_not: Vec<&Located> = Vec::new();
    let fail = |d: &Located, problem: String, at: usize| Failure {
        line: d.line,
        directive: d.text.clone(),
        problem,
        at,
    };
    let check_nots = |pending: &mut Vec<&Located>,
                      vars: &HashMap<String, String>,
                      range: std::ops::Range<usize>|
     -> Result<(), Failure> {
        for d in pending.drain(..) {
            let Directive::Not(p) = &d.directive else {
                continue;
            };
            if let Some(k) = range.clone().find(|&k| p.find(lines[k], vars).is_some()) {
                return Err(fail(
                    d,
                    format!("matched line {}: `{}`", k + 1, lines[k].trim()),
                    k + 1,
                ));
            }
        }
        Ok(())
    };
    for d in &section.directives {
        let found = match &d.directive {
            Directive::Not(_) => {
                pending_not.push(d);
                continue;
            }
            Directive::Check(p) => (pos..lines.len())
                .find_map(|k| p.find(lines[k], &vars).map(|b| (k, b)))
                .ok_or_else(|| fail(d, format!("no match after line {pos}"), pos))?,
            Directive::NextLine(p) => {
                let Some(prev) = last else {
                    return Err(fail(d, "`nextln:` needs a match before it".into(), 0));
                };
                let k = prev + 1;
                let line = lines.get(k).copied().unwrap_or("");
                let b = p.find(line, &vars).ok_or_else(|| {
                    fail(d, format!("line {} is `{}`", k + 1, line.trim()), prev + 1)
                })?;
                (k, b)
            }
        };
        let (k, bindings) = found;
        check_nots(&mut pending_not, &vars, pos..k)?;
        vars.extend(bindings);
        last = Some(k);
        pos = k + 1;
    }
    check_nots(&mut pending_not, &vars, pos..lines.len())
}

fn filetest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/filetests")
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|e| e == "spec") {
            out.push(p);
        }
    }
}

fn emit(spec: &Path, stage: &str, threads: u32) -> Result<String, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_specc"))
        .args(["compile", "--emit", stage])
        .arg(spec.file_name().unwrap())
        .current_dir(spec.parent().unwrap())
        .env("SPECC_THREADS", threads.to_string())
        .env("NO_COLOR", "1")
        .output()
        .map_err(|e| format!("cannot run specc: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`specc compile --emit {stage}` failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| e.to_string())
}

/// The emitted text with line numbers and a marker at line `at`.
fn show(emitted: &str, at: usize) -> String {
    emitted
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let mark = if i + 1 == at { ">" } else { " " };
            format!("{mark}{:4} | {l}\n", i + 1)
        })
        .collect()
}

/// Runs one filetest; the error is the report to print.
fn run_file(path: &Path) -> Result<usize, String> {
    let name = path
        .strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap_or(path)
        .display()
        .to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{name}: {e}"))?;
    let sections = parse_directives(&text).map_err(|e| format!("{name}: {e}"))?;
    let mut checked = 0;
    for s in &sections {
        let emitted = emit(path, &s.stage, s.threads).map_err(|e| format!("{name}: {e}"))?;
        run_section(s, &emitted).map_err(|f| {
            format!(
                "{name}:{}: `{}` failed: {}\n--- `specc compile --emit {}` (threads {}) ---\n{}",
                f.line,
                f.directive,
                f.problem,
                s.stage,
                s.threads,
                show(&emitted, f.at)
            )
        })?;
        checked += s.directives.len();
    }
    Ok(checked)
}

#[test]
fn every_filetest_passes() {
    let mut files = Vec::new();
    collect(&filetest_dir(), &mut files);
    if let Ok(only) = std::env::var("SPECC_FILETEST") {
        files.retain(|f| f.to_string_lossy().contains(&only));
        assert!(
            !files.is_empty(),
            "no filetest matches SPECC_FILETEST={only}"
        );
    } else {
        assert!(files.len() >= 30, "only {} filetests found", files.len());
    }
    let mut failures = Vec::new();
    for f in &files {
        match run_file(f) {
            Ok(n) => assert!(n > 0),
            Err(report) => failures.push(report),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} filetests failed:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}

// The harness itself: directives must be able to fail, and say where.

const TEXT: &str = "%0 = input x : f32[B, 2]\n%1 = exp %0 : f32[B, 2]\n%2 = add %1, %0 : f32[B, 2]\n%3 = reduce_sum axes=[0] %2 : f32[2]\n";

fn section(directives: &str) -> Section {
    let spec = format!("# emit: step\n{directives}");
    parse_directives(&spec).unwrap().remove(0)
}

#[test]
fn variables_bind_once_and_then_must_agree() {
    let s = section("# check: $e = exp $x\n# nextln: add $e, $x\n# check: reduce_sum axes=[0] $_");
    assert_eq!(run_section(&s, TEXT), Ok(()));
    let s = section("# check: $e = exp $x\n# check: add $x, $e");
    let f = run_section(&s, TEXT).unwrap_err();
    assert_eq!((f.line, f.directive.as_str()), (3, "check: add $x, $e"));
    assert_eq!(f.problem, "no match after line 2");
}

#[test]
fn check_searches_forward_only() {
    let s = section("# check: reduce_sum\n# check: exp");
    let f = run_section(&s, TEXT).unwrap_err();
    assert_eq!(f.line, 3);
}

#[test]
fn nextln_must_be_the_next_line() {
    let s = section("# check: exp\n# nextln: reduce_sum");
    let f = run_section(&s, TEXT).unwrap_err();
    assert_eq!(f.problem, "line 3 is `%2 = add %1, %0 : f32[B, 2]`");
}

#[test]
fn not_covers_the_lines_up_to_the_next_match_or_the_end() {
    assert!(run_section(&section("# check: exp\n# not: input\n# check: add"), TEXT).is_ok());
    let s = section("# check: input\n# not: add\n# check: reduce_sum");
    let f = run_section(&s, TEXT).unwrap_err();
    assert_eq!((f.line, f.at), (3, 3));
    let f = run_section(&section("# check: exp\n# not: reduce_sum"), TEXT).unwrap_err();
    assert_eq!(f.at, 4);
}

#[test]
fn tokens_are_taken_whole() {
    // `$x` cannot match part of `%10`, nor a literal start inside a token.
    let p = Pattern::parse("= exp $x :").unwrap();
    assert_eq!(
        p.find("%1 = exp %10 : f32", &HashMap::new()),
        Some(vec![("x".into(), "%10".into())])
    );
    let vars = HashMap::from([("x".to_string(), "%1".to_string())]);
    assert_eq!(
        Pattern::parse("exp $x").unwrap().find("exp %10 :", &vars),
        None
    );
    assert_eq!(Pattern::parse("$x").unwrap().find("a%1 b", &vars), None);
    assert!(Pattern::parse("$x").unwrap().find("(%1)", &vars).is_some());
}

#[test]
fn malformed_directives_are_errors() {
    assert!(parse_directives("# check: x").is_err());
    assert!(parse_directives("# emit: steps\n# check: x").is_err());
    assert!(parse_directives("# emit: step\n").is_err());
    assert!(parse_directives("# emit: step\n# check: $1").is_err());
}
