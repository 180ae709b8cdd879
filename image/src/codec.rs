//! The `tf.io` image codecs: `decode_png`, `decode_jpeg`, `decode_bmp`,
//! `decode_gif`, `decode_image` (format sniffed from the bytes), `encode_png`
//! and `encode_jpeg`, with TF's `channels`, `dtype` and `expand_animations`.
//!
//! Invariants:
//! - Decoding never panics and never allocates more than [`MAX_PIXELS`]
//!   pixels per frame: truncated, corrupt or oversized bytes are an
//!   [`ImageError`] naming the format.
//! - PNG, BMP and GIF decode exactly as TF does (libpng's transformations for
//!   `channels`: RGB to gray with libpng's fixed-point 0.299/0.587/0.114
//!   weights, alpha stripped, an opaque alpha added; GIF frames composited
//!   over the previous frame where a pixel is transparent, the first over
//!   black). JPEG is decoded by `zune-jpeg` (an accurate integer IDCT and
//!   fancy chroma upsampling, libjpeg-turbo's `JDCT_ISLOW` path): TF's default
//!   `dct_method` (`INTEGER_FAST`, libjpeg's `JDCT_IFAST`) differs from it by
//!   a few levels per channel; [`JPEG_MAX_LEVEL_DIFF`] is the bound the golden
//!   tests assert.
//! - Encoders write TF's layouts: `encode_png` takes uint8 or uint16
//!   `[H, W, 1..=4]`, `encode_jpeg` uint8 `[H, W, 1|3]` with 4:2:0 chroma
//!   (TF's `chroma_downsampling=True`). Bytes differ from TF's encoders
//!   (another zlib, another JPEG encoder); decoded pixels are what compare.

use crate::tensor::{Image, ImageError, Result};
use ndarray::{ArrayD, IxDyn};
use std::borrow::Cow;

/// The largest frame (height × width) a decoder accepts: 2^28 pixels
/// (a 16384 × 16384 image); larger headers are refused before allocating.
pub const MAX_PIXELS: usize = 1 << 28;

/// The largest difference, in levels of 255, between this crate's JPEG
/// decode and TF's (`dct_method` `INTEGER_FAST`, TF's default, or
/// `INTEGER_ACCURATE`) that the golden tests accept. Measured on the golden
/// JPEGs (q90, 4:2:0): at most 3 levels on luma (`channels=1`), 10 on RGB
/// against `INTEGER_FAST` and 9 against `INTEGER_ACCURATE`, the difference
/// being mostly zune-jpeg's chroma upsampling next to sharp colour edges
/// (Pillow's libjpeg-turbo decode is itself 6 levels from TF's default).
pub const JPEG_MAX_LEVEL_DIFF: u8 = 12;

/// An image format `decode_image` recognises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// PNG (`\x89PNG`).
    Png,
    /// JPEG (`\xff\xd8\xff`).
    Jpeg,
    /// GIF (`GIF8`).
    Gif,
    /// BMP (`BM`).
    Bmp,
}

impl Format {
    /// The format of these bytes, from their magic number (TF's sniffing).
    pub fn sniff(bytes: &[u8]) -> Option<Format> {
        if bytes.starts_with(b"\x89PNG") {
            Some(Format::Png)
        } else if bytes.starts_with(b"\xff\xd8\xff") {
            Some(Format::Jpeg)
        } else if bytes.starts_with(b"GIF8") {
            Some(Format::Gif)
        } else if bytes.starts_with(b"BM") {
            Some(Format::Bmp)
        } else {
            None
        }
    }

    /// The format of a file name's extension (`.png`, `.jpg`/`.jpeg`,
    /// `.gif`, `.bmp`; case-insensitive), Keras's `ALLOWLIST_FORMATS`.
    pub fn from_extension(name: &str) -> Option<Format> {
        let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
        Some(match ext.as_str() {
            "png" => Format::Png,
            "jpg" | "jpeg" => Format::Jpeg,
            "gif" => Format::Gif,
            "bmp" => Format::Bmp,
            _ => return None,
        })
    }
}

fn err(format: &str, what: impl std::fmt::Display) -> ImageError {
    ImageError::new(format!("{format}: {what}"))
}

