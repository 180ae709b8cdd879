//! The lazy image of the transform chain: a source image, an optional
//! bilinear resize, a crop window and flips, sampled once into the
//! destination ([`View`]), with each source row lerped across once
//! ([`LerpedRows`]).
//!
//! Invariant: the pixels a view writes are those of applying its
//! transforms one by one (`tf.image.resize`'s bilinear lerps in TF's
//! order; crops and flips only select).

use specc_image::resize::{self, Centers};
use specc_image::Image;

/// Decoded or materialized pixels, `[h, w, c]` row-major.
pub(super) enum Pixels {
    U8(Vec<u8>),
    F32(Vec<f32>),
}

/// An image in the pipeline, kept lazy: a source image, an optional
/// bilinear resize of it, a crop window of the (resized) image and flips.
/// Geometric transforms only change the view; the pixels are computed once,
/// straight into their destination, and only those the window keeps (a
/// crop of a resize samples 224×224 pixels, not 256×256). A brightness
/// change materializes the view into a new float source. The values are
/// those of applying the transforms one by one: a resized pixel is the same
/// float32 expression whichever pixels are kept, crops and flips only
/// select.
pub(super) struct View {
    pub(super) src: Pixels,
    /// Source dims.
    sh: usize,
    sw: usize,
    /// Channels.
    pub(super) c: usize,
    /// The resized dims (the source's when there is no resize).
    rh: usize,
    rw: usize,
    resized: bool,
    /// The window of the (resized) image, before flips.
    top: usize,
    left: usize,
    /// The visible dims (the window's).
    pub(super) h: usize,
    pub(super) w: usize,
    pub(super) flip_lr: bool,
    pub(super) flip_ud: bool,
}

impl View {
    pub(super) fn of(src: Pixels, h: usize, w: usize, c: usize) -> View {
        View {
            src,
            sh: h,
            sw: w,
            c,
            rh: h,
            rw: w,
            resized: false,
            top: 0,
            left: 0,
            h,
            w,
            flip_lr: false,
            flip_ud: false,
        }
    }

    /// The view materialized as a float32 `[h, w, c]` image, transformed by
    /// a `specc_image` function, as a new view (its error is the example's).
    pub(super) fn through(
        self,
        f: impl FnOnce(Image) -> specc_image::Result<Image>,
    ) -> Result<View, String> {
        let (h, w, c) = (self.h, self.w, self.c);
        let mut px = vec![0f32; h * w * c];
        self.materialize(&mut px);
        let image = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[h, w, c]), px)
            .map_err(|e| e.to_string())?;
        let out = f(Image::F32(image)).map_err(|e| e.message)?;
        let s = out.shape().to_vec();
        // Row-major whatever the library's layout (a concatenation along
        // the channels is not).
        let (raw, _) = out
            .to_f32()
            .as_standard_layout()
            .into_owned()
            .into_raw_vec_and_offset();
        Ok(View::of(Pixels::F32(raw), s[0], s[1], s[2]))
    }

    /// Whether the view shows the (resized) image whole and unflipped.
    fn is_whole(&self) -> bool {
        self.top == 0
            && self.left == 0
            && self.h == self.rh
            && self.w == self.rw
            && !self.flip_lr
            && !self.flip_ud
    }

    /// `tf.image.resize(image, size, "bilinear", antialias=False)`.
    pub(super) fn resize(self, size: [usize; 2]) -> View {
        if size == [self.h, self.w] {
            return self;
        }
        // A resize of a resize, or of a crop or flip, resamples the
        // materialized image.
        let base = if self.is_whole() && !self.resized {
            self
        } else {
            let (h, w, c) = (self.h, self.w, self.c);
            let mut px = vec![0f32; h * w * c];
            self.materialize(&mut px);
            View::of(Pixels::F32(px), h, w, c)
        };
        View {
            rh: size[0],
            rw: size[1],
            resized: true,
            h: size[0],
            w: size[1],
            ..base
        }
    }

    /// The crop `[top, top + h) × [left, left + w)` of the visible image.
    pub(super) fn crop(self, top: usize, left: usize, h: usize, w: usize) -> View {
        let top = if self.flip_ud {
            self.top + (self.h - top - h)
        } else {
            self.top + top
        };
        let left = if self.flip_lr {
            self.left + (self.w - left - w)
        } else {
            self.left + left
        };
        View {
            top,
            left,
            h,
            w,
            ..self
        }
    }

    /// Writes the visible pixels into `dst` (`h·w·c` values).
    pub(super) fn materialize(&self, dst: &mut [f32]) {
        match &self.src {
            Pixels::U8(px) => self.sample(px, dst),
            Pixels::F32(px) => self.sample(px, dst),
        }
    }

    fn sample<T: Copy + Into<f32>>(&self, src: &[T], dst: &mut [f32]) {
        let (c, w) = (self.c, self.w);
        let row_len = self.sw * c;
        // The source column of each visible column (its taps when resized).
        let cols: Vec<(usize, usize, f32)> = (0..w)
            .map(|x| {
                let vx = if self.flip_lr { w - 1 - x } else { x };
                let rx = self.left + vx;
                if self.resized {
                    resize::bilinear_tap(rx, self.sw, self.rw, Centers::V2)
                } else {
                    (rx, rx, 0.0)
                }
            })
            .collect();
        let mut rows = LerpedRows::new(if self.resized { w * c } else { 0 });
        for (y, out) in dst.chunks_exact_mut(w * c).enumerate().take(self.h) {
            let vy = if self.flip_ud { self.h - 1 - y } else { y };
            let ry = self.top + vy;
            if !self.resized {
                let r = &src[ry * row_len..(ry + 1) * row_len];
                for (o, &(x0, _, _)) in out.chunks_exact_mut(c).zip(&cols) {
                    for (d, s) in o.iter_mut().zip(&r[x0 * c..(x0 + 1) * c]) {
                        *d = (*s).into();
                    }
                }
                continue;
            }
            let (y0, y1, dy) = resize::bilinear_tap(ry, self.sh, self.rh, Centers::V2);
            // TF's lerp order: across first (top and bottom rows), then down.
            // A source row's horizontal lerp is shared by the output rows
            // that read it (two are kept), so each is computed once.
            let top = rows.row(y0, src, row_len, &cols, c);
            let bottom = rows.row(y1, src, row_len, &cols, c);
            let (top, bottom) = (&rows.bufs[top], &rows.bufs[bottom]);
            for ((d, &t), &b) in out.iter_mut().zip(top).zip(bottom) {
                *d = t + (b - t) * dy;
            }
        }
    }
}

