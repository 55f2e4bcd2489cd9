//! prepbench's compact binary encoding of a [`Sample`] (the payload of every stored record).
//!
//! Layout, all integers little-endian, every section padded to 8 bytes so that tensor data
//! starts 8-byte aligned relative to the payload (zero-copy friendly: a reader holding the
//! payload in an aligned buffer can view tensor data in place, see [`SampleView`]):
//!
//! ```text
//! "PBS1"  u32 field_count  u64 id
//! per field:
//!   u8 kind (1 tensor, 2 bytes, 3 text)  u8 dtype (0 unless tensor)  u8 ndim  u8 name_len
//!   u32 zero  u64 data_len_bytes  ndim x u64 dims
//!   name (UTF-8, zero-padded to 8)  data (zero-padded to 8)
//! ```

use thiserror::Error;

use crate::sample::{DType, Field, Sample, Tensor, TensorData, MAX_FIELD_NAME_BYTES};

#[cfg(target_endian = "big")]
compile_error!("prepbench's sample encoding assumes a little-endian target");

const MAGIC: &[u8; 4] = b"PBS1";
const KIND_TENSOR: u8 = 1;
const KIND_BYTES: u8 = 2;
const KIND_TEXT: u8 = 3;
/// Tensors may have at most this many dimensions.
pub const MAX_RANK: usize = 16;

/// A payload that is not a valid encoded sample; `offset` is the byte where parsing failed.
#[derive(Debug, Error, PartialEq)]
#[error("invalid sample encoding at byte {offset}: {message}")]
pub struct EncodingError {
    pub offset: usize,
    pub message: String,
}

fn pad8(len: usize) -> usize {
    (8 - len % 8) % 8
}

/// Exact number of bytes [`encode`] produces for `sample`.
pub fn encoded_len(sample: &Sample) -> usize {
    16 + sample
        .fields()
        .iter()
        .map(|(name, field)| {
            let ndim = match field {
                Field::Tensor(t) => t.shape().len(),
                _ => 0,
            };
            let data = field.size_bytes();
            16 + 8 * ndim + name.len() + pad8(name.len()) + data + pad8(data)
        })
        .sum::<usize>()
}

/// Appends the encoding of `sample` to `out`.
///
/// # Panics
/// Never on valid samples; a field name longer than [`MAX_FIELD_NAME_BYTES`] or a tensor of
/// rank above [`MAX_RANK`] is a programming error in a step and is truncated by an assertion.
pub fn encode_into(sample: &Sample, out: &mut Vec<u8>) {
    out.reserve(encoded_len(sample));
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(sample.fields().len() as u32).to_le_bytes());
    out.extend_from_slice(&sample.id.to_le_bytes());
    for (name, field) in sample.fields() {
        assert!(name.len() <= MAX_FIELD_NAME_BYTES, "field name too long");
        let (kind, dtype, shape, data): (u8, u8, &[usize], &[u8]) = match field {
            Field::Tensor(t) => {
                assert!(t.shape().len() <= MAX_RANK, "tensor rank too high");
                (KIND_TENSOR, t.dtype() as u8, t.shape(), t.data().as_bytes())
            }
            Field::Bytes(b) => (KIND_BYTES, 0, &[], b),
            Field::Text(s) => (KIND_TEXT, 0, &[], s.as_bytes()),
        };
        out.extend_from_slice(&[kind, dtype, shape.len() as u8, name.len() as u8]);
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&(data.len() as u64).to_le_bytes());
        for dim in shape {
            out.extend_from_slice(&(*dim as u64).to_le_bytes());
        }
        out.extend_from_slice(name.as_bytes());
        out.resize(out.len() + pad8(name.len()), 0);
        out.extend_from_slice(data);
        out.resize(out.len() + pad8(data.len()), 0);
    }
}

pub fn encode(sample: &Sample) -> Vec<u8> {
    let mut out = Vec::new();
    encode_into(sample, &mut out);
    out
}

/// Parses and validates a payload, then copies it into an owned [`Sample`].
pub fn decode(payload: &[u8]) -> Result<Sample, EncodingError> {
    SampleView::parse(payload)?.to_sample()
}

/// A borrowed, validated view of an encoded sample: field data are slices of the payload.
#[derive(Debug)]
pub struct SampleView<'a> {
    pub id: u64,
    pub fields: Vec<FieldView<'a>>,
}

#[derive(Debug)]
pub struct FieldView<'a> {
    pub name: &'a str,
    /// `None` for bytes and text.
    pub dtype: Option<DType>,
    pub is_text: bool,
    pub shape: Vec<usize>,
    pub data: &'a [u8],
}

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn fail(&self, message: impl Into<String>) -> EncodingError {
        EncodingError {
            offset: self.pos,
            message: message.into(),
        }
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], EncodingError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|end| *end <= self.buf.len())
            .ok_or_else(|| {
                self.fail(format!(
                    "truncated: {what} needs {n} bytes, {} left",
                    self.buf.len() - self.pos
                ))
            })?;
        let slice = &self.buf[self.pos..end];
        self.pos = end;
        Ok(slice)
    }

    fn u64(&mut self, what: &str) -> Result<u64, EncodingError> {
        let b = self.take(8, what)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    fn skip_pad(&mut self, len: usize) -> Result<(), EncodingError> {
        self.take(pad8(len), "padding").map(|_| ())
    }
}

