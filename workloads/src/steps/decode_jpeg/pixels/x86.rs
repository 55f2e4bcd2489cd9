//! The IDCT, the horizontal upsampling and YCbCr -> RGB written with AVX2 intrinsics (LLVM
//! does not vectorize the transposes and the interleaving by itself); the same arithmetic as
//! the portable versions in pixels.rs, tested equal to them.

use std::arch::x86_64::*;
use std::mem::MaybeUninit;

/// One IDCT pass (see `super::pass`) on eight AVX2 vectors of eight i32 lanes; `CORNER`
/// where inputs 4-7 are zero, so their products are skipped (the same results: the terms left
/// out are zeros, and wrapping sums do not depend on their order).
#[target_feature(enable = "avx2")]
fn pass<const CORNER: bool>(v: [__m256i; 8], bias: i32, shift: i32) -> [__m256i; 8] {
    let add = |a, b| _mm256_add_epi32(a, b);
    let sub = |a, b| _mm256_sub_epi32(a, b);
    let mul = |a, k: i32| _mm256_mullo_epi32(a, _mm256_set1_epi32(k));
    let bias = _mm256_set1_epi32(bias);
    let count = _mm_cvtsi32_si128(shift);
    let shr = |a| _mm256_sra_epi32(a, count);
    // Even part.
    let (t2, t3, t0, t1) = if CORNER {
        let t0 = _mm256_slli_epi32::<12>(v[0]);
        (mul(v[2], 2217), mul(v[2], 2217 + 3135), t0, t0)
    } else {
        let p1 = mul(add(v[2], v[6]), 2217);
        (
            add(p1, mul(v[6], -7567)),
            add(p1, mul(v[2], 3135)),
            _mm256_slli_epi32::<12>(add(v[0], v[4])),
            _mm256_slli_epi32::<12>(sub(v[0], v[4])),
        )
    };
    let x0 = add(add(t0, t3), bias);
    let x3 = add(sub(t0, t3), bias);
    let x1 = add(add(t1, t2), bias);
    let x2 = add(sub(t1, t2), bias);
    // Odd part.
    let (o0, o1, o2, o3) = (v[7], v[5], v[3], v[1]);
    let (p3, p4, p1, p2) = if CORNER {
        (o2, o3, o3, o2)
    } else {
        (add(o0, o2), add(o1, o3), add(o0, o3), add(o1, o2))
    };
    let p5 = mul(add(p3, p4), 4816);
    let p1 = add(p5, mul(p1, -3685));
    let p2 = add(p5, mul(p2, -10497));
    let p3 = mul(p3, -8034);
    let p4 = mul(p4, -1597);
    let t3 = add(mul(o3, 6149), add(p1, p4));
    let t2 = add(mul(o2, 12586), add(p2, p3));
    let (t1, t0) = if CORNER {
        (add(p2, p4), add(p1, p3))
    } else {
        (
            add(mul(o1, 8410), add(p2, p4)),
            add(mul(o0, 1223), add(p1, p3)),
        )
    };
    [
        shr(add(x0, t3)),
        shr(add(x1, t2)),
        shr(add(x2, t1)),
        shr(add(x3, t0)),
        shr(sub(x3, t0)),
        shr(sub(x2, t1)),
        shr(sub(x1, t2)),
        shr(sub(x0, t3)),
    ]
}

