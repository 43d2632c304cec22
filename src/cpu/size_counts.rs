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
//! no raster numbering is made (0.6–0.9× labeling's time: `benches/size_counts.rs`).
//!
//! 8-connected occupancy lattices are counted in bands of two rows ([`strips::Bands`]), as the
//! labeler scans them: the forest's nodes are then the bands' runs (given nodes by copying,
//! [`strips::Strip::node`]), a run's size counts the sites of both its rows, and the edges that
//! only one row of a band touches (the lattice's first and last rows, the wrapping edges' sites)
//! are read from that row.

use super::strips::{self, row_local_at, Row, Strip};
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

/// Counts the clusters of the lattice of `lattice` by size into `out`, with the clusters that
/// wrap (by winding) or span, on the current rayon pool with up to `threads` strips. `rule` makes
/// the forest: `lattice` itself, or its bands ([`strips::Bands`], 8-connected occupancy, up to
/// `MAX_SITES` sites); `lattice` says which sites across a wrapping edge are joined.
#[allow(clippy::too_many_arguments)]
pub(crate) fn count<R: JoinRule, L: JoinRule>(
    rule: &R,
    lattice: &L,
    connectivity: Connectivity,
    boundary: Boundary,
    threads: usize,
    forest: &mut strips::Scratch,
    scratch: &mut Scratch,
    out: &mut SizeCounts,
) {
    let (h, w) = lattice.dim();
    // Bands give their runs nodes by copying (as the labeler does); rows are their own nodes.
    let (band, fh) = (R::BAND_ROWS, rule.dim().0);
    let copy = band > 1;
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
        copy,
        forest,
        &mut scratch.strips,
        |s, c| count_strip(s, c, (fh, w), copy, copy && h % 2 == 1),
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
    // (Bands: room for the shape's most nodes, as in `count_strip`.)
    let room = if copy {
        strips::most_band_runs(fh, w)
    } else {
        0
    };
    if node_of.len() < forest.parent.len().max(room) {
        crate::core::alloc::grow_zeroed(node_of, forest.parent.len().max(room));
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
        // The node of the strip's local run `j`, 1-based.
        let node_at = |parent: &mut Vec<u32>, s: &Strip, j: u32| {
            node_of[find(parent, s.node(copy, j)) as usize] + 1
        };
        for y in 0..h {
            let (s, row) = row_local_at(&forest.strips, chunk, nw, y / band);
            if row.runs == 0 {
                continue;
            }
            // Lattice row y's own sites: a band's first or last row.
            let occ = if y % band == 0 { row.top } else { row.bottom };
            if bit(occ, 0) {
                edge_node[2 * w + y] = node_at(parent, s, row.base);
            }
            if bit(occ, w - 1) {
                edge_node[2 * w + h + y] = node_at(parent, s, row.base + row.runs - 1);
            }
            if y == 0 || y == h - 1 {
                let at = if y == 0 { 0 } else { w };
                let mut run = row.base.wrapping_sub(1);
                let mut node = 0;
                for x in 0..w {
                    if !bit(row.occ, x) {
                        continue;
                    }
                    if row.starts[x / WORD] >> (x % WORD) & 1 != 0 {
                        run = run.wrapping_add(1);
                        node = node_at(parent, s, run);
                    }
                    if bit(occ, x) {
                        edge_node[at + x] = node;
                    }
                }
            }
        }
        let at = |(y, x): (usize, usize)| edge_node[edge_index((h, w), (y, x))];
        joined.join_by(h, w, nodes.len(), connectivity, boundary, |s, t, _| {
            let (a, b) = (at(s), at(t));
            (a != 0 && b != 0 && lattice.joined(s, t)).then_some((a, b))
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

/// Whether column `x` of a row's bits is set.
#[inline]
fn bit(bits: &[u64], x: usize) -> bool {
    bits[x / WORD] >> (x % WORD) & 1 != 0
}

/// One strip, right after its local forest: every run's length added to its node (with `copy`;
/// else each run is its own node), each node's sum into its parent from the last node back
/// (parents precede their children, so a node's sum is complete when it is reached: at a root,
/// its set's size), the sets on an edge or seam listed, the others (whole clusters that neither
/// wrap nor span) into the histogram. Streaming passes over the runs and the nodes, no root
/// searches but the edges'. `h` and `w` are the rule's; with `copy` its rows are bands, and
/// with `odd` the last one is a single lattice row (its `top` and `bottom` are that row).
fn count_strip(s: &mut Strip, c: &mut StripCounts, (h, w): (usize, usize), copy: bool, odd: bool) {
    let nw = words(w);
    let nodes = s.parent.len();
    // Room for the most nodes of the shape: rows have as many as runs, which a checkerboard
    // warm-up reaches, but bands of a checkerboard have one run each.
    let room = if copy {
        nodes.max(strips::most_band_runs(s.rows, w))
    } else {
        nodes
    };
    // (Zeroed by the system: a first call on a large shape does not write them all.)
    if c.size.len() < room {
        crate::core::alloc::grow_zeroed(&mut c.size, room);
    }
    if c.listed.len() < room.div_ceil(64) {
        crate::core::alloc::grow_zeroed(&mut c.listed, room.div_ceil(64));
    }
    c.hist.clear();
    c.hist.resize(DENSE + 1, 0);
    c.tail.clear();
    c.tail.reserve(s.rows * w / (DENSE + 1) + 1);
    c.special.clear();
    c.special.reserve(4 * (w + s.rows));
    let size = &mut c.size[..nodes];
    if copy {
        size.fill(0);
    }
    for r in 0..s.rows {
        let row = s.row_local(r, nw);
        if row.runs == 0 {
            continue;
        }
        // A band's sites are its two rows' (a row's: `top` and `bottom` are both its own).
        let two = copy && !(odd && s.y0 + r == h - 1);
        // A run's length: the occupied sites from its start to the next run's.
        let (mut j, mut at, mut cum) = (row.base, 0u32, 0u32);
        let mut started = false;
        let mut add = |j: u32, len: u32| {
            if copy {
                size[s.local_node(true, j) as usize] += len;
            } else {
                size[j as usize] = len;
            }
        };
        for i in 0..nw {
            let (t, b) = (row.top[i], if two { row.bottom[i] } else { 0 });
            let mut st = row.starts[i];
            while st != 0 {
                let below = (1u64 << st.trailing_zeros()) - 1;
                let p = cum + (t & below).count_ones() + (b & below).count_ones();
                if started {
                    add(j, p - at);
                    j += 1;
                }
                (started, at) = (true, p);
                st &= st - 1;
            }
            cum += t.count_ones() + b.count_ones();
        }
        add(j, cum - at);
    }

    // The sets on the lattice's edges and the strip's seams: the roots of the runs there.
    let (parent, special, listed) = (&s.parent[..], &mut c.special, &mut c.listed[..]);
    let mut mark = |j: u32, f: u8| {
        let r = find_readonly(parent, s.local_node(copy, j));
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
        let row = s.row_local(r, nw);
        if row.runs == 0 {
            continue;
        }
        let (base, nr) = (row.base, row.runs);
        let y = s.y0 + r;
        // A strip's first and last rows meet the next strips (every run may); the lattice's
        // first and last rows are its edges (the runs with a site in that lattice row).
        if (r == 0 && y != 0) || (r == s.rows - 1 && y != h - 1) {
            (base..base + nr).for_each(|j| mark(j, SEAM));
        }
        if y == 0 {
            runs_with_sites(&row, row.top, |j| mark(j, Y0));
        }
        if y == h - 1 {
            runs_with_sites(&row, row.bottom, |j| mark(j, Y1));
        }
        if row.occ[0] & 1 != 0 {
            mark(base, X0);
        }
        if row.occ[last_word] >> ((w - 1) % WORD) & 1 != 0 {
            mark(base + nr - 1, X1);
        }
    }

    // Sums into parents, from the last run back; a root's sum is final when it is reached.
    let listed = &c.listed[..];
    let (hist, tail) = (&mut c.hist, &mut c.tail);
    for x in (0..nodes).rev() {
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

/// Calls `f` with the local number of each run of `row` (ascending, each once) that holds a
/// set bit of `sites` (the row's own sites, or one lattice row of a band).
fn runs_with_sites(row: &Row<'_>, sites: &[u64], mut f: impl FnMut(u32)) {
    let mut before = row.base; // the runs started before the word
    let mut last = None;
    for (&m, &st) in sites.iter().zip(row.starts) {
        let mut m = m;
        while m != 0 {
            let x = m.trailing_zeros();
            // The run holding x: the last start at or before it.
            let j = before + (st & (u64::MAX >> (63 - x))).count_ones() - 1;
            if last != Some(j) {
                f(j);
                last = Some(j);
            }
            m &= m - 1;
        }
        before += st.count_ones();
    }
}
