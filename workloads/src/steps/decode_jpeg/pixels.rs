//! From a JPEG's coefficients to RGB pixels: dequantization, the integer IDCT, chroma
//! upsampling and YCbCr -> RGB, with zune-jpeg's arithmetic (the same fixed-point constants
//! and rounding, so the same pixels: tested against it). The image goes out one MCU row at a
//! time; only 4:2:0 chroma, which needs the rows above and below, is kept whole.

use std::mem::MaybeUninit;

use super::entropy::NATURAL;
use super::frame::{Coefs, Component, Frame};
use super::ycbcr::ycbcr;

/// Mask bits (zigzag order) of the coefficients in a block's top-left 4x4 corner.
const TOP_LEFT: u64 = {
    let mut mask = 0;
    let mut k = 0;
    while k < 64 {
        if NATURAL[k] / 8 < 4 && NATURAL[k] % 8 < 4 {
            mask |= 1 << k;
        }
        k += 1;
    }
    mask
};

/// The RGB image being made, one MCU row of coefficients at a time: a sequential scan hands
/// over each MCU row as it decodes it (its coefficients never stored whole), a progressive
/// frame every row once all its scans are read.
pub(super) struct Output<'a> {
    frame: &'a Frame,
    /// Each component's quantization table in natural order, as the IDCT multiplies.
    quant: Vec<[i32; 64]>,
    /// Output lags one MCU row behind (4:2:0: a row needs the chroma row below it).
    lags: bool,
    kernels: Kernels,
    /// The pixels: rows are written into its spare capacity as they are made (never zeroed
    /// first), and its length set once all are.
    out: Vec<u8>,
    rows_done: usize,
    /// Luma samples of the last two MCU rows (4:2:0 output lags one MCU row behind, for the
    /// chroma row below).
    strips: [Vec<u8>; 2],
    /// Cb and Cr samples: whole planes for 4:2:0, else one MCU row's.
    planes: [Vec<u8>; 2],
    up: [Vec<i16>; 2],
    column: Vec<i16>,
}

