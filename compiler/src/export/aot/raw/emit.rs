//! The code of the raw entry point's row transform: a row's cells (C
//! strings) into the model's input buffers, as Cranelift IR in the
//! exported wrapper.
//!
//! Owns: [`Externs`] (the C library functions the code calls: `strlen`,
//! `strtod`, `memcmp`, and `log`, `log1p`, `exp` for normalizers),
//! [`vocabulary_table`] (a vocabulary as the object's read-only data: an
//! open-addressing table keyed by the value's `Fingerprint64`, and the
//! strings' bytes), and [`emit_row`], which reads one row.
//!
//! Invariants: every cell is read within its `strlen`; a NULL cell, a cell
//! the runtime could not read (not a number, not an int64, not finite, a
//! blank number without `default_value`, more than one number) and a
//! value the normalizer makes non-finite branch to the caller's `bad_cell`
//! block; an id the model cannot take branches to `bad_id`; nothing traps.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    types, Block, FuncRef, GlobalValue, InstBuilder, StackSlotData, StackSlotKind, Value,
};
use cranelift_frontend::FunctionBuilder;
use cranelift_module::{FuncId, Linkage, Module};

use super::hash::{bucket, decimal, fingerprint_cat64};
use super::{Leaf, Number, RawColumn, RawInput, RawPlan, VocabularyTable};
use crate::codegen::emit::{trusted, PTR};
use specc_runtime::data::{NormExpr, NormFunc};
use specc_runtime::feature_column::KeyDType;
use specc_runtime::hash::fingerprint64;

const I64: types::Type = types::I64;

/// The C library functions the row code calls, declared in the module.
pub struct Externs {
    pub strlen: FuncId,
    pub strtod: FuncId,
    pub memcmp: FuncId,
    pub log: FuncId,
    pub log1p: FuncId,
    pub exp: FuncId,
}

impl Externs {
    pub fn declare<M: Module>(module: &mut M) -> Result<Externs, String> {
        let f64t = types::F64;
        let mut decl = |name: &str, params: &[types::Type], ret: types::Type| {
            let mut sig = module.make_signature();
            for &p in params {
                sig.params.push(cranelift_codegen::ir::AbiParam::new(p));
            }
            sig.returns.push(cranelift_codegen::ir::AbiParam::new(ret));
            module
                .declare_function(name, Linkage::Import, &sig)
                .map_err(|e| e.to_string())
        };
        Ok(Externs {
            strlen: decl("strlen", &[PTR], I64)?,
            strtod: decl("strtod", &[PTR, PTR], f64t)?,
            memcmp: decl("memcmp", &[PTR, PTR, I64], types::I32)?,
            log: decl("log", &[f64t], f64t)?,
            log1p: decl("log1p", &[f64t], f64t)?,
            exp: decl("exp", &[f64t], f64t)?,
        })
    }
}

/// What the row code refers to, declared in the wrapper.
pub struct RowRefs {
    pub fp64: FuncRef,
    pub strlen: FuncRef,
    pub strtod: FuncRef,
    pub memcmp: FuncRef,
    pub log: FuncRef,
    pub log1p: FuncRef,
    pub exp: FuncRef,
    /// Per vocabulary: its table, its strings' bytes, and the table's mask.
    pub tables: Vec<(GlobalValue, GlobalValue, u64)>,
}

/// Bytes of one table entry: the fingerprint, the value (an int64, or a
/// string's offset << 32 | length), the position (-1: an empty entry).
const ENTRY: i64 = 24;

