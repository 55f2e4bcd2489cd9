//! Storage emulation: reads delayed until slower storage, described by a [`StorageProfile`],
//! would have served them. Each read is timed; when the local disk was faster than the profile
//! allows, the reader sleeps for the difference (never the other way: emulation only slows).
//!
//! Two shared links, each a token bucket without burst (a FIFO reservation clock), model the
//! profile's aggregate limits: streamed bytes at `aggregate_mb_s`, random requests at `iops`.
//! Each reader also has its own clock for `stream_mb_s` and per-request latency, so short reads
//! accumulate their delay and sleep once it is worth a sleep (sleeping per small read would
//! overshoot). Bytes the page cache already held when the file was opened are not delayed: a
//! warm epoch is as warm as it is locally. A profile's `cpu_ms_per_mb` (a filesystem client's
//! own CPU on this machine) is spent by the reading thread, on the CPU, once a read's bytes
//! have arrived: it competes for the cores as the client's work would.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use workloads::{ReadFiles, StorageProfile};

use crate::measure::cache;

/// Delays shorter than this are carried to the reader's next read instead of slept.
const MIN_SLEEP: Duration = Duration::from_millis(2);

/// The shared state of one emulated storage over one epoch.
#[derive(Debug)]
pub struct Throttle {
    profile: StorageProfile,
    origin: Instant,
    links: Mutex<Links>,
    /// Nanoseconds readers slept to match the profile.
    delayed_nanos: AtomicU64,
    page: usize,
}

/// When each shared link is next free, in seconds since `origin`.
#[derive(Debug, Default)]
struct Links {
    bytes_free_at: f64,
    requests_free_at: f64,
}

/// One reader's clock: when its own reads are done, in seconds since the throttle's origin.
#[derive(Debug, Default)]
struct Cursor {
    due: f64,
}

impl Throttle {
    /// A throttle for `profile`, or `None` when the profile emulates nothing.
    pub fn new(profile: &StorageProfile) -> Option<Arc<Throttle>> {
        (!profile.is_passthrough()).then(|| {
            Arc::new(Throttle {
                profile: profile.clone(),
                origin: Instant::now(),
                links: Mutex::new(Links::default()),
                delayed_nanos: AtomicU64::new(0),
                page: cache::page_size(),
            })
        })
    }

    /// Seconds readers have slept so far to match the profile.
    pub fn delayed_seconds(&self) -> f64 {
        self.delayed_nanos.load(Ordering::Relaxed) as f64 / 1e9
    }

    fn seconds(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.origin).as_secs_f64()
    }

    fn is_small(&self, file_len: u64) -> bool {
        (file_len as f64) < self.profile.small_file_kb * 1024.0
    }

    /// Schedules a read that began at `begin` of `bytes` from the device, of a file of
    /// `file_len` bytes (`first`: the file's first read from the device), on the reader's
    /// `cursor`; returns when the profile would have finished it.
    fn schedule(
        &self,
        cursor: &mut Cursor,
        begin: Instant,
        bytes: u64,
        file_len: u64,
        first: bool,
    ) -> f64 {
        let now = self.seconds(begin);
        let start = now.max(cursor.due);
        if bytes == 0 {
            return start;
        }
        let p = &self.profile;
        let latency = p.latency_ms / 1000.0;
        let mut links = self.links.lock().unwrap_or_else(|e| e.into_inner());
        let done = if self.is_small(file_len) {
            let requests = (bytes as f64 / (p.request_kb * 1024.0)).ceil();
            let own = start + requests * latency;
            match p.iops {
                Some(iops) => {
                    let link_start = start.max(links.requests_free_at);
                    links.requests_free_at = link_start + requests / iops;
                    own.max(links.requests_free_at)
                }
                None => own,
            }
        } else {
            let mut own = start + if first { latency } else { 0.0 };
            if let Some(mb) = p.stream_mb_s {
                own += bytes as f64 / (mb * 1e6);
            }
            match p.aggregate_mb_s {
                Some(mb) => {
                    let link_start = start.max(links.bytes_free_at);
                    links.bytes_free_at = link_start + bytes as f64 / (mb * 1e6);
                    own.max(links.bytes_free_at)
                }
                None => own,
            }
        };
        drop(links);
        cursor.due = done;
        done
    }

    /// Sleeps until `due` (seconds since origin) when that is at least `min` away, or always
    /// when `min` is zero.
    fn wait(&self, due: f64, min: Duration) {
        // Profiles are range-checked, so `due` is finite; a clock overflow is no delay to wait.
        let Some(target) = Duration::try_from_secs_f64(due)
            .ok()
            .and_then(|d| self.origin.checked_add(d))
        else {
            return;
        };
        let Some(left) = target.checked_duration_since(Instant::now()) else {
            return;
        };
        if left >= min || min.is_zero() {
            std::thread::sleep(left);
            self.delayed_nanos
                .fetch_add(left.as_nanos() as u64, Ordering::Relaxed);
        }
    }

    /// Spends on this thread's CPU what the profile's filesystem client spends on `bytes`
    /// read from the device (its `cpu_ms_per_mb`), counted in the thread's CPU time, so that a
    /// busy machine stretches it as it would the client's work.
    fn charge_cpu(&self, bytes: u64) {
        if self.profile.cpu_ms_per_mb <= 0.0 || bytes == 0 {
            return;
        }
        let seconds = self.profile.cpu_ms_per_mb / 1e3 * bytes as f64 / 1e6;
        let Some(start) = thread_cpu_seconds() else {
            return;
        };
        let until = start + seconds;
        while thread_cpu_seconds().is_some_and(|now| now < until) {
            std::hint::spin_loop();
        }
    }

    /// The share of `file`'s bytes not in the page cache now, 0 to 1.
    fn uncached(&self, file: &File, path: &Path) -> std::io::Result<f64> {
        let r = cache::open_file_residency(file, path, self.page)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(if r.total_pages == 0 {
            0.0
        } else {
            1.0 - r.resident_pages as f64 / r.total_pages as f64
        })
    }

    /// Opens `path` for reading through this throttle.
    pub fn open(self: &Arc<Throttle>, path: &Path) -> std::io::Result<ThrottledFile> {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        let uncached = self.uncached(&file, path)?;
        Ok(ThrottledFile {
            file,
            throttle: self.clone(),
            cursor: Cursor::default(),
            len,
            uncached,
            first: true,
            pos: 0,
        })
    }
}

