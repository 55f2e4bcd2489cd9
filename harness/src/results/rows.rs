//! One `#[derive(Serialize, Deserialize)]` row type per table of a results folder: runs.csv,
//! offline.csv, stages.csv, samples.csv and errors.csv. The struct is the table: its fields are
//! the columns, in order, with units in their names. Columns added after a table's first
//! release carry `#[serde(default)]`, so older folders still load; a missing value is an empty
//! cell (older folders wrote `-`, which reads as empty too).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use workloads::{Codec, ConsumerSpec};

use super::labels::{CacheState, Condition, Phase, StageKind, StageName, Verdict, LOCAL_STORAGE};

/// A figure rounded to `DIGITS` decimals (the precision the measurement has), written as a
/// number.
fn fixed<const DIGITS: usize, S: Serializer>(value: &f64, s: S) -> Result<S::Ok, S::Error> {
    let scale = 10f64.powi(DIGITS as i32);
    let rounded = (value * scale).round() / scale;
    s.serialize_f64(if rounded.is_finite() { rounded } else { *value })
}

/// [`fixed`] for an optional figure: empty when absent.
fn fixed_or_empty<const DIGITS: usize, S: Serializer>(
    value: &Option<f64>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => fixed::<DIGITS, S>(v, s),
        None => s.serialize_none(),
    }
}

/// An optional value whose absence older folders wrote as `-`: `-` and an empty cell are
/// `None`; anything else is read by `parse`.
fn blank_or<'de, D, T, E>(
    d: D,
    parse: impl FnOnce(&str) -> Result<T, E>,
) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    E: std::fmt::Display,
{
    let text = Option::<std::borrow::Cow<str>>::deserialize(d)?.unwrap_or_default();
    match text.trim() {
        "" | "-" => Ok(None),
        t => parse(t).map(Some).map_err(serde::de::Error::custom),
    }
}

/// [`blank_or`] through the value's `FromStr`.
fn dash_or_empty<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    blank_or(d, str::parse)
}

/// The storage profile; empty (folders from before the column) or `-` is the local disk.
fn storage_or_local<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(dash_or_empty::<D, String>(d)?.unwrap_or_else(local_storage))
}

fn local_storage() -> String {
    LOCAL_STORAGE.to_string()
}

/// A consumer's label, or empty.
fn consumer_label<S: Serializer>(value: &Option<ConsumerSpec>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(c) => s.collect_str(c),
        None => s.serialize_none(),
    }
}

fn consumer_from_label<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ConsumerSpec>, D::Error> {
    blank_or(d, |t| {
        ConsumerSpec::from_label(t).ok_or_else(|| format!("`{t}` is not a consumer label"))
    })
}

