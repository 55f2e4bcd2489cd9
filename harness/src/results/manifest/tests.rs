use super::*;

/// A sweep of one strategy under a memory limit, after the tf-data sweep timed its parts,
/// keeps every part and the stores it does not size; a part holds where the store it was
/// timed on has the size this entry gives it (raw parts: the dataset), and is timed again
/// where not.
#[test]
fn a_sweep_of_some_strategies_keeps_the_loader_parts_of_the_others() {
    let before = entry(
        &[("resized/none", 6160), ("pixel-centered/none", 2815)],
        300,
        &[
            ("tf-data:resized/none", 10),
            ("tf-data:pixel-centered/none", 16),
            ("tf-data:unprocessed/none", 120),
        ],
    );
    let mut limited = entry(&[("pixel-centered/none", 2815)], 300, &[]);
    limited.keep_from(&before);
    assert_eq!(limited.loader_parts, before.loader_parts);
    assert_eq!(limited.parts_that_hold(), before.loader_parts);
    assert_eq!(limited.stores, before.stores);
    // A store sized otherwise, and a larger dataset: their parts are timed again.
    let mut other = entry(&[("pixel-centered/none", 1000)], 600, &[]);
    other.keep_from(&before);
    assert_eq!(other.stores["pixel-centered/none"], 1000);
    assert_eq!(
        other.parts_that_hold().keys().collect::<Vec<_>>(),
        ["tf-data:resized/none"]
    );
    // Another floor: nothing carries over.
    let mut slower = entry(&[], 300, &[]);
    slower.min_epoch_s = 2.0;
    slower.keep_from(&before);
    assert!(slower.loader_parts.is_empty() && slower.stores.is_empty());
}

/// The local tf-data sweep times its part of a store; the emulated sweep's settling trials
/// size the same strategy's store for the emulated storage (smaller); the tf-data sweep's
/// own settling trials, sized as it was, read the part it timed, not a part timed again
/// (which made a new cell of one trial in `quick-bh`). A store that did change size is
/// timed again, and its part then holds for the new size.
#[test]
fn a_part_holds_across_a_sweep_that_sized_its_store_for_another_storage() {
    let mut local = entry(&[("pixel-centered/none", 4059)], 1435, &[]);
    local.record_part("tf-data:pixel-centered/none", 13.into());
    local.record_part("tf-data:unprocessed/none", 1372.into());
    assert_eq!(
        local.parts_timed_on.values().collect::<Vec<_>>(),
        [&4059, &1435]
    );
    let mut emulated = entry(&[("pixel-centered/none", 1000)], 1000, &[]);
    emulated.keep_from(&local);
    assert!(emulated.parts_that_hold().is_empty(), "{emulated:?}");
    let mut settling = entry(&[("pixel-centered/none", 4059)], 1435, &[]);
    settling.keep_from(&emulated);
    assert_eq!(settling.parts_that_hold(), local.loader_parts);
    // Written and read back, the sizes the parts were timed on go with them.
    let text = serde_json::to_string(&settling).unwrap();
    let read: SizingEntry = serde_json::from_str(&text).unwrap();
    assert_eq!(read.parts_that_hold(), local.loader_parts);
    // A store that grew is timed again; the emulated entry's parts, timed on a store of
    // another size, do not hold there either.
    let mut grown = entry(&[("pixel-centered/none", 4100)], 1435, &[]);
    grown.keep_from(&settling);
    assert_eq!(
        grown.parts_that_hold().keys().collect::<Vec<_>>(),
        ["tf-data:unprocessed/none"]
    );
}

