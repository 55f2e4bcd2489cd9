//! prepbench's own JPEG decoder for the files photographs come as: 8-bit Huffman-coded
//! baseline, extended sequential and progressive frames (ITU T.81 Annex F and G), greyscale or
//! YCbCr with 4:4:4, 4:2:2 (2x1) or 4:2:0 (2x2) sampling. zune-jpeg was 1.2-1.4x slower than
//! libjpeg-turbo on progressive photographs (docs/decisions.md, "CV steps"); this decoder
//! keeps each block's non-zero coefficients as a mask (a refinement scan and the IDCT read
//! only those), the DC terms apart, and streams a sequential frame MCU row by MCU row. It
//! produces the pixels zune-jpeg produces (the same integer IDCT, upsampling and colour
//! arithmetic; tested equal); anything else, and any file whose data it finds invalid, it
//! leaves to zune-jpeg, so users see zune-jpeg's behaviour and messages on those.

use super::bits::Bad;
use super::bits::{Huffman, ScanData};
use super::entropy::Band;
use super::frame::{Coefs, Component, Frame};
use super::pixels;

/// zune-jpeg's limit on scans (a progressive file can make a decoder loop over the image once
/// per scan): a file with more is left to zune-jpeg, which refuses it.
const MAX_SCANS: usize = 100;

/// A decoded image: width, height and RGB bytes.
pub(super) struct Rgb {
    pub width: usize,
    pub height: usize,
    pub pixels: Vec<u8>,
}

/// Decodes a JPEG; `Err` where the file is not one this decoder takes or its data is not
/// valid (the caller then uses zune-jpeg).
pub(super) fn decode(bytes: &[u8]) -> Result<Rgb, Bad> {
    let mut d = Decoder::default();
    if bytes.get(..2) != Some(&[0xFF, 0xD8]) {
        return Err("no SOI");
    }
    let mut pos = 2;
    loop {
        // At a marker: 0xFF (fill 0xFFs allowed) then its code.
        if bytes.get(pos) != Some(&0xFF) {
            return Err("expected a marker");
        }
        while bytes.get(pos + 1) == Some(&0xFF) {
            pos += 1;
        }
        let marker = *bytes.get(pos + 1).ok_or("truncated")?;
        pos += 2;
        if marker == 0xD9 {
            break;
        }
        let len = u16::from_be_bytes([
            *bytes.get(pos).ok_or("truncated")?,
            *bytes.get(pos + 1).ok_or("truncated")?,
        ]) as usize;
        if len < 2 {
            return Err("bad segment length");
        }
        let body = bytes.get(pos + 2..pos + len).ok_or("truncated segment")?;
        pos += len;
        match marker {
            0xC0 | 0xC1 => d.frame(body, true)?,
            0xC2 => d.frame(body, false)?,
            0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF => {
                return Err("not a Huffman-coded DCT frame")
            }
            0xC4 => d.huffman_tables(body)?,
            0xDB => d.quantization_tables(body)?,
            0xDD => {
                let r: [u8; 2] = body.try_into().map_err(|_| "bad DRI")?;
                d.restart = u16::from_be_bytes(r) as usize;
            }
            0xEE if body.starts_with(b"Adobe") => d.adobe = true,
            0xDA => pos = d.scan(bytes, body, pos)?,
            0xD0..=0xD8 | 0x01 | 0xDC => return Err("unexpected marker"),
            _ => {} // APPn, COM and the like
        }
    }
    let frame = d.frame.as_ref().ok_or("no frame")?;
    if d.scans == 0 {
        return Err("no scans");
    }
    if d.sequential && !d.decoded[..frame.comps.len()].iter().all(|&seen| seen) {
        return Err("a component no scan decoded");
    }
    let pixels = match d.pixels.take() {
        Some(streamed) => streamed,
        None => {
            let quant = d.quant_for_frame()?;
            let mut out = pixels::Output::new(frame, &quant);
            for my in 0..frame.mcu_y {
                out.mcu_row(my, &d.coefs, |c| my * c.v);
            }
            out.finish()
        }
    };
    Ok(Rgb {
        width: frame.width,
        height: frame.height,
        pixels,
    })
}

