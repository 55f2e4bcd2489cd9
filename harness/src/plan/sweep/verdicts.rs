//! The sweep's verification verdicts: each (strategy, codec, loader) judged once against
//! native fully-online processing, stores when they are made, raw files under loaders other
//! than prepbench's own.

use std::collections::HashMap;

use workloads::{Codec, Strategy};

use super::{Pending, SweepOutcome, SweepRun, VerdictKey};
use crate::measure::session::Materialized;
use crate::results::Verdict;

impl SweepRun<'_> {
    /// Raw files (`unprocessed`) under a loader other than prepbench's own, checked as stores
    /// are (natively they are the reference itself): the first items its runs read (`parts`),
    /// as a store's part is judged on its shards, not the whole dataset.
    pub(super) fn verify_raw(
        &self,
        pending: &Pending,
        parts: &HashMap<VerdictKey, usize>,
        verdicts: &mut HashMap<VerdictKey, Verdict>,
        outcome: &mut SweepOutcome,
    ) -> anyhow::Result<()> {
        let raw: Vec<(Strategy, Codec)> = self
            .plan
            .strategy_codecs()
            .into_iter()
            .filter(|(s, _)| s.split == 0)
            .collect();
        for (strategy, codec) in raw {
            for loader in self.plan.loaders() {
                let key = (strategy.name.clone(), codec, loader);
                if crate::measure::online::is_default(loader) {
                    continue;
                }
                // Passed in an earlier sweep of this folder: its new runs carry that verdict.
                let verdict = if pending.passed.contains(&key) {
                    Verdict::Pass
                } else {
                    let read = parts.get(&key).copied();
                    self.verdict(&strategy, (None, read), loader, outcome)?
                };
                verdicts.insert(key, verdict);
            }
        }
        Ok(())
    }

    /// Verifies `strategy` (reading `stored`, or the raw files: their first `raw_items`, all
    /// when `None`) under `loader` against native fully-online processing.
    pub(super) fn verdict(
        &self,
        strategy: &Strategy,
        (stored, raw_items): (Option<&Materialized>, Option<usize>),
        loader: &'static str,
        outcome: &mut SweepOutcome,
    ) -> anyhow::Result<Verdict> {
        let seed = self.opts.settings.seed;
        let engine = crate::measure::online::engine(loader).expect("checked by Plan::new");
        let session = &self.executor.session;
        let options = self.plan.loader_options(loader);
        let input = (stored, raw_items);
        let v = session.verify(strategy, input, self.max_threads, seed, (engine, options))?;
        Ok(if v.passed() {
            Verdict::Pass
        } else {
            let codec = stored.map_or(Codec::None, |m| m.manifest.codec);
            let name = crate::measure::online::verify_label(&strategy.name, codec, loader);
            outcome.verify_failures.push((name, v.mismatched));
            Verdict::Fail
        })
    }
}
