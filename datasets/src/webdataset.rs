//! `webdataset`: tar shards as WebDataset writes and reads them. Members are grouped into
//! samples by key, WebDataset's way: a member's key is its path up to the first `.` of its file
//! name, its extension the rest (lower-cased); consecutive members with one key are one sample,
//! one field per extension. Every `.tar` below the root (the option `shards` is another glob) is
//! a shard, in natural order. A sample's members lie together in its shard: the
//! `read_webdataset` step reads that one span, as a WebDataset reader streams it, and gives each
//! member as a bytes field named by its extension.
//!
//! The generator writes shards of `SHARD_SAMPLES` ImageNet-like samples: `<key>.jpg` (the same
//! photos as the `imagenet` kind) and `<key>.cls` (the class as decimal text).

use std::io::{Read, Seek};
use std::path::Path;
use std::sync::Arc;

use workloads::Field;

use crate::files::{Entry, Files};
use crate::source::{Source, SourceItem};
use crate::{DatasetError, DatasetKind, GenerateRequest};

/// Samples per generated shard.
pub const SHARD_SAMPLES: usize = 100;
/// The field holding a sample's key.
pub const KEY_FIELD: &str = "__key__";
/// The fields holding where a sample's members lie in its shard (`OFFSET LENGTH` of the span)
/// and what they are (one `EXTENSION<TAB>OFFSET<TAB>LENGTH` line each, from the span's start),
/// which the `read_webdataset` step reads.
pub use workloads::steps::read_webdataset::{MEMBERS_FIELD, SPAN_FIELD};
/// Most members one sample may have.
const MAX_MEMBERS: usize = 1024;

pub const KIND: DatasetKind = DatasetKind {
    name: "webdataset",
    family: "webdataset",
    real: "WebDataset tar shards (here of ImageNet-like photos)",
    layout: "<shard>.tar, members <key>.<extension>: the members of one key, one after another, \
             are one sample with a field per extension (jpg, cls, json, ...)",
    // A source item is a sample, not a shard: generation numbers samples, and shard n/100 is
    // written when its first sample is.
    samples_per_file: 1,
    calibration: None,
    options: &[],
    reader_options: &["shards=GLOB"],
    open,
    generate_one: Some(generate_one),
    finish: None,
    expected_mb: None,
    fields: |_| &[KEY_FIELD, SPAN_FIELD, MEMBERS_FIELD],
    cheap_to_generate: false,
};

/// The name of generated shard `n`.
pub fn shard_name(n: usize) -> String {
    format!("shard-{n:06}.tar")
}

/// Writes the shard holding sample `n` when `n` is its first sample (the others are in it).
pub fn generate_one(request: &GenerateRequest, n: usize) -> Result<(), DatasetError> {
    if !n.is_multiple_of(SHARD_SAMPLES) {
        return Ok(());
    }
    let mut builder = tar::Builder::new(Vec::new());
    let member = |builder: &mut tar::Builder<Vec<u8>>, name: String, data: &[u8]| {
        let mut header = tar::Header::new_ustar();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        builder
            .append_data(&mut header, &name, data)
            .map_err(|e| DatasetError::Generate(format!("{name}: {e}")))
    };
    for i in n..n + SHARD_SAMPLES {
        let key = format!("{i:08}");
        let jpeg = crate::imagenet::photo_jpeg(request.seed, i)?;
        let (_, class) = crate::imagenet::generated_path(Path::new(""), i);
        member(&mut builder, format!("{key}.jpg"), &jpeg)?;
        member(
            &mut builder,
            format!("{key}.cls"),
            class.to_string().as_bytes(),
        )?;
    }
    let bytes = builder
        .into_inner()
        .map_err(|e| DatasetError::Generate(format!("tar: {e}")))?;
    crate::write_atomically(&request.root.join(shard_name(n / SHARD_SAMPLES)), &bytes)
}

