//! The classic Hoshen–Kopelman raster scan (Hoshen & Kopelman 1976).
//!
//! One pass over the sites in raster order; each occupied site looks at its already-visited
//! neighbours (left and up; also up-left and up-right for 8-connectivity), takes the smallest of
//! their proper labels and merges the others into it. The label-of-labels array `n` holds, as in
//! the original, a cluster's size at a proper label (`n[k] >= 0`) and `-j` at an alias of label `j`.
//! On a torus, the sites that neighbour across a wrapping edge are merged after the scan, the
//! usual way to apply periodic boundaries to HK. A last pass renumbers the proper labels in
//! increasing order, which is raster order of each cluster's first site.

use super::neighbours;
use super::union_find::Index;
use crate::core::lattice::{Boundary, Connectivity};
use crate::core::rule::JoinRule;
use ndarray::ArrayViewMut2;

/// The proper label of `k`, pointing the alias chain straight at it on the way back.
fn proper(n: &mut [i64], k: usize) -> usize {
    let mut r = k;
    while n[r] < 0 {
        r = (-n[r]) as usize;
    }
    let mut j = k;
    while n[j] < 0 {
        let next = (-n[j]) as usize;
        n[j] = -(r as i64);
        j = next;
    }
    r
}

/// Merges the clusters of labels `a` and `b` into the smaller proper label; returns it.
fn merge(n: &mut [i64], a: usize, b: usize) -> usize {
    let (ra, rb) = (proper(n, a), proper(n, b));
    if ra == rb {
        return ra;
    }
    let (keep, gone) = if ra < rb { (ra, rb) } else { (rb, ra) };
    n[keep] += n[gone];
    n[gone] = -(keep as i64);
    keep
}

/// Reusable buffers: the label-of-labels array and the final numbering.
#[derive(Default)]
pub(crate) struct Scratch {
    n: Vec<i64>,
    number: Vec<u64>,
}

/// Labels by Hoshen–Kopelman into `u32` or `u64` labels; returns the number of clusters.
pub(crate) fn label<R: JoinRule, L: Index>(
    rule: &R,
    connectivity: Connectivity,
    boundary: Boundary,
    scratch: &mut Scratch,
    mut out: ArrayViewMut2<'_, L>,
) -> usize {
    let (h, w) = rule.dim();
    let Scratch { n, number } = scratch;
    n.clear();
    n.push(0); // label 0: empty
               // Visited neighbours of (y, x) in a raster scan: left, up-left, up, up-right.
    let back: &[(isize, isize)] = match connectivity {
        Connectivity::Four => &[(0, -1), (-1, 0)],
        Connectivity::Eight => &[(0, -1), (-1, -1), (-1, 0), (-1, 1)],
    };
    for y in 0..h {
        for x in 0..w {
            if !rule.occupied(y, x) {
                out[[y, x]] = L::default();
                continue;
            }
            let mut mine = 0usize;
            for &(dy, dx) in back {
                let (ny, nx) = (y as isize + dy, x as isize + dx);
                if ny < 0 || nx < 0 || nx >= w as isize {
                    continue;
                }
                let (ny, nx) = (ny as usize, nx as usize);
                let theirs = out[[ny, nx]].usize();
                if theirs == 0 || !rule.joined((y, x), (ny, nx)) {
                    continue;
                }
                mine = if mine == 0 {
                    proper(n, theirs)
                } else {
                    merge(n, mine, theirs)
                };
            }
            if mine == 0 {
                mine = n.len();
                n.push(0);
            }
            n[mine] += 1;
            out[[y, x]] = L::from_usize(mine);
        }
    }
    if boundary != Boundary::Open && h > 0 && w > 0 {
        // Only sites on the edges have neighbours across a wrapping edge.
        let edge = (0..w)
            .flat_map(|x| [(0, x), (h - 1, x)])
            .chain((0..h).flat_map(|y| [(y, 0), (y, w - 1)]));
        for (y, x) in edge {
            for (ny, nx, wrapped) in neighbours(y, x, h, w, connectivity, boundary) {
                if wrapped && rule.joined((y, x), (ny, nx)) {
                    merge(n, out[[y, x]].usize(), out[[ny, nx]].usize());
                }
            }
        }
    }
    // Proper labels in increasing order become 1..=count; aliases point at smaller labels.
    number.clear();
    number.resize(n.len(), 0);
    let mut count = 0u64;
    for k in 1..n.len() {
        number[k] = if n[k] >= 0 {
            count += 1;
            count
        } else {
            number[(-n[k]) as usize]
        };
    }
    out.mapv_inplace(|k| L::from_usize(number[k.usize()] as usize));
    count as usize
}
