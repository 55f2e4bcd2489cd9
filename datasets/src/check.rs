//! What `validate` checks of a workload against its dataset kind: a known kind, options it has,
//! and that every step reads a field the dataset or an earlier step makes.

use crate::error::DatasetError;
use crate::kind::DatasetKind;
use crate::registry::find_kind;

/// Checks what a workload asks of its dataset: a known kind, and generator options (its own
/// and those its sweep varies) that the kind has. `validate` reports these with the line, where
/// `run` would only fail when it came to generate the data.
pub fn check_workload(workload: &workloads::WorkloadSpec) -> Result<(), workloads::WorkloadError> {
    let spec = &workload.dataset;
    let kind = find_kind(&spec.kind)
        .map_err(|e| workload.error_at(&format!("kind: {}", spec.kind), e.to_string()))?;
    if kind.generate_one.is_none() && spec.path.is_none() {
        return Err(workload.error_at(&format!("kind: {}", kind.name), kind.no_generator()));
    }
    if let (Some(key), None) = (kind.reader_option(&spec.options), &spec.path) {
        return Err(workload.error_at(key, kind.reader_option_message(key)));
    }
    let mut options = spec.options.clone();
    for (key, values) in &workload.sweep.dataset_options {
        options.insert(key.clone(), values.first().cloned().unwrap_or_default());
    }
    check_fields(workload, kind)?;
    kind.check_options(&options).map_err(|e| {
        let message = match e {
            DatasetError::Generate(m) => m,
            other => other.to_string(),
        };
        let key = options
            .keys()
            .find(|k| !kind.accepts(k))
            .cloned()
            .unwrap_or_else(|| "options".into());
        workload.error_at(&key, message)
    })
}

/// Checks that every step reads a field the dataset or an earlier step makes, as the steps'
/// parameters name the fields they read and write.
fn check_fields(
    spec: &workloads::WorkloadSpec,
    kind: &DatasetKind,
) -> Result<(), workloads::WorkloadError> {
    let mut available: Vec<&str> = std::iter::once("path")
        .chain((kind.fields)(&spec.dataset.options).iter().copied())
        .collect();
    for step in &spec.steps {
        if let Some(input) = step.reads().into_iter().find(|f| !available.contains(f)) {
            return Err(spec.error_at(
                &format!("name: {}", step.name),
                format!(
                    "step `{}` (op {}) reads field `{input}`, which neither the dataset (`{}`) \
                     nor an earlier step makes; fields by then: {}",
                    step.name,
                    step.op,
                    kind.name,
                    available.join(", ")
                ),
            ));
        }
        // A Python step's outputs, and the members a WebDataset sample holds, are known only
        // when it runs: the fields after it are not checked.
        if step.facts().fields_at_run_time {
            return Ok(());
        }
        available.extend(step.writes());
    }
    Ok(())
}

#[cfg(test)]
mod workload_checks {
    #[test]
    fn every_reference_workload_reads_only_fields_it_has() {
        for (name, _) in workloads::BUILTIN {
            let w = workloads::load_spec(name).unwrap();
            super::check_workload(&w).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn a_field_no_step_makes_is_named_with_its_step_and_line() {
        let yaml = "name: w\ndataset: {kind: imagenet}\nsteps:\n  - name: concatenated\n    \
                    op: read_file\n  - name: decoded\n    op: decode_jpeg\n    \
                    params: {from: nothing_here}\n";
        let w = workloads::WorkloadSpec::from_yaml(yaml, workloads::Origin::file("w.yaml", None))
            .unwrap();
        let e = super::check_workload(&w).unwrap_err().to_string();
        assert!(e.starts_with("w.yaml:6: step `decoded`"), "{e}");
        assert!(
            e.contains("reads field `nothing_here`") && e.contains("path, label, data"),
            "{e}"
        );
    }

    #[test]
    fn the_fields_declared_for_each_kind_are_the_fields_its_reader_gives() {
        let dir = tempfile::tempdir().unwrap();
        for kind in [
            "imagenet",
            "coco",
            "openwebtext",
            "librispeech",
            "commonvoice",
        ] {
            let root = dir.path().join(kind);
            let request = crate::kind::GenerateRequest {
                root: root.clone(),
                samples: 1,
                seed: 0,
                threads: 1,
                options: Default::default(),
            };
            let source = crate::prepare::prepare(kind, &request, &|_| {}).unwrap();
            let mut names: Vec<String> = source
                .sample(0)
                .fields()
                .iter()
                .map(|(n, _)| n.clone())
                .filter(|n| n != "path")
                .collect();
            names.sort();
            let fields = crate::registry::find_kind(kind).unwrap().fields;
            let mut declared: Vec<&str> = fields(&request.options).to_vec();
            declared.sort();
            assert_eq!(names, declared, "{kind}");
        }
    }
}
