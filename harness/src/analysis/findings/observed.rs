//! What the findings are judged on, the same for the paper's published figures and for our
//! measurements: per pipeline and storage, each strategy's cold throughput and the ratios the
//! findings are about (cache, codec, threads), each an estimate with its uncertainty or the
//! reason there is none. [`super::published`] fills it from `results/paper/*.csv`,
//! [`super::measured`] from a results folder; [`super::rules`] judges it.

use crate::analysis::cells::CellKey;
use crate::analysis::stats::LogEstimate;

/// An estimate (a mean over trials, a ratio of means, or an exact published figure), or why it
/// cannot be judged (one trial, epochs under the floor, ...).
pub type Figure = Result<LogEstimate, String>;

/// Where a pipeline's data was read from.
#[derive(Clone, Debug, PartialEq)]
pub enum Storage {
    /// The paper's own HDD-backed Ceph (its published figures).
    Paper,
    /// A network storage profile emulated on this machine (`paper-ceph-hdd`, ...).
    Emulated(String),
    /// This machine's local disk as it is.
    Local,
}

impl Storage {
    /// Network storage, real or emulated: what findings 1 to 3 are about.
    pub fn is_network(&self) -> bool {
        !matches!(self, Storage::Local)
    }

    /// The storage findings 4 to 6 are judged on: the paper's own, or our local disk (an
    /// emulated profile models cold reads, not the page cache or thread scaling of a device).
    pub fn judges_machine_claims(&self) -> bool {
        !matches!(self, Storage::Emulated(_))
    }
}

/// One pipeline measured on one storage.
#[derive(Clone, Debug)]
pub struct Pipeline {
    /// The paper's name of the pipeline (`cv`, `nlp`, ...).
    pub pipeline: String,
    /// How the report names it (`cv [storage paper-ceph-hdd]`).
    pub label: String,
    pub storage: Storage,
    /// Memory of the machine, GB: a store larger than this cannot stay in the page cache.
    pub memory_gb: f64,
    /// Logical cores of the machine.
    pub cores: usize,
    /// The most threads measured: cold throughput and ratios are taken there.
    pub threads: usize,
    /// In split order, the last the most preprocessed.
    pub strategies: Vec<Strategy>,
}

impl Pipeline {
    pub fn strategy(&self, name: &str) -> Option<&Strategy> {
        self.strategies.iter().find(|s| s.name == name)
    }

    pub fn last(&self) -> Option<&Strategy> {
        self.strategies.last()
    }
}

/// One strategy of a pipeline, codec none unless said otherwise.
#[derive(Clone, Debug, Default)]
pub struct Strategy {
    pub name: String,
    /// GB its store holds (for `unprocessed`, the raw files); `None` when not known.
    pub store_gb: Option<f64>,
    /// Cold samples per second at the pipeline's thread count; `None` when not measured.
    pub cold: Option<Figure>,
    /// The mean of the cold samples per second, whether or not it can be judged: which
    /// strategy is fastest is chosen by it, so a strategy that cannot be judged is never
    /// passed over for a slower one.
    pub cold_mean: Option<f64>,
    /// Page cache warm over cold.
    pub page_cache: Option<Figure>,
    /// Application-level (in-process) cache over cold.
    pub app_cache: Option<Figure>,
    /// Application-level cache over page cache warm.
    pub app_over_page: Option<Figure>,
    /// Each compression codec measured against none.
    pub codecs: Vec<Compressed>,
    /// Cold throughput at the paper's most threads ([`PAPER_THREADS`]), or the most measured
    /// where that is fewer, over the fewest: the range the paper's claims are about.
    pub scaling: Option<Scaling>,
    /// Cold throughput at the most threads over the fewest, where more than the paper's were
    /// measured: reported beside the claim, not judged by it.
    pub beyond: Option<Scaling>,
    /// What bound its cold epochs, measured (stage attribution); ours only.
    pub mechanism: Option<String>,
    /// The cells its figures come from (every codec, thread count and cache state); ours only.
    pub cells: Vec<CellKey>,
}

/// A strategy stored with a compression codec, against the same strategy uncompressed.
#[derive(Clone, Debug)]
pub struct Compressed {
    pub codec: String,
    /// Cold throughput with the codec over without.
    pub speedup: Figure,
    /// Stored bytes with the codec over without (exact).
    pub stored_fraction: Option<f64>,
    /// Offline time with the codec over without.
    pub offline_growth: Option<Figure>,
    /// What bound its cold epochs with the codec; ours only.
    pub mechanism: Option<String>,
}

/// The most threads the paper ran (its thread counts were 1, 2, 4 and 8).
pub const PAPER_THREADS: usize = 8;

/// Thread scaling of a strategy's cold throughput.
#[derive(Clone, Debug)]
pub struct Scaling {
    pub from: usize,
    pub to: usize,
    pub speedup: Figure,
    /// What bound its cold epochs at each end (`1 thread: ...; 2 threads: ...`), where both
    /// are known: why more threads did or did not help.
    pub mechanism: Option<String>,
}

/// One sample size of a synthetic reading experiment (finding 5).
#[derive(Clone, Debug)]
pub struct SizePoint {
    pub mb_per_sample: f64,
    /// MB per second read cold.
    pub cold_mb_s: Figure,
    /// MB per second with the page cache warm.
    pub warm_mb_s: Option<Figure>,
    /// The cells its figures come from; ours only.
    pub cells: Vec<CellKey>,
}

/// A synthetic reading experiment: one strategy over datasets of several sample sizes.
#[derive(Clone, Debug)]
pub struct SizeSeries {
    pub label: String,
    pub storage: Storage,
    /// Whether it is the paper's experiment (materialized records read back); other series
    /// (raw files, online processing) are shown for contrast only.
    pub judged: bool,
    pub sizes: Vec<SizePoint>,
}

/// Everything the findings are judged on.
#[derive(Clone, Debug, Default)]
pub struct Observations {
    pub pipelines: Vec<Pipeline>,
    pub sizes: Vec<SizeSeries>,
}

impl Observations {
    /// The runs of `pipeline`, on any storage.
    pub fn of<'a>(&'a self, pipeline: &'a str) -> impl Iterator<Item = &'a Pipeline> + 'a {
        self.pipelines
            .iter()
            .filter(move |p| p.pipeline == pipeline)
    }
}
