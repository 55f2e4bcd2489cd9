//! YCbCr to RGB, one pixel at a time: the portable kernel, and the tail of the vector one.

use std::mem::MaybeUninit;

/// YCbCr -> RGB with 14-bit BT.601 full-range constants, rounding down from y + 0.49994.
#[inline(always)]
pub(super) fn ycbcr(y: &[u8], cb: &[i16], cr: &[i16], out: &mut [MaybeUninit<u8>]) {
    for (((px, &y), &cb), &cr) in out.chunks_exact_mut(3).zip(y).zip(cb).zip(cr) {
        let (cb, cr) = (i32::from(cb) - 128, i32::from(cr) - 128);
        let y0 = i32::from(y) * 16384 + 8191;
        let r = (y0 + cr * 22970) >> 14;
        let g = (y0 - cr * 11700 - cb * 5638) >> 14;
        let b = (y0 + cb * 29032) >> 14;
        px[0].write(r.clamp(0, 255) as u8);
        px[1].write(g.clamp(0, 255) as u8);
        px[2].write(b.clamp(0, 255) as u8);
    }
}
