//! A store's cold epoch timed before its runs. The stores prepbench's own engine reads are
//! sized from the model alone (`sizing.rs`), whose costs per sample err by more than its
//! margins on some machines: in `quick-bt` NILM `aggregated` was predicted CPU-bound at
//! 220,000 samples a second at 2 threads and read 359,000-467,000, in epochs of 0.61-0.80 s
//! against a 1 s floor, so finding 6b was not testable. So each store that runs of the engine
//! read cold on the local disk is read cold twice at their most threads before them, and made
//! again larger where the faster of those epochs fell short ([`grown_items`]), as its raw part
//! is timed (`parts.rs`). Under a storage profile the model is kept: the emulator paces reads
//! as the model reads them.

use workloads::{Codec, StorageProfile, Strategy};

use super::{Pending, SweepRun};
use crate::measure::session::Materialized;
use crate::plan::sizing::{self, Sizes, CHECK_ROUNDS, STORE_CHECK_MARGIN};
use crate::results::{Manifest, SizingEntry};

/// The items a store of `items` should hold where its cold epoch, timed at the most threads
/// its runs use, lasted `seconds`, for epochs of `floor_s`: `None` where it lasted
/// [`STORE_CHECK_MARGIN`] times the floor or more (or was not timed); else the items it reads in
/// [`sizing::LOCAL_READ_MARGIN`] times the floor at the rate measured, within `cap`, and
/// whether the cap held it under that. The model's costs per sample err: one quick run's NILM
/// `aggregated` store, predicted CPU-bound at 220,000 samples a second at 2 threads, read
/// 359,000-467,000 (`quick-bt`: 0.61-0.80 s epochs against a 1 s floor, 6b not testable).
/// At 2 floors (0acd08ca) four stores of a quick run grew 1.3-1.7x, and with the stores they
/// replaced, which stay, quick ran out of the VM's 71 GB of free disk 15 minutes in
/// (`quick-ce`).
pub fn grown_items(items: usize, seconds: f64, floor_s: f64, cap: usize) -> Option<(usize, bool)> {
    if !sizing::short_of(seconds, floor_s, STORE_CHECK_MARGIN) {
        return None;
    }
    let want = (items as f64 * floor_s * sizing::LOCAL_READ_MARGIN / seconds).ceil() as usize;
    let grown = want.min(cap).max(items);
    (grown > items || want > cap).then_some((grown, want > cap))
}

/// Cold epochs that time a store in each round of its check, the fastest taken. The first
/// cold read of a store just written is the slow one on these VMs, so a store sized on it
/// alone read under the floor later: `quick-ca`'s 0.01 MB synthetic store was checked over
/// 1.66 s, kept, and read 1.08-1.74 s in its sweep and 0.73-0.80 s in five of seven settling
/// trials (5a not testable, its cell's median epoch 0.94 s); `quick-cb`'s, grown after a
/// check of 1.18 s, was checked again over 3.22 s and read 0.89-1.78 s.
const CHECK_READS: usize = 2;

/// The faster of two timed epochs, one not timed (not finite, or not positive) left out.
fn faster(a: f64, b: f64) -> f64 {
    match (sizing::was_timed(a), sizing::was_timed(b)) {
        (true, true) => a.min(b),
        (false, true) => b,
        _ => a,
    }
}

