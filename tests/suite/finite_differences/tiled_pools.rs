//! Poolings whose windows equal their strides. With VALID padding and sizes
//! that the window divides, the windows tile the image and sema lowers the
//! pooling to a reshape and a transpose of the image (no im2col); its input
//! gradient comes back through the transposed view, which no strided view
//! of the image's shape can express, so the planner copies it out over the
//! transposed shape (`plan::resolve`'s copies through reshapes). Each test
//! checks one image shape with max and average pooling, VALID and SAME:
//! the forward values and the gradient against a direct float64 pooling
//! written here from TF's definition (independent of the IR's lowering),
//! and the gradient against central differences of the reference
//! interpreter's loss.

use specc_compiler::driver::{compile_with, Functions, Options};
use specc_grammar::SourceFile;
use specc_runtime::data::{Dataset, InputData, Values};

use super::{common, literal, Rng, BATCH};

/// A pooling of these tests: `max_pool2d` or `avg_pool2d` over an image of
/// `dims` (NHWC) with a window of `k` and strides `k`.
#[derive(Clone, Copy)]
struct TiledPool {
    max: bool,
    k: [usize; 2],
    same: bool,
}

impl TiledPool {
    fn call(&self, image: &str) -> String {
        let [kh, kw] = self.k;
        format!(
            "{}({image}, ksize = [{kh}, {kw}], strides = [{kh}, {kw}], padding = \"{}\")",
            if self.max { "max_pool2d" } else { "avg_pool2d" },
            if self.same { "SAME" } else { "VALID" }
        )
    }

    /// TF's output size and padding before the image along an axis of `n`
    /// cells with window and stride `k`.
    fn axis(&self, n: usize, k: usize) -> (usize, usize) {
        if self.same {
            let out = n.div_ceil(k);
            (out, ((out - 1) * k + k).saturating_sub(n) / 2)
        } else {
            ((n - k) / k + 1, 0)
        }
    }

    /// The output's NHWC dims for an image of `dims`.
    fn out_dims(&self, dims: [usize; 4]) -> [usize; 4] {
        let (oh, _) = self.axis(dims[1], self.k[0]);
        let (ow, _) = self.axis(dims[2], self.k[1]);
        [dims[0], oh, ow, dims[3]]
    }

    /// The pooling of `x` (row-major `dims`) computed directly, and the
    /// gradient of `sum(y * w)` with respect to `x`: a max pool's goes to the
    /// first maximum of each window (row-major over the window, as TF's
    /// MaxPoolGrad), an average pool's is spread over the window's cells
    /// inside the image, which its value is the mean of.
    fn reference(&self, dims: [usize; 4], x: &[f64], w: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let [n, h, wd, c] = dims;
        let [_, oh, ow, _] = self.out_dims(dims);
        let (_, top) = self.axis(h, self.k[0]);
        let (_, left) = self.axis(wd, self.k[1]);
        let at = |b: usize, i: usize, j: usize, ch: usize| ((b * h + i) * wd + j) * c + ch;
        let mut y = Vec::with_capacity(n * oh * ow * c);
        let mut dx = vec![0.0; x.len()];
        for b in 0..n {
            for oi in 0..oh {
                for oj in 0..ow {
                    for ch in 0..c {
                        let cells: Vec<usize> = (0..self.k[0])
                            .flat_map(|a| (0..self.k[1]).map(move |e| (a, e)))
                            .filter_map(|(a, e)| {
                                let i = (oi * self.k[0] + a).checked_sub(top)?;
                                let j = (oj * self.k[1] + e).checked_sub(left)?;
                                (i < h && j < wd).then(|| at(b, i, j, ch))
                            })
                            .collect();
                        let wo = w[y.len()];
                        if self.max {
                            let first = cells
                                .iter()
                                .copied()
                                .reduce(|m, q| if x[q] > x[m] { q } else { m })
                                .expect("a window has a cell of the image");
                            y.push(x[first]);
                            dx[first] += wo;
                        } else {
                            let count = cells.len() as f64;
                            y.push(cells.iter().map(|&q| x[q]).sum::<f64>() / count);
                            for &q in &cells {
                                dx[q] += wo / count;
                            }
                        }
                    }
                }
            }
        }
        (y, dx)
    }
}

