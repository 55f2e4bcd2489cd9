//! The report's roofline per strategy and the prediction model's validation: every measured
//! cell beside the bounds and prediction made from the calibration in the manifest.

use std::collections::HashMap;
use std::fmt::Write;

use workloads::StorageProfile;

use workloads::Codec;

use crate::analysis::model::{self, Checked, Reading, Setting};
use crate::analysis::report::model::{Figure, Table};
use crate::analysis::svg::{Chart, Scale, Series};
use crate::results::{CacheState, Calibration};

use crate::analysis::cells::{Cell, Results};
use crate::analysis::view::WorkloadView;

/// Every cell's prediction beside its measurement, in the cells' order. Cells without a
/// calibration for their strategy and codec, null-I/O control rows and cells under an unknown
/// storage profile are left out.
pub fn check_all(results: &Results, cal: &Calibration, cells: &[Cell]) -> Vec<Checked> {
    let Some(machine) = cal.machine.as_ref() else {
        return Vec::new();
    };
    // Storage profiles by (workload, name), each resolved from the recorded workload once.
    let mut profiles: HashMap<(String, String), Option<StorageProfile>> = HashMap::new();
    let mut out = Vec::new();
    for cell in cells {
        let k = &cell.key;
        if k.cache == CacheState::NullIo || cell.throughput.median <= 0.0 {
            continue;
        }
        let (Some(s), Some(row)) = (
            cal.strategy(&k.workload, &k.strategy, k.codec),
            results.cell_rows(cell).next(),
        ) else {
            continue;
        };
        let profile = match row.emulated_storage() {
            None => None,
            Some(name) => {
                let found = profiles
                    .entry((k.workload.clone(), name.to_string()))
                    .or_insert_with(|| {
                        crate::analysis::recorded::recorded_workload(results, &k.workload)
                            .and_then(|w| w.storage_profile(name).ok())
                            .or_else(|| {
                                workloads::storage::find_profile(name, &Default::default()).ok()
                            })
                    });
                match found {
                    Some(p) => Some(p.clone()),
                    None => continue,
                }
            }
        };
        let hw = model::this_machine(machine, profile.as_ref());
        let setting = Setting {
            samples: Some(cell.samples),
            threads: k.threads,
            reading: reading(k.cache, k.condition.memory_mb, row.storage_bytes),
            consumer: row.consumer,
        };
        out.push(Checked {
            workload: k.workload.clone(),
            condition: k.condition.clone(),
            strategy: k.strategy.clone(),
            codec: k.codec,
            threads: k.threads,
            cache: k.cache,
            epoch: k.epoch,
            measured: cell.throughput.median,
            // As the measured store was laid out, not the calibration's smaller one.
            prediction: model::predict(
                &model::laid_out(s, row.shards, cell.samples as f64),
                &hw,
                &setting,
            ),
            short: !cell.long_enough(),
        });
    }
    out
}

/// How an epoch that started from `cache` reads, in a run whose memory (with its page cache)
/// was limited to `memory_mb`: a store larger than that is not held by the page cache between
/// epochs (a scan larger than an LRU cache misses throughout), so its warm epochs read as
/// cold ones do. Predicted from the page cache, 4d's warm epochs under 256 MB in a quick run
/// were predicted 3.1x what they read (4,867 samples/s against 1,590: their cold epochs read
/// 1,605).
fn reading(cache: CacheState, memory_mb: Option<u64>, store_bytes: u64) -> Reading {
    match (Reading::of(cache), memory_mb) {
        (Reading::PageCache, Some(mb)) if store_bytes as f64 > mb as f64 * 1e6 => Reading::Cold,
        (r, _) => r,
    }
}

/// Whether a cell's throughput is prepbench's engine's, which the calibration measures: a
/// loader's (tf.data's, a DataLoader's) costs per record and per step are its own, and no
/// calibration of them is made, so its cells show the engine's bounds beside what the loader
/// reached but are not predicted, nor counted in the validation. Counted, tf.data's cells of
/// `quick-bm` (median error 241 %: its fixed cost per record 65-66 us, the engine's under
/// 0.5 us) put the validation's median at 34.9 % where the engine's own cells gave 10.5 %.
fn is_engine(c: &Checked) -> bool {
    c.condition.loader.is_none()
}