/// 8x8 transpose of i32 lanes.
#[target_feature(enable = "avx2")]
fn transpose(r: [__m256i; 8]) -> [__m256i; 8] {
    let t0 = _mm256_unpacklo_epi32(r[0], r[1]);
    let t1 = _mm256_unpackhi_epi32(r[0], r[1]);
    let t2 = _mm256_unpacklo_epi32(r[2], r[3]);
    let t3 = _mm256_unpackhi_epi32(r[2], r[3]);
    let t4 = _mm256_unpacklo_epi32(r[4], r[5]);
    let t5 = _mm256_unpackhi_epi32(r[4], r[5]);
    let t6 = _mm256_unpacklo_epi32(r[6], r[7]);
    let t7 = _mm256_unpackhi_epi32(r[6], r[7]);
    let u0 = _mm256_unpacklo_epi64(t0, t2);
    let u1 = _mm256_unpackhi_epi64(t0, t2);
    let u2 = _mm256_unpacklo_epi64(t1, t3);
    let u3 = _mm256_unpackhi_epi64(t1, t3);
    let u4 = _mm256_unpacklo_epi64(t4, t6);
    let u5 = _mm256_unpackhi_epi64(t4, t6);
    let u6 = _mm256_unpacklo_epi64(t5, t7);
    let u7 = _mm256_unpackhi_epi64(t5, t7);
    [
        _mm256_permute2x128_si256::<0x20>(u0, u4),
        _mm256_permute2x128_si256::<0x20>(u1, u5),
        _mm256_permute2x128_si256::<0x20>(u2, u6),
        _mm256_permute2x128_si256::<0x20>(u3, u7),
        _mm256_permute2x128_si256::<0x31>(u0, u4),
        _mm256_permute2x128_si256::<0x31>(u1, u5),
        _mm256_permute2x128_si256::<0x31>(u2, u6),
        _mm256_permute2x128_si256::<0x31>(u3, u7),
    ]
}

/// The IDCT; `CORNER` where only the top-left 4x4 terms may be non-zero, so both passes
/// skip the products of the inputs 4-7 (zeros: the same results).
#[target_feature(enable = "avx2")]
pub(super) fn idct<const CORNER: bool>(
    block: &[i16; 64],
    dc: i32,
    q: &[i32; 64],
    out: &mut [u8],
    stride: usize,
) {
    // SAFETY: each load reads 8 of the 64 i16s or i32s.
    let mut rows: [__m256i; 8] = std::array::from_fn(|r| unsafe {
        let c = _mm256_cvtepi16_epi32(_mm_loadu_si128(block[r * 8..].as_ptr().cast()));
        _mm256_mullo_epi32(c, _mm256_loadu_si256(q[r * 8..].as_ptr().cast()))
    });
    rows[0] = _mm256_blend_epi32::<1>(rows[0], _mm256_set1_epi32(dc));
    let cols = pass::<CORNER>(rows, 512, 10);
    let r = transpose(pass::<CORNER>(
        transpose(cols),
        512 + 65536 + (128 << 17),
        17,
    ));
    // Saturate to 0..=255 (as a clamp does) and lay the rows out in order.
    let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    let pack = |a, b, c, d| {
        let bytes = _mm256_packus_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
        _mm256_permutevar8x32_epi32(bytes, order)
    };
    let mut bytes = [0u8; 64];
    // SAFETY: two 32-byte stores into the 64-byte array.
    unsafe {
        _mm256_storeu_si256(bytes.as_mut_ptr().cast(), pack(r[0], r[1], r[2], r[3]));
        _mm256_storeu_si256(
            bytes[32..].as_mut_ptr().cast(),
            pack(r[4], r[5], r[6], r[7]),
        );
    }
    for (row, src) in bytes.chunks_exact(8).enumerate() {
        out[row * stride..row * stride + 8].copy_from_slice(src);
    }
}

#[target_feature(enable = "avx2")]
pub(super) fn horizontal(row: &[i16], out: &mut [i16]) {
    let n = row.len();
    let pairs = out.len().div_ceil(2).min(n);
    // Vectors of 16 samples from sample 1 while the one after them exists.
    let mut i = 1;
    let two = _mm256_set1_epi16(2);
    while i + 16 < n && 2 * (i + 16) <= out.len() {
        // SAFETY: i - 1 >= 0 and i + 17 <= n: the three loads are inside `row`; the two
        // stores cover out[2i..2i + 32], inside `out` (checked above).
        unsafe {
            let cur = _mm256_loadu_si256(row.as_ptr().add(i).cast());
            let prev = _mm256_loadu_si256(row.as_ptr().add(i - 1).cast());
            let next = _mm256_loadu_si256(row.as_ptr().add(i + 1).cast());
            let mid = _mm256_add_epi16(_mm256_add_epi16(cur, _mm256_add_epi16(cur, cur)), two);
            let even = _mm256_srai_epi16::<2>(_mm256_add_epi16(mid, prev));
            let odd = _mm256_srai_epi16::<2>(_mm256_add_epi16(mid, next));
            let lo = _mm256_unpacklo_epi16(even, odd);
            let hi = _mm256_unpackhi_epi16(even, odd);
            let dst = out.as_mut_ptr().add(2 * i);
            _mm256_storeu_si256(dst.cast(), _mm256_permute2x128_si256::<0x20>(lo, hi));
            _mm256_storeu_si256(
                dst.add(16).cast(),
                _mm256_permute2x128_si256::<0x31>(lo, hi),
            );
        }
        i += 16;
    }
    for j in (0..1.min(pairs)).chain(i..pairs) {
        let left = row[j.saturating_sub(1)];
        let right = row[(j + 1).min(n - 1)];
        let mid = 3 * row[j] + 2;
        out[2 * j] = (mid + left) >> 2;
        if 2 * j + 1 < out.len() {
            out[2 * j + 1] = (mid + right) >> 2;
        }
    }
}

