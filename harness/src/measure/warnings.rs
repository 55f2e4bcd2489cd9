//! Warnings a run can raise: each says what happened and what to do about it.

use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum Warning {
    /// A cold epoch started with the strategy's files still partly cached.
    StillResident {
        strategy: String,
        pct: f64,
        fs_type: String,
    },
    /// Fewer shards than worker threads: some workers have nothing to read.
    FewShards { shards: usize, threads: usize },
    /// The page cache could not be dropped system-wide; per-file eviction was used.
    NoDropCaches,
    /// A strategy's samples did not fit the application cache's limit.
    AppCacheTooSmall { strategy: String, limit_mb: f64 },
    /// Other processes used a large share of the machine during a run, measured again and
    /// still loaded.
    ForeignLoad { run_id: String, pct: f64 },
    /// An epoch delivered no sample (every one skipped, or none to read): nothing was measured.
    NothingDelivered {
        strategy: String,
        epoch: u64,
        skipped: u64,
    },
    /// Epochs shorter than a sweep's judged floor: start-up weighs on their figures.
    ShortEpochs {
        short: usize,
        epochs: usize,
        shortest_s: f64,
        floor_s: f64,
    },
}

impl Warning {
    /// Whether the command that met it must fail: its rows measured nothing.
    pub fn fails_the_command(&self) -> bool {
        matches!(self, Warning::NothingDelivered { .. })
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::StillResident {
                strategy,
                pct,
                fs_type,
            } => write!(
                f,
                "{strategy}: {pct:.1} % of its files were still in the page cache after eviction \
                 (filesystem {fs_type}); the cold row is marked valid=false. A memory-backed \
                 filesystem (tmpfs) cannot be evicted: put --data-dir and --store-dir on a disk."
            ),
            Warning::FewShards { shards, threads } => write!(
                f,
                "only {shards} shards for {threads} threads: {} workers have nothing to read; \
                 use --shards {threads} or more",
                threads - shards
            ),
            Warning::AppCacheTooSmall { strategy, limit_mb } => write!(
                f,
                "{strategy}: its samples do not fit the application cache's {limit_mb:.0} MB; \
                 its later epochs read from storage (rows cache=app-miss). Raise \
                 --app-cache-mb if memory allows"
            ),
            Warning::ForeignLoad { run_id, pct } => write!(
                f,
                "{run_id}: other processes and the hypervisor took {pct:.0} % of the machine's \
                 CPU during the run, and again when it was measured a second time; its rows are \
                 kept (see foreign_load_pct and steal_pct in runs.csv). Measure on an idle \
                 machine"
            ),
            Warning::NothingDelivered {
                strategy,
                epoch,
                skipped,
            } => write!(
                f,
                "{strategy}, epoch {epoch}: no sample was delivered ({skipped} skipped; \
                 errors.csv names them), so nothing was measured; its row is marked \
                 valid=false and the command fails"
            ),
            Warning::ShortEpochs {
                short,
                epochs,
                shortest_s,
                floor_s,
            } => write!(
                f,
                "{short} of {epochs} epochs lasted under {floor_s} s (the shortest {shortest_s:.3} \
                 s): thread start, file opens and first reads weigh on their samples/s as much \
                 as throughput, and a sweep would not judge them. For figures to compare, give \
                 more --samples, or `prepbench sweep` the strategies with --min-epoch-s \
                 {floor_s}, which sizes each epoch by time"
            ),
            Warning::NoDropCaches => write!(
                f,
                "cannot write /proc/sys/vm/drop_caches (not root?): evicting per file with \
                 posix_fadvise, which drops only these files' clean pages; run as root for \
                 the paper's system-wide drop"
            ),
        }
    }
}
