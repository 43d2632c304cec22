//! The reference labeler: breadth-first flood fill from each unlabeled site in raster order.
//!
//! Slow and obviously right — it visits the literal neighbourhood of every site, wrapping where
//! the boundary says so — and numbers clusters in the order their first site is met, which is
//! scipy's order by construction. The tests use it as the oracle for every other algorithm.

use super::neighbours;
use super::union_find::Index;
use crate::core::lattice::{Boundary, Connectivity};
use crate::core::rule::JoinRule;
use ndarray::ArrayViewMut2;
use std::collections::VecDeque;

/// Labels by flood fill into `u32` or `u64` labels; returns the number of clusters. `queue` is
/// reusable scratch.
pub(crate) fn label<R: JoinRule, L: Index>(
    rule: &R,
    connectivity: Connectivity,
    boundary: Boundary,
    queue: &mut VecDeque<(usize, usize)>,
    mut out: ArrayViewMut2<'_, L>,
) -> usize {
    let (h, w) = rule.dim();
    let empty = L::default();
    out.fill(empty);
    let mut n = empty;
    for y in 0..h {
        for x in 0..w {
            if out[[y, x]] != empty || !rule.occupied(y, x) {
                continue;
            }
            n = n + L::ONE;
            out[[y, x]] = n;
            queue.clear();
            queue.push_back((y, x));
            while let Some((cy, cx)) = queue.pop_front() {
                for (ny, nx, _) in neighbours(cy, cx, h, w, connectivity, boundary) {
                    if out[[ny, nx]] == empty && rule.joined((cy, cx), (ny, nx)) {
                        out[[ny, nx]] = n;
                        queue.push_back((ny, nx));
                    }
                }
            }
        }
    }
    n.usize()
}
