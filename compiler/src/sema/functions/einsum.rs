//! `einsum(equation, a)` and `einsum(equation, a, b)`, as `tf.einsum`.
//!
//! Owns: the equation's grammar (operands' subscripts of letters `a`-`z`,
//! `A`-`Z`, separated by `,`, then `->` and the result's; without `->` the
//! result is the letters used once, in alphabetical order, as NumPy's and
//! TF's), its checks against the operands, and its lowering to primitive
//! ops, so gradients, TF Lite export and codegen are those of the ops:
//! - a letter of one operand only, not in the result, is summed first
//!   (`Reduce`);
//! - one operand: a transpose to the result's order;
//! - two: the letters in both operands and the result are the batch (group)
//!   axes, those in both but not the result contracted, the others each
//!   operand's free axes; each operand is transposed and reshaped into a
//!   batch of matrices (`[batch.., M, K]` and `[batch.., K, N]`, or their
//!   transposes where that is the operand's own order), multiplied by
//!   `Op::BatchMatMul` over the batch axes (or `Op::MatMul` without any),
//!   and the product reshaped and transposed to the result's order.
//!
//! Invariants: every check is made before a node is built (caret errors:
//! `einsum-equation` for the equation itself, `wrong-arity` for the operand
//! count, `bad-shape` for an operand's rank or a letter's sizes,
//! `unsupported-argument` for what specc does not lower: `...`, a letter
//! twice in one operand, three or more operands); no transpose moves the
//! batch `B` (an equation that needs it moved is an `unsupported-argument`
//! error for now); `B` is never merged with another axis by a reshape.

use specc_grammar::ast::{Call, Expr, Span};
use specc_grammar::{Code, Diagnostic};

use crate::ir::{Dim, NodeId, Shape};
use crate::sema::args::{self, Bound};
use crate::sema::expr::{Lowerer, R};

/// A parsed equation: each operand's letters, and the result's.
#[derive(Debug, PartialEq)]
struct Equation {
    inputs: Vec<Vec<u8>>,
    output: Vec<u8>,
}

/// An error in the equation text: its code, the character it points at
/// (an index into the equation), the message and the caret's label.
#[derive(Debug)]
struct EquationError {
    code: Code,
    at: Option<usize>,
    message: String,
    label: String,
}

fn equation_error(at: Option<usize>, message: String, label: &str) -> EquationError {
    EquationError {
        code: Code::EinsumEquation,
        at,
        message,
        label: label.into(),
    }
}

/// Parses an equation; spaces are ignored.
fn parse(text: &str) -> Result<Equation, EquationError> {
    if let Some(i) = text.find("...") {
        return Err(EquationError {
            code: Code::UnsupportedArgument,
            at: Some(i),
            message: "einsum's `...` (broadcast axes) is not supported".into(),
            label: "an ellipsis".into(),
        });
    }
    let (left, right) = match text.find("->") {
        Some(i) => {
            if let Some(j) = text[i + 2..].find("->") {
                return Err(equation_error(
                    Some(i + 2 + j),
                    "an einsum equation has one `->`".into(),
                    "a second `->`",
                ));
            }
            (&text[..i], Some((i + 2, &text[i + 2..])))
        }
        None => (text, None),
    };
    // Each operand's letters, and where each starts in `text`.
    let mut inputs = Vec::new();
    let mut starts = Vec::new();
    let mut start = 0;
    for part in left.split(',') {
        inputs.push(letters(part, start)?);
        starts.push(start);
        start += part.len() + 1;
    }
    for (k, s) in inputs.iter().enumerate() {
        if let Some((i, &c)) = s.iter().enumerate().find(|(i, c)| s[..*i].contains(c)) {
            let at = starts[k] + letter_position(&left[starts[k]..], i);
            return Err(EquationError {
                code: Code::UnsupportedArgument,
                at: Some(at),
                message: format!(
                    "the letter `{}` twice in one operand (a diagonal or a trace) is not supported",
                    c as char
                ),
                label: "the second time".into(),
            });
        }
    }
    let output = match right {
        Some((at, out)) => {
            let o = letters(out, at)?;
            for (i, &c) in o.iter().enumerate() {
                let pos = at + letter_position(out, i);
                if o[..i].contains(&c) {
                    return Err(equation_error(
                        Some(pos),
                        format!("the letter `{}` twice in einsum's result", c as char),
                        "the second time",
                    ));
                }
                if !inputs.iter().any(|s| s.contains(&c)) {
                    return Err(equation_error(
                        Some(pos),
                        format!(
                            "the letter `{}` of einsum's result is in no operand",
                            c as char
                        ),
                        "not in an operand",
                    ));
                }
            }
            o
        }
        None => {
            let all: Vec<u8> = inputs.concat();
            let mut once: Vec<u8> = all
                .iter()
                .copied()
                .filter(|c| all.iter().filter(|d| *d == c).count() == 1)
                .collect();
            once.sort_unstable();
            once
        }
    };
    Ok(Equation { inputs, output })
}

