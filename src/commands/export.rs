//! `specc export SPEC --checkpoint DIR --format tflite -o model.tflite`: the
//! trained inference graph as a TensorFlow Lite model.
//!
//! Owns: the command's side of the export — reading the spec, and the
//! lines it prints about what was written (the quantization, the model's
//! operators, inputs and outputs). The export itself is the library's
//! (`specc::export::tflite`), which the Python package calls too.

use std::path::Path;

use specc::export::{self, Quantized, TfliteOptions, Weights};
use specc::spec::read_spec;

use crate::Failure;

/// `specc export --format tflite`'s options.
pub struct ExportOptions<'a> {
    /// The trained variables; `None`: a dry run (every parameter zero,
    /// nothing written) that says whether the export would be refused —
    /// `specc run --export-on-save` asks before training.
    pub checkpoint: Option<&'a Path>,
    pub output: &'a Path,
    /// The library's options (`--fetch`, `--batch`, `--quantize`,
    /// `--use-averages`, `--raw-inputs`).
    pub tflite: TfliteOptions<'a>,
}

pub fn run(spec: &Path, o: &ExportOptions<'_>) -> Result<(), Failure> {
    let src = read_spec(spec)?;
    let Some(checkpoint) = o.checkpoint else {
        return Ok(export::tflite::check(&src, &o.tflite)?);
    };
    let written = export::tflite(&src, Weights::Checkpoint(checkpoint), o.output, &o.tflite)?;
    let file = o.output.display();
    match &written.quantized {
        None => {}
        Some(Quantized::Dynamic { weights }) => println!(
            "{file}: dynamic-range quantization: {weights} weight tensor{} to int8",
            plural(*weights)
        ),
        Some(Quantized::Int8 {
            trained,
            calibrated,
            input,
            output,
        }) => {
            let mut how = Vec::new();
            if *trained > 0 {
                how.push(format!(
                    "with the ranges of {trained} fake quantization{}",
                    plural(*trained)
                ));
            }
            if let Some((rows, data)) = calibrated {
                how.push(format!(
                    "calibrated on {rows} row{} of {}",
                    plural(*rows),
                    data.display()
                ));
            }
            println!(
                "{file}: int8 quantization {}; {} inputs, {} outputs",
                how.join(", "),
                input.name(),
                output.name()
            );
        }
    }
    println!(
        "{file}: {} operators, {} tensors; inputs {}; outputs {}{}",
        written.operators,
        written.tensors,
        written.inputs.join(", "),
        written.outputs.join(", "),
        written.serving.note()
    );
    Ok(())
}

/// `"s"` unless `n` is 1.
fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
