//! Epochs sized per loader. Stores and the raw dataset are sized for prepbench's own engine
//! (`sizing.rs`, from its calibration), and a loader slower than it (tf.data, a DataLoader)
//! would spend ten or twenty times the floor on an epoch of the same store: in the quick
//! reproduction under both loaders, 40 s per cold NILM `aggregated` epoch under tf.data where
//! the floor is 1 s. So each (strategy, codec) under such a loader is timed in two cold epochs
//! (the faster taken) over its store's first shards, one per thread (raw files: its first
//! items), at the most threads its cells use, from its first sample, and
//! its runs then read the store's first shards (the dataset's first items) that make the
//! epoch last the floor: the same store and records, fewer of them, at least a shard per
//! thread. The part is recorded in the manifest's sizing, so a resumed sweep reads the same.

use std::collections::HashMap;

use workloads::{CacheMode, Codec, StorageProfile, Strategy};

use super::{Pending, SweepRun, VerdictKey};
use crate::measure::epochs::RunSpec;
use crate::measure::session::Materialized;
use crate::plan::sizing::Sizes;
use crate::results::{Manifest, SizingEntry};

/// Parts aim this much above the floor, more than the model's sizing does (`sizing::MARGIN`):
/// a probe of a shard per thread errs more, and a part short of the floor leaves its cells
/// unjudged (at 1.2 a quick reproduction's 20.48 MB synthetic epochs under tf.data lasted 0.87
/// s against a 1 s floor).
const PART_MARGIN: f64 = 1.5;

/// What the runs under a loader slower than the sizing read, by (strategy, codec, loader).
#[derive(Default)]
pub(super) struct Parts {
    /// A store's first shards.
    pub stores: HashMap<VerdictKey, Materialized>,
    /// The raw dataset's first items.
    pub items: HashMap<VerdictKey, usize>,
}

/// Raw items a probe reads: a sixteenth of the dataset, at least a few per thread.
fn probe_items(len: usize, threads: usize) -> usize {
    (len / 16).max(4 * threads).min(len)
}

/// The first shards of `records` (each shard's records) that hold `need` records, and at
/// least one shard per thread.
fn shards_holding(records: &[u64], need: f64, threads: usize) -> usize {
    let mut held = 0u64;
    let mut shards = 0;
    for r in records {
        if held as f64 >= need {
            break;
        }
        held += r;
        shards += 1;
    }
    shards.max(threads).min(records.len())
}