impl SweepRun<'_> {
    /// `m`, the store of (`strategy`, `codec`) as sized, or where one cold epoch of it at the
    /// most threads of the engine's pending runs on the local disk lasted under the floor with
    /// [`STORE_CHECK_MARGIN`], the same store made again larger; its items recorded in the
    /// manifest's sizing as checked, so a resumed sweep reads it as it is.
    pub(super) fn checked_store(
        &self,
        (strategy, codec): (&Strategy, Codec),
        m: Materialized,
        (pending, sizes): (&Pending, &Sizes),
    ) -> anyhow::Result<Materialized> {
        let Some(floor) = self.opts.settings.min_epoch_s else {
            return Ok(m);
        };
        let engine = crate::measure::online::default_engine().name();
        let threads = (pending.cells.iter())
            .filter(|c| c.strategy == *strategy && c.codec == codec && c.loader == engine)
            .filter(|c| c.storage.is_passthrough())
            .map(|c| c.threads)
            .max();
        let items = m.manifest.samples as usize;
        let store = (strategy.name.clone(), codec);
        let (Some(threads), false) = (threads, sizes.checked.get(&store) == Some(&items)) else {
            return Ok(m);
        };
        let local = StorageProfile::local();
        let cap = sizes.store_caps.get(&store).copied().unwrap_or(items);
        let (mut m, mut items) = (m, items);
        // Timed again once grown: a cold epoch of hundredths of a second errs by its start
        // (500 records of 10 KB read in about 0.01 s, the 14,265 grown from them in 0.039 s).
        for _ in 0..CHECK_ROUNDS {
            let shards = m.manifest.shards.len();
            let whole = (shards.into(), true);
            // Twice, the faster taken ([`CHECK_READS`]).
            let mut seconds = f64::INFINITY;
            for _ in 0..CHECK_READS {
                let (_, s) = self.timed(strategy, (Some(&m), &local), whole, engine, threads)?;
                seconds = faster(seconds, s);
            }
            let read = format!(
                "{}: {} ({codec}) read cold in {seconds:.2} s at {threads} threads (the faster of \
                 {CHECK_READS})",
                self.name, strategy.name
            );
            let Some((grown, capped)) = grown_items(items, seconds, floor, cap) else {
                if sizing::was_timed(seconds) {
                    (self.places.progress)
                        .note(&format!("{read}: its store of {items} items kept"));
                }
                break;
            };
            let what = match (grown > items, capped) {
                (true, false) => format!("its store made again with {grown} items (was {items})"),
                (true, true) => format!(
                    "its store made again with {grown} items (was {items}), its cap: epochs may \
                     stay short"
                ),
                (false, _) => "its store is at its cap: epochs may stay short".to_string(),
            };
            self.places.progress.note(&format!(
                "{read}, under {STORE_CHECK_MARGIN} times the {floor} s floor: {what}"
            ));
            if grown == items {
                break;
            }
            let session = &self.executor.session;
            let layout = (self.plan.shards, grown);
            m = session.store_sized(strategy, codec, layout, self.max_threads, false, self.cold)?;
            items = grown;
        }
        let checked = items;
        let key = SizingEntry::store_key(&strategy.name, codec);
        let keys = self.plan.sizing_keys(&self.name);
        Manifest::update(&self.places.out, |manifest| {
            for k in &keys {
                if let Some(sizing) = manifest.sizing.get_mut(k) {
                    sizing.stores.insert(key.clone(), checked);
                    sizing.checked.insert(key.clone(), checked);
                }
            }
        })?;
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Of a store's timed cold epochs the faster sizes it; one not timed never does.
    #[test]
    fn a_store_is_sized_on_its_faster_cold_epoch() {
        assert_eq!(faster(1.66, 1.1), 1.1);
        assert_eq!(faster(f64::INFINITY, 1.66), 1.66);
        assert_eq!(faster(1.1, f64::NAN), 1.1);
        assert_eq!(faster(1.1, 0.0), 1.1);
        assert!(!sizing::was_timed(faster(f64::INFINITY, f64::NAN)));
        // CA's synthetic store: over 1.35 floors on its first read alone, short of them on the
        // faster of two, so grown.
        assert_eq!(grown_items(366_112, 1.66, 1.0, 10_000_000), None);
        assert!(grown_items(366_112, faster(1.66, 1.1), 1.0, 10_000_000).is_some());
    }

    /// A store's timed cold epoch under the floor with its margin (1.35) grows it to what the
    /// rate measured reads in 1.5 floors, within its cap; one that lasts, or was not timed,
    /// stays.
    #[test]
    fn a_store_timed_short_grows_to_the_rate_measured() {
        // quick-bt's NILM `aggregated`: 286,560 items in 0.68 s against a 1 s floor.
        assert_eq!(
            grown_items(286_560, 0.68, 1.0, 1_000_000),
            Some((632_118, false))
        );
        assert_eq!(
            grown_items(286_560, 0.68, 1.0, 400_000),
            Some((400_000, true))
        );
        // Capped at its size already: said, not grown.
        assert_eq!(grown_items(1000, 0.5, 1.0, 1000), Some((1000, true)));
        // Within the margin (quick-bx's NILM `aggregated` checked over 1.15 s and read 0.85-0.92
        // s in its runs), over it, or not timed: as sized.
        assert_eq!(grown_items(1000, 1.1, 1.0, 10_000), Some((1364, false)));
        assert_eq!(grown_items(1000, 1.3, 1.0, 10_000), Some((1154, false)));
        assert_eq!(grown_items(1000, 1.35, 1.0, 10_000), None);
        assert_eq!(grown_items(1000, 3.0, 1.0, 10_000), None);
        assert_eq!(grown_items(1000, f64::NAN, 1.0, 10_000), None);
        assert_eq!(grown_items(1000, 0.0, 1.0, 10_000), None);
    }
}