/// WebDataset's split of a member path into key and extension: the key is the path up to the
/// first `.` of the file name, the extension the rest, lower-cased; `None` for a name without
/// one (such members are not fields of any sample, as in WebDataset).
pub fn key_and_extension(path: &str) -> Option<(&str, String)> {
    let name_start = path.rfind('/').map_or(0, |i| i + 1);
    let dot = path[name_start..].find('.')? + name_start;
    let (key, extension) = (&path[..dot], &path[dot + 1..]);
    (dot > name_start && !extension.is_empty()).then(|| (key, extension.to_lowercase()))
}

/// One member: its extension and where its data lies in the shard.
struct Member {
    extension: String,
    offset: u64,
    length: u64,
}

/// The samples of one shard: (key, members), in shard order.
fn index_shard<R: Read + Seek>(
    reader: R,
    shard: &Path,
    shard_len: u64,
) -> Result<Vec<(String, Vec<Member>)>, DatasetError> {
    let bad = |message: String| DatasetError::Layout {
        path: shard.display().to_string(),
        message,
    };
    let mut archive = tar::Archive::new(reader);
    let entries = archive
        .entries_with_seek()
        .map_err(|e| bad(format!("not a tar file: {e}")))?;
    let mut samples: Vec<(String, Vec<Member>)> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| bad(format!("not a readable tar file: {e}")))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry
            .path()
            .map_err(|e| bad(format!("a member's name: {e}")))?
            .to_string_lossy()
            .into_owned();
        let (offset, length) = (entry.raw_file_position(), entry.size());
        if offset.checked_add(length).is_none_or(|end| end > shard_len) {
            return Err(bad(format!(
                "member `{path}` claims {length} bytes at offset {offset}, beyond the shard's \
                 {shard_len} bytes (a truncated or damaged shard)"
            )));
        }
        let Some((key, extension)) = key_and_extension(&path) else {
            continue;
        };
        if extension.contains(['\t', '\n']) {
            return Err(bad(format!(
                "member `{path}`: a tab or newline in its extension"
            )));
        }
        let member = Member {
            extension,
            offset,
            length,
        };
        match samples.last_mut() {
            Some((last, members)) if last == key => {
                if members.iter().any(|m| m.extension == member.extension) {
                    return Err(bad(format!(
                        "sample `{key}` has two `.{}` members: a field would be lost",
                        member.extension
                    )));
                }
                if members.len() == MAX_MEMBERS {
                    return Err(bad(format!(
                        "sample `{key}` has more than {MAX_MEMBERS} members"
                    )));
                }
                members.push(member);
            }
            _ => samples.push((key.to_string(), vec![member])),
        }
    }
    Ok(samples)
}

/// The source item of one sample of `shard`.
fn item(shard: &Path, entry: &Entry, key: String, members: &[Member]) -> SourceItem {
    let start = members.iter().map(|m| m.offset).min().unwrap_or(0);
    let end = members
        .iter()
        .map(|m| m.offset + m.length)
        .max()
        .unwrap_or(0);
    let listed: String = members
        .iter()
        .map(|m| format!("{}\t{}\t{}\n", m.extension, m.offset - start, m.length))
        .collect();
    let mut item = SourceItem::new(
        shard.to_path_buf(),
        entry,
        vec![
            (KEY_FIELD.into(), Field::Text(key)),
            (
                SPAN_FIELD.into(),
                Field::Text(format!("{start} {}", end - start)),
            ),
            (MEMBERS_FIELD.into(), Field::Text(listed)),
        ],
    );
    item.size_bytes = end - start;
    item
}