/// The byte position in `part` of its `i`-th letter (spaces skipped).
fn letter_position(part: &str, i: usize) -> usize {
    part.char_indices()
        .filter(|(_, c)| !c.is_whitespace())
        .nth(i)
        .map_or(0, |(p, _)| p)
}

/// The letters of one subscript (`at`: where it starts in the equation).
fn letters(part: &str, at: usize) -> Result<Vec<u8>, EquationError> {
    let mut out = Vec::new();
    for (i, c) in part.char_indices() {
        if c.is_ascii_alphabetic() {
            out.push(c as u8);
        } else if !c.is_whitespace() {
            return Err(equation_error(
                Some(at + i),
                format!("`{c}` is not a subscript of an einsum equation"),
                "not a letter",
            ));
        }
    }
    Ok(out)
}

/// The span of character `at` of the string literal `e` holding `text`
/// (the whole literal when it has escapes, whose offsets differ).
fn char_span(e: &Expr, text: &str, at: Option<usize>) -> Span {
    let (s, end) = (e.span.start as usize, e.span.end as usize);
    match at {
        Some(i) if end - s == text.len() + 2 && i < text.len() => {
            let w = text[i..].chars().next().map_or(1, char::len_utf8);
            Span::new(s + 1 + i, s + 1 + i + w)
        }
        _ => e.span,
    }
}

/// The merged size of `dims` as one axis: their product when all are
/// fixed (and below 2^32), `B` alone, or `None` (`B` with other axes, or
/// too large).
fn merged(dims: &[Dim]) -> Option<Dim> {
    match dims {
        [Dim::Batch] => Some(Dim::Batch),
        _ => dims
            .iter()
            .try_fold(1u32, |p, d| d.fixed().and_then(|n| p.checked_mul(n)))
            .map(Dim::Fixed),
    }
}

/// The permutation taking `from`'s letters to `to`'s order.
fn perm(from: &[u8], to: &[u8]) -> Vec<usize> {
    to.iter()
        .map(|c| {
            from.iter()
                .position(|d| d == c)
                .expect("a letter of the operand")
        })
        .collect()
}

fn is_identity(p: &[usize]) -> bool {
    p.iter().enumerate().all(|(i, &q)| i == q)
}

/// The lowering's state: the operands' sizes by letter, and the spans its
/// errors point at.
struct Einsum<'l, 'a> {
    lw: &'l mut Lowerer<'a>,
    sizes: [Option<Dim>; 128],
    call: Span,
    equation: Span,
}

