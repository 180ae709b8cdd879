//! Each elementwise IR op as Cranelift instructions, over `f32` or `f32x4`.
//!
//! Owns: the table from [`UnaryOp`]/[`BinaryOp`]/select/cast to CLIF, written
//! once for both lane types so the vector loop body and its scalar tail
//! compute bit-identical results. Transcendentals come from [`super::math`].
//!
//! Conventions: comparisons yield 1.0 / 0.0; `select` takes its condition as
//! an f32 (non-zero is true); `max`/`min` send ties to the first operand
//! (TF's `x >= y ? x : y`), as their gradients assume; relu is `x > 0 ? x : 0`.

use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{types, InstBuilder, MemFlagsData, Type, Value};
use cranelift_frontend::FunctionBuilder;

use super::math;
use crate::ir::{BinaryOp, UnaryOp};

/// A constant of the lane type.
pub fn constant(b: &mut FunctionBuilder, ty: Type, v: f32) -> Value {
    math::constant(b, ty, v)
}

fn is_vector(ty: Type) -> bool {
    ty.is_vector()
}

/// Selects per lane between `x` and `y` on a comparison result.
pub fn select_cmp(
    b: &mut FunctionBuilder,
    ty: Type,
    cc: FloatCC,
    p: Value,
    q: Value,
    x: Value,
    y: Value,
) -> Value {
    // Scalar `x > y ? x : y` and `x < y ? x : y` are `maxss`/`minss` on x86,
    // with the same NaN and signed-zero results; Cranelift matches them
    // written with `LessThan`. (Vectors are left as they are: the same
    // rewrite gave `maxps` for relu but measured no faster in W1.)
    let (cc, p, q) = if !is_vector(ty) && cc == FloatCC::GreaterThan && x == p && y == q {
        (FloatCC::LessThan, q, p)
    } else {
        (cc, p, q)
    };
    if !is_vector(ty) {
        if cc == FloatCC::LessThan && ((x == p && y == q) || (x == q && y == p)) {
            let m = b.ins().fcmp(cc, p, q);
            return b.ins().select(m, x, y);
        }
        // Any other scalar select goes through lane 0 of a vector compare and
        // blend: a float `select` on x86 is a conditional branch, which
        // mispredicts on data (a row max's chain of `>=`).
        let v = |b: &mut FunctionBuilder, s: Value| b.ins().scalar_to_vector(types::F32X4, s);
        let (pv, qv, xv, yv) = (v(b, p), v(b, q), v(b, x), v(b, y));
        let r = select_cmp(b, types::F32X4, cc, pv, qv, xv, yv);
        return b.ins().extractlane(r, 0);
    }
    let m = b.ins().fcmp(cc, p, q);
    if is_vector(ty) {
        let mf = b.ins().bitcast(
            ty,
            MemFlagsData::new().with_endianness(cranelift_codegen::ir::Endianness::Little),
            m,
        );
        b.ins().bitselect(mf, x, y)
    } else {
        b.ins().select(m, x, y)
    }
}

pub fn unary(b: &mut FunctionBuilder, ty: Type, op: UnaryOp, x: Value) -> Value {
    match op {
        UnaryOp::Neg => b.ins().fneg(x),
        UnaryOp::Exp => math::exp(b, ty, x),
        UnaryOp::Log => math::log(b, ty, x),
        UnaryOp::Log1p => math::log1p(b, ty, x),
        UnaryOp::Sqrt => b.ins().sqrt(x),
        UnaryOp::Square => b.ins().fmul(x, x),
        UnaryOp::Abs => b.ins().fabs(x),
        UnaryOp::Sign => {
            let zero = constant(b, ty, 0.0);
            let one = constant(b, ty, 1.0);
            let neg_one = constant(b, ty, -1.0);
            let s = select_cmp(b, ty, FloatCC::LessThan, x, zero, neg_one, zero);
            select_cmp(b, ty, FloatCC::GreaterThan, x, zero, one, s)
        }
        UnaryOp::Relu => {
            let zero = constant(b, ty, 0.0);
            select_cmp(b, ty, FloatCC::GreaterThan, x, zero, x, zero)
        }
        UnaryOp::Sigmoid => math::sigmoid(b, ty, x),
        UnaryOp::Tanh => math::tanh(b, ty, x),
        UnaryOp::Softplus => math::softplus(b, ty, x),
        UnaryOp::Floor => super::trig::floor(b, ty, x),
        UnaryOp::Ceil => super::trig::ceil(b, ty, x),
        UnaryOp::Sin => super::trig::sin(b, ty, x),
        UnaryOp::Cos => super::trig::cos(b, ty, x),
        UnaryOp::Recip => {
            let one = constant(b, ty, 1.0);
            b.ins().fdiv(one, x)
        }
    }
}

