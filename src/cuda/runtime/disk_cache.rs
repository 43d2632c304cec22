//! A persistent on-disk cache of compiled kernels, so that a second process (a second CLI run)
//! compiles nothing.
//!
//! - **Where:** `$CLUSTERLAB_KERNEL_CACHE` when it names a folder; else
//!   `$XDG_CACHE_HOME/clusterlab/kernels`, else `$HOME/.cache/clusterlab/kernels`. Setting
//!   `CLUSTERLAB_KERNEL_CACHE` to `off` (or `0`, or empty) turns the cache off.
//! - **Key:** a 128-bit FNV-1a hash of the crate version, the NVRTC version, the target
//!   architecture, the program and every header it may include (name and contents): a change
//!   to any of them is a new entry, never a stale binary.
//! - **Safe under concurrent processes:** an entry is written to a temporary file in the same
//!   folder and renamed into place (atomic on POSIX), so a reader sees a whole entry or none.
//! - **A corrupt entry** (short, wrong magic, wrong checksum — or a binary the driver refuses,
//!   see [`super::modules`]) is compiled again and overwritten.
//! - A cache that cannot be read or written (read-only home, full disk) only costs the compile:
//!   it is never an error.

use crate::Result;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The entry's first bytes, with a format version.
const MAGIC: &[u8; 8] = b"CLKC\x01\0\0\0";
/// magic + payload length (u64 LE) + payload checksum (u64 LE).
const HEADER: usize = 8 + 8 + 8;

/// The cache folder, or `None` when the cache is off or no folder can be named.
pub(crate) fn cache_dir() -> Option<PathBuf> {
    match std::env::var_os("CLUSTERLAB_KERNEL_CACHE") {
        Some(v) if v.is_empty() || v == "off" || v == "0" => None,
        Some(v) => Some(PathBuf::from(v)),
        None => std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|v| !v.is_empty())
                    .map(|h| PathBuf::from(h).join(".cache"))
            })
            .map(|d| d.join("clusterlab").join("kernels")),
    }
}

/// FNV-1a over a sequence of byte strings, each prefixed by its length so that boundaries
/// count; 128 bits so that collisions among a cache's few hundred entries are out of reach.
pub(crate) fn key_of(parts: &[&[u8]]) -> u128 {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013B;
    let mut h = OFFSET;
    for part in parts {
        for &b in (part.len() as u64).to_le_bytes().iter().chain(part.iter()) {
            h ^= u128::from(b);
            h = h.wrapping_mul(PRIME);
        }
    }
    h
}

/// A 64-bit checksum of an entry's payload (FNV-1a), to tell a torn or damaged file.
fn checksum(payload: &[u8]) -> u64 {
    key_of(&[payload]) as u64
}

/// The path of entry `key` in `dir`.
pub(crate) fn entry_path(dir: &Path, key: u128) -> PathBuf {
    dir.join(format!("{key:032x}.bin"))
}

/// The payload of the entry at `path`, or `None` when missing or damaged.
pub(crate) fn read_entry(path: &Path) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path).ok()?;
    if bytes.len() < HEADER || &bytes[..8] != MAGIC {
        return None;
    }
    let len = u64::from_le_bytes(bytes[8..16].try_into().ok()?);
    let sum = u64::from_le_bytes(bytes[16..24].try_into().ok()?);
    let payload = &bytes[HEADER..];
    (payload.len() as u64 == len && checksum(payload) == sum).then(|| payload.to_vec())
}

/// Writes the entry atomically (temporary file in `dir`, then rename); failures are ignored:
/// the cache is an optimisation.
pub(crate) fn write_entry(dir: &Path, key: u128, payload: &[u8]) {
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::Builder::new()
            .prefix(".entry.")
            .suffix(".tmp")
            .tempfile_in(dir)?;
        tmp.write_all(MAGIC)?;
        tmp.write_all(&(payload.len() as u64).to_le_bytes())?;
        tmp.write_all(&checksum(payload).to_le_bytes())?;
        tmp.write_all(payload)?;
        tmp.as_file().sync_data()?;
        tmp.persist(entry_path(dir, key)).map_err(|e| e.error)?;
        Ok(())
    };
    let _ = write();
}