/// Byte shuffles that interleave 16 R, 16 G and 16 B bytes into 48 bytes of RGB: for
/// output vector `j` and channel `c`, where each of its 16 bytes comes from (0x80: none).
const fn interleave(j: usize, c: usize) -> [u8; 16] {
    let mut m = [0x80u8; 16];
    let mut i = 0;
    while i < 16 {
        let at = 16 * j + i;
        if at % 3 == c {
            m[i] = (at / 3) as u8;
        }
        i += 1;
    }
    m
}
const INTERLEAVE: [[[u8; 16]; 3]; 3] = [
    [interleave(0, 0), interleave(0, 1), interleave(0, 2)],
    [interleave(1, 0), interleave(1, 1), interleave(1, 2)],
    [interleave(2, 0), interleave(2, 1), interleave(2, 2)],
];

/// `super::ycbcr` 16 pixels at a time: each channel as sums of products of i16 pairs
/// (y with a chroma term) in i32, shifted, saturated to bytes, interleaved.
#[target_feature(enable = "avx2")]
pub(super) fn ycbcr(y: &[u8], cb: &[i16], cr: &[i16], out: &mut [MaybeUninit<u8>]) {
    let n = y.len().min(cb.len()).min(cr.len()).min(out.len() / 3);
    let pair = |a: i16, b: i16| _mm256_set1_epi32((a as u16 as i32) | ((b as i32) << 16));
    let (k_r, k_g1, k_g2, k_b) = (
        pair(16384, 22970),
        pair(16384, -11700),
        pair(-5638, 0),
        pair(16384, 29032),
    );
    let round = _mm256_set1_epi32(8191);
    let bias = _mm256_set1_epi16(128);
    // SAFETY: the shuffle masks are 16-byte arrays.
    let masks: [[__m128i; 3]; 3] = std::array::from_fn(|j| {
        std::array::from_fn(|c| unsafe { _mm_loadu_si128(INTERLEAVE[j][c].as_ptr().cast()) })
    });
    let mut i = 0;
    while i + 16 <= n {
        // SAFETY: i + 16 <= n: 16 bytes of y, 16 i16s of cb and cr, 48 bytes of out.
        unsafe {
            let yv = _mm256_cvtepu8_epi16(_mm_loadu_si128(y.as_ptr().add(i).cast()));
            let cbv = _mm256_sub_epi16(_mm256_loadu_si256(cb.as_ptr().add(i).cast()), bias);
            let crv = _mm256_sub_epi16(_mm256_loadu_si256(cr.as_ptr().add(i).cast()), bias);
            // (lo, hi) halves of a channel: madd of interleaved pairs, rounded, >> 14.
            let channel = |a: __m256i, ka: __m256i, b: __m256i, kb: __m256i, extra: bool| {
                let mut lo = _mm256_madd_epi16(_mm256_unpacklo_epi16(yv, a), ka);
                let mut hi = _mm256_madd_epi16(_mm256_unpackhi_epi16(yv, a), ka);
                if extra {
                    let zero = _mm256_setzero_si256();
                    lo =
                        _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(b, zero), kb));
                    hi =
                        _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(b, zero), kb));
                }
                let lo = _mm256_srai_epi32::<14>(_mm256_add_epi32(lo, round));
                let hi = _mm256_srai_epi32::<14>(_mm256_add_epi32(hi, round));
                _mm256_packs_epi32(lo, hi)
            };
            let r = channel(crv, k_r, crv, k_r, false);
            let g = channel(crv, k_g1, cbv, k_g2, true);
            let b = channel(cbv, k_b, cbv, k_b, false);
            let rg = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packus_epi16(r, g));
            let bb = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packus_epi16(b, b));
            let (rv, gv, bv) = (
                _mm256_castsi256_si128(rg),
                _mm256_extracti128_si256::<1>(rg),
                _mm256_castsi256_si128(bb),
            );
            let dst = out.as_mut_ptr().add(3 * i);
            for (j, m) in masks.iter().enumerate() {
                let v = _mm_or_si128(
                    _mm_or_si128(_mm_shuffle_epi8(rv, m[0]), _mm_shuffle_epi8(gv, m[1])),
                    _mm_shuffle_epi8(bv, m[2]),
                );
                _mm_storeu_si128(dst.add(16 * j).cast(), v);
            }
        }
        i += 16;
    }
    super::super::ycbcr::ycbcr(&y[i..n], &cb[i..n], &cr[i..n], &mut out[3 * i..3 * n]);
}