pub(super) fn lower_einsum(lw: &mut Lowerer, _: &Bound, c: &Call) -> R<NodeId> {
    let (positional, _) = args::bind_variadic("einsum", c, "equation, inputs", &[])?;
    let Some((eq, operands)) = positional.split_first() else {
        return Err(Diagnostic::new(
            Code::MissingArgument,
            c.span,
            "`einsum` needs an equation and one or two operands",
        )
        .with_label("no equation")
        .with_help("signature: einsum(equation, inputs..)"));
    };
    let text = args::eval_string(eq)?;
    let equation = parse(text).map_err(|e| {
        let d = Diagnostic::new(e.code, char_span(eq, text, e.at), e.message).with_label(e.label);
        if e.code == Code::EinsumEquation {
            d.with_help("subscripts are letters `a`-`z`, `A`-`Z`, one per axis; operands are separated by `,`, the result follows `->`: `btd,de->bte`")
        } else {
            d
        }
    })?;
    if operands.is_empty() {
        return Err(Diagnostic::new(
            Code::WrongArity,
            c.span,
            format!("einsum of `{text}` without operands"),
        )
        .with_label("einsum takes one or two operands after the equation"));
    }
    if let Some(third) = operands.get(2) {
        return Err(Diagnostic::new(
            Code::UnsupportedArgument,
            third.span,
            format!("einsum of {} operands", operands.len()),
        )
        .with_label("einsum takes one or two operands")
        .with_help("write an einsum of three operands as two einsums of two"));
    }
    if equation.inputs.len() != operands.len() {
        let n = equation.inputs.len();
        return Err(Diagnostic::new(
            Code::WrongArity,
            c.span,
            format!(
                "the equation `{text}` has {n} operand{}, but {} {} given",
                if n == 1 { "" } else { "s" },
                operands.len(),
                if operands.len() == 1 { "is" } else { "are" }
            ),
        )
        .with_label(format!(
            "{} operand{}",
            operands.len(),
            if operands.len() == 1 { "" } else { "s" }
        ))
        .with_secondary(
            eq.span,
            format!("{n} operand{} here", if n == 1 { "" } else { "s" }),
        ));
    }
    let mut xs = Vec::new();
    for o in operands.iter() {
        xs.push(lw.float(o)?);
    }
    let mut e = Einsum {
        lw,
        sizes: [None; 128],
        call: c.span,
        equation: eq.span,
    };
    e.check_sizes(&equation, &xs, operands, text)?;
    e.lower(equation, xs)
}

impl Einsum<'_, '_> {
    fn size(&self, c: u8) -> Dim {
        self.sizes[usize::from(c)].expect("every letter has a size")
    }

    fn dims(&self, letters: &[u8]) -> Vec<Dim> {
        letters.iter().map(|&c| self.size(c)).collect()
    }

    /// Each operand's rank is its letter count; a letter has one size.
    fn check_sizes(&mut self, eq: &Equation, xs: &[NodeId], es: &[&Expr], text: &str) -> R<()> {
        let mut first: [Option<usize>; 128] = [None; 128];
        for (k, (s, &x)) in eq.inputs.iter().zip(xs).enumerate() {
            let shape = self.lw.g.shape(x).clone();
            if shape.rank() != s.len() {
                return Err(Diagnostic::new(
                    Code::BadShape,
                    es[k].span,
                    format!(
                        "einsum's operand {} is {shape} (rank {}), but its subscripts `{}` name {} axes",
                        k + 1,
                        shape.rank(),
                        String::from_utf8_lossy(s),
                        s.len()
                    ),
                )
                .with_label(format!("this is {shape}"))
                .with_secondary(self.equation, format!("the equation `{text}`")));
            }
            for (&c, &d) in s.iter().zip(&shape.0) {
                let slot = usize::from(c);
                match self.sizes[slot] {
                    Some(prev) if prev != d => {
                        let j = first[slot].expect("a sized letter's operand");
                        return Err(Diagnostic::new(
                            Code::BadShape,
                            es[k].span,
                            format!(
                                "einsum's letter `{}` is {prev} in operand {} but {d} in operand {}",
                                c as char,
                                j + 1,
                                k + 1
                            ),
                        )
                        .with_label(format!("this is {shape}"))
                        .with_secondary(es[j].span, format!("this is {}", self.lw.g.shape(xs[j])))
                        .with_help("a letter in two places is one axis, of one size"));
                    }
                    _ => {
                        self.sizes[slot] = Some(d);
                        first[slot].get_or_insert(k);
                    }
                }
            }
        }
        Ok(())
    }

