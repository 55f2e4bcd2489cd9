//! `files`: a team's own folder, read as it is. Every regular file under the root whose path
//! relative to it (`/`-separated) matches the option `glob` (default `**/*`) is a sample, in
//! natural order of its path (`img2` before `img10`); hidden files and folders (a leading `.`)
//! are left out. With `label=parent`, each file's label is the index of its top folder among
//! the class folders sorted by name, as torchvision's `ImageFolder` labels
//! `root/<class>/.../<file>` (Rust's `str` order and Python's agree: both compare code points).
//! There is no generator: the folder is the user's (`dataset.path`).

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::files::natural_key;
use crate::files::{Entry, Files};
use crate::source::{Source, SourceItem};
use crate::{DatasetError, DatasetKind};

/// A `files` dataset's samples carry a `label` when its `label` option is `parent`.
fn labels_of(options: &crate::kind::Options) -> &'static [&'static str] {
    if options.get("label").is_some_and(|l| l == "parent") {
        &["label"]
    } else {
        &[]
    }
}

pub const KIND: DatasetKind = DatasetKind {
    name: "files",
    family: "files",
    real: "your own files",
    layout: "any folder: every file whose path matches `glob` (default **/*); with label=parent, \
             root/<class>/.../<file> labelled by class as torchvision's ImageFolder",
    samples_per_file: 1,
    calibration: None,
    options: &[],
    reader_options: &["glob=PATTERN", "label=none|parent"],
    open,
    generate_one: None,
    finish: None,
    expected_mb: None,
    fields: labels_of,
    cheap_to_generate: false,
};

/// Folders deeper than this below the root are not walked (a link loop would never end).
const MAX_DEPTH: usize = 64;

/// Compares two relative paths component by component in natural order.
fn natural_path_order(a: &str, b: &str) -> Ordering {
    a.split('/')
        .map(natural_key)
        .cmp(b.split('/').map(natural_key))
}

/// A regular file found below a root: its `/`-separated path from the root as text (for
/// globs, labels and messages), its exact path, and its listing.
#[derive(Clone, Debug)]
pub(crate) struct Found {
    pub rel: String,
    pub path: PathBuf,
    pub entry: Entry,
}

/// Every regular file below `root`, hidden entries left out, in no particular order. The
/// folders above `root` count as walked: a link up to one of them (`ln -s .. up` in the root,
/// a link to `/`) would walk what holds the dataset, the folders beside it among them, where
/// prepbench's own results and stores usually are (their files, read as samples, change while
/// the run writes them).
pub(crate) fn walk(files: &dyn Files, root: &Path) -> Result<Vec<Found>, DatasetError> {
    Ok(walk_noting(files, root)?.files)
}

/// [`walk`], with the entries it leaves out (neither a folder nor a regular file: a dangling
/// link, a FIFO) as (path from the root, what it is).
pub(crate) fn walk_noting(files: &dyn Files, root: &Path) -> Result<Walked, DatasetError> {
    let mut found = Walked::default();
    let mut seen = std::collections::HashSet::new();
    if files.is_local() {
        use std::os::unix::fs::MetadataExt;
        if let Ok(real) = std::fs::canonicalize(root) {
            for above in real.ancestors().skip(1) {
                if let Ok(meta) = std::fs::metadata(above) {
                    seen.insert((meta.dev(), meta.ino()));
                }
            }
        }
    }
    walk_once(files, (root, ""), 0, &mut found, &mut seen)?;
    Ok(found)
}

/// What a walk found, and what it left out.
#[derive(Default)]
pub(crate) struct Walked {
    pub files: Vec<Found>,
    /// Entries neither a folder nor a regular file: (path from the root, what it is).
    pub left_out: Vec<(String, String)>,
}

