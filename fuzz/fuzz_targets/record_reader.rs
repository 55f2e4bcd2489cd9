//! Shard bytes under every codec through the decompressing reader and the TFRecord framing:
//! records or an error, never a panic, a hang or an allocation beyond the input.
#![no_main]

use std::io::Cursor;

use harness::store::{codec, framing::RecordReader};
use libfuzzer_sys::fuzz_target;
use workloads::Codec;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the codec, the rest is the shard.
    let Some((&which, shard)) = data.split_first() else {
        return;
    };
    let codec = match which % 5 {
        0 => Codec::None,
        1 => Codec::Gzip { level: 6 },
        2 => Codec::Zlib { level: 6 },
        3 => Codec::Zstd { level: 3 },
        _ => Codec::Lz4,
    };
    let Ok(inner) = codec::reader(codec, Cursor::new(shard.to_vec())) else {
        return;
    };
    let mut records = RecordReader::new(inner);
    let mut payload = Vec::new();
    // Bounded: a decompression bomb must not keep the target busy forever.
    for _ in 0..10_000 {
        match records.next_into(&mut payload) {
            Ok(true) => {
                // A record that passed its checksums may still be a bad sample.
                let _ = workloads::encoding::decode(&payload);
            }
            Ok(false) => break,
            Err(_) if records.can_continue() => {}
            Err(_) => break,
        }
    }
});
