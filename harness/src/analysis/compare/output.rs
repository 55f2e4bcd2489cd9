//! `compare`'s outputs: Markdown with the folders' conclusions side by side, CSV, JSON and a
//! forest plot.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::conclusions::{Best, Conclusions, SeenCheck};
use super::pairing::*;
use crate::analysis::cells::MIN_EPOCH_S;
use crate::analysis::findings::Verdict;

use crate::analysis::svg::{Forest, ForestRow};
use crate::units::rate;

fn ratio_text(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 0.01 {
        format!("{v:.3}")
    } else {
        format!("{v:.2e}")
    }
}

impl Comparison {
    fn count(&self, verdict: ChangeVerdict) -> usize {
        self.changes.iter().filter(|c| c.verdict == verdict).count()
    }

    fn method(&self) -> String {
        format!(
            "Ratio B/A of mean throughput per pair of cells, with its 95 % CI on the log scale \
             (delta method, Welch-Satterthwaite degrees of freedom; never negative). Each ratio \
             is tested against 1 (t-test of the log ratio) and the p-values of the {} pairs \
             tested are corrected by {}'s method; a pair is faster or slower when its corrected \
             p is under {} and its whole CI lies beyond the ±{} % noise threshold, within noise \
             when significant but not beyond it. Pairs with one trial or epochs under {} s on \
             either side are listed but not judged.",
            self.tested,
            self.correction.text(),
            self.alpha,
            self.noise * 100.0,
            MIN_EPOCH_S
        )
    }

    fn summary(&self) -> String {
        let mut parts: Vec<String> = [
            ChangeVerdict::Faster,
            ChangeVerdict::Slower,
            ChangeVerdict::WithinNoise,
            ChangeVerdict::NoChange,
            ChangeVerdict::TooFewTrials,
            ChangeVerdict::EpochsTooShort,
        ]
        .into_iter()
        .filter_map(|v| {
            let n = self.count(v);
            (n > 0).then(|| format!("{n} {}", v.text()))
        })
        .collect();
        parts.push(format!(
            "{} cells only in A, {} only in B",
            self.only_in_a, self.only_in_b
        ));
        format!("{} pairs: {}.", self.changes.len(), parts.join(", "))
    }

    fn header(&self) -> String {
        let mut cells: Vec<String> = SETTINGS
            .iter()
            .map(|name| {
                if across_index(self.across).map(|i| SETTINGS[i]) == Some(*name) {
                    format!("{name} A → B")
                } else {
                    name.to_string()
                }
            })
            .collect();
        cells.extend(
            [
                "samples per epoch A, B",
                "A samples/s (trials)",
                "B samples/s (trials)",
                "B/A",
                "95 % CI",
                "p",
                "p corrected",
                "verdict",
            ]
            .map(String::from),
        );
        format!("| {} |\n|{}", cells.join(" | "), "---|".repeat(cells.len()))
    }

