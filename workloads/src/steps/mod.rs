//! The reference steps, one module per op. Each module exposes `SPEC`, registered in
//! [`crate::op::REGISTRY`].

/// Registers a step as `SPEC`: what `prepbench list steps` shows and how the step is built from
/// YAML. `step_spec! { Type, "op", "summary" }`, or with the facts the harness needs when they
/// are not `StepFacts::PURE` as a fourth argument. The parameters are those `Params` documents
/// (`#[derive(ParamDocs)]`), checked by `Type::new`.
macro_rules! step_spec {
    ($ty:ident, $op:literal, $summary:literal $(, $facts:expr)? $(,)?) => {
        /// What `prepbench list steps` shows, and how the step is built from YAML.
        pub static SPEC: $crate::op::StepSpec = $crate::op::StepSpec {
            op: $op,
            summary: $summary,
            facts: step_spec!(@facts $($facts)?),
            params: <Params as $crate::op::ParamDocs>::DOCS,
            reads: <Params as $crate::op::ParamDocs>::READS,
            writes: <Params as $crate::op::ParamDocs>::WRITES,
            canonical: $crate::op::canonical_params::<Params>,
            build: |de| $crate::op::build_step(de, $ty::new),
        };
    };
    (@facts) => {
        $crate::op::StepFacts::PURE
    };
    (@facts $facts:expr) => {
        $facts
    };
}

pub mod boxes;
pub mod bpe_encode;
pub mod brightness;
pub mod budget;
pub mod decode_audio;
pub mod decode_jpeg;
pub mod decode_npy;
pub mod decode_png;
pub mod embed;
pub mod extract_text;
pub mod grayscale;
pub mod log;
pub mod magnitude;
pub mod mel;
pub mod nilm_features;
pub mod normalize;
pub mod pad_truncate;
mod pcm;
pub mod pixel_center;
pub mod python;
pub mod random_crop;
pub mod random_hflip;
pub mod read_cream_hour;
pub mod read_file;
pub mod read_webdataset;
pub mod resample;
pub mod resize_longer_pad;
pub mod resize_shorter;
pub mod rms_periods;
pub mod stft;
pub mod window;

use std::sync::{Arc, RwLock};

use crate::error::StepError;
use crate::sample::{FieldName, Tensor};

/// Values a step builds once per key and shares between threads (resamplers per rate pair, mel
/// banks per spectrogram size): a short list behind a read-write lock, read-locked on the hot
/// path.
pub(crate) struct Memo<K, V> {
    entries: RwLock<Vec<(K, Arc<V>)>>,
}

/// What a memo holds is derived from the step's parameters and built on use, so it is no part
/// of the step's description (`Workload::prefix_fingerprint` is made of those descriptions: a
/// filled memo must not change it, nor write a 150 MB table into a store's manifest).
impl<K, V> std::fmt::Debug for Memo<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Memo")
    }
}

impl<K: PartialEq + Copy, V> Default for Memo<K, V> {
    fn default() -> Self {
        Memo {
            entries: RwLock::new(Vec::new()),
        }
    }
}

impl<K: PartialEq + Copy, V> Memo<K, V> {
    /// The value for `key`, built by `build` the first time. Building happens under the write
    /// lock, so a value (an embedding table of 154 MB, say) is never built twice.
    pub(crate) fn get_or_build(
        &self,
        key: K,
        build: impl FnOnce() -> Result<V, StepError>,
    ) -> Result<Arc<V>, StepError> {
        let find = |entries: &[(K, Arc<V>)]| {
            entries
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.clone())
        };
        if let Some(v) = find(&self.entries.read().unwrap_or_else(|e| e.into_inner())) {
            return Ok(v);
        }
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = find(&entries) {
            return Ok(v);
        }
        let built = Arc::new(build()?);
        entries.push((key, built.clone()));
        Ok(built)
    }
}

/// Decodes `bytes` as `format` after checking the header's size against `max_pixels` and
/// `max_expansion`, with an allocation limit, so a decompression bomb is refused before it is
/// allocated.
pub(crate) fn decode_guarded(
    bytes: &[u8],
    format: image::ImageFormat,
    max_pixels: u64,
    max_expansion: f64,
) -> Result<image::DynamicImage, StepError> {
    use image::{ImageReader, Limits};
    use std::io::Cursor;
    let name = format!("{format:?}").to_uppercase();
    let bad = |e: image::ImageError| StepError::new(format!("invalid {name}: {e}"));
    let (width, height) = ImageReader::with_format(Cursor::new(bytes), format)
        .into_dimensions()
        .map_err(bad)?;
    let pixels = width as u64 * height as u64;
    if pixels > max_pixels {
        return Err(StepError::new(format!(
            "image of {width}x{height} = {pixels} pixels exceeds max_pixels {max_pixels}"
        )));
    }
    // At least three bytes per pixel come out (RGB, 8 bits).
    check_expansion(
        &format!("{name} of {width}x{height}"),
        bytes.len(),
        pixels.saturating_mul(3),
        max_expansion,
    )?;
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    let mut limits = Limits::default();
    // Room for the decoded pixels at up to 8 bytes each (16-bit RGBA), and the decoder's buffers.
    limits.max_alloc = Some(pixels.saturating_mul(8).max(1 << 20) + (16 << 20));
    reader.limits(limits);
    reader.decode().map_err(bad)
}

