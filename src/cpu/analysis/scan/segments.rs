//! The site-by-site pass of segment mode.

use super::window::{incidences, Grid};
use super::{StripSinks, Work};
use std::ops::Range;

/// The site-by-site pass (segment mode): every site outside a neighbouring segment is visited.
pub(super) fn segment_strip(
    g: &Grid<'_>,
    pieces: &[u32],
    rows: Range<usize>,
    sinks: &mut StripSinks<'_>,
    edges: bool,
    work: &mut Work,
) {
    let w = g.w;
    let full = sinks.perimeter.is_some();
    let with_empties = full && g.empties.is_some();
    let Work {
        window,
        edges: edge_list,
        seen,
        ..
    } = work;
    if edges {
        seen.clear();
        seen.resize(1024, u64::MAX);
    }
    for (k, y) in rows.clone().enumerate() {
        // Moments, run by run.
        let prow = &pieces[y * w..(y + 1) * w];
        let mut x = 0;
        while x < w {
            let v = prow[x];
            if v == 0 {
                x += 1;
                continue;
            }
            let x0 = x;
            x += 1;
            while x < w && prow[x] == v {
                x += 1;
            }
            sinks
                .moments
                .at(v)
                .add_run(y as u32, x0 as u32, (x - 1) as u32);
        }
        if !full {
            continue;
        }
        window.load(g, y, k > 0, with_empties);
        // Sizes of the complement's regions, run by run.
        if let (Some(sizes), Some(empties)) = (sinks.empty_sizes.as_mut(), g.empties) {
            let erow = &empties[y * w..(y + 1) * w];
            let mut x = 0;
            while x < w {
                let v = erow[x];
                if v == 0 {
                    x += 1;
                    continue;
                }
                let x0 = x;
                x += 1;
                while x < w && erow[x] == v {
                    x += 1;
                }
                *sizes.at(v) += (x - x0) as u64;
            }
        }
        // Perimeters (the hull comes from the hull pass).
        let perimeter = sinks.perimeter.as_mut().expect("full");
        incidences(g, window, |_, _, ls, ms| {
            for (&c, &m) in ls.iter().zip(ms) {
                let p = perimeter.at(c);
                p.site += 1;
                p.bond += u64::from(m);
            }
        });
        // Region graph edges between different regions that are neighbours in the complement's
        // connectivity (forward half of the neighbourhood; the padding is outside: node 0 − 1).
        if edges {
            let (lc, ld, ec, ed) = (&window.lc, &window.ld, &window.ec, &window.ed);
            let n = g.clusters;
            let node = |l: u32, e: u32| -> u32 {
                if l != 0 {
                    l - 1
                } else if e != 0 {
                    n + e - 1
                } else {
                    u32::MAX
                }
            };
            let mut push = |a: u32, b: u32| {
                if a == b || a == u32::MAX || b == u32::MAX {
                    return;
                }
                let key = (u64::from(a.min(b)) << 32) | u64::from(a.max(b));
                let slot = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54) as usize;
                if seen[slot] != key {
                    seen[slot] = key;
                    edge_list.push(key);
                }
            };
            for i in 1..=w {
                let a = node(lc[i], ec[i]);
                push(a, node(lc[i + 1], ec[i + 1]));
                push(a, node(ld[i], ed[i]));
                if !g.eight {
                    // Complement is 8-connected.
                    push(a, node(ld[i - 1], ed[i - 1]));
                    push(a, node(ld[i + 1], ed[i + 1]));
                }
            }
        }
    }
}
