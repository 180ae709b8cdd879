//! A reference interpreter of the IR in float64.
//!
//! Owns: the plain meaning of every op, written as directly as possible. It
//! is the oracle for tests (finite-difference gradient checks, JIT-vs-reference
//! comparisons) and for `specc gradcheck`; it is never on a training path.
//! Invariant: evaluates exactly the ops' definitions; no fusion, no tricks.

mod recurrence;

use crate::ir::{BinaryOp, DType, Graph, NodeId, Op, ReduceKind, UnaryOp, Window, WinogradTile};

/// A dense row-major tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub dims: Vec<usize>,
    pub data: Vec<f64>,
}

impl Tensor {
    pub fn new(dims: Vec<usize>, data: Vec<f64>) -> Tensor {
        debug_assert_eq!(dims.iter().product::<usize>(), data.len());
        Tensor { dims, data }
    }
    pub fn scalar(v: f64) -> Tensor {
        Tensor {
            dims: vec![],
            data: vec![v],
        }
    }
}

fn strides(dims: &[usize]) -> Vec<usize> {
    let mut s = vec![1; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * dims[i + 1];
    }
    s
}

/// Multi-index of a linear index.
fn unravel(mut i: usize, dims: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; dims.len()];
    for d in (0..dims.len()).rev() {
        if dims[d] > 0 {
            idx[d] = i % dims[d];
            i /= dims[d];
        }
    }
    idx
}

/// The values of the graph's inputs, variables and scalars for one evaluation.
pub struct Env<'a> {
    pub inputs: &'a [Tensor],
    pub vars: &'a [Tensor],
    pub batch: usize,
    pub global_step: f64,
}

