//! Code generation: planned functions to native code with Cranelift.
//!
//! Owns: building one Cranelift function per plan (`extern "C" fn(*mut
//! StepCtx)`), registering `specc_sgemm` with the JIT, compiling, and the
//! CLIF text of each function (`specc compile --emit clif`).
//!
//! Code map:
//! - [`emit`]: the function spine (buffer pointers, runtime sizes and scalars
//!   computed once), GEMM calls, kernel dispatch, thread barriers, scalar
//!   outputs and updates at the end.
//! - [`loops`]: fused loop nests (size-1 dims dropped, contiguous dims
//!   merged, `f32x4` body with a scalar tail, reductions).
//! - [`argmax`]: the argmax kernel.
//! - [`rows`]: the row kernels of embeddings and sparse updates.
//! - [`ops`]: each elementwise op as CLIF, for both lane types.
//! - [`math`]: exp/log/log1p/tanh/sigmoid/softplus as straight-line
//!   polynomial CLIF.
//! - [`trig`]: floor/ceil/sin/cos for learning-rate schedules.
//! - [`gemm`]: the runtime's SGEMM recipe as CLIF, for the ahead-of-time
//!   object file ([`crate::export::aot::object`]), which builds each
//!   function with the JIT's `build_function` (generic over
//!   `cranelift_module::Module`) and the same `imports`.
//!
//! Invariant: the only call in generated code is to `specc_sgemm` (or, in
//! the JIT, `specc_sgemm_ep`, the same with a bias/relu epilogue, and
//! `specc_sgemm_batched`, a thread's share of a batched product's groups),
//! the runtime's `specc_winograd`, `specc_adam`, and the recurrent time
//! loops `specc_rnn_forward`/`specc_rnn_backward` ([`recurrence`]) (and, with `--profile`,
//! `specc_profile_mark`); checked on the machine code by
//! [`relocation_targets`]. In an object file `specc_sgemm` is the object's
//! own, and epilogues are loops after it.

pub mod adam;
pub mod argmax;
pub mod emit;
pub mod gemm;
pub mod loops;
pub mod math;
pub mod ops;
pub mod recurrence;
pub mod rows;
pub mod trig;
pub mod window;
pub mod winoblocks;
pub mod winograd;

use cranelift_codegen::ir::{types, AbiParam, Function, UserFuncName};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::Context;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, FuncId, Linkage, Module, ModuleReloc};
use specc_runtime::abi::StepFn;

use crate::ir::Graph;
use crate::plan::Plan;

/// Compiled functions and the JIT memory that holds them.
pub struct Jit {
    module: Option<JITModule>,
    pub functions: Vec<(String, StepFn)>,
}

impl Jit {
    pub fn function(&self, name: &str) -> Option<StepFn> {
        self.functions.iter().find(|f| f.0 == name).map(|f| f.1)
    }
}

impl Drop for Jit {
    fn drop(&mut self) {
        if let Some(m) = self.module.take() {
            // SAFETY: the function pointers are dropped with `self`; callers hold
            // `Jit` for as long as they call its functions.
            unsafe { m.free_memory() };
        }
    }
}

/// Cranelift's own IR verifier, as the `enable_verifier` flag: on where
/// specc's verifier runs ([`crate::verify::ENABLED`]: debug builds, so every
/// test), off in release builds, where it cost a third of the compile (W9:
/// 404 of 1157 million instructions). It only checks, so the machine code is
/// the same either way.
pub(crate) fn verifier_flag() -> &'static str {
    if crate::verify::ENABLED {
        "true"
    } else {
        "false"
    }
}

pub(crate) fn jit_builder() -> Result<JITBuilder, String> {
    let mut flags = settings::builder();
    flags.set("opt_level", "speed").map_err(|e| e.to_string())?;
    flags
        .set("use_colocated_libcalls", "false")
        .map_err(|e| e.to_string())?;
    flags.set("is_pic", "false").map_err(|e| e.to_string())?;
    flags
        .set("enable_verifier", verifier_flag())
        .map_err(|e| e.to_string())?;
    let isa_builder = cranelift_native::builder().map_err(|e| e.to_string())?;
    let isa = isa_builder
        .finish(settings::Flags::new(flags))
        .map_err(|e| e.to_string())?;
    let mut b = JITBuilder::with_isa(isa, default_libcall_names());
    b.symbol("specc_sgemm", specc_runtime::gemm::specc_sgemm as *const u8);
    b.symbol(
        "specc_sgemm_ep",
        specc_runtime::gemm::specc_sgemm_ep as *const u8,
    );
    b.symbol(
        "specc_sgemm_batched",
        specc_runtime::gemm::specc_sgemm_batched as *const u8,
    );
    b.symbol(
        "specc_winograd",
        specc_runtime::winograd::specc_winograd as *const u8,
    );
    b.symbol("specc_adam", specc_runtime::adam::specc_adam as *const u8);
    b.symbol(
        "specc_rnn_forward",
        specc_runtime::rnn::specc_rnn_forward as *const u8,
    );
    b.symbol(
        "specc_rnn_backward",
        specc_runtime::rnn::specc_rnn_backward as *const u8,
    );
    b.symbol(
        "specc_profile_mark",
        specc_runtime::profile::specc_profile_mark as *const u8,
    );
    Ok(b)
}

