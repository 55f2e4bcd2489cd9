//! The paper's six findings, each split into the sub-claims `PAPER.md` states, judged on the
//! 95 % confidence interval of the ratio each is about, each line cleared by the noise floor
//! ([`DECISION_BAND`]): reproduced (the interval lies where the claim says), contradicted (it
//! lies where the claim's opposite says), not reproduced (it lies clear of where the claim
//! says, not wholly where its opposite says), unsettled (it reaches where the claim says and
//! beyond, whichever side the estimate is on, so more trials may decide; or the machine was
//! busy while its cells ran), or not testable here (with the reason). The same rules judge
//! the paper's own figures ([`published`]), which must reproduce every sub-claim, and our
//! measurements ([`measured`]). Lines measured for contrast are shown and never counted.

mod expect;
pub mod measured;
pub mod observed;
pub mod published;
pub mod rules;

use std::fmt::Write as _;

use serde::Serialize;

use workloads::Codec;

use crate::analysis::cells::{Cell, CellKey};
use crate::analysis::findings::observed::Figure;
use crate::analysis::stats::{kendall_tau_b, LogEstimate};
use crate::analysis::view::WorkloadView;
pub use expect::{Expect, Verdict, DECISION_BAND};

/// A figure has the paper's size when it lies within this factor of the paper's figure (or of
/// the range the paper reports): a claim can hold while its size does not (1a holds at 1.05x
/// where the paper saw 3-13x).
pub const SIZE_FACTOR: f64 = 2.0;

/// More trials than this factor of those already run are never asked to settle a check.
pub const MAX_TRIALS_FACTOR: f64 = 16.0;

/// Claims about the offline phase: their checks are settled by more materializations, not
/// more online trials.
pub const OFFLINE_CLAIMS: [&str; 1] = ["3d"];

/// What settling counts of each cell, for settling's plan and the report's word on an open
/// check: the trials recorded (rows, not those its summary kept: a target at or below the
/// recorded count would ask for nothing), and the materializations of its strategy and codec.
pub struct SettleCounts<'c> {
    trials: std::collections::HashMap<&'c CellKey, usize>,
    materialized: std::collections::HashMap<&'c CellKey, usize>,
    /// Each cell's median epoch, s.
    epochs: std::collections::HashMap<&'c CellKey, f64>,
}

impl<'c> SettleCounts<'c> {
    pub fn of(cells: &'c [Cell]) -> SettleCounts<'c> {
        SettleCounts {
            trials: cells.iter().map(|c| (&c.key, c.rows.len())).collect(),
            materialized: (cells.iter())
                .filter_map(|c| Some((&c.key, c.offline.as_ref()?.n)))
                .collect(),
            epochs: cells.iter().map(|c| (&c.key, c.online.median)).collect(),
        }
    }

    /// The counts settling may bring each cell behind a check of `claim` to, under a scale's
    /// `cap`: materializations to the cap; trials to the cap, or more where the cell's epochs
    /// are short ([`cell_cap`]).
    pub fn caps(&self, claim: &str, cap: usize) -> Caps<'_> {
        Caps {
            base: cap,
            epochs: (!OFFLINE_CLAIMS.contains(&claim)).then_some(&self.epochs),
        }
    }

    pub fn for_claim(&self, claim: &str) -> &std::collections::HashMap<&'c CellKey, usize> {
        if OFFLINE_CLAIMS.contains(&claim) {
            &self.materialized
        } else {
            &self.trials
        }
    }
}

/// A cell's trials may pass a scale's settling cap while they cost no more than the cap's
/// trials of epochs this long (s) would. The cap bounds the time settling spends, and trials
/// of short epochs are cheap: quick-ba left 4d unsettled at 1.05x [0.99, 1.12] against its
/// 1.10x line, 29 trials a cell short of deciding it, where the cap of 16 held epochs of
/// 1.2-1.5 s (about 3 s a trial, cold and warm epoch together).
pub const SETTLE_EPOCH_S: f64 = 3.0;
/// ... and at most this many times the cap.
pub const MAX_CAP_GROWTH: usize = 3;

