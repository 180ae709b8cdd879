//! The ABI between compiled steps and the runtime.
//!
//! Owns: [`StepCtx`], the one argument of every compiled function, the byte
//! offsets of its fields (which the code generator uses), the names of the
//! functions' fixed outputs (`OUTPUT_*`, [`grad_output`]: the compiler names
//! them and the runtime and CLI read them through these, nowhere else), and
//! the [`Layout`] a compiled model carries: where every variable, input and
//! output lives.
//!
//! Invariants: `StepCtx` is `repr(C)` and its field offsets are the `CTX_*`
//! constants; every pointer in it is valid for the sizes the layout gives
//! at `max_batch`; `batch` is in `1..=max_batch`. A function compiled for
//! `threads = 2` must be entered by two threads at once, with `thread` 0 and
//! 1 and the same pointers (SPMD): it splits its kernels between them and
//! synchronizes through `sync`.

use crate::init::Initializer;

/// The argument of a compiled function (`extern "C" fn(*mut StepCtx)`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct StepCtx {
    /// Rows in this batch (the symbolic B).
    pub batch: i64,
    /// TF's global_step before this step; a training step increments it.
    pub global_step: i64,
    /// One pointer per model input, row-major `[batch, ...]` (f32 or i32).
    pub inputs: *const *const u8,
    /// One pointer per arena (f32 elements).
    pub arenas: *const *mut f32,
    /// One pointer per output of the function being called.
    pub outputs: *const *mut f32,
    /// Scratch memory for intermediates, 64-byte aligned (shared by the threads).
    pub scratch: *mut u8,
    /// This thread's index in `0..threads`.
    pub thread: i64,
    /// How many threads run this call of the function together (1 or 2).
    pub threads: i64,
    /// The threads' barrier: thread `t`'s epoch (a u64) at byte
    /// `t * SYNC_STRIDE`, one cache line each, all zero before the first call
    /// (see [`SYNC_STRIDE`]).
    pub sync: *mut u64,
    /// The index in the global batch of this call's first row: 0 in one
    /// process, the replica's first row in a data-parallel job (`Op::FirstRow`;
    /// per-row random draws such as dropout's key on the global row).
    pub first_row: i64,
}

pub const CTX_BATCH: i32 = 0;
pub const CTX_GLOBAL_STEP: i32 = 8;
pub const CTX_INPUTS: i32 = 16;
pub const CTX_ARENAS: i32 = 24;
pub const CTX_OUTPUTS: i32 = 32;
pub const CTX_SCRATCH: i32 = 40;
pub const CTX_THREAD: i32 = 48;
pub const CTX_THREADS: i32 = 56;
pub const CTX_SYNC: i32 = 64;
pub const CTX_FIRST_ROW: i32 = 72;
const _: () = {
    use std::mem::offset_of;
    assert!(offset_of!(StepCtx, batch) == CTX_BATCH as usize);
    assert!(offset_of!(StepCtx, global_step) == CTX_GLOBAL_STEP as usize);
    assert!(offset_of!(StepCtx, inputs) == CTX_INPUTS as usize);
    assert!(offset_of!(StepCtx, arenas) == CTX_ARENAS as usize);
    assert!(offset_of!(StepCtx, outputs) == CTX_OUTPUTS as usize);
    assert!(offset_of!(StepCtx, scratch) == CTX_SCRATCH as usize);
    assert!(offset_of!(StepCtx, thread) == CTX_THREAD as usize);
    assert!(offset_of!(StepCtx, threads) == CTX_THREADS as usize);
    assert!(offset_of!(StepCtx, sync) == CTX_SYNC as usize);
    assert!(offset_of!(StepCtx, first_row) == CTX_FIRST_ROW as usize);
};
/// Bytes between the threads' epoch words at `sync` (a cache line each, so
/// a thread's store never invalidates the line the other thread writes).
/// Only thread `t` writes epoch `t`: a barrier adds one to it, then waits
/// until the other thread's epoch is at least as large. Every thread passes
/// the same barriers of a call, so the epochs are equal between calls; the
/// area is `2 * SYNC_STRIDE` bytes, zeroed once.
pub const SYNC_STRIDE: i32 = 64;

/// The training step that also returns what the run's hooks read (metric
/// sums for summaries, logged tensors): the same updates as `step`, called
/// on the steps a hook asks for it ([`crate::train::RunContext::request_summary_outputs`]).
pub const SUMMARY_STEP: &str = "summary_step";
/// The per-replica function of a data-parallel model: forward and backward
/// on the replica's rows, writing the exchange variables (`VarRole::Exchange`).
pub const REPLICA_GRAD: &str = "replica_grad";
/// The arena of exchange variables summed over the replicas (one allreduce).
pub const EXCHANGE_SUM: &str = "exchange/sum";
/// The arena of exchange variables gathered from the replicas in order.
pub const EXCHANGE_GATHER: &str = "exchange/gather";
/// With a shared exchange (replicas on one node): the arena through which
/// `step` reads replica `replica`'s [`EXCHANGE_SUM`] arena (same length and
/// offsets; the runtime points it at that replica's memory).
pub fn exchange_peer_arena(replica: usize) -> String {
    format!("exchange/peer/{replica}")
}

