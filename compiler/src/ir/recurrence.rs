//! The recurrent ops' operands, shapes and builders (`Op::Recurrence`,
//! `Op::RecurrenceGrad`), and views of their tapes.
//!
//! Owns: [`RnnOperands`] (which optional inputs a recurrence has and where
//! each input sits), the shape rules of the two ops, the builders, and
//! [`Graph::tape_field`], the slice of one field of a tape over a range of
//! slots (how sema reads the outputs and final state, and autodiff the
//! values of the weight gradients).
//!
//! Invariants: inputs are, in order, `xproj`, `wh`, then the peepholes when
//! the cell uses them, the projection when it has `num_proj`, then the
//! lengths, `h0` and `c0` when [`RnnOperands`] says so; a `RecurrenceGrad`
//! has the same, then the tape and the cotangent of its state fields. The
//! batch is the first axis of `xproj`, the tapes and the states.

use specc_runtime::rnn::{Cell, CellKind};

use super::{DType, Dim, Graph, NodeId, Op, Shape};

/// Which optional inputs a recurrence has besides those its cell implies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RnnOperands {
    /// `[B]` lengths (`sequence_length`); without: every row runs all steps.
    pub lengths: bool,
    /// `[B, P]` initial `h`; without: zeros.
    pub h0: bool,
    /// `[B, H]` initial `c` (LSTM); without: zeros.
    pub c0: bool,
}

/// The inputs of a recurrence, by role.
#[derive(Clone, Copy, Debug)]
pub struct RnnInputs {
    pub xproj: NodeId,
    pub wh: NodeId,
    pub peepholes: Option<NodeId>,
    pub proj: Option<NodeId>,
    pub lengths: Option<NodeId>,
    pub h0: Option<NodeId>,
    pub c0: Option<NodeId>,
}

impl RnnInputs {
    /// The operands flags these inputs make.
    pub fn operands(&self) -> RnnOperands {
        RnnOperands {
            lengths: self.lengths.is_some(),
            h0: self.h0.is_some(),
            c0: self.c0.is_some(),
        }
    }

    /// The input list, in the ops' order.
    pub fn to_vec(&self) -> Vec<NodeId> {
        let mut v = vec![self.xproj, self.wh];
        v.extend(
            [self.peepholes, self.proj, self.lengths, self.h0, self.c0]
                .into_iter()
                .flatten(),
        );
        v
    }

    /// Reads the roles back from an op's inputs (the forward's first ones).
    pub fn from_slice(cell: &Cell, operands: RnnOperands, inputs: &[NodeId]) -> RnnInputs {
        let mut it = inputs.iter().copied();
        let mut next = |present: bool| if present { it.next() } else { None };
        let xproj = next(true).expect("recurrence: xproj");
        let wh = next(true).expect("recurrence: wh");
        RnnInputs {
            xproj,
            wh,
            peepholes: next(cell.use_peepholes),
            proj: next(cell.num_proj.is_some()),
            lengths: next(operands.lengths),
            h0: next(operands.h0),
            c0: next(operands.c0),
        }
    }
}

impl RnnOperands {
    /// How many inputs a forward recurrence with `cell` has.
    pub fn count(self, cell: &Cell) -> usize {
        2 + [
            cell.use_peepholes,
            cell.num_proj.is_some(),
            self.lengths,
            self.h0,
            self.c0,
        ]
        .iter()
        .filter(|&&b| b)
        .count()
    }
}

/// The expected shape of every input of a recurrence over `[batch, steps]`.
pub fn input_shapes(cell: &Cell, operands: RnnOperands, batch: Dim, steps: u32) -> Vec<Shape> {
    let f = |n: usize| Dim::Fixed(n as u32);
    let (h, p, g) = (cell.units as usize, cell.output_size(), cell.gate_width());
    let mut v = vec![
        Shape(vec![batch, Dim::Fixed(steps), f(g)]),
        Shape(vec![f(p), f(g)]),
    ];
    if cell.use_peepholes {
        v.push(Shape(vec![f(3), f(h)]));
    }
    if cell.num_proj.is_some() {
        v.push(Shape(vec![f(h), f(p)]));
    }
    if operands.lengths {
        v.push(Shape(vec![batch]));
    }
    if operands.h0 {
        v.push(Shape(vec![batch, f(p)]));
    }
    if operands.c0 {
        v.push(Shape(vec![batch, f(h)]));
    }
    v
}

/// `[B, T]` of a recurrence's `xproj`, or why it is not one.
pub fn batch_and_steps(xproj: &Shape) -> Result<(Dim, u32), String> {
    match xproj.0.as_slice() {
        [b, Dim::Fixed(t), _] => Ok((*b, *t)),
        _ => Err(format!("recurrence: xproj {xproj} is not [B, T, G]")),
    }
}