/// Evaluates `roots` (and everything they need).
pub fn eval(g: &Graph, env: &Env, roots: &[NodeId]) -> Vec<Tensor> {
    let live = g.reachable(roots);
    let mut vals: Vec<Option<Tensor>> = vec![None; g.len()];
    for (id, node) in g.nodes() {
        if !live[id.index()] {
            continue;
        }
        let dims: Vec<usize> = node
            .shape
            .concrete(env.batch as u64)
            .iter()
            .map(|&d| d as usize)
            .collect();
        let arg = |k: usize| {
            vals[node.inputs[k].index()]
                .as_ref()
                .expect("topological order")
        };
        let v = match &node.op {
            Op::Input(i) => env.inputs[*i as usize].clone(),
            Op::Var(i) => env.vars[*i as usize].clone(),
            Op::Scalar(b) => Tensor::scalar(f32::from_bits(*b) as f64),
            Op::Tensor(i) => Tensor::new(
                dims.clone(),
                g.consts[*i as usize]
                    .values
                    .iter()
                    .map(|&x| x as f64)
                    .collect(),
            ),
            Op::Iota { axis, .. } => {
                let n: usize = dims.iter().product();
                Tensor::new(
                    dims.clone(),
                    (0..n)
                        .map(|i| unravel(i, &dims)[*axis as usize] as f64)
                        .collect(),
                )
            }
            Op::BatchSize => Tensor::scalar(env.batch as f64),
            Op::GlobalStep => Tensor::scalar(env.global_step),
            // The reference is one process: its rows are the global batch's.
            Op::FirstRow => Tensor::scalar(0.0),
            // The reference computes the training functions' values.
            Op::Training => Tensor::scalar(1.0),
            Op::UniformHash { seed } => {
                let (i, s) = (arg(0), arg(1));
                Tensor::new(
                    i.dims.clone(),
                    i.data
                        .iter()
                        .zip(&s.data)
                        .map(|(&i, &s)| uniform_hash(*seed, i as f32, s as f32))
                        .collect(),
                )
            }
            Op::Unary(u) => {
                let x = arg(0);
                Tensor::new(
                    x.dims.clone(),
                    x.data.iter().map(|&a| unary(*u, a)).collect(),
                )
            }
            Op::Binary(b) => {
                let (x, y) = (arg(0), arg(1));
                Tensor::new(
                    x.dims.clone(),
                    x.data
                        .iter()
                        .zip(&y.data)
                        .map(|(&a, &c)| binary(*b, a, c))
                        .collect(),
                )
            }
            Op::Select => {
                let (c, a, b) = (arg(0), arg(1), arg(2));
                Tensor::new(
                    a.dims.clone(),
                    (0..a.data.len())
                        .map(|i| {
                            if c.data[i] != 0.0 {
                                a.data[i]
                            } else {
                                b.data[i]
                            }
                        })
                        .collect(),
                )
            }
            Op::Cast(t) => {
                let x = arg(0);
                let f = |a: f64| match t {
                    DType::F32 => a,
                    DType::I32 => a.trunc(),
                };
                Tensor::new(x.dims.clone(), x.data.iter().map(|&a| f(a)).collect())
            }
            Op::BroadcastTo(_) => broadcast(arg(0), &dims),
            Op::Reduce { kind, axes } => reduce(arg(0), axes, *kind),
            Op::ArgMax { axis } => argmax(arg(0), *axis as usize),
            Op::MatMul { ta, tb } => matmul(arg(0), arg(1), *ta, *tb),
            Op::Reshape(_) | Op::StopGradient => Tensor::new(dims.clone(), arg(0).data.clone()),
            Op::NormalNoise { seed } => Tensor::scalar(normal_noise(*seed, arg(0).data[0])),
            Op::Transpose(perm) => transpose(arg(0), perm),
            Op::Patches { window, pad } => {
                patches(arg(0), window, f64::from(f32::from_bits(*pad)), &dims)
            }
            Op::PatchesGrad(window) => patches_grad(arg(0), window, &dims),
            Op::WinogradInput(window, tile) => {
                winograd_map(arg(0), window, *tile, &dims, true, true)
            }
            Op::WinogradInputGrad(window, tile) => {
                winograd_map(arg(0), window, *tile, &dims, true, false)
            }
            Op::WinogradOutput(window, tile) => {
                winograd_map(arg(0), window, *tile, &dims, false, false)
            }
            Op::WinogradOutputGrad(window, tile) => {
                winograd_map(arg(0), window, *tile, &dims, false, true)
            }
            Op::Recurrence { cell, operands } | Op::RecurrenceGrad { cell, operands } => {
                let args: Vec<&Tensor> = (0..node.inputs.len()).map(arg).collect();
                let grad = matches!(node.op, Op::RecurrenceGrad { .. });
                recurrence::eval(cell, *operands, grad, &args, &dims)
            }
            Op::BatchMatMul { ta, tb, groups } => {
                batch_matmul(arg(0), arg(1), *ta, *tb, usize::from(*groups), &dims)
            }
            Op::Concat { axis } => {
                let parts: Vec<&Tensor> = (0..node.inputs.len()).map(arg).collect();
                concat(&parts, *axis as usize, &dims)
            }
            Op::Slice { begin, .. } => {
                let x = arg(0);
                let n: usize = dims.iter().product();
                let xs = strides(&x.dims);
                Tensor::new(
                    dims.clone(),
                    (0..n)
                        .map(|i| {
                            let idx = unravel(i, &dims);
                            let off: usize = idx
                                .iter()
                                .zip(begin)
                                .zip(&xs)
                                .map(|((a, b), s)| (a + *b as usize) * s)
                                .sum();
                            x.data[off]
                        })
                        .collect(),
                )
            }
            Op::Gather => rows::gather(arg(0), arg(1), &dims),
            Op::ScatterAdd => rows::scatter_add(arg(0), arg(1), arg(2)),
            Op::FirstOccurrence { .. } => rows::first_occurrence(arg(0)),
            Op::SumDuplicates => rows::sum_duplicates(arg(0), arg(1)),
            Op::ScatterRows => rows::scatter_rows(arg(0), arg(1), arg(2), arg(3)),
            Op::Pad { before, .. } => {
                let x = arg(0);
                let n: usize = dims.iter().product();
                let mut out = vec![0.0; n];
                let os = strides(&dims);
                for (i, &v) in x.data.iter().enumerate() {
                    let idx = unravel(i, &x.dims);
                    let off: usize = idx
                        .iter()
                        .zip(before)
                        .zip(&os)
                        .map(|((a, b), s)| (a + *b as usize) * s)
                        .sum();
                    out[off] = v;
                }
                Tensor::new(dims.clone(), out)
            }
        };
        vals[id.index()] = Some(v);
    }
    roots
        .iter()
        .map(|r| vals[r.index()].clone().expect("root evaluated"))
        .collect()
}

