//! [`CellCode`]: a [`Cell`] as eight `u32`s, the form compiled code passes
//! to `specc_rnn_forward` and `specc_rnn_backward` (built in a stack slot).
//!
//! Invariant: `Cell::from_code(&cell.code()) == Some(cell)` for every cell.

use super::{Activation, Cell, CellKind};

/// A cell as compiled code passes it: `kind` (0 basic, 1 LSTM, 2 GRU),
/// `units`, `num_proj` (0: none), `flags` (bit 0 peepholes, bit 1 a cell
/// clip, bit 2 a projection clip), `forget_bias`, `cell_clip`, `proj_clip`
/// (f32 bits) and `activation` (0 tanh, 1 relu, 2 sigmoid, 3 linear).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellCode {
    pub kind: u32,
    pub units: u32,
    pub num_proj: u32,
    pub flags: u32,
    pub forget_bias: u32,
    pub cell_clip: u32,
    pub proj_clip: u32,
    pub activation: u32,
}

impl CellCode {
    /// The fields in order (as stored in memory).
    pub fn words(&self) -> [u32; 8] {
        [
            self.kind,
            self.units,
            self.num_proj,
            self.flags,
            self.forget_bias,
            self.cell_clip,
            self.proj_clip,
            self.activation,
        ]
    }
}

impl Cell {
    /// This cell as compiled code passes it.
    pub fn code(&self) -> CellCode {
        CellCode {
            kind: match self.kind {
                CellKind::Basic => 0,
                CellKind::Lstm => 1,
                CellKind::Gru => 2,
            },
            units: self.units,
            num_proj: self.num_proj.unwrap_or(0),
            flags: u32::from(self.use_peepholes)
                | u32::from(self.cell_clip.is_some()) << 1
                | u32::from(self.proj_clip.is_some()) << 2,
            forget_bias: self.forget_bias,
            cell_clip: self.cell_clip.unwrap_or(0),
            proj_clip: self.proj_clip.unwrap_or(0),
            activation: match self.activation {
                Activation::Tanh => 0,
                Activation::Relu => 1,
                Activation::Sigmoid => 2,
                Activation::Linear => 3,
            },
        }
    }

    /// The cell a code stands for; `None` for a code no cell has.
    pub fn from_code(c: &CellCode) -> Option<Cell> {
        let kind = match c.kind {
            0 => CellKind::Basic,
            1 => CellKind::Lstm,
            2 => CellKind::Gru,
            _ => return None,
        };
        let activation = match c.activation {
            0 => Activation::Tanh,
            1 => Activation::Relu,
            2 => Activation::Sigmoid,
            3 => Activation::Linear,
            _ => return None,
        };
        let flag = |bit: u32| c.flags & (1 << bit) != 0;
        Some(Cell {
            kind,
            units: c.units,
            num_proj: (c.num_proj != 0).then_some(c.num_proj),
            use_peepholes: flag(0),
            forget_bias: c.forget_bias,
            cell_clip: flag(1).then_some(c.cell_clip),
            proj_clip: flag(2).then_some(c.proj_clip),
            activation,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cell_round_trips_through_its_code() {
        for kind in [CellKind::Basic, CellKind::Lstm, CellKind::Gru] {
            for activation in [
                Activation::Tanh,
                Activation::Relu,
                Activation::Sigmoid,
                Activation::Linear,
            ] {
                for bits in 0..8u32 {
                    let cell = Cell {
                        kind,
                        units: 7,
                        num_proj: (bits & 1 != 0).then_some(3),
                        use_peepholes: bits & 2 != 0,
                        forget_bias: 0.5f32.to_bits(),
                        cell_clip: (bits & 4 != 0).then_some(2.5f32.to_bits()),
                        proj_clip: (bits & 1 != 0).then_some(0.0f32.to_bits()),
                        activation,
                    };
                    assert_eq!(Cell::from_code(&cell.code()), Some(cell));
                }
            }
        }
        let bad = CellCode {
            kind: 9,
            ..Cell::from_code(&CellCode {
                kind: 0,
                units: 1,
                num_proj: 0,
                flags: 0,
                forget_bias: 0,
                cell_clip: 0,
                proj_clip: 0,
                activation: 0,
            })
            .expect("a basic cell")
            .code()
        };
        assert_eq!(Cell::from_code(&bad), None);
    }
}
