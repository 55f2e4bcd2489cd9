use super::*;

#[test]
fn the_dataset_planned_for_is_the_whole_one_where_unprocessed_read_a_part() {
    let from = |raw, sized| dataset_read(raw, sized).map(|(n, _)| n);
    // Its first 186 of 1000 items read: the plan is for the 1000.
    assert_eq!(from(Some(186), Some(1000)), Some(1000));
    assert_eq!(from(Some(1045), Some(1045)), Some(1045));
    assert_eq!(from(Some(1045), None), Some(1045));
    assert_eq!(from(None, Some(1000)), Some(1000));
    assert_eq!(from(None, None), None);
}

/// The committed `quick-bh` folder, written before the sizing was kept per condition.
fn quick_bh() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/reproducibility/quick-bh")
}

/// `recommend --json` on `dir` for 10 epochs, by throughput alone.
fn throughput_rows(dir: &Path) -> Vec<serde_json::Value> {
    let opts = RecommendOptions {
        weights: Weights(0.0, 0.0, 1.0),
        epochs: 10,
        memory_bytes: None,
        dataset_samples: None,
    };
    let rows = recommend_rows(dir, &opts, crate::markdown::Rows::Json).unwrap();
    serde_json::from_str(&rows).unwrap()
}

/// Offline time per sample is the same in every view of a workload: under the emulated
/// storage (stores sized otherwise), under tf-data (a part of a cycling store read) and
/// locally, it is what the materializations in offline.csv took for the samples they
/// processed.
#[test]
fn offline_time_per_sample_is_the_materializations_in_every_view() {
    let dir = quick_bh();
    let rows = throughput_rows(&dir);
    let offline = crate::analysis::cells::Results::load(&dir).unwrap().offline;
    let mut checked = std::collections::BTreeSet::new();
    for row in &rows {
        let (strategy, codec) = (row["strategy"].as_str().unwrap(), row["codec"].as_str());
        let (Some(codec), Some(planned)) = (codec, row["planned_samples"].as_f64()) else {
            continue;
        };
        let Some(made) = offline.iter().find_map(|((w, s, c), made)| {
            (*w == row["workload"] && s == strategy && c.to_string() == codec).then_some(made)
        }) else {
            continue;
        };
        let per_sample = (made.iter())
            .map(|(s, n)| s / n.expect("offline.csv records samples") as f64)
            .sum::<f64>()
            / made.len() as f64;
        let ours = row["offline_s"].as_f64().unwrap() / planned;
        assert!(
            (ours / per_sample - 1.0).abs() < 1e-6,
            "{row}: {ours} s a sample against the materializations' {per_sample}"
        );
        checked.insert(row["condition"].to_string());
    }
    // The local, emulated, tf-data and memory-limited views all checked.
    assert!(checked.len() >= 4, "{checked:?}");
}

