//! Emulated storage for loaders that read in a process of their own (tf.data, PyTorch's
//! DataLoader): a read-only view of a folder through FUSE, served by prepbench's process,
//! whose reads go through the epoch's [`Throttle`] as prepbench's own reader's do. The loader
//! reads the view's path instead of the folder; its reads reach the kernel, then this process,
//! which reads the folder and delays each read until the profile would have served it. The
//! view's CPU is prepbench's process's, counted in the run's; the kernel's round trip per read
//! (up to 128 KiB) is the view's own cost, which no network filesystem client is without.
//!
//! A view is mounted once per folder and process, in a folder of its own under the temporary
//! directory, and stays for the command (a loader kept idle between runs holds its paths); an
//! epoch sets its throttle on the views it reads ([`throttling`]) and clears it when done.
//! [`retire`] unmounts them at the end of a command; one left by a process that died is
//! unmounted by the next that mounts a view.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use fuser::{
    AccessFlags, BackgroundSession, Config, Errno, FileHandle, FileType, FopenFlags, Generation,
    INodeNo, MountOption, OpenAccMode, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, Request,
};

use crate::measure::emulate::{read_full_at, Throttle, ThrottledFile};

/// The name views are mounted under (`mount` shows it) and their folders' prefix.
const NAME: &str = "prepbench-view";

/// How long the kernel may keep what a view said of a name and of a file's attributes: an
/// epoch's start drops the files' attributes with their data ([`Mounted::forget_cached`]), and
/// inodes are paths, so a store made again between runs is seen as it is now. Shorter, every
/// epoch of a thousand small files looked each up again (a round trip each).
const TTL: Duration = Duration::from_secs(60);

/// Threads serving a view's requests: a read sleeps until the profile would have served it,
/// so the loader's readers and the kernel's readahead each need one.
const SERVERS: usize = 32;

/// The throttle a view's reads go through now (`None`: between epochs, unthrottled).
type Current = Arc<Mutex<Option<Arc<Throttle>>>>;

struct Mounted {
    path: PathBuf,
    current: Current,
    inodes: Arc<Mutex<Inodes>>,
    session: BackgroundSession,
}

impl Mounted {
    /// Drops what the kernel cached of the view's files: an epoch reads them through the view
    /// (from the folder's page cache or through the throttle), never from the view's own
    /// cache, which eviction does not reach, even where a loader keeps them open across epochs.
    fn forget_cached(&self) {
        let count = self
            .inodes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .paths
            .len();
        let notifier = self.session.notifier();
        for ino in 1..=count as u64 {
            // An inode the kernel has forgotten has nothing cached: ENOENT is no error here.
            drop(notifier.inval_inode(INodeNo(ino), 0, 0));
        }
    }
}

/// The views this process mounted, by the folder each shows.
static VIEWS: Mutex<Vec<(PathBuf, Mounted)>> = Mutex::new(Vec::new());

/// Why no view can be mounted here (no `/dev/fuse`, no right to mount), asked once by mounting
/// one of an empty folder; `None` when one can.
pub fn refusal() -> Option<String> {
    static PROBE: OnceLock<Option<String>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            let probe = std::env::temp_dir().join(format!("{NAME}-{}-probe", std::process::id()));
            let result = std::fs::create_dir_all(&probe)
                .map_err(|e| format!("{}: {e}", probe.display()))
                .and_then(|()| mount(&probe).map(unmount));
            drop(std::fs::remove_dir_all(&probe));
            result.err().map(|e| {
                format!(
                    "reads emulated storage (--storage) through a FUSE view of the store, which \
                     cannot be mounted here ({e}); run it with --loader native, or where FUSE \
                     works (/dev/fuse, and root or fusermount3)"
                )
            })
        })
        .clone()
}

/// The path of the view of `folder` (mounted now if it is not yet).
pub fn path(folder: &Path) -> Result<PathBuf, String> {
    with_view(folder, |m| m.path.clone())
}

/// `f` of the view of `folder`, mounted now if it is not yet.
fn with_view<T>(folder: &Path, f: impl FnOnce(&Mounted) -> T) -> Result<T, String> {
    let mut views = VIEWS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, m)) = views.iter().find(|(f, _)| f == folder) {
        return Ok(f(m));
    }
    let mounted = mount(folder)?;
    let result = f(&mounted);
    views.push((folder.to_path_buf(), mounted));
    Ok(result)
}

