//! The prediction model: a roofline per strategy from the calibration (`calibrate.rs`), and
//! predictions for other hardware (`prepbench whatif`).
//!
//! Per sample, a worker spends `p` CPU seconds (the calibrated stages, divided by the CPU
//! speed) and, reading cold, `d` seconds waiting on the device (per-file latency and the bytes
//! over one reader's bandwidth); the consumer spends `s` CPU seconds. With `T` workers on `C`
//! cores and storage serving `A` samples/s in all, the bounds are
//!
//! - storage: `min(T / d, A)`;
//! - CPU: `min(T / p, C / (p + s), 1 / s)` (Amdahl: the consumer is the serial part, and the
//!   workers and consumer share the cores);
//! - consumer: `batch / compute time` with a simulated training consumer.
//!
//! The roofline is the smallest bound. The model's prediction adds what a bound leaves out: a
//! worker waits for its reads and then computes, so its own rate is `1 / (p + d)`; the
//! steady rate is `R = min(T / (p + d), A, C / (p + s), 1 / s, consumer)`, and an epoch of
//! `n` samples with the calibrated per-epoch cost `e` runs at `n / (n / R + e)`.

mod hardware;
mod predict;
mod validation;
mod whatif;

pub use hardware::{hardware_file, paper_hardware, storage_of};
pub use predict::{
    laid_out, predict, ranking, sps, this_machine, Hardware, Prediction, Reading, Setting, Storage,
};
pub use validation::{
    kendall, paper_agreement, validate, validation_line, Checked, PaperAgreement, Validation,
};
pub use whatif::{whatif, whatif_in, PaperName, WhatifRequest};
