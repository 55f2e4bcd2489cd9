//! Decoding one block's coefficients from a scan (ITU T.81 F.2.2 and G.1.2): a sequential
//! block, and the four kinds of progressive scan (DC first, DC refinement, AC first, AC
//! refinement).
//!
//! Coefficients are stored in natural (row-major) order, ready for the IDCT's vector loads,
//! with a mask of the non-zero ones in zigzag order (the order a scan visits them), so a
//! refinement finds them without reading the block.

use super::bits::{Bad, Bits, Huffman};

/// Natural (row-major) position of each zigzag index.
pub(super) const NATURAL: [usize; 64] = [
    0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20,
    13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59,
    52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
];

/// What a scan refines: its band of zigzag positions and its successive-approximation bits.
#[derive(Clone, Copy)]
pub(super) struct Band {
    pub start: usize,
    pub end: usize,
    pub high: u8,
    pub low: u8,
}

/// DC first scan: the DC difference, predicted per component, shifted up by `low`.
#[inline(always)]
pub(super) fn dc_first(
    bits: &mut Bits,
    table: &Huffman,
    pred: &mut i32,
    low: u8,
    dc: &mut i16,
) -> Result<(), Bad> {
    bits.refill();
    // At most 15: DC tables with larger categories are refused when built.
    let size = u32::from(bits.symbol(table)?);
    *pred = pred.wrapping_add(bits.extend(size));
    *dc = (*pred as i16).wrapping_mul(1 << low);
    Ok(())
}

/// DC refinement scan: one bit per block.
#[inline(always)]
pub(super) fn dc_refine(bits: &mut Bits, low: u8, dc: &mut i16) {
    if bits.bit() {
        *dc |= 1 << low;
    }
}

/// A block's AC coefficients (natural order; index 0 unused, the DC is kept apart) and the
/// mask of those that are non-zero (bit k for zigzag index k), so a refinement finds them
/// without reading the block and a block that has none is never touched.
pub(super) struct Block<'a> {
    pub coefs: &'a mut [i16; 64],
    pub nonzero: &'a mut u64,
}

/// AC first scan of one block, or one block of an end-of-band run.
#[inline(always)]
pub(super) fn ac_first(
    bits: &mut Bits,
    table: &Huffman,
    band: Band,
    eob_run: &mut u32,
    block: Block,
) -> Result<(), Bad> {
    if *eob_run > 0 {
        *eob_run -= 1;
        return Ok(());
    }
    let mut k = band.start;
    let mut nonzero = *block.nonzero;
    while k <= band.end {
        bits.refill();
        let rs = bits.symbol(table)?;
        let (run, size) = (usize::from(rs >> 4), u32::from(rs & 15));
        if size == 0 {
            if run < 15 {
                *eob_run = (1 << run) + bits.take(run as u32) as u32 - 1;
                break;
            }
            k += 16;
            continue;
        }
        k += run;
        if k > band.end {
            return Err("AC coefficient past the band");
        }
        let value = (bits.extend(size) as i16).wrapping_mul(1 << band.low);
        block.coefs[NATURAL[k & 63]] = value;
        nonzero |= u64::from(value != 0) << k;
        k += 1;
    }
    *block.nonzero = nonzero;
    Ok(())
}

/// A sequential (baseline) block: the DC difference, then run/size-coded AC coefficients up to
/// the end of block (T.81 F.2.2).
#[inline(always)]
pub(super) fn sequential(
    bits: &mut Bits,
    dc_table: &Huffman,
    ac_table: &Huffman,
    pred: &mut i32,
    dc: &mut i16,
    block: Block,
) -> Result<(), Bad> {
    dc_first(bits, dc_table, pred, 0, dc)?;
    let mut nonzero = 0u64;
    let mut k = 1;
    while k < 64 {
        bits.ensure();
        if let Some((run, value)) = bits.fast_ac(ac_table) {
            k += run;
            if k > 63 {
                return Err("AC coefficient past the block");
            }
            block.coefs[NATURAL[k & 63]] = value as i16;
            nonzero |= 1 << k;
            k += 1;
            continue;
        }
        let rs = bits.symbol(ac_table)?;
        let (run, size) = (usize::from(rs >> 4), u32::from(rs & 15));
        if size == 0 {
            if run != 15 {
                break;
            }
            k += 16;
            continue;
        }
        k += run;
        if k > 63 {
            return Err("AC coefficient past the block");
        }
        let value = bits.extend(size) as i16;
        block.coefs[NATURAL[k & 63]] = value;
        nonzero |= u64::from(value != 0) << k;
        k += 1;
    }
    *block.nonzero = nonzero;
    Ok(())
}

