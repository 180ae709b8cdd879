//! Typed parsing: a field's bytes as TF's `decode_csv` reads a number.
//!
//! Invariants: ASCII whitespace around a number is allowed; ints are
//! decimal with an optional sign and range-checked (`strings::safe_strto*`);
//! floats are correctly rounded decimals (float32 rounded once, from the
//! decimal, not via float64) with the words `inf`, `infinity`, `nan` (any
//! case, signed) or hexadecimal integers (`0x10`); anything else is `None`.

fn trim(b: &[u8]) -> &[u8] {
    let ws = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    let start = b.iter().position(|c| !ws(c)).unwrap_or(b.len());
    let end = b.iter().rposition(|c| !ws(c)).map_or(start, |e| e + 1);
    &b[start..end]
}

/// A decimal integer with an optional sign and whitespace around it
/// (`strings::safe_strto32/64`).
pub(crate) fn parse_int<T: std::str::FromStr>(b: &[u8]) -> Option<T> {
    let t = std::str::from_utf8(trim(b)).ok()?;
    if !t
        .bytes()
        .enumerate()
        .all(|(i, c)| c.is_ascii_digit() || (i == 0 && (c == b'+' || c == b'-')))
    {
        return None;
    }
    t.parse().ok()
}

/// `0x..` hexadecimal integers (double-conversion's ALLOW_HEX), with a sign.
fn parse_hex(t: &str) -> Option<f64> {
    let (neg, rest) = match t.as_bytes().first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    let digits = rest
        .strip_prefix("0x")
        .or_else(|| rest.strip_prefix("0X"))?;
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    // Exact up to 2^53; beyond, rounded per digit (a rare case in data).
    let v = digits.bytes().fold(0f64, |acc, c| {
        acc * 16.0 + f64::from((c as char).to_digit(16).unwrap_or(0))
    });
    Some(if neg { -v } else { v })
}

pub(crate) fn parse_float(b: &[u8]) -> Option<f64> {
    let t = std::str::from_utf8(trim(b)).ok()?;
    parse_hex(t).or_else(|| float_syntax(t).then(|| t.parse().ok()).flatten())
}

pub(crate) fn parse_float32(b: &[u8]) -> Option<f32> {
    let t = std::str::from_utf8(trim(b)).ok()?;
    match parse_hex(t) {
        Some(v) => Some(v as f32),
        None => float_syntax(t).then(|| t.parse().ok()).flatten(),
    }
}

/// Rust's float syntax is the C one except for words: only `inf`,
/// `infinity` and `nan` (any case, signed) are accepted, as TF does.
fn float_syntax(t: &str) -> bool {
    let body = t.strip_prefix(['+', '-']).unwrap_or(t);
    let lower = body.to_ascii_lowercase();
    matches!(lower.as_str(), "inf" | "infinity" | "nan")
        || body
            .bytes()
            .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'))
}
