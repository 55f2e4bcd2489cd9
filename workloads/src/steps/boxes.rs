//! Bounding boxes that travel with an image: a float32 [k, 4] field of COCO boxes (x, y, width,
//! height in pixels, from the top-left corner), transformed with every geometric step.

use crate::error::StepError;
use crate::sample::{Sample, TensorData};

/// One COCO box.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoxXywh {
    pub x: f32,
    pub y: f32,
    pub w: f32,
    pub h: f32,
}

impl BoxXywh {
    /// The box after scaling the image by (sx, sy).
    pub fn scaled(self, sx: f32, sy: f32) -> BoxXywh {
        BoxXywh {
            x: self.x * sx,
            y: self.y * sy,
            w: self.w * sx,
            h: self.h * sy,
        }
    }

    /// The box after moving the image content by (dx, dy).
    pub fn shifted(self, dx: f32, dy: f32) -> BoxXywh {
        BoxXywh {
            x: self.x + dx,
            y: self.y + dy,
            ..self
        }
    }

    /// The part of the box inside a `width` x `height` image (zero width or height if none).
    pub fn clipped(self, width: f32, height: f32) -> BoxXywh {
        let (x0, x1) = (
            self.x.clamp(0.0, width),
            (self.x + self.w).clamp(0.0, width),
        );
        let (y0, y1) = (
            self.y.clamp(0.0, height),
            (self.y + self.h).clamp(0.0, height),
        );
        BoxXywh {
            x: x0,
            y: y0,
            w: x1 - x0,
            h: y1 - y0,
        }
    }

    /// The box after mirroring an image of `width` left to right.
    pub fn mirrored(self, width: f32) -> BoxXywh {
        BoxXywh {
            x: width - self.x - self.w,
            ..self
        }
    }
}

/// Applies `f` to every box of the [k, 4] float32 field `name` (a missing field is an error).
pub fn transform(
    sample: &mut Sample,
    name: &str,
    f: impl Fn(BoxXywh) -> BoxXywh,
) -> Result<(), StepError> {
    let (shape, data) = sample.take_tensor(name)?.into_parts();
    let TensorData::F32(mut values) = data else {
        return Err(StepError::new(format!(
            "boxes field `{name}` is {}, expected float32 [k, 4]",
            data.dtype()
        )));
    };
    if shape.len() != 2 || shape[1] != 4 {
        return Err(StepError::new(format!(
            "boxes field `{name}` has shape {shape:?}, expected [k, 4]"
        )));
    }
    for b in values.chunks_exact_mut(4) {
        let out = f(BoxXywh {
            x: b[0],
            y: b[1],
            w: b[2],
            h: b[3],
        });
        b.copy_from_slice(&[out.x, out.y, out.w, out.h]);
    }
    sample.set_tensor(name, shape, TensorData::F32(values))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{Field, Tensor};

    #[test]
    fn transforms_by_hand() {
        let b = BoxXywh {
            x: 10.0,
            y: 20.0,
            w: 30.0,
            h: 40.0,
        };
        assert_eq!(
            b.scaled(0.5, 2.0),
            BoxXywh {
                x: 5.0,
                y: 40.0,
                w: 15.0,
                h: 80.0
            }
        );
        assert_eq!(
            b.shifted(3.0, -4.0),
            BoxXywh {
                x: 13.0,
                y: 16.0,
                w: 30.0,
                h: 40.0
            }
        );
        // Clipped to a 30 x 50 image: x [10, 40) -> [10, 30); y [20, 60) -> [20, 50).
        assert_eq!(
            b.clipped(30.0, 50.0),
            BoxXywh {
                x: 10.0,
                y: 20.0,
                w: 20.0,
                h: 30.0
            }
        );
        assert_eq!(
            b.shifted(-50.0, 0.0).clipped(30.0, 50.0).w,
            0.0,
            "outside: zero width"
        );
        // In a 100-wide image, [10, 40) mirrors to [60, 90).
        assert_eq!(
            b.mirrored(100.0),
            BoxXywh {
                x: 60.0,
                y: 20.0,
                w: 30.0,
                h: 40.0
            }
        );
        let mut s = Sample::new(0).with(
            "boxes",
            Field::Tensor(
                Tensor::new(vec![1, 4], TensorData::F32(vec![10.0, 20.0, 30.0, 40.0])).unwrap(),
            ),
        );
        transform(&mut s, "boxes", |b| b.mirrored(100.0)).unwrap();
        assert_eq!(
            s.tensor("boxes").unwrap().data(),
            &TensorData::F32(vec![60.0, 20.0, 30.0, 40.0])
        );
        let mut bad = Sample::new(0).with_tensor("boxes", vec![4], TensorData::F32(vec![0.0; 4]));
        assert!(transform(&mut bad, "boxes", |b| b)
            .unwrap_err()
            .message
            .contains("[k, 4]"));
    }
}