/// Whether a cell ran as the calibration did (one thread, page cache, local storage, no
/// consumer): it is left out of the validation, which would otherwise check the calibration
/// against itself.
fn is_calibration_condition(c: &Checked) -> bool {
    c.threads == 1 && c.cache == CacheState::Warm && c.condition.is_plain()
}

/// The view's checked cells at its most threads, epoch 0.
fn view_checks<'c>(view: &WorkloadView, checked: &'c [Checked]) -> Vec<&'c Checked> {
    let t = view.max_threads();
    checked
        .iter()
        .filter(|c| {
            c.workload == view.name
                && c.condition == view.condition
                && c.threads == t
                && c.epoch == 0
        })
        .collect()
}

/// The roofline table of one view: bounds, the binding one, the prediction and the
/// measurement.
pub fn table(view: &WorkloadView, checked: &[Checked]) -> Option<Table> {
    let checks = view_checks(view, checked);
    if checks.is_empty() {
        return None;
    }
    let consumer = checks
        .iter()
        .any(|c| c.prediction.consumer_bound.is_finite());
    let engine = view.condition.loader.is_none();
    let mut header = vec!["strategy", "codec", "cache", "storage bound", "CPU bound"];
    if consumer {
        header.push("consumer bound");
    }
    header.push("binds");
    if engine {
        header.push("model");
    }
    header.extend(["measured (median)", "measured / bound"]);
    if engine {
        header.push("model error");
    }
    let rows: Vec<Vec<String>> = checks
        .iter()
        .map(|c| {
            let p = &c.prediction;
            let mut row = vec![
                c.strategy.clone(),
                c.codec.to_string(),
                c.cache.to_string(),
                model::sps(p.storage_bound),
                model::sps(p.cpu_bound),
            ];
            if consumer {
                row.push(model::sps(p.consumer_bound));
            }
            row.push(p.binds.to_string());
            if engine {
                row.push(model::sps(p.predicted));
            }
            row.extend([
                model::sps(c.measured),
                format!("{:.0} %", c.measured / p.bound * 100.0),
            ]);
            if engine {
                row.push(format!("{:+.0} %", c.signed_error_pct()));
            }
            row
        })
        .collect();
    Some(Table {
        rows,
        ..Table::with_columns(
            "roofline",
            format!(
                "{} threads, epoch 0; samples/s. Bounds from the calibration in the manifest (docs/measurement.md, \"Prediction model\"): storage = readers / device time per sample, capped by the storage's aggregate rate; CPU = min(threads / worker CPU, cores / (worker + consumer CPU), 1 / consumer CPU).{}",
                view.max_threads(),
                match &view.condition.loader {
                    Some(loader) => format!(" The calibration measures prepbench's engine, not the {loader} loader, whose costs per record and per step are its own: the bounds are what the engine's costs allow on this hardware, `measured / bound` how much of that the loader reached, and nothing is predicted for it."),
                    None => String::new(),
                }
            ),
            &header,
        )
    })
}

/// Measured against bound per strategy (log-log), with the line measured = bound.
pub fn plot(view: &WorkloadView, checked: &[Checked]) -> Option<Figure> {
    let checks: Vec<&Checked> = view_checks(view, checked)
        .into_iter()
        .filter(|c| c.prediction.bound.is_finite())
        .collect();
    if checks.is_empty() {
        return None;
    }
    let points: Vec<(f64, f64)> = checks
        .iter()
        .map(|c| (c.prediction.bound, c.measured))
        .collect();
    let labels = checks
        .iter()
        .map(|c| format!("{} {} {}", c.strategy, c.codec, c.cache))
        .collect();
    let lo = points
        .iter()
        .flat_map(|p| [p.0, p.1])
        .fold(f64::INFINITY, f64::min);
    let hi = points.iter().flat_map(|p| [p.0, p.1]).fold(0.0, f64::max);
    Some(Figure {
        file: format!("{}-roofline.svg", view.file_stem()),
        chart: Chart {
            title: format!("{}: measured vs roofline bound", view.title()),
            x_label: "roofline bound (samples/s)".into(),
            y_label: "measured (samples/s)".into(),
            x_scale: Scale::Log,
            y_scale: Scale::Log,
            x_categories: Vec::new(),
            x_ticks: Vec::new(),
            y_from_zero: false,
            series: vec![
                Series::labelled_dots("strategies", points, labels),
                Series::dashed_line("measured = bound", vec![(lo, lo), (hi, hi)]),
            ],
        },
    })
}

