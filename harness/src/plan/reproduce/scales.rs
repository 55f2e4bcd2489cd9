//! The scales `reproduce` runs at, and the sweeps each plans: defined here and nowhere else.

use workloads::{CacheMode, Codec};

use crate::analysis::findings::rules;
use crate::plan::settings::Settings;
use crate::plan::sweep::SweepOptions;

/// How much of the paper's protocol a reproduction runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ScaleName {
    /// About 20 minutes on 2 cores, longer under both loaders (the README quotes the committed
    /// runs): epochs of at least 1 s, 3 trials (up to 16 where a finding's check needs them to
    /// settle its verdict); on the
    /// local disk CV's last strategy, MP3, FLAC, NILM (thread scaling of MP3 `decoded` and NILM
    /// `aggregated`, finding 6) and the synthetic reading experiment at its smallest and
    /// largest sizes (finding 5), the page-cache epoch of last strategies only; CV, CV2-JPG,
    /// CV2-PNG and NLP under the emulated paper storage, CV and CV2-PNG with GZIP too
    /// (findings 1-3).
    Quick,
    /// An hour or more: every reference workload (the greyscale and detection variants and the
    /// synthetic processing too), epochs of at least 3 s, 1-8 threads, every DEFLATE codec and
    /// zstd, 5 trials (up to 10 where noisy, 24 to settle a finding's check).
    Medium,
    /// The paper's protocol: 8000-sample subsets (whole epochs, whatever their length), 1-8
    /// threads, GZIP and ZLIB, 5 trials, 5 materializations.
    Paper,
}

impl ScaleName {
    /// The name `--scale` takes (`quick`), as clap spells it.
    pub fn label(self) -> String {
        clap::ValueEnum::to_possible_value(&self)
            .map_or_else(|| format!("{self:?}"), |v| v.get_name().to_string())
    }
}

/// The settings of one scale.
#[derive(Clone, Debug)]
pub struct Scale {
    pub samples: usize,
    /// Trials are added to settings whose 95 % CI half-width is over 5 % of the mean, up to
    /// this many (`None`: `trials` only).
    pub max_trials: Option<usize>,
    /// After the sweeps, a finding's check whose interval straddles its threshold while its
    /// estimate lies clear of it gets trials of the settings behind it, as many as the
    /// interval needs to clear the threshold, when at most this many per setting will do
    /// (`None`: never).
    pub settle_trials: Option<usize>,
    /// The seconds settling may spend, its checks taken cheapest first (`None`: its rounds
    /// as they need, each check up to `settle_trials`). Those left open say that rerunning
    /// the reproduction into its folder adds their trials.
    pub settle_budget_s: Option<u64>,
    /// Sample counts for dataset kinds whose samples are much larger (Cube++: 17 MB frames).
    pub samples_by_kind: &'static [(&'static str, usize)],
    pub trials: usize,
    pub threads: &'static [usize],
    /// Workloads swept at every thread count of `threads`, with the strategies that run below
    /// the most (empty: all); the other workloads at the most only (`None`: all workloads and
    /// strategies at every count).
    pub thread_sweeps: Option<&'static [(&'static str, &'static [&'static str])]>,
    /// Codecs of the plain (local disk) sweeps.
    pub codecs: &'static [&'static str],
    /// Codecs of the sweeps under the emulated paper storage (finding 3 is about them).
    pub emulated_codecs: &'static [&'static str],
    /// The emulated workloads swept with `emulated_codecs`; the others uncompressed only
    /// (`None`: all with them).
    pub compressed: Option<&'static [&'static str]>,
    /// Of `compressed`, those whose stores are materialized `offline_trials` times per codec,
    /// finding 3d's interval; the others once (`None`: all).
    pub offline_repeats: Option<&'static [&'static str]>,
    pub cache: &'static [CacheMode],
    /// Each workload's last strategy also runs with the application cache (`--cache app`) at
    /// the most threads: findings 4b and 4c are about it.
    pub app_cache_last: bool,
    /// Only each workload's last strategy takes the page-cache epoch after its cold one
    /// (findings 4a-4d read it, and 5b the synthetic arrays' `decoded`, their last); the
    /// others' runs end after the cold epoch.
    pub page_cache_last: bool,
    /// A workload also swept under the emulated storage runs only its last strategy on the
    /// local disk: its strategies are compared under the emulated storage (findings 1-3), and
    /// the local disk's claims about it (4a-4d) are about its last.
    pub local_last_of_emulated: bool,
    pub epochs: usize,
    pub offline_trials: usize,
    /// MB per dataset variant of workloads that sweep dataset options (the synthetic sizes;
    /// the paper's datasets were about 15 GB each).
    pub dataset_mb: f64,
    /// At most this many dataset variants (evenly spread, smallest and largest kept).
    pub variants: Option<usize>,
    /// Every epoch lasts at least this long (stores sized from the calibration); `None`: the
    /// sample counts as they are.
    pub min_epoch_s: Option<f64>,
    /// The workloads it sweeps on the local disk (`None`: every reference workload).
    pub workloads: Option<&'static [&'static str]>,
    /// The workloads it sweeps again under the emulated paper storage.
    pub emulated: &'static [&'static str],
    /// Of the local workloads, those swept again under each loader other than prepbench's own
    /// (`None`: all it can run).
    pub loader_workloads: Option<&'static [&'static str]>,
    /// Of the emulated workloads, those swept again under the emulated storage under each
    /// loader other than prepbench's own (`None`: all it can run).
    pub loader_emulated: Option<&'static [&'static str]>,
    /// Of those, the ones swept under a loader for these strategies alone, uncompressed: the
    /// cells one claim reads, not the workload's whole matrix again.
    pub loader_emulated_only: &'static [(&'static str, &'static [&'static str])],
}

