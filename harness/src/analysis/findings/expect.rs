//! The verdicts a claim can get, and where a ratio must lie for each: the lines a claim
//! draws, the verdict of an interval against them, and how far an estimate lies from the
//! lines that decide it.

use serde::Serialize;

/// How a claim fared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Reproduced,
    NotReproduced,
    Contradicted,
    /// Not decided by these measurements: more trials would decide, or the machine was busy.
    Unsettled,
    NotTestable,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Reproduced => "reproduced",
            Verdict::NotReproduced => "not reproduced",
            Verdict::Contradicted => "contradicted",
            Verdict::Unsettled => "unsettled",
            Verdict::NotTestable => "not testable here",
        }
    }

    /// The verdict of several: the testable ones all reproduced, all contradicted, or mixed
    /// (not reproduced); unsettled when the decided ones agree but some are unsettled (or all
    /// are); not testable when none is testable.
    pub fn of_all(verdicts: impl IntoIterator<Item = Verdict>) -> Verdict {
        let testable: Vec<Verdict> = verdicts
            .into_iter()
            .filter(|v| *v != Verdict::NotTestable)
            .collect();
        let decided: Vec<Verdict> = testable
            .iter()
            .copied()
            .filter(|v| *v != Verdict::Unsettled)
            .collect();
        let agree = |v: Verdict| decided.iter().all(|d| *d == v);
        if testable.is_empty() {
            Verdict::NotTestable
        } else if decided.len() < testable.len()
            && (agree(Verdict::Reproduced) || agree(Verdict::Contradicted))
        {
            Verdict::Unsettled
        } else if agree(Verdict::Reproduced) {
            Verdict::Reproduced
        } else if agree(Verdict::Contradicted) {
            Verdict::Contradicted
        } else {
            Verdict::NotReproduced
        }
    }
}

/// A line is crossed only when the whole 95 % interval clears it by this factor: the noise
/// floor `compare` calls no change within ([`crate::analysis::stats::DEFAULT_NOISE`]). Two runs
/// of one machine can differ by more than one run's trials show (of 134 cells in two idle
/// quick runs built from two commits, 35 differed at p < 0.05; from one commit, 12), so an
/// interval that clears a line by less decides nothing a rerun would keep.
pub const DECISION_BAND: f64 = 1.0 + crate::analysis::stats::DEFAULT_NOISE;

/// Where a ratio must lie for a claim to hold, and where it shows the opposite.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Expect {
    /// At least `holds`; at most `opposite` contradicts.
    AtLeast { holds: f64, opposite: f64 },
    /// At most `holds`; at least `opposite` contradicts.
    AtMost { holds: f64, opposite: f64 },
    /// Within [lo, hi]; at most `below` or at least `above` contradicts.
    Within {
        lo: f64,
        hi: f64,
        below: f64,
        above: f64,
    },
}

impl Expect {
    /// The lines the claim draws, in increasing order, and the verdict of each region they
    /// bound (one more region than lines).
    fn regions(self) -> (Vec<f64>, Vec<Verdict>) {
        use Verdict::{Contradicted as C, NotReproduced as N, Reproduced as R};
        match self {
            Expect::AtLeast { holds, opposite } => (vec![opposite, holds], vec![C, N, R]),
            Expect::AtMost { holds, opposite } => (vec![holds, opposite], vec![R, N, C]),
            Expect::Within {
                lo,
                hi,
                below,
                above,
            } => (vec![below, lo, hi, above], vec![C, N, R, N, C]),
        }
    }

    /// The verdict for a 95 % interval [lo, hi]: that of the region the whole interval lies
    /// in, each line cleared by [`DECISION_BAND`] (a point, an exact figure, need only reach
    /// it); not reproduced where it reaches across a line but stays clear of every region where
    /// the claim holds (the claim fails whichever side of the line the figure is: contradicted
    /// or only not reproduced); unsettled where it reaches into such a region and out of it. On
    /// a line exactly, a point takes the stronger verdict (reproduced, then contradicted).
    pub fn judge(self, (lo, hi): (f64, f64)) -> Verdict {
        let band = if hi > lo { DECISION_BAND } else { 1.0 };
        let (lines, verdicts) = self.regions();
        let fits = |i: usize| {
            (i == 0 || lo >= lines[i - 1] * band) && (i == lines.len() || hi <= lines[i] / band)
        };
        let reaches = |i: usize| interval_reaches(&lines, band, (lo, hi), i);
        let found: Vec<Verdict> = (0..verdicts.len())
            .filter(|i| fits(*i))
            .map(|i| verdicts[i])
            .collect();
        let holds_reached =
            (0..verdicts.len()).any(|i| verdicts[i] == Verdict::Reproduced && reaches(i));
        [
            Verdict::Reproduced,
            Verdict::Contradicted,
            Verdict::NotReproduced,
        ]
        .into_iter()
        .find(|v| found.contains(v))
        .unwrap_or(if holds_reached {
            Verdict::Unsettled
        } else {
            Verdict::NotReproduced
        })
    }

