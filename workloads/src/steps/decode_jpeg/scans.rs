//! Decoding a scan's data into the frame's coefficients: MCU by MCU or block by block,
//! interval by interval (T.81 E.2 and G.1.2).

use super::bits::Bad;
use super::bits::{Bits, Huffman, ScanData};
use super::decoder::Decoder;
use super::entropy::{self, Band};
use super::frame::Coefs;
use super::pixels;

impl Decoder {
    /// A sequential scan: each block's DC and all its AC coefficients, MCU by MCU where the
    /// scan has several components. A scan of every component (the usual one) goes to the
    /// pixels MCU row by MCU row as it is decoded, its coefficients never stored whole.
    pub(super) fn sequential_data(
        &mut self,
        data: &ScanData,
        members: &[(usize, usize, usize)],
    ) -> Result<(), Bad> {
        let frame = self.frame.as_ref().ok_or("no frame")?;
        let mut bits = Bits::new(&data.bytes);
        let mut run = Intervals::new(data, self.restart, &mut bits);
        let mut tables = Vec::with_capacity(members.len());
        for &(c, td, ta) in members {
            tables.push((c, table(&self.dc, td)?, table(&self.ac, ta)?));
        }
        let stream = members.len() == frame.comps.len();
        let quant = if stream {
            self.quant_for_frame()?
        } else {
            Vec::new()
        };
        let mut out = stream.then(|| pixels::Output::new(frame, &quant));
        // Streamed: room for one MCU row's blocks, cleared after each.
        let mut rows: Vec<Coefs> = match stream {
            true => frame
                .comps
                .iter()
                .map(|c| Coefs::new(c.stride * c.v))
                .collect(),
            false => Vec::new(),
        };
        let coefs: &mut [Coefs] = if stream { &mut rows } else { &mut self.coefs };
        let interleaved = tables.len() > 1;
        let unit_rows = if interleaved {
            frame.mcu_y
        } else {
            frame.comps[members[0].0].rows_used
        };
        let mut preds = [0i32; 3];
        for r in 0..unit_rows {
            // The first block row of unit row `r` in `coefs`.
            let first = |v: usize| match (stream, interleaved) {
                (true, _) => 0,
                (false, true) => r * v,
                (false, false) => r,
            };
            if let [(c, dc, ac)] = tables[..] {
                let comp = &frame.comps[c];
                for bx in 0..comp.cols_used {
                    if run.next_unit(&mut bits)? {
                        preds = [0; 3];
                    }
                    let i = first(comp.v) * comp.stride + bx;
                    let (block, dc_out) = coefs[c].block_and_dc(i)?;
                    entropy::sequential(&mut bits, dc, ac, &mut preds[c], dc_out, block)?;
                }
            } else {
                for mx in 0..frame.mcu_x {
                    if run.next_unit(&mut bits)? {
                        preds = [0; 3];
                    }
                    for &(c, dc, ac) in &tables {
                        let comp = &frame.comps[c];
                        for by in 0..comp.v {
                            for bx in 0..comp.h {
                                let i = (first(comp.v) + by) * comp.stride + mx * comp.h + bx;
                                let (block, dc_out) = coefs[c].block_and_dc(i)?;
                                let pred = &mut preds[c];
                                entropy::sequential(&mut bits, dc, ac, pred, dc_out, block)?;
                            }
                        }
                    }
                }
            }
            if let Some(out) = &mut out {
                out.mcu_row(r, coefs, |_| 0);
                coefs.iter_mut().for_each(Coefs::clear);
            }
        }
        run.finish(&bits)?;
        if let Some(out) = out {
            self.pixels = Some(out.finish());
        }
        Ok(())
    }

