//! The seam join, on the host: the strips' border rows in, the local roots each strip must
//! demote out.
//!
//! Each strip was labeled alone (open in `y`, the lattice's own `x` boundary), so its labels are
//! strip-local roots + 1, each root the smallest site of its strip-local component. Clusters
//! that cross a seam are unions of such components; the seams hold O(width × strips) labels, so
//! their equivalences are few and are resolved here by a union-find over global site ids (strip
//! offset + local root) that links under the smaller id. A cluster's global root is then its
//! smallest site, as on one device, and every other local root on a seam is *demoted* under it.

use crate::core::id_hash::IdMap;

/// The border rows of one strip, as downloaded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Edges<'a> {
    /// The global index of the strip's first site.
    pub offset: u64,
    /// Labels of the strip's first and last rows (the same row for a strip of one row).
    pub top: &'a [u32],
    pub bottom: &'a [u32],
    /// Segments only: the site values of those rows (empty otherwise).
    pub top_values: &'a [u32],
    pub bottom_values: &'a [u32],
}

/// How sites meet across a seam.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rule {
    /// 8-connectivity: diagonal neighbours across the seam too.
    pub eight: bool,
    pub wrap_x: bool,
    /// A seam between the last strip and the first.
    pub wrap_y: bool,
    /// Neighbours join only when they hold the same value.
    pub segments: bool,
}

/// A local root that the join put under a smaller root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Demotion {
    /// The demoted root, as a site index within its strip.
    pub local: u32,
    /// The strip holding its cluster's global root.
    pub root_strip: usize,
    /// That root as a site index within its strip.
    pub root_local: u32,
    /// That root as a global site index.
    pub root: u64,
}

/// Union-find over the global ids of the local roots met on the seams.
#[derive(Default)]
struct Forest {
    index: IdMap<u64, u32>,
    id: Vec<u64>,
    strip: Vec<u32>,
    parent: Vec<u32>,
}

impl Forest {
    /// The node of global id `id` (of strip `strip`), made on first sight.
    fn node(&mut self, id: u64, strip: usize) -> u32 {
        let next = self.id.len() as u32;
        let n = *self.index.entry(id).or_insert(next);
        if n == next {
            self.id.push(id);
            self.strip.push(strip as u32);
            self.parent.push(n);
        }
        n
    }

    fn find(&mut self, mut n: u32) -> u32 {
        while self.parent[n as usize] != n {
            let gp = self.parent[self.parent[n as usize] as usize];
            self.parent[n as usize] = gp;
            n = gp;
        }
        n
    }

    /// Links the larger root under the smaller, so that every root is its set's smallest id.
    fn unite(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            let (lo, hi) = if self.id[ra as usize] < self.id[rb as usize] {
                (ra, rb)
            } else {
                (rb, ra)
            };
            self.parent[hi as usize] = lo;
        }
    }
}

