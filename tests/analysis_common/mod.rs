//! A naive oracle for the cluster table, written from `CONVENTIONS.md` and the definitions in
//! `clusterlab::analysis` alone: breadth-first labels, one breadth-first walk per cluster for the
//! unwrapped positions and the winding (a site reached again at another unwrapped position closes
//! a loop with nonzero displacement), explicit sets for the perimeters, and one flood of the
//! outside per cluster for the filled area and the hull. Nothing of the crate is used but its
//! `Connectivity` and `Boundary` enums.

#![allow(dead_code)]

use clusterlab::{Boundary, Connectivity};
use ndarray::{Array2, ArrayView2};
use std::collections::{HashSet, VecDeque};

const FOUR: [(isize, isize); 4] = [(-1, 0), (1, 0), (0, -1), (0, 1)];
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

/// The sites of a walk with their unwrapped positions, and whether it winds in x, in y.
type Walk = (Vec<((usize, usize), (i64, i64))>, bool, bool);

/// One cluster as the oracle sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub size: u64,
    pub x_min: i64,
    pub x_max: i64,
    pub y_min: i64,
    pub y_max: i64,
    pub centroid_x: f64,
    pub centroid_y: f64,
    pub gyration_radius: f64,
    pub site_perimeter: u64,
    pub bond_perimeter: u64,
    pub hull_perimeter: u64,
    pub filled_area: u64,
    pub wraps_x: bool,
    pub wraps_y: bool,
    pub spans_x: bool,
    pub spans_y: bool,
}

impl Row {
    /// The value of the output column `name` (as in the CSV header and the HDF5 datasets; see
    /// `clusterlab::analysis::COLUMNS`) for the cluster labeled `label`, as `f64` (flags 0/1);
    /// `None` for a name the oracle does not know.
    pub fn column(&self, name: &str, label: u32) -> Option<f64> {
        let flag = |b: bool| f64::from(u8::from(b));
        Some(match name {
            "label" => f64::from(label),
            "size" => self.size as f64,
            "x_min" => self.x_min as f64,
            "x_max" => self.x_max as f64,
            "y_min" => self.y_min as f64,
            "y_max" => self.y_max as f64,
            "centroid_x" => self.centroid_x,
            "centroid_y" => self.centroid_y,
            "gyration_radius" => self.gyration_radius,
            "site_perimeter" => self.site_perimeter as f64,
            "bond_perimeter" => self.bond_perimeter as f64,
            "hull_perimeter" => self.hull_perimeter as f64,
            "filled_area" => self.filled_area as f64,
            "wraps_x" => flag(self.wraps_x),
            "wraps_y" => flag(self.wraps_y),
            "spans_x" => flag(self.spans_x),
            "spans_y" => flag(self.spans_y),
            _ => return None,
        })
    }
}

/// The lattice and its rules.
pub struct Oracle<'a> {
    pub values: ArrayView2<'a, u32>,
    pub connectivity: Connectivity,
    pub boundary: Boundary,
    pub segments: bool,
    h: usize,
    w: usize,
}

fn dual(c: Connectivity) -> Connectivity {
    match c {
        Connectivity::Four => Connectivity::Eight,
        Connectivity::Eight => Connectivity::Four,
    }
}

impl<'a> Oracle<'a> {
    pub fn new(
        values: ArrayView2<'a, u32>,
        connectivity: Connectivity,
        boundary: Boundary,
        segments: bool,
    ) -> Self {
        let (h, w) = values.dim();
        Oracle {
            values,
            connectivity,
            boundary,
            segments,
            h,
            w,
        }
    }

    fn wraps(&self) -> (bool, bool) {
        match self.boundary {
            Boundary::Open => (false, false),
            Boundary::Periodic => (true, true),
            Boundary::PeriodicX => (false, true),
            Boundary::PeriodicY => (true, false),
        }
    }

