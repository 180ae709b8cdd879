//! The record of a fake quantization (`fake_quant_with_min_max_vars`,
//! `..._per_channel`, `..._args`): sema lowers one to a composition of
//! ordinary ops and records which nodes are its input, its range and its
//! output, so an export can put TF Lite's QUANTIZE/DEQUANTIZE boundary
//! there instead of the float arithmetic (as TF's converter turns a
//! `FakeQuantWithMinMaxVars` into a quantize/dequantize pair).
//!
//! Invariants: `output` computes the fake quantization of `input` to the
//! range `[min, max]` (scalars, or `[d]` over `input`'s last axis when
//! `per_channel`), `qmin..=qmax` the integer range (`narrow_range`: 1, else
//! 0; `2^num_bits − 1`); every graph rebuild ([`crate::passes::rebuild`])
//! carries the records over to the new ids and drops those whose nodes are
//! gone.

use super::NodeId;

/// One fake quantization in the graph (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FakeQuant {
    pub input: NodeId,
    pub min: NodeId,
    pub max: NodeId,
    pub output: NodeId,
    pub num_bits: u32,
    pub narrow_range: bool,
    pub per_channel: bool,
}

impl FakeQuant {
    /// The record with each node id through `map` (a rebuild's old → new
    /// ids); `None` when a node is not in the new graph.
    pub fn remap(&self, map: &[Option<NodeId>]) -> Option<FakeQuant> {
        let m = |n: NodeId| map.get(n.index()).copied().flatten();
        Some(FakeQuant {
            input: m(self.input)?,
            min: m(self.min)?,
            max: m(self.max)?,
            output: m(self.output)?,
            ..*self
        })
    }
}
