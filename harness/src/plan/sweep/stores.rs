//! The sweep's offline phase: each (strategy, codec) materialized (its offline trials timed
//! into offline.csv), the stores the online runs read (each timed cold once, `checks.rs`),
//! the part of each that a slower loader reads (`parts.rs`), and each judged once per loader
//! when `--verify` asks.

use std::collections::HashMap;

use workloads::{Codec, Strategy};

use super::parts::Parts;
use super::{Pending, SweepOutcome, SweepRun, VerdictKey};
use crate::measure::session::Materialized;
use crate::plan::sizing::Sizes;
use crate::results::{OfflineRow, Verdict};

/// What the online runs read and what verification said of it.
#[derive(Default)]
pub(super) struct Prepared {
    pub stores: HashMap<(String, Codec), Materialized>,
    pub verdicts: HashMap<VerdictKey, Verdict>,
    pub parts: Parts,
}

impl SweepRun<'_> {
    /// The offline phase: each (strategy, codec) that a pending run or a missing offline trial
    /// needs, timed into offline.csv; the stores the online runs read, the part a loader slower
    /// than they were sized for reads, each verified once per loader.
    pub(super) fn make_stores(
        &mut self,
        pending: &Pending,
        sizes: &Sizes,
        outcome: &mut SweepOutcome,
    ) -> anyhow::Result<Prepared> {
        let mut prepared = Prepared::default();
        for (strategy, codec) in self
            .plan
            .strategy_codecs()
            .iter()
            .filter(|(s, _)| s.split > 0)
        {
            let current = self.offline_trials(strategy, *codec, pending)?;
            let needed_online = pending
                .cells
                .iter()
                .any(|c| c.strategy == *strategy && c.codec == *codec);
            if !needed_online {
                continue;
            }
            let session = &self.executor.session;
            let items = sizes.store_items(&strategy.name, *codec);
            let m = match current {
                Some(m) if m.manifest.samples as usize == items => m,
                _ => {
                    let layout = (self.plan.shards, items);
                    session.store_sized(
                        strategy,
                        *codec,
                        layout,
                        self.max_threads,
                        false,
                        self.cold,
                    )?
                }
            };
            let m = self.checked_store((strategy, *codec), m, (pending, sizes))?;
            for loader in self.plan.loaders() {
                let key = (strategy.name.clone(), *codec, loader);
                if let Some(part) = self
                    .part(strategy, *codec, Some(&m), loader, (pending, sizes))?
                    .and_then(|p| m.part(p.n, p.per_shard))
                {
                    prepared.parts.stores.insert(key.clone(), part);
                }
                if !self.opts.settings.verify {
                    continue;
                }
                // What the runs under the loader read, judged: the part, or the whole store.
                let read = prepared.parts.stores.get(&key).unwrap_or(&m);
                let verdict = if m.reused && pending.passed.contains(&key) {
                    Verdict::Pass
                } else {
                    self.verdict(strategy, (Some(read), None), loader, outcome)?
                };
                prepared.verdicts.insert(key, verdict);
            }
            prepared.stores.insert((strategy.name.clone(), *codec), m);
        }
        self.raw_parts((pending, sizes), &mut prepared.parts)?;
        if self.opts.settings.verify {
            let parts = &prepared.parts.items;
            self.verify_raw(pending, parts, &mut prepared.verdicts, outcome)?;
        }
        Ok(prepared)
    }

    /// The offline trials of (`strategy`, `codec`) not yet recorded, each timed into
    /// offline.csv on a store of the dataset as asked for (once over each item); the last one
    /// made, if any.
    fn offline_trials(
        &mut self,
        strategy: &Strategy,
        codec: Codec,
        pending: &Pending,
    ) -> anyhow::Result<Option<Materialized>> {
        let mut current = None;
        for trial in 0..self.opts.offline_trials.max(1) {
            let session = &self.executor.session;
            let workload = &session.workload;
            let id = self.plan.offline_id(workload, strategy, codec, trial);
            if pending.done_offline.contains(&id) {
                continue;
            }
            let fresh = trial > 0 || self.opts.settings.rematerialize;
            let layout = (self.plan.shards, self.base_items);
            let m =
                session.store_sized(strategy, codec, layout, self.max_threads, fresh, self.cold)?;
            let info = &m.manifest;
            let row = OfflineRow {
                run_id: id,
                workload: workload.spec.label(),
                strategy: strategy.name.clone(),
                split: strategy.split,
                codec,
                shards: self.plan.shards,
                samples: info.samples,
                offline_trial: trial,
                offline_s: info.offline_s,
                offline_reused: m.reused,
                storage_bytes: info.storage_bytes(),
                cpu_user_s: info.offline_cpu_user_s,
                cpu_sys_s: info.offline_cpu_sys_s,
                processing_s: info.offline_processing_s,
                writing_s: info.offline_writing_s,
                cpu_s_per_sample: (info.offline_cpu_user_s + info.offline_cpu_sys_s)
                    / info.samples.max(1) as f64,
            };
            self.executor
                .record_store(&row.run_id.clone(), &m, Some(row))?;
            current = Some(m);
        }
        Ok(current)
    }
}
