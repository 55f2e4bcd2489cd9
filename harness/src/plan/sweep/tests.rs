//! The sweep's matrix, order and resumption, on small real sweeps where it needs one.
use super::*;
use crate::plan::options::TrialTarget;
use crate::progress::Progress;

fn cv() -> Workload {
    workloads::load("cv").unwrap()
}

#[test]
fn plan_crosses_settings_and_gives_unprocessed_one_codec() {
    let opts = SweepOptions {
        workload: "cv".into(),
        strategies: Some(vec!["unprocessed".into(), "resized".into()]),
        codecs: Some(vec![Codec::None, Codec::Gzip { level: 6 }]),
        threads: Some(vec![1, 2]),
        cache: Some(vec![CacheMode::Cold]),
        trials: Some(3),
        ..Default::default()
    };
    let plan = Plan::new(&cv(), &opts).unwrap();
    // unprocessed: 1 codec x 2 threads x 3 trials; resized: 2 codecs x 2 x 3.
    assert_eq!(plan.cells.len(), 6 + 12);
    let ids: HashSet<String> = plan
        .cells
        .iter()
        .map(|c| plan.run_id(&cv(), 0, c))
        .collect();
    assert_eq!(ids.len(), plan.cells.len(), "run ids are unique");
    assert_eq!(
        plan.run_id(&cv(), 0, &plan.cells[0]),
        plan.run_id(&cv(), 0, &plan.cells[0])
    );
    assert_ne!(
        plan.run_id(&cv(), 1, &plan.cells[0]),
        plan.run_id(&cv(), 0, &plan.cells[0])
    );
}

#[test]
fn a_setting_listed_twice_is_one_setting_not_two_of_the_same_trials() {
    let twice = SweepOptions {
        workload: "cv".into(),
        strategies: Some(vec![
            "resized".into(),
            "unprocessed".into(),
            "resized".into(),
        ]),
        codecs: Some(vec![Codec::None, Codec::None]),
        threads: Some(vec![2, 1, 2]),
        cache: Some(vec![CacheMode::Cold, CacheMode::Cold]),
        storage: Some(vec!["local".into(), "local".into()]),
        trials: Some(3),
        ..Default::default()
    };
    let once = SweepOptions {
        strategies: Some(vec!["resized".into(), "unprocessed".into()]),
        codecs: Some(vec![Codec::None]),
        threads: Some(vec![2, 1]),
        cache: Some(vec![CacheMode::Cold]),
        storage: Some(vec!["local".into()]),
        ..twice.clone()
    };
    let (twice, once) = (
        Plan::new(&cv(), &twice).unwrap(),
        Plan::new(&cv(), &once).unwrap(),
    );
    // 2 strategies x 2 thread counts x 3 trials, each run once.
    assert_eq!(once.cells.len(), 12);
    let ids = |plan: &Plan| -> Vec<(String, usize)> {
        plan.cells
            .iter()
            .map(|c| (plan.run_id(&cv(), 0, c), c.trial))
            .collect()
    };
    assert_eq!(ids(&twice), ids(&once));
}

#[test]
fn loader_options_are_checked_and_other_options_are_other_runs() {
    let mut opts = SweepOptions {
        workload: "cv".into(),
        strategies: Some(vec!["resized".into()]),
        codecs: Some(vec![Codec::None]),
        threads: Some(vec![2]),
        cache: Some(vec![CacheMode::Cold]),
        trials: Some(1),
        ..Default::default()
    };
    opts.settings.loader_options = Some("batch=64".into());
    // Options no loader of the sweep takes are refused, naming the loader.
    let err = Plan::new(&cv(), &opts).err().unwrap().to_string();
    assert!(
        err.contains("--loader-options") && err.contains("native"),
        "{err}"
    );
    opts.settings.loader_options = None;
    let mut plan = Plan::new(&cv(), &opts).unwrap();
    assert_eq!(plan.loader_options("native"), "");
    // A torch cell (cv's steps are refused under torch, so set by hand): its options enter
    // the run id only when they differ from the defaults, so default runs keep their ids.
    let mut cell = plan.cells[0].clone();
    cell.loader = "torch";
    let defaults = crate::results::rows::default_loader_options("torch").to_string();
    plan.loader_options = vec![("torch", defaults.clone())];
    let default_id = plan.run_id(&cv(), 0, &cell);
    plan.loader_options = vec![("torch", defaults.replace("batch=32", "batch=64"))];
    assert_ne!(plan.run_id(&cv(), 0, &cell), default_id);
    assert_ne!(plan.run_id(&cv(), 0, &plan.cells[0]), default_id);
}

