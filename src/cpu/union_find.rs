//! Union-find over labels that are indices into a parent array: `u32`, or `u64` where a
//! lattice can have more runs than `u32` numbers ([`Index`]).
//!
//! Every algorithm links the larger root under the smaller one, so a root is always the smallest
//! label of its set, `parent[x] <= x` holds throughout, and numbering roots in increasing order
//! gives scipy's raster-order labels when provisional labels are issued in raster order.

use std::ops::{Add, Sub};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

/// An index of the union-find forests (and the cluster numbers read off them): `u32` for every
/// lattice whose runs `u32` can number, `u64` beyond. The strip labeler is generic over it, so
/// that the wide type costs only the lattices that need it.
pub(crate) trait Index:
    Copy
    + Ord
    + Default
    + Send
    + Sync
    + Add<Output = Self>
    + Sub<Output = Self>
    + crate::core::alloc::ZeroBytes
    + 'static
{
    /// The atomic of the same width, for the numbering written by several strips at once.
    type Atomic: Send + Sync + crate::core::alloc::ZeroBytes;
    /// The largest count of nodes a forest of this type may hold: labels `0..MAX_NODES` and
    /// numbers up to `MAX_NODES` must be representable, with room for the `+ 1` of `number`.
    const MAX_NODES: usize;
    const ONE: Self;
    /// `n` as an index; callers keep `n` within [`Index::MAX_NODES`].
    fn from_usize(n: usize) -> Self;
    fn from_u32(n: u32) -> Self;
    fn usize(self) -> usize;
    fn load(a: &Self::Atomic) -> Self;
    fn store(a: &Self::Atomic, v: Self);
    /// `&mut [Atomic]` as plain values: exclusive access makes plain writes fine.
    fn plain(a: &mut [Self::Atomic]) -> &mut [Self];
    /// `out[j] = v` where bit `j` of `bits` is set, 0 elsewhere (`out` at most 64 long): eight
    /// sites at a time through a table of byte masks, which the compiler turns into vector
    /// ands.
    fn masked_fill(out: &mut [Self], bits: u64, v: Self);
}

/// `BYTE_MASKS[b][j]`: all ones where bit `j` of `b` is set.
const fn byte_masks<const ONES: u64>() -> [[u64; 8]; 256] {
    let mut t = [[0u64; 8]; 256];
    let mut b = 0;
    while b < 256 {
        let mut j = 0;
        while j < 8 {
            if (b >> j) & 1 != 0 {
                t[b][j] = ONES;
            }
            j += 1;
        }
        b += 1;
    }
    t
}

/// `u32` masks, as the table's `u32` view would be (one table per width keeps the loop simple).
const fn byte_masks32() -> [[u32; 8]; 256] {
    let wide = byte_masks::<{ u32::MAX as u64 }>();
    let mut t = [[0u32; 8]; 256];
    let mut b = 0;
    while b < 256 {
        let mut j = 0;
        while j < 8 {
            t[b][j] = wide[b][j] as u32;
            j += 1;
        }
        b += 1;
    }
    t
}

static BYTE_MASKS_U32: [[u32; 8]; 256] = byte_masks32();
static BYTE_MASKS_U64: [[u64; 8]; 256] = byte_masks::<{ u64::MAX }>();

macro_rules! index {
    ($t:ty, $atomic:ty, $masks:ident) => {
        impl Index for $t {
            type Atomic = $atomic;
            const MAX_NODES: usize = (<$t>::MAX - 1) as usize;
            const ONE: Self = 1;
            #[inline]
            fn from_usize(n: usize) -> Self {
                n as $t
            }
            #[inline]
            fn from_u32(n: u32) -> Self {
                n as $t
            }
            #[inline]
            fn usize(self) -> usize {
                self as usize
            }
            #[inline]
            fn load(a: &Self::Atomic) -> Self {
                a.load(Relaxed)
            }
            #[inline]
            fn store(a: &Self::Atomic, v: Self) {
                a.store(v, Relaxed)
            }
            fn plain(a: &mut [Self::Atomic]) -> &mut [Self] {
                // SAFETY: the atomic has the same size and alignment as the integer, and the
                // borrow is exclusive.
                unsafe { std::slice::from_raw_parts_mut(a.as_mut_ptr().cast::<$t>(), a.len()) }
            }
            #[inline]
            fn masked_fill(out: &mut [Self], bits: u64, v: Self) {
                let mut chunks = out.chunks_exact_mut(8);
                let mut b = bits;
                for c in &mut chunks {
                    let m = &$masks[(b & 0xff) as usize];
                    for (d, &m) in c.iter_mut().zip(m) {
                        *d = v & m;
                    }
                    b >>= 8;
                }
                let m = &$masks[(b & 0xff) as usize];
                for (d, &m) in chunks.into_remainder().iter_mut().zip(m) {
                    *d = v & m;
                }
            }
        }
    };
}
index!(u32, AtomicU32, BYTE_MASKS_U32);
index!(u64, AtomicU64, BYTE_MASKS_U64);

