//! A sweep's calibration: the machine (cached per machine) and each (strategy, codec) of its
//! plan not yet calibrated in the results folder, recorded in its manifest.

use std::collections::HashMap;

use workloads::Codec;

use crate::measure::session::{Materialized, Session};
use crate::plan::matrix::Plan;
use crate::plan::options::SweepOptions;
use crate::plan::settings::Places;
use crate::results::{self, Calibration, Manifest};

/// Calibrates the machine (cached per machine) and every (strategy, codec) of the plan that
/// the results folder's manifest does not hold yet; stores are reused (or made) as the
/// online runs would use them.
pub(crate) fn calibrate_cells(
    session: &Session,
    plan: &Plan,
    stores: &mut HashMap<(String, Codec), Materialized>,
    places: &Places,
    opts: &SweepOptions,
    max_threads: usize,
    cold: bool,
) -> anyhow::Result<Calibration> {
    let recorded = Manifest::read(&places.out)?
        .and_then(|m| m.calibration)
        .unwrap_or_default();
    let mut calibration = Calibration {
        // The disk the stores are on; for stores in object storage, the data directory's, and
        // with both there, the temporary directory's (the model's storage figures are of a
        // local disk: docs/cluster.md).
        machine: Some(crate::measure::calibrate::machine(
            &machine_dir(places),
            opts.recalibrate,
            256,
        )?),
        ..Default::default()
    };
    let workload = &session.workload;
    for (strategy, codec) in plan.strategy_codecs() {
        let key = results::calibration::key(&workload.spec.label(), &strategy.name, codec);
        if recorded.strategies.contains_key(&key) && !opts.recalibrate {
            continue;
        }
        places
            .progress
            .note(&format!("calibrating {} ({codec})", strategy.name));
        let stored = if strategy.split > 0 {
            let entry = (strategy.name.clone(), codec);
            if !stores.contains_key(&entry) {
                let m = session.store(&strategy, codec, plan.shards, max_threads, false, cold)?;
                stores.insert(entry.clone(), m);
            }
            stores.get(&entry)
        } else {
            None
        };
        let c = crate::measure::calibrate::strategy(
            session,
            &strategy,
            stored,
            codec,
            opts.settings.seed,
        )?;
        calibration.strategies.insert(key, c);
    }
    // Recorded now, so that a sweep stopped during its runs keeps it.
    Manifest::update(&places.out, |m| m.record_calibration(calibration.clone()))?;
    let mut all = recorded;
    all.merge(calibration);
    Ok(all)
}

/// Where the machine's storage figures are measured: the disk the stores are on; for stores
/// in object storage, the data directory's, and with both there, the temporary directory's.
pub fn machine_dir(places: &Places) -> std::path::PathBuf {
    [&places.store_dir, &places.data_dir]
        .into_iter()
        .find(|d| !datasets::files::is_remote(d))
        .map_or_else(std::env::temp_dir, |d| d.to_path_buf())
}