    fn row(&self, c: &Change) -> String {
        let index = across_index(self.across);
        let mut cells: Vec<String> = (0..SETTINGS.len())
            .map(|i| {
                if Some(i) == index {
                    format!("{} → {}", c.a_value, c.b_value)
                } else {
                    c.column(i).to_string()
                }
            })
            .collect();
        let p = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |p| format!("{p:.3}"));
        cells.extend([
            format!("{}, {}", c.a_samples, c.b_samples),
            format!("{} ({})", rate(c.a_samples_per_s), c.a_trials),
            format!("{} ({})", rate(c.b_samples_per_s), c.b_trials),
            ratio_text(c.ratio),
            match (c.ci95_lo, c.ci95_hi) {
                (Some(lo), Some(hi)) => format!("[{}, {}]", ratio_text(lo), ratio_text(hi)),
                _ => "-".into(),
            },
            p(c.p),
            p(c.p_adjusted),
            if c.verdict.is_change() {
                format!("**{}**", c.verdict.text())
            } else {
                c.verdict.text().to_string()
            },
        ]);
        format!("| {} |", cells.join(" | "))
    }

    /// The comparison as Markdown.
    pub fn markdown(&self) -> anyhow::Result<String> {
        let mut out = String::new();
        let _ = writeln!(out, "# {} (B) vs {} (A)\n", self.b, self.a);
        for (side, machine) in [("A", &self.a_machine), ("B", &self.b_machine)] {
            if let Some(m) = machine {
                let _ = writeln!(out, "- {side} ran on {m}");
            }
        }
        let _ = writeln!(
            out,
            "- Paired across: {}{}\n",
            self.across.name(),
            if self.across == Across::Machine {
                " (every setting equal)".to_string()
            } else {
                format!(
                    " (every other setting equal; the {} column shows A → B)",
                    self.across.name()
                )
            }
        );
        let _ = writeln!(out, "{}\n\n{}\n", self.method(), self.summary());
        let mut significant: Vec<&Change> = self
            .changes
            .iter()
            .filter(|c| c.verdict.is_change())
            .collect();
        significant.sort_by(|x, y| y.ratio.ln().abs().total_cmp(&x.ratio.ln().abs()));
        let _ = writeln!(out, "## Largest significant changes\n");
        if significant.is_empty() {
            let _ = writeln!(
                out,
                "None: no pair is significant after the correction and beyond the noise threshold.\n"
            );
        } else {
            let _ = writeln!(out, "{}", self.header());
            for c in significant.iter().take(10) {
                let _ = writeln!(out, "{}", self.row(c));
            }
            let _ = writeln!(out);
        }
        if let Some((a, b)) = &self.conclusions {
            let _ = writeln!(out, "{}", conclusions(a, b));
        }
        let _ = writeln!(out, "## Every pair\n\n{}", self.header());
        for c in &self.changes {
            let _ = writeln!(out, "{}", self.row(c));
        }
        Ok(out)
    }

    /// Every pair as CSV, one row each, every setting a column.
    pub fn csv(&self) -> anyhow::Result<String> {
        let mut w = csv::Writer::from_writer(Vec::new());
        for c in &self.changes {
            w.serialize(c)?;
        }
        Ok(String::from_utf8(w.into_inner()?)?)
    }

    pub fn json(&self) -> anyhow::Result<String> {
        Ok(serde_json::to_string_pretty(self)? + "\n")
    }

    /// A forest plot of the ratios with their CIs, the noise band shaded, coloured by verdict.
    /// Rows are labelled by the settings that vary among the pairs; the others are the subtitle.
    pub fn plot(&self) -> String {
        let index = across_index(self.across);
        let varying: Vec<usize> = (0..SETTINGS.len())
            .filter(|&i| Some(i) != index)
            .filter(|&i| {
                self.changes
                    .iter()
                    .map(|c| c.column(i))
                    .collect::<BTreeSet<_>>()
                    .len()
                    > 1
            })
            .collect();
        let constant: Vec<String> = (0..SETTINGS.len())
            .filter(|&i| Some(i) != index && !varying.contains(&i))
            .filter_map(|i| {
                let c = self.changes.first()?;
                Some(labelled(i, c.column(i)))
            })
            .collect();
        let rows = self
            .changes
            .iter()
            .map(|c| ForestRow {
                label: varying
                    .iter()
                    .map(|&i| labelled(i, c.column(i)))
                    .collect::<Vec<_>>()
                    .join(", "),
                value: c.ratio,
                interval: c.ci95_lo.zip(c.ci95_hi),
                group: match c.verdict {
                    ChangeVerdict::Faster => 0,
                    ChangeVerdict::Slower => 1,
                    ChangeVerdict::WithinNoise | ChangeVerdict::NoChange => 2,
                    ChangeVerdict::TooFewTrials | ChangeVerdict::EpochsTooShort => 3,
                },
            })
            .collect();
        let title = match self.across {
            Across::Machine => "Throughput B / A per cell".to_string(),
            across => match self.changes.first() {
                Some(c) => format!(
                    "Throughput across {} ({} → {}): B / A per cell",
                    across.name(),
                    c.a_value,
                    c.b_value
                ),
                None => format!("Throughput across {}: B / A per cell", across.name()),
            },
        };
        Forest {
            title,
            subtitle: format!("A: {}; B: {}; all: {}", self.a, self.b, constant.join(", ")),
            x_label: "throughput ratio B / A (log scale), 95 % CI".into(),
            rows,
            groups: vec![
                ("faster".into(), "#2ca02c"),
                ("slower".into(), "#d62728"),
                ("no change or within noise".into(), "#555555"),
                ("not judged".into(), "#aaaaaa"),
            ],
            reference: 1.0,
            band: Some((1.0 / (1.0 + self.noise), 1.0 + self.noise)),
            band_label: format!("±{} % noise", self.noise * 100.0),
        }
        .to_svg()
    }
}

/// Where claims' verdicts differ: the checks behind each whose verdicts differ, with each
/// folder's figure, what the claim needs, and B's figure over A's with its 95 % interval
/// (the two runs independent): whether the two measured different things (the interval
/// clears 1) or one thing within their trials, judged either side of a line of its rule.
struct Differing {
    text: String,
    /// Claims whose verdicts differ.
    claims: usize,
    /// Of those, the claims where every check whose verdict differs has figures not
    /// measurably different.
    same_figures: usize,
}