/// While it lives, reads of the views of its folders go through its throttle.
pub struct Throttling {
    currents: Vec<Current>,
}

impl Drop for Throttling {
    fn drop(&mut self) {
        for current in &self.currents {
            *current.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }
}

/// Reads of the views of `folders` (mounted now where they are not yet) go through `throttle`
/// until the result is dropped.
pub fn throttling(folders: &[&Path], throttle: &Arc<Throttle>) -> Result<Throttling, String> {
    let currents = folders.iter().map(|folder| {
        with_view(folder, |m| {
            *m.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(throttle.clone());
            m.forget_cached();
            m.current.clone()
        })
    });
    Ok(Throttling {
        currents: currents.collect::<Result<_, _>>()?,
    })
}

/// Unmounts every view this process mounted (at the end of a command) and removes its folder.
pub fn retire() {
    let views = std::mem::take(&mut *VIEWS.lock().unwrap_or_else(|e| e.into_inner()));
    for (_, m) in views {
        unmount(m);
    }
    // And those of a command killed before it could (Ctrl-C): any later command removes them.
    unmount_orphans();
}

/// Unmounts the view of `folder`, if this process mounted one.
#[cfg(test)]
fn unmount_view(folder: &Path) {
    let mut views = VIEWS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = views.iter().position(|(f, _)| f == folder) {
        unmount(views.remove(i).1);
    }
}

/// Unmounts `m` and removes its folder.
fn unmount(m: Mounted) {
    drop(m.session.umount_and_join());
    drop(std::fs::remove_dir(&m.path));
}

/// Mounts a view of `folder` in a new folder of its own.
fn mount(folder: &Path) -> Result<Mounted, String> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static SWEPT: OnceLock<()> = OnceLock::new();
    SWEPT.get_or_init(unmount_orphans);
    let root = std::fs::canonicalize(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("{NAME}-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let current: Current = Arc::default();
    let fs = View::new(root, current.clone());
    let inodes = fs.inodes.clone();
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::RO,
        MountOption::FSName(NAME.into()),
        MountOption::Subtype(NAME.into()),
        MountOption::DefaultPermissions,
        MountOption::NoDev,
        MountOption::NoSuid,
        MountOption::NoAtime,
    ];
    config.n_threads = Some(SERVERS);
    config.clone_fd = true;
    match fuser::spawn_mount2(fs, &path, &config) {
        Ok(session) => Ok(Mounted {
            path,
            current,
            inodes,
            session,
        }),
        Err(e) => {
            drop(std::fs::remove_dir(&path));
            Err(format!("mounting a FUSE view at {}: {e}", path.display()))
        }
    }
}

/// Whether `name` is `prefix`, a process id and a dash (a view's folder, a loader's temporary
/// folder), that id no process has now: left by a prepbench that was killed.
pub(crate) fn left_by_a_dead_process(name: &str, prefix: &str) -> bool {
    let pid = (name.strip_prefix(prefix))
        .and_then(|rest| rest.split_once('-'))
        .and_then(|(pid, _)| pid.parse::<u32>().ok());
    pid.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists())
}

/// Unmounts the views a process that is gone left mounted (killed before [`retire`]), and
/// removes the folders such processes left.
fn unmount_orphans() {
    let prefix = format!("{NAME}-");
    let orphan = |name: &str| left_by_a_dead_process(name, &prefix);
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for line in mounts.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(dash) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        // `fuse` (mounted by mount(2)) or `fuse.prepbench-view`, its source the view's name.
        let (kind, source) = (fields.get(dash + 1), fields.get(dash + 2));
        let ours = kind.is_some_and(|k| k.starts_with("fuse")) && source == Some(&NAME);
        let Some(point) = fields.get(4).map(Path::new).filter(|_| ours) else {
            continue;
        };
        if point
            .file_name()
            .and_then(OsStr::to_str)
            .is_some_and(orphan)
        {
            let Ok(c) = std::ffi::CString::new(point.as_os_str().as_encoded_bytes()) else {
                continue;
            };
            // SAFETY: umount2 reads a NUL-terminated path. Detached: a process still in the
            // view is not hung; the mount goes once it leaves.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
    }
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name().to_str().is_some_and(orphan) {
            // Only an empty folder goes: one that is no longer a mount point.
            drop(std::fs::remove_dir(entry.path()));
        }
    }
}