/// What the quick scale sweeps on the local disk: the pipelines whose findings are judged there
/// (page cache, threads, sample sizes); CV2-JPG, CV2-PNG and NLP, whose findings are about
/// network storage, run under the emulated storage only.
const QUICK_LOCAL: &[&str] = &["cv", "mp3", "flac", "nilm", "synthetic-reading"];

/// What the quick scale sweeps again under another loader: every claim a local sweep judges
/// still has a pipeline there (caching 4a-4c on CV, MP3 and NILM, sizes 5a-5b, threads 6a-6b),
/// and FLAC, a second audio pipeline behind the caching claims alone, is left to the native
/// sweep: under tf.data it cost 1.3-1.5 minutes of sweep and 36-48 settling rows (1.0-1.6
/// minutes of epochs) in `quick-s` and `quick-t`, of 32-33 (docs/decisions.md).
const QUICK_LOADER: &[&str] = &["cv", "mp3", "nilm", "synthetic-reading"];

/// The pipelines findings 1 to 3 are about, swept again under the paper's storage, emulated
/// (`paper-ceph-hdd`): every strategy, with the codecs finding 3 needs, cold epochs only (the
/// emulation models reading from the device, not the page cache).
pub const EMULATED: &[&str] = &["cv", "cv2-jpg", "cv2-png", "nlp"];