impl<'a> SampleView<'a> {
    pub fn parse(payload: &'a [u8]) -> Result<SampleView<'a>, EncodingError> {
        let mut c = Cursor {
            buf: payload,
            pos: 0,
        };
        if c.take(4, "magic")? != MAGIC {
            c.pos = 0;
            return Err(c.fail("not a prepbench sample (bad magic)"));
        }
        let count = u32::from_le_bytes(c.take(4, "field count")?.try_into().expect("4 bytes"));
        let id = c.u64("sample id")?;
        // Each field needs at least 16 header bytes: bound the count before allocating.
        if count as usize > payload.len() / 16 {
            return Err(c.fail(format!(
                "field count {count} exceeds what the payload can hold"
            )));
        }
        let mut fields = Vec::with_capacity(count as usize);
        for _ in 0..count {
            fields.push(Self::parse_field(&mut c)?);
        }
        if c.pos != payload.len() {
            return Err(c.fail(format!(
                "{} trailing bytes after the last field",
                payload.len() - c.pos
            )));
        }
        Ok(SampleView { id, fields })
    }

    fn parse_field(c: &mut Cursor<'a>) -> Result<FieldView<'a>, EncodingError> {
        let start = c.pos;
        let head = c.take(8, "field header")?;
        let (kind, dtype_code, ndim, name_len) = (head[0], head[1], head[2] as usize, head[3]);
        let data_len = c.u64("data length")?;
        if ndim > MAX_RANK {
            c.pos = start;
            return Err(c.fail(format!("rank {ndim} above the maximum {MAX_RANK}")));
        }
        let mut shape = Vec::with_capacity(ndim);
        for _ in 0..ndim {
            let dim = c.u64("dimension")?;
            shape.push(usize::try_from(dim).map_err(|_| c.fail("dimension overflows usize"))?);
        }
        let name_bytes = c.take(name_len as usize, "field name")?;
        let name =
            std::str::from_utf8(name_bytes).map_err(|_| c.fail("field name is not UTF-8"))?;
        c.skip_pad(name_len as usize)?;
        let data_len = usize::try_from(data_len).map_err(|_| c.fail("data length overflows"))?;
        let data = c.take(data_len, "field data")?;
        c.skip_pad(data_len)?;
        let (dtype, is_text) = match kind {
            KIND_TENSOR => {
                let dtype = DType::from_code(dtype_code)
                    .ok_or_else(|| c.fail(format!("unknown dtype code {dtype_code}")))?;
                let elements = shape
                    .iter()
                    .try_fold(1usize, |acc, d| acc.checked_mul(*d))
                    .and_then(|n| n.checked_mul(dtype.size_bytes()));
                if elements != Some(data_len) {
                    return Err(c.fail(format!(
                        "tensor `{name}` of shape {shape:?} {dtype} cannot hold {data_len} bytes"
                    )));
                }
                (Some(dtype), false)
            }
            KIND_BYTES | KIND_TEXT if ndim == 0 => {
                if kind == KIND_TEXT && std::str::from_utf8(data).is_err() {
                    return Err(c.fail(format!("text field `{name}` is not UTF-8")));
                }
                (None, kind == KIND_TEXT)
            }
            _ => return Err(c.fail(format!("unknown field kind {kind} for `{name}`"))),
        };
        Ok(FieldView {
            name,
            dtype,
            is_text,
            shape,
            data,
        })
    }

    pub fn to_sample(&self) -> Result<Sample, EncodingError> {
        let mut sample = Sample::new(self.id);
        for f in &self.fields {
            let field = match (f.dtype, f.is_text) {
                (Some(dtype), _) => Field::Tensor(
                    Tensor::new(f.shape.clone(), TensorData::from_bytes(dtype, f.data)).map_err(
                        |e| EncodingError {
                            offset: 0,
                            message: e.to_string(),
                        },
                    )?,
                ),
                (None, true) => Field::Text(
                    String::from_utf8(f.data.to_vec()).expect("validated as UTF-8 by parse"),
                ),
                (None, false) => Field::Bytes(f.data.to_vec()),
            };
            sample.set(f.name, field);
        }
        Ok(sample)
    }
}

impl Sample {
    /// A 64-bit content hash over id, field names, kinds, shapes and data (xxh3 of the
    /// encoding). Two samples hash equal exactly when their encodings are equal.
    pub fn content_hash(&self) -> u64 {
        xxhash_rust::xxh3::xxh3_64(&encode(self))
    }

    /// [`Sample::content_hash`] of the sample with its fields in name order: equal for two
    /// samples with the same fields whichever order each was built in (what `--verify`
    /// compares across engines, which may assemble a sample's fields in different orders).
    pub fn unordered_hash(&self) -> u64 {
        let mut fields: Vec<&(String, Field)> = self.fields().iter().collect();
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        let sorted = fields
            .into_iter()
            .fold(Sample::new(self.id), |s, (name, field)| {
                s.with(name, field.clone())
            });
        sorted.content_hash()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_tensor() -> impl Strategy<Value = Tensor> {
        (prop::collection::vec(0usize..5, 0..4), 0u8..6).prop_flat_map(|(shape, code)| {
            let n: usize = shape.iter().product();
            let data = match code {
                0 => prop::collection::vec(any::<u8>(), n)
                    .prop_map(TensorData::U8)
                    .boxed(),
                1 => prop::collection::vec(any::<u16>(), n)
                    .prop_map(TensorData::U16)
                    .boxed(),
                2 => prop::collection::vec(any::<i16>(), n)
                    .prop_map(TensorData::I16)
                    .boxed(),
                3 => prop::collection::vec(any::<i32>(), n)
                    .prop_map(TensorData::I32)
                    .boxed(),
                4 => prop::collection::vec(any::<f32>(), n)
                    .prop_map(TensorData::F32)
                    .boxed(),
                _ => prop::collection::vec(any::<f64>(), n)
                    .prop_map(TensorData::F64)
                    .boxed(),
            };
            data.prop_map(move |d| Tensor::new(shape.clone(), d).unwrap())
        })
    }

    fn arb_field() -> impl Strategy<Value = Field> {
        prop_oneof![
            arb_tensor().prop_map(Field::Tensor),
            prop::collection::vec(any::<u8>(), 0..40).prop_map(Field::Bytes),
            ".{0,20}".prop_map(Field::Text),
        ]
    }

    fn arb_sample() -> impl Strategy<Value = Sample> {
        (
            any::<u64>(),
            prop::collection::vec(("[a-z_]{1,12}", arb_field()), 0..5),
        )
            .prop_map(|(id, fields)| {
                let mut s = Sample::new(id);
                for (name, field) in fields {
                    s.set(&name, field);
                }
                s
            })
    }

    /// Bitwise equality (NaN-safe), since float fields may hold NaN payloads.
    fn same(a: &Sample, b: &Sample) -> bool {
        encode(a) == encode(b) && a.fields().len() == b.fields().len()
    }

    proptest! {
        #[test]
        fn round_trip_preserves_every_field(sample in arb_sample()) {
            let bytes = encode(&sample);
            prop_assert_eq!(bytes.len(), encoded_len(&sample));
            prop_assert_eq!(bytes.len() % 8, 0);
            let back = decode(&bytes).unwrap();
            prop_assert_eq!(back.id, sample.id);
            prop_assert!(same(&back, &sample));
            prop_assert_eq!(back.content_hash(), sample.content_hash());
        }

        #[test]
        fn tensor_data_is_8_byte_aligned_in_the_payload(sample in arb_sample()) {
            let bytes = encode(&sample);
            let view = SampleView::parse(&bytes).unwrap();
            for f in &view.fields {
                let offset = f.data.as_ptr() as usize - bytes.as_ptr() as usize;
                prop_assert_eq!(offset % 8, 0);
            }
        }

        #[test]
        fn truncated_or_garbled_payloads_error_instead_of_panicking(
            sample in arb_sample(), cut in any::<prop::sample::Index>(), flip in any::<u8>()
        ) {
            let bytes = encode(&sample);
            let cut_at = cut.index(bytes.len());
            prop_assert!(decode(&bytes[..cut_at]).is_err());
            let mut garbled = bytes.clone();
            garbled[cut_at] ^= flip | 1;
            let _ = decode(&garbled); // may be valid (data bytes), must not panic
        }
    }

    #[test]
    fn known_layout_of_a_small_sample() {
        let s = Sample::new(7).with_tensor("x", vec![2], TensorData::I16(vec![1, -1]));
        let b = encode(&s);
        assert_eq!(&b[0..4], b"PBS1");
        assert_eq!(u32::from_le_bytes(b[4..8].try_into().unwrap()), 1);
        assert_eq!(u64::from_le_bytes(b[8..16].try_into().unwrap()), 7);
        assert_eq!(&b[16..20], &[KIND_TENSOR, DType::I16 as u8, 1, 1]);
        assert_eq!(u64::from_le_bytes(b[24..32].try_into().unwrap()), 4); // data bytes
        assert_eq!(u64::from_le_bytes(b[32..40].try_into().unwrap()), 2); // dim
        assert_eq!(b[40], b'x');
        assert_eq!(&b[48..52], &[1, 0, 0xff, 0xff]);
        assert_eq!(b.len(), 56);
    }

    #[test]
    fn a_lying_field_count_is_refused_before_allocating() {
        let mut b = encode(&Sample::new(1));
        b[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        let err = decode(&b).unwrap_err();
        assert!(err.message.contains("field count"), "{err}");
    }
}