/// The scalar output every `step` and `eval` function has: the loss.
pub const OUTPUT_LOSS: &str = "loss";
/// Outputs of the summary step named `histogram/<tag>` are written as a
/// histogram under `<tag>` (`summaries { histogram_tensors,
/// gradient_histograms }`).
pub const HISTOGRAM_OUTPUT_PREFIX: &str = "histogram/";
/// Outputs of the summary step named `image/<name>` (a batch of images
/// `[B, H, W, C]`) are written as image summaries (`summaries {
/// image_tensors }`).
pub const IMAGE_OUTPUT_PREFIX: &str = "image/";
/// The step's learning rate (after its schedule), when the step has one.
pub const OUTPUT_LEARNING_RATE: &str = "learning_rate";
/// The gradients' global norm, when the spec asks for the `global_norm` metric.
pub const OUTPUT_GLOBAL_NORM: &str = "global_norm";
/// The prefix of the `grad` function's outputs: `grad/<param>` is the
/// gradient of the loss for the parameter `<param>` ([`grad_output`]).
pub const OUTPUT_GRAD_PREFIX: &str = "grad/";

/// The prefix of the outputs that hold the runtime checks of a function
/// (`tf.debugging`): `assert/<i>` is the value of assertion `i` of
/// [`FunctionLayout::assertions`] ([`assertion_output`]).
pub const OUTPUT_ASSERTION_PREFIX: &str = "assert/";

/// The name of the output holding the value of assertion `i`.
pub fn assertion_output(i: usize) -> String {
    format!("{OUTPUT_ASSERTION_PREFIX}{i}")
}

/// The name of the `grad` function's output holding the gradient of `param`.
pub fn grad_output(param: &str) -> String {
    format!("{OUTPUT_GRAD_PREFIX}{param}")
}

/// A compiled function.
pub type StepFn = unsafe extern "C" fn(*mut StepCtx);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElemType {
    F32,
    I32,
}

/// A flat block of f32 memory holding variables of one kind.
#[derive(Clone, Debug, PartialEq)]
pub struct ArenaLayout {
    pub name: String,
    /// Length in f32 elements.
    pub len: usize,
}

