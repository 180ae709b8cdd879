//! specc's image codecs from the command line, for the interop suite
//! (`interop/test_image_codecs.py`: TensorFlow decodes what specc encodes,
//! and specc decodes what TensorFlow encodes).
//!
//! ```text
//! image_codec encode-png  H W C RAW OUT          # uint8 pixels, row-major HWC
//! image_codec encode-jpeg H W C QUALITY RAW OUT
//! image_codec decode FILE CHANNELS RAW_OUT       # prints "H W C"
//! ```

use std::process::ExitCode;

use ndarray::{ArrayD, IxDyn};
use specc_image::codec::{decode_image, encode_jpeg, encode_png, DecodeDType};
use specc_image::Image;

fn run(args: &[String]) -> Result<(), String> {
    let num = |s: &String| s.parse::<usize>().map_err(|e| format!("{s}: {e}"));
    match args {
        [cmd, h, w, c, rest @ ..] if cmd == "encode-png" || cmd == "encode-jpeg" => {
            let (h, w, c) = (num(h)?, num(w)?, num(c)?);
            let (quality, raw, out) = match (cmd.as_str(), rest) {
                ("encode-png", [raw, out]) => (None, raw, out),
                ("encode-jpeg", [q, raw, out]) => (Some(num(q)? as i32), raw, out),
                _ => return Err("bad arguments".into()),
            };
            let pixels = std::fs::read(raw).map_err(|e| format!("{raw}: {e}"))?;
            let image = ArrayD::from_shape_vec(IxDyn(&[h, w, c]), pixels)
                .map_err(|e| format!("{raw}: {e}"))?;
            let image = Image::U8(image);
            let bytes = match quality {
                None => encode_png(&image, -1),
                Some(q) => encode_jpeg(&image, q),
            }
            .map_err(|e| e.to_string())?;
            std::fs::write(out, bytes).map_err(|e| format!("{out}: {e}"))
        }
        [cmd, file, channels, out] if cmd == "decode" => {
            let bytes = std::fs::read(file).map_err(|e| format!("{file}: {e}"))?;
            let image = decode_image(&bytes, num(channels)?, DecodeDType::U8, false)
                .map_err(|e| e.to_string())?;
            let Image::U8(a) = image else {
                return Err(format!("{file}: not an 8-bit image"));
            };
            let s = a.shape().to_vec();
            println!("{}", s.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(" "));
            std::fs::write(out, a.iter().copied().collect::<Vec<u8>>())
                .map_err(|e| format!("{out}: {e}"))
        }
        _ => Err("usage: image_codec encode-png H W C RAW OUT | encode-jpeg H W C QUALITY RAW OUT | decode FILE CHANNELS RAW_OUT".into()),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("image_codec: {e}");
            ExitCode::FAILURE
        }
    }
}
