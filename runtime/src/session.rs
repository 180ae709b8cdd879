//! A session: the memory a compiled model runs in.
//!
//! Owns: the arenas (variables, slots, constants), the per-function scratch
//! and output buffers, the batch input buffers, and the global step. It
//! initializes variables from the layout's initializers, lets a
//! [`BatchSource`] fill the inputs ([`Session::fill`]), calls compiled
//! functions, and reads and writes variables by TF name.
//!
//! Invariants: every buffer is allocated once, 64-byte aligned and zeroed,
//! sized for `max_batch`; calling a function allocates nothing; the pointers
//! handed to compiled code stay valid for the session's lifetime (buffers
//! never move); a function is only called with `1..=max_batch` rows (anything
//! else is an error, not a panic); a session that needs more memory than the
//! machine has available is refused before anything is allocated
//! ([`MemoryNeeds`]), and a failed allocation is an error.

use ndarray::{ArrayViewD, ArrayViewMutD, IxDyn};

use crate::abi::{ElemType, FunctionLayout, Layout, StepCtx, StepFn, VarRole};
use crate::data::{DataError, Dataset};
use crate::init;
use crate::memory::{AlignedBuf, MemoryNeeds};
use crate::source::{BatchBuffers, BatchSource, Binding, IN_MEMORY};
use crate::threads::Worker;
use crate::twin::{Run, StallGuard};

struct FunctionState {
    layout: FunctionLayout,
    f: StepFn,
    scratch: AlignedBuf,
    outputs: Vec<AlignedBuf>,
    output_ptrs: Vec<*mut f32>,
    /// The SPMD barrier words (see `abi::StepCtx::sync`).
    sync: AlignedBuf,
    /// A two-thread function's one-thread twin (an index into the
    /// functions; [`Session::set_twin`]) and when to run it.
    twin: Option<(usize, StallGuard)>,
}

/// What runs before each call of one function of a session, with the
/// batch's rows filled ([`Session::set_prologue`]).
pub trait Prologue {
    fn before(&mut self, session: &mut Session, rows: usize) -> Result<(), String>;
}

pub struct Session {
    pub layout: Layout,
    arenas: Vec<AlignedBuf>,
    arena_ptrs: Vec<*mut f32>,
    inputs: Vec<AlignedBuf>,
    input_ptrs: Vec<*const u8>,
    functions: Vec<FunctionState>,
    /// TF's global_step.
    pub global_step: i64,
    /// The index in the global batch of the first row this session feeds
    /// (`StepCtx::first_row`): 0 unless it is one replica of a data-parallel job.
    pub first_row: i64,
    /// Which replica this session is (0 unless [`Session::set_replica`]
    /// says): whose rows its sharded tables hold.
    replica: usize,
    /// Runs before each call of one function ([`Session::set_prologue`]).
    prologue: Option<(usize, Box<dyn Prologue>)>,
    /// The dataset bound by [`Session::bind`] for [`Session::gather`].
    binding: Option<Binding>,
    /// Runs thread 1 of functions compiled for two threads.
    worker: Option<Worker>,
    /// What keeps the memory of arenas attached with
    /// [`Session::attach_arena`] alive (their `arena_ptrs` point into it).
    attached: Vec<Box<dyn std::any::Any>>,
}