/// The root of `x`, halving the path on the way (each visited node skips to its grandparent).
#[inline]
pub(crate) fn find<I: Index>(parent: &mut [I], mut x: I) -> I {
    loop {
        let p = parent[x.usize()];
        if p == x {
            return x;
        }
        let gp = parent[p.usize()];
        parent[x.usize()] = gp;
        if gp == p {
            return p;
        }
        x = gp;
    }
}

/// The root of `x` without changing the forest (for concurrent readers).
#[inline]
pub(crate) fn find_readonly<I: Index>(parent: &[I], mut x: I) -> I {
    loop {
        let p = parent[x.usize()];
        if p == x {
            return x;
        }
        x = p;
    }
}

/// Joins the sets of `a` and `b`; the smaller root becomes the root of both.
///
/// Rem's algorithm with splicing (Patwary, Blair and Manne 2010; Wu, Otoo and Suzuki found it
/// the fastest union-find for labeling): the two paths are climbed together, each node on the way
/// is pointed at the other path's smaller parent, and the climb stops as soon as the parents meet —
/// at once for the many unions of a raster scan whose two runs are already joined. Parents only
/// ever decrease, so `parent[x] <= x` holds.
#[inline]
pub(crate) fn union<I: Index>(parent: &mut [I], a: I, b: I) {
    let (mut x, mut y) = (a.usize(), b.usize());
    loop {
        let (px, py) = (parent[x], parent[y]);
        if px == py {
            return;
        }
        if px > py {
            parent[x] = py;
            if px.usize() == x {
                return;
            }
            x = px.usize();
        } else {
            parent[y] = px;
            if py.usize() == y {
                return;
            }
            y = py.usize();
        }
    }
}

/// Numbers the roots `1..=n` in increasing order and maps every label to its root's number,
/// writing `number[label + offset]`; returns `n`. Needs `parent[x] <= x` (see the module docs), so
/// one forward pass suffices.
pub(crate) fn number_roots<I: Index>(parent: &[I], number: &mut [I], offset: usize) -> I {
    let mut n = I::default();
    for (x, &p) in parent.iter().enumerate() {
        number[x + offset] = if p.usize() == x {
            n = n + I::ONE;
            n
        } else {
            number[p.usize() + offset]
        };
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smaller_root_wins_and_numbering_is_increasing() {
        let mut p: Vec<u32> = (0..6).collect();
        union(&mut p, 4, 2);
        union(&mut p, 5, 4);
        union(&mut p, 3, 1);
        assert_eq!(find(&mut p, 5), 2);
        assert_eq!(find(&mut p, 3), 1);
        assert!(p.iter().enumerate().all(|(x, &q)| q as usize <= x));
        let mut num = vec![0; 7];
        let n = number_roots(&p, &mut num, 1);
        assert_eq!(n, 3);
        assert_eq!(&num[1..], &[1, 2, 3, 2, 3, 3]);
        // The wide instantiation is the same algorithm.
        let mut p: Vec<u64> = (0..6).collect();
        union(&mut p, 4u64, 2);
        union(&mut p, 5, 4);
        union(&mut p, 3, 1);
        assert_eq!(find(&mut p, 5), 2);
        let mut num = vec![0u64; 7];
        assert_eq!(number_roots(&p, &mut num, 1), 3);
        assert_eq!(&num[1..], &[1, 2, 3, 2, 3, 3]);
    }
}