impl ReadFiles for Throttle {
    /// Reads a whole file (a raw dataset file) and waits until the profile would have.
    fn read_file(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        let begin = Instant::now();
        let mut file = File::open(path)?;
        let len = file.metadata()?.len();
        let uncached = self.uncached(&file, path)?;
        let mut bytes = Vec::with_capacity(len as usize);
        file.read_to_end(&mut bytes)?;
        let fresh = (bytes.len() as f64 * uncached).round() as u64;
        let due = self.schedule(&mut Cursor::default(), begin, fresh, len, true);
        self.wait(due, Duration::ZERO);
        self.charge_cpu(fresh);
        Ok(bytes)
    }

    /// Reads a range of a file (a WebDataset sample in its shard), scheduled as a streamed read
    /// of that many bytes; the share of the whole file not in the page cache stands for the
    /// range's.
    fn read_range(&self, path: &Path, offset: u64, length: u64) -> std::io::Result<Vec<u8>> {
        let begin = Instant::now();
        let file = File::open(path)?;
        let uncached = self.uncached(&file, path)?;
        let bytes = workloads::storage::read_range_of(&file, path, offset, length)?;
        let fresh = (bytes.len() as f64 * uncached).round() as u64;
        let due = self.schedule(&mut Cursor::default(), begin, fresh, length, true);
        self.wait(due, Duration::ZERO);
        self.charge_cpu(fresh);
        Ok(bytes)
    }
}

/// The calling thread's CPU time in seconds (`None` where the clock cannot be read).
fn thread_cpu_seconds() -> Option<f64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9)
}

/// A file read through a [`Throttle`]: every `read` is scheduled on the reader's clock; the delay
/// is slept once it is worth a sleep, and in full at the end of the file.
pub struct ThrottledFile {
    file: File,
    throttle: Arc<Throttle>,
    cursor: Cursor,
    len: u64,
    /// Share of the file not in the page cache when it was opened.
    uncached: f64,
    first: bool,
    /// Where the next read starts.
    pos: u64,
}

/// A read of a [`ThrottledFile`] by offset ([`ThrottledFile::read_at`]) that starts within this
/// many bytes of where the last ended goes on with the same request stream: a kernel's
/// readahead asks for a file's next pieces out of order, which a network filesystem serves as
/// one stream, not as a new request per piece.
const SAME_STREAM: u64 = 1 << 20;

impl ThrottledFile {
    /// Goes to byte `offset` of the file (a reader going on at a restart): what it reads from
    /// there is delayed as any read, its first as a new request.
    pub fn seek_to(&mut self, offset: u64) -> std::io::Result<()> {
        use std::io::{Seek, SeekFrom};
        self.file.seek(SeekFrom::Start(offset))?;
        self.first = true;
        self.pos = offset;
        Ok(())
    }

    /// Whether its reads go through `throttle`.
    pub fn goes_through(&self, throttle: &Arc<Throttle>) -> bool {
        Arc::ptr_eq(&self.throttle, throttle)
    }

