//! Where prepbench may write: never inside the dataset, judged on the paths as resolved
//! (symbolic links followed), for local folders and object-storage URLs alike.

use std::path::{Path, PathBuf};

use anyhow::bail;

/// `path` made absolute and resolved as the file system will: component by component, each
/// existing prefix with its symbolic links followed before a `..` after it is applied (so
/// `link/..` is the link target's parent, not the link's); the part that does not exist yet is
/// taken as written.
fn physical_absolute(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for part in absolute.components() {
        match part {
            std::path::Component::CurDir => {}
            // `out` is canonical as far as it exists: its parent is the physical one.
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => {
                out.push(other);
                if let Ok(real) = std::fs::canonicalize(&out) {
                    out = real;
                }
            }
        }
    }
    out
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
    let dataset_abs = physical_absolute(dataset);
    for (what, path) in places {
        if datasets::files::is_remote(path) {
            continue;
        }
        if physical_absolute(path).starts_with(&dataset_abs) {
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
        // `..` after a link is the parent of its target: a link to a folder inside the
        // dataset, then `..`, is still inside.
        std::fs::create_dir_all(data.join("train")).unwrap();
        let deep = root.path().join("link-to-train");
        std::os::unix::fs::symlink(data.join("train"), &deep).unwrap();
        for sneaky in [
            "link-to-train/../res",
            "link-to-train/../../imagenet-seed0/x",
        ] {
            let path = root.path().join(sneaky);
            assert!(
                check_places(&data, &[("out", &path)]).is_err(),
                "{sneaky} passed"
            );
        }
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