/// Lists the samples of every shard below `root` (the option `shards`, default `**/*.tar`).
pub fn open(
    files: &Arc<dyn Files>,
    root: &Path,
    options: &crate::Options,
) -> Result<Source, DatasetError> {
    let pattern = options.get("shards").map_or("**/*.tar", String::as_str);
    let (shards, left_out) = crate::folder::matching(
        &**files,
        root,
        ("shards", pattern),
        "WebDataset tar shards (<shard>.tar of <key>.<extension> members)",
    )?;
    let mut items = Vec::new();
    for crate::folder::Found { path, entry, .. } in shards {
        let samples = if files.is_local() {
            let file = std::fs::File::open(&path).map_err(|e| DatasetError::Io {
                path: path.display().to_string(),
                source: e,
            })?;
            index_shard(std::io::BufReader::new(file), &path, entry.size)?
        } else {
            // Object storage is indexed from one read of the shard.
            let bytes = files
                .as_read()
                .read_file(&path)
                .map_err(|e| DatasetError::Io {
                    path: path.display().to_string(),
                    source: e,
                })?;
            index_shard(std::io::Cursor::new(bytes), &path, entry.size)?
        };
        for (key, members) in samples {
            items.push(item(&path, &entry, key, &members));
        }
    }
    if items.is_empty() {
        return Err(DatasetError::Layout {
            path: root.display().to_string(),
            message: "its shards hold no sample (no member named <key>.<extension>)".into(),
        });
    }
    let mut source = Source::new("webdataset", files, root, items);
    source.left_out = left_out;
    Ok(source)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_extensions_split_as_webdataset_splits_them() {
        assert_eq!(
            key_and_extension("a/b/000123.seg.PNG"),
            Some(("a/b/000123", "seg.png".to_string()))
        );
        assert_eq!(key_and_extension("x.cls"), Some(("x", "cls".to_string())));
        assert_eq!(
            key_and_extension("dir.v2/x.jpg"),
            Some(("dir.v2/x", "jpg".to_string()))
        );
        assert_eq!(key_and_extension("README"), None);
        assert_eq!(key_and_extension("dir/.hidden"), None);
        assert_eq!(key_and_extension("x."), None);
    }

    fn shard(members: &[(&str, &[u8])]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (name, data) in members {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            builder.append_data(&mut header, name, *data).unwrap();
        }
        builder.into_inner().unwrap()
    }

    #[test]
    fn members_group_by_consecutive_key_with_long_names_and_damage_named() {
        let long = format!("{}/k1", "d".repeat(120));
        let bytes = shard(&[
            ("k0.jpg", b"J0"),
            ("k0.cls", b"3"),
            ("README", b"not a field"),
            (&format!("{long}.jpg"), b"J1"),
            (&format!("{long}.json"), b"{}"),
        ]);
        let len = bytes.len() as u64;
        let samples =
            index_shard(std::io::Cursor::new(bytes.clone()), Path::new("s.tar"), len).unwrap();
        let keys: Vec<&str> = samples.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["k0", long.as_str()]);
        let second = &samples[1].1;
        assert_eq!(second[1].extension, "json");
        let (o, l) = (second[0].offset as usize, second[0].length as usize);
        assert_eq!(&bytes[o..o + l], b"J1");
        // A duplicate extension in one sample would lose a field: refused, naming it.
        let dup = shard(&[("k.jpg", b"a"), ("k.jpg", b"b")]);
        let n = dup.len() as u64;
        let err = index_shard(std::io::Cursor::new(dup), Path::new("d.tar"), n)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("d.tar") && err.contains("two `.jpg` members"),
            "{err}"
        );
        // Cut short: the member reaching past the end is named.
        let cut = &bytes[..bytes.len() - 1024 - 512];
        let err = match index_shard(
            std::io::Cursor::new(cut.to_vec()),
            Path::new("c.tar"),
            cut.len() as u64,
        ) {
            Ok(s) => panic!("a truncated shard listed {} samples", s.len()),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("c.tar"), "{err}");
        // Not a tar at all.
        let junk = vec![7u8; 2048];
        assert!(index_shard(std::io::Cursor::new(junk), Path::new("j.tar"), 2048).is_err());
    }
}