/// The trials settling may bring a cell to under a scale's `cap`, where its median epoch lasts
/// `epoch_s`: the cap, or as many as fit in the cap's trials of [`SETTLE_EPOCH_S`] epochs, up
/// to [`MAX_CAP_GROWTH`] times the cap.
pub fn cell_cap(cap: usize, epoch_s: f64) -> usize {
    if !epoch_s.is_finite() || epoch_s <= 0.0 {
        return cap;
    }
    let by_time = (cap as f64 * SETTLE_EPOCH_S / epoch_s).floor() as usize;
    by_time.clamp(cap, cap * MAX_CAP_GROWTH)
}

/// The counts settling may bring each cell to ([`SettleCounts::caps`]); a cell it does not
/// know gets the scale's cap.
#[derive(Clone, Copy, Debug)]
pub struct Caps<'a> {
    base: usize,
    /// Each cell's median epoch (s), where trials may pass the cap; `None`: held to it.
    epochs: Option<&'a std::collections::HashMap<&'a CellKey, f64>>,
}

impl Caps<'_> {
    /// The scale's cap for every cell.
    pub fn flat(cap: usize) -> Caps<'static> {
        Caps {
            base: cap,
            epochs: None,
        }
    }

    pub fn of(&self, key: &CellKey) -> usize {
        (self.epochs.and_then(|e| e.get(key)))
            .map_or(self.base, |&epoch_s| cell_cap(self.base, epoch_s))
    }

    /// The least cap of `keys` (the scale's where there are none).
    pub fn least<'k>(&self, keys: impl IntoIterator<Item = &'k CellKey>) -> usize {
        keys.into_iter()
            .map(|k| self.of(k))
            .min()
            .unwrap_or(self.base)
    }
}

/// The trials `factor` times `n` asks for: one more at least.
pub fn grown_trials(n: usize, factor: f64) -> usize {
    ((n as f64 * factor).ceil() as usize).max(n + 1)
}

/// Whether `f` times the trials behind `estimate` narrow its 95 % half-width, times `slack`,
/// to within `margin` (a positive one).
fn narrows_to(estimate: &LogEstimate, margin: f64, f: f64, slack: f64) -> bool {
    margin > 0.0 && estimate.half_width_with_trials(f) * slack <= margin
}

/// One subject (a pipeline, strategy, codec) checked against a sub-claim.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    pub subject: String,
    pub verdict: Verdict,
    /// The measured ratio with its 95 % interval, or why there is none.
    pub measured: String,
    /// What the claim needs of it (`>= 1.50x`).
    pub needs: String,
    /// The paper's figure for the same subject, where it published one.
    pub paper: Option<String>,
    /// Whether our figure has the paper's size: within [`SIZE_FACTOR`] of it (of its range,
    /// for a range), where both have a figure.
    pub size: Option<String>,
    /// What the measurements say caused the result (bound, stage shares, per-record cost).
    pub mechanism: Option<String>,
    /// Why it is unsettled, and what would settle it.
    pub unsettled: Option<String>,
    /// The cells settling adds trials to (ours only): its figure's cells and, for most rules,
    /// the other epochs of the same runs (a trial runs them together).
    #[serde(skip)]
    pub cells: Vec<CellKey>,
    /// The cells whose epochs its figure is computed from, where a rule names them exactly
    /// (cold throughput comparisons, thread scaling, finding 5's sizes): a drift of their rate
    /// between sittings is judged against its margin. Empty: no drift is judged.
    #[serde(skip)]
    pub figure_cells: Vec<CellKey>,
    /// The estimate and what it was judged against, where it had an interval.
    #[serde(skip)]
    judged: Option<(LogEstimate, Expect)>,
}

