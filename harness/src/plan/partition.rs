//! Sweeps across hosts: `prepbench sweep ... --shard I/N` runs a deterministic share of the
//! sweep's cells (`plan/merge.rs` puts the shards' results folders back together).
//!
//! The shard is `--shard I/N`, else the launcher's variables: Open MPI's
//! `OMPI_COMM_WORLD_RANK`/`OMPI_COMM_WORLD_SIZE`, MPICH and Intel MPI's `PMI_RANK`/`PMI_SIZE`,
//! a Slurm job array's `SLURM_ARRAY_TASK_ID` (less `SLURM_ARRAY_TASK_MIN`) and
//! `SLURM_ARRAY_TASK_COUNT`, or a Kubernetes Indexed Job's `JOB_COMPLETION_INDEX` with
//! `PREPBENCH_SHARD_COUNT` (Kubernetes does not expose the completion count). So
//! `mpirun -np 4 prepbench sweep cv --out D` and a Slurm array both work unchanged.
//!
//! Cells are assigned in groups: all cells reading one store (strategy, codec) go to one shard,
//! which materializes it once, so shards never write the same store; `unprocessed` cells group
//! per (threads, cache, storage). Groups are placed longest first on the least loaded shard
//! (LPT), their cost estimated as epochs x online steps per cell plus the offline steps of their
//! store. Each shard writes `OUT/shard-I-of-N/`.

use std::collections::BTreeMap;

use crate::plan::sweep::Cell;
use crate::results::Shard;

/// The shard the launcher started this process as (`None` when there is no launcher, or it
/// started one process), reading variables through `var`.
pub fn from_launcher(var: &dyn Fn(&str) -> Option<String>) -> Result<Option<Shard>, String> {
    let num = |name: &str| -> Result<Option<usize>, String> {
        match var(name) {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| format!("{name}={v} is not a number")),
        }
    };
    let pairs: [(&str, &str); 2] = [
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
        ("PMI_RANK", "PMI_SIZE"),
    ];
    for (rank, size) in pairs {
        if let (Some(i), Some(n)) = (num(rank)?, num(size)?) {
            return one_or_more((i, rank), (n, size));
        }
    }
    if let Some(id) = num("SLURM_ARRAY_TASK_ID")? {
        let count = num("SLURM_ARRAY_TASK_COUNT")?
            .ok_or("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not")?;
        let min = num("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
        if num("SLURM_ARRAY_TASK_STEP")?.is_some_and(|s| s != 1) {
            return Err(
                "a Slurm array with a step other than 1 cannot number shards; use --array=0-N-1"
                    .into(),
            );
        }
        let index = id
            .checked_sub(min)
            .ok_or("SLURM_ARRAY_TASK_ID is below SLURM_ARRAY_TASK_MIN")?;
        return one_or_more(
            (index, "SLURM_ARRAY_TASK_ID"),
            (count, "SLURM_ARRAY_TASK_COUNT"),
        );
    }
    if let Some(i) = num("JOB_COMPLETION_INDEX")? {
        let n = num("PREPBENCH_SHARD_COUNT")?.ok_or(
            "JOB_COMPLETION_INDEX is set but not the job's completions: set PREPBENCH_SHARD_COUNT (or give --shard I/N)",
        )?;
        return one_or_more((i, "JOB_COMPLETION_INDEX"), (n, "PREPBENCH_SHARD_COUNT"));
    }
    Ok(None)
}

/// The shard `index` of `count`, each with the variable it came from (an error names the one
/// that is wrong); `None` for a launcher that started one process.
fn one_or_more(
    (index, index_var): (usize, &str),
    (count, count_var): (usize, &str),
) -> Result<Option<Shard>, String> {
    if count <= 1 {
        return Ok(None);
    }
    if count > crate::results::manifest::MAX_SWEEP_SHARDS {
        return Err(format!(
            "{count_var}={count}: a sweep has from 1 to {} shards",
            crate::results::manifest::MAX_SWEEP_SHARDS
        ));
    }
    if index >= count {
        return Err(format!(
            "{index_var}={index} is not below {count_var}={count}: a shard's index is from 0 \
             to the count less one"
        ));
    }
    Shard::new(index, count, index_var).map(Some)
}