fn check_channels(op: &str, channels: usize, allowed: &[usize]) -> Result<()> {
    if allowed.contains(&channels) {
        Ok(())
    } else {
        Err(ImageError::new(format!(
            "{op}: `channels` must be one of {allowed:?}, got {channels}"
        )))
    }
}

fn check_size(format: &str, h: usize, w: usize) -> Result<()> {
    if h == 0 || w == 0 {
        return Err(err(format, format!("empty image ({h}x{w})")));
    }
    match h.checked_mul(w) {
        Some(n) if n <= MAX_PIXELS => Ok(()),
        _ => Err(err(
            format,
            format!("image of {h}x{w} pixels is larger than {MAX_PIXELS} pixels"),
        )),
    }
}

/// libpng's `png_set_rgb_to_gray(…, 0.299, 0.587)` on 8 bits (TF's call):
/// 15-bit fixed-point weights `29900 * 32768 / 100000` = 9797, 19234 and
/// the rest, 3737, truncated (libpng without a gamma table).
fn gray8(r: u8, g: u8, b: u8) -> u8 {
    if r == g && g == b {
        return r;
    }
    ((9797 * r as u32 + 19234 * g as u32 + 3737 * b as u32) >> 15) as u8
}

fn gray16(r: u16, g: u16, b: u16) -> u16 {
    if r == g && g == b {
        return r;
    }
    ((9797 * r as u64 + 19234 * g as u64 + 3737 * b as u64) >> 15) as u16
}

/// Converts interleaved pixels of `from` channels (1: gray, 2: gray+alpha,
/// 3: RGB, 4: RGBA) to `to` channels the way libpng's transformations do
/// for TF: gray replicated, alpha stripped or added opaque (`max`).
fn convert_channels<T: Copy>(
    data: &[T],
    from: usize,
    to: usize,
    max: T,
    gray: impl Fn(T, T, T) -> T,
) -> Vec<T> {
    if from == to {
        return data.to_vec();
    }
    let n = data.len() / from;
    let mut out = Vec::with_capacity(n * to);
    for p in data.chunks_exact(from) {
        let (r, g, b, a) = match from {
            1 => (p[0], p[0], p[0], max),
            2 => (p[0], p[0], p[0], p[1]),
            3 => (p[0], p[1], p[2], max),
            _ => (p[0], p[1], p[2], p[3]),
        };
        let color = from >= 3;
        match to {
            1 => out.push(if color { gray(r, g, b) } else { r }),
            2 => {
                out.push(if color { gray(r, g, b) } else { r });
                out.push(a);
            }
            3 => out.extend_from_slice(&[r, g, b]),
            _ => out.extend_from_slice(&[r, g, b, a]),
        }
    }
    out
}

fn array<T>(shape: &[usize], data: Vec<T>) -> Result<ArrayD<T>> {
    ArrayD::from_shape_vec(IxDyn(shape), data)
        .map_err(|e| ImageError::new(format!("decoded buffer does not fit its shape: {e}")))
}

/// The dtype a decoder returns: TF's `dtype` argument of `decode_png` and
/// `decode_image` (`uint8`, `uint16`; `float32` through
/// `convert_image_dtype`'s `x * (1 / max)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeDType {
    /// `tf.uint8` (the default).
    U8,
    /// `tf.uint16`.
    U16,
    /// `tf.float32`, scaled to [0, 1].
    F32,
}

