//! The scales' settings and the sweeps `reproduce` plans from them.
use super::*;
use workloads::{CacheMode, Codec};

#[test]
fn quick_cuts_dimensions_not_epoch_length() {
    let quick = scale(ScaleName::Quick);
    assert_eq!(quick.min_epoch_s, Some(1.0));
    assert_eq!(quick.workloads().len(), 5, "{:?}", quick.workloads());
    assert!(!quick.workloads().contains(&"detection"));
    assert_eq!(quick.emulated.len(), 4);
    // Thread scaling only where finding 6 asks for it.
    assert_eq!(quick.threads_for("mp3"), vec![1, 2]);
    assert_eq!(quick.threads_for("flac"), vec![2]);
    assert_eq!(
        quick.scaling_strategies_for("mp3"),
        Some(vec!["decoded".to_string()])
    );
    assert_eq!(scale(ScaleName::Medium).scaling_strategies_for("mp3"), None);
    assert_eq!(quick.threads_for("cv"), vec![2]);
    // Findings 3d, 4b and 4c are testable at every scale: three materializations per codec
    // at quick, and each local workload's last strategy with the application cache.
    assert!(quick.offline_trials >= 3);
    assert_eq!(emulated_options("cv", &quick, 0).offline_trials, 3);
    // 3d at quick on CV: CV2-PNG's compressed stores are made once (an uncompressed-only
    // emulated workload too); the larger scales repeat every one.
    assert_eq!(emulated_options("cv2-png", &quick, 0).offline_trials, 1);
    assert_eq!(emulated_options("nlp", &quick, 0).offline_trials, 1);
    let medium = scale(ScaleName::Medium);
    assert_eq!(emulated_options("cv2-png", &medium, 0).offline_trials, 2);
    assert_eq!(names(&["cv"]), "`cv`");
    assert_eq!(names(&["a", "b", "c"]), "`a`, `b` and `c`");
    assert_eq!(sweep_options("mp3", &quick, 0).offline_trials, 1);
    assert_eq!(quick.samples_for("imagenet"), 1000);
    for s in [ScaleName::Quick, ScaleName::Medium, ScaleName::Paper].map(scale) {
        let cv = sweep_options("cv", &s, 0);
        assert_eq!(cv.cache, Some(vec![CacheMode::Cold, CacheMode::App]));
        assert_eq!(
            cv.app_cache_strategies,
            Some(vec!["pixel-centered".to_string()])
        );
        let emulated = emulated_options("cv", &s, 0);
        assert_eq!(emulated.cache, Some(vec![CacheMode::Cold]));
    }
    // Findings 1-3's pipelines run again under the paper's storage, with GZIP, cold only.
    let emulated = emulated_options("cv", &quick, 0);
    assert_eq!(emulated.storage, Some(vec!["paper-ceph-hdd".to_string()]));
    assert_eq!(emulated.codecs.as_ref().map(Vec::len), Some(2));
    assert_eq!(emulated.settings.epochs, Some(1));
    let plain = emulated_options("nlp", &quick, 0);
    assert_eq!(plain.codecs, Some(vec![Codec::None]));
    assert!(emulated.strategies.is_none(), "every strategy");
    let medium = scale(ScaleName::Medium);
    assert_eq!(medium.min_epoch_s, Some(3.0));
    assert_eq!(medium.workloads().len(), workloads::BUILTIN.len());
    assert_eq!(scale(ScaleName::Paper).min_epoch_s, None);
}

