//! Shard codecs applied to the whole record stream, as TFRecord does (`none`, `gzip`, `zlib`,
//! plus `zstd` and `lz4`): a writer that must be finished explicitly, and a reader.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};

use flate2::Compression;
use workloads::Codec;

/// Buffer of the file reader under every codec; large enough for sequential cold reads.
pub const READ_BUFFER_BYTES: usize = 1 << 20;
const WRITE_BUFFER_BYTES: usize = 1 << 20;

/// A compressing writer over a shard file; [`CodecWriter::finish`] writes the trailer.
///
/// [`CodecWriter::restart`] makes a point where decompression can begin without what came
/// before: a full flush of the deflate stream (its dictionary emptied, the stream still one
/// standard gzip or zlib stream that any reader, TensorFlow's included, reads through), or a new
/// frame for zstd and lz4 (concatenated frames, one stream to their decoders). A store reads a
/// record by number from the restart before it ([`restart_reader`]) instead of from the
/// shard's start.
pub struct CodecWriter {
    inner: Inner,
}

/// The encoder of each codec; a zstd or lz4 encoder is taken out while its frame is finished
/// and a new one begun (`None` only if that failed), a zstd one with its level.
enum Inner {
    None(Counted),
    Deflate(Deflater),
    Zstd(Option<zstd::stream::Encoder<'static, Counted>>, i32),
    Lz4(Option<lz4_flex::frame::FrameEncoder<Counted>>),
}

/// A zstd or lz4 writer used after an error lost its encoder.
fn lost() -> io::Error {
    io::Error::other("the codec's writer was lost by an earlier error")
}

/// The file's buffered writer, counting the bytes given to it: a restart's offset in the file.
pub struct Counted {
    file: BufWriter<File>,
    bytes: u64,
}

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// The deflate stream of a gzip or zlib shard, written through flate2's `Compress` so that it
/// can be fully flushed (flate2's writers flush with a sync flush, which keeps the dictionary).
struct Deflater {
    out: Counted,
    compress: flate2::Compress,
    /// CRC-32 and length of what was written, for the gzip trailer; `None` for zlib, whose
    /// header and Adler-32 trailer `Compress` writes itself.
    gzip: Option<flate2::Crc>,
    buf: Vec<u8>,
}

const DEFLATE_OUT_BYTES: usize = 64 << 10;

impl Deflater {
    fn new(mut out: Counted, level: u32, gzip: bool) -> io::Result<Deflater> {
        if gzip {
            // RFC 1952's header as flate2's GzEncoder writes it: no name, time 0, OS unknown.
            let xfl = match level {
                9.. => 2,
                0..=1 => 4,
                _ => 0,
            };
            out.write_all(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, xfl, 0xff])?;
        }
        Ok(Deflater {
            out,
            compress: flate2::Compress::new(Compression::new(level), !gzip),
            gzip: gzip.then(flate2::Crc::new),
            buf: Vec::with_capacity(DEFLATE_OUT_BYTES),
        })
    }

    /// Compresses `input` with `flush`, writing what comes out.
    fn run(&mut self, mut input: &[u8], flush: flate2::FlushCompress) -> io::Result<()> {
        loop {
            self.buf.clear();
            let before = self.compress.total_in();
            let status = self
                .compress
                .compress_vec(input, &mut self.buf, flush)
                .map_err(io::Error::other)?;
            input = &input[(self.compress.total_in() - before) as usize..];
            self.out.write_all(&self.buf)?;
            let room_left = self.buf.len() < self.buf.capacity();
            if status == flate2::Status::StreamEnd
                || (input.is_empty() && room_left && flush != flate2::FlushCompress::Finish)
            {
                return Ok(());
            }
        }
    }

    fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        if let Some(crc) = &mut self.gzip {
            crc.update(data);
        }
        self.run(data, flate2::FlushCompress::None)
    }

    fn finish(mut self) -> io::Result<Counted> {
        self.run(&[], flate2::FlushCompress::Finish)?;
        if let Some(crc) = &self.gzip {
            self.out.write_all(&crc.sum().to_le_bytes())?;
            self.out.write_all(&crc.amount().to_le_bytes())?;
        }
        Ok(self.out)
    }
}