/// `tf.io.decode_png(contents, channels, dtype)`: `channels` 0 keeps the
/// stored channels (palette images expand to RGB, or RGBA with a
/// transparency chunk; 1/2/4-bit gray scales to 8 bits), 1 to 4 convert.
/// 16-bit images decoded as uint8 keep the high byte (libpng's
/// `png_set_strip_16`); 8-bit images decoded as uint16 are scaled by 257.
/// Animated PNGs decode their first frame.
pub fn decode_png(contents: &[u8], channels: usize, dtype: DecodeDType) -> Result<Image> {
    check_channels("decode_png", channels, &[0, 1, 2, 3, 4])?;
    let mut decoder = png::Decoder::new(std::io::Cursor::new(contents));
    decoder.set_transformations(png::Transformations::EXPAND);
    let mut reader = decoder.read_info().map_err(|e| err("PNG", e))?;
    let (w, h) = {
        let info = reader.info();
        (info.width as usize, info.height as usize)
    };
    check_size("PNG", h, w)?;
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| err("PNG", "image too large"))?;
    let mut buf = vec![0u8; size];
    let frame = reader.next_frame(&mut buf).map_err(|e| err("PNG", e))?;
    let stored = frame.color_type.samples();
    let sixteen = frame.bit_depth == png::BitDepth::Sixteen;
    let line = frame.line_size;
    let want = if channels == 0 { stored } else { channels };
    let bytes_per_sample = if sixteen { 2 } else { 1 };
    let row_len = w * stored * bytes_per_sample;
    if line < row_len || buf.len() < line * h {
        return Err(err("PNG", "decoded rows are shorter than the image"));
    }
    let mut rows = Vec::with_capacity(h * row_len);
    for y in 0..h {
        rows.extend_from_slice(&buf[y * line..y * line + row_len]);
    }
    if sixteen {
        let samples: Vec<u16> = rows
            .chunks_exact(2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .collect();
        let px = convert_channels(&samples, stored, want, u16::MAX, gray16);
        let shape = [h, w, want];
        match dtype {
            DecodeDType::U16 => Ok(Image::U16(array(&shape, px)?)),
            DecodeDType::U8 => Ok(Image::U8(array(
                &shape,
                px.iter().map(|&v| (v >> 8) as u8).collect(),
            )?)),
            DecodeDType::F32 => {
                let s = (1.0f64 / 65535.0) as f32;
                Ok(Image::F32(array(
                    &shape,
                    px.iter().map(|&v| v as f32 * s).collect(),
                )?))
            }
        }
    } else {
        let px = convert_channels(&rows, stored, want, u8::MAX, gray8);
        finish_u8(&[h, w, want], px, dtype)
    }
}

/// uint8 pixels in the requested dtype (uint16 scales by 257, float32 by
/// `1 / 255` in float32 as `convert_image_dtype` does).
fn finish_u8(shape: &[usize], px: Vec<u8>, dtype: DecodeDType) -> Result<Image> {
    match dtype {
        DecodeDType::U8 => Ok(Image::U8(array(shape, px)?)),
        DecodeDType::U16 => Ok(Image::U16(array(
            shape,
            px.iter().map(|&v| v as u16 * 257).collect(),
        )?)),
        DecodeDType::F32 => {
            let s = (1.0f64 / 255.0) as f32;
            Ok(Image::F32(array(
                shape,
                px.iter().map(|&v| v as f32 * s).collect(),
            )?))
        }
    }
}

/// `tf.io.decode_jpeg(contents, channels)`: `channels` 0 keeps the stored
/// components (1 or 3), 1 decodes the luma only, 3 converts to RGB. See
/// [`JPEG_MAX_LEVEL_DIFF`] for the distance to TF's default IDCT.
pub fn decode_jpeg(contents: &[u8], channels: usize) -> Result<Image> {
    let mut px = Vec::new();
    let shape = decode_jpeg_into(contents, channels, &mut px)?;
    Ok(Image::U8(array(&shape, px)?))
}