impl Session {
    /// Allocates everything and initializes the variables.
    ///
    /// # Safety
    /// Each function must be compiled code with this layout's ABI, and must
    /// stay callable for the life of the session.
    pub unsafe fn new(
        layout: Layout,
        functions: Vec<(FunctionLayout, StepFn)>,
    ) -> Result<Session, String> {
        let needs = MemoryNeeds::of(
            &layout,
            &functions.iter().map(|(l, _)| l.clone()).collect::<Vec<_>>(),
        );
        needs.check_available()?;
        let cannot = |e: String| format!("{e} for the model, which needs {needs} of memory");
        let arenas: Vec<AlignedBuf> = layout
            .arenas
            .iter()
            .map(|a| AlignedBuf::zeroed(a.len.saturating_mul(4)))
            .collect::<Result<_, _>>()
            .map_err(cannot)?;
        let arena_ptrs = arenas.iter().map(|a| a.as_ptr() as *mut f32).collect();
        let inputs: Vec<AlignedBuf> = layout
            .inputs
            .iter()
            .map(|i| AlignedBuf::zeroed(i.per_example.saturating_mul(layout.max_batch * 4)))
            .collect::<Result<_, _>>()
            .map_err(cannot)?;
        let input_ptrs = inputs.iter().map(|b| b.as_ptr() as *const u8).collect();
        let mut states = Vec::with_capacity(functions.len());
        for (fl, f) in functions {
            let outputs: Vec<AlignedBuf> = fl
                .outputs
                .iter()
                .map(|o| AlignedBuf::zeroed(o.len(layout.max_batch).saturating_mul(4)))
                .collect::<Result<_, _>>()
                .map_err(cannot)?;
            let output_ptrs = outputs.iter().map(|b| b.as_ptr() as *mut f32).collect();
            states.push(FunctionState {
                scratch: AlignedBuf::zeroed(fl.scratch_bytes).map_err(cannot)?,
                sync: AlignedBuf::zeroed(128).map_err(cannot)?,
                layout: fl,
                f,
                outputs,
                output_ptrs,
                twin: None,
            });
        }
        let functions = states;
        let mut s = Session {
            layout,
            arenas,
            arena_ptrs,
            inputs,
            input_ptrs,
            functions,
            global_step: 0,
            first_row: 0,
            replica: 0,
            prologue: None,
            binding: None,
            worker: None,
            attached: Vec::new(),
        };
        s.init_vars()?;
        Ok(s)
    }

    /// (Re)initializes every variable and constant, and resets the global step.
    pub fn init_vars(&mut self) -> Result<(), String> {
        for v in &self.layout.vars {
            let n: usize = v.shape.iter().product();
            let len = self.layout.arenas[v.arena].len;
            // SAFETY: as in `arena_slice_mut` (the layout and the pointers are
            // distinct fields of the session, which `&mut self` holds).
            let arena = unsafe { std::slice::from_raw_parts_mut(self.arena_ptrs[v.arena], len) };
            let dst = &mut arena[v.offset..v.offset + n];
            match self.layout.shard_of(v) {
                // This replica's rows of the one-process table.
                Some(s) => {
                    let mut full = v.shape.clone();
                    full[0] = s.rows;
                    let own = crate::train::sharded::Ownership::new(&v.partitions, s.replicas);
                    dst.fill(0.0);
                    init::initialize_rows(&v.init, &full, &own.ranges(self.replica), dst)
                }
                None => init::initialize(&v.init, &v.shape, dst),
            }
            .map_err(|e| format!("variable `{}`: {e}", v.name))?;
        }
        // A moving average starts at its parameter's initial value (TF's
        // ExponentialMovingAverage.apply initializes the shadow from the variable).
        for (shadow, param) in self.averages() {
            let value = self.var(&param).map(<[f32]>::to_vec);
            if let (Some(value), Some(dst)) = (value, self.var_mut(&shadow)) {
                dst.copy_from_slice(&value);
            }
        }
        self.global_step = 0;
        Ok(())
    }

    /// Makes this session replica `rank` of a data-parallel job: its
    /// sharded tables (the layout's `sharded`) hold that replica's rows,
    /// initialized again to one process's values there.
    pub fn set_replica(&mut self, rank: usize) -> Result<(), String> {
        self.replica = rank;
        if self.layout.sharded.is_empty() {
            return Ok(());
        }
        let step = self.global_step;
        self.init_vars()?;
        self.global_step = step;
        Ok(())
    }

    /// Runs `prologue` before every call of function `f` (a sharded
    /// session's evaluation fetches the rows its batch looks up).
    pub fn set_prologue(&mut self, f: usize, prologue: Box<dyn Prologue>) {
        self.prologue = Some((f, prologue));
    }

    /// Which replica this session is ([`Session::set_replica`]).
    pub fn replica(&self) -> usize {
        self.replica
    }

    /// The index of arena `name` in the layout.
    pub fn arena_index(&self, name: &str) -> Option<usize> {
        self.layout.arenas.iter().position(|a| a.name == name)
    }

    /// Arena `index`'s memory (its layout length in elements).
    pub fn arena(&self, index: usize) -> &[f32] {
        self.arena_slice(index)
    }

    /// Arena `index`'s memory, writable.
    pub fn arena_mut(&mut self, index: usize) -> &mut [f32] {
        self.arena_slice_mut(index)
    }