/// The comparison a compare op makes (`None` for other ops).
pub fn compare_cc(op: BinaryOp) -> Option<FloatCC> {
    Some(match op {
        BinaryOp::Gt => FloatCC::GreaterThan,
        BinaryOp::Ge => FloatCC::GreaterThanOrEqual,
        BinaryOp::Lt => FloatCC::LessThan,
        BinaryOp::Le => FloatCC::LessThanOrEqual,
        BinaryOp::Eq => FloatCC::Equal,
        BinaryOp::Ne => FloatCC::NotEqual,
        _ => return None,
    })
}

pub fn binary(b: &mut FunctionBuilder, ty: Type, op: BinaryOp, x: Value, y: Value) -> Value {
    let cmp = |b: &mut FunctionBuilder, cc: FloatCC| {
        let one = constant(b, ty, 1.0);
        let zero = constant(b, ty, 0.0);
        select_cmp(b, ty, cc, x, y, one, zero)
    };
    match op {
        BinaryOp::Add => b.ins().fadd(x, y),
        BinaryOp::Sub => b.ins().fsub(x, y),
        BinaryOp::Mul => b.ins().fmul(x, y),
        BinaryOp::Div => b.ins().fdiv(x, y),
        BinaryOp::Max => select_cmp(b, ty, FloatCC::GreaterThanOrEqual, x, y, x, y),
        BinaryOp::Pow => {
            // exp(y * log(x)), with x^0 = 1 (log(0) * 0 would be NaN).
            let l = math::log(b, ty, x);
            let t = b.ins().fmul(y, l);
            let p = math::exp(b, ty, t);
            let zero = constant(b, ty, 0.0);
            let one = constant(b, ty, 1.0);
            select_cmp(b, ty, FloatCC::Equal, y, zero, one, p)
        }
        BinaryOp::Min => select_cmp(b, ty, FloatCC::LessThanOrEqual, x, y, x, y),
        BinaryOp::Gt => cmp(b, FloatCC::GreaterThan),
        BinaryOp::Ge => cmp(b, FloatCC::GreaterThanOrEqual),
        BinaryOp::Lt => cmp(b, FloatCC::LessThan),
        BinaryOp::Le => cmp(b, FloatCC::LessThanOrEqual),
        BinaryOp::Eq => cmp(b, FloatCC::Equal),
        BinaryOp::Ne => cmp(b, FloatCC::NotEqual),
    }
}

/// `c != 0 ? x : y`
pub fn select(b: &mut FunctionBuilder, ty: Type, c: Value, x: Value, y: Value) -> Value {
    let zero = constant(b, ty, 0.0);
    select_cmp(b, ty, FloatCC::NotEqual, c, zero, x, y)
}

/// Conversion to int32 as TF's cast: truncation toward zero (kept as f32 in registers).
pub fn truncate(b: &mut FunctionBuilder, x: Value) -> Value {
    b.ins().trunc(x)
}

/// The element type matching a lane type's integer view.
pub fn int_type(ty: Type) -> Type {
    if is_vector(ty) {
        types::I32X4
    } else {
        types::I32
    }
}

/// `Op::UniformHash`: the top 24 bits of murmur3's finalizer of
/// `index · 0x9E3779B1 + fmix32(step ^ seed)`, times 2⁻²⁴ (as
/// `interp::uniform_hash`; wrapping i32 lanes).
pub fn uniform_hash(
    b: &mut FunctionBuilder,
    ty: Type,
    seed: u32,
    index: Value,
    step: Value,
) -> Value {
    let ity = if is_vector(ty) {
        types::I32X4
    } else {
        types::I32
    };
    let k = |b: &mut FunctionBuilder, v: u32| {
        let c = b.ins().iconst(types::I32, i64::from(v as i32));
        if is_vector(ty) {
            b.ins().splat(ity, c)
        } else {
            c
        }
    };
    let fmix = |b: &mut FunctionBuilder, h: Value| {
        let m1 = k(b, 0x85eb_ca6b);
        let m2 = k(b, 0xc2b2_ae35);
        let s = b.ins().ushr_imm_u(h, 16);
        let h = b.ins().bxor(h, s);
        let h = b.ins().imul(h, m1);
        let s = b.ins().ushr_imm_u(h, 13);
        let h = b.ins().bxor(h, s);
        let h = b.ins().imul(h, m2);
        let s = b.ins().ushr_imm_u(h, 16);
        b.ins().bxor(h, s)
    };
    let i = b.ins().fcvt_to_sint_sat(ity, index);
    let s = b.ins().fcvt_to_sint_sat(ity, step);
    let sd = k(b, seed);
    let s = b.ins().bxor(s, sd);
    let ks = fmix(b, s);
    let golden = k(b, 0x9E37_79B1);
    let h = b.ins().imul(i, golden);
    let h = b.ins().iadd(h, ks);
    let h = fmix(b, h);
    let top = b.ins().ushr_imm_u(h, 8);
    let f = b.ins().fcvt_from_sint(ty, top);
    let scale = constant(b, ty, 1.0 / 16_777_216.0);
    b.ins().fmul(f, scale)
}