    /// An error about an equation specc cannot lower yet.
    fn unsupported(&self, message: String, help: &str) -> Diagnostic {
        Diagnostic::new(Code::UnsupportedArgument, self.equation, message)
            .with_label("this equation")
            .with_secondary(self.call, "in this einsum")
            .with_help(help.to_string())
    }

    /// `x` (whose axes are `from`'s letters) transposed to `to`'s order;
    /// an error if that moves the batch `B`.
    fn transpose(&mut self, x: NodeId, from: &[u8], to: &[u8]) -> R<NodeId> {
        let p = perm(from, to);
        let shape = self.lw.g.shape(x);
        if let Some(b) = shape.0.iter().position(|&d| d == Dim::Batch) {
            if p[b] != b {
                return Err(self.unsupported(
                    format!(
                        "this einsum moves the batch axis `B` (letter `{}`): axes `{}` to `{}`",
                        from[b] as char,
                        String::from_utf8_lossy(from),
                        String::from_utf8_lossy(to)
                    ),
                    "transposes that move `B` are not supported yet; keep `B`'s letter where it is in the operands and the result",
                ));
            }
        }
        Ok(self.lw.g.transpose(x, &p))
    }

    /// `x` reshaped to `dims`.
    fn reshape(&mut self, x: NodeId, dims: Vec<Dim>) -> NodeId {
        self.lw.g.reshape(x, &Shape(dims))
    }

    /// The merged size of the letters `ls` as one axis, or an error if that
    /// merges `B` with another axis.
    fn merged(&self, ls: &[u8]) -> R<Dim> {
        let dims = self.dims(ls);
        merged(&dims).ok_or_else(|| {
            if !dims.contains(&Dim::Batch) {
                return self.unsupported(
                    format!(
                        "the axes `{}` of this einsum merge into one of over 2^32 elements",
                        String::from_utf8_lossy(ls)
                    ),
                    "einsum lowers to matrix products, whose sides are below 2^32",
                );
            }
            self.unsupported(
                format!(
                    "this einsum would merge the batch axis `B` with the axes `{}` into one",
                    String::from_utf8_lossy(ls)
                ),
                "einsum lowers to matrix products; `B` can be a batch axis, or a free or contracted axis alone",
            )
        })
    }

    fn lower(&mut self, eq: Equation, xs: Vec<NodeId>) -> R<NodeId> {
        let out = eq.output;
        // A letter of one operand only, not in the result: summed first.
        let mut ops: Vec<(NodeId, Vec<u8>)> = Vec::new();
        for (k, (s, &x)) in eq.inputs.iter().zip(&xs).enumerate() {
            let elsewhere = |c: &u8| {
                out.contains(c)
                    || eq
                        .inputs
                        .iter()
                        .enumerate()
                        .any(|(j, o)| j != k && o.contains(c))
            };
            let axes: Vec<usize> = (0..s.len()).filter(|&i| !elsewhere(&s[i])).collect();
            let kept: Vec<u8> = s.iter().copied().filter(|c| elsewhere(c)).collect();
            ops.push((self.lw.g.reduce_sum(x, &axes), kept));
        }
        let batched: Vec<u8> = ops
            .iter()
            .flat_map(|(_, s)| s.iter().copied())
            .filter(|&c| self.size(c) == Dim::Batch)
            .collect();
        if batched.iter().any(|&c| c != batched[0]) {
            return Err(self.unsupported(
                "two letters of this einsum are the batch axis `B`".into(),
                "the result would have `B` twice, or `B` would be matched with `B` of another example",
            ));
        }
        let mut ops = ops.into_iter();
        let (a, sa) = ops.next().expect("one operand at least");
        let Some((b, sb)) = ops.next() else {
            return self.transpose(a, &sa, &out);
        };
        self.product((a, sa), (b, sb), &out)
    }

