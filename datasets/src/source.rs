//! A dataset source: the files of a dataset in source order, each becoming the initial sample
//! (`path` text field and `label` scalar) that a workload's first step reads.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use workloads::{Field, Sample, Tensor};

use crate::files::{natural_key, Entry, Files};

/// One raw file of a dataset and what its layout says about it (label, boxes, transcript).
#[derive(Clone, Debug, PartialEq)]
pub struct SourceItem {
    pub path: PathBuf,
    pub size_bytes: u64,
    /// Last modification as listed, nanoseconds since the Unix epoch (0 when unknown).
    pub modified_ns: u128,
    /// Fields the initial sample carries besides `path`, e.g. `label` or `transcript`.
    pub fields: Vec<(String, Field)>,
}

impl SourceItem {
    /// The item of the file at `path`, as listed in `entry`, with `fields`.
    pub fn new(path: PathBuf, entry: &Entry, fields: Vec<(String, Field)>) -> SourceItem {
        SourceItem {
            path,
            size_bytes: entry.size,
            modified_ns: entry.modified_ns,
            fields,
        }
    }

    /// An item labelled with a class index (an int32 scalar `label` field).
    pub fn labelled(path: PathBuf, entry: &Entry, label: i32) -> SourceItem {
        SourceItem::new(
            path,
            entry,
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
    /// Where the files are read from (the local file system or object storage).
    pub files: Arc<dyn Files>,
    /// Entries the dataset's pattern matched that are not read, each in words with what it is
    /// (a dangling link, a FIFO): said to the user, as a dataset smaller than its folder looks.
    pub left_out: Vec<String>,
}

impl Source {
    /// The dataset of `kind` at `root`, its `items` read through `files`.
    pub fn new(
        kind: &'static str,
        files: &Arc<dyn Files>,
        root: &Path,
        items: Vec<SourceItem>,
    ) -> Source {
        Source {
            kind,
            root: root.to_path_buf(),
            items,
            files: files.clone(),
            left_out: Vec::new(),
        }
    }

    /// The sample a pipeline starts from: the file path and the item's fields.
    pub fn sample(&self, id: usize) -> Sample {
        let item = &self.items[id];
        let mut sample = Sample::new(id as u64).with("path", Field::path(&item.path));
        for (name, field) in &item.fields {
            sample.set(name, field.clone());
        }
        sample
    }

    /// Item `id` of the source read in a cycle: the sample of item `id mod len`, numbered `id`
    /// (so a store larger than its source holds distinct records with repeated content).
    pub fn cycled_sample(&self, id: usize) -> Sample {
        let mut sample = self.sample(id % self.items.len().max(1));
        sample.id = id as u64;
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

    /// Whether the files are on this machine (see [`Files::is_local`]).
    pub fn is_local(&self) -> bool {
        self.files.is_local()
    }

    /// Identifies the exact input: xxh3 over each file's relative path, size, mtime (as listed)
    /// and fields.
    pub fn fingerprint(&self) -> String {
        self.fingerprint_first(self.items.len())
    }

    /// [`Source::fingerprint`] of the first `n` items alone (what a store of them depends on):
    /// equal to the fingerprint of a source that holds just those items.
    pub fn fingerprint_first(&self, n: usize) -> String {
        let mut text = String::new();
        for item in self.items.iter().take(n) {
            let mtime = item.modified_ns;
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

/// The files of `dir` by name, for layouts whose index (annotations, a TSV) names the files:
/// one listing instead of a lookup per file.
pub(crate) fn files_by_name(
    files: &dyn Files,
    dir: &Path,
) -> std::io::Result<HashMap<String, Entry>> {
    Ok(files
        .list(dir)?
        .into_iter()
        .filter(|e| !e.is_dir)
        .map(|e| (e.name.clone(), e))
        .collect())
}

/// The item of `name` in `dir` (listed in `listing`) with `fields`; an error naming the file
/// when the index names one that is not there.
pub(crate) fn indexed_item(
    listing: &HashMap<String, Entry>,
    dir: &Path,
    name: &str,
    index: &Path,
    fields: Vec<(String, Field)>,
) -> Result<SourceItem, crate::DatasetError> {
    let path = dir.join(name);
    match listing.get(name) {
        Some(entry) => Ok(SourceItem::new(path, entry, fields)),
        None => Err(crate::DatasetError::Layout {
            path: path.display().to_string(),
            message: format!("named in {} but not there", index.display()),
        }),
    }
}

/// The files of `folder` ending in `.extension` (any case), in natural order, as a source rooted
/// at `root`; `expected` describes the layout in errors.
pub(crate) fn flat_source(
    files: &Arc<dyn Files>,
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
    let entries = files
        .list(folder)
        .map_err(|e| layout(format!("{e}: expected {expected}")))?;
    let suffix = format!(".{}", extension.to_ascii_lowercase());
    let mut found: Vec<Entry> = entries
        .into_iter()
        .filter(|e| !e.is_dir && e.name.to_ascii_lowercase().ends_with(&suffix))
        .collect();
    if found.is_empty() {
        return Err(layout(format!("no {suffix} files: expected {expected}")));
    }
    found.sort_by_key(|e| natural_key(&e.name));
    let items = found
        .iter()
        .map(|e| SourceItem::new(e.path_in(folder), e, Vec::new()))
        .collect();
    Ok(Source::new(kind, files, root, items))
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

    #[test]
    fn any_name_has_a_key_whatever_its_letters() {
        // Every character, of every UTF-8 length, just before digits, a dot or the end.
        for c in ['a', 'é', '東', '😀', '\u{0}', '.', '9'] {
            for tail in ["", "1", "12.JPEG", ".JPEG", "99999999999999999999999"] {
                let name = format!("photo_{c}{tail}");
                let (stem, _, whole) = natural_key(&name);
                assert_eq!(whole, name);
                assert!(name.starts_with(&stem), "{name}");
            }
        }
        let (stem, n, _) = natural_key("photo_café12.JPEG");
        assert_eq!((stem.as_str(), n), ("photo_café", 12));
    }
}
