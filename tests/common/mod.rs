//! Shared test helpers: an independent labeling oracle and lattice generators.
//!
//! The oracle is written from `CONVENTIONS.md` alone and uses nothing of the crate but its public
//! `Connectivity` and `Boundary` enums: a plain breadth-first search over an explicit neighbour
//! list, wrapping per axis as the boundary says, with the neighbourhood taken literally (on a torus
//! one or two sites wide a site may be its own neighbour, or the same neighbour twice).

// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

pub mod battery;

use clusterlab::{Boundary, Connectivity};
use ndarray::{Array2, ArrayView2};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::collections::{HashMap, VecDeque};

/// Edge neighbours as `(dy, dx)`.
const FOUR: [(isize, isize); 4] = [(-1, 0), (1, 0), (0, -1), (0, 1)];
/// Edge and diagonal neighbours as `(dy, dx)`.
const EIGHT: [(isize, isize); 8] = [
    (-1, 0),
    (1, 0),
    (0, -1),
    (0, 1),
    (-1, -1),
    (-1, 1),
    (1, -1),
    (1, 1),
];

/// Whether rows (`y`) and columns (`x`) wrap around.
pub fn wraps(boundary: Boundary) -> (bool, bool) {
    match boundary {
        Boundary::Open => (false, false),
        Boundary::Periodic => (true, true),
        Boundary::PeriodicX => (false, true),
        Boundary::PeriodicY => (true, false),
    }
}

/// One coordinate moved by `d` on an axis of length `n`: `None` when it leaves an open axis.
fn step(v: usize, d: isize, n: usize, wrap: bool) -> Option<usize> {
    let t = v as isize + d;
    if (0..n as isize).contains(&t) {
        Some(t as usize)
    } else if wrap {
        Some(t.rem_euclid(n as isize) as usize)
    } else {
        None
    }
}

/// The literal neighbour list of `(y, x)` (duplicates and the site itself included when the
/// torus is that narrow).
pub fn neighbour_list(
    y: usize,
    x: usize,
    (h, w): (usize, usize),
    connectivity: Connectivity,
    boundary: Boundary,
) -> Vec<(usize, usize)> {
    let offsets: &[(isize, isize)] = match connectivity {
        Connectivity::Four => &FOUR,
        Connectivity::Eight => &EIGHT,
    };
    let (wy, wx) = wraps(boundary);
    offsets
        .iter()
        .filter_map(|&(dy, dx)| Some((step(y, dy, h, wy)?, step(x, dx, w, wx)?)))
        .collect()
}

/// Labels `lattice` (any values; 0 = empty) by breadth-first search. In segment mode two
/// neighbours join only when they hold the same nonzero value; otherwise any two occupied
/// neighbours join. Clusters are numbered in raster order of their first site.
pub fn oracle(
    lattice: ArrayView2<'_, u32>,
    connectivity: Connectivity,
    boundary: Boundary,
    segments: bool,
) -> (Array2<u32>, usize) {
    let dim = lattice.dim();
    let mut out = Array2::<u32>::zeros(dim);
    let mut count = 0u32;
    let mut queue = VecDeque::new();
    for y in 0..dim.0 {
        for x in 0..dim.1 {
            if lattice[[y, x]] == 0 || out[[y, x]] != 0 {
                continue;
            }
            count += 1;
            out[[y, x]] = count;
            queue.push_back((y, x));
            while let Some((cy, cx)) = queue.pop_front() {
                let v = lattice[[cy, cx]];
                for (ny, nx) in neighbour_list(cy, cx, dim, connectivity, boundary) {
                    let u = lattice[[ny, nx]];
                    let joined = u != 0 && (!segments || u == v);
                    if joined && out[[ny, nx]] == 0 {
                        out[[ny, nx]] = count;
                        queue.push_back((ny, nx));
                    }
                }
            }
        }
    }
    (out, count as usize)
}

/// The oracle for a lattice of any unsigned site type.
pub fn oracle_of<T: Copy + Into<u32>>(
    lattice: ArrayView2<'_, T>,
    connectivity: Connectivity,
    boundary: Boundary,
    segments: bool,
) -> (Array2<u32>, usize) {
    let values = lattice.mapv(Into::into);
    oracle(values.view(), connectivity, boundary, segments)
}