/// Where a variable lives and how it starts.
#[derive(Clone, Debug, PartialEq)]
pub struct VarLayout {
    /// TF's variable name (`W1`, `W1/Adam`, `beta1_power`).
    pub name: String,
    pub shape: Vec<usize>,
    pub arena: usize,
    /// Offset in f32 elements.
    pub offset: usize,
    pub init: Initializer,
    /// Trainable parameter, optimizer slot/variable, or constant.
    pub kind: VarRole,
    /// A partitioned variable's partitions along its first axis, each
    /// partition's rows in order (TF's `save_slice_info`: checkpoints store
    /// the variable as one slice per partition); empty when it is not
    /// partitioned.
    pub partitions: Vec<usize>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VarRole {
    Param {
        trainable: bool,
    },
    Slot {
        param: String,
        slot: String,
    },
    Optimizer,
    /// A moving average of a parameter (TF's `W/ExponentialMovingAverage`).
    Average {
        param: String,
    },
    Constant,
    /// What data-parallel replicas exchange between `replica_grad` and
    /// `step` (a gradient, the loss, a state update in the [`EXCHANGE_SUM`]
    /// arena; an `IndexedSlices`'s ids or rows, `gather`, in
    /// [`EXCHANGE_GATHER`]): scratch between two calls, not model state.
    Exchange {
        gather: bool,
    },
    /// Replica `replica`'s summed exchange value, read by `step` with a
    /// shared exchange (in arena [`exchange_peer_arena`]`(replica)`).
    ExchangePeer {
        replica: u32,
    },
    /// The rows of sharded table `table` this replica's batch looks up,
    /// fetched from their owners before each call ([`ShardedLayout`]).
    Fetched {
        table: String,
    },
}

impl VarRole {
    /// Whether the variable is part of the model's state: saved in
    /// checkpoints, restored, listed (not a constant or an exchange value).
    pub fn is_state(&self) -> bool {
        !matches!(
            self,
            VarRole::Constant
                | VarRole::Exchange { .. }
                | VarRole::ExchangePeer { .. }
                | VarRole::Fetched { .. }
        )
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct InputLayout {
    pub name: String,
    pub elem: ElemType,
    /// Elements per example (the product of the non-batch dimensions).
    pub per_example: usize,
    /// For int32 ids (class labels, embedding ids): every id must be in
    /// `0..num_classes` (the compiled code clamps ids into tables, so an id
    /// out of range would silently read another row). `None`: any id `>= 0`.
    /// A negative id is refused, except the padding id in `padding` inputs.
    pub num_classes: Option<u32>,
    /// A feature column's ids (`FeatureInput::Ids`): the padding id -1
    /// ([`crate::feature_column::PADDING_ID`]) is allowed too; the compiled
    /// step reads zeros for it and updates no row.
    pub padding: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct OutputLayout {
    pub name: String,
    pub elem: ElemType,
    /// Elements per example when `batched`, else the element count.
    pub per_example: usize,
    pub batched: bool,
}

impl OutputLayout {
    pub fn len(&self, batch: usize) -> usize {
        if self.batched {
            self.per_example * batch
        } else {
            self.per_example
        }
    }
}

/// A compiled function's own needs.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionLayout {
    pub name: String,
    pub outputs: Vec<OutputLayout>,
    pub scratch_bytes: usize,
    /// How many threads must run every call together (1 or 2).
    pub threads: usize,
    /// The runtime checks (`tf.debugging` assertions) the function computes,
    /// each in its scalar output [`AssertionLayout::output`].
    pub assertions: Vec<AssertionLayout>,
}

/// One runtime check of a compiled function (`check_numerics`,
/// `assert_positive`, ...): the function computes one f32 scalar per check,
/// 0 when it holds. The runtime reads it after every call; the spec position
/// is plain data (byte offsets into the spec text) for the caller to render.
#[derive(Clone, Debug, PartialEq)]
pub struct AssertionLayout {
    /// The output holding the check's value ([`assertion_output`]).
    pub output: String,
    /// TF's name of the op (`check_numerics`, `assert_less`, ...).
    pub kind: String,
    /// The condition that must hold, in words (`x < y`, `x is finite`).
    pub condition: String,
    /// The user's `message` (empty when none was given).
    pub message: String,
    /// Byte offsets of the call in the spec text.
    pub span: (usize, usize),
    /// How to read a non-zero value: `check_numerics` computes 2 when the
    /// tensor has a NaN and 1 when it has an infinity but no NaN; every other
    /// check counts the elements for which its condition does not hold.
    pub value: AssertionValue,
}

/// What the value of an [`AssertionLayout`] means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AssertionValue {
    /// 0: all finite, 1: an infinity (no NaN), 2: a NaN.
    NonFinite,
    /// The number of elements that fail the condition (exact below 2^24).
    Count,
}

impl AssertionLayout {
    /// What a failed check found, in TF's words where TF has them
    /// (`Tensor had NaN values`).
    pub fn describe(&self, value: f32) -> String {
        match self.value {
            AssertionValue::NonFinite if value >= 2.0 => "Tensor had NaN values".into(),
            AssertionValue::NonFinite => "Tensor had Inf values".into(),
            AssertionValue::Count => {
                let n = if value >= 16_777_216.0 {
                    "more than 16777216".to_string()
                } else {
                    format!("{}", value as u64)
                };
                let s = if value == 1.0 { "" } else { "s" };
                format!(
                    "Condition {} did not hold element-wise ({n} element{s})",
                    self.condition
                )
            }
        }
    }
}

/// Everything the runtime must know to call a compiled model.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    pub arenas: Vec<ArenaLayout>,
    /// Variables and constant tensors.
    pub vars: Vec<VarLayout>,
    pub inputs: Vec<InputLayout>,
    pub max_batch: usize,
    /// The tables sharded across replicas (none for one process).
    pub sharded: Vec<ShardedLayout>,
}

/// A partitioned table whose rows are sharded across the replicas
/// (`compiler::optim::sharded`): what the runtime moves each step. The
/// table's variable holds this replica's partitions (`p % replicas ==
/// rank`, in order, of its [`VarLayout::partitions`]), padded to the
/// largest share, and a spare row last; so do its slots and moving average.
#[derive(Clone, Debug, PartialEq)]
pub struct ShardedLayout {
    /// The parameter's name (TF's).
    pub table: String,
    /// Its logical rows (the declared first dimension).
    pub rows: usize,
    /// The replicas the program was compiled for.
    pub replicas: usize,
    /// The variable the lookups read: one row per id slot of the batch.
    pub fetched: String,
    /// The id inputs of the lookups, rewritten into positions in `fetched`.
    pub ids: Vec<String>,
    /// The `replica_grad` outputs (positions, rows) of its `IndexedSlices`
    /// gradient, and the exchange variables of the same names that receive
    /// the routed gradient (ids local to this replica's rows, then rows).
    pub grad_ids: String,
    pub grad_values: String,
}

impl Layout {
    pub fn var(&self, name: &str) -> Option<&VarLayout> {
        self.vars.iter().find(|v| v.name == name)
    }

    /// The sharded table variable `v` belongs to: the table itself, a
    /// slot of it or its moving average.
    pub fn shard_of(&self, v: &VarLayout) -> Option<&ShardedLayout> {
        let table = match &v.kind {
            VarRole::Param { .. } => &v.name,
            VarRole::Slot { param, .. } | VarRole::Average { param } => param,
            _ => return None,
        };
        self.sharded.iter().find(|s| &s.table == table)
    }
}
