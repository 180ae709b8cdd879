//! Emitting one planned function as a Cranelift function.
//!
//! Owns: the function's "spine" (the straight-line code between loops),
//! where buffer pointers, runtime sizes and scalar values are computed once
//! and memoized, the GEMM calls, and the dispatch of every other kernel:
//! loop kernels are in [`super::loops`], the argmax kernel in
//! [`super::argmax`], row kernels in [`super::rows`].
//!
//! Invariants: memoized values are only created on the spine (never inside a
//! loop), so they dominate every later kernel; scalars are SSA values (a
//! scalar variable is loaded once and stored only at the very end, after
//! every read of its old value); the function makes no calls other than to
//! `specc_sgemm`, `specc_sgemm_ep`, `specc_sgemm_batched`, `specc_winograd`
//! and `specc_adam` (the JIT's runtime kernels) and, with `--profile`,
//! `specc_profile_mark`.

use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, AbiParam, FuncRef, InstBuilder, MemFlagsData, Signature, StackSlotData, StackSlotKind,
    Type, Value,
};
use cranelift_codegen::isa::CallConv;
use cranelift_frontend::{FunctionBuilder, Variable};
use specc_runtime::abi;

use super::ops;
use crate::ir::{BinaryOp, DType, Graph, NodeId, Op, UnaryOp};
use crate::plan::nest::{gemm_split, GemmSplit};
use crate::plan::{BufId, GemmEpilogue, Groups, Kernel, Lin, Loc, Mode, Plan, View};

pub const PTR: Type = types::I64;

/// Flags of every load and store: never traps, may be unaligned (rows of
/// odd widths put f32x4 accesses at any 4-byte boundary).
pub fn trusted() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

/// The signature of `specc_sgemm`.
pub fn gemm_signature(cc: CallConv) -> Signature {
    let mut s = Signature::new(cc);
    for t in [
        types::I64,
        types::I64,
        types::I64,
        types::F32,
        PTR,
        types::I64,
        types::I64,
        PTR,
        types::I64,
        types::I64,
        types::F32,
        PTR,
        types::I64,
        types::I64,
    ] {
        s.params.push(AbiParam::new(t));
    }
    s
}

/// The signature of `specc_sgemm_ep`: `specc_sgemm`'s, then the bias
/// pointer (null for none), its stride along C's columns and `relu` (0/1).
pub fn gemm_ep_signature(cc: CallConv) -> Signature {
    let mut s = gemm_signature(cc);
    for t in [PTR, types::I64, types::I64] {
        s.params.push(AbiParam::new(t));
    }
    s
}

/// The signature of `specc_sgemm_batched`: `specc_sgemm`'s, then the
/// group count and the group strides of A, B and C (in elements).
pub fn gemm_batched_signature(cc: CallConv) -> Signature {
    let mut s = gemm_signature(cc);
    s.params.extend([AbiParam::new(types::I64); 4]);
    s
}

pub struct Emitter<'a, 'f> {
    pub b: &'a mut FunctionBuilder<'f>,
    pub g: &'a Graph,
    pub plan: &'a Plan,
    pub ctx: Value,
    pub batch: Value,
    lins: HashMap<Lin, Value>,
    bufs: HashMap<BufId, Value>,
    bases: HashMap<(i32, u32), Value>,
    pub scalars: HashMap<NodeId, Value>,
    gemm: FuncRef,
    profile: Option<FuncRef>,
    pub(crate) next_var: u32,
    /// Threads of this function, and this thread's index (an i64) when > 1.
    pub threads: u32,
    pub tid: Option<Value>,
    sync: Option<Value>,
    /// Nesting depth of conditional or loop code: values are memoized only at depth 0.
    pub region: u32,
    /// The runtime's Winograd transforms, when the module links them.
    pub winograd: Option<FuncRef>,
    /// The runtime's dense Adam update, when the module links it and
    /// `Options::runtime_adam` allows it.
    pub adam: Option<FuncRef>,
    /// The runtime's `specc_sgemm_ep`, when the module links it (else
    /// epilogues are emitted as loops after `specc_sgemm`).
    pub gemm_ep: Option<FuncRef>,
    /// The runtime's `specc_sgemm_batched`, when the module links it (else
    /// a batched product is a loop of `specc_sgemm` calls).
    pub gemm_batched: Option<FuncRef>,
    /// The runtime's `specc_rnn_forward` and `specc_rnn_backward` (the JIT).
    pub rnn: Option<[FuncRef; 2]>,
}

