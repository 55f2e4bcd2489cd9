//! `prepbench sweep`: a workload's matrix of strategies x codecs x threads x cache modes x
//! trials. Each (strategy, codec) is materialized once (plus `--offline-trials` repeats, recorded
//! in `offline.csv`) and reused by every online run; online runs execute in a seeded random
//! order so drift does not line up with one cell. Every run has a stable id derived from its
//! settings, so re-running the same command skips what is already in `runs.csv`.

use std::collections::{BTreeMap, HashMap, HashSet};

use workloads::{CacheMode, Codec, Workload};

use crate::measure::session::Materialized;
use crate::measure::warnings::Warning;
use crate::plan::executor::Executor;
pub use crate::plan::matrix::{shuffled, Cell, Plan};
pub use crate::plan::options::SweepOptions;
pub use crate::plan::settings::{Places, Settings};
use crate::plan::sizing::{self, Sizes};
use crate::plan::trials::targeted;
use crate::results::{Calibration, LoaderPart, Manifest, PlanEntry, SizingEntry, Verdict};

/// What a sweep did.
pub struct SweepOutcome {
    /// `prepbench calibrate`: the calibration, described.
    pub calibration: Option<String>,
    pub ran: usize,
    pub skipped: usize,
    pub warnings: Vec<Warning>,
    pub verify_failures: Vec<(String, Vec<u64>)>,
}

/// Runs (or resumes) the sweep and appends to `places.out`. A workload with
/// `sweep.dataset_options` is swept once per dataset variant, each recorded as its own workload
/// `<name>@<options>`.
pub fn sweep(
    opts: &SweepOptions,
    places: &Places,
    command_line: Vec<String>,
) -> anyhow::Result<SweepOutcome> {
    let sharded;
    let places = match &opts.shard {
        Some(shard) => {
            sharded = Places {
                out: shard.dir(&places.out),
                ..places.clone()
            };
            &sharded
        }
        None => places,
    };
    let workload = places.load_workload(&opts.workload, opts.settings.samples)?;
    let opts = &opts.for_workload(&workload.spec, &places.progress);
    // One writer of a results folder at a time, for the whole sweep; nothing is written
    // before the folders are known to lie outside the dataset and the options are accepted.
    places.check_outside_dataset(&workload)?;
    Plan::new(&workload, opts)?;
    let variants = spread(workload.spec.dataset_variants(), opts.variants);
    if variants.is_empty() {
        let _lock = crate::results::lock::folder(&places.out)?;
        return sweep_workload(workload, opts, places, command_line);
    }
    let mut sized = Vec::new();
    for options in &variants {
        let variant = Workload::build(workload.spec.variant(options))?;
        if !opts.trials_at_least.is_empty()
            && !opts
                .trials_at_least
                .iter()
                .any(|t| t.key.workload == variant.spec.label())
        {
            continue;
        }
        let (samples, shards) = variant_size(&workload, &variant, opts)?;
        sized.push((variant, samples, shards));
    }
    check_room_for_variants(&sized, places)?;
    let _lock = crate::results::lock::folder(&places.out)?;
    let mut total = SweepOutcome {
        calibration: None,
        ran: 0,
        skipped: 0,
        warnings: Vec::new(),
        verify_failures: Vec::new(),
    };
    for (variant, samples, shards) in sized {
        let outcome = sweep_workload(
            variant,
            &SweepOptions {
                settings: Settings {
                    samples: Some(samples),
                    shards,
                    ..opts.settings.clone()
                },
                ..opts.clone()
            },
            places,
            command_line.clone(),
        )?;
        if let Some(c) = outcome.calibration {
            total.calibration = Some(total.calibration.unwrap_or_default() + &c);
        }
        total.ran += outcome.ran;
        total.skipped += outcome.skipped;
        total.warnings.extend(outcome.warnings);
        total.verify_failures.extend(outcome.verify_failures);
    }
    Ok(total)
}