    /// Arena `index`'s memory: its own buffer, or what it is attached to.
    fn arena_slice(&self, index: usize) -> &[f32] {
        let len = self.layout.arenas[index].len;
        // SAFETY: `arena_ptrs[index]` points at the arena's buffer (at least
        // `len` values) or at memory attached by `attach_arena`, whose
        // contract keeps `len` values valid while the session lives.
        unsafe { std::slice::from_raw_parts(self.arena_ptrs[index], len) }
    }

    fn arena_slice_mut(&mut self, index: usize) -> &mut [f32] {
        let len = self.layout.arenas[index].len;
        // SAFETY: as in `arena_slice`; `&mut self` is the session's only
        // access to the memory.
        unsafe { std::slice::from_raw_parts_mut(self.arena_ptrs[index], len) }
    }

    /// Points arena `index` at `len`-value memory outside the session (one
    /// replica's segment of memory shared by replicas on one node) from the
    /// next call on; the arena's own buffer is kept but no longer used.
    /// Only arenas of exchange values can be attached.
    /// `owner` is kept with the session, so the memory outlives it.
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of the arena's length in
    /// `f32`s, 64-byte aligned, for as long as `owner` lives; other threads
    /// or processes may access it only at times the caller coordinates with
    /// the session's calls (the replicas' barriers).
    pub unsafe fn attach_arena(
        &mut self,
        index: usize,
        ptr: *mut f32,
        owner: Box<dyn std::any::Any>,
    ) -> Result<(), String> {
        if index >= self.arenas.len() || ptr.is_null() || !(ptr as usize).is_multiple_of(64) {
            return Err(format!("cannot attach arena {index} at {ptr:p}"));
        }
        // Only exchange values live outside: the model's state stays in the
        // session's buffers (what `swap_averages` and checkpoints use).
        let exchange =
            |k: &VarRole| matches!(k, VarRole::Exchange { .. } | VarRole::ExchangePeer { .. });
        if let Some(v) = self
            .layout
            .vars
            .iter()
            .find(|v| v.arena == index && !exchange(&v.kind))
        {
            return Err(format!(
                "arena `{}` holds `{}`, not only exchange values: it cannot be attached",
                self.layout.arenas[index].name, v.name
            ));
        }
        self.arena_ptrs[index] = ptr;
        self.attached.push(owner);
        Ok(())
    }

    /// Exchanges arena `index`'s memory with `other` (at least the arena's
    /// length): what a collective received into `other` becomes the arena
    /// without a copy. Functions read their arenas' addresses at every call,
    /// so the swap holds from the next call on.
    pub fn swap_arena(&mut self, index: usize, other: &mut AlignedBuf) -> Result<(), String> {
        let len = self.layout.arenas[index].len;
        if other.f32s().len() < len {
            return Err(format!(
                "arena `{}` holds {len} values, the buffer only {}",
                self.layout.arenas[index].name,
                other.f32s().len()
            ));
        }
        std::mem::swap(&mut self.arenas[index], other);
        self.arena_ptrs[index] = self.arenas[index].as_ptr() as *mut f32;
        Ok(())
    }

    /// `(shadow, parameter)` names of every moving average.
    pub fn averages(&self) -> Vec<(String, String)> {
        self.layout
            .vars
            .iter()
            .filter_map(|v| match &v.kind {
                VarRole::Average { param } => Some((v.name.clone(), param.clone())),
                _ => None,
            })
            .collect()
    }

    /// Exchanges every parameter that has a moving average with its shadow.
    /// Calling it twice restores the original state; evaluating between the two
    /// calls evaluates the averaged model (`specc run --eval-with-averages`).
    pub fn swap_averages(&mut self) {
        for (shadow, param) in self.averages() {
            let (Some(a), Some(b)) = (self.layout.var(&shadow), self.layout.var(&param)) else {
                continue;
            };
            let (a, b) = (a.clone(), b.clone());
            let n: usize = a.shape.iter().product();
            if a.arena == b.arena {
                let buf = self.arenas[a.arena].f32s_mut();
                for i in 0..n {
                    buf.swap(a.offset + i, b.offset + i);
                }
            } else {
                let (lo, hi) = if a.arena < b.arena {
                    (&a, &b)
                } else {
                    (&b, &a)
                };
                let (left, right) = self.arenas.split_at_mut(hi.arena);
                let x = &mut left[lo.arena].f32s_mut()[lo.offset..lo.offset + n];
                let y = &mut right[0].f32s_mut()[hi.offset..hi.offset + n];
                x.swap_with_slice(y);
            }
        }
    }

