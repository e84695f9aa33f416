//! Distance kernels over `f32` slices (the second one also as float16) and bit-packed binary vectors,
//! with the instruction set picked once at run time: AVX-512F, AVX2 + FMA (+ F16C for float16), NEON,
//! or a portable scalar fallback.
//!
//! Every kernel accumulates in `f32` across several independent lanes; tests compare each instruction
//! set with a float64 reference.

use std::sync::OnceLock;

/// The primitive reductions every float metric is built from.
#[derive(Debug, Clone, Copy)]
pub struct Kernels {
    /// Which instruction set these are.
    pub isa: &'static str,
    /// Σ (aᵢ − bᵢ)²
    pub l2_squared: fn(&[f32], &[f32]) -> f32,
    /// Σ aᵢ·bᵢ
    pub dot: fn(&[f32], &[f32]) -> f32,
    /// Σ |aᵢ − bᵢ|
    pub l1: fn(&[f32], &[f32]) -> f32,
    /// (Σ aᵢ·bᵢ, Σ bᵢ²) in one pass, for cosine against a query whose norm is known.
    pub dot_and_norm: fn(&[f32], &[f32]) -> (f32, f32),
}

/// The fastest kernels this CPU runs.
pub fn kernels() -> &'static Kernels {
    static SELECTED: OnceLock<Kernels> = OnceLock::new();
    SELECTED.get_or_init(|| *available().last().expect("the scalar kernels are always available"))
}

/// Every instruction set this CPU runs, slowest (scalar) first.
pub fn available() -> Vec<Kernels> {
    #[allow(unused_mut)]
    let mut all = vec![SCALAR];
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            all.push(x86::AVX2);
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            all.push(x86::AVX512);
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        if std::arch::is_aarch64_feature_detected!("neon") {
            all.push(neon::NEON);
        }
    }
    all
}

/// The same reductions with the second vector stored narrower than `f32` (`T`: float16 bits, or int8
/// quantized values), for rows stored so: each row is read at its own width and widened in registers.
#[derive(Debug, Clone, Copy)]
pub struct NarrowKernels<T: 'static> {
    pub isa: &'static str,
    pub l2_squared: fn(&[f32], &[T]) -> f32,
    pub dot: fn(&[f32], &[T]) -> f32,
    pub l1: fn(&[f32], &[T]) -> f32,
    pub dot_and_norm: fn(&[f32], &[T]) -> (f32, f32),
}

/// Kernels over float16 rows (their `f16` bits).
pub type HalfKernels = NarrowKernels<u16>;
/// Kernels over int8 rows.
pub type ByteKernels = NarrowKernels<i8>;

/// Float16 kernels where this CPU widens in registers (x86-64 with AVX2, FMA and F16C); None elsewhere,
/// where callers widen rows to `f32` first and use [`kernels`].
pub fn half_kernels() -> Option<&'static HalfKernels> {
    static SELECTED: OnceLock<Option<HalfKernels>> = OnceLock::new();
    #[cfg(target_arch = "x86_64")]
    return SELECTED.get_or_init(|| x86::widens().then_some(x86::AVX2_F16C)).as_ref();
    #[cfg(not(target_arch = "x86_64"))]
    SELECTED.get_or_init(|| None).as_ref()
}

/// Int8 kernels where this CPU widens in registers; None elsewhere (see [`half_kernels`]).
pub fn byte_kernels() -> Option<&'static ByteKernels> {
    static SELECTED: OnceLock<Option<ByteKernels>> = OnceLock::new();
    #[cfg(target_arch = "x86_64")]
    return SELECTED.get_or_init(|| x86::widens().then_some(x86::AVX2_I8)).as_ref();
    #[cfg(not(target_arch = "x86_64"))]
    SELECTED.get_or_init(|| None).as_ref()
}

// ---- scalar --------------------------------------------------------------------------------------

const LANES: usize = 8;

/// Portable kernels: eight independent accumulators, which the compiler keeps in registers.
pub const SCALAR: Kernels = Kernels {
    isa: "scalar",
    l2_squared: scalar_l2_squared,
    dot: scalar_dot,
    l1: scalar_l1,
    dot_and_norm: scalar_dot_and_norm,
};

#[inline(always)]
fn lanes_reduce(a: &[f32], b: &[f32], f: impl Fn(f32, f32) -> f32) -> f32 {
    assert_eq!(a.len(), b.len(), "vectors of different lengths");
    let mut acc = [0f32; LANES];
    let (ca, ta) = a.split_at(a.len() - a.len() % LANES);
    let (cb, tb) = b.split_at(ca.len());
    for (x, y) in ca.chunks_exact(LANES).zip(cb.chunks_exact(LANES)) {
        for i in 0..LANES {
            acc[i] += f(x[i], y[i]);
        }
    }
    let mut sum = acc.iter().sum::<f32>();
    for (x, y) in ta.iter().zip(tb) {
        sum += f(*x, *y);
    }
    sum
}

