//! Cluster-size counts on the CPU without a label image: the strip labeler's union-find forest
//! of runs, with open boundaries, and the sizes read off it.
//!
//! Each strip, in the task that built its local forest, finds its runs' lengths (popcounts
//! between run starts) and sums each run into its parent from the last run back: parents
//! precede their children, so a root's sum is its set's size when the walk reaches it, with no
//! root search. The strip's roots are its local sets: a set that touches no lattice edge and no
//! strip seam is a whole cluster that neither wraps nor spans, and goes straight into the strip's
//! histogram. The few others (`O(w)` per strip, `O(h)` on the side edges) are gathered after the
//! seams are merged: sets of one root are summed into one *node* per open-boundary piece, with
//! the edges it touches. On periodic axes the nodes are joined across the wrapping edges by the
//! winding union-find of [`Joined`] (the analysis's own, fed with the nodes of the edge sites),
//! which says which clusters wrap. So the lattice is read once, nothing is written per site, and
//! no raster numbering is made (about labeling's time or less: `benches/size_counts.rs`).

use super::strips::{self, row_at, Row, Strip};
use super::union_find::{find, find_readonly};
use crate::core::bits::{words, WORD};
use crate::core::size_counts::{PercolatingCluster, SizeCounts};
use crate::measure::wrapping::{edge_index, Joined, WRAP_X, WRAP_Y};
use crate::rule::JoinRule;
use crate::{Boundary, Connectivity};

/// Sizes up to this go into dense per-strip histograms; larger ones are listed and sorted.
const DENSE: usize = 1024;

// Which edges a strip-local set touches.
const X0: u8 = 1;
const X1: u8 = 2;
const Y0: u8 = 4;
const Y1: u8 = 8;
/// A seam between strips (the set may be part of a larger one).
const SEAM: u8 = 16;

/// One strip's counts, kept between calls.
#[derive(Default)]
pub(crate) struct StripCounts {
    /// Per local run: its length, then the sites of the runs below it in the forest.
    size: Vec<u32>,
    /// One bit per local run: set at the roots of the sets on an edge or seam (cleared again
    /// after each call, so that only its set bits are ever written).
    listed: Vec<u64>,
    /// `(local root, size, edges)` of the sets on an edge or seam: one entry per edge run whose
    /// root differs from the entry before; the first entry of a root carries its size, the
    /// others 0.
    special: Vec<(u32, u32, u8)>,
    /// `hist[s]`: whole clusters of `s ≤ DENSE` sites.
    hist: Vec<u32>,
    /// Sizes of the larger whole clusters.
    tail: Vec<u64>,
}

/// An open-boundary piece on an edge or seam, then a cluster made of such pieces.
#[derive(Clone, Copy, Default)]
struct Node {
    /// Its root run (global label).
    root: u32,
    size: u64,
    edges: u8,
    /// A cluster's winding ([`WRAP_X`] | [`WRAP_Y`]).
    wraps: u8,
}

/// The counting's buffers, kept between calls (the forest's are the strip labeler's).
#[derive(Default)]
pub(crate) struct Scratch {
    strips: Vec<StripCounts>,
    nodes: Vec<Node>,
    /// `node_of[root]`: its node, valid only when that node points back at the root (so that
    /// the array is never cleared).
    node_of: Vec<u32>,
    /// Node (1-based, 0 = empty) of each edge site, in `edge_index` order.
    edge_node: Vec<u32>,
    joined: Joined,
    clusters: Vec<Node>,
    hist: Vec<u64>,
    tail: Vec<u64>,
}