/// One measured epoch of one run (runs.csv). Units are in the column names.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RunRow {
    pub run_id: String,
    pub started_utc: String,
    pub workload: String,
    pub strategy: String,
    pub split: usize,
    pub codec: Codec,
    pub shards: usize,
    pub threads: usize,
    pub samples: u64,
    /// Repetition index of the same cell in a sweep (0 for `run`).
    pub trial: usize,
    pub epoch: u64,
    pub cache: CacheState,
    pub seed: u64,
    #[serde(serialize_with = "fixed::<6, _>")]
    pub offline_s: f64,
    pub offline_reused: bool,
    pub storage_bytes: u64,
    #[serde(serialize_with = "fixed::<6, _>")]
    pub online_s: f64,
    #[serde(serialize_with = "fixed::<3, _>")]
    pub throughput_sps: f64,
    pub read_bytes: u64,
    pub read_chars: u64,
    pub output_bytes: u64,
    #[serde(serialize_with = "fixed::<6, _>")]
    pub cpu_user_s: f64,
    #[serde(serialize_with = "fixed::<6, _>")]
    pub cpu_sys_s: f64,
    /// How the page cache was prepared: `drop_caches`, `fadvise`, `prefetch`, `none`, `remote`;
    /// `read+` before an eviction when the files were first read in part (`cache.rs`).
    pub evict_method: String,
    #[serde(serialize_with = "fixed::<2, _>")]
    pub residency_before_pct: f64,
    #[serde(serialize_with = "fixed::<2, _>")]
    pub residency_after_pct: f64,
    /// False when a cold epoch's files were still resident after eviction.
    pub valid: bool,
    /// Empty when not verified.
    #[serde(deserialize_with = "dash_or_empty")]
    pub verified: Option<Verdict>,
    /// The storage profile the epoch was read under (`local`: the disk as it is).
    #[serde(default = "local_storage", deserialize_with = "storage_or_local")]
    pub storage: String,
    /// The simulated training consumer (`32x100ms-sleep-p2`), empty without one.
    #[serde(
        default,
        serialize_with = "consumer_label",
        deserialize_with = "consumer_from_label"
    )]
    pub consumer: Option<ConsumerSpec>,
    /// With a consumer: accelerator utilisation, data-stall share (both % of wall time), time
    /// to the first batch and the per-batch wait's median and 99th percentile.
    #[serde(default, serialize_with = "fixed_or_empty::<2, _>")]
    pub au_pct: Option<f64>,
    #[serde(default, serialize_with = "fixed_or_empty::<2, _>")]
    pub stall_pct: Option<f64>,
    #[serde(default, serialize_with = "fixed_or_empty::<6, _>")]
    pub first_batch_s: Option<f64>,
    #[serde(default, serialize_with = "fixed_or_empty::<3, _>")]
    pub batch_wait_p50_ms: Option<f64>,
    #[serde(default, serialize_with = "fixed_or_empty::<3, _>")]
    pub batch_wait_p99_ms: Option<f64>,
    /// Mean read rate of the data directory's device and CPU busy share over the epoch's system
    /// samples (`samples.csv`); absent when none were taken.
    #[serde(default, serialize_with = "fixed_or_empty::<3, _>")]
    pub device_read_mb_s: Option<f64>,
    #[serde(default, serialize_with = "fixed_or_empty::<2, _>")]
    pub cpu_busy_pct: Option<f64>,
    /// Samples this epoch did not deliver because they could not be read or processed
    /// (`on_error: skip`): left out of the store offline, or skipped online. errors.csv names
    /// them.
    #[serde(default)]
    pub skipped_samples: u64,
    /// Seconds from the epoch's start to its first sample (start-up: threads, opens, first
    /// reads); `throughput_sps` includes it, `steady_sps` does not.
    #[serde(default, serialize_with = "fixed_or_empty::<6, _>")]
    pub first_sample_s: Option<f64>,
    /// Samples per second between the 10th and 90th percentile of arrivals (steady state).
    #[serde(default, serialize_with = "fixed_or_empty::<3, _>")]
    pub steady_sps: Option<f64>,
    /// CPU time the rest of the machine used during the epoch, % of its capacity (all cores):
    /// load beside the measurement, not caused by it.
    #[serde(default, serialize_with = "fixed_or_empty::<2, _>")]
    pub foreign_load_pct: Option<f64>,
    /// CPU time the hypervisor stole during the epoch, % of capacity.
    #[serde(default, serialize_with = "fixed_or_empty::<2, _>")]
    pub steal_pct: Option<f64>,
    /// Passes over the input: 1, or more for an epoch served from a cache that repeated its
    /// passes to last the floor (`--min-epoch-s`); `samples` counts every pass.
    #[serde(default = "one_pass")]
    pub passes: u64,
    /// The loader that ran the online phase (`native`: prepbench's own engine; `torch`: a
    /// PyTorch DataLoader; `tf-data`: the paper's tf.data); `native` in folders from before
    /// the column.
    #[serde(default = "native_loader", deserialize_with = "loader_or_native")]
    pub loader: String,
    /// The loader's options (`batch=32 prefetch=2 pin=false persistent=false` for torch);
    /// empty for prepbench's own.
    #[serde(default)]
    pub loader_options: String,
    /// The memory, in MB, the epochs and their page cache could use (`--memory-limit-mb`, a
    /// memory cgroup); empty: the machine's.
    #[serde(default)]
    pub memory_limit_mb: Option<u64>,
}