/// The samples of a dataset variant (`--samples`, else `--dataset-mb` over its MB per sample,
/// else its own), and its shards: a variant sized by MB may hold fewer samples than
/// `--shards` asks for (one 20 MB sample), and gets one shard per sample, where `--shards`
/// above `--samples` is refused.
fn variant_size(
    workload: &Workload,
    variant: &Workload,
    opts: &SweepOptions,
) -> anyhow::Result<(usize, Option<usize>)> {
    let mb = opts.dataset_mb.or(workload.spec.sweep.dataset_mb);
    let samples = match (opts.settings.samples, mb) {
        (Some(n), _) => n,
        (None, Some(mb)) => {
            let per_sample =
                datasets::expected_mb(&variant.spec.dataset.kind, &variant.spec.dataset.options)?
                    .ok_or_else(|| {
                    anyhow::anyhow!(
                        "dataset kind `{}` cannot say its MB per sample, so \
                             sweep.dataset_mb cannot size its variants; give --samples",
                        variant.spec.dataset.kind
                    )
                })?;
            ((mb / per_sample).round() as usize).max(1)
        }
        (None, None) => variant.spec.dataset.samples,
    };
    let derived = opts.settings.samples.is_none() && mb.is_some();
    let shards = match opts.settings.shards {
        Some(n) if derived => Some(n.min(samples)),
        other => other,
    };
    Ok((samples, shards))
}

/// Refuses, before any variant is generated, a sweep whose variants' datasets (what is still
/// to generate of them) take more room than the data directory's filesystem has: each
/// dataset's own check would pass while room remained and fail part-way through the sweep,
/// the paper's twelve synthetic datasets being 15 GB each.
fn check_room_for_variants(
    sized: &[(Workload, usize, Option<usize>)],
    places: &Places,
) -> anyhow::Result<()> {
    let mut needed = 0.0;
    for (variant, samples, _) in sized {
        let root = crate::measure::session::dataset_root(variant, &places.data_dir)?;
        if variant.spec.dataset.path.is_some() || datasets::files::is_remote(&root) {
            continue;
        }
        let request = crate::measure::session::generate_request(variant, root, *samples, 1);
        let kind = &variant.spec.dataset.kind;
        needed += datasets::bytes_to_generate(kind, &request)?.unwrap_or(0.0);
    }
    let Some(free) = crate::store::free_bytes(&places.data_dir) else {
        return Ok(());
    };
    anyhow::ensure!(
        needed <= free as f64,
        "{}: the {} dataset variants of this sweep need about {:.1} GB of data still to \
         generate, and its filesystem has {:.1} GB free: ask for less data per variant \
         (--dataset-mb), fewer variants (--variants) or give a data directory with room \
         (--data-dir); nothing was written",
        places.data_dir.display(),
        sized.len(),
        needed / 1e9,
        free as f64 / 1e9
    );
    Ok(())
}

/// At most `keep` of `all`, evenly spread, the first and the last kept.
fn spread<T>(all: Vec<T>, keep: Option<usize>) -> Vec<T> {
    let n = all.len();
    match keep {
        Some(k) if k >= 2 && k < n => {
            let picks: Vec<usize> = (0..k).map(|i| i * (n - 1) / (k - 1)).collect();
            all.into_iter()
                .enumerate()
                .filter(|(i, _)| picks.contains(i))
                .map(|(_, v)| v)
                .collect()
        }
        Some(1) => all.into_iter().take(1).collect(),
        _ => all,
    }
}

/// Sweeps one (already loaded) workload: its plan (and this shard's part of it) recorded, its
/// epochs sized, what is pending found, the stores made (and verified), then the online runs
/// with noise rounds.
fn sweep_workload(
    workload: Workload,
    opts: &SweepOptions,
    places: &Places,
    command_line: Vec<String>,
) -> anyhow::Result<SweepOutcome> {
    let (plan, fingerprint, total_cells) = shard_plan(&workload, opts, places)?;
    places.check_outside_dataset(&workload)?;
    let name = workload.spec.label();
    Manifest::update(&places.out, |m| {
        m.plans.insert(
            name.clone(),
            PlanEntry {
                fingerprint: fingerprint.clone(),
                cells: total_cells,
            },
        );
        if let Some(shard) = &opts.shard {
            m.shard = Some(shard.clone());
        }
    })?;
    let max_threads = plan.cells.iter().map(|c| c.threads).max().unwrap_or(1);
    let executor = Executor::open(
        workload,
        places,
        plan.samples,
        max_threads,
        Some(plan.on_error),
        command_line,
    )?;
    let sweep = SweepRun {
        cold: plan.cells.iter().any(|c| c.cache == CacheMode::Cold),
        // The dataset as asked for: offline times are measured on stores of it, whatever the
        // raw files' epochs grow it to.
        base_items: executor.session.source.len(),
        plan,
        opts,
        places,
        max_threads,
        name,
        executor,
    };
    let (mut sweep, sizes) = sweep.size_epochs()?;
    let pending = sweep.pending()?;
    let mut outcome = SweepOutcome {
        calibration: None,
        ran: 0,
        skipped: sweep.plan.cells.len() - pending.cells.len(),
        warnings: Vec::new(),
        verify_failures: Vec::new(),
    };
    if pending.cells.is_empty() && outcome.skipped > 0 {
        places.progress.note(&format!(
            "{}: all {} runs already recorded in {}",
            sweep.name,
            outcome.skipped,
            sweep.executor.tables.runs.path().display()
        ));
    }
    if opts.calibrate_only {
        let calibration = sweep.calibrate(&mut HashMap::new())?;
        outcome.calibration = Some(crate::results::calibration::describe(&calibration));
        // The workload and command are recorded too, so the folder says what was calibrated.
        sweep.executor.finish(Vec::new())?;
        return Ok(outcome);
    }
    let mut prepared = sweep.make_stores(&pending, &sizes, &mut outcome)?;
    if opts.calibrate && !pending.cells.is_empty() {
        sweep.calibrate(&mut prepared.stores)?;
    }
    sweep.run_online(pending.cells, &prepared, &mut outcome)?;
    Ok(outcome)
}

