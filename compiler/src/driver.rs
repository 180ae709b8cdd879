//! The whole pipeline, from spec text to callable native functions.
//!
//! Owns: [`compile`] (parse, check, differentiate, build the step, simplify,
//! lay out, plan, generate code) and [`Program`], which keeps the compiled
//! code alive and hands out sessions that cannot outlive it.
//! Invariant: every user error is a diagnostic; a panic in any stage becomes
//! an `internal-error` diagnostic (see [`crate::guard`]).

use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

use specc_grammar::{Code, Diagnostic, SourceFile};
use specc_runtime::abi::{assertion_output, AssertionLayout, FunctionLayout, StepFn};
use specc_runtime::memory::MemoryNeeds;
use specc_runtime::session::Session;
use specc_runtime::twin::StallGuard;

use crate::codegen::{self, Jit};
use crate::layout::{self, VarPlacement};
use crate::model::Model;
use crate::plan::{self, Plan};
use crate::verify::{self, in_pass};
use crate::{guard, passes};

/// Which functions to compile.
#[derive(Clone, Copy, Debug)]
pub struct Functions {
    pub step: bool,
    pub eval: bool,
    pub grad: bool,
    /// The forward pass with a non-finite flag per value (see [`crate::debug`]).
    pub check: bool,
    /// Inference: the spec's `outputs` (planned only when the spec has them).
    pub predict: bool,
}

impl Functions {
    pub const TRAIN: Functions = Functions {
        step: true,
        eval: true,
        grad: false,
        check: false,
        predict: false,
    };
    /// Only `predict`: the model is checked, not differentiated, so the
    /// session holds the parameters and no optimizer state.
    pub const PREDICT: Functions = Functions {
        step: false,
        eval: false,
        grad: false,
        check: false,
        predict: true,
    };
    pub const ALL: Functions = Functions {
        step: true,
        eval: true,
        grad: true,
        check: false,
        predict: true,
    };

    /// Whether the model must be differentiated (a step, gradients, or the
    /// check function's replay of steps).
    fn needs_build(&self) -> bool {
        self.step || self.grad || self.check
    }
}

/// A model ready for code generation: checked, differentiated, simplified, planned.
pub struct Planned {
    pub model: Model,
    pub placement: VarPlacement,
    pub plans: Vec<Plan>,
}

/// How to compile.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Time every kernel (see `specc_runtime::profile`).
    pub profile: bool,
    /// Threads a step may use (1 or 2); by default `SPECC_THREADS` or the cores.
    pub threads: usize,
    /// The step returns nothing: only the parameter updates are computed, so
    /// the loss's forward pass is dead code (the optimizer benchmark, W4,
    /// whose gradient is a constant).
    pub update_only: bool,
    /// The most rows a session runs at once; by default the spec's
    /// `train { batch }` (`specc predict` runs larger batches).
    pub max_batch: Option<u32>,
    /// Trained by this many replicas (data-parallel, over MPI): the step is
    /// split at the gradient exchange (`optim::replicas`); `train { batch }`
    /// is the global batch.
    pub replicas: Option<u32>,
    /// With `replicas`: they share memory (one node), and the step reads and
    /// sums every replica's exchange values itself (no allreduce; the
    /// runtime's `Collective::shared_segments`).
    pub shared_exchange: bool,
    /// Which 3×3 convolutions run as Winograd F(m×m, 3×3)
    /// (`passes::winograd`): by default those the cost model favours
    /// (`SPECC_WINOGRAD=never` turns it off, `always` forces every one).
    pub winograd: passes::winograd::Winograd,
    /// Their tile, when forced (`SPECC_WINOGRAD_TILE=2` or `4`); by default
    /// each convolution's `WinogradTile::for_window`.
    pub winograd_tile: Option<crate::ir::WinogradTile>,
    /// Dense Adam update loops run through the runtime's `specc_adam`
    /// (AVX-512/AVX2 lanes, the same bits; `codegen::adam`); by default
    /// yes, `SPECC_RUNTIME_ADAM=never` keeps Cranelift's loops.
    pub runtime_adam: bool,
    /// Fused Winograd kernels call the runtime's `specc_winograd` (AVX-512
    /// or AVX2 lanes); `false` emits the same transforms in Cranelift
    /// (`codegen::winograd`, the same bits; tests compare the two).
    pub runtime_winograd: bool,
    /// Fold bias/relu loops into the GEMMs before them (`plan::epilogue`):
    /// by default unless `SPECC_GEMM_EPILOGUE=never`.
    pub gemm_epilogue: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            profile: false,
            threads: specc_runtime::threads::threads(),
            update_only: false,
            max_batch: None,
            replicas: None,
            shared_exchange: false,
            winograd: passes::winograd::Winograd::from_env(),
            winograd_tile: passes::winograd::tile_from_env(),
            runtime_adam: crate::codegen::adam::runtime_adam_from_env(),
            runtime_winograd: true,
            gemm_epilogue: plan::epilogue::enabled_from_env().unwrap_or(true),
        }
    }
}

