//! Atomic outputs: written to a temporary file beside the destination, flushed, renamed.

use crate::{Error, Result};
use std::fs::File;
use std::path::Path;

/// Writes `path` atomically: `write` gets the path of a new, empty temporary file in the same
/// folder and writes the whole output there (it may truncate or recreate that file, as the
/// HDF5 library does); then the temporary is flushed to disk and renamed to `path`, replacing
/// any file there. If `write` or the rename fails, the temporary is removed and `path` is left
/// as it was. The temporary is a hidden file named after the destination (`.NAME.XXXXXX.tmp`),
/// created with the permissions a new file usually gets.
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
    let name = path
        .file_name()
        .ok_or_else(|| Error::InvalidArgument(format!("output path {:?} names no file", path)))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(name);
    prefix.push(".");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // As `File::create` does: 0o666 less the umask (tempfile's default is 0o600).
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let tmp = builder.tempfile_in(dir).map_err(|e| io_error(dir, e))?;
    // On any error below, dropping `tmp` removes the temporary file.
    write(tmp.path())?;
    File::open(tmp.path())
        .and_then(|f| f.sync_all())
        .map_err(|e| io_error(path, e))?;
    tmp.persist(path).map_err(|e| io_error(path, e.error))?;
    Ok(())
}

pub(crate) fn io_error(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_owned(),
        source,
    }
}