/// A vocabulary's lookup table and its strings' bytes; the table has a
/// power-of-two number of entries, at least twice the values, so a probe
/// always ends at an empty entry. A value listed twice keeps its first
/// position.
pub fn vocabulary_table(v: &VocabularyTable) -> (Vec<u8>, Vec<u8>, u64) {
    let n = match v {
        VocabularyTable::Strings(s) => s.len(),
        VocabularyTable::Ints(s) => s.len(),
    };
    let size = (2 * n).next_power_of_two().max(2);
    let mask = size as u64 - 1;
    let mut entries: Vec<(u64, u64, i64)> = vec![(0, 0, -1); size];
    let mut blob = Vec::new();
    let mut put = |fp: u64, value: u64, same: &dyn Fn(u64) -> bool, pos: i64| {
        let mut at = (fp & mask) as usize;
        while entries[at].2 >= 0 {
            if entries[at].0 == fp && same(entries[at].1) {
                return;
            }
            at = (at + 1) & mask as usize;
        }
        entries[at] = (fp, value, pos);
    };
    match v {
        VocabularyTable::Strings(s) => {
            let mut offsets = Vec::new();
            for x in s {
                offsets.push(blob.len() as u64);
                blob.extend_from_slice(x);
            }
            for (i, x) in s.iter().enumerate() {
                let value = (offsets[i] << 32) | x.len() as u64;
                let same = |other: u64| {
                    let (o, l) = ((other >> 32) as usize, (other & 0xffff_ffff) as usize);
                    s.iter()
                        .zip(&offsets)
                        .any(|(y, &oy)| oy as usize == o && y.len() == l && y == x)
                };
                put(fingerprint64(x), value, &same, i as i64);
            }
        }
        VocabularyTable::Ints(s) => {
            for (i, &x) in s.iter().enumerate() {
                put(
                    specc_runtime::hash::fingerprint64_i64(x),
                    x as u64,
                    &|other| other == x as u64,
                    i as i64,
                );
            }
        }
    }
    let bytes = entries
        .iter()
        .flat_map(|&(fp, value, pos)| {
            let mut e = Vec::with_capacity(24);
            e.extend_from_slice(&fp.to_le_bytes());
            e.extend_from_slice(&value.to_le_bytes());
            e.extend_from_slice(&pos.to_le_bytes());
            e
        })
        .collect();
    (bytes, blob, mask)
}

/// A cell: its bytes and their number.
#[derive(Clone, Copy)]
struct Cell {
    ptr: Value,
    len: Value,
}

struct Row<'a> {
    refs: &'a RowRefs,
    cells: Vec<Cell>,
    bad_cell: Block,
}

/// Continues where `ok` holds; jumps to `bad` otherwise.
fn check(b: &mut FunctionBuilder, ok: Value, bad: Block) {
    let cont = b.create_block();
    b.ins().brif(ok, cont, &[], bad, &[]);
    b.switch_to_block(cont);
    b.seal_block(cont);
}

/// ASCII whitespace as Rust's `u8::is_ascii_whitespace`: space, \t, \n,
/// \x0C, \r.
fn is_ws(b: &mut FunctionBuilder, c: Value) -> Value {
    let mut any = b.ins().icmp_imm_s(IntCC::Equal, c, 32);
    for w in [9, 10, 12, 13] {
        let e = b.ins().icmp_imm_s(IntCC::Equal, c, w);
        any = b.ins().bor(any, e);
    }
    any
}

/// A byte of a decimal number's text: a digit, `.`, `+`, `-`, `e`, `E`.
fn is_number_char(b: &mut FunctionBuilder, c: Value) -> Value {
    let d = b.ins().iadd_imm_s(c, -i64::from(b'0'));
    let mut any = b.ins().icmp_imm_u(IntCC::UnsignedLessThan, d, 10);
    for w in [b'.', b'+', b'-', b'e', b'E'] {
        let e = b.ins().icmp_imm_s(IntCC::Equal, c, i64::from(w));
        any = b.ins().bor(any, e);
    }
    any
}

fn byte(b: &mut FunctionBuilder, s: Value, i: Value) -> Value {
    let p = b.ins().iadd(s, i);
    b.ins().uload8(I64, trusted(), p, 0)
}

