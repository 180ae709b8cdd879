//! Model-only inference throughput through the library API: the spec's
//! `outputs` over rows already in memory (no file reading or writing), as
//! `benches/predict_peers.py` times TF and JAX on numpy arrays.
//!
//! `cargo run --release --example predict_throughput -- SPEC CHECKPOINT CSV [REPS]`
//! prints one JSON line: rows, seconds (the median of REPS passes), rows/s.
//! The CSV is read through the spec's own columns and feature columns
//! (`Model::read_csv`), untimed.

use std::time::Instant;

use specc::Model;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        return Err("usage: predict_throughput SPEC CHECKPOINT CSV [REPS]".into());
    }
    let reps: usize = args.get(4).map_or(Ok(5), |r| r.parse())?;
    let mut model = Model::from_path(&args[1])?;
    model.load_checkpoint(&args[2])?;
    // The spec's own transforms read the CSV (normalizers, feature columns).
    let arrays = model.read_csv(&args[3], false)?;
    let rows = arrays.first().map_or(0, |(_, a)| a.shape()[0]);
    let batch: Vec<(&str, _)> = arrays.iter().map(|(n, a)| (n.as_str(), a.view())).collect();
    model.predict(&batch)?;
    let mut times = Vec::new();
    for _ in 0..reps {
        let t = Instant::now();
        let out = model.predict(&batch)?;
        times.push(t.elapsed().as_secs_f64());
        std::hint::black_box(out);
    }
    times.sort_by(f64::total_cmp);
    let t = times[times.len() / 2];
    println!(
        "{{\"rows\": {}, \"seconds\": {t:.6}, \"rows_per_s\": {:.0}, \"batch\": {}}}",
        rows,
        rows as f64 / t,
        model.max_batch()
    );
    Ok(())
}