/// [`decode_jpeg`] into `out` (resized to the image; a buffer reused from
/// image to image is neither reallocated nor cleared first): `[H, W, C]`.
pub fn decode_jpeg_into(contents: &[u8], channels: usize, out: &mut Vec<u8>) -> Result<[usize; 3]> {
    check_channels("decode_jpeg", channels, &[0, 1, 3])?;
    use zune_core::colorspace::ColorSpace;
    use zune_core::options::DecoderOptions;
    // One decoder: the headers, the size check, then the pixels in the
    // colour space the channels ask for (the headers are parsed once).
    let opts = DecoderOptions::default()
        .set_max_width(1 << 16)
        .set_max_height(1 << 16);
    let mut decoder = zune_jpeg::JpegDecoder::new_with_options(
        zune_core::bytestream::ZCursor::new(contents),
        opts,
    );
    decoder.decode_headers().map_err(|e| err("JPEG", e))?;
    let info = decoder
        .info()
        .ok_or_else(|| err("JPEG", "no frame header"))?;
    let (h, w) = (info.height as usize, info.width as usize);
    check_size("JPEG", h, w)?;
    let want = match channels {
        0 => {
            if info.components == 1 {
                1
            } else {
                3
            }
        }
        c => c,
    };
    let space = if want == 1 {
        ColorSpace::Luma
    } else {
        ColorSpace::RGB
    };
    decoder.set_options(opts.jpeg_set_out_colorspace(space));
    let size = decoder
        .output_buffer_size()
        .ok_or_else(|| err("JPEG", "no frame header"))?;
    if size != h * w * want {
        return Err(err(
            "JPEG",
            format!("the decoder would write {size} bytes for a {h}x{w}x{want} image"),
        ));
    }
    out.resize(size, 0);
    decoder.decode_into(out).map_err(|e| err("JPEG", e))?;
    Ok([h, w, want])
}

fn le16(b: &[u8], at: usize) -> Result<u16> {
    b.get(at..at + 2)
        .map(|s| u16::from_le_bytes([s[0], s[1]]))
        .ok_or_else(|| err("BMP", "truncated header"))
}

fn le32(b: &[u8], at: usize) -> Result<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| err("BMP", "truncated header"))
}

/// `tf.io.decode_bmp(contents, channels)`: uncompressed 24-bit (BGR) and
/// 32-bit (BGRA) files, and 8-bit files read as gray (TF reads the bytes,
/// not a palette); rows bottom-up unless the height is negative, each row
/// padded to 4 bytes. `channels` is 0 (as stored) or must match the file,
/// as TF requires.
pub fn decode_bmp(contents: &[u8], channels: usize) -> Result<Image> {
    check_channels("decode_bmp", channels, &[0, 1, 3, 4])?;
    if !contents.starts_with(b"BM") {
        return Err(err("BMP", "not a BMP file (no `BM` magic)"));
    }
    let offset = le32(contents, 10)? as usize;
    let header = le32(contents, 14)?;
    if header < 40 {
        return Err(err("BMP", format!("unsupported header of {header} bytes")));
    }
    let width = le32(contents, 18)? as i32;
    let height = le32(contents, 22)? as i32;
    let bpp = le16(contents, 28)?;
    let compression = le32(contents, 30)?;
    // 0 = BI_RGB, 3 = BI_BITFIELDS (Pillow's 32-bit files; TF ignores masks).
    if compression != 0 && compression != 3 {
        return Err(err(
            "BMP",
            format!("compressed BMP (compression {compression}) is not supported"),
        ));
    }
    let stored = match bpp {
        8 => 1,
        24 => 3,
        32 => 4,
        _ => {
            return Err(err(
                "BMP",
                format!("{bpp} bits per pixel is not supported (8, 24 or 32)"),
            ))
        }
    };
    if channels != 0 && channels != stored {
        return Err(err(
            "BMP",
            format!("`channels` is {channels} but the file has {stored} channels"),
        ));
    }
    if width <= 0 || height == 0 || height == i32::MIN {
        return Err(err("BMP", format!("bad size {width}x{height}")));
    }
    let (w, h) = (width as usize, height.unsigned_abs() as usize);
    check_size("BMP", h, w)?;
    let row = (w * stored * 8).div_ceil(32) * 4;
    let end = row
        .checked_mul(h)
        .and_then(|n| n.checked_add(offset))
        .ok_or_else(|| err("BMP", "image too large"))?;
    if contents.len() < end {
        return Err(err(
            "BMP",
            format!("truncated: {} bytes, the pixels need {end}", contents.len()),
        ));
    }
    let mut px = Vec::with_capacity(h * w * stored);
    for y in 0..h {
        let src = if height > 0 { h - 1 - y } else { y };
        let r = &contents[offset + src * row..offset + src * row + w * stored];
        for p in r.chunks_exact(stored) {
            match stored {
                1 => px.push(p[0]),
                3 => px.extend_from_slice(&[p[2], p[1], p[0]]),
                _ => px.extend_from_slice(&[p[2], p[1], p[0], p[3]]),
            }
        }
    }
    Ok(Image::U8(array(&[h, w, stored], px)?))
}

