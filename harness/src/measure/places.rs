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

/// Refuses `path` (what is written: `what`) inside a dataset prepbench generated (a folder
/// holding its marker, any workload's): like a user's dataset, it is read, never written into.
fn check_not_in_a_dataset(what: &str, path: &Path) -> anyhow::Result<()> {
    if datasets::files::is_remote(path) {
        return Ok(());
    }
    let resolved = physical_absolute(path);
    for folder in resolved.ancestors() {
        if folder.join(datasets::MARKER).is_file() {
            bail!(
                "{what} {} is inside the dataset {}: prepbench never writes into a dataset; \
                 choose a folder outside it",
                path.display(),
                folder.display()
            );
        }
    }
    Ok(())
}

/// Refuses a results folder that already holds files of someone else's: an existing folder
/// with entries but no prepbench results in it (no `manifest.json`, no `runs.csv`), such as
/// `/`, a home folder or a project's folder. Workload files (`*.yaml`, as the Python API
/// writes one beside its results) and prepbench's own tables (the ranks.csv that rank 0 of
/// `run --ranks` opens while the other ranks still check the folder) do not count as someone
/// else's.
pub fn check_results_folder(out: &Path) -> anyhow::Result<()> {
    check_own_folder("the results directory", out, |name| {
        // Its own: workload files, hidden ones (a lock), a sharded sweep's shard folders.
        name.ends_with(".yaml")
            || name.starts_with('.')
            || name.starts_with("shard-")
            || crate::results::TABLES.contains(&name)
    })
}

/// Refuses an output folder (`what`, at `out`) that already holds files of someone else's,
/// before anything is written there: only a folder that does not exist, is empty, is a
/// prepbench results folder, or holds only names `ours` accepts (what this command writes,
/// written there by an earlier call) is written into. A user's project or module folder, a
/// home folder or `/` is refused, naming a few of what it holds.
pub fn check_own_folder(what: &str, out: &Path, ours: impl Fn(&str) -> bool) -> anyhow::Result<()> {
    if datasets::files::is_remote(out) {
        return Ok(());
    }
    let Ok(entries) = std::fs::read_dir(out) else {
        return Ok(()); // not there yet (or not a folder: the writing says so)
    };
    if out.join(crate::results::manifest::MANIFEST).is_file()
        || out.join(crate::results::RUNS).is_file()
    {
        return Ok(());
    }
    let foreign: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| !ours(name))
        .take(3)
        .collect();
    if !foreign.is_empty() {
        bail!(
            "{what} {} already holds files that are not prepbench's ({}{}): prepbench writes \
             only into its own folders; choose a new or empty one",
            out.display(),
            foreign.join(", "),
            if foreign.len() == 3 { ", ..." } else { "" }
        );
    }
    Ok(())
}

/// Refuses any of `places` (what is written there, and where) inside one of `datasets` or
/// inside a dataset prepbench generated for any workload (its marker): prepbench writes and
/// clears in its own folders, and a dataset stays as it was given. Every writer asks this
/// before writing: run and sweep (results and stores), report and show (`--out`).
pub fn check_places(datasets: &[&Path], places: &[(&str, &Path)]) -> anyhow::Result<()> {
    for dataset in datasets {
        inside_the_dataset(dataset, places)?;
    }
    for (what, path) in places {
        check_not_in_a_dataset(what, path)?;
        check_a_folder(what, path)?;
    }
    Ok(())
}

/// Refuses a place that exists as something other than a folder (a file named by `--out`),
/// before anything is written: the error says what it is.
pub fn check_a_folder(what: &str, path: &Path) -> anyhow::Result<()> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_dir() => bail!(
            "{what} {} is a file, not a folder: name a folder (one that does not exist is made)",
            path.display()
        ),
        _ => Ok(()),
    }
}

/// Refuses a place inside `dataset`, judged on the paths as resolved.
fn inside_the_dataset(dataset: &Path, places: &[(&str, &Path)]) -> anyhow::Result<()> {
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

    /// A folder of someone else's files is not a results folder; a generated dataset (its
    /// marker) is a dataset whatever workload asks.
    #[test]
    fn someone_elses_folder_and_a_generated_dataset_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let mine = root.path().join("project");
        std::fs::create_dir_all(&mine).unwrap();
        std::fs::write(mine.join("train.py"), "print(1)").unwrap();
        let err = check_results_folder(&mine).unwrap_err().to_string();
        assert!(
            err.contains("train.py") && err.contains("not prepbench's"),
            "{err}"
        );
        check_results_folder(&root.path().join("new")).unwrap();
        let ours = root.path().join("results");
        std::fs::create_dir_all(&ours).unwrap();
        std::fs::write(ours.join("fe.yaml"), "name: fe").unwrap();
        std::fs::write(ours.join(".lock"), "").unwrap();
        check_results_folder(&ours).unwrap();
        // A table prepbench writes before runs.csv or the manifest (ranks.csv, errors.csv).
        std::fs::write(ours.join("ranks.csv"), "run_id\n").unwrap();
        std::fs::write(ours.join("errors.csv"), "run_id\n").unwrap();
        check_results_folder(&ours).unwrap();
        std::fs::write(ours.join("notes.txt"), "x").unwrap();
        assert!(check_results_folder(&ours).is_err());
        std::fs::write(ours.join("runs.csv"), "run_id\n").unwrap();
        check_results_folder(&ours).unwrap();
        let generated = root.path().join("data/imagenet-seed0");
        std::fs::create_dir_all(generated.join("train")).unwrap();
        std::fs::write(generated.join(datasets::MARKER), "{}").unwrap();
        let err = check_not_in_a_dataset("--out", &generated.join("train/x.png")).unwrap_err();
        assert!(err.to_string().contains("inside the dataset"), "{err}");
        check_not_in_a_dataset("--out", &root.path().join("data/elsewhere")).unwrap();
    }

    #[test]
    fn results_and_stores_inside_the_dataset_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data/imagenet-seed0");
        std::fs::create_dir_all(&data).unwrap();
        let inside = data.join("results");
        let err =
            check_places(&[data.as_path()], &[("the results directory", &inside)]).unwrap_err();
        assert!(
            err.to_string().contains("inside the dataset directory"),
            "{err}"
        );
        // Through `..` and a symlink too.
        let sneaky = root.path().join("data/other/../imagenet-seed0/store");
        assert!(check_places(&[data.as_path()], &[("the store directory", &sneaky)]).is_err());
        let bucket = Path::new("s3://bucket/imagenet?range_mb=4");
        for inside in ["s3://bucket/imagenet/stores", "s3://bucket/imagenet"] {
            let err = check_places(&[bucket], &[("the store directory", Path::new(inside))]);
            assert!(err.unwrap_err().to_string().contains("inside the dataset"));
        }
        for outside in [
            "s3://bucket/imagenet-stores",
            "s3://other/imagenet/x",
            "store",
        ] {
            check_places(&[bucket], &[("the store directory", Path::new(outside))]).unwrap();
        }
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&data, &link).unwrap();
        assert!(check_places(&[data.as_path()], &[("out", &link.join("out"))]).is_err());
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
                check_places(&[data.as_path()], &[("out", &path)]).is_err(),
                "{sneaky} passed"
            );
        }
        // Beside it is fine, even with a name that starts the same.
        for ok in [
            "out",
            "data/imagenet-seed0-results",
            "data/imagenet-seed0/../x",
        ] {
            check_places(&[data.as_path()], &[("out", &root.path().join(ok))]).unwrap();
        }
    }
}
