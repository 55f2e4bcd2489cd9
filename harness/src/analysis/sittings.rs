//! Sittings: the invocations (a sweep, a settling round, a resumed sweep) a cell's trials ran
//! in. A cell's interval treats its trials as draws from one machine state; trials run in
//! two sittings half an hour apart are not, when the machine drifted between them. In two
//! idle quick reproductions the 20.48 MB synthetic samples read warm at 223 samples/s in the
//! sweep's four trials and 278 in twelve settling trials (G), 222 and 190 in the other (H):
//! each interval was narrow, and finding 5b came out reproduced in one and not reproduced in
//! the other. A drift between sittings is measured here, so that a verdict it could flip is
//! not given.

use std::collections::HashMap;

use super::cells::{Cell, Results};
use super::stats::{welch, Summary};

/// A drift is reported when the sittings differ at this significance (two-sided Welch test
/// of the log rates): strict, since every cell behind a finding is tested.
pub const DRIFT_P: f64 = 0.01;

/// How a cell's rate moved between its first sitting and the later ones.
#[derive(Clone, Debug, PartialEq)]
pub struct Drift {
    /// Geometric mean samples/s of the first sitting's epochs and of the later sittings'.
    pub first: f64,
    pub later: f64,
    /// Trials (epochs of the cell) in each.
    pub first_n: usize,
    pub later_n: usize,
    /// Two-sided p of the difference of their log rates.
    pub p: f64,
}

impl Drift {
    /// later / first.
    pub fn ratio(&self) -> f64 {
        self.later / self.first
    }
}

impl Results {
    /// The invocation each run id was recorded by (its index in the manifest).
    pub fn sittings(&self) -> HashMap<&str, usize> {
        let mut of = HashMap::new();
        for (i, invocation) in self.manifest.invocations.iter().enumerate() {
            for id in &invocation.run_ids {
                of.entry(id.as_str()).or_insert(i);
            }
        }
        of
    }

    /// The cell's drift between its first sitting and the later ones, where each holds at
    /// least two of its epochs and their log rates differ at [`DRIFT_P`]; `None` otherwise
    /// (one sitting, too few epochs, no significant difference, or a run no invocation in the
    /// manifest names, as in folders from before invocations listed their runs).
    pub fn drift(&self, cell: &Cell, sittings: &HashMap<&str, usize>) -> Option<Drift> {
        let mut by: std::collections::BTreeMap<usize, Vec<f64>> = Default::default();
        for row in self.cell_rows(cell) {
            let sitting = sittings.get(row.run_id.as_str())?;
            if row.throughput_sps > 0.0 {
                by.entry(*sitting)
                    .or_default()
                    .push(row.throughput_sps.ln());
            }
        }
        let mut groups = by.into_values();
        let first = groups.next()?;
        let later: Vec<f64> = groups.flatten().collect();
        drift_of(&first, &later)
    }
}

/// [`Drift`] between two sets of log rates, where both hold two or more and they differ at
/// [`DRIFT_P`].
fn drift_of(first: &[f64], later: &[f64]) -> Option<Drift> {
    let (a, b) = (Summary::of(first).ok()?, Summary::of(later).ok()?);
    let test = welch(&a, &b)?;
    (test.p < DRIFT_P).then(|| Drift {
        first: a.mean.exp(),
        later: b.mean.exp(),
        first_n: a.n,
        later_n: b.n,
        p: test.p,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{InvocationEntry, Manifest, Recorded, RunRow};

    fn logs(rates: &[f64]) -> Vec<f64> {
        rates.iter().map(|r| r.ln()).collect()
    }

    /// G's warm 20.48 MB cell: four trials in the sweep, twelve in settling 24 minutes later.
    #[test]
    fn a_rate_that_moved_between_sittings_is_a_drift_and_noise_is_not() {
        let sweep = logs(&[222.8, 225.2, 216.4, 228.1]);
        let settling = logs(&[
            285.6, 295.1, 258.1, 265.3, 266.2, 265.9, 288.1, 330.4, 285.0, 263.3, 290.7, 250.5,
        ]);
        let drift = drift_of(&sweep, &settling).expect("a drift");
        assert!((drift.ratio() - 1.25).abs() < 0.03, "{drift:?}");
        assert_eq!((drift.first_n, drift.later_n), (4, 12));
        assert!(drift.p < 0.001);
        // The same spread around one rate: no drift.
        let steady = logs(&[223.0, 219.5, 227.0, 221.4, 226.2]);
        assert_eq!(drift_of(&sweep, &steady), None);
        // One epoch on a side: nothing to test.
        assert_eq!(drift_of(&sweep, &logs(&[300.0])), None);
    }

    /// Sittings come from the manifest's invocations; a cell of one sitting never drifts.
    #[test]
    fn sittings_are_the_invocations_that_recorded_the_runs() {
        let row = |run: &str, rate: f64| RunRow {
            run_id: run.into(),
            started_utc: "2026-01-01T00:00:00Z".into(),
            workload: "w".into(),
            strategy: "resized".into(),
            samples: 100,
            passes: 1,
            online_s: 100.0 / rate,
            throughput_sps: rate,
            ..RunRow::default()
        };
        let invocation = |ids: &[&str]| InvocationEntry {
            run_ids: ids.iter().map(|s| s.to_string()).collect(),
            ..InvocationEntry::default()
        };
        let runs = vec![
            row("a", 100.0),
            row("b", 101.0),
            row("c", 99.0),
            row("d", 150.0),
            row("e", 151.0),
            row("f", 149.5),
        ];
        let manifest = Manifest {
            invocations: vec![invocation(&["a", "b", "c"]), invocation(&["d", "e", "f"])],
            ..Manifest::default()
        };
        let results = Results::of(Recorded {
            runs: runs.clone(),
            manifest,
            ..Recorded::default()
        });
        let cell = &results.cells()[0];
        let drift = results.drift(cell, &results.sittings()).expect("a drift");
        assert!((drift.ratio() - 1.5).abs() < 0.01, "{drift:?}");
        let one = Results::of(Recorded {
            runs,
            manifest: Manifest {
                invocations: vec![invocation(&["a", "b", "c", "d", "e", "f"])],
                ..Manifest::default()
            },
            ..Recorded::default()
        });
        assert_eq!(one.drift(&one.cells()[0], &one.sittings()), None);
    }
}