#[test]
fn thread_scaling_can_be_limited_to_some_strategies() {
    let mut opts = SweepOptions {
        workload: "cv".into(),
        strategies: Some(vec!["unprocessed".into(), "resized".into()]),
        codecs: Some(vec![Codec::None]),
        threads: Some(vec![1, 2]),
        cache: Some(vec![CacheMode::Cold]),
        trials: Some(2),
        scaling_strategies: Some(vec!["resized".into()]),
        ..Default::default()
    };
    let plan = Plan::new(&cv(), &opts).unwrap();
    let cells: Vec<(&str, usize)> = plan
        .cells
        .iter()
        .map(|c| (c.strategy.name.as_str(), c.threads))
        .collect();
    // resized at 1 and 2 threads, unprocessed at 2 only; 2 trials each.
    assert_eq!(cells.len(), 6, "{cells:?}");
    assert!(!cells.contains(&("unprocessed", 1)), "{cells:?}");
    assert!(cells.contains(&("resized", 1)), "{cells:?}");
    opts.scaling_strategies = Some(vec!["decodedd".into()]);
    let err = Plan::new(&cv(), &opts).err().unwrap().to_string();
    assert!(err.contains("decodedd"), "{err}");
}

#[test]
fn the_application_cache_can_be_limited_to_some_strategies_at_the_most_threads() {
    let mut opts = SweepOptions {
        workload: "cv".into(),
        strategies: Some(vec![
            "unprocessed".into(),
            "resized".into(),
            "pixel-centered".into(),
        ]),
        codecs: Some(vec![Codec::None]),
        threads: Some(vec![1, 2]),
        cache: Some(vec![CacheMode::Cold, CacheMode::App]),
        trials: Some(1),
        app_cache_strategies: Some(vec!["pixel-centered".into()]),
        ..Default::default()
    };
    let plan = Plan::new(&cv(), &opts).unwrap();
    let app: Vec<(&str, usize)> = plan
        .cells
        .iter()
        .filter(|c| c.cache == CacheMode::App)
        .map(|c| (c.strategy.name.as_str(), c.threads))
        .collect();
    assert_eq!(app, vec![("pixel-centered", 2)]);
    // Every strategy still runs cold at every count.
    assert_eq!(
        plan.cells
            .iter()
            .filter(|c| c.cache == CacheMode::Cold)
            .count(),
        6
    );
    opts.app_cache_strategies = Some(vec!["unprocessed".into()]);
    let err = Plan::new(&cv(), &opts).err().unwrap().to_string();
    assert!(
        err.contains("`unprocessed`") && err.contains("does not store"),
        "{err}"
    );
}

#[test]
fn the_page_cache_epochs_can_be_limited_to_some_strategies() {
    let mut opts = SweepOptions {
        workload: "cv".into(),
        strategies: Some(vec!["unprocessed".into(), "pixel-centered".into()]),
        codecs: Some(vec![Codec::None]),
        threads: Some(vec![2]),
        cache: Some(vec![CacheMode::Cold, CacheMode::App]),
        trials: Some(1),
        page_cache_strategies: Some(vec!["pixel-centered".into()]),
        ..Default::default()
    };
    let plan = Plan::new(&cv(), &opts).unwrap();
    let epochs: Vec<(&str, CacheMode, u64)> = (plan.cells.iter())
        .map(|c| (c.strategy.name.as_str(), c.cache, plan.epochs_of(c)))
        .collect();
    assert_eq!(
        epochs,
        vec![
            ("unprocessed", CacheMode::Cold, 1),
            ("pixel-centered", CacheMode::Cold, 2),
            ("pixel-centered", CacheMode::App, 2),
        ]
    );
    // A run of one epoch is another definition: its own id, and its spec runs one epoch.
    let w = cv();
    let whole = Plan::new(
        &w,
        &SweepOptions {
            page_cache_strategies: None,
            ..opts.clone()
        },
    );
    let whole = whole.unwrap();
    assert_ne!(
        plan.run_id(&w, 0, &plan.cells[0]),
        whole.run_id(&w, 0, &whole.cells[0])
    );
    assert_eq!(
        plan.run_id(&w, 0, &plan.cells[1]),
        whole.run_id(&w, 0, &whole.cells[1])
    );
    let settings = crate::plan::settings::Settings::default();
    let spec = plan.spec(&plan.cells[0], "r".into(), None, &settings);
    assert_eq!(spec.epochs, 1);
    opts.page_cache_strategies = Some(vec!["decoded".into()]);
    let err = Plan::new(&cv(), &opts).err().unwrap().to_string();
    assert!(
        err.contains("`decoded`") && err.contains("does not run"),
        "{err}"
    );
}