/// The cells the validation counts (prepbench's engine's, epochs long enough, not run as the
/// calibration was), with a sentence on those left out and why (empty when none are).
fn validated(checked: &[Checked]) -> (Vec<Checked>, String) {
    let (engine, loaders): (Vec<&Checked>, Vec<&Checked>) = checked
        .iter()
        .filter(|c| !is_calibration_condition(c))
        .partition(|c| is_engine(c));
    let (short, checked): (Vec<Checked>, Vec<Checked>) =
        engine.into_iter().cloned().partition(|c| c.short);
    let mut left_out = String::new();
    if !short.is_empty() {
        let _ = write!(
            left_out,
            " {} configurations with epochs under {} s are left out.",
            short.len(),
            crate::analysis::cells::MIN_EPOCH_S
        );
    }
    if !loaders.is_empty() {
        let mut names: Vec<&str> = (loaders.iter())
            .filter_map(|c| c.condition.loader.as_deref())
            .collect();
        names.sort_unstable();
        names.dedup();
        let _ = write!(
            left_out,
            " The {} configurations under the {} loader{} are not predicted: the calibration measures prepbench's engine, and a loader's costs per record and per step are its own (their roofline tables show how much of the engine's bound each reached).",
            loaders.len(),
            names.join(" and "),
            if names.len() > 1 { "s" } else { "" }
        );
    }
    (checked, left_out)
}

/// The report's "Prediction model" section: the calibration and the validation over every
/// measured cell of prepbench's engine but those run as the calibration was.
pub fn section(
    results: &Results,
    checked: &[Checked],
    cal: &Calibration,
) -> (String, serde_json::Value) {
    let mut md = String::new();
    if let Some(m) = &cal.machine {
        let _ = writeln!(
            md,
            "Calibration (`prepbench calibrate`, run at the start of each sweep): {}; {} strategies x codecs measured for one warm epoch with one worker thread.\n",
            m.summary(),
            cal.strategies.len(),
        );
    }
    let (checked, left_out) = validated(checked);
    let Some(v) = model::validate(&checked) else {
        let _ = writeln!(
            md,
            "No measured cell with epochs long enough has a calibrated strategy to validate against.{left_out}"
        );
        return (md, serde_json::Value::Null);
    };
    let _ = writeln!(md, "{}{left_out}\n", model::validation_line(&v));
    let mut worst = checked.clone();
    worst.sort_by(|a, b| b.error_pct().total_cmp(&a.error_pct()));
    let rows: Vec<Vec<String>> = worst
        .iter()
        .take(8)
        .map(|c| {
            vec![
                crate::analysis::view::titled(&c.workload, &c.condition),
                c.strategy.clone(),
                c.codec.to_string(),
                c.threads.to_string(),
                format!("{} e{}", c.cache, c.epoch),
                model::sps(c.prediction.predicted),
                model::sps(c.measured),
                format!("{:+.0} %", c.signed_error_pct()),
                c.prediction.binds.to_string(),
            ]
        })
        .collect();
    let _ = writeln!(
        md,
        "The largest errors:\n\n{}",
        crate::markdown::table(
            &[
                "workload",
                "strategy",
                "codec",
                "threads",
                "cache",
                "predicted",
                "measured",
                "error",
                "binds"
            ],
            &rows
        )
    );
    let (paper_md, paper_json) = paper_rankings(results, cal);
    md.push_str(&paper_md);
    let json =
        serde_json::json!({ "validation": v, "checked": checked, "paper_hardware": paper_json });
    (md, json)
}

