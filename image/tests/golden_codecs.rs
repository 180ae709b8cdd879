//! Every case of `images.json`'s `codecs` against TensorFlow's decodes, read
//! at test time: the case's file (found through the golden directory, so
//! `SPECC_GOLDEN_DIR` draws work) equals its base64 bytes; each recorded
//! decode (`decode_png`, `decode_png_channels_N`, `decode_image`,
//! `decode_jpeg*`, `decode_bmp`, `decode_gif`) matches: exactly for PNG, BMP
//! and GIF, within `JPEG_MAX_LEVEL_DIFF` levels for JPEG (TF's default IDCT
//! is libjpeg's IFAST); and the case's input survives our encoder and
//! decoder (exactly for PNG; for JPEG within the distance TF's own encode
//! and decode of it shows, `max_abs_diff_decoded_vs_source`, plus the same
//! JPEG bound).

use specc_image::codec::{self, DecodeDType, JPEG_MAX_LEVEL_DIFF};
use specc_image::Image;
use specc_testkit::golden::golden_dir;

fn codec_cases() -> Vec<serde_json::Value> {
    let path = golden_dir().join("images.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let v: serde_json::Value = serde_json::from_str(&text).expect("images.json parses");
    v["codecs"].as_array().expect("a `codecs` list").clone()
}

fn case(name: &str) -> serde_json::Value {
    codec_cases()
        .into_iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no codecs case {name} in images.json"))
}

fn base64(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a') as u32 + 26,
            b'0'..=b'9' => (c - b'0') as u32 + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => panic!("bad base64 character {c}"),
        }
    };
    let clean: Vec<u8> = text
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && *c != b'=')
        .collect();
    let mut out = Vec::new();
    for chunk in clean.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= value(c) << (18 - 6 * i);
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..chunk.len() - 1]);
    }
    out
}

/// A golden tensor: dtype, shape and flattened integer values.
fn tensor(v: &serde_json::Value) -> (String, Vec<usize>, Vec<i64>) {
    fn flat(v: &serde_json::Value, out: &mut Vec<i64>) {
        match v {
            serde_json::Value::Array(a) => a.iter().for_each(|x| flat(x, out)),
            other => out.push(other.as_i64().expect("an integer pixel")),
        }
    }
    let dtype = v["dtype"].as_str().expect("dtype").to_string();
    let shape = v["shape"]
        .as_array()
        .expect("shape")
        .iter()
        .map(|d| d.as_u64().expect("a dim") as usize)
        .collect();
    let mut values = Vec::new();
    flat(&v["values"], &mut values);
    (dtype, shape, values)
}

fn pixels(image: &Image) -> Vec<i64> {
    image.to_f64().iter().map(|&v| v as i64).collect()
}

fn image_of(dtype: &str, shape: &[usize], values: &[i64]) -> Image {
    let shape = ndarray::IxDyn(shape);
    match dtype {
        "uint8" => Image::U8(
            ndarray::ArrayD::from_shape_vec(shape, values.iter().map(|&v| v as u8).collect())
                .expect("shape"),
        ),
        "uint16" => Image::U16(
            ndarray::ArrayD::from_shape_vec(shape, values.iter().map(|&v| v as u16).collect())
                .expect("shape"),
        ),
        other => panic!("unexpected input dtype {other}"),
    }
}

/// The mean absolute difference of two lists of pixels.
fn mean_abs(got: &[i64], want: &[i64]) -> f64 {
    let total: i64 = got.iter().zip(want).map(|(a, b)| (a - b).abs()).sum();
    total as f64 / want.len().max(1) as f64
}

/// The largest per-value difference; panics when shapes differ.
fn max_diff(what: &str, got: &Image, want_shape: &[usize], want: &[i64]) -> i64 {
    assert_eq!(got.shape(), want_shape, "{what}: shape");
    let got = pixels(got);
    assert_eq!(got.len(), want.len(), "{what}: number of values");
    got.iter()
        .zip(want)
        .map(|(a, b)| (a - b).abs())
        .max()
        .unwrap_or(0)
}