/// The first index in `from..end` whose byte fails `pred` (`end` if none);
/// `back`: the last index + 1 in `from..end` whose byte fails, scanning down
/// (`from` if none).
fn scan(
    b: &mut FunctionBuilder,
    s: Value,
    from: Value,
    end: Value,
    back: bool,
    pred: &dyn Fn(&mut FunctionBuilder, Value) -> Value,
) -> Value {
    let i = b.declare_var(I64);
    b.def_var(i, if back { end } else { from });
    let head = b.create_block();
    let test = b.create_block();
    let step = b.create_block();
    let exit = b.create_block();
    b.ins().jump(head, &[]);
    b.switch_to_block(head);
    let iv = b.use_var(i);
    let more = if back {
        b.ins().icmp(IntCC::SignedGreaterThan, iv, from)
    } else {
        b.ins().icmp(IntCC::SignedLessThan, iv, end)
    };
    b.ins().brif(more, test, &[], exit, &[]);
    b.switch_to_block(test);
    b.seal_block(test);
    let at = if back { b.ins().iadd_imm_s(iv, -1) } else { iv };
    let c = byte(b, s, at);
    let keep = pred(b, c);
    b.ins().brif(keep, step, &[], exit, &[]);
    b.switch_to_block(step);
    b.seal_block(step);
    let next = b.ins().iadd_imm_s(iv, if back { -1 } else { 1 });
    b.def_var(i, next);
    b.ins().jump(head, &[]);
    b.seal_block(head);
    b.switch_to_block(exit);
    b.seal_block(exit);
    b.use_var(i)
}

fn bool_and(b: &mut FunctionBuilder, x: Value, y: Value) -> Value {
    b.ins().band(x, y)
}

