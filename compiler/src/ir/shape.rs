//! Static shapes with one symbolic batch dimension, and the shape rules of ops.
//!
//! Owns: [`Dim`], [`Shape`], [`DType`] and the fallible shape-inference
//! functions (`broadcast`, `matmul`, `reduce`, `reshape`, ...) that sema uses to
//! report errors and the graph builder uses to type nodes.
//! Invariants: a shape holds at most one [`Dim::Batch`]; every function here
//! returns `Err(message)` instead of panicking; messages are phrased for users.

use std::fmt;

/// One dimension: the symbolic batch size `B` or a fixed size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dim {
    Batch,
    Fixed(u32),
}

impl Dim {
    pub fn fixed(self) -> Option<u32> {
        match self {
            Dim::Batch => None,
            Dim::Fixed(n) => Some(n),
        }
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Batch => f.write_str("B"),
            Dim::Fixed(n) => write!(f, "{n}"),
        }
    }
}

/// Element types. Arithmetic is float32; int32 holds class ids and argmax results.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    I32,
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DType::F32 => "f32",
            DType::I32 => "i32",
        })
    }
}

/// A static shape. Row-major; the empty shape is a scalar.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Shape(pub Vec<Dim>);

impl Shape {
    pub fn scalar() -> Shape {
        Shape(Vec::new())
    }
    pub fn fixed(dims: &[u32]) -> Shape {
        Shape(dims.iter().map(|&d| Dim::Fixed(d)).collect())
    }
    pub fn rank(&self) -> usize {
        self.0.len()
    }
    pub fn is_scalar(&self) -> bool {
        self.0.is_empty()
    }
    pub fn has_batch(&self) -> bool {
        self.0.contains(&Dim::Batch)
    }
    /// Product of the fixed dimensions (the element count per unit of B),
    /// saturating at `u64::MAX` (sema refuses tensors beyond
    /// `sema::sizes::MAX_ELEMENTS`, so later stages never see a saturated count).
    pub fn fixed_numel(&self) -> u64 {
        self.0
            .iter()
            .filter_map(|d| d.fixed())
            .fold(1u64, |n, d| n.saturating_mul(u64::from(d)))
    }
    /// Element count for a given batch size (saturating, as [`Shape::fixed_numel`]).
    pub fn numel(&self, batch: u64) -> u64 {
        self.fixed_numel()
            .saturating_mul(if self.has_batch() { batch } else { 1 })
    }
    /// The dimensions as concrete sizes for a given batch size.
    pub fn concrete(&self, batch: u64) -> Vec<u64> {
        self.0
            .iter()
            .map(|d| match d {
                Dim::Batch => batch,
                Dim::Fixed(n) => u64::from(*n),
            })
            .collect()
    }
    pub fn dims(&self) -> &[Dim] {
        &self.0
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}

/// Normalizes a possibly negative axis against a rank.
pub fn axis(axis: i64, rank: usize) -> Result<usize, String> {
    let r = rank as i64;
    if axis < -r || axis >= r {
        return Err(if rank == 0 {
            format!("axis {axis} is out of range for a scalar (it has no axes)")
        } else {
            format!(
                "axis {axis} is out of range for rank {rank} (valid: {} to {})",
                -r,
                r - 1
            )
        });
    }
    Ok(if axis < 0 {
        (axis + r) as usize
    } else {
        axis as usize
    })
}

/// NumPy broadcasting of two shapes.
pub fn broadcast(a: &Shape, b: &Shape) -> Result<Shape, String> {
    let rank = a.rank().max(b.rank());
    let mut out = Vec::with_capacity(rank);
    for i in 0..rank {
        let (da, db) = (aligned_dim(a, rank, i), aligned_dim(b, rank, i));
        let d = match (da, db) {
            (x, y) if x == y => x,
            (Dim::Fixed(1), y) => y,
            (x, Dim::Fixed(1)) => x,
            _ => {
                return Err(format!(
                "shapes {a} and {b} do not broadcast: {da} vs {db} in the last-but-{} dimension",
                rank - 1 - i
            )
                .replace("last-but-0 dimension", "last dimension"))
            }
        };
        out.push(d);
    }
    let s = Shape(out);
    if s.0.iter().filter(|d| **d == Dim::Batch).count() > 1 {
        return Err(format!(
            "shapes {a} and {b} broadcast to {s}, which has the batch dimension twice"
        ));
    }
    Ok(s)
}

/// Dimension `i` of `s` right-aligned in a result of rank `rank` (missing leading dims are 1).
fn aligned_dim(s: &Shape, rank: usize, i: usize) -> Dim {
    let pad = rank - s.rank();
    if i < pad {
        Dim::Fixed(1)
    } else {
        s.0[i - pad]
    }
}

/// Whether `from` broadcasts to exactly `to`.
pub fn broadcasts_to(from: &Shape, to: &Shape) -> bool {
    from.rank() <= to.rank() && broadcast(from, to).map(|s| &s == to).unwrap_or(false)
}

/// Shape of a batched `a @ b` (`Op::BatchMatMul`): both operands lead with
/// the same `groups` group axes (`groups >= 1`), fixed or, as the first of
/// them only, the batch `B` (a product per example; then the rest of each
/// has no `B`); the result is the group axes and the `matmul` shape of the
/// operands without them.
pub fn batch_matmul(
    a: &Shape,
    b: &Shape,
    ta: bool,
    tb: bool,
    groups: usize,
) -> Result<Shape, String> {
    if groups == 0 || a.rank() < groups + 2 || b.rank() < groups + 2 {
        return Err(format!(
            "batch_matmul over {groups} group axes needs two batches of matrices (rank {} or more), got {a} and {b}",
            groups + 2
        ));
    }
    let (ga, gb) = (&a.0[..groups], &b.0[..groups]);
    if ga != gb {
        return Err(format!("batch_matmul groups differ: {a} @ {b}"));
    }
    if ga[1..].contains(&Dim::Batch) {
        return Err(format!(
            "batch_matmul has the batch dimension as a group axis other than the first: {a} @ {b}"
        ));
    }
    if ga[0] == Dim::Batch
        && (a.0[groups..].contains(&Dim::Batch) || b.0[groups..].contains(&Dim::Batch))
    {
        return Err(format!(
            "batch_matmul has the batch dimension inside a group: {a} @ {b}"
        ));
    }
    let inner = matmul(
        &Shape(a.0[groups..].to_vec()),
        &Shape(b.0[groups..].to_vec()),
        ta,
        tb,
    )?;
    Ok(Shape(ga.iter().copied().chain(inner.0).collect()))
}

/// Shape of `a @ b` for rank-2 operands with optional transposes.
pub fn matmul(a: &Shape, b: &Shape, ta: bool, tb: bool) -> Result<Shape, String> {
    if a.rank() < 2 || b.rank() < 2 {
        return Err(format!(
            "matmul needs two matrices (rank 2), got {} and {}",
            a, b
        ));
    }
    // Each operand is the matrix [product of its leading dims, its last dim]
    // (a convolution's patches [B, OH, OW, K] are the matrix [B*OH*OW, K]).
    let split = |s: &Shape| (s.0[..s.rank() - 1].to_vec(), vec![s.0[s.rank() - 1]]);
    let ((ar, ac), (br, bc)) = (split(a), split(b));
    let (m, ka) = if ta { (ac, ar) } else { (ar, ac) };
    let (kb, n) = if tb { (bc, br) } else { (br, bc) };
    if ka != kb {
        let dims = |d: &[Dim]| {
            let parts: Vec<String> = d.iter().map(Dim::to_string).collect();
            parts.join("x")
        };
        return Err(format!(
            "matmul inner dimensions differ: {a} @ {b} contracts {} with {}",
            dims(&ka),
            dims(&kb)
        ));
    }
    let s = Shape(m.into_iter().chain(n).collect());
    if s.0.iter().filter(|d| **d == Dim::Batch).count() > 1 {
        return Err(format!(
            "matmul of {a} and {b} would have the batch dimension twice"
        ));
    }
    Ok(s)
}

/// Shape after reducing `axes` (sorted, deduplicated), without keepdims.
pub fn reduce(s: &Shape, axes: &[usize]) -> Shape {
    Shape(
        s.0.iter()
            .enumerate()
            .filter(|(i, _)| !axes.contains(i))
            .map(|(_, d)| *d)
            .collect(),
    )
}

/// Shape with `axes` kept as size 1 (keepdims).
pub fn reduce_keepdims(s: &Shape, axes: &[usize]) -> Shape {
    Shape(
        s.0.iter()
            .enumerate()
            .map(|(i, d)| if axes.contains(&i) { Dim::Fixed(1) } else { *d })
            .collect(),
    )
}

/// Checks that a reshape preserves the element count for every batch size,
/// and the batch dimension's place in the element order: as many elements
/// before `B` in `to` as in `from` (`[3, B, 4]` to `[3, B, 2, 2]` or
/// `[1, 3, B, 4]`), so each example's elements stay its own whatever the
/// batch size (`[3, B, 4]` to `[B, 12]` would mix them: a transpose moves B).
pub fn reshape(from: &Shape, to: &Shape) -> Result<(), String> {
    if from.has_batch() != to.has_batch() || from.fixed_numel() != to.fixed_numel() {
        return Err(format!(
            "cannot reshape {from} ({} elements) to {to} ({} elements)",
            count(from),
            count(to)
        ));
    }
    if to.0.iter().filter(|d| **d == Dim::Batch).count() > 1 {
        return Err(format!("{to} has the batch dimension twice"));
    }
    let (before_from, before_to) = (before_batch(from), before_batch(to));
    if before_from != before_to {
        return Err(format!(
            "cannot reshape {from} to {to}: the batch dimension B has {before_from} \
             element(s) before it in {from} and {before_to} in {to}, so the examples \
             of a batch would mix"
        ));
    }
    Ok(())
}

/// The number of elements before the batch dimension in the row-major order
/// of `s` (the fixed dimensions before `B`; all of them without one).
pub fn before_batch(s: &Shape) -> u64 {
    s.0.iter()
        .take_while(|d| **d != Dim::Batch)
        .filter_map(|d| d.fixed())
        .fold(1u64, |n, d| n.saturating_mul(u64::from(d)))
}

fn count(s: &Shape) -> String {
    if s.has_batch() {
        format!("B*{}", s.fixed_numel())
    } else {
        s.fixed_numel().to_string()
    }
}

/// Shape after permuting axes; `perm` must be a permutation of 0..rank.
pub fn transpose(s: &Shape, perm: &[usize]) -> Result<Shape, String> {
    let mut seen = vec![false; s.rank()];
    if perm.len() != s.rank() {
        return Err(format!(
            "perm has {} entries but the tensor {s} has rank {}",
            perm.len(),
            s.rank()
        ));
    }
    for &p in perm {
        if p >= s.rank() || seen[p] {
            return Err(format!(
                "perm {perm:?} is not a permutation of 0..{}",
                s.rank()
            ));
        }
        seen[p] = true;
    }
    Ok(Shape(perm.iter().map(|&p| s.0[p]).collect()))
}

/// Shape of concatenating `parts` along `axis`.
pub fn concat(parts: &[&Shape], axis: usize) -> Result<Shape, String> {
    let first = parts.first().ok_or("concat needs at least one tensor")?;
    let mut total = 0u32;
    for p in parts {
        if p.rank() != first.rank() {
            return Err(format!(
                "concat of tensors with different ranks: {first} and {p}"
            ));
        }
        for (i, (a, b)) in first.0.iter().zip(p.0.iter()).enumerate() {
            if i != axis && a != b {
                return Err(format!(
                    "concat along axis {axis}: shapes {first} and {p} differ in dimension {i}"
                ));
            }
        }
        match p.0[axis] {
            Dim::Fixed(n) => total += n,
            Dim::Batch => return Err("cannot concatenate along the batch dimension".to_string()),
        }
    }
    let mut out = first.0.clone();
    out[axis] = Dim::Fixed(total);
    Ok(Shape(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(dims: &[Option<u32>]) -> Shape {
        Shape(
            dims.iter()
                .map(|d| d.map_or(Dim::Batch, Dim::Fixed))
                .collect(),
        )
    }

    #[test]
    fn batch_matmul_over_several_group_axes() {
        let (b, f) = (None, Some);
        let a = s(&[b, f(2), f(3), f(4)]);
        let c = s(&[b, f(2), f(4), f(5)]);
        assert_eq!(
            batch_matmul(&a, &c, false, false, 2),
            Ok(s(&[b, f(2), f(3), f(5)]))
        );
        assert_eq!(
            batch_matmul(&a, &a, true, false, 2),
            Ok(s(&[b, f(2), f(4), f(4)]))
        );
        // One group axis: the rest of each operand is a matrix as `matmul`
        // sees it (the Winograd products' `[G, N, TH, TW, C] @ [G, C, O]`).
        let v = s(&[f(4), b, f(2), f(2), f(3)]);
        let u = s(&[f(4), f(3), f(6)]);
        assert_eq!(
            batch_matmul(&v, &u, false, false, 1),
            Ok(s(&[f(4), b, f(2), f(2), f(6)]))
        );
        // Group axes that differ, `B` after the first, too few axes.
        assert!(batch_matmul(&a, &s(&[b, f(3), f(4), f(5)]), false, false, 2).is_err());
        let late = s(&[f(2), b, f(3), f(4)]);
        assert!(batch_matmul(&late, &s(&[f(2), b, f(4), f(5)]), false, false, 2).is_err());
        assert!(batch_matmul(&u, &u, false, false, 2).is_err());
        assert!(batch_matmul(&a, &c, false, false, 0).is_err());
    }
}