/// The group a cell is assigned with: its store, or for raw files its settings.
fn group(cell: &Cell) -> String {
    if cell.strategy.split > 0 {
        format!("store {} {}", cell.strategy.name, cell.codec)
    } else {
        format!(
            "raw {} {} {} {}",
            cell.strategy.name, cell.threads, cell.cache, cell.storage.name
        )
    }
}

/// Which shard each cell (by index) belongs to: groups of cells, longest estimated first, on
/// the least loaded shard; `steps` is the workload's step count, `epochs` a cell's epochs
/// (`Plan::epochs_of`: a cold cell of a strategy whose page-cache epoch is not run has one).
pub fn assign(
    cells: &[Cell],
    count: usize,
    steps: usize,
    epochs: impl Fn(&Cell) -> u64,
    offline_trials: usize,
) -> Vec<usize> {
    let mut groups: BTreeMap<String, (f64, Vec<usize>)> = BTreeMap::new();
    for (i, cell) in cells.iter().enumerate() {
        let online = (steps.saturating_sub(cell.strategy.split) + 1) as f64 * epochs(cell) as f64;
        let entry = groups.entry(group(cell)).or_insert_with(|| {
            let offline = (cell.strategy.split * offline_trials.max(1)) as f64;
            (offline, Vec::new())
        });
        entry.0 += online;
        entry.1.push(i);
    }
    let mut ordered: Vec<(String, f64, Vec<usize>)> =
        groups.into_iter().map(|(k, (c, v))| (k, c, v)).collect();
    ordered.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let mut load = vec![0.0f64; count.max(1)];
    let mut owner = vec![0; cells.len()];
    for (_, cost, members) in ordered {
        let shard = (0..load.len())
            .min_by(|&a, &b| load[a].total_cmp(&load[b]).then(a.cmp(&b)))
            .expect("at least one shard");
        load[shard] += cost;
        for i in members {
            owner[i] = shard;
        }
    }
    owner
}

/// A fingerprint of the whole plan (every cell's run id): shards of one sweep share it.
pub fn plan_fingerprint(run_ids: &[String]) -> String {
    let mut sorted = run_ids.to_vec();
    sorted.sort();
    format!(
        "{:016x}",
        xxhash_rust::xxh3::xxh3_64(sorted.join(",").as_bytes())
    )
}

