//! Facts about the machine a result was measured on: CPU, cores, memory, kernel, the
//! filesystem and device under a path, and the build (version, commit, compiler).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Filesystem {
    pub mount_point: String,
    pub fs_type: String,
    pub device: String,
    /// The device's "major:minor" numbers (as /proc/diskstats lists them).
    #[serde(default)]
    pub device_numbers: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Machine {
    pub hostname: String,
    pub cpu_model: String,
    pub logical_cores: usize,
    pub memory_bytes: u64,
    pub kernel: String,
    /// Whether the machine is a VM that gives its free memory back to the hypervisor (a
    /// virtio balloon with free page reporting): memory the kernel takes for the page cache
    /// then costs a fault into the host first. Absent where not recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_page_reporting: Option<bool>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Build {
    pub prepbench_version: String,
    pub git_commit: String,
    pub rustc: String,
    /// How the process's allocator was set up ([`keep_freed_memory`]); empty in manifests
    /// written before it was recorded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub allocator: String,
}

/// This build of prepbench.
pub fn build() -> Build {
    Build {
        prepbench_version: env!("CARGO_PKG_VERSION").into(),
        git_commit: env!("PREPBENCH_GIT_COMMIT").into(),
        rustc: env!("PREPBENCH_RUSTC").into(),
        allocator: ALLOCATOR
            .get()
            .cloned()
            .unwrap_or_else(|| "the C library's malloc, as it came".into()),
    }
}

/// What [`keep_freed_memory`] did.
static ALLOCATOR: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// glibc's largest threshold for serving an allocation from the heap rather than a mapping
/// of its own (`HEAP_MAX_SIZE / 2` on 64-bit).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 32 << 20;

/// Makes glibc's malloc keep the memory that one sample's buffers free for the next sample's,
/// instead of giving it back to the kernel and faulting it in again page by page: buffers up
/// to 32 MiB come from the heap, and freed heap memory is kept (never trimmed). By default
/// glibc maps a large buffer on its own and unmaps it when freed, and trims a heap's free top
/// beyond a threshold that adapts to the sizes freed; a decoded photograph or a resized batch
/// then costs one page fault per 4 KiB on every sample (measured on 12 progressive JPEG
/// photographs: 235 k page faults for 4 epochs, 73 k with this, and 8 % less CPU time; see
/// docs/decisions.md). What it costs is a little peak memory: a heap keeps what it held, so
/// its blocks are not always reused in the best place (1-3 MB more on 2-thread cv runs).
/// Called once at start; left alone when the user set glibc's malloc settings themselves
/// (`GLIBC_TUNABLES` or a `MALLOC_*_` variable), and off glibc.
pub fn keep_freed_memory() {
    let what = if malloc_set_by_user() {
        "glibc malloc, with the settings of the environment (GLIBC_TUNABLES or MALLOC_*_)".into()
    } else {
        set_malloc()
    };
    let _ = ALLOCATOR.set(what);
}