/// [`walk`] below the folder `dir` (`rel` from the root), entering each local folder once (known
/// by its device and inode): a link back to a folder already walked (`ln -s .. up`, two links
/// to one folder) is not walked again, so links cannot multiply the walk (two links to `..` at
/// every level made it 2^64 folders deep).
fn walk_once(
    files: &dyn Files,
    (dir, rel): (&Path, &str),
    depth: usize,
    found: &mut Walked,
    seen: &mut std::collections::HashSet<(u64, u64)>,
) -> Result<(), DatasetError> {
    if files.is_local() {
        use std::os::unix::fs::MetadataExt;
        if let Ok(meta) = std::fs::metadata(dir) {
            if !seen.insert((meta.dev(), meta.ino())) {
                return Ok(());
            }
        }
    }
    let (entries, left_out) = files
        .list_with_left_out(dir)
        .map_err(|e| DatasetError::Io {
            path: dir.display().to_string(),
            source: e,
        })?;
    let in_root = |name: &str| {
        if rel.is_empty() {
            name.to_string()
        } else {
            format!("{rel}/{name}")
        }
    };
    for (name, why) in left_out {
        if !name.starts_with('.') {
            found.left_out.push((in_root(&name), why));
        }
    }
    for entry in entries {
        if entry.name.starts_with('.') {
            continue;
        }
        let child_rel = in_root(&entry.name);
        let path = entry.path_in(dir);
        if entry.is_dir {
            if depth < MAX_DEPTH {
                walk_once(files, (&path, &child_rel), depth + 1, found, seen)?;
            }
        } else {
            found.files.push(Found {
                rel: child_rel,
                path,
                entry,
            });
        }
    }
    Ok(())
}

/// The regular files below `root` whose `/`-separated path relative to it matches `pattern`
/// (the option `option`), hidden ones left out, in natural order of their paths, and the
/// entries that match it but are not regular files (a dangling link, a FIFO), each in words
/// with what it is; an error when the pattern is malformed or matches nothing, saying what was
/// `expected`.
pub(crate) fn matching(
    files: &dyn Files,
    root: &Path,
    (option, pattern): (&str, &str),
    expected: &str,
) -> Result<(Vec<Found>, Vec<String>), DatasetError> {
    let bad = |message: String| DatasetError::Layout {
        path: root.display().to_string(),
        message,
    };
    let glob = globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| bad(format!("{option} `{pattern}`: {e}")))?
        .compile_matcher();
    let Walked {
        files: mut found,
        mut left_out,
    } = walk_noting(files, root)?;
    found.retain(|f| glob.is_match(&f.rel));
    found.sort_by(|a, b| natural_path_order(&a.rel, &b.rel));
    left_out.retain(|(rel, _)| glob.is_match(rel));
    left_out.sort_by(|a, b| natural_path_order(&a.0, &b.0));
    let left_out = (left_out.into_iter())
        .map(|(rel, why)| format!("{rel} ({why})"))
        .collect();
    if found.is_empty() {
        return Err(bad(format!(
            "no file matches {option} `{pattern}`: expected {expected} (paths are relative to \
             this folder, `/`-separated; `**/*.jpg` matches every JPEG below it)"
        )));
    }
    Ok((found, left_out))
}

/// Lists the files of `root` that match the options' `glob`, labelled when `label=parent`.
pub fn open(
    files: &Arc<dyn Files>,
    root: &Path,
    options: &BTreeMap<String, String>,
) -> Result<Source, DatasetError> {
    let bad = |message: String| DatasetError::Layout {
        path: root.display().to_string(),
        message,
    };
    let pattern = options.get("glob").map_or("**/*", String::as_str);
    let labelled = match options.get("label").map(String::as_str) {
        None | Some("none") => false,
        Some("parent") => true,
        Some(other) => return Err(bad(format!("label={other}: label is none or parent"))),
    };
    let (found, left_out) = matching(&**files, root, ("glob", pattern), "your files")?;
    // ImageFolder's class index: the class folders' names sorted as Python sorts strings
    // (by code point), so a label here is the label a torchvision loader gives the file.
    let mut classes: BTreeMap<&str, i32> = BTreeMap::new();
    if labelled {
        for Found { rel, .. } in &found {
            match rel.split_once('/') {
                Some((class, _)) => {
                    classes.insert(class, 0);
                }
                None => {
                    return Err(bad(format!(
                        "label=parent: `{rel}` is not in a class folder (expected \
                         <class>/.../<file>, as ImageFolder)"
                    )))
                }
            }
        }
        for (index, label) in classes.values_mut().enumerate() {
            *label = index as i32;
        }
    }
    let items = found
        .iter()
        .map(|Found { rel, path, entry }| {
            let path = path.clone();
            let label = rel
                .split_once('/')
                .and_then(|(class, _)| classes.get(class));
            match label {
                Some(&label) => SourceItem::labelled(path, entry, label),
                None => SourceItem::new(path, entry, Vec::new()),
            }
        })
        .collect();
    let mut source = Source::new("files", files, root, items);
    source.left_out = left_out;
    Ok(source)
}

