//! Command-line options, in the user's words.

pub mod commands;
pub mod entry;
mod parse;
mod places;
mod reading;
pub mod show;
pub mod terminal;

use parse::{count_in, megabytes, positive_seconds};
pub use places::PlaceArgs;
pub use reading::{CalibrateArgs, CompareArgs, StoreWhat, WhatifArgs};

use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};
use workloads::{CacheMode, Codec};

use crate::plan::run::RunOptions;
use crate::plan::sweep::SweepOptions;
use crate::plan::Settings;

#[derive(Debug, Parser)]
#[command(
    name = "prepbench",
    version,
    about = "Where should your preprocessing pipeline be split between offline and online? Measure every split on your hardware."
)]
pub struct Cli {
    /// No progress bars or status lines (errors still go to stderr).
    #[arg(long, global = true)]
    pub quiet: bool,
    /// The Python interpreter that runs `op: python` steps (default: $PREPBENCH_PYTHON, else
    /// python3): the one with your pipeline's packages installed.
    #[arg(long, global = true, value_name = "PATH")]
    pub python: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run strategies of a workload: materialize, prepare the cache, read online, record.
    #[command(after_help = "Examples:\n  \
        prepbench run cv --strategy resized,decoded --samples 300 --verify\n  \
        prepbench run my-pipeline.yaml --dataset ~/photos --threads 8 --codec zstd\n  \
        prepbench run cv --storage paper-ceph-hdd --cache warm --epochs 3")]
    Run(RunArgs),
    /// Sweep a workload's matrix (strategies x codecs x threads x cache x trials); resumable.
    #[command(after_help = "Examples:\n  \
        prepbench sweep cv --threads 1,2,4 --codecs none,gzip --trials 5\n  \
        prepbench sweep my-pipeline.yaml --min-epoch-s 2 --max-trials 10 --out results/mine\n  \
        prepbench sweep cv --storage local,paper-ceph-hdd --consumer batch=32,compute=100ms")]
    Sweep(Box<SweepArgs>),
    /// Write summary.csv, report.md, report.json and plots/*.svg for a results folder.
    #[command(after_help = "Examples:\n  \
        prepbench report results/cv-sweep                  report.md, summary.csv, plots/ there\n  \
        prepbench report R --out /tmp/cv-report --weights 1,1,1 --epochs 90")]
    Report {
        /// A results folder (holding runs.csv).
        dir: PathBuf,
        /// Write summary.csv, report.md, report.json and plots/ into this folder instead of the
        /// results folder (created if missing; one holding files a report did not write is
        /// refused).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// A folder of peer measurements to fold in (`python3 scripts/peers/run_peers.py
        /// --records --out PEERS`: finding 5's cost per record beside tf.data's TFRecordDataset).
        #[arg(long)]
        peers: Option<PathBuf>,
        /// Weights of offline time, storage and throughput (P,S,T) the report's recommendation
        /// for your own workloads ranks by.
        #[arg(long, default_value = "0,0,1")]
        weights: crate::analysis::recommend::Weights,
        /// Training epochs the recommendation plans for.
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
        epochs: u64,
    },
    /// Rank strategies: PRESTO's weighted score (fixed), the Pareto set, total time over E epochs.
    #[command(after_help = "Examples:\n  \
        prepbench recommend results/cv-sweep                         throughput first, 10 epochs\n  \
        prepbench recommend R --weights 1,1,1 --epochs 90 --memory 64GB\n  \
        prepbench recommend R --dataset-samples 1281167 --csv > ranked.csv")]
    Recommend {
        /// A results folder.
        dir: PathBuf,
        /// Weights of offline time, storage and throughput, as P,S,T.
        #[arg(long, default_value = "0,0,1")]
        weights: crate::analysis::recommend::Weights,
        /// Training epochs to plan for.
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
        epochs: u64,
        /// Memory for the page cache: `16GB`, `64GiB`, or bytes (default: the measured
        /// machine's memory).
        #[arg(long, visible_alias = "memory", value_parser = crate::units::parse_bytes, value_name = "SIZE")]
        memory_bytes: Option<u64>,
        /// Dataset size to plan for, in samples; times and storage scale linearly (default:
        /// the runs'). Planning far beyond the samples measured gets a caution.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000_000))]
        dataset_samples: Option<u64>,
        /// Print every candidate as CSV (rank 1 is the recommendation) instead of Markdown.
        #[arg(long, conflicts_with = "json")]
        csv: bool,
        /// Print every candidate as JSON (rank 1 is the recommendation) instead of Markdown.
        #[arg(long)]
        json: bool,
    },
    /// Compare two results folders cell by cell: throughput ratio B/A with a 95 % CI,
    /// corrected for the number of cells, faster / slower / no change beyond a noise threshold.
    #[command(after_help = "Examples:\n  \
        prepbench compare results/laptop results/server            two machines, every setting equal\n  \
        prepbench compare OLD NEW --json > changes.json            two versions, as JSON\n  \
        prepbench compare R R --across threads --values 1,2        one sweep: 2 threads vs 1\n  \
        prepbench compare R R --across storage --values local,paper-ceph-hdd --plot storage.svg")]
    Compare(CompareArgs),
    /// Generate the datasets, sweep every reference workload at a scale, write the report.
    #[command(after_help = "Examples:\n  \
        prepbench reproduce --scale quick                  about 20 minutes on 2 cores\n  \
        prepbench reproduce --loaders native,tf-data       also under tf.data: about 31 minutes\n  \
        prepbench reproduce --scale medium --out results/medium --seed 1")]
    Reproduce {
        /// How much to run: `quick` (about 20 minutes on 2 cores, epochs of a second or more)
        /// or larger scales with more samples, trials and threads.
        #[arg(long, value_enum, default_value = "quick")]
        scale: crate::plan::reproduce::ScaleName,
        /// Seed of the generated datasets, of random online steps and of the sweeps' run order.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Loaders to judge the paper under, comma-separated: native (prepbench's own engine,
        /// always run) and tf-data (the paper's stack) or torch, each running the local
        /// workloads it has forms for at the most threads, cold and warm; the report judges
        /// every finding under each, side by side (default: native).
        #[arg(long, value_delimiter = ',')]
        loaders: Option<Vec<String>>,
        #[command(flatten)]
        places: PlaceArgs,
    },
    /// Check workload files strictly (unknown keys, ops, parameters, impossible splits).
    #[command(after_help = "Examples:\n  \
        prepbench validate my-pipeline.yaml workloads/defs/*.yaml")]
    Validate {
        /// Workload YAML files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// List reference workloads, steps with their parameters, a workload's strategies, or datasets.
    #[command(after_help = "Examples:\n  \
        prepbench list workloads\n  \
        prepbench list strategies cv\n  \
        prepbench list steps")]
    List {
        #[command(subcommand)]
        what: ListWhat,
    },
    /// Work with workload files: print a reference workload's YAML to start your own from.
    #[command(after_help = "Examples:\n  \
        prepbench workload show cv > my-cv.yaml")]
    Workload {
        #[command(subcommand)]
        what: WorkloadWhat,
    },
    /// List the materialized stores a store directory holds (what, how large, whether still
    /// usable), or remove those you no longer need.
    #[command(after_help = "Examples:\n  \
        prepbench store list\n  \
        prepbench store remove --incomplete --dry-run")]
    Store {
        #[command(subcommand)]
        what: StoreWhat,
    },
    /// Generate a dataset in the real dataset's on-disk layout.
    #[command(after_help = "Examples:\n  \
        prepbench generate imagenet --samples 2000 --out data/imagenet\n  \
        prepbench generate librispeech --samples 100 --out data/speech --seed 3")]
    Generate(GenerateArgs),
    /// Look at one sample after any step: write it as .npy and .png, or list its fields after
    /// every step (where storage explodes).
    #[command(after_help = "Examples:\n  \
        prepbench show cv --sample 3 --after resized --out resized.png\n  \
        prepbench show cv --sample 3 --list")]
    Show(ShowArgs),
    /// Measure what the prediction model needs: this machine's storage and memory figures
    /// (cached per machine) and each strategy's CPU cost per stage; recorded in the results
    /// folder's manifest (a sweep does this first unless --no-calibrate).
    #[command(after_help = "Examples:\n  \
        prepbench calibrate cv --out results/cv-cal\n  \
        prepbench calibrate my-pipeline.yaml --samples 500 --recalibrate")]
    Calibrate(CalibrateArgs),
    /// Predict every swept strategy's throughput on other hardware from a results folder's
    /// calibration: the recommended strategy there and where the recommendation changes.
    #[command(after_help = "Examples:\n  \
        prepbench whatif results/cv-sweep --profile paper\n  \
        prepbench whatif R --cores 32 --read-mbps 200 --latency-ms 5 --codec gzip\n  \
        prepbench whatif R --cpu-speed 2 --json > predictions.json")]
    Whatif(WhatifArgs),
    /// Merge the shards of a sweep (`sweep --shard`, or run under mpirun or a Slurm array)
    /// into one results folder; refuses shards of different sweeps or a missing shard.
    #[command(after_help = "Examples:\n  \
        prepbench merge results/cv-sweep                   shard-I-of-N folders inside it\n  \
        prepbench merge host-a/cv host-b/cv --out results/cv")]
    Merge {
        /// Shard results folders, or folders holding shard-I-of-N folders.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// The merged folder (default: the one folder given, when it holds the shards).
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// A reference workload name (`cv`) or a workload YAML path.
    pub workload: String,
    /// The sample (source item) in source order.
    #[arg(long, default_value_t = 0)]
    pub sample: usize,
    /// After a fan-out step (NILM's windows): which of the item's outputs.
    #[arg(long, default_value_t = 0)]
    pub part: usize,
    /// Show it after this step: its name, its op, or a unique prefix of its name (default: the
    /// last step).
    #[arg(long)]
    pub after: Option<String>,
    /// Show it as this strategy stores it (after the steps before its split).
    #[arg(long)]
    pub strategy: Option<String>,
    /// The field to write to a .npy or .png file (default: the largest tensor).
    #[arg(long)]
    pub field: Option<String>,
    /// Where to write: FILE.npy (NumPy), FILE.png (an image with its boxes, or a spectrogram),
    /// or a directory (every field as .npy, and .png where it can be drawn).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the sample's fields, dtypes, shapes and bytes after every step instead.
    #[arg(long)]
    pub list: bool,
    /// Seed of random steps (a random crop's draw depends on seed, epoch and sample).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Epoch of random steps: the same sample draws a different crop in another epoch.
    #[arg(long, default_value_t = 0)]
    pub epoch: u64,
    /// Where datasets live: a folder (datasets generated there when missing), or with
    /// `--features s3` an `s3://bucket/prefix` (read there, never generated there).
    #[arg(long, default_value = "data")]
    pub data_dir: PathBuf,
    /// Your dataset, read in place of the workload's (never generated).
    #[arg(long)]
    pub dataset: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum WorkloadWhat {
    /// Print a reference workload's YAML (as shipped), e.g. `prepbench workload show cv >
    /// my.yaml`, then edit `dataset` and `steps`.
    Show {
        /// A reference workload name (`prepbench list workloads`).
        name: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ListWhat {
    /// The reference workloads shipped with prepbench.
    Workloads,
    /// Every step op and its parameters.
    Steps,
    /// The strategies (split points) of a workload.
    Strategies {
        /// A reference workload name or a YAML path.
        workload: String,
    },
    /// The dataset kinds and their layouts.
    Datasets,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// A reference workload name (`cv`) or a workload YAML path.
    pub workload: String,
    /// Strategies to run, comma-separated, or `all` (the default).
    #[arg(long, value_delimiter = ',', default_value = "all")]
    pub strategy: Vec<String>,
    /// Worker threads for the offline and online phases (default: available cores).
    #[arg(long, value_parser = count_in::<1, 4_096>)]
    pub threads: Option<usize>,
    /// Codec of materialized shards: none, gzip[:L], zlib[:L], zstd[:L], lz4.
    #[arg(long, default_value = "none")]
    pub codec: Codec,
    /// Cache mode: cold (evicted), warm (prefetched) or app (epoch 0 cold, filling an
    /// in-process cache that later epochs are served from).
    #[arg(long, default_value = "cold")]
    pub cache: CacheMode,
    /// Storage profile the online reads are delayed to: local (none), paper-ceph-hdd, or one
    /// defined under the workload's storage_profiles (default: its first sweep.storage).
    #[arg(long)]
    pub storage: Option<String>,
    /// The loader that runs the online phase: native (prepbench's own engine), torch (a
    /// PyTorch DataLoader with num_workers = --threads, in the --python interpreter, which
    /// needs PyTorch and this package: pip install ".[torch]") or tf-data (the paper's stack:
    /// TFRecordDataset and TensorFlow ops, pip install ".[tf]").
    #[arg(long, default_value = "native")]
    pub loader: String,
    /// Print the rows as JSON lines on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Read concurrently from every MPI rank: under `mpirun -np N`, each rank reads its
    /// partition of each strategy after a synchronised start; rank 0 writes ranks.csv
    /// (aggregate and per-rank throughput, straggler spread). Needs a build with
    /// `--features mpi`.
    #[arg(long)]
    pub ranks: bool,
    #[command(flatten)]
    pub measure: MeasureArgs,
    #[command(flatten)]
    pub places: PlaceArgs,
}

impl RunArgs {
    /// The run this asks for.
    pub fn options(&self) -> RunOptions {
        RunOptions {
            workload: self.workload.clone(),
            strategies: self.strategy.clone(),
            threads: self.threads.unwrap_or_else(default_threads),
            codec: self.codec,
            cache: self.cache,
            storage: self.storage.clone(),
            loader: self.loader.clone(),
            settings: self.measure.settings(),
        }
    }
}

/// How each run is measured: the options `run` and `sweep` share.
#[derive(Debug, Args, Clone)]
pub struct MeasureArgs {
    /// Samples per run: the first N of the dataset (default: the workload's).
    #[arg(long, value_parser = count_in::<1, 100_000_000>)]
    pub samples: Option<usize>,
    /// Shards per materialized strategy (default: the workload's sweep.shards).
    #[arg(long, value_parser = count_in::<1, 65_536>)]
    pub shards: Option<usize>,
    /// Epochs per run; epochs after the first start from the cache the previous one left
    /// (default: the workload's sweep.epochs).
    #[arg(long, value_parser = count_in::<1, 10_000>)]
    pub epochs: Option<usize>,
    /// Memory the application cache (`--cache app`) may hold, in MB (default: half the
    /// memory available when the run starts).
    #[arg(long, value_parser = megabytes)]
    pub app_cache_mb: Option<f64>,
    /// Seed of random online steps (and of a sweep's run order).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Check that each strategy's output equals fully-online processing, sample by sample (a
    /// sweep checks each strategy and codec once).
    #[arg(long)]
    pub verify: bool,
    /// Materialize again even when a complete matching store exists.
    #[arg(long)]
    pub rematerialize: bool,
    /// Simulated training: batch=N,compute=TIME[,mode=sleep|spin][,prefetch=K]; TIME is 100ms,
    /// normal:MEAN:SD or uniform:LO:HI. Adds AU, stall share and batch waits, and a null-I/O
    /// control row.
    #[arg(long)]
    pub consumer: Option<workloads::ConsumerSpec>,
    /// A sample that cannot be read or processed: fail (stop, naming the file) or skip (count
    /// it in runs.csv skipped_samples, name it in errors.csv, go on). Default: the workload's
    /// on_error, else fail.
    #[arg(long)]
    pub on_error: Option<workloads::OnError>,
    /// Options of the loaders that take them, comma-separated: for torch,
    /// batch=N,prefetch=K|default,pin=true|false,persistent=true|false (default:
    /// batch=32,prefetch=default,pin=false,persistent=false; the DataLoader's own names,
    /// batch_size=N and so on, work too); for tf-data, autotune=true|false
    /// (default: true, tf.data's autotuning on). Recorded in runs.csv loader_options; runs with
    /// other options are another condition, never pooled.
    #[arg(long)]
    pub loader_options: Option<String>,
    /// Memory, in MB, each run's epochs and their page cache may use, as on a machine with that
    /// much memory: prepbench runs its epochs (and its loader's processes) in a memory cgroup
    /// of its own (v1, or v2 where the memory controller is delegated; needs root). Recorded
    /// in runs.csv memory_limit_mb, a condition of its own. Not with --cache app.
    #[arg(long, value_parser = count_in::<{ crate::measure::memory_limit::MIN_LIMIT_MB as usize }, 1_000_000_000>)]
    pub memory_limit_mb: Option<usize>,
}

impl MeasureArgs {
    pub fn settings(&self) -> Settings {
        Settings {
            samples: self.samples,
            shards: self.shards,
            epochs: self.epochs,
            app_cache_mb: self.app_cache_mb,
            seed: self.seed,
            verify: self.verify,
            rematerialize: self.rematerialize,
            consumer: self.consumer,
            on_error: self.on_error,
            min_epoch_s: None,
            loader_options: self.loader_options.clone(),
            memory_limit_mb: self.memory_limit_mb.map(|mb| mb as u64),
        }
    }
}

/// `results/local/<workload><suffix>`, the workload named as its file names it.
pub fn default_out(workload: &str, suffix: &str) -> PathBuf {
    let name = workloads::load_spec(workload)
        .map(|w| w.label())
        .unwrap_or_else(|_| "workload".into());
    Path::new("results/local").join(workloads::path_component(&format!("{name}{suffix}")))
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// A reference workload name (`cv`) or a workload YAML path.
    pub workload: String,
    /// Trials per cell (default: the workload's sweep.trials).
    #[arg(long, value_parser = count_in::<1, 10_000>)]
    pub trials: Option<usize>,
    /// Then add trials, one round at a time, to every setting whose 95 % CI half-width is over
    /// 5 % of its mean, up to this many.
    #[arg(long, value_parser = count_in::<1, 10_000>)]
    pub max_trials: Option<usize>,
    /// Thread counts, comma-separated.
    #[arg(long, value_parser = count_in::<1, 4_096>, value_delimiter = ',')]
    pub threads: Option<Vec<usize>>,
    /// Run the thread counts below the most only for these strategies, comma-separated (a
    /// thread-scaling check without the whole matrix at every count; default: all).
    #[arg(long, value_delimiter = ',')]
    pub scaling_strategies: Option<Vec<String>>,
    /// Run `--cache app` only for these strategies, at the most threads, comma-separated (an
    /// application-cache check without the whole matrix twice; default: every stored one).
    #[arg(long, value_delimiter = ',')]
    pub app_cache_strategies: Option<Vec<String>>,
    /// Run the page-cache epochs (those after the cold one) only for these strategies,
    /// comma-separated; the others' cold runs end after their cold epoch (a page-cache check
    /// without a warm epoch of every strategy; default: all).
    #[arg(long, value_delimiter = ',')]
    pub page_cache_strategies: Option<Vec<String>>,
    /// Codecs, comma-separated: none, gzip[:L], zlib[:L], zstd[:L], lz4.
    #[arg(long, value_delimiter = ',')]
    pub codecs: Option<Vec<Codec>>,
    /// Strategies, comma-separated (default: the workload's sweep.strategies, or all).
    #[arg(long, value_delimiter = ',')]
    pub strategies: Option<Vec<String>>,
    /// Cache modes, comma-separated: cold, warm, app (an in-process cache filled in epoch 0).
    #[arg(long, value_delimiter = ',')]
    pub cache: Option<Vec<CacheMode>>,
    /// Storage profiles, comma-separated: local, paper-ceph-hdd, or the workload's own
    /// (default: the workload's sweep.storage).
    #[arg(long, value_delimiter = ',')]
    pub storage: Option<Vec<String>>,
    /// Loaders, comma-separated: native (prepbench's own engine), torch (a PyTorch
    /// DataLoader, num_workers = the threads), tf-data (the paper's tf.data); every loader
    /// reads the same stores under the same protocol (default: native).
    #[arg(long, value_delimiter = ',')]
    pub loaders: Option<Vec<String>>,
    /// MB of data per dataset variant, for workloads that sweep dataset options (synthetic
    /// sample sizes): each variant gets this many MB of samples.
    #[arg(long, value_parser = megabytes)]
    pub dataset_mb: Option<f64>,
    /// Sweep at most this many of the dataset variants (evenly spread, the smallest and
    /// largest kept).
    #[arg(long, value_parser = count_in::<1, 10_000>)]
    pub variants: Option<usize>,
    /// Materializations per (strategy, codec), each timed into offline.csv.
    #[arg(long, value_parser = count_in::<1, 1_000>, default_value_t = 1)]
    pub offline_trials: usize,
    /// Run one shard of the sweep, I/N (0 <= I < N), into OUT/shard-I-of-N; merge the shards
    /// with `prepbench merge OUT`. Default: from the launcher (Open MPI, MPICH/Intel MPI, a
    /// Slurm job array, a Kubernetes Indexed Job with PREPBENCH_SHARD_COUNT), else the whole
    /// sweep.
    #[arg(long)]
    pub shard: Option<crate::results::Shard>,
    /// Skip calibrating the prediction model before the runs (then report.md has no
    /// roofline unless the folder was calibrated before).
    #[arg(long)]
    pub no_calibrate: bool,
    /// Measure the machine again instead of using its cached calibration.
    #[arg(long)]
    pub recalibrate: bool,
    /// Size each store (and the dataset, for raw files) from the calibration so that every
    /// epoch lasts at least this many seconds; stores larger than the dataset cycle over it.
    #[arg(long, value_parser = positive_seconds)]
    pub min_epoch_s: Option<f64>,
    #[command(flatten)]
    pub measure: MeasureArgs,
    #[command(flatten)]
    pub places: PlaceArgs,
}

impl SweepArgs {
    /// The sweep this asks for; the shard is `--shard`, else the launcher's (read through
    /// `var`).
    pub fn options(&self, var: &dyn Fn(&str) -> Option<String>) -> anyhow::Result<SweepOptions> {
        let shard = match &self.shard {
            Some(shard) => Some(shard.clone()),
            None => crate::plan::partition::from_launcher(var)
                .map_err(|e| anyhow::anyhow!("sharding the sweep: {e}"))?,
        };
        Ok(SweepOptions {
            workload: self.workload.clone(),
            strategies: self.strategies.clone(),
            codecs: self.codecs.clone(),
            threads: self.threads.clone(),
            scaling_strategies: self.scaling_strategies.clone(),
            app_cache_strategies: self.app_cache_strategies.clone(),
            page_cache_strategies: self.page_cache_strategies.clone(),
            cache: self.cache.clone(),
            trials: self.trials,
            max_trials: self.max_trials,
            offline_trials: self.offline_trials,
            dataset_mb: self.dataset_mb,
            variants: self.variants,
            storage: self.storage.clone(),
            loaders: self.loaders.clone(),
            settings: Settings {
                min_epoch_s: self.min_epoch_s,
                ..self.measure.settings()
            },
            calibrate: !self.no_calibrate || self.min_epoch_s.is_some(),
            recalibrate: self.recalibrate,
            calibrate_only: false,
            shard,
            trials_at_least: Vec::new(),
        })
    }
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Dataset kind (see `prepbench list datasets`).
    pub kind: String,
    /// How many samples (images, recordings, documents) to generate.
    #[arg(long, value_parser = count_in::<1, 100_000_000>)]
    pub samples: usize,
    /// The dataset's folder; with `--features s3`, an `s3://bucket/prefix` to upload it to
    /// (generated in a local staging folder first).
    #[arg(long)]
    pub out: PathBuf,
    /// Seed of the content: the same seed and sample count give the same files.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Generator threads (default: available cores).
    #[arg(long, value_parser = count_in::<1, 4_096>)]
    pub threads: Option<usize>,
    /// A generator option KEY=VALUE (see `prepbench list datasets`); repeatable.
    #[arg(long, value_parser = parse_option)]
    pub option: Vec<(String, String)>,
}

fn parse_option(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .ok_or_else(|| format!("`{text}`: options are KEY=VALUE"))
}

pub fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

#[cfg(test)]
mod tests;