    /// The literal neighbours of `(y, x)` as `(y, x, dy, dx)`: the neighbour and the step's
    /// displacement.
    pub fn steps(&self, y: usize, x: usize, c: Connectivity) -> Vec<(usize, usize, isize, isize)> {
        let (wy, wx) = self.wraps();
        let offs: &[(isize, isize)] = match c {
            Connectivity::Four => &FOUR,
            Connectivity::Eight => &EIGHT,
        };
        let mv = |v: usize, d: isize, n: usize, wrap: bool| -> Option<usize> {
            let t = v as isize + d;
            if t >= 0 && (t as usize) < n {
                Some(t as usize)
            } else if wrap {
                Some(t.rem_euclid(n as isize) as usize)
            } else {
                None
            }
        };
        offs.iter()
            .filter_map(|&(dy, dx)| Some((mv(y, dy, self.h, wy)?, mv(x, dx, self.w, wx)?, dy, dx)))
            .collect()
    }

    fn joined(&self, a: (usize, usize), b: (usize, usize)) -> bool {
        let (va, vb) = (self.values[a], self.values[b]);
        va != 0 && vb != 0 && (!self.segments || va == vb)
    }

    /// Breadth-first labels, clusters numbered in raster order of their first site.
    pub fn labels(&self) -> (Array2<u32>, usize) {
        self.flood_labels(
            |a, b| self.joined(a, b),
            |s| self.values[s] != 0,
            self.connectivity,
        )
    }

    /// Labels of the complement (zero sites) with the dual connectivity.
    fn empty_labels(&self) -> (Array2<u32>, usize) {
        let empty = |s: (usize, usize)| self.values[s] == 0;
        self.flood_labels(|a, b| empty(a) && empty(b), empty, dual(self.connectivity))
    }

    fn flood_labels(
        &self,
        joined: impl Fn((usize, usize), (usize, usize)) -> bool,
        member: impl Fn((usize, usize)) -> bool,
        c: Connectivity,
    ) -> (Array2<u32>, usize) {
        let mut out = Array2::<u32>::zeros((self.h, self.w));
        let mut n = 0;
        for y in 0..self.h {
            for x in 0..self.w {
                if !member((y, x)) || out[[y, x]] != 0 {
                    continue;
                }
                n += 1;
                out[[y, x]] = n;
                let mut q = VecDeque::from([(y, x)]);
                while let Some((cy, cx)) = q.pop_front() {
                    for (ny, nx, _, _) in self.steps(cy, cx, c) {
                        if out[[ny, nx]] == 0 && joined((cy, cx), (ny, nx)) {
                            out[[ny, nx]] = n;
                            q.push_back((ny, nx));
                        }
                    }
                }
            }
        }
        (out, n as usize)
    }

    /// Walks region `id` of `labels` from its first site, assigning unwrapped positions; returns
    /// the sites with their positions and whether a loop winds in x, in y.
    fn walk(
        &self,
        labels: &Array2<u32>,
        id: u32,
        c: Connectivity,
        joined: impl Fn((usize, usize), (usize, usize)) -> bool,
    ) -> Walk {
        let first = labels
            .indexed_iter()
            .find(|(_, &l)| l == id)
            .map(|(s, _)| s)
            .expect("region exists");
        let mut pos: Array2<Option<(i64, i64)>> = Array2::from_elem((self.h, self.w), None);
        pos[first] = Some((first.0 as i64, first.1 as i64));
        let mut order = vec![first];
        let mut q = VecDeque::from([first]);
        let (mut wx, mut wy) = (false, false);
        while let Some(s) = q.pop_front() {
            let (py, px) = pos[s].unwrap();
            for (ny, nx, dy, dx) in self.steps(s.0, s.1, c) {
                let t = (ny, nx);
                if labels[t] != id || !joined(s, t) {
                    continue;
                }
                let p = (py + dy as i64, px + dx as i64);
                match pos[t] {
                    None => {
                        pos[t] = Some(p);
                        order.push(t);
                        q.push_back(t);
                    }
                    Some(old) => {
                        wy |= old.0 != p.0;
                        wx |= old.1 != p.1;
                    }
                }
            }
        }
        let sites = order.into_iter().map(|s| (s, pos[s].unwrap())).collect();
        (sites, wx, wy)
    }

