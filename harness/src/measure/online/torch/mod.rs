//! The `torch` loader: each epoch's online phase in a real PyTorch `DataLoader`, in the
//! interpreter the run names (`--python`), with `num_workers` = the run's threads. Its process
//! (`prepbench/_loader.py`, in the Python package; the plumbing every loader in Python shares
//! is `super::process`) reads a store with prepbench's reader, or the raw items with the
//! workload's read step, and runs the online steps in the DataLoader's workers: your Python
//! steps with the same chain code and seeds as the native engine, prepbench's image steps in
//! their PyTorch form ([`steps`]), so that `--verify` compares its outputs with native
//! fully-online processing sample by sample.

use indicatif::ProgressBar;
use workloads::Workload;

use super::engine::{Engine, OnlineJob, OnlineResult};
use super::process::{loader_error, step_refusal, PythonLoader};
use crate::measure::errors::RunError;

/// The loader's options, recorded with every run it makes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TorchOptions {
    pub batch_size: usize,
    /// Batches each worker loads ahead (`None`: PyTorch's default, 2).
    pub prefetch_factor: Option<usize>,
    pub pin_memory: bool,
    pub persistent_workers: bool,
}

impl Default for TorchOptions {
    fn default() -> TorchOptions {
        TorchOptions {
            batch_size: 32,
            prefetch_factor: None,
            pin_memory: false,
            persistent_workers: false,
        }
    }
}

/// `batch=32 prefetch=default pin=false persistent=false`.
impl std::fmt::Display for TorchOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let prefetch = self
            .prefetch_factor
            .map_or_else(|| "default".to_string(), |p| p.to_string());
        write!(
            f,
            "batch={} prefetch={prefetch} pin={} persistent={}",
            self.batch_size, self.pin_memory, self.persistent_workers
        )
    }
}

impl std::str::FromStr for TorchOptions {
    type Err = String;

    /// `batch=64,prefetch=4,pin=true,persistent=true` (commas or spaces between them), each
    /// optional; those not named keep their defaults. The DataLoader's own names
    /// (`batch_size`, `prefetch_factor`, `pin_memory`, `persistent_workers`) and Python's
    /// `True`/`False` are taken too, as a PyTorch user writes them. An option given twice (in
    /// either spelling) is refused: which one a run used would be a guess.
    fn from_str(text: &str) -> Result<TorchOptions, String> {
        let mut options = TorchOptions::default();
        let known = "batch=N, prefetch=K|default, pin=true|false, persistent=true|false";
        let mut given: Vec<(&str, &str)> = Vec::new();
        for option in text.split([',', ' ']).filter(|o| !o.trim().is_empty()) {
            let (key, value) = option.trim().split_once('=').ok_or_else(|| {
                format!("`{option}` is not KEY=VALUE; the torch loader takes {known}")
            })?;
            let canonical = key.split('_').next().unwrap_or(key);
            if let Some((_, first)) = given.iter().find(|(k, _)| *k == canonical) {
                return Err(format!(
                    "`{canonical}` is given twice (`{first}` and `{}`): give it once",
                    option.trim()
                ));
            }
            given.push((canonical, option.trim()));
            let count = |max: usize| {
                value
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=max).contains(n))
                    .ok_or_else(|| format!("{key}={value}: a count from 1 to {max}"))
            };
            let flag = || match value {
                "true" | "True" => Ok(true),
                "false" | "False" => Ok(false),
                _ => Err(format!("{key}={value}: true or false")),
            };
            match key {
                "batch" | "batch_size" => options.batch_size = count(65_536)?,
                "prefetch" | "prefetch_factor" if matches!(value, "default" | "None") => {
                    options.prefetch_factor = None
                }
                "prefetch" | "prefetch_factor" => options.prefetch_factor = Some(count(1_024)?),
                "pin" | "pin_memory" => options.pin_memory = flag()?,
                "persistent" | "persistent_workers" => options.persistent_workers = flag()?,
                "num_workers" => {
                    return Err(format!(
                        "{key}={value}: a run's num_workers is its thread count (--threads), \
                         a dimension of the sweep; the torch loader's options are {known}"
                    ))
                }
                _ => return Err(format!("no option `{key}`; the torch loader takes {known}")),
            }
        }
        Ok(options)
    }
}

/// Bumped with `PROTOCOL` in `prepbench/_loader.py`.
const PROTOCOL: u32 = 12;

pub struct Torch;

pub mod steps;

/// Why the torch loader has no application cache: a DataLoader's workers are processes, each
/// with its own memory, started afresh every epoch unless persistent.
const APP_CACHE_REFUSAL: &str = "has no application cache (--cache app): its workers are \
     processes of their own, each with its own memory (a cache in each would hold only that \
     worker's samples, and go with it where workers do not persist); use --loader native or \
     tf-data";