/// Where a module's binary came from, for `--timings` and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// Read from the on-disk cache.
    Disk,
    /// Compiled by NVRTC in this process (and stored when the cache is on).
    Compiled,
}

/// The binary for `key`: from the cache in `dir` when a sound entry is there, else from
/// `compile` (then stored).
///
/// # Errors
/// Only `compile`'s.
pub(crate) fn load_or_compile(
    dir: Option<&Path>,
    key: u128,
    compile: impl FnOnce() -> Result<Vec<u8>>,
) -> Result<(Vec<u8>, Source)> {
    if let Some(dir) = dir {
        if let Some(payload) = read_entry(&entry_path(dir, key)) {
            return Ok((payload, Source::Disk));
        }
    }
    let bin = compile()?;
    if let Some(dir) = dir {
        write_entry(dir, key, &bin);
    }
    Ok((bin, Source::Compiled))
}

/// Removes entry `key` (a binary the driver refused).
pub(crate) fn forget(dir: Option<&Path>, key: u128) {
    if let Some(dir) = dir {
        let _ = std::fs::remove_file(entry_path(dir, key));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn a_second_load_compiles_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let calls = Cell::new(0);
        let compile = || {
            calls.set(calls.get() + 1);
            Ok(vec![1, 2, 3, 4])
        };
        let key = key_of(&[b"source", b"sm_90"]);
        let (a, src) = load_or_compile(Some(dir.path()), key, compile).unwrap();
        assert_eq!((a.as_slice(), src), (&[1u8, 2, 3, 4][..], Source::Compiled));
        let (b, src) = load_or_compile(Some(dir.path()), key, compile).unwrap();
        assert_eq!((b, src), (a, Source::Disk));
        assert_eq!(calls.get(), 1);
        // No temporary left beside the entry.
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn keys_separate_every_part() {
        let k = key_of(&[b"ab", b"c"]);
        assert_ne!(k, key_of(&[b"a", b"bc"]));
        assert_ne!(k, key_of(&[b"ab", b"d"]));
        assert_eq!(k, key_of(&[b"ab", b"c"]));
    }

    #[test]
    fn a_damaged_entry_is_compiled_again() {
        let dir = tempfile::tempdir().unwrap();
        let key = 7u128;
        let path = entry_path(dir.path(), key);
        write_entry(dir.path(), key, &[9; 100]);
        assert_eq!(read_entry(&path), Some(vec![9; 100]));
        // A torn write (truncated), a flipped byte, and garbage: each is recompiled.
        let whole = std::fs::read(&path).unwrap();
        for bad in [
            whole[..50].to_vec(),
            {
                let mut b = whole.clone();
                b[HEADER + 3] ^= 1;
                b
            },
            b"not a cache entry".to_vec(),
        ] {
            std::fs::write(&path, &bad).unwrap();
            let (bin, src) = load_or_compile(Some(dir.path()), key, || Ok(vec![5; 10])).unwrap();
            assert_eq!((bin, src), (vec![5; 10], Source::Compiled));
            assert_eq!(read_entry(&path), Some(vec![5; 10]));
        }
    }

    #[test]
    fn concurrent_writers_leave_one_sound_entry() {
        let dir = tempfile::tempdir().unwrap();
        let key = 11u128;
        std::thread::scope(|s| {
            for _ in 0..8 {
                let d = dir.path();
                s.spawn(move || {
                    for _ in 0..20 {
                        // Every writer stores the same binary for the key, as real ones do.
                        let (bin, _) =
                            load_or_compile(Some(d), key, || Ok(vec![42; 4096])).unwrap();
                        assert_eq!(bin, vec![42; 4096]);
                    }
                });
            }
        });
        assert_eq!(
            read_entry(&entry_path(dir.path(), key)),
            Some(vec![42; 4096])
        );
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(left.is_empty());
    }

    #[test]
    fn without_a_folder_it_only_compiles() {
        let (bin, src) = load_or_compile(None, 1, || Ok(vec![3])).unwrap();
        assert_eq!((bin, src), (vec![3], Source::Compiled));
    }
}
