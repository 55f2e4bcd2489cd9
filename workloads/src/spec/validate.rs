//! What a spec must satisfy besides its syntax.

use crate::error::WorkloadError;
use crate::spec::model::{WorkloadSpec, UNPROCESSED};
use crate::spec::names::check_name;

impl WorkloadSpec {
    /// Checks what a file can get wrong beyond its syntax: names, unique step names, one
    /// fan-out step, positive sweep settings, possible strategies and known storage profiles.
    pub(crate) fn validate(&self) -> Result<(), WorkloadError> {
        check_name("workload", &self.name).map_err(|m| self.invalid(Some("name"), m))?;
        for def in &self.steps {
            check_name("step", &def.name).map_err(|m| self.invalid(Some(&def.name), m))?;
        }
        if self.steps.is_empty() {
            return Err(self.invalid(Some("steps"), "a workload needs at least one step".into()));
        }
        let mut seen = vec![UNPROCESSED];
        for def in &self.steps {
            if seen.contains(&def.name.as_str()) {
                // The later step is the mistake: the line of the name's second mention (its
                // first when the name is reserved).
                let earlier = usize::from(seen[1..].contains(&def.name.as_str()));
                return Err(self.invalid_at(
                    Some((&def.name, earlier)),
                    format!("step name `{}` is used twice (or is reserved); step names name strategies and must be unique", def.name),
                ));
            }
            seen.push(&def.name);
        }
        let fan_outs: Vec<&str> = self
            .steps
            .iter()
            .filter(|d| d.facts().fan_out)
            .map(|d| d.name.as_str())
            .collect();
        if fan_outs.len() > 1 {
            return Err(self.invalid(
                Some(fan_outs[1]),
                format!(
                    "steps `{}` both emit several samples per input; a workload may have one such step",
                    fan_outs.join("`, `")
                ),
            ));
        }
        if self.dataset.samples == 0 {
            return Err(self.invalid(Some("samples"), "dataset.samples must be at least 1".into()));
        }
        let sweep = &self.sweep;
        for (what, bad) in [
            (
                "threads",
                sweep.threads.is_empty() || sweep.threads.contains(&0),
            ),
            ("codecs", sweep.codecs.is_empty()),
            ("cache", sweep.cache.is_empty()),
            ("trials", sweep.trials == 0),
            ("epochs", sweep.epochs == 0),
            ("shards", sweep.shards == 0),
            (
                "dataset_options",
                sweep.dataset_options.values().any(|v| v.is_empty()),
            ),
            (
                "dataset_mb",
                sweep
                    .dataset_mb
                    .is_some_and(|mb| !(mb > 0.0 && mb.is_finite())),
            ),
        ] {
            if bad {
                return Err(self.invalid(
                    Some(what),
                    format!("sweep.{what} must be non-empty and positive"),
                ));
            }
        }
        for name in &sweep.strategies {
            self.strategy(name)
                .map_err(|message| self.invalid(Some("strategies"), message))?;
        }
        for (name, profile) in &self.storage_profiles {
            profile
                .validate()
                .map_err(|message| self.invalid(Some(name), message))?;
        }
        if sweep.storage.is_empty() {
            return Err(self.invalid(
                Some("storage"),
                "sweep.storage must name at least one storage profile".into(),
            ));
        }
        for name in &sweep.storage {
            self.storage_profile(name)
                .map_err(|message| self.invalid(Some("storage"), message))?;
        }
        Ok(())
    }
}
