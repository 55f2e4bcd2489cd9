//! prepbench's dataset sources: for each dataset kind a reader of the real dataset's on-disk
//! layout and a deterministic generator that writes the same layout, so pipelines only ever use
//! the layout readers. This file only names the modules and what the crate offers.

pub mod audio;
pub mod calibration;
pub mod check;
pub mod coco;
pub mod commonvoice;
pub mod cream;
pub mod cubepp;
pub mod decode_cost;
pub mod error;
pub mod files;
pub mod folder;
pub mod generate;
pub mod imagenet;
pub mod kind;
pub mod librispeech;
pub mod openwebtext;
pub mod photo;
pub mod prepare;
pub mod prose;
pub mod registry;
pub mod source;
pub mod speech;
pub mod synthetic;
pub mod webdataset;
pub mod write;

pub use calibration::{check_calibration, CalibrationCheck};
pub use check::check_workload;
pub use decode_cost::{measure_decode, DecodeCost};
pub use error::DatasetError;
pub use files::{Entry, Files, LocalFiles};
pub use generate::{
    bytes_to_generate, default_dir_name, generate, marker_files, recorded_decode, MARKER,
};
pub use kind::{Calibration, DatasetKind, GenerateRequest, Options};
pub use prepare::{check_present, open_named, prepare, prepare_counted, prepare_in};
pub use registry::{expected_mb, find_kind, KINDS};
pub use source::{Source, SourceItem};
pub use write::{for_each_index, write_atomically};
