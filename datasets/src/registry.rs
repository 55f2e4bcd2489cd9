//! Every dataset kind, by name. Adding a kind: its module (a `KIND` with its reader, generator
//! and fields) and one line in [`KINDS`].

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::error::DatasetError;
use crate::kind::{DatasetKind, GenerateRequest};
use crate::{coco, commonvoice, cream, cubepp, folder, imagenet, librispeech, openwebtext};
use crate::{synthetic, webdataset};

pub static KINDS: &[DatasetKind] = &[
    imagenet::KIND,
    cubepp::PNG_KIND,
    cubepp::JPG_KIND,
    coco::KIND,
    openwebtext::KIND,
    commonvoice::KIND,
    librispeech::KIND,
    cream::KIND,
    synthetic::KIND,
    folder::KIND,
    webdataset::KIND,
];

pub fn find_kind(name: &str) -> Result<&'static DatasetKind, DatasetError> {
    KINDS.iter().find(|k| k.name == name).ok_or_else(|| {
        let names: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
        DatasetError::UnknownKind(
            name.to_string(),
            names.join(", "),
            workloads::suggest::did_you_mean(name, names.iter().copied()),
        )
    })
}

/// MB per sample that `kind` generates with `options`, for kinds that can say (synthetic
/// arrays are sized exactly); `None` for kinds whose sizes vary per sample.
pub fn expected_mb(
    kind: &str,
    options: &BTreeMap<String, String>,
) -> Result<Option<f64>, DatasetError> {
    let request = GenerateRequest {
        root: PathBuf::new(),
        samples: 1,
        seed: 0,
        threads: 1,
        options: options.clone(),
    };
    match find_kind(kind)?.expected_mb {
        Some(f) => f(&request).map(Some),
        None => Ok(None),
    }
}
