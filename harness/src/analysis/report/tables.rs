//! The report's tables per workload, as data: the paper's per-strategy table with the paper's
//! figures beside ours, compression, caching, thread scaling, where the time goes, simulated
//! training, and the dataset variants.

use workloads::Codec;

use crate::analysis::report::model::Table;
use crate::results::CacheState;

use crate::analysis::stats::ratio_ci;
use crate::analysis::svg::format_number;
use crate::analysis::view::WorkloadView;

/// A cell's throughput, mean [95 % CI]; marked `(short)` when its epochs are under the floor.
fn sps(cell: Option<&crate::analysis::cells::Cell>) -> String {
    match cell {
        None => "-".into(),
        Some(c) => {
            let short = if c.long_enough() { "" } else { " (short)" };
            match c.throughput.ci95 {
                Some((lo, hi)) => {
                    format!("{:.0} [{:.0}, {:.0}]{short}", c.throughput.mean, lo, hi)
                }
                None => format!("{:.0}{short}", c.throughput.mean),
            }
        }
    }
}

fn ratio(num: Option<f64>, den: Option<f64>) -> String {
    match (num, den) {
        (Some(n), Some(d)) if d > 0.0 => format!("{:.2}x", n / d),
        _ => "-".into(),
    }
}

/// strategy | MB/sample | storage | storage at the real dataset's size | offline | cold | warm |
/// speedup vs unprocessed | the paper's storage, throughput and speedup.
pub fn strategies(view: &WorkloadView) -> Table {
    let t = view.max_threads();
    let threads_text = crate::units::count(t as u64, "thread", "threads");
    let paper_samples = view.paper.as_ref().map(|p| p.samples);
    let caption = format!(
        "Codec none, {threads_text}; throughput in samples/s, mean [95 % CI]; cold = epoch 0 after eviction, warm = epoch 1; (short): epochs under {} s, not judged; steady = samples/s between the 10th and 90th percentile of arrivals, first = seconds to the first sample (cold).{}",
        crate::analysis::cells::MIN_EPOCH_S,
        paper_samples.map(|n| format!(" Storage extrapolated to the paper's {n} samples.")).unwrap_or_default()
    );
    // The paper's columns belong to the paper's pipelines only.
    let with_paper = view.paper.is_some();
    let mut columns = vec![
        "strategy",
        "MB/sample",
        "storage MB",
        "offline s",
        "cold",
        "steady cold",
        "first s",
        "warm",
        "speedup vs unprocessed",
    ];
    if with_paper {
        columns.insert(3, "storage at full size GB");
        columns.extend(["paper GB", "paper cold -> warm", "paper speedup"]);
    }
    let mut table = Table::with_columns("strategies", caption, &columns);
    let base = view
        .cold("unprocessed", Codec::None, t)
        .map(|c| c.throughput.mean);
    let paper_base = view
        .paper
        .as_ref()
        .and_then(|p| p.strategy("unprocessed"))
        .map(|s| s.sps_epoch0);
    for (_, name) in &view.strategies {
        let Some(cold) = view
            .cold(name, Codec::None, t)
            .or_else(|| view.warm(name, Codec::None, t))
        else {
            continue;
        };
        let warm = view.warm(name, Codec::None, t);
        let full = paper_samples
            .map(|n| format!("{:.1}", cold.mb_per_sample() * n as f64 / 1e3))
            .unwrap_or_else(|| "-".into());
        let offline = cold
            .offline
            .as_ref()
            .map(|o| format!("{:.2}", o.mean))
            .unwrap_or_else(|| "-".into());
        let paper = view.paper.as_ref().and_then(|p| p.strategy(name));
        let (paper_gb, paper_sps, paper_speedup) = match paper {
            Some(p) => (
                format!("{}", p.storage_gb),
                format!("{} -> {}", p.sps_epoch0, p.sps_epoch1),
                ratio(Some(p.sps_epoch0), paper_base),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        let mut row = vec![
            name.clone(),
            format!("{:.4}", cold.mb_per_sample()),
            format!("{:.1}", cold.storage_bytes / 1e6),
            offline,
            sps(Some(cold)),
            cold.steady
                .as_ref()
                .map_or_else(|| "-".into(), |s| format!("{:.0}", s.mean)),
            cold.first_sample
                .as_ref()
                .map_or_else(|| "-".into(), |s| format!("{:.3}", s.median)),
            sps(warm),
            ratio(Some(cold.throughput.mean), base),
        ];
        if with_paper {
            row.insert(3, full);
            row.extend([paper_gb, paper_sps, paper_speedup]);
        }
        table.rows.push(row);
    }
    table
}

/// codec x strategy: storage saved, cold throughput ratio vs none (95 % CI), offline time ratio.
pub fn compression(view: &WorkloadView) -> Option<Table> {
    let codecs: Vec<&Codec> = view.codecs.iter().filter(|c| **c != Codec::None).collect();
    if codecs.is_empty() {
        return None;
    }
    let t = view.max_threads();
    let threads_text = crate::units::count(t as u64, "thread", "threads");
    let mut table = Table::with_columns(
        "compression",
        format!("{threads_text}, cold epochs; ratios are codec / none."),
        &[
            "strategy",
            "codec",
            "storage saved",
            "throughput ratio [95 % CI]",
            "offline time ratio",
            "paper saved",
            "paper gzip / zlib ratio",
        ],
    );
    for (split, name) in view.strategies.iter().filter(|(s, _)| *s > 0) {
        let _ = split;
        let Some(none) = view.cold(name, Codec::None, t) else {
            continue;
        };
        let paper = view
            .paper
            .as_ref()
            .and_then(|p| p.compression.iter().find(|c| &c.strategy == name));
        for codec in &codecs {
            let Some(cell) = view.cold(name, **codec, t) else {
                continue;
            };
            // Per sample: stores sized by time hold different numbers of items.
            let saved = 100.0 * (1.0 - cell.mb_per_sample() / none.mb_per_sample().max(1e-12));
            let through = match ratio_ci(&none.throughput, &cell.throughput) {
                Some((r, lo, hi)) => format!("{r:.2} [{lo:.2}, {hi:.2}]"),
                None => ratio(Some(cell.throughput.mean), Some(none.throughput.mean)),
            };
            let offline = ratio(
                cell.offline.as_ref().map(|o| o.mean),
                none.offline.as_ref().map(|o| o.mean),
            );
            let (p_saved, p_ratio) = match paper {
                Some(p) => (
                    format!("{} %", p.space_saving_pct),
                    format!(
                        "{:.2} / {:.2}",
                        p.sps_gzip / p.sps_none,
                        p.sps_zlib / p.sps_none
                    ),
                ),
                None => ("-".into(), "-".into()),
            };
            table.rows.push(vec![
                name.clone(),
                codec.to_string(),
                format!("{saved:.1} %"),
                through,
                offline,
                p_saved,
                p_ratio,
            ]);
        }
    }
    Some(table)
}

/// Per strategy: cold, warm (page cache) and the warm/cold ratio, with the paper's caching row.
pub fn caching(view: &WorkloadView) -> Table {
    let t = view.max_threads();
    let threads_text = crate::units::count(t as u64, "thread", "threads");
    let mut table = Table::with_columns(
        "caching",
        format!("Codec none, {threads_text}. Page cache = epoch 1 after a cold epoch 0; application cache = epoch 1 served from the in-process cache that epoch 0 filled (`--cache app`; `-` when not measured or when the strategy did not fit)."),
        &[
            "strategy",
            "cold",
            "page cache (epoch 1)",
            "ratio",
            "application cache (epoch 1)",
            "ratio",
            "paper no cache -> system -> application",
        ],
    );
    for (_, name) in &view.strategies {
        let (cold, warm) = (
            view.cold(name, Codec::None, t),
            view.warm(name, Codec::None, t),
        );
        if cold.is_none() && warm.is_none() {
            continue;
        }
        let paper = view
            .paper
            .as_ref()
            .and_then(|p| p.caching.iter().find(|c| &c.strategy == name));
        let paper = paper
            .map(|p| {
                format!(
                    "{} -> {} -> {}",
                    p.sps_no_cache, p.sps_system_cache, p.sps_application_cache
                )
            })
            .unwrap_or_else(|| "-".into());
        let app = view.cell(name, Codec::None, t, CacheState::App, 1);
        table.rows.push(vec![
            name.clone(),
            sps(cold),
            sps(warm),
            ratio(
                warm.map(|c| c.throughput.mean),
                cold.map(|c| c.throughput.mean),
            ),
            sps(app),
            ratio(
                app.map(|c| c.throughput.mean),
                cold.map(|c| c.throughput.mean),
            ),
            paper,
        ]);
    }
    table
}

/// Per strategy and thread count: cold throughput, speedup over one thread and efficiency.
pub fn threads(view: &WorkloadView) -> Option<Table> {
    if view.threads.len() < 2 {
        return None;
    }
    let columns = std::iter::once("strategy".to_string())
        .chain(
            view.threads
                .iter()
                .map(|t| crate::units::count(*t as u64, "thread", "threads")),
        )
        .collect();
    let mut table = Table::new(
        "threads",
        "Codec none, cold epochs; each entry is samples/s (speedup over 1 thread, parallel efficiency).".into(),
        columns,
    );
    let first = view.threads[0];
    for (_, name) in &view.strategies {
        let base = view
            .cold(name, Codec::None, first)
            .map(|c| c.throughput.mean);
        let entries: Vec<String> = view
            .threads
            .iter()
            .map(|&t| match (view.cold(name, Codec::None, t), base) {
                (Some(c), Some(b)) if b > 0.0 => {
                    let speedup = c.throughput.mean / b;
                    format!(
                        "{} ({speedup:.2}x, {:.0} %)",
                        format_number(c.throughput.mean.round()),
                        100.0 * speedup * first as f64 / t as f64
                    )
                }
                (Some(c), _) => format_number(c.throughput.mean.round()),
                _ => "-".into(),
            })
            .collect();
        table
            .rows
            .push(std::iter::once(name.clone()).chain(entries).collect());
    }
    Some(table)
}

/// The sample size (MB) a dataset variant sets (`...@mb_per_sample=0.01`).
pub fn variant_mb(view: &WorkloadView) -> Option<f64> {
    view.label().variant.get("mb_per_sample")?.parse().ok()
}

/// One table for the dataset variants of a workload (e.g. the twelve synthetic sample sizes):
/// per variant and strategy, cold and warm throughput in samples/s and MB/s, codec none, at
/// the most threads measured.
pub fn variants(base: &str, group: &[&WorkloadView]) -> Table {
    let strategies: Vec<String> = {
        let mut s: Vec<(usize, String)> = group
            .iter()
            .flat_map(|v| v.strategies.iter().cloned())
            .collect();
        s.sort();
        s.dedup();
        s.into_iter().map(|(_, n)| n).collect()
    };
    let t = group.iter().map(|v| v.max_threads()).max().unwrap_or(1);
    let threads_text = crate::units::count(t as u64, "thread", "threads");
    let caption = format!(
        "{} dataset variants of `{base}`, each its own dataset; codec none, {threads_text}; cold = epoch 0 after eviction, warm = epoch 1; MB/s = samples/s x the variant's MB per sample.",
        group.len()
    );
    let mut columns = vec!["variant".to_string(), "samples".to_string()];
    for s in &strategies {
        columns.extend([
            format!("{s} cold /s"),
            format!("{s} cold MB/s"),
            format!("{s} warm MB/s"),
        ]);
    }
    let mut table = Table::new("variants", caption, columns);
    for view in group {
        let tag = view.label().tag;
        let mb = variant_mb(view);
        let samples = view.cells.first().map(|c| c.samples).unwrap_or(0);
        let mut row = vec![tag.unwrap_or_else(|| "-".into()), samples.to_string()];
        for s in &strategies {
            let cold = view.cold(s, Codec::None, t).map(|c| c.throughput.mean);
            let warm = view.warm(s, Codec::None, t).map(|c| c.throughput.mean);
            let mbps = |v: Option<f64>| match (v, mb) {
                (Some(v), Some(mb)) => format!("{:.0}", v * mb),
                _ => "-".into(),
            };
            row.extend([
                cold.map(format_number).unwrap_or_else(|| "-".into()),
                mbps(cold),
                mbps(warm),
            ]);
        }
        table.rows.push(row);
    }
    table
}

/// Per strategy (cold epoch 0, codec none, most threads, trials summed): what bounds the
/// online phase and the evidence, from `stages.csv`.
pub fn bottlenecks(
    view: &WorkloadView,
    results: &crate::analysis::cells::Results,
) -> Option<Table> {
    let t = view.max_threads();
    let threads_text = crate::units::count(t as u64, "thread", "threads");
    let mut table = Table::with_columns(
        "bottlenecks",
        format!("Codec none, {threads_text}, cold epoch 0, trials summed. Shares are of the workers' time (read = in the shard files' read calls; decompress = decompression, CRC checks and framing; step:NAME = an online step; workers:blocked = waiting for the consumer to take samples from a full queue); consumer:starved, the consumer waiting for samples, is a share of wall time. Device read MB/s and CPU busy (all cores, not idle or iowait) come from samples.csv, the system sampled every second."),
        &[
            "strategy",
            "bound",
            "evidence",
            "consumer waiting",
            "device read MB/s",
            "CPU busy",
            "CPU ms/sample",
        ],
    );
    for (_, s) in &view.strategies {
        let Some(cell) = view.cold(s, Codec::None, t) else {
            continue;
        };
        let Some((stages, wall)) = results.cell_stages(cell) else {
            continue;
        };
        let (bound, evidence) = crate::results::stages::classify(&stages);
        let consumer = stages
            .iter()
            .find(|x| x.kind == crate::results::StageKind::Consumer)
            .map(|x| {
                format!(
                    "{:.0} %",
                    crate::results::stages::share_pct(x, &stages, wall)
                )
            })
            .unwrap_or_else(|| "-".into());
        let (read, busy) = match results.cell_system(cell) {
            Some((read, busy)) => (format!("{read:.0}"), format!("{busy:.0} %")),
            None => ("-".into(), "-".into()),
        };
        // Process CPU time (user + system) per sample of the online phase.
        let (cpu, samples) = results.cell_rows(cell).fold((0.0, 0u64), |(c, n), r| {
            (c + r.cpu_user_s + r.cpu_sys_s, n + r.samples)
        });
        let cpu_ms = if samples > 0 {
            format!("{:.3}", 1e3 * cpu / samples as f64)
        } else {
            "-".into()
        };
        table.rows.push(vec![
            s.clone(),
            bound.map_or("-", crate::results::Bound::label).to_string(),
            evidence,
            consumer,
            read,
            busy,
            cpu_ms,
        ]);
    }
    (!table.rows.is_empty()).then_some(table)
}

/// Per strategy and epoch of a view with a simulated consumer (codec none, most threads): what
/// the training saw, beside the null-I/O control's utilisation (the consumer's own ceiling).
pub fn training(view: &WorkloadView, results: &crate::analysis::cells::Results) -> Option<Table> {
    let t = view.max_threads();
    let threads_text = crate::units::count(t as u64, "thread", "threads");
    let mean = |cell: &crate::analysis::cells::Cell,
                f: fn(&crate::results::RunRow) -> Option<f64>| {
        let values: Vec<f64> = results.cell_rows(cell).filter_map(f).collect();
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
    };
    let show = |v: Option<f64>, digits: usize| {
        v.map_or_else(|| "-".to_string(), |v| format!("{v:.digits$}"))
    };
    let mut table = Table::with_columns(
        "training",
        format!("Codec none, {threads_text}, means over trials. AU (accelerator utilisation) = compute time / wall time, as MLPerf Storage defines it; stall = time waiting for a batch / wall time; the null-I/O control feeds the same consumer copies of one sample from memory, so its AU is the most this consumer can reach."),
        &[
            "strategy",
            "cache",
            "epoch",
            "samples/s",
            "AU",
            "stall",
            "first batch s",
            "batch wait p50 ms",
            "p99 ms",
            "null-I/O AU",
        ],
    );
    for (_, s) in &view.strategies {
        let control = view
            .cells
            .iter()
            .find(|c| {
                c.key.strategy == *s
                    && c.key.threads == t
                    && c.key.cache == CacheState::NullIo
                    && (c.key.codec == Codec::None || c.key.split == 0)
            })
            .and_then(|c| mean(c, |r| r.au_pct));
        let mut cells: Vec<_> = view
            .cells
            .iter()
            .filter(|c| {
                c.key.strategy == *s
                    && c.key.threads == t
                    && c.key.cache != CacheState::NullIo
                    && (c.key.codec == Codec::None || c.key.split == 0)
            })
            .collect();
        cells.sort_by(|a, b| (&a.key.cache, a.key.epoch).cmp(&(&b.key.cache, b.key.epoch)));
        for cell in cells {
            let Some(au) = mean(cell, |r| r.au_pct) else {
                continue;
            };
            table.rows.push(vec![
                s.clone(),
                cell.key.cache.to_string(),
                cell.key.epoch.to_string(),
                format!("{:.0}", cell.throughput.mean),
                format!("{au:.1} %"),
                format!("{} %", show(mean(cell, |r| r.stall_pct), 1)),
                show(mean(cell, |r| r.first_batch_s), 3),
                show(mean(cell, |r| r.batch_wait_p50_ms), 2),
                show(mean(cell, |r| r.batch_wait_p99_ms), 2),
                control.map_or_else(|| "-".to_string(), |c| format!("{c:.1} %")),
            ]);
        }
    }
    (!table.rows.is_empty()).then_some(table)
}