/// Shape of `Op::Recurrence`: the tape `[B, T + 1, W]`.
pub fn tape_shape(cell: &Cell, batch: Dim, steps: u32) -> Shape {
    Shape(vec![
        batch,
        Dim::Fixed(steps + 1),
        Dim::Fixed(cell.tape().width as u32),
    ])
}

/// Shape of `Op::RecurrenceGrad`: the gradient tape `[B, T + 1, WG]`.
pub fn grad_tape_shape(cell: &Cell, batch: Dim, steps: u32) -> Shape {
    Shape(vec![
        batch,
        Dim::Fixed(steps + 1),
        Dim::Fixed(cell.grad_tape().width as u32),
    ])
}

/// Shape of the cotangent of a tape's state fields: `[B, T + 1, S]`.
pub fn state_shape(cell: &Cell, batch: Dim, steps: u32) -> Shape {
    Shape(vec![
        batch,
        Dim::Fixed(steps + 1),
        Dim::Fixed(cell.state_width() as u32),
    ])
}

impl Graph {
    /// The tape of `cell` run over `inputs` (`Op::Recurrence`).
    pub fn recurrence(&mut self, cell: Cell, inputs: RnnInputs) -> NodeId {
        let (b, t) = super::build::ice(batch_and_steps(self.shape(inputs.xproj)));
        let out = tape_shape(&cell, b, t);
        let operands = inputs.operands();
        self.intern(
            Op::Recurrence { cell, operands },
            inputs.to_vec(),
            DType::F32,
            out,
        )
    }

    /// The gradient tape of a recurrence given its `tape` and the
    /// cotangent `dstate` of the tape's state fields (`Op::RecurrenceGrad`).
    pub fn recurrence_grad(
        &mut self,
        cell: Cell,
        inputs: RnnInputs,
        tape: NodeId,
        dstate: NodeId,
    ) -> NodeId {
        let (b, t) = super::build::ice(batch_and_steps(self.shape(inputs.xproj)));
        let out = grad_tape_shape(&cell, b, t);
        let operands = inputs.operands();
        let mut v = inputs.to_vec();
        v.extend([tape, dstate]);
        self.intern(Op::RecurrenceGrad { cell, operands }, v, DType::F32, out)
    }

    /// Field `offset .. offset + width` of slots `first .. first + slots`
    /// of a tape `[B, T + 1, W]` (or of any `[B, steps, W]`, e.g. a slice
    /// of one): `[B, slots, width]`.
    pub fn tape_field(
        &mut self,
        tape: NodeId,
        first: u32,
        slots: u32,
        offset: usize,
        width: usize,
    ) -> NodeId {
        let b = self.shape(tape).0[0];
        let out = Shape(vec![b, Dim::Fixed(slots), Dim::Fixed(width as u32)]);
        self.slice(tape, &[0, first, offset as u32], &out)
    }
}

/// A cell and its operands as the IR dump prints them:
/// `lstm units=128 proj=64 peepholes forget_bias=1 cell_clip=3 act=tanh +lengths +h0`.
pub fn cell_text(cell: &Cell, operands: &RnnOperands) -> String {
    use specc_runtime::rnn::Activation;
    let kind = match cell.kind {
        CellKind::Basic => "basic_rnn",
        CellKind::Lstm => "lstm",
        CellKind::Gru => "gru",
    };
    let mut s = format!("{kind} units={}", cell.units);
    if let Some(p) = cell.num_proj {
        s.push_str(&format!(" num_proj={p}"));
    }
    if cell.use_peepholes {
        s.push_str(" peepholes");
    }
    if cell.kind == CellKind::Lstm {
        s.push_str(&format!(
            " forget_bias={}",
            f32::from_bits(cell.forget_bias)
        ));
    }
    if let Some(c) = cell.cell_clip {
        s.push_str(&format!(" cell_clip={}", f32::from_bits(c)));
    }
    if let Some(c) = cell.proj_clip {
        s.push_str(&format!(" proj_clip={}", f32::from_bits(c)));
    }
    let act = match cell.activation {
        Activation::Tanh => "tanh",
        Activation::Relu => "relu",
        Activation::Sigmoid => "sigmoid",
        Activation::Linear => "linear",
    };
    s.push_str(&format!(" activation={act}"));
    for (on, name) in [
        (operands.lengths, "lengths"),
        (operands.h0, "h0"),
        (operands.c0, "c0"),
    ] {
        if on {
            s.push_str(&format!(" +{name}"));
        }
    }
    s
}