#[test]
fn trials_asked_for_run_once_and_reuse_the_stores_verdict() {
    use crate::analysis::cells::CellKey;
    use crate::measure::cache::EvictPolicy;
    use crate::results::{CacheState, Condition, Tables};
    let tmp = tempfile::tempdir().unwrap();
    let places = Places {
        out: tmp.path().join("out"),
        data_dir: tmp.path().join("data"),
        dataset: None,
        store_dir: tmp.path().join("store"),
        evict: EvictPolicy::Fadvise,
        progress: Progress { quiet: true },
    };
    let opts = SweepOptions {
        workload: "cv".into(),
        strategies: Some(vec!["resized".into()]),
        codecs: Some(vec![Codec::None]),
        threads: Some(vec![1]),
        cache: Some(vec![CacheMode::Cold]),
        trials: Some(2),
        offline_trials: 1,
        settings: Settings {
            samples: Some(6),
            shards: Some(1),
            epochs: Some(1),
            verify: true,
            ..Settings::default()
        },
        ..Default::default()
    };
    assert_eq!(sweep(&opts, &places, Vec::new()).unwrap().ran, 2);
    let target = TrialTarget {
        key: CellKey {
            workload: "cv".into(),
            condition: Condition::default(),
            split: 2,
            strategy: "resized".into(),
            codec: Codec::None,
            threads: 1,
            cache: CacheState::Cold,
            epoch: 0,
        },
        trials: 4,
    };
    let asked = SweepOptions {
        trials_at_least: vec![target],
        ..opts.clone()
    };
    assert_eq!(sweep(&asked, &places, Vec::new()).unwrap().ran, 2);
    // Asked again, or the plain sweep resumed: nothing more.
    assert_eq!(sweep(&asked, &places, Vec::new()).unwrap().ran, 0);
    assert_eq!(sweep(&opts, &places, Vec::new()).unwrap().ran, 0);
    let rows = Tables::open(&places.out).unwrap().runs.read().unwrap();
    let ids: HashSet<&str> = rows.iter().map(|r| r.run_id.as_str()).collect();
    assert_eq!((rows.len(), ids.len()), (4, 4));
    // The added trials carry the verdict of the store they read, verified once.
    assert!(rows.iter().all(|r| r.verified == Some(Verdict::Pass)));
}

#[test]
fn variants_are_spread_with_the_ends_kept() {
    let sizes: Vec<u32> = (0..12).collect();
    assert_eq!(spread(sizes.clone(), Some(4)), vec![0, 3, 7, 11]);
    assert_eq!(spread(sizes.clone(), None), sizes);
    assert_eq!(spread(sizes.clone(), Some(20)), sizes);
    assert_eq!(spread(sizes, Some(1)), vec![0]);
}

#[test]
fn shuffling_is_seeded_and_interleaves() {
    let items: Vec<u32> = (0..50).collect();
    let a = shuffled(items.clone(), 7);
    assert_eq!(a, shuffled(items.clone(), 7));
    assert_ne!(a, shuffled(items.clone(), 8));
    assert_ne!(a, items);
    let mut sorted = a.clone();
    sorted.sort();
    assert_eq!(sorted, items);
}

/// Runs go trial by trial, each strategy's runs of a trial side by side (its codecs and
/// thread counts, so that the settings a check compares meet the same moment of the machine),
/// the strategies in a seeded order that differs from trial to trial.
#[test]
fn runs_go_trial_by_trial_with_a_strategys_settings_side_by_side() {
    let opts = SweepOptions {
        workload: "cv".into(),
        strategies: Some(vec![
            "decoded".into(),
            "resized".into(),
            "pixel-centered".into(),
        ]),
        codecs: Some(vec![Codec::None, Codec::Gzip { level: 6 }]),
        threads: Some(vec![1, 2]),
        cache: Some(vec![CacheMode::Cold]),
        trials: Some(4),
        ..Default::default()
    };
    let plan = Plan::new(&cv(), &opts).unwrap();
    let order = crate::plan::matrix::run_order(plan.cells.clone(), 7);
    assert_eq!(order, crate::plan::matrix::run_order(plan.cells.clone(), 7));
    assert_eq!(order.len(), plan.cells.len());
    let ids = |cells: &[Cell]| -> HashSet<String> {
        cells.iter().map(|c| plan.run_id(&cv(), 0, c)).collect()
    };
    assert_eq!(ids(&order), ids(&plan.cells), "every run once");
    assert!(order.windows(2).all(|w| w[0].trial <= w[1].trial));
    let mut strategy_orders = HashSet::new();
    for trial in 0..4 {
        let block: Vec<&str> = (order.iter().filter(|c| c.trial == trial))
            .map(|c| c.strategy.name.as_str())
            .collect();
        assert_eq!(block.len(), 12);
        let mut runs: Vec<&str> = block.clone();
        runs.dedup();
        assert_eq!(runs.len(), 3, "a strategy's runs side by side: {block:?}");
        strategy_orders.insert(runs.join(","));
    }
    assert!(strategy_orders.len() > 1, "{strategy_orders:?}");
    // Within a strategy the codecs and threads are shuffled: kept in the matrix's order, all
    // twelve (trial, strategy) runs would list their settings alike.
    let mut sequences = HashSet::new();
    for trial in 0..4 {
        for name in ["decoded", "resized", "pixel-centered"] {
            let settings: Vec<(Codec, usize)> = (order.iter())
                .filter(|c| c.trial == trial && c.strategy.name == name)
                .map(|c| (c.codec, c.threads))
                .collect();
            sequences.insert(settings);
        }
    }
    assert!(sequences.len() > 1, "{sequences:?}");
}

