//! CREAM's layout: day folders of hourly HDF5 files, `<YYYY-MM-DD>/X8_<YYYY-MM-DD>T<HH>-00-00.hdf5`,
//! each with int16 datasets `voltage` and `current` sampled at 6.4 kHz (one hour: 23.04 M
//! samples per channel), a root attribute `frequency` (Hz) and per-dataset attributes
//! `calibration_factor` (volts or amperes per count) and `offset` (the ADC offset in counts).
//! The generator writes a 50 Hz grid with harmonics and a coffee machine's switching loads.
//! `--samples` counts 10-second windows: 360 per hourly file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hdf5_writer::{
    AttributeBuilder, DatasetBuilder, FilterDescription, Hdf5Builder, Hdf5Writer, WriteOptions,
    FILTER_DEFLATE, FILTER_SHUFFLE,
};
use workloads::rng::SeededRng;

use crate::files::{files_ending, folders, Files};
use crate::source::{Source, SourceItem};
use crate::{Calibration, DatasetError, DatasetKind, GenerateRequest};

pub const SAMPLE_RATE_HZ: u32 = 6_400;
pub const GRID_HZ: f64 = 50.0;
pub const SECONDS_PER_FILE: usize = 3_600;
pub const WINDOW_SECONDS: usize = 10;
pub const WINDOWS_PER_FILE: usize = SECONDS_PER_FILE / WINDOW_SECONDS;
const VOLTS_PER_COUNT: f64 = 0.0125;
const AMPS_PER_COUNT: f64 = 0.0005;
const CHUNK: u64 = 64_000;

pub const KIND: DatasetKind = DatasetKind {
    name: "cream",
    family: "cream",
    real: "CREAM X8",
    layout: "<YYYY-MM-DD>/X8_<date>T<HH>-00-00.hdf5 (HDF5: int16 voltage and current at 6.4 kHz, calibration attributes); a sample is a 10 s window, 360 per file",
    samples_per_file: WINDOWS_PER_FILE,
    calibration: Calibration::of(0.1477, 0.20),
    options: &[],
    reader_options: &[],
    open,
    generate_one: Some(generate_one),
    finish: None,
    expected_mb: None,
    fields: |_| &[],
    cheap_to_generate: false,
};

/// The date `days` after 2018-08-23 (CREAM's first day), as YYYY-MM-DD.
fn date(days: usize) -> String {
    let (mut y, mut m, mut d) = (2018, 8, 23 + days);
    loop {
        let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        let len = [
            31,
            if leap { 29 } else { 28 },
            31,
            30,
            31,
            30,
            31,
            31,
            30,
            31,
            30,
            31,
        ][m - 1];
        if d <= len {
            return format!("{y:04}-{m:02}-{d:02}");
        }
        d -= len;
        m += 1;
        if m > 12 {
            m = 1;
            y += 1;
        }
    }
}

/// The path of hourly file n under `root`.
pub fn file_path(root: &Path, n: usize) -> PathBuf {
    let day = date(n / 24);
    root.join(&day)
        .join(format!("X8_{day}T{:02}-00-00.hdf5", n % 24))
}

/// One load of the appliance: current amplitude (A), phase lag (rad), 3rd/5th harmonic shares.
struct Load {
    amps: f64,
    lag: f64,
    h3: f64,
    h5: f64,
}

const LOADS: [Load; 3] = [
    Load {
        amps: 0.08,
        lag: 0.9,
        h3: 0.3,
        h5: 0.15,
    }, // standby electronics
    Load {
        amps: 5.6,
        lag: 0.02,
        h3: 0.01,
        h5: 0.0,
    }, // water heater (resistive)
    Load {
        amps: 0.7,
        lag: 0.6,
        h3: 0.12,
        h5: 0.05,
    }, // pump motor (inductive)
];

