//! Functional identity: a strategy's final online output must hash, sample by sample, exactly as
//! fully-online processing of the raw files does (same seed, same epoch).

use std::collections::HashMap;

use indicatif::ProgressBar;

use crate::measure::errors::RunError;
use crate::measure::online::{run as run_online, OnlineInput, OnlineJob};

#[derive(Debug, PartialEq)]
pub struct Verification {
    /// Samples compared (the reference's, less those the strategy skipped).
    pub checked: usize,
    /// Sample ids whose output differs (or is missing on one side without a skip to account
    /// for it), sorted.
    pub mismatched: Vec<u64>,
    /// Samples the strategy's run skipped under `on_error: skip` (a damaged record, a step
    /// that failed): not compared, and not a difference (errors.csv names them).
    pub skipped: u64,
}

impl Verification {
    pub fn passed(&self) -> bool {
        self.mismatched.is_empty()
    }
}

/// Runs `job` (untimed) and the fully-online reference on the raw files (`job.items` of them),
/// both hashing every output, and compares them; a store holding more items than that (cycling
/// over its source) is compared on its first `job.items` items.
pub fn verify(job: &OnlineJob) -> Result<Verification, RunError> {
    verify_against(job, &reference(job)?)
}

/// The fully-online reference of `job`: the hash of every output of its first `job.items` raw
/// files, by sample id, as prepbench's own engine makes them (whichever loader the job runs
/// under: every loader is judged against native processing). It depends on the items, the
/// seed and the epoch, not on the strategy or the loader, so one serves every store of a
/// source (`Session::verify` keeps it).
pub fn reference(job: &OnlineJob) -> Result<HashMap<u64, u64>, RunError> {
    let reference = run_online(
        &OnlineJob {
            engine: crate::measure::online::default_engine(),
            loader_options: "",
            hash: true,
            split: 0,
            input: OnlineInput::Raw,
            ..*job
        },
        &ProgressBar::hidden(),
    )?;
    Ok(reference.hashes.into_iter().collect())
}

