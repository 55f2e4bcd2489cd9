//! Reading a scan's entropy-coded bits: its bytes with their stuffing removed and split at
//! restart markers, a big-endian bit reader over them, and Huffman tables with one-look-up
//! decoding of short codes (and, for AC tables, of a short code and its value together).

/// Why the fast decoder gave up on a file; the caller then decodes it with zune-jpeg, so this
/// is never shown to a user (zune-jpeg's own message is).
pub(super) type Bad = &'static str;

/// Zero bytes after a scan's data: the reader loads 8 bytes at a time and may run ahead.
const PAD: usize = 64;

/// One scan's entropy-coded bytes, unstuffed (0xFF00 -> 0xFF, fill 0xFFs dropped), with the
/// offset where each restart interval begins.
#[derive(Default)]
pub(super) struct ScanData {
    pub bytes: Vec<u8>,
    pub starts: Vec<usize>,
}

impl ScanData {
    /// Reads the entropy-coded data beginning at `from`, reusing `self`'s buffers; returns the
    /// position of the marker that ends it (the 0xFF).
    pub fn read(&mut self, file: &[u8], from: usize) -> Result<usize, Bad> {
        self.bytes.clear();
        self.starts.clear();
        self.starts.push(0);
        let mut pos = from;
        loop {
            let rest = file.get(pos..).ok_or("scan past the end")?;
            let run = memchr::memchr(0xFF, rest).ok_or("no marker after a scan")?;
            self.bytes.extend_from_slice(&rest[..run]);
            pos += run;
            // `pos` is at an 0xFF; skip fill bytes.
            let mut next = pos + 1;
            while file.get(next) == Some(&0xFF) {
                next += 1;
            }
            match file.get(next) {
                Some(0x00) => {
                    self.bytes.push(0xFF);
                    pos = next + 1;
                }
                Some(0xD0..=0xD7) => {
                    self.starts.push(self.bytes.len());
                    pos = next + 1;
                }
                Some(_) => {
                    self.starts.push(self.bytes.len()); // the end of the last interval
                    self.bytes.resize(self.bytes.len() + PAD, 0);
                    return Ok(next - 1);
                }
                None => return Err("no marker after a scan"),
            }
        }
    }

    /// Restart intervals in the data.
    pub fn intervals(&self) -> usize {
        self.starts.len() - 1
    }
}

/// Codes up to this many bits are decoded with one table look-up.
const FAST_BITS: u32 = 9;

/// A Huffman table (T.81 Annex C), canonical codes of 1-16 bits.
#[derive(Clone)]
pub(super) struct Huffman {
    /// `(length << 8) | symbol` for every FAST_BITS-bit prefix that starts a short code; 0 where
    /// the code is longer.
    fast: [u16; 1 << FAST_BITS],
    /// For an AC table: `(value << 16) | (run << 8) | bits` where the prefix holds a whole
    /// coefficient (its code and its value's bits); 0 elsewhere.
    fast_ac: [i32; 1 << FAST_BITS],
    /// Largest code of each length (-1 where there is none); index 0 unused.
    max_code: [i32; 17],
    /// `values[code + offset[length]]` is a long code's symbol.
    offset: [i32; 17],
    values: [u8; 256],
}

impl Huffman {
    /// Builds a table from a DHT segment's 16 code counts and its symbols, refusing what
    /// libjpeg and zune-jpeg refuse: a code of all one bits, and a DC table (`dc`) with a
    /// magnitude category above 15.
    pub fn new(counts: &[u8; 16], symbols: &[u8], dc: bool) -> Result<Huffman, Bad> {
        let total: usize = counts.iter().map(|&n| n as usize).sum();
        if total > 256 || symbols.len() != total {
            return Err("bad Huffman table size");
        }
        if dc && symbols.iter().any(|&s| s > 15) {
            return Err("DC Huffman symbol above 15");
        }
        let mut table = Huffman {
            fast: [0; 1 << FAST_BITS],
            fast_ac: [0; 1 << FAST_BITS],
            max_code: [-1; 17],
            offset: [0; 17],
            values: [0; 256],
        };
        table.values[..total].copy_from_slice(symbols);
        let (mut code, mut k) = (0u32, 0usize);
        for len in 1..=16u32 {
            let n = counts[len as usize - 1] as u32;
            table.offset[len as usize] = k as i32 - code as i32;
            if n > 0 && code + n >= 1 << len {
                return Err("Huffman table has more codes than fit");
            }
            for i in 0..n {
                if len <= FAST_BITS {
                    let shift = FAST_BITS - len;
                    let first = ((code + i) << shift) as usize;
                    let entry = ((len as u16) << 8) | symbols[k + i as usize] as u16;
                    table.fast[first..first + (1 << shift)].fill(entry);
                }
            }
            code += n;
            k += n as usize;
            if n > 0 {
                table.max_code[len as usize] = code as i32 - 1;
            }
            code <<= 1;
        }
        for (prefix, &entry) in table.fast.iter().enumerate() {
            let (len, rs) = (u32::from(entry >> 8), entry & 255);
            let (run, size) = (i32::from(rs >> 4), u32::from(rs & 15));
            if entry != 0 && size != 0 && len + size <= FAST_BITS {
                let bits = (prefix as u32 >> (FAST_BITS - len - size)) & ((1 << size) - 1);
                let value = extend(bits as i32, size);
                table.fast_ac[prefix] = (value << 16) | (run << 8) | (len + size) as i32;
            }
        }
        Ok(table)
    }
}