/// Sites per label, index 0 counting the empty sites.
pub fn sizes(labels: ArrayView2<'_, u32>, count: usize) -> Vec<u64> {
    let mut s = vec![0u64; count + 1];
    for &l in labels {
        s[l as usize] += 1;
    }
    s
}

/// Whether two label arrays describe the same partition of the same occupied sites: zeros in the
/// same places and a label-to-label mapping that is a bijection.
pub fn same_partition(a: ArrayView2<'_, u32>, b: ArrayView2<'_, u32>) -> bool {
    if a.dim() != b.dim() {
        return false;
    }
    let mut fwd = HashMap::new();
    let mut back = HashMap::new();
    for (&x, &y) in a.iter().zip(b.iter()) {
        if (x == 0) != (y == 0) {
            return false;
        }
        if *fwd.entry(x).or_insert(y) != y || *back.entry(y).or_insert(x) != x {
            return false;
        }
    }
    true
}

/// A seeded generator.
pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// Sites occupied (1) with probability `p`.
pub fn random_lattice(h: usize, w: usize, p: f64, rng: &mut StdRng) -> Array2<u8> {
    Array2::from_shape_fn((h, w), |_| u8::from(rng.random::<f64>() < p))
}

/// Sites occupied with probability `p`, each occupied site holding one of `k` values `1..=k`
/// (`k >= 1`).
pub fn segment_lattice(h: usize, w: usize, p: f64, k: u32, rng: &mut StdRng) -> Array2<u32> {
    Array2::from_shape_fn((h, w), |_| {
        if rng.random::<f64>() < p {
            rng.random_range(1..=k)
        } else {
            0
        }
    })
}

/// `g × g` blocks, each occupied as a whole with probability `p` (blocks at the right and
/// bottom edges are cut off).
pub fn granular_lattice(h: usize, w: usize, g: usize, p: f64, rng: &mut StdRng) -> Array2<u8> {
    let g = g.max(1);
    let blocks = Array2::from_shape_fn((h.div_ceil(g), w.div_ceil(g)), |_| {
        u8::from(rng.random::<f64>() < p)
    });
    Array2::from_shape_fn((h, w), |(y, x)| blocks[[y / g, x / g]])
}

/// A square spiral: one 4-connected path that starts at the top-left corner, runs clockwise
/// along the edges and winds inwards, its arms one empty row or column apart.
pub fn spiral(n: usize) -> Array2<u8> {
    let mut a = Array2::<u8>::zeros((n, n));
    if n == 0 {
        return a;
    }
    let dirs = [(0isize, 1isize), (1, 0), (0, -1), (-1, 0)];
    let (mut y, mut x, mut d) = (0isize, 0isize, 0usize);
    a[[0, 0]] = 1;
    let inside = |y: isize, x: isize| (0..n as isize).contains(&y) && (0..n as isize).contains(&x);
    let mut turns_without_step = 0;
    while turns_without_step < 2 {
        let (dy, dx) = dirs[d];
        let (ny, nx) = (y + dy, x + dx);
        // Step when the next site is inside and free, and the one after it is not occupied
        // (that keeps one empty site between the arms).
        let free = inside(ny, nx) && a[[ny as usize, nx as usize]] == 0;
        let (fy, fx) = (ny + dy, nx + dx);
        let gap = !inside(fy, fx) || a[[fy as usize, fx as usize]] == 0;
        if free && gap {
            y = ny;
            x = nx;
            a[[y as usize, x as usize]] = 1;
            turns_without_step = 0;
        } else {
            d = (d + 1) % 4;
            turns_without_step += 1;
        }
    }
    a
}

/// 1 where `y + x` is even.
pub fn checkerboard(h: usize, w: usize) -> Array2<u8> {
    Array2::from_shape_fn((h, w), |(y, x)| u8::from((y + x) % 2 == 0))
}

/// Stripes one site wide with one empty site between them: occupied rows (`horizontal`) or
/// columns, starting with the first.
pub fn stripes(h: usize, w: usize, horizontal: bool) -> Array2<u8> {
    Array2::from_shape_fn((h, w), |(y, x)| {
        u8::from(if horizontal { y % 2 == 0 } else { x % 2 == 0 })
    })
}

/// The lattice transposed, with PeriodicX and PeriodicY swapped to match.
pub fn transposed_boundary(boundary: Boundary) -> Boundary {
    match boundary {
        Boundary::PeriodicX => Boundary::PeriodicY,
        Boundary::PeriodicY => Boundary::PeriodicX,
        b => b,
    }
}
