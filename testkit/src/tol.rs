//! Comparing results with TensorFlow's: [`Tol`] is relative with an absolute
//! floor that each test justifies from the scale of the quantity (a tensor's
//! or a trajectory's largest magnitude, [`scale`]), never an absolute 1;
//! [`assert_all_close`] checks lengths before values and reports every
//! element out of tolerance. With `SPECC_GOLDEN_ERRORS` set, every comparison
//! prints its worst errors (to measure what a tolerance leaves).

/// The largest finite magnitude of a set of values (0 if none).
pub fn scale(values: &[f64]) -> f64 {
    values
        .iter()
        .filter(|v| v.is_finite())
        .fold(0.0, |m, v| m.max(v.abs()))
}

/// The scale a tolerance's floor is relative to: one for a whole tensor, or
/// one per element.
#[derive(Clone, Copy, Debug)]
pub enum Scale<'a> {
    One(f64),
    Each(&'a [f64]),
}

/// A tolerance: `|got - want| <= rel * |want| + floor * scale`. The floor is
/// for values near zero, relative to a scale each test chooses and justifies
/// for its quantity (a tensor's or a trajectory's largest magnitude).
#[derive(Clone, Copy, Debug)]
pub struct Tol<'a> {
    pub rel: f64,
    pub floor: f64,
    pub scale: Scale<'a>,
}

impl<'a> Tol<'a> {
    /// Relative `rel`, with a floor of `floor` times `scale`.
    pub fn scaled(rel: f64, floor: f64, scale: f64) -> Tol<'static> {
        Tol {
            rel,
            floor,
            scale: Scale::One(scale),
        }
    }

    /// Relative `rel`, with a floor of `floor` times each element's own scale.
    pub fn elementwise(rel: f64, floor: f64, scales: &'a [f64]) -> Tol<'a> {
        Tol {
            rel,
            floor,
            scale: Scale::Each(scales),
        }
    }

    /// Relative only: a zero must be exactly zero.
    pub fn relative(rel: f64) -> Tol<'static> {
        Tol::scaled(rel, 0.0, 0.0)
    }

    /// The scale of element `i`.
    fn scale_of(&self, i: usize) -> f64 {
        match self.scale {
            Scale::One(s) => s,
            Scale::Each(s) => s[i],
        }
    }

    /// The absolute floor of element `i`.
    fn abs(&self, i: usize) -> f64 {
        self.floor * self.scale_of(i)
    }
}

/// Whether `got` is within `rel * |want| + abs` of `want` (NaN matches NaN,
/// infinities match themselves exactly).
pub fn within(got: f64, want: f64, rel: f64, abs: f64) -> bool {
    if want.is_nan() || got.is_nan() {
        return want.is_nan() && got.is_nan();
    }
    if want.is_infinite() || got.is_infinite() {
        return got == want;
    }
    (got - want).abs() <= rel * want.abs() + abs
}

/// |got - want| / |want| (0 when equal, infinite for a nonzero error on 0).
pub fn rel_error(got: f64, want: f64) -> f64 {
    if got == want || (got.is_nan() && want.is_nan()) {
        0.0
    } else if want == 0.0 || !want.is_finite() || !got.is_finite() {
        f64::INFINITY
    } else {
        (got - want).abs() / want.abs()
    }
}

/// With `SPECC_GOLDEN_ERRORS` set, prints the worst errors of a comparison,
/// to measure what the tolerances leave: `golden-error <what>: relative <r>
/// relative-1% <r1> scaled <a>`: the largest relative error, the largest
/// relative error among values of at least 1% of their scale, and the largest
/// absolute error divided by the element's scale.
fn report(what: &str, got: &[f64], want: &[f64], tol: &Tol) {
    if std::env::var_os("SPECC_GOLDEN_ERRORS").is_none() {
        return;
    }
    let (mut rel, mut rel1, mut scaled) = (0.0f64, 0.0f64, 0.0f64);
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let r = rel_error(g, w);
        let s = tol.scale_of(i);
        rel = rel.max(r);
        if w.abs() >= 0.01 * s {
            rel1 = rel1.max(r);
        }
        if g.is_finite() && w.is_finite() && s > 0.0 {
            scaled = scaled.max((g - w).abs() / s);
        }
    }
    eprintln!("golden-error {what}: relative {rel:e} relative-1% {rel1:e} scaled {scaled:e}");
}

/// Asserts one value against TF's.
pub fn assert_close(what: &str, got: f64, want: f64, tol: Tol) {
    assert_all_close_f64(what, &[got], &[want], tol);
}

/// Asserts `got` has exactly `want`'s length and every element is within
/// `tol`; the message lists every element out of tolerance.
pub fn assert_all_close(what: &str, got: &[f32], want: &[f64], tol: Tol) {
    let got: Vec<f64> = got.iter().map(|&g| f64::from(g)).collect();
    assert_all_close_f64(what, &got, want, tol);
}

/// [`assert_all_close`] for float64 results (the reference interpreter).
pub fn assert_all_close_f64(what: &str, got: &[f64], want: &[f64], tol: Tol) {
    assert_eq!(
        got.len(),
        want.len(),
        "{what}: {} values, TF has {}",
        got.len(),
        want.len()
    );
    if let Scale::Each(s) = tol.scale {
        assert_eq!(s.len(), want.len(), "{what}: one scale per value");
    }
    report(what, got, want, &tol);
    let bad: Vec<String> = got
        .iter()
        .zip(want)
        .enumerate()
        .filter(|&(i, (&g, &w))| !within(g, w, tol.rel, tol.abs(i)))
        .map(|(i, (&g, &w))| {
            format!(
                "  [{i}] got {g:e}, want {w:e} (diff {:e}, relative {:e}, floor {:e})",
                (g - w).abs(),
                rel_error(g, w),
                tol.abs(i)
            )
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: {} of {} values out of tolerance (relative {:e}, floor {:e} of the scale):\n{}",
        bad.len(),
        want.len(),
        tol.rel,
        tol.floor,
        bad.join("\n")
    );
}
