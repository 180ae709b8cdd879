//! The reference of `Op::Recurrence` and `Op::RecurrenceGrad`: the runtime's
//! time loops (`specc_runtime::rnn`) run in f64 over whole batches.

use specc_runtime::rnn::{self, Backward, Cell, Forward};

use super::Tensor;
use crate::ir::recurrence::RnnInputs;
use crate::ir::{NodeId, RnnOperands};

/// The tape (`grad == false`) or the gradient tape of a recurrence whose
/// inputs (by position in `args`) are `args`; `dims` is the result's.
pub fn eval(
    cell: &Cell,
    operands: RnnOperands,
    grad: bool,
    args: &[&Tensor],
    dims: &[usize],
) -> Tensor {
    // The inputs' roles, by position (node ids stand for positions here).
    let ids: Vec<NodeId> = (0..args.len() as u32).map(NodeId).collect();
    let roles = RnnInputs::from_slice(cell, operands, &ids);
    let ptr = |n: Option<NodeId>| match n {
        Some(n) => args[n.index()].data.as_ptr(),
        None => std::ptr::null(),
    };
    let rows = args[0].dims[0];
    let steps = args[0].dims[1];
    let mut out = vec![0.0f64; dims.iter().product()];
    let forward_args = |tape: *mut f64| Forward {
        steps,
        xproj: ptr(Some(roles.xproj)),
        wh: ptr(Some(roles.wh)),
        peepholes: ptr(roles.peepholes),
        proj: ptr(roles.proj),
        lengths: ptr(roles.lengths),
        h0: ptr(roles.h0),
        c0: ptr(roles.c0),
        tape,
    };
    if grad {
        let n = operands.count(cell);
        let tape = args[n].data.as_ptr() as *mut f64;
        let a = Backward {
            forward: forward_args(tape),
            dstate: args[n + 1].data.as_ptr(),
            grad: out.as_mut_ptr(),
        };
        // SAFETY: every buffer has the shape the verifier checked; the
        // backward loop only reads the tape.
        unsafe { rnn::backward(cell, &a, 0..rows) };
    } else {
        let a = forward_args(out.as_mut_ptr());
        // SAFETY: as above; the tape is `out`, of the op's shape.
        unsafe { rnn::forward(cell, &a, 0..rows) };
    }
    Tensor::new(dims.to_vec(), out)
}