    /// Runs `f` with every parameter that has a moving average replaced by
    /// its shadow (TF's `ExponentialMovingAverage.variables_to_restore`),
    /// then puts the parameters back, whatever `f` returns.
    pub fn with_averages<R>(&mut self, f: impl FnOnce(&mut Session) -> R) -> R {
        self.swap_averages();
        let r = f(self);
        self.swap_averages();
        r
    }

    pub fn max_batch(&self) -> usize {
        self.layout.max_batch
    }

    /// A variable's values (row-major, flat), by TF name.
    pub fn var(&self, name: &str) -> Option<&[f32]> {
        let v = self.layout.var(name)?;
        let n: usize = v.shape.iter().product();
        Some(&self.arena_slice(v.arena)[v.offset..v.offset + n])
    }

    /// A variable's values for writing, by TF name.
    pub fn var_mut(&mut self, name: &str) -> Option<&mut [f32]> {
        let v = self.layout.var(name)?;
        let (arena, offset) = (v.arena, v.offset);
        let n: usize = v.shape.iter().product();
        Some(&mut self.arena_slice_mut(arena)[offset..offset + n])
    }

    /// A variable as an array of its shape, by TF name (`W1`, `W1/Adam`,
    /// `beta1_power`).
    pub fn variable(&self, name: &str) -> Option<ArrayViewD<'_, f32>> {
        let shape = self.layout.var(name)?.shape.clone();
        let values = self.var(name)?;
        ArrayViewD::from_shape(IxDyn(&shape), values).ok()
    }

    /// A variable as a mutable array of its shape, by TF name.
    pub fn variable_mut(&mut self, name: &str) -> Option<ArrayViewMutD<'_, f32>> {
        let shape = self.layout.var(name)?.shape.clone();
        let values = self.var_mut(name)?;
        ArrayViewMutD::from_shape(IxDyn(&shape), values).ok()
    }

    /// The input buffers, for a [`BatchSource`] to fill.
    pub fn batch_buffers(&mut self) -> BatchBuffers<'_> {
        BatchBuffers {
            layout: &self.layout.inputs,
            buffers: &mut self.inputs,
            max_batch: self.layout.max_batch,
        }
    }

    /// Fills the inputs with the next batch of `source`; returns its rows
    /// (0: the source is exhausted).
    pub fn fill(&mut self, source: &mut (impl BatchSource + ?Sized)) -> Result<usize, DataError> {
        let max = self.layout.max_batch;
        let rows = source.next_batch(&mut self.batch_buffers())?;
        if rows > max {
            return Err(DataError::new(
                "batch source",
                format!("filled {rows} rows, more than the compiled maximum {max}"),
            ));
        }
        Ok(rows)
    }

    /// Binds an in-memory dataset's inputs to the model's by name (checking
    /// widths, types and id ranges), for [`Session::gather`].
    pub fn bind(&mut self, data: &Dataset) -> Result<(), String> {
        self.binding = Some(Binding::new(data, &self.layout.inputs)?);
        Ok(())
    }

    /// Copies the given rows of the bound dataset into the input buffers.
    /// Errors: nothing bound, a row out of range, or more rows than the
    /// compiled maximum batch.
    pub fn gather(&mut self, data: &Dataset, rows: &[u32]) -> Result<(), String> {
        let binding = self
            .binding
            .take()
            .ok_or_else(|| format!("{IN_MEMORY}: gather before bind"))?;
        let r = binding.gather(data, rows, &mut self.batch_buffers());
        self.binding = Some(binding);
        r
    }

    /// The first `rows` rows of model input `i`'s buffer as float32 (`None`
    /// for an int32 input or an index out of range).
    pub fn input_f32(&self, i: usize, rows: usize) -> Option<&[f32]> {
        let l = self.layout.inputs.get(i)?;
        let n = rows.min(self.layout.max_batch) * l.per_example;
        (l.elem == ElemType::F32).then(|| &self.inputs[i].f32s()[..n])
    }

    /// [`Session::input_f32`] for int32 inputs.
    pub fn input_i32(&self, i: usize, rows: usize) -> Option<&[i32]> {
        let l = self.layout.inputs.get(i)?;
        let n = rows.min(self.layout.max_batch) * l.per_example;
        (l.elem == ElemType::I32).then(|| &self.inputs[i].i32s()[..n])
    }

    /// The input buffer of model input `i` (for callers that fill inputs themselves).
    pub fn input_f32_mut(&mut self, i: usize) -> &mut [f32] {
        self.inputs[i].f32s_mut()
    }

    pub fn input_i32_mut(&mut self, i: usize) -> &mut [i32] {
        self.inputs[i].i32s_mut()
    }

    pub fn function_index(&self, name: &str) -> Option<usize> {
        self.functions.iter().position(|f| f.layout.name == name)
    }

    /// Whether this session has started its worker thread. It starts it
    /// only on the first call of a function planned for two threads, so a
    /// model whose functions the cost model gives one thread never has a
    /// second thread to spin, sleep or wake (the steadiness of tiny models).
    pub fn worker_started(&self) -> bool {
        self.worker.is_some()
    }

    /// Makes function `twin` (compiled for one thread, with `f`'s outputs)
    /// what calls of `f` (compiled for two) run when `guard` says so (by
    /// default, while its two threads stall each other: [`StallGuard`]); its
    /// results are the same bits.
    pub fn set_twin(&mut self, f: usize, twin: usize, guard: StallGuard) -> Result<(), String> {
        let n = self.functions.len();
        if f >= n || twin >= n || f == twin {
            return Err(format!("no functions {f} and {twin} to pair"));
        }
        let (a, b) = (&self.functions[f].layout, &self.functions[twin].layout);
        if a.threads != 2 || b.threads != 1 || a.outputs != b.outputs {
            return Err(format!(
                "{} cannot stand in for {}: it must run on one thread with the same outputs",
                b.name, a.name
            ));
        }
        self.functions[f].twin = Some((twin, guard));
        Ok(())
    }

    /// How many calls of function `f` ran on two threads and how many on
    /// its one-thread twin; `None` when `f` has no twin.
    pub fn twin_counts(&self, f: usize) -> Option<(u64, u64)> {
        let (_, guard) = self.functions.get(f)?.twin.as_ref()?;
        Some(guard.counts())
    }

    /// Runs compiled function `f` on the first `batch` rows of the inputs.
    /// Errors: no function `f`, or `batch` not in `1..=max_batch`.
    pub fn call(&mut self, f: usize, batch: usize) -> Result<(), String> {
        if f >= self.functions.len() {
            return Err(format!("there is no function {f}"));
        }
        if self.prologue.as_ref().is_some_and(|(g, _)| *g == f) {
            if let Some((g, mut p)) = self.prologue.take() {
                let done = p.before(self, batch);
                self.prologue = Some((g, p));
                done?;
            }
        }
        if batch == 0 || batch > self.layout.max_batch {
            return Err(format!(
                "a batch of {batch} rows is not in 1..={}, the compiled maximum",
                self.layout.max_batch
            ));
        }
        // A stalling two-thread function runs its twin, with its own scratch
        // and the function's outputs.
        let (code, start) = match &self.functions[f].twin {
            Some((t, guard)) => {
                let code = if guard.next() == Run::Twin { *t } else { f };
                (code, Some(std::time::Instant::now()))
            }
            None => (f, None),
        };
        let threads = self.functions[code].layout.threads.max(1);
        if threads > 1 && self.worker.is_none() {
            self.worker = Some(Worker::new());
        }
        let (scratch, sync, func) = {
            let c = &self.functions[code];
            (c.scratch.as_ptr(), c.sync.as_ptr() as *mut u64, c.f)
        };
        let fs = &mut self.functions[f];
        let mut ctx = StepCtx {
            batch: batch as i64,
            global_step: self.global_step,
            inputs: self.input_ptrs.as_ptr(),
            arenas: self.arena_ptrs.as_ptr(),
            outputs: fs.output_ptrs.as_ptr(),
            scratch,
            thread: 0,
            threads: threads as i64,
            sync,
            first_row: self.first_row,
        };
        let _denormals = FlushDenormals::new();
        match (&self.worker, threads) {
            (Some(w), 2) => {
                let mut ctx1 = StepCtx { thread: 1, ..ctx };
                ctx1.global_step = ctx.global_step;
                // SAFETY: `new`'s contract: the function follows this layout's
                // ABI for two threads; both contexts point at the same memory,
                // which stays valid until both threads return.
                unsafe { w.run(func, ctx1, || func(&mut ctx)) };
            }
            // SAFETY: `new`'s contract: the function follows this layout's ABI,
            // and every pointer in ctx is valid for max_batch rows (a twin's
            // outputs are the function's: `set_twin` checked they match).
            _ => unsafe { func(&mut ctx) },
        }
        if let (Some(start), Some((_, guard))) = (start, &mut fs.twin) {
            guard.record(start.elapsed().as_nanos() as u64);
        }
        self.global_step = ctx.global_step;
        Ok(())
    }

    /// An output of function `f` after a call with `batch` rows.
    pub fn output(&self, f: usize, name: &str, batch: usize) -> Option<&[f32]> {
        self.output_at(f, self.output_index(f, name)?, batch)
    }

    pub fn output_i32(&self, f: usize, name: &str, batch: usize) -> Option<&[i32]> {
        let k = self.output_index(f, name)?;
        let fs = self.functions.get(f)?;
        let n = fs.layout.outputs[k].len(batch.min(self.layout.max_batch));
        Some(&fs.outputs[k].i32s()[..n])
    }

    /// Output `k` of function `f` (int32) after a call with `batch` rows.
    #[inline]
    pub fn output_i32_at(&self, f: usize, k: usize, batch: usize) -> Option<&[i32]> {
        let fs = self.functions.get(f)?;
        let n = fs
            .layout
            .outputs
            .get(k)?
            .len(batch.min(self.layout.max_batch));
        Some(&fs.outputs[k].i32s()[..n])
    }

    /// The position of output `name` of function `f` (look it up once, read
    /// it every step with [`Session::output_at`]).
    pub fn output_index(&self, f: usize, name: &str) -> Option<usize> {
        self.functions
            .get(f)?
            .layout
            .outputs
            .iter()
            .position(|o| o.name == name)
    }

    /// Output `k` of function `f` (float32) after a call with `batch` rows.
    #[inline]
    pub fn output_at(&self, f: usize, k: usize, batch: usize) -> Option<&[f32]> {
        let fs = self.functions.get(f)?;
        let n = fs
            .layout
            .outputs
            .get(k)?
            .len(batch.min(self.layout.max_batch));
        Some(&fs.outputs[k].f32s()[..n])
    }

    pub fn function_layout(&self, f: usize) -> &FunctionLayout {
        &self.functions[f].layout
    }
}

