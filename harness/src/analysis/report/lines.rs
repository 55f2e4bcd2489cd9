//! The report's sentences about the folder as a whole and about a view: the machine, the
//! storage profiles, and what a view's runs were measured under.

use crate::analysis::cells::Results;
use crate::analysis::recorded::recorded_workload;
use crate::analysis::view::WorkloadView;

/// What a view's runs were measured under, in words: the storage profile's figures and the
/// consumer; `None` for plain runs.
pub fn condition_line(results: &Results, view: &WorkloadView) -> Option<String> {
    let row = view
        .cells
        .first()
        .and_then(|c| results.cell_rows(c).next())?;
    let mut parts = Vec::new();
    if let Some(storage) = row.emulated_storage() {
        let profile = recorded_workload(results, &view.name)
            .and_then(|w| w.storage_profile(storage).ok())
            .or_else(|| workloads::storage::find_profile(storage, &Default::default()).ok());
        parts.push(match profile {
            Some(p) => format!(
                "Measured under the emulated storage profile `{}`{}: {}. Online reads were delayed to it (docs/measurement.md)",
                p.name,
                if p.description.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", p.description)
                },
                profile_figures(&p)
            ),
            None => format!("Measured under the emulated storage profile `{storage}`"),
        });
    }
    if let Some(consumer) = row.consumer {
        parts.push(format!(
            "With the simulated training consumer `{consumer}` (batch x compute time - sleep or spin - prefetch depth in batches)"
        ));
    }
    (!parts.is_empty()).then(|| parts.join(". ") + ".")
}

/// A storage profile's figures in words.
fn profile_figures(p: &workloads::StorageProfile) -> String {
    let limit = |v: Option<f64>, unit: &str| {
        v.map_or_else(|| "unlimited".to_string(), |v| format!("{v} {unit}"))
    };
    let client = if p.cpu_ms_per_mb > 0.0 {
        format!(
            "; its client spends {} ms of CPU per MB read",
            p.cpu_ms_per_mb
        )
    } else {
        String::new()
    };
    format!(
        "files of {} KiB and more stream at {} per reader and {} in all after {:.3} ms; smaller files take {:.3} ms per {} KiB request, {}{client}",
        p.small_file_kb,
        limit(p.stream_mb_s, "MB/s"),
        limit(p.aggregate_mb_s, "MB/s"),
        p.latency_ms,
        p.latency_ms,
        p.request_kb,
        limit(p.iops, "requests/s in all")
    )
}

/// The storage profiles the runs were measured under, with their run counts.
pub fn storage_line(results: &Results) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for row in &results.rows {
        if !seen.insert(&row.run_id) {
            continue;
        }
        match counts.iter_mut().find(|(n, _)| *n == row.storage) {
            Some((_, c)) => *c += 1,
            None => counts.push((row.storage.clone(), 1)),
        }
    }
    let list: Vec<String> = counts
        .iter()
        .map(|(name, n)| {
            let what = if name == workloads::storage::LOCAL {
                "the disk as it is".to_string()
            } else {
                "emulated".to_string()
            };
            format!("`{name}` ({what}, {n} runs)")
        })
        .collect();
    let mut line = format!("Storage profiles: {}.", list.join(", "));
    // Runs whose input came from object storage (raw files or shards): no page cache of ours.
    let mut remote: Vec<(String, String)> = results
        .rows
        .iter()
        .filter(|r| r.read_remote())
        .map(|r| (r.workload.clone(), r.strategy.clone()))
        .collect();
    remote.sort();
    remote.dedup();
    if !remote.is_empty() {
        let names: Vec<String> = remote.iter().map(|(w, s)| format!("{w}/{s}")).collect();
        line.push_str(&format!(
            " Read from object storage (the `local` profile there means not emulated): {}; \
             nothing of it is cached on this machine, so every epoch of theirs is cold, \
             whatever the service caches (docs/cluster.md).",
            names.join(", ")
        ));
    }
    line
}

