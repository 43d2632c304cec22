//! Test and benchmark lattices: site percolation (with optional granularity) and a spiral.

use ndarray::Array2;
use rand_mt::Mt;

/// A site-percolation lattice of `h` × `w` sites: `1` = occupied, `0` = empty.
///
/// With `grain` = 1 each site is occupied with probability `p`; with `grain` = G > 1 the lattice
/// is tiled with G × G blocks, each occupied or empty as a whole with probability `p` (the
/// density × granularity benchmark of Hennequin et al.); blocks at the right and bottom edges are
/// cut to fit. A `grain` of 0 counts as 1.
///
/// The draws come from MT19937 ([`rand_mt::Mt`]) seeded with `seed`: one `next_u32()` per
/// block (per site when `grain` ≤ 1), blocks in raster order (row by row, left to right), and a
/// block is occupied when `u / 2³² < p`. So `p` ≤ 0 (or NaN) gives an empty lattice, `p` ≥ 1 a
/// full one, and the same arguments always give the same lattice, on every platform.
///
/// ```
/// use clusterlab::generate::percolation;
///
/// let lattice = percolation(64, 48, 0.5, 1, 7);
/// assert_eq!(lattice.dim(), (64, 48));
/// assert_eq!(lattice, percolation(64, 48, 0.5, 1, 7));
/// let occupied = lattice.iter().filter(|&&s| s == 1).count();
/// assert!((1200..1900).contains(&occupied));
/// ```
pub fn percolation(h: usize, w: usize, p: f64, grain: usize, seed: u32) -> Array2<u8> {
    let g = grain.max(1);
    let (bh, bw) = (h.div_ceil(g), w.div_ceil(g));
    let mut mt = Mt::new(seed);
    const SCALE: f64 = 1.0 / 4_294_967_296.0; // 2^-32, exact
    let blocks: Vec<u8> = (0..bh * bw)
        .map(|_| u8::from(f64::from(mt.next_u32()) * SCALE < p))
        .collect();
    if g == 1 {
        return Array2::from_shape_vec((h, w), blocks).expect("h * w draws");
    }
    Array2::from_shape_fn((h, w), |(y, x)| blocks[(y / g) * bw + x / g])
}