fn one_pass() -> u64 {
    1
}

/// The name runs of prepbench's own engine record.
pub const NATIVE_LOADER: &str = "native";

/// The options each loader's runs record when none are asked for: a run with other options is
/// another condition (`RunRow::condition`). Results cannot ask the engines; a test ties each
/// to its engine's `options(None)`.
pub const DEFAULT_LOADER_OPTIONS: &[(&str, &str)] = &[(
    "torch",
    "batch=32 prefetch=default pin=false persistent=false",
)];

/// The options `loader` runs with unless told otherwise (empty for one with none).
pub fn default_loader_options(loader: &str) -> &'static str {
    DEFAULT_LOADER_OPTIONS
        .iter()
        .find(|(name, _)| *name == loader)
        .map_or("", |(_, options)| options)
}

/// The loader as conditions name it: its name, and the options that differ from its defaults
/// in brackets (`torch[batch=64,pin=true]`).
pub fn loader_label(loader: &str, options: &str) -> String {
    let defaults: Vec<&str> = default_loader_options(loader).split_whitespace().collect();
    let changed: Vec<&str> = options
        .split_whitespace()
        .filter(|option| !defaults.contains(option))
        .collect();
    if changed.is_empty() {
        loader.to_string()
    } else {
        format!("{loader}[{}]", changed.join(","))
    }
}

fn native_loader() -> String {
    NATIVE_LOADER.to_string()
}

fn loader_or_native<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(dash_or_empty::<D, String>(d)?.unwrap_or_else(native_loader))
}

impl Default for RunRow {
    fn default() -> RunRow {
        RunRow {
            run_id: String::new(),
            started_utc: String::new(),
            workload: String::new(),
            strategy: String::new(),
            split: 0,
            codec: Codec::None,
            shards: 0,
            threads: 0,
            samples: 0,
            trial: 0,
            epoch: 0,
            cache: CacheState::Cold,
            seed: 0,
            offline_s: 0.0,
            offline_reused: false,
            storage_bytes: 0,
            online_s: 0.0,
            throughput_sps: 0.0,
            read_bytes: 0,
            read_chars: 0,
            output_bytes: 0,
            cpu_user_s: 0.0,
            cpu_sys_s: 0.0,
            evict_method: String::new(),
            residency_before_pct: 0.0,
            residency_after_pct: 0.0,
            valid: true,
            verified: None,
            storage: local_storage(),
            consumer: None,
            au_pct: None,
            stall_pct: None,
            first_batch_s: None,
            batch_wait_p50_ms: None,
            batch_wait_p99_ms: None,
            device_read_mb_s: None,
            cpu_busy_pct: None,
            skipped_samples: 0,
            first_sample_s: None,
            steady_sps: None,
            foreign_load_pct: None,
            steal_pct: None,
            passes: 1,
            loader: native_loader(),
            loader_options: String::new(),
            memory_limit_mb: None,
        }
    }
}

/// Foreign CPU load with the hypervisor's steal ([`RunRow::disturbed_pct`]), % of the
/// machine, above which a run is measured again and a check's cells count as busy.
pub const HEAVY_FOREIGN_LOAD_PCT: f64 = 25.0;