impl Row<'_> {
    /// The cell's one number: `(has, x)`, `has` 0 for a blank cell; more
    /// than one word, a word that is not a decimal number and a non-finite
    /// value are bad cells.
    fn read_number(&self, b: &mut FunctionBuilder, cell: Cell) -> (Value, Value) {
        let zero = b.ins().iconst(I64, 0);
        let start = scan(b, cell.ptr, zero, cell.len, false, &is_ws);
        let has = b.ins().icmp(IntCC::SignedLessThan, start, cell.len);
        let word = b.create_block();
        let merge = b.create_block();
        b.append_block_param(merge, types::F64);
        let nan = b.ins().f64const(0.0);
        b.ins().brif(has, word, &[], merge, &[nan.into()]);
        b.switch_to_block(word);
        b.seal_block(word);
        let end = scan(b, cell.ptr, start, cell.len, false, &|b, c| {
            let w = is_ws(b, c);
            b.ins().bxor_imm_s(w, 1)
        });
        let chars = scan(b, cell.ptr, start, end, false, &is_number_char);
        let ok = b.ins().icmp(IntCC::Equal, chars, end);
        check(b, ok, self.bad_cell);
        let rest = scan(b, cell.ptr, end, cell.len, false, &is_ws);
        let one = b.ins().icmp(IntCC::Equal, rest, cell.len);
        check(b, one, self.bad_cell);
        let slot = b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 8, 3));
        let endp = b.ins().stack_addr(PTR, slot, 0);
        let from = b.ins().iadd(cell.ptr, start);
        let call = b.ins().call(self.refs.strtod, &[from, endp]);
        let x = b.inst_results(call)[0];
        let stop = b.ins().stack_load(PTR, PTR, slot, 0);
        let want = b.ins().iadd(cell.ptr, end);
        let whole = b.ins().icmp(IntCC::Equal, stop, want);
        check(b, whole, self.bad_cell);
        let ax = b.ins().fabs(x);
        let inf = b.ins().f64const(f64::INFINITY);
        let finite = b.ins().fcmp(FloatCC::LessThan, ax, inf);
        check(b, finite, self.bad_cell);
        b.ins().jump(merge, &[x.into()]);
        b.switch_to_block(merge);
        b.seal_block(merge);
        (has, b.block_params(merge)[0])
    }

    /// A number's f32 value: the cell's number through the normalizer, or
    /// the default for a blank cell.
    fn number(&self, b: &mut FunctionBuilder, n: &Number) -> Value {
        let (has, x) = self.read_number(b, self.cells[n.key]);
        let present = b.create_block();
        let missing = b.create_block();
        let merge = b.create_block();
        b.append_block_param(merge, types::F32);
        b.ins().brif(has, present, &[], missing, &[]);
        b.switch_to_block(missing);
        b.seal_block(missing);
        match n.default {
            Some(d) => {
                let v = b.ins().f32const(d);
                b.ins().jump(merge, &[v.into()]);
            }
            None => {
                b.ins().jump(self.bad_cell, &[]);
            }
        }
        b.switch_to_block(present);
        b.seal_block(present);
        let v = match &n.normalizer {
            Some(e) => self.norm(b, e, x),
            None => x,
        };
        let y = b.ins().fdemote(types::F32, v);
        let ay = b.ins().fabs(y);
        let inf = b.ins().f32const(f32::INFINITY);
        let finite = b.ins().fcmp(FloatCC::LessThan, ay, inf);
        b.ins().brif(finite, merge, &[y.into()], self.bad_cell, &[]);
        b.switch_to_block(merge);
        b.seal_block(merge);
        b.block_params(merge)[0]
    }

    /// A normalizer expression in f64, as the runtime's `NormExpr::eval`.
    fn norm(&self, b: &mut FunctionBuilder, e: &NormExpr, x: Value) -> Value {
        match e {
            NormExpr::X => x,
            NormExpr::Const(c) => b.ins().f64const(*c),
            NormExpr::Neg(a) => {
                let v = self.norm(b, a, x);
                b.ins().fneg(v)
            }
            NormExpr::Add(l, r)
            | NormExpr::Sub(l, r)
            | NormExpr::Mul(l, r)
            | NormExpr::Div(l, r) => {
                let u = self.norm(b, l, x);
                let v = self.norm(b, r, x);
                match e {
                    NormExpr::Add(..) => b.ins().fadd(u, v),
                    NormExpr::Sub(..) => b.ins().fsub(u, v),
                    NormExpr::Mul(..) => b.ins().fmul(u, v),
                    _ => b.ins().fdiv(u, v),
                }
            }
            NormExpr::Func(f, a) => {
                let v = self.norm(b, a, x);
                let call = |b: &mut FunctionBuilder, f: FuncRef| {
                    let c = b.ins().call(f, &[v]);
                    b.inst_results(c)[0]
                };
                match f {
                    NormFunc::Log => call(b, self.refs.log),
                    NormFunc::Log1p => call(b, self.refs.log1p),
                    NormFunc::Exp => call(b, self.refs.exp),
                    NormFunc::Sqrt => b.ins().sqrt(v),
                    NormFunc::Abs => b.ins().fabs(v),
                    NormFunc::Square => b.ins().fmul(v, v),
                }
            }
        }
    }

    /// The cell's int64, trimmed: `(has, x)`, `has` 0 for a blank cell; a
    /// cell Rust's `i64::from_str` refuses is a bad cell.
    fn read_int(&self, b: &mut FunctionBuilder, cell: Cell) -> (Value, Value) {
        let zero = b.ins().iconst(I64, 0);
        let start = scan(b, cell.ptr, zero, cell.len, false, &is_ws);
        let end = scan(b, cell.ptr, start, cell.len, true, &is_ws);
        let has = b.ins().icmp(IntCC::SignedLessThan, start, end);
        let parse = b.create_block();
        let merge = b.create_block();
        b.append_block_param(merge, I64);
        b.ins().brif(has, parse, &[], merge, &[zero.into()]);
        b.switch_to_block(parse);
        b.seal_block(parse);
        let c0 = byte(b, cell.ptr, start);
        let minus = b.ins().icmp_imm_s(IntCC::Equal, c0, i64::from(b'-'));
        let plus = b.ins().icmp_imm_s(IntCC::Equal, c0, i64::from(b'+'));
        let signed = b.ins().bor(minus, plus);
        let skip = b.ins().uextend(I64, signed);
        let digits = b.ins().iadd(start, skip);
        let some = b.ins().icmp(IntCC::SignedLessThan, digits, end);
        check(b, some, self.bad_cell);
        let i = b.declare_var(I64);
        let mag = b.declare_var(I64);
        b.def_var(i, digits);
        b.def_var(mag, zero);
        let head = b.create_block();
        let body = b.create_block();
        let exit = b.create_block();
        b.ins().jump(head, &[]);
        b.switch_to_block(head);
        let iv = b.use_var(i);
        let more = b.ins().icmp(IntCC::SignedLessThan, iv, end);
        b.ins().brif(more, body, &[], exit, &[]);
        b.switch_to_block(body);
        b.seal_block(body);
        let c = byte(b, cell.ptr, iv);
        let d = b.ins().iadd_imm_s(c, -i64::from(b'0'));
        let digit = b.ins().icmp_imm_u(IntCC::UnsignedLessThan, d, 10);
        check(b, digit, self.bad_cell);
        let m = b.use_var(mag);
        let fits = b
            .ins()
            .icmp_imm_u(IntCC::UnsignedLessThanOrEqual, m, (u64::MAX / 10) as i64);
        check(b, fits, self.bad_cell);
        let m10 = b.ins().imul_imm_s(m, 10);
        let m2 = b.ins().iadd(m10, d);
        let no_wrap = b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, m2, m10);
        check(b, no_wrap, self.bad_cell);
        b.def_var(mag, m2);
        let next = b.ins().iadd_imm_s(iv, 1);
        b.def_var(i, next);
        b.ins().jump(head, &[]);
        b.seal_block(head);
        b.switch_to_block(exit);
        b.seal_block(exit);
        let m = b.use_var(mag);
        // At most 2^63 - 1, or 2^63 for a negative number.
        let neg = b.ins().uextend(I64, minus);
        let limit = b.ins().iadd_imm_s(neg, i64::MAX);
        let in_range = b.ins().icmp(IntCC::UnsignedLessThanOrEqual, m, limit);
        check(b, in_range, self.bad_cell);
        let nm = b.ins().ineg(m);
        let x = b.ins().select(minus, nm, m);
        b.ins().jump(merge, &[x.into()]);
        b.switch_to_block(merge);
        b.seal_block(merge);
        let x = b.block_params(merge)[0];
        (has, x)
    }

    fn fp64(&self, b: &mut FunctionBuilder, ptr: Value, len: Value) -> Value {
        let c = b.ins().call(self.refs.fp64, &[ptr, len]);
        b.inst_results(c)[0]
    }

    /// An int64's `Fingerprint64` (of its decimal string).
    fn fp64_int(&self, b: &mut FunctionBuilder, x: Value) -> Value {
        let (p, l) = decimal(b, x);
        self.fp64(b, p, l)
    }

    /// The position of the value in vocabulary `table`, -1 if absent:
    /// strings compare `cell`'s bytes, ints the value `x`.
    fn lookup(
        &self,
        b: &mut FunctionBuilder,
        table: usize,
        fp: Value,
        key: Result<Cell, Value>,
    ) -> Value {
        let (entries, blob, mask) = self.refs.tables[table];
        let entries = b.ins().symbol_value(PTR, entries);
        let blob = b.ins().symbol_value(PTR, blob);
        let pos = b.declare_var(I64);
        let start = b.ins().band_imm_s(fp, mask as i64);
        b.def_var(pos, start);
        let head = b.create_block();
        let occupied = b.create_block();
        let same_fp = b.create_block();
        let next = b.create_block();
        let done = b.create_block();
        b.append_block_param(done, I64);
        b.ins().jump(head, &[]);
        b.switch_to_block(head);
        let p = b.use_var(pos);
        let off = b.ins().imul_imm_s(p, ENTRY);
        let e = b.ins().iadd(entries, off);
        let id = b.ins().load(I64, trusted(), e, 16);
        let empty = b.ins().icmp_imm_s(IntCC::SignedLessThan, id, 0);
        let none = b.ins().iconst(I64, -1);
        b.ins().brif(empty, done, &[none.into()], occupied, &[]);
        b.switch_to_block(occupied);
        b.seal_block(occupied);
        let efp = b.ins().load(I64, trusted(), e, 0);
        let eq = b.ins().icmp(IntCC::Equal, efp, fp);
        b.ins().brif(eq, same_fp, &[], next, &[]);
        b.switch_to_block(same_fp);
        b.seal_block(same_fp);
        let value = b.ins().load(I64, trusted(), e, 8);
        match key {
            Ok(cell) => {
                let elen = b.ins().band_imm_s(value, 0xffff_ffff);
                let eoff = b.ins().ushr_imm_s(value, 32);
                let same_len = b.ins().icmp(IntCC::Equal, elen, cell.len);
                let cmp = b.create_block();
                b.ins().brif(same_len, cmp, &[], next, &[]);
                b.switch_to_block(cmp);
                b.seal_block(cmp);
                let s = b.ins().iadd(blob, eoff);
                let c = b.ins().call(self.refs.memcmp, &[s, cell.ptr, cell.len]);
                let r = b.inst_results(c)[0];
                let same = b.ins().icmp_imm_s(IntCC::Equal, r, 0);
                b.ins().brif(same, done, &[id.into()], next, &[]);
            }
            Err(x) => {
                let same = b.ins().icmp(IntCC::Equal, value, x);
                b.ins().brif(same, done, &[id.into()], next, &[]);
            }
        }
        b.switch_to_block(next);
        b.seal_block(next);
        let p1 = b.ins().iadd_imm_s(p, 1);
        let p1 = b.ins().band_imm_s(p1, mask as i64);
        b.def_var(pos, p1);
        b.ins().jump(head, &[]);
        b.seal_block(head);
        b.switch_to_block(done);
        b.seal_block(done);
        b.block_params(done)[0]
    }

    /// A column's value in the row: `(present, id)` (TF's id, possibly
    /// negative or out of range; meaningless when not present).
    fn column(&self, b: &mut FunctionBuilder, c: &RawColumn) -> (Value, Value) {
        match c {
            RawColumn::Hash {
                key,
                dtype: KeyDType::String,
                buckets,
            } => {
                let cell = self.cells[*key];
                let present = b.ins().icmp_imm_s(IntCC::NotEqual, cell.len, 0);
                let h = self.fp64(b, cell.ptr, cell.len);
                (present, bucket(b, h, *buckets))
            }
            RawColumn::Hash {
                key,
                dtype: KeyDType::Int64,
                buckets,
            } => {
                let (has, x) = self.read_int(b, self.cells[*key]);
                let present = self.not_minus_one(b, has, x);
                let h = self.fp64_int(b, x);
                (present, bucket(b, h, *buckets))
            }
            RawColumn::Identity {
                key,
                num_buckets,
                default,
            } => {
                let (has, x) = self.read_int(b, self.cells[*key]);
                let present = self.not_minus_one(b, has, x);
                let id = match default {
                    Some(d) => {
                        let out = b.ins().icmp_imm_u(
                            IntCC::UnsignedGreaterThanOrEqual,
                            x,
                            *num_buckets as i64,
                        );
                        let dv = b.ins().iconst(I64, *d);
                        b.ins().select(out, dv, x)
                    }
                    None => x,
                };
                (present, id)
            }
            RawColumn::Vocabulary {
                key,
                dtype,
                table,
                size,
                oov,
                default,
            } => {
                let cell = self.cells[*key];
                let (present, fp, idx) = match dtype {
                    KeyDType::String => {
                        let present = b.ins().icmp_imm_s(IntCC::NotEqual, cell.len, 0);
                        let fp = self.fp64(b, cell.ptr, cell.len);
                        (present, fp, self.lookup(b, *table, fp, Ok(cell)))
                    }
                    KeyDType::Int64 => {
                        let (has, x) = self.read_int(b, cell);
                        let present = self.not_minus_one(b, has, x);
                        let fp = self.fp64_int(b, x);
                        (present, fp, self.lookup(b, *table, fp, Err(x)))
                    }
                };
                let miss = if *oov > 0 {
                    let o = bucket(b, fp, *oov);
                    b.ins().iadd_imm_s(o, *size)
                } else {
                    b.ins().iconst(I64, *default)
                };
                let found = b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, idx, 0);
                (present, b.ins().select(found, idx, miss))
            }
            RawColumn::Bucketized { source, boundaries } => {
                let v = self.number(b, source);
                let mut id = b.ins().iconst(I64, 0);
                for &bd in boundaries {
                    let c = b.ins().f32const(bd);
                    let ge = b.ins().fcmp(FloatCC::GreaterThanOrEqual, v, c);
                    let ge = b.ins().uextend(I64, ge);
                    id = b.ins().iadd(id, ge);
                }
                (b.ins().iconst(types::I8, 1), id)
            }
            RawColumn::Crossed {
                leaves,
                start,
                buckets,
            } => {
                let mut present = b.ins().iconst(types::I8, 1);
                let mut h = b.ins().iconst(I64, *start as i64);
                for leaf in leaves {
                    let (p, fp) = match leaf {
                        Leaf::Str(k) => {
                            let cell = self.cells[*k];
                            let fp = self.fp64(b, cell.ptr, cell.len);
                            (b.ins().iconst(types::I8, 1), fp)
                        }
                        Leaf::Int(k) => self.read_int(b, self.cells[*k]),
                        Leaf::Column(c) => self.column(b, c),
                    };
                    present = bool_and(b, present, p);
                    h = fingerprint_cat64(b, h, fp);
                }
                (present, bucket(b, h, *buckets))
            }
        }
    }

    /// `has && x != -1`: the int64 values TF keeps from a dense cell.
    fn not_minus_one(&self, b: &mut FunctionBuilder, has: Value, x: Value) -> Value {
        let keep = b.ins().icmp_imm_s(IntCC::NotEqual, x, -1);
        b.ins().band(has, keep)
    }

    /// `present && 0 <= id <= i32::MAX`: a slot that names a row.
    fn usable(&self, b: &mut FunctionBuilder, present: Value, id: Value) -> Value {
        let fits = b
            .ins()
            .icmp_imm_u(IntCC::UnsignedLessThanOrEqual, id, i64::from(i32::MAX));
        b.ins().band(present, fits)
    }
}