/// The four poolings of an image shape: max and average, VALID and SAME.
fn tiled_pools(k: [usize; 2]) -> [TiledPool; 4] {
    [(true, false), (false, false), (true, true), (false, true)].map(|(max, same)| TiledPool {
        max,
        k,
        same,
    })
}

fn compile_all(name: &str, text: &str) -> specc_compiler::driver::Program {
    let src = SourceFile::new(format!("{name}.spec"), text.to_string());
    compile_with(&src, Functions::ALL, &Options::default()).unwrap_or_else(|d| {
        panic!(
            "{name}: {:?}\n{text}",
            d.iter().map(|d| &d.message).collect::<Vec<_>>()
        )
    })
}

/// Each trainable parameter's compiled gradient (`grad/<name>` of function
/// `gf`) against central differences of the interpreter's loss.
fn check_against_finite_differences(
    name: &str,
    program: &specc_compiler::driver::Program,
    s: &specc_runtime::session::Session,
    ds: &Dataset,
    batch: usize,
) {
    let model = &program.model;
    let gf = s.function_index("grad").unwrap();
    let (inputs, mut vars) = common::interp_leaves(model, ds, s, batch);
    for p in model.trainable_params() {
        let var = model.var_name(p).to_string();
        let grad = s.output(gf, &format!("grad/{var}"), batch).unwrap();
        let scale = grad
            .iter()
            .fold(0f64, |m, &g| m.max((g as f64).abs()))
            .max(1e-3);
        for (i, &gi) in grad.iter().enumerate() {
            let fd = common::central_difference(model, &inputs, &mut vars, batch, p as usize, i);
            let g = gi as f64;
            assert!(
                (g - fd).abs() <= 1e-3 * g.abs().max(fd.abs()) + 1e-4 * scale,
                "{name}: d loss / d {var}[{i}]: compiled {g:e}, finite differences {fd:e}"
            );
        }
    }
}

/// The pooling of a parameter image of `dims`: `grad/a` is the pooling's
/// input gradient as a function output (the copy through the transposed
/// view), `grad/probe` its forward values (`probe` is zero, so it adds
/// nothing to the loss).
fn check_tiled_pool(dims: [usize; 4], pool: TiledPool, seed: u64) {
    let name = pool.call(&format!("a{dims:?}"));
    let mut rng = Rng(seed);
    let out = pool.out_dims(dims);
    let x = rng.values(dims.iter().product(), -2.0, 2.0, 0.0);
    let w = rng.values(out.iter().product(), -1.0, 1.0, 0.1);
    let text = format!(
        "model pool\ndata synthetic(rows = 4, features = 1)\nparams {{\n  a: {dims:?} = constant(value = {})\n  probe: {out:?} = zeros\n}}\ny = {}\nloss = reduce_sum(probe * stop_gradient(y)) + reduce_sum(y * {})\noptimizer gradient_descent(learning_rate = 0.1)\ntrain {{ batch = 1, steps = 1 }}\n",
        literal(&dims, &x),
        pool.call("a"),
        literal(&out, &w),
    );
    let program = compile_all(&name, &text);
    let ds = Dataset::from_inputs(1, vec![]).unwrap();
    let mut s = program.session().unwrap();
    s.bind(&ds).unwrap();
    let gf = s.function_index("grad").unwrap();
    s.call(gf, 1).unwrap();
    let (y, dx) = pool.reference(dims, &x, &w);
    let tol = |want: &[f64]| {
        let scale = want.iter().fold(0f64, |m, v| m.max(v.abs()));
        common::Tol::scaled(1e-6, 1e-6, scale)
    };
    let got = |v: &str| s.output(gf, &format!("grad/{v}"), 1).unwrap();
    common::assert_all_close(&format!("{name}: values"), got("probe"), &y, tol(&y));
    common::assert_all_close(&format!("{name}: gradient"), got("a"), &dx, tol(&dx));
    check_against_finite_differences(&name, &program, &s, &ds, 1);
}

