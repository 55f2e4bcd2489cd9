//! The hardware a prediction is for besides this machine: the paper's, and hardware described
//! in a YAML file.

use workloads::StorageProfile;

use super::predict::*;

/// The paper's machine: 8 cores (the paper's thread count), its Ceph-over-HDD storage as
/// measured with fio (`paper-ceph-hdd`), CPU speed as here (the paper's CPU is not calibrated).
pub fn paper_hardware() -> Hardware {
    Hardware {
        name: "paper".into(),
        cores: 8,
        cpu_speed: 1.0,
        storage: Storage::Profile(StorageProfile::paper_ceph_hdd()),
    }
}

/// A hardware profile file: `name`, `cores`, `cpu_speed` (optional) and `storage`, a storage
/// profile's fields as under a workload's `storage_profiles`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct HardwareFile {
    name: String,
    cores: usize,
    #[serde(default = "one")]
    cpu_speed: f64,
    storage: StorageProfile,
}

fn one() -> f64 {
    1.0
}

/// Reads a hardware profile YAML file.
pub fn hardware_file(path: &std::path::Path) -> anyhow::Result<Hardware> {
    let text = workloads::storage::read_regular(path)
        .and_then(|b| {
            String::from_utf8(b)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
        })
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
    workloads::spec::check_yaml_shape(&text).map_err(|(line, e)| {
        let at = line.map(|l| format!(":{l}")).unwrap_or_default();
        anyhow::anyhow!("{}{at}: {e}", path.display())
    })?;
    let mut h: HardwareFile = serde_yaml_ng::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}: not a hardware profile: {e}", path.display()))?;
    h.storage.name = format!("{} storage", h.name);
    h.storage
        .validate()
        .map_err(|e| anyhow::anyhow!("{}: storage: {e}", path.display()))?;
    if !(1..=65_536).contains(&h.cores) {
        anyhow::bail!(
            "{}: cores must be a whole number from 1 to 65536, got {}",
            path.display(),
            h.cores
        );
    }
    if !(h.cpu_speed > 0.0 && h.cpu_speed <= 1e3) {
        anyhow::bail!(
            "{}: cpu_speed must be a number above 0 and at most 1000, got {}",
            path.display(),
            crate::units::number(h.cpu_speed)
        );
    }
    Ok(Hardware {
        name: h.name,
        cores: h.cores,
        cpu_speed: h.cpu_speed,
        storage: Storage::Profile(h.storage),
    })
}

/// A storage of `mb_s` MB/s per reader and in all, with `latency_ms` per 4 KiB request of
/// files under 1 MiB and once per larger file.
pub fn storage_of(mb_s: f64, latency_ms: f64) -> Storage {
    Storage::Profile(StorageProfile {
        name: format!("{mb_s} MB/s"),
        description: String::new(),
        stream_mb_s: Some(mb_s),
        aggregate_mb_s: Some(mb_s),
        latency_ms,
        ..StorageProfile::local()
    })
}
