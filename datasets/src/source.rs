//! A dataset source: the files of a dataset in source order, each becoming the initial sample
//! (`path` text field and `label` scalar) that a workload's first step reads.

use std::path::{Path, PathBuf};

use workloads::{Field, Sample, Tensor};

/// One raw file of a dataset and what its layout says about it (label, boxes, transcript).
#[derive(Clone, Debug, PartialEq)]
pub struct SourceItem {
    pub path: PathBuf,
    pub size_bytes: u64,
    /// Fields the initial sample carries besides `path`, e.g. `label` or `transcript`.
    pub fields: Vec<(String, Field)>,
}

impl SourceItem {
    /// The item of the file at `path` (its size read from the filesystem) with `fields`.
    pub fn from_file(
        path: PathBuf,
        fields: Vec<(String, Field)>,
    ) -> Result<SourceItem, crate::DatasetError> {
        let size_bytes = file_size(&path).map_err(|e| crate::DatasetError::Io {
            path: path.display().to_string(),
            source: e,
        })?;
        Ok(SourceItem {
            path,
            size_bytes,
            fields,
        })
    }

    /// An item labelled with a class index (an int32 scalar `label` field).
    pub fn labelled(path: PathBuf, label: i32) -> Result<SourceItem, crate::DatasetError> {
        SourceItem::from_file(
            path,
            vec![("label".into(), Field::Tensor(Tensor::scalar_i32(label)))],
        )
    }
}

/// The files of a dataset in source order; a sample's id is its index here.
#[derive(Clone, Debug)]
pub struct Source {
    pub kind: &'static str,
    pub root: PathBuf,
    pub items: Vec<SourceItem>,
}

impl Source {
    /// The sample a pipeline starts from: the file path and the item's fields.
    pub fn sample(&self, id: usize) -> Sample {
        let item = &self.items[id];
        let mut sample =
            Sample::new(id as u64).with("path", Field::Text(item.path.display().to_string()));
        for (name, field) in &item.fields {
            sample.set(name, field.clone());
        }
        sample
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn total_bytes(&self) -> u64 {
        self.items.iter().map(|i| i.size_bytes).sum()
    }

    pub fn paths(&self) -> Vec<PathBuf> {
        self.items.iter().map(|i| i.path.clone()).collect()
    }

    /// The first `n` items (the paper's fixed-size subsets).
    pub fn truncated(mut self, n: usize) -> Source {
        self.items.truncate(n);
        self
    }

    /// Identifies the exact input: xxh3 over each file's relative path, size, mtime and fields.
    pub fn fingerprint(&self) -> String {
        let mut text = String::new();
        for item in &self.items {
            let mtime = std::fs::metadata(&item.path)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_nanos())
                .unwrap_or(0);
            let rel = item.path.strip_prefix(&self.root).unwrap_or(&item.path);
            let fields = item
                .fields
                .iter()
                .fold(Sample::new(0), |s, (n, f)| s.with(n, f.clone()));
            text.push_str(&format!(
                "{}\t{}\t{}\t{:016x}\n",
                rel.display(),
                item.size_bytes,
                mtime,
                fields.content_hash()
            ));
        }
        format!("{:016x}", xxhash_rust::xxh3::xxh3_64(text.as_bytes()))
    }
}

/// Orders file names the way people read numbers: `x_2` before `x_10`.
pub fn natural_key(name: &str) -> (String, u64, String) {
    let stem_end = name.find('.').unwrap_or(name.len());
    let stem = &name[..stem_end];
    let digits_start = stem
        .rfind(|c: char| !c.is_ascii_digit())
        .map(|i| i + 1)
        .unwrap_or(0);
    let number = stem[digits_start..].parse::<u64>().unwrap_or(0);
    (stem[..digits_start].to_string(), number, name.to_string())
}

fn file_size(path: &Path) -> std::io::Result<u64> {
    Ok(std::fs::metadata(path)?.len())
}

/// The files of `folder` ending in `.extension` (any case), in natural order, as a source rooted
/// at `root`; `expected` describes the layout in errors.
pub(crate) fn flat_source(
    kind: &'static str,
    root: &Path,
    folder: &Path,
    extension: &str,
    expected: &str,
) -> Result<Source, crate::DatasetError> {
    let layout = |message: String| crate::DatasetError::Layout {
        path: folder.display().to_string(),
        message,
    };
    let entries =
        std::fs::read_dir(folder).map_err(|e| layout(format!("{e}: expected {expected}")))?;
    let suffix = format!(".{}", extension.to_ascii_lowercase());
    let mut files: Vec<(String, std::path::PathBuf)> = entries
        .filter_map(|e| e.ok())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .filter(|(name, _)| name.to_ascii_lowercase().ends_with(&suffix))
        .collect();
    if files.is_empty() {
        return Err(layout(format!("no {suffix} files: expected {expected}")));
    }
    files.sort_by_key(|(name, _)| natural_key(name));
    let items = files
        .into_iter()
        .map(|(_, path)| SourceItem::from_file(path, Vec::new()))
        .collect::<Result<_, crate::DatasetError>>()?;
    Ok(Source {
        kind,
        root: root.to_path_buf(),
        items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order_sorts_numbers_numerically() {
        let mut names = vec!["n1_10.JPEG", "n1_2.JPEG", "n1_1.JPEG"];
        names.sort_by_key(|n| natural_key(n));
        assert_eq!(names, ["n1_1.JPEG", "n1_2.JPEG", "n1_10.JPEG"]);
    }
}