/// Synthesizes one hour: voltage and current counts.
fn hour(seed: u64, n: usize, seconds: usize) -> (Vec<i16>, Vec<i16>) {
    let mut rng = SeededRng::from_parts(&[seed, n as u64, 0xc4ea]);
    let samples = seconds * SAMPLE_RATE_HZ as usize;
    // Switching events: the heater and pump run in bursts a few times an hour.
    let mut on = vec![vec![false; seconds]; LOADS.len()];
    on[0].iter_mut().for_each(|s| *s = true);
    for (load, schedule) in on.iter_mut().enumerate().skip(1) {
        let mut t = rng.below(600) as usize;
        while t < seconds {
            let length = if load == 1 {
                30 + rng.below(90)
            } else {
                5 + rng.below(25)
            } as usize;
            schedule[t..(t + length).min(seconds)]
                .iter_mut()
                .for_each(|s| *s = true);
            t += length + 120 + rng.below(900) as usize;
        }
    }
    let (v_offset, i_offset) = (rng.below(80) as f64 - 40.0, rng.below(40) as f64 - 20.0);
    let drift = rng.range_f64(-0.02, 0.02);
    let mut noise = SeededRng::new(rng.next_u64());
    let mut voltage = Vec::with_capacity(samples);
    let mut current = Vec::with_capacity(samples);
    let dt = 1.0 / SAMPLE_RATE_HZ as f64;
    for i in 0..samples {
        let t = i as f64 * dt;
        let w = std::f64::consts::TAU * (GRID_HZ + drift) * t;
        let v = 325.0 * (w.sin() + 0.02 * (3.0 * w).sin() + 0.01 * (5.0 * w + 0.4).sin());
        let second = i / SAMPLE_RATE_HZ as usize;
        let mut a = 0.0;
        for (load, schedule) in LOADS.iter().zip(&on) {
            if schedule[second] {
                let x = w - load.lag;
                a += load.amps
                    * std::f64::consts::SQRT_2
                    * (x.sin() + load.h3 * (3.0 * x).sin() + load.h5 * (5.0 * x).sin());
            }
        }
        let (nv, ni) = (
            (noise.unit_f64() - 0.5) * 16.0,
            (noise.unit_f64() - 0.5) * 16.0,
        );
        voltage.push(
            (v / VOLTS_PER_COUNT + v_offset + nv)
                .round()
                .clamp(-32768.0, 32767.0) as i16,
        );
        current.push(
            (a / AMPS_PER_COUNT + i_offset + ni)
                .round()
                .clamp(-32768.0, 32767.0) as i16,
        );
    }
    (voltage, current)
}

fn channel(name: &str, values: &[i16], factor: f64) -> Result<DatasetBuilder, DatasetError> {
    let err = |e: hdf5_writer::Error| DatasetError::Generate(format!("HDF5 dataset `{name}`: {e}"));
    let filters = [FILTER_SHUFFLE, FILTER_DEFLATE].map(|id| FilterDescription {
        id,
        name: None,
        client_data: if id == FILTER_DEFLATE {
            vec![4]
        } else {
            vec![]
        },
    });
    let mut builder = DatasetBuilder::typed_data(name, vec![values.len() as u64], values)
        .map_err(err)?
        .chunked(vec![CHUNK.min(values.len().max(1) as u64)]);
    for f in filters {
        builder = builder.filter(f);
    }
    let attr = |n: &str, v: f64| AttributeBuilder::scalar(n, v).map_err(err);
    Ok(builder
        .attribute(attr("calibration_factor", factor)?)
        .attribute(attr("offset", 0.0)?))
}

/// An HDF5 file of one recording of `voltage` and `current` counts.
pub fn hdf5_bytes(voltage: &[i16], current: &[i16]) -> Result<Vec<u8>, DatasetError> {
    let err = |e: hdf5_writer::Error| DatasetError::Generate(format!("HDF5: {e}"));
    let plan = Hdf5Builder::new()
        .attribute(AttributeBuilder::scalar("frequency", SAMPLE_RATE_HZ as f64).map_err(err)?)
        .dataset(channel("voltage", voltage, VOLTS_PER_COUNT)?)
        .dataset(channel("current", current, AMPS_PER_COUNT)?)
        .into_plan()
        .map_err(err)?;
    let cursor = Hdf5Writer::new(std::io::Cursor::new(Vec::new()), WriteOptions::default())
        .finish(plan)
        .map_err(err)?;
    Ok(cursor.into_inner())
}

