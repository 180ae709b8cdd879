//! Running the transform chain on one example: the bytes decoded (a JPEG
//! into this thread's reused buffer), then each transform on a lazy
//! [`View`], the random ones with draws from specc's one generator.
//!
//! Invariants: the draws come from a stream keyed by `(seed, epoch,
//! example index)` only, used exactly as `specc_image::random` uses them
//! (the tests below check), so an example gets the same pixels whichever
//! thread runs it and whether it is streamed or loaded; without
//! `training` the random transforms are skipped (`random_crop` becomes a
//! central crop of the same size); a bad image is an error message, never
//! a panic.

use specc_image::codec::{self, DecodeDType, Format};
use specc_image::random::{self, Draws};
use specc_image::resize;
use specc_image::Image;

use super::library_ops;
use super::transforms::{central, ImageOp, ImagePipeline};
use super::view::{Pixels, View};
use crate::prng::{mix, SplitMix64};

impl ImagePipeline {
    /// Decodes `bytes` and applies every transform: the random ones with
    /// draws keyed by `(seed, epoch, index)` when `training`, skipped (a
    /// central crop for `random_crop`) otherwise. Writes the float32 pixels,
    /// `[H, W, C]` row-major, into `out`.
    ///
    /// The transforms run on a flat `[H, W, C]` float32 buffer; the random
    /// ones use their draws exactly as `specc_image::random` does (a flip
    /// when the uniform draw is below 0.5; crop offsets `⌊u·(d − s + 1)⌋`
    /// for height, width and channels in that order; a brightness delta
    /// `−max_delta + u·2·max_delta`), which `tests` below check.
    pub fn apply(
        &self,
        bytes: &[u8],
        training: bool,
        key: (u64, u64, u64),
        out: &mut [f32],
    ) -> Result<(), String> {
        self.run(Source::Bytes(bytes), training, key, out)
    }