/// [`verify`] against a reference already computed.
pub fn verify_against(
    job: &OnlineJob,
    expected: &HashMap<u64, u64>,
) -> Result<Verification, RunError> {
    let strategy = run_online(
        &OnlineJob {
            hash: true,
            expected: Some(expected),
            ..*job
        },
        &ProgressBar::hidden(),
    )?;
    // A store that cycles over its source holds items beyond the reference's first cycle.
    let got: HashMap<u64, u64> = strategy
        .hashes
        .into_iter()
        .filter(|(id, _)| {
            // Outputs come after every step (a fan-out step numbers them by their item).
            let item = job.workload.item_of(*id, job.workload.steps.len());
            (item as usize) < job.items
        })
        .collect();
    // Of a part of a store (its first shards), the outputs of the items those shards hold.
    let part;
    let expected = match job.input {
        OnlineInput::Store { manifest, .. } if manifest.part_of.is_some() => {
            part = expected
                .iter()
                .filter(|(id, _)| {
                    manifest.holds_item(job.workload.item_of(**id, job.workload.steps.len()))
                })
                .map(|(id, hash)| (*id, *hash))
                .collect::<HashMap<u64, u64>>();
            &part
        }
        _ => expected,
    };
    let differ = expected
        .iter()
        .filter(|(id, hash)| got.get(id).is_some_and(|h| h != *hash))
        .map(|(id, _)| *id);
    let extra = got.keys().filter(|id| !expected.contains_key(id)).copied();
    let mut mismatched: Vec<u64> = differ.chain(extra).collect();
    let missing: Vec<u64> = expected
        .keys()
        .filter(|id| !got.contains_key(id))
        .copied()
        .collect();
    // Samples the strategy skipped are missing from its output, not different: a damaged
    // record under `skip` is in errors.csv. Missing outputs count as accounted for when they
    // come from no more items than the run skipped (a skipped item before a fan-out step
    // loses all its parts); beyond that, they are differences.
    let skipped: u64 = strategy.skipped.iter().map(|s| s.count).sum();
    let items: std::collections::BTreeSet<u64> = missing
        .iter()
        .map(|id| job.workload.item_of(*id, job.workload.steps.len()))
        .collect();
    let accounted = !missing.is_empty() && items.len() as u64 <= skipped;
    if !accounted {
        mismatched.extend(&missing);
    }
    mismatched.sort_unstable();
    Ok(Verification {
        checked: expected.len() - if accounted { missing.len() } else { 0 },
        mismatched,
        skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::materialize::{materialize, MaterializeJob};
    use crate::store::{ShardReader, ShardWriter, StoreKey};
    use datasets::GenerateRequest;
    use workloads::{Codec, Field, Tensor, TensorData};

    fn outcome(checked: usize, mismatched: &[u64], skipped: u64) -> Verification {
        Verification {
            checked,
            mismatched: mismatched.to_vec(),
            skipped,
        }
    }

    /// CV's `resized` store of six generated images in 2 shards (samples 0, 2, 4 in shard 0;
    /// 1, 3, 5 in shard 1) under `dir`: the source, the workload, the store's folder and
    /// manifest.
    fn six_resized(
        dir: &std::path::Path,
    ) -> (
        datasets::Source,
        workloads::Workload,
        std::path::PathBuf,
        crate::store::StoreManifest,
    ) {
        let request = GenerateRequest {
            root: dir.join("data"),
            samples: 6,
            seed: 3,
            threads: 2,
            options: Default::default(),
        };
        let source = datasets::prepare("imagenet", &request, &|_| ()).unwrap();
        let workload = workloads::load("cv").unwrap();
        let strategy = workload.spec.strategy("resized").unwrap();
        let key = StoreKey {
            workload: "cv".into(),
            strategy: strategy.name.clone(),
            split: strategy.split,
            codec: Codec::None,
            shards: 2,
            samples: 6,
            source_fingerprint: source.fingerprint(),
            prefix_fingerprint: workload.prefix_fingerprint(strategy.split),
        };
        let store_dir = dir.join("store");
        let job = MaterializeJob {
            workload: &workload,
            source: &source,
            key: &key,
            dir: &store_dir,
            threads: 2,
            on_error: workloads::OnError::Fail,
        };
        let manifest = materialize(&job, &ProgressBar::hidden()).unwrap();
        (source, workload, store_dir, manifest)
    }

    /// Epoch 0 of `resized` reading `manifest`'s shards from `backend`, on 2 threads.
    fn reading<'a>(
        workload: &'a workloads::Workload,
        source: &'a datasets::Source,
        backend: &'a crate::store::LocalStore,
        manifest: &'a crate::store::StoreManifest,
    ) -> OnlineJob<'a> {
        let strategy = workload.spec.strategy("resized").unwrap();
        OnlineJob {
            engine: crate::measure::online::default_engine(),
            items: source.len(),
            workload,
            split: strategy.split,
            source,
            input: OnlineInput::Store { backend, manifest },
            threads: 2,
            seed: 1,
            epoch: 0,
            hash: false,
            expected: None,
            fill: None,
            throttle: None,
            min_s: None,
            max_s: None,
            timed_start: None,
            consumer: None,
            on_error: workloads::OnError::Fail,
            loader_options: "",
            kept: None,
        }
    }

    #[test]
    fn a_validly_framed_but_different_sample_is_reported_by_id() {
        let dir = tempfile::tempdir().unwrap();
        let (source, workload, store_dir, manifest) = six_resized(dir.path());
        let backend = crate::store::LocalStore {
            dir: store_dir.clone(),
        };
        let online = reading(&workload, &source, &backend, &manifest);
        assert_eq!(verify(&online).unwrap(), outcome(6, &[], 0));

        // Rewrite shard 1 (samples 1, 3, 5) with sample 3's image brightened by one level.
        let shard = store_dir.join(&manifest.shards[1].file);
        let mut reader = ShardReader::open(&shard, Codec::None).unwrap();
        let mut payloads = Vec::new();
        let mut buf = Vec::new();
        while reader.next_into(&mut buf).unwrap() {
            let mut sample = workloads::encoding::decode(&buf).unwrap();
            if sample.id == 3 {
                let (shape, data) = sample.take_tensor("image").unwrap().into_parts();
                let TensorData::U8(mut px) = data else {
                    panic!("resized is uint8")
                };
                px.iter_mut().for_each(|p| *p = p.saturating_add(1));
                sample.set(
                    "image",
                    Field::Tensor(Tensor::new(shape, TensorData::U8(px)).unwrap()),
                );
            }
            payloads.push(workloads::encoding::encode(&sample));
        }
        let mut writer = ShardWriter::create(&store_dir, 1, 2, Codec::None).unwrap();
        payloads.iter().for_each(|p| writer.write(p).unwrap());
        writer.finish().unwrap();
        assert_eq!(verify(&online).unwrap(), outcome(6, &[3], 0));

        // A payload byte flipped in shard 0's first record: under `skip` the record is stepped
        // over (its CRC fails) and counted as skipped, not reported as a difference; sample 3
        // still differs.
        let shard = store_dir.join(&manifest.shards[0].file);
        let mut bytes = std::fs::read(&shard).unwrap();
        bytes[12 + 40] ^= 0x55;
        std::fs::write(&shard, bytes).unwrap();
        let skipping = OnlineJob {
            on_error: workloads::OnError::Skip,
            ..online
        };
        assert_eq!(verify(&skipping).unwrap(), outcome(5, &[3], 1));
    }

    #[test]
    fn a_part_of_a_store_is_judged_on_the_items_its_shards_hold() {
        let dir = tempfile::tempdir().unwrap();
        let (source, workload, store_dir, manifest) = six_resized(dir.path());
        let backend = crate::store::LocalStore { dir: store_dir };
        let online = reading(&workload, &source, &backend, &manifest);
        // The first shard alone, as a loader slower than the store was sized for reads it: the
        // items it holds (0, 2, 4) are compared, the others not expected; listed without
        // saying it is a part, the others are missing.
        let mut first = manifest.clone();
        first.shards.truncate(1);
        let unmarked = OnlineJob {
            input: OnlineInput::Store {
                backend: &backend,
                manifest: &first,
            },
            ..online
        };
        assert_eq!(verify(&unmarked).unwrap(), outcome(6, &[1, 3, 5], 0));
        let mut part_manifest = first.clone();
        part_manifest.part_of = Some(2);
        let part = OnlineJob {
            input: OnlineInput::Store {
                backend: &backend,
                manifest: &part_manifest,
            },
            ..online
        };
        assert_eq!(verify(&part).unwrap(), outcome(3, &[], 0));
    }

    /// A part that reads each shard's first records: the engine reads those alone, and
    /// `--verify` judges the part's shards whole (`Materialized::whole_shards`).
    #[test]
    fn a_part_stopping_within_its_shards_reads_their_first_records_and_is_judged_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (source, workload, store_dir, manifest) = six_resized(dir.path());
        let stored = crate::measure::session::Materialized {
            backend: std::sync::Arc::new(crate::store::LocalStore {
                dir: store_dir.clone(),
            }),
            manifest,
            reused: false,
            samples: (String::new(), Vec::new()),
        };
        assert!(stored.part(2, None).is_none() && stored.part(2, Some(3)).is_none());
        let part = stored.part(2, Some(2)).unwrap();
        assert_eq!(part.manifest.records_per_shard, Some(2));
        // Two of each shard's three records: two thirds of its bytes, as its rows say.
        let shares: u64 = (stored.manifest.shards.iter())
            .map(|s| (s.bytes as f64 * 2.0 / 3.0).round() as u64)
            .sum();
        assert_eq!(part.manifest.part_bytes(), shares);
        assert_eq!(
            stored.manifest.part_bytes(),
            stored.manifest.storage_bytes()
        );
        let backend = crate::store::LocalStore { dir: store_dir };
        let capped = OnlineJob {
            hash: true,
            ..reading(&workload, &source, &backend, &part.manifest)
        };
        let read = run_online(&capped, &ProgressBar::hidden()).unwrap();
        let mut ids: Vec<u64> = read.hashes.iter().map(|(id, _)| *id).collect();
        ids.sort_unstable();
        assert_eq!(ids, [0, 1, 2, 3]);
        let whole = part.whole_shards().unwrap();
        assert!(whole.whole_shards().is_none());
        let judged = reading(&workload, &source, &backend, &whole.manifest);
        assert_eq!(verify(&judged).unwrap(), outcome(6, &[], 0));
        // The first shard, cut: items 0 and 2 read, and judged on 0, 2 and 4.
        let first = stored.part(1, Some(2)).unwrap();
        let read = run_online(
            &OnlineJob {
                hash: true,
                ..reading(&workload, &source, &backend, &first.manifest)
            },
            &ProgressBar::hidden(),
        )
        .unwrap();
        assert_eq!(read.hashes.len(), 2);
        let whole = first.whole_shards().unwrap();
        let judged = reading(&workload, &source, &backend, &whole.manifest);
        assert_eq!(verify(&judged).unwrap(), outcome(3, &[], 0));
    }
}
