use super::*;
use crate::store::shard::{ShardReader, ShardWriter};

fn key(codec: Codec) -> StoreKey {
    StoreKey {
        workload: "w".into(),
        strategy: "decoded".into(),
        split: 2,
        codec,
        shards: 2,
        samples: 4,
        source_fingerprint: "src".into(),
        prefix_fingerprint: "steps".into(),
    }
}

fn write_store(dir: &Path, codec: Codec) -> StoreManifest {
    create(dir).unwrap();
    let mut shards = Vec::new();
    for s in 0..2 {
        let mut w = ShardWriter::create(dir, s, 2, codec).unwrap();
        for r in 0..2u8 {
            w.write(&[s as u8, r, 42]).unwrap();
        }
        shards.push(w.finish().unwrap());
    }
    let m = key(codec).manifest(shards, 1.0, 0.5, 0.1);
    complete(dir, &m).unwrap();
    m
}

fn read_shard(path: &Path, codec: Codec) -> Result<Vec<Vec<u8>>, StoreError> {
    let mut r = ShardReader::open(path, codec)?;
    drain(|buf| r.next_into(buf))
}

#[test]
fn complete_stores_are_found_and_read_back_for_every_codec() {
    for name in ["none", "gzip", "zlib", "zstd", "lz4"] {
        let codec: Codec = name.parse().unwrap();
        let root = tempfile::tempdir().unwrap();
        let dir = key(codec).dir(root.path());
        let written = write_store(&dir, codec);
        let found = find_complete(&dir, &key(codec)).unwrap().expect("complete");
        assert_eq!(found, written);
        assert_eq!(found.shards[0].file, shard_file_name(0, 2, codec));
        let records = read_shard(&dir.join(&found.shards[1].file), codec).unwrap();
        assert_eq!(records, vec![vec![1, 0, 42], vec![1, 1, 42]], "{name}");
        assert!(!std::fs::read_dir(&dir).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".tmp")));
    }
}

#[test]
fn a_store_without_manifest_or_with_another_key_is_not_reused() {
    let root = tempfile::tempdir().unwrap();
    let dir = key(Codec::None).dir(root.path());
    write_store(&dir, Codec::None);
    let mut other = key(Codec::None);
    other.prefix_fingerprint = "changed".into();
    assert!(find_complete(&dir, &other).unwrap().is_none());
    std::fs::remove_file(dir.join(STORE_MANIFEST)).unwrap();
    assert!(find_complete(&dir, &key(Codec::None)).unwrap().is_none());
    // Interrupted (no manifest) but marked as ours: cleared, marker and all.
    clear(&dir).unwrap();
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    // Someone else's directory: refused, whatever its files are called.
    std::fs::write(dir.join("shard-00000-of-00001.tfrecord"), b"theirs").unwrap();
    let err = clear(&dir).unwrap_err().to_string();
    assert!(err.contains("marker"), "{err}");
    assert!(dir.join("shard-00000-of-00001.tfrecord").exists());
    // Ours, but holding a file prepbench did not write: refused too.
    create(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), b"mine").unwrap();
    assert!(clear(&dir).unwrap_err().to_string().contains("notes.txt"));
    assert!(dir.join("notes.txt").exists());
}

#[test]
fn a_flipped_byte_in_a_shard_names_shard_record_and_offset() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("s");
    let m = write_store(&dir, Codec::None);
    let path = dir.join(&m.shards[0].file);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[19 + 13] ^= 0x40; // inside the second record's payload
    std::fs::write(&path, bytes).unwrap();
    let err = read_shard(&path, Codec::None).unwrap_err().to_string();
    assert!(
        err.contains(&m.shards[0].file)
            && err.contains("record 1 at byte 19")
            && err.contains("checksum"),
        "{err}"
    );
    // The manifest still matches on size: corruption is caught when reading, not skipped.
    assert!(find_complete(&dir, &key(Codec::None)).unwrap().is_some());
}

#[test]
fn a_shard_compressed_with_another_codec_is_an_error() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("s");
    let m = write_store(&dir, Codec::Zstd { level: 3 });
    let path = dir.join(&m.shards[0].file);
    for wrong in ["none", "gzip", "lz4"] {
        assert!(
            read_shard(&path, wrong.parse().unwrap()).is_err(),
            "{wrong}"
        );
    }
}
#[test]
fn record_counts_no_shard_can_hold_are_refused_when_the_manifest_is_read() {
    let root = tempfile::tempdir().unwrap();
    for codec in [Codec::None, Codec::Zstd { level: 3 }] {
        let dir = root.path().join(codec.to_string());
        let written = write_store(&dir, codec);
        let parse = |m: &StoreManifest| {
            StoreManifest::parse(&serde_json::to_vec(m).unwrap(), "s/store.json")
        };
        assert!(parse(&written).is_ok());
        // More than an uncompressed file's bytes can frame; past any index, summed
        // without wrapping.
        let mut framed = written.clone();
        framed.shards[0].records = framed.shards[0].bytes / 16 + 1;
        let mut many = written.clone();
        many.shards[0].records = MAX_STORE_RECORDS;
        let mut wrapping = written.clone();
        (wrapping.shards.iter_mut()).for_each(|s| s.records = 1 << 63);
        for (m, refused) in [
            (framed, codec == Codec::None),
            (many, true),
            (wrapping, true),
        ] {
            let got = parse(&m);
            assert_eq!(got.is_err(), refused, "{codec}: {got:?}");
            if let Err(e) = got {
                assert!(e.to_string().contains("s/store.json"), "{e}");
            }
        }
    }
}

#[test]
fn an_unreadable_manifest_says_how_the_store_is_mended() {
    let err = StoreManifest::parse(b"garbage{", "s/store.json").unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("s/store.json")
            && text.contains("--rematerialize")
            && text.contains("store remove --stale"),
        "{text}"
    );
}
