//! Ahead-of-time code: one planned function, its weights and a C entry point
//! in a relocatable object file (`cranelift-object`).
//!
//! Owns: [`emit`], which writes an ELF (or the host's) object holding
//! - the planned function, built by the same `build_function` as
//!   the JIT's (local symbol);
//! - `specc_sgemm` as Cranelift IR ([`crate::codegen::gemm`], local), so the object
//!   needs nothing of specc's runtime;
//! - every arena the function reads, as read-only data (the trained weights);
//! - static zeroed memory (`.bss`) for the scratch, one buffer per input and
//!   per output, sized for the plan's `max_batch`;
//! - the exported wrapper `int SYMBOL(const float *in, float *out, int rows)`,
//!   which builds the `StepCtx` on its stack and, a chunk of at most
//!   `max_batch` rows at a time, copies the rows' inputs out of `in` (floats
//!   to i32 for id inputs, checked), calls the function, and copies its
//!   outputs into `out` (i32 outputs as floats);
//! - with a [`RawPlan`], the raw-features wrapper `int SYMBOL_raw(const char
//!   *const *cells, int columns, float *out, int rows)`: the same chunks, each
//!   row's inputs computed from its cells by the plan's transforms
//!   (`raw::emit`), with `SYMBOL_fingerprint64` (local) and the
//!   vocabularies' tables (read-only data).
//!
//! Invariants: the code is position independent and refers only to symbols
//! of the object itself, plus the C library's math routines Cranelift may
//! call for instructions the host lacks (`fmaf`, `ceilf`, ...) and, for the
//! raw wrapper, `strlen`, `strtod`, `memcmp`, `log`, `log1p`, `exp`; the
//! wrappers return 0, -1 for `rows < 0`, -2 for an id outside its input's
//! range, and (raw) -3 for `columns` other than the plan's keys, -4 for a
//! bad cell (nothing of that chunk is computed, earlier chunks' outputs are
//! written); they keep state in static memory, so they are not reentrant;
//! they do not touch the floating-point environment.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    types, AbiParam, Function, InstBuilder, StackSlotData, StackSlotKind, UserFuncName, Value,
};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::Context;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{default_libcall_names, DataDescription, DataId, Linkage, Module};
use cranelift_object::{ObjectBuilder, ObjectModule};
use specc_runtime::abi::{self, ElemType};

use super::raw::emit::{emit_row, vocabulary_table, Externs, RowRefs};
use super::raw::hash::define_fingerprint64;
use super::raw::RawPlan;
use crate::codegen;
use crate::codegen::emit::{trusted, PTR};
use crate::codegen::gemm::{counter, step_loop};
use crate::ir::Graph;
use crate::plan::Plan;

/// One model input as a row of the caller's `in` holds it.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectInput {
    /// The model's input index (`ctx.inputs[index]`).
    pub index: u32,
    pub elem: ElemType,
    /// Elements per row.
    pub per_example: usize,
    /// Its first column in a row of `in`.
    pub offset: usize,
    /// For i32 inputs: the ids allowed, `lo..hi`.
    pub range: Option<(i64, i64)>,
}

/// One output of the planned function as a row of the caller's `out` holds it.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectOutput {
    /// The plan's output index (`ctx.outputs[index]`).
    pub index: u32,
    pub elem: ElemType,
    pub per_example: usize,
    pub offset: usize,
}

