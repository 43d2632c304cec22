//! Lattice-sized buffers whose allocation failure is a typed error, not an abort.

use crate::{Error, Result};
use ndarray::Array2;
use std::alloc::{alloc_zeroed, Layout};

/// Types for which all-zero bytes are a valid value.
pub(crate) trait Zeroable: Copy {}
impl Zeroable for u8 {}
impl Zeroable for u16 {}
impl Zeroable for u32 {}

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
