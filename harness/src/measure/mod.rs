//! One run, measured: a [`session::Session`] over a prepared dataset makes or reuses a store
//! (the offline phase, [`materialize`]) and runs epochs of the online phase ([`epochs`], each
//! on an [`online`] engine) after preparing the page cache ([`cache`]), through emulated storage
//! ([`emulate`]) into a consumer ([`consumer`]), recording where the time went
//! ([`attribution`]), what the system did ([`sysmon`]) and whether the output matches
//! fully-online processing ([`verify`]). [`calibrate`] measures what the prediction model needs.

pub mod app_cache;
pub mod attribution;
pub mod cache;
pub mod calibrate;
pub mod code_cache;
pub mod consumer;
pub mod emulate;
pub mod epochs;
pub mod errors;
pub mod materialize;
pub mod memory_limit;
pub mod metrics;
pub mod online;
pub mod page_reporting;
pub mod pages;
pub mod passes;
pub mod places;
pub mod session;
pub mod steps;
pub mod sysmon;
pub mod verify;
pub mod view;
pub mod warnings;
