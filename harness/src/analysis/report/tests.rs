//! Reports of the committed references, and reports written elsewhere.

use super::*;
use crate::results::folder::copy_tree;

/// `prepbench report` of a committed reference writes its committed report again, byte for
/// byte (the peer measurements it keeps included): a reference that no longer matches what
/// the code makes of its runs is stale, or the code changed its results.
#[test]
fn committed_references_report_as_committed() {
    for dir in crate::results::folder::reference_folders() {
        let copy = tempfile::tempdir().unwrap();
        copy_tree(&dir, copy.path());
        write_report(copy.path()).unwrap();
        let tables = std::fs::read_dir(dir.join("tables"))
            .map(|d| {
                d.flatten()
                    .map(|e| format!("tables/{}", e.file_name().to_string_lossy()))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        let files = ["report.md", "summary.csv", "report.json"]
            .map(String::from)
            .into_iter()
            .chain(tables);
        for file in files {
            let committed = std::fs::read(dir.join(&file)).unwrap();
            let written = std::fs::read(copy.path().join(&file)).unwrap();
            assert!(
                committed == written,
                "{}: {file} differs from what `prepbench report` writes",
                dir.display()
            );
        }
    }
}

/// `report --out` writes the same files elsewhere, leaves the results folder as it was, and
/// refuses a folder holding a file a report would overwrite but did not write.
#[test]
fn a_report_written_elsewhere_overwrites_nothing_of_the_users() {
    let dir = crate::results::folder::reference_folders().remove(0);
    let copy = tempfile::tempdir().unwrap();
    copy_tree(&dir, copy.path());
    let before = std::fs::read(copy.path().join("report.md")).unwrap();
    let out = copy.path().join("elsewhere");
    let plan = crate::analysis::recommend::DEFAULT_PLAN;
    write_report_with(copy.path(), &out, None, &plan).unwrap();
    assert_eq!(std::fs::read(out.join("report.md")).unwrap(), before);
    assert!(out.join("plots").is_dir() && out.join("summary.csv").is_file());
    // Again into the same folder: it is a report's, so it is written over.
    write_report_with(copy.path(), &out, None, &plan).unwrap();
    let mine = copy.path().join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(mine.join("report.md"), "my notes").unwrap();
    let Err(err) = write_report_with(copy.path(), &mine, None, &plan) else {
        panic!("a folder holding the user's report.md was written into");
    };
    assert!(err.to_string().contains("refusing to overwrite"), "{err}");
    assert_eq!(
        std::fs::read_to_string(mine.join("report.md")).unwrap(),
        "my notes"
    );
}

/// Every table is written once as data and appears in every format: in report.md under its
/// caption, in report.json with its rows, and as `tables/<section>-<id>.csv`.
#[test]
fn every_table_is_in_markdown_json_and_csv() {
    let dir = crate::results::folder::reference_folders().remove(0);
    let copy = tempfile::tempdir().unwrap();
    copy_tree(&dir, copy.path());
    write_report(copy.path()).unwrap();
    let md = std::fs::read_to_string(copy.path().join("report.md")).unwrap();
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(copy.path().join("report.json")).unwrap()).unwrap();
    let tables = json["tables"].as_array().unwrap();
    assert!(tables.len() >= 5, "{} tables", tables.len());
    for t in tables {
        let caption = t["caption"].as_str().unwrap();
        assert!(md.contains(caption), "report.md lacks {caption}");
        let header = format!(
            "| {} |",
            t["columns"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap())
                .collect::<Vec<_>>()
                .join(" | ")
        );
        assert!(md.contains(&header), "report.md lacks {header}");
        let file = format!(
            "{}-{}.csv",
            crate::analysis::view::file_stem_of(t["section"].as_str().unwrap()),
            t["id"].as_str().unwrap()
        );
        let csv = std::fs::read_to_string(copy.path().join("tables").join(&file)).unwrap();
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        let rows: Vec<Vec<String>> = reader
            .records()
            .map(|r| r.unwrap().iter().map(String::from).collect())
            .collect();
        let json_rows: Vec<Vec<String>> = serde_json::from_value(t["rows"].clone()).unwrap();
        assert_eq!(rows, json_rows, "{file}");
    }
}
