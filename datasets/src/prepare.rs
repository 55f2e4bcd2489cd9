//! Opening a dataset for a run: generated first when prepbench may write it, the user's own
//! read as it is, and refused when it holds fewer samples than asked for.

use std::path::Path;
use std::sync::Arc;

use crate::error::{io_err, DatasetError};
use crate::files::Files;
use crate::generate::{generate, MARKER};
use crate::kind::{DatasetKind, GenerateRequest};
use crate::registry::find_kind;
use crate::source::Source;

/// Opens a local dataset for a run: generates it first when `root` does not hold enough samples
/// of a prepbench-generated dataset, then lists it and keeps the first `samples`.
pub fn prepare(
    kind_name: &str,
    request: &GenerateRequest,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<Source, DatasetError> {
    prepare_in(&crate::files::local(), kind_name, request, progress)
}

/// [`prepare`] for a dataset read through `files`. Only local datasets are generated in place;
/// one elsewhere (object storage) must already hold the samples.
pub fn prepare_in(
    files: &Arc<dyn Files>,
    kind_name: &str,
    request: &GenerateRequest,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<Source, DatasetError> {
    prepare_counted(files, kind_name, request, progress).map(|(source, _)| source)
}

/// [`prepare_in`], with the number of files it generated (0 when the dataset was complete).
pub fn prepare_counted(
    files: &Arc<dyn Files>,
    kind_name: &str,
    request: &GenerateRequest,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<(Source, usize), DatasetError> {
    let kind = find_kind(kind_name)?;
    kind.check_options(&request.options)?;
    let mut generated = 0;
    if files.is_local() {
        let ours = request.root.join(MARKER).exists();
        let empty = std::fs::read_dir(&request.root)
            .map(|mut d| d.next().is_none())
            .unwrap_or(true);
        if empty || ours {
            generated = generate(kind_name, request, progress)?;
        }
    }
    Ok((open_enough(files, kind, request)?, generated))
}

/// Lists the dataset a user named (a workload's `dataset.path`): read as it is, never
/// generated. A missing or empty folder is an error naming it and the layout expected.
pub fn open_named(
    files: &Arc<dyn Files>,
    kind_name: &str,
    request: &GenerateRequest,
) -> Result<Source, DatasetError> {
    let kind = find_kind(kind_name)?;
    if files.is_local() {
        check_present(kind, &request.root)?;
    }
    open_enough(files, kind, request)
}

/// Refuses a local folder named as the user's dataset that is missing or empty, saying what
/// layout was expected: prepbench never generates into it.
pub fn check_present(kind: &DatasetKind, root: &Path) -> Result<(), DatasetError> {
    let problem = match std::fs::read_dir(root) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "does not exist",
        Err(e) => return Err(io_err(root)(e)),
        Ok(mut entries) => match entries.next() {
            None => "is empty",
            Some(_) => return Ok(()),
        },
    };
    Err(DatasetError::Layout {
        path: root.display().to_string(),
        message: format!(
            "{problem}: a dataset named by dataset.path or --dataset is your data, which \
             prepbench reads as it is and never generates; expected a folder in the {} layout \
             ({}). To benchmark a generated stand-in instead, name no path",
            kind.name, kind.layout
        ),
    })
}

/// Opens the dataset at the request's root and keeps its first `request.samples`, or says
/// how many it holds when that is fewer.
fn open_enough(
    files: &Arc<dyn Files>,
    kind: &'static DatasetKind,
    request: &GenerateRequest,
) -> Result<Source, DatasetError> {
    let source = (kind.open)(files, &request.root, &request.options)?;
    let wanted = request.files(kind);
    if source.len() < wanted {
        let hint = if files.is_local() {
            String::new()
        } else {
            format!(
                "; datasets in object storage are not generated in place: `prepbench generate \
                 {} --samples {} --out {}` uploads one",
                kind.name,
                request.samples,
                request.root.display()
            )
        };
        return Err(DatasetError::Layout {
            path: request.root.display().to_string(),
            message: format!(
                "holds {have} samples where {} were asked for (ask for at most {have} with \
                 --samples or dataset.samples); the `{}` kind reads {}{hint}",
                request.samples,
                kind.name,
                kind.layout,
                have = source.len() * kind.samples_per_file,
            ),
        });
    }
    Ok(source.truncated(wanted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode_cost::measure_decode;
    use crate::files;
    use crate::generate::recorded_decode;
    use crate::imagenet;

    fn request(root: &Path, samples: usize) -> GenerateRequest {
        GenerateRequest {
            root: root.to_path_buf(),
            samples,
            seed: 7,
            threads: 2,
            options: Default::default(),
        }
    }

    #[test]
    fn a_named_folder_with_too_few_samples_says_how_many_it_holds_and_what_the_kind_reads() {
        let dir = tempfile::tempdir().unwrap();
        for n in 0..3 {
            std::fs::write(dir.path().join(format!("{n}.bin")), b"x").unwrap();
        }
        let err = open_named(&files::local(), "files", &request(dir.path(), 10))
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&dir.path().display().to_string()),
            "names the folder: {err}"
        );
        assert!(
            err.contains("holds 3 samples where 10 were asked for")
                && err.contains("at most 3 with --samples or dataset.samples")
                && err.contains("the `files` kind reads any folder"),
            "{err}"
        );
        assert_eq!(
            open_named(&files::local(), "files", &request(dir.path(), 3))
                .unwrap()
                .len(),
            3
        );
    }

    #[test]
    fn the_marker_records_the_decode_cost_of_generated_jpegs_and_none_without_jpegs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("a");
        generate("imagenet", &request(&root, 30), &|_| ()).unwrap();
        let cost = recorded_decode(&root).expect("a decode cost in the marker");
        // 30 files spread over 24: every second one.
        assert_eq!(cost.files, 15);
        assert!(
            cost.ms_per_mp > 0.0 && cost.ms_per_mp.is_finite(),
            "{cost:?}"
        );
        // ImageNet-like files are a few bits per pixel (not flat, not raw).
        assert!((1.0..12.0).contains(&cost.bits_per_pixel), "{cost:?}");
        let text = dir.path().join("t");
        generate("openwebtext", &request(&text, 3), &|_| ()).unwrap();
        assert_eq!(recorded_decode(&text), None);
        // A JPEG that does not decode is an error naming it.
        std::fs::write(
            root.join("train").join("broken.jpg"),
            b"\xff\xd8 not a jpeg",
        )
        .unwrap();
        let err = measure_decode(&root).map(|_| ()).unwrap_err().to_string();
        assert!(err.contains("broken.jpg"), "{err}");
    }

    #[test]
    fn generated_imagenet_is_deterministic_extensible_and_in_source_order() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        assert_eq!(generate("imagenet", &request(&a, 6), &|_| ()).unwrap(), 6);
        assert_eq!(
            generate("imagenet", &request(&a, 12), &|_| ()).unwrap(),
            6,
            "extends"
        );
        assert_eq!(
            generate("imagenet", &request(&a, 12), &|_| ()).unwrap(),
            0,
            "complete"
        );
        generate("imagenet", &request(&b, 12), &|_| ()).unwrap();
        let (sa, sb) = (
            prepare("imagenet", &request(&a, 12), &|_| ()).unwrap(),
            imagenet::KIND.open_local(&b).unwrap(),
        );
        assert_eq!(sa.len(), 12);
        for (n, (x, y)) in sa.items.iter().zip(&sb.items).enumerate() {
            assert_eq!(
                std::fs::read(&x.path).unwrap(),
                std::fs::read(&y.path).unwrap(),
                "sample {n}"
            );
            let (expected, class) = imagenet::generated_path(&a, n);
            assert_eq!(x.path, expected);
            assert_eq!(
                x.fields[0].1,
                workloads::Field::Tensor(workloads::Tensor::scalar_i32(class as i32))
            );
        }
        assert_eq!(
            sa.fingerprint(),
            prepare("imagenet", &request(&a, 12), &|_| ())
                .unwrap()
                .fingerprint()
        );
        assert_eq!(
            prepare("imagenet", &request(&a, 5), &|_| ()).unwrap().len(),
            5
        );
    }

    #[test]
    fn refuses_foreign_directories_other_seeds_and_short_datasets() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("mine.txt"), b"x").unwrap();
        let err = generate("imagenet", &request(dir.path(), 2), &|_| ()).unwrap_err();
        assert!(
            err.to_string().contains("not generated by prepbench"),
            "{err}"
        );
        let gen = dir.path().join("g");
        generate("imagenet", &request(&gen, 2), &|_| ()).unwrap();
        let other_seed = GenerateRequest {
            seed: 8,
            ..request(&gen, 2)
        };
        assert!(generate("imagenet", &other_seed, &|_| ())
            .unwrap_err()
            .to_string()
            .contains("seed 7"));
        // A real (unmarked) copy with too few files is an error naming the path.
        std::fs::remove_file(gen.join(MARKER)).unwrap();
        let err = prepare("imagenet", &request(&gen, 3), &|_| ()).unwrap_err();
        assert!(err.to_string().contains("holds 2 samples"), "{err}");
        assert!(find_kind("mnist").is_err());
    }

    /// ImageNet's mean is ~0.115 MB per JPEG; the generator must land near it (issue 4 tightens
    /// this to +-15 % over larger samples).
    #[test]
    fn generated_jpegs_are_imagenet_sized() {
        let dir = tempfile::tempdir().unwrap();
        let source = prepare("imagenet", &request(dir.path(), 60), &|_| ()).unwrap();
        let mean_mb = source.total_bytes() as f64 / source.len() as f64 / 1e6;
        println!("mean {mean_mb:.4} MB per image");
        assert!(
            (0.08..0.15).contains(&mean_mb),
            "mean {mean_mb:.4} MB per image"
        );
    }
}