/// What goes into the object.
pub struct ObjectSpec<'a> {
    pub graph: &'a Graph,
    /// A single-threaded plan whose outputs are all batched.
    pub plan: &'a Plan,
    /// The contents of every arena the plan reads (`None`: not read; its
    /// table entry is a null pointer).
    pub arenas: Vec<Option<Vec<f32>>>,
    /// The number of model inputs (the length of `ctx.inputs`).
    pub model_inputs: usize,
    /// The inputs the plan reads, in row order, and a row's width in floats.
    pub inputs: Vec<ObjectInput>,
    pub in_width: usize,
    /// Every output of the plan, in row order, and a row's width in floats.
    pub outputs: Vec<ObjectOutput>,
    pub out_width: usize,
    /// The exported function's name; local symbols are named after it.
    pub symbol: String,
    /// The raw-features entry point `SYMBOL_raw`, when the inputs allow it.
    pub raw: Option<RawPlan>,
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The ISA of the objects: the host's, with the JIT's flags, but position
/// independent (objects are linked into PIE executables and shared libraries).
fn object_builder(name: &str) -> Result<ObjectBuilder, String> {
    let mut flags = settings::builder();
    flags.set("opt_level", "speed").map_err(err)?;
    flags.set("use_colocated_libcalls", "false").map_err(err)?;
    flags.set("is_pic", "true").map_err(err)?;
    flags
        .set("enable_verifier", crate::codegen::verifier_flag())
        .map_err(err)?;
    let isa = cranelift_native::builder()
        .map_err(err)?
        .finish(settings::Flags::new(flags))
        .map_err(err)?;
    ObjectBuilder::new(isa, name, default_libcall_names()).map_err(err)
}