fn scalar_l2_squared(a: &[f32], b: &[f32]) -> f32 {
    lanes_reduce(a, b, |x, y| (x - y) * (x - y))
}

fn scalar_dot(a: &[f32], b: &[f32]) -> f32 {
    lanes_reduce(a, b, |x, y| x * y)
}

fn scalar_l1(a: &[f32], b: &[f32]) -> f32 {
    lanes_reduce(a, b, |x, y| (x - y).abs())
}

fn scalar_dot_and_norm(a: &[f32], b: &[f32]) -> (f32, f32) {
    (scalar_dot(a, b), scalar_dot(b, b))
}

// ---- x86_64 ----------------------------------------------------------------------------------------

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{ByteKernels, HalfKernels, Kernels};

    pub const AVX2: Kernels = Kernels {
        isa: "avx2+fma",
        l2_squared: |a, b| unsafe { avx2_l2_squared(a, b) },
        dot: |a, b| unsafe { avx2_dot(a, b) },
        l1: |a, b| unsafe { avx2_l1(a, b) },
        dot_and_norm: |a, b| unsafe { avx2_dot_and_norm(a, b) },
    };

    pub const AVX512: Kernels = Kernels {
        isa: "avx512f",
        l2_squared: |a, b| unsafe { avx512_l2_squared(a, b) },
        dot: |a, b| unsafe { avx512_dot(a, b) },
        l1: |a, b| unsafe { avx512_l1(a, b) },
        dot_and_norm: |a, b| unsafe { avx512_dot_and_norm(a, b) },
    };

    // SAFETY (every function below): callers reach them only through the tables above, which
    // `available()` returns only after detecting the named CPU features. Loads are unaligned
    // (`loadu`) and stay within `i + width <= n`, where `n` is the shorter slice's length checked
    // equal to the other's; the tail is summed element by element.

    #[inline(always)]
    unsafe fn hsum256(v: __m256) -> f32 {
        let lo = _mm256_castps256_ps128(v);
        let hi = _mm256_extractf128_ps(v, 1);
        let s = _mm_add_ps(lo, hi);
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
        _mm_cvtss_f32(s)
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2_dot_and_norm(a: &[f32], b: &[f32]) -> (f32, f32) {
        (avx2_dot(a, b), avx2_norm(a, b))
    }

    macro_rules! avx512_reduce {
        ($name:ident, |$x:ident, $y:ident, $acc:ident| $step:expr, |$sx:ident, $sy:ident| $tail:expr) => {
            #[target_feature(enable = "avx512f")]
            unsafe fn $name(a: &[f32], b: &[f32]) -> f32 {
                assert_eq!(a.len(), b.len(), "vectors of different lengths");
                let n = a.len();
                let (pa, pb) = (a.as_ptr(), b.as_ptr());
                let mut acc0 = _mm512_setzero_ps();
                let mut acc1 = _mm512_setzero_ps();
                let mut i = 0;
                while i + 32 <= n {
                    {
                        let $x = _mm512_loadu_ps(pa.add(i));
                        let $y = _mm512_loadu_ps(pb.add(i));
                        let $acc = acc0;
                        acc0 = $step;
                    }
                    {
                        let $x = _mm512_loadu_ps(pa.add(i + 16));
                        let $y = _mm512_loadu_ps(pb.add(i + 16));
                        let $acc = acc1;
                        acc1 = $step;
                    }
                    i += 32;
                }
                while i + 16 <= n {
                    let $x = _mm512_loadu_ps(pa.add(i));
                    let $y = _mm512_loadu_ps(pb.add(i));
                    let $acc = acc0;
                    acc0 = $step;
                    i += 16;
                }
                let mut sum = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
                while i < n {
                    let ($sx, $sy) = (*a.get_unchecked(i), *b.get_unchecked(i));
                    sum += $tail;
                    i += 1;
                }
                sum
            }
        };
    }

    avx512_reduce!(
        avx512_l2_squared,
        |x, y, acc| {
            let d = _mm512_sub_ps(x, y);
            _mm512_fmadd_ps(d, d, acc)
        },
        |x, y| (x - y) * (x - y)
    );

    avx512_reduce!(avx512_dot, |x, y, acc| _mm512_fmadd_ps(x, y, acc), |x, y| x * y);

    avx512_reduce!(avx512_l1, |x, y, acc| _mm512_add_ps(acc, _mm512_abs_ps(_mm512_sub_ps(x, y))), |x, y| (x - y).abs());

    avx512_reduce!(avx512_norm, |_x, y, acc| _mm512_fmadd_ps(y, y, acc), |_x, y| y * y);

    #[target_feature(enable = "avx512f")]
    unsafe fn avx512_dot_and_norm(a: &[f32], b: &[f32]) -> (f32, f32) {
        (avx512_dot(a, b), avx512_norm(a, b))
    }

    /// Whether this CPU runs the narrow-row kernels.
    pub fn widens() -> bool {
        is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") && is_x86_feature_detected!("f16c")
    }

    pub const AVX2_F16C: HalfKernels = HalfKernels {
        isa: "avx2+fma+f16c",
        l2_squared: |a, b| unsafe { half_l2_squared(a, b) },
        dot: |a, b| unsafe { half_dot(a, b) },
        l1: |a, b| unsafe { half_l1(a, b) },
        dot_and_norm: |a, b| unsafe { (half_dot(a, b), half_norm(a, b)) },
    };

    pub const AVX2_I8: ByteKernels = ByteKernels {
        isa: "avx2+fma",
        l2_squared: |a, b| unsafe { byte_l2_squared(a, b) },
        dot: |a, b| unsafe { byte_dot(a, b) },
        l1: |a, b| unsafe { byte_l1(a, b) },
        dot_and_norm: |a, b| unsafe { (byte_dot(a, b), byte_norm(a, b)) },
    };

    /// Eight float16 values at `p` widened to f32.
    #[inline(always)]
    unsafe fn load_half(p: *const u16) -> __m256 {
        _mm256_cvtph_ps(_mm_loadu_si128(p.cast()))
    }

    /// Eight int8 values at `p` widened to f32.
    #[inline(always)]
    unsafe fn load_byte(p: *const i8) -> __m256 {
        _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(p.cast())))
    }

    fn widen_half(v: u16) -> f32 {
        half::f16::from_bits(v).to_f32()
    }

    fn widen_byte(v: i8) -> f32 {
        v as f32
    }

    /// One reduction over 8-lane AVX2 registers, two accumulators, the second slice's elements of type
    /// `$t` loaded 8 at a time as f32 by `$load` (the tail one at a time by `$widen`).
    macro_rules! reduce {
        ($feature:literal, $name:ident, $t:ty, $load:ident, $widen:ident, |$x:ident, $y:ident, $acc:ident| $step:expr, |$sx:ident, $sy:ident| $tail:expr) => {
            #[target_feature(enable = $feature)]
            unsafe fn $name(a: &[f32], b: &[$t]) -> f32 {
                assert_eq!(a.len(), b.len(), "vectors of different lengths");
                let n = a.len();
                let (pa, pb) = (a.as_ptr(), b.as_ptr());
                let mut acc0 = _mm256_setzero_ps();
                let mut acc1 = _mm256_setzero_ps();
                let mut i = 0;
                while i + 16 <= n {
                    {
                        let ($x, $y, $acc) = (_mm256_loadu_ps(pa.add(i)), $load(pb.add(i)), acc0);
                        acc0 = $step;
                    }
                    {
                        let ($x, $y, $acc) = (_mm256_loadu_ps(pa.add(i + 8)), $load(pb.add(i + 8)), acc1);
                        acc1 = $step;
                    }
                    i += 16;
                }
                while i + 8 <= n {
                    let ($x, $y, $acc) = (_mm256_loadu_ps(pa.add(i)), $load(pb.add(i)), acc0);
                    acc0 = $step;
                    i += 8;
                }
                let mut sum = hsum256(_mm256_add_ps(acc0, acc1));
                while i < n {
                    let ($sx, $sy) = (*a.get_unchecked(i), $widen(*b.get_unchecked(i)));
                    sum += $tail;
                    i += 1;
                }
                sum
            }
        };
    }

    /// The four reductions over rows of one element type.
    macro_rules! kernel_set {
        ($feature:literal, $t:ty, $load:ident, $widen:ident, $l2:ident, $dot:ident, $l1:ident, $norm:ident) => {
            reduce!(
                $feature,
                $l2,
                $t,
                $load,
                $widen,
                |x, y, acc| {
                    let d = _mm256_sub_ps(x, y);
                    _mm256_fmadd_ps(d, d, acc)
                },
                |x, y| (x - y) * (x - y)
            );
            reduce!($feature, $dot, $t, $load, $widen, |x, y, acc| _mm256_fmadd_ps(x, y, acc), |x, y| x * y);
            reduce!(
                $feature,
                $l1,
                $t,
                $load,
                $widen,
                |x, y, acc| {
                    let d = _mm256_sub_ps(x, y);
                    _mm256_add_ps(acc, _mm256_andnot_ps(_mm256_set1_ps(-0.0), d))
                },
                |x, y| (x - y).abs()
            );
            reduce!($feature, $norm, $t, $load, $widen, |_x, y, acc| _mm256_fmadd_ps(y, y, acc), |_x, y| y * y);
        };
    }

    /// Eight f32 values at `p`.
    #[inline(always)]
    unsafe fn load_f32(p: *const f32) -> __m256 {
        _mm256_loadu_ps(p)
    }

    fn widen_f32(v: f32) -> f32 {
        v
    }

    kernel_set!("avx2,fma", f32, load_f32, widen_f32, avx2_l2_squared, avx2_dot, avx2_l1, avx2_norm);
    kernel_set!("avx2,fma,f16c", u16, load_half, widen_half, half_l2_squared, half_dot, half_l1, half_norm);
    kernel_set!("avx2,fma", i8, load_byte, widen_byte, byte_l2_squared, byte_dot, byte_l1, byte_norm);
}

