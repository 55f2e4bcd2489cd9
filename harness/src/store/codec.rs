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
pub enum CodecWriter {
    None(BufWriter<File>),
    Gzip(flate2::write::GzEncoder<BufWriter<File>>),
    Zlib(flate2::write::ZlibEncoder<BufWriter<File>>),
    Zstd(zstd::stream::Encoder<'static, BufWriter<File>>),
    Lz4(lz4_flex::frame::FrameEncoder<BufWriter<File>>),
}

impl CodecWriter {
    pub fn new(codec: Codec, file: File) -> io::Result<CodecWriter> {
        let buffered = BufWriter::with_capacity(WRITE_BUFFER_BYTES, file);
        Ok(match codec {
            Codec::None => CodecWriter::None(buffered),
            Codec::Gzip { level } => CodecWriter::Gzip(flate2::write::GzEncoder::new(
                buffered,
                Compression::new(level),
            )),
            Codec::Zlib { level } => CodecWriter::Zlib(flate2::write::ZlibEncoder::new(
                buffered,
                Compression::new(level),
            )),
            Codec::Zstd { level } => {
                CodecWriter::Zstd(zstd::stream::Encoder::new(buffered, level)?)
            }
            Codec::Lz4 => CodecWriter::Lz4(lz4_flex::frame::FrameEncoder::new(buffered)),
        })
    }

    /// Completes the stream and returns the file, flushed (not yet synced).
    pub fn finish(self) -> io::Result<File> {
        let buffered = match self {
            CodecWriter::None(w) => w,
            CodecWriter::Gzip(w) => w.finish()?,
            CodecWriter::Zlib(w) => w.finish()?,
            CodecWriter::Zstd(w) => w.finish()?,
            CodecWriter::Lz4(w) => w.finish().map_err(io::Error::other)?,
        };
        buffered.into_inner().map_err(|e| e.into_error())
    }
}

impl Write for CodecWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            CodecWriter::None(w) => w.write(buf),
            CodecWriter::Gzip(w) => w.write(buf),
            CodecWriter::Zlib(w) => w.write(buf),
            CodecWriter::Zstd(w) => w.write(buf),
            CodecWriter::Lz4(w) => w.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            CodecWriter::None(w) => w.write_all(buf),
            CodecWriter::Gzip(w) => w.write_all(buf),
            CodecWriter::Zlib(w) => w.write_all(buf),
            CodecWriter::Zstd(w) => w.write_all(buf),
            CodecWriter::Lz4(w) => w.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            CodecWriter::None(w) => w.flush(),
            CodecWriter::Gzip(w) => w.flush(),
            CodecWriter::Zlib(w) => w.flush(),
            CodecWriter::Zstd(w) => w.flush(),
            CodecWriter::Lz4(w) => w.flush(),
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
        Codec::Lz4 => Box::new(lz4_flex::frame::FrameDecoder::new(buffered)),
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