/// [`HEAVY_FOREIGN_LOAD_PCT`], or `PREPBENCH_HEAVY_LOAD_PCT` where set (above 100: never
/// heavy; the test suite, which runs tests side by side, sets it).
pub fn heavy_load_pct() -> f64 {
    std::env::var("PREPBENCH_HEAVY_LOAD_PCT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(HEAVY_FOREIGN_LOAD_PCT)
}

/// `evict_method` of an epoch read from object storage: nothing here to evict.
pub const EVICT_REMOTE: &str = "remote";

/// How `evict_method` starts when the files were first read in part before the eviction
/// (`cache::evict_for_cold_read`).
pub const EVICT_PRIMED: &str = "read+";

/// How `evict_method` ends when a drop of the page cache freed pages of the running software's
/// own files (libraries a loader's workers ran) and they were read back before the epoch
/// (`measure::code_cache`).
pub const EVICT_CODE: &str = "+code";

impl RunRow {
    /// What the run was measured under besides its cell's settings.
    pub fn condition(&self) -> Condition {
        Condition {
            storage: self.emulated_storage().map(str::to_string),
            consumer: self.consumer,
            loader: (self.loader != NATIVE_LOADER)
                .then(|| loader_label(&self.loader, &self.loader_options)),
            memory_mb: self.memory_limit_mb,
        }
    }

    /// The emulated storage profile the run was read under; `None` for the local disk.
    pub fn emulated_storage(&self) -> Option<&str> {
        super::labels::emulated_storage(&self.storage)
    }

    /// Whether the epoch read its input from object storage.
    pub fn read_remote(&self) -> bool {
        self.evict_method == EVICT_REMOTE
    }

    /// The share of the machine's CPU the run could not have, % of the machine: what other
    /// processes used and what the hypervisor stole (a VM's vCPU held back while runnable
    /// costs a run as another process's use of it does); `None` where neither was recorded.
    pub fn disturbed_pct(&self) -> Option<f64> {
        match (self.foreign_load_pct, self.steal_pct) {
            (None, None) => None,
            (f, s) => Some(f.unwrap_or(0.0) + s.unwrap_or(0.0)),
        }
    }

    /// Whether its files were first read in part before the eviction ([`EVICT_PRIMED`]).
    pub fn primed(&self) -> bool {
        self.evict_method.starts_with(EVICT_PRIMED)
    }
}

/// One materialization of a strategy and codec (offline.csv), written by sweeps.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct OfflineRow {
    pub run_id: String,
    pub workload: String,
    pub strategy: String,
    pub split: usize,
    pub codec: Codec,
    pub shards: usize,
    pub samples: u64,
    pub offline_trial: usize,
    #[serde(serialize_with = "fixed::<6, _>")]
    pub offline_s: f64,
    pub offline_reused: bool,
    pub storage_bytes: u64,
    #[serde(serialize_with = "fixed::<6, _>")]
    pub cpu_user_s: f64,
    #[serde(serialize_with = "fixed::<6, _>")]
    pub cpu_sys_s: f64,
    #[serde(serialize_with = "fixed::<6, _>")]
    pub processing_s: f64,
    #[serde(serialize_with = "fixed::<6, _>")]
    pub writing_s: f64,
    #[serde(serialize_with = "fixed::<9, _>")]
    pub cpu_s_per_sample: f64,
}

/// One stage of one epoch (stages.csv): where the epoch's online time went.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct StageRow {
    pub run_id: String,
    pub epoch: u64,
    pub stage: StageName,
    pub kind: StageKind,
    #[serde(serialize_with = "fixed::<6, _>")]
    pub seconds: f64,
    /// Of the workers' time, or for the consumer's wait of the epoch's wall time.
    #[serde(serialize_with = "fixed::<2, _>")]
    pub share_pct: f64,
}

/// One system sample of a phase (samples.csv): rates over the interval since the previous one.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SampleRow {
    pub run_id: String,
    /// Empty for the offline phase.
    #[serde(deserialize_with = "dash_or_empty")]
    pub epoch: Option<u64>,
    pub phase: Phase,
    #[serde(serialize_with = "fixed::<3, _>")]
    pub t_start_s: f64,
    #[serde(serialize_with = "fixed::<3, _>")]
    pub interval_s: f64,
    pub device: String,
    #[serde(serialize_with = "fixed::<3, _>")]
    pub read_mb_s: f64,
    #[serde(serialize_with = "fixed::<3, _>")]
    pub write_mb_s: f64,
    #[serde(serialize_with = "fixed::<1, _>")]
    pub cpu_user_pct: f64,
    #[serde(serialize_with = "fixed::<1, _>")]
    pub cpu_system_pct: f64,
    #[serde(serialize_with = "fixed::<1, _>")]
    pub cpu_iowait_pct: f64,
    #[serde(serialize_with = "fixed::<1, _>")]
    pub cpu_idle_pct: f64,
    #[serde(serialize_with = "fixed::<0, _>")]
    pub context_switches_per_s: f64,
    #[serde(serialize_with = "fixed::<1, _>")]
    pub page_cache_mb: f64,
    #[serde(serialize_with = "fixed::<1, _>")]
    pub memory_used_mb: f64,
    #[serde(serialize_with = "fixed::<1, _>")]
    pub cpu_busy_pct: f64,
}

