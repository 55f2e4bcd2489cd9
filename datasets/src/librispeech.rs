//! LibriSpeech's layout: `<speaker>/<chapter>/<speaker>-<chapter>-<nnnn>.flac` (16 kHz mono
//! FLAC) with `<speaker>-<chapter>.trans.txt` beside them (`<utterance-id> TRANSCRIPT`).
//! Samples carry the `transcript` as text.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use workloads::rng::SeededRng;
use workloads::Field;

use crate::audio::encode_flac;
use crate::files::natural_key;
use crate::files::{folders, Entry, Files};
use crate::prose::word;
use crate::source::{Source, SourceItem};
use crate::speech::{to_i16, utterance, Voice};
use crate::{Calibration, DatasetError, DatasetKind, GenerateRequest};

pub const SAMPLE_RATE: u32 = 16_000;
/// Utterances per chapter and chapters per speaker of generated data (LibriSpeech
/// train-clean-100: about 49 and 2.3).
const PER_CHAPTER: usize = 50;
const CHAPTERS_PER_SPEAKER: usize = 2;

pub const KIND: DatasetKind = DatasetKind {
    name: "librispeech",
    family: "librispeech",
    real: "LibriSpeech train-clean-100",
    layout: "<speaker>/<chapter>/<speaker>-<chapter>-<nnnn>.flac (16 kHz mono FLAC) + <speaker>-<chapter>.trans.txt",
    samples_per_file: 1,
    calibration: Calibration::of(0.2319, 0.20),
    options: &[],
    reader_options: &[],
    open,
    generate_one: Some(generate_one),
    finish: Some(write_transcripts),
    expected_mb: None,
    fields: |_| &["transcript"],
    cheap_to_generate: false,
};

/// (speaker, chapter, index) of utterance n; ids grow with n so source order is n.
fn ids(n: usize) -> (usize, usize, usize) {
    let chapter = n / PER_CHAPTER;
    (
        100 + 7 * (chapter / CHAPTERS_PER_SPEAKER),
        1000 + 13 * chapter,
        n % PER_CHAPTER,
    )
}

fn utterance_id(n: usize) -> String {
    let (s, c, i) = ids(n);
    format!("{s}-{c}-{i:04}")
}

fn chapter_dir(root: &Path, n: usize) -> PathBuf {
    let (s, c, _) = ids(n);
    root.join(s.to_string()).join(c.to_string())
}

/// The transcript of utterance n: 4 to 38 words, about 2 to 21 seconds of speech.
fn transcript(seed: u64, n: usize) -> (String, SeededRng) {
    let mut rng = SeededRng::from_parts(&[seed, n as u64, 0x1b5]);
    let words = 4 + rng.below(35) as usize;
    let text = (0..words)
        .map(|_| word(&mut rng).to_ascii_uppercase())
        .collect::<Vec<_>>()
        .join(" ");
    (text, rng)
}

pub fn generate_one(request: &GenerateRequest, n: usize) -> Result<(), DatasetError> {
    let (text, mut rng) = transcript(request.seed, n);
    let (speaker, _, _) = ids(n);
    let voice = Voice::random(&mut SeededRng::from_parts(&[
        request.seed,
        speaker as u64,
        0x7015,
    ]));
    let words = text.split(' ').count();
    let (lead, tail) = (
        rng.range_f64(0.1, 0.5) as f32,
        rng.range_f64(0.1, 0.5) as f32,
    );
    let pcm = to_i16(&utterance(&mut rng, SAMPLE_RATE, voice, words, lead, tail));
    let flac = encode_flac(&pcm, SAMPLE_RATE)?;
    crate::write_atomically(
        &chapter_dir(&request.root, n).join(format!("{}.flac", utterance_id(n))),
        &flac,
    )
}

/// Writes each chapter's `<speaker>-<chapter>.trans.txt` for utterances 0..samples.
pub fn write_transcripts(request: &GenerateRequest) -> Result<(), DatasetError> {
    let mut chapters: Vec<(PathBuf, String, String)> = Vec::new();
    for n in 0..request.samples {
        let (s, c, _) = ids(n);
        let name = format!("{s}-{c}.trans.txt");
        let line = format!("{} {}\n", utterance_id(n), transcript(request.seed, n).0);
        match chapters.last_mut() {
            Some((_, last, text)) if *last == name => text.push_str(&line),
            _ => chapters.push((chapter_dir(&request.root, n), name, line)),
        }
    }
    for (dir, name, text) in chapters {
        crate::write_atomically(&dir.join(name), text.as_bytes())?;
    }
    Ok(())
}

/// Lists utterances by speaker, chapter and index, each with its transcript.
pub fn open(
    files: &Arc<dyn Files>,
    root: &Path,
    _options: &crate::Options,
) -> Result<Source, DatasetError> {
    let layout = |dir: &Path, e: std::io::Error| {
        DatasetError::Layout {
        path: dir.display().to_string(),
        message: format!("{e}: expected <speaker>/<chapter>/<speaker>-<chapter>-<nnnn>.flac (the LibriSpeech layout)"),
    }
    };
    let mut items = Vec::new();
    for speaker in folders(&**files, root).map_err(|e| layout(root, e))? {
        let speaker = speaker.path_in(root);
        for chapter in folders(&**files, &speaker).map_err(|e| layout(&speaker, e))? {
            let chapter = chapter.path_in(&speaker);
            let mut transcripts: HashMap<String, String> = HashMap::new();
            let mut flacs: Vec<Entry> = Vec::new();
            let io = |path: &Path, e: std::io::Error| DatasetError::Io {
                path: path.display().to_string(),
                source: e,
            };
            for entry in files.list(&chapter).map_err(|e| io(&chapter, e))? {
                if entry.is_dir {
                    continue;
                }
                if entry.name.ends_with(".trans.txt") {
                    let path = entry.path_in(&chapter);
                    let bytes = files.read_file(&path).map_err(|e| io(&path, e))?;
                    let text = String::from_utf8(bytes).map_err(|_| DatasetError::Layout {
                        path: path.display().to_string(),
                        message: "not UTF-8 text".into(),
                    })?;
                    for line in text.lines() {
                        if let Some((id, words)) = line.split_once(' ') {
                            transcripts.insert(id.to_string(), words.to_string());
                        }
                    }
                } else if entry.name.ends_with(".flac") {
                    flacs.push(entry);
                }
            }
            flacs.sort_by_key(|e| natural_key(&e.name));
            for entry in flacs {
                let path = entry.path_in(&chapter);
                let id = entry.name.trim_end_matches(".flac");
                let text = transcripts.remove(id).ok_or_else(|| DatasetError::Layout {
                    path: path.display().to_string(),
                    message: format!("no transcript line `{id} ...` in the chapter's .trans.txt"),
                })?;
                items.push(SourceItem::new(
                    path,
                    &entry,
                    vec![("transcript".into(), Field::Text(text))],
                ));
            }
        }
    }
    if items.is_empty() {
        return Err(DatasetError::Layout {
            path: root.display().to_string(),
            message: "no utterances: expected <speaker>/<chapter>/<speaker>-<chapter>-<nnnn>.flac"
                .into(),
        });
    }
    Ok(Source::new("librispeech", files, root, items))
}