fn check_case(c: &serde_json::Value) {
    let name = c["name"].as_str().expect("name");
    let enc = &c["encoded"];
    let file = golden_dir().join(enc["file"].as_str().expect("encoded.file"));
    let bytes = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    assert_eq!(
        bytes,
        base64(enc["base64"].as_str().expect("encoded.base64")),
        "{name}: the file's bytes equal the case's base64"
    );
    assert_eq!(
        bytes.len() as u64,
        enc["num_bytes"].as_u64().expect("num_bytes")
    );

    let outputs = c["outputs"].as_object().expect("outputs");
    assert!(!outputs.is_empty(), "{name}: no outputs");
    let jpeg_bound = JPEG_MAX_LEVEL_DIFF as i64;
    for (key, out) in outputs {
        let (dtype, shape, want) = tensor(out);
        let what = format!("{name}: {key}");
        let dt = match dtype.as_str() {
            "uint8" => DecodeDType::U8,
            "uint16" => DecodeDType::U16,
            other => panic!("{what}: unexpected dtype {other}"),
        };
        let channels_arg = key
            .rsplit_once("_channels_")
            .map(|(_, n)| n.parse::<usize>().expect("a channel count"))
            .unwrap_or(0);
        let (got, bound) = if key.starts_with("decode_png") {
            (codec::decode_png(&bytes, channels_arg, dt), 0)
        } else if key == "decode_image" {
            (codec::decode_image(&bytes, 0, dt, true), 0)
        } else if key.starts_with("decode_jpeg") {
            (codec::decode_jpeg(&bytes, channels_arg), jpeg_bound)
        } else if key == "decode_bmp" {
            (codec::decode_bmp(&bytes, 0), 0)
        } else if key == "decode_gif" {
            (codec::decode_gif(&bytes), 0)
        } else {
            panic!("{what}: no decoder for this output")
        };
        let got = got.unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(got.dtype().name(), dtype, "{what}: dtype");
        let diff = max_diff(&what, &got, &shape, &want);
        // The sniffing decoder's JPEG is the JPEG decoder's.
        let bound =
            if key == "decode_image" && codec::Format::sniff(&bytes) == Some(codec::Format::Jpeg) {
                jpeg_bound
            } else {
                bound
            };
        assert!(
            diff <= bound,
            "{what}: max difference {diff} levels from TF's decode (bound {bound})"
        );
        eprintln!("{what}: max difference {diff}");
    }

    // The inputs through our encoder and decoder.
    let inputs = c["inputs"].as_object().expect("inputs");
    let (key, input) = inputs.iter().next().expect("one input");
    let (dtype, shape, values) = tensor(input);
    let op = c["op"].as_str().expect("op");
    if op.contains("encode_png") {
        let image = image_of(&dtype, &shape, &values);
        let level = c["args"]["compression"].as_i64().unwrap_or(-1) as i32;
        let png = codec::encode_png(&image, level).expect("encode_png");
        let dt = if dtype == "uint16" {
            DecodeDType::U16
        } else {
            DecodeDType::U8
        };
        let back = codec::decode_png(&png, 0, dt).expect("decode our PNG");
        assert_eq!(back, image, "{name}: PNG round trip of `{key}`");
    } else if op.contains("encode_jpeg") {
        let image = image_of(&dtype, &shape, &values);
        let quality = c["args"]["quality"].as_i64().expect("quality") as i32;
        let jpg = codec::encode_jpeg(&image, quality).expect("encode_jpeg");
        let back = codec::decode_jpeg(&jpg, 0).expect("decode our JPEG");
        let what = format!("{name}: JPEG round trip");
        max_diff(&what, &back, &shape, &values);
        let ours = mean_abs(&pixels(&back), &values);
        // TF's own encode and decode of the same input, from the file.
        let (_, _, tf_decode) = tensor(&c["outputs"]["decode_jpeg"]);
        let tf = mean_abs(&tf_decode, &values);
        eprintln!("{what}: mean |error| {ours:.3} levels (TF's {tf:.3})");
        // Another encoder (quantization tables scaled alike, other rounding):
        // as close to the source on average as TF's, within half again.
        assert!(
            ours <= 1.5 * tf + 1.0,
            "{what}: mean error {ours:.3} levels from the source, TF's {tf:.3}"
        );
    } else {
        // BMP and GIF: the files hold the inputs exactly.
        let image = match c["outputs"].as_object().and_then(|o| o.keys().next()) {
            Some(k) if k == "decode_gif" => codec::decode_gif(&bytes),
            _ => codec::decode_bmp(&bytes, 0),
        }
        .expect("decode");
        assert_eq!(
            max_diff(name, &image, &shape, &values),
            0,
            "{name}: the file holds `{key}`"
        );
    }
}