/// Builds the Cranelift IR of a planned function into `func`, for any
/// module (the JIT, or an object file for ahead-of-time export): the same
/// CLIF whichever module receives it.
pub(crate) fn build_function<M: Module>(
    module: &mut M,
    imports: &Imports,
    g: &Graph,
    plan: &Plan,
    func: &mut Function,
) {
    let mut fctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(func, &mut fctx);
    let gemm = module.declare_func_in_func(imports.gemm, b.func);
    let profile = imports
        .profile
        .map(|p| module.declare_func_in_func(p, b.func));
    let winograd = imports
        .winograd
        .map(|p| module.declare_func_in_func(p, b.func));
    // Declared only in a function that calls it (one with a recognised
    // Adam update loop).
    let adam = imports
        .adam
        .filter(|_| {
            plan.kernels.iter().any(|k| match k {
                crate::plan::Kernel::Loop(l) => crate::plan::adam::recognise(g, l).is_some(),
                _ => false,
            })
        })
        .map(|p| module.declare_func_in_func(p, b.func));
    let gemm_ep = imports
        .gemm_ep
        .map(|p| module.declare_func_in_func(p, b.func));
    // Declared only in a function with a batched product.
    let gemm_batched = imports
        .gemm_batched
        .filter(|_| has_batched(&[plan]))
        .map(|p| module.declare_func_in_func(p, b.func));
    // Declared only in a function with a recurrence.
    let rnn = imports
        .rnn
        .filter(|_| has_recurrence(&[plan]))
        .map(|fs| fs.map(|f| module.declare_func_in_func(f, b.func)));
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    b.seal_block(entry);
    let ctx = b.block_params(entry)[0];
    {
        let mut e = emit::Emitter::new(&mut b, g, plan, ctx, gemm, profile);
        e.winograd = winograd;
        e.adam = adam;
        e.gemm_ep = gemm_ep;
        e.gemm_batched = gemm_batched;
        e.rnn = rnn;
        e.emit_plan();
    }
    use cranelift_codegen::ir::InstBuilder;
    b.ins().return_(&[]);
    b.finalize(module.isa().frontend_config());
}

/// The signature of every planned function: `extern "C" fn(*mut StepCtx)`.
pub(crate) fn signature<M: Module>(module: &M) -> cranelift_codegen::ir::Signature {
    let mut sig = module.make_signature();
    sig.params.push(AbiParam::new(types::I64));
    sig
}

/// Functions generated code may call.
pub(crate) struct Imports {
    pub gemm: FuncId,
    pub profile: Option<FuncId>,
    /// The runtime's `specc_winograd` transforms (the JIT only; an object
    /// file has the generated ones).
    pub winograd: Option<FuncId>,
    /// The runtime's `specc_adam` update (the JIT only, when allowed).
    pub adam: Option<FuncId>,
    /// The runtime's `specc_sgemm_ep` (the JIT only; an object file runs
    /// GEMM epilogues as a loop after its own `specc_sgemm`).
    pub gemm_ep: Option<FuncId>,
    /// The runtime's `specc_sgemm_batched` (the JIT only; an object file
    /// runs a batched product as a loop of its own `specc_sgemm` calls).
    pub gemm_batched: Option<FuncId>,
    /// The runtime's `specc_rnn_forward` and `specc_rnn_backward` (the JIT
    /// only: an object file has no recurrent layers).
    pub rnn: Option<[FuncId; 2]>,
}

/// Whether any of the plans runs a recurrence (then the JIT imports the
/// runtime's time loops).
pub(crate) fn has_recurrence(plans: &[&Plan]) -> bool {
    plans.iter().any(|p| {
        p.kernels
            .iter()
            .any(|k| matches!(k, crate::plan::Kernel::Recurrence(_)))
    })
}