/// The torch loader's process.
const PROCESS: PythonLoader = PythonLoader {
    name: "torch",
    module: "prepbench._loader",
    imports: "torch, numpy",
    needs: "PyTorch",
    extra: "torch",
    audio: ("torch, soundfile", "soundfile"),
    app_cache: Some(APP_CACHE_REFUSAL),
    protocol: PROTOCOL,
    steps: |workload, split| step_refusal(workload, split, ("torch", true), steps::refusal),
};

impl Engine for Torch {
    fn name(&self) -> &'static str {
        "torch"
    }

    fn options(&self, asked: Option<&str>) -> Result<String, String> {
        let options: TorchOptions = asked.unwrap_or("").parse()?;
        Ok(options.to_string())
    }

    fn step_refusal(&self, workload: &Workload, split: usize) -> Option<String> {
        (PROCESS.steps)(workload, split)
    }

    fn runtime_refusal(&self) -> Option<String> {
        PROCESS
            .runtime_refusal()
            .map(|why| format!("the torch loader {why}"))
    }

    fn refusal(&self, workload: &Workload, split: usize) -> Option<String> {
        PROCESS.refusal(workload, split)
    }

    fn app_cache_refusal(&self) -> Option<String> {
        Some(format!("the torch loader {APP_CACHE_REFUSAL}"))
    }

    /// PyTorch and torchvision hold about 260 MB once imported (Debian's 1.13), and each
    /// worker its own: a 2-worker run was killed under 256 MB and ran under 512; 8 workers
    /// under 768 left about 190 MB of page cache (45 % of a 423 MB store resident).
    fn own_memory_mb(&self, threads: usize) -> u64 {
        448 + 32 * threads as u64
    }

    fn storage_refusal(&self) -> Option<String> {
        crate::measure::view::refusal().map(|why| format!("the torch loader {why}"))
    }

    fn run(&self, job: &OnlineJob, progress: &ProgressBar) -> Result<OnlineResult, RunError> {
        let options: TorchOptions = job
            .loader_options
            .parse()
            .map_err(|e: String| loader_error("torch", e))?;
        let options = serde_json::json!({
            "batch_size": options.batch_size,
            "prefetch_factor": options.prefetch_factor,
            "pin_memory": options.pin_memory,
            "persistent_workers": options.persistent_workers,
        });
        PROCESS.run(job, options, progress)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::online::{default_engine, ENGINES};
    use crate::results::rows::{default_loader_options, loader_label, DEFAULT_LOADER_OPTIONS};

    #[test]
    fn options_are_spelled_out_checked_and_their_defaults_known_to_results() {
        assert_eq!(
            Torch.options(Some("batch=64, pin=true")).unwrap(),
            "batch=64 prefetch=default pin=true persistent=false"
        );
        let spelled = Torch.options(Some("prefetch=4,persistent=true")).unwrap();
        // What runs record parses back to the same options.
        assert_eq!(Torch.options(Some(&spelled)).unwrap(), spelled);
        // The DataLoader's own argument names and Python's booleans are the same options,
        // recorded in prepbench's spelling.
        assert_eq!(
            Torch
                .options(Some(
                    "batch_size=64,prefetch_factor=4,pin_memory=True,persistent_workers=False"
                ))
                .unwrap(),
            "batch=64 prefetch=4 pin=true persistent=false"
        );
        assert_eq!(
            Torch.options(Some("prefetch_factor=None")).unwrap(),
            Torch.options(None).unwrap()
        );
        for (bad, says) in [
            ("batch=0", "from 1 to"),
            ("batch=x", "from 1 to"),
            ("pin=yes", "true or false"),
            ("workers=4", "no option `workers`"),
            ("num_workers=4", "its thread count (--threads)"),
            ("batch", "KEY=VALUE"),
            (
                "batch=4,batch=8",
                "`batch` is given twice (`batch=4` and `batch=8`)",
            ),
            ("pin=true pin_memory=False", "`pin` is given twice"),
        ] {
            let error = Torch.options(Some(bad)).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
        assert!(default_engine().options(Some("batch=64")).is_err());
        assert_eq!(default_engine().options(None).unwrap(), "");
        // Every engine's defaults are the ones results compare rows with.
        for engine in ENGINES {
            assert_eq!(
                engine.options(None).unwrap(),
                default_loader_options(engine.name()),
                "{}",
                engine.name()
            );
        }
        let with_options = ENGINES
            .iter()
            .filter(|e| !e.options(None).unwrap().is_empty())
            .count();
        assert_eq!(DEFAULT_LOADER_OPTIONS.len(), with_options);
        // A run with other options is another condition, named by what differs.
        let defaults = Torch.options(None).unwrap();
        assert_eq!(loader_label("torch", &defaults), "torch");
        assert_eq!(loader_label("torch", ""), "torch");
        assert_eq!(
            loader_label("torch", &spelled),
            "torch[prefetch=4,persistent=true]"
        );
    }
}
