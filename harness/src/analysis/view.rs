//! One workload's cells with the questions reports ask of them: cold and warm throughput of a
//! strategy at a codec and thread count, the strategies in split order, the paper's figures.

use workloads::Codec;

use crate::analysis::cells::Cell;
use crate::analysis::paper::{self, PaperPipeline};
use crate::results::{CacheState, Condition};

pub struct WorkloadView<'a> {
    pub name: String,
    /// The storage profile and consumer its runs were measured under (empty: plain runs).
    pub condition: Condition,
    pub cells: Vec<&'a Cell>,
    /// (split, name), in split order.
    pub strategies: Vec<(usize, String)>,
    /// Codecs measured, `none` first.
    pub codecs: Vec<Codec>,
    pub threads: Vec<usize>,
    pub paper: Option<PaperPipeline>,
    pub paper_name: Option<String>,
}

impl<'a> WorkloadView<'a> {
    pub fn new(
        name: &str,
        condition: &Condition,
        all: &'a [Cell],
        paper_name: Option<String>,
    ) -> WorkloadView<'a> {
        let cells: Vec<&Cell> = all
            .iter()
            .filter(|c| c.key.workload == name && c.key.condition == *condition)
            .collect();
        let mut strategies: Vec<(usize, String)> = cells
            .iter()
            .map(|c| (c.key.split, c.key.strategy.clone()))
            .collect();
        strategies.sort();
        strategies.dedup();
        let mut codecs: Vec<Codec> = cells.iter().map(|c| c.key.codec).collect();
        codecs.sort_by_key(|c| (*c != Codec::None, c.to_string()));
        codecs.dedup();
        let mut threads: Vec<usize> = cells.iter().map(|c| c.key.threads).collect();
        threads.sort();
        threads.dedup();
        let paper = paper_name.as_deref().and_then(paper::pipeline);
        WorkloadView {
            name: name.to_string(),
            condition: condition.clone(),
            cells,
            strategies,
            codecs,
            threads,
            paper,
            paper_name,
        }
    }

    /// The name with its condition, as report headings and findings show it.
    pub fn title(&self) -> String {
        titled(&self.name, &self.condition)
    }

    /// Whether its runs read through an emulated storage profile.
    pub fn emulated_storage(&self) -> bool {
        self.condition.storage.is_some()
    }

    /// Whether its runs fed a simulated training consumer (their throughput is the consumer's).
    pub fn simulated_consumer(&self) -> bool {
        self.condition.consumer.is_some()
    }

    /// A file-name stem for the view's plots: the title with anything but letters, digits,
    /// `-`, `_`, `.`, `@`, `=` made `-`.
    pub fn file_stem(&self) -> String {
        file_stem_of(&self.title())
    }

    /// The workload a dataset variant (`name@k=v`) belongs to, and its options (none for a
    /// plain workload).
    pub fn label(&self) -> workloads::WorkloadLabel {
        workloads::WorkloadLabel::parse(&self.name)
    }

    pub fn max_threads(&self) -> usize {
        self.threads.last().copied().unwrap_or(1)
    }

    /// The cell of `strategy` at `codec` and `threads` for a cache label and epoch. `unprocessed`
    /// is stored as codec `none` whatever codec is asked.
    pub fn cell(
        &self,
        strategy: &str,
        codec: Codec,
        threads: usize,
        cache: CacheState,
        epoch: u64,
    ) -> Option<&'a Cell> {
        self.cells.iter().copied().find(|c| {
            c.key.strategy == strategy
                && (c.key.codec == codec || c.key.split == 0)
                && c.key.threads == threads
                && c.key.cache == cache
                && c.key.epoch == epoch
        })
    }

    /// Epoch 0 after eviction (falls back to a prefetched epoch 0 when no cold runs exist).
    pub fn cold(&self, strategy: &str, codec: Codec, threads: usize) -> Option<&'a Cell> {
        self.cell(strategy, codec, threads, CacheState::Cold, 0)
    }

    /// Epoch 1: the page cache as epoch 0 left it (or a prefetched epoch 0).
    pub fn warm(&self, strategy: &str, codec: Codec, threads: usize) -> Option<&'a Cell> {
        self.cell(strategy, codec, threads, CacheState::Warm, 1)
            .or_else(|| self.cell(strategy, codec, threads, CacheState::Warm, 0))
    }

    /// The strategy that reads the raw files (split 0, `unprocessed`), when measured.
    pub fn raw_strategy(&self) -> Option<&str> {
        self.strategies
            .iter()
            .find(|(split, _)| *split == 0)
            .map(|(_, s)| s.as_str())
    }

    /// The last strategy (the most preprocessed one measured).
    pub fn last_strategy(&self) -> Option<&str> {
        self.strategies.last().map(|(_, n)| n.as_str())
    }
}

/// A workload's name with the condition it ran under: `cv [storage paper-ceph-hdd]`.
pub fn titled(name: &str, condition: &Condition) -> String {
    if condition.is_plain() {
        name.to_string()
    } else {
        format!("{name} [{condition}]")
    }
}

/// `text` as a file name: characters other than ASCII letters, digits and `-_.@=` become `-`,
/// and runs of `-` one.
pub fn file_stem_of(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.@=".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect::<String>()
        .split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}
