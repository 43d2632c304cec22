//! The bit-mask pass of occupancy mode: runs, bonds and perimeter candidates from bit rows.

use super::window::{first_slots, neighbour_slots, repeats, Grid, Window};
use super::{HullRule, StripSinks, Work, NO_PARENT};
use crate::core::bits::{bit, pack_nonzero, pop_range, run_bounds, shl1, shr1, Ones};
use std::ops::Range;

/// Bit rows over the padded columns `0..w + 2` (bit `i` = padded column `i`).
#[derive(Default)]
pub(super) struct Bits {
    pub(super) occ_u: Vec<u64>,
    pub(super) occ_c: Vec<u64>,
    pub(super) occ_d: Vec<u64>,
    pub(super) emp_u: Vec<u64>,
    pub(super) emp_c: Vec<u64>,
    pub(super) emp_d: Vec<u64>,
    pub(super) real: Vec<u64>,
    pub(super) a: Vec<u64>,
    pub(super) b: Vec<u64>,
    pub(super) starts: Vec<u64>,
    pub(super) ends: Vec<u64>,
    pub(super) cand: Vec<u64>,
}

/// `bits.cand` = the empty sites of the current row (real columns) with an occupied neighbour.
pub(super) fn candidate_mask(bits: &mut Bits, eight: bool) {
    let Bits {
        occ_u,
        occ_c,
        occ_d,
        emp_c,
        real,
        a,
        b,
        cand,
        ..
    } = bits;
    for ((c, &u), &d) in cand.iter_mut().zip(occ_u.iter()).zip(occ_d.iter()) {
        *c = u | d;
    }
    let mut or_shifted = |src: &[u64], cand: &mut [u64]| {
        shl1(src, a);
        shr1(src, b);
        for ((c, &x), &y) in cand.iter_mut().zip(a.iter()).zip(b.iter()) {
            *c |= x | y;
        }
    };
    or_shifted(occ_c, cand);
    if eight {
        or_shifted(occ_u, cand);
        or_shifted(occ_d, cand);
    }
    for ((c, &e), &r) in cand.iter_mut().zip(emp_c.iter()).zip(real.iter()) {
        *c &= e & r;
    }
}

/// Sizes the bit rows for `w` columns and returns the mask of the padded columns that exist.
pub(super) fn setup_bits(bits: &mut Bits, w: usize, wraps_x: bool) -> Vec<u64> {
    let nw = (w + 2).div_ceil(64);
    for v in [
        &mut bits.occ_u,
        &mut bits.occ_c,
        &mut bits.occ_d,
        &mut bits.emp_u,
        &mut bits.emp_c,
        &mut bits.emp_d,
        &mut bits.real,
        &mut bits.a,
        &mut bits.b,
        &mut bits.starts,
        &mut bits.ends,
        &mut bits.cand,
    ] {
        v.clear();
        v.resize(nw, 0);
    }
    // Real columns 1..=w, and the padding columns when they exist.
    for i in 1..=w {
        bits.real[i / 64] |= 1 << (i % 64);
    }
    let mut exists = bits.real.clone();
    if wraps_x {
        exists[0] |= 1;
        exists[(w + 1) / 64] |= 1 << ((w + 1) % 64);
    }
    exists
}

/// Occupancy and existing-empty bits of the window's three rows (row `y`).
pub(super) fn window_bits(g: &Grid<'_>, y: usize, win: &Window, bits: &mut Bits, exists: &[u64]) {
    pack_nonzero(&win.lu, &mut bits.occ_u);
    pack_nonzero(&win.lc, &mut bits.occ_c);
    pack_nonzero(&win.ld, &mut bits.occ_d);
    // Empty sites that exist (a missing row or padding column is no site at all).
    let up = u64::from(g.above(y).is_some()).wrapping_neg();
    let down = u64::from(g.below(y).is_some()).wrapping_neg();
    for (i, &e) in exists.iter().enumerate() {
        bits.emp_c[i] = e & !bits.occ_c[i];
        bits.emp_u[i] = up & e & !bits.occ_u[i];
        bits.emp_d[i] = down & e & !bits.occ_d[i];
    }
}