/// Each view plans for the dataset its own condition's sweeps read: in `quick-bh`, whose
/// manifest kept one sizing a workload, the memory-limited sweep (the last) left 1,000 CV
/// source samples where the local sweeps had read 1,435, and the tf-data view, which read
/// 1,372 of them, planned for 1,372. Kept per condition, the local and tf-data views plan
/// for 1,435 and the memory-limited one for its own 1,000.
#[test]
fn each_view_plans_for_the_dataset_its_conditions_sweeps_read() {
    let committed = quick_bh();
    let planned = |dir: &Path| {
        (throughput_rows(dir).iter())
            .filter(|r| r["workload"] == "cv")
            .map(|r| {
                (
                    r["condition"].to_string(),
                    r["planned_samples"].as_f64().unwrap(),
                )
            })
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let find = |plans: &std::collections::BTreeMap<String, f64>, part: &str| {
        let found = plans.iter().find(|(c, _)| c.contains(part));
        *found
            .unwrap_or_else(|| panic!("no view with {part} in {plans:?}"))
            .1
    };
    // The folder as written: one entry for every condition, the memory-limited sweep's.
    let old = planned(&committed);
    assert_eq!(find(&old, "loader tf-data"), 1372.0, "{old:?}");
    assert_eq!(find(&old, "memory 256 MB"), 1000.0, "{old:?}");
    // As a sweep now writes it: an entry per condition.
    let work = tempfile::tempdir().unwrap();
    crate::results::folder::copy_tree(&committed, work.path());
    let path = work.path().join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let sizing = manifest["sizing"].as_object_mut().unwrap();
    let last = sizing["cv"].clone();
    sizing.insert("cv [memory 256 MB]".into(), last.clone());
    sizing.insert("cv [storage paper-ceph-hdd]".into(), last);
    sizing["cv"]["source_items"] = 1435.into();
    sizing["cv"]["source_samples"] = 1435.into();
    std::fs::write(&path, serde_json::to_string(&manifest).unwrap()).unwrap();
    let now = planned(work.path());
    assert_eq!(find(&now, "loader tf-data"), 1435.0, "{now:?}");
    assert_eq!(find(&now, "memory 256 MB"), 1000.0, "{now:?}");
    assert_eq!(find(&now, "storage paper-ceph-hdd"), 1000.0, "{now:?}");
    assert_eq!(now.len(), old.len(), "{now:?}");
}

#[test]
fn presto_score_by_hand() {
    // offline 0, 10, 20; storage 5, 1, 3; throughput 100, 300, 200.
    let (p, s, t) = ([0.0, 10.0, 20.0], [5.0, 1.0, 3.0], [100.0, 300.0, 200.0]);
    assert_eq!(
        scores(&p, &s, &t, Weights(0.0, 0.0, 1.0)),
        vec![0.0, 1.0, 0.5]
    );
    assert_eq!(
        scores(&p, &s, &t, Weights(1.0, 0.0, 1.0)),
        vec![1.0, 1.5, 0.5]
    );
    // storage normalised: 5 -> 1, 1 -> 0, 3 -> 0.5; inverted: 0, 1, 0.5.
    assert_eq!(
        scores(&p, &s, &t, Weights(0.0, 1.0, 0.0)),
        vec![0.0, 1.0, 0.5]
    );
    // A constant column does not separate anybody.
    assert_eq!(
        scores(
            &[0.0, 0.0],
            &[1.0, 2.0],
            &[5.0, 5.0],
            Weights(1.0, 0.0, 1.0)
        ),
        vec![1.0 + 1.0, 1.0 + 1.0]
    );
}

/// A sweep that ran the page-cache epochs of its last strategy alone (quick's
/// `--page-cache-strategies`) plans every strategy's later epochs at its cold rate: from the
/// page cache for one and cold for the others, the total over E epochs would favour it.
#[test]
fn later_epochs_are_planned_alike_where_the_page_cache_was_measured_for_some() {
    let tmp = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(quick_bh()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, tmp.path().join(path.file_name().unwrap())).unwrap();
        }
    }
    let runs = tmp.path().join("runs.csv");
    let text = std::fs::read_to_string(&runs).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (w, s, cache) = (col("workload"), col("strategy"), col("cache"));
    let mut kept = vec![header.join(",")];
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        let other = f[w] == "mp3" && f[s] != "spectrogram-encoded";
        if !(other && f[cache] == "warm") {
            kept.push(line.to_string());
        }
    }
    std::fs::write(&runs, kept.join("\n") + "\n").unwrap();
    let local_mp3 = |dir: &Path| -> Vec<serde_json::Value> {
        (throughput_rows(dir).into_iter())
            .filter(|r| r["workload"] == "mp3" && r["condition"] == "")
            .collect()
    };
    let (before, after) = (local_mp3(&quick_bh()), local_mp3(tmp.path()));
    assert!(
        before.len() >= 3 && before.len() == after.len(),
        "{before:?}"
    );
    let last = |rows: &[serde_json::Value]| {
        let r = rows
            .iter()
            .find(|r| r["strategy"] == "spectrogram-encoded")
            .unwrap();
        (r["warm_sps"].as_f64(), r["total_s"].as_f64().unwrap())
    };
    let (warm, planned_warm) = last(&before);
    assert!(warm.is_some());
    let (still, planned_cold) = last(&after);
    assert_eq!(still, warm, "its page-cache rate is still shown");
    assert!(planned_cold > planned_warm, "{planned_cold} {planned_warm}");
    for r in &after {
        let (cold, total) = (
            r["cold_sps"].as_f64().unwrap(),
            r["total_s"].as_f64().unwrap(),
        );
        let (offline, n) = (
            r["offline_s"].as_f64().unwrap(),
            r["planned_samples"].as_f64().unwrap(),
        );
        assert!(
            (total - offline - 10.0 * n / cold).abs() < 1e-6 * total,
            "{r}"
        );
    }
}