/// A square spiral of `h` × `w` sites: a path one site wide that winds clockwise from the top-left
/// corner towards the centre, its turns separated by one empty site (`1` = occupied, `0` = empty).
///
/// The path is simple and no two of its sites are edge neighbours unless they are consecutive on
/// it, so the occupied sites form a single cluster with 4-connectivity (and with 8-connectivity),
/// about half of the lattice long: a worst case for label propagation and for raster-scan
/// algorithms, whose provisional labels all have to be merged.
///
/// ```
/// use clusterlab::generate::spiral;
/// use ndarray::array;
///
/// assert_eq!(
///     spiral(5, 5),
///     array![
///         [1u8, 1, 1, 1, 1],
///         [0, 0, 0, 0, 1],
///         [1, 1, 1, 0, 1],
///         [1, 0, 0, 0, 1],
///         [1, 1, 1, 1, 1],
///     ]
/// );
/// ```
pub fn spiral(h: usize, w: usize) -> Array2<u8> {
    let mut a = Array2::<u8>::zeros((h, w));
    if h == 0 || w == 0 {
        return a;
    }
    // Clockwise: right, down, left, up, as (dy, dx).
    const DIRS: [(isize, isize); 4] = [(0, 1), (1, 0), (0, -1), (-1, 0)];
    let at = |y: isize, x: isize| -> Option<(usize, usize)> {
        (y >= 0 && x >= 0 && (y as usize) < h && (x as usize) < w)
            .then_some((y as usize, x as usize))
    };
    // A step from `pos` to `next` is allowed when `next` is free and none of its neighbours
    // except `pos` is occupied: the path never touches itself.
    let can_step = |a: &Array2<u8>, pos: (isize, isize), d: (isize, isize)| -> bool {
        let next = (pos.0 + d.0, pos.1 + d.1);
        match at(next.0, next.1) {
            Some(n) if a[n] == 0 => DIRS.iter().all(|&(dy, dx)| {
                let m = (next.0 + dy, next.1 + dx);
                m == pos || at(m.0, m.1).is_none_or(|m| a[m] == 0)
            }),
            _ => false,
        }
    };
    let mut pos = (0isize, 0isize);
    a[[0, 0]] = 1;
    let mut dir = 0;
    loop {
        if !can_step(&a, pos, DIRS[dir]) {
            dir = (dir + 1) % 4;
            if !can_step(&a, pos, DIRS[dir]) {
                break;
            }
        }
        pos = (pos.0 + DIRS[dir].0, pos.1 + DIRS[dir].1);
        a[[pos.0 as usize, pos.1 as usize]] = 1;
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{label, Boundary, Connectivity};

    #[test]
    fn percolation_is_reproducible_and_follows_p() {
        let a = percolation(100, 120, 0.3, 1, 1);
        assert_eq!(a, percolation(100, 120, 0.3, 1, 1));
        assert_ne!(a, percolation(100, 120, 0.3, 1, 2));
        let n = a.iter().filter(|&&v| v == 1).count() as f64 / 12000.0;
        assert!((n - 0.3).abs() < 0.02, "{n}");
        assert!(a.iter().all(|&v| v <= 1));
        assert!(percolation(10, 10, 0.0, 1, 3).iter().all(|&v| v == 0));
        assert!(percolation(10, 10, 1.0, 1, 3).iter().all(|&v| v == 1));
        assert!(percolation(10, 10, f64::NAN, 1, 3).iter().all(|&v| v == 0));
        assert_eq!(percolation(0, 5, 0.5, 1, 3).dim(), (0, 5));
        assert_eq!(
            percolation(10, 10, 0.5, 0, 3),
            percolation(10, 10, 0.5, 1, 3)
        );
    }

    #[test]
    fn percolation_draws_one_number_per_site_in_raster_order() {
        let mut mt = Mt::new(5);
        let expected = Array2::from_shape_fn((7, 9), |_| {
            u8::from((mt.next_u32() as f64) / 4294967296.0 < 0.4)
        });
        assert_eq!(percolation(7, 9, 0.4, 1, 5), expected);
    }

    #[test]
    fn grains_are_uniform_blocks() {
        let (h, w, g) = (23, 37, 4);
        let a = percolation(h, w, 0.5, g, 9);
        let blocks = percolation(h.div_ceil(g), w.div_ceil(g), 0.5, 1, 9);
        for ((y, x), &v) in a.indexed_iter() {
            assert_eq!(v, blocks[[y / g, x / g]]);
        }
    }

    #[test]
    fn spiral_is_one_simple_path() {
        for h in 0..24 {
            for w in 0..24 {
                let s = spiral(h, w);
                assert_eq!(s.dim(), (h, w));
                let n = s.iter().filter(|&&v| v == 1).count();
                if h * w == 0 {
                    assert_eq!(n, 0);
                    continue;
                }
                // Edges between occupied 4-neighbours: a connected simple path has n − 1.
                let mut edges = 0;
                for ((y, x), &v) in s.indexed_iter() {
                    if v == 1 && y + 1 < h && s[[y + 1, x]] == 1 {
                        edges += 1;
                    }
                    if v == 1 && x + 1 < w && s[[y, x + 1]] == 1 {
                        edges += 1;
                    }
                }
                assert_eq!(edges + 1, n, "{h}x{w}\n{s:?}");
                for c in [Connectivity::Four, Connectivity::Eight] {
                    let l = label(s.view(), c, Boundary::Open).unwrap();
                    assert_eq!(l.count(), 1, "{h}x{w} {c:?}\n{s:?}");
                }
                if h >= 8 && w >= 8 {
                    let f = n as f64 / (h * w) as f64;
                    assert!((0.4..0.65).contains(&f), "{h}x{w}: {f}");
                }
            }
        }
    }
}
