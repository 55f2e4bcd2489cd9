//! Helpers shared by the reference tests.

#![allow(dead_code)]

use std::path::Path;

/// A little-endian, C-order .npy array: (shape, values as f64).
pub fn npy(path: &Path) -> (Vec<usize>, Vec<f64>) {
    let name = path.display();
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(&bytes[..6], b"\x93NUMPY", "{name}: not .npy");
    let (header_len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        _ => (
            u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize,
            12,
        ),
    };
    let header = std::str::from_utf8(&bytes[start..start + header_len]).unwrap();
    assert!(
        header.contains("'fortran_order': False"),
        "{name}: {header}"
    );
    let descr = header
        .split("'descr': '")
        .nth(1)
        .unwrap()
        .split('\'')
        .next()
        .unwrap();
    let shape: Vec<usize> = header
        .split("'shape': (")
        .nth(1)
        .unwrap()
        .split(')')
        .next()
        .unwrap()
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().parse().unwrap())
        .collect();
    let data = &bytes[start + header_len..];
    let values: Vec<f64> = match descr {
        "<f4" => data
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64)
            .collect(),
        "<f8" => data
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect(),
        "|u1" => data.iter().map(|&b| b as f64).collect(),
        "<i2" => data
            .chunks_exact(2)
            .map(|c| i16::from_le_bytes(c.try_into().unwrap()) as f64)
            .collect(),
        other => panic!("{name}: dtype {other}"),
    };
    assert_eq!(values.len(), shape.iter().product::<usize>(), "{name}");
    (shape, values)
}
