//! Resolving `init_from_checkpoint`'s assignment map against a checkpoint
//! (applying it to a session is the run's, `specc::run::restore`, through
//! the one checkpoint restore, `Session::restore_selected`).
//!
//! Owns: TF's rules of `tf.compat.v1.train.init_from_checkpoint`
//! (`_init_from_checkpoint` in `checkpoint_utils.py`): entries are taken in
//! the order of their checkpoint side; an entry whose spec side names a
//! parameter maps that one tensor to it; otherwise the spec side is a scope
//! (`"new/"`, or `"/"` for every parameter) and the checkpoint side must be a
//! scope too (`"old/"`, or `"/"` for the checkpoint's root): every parameter
//! under the scope takes the tensor of the same name under the checkpoint
//! scope. A later entry for the same parameter wins, as in TF (it sets the
//! initializer again).
//!
//! Invariants: every returned pair names a tensor of the checkpoint and a
//! parameter of the model with the same shape; errors name the tensor, the
//! parameter, both shapes where they differ, and the checkpoint.

use std::fmt;

/// One tensor of the checkpoint assigned to one parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    /// The tensor's name in the checkpoint.
    pub tensor: String,
    /// The parameter's (TF) name in the model.
    pub param: String,
}

/// A name and a shape: a checkpoint's tensor or a model's parameter.
#[derive(Clone, Copy, Debug)]
pub struct Named<'a> {
    pub name: &'a str,
    pub shape: &'a [u64],
}

/// Why an assignment map does not fit a checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WarmStartError(pub String);

impl fmt::Display for WarmStartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WarmStartError {}

fn shape_text(s: &[u64]) -> String {
    let d: Vec<String> = s.iter().map(|d| d.to_string()).collect();
    format!("[{}]", d.join(", "))
}

/// The (tensor, parameter) pairs `assignment_map` assigns, in TF's order.
/// `checkpoint` names the checkpoint in messages.
pub fn resolve(
    assignment_map: &[(String, String)],
    tensors: &[Named<'_>],
    params: &[Named<'_>],
    checkpoint: &str,
) -> Result<Vec<Assignment>, WarmStartError> {
    let tensor = |name: &str| tensors.iter().find(|t| t.name == name);
    let param = |name: &str| params.iter().find(|p| p.name == name);
    let not_found = |name: &str, what: String| {
        let mut msg = format!(
            "init_from_checkpoint: tensor `{name}`{what} is not in checkpoint {checkpoint}"
        );
        if let Some(s) = crate::suggest::closest(name, tensors.iter().map(|t| t.name)) {
            msg += &format!("; did you mean `{s}`?");
        }
        WarmStartError(msg)
    };
    let mut entries: Vec<&(String, String)> = assignment_map.iter().collect();
    // TF sorts by the checkpoint side only (a stable sort).
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out: Vec<Assignment> = Vec::new();
    let mut assign = |t: &Named<'_>, p: &Named<'_>| -> Result<(), WarmStartError> {
        if t.shape != p.shape {
            return Err(WarmStartError(format!(
                "init_from_checkpoint: the shape of parameter `{}` ({}) does not match the shape of tensor `{}` ({}) in checkpoint {checkpoint}",
                p.name,
                shape_text(p.shape),
                t.name,
                shape_text(t.shape)
            )));
        }
        out.retain(|a| a.param != p.name);
        out.push(Assignment {
            tensor: t.name.to_string(),
            param: p.name.to_string(),
        });
        Ok(())
    };
    for (ckpt_name, spec_name) in entries {
        if let Some(p) = param(spec_name) {
            let t = tensor(ckpt_name).ok_or_else(|| not_found(ckpt_name, String::new()))?;
            assign(t, p)?;
            continue;
        }
        let scope = spec_name.rfind('/').map_or("", |i| &spec_name[..i]);
        if !ckpt_name.ends_with('/') {
            return Err(WarmStartError(format!(
                "init_from_checkpoint: `{spec_name}` is neither a parameter nor a scope (`scope/`), so `{ckpt_name}` cannot map to it; a scope maps to a scope: `\"old_scope/\": \"new_scope/\"`"
            )));
        }
        let mut under: Vec<&Named<'_>> = params
            .iter()
            .filter(|p| scope.is_empty() || p.name.starts_with(&format!("{scope}/")))
            .collect();
        under.sort_by(|a, b| a.name.cmp(b.name));
        for p in under {
            let mut full = p.name[scope.len()..].to_string();
            if spec_name != "/" {
                full.remove(0);
            }
            if ckpt_name != "/" {
                full = format!("{ckpt_name}{full}");
            }
            if full.ends_with('/') {
                full.pop();
            }
            let t = tensor(&full).ok_or_else(|| {
                not_found(&full, format!(" (for `{}` under `{ckpt_name}`)", p.name))
            })?;
            assign(t, p)?;
        }
    }
    Ok(out)
}