/// `tf.io.decode_gif(contents)`: every frame, `[F, H, W, 3]` uint8. A
/// frame smaller than the screen, or with transparent pixels, shows the
/// previous frame there (the first frame: black), as TF composites.
pub fn decode_gif(contents: &[u8]) -> Result<Image> {
    let mut options = gif::DecodeOptions::new();
    options.set_color_output(gif::ColorOutput::RGBA);
    let mut decoder = options
        .read_info(std::io::Cursor::new(contents))
        .map_err(|e| err("GIF", e))?;
    let (w, h) = (decoder.width() as usize, decoder.height() as usize);
    check_size("GIF", h, w)?;
    let mut frames: Vec<u8> = Vec::new();
    let mut count = 0usize;
    while let Some(frame) = decoder.read_next_frame().map_err(|e| err("GIF", e))? {
        if (count + 1).saturating_mul(h * w) > MAX_PIXELS {
            return Err(err("GIF", "too many frames"));
        }
        let start = frames.len();
        if count == 0 {
            frames.resize(h * w * 3, 0);
        } else {
            frames.extend_from_within(start - h * w * 3..start);
        }
        let canvas = &mut frames[start..];
        let (fl, ft) = (frame.left as usize, frame.top as usize);
        let (fw, fh) = (frame.width as usize, frame.height as usize);
        let buffer: &Cow<'_, [u8]> = &frame.buffer;
        if buffer.len() < fw * fh * 4 {
            return Err(err("GIF", "frame data shorter than the frame"));
        }
        for y in 0..fh {
            let cy = ft + y;
            if cy >= h {
                break;
            }
            for x in 0..fw {
                let cx = fl + x;
                if cx >= w {
                    break;
                }
                let p = &buffer[(y * fw + x) * 4..(y * fw + x) * 4 + 4];
                if p[3] != 0 {
                    let o = (cy * w + cx) * 3;
                    canvas[o..o + 3].copy_from_slice(&p[..3]);
                }
            }
        }
        count += 1;
    }
    if count == 0 {
        return Err(err("GIF", "no frames"));
    }
    Ok(Image::U8(array(&[count, h, w, 3], frames)?))
}

/// `tf.io.decode_image(contents, channels, dtype, expand_animations)`: the
/// format from the magic number. GIFs are `[F, H, W, 3]` with
/// `expand_animations` (TF's default) and their first frame `[H, W, 3]`
/// without; every other format is `[H, W, C]`. `channels` converts as each
/// decoder does (GIF accepts 0 and 3 only, as in TF).
pub fn decode_image(
    contents: &[u8],
    channels: usize,
    dtype: DecodeDType,
    expand_animations: bool,
) -> Result<Image> {
    check_channels("decode_image", channels, &[0, 1, 3, 4])?;
    let format = Format::sniff(contents).ok_or_else(|| {
        ImageError::new("decode_image: unknown image format (not JPEG, PNG, GIF or BMP)")
    })?;
    decode_format(format, contents, channels, dtype, expand_animations)
}

/// Decodes bytes of a known format (see [`decode_image`]).
pub fn decode_format(
    format: Format,
    contents: &[u8],
    channels: usize,
    dtype: DecodeDType,
    expand_animations: bool,
) -> Result<Image> {
    if format == Format::Png {
        return decode_png(contents, channels, dtype);
    }
    let image = match format {
        Format::Jpeg => {
            if channels == 4 {
                return Err(ImageError::new("decode_jpeg: `channels` must be 0, 1 or 3"));
            }
            decode_jpeg(contents, channels)?
        }
        Format::Bmp => decode_bmp(contents, channels)?,
        _ => {
            check_channels("decode_gif", channels, &[0, 3])?;
            let frames = decode_gif(contents)?;
            if expand_animations {
                frames
            } else {
                let Image::U8(a) = frames else {
                    return Err(ImageError::new("decode_gif returned a non-uint8 image"));
                };
                let s = a.shape().to_vec();
                let first: Vec<u8> = a.iter().take(s[1] * s[2] * 3).copied().collect();
                Image::U8(array(&[s[1], s[2], 3], first)?)
            }
        }
    };
    let Image::U8(a) = image else {
        return Err(ImageError::new("decoder returned a non-uint8 image"));
    };
    let shape = a.shape().to_vec();
    finish_u8(&shape, a.into_raw_vec_and_offset().0, dtype)
}