pub fn scale(name: ScaleName) -> Scale {
    match name {
        ScaleName::Quick => Scale {
            samples: 300,
            // A thousand distinct ImageNet-like photographs and six NILM hours (2160 windows):
            // offline time and compressibility measured on more than a few source files.
            samples_by_kind: &[
                ("imagenet", 1000),
                ("cubepp-png", 24),
                ("cubepp-jpg", 24),
                ("cream", 2160),
            ],
            trials: 3,
            // No round of a fourth trial for every noisy setting: at 3 trials nearly every
            // local setting was (a 95 % CI within 5 % needs trials within about 2 %), 3.6-4.4
            // minutes of epochs under both loaders. Settling adds trials to the settings a
            // finding's check reads, where its verdict needs them (and now spends most of that
            // time: docs/decisions.md).
            max_trials: None,
            settle_trials: Some(16),
            // Settling took 11 minutes of quick-bo's 38 on an Intel VM (three rounds, the
            // third 4.3 minutes, six checks left unsettled), 2.6-3.2 of quick-bd's and
            // quick-be's 23-24 on an EPYC VM; with this, quick-bp took 30 (docs/decisions.md).
            settle_budget_s: Some(240),
            threads: &[1, 2],
            // Finding 6's two sides: a CPU-bound audio strategy and NILM's tiny samples.
            thread_sweeps: Some(&[("mp3", &["decoded"]), ("nilm", &["aggregated"])]),
            codecs: &["none"],
            emulated_codecs: &["none", "gzip"],
            // Finding 3's two sides: CV's pixel-centered floats compress well, CV2-PNG's
            // frames do too, and both have strategies that barely compress.
            compressed: Some(&["cv", "cv2-png"]),
            // 3d on CV's four stored strategies (GZIP 2.9-7.7x the offline time of none in
            // `quick-y`): CV2-PNG's repeats took 89 s there, and making its `resized` store
            // (7 MB from 24 frames) is its PNG decoding, whatever the codec, so that check
            // sat on the 1.05x line in four runs (1.00-1.11x), never settled.
            offline_repeats: Some(&["cv"]),
            cache: &[CacheMode::Cold],
            app_cache_last: true,
            // Of the page-cache epochs of `quick-bq`'s local sweeps under both loaders (3.8
            // minutes), those of strategies no check reads (2.1 minutes, CV's included), and
            // CV's local runs of the four strategies the emulated sweep compares (1.1 minutes
            // of epochs, besides their trials' evictions, stores and tf.data's probes) are cut
            // at quick; medium keeps both. `quick-bs` took 30.7 minutes with the cuts.
            page_cache_last: true,
            local_last_of_emulated: true,
            epochs: 2,
            // Finding 3d (compression's offline cost) needs an interval per codec.
            offline_trials: 3,
            dataset_mb: 48.0,
            // Finding 5 compares the smallest and the largest samples.
            variants: Some(2),
            min_epoch_s: Some(1.0),
            workloads: Some(QUICK_LOCAL),
            emulated: EMULATED,
            loader_workloads: Some(QUICK_LOADER),
            // Findings 2a and 3 under the loader on CV (none and GZIP, the codecs tf.data
            // reads), cold, 2 threads, and 2b on CV2-PNG's two strategies it compares (27-33 s
            // under tf.data in `quick-bx` to `quick-bz`); CV2-JPG and NLP, the rest of findings 1-3, are left to the
            // native sweeps at this scale (docs/decisions.md).
            loader_emulated: Some(&["cv", "cv2-png"]),
            loader_emulated_only: &[("cv2-png", &rules::CONCATENATION)],
        },
        ScaleName::Medium => Scale {
            samples: 2000,
            max_trials: Some(10),
            settle_trials: Some(24),
            settle_budget_s: None,
            samples_by_kind: &[("cubepp-png", 200), ("cubepp-jpg", 200)],
            trials: 5,
            threads: &[1, 2, 4, 8],
            thread_sweeps: None,
            codecs: &["none", "gzip", "zlib", "zstd"],
            emulated_codecs: &["none", "gzip", "zlib"],
            compressed: None,
            offline_repeats: None,
            cache: &[CacheMode::Cold],
            app_cache_last: true,
            page_cache_last: false,
            local_last_of_emulated: false,
            epochs: 2,
            offline_trials: 2,
            dataset_mb: 1000.0,
            variants: None,
            min_epoch_s: Some(3.0),
            workloads: None,
            emulated: EMULATED,
            loader_workloads: None,
            loader_emulated: None,
            loader_emulated_only: &[],
        },
        // The paper's protocol: the medium scale's dimensions at the paper's sizes, whole
        // subsets per epoch, a fixed 5 trials.
        ScaleName::Paper => Scale {
            samples: 8000,
            max_trials: None,
            settle_trials: None,
            settle_budget_s: None,
            samples_by_kind: &[("cubepp-png", 4890), ("cubepp-jpg", 4890)],
            codecs: &["none", "gzip", "zlib"],
            offline_trials: 5,
            dataset_mb: 15000.0,
            min_epoch_s: None,
            ..scale(ScaleName::Medium)
        },
    }
}

