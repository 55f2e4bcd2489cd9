//! The reference steps, one module per op. Each module exposes `SPEC`, registered in
//! [`crate::registry::REGISTRY`].

pub mod decode_jpeg;
pub mod pixel_center;
pub mod random_crop;
pub mod read_file;
pub mod resize_shorter;

use crate::sample::{FieldName, Tensor};
use crate::step::StepError;

/// Largest image (in pixels) a step decodes or produces: Pillow's decompression-bomb error
/// threshold, 2 x `Image.MAX_IMAGE_PIXELS`.
pub const MAX_IMAGE_PIXELS: u64 = 178_956_970;

/// The (height, width, channels) of an image tensor laid out HxWxC.
pub(crate) fn image_dims(tensor: &Tensor, field: &str) -> Result<(usize, usize, usize), StepError> {
    match *tensor.shape() {
        [h, w, c] => Ok((h, w, c)),
        ref other => Err(StepError::new(format!(
            "field `{field}` has shape {other:?}, expected an image [height, width, channels]"
        ))),
    }
}

fn default_image_field() -> FieldName {
    "image".into()
}