impl CodecWriter {
    pub fn new(codec: Codec, file: File) -> io::Result<CodecWriter> {
        let out = Counted {
            file: BufWriter::with_capacity(WRITE_BUFFER_BYTES, file),
            bytes: 0,
        };
        let inner = match codec {
            Codec::None => Inner::None(out),
            Codec::Gzip { level } => Inner::Deflate(Deflater::new(out, level, true)?),
            Codec::Zlib { level } => Inner::Deflate(Deflater::new(out, level, false)?),
            Codec::Zstd { level } => {
                Inner::Zstd(Some(zstd::stream::Encoder::new(out, level)?), level)
            }
            Codec::Lz4 => Inner::Lz4(Some(lz4_flex::frame::FrameEncoder::new(out))),
        };
        Ok(CodecWriter { inner })
    }

    /// Makes a restart here and returns its offset in the file (an uncompressed stream's is
    /// where the next record starts: its frames can be found again from there).
    pub fn restart(&mut self) -> io::Result<u64> {
        Ok(match &mut self.inner {
            Inner::None(w) => w.bytes,
            Inner::Deflate(d) => {
                d.run(&[], flate2::FlushCompress::Full)?;
                d.out.bytes
            }
            Inner::Zstd(slot, level) => {
                let out = slot.take().ok_or_else(lost)?.finish()?;
                let at = out.bytes;
                *slot = Some(zstd::stream::Encoder::new(out, *level)?);
                at
            }
            Inner::Lz4(slot) => {
                let out = slot.take().ok_or_else(lost)?;
                let out = out.finish().map_err(io::Error::other)?;
                let at = out.bytes;
                *slot = Some(lz4_flex::frame::FrameEncoder::new(out));
                at
            }
        })
    }

    /// Completes the stream and returns the file, flushed (not yet synced).
    pub fn finish(self) -> io::Result<File> {
        let out = match self.inner {
            Inner::None(w) => w,
            Inner::Deflate(d) => d.finish()?,
            Inner::Zstd(w, _) => w.ok_or_else(lost)?.finish()?,
            Inner::Lz4(w) => w.ok_or_else(lost)?.finish().map_err(io::Error::other)?,
        };
        out.file.into_inner().map_err(|e| e.into_error())
    }
}

impl Write for CodecWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match &mut self.inner {
            Inner::None(w) => w.write_all(buf),
            Inner::Deflate(d) => d.write_all(buf),
            Inner::Zstd(w, _) => w.as_mut().ok_or_else(lost)?.write_all(buf),
            Inner::Lz4(w) => w.as_mut().ok_or_else(lost)?.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.inner {
            Inner::None(w) => w.flush(),
            Inner::Deflate(d) => d.out.flush(),
            Inner::Zstd(w, _) => w.as_mut().map_or(Ok(()), |w| w.flush()),
            Inner::Lz4(w) => w.as_mut().map_or(Ok(()), |w| w.flush()),
        }
    }
}

/// A decompressing reader over a shard file (or anything read like one).
pub fn reader<R: Read + Send + 'static>(codec: Codec, file: R) -> io::Result<Box<dyn Read + Send>> {
    let buffered = BufReader::with_capacity(READ_BUFFER_BYTES, file);
    Ok(match codec {
        Codec::None => Box::new(buffered),
        Codec::Gzip { .. } => Box::new(flate2::bufread::MultiGzDecoder::new(buffered)),
        Codec::Zlib { .. } => Box::new(flate2::bufread::ZlibDecoder::new(buffered)),
        Codec::Zstd { .. } => Box::new(zstd::stream::Decoder::with_buffer(buffered)?),
        Codec::Lz4 => Box::new(Lz4Frames(lz4_flex::frame::FrameDecoder::new(buffered))),
    })
}

/// lz4_flex's decoder reads concatenated frames but ends each `read` call at a frame's end
/// with 0, which a caller takes for the stream's end: read again once, where the next frame
/// begins (a writer's restarts never leave an empty frame).
struct Lz4Frames<R: Read>(lz4_flex::frame::FrameDecoder<R>);

impl<R: Read> Read for Lz4Frames<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.0.read(buf)? {
            0 if !buf.is_empty() => self.0.read(buf),
            n => Ok(n),
        }
    }
}

