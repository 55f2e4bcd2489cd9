//! System sampling during a phase (a dstat equivalent read from /proc, no external tool): every
//! second, and once more when the phase ends, the rates over the interval since the previous
//! sample: bytes read and written by the block device under the data directory, CPU time split
//! into user, system, iowait and idle, context switches; and the page cache and used memory at
//! its end. A phase shorter than a second still gets one row covering all of it.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::results::{Phase, SampleRow};

/// How often the system is sampled during a phase.
pub const SAMPLE_PERIOD: Duration = Duration::from_secs(1);

/// One reading of the counters.
#[derive(Clone, Debug)]
struct Counters {
    at: Instant,
    sectors_read: u64,
    sectors_written: u64,
    /// user (+nice), system (+irq, softirq), iowait, idle, total jiffies.
    cpu: [u64; 5],
    context_switches: u64,
    page_cache_kb: u64,
    memory_used_kb: u64,
}

/// The rates of one interval.
#[derive(Clone, Debug, PartialEq)]
pub struct SystemSample {
    pub t_start_s: f64,
    pub interval_s: f64,
    pub read_mb_s: f64,
    pub write_mb_s: f64,
    pub cpu_user_pct: f64,
    pub cpu_system_pct: f64,
    pub cpu_iowait_pct: f64,
    pub cpu_idle_pct: f64,
    pub context_switches_per_s: f64,
    pub page_cache_mb: f64,
    pub memory_used_mb: f64,
}

impl SystemSample {
    /// CPU busy share: everything but idle and iowait.
    pub fn cpu_busy_pct(&self) -> f64 {
        (100.0 - self.cpu_idle_pct - self.cpu_iowait_pct).max(0.0)
    }
}

fn read_counters(device: Option<(u32, u32)>) -> Counters {
    let mut c = Counters {
        at: Instant::now(),
        sectors_read: 0,
        sectors_written: 0,
        cpu: [0; 5],
        context_switches: 0,
        page_cache_kb: 0,
        memory_used_kb: 0,
    };
    if let (Some((major, minor)), Ok(text)) = (device, std::fs::read_to_string("/proc/diskstats")) {
        for line in text.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() > 9
                && f[0].parse::<u32>().ok() == Some(major)
                && f[1].parse::<u32>().ok() == Some(minor)
            {
                c.sectors_read = f[5].parse().unwrap_or(0);
                c.sectors_written = f[9].parse().unwrap_or(0);
            }
        }
    }
    if let Ok(text) = std::fs::read_to_string("/proc/stat") {
        for line in text.lines() {
            let f: Vec<u64> = line
                .split_whitespace()
                .skip(1)
                .filter_map(|v| v.parse().ok())
                .collect();
            if line.starts_with("cpu ") && f.len() >= 7 {
                let (user, nice, system, idle, iowait, irq, softirq) =
                    (f[0], f[1], f[2], f[3], f[4], f[5], f[6]);
                let steal = f.get(7).copied().unwrap_or(0);
                c.cpu = [
                    user + nice,
                    system + irq + softirq,
                    iowait,
                    idle,
                    user + nice + system + idle + iowait + irq + softirq + steal,
                ];
            } else if line.starts_with("ctxt ") {
                c.context_switches = f.first().copied().unwrap_or(0);
            }
        }
    }
    if let Ok(text) = std::fs::read_to_string("/proc/meminfo") {
        let kb = |key| crate::results::system::meminfo_kib(&text, key).unwrap_or(0);
        c.page_cache_kb = kb("Cached:");
        c.memory_used_kb = kb("MemTotal:").saturating_sub(kb("MemAvailable:"));
    }
    c
}

fn interval(start: Instant, a: &Counters, b: &Counters) -> SystemSample {
    let seconds = b.at.duration_since(a.at).as_secs_f64().max(1e-9);
    let cpu_total = b.cpu[4].saturating_sub(a.cpu[4]).max(1) as f64;
    let cpu = |i: usize| 100.0 * b.cpu[i].saturating_sub(a.cpu[i]) as f64 / cpu_total;
    SystemSample {
        t_start_s: a.at.duration_since(start).as_secs_f64(),
        interval_s: seconds,
        read_mb_s: b.sectors_read.saturating_sub(a.sectors_read) as f64 * 512.0 / 1e6 / seconds,
        write_mb_s: b.sectors_written.saturating_sub(a.sectors_written) as f64 * 512.0
            / 1e6
            / seconds,
        cpu_user_pct: cpu(0),
        cpu_system_pct: cpu(1),
        cpu_iowait_pct: cpu(2),
        cpu_idle_pct: cpu(3),
        context_switches_per_s: b.context_switches.saturating_sub(a.context_switches) as f64
            / seconds,
        page_cache_mb: b.page_cache_kb as f64 / 1e3,
        memory_used_mb: b.memory_used_kb as f64 / 1e3,
    }
}

/// The "major:minor" numbers of the block device under `path`, when it has one.
pub fn device_of(path: &Path) -> (String, Option<(u32, u32)>) {
    if datasets::files::is_remote(path) {
        return ("object storage (no block device)".into(), None);
    }
    let Some(fs) = crate::results::system::filesystem_of(path) else {
        return ("unknown".into(), None);
    };
    let numbers = fs
        .device_numbers
        .split_once(':')
        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)));
    // Major 0 is a virtual filesystem (tmpfs, overlay): no block device to count.
    match numbers {
        Some((0, _)) | None => (format!("{} (no block device)", fs.fs_type), None),
        Some(n) => (fs.device, Some(n)),
    }
}

