//! Throughput of the image pipeline: every `.jpg` of a directory (one
//! sub-directory per class, as `benches/image_pipeline.py` writes them)
//! through `decode_image(channels = 3) → resize([256, 256]) →
//! random_crop([224, 224, 3]) → random_flip_left_right()` on THREADS
//! threads, in chunks of CHUNK images (the pipeline's per-example path:
//! read, decode, transform, written in order into a reused batch buffer).
//! Prints images/s.
//!
//! `cargo run -p specc-runtime --example image_pipeline -- DIR [THREADS] [PASSES]`

use specc_runtime::data::images::{self, ImageOp, ImagePipeline, ImageSource};
use std::time::Instant;

fn main() {
    // As the CLI does: freed image buffers are reused, not unmapped.
    specc_runtime::memory::keep_freed_memory();
    let args: Vec<String> = std::env::args().collect();
    let dir = args
        .get(1)
        .expect("usage: image_pipeline DIR [THREADS] [PASSES]");
    let threads: usize = args.get(2).map_or(2, |t| t.parse().expect("THREADS"));
    let passes: usize = args.get(3).map_or(3, |t| t.parse().expect("PASSES"));
    let (examples, _) = images::list_examples(&ImageSource::Directory { dir: dir.into() })
        .unwrap_or_else(|e| panic!("{e}"));
    let pipeline = ImagePipeline {
        ops: vec![
            ImageOp::DecodeImage { channels: 3 },
            ImageOp::Resize { size: [256, 256] },
            ImageOp::RandomCrop {
                size: [224, 224, 3],
            },
            ImageOp::RandomFlipLeftRight,
        ],
    };
    let width = 224 * 224 * 3;
    let chunk = 64;
    // The batch the examples are written into, as the training input's buffer.
    let mut batch = vec![0f32; chunk * width];
    let mut best = 0f64;
    for pass in 0..passes {
        let start = Instant::now();
        let mut done = 0usize;
        for base in (0..examples.len()).step_by(chunk) {
            let n = chunk.min(examples.len() - base);
            let out = images::fill_in_order(&mut batch[..n * width], width, threads, |i, px| {
                let ex = &examples[base + i];
                let bytes = std::fs::read(&ex.file).map_err(|e| e.to_string())?;
                pipeline.apply(&bytes, true, (7, pass as u64, (base + i) as u64), px)
            });
            for r in &out {
                r.as_ref().expect("transform");
            }
            done += out.len();
        }
        let rate = done as f64 / start.elapsed().as_secs_f64();
        best = best.max(rate);
        println!("pass {pass}: {done} images, {rate:.0} images/s");
    }
    println!("specc images_per_s {best:.0} (threads {threads})");
}
