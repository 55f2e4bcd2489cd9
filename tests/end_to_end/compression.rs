//! Generated data compresses as the paper's real datasets do: every row of its compression
//! table (`results/paper/compression.csv`, GZIP's space saving per strategy) is either reached
//! by the generators within [`POINTS`] percentage points, measured here through the stores
//! `prepbench run` writes, or listed in [`NOT_REACHED`] with the reason (docs/decisions.md,
//! "Datasets").

use super::*;

/// How far (percentage points) a generated strategy's GZIP saving may lie from the paper's.
const POINTS: f64 = 5.0;

/// The generators' calibrated rows: workload, its strategies in the table, samples measured.
const CALIBRATED: &[(&str, &[&str], usize)] = &[
    (
        "cv",
        &["concatenated", "decoded", "resized", "pixel-centered"],
        150,
    ),
    (
        "nlp",
        &["concatenated", "decoded", "bpe-encoded", "embedded"],
        100,
    ),
    ("cv2-jpg", &["resized", "pixel-centered"], 6),
    ("cv2-png", &["concatenated", "decoded", "pixel-centered"], 6),
    ("flac", &["decoded", "spectrogram-encoded"], 40),
    ("mp3", &["spectrogram-encoded"], 80),
    ("nilm", &["aggregated"], 360),
];

/// Rows of the table the generators do not reach, each with why.
const NOT_REACHED: &[(&str, &str, &str)] = &[
    (
        "mp3",
        "decoded",
        "the paper's 4.2 % is its MP3 decode's bug (scaled by 2^31 before the int16 cast, \
         wrapping into noise); correct int16 PCM saves about 32 %",
    ),
    (
        "nilm",
        "decoded",
        "float64 windows save 23 % against 16 %: the calibrated values' top bytes repeat \
         whatever the ADC noise (tried 16 to 48 counts)",
    ),
    (
        "cv2-jpg",
        "decoded",
        "Cube++ frames save 60 % against 41 %; grain that brings it down takes resized below \
         the paper's 24 %",
    ),
    (
        "cv2-png",
        "resized",
        "73 % against 80.6 %, with Cube++'s PNG size calibrated by its sensor noise",
    ),
];

/// GZIP's space saving (percent) per strategy of `workload` on `samples` generated samples.
fn savings(work: &Path, workload: &str, strategies: &[&str], samples: usize) -> Vec<f64> {
    let bytes = |codec: &str| -> Vec<f64> {
        let out = work.join(format!("{workload}-{codec}"));
        prepbench_ok(&argv![
            "--quiet run",
            workload,
            "--strategy",
            strategies.join(","),
            "--codec",
            codec,
            "--samples",
            samples.to_string(),
            "--epochs 1 --threads 2 --data-dir",
            work.join("data").to_str().unwrap(),
            "--store-dir",
            work.join("stores").to_str().unwrap(),
            "--out",
            out.to_str().unwrap()
        ]);
        let runs = Csv::read(&out.join("runs.csv"));
        strategies
            .iter()
            .map(|s| {
                let row = runs
                    .rows
                    .iter()
                    .find(|r| runs.col(r, "strategy") == *s)
                    .unwrap_or_else(|| panic!("no {workload} {s} row"));
                runs.num(row, "storage_bytes")
            })
            .collect()
    };
    let (none, gzip) = (bytes("none"), bytes("gzip"));
    none.iter()
        .zip(&gzip)
        .map(|(n, g)| 100.0 * (1.0 - g / n))
        .collect()
}

#[test]
fn generated_data_saves_under_gzip_what_the_papers_data_does() {
    let work = tempfile::tempdir().unwrap();
    let mut far = Vec::new();
    let mut measured = Vec::new();
    for &(workload, strategies, samples) in CALIBRATED {
        let paper = harness::analysis::paper::pipeline(workload).expect("a paper pipeline");
        for (strategy, ours) in
            strategies
                .iter()
                .zip(savings(work.path(), workload, strategies, samples))
        {
            let row = paper
                .compression
                .iter()
                .find(|c| c.strategy == *strategy)
                .unwrap_or_else(|| panic!("{workload} {strategy} is not in the paper's table"));
            let line = format!(
                "{workload} {strategy}: {ours:.1} % (paper {} %)",
                row.space_saving_pct
            );
            if (ours - row.space_saving_pct).abs() > POINTS {
                far.push(line.clone());
            }
            measured.push(line);
        }
    }
    eprintln!("{}", measured.join("\n"));
    assert!(
        far.is_empty(),
        "more than {POINTS} points from the paper: {far:?}"
    );
    // Every row of the table is either calibrated or listed as not reached, never both.
    for pipeline in harness::analysis::paper::pipelines() {
        for row in harness::analysis::paper::pipeline(&pipeline)
            .unwrap()
            .compression
        {
            let calibrated = CALIBRATED
                .iter()
                .any(|(w, s, _)| *w == row.pipeline && s.contains(&row.strategy.as_str()));
            let listed = NOT_REACHED
                .iter()
                .any(|(w, s, _)| *w == row.pipeline && *s == row.strategy);
            assert!(
                calibrated != listed,
                "{} {}: calibrated {calibrated}, listed as not reached {listed}",
                row.pipeline,
                row.strategy
            );
        }
    }
    // The dataset's marker records what GZIP saves on its decoded pixels.
    let marker = std::fs::read_to_string(
        work.path()
            .join("data/imagenet-seed0/.prepbench-dataset.json"),
    )
    .unwrap();
    let marker: serde_json::Value = serde_json::from_str(&marker).unwrap();
    let recorded = marker["decode"]["decoded_gzip_saving_pct"]
        .as_f64()
        .expect("the marker records the decoded pixels' GZIP saving");
    assert!((recorded - 29.0).abs() <= POINTS, "{recorded}");
}