/// `len`, or 0 when the cell's `len` bytes are `na` (the CSV's `na_value`:
/// a missing value); the bytes are read only when the lengths agree.
fn blank_if_equal(b: &mut FunctionBuilder, ptr: Value, len: Value, na: &[u8]) -> Value {
    let cmp = b.create_block();
    let done = b.create_block();
    b.append_block_param(done, I64);
    let same_len = b.ins().icmp_imm_u(IntCC::Equal, len, na.len() as i64);
    b.ins().brif(same_len, cmp, &[], done, &[len.into()]);
    b.switch_to_block(cmp);
    b.seal_block(cmp);
    let mut eq = b.ins().iconst(types::I8, 1);
    for (i, &c) in na.iter().enumerate() {
        let x = b.ins().uload8(I64, trusted(), ptr, i as i32);
        let e = b.ins().icmp_imm_u(IntCC::Equal, x, i64::from(c));
        eq = b.ins().band(eq, e);
    }
    let zero = b.ins().iconst(I64, 0);
    let out = b.ins().select(eq, zero, len);
    b.ins().jump(done, &[out.into()]);
    b.switch_to_block(done);
    b.seal_block(done);
    b.block_params(done)[0]
}

/// A model input's buffer as the row code writes it: its address, its
/// elements per row, and for id inputs the ids allowed (`lo..hi`).
pub type InputBuffer = (Value, usize, Option<(i64, i64)>);

