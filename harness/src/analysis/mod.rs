//! What a results folder says: statistics over trials ([`stats`]), the paper's figures
//! ([`paper`]), the prediction model and `whatif` ([`model`]), the report ([`report`]),
//! `recommend` and `compare`. It reads the typed results only; it never measures.

pub mod compare;
pub mod model;
pub mod paper;
pub mod recommend;
pub mod report;
pub mod stats;
pub mod svg;
