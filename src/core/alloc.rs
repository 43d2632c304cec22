//! Lattice-sized buffers whose allocation failure is a typed error, not an abort.

use crate::{Error, Result};
use ndarray::Array2;
use std::alloc::{alloc_zeroed, Layout};
use std::sync::Mutex;

/// Types for which all-zero bytes are a valid value.
pub(crate) trait Zeroable: Copy {}
impl Zeroable for u8 {}
impl Zeroable for u16 {}
impl Zeroable for u32 {}
impl Zeroable for u64 {}

/// Types whose all-zero bytes are a valid value, atomics included.
///
/// # Safety
/// Implementors must accept all-zero bytes as a valid value.
pub(crate) unsafe trait ZeroBytes {}
// SAFETY: plain integers and their atomics (same size and bit validity as the integer).
unsafe impl ZeroBytes for u8 {}
// SAFETY: as above.
unsafe impl ZeroBytes for u32 {}
// SAFETY: as above.
unsafe impl ZeroBytes for [i32; 2] {}
// SAFETY: as above.
unsafe impl ZeroBytes for u64 {}
// SAFETY: as above.
unsafe impl ZeroBytes for std::sync::atomic::AtomicU32 {}
// SAFETY: as above.
unsafe impl ZeroBytes for std::sync::atomic::AtomicU64 {}

/// Makes `v` `n` long; elements past its old length are zero. A buffer that must grow is
/// replaced by one the system zeroes (its pages faulted in later by whoever writes them first,
/// in parallel), rather than grown and zeroed here element by element: in a new process a
/// 16384² labeling's forest arrays (0.25 GB each) were otherwise faulted in by one thread.
pub(crate) fn grow_zeroed<T: ZeroBytes>(v: &mut Vec<T>, n: usize) {
    let len = v.len();
    if n <= len {
        v.truncate(n);
        return;
    }
    if n > v.capacity() {
        let layout = Layout::array::<T>(n).unwrap_or_else(|_| panic!("capacity overflow"));
        let mut fresh: Vec<T> = if layout.size() == 0 {
            Vec::with_capacity(n)
        } else {
            // SAFETY: the layout has a non-zero size; the block is `n` zeroed `T`s (valid by
            // `ZeroBytes`) owned by the Vec with the same layout.
            unsafe {
                let ptr = alloc_zeroed(layout).cast::<T>();
                if ptr.is_null() {
                    std::alloc::handle_alloc_error(layout);
                }
                Vec::from_raw_parts(ptr, 0, n)
            }
        };
        // SAFETY: the old elements are moved bitwise into the new buffer (capacity `n` > `len`)
        // and the old Vec forgets them before it is dropped; the tail is already zero.
        unsafe {
            std::ptr::copy_nonoverlapping(v.as_ptr(), fresh.as_mut_ptr(), len);
            v.set_len(0);
            fresh.set_len(n);
        }
        *v = fresh;
        return;
    }
    // SAFETY: `len..n` lies within the capacity; all-zero bytes are valid `T`s (`ZeroBytes`).
    unsafe {
        std::ptr::write_bytes(v.as_mut_ptr().add(len), 0, n - len);
        v.set_len(n);
    }
}

/// `MemAvailable` from `/proc/meminfo`, where there is one: what the system can give without
/// swapping (free memory and reclaimable caches).
pub(crate) fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    meminfo_available(&text)
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
fn meminfo_available(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb.saturating_mul(1024))
}

/// [`Error::OutOfMemory`] when `new_bytes` (what is still to be allocated) exceed what the system
/// can give, so that a labeling that cannot finish is refused before it allocates (a `Vec`
/// that cannot grow aborts the process); `total` (with what is already allocated, e.g. the
/// input) and `what` go into the message. Systems without `MemAvailable` are not checked.
pub(crate) fn check_available(new_bytes: usize, total: usize, what: &str) -> Result<()> {
    match available_memory() {
        Some(available) => refuse_beyond(new_bytes, total, available, what),
        None => Ok(()),
    }
}

