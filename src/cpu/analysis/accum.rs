//! Per-strip accumulation without per-thread copies of the per-label arrays.
//!
//! The lattice is cut into horizontal strips processed in parallel. Labels are numbered in raster
//! order of their first site, so the labels whose first site lies in strip `k` form one contiguous
//! range `(M_{k-1}, M_k]`, where `M_k` is the largest label in strips `0..=k`. Each strip writes
//! the accumulators of "its" labels straight into a disjoint slice of the global per-label
//! array; the few other labels it meets (clusters that started in an earlier strip, or that
//! start in the next strip's first row) go to a small per-strip hash map that is merged
//! afterwards. One cheap scan ([`scan_labels`]) finds every label's first site and each strip's
//! largest label.

use crate::measure::moments::Merge;
use rayon::prelude::*;
use std::ops::Range;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// Marks "no site yet" in first-site arrays.
pub(crate) const UNSET: u32 = u32::MAX;

/// Runs `f` on every job: in parallel on the current rayon pool, or one after the other on the
/// caller's thread (no pool at all: [`Parallelism::Sequential`](crate::Parallelism) must not
/// touch rayon, so that it can run inside other rayon jobs without nesting).
pub(crate) fn run_jobs<T: Send>(parallel: bool, jobs: Vec<T>, f: impl Fn(T) + Sync + Send) {
    if parallel && jobs.len() > 1 {
        jobs.into_par_iter().for_each(f);
    } else {
        jobs.into_iter().for_each(f);
    }
}

/// Like [`run_jobs`], collecting the results in order.
pub(crate) fn map_jobs<T: Send, R: Send>(
    parallel: bool,
    jobs: Vec<T>,
    f: impl Fn(T) -> R + Sync + Send,
) -> Vec<R> {
    if parallel && jobs.len() > 1 {
        jobs.into_par_iter().map(f).collect()
    } else {
        jobs.into_iter().map(f).collect()
    }
}

/// The strips of `h` rows for `threads` workers: about one per worker, at least 8 rows each.
pub(crate) fn strip_rows(h: usize, threads: usize) -> Vec<Range<usize>> {
    if h == 0 {
        return Vec::new();
    }
    let n = threads.clamp(1, h.div_ceil(8).max(1));
    let chunk = h.div_ceil(n);
    (0..h.div_ceil(chunk))
        .map(|k| k * chunk..((k + 1) * chunk).min(h))
        .collect()
}

/// Finds the first site (raster index `y * w + x`) of every label `1..=count` of the row-major
/// `labels` (`w` columns), written to `first[label]` (`first[0]` is [`UNSET`]), and returns the
/// largest label of each strip.
///
/// Within a strip, a label's first occurrence raises the running maximum (every label seen before
/// in the strip is either smaller, having started in an earlier strip, or started earlier in this
/// one), so only those sites are candidates; an atomic minimum keeps the earliest over strips.
pub(crate) fn scan_labels(
    parallel: bool,
    labels: &[u32],
    w: usize,
    strips: &[Range<usize>],
    count: usize,
    first: &mut Vec<u32>,
) -> Vec<u32> {
    first.clear();
    first.resize(count + 1, UNSET);
    // SAFETY: AtomicU32 has the size and alignment of u32, and `first` is borrowed exclusively
    // for as long as the atomic view lives.
    let atomic: &[AtomicU32] =
        unsafe { std::slice::from_raw_parts(first.as_mut_ptr().cast::<AtomicU32>(), first.len()) };
    map_jobs(parallel, strips.iter().collect(), |rows| {
        let lo = rows.start * w;
        let slice = &labels[lo..rows.end * w];
        let mut m = 0u32;
        for (c, chunk) in slice.chunks(32).enumerate() {
            let cm = chunk.iter().fold(0u32, |a, &b| a.max(b));
            if cm <= m {
                continue;
            }
            for (j, &l) in chunk.iter().enumerate() {
                if l > m {
                    atomic[l as usize].fetch_min((lo + c * 32 + j) as u32, Relaxed);
                    m = l;
                }
            }
        }
        m
    })
}

/// Splits a per-label array (`count + 1` entries, index = label) into the slices that the strips
/// own, given each strip's largest label; returns `(first label, slice)` per strip.
pub(crate) fn split_owned<'a, T>(
    mut array: &'a mut [T],
    maxima: &[u32],
) -> Vec<(u32, &'a mut [T])> {
    let mut out = Vec::with_capacity(maxima.len());
    // Index 0 (label 0) belongs to nobody.
    let mut next = 1u32;
    let skip = 1.min(array.len());
    array = &mut array[skip..];
    let mut running = 0u32;
    for &m in maxima {
        running = running.max(m);
        let len = (running + 1 - next) as usize;
        let (mine, rest) = array.split_at_mut(len);
        out.push((next, mine));
        array = rest;
        next = running + 1;
    }
    out
}

