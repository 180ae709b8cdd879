//! The tokenizer: TF's `ExtractFields` (decode_csv_op.cc), one record into
//! its unescaped fields.
//!
//! Invariants: no bytes make it panic; fields go to one reused text buffer
//! (ranges into it), so a record allocates nothing once the buffers have
//! grown; an error is the field number and one of TF's three messages.

use std::ops::Range;

const UNQUOTED: &str = "unquoted fields cannot have quotes/CRLFs inside";
const ESCAPE: &str = "a quote inside a quoted field has to be escaped by another quote";
const END: &str = "a quoted field has to end with a quote followed by the delimiter or the end";

/// TF's `ExtractFields`: the (unescaped) bytes of each selected field go to
/// `text`, their ranges to `ranges`. Errors: the field number and why.
pub(super) fn extract_fields(
    input: &[u8],
    delim: u8,
    quote: bool,
    select: Option<&[usize]>,
    text: &mut Vec<u8>,
    ranges: &mut Vec<Range<usize>>,
) -> Result<(), (usize, &'static str)> {
    text.clear();
    ranges.clear();
    let n = input.len();
    if n == 0 {
        return Ok(());
    }
    let (mut i, mut parsed, mut sel) = (0usize, 0usize, 0usize);
    let mut next = select.and_then(|s| s.first().copied()).unwrap_or(0);
    while i < n {
        if input[i] == b'\n' || input[i] == b'\r' {
            i += 1;
            continue;
        }
        let keep = select.is_none() || parsed == next;
        let start = text.len();
        if !(quote && input[i] == b'"') {
            while i < n && input[i] != delim {
                let c = input[i];
                if (quote && c == b'"') || c == b'\n' || c == b'\r' {
                    return Err((parsed, UNQUOTED));
                }
                if keep {
                    text.push(c);
                }
                i += 1;
            }
            i += 1;
        } else {
            i += 1;
            while i + 1 < n && (input[i] != b'"' || input[i + 1] != delim) {
                if input[i] != b'"' {
                    if keep {
                        text.push(input[i]);
                    }
                    i += 1;
                } else {
                    if input[i + 1] != b'"' {
                        return Err((parsed, ESCAPE));
                    }
                    if keep {
                        text.push(b'"');
                    }
                    i += 2;
                }
            }
            if !(i < n && input[i] == b'"' && (i == n - 1 || input[i + 1] == delim)) {
                return Err((parsed, END));
            }
            i += 2;
        }
        parsed += 1;
        match select {
            None => ranges.push(start..text.len()),
            Some(s) => {
                if parsed - 1 == next {
                    ranges.push(start..text.len());
                    sel += 1;
                    match s.get(sel) {
                        Some(&c) => next = c,
                        None => return Ok(()),
                    }
                }
            }
        }
    }
    // A record ending in the delimiter has an empty last field.
    if i == n && input[n - 1] == delim && (select.is_none() || next == parsed) {
        ranges.push(text.len()..text.len());
    }
    Ok(())
}