pub fn generate_one(request: &GenerateRequest, n: usize) -> Result<(), DatasetError> {
    let (voltage, current) = hour(request.seed, n, SECONDS_PER_FILE);
    crate::write_atomically(
        &file_path(&request.root, n),
        &hdf5_bytes(&voltage, &current)?,
    )
}

pub use workloads::steps::read_cream_hour::Recording;

/// Reads a CREAM file: both channels calibrated with their offsets removed (the
/// `read_cream_hour` step's parser).
pub fn read_recording(path: &Path) -> Result<Recording, DatasetError> {
    let bytes = std::fs::read(path).map_err(|e| DatasetError::Io {
        path: path.display().to_string(),
        source: e,
    })?;
    workloads::steps::read_cream_hour::parse_recording(bytes, Default::default()).map_err(
        |message| DatasetError::Layout {
            path: path.display().to_string(),
            message,
        },
    )
}

/// Lists the hourly files, day folders in order, hours in order.
pub fn open(
    files: &Arc<dyn Files>,
    root: &Path,
    _options: &crate::Options,
) -> Result<Source, DatasetError> {
    let layout = |message: String| DatasetError::Layout {
        path: root.display().to_string(),
        message,
    };
    let expected = "expected <YYYY-MM-DD>/<name>.hdf5 day folders (the CREAM layout)";
    let mut days = folders(&**files, root).map_err(|e| layout(format!("{e}: {expected}")))?;
    days.sort_by(|a, b| a.name.cmp(&b.name));
    let mut items = Vec::new();
    for day in days {
        let day = day.path_in(root);
        let mut hours = files_ending(&**files, &day, &[".hdf5", ".h5"])?;
        hours.sort_by(|a, b| a.name.cmp(&b.name));
        for e in hours {
            items.push(SourceItem::new(e.path_in(&day), &e, Vec::new()));
        }
    }
    if items.is_empty() {
        return Err(layout(format!("no .hdf5 files: {expected}")));
    }
    Ok(Source::new("cream", files, root, items))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_paths_follow_the_day_folders() {
        assert_eq!(date(0), "2018-08-23");
        assert_eq!(date(9), "2018-09-01");
        assert_eq!(date(131), "2019-01-01");
        assert!(file_path(Path::new("/r"), 25).ends_with("2018-08-24/X8_2018-08-24T01-00-00.hdf5"));
    }

    #[test]
    fn a_short_recording_round_trips_through_hdf5_with_calibration() {
        let (v, i) = hour(1, 0, 2);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.hdf5");
        std::fs::write(&path, hdf5_bytes(&v, &i).unwrap()).unwrap();
        let r = read_recording(&path).unwrap();
        assert_eq!(r.sample_rate_hz, 6400.0);
        assert_eq!(r.voltage.len(), 12_800);
        let rms = (r.voltage.iter().map(|x| x * x).sum::<f64>() / r.voltage.len() as f64).sqrt();
        assert!((rms - 230.0).abs() < 5.0, "grid RMS {rms} V");
        // The paper's per-period offsets leave the mean near zero (the last, zero-padded period
        // pulls its end); removing the channel's mean leaves it exactly zero.
        let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
        assert!(
            mean(&r.voltage).abs() < 1.0,
            "offset removed: {}",
            mean(&r.voltage)
        );
        let bytes = std::fs::read(&path).unwrap();
        let by_mean = workloads::steps::read_cream_hour::parse_recording(
            bytes,
            workloads::steps::read_cream_hour::Offsets::Mean,
        )
        .unwrap();
        assert!(
            mean(&by_mean.voltage).abs() < 1e-9,
            "offset removed exactly"
        );
    }
}