/// A sample (or a stretch of records) left out under `on_error: skip`, as a store's manifest
/// and errors.csv record it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    /// The sample id (`3`, `3, part 17` after a fan-out step) or the record (`record 12`).
    pub sample: String,
    /// The raw file or the shard.
    pub file: String,
    /// Where it failed: `read` (a shard's framing), `deserialize` (a record's payload) or
    /// `step:NAME`.
    pub stage: StageName,
    /// Samples lost: 1, or the rest of a shard whose framing broke.
    pub count: u64,
    pub message: String,
    /// More than the message (a Python step's traceback); empty when there is none.
    pub detail: String,
}

impl Skipped {
    /// Its errors.csv row: for run `run_id`, offline (no epoch) or in an online epoch.
    pub fn row(&self, run_id: &str, epoch: Option<u64>) -> ErrorRow {
        ErrorRow {
            run_id: run_id.to_string(),
            epoch,
            phase: Phase::of(epoch),
            sample: self.sample.clone(),
            file: self.file.clone(),
            stage: self.stage.clone(),
            count: self.count,
            message: self.message.clone(),
            detail: self.detail.clone(),
        }
    }
}

/// A sample left out under `on_error: skip` (errors.csv): offline (in the store, no epoch) or
/// in an online epoch.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ErrorRow {
    pub run_id: String,
    #[serde(deserialize_with = "dash_or_empty")]
    pub epoch: Option<u64>,
    pub phase: Phase,
    pub sample: String,
    pub file: String,
    /// Where it failed: `read`, `deserialize` or `step:NAME`.
    pub stage: StageName,
    pub count: u64,
    pub message: String,
    /// A Python step's traceback; empty for other errors (and in files written before it).
    #[serde(default)]
    pub detail: String,
}

/// One rank's figures, or all ranks' (`rank` = `all`), for one epoch of `run --ranks`
/// (ranks.csv).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RankRow {
    pub run_id: String,
    pub workload: String,
    pub strategy: String,
    pub codec: Codec,
    pub threads: usize,
    pub cache: CacheState,
    pub epoch: u64,
    pub ranks: usize,
    /// The rank, or `all` for the aggregate: every sample over the slowest rank's time.
    pub rank: String,
    pub host: String,
    pub samples: u64,
    pub bytes: u64,
    #[serde(serialize_with = "fixed::<6, _>")]
    pub online_s: f64,
    #[serde(serialize_with = "fixed::<3, _>")]
    pub throughput_sps: f64,
    #[serde(serialize_with = "fixed::<3, _>")]
    pub mb_s: f64,
    /// The slowest rank's time over the fastest's, less one.
    #[serde(serialize_with = "fixed::<2, _>")]
    pub straggler_spread_pct: f64,
}

#[cfg(test)]
mod tests {
    use super::RunRow;

    #[test]
    fn a_run_is_disturbed_by_other_processes_and_by_the_hypervisor_alike() {
        let row = |foreign, steal| RunRow {
            foreign_load_pct: foreign,
            steal_pct: steal,
            ..RunRow::default()
        };
        assert_eq!(row(None, None).disturbed_pct(), None);
        assert_eq!(row(Some(3.0), None).disturbed_pct(), Some(3.0));
        // A VM's vCPUs held back 30 % of the time beside 2 % of other processes: heavy.
        let held = row(Some(2.0), Some(30.0)).disturbed_pct().unwrap();
        assert_eq!(held, 32.0);
        assert!(held > super::HEAVY_FOREIGN_LOAD_PCT);
    }
}
