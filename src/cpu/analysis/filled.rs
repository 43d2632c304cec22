//! Filled areas and hulls from the region graph: clusters and the complement's regions (labeled
//! with the dual connectivity) as nodes, adjacency as edges, "the outside" as a root node.
//!
//! A cluster's filled area is itself plus every region that its removal cuts off from the root,
//! and a perimeter site is on its hull when the site's region is not cut off.
//!
//! - Open boundary, occupancy ([`tree_filled`]): with dual connectivities the graph, with the
//!   outside and the complement's regions that touch the edge merged into the root, is a tree.
//!   Each node's parent is the region just above its first site (raster order); parents come
//!   before children in raster order of first sites, so one backward sweep adds each subtree to
//!   its parent. A perimeter site of cluster `c` in region `e` is off the hull exactly when `e` is
//!   a hole of `c`, i.e. when `c` is `e`'s parent.
//! - Otherwise ([`Dominance`]): Tarjan's depth-first search for articulation points from the
//!   root; a child subtree `u` of node `v` is cut off by removing `v` iff `low[u] >= disc[v]`.

use super::accum::{run_jobs, split_owned, Sink, UNSET};
use super::scan::{self, StripScratch};
use super::{for_each_edge_site, Counts, CpuAnalysis, Run, Strips};

/// Filled areas on an open lattice in occupancy mode (see the module docs): `csize`, `esize`,
/// `first_c`, `first_e`, `edge_e` are per label (index 0 unused); `labels` and `empties` the
/// row-major label arrays of `w` columns. Returns the filled area per cluster label.
#[allow(clippy::too_many_arguments)]
pub(crate) fn tree_filled(
    w: usize,
    labels: &[u32],
    empties: &[u32],
    first_c: &[u32],
    first_e: &[u32],
    edge_e: &[bool],
    csize: &[u64],
    esize: &[u64],
) -> Vec<u64> {
    let n = csize.len().saturating_sub(1);
    let m = esize.len().saturating_sub(1);
    let mut sub_c = csize.to_vec();
    let mut sub_e = esize.to_vec();
    // Backward over first sites, clusters and regions interleaved.
    let (mut c, mut e) = (n, m);
    loop {
        // Skip regions merged into the root.
        while e > 0 && edge_e[e] {
            e -= 1;
        }
        let fc = if c > 0 { first_c[c] } else { UNSET };
        let fe = if e > 0 { first_e[e] } else { UNSET };
        if c == 0 && e == 0 {
            break;
        }
        if e == 0 || (c > 0 && fc > fe) {
            // Cluster c: its parent is the region above its first site, unless that is the root.
            let f = fc as usize;
            if f >= w {
                let r = empties[f - w] as usize;
                if r != 0 && !edge_e[r] {
                    sub_e[r] += sub_c[c];
                }
            }
            c -= 1;
        } else {
            // Region e (not touching the edge): its parent is the cluster above its first site.
            let f = fe as usize;
            let p = labels[f - w] as usize;
            if p != 0 {
                sub_c[p] += sub_e[e];
            }
            e -= 1;
        }
    }
    sub_c
}

/// Articulation structure of the region graph seen from the root.
#[derive(Default)]
pub(crate) struct Dominance {
    disc: Vec<u32>,
    low: Vec<u32>,
    /// Nodes in the subtree (preorder numbers `disc..disc + count`).
    count: Vec<u32>,
    /// Children of each node in discovery order, compressed (`start[v]..start[v + 1]`).
    start: Vec<u32>,
    children: Vec<u32>,
    /// Sites in the subtrees that removing the node cuts off from the root.
    pub cut_off: Vec<u64>,
    /// Sites in nodes that the root does not reach at all.
    pub unreachable: u64,
    adj_start: Vec<u32>,
    adj: Vec<u32>,
    parent: Vec<u32>,
    sub_sites: Vec<u64>,
    stack: Vec<(u32, u32)>,
}