/// The filesystem a view serves: `root`'s tree, read-only.
struct View {
    root: PathBuf,
    current: Current,
    inodes: Arc<Mutex<Inodes>>,
    files: Mutex<HashMap<u64, Arc<Mutex<Handle>>>>,
    listings: Mutex<HashMap<u64, Listing>>,
    next_handle: AtomicU64,
}

/// An open folder's entries: inode, kind and name, `.` and `..` first.
type Listing = Vec<(u64, FileType, OsString)>;

/// Inode `n` is the path `paths[n - 1]` below the root (the root's is empty).
struct Inodes {
    paths: Vec<PathBuf>,
    numbers: HashMap<PathBuf, u64>,
}

/// A file the loader opened: its path, and how it reads now.
struct Handle {
    full: PathBuf,
    open: Open,
}

enum Open {
    Plain(File),
    Throttled(Box<ThrottledFile>),
}

impl Open {
    /// `full` opened to read through `throttle`, or plainly between epochs.
    fn new(full: &Path, throttle: Option<Arc<Throttle>>) -> std::io::Result<Open> {
        match throttle {
            Some(t) => t.open(full).map(|f| Open::Throttled(Box::new(f))),
            None => File::open(full).map(Open::Plain),
        }
    }

    /// Whether it reads through `throttle` (`None`: plainly).
    fn reads_through(&self, throttle: Option<&Arc<Throttle>>) -> bool {
        match (self, throttle) {
            (Open::Plain(_), None) => true,
            (Open::Throttled(f), Some(t)) => f.goes_through(t),
            _ => false,
        }
    }
}

impl View {
    fn new(root: PathBuf, current: Current) -> View {
        let inodes = Inodes {
            paths: vec![PathBuf::new()],
            numbers: HashMap::from([(PathBuf::new(), 1)]),
        };
        View {
            root,
            current,
            inodes: Arc::new(Mutex::new(inodes)),
            files: Mutex::default(),
            listings: Mutex::default(),
            next_handle: AtomicU64::new(1),
        }
    }

    /// The path below the root of inode `ino`.
    fn relative(&self, ino: INodeNo) -> Option<PathBuf> {
        let inodes = self.inodes.lock().unwrap_or_else(|e| e.into_inner());
        let index = usize::try_from(ino.0).ok()?.checked_sub(1)?;
        inodes.paths.get(index).cloned()
    }

    /// The inode of `relative`, given one now if it has none.
    fn inode(&self, relative: &Path) -> u64 {
        let mut inodes = self.inodes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&n) = inodes.numbers.get(relative) {
            return n;
        }
        inodes.paths.push(relative.to_path_buf());
        let n = inodes.paths.len() as u64;
        inodes.numbers.insert(relative.to_path_buf(), n);
        n
    }

    /// What the view shows of `relative`: a link to a file or to a folder within the root as
    /// what it links to (read through the view); a link to a folder outside the root, or to
    /// nothing, as a link (a walk that does not follow links out of its root leaves it).
    fn meta(&self, relative: &Path) -> std::io::Result<std::fs::Metadata> {
        let full = self.root.join(relative);
        let own = std::fs::symlink_metadata(&full)?;
        let meta = if own.file_type().is_symlink() {
            match std::fs::metadata(&full) {
                Ok(to) if to.is_file() => to,
                Ok(to) if to.is_dir() && self.within(&full) => to,
                _ => own,
            }
        } else {
            own
        };
        Ok(meta)
    }

    fn within(&self, full: &Path) -> bool {
        std::fs::canonicalize(full).is_ok_and(|c| c.starts_with(&self.root))
    }

    /// The throttle reads go through now (`None`: between epochs).
    fn throttle(&self) -> Option<Arc<Throttle>> {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn handle(&self) -> u64 {
        self.next_handle.fetch_add(1, Ordering::Relaxed)
    }
}

fn errno(e: &std::io::Error) -> Errno {
    e.raw_os_error().map_or(Errno::EIO, Errno::from_i32)
}

