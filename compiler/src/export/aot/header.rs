//! The C header of an exported object.
//!
//! Owns: [`header`], the text of `model.h`: the prototypes of the exported
//! functions (`SYMBOL` and, when the object has it, the raw-features entry
//! point `SYMBOL_raw`), the row widths and the chunk size as `#define`s,
//! each input's and output's columns and each raw key's cell as `enum`
//! constants, the raw keys' names as an initializer, and the contract in a
//! comment (row layouts, return codes, not reentrant, linking).
//!
//! Invariants: every constant is a valid, distinct C identifier (names are
//! upper-cased, other characters become `_`, a clash gets a numeric
//! suffix); nothing from the spec can end the comment early.

use std::collections::HashSet;
use std::fmt::Write;

use specc_runtime::abi::ElemType;

use super::{Exported, RowField};

/// `name` as the tail of a C constant.
fn ident(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// `s` as a C string literal (quotes, backslashes and non-printable bytes
/// escaped in octal).
fn c_string(s: &str) -> String {
    let mut out = String::from("\"");
    for &c in s.as_bytes() {
        match c {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(c as char);
            }
            0x20..=0x7e if c != b'?' => out.push(c as char),
            _ => out.push_str(&format!("\\{c:03o}")),
        }
    }
    out.push('"');
    out
}

/// Text safe inside a C comment.
fn comment(s: &str) -> String {
    s.replace("*/", "* /")
}

fn describe(f: &RowField) -> String {
    let cols = format!("columns {}..{}", f.offset, f.offset + f.width);
    match (f.elem, f.ids) {
        (ElemType::I32, Some((lo, hi))) => {
            let pad = if lo < 0 { ", -1 for none" } else { "" };
            format!(
                "{cols}: {} ids as floats (whole numbers in 0..{hi}{pad})",
                f.width
            )
        }
        (ElemType::I32, None) => format!("{cols}: {} integers as floats", f.width),
        (ElemType::F32, _) => format!("{cols}: float[{}]", f.width),
    }
}