pub fn unary(u: UnaryOp, a: f64) -> f64 {
    match u {
        UnaryOp::Neg => -a,
        UnaryOp::Exp => a.exp(),
        UnaryOp::Log => a.ln(),
        UnaryOp::Log1p => a.ln_1p(),
        UnaryOp::Sqrt => a.sqrt(),
        UnaryOp::Square => a * a,
        UnaryOp::Abs => a.abs(),
        UnaryOp::Sign => {
            if a > 0.0 {
                1.0
            } else if a < 0.0 {
                -1.0
            } else {
                0.0
            }
        }
        UnaryOp::Relu => {
            if a > 0.0 {
                a
            } else {
                0.0
            }
        }
        UnaryOp::Sigmoid => 1.0 / (1.0 + (-a).exp()),
        UnaryOp::Tanh => a.tanh(),
        UnaryOp::Softplus => a.max(0.0) + (-a.abs()).exp().ln_1p(),
        UnaryOp::Recip => 1.0 / a,
        UnaryOp::Floor => a.floor(),
        UnaryOp::Ceil => a.ceil(),
        UnaryOp::Sin => a.sin(),
        UnaryOp::Cos => a.cos(),
    }
}

pub fn binary(b: BinaryOp, a: f64, c: f64) -> f64 {
    let t = |x: bool| if x { 1.0 } else { 0.0 };
    match b {
        BinaryOp::Add => a + c,
        BinaryOp::Sub => a - c,
        BinaryOp::Mul => a * c,
        BinaryOp::Div => a / c,
        BinaryOp::Max => {
            if a >= c {
                a
            } else {
                c
            }
        }
        BinaryOp::Min => {
            if a <= c {
                a
            } else {
                c
            }
        }
        BinaryOp::Pow => a.powf(c),
        BinaryOp::Gt => t(a > c),
        BinaryOp::Ge => t(a >= c),
        BinaryOp::Lt => t(a < c),
        BinaryOp::Le => t(a <= c),
        BinaryOp::Eq => t(a == c),
        BinaryOp::Ne => t(a != c),
    }
}

fn broadcast(x: &Tensor, dims: &[usize]) -> Tensor {
    let pad = dims.len() - x.dims.len();
    let xs = strides(&x.dims);
    let n: usize = dims.iter().product();
    Tensor::new(
        dims.to_vec(),
        (0..n)
            .map(|i| {
                let idx = unravel(i, dims);
                let mut off = 0;
                for (k, &d) in x.dims.iter().enumerate() {
                    if d != 1 {
                        off += idx[pad + k] * xs[k];
                    }
                }
                x.data[off]
            })
            .collect(),
    )
}

fn reduce(x: &Tensor, axes: &[u8], kind: ReduceKind) -> Tensor {
    let out_dims: Vec<usize> = x
        .dims
        .iter()
        .enumerate()
        .filter(|(i, _)| !axes.contains(&(*i as u8)))
        .map(|(_, &d)| d)
        .collect();
    let n: usize = out_dims.iter().product();
    let init = match kind {
        ReduceKind::Sum => 0.0,
        ReduceKind::Max => f64::NEG_INFINITY,
    };
    let mut out = vec![init; n];
    let os = strides(&out_dims);
    for (i, &v) in x.data.iter().enumerate() {
        let idx = unravel(i, &x.dims);
        let mut off = 0;
        let mut k = 0;
        for (d, &ix) in idx.iter().enumerate() {
            if !axes.contains(&(d as u8)) {
                off += ix * os[k];
                k += 1;
            }
        }
        out[off] = match kind {
            ReduceKind::Sum => out[off] + v,
            ReduceKind::Max => out[off].max(v),
        };
    }
    Tensor::new(out_dims, out)
}

fn argmax(x: &Tensor, axis: usize) -> Tensor {
    let out_dims: Vec<usize> = x
        .dims
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != axis)
        .map(|(_, &d)| d)
        .collect();
    let n: usize = out_dims.iter().product();
    let mut best = vec![(f64::NEG_INFINITY, 0usize); n];
    let mut seen = vec![false; n];
    let os = strides(&out_dims);
    for (i, &v) in x.data.iter().enumerate() {
        let idx = unravel(i, &x.dims);
        let mut off = 0;
        let mut k = 0;
        for (d, &ix) in idx.iter().enumerate() {
            if d != axis {
                off += ix * os[k];
                k += 1;
            }
        }
        if !seen[off] || v > best[off].0 {
            best[off] = (v, idx[axis]);
            seen[off] = true;
        }
    }
    Tensor::new(out_dims, best.iter().map(|b| b.1 as f64).collect())
}