/// Writes the object file's bytes.
pub fn emit(spec: &ObjectSpec) -> Result<Vec<u8>, String> {
    let plan = spec.plan;
    if plan.threads != 1 {
        return Err(format!(
            "{}: an object's function must be planned for one thread",
            plan.name
        ));
    }
    if !plan.scalar_updates.is_empty() || plan.increments_global_step {
        return Err(format!(
            "{}: an object's function must not update variables",
            plan.name
        ));
    }
    let mut module = ObjectModule::new(object_builder(&spec.symbol)?);
    let sym = &spec.symbol;
    let max_batch = plan.max_batch as usize;

    // Data: weights (read-only), scratch and the row buffers (zeroed, static).
    let data = |module: &mut ObjectModule,
                name: String,
                bytes: Option<Vec<u8>>,
                size: usize|
     -> Result<DataId, String> {
        let id = module
            .declare_data(&name, Linkage::Local, bytes.is_none(), false)
            .map_err(err)?;
        let mut d = DataDescription::new();
        match bytes {
            Some(b) => d.define(b.into_boxed_slice()),
            None => d.define_zeroinit(size.max(64)),
        }
        d.set_align(64);
        module.define_data(id, &d).map_err(err)?;
        Ok(id)
    };
    let mut arenas = Vec::new();
    for (i, a) in spec.arenas.iter().enumerate() {
        arenas.push(match a {
            Some(values) => {
                let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
                let len = bytes.len();
                Some(data(
                    &mut module,
                    format!("{sym}_arena{i}"),
                    Some(bytes),
                    len,
                )?)
            }
            None => None,
        });
    }
    let scratch = data(
        &mut module,
        format!("{sym}_scratch"),
        None,
        plan.scratch_bytes as usize,
    )?;
    let mut in_bufs = Vec::new();
    for inp in &spec.inputs {
        in_bufs.push(data(
            &mut module,
            format!("{sym}_in{}", inp.index),
            None,
            max_batch * inp.per_example * 4,
        )?);
    }
    let mut out_bufs = Vec::new();
    for out in &spec.outputs {
        out_bufs.push(data(
            &mut module,
            format!("{sym}_out{}", out.index),
            None,
            max_batch * out.per_example * 4,
        )?);
    }

    // The planned function and the GEMM it calls, both local.
    let imports = codegen::imports(
        &mut module,
        false,
        Linkage::Local,
        codegen::RuntimeKernels::default(),
    )?;
    let sig = codegen::signature(&module);
    let fn_id = module
        .declare_function(&format!("{sym}_{}", plan.name), Linkage::Local, &sig)
        .map_err(err)?;
    let mut ctx = Context::new();
    ctx.func.signature = sig;
    ctx.func.name = UserFuncName::user(0, fn_id.as_u32());
    codegen::build_function(&mut module, &imports, spec.graph, plan, &mut ctx.func);
    module
        .define_function(fn_id, &mut ctx)
        .map_err(|e| format!("cranelift rejected {}: {e:?}", plan.name))?;
    module.clear_context(&mut ctx);

    let cc = module.isa().default_call_conv();
    let frontend = module.isa().frontend_config();
    ctx.func.signature = codegen::emit::gemm_signature(cc);
    ctx.func.name = UserFuncName::user(0, imports.gemm.as_u32());
    {
        let mut fctx = FunctionBuilderContext::new();
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        b.seal_block(entry);
        let params = b.block_params(entry).to_vec();
        codegen::gemm::build(&mut b, &params);
        b.finalize(frontend);
    }
    module
        .define_function(imports.gemm, &mut ctx)
        .map_err(|e| format!("cranelift rejected the GEMM: {e:?}"))?;
    module.clear_context(&mut ctx);

    // The raw entry point's hashing, C library functions and vocabularies.
    let raw = match &spec.raw {
        Some(plan) => {
            let fp64 =
                define_fingerprint64(&mut module, &format!("{sym}_fingerprint64"), Linkage::Local)?;
            let externs = Externs::declare(&mut module)?;
            let mut tables = Vec::new();
            for (i, v) in plan.vocabularies.iter().enumerate() {
                let (entries, blob, mask) = vocabulary_table(v);
                let len = entries.len();
                let e = data(&mut module, format!("{sym}_vocab{i}"), Some(entries), len)?;
                let blob = if blob.is_empty() { vec![0] } else { blob };
                let len = blob.len();
                let s = data(
                    &mut module,
                    format!("{sym}_vocab{i}_bytes"),
                    Some(blob),
                    len,
                )?;
                tables.push((e, s, mask));
            }
            Some((plan, fp64, externs, tables))
        }
        None => None,
    };

    // The exported wrappers: `in` floats, then (with a raw plan) cells.
    let entries: Vec<bool> = if raw.is_some() {
        vec![false, true]
    } else {
        vec![false]
    };
    for is_raw in entries {
        let mut wsig = module.make_signature();
        wsig.params.push(AbiParam::new(PTR));
        if is_raw {
            wsig.params.push(AbiParam::new(types::I32));
        }
        wsig.params.push(AbiParam::new(PTR));
        wsig.params.push(AbiParam::new(types::I32));
        wsig.returns.push(AbiParam::new(types::I32));
        let name = if is_raw {
            format!("{sym}_raw")
        } else {
            sym.to_string()
        };
        let wrapper = module
            .declare_function(&name, Linkage::Export, &wsig)
            .map_err(err)?;
        ctx.func = Function::with_name_signature(UserFuncName::user(0, wrapper.as_u32()), wsig);
        {
            let mut fctx = FunctionBuilderContext::new();
            let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
            let refs = Refs {
                callee: module.declare_func_in_func(fn_id, b.func),
                arenas: arenas
                    .iter()
                    .map(|a| a.map(|id| module.declare_data_in_func(id, b.func)))
                    .collect(),
                scratch: module.declare_data_in_func(scratch, b.func),
                in_bufs: in_bufs
                    .iter()
                    .map(|&id| module.declare_data_in_func(id, b.func))
                    .collect(),
                out_bufs: out_bufs
                    .iter()
                    .map(|&id| module.declare_data_in_func(id, b.func))
                    .collect(),
            };
            let source = match (&raw, is_raw) {
                (Some((plan, fp64, ex, tables)), true) => {
                    let mut f = |id| module.declare_func_in_func(id, b.func);
                    let row = RowRefs {
                        fp64: f(*fp64),
                        strlen: f(ex.strlen),
                        strtod: f(ex.strtod),
                        memcmp: f(ex.memcmp),
                        log: f(ex.log),
                        log1p: f(ex.log1p),
                        exp: f(ex.exp),
                        tables: tables
                            .iter()
                            .map(|&(e, s, mask)| {
                                (
                                    module.declare_data_in_func(e, b.func),
                                    module.declare_data_in_func(s, b.func),
                                    mask,
                                )
                            })
                            .collect(),
                    };
                    Source::Raw(plan, row)
                }
                _ => Source::Floats,
            };
            build_wrapper(&mut b, spec, &refs, max_batch as i64, &source);
            b.finalize(frontend);
        }
        module
            .define_function(wrapper, &mut ctx)
            .map_err(|e| format!("cranelift rejected {name}: {e:?}"))?;
        module.clear_context(&mut ctx);
    }
    module.finish().emit().map_err(err)
}