/// A decompressing reader from a restart [`CodecWriter::restart`] made: `file` positioned at
/// its offset. A deflate stream is read raw from there (the gzip or zlib header lies before
/// the first restart; the trailer after the stream's last block is not read).
pub fn restart_reader<R: Read + Send + 'static>(
    codec: Codec,
    file: R,
) -> io::Result<Box<dyn Read + Send>> {
    let buffered = BufReader::with_capacity(READ_BUFFER_BYTES, file);
    Ok(match codec {
        Codec::Gzip { .. } | Codec::Zlib { .. } => {
            Box::new(flate2::bufread::DeflateDecoder::new(buffered))
        }
        _ => return reader(codec, buffered.into_inner()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const ALL: [&str; 7] = ["none", "gzip", "gzip:1", "zlib", "zstd", "zstd:19", "lz4"];

    #[test]
    fn every_codec_round_trips_and_compresses_redundant_data() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..200_000u32)
            .flat_map(|i| ((i / 64) as u16).to_le_bytes())
            .collect();
        for name in ALL {
            let codec: Codec = name.parse().unwrap();
            let path = dir.path().join(format!("s{}", codec.extension()));
            let mut w = CodecWriter::new(codec, File::create(&path).unwrap()).unwrap();
            w.write_all(&data).unwrap();
            w.finish().unwrap();
            let size = std::fs::metadata(&path).unwrap().len() as usize;
            if codec == Codec::None {
                assert_eq!(size, data.len());
            } else {
                assert!(size < data.len() / 4, "{name}: {size} bytes");
            }
            let mut back = Vec::new();
            reader(codec, File::open(&path).unwrap())
                .unwrap()
                .read_to_end(&mut back)
                .unwrap();
            assert_eq!(back, data, "{name}");
        }
    }

    #[test]
    fn gzip_stream_is_standard_gzip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.gz");
        let mut w =
            CodecWriter::new(Codec::Gzip { level: 6 }, File::create(&path).unwrap()).unwrap();
        w.write_all(b"hello").unwrap();
        w.finish().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(
            &bytes[..3],
            &[0x1f, 0x8b, 8],
            "gzip magic and deflate method"
        );
    }

    /// Records framed and compressed with `codec` into `path`.
    fn write_records(path: &std::path::Path, codec: Codec, records: &[Vec<u8>]) {
        let w = CodecWriter::new(codec, File::create(path).unwrap()).unwrap();
        let mut framed = crate::store::framing::RecordWriter::new(w);
        for r in records {
            framed.write_record(r).unwrap();
        }
        framed.into_inner().finish().unwrap();
    }

    /// Every record of `path` read as `codec`, until the end or the first error.
    fn read_records(path: &std::path::Path, codec: Codec) -> Result<Vec<Vec<u8>>, String> {
        let inner = reader(codec, File::open(path).unwrap()).map_err(|e| e.to_string())?;
        let mut records = crate::store::framing::RecordReader::new(inner);
        let mut out = Vec::new();
        let mut payload = Vec::new();
        while records.next_into(&mut payload).map_err(|e| e.to_string())? {
            out.push(payload.clone());
        }
        Ok(out)
    }

    #[test]
    fn a_shard_read_with_another_codec_than_written_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let records = vec![b"first record".to_vec(), vec![7u8; 5000]];
        for written in ALL {
            let w: Codec = written.parse().unwrap();
            let path = dir.path().join(format!("s-{written}"));
            write_records(&path, w, &records);
            for read in ["none", "gzip", "zlib", "zstd", "lz4"] {
                let r: Codec = read.parse().unwrap();
                let result = read_records(&path, r);
                if std::mem::discriminant(&r) == std::mem::discriminant(&w) {
                    assert_eq!(result.unwrap(), records, "{written} as {read}");
                } else {
                    assert!(result.is_err(), "{written} read as {read} gave {result:?}");
                }
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

        #[test]
        fn records_round_trip_through_every_codec(
            records in proptest::collection::vec(proptest::collection::vec(proptest::num::u8::ANY, 0..3000), 0..12),
            which in 0usize..ALL.len(),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let codec: Codec = ALL[which].parse().unwrap();
            let path = dir.path().join("s");
            write_records(&path, codec, &records);
            proptest::prop_assert_eq!(read_records(&path, codec).unwrap(), records);
        }

        #[test]
        fn arbitrary_bytes_never_panic_the_reader(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..4000),
            which in 0usize..ALL.len(),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("junk");
            std::fs::write(&path, &bytes).unwrap();
            // Any outcome but a panic: records or an error.
            let _ = read_records(&path, ALL[which].parse().unwrap());
        }
    }
}
