//! The free page reporter held off or left on, end to end (docs/measurement.md, "Cold reads on
//! a VM"): a test binary of its own, so that no other test's command holds the machine-wide
//! setting, or drops the page cache, while it runs (cargo runs test binaries one at a time).

#[macro_use]
mod common;

use common::{prepbench_ok, Csv};

/// On a machine whose free memory goes back to its host (`--page-reporting keep` leaves the
/// reporter on), a store is released as soon as it is made: its first cold epoch finds it not
/// resident before its eviction. With the reporter held off (the default, as root) memory stays,
/// and so do the pages written, until that eviction drops them. Elsewhere nothing is asserted.
#[test]
fn a_store_is_released_once_made_only_where_memory_goes_back() {
    let work = tempfile::tempdir().unwrap();
    let on_tmpfs = harness::results::system::filesystem_of(work.path())
        .is_some_and(|fs| fs.fs_type == "tmpfs");
    if !harness::results::system::reports_free_pages() || on_tmpfs {
        eprintln!("skipped: free memory stays with this machine, or its pages are tmpfs");
        return;
    }
    let resident_before_cold = |policy: &str| {
        let at = |name: &str| work.path().join(policy).join(name);
        prepbench_ok(&argv![
            "run cv --strategy resized --samples 60 --epochs 1 --cache cold \
             --quiet --page-reporting",
            policy,
            "--data-dir",
            work.path().join("data").to_str().unwrap(),
            "--store-dir",
            at("store").to_str().unwrap(),
            "--out",
            at("out").to_str().unwrap()
        ]);
        let runs = Csv::read(&at("out").join("runs.csv"));
        let cold = &runs.rows[0];
        assert_eq!(runs.col(cold, "cache"), "cold");
        runs.num(cold, "residency_before_pct")
    };
    let resident = resident_before_cold("keep");
    assert!(resident < 5.0, "{resident} % of a store just made resident");
    // Held off only where prepbench may write the kernel's setting (root, as for drop_caches).
    if harness::measure::cache::can_drop_caches() {
        let resident = resident_before_cold("hold");
        assert!(
            resident > 95.0,
            "{resident} % of a store just made resident with the reporter held off"
        );
    }
}
