//! Compressed shards read by record number, a stretch at a time: from the codec's restart
//! before a record to the next (see [`CodecWriter::restart`](super::codec::CodecWriter::restart)).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use workloads::Codec;

use super::codec;
use super::error::{io_error, StoreError};
use super::folder::{Restart, ShardInfo};
use super::framing::{declared_len, Frame, FRAMING_BYTES};

/// One decompressed stretch of a shard: records `first..first + frames.len()`, its stream
/// beginning at `base` of the shard's stream; frame offsets are within `stream`.
pub(super) struct Stretch {
    pub stream: Vec<u8>,
    pub frames: Vec<Frame>,
    pub first: u64,
    pub base: u64,
}

/// The stretch of a shard (`info`, its restarts checked as its manifest was read) that holds
/// its record `local`.
pub(super) fn stretch_of(info: &ShardInfo, local: u64) -> usize {
    info.restarts.partition_point(|r| r.record() <= local)
}

/// Where stretch `index` of a shard lies: from the restart before it (or the shard's start) to
/// the next restart (`next`; `None` for the last stretch, which runs to the shard's end).
pub(super) struct Span {
    /// Its first record (of the shard), and how many it holds.
    pub first: u64,
    pub records: u64,
    /// Where it begins in the shard file and in the shard's (decompressed) stream.
    pub file_at: u64,
    pub stream_at: u64,
    pub next: Option<Restart>,
}

pub(super) fn span(info: &ShardInfo, index: usize) -> Span {
    let (first, file_at, stream_at) = match index.checked_sub(1).map(|i| info.restarts[i]) {
        Some(r) => (r.record(), r.file_offset(), r.stream_offset()),
        None => (0, 0, 0),
    };
    let next = info.restarts.get(index).copied();
    Span {
        first,
        records: next.map_or(info.records, |r| r.record()) - first,
        file_at,
        stream_at,
        next,
    }
}

/// A stretch (or, without restarts, a shard) found to hold `found` records where the store
/// wrote `span.records`.
pub(super) fn miscounted(path: &Path, info: &ShardInfo, span: &Span, found: usize) -> StoreError {
    let held = match info.restarts.is_empty() {
        true => "it holds".to_string(),
        false => format!(
            "records {} to {} hold",
            span.first,
            span.first + span.records
        ),
    };
    StoreError::Invalid {
        path: path.display().to_string(),
        message: format!(
            "not the shard its store wrote: {held} {found} records where the store wrote {}",
            span.records
        ),
    }
}

fn corrupt(path: &Path, record: u64, offset: u64, what: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        shard: path.display().to_string(),
        record,
        offset,
        compressed: true,
        what: what.into(),
    }
}

/// Stretch `index` of the compressed shard `path` (`info`, its records no longer than
/// `longest`), decompressed (to no more than its records may hold) and its frames indexed.
pub(super) fn decompress(
    path: &Path,
    codec: Codec,
    info: &ShardInfo,
    index: usize,
    longest: u64,
) -> Result<Stretch, StoreError> {
    let stretch = span(info, index);
    let (first, records, base, next) = (
        stretch.first,
        stretch.records,
        stretch.stream_at,
        stretch.next,
    );
    let at = stretch.file_at;
    let bound = match next {
        Some(r) => r.stream_offset() - base,
        None => records * (FRAMING_BYTES + longest),
    };
    let mut file = File::open(path).map_err(io_error(path))?;
    file.seek(SeekFrom::Start(at)).map_err(io_error(path))?;
    // The stretch's own bytes only: a decoder that has given the stretch's last byte may go on
    // parsing what follows within the same call (deflate's next block), and damage there is
    // the next stretch's.
    let file: Box<dyn Read + Send> = match next {
        Some(r) => Box::new(file.take(r.file_offset() - at)),
        None => Box::new(file),
    };
    let reader = if index == 0 {
        codec::reader(codec, file)
    } else {
        codec::restart_reader(codec, file)
    };
    let mut stream = Vec::new();
    reader
        .map_err(io_error(path))?
        .take(bound + u64::from(next.is_none()))
        .read_to_end(&mut stream)
        .map_err(|e| corrupt(path, first, base, format!("decompressing: {e}")))?;
    let size = stream.len() as u64;
    if next.is_none() && size > bound {
        let what = "decompresses to more than its records may hold";
        return Err(corrupt(path, info.records, base + bound, what));
    }
    if next.is_some() && size < bound {
        let what = format!(
            "the stream ends before its restart at record {}",
            first + records
        );
        return Err(corrupt(path, first, base + size, what));
    }
    let frames = index_frames(path, &stream, first, base, longest)?;
    if frames.len() as u64 != records {
        return Err(miscounted(path, info, &stretch, frames.len()));
    }
    Ok(Stretch {
        stream,
        frames,
        first,
        base,
    })
}