/// The occupancy pass over one strip, row by row with bit masks:
///
/// - moments and bond perimeters per run of occupied sites (a run's bonds are the empty sites at
///   its two ends and, by popcount, the empty sites above and below it: 1 or 3 per site);
/// - the site perimeter is the bond count less, for each empty site, the neighbour slots that
///   repeat an earlier slot's cluster (each empty site then counts once per distinct cluster);
/// - in tree mode the hull is the site perimeter less the perimeter sites in the cluster's holes:
///   the empty sites whose region's parent is among their neighbours;
/// - the complement's region sizes per run of empty sites (a run of empty sites is one region).
pub(super) fn occupancy_strip(
    g: &Grid<'_>,
    pieces: &[u32],
    rows: Range<usize>,
    sinks: &mut StripSinks<'_>,
    hull: HullRule<'_>,
    edges: bool,
    work: &mut Work,
) {
    let w = g.w;
    let full = sinks.perimeter.is_some();
    let n = g.clusters;
    let Work {
        window,
        edges: edge_list,
        seen,
        bits,
    } = work;
    let exists = setup_bits(bits, w, g.wraps_x);
    if edges {
        seen.clear();
        seen.resize(1024, u64::MAX);
    }
    let eight = g.eight;
    if !full {
        // Moments only: runs straight from the pieces' rows.
        let nwu = w.div_ceil(64);
        let (a, tmp) = (&mut bits.a[..nwu], &mut bits.b[..nwu]);
        let (starts, ends) = (&mut bits.starts[..nwu], &mut bits.ends[..nwu]);
        for y in rows {
            let prow = &pieces[y * w..(y + 1) * w];
            pack_nonzero(prow, a);
            run_bounds(a, tmp, starts, ends);
            let mut run_ends = Ones::new(ends);
            for x0 in Ones::new(starts) {
                let x1 = run_ends.next().unwrap_or(x0);
                sinks
                    .moments
                    .at(prow[x0])
                    .add_run(y as u32, x0 as u32, x1 as u32);
            }
        }
        return;
    }
    for (k, y) in rows.enumerate() {
        window.load(g, y, k > 0, g.empties.is_some());
        let lc = &window.lc;
        window_bits(g, y, window, bits, &exists);
        // Runs of occupied sites in the real columns.
        for ((a, &o), &r) in bits.a.iter_mut().zip(&bits.occ_c).zip(&bits.real) {
            *a = o & r;
        }
        run_bounds(&bits.a, &mut bits.b, &mut bits.starts, &mut bits.ends);
        let prow = &pieces[y * w..(y + 1) * w];
        let perimeter = &mut sinks.perimeter;
        let mut ends = Ones::new(&bits.ends);
        for a in Ones::new(&bits.starts) {
            let b = ends.next().unwrap_or(a);
            sinks
                .moments
                .at(prow[a - 1])
                .add_run(y as u32, (a - 1) as u32, (b - 1) as u32);
            if let Some(perimeter) = perimeter.as_mut() {
                let (eu, ec, ed) = (&bits.emp_u, &bits.emp_c, &bits.emp_d);
                let mut bonds = bit(ec, a - 1) + bit(ec, b + 1);
                bonds += pop_range(eu, a, b) + pop_range(ed, a, b);
                if eight {
                    bonds += pop_range(eu, a - 1, b - 1) + pop_range(eu, a + 1, b + 1);
                    bonds += pop_range(ed, a - 1, b - 1) + pop_range(ed, a + 1, b + 1);
                }
                let p = perimeter.at(lc[a]);
                let bonds = u64::from(bonds);
                p.bond = p.bond.wrapping_add(bonds);
                p.site = p.site.wrapping_add(bonds);
                p.hull = p.hull.wrapping_add(bonds);
            }
        }
        let Some(perimeter) = perimeter.as_mut() else {
            continue;
        };
        // Sizes of the complement's regions, per run of empty sites.
        if let Some(sizes) = sinks.empty_sizes.as_mut() {
            for ((a, &e), &r) in bits.a.iter_mut().zip(&bits.emp_c).zip(&bits.real) {
                *a = e & r;
            }
            run_bounds(&bits.a, &mut bits.b, &mut bits.starts, &mut bits.ends);
            let mut ends = Ones::new(&bits.ends);
            for a in Ones::new(&bits.starts) {
                let b = ends.next().unwrap_or(a);
                *sizes.at(window.ec[a]) += (b + 1 - a) as u64;
            }
        }
        candidate_mask(bits, eight);
        let ec = &window.ec;
        let mut slots = [0u32; 8];
        for i in Ones::new(&bits.cand) {
            let k = neighbour_slots(window, i, eight, &mut slots);
            let s = &slots[..k];
            // Slots repeating an earlier slot's cluster (counted as bonds, not as sites), and
            // whether the region's parent is a neighbour (the site is in one of its holes):
            // computed without branches, then applied where any.
            let rep = if eight {
                repeats::<8>(&slots)
            } else {
                repeats::<4>(&slots)
            };
            let q = match hull {
                HullRule::Tree { parent } => parent[ec[i] as usize],
                HullRule::Later => NO_PARENT,
            };
            let hole = s.iter().fold(false, |h, &v| h | (v == q));
            if rep != 0 || hole {
                let mut r = rep;
                while r != 0 {
                    let j = r.trailing_zeros() as usize;
                    r &= r - 1;
                    let p = perimeter.at(s[j]);
                    p.site = p.site.wrapping_sub(1);
                    p.hull = p.hull.wrapping_sub(1);
                }
                if hole {
                    let p = perimeter.at(q);
                    p.hull = p.hull.wrapping_sub(1);
                }
            }
            if edges {
                let region = n + ec[i] - 1;
                let mut first = first_slots(&slots, k, rep);
                while first != 0 {
                    let v = s[first.trailing_zeros() as usize];
                    first &= first - 1;
                    let key = (u64::from(v - 1) << 32) | u64::from(region);
                    let slot = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54) as usize;
                    if seen[slot] != key {
                        seen[slot] = key;
                        edge_list.push(key);
                    }
                }
            }
        }
    }
}