impl<'a> Output<'a> {
    pub fn new(frame: &'a Frame, quant: &'a [[u16; 64]]) -> Output<'a> {
        let luma = &frame.comps[0];
        let luma_w = luma.stride * 8;
        let strip = vec![0u8; luma_w * luma.v * 8];
        let (chroma_w, plane_rows) = match frame.comps.get(1) {
            Some(chroma) if luma.v == 2 => (chroma.stride * 8, chroma.rows * 8),
            Some(chroma) => (chroma.stride * 8, 8),
            None => (0, 0),
        };
        let plane = vec![0u8; chroma_w * plane_rows];
        let lags = luma.v == 2 && frame.comps.len() > 1;
        let natural = |zigzag: &[u16; 64]| {
            let mut q = [0i32; 64];
            for (k, &v) in zigzag.iter().enumerate() {
                q[NATURAL[k]] = i32::from(v);
            }
            q
        };
        Output {
            frame,
            quant: quant.iter().map(natural).collect(),
            lags,
            kernels: Kernels::detect(),
            out: Vec::with_capacity(frame.width * frame.height * 3),
            rows_done: 0,
            strips: [strip.clone(), if lags { strip } else { Vec::new() }],
            planes: [plane.clone(), plane],
            up: [vec![0i16; luma_w], vec![0i16; luma_w]],
            column: vec![0i16; chroma_w],
        }
    }

    /// Takes MCU row `my`, whose blocks are those of `coefs` from block row `first` of each
    /// component (`my * v`, or 0 where `coefs` holds this MCU row alone).
    pub fn mcu_row(&mut self, my: usize, coefs: &[Coefs], first: impl Fn(&Component) -> usize) {
        let frame = self.frame;
        let luma = &frame.comps[0];
        let strip = &mut self.strips[self.slot(my)];
        idct_rows(
            luma,
            &coefs[0],
            &self.quant[0],
            first(luma),
            strip,
            self.kernels,
        );
        if frame.comps.len() == 1 {
            return self.emit(my);
        }
        for (c, plane) in self.planes.iter_mut().enumerate() {
            let comp = &frame.comps[c + 1];
            let w = comp.stride * 8;
            let rows = if self.lags {
                &mut plane[my * 8 * w..(my + 1) * 8 * w]
            } else {
                &mut plane[..]
            };
            let q = &self.quant[c + 1];
            idct_rows(comp, &coefs[c + 1], q, first(comp), rows, self.kernels);
        }
        if !self.lags {
            self.emit(my);
        } else if my > 0 {
            self.emit(my - 1);
        }
    }

    /// Which luma strip holds MCU row `my`: they alternate where output lags (4:2:0).
    fn slot(&self, my: usize) -> usize {
        if self.lags {
            my % 2
        } else {
            0
        }
    }

    /// The pixels, once every MCU row has been taken.
    pub fn finish(mut self) -> Vec<u8> {
        if self.lags {
            self.emit(self.frame.mcu_y - 1);
        }
        assert_eq!(self.rows_done, self.frame.height, "rows left unwritten");
        let len = self.frame.width * self.frame.height * 3;
        // SAFETY: the capacity is `len` (`new`), and `emit` wrote every byte of every row, rows
        // 0..height (checked just above and, row by row, in `emit`).
        unsafe { self.out.set_len(len) };
        self.out
    }

    /// Writes the pixel rows of MCU row `my`.
    fn emit(&mut self, my: usize) {
        let frame = self.frame;
        let width = frame.width;
        let luma = &frame.comps[0];
        let luma_w = luma.stride * 8;
        let strip_h = luma.v * 8;
        let strip = &self.strips[self.slot(my)];
        let first_row = my * strip_h;
        let rows = strip_h.min(frame.height - first_row);
        assert_eq!(self.rows_done, first_row, "MCU rows out of order");
        self.rows_done += rows;
        let strip = &strip[..rows * luma_w];
        let spare = &mut self.out.spare_capacity_mut()[first_row * width * 3..];
        let mut out_rows = spare.chunks_exact_mut(width * 3);
        if frame.comps.len() == 1 {
            for (src, dst) in strip.chunks_exact(luma_w).zip(out_rows) {
                for (&v, px) in src.iter().zip(dst.chunks_exact_mut(3)) {
                    px.iter_mut().for_each(|b| {
                        b.write(v);
                    });
                }
            }
            return;
        }
        let kernels = self.kernels;
        let chroma_w = frame.comps[1].stride * 8;
        let chroma_rows = frame.comps[1].rows * 8;
        for (r, src) in strip.chunks_exact(luma_w).enumerate() {
            let row = first_row + r;
            for (plane, up) in self.planes.iter().zip(self.up.iter_mut()) {
                let line = |r: usize| &plane[r * chroma_w..(r + 1) * chroma_w];
                if self.lags {
                    let r = row / 2;
                    let near = if row.is_multiple_of(2) {
                        r.saturating_sub(1)
                    } else {
                        (r + 1).min(chroma_rows - 1)
                    };
                    (kernels.vertical)(line(r), line(near), &mut self.column);
                    (kernels.horizontal)(&self.column, up);
                } else if luma.h == 2 {
                    widen(line(r), &mut self.column);
                    (kernels.horizontal)(&self.column, up);
                } else {
                    widen(line(r), up);
                }
            }
            let (cb, cr) = (&self.up[0][..width], &self.up[1][..width]);
            let dst = out_rows.next().expect("a row of the image");
            (kernels.ycbcr)(&src[..width], cb, cr, dst);
        }
    }
}

fn widen(src: &[u8], dst: &mut [i16]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = i16::from(s);
    }
}

