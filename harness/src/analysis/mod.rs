//! What a results folder says: the folder loaded into cells summarised over trials ([`cells`])
//! and viewed per workload ([`view`]), statistics ([`stats`]), the paper's figures ([`paper`])
//! and its findings judged on ours ([`findings`]), the prediction model and `whatif`
//! ([`model`]), the report ([`report`]), `recommend` and `compare`. It reads the typed results
//! only; it never measures.

pub mod advice;
pub mod candidate;
pub mod cells;
pub mod compare;
pub mod findings;
pub mod model;
pub mod paper;
pub mod recommend;
pub mod recorded;
pub mod report;
pub mod sittings;
pub mod stats;
pub mod svg;
pub mod view;
pub mod workers;

/// Each distinct item of `items` once, in the order first seen.
pub fn first_seen<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}