impl fuser::Filesystem for View {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let Some(dir) = self.relative(parent) else {
            return reply.error(Errno::ENOENT);
        };
        let relative = dir.join(name);
        // A name is one plain component: nothing the kernel sends leaves the root.
        let plain = name != "." && name != "..";
        if !plain || relative.components().count() != dir.components().count() + 1 {
            return reply.error(Errno::ENOENT);
        }
        // An inode is given only to a name that exists.
        match self.meta(&relative) {
            Ok(meta) => {
                let attr = file_attr(self.inode(&relative), &meta);
                reply.entry(&TTL, &attr, Generation(0));
            }
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let Some(relative) = self.relative(ino) else {
            return reply.error(Errno::ENOENT);
        };
        match self.meta(&relative) {
            Ok(meta) => reply.attr(&TTL, &file_attr(ino.0, &meta)),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let Some(relative) = self.relative(ino) else {
            return reply.error(Errno::ENOENT);
        };
        match std::fs::read_link(self.root.join(relative)) {
            Ok(to) => reply.data(to.as_os_str().as_encoded_bytes()),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if flags.acc_mode() != OpenAccMode::O_RDONLY {
            return reply.error(Errno::EROFS);
        }
        let Some(relative) = self.relative(ino) else {
            return reply.error(Errno::ENOENT);
        };
        let full = self.root.join(relative);
        match Open::new(&full, self.throttle()) {
            Ok(open) => {
                let fh = self.handle();
                let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
                files.insert(fh, Arc::new(Mutex::new(Handle { full, open })));
                // Without FOPEN_KEEP_CACHE the kernel drops what it cached of the file at each
                // open: an epoch reads through the view, not from the view's own page cache.
                reply.opened(FileHandle(fh), FopenFlags::empty());
            }
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<fuser::LockOwner>,
        reply: ReplyData,
    ) {
        let open = self
            .files
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&fh.0)
            .cloned();
        let Some(open) = open else {
            return reply.error(Errno::EBADF);
        };
        let mut buf = vec![0u8; size as usize];
        let mut handle = open.lock().unwrap_or_else(|e| e.into_inner());
        // A file kept open across epochs (a loader's handles held from one to the next) reads
        // through the throttle of the epoch it is read in, as the folder's own would.
        let throttle = self.throttle();
        if !handle.open.reads_through(throttle.as_ref()) {
            match Open::new(&handle.full, throttle) {
                Ok(open) => handle.open = open,
                Err(e) => return reply.error(errno(&e)),
            }
        }
        let read = match &mut handle.open {
            Open::Throttled(f) => f.read_at(offset, &mut buf),
            Open::Plain(f) => read_full_at(f, offset, &mut buf),
        };
        match read {
            Ok(n) => reply.data(&buf[..n]),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<fuser::LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.files
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&fh.0);
        reply.ok();
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let Some(relative) = self.relative(ino) else {
            return reply.error(Errno::ENOENT);
        };
        let parent = relative.parent().map_or(1, |p| self.inode(p));
        let mut listing = vec![
            (ino.0, FileType::Directory, OsString::from(".")),
            (parent, FileType::Directory, OsString::from("..")),
        ];
        let entries = match std::fs::read_dir(self.root.join(&relative)) {
            Ok(entries) => entries,
            Err(e) => return reply.error(errno(&e)),
        };
        let mut named: Listing = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let child = relative.join(entry.file_name());
                let kind = kind_of(self.meta(&child).ok()?.file_type());
                Some((self.inode(&child), kind, entry.file_name()))
            })
            .collect();
        named.sort_by(|a, b| a.2.cmp(&b.2));
        listing.extend(named);
        let fh = self.handle();
        (self.listings.lock().unwrap_or_else(|e| e.into_inner())).insert(fh, listing);
        reply.opened(FileHandle(fh), FopenFlags::empty());
    }

    fn readdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let listings = self.listings.lock().unwrap_or_else(|e| e.into_inner());
        let Some(listing) = listings.get(&fh.0) else {
            return reply.error(Errno::EBADF);
        };
        let skip = usize::try_from(offset).unwrap_or(usize::MAX);
        for (i, (ino, kind, name)) in listing.iter().enumerate().skip(skip) {
            if reply.add(INodeNo(*ino), i as u64 + 1, *kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        (self.listings.lock().unwrap_or_else(|e| e.into_inner())).remove(&fh.0);
        reply.ok();
    }

    fn access(&self, _req: &Request, _ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        if mask.contains(AccessFlags::W_OK) {
            reply.error(Errno::EROFS);
        } else {
            reply.ok();
        }
    }
}

mod attr;
use attr::{file_attr, kind_of};

#[cfg(test)]
mod tests;
