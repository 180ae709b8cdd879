//! The matrix-product routine that compiled steps call.
//!
//! Owns: `specc_sgemm`, a C-ABI entry point registered with the JIT, which
//! forwards to [`crate::sgemm::sgemm`] (AVX-512, AVX2+FMA or scalar kernels,
//! chosen at runtime), and `specc_sgemm_ep`, the same with a fused
//! epilogue (bias row and/or relu, [`crate::sgemm::Epilogue`]) as three
//! more scalar arguments (no struct to build, nothing allocated), and
//! `specc_sgemm_batched`, a strided batch of products in one call
//! ([`crate::sgemm::sgemm_batched`]: a batched matmul's groups, or a
//! thread's share of them). It is single-threaded: steps that use both cores split
//! their matrix products themselves (each thread computes a block of C).
//!
//! Invariants: `C = alpha * A @ B + beta * C` with arbitrary strides; with
//! `beta == 0` C is not read; an element of C gets the same bits however C is
//! split into blocks and whichever kernel the CPU runs; after a thread's first
//! call nothing is allocated (its packing buffers are thread-local).

/// `C[m,n] = alpha * A[m,k] @ B[k,n] + beta * C`, strides in elements.
///
/// # Safety
/// The pointers must be valid for the given sizes and strides.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn specc_sgemm(
    m: i64,
    k: i64,
    n: i64,
    alpha: f32,
    a: *const f32,
    rsa: i64,
    csa: i64,
    b: *const f32,
    rsb: i64,
    csb: i64,
    beta: f32,
    c: *mut f32,
    rsc: i64,
    csc: i64,
) {
    // SAFETY: the caller guarantees the pointers and strides.
    unsafe {
        specc_sgemm_ep(
            m,
            k,
            n,
            alpha,
            a,
            rsa,
            csa,
            b,
            rsb,
            csb,
            beta,
            c,
            rsc,
            csc,
            std::ptr::null(),
            0,
            0,
        )
    }
}

/// [`specc_sgemm`] with an epilogue applied to each tile of C after its
/// last k block: `c += bias[j * bias_stride]` when `bias` is not null, then
/// `c = c > 0 ? c : 0` when `relu != 0` ([`crate::sgemm::sgemm_ep`]).
///
/// # Safety
/// As for [`specc_sgemm`]; with a bias, `bias + j * bias_stride` must be
/// readable for every `j < n`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn specc_sgemm_ep(
    m: i64,
    k: i64,
    n: i64,
    alpha: f32,
    a: *const f32,
    rsa: i64,
    csa: i64,
    b: *const f32,
    rsb: i64,
    csb: i64,
    beta: f32,
    c: *mut f32,
    rsc: i64,
    csc: i64,
    bias: *const f32,
    bias_stride: i64,
    relu: i64,
) {
    if m <= 0 || n <= 0 {
        return;
    }
    // No bias and no relu: the plain product ([`specc_sgemm`]).
    let ep = (!bias.is_null() || relu != 0).then_some(crate::sgemm::Epilogue {
        bias,
        bias_stride: bias_stride as isize,
        relu: relu != 0,
    });
    // SAFETY: the caller guarantees the pointers and strides.
    unsafe {
        crate::sgemm::sgemm_ep(
            m as usize,
            k.max(0) as usize,
            n as usize,
            alpha,
            a,
            rsa as isize,
            csa as isize,
            b,
            rsb as isize,
            csb as isize,
            beta,
            c,
            rsc as isize,
            csc as isize,
            ep.as_ref(),
        )
    }
}

/// `count` products [`specc_sgemm`] with the same shape and strides, group
/// `g`'s A, B and C starting `g * stride_a`, `g * stride_b` and
/// `g * stride_c` elements after `a`, `b` and `c`, in one call
/// ([`crate::sgemm::sgemm_batched`]): the bits of a loop of `specc_sgemm`
/// calls over the groups. `count <= 0` does nothing.
///
/// # Safety
/// As for [`specc_sgemm`], for every group; the groups' Cs must not
/// overlap one another or any A or B.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn specc_sgemm_batched(
    m: i64,
    k: i64,
    n: i64,
    alpha: f32,
    a: *const f32,
    rsa: i64,
    csa: i64,
    b: *const f32,
    rsb: i64,
    csb: i64,
    beta: f32,
    c: *mut f32,
    rsc: i64,
    csc: i64,
    count: i64,
    stride_a: i64,
    stride_b: i64,
    stride_c: i64,
) {
    if m <= 0 || n <= 0 || count <= 0 {
        return;
    }
    let batch = crate::sgemm::Batch {
        count: count as usize,
        a: stride_a as isize,
        b: stride_b as isize,
        c: stride_c as isize,
    };
    // SAFETY: the caller guarantees the pointers and strides.
    unsafe {
        crate::sgemm::sgemm_batched(
            batch,
            m as usize,
            k.max(0) as usize,
            n as usize,
            alpha,
            a,
            rsa as isize,
            csa as isize,
            b,
            rsb as isize,
            csb as isize,
            beta,
            c,
            rsc as isize,
            csc as isize,
        )
    }
}