/// The application cache is refused, before anything runs or any interpreter is asked, for
/// a loader that has none (torch: its workers are processes of their own), naming the option
/// and what to use; prepbench's own engine plans it.
#[test]
fn the_application_cache_is_refused_under_a_loader_without_one() {
    let mut opts = SweepOptions {
        workload: "cv".into(),
        strategies: Some(vec!["resized".into()]),
        codecs: Some(vec![Codec::None]),
        threads: Some(vec![2]),
        cache: Some(vec![CacheMode::Cold, CacheMode::App]),
        trials: Some(1),
        loaders: Some(vec!["torch".into()]),
        ..Default::default()
    };
    let err = Plan::new(&cv(), &opts).err().unwrap().to_string();
    assert!(
        err.contains("--cache app") && err.contains("torch") && err.contains("tf-data"),
        "{err}"
    );
    opts.loaders = Some(vec!["native".into()]);
    let plan = Plan::new(&cv(), &opts).unwrap();
    assert!(plan.cells.iter().any(|c| c.cache == CacheMode::App));
    for engine in crate::measure::online::ENGINES {
        let refused = engine.app_cache_refusal().is_some();
        assert_eq!(refused, engine.name() == "torch", "{}", engine.name());
    }
}

/// `--max-trials` at or below the trials every setting runs adds none: refused, naming where
/// those trials come from, rather than silently ignored.
#[test]
fn max_trials_that_add_none_are_refused() {
    let mut opts = SweepOptions {
        workload: "cv".into(),
        trials: Some(3),
        max_trials: Some(3),
        ..Default::default()
    };
    let err = Plan::new(&cv(), &opts).err().unwrap().to_string();
    assert!(
        err.contains("--max-trials 3 would add no trial: every setting already runs 3 (--trials)"),
        "{err}"
    );
    opts.trials = None;
    opts.max_trials = Some(1);
    let err = Plan::new(&cv(), &opts).err().unwrap().to_string();
    assert!(err.contains("(the workload's sweep.trials)"), "{err}");
    opts.max_trials = Some(10);
    assert!(Plan::new(&cv(), &opts).is_ok());
}

#[test]
fn a_sweep_over_several_storage_profiles_plans_a_sizing_key_for_each() {
    let mut opts = SweepOptions {
        workload: "cv".into(),
        strategies: Some(vec!["resized".into()]),
        storage: Some(vec!["local".into(), "paper-ceph-hdd".into()]),
        ..Default::default()
    };
    let plan = Plan::new(&cv(), &opts).unwrap();
    assert_eq!(
        plan.sizing_keys("cv"),
        ["cv", "cv [storage paper-ceph-hdd]"]
    );
    // The memory limit is part of every key; one profile gives one key.
    opts.settings.memory_limit_mb = Some(256);
    let plan = Plan::new(&cv(), &opts).unwrap();
    assert_eq!(
        plan.sizing_keys("cv"),
        [
            "cv [memory 256 MB]",
            "cv [storage paper-ceph-hdd, memory 256 MB]"
        ]
    );
    opts.storage = Some(vec!["paper-ceph-hdd".into()]);
    opts.settings.memory_limit_mb = None;
    let plan = Plan::new(&cv(), &opts).unwrap();
    assert_eq!(plan.sizing_keys("cv"), ["cv [storage paper-ceph-hdd]"]);
}