/// The pooling of a batch of images read from the data, `x` scaled by a
/// parameter per channel: the pooling's input gradient is read inside the
/// loop that sums `grad/scale`; `grad/probe` is the forward values summed
/// over the batch.
fn check_tiled_pool_of_batch(image: [usize; 3], pool: TiledPool, seed: u64) {
    let [h, wd, c] = image;
    let dims = [BATCH, h, wd, c];
    let name = pool.call(&format!("x{dims:?}"));
    let mut rng = Rng(seed);
    let out = pool.out_dims(dims);
    let per_image: Vec<usize> = out[1..].to_vec();
    let width = h * wd * c;
    let scale = rng.values(c, 0.5, 1.5, 0.0);
    let t = rng.values(per_image.iter().product(), -1.0, 1.0, 0.1);
    let x = rng.values(BATCH * width, -2.0, 2.0, 0.0);
    let text = format!(
        "model pool\ndata synthetic(rows = 8, features = {width})\nfeatures {{ x = numeric(x0..x{}) }}\nlabel label: int\nparams {{\n  scale: [{c}] = constant(value = {})\n  probe: {per_image:?} = zeros\n}}\nimages = reshape(x, [B, {h}, {wd}, {c}]) * scale\ny = {}\nloss = reduce_sum(probe * stop_gradient(y)) + reduce_sum(y * {})\noptimizer gradient_descent(learning_rate = 0.1)\ntrain {{ batch = {BATCH}, steps = 1 }}\n",
        width - 1,
        literal(&[c], &scale),
        pool.call("images"),
        literal(&per_image, &t),
    );
    let program = compile_all(&name, &text);
    let label: Vec<i32> = (0..BATCH as i32).map(|i| i % 2).collect();
    let ds = Dataset::from_inputs(
        BATCH,
        vec![
            InputData::new(
                "x",
                width,
                Values::F32(x.iter().map(|&v| v as f32).collect()),
            ),
            InputData::new("label", 1, Values::I32(label)),
        ],
    )
    .unwrap();
    let mut s = program.session().unwrap();
    s.bind(&ds).unwrap();
    let rows: Vec<u32> = (0..BATCH as u32).collect();
    s.gather(&ds, &rows).unwrap();
    let gf = s.function_index("grad").unwrap();
    s.call(gf, BATCH).unwrap();

    let scaled: Vec<f64> = x
        .iter()
        .enumerate()
        .map(|(i, v)| v * scale[i % c])
        .collect();
    let w: Vec<f64> = (0..BATCH).flat_map(|_| t.iter().copied()).collect();
    let (y, dimages) = pool.reference(dims, &scaled, &w);
    let mut y_sum = vec![0.0; t.len()];
    for (i, v) in y.iter().enumerate() {
        y_sum[i % t.len()] += v;
    }
    let mut dscale = vec![0.0; c];
    for (i, d) in dimages.iter().enumerate() {
        dscale[i % c] += d * x[i];
    }
    let tol = |want: &[f64]| {
        let scale = want.iter().fold(0f64, |m, v| m.max(v.abs()));
        common::Tol::scaled(1e-5, 1e-5, scale)
    };
    let got = |v: &str| s.output(gf, &format!("grad/{v}"), BATCH).unwrap();
    common::assert_all_close(
        &format!("{name}: values"),
        got("probe"),
        &y_sum,
        tol(&y_sum),
    );
    common::assert_all_close(
        &format!("{name}: gradient"),
        got("scale"),
        &dscale,
        tol(&dscale),
    );
    check_against_finite_differences(&name, &program, &s, &ds, BATCH);
}

