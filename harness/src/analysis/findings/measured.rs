//! Our measurements as [`Observations`]: per workload that reproduces a paper pipeline and per
//! storage it ran on, the cold throughput and the cache, codec and thread ratios, each a mean
//! over trials with its interval. A cell whose epochs last less than
//! [`MIN_EPOCH_S`](crate::analysis::cells::MIN_EPOCH_S) gives no figure (its reason says why),
//! and neither does a cell of one trial.

use workloads::Codec;

use crate::analysis::cells::{Cell, Results};
use crate::analysis::findings::observed::{
    Compressed, Observations, Pipeline, Scaling, SizePoint, SizeSeries, Storage, Strategy,
    PAPER_THREADS,
};
use crate::analysis::report::tables;
use crate::analysis::stats::LogEstimate;
use crate::analysis::view::WorkloadView;
use crate::results::stages::classify;
use crate::results::CacheState;
use pairs::{over, paired, throughput, trial_paired};

/// What bound a cell's epochs, from its stages: `cpu-bound (io 10 %, cpu 85 %, ...)`; for a
/// loader that times no stages (its epochs run in its own process), from the CPU its
/// processes used ([`cpu_mechanism`]).
fn mechanism(results: &Results, cell: Option<&Cell>) -> Option<String> {
    let cell = cell?;
    // (Such a loader's rows in stages.csv carry no time.)
    match results
        .cell_stages(cell)
        .map(|(stages, _)| classify(&stages))
    {
        Some((Some(bound), evidence)) => Some(format!("{bound} ({evidence})")),
        _ => cpu_mechanism(results, cell),
    }
}

/// Processes using this share of the machine's cores or more through an epoch: cpu-bound.
const CPU_BOUND_SHARE: f64 = 0.75;

/// What bound a cell's epochs where no stage was timed: the cores its processes kept busy
/// (their CPU seconds over the epochs' wall time) against the machine's, and what the device
/// read meanwhile. A loader whose cold epochs keep the cores busy has little time spent
/// waiting on reads that the page cache could save, and few free cores for more threads.
fn cpu_mechanism(results: &Results, cell: &Cell) -> Option<String> {
    let cores = results.manifest.machine.as_ref()?.logical_cores.max(1);
    let (cpu, wall) = results
        .cell_rows(cell)
        .fold((0.0, 0.0), |(cpu, wall), row| {
            (cpu + row.cpu_user_s + row.cpu_sys_s, wall + row.online_s)
        });
    if wall <= 0.0 || cpu <= 0.0 {
        return None;
    }
    let used = cpu / wall;
    let share = used / cores as f64;
    let bound = if share >= CPU_BOUND_SHARE {
        "cpu-bound"
    } else {
        "not cpu-bound"
    };
    let device = results
        .cell_system(cell)
        .map_or(String::new(), |(mb_s, _)| {
            format!(", the device reading {mb_s:.0} MB/s")
        });
    Some(format!(
        "{bound} (the loader's processes kept {used:.2} of {cores} cores busy, {:.0} %{device}; \
         no stage is timed inside the loader)",
        100.0 * share
    ))
}

fn storage_of(view: &WorkloadView) -> Storage {
    match &view.condition.storage {
        Some(profile) => Storage::Emulated(profile.clone()),
        None => Storage::Local,
    }
}

