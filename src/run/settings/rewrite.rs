//! Overrides applied to the spec's text: each setting replaces the value
//! written, or is added to its block or to the optimizer call, or a new
//! block is added at the end, so the rewritten spec is checked by sema as if
//! the user had written it.
//!
//! Invariants: an optimizer argument's name is checked against the
//! optimizer's table entry before the text changes; [`ValueSpans`] say where
//! each inserted value sits in the new text, so a diagnostic inside one can
//! name its origin.

use super::*;

/// A text edit of the spec: replace `start..end` with `text`; the inserted
/// value is `text[value]`, from `setting`.
pub(super) struct Edit {
    start: usize,
    end: usize,
    text: String,
    value: std::ops::Range<usize>,
    setting: usize,
}

/// (range of an inserted value in the new text, its origin, its key).
pub(super) type ValueSpans = Vec<(std::ops::Range<usize>, Origin, String)>;

/// Applies `settings` (except `data`) to the spec text.
pub(super) fn rewrite(
    src: &str,
    ast: &SpecFile,
    settings: &[Setting],
) -> Result<(String, ValueSpans), String> {
    let mut edits: Vec<Edit> = Vec::new();
    // New blocks, by section, in order of first appearance.
    let mut new_blocks: Vec<(String, Vec<(String, usize)>)> = Vec::new();
    for (i, s) in settings.iter().enumerate() {
        if s.section.is_empty() && s.key == "data" {
            continue;
        }
        let v = s.value.spec_text();
        if s.section == "optimizer" {
            edits.push(optimizer_edit(ast, s, v, i)?);
            continue;
        }
        let section = if s.section.is_empty() {
            "train"
        } else {
            s.section.as_str()
        };
        let block = ast
            .items
            .iter()
            .filter_map(Item::settings_block)
            .find(|(kw, _)| *kw == section)
            .map(|(_, b)| b);
        let Some(block) = block else {
            match new_blocks.iter_mut().find(|(n, _)| n == section) {
                Some((_, entries)) => entries.push((format!("{} = {v}", s.key), i)),
                None => new_blocks.push((section.into(), vec![(format!("{} = {v}", s.key), i)])),
            }
            continue;
        };
        let named = |k: &str| -> Option<&Arg> {
            block
                .entries
                .iter()
                .find(|a| a.name.as_ref().is_some_and(|n| n.name == k))
        };
        let other = match (section, s.key.as_str()) {
            ("train", "steps") => named("epochs"),
            ("train", "epochs") => named("steps"),
            _ => None,
        };
        if let Some(a) = named(&s.key) {
            let r = a.value.span.range();
            edits.push(Edit {
                start: r.start,
                end: r.end,
                value: 0..v.len(),
                text: v,
                setting: i,
            });
        } else if let Some(a) = other {
            // `steps` replaces `epochs` (and the reverse): one duration.
            let r = a.span.range();
            let text = format!("{} = {v}", s.key);
            edits.push(Edit {
                start: r.start,
                end: r.end,
                value: text.len() - v.len()..text.len(),
                text,
                setting: i,
            });
        } else {
            let (at, text) = match block.entries.last() {
                Some(last) => (last.span.end as usize, format!(", {} = {v}", s.key)),
                None => (
                    (block.span.end as usize).saturating_sub(1),
                    format!(" {} = {v} ", s.key),
                ),
            };
            let start = text.len() - v.len() - usize::from(block.entries.is_empty());
            edits.push(Edit {
                start: at,
                end: at,
                value: start..start + v.len(),
                text,
                setting: i,
            });
        }
    }
    edits.sort_by_key(|e| (e.start, e.end));
    let mut out = String::with_capacity(src.len() + 64);
    let mut values: ValueSpans = Vec::new();
    let mut cursor = 0;
    for e in &edits {
        if e.start < cursor {
            continue; // overlapping edits cannot arise from distinct keys
        }
        out.push_str(&src[cursor..e.start]);
        let base = out.len();
        out.push_str(&e.text);
        let s = &settings[e.setting];
        values.push((
            base + e.value.start..base + e.value.end,
            s.origin.clone(),
            s.dotted(),
        ));
        cursor = e.end;
    }
    out.push_str(&src[cursor..]);
    for (section, entries) in new_blocks {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&section);
        out.push_str(" { ");
        for (j, (text, i)) in entries.iter().enumerate() {
            if j > 0 {
                out.push_str(", ");
            }
            let s = &settings[*i];
            let value_len = s.value.spec_text().len();
            let end = out.len() + text.len();
            out.push_str(text);
            values.push((end - value_len..end, s.origin.clone(), s.dotted()));
        }
        out.push_str(" }\n");
    }
    Ok((out, values))
}