/// B's figure over A's with its interval, and whether the two are not measurably different
/// (the t-test of the log ratio against 1, p >= 0.05: the interval holds 1). Nothing, and not
/// the same, where either folder's check has no estimate.
fn b_over_a(a: &SeenCheck, b: &SeenCheck) -> (String, bool) {
    let Some(r) = a.estimate.zip(b.estimate).map(|(ea, eb)| eb.over(&ea)) else {
        return (String::new(), false);
    };
    let (lo, hi) = r.ci95();
    let same = r.p_value_of_one() >= 0.05;
    let what = if same {
        "not measurably different"
    } else {
        "different"
    };
    let text = format!("; B/A {:.2}x [{lo:.2}, {hi:.2}], {what}", r.value());
    (text, same)
}

fn differing_checks(a: &Conclusions, b: &Conclusions) -> Differing {
    let mut out = String::new();
    let (mut claims, mut same_figures) = (0, 0);
    for (id, va) in &a.verdicts {
        let Some((_, vb)) = b.verdicts.iter().find(|(i, _)| i == id) else {
            continue;
        };
        if va == vb {
            continue;
        }
        claims += 1;
        let of = |c: &&SeenCheck| &c.claim == id;
        // A check only one folder has leaves the claim's difference unexplained by figures.
        let mut all_same = b.checks.iter().filter(of).all(|cb| {
            a.checks
                .iter()
                .any(|ca| ca.claim == cb.claim && ca.subject == cb.subject)
        });
        let mut any = false;
        for ca in a.checks.iter().filter(of) {
            let subject = &ca.subject;
            match b.checks.iter().find(|c| of(c) && &c.subject == subject) {
                Some(cb) if cb.verdict != ca.verdict => {
                    any = true;
                    let (apart, same) = b_over_a(ca, cb);
                    all_same &= same;
                    let _ = writeln!(
                        out,
                        "- {id}, {subject}: A {}: {}; B {}: {}{apart}",
                        ca.figure,
                        ca.verdict.text(),
                        cb.figure,
                        cb.verdict.text()
                    );
                }
                None => {
                    all_same = false;
                    let _ = writeln!(
                        out,
                        "- {id}, {subject}: A {}: {}; not in B",
                        ca.figure,
                        ca.verdict.text()
                    );
                }
                _ => {}
            }
        }
        same_figures += usize::from(any && all_same);
    }
    if !out.is_empty() {
        out = format!(
            "Where the verdicts differ, the checks behind them (B/A: B's figure over A's, its \
             95 % interval from both folders' trials):\n\n{out}\n"
        );
    }
    Differing {
        text: out,
        claims,
        same_figures,
    }
}

