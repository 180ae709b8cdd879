//! Where settings come from: a YAML config file (`--config`, paths relative
//! to its directory), `--set KEY=VALUE` and the dedicated flags, each read
//! into typed [`Setting`]s with errors that name the file, line and column
//! (or the `--set`, or the flag) and suggest the closest key.
//!
//! Invariants: reading never panics; a file larger than
//! [`MAX_CONFIG_BYTES`] is an error; every setting carries its [`Origin`].

use super::*;

/// The largest config file read: 1 MiB (a file that never ends, such as
/// `/dev/zero`, is an error, not a process that grows until it is killed).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Reads a config file into settings (paths made relative to its directory).
pub fn read_config_file(path: &Path) -> Result<Vec<Setting>, ConfigError> {
    use std::io::Read;
    let cannot = |e: String| format!("cannot read {}: {e}", path.display());
    let file = std::fs::File::open(path).map_err(|e| cannot(e.to_string()))?;
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| cannot(e.to_string()))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(cannot(format!(
            "the file is larger than 1 MiB ({MAX_CONFIG_BYTES} bytes), the limit for a run configuration"
        ))
        .into());
    }
    let text = String::from_utf8(bytes).map_err(|_| cannot("it is not UTF-8 text".into()))?;
    let name = path.display().to_string();
    let root = yaml::parse(&text).map_err(|e| format!("{name}:{e}"))?;
    let Some(root) = root else {
        return Ok(Vec::new());
    };
    let origin = |n: &Node| Origin::File {
        path: name.clone(),
        line: n.pos.line,
        col: n.pos.col,
    };
    let Kind::Map(entries) = &root.kind else {
        return Err(format!(
            "{}: a run configuration is a mapping of keys (`steps: 1000`), found {}",
            origin(&root),
            root.describe()
        )
        .into());
    };
    let base = path.parent().unwrap_or(Path::new(""));
    let mut out = Vec::new();
    for (k, v) in entries {
        let key = k.str().unwrap_or_default();
        let full = |s: &mut Setting| {
            if let Value::Path(p) = &mut s.value {
                *p = absolute(&base.join(&*p));
            }
        };
        if let Some(&(_, ty)) = top_keys().iter().find(|(n, _)| *n == key) {
            let mut s = typed("", key, ty, v, origin(v))?;
            full(&mut s);
            out.push(s);
            continue;
        }
        if key == "train" {
            // `train: { steps: 5 }` is the top-level keys, as in the spec's block.
            let Kind::Map(inner) = &v.kind else {
                return Err(format!(
                    "{}: `train` is a mapping of its settings (`train: {{ steps: 1000 }}`), found {}",
                    origin(v),
                    v.describe()
                )
                .into());
            };
            for (ik, iv) in inner {
                let ikey = ik.str().unwrap_or_default();
                out.push(train_setting(ikey, iv, origin(ik), origin(iv))?);
            }
            continue;
        }
        let sections = sections();
        let Some((section, keys)) = sections.iter().find(|(n, _)| *n == key) else {
            return Err(unknown_key(key, None, &origin(k)).into());
        };
        let Kind::Map(inner) = &v.kind else {
            if v.is_null() {
                continue;
            }
            return Err(format!(
                "{}: `{section}` is a mapping of its settings (`{section}: {{ key: value }}`), found {}",
                origin(v),
                v.describe()
            )
            .into());
        };
        for (ik, iv) in inner {
            let ikey = ik.str().unwrap_or_default();
            let mut s = section_setting(section, keys, ikey, iv, origin(ik), origin(iv))?;
            full(&mut s);
            out.push(s);
        }
    }
    Ok(out)
}

/// `train.KEY`: a top-level key of the `train` block (not `data`).
pub(super) fn train_setting(
    key: &str,
    v: &Node,
    at_key: Origin,
    at_value: Origin,
) -> Result<Setting, String> {
    match top_keys().iter().find(|(n, _)| *n == key && *n != "data") {
        Some(&(_, ty)) => typed("", key, ty, v, at_value),
        None => {
            let keys: Vec<&str> = top_keys()
                .iter()
                .map(|(k, _)| *k)
                .filter(|k| *k != "data")
                .collect();
            let mut msg = format!("{at_key}: unknown key `train.{key}`");
            if let Some(s) = closest(key, keys.iter().copied()) {
                msg += &format!("; did you mean `train.{s}`?");
            }
            Err(msg + &format!(" (keys of `train`: {})", keys.join(", ")))
        }
    }
}