    /// The transforms after `decode_image` on an already decoded `[H, W, C]`
    /// image (standing for `decode_image`'s output, any dtype, taken as its
    /// float32 values), with the draws of [`apply`](Self::apply): the
    /// float32 result. For checking the transforms on TF's test images.
    pub fn apply_image(
        &self,
        image: &Image,
        training: bool,
        key: (u64, u64, u64),
    ) -> Result<Image, String> {
        let shapes = self.shapes().map_err(|(_, m)| m)?;
        let [h, w, c] = *shapes.last().ok_or("an empty image pipeline")?;
        let (h, w, c) = (h.unwrap_or(0), w.unwrap_or(0), c.unwrap_or(0));
        let mut out = vec![0f32; h * w * c];
        self.run(Source::Image(image), training, key, &mut out)?;
        ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[h, w, c]), out)
            .map(Image::F32)
            .map_err(|e| e.to_string())
    }

    fn run(
        &self,
        source: Source,
        training: bool,
        key: (u64, u64, u64),
        out: &mut [f32],
    ) -> Result<(), String> {
        let (seed, epoch, index) = key;
        let mut stream = SplitMix64::new(mix(seed ^ mix(epoch ^ mix(index.wrapping_add(1)))));
        let mut draws = move || stream.uniform01_f32();
        let mut view: Option<View> = None;
        let bytes = match source {
            Source::Bytes(b) => b,
            Source::Image(im) => {
                let s = im.shape();
                if s.len() != 3 {
                    return Err(format!("an image is [H, W, C], got {s:?}"));
                }
                let (px, _) = im
                    .to_f32()
                    .as_standard_layout()
                    .into_owned()
                    .into_raw_vec_and_offset();
                view = Some(View::of(Pixels::F32(px), s[0], s[1], s[2]));
                &[]
            }
        };
        for op in &self.ops {
            let next = match (op, view.take()) {
                (ImageOp::DecodeImage { channels }, Some(v)) if bytes.is_empty() => {
                    if *channels != 0 && *channels != v.c {
                        return Err(format!(
                            "decode_image(channels = {channels}) of an image with {} channels",
                            v.c
                        ));
                    }
                    v
                }
                (ImageOp::DecodeImage { channels }, None)
                    if Format::sniff(bytes) == Some(Format::Jpeg) =>
                {
                    // Into this thread's pixel buffer (given back below):
                    // no allocation or clearing per example.
                    let mut raw = DECODED.with(|d| std::mem::take(&mut *d.borrow_mut()));
                    let [h, w, c] = codec::decode_jpeg_into(bytes, *channels, &mut raw)
                        .map_err(|e| e.message)?;
                    View::of(Pixels::U8(raw), h, w, c)
                }
                (ImageOp::DecodeImage { channels }, None) => {
                    let decoded = codec::decode_image(bytes, *channels, DecodeDType::U8, false)
                        .map_err(|e| e.message)?;
                    let s = decoded.shape().to_vec();
                    let Image::U8(a) = decoded else {
                        return Err("decode_image returned a non-uint8 image".into());
                    };
                    let (raw, _) = a.into_raw_vec_and_offset();
                    View::of(Pixels::U8(raw), s[0], s[1], s[2])
                }
                (_, None) => return Err("the pipeline does not start with decode_image".into()),
                (ImageOp::DecodeImage { .. }, Some(_)) => {
                    return Err("decode_image after the first transform".into())
                }
                (ImageOp::Resize { size }, Some(v)) => v.resize(*size),
                (
                    ImageOp::ResizeKernel {
                        size,
                        method,
                        antialias,
                    },
                    Some(v),
                ) => v.through(|im| resize::resize(&im, *size, *method, *antialias, false))?,
                (op, Some(v)) if library_ops::handles(op) => v.through(|im| {
                    library_ops::run(op, &im, training, &mut draws).unwrap_or_else(|| {
                        Err(specc_image::ImageError::new(format!(
                            "{}: not a library transform",
                            op.name()
                        )))
                    })
                })?,
                (ImageOp::PerImageStandardization, Some(v)) => {
                    v.through(|im| specc_image::adjust::per_image_standardization(&im))?
                }
                (ImageOp::RandomContrast { lower, upper }, Some(v)) if training => {
                    v.through(|im| random::random_contrast(&im, *lower, *upper, &mut draws))?
                }
                (ImageOp::RandomHue { max_delta }, Some(v)) if training => {
                    v.through(|im| random::random_hue(&im, *max_delta, &mut draws))?
                }
                (ImageOp::RandomSaturation { lower, upper }, Some(v)) if training => {
                    v.through(|im| random::random_saturation(&im, *lower, *upper, &mut draws))?
                }
                (ImageOp::CentralCrop { fraction }, Some(v)) => {
                    let (top, h) = central(v.h, *fraction);
                    let (left, w) = central(v.w, *fraction);
                    v.crop(top, left, h, w)
                }
                (ImageOp::RandomCrop { size }, Some(v)) => {
                    if size[0] > v.h || size[1] > v.w || size[2] != v.c {
                        return Err(format!(
                            "random_crop: Need value.shape >= size, got value.shape [{}, {}, {}] and size {size:?}",
                            v.h, v.w, v.c
                        ));
                    }
                    let (top, left) = if training {
                        let top = draws.below(v.h - size[0] + 1);
                        let left = draws.below(v.w - size[1] + 1);
                        draws.below(1);
                        (top, left)
                    } else {
                        ((v.h - size[0]) / 2, (v.w - size[1]) / 2)
                    };
                    v.crop(top, left, size[0], size[1])
                }
                (ImageOp::RandomFlipLeftRight, Some(mut v)) if training => {
                    if draws.uniform() < 0.5 {
                        v.flip_lr = !v.flip_lr;
                    }
                    v
                }
                (ImageOp::RandomFlipUpDown, Some(mut v)) if training => {
                    if draws.uniform() < 0.5 {
                        v.flip_ud = !v.flip_ud;
                    }
                    v
                }
                (ImageOp::RandomBrightness { max_delta }, Some(v)) if training => {
                    let delta = -max_delta + draws.uniform() * (2.0 * max_delta);
                    let (h, w, c) = (v.h, v.w, v.c);
                    let mut px = vec![0f32; h * w * c];
                    v.materialize(&mut px);
                    px.iter_mut().for_each(|p| *p += delta);
                    View::of(Pixels::F32(px), h, w, c)
                }
                (_, Some(v)) => v,
            };
            view = Some(next);
        }
        let v = view.ok_or("an empty image pipeline")?;
        if v.h * v.w * v.c != out.len() {
            return Err(format!(
                "the image is [{}, {}, {}] after the transforms, the input needs {} values",
                v.h,
                v.w,
                v.c,
                out.len()
            ));
        }
        v.materialize(out);
        if let Pixels::U8(raw) = v.src {
            DECODED.with(|d| *d.borrow_mut() = raw);
        }
        Ok(())
    }
}