impl Scale {
    /// Whether `workload`'s compressed stores under the emulated storage are materialized
    /// `offline_trials` times per codec (finding 3d's interval), not once.
    pub(super) fn repeats_offline(&self, workload: &str) -> bool {
        self.offline_repeats.is_none_or(|r| r.contains(&workload))
    }

    /// Samples a workload reading `kind` uses at this scale.
    pub fn samples_for(&self, kind: &str) -> usize {
        self.samples_by_kind
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or(self.samples, |(_, n)| *n)
    }

    /// The thread counts `workload` is swept at.
    pub fn threads_for(&self, workload: &str) -> Vec<usize> {
        match self.thread_sweeps {
            Some(swept) if !swept.iter().any(|(w, _)| *w == workload) => {
                vec![self.most_threads()]
            }
            _ => self.threads.to_vec(),
        }
    }

    /// The most threads this scale runs.
    pub fn most_threads(&self) -> usize {
        self.threads.iter().copied().max().unwrap_or(1)
    }

    /// Materializations per (strategy, codec) of a sweep of `codecs` codecs: repeats time a
    /// codec against none (3d); a sweep of one codec makes each store once (the emulated
    /// sweeps of the same workload add the repeats).
    pub(super) fn offline_trials_for(&self, codecs: usize) -> usize {
        if codecs > 1 {
            self.offline_trials
        } else {
            1
        }
    }

    /// The strategies of `workload` that run below the most threads (`None`: all).
    pub fn scaling_strategies_for(&self, workload: &str) -> Option<Vec<String>> {
        strategies_named(self.thread_sweeps?, workload)
    }

    /// The local workloads this scale sweeps under a loader other than prepbench's own, in
    /// the reference order.
    pub fn loader_workloads(&self) -> Vec<&'static str> {
        let mut all = self.workloads();
        all.retain(|w| self.loader_workloads.is_none_or(|l| l.contains(w)));
        all
    }

    /// The emulated workloads this scale sweeps under a loader other than prepbench's own.
    pub fn loader_emulated(&self) -> Vec<&'static str> {
        let mut all = self.emulated.to_vec();
        all.retain(|w| self.loader_emulated.is_none_or(|l| l.contains(w)));
        all
    }

    /// The strategies `workload` is swept for under a loader on the emulated storage, where
    /// this scale sweeps it for some alone (`None`: every strategy, with the emulated codecs).
    pub fn loader_emulated_strategies(&self, workload: &str) -> Option<Vec<String>> {
        strategies_named(self.loader_emulated_only, workload)
    }

    /// The workloads this scale sweeps, in the reference order.
    pub fn workloads(&self) -> Vec<&'static str> {
        workloads::BUILTIN
            .iter()
            .map(|(name, _)| *name)
            .filter(|name| self.workloads.is_none_or(|w| w.contains(name)))
            .collect()
    }
}

/// The strategies a scale's list of (workload, strategies) names for `workload`, where it
/// names some.
fn strategies_named(lists: &[(&str, &[&str])], workload: &str) -> Option<Vec<String>> {
    let (_, strategies) = lists.iter().find(|(w, _)| *w == workload)?;
    (!strategies.is_empty()).then(|| strategies.iter().map(|s| s.to_string()).collect())
}

fn codecs(names: &[&str]) -> Vec<Codec> {
    names
        .iter()
        .map(|c| c.parse::<Codec>().expect("scale codecs are valid"))
        .collect()
}

/// The last strategy `workload` sweeps, when it stores something (not `unprocessed`): the one
/// findings 4a-4d are about.
fn last_stored(workload: &workloads::Workload) -> Option<String> {
    let last = workload.spec.sweep.strategies.last()?;
    (last != "unprocessed").then(|| last.clone())
}