/// Counts the clusters of `rule`'s lattice by size into `out`, with the clusters that wrap
/// (by winding) or span, on the current rayon pool with up to `threads` strips.
pub(crate) fn count<R: JoinRule>(
    rule: &R,
    connectivity: Connectivity,
    boundary: Boundary,
    threads: usize,
    forest: &mut strips::Scratch,
    scratch: &mut Scratch,
    out: &mut SizeCounts,
) {
    let (h, w) = rule.dim();
    out.reset((h, w));
    let sites = h * w;
    // Worst cases for the shape, so that only a new shape (or more runs than ever) allocates:
    // distinct sizes k satisfy k(k + 1)/2 ≤ sites; a percolating cluster has at least min(h, w)
    // sites.
    out.counts.reserve((2 * sites).isqrt() + 1);
    out.percolating.reserve(h.max(w) + 1);
    let chunk = strips::forest(
        rule,
        connectivity,
        Boundary::Open,
        threads,
        false,
        forest,
        &mut scratch.strips,
        |s, c| count_strip(s, c, h, w),
    );
    if chunk == 0 {
        return;
    }
    let nw = words(w);
    let specials: usize = scratch.strips.iter().map(|c| c.special.len()).sum();
    let bound = 2 * (h + w) + 2 * w * forest.strips.len();
    let Scratch {
        strips: counts,
        nodes,
        node_of,
        edge_node,
        joined,
        clusters,
        hist,
        tail,
    } = scratch;
    nodes.clear();
    nodes.reserve(bound.max(specials));
    if node_of.len() < forest.parent.len() {
        node_of.resize(forest.parent.len(), 0);
    }

    // The special sets, joined into one node per piece.
    let parent = &mut forest.parent;
    for (s, c) in forest.strips.iter().zip(counts.iter()) {
        for &(local, size, edges) in &c.special {
            let root = find(parent, s.offset + local);
            let k = node_of[root as usize] as usize;
            let node = if k < nodes.len() && nodes[k].root == root {
                &mut nodes[k]
            } else {
                node_of[root as usize] = nodes.len() as u32;
                nodes.push(Node {
                    root,
                    ..Node::default()
                });
                nodes.last_mut().expect("pushed")
            };
            node.size += u64::from(size);
            node.edges |= edges & !SEAM;
        }
    }

    // Clusters: the nodes themselves, or the nodes joined across the wrapping edges.
    let (wx, wy) = (boundary.wraps_x(), boundary.wraps_y());
    // (Index 0 unused, as in `Joined`.)
    clusters.clear();
    clusters.reserve(bound.max(nodes.len()) + 1);
    clusters.push(Node::default());
    joined.reserve(bound.max(nodes.len()));
    if wx || wy {
        edge_node.clear();
        edge_node.resize(2 * (h + w), 0);
        let node_at = |parent: &mut Vec<u32>, run: u32| node_of[find(parent, run) as usize] + 1;
        for y in 0..h {
            let row = row_at(&forest.strips, chunk, nw, y);
            if row.runs == 0 {
                continue;
            }
            if bit(&row, 0) {
                edge_node[2 * w + y] = node_at(parent, row.base);
            }
            if bit(&row, w - 1) {
                edge_node[2 * w + h + y] = node_at(parent, row.base + row.runs - 1);
            }
            if y == 0 || y == h - 1 {
                let at = if y == 0 { 0 } else { w };
                let mut run = row.base.wrapping_sub(1);
                let mut node = 0;
                for x in 0..w {
                    if !bit(&row, x) {
                        continue;
                    }
                    if row.starts[x / WORD] >> (x % WORD) & 1 != 0 {
                        run = run.wrapping_add(1);
                        node = node_at(parent, run);
                    }
                    edge_node[at + x] = node;
                }
            }
        }
        let at = |(y, x): (usize, usize)| edge_node[edge_index((h, w), (y, x))];
        joined.join_by(h, w, nodes.len(), connectivity, boundary, |s, t, _| {
            let (a, b) = (at(s), at(t));
            (a != 0 && b != 0 && rule.joined(s, t)).then_some((a, b))
        });
        clusters.resize(joined.count + 1, Node::default());
        for (i, n) in nodes.iter().enumerate() {
            let c = &mut clusters[joined.map[i + 1] as usize];
            c.size += n.size;
            c.edges |= n.edges;
        }
        for (c, &bits) in clusters.iter_mut().zip(&joined.wraps) {
            c.wraps = bits;
        }
    } else {
        clusters.extend_from_slice(nodes);
    }

    // The histogram: the strips' whole clusters, then the others.
    hist.clear();
    hist.resize(DENSE + 1, 0);
    tail.clear();
    tail.reserve(sites / (DENSE + 1) + bound.max(clusters.len()) + 1);
    for c in counts.iter() {
        for (a, &b) in hist.iter_mut().zip(&c.hist) {
            *a += u64::from(b);
        }
        tail.extend_from_slice(&c.tail);
    }
    for c in &clusters[1..] {
        add_size(c.size, hist, tail);
        let both = |a: u8, b: u8| c.edges & a != 0 && c.edges & b != 0;
        let p = PercolatingCluster {
            size: c.size,
            wraps_x: c.wraps & WRAP_X != 0,
            wraps_y: c.wraps & WRAP_Y != 0,
            spans_x: !wx && both(X0, X1),
            spans_y: !wy && both(Y0, Y1),
        };
        if p.wraps_x || p.wraps_y || p.spans_x || p.spans_y {
            out.percolating.push(p);
        }
    }
    out.push_counts(hist, tail);
    out.percolating.sort_unstable();
    forest.restore();
}

