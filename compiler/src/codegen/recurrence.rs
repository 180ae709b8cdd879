//! A recurrent layer's time loop as a call of the runtime's
//! `specc_rnn_forward` or `specc_rnn_backward` (`specc_runtime::rnn`).
//!
//! Owns: the call's arguments, built in a stack slot: the cell
//! (`rnn::CellCode`) and the operands (`rnn::Forward<f32>`, or
//! `rnn::Backward<f32>` for the backward loop), and each thread's share of
//! the rows. The runtime's loops give every row the same bits however the
//! rows are split, so a split kernel's result does not depend on the
//! thread count.
//!
//! Invariant: the slot's layout is the `#[repr(C)]` structs' (every field
//! 8 bytes, in declaration order; `CellCode` 8 `u32`s), fixed by the
//! `const` checks below.

use cranelift_codegen::ir::{types, FuncRef, InstBuilder, StackSlotData, StackSlotKind, Value};
use cranelift_codegen::ir::{AbiParam, Signature};
use cranelift_codegen::isa::CallConv;
use specc_runtime::rnn::{Backward, CellCode, Forward};

use super::emit::{Emitter, PTR};
use crate::ir::recurrence::RnnInputs;
use crate::ir::NodeId;
use crate::plan::{Mode, RecurrenceKernel};

const CELL_BYTES: u32 = std::mem::size_of::<CellCode>() as u32;
const FORWARD_BYTES: u32 = std::mem::size_of::<Forward<f32>>() as u32;
const BACKWARD_BYTES: u32 = std::mem::size_of::<Backward<f32>>() as u32;
const _: () = assert!(CELL_BYTES == 32 && FORWARD_BYTES == 72 && BACKWARD_BYTES == 88);

/// The signature of `specc_rnn_forward` and `specc_rnn_backward`:
/// `(cell, operands, row_begin, row_end)`.
pub fn signature(cc: CallConv) -> Signature {
    let mut s = Signature::new(cc);
    for t in [PTR, PTR, types::I64, types::I64] {
        s.params.push(AbiParam::new(t));
    }
    s
}

/// Emits kernel `k`: each thread calls the loop on its rows (thread 0 on
/// all of them unless the kernel is split).
pub fn emit(e: &mut Emitter, k: &RecurrenceKernel, mode: Mode, func: FuncRef) {
    let rows = e.lin(k.rows);
    let (lo, hi) = if e.threads > 1 && mode == Mode::Split {
        e.thread_range(rows, 1)
    } else {
        let zero = e.b.ins().iconst(types::I64, 0);
        (zero, rows)
    };
    let ptrs: Vec<Value> = k.inputs.iter().map(|v| e.view_ptr(v)).collect();
    let dst = e.view_ptr(&k.dst);
    let body = |e: &mut Emitter| {
        let slot = e.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            CELL_BYTES + BACKWARD_BYTES,
            3,
        ));
        let code = k.cell.code();
        for (i, w) in code.words().into_iter().enumerate() {
            let v = e.b.ins().iconst(types::I32, i64::from(w));
            e.b.ins().stack_store(PTR, v, slot, 4 * i as i32);
        }
        // The operands by role (positions stand for the inputs).
        let ids: Vec<NodeId> = (0..ptrs.len() as u32).map(NodeId).collect();
        let roles = RnnInputs::from_slice(&k.cell, k.operands, &ids);
        let null = e.b.ins().iconst(PTR, 0);
        let at = |n: Option<NodeId>| n.map_or(null, |n| ptrs[n.index()]);
        let steps = e.b.ins().iconst(types::I64, i64::from(k.steps));
        let tape = if k.grad {
            ptrs[k.operands.count(&k.cell)]
        } else {
            dst
        };
        let mut fields = vec![
            steps,
            at(Some(roles.xproj)),
            at(Some(roles.wh)),
            at(roles.peepholes),
            at(roles.proj),
            at(roles.lengths),
            at(roles.h0),
            at(roles.c0),
            tape,
        ];
        if k.grad {
            fields.push(ptrs[k.operands.count(&k.cell) + 1]);
            fields.push(dst);
        }
        let base = CELL_BYTES as i32;
        for (i, v) in fields.into_iter().enumerate() {
            e.b.ins().stack_store(PTR, v, slot, base + 8 * i as i32);
        }
        let cell = e.b.ins().stack_addr(PTR, slot, 0);
        let args = e.b.ins().stack_addr(PTR, slot, base);
        e.b.ins().call(func, &[cell, args, lo, hi]);
    };
    if e.threads > 1 && mode == Mode::Split {
        body(e);
    } else {
        e.only_thread0(body);
    }
}