macro_rules! codec_case_tests {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                check_case(&case(stringify!($name)));
            }
        )*

        #[test]
        fn every_other_case_in_the_file_matches_tensorflow() {
            let listed = [$(stringify!($name)),*];
            for c in codec_cases() {
                if !listed.contains(&c["name"].as_str().expect("name")) {
                    check_case(&c);
                }
            }
        }
    };
}

codec_case_tests!(
    png_rgb,
    png_gray,
    png_rgba,
    png_rgb16,
    jpeg_rgb,
    jpeg_rgb_noise,
    bmp_rgb,
    bmp_rgba,
    gif_two_frames,
);

/// Corrupt and truncated bytes are errors, never panics.
#[test]
fn corrupt_and_truncated_files_are_errors() {
    for c in codec_cases() {
        let enc = &c["encoded"];
        let bytes = std::fs::read(golden_dir().join(enc["file"].as_str().expect("file")))
            .expect("the case's file");
        for cut in [
            0,
            1,
            2,
            8,
            16,
            bytes.len() / 2,
            bytes.len().saturating_sub(1),
        ] {
            let _ = codec::decode_image(&bytes[..cut], 0, DecodeDType::U8, true);
        }
        assert!(
            codec::decode_image(&bytes[..bytes.len() / 2], 0, DecodeDType::U8, true).is_err()
                || codec::Format::sniff(&bytes) == Some(codec::Format::Jpeg),
            "{}: half a file decodes",
            c["name"]
        );
        let mut flipped = bytes.clone();
        for i in (bytes.len() / 3..bytes.len()).step_by(7) {
            flipped[i] ^= 0x5a;
        }
        let _ = codec::decode_image(&flipped, 0, DecodeDType::U8, true);
    }
    assert!(codec::decode_image(b"not an image", 0, DecodeDType::U8, true).is_err());
    assert!(codec::decode_image(b"", 0, DecodeDType::U8, true).is_err());
    // A BMP header claiming a huge image is refused before allocating.
    let mut bmp = b"BM".to_vec();
    bmp.extend_from_slice(&[0; 8]);
    bmp.extend_from_slice(&54u32.to_le_bytes());
    bmp.extend_from_slice(&40u32.to_le_bytes());
    bmp.extend_from_slice(&100_000i32.to_le_bytes());
    bmp.extend_from_slice(&100_000i32.to_le_bytes());
    bmp.extend_from_slice(&1u16.to_le_bytes());
    bmp.extend_from_slice(&24u16.to_le_bytes());
    bmp.extend_from_slice(&[0; 24]);
    assert!(codec::decode_bmp(&bmp, 0).is_err());
}

/// TF's `channels` rules: a BMP decodes only to its own channel count, a
/// JPEG to 1 or 3, a GIF to 3.
#[test]
fn channel_arguments_follow_tensorflow() {
    let c = case("bmp_rgb");
    let bytes = std::fs::read(golden_dir().join(c["encoded"]["file"].as_str().expect("file")))
        .expect("file");
    assert!(codec::decode_bmp(&bytes, 4).is_err());
    let c = case("jpeg_rgb");
    let bytes = std::fs::read(golden_dir().join(c["encoded"]["file"].as_str().expect("file")))
        .expect("file");
    assert!(codec::decode_image(&bytes, 4, DecodeDType::U8, true).is_err());
    assert!(codec::decode_jpeg(&bytes, 2).is_err());
    let c = case("gif_two_frames");
    let bytes = std::fs::read(golden_dir().join(c["encoded"]["file"].as_str().expect("file")))
        .expect("file");
    assert!(codec::decode_image(&bytes, 1, DecodeDType::U8, true).is_err());
    let first = codec::decode_image(&bytes, 0, DecodeDType::U8, false).expect("first frame");
    assert_eq!(first.shape().len(), 3);
}
