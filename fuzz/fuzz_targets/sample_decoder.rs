//! Record payloads through the sample decoder: a sample or an error, never a panic; a decoded
//! sample encodes back to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use workloads::encoding;

fuzz_target!(|data: &[u8]| {
    if let Ok(sample) = encoding::decode(data) {
        let mut again = Vec::new();
        encoding::encode_into(&sample, &mut again);
        let back = encoding::decode(&again).expect("an encoded sample decodes");
        assert_eq!(back.content_hash(), sample.content_hash());
    }
});