/// The horizontally interpolated source rows of a resized view: two slots,
/// each the lerp across of one source row at every visible column.
struct LerpedRows {
    bufs: [Vec<f32>; 2],
    which: [Option<usize>; 2],
    next: usize,
    /// The source row being interpolated, as float32.
    row_f32: Vec<f32>,
}

impl LerpedRows {
    fn new(len: usize) -> LerpedRows {
        LerpedRows {
            bufs: [vec![0.0; len], vec![0.0; len]],
            which: [None, None],
            next: 0,
            row_f32: Vec::new(),
        }
    }

    /// The slot holding source row `y` across, computing it when absent.
    fn row<T: Copy + Into<f32>>(
        &mut self,
        y: usize,
        src: &[T],
        row_len: usize,
        cols: &[(usize, usize, f32)],
        c: usize,
    ) -> usize {
        if let Some(k) = self.which.iter().position(|w| *w == Some(y)) {
            return k;
        }
        let k = self.next;
        self.next = 1 - k;
        self.which[k] = Some(y);
        // The source row as float32 once (each value is read by about two
        // taps), then the lerps across.
        self.row_f32.clear();
        self.row_f32.extend(
            src[y * row_len..(y + 1) * row_len]
                .iter()
                .map(|&v| v.into()),
        );
        let r = &self.row_f32[..];
        let out = &mut self.bufs[k];
        match c {
            1 => lerp_across::<1>(r, cols, out),
            3 => lerp_across::<3>(r, cols, out),
            4 => lerp_across::<4>(r, cols, out),
            _ => {
                for (o, &(x0, x1, dx)) in out.chunks_exact_mut(c).zip(cols) {
                    let (a, b) = (&r[x0 * c..(x0 + 1) * c], &r[x1 * c..(x1 + 1) * c]);
                    for ((d, &a), &b) in o.iter_mut().zip(a).zip(b) {
                        *d = a + (b - a) * dx;
                    }
                }
            }
        }
        k
    }
}

/// `out[x][k] = a + (b − a)·dx` for the taps `(x0, x1, dx)` of each visible
/// column of source row `r`, with `C` channels known at compile time.
fn lerp_across<const C: usize>(r: &[f32], cols: &[(usize, usize, f32)], out: &mut [f32]) {
    for (o, &(x0, x1, dx)) in out.chunks_exact_mut(C).zip(cols) {
        let a: &[f32; C] = r[x0 * C..x0 * C + C].try_into().expect("C channels");
        let b: &[f32; C] = r[x1 * C..x1 * C + C].try_into().expect("C channels");
        for k in 0..C {
            o[k] = a[k] + (b[k] - a[k]) * dx;
        }
    }
}