    /// The full table, row `i` = cluster `i + 1`.
    pub fn table(&self) -> Vec<Row> {
        let (h, w) = (self.h, self.w);
        let (wrap_y, wrap_x) = self.wraps();
        let (labels, n) = self.labels();
        let (empties, m) = self.empty_labels();
        let empty = |s: (usize, usize)| self.values[s] == 0;

        // Walks: clusters and the complement's regions (their winding seeds the outside).
        let walks: Vec<_> = (1..=n as u32)
            .map(|c| self.walk(&labels, c, self.connectivity, |a, b| self.joined(a, b)))
            .collect();
        let empty_wraps: Vec<bool> = (1..=m as u32)
            .map(|e| {
                let (_, x, y) = self.walk(&empties, e, dual(self.connectivity), |a, b| {
                    empty(a) && empty(b)
                });
                x || y
            })
            .collect();

        let mut rows = Vec::new();
        for (ci, (sites, wx, wy)) in walks.iter().enumerate() {
            let c = ci as u32 + 1;
            let coords: Vec<(i64, i64)> = sites
                .iter()
                .map(|&((y, x), (uy, ux))| {
                    (
                        if *wy { y as i64 } else { uy },
                        if *wx { x as i64 } else { ux },
                    )
                })
                .collect();
            let size = sites.len() as u64;
            let nf = size as f64;
            let cy = coords.iter().map(|p| p.0 as f64).sum::<f64>() / nf;
            let cx = coords.iter().map(|p| p.1 as f64).sum::<f64>() / nf;
            let r2 = coords
                .iter()
                .map(|p| (p.0 as f64 - cy).powi(2) + (p.1 as f64 - cx).powi(2))
                .sum::<f64>()
                / nf;
            // Perimeters.
            let in_c = |s: (usize, usize)| labels[s] == c;
            let mut perim = HashSet::new();
            let mut bonds = 0u64;
            for &(s, _) in sites {
                for (ny, nx, _, _) in self.steps(s.0, s.1, self.connectivity) {
                    if !in_c((ny, nx)) {
                        perim.insert((ny, nx));
                        bonds += 1;
                    }
                }
            }
            // The outside of c: seeds on open edges and in wrapping regions other than c.
            let mut reached = Array2::from_elem((h, w), false);
            let mut q = VecDeque::new();
            for y in 0..h {
                for x in 0..w {
                    let s = (y, x);
                    if in_c(s) {
                        continue;
                    }
                    let on_edge =
                        (!wrap_x && (x == 0 || x + 1 == w)) || (!wrap_y && (y == 0 || y + 1 == h));
                    let wrapping_region = if labels[s] != 0 {
                        let (_, ox, oy) = &walks[labels[s] as usize - 1];
                        *ox || *oy
                    } else {
                        empty_wraps[empties[s] as usize - 1]
                    };
                    if on_edge || wrapping_region {
                        reached[s] = true;
                        q.push_back(s);
                    }
                }
            }
            while let Some(s) = q.pop_front() {
                let mut next: Vec<(usize, usize)> = self
                    .steps(s.0, s.1, dual(self.connectivity))
                    .into_iter()
                    .map(|(y, x, _, _)| (y, x))
                    .collect();
                if labels[s] != 0 {
                    // Along the other cluster's own joins.
                    next.extend(
                        self.steps(s.0, s.1, self.connectivity)
                            .into_iter()
                            .map(|(y, x, _, _)| (y, x))
                            .filter(|&t| labels[t] == labels[s] && self.joined(s, t)),
                    );
                }
                for t in next {
                    if !in_c(t) && !reached[t] {
                        reached[t] = true;
                        q.push_back(t);
                    }
                }
            }
            let outside = reached.iter().filter(|&&r| r).count() as u64;
            let hull = perim.iter().filter(|&&s| reached[s]).count() as u64;
            let ymin = coords.iter().map(|p| p.0).min().unwrap();
            let ymax = coords.iter().map(|p| p.0).max().unwrap();
            let xmin = coords.iter().map(|p| p.1).min().unwrap();
            let xmax = coords.iter().map(|p| p.1).max().unwrap();
            rows.push(Row {
                size,
                x_min: xmin,
                x_max: xmax,
                y_min: ymin,
                y_max: ymax,
                centroid_x: cx,
                centroid_y: cy,
                gyration_radius: r2.sqrt(),
                site_perimeter: perim.len() as u64,
                bond_perimeter: bonds,
                hull_perimeter: hull,
                filled_area: (h * w) as u64 - outside,
                wraps_x: *wx,
                wraps_y: *wy,
                spans_x: !wrap_x && xmin == 0 && xmax == w as i64 - 1,
                spans_y: !wrap_y && ymin == 0 && ymax == h as i64 - 1,
            });
        }
        rows
    }
}