/// Whether the environment sets glibc's malloc up (`GLIBC_TUNABLES` or a `MALLOC_*_` variable):
/// [`keep_freed_memory`] then leaves it alone.
pub fn malloc_set_by_user() -> bool {
    std::env::vars_os().any(|(name, _)| {
        let name = name.to_string_lossy();
        name == "GLIBC_TUNABLES" || (name.starts_with("MALLOC_") && name.ends_with('_'))
    })
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set_malloc() -> String {
    // SAFETY: mallopt only changes the allocator's parameters; called before other threads.
    let set = unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
            && libc::mallopt(libc::M_TRIM_THRESHOLD, libc::c_int::MAX) == 1
    };
    if set {
        "glibc malloc: buffers up to 32 MiB from the heap, freed memory kept (no trimming)".into()
    } else {
        "glibc malloc, as it came (mallopt refused prepbench's settings)".into()
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_malloc() -> String {
    "the C library's malloc, as it came (not glibc)".into()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn uname_field(f: impl Fn(&libc::utsname) -> &[libc::c_char]) -> String {
    // SAFETY: uname fills the zeroed struct; its fields are NUL-terminated C strings.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return "unknown".into();
    }
    let bytes: Vec<u8> = f(&u)
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

pub fn machine() -> Machine {
    let cpuinfo = read("/proc/cpuinfo");
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let memory_kib = meminfo_kib(&read("/proc/meminfo"), "MemTotal:").unwrap_or(0);
    Machine {
        hostname: uname_field(|u| &u.nodename),
        cpu_model,
        logical_cores: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        memory_bytes: memory_kib * 1024,
        kernel: format!(
            "{} {}",
            uname_field(|u| &u.sysname),
            uname_field(|u| &u.release)
        ),
        free_page_reporting: Some(reports_free_pages()),
    }
}

/// One field of `/proc/meminfo`'s text, in KiB (`field` with its colon: `"MemTotal:"`).
pub fn meminfo_kib(meminfo: &str, field: &str) -> Option<u64> {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// Whether this machine hands its free memory back to the hypervisor (a virtio balloon that
/// negotiated free page reporting).
pub fn reports_free_pages() -> bool {
    free_page_reporting(Path::new("/sys/bus/virtio/devices"))
}

/// The kernel's free page reporter's parameters (`measure/page_reporting.rs` holds it off).
pub const PAGE_REPORTING_PARAMETERS: &str = "/sys/module/page_reporting/parameters";

/// The free page reporter's `min_free_ms` (how long a page stays free before it may be
/// reported), where the kernel has the setting (`None` elsewhere).
pub fn page_reporting_min_free_ms() -> Option<u64> {
    min_free_ms(Path::new(PAGE_REPORTING_PARAMETERS))
}

fn min_free_ms(parameters: &Path) -> Option<u64> {
    std::fs::read_to_string(parameters.join("min_free_ms"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The virtio device id of a memory balloon.
const VIRTIO_BALLOON: &str = "0x0005";
/// The balloon's feature bit for free page reporting (`VIRTIO_BALLOON_F_REPORTING`).
const BALLOON_F_REPORTING: usize = 5;

/// Whether a virtio balloon under `devices` (sysfs) negotiated free page reporting: its
/// `features` file lists the negotiated bits as '0'/'1', bit 0 first.
fn free_page_reporting(devices: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(devices) else {
        return false;
    };
    entries.flatten().any(|e| {
        let text = |name: &str| std::fs::read_to_string(e.path().join(name)).unwrap_or_default();
        text("device").trim() == VIRTIO_BALLOON
            && text("features").trim().as_bytes().get(BALLOON_F_REPORTING) == Some(&b'1')
    })
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
pub(crate) fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..i + 4]
                .iter()
                .all(|b| (b'0'..=b'7').contains(b))
        {
            let v = (bytes[i + 1] - b'0') * 64 + (bytes[i + 2] - b'0') * 8 + (bytes[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mount (point, type, device) holding `path`, from /proc/self/mountinfo.
pub fn filesystem_of(path: &Path) -> Option<Filesystem> {
    let mut existing: PathBuf = path.to_path_buf();
    while !existing.exists() {
        existing = existing.parent()?.to_path_buf();
    }
    let path = existing.canonicalize().ok()?;
    let mut best: Option<Filesystem> = None;
    for line in read("/proc/self/mountinfo").lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(dash) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        if fields.len() < dash + 3 || fields.len() < 5 {
            continue;
        }
        let mount_point = unescape(fields[4]);
        if !path.starts_with(&mount_point) {
            continue;
        }
        if best
            .as_ref()
            .is_none_or(|b| mount_point.len() >= b.mount_point.len())
        {
            best = Some(Filesystem {
                mount_point,
                fs_type: fields[dash + 1].to_string(),
                device: unescape(fields[dash + 2]),
                device_numbers: fields[2].to_string(),
            });
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_facts_are_filled() {
        let m = machine();
        assert!(m.logical_cores >= 1);
        assert!(m.memory_bytes > 0 || !Path::new("/proc/meminfo").exists());
        assert!(m.kernel.starts_with("Linux"), "{}", m.kernel);
        assert!(!build().rustc.is_empty());
    }

    #[test]
    fn root_and_proc_resolve_to_their_mounts() {
        if !Path::new("/proc/self/mountinfo").exists() {
            return;
        }
        assert_eq!(
            filesystem_of(Path::new("/proc/self")).unwrap().fs_type,
            "proc"
        );
        let root = filesystem_of(Path::new("/definitely/not/here")).unwrap();
        assert_eq!(root.mount_point, "/");
    }

    #[test]
    fn free_page_reporting_is_read_from_the_balloons_negotiated_features() {
        let sys = tempfile::tempdir().unwrap();
        let device = |name: &str, id: &str, features: &str| {
            let d = sys.path().join(name);
            std::fs::create_dir(&d).unwrap();
            std::fs::write(d.join("device"), format!("{id}\n")).unwrap();
            std::fs::write(d.join("features"), format!("{features}\n")).unwrap();
        };
        // A block device with bit 5 set, and a balloon without reporting: not reporting.
        device("virtio0", "0x0002", "00100110");
        device("virtio1", VIRTIO_BALLOON, "01100001");
        assert!(!free_page_reporting(sys.path()));
        device("virtio2", VIRTIO_BALLOON, "01100101");
        assert!(free_page_reporting(sys.path()));
        assert!(!free_page_reporting(&sys.path().join("absent")));
        // The reporter's delay, where the kernel has it.
        let params = tempfile::tempdir().unwrap();
        assert_eq!(min_free_ms(params.path()), None);
        std::fs::write(params.path().join("min_free_ms"), "0\n").unwrap();
        assert_eq!(min_free_ms(params.path()), Some(0));
        std::fs::write(params.path().join("min_free_ms"), "n/a\n").unwrap();
        assert_eq!(min_free_ms(params.path()), None);
    }

    #[test]
    fn octal_escapes_are_decoded() {
        assert_eq!(unescape(r"/mnt/my\040disk"), "/mnt/my disk");
        assert_eq!(unescape(r"plain\0"), r"plain\0");
    }
}