/// Whether any of the plans has a GEMM with an epilogue (then the JIT
/// imports `specc_sgemm_ep`; otherwise the module does not declare it).
fn has_epilogue(plans: &[&Plan]) -> bool {
    plans.iter().any(|p| {
        p.kernels.iter().any(|k| {
            matches!(
                k,
                crate::plan::Kernel::Gemm {
                    epilogue: Some(_),
                    ..
                }
            )
        })
    })
}

/// Whether any of the plans has a batched GEMM (`Kernel::Gemm` with
/// groups: then the JIT imports `specc_sgemm_batched`).
fn has_batched(plans: &[&Plan]) -> bool {
    plans.iter().any(|p| {
        p.kernels.iter().any(|k| {
            matches!(
                k,
                crate::plan::Kernel::Gemm {
                    groups: Some(_),
                    ..
                }
            )
        })
    })
}

/// Which of the runtime's kernels the JIT imports (an object file: none).
#[derive(Clone, Copy, Default)]
pub(crate) struct RuntimeKernels {
    /// `specc_adam`, when allowed.
    pub adam: bool,
    /// `specc_winograd`.
    pub winograd: bool,
    /// `specc_sgemm_ep`: some GEMM has an epilogue.
    pub epilogues: bool,
    /// `specc_sgemm_batched`: some GEMM is batched.
    pub batched: bool,
    /// `specc_rnn_forward` and `specc_rnn_backward`: some kernel is a recurrence.
    pub recurrent: bool,
}

impl RuntimeKernels {
    /// What `plans` call, with the runtime's Adam when `adam` allows it and
    /// its Winograd transforms when `winograd` does.
    pub(crate) fn for_plans(plans: &[&Plan], adam: bool, winograd: bool) -> RuntimeKernels {
        RuntimeKernels {
            adam,
            winograd,
            epilogues: has_epilogue(plans),
            batched: has_batched(plans),
            recurrent: has_recurrence(plans),
        }
    }
}

/// Declares the functions generated code calls: `specc_sgemm` with
/// `gemm_linkage` (`Import` for the JIT, which registers the runtime's; the
/// object file defines its own, `Local`), and, with `profile`, the profiler's mark.
/// The JIT also imports the runtime kernels `runtime` names.
pub(crate) fn imports<M: Module>(
    module: &mut M,
    profile: bool,
    gemm_linkage: Linkage,
    runtime: RuntimeKernels,
) -> Result<Imports, String> {
    let RuntimeKernels {
        adam: runtime_adam,
        winograd: runtime_winograd,
        epilogues,
        batched,
        recurrent,
    } = runtime;
    let cc = module.isa().default_call_conv();
    let gemm = module
        .declare_function("specc_sgemm", gemm_linkage, &emit::gemm_signature(cc))
        .map_err(|e| e.to_string())?;
    let profile = if profile {
        let mut sig = module.make_signature();
        sig.params.push(AbiParam::new(types::I32));
        Some(
            module
                .declare_function("specc_profile_mark", Linkage::Import, &sig)
                .map_err(|e| e.to_string())?,
        )
    } else {
        None
    };
    let winograd = if gemm_linkage == Linkage::Import && runtime_winograd {
        let mut sig = module.make_signature();
        for t in [types::I64; 9] {
            sig.params.push(AbiParam::new(t));
        }
        for t in [emit::PTR, emit::PTR, types::I64, types::I64, types::I64] {
            sig.params.push(AbiParam::new(t));
        }
        Some(
            module
                .declare_function("specc_winograd", Linkage::Import, &sig)
                .map_err(|e| e.to_string())?,
        )
    } else {
        None
    };
    let adam = if gemm_linkage == Linkage::Import && runtime_adam {
        Some(
            module
                .declare_function("specc_adam", Linkage::Import, &adam::signature(cc))
                .map_err(|e| e.to_string())?,
        )
    } else {
        None
    };
    let gemm_ep = if gemm_linkage == Linkage::Import && epilogues {
        Some(
            module
                .declare_function(
                    "specc_sgemm_ep",
                    Linkage::Import,
                    &emit::gemm_ep_signature(cc),
                )
                .map_err(|e| e.to_string())?,
        )
    } else {
        None
    };
    let gemm_batched = if gemm_linkage == Linkage::Import && batched {
        Some(
            module
                .declare_function(
                    "specc_sgemm_batched",
                    Linkage::Import,
                    &emit::gemm_batched_signature(cc),
                )
                .map_err(|e| e.to_string())?,
        )
    } else {
        None
    };
    let rnn = if gemm_linkage == Linkage::Import && recurrent {
        let sig = recurrence::signature(cc);
        let mut declare = |name: &str| {
            module
                .declare_function(name, Linkage::Import, &sig)
                .map_err(|e| e.to_string())
        };
        Some([
            declare("specc_rnn_forward")?,
            declare("specc_rnn_backward")?,
        ])
    } else {
        None
    };
    Ok(Imports {
        gemm,
        profile,
        winograd,
        adam,
        gemm_ep,
        gemm_batched,
        rnn,
    })
}