/// The plan of a sweep, its fingerprint and its size before this shard took its part: the
/// trials `reproduce` asks for added, and under `--shard` only this shard's cells kept.
fn shard_plan(
    workload: &Workload,
    opts: &SweepOptions,
    places: &Places,
) -> anyhow::Result<(Plan, String, usize)> {
    let mut plan = Plan::new(workload, opts)?;
    let all_ids: Vec<String> = plan
        .cells
        .iter()
        .map(|c| plan.run_id(workload, opts.settings.seed, c))
        .collect();
    let fingerprint = crate::plan::partition::plan_fingerprint(&all_ids);
    let total_cells = plan.cells.len();
    // Trials asked for beyond the plan: not part of its fingerprint, like the noise rule's.
    let asked = targeted(&plan, &workload.spec.label(), &opts.trials_at_least);
    plan.cells.extend(asked);
    if let Some(shard) = &opts.shard {
        let owner = crate::plan::partition::assign(
            &plan.cells,
            shard.count,
            workload.steps.len(),
            |c| plan.epochs_of(c),
            opts.offline_trials,
        );
        plan.cells = plan
            .cells
            .iter()
            .zip(owner)
            .filter(|(_, o)| *o == shard.index)
            .map(|(c, _)| c.clone())
            .collect();
        places.progress.note(&format!(
            "{}: shard {} of {} (from {}): {} of {} cells, results in {}",
            workload.spec.label(),
            shard.index,
            shard.count,
            shard.source,
            plan.cells.len(),
            total_cells,
            places.out.display()
        ));
    }
    Ok((plan, fingerprint, total_cells))
}

/// A sweep of one workload under way: its plan, options and places, and the executor its
/// runs are measured and recorded through.
struct SweepRun<'a> {
    plan: Plan,
    opts: &'a SweepOptions,
    places: &'a Places,
    max_threads: usize,
    /// Whether any cell starts cold (stores are then evicted after they are made).
    cold: bool,
    /// Items of the dataset as asked for, before raw epochs grew it.
    base_items: usize,
    /// The workload's label.
    name: String,
    executor: Executor<'a>,
}