// ------------------------------------------------------------------------------ merge

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::sweep::{Plan, SweepOptions};
    use std::collections::BTreeSet;
    use workloads::options::{CacheMode, Codec};

    #[test]
    fn shards_parse_and_refuse_bad_ones() {
        let s: Shard = "1/4".parse().unwrap();
        assert_eq!((s.index, s.count), (1, 4));
        for bad in [
            "4/4",
            "1",
            "a/2",
            "0/0",
            "1/x",
            "1/18446744073709551615",
            "0/100001",
        ] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        let err = "1/18446744073709551615".parse::<Shard>().unwrap_err();
        assert!(err.contains("from 1 to 100000"), "{err}");
    }

    #[test]
    fn launcher_variables_give_the_shard() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let get = |pairs: &'static [(&'static str, &'static str)]| from_launcher(&env(pairs));
        assert_eq!(get(&[]).unwrap(), None);
        let s = get(&[("OMPI_COMM_WORLD_RANK", "1"), ("OMPI_COMM_WORLD_SIZE", "2")])
            .unwrap()
            .unwrap();
        assert_eq!(
            (s.index, s.count, s.source.as_str()),
            (1, 2, "OMPI_COMM_WORLD_RANK")
        );
        let s = get(&[("PMI_RANK", "3"), ("PMI_SIZE", "4")])
            .unwrap()
            .unwrap();
        assert_eq!((s.index, s.count), (3, 4));
        // One process under a launcher is no sharding.
        assert_eq!(get(&[("PMI_RANK", "0"), ("PMI_SIZE", "1")]).unwrap(), None);
        let s = get(&[
            ("SLURM_ARRAY_TASK_ID", "12"),
            ("SLURM_ARRAY_TASK_MIN", "10"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!((s.index, s.count), (2, 4));
        assert!(get(&[("SLURM_ARRAY_TASK_ID", "1")]).is_err());
        assert!(get(&[
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_COUNT", "2"),
            ("SLURM_ARRAY_TASK_STEP", "2")
        ])
        .is_err());
        let e = get(&[("JOB_COMPLETION_INDEX", "0")]).unwrap_err();
        assert!(e.contains("PREPBENCH_SHARD_COUNT"), "{e}");
        let s = get(&[
            ("JOB_COMPLETION_INDEX", "2"),
            ("PREPBENCH_SHARD_COUNT", "3"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!((s.index, s.count), (2, 3));
        assert!(get(&[("PMI_RANK", "x"), ("PMI_SIZE", "2")]).is_err());
        let e = get(&[("PMI_RANK", "2"), ("PMI_SIZE", "2")]).unwrap_err();
        assert!(e.contains("PMI_RANK=2") && e.contains("PMI_SIZE=2"), "{e}");
        // A count out of range names the size variable, not the rank one.
        let e = get(&[
            ("OMPI_COMM_WORLD_RANK", "0"),
            ("OMPI_COMM_WORLD_SIZE", "100001"),
        ])
        .unwrap_err();
        assert!(
            e.starts_with("OMPI_COMM_WORLD_SIZE=100001") && !e.contains("_RANK"),
            "{e}"
        );
        let e = get(&[
            ("SLURM_ARRAY_TASK_ID", "0"),
            ("SLURM_ARRAY_TASK_COUNT", "1000000"),
        ])
        .unwrap_err();
        assert!(e.starts_with("SLURM_ARRAY_TASK_COUNT"), "{e}");
    }

    #[test]
    fn every_cell_has_exactly_one_shard_and_stores_are_not_split() {
        let workload = workloads::load("cv").unwrap();
        let plan = Plan::new(
            &workload,
            &SweepOptions {
                workload: "cv".into(),
                codecs: Some(vec![Codec::None, Codec::Gzip { level: 6 }]),
                threads: Some(vec![1, 2, 4]),
                cache: Some(vec![CacheMode::Cold, CacheMode::Warm]),
                trials: Some(3),
                ..Default::default()
            },
        )
        .unwrap();
        let steps = workload.steps.len();
        for n in 1..=6 {
            let owner = assign(&plan.cells, n, steps, |_| 2, 1);
            assert_eq!(owner.len(), plan.cells.len());
            assert!(owner.iter().all(|&s| s < n), "{n} shards");
            assert_eq!(
                owner,
                assign(&plan.cells, n, steps, |_| 2, 1),
                "deterministic"
            );
            // The cells of one store are on one shard.
            let mut store_owner: BTreeMap<String, usize> = BTreeMap::new();
            for (cell, &s) in plan.cells.iter().zip(&owner) {
                assert_eq!(*store_owner.entry(group(cell)).or_insert(s), s);
            }
            // With at least as many groups as shards, every shard has work.
            if store_owner.len() >= n {
                let used: BTreeSet<usize> = owner.iter().copied().collect();
                assert_eq!(used.len(), n, "{n} shards");
            }
        }
    }

    /// A group is weighed by its own cells' epochs: given far more than all the others
    /// together, it has a shard to itself.
    #[test]
    fn a_cell_weighs_its_own_epochs() {
        let workload = workloads::load("cv").unwrap();
        let plan = Plan::new(
            &workload,
            &SweepOptions {
                workload: "cv".into(),
                cache: Some(vec![CacheMode::Cold, CacheMode::Warm]),
                ..Default::default()
            },
        )
        .unwrap();
        let steps = workload.steps.len();
        let heavy = group(&plan.cells[0]);
        let epochs = |c: &Cell| if group(c) == heavy { 1000 } else { 1 };
        let owner = assign(&plan.cells, 2, steps, epochs, 1);
        for (cell, &s) in plan.cells.iter().zip(&owner) {
            assert_eq!(s == owner[0], group(cell) == heavy, "{}", group(cell));
        }
    }
}
