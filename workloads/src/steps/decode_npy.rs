//! `decode_npy`: parses a NumPy `.npy` file (format 1.0 to 3.0, C order, little-endian uint8,
//! uint16, int16, int32, float32 or float64) into a tensor of its shape.

use serde::{Deserialize, Serialize};

use crate::error::StepError;
use crate::op::ParamDocs;
use crate::sample::{DType, Field, FieldName, Sample, Tensor, TensorData};
use crate::step::{Step, StepContext};

#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// bytes field holding the .npy file
    #[serde(default = "super::default_data_field")]
    #[param(reads)]
    pub from: FieldName,
    /// tensor to write
    #[serde(default = "default_to")]
    #[param(default = "array")]
    #[param(writes)]
    pub to: FieldName,
}

fn default_to() -> FieldName {
    "array".into()
}

step_spec! { DecodeNpy, "decode_npy", "parse a NumPy .npy file (C order, little-endian) into a tensor of its shape" }

#[derive(Debug)]
pub struct DecodeNpy {
    params: Params,
}

impl DecodeNpy {
    pub fn new(params: Params) -> Result<DecodeNpy, String> {
        Ok(DecodeNpy { params })
    }
}

/// Parses `.npy` bytes: (shape, dtype, offset of the data).
pub fn parse_header(bytes: &[u8]) -> Result<(Vec<usize>, DType, usize), String> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err("not a .npy file (no \\x93NUMPY magic)".to_string());
    }
    let (len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => return Err(format!(".npy format version {v} is not supported")),
    };
    let header = bytes
        .get(start..start + len)
        .and_then(|h| std::str::from_utf8(h).ok())
        .ok_or("the .npy header is truncated or not text")?;
    // The text after `'key':`, leading whitespace skipped.
    let value = |key: &str| -> Result<&str, String> {
        let needle = format!("'{key}':");
        let at = header
            .find(&needle)
            .ok_or(format!("the .npy header has no '{key}'"))?;
        Ok(header[at + needle.len()..].trim_start())
    };
    let descr = value("descr")?;
    let descr = descr
        .strip_prefix('\'')
        .and_then(|d| d.split('\'').next())
        .ok_or("bad 'descr' in the .npy header")?;
    let dtype = match descr {
        "|u1" | "<u1" => DType::U8,
        "<u2" => DType::U16,
        "<i2" => DType::I16,
        "<i4" => DType::I32,
        "<f4" => DType::F32,
        "<f8" => DType::F64,
        other => return Err(format!(".npy dtype `{other}` is not supported")),
    };
    if !value("fortran_order")?.starts_with("False") {
        return Err("Fortran-order .npy arrays are not supported".to_string());
    }
    let shape_text = value("shape")?;
    let inner = shape_text
        .strip_prefix('(')
        .and_then(|s| s.split(')').next())
        .ok_or("bad 'shape' in the .npy header")?;
    let shape = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .map_err(|_| format!("bad dimension `{s}`"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((shape, dtype, start + len))
}

impl Step for DecodeNpy {
    fn apply(&self, mut sample: Sample, _ctx: &StepContext) -> Result<Sample, StepError> {
        let bytes = sample.take_bytes(&self.params.from)?;
        let (shape, dtype, offset) = parse_header(&bytes).map_err(StepError::new)?;
        let expected = shape
            .iter()
            .try_fold(dtype.size_bytes(), |a, &d| a.checked_mul(d))
            .ok_or("the .npy shape overflows")
            .map_err(StepError::new)?;
        let data = &bytes[offset..];
        if data.len() != expected {
            return Err(StepError::new(format!(
                ".npy data is {} bytes, its header declares {shape:?} {dtype} = {expected}",
                data.len()
            )));
        }
        let tensor = Tensor::new(shape, TensorData::from_bytes(dtype, data))?;
        sample.set(&self.params.to, Field::Tensor(tensor));
        Ok(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
        let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}\n");
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        out.extend_from_slice(dict.as_bytes());
        out.extend_from_slice(data);
        out
    }

    #[test]
    fn parses_shapes_and_refuses_mismatches() {
        let step = DecodeNpy::new(Params {
            from: "data".into(),
            to: "array".into(),
        })
        .unwrap();
        let ctx = StepContext::default();
        let floats: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let run =
            |bytes: Vec<u8>| step.apply(Sample::new(0).with("data", Field::Bytes(bytes)), &ctx);
        let out = run(npy("<f4", "(2, 3)", &floats)).unwrap();
        assert_eq!(out.tensor("array").unwrap().shape(), &[2, 3]);
        let out = run(npy("|u1", "(4,)", &[1, 2, 3, 4])).unwrap();
        assert_eq!(
            out.tensor("array").unwrap().data(),
            &TensorData::U8(vec![1, 2, 3, 4])
        );
        assert!(run(npy("<f4", "(2, 4)", &floats))
            .unwrap_err()
            .message
            .contains("declares"));
        assert!(run(npy(">f4", "(6,)", &floats)).is_err());
        assert!(run(b"garbage".to_vec()).is_err());
    }
}