impl Dominance {
    /// Runs the search on `nodes` nodes (the last is the root) with the undirected `edges`
    /// (packed `(a << 32) | b`, repeats allowed) plus root–`seeds` edges; `sites[v]` is the
    /// number of sites of node `v`.
    pub(crate) fn solve(&mut self, nodes: usize, edges: &[u64], seeds: &[u32], sites: &[u64]) {
        let root = (nodes - 1) as u32;
        // Adjacency lists.
        let mut degree = vec![0u32; nodes + 1];
        for &e in edges {
            degree[(e >> 32) as usize] += 1;
            degree[(e & 0xffff_ffff) as usize] += 1;
        }
        for &s in seeds {
            degree[s as usize] += 1;
            degree[root as usize] += 1;
        }
        self.adj_start.clear();
        self.adj_start.push(0);
        let mut acc = 0u32;
        for d in &degree[..nodes] {
            acc += d;
            self.adj_start.push(acc);
        }
        self.adj.clear();
        self.adj.resize(acc as usize, 0);
        let mut fill: Vec<u32> = self.adj_start[..nodes].to_vec();
        let mut put = |a: u32, b: u32, adj: &mut Vec<u32>| {
            adj[fill[a as usize] as usize] = b;
            fill[a as usize] += 1;
        };
        for &e in edges {
            let (a, b) = ((e >> 32) as u32, (e & 0xffff_ffff) as u32);
            put(a, b, &mut self.adj);
            put(b, a, &mut self.adj);
        }
        for &s in seeds {
            put(s, root, &mut self.adj);
            put(root, s, &mut self.adj);
        }

        // Iterative depth-first search from the root.
        self.disc.clear();
        self.disc.resize(nodes, UNSET);
        self.low.clear();
        self.low.resize(nodes, UNSET);
        self.count.clear();
        self.count.resize(nodes, 1);
        self.parent.clear();
        self.parent.resize(nodes, UNSET);
        self.sub_sites.clear();
        self.sub_sites.extend_from_slice(&sites[..nodes]);
        self.cut_off.clear();
        self.cut_off.resize(nodes, 0);
        let mut order: Vec<u32> = Vec::with_capacity(nodes);
        let mut time = 0u32;
        self.disc[root as usize] = time;
        self.low[root as usize] = time;
        order.push(root);
        time += 1;
        self.stack.clear();
        self.stack.push((root, self.adj_start[root as usize]));
        while let Some(top) = self.stack.last_mut() {
            let v = top.0 as usize;
            if top.1 < self.adj_start[v + 1] {
                let u = self.adj[top.1 as usize] as usize;
                top.1 += 1;
                if self.disc[u] == UNSET {
                    self.disc[u] = time;
                    self.low[u] = time;
                    self.parent[u] = v as u32;
                    order.push(u as u32);
                    time += 1;
                    self.stack.push((u as u32, self.adj_start[u]));
                } else {
                    self.low[v] = self.low[v].min(self.disc[u]);
                }
            } else {
                self.stack.pop();
                let p = self.parent[v];
                if p != UNSET {
                    let p = p as usize;
                    self.low[p] = self.low[p].min(self.low[v]);
                    self.sub_sites[p] += self.sub_sites[v];
                    self.count[p] += self.count[v];
                    if self.low[v] >= self.disc[p] {
                        self.cut_off[p] += self.sub_sites[v];
                    }
                }
            }
        }
        self.unreachable = (0..nodes)
            .filter(|&v| self.disc[v] == UNSET)
            .map(|v| sites[v])
            .sum();
        // Children in discovery order.
        let mut nchild = vec![0u32; nodes + 1];
        for &v in &order[1..] {
            nchild[self.parent[v as usize] as usize] += 1;
        }
        self.start.clear();
        self.start.push(0);
        let mut acc = 0u32;
        for c in &nchild[..nodes] {
            acc += c;
            self.start.push(acc);
        }
        self.children.clear();
        self.children.resize(acc as usize, 0);
        let mut fill: Vec<u32> = self.start[..nodes].to_vec();
        for &v in &order[1..] {
            let p = self.parent[v as usize] as usize;
            self.children[fill[p] as usize] = v;
            fill[p] += 1;
        }
    }

    /// Whether the root reaches node `v`.
    pub(crate) fn reached(&self, v: u32) -> bool {
        self.disc[v as usize] != UNSET
    }

    /// Whether node `x` is on the outside of node `c`: reachable from the root without `c`.
    pub(crate) fn outside(&self, x: u32, c: u32) -> bool {
        let (xu, c) = (x as usize, c as usize);
        // The common cases first: x is c's parent (reached before c), or c's child.
        if self.parent[c] == x {
            return true;
        }
        let x = xu;
        if self.disc[x] == UNSET {
            return false;
        }
        if self.disc[c] == UNSET {
            return true;
        }
        if self.parent[x] == c as u32 {
            return self.low[x] < self.disc[c];
        }
        let (dc, dx) = (self.disc[c], self.disc[x]);
        if !(dc < dx && dx < dc + self.count[c]) {
            return true;
        }
        // The child of c whose subtree holds x: the last child discovered at or before x.
        let kids = &self.children[self.start[c] as usize..self.start[c + 1] as usize];
        let j = kids.partition_point(|&u| self.disc[u as usize] <= dx);
        let u = kids[j - 1] as usize;
        self.low[u] < dc
    }
}

impl CpuAnalysis {
    /// 6a. Filled areas on an open occupancy lattice: the tree of enclosing clusters, read off
    ///     the first sites (the pass already decided the hulls).
    pub(super) fn tree_filled(&self, g: &Run, sizes: &[u64]) -> Vec<u64> {
        let (labels, _, empties) = self.label_slices(g);
        let buf = &self.buffers;
        tree_filled(
            g.w,
            labels,
            empties.expect("full"),
            &buf.first_p,
            &buf.first_e,
            &buf.edge_e,
            sizes,
            &buf.empty_sizes,
        )
    }