/// Quick runs the page-cache epoch only where a check reads it (each workload's last
/// strategy: 4a-4d, and the synthetic arrays' `decoded`: 5b), and CV, whose strategies the
/// emulated sweep compares, only its last on the local disk; medium runs both whole.
#[test]
fn quick_runs_the_page_cache_epochs_and_local_strategies_its_checks_read() {
    let quick = scale(ScaleName::Quick);
    let last = |s: &str| Some(vec![s.to_string()]);
    let cv = sweep_options("cv", &quick, 0);
    assert_eq!(cv.strategies, last("pixel-centered"));
    assert_eq!(cv.page_cache_strategies, last("pixel-centered"));
    let mp3 = sweep_options("mp3", &quick, 0);
    assert!(mp3.strategies.is_none(), "MP3 has no emulated sweep");
    assert_eq!(mp3.page_cache_strategies, last("spectrogram-encoded"));
    let synthetic = sweep_options("synthetic-reading", &quick, 0);
    assert_eq!(synthetic.page_cache_strategies, last("decoded"));
    // The emulated sweep compares every strategy, cold; 4d reads CV's last, both epochs.
    let emulated = emulated_options("cv", &quick, 0);
    assert!(emulated.strategies.is_none() && emulated.page_cache_strategies.is_none());
    let limited = limited_options(&quick, 0);
    assert_eq!(limited.strategies, limited.page_cache_strategies);
    let engine = crate::measure::online::engine("tf-data").unwrap();
    let tf = loader_sweep(cv.clone(), &quick, engine, "tf-data");
    assert_eq!(tf.strategies, cv.strategies);
    assert_eq!(tf.page_cache_strategies, cv.page_cache_strategies);
    // The plan: a cold run of another strategy takes its cold epoch alone, under another id.
    let w = workloads::load("mp3").unwrap();
    let plan = crate::plan::matrix::Plan::new(&w, &mp3).unwrap();
    let epochs = |name: &str, cache: CacheMode| {
        let cell = plan
            .cells
            .iter()
            .find(|c| c.strategy.name == name && c.cache == cache);
        cell.map(|c| plan.epochs_of(c))
    };
    assert_eq!(epochs("decoded", CacheMode::Cold), Some(1));
    assert_eq!(epochs("spectrogram-encoded", CacheMode::Cold), Some(2));
    assert_eq!(epochs("spectrogram-encoded", CacheMode::App), Some(2));
    let medium = scale(ScaleName::Medium);
    for w in ["cv", "mp3"] {
        let opts = sweep_options(w, &medium, 0);
        assert!(opts.strategies.is_none() && opts.page_cache_strategies.is_none());
    }
}

#[test]
fn another_loader_runs_whole_pipelines_only() {
    let quick = scale(ScaleName::Quick);
    // No PyTorch form of detection's letterbox resize: the pipeline is refused whole,
    // naming the step, before any runtime is asked for.
    let why = loader_options("detection", &quick, 0, "torch")
        .unwrap()
        .unwrap_err();
    assert!(why.contains("resize_longer_pad"), "{why}");
    assert!(loader_options("cv", &quick, 0, "no-such-loader").is_err());
}

/// Quick's sweeps under another loader keep a pipeline for every claim the local sweeps
/// judge: caching (CV, MP3, NILM), sample sizes (the synthetic arrays), threads (MP3
/// `decoded`, NILM); FLAC is left to the native sweep. Medium runs them all.
#[test]
fn quicks_loader_sweeps_keep_a_pipeline_for_every_claim() {
    let quick = scale(ScaleName::Quick);
    assert_eq!(
        quick.loader_workloads(),
        vec!["cv", "mp3", "nilm", "synthetic-reading"]
    );
    for (workload, _) in quick.thread_sweeps.unwrap() {
        assert!(quick.loader_workloads().contains(workload), "{workload}");
    }
    let medium = scale(ScaleName::Medium);
    assert_eq!(medium.loader_workloads(), medium.workloads());
}

/// A loader's sweep at reproduce has what its claims need beside the steps: finding 6's
/// thread sweep (MP3 `decoded` at 1 and 2 threads at quick) and the application cache of
/// the last strategy where the loader has one (tf-data's `.cache()`), not where it has
/// none (torch); and only the codecs it reads.
#[test]
fn a_loaders_sweep_has_the_thread_sweep_and_the_cache_its_claims_need() {
    let quick = scale(ScaleName::Quick);
    let plain = sweep_options("mp3", &quick, 0);
    for loader in ["tf-data", "torch"] {
        let engine = crate::measure::online::engine(loader).unwrap();
        let opts = loader_sweep(plain.clone(), &quick, engine, loader);
        assert_eq!(opts.threads, Some(vec![1, 2]), "{loader}");
        assert_eq!(
            opts.scaling_strategies, plain.scaling_strategies,
            "{loader}"
        );
        let app = opts.cache.unwrap().contains(&CacheMode::App);
        assert_eq!(app, loader == "tf-data", "{loader}");
        assert_eq!(opts.loaders, Some(vec![loader.to_string()]));
    }
    let mut zstd = sweep_options("cv", &quick, 0);
    zstd.codecs = Some(vec![Codec::None, "zstd".parse().unwrap()]);
    let tf = crate::measure::online::engine("tf-data").unwrap();
    let opts = loader_sweep(zstd, &quick, tf, "tf-data");
    assert_eq!(opts.codecs, Some(vec![Codec::None]));
}