fn matmul(a: &Tensor, b: &Tensor, ta: bool, tb: bool) -> Tensor {
    // Each operand is the matrix [product of its leading dims, its last dim].
    let matrix = |t: &Tensor| {
        let cols = *t.dims.last().expect("a matmul operand has rank 2 or more");
        (t.data.len() / cols.max(1), cols)
    };
    let ((ar, ac), (br, bc)) = (matrix(a), matrix(b));
    let (m, k) = if ta { (ac, ar) } else { (ar, ac) };
    let n = if tb { br } else { bc };
    let mut dims: Vec<usize> = if ta {
        vec![ac]
    } else {
        a.dims[..a.dims.len() - 1].to_vec()
    };
    if tb {
        dims.extend(&b.dims[..b.dims.len() - 1]);
    } else {
        dims.push(bc);
    }
    let at = |i: usize, p: usize| {
        if ta {
            a.data[p * m + i]
        } else {
            a.data[i * k + p]
        }
    };
    let bt = |p: usize, j: usize| {
        if tb {
            b.data[j * k + p]
        } else {
            b.data[p * n + j]
        }
    };
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            out[i * n + j] = (0..k).map(|p| at(i, p) * bt(p, j)).sum();
        }
    }
    Tensor::new(dims, out)
}

fn transpose(x: &Tensor, perm: &[u8]) -> Tensor {
    let dims: Vec<usize> = perm.iter().map(|&p| x.dims[p as usize]).collect();
    let xs = strides(&x.dims);
    let n: usize = dims.iter().product();
    Tensor::new(
        dims.clone(),
        (0..n)
            .map(|i| {
                let idx = unravel(i, &dims);
                let off: usize = idx.iter().zip(perm).map(|(a, &p)| a * xs[p as usize]).sum();
                x.data[off]
            })
            .collect(),
    )
}

fn concat(parts: &[&Tensor], axis: usize, dims: &[usize]) -> Tensor {
    let n: usize = dims.iter().product();
    let mut out = vec![0.0; n];
    let os = strides(dims);
    let mut offset = 0;
    for p in parts {
        for (i, &v) in p.data.iter().enumerate() {
            let mut idx = unravel(i, &p.dims);
            idx[axis] += offset;
            let off: usize = idx.iter().zip(&os).map(|(a, s)| a * s).sum();
            out[off] = v;
        }
        offset += p.dims[axis];
    }
    Tensor::new(dims.to_vec(), out)
}