impl Check {
    /// `figure` judged against `expect`; `unit` follows the numbers (`x`, ` MB/s`).
    pub fn of(subject: String, figure: &Figure, expect: Expect, unit: &str) -> Check {
        let judged = figure.as_ref().ok().map(|e| (*e, expect));
        let (verdict, measured) = match figure {
            Ok(estimate) => {
                let ci = estimate.ci95();
                let value = estimate.value();
                let measured = if ci.0 == ci.1 {
                    format!("{value:.2}{unit}")
                } else {
                    format!("{value:.2}{unit} [{:.2}, {:.2}]", ci.0, ci.1)
                };
                (expect.judge(ci), measured)
            }
            Err(reason) => (Verdict::NotTestable, reason.clone()),
        };
        let unsettled = (verdict == Verdict::Unsettled).then(|| {
            "its 95 % interval reaches across the claim's line, or within the 2 % noise floor \
             of it"
                .to_string()
        });
        Check {
            subject,
            verdict,
            measured,
            needs: expect.text(unit),
            paper: None,
            size: None,
            mechanism: None,
            unsettled,
            cells: Vec::new(),
            figure_cells: Vec::new(),
            judged,
        }
    }

    /// Marks the check unsettled (`why`: what kept it from being decided, and what would).
    pub fn unsettle(&mut self, why: String) {
        self.verdict = Verdict::Unsettled;
        self.unsettled = Some(why);
    }

    /// Its figure's estimate, where it had one.
    pub fn estimate(&self) -> Option<LogEstimate> {
        self.judged.map(|(estimate, _)| estimate)
    }

    /// Whether its figure is exact, no interval around it: a count (stored bytes over bytes),
    /// not a timing, which no load on the machine moves.
    pub fn is_exact(&self) -> bool {
        self.judged.is_some_and(|(estimate, _)| estimate.is_exact())
    }

    /// Where its interval reaches across a line while its estimate lies clear of the line's
    /// band: the trials factor that would settle it (`None` beyond [`MAX_TRIALS_FACTOR`]).
    /// `None` outside.
    pub fn straddles(&self) -> Option<Option<f64>> {
        let (estimate, expect) = self.undecided()?;
        expect.margin(estimate.value())?;
        Some(self.trials_factor())
    }

    /// Where its interval reaches across a line and its estimate lies on the line (within
    /// [`DECISION_BAND`] of it), on either side: the estimate and the line. A run whose estimate
    /// falls just under the line and one whose estimate falls just over it measured the same
    /// thing, and no number of trials decides between them.
    pub fn on_threshold(&self) -> Option<(f64, f64)> {
        let (estimate, expect) = self.undecided()?;
        let value = estimate.value();
        match expect.margin(value) {
            Some(_) => None,
            None => Some((value, expect.nearest_line(value))),
        }
    }

    /// Its estimate and expectation where its own interval leaves it undecided (not where only
    /// a busy machine did).
    fn undecided(&self) -> Option<(LogEstimate, Expect)> {
        if self.verdict != Verdict::Unsettled {
            return None;
        }
        let (estimate, expect) = self.judged?;
        (expect.judge(estimate.ci95()) == Verdict::Unsettled).then_some((estimate, expect))
    }

    /// How far its estimate lies inside its region, on the log scale, where it was decided
    /// by its interval ([`Expect::margin`]): a move of the estimate by more would reach the
    /// band of a line. `None` where undecided or without an interval.
    pub fn decided_margin(&self) -> Option<f64> {
        let (estimate, expect) = self.judged?;
        if expect.judge(estimate.ci95()) == Verdict::Unsettled {
            return None;
        }
        expect.decided_margin(estimate.value())
    }

    /// `cells` as settling's cells, and those of them in the cache `states` as the cells its
    /// figure is computed from ([`Check::figure_cells`]; no state: no drift is judged).
    pub fn cells_read(
        mut self,
        cells: Vec<CellKey>,
        states: &[crate::results::CacheState],
    ) -> Check {
        self.figure_cells = (cells.iter())
            .filter(|k| states.contains(&k.cache))
            .cloned()
            .collect();
        self.cells = cells;
        self
    }

    /// The cells settling adds trials to ([`Check::cells`]'s field).
    pub fn cells(mut self, cells: Vec<CellKey>) -> Check {
        self.cells = cells;
        self
    }

