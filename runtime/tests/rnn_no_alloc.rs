//! The recurrent time loops allocate nothing: after a warm-up call (the
//! GEMM's per-thread packing buffers), forward and backward passes of
//! every kind of cell, with lengths and every LSTM option, make no heap
//! allocation on the calling thread, and the C entry points neither.

use specc_runtime::rnn::{
    backward, forward, specc_rnn_backward, specc_rnn_forward, Activation, Backward, Cell, CellKind,
    Forward,
};
use specc_testkit::alloc::thread_allocations as allocations;

/// A cell's buffers, filled with small deterministic values.
struct Buffers {
    cell: Cell,
    xproj: Vec<f32>,
    wh: Vec<f32>,
    peepholes: Vec<f32>,
    proj: Vec<f32>,
    lengths: Vec<f32>,
    tape: Vec<f32>,
    dstate: Vec<f32>,
    grad: Vec<f32>,
}

const BATCH: usize = 8;
const STEPS: usize = 6;

fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|i| (((i * 7 + seed) % 13) as f32 - 6.0) * 0.05)
        .collect()
}

impl Buffers {
    fn new(cell: Cell) -> Buffers {
        let (h, p, g) = (cell.units as usize, cell.output_size(), cell.gate_width());
        let slots = BATCH * (STEPS + 1);
        Buffers {
            cell,
            xproj: values(BATCH * STEPS * g, 1),
            wh: values(p * g, 2),
            peepholes: values(3 * h, 3),
            proj: values(h * p, 4),
            lengths: (0..BATCH).map(|b| (b % (STEPS + 1)) as f32).collect(),
            tape: vec![0.0; slots * cell.tape().width],
            dstate: values(slots * cell.state_width(), 5),
            grad: vec![0.0; slots * cell.grad_tape().width],
        }
    }

    fn args(&mut self) -> Backward<f32> {
        let lstm = self.cell.kind == CellKind::Lstm;
        let or_null = |on: bool, v: &Vec<f32>| if on { v.as_ptr() } else { std::ptr::null() };
        Backward {
            forward: Forward {
                steps: STEPS,
                xproj: self.xproj.as_ptr(),
                wh: self.wh.as_ptr(),
                peepholes: or_null(lstm && self.cell.use_peepholes, &self.peepholes),
                proj: or_null(self.cell.num_proj.is_some(), &self.proj),
                lengths: self.lengths.as_ptr(),
                h0: std::ptr::null(),
                c0: std::ptr::null(),
                tape: self.tape.as_mut_ptr(),
            },
            dstate: self.dstate.as_ptr(),
            grad: self.grad.as_mut_ptr(),
        }
    }

    /// One forward and one backward, through the Rust and the C entries.
    fn run(&mut self) {
        let a = self.args();
        let cell = self.cell;
        let code = cell.code();
        // SAFETY: every buffer has the shape `cell` and the sizes give.
        unsafe {
            forward(&cell, &a.forward, 0..BATCH);
            backward(&cell, &a, 0..BATCH);
            specc_rnn_forward(&code, &a.forward, 0, 3);
            specc_rnn_forward(&code, &a.forward, 3, BATCH as i64);
            specc_rnn_backward(&code, &a, 0, BATCH as i64);
        }
    }
}

fn cell(kind: CellKind) -> Cell {
    let lstm = kind == CellKind::Lstm;
    Cell {
        kind,
        units: 24,
        num_proj: lstm.then_some(12),
        use_peepholes: lstm,
        forget_bias: 1.0f32.to_bits(),
        cell_clip: lstm.then_some(0.5f32.to_bits()),
        proj_clip: lstm.then_some(0.25f32.to_bits()),
        activation: Activation::Tanh,
    }
}

#[test]
fn no_allocation_after_warm_up() {
    let mut all: Vec<Buffers> = [CellKind::Basic, CellKind::Lstm, CellKind::Gru]
        .into_iter()
        .map(|k| Buffers::new(cell(k)))
        .collect();
    for b in &mut all {
        b.run();
    }
    let before = allocations();
    for _ in 0..10 {
        for b in &mut all {
            b.run();
        }
    }
    assert_eq!(allocations() - before, 0, "the time loops allocated");
    // The loops ran: the tapes and gradient tapes hold values.
    for b in &all {
        assert!(b.tape.iter().any(|&v| v != 0.0) && b.grad.iter().any(|&v| v != 0.0));
    }
}
