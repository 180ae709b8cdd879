//! The session's memory blocks.
//!
//! Owns: [`AlignedBuf`], a zeroed, 64-byte aligned block that never moves.
//! Blocks of 2 MiB or more are mapped directly and, on Linux, marked for
//! transparent huge pages (`madvise(MADV_HUGEPAGE)`, 2 MiB aligned): a
//! bandwidth-bound update streams through several large arrays at once, and
//! with 4 KiB pages it spends much of its time on TLB misses and on the
//! hardware prefetcher stopping at every page boundary (the Adam update over
//! 16 Mi parameters runs about a fifth faster on huge pages).
//!
//! Also owns [`MemoryNeeds`], what a session will allocate, computed from the
//! layouts before anything is allocated, and [`available_memory`], what the
//! machine can give: a session that does not fit is refused with both
//! numbers instead of being killed halfway through.
//!
//! And [`keep_freed_memory`], the C allocator's setting for the input
//! pipeline's per-example buffers.
//!
//! Invariants: the contents start zeroed; the address is fixed for the
//! block's life; if the mapping or the advice fails the block falls back to
//! the ordinary allocator (huge pages are an optimization, never required);
//! an allocation that fails is an error, never an abort.

use std::alloc::{alloc_zeroed, dealloc, Layout as AllocLayout};
use std::fmt;

use crate::abi::{FunctionLayout, Layout};

/// Blocks at least this large are mapped (and advised to use huge pages).
const MAP_THRESHOLD: usize = 2 << 20;
/// The huge page size the mapping is aligned to.
const HUGE_PAGE: usize = 2 << 20;

/// A zeroed, 64-byte aligned allocation.
pub struct AlignedBuf {
    ptr: *mut u8,
    bytes: usize,
    /// `(base, length)` of the mapping when mapped, else `None` (heap).
    mapping: Option<(*mut u8, usize)>,
}

// The buffers are plain memory owned by their session.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed block of at least `bytes` bytes (rounded up to 64), or an
    /// error saying how much could not be had.
    pub fn zeroed(bytes: usize) -> Result<AlignedBuf, String> {
        let cannot = || format!("cannot allocate {}", human_bytes(bytes as u64));
        let bytes = bytes
            .max(64)
            .checked_next_multiple_of(64)
            .ok_or_else(cannot)?;
        if bytes >= MAP_THRESHOLD {
            if let Some(b) = map_huge(bytes) {
                return Ok(b);
            }
        }
        let layout = AllocLayout::from_size_align(bytes, 64).map_err(|_| cannot())?;
        // SAFETY: non-zero size, valid alignment.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(cannot());
        }
        Ok(AlignedBuf {
            ptr,
            bytes,
            mapping: None,
        })
    }
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
    pub fn f32s(&self) -> &[f32] {
        // SAFETY: the allocation holds `bytes` initialized bytes, 64-aligned.
        unsafe { std::slice::from_raw_parts(self.ptr as *const f32, self.bytes / 4) }
    }
    pub fn f32s_mut(&mut self) -> &mut [f32] {
        // SAFETY: as above, and we have unique access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut f32, self.bytes / 4) }
    }
    pub fn i32s(&self) -> &[i32] {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts(self.ptr as *const i32, self.bytes / 4) }
    }
    pub fn i32s_mut(&mut self) -> &mut [i32] {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut i32, self.bytes / 4) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        match self.mapping {
            Some((base, len)) => unmap(base, len),
            None => {
                let layout = AllocLayout::from_size_align(self.bytes, 64).expect("valid layout");
                // SAFETY: allocated with this layout in `zeroed`.
                unsafe { dealloc(self.ptr, layout) }
            }
        }
    }
}

/// An anonymous mapping (zero pages, untouched) with a 2 MiB aligned start,
/// advised to use huge pages.
#[cfg(target_os = "linux")]
fn map_huge(bytes: usize) -> Option<AlignedBuf> {
    let len = bytes
        .checked_next_multiple_of(HUGE_PAGE)?
        .checked_add(HUGE_PAGE)?;
    // SAFETY: a fresh private anonymous mapping; no existing memory is affected.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return None;
    }
    let base = base as *mut u8;
    let ptr = base.wrapping_add(base.align_offset(HUGE_PAGE));
    // SAFETY: the range lies inside the mapping; the advice is only a hint and
    // its failure (no THP support) changes nothing.
    unsafe {
        libc::madvise(
            ptr.cast(),
            bytes.div_ceil(HUGE_PAGE) * HUGE_PAGE,
            libc::MADV_HUGEPAGE,
        );
    }
    Some(AlignedBuf {
        ptr,
        bytes,
        mapping: Some((base, len)),
    })
}

#[cfg(not(target_os = "linux"))]
fn map_huge(_bytes: usize) -> Option<AlignedBuf> {
    None
}

#[cfg(target_os = "linux")]
fn unmap(base: *mut u8, len: usize) {
    // SAFETY: `base..base + len` is exactly the mapping made in `map_huge`.
    unsafe {
        libc::munmap(base.cast(), len);
    }
}

#[cfg(not(target_os = "linux"))]
fn unmap(_base: *mut u8, _len: usize) {}

