//! What the report says of a check: the mechanism of a loader that times no stages, and
//! what an open check's trials would take.
use super::tests::{epoch_row, on_machine, range_check, unsettled};
use super::*;
use crate::analysis::findings::{Expect, SubClaim};
use crate::results::folder::Recorded;
use crate::results::RunRow;

/// A check left open says what it would take: its trials a cell, and whether the
/// reproduction that made the folder gives that many when rerun into it (quick: 16 a cell),
/// rather than promising trials its cap refuses.
#[test]
fn an_open_check_says_whether_rerunning_what_made_its_folder_adds_the_trials() {
    let quick = Made::Reproduced(Some(("quick", 16)));
    // quick-aq's 4a on NILM under tf-data: 2.9x of 8 trials a cell is 24, past quick's 16.
    let past = more_trials(Some(2.9), 8, &quick);
    assert!(
        past.contains("(24 a cell, where its cells have up to 8)"),
        "{past}"
    );
    assert!(
        past.contains("`reproduce --scale quick` gives a cell (16)"),
        "{past}"
    );
    assert!(
        past.contains("adds none") && !past.contains("adds them"),
        "{past}"
    );
    let within = more_trials(Some(2.0), 3, &quick);
    assert!(within.contains("(6 a cell, within the 16"), "{within}");
    assert!(
        within.contains("adds them") && !within.contains("adds none"),
        "{within}"
    );
    // A factor under one trial more still asks for one.
    assert!(more_trials(Some(1.1), 3, &quick).contains("(4 a cell"));
    // A sweep's folder: its own `--trials`.
    let swept = more_trials(Some(1.5), 3, &Made::Swept);
    assert!(
        swept.contains("`--trials 5` into the same folder adds them"),
        "{swept}"
    );
    // A reproduction from before its cap was recorded: no promise either way.
    let before = more_trials(Some(2.9), 8, &Made::Reproduced(None));
    assert!(
        before.ends_with("(24 a cell, where its cells have up to 8)"),
        "{before}"
    );
    assert_eq!(
        more_trials(None, 3, &quick),
        "more than 16x the trials would be needed"
    );
}

/// How a folder was made is read from its manifest: the cap `reproduce` recorded, else the
/// subcommand of an invocation (global options before it, a path named `reproduce` after it).
#[test]
fn how_a_folder_was_made_is_read_from_its_manifest() {
    let line = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
    assert_eq!(
        subcommand(&line(
            "./bin/prepbench --python /usr/bin/python3 --quiet reproduce"
        )),
        Some("reproduce")
    );
    assert_eq!(
        subcommand(&line("prepbench sweep cv --out reproduce")),
        Some("sweep")
    );
    assert_eq!(subcommand(&line("prepbench --quiet")), None);
    let mut manifest = crate::results::Manifest::default();
    let invoked = |manifest: &mut crate::results::Manifest, s: &str| {
        manifest.invocations.push(crate::results::InvocationEntry {
            command_line: line(s),
            ..Default::default()
        })
    };
    invoked(&mut manifest, "prepbench sweep cv --out reproduce");
    assert!(matches!(Made::of(&manifest), Made::Swept));
    invoked(
        &mut manifest,
        "prepbench --python python3 reproduce --scale quick",
    );
    assert!(matches!(Made::of(&manifest), Made::Reproduced(None)));
    manifest.settling = Some(crate::results::SettlingCap {
        scale: "quick".into(),
        trials: 16,
        budget_s: None,
    });
    assert!(matches!(
        Made::of(&manifest),
        Made::Reproduced(Some(("quick", 16)))
    ));
}

