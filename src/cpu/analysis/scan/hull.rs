//! The hull pass, for lattices whose region graph needed the general solver.

use super::occupancy::{candidate_mask, setup_bits, window_bits};
use super::window::{first_slots, incidences, neighbour_slots, repeats, Grid};
use super::Work;
use crate::core::bits::Ones;
use crate::cpu::analysis::accum::Sink;
use std::ops::Range;

/// The hull pass over one strip, for lattices whose region graph needed the general solver:
/// `outside(region_node, cluster)` says whether a perimeter site in that region is on the
/// outside of the cluster.
pub(crate) fn hull_strip(
    g: &Grid<'_>,
    rows: Range<usize>,
    hull: &mut Sink<'_, u64>,
    outside: &(impl Fn(u32, u32) -> bool + Sync),
    work: &mut Work,
) {
    let w = g.w;
    let n = g.clusters;
    let empties = g.empties.unwrap_or(&[]);
    if !g.segments {
        // Occupancy: the empty sites with an occupied neighbour, by bit masks.
        let Work { window, bits, .. } = work;
        let exists = setup_bits(bits, w, g.wraps_x);
        let mut slots = [0u32; 8];
        for (k, y) in rows.enumerate() {
            window.load(g, y, k > 0, true);
            window_bits(g, y, window, bits, &exists);
            candidate_mask(bits, g.eight);
            for i in Ones::new(&bits.cand) {
                let kk = neighbour_slots(window, i, g.eight, &mut slots);
                let rep = if g.eight {
                    repeats::<8>(&slots)
                } else {
                    repeats::<4>(&slots)
                };
                let region = n + window.ec[i] - 1;
                let mut first = first_slots(&slots, kk, rep);
                while first != 0 {
                    let c = slots[first.trailing_zeros() as usize];
                    first &= first - 1;
                    if outside(region, c) {
                        *hull.at(c) += 1;
                    }
                }
            }
        }
        return;
    }
    for (k, y) in rows.enumerate() {
        work.window.load(g, y, k > 0, false);
        let erow = &empties[y * w..(y + 1) * w];
        incidences(g, &work.window, |i, own, ls, _| {
            let region = if own != 0 {
                own - 1
            } else {
                n + erow[i - 1] - 1
            };
            for &c in ls {
                if outside(region, c) {
                    *hull.at(c) += 1;
                }
            }
        });
    }
}