/// Flushes denormal floats to zero (FTZ) and treats denormal inputs as zero
/// (DAZ) while alive, restoring the previous mode on drop — what TensorFlow's
/// `ScopedFlushDenormal` does around its CPU kernels. Without it, tiny values
/// (Adam's second moment of near-zero gradients) take the x86 microcode path,
/// about a hundred times slower.
/// Sets flush-to-zero and denormals-are-zero for the calling thread for good
/// (worker threads that only ever run steps).
pub fn flush_denormals_for_this_thread() {
    std::mem::forget(FlushDenormals::new());
}

struct FlushDenormals {
    #[cfg(target_arch = "x86_64")]
    saved: u32,
}

impl FlushDenormals {
    fn new() -> FlushDenormals {
        #[cfg(target_arch = "x86_64")]
        {
            #[allow(deprecated)]
            // SAFETY: reading and writing MXCSR only changes float rounding modes of this thread.
            unsafe {
                use std::arch::x86_64::{_mm_getcsr, _mm_setcsr};
                let saved = _mm_getcsr();
                _mm_setcsr(saved | 0x8040); // FTZ (bit 15) | DAZ (bit 6)
                FlushDenormals { saved }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        FlushDenormals {}
    }
}

impl Drop for FlushDenormals {
    fn drop(&mut self) {
        #[cfg(target_arch = "x86_64")]
        #[allow(deprecated)]
        // SAFETY: restores the value read in `new`.
        unsafe {
            std::arch::x86_64::_mm_setcsr(self.saved)
        }
    }
}