    /// By how much the trials of every cell behind this check must grow for its 95 % interval
    /// to clear the band of the line it reaches across (with a 10 % margin), when more trials
    /// can settle it: the check is unsettled only because its interval reaches across a line
    /// (or not reproduced only because it reaches across the opposite's), its estimate lies
    /// clear of that line's band, and at most [`MAX_TRIALS_FACTOR`] times the trials would do.
    /// `None` otherwise (decided, no interval, no cells of ours, or an estimate on a line).
    pub fn trials_factor(&self) -> Option<f64> {
        if self.cells.is_empty() {
            return None;
        }
        let (estimate, margin) = self.open()?;
        let settles = |f: f64| narrows_to(&estimate, margin, f, 1.1);
        if !settles(MAX_TRIALS_FACTOR) {
            return None;
        }
        // The half-width falls as the trials grow: bisect for the least factor that settles.
        let (mut lo, mut hi) = (1.0, MAX_TRIALS_FACTOR);
        while hi - lo > 0.01 {
            let mid = (lo + hi) / 2.0;
            if settles(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Some(hi)
    }

    /// Whether more trials could decide it, however many: it is open as
    /// [`Check::trials_factor`] asks, without the bound on the factor.
    pub fn open_to_trials(&self) -> bool {
        !self.cells.is_empty() && self.open().is_some()
    }

    /// Whether `f` times the trials of every cell behind it would narrow its interval enough to
    /// clear the band of the line it reaches across (without [`Check::trials_factor`]'s 10 %
    /// margin): a growth the cap on trials allows may still settle it.
    pub fn settles_with(&self, f: f64) -> bool {
        self.open()
            .is_some_and(|(estimate, margin)| narrows_to(&estimate, margin, f, 1.0))
    }

    /// Its estimate and how far it lies from the band of the line its interval reaches across,
    /// where more trials could decide what the interval leaves open: an unsettled check's
    /// claim line, or the line of the claim's opposite for a check not reproduced only because
    /// its interval reaches across that line (more trials say whether it is contradicted).
    /// `None` where decided, where only a busy machine or a drift left it undecided, or where
    /// its estimate lies on the line.
    fn open(&self) -> Option<(LogEstimate, f64)> {
        if let Some((estimate, expect)) = self.undecided() {
            return Some((estimate, expect.margin(estimate.value())?));
        }
        let (estimate, expect) = self.judged?;
        if self.verdict != Verdict::NotReproduced {
            return None;
        }
        let margin = expect.contrary_margin(estimate.ci95(), estimate.value())?;
        Some((estimate, margin))
    }

    /// The paper's figure for the same subject, and whether ours has its size.
    pub fn paper(mut self, paper: Option<Figure>) -> Check {
        let Some(Ok(theirs)) = paper else {
            return self;
        };
        self.paper = Some(ratio_text(&Ok(theirs)));
        if let Some((ours, _)) = self.judged {
            let (lo, hi) = theirs.ci95();
            let value = ours.value();
            let within = value >= lo / SIZE_FACTOR && value <= hi * SIZE_FACTOR;
            let paper = if (hi / lo - 1.0).abs() < 1e-9 {
                format!("{lo:.2}x")
            } else {
                format!("{lo:.2}x to {hi:.2}x")
            };
            self.size = Some(format!(
                "size: ours {value:.2}x, the paper's {paper}: {}",
                if within {
                    format!("within a factor of {SIZE_FACTOR}")
                } else {
                    format!("not within a factor of {SIZE_FACTOR}")
                }
            ));
        }
        self
    }

    pub fn mechanism(mut self, mechanism: Option<String>) -> Check {
        self.mechanism = mechanism;
        self
    }
}

/// One claim of a finding, checked on every subject it applies to.
#[derive(Clone, Debug, Serialize)]
pub struct SubClaim {
    pub id: &'static str,
    pub claim: &'static str,
    pub verdict: Verdict,
    pub checks: Vec<Check>,
    /// Why nothing could be checked, or what limits the checks (cores, memory, storage).
    pub note: Option<String>,
    /// Lines measured for contrast (another storage, raw files): shown, never counted.
    pub contrast: Vec<String>,
}

impl SubClaim {
    pub fn new(id: &'static str, claim: &'static str, checks: Vec<Check>) -> SubClaim {
        SubClaim {
            id,
            claim,
            verdict: Verdict::of_all(checks.iter().map(|c| c.verdict)),
            checks,
            note: None,
            contrast: Vec::new(),
        }
    }

    pub fn note(mut self, note: Option<String>) -> SubClaim {
        self.note = note;
        self
    }
}

/// A finding of the paper and how it fared here.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    pub number: usize,
    pub claim: &'static str,
    /// The paper's figures, in words.
    pub paper: &'static str,
    pub verdict: Verdict,
    pub sub_claims: Vec<SubClaim>,
}

impl Finding {
    pub fn new(
        number: usize,
        claim: &'static str,
        paper: &'static str,
        sub_claims: Vec<SubClaim>,
    ) -> Finding {
        Finding {
            number,
            claim,
            paper,
            verdict: Verdict::of_all(sub_claims.iter().map(|s| s.verdict)),
            sub_claims,
        }
    }

