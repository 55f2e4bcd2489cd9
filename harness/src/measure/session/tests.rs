//! Stores sized by time and the raw files, verified against fully-online processing.

use super::*;

/// A session of CV's first `samples` photographs in `dir` (data and stores there).
fn cv_session(dir: &Path, samples: usize) -> Session {
    Session::open(
        workloads::load("cv").unwrap(),
        &dir.join("data"),
        samples,
        2,
        &dir.join("store"),
        EvictPolicy::Fadvise,
        Progress { quiet: true },
    )
    .unwrap()
}

/// Stores sized by time hold more items than the dataset (cycling over it) or fewer (its
/// first items); either way they verify against fully-online processing of the items they
/// hold, and an epoch reads every record they hold.
#[test]
fn stores_smaller_and_larger_than_their_source_verify_and_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let session = cv_session(dir.path(), 6);
    let strategy = session.workload.spec.strategy("resized").unwrap();
    for items in [2, 6, 15] {
        let m = session
            .store_sized(&strategy, Codec::None, (4, items), 2, false, false)
            .unwrap();
        assert_eq!(m.manifest.samples, items as u64);
        assert_eq!(m.manifest.source_items, items.min(6) as u64);
        let v = session
            .verify(
                &strategy,
                (Some(&m), None),
                2,
                0,
                (crate::measure::online::default_engine(), ""),
            )
            .unwrap();
        assert!(v.passed(), "{items} items: {v:?}");
        assert_eq!(v.checked, items.min(6), "{items} items");
        let read = crate::measure::online::run(
            &session.online_job(&strategy, m.input(), 2, 0),
            &indicatif::ProgressBar::hidden(),
        )
        .unwrap();
        assert_eq!(read.samples, items as u64);
    }
    // The store of the first 2 items is the store of a dataset of those 2 items: found
    // again, not made again, whichever was opened first (a dataset grows for raw epochs).
    let small = cv_session(dir.path(), 2);
    let again = small
        .store_sized(&strategy, Codec::None, (4, 2), 2, false, false)
        .unwrap();
    assert!(again.reused);
}

/// The raw files are verified on the items a run reads: its first ones where it reads a
/// part, every one otherwise (and never more than the dataset holds).
#[test]
fn raw_files_verify_on_the_items_a_run_reads() {
    let dir = tempfile::tempdir().unwrap();
    let session = cv_session(dir.path(), 6);
    let strategy = session.workload.spec.strategy("unprocessed").unwrap();
    let engine = (crate::measure::online::default_engine(), "");
    for (read, checked) in [(Some(2), 2), (None, 6), (Some(60), 6)] {
        let v = session
            .verify(&strategy, (None, read), 2, 0, engine)
            .unwrap();
        assert!(v.passed(), "{read:?}: {v:?}");
        assert_eq!(v.checked, checked, "{read:?}");
    }
}

/// An epoch given `max_s` stops taking samples once it has lasted that long (a loader's
/// probe, `sweep/parts.rs`): with none left, it keeps the batch that came first and no more,
/// and the next epoch of the same store, given none, reads every record.
#[test]
fn an_epoch_stopped_at_its_limit_reads_part_of_its_store_and_the_next_reads_all() {
    let dir = tempfile::tempdir().unwrap();
    let session = cv_session(dir.path(), 6);
    let strategy = session.workload.spec.strategy("resized").unwrap();
    let items = 2_000;
    let m = session
        .store_sized(&strategy, Codec::None, (4, items), 2, false, false)
        .unwrap();
    let bar = indicatif::ProgressBar::hidden();
    let stopped = OnlineJob {
        max_s: Some(0.0),
        ..session.online_job(&strategy, m.input(), 2, 0)
    };
    let read = crate::measure::online::run(&stopped, &bar).unwrap();
    assert!(read.samples > 0, "the first batch is kept");
    assert!(
        read.samples < items as u64 / 4,
        "{} of {items} read",
        read.samples
    );
    assert_eq!(read.arrivals_s.len() as u64, read.samples);
    let whole =
        crate::measure::online::run(&session.online_job(&strategy, m.input(), 2, 0), &bar).unwrap();
    assert_eq!(whole.samples, items as u64);
}