fn strategy(results: &Results, view: &WorkloadView, name: &str) -> Strategy {
    let t = view.max_threads();
    let cold_cell = view.cold(name, Codec::None, t);
    let warm_cell = view.warm(name, Codec::None, t);
    let app_cell = view.cell(name, Codec::None, t, CacheState::App, 1);
    let app_fill = view.cell(name, Codec::None, t, CacheState::AppFill, 0);
    let cold = throughput(cold_cell);
    let codecs = view
        .codecs
        .iter()
        .filter(|c| **c != Codec::None)
        .filter_map(|codec| {
            let cell = view.cold(name, *codec, t)?;
            if cell.key.codec != *codec {
                // `unprocessed` has no codec: the lookup fell back to none.
                return None;
            }
            let offline = |c: Option<&Cell>| {
                c.and_then(|c| c.offline.as_ref()).map(|o| {
                    LogEstimate::of_mean(o)
                        .ok_or_else(|| format!("{} materialization: no interval", o.n))
                })
            };
            Some(Compressed {
                codec: codec.to_string(),
                speedup: trial_paired(results, Some(cell), cold_cell)?,
                // Per sample: stores sized by time hold different numbers of items.
                stored_fraction: cold_cell
                    .filter(|c| c.mb_per_sample() > 0.0)
                    .map(|c| cell.mb_per_sample() / c.mb_per_sample()),
                offline_growth: over(offline(Some(cell)), offline(cold_cell)),
                mechanism: mechanism(results, Some(cell)),
            })
        })
        .collect();
    // From the fewest threads to `to`, where `to` is more.
    let scaling_to = |to: usize| {
        let from = *view.threads.first()?;
        (to > from).then(|| {
            let (low, high) = (
                view.cold(name, Codec::None, from),
                view.cold(name, Codec::None, to),
            );
            let bound = |n: usize, cell| {
                let plural = if n == 1 { "" } else { "s" };
                Some(format!("{n} thread{plural}: {}", mechanism(results, cell)?))
            };
            Some(Scaling {
                from,
                to,
                speedup: over(throughput(high), throughput(low))?,
                mechanism: bound(from, low)
                    .zip(bound(to, high))
                    .map(|(l, h)| format!("{l}; {h}")),
            })
        })?
    };
    // The paper's claims are about 1 to 8 threads: judged there where 8 was measured, the most
    // measured where fewer; more than 8 is reported beside them.
    let paper_range = view
        .threads
        .iter()
        .copied()
        .filter(|&n| n <= PAPER_THREADS)
        .max()
        .unwrap_or(t);
    let scaling = scaling_to(paper_range);
    let beyond = (t > paper_range).then(|| scaling_to(t)).flatten();
    Strategy {
        name: name.to_string(),
        store_gb: cold_cell.map(|c| c.storage_bytes / 1e9),
        // Each run's warm epoch over its own cold one, the served epoch over the one that
        // filled the application cache. A codec against none is compared trial by trial
        // where their trials ran side by side (`pairs`); thread counts and the application
        // cache against the page cache are not: their pairs spread as much as the cells apart
        // (`pairs::MIN_PAIRS`).
        page_cache: paired(results, warm_cell, cold_cell),
        app_cache: paired(results, app_cell, app_fill),
        app_over_page: over(throughput(app_cell), throughput(warm_cell)),
        cold,
        cold_mean: cold_cell.map(|c| c.throughput.mean),
        codecs,
        scaling,
        beyond,
        mechanism: mechanism(results, cold_cell),
        cells: view
            .cells
            .iter()
            .filter(|c| c.key.strategy == name)
            .map(|c| c.key.clone())
            .collect(),
    }
}

/// The workload the paper's synthetic reading experiment is (materialized records read back).
const SYNTHETIC_READING: &str = "synthetic-reading";

/// Sample-size series: per base workload, condition and strategy, the MB/s of each dataset
/// variant sized by `mb_per_sample`.
fn size_series(views: &[&WorkloadView]) -> Vec<SizeSeries> {
    let mut out: Vec<SizeSeries> = Vec::new();
    for view in views.iter().filter(|v| !v.simulated_consumer()) {
        let Some(mb) = tables::variant_mb(view) else {
            continue;
        };
        let base = view.label().base;
        let t = view.max_threads();
        for (_, strategy) in &view.strategies {
            let rate = |cell: Option<&Cell>| {
                let per_sample = cell?.mb_per_sample();
                throughput(cell).map(|f| f.map(|e| e.scaled(per_sample)))
            };
            let (cold_cell, warm_cell) = (
                view.cold(strategy, Codec::None, t),
                view.warm(strategy, Codec::None, t),
            );
            let Some(cold) = rate(cold_cell) else {
                continue;
            };
            let point = SizePoint {
                mb_per_sample: mb,
                cold_mb_s: cold,
                warm_mb_s: rate(warm_cell),
                cells: [cold_cell, warm_cell]
                    .into_iter()
                    .flatten()
                    .map(|c| c.key.clone())
                    .collect(),
            };
            let label = if view.condition.is_plain() {
                format!("{base}/{strategy}")
            } else {
                format!("{base}/{strategy} [{}]", view.condition)
            };
            match out.iter_mut().find(|s| s.label == label) {
                Some(series) => series.sizes.push(point),
                None => out.push(SizeSeries {
                    label,
                    storage: storage_of(view),
                    judged: base == SYNTHETIC_READING && strategy != "unprocessed",
                    sizes: vec![point],
                }),
            }
        }
    }
    out
}

