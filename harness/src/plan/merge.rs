//! `prepbench merge`: the shards of a sweep run across hosts (`sweep --shard`, or under a
//! launcher) put back into one results folder: every shard's rows in shard order, and one
//! manifest with every shard's invocations, machines and calibrated strategies. Shards of
//! different sweeps, a shard given twice or a missing one are refused.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use crate::results::{Calibration, Manifest, MergedFrom, Recorded, Shard, Tables};

/// The `shard-I-of-N` folders under `dir`, sorted.
fn shard_subfolders(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("shard-") && n.contains("-of-"))
        })
        .collect();
    found.sort();
    Ok(found)
}

/// The shard folders named by `inputs`: each a folder holding `shard-I-of-N` folders, or a
/// shard's results folder.
fn shard_folders(inputs: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for input in inputs {
        let found = shard_subfolders(input)?;
        if !found.is_empty() {
            out.extend(found);
        } else if input.join("manifest.json").exists() {
            out.push(input.clone());
        } else {
            bail!(
                "{} is neither a results folder (no manifest.json) nor holds shard-I-of-N folders",
                input.display()
            );
        }
    }
    Ok(out)
}

/// What `merge` did.
pub struct Merged {
    pub out: PathBuf,
    pub shards: usize,
    pub rows: usize,
}

/// A shard's folder, its place in the sweep, and its manifest.
type ShardManifest = (PathBuf, Shard, Manifest);

/// Merges the shards named by `inputs` into `out` (default: the one input folder holding the
/// shards). Refuses shards of different workloads or sweep configurations, a shard given
/// twice or missing, and an `out` that already holds results.
pub fn merge(inputs: &[PathBuf], out: Option<&Path>) -> anyhow::Result<Merged> {
    let folders = shard_folders(inputs)?;
    let out = match out {
        Some(o) => o.to_path_buf(),
        None if inputs.len() == 1 && !shard_subfolders(&inputs[0])?.is_empty() => inputs[0].clone(),
        None => {
            bail!("name the merged folder with --out (the shards are not all under one folder)")
        }
    };
    if out.join("runs.csv").exists() {
        bail!(
            "{} already holds results (runs.csv); merge into a new folder with --out",
            out.display()
        );
    }
    let mut manifests = read_shards(&folders)?;
    check_complete(&manifests)?;
    check_same_sweep(&manifests)?;
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    // Tables: every shard's rows, in shard order.
    manifests.sort_by_key(|(_, s, _)| s.index);
    let tables = Tables::open(&out)?;
    let mut rows = 0;
    for (dir, _, _) in &manifests {
        let recorded = Recorded::load(dir)?;
        tables.samples.append(&recorded.samples)?;
        tables.stages.append(&recorded.stages)?;
        tables.errors.append(&recorded.errors)?;
        tables.offline.append(&recorded.offline)?;
        tables.runs.append(&recorded.runs)?;
        rows += recorded.runs.len();
    }
    merged_manifest(&manifests).write(&out)?;
    Ok(Merged {
        out,
        shards: manifests.len(),
        rows,
    })
}

/// Each folder's manifest and shard; a folder that is not a shard's is an error naming it.
fn read_shards(folders: &[PathBuf]) -> anyhow::Result<Vec<ShardManifest>> {
    let mut manifests = Vec::new();
    for dir in folders {
        let m = Manifest::read(dir)?
            .with_context(|| format!("{} has no manifest.json", dir.display()))?;
        let shard = m.shard.clone().with_context(|| {
            format!(
                "{} is not a shard's results (its manifest has no `shard`): only folders written by `sweep --shard` (or under a launcher) merge",
                dir.display()
            )
        })?;
        manifests.push((dir.clone(), shard, m));
    }
    Ok(manifests)
}

/// Refuses shards of sweeps split differently, a shard given twice, and a missing one.
fn check_complete(manifests: &[ShardManifest]) -> anyhow::Result<()> {
    let count = manifests[0].1.count;
    let mut seen = BTreeSet::new();
    for (dir, shard, _) in manifests {
        if shard.count != count {
            bail!(
                "{} is shard {} of {}, but {} is of {count}: these are different sweeps",
                dir.display(),
                shard.index,
                shard.count,
                manifests[0].0.display()
            );
        }
        if !seen.insert(shard.index) {
            bail!(
                "shard {} of {count} is given twice ({})",
                shard.index,
                dir.display()
            );
        }
    }
    let missing: Vec<u64> = (0..count)
        .filter(|i| !seen.contains(i))
        .map(|i| i as u64)
        .collect();
    if !missing.is_empty() {
        bail!(
            "{} of the {count} shards missing: {}; merge them all (each shard owns cells no \
             other has)",
            missing.len(),
            crate::units::runs_of(&missing, 8)
        );
    }
    Ok(())
}

/// Refuses shards that ran other workloads (by identity) or another plan than the first.
fn check_same_sweep(manifests: &[ShardManifest]) -> anyhow::Result<()> {
    let first = &manifests[0];
    for (dir, _, m) in &manifests[1..] {
        let (workloads, plans) = (
            m.workloads.keys().collect::<BTreeSet<_>>(),
            m.plans.keys().collect::<BTreeSet<_>>(),
        );
        for (key, names, first_names) in [
            ("workloads", &workloads, &first.2.workloads.keys().collect()),
            ("plans", &plans, &first.2.plans.keys().collect()),
        ] {
            if names != first_names {
                bail!(
                    "{} and {} ran different {key} ({:?} against {:?}): not shards of one sweep",
                    dir.display(),
                    first.0.display(),
                    names,
                    first_names
                );
            }
        }
        if m.plans != first.2.plans {
            bail!(
                "{} and {} swept different configurations (their plans differ): not shards of one sweep",
                dir.display(),
                first.0.display()
            );
        }
    }
    Ok(())
}

/// The merged manifest: the first shard's machine and build, every shard's machine,
/// invocations and calibrated strategies (`manifests` in shard order).
fn merged_manifest(manifests: &[ShardManifest]) -> Manifest {
    let first = &manifests[0].2;
    let mut merged = first.clone();
    merged.shard = None;
    merged.invocations.clear();
    let mut calibration = first.calibration.clone().unwrap_or_default();
    for (dir, shard, m) in manifests {
        merged
            .invocations
            .extend(m.invocations.iter().cloned().map(|mut inv| {
                inv.shard = Some(shard.index);
                inv
            }));
        if let Some(c) = &m.calibration {
            calibration.strategies.extend(c.strategies.clone());
        }
        merged.merged_from.push(MergedFrom {
            dir: dir.display().to_string(),
            shard: shard.clone(),
            machine: m.machine.clone(),
        });
    }
    if calibration != Calibration::default() {
        merged.calibration = Some(calibration);
    }
    merged
}
