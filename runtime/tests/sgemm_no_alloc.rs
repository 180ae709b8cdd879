//! No heap allocation after warm-up: the counting global allocator sees zero
//! allocations over 100 calls that follow a first call, for every kernel (with a bias + relu epilogue) and
//! for packed and in-place paths alike.

use specc_runtime::sgemm::{sgemm, sgemm_ep_with, Epilogue, Isa};
use specc_testkit::alloc::thread_allocations as allocations;

/// (m, k, n, A transposed, B transposed): in-place and packed operands,
/// transposing packs, several k blocks, several packed-A chunks.
const SHAPES: &[(usize, usize, usize, bool, bool)] = &[
    (64, 64, 128, false, false),
    (64, 128, 10, false, false),
    (64, 10, 128, false, true),
    (128, 64, 10, true, false),
    (40, 1100, 100, false, false),
    (70, 600, 50, true, true),
    (1100, 8, 40, false, false),
    (7, 3, 5, false, false),
];

#[test]
fn no_allocation_after_warm_up() {
    let isas: Vec<Isa> = [Isa::Avx512, Isa::Avx2, Isa::Scalar]
        .into_iter()
        .filter(|i| i.is_available())
        .collect();
    let big = 1100 * 1100;
    let a: Vec<f32> = (0..big).map(|i| (i % 7) as f32 * 0.25).collect();
    let b: Vec<f32> = (0..big).map(|i| (i % 5) as f32 * 0.5).collect();
    let mut c = vec![0.0f32; big];
    let call = |isa: Option<Isa>,
                c: &mut [f32],
                &(m, k, n, at, bt): &(usize, usize, usize, bool, bool)| {
        let (rsa, csa) = if at { (1, m as isize) } else { (k as isize, 1) };
        let (rsb, csb) = if bt { (1, k as isize) } else { (n as isize, 1) };
        unsafe {
            match isa {
                // The kernels chosen explicitly also run a bias + relu
                // epilogue (what fused dense layers call).
                Some(isa) => sgemm_ep_with(
                    isa,
                    m,
                    k,
                    n,
                    1.0,
                    a.as_ptr(),
                    rsa,
                    csa,
                    b.as_ptr(),
                    rsb,
                    csb,
                    0.5,
                    c.as_mut_ptr(),
                    n as isize,
                    1,
                    Some(&Epilogue {
                        bias: a.as_ptr(),
                        bias_stride: 1,
                        relu: true,
                    }),
                ),
                None => sgemm(
                    m,
                    k,
                    n,
                    1.0,
                    a.as_ptr(),
                    rsa,
                    csa,
                    b.as_ptr(),
                    rsb,
                    csb,
                    0.5,
                    c.as_mut_ptr(),
                    n as isize,
                    1,
                ),
            }
        }
    };
    // Warm-up: the first call on this thread allocates the packing buffers
    // (and feature detection may initialise its cache).
    for &isa in &isas {
        for s in SHAPES {
            call(Some(isa), &mut c, s);
        }
    }
    call(None, &mut c, &SHAPES[0]);
    let before = allocations();
    for r in 0..100 {
        let s = &SHAPES[r % SHAPES.len()];
        call(None, &mut c, s);
        for &isa in &isas {
            call(Some(isa), &mut c, s);
        }
    }
    let after = allocations();
    assert_eq!(
        after - before,
        0,
        "sgemm allocated {} times after warm-up",
        after - before
    );
}

#[test]
fn each_thread_allocates_its_buffers_once() {
    // A fresh thread: its first packing call allocates, later calls do not.
    std::thread::spawn(|| {
        // B is A^T (column-major): always packed.
        let (m, k) = (64, 600);
        let a = vec![1.0f32; m * k];
        let mut c = vec![0.0f32; m * m];
        let run = |c: &mut Vec<f32>| unsafe {
            let (a, c, ki, mi) = (a.as_ptr(), c.as_mut_ptr(), k as isize, m as isize);
            sgemm(m, k, m, 1.0, a, ki, 1, a, 1, ki, 0.0, c, mi, 1)
        };
        let first = allocations();
        run(&mut c);
        // The counter works: the first packing call allocated the buffers.
        assert!(allocations() > first, "warm-up did not allocate");
        let before = allocations();
        for _ in 0..100 {
            run(&mut c);
        }
        assert_eq!(allocations() - before, 0);
        assert!(c.iter().all(|&x| x == k as f32));
    })
    .join()
    .unwrap();
}

/// The strided batch allocates nothing after warm-up either: attention's
/// `q @ k^T` (B transposed: packed per group) and a shared, packed B
/// (group stride 0), 32 groups a call, with every kernel.
#[test]
fn batched_products_allocate_nothing_after_warm_up() {
    use specc_runtime::sgemm::{sgemm_batched_with, Batch};
    let (groups, m, k) = (32usize, 64usize, 32usize);
    let a: Vec<f32> = (0..groups * m * k).map(|i| (i % 7) as f32 * 0.25).collect();
    let mut c = vec![0.0f32; groups * m * m];
    let isas: Vec<Isa> = [Isa::Avx512, Isa::Avx2, Isa::Scalar]
        .into_iter()
        .filter(|i| i.is_available())
        .collect();
    let run = |isa: Isa, c: &mut [f32], shared_b: bool| unsafe {
        let stride = (m * k) as isize;
        let batch = Batch {
            count: groups,
            a: stride,
            b: if shared_b { 0 } else { stride },
            c: (m * m) as isize,
        };
        let (ki, mi) = (k as isize, m as isize);
        let (pa, pc) = (a.as_ptr(), c.as_mut_ptr());
        sgemm_batched_with(
            isa, batch, m, k, m, 1.0, pa, ki, 1, pa, 1, ki, 0.0, pc, mi, 1,
        )
    };
    for &isa in &isas {
        run(isa, &mut c, false);
        run(isa, &mut c, true);
    }
    let before = allocations();
    for _ in 0..20 {
        for &isa in &isas {
            run(isa, &mut c, false);
            run(isa, &mut c, true);
        }
    }
    assert_eq!(allocations() - before, 0, "sgemm_batched allocated");
    assert!(c.iter().all(|x| x.is_finite()) && c.iter().any(|&x| x != 0.0));
}