/// The frames of a decompressed stretch whose first record is `first`, at `base` of the
/// shard's stream (what an error names).
fn index_frames(
    path: &Path,
    stream: &[u8],
    first: u64,
    base: u64,
    longest: u64,
) -> Result<Vec<Frame>, StoreError> {
    let size = stream.len() as u64;
    let mut frames = Vec::new();
    let mut offset = 0u64;
    while offset < size {
        let record = first + frames.len() as u64;
        if offset + 12 > size {
            return Err(corrupt(path, record, base + offset, "truncated header"));
        }
        let header = &stream[offset as usize..offset as usize + 12];
        let len = declared_len(header, offset, size, longest)
            .map_err(|what| corrupt(path, record, base + offset, what))?;
        frames.push(Frame { offset, len });
        offset += FRAMING_BYTES + len;
    }
    Ok(frames)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::store::folder::{Restart, StoreManifest, RESTART_EVERY_BYTES};
    use crate::store::{complete, OpenStore};

    const COMPRESSED: [&str; 5] = ["gzip", "gzip:1", "zlib", "zstd", "lz4"];

    use crate::store::testing::letters as payload;

    /// A store of 2 shards of `per` records, and its manifest.
    fn make(dir: &Path, codec: Codec, per: u64) -> StoreManifest {
        crate::store::testing::make_store(dir, codec, 2, per, payload)
    }

    fn held(store: &OpenStore) -> u64 {
        store.held_bytes()
    }

    #[test]
    fn a_record_read_by_number_decompresses_only_its_stretch_under_every_codec() {
        for name in COMPRESSED {
            let dir = tempfile::tempdir().unwrap();
            let m = make(dir.path(), name.parse().unwrap(), 30);
            // 30 records of 100-190 KB: a restart every 7 to 11 records.
            let restarts: Vec<usize> = m.shards.iter().map(|s| s.restarts.len()).collect();
            assert!(
                restarts.iter().all(|&n| (3..=5).contains(&n)),
                "{name}: {restarts:?}"
            );
            let mut store = OpenStore::open(dir.path(), 0).unwrap();
            let most = RESTART_EVERY_BYTES + 2 * (FRAMING_BYTES + 190_000);
            for i in [59, 0, 31, 17, 45, 8, 30, 29, 59] {
                assert!(store.read(i).unwrap() == payload(i), "{name} record {i}");
                assert!(
                    held(&store) <= most,
                    "{name}: {} bytes for record {i}",
                    held(&store)
                );
            }
            // In order, the same stream: a restart is invisible to a reader of the whole.
            let mut records = store.shard_reader(1).unwrap();
            let (mut got, mut read) = (Vec::new(), Vec::new());
            while records.next_into(&mut read).unwrap() {
                got.push(read.clone());
            }
            assert!(got == (30..60).map(payload).collect::<Vec<_>>(), "{name}");
        }
    }

    #[test]
    fn a_gzip_shard_with_restarts_is_one_standard_gzip_stream() {
        let dir = tempfile::tempdir().unwrap();
        let m = make(dir.path(), "gzip".parse().unwrap(), 12);
        let bytes = std::fs::read(dir.path().join(&m.shards[0].file)).unwrap();
        // One member (flate2's single-member decoder reads it all), its trailer checked.
        let mut whole = Vec::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_end(&mut whole)
            .unwrap();
        let expected: u64 = (0..12)
            .map(|i| FRAMING_BYTES + payload(i).len() as u64)
            .sum();
        assert_eq!(whole.len() as u64, expected);
        assert!(!m.shards[0].restarts.is_empty());
    }

    #[test]
    fn damage_after_a_restart_leaves_the_stretches_before_it_readable() {
        for name in COMPRESSED {
            let dir = tempfile::tempdir().unwrap();
            let m = make(dir.path(), name.parse().unwrap(), 30);
            let info = &m.shards[0];
            let last = *info.restarts.last().unwrap();
            let path = dir.path().join(&info.file);
            let mut bytes = std::fs::read(&path).unwrap();
            // Near the end: within the last record's compressed bytes, before any trailer.
            let end = bytes.len() - 16;
            for b in &mut bytes[end - 64..end] {
                *b ^= 0x5a;
            }
            std::fs::write(&path, &bytes).unwrap();
            let mut store = OpenStore::open(dir.path(), 0).unwrap();
            for i in [0, last.record() - 1, 30] {
                assert!(store.read(i).unwrap() == payload(i), "{name} record {i}");
            }
            let e = match store.read(29) {
                Ok(_) => panic!("{name}: record 29 read through damaged bytes"),
                Err(e) => e.to_string(),
            };
            assert!(e.contains(&info.file), "{name}: {e}");
        }
    }

    #[test]
    fn a_reader_goes_on_at_the_restart_after_damage_it_cannot_step_past() {
        for name in std::iter::once("none").chain(COMPRESSED) {
            let dir = tempfile::tempdir().unwrap();
            let m = make(dir.path(), name.parse().unwrap(), 30);
            let info = &m.shards[0];
            let (first, second) = (info.restarts[0], info.restarts[1]);
            let path = dir.path().join(&info.file);
            let clean = std::fs::read(&path).unwrap();
            let mut bytes = clean.clone();
            // The stretch's first bytes (a record's header uncompressed, a frame's for zstd
            // and lz4, a block's for deflate): damage no reader steps past.
            let at = first.file_offset() as usize;
            for b in &mut bytes[at..at + 64] {
                *b ^= 0x5a;
            }
            std::fs::write(&path, &bytes).unwrap();
            let store = OpenStore::open(dir.path(), 0).unwrap();
            let mut reader = store.shard_reader(0).unwrap();
            let (mut read, mut buf, mut lost) = (Vec::new(), Vec::new(), Vec::new());
            loop {
                let record = reader.record_index();
                match reader.next_into(&mut buf) {
                    Ok(true) => read.push(record),
                    Ok(false) => break,
                    Err(_) if reader.can_continue() => lost.push(record),
                    Err(_) => {
                        // On at the first restart after it (a decoder may fail on the damage
                        // while it ends the record before, then again at the restart).
                        let went_on = reader.resume().unwrap().expect("a restart after it");
                        let next = info.restarts.iter().find(|r| r.record() > record);
                        assert_eq!(Some(went_on), next.map(|r| r.record()), "{name}");
                        lost.extend(record..went_on);
                    }
                }
            }
            // Every record read or lost once; the lost ones about the damaged stretch only.
            let mut all: Vec<u64> = read.iter().chain(&lost).copied().collect();
            all.sort();
            assert_eq!(all, (0..30).collect::<Vec<_>>(), "{name}");
            assert!(!lost.is_empty(), "{name}: the damage went unseen");
            let near = first.record() - 1..second.record();
            assert!(
                lost.iter().all(|r| near.contains(r)),
                "{name}: lost {lost:?}"
            );
            assert!(read.contains(&second.record()), "{name}");
            // By number, the stretches beside the damaged one still read (an uncompressed
            // shard's frames are found from its restarts, not only from its start).
            let mut store = OpenStore::open(dir.path(), 0).unwrap();
            for i in [first.record() - 2, second.record(), 29] {
                assert!(store.read(i).unwrap() == payload(i), "{name} record {i}");
            }
            assert!(store.read(first.record()).is_err(), "{name}");
            // The positioned reader of an uncompressed shard goes on at the restart too.
            if let Some(mut records) = store.in_order(0).unwrap() {
                let mut got = Vec::new();
                loop {
                    match records.next_record() {
                        Ok(Some((i, _))) => got.push(i),
                        Ok(None) => break,
                        Err(_) if records.can_continue() => {}
                        Err(_) => assert_eq!(records.resume(), Some(second.record())),
                    }
                }
                let expected: Vec<u64> = (0..first.record()).chain(second.record()..30).collect();
                assert_eq!(got, expected, "{name}");
            }
            // A reader that cannot open its shard again, or a shard without restarts, stops.
            let file = Box::new(File::open(&path).unwrap());
            let mut bare = crate::store::ShardReader::from_read(&path, m.codec, file)
                .unwrap()
                .expecting(info);
            while bare.next_into(&mut buf).is_ok_and(|more| more) {}
            assert_eq!(bare.resume().unwrap(), None, "{name}");
            std::fs::write(&path, &clean).unwrap();
        }
    }

    #[test]
    fn restarts_that_cannot_be_the_writers_are_refused_naming_the_shard() {
        let dir = tempfile::tempdir().unwrap();
        let m = make(dir.path(), "zstd".parse().unwrap(), 30);
        let good = m.shards[0].restarts.clone();
        let r = good[0];
        let bad: [Vec<Restart>; 5] = [
            vec![good[1], good[0]],
            vec![Restart(0, r.1, r.2)],
            vec![Restart(30, r.1, r.2)],
            vec![Restart(r.0, m.shards[0].bytes, r.2)],
            vec![Restart(r.0, r.1, 1 << 40)],
        ];
        for restarts in bad {
            let mut manifest = m.clone();
            manifest.shards[0].restarts = restarts.clone();
            complete(dir.path(), &manifest).unwrap();
            let e = OpenStore::open(dir.path(), 0).err().unwrap().to_string();
            assert!(
                e.contains("store.json") && e.contains(&m.shards[0].file) && e.contains("restart"),
                "{restarts:?}: {e}"
            );
        }
        // An uncompressed shard's restarts lie where its records start, file and stream alike.
        assert!(m.shards[0].restarts_error(Codec::None).is_some());
        let plain = make(&dir.path().join("plain"), Codec::None, 30);
        let mut info = plain.shards[0].clone();
        assert!(info.restarts.len() >= 3 && info.restarts_error(Codec::None).is_none());
        info.restarts[0].1 += 1;
        assert!(info.restarts_error(Codec::None).is_some());
        // In order and in bounds, but not where the writer restarted: the stretches it bounds
        // are refused when read (named with their shard), never read wrong; the one after the
        // next restart still reads.
        for name in std::iter::once("none").chain(COMPRESSED) {
            let dir = tempfile::tempdir().unwrap();
            let m = make(dir.path(), name.parse().unwrap(), 30);
            for shift in [1i64, -1, 7] {
                let mut manifest = m.clone();
                let r = &mut manifest.shards[0].restarts[0];
                r.1 = r.1.checked_add_signed(shift).unwrap();
                if name == "none" {
                    // An uncompressed shard's stream is its file: a restart elsewhere is
                    // refused as the manifest is read, so both move.
                    r.2 = r.1;
                }
                complete(dir.path(), &manifest).unwrap();
                let mut store = OpenStore::open(dir.path(), 0).unwrap();
                let first = manifest.shards[0].restarts[0].record();
                for i in [first - 1, first] {
                    match store.read(i) {
                        Ok(got) => assert!(got == payload(i), "{name} {shift}: record {i}"),
                        Err(e) => {
                            let e = e.to_string();
                            assert!(e.contains(&m.shards[0].file), "{name} {shift}: {e}");
                        }
                    }
                }
                assert!(
                    store.read(first).is_err(),
                    "{name} {shift}: read from a wrong restart"
                );
                let second = manifest.shards[0].restarts[1].record();
                assert!(
                    store.read(second).unwrap() == payload(second),
                    "{name} {shift}"
                );
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Any records, restarts and codec: every record reads back by number in any order
        /// and in order; with one byte of a shard flipped, a read gives its record's own bytes
        /// or an error, never other bytes, never a panic, and reading in order ends.
        #[test]
        fn records_with_restarts_read_back_and_damage_never_reads_wrong(
            sizes in proptest::collection::vec(0usize..3000, 1..40),
            every in 256u64..8192,
            which in 0usize..6,
            flip in proptest::num::usize::ANY,
        ) {
            let codec: Codec = ["none", "gzip", "zlib", "zstd", "lz4", "gzip:1"][which]
                .parse()
                .unwrap();
            let record = |i: u64| -> Vec<u8> {
                let n = sizes[i as usize % sizes.len()];
                (0..n).map(|k| (i as usize * 31 + k / 7) as u8).collect()
            };
            let dir = tempfile::tempdir().unwrap();
            crate::store::create(dir.path()).unwrap();
            let mut w = crate::store::ShardWriter::create(dir.path(), 0, 1, codec)
                .unwrap()
                .restarting_every(every);
            for i in 0..sizes.len() as u64 {
                w.write(&record(i)).unwrap();
            }
            let info = w.finish().unwrap();
            proptest::prop_assert!(info.restarts_error(codec).is_none());
            let key = crate::store::StoreKey {
                workload: "t".into(),
                strategy: "s".into(),
                split: 1,
                codec,
                shards: 1,
                samples: sizes.len() as u64,
                source_fingerprint: "f".into(),
                prefix_fingerprint: "p".into(),
            };
            let m = key.manifest(vec![info.clone()], 1.0, 0.0, 0.0);
            complete(dir.path(), &m).unwrap();
            let n = sizes.len() as u64;
            let mut store = OpenStore::open(dir.path(), 0).unwrap();
            for i in (0..n).rev().chain(0..n) {
                proptest::prop_assert_eq!(store.read(i).unwrap(), record(i));
            }
            let path = dir.path().join(&info.file);
            let mut bytes = std::fs::read(&path).unwrap();
            if bytes.is_empty() {
                return Ok(());
            }
            let at = flip % bytes.len();
            bytes[at] ^= 0x20;
            std::fs::write(&path, &bytes).unwrap();
            let mut store = OpenStore::open(dir.path(), 0).unwrap();
            for i in (0..n).rev() {
                if let Ok(got) = store.read(i) {
                    proptest::prop_assert_eq!(got, record(i), "record {} after byte {}", i, at);
                }
            }
            let mut reader = store.shard_reader(0).unwrap();
            let (mut buf, mut ended) = (Vec::new(), false);
            // Each turn reads a record, steps past one or goes on at a later restart: it ends
            // within the records and restarts there are.
            for _ in 0..(n + info.restarts.len() as u64 + 2) {
                let index = reader.record_index();
                match reader.next_into(&mut buf) {
                    Ok(true) => proptest::prop_assert_eq!(&buf, &record(index)),
                    Ok(false) => ended = true,
                    Err(_) if reader.can_continue() => continue,
                    Err(_) => ended = reader.resume().unwrap().is_none(),
                }
                if ended {
                    break;
                }
            }
            proptest::prop_assert!(ended, "reading in order did not end");
        }
    }
}