/// What a session allocates, in bytes, by kind (each block rounded as
/// [`AlignedBuf::zeroed`] rounds it). Saturating: a size too large to
/// count is `u64::MAX`, which no machine has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryNeeds {
    /// Parameters, optimizer slots and variables, moving averages, constants.
    pub variables: u64,
    /// One batch of every input, at the compiled maximum batch.
    pub inputs: u64,
    /// Every function's outputs, at the maximum batch.
    pub outputs: u64,
    /// Every function's scratch memory for intermediates.
    pub scratch: u64,
}

impl MemoryNeeds {
    /// The blocks a [`crate::session::Session`] over `layout` and `functions` allocates.
    pub fn of(layout: &Layout, functions: &[FunctionLayout]) -> MemoryNeeds {
        let f32s = |n: usize| block(n as u64, 4);
        let batch = layout.max_batch as u64;
        MemoryNeeds {
            variables: sum(layout.arenas.iter().map(|a| f32s(a.len))),
            inputs: sum(layout
                .inputs
                .iter()
                .map(|i| block((i.per_example as u64).saturating_mul(batch), 4))),
            outputs: sum(functions.iter().flat_map(|f| {
                f.outputs.iter().map(|o| {
                    let per = o.per_example as u64;
                    block(
                        if o.batched {
                            per.saturating_mul(batch)
                        } else {
                            per
                        },
                        4,
                    )
                })
            })),
            scratch: sum(functions
                .iter()
                // The scratch block and the threads' barrier words.
                .map(|f| block(f.scratch_bytes as u64, 1).saturating_add(128))),
        }
    }

    pub fn total(&self) -> u64 {
        sum([self.variables, self.inputs, self.outputs, self.scratch].into_iter())
    }

    /// `Err` with both numbers when the machine's available memory
    /// ([`available_memory`]) is known and smaller than [`MemoryNeeds::total`].
    pub fn check_available(&self) -> Result<(), String> {
        match available_memory() {
            Some(have) if self.total() > have => Err(format!(
                "the model needs {self} of memory, but the machine has {} available",
                human_bytes(have)
            )),
            _ => Ok(()),
        }
    }
}

/// `2.0 GiB (variables 1.5 GiB, inputs 16 KiB, outputs 4 KiB, scratch 512 MiB)`.
impl fmt::Display for MemoryNeeds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (variables {}, inputs {}, outputs {}, scratch {})",
            human_bytes(self.total()),
            human_bytes(self.variables),
            human_bytes(self.inputs),
            human_bytes(self.outputs),
            human_bytes(self.scratch)
        )
    }
}

/// `count * size` bytes as one block: at least 64, a multiple of 64.
fn block(count: u64, size: u64) -> u64 {
    let b = count.saturating_mul(size).max(64);
    b.checked_next_multiple_of(64).unwrap_or(u64::MAX)
}

fn sum(sizes: impl Iterator<Item = u64>) -> u64 {
    sizes.fold(0, u64::saturating_add)
}

/// Bytes in binary units with one decimal (`512 B`, `1.5 KiB`, `2.0 GiB`).
pub fn human_bytes(n: u64) -> String {
    if n == u64::MAX {
        return "more than 16 EiB".into();
    }
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// The memory the machine can give a new session: Linux's `MemAvailable`
/// (free memory plus what the kernel can reclaim without swapping), else
/// `None` (unknown: allocation failures are still errors).
pub fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Largest block the C allocator serves from its heaps rather than mapping
/// it afresh (a decoded 224×224 image is 150 KB, its float32 batch row 600 KB).
const KEEP_BELOW: i32 = 16 << 20;
/// Free heap memory the C allocator keeps instead of returning it to the OS.
const KEEP_FREED: i32 = 256 << 20;

/// Asks the C allocator (glibc) to keep freed memory for reuse: blocks below
/// 16 MiB come from its heaps, and up to 256 MiB of freed heap stays mapped.
/// The input pipeline allocates and frees an image buffer per example; with
/// glibc's defaults each one is mapped and unmapped again, and the page
/// faults of the fresh pages took a third of the time of decoding, resizing
/// and cropping a 224×224 JPEG (2,900 → 4,200 images/s on two cores). A
/// process-wide setting: the CLI calls it once at start; a library user may.
/// Does nothing on other C libraries.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; called before the
    // program's threads allocate concurrently (and glibc locks anyway).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, KEEP_BELOW);
        libc::mallopt(libc::M_TRIM_THRESHOLD, KEEP_FREED);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_and_small_blocks_are_zeroed_aligned_and_writable() {
        for bytes in [4, 1000, MAP_THRESHOLD, MAP_THRESHOLD + 12345] {
            let mut b = AlignedBuf::zeroed(bytes).unwrap();
            assert_eq!(b.as_ptr() as usize % 64, 0);
            assert!(b.f32s().len() * 4 >= bytes);
            assert!(b.f32s().iter().all(|&x| x == 0.0));
            let n = b.f32s().len();
            b.f32s_mut()[n - 1] = 1.0;
            assert_eq!(b.f32s()[n - 1], 1.0);
        }
    }

    #[test]
    fn a_block_that_cannot_be_had_is_an_error() {
        for bytes in [usize::MAX, usize::MAX / 2, 1 << 62] {
            let e = AlignedBuf::zeroed(bytes)
                .err()
                .expect("no machine has this");
            assert!(e.starts_with("cannot allocate "), "{e}");
        }
    }

    #[test]
    fn human_bytes_reads_at_a_glance() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
        assert_eq!(human_bytes(u64::MAX), "more than 16 EiB");
    }
}