/// What the wrapper refers to.
struct Refs {
    callee: cranelift_codegen::ir::FuncRef,
    arenas: Vec<Option<cranelift_codegen::ir::GlobalValue>>,
    scratch: cranelift_codegen::ir::GlobalValue,
    in_bufs: Vec<cranelift_codegen::ir::GlobalValue>,
    out_bufs: Vec<cranelift_codegen::ir::GlobalValue>,
}

/// A stack table of `len` pointers; returns its address.
fn table(b: &mut FunctionBuilder, entries: &[Option<Value>]) -> Value {
    let slot = b.create_sized_stack_slot(StackSlotData::new(
        StackSlotKind::ExplicitSlot,
        (entries.len().max(1) * 8) as u32,
        3,
    ));
    for (i, e) in entries.iter().enumerate() {
        let v = match e {
            Some(v) => *v,
            None => b.ins().iconst(PTR, 0),
        };
        b.ins().stack_store(PTR, v, slot, (i * 8) as i32);
    }
    b.ins().stack_addr(PTR, slot, 0)
}

/// Where the wrapper's rows come from.
enum Source<'a> {
    /// `SYMBOL(const float *in, float *out, int rows)`: model inputs.
    Floats,
    /// `SYMBOL_raw(const char *const *cells, int columns, float *out, int
    /// rows)`: raw cells through the plan's transforms.
    Raw(&'a RawPlan, RowRefs),
}