impl<'a, 'f> Emitter<'a, 'f> {
    pub fn new(
        b: &'a mut FunctionBuilder<'f>,
        g: &'a Graph,
        plan: &'a Plan,
        ctx: Value,
        gemm: FuncRef,
        profile: Option<FuncRef>,
    ) -> Self {
        let batch = b.ins().load(types::I64, trusted(), ctx, abi::CTX_BATCH);
        let threads = plan.threads.max(1);
        let (tid, sync) = if threads > 1 {
            (
                Some(b.ins().load(types::I64, trusted(), ctx, abi::CTX_THREAD)),
                Some(b.ins().load(PTR, trusted(), ctx, abi::CTX_SYNC)),
            )
        } else {
            (None, None)
        };
        Emitter {
            b,
            g,
            plan,
            ctx,
            batch,
            lins: HashMap::new(),
            bufs: HashMap::new(),
            bases: HashMap::new(),
            scalars: HashMap::new(),
            gemm,
            profile,
            next_var: 0,
            threads,
            tid,
            sync,
            region: 0,
            winograd: None,
            adam: None,
            gemm_ep: None,
            gemm_batched: None,
            rnn: None,
        }
    }

    /// A fresh frontend variable of type `ty`.
    pub fn var(&mut self, ty: Type) -> Variable {
        let v = self.b.declare_var(ty);
        self.next_var += 1;
        v
    }

    /// `c + b * B` as an i64 (memoized on the spine).
    pub fn lin(&mut self, l: Lin) -> Value {
        if let Some(&v) = self.lins.get(&l) {
            return v;
        }
        let v = if l.b == 0 {
            self.b.ins().iconst(types::I64, l.c)
        } else {
            let bb = if l.b == 1 {
                self.batch
            } else {
                self.b.ins().imul_imm_s(self.batch, l.b)
            };
            if l.c == 0 {
                bb
            } else {
                self.b.ins().iadd_imm_s(bb, l.c)
            }
        };
        if self.region == 0 {
            self.lins.insert(l, v);
        }
        v
    }

    /// `ctx.<table>[index]` (memoized).
    fn table_entry(&mut self, field: i32, index: u32) -> Value {
        if let Some(&v) = self.bases.get(&(field, index)) {
            return v;
        }
        let table = self.b.ins().load(PTR, trusted(), self.ctx, field);
        let v = self.b.ins().load(PTR, trusted(), table, (index as i32) * 8);
        if self.region == 0 {
            self.bases.insert((field, index), v);
        }
        v
    }

    /// The address of a buffer's first element (memoized on the spine).
    pub fn buf_ptr(&mut self, buf: BufId) -> Value {
        if let Some(&v) = self.bufs.get(&buf) {
            return v;
        }
        let v = match self.plan.buffer(buf).loc.clone() {
            Loc::Input(i) => self.table_entry(abi::CTX_INPUTS, i),
            Loc::Output(i) => self.table_entry(abi::CTX_OUTPUTS, i),
            Loc::Arena { arena, offset } => {
                let base = self.table_entry(abi::CTX_ARENAS, arena);
                self.b.ins().iadd_imm_s(base, (offset * 4) as i64)
            }
            Loc::Scratch { offset } => {
                let key = (abi::CTX_SCRATCH, u32::MAX);
                let base = match self.bases.get(&key) {
                    Some(&s) => s,
                    None => {
                        let s = self
                            .b
                            .ins()
                            .load(PTR, trusted(), self.ctx, abi::CTX_SCRATCH);
                        self.bases.insert(key, s);
                        s
                    }
                };
                self.b.ins().iadd_imm_s(base, offset as i64)
            }
        };
        if self.region == 0 {
            self.bufs.insert(buf, v);
        }
        v
    }

    /// `ctx.scratch + offset` (bytes).
    pub fn scratch_ptr(&mut self, offset: u64) -> Value {
        let key = (abi::CTX_SCRATCH, u32::MAX);
        let base = match self.bases.get(&key) {
            Some(&s) => s,
            None => {
                let s = self
                    .b
                    .ins()
                    .load(PTR, trusted(), self.ctx, abi::CTX_SCRATCH);
                if self.region == 0 {
                    self.bases.insert(key, s);
                }
                s
            }
        };
        self.b.ins().iadd_imm_s(base, offset as i64)
    }