#[derive(Default)]
pub(super) struct Decoder {
    pub(super) frame: Option<Frame>,
    pub(super) coefs: Vec<Coefs>,
    /// Quantization tables in zigzag order, as they were at the first scan.
    pub(super) quant: [Option<[u16; 64]>; 4],
    pub(super) dc: [Option<Huffman>; 4],
    pub(super) ac: [Option<Huffman>; 4],
    pub(super) restart: usize,
    pub(super) adobe: bool,
    /// A sequential (baseline or extended) frame, and which of its components a scan has
    /// decoded (each must be decoded once).
    pub(super) sequential: bool,
    pub(super) decoded: [bool; 3],
    /// The pixels where a sequential scan made them as it went.
    pub(super) pixels: Option<Vec<u8>>,
    pub(super) scans: usize,
    pub(super) data: Option<ScanData>,
}

impl Decoder {
    fn frame(&mut self, b: &[u8], sequential: bool) -> Result<(), Bad> {
        if self.frame.is_some() {
            return Err("two frames");
        }
        self.sequential = sequential;
        let (&[precision, h0, h1, w0, w1, n], rest) =
            b.split_first_chunk::<6>().ok_or("short SOF")?;
        let (height, width) = (
            u16::from_be_bytes([h0, h1]) as usize,
            u16::from_be_bytes([w0, w1]) as usize,
        );
        if precision != 8 || width == 0 || height == 0 {
            return Err("not an 8-bit frame of known size");
        }
        let n = n as usize;
        if !(n == 1 || n == 3) || rest.len() != 3 * n {
            return Err("not greyscale or three components");
        }
        let mut comps: Vec<(u8, usize, usize, usize)> = rest
            .chunks_exact(3)
            .map(|c| {
                (
                    c[0],
                    (c[1] >> 4) as usize,
                    (c[1] & 15) as usize,
                    c[2] as usize,
                )
            })
            .collect();
        if comps
            .iter()
            .any(|&(_, h, v, tq)| !(1..=4).contains(&h) || !(1..=4).contains(&v) || tq > 3)
        {
            return Err("bad component");
        }
        if n == 3 {
            let ids: Vec<u8> = comps.iter().map(|c| c.0).collect();
            if ids[0] == ids[1] || ids[1] == ids[2] || ids[0] == ids[2] || ids == b"RGB" {
                return Err("component ids");
            }
            let luma = (comps[0].1, comps[0].2);
            if !matches!(luma, (1, 1) | (2, 1) | (2, 2))
                || comps[1..].iter().any(|c| (c.1, c.2) != (1, 1))
            {
                return Err("sampling this decoder does not take");
            }
        } else {
            // One component: its MCU is one block whatever its factors say (T.81 A.2.2).
            comps[0].1 = 1;
            comps[0].2 = 1;
        }
        let (hmax, vmax) = (comps[0].1, comps[0].2);
        let mcu_x = width.div_ceil(8 * hmax);
        let mcu_y = height.div_ceil(8 * vmax);
        let comps: Vec<Component> = comps
            .into_iter()
            .map(|(id, h, v, tq)| Component {
                id,
                h,
                v,
                tq,
                stride: mcu_x * h,
                rows: mcu_y * v,
                cols_used: (width * h).div_ceil(hmax).div_ceil(8),
                rows_used: (height * v).div_ceil(vmax).div_ceil(8),
            })
            .collect();
        self.frame = Some(Frame {
            width,
            height,
            comps,
            mcu_x,
            mcu_y,
        });
        Ok(())
    }

    fn huffman_tables(&mut self, mut b: &[u8]) -> Result<(), Bad> {
        while let Some((&tc_th, rest)) = b.split_first() {
            let counts: &[u8; 16] = rest.first_chunk().ok_or("short DHT")?;
            let total: usize = counts.iter().map(|&n| n as usize).sum();
            let symbols = rest.get(16..16 + total).ok_or("short DHT")?;
            let (class, slot) = (tc_th >> 4, (tc_th & 15) as usize);
            let table = Huffman::new(counts, symbols, class == 0)?;
            match (class, slot) {
                (0, 0..=3) => self.dc[slot] = Some(table),
                (1, 0..=3) => self.ac[slot] = Some(table),
                _ => return Err("bad DHT slot"),
            }
            b = &rest[16 + total..];
        }
        Ok(())
    }

