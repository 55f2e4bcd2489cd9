//! Where an online epoch's time went: the workers' time split into reading, decompressing,
//! deserializing, each online step and waiting on the consumer, recorded per run and epoch in
//! `stages.csv`, and each run classified as io-, cpu- or consumer-bound from those shares.

use crate::results::{Bound, StageKind, StageName, StageRow};

/// One stage of an epoch: its name, whether it is storage (`io`), computation (`cpu`) or
/// waiting (`wait`: workers on the consumer; `consumer`: the consumer on the workers).
#[derive(Clone, Debug, PartialEq)]
pub struct Stage {
    pub name: StageName,
    pub kind: StageKind,
    pub seconds: f64,
}

impl Stage {
    /// The stage a stages.csv row records.
    pub fn of_row(row: &StageRow) -> Stage {
        Stage {
            name: row.stage.clone(),
            kind: row.kind,
            seconds: row.seconds,
        }
    }
}

/// The workers' total time: every stage but the consumer's own wait.
fn worker_seconds(stages: &[Stage]) -> f64 {
    stages
        .iter()
        .filter(|s| s.kind != StageKind::Consumer)
        .map(|s| s.seconds)
        .sum()
}

/// A stage's share in percent: of the workers' time, or for the consumer's wait of `wall_s`.
pub fn share_pct(stage: &Stage, stages: &[Stage], wall_s: f64) -> f64 {
    let whole = if stage.kind == StageKind::Consumer {
        wall_s
    } else {
        worker_seconds(stages)
    };
    if whole > 0.0 {
        100.0 * stage.seconds / whole
    } else {
        0.0
    }
}

/// `stages.csv` rows of one epoch.
pub fn rows(run_id: &str, epoch: u64, stages: &[Stage], wall_s: f64) -> Vec<StageRow> {
    stages
        .iter()
        .map(|s| StageRow {
            run_id: run_id.to_string(),
            epoch,
            stage: s.name.clone(),
            kind: s.kind,
            seconds: s.seconds,
            share_pct: share_pct(s, stages, wall_s),
        })
        .collect()
}

/// Workers waiting on the consumer for more than this share of their time: consumer-bound.
const CONSUMER_BOUND_SHARE: f64 = 0.25;

/// What bound the epoch, with the evidence: the largest shares. `None` when no time was
/// recorded.
pub fn classify(stages: &[Stage]) -> (Option<Bound>, String) {
    let total = worker_seconds(stages);
    if total <= 0.0 {
        return (None, "no time recorded".into());
    }
    let of = |kind: StageKind| {
        stages
            .iter()
            .filter(|s| s.kind == kind)
            .map(|s| s.seconds)
            .sum::<f64>()
            / total
    };
    let (io, cpu, wait) = (of(StageKind::Io), of(StageKind::Cpu), of(StageKind::Wait));
    let bound = if wait > CONSUMER_BOUND_SHARE {
        Bound::ConsumerBound
    } else if io >= cpu {
        Bound::IoBound
    } else {
        Bound::CpuBound
    };
    let mut ranked: Vec<&Stage> = stages
        .iter()
        .filter(|s| s.kind != StageKind::Consumer)
        .collect();
    ranked.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
    let top: Vec<String> = ranked
        .iter()
        .take(3)
        .filter(|s| s.seconds > 0.0)
        .map(|s| format!("{} {:.0} %", s.name, 100.0 * s.seconds / total))
        .collect();
    (
        Some(bound),
        format!(
            "io {:.0} %, cpu {:.0} %, waiting on the consumer {:.0} %; largest: {}",
            100.0 * io,
            100.0 * cpu,
            100.0 * wait,
            top.join(", ")
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(name: &str, kind: &str, seconds: f64) -> Stage {
        Stage {
            name: name.parse().unwrap(),
            kind: kind.parse().unwrap(),
            seconds,
        }
    }

    #[test]
    fn classifies_by_the_largest_kind_of_work() {
        let io = [
            stage("read", "io", 6.0),
            stage("decompress", "cpu", 1.0),
            stage("step:cropped", "cpu", 2.0),
            stage("workers:blocked", "wait", 1.0),
            stage("consumer:starved", "consumer", 5.0),
        ];
        let (bound, evidence) = classify(&io);
        assert_eq!(bound, Some(Bound::IoBound));
        assert!(evidence.starts_with("io 60 %, cpu 30 %"), "{evidence}");
        assert!(
            evidence.contains("read 60 %, step:cropped 20 %"),
            "{evidence}"
        );
        assert_eq!(share_pct(&io[4], &io, 10.0), 50.0);
        let cpu = [stage("read", "io", 1.0), stage("step:resized", "cpu", 8.0)];
        assert_eq!(classify(&cpu).0, Some(Bound::CpuBound));
        let consumer = [
            stage("read", "io", 1.0),
            stage("workers:blocked", "wait", 3.0),
        ];
        assert_eq!(classify(&consumer).0, Some(Bound::ConsumerBound));
        assert_eq!(classify(&[]).0, None);
    }
}
