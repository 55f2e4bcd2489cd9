//! Pairing and verdicts of `compare`.

use super::*;
use crate::analysis::cells::Cell;
use crate::analysis::cells::CellKey;
use crate::analysis::stats::Summary;

fn cell(strategy: &str, threads: usize, values: &[f64]) -> Cell {
    Cell {
        key: CellKey {
            workload: "w".into(),
            condition: Default::default(),
            split: 1,
            strategy: strategy.into(),
            codec: workloads::Codec::None,
            threads,
            cache: crate::results::CacheState::Cold,
            epoch: 0,
        },
        samples: 10,
        storage_bytes: 1.0,
        throughput: Summary::of(values).unwrap(),
        // Epochs of 2 s: long enough to judge.
        online: Summary::of(&vec![2.0; values.len()]).unwrap(),
        first_sample: None,
        steady: None,
        foreign_load_pct: None,
        steal_pct: None,
        offline: None,
        offline_samples: None,
        invalid_runs: 0,
        verified: None,
        rows: Vec::new(),
    }
}

fn entry(cell: &Cell) -> Entry<'_> {
    Entry {
        cell,
        settings: settings(cell, 4),
    }
}

fn judged(a: &[Cell], b: &[Cell], opts: &CompareOptions) -> Vec<Change> {
    let (ea, eb): (Vec<Entry>, Vec<Entry>) =
        (a.iter().map(entry).collect(), b.iter().map(entry).collect());
    let pairs = ea.iter().zip(eb.iter()).collect();
    judge(pairs, opts)
}

#[test]
fn verdicts_need_significance_after_correction_and_a_change_beyond_the_noise() {
    let a = vec![
        cell("x", 2, &[100.0, 101.0, 99.0, 100.0]),
        cell("y", 2, &[100.0, 110.0, 90.0]),
        cell("z", 2, &[5.0]),
        cell("n", 2, &[100.0, 100.2, 99.8, 100.1]),
    ];
    let b = vec![
        cell("x", 2, &[150.0, 151.0, 149.0, 150.0]),
        cell("y", 2, &[101.0, 111.0, 91.0]),
        cell("z", 2, &[6.0]),
        // 1 % faster, very tight: significant, but inside the 2 % noise band.
        cell("n", 2, &[101.0, 101.2, 100.8, 101.1]),
    ];
    let list = judged(&a, &b, &CompareOptions::default());
    let get = |s: &str| list.iter().find(|c| c.strategy == s).unwrap();
    assert_eq!(get("x").verdict, ChangeVerdict::Faster);
    assert!((get("x").ratio - 1.5).abs() < 1e-12);
    assert_eq!(get("y").verdict, ChangeVerdict::NoChange);
    assert_eq!(get("z").verdict, ChangeVerdict::TooFewTrials);
    assert_eq!(get("n").verdict, ChangeVerdict::WithinNoise);
    assert!(get("n").p.unwrap() < 0.01);
    let mut slow = a[0].clone();
    slow.throughput = Summary::of(&[60.0, 61.0, 59.0, 60.0]).unwrap();
    let list = judged(&a[..1], &[slow], &CompareOptions::default());
    assert_eq!(list[0].verdict, ChangeVerdict::Slower);
    let mut short = b[0].clone();
    short.online = Summary::of(&[0.2; 4]).unwrap();
    let list = judged(&a[..1], &[short], &CompareOptions::default());
    assert_eq!(list[0].verdict, ChangeVerdict::EpochsTooShort);
    assert!(list[0].p_adjusted.is_none(), "not counted in the family");
}