/// Runs every stage up to and including planning.
pub fn plan_model(src: &SourceFile, which: Functions) -> Result<Planned, Vec<Diagnostic>> {
    plan_model_with(src, which, &Options::default())
}

/// Runs every stage up to and including planning, with options.
pub fn plan_model_with(
    src: &SourceFile,
    which: Functions,
    options: &Options,
) -> Result<Planned, Vec<Diagnostic>> {
    guard(|| {
        let mut model = if which.needs_build() {
            crate::build_replicated_with(src, options.replicas, options.shared_exchange)?
        } else {
            crate::check(src)?
        };
        if options.update_only {
            if let Some(step) = model.functions.step.as_mut() {
                step.outputs.clear();
            }
            model.functions.summary_step = None;
        }
        if let Some(b) = options.max_batch {
            model.train.batch = b.max(1);
        }
        if which.check {
            in_pass("debug::add_check_function", || {
                crate::debug::add_check_function(&mut model)
            });
            verify::after("debug::add_check_function", || verify::ir::model(&model))?;
        }
        in_pass("passes::optimize", || passes::optimize(&mut model));
        verify::after("passes::optimize", || verify::ir::optimized(&model))?;
        if options.winograd != passes::winograd::Winograd::Never {
            in_pass("passes::winograd", || {
                passes::winograd::rewrite(&mut model, options.winograd, options.winograd_tile)
            });
            verify::after("passes::winograd", || verify::ir::model(&model))?;
            in_pass("passes::optimize", || passes::optimize(&mut model));
            verify::after("passes::optimize", || verify::ir::optimized(&model))?;
        }
        let placement = in_pass("layout::place", || layout::place(&model));
        verify::after("layout::place", || {
            verify::layout::placement(&model, &placement)
        })?;
        let mut plans = Vec::new();
        let fs = &model.functions;
        let threads = options.threads;
        let ep = options.gemm_epilogue;
        if which.step {
            plans.push(plan::plan_with(
                &model.graph,
                fs.step.as_ref().expect("built"),
                &placement,
                threads,
                ep,
            ));
            if let Some(summary) = fs.summary_step.as_ref() {
                plans.push(plan::plan_with(
                    &model.graph,
                    summary,
                    &placement,
                    threads,
                    ep,
                ));
            }
            if let Some(replica) = fs.replica_grad.as_ref() {
                plans.push(plan::plan_with(
                    &model.graph,
                    replica,
                    &placement,
                    threads,
                    ep,
                ));
            }
        }
        if which.eval {
            plans.push(plan::plan_with(
                &model.graph,
                &fs.eval,
                &placement,
                threads,
                ep,
            ));
        }
        if which.predict {
            if let Some(predict) = fs.predict.as_ref() {
                plans.push(plan::plan_with(
                    &model.graph,
                    predict,
                    &placement,
                    threads,
                    ep,
                ));
            }
        }
        if which.grad {
            plans.push(plan::plan_with(
                &model.graph,
                fs.grad.as_ref().expect("built"),
                &placement,
                threads,
                ep,
            ));
        }
        if which.check {
            if let Some(check) = fs.check.as_ref() {
                plans.push(plan::plan_with(
                    &model.graph,
                    check,
                    &placement,
                    threads,
                    ep,
                ));
            }
        }
        Ok(Planned {
            model,
            placement,
            plans,
        })
    })
}

impl Planned {
    /// The memory a session of this model allocates (what `specc check` reports).
    pub fn memory(&self) -> MemoryNeeds {
        memory(&self.placement, &self.plans, &self.model)
    }
}

/// What the runtime needs to know of one planned function: its outputs, and
/// the model's runtime checks among them (`assert/<i>` is assertion `i`).
fn function_layout(p: &Plan, model: &Model) -> FunctionLayout {
    let assertions = model
        .assertions
        .iter()
        .enumerate()
        .map(|(i, a)| AssertionLayout {
            output: assertion_output(i),
            kind: a.kind.to_string(),
            condition: a.condition.clone(),
            message: a.message.clone(),
            span: (a.span.start as usize, a.span.end as usize),
            value: a.value,
        })
        .filter(|a| p.outputs.iter().any(|o| o.name == a.output))
        .collect();
    FunctionLayout {
        name: p.name.clone(),
        outputs: p.outputs.clone(),
        scratch_bytes: p.scratch_bytes as usize,
        threads: p.threads as usize,
        assertions,
    }
}