    fn quantization_tables(&mut self, mut b: &[u8]) -> Result<(), Bad> {
        if self.scans > 0 {
            return Err("quantization table after a scan");
        }
        while let Some((&pq_tq, rest)) = b.split_first() {
            let (wide, slot) = (pq_tq >> 4, (pq_tq & 15) as usize);
            if slot > 3 || wide > 1 {
                return Err("bad DQT");
            }
            let size = if wide == 1 { 128 } else { 64 };
            let values = rest.get(..size).ok_or("short DQT")?;
            let mut table = [0u16; 64];
            for (i, q) in table.iter_mut().enumerate() {
                *q = if wide == 1 {
                    u16::from_be_bytes([values[2 * i], values[2 * i + 1]])
                } else {
                    u16::from(values[i])
                };
            }
            self.quant[slot] = Some(table);
            b = &rest[size..];
        }
        Ok(())
    }

    /// Each component's quantization table (zigzag order).
    pub(super) fn quant_for_frame(&self) -> Result<Vec<[u16; 64]>, Bad> {
        let frame = self.frame.as_ref().ok_or("no frame")?;
        frame
            .comps
            .iter()
            .map(|c| self.quant[c.tq].ok_or("no quantization table"))
            .collect()
    }

    /// Decodes one scan whose header is `header` and whose data starts at `from`; returns the
    /// position of the marker after it.
    fn scan(&mut self, bytes: &[u8], header: &[u8], from: usize) -> Result<usize, Bad> {
        self.scans += 1;
        if self.scans > MAX_SCANS {
            return Err("too many scans");
        }
        let frame = self.frame.as_ref().ok_or("scan before frame")?;
        if self.scans == 1 {
            if self.adobe {
                return Err("Adobe colour transform");
            }
            self.quant_for_frame()?;
        }
        let (&n, rest) = header.split_first().ok_or("short SOS")?;
        let n = n as usize;
        if !(1..=frame.comps.len()).contains(&n) || rest.len() != 2 * n + 3 {
            return Err("bad SOS");
        }
        let mut members = Vec::with_capacity(n);
        for sel in rest[..2 * n].chunks_exact(2) {
            let c = frame
                .comps
                .iter()
                .position(|c| c.id == sel[0])
                .ok_or("unknown component")?;
            if members.iter().any(|&(m, _, _)| m == c) {
                return Err("component twice in a scan");
            }
            members.push((c, (sel[1] >> 4) as usize, (sel[1] & 15) as usize));
        }
        let s = &rest[2 * n..];
        let band = Band {
            start: s[0] as usize,
            end: s[1] as usize,
            high: s[2] >> 4,
            low: s[2] & 15,
        };
        let valid = if self.sequential {
            (band.start, band.end, band.high, band.low) == (0, 63, 0, 0)
        } else {
            // A DC scan (interleaved or not) or a one-component AC band; one more bit of
            // precision per refinement.
            let dc_scan = band.start == 0;
            band.start <= band.end
                && band.end <= 63
                && (if dc_scan { band.end == 0 } else { n == 1 })
                && band.low <= 13
                && (band.high == 0 || band.high == band.low + 1)
        };
        if !valid {
            return Err("bad spectral selection or approximation");
        }
        if self.sequential {
            for &(c, _, _) in &members {
                if std::mem::replace(&mut self.decoded[c], true) {
                    return Err("component in two sequential scans");
                }
            }
        }
        let mut data = self.data.take().unwrap_or_default();
        let end = data.read(bytes, from)?;
        if self.coefs.is_empty() && !(self.sequential && n == frame.comps.len()) {
            // Room for every block, for what scan after scan adds to them.
            self.coefs = frame
                .comps
                .iter()
                .map(|c| Coefs::new(c.stride * c.rows))
                .collect();
        }
        let result = if self.sequential {
            self.sequential_data(&data, &members)
        } else {
            self.scan_data(&data, &members, band)
        };
        self.data = Some(data);
        result.map(|()| end)
    }
}