/// The edit of an `optimizer.KEY` override, checked against the optimizer's
/// table entry.
pub(super) fn optimizer_edit(
    ast: &SpecFile,
    s: &Setting,
    v: String,
    i: usize,
) -> Result<Edit, String> {
    let optimizers: Vec<&specc_grammar::ast::Call> = ast
        .items
        .iter()
        .filter_map(|it| match it {
            Item::Optimizer(c) => Some(c),
            _ => None,
        })
        .collect();
    if optimizers.len() > 1 {
        return Err(format!(
            "{}: `optimizer.{}`: the spec has {} optimizers (one per var_list); edit the spec to change one",
            s.origin,
            s.key,
            optimizers.len()
        ));
    }
    let Some(call) = optimizers.first().copied() else {
        return Err(format!(
            "{}: `optimizer.{}` overrides an argument of the optimizer, but the spec has no `optimizer`",
            s.origin, s.key
        ));
    };
    let name = call.func.name.as_str();
    // The arguments in signature order, and whether each is a float32.
    let args: Vec<(String, bool)> = match table::by_name(name) {
        Some(def) => def
            .args
            .iter()
            .map(|a| (a.name.to_string(), !matches!(a.kind, ArgKind::Flag)))
            .collect(),
        None => match defined_hypers(ast, name) {
            Some(hypers) => hypers.into_iter().map(|h| (h, true)).collect(),
            None => {
                return Err(format!(
                "{}: `optimizer.{}`: the spec's optimizer `{name}` is not an optimizer specc knows",
                s.origin, s.key
            ))
            }
        },
    };
    let Some(index) = args.iter().position(|a| a.0 == s.key) else {
        let names: Vec<&str> = args.iter().map(|a| a.0.as_str()).collect();
        let mut msg = format!("{}: `{name}` has no argument `{}`", s.origin, s.key);
        if let Some(c) = closest(&s.key, names.iter().copied()) {
            msg += &format!("; did you mean `optimizer.{c}`?");
        }
        msg += &format!(" (arguments of `{name}`: {})", names.join(", "));
        return Err(msg);
    };
    let v = match (&s.value, args[index].1) {
        // Schedules and numbers are float32: `5` is written `5.0`.
        (Value::Int(n), true) => format!("{:?}", *n as f64),
        _ => v,
    };
    let positional = call.args.iter().take_while(|a| a.name.is_none()).nth(index);
    let given = positional.or_else(|| {
        call.args
            .iter()
            .find(|a| a.name.as_ref().is_some_and(|n| n.name == s.key))
    });
    Ok(match given {
        Some(a) => {
            let r = a.value.span.range();
            Edit {
                start: r.start,
                end: r.end,
                value: 0..v.len(),
                text: v,
                setting: i,
            }
        }
        None => {
            let (at, text) = match call.args.last() {
                Some(last) => (last.span.end as usize, format!(", {} = {v}", s.key)),
                None => (
                    (call.span.end as usize).saturating_sub(1),
                    format!("{} = {v}", s.key),
                ),
            };
            Edit {
                start: at,
                end: at,
                value: text.len() - v.len()..text.len(),
                text,
                setting: i,
            }
        }
    })
}

/// The hyperparameters of the `optimizer_def` `name`: the spec's, else
/// specc's optimizer library's.
fn defined_hypers(ast: &SpecFile, name: &str) -> Option<Vec<String>> {
    let hypers = |items: &[Item]| {
        items.iter().find_map(|it| match it {
            Item::OptimizerDef(d) if d.name.name == name => {
                Some(d.params.iter().map(|p| p.name.name.clone()).collect())
            }
            _ => None,
        })
    };
    hypers(&ast.items).or_else(|| {
        let lib = specc_grammar::library::file("optimizers")?.parse().ok()?;
        hypers(&lib.items)
    })
}
