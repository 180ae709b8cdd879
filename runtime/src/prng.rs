//! splitmix64: the one random stream behind every seed in specc.
//!
//! This is exactly the "bench PRNG" of the benchmark definitions
//! (`WORKLOADS.md`, "Common definitions"): a stream with state `seed` whose
//! output number k (k = 1, 2, ...) is `mix(seed + k * 0x9E3779B97F4A7C15)`
//! with wrapping u64 arithmetic. Everything random in specc (initializers,
//! synthetic data, batch order, held-out split) is derived from such streams,
//! so that a spec reproduces the benchmark arrays bit for bit.
//!
//! Invariants:
//! - the state only ever advances by the golden-ratio increment, so output k
//!   of a stream is a pure function of `(seed, k)` ([`SplitMix64::output`]);
//! - every conversion to floating point below consumes a fixed number of
//!   outputs (one per uniform, two per normal), so the position of element i
//!   in a stream is known in advance.

/// The splitmix64 increment (2^64 / golden ratio, odd).
pub const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

const M1: u64 = 0xBF58_476D_1CE4_E5B9;
const M2: u64 = 0x94D0_49BB_1331_11EB;

/// 2^-24 (exact in f32).
const TWO_POW_M24: f32 = 1.0 / 16_777_216.0;
/// 2^-53 (exact in f64).
const TWO_POW_M53: f64 = 1.0 / 9_007_199_254_740_992.0;

/// The splitmix64 finalizer.
#[inline]
pub fn mix(z: u64) -> u64 {
    let z = (z ^ (z >> 30)).wrapping_mul(M1);
    let z = (z ^ (z >> 27)).wrapping_mul(M2);
    z ^ (z >> 31)
}

/// `uniform01_f32` of one output: `(z >> 40) * 2^-24`, exact, in `[0, 1)`.
#[inline]
pub fn u64_to_uniform01_f32(z: u64) -> f32 {
    (z >> 40) as f32 * TWO_POW_M24
}

/// `(z >> 11) * 2^-53`, exact, in `[0, 1)`.
#[inline]
pub fn u64_to_uniform01_f64(z: u64) -> f64 {
    (z >> 11) as f64 * TWO_POW_M53
}

/// The Box–Muller transform of two outputs: `u1 = ((z1 >> 11) + 1) * 2^-53`
/// in `(0, 1]`, `u2 = (z2 >> 11) * 2^-53` in `[0, 1)`, result
/// `sqrt(-2 ln u1) * cos(2π u2)`. Finite for every input (|n| < 8.6).
#[inline]
pub fn box_muller(z1: u64, z2: u64) -> f64 {
    let u1 = ((z1 >> 11) + 1) as f64 * TWO_POW_M53;
    let u2 = (z2 >> 11) as f64 * TWO_POW_M53;
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A splitmix64 stream. `next_u64` returns outputs 1, 2, 3, ... of the stream
/// with state `seed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// The stream with state `seed`, positioned before output 1.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// Output number `k` (k >= 1) of the stream with state `seed`, without
    /// building a stream (random access).
    #[inline]
    pub fn output(seed: u64, k: u64) -> u64 {
        mix(seed.wrapping_add(k.wrapping_mul(GAMMA)))
    }

    /// The stream's state (the seed advanced once per output drawn): with
    /// [`SplitMix64::new`], saves and restores the position in the stream.
    pub fn state(&self) -> u64 {
        self.state
    }

    /// The next output.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GAMMA);
        mix(self.state)
    }

    /// A uniform float32 in `[0, 1)` from one output: `(z >> 40) * 2^-24`
    /// (24 random bits, exact).
    #[inline]
    pub fn uniform01_f32(&mut self) -> f32 {
        u64_to_uniform01_f32(self.next_u64())
    }

    /// A uniform float64 in `[0, 1)` from one output: `(z >> 11) * 2^-53`
    /// (53 random bits, exact).
    #[inline]
    pub fn uniform01_f64(&mut self) -> f64 {
        u64_to_uniform01_f64(self.next_u64())
    }

    /// A standard normal by Box–Muller from the next two outputs z1, z2 (see
    /// [`box_muller`]). Exactly one normal is produced per pair of outputs:
    /// the sine half of the transform is discarded, so normal number i of a
    /// fresh stream uses outputs 2i+1 and 2i+2.
    #[inline]
    pub fn normal_f64(&mut self) -> f64 {
        let z1 = self.next_u64();
        let z2 = self.next_u64();
        box_muller(z1, z2)
    }

    /// Skip `n` outputs (as if `next_u64` had been called `n` times).
    #[inline]
    pub fn skip(&mut self, n: u64) {
        self.state = self.state.wrapping_add(n.wrapping_mul(GAMMA));
    }
}

/// 64-bit FNV-1a of `bytes` (offset basis 0xcbf29ce484222325, prime
/// 0x100000001b3). Used to derive default seeds from names.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}
