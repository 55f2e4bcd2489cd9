//! Real audio encoders for generated datasets: MP3 through LAME (built from its vendored source
//! by cargo) and FLAC through flacenc (pure Rust).

use flacenc::component::BitRepr;
use flacenc::error::Verify;
use mp3lame_encoder::{Bitrate, Builder, FlushGap, MonoPcm, Quality};

use crate::DatasetError;

fn failed(what: &str, e: impl std::fmt::Debug) -> DatasetError {
    DatasetError::Generate(format!("{what}: {e:?}"))
}

/// Encodes mono 16-bit PCM as a constant-bitrate MP3 with a LAME tag, so decoders trim the
/// encoder delay and padding and return exactly the input's sample count.
pub fn encode_mp3(pcm: &[i16], sample_rate: u32, kbps: Bitrate) -> Result<Vec<u8>, DatasetError> {
    let mut builder =
        Builder::new().ok_or_else(|| failed("MP3", "LAME could not allocate an encoder"))?;
    builder
        .set_num_channels(1)
        .map_err(|e| failed("MP3 channels", e))?;
    builder
        .set_sample_rate(sample_rate)
        .map_err(|e| failed("MP3 sample rate", e))?;
    builder
        .set_brate(kbps)
        .map_err(|e| failed("MP3 bitrate", e))?;
    builder
        .set_quality(Quality::Good)
        .map_err(|e| failed("MP3 quality", e))?;
    builder
        .set_to_write_vbr_tag(true)
        .map_err(|e| failed("MP3 LAME tag", e))?;
    let mut encoder = builder.build().map_err(|e| failed("MP3 encoder", e))?;
    let mut out: Vec<u8> = Vec::with_capacity(mp3lame_encoder::max_required_buffer_size(pcm.len()));
    encoder
        .encode_to_vec(MonoPcm(pcm), &mut out)
        .map_err(|e| failed("MP3 encoding", e))?;
    out.reserve(7200);
    encoder
        .flush_to_vec::<FlushGap>(&mut out)
        .map_err(|e| failed("MP3 flush", e))?;
    // Overwrite the placeholder frame LAME left for its tag with the real one.
    let at = encoder.id3v2_tag_size();
    let mut tag: Vec<u8> = Vec::with_capacity(encoder.lame_tag_size().max(1));
    if encoder.lame_tag_encode_to_vec(&mut tag).is_some() && at + tag.len() <= out.len() {
        out[at..at + tag.len()].copy_from_slice(&tag);
    }
    Ok(out)
}

/// Encodes mono 16-bit PCM as FLAC with a fixed block size.
pub fn encode_flac(pcm: &[i16], sample_rate: u32) -> Result<Vec<u8>, DatasetError> {
    const BLOCK: usize = 4096;
    let config = flacenc::config::Encoder::default()
        .into_verified()
        .map_err(|e| failed("FLAC config", e))?;
    let samples: Vec<i32> = pcm.iter().map(|&s| s as i32).collect();
    let source = flacenc::source::MemSource::from_samples(&samples, 1, 16, sample_rate as usize);
    let mut stream = flacenc::encode_with_fixed_block_size(&config, source, BLOCK)
        .map_err(|e| failed("FLAC encoding", e))?;
    // flacenc records the short last block as the minimum block size, which makes decoders
    // treat the stream as variable-blocksize; a fixed-blocksize stream declares one size.
    stream
        .stream_info_mut()
        .set_block_sizes(BLOCK, BLOCK)
        .map_err(|e| failed("FLAC block sizes", e))?;
    let mut sink = flacenc::bitsink::ByteSink::new();
    stream
        .write(&mut sink)
        .map_err(|e| failed("FLAC writing", e))?;
    Ok(sink.as_slice().to_vec())
}