    /// Calls `specc_sgemm` with its 14 arguments.
    pub fn call_gemm(&mut self, args: &[Value]) {
        let gemm = self.gemm;
        self.b.ins().call(gemm, args);
    }

    /// The address of a view's first element.
    pub fn view_ptr(&mut self, v: &View) -> Value {
        let base = self.buf_ptr(v.buf);
        if v.offset.is_zero() {
            return base;
        }
        let off = self.lin(v.offset);
        let bytes = self.b.ins().imul_imm_s(off, 4);
        self.b.ins().iadd(base, bytes)
    }

    /// The f32 SSA value of a scalar node, computed on the spine at first use.
    /// Its operands are computed first, in a loop over an explicit stack (a
    /// chain of scalar ops, e.g. a long sum, may be 100,000 nodes deep), in
    /// the order a recursive walk would take.
    pub fn scalar(&mut self, n: NodeId) -> Value {
        if let Some(&v) = self.scalars.get(&n) {
            return v;
        }
        // Values computed by this call: one straight-line sequence, so they
        // dominate each other even inside a region, where nothing is memoized.
        let mut done: HashMap<NodeId, Value> = HashMap::new();
        let mut stack = vec![(n, false)];
        while let Some((m, operands_done)) = stack.pop() {
            if done.contains_key(&m) || self.scalars.contains_key(&m) {
                continue;
            }
            if operands_done {
                let v = self.scalar_op(m, &done);
                if self.region == 0 {
                    self.scalars.insert(m, v);
                }
                done.insert(m, v);
                continue;
            }
            stack.push((m, true));
            for &i in self.scalar_operands(m).iter().rev() {
                stack.push((i, false));
            }
        }
        done[&n]
    }

