//! The sweeps `reproduce` adds under each loader other than prepbench's own: the local
//! workloads it can run, and of the emulated ones those its scale names, each judged apart.

use workloads::{CacheMode, Codec};

use super::scales::{emulated_options, limited_options, sweep_options, Scale, LIMITED};
use crate::plan::sweep::{Places, SweepOptions};

/// Each of `loaders`' (other than prepbench's own) sweeps at `s`, labelled, asked before
/// anything is written: a loader that cannot run here stops the reproduction; a workload it
/// cannot run, or one this scale leaves to the others, is left out, said.
pub(super) fn sweeps(
    s: &Scale,
    seed: u64,
    loaders: &[String],
    places: &Places,
) -> anyhow::Result<Vec<(String, SweepOptions)>> {
    let mut planned = Vec::new();
    let under_loaders = s.loader_workloads();
    for loader in loaders
        .iter()
        .filter(|l| !crate::measure::online::is_default(l))
    {
        for w in s.workloads() {
            if !under_loaders.contains(&w) {
                places.progress.note(&format!(
                    "reproduce: `{w}` is not run under the {loader} loader at this scale (its \
                     claims are judged there on the others)"
                ));
                continue;
            }
            match loader_options(w, s, seed, loader)? {
                Ok(opts) => planned.push((format!("{w} [loader {loader}]"), opts)),
                Err(why) => places.progress.note(&format!(
                    "reproduce: `{w}` is not run under the {loader} loader: {why}"
                )),
            }
        }
        for w in s.loader_emulated() {
            match loader_emulated_options(w, s, seed, loader)? {
                Ok(opts) => planned.push((
                    format!("{w} [storage paper-ceph-hdd] [loader {loader}]"),
                    opts,
                )),
                Err(why) => places.progress.note(&format!(
                    "reproduce: `{w}` is not run under the {loader} loader on the emulated \
                     storage: {why}"
                )),
            }
        }
    }
    Ok(planned)
}

/// The sweep options of `workload` under the emulated paper storage ([`emulated_options`])
/// under `loader`: findings 2 and 3 judged on the loader's reads of network storage. Its
/// stores are made once (the native emulated sweep repeats them for 3d, whose offline phase is
/// prepbench's under every loader); where the scale sweeps it for some strategies alone
/// ([`Scale::loader_emulated_strategies`]), those, uncompressed. `Ok(Err)` with the reason
/// where the loader cannot run it here.
pub fn loader_emulated_options(
    workload: &str,
    s: &Scale,
    seed: u64,
    loader: &str,
) -> anyhow::Result<Result<SweepOptions, String>> {
    let engine = engine_named(loader)?;
    if let Err(why) = loader_options(workload, s, seed, loader)? {
        return Ok(Err(why));
    }
    if let Some(why) = engine.storage_refusal() {
        return Ok(Err(why));
    }
    Ok(Ok(loader_emulated(workload, s, seed, engine, loader)))
}

/// The emulated sweep of `workload` at `s` made the sweep of `engine` (named `loader`)
/// reading its stores ([`reading_sweep`]), cut to the strategies the scale names for it.
pub(super) fn loader_emulated(
    workload: &str,
    s: &Scale,
    seed: u64,
    engine: &dyn crate::measure::online::Engine,
    loader: &str,
) -> SweepOptions {
    let mut emulated = emulated_options(workload, s, seed);
    if let Some(only) = s.loader_emulated_strategies(workload) {
        emulated.strategies = Some(only);
        emulated.codecs = Some(vec![Codec::None]);
    }
    reading_sweep(emulated, engine, loader)
}

/// A native sweep whose stores it makes (`native`: the emulated or the memory-limited one)
/// made the sweep of `engine` (named `loader`) reading them: the codecs it reads, each store
/// made once.
pub(super) fn reading_sweep(
    native: SweepOptions,
    engine: &dyn crate::measure::online::Engine,
    loader: &str,
) -> SweepOptions {
    let codecs: Vec<Codec> = (native.codecs.iter().flatten().copied())
        .filter(|c| engine.codec_refusal(*c).is_none())
        .collect();
    SweepOptions {
        codecs: Some(codecs),
        offline_trials: 1,
        loaders: Some(vec![loader.to_string()]),
        ..native
    }
}