/// The runs a sweep has still to make, and what the folder already holds.
/// (strategy, codec, loader): what one verification judges.
type VerdictKey = (String, Codec, &'static str);

struct Pending {
    cells: Vec<Cell>,
    /// Stores whose recorded runs passed verification and never failed it: reused unchanged,
    /// they keep that verdict instead of being verified again.
    passed: HashSet<VerdictKey>,
    /// Offline trials already in offline.csv.
    done_offline: HashSet<String>,
}

impl<'a> SweepRun<'a> {
    /// The calibration of the plan's (strategy, codec)s not calibrated yet in the folder.
    fn calibrate(
        &self,
        stores: &mut HashMap<(String, Codec), Materialized>,
    ) -> anyhow::Result<Calibration> {
        crate::plan::calibrate::calibrate_cells(
            &self.executor.session,
            &self.plan,
            stores,
            self.places,
            self.opts,
            self.max_threads,
            self.cold,
        )
    }

    /// Epochs sized by time: with `--min-epoch-s`, calibrate first, then give each store (and
    /// the dataset, for raw files) enough items that its fastest epoch lasts the floor.
    fn size_epochs(mut self) -> anyhow::Result<(SweepRun<'a>, Sizes)> {
        let mut sizes = Sizes {
            source_items: self.base_items,
            ..Sizes::default()
        };
        let (Some(floor), false) = (self.opts.settings.min_epoch_s, self.opts.calibrate_only)
        else {
            return Ok((self, sizes));
        };
        let calibration = self.calibrate(&mut HashMap::new())?;
        let session = &self.executor.session;
        let items = session.source.len();
        let per_item = self.plan.samples as f64 / items.max(1) as f64;
        let memory = crate::results::system::machine().memory_bytes;
        // Raw files grow within the byte cap a store has on this disk.
        let byte_cap = (calibration.machine.as_ref()).map_or(sizing::MAX_STORE_BYTES, |m| {
            sizing::store_byte_cap(m, floor, memory)
        });
        let spec = &session.workload.spec;
        let growth = sizing::dataset_growth(spec, session.source.total_bytes(), byte_cap);
        let name = self.name.clone();
        sizes = sizing::sizes(
            &self.plan,
            &name,
            &calibration,
            floor,
            (items, per_item),
            (growth, memory),
        );
        if sizes.source_items > items {
            let samples = (sizes.source_items as f64 * per_item).round() as usize;
            self.places.progress.note(&format!(
                "{name}: {samples} samples so that raw epochs last {floor} s"
            ));
            self.executor = self.executor.reopen(samples, self.max_threads)?;
            sizes.source_items = self.executor.session.source.len();
        }
        for line in &sizes.capped {
            self.places
                .progress
                .note(&format!("{name}: epochs may stay short: {line}"));
        }
        let recorded = sizes.to_entry(floor, per_item);
        let keys = self.plan.sizing_keys(&name);
        Manifest::update(&self.places.out, |m| {
            // Under each condition the sweep reads (a storage profile, a consumer, a memory
            // limit): the parts a resumed sweep's slower loaders read, kept while their stores'
            // sizes hold, and the stores other sweeps of the workload under it sized. The
            // parts it reads are those that hold under every one.
            let mut parts: Option<BTreeMap<String, LoaderPart>> = None;
            for key in &keys {
                let mut entry = recorded.clone();
                if let Some(before) = m.sizing.get(key) {
                    entry.keep_from(before);
                }
                // Stores timed and grown before (`SweepRun::checked_store`) keep their size.
                for ((strategy, codec), items) in sizes.store_items.iter_mut() {
                    let store = SizingEntry::store_key(strategy, codec);
                    if let Some(&checked) = entry.checked.get(&store) {
                        *items = (*items).max(checked);
                        sizes.checked.insert((strategy.clone(), *codec), checked);
                    }
                }
                let holds = entry.parts_that_hold();
                parts = Some(match parts {
                    None => holds,
                    Some(so_far) => (so_far.into_iter())
                        .filter(|(k, part)| holds.get(k) == Some(part))
                        .collect(),
                });
                m.sizing.insert(key.clone(), entry);
            }
            sizes.loader_parts = parts.unwrap_or_default();
        })?;
        Ok((self, sizes))
    }

    /// The plan's runs not yet in runs.csv, and what the folder says of its stores.
    fn pending(&self) -> anyhow::Result<Pending> {
        let tables = &self.executor.tables;
        let recorded = tables.runs.read()?;
        let done: HashSet<&str> = recorded.iter().map(|r| r.run_id.as_str()).collect();
        let profiles: HashSet<&str> = self
            .plan
            .cells
            .iter()
            .map(|c| c.storage.name.as_str())
            .collect();
        let verified = |want: Verdict| -> HashSet<VerdictKey> {
            recorded
                .iter()
                .filter(|r| r.workload == self.name && profiles.contains(r.storage.as_str()))
                .filter(|r| r.verified == Some(want))
                .filter_map(|r| {
                    let loader = crate::measure::online::engine(&r.loader)?.name();
                    Some((r.strategy.clone(), r.codec, loader))
                })
                .collect()
        };
        let passed = &verified(Verdict::Pass) - &verified(Verdict::Fail);
        let done_offline: HashSet<String> = tables
            .offline
            .read()?
            .into_iter()
            .map(|r| r.run_id)
            .collect();
        let workload = &self.executor.session.workload;
        let seed = self.opts.settings.seed;
        let cells = self
            .plan
            .cells
            .iter()
            .filter(|c| !done.contains(self.plan.run_id(workload, seed, c).as_str()))
            .cloned()
            .collect();
        Ok(Pending {
            cells,
            passed,
            done_offline,
        })
    }
}

mod checks;
mod online;
mod parts;
mod stores;
#[cfg(test)]
mod tests;
mod verdicts;
