//! A sweep's matrix: the cells (strategy x codec x threads x cache x storage x trial) a
//! workload's settings ask for, their stable run ids, and the seeded order they run in.

use std::collections::BTreeMap;

use workloads::rng::SeededRng;
use workloads::{CacheMode, Codec, OnError, StorageProfile, Strategy, Workload};

use crate::measure::epochs::RunSpec;
use crate::measure::session::{app_cache_bytes, resolve_strategies, Materialized};
use crate::plan::options::SweepOptions;
use crate::plan::settings::Settings;
use crate::results::SizingEntry;
use workloads::ConsumerSpec;

/// One online run of the matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    pub strategy: Strategy,
    pub codec: Codec,
    pub threads: usize,
    pub cache: CacheMode,
    pub storage: StorageProfile,
    /// The loader that runs its online phase (`crate::measure::online::ENGINES`).
    pub loader: &'static str,
    pub trial: usize,
}

/// The matrix after applying defaults.
#[derive(Clone, Debug)]
pub struct Plan {
    pub samples: usize,
    pub epochs: u64,
    /// The strategies whose cold runs take every epoch; the others' take their cold epoch
    /// alone (`None`: all; `SweepOptions::page_cache_strategies`).
    pub page_cache_strategies: Option<Vec<String>>,
    pub shards: usize,
    pub cells: Vec<Cell>,
    pub consumer: Option<ConsumerSpec>,
    pub on_error: OnError,
    /// Epochs sized to last this long (stores sized from the calibration); `None`: `samples`.
    pub min_epoch_s: Option<f64>,
    /// The memory each run may use (`Settings::memory_limit_mb`).
    pub memory_limit_mb: Option<u64>,
    /// Each loader's options as its runs record them (`Engine::options`).
    pub loader_options: Vec<(&'static str, String)>,
}

/// What a sweep asks of every loader beside its steps.
#[derive(Clone, Copy)]
struct Asks {
    /// The application cache (`--cache app`).
    app: bool,
    /// Skipping bad samples (`--on-error skip`).
    skip: bool,
    /// Emulated storage (`--storage` with a profile other than the local disk).
    emulated: bool,
}

/// `values` in their order, each kept once (as `key` tells them apart).
fn distinct<T, K: PartialEq>(values: Vec<T>, key: impl Fn(&T) -> K) -> Vec<T> {
    let mut kept: Vec<T> = Vec::with_capacity(values.len());
    for value in values {
        if !kept.iter().any(|k| key(k) == key(&value)) {
            kept.push(value);
        }
    }
    kept
}

/// The loaders a sweep asks for (default: prepbench's own), each found by name, and able to
/// run every strategy's online steps and what the sweep `asks`: refused before anything runs,
/// naming the step or the option.
fn loaders(
    workload: &Workload,
    (strategies, asks): (&[Strategy], Asks),
    codecs: &[Codec],
    names: Option<&[String]>,
) -> anyhow::Result<Vec<&'static str>> {
    use crate::measure::online::{default_engine, engine, ENGINES};
    let names = names.map_or_else(|| vec![default_engine().name().to_string()], <[_]>::to_vec);
    anyhow::ensure!(!names.is_empty(), "--loaders needs at least one loader");
    let mut found = Vec::new();
    for name in &names {
        let Some(loader) = engine(name) else {
            let known: Vec<&str> = ENGINES.iter().map(|e| e.name()).collect();
            anyhow::bail!("no loader `{name}`; loaders: {}", known.join(", "));
        };
        if let Some(why) = loader.app_cache_refusal().filter(|_| asks.app) {
            anyhow::bail!("--cache app: {why}");
        }
        if let Some(why) = loader.skip_refusal().filter(|_| asks.skip) {
            anyhow::bail!("{why}");
        }
        // Asked only under emulated storage: it mounts a view to find out.
        if let Some(why) = asks.emulated.then(|| loader.storage_refusal()).flatten() {
            anyhow::bail!("--storage: {why}");
        }
        for strategy in strategies {
            if let Some(why) = loader.refusal(workload, strategy.split) {
                anyhow::bail!("strategy `{}`: {why}", strategy.name);
            }
        }
        let stored = strategies.iter().any(|s| s.split > 0);
        if let Some(why) = codecs.iter().find_map(|&c| loader.codec_refusal(c)) {
            anyhow::ensure!(!stored, "{why}: drop the codec, or the loader");
        }
        found.push(loader.name());
    }
    Ok(distinct(found, |&name| name))
}

