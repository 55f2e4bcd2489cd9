//! Advisory locks on what prepbench writes, so that two processes never write one results
//! folder or one store at once: an exclusive `flock` on a lock file beside what it guards,
//! holding who took it (process id, command line, time) so that the one refused can say who.
//!
//! A lock file is removed by its holder when it lets go. A process that opened it before the
//! removal may then lock a file no longer in the folder, so every taker checks, after locking,
//! that the path still names the file it locked, and starts again if not.
//!
//! Locks are per process and re-entrant: a sweep inside `reproduce` takes the results folder's
//! lock that `reproduce` already holds (a second `flock` from the same process on another open
//! file would block on itself).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::error::ResultsError;

/// The lock file of a results folder.
pub const FOLDER_LOCK: &str = ".prepbench.lock";

/// Lock files this process holds, with how many holders share each.
static HELD: Mutex<Option<HashMap<PathBuf, usize>>> = Mutex::new(None);

/// A held lock; dropped, it lets go.
#[derive(Debug)]
pub struct Lock {
    path: PathBuf,
    /// The locked file, for the first holder in this process; `None` for nested holders.
    file: Option<File>,
}

impl Drop for Lock {
    fn drop(&mut self) {
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        let map = held.get_or_insert_with(HashMap::new);
        if let Some(n) = map.get_mut(&self.path) {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.path);
            }
        }
        if self.file.is_some() {
            // Removed while still locked, then unlocked as the file closes.
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Whether to wait for a lock another process holds, or refuse at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Busy {
    Refuse,
    Wait,
}

/// Takes the lock of `what` (`the results folder DIR`) through the file `path`. When another
/// process holds it: with [`Busy::Refuse`] an error naming `what` and its holder; with
/// [`Busy::Wait`], `waiting` hears the holder once and the call waits for it.
pub fn take(
    path: &Path,
    what: &str,
    busy: Busy,
    waiting: &dyn Fn(&str),
) -> Result<Lock, ResultsError> {
    let key = absolute(path);
    {
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = held.get_or_insert_with(HashMap::new).get_mut(&key) {
            *n += 1;
            return Ok(Lock {
                path: key,
                file: None,
            });
        }
    }
    let mut told = false;
    let mut file = loop {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&key)
            .map_err(ResultsError::io(&key))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let holder = holder(&mut file);
                match busy {
                    Busy::Refuse => {
                        return Err(ResultsError::Conflict {
                            path: key.display().to_string(),
                            message: format!(
                                "{what} is in use by another prepbench ({holder}); wait for it \
                                 to finish or use another directory"
                            ),
                        })
                    }
                    Busy::Wait => {
                        if !told {
                            waiting(&format!("waiting for {what}, in use by {holder}"));
                            told = true;
                        }
                        file.lock().map_err(ResultsError::io(&key))?;
                    }
                }
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(ResultsError::io(&key)(e)),
        }
        // The holder before us may have removed the file after we opened it.
        let same = match (std::fs::metadata(&key), file.metadata()) {
            (Ok(on_disk), Ok(locked)) => {
                on_disk.dev() == locked.dev() && on_disk.ino() == locked.ino()
            }
            _ => false,
        };
        if same {
            break file;
        }
    };
    let line = format!(
        "pid {}, `{}`, since {}",
        std::process::id(),
        std::env::args().collect::<Vec<_>>().join(" "),
        super::manifest::utc_now()
    );
    file.set_len(0)
        .and_then(|()| file.write_all(line.as_bytes()))
        .map_err(ResultsError::io(&key))?;
    HELD.lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(key.clone(), 1);
    Ok(Lock {
        path: key,
        file: Some(file),
    })
}

/// The lock of the results folder `dir`, refused while another process holds it.
pub fn folder(dir: &Path) -> Result<Lock, ResultsError> {
    std::fs::create_dir_all(dir).map_err(ResultsError::io(dir))?;
    take(
        &dir.join(FOLDER_LOCK),
        &format!("the results folder {}", dir.display()),
        Busy::Refuse,
        &|_| {},
    )
}

/// Who holds the lock whose file is `file`, as the holder wrote it.
fn holder(file: &mut File) -> String {
    let mut text = String::new();
    let _ = file.rewind().and_then(|()| file.read_to_string(&mut text));
    let text = text.trim();
    if text.is_empty() {
        "a process that has not said who it is yet".into()
    } else {
        text.chars().take(300).collect()
    }
}

/// `path` made absolute, so that one lock has one key whatever the working directory.
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_lock_is_reentrant_here_refused_elsewhere_and_removed_when_let_go() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("out");
        let outer = folder(&dir).unwrap();
        // The same process again: nested, no deadlock.
        let inner = folder(&dir).unwrap();
        drop(inner);
        assert!(dir.join(FOLDER_LOCK).exists(), "still held by the outer");
        // Another open file description (as another process would have) is refused.
        let other = File::open(dir.join(FOLDER_LOCK)).unwrap();
        assert!(matches!(
            other.try_lock(),
            Err(std::fs::TryLockError::WouldBlock)
        ));
        let text = std::fs::read_to_string(dir.join(FOLDER_LOCK)).unwrap();
        assert!(
            text.contains(&format!("pid {}", std::process::id())),
            "{text}"
        );
        drop(outer);
        assert!(!dir.join(FOLDER_LOCK).exists());
        drop(other);
        // Taken again after it was let go.
        let again = folder(&dir).unwrap();
        drop(again);
    }
}