    /// 6b. Filled areas from the region graph (periodic axes, segments): the regions the
    ///     outside cannot reach without crossing a cluster, by articulation points; then the
    ///     hulls, in a second pass over the rows.
    pub(super) fn region_graph_filled(
        &mut self,
        g: &Run,
        n: &Counts,
        st: &Strips,
        sizes: &[u64],
    ) -> Vec<u64> {
        let CpuAnalysis {
            labels,
            empties,
            strips,
            buffers: buf,
            joined,
            joined_empties,
            dominance: dom,
            ..
        } = self;
        let labels = labels.as_slice().expect("standard layout");
        let e = empties.as_slice().expect("standard layout");
        let (count, nempty) = (n.count, n.nempty);
        let nodes = count + nempty + 1;
        let node_of = |i: usize| -> u32 {
            if labels[i] != 0 {
                labels[i] - 1
            } else {
                count as u32 + e[i] - 1
            }
        };
        // Seeds: regions on an open edge, and regions that wrap.
        let mut seed = vec![false; nodes];
        let (wx, wy) = (g.boundary.wraps_x(), g.boundary.wraps_y());
        for_each_edge_site(g.h, g.w, !wx, !wy, |i| {
            seed[node_of(i) as usize] = true;
        });
        if g.periodic {
            for c in 1..=count {
                if joined.wraps[c] != 0 {
                    seed[c - 1] = true;
                }
            }
            for r in 1..=nempty {
                if joined_empties.wraps[r] != 0 {
                    seed[count + r - 1] = true;
                }
            }
        }
        let seeds: Vec<u32> = (0..nodes as u32).filter(|&v| seed[v as usize]).collect();
        let mut node_sites = Vec::with_capacity(nodes);
        node_sites.extend_from_slice(&sizes[1..]);
        node_sites.extend_from_slice(&buf.empty_sizes[1..]);
        node_sites.push(0);
        let mut edges: Vec<u64> = Vec::new();
        for s in strips.iter_mut() {
            edges.append(&mut s.work.edges);
        }
        // Repeated edges are fine for the search; sorting them away would cost more.
        dom.solve(nodes, &edges, &seeds, &node_sites);
        let filled: Vec<u64> = std::iter::once(0)
            .chain((0..count).map(|c| {
                if dom.reached(c as u32) {
                    sizes[c + 1] + dom.cut_off[c] + dom.unreachable
                } else {
                    dom.unreachable
                }
            }))
            .collect();
        // Hulls: a second pass over the rows.
        let grid = g.grid(labels, Some(e), count);
        let hull = &mut buf.hull;
        hull.clear();
        hull.resize(count + 1, 0);
        {
            let dom = &*dom;
            let outside = |x: u32, c: u32| dom.outside(x, c - 1);
            let parts = split_owned(hull, &st.max_c);
            let jobs: Vec<_> = st.rows.iter().zip(parts).zip(strips.iter_mut()).collect();
            run_jobs(g.parallel, jobs, |((r, (lo, sl)), s)| {
                let StripScratch { spills, work } = s;
                spills.hull.clear();
                let mut sink = Sink::new(lo, sl, &mut spills.hull);
                scan::hull_strip(&grid, r.clone(), &mut sink, &outside, work);
            });
        }
        for s in strips.iter_mut() {
            s.spills.hull.drain_into(hull);
        }
        for (p, h) in buf.perimeter.iter_mut().zip(hull.iter()) {
            p.hull = *h;
        }
        filled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(a: u32, b: u32) -> u64 {
        (u64::from(a) << 32) | u64::from(b)
    }

    #[test]
    fn articulation_on_a_path_and_a_cycle() {
        // root(4) - 0 - 1 - 2, and 3 attached to 1 and 2 (cycle 1-2-3).
        let mut d = Dominance::default();
        let edges = [key(0, 1), key(1, 2), key(2, 3), key(1, 3)];
        d.solve(5, &edges, &[0], &[1, 10, 100, 1000, 0]);
        // Removing 0 cuts off 1, 2, 3; removing 1 cuts off 2 and 3; removing 2 or 3 nothing.
        assert_eq!(d.cut_off[0], 1110);
        assert_eq!(d.cut_off[1], 1100);
        assert_eq!(d.cut_off[2], 0);
        assert_eq!(d.cut_off[3], 0);
        assert!(d.outside(0, 1));
        assert!(!d.outside(2, 1));
        assert!(d.outside(3, 2));
        assert!(!d.outside(3, 0));
    }

    #[test]
    fn unreached_nodes() {
        let mut d = Dominance::default();
        d.solve(4, &[key(1, 2)], &[0], &[5, 6, 7, 0]);
        assert_eq!(d.unreachable, 13);
        assert!(!d.reached(1));
        assert!(!d.outside(1, 0));
    }
}
