//! The `tf-data` loader: each epoch's online phase as the paper's stack ran it (tf.data, in
//! the `--python` interpreter, which needs TensorFlow and this package: `pip install
//! ".[tf]"`). Its process (`prepbench/_tfdata.py`; the plumbing every loader in Python shares
//! is `super::process`) reads a store's shards with `TFRecordDataset` (prepbench's shards are
//! TFRecord files; gzip and zlib shards TFRecord's own compression), `num_parallel_reads` =
//! the run's threads, or slices the raw items' paths for `tf.io.read_file`; parses each record
//! and runs the online steps in TensorFlow ops (`prepbench/_tf_steps.py`) in one `map` with
//! `num_parallel_calls` = the threads; and iterates the dataset as a training loop does. One
//! process serves a run's epochs (`OnlineJob::kept`). With `--cache app` the parse is a map of
//! its own followed by `.cache()`, as the paper's application cache was, and the epochs after
//! the first are served from it.
//! `--verify` compares its outputs with native processing within the bounds its forms state.
//! `--loader-options autotune=false` runs it with tf.data's autotuning off.

use indicatif::ProgressBar;
use workloads::{Codec, Workload};

use super::engine::{Engine, OnlineJob, OnlineResult};
use super::process::{step_refusal, PythonLoader};
use crate::measure::errors::RunError;

pub mod steps;

pub struct TfData;

/// Bumped with `PROTOCOL` in `prepbench/_tfdata.py`.
const PROTOCOL: u32 = 9;

/// The loader's options (`--loader-options`): `autotune=false` turns tf.data's autotuning
/// off (`tf.data.Options().autotune.enabled`), as a pipeline that sets it does; the default,
/// tf.data's own, is recorded as no options at all, so runs from before the option pair with
/// runs after it.
fn parse_options(text: &str) -> Result<bool, String> {
    let mut autotune = None;
    for option in text.split([',', ' ']).filter(|o| !o.trim().is_empty()) {
        match option.trim().split_once('=') {
            Some(("autotune", value)) => {
                if let Some(first) = autotune {
                    return Err(format!(
                        "`autotune` is given twice (`autotune={first}` and `{}`): give it once",
                        option.trim()
                    ));
                }
                autotune = Some(match value {
                    "true" | "True" => true,
                    "false" | "False" => false,
                    _ => return Err(format!("autotune={value}: true or false")),
                });
            }
            _ => {
                return Err(format!(
                    "no option `{option}`; the tf-data loader takes autotune=true|false"
                ))
            }
        }
    }
    Ok(autotune.unwrap_or(true))
}

/// How runs record the options: nothing for tf.data's defaults.
fn spelled(autotune: bool) -> String {
    if autotune {
        String::new()
    } else {
        "autotune=false".into()
    }
}

const PROCESS: PythonLoader = PythonLoader {
    name: "tf-data",
    module: "prepbench._tfdata",
    imports: "tensorflow, numpy",
    needs: "TensorFlow",
    extra: "tf",
    audio: ("tensorflow, tensorflow_io", "tensorflow-io"),
    app_cache: None,
    protocol: PROTOCOL,
    steps: |workload, split| step_refusal(workload, split, ("tf-data", false), steps::refusal),
};

/// Why tf.data cannot read a store of `codec`: TFRecordDataset knows gzip and zlib only.
pub fn codec_refusal(codec: Codec) -> Option<String> {
    match codec {
        Codec::None | Codec::Gzip { .. } | Codec::Zlib { .. } => None,
        other => Some(format!(
            "reads TFRecord's own compression (none, gzip, zlib), not {other} shards"
        )),
    }
}

impl Engine for TfData {
    fn name(&self) -> &'static str {
        "tf-data"
    }

    fn options(&self, asked: Option<&str>) -> Result<String, String> {
        parse_options(asked.unwrap_or("")).map(spelled)
    }

    fn step_refusal(&self, workload: &Workload, split: usize) -> Option<String> {
        (PROCESS.steps)(workload, split)
    }

    fn runtime_refusal(&self) -> Option<String> {
        PROCESS
            .runtime_refusal()
            .map(|why| format!("the tf-data loader {why}"))
    }

    fn refusal(&self, workload: &Workload, split: usize) -> Option<String> {
        PROCESS.refusal(workload, split)
    }

    fn skip_refusal(&self) -> Option<String> {
        Some(
            "the tf-data loader does not skip bad samples yet (tf.data names the op that \
             failed, not the sample): use --on-error fail, or --loader native or torch"
                .into(),
        )
    }

    fn codec_refusal(&self, codec: Codec) -> Option<String> {
        codec_refusal(codec).map(|why| format!("the tf-data loader {why}"))
    }

    /// TensorFlow holds about 400 MB once imported (2.16): under 256 MB a run was killed,
    /// under 512 it ran with about 100 MB of page cache left.
    fn own_memory_mb(&self, _threads: usize) -> u64 {
        512
    }

    fn storage_refusal(&self) -> Option<String> {
        crate::measure::view::refusal().map(|why| format!("the tf-data loader {why}"))
    }

    /// (Codecs and `--on-error skip` are refused with the plan; the process refuses a store
    /// of another codec itself.)
    fn run(&self, job: &OnlineJob, progress: &ProgressBar) -> Result<OnlineResult, RunError> {
        let autotune = parse_options(job.loader_options)
            .map_err(|e| super::process::loader_error("tf-data", e))?;
        PROCESS.run(job, serde_json::json!({ "autotune": autotune }), progress)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::rows::loader_label;

    #[test]
    fn autotune_is_its_one_option_and_its_default_is_recorded_as_none() {
        assert_eq!(TfData.options(None).unwrap(), "");
        assert_eq!(TfData.options(Some("autotune=true")).unwrap(), "");
        let off = TfData.options(Some("autotune=false")).unwrap();
        assert_eq!(off, "autotune=false");
        assert_eq!(TfData.options(Some(&off)).unwrap(), off);
        // Python's spelling, as a tf.data user writes it.
        assert_eq!(TfData.options(Some("autotune=False")).unwrap(), off);
        assert_eq!(loader_label("tf-data", &off), "tf-data[autotune=false]");
        for (bad, says) in [
            ("autotune=no", "true or false"),
            ("batch=4", "no option `batch=4`"),
            ("autotune=false,autotune=true", "`autotune` is given twice"),
        ] {
            let error = TfData.options(Some(bad)).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }
}