/// Findings 2 and 3 under a loader: at quick, CV swept again under the emulated paper storage
/// under it, with the codecs it reads of the native emulated sweep's, each store made once
/// (3d's repeats are the native sweep's), and CV2-PNG for 2b's two strategies alone; every
/// emulated workload whole at medium.
#[test]
fn a_loader_sweeps_cv_under_the_emulated_storage_with_the_codecs_it_reads() {
    let quick = scale(ScaleName::Quick);
    assert_eq!(quick.loader_emulated(), vec!["cv", "cv2-png"]);
    assert_eq!(
        scale(ScaleName::Medium).loader_emulated(),
        EMULATED.to_vec()
    );
    let mut emulated = emulated_options("cv", &quick, 0);
    assert!(emulated.offline_trials > 1);
    emulated.codecs = Some(vec![
        Codec::None,
        "gzip".parse().unwrap(),
        "zstd".parse().unwrap(),
    ]);
    let tf = crate::measure::online::engine("tf-data").unwrap();
    let opts = reading_sweep(emulated.clone(), tf, "tf-data");
    assert_eq!(
        opts.codecs,
        Some(vec![Codec::None, "gzip".parse().unwrap()])
    );
    assert_eq!(opts.storage, Some(vec!["paper-ceph-hdd".to_string()]));
    assert_eq!(opts.loaders, Some(vec!["tf-data".to_string()]));
    assert_eq!(opts.offline_trials, 1);
    assert_eq!(opts.threads, emulated.threads);
    assert_eq!(opts.cache, emulated.cache);
    assert_eq!(quick.loader_emulated_strategies("cv"), None);
    assert_eq!(
        loader_emulated("cv", &quick, 0, tf, "tf-data").strategies,
        None
    );
}

/// 2b under a loader at quick: CV2-PNG's `unprocessed` and `concatenated` (the cells its
/// check reads, both in the workload), uncompressed, on the emulated storage at the native
/// emulated sweep's threads and cold cache; the other strategies and GZIP, which 3a and 3c
/// read natively, are not swept again. Medium sweeps it whole.
#[test]
fn a_loader_sweeps_cv2_png_for_2b_alone_at_quick() {
    let quick = scale(ScaleName::Quick);
    let tf = crate::measure::online::engine("tf-data").unwrap();
    let opts = loader_emulated("cv2-png", &quick, 0, tf, "tf-data");
    let two = vec!["unprocessed".to_string(), "concatenated".to_string()];
    assert_eq!(opts.strategies, Some(two.clone()));
    assert_eq!(opts.codecs, Some(vec![Codec::None]));
    assert_eq!(opts.storage, Some(vec!["paper-ceph-hdd".to_string()]));
    assert_eq!(opts.loaders, Some(vec!["tf-data".to_string()]));
    let native = emulated_options("cv2-png", &quick, 0);
    assert!(native.codecs.as_ref().is_some_and(|c| c.len() > 1));
    assert_eq!(opts.threads, native.threads);
    assert_eq!(opts.cache, native.cache);
    let w = workloads::load("cv2-png").unwrap();
    let swept: Vec<String> = w
        .spec
        .sweep_strategies()
        .iter()
        .map(|s| s.name.clone())
        .collect();
    assert!(two.iter().all(|s| swept.contains(s)), "{swept:?}");
    let medium = scale(ScaleName::Medium);
    assert_eq!(medium.loader_emulated_strategies("cv2-png"), None);
    let whole = loader_emulated("cv2-png", &medium, 0, tf, "tf-data");
    assert_eq!(whole.strategies, None);
}

/// Finding 4d under a loader: the native memory-limited sweep's last strategy, threads and
/// cache modes, its limit raised by what the loader itself holds (TensorFlow alone holds more
/// than the native limit once imported).
#[test]
fn a_loader_reads_the_memory_limited_last_strategy_with_room_for_itself() {
    let quick = scale(ScaleName::Quick);
    let limited = limited_options(&quick, 0);
    assert_eq!(limited.settings.memory_limit_mb, Some(LIMITED.1));
    let tf = crate::measure::online::engine("tf-data").unwrap();
    assert!(tf.own_memory_mb(2) >= 400);
    let opts = loader_limited(limited.clone(), tf, "tf-data");
    assert_eq!(opts.workload, LIMITED.0);
    assert_eq!(
        opts.settings.memory_limit_mb,
        Some(LIMITED.1 + tf.own_memory_mb(2))
    );
    assert_eq!(opts.strategies, limited.strategies);
    assert!(opts.strategies.as_ref().is_some_and(|s| s.len() == 1));
    assert_eq!(opts.codecs, Some(vec![Codec::None]));
    assert_eq!(opts.loaders, Some(vec!["tf-data".to_string()]));
    assert_eq!(opts.offline_trials, 1);
    assert_eq!(opts.threads, limited.threads);
    assert_eq!(opts.cache, limited.cache);
    // A DataLoader's workers each hold their own: more room at more threads.
    let torch = crate::measure::online::engine("torch").unwrap();
    assert!(torch.own_memory_mb(16) > torch.own_memory_mb(2));
    let mut wide = limited.clone();
    wide.threads = Some(vec![16]);
    assert_eq!(
        loader_limited(wide, torch, "torch")
            .settings
            .memory_limit_mb,
        Some(LIMITED.1 + torch.own_memory_mb(16))
    );
}
