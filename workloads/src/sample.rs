//! The sample model: one training example as named fields (tensors, raw bytes, text) plus a
//! stable id, the unit every step consumes and produces.

use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Serialize};

use crate::error::StepError;

/// Element type of a tensor. The discriminants are the on-disk codes of the sample encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DType {
    U8 = 1,
    U16 = 2,
    I16 = 3,
    I32 = 4,
    F32 = 5,
    F64 = 6,
}

impl DType {
    pub const ALL: [DType; 6] = [
        DType::U8,
        DType::U16,
        DType::I16,
        DType::I32,
        DType::F32,
        DType::F64,
    ];

    pub fn size_bytes(self) -> usize {
        match self {
            DType::U8 => 1,
            DType::U16 | DType::I16 => 2,
            DType::I32 | DType::F32 => 4,
            DType::F64 => 8,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    pub fn from_code(code: u8) -> Option<DType> {
        DType::ALL.into_iter().find(|d| *d as u8 == code)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Typed element storage of a tensor (row-major, native little-endian).
#[derive(Clone, Debug, PartialEq)]
pub enum TensorData {
    U8(Vec<u8>),
    U16(Vec<u16>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl TensorData {
    pub fn dtype(&self) -> DType {
        match self {
            TensorData::U8(_) => DType::U8,
            TensorData::U16(_) => DType::U16,
            TensorData::I16(_) => DType::I16,
            TensorData::I32(_) => DType::I32,
            TensorData::F32(_) => DType::F32,
            TensorData::F64(_) => DType::F64,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            TensorData::U8(v) => v.len(),
            TensorData::U16(v) => v.len(),
            TensorData::I16(v) => v.len(),
            TensorData::I32(v) => v.len(),
            TensorData::F32(v) => v.len(),
            TensorData::F64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements as little-endian bytes (a view, no copy).
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            TensorData::U8(v) => v,
            TensorData::U16(v) => bytemuck::cast_slice(v),
            TensorData::I16(v) => bytemuck::cast_slice(v),
            TensorData::I32(v) => bytemuck::cast_slice(v),
            TensorData::F32(v) => bytemuck::cast_slice(v),
            TensorData::F64(v) => bytemuck::cast_slice(v),
        }
    }

    /// Copies little-endian bytes into typed storage; `bytes.len()` must be a multiple of the
    /// element size (checked by the caller).
    pub fn from_bytes(dtype: DType, bytes: &[u8]) -> TensorData {
        fn collect<T: bytemuck::Pod>(bytes: &[u8]) -> Vec<T> {
            bytemuck::pod_collect_to_vec(bytes)
        }
        match dtype {
            DType::U8 => TensorData::U8(bytes.to_vec()),
            DType::U16 => TensorData::U16(collect(bytes)),
            DType::I16 => TensorData::I16(collect(bytes)),
            DType::I32 => TensorData::I32(collect(bytes)),
            DType::F32 => TensorData::F32(collect(bytes)),
            DType::F64 => TensorData::F64(collect(bytes)),
        }
    }
}

/// A dense tensor. Invariant (checked by [`Tensor::new`]): the product of `shape` equals the
/// number of elements.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    shape: Vec<usize>,
    data: TensorData,
}

impl Tensor {
    pub fn new(shape: Vec<usize>, data: TensorData) -> Result<Tensor, StepError> {
        let expected = shape.iter().try_fold(1usize, |acc, d| acc.checked_mul(*d));
        if expected != Some(data.len()) {
            return Err(StepError::new(format!(
                "tensor shape {shape:?} does not match its {} elements",
                data.len()
            )));
        }
        Ok(Tensor { shape, data })
    }

    /// A rank-0 tensor holding one value.
    pub fn scalar_i32(value: i32) -> Tensor {
        Tensor {
            shape: Vec::new(),
            data: TensorData::I32(vec![value]),
        }
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    pub fn data(&self) -> &TensorData {
        &self.data
    }

    pub fn into_parts(self) -> (Vec<usize>, TensorData) {
        (self.shape, self.data)
    }

    pub fn size_bytes(&self) -> usize {
        self.data.len() * self.dtype().size_bytes()
    }
}

/// One named value of a sample.
#[derive(Clone, Debug, PartialEq)]
pub enum Field {
    Tensor(Tensor),
    Bytes(Vec<u8>),
    Text(String),
}

impl Field {
    /// A file path as a field: text, or its bytes when the path is not UTF-8 (a Unix file name
    /// may hold any byte), so the exact file can be named again by [`Sample::path`].
    pub fn path(path: &std::path::Path) -> Field {
        match path.to_str() {
            Some(text) => Field::Text(text.to_string()),
            None => {
                use std::os::unix::ffi::OsStrExt;
                Field::Bytes(path.as_os_str().as_bytes().to_vec())
            }
        }
    }

    pub fn kind_name(&self) -> &'static str {
        match self {
            Field::Tensor(_) => "tensor",
            Field::Bytes(_) => "bytes",
            Field::Text(_) => "text",
        }
    }

    pub fn size_bytes(&self) -> usize {
        match self {
            Field::Tensor(t) => t.size_bytes(),
            Field::Bytes(b) => b.len(),
            Field::Text(s) => s.len(),
        }
    }
}

/// One training example: a stable `id` (its index in the source) and ordered named fields.
/// Field order is part of the sample's identity (it is kept by the encoding and the hash).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Sample {
    pub id: u64,
    fields: Vec<(String, Field)>,
}

impl Sample {
    pub fn new(id: u64) -> Sample {
        Sample {
            id,
            fields: Vec::new(),
        }
    }

    pub fn fields(&self) -> &[(String, Field)] {
        &self.fields
    }

    pub fn get(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, f)| f)
    }

    /// Sets `name` to `field`, replacing an existing field in place (its position is kept).
    pub fn set(&mut self, name: &str, field: Field) {
        match self.fields.iter_mut().find(|(n, _)| n == name) {
            Some((_, slot)) => *slot = field,
            None => self.fields.push((name.to_string(), field)),
        }
    }

    /// Builder form of [`Sample::set`].
    /// Sets field `name` to a tensor of `shape` holding `data`, refused when they disagree.
    pub fn set_tensor(
        &mut self,
        name: &str,
        shape: Vec<usize>,
        data: TensorData,
    ) -> Result<(), StepError> {
        self.set(name, Field::Tensor(Tensor::new(shape, data)?));
        Ok(())
    }

    /// The sample with field `name` a tensor of `shape` holding `data` (which must agree).
    pub fn with_tensor(mut self, name: &str, shape: Vec<usize>, data: TensorData) -> Sample {
        self.set(
            name,
            Field::Tensor(Tensor::new(shape, data).expect("shape and data agree")),
        );
        self
    }

    pub fn with(mut self, name: &str, field: Field) -> Sample {
        self.set(name, field);
        self
    }

    pub fn remove(&mut self, name: &str) -> Option<Field> {
        let index = self.fields.iter().position(|(n, _)| n == name)?;
        Some(self.fields.remove(index).1)
    }

    /// Removes and returns the tensor `name`, or an error saying what was there instead.
    pub fn take_tensor(&mut self, name: &str) -> Result<Tensor, StepError> {
        match self.remove(name) {
            Some(Field::Tensor(t)) => Ok(t),
            other => Err(self.wrong_kind(name, "tensor", other)),
        }
    }

    /// Removes and returns the bytes field `name`.
    pub fn take_bytes(&mut self, name: &str) -> Result<Vec<u8>, StepError> {
        match self.remove(name) {
            Some(Field::Bytes(b)) => Ok(b),
            other => Err(self.wrong_kind(name, "bytes", other)),
        }
    }

    /// The file path in field `name` (written by [`Field::path`]: text, or the bytes of a
    /// path that is not UTF-8).
    pub fn path(&self, name: &str) -> Result<std::path::PathBuf, StepError> {
        use std::os::unix::ffi::OsStrExt;
        match self.get(name) {
            Some(Field::Text(t)) => Ok(t.into()),
            Some(Field::Bytes(b)) => Ok(std::ffi::OsStr::from_bytes(b).into()),
            other => Err(self.wrong_kind(name, "a path (text)", other.cloned())),
        }
    }

    pub fn take_text(&mut self, name: &str) -> Result<String, StepError> {
        match self.remove(name) {
            Some(Field::Text(t)) => Ok(t),
            other => Err(self.wrong_kind(name, "text", other)),
        }
    }

    pub fn tensor(&self, name: &str) -> Result<&Tensor, StepError> {
        match self.get(name) {
            Some(Field::Tensor(t)) => Ok(t),
            other => Err(self.wrong_kind(name, "tensor", other.cloned())),
        }
    }

    pub fn bytes(&self, name: &str) -> Result<&[u8], StepError> {
        match self.get(name) {
            Some(Field::Bytes(b)) => Ok(b),
            other => Err(self.wrong_kind(name, "bytes", other.cloned())),
        }
    }

    pub fn text(&self, name: &str) -> Result<&str, StepError> {
        match self.get(name) {
            Some(Field::Text(s)) => Ok(s),
            other => Err(self.wrong_kind(name, "text", other.cloned())),
        }
    }

    fn wrong_kind(&self, name: &str, wanted: &str, found: Option<Field>) -> StepError {
        let present: Vec<&str> = self.fields.iter().map(|(n, _)| n.as_str()).collect();
        match found {
            None => StepError::new(format!(
                "sample has no field `{name}` (it has: {})",
                present.join(", ")
            )),
            Some(f) => StepError::new(format!(
                "field `{name}` is {}, expected {wanted}",
                f.kind_name()
            )),
        }
    }

    /// Total payload bytes of all fields (not counting encoding headers).
    pub fn size_bytes(&self) -> usize {
        self.fields.iter().map(|(_, f)| f.size_bytes()).sum()
    }
}

/// The largest tensor a step allocates for one sample, in bytes (4 GiB, far above any
/// reference pipeline's): a parameter or a header asking for more is refused before the
/// allocation, which would otherwise abort the process.
pub const MAX_TENSOR_BYTES: u64 = 4 << 30;
/// Longest field name in bytes (the encoding stores the length in one byte).
pub const MAX_FIELD_NAME_BYTES: usize = 255;

/// A field name given in a workload file: 1 to 255 bytes of UTF-8 (the encoding stores the
/// length in one byte), checked when the YAML is loaded.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(try_from = "String", into = "String")]
pub struct FieldName(String);

impl From<FieldName> for String {
    fn from(name: FieldName) -> String {
        name.0
    }
}

impl TryFrom<String> for FieldName {
    type Error = String;

    fn try_from(name: String) -> Result<FieldName, String> {
        if name.is_empty() || name.len() > MAX_FIELD_NAME_BYTES {
            return Err(format!(
                "field name must be 1 to {MAX_FIELD_NAME_BYTES} bytes, got {}",
                name.len()
            ));
        }
        Ok(FieldName(name))
    }
}

impl From<&str> for FieldName {
    /// For names written in code; panics on an invalid name, which is a programming error.
    fn from(name: &str) -> FieldName {
        FieldName::try_from(name.to_string()).expect("valid field name in code")
    }
}

impl Deref for FieldName {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FieldName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