/// Adds a correction bit's 1 << low to a non-zero coefficient's magnitude.
#[inline(always)]
fn correct(c: &mut i16, plus: i16) {
    if *c & plus == 0 {
        *c = c.wrapping_add(if *c >= 0 { plus } else { -plus });
    }
}

/// Bits `k..=end` of a mask (k <= end <= 63).
#[inline(always)]
fn band_bits(k: usize, end: usize) -> u64 {
    (u64::MAX >> (63 - end)) & (u64::MAX << k)
}

/// Reads one correction bit for each coefficient in `which` (non-zero ones, lowest first) and
/// applies those that are set.
#[inline(always)]
fn corrections(bits: &mut Bits, coefs: &mut [i16; 64], mut which: u64, plus: i16) {
    let n = which.count_ones();
    if n == 0 {
        return;
    }
    if n > bits.available() {
        bits.refill();
    }
    if n <= bits.available() {
        let mut set = bits.take_top(n);
        while which != 0 {
            if (set as i64) < 0 {
                correct(
                    &mut coefs[NATURAL[which.trailing_zeros() as usize & 63]],
                    plus,
                );
            }
            set <<= 1;
            which &= which - 1;
        }
    } else {
        while which != 0 {
            if bits.bit() {
                correct(
                    &mut coefs[NATURAL[which.trailing_zeros() as usize & 63]],
                    plus,
                );
            }
            which &= which - 1;
        }
    }
}

/// AC refinement scan of one block (T.81 G.1.2.3): new coefficients of magnitude 1 << low,
/// and one correction bit for each coefficient already non-zero that it passes.
#[inline(always)]
pub(super) fn ac_refine(
    bits: &mut Bits,
    table: &Huffman,
    band: Band,
    eob_run: &mut u32,
    block: Block,
) -> Result<(), Bad> {
    let plus = 1i16 << band.low;
    let mut k = band.start;
    let mut nonzero = *block.nonzero;
    if *eob_run == 0 {
        while k <= band.end {
            bits.refill();
            let rs = bits.symbol(table)?;
            let (run, size) = (rs >> 4, rs & 15);
            let mut value = 0;
            if size != 0 {
                value = if bits.bit() { plus } else { -plus };
            } else if run != 15 {
                *eob_run = (1 << run) + bits.take(u32::from(run)) as u32;
                break;
            }
            // Pass `run` zero coefficients (the new one goes on the zero after them), refining
            // every non-zero one on the way.
            let mut run = run;
            while k <= band.end {
                if nonzero >> k & 1 != 0 {
                    if bits.bit() {
                        correct(&mut block.coefs[NATURAL[k & 63]], plus);
                    }
                } else {
                    if run == 0 {
                        break;
                    }
                    run -= 1;
                }
                k += 1;
            }
            if value != 0 {
                if k > band.end {
                    return Err("AC coefficient past the band");
                }
                block.coefs[NATURAL[k & 63]] = value;
                nonzero |= 1 << k;
            }
            k += 1;
        }
    }
    if *eob_run > 0 {
        // In an end-of-band run: only correction bits, one per coefficient already non-zero.
        if k <= band.end {
            corrections(bits, block.coefs, nonzero & band_bits(k, band.end), plus);
        }
        *eob_run -= 1;
    }
    *block.nonzero = nonzero;
    Ok(())
}