/// One row: reads the `plan.keys.len()` cell pointers at `cells_row`, and
/// writes each input's values for row `r` of the chunk into `bufs` (one
/// per plan input, `per_example` elements a row). `ranges[i]` is input i's
/// allowed ids (`lo..hi`) for id inputs.
#[allow(clippy::too_many_arguments)]
pub fn emit_row(
    b: &mut FunctionBuilder,
    plan: &RawPlan,
    refs: &RowRefs,
    cells_row: Value,
    r: Value,
    bufs: &[InputBuffer],
    bad_cell: Block,
    bad_id: Block,
) {
    let mut cells = Vec::new();
    for k in 0..plan.keys.len() {
        let ptr = b.ins().load(PTR, trusted(), cells_row, (k * 8) as i32);
        let set = b.ins().icmp_imm_s(IntCC::NotEqual, ptr, 0);
        check(b, set, bad_cell);
        let c = b.ins().call(refs.strlen, &[ptr]);
        let len = b.inst_results(c)[0];
        let len = match &plan.na_value {
            Some(na) => blank_if_equal(b, ptr, len, na),
            None => len,
        };
        cells.push(Cell { ptr, len });
    }
    let row = Row {
        refs,
        cells,
        bad_cell,
    };
    for (input, &(buf, per_example, range)) in plan.inputs.iter().zip(bufs) {
        let off = b.ins().imul_imm_s(r, (per_example * 4) as i64);
        let dst = b.ins().iadd(buf, off);
        match input {
            RawInput::Numbers(ns) => {
                for (j, n) in ns.iter().enumerate() {
                    let v = row.number(b, n);
                    b.ins().store(trusted(), v, dst, (j * 4) as i32);
                }
            }
            RawInput::ClassIds { keys, num_classes } => {
                for (j, &k) in keys.iter().enumerate() {
                    let (has, x) = row.read_number(b, row.cells[k]);
                    check(b, has, bad_cell);
                    let t = b.ins().trunc(x);
                    let whole = b.ins().fcmp(FloatCC::Equal, t, x);
                    let zero = b.ins().f64const(0.0);
                    let nonneg = b.ins().fcmp(FloatCC::GreaterThanOrEqual, x, zero);
                    let hi = num_classes.map_or(f64::from(i32::MAX) + 1.0, f64::from);
                    let hi = b.ins().f64const(hi);
                    let below = b.ins().fcmp(FloatCC::LessThan, x, hi);
                    let ok = b.ins().band(whole, nonneg);
                    let ok = b.ins().band(ok, below);
                    check(b, ok, bad_cell);
                    let id = b.ins().fcvt_to_sint_sat(types::I32, x);
                    b.ins().store(trusted(), id, dst, (j * 4) as i32);
                }
            }
            RawInput::Ids {
                column,
                max_values,
                check_range,
                num_buckets,
            } => {
                let (present, id) = row.column(b, column);
                if *check_range {
                    let nonneg = b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, id, 0);
                    let over = b.ins().icmp_imm_u(
                        IntCC::UnsignedGreaterThanOrEqual,
                        id,
                        *num_buckets as i64,
                    );
                    let bad = b.ins().band(nonneg, over);
                    let bad = b.ins().band(bad, present);
                    let ok = b.ins().bxor_imm_s(bad, 1);
                    check(b, ok, bad_id);
                }
                let usable = row.usable(b, present, id);
                let none = b.ins().iconst(I64, -1);
                let slot = b.ins().select(usable, id, none);
                if let Some((_, hi)) = range {
                    let ok = b.ins().icmp_imm_s(IntCC::SignedLessThan, slot, hi);
                    check(b, ok, bad_id);
                }
                let slot = b.ins().ireduce(types::I32, slot);
                b.ins().store(trusted(), slot, dst, 0);
                let pad = b.ins().iconst(types::I32, -1);
                for j in 1..*max_values {
                    b.ins().store(trusted(), pad, dst, (j * 4) as i32);
                }
            }
            RawInput::Weights { column, max_values } => {
                let (present, id) = row.column(b, column);
                let weighted = if column.always_weighted() {
                    present
                } else {
                    row.usable(b, present, id)
                };
                let one = b.ins().f32const(1.0);
                let zero = b.ins().f32const(0.0);
                let w = b.ins().select(weighted, one, zero);
                b.ins().store(trusted(), w, dst, 0);
                for j in 1..*max_values {
                    b.ins().store(trusted(), zero, dst, (j * 4) as i32);
                }
            }
        }
    }
}