/// The check of [`check_available`] against `available` bytes.
pub(crate) fn refuse_beyond(
    new_bytes: usize,
    total: usize,
    available: u64,
    what: &str,
) -> Result<()> {
    if new_bytes as u64 <= available {
        return Ok(());
    }
    Err(Error::OutOfMemory {
        bytes: total,
        what: format!(
            "{what} (about {} to allocate, {} available)",
            human_bytes(new_bytes as u64),
            human_bytes(available)
        ),
    })
}

/// Bytes in GiB or MiB, for messages.
pub(crate) fn human_bytes(bytes: u64) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    if bytes >= 1 << 30 {
        format!("{:.1} GiB", bytes as f64 / GIB)
    } else {
        format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
    }
}

/// An `h × w` array of zeros, or [`Error::OutOfMemory`] stating the bytes when the allocator
/// has none. Zeroed pages come from the system lazily, as `vec![0; n]`'s do.
pub(crate) fn zeros<T: Zeroable>(h: usize, w: usize, what: &str) -> Result<Array2<T>> {
    let n = h.checked_mul(w).ok_or_else(|| Error::OutOfMemory {
        bytes: usize::MAX,
        what: what.to_string(),
    })?;
    let oom = || Error::OutOfMemory {
        bytes: n.saturating_mul(std::mem::size_of::<T>()),
        what: what.to_string(),
    };
    let layout = Layout::array::<T>(n).map_err(|_| oom())?;
    let vec = if layout.size() == 0 {
        Vec::new()
    } else {
        // SAFETY: the layout has a non-zero size; all-zero bytes are a valid `T` (Zeroable), so
        // the `n` elements are initialised, and the Vec owns the block with the same layout.
        unsafe {
            let ptr = alloc_zeroed(layout).cast::<T>();
            if ptr.is_null() {
                return Err(oom());
            }
            Vec::from_raw_parts(ptr, n, n)
        }
    };
    Array2::from_shape_vec((h, w), vec).map_err(|e| Error::InvalidArgument(e.to_string()))
}

/// Label types whose dropped images are kept for the next one-shot call (see [`label_image`]).
pub(crate) trait Recyclable: Zeroable + Send + 'static {
    /// This type's kept images.
    fn bin() -> &'static Mutex<Vec<Vec<Self>>>;
}

impl Recyclable for u32 {
    fn bin() -> &'static Mutex<Vec<Vec<u32>>> {
        static BIN: Mutex<Vec<Vec<u32>>> = Mutex::new(Vec::new());
        &BIN
    }
}

impl Recyclable for u64 {
    fn bin() -> &'static Mutex<Vec<Vec<u64>>> {
        static BIN: Mutex<Vec<Vec<u64>>> = Mutex::new(Vec::new());
        &BIN
    }
}

/// Images smaller than this are not kept: the allocator serves them from its own free lists.
const RECYCLE_MIN_BYTES: usize = 1 << 20;
/// Images kept per label type (the last ones dropped).
const RECYCLE_MAX_IMAGES: usize = 2;

/// Keeps the label image `v` of a dropped [`Labels`](crate::Labels) for [`label_image`], when it
/// is at least a MiB and the images kept would stay within a quarter of the memory available;
/// drops it otherwise (and the oldest image kept, beyond [`RECYCLE_MAX_IMAGES`]).
///
/// Why: a new label image of a few MiB or more comes fresh from the system, and each of its pages
/// is faulted in (and zeroed by the kernel) when the labeler first writes it. On the 2-core
/// development machine that was 25–40 ms of an 85 ms one-shot `label` at 4096², against 51 ms for
/// the same call into a reused image. A program that labels one timestep after another and drops
/// each result (or the Python-style loop that benchmarks take) gets the last image back instead.
pub(crate) fn recycle<T: Recyclable>(v: Vec<T>) {
    let bytes = std::mem::size_of_val(v.as_slice());
    if bytes < RECYCLE_MIN_BYTES || v.len() != v.capacity() {
        return;
    }
    // Read before locking: no file I/O while other threads wait on the bin.
    let available = available_memory();
    let Ok(mut bin) = T::bin().lock() else {
        return;
    };
    let kept: usize = bin
        .iter()
        .map(|b| std::mem::size_of_val(b.as_slice()))
        .sum();
    if available.is_some_and(|a| (kept + bytes) as u64 > a / 4) {
        return;
    }
    bin.push(v);
    if bin.len() > RECYCLE_MAX_IMAGES {
        bin.remove(0);
    }
}

