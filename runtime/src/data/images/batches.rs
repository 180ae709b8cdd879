//! `specc predict`'s image batches: examples decoded a batch at a time
//! straight into the image input's buffer ([`ImageBatches`]).
//!
//! Invariants: no random transform runs (the evaluation form); memory is
//! one batch whatever the number of images; every other input is zeros.

use super::in_memory::fill_in_order;
use super::listing::ImageExample;
use super::transforms::ImagePipeline;
use crate::data::DataError;

/// A batch source of images decoded batch by batch (`specc predict`): each
/// batch's examples go through `pipeline` without its random transforms,
/// on `threads` threads, straight into the image input's buffer; every
/// other input (a label `predict` does not read) is zeros. Memory: one
/// batch, whatever the number of images.
pub struct ImageBatches {
    examples: Vec<ImageExample>,
    pipeline: ImagePipeline,
    image_input: String,
    threads: usize,
    pos: usize,
}

impl ImageBatches {
    /// The batches of `examples` for the model input `image_input`.
    pub fn new(
        examples: Vec<ImageExample>,
        pipeline: ImagePipeline,
        image_input: &str,
        threads: usize,
    ) -> ImageBatches {
        ImageBatches {
            examples,
            pipeline,
            image_input: image_input.to_string(),
            threads,
            pos: 0,
        }
    }
}

impl crate::source::BatchSource for ImageBatches {
    fn next_batch(
        &mut self,
        buffers: &mut crate::source::BatchBuffers<'_>,
    ) -> Result<usize, DataError> {
        let n = buffers.max_batch().min(self.examples.len() - self.pos);
        if n == 0 {
            return Ok(0);
        }
        let examples = &self.examples[self.pos..self.pos + n];
        let base = self.pos;
        for i in 0..buffers.inputs().len() {
            let (name, width) = {
                let l = &buffers.inputs()[i];
                (l.name.clone(), l.per_example)
            };
            match buffers.input_mut(i) {
                crate::data::ValuesMut::F32(dst) if name == self.image_input => {
                    let pipeline = &self.pipeline;
                    let results =
                        fill_in_order(&mut dst[..n * width], width, self.threads, |k, px| {
                            let ex = &examples[k];
                            let bytes = &*ex.read()?;
                            pipeline
                                .apply(bytes, false, (0, 0, (base + k) as u64), px)
                                .map_err(|m| ex.error(m))
                        });
                    results.into_iter().collect::<Result<(), DataError>>()?;
                }
                crate::data::ValuesMut::F32(dst) => dst[..n * width].fill(0.0),
                crate::data::ValuesMut::I32(dst) => dst[..n * width].fill(0),
            }
        }
        self.pos += n;
        Ok(n)
    }
}