/// A deterministic normal draw (Box-Muller over a 64-bit LCG).
fn normals(seed: u64, n: usize) -> Vec<f64> {
    let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    let mut uniform = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    (0..n)
        .map(|_| {
            let (u, v) = (uniform(), uniform());
            (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        })
        .collect()
}

#[test]
fn identical_configurations_give_no_changes_where_uncorrected_tests_would() {
    // 56 pairs of 3 trials each from the same distribution (5 % spread), as two sweeps of
    // one configuration on one machine: uncorrected, about 3 of them fall under p 0.05.
    let draw = |seed: u64| -> Vec<f64> {
        normals(seed, 3)
            .iter()
            .map(|z| 500.0 * (1.0 + 0.05 * z))
            .collect()
    };
    let a: Vec<Cell> = (0..56)
        .map(|i| cell(&format!("s{i}"), 2, &draw(2 * i)))
        .collect();
    let b: Vec<Cell> = (0..56)
        .map(|i| cell(&format!("s{i}"), 2, &draw(2 * i + 1)))
        .collect();
    let uncorrected = judged(&a, &b, &CompareOptions::default())
        .iter()
        .filter(|c| c.p.unwrap() < ALPHA)
        .count();
    assert!(
        uncorrected >= 1,
        "the draw should tempt an uncorrected test"
    );
    for correction in [Correction::Holm, Correction::Bh] {
        let opts = CompareOptions {
            correction,
            ..CompareOptions::default()
        };
        let list = judged(&a, &b, &opts);
        assert_eq!(list.len(), 56);
        let called: Vec<_> = list.iter().filter(|c| c.verdict.is_change()).collect();
        assert!(called.is_empty(), "{correction:?}: {} called", called.len());
        for c in &list {
            let (lo, hi) = (c.ci95_lo.unwrap(), c.ci95_hi.unwrap());
            assert!(lo > 0.0 && lo <= c.ratio && c.ratio <= hi);
        }
    }
}

#[test]
fn holm_and_bh_adjust_as_published() {
    let p = [0.01, 0.04, 0.03, 0.005];
    let holm = Correction::Holm.adjust(&p);
    // Sorted 0.005, 0.01, 0.03, 0.04 -> x4, x3, x2, x1, running maximum.
    let want = [0.03, 0.06, 0.06, 0.02];
    for (h, w) in holm.iter().zip(want) {
        assert!((h - w).abs() < 1e-12, "{holm:?}");
    }
    let bh = Correction::Bh.adjust(&p);
    // x4/1, x4/2, x4/3, x4/4, running minimum from the top.
    let want = [0.02, 0.04, 0.04, 0.02];
    for (h, w) in bh.iter().zip(want) {
        assert!((h - w).abs() < 1e-12, "{bh:?}");
    }
    assert!(Correction::Holm.adjust(&[]).is_empty());
}

#[test]
fn what_cannot_pair_names_the_settings_that_differ_and_the_way_to_pair_them() {
    let a = vec![cell("x", 2, &[1.0, 2.0])];
    let mut b = a.clone();
    b[0].key.condition.storage = Some("paper-ceph-hdd".into());
    let (ea, eb): (Vec<Entry>, Vec<Entry>) =
        (a.iter().map(entry).collect(), b.iter().map(entry).collect());
    let text = unpaired_error(Path::new("A"), Path::new("B"), &ea, &eb, Across::Machine);
    assert!(
        text.contains("they differ in storage (A: local; B: paper-ceph-hdd)")
            && text.contains("`--across storage`"),
        "{text}"
    );
    assert!(
        !text.contains("threads"),
        "equal settings are not named: {text}"
    );
    // Two settings apart: both named, no single --across offered.
    b[0].key.threads = 4;
    let eb: Vec<Entry> = b.iter().map(entry).collect();
    let text = unpaired_error(Path::new("A"), Path::new("B"), &ea, &eb, Across::Machine);
    assert!(
        text.contains("storage (A: local; B: paper-ceph-hdd)")
            && text.contains("threads (A: 2; B: 4)")
            && !text.contains("--across"),
        "{text}"
    );
}

/// Your own workload: no paper verdicts, and a best strategy left open where a faster one was
/// measured on epochs too short to judge (not the slower one judged).
#[test]
fn a_users_folder_concludes_no_paper_verdicts_and_no_best_a_short_epoch_could_overturn() {
    use crate::results::{Recorded, RunRow};
    let row = |run: &str, strategy: &str, split: usize, online_s: f64, sps: f64| RunRow {
        run_id: run.into(),
        workload: "mine".into(),
        strategy: strategy.into(),
        split,
        threads: 2,
        samples: (online_s * sps) as u64,
        online_s,
        throughput_sps: sps,
        ..RunRow::default()
    };
    let results = Results::of(Recorded {
        runs: vec![
            row("a", "decoded", 2, 2.0, 100.0),
            row("b", "decoded", 2, 2.1, 101.0),
            row("c", "aggregated", 3, 0.5, 400.0),
            row("d", "aggregated", 3, 0.5, 410.0),
        ],
        ..Recorded::default()
    });
    let cells = results.cells();
    let found = crate::analysis::compare::conclusions::conclusions_of(&results, &cells);
    assert!(found.verdicts.is_empty(), "{:?}", found.verdicts);
    assert_eq!(found.best.len(), 1);
    assert!(
        found.best[0]
            .1
            .to_string()
            .starts_with("undetermined (`aggregated`"),
        "{:?}",
        found.best
    );
}

/// A folder with runs under another loader concludes each claim under each loader apart
/// (`4a [tf-data]` beside `4a`), never pooled, so that two reproductions under both loaders
/// are compared claim by claim under each: here the page cache triples the native rate in
/// both folders, and under tf-data does nothing in A and triples it in B.
#[test]
fn each_loaders_verdicts_are_concluded_and_compared_apart() {
    use crate::analysis::cells::Results;
    use crate::analysis::compare::conclusions::Conclusions;
    use crate::analysis::findings::measured::tests::epoch_row;
    use crate::analysis::findings::Verdict;
    use crate::results::Recorded;
    let row = |run: &str, loader: &str, epoch: u64, sps: f64| {
        epoch_row(run, loader, "pixel-centered", epoch, sps)
    };
    let folder = |tf_gain: f64| {
        let mut runs = Vec::new();
        for (run, cold) in [("a", 100.0), ("b", 110.0), ("c", 95.0)] {
            runs.push(row(run, "native", 0, cold));
            runs.push(row(run, "native", 1, cold * 3.0));
            let tf = format!("tf-{run}");
            runs.push(row(&tf, "tf-data", 0, cold / 2.0));
            runs.push(row(&tf, "tf-data", 1, cold / 2.0 * tf_gain));
        }
        let results = Results::of(Recorded {
            runs,
            ..Recorded::default()
        });
        let cells = results.cells();
        crate::analysis::compare::conclusions::conclusions_of(&results, &cells)
    };
    let (a, b) = (folder(1.01), folder(3.0));
    let verdict = |c: &Conclusions, id: &str| {
        c.verdicts
            .iter()
            .find(|(i, _)| i == id)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("no {id} in {:?}", c.verdicts))
    };
    assert_eq!(verdict(&a, "4a"), Verdict::Reproduced);
    assert_eq!(verdict(&b, "4a"), Verdict::Reproduced);
    assert!(matches!(
        verdict(&a, "4a [tf-data]"),
        Verdict::NotReproduced | Verdict::Contradicted
    ));
    assert_eq!(verdict(&b, "4a [tf-data]"), Verdict::Reproduced);
    let text = crate::analysis::compare::output::conclusions(&a, &b);
    assert!(
        text.contains("| 4a | reproduced | reproduced | yes |"),
        "{text}"
    );
    let line = text
        .lines()
        .find(|l| l.starts_with("| 4a [tf-data] |"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.ends_with("| reproduced | **no** |"), "{line}");
    assert!(text.contains("- 4a [tf-data], "), "{text}");
}
