//! Where an online epoch's time went: the workers' times split into stages.

use workloads::Workload;

use crate::measure::online::StageTimes;
use crate::results::{Stage, StageKind, StageName};

/// The stages of an epoch of `workload` split at `split`. Reading a raw file (`read_file`) is
/// `io`; the consumer's wait comes last.
pub fn stages(times: &StageTimes, workload: &Workload, split: usize) -> Vec<Stage> {
    let mut out = Vec::new();
    if split > 0 {
        out.push(Stage {
            name: StageName::Read,
            kind: StageKind::Io,
            seconds: times.read,
        });
        out.push(Stage {
            name: StageName::Decompress,
            kind: StageKind::Cpu,
            seconds: times.decompress,
        });
        out.push(Stage {
            name: StageName::Deserialize,
            kind: StageKind::Cpu,
            seconds: times.deserialize,
        });
    }
    for (i, def) in workload.steps.iter().enumerate().skip(split) {
        let seconds = times.steps.get(i).copied().unwrap_or(0.0);
        let transfer = times.transfer.get(i).copied().unwrap_or(0.0);
        out.push(Stage {
            name: StageName::Step(def.name.clone()),
            kind: if def.spec.facts.reads_files {
                StageKind::Io
            } else {
                StageKind::Cpu
            },
            seconds: seconds - transfer,
        });
        // A Python step's own row is the time inside its callable; this one the rest.
        if def.step.python_link().is_some() {
            out.push(Stage {
                name: StageName::Transfer(def.name.clone()),
                kind: StageKind::Cpu,
                seconds: transfer,
            });
        }
    }
    out.push(Stage {
        name: StageName::WorkersBlocked,
        kind: StageKind::Wait,
        seconds: times.send_wait,
    });
    out.push(Stage {
        name: StageName::ConsumerStarved,
        kind: StageKind::Consumer,
        seconds: times.recv_wait,
    });
    out
}