/// A big-endian bit reader over unstuffed scan data with at least `PAD` zero bytes after it.
pub(super) struct Bits<'a> {
    data: &'a [u8],
    pos: usize,
    /// The next bits, most significant first; `count` of them are valid.
    buf: u64,
    count: u32,
}

impl<'a> Bits<'a> {
    pub fn new(data: &'a [u8]) -> Bits<'a> {
        debug_assert!(data.len() >= PAD);
        Bits {
            data,
            pos: 0,
            buf: 0,
            count: 0,
        }
    }

    /// Starts reading at byte `at` (the start of a restart interval).
    #[inline(always)]
    pub fn seek(&mut self, at: usize) {
        self.pos = at.min(self.data.len() - 8);
        self.buf = 0;
        self.count = 0;
        self.refill();
    }

    /// Valid bits in the buffer.
    #[inline(always)]
    pub(super) fn available(&self) -> u32 {
        self.count
    }

    /// Bits read so far from the start of the data.
    #[inline(always)]
    pub fn consumed(&self) -> usize {
        self.pos * 8 - self.count as usize
    }

    /// Tops the buffer up to at least 56 valid bits (branch-free: reads 8 bytes, keeps whole
    /// ones). Past the end it reads the zero padding; `consumed` then tells.
    #[inline(always)]
    pub fn refill(&mut self) {
        let limit = self.data.len() - 8;
        let at = self.pos.min(limit);
        let word = u64::from_be_bytes(self.data[at..at + 8].try_into().unwrap_or([0; 8]));
        self.buf |= word >> self.count;
        self.pos = at + ((63 - self.count) >> 3) as usize;
        self.count |= 56;
    }

    #[inline(always)]
    pub(super) fn skip(&mut self, n: u32) {
        self.buf <<= n;
        self.count -= n;
    }

    /// `n` (0-16) bits as an unsigned number; the caller has refilled.
    #[inline(always)]
    pub(super) fn take(&mut self, n: u32) -> i32 {
        if n == 0 {
            return 0;
        }
        let v = (self.buf >> (64 - n)) as i32;
        self.skip(n);
        v
    }

    /// The next `n` (1-56) bits at the top of a word; the caller has refilled.
    #[inline(always)]
    pub(super) fn take_top(&mut self, n: u32) -> u64 {
        let v = self.buf & !(u64::MAX >> n);
        self.skip(n);
        v
    }

    /// One bit, refilling when the buffer is empty.
    #[inline(always)]
    pub(super) fn bit(&mut self) -> bool {
        if self.count == 0 {
            self.refill();
        }
        let b = (self.buf as i64) < 0;
        self.skip(1);
        b
    }

    /// The next Huffman symbol; the caller has refilled (at least 16 valid bits).
    #[inline(always)]
    pub(super) fn symbol(&mut self, table: &Huffman) -> Result<u8, Bad> {
        let entry = table.fast[(self.buf >> (64 - FAST_BITS)) as usize];
        if entry != 0 {
            self.skip(u32::from(entry >> 8));
            return Ok(entry as u8);
        }
        let (symbol, len) = long_symbol(self.buf, table)?;
        self.skip(len);
        Ok(symbol)
    }

    /// A `size`-bit magnitude category's value (T.81 F.2.2.1, EXTEND).
    #[inline(always)]
    pub(super) fn extend(&mut self, size: u32) -> i32 {
        let v = self.take(size);
        extend(v, size)
    }

    /// Refills when fewer than 32 bits are left (a code and a value need at most 32).
    #[inline(always)]
    pub(super) fn ensure(&mut self) {
        if self.count < 32 {
            self.refill();
        }
    }

    /// A whole coefficient from the AC table's fast look-up: `(run, value)`, or None where
    /// the next code and value are longer than FAST_BITS together.
    #[inline(always)]
    pub(super) fn fast_ac(&mut self, table: &Huffman) -> Option<(usize, i32)> {
        let entry = table.fast_ac[(self.buf >> (64 - FAST_BITS)) as usize];
        if entry == 0 {
            return None;
        }
        self.skip((entry & 255) as u32);
        Some(((entry >> 8 & 15) as usize, entry >> 16))
    }
}

/// The value of `size` bits `v` (T.81 F.2.2.1, EXTEND).
#[inline(always)]
fn extend(v: i32, size: u32) -> i32 {
    if size > 0 && v < 1 << (size - 1) {
        v - (1 << size) + 1
    } else {
        v
    }
}

/// A code longer than FAST_BITS at the top of `buf`: its symbol and length. Takes the bits by
/// value, so the reader's state stays in registers in the loops that call it.
#[inline(never)]
fn long_symbol(buf: u64, table: &Huffman) -> Result<(u8, u32), Bad> {
    for len in FAST_BITS + 1..=16 {
        let code = (buf >> (64 - len)) as i32;
        if code <= table.max_code[len as usize] {
            let at = (code + table.offset[len as usize]) as usize;
            return Ok((table.values[at & 255], len));
        }
    }
    Err("bad Huffman code")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reader_unstuffs_and_splits_at_restart_markers() {
        let file = [
            0xAB, 0xFF, 0x00, 0x12, 0xFF, 0xD0, 0x34, 0xFF, 0xFF, 0xD1, 0x56, 0xFF, 0xDA,
        ];
        let mut scan = ScanData::default();
        assert_eq!(scan.read(&file, 0), Ok(11));
        assert_eq!(&scan.bytes[..4], &[0xAB, 0xFF, 0x12, 0x34]);
        assert_eq!(scan.bytes[5..].iter().filter(|&&b| b != 0).count(), 0);
        assert_eq!(scan.starts, vec![0, 3, 4, 5]);
        assert_eq!(scan.intervals(), 3);
        assert!(scan.read(&[0x12, 0x34], 0).is_err());
    }

    #[test]
    fn bits_come_out_most_significant_first_across_refills() {
        let mut data: Vec<u8> = (0..40u8).map(|i| i.wrapping_mul(37)).collect();
        let bits_of: Vec<bool> = data
            .iter()
            .flat_map(|&b| (0..8).rev().map(move |i| b >> i & 1 == 1))
            .collect();
        data.resize(data.len() + PAD, 0);
        let mut bits = Bits::new(&data);
        bits.seek(0);
        for (i, &expected) in bits_of.iter().enumerate() {
            assert_eq!(bits.bit(), expected, "bit {i}");
        }
        assert_eq!(bits.consumed(), 320);
        bits.seek(2);
        bits.refill();
        assert_eq!(
            bits.take(13),
            (i32::from(data[2]) << 5) | i32::from(data[3] >> 3)
        );
    }

    #[test]
    fn huffman_codes_of_every_length_decode() {
        // One code of each length 1..=16: the canonical codes are 0, 10, 110, ..., so symbol
        // n is n ones then a zero (no code is all ones).
        let counts = [1u8; 16];
        let symbols: Vec<u8> = (0..16).collect();
        let table = Huffman::new(&counts, &symbols, false).unwrap();
        for n in 0..16u32 {
            let code: u64 = ((1u64 << n) - 1) << 1; // n ones then a zero, n + 1 bits
            let word = code << (64 - (n + 1));
            let mut data = word.to_be_bytes().to_vec();
            data.resize(8 + PAD, 0);
            let mut bits = Bits::new(&data);
            bits.seek(0);
            assert_eq!(bits.symbol(&table), Ok(n as u8), "length {}", n + 1);
            assert_eq!(bits.consumed(), (n + 1) as usize);
        }
        // More codes than fit, a code of all ones, a DC category above 15, a short table.
        let mut one_length = [0u8; 16];
        for (n, fits) in [(3, false), (2, false), (1, true)] {
            one_length[0] = n;
            let symbols: Vec<u8> = (0..n).collect();
            assert_eq!(
                Huffman::new(&one_length, &symbols, false).is_ok(),
                fits,
                "{n} codes of 1 bit"
            );
        }
        assert!(Huffman::new(&one_length, &[16], true).is_err());
        assert!(Huffman::new(&one_length, &[16], false).is_ok());
        assert!(Huffman::new(&[1; 16], &[0; 3], false).is_err());
    }
}