/// A store whose cold epoch was timed and grown keeps what it grew to in a later sweep of the
/// same condition, whose model sizes it as before (smaller), and is not timed again; where the
/// model now asks for more, the model's size wins and is timed again.
#[test]
fn a_store_timed_and_grown_keeps_its_size_until_the_model_asks_for_more() {
    let mut first = entry(&[("aggregated/none", 286_560)], 2160, &[]);
    first.stores.insert("aggregated/none".into(), 632_118);
    first.checked.insert("aggregated/none".into(), 632_118);
    let mut resumed = entry(&[("aggregated/none", 286_560)], 2160, &[]);
    resumed.keep_from(&first);
    assert_eq!(resumed.stores["aggregated/none"], 632_118);
    assert_eq!(resumed.checked["aggregated/none"], 632_118);
    let text = serde_json::to_string(&resumed).unwrap();
    let read: SizingEntry = serde_json::from_str(&text).unwrap();
    assert_eq!(read, resumed);
    let mut larger = entry(&[("aggregated/none", 700_000)], 2160, &[]);
    larger.keep_from(&first);
    assert_eq!(larger.stores["aggregated/none"], 700_000);
    assert!(larger.checked.is_empty(), "{larger:?}");
}

fn entry(stores: &[(&str, usize)], items: usize, parts: &[(&str, usize)]) -> SizingEntry {
    SizingEntry {
        min_epoch_s: 1.0,
        source_items: items,
        source_samples: None,
        stores: stores.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        capped: Vec::new(),
        loader_parts: parts
            .iter()
            .map(|(k, v)| (k.to_string(), (*v).into()))
            .collect(),
        parts_timed_on: BTreeMap::new(),
        checked: BTreeMap::new(),
    }
}

fn invocation(dir: &Path, id: &str) -> InvocationEntry {
    InvocationEntry {
        started_utc: utc_now(),
        command_line: vec!["prepbench".into(), "run".into()],
        build: system::build(),
        data_dir: Place::of(dir),
        dataset: Some(Place::of(Path::new("s3://bucket/imagenet"))),
        store_dir: Place::of(dir),
        evict_policy: "auto".into(),
        run_ids: vec![id.into()],
        ..InvocationEntry::default()
    }
}

#[test]
fn manifest_accumulates_invocations_and_refuses_other_machines() {
    let dir = tempfile::tempdir().unwrap();
    let w = WorkloadEntry {
        identity: "abc".into(),
        ..WorkloadEntry::of(&workloads::load_spec("cv").unwrap())
    };
    for id in ["r1", "r2"] {
        Manifest::update(dir.path(), |m| {
            m.record_invocation(w.clone(), invocation(dir.path(), id))
        })
        .unwrap();
    }
    let m = Manifest::read(dir.path()).unwrap().unwrap();
    assert_eq!(m.invocations.len(), 2);
    assert_eq!(m.invocations[1].workload, "cv@abc");
    let recorded = m.workloads["cv@abc"].spec().unwrap();
    assert_eq!(recorded, workloads::load_spec("cv").unwrap());
    assert_eq!(m.workload_specs("cv").count(), 1);
    assert!(!m.machine.as_ref().unwrap().cpu_model.is_empty());
    let dataset = m.invocations[0].dataset.as_ref().unwrap();
    assert_eq!(dataset.path, "s3://bucket/imagenet");
    assert!(dataset.object_storage.is_some());
    assert!(m.invocations[0].data_dir.filesystem.is_some());
    let mut other = m.clone();
    other.machine.as_mut().unwrap().hostname = "elsewhere".into();
    other.write(dir.path()).unwrap();
    let err = Manifest::update(dir.path(), |_| {}).unwrap_err();
    assert!(err.to_string().contains("another machine"), "{err}");
}

#[test]
fn committed_reference_manifests_load() {
    for dir in crate::results::folder::reference_folders() {
        let m = Manifest::read(&dir).unwrap().unwrap();
        assert!(!m.invocations.is_empty(), "{}", dir.display());
        assert!(m.complete_calibration().is_some());
    }
}

#[test]
fn utc_timestamps_are_well_formed() {
    let t = utc_now();
    assert_eq!(t.len(), 20);
    assert!(t.starts_with("20") && t.ends_with('Z'), "{t}");
}
