//! The strip join end to end without a GPU: each strip labeled by a small BFS with raw labels
//! (as a family leaves them), the host join and numbering, and the strip kernels' passes
//! (`kernels/strips.cu`) replayed in Rust in their order, against a BFS of the whole lattice;
//! and the strip kernels compiled by NVRTC.

use super::layout::{plan, Split};
use super::numbering::{self, FLAG};
use super::seam::{self, Demotion};
use crate::lattice::Boundary;
use std::collections::VecDeque;

/// Raw labels (smallest site + 1) of an `h × w` lattice; open `y` unless `wrap_y`.
fn bfs(
    sites: &[u32],
    (h, w): (usize, usize),
    eight: bool,
    (wrap_y, wrap_x): (bool, bool),
    segments: bool,
) -> Vec<u32> {
    let mut out = vec![0u32; h * w];
    let step = |v: usize, d: isize, n: usize, wrap: bool| {
        let t = v as isize + d;
        if (0..n as isize).contains(&t) {
            Some(t as usize)
        } else if wrap {
            Some(t.rem_euclid(n as isize) as usize)
        } else {
            None
        }
    };
    for start in 0..h * w {
        if sites[start] == 0 || out[start] != 0 {
            continue;
        }
        out[start] = start as u32 + 1;
        let mut queue = VecDeque::from([start]);
        while let Some(p) = queue.pop_front() {
            let (y, x) = (p / w, p % w);
            for dy in -1isize..=1 {
                for dx in -1isize..=1 {
                    if (dy, dx) == (0, 0) || (!eight && dy != 0 && dx != 0) {
                        continue;
                    }
                    let (Some(ny), Some(nx)) = (step(y, dy, h, wrap_y), step(x, dx, w, wrap_x))
                    else {
                        continue;
                    };
                    let q = ny * w + nx;
                    let joined = sites[q] != 0 && (!segments || sites[q] == sites[p]);
                    if joined && out[q] == 0 {
                        out[q] = start as u32 + 1;
                        queue.push_back(q);
                    }
                }
            }
        }
    }
    out
}

/// Canonical labels from raw ones: roots numbered in raster order.
fn canonical(raw: &[u32]) -> Vec<u32> {
    let mut number = vec![0u32; raw.len()];
    let mut next = 0;
    for (i, &r) in raw.iter().enumerate() {
        if r == i as u32 + 1 {
            next += 1;
            number[i] = next;
        }
    }
    raw.iter()
        .map(|&r| if r == 0 { 0 } else { number[r as usize - 1] })
        .collect()
}

fn mark(l: &mut [u32], pairs: &[[u32; 2]]) {
    for &[i, v] in pairs {
        l[i as usize] = v;
    }
}

/// The multi-strip labels (raw and canonical) and counts, as the labeler computes them.
fn strips_labels(
    sites: &[u32],
    (h, w): (usize, usize),
    rows: &[usize],
    eight: bool,
    boundary: Boundary,
    segments: bool,
) -> ((Vec<u32>, usize), (Vec<u32>, usize)) {
    let strips = plan(h, w, 1, &Split::Rows(rows.to_vec())).unwrap();
    let wrap_x = boundary.wraps_x();
    let local: Vec<Vec<u32>> = strips
        .iter()
        .map(|s| {
            let part = &sites[s.y0 * w..(s.y0 + s.rows) * w];
            bfs(part, (s.rows, w), eight, (false, wrap_x), segments)
        })
        .collect();
    let values: Vec<&[u32]> = strips
        .iter()
        .map(|s| &sites[s.y0 * w..(s.y0 + s.rows) * w])
        .collect();
    let edges: Vec<seam::Edges<'_>> = strips
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let last = (s.rows - 1) * w;
            seam::Edges {
                offset: s.offset(w),
                top: &local[i][..w],
                bottom: &local[i][last..last + w],
                top_values: if segments { &values[i][..w] } else { &[] },
                bottom_values: if segments {
                    &values[i][last..last + w]
                } else {
                    &[]
                },
            }
        })
        .collect();
    let rule = seam::Rule {
        eight,
        wrap_x,
        wrap_y: boundary.wraps_y(),
        segments,
    };
    let demotions: Vec<Vec<Demotion>> = seam::join(&edges, rule);
    let roots = |l: &[u32]| {
        l.iter()
            .enumerate()
            .filter(|&(i, &v)| v == i as u32 + 1)
            .count()
    };

    // Raw: st_mark (flagged), st_raw_final, st_mark (plain).
    let mut raw = Vec::new();
    let mut raw_count = 0;
    for (i, s) in strips.iter().enumerate() {
        let mut l = local[i].clone();
        raw_count += roots(&l) - demotions[i].len();
        mark(&mut l, &numbering::raw_pairs(&demotions[i], true));
        let before = l.clone();
        for v in &mut l {
            if *v == 0 || *v & FLAG != 0 {
                continue;
            }
            let u = before[*v as usize - 1];
            *v = if u & FLAG != 0 {
                u & !FLAG
            } else {
                *v + s.offset(w) as u32
            };
        }
        mark(&mut l, &numbering::raw_pairs(&demotions[i], false));
        raw.extend(l);
    }

    // Canonical: st_mark (FLAG), count and rank the remaining roots, gather, scan, st_mark
    // (values), st_final.
    let targets = numbering::targets(&demotions);
    let mut ranked = Vec::new();
    let mut counts = Vec::new();
    let mut gathered = Vec::new();
    for (i, l) in local.iter().enumerate() {
        let mut l = l.clone();
        let flags: Vec<[u32; 2]> = demotions[i].iter().map(|d| [d.local, FLAG]).collect();
        mark(&mut l, &flags);
        let mut rank = 0;
        for (p, v) in l.iter_mut().enumerate() {
            if *v == p as u32 + 1 {
                *v = FLAG | rank;
                rank += 1;
            }
        }
        counts.push(u64::from(rank));
        gathered.push(targets[i].iter().map(|&t| l[t as usize]).collect());
        ranked.push(l);
    }
    let (first, total) = numbering::exclusive_scan(&counts).unwrap();
    let mut canon = Vec::new();
    for (i, mut l) in ranked.into_iter().enumerate() {
        let pairs = numbering::canonical_pairs(i, &demotions[i], &targets, &gathered, &first);
        mark(&mut l, &pairs);
        let off = first[i] as u32;
        let number = |v: u32| (v.wrapping_add(off) & !FLAG) + 1;
        let before = l.clone();
        for v in &mut l {
            if *v == 0 {
                continue;
            }
            *v = if *v & FLAG != 0 {
                number(*v)
            } else {
                number(before[*v as usize - 1])
            };
        }
        canon.extend(l);
    }
    ((raw, raw_count), (canon, total as usize))
}