/// `whatif --profile paper` for every calibrated workload with paper figures: the ranking
/// predicted on the paper's hardware from this machine's calibration against the paper's
/// measured ranking.
fn paper_rankings(results: &Results, cal: &Calibration) -> (String, serde_json::Value) {
    let hw = model::paper_hardware();
    let mut rows = Vec::new();
    let mut json = serde_json::Map::new();
    let mut agree = 0;
    for workload in cal.workloads() {
        let Some(paper) = crate::analysis::recorded::paper_name(results, workload) else {
            continue;
        };
        let ranked = model::ranking(cal, workload, Codec::None, &hw);
        let Some(a) = model::paper_agreement(&paper, &ranked) else {
            continue;
        };
        agree += usize::from(a.best_agrees);
        rows.push(vec![
            workload.to_string(),
            a.paper.join(" > "),
            a.predicted.join(" > "),
            if a.best_agrees { "yes" } else { "no" }.to_string(),
            a.tau
                .map(|(t, n)| format!("{t:.2} ({n})"))
                .unwrap_or_else(|| "-".into()),
        ]);
        json.insert(
            workload.to_string(),
            serde_json::to_value(&a).unwrap_or_default(),
        );
    }
    if rows.is_empty() {
        return (String::new(), serde_json::Value::Null);
    }
    (
        format!(
            "\nThe paper's hardware (`prepbench whatif DIR --profile paper`: 8 cores, its Ceph-over-HDD fio figures, CPU as here), predicted from this machine's calibration against the paper's measured ranking (cold, 8 threads, codec none). Best strategy right for {agree} of {} workloads:\n\n{}",
            rows.len(),
            crate::markdown::table(
                &["workload", "paper (measured)", "predicted", "best agrees", "Kendall tau (strategies)"],
                &rows
            )
        ),
        serde_json::Value::Object(json),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::model::Prediction;
    use crate::results::Condition;

    fn cell(loader: Option<&str>, threads: usize, short: bool) -> Checked {
        Checked {
            workload: "cv".into(),
            condition: Condition {
                loader: loader.map(String::from),
                ..Default::default()
            },
            strategy: "resized".into(),
            codec: Codec::None,
            threads,
            cache: CacheState::Cold,
            epoch: 0,
            measured: 100.0,
            prediction: Prediction {
                storage_bound: 1000.0,
                cpu_bound: 1200.0,
                consumer_bound: f64::INFINITY,
                bound: 1000.0,
                binds: "storage",
                predicted: 900.0,
            },
            short,
        }
    }

    #[test]
    fn a_loaders_cells_are_shown_but_not_validated() {
        let cells = [
            cell(None, 2, false),
            cell(None, 2, true),
            cell(Some("tf-data"), 2, false),
            cell(Some("tf-data"), 1, false),
            cell(Some("torch"), 2, false),
        ];
        let (counted, said) = validated(&cells);
        assert_eq!(counted.len(), 1);
        assert!(counted[0].condition.loader.is_none() && !counted[0].short);
        assert!(
            said.contains("1 configurations with epochs under"),
            "{said}"
        );
        assert!(
            said.contains(
                "The 3 configurations under the tf-data and torch loaders are not predicted"
            ),
            "{said}"
        );
        // Only the engine's: nothing to say.
        assert_eq!(validated(&cells[..1]).1, "");
    }

    #[test]
    fn warm_epochs_of_a_store_larger_than_the_runs_memory_read_from_the_device() {
        let mb = 1_000_000;
        assert_eq!(
            reading(CacheState::Warm, Some(256), 2_800 * mb),
            Reading::Cold
        );
        assert_eq!(
            reading(CacheState::Warm, Some(256), 200 * mb),
            Reading::PageCache
        );
        assert_eq!(
            reading(CacheState::Warm, None, 2_800 * mb),
            Reading::PageCache
        );
        assert_eq!(
            reading(CacheState::App, Some(256), 2_800 * mb),
            Reading::Memory
        );
        assert_eq!(
            reading(CacheState::Cold, Some(256), 200 * mb),
            Reading::Cold
        );
    }
}