/// One `section.key` value; `at_key` is where the key is (for unknown keys).
pub(super) fn section_setting(
    section: &str,
    keys: &[(&str, Ty)],
    key: &str,
    v: &Node,
    at_key: Origin,
    at_value: Origin,
) -> Result<Setting, String> {
    if section == "optimizer" {
        let value = if let Some(b) = v.bool() {
            Value::Bool(b)
        } else if let Some(x) = v.number() {
            finite(x, &format!("optimizer.{key}"), &at_value)?;
            Value::Number(x)
        } else {
            match v.str() {
                Some(t) if !v.is_null() && is_one_expression(t) => Value::Expr(t.to_string()),
                _ => {
                    return Err(format!(
                        "{at_value}: optimizer.{key} must be a number, `true`/`false` or one spec expression, found {}",
                        v.describe()
                    ))
                }
            }
        };
        return Ok(Setting {
            section: section.into(),
            key: key.into(),
            value,
            origin: at_value,
        });
    }
    let Some(&(_, ty)) = keys.iter().find(|(n, _)| *n == key) else {
        return Err(unknown_key(key, Some(section), &at_key));
    };
    typed(section, key, ty, v, at_value)
}

/// Whether `t` is exactly one spec expression (so an override cannot add
/// items to the spec).
pub(super) fn is_one_expression(t: &str) -> bool {
    let text = format!("v = {t}");
    match specc_grammar::parse(&text) {
        Ok(f) => {
            matches!(f.items.as_slice(), [Item::Let(b)] if b.value.span.end as usize == text.trim_end().len())
        }
        Err(_) => false,
    }
}

pub(super) fn finite(x: f64, key: &str, at: &Origin) -> Result<(), String> {
    if x.is_finite() {
        Ok(())
    } else {
        Err(format!("{at}: {key} must be a finite number, got {x}"))
    }
}

pub(super) fn unknown_key(key: &str, section: Option<&str>, at: &Origin) -> String {
    let candidates: Vec<String> = match section {
        None => top_keys()
            .iter()
            .map(|(k, _)| k.to_string())
            .chain(sections().iter().map(|(k, _)| k.to_string()))
            .collect(),
        Some(s) => sections()
            .iter()
            .find(|(n, _)| *n == s)
            .map(|(_, keys)| keys.iter().map(|(k, _)| k.to_string()).collect())
            .unwrap_or_default(),
    };
    let full = match section {
        Some(s) => format!("{s}.{key}"),
        None => key.to_string(),
    };
    let mut msg = format!("{at}: unknown key `{full}`");
    if let Some(s) = closest(key, candidates.iter().map(String::as_str)) {
        msg += &format!(
            "; did you mean `{}`?",
            match section {
                Some(sec) => format!("{sec}.{s}"),
                None => s.to_string(),
            }
        );
    }
    msg += &format!(
        " (keys{}: {})",
        section.map(|s| format!(" of `{s}`")).unwrap_or_default(),
        candidates.join(", ")
    );
    msg
}

/// A value of type `ty` from a YAML node.
pub(super) fn typed(
    section: &str,
    key: &str,
    ty: Ty,
    v: &Node,
    at: Origin,
) -> Result<Setting, String> {
    let full = if section.is_empty() {
        key.to_string()
    } else {
        format!("{section}.{key}")
    };
    let wrong = || {
        format!(
            "{at}: {full} must be {}, found {}",
            ty.words(),
            v.describe()
        )
    };
    let value = match ty {
        Ty::Int => Value::Int(v.int().ok_or_else(wrong)?),
        Ty::Number => {
            let x = v.number().ok_or_else(wrong)?;
            finite(x, &full, &at)?;
            Value::Number(x)
        }
        Ty::Bool => Value::Bool(v.bool().ok_or_else(wrong)?),
        Ty::Path => match v.str() {
            Some(s) if !v.is_null() && !s.is_empty() && !s.contains('\n') => Value::Path(s.into()),
            _ => return Err(wrong()),
        },
        Ty::Word => match v.str() {
            Some(s) if !v.is_null() && is_ident(s) => Value::Word(s.into()),
            _ => return Err(wrong()),
        },
        Ty::Names => {
            let items: Vec<&Node> = match &v.kind {
                Kind::Seq(items) => items.iter().collect(),
                Kind::Scalar { .. } if !v.is_null() => vec![v],
                _ => return Err(wrong()),
            };
            let mut names = Vec::new();
            for n in items {
                match n.str() {
                    Some(s) if is_ident(s) => names.push(s.to_string()),
                    _ => {
                        return Err(format!(
                            "{at}: {full} must be a list of names, but it holds {}",
                            n.describe()
                        ))
                    }
                }
            }
            Value::Names(names)
        }
    };
    Ok(Setting {
        section: section.into(),
        key: key.into(),
        value,
        origin: at,
    })
}