    /// The nodes whose scalar values `n`'s value is computed from.
    fn scalar_operands(&self, n: NodeId) -> &'a [NodeId] {
        crate::plan::scalar_operands(self.g, &self.plan.scalar_loads, n)
    }

    /// The value of scalar node `n`, whose operands are computed (memoized or in `done`).
    fn scalar_op(&mut self, n: NodeId, done: &HashMap<NodeId, Value>) -> Value {
        let ty = types::F32;
        let arg: Vec<Value> = self
            .scalar_operands(n)
            .iter()
            .map(|i| {
                *self
                    .scalars
                    .get(i)
                    .or_else(|| done.get(i))
                    .expect("operands are computed first")
            })
            .collect();
        if let Some((view, dt)) = self.plan.scalar_loads.get(&n).cloned() {
            let p = self.view_ptr(&view);
            return self.load_scalar(p, dt);
        }
        match self.g.op(n).clone() {
            Op::Scalar(bits) => self.b.ins().f32const(f32::from_bits(bits)),
            Op::BatchSize => self.b.ins().fcvt_from_sint(ty, self.batch),
            Op::GlobalStep => {
                let s = self
                    .b
                    .ins()
                    .load(types::I64, trusted(), self.ctx, abi::CTX_GLOBAL_STEP);
                self.b.ins().fcvt_from_sint(ty, s)
            }
            Op::FirstRow => {
                let r = self
                    .b
                    .ins()
                    .load(types::I64, trusted(), self.ctx, abi::CTX_FIRST_ROW);
                self.b.ins().fcvt_from_sint(ty, r)
            }
            Op::Var(v) => {
                let (arena, offset) = self.plan.var_locs[v as usize];
                let base = self.table_entry(abi::CTX_ARENAS, arena as u32);
                self.b.ins().load(ty, trusted(), base, (offset * 4) as i32)
            }
            Op::Unary(u) => ops::unary(self.b, ty, u, arg[0]),
            Op::Binary(op) => ops::binary(self.b, ty, op, arg[0], arg[1]),
            Op::Select => ops::select(self.b, ty, arg[0], arg[1], arg[2]),
            Op::Cast(DType::I32) => ops::truncate(self.b, arg[0]),
            Op::Cast(DType::F32)
            | Op::StopGradient
            | Op::Reshape(_)
            | Op::Slice { .. }
            | Op::Transpose(_) => arg[0],
            Op::NormalNoise { seed } => self.normal_noise(seed, arg[0]),
            Op::UniformHash { seed } => ops::uniform_hash(self.b, ty, seed, arg[0], arg[1]),
            // Resolved by `passes::optimize`; a function that still reads it
            // (none the driver builds) computes the inference value.
            Op::Training => self.b.ins().f32const(0.0),
            other => panic!("internal compiler error: scalar {n} ({other:?}) has no value yet"),
        }
    }

    /// Output `k` (an i64 value) of the splitmix64 stream `seed`.
    fn splitmix(&mut self, seed: u64, k: Value) -> Value {
        let b = &mut self.b;
        let gamma = b.ins().iconst(types::I64, 0x9E37_79B9_7F4A_7C15u64 as i64);
        let z = b.ins().imul(k, gamma);
        let z = b.ins().iadd_imm_s(z, seed as i64);
        let mut z = z;
        for (shift, mul) in [
            (30, 0xBF58_476D_1CE4_E5B9u64),
            (27, 0x94D0_49BB_1331_11EBu64),
        ] {
            let sh = b.ins().ushr_imm_u(z, shift);
            let x = b.ins().bxor(z, sh);
            let m = b.ins().iconst(types::I64, mul as i64);
            z = b.ins().imul(x, m);
        }
        let sh = b.ins().ushr_imm_u(z, 31);
        b.ins().bxor(z, sh)
    }

    /// A standard normal from the step (see `Op::NormalNoise` and `interp::normal_noise`).
    fn normal_noise(&mut self, seed: u64, step: Value) -> Value {
        let f = types::F32;
        let s = self.b.ins().fcvt_to_sint_sat(types::I64, step);
        let zero = self.b.ins().iconst(types::I64, 0);
        let neg = self.b.ins().icmp(IntCC::SignedLessThan, s, zero);
        let s = self.b.ins().select(neg, zero, s);
        let two_s = self.b.ins().ishl_imm_u(s, 1);
        let k1 = self.b.ins().iadd_imm_s(two_s, 1);
        let k2 = self.b.ins().iadd_imm_s(two_s, 2);
        let z1 = self.splitmix(seed, k1);
        let z2 = self.splitmix(seed, k2);
        let scale = self.b.ins().f32const(1.0 / 16_777_216.0);
        let h1 = self.b.ins().ushr_imm_u(z1, 40);
        let h1 = self.b.ins().iadd_imm_s(h1, 1);
        let u1 = self.b.ins().fcvt_from_uint(f, h1);
        let u1 = self.b.ins().fmul(u1, scale);
        let h2 = self.b.ins().ushr_imm_u(z2, 40);
        let u2 = self.b.ins().fcvt_from_uint(f, h2);
        let u2 = self.b.ins().fmul(u2, scale);
        let l = super::math::log(self.b, f, u1);
        let m2 = self.b.ins().f32const(-2.0);
        let r2 = self.b.ins().fmul(m2, l);
        let r = self.b.ins().sqrt(r2);
        let tau = self.b.ins().f32const(std::f32::consts::TAU);
        let a = self.b.ins().fmul(tau, u2);
        let c = super::trig::cos(self.b, f, a);
        self.b.ins().fmul(r, c)
    }

    /// `v` through a stack slot: the same value, but opaque to Cranelift's
    /// optimizer, so the computation of a loop-invariant value stays where it
    /// was emitted (on the spine) instead of being sunk into a loop.
    pub fn opaque(&mut self, v: Value) -> Value {
        let ty = self.b.func.dfg.value_type(v);
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            ty.bytes(),
            4,
        ));
        self.b.ins().stack_store(PTR, v, slot, 0);
        self.b.ins().stack_load(PTR, ty, slot, 0)
    }

    /// Loads one element as f32 (i32 elements are converted).
    pub fn load_scalar(&mut self, p: Value, dt: DType) -> Value {
        match dt {
            DType::F32 => self.b.ins().load(types::F32, trusted(), p, 0),
            DType::I32 => {
                let i = self.b.ins().load(types::I32, trusted(), p, 0);
                self.b.ins().fcvt_from_sint(types::F32, i)
            }
        }
    }

    /// Emits every kernel, then the scalar outputs and updates.
    pub fn emit_plan(&mut self) {
        self.mark(u32::MAX);
        for (ki, k) in self.plan.kernels.iter().enumerate() {
            let mode = self.plan.modes.get(ki).copied().unwrap_or(Mode::Single);
            if self.plan.syncs.before.get(ki).copied().unwrap_or(false) {
                self.barrier();
            }
            match k {
                Kernel::Loop(l) => {
                    let adam = self
                        .adam
                        .and_then(|f| Some((f, crate::plan::adam::recognise(self.g, l)?)));
                    match adam {
                        Some((f, a)) => super::adam::emit(self, l, &a, f, mode),
                        None => super::loops::emit_loop(self, l, mode),
                    }
                }
                Kernel::Gemm {
                    a,
                    b,
                    c,
                    ta,
                    tb,
                    m,
                    k,
                    n,
                    groups: None,
                    epilogue,
                    ..
                } => self.emit_gemm(a, b, c, *ta, *tb, [*m, *k, *n], epilogue.as_ref(), mode),
                Kernel::Gemm {
                    a,
                    b,
                    c,
                    ta,
                    tb,
                    m,
                    k,
                    n,
                    groups: Some(groups),
                    ..
                } => self.emit_batch_gemm(a, b, c, *ta, *tb, [*m, *k, *n], groups, mode),
                Kernel::ArgMax {
                    src,
                    shape,
                    axis,
                    dst,
                    ..
                } => {
                    let prepared = super::argmax::prepare(self, src, shape, *axis, dst);
                    if self.threads > 1 && mode == Mode::Split && prepared.splittable() {
                        super::argmax::emit(self, &prepared, true);
                    } else {
                        self.only_thread0(|e| super::argmax::emit(e, &prepared, false));
                    }
                }
                Kernel::Window(w) => {
                    let prepared = super::window::prepare(self, w);
                    if mode == Mode::Split {
                        super::window::emit(self, &prepared, mode);
                    } else {
                        self.only_thread0(|e| super::window::emit(e, &prepared, mode));
                    }
                }
                Kernel::Winograd(w) => super::winoblocks::emit(self, w, mode),
                Kernel::Recurrence(r) => {
                    let f = self.rnn.expect("recurrences run in the JIT")[usize::from(r.grad)];
                    super::recurrence::emit(self, r, mode, f);
                }
                Kernel::Rows(r) => {
                    let prepared = super::rows::prepare(self, r);
                    self.only_thread0(|e| super::rows::emit(e, &prepared));
                }
            }
            self.mark(ki as u32);
        }
        if self.plan.syncs.before_scalars {
            self.barrier();
        }
        // Scalar outputs and updates are thread 0's alone.
        self.only_thread0(|e| e.finish_scalars());
    }

    /// Runs `f`'s code on thread 0 only (all code when single-threaded).
    pub fn only_thread0(&mut self, f: impl FnOnce(&mut Self)) {
        let Some(tid) = self.tid else {
            f(self);
            return;
        };
        let then = self.b.create_block();
        let done = self.b.create_block();
        self.b.ins().brif(tid, done, &[], then, &[]);
        self.b.switch_to_block(then);
        self.b.seal_block(then);
        self.region += 1;
        f(self);
        self.region -= 1;
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
        self.b.seal_block(done);
    }

    /// This thread's part `[lo, hi)` of `0..size`, cut at a multiple of `align`
    /// (the whole range when single-threaded).
    pub fn thread_range(&mut self, size: Value, align: i64) -> (Value, Value) {
        let zero = self.b.ins().iconst(types::I64, 0);
        let Some(tid) = self.tid else {
            return (zero, size);
        };
        // Two threads: cut = round_down(size / 2, align).
        let half = self.b.ins().sshr_imm_u(size, 1);
        let cut = if align > 1 {
            self.b.ins().band_imm_s(half, -align)
        } else {
            half
        };
        let first = self.b.ins().icmp_imm_s(IntCC::Equal, tid, 0);
        let lo = self.b.ins().select(first, zero, cut);
        let hi = self.b.ins().select(first, cut, size);
        (lo, hi)
    }

    /// Waits until the other thread has reached this point (nothing when
    /// single-threaded). Thread `t` owns the epoch word at `sync + t *
    /// SYNC_STRIDE` (see `abi::SYNC_STRIDE`): both threads pass the same
    /// barriers, so their epochs are equal between calls. A barrier bumps this
    /// thread's epoch (a plain store, which releases this thread's writes),
    /// then waits until the other's is at least as far (acquiring its
    /// writes): one cache-line transfer each way, in parallel, no
    /// read-modify-write.
    pub fn barrier(&mut self) {
        let (Some(sync), Some(tid)) = (self.sync, self.tid) else {
            return;
        };
        let flags = trusted();
        let stride = i64::from(abi::SYNC_STRIDE);
        let own_off = self.b.ins().imul_imm_s(tid, stride);
        let own = self.b.ins().iadd(sync, own_off);
        // The other thread of two: 1 - tid.
        let one = self.b.ins().iconst(types::I64, 1);
        let other_tid = self.b.ins().isub(one, tid);
        let other_off = self.b.ins().imul_imm_s(other_tid, stride);
        let other = self.b.ins().iadd(sync, other_off);
        let epoch = self.b.ins().load(types::I64, flags, own, 0);
        let next = self.b.ins().iadd_imm_s(epoch, 1);
        self.b.ins().store(flags, next, own, 0);
        let wait = self.b.create_block();
        let done = self.b.create_block();
        self.b.ins().jump(wait, &[]);
        self.b.switch_to_block(wait);
        let now = self.b.ins().atomic_load(types::I64, flags, other);
        let behind = self.b.ins().icmp(IntCC::SignedLessThan, now, next);
        self.b.ins().brif(behind, wait, &[], done, &[]);
        self.b.seal_block(wait);
        self.b.switch_to_block(done);
        self.b.seal_block(done);
    }

    /// Scalar outputs, then scalar variable updates, then the global step.
    fn finish_scalars(&mut self) {
        for &(k, n) in &self.plan.scalar_outputs {
            let v = self.scalar(n);
            let p = self.table_entry(abi::CTX_OUTPUTS, k);
            let v = if self.g.dtype(n) == DType::I32 {
                self.b.ins().fcvt_to_sint_sat(types::I32, v)
            } else {
                v
            };
            self.b.ins().store(trusted(), v, p, 0);
        }
        // Compute every updated scalar before storing any (they read old values).
        let updates: Vec<(u32, u64, Value)> = self
            .plan
            .scalar_updates
            .clone()
            .into_iter()
            .map(|(a, o, n)| (a, o, self.scalar(n)))
            .collect();
        for (a, o, v) in updates {
            let base = self.table_entry(abi::CTX_ARENAS, a);
            self.b.ins().store(trusted(), v, base, (o * 4) as i32);
        }
        if self.plan.increments_global_step {
            let s = self
                .b
                .ins()
                .load(types::I64, trusted(), self.ctx, abi::CTX_GLOBAL_STEP);
            let s1 = self.b.ins().iadd_imm_s(s, 1);
            self.b
                .ins()
                .store(trusted(), s1, self.ctx, abi::CTX_GLOBAL_STEP);
        }
    }

    /// With profiling on, a call to `specc_profile_mark(k)`.
    fn mark(&mut self, k: u32) {
        if let Some(f) = self.profile {
            let v = self.b.ins().iconst(types::I32, i64::from(k));
            self.b.ins().call(f, &[v]);
        }
    }

    /// The values a `specc_sgemm` call takes from its views: `m, k, n`, the
    /// three base pointers and each operand's (row, column) strides, A's
    /// and B's swapped when transposed.
    fn gemm_operands(
        &mut self,
        dims: [Lin; 3],
        [a, b, c]: [&View; 3],
        [ta, tb]: [bool; 2],
    ) -> GemmOperands {
        let dims = dims.map(|d| self.lin(d));
        let ptrs = [a, b, c].map(|v| self.view_ptr(v));
        let mut strides = |v: &View, t: bool| {
            let (s0, s1) = (self.lin(v.strides[0]), self.lin(v.strides[1]));
            if t {
                (s1, s0)
            } else {
                (s0, s1)
            }
        };
        let strides = [strides(a, ta), strides(b, tb), strides(c, false)];
        GemmOperands {
            dims,
            ptrs,
            strides,
        }
    }

    /// A batched GEMM: `groups.count` whole products, the threads taking
    /// contiguous ranges of groups (so no product is split and the bits do
    /// not depend on the thread count). Each thread's range is one call of
    /// `specc_sgemm_batched` (the JIT), or a loop of `specc_sgemm` calls (an
    /// object file): the same bits.
    #[allow(clippy::too_many_arguments)]
    fn emit_batch_gemm(
        &mut self,
        a: &View,
        bv: &View,
        c: &View,
        ta: bool,
        tb: bool,
        [m, k, n]: [Lin; 3],
        groups: &Groups,
        mode: Mode,
    ) {
        let GemmOperands {
            dims: [mv, kv, nv],
            ptrs: [pa, pb, pc],
            strides: [(rsa, csa), (rsb, csb), (rsc, csc)],
        } = self.gemm_operands([m, k, n], [a, bv, c], [ta, tb]);
        let step_a = self.lin(groups.a);
        let step_b = self.lin(groups.b);
        let step_c = self.lin(groups.c);
        let count = self.lin(groups.count);
        let (lo, hi) = if self.threads > 1 && mode == Mode::Split {
            self.thread_range(count, 1)
        } else {
            let zero = self.b.ins().iconst(types::I64, 0);
            (zero, count)
        };
        let gemm = self.gemm;
        let batched = self.gemm_batched;
        let body = |e: &mut Self| {
            let one = e.b.ins().f32const(1.0);
            let zero = e.b.ins().f32const(0.0);
            if let Some(f) = batched {
                let mut at = |base: Value, step: Value| {
                    let off = e.b.ins().imul(lo, step);
                    let off = e.b.ins().imul_imm_s(off, 4);
                    e.b.ins().iadd(base, off)
                };
                let ga = at(pa, step_a);
                let gb = at(pb, step_b);
                let gc = at(pc, step_c);
                let count = e.b.ins().isub(hi, lo);
                let args = [
                    mv, kv, nv, one, ga, rsa, csa, gb, rsb, csb, zero, gc, rsc, csc, count, step_a,
                    step_b, step_c,
                ];
                e.b.ins().call(f, &args);
                return;
            }
            super::loops::counted_loop(e, lo, hi, 1, &mut |e, g| {
                let mut at = |base: Value, step: Value| {
                    let off = e.b.ins().imul(g, step);
                    let off = e.b.ins().imul_imm_s(off, 4);
                    e.b.ins().iadd(base, off)
                };
                let ga = at(pa, step_a);
                let gb = at(pb, step_b);
                let gc = at(pc, step_c);
                let args = [
                    mv, kv, nv, one, ga, rsa, csa, gb, rsb, csb, zero, gc, rsc, csc,
                ];
                e.b.ins().call(gemm, &args);
            });
        };
        if self.threads > 1 && mode == Mode::Split {
            body(self);
        } else {
            self.only_thread0(body);
        }
    }

    /// A GEMM, with its epilogue when it has one. With two threads each
    /// computes a block of C (its epilogue included: the bias offset by
    /// the block's first column), so the bits do not depend on the split.
    #[allow(clippy::too_many_arguments)]
    fn emit_gemm(
        &mut self,
        a: &View,
        bv: &View,
        c: &View,
        ta: bool,
        tb: bool,
        [m, k, n]: [Lin; 3],
        epilogue: Option<&GemmEpilogue>,
        mode: Mode,
    ) {
        let GemmOperands {
            dims: [mv, kv, nv],
            ptrs: [pa, pb, pc],
            strides: [(rsa, csa), (rsb, csb), (rsc, csc)],
        } = self.gemm_operands([m, k, n], [a, bv, c], [ta, tb]);
        let one = self.b.ins().f32const(1.0);
        let zero = self.b.ins().f32const(0.0);
        // The epilogue's bias pointer and column stride (null and 0 without
        // a bias).
        let ep = epilogue.map(|e| {
            let (bias, stride) = match &e.bias {
                Some(v) => (self.view_ptr(v), self.lin(v.strides[1])),
                None => {
                    let z = self.b.ins().iconst(types::I64, 0);
                    (z, z)
                }
            };
            (e, bias, stride)
        });
        if self.threads > 1 && mode == Mode::Split {
            // Each thread computes a block of C, where `gemm_split` cuts it.
            let (by_columns, cut) = match gemm_split(m, n, self.plan.max_batch as i64) {
                GemmSplit::Columns(cut) => (true, cut),
                GemmSplit::Rows(cut) => (false, cut),
            };
            let size = if by_columns { nv } else { mv };
            let align = cut.align;
            let (lo, hi) = self.thread_range(size, align);
            let count = self.b.ins().isub(hi, lo);
            let bytes = |e: &mut Self, stride: Value| {
                let o = e.b.ins().imul(lo, stride);
                e.b.ins().imul_imm_s(o, 4)
            };
            let (args, ep) = if by_columns {
                let ob = bytes(self, csb);
                let oc = bytes(self, csc);
                let pb2 = self.b.ins().iadd(pb, ob);
                let pc2 = self.b.ins().iadd(pc, oc);
                let ep = ep.map(|(e, bias, stride)| {
                    let o = bytes(self, stride);
                    (e, self.b.ins().iadd(bias, o), stride)
                });
                (
                    [
                        mv, kv, count, one, pa, rsa, csa, pb2, rsb, csb, zero, pc2, rsc, csc,
                    ],
                    ep,
                )
            } else {
                let oa = bytes(self, rsa);
                let oc = bytes(self, rsc);
                let pa2 = self.b.ins().iadd(pa, oa);
                let pc2 = self.b.ins().iadd(pc, oc);
                (
                    [
                        count, kv, nv, one, pa2, rsa, csa, pb, rsb, csb, zero, pc2, rsc, csc,
                    ],
                    ep,
                )
            };
            self.call_gemm_ep(&args, ep);
        } else {
            let args = [
                mv, kv, nv, one, pa, rsa, csa, pb, rsb, csb, zero, pc, rsc, csc,
            ];
            self.only_thread0(|e| e.call_gemm_ep(&args, ep));
        }
    }

    /// Calls `specc_sgemm` with `args`, or with an epilogue `specc_sgemm_ep`
    /// (the JIT) or `specc_sgemm` followed by a loop over the `m x n` block
    /// of C it wrote (an object file): `c + bias[j]`, then relu, the ops of
    /// the loop the epilogue replaced ([`super::ops`]).
    fn call_gemm_ep(&mut self, args: &[Value; 14], ep: Option<(&GemmEpilogue, Value, Value)>) {
        let Some((e, bias, stride)) = ep else {
            self.b.ins().call(self.gemm, args);
            return;
        };
        if let Some(f) = self.gemm_ep {
            let relu = self.b.ins().iconst(types::I64, i64::from(e.relu));
            let mut all = args.to_vec();
            all.extend([bias, stride, relu]);
            self.b.ins().call(f, &all);
            return;
        }
        self.b.ins().call(self.gemm, args);
        let [m, _, n, _, _, _, _, _, _, _, _, c, rsc, csc] = *args;
        let has_bias = e.bias.is_some();
        let relu = e.relu;
        let b = &mut *self.b;
        let rsc4 = b.ins().imul_imm_s(rsc, 4);
        let csc4 = b.ins().imul_imm_s(csc, 4);
        let bs4 = b.ins().imul_imm_s(stride, 4);
        let z = b.ins().iconst(types::I64, 0);
        let iv = super::gemm::counter(b, z);
        super::gemm::step_loop(b, iv, m, 1, &mut |b, i| {
            let ro = b.ins().imul(i, rsc4);
            let row = b.ins().iadd(c, ro);
            let z = b.ins().iconst(types::I64, 0);
            let jv = super::gemm::counter(b, z);
            super::gemm::step_loop(b, jv, n, 1, &mut |b, j| {
                let co = b.ins().imul(j, csc4);
                let p = b.ins().iadd(row, co);
                let mut x = b.ins().load(types::F32, trusted(), p, 0);
                if has_bias {
                    let bo = b.ins().imul(j, bs4);
                    let bp = b.ins().iadd(bias, bo);
                    let y = b.ins().load(types::F32, trusted(), bp, 0);
                    x = ops::binary(b, types::F32, BinaryOp::Add, x, y);
                }
                if relu {
                    x = ops::unary(b, types::F32, UnaryOp::Relu, x);
                }
                b.ins().store(trusted(), x, p, 0);
            });
        });
    }
}

/// A GEMM call's operands as values ([`Emitter::gemm_operands`]).
struct GemmOperands {
    dims: [Value; 3],
    ptrs: [Value; 3],
    strides: [(Value, Value); 3],
}