/// The six findings judged on `results`' runs under prepbench's own engine, seen through
/// `views`; a check is unsettled, not judged, where the machine was busy while its cells ran or
/// where more trials would decide it ([`unsettle`]). Runs under another loader are judged
/// apart ([`judge_loaders`]), never pooled with these.
pub fn judge(results: &Results, views: &[WorkloadView]) -> Vec<crate::analysis::findings::Finding> {
    judge_loader(results, views, None)
}

/// The findings judged on the runs under each loader other than prepbench's own that
/// `views` hold, by loader name, in name order.
pub fn judge_loaders(
    results: &Results,
    views: &[WorkloadView],
) -> Vec<(String, Vec<crate::analysis::findings::Finding>)> {
    let mut loaders: Vec<&str> = views
        .iter()
        .filter_map(|v| v.condition.loader.as_deref())
        .collect();
    loaders.sort();
    loaders.dedup();
    loaders
        .into_iter()
        .map(|l| (l.to_string(), judge_loader(results, views, Some(l))))
        .collect()
}

fn judge_loader(
    results: &Results,
    views: &[WorkloadView],
    loader: Option<&str>,
) -> Vec<crate::analysis::findings::Finding> {
    let mine: Vec<&WorkloadView> = views
        .iter()
        .filter(|v| v.condition.loader.as_deref() == loader)
        .collect();
    let mut found = crate::analysis::findings::rules::judge(&observations(results, &mine));
    unsettle(results, &mut found);
    found
}

/// Claims about thread scaling: their cells need free the cores they scale onto.
const SCALING_CLAIMS: [&str; 3] = ["6a", "6b", "6c"];