/// Compiles plans into native functions; with `profile`, every kernel is timed
/// (see `specc_runtime::profile`); with `runtime_adam`, dense Adam update
/// loops call `specc_adam` (`codegen::adam`); with `runtime_winograd`, the
/// fused Winograd kernels call `specc_winograd` (else the same transforms
/// in Cranelift, `codegen::winograd`).
pub fn compile(
    g: &Graph,
    plans: &[&Plan],
    profile: bool,
    runtime_adam: bool,
    runtime_winograd: bool,
) -> Result<Jit, String> {
    let mut module = JITModule::new(jit_builder()?);
    let imports = imports(
        &mut module,
        profile,
        Linkage::Import,
        RuntimeKernels::for_plans(plans, runtime_adam, runtime_winograd),
    )?;
    let sig = signature(&module);
    let mut ids = Vec::new();
    let mut funcs = Vec::new();
    for (i, plan) in plans.iter().enumerate() {
        let id = module
            .declare_function(&format!("specc_{}", plan.name), Linkage::Local, &sig)
            .map_err(|e| e.to_string())?;
        let mut func = Function::with_name_signature(UserFuncName::user(0, i as u32), sig.clone());
        build_function(&mut module, &imports, g, plan, &mut func);
        funcs.push((id, func));
        ids.push((plan.name.clone(), id));
    }
    let machine = compile_all(module.isa(), funcs);
    for ((name, id), code) in ids.iter().zip(machine) {
        let code = code.map_err(|e| format!("cranelift rejected {name}: {e}"))?;
        module
            .define_function_bytes(*id, code.alignment, &code.bytes, &code.relocs)
            .map_err(|e| format!("cranelift rejected {name}: {e:?}"))?;
    }
    module.finalize_definitions().map_err(|e| e.to_string())?;
    let functions = ids
        .into_iter()
        .map(|(name, id)| {
            let p = module.get_finalized_function(id);
            // SAFETY: the function was built with the `StepFn` signature.
            (name, unsafe { std::mem::transmute::<*const u8, StepFn>(p) })
        })
        .collect();
    Ok(Jit {
        module: Some(module),
        functions,
    })
}

/// One function's machine code, ready for `Module::define_function_bytes`.
struct MachineCode {
    bytes: Vec<u8>,
    alignment: u64,
    relocs: Vec<ModuleReloc>,
}

/// Compiles every function to machine code, the largest on this thread and
/// the others on a second one when steps may use two threads
/// (`specc_runtime::threads::threads`: two cores, `SPECC_THREADS` not 1;
/// W9's step and eval: the compile's critical path is then the step's). Each
/// function is compiled by `Context::compile` exactly as
/// `Module::define_function` would, so the code is the same whichever
/// thread compiles it; the results come back in the order of `funcs`.
fn compile_all(
    isa: &dyn cranelift_codegen::isa::TargetIsa,
    funcs: Vec<(FuncId, Function)>,
) -> Vec<Result<MachineCode, String>> {
    let one = |(id, func): (FuncId, Function)| -> Result<MachineCode, String> {
        let mut ctx = Context::for_function(func);
        ctx.compile(isa, &mut Default::default())
            .map_err(|e| format!("{:?}", e.inner))?;
        let code = ctx.compiled_code().ok_or("no machine code")?;
        let alignment = u64::from(code.buffer.alignment);
        let bytes = code.code_buffer().to_vec();
        let relocs = code
            .buffer
            .relocs()
            .iter()
            .map(|r| ModuleReloc::from_mach_reloc(r, &ctx.func, id))
            .collect();
        Ok(MachineCode {
            bytes,
            alignment,
            relocs,
        })
    };
    if funcs.len() < 2 || specc_runtime::threads::threads() < 2 {
        return funcs.into_iter().map(one).collect();
    }
    // The largest function here, the rest (in order) on the other thread.
    let size = |f: &Function| f.dfg.num_insts();
    let largest = (0..funcs.len())
        .max_by_key(|&i| size(&funcs[i].1))
        .unwrap_or(0);
    let mut rest = funcs;
    let big = rest.remove(largest);
    let (big, mut others) = std::thread::scope(|s| {
        let worker = s.spawn(|| rest.into_iter().map(one).collect::<Vec<_>>());
        let big = one(big);
        let others = worker
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e));
        (big, others)
    });
    others.insert(largest, big);
    others
}