/// A cluster of `s` sites into the dense histogram or the list.
#[inline]
fn add_size(s: u64, hist: &mut [u64], tail: &mut Vec<u64>) {
    if s as usize <= DENSE {
        hist[s as usize] += 1;
    } else {
        tail.push(s);
    }
}

/// Whether column `x` of a row is occupied.
#[inline]
fn bit(row: &Row<'_>, x: usize) -> bool {
    row.occ[x / WORD] >> (x % WORD) & 1 != 0
}

/// One strip, right after its local forest: every run's length, summed into its parent from
/// the last run back (parents precede their children, so a run's sum is complete when it is
/// reached: at a root, its set's size), the sets on an edge or seam listed, the others (whole
/// clusters that neither wrap nor span) into the histogram. Three streaming passes over the
/// runs, no root searches but the edges'.
fn count_strip(s: &mut Strip, c: &mut StripCounts, h: usize, w: usize) {
    let nw = words(w);
    let runs = s.parent.len();
    if c.size.len() < runs {
        c.size.resize(runs, 0);
    }
    if c.listed.len() < runs.div_ceil(64) {
        c.listed.resize(runs.div_ceil(64), 0);
    }
    c.hist.clear();
    c.hist.resize(DENSE + 1, 0);
    c.tail.clear();
    c.tail.reserve(s.rows * w / (DENSE + 1) + 1);
    c.special.clear();
    c.special.reserve(4 * (w + s.rows));
    let size = &mut c.size[..runs];
    for r in 0..s.rows {
        let (base, nr) = (s.row_base[r] as usize, s.row_runs[r] as usize);
        if nr == 0 {
            continue;
        }
        let occ = &s.occ[r * nw..(r + 1) * nw];
        let starts = &s.starts[r * nw..(r + 1) * nw];
        // A run's length: the occupied sites from its start to the next run's.
        let (mut x, mut at, mut cum) = (base, 0u32, 0u32);
        let mut started = false;
        for (&o, &st) in occ.iter().zip(starts) {
            let mut st = st;
            while st != 0 {
                let j = st.trailing_zeros();
                let p = cum + (o & ((1u64 << j) - 1)).count_ones();
                if started {
                    size[x] = p - at;
                    x += 1;
                }
                (started, at) = (true, p);
                st &= st - 1;
            }
            cum += o.count_ones();
        }
        size[x] = cum - at;
    }

    // The sets on the lattice's edges and the strip's seams: the roots of the runs there.
    let (parent, special, listed) = (&s.parent[..], &mut c.special, &mut c.listed[..]);
    let mut mark = |x: usize, f: u8| {
        let r = find_readonly(parent, x as u32);
        if special
            .last()
            .is_some_and(|&(l, _, g)| l == r && g & f == f)
        {
            return;
        }
        let (i, b) = (r as usize / 64, 1u64 << (r % 64));
        // The first entry of a root will carry its size.
        let first = listed[i] & b == 0;
        listed[i] |= b;
        special.push((r, u32::from(first), f));
    };
    let last_word = (w - 1) / WORD;
    for r in 0..s.rows {
        let (base, nr) = (s.row_base[r] as usize, s.row_runs[r] as usize);
        if nr == 0 {
            continue;
        }
        let y = s.y0 + r;
        let mut f = 0;
        if r == 0 {
            f |= if y == 0 { Y0 } else { SEAM };
        }
        if r == s.rows - 1 {
            f |= if y == h - 1 { Y1 } else { SEAM };
        }
        if f != 0 {
            (base..base + nr).for_each(|x| mark(x, f));
        }
        let occ = &s.occ[r * nw..(r + 1) * nw];
        if occ[0] & 1 != 0 {
            mark(base, X0);
        }
        if occ[last_word] >> ((w - 1) % WORD) & 1 != 0 {
            mark(base + nr - 1, X1);
        }
    }

    // Sums into parents, from the last run back; a root's sum is final when it is reached.
    let listed = &c.listed[..];
    let (hist, tail) = (&mut c.hist, &mut c.tail);
    for x in (0..runs).rev() {
        let p = parent[x] as usize;
        let sz = size[x];
        // Without a branch (a root adds nothing to itself): roots come at random.
        size[p] += if p == x { 0 } else { sz };
        if p == x && listed[x / 64] >> (x % 64) & 1 == 0 {
            if sz as usize <= DENSE {
                hist[sz as usize] += 1;
            } else {
                tail.push(u64::from(sz));
            }
        }
    }
    for e in c.special.iter_mut() {
        if e.1 != 0 {
            e.1 = size[e.0 as usize];
        }
        c.listed[e.0 as usize / 64] = 0;
    }
}
