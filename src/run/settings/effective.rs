//! What a run ends up with: the effective value of every key a run
//! configuration may set ([`effective`]), and the run's record
//! ([`record`], written to `run.yaml`).
//!
//! Invariant: every key of the schema has an effective value (the unit
//! test below checks it).

use super::*;

/// The effective configuration as (dotted key, YAML value) pairs, by the
/// keys of a config file, in the schema's order ([`top_keys`],
/// [`sections`]): the `train` settings (one duration: `steps` or
/// `epochs`), every section of `config`, the optimizer and its overridden
/// arguments, and `init_from_checkpoint`.
pub fn effective(model: &Model, config: &RunConfig, settings: &[Setting]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (key, _) in top_keys() {
        if let Some(v) = effective_value(model, config, "", key) {
            out.push((key.to_string(), v));
        }
    }
    for (section, keys) in sections() {
        if section == "optimizer" {
            out.push((
                "optimizer.name".into(),
                yaml::quote(model.optimizer().name()),
            ));
            for st in settings.iter().filter(|s| s.section == "optimizer") {
                out.push((format!("optimizer.{}", st.key), st.value.yaml_text()));
            }
            continue;
        }
        for (key, _) in keys {
            if let Some(v) = effective_value(model, config, section, key) {
                out.push((format!("{section}.{key}"), v));
            }
        }
    }
    if let Some(w) = &config.warm_start {
        let q = |s: &str| yaml::quote(s);
        let path = |p: &std::path::Path| q(&p.display().to_string());
        let Some(s) = &w.settings else {
            out.push(("init_from_checkpoint.path".into(), path(&w.path)));
            let m: Vec<String> = w
                .assignment_map
                .iter()
                .map(|(a, b)| format!("{}: {}", q(a), q(b)))
                .collect();
            out.push((
                "init_from_checkpoint.assignment_map".into(),
                format!("{{{}}}", m.join(", ")),
            ));
            return out;
        };
        use specc_runtime::config::warm_start_settings::VarsToWarmStart;
        out.push(("warm_start.path".into(), path(&w.path)));
        let vars = match &s.vars_to_warm_start {
            VarsToWarmStart::Pattern(p) => q(p),
            VarsToWarmStart::Patterns(ps) => {
                let l: Vec<String> = ps.iter().map(|p| q(p)).collect();
                format!("[{}]", l.join(", "))
            }
            VarsToWarmStart::OnlyVocab => "null".into(),
        };
        out.push(("warm_start.vars_to_warm_start".into(), vars));
        let infos: Vec<String> = s
            .var_name_to_vocab_info
            .iter()
            .map(|(n, v)| {
                format!(
                    "{}: {{new_vocab: {}, new_vocab_size: {}, num_oov_buckets: {}, old_vocab: {}, old_vocab_size: {}, backup_initializer: {}, axis: {}}}",
                    q(n),
                    path(&v.new_vocab),
                    v.new_vocab_size,
                    v.num_oov_buckets,
                    path(&v.old_vocab),
                    v.old_vocab_size.map_or(-1, |n| n as i64),
                    v.backup_initializer
                        .as_ref()
                        .map_or("null".to_string(), |i| q(&format!("{i:?}"))),
                    v.axis
                )
            })
            .collect();
        out.push((
            "warm_start.var_name_to_vocab_info".into(),
            format!("{{{}}}", infos.join(", ")),
        ));
        let prev: Vec<String> = s
            .var_name_to_prev_var_name
            .iter()
            .map(|(a, b)| format!("{}: {}", q(a), q(b)))
            .collect();
        out.push((
            "warm_start.var_name_to_prev_var_name".into(),
            format!("{{{}}}", prev.join(", ")),
        ));
    }
    out
}