/// Whether the two folders conclude the same: the paper's findings' verdicts (for the paper's
/// workloads only) and each workload's best strategy, side by side, with how many agree.
pub(super) fn conclusions(a: &Conclusions, b: &Conclusions) -> String {
    let mut out = String::new();
    let agree = |x: &str, y: &str| if x == y { "yes" } else { "**no**" };
    if !a.verdicts.is_empty() {
        let _ = writeln!(
            out,
            "## The paper's findings\n\n| claim | A | B | same |\n|---|---|---|---|"
        );
        let (mut same, mut open) = (0, 0);
        for (id, va) in &a.verdicts {
            let vb = b.verdicts.iter().find(|(i, _)| i == id).map(|(_, v)| *v);
            // Decided in one folder and unsettled in the other is not a conflict: one run's
            // interval reached across the line the other's cleared.
            let one_open =
                vb.is_some_and(|vb| (vb == Verdict::Unsettled) != (*va == Verdict::Unsettled));
            same += usize::from(vb == Some(*va));
            open += usize::from(one_open);
            let (ta, tb) = (va.text(), vb.map_or("-", Verdict::text));
            let cell = if one_open {
                "unsettled in one"
            } else {
                agree(ta, tb)
            };
            let _ = writeln!(out, "| {id} | {ta} | {tb} | {cell} |");
        }
        let _ = writeln!(
            out,
            "\n{same} of {} verdicts agree; {open} decided in one folder are unsettled in the \
             other; {} differ otherwise.\n",
            a.verdicts.len(),
            a.verdicts.len() - same - open
        );
        let differing = differing_checks(a, b);
        if differing.claims > 0 {
            let _ = writeln!(
                out,
                "Of the {} that differ, {} differ only where the two folders' figures are not \
                 measurably different (B/A's interval holds 1 for every check whose verdict \
                 differs): one quantity, judged either side of a line of its rule.\n",
                differing.claims, differing.same_figures
            );
        }
        out.push_str(&differing.text);
    }
    let _ = writeln!(
        out,
        "## Best strategy (cold, codec none, most threads, epochs of {MIN_EPOCH_S} s or more)\n\n| workload | A | B | same |\n|---|---|---|---|"
    );
    let (mut common, mut same) = (0, 0);
    for (name, sa) in &a.best {
        let Some((_, sb)) = b.best.iter().find(|(n, _)| n == name) else {
            continue;
        };
        common += 1;
        // An undetermined best agrees with nothing, itself included.
        let verdict = match (sa, sb) {
            (Best::Strategy(x), Best::Strategy(y)) => {
                same += usize::from(x == y);
                agree(x, y)
            }
            _ => "-",
        };
        let _ = writeln!(out, "| {name} | {sa} | {sb} | {verdict} |");
    }
    let _ = writeln!(out, "\n{same} of {common} best strategies agree.\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::LogEstimate;

    #[test]
    fn differing_verdicts_show_the_checks_behind_them_and_agreeing_ones_do_not() {
        let seen = |claim: &str, figure: &str, verdict: Verdict, (lo, hi): (f64, f64)| SeenCheck {
            claim: claim.into(),
            subject: if claim == "1a" { "cv" } else { "synthetic" }.into(),
            figure: figure.into(),
            verdict,
            estimate: LogEstimate::range(lo, hi),
        };
        let folder = |fig: &str, verdict: Verdict, interval: (f64, f64)| Conclusions {
            verdicts: vec![("1a".into(), Verdict::Reproduced), ("5b".into(), verdict)],
            checks: vec![
                seen(
                    "1a",
                    "2.0x [1.8, 2.2] (needs >= 1.05x)",
                    Verdict::Reproduced,
                    (1.8, 2.2),
                ),
                seen("5b", fig, verdict, interval),
            ],
            best: Vec::new(),
        };
        let a = folder(
            "1.96x [1.76, 2.18] (needs >= 2.00x)",
            Verdict::NotReproduced,
            (1.76, 2.18),
        );
        let b = folder(
            "2.10x [1.96, 2.24] (needs >= 2.00x)",
            Verdict::Unsettled,
            (1.96, 2.24),
        );
        let text = conclusions(&a, &b);
        assert!(
            text.contains(
                "1 of 2 verdicts agree; 1 decided in one folder are unsettled in the other; 0 differ otherwise"
            ),
            "{text}"
        );
        assert!(
            text.contains("| 5b | not reproduced | unsettled | unsettled in one |"),
            "{text}"
        );
        // Two decided verdicts that differ conflict.
        let c = folder(
            "2.30x [2.10, 2.52] (needs >= 2.00x)",
            Verdict::Reproduced,
            (2.10, 2.52),
        );
        let conflict = conclusions(&c, &a);
        assert!(
            conflict.contains("| 5b | reproduced | not reproduced | **no** |"),
            "{conflict}"
        );
        assert!(
            conflict.contains("0 decided in one folder are unsettled in the other; 1 differ"),
            "{conflict}"
        );
        assert!(conflict.contains("- 5b, synthetic: A 2.30x"), "{conflict}");
        // Figures apart by more than their trials allow: a difference of what was measured.
        assert!(
            conflict.contains("B/A 0.85x [0.74, 0.98], different"),
            "{conflict}"
        );
        assert!(
            conflict.contains("Of the 1 that differ, 0 differ only"),
            "{conflict}"
        );
        // Figures within each other's trials: one quantity either side of the 2.00x line.
        assert!(
            text.contains("Of the 1 that differ, 1 differ only"),
            "{text}"
        );
        assert!(
            text.contains(
                "- 5b, synthetic: A 1.96x [1.76, 2.18] (needs >= 2.00x): not reproduced; \
                 B 2.10x [1.96, 2.24] (needs >= 2.00x): unsettled; B/A 1.07x [0.94, 1.21], \
                 not measurably different"
            ),
            "{text}"
        );
        assert!(!text.contains("- 1a"), "{text}");
        assert!(!conclusions(&a, &a).contains("Where the verdicts differ"));
        // A check one folder lacks, or a figure without an estimate, leaves the difference
        // unexplained by figures, however close the rest.
        let mut missing = b.clone();
        missing.checks.retain(|c| c.claim != "5b");
        let text = conclusions(&a, &missing);
        assert!(text.contains("- 5b, synthetic: A 1.96x"), "{text}");
        assert!(
            text.contains("Of the 1 that differ, 0 differ only"),
            "{text}"
        );
        let mut no_estimate = b.clone();
        no_estimate.checks[1].estimate = None;
        let text = conclusions(&a, &no_estimate);
        assert!(
            text.contains("Of the 1 that differ, 0 differ only"),
            "{text}"
        );
    }
}
