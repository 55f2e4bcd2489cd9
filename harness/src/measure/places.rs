//! Where prepbench may write: never inside the dataset, judged on the paths as resolved
//! (symbolic links followed), for local folders and object-storage URLs alike.

use std::path::{Path, PathBuf};

use anyhow::bail;

/// `path` made absolute and `.`/`..` resolved lexically (it need not exist yet).
fn lexical_absolute(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for part in absolute.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    // Resolve symlinks in the longest existing prefix, so a link into the dataset is caught.
    let mut existing = out.clone();
    let mut rest = Vec::new();
    while !existing.exists() {
        match existing.file_name() {
            Some(name) => {
                rest.push(name.to_os_string());
                existing.pop();
            }
            None => break,
        }
    }
    let mut resolved = std::fs::canonicalize(&existing).unwrap_or(existing);
    resolved.extend(rest.iter().rev());
    resolved
}

/// Refuses a results or store directory inside the dataset directory: prepbench writes and
/// clears there, and the dataset must stay as the user gave it.
pub fn check_places(dataset: &Path, places: &[(&str, &Path)]) -> anyhow::Result<()> {
    if datasets::files::is_remote(dataset) {
        // Only another URL can be inside it.
        let location = |p: &Path| {
            let text = p.to_string_lossy();
            let url = text.split('?').next().unwrap_or_default();
            format!("{}/", url.trim_end_matches('/'))
        };
        let dataset_url = location(dataset);
        for (what, path) in places {
            if datasets::files::is_remote(path) && location(path).starts_with(&dataset_url) {
                bail!(
                    "{what} {} is inside the dataset {}: prepbench never writes into a dataset; \
                     choose a prefix outside it",
                    path.display(),
                    dataset.display()
                );
            }
        }
        return Ok(());
    }
    let dataset_abs = lexical_absolute(dataset);
    for (what, path) in places {
        if datasets::files::is_remote(path) {
            continue;
        }
        if lexical_absolute(path).starts_with(&dataset_abs) {
            bail!(
                "{what} {} is inside the dataset directory {}: prepbench never writes into a \
                 dataset; choose a directory outside it",
                path.display(),
                dataset.display()
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_and_stores_inside_the_dataset_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data/imagenet-seed0");
        std::fs::create_dir_all(&data).unwrap();
        let inside = data.join("results");
        let err = check_places(&data, &[("the results directory", &inside)]).unwrap_err();
        assert!(
            err.to_string().contains("inside the dataset directory"),
            "{err}"
        );
        // Through `..` and a symlink too.
        let sneaky = root.path().join("data/other/../imagenet-seed0/store");
        assert!(check_places(&data, &[("the store directory", &sneaky)]).is_err());
        let bucket = Path::new("s3://bucket/imagenet?range_mb=4");
        for inside in ["s3://bucket/imagenet/stores", "s3://bucket/imagenet"] {
            let err = check_places(bucket, &[("the store directory", Path::new(inside))]);
            assert!(err.unwrap_err().to_string().contains("inside the dataset"));
        }
        for outside in [
            "s3://bucket/imagenet-stores",
            "s3://other/imagenet/x",
            "store",
        ] {
            check_places(bucket, &[("the store directory", Path::new(outside))]).unwrap();
        }
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&data, &link).unwrap();
        assert!(check_places(&data, &[("out", &link.join("out"))]).is_err());
        // Beside it is fine, even with a name that starts the same.
        for ok in [
            "out",
            "data/imagenet-seed0-results",
            "data/imagenet-seed0/../x",
        ] {
            check_places(&data, &[("out", &root.path().join(ok))]).unwrap();
        }
    }
}