/// A small deterministic generator (no dependency in the library's tests).
fn lcg(state: &mut u64) -> u32 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (*state >> 33) as u32
}

#[test]
fn strips_equal_one_lattice() {
    let mut state = 7u64;
    let boundaries = [
        Boundary::Open,
        Boundary::Periodic,
        Boundary::PeriodicX,
        Boundary::PeriodicY,
    ];
    for case in 0..400 {
        let h = 1 + lcg(&mut state) as usize % 12;
        let w = 1 + lcg(&mut state) as usize % 12;
        let density = lcg(&mut state) % 100;
        let segments = case % 3 == 0;
        let sites: Vec<u32> = (0..h * w)
            .map(|_| {
                let occupied = lcg(&mut state) % 100 < density;
                match (occupied, segments) {
                    (false, _) => 0,
                    (true, false) => 1,
                    (true, true) => 1 + lcg(&mut state) % 3,
                }
            })
            .collect();
        // Random heights: strips of one row and uneven ones.
        let mut rows = Vec::new();
        let mut left = h;
        while left > 0 {
            let r = 1 + lcg(&mut state) as usize % left;
            rows.push(r);
            left -= r;
        }
        for eight in [false, true] {
            let boundary = boundaries[case % 4];
            let wraps = (boundary.wraps_y(), boundary.wraps_x());
            let want = bfs(&sites, (h, w), eight, wraps, segments);
            let want_count = want
                .iter()
                .enumerate()
                .filter(|&(i, &v)| v == i as u32 + 1)
                .count();
            let ((raw, raw_count), (canon, count)) =
                strips_labels(&sites, (h, w), &rows, eight, boundary, segments);
            let what = format!("{h}×{w} rows {rows:?} eight {eight} {boundary:?} seg {segments}");
            assert_eq!(raw, want, "raw, {what}");
            assert_eq!(raw_count, want_count, "raw count, {what}");
            assert_eq!(canon, canonical(&want), "canonical, {what}");
            assert_eq!(count, want_count, "count, {what}");
        }
    }
}

/// The strip kernels compile with NVRTC for every site type (no GPU needed).
#[test]
fn strip_kernels_compile() {
    use crate::cuda::family::{Family, LabelWidth, ModuleKey, SiteType};
    use crate::cuda::runtime::nvrtc::{compile_cubin, target_arch};
    use crate::cuda::runtime::ModuleSpec;
    if !crate::cuda::runtime::nvrtc::tests::nvrtc_present() {
        return;
    }
    for site in [SiteType::U8, SiteType::U16, SiteType::U32] {
        let key = ModuleKey {
            family: Family::Strips,
            site,
            conn8: false,
            segments: false,
            labels: LabelWidth::U32,
            short_tiles: false,
        };
        for arch in [target_arch(75).unwrap(), target_arch(90).unwrap()] {
            let cubin = compile_cubin(&key.name(), &key.source(), key.headers(), &arch)
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(!cubin.is_empty());
        }
    }
}