fn build_wrapper(
    b: &mut FunctionBuilder,
    spec: &ObjectSpec,
    refs: &Refs,
    max_batch: i64,
    source: &Source,
) {
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    b.seal_block(entry);
    let p = b.block_params(entry).to_vec();
    let (input, output, rows32) = match source {
        Source::Floats => (p[0], p[1], p[2]),
        Source::Raw(..) => (p[0], p[2], p[3]),
    };
    // The error returns, filled at the end.
    let negative_rows = b.create_block();
    let bad_id = b.create_block();
    let bad_columns = b.create_block();
    let bad_cell = b.create_block();
    let rows = b.ins().sextend(types::I64, rows32);
    let neg = b.ins().icmp_imm_s(IntCC::SignedLessThan, rows, 0);
    let start = b.create_block();
    b.ins().brif(neg, negative_rows, &[], start, &[]);
    b.switch_to_block(start);
    b.seal_block(start);
    if let Source::Raw(plan, _) = source {
        let ok = b
            .ins()
            .icmp_imm_s(IntCC::Equal, p[1], plan.keys.len() as i64);
        let go = b.create_block();
        b.ins().brif(ok, go, &[], bad_columns, &[]);
        b.switch_to_block(go);
        b.seal_block(go);
    }

    // The context: pointer tables and the StepCtx itself on the stack.
    let mut inputs: Vec<Option<Value>> = vec![None; spec.model_inputs];
    let mut in_ptrs = Vec::new();
    for (inp, gv) in spec.inputs.iter().zip(&refs.in_bufs) {
        let v = b.ins().symbol_value(PTR, *gv);
        inputs[inp.index as usize] = Some(v);
        in_ptrs.push(v);
    }
    let inputs_table = table(b, &inputs);
    let arena_ptrs: Vec<Option<Value>> = refs
        .arenas
        .iter()
        .map(|a| a.map(|gv| b.ins().symbol_value(PTR, gv)))
        .collect();
    let arenas_table = table(b, &arena_ptrs);
    let mut outputs: Vec<Option<Value>> = vec![None; spec.plan.outputs.len()];
    let mut out_ptrs = Vec::new();
    for (out, gv) in spec.outputs.iter().zip(&refs.out_bufs) {
        let v = b.ins().symbol_value(PTR, *gv);
        outputs[out.index as usize] = Some(v);
        out_ptrs.push(v);
    }
    let outputs_table = table(b, &outputs);
    let scratch = b.ins().symbol_value(PTR, refs.scratch);
    let ctx_slot = b.create_sized_stack_slot(StackSlotData::new(
        StackSlotKind::ExplicitSlot,
        std::mem::size_of::<abi::StepCtx>() as u32,
        3,
    ));
    let zero = b.ins().iconst(types::I64, 0);
    let one = b.ins().iconst(types::I64, 1);
    for (field, v) in [
        (abi::CTX_BATCH, zero),
        (abi::CTX_GLOBAL_STEP, zero),
        (abi::CTX_INPUTS, inputs_table),
        (abi::CTX_ARENAS, arenas_table),
        (abi::CTX_OUTPUTS, outputs_table),
        (abi::CTX_SCRATCH, scratch),
        (abi::CTX_THREAD, zero),
        (abi::CTX_THREADS, one),
        (abi::CTX_SYNC, zero),
        (abi::CTX_FIRST_ROW, zero),
    ] {
        b.ins().stack_store(PTR, v, ctx_slot, field);
    }
    let ctx = b.ins().stack_addr(PTR, ctx_slot, 0);

    // Chunks of at most max_batch rows.
    let r0v = counter(b, zero);
    let chunk_body = b.create_block();
    let chunk_head = b.create_block();
    let done = b.create_block();
    b.ins().jump(chunk_head, &[]);
    b.switch_to_block(chunk_head);
    let r0 = b.use_var(r0v);
    let more = b.ins().icmp(IntCC::SignedLessThan, r0, rows);
    b.ins().brif(more, chunk_body, &[], done, &[]);
    b.switch_to_block(chunk_body);
    b.seal_block(chunk_body);
    let left = b.ins().isub(rows, r0);
    let cap = b.ins().iconst(types::I64, max_batch);
    let small = b.ins().icmp(IntCC::SignedLessThan, left, cap);
    let n = b.ins().select(small, left, cap);

    // Inputs: row r of the chunk from `in`, or from its cells.
    let in_row_bytes = match source {
        Source::Floats => (spec.in_width * 4) as i64,
        Source::Raw(plan, _) => (plan.keys.len() * 8) as i64,
    };
    let zr = b.ins().iconst(types::I64, 0);
    let rv = counter(b, zr);
    step_loop(b, rv, n, 1, &mut |b, r| {
        let row = b.ins().iadd(r0, r);
        let off = b.ins().imul_imm_s(row, in_row_bytes);
        let src_row = b.ins().iadd(input, off);
        if let Source::Raw(plan, row_refs) = source {
            let bufs: Vec<_> = spec
                .inputs
                .iter()
                .zip(&in_ptrs)
                .map(|(inp, &buf)| (buf, inp.per_example, inp.range))
                .collect();
            emit_row(b, plan, row_refs, src_row, r, &bufs, bad_cell, bad_id);
            return;
        }
        for (inp, &buf) in spec.inputs.iter().zip(&in_ptrs) {
            let pe = inp.per_example as i64;
            let src = b.ins().iadd_imm_s(src_row, inp.offset as i64 * 4);
            let doff = b.ins().imul_imm_s(r, pe * 4);
            let dst = b.ins().iadd(buf, doff);
            match (inp.elem, inp.range) {
                (ElemType::I32, Some((lo, hi))) => {
                    copy_ids(b, src, dst, pe, lo, hi, bad_id);
                }
                _ => copy(b, src, dst, pe, Conv::None),
            }
        }
    });
    b.ins().stack_store(PTR, n, ctx_slot, abi::CTX_BATCH);
    b.ins().call(refs.callee, &[ctx]);

    // Outputs: row r of the chunk into `out`.
    let out_row_bytes = (spec.out_width * 4) as i64;
    let zr = b.ins().iconst(types::I64, 0);
    let rv = counter(b, zr);
    step_loop(b, rv, n, 1, &mut |b, r| {
        let row = b.ins().iadd(r0, r);
        let off = b.ins().imul_imm_s(row, out_row_bytes);
        let dst_row = b.ins().iadd(output, off);
        for (out, &buf) in spec.outputs.iter().zip(&out_ptrs) {
            let pe = out.per_example as i64;
            let dst = b.ins().iadd_imm_s(dst_row, out.offset as i64 * 4);
            let soff = b.ins().imul_imm_s(r, pe * 4);
            let src = b.ins().iadd(buf, soff);
            let conv = match out.elem {
                ElemType::F32 => Conv::None,
                ElemType::I32 => Conv::IntToFloat,
            };
            copy(b, src, dst, pe, conv);
        }
    });
    let r1 = b.ins().iadd(r0, n);
    b.def_var(r0v, r1);
    b.ins().jump(chunk_head, &[]);
    b.seal_block(chunk_head);
    b.switch_to_block(done);
    b.seal_block(done);
    let ok = b.ins().iconst(types::I32, 0);
    b.ins().return_(&[ok]);
    for (blk, code) in [
        (negative_rows, -1),
        (bad_id, -2),
        (bad_columns, -3),
        (bad_cell, -4),
    ] {
        b.switch_to_block(blk);
        b.seal_block(blk);
        let v = b.ins().iconst(types::I32, code);
        b.ins().return_(&[v]);
    }
}