impl SweepRun<'_> {
    /// The part of the raw files each raw strategy reads under each slower loader.
    pub(super) fn raw_parts(
        &self,
        asked: (&Pending, &Sizes),
        parts: &mut Parts,
    ) -> anyhow::Result<()> {
        for (strategy, codec) in self.plan.strategy_codecs() {
            if strategy.split > 0 {
                continue;
            }
            for loader in self.plan.loaders() {
                if let Some(n) = self.part(&strategy, codec, None, loader, asked)? {
                    parts
                        .items
                        .insert((strategy.name.clone(), codec, loader), n);
                }
            }
        }
        Ok(())
    }

    /// How much of `stored` (shards; the raw files when `None`: items) the runs of
    /// (`strategy`, `codec`) under `loader` read for their epochs to last the floor: recorded
    /// by an earlier sweep of the folder (in `sizes`), or timed now. `None`: all of it
    /// (prepbench's own engine, epochs not sized by time, no run pending, or the loader as fast
    /// as the sizing).
    pub(super) fn part(
        &self,
        strategy: &Strategy,
        codec: Codec,
        stored: Option<&Materialized>,
        loader: &'static str,
        (pending, sizes): (&Pending, &Sizes),
    ) -> anyhow::Result<Option<usize>> {
        let Some(floor) = self.opts.settings.min_epoch_s else {
            return Ok(None);
        };
        let of_loader =
            |c: &&super::Cell| c.strategy == *strategy && c.codec == codec && c.loader == loader;
        if crate::measure::online::is_default(loader)
            || !pending.cells.iter().any(|c| of_loader(&c))
        {
            return Ok(None);
        }
        let threads = (self.plan.cells.iter().filter(of_loader))
            .map(|c| c.threads)
            .max()
            .unwrap_or(1);
        let whole = stored.map_or(self.executor.session.source.len(), |m| {
            m.manifest.shards.len()
        });
        let key = format!("{loader}:{}", SizingEntry::store_key(&strategy.name, codec));
        let n = match sizes.loader_parts.get(&key).copied() {
            Some(n) => n,
            None => {
                let n = self.probe(strategy, stored, loader, threads, floor)?;
                Manifest::update(&self.places.out, |m| {
                    if let Some(sizing) = m.sizing.get_mut(&self.name) {
                        sizing.loader_parts.insert(key.clone(), n);
                    }
                })?;
                n
            }
        };
        if n < whole {
            let unit = if stored.is_some() { "shards" } else { "items" };
            self.places.progress.note(&format!(
                "{}: {} ({codec}) under {loader} reads {n} of {whole} {unit} so that its epochs \
                 last {floor} s",
                self.name, strategy.name
            ));
        }
        Ok((n < whole).then_some(n))
    }

    /// Times one cold epoch of (`strategy`) under `loader` on `threads` over the store's first
    /// shard per thread (the raw files' first items) and gives the shards (items) whose epoch
    /// lasts `floor` with the sizing's margin.
    fn probe(
        &self,
        strategy: &Strategy,
        stored: Option<&Materialized>,
        loader: &'static str,
        threads: usize,
        floor: f64,
    ) -> anyhow::Result<usize> {
        let session = &self.executor.session;
        let (first, items, read, whole) = match stored {
            // A shard per thread, the least a part reads: one shard would be read by one of
            // tf.data's parallel reads, slower than the part's epochs read theirs.
            Some(m) => match m.first_shards(threads) {
                Some(first) => {
                    let records = first.manifest.shards.iter().map(|s| s.records as f64).sum();
                    (Some(first), None, records, m.manifest.shards.len())
                }
                None => return Ok(m.manifest.shards.len()),
            },
            None => {
                let len = session.source.len();
                let n = probe_items(len, threads);
                if n >= len {
                    return Ok(len);
                }
                (None, Some(n), n as f64, len)
            }
        };
        let local = StorageProfile::local();
        let spec = RunSpec {
            run_id: format!("probe-{loader}-{}", strategy.name),
            strategy,
            stored: first.as_ref().or(stored),
            items,
            threads,
            cache: CacheMode::Cold,
            // Two, each cold, the faster one taken: a loader's first epoch in a fresh process
            // is slower than its later ones (its memory not yet mapped), and the runs that
            // follow are served by the process the probe leaves idle (at 1 the quick
            // reproduction's 20.48 MB synthetic epochs under tf.data lasted 0.6-0.9 s).
            epochs: 2,
            seed: self.opts.settings.seed,
            trial: 0,
            verify: false,
            app_cache_bytes: 0,
            storage: &local,
            consumer: None,
            loader: crate::measure::online::engine(loader).expect("checked by Plan::new"),
            loader_options: self.plan.loader_options(loader),
            min_epoch_s: None,
            start_gate: None,
            memory_limit_mb: None,
        };
        self.places.progress.note(&format!(
            "{}: timing {} under {loader} to size its epochs",
            self.name, strategy.name
        ));
        let measured = session.measure(&spec).map_err(|e| {
            e.context(format!(
                "sizing the epochs of `{}` under the {loader} loader",
                strategy.name
            ))
        })?;
        // From the first sample: the pipeline's start, paid once per epoch, would make a short
        // probe's rate low and the part's epochs short of the floor.
        let seconds = measured
            .rows
            .iter()
            .map(|r| r.online_s - r.first_sample_s.unwrap_or(0.0).clamp(0.0, r.online_s / 2.0))
            .fold(f64::INFINITY, f64::min);
        if !(seconds > 0.0 && seconds.is_finite()) {
            return Ok(whole);
        }
        let need = floor * PART_MARGIN * read / seconds;
        Ok(match stored {
            Some(m) => {
                let records: Vec<u64> = m.manifest.shards.iter().map(|s| s.records).collect();
                shards_holding(&records, need, threads)
            }
            None => (need.ceil() as usize).max(4 * threads).min(whole),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_holds_what_the_floor_needs_and_a_shard_per_thread() {
        let records = [100, 100, 100, 100];
        assert_eq!(shards_holding(&records, 150.0, 1), 2);
        assert_eq!(shards_holding(&records, 200.0, 1), 2);
        assert_eq!(shards_holding(&records, 201.0, 1), 3);
        assert_eq!(shards_holding(&records, 10.0, 3), 3);
        assert_eq!(shards_holding(&records, 1e9, 1), 4);
        assert_eq!(shards_holding(&records, 10.0, 8), 4);
        assert_eq!(probe_items(1600, 2), 100);
        assert_eq!(probe_items(40, 2), 8);
        assert_eq!(probe_items(5, 2), 5);
    }
}
