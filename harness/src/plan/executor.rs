//! Where a plan's runs are measured and recorded. `run` and `sweep` (and the calibration a
//! sweep starts with) all go through an [`Executor`]: it opens the results tables before any
//! work (so a conflicting folder fails first), opens the session over the workload's dataset,
//! records each store's and each run's rows, and at the end the invocation with the runs it
//! recorded. (Callers refuse places inside the dataset first: `Places::check_outside_dataset`.)

use workloads::{OnError, Workload};

use crate::measure::epochs::{Measured, RunSpec};
use crate::measure::session::{Materialized, Session};
use crate::measure::warnings::Warning;
use crate::plan::settings::Places;
use crate::results::{self, OfflineRow, Tables};

/// The heaviest load of a run's epochs (other processes' CPU and the hypervisor's steal), when
/// above [`crate::results::rows::HEAVY_FOREIGN_LOAD_PCT`].
fn foreign_load(measured: &Measured) -> Option<f64> {
    let heavy = crate::results::rows::heavy_load_pct();
    measured
        .rows
        .iter()
        .filter_map(|r| r.disturbed_pct())
        .filter(|pct| *pct > heavy)
        .max_by(f64::total_cmp)
}

/// A workload's session and the results folder its runs go to.
pub struct Executor<'p> {
    pub tables: Tables,
    pub session: Session,
    places: &'p Places,
    started_utc: String,
    command_line: Vec<String>,
}

impl<'p> Executor<'p> {
    /// Opens the results in `places.out` and a session over the first `samples` samples of
    /// `workload`'s dataset (generated when missing, on `threads` threads). `on_error`
    /// overrides the workload's.
    pub fn open(
        workload: Workload,
        places: &'p Places,
        samples: usize,
        threads: usize,
        on_error: Option<OnError>,
        command_line: Vec<String>,
    ) -> anyhow::Result<Executor<'p>> {
        let started_utc = results::utc_now();
        let tables = Tables::open(&places.out)?;
        let mut session = Session::open(
            workload,
            &places.data_dir,
            samples,
            threads,
            &places.store_dir,
            places.evict,
            places.progress,
        )?;
        if let Some(on_error) = on_error {
            session.on_error = on_error;
        }
        Ok(Executor {
            tables,
            session,
            places,
            started_utc,
            command_line,
        })
    }

    /// The same executor over the first `samples` samples of the workload's dataset instead
    /// (generated up to them when needed); its `on_error` is kept.
    pub fn reopen(self, samples: usize, threads: usize) -> anyhow::Result<Executor<'p>> {
        let on_error = self.session.on_error;
        let mut reopened = Executor::open(
            self.session.workload,
            self.places,
            samples,
            threads,
            Some(on_error),
            self.command_line,
        )?;
        reopened.started_utc = self.started_utc;
        Ok(reopened)
    }

    /// Records the system samples taken while `stored` was materialized (none when it was
    /// reused), under `id`, and its offline.csv row when a sweep times it.
    pub fn record_store(
        &self,
        id: &str,
        stored: &Materialized,
        offline: Option<OfflineRow>,
    ) -> Result<(), results::ResultsError> {
        let (device, samples) = &stored.samples;
        self.tables
            .samples
            .append(&crate::measure::sysmon::rows(id, None, device, samples))?;
        self.tables.offline.append(offline.as_slice())
    }

    /// Measures one run and records it. A run measured beside heavy load (other processes and
    /// the hypervisor's steal over [`crate::results::rows::HEAVY_FOREIGN_LOAD_PCT`] of the
    /// machine in any epoch) is measured once more, and only
    /// the second measurement recorded; still loaded, it carries a warning.
    pub fn measure(
        &self,
        spec: &RunSpec,
        adjust: impl FnOnce(&mut Measured),
    ) -> anyhow::Result<Measured> {
        let (first, again) =
            self.measured_again_if_heavy(&spec.run_id, || self.session.measure(spec))?;
        let mut measured = match again {
            None => first,
            Some(mut measured) => {
                // What the first measurement warned of (a cache too small, a file still
                // resident) holds for the second.
                for warning in first.warnings {
                    if !measured.warnings.contains(&warning) {
                        measured.warnings.push(warning);
                    }
                }
                if let Some(pct) = foreign_load(&measured) {
                    measured.warnings.push(Warning::ForeignLoad {
                        run_id: spec.run_id.clone(),
                        pct,
                    });
                }
                measured
            }
        };
        adjust(&mut measured);
        measured.append_to(&self.tables)?;
        Ok(measured)
    }

    /// `measure`d once, and once more, said on the terminal, where any of its epochs ran
    /// beside heavy load (other processes and the hypervisor's steal over
    /// [`crate::results::rows::HEAVY_FOREIGN_LOAD_PCT`] of the machine): the first
    /// measurement and the second. Runs keep the second ([`Executor::measure`]); the epochs
    /// that size stores and loader parts take the faster of both (`sweep::parts`).
    pub(crate) fn measured_again_if_heavy(
        &self,
        run_id: &str,
        mut measure: impl FnMut() -> anyhow::Result<Measured>,
    ) -> anyhow::Result<(Measured, Option<Measured>)> {
        let first = measure()?;
        if foreign_load(&first).is_none() {
            return Ok((first, None));
        }
        self.places.progress.note(&format!(
            "{run_id}: heavy load from other processes or the hypervisor, measuring it again"
        ));
        let second = measure()?;
        Ok((first, Some(second)))
    }

    /// Records the invocation in the manifest, with the runs it recorded.
    pub fn finish(&self, run_ids: Vec<String>) -> Result<(), results::ResultsError> {
        self.session.record_invocation(
            &self.places.out,
            self.started_utc.clone(),
            self.command_line.clone(),
            (&self.places.data_dir, &self.places.store_dir),
            run_ids,
        )
    }
}