/// The reference of `Op::NormalNoise`: Box–Muller on outputs 2s+1, 2s+2 of
/// splitmix64 stream `seed`, uniforms as 24-bit floats in (0, 1] and [0, 1).
pub fn normal_noise(seed: u64, step: f64) -> f64 {
    let s = step.max(0.0) as u64;
    let z1 = specc_runtime::prng::SplitMix64::output(seed, 2 * s + 1);
    let z2 = specc_runtime::prng::SplitMix64::output(seed, 2 * s + 2);
    let u1 = ((z1 >> 40) + 1) as f64 / 16_777_216.0;
    let u2 = (z2 >> 40) as f64 / 16_777_216.0;
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// The row-indexed ops: row `r` of a tensor is its elements `r * len .. (r + 1) * len`.
/// A negative id is a padding slot and names no row (as the compiled kernels:
/// gather gives zeros, scatters skip it, its first occurrence is -1).
mod rows {
    use super::Tensor;

    fn row_len(t: &Tensor, leading: usize) -> usize {
        t.data.len().checked_div(leading).unwrap_or(0)
    }

    /// The row an id names: `None` for padding (negative), else clamped.
    fn row(id: f64, rows: usize) -> Option<usize> {
        (id >= 0.0).then(|| (id as usize).min(rows.saturating_sub(1)))
    }

    pub fn gather(params: &Tensor, ids: &Tensor, dims: &[usize]) -> Tensor {
        let rows = params.dims[0];
        let len = row_len(params, rows);
        let mut out = Vec::with_capacity(ids.data.len() * len);
        for &id in &ids.data {
            match row(id, rows) {
                Some(r) => out.extend_from_slice(&params.data[r * len..(r + 1) * len]),
                None => out.extend(std::iter::repeat_n(0.0, len)),
            }
        }
        Tensor::new(dims.to_vec(), out)
    }

    pub fn scatter_add(base: &Tensor, ids: &Tensor, updates: &Tensor) -> Tensor {
        let rows = base.dims[0];
        let len = row_len(base, rows);
        let mut out = base.clone();
        for (i, &id) in ids.data.iter().enumerate() {
            let Some(r) = row(id, rows) else { continue };
            for j in 0..len {
                out.data[r * len + j] += updates.data[i * len + j];
            }
        }
        out
    }

    pub fn first_occurrence(ids: &Tensor) -> Tensor {
        let first = (0..ids.data.len())
            .map(|i| {
                if ids.data[i] < 0.0 {
                    return -1.0;
                }
                let k = ids.data[..i].iter().position(|&x| x == ids.data[i]);
                k.unwrap_or(i) as f64
            })
            .collect();
        Tensor::new(ids.dims.clone(), first)
    }

    pub fn sum_duplicates(values: &Tensor, first: &Tensor) -> Tensor {
        let n = first.data.len();
        let len = row_len(values, n);
        let mut out = vec![0.0; values.data.len()];
        for (i, &f) in first.data.iter().enumerate() {
            if f < 0.0 {
                continue;
            }
            let f = f as usize;
            for j in 0..len {
                out[f * len + j] += values.data[i * len + j];
            }
        }
        Tensor::new(values.dims.clone(), out)
    }

    pub fn scatter_rows(base: &Tensor, ids: &Tensor, first: &Tensor, rows_in: &Tensor) -> Tensor {
        let rows = base.dims[0];
        let len = row_len(base, rows);
        let mut out = base.clone();
        for (i, &id) in ids.data.iter().enumerate() {
            if first.data[i] != i as f64 {
                continue;
            }
            if let Some(r) = row(id, rows) {
                out.data[r * len..(r + 1) * len]
                    .copy_from_slice(&rows_in.data[i * len..(i + 1) * len]);
            }
        }
        out
    }
}

/// The reference of `Op::Patches` (im2col).
fn patches(x: &Tensor, w: &Window, pad: f64, dims: &[usize]) -> Tensor {
    let (h, wd, c) = (x.dims[1], x.dims[2], x.dims[3]);
    let mut out = Vec::with_capacity(dims.iter().product());
    for n in 0..dims[0] {
        for oy in 0..w.output[0] {
            for ox in 0..w.output[1] {
                for ky in 0..w.kernel[0] {
                    for kx in 0..w.kernel[1] {
                        match (w.source(0, oy, ky), w.source(1, ox, kx)) {
                            (Some(iy), Some(ix)) => {
                                let at = ((n * h + iy as usize) * wd + ix as usize) * c;
                                out.extend_from_slice(&x.data[at..at + c]);
                            }
                            _ => out.extend(std::iter::repeat_n(pad, c)),
                        }
                    }
                }
            }
        }
    }
    Tensor::new(dims.to_vec(), out)
}

/// The reference of `Op::PatchesGrad` (col2im): the transposed map of `patches`.
fn patches_grad(p: &Tensor, w: &Window, dims: &[usize]) -> Tensor {
    let (h, wd, c) = (dims[1], dims[2], dims[3]);
    let mut out = vec![0.0; dims.iter().product()];
    let mut at = 0;
    for n in 0..dims[0] {
        for oy in 0..w.output[0] {
            for ox in 0..w.output[1] {
                for ky in 0..w.kernel[0] {
                    for kx in 0..w.kernel[1] {
                        if let (Some(iy), Some(ix)) = (w.source(0, oy, ky), w.source(1, ox, kx)) {
                            let to = ((n * h + iy as usize) * wd + ix as usize) * c;
                            for i in 0..c {
                                out[to + i] += p.data[at + i];
                            }
                        }
                        at += c;
                    }
                }
            }
        }
    }
    Tensor::new(dims.to_vec(), out)
}

/// Slice `g` of `t` cut into `count` equal contiguous slices, its dims
/// `dims` (those of `t` without its leading group axes).
fn group(t: &Tensor, g: usize, count: usize, dims: &[usize]) -> Tensor {
    let len = t.data.len() / count.max(1);
    Tensor::new(dims.to_vec(), t.data[g * len..(g + 1) * len].to_vec())
}

/// The reference of `Op::BatchMatMul`: `matmul` per group, the groups the
/// row-major product of the `groups` leading axes.
fn batch_matmul(
    a: &Tensor,
    b: &Tensor,
    ta: bool,
    tb: bool,
    groups: usize,
    dims: &[usize],
) -> Tensor {
    let count: usize = dims[..groups].iter().product();
    let mut out = Vec::with_capacity(dims.iter().product());
    for g in 0..count {
        let (ga, gb) = (
            group(a, g, count, &a.dims[groups..]),
            group(b, g, count, &b.dims[groups..]),
        );
        out.extend(matmul(&ga, &gb, ta, tb).data);
    }
    Tensor::new(dims.to_vec(), out)
}

/// The cell of tile `t` (`m` output cells a side) at offset `r` along
/// `axis`, inside the image or `None`.
fn tile_source(w: &Window, m: usize, axis: usize, t: usize, r: usize) -> Option<usize> {
    w.source(axis, (m * t) as u32, r as u32).map(|v| v as usize)
}

/// The output cell of tile `t` at offset `a` along `axis`, or `None` past it.
fn tile_output(w: &Window, m: usize, axis: usize, t: usize, a: usize) -> Option<usize> {
    let o = m * t + a;
    (o < w.output[axis] as usize).then_some(o)
}

/// The linear map between images and Winograd tiles, by the matrices.
/// `input`: the input side (`V = Bᵀ d B`, `A×A` image cells a tile, `A`
/// the tile's input side) or the output side (`Y = Aᵀ M A`, `m×m`).
/// `to_tiles` is the direction the values flow: image → tiles
/// (`WinogradInput`, `WinogradOutputGrad`) or tiles → image
/// (`WinogradOutput`, `WinogradInputGrad`, the transposed maps). `src` is
/// the tensor read, `dims` the result's; the tile tensor is
/// `[A², N, TH, TW, C]` and the image `[N, H, W, C]`.
fn winograd_map(
    src: &Tensor,
    w: &Window,
    tile: WinogradTile,
    dims: &[usize],
    input: bool,
    to_tiles: bool,
) -> Tensor {
    let (image, tiles) = if to_tiles {
        (&src.dims[..], dims)
    } else {
        (dims, &src.dims[..])
    };
    let (h, wd, c) = (image[1], image[2], image[3]);
    let (n_img, th, tw) = (tiles[1], tiles[2], tiles[3]);
    let (m, a) = (tile.m() as usize, tile.alpha() as usize);
    let (cells, rows) = if input { (a, a) } else { (m, a) };
    let coefficient = |cell: usize, i: usize| -> f64 {
        if input {
            f64::from(tile.bt()[i][cell])
        } else {
            f64::from(tile.at()[cell][i])
        }
    };
    let place = |axis: usize, t: usize, cell: usize| {
        if input {
            tile_source(w, m, axis, t, cell)
        } else {
            tile_output(w, m, axis, t, cell)
        }
    };
    let mut out = vec![0.0; dims.iter().product()];
    for n in 0..n_img {
        for ty in 0..th {
            for tx in 0..tw {
                for r in 0..cells {
                    for s in 0..cells {
                        let (Some(y), Some(x)) = (place(0, ty, r), place(1, tx, s)) else {
                            continue;
                        };
                        let pixel = ((n * h + y) * wd + x) * c;
                        for i in 0..rows {
                            for j in 0..rows {
                                let k = coefficient(r, i) * coefficient(s, j);
                                let tile = ((((a * i + j) * n_img + n) * th + ty) * tw + tx) * c;
                                let (to, from) = if to_tiles {
                                    (tile, pixel)
                                } else {
                                    (pixel, tile)
                                };
                                for ch in 0..c {
                                    out[to + ch] += k * src.data[from + ch];
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    Tensor::new(dims.to_vec(), out)
}

/// The reference of `Op::UniformHash`: murmur3's 32-bit finalizer.
pub fn uniform_hash(seed: u32, index: f32, step: f32) -> f64 {
    fn fmix(mut h: u32) -> u32 {
        h ^= h >> 16;
        h = h.wrapping_mul(0x85eb_ca6b);
        h ^= h >> 13;
        h = h.wrapping_mul(0xc2b2_ae35);
        h ^ (h >> 16)
    }
    // As the step's saturating f32 to i32 conversions.
    let (i, s) = (index as i32 as u32, step as i32 as u32);
    let h = fmix(i.wrapping_mul(0x9E37_79B1).wrapping_add(fmix(s ^ seed)));
    f64::from((h >> 8) as f32 * (1.0 / 16_777_216.0))
}

#[cfg(test)]
mod tests {
    use super::{rows, winograd_map, Tensor};
    use crate::ir::{Window, WinogradTile};

    /// The Winograd gradient maps are the transposes of the forward ones
    /// (`⟨T x, t⟩ = ⟨x, Tᵀ t⟩`, exact on integers), for both tiles, on both
    /// sides and with uneven padding and odd output sizes (cropped last
    /// tiles).
    #[test]
    fn winograd_gradient_maps_are_the_adjoints() {
        let w = Window {
            input: [5, 7],
            output: [5, 6],
            kernel: [3, 3],
            strides: [1, 1],
            dilations: [1, 1],
            pad_before: [1, 0],
            channels: 2,
        };
        let (n, c) = (2, 2);
        let ints = |len: usize, seed: usize| -> Vec<f64> {
            (0..len)
                .map(|i| ((i * 7 + seed * 13) % 11) as f64 - 5.0)
                .collect()
        };
        let dot = |a: &Tensor, b: &Tensor| -> f64 {
            a.data.iter().zip(&b.data).map(|(x, y)| x * y).sum()
        };
        for tile in [WinogradTile::F2, WinogradTile::F4] {
            let [th, tw] = w.winograd_tiles(tile).map(|t| t as usize);
            let tiles = vec![tile.groups() as usize, n, th, tw, c];
            for (input, image) in [(true, vec![n, 5, 7, c]), (false, vec![n, 5, 6, c])] {
                let x = Tensor::new(image.clone(), ints(image.iter().product(), 1));
                let t = Tensor::new(tiles.clone(), ints(tiles.iter().product(), 2));
                let (forward, backward) = if input {
                    (
                        winograd_map(&x, &w, tile, &tiles, true, true),
                        winograd_map(&t, &w, tile, &image, true, false),
                    )
                } else {
                    (
                        winograd_map(&t, &w, tile, &image, false, false),
                        winograd_map(&x, &w, tile, &tiles, false, true),
                    )
                };
                let (lhs, rhs) = if input {
                    (dot(&forward, &t), dot(&x, &backward))
                } else {
                    (dot(&forward, &x), dot(&t, &backward))
                };
                assert!(lhs != 0.0, "{tile:?} input side {input}: a trivial product");
                assert_eq!(lhs, rhs, "{tile:?} input side {input}");
            }
        }
    }

    /// A negative id (padding) names no row: zeros when gathered, never a
    /// first occurrence, nothing scattered or summed.
    #[test]
    fn negative_ids_touch_no_row() {
        let table = Tensor::new(vec![3, 2], vec![f64::INFINITY, 1.0, 2.0, 3.0, 4.0, 5.0]);
        let ids = Tensor::new(vec![4], vec![2.0, -1.0, 2.0, 1.0]);
        let g = rows::gather(&table, &ids, &[4, 2]);
        assert_eq!(g.data, [4.0, 5.0, 0.0, 0.0, 4.0, 5.0, 2.0, 3.0]);
        let first = rows::first_occurrence(&ids);
        assert_eq!(first.data, [0.0, -1.0, 0.0, 3.0]);
        let vals = Tensor::new(vec![4, 2], vec![1.0, 1.0, 9.0, 9.0, 2.0, 2.0, 3.0, 3.0]);
        let sum = rows::sum_duplicates(&vals, &first);
        assert_eq!(sum.data, [3.0, 3.0, 0.0, 0.0, 0.0, 0.0, 3.0, 3.0]);
        let added = rows::scatter_add(&table, &ids, &vals);
        assert_eq!(added.data, [f64::INFINITY, 1.0, 5.0, 6.0, 7.0, 8.0]);
        let first_at_zero = Tensor::new(vec![4], vec![-1.0, -1.0, 2.0, 3.0]);
        let ids0 = Tensor::new(vec![4], vec![-1.0, -1.0, 2.0, 1.0]);
        let put = rows::scatter_rows(&table, &ids0, &first_at_zero, &vals);
        assert_eq!(put.data, [f64::INFINITY, 1.0, 3.0, 3.0, 2.0, 2.0]);
    }
}