/// What the pipeline starts from: encoded bytes, or a decoded image.
enum Source<'a> {
    Bytes(&'a [u8]),
    Image(&'a Image),
}

thread_local! {
    /// The pixel buffer JPEGs are decoded into, reused by the thread's
    /// next example.
    static DECODED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use specc_image::random;
    use specc_image::resize::{Centers, ResizeMethod};

    /// `tf.image.resize(image, size, "bilinear")` of an `[h, w, c]` float
    /// image, one pixel at a time in TF's lerp form (the library's
    /// `resize` sums weighted taps instead, within an ulp of this): the
    /// reference the lazy view must equal bit for bit.
    fn resize_reference(im: &Image, size: [usize; 2]) -> Image {
        let a = im.to_f32();
        let (ih, iw, c) = (a.shape()[0], a.shape()[1], a.shape()[2]);
        let mut out = ndarray::ArrayD::<f32>::zeros(ndarray::IxDyn(&[size[0], size[1], c]));
        for y in 0..size[0] {
            let (y0, y1, dy) = resize::bilinear_tap(y, ih, size[0], Centers::V2);
            for x in 0..size[1] {
                let (x0, x1, dx) = resize::bilinear_tap(x, iw, size[1], Centers::V2);
                for k in 0..c {
                    let top = a[[y0, x0, k]] + (a[[y0, x1, k]] - a[[y0, x0, k]]) * dx;
                    let bottom = a[[y1, x0, k]] + (a[[y1, x1, k]] - a[[y1, x0, k]]) * dx;
                    out[[y, x, k]] = top + (bottom - top) * dy;
                }
            }
        }
        Image::F32(out)
    }

    /// Resizes, crops and flips composed lazily (only the kept pixels
    /// sampled, straight into the destination) equal the transforms applied
    /// one after the other, for every draw: a resize after a crop, a crop
    /// of a flipped image, a brightness change between geometric ones.
    #[test]
    fn the_lazy_view_equals_the_transforms_one_by_one() {
        let px: Vec<u8> = (0..9 * 11 * 3).map(|i| (i * 53 % 251) as u8).collect();
        let image = Image::U8(
            ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[9, 11, 3]), px).expect("shape"),
        );
        let png = codec::encode_png(&image, -1).expect("png");
        let pipeline = ImagePipeline {
            ops: vec![
                ImageOp::DecodeImage { channels: 3 },
                ImageOp::Resize { size: [13, 12] },
                ImageOp::RandomFlipLeftRight,
                ImageOp::RandomCrop { size: [10, 9, 3] },
                ImageOp::RandomFlipUpDown,
                ImageOp::RandomBrightness { max_delta: 7.0 },
                ImageOp::RandomCrop { size: [8, 8, 3] },
                ImageOp::Resize { size: [5, 6] },
                ImageOp::RandomFlipLeftRight,
            ],
        };
        for index in 0..40u64 {
            let key = (3, 1, index);
            let mut got = vec![0f32; 5 * 6 * 3];
            pipeline.apply(&png, true, key, &mut got).expect("apply");
            let mut stream = SplitMix64::new(mix(key.0 ^ mix(key.1 ^ mix(key.2 + 1))));
            let mut d = move || stream.uniform01_f32();
            let im = resize_reference(&Image::F32(image.to_f32()), [13, 12]);
            let im = random::random_flip_left_right(&im, &mut d).expect("flip");
            let im = random::random_crop(&im, &[10, 9, 3], &mut d).expect("crop");
            let im = random::random_flip_up_down(&im, &mut d).expect("flip");
            let im = random::random_brightness(&im, 7.0, &mut d).expect("brightness");
            let im = random::random_crop(&im, &[8, 8, 3], &mut d).expect("crop");
            let im = resize_reference(&im, [5, 6]);
            let im = random::random_flip_left_right(&im, &mut d).expect("flip");
            let want: Vec<f32> = im.to_f32().iter().copied().collect();
            assert_eq!(got, want, "example {index}");
        }
    }

    /// The transforms that go through `specc_image` (a resize with another
    /// method or antialias, hue, saturation, contrast, standardization)
    /// equal the library's functions with the same draws, and in
    /// evaluation the random ones are skipped while standardization stays.
    #[test]
    fn library_transforms_equal_specc_image_with_the_same_draws() {
        let px: Vec<u8> = (0..9 * 11 * 3).map(|i| (i * 29 % 253) as u8).collect();
        let image = Image::U8(
            ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[9, 11, 3]), px).expect("shape"),
        );
        let png = codec::encode_png(&image, -1).expect("png");
        let pipeline = ImagePipeline {
            ops: vec![
                ImageOp::DecodeImage { channels: 3 },
                ImageOp::ResizeKernel {
                    size: [6, 5],
                    method: ResizeMethod::Area,
                    antialias: false,
                },
                ImageOp::RandomHue { max_delta: 0.3 },
                ImageOp::RandomSaturation {
                    lower: 0.5,
                    upper: 1.5,
                },
                ImageOp::RandomContrast {
                    lower: 0.2,
                    upper: 1.8,
                },
                ImageOp::ResizeKernel {
                    size: [4, 4],
                    method: ResizeMethod::Lanczos3,
                    antialias: true,
                },
                ImageOp::PerImageStandardization,
            ],
        };
        assert_eq!(pipeline.output_shape(), Ok([4, 4, 3]));
        let float = Image::F32(image.to_f32());
        for index in 0..10u64 {
            let key = (9, 0, index);
            let mut got = vec![0f32; 4 * 4 * 3];
            pipeline.apply(&png, true, key, &mut got).expect("apply");
            let mut stream = SplitMix64::new(mix(key.0 ^ mix(key.1 ^ mix(key.2 + 1))));
            let mut d = move || stream.uniform01_f32();
            let im =
                resize::resize(&float, [6, 5], ResizeMethod::Area, false, false).expect("area");
            let im = random::random_hue(&im, 0.3, &mut d).expect("hue");
            let im = random::random_saturation(&im, 0.5, 1.5, &mut d).expect("saturation");
            let im = random::random_contrast(&im, 0.2, 1.8, &mut d).expect("contrast");
            let im =
                resize::resize(&im, [4, 4], ResizeMethod::Lanczos3, true, false).expect("lanczos");
            let im = specc_image::adjust::per_image_standardization(&im).expect("standardize");
            let want: Vec<f32> = im.to_f32().iter().copied().collect();
            assert_eq!(got, want, "example {index}");
        }
        // Evaluation: no random transform, standardization still applied.
        let mut got = vec![0f32; 4 * 4 * 3];
        pipeline
            .apply(&png, false, (9, 0, 0), &mut got)
            .expect("apply");
        let im = resize::resize(&float, [6, 5], ResizeMethod::Area, false, false).expect("area");
        let im = resize::resize(&im, [4, 4], ResizeMethod::Lanczos3, true, false).expect("lanczos");
        let im = specc_image::adjust::per_image_standardization(&im).expect("standardize");
        let want: Vec<f32> = im.to_f32().iter().copied().collect();
        assert_eq!(got, want, "evaluation");
    }

    /// The pipeline's flat-buffer transforms use their draws as
    /// `specc_image::random` does: the same stream gives the same pixels.
    #[test]
    fn the_pipeline_draws_as_specc_image_random_does() {
        let px: Vec<u8> = (0..6 * 7 * 3).map(|i| (i * 37 % 251) as u8).collect();
        let image = Image::U8(
            ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[6, 7, 3]), px).expect("shape"),
        );
        let png = codec::encode_png(&image, -1).expect("png");
        let pipeline = ImagePipeline {
            ops: vec![
                ImageOp::DecodeImage { channels: 3 },
                ImageOp::RandomCrop { size: [4, 5, 3] },
                ImageOp::RandomFlipLeftRight,
                ImageOp::RandomFlipUpDown,
                ImageOp::RandomBrightness { max_delta: 10.0 },
            ],
        };
        for index in 0..20u64 {
            let key = (5, 2, index);
            let mut got = vec![0f32; 4 * 5 * 3];
            pipeline.apply(&png, true, key, &mut got).expect("apply");
            let mut stream = SplitMix64::new(mix(key.0 ^ mix(key.1 ^ mix(key.2 + 1))));
            let mut d = move || stream.uniform01_f32();
            let im = Image::F32(image.to_f32());
            let im = random::random_crop(&im, &[4, 5, 3], &mut d).expect("crop");
            let im = random::random_flip_left_right(&im, &mut d).expect("flip");
            let im = random::random_flip_up_down(&im, &mut d).expect("flip");
            let im = random::random_brightness(&im, 10.0, &mut d).expect("brightness");
            let want: Vec<f32> = im.to_f32().iter().copied().collect();
            assert_eq!(got, want, "example {index}");
        }
    }
}