    /// The product of two operands (each with no letter of its own outside
    /// the result), in the result's order `out`.
    fn product(&mut self, a: (NodeId, Vec<u8>), b: (NodeId, Vec<u8>), out: &[u8]) -> R<NodeId> {
        let in_both = |c: &u8| a.1.contains(c) && b.1.contains(c);
        let batch: Vec<u8> = out.iter().copied().filter(in_both).collect();
        let is_b = |c: &u8| self.sizes[usize::from(*c)] == Some(Dim::Batch);
        // The operand whose free letters come first in the result (the one
        // with `B` free, if any) is the left one.
        let free = |s: &[u8]| -> Vec<u8> {
            out.iter()
                .copied()
                .filter(|c| s.contains(c) && !batch.contains(c))
                .collect()
        };
        let first_free = |s: &[u8]| {
            free(s)
                .first()
                .and_then(|c| out.iter().position(|d| d == c))
        };
        let swap = if free(&b.1).iter().any(is_b) {
            true
        } else if free(&a.1).iter().any(is_b) {
            false
        } else {
            match (first_free(&a.1), first_free(&b.1)) {
                (Some(i), Some(j)) => j < i,
                (None, Some(_)) => true,
                _ => false,
            }
        };
        let ((x, sx), (y, sy)) = if swap { (b, a) } else { (a, b) };
        let (lfree, rfree) = (free(&sx), free(&sy));
        // Contracted letters in the left operand's order, `B` first.
        let mut contracted: Vec<u8> = sx
            .iter()
            .copied()
            .filter(|c| sy.contains(c) && !out.contains(c))
            .collect();
        contracted.sort_by_key(|c| !is_b(c));
        let product_letters: Vec<u8> = [&batch[..], &lfree, &rfree].concat();
        let b_contracted = contracted.iter().any(is_b);
        let (m, k, n) = (
            self.merged(&lfree),
            self.merged(&contracted),
            self.merged(&rfree),
        );
        let p = if !batch.is_empty() {
            let (m, k, n) = (m?, k?, n?);
            let bd = self.dims(&batch);
            let with = |dims: &[Dim]| -> Vec<Dim> { bd.iter().chain(dims).copied().collect() };
            // Each operand in its own order where a transpose flag allows.
            let (x, ta) = self.matrices(
                x,
                &sx,
                &batch,
                &lfree,
                &contracted,
                with(&[m, k]),
                with(&[k, m]),
            )?;
            let (y, tb) = self.matrices(
                y,
                &sy,
                &batch,
                &contracted,
                &rfree,
                with(&[k, n]),
                with(&[n, k]),
            )?;
            let groups = u8::try_from(batch.len()).map_err(|_| {
                self.unsupported(
                    "an einsum of over 255 batch axes".into(),
                    "use fewer batch axes",
                )
            })?;
            self.lw.g.grouped_matmul(x, y, ta, tb, groups)
        } else if b_contracted {
            // `B` summed over: `x'ᵀ y'` with the contracted axes leading
            // (the rows of both matrices).
            let (m, n) = (m?, n?);
            let cd = self.dims(&contracted);
            let with = |d: Dim| -> Vec<Dim> { cd.iter().copied().chain([d]).collect() };
            let x = self.transpose(x, &sx, &[&contracted[..], &lfree].concat())?;
            let x = self.reshape(x, with(m));
            let y = self.transpose(y, &sy, &[&contracted[..], &rfree].concat())?;
            let y = self.reshape(y, with(n));
            self.lw.g.matmul(x, y, true, false)
        } else {
            // `[lfree.., K] @ [K, N]`: the left operand's free axes stay
            // (one of them may be `B`), the rest merge.
            let (k, n) = (k?, n?);
            let x = self.transpose(x, &sx, &[&lfree[..], &contracted].concat())?;
            let mut rows = self.dims(&lfree);
            if rows.is_empty() {
                rows.push(Dim::Fixed(1));
            }
            rows.push(k);
            let x = self.reshape(x, rows);
            let (y, tb) =
                self.matrices(y, &sy, &[], &contracted, &rfree, vec![k, n], vec![n, k])?;
            self.lw.g.matmul(x, y, false, tb)
        };
        let dims = self.dims(&product_letters);
        let p = self.reshape(p, dims);
        self.transpose(p, &product_letters, out)
    }