/// Dequantizes and inverse-transforms `comp.v` block rows of `coefs`, from block row `first`,
/// into `rows`. A block without AC terms is its DC alone (zune-jpeg's shortcut, which equals
/// the full transform of such a block).
fn idct_rows(
    comp: &Component,
    coefs: &Coefs,
    q: &[i32; 64],
    first: usize,
    rows: &mut [u8],
    kernels: Kernels,
) {
    let w = comp.stride * 8;
    for by in 0..comp.v {
        let first = (first + by) * comp.stride;
        let band = &mut rows[by * 8 * w..(by + 1) * 8 * w];
        for bx in 0..comp.stride {
            let i = first + bx;
            let dc = i32::from(coefs.dc[i]).wrapping_mul(q[0]);
            let out = &mut band[bx * 8..];
            if coefs.nonzero[i] == 0 {
                let v = (dc.wrapping_add(4 + 1024) >> 3).clamp(0, 255) as u8;
                for r in 0..8 {
                    out[r * w..r * w + 8].fill(v);
                }
            } else {
                let block = coefs.ac[i * 64..i * 64 + 64].try_into().unwrap_or(&[0; 64]);
                let idct = if coefs.nonzero[i] & !TOP_LEFT == 0 {
                    kernels.idct4
                } else {
                    kernels.idct
                };
                idct(block, dc, q, out, w);
            }
        }
    }
}

/// Y, Cb and Cr rows to a row of RGB bytes.
type YcbcrKernel = fn(&[u8], &[i16], &[i16], &mut [MaybeUninit<u8>]);

/// The pixel loops, compiled for AVX2 where the processor has it (the same arithmetic, wider).
#[derive(Clone, Copy)]
struct Kernels {
    idct: fn(&[i16; 64], i32, &[i32; 64], &mut [u8], usize),
    /// The same for a block whose terms are all in its top-left 4x4 corner.
    idct4: fn(&[i16; 64], i32, &[i32; 64], &mut [u8], usize),
    vertical: fn(&[u8], &[u8], &mut [i16]),
    horizontal: fn(&[i16], &mut [i16]),
    ycbcr: YcbcrKernel,
}

/// The loops LLVM vectorizes by itself, compiled for AVX2 (x86-64's baseline is SSE2).
#[cfg(target_arch = "x86_64")]
mod avx2 {
    #[target_feature(enable = "avx2")]
    pub(super) fn vertical(row: &[u8], near: &[u8], out: &mut [i16]) {
        super::vertical(row, near, out)
    }
}

impl Kernels {
    fn detect() -> Kernels {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor has AVX2 (just checked), all these functions need.
            return Kernels {
                idct: |c, d, q, o, s| unsafe { x86::idct::<false>(c, d, q, o, s) },
                idct4: |c, d, q, o, s| unsafe { x86::idct::<true>(c, d, q, o, s) },
                vertical: |a, b, o| unsafe { avx2::vertical(a, b, o) },
                horizontal: |a, o| unsafe { x86::horizontal(a, o) },
                ycbcr: |y, b, r, o| unsafe { x86::ycbcr(y, b, r, o) },
            };
        }
        Kernels {
            idct,
            idct4: idct,
            vertical,
            horizontal,
            ycbcr,
        }
    }
}

/// Eight lanes of i32 with wrapping arithmetic: one IDCT pass works on eight columns at once.
#[derive(Clone, Copy)]
struct L([i32; 8]);

impl L {
    #[inline(always)]
    fn map2(self, o: L, f: impl Fn(i32, i32) -> i32) -> L {
        L(std::array::from_fn(|i| f(self.0[i], o.0[i])))
    }
    #[inline(always)]
    fn add(self, o: L) -> L {
        self.map2(o, i32::wrapping_add)
    }
    #[inline(always)]
    fn sub(self, o: L) -> L {
        self.map2(o, i32::wrapping_sub)
    }
    #[inline(always)]
    fn mul(self, k: i32) -> L {
        L(self.0.map(|v| v.wrapping_mul(k)))
    }
    #[inline(always)]
    fn plus(self, k: i32) -> L {
        L(self.0.map(|v| v.wrapping_add(k)))
    }
    #[inline(always)]
    fn shl12(self) -> L {
        L(self.0.map(|v| v.wrapping_shl(12)))
    }
    #[inline(always)]
    fn shr(self, n: u32) -> L {
        L(self.0.map(|v| v >> n))
    }
}

