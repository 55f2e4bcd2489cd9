//! Stores made for the store module's tests.

use std::path::Path;

use workloads::Codec;

use super::{complete, create, ShardWriter, StoreKey, StoreManifest};

/// A complete store in `dir` of `shards` shards of `per` records each, record i's payload
/// `payload(i)` (records dealt to shards in runs: shard k holds records k * per onwards), and
/// its manifest.
pub(super) fn make_store(
    dir: &Path,
    codec: Codec,
    shards: usize,
    per: u64,
    payload: impl Fn(u64) -> Vec<u8>,
) -> StoreManifest {
    create(dir).unwrap();
    let mut infos = Vec::new();
    for k in 0..shards {
        let mut w = ShardWriter::create(dir, k, shards, codec).unwrap();
        for r in 0..per {
            w.write(&payload(k as u64 * per + r)).unwrap();
        }
        infos.push(w.finish().unwrap());
    }
    let key = StoreKey {
        workload: "t".into(),
        strategy: "s".into(),
        split: 1,
        codec,
        shards,
        samples: shards as u64 * per,
        source_fingerprint: "f".into(),
        prefix_fingerprint: "p".into(),
    };
    let m = key.manifest(infos, 1.0, 0.0, 0.0);
    complete(dir, &m).unwrap();
    m
}

/// Record `i`: 100 to 190 KB of letters that compress about 2x (a restart every 7 to 11).
pub(super) fn letters(i: u64) -> Vec<u8> {
    let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..100_000 + (i % 10) * 10_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b"abcdefghijklmnop"[(x % 16) as usize]
        })
        .collect()
}