    /// Operand `x` (letters `s`) as a batch of matrices: transposed to
    /// `[batch, rows, cols]` and reshaped to `plain`, or, when that transpose
    /// is not the identity and `[batch, cols, rows]` is, reshaped to
    /// `flipped` with the transpose flag set.
    #[allow(clippy::too_many_arguments)]
    fn matrices(
        &mut self,
        x: NodeId,
        s: &[u8],
        batch: &[u8],
        rows: &[u8],
        cols: &[u8],
        plain: Vec<Dim>,
        flipped: Vec<Dim>,
    ) -> R<(NodeId, bool)> {
        let straight = [batch, rows, cols].concat();
        let turned = [batch, cols, rows].concat();
        if !is_identity(&perm(s, &straight)) && is_identity(&perm(s, &turned)) {
            return Ok((self.reshape(x, flipped), true));
        }
        let x = self.transpose(x, s, &straight)?;
        Ok((self.reshape(x, plain), false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> (Vec<String>, String) {
        let e = parse(text).unwrap();
        let ins = e
            .inputs
            .into_iter()
            .map(|s| String::from_utf8(s).unwrap())
            .collect::<Vec<_>>();
        (ins, String::from_utf8(e.output).unwrap())
    }

    #[test]
    fn equations_parse_with_explicit_and_implicit_results() {
        assert_eq!(
            ok("btd,de->bte"),
            (vec!["btd".into(), "de".into()], "bte".into())
        );
        assert_eq!(ok("ij->ji"), (vec!["ij".into()], "ji".into()));
        assert_eq!(ok("ij, jk"), (vec!["ij".into(), "jk".into()], "ik".into()));
        assert_eq!(ok("ba,ca"), (vec!["ba".into(), "ca".into()], "bc".into()));
        assert_eq!(ok("i,i->"), (vec!["i".into(), "i".into()], String::new()));
    }

    #[test]
    fn malformed_equations_point_at_their_character() {
        let err = |t: &str| {
            let e = parse(t).unwrap_err();
            (e.code, e.at)
        };
        assert_eq!(err("ij,j1->i"), (Code::EinsumEquation, Some(4)));
        assert_eq!(err("ij->i->j"), (Code::EinsumEquation, Some(5)));
        assert_eq!(err("ij,jk->iz"), (Code::EinsumEquation, Some(8)));
        assert_eq!(err("ij,jk->ii"), (Code::EinsumEquation, Some(8)));
        assert_eq!(err("...ij,jk->...ik"), (Code::UnsupportedArgument, Some(0)));
        assert_eq!(err("ij,jj->i"), (Code::UnsupportedArgument, Some(4)));
    }

    #[test]
    fn merged_axes_keep_b_alone() {
        assert_eq!(merged(&[Dim::Fixed(2), Dim::Fixed(3)]), Some(Dim::Fixed(6)));
        assert_eq!(merged(&[]), Some(Dim::Fixed(1)));
        assert_eq!(merged(&[Dim::Batch]), Some(Dim::Batch));
        assert_eq!(merged(&[Dim::Batch, Dim::Fixed(2)]), None);
    }
}