// ---- aarch64 ---------------------------------------------------------------------------------------

#[cfg(target_arch = "aarch64")]
mod neon {
    use std::arch::aarch64::*;

    use super::Kernels;

    pub const NEON: Kernels = Kernels {
        isa: "neon",
        l2_squared: |a, b| unsafe { neon_l2_squared(a, b) },
        dot: |a, b| unsafe { neon_dot(a, b) },
        l1: |a, b| unsafe { neon_l1(a, b) },
        dot_and_norm: |a, b| unsafe { (neon_dot(a, b), neon_dot(b, b)) },
    };

    // SAFETY: reached only after NEON was detected; loads stay within `i + 4 <= n`.
    macro_rules! neon_reduce {
        ($name:ident, |$x:ident, $y:ident, $acc:ident| $step:expr, |$sx:ident, $sy:ident| $tail:expr) => {
            #[target_feature(enable = "neon")]
            unsafe fn $name(a: &[f32], b: &[f32]) -> f32 {
                assert_eq!(a.len(), b.len(), "vectors of different lengths");
                let n = a.len();
                let (pa, pb) = (a.as_ptr(), b.as_ptr());
                let mut acc0 = vdupq_n_f32(0.0);
                let mut acc1 = vdupq_n_f32(0.0);
                let mut i = 0;
                while i + 8 <= n {
                    {
                        let ($x, $y, $acc) = (vld1q_f32(pa.add(i)), vld1q_f32(pb.add(i)), acc0);
                        acc0 = $step;
                    }
                    {
                        let ($x, $y, $acc) = (vld1q_f32(pa.add(i + 4)), vld1q_f32(pb.add(i + 4)), acc1);
                        acc1 = $step;
                    }
                    i += 8;
                }
                let mut sum = vaddvq_f32(vaddq_f32(acc0, acc1));
                while i < n {
                    let ($sx, $sy) = (*a.get_unchecked(i), *b.get_unchecked(i));
                    sum += $tail;
                    i += 1;
                }
                sum
            }
        };
    }

