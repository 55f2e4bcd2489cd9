//! Common Voice's layout: `clips/<id>.mp3` (48 kHz mono MP3) and `train.tsv` (client_id, path,
//! sentence, up_votes, down_votes, age, gender, accent). The single-word segment the paper used
//! has one spoken word per clip, with silence around it. Samples carry the `sentence` as text.

use std::path::Path;
use std::sync::Arc;

use workloads::rng::SeededRng;
use workloads::Field;

use crate::audio::encode_mp3;
use crate::files::Files;
use crate::prose::word;
use crate::source::{files_by_name, indexed_item, Source};
use crate::speech::{to_i16, utterance, Voice};
use crate::{Calibration, DatasetError, DatasetKind, GenerateRequest};

pub const SAMPLE_RATE: u32 = 48_000;
const COLUMNS: [&str; 8] = [
    "client_id",
    "path",
    "sentence",
    "up_votes",
    "down_votes",
    "age",
    "gender",
    "accent",
];

pub const KIND: DatasetKind = DatasetKind {
    name: "commonvoice",
    family: "commonvoice",
    real: "Common Voice 5.1 single-word en",
    layout: "clips/<id>.mp3 (48 kHz mono MP3) + train.tsv",
    samples_per_file: 1,
    calibration: Calibration::of(0.0197, 0.20),
    options: &[],
    reader_options: &[],
    open,
    generate_one: Some(generate_one),
    finish: Some(write_tsv),
    expected_mb: None,
    fields: |_| &["sentence"],
    cheap_to_generate: false,
};

fn clip_name(n: usize) -> String {
    format!("common_voice_en_{}.mp3", 20_000_000 + n)
}

/// The word clip n says and its speaker, drawn before any audio.
fn plan(seed: u64, n: usize) -> (String, u64, SeededRng) {
    let mut rng = SeededRng::from_parts(&[seed, n as u64, 0xc0ce]);
    let sentence = word(&mut rng).to_string();
    let client = rng.below(400);
    (sentence, client, rng)
}

pub fn generate_one(request: &GenerateRequest, n: usize) -> Result<(), DatasetError> {
    let (_, client, mut rng) = plan(request.seed, n);
    let voice = Voice::random(&mut SeededRng::from_parts(&[request.seed, client, 0x7015]));
    let (lead, tail) = (
        rng.range_f64(0.5, 1.6) as f32,
        rng.range_f64(0.5, 1.6) as f32,
    );
    let pcm = to_i16(&utterance(&mut rng, SAMPLE_RATE, voice, 1, lead, tail));
    let mp3 = encode_mp3(&pcm, SAMPLE_RATE, mp3lame_encoder::Bitrate::Kbps64)?;
    crate::write_atomically(&request.root.join("clips").join(clip_name(n)), &mp3)
}

/// Writes `train.tsv` for clips 0..samples.
pub fn write_tsv(request: &GenerateRequest) -> Result<(), DatasetError> {
    let mut tsv = COLUMNS.join("\t") + "\n";
    for n in 0..request.samples {
        let (sentence, client, _) = plan(request.seed, n);
        let client_id = format!(
            "{:016x}{:016x}",
            workloads::rng::SeededRng::from_parts(&[request.seed, client]).next_u64(),
            client
        );
        tsv.push_str(&format!(
            "{client_id}\t{}\t{sentence}\t2\t0\t\t\t\n",
            clip_name(n)
        ));
    }
    crate::write_atomically(&request.root.join("train.tsv"), tsv.as_bytes())
}

/// Lists the clips of `train.tsv` in its order, each with its sentence.
pub fn open(
    files: &Arc<dyn Files>,
    root: &Path,
    _options: &crate::Options,
) -> Result<Source, DatasetError> {
    let tsv = root.join("train.tsv");
    let layout = |message: String| DatasetError::Layout {
        path: tsv.display().to_string(),
        message,
    };
    let bytes = files.read_file(&tsv).map_err(|e| {
        layout(format!(
            "{e}: expected train.tsv and clips/<id>.mp3 (the Common Voice layout)"
        ))
    })?;
    let text = String::from_utf8(bytes).map_err(|_| layout("not UTF-8 text".into()))?;
    let clips = root.join("clips");
    let listing = files_by_name(&**files, &clips).map_err(|e| DatasetError::Layout {
        path: clips.display().to_string(),
        message: format!("{e}: expected clips/<id>.mp3 (the Common Voice layout)"),
    })?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split('\t').collect();
    let column = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .ok_or_else(|| layout(format!("no `{name}` column in the header")))
    };
    let (path_col, sentence_col) = (column("path")?, column("sentence")?);
    let mut items = Vec::new();
    for (i, line) in lines.enumerate().filter(|(_, l)| !l.is_empty()) {
        let fields: Vec<&str> = line.split('\t').collect();
        let (Some(name), Some(sentence)) = (fields.get(path_col), fields.get(sentence_col)) else {
            return Err(layout(format!(
                "line {}: {} fields, fewer than the header's {}",
                i + 2,
                fields.len(),
                header.len()
            )));
        };
        items.push(indexed_item(
            &listing,
            &clips,
            name,
            &tsv,
            vec![("sentence".into(), Field::Text(sentence.to_string()))],
        )?);
    }
    Ok(Source::new("commonvoice", files, root, items))
}
