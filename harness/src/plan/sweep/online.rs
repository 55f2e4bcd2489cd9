//! The sweep's online phase: its pending runs trial by trial, each strategy's runs of a trial
//! side by side in a seeded random order (`matrix::run_order`), under one progress bar, each
//! reading its store (or the part a slower loader reads), then rounds of one more
//! trial for every setting still noisy, up to `--max-trials`.

use workloads::CacheMode;

use super::stores::Prepared;
use super::{Cell, SweepOutcome, SweepRun};
use crate::measure::epochs::RunSpec;
use crate::plan::matrix::run_order;
use crate::plan::run::setting_warnings;
use crate::plan::trials::more_trials;
use crate::progress::Progress;

impl SweepRun<'_> {
    /// The online phase: pending runs in [`run_order`] under one progress bar, then
    /// rounds of one more trial for every setting still noisy (as benchmark tools handle
    /// noise), up to `--max-trials`.
    pub(super) fn run_online(
        mut self,
        pending: Vec<Cell>,
        prepared: &Prepared,
        outcome: &mut SweepOutcome,
    ) -> anyhow::Result<()> {
        let (opts, places) = (self.opts, self.places);
        let caches: Vec<CacheMode> = self.plan.cells.iter().map(|c| c.cache).collect();
        let mut warnings = setting_warnings(
            &caches,
            places.evict,
            self.plan.shards,
            self.max_threads,
            self.plan.cells.iter().any(|c| c.strategy.split > 0),
        );
        let mut order = run_order(pending, opts.settings.seed);
        self.executor.session.progress = Progress { quiet: true };
        let bar = places
            .progress
            .bar(order.len() as u64, &format!("sweep {}", self.name));
        let mut run_ids = Vec::new();
        let mut round = 0u64;
        loop {
            for cell in &order {
                let session = &self.executor.session;
                let run_id = self
                    .plan
                    .run_id(&session.workload, opts.settings.seed, cell);
                bar.set_message(format!(
                    "{} {} t{} {} {}",
                    cell.strategy.name, cell.codec, cell.threads, cell.cache, cell.storage.name
                ));
                let key = (cell.strategy.name.clone(), cell.codec, cell.loader);
                let parts = &prepared.parts;
                // Under a loader slower than the sizing, the part of the store (raw files)
                // its epochs read.
                let stored = (parts.stores.get(&key))
                    .or_else(|| prepared.stores.get(&(key.0.clone(), key.1)));
                let spec = RunSpec {
                    items: parts.items.get(&key).copied(),
                    ..self.plan.spec(cell, run_id.clone(), stored, &opts.settings)
                };
                let verdict = prepared.verdicts.get(&key);
                let measured = self.executor.measure(&spec, |m| {
                    if let Some(verdict) = verdict {
                        m.rows.iter_mut().for_each(|r| r.verified = Some(*verdict));
                    }
                })?;
                warnings.extend(measured.warnings);
                run_ids.push(run_id);
                outcome.ran += 1;
                bar.inc(1);
            }
            let Some(max) = opts.max_trials else {
                break;
            };
            let rows = self.executor.tables.runs.read()?;
            let workload = &self.executor.session.workload;
            let extra = more_trials(&self.plan, workload, opts.settings.seed, &rows, max);
            if extra.is_empty() {
                break;
            }
            round += 1;
            places.progress.note(&format!(
                "{}: {} settings still noisy, trial {}",
                self.name,
                extra.len(),
                extra.iter().map(|c| c.trial + 1).max().unwrap_or(0)
            ));
            bar.inc_length(extra.len() as u64);
            self.plan.cells.extend(extra.iter().cloned());
            order = run_order(extra, opts.settings.seed ^ round);
        }
        bar.finish_and_clear();
        warnings.dedup();
        outcome.warnings = warnings;
        self.executor.finish(run_ids)?;
        Ok(())
    }
}