/// Marks unsettled, with what would settle it, each check whose cells ran while other
/// processes used more than the heavy-load share of the machine (for thread scaling: while
/// fewer cores were free than the threads it ran); and says why for each whose interval
/// reaches across a line: its estimate on the line (`Check::on_threshold`), or clear of it, so
/// that more trials decide it (and whether rerunning what made the folder adds them). Verdicts of
/// sub-claims and findings follow.
fn unsettle(results: &Results, found: &mut [crate::analysis::findings::Finding]) {
    use crate::analysis::findings::Verdict;
    let cells = results.cells();
    let loads: std::collections::HashMap<&crate::analysis::cells::CellKey, (f64, f64)> = cells
        .iter()
        .filter_map(|c| Some((&c.key, c.load()?)))
        .collect();
    let load_of = |key: &crate::analysis::cells::CellKey| loads.get(key).copied();
    let sittings = results.sittings();
    let drifts: std::collections::HashMap<&crate::analysis::cells::CellKey, _> = cells
        .iter()
        .filter_map(|c| Some((&c.key, results.drift(c, &sittings)?)))
        .collect();
    let heavy = crate::results::rows::heavy_load_pct();
    // What settling counts of each cell, and what the reproduction that made the folder gives
    // a cell at most (its scale's settling cap), to say whether rerunning it would add them.
    let counts = crate::analysis::findings::SettleCounts::of(&cells);
    let made = Made::of(&results.manifest);
    let cores = results
        .manifest
        .machine
        .as_ref()
        .map_or(1, |m| m.logical_cores) as f64;
    for finding in found.iter_mut() {
        for sub in &mut finding.sub_claims {
            let scaling = SCALING_CLAIMS.contains(&sub.id);
            let recorded = counts.for_claim(sub.id);
            for check in &mut sub.checks {
                // A busy machine slows epochs, not the bytes a store holds: in `quick-cg` 3b
                // (CV2-PNG `pixel-centered` stored at 0.10 of its bytes) read "unsettled: the
                // machine was busy".
                if check.verdict == Verdict::NotTestable
                    || check.cells.is_empty()
                    || check.is_exact()
                {
                    continue;
                }
                let busy = check
                    .cells
                    .iter()
                    .filter_map(|k| {
                        let (foreign, steal) = load_of(k)?;
                        let load = foreign + steal;
                        let starved =
                            scaling && k.threads as f64 > cores * (1.0 - load / 100.0) + 0.5;
                        (load > heavy || starved).then_some((load, foreign, steal))
                    })
                    .max_by(|a, b| a.0.total_cmp(&b.0));
                if let Some((_, foreign, steal)) = busy {
                    let stolen = if steal >= 0.5 {
                        format!(", {steal:.0} % stolen by the hypervisor")
                    } else {
                        String::new()
                    };
                    check.unsettle(format!(
                        "the machine was busy ({foreign:.0} % foreign CPU{stolen} while its \
                         cells ran{}); rerun on an idle machine",
                        if scaling {
                            ", fewer free cores than threads"
                        } else {
                            ""
                        }
                    ));
                } else if let Some((key, drift)) = check.decided_margin().and_then(|margin| {
                    // The largest drift of its cells, where it is as large as the distance
                    // from the estimate to the band of a line.
                    check
                        .figure_cells
                        .iter()
                        .filter_map(|k| Some((k, drifts.get(k)?)))
                        .map(|(k, d)| (k, d, d.ratio().ln().abs()))
                        .filter(|(_, _, size)| *size >= margin)
                        .max_by(|a, b| a.2.total_cmp(&b.2))
                        .map(|(k, d, _)| (k, d))
                }) {
                    check.unsettle(format!(
                        "the machine's rate moved between the sittings of its trials by more \
                         than the estimate's distance from the line: {} ({}, {} threads, {}) \
                         read {:.0} samples/s in {} epochs of its first sitting and {:.0} in {} \
                         of later ones ({:.2}x, p = {:.4}); more trials in one sitting would not \
                         tell which state the paper's claim is judged in; rerun on an idle \
                         machine and compare",
                        key.strategy,
                        key.workload,
                        key.threads,
                        key.cache,
                        drift.first,
                        drift.first_n,
                        drift.later,
                        drift.later_n,
                        drift.ratio(),
                        drift.p
                    ));
                } else if let Some((value, line)) = check.on_threshold() {
                    check.unsettle(format!(
                        "the estimate lies on the line ({value:.2} against {line:.2}, within \
                         the 2 % noise floor): the claim's size is the line it draws, and more \
                         trials narrow the interval, not the distance"
                    ));
                } else if let Some(factor) = check.straddles() {
                    let most = check.cells.iter().filter_map(|k| recorded.get(k)).max();
                    // The trials settling gives this check's cells (more where epochs are short).
                    let made = made.for_cells(|cap| counts.caps(sub.id, cap).least(&check.cells));
                    check.unsettle(format!(
                        "the estimate lies clear of the line but its interval reaches across \
                         it (or within the 2 % noise floor of it); {}",
                        more_trials(factor, most.copied().unwrap_or(1), &made)
                    ));
                }
            }
            sub.verdict = Verdict::of_all(sub.checks.iter().map(|c| c.verdict));
        }
        finding.verdict = Verdict::of_all(finding.sub_claims.iter().map(|s| s.verdict));
    }
}