#[cfg(test)]
mod tests {
    use std::mem::MaybeUninit;

    use crate::steps::decode_jpeg::entropy::NATURAL;
    use crate::steps::decode_jpeg::pixels::{self as portable, x86, TOP_LEFT};

    /// The AVX2 kernels give what the portable ones give, on random blocks (dense, top-left
    /// only, extreme values), rows of every length around the vector width, and pixels.
    #[test]
    fn the_avx2_kernels_compute_what_the_portable_ones_do() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            eprintln!("skipped: this processor has no AVX2");
            return;
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for round in 0..3000 {
            let corner = round % 3 == 0;
            let extreme = round % 7 == 0;
            let mut block = [0i16; 64];
            for k in 1..64 {
                if (corner && TOP_LEFT >> k & 1 == 0) || next(3) == 0 {
                    continue;
                }
                block[NATURAL[k]] = if extreme {
                    next(65536) as u16 as i16
                } else {
                    next(4096) as i16 - 2048
                };
            }
            let q: [i32; 64] = std::array::from_fn(|_| {
                if extreme {
                    next(65536) as i32
                } else {
                    1 + next(255) as i32
                }
            });
            let dc = if extreme {
                next(1 << 32) as u32 as i32
            } else {
                next(8192) as i32 - 4096
            };
            let (mut a, mut b, mut c) = ([0u8; 64], [0u8; 64], [0u8; 64]);
            portable::idct(&block, dc, &q, &mut a, 8);
            // SAFETY: AVX2 is there (checked above).
            unsafe { x86::idct::<false>(&block, dc, &q, &mut b, 8) };
            assert_eq!(a, b, "round {round}");
            if corner {
                // SAFETY: as above.
                unsafe { x86::idct::<true>(&block, dc, &q, &mut c, 8) };
                assert_eq!(a, c, "round {round}, top-left only");
            }
        }
        for n in [8usize, 9, 15, 16, 17, 18, 31, 32, 33, 34, 100, 257] {
            let row: Vec<i16> = (0..n).map(|_| next(256) as i16).collect();
            for len in [2 * n, 2 * n - 1, n + 3, n] {
                let (mut a, mut b) = (vec![0i16; len], vec![0i16; len]);
                portable::horizontal(&row, &mut a);
                // SAFETY: as above.
                unsafe { x86::horizontal(&row, &mut b) };
                assert_eq!(a, b, "{n} samples to {len}");
            }
        }
        for n in 0..70usize {
            let y: Vec<u8> = (0..n).map(|_| next(256) as u8).collect();
            let cb: Vec<i16> = (0..n).map(|_| next(256) as i16).collect();
            let cr: Vec<i16> = (0..n).map(|_| next(256) as i16).collect();
            let (mut a, mut b) = (
                vec![MaybeUninit::new(0u8); 3 * n],
                vec![MaybeUninit::new(0u8); 3 * n],
            );
            portable::ycbcr(&y, &cb, &cr, &mut a);
            // SAFETY: as above.
            unsafe { x86::ycbcr(&y, &cb, &cr, &mut b) };
            // SAFETY: every byte was initialized when the vectors were made.
            let bytes = |v: &[MaybeUninit<u8>]| {
                v.iter()
                    .map(|b| unsafe { b.assume_init() })
                    .collect::<Vec<u8>>()
            };
            assert_eq!(bytes(&a), bytes(&b), "{n} pixels");
        }
    }
}