    /// ` (2 of 4 claims testable here)` when some claims could not be tested.
    fn testable_part(&self) -> String {
        let testable = self
            .sub_claims
            .iter()
            .filter(|s| s.verdict != Verdict::NotTestable)
            .count();
        if testable == 0 || testable == self.sub_claims.len() {
            String::new()
        } else {
            format!(
                " ({testable} of {} claims testable here)",
                self.sub_claims.len()
            )
        }
    }

    /// The finding in Markdown: its verdict, each sub-claim with its checks, and for every check
    /// that did not reproduce, its measured mechanism.
    pub fn markdown(&self) -> String {
        let mut md = String::new();
        let _ = writeln!(
            md,
            "### Finding {}: {}{}\n\n{}. Paper: {}.\n",
            self.number,
            self.verdict.text(),
            self.testable_part(),
            self.claim,
            self.paper
        );
        for sub in &self.sub_claims {
            let _ = writeln!(
                md,
                "- **{}** {}: **{}**",
                sub.id,
                sub.claim,
                sub.verdict.text()
            );
            if let Some(note) = &sub.note {
                let _ = writeln!(md, "  - {note}");
            }
            for c in &sub.checks {
                let paper = c
                    .paper
                    .as_ref()
                    .map(|p| format!("; paper {p}"))
                    .unwrap_or_default();
                let why = c
                    .unsettled
                    .as_ref()
                    .map(|w| format!(": {w}"))
                    .unwrap_or_default();
                let _ = writeln!(
                    md,
                    "  - {}: {} (needs {}{paper}): {}{why}",
                    c.subject,
                    c.measured,
                    c.needs,
                    c.verdict.text()
                );
                if let Some(size) = &c.size {
                    let _ = writeln!(md, "    - {size}");
                }
                if matches!(
                    c.verdict,
                    Verdict::NotReproduced | Verdict::Contradicted | Verdict::Unsettled
                ) {
                    if let Some(m) = &c.mechanism {
                        let _ = writeln!(md, "    - mechanism: {m}");
                    }
                }
            }
            for line in &sub.contrast {
                let _ = writeln!(md, "  - contrast, not counted: {line}");
            }
        }
        md
    }
}

/// A figure's value as `1.23x`, or `-` without one.
pub fn ratio_text(figure: &Figure) -> String {
    match figure {
        Ok(e) => format!("{:.2}x", e.value()),
        Err(_) => "-".into(),
    }
}

/// Kendall's tau-b between our cold throughput ranking and the paper's epoch-0 ranking over the
/// strategies both measured; `None` without the paper's figures or two common strategies.
pub fn kendall(view: &WorkloadView) -> Option<(f64, usize)> {
    let paper = view.paper.as_ref()?;
    let t = view.max_threads();
    let pairs: Vec<(f64, f64)> = view
        .strategies
        .iter()
        .filter_map(|(_, s)| {
            Some((
                view.cold(s, Codec::None, t)?.throughput.mean,
                paper.strategy(s)?.sps_epoch0,
            ))
        })
        .collect();
    let (ours, theirs): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
    kendall_tau_b(&ours, &theirs).map(|tau| (tau, pairs.len()))
}