    neon_reduce!(
        neon_l2_squared,
        |x, y, acc| {
            let d = vsubq_f32(x, y);
            vfmaq_f32(acc, d, d)
        },
        |x, y| (x - y) * (x - y)
    );
    neon_reduce!(neon_dot, |x, y, acc| vfmaq_f32(acc, x, y), |x, y| x * y);
    neon_reduce!(neon_l1, |x, y, acc| vaddq_f32(acc, vabdq_f32(x, y)), |x, y| (x - y).abs());
}

// ---- binary vectors -------------------------------------------------------------------------------

/// Number of differing bits between two bit-packed vectors.
pub fn hamming(a: &[u8], b: &[u8]) -> u32 {
    assert_eq!(a.len(), b.len(), "vectors of different lengths");
    let (wa, ta) = a.split_at(a.len() - a.len() % 8);
    let (wb, tb) = b.split_at(wa.len());
    let words = wa
        .chunks_exact(8)
        .zip(wb.chunks_exact(8))
        .map(|(x, y)| {
            (u64::from_le_bytes(x.try_into().unwrap()) ^ u64::from_le_bytes(y.try_into().unwrap())).count_ones()
        })
        .sum::<u32>();
    words + ta.iter().zip(tb).map(|(x, y)| (x ^ y).count_ones()).sum::<u32>()
}