/// A sampling thread for one phase.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    /// The counters at a restart, for the sampling thread to start from.
    restart: Arc<Mutex<Option<Counters>>>,
    /// The block device's numbers, for the counters a restart reads.
    device_numbers: Option<(u32, u32)>,
    handle: Option<JoinHandle<Vec<SystemSample>>>,
    pub device: String,
}

impl Sampler {
    /// Starts sampling the device under `data_dir` and the whole system, every `period`.
    pub fn start(data_dir: &Path, period: Duration) -> Sampler {
        let (name, device) = device_of(data_dir);
        let stop = Arc::new(AtomicBool::new(false));
        let restart: Arc<Mutex<Option<Counters>>> = Arc::default();
        let (flag, again) = (stop.clone(), restart.clone());
        let handle = std::thread::spawn(move || {
            let mut start = Instant::now();
            let mut previous = read_counters(device);
            let mut samples = Vec::new();
            let mut next = start + period;
            loop {
                let restarted = again.lock().unwrap_or_else(|e| e.into_inner()).take();
                if let Some(counters) = restarted {
                    samples.clear();
                    start = counters.at;
                    previous = counters;
                    next = start + period;
                }
                let stopping = flag.load(Ordering::Relaxed);
                if stopping || Instant::now() >= next {
                    let now = read_counters(device);
                    samples.push(interval(start, &previous, &now));
                    previous = now;
                    next += period;
                    if stopping {
                        return samples;
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Sampler {
            stop,
            restart,
            device_numbers: device,
            handle: Some(handle),
            device: name,
        }
    }

    /// What starts the intervals again from the moment it is called, dropping those before
    /// (an online phase's timed part begins after its loader process has started).
    pub fn restarter(&self) -> impl Fn() + Sync + use<> {
        let (restart, device) = (self.restart.clone(), self.device_numbers);
        move || {
            let counters = read_counters(device);
            *restart.lock().unwrap_or_else(|e| e.into_inner()) = Some(counters);
        }
    }

    /// Stops sampling and returns every interval, the last one ending now.
    pub fn finish(mut self) -> Vec<SystemSample> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The phase's mean device read rate (MB/s) and CPU busy share (%), weighted by each sample's
/// interval; absent when no time was sampled.
pub fn means(samples: &[SystemSample]) -> (Option<f64>, Option<f64>) {
    let seconds: f64 = samples.iter().map(|s| s.interval_s).sum();
    if seconds <= 0.0 {
        return (None, None);
    }
    let mean = |f: fn(&SystemSample) -> f64| {
        Some(samples.iter().map(|s| f(s) * s.interval_s).sum::<f64>() / seconds)
    };
    (mean(|s| s.read_mb_s), mean(SystemSample::cpu_busy_pct))
}

/// `samples.csv` rows of a phase: offline (no epoch) or an online epoch.
pub fn rows(
    run_id: &str,
    epoch: Option<u64>,
    device: &str,
    samples: &[SystemSample],
) -> Vec<SampleRow> {
    samples
        .iter()
        .map(|s| SampleRow {
            run_id: run_id.to_string(),
            epoch,
            phase: Phase::of(epoch),
            t_start_s: s.t_start_s,
            interval_s: s.interval_s,
            device: device.to_string(),
            read_mb_s: s.read_mb_s,
            write_mb_s: s.write_mb_s,
            cpu_user_pct: s.cpu_user_pct,
            cpu_system_pct: s.cpu_system_pct,
            cpu_iowait_pct: s.cpu_iowait_pct,
            cpu_idle_pct: s.cpu_idle_pct,
            context_switches_per_s: s.context_switches_per_s,
            page_cache_mb: s.page_cache_mb,
            memory_used_mb: s.memory_used_mb,
            cpu_busy_pct: s.cpu_busy_pct(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_phase_gets_one_row_and_a_long_one_a_row_per_period() {
        let dir = tempfile::tempdir().unwrap();
        let short = Sampler::start(dir.path(), Duration::from_millis(200));
        let rows = short.finish();
        assert_eq!(rows.len(), 1);
        let long = Sampler::start(dir.path(), Duration::from_millis(100));
        // Busy work, so CPU time moves.
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(450) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let rows = long.finish();
        assert!((4..=6).contains(&rows.len()), "{}", rows.len());
        let covered: f64 = rows.iter().map(|r| r.interval_s).sum();
        assert!((covered - 0.45).abs() < 0.1, "{covered}");
        let last = rows.last().unwrap();
        let total =
            last.cpu_user_pct + last.cpu_system_pct + last.cpu_iowait_pct + last.cpu_idle_pct;
        assert!(total <= 100.5, "{total}");
        assert!(rows.iter().all(|r| r.memory_used_mb > 0.0));
    }

    #[test]
    fn a_restart_drops_the_intervals_before_it() {
        // A loader's start (here: 350 ms idle, three 100 ms intervals) is not its epoch's.
        let dir = tempfile::tempdir().unwrap();
        let sampler = Sampler::start(dir.path(), Duration::from_millis(100));
        std::thread::sleep(Duration::from_millis(350));
        let restart = sampler.restarter();
        restart();
        let t = Instant::now();
        std::thread::sleep(Duration::from_millis(150));
        let rows = sampler.finish();
        let covered: f64 = rows.iter().map(|r| r.interval_s).sum();
        assert!(
            covered <= t.elapsed().as_secs_f64() + 0.01,
            "{covered} {rows:?}"
        );
        assert!(rows.first().is_some_and(|r| r.t_start_s == 0.0), "{rows:?}");
    }
}