/// A small open-addressing hash map from labels (nonzero) to accumulators, for the labels a strip
/// does not own. Kept between calls so that it does not allocate again.
pub(crate) struct Spill<T> {
    keys: Vec<u32>,
    vals: Vec<T>,
    len: usize,
    last: usize,
}

impl<T: Merge> Default for Spill<T> {
    fn default() -> Self {
        Spill {
            keys: Vec::new(),
            vals: Vec::new(),
            len: 0,
            last: 0,
        }
    }
}

impl<T: Merge> Spill<T> {
    /// Empties the map (keeping its memory).
    pub(crate) fn clear(&mut self) {
        if self.len > 0 {
            self.keys.fill(0);
            self.len = 0;
        }
        if self.keys.is_empty() {
            self.keys = vec![0; 64];
            self.vals = vec![T::EMPTY; 64];
        }
        self.last = 0;
    }

    #[inline]
    fn slot(&self, key: u32) -> usize {
        let mask = self.keys.len() - 1;
        let mut i = (key.wrapping_mul(0x9E37_79B1) as usize) & mask;
        loop {
            let k = self.keys[i];
            if k == key || k == 0 {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let keys = std::mem::take(&mut self.keys);
        let vals = std::mem::take(&mut self.vals);
        self.keys = vec![0; keys.len() * 2];
        self.vals = vec![T::EMPTY; keys.len() * 2];
        for (k, v) in keys.into_iter().zip(vals) {
            if k != 0 {
                let i = self.slot(k);
                self.keys[i] = k;
                self.vals[i] = v;
            }
        }
        self.last = 0;
    }

    /// The accumulator of `key`, inserted empty if absent.
    #[inline]
    pub(crate) fn get(&mut self, key: u32) -> &mut T {
        if self.keys[self.last] == key {
            return &mut self.vals[self.last];
        }
        let mut i = self.slot(key);
        if self.keys[i] == 0 {
            if 2 * (self.len + 1) > self.keys.len() {
                self.grow();
                i = self.slot(key);
            }
            self.keys[i] = key;
            self.vals[i] = T::EMPTY;
            self.len += 1;
        }
        self.last = i;
        &mut self.vals[i]
    }

    /// Merges every entry into `global[key]`.
    pub(crate) fn drain_into(&mut self, global: &mut [T]) {
        if self.len == 0 {
            return;
        }
        for (k, v) in self.keys.iter().zip(&self.vals) {
            if *k != 0 {
                global[*k as usize].merge(v);
            }
        }
    }
}

/// A strip's view of one per-label array: its own slice, and the spill map for other labels.
pub(crate) struct Sink<'a, T> {
    lo: u32,
    local: &'a mut [T],
    spill: &'a mut Spill<T>,
}

impl<'a, T: Merge> Sink<'a, T> {
    pub(crate) fn new(lo: u32, local: &'a mut [T], spill: &'a mut Spill<T>) -> Self {
        Sink { lo, local, spill }
    }

    /// The accumulator of `label` (nonzero).
    #[inline(always)]
    pub(crate) fn at(&mut self, label: u32) -> &mut T {
        let i = label.wrapping_sub(self.lo) as usize;
        if i < self.local.len() {
            &mut self.local[i]
        } else {
            self.spill.get(label)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sites_and_maxima() {
        // 3 rows x 4 columns, strips of one row each.
        let labels = [1, 0, 2, 2, 3, 1, 0, 2, 4, 4, 1, 5];
        let strips = vec![0..1, 1..2, 2..3];
        let mut first = Vec::new();
        let maxima = scan_labels(true, &labels, 4, &strips, 5, &mut first);
        assert_eq!(maxima, vec![2, 3, 5]);
        assert_eq!(first, vec![UNSET, 0, 2, 4, 8, 11]);
        let mut array = vec![0u64; 6];
        let parts = split_owned(&mut array, &maxima);
        let ranges: Vec<(u32, usize)> = parts.iter().map(|(lo, s)| (*lo, s.len())).collect();
        assert_eq!(ranges, vec![(1, 2), (3, 1), (4, 2)]);
    }

    #[test]
    fn spill_map_grows_and_merges() {
        let mut s = Spill::<u64>::default();
        s.clear();
        for k in 1..1000u32 {
            *s.get(k) += u64::from(k);
            *s.get(k) += 1;
        }
        let mut g = vec![0u64; 1000];
        s.drain_into(&mut g);
        assert!((1..1000).all(|k| g[k] == k as u64 + 1));
        s.clear();
        *s.get(7) += 1;
        let mut g = vec![0u64; 10];
        s.drain_into(&mut g);
        assert_eq!(g[7], 1);
        assert_eq!(g.iter().sum::<u64>(), 1);
    }

    #[test]
    fn strips_cover_rows() {
        for h in 0..50 {
            for t in 1..6 {
                let s = strip_rows(h, t);
                let covered: usize = s.iter().map(|r| r.len()).sum();
                assert_eq!(covered, h);
                assert!(s.windows(2).all(|p| p[0].end == p[1].start));
            }
        }
    }
}