#[derive(Clone, Copy)]
enum Conv {
    None,
    IntToFloat,
}

/// Copies `len` 4-byte elements (vectors of four, then single ones).
fn copy(b: &mut FunctionBuilder, src: Value, dst: Value, len: i64, conv: Conv) {
    let (ty, vty) = match conv {
        Conv::None => (types::F32, types::F32X4),
        Conv::IntToFloat => (types::I32, types::I32X4),
    };
    let z = b.ins().iconst(types::I64, 0);
    let end = b.ins().iconst(types::I64, len);
    let iv = counter(b, z);
    for (step, t) in [(4, vty), (1, ty)] {
        step_loop(b, iv, end, step, &mut |b, i| {
            let o = b.ins().imul_imm_s(i, 4);
            let s = b.ins().iadd(src, o);
            let d = b.ins().iadd(dst, o);
            let v = b.ins().load(t, trusted(), s, 0);
            let v = match conv {
                Conv::None => v,
                Conv::IntToFloat => {
                    let ft = if step == 4 { types::F32X4 } else { types::F32 };
                    b.ins().fcvt_from_sint(ft, v)
                }
            };
            b.ins().store(trusted(), v, d, 0);
        });
    }
}

/// Copies `len` ids given as floats into i32s, jumping to `bad` unless each
/// is a whole number in `lo..hi`.
fn copy_ids(
    b: &mut FunctionBuilder,
    src: Value,
    dst: Value,
    len: i64,
    lo: i64,
    hi: i64,
    bad: cranelift_codegen::ir::Block,
) {
    let z = b.ins().iconst(types::I64, 0);
    let end = b.ins().iconst(types::I64, len);
    let iv = counter(b, z);
    step_loop(b, iv, end, 1, &mut |b, i| {
        let o = b.ins().imul_imm_s(i, 4);
        let s = b.ins().iadd(src, o);
        let d = b.ins().iadd(dst, o);
        let x = b.ins().load(types::F32, trusted(), s, 0);
        let lo_f = b.ins().f32const(lo as f32);
        let hi_f = b.ins().f32const(hi as f32);
        let above = b.ins().fcmp(FloatCC::GreaterThanOrEqual, x, lo_f);
        let below = b.ins().fcmp(FloatCC::LessThan, x, hi_f);
        let t = b.ins().trunc(x);
        let whole = b.ins().fcmp(FloatCC::Equal, t, x);
        let ok = b.ins().band(above, below);
        let ok = b.ins().band(ok, whole);
        let store = b.create_block();
        b.ins().brif(ok, store, &[], bad, &[]);
        b.switch_to_block(store);
        b.seal_block(store);
        let v = b.ins().fcvt_to_sint_sat(types::I32, x);
        b.ins().store(trusted(), v, d, 0);
    });
}