/// One test per image shape, each with the four poolings of [`tiled_pools`].
macro_rules! tiled_pool_tests {
    ($($name:ident: $dims:expr, $k:expr;)*) => {$(
        #[test]
        fn $name() {
            for (i, pool) in tiled_pools($k).into_iter().enumerate() {
                check_tiled_pool($dims, pool, 0x7001 + i as u64);
            }
        }
    )*};
}

tiled_pool_tests! {
    tiled_pool_one_image_one_channel: [1, 4, 4, 1], [2, 2];
    tiled_pool_one_window: [1, 2, 2, 3], [2, 2];
    tiled_pool_two_images: [2, 4, 4, 3], [2, 2];
    tiled_pool_taller_than_wide: [2, 8, 6, 3], [2, 2];
    tiled_pool_window_3: [1, 6, 9, 2], [3, 3];
    tiled_pool_rectangular_window: [2, 4, 6, 2], [2, 3];
    // Odd sizes: VALID drops the last row and column (no tiling, im2col);
    // SAME pads them.
    tiled_pool_odd_square: [1, 5, 5, 2], [2, 2];
    tiled_pool_odd: [2, 7, 5, 4], [2, 2];
}

#[test]
fn tiled_pool_of_a_batch() {
    for (i, pool) in tiled_pools([2, 2]).into_iter().enumerate() {
        check_tiled_pool_of_batch([4, 6, 3], pool, 0x7101 + i as u64);
    }
}

#[test]
fn tiled_pool_of_a_batch_odd() {
    for (i, pool) in tiled_pools([2, 2]).into_iter().enumerate() {
        check_tiled_pool_of_batch([5, 3, 2], pool, 0x7201 + i as u64);
    }
}

/// A function output that is a reshape of a transposed view (a user's
/// `outputs` entry, as the tiled poolings' input gradients are `grad`'s
/// outputs) is copied out over the transposed shape: `predict` returns
/// each row's `[2, 3]` block transposed, flattened.
#[test]
fn output_reshaped_from_a_transposed_view() {
    let text = "model o\ndata synthetic(rows = 8, features = 6)\nfeatures { x = numeric(x0..x5) }\nlabel label: int\nparams { W: [6, 2] = zeros }\nloss = mean(sparse_softmax_cross_entropy(label, x @ W))\noptimizer gradient_descent(learning_rate = 0.1)\ntrain { batch = 5, steps = 1 }\noutputs {\n  t = reshape(transpose(reshape(x * 2, [B, 2, 3]), [0, 2, 1]), [B, 6])\n}\n";
    let program = compile_all("transposed_output", text);
    let mut rng = Rng(0x7301);
    let x = rng.values(BATCH * 6, -2.0, 2.0, 0.0);
    let label: Vec<i32> = vec![0; BATCH];
    let ds = Dataset::from_inputs(
        BATCH,
        vec![
            InputData::new("x", 6, Values::F32(x.iter().map(|&v| v as f32).collect())),
            InputData::new("label", 1, Values::I32(label)),
        ],
    )
    .unwrap();
    let mut s = program.session().unwrap();
    s.bind(&ds).unwrap();
    let rows: Vec<u32> = (0..BATCH as u32).collect();
    s.gather(&ds, &rows).unwrap();
    let f = s.function_index("predict").unwrap();
    s.call(f, BATCH).unwrap();
    let want: Vec<f64> = (0..BATCH)
        .flat_map(|b| (0..3).flat_map(move |j| (0..2).map(move |i| (b, i, j))))
        .map(|(b, i, j)| 2.0 * x[b * 6 + i * 3 + j])
        .collect();
    let got = s.output(f, "t", BATCH).unwrap();
    common::assert_all_close("t", got, &want, common::Tol::scaled(0.0, 0.0, 1.0));
}
