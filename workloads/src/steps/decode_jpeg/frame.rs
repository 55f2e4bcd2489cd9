//! A frame's layout and its components' coefficients, as the decoder fills them and the pixel
//! stage reads them.

use super::bits::Bad;
use super::entropy::Block;

/// One colour component of the frame and its grid of 8x8 blocks.
pub(super) struct Component {
    pub id: u8,
    pub h: usize,
    pub v: usize,
    /// Quantization table number.
    pub tq: usize,
    /// Blocks per row as stored (whole MCUs).
    pub stride: usize,
    /// Block rows as stored (whole MCUs).
    pub rows: usize,
    /// Blocks per row and block rows holding the image (what a one-component scan covers).
    pub cols_used: usize,
    pub rows_used: usize,
}

pub(super) struct Frame {
    pub width: usize,
    pub height: usize,
    pub comps: Vec<Component>,
    pub mcu_x: usize,
    pub mcu_y: usize,
}

/// One component's coefficients, block after block, row after row: the DCs apart (a DC scan
/// then reads and writes 2 bytes a block, not a cache line), the AC coefficients (natural
/// order), and a mask of each block's non-zero AC coefficients (zigzag order).
pub(super) struct Coefs {
    pub dc: Vec<i16>,
    pub ac: Vec<i16>,
    pub nonzero: Vec<u64>,
}

impl Coefs {
    /// Block `i`'s AC coefficients and mask.
    #[inline(always)]
    pub(super) fn block(&mut self, i: usize) -> Result<Block<'_>, Bad> {
        self.block_and_dc(i).map(|(block, _)| block)
    }

    /// Zeroed room for `blocks` blocks.
    pub(super) fn new(blocks: usize) -> Coefs {
        Coefs {
            dc: vec![0; blocks],
            ac: vec![0; blocks * 64],
            nonzero: vec![0; blocks],
        }
    }

    /// Back to zero, touching only the blocks with AC terms.
    pub(super) fn clear(&mut self) {
        for (block, mask) in self.ac.chunks_exact_mut(64).zip(&mut self.nonzero) {
            if *mask != 0 {
                block.fill(0);
                *mask = 0;
            }
        }
    }

    /// Block `i`'s AC coefficients, mask and DC.
    #[inline(always)]
    pub(super) fn block_and_dc(&mut self, i: usize) -> Result<(Block<'_>, &mut i16), Bad> {
        let coefs = self
            .ac
            .get_mut(i * 64..i * 64 + 64)
            .and_then(|b| b.try_into().ok());
        match (coefs, self.nonzero.get_mut(i), self.dc.get_mut(i)) {
            (Some(coefs), Some(nonzero), Some(dc)) => Ok((Block { coefs, nonzero }, dc)),
            _ => Err("block outside the frame"),
        }
    }

    /// Block `i`'s DC.
    #[inline(always)]
    pub(super) fn dc(&mut self, i: usize) -> Result<&mut i16, Bad> {
        self.dc.get_mut(i).ok_or("block outside the frame")
    }
}