/// The module and runtime imports the text dumps build one plan's function in.
fn text_module(plan: &Plan) -> Result<(JITModule, Imports), String> {
    let mut module = JITModule::new(jit_builder()?);
    let imports = imports(
        &mut module,
        false,
        Linkage::Import,
        RuntimeKernels::for_plans(&[plan], adam::runtime_adam_from_env(), true),
    )?;
    Ok((module, imports))
}

/// The CLIF text of a planned function, before Cranelift's own optimizations.
pub fn clif_text(g: &Graph, plan: &Plan) -> Result<String, String> {
    let (mut module, imports) = text_module(plan)?;
    let mut func = Function::with_name_signature(UserFuncName::user(0, 0), signature(&module));
    build_function(&mut module, &imports, g, plan, &mut func);
    // Name the imports: CLIF shows a called function as `u0:<id>`.
    let mut header = format!("; specc_{}\n", plan.name);
    for (id, decl) in module.declarations().get_functions() {
        if let Some(name) = &decl.name {
            header += &format!("; u0:{} = {name}\n", id.as_u32());
        }
    }
    Ok(format!("{header}{}", func.display()))
}

/// The machine code of a planned function as Cranelift's final listing
/// (`specc compile --emit asm`): the instructions after optimization and
/// register allocation, for performance work. Depends on the host CPU.
pub fn asm_text(g: &Graph, plan: &Plan) -> Result<String, String> {
    let (mut module, imports) = text_module(plan)?;
    let mut ctx = Context::new();
    ctx.func = Function::with_name_signature(UserFuncName::user(0, 0), signature(&module));
    build_function(&mut module, &imports, g, plan, &mut ctx.func);
    ctx.set_disasm(true);
    let code = ctx
        .compile(module.isa(), &mut Default::default())
        .map_err(|e| format!("{:?}", e.inner))?;
    let listing = code.vcode.clone().unwrap_or_default();
    Ok(format!(
        "; specc_{} ({} bytes)\n{listing}",
        plan.name,
        code.code_buffer().len()
    ))
}

/// Every symbol the machine code of a planned function refers to: the target
/// of each relocation Cranelift emitted, compiled with the JIT's flags for
/// this host. Imports appear by name (`specc_sgemm`), Cranelift's own library
/// calls (added while lowering, e.g. `fmaf` without FMA, `ceilf` without
/// SSE4.1, `memcpy`) as `libcall:<name>`, anything else by its display form.
/// For tests of the invariant that generated code calls only `specc_sgemm`.
pub fn relocation_targets(g: &Graph, plan: &Plan) -> Result<Vec<String>, String> {
    use cranelift_codegen::ir::ExternalName;
    use cranelift_codegen::FinalizedRelocTarget;
    let mut module = JITModule::new(jit_builder()?);
    let imports = imports(
        &mut module,
        false,
        Linkage::Import,
        RuntimeKernels::for_plans(&[plan], adam::runtime_adam_from_env(), true),
    )?;
    let mut ctx = Context::new();
    ctx.func = Function::with_name_signature(UserFuncName::user(0, 0), signature(&module));
    build_function(&mut module, &imports, g, plan, &mut ctx.func);
    let targets: Vec<FinalizedRelocTarget> = ctx
        .compile(module.isa(), &mut Default::default())
        .map_err(|e| format!("{:?}", e.inner))?
        .buffer
        .relocs()
        .iter()
        .map(|r| r.target.clone())
        .collect();
    let names = ctx.func.params.user_named_funcs();
    Ok(targets
        .iter()
        .map(|t| match t {
            FinalizedRelocTarget::ExternalName(ExternalName::User(r)) => {
                let id = cranelift_module::FuncId::from_u32(names[*r].index);
                let decl = module.declarations().get_function_decl(id);
                decl.name.clone().unwrap_or_else(|| format!("{id}"))
            }
            FinalizedRelocTarget::ExternalName(ExternalName::LibCall(l)) => format!("libcall:{l}"),
            other => other.display(Some(&ctx.func.params)),
        })
        .collect())
}
