//! The fused epilogue: bias and relu applied to C after its last k block.
//!
//! Owns [`Epilogue`] (what a caller asks for), [`Ep`] (the same in a
//! [`Problem`](super::dispatch::Problem)'s orientation) and [`apply_ep`],
//! which the driver and the `narrow` kernel run over each cache block of C
//! right after its last k block is stored.
//!
//! Invariant: every element gets `c + bias` then `c > 0 ? c : 0`, the
//! operations of a compiled elementwise loop `relu(add(c, bias))`, never on
//! partial sums, whatever the kernel or the way C is split.

use super::kernel::CTile;

/// What is applied to every element of C after its last k block
/// ([`sgemm_ep`](super::sgemm_ep)): `c = c + bias[j * bias_stride]` (when
/// `bias` is not null), then `c = relu(c)` (when `relu`), where
/// `relu(x) = x > 0 ? x : 0` (NaN and -0.0 give +0.0), the same IEEE
/// operations, in the same order, as a compiled elementwise loop
/// `relu(add(c, bias))`.
#[derive(Clone, Copy, Debug)]
pub struct Epilogue {
    /// The bias row (one value per column of C), or null for none.
    pub bias: *const f32,
    /// Elements between the biases of consecutive columns of C.
    pub bias_stride: isize,
    pub relu: bool,
}

/// An [`Epilogue`] in a [`Problem`](super::dispatch::Problem)'s
/// orientation: the bias of element `(i, j)` at `bias + i * rs + j * cs`
/// (`rs == 0` unless transposed).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ep {
    pub bias: *const f32,
    pub rs: isize,
    pub cs: isize,
    pub relu: bool,
}

/// Applies the epilogue to a tile of C whose first element is C's element
/// `(i0, j0)`: `c = c + bias` (with a bias), then `c = c > 0 ? c : 0` (with
/// relu), element by element; contiguous rows of C with a contiguous or
/// constant bias take a loop the compiler vectorizes (the same operations).
///
/// # Safety
/// The tile must be readable and writable, the biases readable.
#[inline(always)]
pub(crate) unsafe fn apply_ep(ep: &Ep, c: CTile, i0: usize, j0: usize) {
    #[inline(always)]
    fn relu(x: f32) -> f32 {
        if x > 0.0 {
            x
        } else {
            0.0
        }
    }
    let has_bias = !ep.bias.is_null();
    for i in 0..c.mr {
        let row = c.ptr.offset(i as isize * c.rs);
        if !has_bias {
            if c.cs == 1 {
                let r = core::slice::from_raw_parts_mut(row, c.nr);
                for x in r {
                    *x = relu(*x);
                }
            } else {
                for j in 0..c.nr {
                    let e = row.offset(j as isize * c.cs);
                    *e = relu(*e);
                }
            }
            continue;
        }
        let brow = ep
            .bias
            .offset((i0 + i) as isize * ep.rs + j0 as isize * ep.cs);
        if c.cs == 1 && ep.cs == 1 {
            let r = core::slice::from_raw_parts_mut(row, c.nr);
            let bs = core::slice::from_raw_parts(brow, c.nr);
            if ep.relu {
                for (x, b) in r.iter_mut().zip(bs) {
                    *x = relu(*x + *b);
                }
            } else {
                for (x, b) in r.iter_mut().zip(bs) {
                    *x += *b;
                }
            }
        } else if c.cs == 1 && ep.cs == 0 {
            let r = core::slice::from_raw_parts_mut(row, c.nr);
            let b = *brow;
            if ep.relu {
                for x in r {
                    *x = relu(*x + b);
                }
            } else {
                for x in r {
                    *x += b;
                }
            }
        } else {
            for j in 0..c.nr {
                let e = row.offset(j as isize * c.cs);
                let v = *e + *brow.offset(j as isize * ep.cs);
                *e = if ep.relu { relu(v) } else { v };
            }
        }
    }
}