/// Each loader's options spelled out, from `--loader-options` for those that take options and
/// their defaults otherwise; options no loader of the sweep takes are refused.
fn loader_options(
    loaders: &[&'static str],
    asked: Option<&str>,
) -> anyhow::Result<Vec<(&'static str, String)>> {
    use crate::measure::online::engine;
    let mut options = Vec::new();
    let mut taken = asked.is_none();
    let mut refusals = Vec::new();
    for &name in loaders {
        let loader = engine(name).expect("found by `loaders`");
        let spelled = match loader.options(asked) {
            Ok(spelled) => {
                taken = true;
                spelled
            }
            Err(why) => {
                refusals.push(why);
                loader.options(None).map_err(anyhow::Error::msg)?
            }
        };
        options.push((name, spelled));
    }
    if !taken {
        anyhow::bail!("--loader-options: {}", refusals.join("; "));
    }
    Ok(options)
}

/// `--max-trials` adds trials up to its count: at or below the `trials` every setting runs
/// it would add none, so it is refused, saying where those trials come from.
fn check_max_trials(opts: &SweepOptions, trials: usize) -> anyhow::Result<()> {
    let Some(max) = opts.max_trials else {
        return Ok(());
    };
    let from = if opts.trials.is_some() {
        "--trials"
    } else {
        "the workload's sweep.trials"
    };
    anyhow::ensure!(
        max > trials,
        "--max-trials {max} would add no trial: every setting already runs {trials} \
         ({from}); give more than {trials}, or leave --max-trials out"
    );
    Ok(())
}

/// Refuses the parts of a sweep's options that name what it does not run: thread scaling or
/// the application cache of a strategy it does not run (or store), and the application cache
/// inside a memory limit.
fn check_subsets(
    opts: &SweepOptions,
    strategies: &[Strategy],
    cache: &[CacheMode],
) -> anyhow::Result<()> {
    if opts.settings.memory_limit_mb.is_some() && cache.contains(&CacheMode::App) {
        anyhow::bail!(
            "--memory-limit-mb limits the page cache of cold and warm runs; the application \
             cache would be held inside the limit: run --cache app without it"
        );
    }
    let asked = [
        ("thread scaling", &opts.scaling_strategies),
        ("the page-cache epochs", &opts.page_cache_strategies),
    ];
    for (what, names) in asked {
        for name in names.iter().flatten() {
            anyhow::ensure!(
                strategies.iter().any(|s| &s.name == name),
                "{what} asked of `{name}`, which this sweep does not run"
            );
        }
    }
    for name in opts.app_cache_strategies.iter().flatten() {
        anyhow::ensure!(
            strategies.iter().any(|s| &s.name == name && s.split > 0),
            "the application cache asked of `{name}`, which this sweep does not store"
        );
    }
    Ok(())
}

/// The strategies, codecs, thread counts and cache modes `opts` asks for (the workload's
/// `sweep:` where it names none). A value listed twice (`--threads 1,1`, `strategies: [a, a]`)
/// is one setting: run twice, its trials would be recorded twice under the same run and trial
/// numbers.
type Dimensions = (Vec<Strategy>, Vec<Codec>, Vec<usize>, Vec<CacheMode>);

fn dimensions(workload: &Workload, opts: &SweepOptions) -> anyhow::Result<Dimensions> {
    let sweep = &workload.spec.sweep;
    let names = opts
        .strategies
        .clone()
        .unwrap_or_else(|| sweep.strategies.clone());
    let strategies = distinct(resolve_strategies(workload, &names)?, |s| s.name.clone());
    let codecs = opts.codecs.clone().unwrap_or_else(|| sweep.codecs.clone());
    let threads = opts
        .threads
        .clone()
        .unwrap_or_else(|| sweep.threads.clone());
    let cache = opts.cache.clone().unwrap_or_else(|| sweep.cache.clone());
    Ok((
        strategies,
        distinct(codecs, |&c| c),
        distinct(threads, |&t| t),
        distinct(cache, |&c| c),
    ))
}

impl Plan {
    pub fn new(workload: &Workload, opts: &SweepOptions) -> anyhow::Result<Plan> {
        let sweep = &workload.spec.sweep;
        let (strategies, codecs, threads, cache) = dimensions(workload, opts)?;
        let trials = opts.trials.unwrap_or(sweep.trials);
        let storage = opts
            .storage
            .clone()
            .unwrap_or_else(|| sweep.storage.clone())
            .iter()
            .map(|name| {
                workload
                    .spec
                    .storage_profile(name)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", workload.spec.origin))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let storage = distinct(storage, |p| p.name.clone());
        anyhow::ensure!(!storage.is_empty(), "--storage needs at least one profile");
        let on_error = opts.settings.on_error.unwrap_or(workload.spec.on_error);
        let asks = Asks {
            app: cache.contains(&CacheMode::App),
            skip: on_error == OnError::Skip,
            emulated: storage.iter().any(|p| !p.is_passthrough()),
        };
        let loaders = loaders(
            workload,
            (&strategies, asks),
            &codecs,
            opts.loaders.as_deref(),
        )?;
        let loader_options = loader_options(&loaders, opts.settings.loader_options.as_deref())?;
        anyhow::ensure!(
            !codecs.is_empty() && !threads.is_empty() && !cache.is_empty(),
            "codecs, threads and cache need at least one value each"
        );
        anyhow::ensure!(
            trials > 0 && threads.iter().all(|&t| t > 0),
            "trials and thread counts must be at least 1"
        );
        check_max_trials(opts, trials)?;
        check_subsets(opts, &strategies, &cache)?;
        let most = threads.iter().copied().max().unwrap_or(1);
        let scales = |strategy: &Strategy, t: usize| {
            t == most
                || opts
                    .scaling_strategies
                    .as_ref()
                    .is_none_or(|names| names.contains(&strategy.name))
        };
        let mut cells = Vec::new();
        for strategy in &strategies {
            // Raw files have no codec: `unprocessed` runs once per other setting.
            let strategy_codecs: &[Codec] = if strategy.split == 0 {
                &[Codec::None]
            } else {
                &codecs
            };
            for &codec in strategy_codecs {
                for &t in threads.iter().filter(|&&t| scales(strategy, t)) {
                    // The application cache keeps stored records; raw files have none.
                    let cached = |c: CacheMode| {
                        c != CacheMode::App
                            || (strategy.split > 0
                                && opts.app_cache_strategies.as_ref().is_none_or(|names| {
                                    t == most && names.contains(&strategy.name)
                                }))
                    };
                    for &c in cache.iter().filter(|&&c| cached(c)) {
                        for (profile, &loader) in storage
                            .iter()
                            .flat_map(|p| loaders.iter().map(move |l| (p, l)))
                        {
                            for trial in 0..trials {
                                cells.push(Cell {
                                    strategy: strategy.clone(),
                                    codec,
                                    threads: t,
                                    cache: c,
                                    storage: profile.clone(),
                                    loader,
                                    trial,
                                });
                            }
                        }
                    }
                }
            }
        }
        let samples = opts
            .settings
            .samples
            .unwrap_or(workload.spec.dataset.samples);
        if let Some(shards) = opts.settings.shards.filter(|&n| n > samples) {
            // Every shard beyond the samples would be an empty file.
            anyhow::bail!(
                "--shards {shards}: more shards than the {samples} samples of the run; each \
                 shard holds at least one sample, so use from 1 to {samples}"
            );
        }
        Ok(Plan {
            samples,
            epochs: opts.settings.epochs.unwrap_or(sweep.epochs).max(1) as u64,
            page_cache_strategies: opts.page_cache_strategies.clone(),
            shards: opts.settings.shards.unwrap_or(sweep.shards).max(1),
            cells,
            consumer: opts.settings.consumer,
            on_error,
            min_epoch_s: opts.settings.min_epoch_s,
            memory_limit_mb: opts.settings.memory_limit_mb,
            loader_options,
        })
    }

    /// The options `loader`'s runs record.
    pub fn loader_options(&self, loader: &str) -> &str {
        self.loader_options
            .iter()
            .find(|(name, _)| *name == loader)
            .map_or("", |(_, options)| options.as_str())
    }

    /// Each (strategy, codec) the plan runs, once, by split then codec.
    /// The loaders the cells run under, in the order asked for.
    pub fn loaders(&self) -> Vec<&'static str> {
        let mut loaders = Vec::new();
        for cell in &self.cells {
            if !loaders.contains(&cell.loader) {
                loaders.push(cell.loader);
            }
        }
        loaders
    }

    pub fn strategy_codecs(&self) -> Vec<(Strategy, Codec)> {
        let mut pairs: BTreeMap<(usize, String), (Strategy, Codec)> = BTreeMap::new();
        for cell in &self.cells {
            pairs
                .entry((cell.strategy.split, cell.codec.to_string()))
                .or_insert((cell.strategy.clone(), cell.codec));
        }
        pairs.into_values().collect()
    }

    /// The keys under which the manifest keeps this plan's sizing ([`SizingEntry::key`]): one
    /// per storage profile its cells read from, with its consumer and memory limit; sorted.
    pub fn sizing_keys(&self, workload: &str) -> Vec<String> {
        let keys: std::collections::BTreeSet<String> = (self.cells.iter())
            .map(|cell| {
                let storage = crate::results::labels::emulated_storage(&cell.storage.name);
                let condition = crate::results::labels::Condition {
                    storage: storage.map(str::to_string),
                    consumer: self.consumer,
                    loader: None,
                    memory_mb: self.memory_limit_mb,
                };
                SizingEntry::key(workload, &condition)
            })
            .collect();
        keys.into_iter().collect()
    }

    /// The epochs `cell`'s run takes: a cold run of a strategy the page-cache epochs are not
    /// asked of ends after its cold epoch; every other run takes the plan's epochs (an
    /// application-cache run fills, then serves).
    pub fn epochs_of(&self, cell: &Cell) -> u64 {
        let page_cache = (self.page_cache_strategies.as_ref())
            .is_none_or(|names| names.contains(&cell.strategy.name));
        if cell.cache == CacheMode::Cold && !page_cache {
            1
        } else {
            self.epochs
        }
    }

    /// The stable id of a cell's run: equal settings give equal ids, so a rerun can skip it.
    /// The storage profile and the consumer enter the key only when set (a profile by its
    /// figures, so a redefined profile is a new run), so plain runs keep their ids.
    pub fn run_id(&self, workload: &Workload, seed: u64, cell: &Cell) -> String {
        let mut key = format!(
            "{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}",
            workload.spec.label(),
            workload.spec.identity(),
            self.samples,
            seed,
            self.epochs_of(cell),
            self.shards,
            cell.strategy.name,
            cell.codec,
            cell.threads,
            cell.cache,
            cell.trial
        );
        if !cell.storage.is_passthrough() {
            key.push_str(&format!("|storage:{:?}", cell.storage));
        }
        if let Some(consumer) = self.consumer {
            key.push_str(&format!("|consumer:{consumer}"));
        }
        if !crate::measure::online::is_default(cell.loader) {
            key.push_str(&format!("|loader:{}", cell.loader));
            let options = self.loader_options(cell.loader);
            if options != crate::results::rows::default_loader_options(cell.loader) {
                key.push_str(&format!("|loader_options:{options}"));
            }
        }
        if self.on_error == OnError::Skip {
            key.push_str("|skip");
        }
        if let Some(floor) = self.min_epoch_s {
            key.push_str(&format!("|min_epoch_s:{floor}"));
        }
        if let Some(mb) = self.memory_limit_mb {
            key.push_str(&format!("|memory:{mb}"));
        }
        format!("s{:014x}", xxhash_rust::xxh3::xxh3_64(key.as_bytes()) >> 8)
    }

    /// The run of `cell` with id `run_id`, reading `stored` (the raw files when `None`); not
    /// verified, and with no start gate.
    pub fn spec<'c>(
        &'c self,
        cell: &'c Cell,
        run_id: String,
        stored: Option<&'c Materialized>,
        settings: &Settings,
    ) -> RunSpec<'c> {
        RunSpec {
            run_id,
            strategy: &cell.strategy,
            stored,
            items: None,
            threads: cell.threads,
            cache: cell.cache,
            epochs: self.epochs_of(cell),
            seed: settings.seed,
            trial: cell.trial,
            verify: false,
            app_cache_bytes: app_cache_bytes(settings.app_cache_mb),
            storage: &cell.storage,
            consumer: self.consumer,
            loader: crate::measure::online::engine(cell.loader).expect("checked by Plan::new"),
            loader_options: self.loader_options(cell.loader),
            max_epoch_s: None,
            start_gate: None,
            min_epoch_s: settings.min_epoch_s,
            memory_limit_mb: settings.memory_limit_mb,
        }
    }

    pub fn offline_id(
        &self,
        workload: &Workload,
        strategy: &Strategy,
        codec: Codec,
        trial: usize,
    ) -> String {
        let mut key = format!(
            "offline|{}|{}|{}|{}|{}|{codec}|{trial}",
            workload.spec.label(),
            workload.spec.identity(),
            self.samples,
            self.shards,
            strategy.name
        );
        if let Some(floor) = self.min_epoch_s {
            key.push_str(&format!("|min_epoch_s:{floor}"));
        }
        format!("o{:014x}", xxhash_rust::xxh3::xxh3_64(key.as_bytes()) >> 8)
    }
}

