//! What crosses between prepbench and a worker for one sample: fields encoded in the shared
//! memory (bytes, text, arrays with their dtype and shape, or a field kept unchanged), each
//! length read back checked against its limit.

use std::io;

use crate::sample::{DType, Field, Tensor, TensorData};

/// Largest field or message a worker may send (as the decoders' tensor budget).
pub(super) const MAX_FIELD_BYTES: u64 = crate::sample::MAX_TENSOR_BYTES;
/// Largest memory a worker may grow the shared file to: one field at the limit, and room.
pub(super) const MAX_MEMORY: u64 = MAX_FIELD_BYTES + (64 << 20);
/// Most fields in one reply.
pub(super) const MAX_FIELDS: u32 = 4096;
/// Longest message or traceback read from a worker.
pub(super) const MAX_TEXT: u64 = 1 << 20;

pub(super) const BYTES: u8 = 0;
pub(super) const STR: u8 = 1;
pub(super) const ARRAY: u8 = 2;
pub(super) const KEPT: u8 = 3;

pub(super) fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// Reads a length from a worker, refused beyond `limit`.
pub(super) fn bounded(len: u64, limit: u64) -> io::Result<usize> {
    if len > limit {
        return Err(invalid(format!(
            "a length of {len} bytes, beyond the {limit}-byte limit"
        )));
    }
    Ok(len as usize)
}

/// A cursor over a reply in the shared memory; every read is checked against its end.
pub(super) struct In<'a> {
    pub buf: &'a [u8],
}

impl<'a> In<'a> {
    pub(super) fn take(&mut self, n: usize) -> io::Result<&'a [u8]> {
        if n > self.buf.len() {
            return Err(invalid(format!(
                "a reply cut short ({n} bytes wanted, {} left)",
                self.buf.len()
            )));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    pub(super) fn array<const N: usize>(&mut self) -> io::Result<[u8; N]> {
        Ok(self.take(N)?.try_into().expect("N bytes"))
    }

    pub(super) fn u8(&mut self) -> io::Result<u8> {
        Ok(self.array::<1>()?[0])
    }

    pub(super) fn u16(&mut self) -> io::Result<u16> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    pub(super) fn u32(&mut self) -> io::Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub(super) fn u64(&mut self) -> io::Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    pub(super) fn text(&mut self, len: u64) -> io::Result<String> {
        let len = bounded(len, MAX_TEXT)?;
        Ok(String::from_utf8_lossy(self.take(len)?).into_owned())
    }

    /// One field of a reply: `None` for prepbench's own (kept).
    pub(super) fn field(&mut self) -> io::Result<(String, Option<Field>)> {
        let name_len = self.u16()?;
        let name = self.text(name_len as u64)?;
        let field = match self.u8()? {
            BYTES => {
                let len = bounded(self.u64()?, MAX_FIELD_BYTES)?;
                Some(Field::Bytes(self.take(len)?.to_vec()))
            }
            STR => {
                let len = bounded(self.u64()?, MAX_FIELD_BYTES)?;
                let text = std::str::from_utf8(self.take(len)?)
                    .map_err(|e| invalid(format!("field `{name}`: {e}")))?;
                Some(Field::Text(text.to_string()))
            }
            ARRAY => {
                let code = self.u8()?;
                let dtype = *DType::ALL
                    .get(code as usize)
                    .ok_or_else(|| invalid(format!("unknown dtype code {code}")))?;
                let ndim = self.u8()?;
                let mut shape = Vec::with_capacity(ndim as usize);
                for _ in 0..ndim {
                    shape.push(bounded(self.u64()?, MAX_FIELD_BYTES)?);
                }
                let len = bounded(self.u64()?, MAX_FIELD_BYTES)?;
                shape
                    .iter()
                    .try_fold(1usize, |n, d| n.checked_mul(*d))
                    .filter(|n| n.checked_mul(dtype.size_bytes()) == Some(len))
                    .ok_or_else(|| {
                        invalid(format!(
                            "field `{name}`: shape {shape:?} of {dtype} does not match {len} bytes"
                        ))
                    })?;
                let data = elements(dtype, self.take(len)?);
                Some(Field::Tensor(
                    Tensor::new(shape, data).map_err(|e| invalid(e.message))?,
                ))
            }
            KEPT => None,
            tag => return Err(invalid(format!("unknown field tag {tag}"))),
        };
        Ok((name, field))
    }
}

/// The elements of `dtype` in `bytes`, copied once into typed storage (never zeroed first).
pub(super) fn elements(dtype: DType, bytes: &[u8]) -> TensorData {
    pub(super) fn typed<T: bytemuck::Pod>(bytes: &[u8]) -> Vec<T> {
        let n = bytes.len() / std::mem::size_of::<T>();
        let mut v: Vec<T> = Vec::with_capacity(n);
        // SAFETY: the capacity holds n elements; every bit pattern is a valid `Pod` value; the
        // source is n * size_of::<T>() bytes that do not overlap the new allocation.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                v.as_mut_ptr().cast::<u8>(),
                n * std::mem::size_of::<T>(),
            );
            v.set_len(n);
        }
        v
    }
    match dtype {
        DType::U8 => TensorData::U8(bytes.to_vec()),
        DType::U16 => TensorData::U16(typed(bytes)),
        DType::I16 => TensorData::I16(typed(bytes)),
        DType::I32 => TensorData::I32(typed(bytes)),
        DType::F32 => TensorData::F32(typed(bytes)),
        DType::F64 => TensorData::F64(typed(bytes)),
    }
}

/// A cursor writing a request into the shared memory (its size computed first).
pub(super) struct Out<'a> {
    pub buf: &'a mut [u8],
    pub pos: usize,
}

impl Out<'_> {
    pub(super) fn put(&mut self, bytes: &[u8]) {
        self.buf[self.pos..self.pos + bytes.len()].copy_from_slice(bytes);
        self.pos += bytes.len();
    }

    pub(super) fn field(&mut self, name: &str, field: Option<&Field>) {
        self.put(&(name.len() as u16).to_le_bytes());
        self.put(name.as_bytes());
        match field {
            None => self.put(&[KEPT]),
            Some(Field::Bytes(b)) => {
                self.put(&[BYTES]);
                self.put(&(b.len() as u64).to_le_bytes());
                self.put(b);
            }
            Some(Field::Text(t)) => {
                self.put(&[STR]);
                self.put(&(t.len() as u64).to_le_bytes());
                self.put(t.as_bytes());
            }
            Some(Field::Tensor(t)) => {
                let code = DType::ALL
                    .iter()
                    .position(|d| *d == t.dtype())
                    .expect("every dtype is listed") as u8;
                self.put(&[ARRAY, code, t.shape().len() as u8]);
                for dim in t.shape() {
                    self.put(&(*dim as u64).to_le_bytes());
                }
                let data = t.data().as_bytes();
                self.put(&(data.len() as u64).to_le_bytes());
                self.put(data);
            }
        }
    }
}

/// The bytes `field` takes in a request.
pub(super) fn encoded_len(name: &str, field: Option<&Field>) -> usize {
    2 + name.len()
        + 1
        + match field {
            None => 0,
            Some(Field::Bytes(b)) => 8 + b.len(),
            Some(Field::Text(t)) => 8 + t.len(),
            Some(Field::Tensor(t)) => 2 + 8 * t.shape().len() + 8 + t.data().as_bytes().len(),
        }
}
