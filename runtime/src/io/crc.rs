//! CRC32C (Castagnoli) and TF's masked CRC, as `tensorflow/core/lib/hash/crc32c.h`
//! defines it: `((crc >> 15) | (crc << 17)) + 0xa282ead8`.
//!
//! Owns: the checksums of TFRecord frames, leveldb table blocks and
//! checkpoint tensors. The arithmetic is the `crc32c` crate's (SSE4.2 where
//! the CPU has it).

const MASK_DELTA: u32 = 0xa282_ead8;

/// CRC32C of `bytes`.
#[inline]
pub fn crc32c(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes)
}

/// CRC32C of the concatenation, continuing from `crc` (the CRC of what came before).
#[inline]
pub fn extend(crc: u32, bytes: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, bytes)
}

/// TF's mask of a CRC (stored CRCs are masked so that a CRC of data holding
/// CRCs is not degenerate).
#[inline]
pub fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// The inverse of [`mask`].
#[inline]
pub fn unmask(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

/// `mask(crc32c(bytes))`.
#[inline]
pub fn masked_crc32c(bytes: &[u8]) -> u32 {
    mask(crc32c(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_check_value() {
        // The standard check value of CRC-32C.
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(extend(crc32c(b"1234"), b"56789"), 0xe306_9283);
    }

    #[test]
    fn mask_round_trips() {
        for c in [0u32, 1, 0xe306_9283, u32::MAX] {
            assert_eq!(unmask(mask(c)), c);
        }
        assert_ne!(mask(0xe306_9283), 0xe306_9283);
    }
}