/// The machine and the build that measured the folder, and what each loader in Python ran on.
pub fn machine_line(results: &Results) -> String {
    let (m, b) = (&results.manifest.machine, &results.manifest.build);
    let build = |f: fn(&crate::results::system::Build) -> &str| b.as_ref().map_or("?", f);
    let mut line = format!(
        "Machine: {} ({} cores, {:.1} GB memory, {}); prepbench {} ({}), {}.",
        m.as_ref().map_or("unknown CPU", |m| &m.cpu_model),
        m.as_ref().map_or(0, |m| m.logical_cores),
        m.as_ref().map_or(0.0, |m| m.memory_bytes as f64) / 1e9,
        m.as_ref().map_or("unknown kernel", |m| &m.kernel),
        build(|b| &b.prepbench_version),
        build(|b| &b.git_commit),
        build(|b| &b.rustc),
    );
    if let Some(stacks) = loader_stacks(results) {
        line.push_str(&format!(" Loaders: {stacks}."));
    }
    line
}

/// "tf-data on python 3.11.7, tensorflow 2.16.2, ...": each loader in Python with every stack
/// its invocations recorded (two where a folder was resumed under another); a stack whose
/// packages another of the same loader holds at the same versions (a process that had no
/// audio to decode imported no tensorflow-io) is named within it; `None` where none ran.
pub fn loader_stacks(results: &Results) -> Option<String> {
    let all: Vec<_> = (results.manifest.invocations.iter())
        .flat_map(|i| &i.loaders)
        .collect();
    let mut stacks: Vec<String> = Vec::new();
    for &(loader, stack) in &all {
        // Named by a wider stack of the same loader that holds it at the same versions.
        let held = |(other, wider): &(&String, &std::collections::BTreeMap<String, String>)| {
            *other == loader
                && wider.len() > stack.len()
                && stack.iter().all(|(p, v)| wider.get(p) == Some(v))
        };
        if all.iter().any(held) {
            continue;
        }
        let text = (stack.iter())
            .map(|(package, version)| format!("{package} {version}"))
            .collect::<Vec<_>>()
            .join(", ");
        let named = format!("{loader} on {text}");
        if !stacks.contains(&named) {
            stacks.push(named);
        }
    }
    stacks.sort();
    (!stacks.is_empty()).then(|| stacks.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{InvocationEntry, Recorded};

    #[test]
    fn the_machine_line_names_each_loaders_stack_once_and_each_of_two() {
        let stack = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        let tf = stack(&[("python", "3.11.7"), ("tensorflow", "2.16.2")]);
        let invoked =
            |loaders: &[(&str, &std::collections::BTreeMap<String, String>)]| InvocationEntry {
                loaders: loaders
                    .iter()
                    .map(|(l, s)| (l.to_string(), (*s).clone()))
                    .collect(),
                ..Default::default()
            };
        let mut results = Results::of(Recorded::default());
        // Native runs only: no loader named.
        results.manifest.invocations = vec![invoked(&[])];
        assert!(!machine_line(&results).contains("Loaders"));
        // The same stack in two invocations, named once.
        results.manifest.invocations =
            vec![invoked(&[("tf-data", &tf)]), invoked(&[("tf-data", &tf)])];
        let line = machine_line(&results);
        assert!(
            line.ends_with(" Loaders: tf-data on python 3.11.7, tensorflow 2.16.2."),
            "{line}"
        );
        // A process that imported tensorflow-io beside one that did not: named as the wider.
        let io = stack(&[
            ("python", "3.11.7"),
            ("tensorflow", "2.16.2"),
            ("tensorflow_io", "0.37.1"),
        ]);
        results
            .manifest
            .invocations
            .push(invoked(&[("tf-data", &io)]));
        let line = machine_line(&results);
        assert!(
            line.ends_with(
                " Loaders: tf-data on python 3.11.7, tensorflow 2.16.2, tensorflow_io 0.37.1."
            ),
            "{line}"
        );
        results.manifest.invocations.pop();
        // A folder resumed under another TensorFlow, and torch beside it: each named.
        let newer = stack(&[("python", "3.11.7"), ("tensorflow", "2.17.0")]);
        let torch = stack(&[("python", "3.11.7"), ("torch", "2.15.0")]);
        results
            .manifest
            .invocations
            .push(invoked(&[("tf-data", &newer), ("torch", &torch)]));
        let line = machine_line(&results);
        assert!(
            line.contains(
                "Loaders: tf-data on python 3.11.7, tensorflow 2.16.2; tf-data on python 3.11.7, \
                 tensorflow 2.17.0; torch on python 3.11.7, torch 2.15.0."
            ),
            "{line}"
        );
    }
}