/// One 1-D pass of the integer IDCT over eight vectors (jidctint's factorization with 12-bit
/// constants, as zune-jpeg and stb_image compute it); `bias` rounds and level-shifts.
#[inline(always)]
fn pass(v: [L; 8], bias: i32, shift: u32) -> [L; 8] {
    let p1 = v[2].add(v[6]).mul(2217);
    let t2 = p1.add(v[6].mul(-7567));
    let t3 = p1.add(v[2].mul(3135));
    let t0 = v[0].add(v[4]).shl12();
    let t1 = v[0].sub(v[4]).shl12();
    let x0 = t0.add(t3).plus(bias);
    let x3 = t0.sub(t3).plus(bias);
    let x1 = t1.add(t2).plus(bias);
    let x2 = t1.sub(t2).plus(bias);
    let (o0, o1, o2, o3) = (v[7], v[5], v[3], v[1]);
    let p3 = o0.add(o2);
    let p4 = o1.add(o3);
    let p1 = o0.add(o3);
    let p2 = o1.add(o2);
    let p5 = p3.add(p4).mul(4816);
    let p1 = p5.add(p1.mul(-3685));
    let p2 = p5.add(p2.mul(-10497));
    let p3 = p3.mul(-8034);
    let p4 = p4.mul(-1597);
    let t3 = o3.mul(6149).add(p1.add(p4));
    let t2 = o2.mul(12586).add(p2.add(p3));
    let t1 = o1.mul(8410).add(p2.add(p4));
    let t0 = o0.mul(1223).add(p1.add(p3));
    [
        x0.add(t3).shr(shift),
        x1.add(t2).shr(shift),
        x2.add(t1).shr(shift),
        x3.add(t0).shr(shift),
        x3.sub(t0).shr(shift),
        x2.sub(t1).shr(shift),
        x1.sub(t2).shr(shift),
        x0.sub(t3).shr(shift),
    ]
}

#[inline(always)]
fn transpose(v: [L; 8]) -> [L; 8] {
    std::array::from_fn(|i| L(std::array::from_fn(|j| v[j].0[i])))
}

/// Inverse DCT of a block (natural order, AC terms; `dc` its dequantized DC) dequantized by
/// `q` (natural order) into 8 rows of `out` `stride` apart.
fn idct(block: &[i16; 64], dc: i32, q: &[i32; 64], out: &mut [u8], stride: usize) {
    let mut c: [i32; 64] = std::array::from_fn(|k| i32::from(block[k]).wrapping_mul(q[k]));
    c[0] = dc;
    let rows: [L; 8] = std::array::from_fn(|r| L(std::array::from_fn(|i| c[r * 8 + i])));
    // Columns first (each lane a column), then rows (each lane a row, after a transpose).
    let cols = pass(rows, 512, 10);
    let done = transpose(pass(transpose(cols), 512 + 65536 + (128 << 17), 17));
    for (r, lane) in done.iter().enumerate() {
        let dst = &mut out[r * stride..r * stride + 8];
        for (d, &v) in dst.iter_mut().zip(&lane.0) {
            *d = v.clamp(0, 255) as u8;
        }
    }
}

/// A chroma row upsampled vertically towards the row `near` it (row above for the upper
/// output row, below for the lower): (3 x row + near + 2) / 4.
#[inline(always)]
fn vertical(row: &[u8], near: &[u8], out: &mut [i16]) {
    for ((o, &a), &b) in out.iter_mut().zip(row).zip(near) {
        *o = (3 * i16::from(a) + i16::from(b) + 2) >> 2;
    }
}

/// A row upsampled twice horizontally, each output sample (3 x nearest + next nearest + 2) / 4,
/// the ends repeated; `out` may be shorter than twice `row` (only what the image uses).
#[inline(always)]
fn horizontal(row: &[i16], out: &mut [i16]) {
    let n = row.len();
    let pairs = out.len().div_ceil(2).min(n);
    for i in 0..pairs {
        let left = row[i.saturating_sub(1)];
        let right = row[(i + 1).min(n - 1)];
        let mid = 3 * row[i] + 2;
        out[2 * i] = (mid + left) >> 2;
        if 2 * i + 1 < out.len() {
            out[2 * i + 1] = (mid + right) >> 2;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86;