    pub(super) fn scan_data(
        &mut self,
        data: &ScanData,
        members: &[(usize, usize, usize)],
        band: Band,
    ) -> Result<(), Bad> {
        let frame = self.frame.as_ref().ok_or("no frame")?;
        let mut bits = Bits::new(&data.bytes);
        let mut run = Intervals::new(data, self.restart, &mut bits);
        if members.len() > 1 {
            // Interleaved DC scan: MCU by MCU, each component's h x v blocks.
            let mut tables = Vec::with_capacity(members.len());
            for &(c, td, _) in members {
                let first = band.high == 0;
                tables.push((
                    c,
                    if first {
                        Some(table(&self.dc, td)?)
                    } else {
                        None
                    },
                ));
            }
            let mut preds = [0i32; 3];
            for my in 0..frame.mcu_y {
                for mx in 0..frame.mcu_x {
                    if run.next_unit(&mut bits)? {
                        preds = [0; 3];
                    }
                    for &(c, table) in &tables {
                        let comp = &frame.comps[c];
                        for by in 0..comp.v {
                            for bx in 0..comp.h {
                                let i = (my * comp.v + by) * comp.stride + mx * comp.h + bx;
                                let dc = self.coefs[c].dc(i)?;
                                match table {
                                    Some(t) => entropy::dc_first(
                                        &mut bits,
                                        t,
                                        &mut preds[c],
                                        band.low,
                                        dc,
                                    )?,
                                    None => entropy::dc_refine(&mut bits, band.low, dc),
                                }
                            }
                        }
                    }
                }
            }
            return run.finish(&bits);
        }
        let (c, td, ta) = members[0];
        let comp = &frame.comps[c];
        let coefs = &mut self.coefs[c];
        let (cols, rows, stride) = (comp.cols_used, comp.rows_used, comp.stride);
        // One component's blocks in raster order; `$body` decodes block `$i`.
        macro_rules! each_block {
            (|$i:ident, $restarted:ident| $body:expr) => {
                for by in 0..rows {
                    for bx in 0..cols {
                        let $restarted = run.next_unit(&mut bits)?;
                        let $i = by * stride + bx;
                        $body;
                    }
                }
            };
        }
        match (band.start == 0, band.high == 0) {
            (true, true) => {
                let table = table(&self.dc, td)?;
                let mut pred = 0;
                each_block!(|i, restarted| {
                    if restarted {
                        pred = 0;
                    }
                    entropy::dc_first(&mut bits, table, &mut pred, band.low, coefs.dc(i)?)?
                });
            }
            (true, false) => {
                each_block!(|i, _r| entropy::dc_refine(&mut bits, band.low, coefs.dc(i)?))
            }
            (false, first) => {
                let table = table(&self.ac, ta)?;
                let mut eob_run = 0u32;
                if first {
                    each_block!(|i, restarted| {
                        if restarted {
                            eob_run = 0;
                        }
                        entropy::ac_first(&mut bits, table, band, &mut eob_run, coefs.block(i)?)?
                    });
                } else {
                    each_block!(|i, restarted| {
                        if restarted {
                            eob_run = 0;
                        }
                        entropy::ac_refine(&mut bits, table, band, &mut eob_run, coefs.block(i)?)?
                    });
                }
            }
        }
        run.finish(&bits)
    }
}

/// The Huffman table a scan names (slot 0-3).
fn table(tables: &[Option<Huffman>; 4], slot: usize) -> Result<&Huffman, Bad> {
    tables
        .get(slot)
        .and_then(Option::as_ref)
        .ok_or("a scan names a table never defined")
}

/// Walks a scan's restart intervals: every `restart` units the reader moves to the next
/// interval's bytes, and an interval's units may not read past its end.
struct Intervals<'a> {
    data: &'a ScanData,
    restart: usize,
    /// Units left in the current interval.
    left: usize,
    interval: usize,
}

impl<'a> Intervals<'a> {
    /// Starts `bits` at the scan's first interval.
    fn new(data: &'a ScanData, restart: usize, bits: &mut Bits) -> Intervals<'a> {
        bits.seek(0);
        Intervals {
            data,
            restart,
            left: if restart == 0 { usize::MAX } else { restart },
            interval: 0,
        }
    }

    /// Called before each unit; true where the unit begins a new interval (after the first),
    /// so predictions and end-of-band runs restart.
    #[inline(always)]
    fn next_unit(&mut self, bits: &mut Bits) -> Result<bool, Bad> {
        if self.left == 0 {
            self.check(bits)?;
            self.interval += 1;
            if self.interval >= self.data.intervals() {
                return Err("fewer restart markers than intervals");
            }
            bits.seek(self.data.starts[self.interval]);
            self.left = self.restart - 1;
            return Ok(true);
        }
        self.left -= 1;
        Ok(false)
    }

    /// The current interval was read to its last byte, not past it (an encoder pads the last
    /// byte with one bits; data left over, like data missing, is damage, and zune-jpeg, which
    /// refuses some of it, decides what such a file gives).
    #[inline(always)]
    fn check(&self, bits: &Bits) -> Result<(), Bad> {
        let end = self.data.starts[self.interval + 1] * 8;
        match end.checked_sub(bits.consumed()) {
            Some(left) if left < 8 => Ok(()),
            Some(_) => Err("data left over in a scan"),
            None => Err("scan data ran out"),
        }
    }

    /// At the end of the scan: the last interval was the last one in the data.
    #[inline(always)]
    fn finish(&self, bits: &Bits) -> Result<(), Bad> {
        self.check(bits)?;
        if self.interval + 1 != self.data.intervals() {
            return Err("more restart markers than intervals");
        }
        Ok(())
    }
}