pub(super) fn is_ident(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

pub(super) fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// `--set KEY=VALUE`: the key as in a config file (`optimizer.learning_rate`,
/// `steps`), the value as YAML (`0.01`, `runs/x`, `[loss, h1]`).
pub fn parse_set(raw: &str) -> Result<Setting, String> {
    let origin = Origin::Set(raw.to_string());
    let Some((key, value)) = raw.split_once('=') else {
        return Err(format!(
            "--set {raw}: expected KEY=VALUE, e.g. --set optimizer.learning_rate=0.01"
        ));
    };
    let key = key.trim();
    let node = yaml::parse(value)
        .map_err(|e| format!("--set {raw}: the value is not valid YAML ({e})"))?
        .unwrap_or(Node {
            kind: Kind::Scalar {
                text: String::new(),
                plain: true,
            },
            pos: Default::default(),
        });
    let mut s = match key.split_once('.') {
        None => match top_keys().iter().find(|(n, _)| *n == key) {
            Some(&(_, ty)) => typed("", key, ty, &node, origin.clone())?,
            None => return Err(unknown_key(key, None, &origin)),
        },
        Some(("train", k)) => train_setting(k, &node, origin.clone(), origin.clone())?,
        Some((section, k)) => match sections().iter().find(|(n, _)| *n == section) {
            Some((section, keys)) => {
                section_setting(section, keys, k, &node, origin.clone(), origin.clone())?
            }
            None => return Err(unknown_key(section, None, &origin)),
        },
    };
    if let Value::Path(p) = &mut s.value {
        *p = absolute(p);
    }
    Ok(s)
}

pub(super) fn flag_settings(f: &Flags) -> Vec<Setting> {
    let mut out = Vec::new();
    let mut push = |section: &str, key: &str, value: Value, flag: &'static str| {
        out.push(Setting {
            section: section.into(),
            key: key.into(),
            value,
            origin: Origin::Flag(flag),
        })
    };
    if let Some(p) = &f.data {
        push("", "data", Value::Path(absolute(p)), "--data");
    }
    if let Some(n) = f.steps {
        push("", "steps", Value::Int(clamp_i64(n)), "--steps");
    }
    if let Some(x) = f.eval_fraction {
        push("", "eval_fraction", Value::Number(x), "--eval-fraction");
    }
    if let Some(p) = &f.checkpoint_dir {
        push(
            "checkpoint",
            "dir",
            Value::Path(absolute(p)),
            "--checkpoint-dir",
        );
    }
    if let Some(n) = f.checkpoint_every_steps {
        push(
            "checkpoint",
            "every_steps",
            Value::Int(clamp_i64(n)),
            "--checkpoint-every-steps",
        );
    }
    if let Some(x) = f.checkpoint_every_secs {
        push(
            "checkpoint",
            "every_secs",
            Value::Number(x),
            "--checkpoint-every-secs",
        );
    }
    if let Some(n) = f.keep {
        push("checkpoint", "keep", Value::Int(clamp_i64(n)), "--keep");
    }
    if let Some(h) = f.keep_every_n_hours {
        push(
            "checkpoint",
            "keep_every_n_hours",
            Value::Number(h),
            "--keep-every-n-hours",
        );
    }
    if let Some(p) = &f.summary_dir {
        push(
            "summaries",
            "dir",
            Value::Path(absolute(p)),
            "--summary-dir",
        );
    }
    out
}

pub(super) fn clamp_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