/// Fisher–Yates with the sweep's seed: the same command always runs in the same order.
pub fn shuffled<T>(mut items: Vec<T>, seed: u64) -> Vec<T> {
    let mut rng = SeededRng::from_parts(&[seed, 0x0005_33e9]);
    for i in (1..items.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        items.swap(i, j);
    }
    items
}

/// The order a sweep's `cells` run in: trial by trial (every setting's k-th trial before any
/// k+1-th), and within a trial each strategy's runs side by side (its codecs, thread counts
/// and cache states), the strategies in a seeded random order and each one's runs shuffled
/// too. A shuffled order spread a setting's trials over the whole sweep, so two settings
/// compared (GZIP against none, 1 thread against 2) met the machine's drift apart: in
/// `quick-bz` CV `concatenated` under the paper's storage read GZIP over none at 0.96x [0.80,
/// 1.15], its two cells' log throughputs apart spreading 0.147 (sd of their difference) where
/// the runs of the two that happened to start within 6 s of each other spread 0.054 (`quick-by`:
/// 0.113 and 0.064). Side by side, a trial of two codecs is a pair (`findings::measured::pairs`).
pub fn run_order(cells: Vec<Cell>, seed: u64) -> Vec<Cell> {
    // A strategy's rank within its trial: where it first came up in the shuffle.
    let mut rank: BTreeMap<(usize, String), usize> = BTreeMap::new();
    let mut keyed: Vec<(usize, usize, Cell)> = (shuffled(cells, seed).into_iter())
        .map(|c| {
            let next = rank.len();
            let r = *rank
                .entry((c.trial, c.strategy.name.clone()))
                .or_insert(next);
            (c.trial, r, c)
        })
        .collect();
    // Stable: each strategy's runs keep the shuffle's order.
    keyed.sort_by_key(|(trial, rank, _)| (*trial, *rank));
    keyed.into_iter().map(|(_, _, c)| c).collect()
}
