//! `read_webdataset`: reads a WebDataset sample (the members of one key in a tar shard, listed
//! by the `webdataset` dataset kind) with one read of its span, as a WebDataset reader streams
//! it, and gives each member as a bytes field named by its extension (`jpg`, `cls`,
//! `seg.png`). The sample keeps its `__key__`.

use serde::{Deserialize, Serialize};

use crate::error::StepError;
use crate::op::{ParamDocs, StepFacts};
use crate::sample::{Field, FieldName, Sample, Tensor};
use crate::step::{Step, StepContext};

/// The fields the `webdataset` kind gives each sample (besides `path`, the shard).
pub const SPAN_FIELD: &str = "__span__";
pub const MEMBERS_FIELD: &str = "__members__";

#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// text field holding the shard's path
    #[serde(default = "super::default_path_field")]
    #[param(reads)]
    pub from: FieldName,
    /// extensions to keep, comma-separated (`jpg,cls`); each must be there. Unset: every member
    #[serde(default)]
    pub keep: Option<String>,
    /// extension of a member holding the class as decimal text (`cls`), parsed into an int32 `label`
    #[serde(default)]
    pub label: Option<String>,
}

step_spec! { ReadWebdataset, "read_webdataset", "read a WebDataset sample's members from its tar shard, one bytes field per extension", StepFacts { reads_files: true, fields_at_run_time: true, ..StepFacts::PURE } }

#[derive(Debug)]
pub struct ReadWebdataset {
    params: Params,
    keep: Option<Vec<String>>,
}

impl ReadWebdataset {
    pub fn new(params: Params) -> Result<ReadWebdataset, String> {
        let keep = params.keep.as_ref().map(|k| {
            k.split(',')
                .map(|e| e.trim().trim_start_matches('.').to_lowercase())
                .filter(|e| !e.is_empty())
                .collect::<Vec<_>>()
        });
        if keep.as_ref().is_some_and(|k| k.is_empty()) {
            return Err("keep: name at least one extension (`jpg,cls`)".into());
        }
        Ok(ReadWebdataset { params, keep })
    }
}

/// The (extension, offset, length) lines of a sample's member list.
fn members(list: &str) -> Result<Vec<(&str, usize, usize)>, StepError> {
    list.lines()
        .map(|line| {
            let mut parts = line.split('\t');
            let (Some(ext), Some(offset), Some(length), None) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return Err(StepError::new(format!("malformed member line `{line}`")));
            };
            let number = |v: &str| {
                v.parse::<usize>()
                    .map_err(|_| StepError::new(format!("malformed member line `{line}`")))
            };
            Ok((ext, number(offset)?, number(length)?))
        })
        .collect()
}

impl Step for ReadWebdataset {
    fn apply(&self, mut sample: Sample, ctx: &StepContext) -> Result<Sample, StepError> {
        let shard = sample.path(&self.params.from)?;
        sample.remove(&self.params.from);
        let span = sample.take_text(SPAN_FIELD)?;
        let list = sample.take_text(MEMBERS_FIELD)?;
        let (offset, length) = span
            .split_once(' ')
            .and_then(|(o, l)| Some((o.parse::<u64>().ok()?, l.parse::<u64>().ok()?)))
            .ok_or_else(|| StepError::new(format!("malformed span `{span}`")))?;
        let bytes = ctx
            .read_range(&shard, offset, length)
            .map_err(|e| StepError::new(format!("cannot read {}: {e}", shard.display())))?;
        let listed = members(&list)?;
        for (ext, at, len) in &listed {
            let data = at
                .checked_add(*len)
                .and_then(|end| bytes.get(*at..end))
                .ok_or_else(|| {
                    StepError::new(format!("member .{ext} lies beyond its sample's span"))
                })?;
            let wanted = self
                .keep
                .as_ref()
                .is_none_or(|k| k.iter().any(|e| e == ext));
            if wanted {
                sample.set(ext, Field::Bytes(data.to_vec()));
            }
            if self.params.label.as_deref() == Some(*ext) {
                let text = String::from_utf8_lossy(data);
                let label: i32 = text.trim().parse().map_err(|_| {
                    StepError::new(format!(
                        "member .{ext} is `{}`, not a class number",
                        text.chars().take(40).collect::<String>()
                    ))
                })?;
                sample.set("label", Field::Tensor(Tensor::scalar_i32(label)));
            }
        }
        let has = |ext: &str| listed.iter().any(|(e, _, _)| *e == ext);
        for ext in self.keep.iter().flatten().chain(&self.params.label) {
            if !has(ext) {
                let present: Vec<&str> = listed.iter().map(|(e, _, _)| *e).collect();
                return Err(StepError::new(format!(
                    "the sample has no .{ext} member (it has: {})",
                    present.join(", ")
                )));
            }
        }
        Ok(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_span_and_gives_each_member_by_extension() {
        let dir = tempfile::tempdir().unwrap();
        let shard = dir.path().join("s.tar");
        std::fs::write(&shard, b"....JPEGDATA..7...").unwrap();
        let sample = || {
            Sample::new(0)
                .with("path", Field::Text(shard.display().to_string()))
                .with("__key__", Field::Text("k".into()))
                .with(SPAN_FIELD, Field::Text("4 11".into()))
                .with(MEMBERS_FIELD, Field::Text("jpg\t0\t8\ncls\t10\t1\n".into()))
        };
        let step = |keep: Option<&str>, label: Option<&str>| {
            ReadWebdataset::new(Params {
                from: crate::steps::default_path_field(),
                keep: keep.map(String::from),
                label: label.map(String::from),
            })
            .unwrap()
        };
        let ctx = StepContext::default();
        let out = step(None, Some("cls")).apply(sample(), &ctx).unwrap();
        assert_eq!(out.bytes("jpg").unwrap(), b"JPEGDATA");
        assert_eq!(out.bytes("cls").unwrap(), b"7");
        assert_eq!(out.tensor("label").unwrap(), &Tensor::scalar_i32(7));
        assert_eq!(out.text("__key__").unwrap(), "k");
        assert!(out.get("path").is_none() && out.get(SPAN_FIELD).is_none());
        let only = step(Some("jpg"), None).apply(sample(), &ctx).unwrap();
        assert!(only.get("cls").is_none());
        let err = step(Some("png"), None).apply(sample(), &ctx).unwrap_err();
        assert!(
            err.message.contains("no .png member (it has: jpg, cls)"),
            "{err}"
        );
        // A shard that shrank since it was listed: named, not a panic.
        std::fs::write(&shard, b"...").unwrap();
        let err = step(None, None).apply(sample(), &ctx).unwrap_err();
        assert!(
            err.message.contains("s.tar") && err.message.contains("beyond"),
            "{err}"
        );
    }
}