    /// Reads up to `buf.len()` bytes from byte `offset` (a read another process asked for, as
    /// a FUSE view's are), each delayed as `read`'s: from further than [`SAME_STREAM`] from
    /// where the last read ended, as a new request. A read that reaches the end of the file
    /// pays whatever is still owed, as `read` does there.
    pub fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        if offset.abs_diff(self.pos) > SAME_STREAM {
            self.first = true;
        }
        let begin = Instant::now();
        let n = read_full_at(&self.file, offset, buf)?;
        self.pos = offset + n as u64;
        self.account(begin, n, self.pos >= self.len);
        Ok(n)
    }

    /// Schedules `n` bytes read since `begin` and waits for them: in full at the end of the
    /// file (`end`), else once the delay is worth a sleep.
    fn account(&mut self, begin: Instant, n: usize, end: bool) {
        let fresh = (n as f64 * self.uncached).round() as u64;
        let due = self.throttle.schedule(
            &mut self.cursor,
            begin,
            fresh,
            self.len,
            self.first && fresh > 0,
        );
        if fresh > 0 {
            self.first = false;
        }
        let min = if end { Duration::ZERO } else { MIN_SLEEP };
        self.throttle.wait(due, min);
        self.throttle.charge_cpu(fresh);
    }
}

impl Read for ThrottledFile {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let begin = Instant::now();
        let n = self.file.read(buf)?;
        self.pos += n as u64;
        // At the end of the file, pay whatever is still owed.
        self.account(begin, n, n == 0);
        Ok(n)
    }
}