/// Unites across one seam: row `up` (the last row of strip `i`) above row `down` (the first row
/// of strip `j`).
fn seam(f: &mut Forest, strips: &[Edges<'_>], i: usize, j: usize, rule: Rule) {
    let (a, b) = (&strips[i], &strips[j]);
    let w = a.bottom.len();
    let reach: &[isize] = if rule.eight { &[-1, 0, 1] } else { &[0] };
    // Runs repeat the same pair of labels: skip a pair equal to the one just united.
    let mut last = (0u32, 0u32);
    for x in 0..w {
        let la = a.bottom[x];
        if la == 0 {
            continue;
        }
        for &dx in reach {
            let t = x as isize + dx;
            let x2 = if (0..w as isize).contains(&t) {
                t as usize
            } else if rule.wrap_x {
                t.rem_euclid(w as isize) as usize
            } else {
                continue;
            };
            let lb = b.top[x2];
            if lb == 0 || (rule.segments && a.bottom_values[x] != b.top_values[x2]) {
                continue;
            }
            if (la, lb) == last {
                continue;
            }
            last = (la, lb);
            let na = f.node(a.offset + u64::from(la - 1), i);
            let nb = f.node(b.offset + u64::from(lb - 1), j);
            f.unite(na, nb);
        }
    }
}

/// The demotions of every strip (sorted by local root), from the strips' border rows, top to
/// bottom. All rows have the lattice's width.
pub(crate) fn join(strips: &[Edges<'_>], rule: Rule) -> Vec<Vec<Demotion>> {
    let s = strips.len();
    let mut f = Forest::default();
    for i in 0..s {
        if i + 1 < s {
            seam(&mut f, strips, i, i + 1, rule);
        } else if rule.wrap_y {
            seam(&mut f, strips, i, 0, rule);
        }
    }
    let mut out = vec![Vec::new(); s];
    for n in 0..f.id.len() as u32 {
        let r = f.find(n);
        if r == n {
            continue;
        }
        let (strip, root_strip) = (f.strip[n as usize] as usize, f.strip[r as usize] as usize);
        let root = f.id[r as usize];
        out[strip].push(Demotion {
            local: (f.id[n as usize] - strips[strip].offset) as u32,
            root_strip,
            root_local: (root - strips[root_strip].offset) as u32,
            root,
        });
    }
    for d in &mut out {
        d.sort_unstable_by_key(|d| d.local);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const FOUR_OPEN: Rule = Rule {
        eight: false,
        wrap_x: false,
        wrap_y: false,
        segments: false,
    };

    fn edges<'a>(offset: u64, top: &'a [u32], bottom: &'a [u32]) -> Edges<'a> {
        Edges {
            offset,
            top,
            bottom,
            top_values: &[],
            bottom_values: &[],
        }
    }

    /// Width 3, three strips of two rows (offsets 0, 6, 12). A column of sites down x = 1 joins
    /// strip 1's root (local 1, id 7) and strip 2's (local 1, id 13) under strip 0's (id 1).
    #[test]
    fn a_column_through_three_strips() {
        let s = [
            edges(0, &[0, 2, 0], &[0, 2, 0]),
            edges(6, &[0, 2, 0], &[0, 2, 0]),
            edges(12, &[0, 2, 0], &[0, 2, 0]),
        ];
        let d = join(&s, FOUR_OPEN);
        assert!(d[0].is_empty());
        let want = |local| Demotion {
            local,
            root_strip: 0,
            root_local: 1,
            root: 1,
        };
        assert_eq!(d[1], [want(1)]);
        assert_eq!(d[2], [want(1)]);
    }

    /// Diagonal contacts join only with 8-connectivity; across the x edge only when it wraps.
    #[test]
    fn diagonals_and_x_wrap() {
        // Sites (1, 0) (strip 0's local root 3) and (2, 2) (strip 1's local root 2, id 8):
        // neighbours only diagonally across the wrapped x edge.
        let s = [
            edges(0, &[1, 0, 0], &[4, 0, 0]),
            edges(6, &[0, 0, 3], &[0, 0, 0]),
        ];
        let mut rule = FOUR_OPEN;
        rule.eight = true;
        assert!(join(&s, rule).iter().all(Vec::is_empty));
        rule.wrap_x = true;
        let d = join(&s, rule);
        assert_eq!(d[1].len(), 1);
        assert_eq!((d[1][0].local, d[1][0].root), (2, 3));
        rule.eight = false;
        assert!(join(&s, rule).iter().all(Vec::is_empty));
    }

    /// The periodic y seam joins the last strip's bottom row to the first strip's top row, and
    /// the root is the smallest id whichever strip it is in.
    #[test]
    fn y_wrap_and_smallest_root() {
        // Width 3, strips of two rows. Strip 0's site (0, 2) is its own root (id 2); strip 1's
        // site (1, 2) belongs to a component rooted at its local site 3 (id 9).
        let s = [
            edges(0, &[0, 0, 3], &[0, 0, 0]),
            edges(6, &[0, 0, 0], &[0, 0, 4]),
        ];
        let mut rule = FOUR_OPEN;
        assert!(join(&s, rule).iter().all(Vec::is_empty));
        rule.wrap_y = true;
        let d = join(&s, rule);
        assert_eq!(
            d[1],
            [Demotion {
                local: 3,
                root_strip: 0,
                root_local: 2,
                root: 2
            }]
        );
        assert!(d[0].is_empty());
    }

    /// A loop through another strip demotes a root under another root of its own strip.
    #[test]
    fn loops_within_a_strip() {
        // Width 3. Strip 0 (one row) holds two separate sites, ids 0 and 2; strip 1 (two rows,
        // offset 3) one U-shaped component rooted at id 3 that touches both.
        let s = [
            edges(0, &[1, 0, 3], &[1, 0, 3]),
            edges(3, &[1, 0, 1], &[1, 1, 1]),
        ];
        let d = join(&s, FOUR_OPEN);
        assert_eq!(d[0].len(), 1);
        assert_eq!((d[0][0].local, d[0][0].root, d[0][0].root_strip), (2, 0, 0));
        assert_eq!(d[1].len(), 1);
        assert_eq!((d[1][0].local, d[1][0].root), (0, 0));
    }

    /// Segments join only equal values.
    #[test]
    fn segments_compare_values() {
        let s = [
            Edges {
                offset: 0,
                top: &[1, 2],
                bottom: &[1, 2],
                top_values: &[5, 6],
                bottom_values: &[5, 6],
            },
            Edges {
                offset: 2,
                top: &[1, 1],
                bottom: &[1, 1],
                top_values: &[5, 5],
                bottom_values: &[5, 5],
            },
        ];
        let mut rule = FOUR_OPEN;
        rule.segments = true;
        let d = join(&s, rule);
        assert!(d[0].is_empty());
        assert_eq!((d[1][0].local, d[1][0].root), (0, 0));
        rule.segments = false;
        let d = join(&s, rule);
        assert_eq!(d[0].len(), 1);
        assert_eq!((d[0][0].local, d[0][0].root), (1, 0));
    }
}