fn hwc(op: &str, image: &Image, allowed: &[usize]) -> Result<(usize, usize, usize)> {
    let s = image.shape();
    if s.len() != 3 || !allowed.contains(&s[2]) || s[0] == 0 || s[1] == 0 {
        return Err(ImageError::new(format!(
            "{op}: `image` must be [height, width, channels] with channels in {allowed:?}, got {s:?}"
        )));
    }
    Ok((s[0], s[1], s[2]))
}

/// `tf.io.encode_png(image, compression)`: uint8 or uint16 `[H, W, C]`, C
/// in 1..=4; `compression` −1 (zlib's default) or 0..=9.
pub fn encode_png(image: &Image, compression: i32) -> Result<Vec<u8>> {
    let (h, w, c) = hwc("encode_png", image, &[1, 2, 3, 4])?;
    if !(-1..=9).contains(&compression) {
        return Err(ImageError::new(format!(
            "encode_png: `compression` must be in [-1, 9], got {compression}"
        )));
    }
    let (depth, data): (png::BitDepth, Vec<u8>) = match image {
        Image::U8(a) => (png::BitDepth::Eight, a.iter().copied().collect()),
        Image::U16(a) => (
            png::BitDepth::Sixteen,
            a.iter().flat_map(|v| v.to_be_bytes()).collect(),
        ),
        other => {
            return Err(ImageError::new(format!(
                "encode_png: `image` must be uint8 or uint16, got {}",
                other.dtype().name()
            )))
        }
    };
    let mut out = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut out, w as u32, h as u32);
        encoder.set_color(match c {
            1 => png::ColorType::Grayscale,
            2 => png::ColorType::GrayscaleAlpha,
            3 => png::ColorType::Rgb,
            _ => png::ColorType::Rgba,
        });
        encoder.set_depth(depth);
        encoder.set_deflate_compression(match compression {
            -1 => png::DeflateCompression::Level(6),
            0 => png::DeflateCompression::NoCompression,
            n => png::DeflateCompression::Level(n as u8),
        });
        let mut writer = encoder.write_header().map_err(|e| err("PNG", e))?;
        writer.write_image_data(&data).map_err(|e| err("PNG", e))?;
        writer.finish().map_err(|e| err("PNG", e))?;
    }
    Ok(out)
}

/// `tf.io.encode_jpeg(image, quality)`: uint8 `[H, W, 1|3]`, baseline,
/// 4:2:0 chroma for RGB; `quality` 0..=100 (0 is taken as 1).
pub fn encode_jpeg(image: &Image, quality: i32) -> Result<Vec<u8>> {
    let (h, w, c) = hwc("encode_jpeg", image, &[1, 3])?;
    if !(0..=100).contains(&quality) {
        return Err(ImageError::new(format!(
            "encode_jpeg: `quality` must be in [0, 100], got {quality}"
        )));
    }
    if h > u16::MAX as usize || w > u16::MAX as usize {
        return Err(ImageError::new(format!(
            "encode_jpeg: image of {h}x{w} exceeds JPEG's 65535 limit"
        )));
    }
    let Image::U8(a) = image else {
        return Err(ImageError::new(format!(
            "encode_jpeg: `image` must be uint8, got {}",
            image.dtype().name()
        )));
    };
    let data: Vec<u8> = a.iter().copied().collect();
    let mut out = Vec::new();
    let mut encoder = jpeg_encoder::Encoder::new(&mut out, quality.max(1) as u8);
    encoder.set_sampling_factor(jpeg_encoder::SamplingFactor::R_4_2_0);
    let color = if c == 1 {
        jpeg_encoder::ColorType::Luma
    } else {
        jpeg_encoder::ColorType::Rgb
    };
    encoder
        .encode(&data, w as u16, h as u16, color)
        .map_err(|e| err("JPEG", e))?;
    Ok(out)
}