#[cfg(test)]
mod tests {
    use super::*;
    use workloads::{Field, TensorData};

    fn tree(paths: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for p in paths {
            let path = dir.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, p.as_bytes()).unwrap();
        }
        dir
    }

    fn options(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn listed(source: &Source, root: &Path) -> Vec<String> {
        source
            .items
            .iter()
            .map(|i| i.path.strip_prefix(root).unwrap().display().to_string())
            .collect()
    }

    /// Links back up the tree (two to `..` in a class folder, as a careless user makes) are
    /// walked once: the listing ends at once and holds each file once.
    #[test]
    fn links_back_up_the_tree_are_walked_once() {
        let dir = tree(&["cls/a.jpg", "cls/b.jpg", "other/c.jpg"]);
        std::os::unix::fs::symlink("..", dir.path().join("cls/up")).unwrap();
        std::os::unix::fs::symlink("..", dir.path().join("cls/up2")).unwrap();
        std::os::unix::fs::symlink("../other", dir.path().join("cls/same")).unwrap();
        let source = open(
            &crate::files::local(),
            dir.path(),
            &options(&[("glob", "**/*")]),
        )
        .unwrap();
        let listed = listed(&source, dir.path());
        assert_eq!(listed.len(), 3, "{listed:?}");
        assert!(listed.starts_with(&["cls/a.jpg".to_string(), "cls/b.jpg".to_string()]));
        // c.jpg once, under whichever of its two paths the walk met first.
        assert!(
            ["cls/same/c.jpg", "other/c.jpg"].contains(&listed[2].as_str()),
            "{listed:?}"
        );
    }

    /// A dangling link (a file a git-annex or DVC checkout has not fetched) or a FIFO the
    /// pattern matches is not a sample, and is named with what it is.
    #[test]
    fn entries_the_pattern_matches_that_are_not_files_are_named_not_read() {
        let dir = tree(&["cls/a.jpg", "cls/b.txt"]);
        let root = dir.path();
        std::os::unix::fs::symlink(root.join("gone.jpg"), root.join("cls/c.jpg")).unwrap();
        std::os::unix::fs::symlink(root.join("gone.txt"), root.join("cls/d.txt")).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(root.join("cls/e.jpg"))
            .status();
        let fifo = made.is_ok_and(|s| s.success());
        let (found, left_out) = matching(
            &crate::files::LocalFiles,
            root,
            ("glob", "**/*.jpg"),
            "images",
        )
        .unwrap();
        let names: Vec<&str> = found.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(names, ["cls/a.jpg"]);
        let mut expected = vec![format!(
            "cls/c.jpg (a link to {}, which does not exist)",
            root.join("gone.jpg").display()
        )];
        if fifo {
            expected.push("cls/e.jpg (a FIFO)".to_string());
        }
        assert_eq!(left_out, expected);
        let source = open(
            &crate::files::local(),
            root,
            &options(&[("glob", "**/*.jpg")]),
        );
        assert_eq!(source.unwrap().left_out, expected);
    }

    /// A link up past the root (to the folder that holds the dataset, to `/`) is not walked:
    /// it would read what lies beside the dataset (prepbench's results among it, changing as
    /// the run writes them) and the whole filesystem.
    #[test]
    fn links_above_the_root_are_not_walked() {
        let dir = tree(&["data/cls/a.jpg", "data/cls/b.jpg", "results/runs.csv"]);
        let root = dir.path().join("data");
        std::os::unix::fs::symlink("..", root.join("up")).unwrap();
        std::os::unix::fs::symlink("../..", root.join("cls/upup")).unwrap();
        std::os::unix::fs::symlink("/", root.join("cls/everything")).unwrap();
        let source = open(&crate::files::local(), &root, &options(&[("glob", "**/*")])).unwrap();
        assert_eq!(listed(&source, &root), ["cls/a.jpg", "cls/b.jpg"]);
    }

    #[test]
    fn files_match_the_glob_in_natural_order_hidden_ones_left_out() {
        let dir = tree(&[
            "b/img10.jpg",
            "b/img2.jpg",
            "a/x.png",
            "a/deep/y.jpg",
            "notes.txt",
            ".hidden/z.jpg",
            "a/.DS_Store",
        ]);
        let source = open(&crate::files::local(), dir.path(), &options(&[])).unwrap();
        assert_eq!(
            listed(&source, dir.path()),
            [
                "a/deep/y.jpg",
                "a/x.png",
                "b/img2.jpg",
                "b/img10.jpg",
                "notes.txt"
            ]
        );
        let jpgs = open(
            &crate::files::local(),
            dir.path(),
            &options(&[("glob", "**/*.jpg")]),
        )
        .unwrap();
        assert_eq!(
            listed(&jpgs, dir.path()),
            ["a/deep/y.jpg", "b/img2.jpg", "b/img10.jpg"]
        );
        let top = open(
            &crate::files::local(),
            dir.path(),
            &options(&[("glob", "*")]),
        )
        .unwrap();
        assert_eq!(listed(&top, dir.path()), ["notes.txt"]);
    }

    #[test]
    fn parent_folders_label_as_image_folder_does() {
        let dir = tree(&[
            "dog/1.jpg",
            "cat/2.jpg",
            "cat/sub/3.jpg",
            "ant/4.jpg",
            "n10/5.jpg",
            "n9/6.jpg",
        ]);
        let source = open(
            &crate::files::local(),
            dir.path(),
            &options(&[("label", "parent")]),
        )
        .unwrap();
        let labels: Vec<(String, i32)> = (0..source.len())
            .map(|i| {
                let s = source.sample(i);
                let Some(Field::Tensor(t)) = s.get("label") else {
                    panic!("no label")
                };
                let TensorData::I32(v) = t.data() else {
                    panic!()
                };
                (listed(&source, dir.path())[i].clone(), v[0])
            })
            .collect();
        assert_eq!(
            labels,
            [
                ("ant/4.jpg".to_string(), 0),
                ("cat/2.jpg".to_string(), 1),
                ("cat/sub/3.jpg".to_string(), 1),
                ("dog/1.jpg".to_string(), 2),
                // Python's sorted(): "n10" < "n9", whatever natural order says
                ("n9/6.jpg".to_string(), 4),
                ("n10/5.jpg".to_string(), 3),
            ]
        );
    }

    #[test]
    fn bad_options_and_empty_matches_say_what_is_wrong() {
        let dir = tree(&["loose.jpg", "c/1.jpg"]);
        let local = crate::files::local();
        let err = |o: &[(&str, &str)]| {
            open(&local, dir.path(), &options(o))
                .unwrap_err()
                .to_string()
        };
        assert!(err(&[("glob", "**/*.png")]).contains("no file matches glob `**/*.png`"));
        assert!(err(&[("glob", "[")]).contains("glob `[`"));
        assert!(err(&[("label", "folder")]).contains("label is none or parent"));
        assert!(err(&[("label", "parent")]).contains("`loose.jpg` is not in a class folder"));
        assert!(KIND.generate_one.is_none());
        assert!(KIND.no_generator().contains("dataset.path"));
    }
}