/// The header of `e`, whose function is `symbol`, exported from `spec_name`.
pub fn header(e: &Exported, symbol: &str, spec_name: &str) -> String {
    let p = ident(symbol);
    let mut h = String::new();
    let w = &mut h;
    let _ = writeln!(
        w,
        "/* The ahead-of-time export of {} by specc. Generated: do not edit.",
        comment(spec_name)
    );
    let _ = writeln!(w, " *");
    let _ = writeln!(w, " * int {symbol}(const float *in, float *out, int rows);");
    let _ = writeln!(w, " *");
    let _ = writeln!(
        w,
        " * `in`: `rows` rows of {p}_INPUT_WIDTH floats, row after row. A row is the"
    );
    let _ = writeln!(
        w,
        " * model's inputs after feature-column preprocessing (hashing, vocabularies"
    );
    let _ = writeln!(
        w,
        " * and other string handling done: {symbol}_raw below takes raw cells),"
    );
    let _ = writeln!(w, " * concatenated in this order:");
    for f in &e.inputs {
        let _ = writeln!(w, " *   {:<24} {}", comment(&f.name), describe(f));
    }
    let _ = writeln!(
        w,
        " * `out`: `rows` rows of {p}_OUTPUT_WIDTH floats, each the outputs in this order:"
    );
    for f in &e.outputs {
        let _ = writeln!(w, " *   {:<24} {}", comment(&f.name), describe(f));
    }
    let _ = writeln!(w, " *");
    let _ = writeln!(
        w,
        " * Any number of rows: the compiled function runs on chunks of at most"
    );
    let _ = writeln!(
        w,
        " * {p}_MAX_BATCH rows. Returns 0; -1 if rows < 0; -2 if an id is not a whole"
    );
    let _ = writeln!(
        w,
        " * number in its range (earlier chunks' rows of `out` are written, the rest not)."
    );
    match &e.raw_keys {
        Ok(keys) => {
            let _ = writeln!(w, " *");
            let _ = writeln!(
                w,
                " * int {symbol}_raw(const char *const *cells, int columns, float *out, int rows);"
            );
            let _ = writeln!(w, " *");
            let _ = writeln!(
                w,
                " * The same outputs from raw features, with the spec's feature columns compiled"
            );
            let _ = writeln!(
                w,
                " * in (hashing, vocabularies, bucketizing, crosses, defaults, normalizers, as"
            );
            let _ = writeln!(
                w,
                " * training computes them). `cells`: `rows` rows of {p}_RAW_COLUMNS C strings,"
            );
            let _ = writeln!(
                w,
                " * row after row: each row the values of these raw keys (a CSV record's fields,"
            );
            let _ = writeln!(
                w,
                " * unquoted; \"\" for a missing value), in this order ({p}_RAW_COLUMN_NAMES):"
            );
            for (i, k) in keys.iter().enumerate() {
                let _ = writeln!(w, " *   {i:<3} {}", comment(k));
            }
            let _ = writeln!(
                w,
                " * `columns` must be {p}_RAW_COLUMNS. Numbers are read with the C library's"
            );
            let _ = writeln!(
                w,
                " * strtod (in the \"C\" locale) after checking they are plain decimals. Returns"
            );
            let _ = writeln!(
                w,
                " * 0; -1 if rows < 0; -2 if an id is outside its column's range (training refuses"
            );
            let _ = writeln!(
                w,
                " * it too); -3 if columns != {p}_RAW_COLUMNS; -4 if a cell is NULL or training"
            );
            let _ = writeln!(w, " * would refuse it (not a number or int64, not finite,");
            let _ = writeln!(
                w,
                " * blank without a default_value, more than one number, a normalizer's"
            );
            let _ = writeln!(
                w,
                " * non-finite result): that chunk's rows of `out` are not written, earlier ones are."
            );
        }
        Err(why) => {
            let _ = writeln!(w, " *");
            let _ = writeln!(
                w,
                " * No raw-features entry point ({symbol}_raw): {}.",
                comment(why)
            );
        }
    }
    let _ = writeln!(w, " *");
    let _ = writeln!(
        w,
        " * Not reentrant: the scratch memory and the row buffers are static (.bss), so"
    );
    let _ = writeln!(
        w,
        " * call the object from one thread at a time. The weights are in the object's read-only"
    );
    let _ = writeln!(
        w,
        " * data. specc runs with denormals flushed to zero (as TensorFlow does); for the"
    );
    let _ = writeln!(
        w,
        " * same bits where subnormal values arise, set FTZ and DAZ (x86 MXCSR) first."
    );
    let _ = writeln!(
        w,
        " * The object needs only the C library (and its math): cc main.c model.o -lm"
    );
    let _ = writeln!(w, " */");
    let _ = writeln!(w, "#ifndef {p}_H");
    let _ = writeln!(w, "#define {p}_H");
    let _ = writeln!(w);
    let _ = writeln!(w, "#define {p}_INPUT_WIDTH {}", e.in_width);
    let _ = writeln!(w, "#define {p}_OUTPUT_WIDTH {}", e.out_width);
    let _ = writeln!(w, "#define {p}_MAX_BATCH {}", e.max_batch);
    if let Ok(keys) = &e.raw_keys {
        let _ = writeln!(w, "#define {p}_RAW_COLUMNS {}", keys.len());
        let names: Vec<String> = keys.iter().map(|k| c_string(k)).collect();
        let _ = writeln!(w, "#define {p}_RAW_COLUMN_NAMES {{ {} }}", names.join(", "));
    }
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "/* The columns of each input and output in a row (and each raw key's cell). */"
    );
    let _ = writeln!(w, "enum {{");
    let mut seen = HashSet::new();
    for (kind, fields) in [("IN", &e.inputs), ("OUT", &e.outputs)] {
        for f in fields {
            let base = format!("{p}_{kind}_{}", ident(&f.name));
            let mut name = base.clone();
            let mut k = 2;
            while !seen.insert(name.clone()) {
                name = format!("{base}_{k}");
                k += 1;
            }
            let _ = writeln!(w, "  {name}_OFFSET = {},", f.offset);
            let _ = writeln!(w, "  {name}_WIDTH = {},", f.width);
        }
    }
    if let Ok(keys) = &e.raw_keys {
        for (i, k) in keys.iter().enumerate() {
            let base = format!("{p}_RAW_{}", ident(k));
            let mut name = base.clone();
            let mut n = 2;
            while !seen.insert(name.clone()) {
                name = format!("{base}_{n}");
                n += 1;
            }
            let _ = writeln!(w, "  {name} = {i},");
        }
    }
    let _ = writeln!(w, "}};");
    let _ = writeln!(w);
    let _ = writeln!(w, "#ifdef __cplusplus");
    let _ = writeln!(w, "extern \"C\" {{");
    let _ = writeln!(w, "#endif");
    let _ = writeln!(w);
    let _ = writeln!(w, "int {symbol}(const float *in, float *out, int rows);");
    if e.raw_keys.is_ok() {
        let _ = writeln!(
            w,
            "int {symbol}_raw(const char *const *cells, int columns, float *out, int rows);"
        );
    }
    let _ = writeln!(w);
    let _ = writeln!(w, "#ifdef __cplusplus");
    let _ = writeln!(w, "}}");
    let _ = writeln!(w, "#endif");
    let _ = writeln!(w);
    let _ = writeln!(w, "#endif /* {p}_H */");
    h
}
