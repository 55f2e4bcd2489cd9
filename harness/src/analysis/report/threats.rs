//! "Threats to validity", computed from the run: what about this machine, these epochs, these
//! trials, this storage and this data limits what the report can say against the paper.

use crate::analysis::cells::{Cell, Results, MIN_EPOCH_S};
use crate::analysis::findings::{Finding, Verdict};
use crate::analysis::first_seen;
use crate::analysis::paper;
use crate::analysis::stats::median;
use crate::results::CacheState;

/// A CI half-width above this share of the mean makes a cell too noisy to rank finely.
const WIDE_CI: f64 = 0.05;

fn pct(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// The section's items, one per threat.
pub fn items(results: &Results, cells: &[Cell], found: &[Finding], paper: bool) -> Vec<String> {
    let mut out = vec![parallelism(results, cells)];
    out.extend(epochs(results));
    out.extend(trials(cells));
    out.push(load(results));
    out.extend(cold_reads(results, cells));
    out.push(storage(results, cells));
    out.push(data(results));
    out.extend(scale(results));
    // The paper's claims are about its pipelines: listed only where one of them ran.
    if paper {
        out.push(not_testable(found));
    }
    out
}

/// Cores and threads against the paper's 8.
fn parallelism(results: &Results, cells: &[Cell]) -> String {
    let cores = results.manifest.machine.as_ref().map(|m| m.logical_cores);
    let threads = cells.iter().map(|c| c.key.threads).max().unwrap_or(0);
    match cores {
        Some(cores) if cores < paper::THREADS || threads < paper::THREADS => format!(
            "**Parallelism.** {cores} cores, runs up to {threads} threads; the paper ran {} threads on 8 vCPUs. Claims about 8 threads are not testable here, and a thread count above the cores measures time-sharing, not parallelism.",
            paper::THREADS
        ),
        Some(cores) => format!(
            "**Parallelism.** {cores} cores, runs up to {threads} threads, as many as the paper's {} or more.",
            paper::THREADS
        ),
        None => "**Parallelism.** The machine's cores were not recorded.".into(),
    }
}

/// Epoch lengths and start-up, over the rows that feed the tables (cold and warm epochs).
fn epochs(results: &Results) -> Vec<String> {
    let timed: Vec<&crate::results::RunRow> = results
        .rows
        .iter()
        .filter(|r| matches!(r.cache, CacheState::Cold | CacheState::Warm))
        .collect();
    if timed.is_empty() {
        return Vec::new();
    }
    let seconds: Vec<f64> = timed.iter().map(|r| r.online_s).collect();
    let short = seconds.iter().filter(|s| **s < MIN_EPOCH_S).count();
    let mut out = vec![format!(
        "**Epoch length.** Median epoch {:.2} s; {short} of {} epochs ({:.0} %) last under {MIN_EPOCH_S} s. Those cells are marked (short) and not judged: at that length thread start, file opens and first reads weigh on the figure.",
        median(&seconds),
        seconds.len(),
        pct(short, seconds.len())
    )];
    let first: Vec<f64> = timed.iter().filter_map(|r| r.first_sample_s).collect();
    if !first.is_empty() {
        out.push(format!(
            "**Start-up.** Median time to the first sample {:.3} s; the strategies table gives steady-state throughput beside whole-epoch throughput.",
            median(&first)
        ));
    }
    out
}

/// Trials per cell and the width of their intervals.
fn trials(cells: &[Cell]) -> Option<String> {
    let judged: Vec<&Cell> = cells
        .iter()
        .filter(|c| matches!(c.key.cache, CacheState::Cold | CacheState::Warm))
        .collect();
    if judged.is_empty() {
        return None;
    }
    let trials: Vec<f64> = judged.iter().map(|c| c.throughput.n as f64).collect();
    let widths: Vec<f64> = judged
        .iter()
        .filter_map(|c| {
            let (lo, hi) = c.throughput.ci95?;
            (c.throughput.mean > 0.0).then(|| (hi - lo) / 2.0 / c.throughput.mean)
        })
        .collect();
    let wide = widths.iter().filter(|w| **w > WIDE_CI).count();
    Some(format!(
        "**Trials.** Median {:.0} trials per cell; {} cells have a 95 % CI; its median half-width is {:.1} % of the mean, and {wide} cells ({:.0} %) are wider than {:.0} %. Ratios between such cells are judged on their intervals, not their means.",
        median(&trials),
        widths.len(),
        100.0 * if widths.is_empty() { 0.0 } else { median(&widths) },
        pct(wide, widths.len()),
        100.0 * WIDE_CI
    ))
}

/// What other processes and the hypervisor took during the epochs.
fn load(results: &Results) -> String {
    let load: Vec<f64> = results
        .rows
        .iter()
        .filter_map(|r| r.foreign_load_pct)
        .collect();
    let steal: Vec<f64> = results.rows.iter().filter_map(|r| r.steal_pct).collect();
    if load.is_empty() {
        return "**Other load.** Not recorded (runs from before prepbench measured it, or no /proc/stat).".into();
    }
    format!(
        "**Other load.** Other processes used a median {:.1} % (max {:.1} %) of the machine during the epochs; the hypervisor stole a median {:.1} % (max {:.1} %). Runs above {:.0} % of the two were measured again.",
        median(&load),
        load.iter().copied().fold(0.0, f64::max),
        if steal.is_empty() { 0.0 } else { median(&steal) },
        steal.iter().copied().fold(0.0, f64::max),
        crate::results::rows::HEAVY_FOREIGN_LOAD_PCT
    )
}

/// Cold epochs reading at least this much are compared by their kernel time per GB.
const COLD_READ_MIN_BYTES: u64 = 256 << 20;

/// How much the kernel time of cold reads varied: on a VM whose free memory goes back to the
/// hypervisor, the page cache a cold epoch fills comes back through faults into the host, at a
/// cost that changes from one epoch to the next (docs/measurement.md, "Cold reads on a VM").
/// Said where a cell's cold epochs differ more than 2x in kernel time per GB, or the machine
/// is known to give its memory back.
fn cold_reads(results: &Results, cells: &[Cell]) -> Option<String> {
    let per_gb = |r: &crate::results::RunRow| {
        (r.read_bytes >= COLD_READ_MIN_BYTES && !r.read_remote())
            .then(|| r.cpu_sys_s / (r.read_bytes as f64 / 1e9))
    };
    let cold: Vec<&Cell> = cells
        .iter()
        .filter(|c| c.key.cache == CacheState::Cold)
        .collect();
    let spreads: Vec<(f64, Vec<f64>)> = cold
        .iter()
        .filter_map(|c| {
            let v: Vec<f64> = results.cell_rows(c).filter_map(per_gb).collect();
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(0.0, f64::max);
            (v.len() >= 2 && lo > 0.0).then_some((hi / lo, v))
        })
        .collect();
    let held = held_off(results);
    let reporting = results
        .manifest
        .machine
        .as_ref()
        .and_then(|m| m.free_page_reporting)
        == Some(true)
        && held.is_none();
    let wide = spreads.iter().filter(|(s, _)| *s > 2.0).count();
    if spreads.is_empty() || (wide == 0 && !reporting) {
        return None;
    }
    let all: Vec<f64> = spreads
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .collect();
    let worst = spreads.iter().map(|(s, _)| *s).fold(0.0, f64::max);
    let why = if reporting {
        let cold_rows: Vec<_> = cold.iter().flat_map(|c| results.cell_rows(c)).collect();
        let primed = cold_rows.iter().filter(|r| r.primed()).count();
        let longest_s = cold_rows.iter().map(|r| r.online_s).fold(0.0, f64::max);
        format!(
            " This machine gives its free memory back to the hypervisor (a virtio balloon with free page reporting): the page cache a cold epoch fills comes back through faults into the host, at a cost that depends on how much page cache the eviction before it freed (docs/measurement.md, \"Cold reads on a VM\"). {primed} of {} cold epochs first read what their eviction would not free (`read+` in `evict_method`), so that each started as one whose store was resident until its eviction.{}",
            cold_rows.len(),
            reporter_race(results, longest_s)
        )
    } else {
        held.unwrap_or_default()
    };
    Some(format!(
        "**Cold reads.** Cold epochs spent {:.2} to {:.2} s of kernel time per GB read (median {:.2}); within one cell the most and the least differed up to {worst:.1}x, more than 2x in {wide} of {} cells.{why} Intervals carry this variation, and settling adds trials where it straddles a threshold.",
        all.iter().copied().fold(f64::INFINITY, f64::min),
        all.iter().copied().fold(0.0, f64::max),
        median(&all),
        spreads.len(),
    ))
}

/// Where every invocation that ran the cold epochs held the machine's free page reporter off
/// (`--page-reporting hold`, or set off before it), a sentence saying so: their page cache
/// was not taken back by the hypervisor.
fn held_off(results: &Results) -> Option<String> {
    let states: Vec<_> = results
        .manifest
        .invocations
        .iter()
        .map(|i| i.page_reporting.as_ref())
        .collect();
    let first = (*states.first()?)?;
    states.iter().all(|s| s.is_some_and(|s| s.off())).then(|| {
        format!(
            " This machine gives its free memory back to the hypervisor (a virtio balloon with free page reporting); the reporter was held off while the epochs ran (`page_reporting_order` {} -> {}, past the allocator's largest order {}), so no cold epoch waited on memory the hypervisor took back (docs/measurement.md, \"Cold reads on a VM\").",
            first.order_was, first.order_during, first.largest_order
        )
    })
}

/// Where the free page reporter may hand pages back sooner than the longest cold epoch lasts
/// (`min_free_ms` recorded by an invocation), a sentence saying so and what removes it.
fn reporter_race(results: &Results, longest_s: f64) -> String {
    let soonest = results
        .manifest
        .invocations
        .iter()
        .filter_map(|i| i.page_reporting_min_free_ms)
        .min();
    match soonest {
        Some(ms) if (ms as f64) < longest_s * 1000.0 => format!(
            " Its free page reporter may hand a page back once it has been free {ms} ms (`min_free_ms` under /sys/module/page_reporting/parameters), sooner than the longest cold epoch lasted ({longest_s:.1} s): it can take back what an eviction just freed while the epoch reads. Raised above an epoch's length on another VM, it sped up a 3 GB read right after its drop, but over a whole quick reproduction it changed neither the share of slow cold epochs nor the verdicts. Held off (`--page-reporting hold`, the default, as root), the reporter takes nothing back (docs/measurement.md)."
        ),
        _ => String::new(),
    }
}

/// Where the stores were, and what ran under emulated network storage.
fn storage(results: &Results, cells: &[Cell]) -> String {
    let emulated = first_seen(cells.iter().filter_map(|c| {
        let profile = c.key.condition.storage.as_ref()?;
        Some(format!("{} ({profile})", c.key.workload))
    }));
    let places = first_seen(
        results
            .manifest
            .invocations
            .iter()
            .filter_map(|i| i.store_dir.filesystem.as_ref())
            .map(|f| format!("{} on {}", f.fs_type, f.device)),
    );
    format!(
        "**Storage.** The paper read from HDD-backed Ceph over a 10 Gb/s network. Here stores were on {}{}.",
        if places.is_empty() {
            "an unrecorded file system".to_string()
        } else {
            places.join(", ")
        },
        if emulated.is_empty() {
            "; nothing ran under an emulated network storage profile, so the network-storage claims are not testable".to_string()
        } else {
            format!(
                "; under an emulated network profile (bandwidth, latency and small-file limits applied in user space, not the kernel's I/O path): {}",
                emulated.join(", ")
            )
        }
    )
}

/// Whether the data was generated or the user's own.
fn data(results: &Results) -> String {
    let generated = results
        .manifest
        .invocations
        .iter()
        .filter_map(|i| i.dataset_generated)
        .collect::<Vec<bool>>();
    if generated.is_empty() {
        "**Data.** Whether the datasets were generated was not recorded.".into()
    } else if generated.iter().all(|g| *g) {
        "**Data.** Every dataset was generated by prepbench to the real datasets' sizes per sample, not the real ImageNet, Cube++, OpenWebText, CREAM, Common Voice or LibriSpeech: costs that depend on content (JPEG entropy, text length, audio) are approximated.".into()
    } else if generated.iter().any(|g| *g) {
        "**Data.** Some datasets were generated by prepbench, others are the user's own.".into()
    } else {
        "**Data.** Every dataset is the user's own (none generated).".into()
    }
}

/// Samples per epoch against the paper's full datasets.
fn scale(results: &Results) -> Option<String> {
    let scale: Vec<String> = results
        .manifest
        .workloads
        .values()
        .filter_map(|w| {
            let p = paper::pipeline(&crate::analysis::recorded::paper_name(results, &w.name)?)?;
            let samples = results
                .rows
                .iter()
                .filter(|r| r.workload == w.name)
                .map(|r| r.samples / r.passes.max(1))
                .max()?;
            Some(format!("{} {samples} of {}", w.name, p.samples))
        })
        .collect();
    (!scale.is_empty()).then(|| format!(
        "**Scale.** Samples per epoch against the paper's full datasets: {}. Storage beyond memory and full-dataset offline times are extrapolated, not measured.",
        scale.join(", ")
    ))
}

/// The paper's claims not testable here, each with its reason.
fn not_testable(found: &[Finding]) -> String {
    let untestable: Vec<String> = found
        .iter()
        .flat_map(|f| &f.sub_claims)
        .filter(|s| s.verdict == Verdict::NotTestable)
        .map(|s| {
            // The checks' own reasons (epochs, trials), else the claim's note (storage, cores).
            let why = s
                .checks
                .first()
                .map(|c| c.measured.clone())
                .or_else(|| s.note.clone())
                .unwrap_or_else(|| "nothing measured".into());
            format!("{} ({why})", s.id)
        })
        .collect();
    if untestable.is_empty() {
        "**Not testable.** Every claim of the paper was testable here.".into()
    } else {
        format!(
            "**Not testable here:** {} of 17 claims: {}.",
            untestable.len(),
            untestable.join("; ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::folder::Recorded;
    use crate::results::RunRow;

    fn cold(run: &str, trial: usize, sys_s: f64) -> RunRow {
        RunRow {
            run_id: run.into(),
            workload: "w".into(),
            strategy: "s".into(),
            trial,
            cache: CacheState::Cold,
            samples: 100,
            online_s: 2.0,
            throughput_sps: 50.0,
            read_bytes: 2_000_000_000,
            cpu_sys_s: sys_s,
            evict_method: "drop_caches".into(),
            ..RunRow::default()
        }
    }

    /// `rows` recorded on this machine, said to report free pages or not.
    fn recorded(rows: Vec<RunRow>, reporting: Option<bool>) -> Results {
        let mut results = Results::of(Recorded {
            runs: rows,
            ..Default::default()
        });
        let mut machine = crate::results::system::machine();
        machine.free_page_reporting = reporting;
        results.manifest.machine = Some(machine);
        results
    }

    fn said(rows: Vec<RunRow>, reporting: Option<bool>) -> Option<String> {
        let results = recorded(rows, reporting);
        cold_reads(&results, &results.cells())
    }

    #[test]
    fn cold_reads_that_differ_in_kernel_time_are_named_with_the_cause_where_known() {
        // 0.4 and 1.75 s per GB in one cell: 4.4x apart.
        let apart = || vec![cold("a", 0, 0.8), cold("b", 1, 3.5)];
        let text = said(apart(), Some(false)).expect("a 4.4x spread is named");
        assert!(text.contains("0.40 to 1.75 s"), "{text}");
        assert!(
            text.contains("up to 4.4x, more than 2x in 1 of 1 cells"),
            "{text}"
        );
        assert!(!text.contains("balloon"), "{text}");
        let text = said(apart(), Some(true)).unwrap();
        assert!(text.contains("free page reporting"), "{text}");
        assert!(text.contains("0 of 2 cold epochs first read"), "{text}");
        let mut primed = apart();
        primed[1].evict_method = "read+drop_caches".into();
        let text = said(primed, Some(true)).unwrap();
        assert!(text.contains("1 of 2 cold epochs first read"), "{text}");
        // Alike cold reads say nothing, unless the machine gives its memory back.
        let alike = || vec![cold("a", 0, 0.8), cold("b", 1, 0.9)];
        assert_eq!(said(alike(), Some(false)), None);
        assert!(said(alike(), Some(true)).is_some());
        // Small reads and reads from object storage are not compared.
        let mut small = apart();
        small[1].read_bytes = 1 << 20;
        assert_eq!(said(small, Some(true)), None);
        let mut remote = apart();
        remote[0].evict_method = crate::results::rows::EVICT_REMOTE.into();
        assert_eq!(said(remote, Some(true)), None);
    }

    /// Where an invocation recorded a reporter that may take pages back sooner than the
    /// longest cold epoch lasted (2 s here), the threat names it; not where it waits longer,
    /// nor where the kernel has no such setting.
    #[test]
    fn a_reporter_quicker_than_a_cold_epoch_is_named() {
        let with = |ms: Option<u64>| {
            let mut results = recorded(vec![cold("a", 0, 0.8), cold("b", 1, 3.5)], Some(true));
            results.manifest.invocations = vec![crate::results::InvocationEntry {
                run_ids: vec!["a".into(), "b".into()],
                page_reporting_min_free_ms: ms,
                ..Default::default()
            }];
            cold_reads(&results, &results.cells()).unwrap()
        };
        let text = with(Some(0));
        assert!(
            text.contains("once it has been free 0 ms (`min_free_ms`"),
            "{text}"
        );
        assert!(text.contains("longest cold epoch lasted (2.0 s)"), "{text}");
        assert!(!with(Some(5000)).contains("min_free_ms"));
        assert!(!with(None).contains("min_free_ms"));
    }

    /// Where every invocation held the reporter off, the threat says so in place of the
    /// balloon's cost and the reporter's race; one invocation that left it on brings them back.
    #[test]
    fn a_reporter_held_off_is_said_in_place_of_its_cost() {
        use crate::measure::page_reporting::ReportingState;
        let state = |during| ReportingState {
            order_was: 9,
            order_during: during,
            largest_order: 10,
            left_on: None,
        };
        let with = |states: Vec<ReportingState>| {
            let mut results = recorded(vec![cold("a", 0, 0.8), cold("b", 1, 3.5)], Some(true));
            results.manifest.invocations = states
                .into_iter()
                .map(|s| crate::results::InvocationEntry {
                    page_reporting_min_free_ms: Some(0),
                    page_reporting: Some(s),
                    ..Default::default()
                })
                .collect();
            cold_reads(&results, &results.cells()).unwrap()
        };
        let text = with(vec![state(11), state(11)]);
        assert!(
            text.contains("held off while the epochs ran (`page_reporting_order` 9 -> 11"),
            "{text}"
        );
        assert!(
            !text.contains("min_free_ms") && !text.contains("first read"),
            "{text}"
        );
        let text = with(vec![state(11), state(9)]);
        assert!(!text.contains("held off"), "{text}");
        assert!(
            text.contains("min_free_ms") && text.contains("first read"),
            "{text}"
        );
    }
}