/// Jaccard distance between two bit-packed sets: 1 − |a ∧ b| / |a ∨ b|; 0 when both are empty.
pub fn jaccard(a: &[u8], b: &[u8]) -> f32 {
    assert_eq!(a.len(), b.len(), "vectors of different lengths");
    let (mut both, mut either) = (0u32, 0u32);
    for (x, y) in a.iter().zip(b) {
        both += (x & y).count_ones();
        either += (x | y).count_ones();
    }
    if either == 0 {
        0.0
    } else {
        1.0 - both as f32 / either as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::test_values as values;

    fn close(got: f32, want: f64, scale: f64) {
        let tolerance = 1e-5 * scale.max(1.0);
        assert!((got as f64 - want).abs() <= tolerance, "got {got}, want {want} (±{tolerance})");
    }

    #[test]
    fn every_instruction_set_matches_a_float64_reference() {
        let sets = available();
        assert_eq!(sets[0].isa, "scalar");
        for dim in (1..=70).chain([127, 128, 255, 768, 1023, 1536, 2048]) {
            let a = values(dim as u64, dim);
            let b = values(dim as u64 + 1000, dim);
            let l2: f64 = a.iter().zip(&b).map(|(x, y)| (*x as f64 - *y as f64).powi(2)).sum();
            let dot: f64 = a.iter().zip(&b).map(|(x, y)| *x as f64 * *y as f64).sum();
            let l1: f64 = a.iter().zip(&b).map(|(x, y)| (*x as f64 - *y as f64).abs()).sum();
            let norm: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum();
            for k in &sets {
                let scale = dim as f64;
                close((k.l2_squared)(&a, &b), l2, scale);
                close((k.dot)(&a, &b), dot, scale);
                close((k.l1)(&a, &b), l1, scale);
                let (d, n) = (k.dot_and_norm)(&a, &b);
                close(d, dot, scale);
                close(n, norm, scale);
            }
        }
        println!("kernels available: {:?}", sets.iter().map(|k| k.isa).collect::<Vec<_>>());
    }

    /// Narrow kernels against the f32 kernels over the same rows widened.
    fn check_narrow<T: Copy>(narrow: &NarrowKernels<T>, narrowed: impl Fn(f32) -> T, widen: impl Fn(T) -> f32) {
        let f32s = kernels();
        for dim in (1..=40).chain([127, 128, 768, 1023]) {
            let a = values(dim as u64, dim);
            let row: Vec<T> = values(dim as u64 + 7, dim).iter().map(|v| narrowed(*v)).collect();
            let b: Vec<f32> = row.iter().map(|v| widen(*v)).collect();
            // Both sum the same f32 terms, perhaps in another order: equal to rounding of the sum's size.
            let same = |got: f32, want: f32| close(got, want as f64, want.abs() as f64 + dim as f64);
            same((narrow.l2_squared)(&a, &row), (f32s.l2_squared)(&a, &b));
            same((narrow.dot)(&a, &row), (f32s.dot)(&a, &b));
            same((narrow.l1)(&a, &row), (f32s.l1)(&a, &b));
            let (d, n) = (narrow.dot_and_norm)(&a, &row);
            let (want_d, want_n) = (f32s.dot_and_norm)(&a, &b);
            same(d, want_d);
            same(n, want_n);
        }
        println!("narrow kernels: {}", narrow.isa);
    }

    #[test]
    fn narrow_row_kernels_match_the_f32_kernels_on_widened_rows() {
        match (half_kernels(), byte_kernels()) {
            (Some(half), Some(byte)) => {
                check_narrow(half, |v| half::f16::from_f32(v).to_bits(), |h| half::f16::from_bits(h).to_f32());
                check_narrow(byte, |v| (v * 127.0).round() as i8, |b| b as f32);
            }
            _ => println!("no narrow-row kernels on this CPU: rows are widened to f32 first"),
        }
    }

    #[test]
    fn binary_metrics_count_bits() {
        let a = [0b1011_0000u8, 0xFF, 0, 0, 0, 0, 0, 0, 0b1];
        let b = [0b0011_0001u8, 0x0F, 0, 0, 0, 0, 0, 0, 0b1];
        assert_eq!(hamming(&a, &b), 2 + 4);
        // |a ∧ b| = 2 + 4 + 1, |a ∨ b| = 4 + 8 + 1.
        assert!((jaccard(&a, &b) - (1.0 - 7.0 / 13.0)).abs() < 1e-6);
        assert_eq!(jaccard(&[0, 0], &[0, 0]), 0.0);
        assert_eq!(hamming(&a, &a), 0);
    }
}