/// The sweep options of finding 4d's memory-limited run ([`limited_options`]) under `loader`:
/// the same last strategy, its limit raised by the loader's own memory
/// ([`loader_limited`]). `Ok(Err)` with the reason where the loader cannot run the workload
/// here.
pub fn loader_limited_options(
    s: &Scale,
    seed: u64,
    loader: &str,
) -> anyhow::Result<Result<SweepOptions, String>> {
    let engine = engine_named(loader)?;
    if let Err(why) = loader_options(LIMITED.0, s, seed, loader)? {
        return Ok(Err(why));
    }
    Ok(Ok(loader_limited(limited_options(s, seed), engine, loader)))
}

/// The native memory-limited sweep `limited` made the sweep of `engine` (named `loader`): its
/// limit raised by what the loader's own processes hold, so that it has about the page cache
/// prepbench's engine has (TensorFlow alone holds more than the native limit). A condition of
/// its own, it sizes its epochs by the loader's speed; each store is made once.
pub(super) fn loader_limited(
    limited: SweepOptions,
    engine: &dyn crate::measure::online::Engine,
    loader: &str,
) -> SweepOptions {
    let mut opts = reading_sweep(limited, engine, loader);
    let threads = (opts.threads.iter().flatten().max().copied()).unwrap_or(1);
    opts.settings.memory_limit_mb =
        (opts.settings.memory_limit_mb).map(|mb| mb + engine.own_memory_mb(threads));
    opts
}

/// The sweep options of local `workload` under `loader` (another than prepbench's own) at
/// `scale` ([`loader_sweep`]): the claims it can test without the whole matrix again.
/// `Ok(Err)` with the reason when the loader lacks a form of one of the pipeline's steps (a
/// pipeline is judged whole or not at all); an error when the loader itself cannot run here
/// (its framework missing: never a fallback).
pub fn loader_options(
    workload: &str,
    s: &Scale,
    seed: u64,
    loader: &str,
) -> anyhow::Result<Result<SweepOptions, String>> {
    let engine = engine_named(loader)?;
    let w = workloads::load(workload)?;
    let plain = sweep_options(workload, s, seed);
    let strategies = w.spec.sweep_strategies();
    // The first strategy refused says why (the others' reasons name the same list of forms).
    let refused = strategies.iter().find_map(|strategy| {
        let why = engine.step_refusal(&w, strategy.split)?;
        Some(format!("`{}`: {why}", strategy.name))
    });
    if let Some(why) = refused {
        return Ok(Err(why));
    }
    let Some(first) = strategies.first() else {
        return Ok(Err("it has no strategies to sweep".into()));
    };
    // A loader this machine cannot run stops the reproduction; one that cannot run this
    // workload here (tf-data's audio without tensorflow-io) leaves it out, named.
    if let Some(why) = engine.runtime_refusal() {
        anyhow::bail!("--loaders {loader}: {why}");
    }
    if let Some(why) = engine.refusal(&w, first.split) {
        return Ok(Err(why));
    }
    Ok(Ok(loader_sweep(plain, s, engine, loader)))
}

/// The native sweep `plain` of a workload at `s` made the sweep of `engine` (named `loader`):
/// every strategy, the codecs it reads, finding 6's thread sweep as natively (MP3 `decoded` at
/// quick: 6a judged under the loader too), and the cache modes, the application cache where
/// the loader has one (tf.data's `.cache()`), for the last strategy as natively.
pub(super) fn loader_sweep(
    plain: SweepOptions,
    s: &Scale,
    engine: &dyn crate::measure::online::Engine,
    loader: &str,
) -> SweepOptions {
    let codecs: Vec<Codec> = plain
        .codecs
        .iter()
        .flatten()
        .copied()
        .filter(|c| engine.codec_refusal(*c).is_none())
        .collect();
    let cache = plain
        .cache
        .iter()
        .flatten()
        .copied()
        .filter(|c| *c != CacheMode::App || engine.app_cache_refusal().is_none())
        .collect();
    SweepOptions {
        offline_trials: s.offline_trials_for(codecs.len()),
        codecs: Some(codecs),
        cache: Some(cache),
        loaders: Some(vec![loader.to_string()]),
        ..plain
    }
}

/// The loader `loader`, or an error naming it.
fn engine_named(loader: &str) -> anyhow::Result<&'static dyn crate::measure::online::Engine> {
    crate::measure::online::engine(loader)
        .ok_or_else(|| anyhow::anyhow!("--loaders: no loader `{loader}`"))
}