/// A loader that times no stages (tf.data, a DataLoader) is explained by the cores its
/// processes kept busy: tf.data's cold epochs of CV `pixel-centered` keep 1.7 of 2 cores busy
/// at 1 thread and at 2 (as in `quick-ar`), so the page cache has little to save and the
/// second thread little room; prepbench's own runs keep their stage-based mechanism.
#[test]
fn a_loader_without_stages_is_explained_by_the_cores_its_processes_kept_busy() {
    let mut rows = Vec::new();
    for (threads, busy) in [(1, 1.7), (2, 1.72)] {
        for (trial, sps) in [(0, 100.0), (1, 104.0), (2, 98.0)] {
            for epoch in [0, 1] {
                let mut row = epoch_row(
                    &format!("tf-{threads}-{trial}"),
                    "tf-data",
                    "pixel-centered",
                    epoch,
                    sps,
                );
                row.threads = threads;
                row.cpu_user_s = row.online_s * busy * 0.9;
                row.cpu_sys_s = row.online_s * busy * 0.1;
                rows.push(row);
            }
        }
    }
    // Its epochs' stage rows, as the loader's runs record them, carry no time.
    let stages = (rows.iter())
        .flat_map(|r| {
            [("read", "io"), ("step:pixel-centered", "cpu")].map(|(stage, kind)| {
                crate::results::StageRow {
                    run_id: r.run_id.clone(),
                    epoch: r.epoch,
                    stage: stage.parse().unwrap(),
                    kind: kind.parse().unwrap(),
                    seconds: 0.0,
                    share_pct: 0.0,
                }
            })
        })
        .collect();
    let results = on_machine(rows, stages, (2, 25_000_000_000));
    let cells = results.cells();
    let views = crate::analysis::report::views(&results, &cells);
    let view = views.iter().find(|v| v.name == "cv").unwrap();
    let s = strategy(&results, view, "pixel-centered");
    let cold = s.mechanism.unwrap();
    assert!(
        cold.starts_with("cpu-bound (the loader's processes kept 1.72 of 2 cores busy, 86 %"),
        "{cold}"
    );
    assert!(
        cold.contains("no stage is timed inside the loader"),
        "{cold}"
    );
    let scaling = s.scaling.unwrap().mechanism.unwrap();
    assert!(
        scaling.starts_with("1 thread: cpu-bound (the loader's processes kept 1.70 of 2")
            && scaling.contains("; 2 threads: cpu-bound (the loader's processes kept 1.72"),
        "{scaling}"
    );
    // Under a quarter of the cores kept busy is not cpu-bound.
    let mut idle = results.rows.clone();
    for row in &mut idle {
        row.cpu_user_s /= 4.0;
        row.cpu_sys_s /= 4.0;
    }
    let idle = on_machine(idle, Vec::new(), (2, 25_000_000_000));
    let cell = idle.cells().into_iter().next().unwrap();
    let m = cpu_mechanism(&idle, &cell).unwrap();
    assert!(
        m.starts_with("not cpu-bound (the loader's processes kept 0.4"),
        "{m}"
    );
}

/// A claim about the offline phase (3d) is settled by materializations, and its open check
/// counts them, not the online trials of its cells.
#[test]
fn an_open_offline_check_counts_materializations() {
    let runs: Vec<RunRow> = (0..2)
        .map(|trial| RunRow {
            run_id: format!("r{trial}"),
            trial,
            ..epoch_row("r", "native", "resized", 0, 100.0)
        })
        .collect();
    let offline = (0..5)
        .map(|trial| crate::results::OfflineRow {
            run_id: format!("o{trial}"),
            workload: "cv".into(),
            strategy: "resized".into(),
            split: 3,
            offline_trial: trial,
            offline_s: 10.0 + trial as f64,
            ..crate::results::OfflineRow::default()
        })
        .collect();
    let key = crate::analysis::cells::key_of(&runs[0]);
    let results = Results::of(Recorded {
        runs,
        offline,
        ..Recorded::default()
    });
    let expect = Expect::AtLeast {
        holds: 1.5,
        opposite: 1.0,
    };
    let open = |id: &'static str| {
        let check = range_check((1.2, 3.0), expect, &key);
        let (finding, _) = unsettled(&results, vec![SubClaim::new(id, "open", vec![check])]);
        finding.sub_claims[0].checks[0].unsettled.clone().unwrap()
    };
    assert!(
        open("3d").contains("where its cells have up to 5"),
        "{}",
        open("3d")
    );
    assert!(
        open("3a").contains("where its cells have up to 2"),
        "{}",
        open("3a")
    );
}