/// The effective value of one configurable key as YAML text (`section` empty
/// for a top-level key); `None` for the duration the spec does not use
/// (`epochs` when it trains for `steps`, and the reverse).
pub(super) fn effective_value(
    model: &Model,
    config: &RunConfig,
    section: &str,
    key: &str,
) -> Option<String> {
    use specc_runtime::train::Duration;
    let path = |p: &Option<PathBuf>| {
        p.as_ref().map_or("null".to_string(), |p| {
            yaml::quote(&p.display().to_string())
        })
    };
    let opt = |x: Option<String>| x.unwrap_or_else(|| "null".into());
    let t = &model.train;
    let (c, s, l) = (&config.checkpoint, &config.summaries, &config.logging);
    Some(match (section, key) {
        ("", "data") => path(&config.data),
        ("", "steps") => match t.duration {
            Duration::Steps(s) => s.to_string(),
            Duration::Epochs(_) => return None,
        },
        ("", "epochs") => match t.duration {
            Duration::Epochs(e) => e.to_string(),
            Duration::Steps(_) => return None,
        },
        ("", "batch") => t.batch.to_string(),
        ("", "shuffle") => t.shuffle.to_string(),
        ("", "seed") => t.seed.to_string(),
        ("", "eval_fraction") => format!("{:?}", t.eval_fraction),
        ("", "split_seed") => t.split_seed.to_string(),
        ("checkpoint", "dir") => path(&c.dir),
        ("checkpoint", "every_steps") => opt(c.every_steps.map(|x| x.to_string())),
        ("checkpoint", "every_secs") => opt(c.every_secs.map(|x| format!("{x:?}"))),
        ("checkpoint", "keep") => c.keep.to_string(),
        ("checkpoint", "keep_every_n_hours") => opt(c.keep_every_n_hours.map(|x| format!("{x:?}"))),
        ("summaries", "dir") => path(&s.dir),
        ("summaries", "every_steps") => opt(s.every_steps.map(|x| x.to_string())),
        ("summaries", "histograms") => s.histograms.to_string(),
        ("summaries", "gradient_histograms") => s.gradient_histograms.to_string(),
        ("summaries", "histogram_tensors") => format!("[{}]", s.histogram_tensors.join(", ")),
        ("summaries", "image_tensors") => format!("[{}]", s.image_tensors.join(", ")),
        ("summaries", "max_images") => s.max_images.to_string(),
        ("logging", "every_steps") => opt(l.every_steps.map(|x| x.to_string())),
        ("logging", "every_secs") => opt(l.every_secs.map(|x| format!("{x:?}"))),
        ("logging", "tensors") => format!("[{}]", l.tensors.join(", ")),
        ("evaluate", "every_steps") => opt(config.evaluate.every_steps.map(|x| x.to_string())),
        // A key of the schema without a value here: `every_key_has_an_effective_value`.
        _ => return None,
    })
}

/// [`record`] without the data file (nothing read): the spec as written,
/// the effective configuration and the overrides.
pub fn config_record(resolved: &Resolved, spec_path: &Path) -> RunRecord {
    let mut r = RunRecord::new(spec_path, &resolved.original.text);
    r.config = effective(&resolved.model, &resolved.config, &resolved.settings);
    r.overrides = resolved
        .settings
        .iter()
        .map(|s| (s.dotted(), s.value.yaml_text()))
        .collect();
    r
}

/// The record of a resolved run for `run.yaml`: the spec as written, the
/// effective configuration, the overrides, and the data file (size and
/// sha256; a synthetic source has none). `version` is specc's.
pub fn record(resolved: &Resolved, spec_path: &Path, version: &str) -> Result<RunRecord, String> {
    let mut r = config_record(resolved, spec_path);
    r.specc_version = version.to_string();
    let data = match (&resolved.config.data, &resolved.model.data.source) {
        (Some(p), _) => Some(p.clone()),
        (None, Source::Csv { path, .. }) => {
            Some(spec_path.parent().unwrap_or(Path::new("")).join(path))
        }
        (None, Source::Synthetic(_) | Source::Stream(_) | Source::Images(_)) => None,
    };
    if let Some(p) = data {
        r.data.push(DataRecord::of(&p)?);
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The record names every key a run configuration may set (the one
    /// duration aside): [`effective_value`] covers the schema.
    #[test]
    fn every_key_has_an_effective_value() {
        let src = SourceFile::new(
            "tiny.spec",
            "data synthetic(rows = 8, features = 2)\nlabel label: int\n\
             features { x = numeric(x0..x1) }\nparams { W: [2, 2] = zeros }\n\
             loss = mean(sparse_softmax_cross_entropy(label, x @ W))\n\
             optimizer gradient_descent(0.1)\ntrain { batch = 4, steps = 2 }\n",
        );
        let model = specc_compiler::check(&src).expect("the spec checks");
        let config = RunConfig::default();
        let mut missing = Vec::new();
        for (key, _) in top_keys() {
            if key != "epochs" && effective_value(&model, &config, "", key).is_none() {
                missing.push(key.to_string());
            }
        }
        for (section, keys) in sections() {
            for (key, _) in keys {
                if effective_value(&model, &config, section, key).is_none() {
                    missing.push(format!("{section}.{key}"));
                }
            }
        }
        assert!(missing.is_empty(), "no effective value for {missing:?}");
    }
}
