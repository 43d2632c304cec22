//! Tests of the strip labeler's `u64` instantiations (`u64` indices and labels) against the
//! `u32` one.

use super::*;
use crate::core::rule::{Occupancy, Segments};
use ndarray::Array2;

/// A small xorshift: sites with `k` values, occupied with probability about `p`.
fn lattice(h: usize, w: usize, p: f64, k: u32, seed: &mut u64) -> Array2<u32> {
    Array2::from_shape_fn((h, w), |_| {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        let u = (*seed >> 11) as f64 / (1u64 << 53) as f64;
        if u < p {
            1 + (*seed % k as u64) as u32
        } else {
            0
        }
    })
}

/// Runs the labeler with index type `I` into labels `L`, widened to `u64`.
fn run<R: JoinRule, I: Index, L: Index>(
    rule: &R,
    c: Connectivity,
    b: Boundary,
    strips: usize,
) -> (usize, Array2<u64>) {
    let (h, w) = rule.dim();
    let mut scratch = Scratch::<I>::default();
    let mut out = Array2::<L>::default((h, w));
    let n = label(rule, c, b, strips, &mut scratch, out.view_mut());
    (n, out.mapv(|l| l.usize() as u64))
}

/// The wide instantiations (`u64` indices, which only lattices beyond `u32`'s runs take, and
/// `u32` indices into `u64` labels) give the `u32` labels, widened: on every connectivity,
/// boundary, segment mode and strip count, over shapes around the word width.
#[test]
fn wide_indices_and_labels_equal_the_narrow_ones() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut cases = 0;
    for &(h, w) in &[
        (1, 1),
        (1, 130),
        (130, 1),
        (2, 2),
        (17, 63),
        (40, 64),
        (33, 65),
        (70, 129),
    ] {
        for &p in &[0.3, 0.6, 0.95] {
            for k in [1, 3] {
                let a = lattice(h, w, p, k, &mut seed);
                for c in [Connectivity::Four, Connectivity::Eight] {
                    for b in [
                        Boundary::Open,
                        Boundary::Periodic,
                        Boundary::PeriodicX,
                        Boundary::PeriodicY,
                    ] {
                        for strips in [1, 3] {
                            let occ = Occupancy { lattice: a.view() };
                            let seg = Segments { lattice: a.view() };
                            let narrow = run::<_, u32, u32>(&occ, c, b, strips);
                            assert_eq!(narrow, run::<_, u64, u64>(&occ, c, b, strips));
                            assert_eq!(narrow, run::<_, u32, u64>(&occ, c, b, strips));
                            let narrow = run::<_, u32, u32>(&seg, c, b, strips);
                            assert_eq!(narrow, run::<_, u64, u64>(&seg, c, b, strips));
                            assert_eq!(narrow, run::<_, u32, u64>(&seg, c, b, strips));
                            cases += 1;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(cases, 8 * 3 * 2 * 2 * 4 * 2);
}

#[test]
fn the_most_runs_a_shape_can_have() {
    assert_eq!(max_runs(3, 5, false), 9);
    assert_eq!(max_runs(3, 5, true), 15);
    assert_eq!(max_runs(70_000, 70_000, false), 2_450_000_000);
    assert!(max_runs(70_000, 70_000, false) <= <u32 as Index>::MAX_NODES);
    assert!(max_runs(70_000, 70_000, true) > <u32 as Index>::MAX_NODES);
    assert_eq!(max_runs(usize::MAX, 4, true), usize::MAX);
}