/// Decoded output a decoding step always allows, whatever the input's size: small inputs may
/// expand far (a 1 KB PNG of one colour).
pub const EXPANSION_FLOOR_BYTES: u64 = 16 << 20;

/// The default of a decoding step's `max_expansion`: decoded bytes per input byte. Real photos
/// and recordings expand 3x to 30x (an MP3 to float32 PCM about 25x); deflate cannot pass
/// 1032x. A bomb claims thousands.
pub const DEFAULT_MAX_EXPANSION: f64 = 1024.0;

fn default_max_expansion() -> f64 {
    DEFAULT_MAX_EXPANSION
}

/// A decoding step's `max_expansion`, refused unless at least 1.
fn check_max_expansion(max_expansion: f64) -> Result<(), String> {
    if max_expansion >= 1.0 && max_expansion.is_finite() {
        Ok(())
    } else {
        Err(format!(
            "max_expansion must be a finite number of at least 1, got {}",
            crate::number::Num(max_expansion)
        ))
    }
}

/// Refuses `what`, decoding `input` bytes to `output` bytes, when that is more than
/// `max_expansion` times the input (and more than [`EXPANSION_FLOOR_BYTES`]).
pub(crate) fn check_expansion(
    what: &str,
    input: usize,
    output: u64,
    max_expansion: f64,
) -> Result<(), StepError> {
    let allowed = (input as f64 * max_expansion).max(EXPANSION_FLOOR_BYTES as f64);
    if output as f64 > allowed {
        return Err(StepError::new(format!(
            "{what} would decode {input} bytes to {output} bytes, {:.0}x; more than \
             max_expansion {max_expansion} (a decompression bomb, or raise max_expansion)",
            output as f64 / input.max(1) as f64
        )));
    }
    // Within its expansion, the output must still fit the sample's memory budget.
    budget::within_budget(
        &format!("{what} would decode to {output} bytes"),
        input,
        output,
    )
}

pub use crate::sample::MAX_TENSOR_BYTES;

/// Largest image (in pixels) a step decodes or produces: Pillow's decompression-bomb error
/// threshold, 2 x `Image.MAX_IMAGE_PIXELS`.
pub const MAX_IMAGE_PIXELS: u64 = 178_956_970;

/// The default of a decoding step's `max_pixels`.
fn default_max_pixels() -> u64 {
    MAX_IMAGE_PIXELS
}

/// A decoding step's `max_pixels`, refused when zero.
fn check_max_pixels(max_pixels: u64) -> Result<(), String> {
    match max_pixels {
        0 => Err("max_pixels must be positive".to_string()),
        _ => Ok(()),
    }
}

/// The (height, width, channels) of an image tensor laid out HxWxC.
pub(crate) fn image_dims(tensor: &Tensor, field: &str) -> Result<(usize, usize, usize), StepError> {
    match *tensor.shape() {
        [h, w, c] => Ok((h, w, c)),
        ref other => Err(StepError::new(format!(
            "field `{field}` has shape {other:?}, expected an image [height, width, channels]"
        ))),
    }
}

/// The field names steps read and write by default. Each helper `default_NAME_field` returns
/// `NAME`: the `ParamDocs` derive shows that as the parameter's default.
macro_rules! field_defaults {
    ($($helper:ident: $name:literal),+ $(,)?) => {
        $(fn $helper() -> FieldName {
            $name.into()
        })+

        #[cfg(test)]
        #[test]
        fn field_default_helpers_return_their_names() {
            $(assert_eq!(
                stringify!($helper),
                format!("default_{}_field", $helper())
            );)+
        }
    };
}

field_defaults! {
    default_image_field: "image",
    default_data_field: "data",
    default_path_field: "path",
    default_text_field: "text",
    default_tokens_field: "tokens",
    default_audio_field: "audio",
    default_signal_field: "signal",
    default_spectrogram_field: "spectrogram",
}

/// The int32 scalar field in which audio steps record the PCM's sample rate.
pub const SAMPLE_RATE_FIELD: &str = "sample_rate";