/// The functions compiled for `plans`: the plans in order, then their
/// one-thread twins (`Plan::twin`), the order of a session's functions.
fn compiled(plans: &[Plan]) -> impl Iterator<Item = &Plan> {
    plans
        .iter()
        .chain(plans.iter().filter_map(|p| p.twin.as_deref()))
}

fn memory(placement: &VarPlacement, plans: &[Plan], model: &Model) -> MemoryNeeds {
    let functions: Vec<FunctionLayout> =
        compiled(plans).map(|p| function_layout(p, model)).collect();
    MemoryNeeds::of(&placement.layout, &functions)
}

/// Compiled code for a model.
pub struct Program {
    pub model: Model,
    pub placement: VarPlacement,
    pub plans: Vec<Plan>,
    jit: Jit,
}

/// Compiles a spec to native code.
pub fn compile(src: &SourceFile, which: Functions) -> Result<Program, Vec<Diagnostic>> {
    compile_with(src, which, &Options::default())
}

/// Compiles a spec; with `profile`, every kernel is timed (`specc_runtime::profile`).
pub fn compile_with(
    src: &SourceFile,
    which: Functions,
    options: &Options,
) -> Result<Program, Vec<Diagnostic>> {
    let profile = options.profile;
    let mut planned = plan_model_with(src, which, options)?;
    if profile {
        // Profiles name kernels by index: time the plans that are dumped.
        for p in &mut planned.plans {
            p.twin = None;
        }
    }
    let jit = guard(|| {
        let plans: Vec<&Plan> = compiled(&planned.plans).collect();
        codegen::compile(
            &planned.model.graph,
            &plans,
            profile,
            options.runtime_adam,
            options.runtime_winograd,
        )
        .map_err(|e| {
            vec![Diagnostic::new(
                Code::InternalError,
                Default::default(),
                format!("code generation failed: {e}"),
            )]
        })
    })?;
    Ok(Program {
        model: planned.model,
        placement: planned.placement,
        plans: planned.plans,
        jit,
    })
}

impl Program {
    /// Every compiled function with its layout: the plans in order, then
    /// the plans' one-thread twins (see [`Program::twins`]).
    pub fn function_layouts(&self) -> Vec<(FunctionLayout, StepFn)> {
        compiled(&self.plans)
            .map(|p| {
                let f = self.jit.function(&p.name).expect("compiled");
                (function_layout(p, &self.model), f)
            })
            .collect()
    }

    /// (function, its one-thread twin) as indices into
    /// [`Program::function_layouts`], for [`Session::set_twin`].
    pub fn twins(&self) -> Vec<(usize, usize)> {
        let with_twin = self
            .plans
            .iter()
            .enumerate()
            .filter(|(_, p)| p.twin.is_some());
        with_twin
            .zip(self.plans.len()..)
            .map(|((f, _), twin)| (f, twin))
            .collect()
    }

    /// A session over this program's functions, with the twins set.
    ///
    /// # Safety
    /// The caller keeps the program alive while the session calls its code.
    pub unsafe fn new_session(&self) -> Result<Session, String> {
        // SAFETY: the functions follow the layout's ABI (generated from the
        // same plans); the caller's contract keeps the code alive.
        let mut session =
            unsafe { Session::new(self.placement.layout.clone(), self.function_layouts())? };
        for (f, twin) in self.twins() {
            session.set_twin(f, twin, StallGuard::default())?;
        }
        Ok(session)
    }

    /// The memory a session of this program allocates.
    pub fn memory(&self) -> MemoryNeeds {
        memory(&self.placement, &self.plans, &self.model)
    }

    /// A fresh session (variables initialized) over this program's code.
    pub fn session(&self) -> Result<ProgramSession<'_>, String> {
        // SAFETY: the functions follow the layout's ABI (generated from the same
        // plans), and `ProgramSession` borrows `self`, so the code outlives it.
        let session = unsafe { self.new_session()? };
        Ok(ProgramSession {
            session,
            _program: PhantomData,
        })
    }
}

/// A session that borrows the program whose code it calls.
pub struct ProgramSession<'p> {
    session: Session,
    _program: PhantomData<&'p Program>,
}

impl Deref for ProgramSession<'_> {
    type Target = Session;
    fn deref(&self) -> &Session {
        &self.session
    }
}

impl DerefMut for ProgramSession<'_> {
    fn deref_mut(&mut self) -> &mut Session {
        &mut self.session
    }
}