/// How a folder was made, for what rerunning it adds to a check's trials.
enum Made<'a> {
    /// By `reproduce`: its scale and the trials a cell settling gives at most (`None`: a
    /// folder from before the manifest recorded them).
    Reproduced(Option<(&'a str, usize)>),
    /// By sweeps: their `--trials`.
    Swept,
}

impl<'a> Made<'a> {
    /// The same, with the settling cap `cap_of` gives for a scale's cap (the cap of a check's
    /// cells).
    fn for_cells(&self, cap_of: impl FnOnce(usize) -> usize) -> Made<'a> {
        match self {
            Made::Reproduced(Some((scale, cap))) => Made::Reproduced(Some((scale, cap_of(*cap)))),
            Made::Reproduced(None) => Made::Reproduced(None),
            Made::Swept => Made::Swept,
        }
    }

    /// From the manifest: the settling cap `reproduce` recorded, else whether an invocation's
    /// subcommand was `reproduce` (a folder from before the record), else sweeps.
    fn of(manifest: &'a crate::results::Manifest) -> Made<'a> {
        if let Some(cap) = &manifest.settling {
            return Made::Reproduced(Some((cap.scale.as_str(), cap.trials)));
        }
        let reproduced =
            (manifest.invocations.iter()).any(|i| subcommand(&i.command_line) == Some("reproduce"));
        if reproduced {
            Made::Reproduced(None)
        } else {
            Made::Swept
        }
    }
}

/// The subcommand of a recorded command line: its first word after the program that is not an
/// option or the value of the global `--python` (the one global option that takes a value), so
/// that `sweep cv --out reproduce` is a sweep.
fn subcommand(command_line: &[String]) -> Option<&str> {
    let mut words = command_line.iter().skip(1);
    while let Some(word) = words.next() {
        if word == "--python" {
            words.next();
        } else if !word.starts_with('-') {
            return Some(word);
        }
    }
    None
}

/// What it would take to decide a check whose estimate lies clear of the line: `factor` times
/// the trials (`None`: more than 16x), where its cells have up to `most`; and whether rerunning
/// what `made` the folder into it adds them.
fn more_trials(factor: Option<f64>, most: usize, made: &Made) -> String {
    let Some(f) = factor else {
        return "more than 16x the trials would be needed".into();
    };
    let needed = crate::analysis::findings::grown_trials(most, f);
    let about = format!("about {f:.1}x the trials would decide it ({needed} a cell");
    match made {
        Made::Reproduced(Some((scale, cap))) if needed > *cap => format!(
            "{about}, where its cells have up to {most}): more than `reproduce --scale {scale}` \
             gives a cell ({cap}), so rerunning it into the same folder adds none"
        ),
        Made::Reproduced(Some((scale, cap))) => format!(
            "{about}, within the {cap} `reproduce --scale {scale}` gives: rerunning it into the \
             same folder adds them)"
        ),
        Made::Reproduced(None) => format!("{about}, where its cells have up to {most})"),
        Made::Swept => format!(
            "{about}, where its cells have up to {most}: a sweep's `--trials {needed}` into the \
             same folder adds them)"
        ),
    }
}

/// Every paper pipeline and sample-size series measured in `results`.
pub fn observations(results: &Results, views: &[&WorkloadView]) -> Observations {
    let machine = results.manifest.machine.as_ref();
    let memory_gb = machine.map_or(f64::INFINITY, |m| m.memory_bytes as f64 / 1e9);
    let cores = machine.map_or(1, |m| m.logical_cores);
    let pipelines = views
        .iter()
        .filter(|v| v.label().tag.is_none() && !v.simulated_consumer())
        .filter_map(|view| {
            Some(Pipeline {
                pipeline: view.paper_name.clone()?,
                label: view.title(),
                storage: storage_of(view),
                // A run limited to less memory (`--memory-limit-mb`) is judged as on a machine
                // with that much.
                memory_gb: view
                    .condition
                    .memory_mb
                    .map_or(memory_gb, |mb| memory_gb.min(mb as f64 / 1e3)),
                cores,
                threads: view.max_threads(),
                strategies: view
                    .strategies
                    .iter()
                    .map(|(_, name)| strategy(results, view, name))
                    .collect(),
            })
        })
        .collect();
    Observations {
        pipelines,
        sizes: size_series(views),
    }
}

pub(crate) mod pairs;

#[cfg(test)]
mod explained;
#[cfg(test)]
pub(crate) mod tests;