/// An `h × w` label image for a labeler that writes every element: a kept image of exactly
/// `h · w` elements ([`recycle`]), whose stale contents the labeling overwrites, else
/// [`zeros`].
///
/// # Errors
/// As [`zeros`].
pub(crate) fn label_image<T: Recyclable>(h: usize, w: usize, what: &str) -> Result<Array2<T>> {
    if let Some(n) = h.checked_mul(w) {
        if std::mem::size_of::<T>().saturating_mul(n) >= RECYCLE_MIN_BYTES {
            let kept = T::bin().lock().ok().and_then(|mut bin| {
                let i = bin.iter().rposition(|b| b.len() == n)?;
                Some(bin.remove(i))
            });
            if let Some(v) = kept {
                return Array2::from_shape_vec((h, w), v)
                    .map_err(|e| Error::InvalidArgument(e.to_string()));
            }
        }
    }
    zeros(h, w, what)
}

/// Drops the label images kept for one-shot calls (see [`crate::free_cached_memory`]).
pub(crate) fn free_kept_images() {
    if let Ok(mut b) = u32::bin().lock() {
        b.clear();
    }
    if let Ok(mut b) = u64::bin().lock() {
        b.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grow_zeroed_keeps_and_zeroes() {
        use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
        let mut v = vec![7u32, 8, 9];
        grow_zeroed(&mut v, 2);
        assert_eq!(v, [7, 8]);
        grow_zeroed(&mut v, 3);
        assert_eq!(v, [7, 8, 0]); // within the capacity: the stale 9 is zeroed
        grow_zeroed(&mut v, 100_000);
        assert_eq!(&v[..3], [7, 8, 0]);
        assert!(v[3..].iter().all(|&x| x == 0));
        let mut a: Vec<AtomicU32> = Vec::new();
        grow_zeroed(&mut a, 5);
        a[4].store(3, Relaxed);
        grow_zeroed(&mut a, 1 << 20);
        assert_eq!(a[4].load(Relaxed), 3);
        assert_eq!(a.iter().map(|x| x.load(Relaxed)).sum::<u32>(), 3);
    }

    #[test]
    fn zeros_or_a_typed_error() {
        let a = zeros::<u32>(3, 5, "labels").unwrap();
        assert_eq!(a.dim(), (3, 5));
        assert!(a.iter().all(|&v| v == 0));
        assert_eq!(zeros::<u8>(0, 7, "x").unwrap().dim(), (0, 7));
        // More than any allocator gives: a typed error with the bytes, not an abort.
        match zeros::<u32>(1 << 31, 1 << 30, "labels") {
            Err(Error::OutOfMemory { bytes, what }) => {
                assert_eq!(bytes, (1usize << 61) * 4);
                assert_eq!(what, "labels");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn meminfo_and_the_refusal() {
        let text = "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(meminfo_available(text), Some(20_000_000 * 1024));
        assert_eq!(meminfo_available("MemTotal: 5 kB\n"), None);
        assert!(refuse_beyond(1000, 5000, 1000, "x").is_ok());
        match refuse_beyond(3 << 30, 5 << 30, 1 << 30, "64-bit labels") {
            Err(Error::OutOfMemory { bytes, what }) => {
                assert_eq!(bytes, 5 << 30);
                assert!(what.contains("64-bit labels"), "{what}");
                assert!(
                    what.contains("3.0 GiB to allocate, 1.0 GiB available"),
                    "{what}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
