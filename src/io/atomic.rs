//! Atomic outputs: written to a temporary file beside the destination, flushed, renamed.

use crate::{Error, Result};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The temporaries being written now, so that a signal handler can remove them
/// ([`remove_pending_temporaries`]).
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Removes every temporary file that [`write_atomically`] is writing right now, so that a
/// program stopped by a signal leaves nothing behind; returns how many it removed. The
/// `clusterlab` binary calls it from its SIGINT and SIGTERM handler, then exits with 130 or 143.
/// (A program killed outright, SIGKILL, cannot clean up: the next [`write_atomically`] of the same
/// output removes what it left.)
pub fn remove_pending_temporaries() -> usize {
    // A poisoned lock still holds the paths: a panic elsewhere must not keep them on disk.
    let pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    pending
        .iter()
        .filter(|p| std::fs::remove_file(p).is_ok())
        .count()
}

/// Keeps `path` in [`PENDING`] while alive.
struct Registered(PathBuf);

impl Registered {
    fn new(path: &Path) -> Registered {
        PENDING
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(path.to_owned());
        Registered(path.to_owned())
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = pending.iter().position(|p| *p == self.0) {
            pending.swap_remove(i);
        }
    }
}

/// Removes the temporaries of `name` in `dir` that killed runs left: `.NAME.PID.XXXXXX.tmp`
/// whose process `PID` no longer runs (Linux: no `/proc/PID`). Temporaries of live processes —
/// another run writing the same output now — are left alone.
fn remove_stale(dir: &Path, name: &std::ffi::OsStr) {
    let proc_fs = Path::new("/proc/self").exists();
    let Some(name) = name.to_str() else { return };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!(".{name}.");
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(file) = file.to_str() else { continue };
        let Some(rest) = file
            .strip_prefix(&prefix)
            .and_then(|r| r.strip_suffix(".tmp"))
        else {
            continue;
        };
        let Some(pid) = rest.split('.').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let dead = proc_fs && !Path::new(&format!("/proc/{pid}")).exists();
        if dead {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Writes `path` atomically: `write` gets the path of a new, empty temporary file in the same
/// folder and writes the whole output there (it may truncate or recreate that file, as the
/// HDF5 library does); then the temporary is flushed to disk and renamed to `path`, replacing
/// any file there. If `write` or the rename fails, the temporary is removed and `path` is left
/// as it was. The temporary is a hidden file named after the destination and the writing
/// process (`.NAME.PID.XXXXXX.tmp`), created with the permissions a new file usually gets; while
/// it is written, [`remove_pending_temporaries`] can remove it (a signal handler does), and the
/// temporaries that killed runs left for the same output are removed first.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// let path = dir.path().join("table.csv");
/// clusterlab::io::write_atomically(&path, |tmp| {
///     std::fs::write(tmp, "label,size\n1,4\n")
///         .map_err(|source| clusterlab::Error::Io { path: tmp.to_owned(), source })
/// })?;
/// assert_eq!(std::fs::read_to_string(&path)?, "label,size\n1,4\n");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] when `path` names no file, [`Error::Io`] when the temporary
/// cannot be created, flushed or renamed (e.g. the folder does not exist), and whatever `write`
/// returns.
pub fn write_atomically<F>(path: &Path, write: F) -> Result<()>
where
    F: FnOnce(&Path) -> Result<()>,
{
    let pending = PendingFile::create(path)?;
    write(pending.path())?;
    pending.commit()
}

/// A temporary file beside its destination, for an output written in more than one step (one
/// that is filled in place through a memory map): [`write_atomically`]'s protocol, split. Dropped
/// without [`PendingFile::commit`], it is removed and the destination is left as it was.
pub(crate) struct PendingFile {
    tmp: tempfile::NamedTempFile,
    dest: PathBuf,
    _registered: Registered,
}

impl PendingFile {
    /// A new, empty temporary for `path` (the stale temporaries of killed runs removed first).
    pub(crate) fn create(path: &Path) -> Result<PendingFile> {
        let name = path.file_name().ok_or_else(|| {
            Error::InvalidArgument(format!("output path {:?} names no file", path))
        })?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        remove_stale(dir, name);
        let mut prefix = std::ffi::OsString::from(".");
        prefix.push(name);
        prefix.push(format!(".{}.", std::process::id()));
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            // As `File::create` does: 0o666 less the umask (tempfile's default is 0o600).
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let tmp = builder.tempfile_in(dir).map_err(|e| io_error(dir, e))?;
        let registered = Registered::new(tmp.path());
        Ok(PendingFile {
            tmp,
            dest: path.to_owned(),
            _registered: registered,
        })
    }

    /// The temporary's path.
    pub(crate) fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// The temporary, open for reading and writing.
    pub(crate) fn file(&self) -> &File {
        self.tmp.as_file()
    }

    /// Flushes the temporary to disk (with what was written through a shared memory map of
    /// it: `fsync` writes back every dirty page of the file) and renames it to the destination.
    pub(crate) fn commit(self) -> Result<()> {
        File::open(self.tmp.path())
            .and_then(|f| f.sync_all())
            .map_err(|e| io_error(&self.dest, e))?;
        self.tmp
            .persist(&self.dest)
            .map_err(|e| io_error(&self.dest, e.error))?;
        Ok(())
    }
}

pub(crate) fn io_error(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_owned(),
        source,
    }
}