/// The sweep options of `workload` at `scale` (the workload's own strategies and shards).
pub fn sweep_options(workload: &str, s: &Scale, seed: u64) -> SweepOptions {
    let loaded = workloads::load(workload).ok();
    let kind = loaded
        .as_ref()
        .map(|w| w.spec.dataset.kind.clone())
        .unwrap_or_default();
    let variants = loaded
        .as_ref()
        .is_some_and(|w| !w.spec.dataset_variants().is_empty());
    let last_stored = loaded.as_ref().and_then(last_stored);
    // The last strategy with a store, run again with the application cache.
    let last = last_stored.clone().filter(|_| s.app_cache_last);
    let only_last = |asked: bool| last_stored.clone().filter(|_| asked).map(|l| vec![l]);
    let mut cache = s.cache.to_vec();
    if last.is_some() && !cache.contains(&CacheMode::App) {
        cache.push(CacheMode::App);
    }
    let emulated = s.emulated.contains(&workload);
    SweepOptions {
        workload: workload.to_string(),
        strategies: only_last(s.local_last_of_emulated && emulated),
        page_cache_strategies: only_last(s.page_cache_last),
        codecs: Some(codecs(s.codecs)),
        threads: Some(s.threads_for(workload)),
        scaling_strategies: s.scaling_strategies_for(workload),
        cache: Some(cache),
        app_cache_strategies: last.map(|name| vec![name]),
        trials: Some(s.trials),
        max_trials: s.max_trials,
        // Dataset variants are sized in MB so every variant reads the same bytes.
        dataset_mb: variants.then_some(s.dataset_mb),
        variants: s.variants,
        offline_trials: s.offline_trials_for(s.codecs.len()),
        settings: Settings {
            epochs: Some(s.epochs),
            samples: (!variants).then(|| s.samples_for(&kind)),
            seed,
            verify: true,
            min_epoch_s: s.min_epoch_s,
            ..Settings::default()
        },
        calibrate: true,
        ..Default::default()
    }
}

/// The sweep options of `workload` under the emulated paper storage at `scale`.
pub fn emulated_options(workload: &str, s: &Scale, seed: u64) -> SweepOptions {
    let plain = sweep_options(workload, s, seed);
    let names = if s.compressed.is_none_or(|c| c.contains(&workload)) {
        s.emulated_codecs
    } else {
        &["none"]
    };
    SweepOptions {
        codecs: Some(codecs(names)),
        offline_trials: if s.repeats_offline(workload) {
            s.offline_trials_for(names.len())
        } else {
            1
        },
        threads: Some(vec![s.most_threads()]),
        storage: Some(vec!["paper-ceph-hdd".into()]),
        // Every strategy: they are compared here (the local sweep may run the last alone).
        strategies: None,
        page_cache_strategies: None,
        // The emulation models reading from the device: no cache of any kind.
        cache: Some(s.cache.to_vec()),
        app_cache_strategies: None,
        settings: Settings {
            epochs: Some(1),
            ..plain.settings.clone()
        },
        ..plain
    }
}

/// Finding 4d's run: this workload's last strategy read cold, then from the page cache, with
/// this many MB of memory for the run and its page cache (a memory cgroup), less than its
/// store holds at every scale.
pub const LIMITED: (&str, u64) = ("cv", 256);

/// The sweep options of finding 4d's memory-limited run at `scale`: the last strategy of
/// [`LIMITED`]'s workload, uncompressed, at the most threads, cold then page cache.
pub fn limited_options(s: &Scale, seed: u64) -> SweepOptions {
    let (workload, mb) = LIMITED;
    let plain = sweep_options(workload, s, seed);
    let last = workloads::load(workload)
        .ok()
        .as_ref()
        .and_then(last_stored);
    SweepOptions {
        strategies: last.map(|name| vec![name]),
        codecs: Some(vec![Codec::None]),
        threads: Some(vec![s.most_threads()]),
        scaling_strategies: None,
        cache: Some(vec![CacheMode::Cold]),
        app_cache_strategies: None,
        settings: Settings {
            memory_limit_mb: Some(mb),
            ..plain.settings.clone()
        },
        ..plain
    }
}
