//! `read_file`: reads the file named by a text field into a bytes field (the paper's "read";
//! its output, materialized, is the `concatenated` strategy).

use serde::{Deserialize, Serialize};

use crate::error::StepError;
use crate::op::{ParamDocs, StepFacts};
use crate::sample::{Field, FieldName, Sample};
use crate::step::{Step, StepContext};

#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// text field holding the file path
    #[serde(default = "super::default_path_field")]
    #[param(reads)]
    pub from: FieldName,
    /// bytes field to write
    #[serde(default = "super::default_data_field")]
    #[param(writes)]
    pub to: FieldName,
    /// Keep the path field after reading (off: stored records then hold only the bytes).
    #[serde(default)]
    pub keep_path: bool,
}

step_spec! { ReadFile, "read_file", "read the file named by a text field into a bytes field", StepFacts { reads_files: true, ..StepFacts::PURE } }

#[derive(Debug)]
pub struct ReadFile {
    params: Params,
}

impl ReadFile {
    pub fn new(params: Params) -> Result<ReadFile, String> {
        Ok(ReadFile { params })
    }
}

impl Step for ReadFile {
    fn apply(&self, mut sample: Sample, ctx: &StepContext) -> Result<Sample, StepError> {
        let path = sample.path(&self.params.from)?;
        let bytes = ctx
            .read_file(&path)
            .map_err(|e| StepError::new(format!("cannot read {}: {e}", path.display())))?;
        if !self.params.keep_path {
            sample.remove(&self.params.from);
        }
        sample.set(&self.params.to, Field::Bytes(bytes));
        Ok(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_named_file_and_drops_the_path() {
        let dir = std::env::temp_dir().join(format!("pb-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("a.bin");
        std::fs::write(&file, b"hello").unwrap();
        let step = ReadFile::new(Params {
            from: crate::steps::default_path_field(),
            to: crate::steps::default_data_field(),
            keep_path: false,
        })
        .unwrap();
        let ctx = StepContext::default();
        let s = Sample::new(3).with("path", Field::Text(file.display().to_string()));
        let out = step.apply(s, &ctx).unwrap();
        assert_eq!(out.bytes("data").unwrap(), b"hello");
        assert!(out.get("path").is_none());
        let missing =
            Sample::new(4).with("path", Field::Text(dir.join("nope").display().to_string()));
        let err = step.apply(missing, &ctx).unwrap_err();
        assert!(err.message.contains("nope"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
