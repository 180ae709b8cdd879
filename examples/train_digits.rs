//! specc as a library: train `specs/digits_mlp.spec` on the digits data from
//! arrays, evaluate it on held-out rows, predict, save a TF checkpoint and
//! load it into a fresh model that predicts the same.
//!
//! `cargo run --release --example train_digits` (from the repository root).
//! `tests/suite/example_train_digits.rs` runs it and checks what it returns.

use std::path::Path;

use specc::ndarray::{s, Array1, Array2};
use specc::Model;

/// What a run of the example gives.
pub struct Report {
    pub steps: usize,
    pub last_loss: f32,
    /// Held-out accuracy from the spec's `accuracy` metric.
    pub accuracy: f64,
    /// Held-out accuracy from `predict`'s `class` output.
    pub predicted_accuracy: f64,
    pub held_out: usize,
    /// A fresh model loaded from the checkpoint predicts the same bits.
    pub reloaded_same: bool,
}

/// The digits data: pixels `[n, 64]` (0..16) and labels `[n]`.
fn load_digits(path: &Path) -> Result<(Array2<f32>, Array1<f32>), Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(path)?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().ok_or("empty file")?.split(',').collect();
    let label_at = header
        .iter()
        .position(|h| *h == "label")
        .ok_or("no label")?;
    let (mut pixels, mut labels) = (Vec::new(), Vec::new());
    for line in lines {
        for (k, cell) in line.split(',').enumerate() {
            let v: f32 = cell.trim().parse()?;
            if k == label_at {
                labels.push(v);
            } else {
                pixels.push(v);
            }
        }
    }
    let n = labels.len();
    Ok((
        Array2::from_shape_vec((n, pixels.len() / n), pixels)?,
        Array1::from_vec(labels),
    ))
}

/// Trains `steps` steps and reports (see [`Report`]); `root` is the
/// repository, `checkpoints` a directory to save in.
pub fn run(
    root: &Path,
    steps: usize,
    checkpoints: &Path,
) -> Result<Report, Box<dyn std::error::Error>> {
    let mut model = Model::from_path(root.join("specs/digits_mlp.spec"))?;
    let (pixels, labels) = load_digits(&root.join("specs/data/digits.csv"))?;
    // The last 20 % are held out.
    let n = labels.len();
    let train = n * 4 / 5;
    let batch = model.max_batch();
    let mut last_loss = f32::NAN;
    for step in 0..steps {
        // Batches in order, wrapping around the training rows.
        let start = (step * batch) % (train - batch);
        let x = pixels.slice(s![start..start + batch, ..]).into_dyn();
        let y = labels.slice(s![start..start + batch]).into_dyn();
        last_loss = model.train_step(&[("pixels", x), ("label", y)])?;
    }
    let (x, y) = (
        pixels.slice(s![train.., ..]).into_dyn(),
        labels.slice(s![train..]).into_dyn(),
    );
    let eval = model.evaluate(&[("pixels", x.clone()), ("label", y.clone())])?;
    let accuracy = eval
        .metrics
        .iter()
        .find(|(m, _)| m.contains("accuracy"))
        .map(|(_, v)| *v)
        .ok_or("no accuracy metric")?;
    let outputs = model.predict(&[("pixels", x.clone())])?;
    let class = &outputs
        .iter()
        .find(|(name, _)| name == "class")
        .ok_or("no `class` output")?
        .1;
    let right = class.iter().zip(y.iter()).filter(|(c, l)| c == l).count();
    let predicted_accuracy = right as f64 / (n - train) as f64;
    model.save_checkpoint(checkpoints)?;
    let mut fresh = Model::from_path(root.join("specs/digits_mlp.spec"))?;
    fresh.load_checkpoint(checkpoints)?;
    let again = fresh.predict(&[("pixels", x)])?;
    let reloaded_same = again.len() == outputs.len()
        && again.iter().zip(&outputs).all(|((a, va), (b, vb))| {
            a == b
                && va
                    .iter()
                    .zip(vb.iter())
                    .all(|(p, q)| p.to_bits() == q.to_bits())
        });
    Ok(Report {
        steps,
        last_loss,
        accuracy,
        predicted_accuracy,
        held_out: n - train,
        reloaded_same,
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join("specc-train-digits-example");
    let r = run(root, 1500, &dir)?;
    println!(
        "{} steps, last loss {:.4}; held out ({} rows): accuracy {:.4} (metric), {:.4} (predict); reloaded checkpoint predicts the same: {}",
        r.steps, r.last_loss, r.held_out, r.accuracy, r.predicted_accuracy, r.reloaded_same
    );
    Ok(())
}