    /// How far `value` lies, on the log scale, from the nearest line of a region where the
    /// claim holds (each line moved out by [`DECISION_BAND`]): the half-width an interval
    /// around it may have and still be decided, whether it then reproduces or not (an interval
    /// across the opposite line alone is decided: not reproduced). `None` within such a
    /// line's band, where no number of trials can settle the claim.
    pub fn margin(self, value: f64) -> Option<f64> {
        non_negative(self.claim_lines().map(|line| distance(value, line)))
    }

    /// Where the 95 % interval [lo, hi] is not reproduced only because it reaches across a line
    /// of a region where the claim's opposite holds (it reaches no region where the claim
    /// does): how far `value` lies, on the log scale, from the band of the nearest such line,
    /// the half-width an interval around it may have and be decided either way (contradicted,
    /// or not reproduced clear of the line). `None` otherwise, and within such a line's band.
    pub fn contrary_margin(self, (lo, hi): (f64, f64), value: f64) -> Option<f64> {
        if hi <= lo || self.judge((lo, hi)) != Verdict::NotReproduced {
            return None;
        }
        let (lines, verdicts) = self.regions();
        let contradicts = (0..verdicts.len()).any(|i| {
            verdicts[i] == Verdict::Contradicted
                && interval_reaches(&lines, DECISION_BAND, (lo, hi), i)
        });
        if !contradicts {
            return None;
        }
        non_negative(
            self.lines_of(Verdict::Contradicted)
                .map(|line| distance(value, line)),
        )
    }

    /// The lines that bound a region where the claim holds: the only lines an undecided
    /// interval must clear.
    fn claim_lines(self) -> impl Iterator<Item = f64> {
        self.lines_of(Verdict::Reproduced)
    }

    /// The lines that bound a region of `verdict`.
    fn lines_of(self, verdict: Verdict) -> impl Iterator<Item = f64> {
        let (lines, verdicts) = self.regions();
        let of = move |i: usize| verdicts[i] == verdict;
        (0..lines.len())
            .filter(move |&j| of(j) || of(j + 1))
            .map(move |j| lines[j])
    }

    /// How far `value` lies inside the region it is in, on the log scale, from the lines whose
    /// crossing would change the verdict of an interval around it: both lines of a region where
    /// the claim holds or its opposite does, the lines of the regions where it holds for one
    /// between them. `None` within such a line's band.
    pub fn decided_margin(self, value: f64) -> Option<f64> {
        let (lines, verdicts) = self.regions();
        let i = lines.iter().filter(|line| value > **line).count();
        let counts = |neighbour: usize| {
            verdicts[i] != Verdict::NotReproduced || verdicts[neighbour] == Verdict::Reproduced
        };
        let below = (i > 0 && counts(i - 1)).then(|| distance(value, lines[i - 1]));
        let above = (i < lines.len() && counts(i + 1)).then(|| distance(value, lines[i]));
        non_negative(below.into_iter().chain(above))
    }

    /// The claim's line nearest `value` on the log scale: the one an estimate without a
    /// [`Expect::margin`] lies on.
    pub(super) fn nearest_line(self, value: f64) -> f64 {
        self.claim_lines()
            .min_by(|a, b| (value / a).ln().abs().total_cmp(&(value / b).ln().abs()))
            .unwrap_or(value)
    }

    /// The claim's side in words: `>= 1.50x`.
    pub fn text(self, unit: &str) -> String {
        match self {
            Expect::AtLeast { holds, .. } => format!(">= {holds:.2}{unit}"),
            Expect::AtMost { holds, .. } => format!("<= {holds:.2}{unit}"),
            Expect::Within { lo, hi, .. } => format!("{lo:.2}{unit} to {hi:.2}{unit}"),
        }
    }
}

/// Whether the interval [lo, hi] reaches region `i` bounded by `lines`, or a line's band
/// around it.
fn interval_reaches(lines: &[f64], band: f64, (lo, hi): (f64, f64), i: usize) -> bool {
    (i == 0 || hi > lines[i - 1] / band) && (i == lines.len() || lo < lines[i] * band)
}

/// How far `value` lies from `line`'s band on the log scale (negative within the band).
fn distance(value: f64, line: f64) -> f64 {
    if value > line {
        value.ln() - (line * DECISION_BAND).ln()
    } else {
        (line / DECISION_BAND).ln() - value.ln()
    }
}

/// The least of `distances` (infinite without any), or `None` when one is negative.
fn non_negative(distances: impl Iterator<Item = f64>) -> Option<f64> {
    let least = distances.fold(f64::INFINITY, f64::min);
    (least >= 0.0).then_some(least)
}

#[cfg(test)]
mod tests;