/// Reads up to `buf.len()` bytes of `file` from `offset`, fewer only at its end.
pub fn read_full_at(file: &File, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut filled = 0;
    while filled < buf.len() {
        match file.read_at(&mut buf[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> StorageProfile {
        let mut p = StorageProfile::local();
        p.name = "test".into();
        p
    }

    #[test]
    fn local_profile_makes_no_throttle() {
        assert!(Throttle::new(&StorageProfile::local()).is_none());
        assert!(Throttle::new(&StorageProfile::paper_ceph_hdd()).is_some());
    }

    #[test]
    fn small_files_pay_latency_per_request_and_share_the_iops() {
        let mut p = profile();
        p.latency_ms = 1.0;
        p.iops = Some(1000.0);
        let t = Throttle::new(&p).unwrap();
        let begin = t.origin;
        // 40 KiB = 10 requests of 4 KiB: 10 ms on the reader, 10 ms of the link.
        let mut a = Cursor::default();
        let done = t.schedule(&mut a, begin, 40 * 1024, 40 * 1024, true);
        assert!((done - 0.010).abs() < 1e-9, "{done}");
        // A second reader at the same moment waits for the link: 10 more requests.
        let mut b = Cursor::default();
        let done = t.schedule(&mut b, begin, 40 * 1024, 40 * 1024, true);
        assert!((done - 0.020).abs() < 1e-9, "{done}");
    }

    #[test]
    fn large_files_stream_at_the_slower_of_reader_and_link() {
        let mut p = profile();
        p.stream_mb_s = Some(100.0);
        p.aggregate_mb_s = Some(150.0);
        p.latency_ms = 5.0;
        let t = Throttle::new(&p).unwrap();
        let begin = t.origin;
        let len = 100_000_000;
        let mut a = Cursor::default();
        // 10 MB: 5 ms + 100 ms on the reader; the link alone would take 66.7 ms.
        let first = t.schedule(&mut a, begin, 10_000_000, len, true);
        assert!((first - 0.105).abs() < 1e-9, "{first}");
        // The next read continues from the reader's clock, without another latency.
        let second = t.schedule(&mut a, begin, 10_000_000, len, false);
        assert!((second - 0.205).abs() < 1e-9, "{second}");
        // Two readers share 150 MB/s: a third read queued on the link finishes after it.
        let mut b = Cursor::default();
        let other = t.schedule(&mut b, begin, 10_000_000, len, true);
        assert!(other > 0.19, "{other}");
    }

    #[test]
    fn cached_files_are_not_delayed_and_cold_ones_are() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        std::fs::write(&path, vec![7u8; 64 * 1024]).unwrap();
        let mut p = profile();
        p.latency_ms = 20.0;
        let t = Throttle::new(&p).unwrap();
        // Just written and prefetched: resident, so no delay.
        cache::prefetch(std::slice::from_ref(&path)).unwrap();
        assert_eq!(t.read_file(&path).unwrap().len(), 64 * 1024);
        assert!(t.delayed_seconds() < 0.005, "{}", t.delayed_seconds());
        // Evicted (where the kernel allows it): 16 requests of 20 ms.
        let ev = cache::evict(std::slice::from_ref(&path), cache::EvictPolicy::Fadvise).unwrap();
        if ev.after.pct() < 1.0 {
            let start = Instant::now();
            t.read_file(&path).unwrap();
            assert!(start.elapsed() >= Duration::from_millis(320));
        }
    }

    /// A filesystem client's CPU is spent on the reading thread's CPU, for the bytes that came
    /// from the device only (measured in thread CPU time, not wall time, so a busy machine
    /// does not move it).
    #[test]
    fn a_client_cpu_cost_is_spent_on_the_readers_cpu() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        std::fs::write(&path, vec![1u8; 100_000]).unwrap();
        let mut p = profile();
        p.cpu_ms_per_mb = 300.0;
        let t = Throttle::new(&p).unwrap();
        let cpu_of_a_read = || {
            let before = thread_cpu_seconds().unwrap();
            t.read_file(&path).unwrap();
            thread_cpu_seconds().unwrap() - before
        };
        // 0.1 MB at 300 ms per MB would be 30 ms of this thread's CPU: cached bytes cost none.
        cache::prefetch(std::slice::from_ref(&path)).unwrap();
        let cached = cpu_of_a_read();
        assert!(cached < 0.010, "cached bytes cost no client CPU: {cached}");
        let ev = cache::evict(std::slice::from_ref(&path), cache::EvictPolicy::Fadvise).unwrap();
        if ev.after.pct() < 1.0 {
            // At least 99 % of it from the device: 29.7 to 30 ms of client CPU, plus the read.
            let spent = cpu_of_a_read();
            assert!((0.0294..0.060).contains(&spent), "{spent}");
        }
    }

    #[test]
    fn throttled_reads_return_the_bytes_and_pay_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.bin");
        let data: Vec<u8> = (0..3_000_000u32).map(|i| i as u8).collect();
        std::fs::write(&path, &data).unwrap();
        cache::evict(std::slice::from_ref(&path), cache::EvictPolicy::Fadvise).unwrap();
        let mut p = profile();
        p.stream_mb_s = Some(100.0);
        let t = Throttle::new(&p).unwrap();
        let mut f = t.open(&path).unwrap();
        let uncached = f.uncached;
        let start = Instant::now();
        let mut back = Vec::new();
        f.read_to_end(&mut back).unwrap();
        assert_eq!(back, data);
        // 3 MB at 100 MB/s is 30 ms for the share that was not cached.
        let expect = 0.030 * uncached;
        assert!(
            start.elapsed().as_secs_f64() >= expect * 0.95,
            "{:?}",
            start.elapsed()
        );
    }

    /// Store size does not move the emulated figures (issue 41 measured CV's `concatenated`,
    /// `resized` and `pixel-centered` under paper-ceph-hdd at 300 and 1200 samples within 5.2
    /// %). Under the profile's schedule, two readers reading a store of 16 shards in 1 MiB
    /// reads spend per sample its bytes at the stream rate plus their shards' first-read
    /// latency spread over the samples, nothing else: 1200 samples take 4.5 % less per
    /// sample than 304 (whole shards) of 110 KB records, 3.4 % of 150 KB and 0.9 % of 600 KB.
    #[test]
    fn store_size_moves_the_time_per_sample_by_the_shards_latency_alone() {
        let profile = StorageProfile::paper_ceph_hdd();
        let (shards, readers, chunk) = (16u64, 2usize, 1u64 << 20);
        let per_sample = |samples: u64, each: u64| -> f64 {
            let t = Throttle::new(&profile).unwrap();
            let shard = samples * each / shards;
            let mut cursors: Vec<Cursor> = (0..readers).map(|_| Cursor::default()).collect();
            let mut done: f64 = 0.0;
            // Round by round each reader reads its next shard, the readers' reads interleaved
            // as they run side by side.
            for _ in 0..shards / readers as u64 {
                let mut at = 0;
                while at < shard {
                    let n = chunk.min(shard - at);
                    for cursor in cursors.iter_mut() {
                        done = done.max(t.schedule(cursor, t.origin, n, shard, at == 0));
                    }
                    at += n;
                }
            }
            done / samples as f64
        };
        let latency = profile.latency_ms / 1000.0;
        let stream = profile.stream_mb_s.unwrap() * 1e6;
        for each in [110_000u64, 150_528, 602_112] {
            for samples in [304u64, 1200] {
                let model = (shards as f64 / readers as f64) * latency / samples as f64
                    + each as f64 / (readers as f64 * stream);
                let got = per_sample(samples, each);
                assert!(
                    (got / model - 1.0).abs() < 1e-6,
                    "{each} B x {samples}: {got} {model}"
                );
            }
            let ratio = per_sample(1200, each) / per_sample(304, each);
            assert!((0.95..=1.0).contains(&ratio), "{each} B: {ratio}");
        }
    }
}
