//! The size-counts half of [`CudaAnalyzer`]: `n_s` and the wrapping / spanning flags without a
//! table, the periodic seams' pieces joined on the host; and the labeling backend's entry to it.

use super::*;
use crate::core::id_hash::IdMap;

impl CudaAnalyzer {
    /// Waits for the work queued by [`CudaAnalyzer::queue_size_counts`] and collects `n_s` and
    /// the flags: the histogram (about 4 KiB) and the listed large or percolating clusters. On
    /// periodic lattices the device joins the seams' pieces too, unless its shifts overflowed
    /// (or the lattice's edges have 2^31 sites or more): the edge sites' pieces are then
    /// downloaded and joined here.
    ///
    /// # Errors
    /// As [`CudaAnalyzer::finish_table`].
    pub fn finish_size_counts(&mut self) -> Result<SizeCounts> {
        self.take_pending(false)?;
        let job = self
            .dev
            .job
            .ok_or_else(|| Error::InvalidArgument("nothing queued".into()))?;
        let (h, w) = (job.height, job.width);
        let mut out = SizeCounts {
            shape: (h, w),
            ..SizeCounts::default()
        };
        if h == 0 || w == 0 {
            return Ok(out);
        }
        let boundary = self.dev.boundary;
        let (wx, wy) = (boundary.wraps_x(), boundary.wraps_y());
        let (mut hist, tail) = self.dev.histogram()?;
        // hist[0] (no cluster has 0 sites): the device's seam join overflowed, or it did not
        // run; the seams are then joined here, from `ns_border`'s output.
        let host_join = (wx || wy) && (hist[0] != 0 || !self.dev.seams_joined);
        if host_join && !self.dev.seams_border {
            // (The shifts' bound, seams_cannot_overflow, makes this unreachable.)
            return Err(Error::Cuda(
                "the device's seam join overflowed where it cannot".into(),
            ));
        }
        hist[0] = 0;
        // The sizes counted one by one: the listed clusters (with the device's join, the
        // seams' too), then the ones joined here.
        let mut sizes: Vec<u64> = Vec::with_capacity(tail.len() / 2);
        for pair in tail.chunks_exact(2) {
            let s = u64::from(pair[0]);
            sizes.push(s);
            if pair[1] != 0 {
                out.percolating.push(PercolatingCluster {
                    size: s,
                    wraps_x: pair[1] & 4 != 0,
                    wraps_y: pair[1] & 8 != 0,
                    spans_x: pair[1] & 1 != 0,
                    spans_y: pair[1] & 2 != 0,
                });
            }
        }
        if host_join {
            self.dev.queue_border(true)?;
            // The pieces on the seams, numbered densely. `border`: the edge sites' labels, then
            // five words per edge site: size, x_min, x_max, y_min, y_max.
            let b = self.dev.border(true)?;
            let (labels, boxes) = b.split_at(b.len() / BORDER_WORDS);
            let on_seam = |e: &[u32]| {
                (wx && (e[1] == 0 || e[2] as usize == w - 1))
                    || (wy && (e[3] == 0 || e[4] as usize == h - 1))
            };
            // Dense node numbers of the seam pieces, for every edge site (the join reads the
            // edge lines). Neighbouring edge sites mostly share a piece, so a site is looked at
            // only where the label changes.
            let SeamNodes {
                node_of,
                nodes,
                info,
            } = &mut self.seam;
            node_of.clear();
            node_of.resize(labels.len(), 0);
            nodes.clear();
            info.clear();
            info.push([0; 5]);
            // A small direct-mapped cache of labels met before: along an edge a large piece
            // comes back after every gap, and a map lookup costs more than the rest.
            let mut cache = [(0u32, 0u32); 256];
            let (mut last, mut last_node) = (0u32, 0u32);
            for (i, (&l, node)) in labels.iter().zip(node_of.iter_mut()).enumerate() {
                if l != last {
                    last = l;
                    let slot = &mut cache[l as usize & 255];
                    last_node = if l == 0 {
                        0
                    } else if slot.0 == l {
                        slot.1
                    } else {
                        let e = &boxes[5 * i..5 * i + 5];
                        let n = if on_seam(e) {
                            *nodes.entry(l).or_insert_with(|| {
                                info.push([e[0], e[1], e[2], e[3], e[4]]);
                                (info.len() - 1) as u32
                            })
                        } else {
                            0
                        };
                        *slot = (l, n);
                        n
                    };
                }
                *node = last_node;
            }
            let k = info.len() - 1;
            self.joined
                .join_edges((h, w), k, self.dev.connectivity, boundary, node_of, true);
            let n = self.joined.count;
            let mut merged = vec![(0u64, u32::MAX, 0u32, u32::MAX, 0u32); n + 1];
            for (i, inf) in self.seam.info.iter().enumerate().skip(1) {
                let m = &mut merged[self.joined.map[i] as usize];
                m.0 += u64::from(inf[0]);
                m.1 = m.1.min(inf[1]);
                m.2 = m.2.max(inf[2]);
                m.3 = m.3.min(inf[3]);
                m.4 = m.4.max(inf[4]);
            }
            for (c, m) in merged.iter().enumerate().skip(1) {
                sizes.push(m.0);
                let bits = self.joined.wraps[c];
                let p = PercolatingCluster {
                    size: m.0,
                    wraps_x: bits & WRAP_X != 0,
                    wraps_y: bits & WRAP_Y != 0,
                    spans_x: !wx && m.1 == 0 && m.2 as usize == w - 1,
                    spans_y: !wy && m.3 == 0 && m.4 as usize == h - 1,
                };
                if p.wraps_x || p.wraps_y || p.spans_x || p.spans_y {
                    out.percolating.push(p);
                }
            }
        }
        out.counts = merge_counts(&hist[..=HIST_CAP], sizes);
        // One order on every backend.
        out.percolating.sort_unstable();
        Ok(out)
    }
}

/// [`CudaAnalyzer::size_counts`] for the CUDA labeling backend: the analyzer on device
/// `ordinal` (made on first use, and again when the connectivity or boundary changes), its
/// counts copied into the caller's buffer.
///
/// # Errors
/// [`Error::InvalidArgument`] for segments (the GPU counts occupancy lattices), and as
/// [`CudaAnalyzer::analyze`].
pub(crate) fn size_counts_into(
    analyzer: &mut Option<CudaAnalyzer>,
    ordinal: usize,
    input: Input<'_>,
    spec: &Spec,
    out: &mut SizeCounts,
) -> Result<()> {
    if spec.segments {
        return Err(Error::InvalidArgument(
            "size counts of segments are not on the GPU: use the CPU backend".into(),
        ));
    }
    let (c, b) = (spec.connectivity, spec.boundary);
    if !analyzer
        .as_ref()
        .is_some_and(|a| a.connectivity() == c && a.boundary() == b)
    {
        *analyzer = Some(CudaAnalyzer::new(ordinal, c, b)?);
    }
    let a = analyzer.as_mut().expect("made above");
    let counts = match input {
        Input::U8(l) => a.size_counts(l)?,
        Input::U16(l) => a.size_counts(l)?,
        Input::U32(l) => a.size_counts(l)?,
    };
    out.clone_from(&counts);
    Ok(())
}

/// The size counts' seam pieces, kept between calls: each edge site's node (0: empty or not on
/// a wrapped edge's seam), the node of each piece label, and each node's size and bounding box
/// (`[size, x_min, x_max, y_min, y_max]`, node 0 unused).
#[derive(Default)]
pub(super) struct SeamNodes {
    node_of: Vec<u32>,
    nodes: IdMap<u32, u32>,
    info: Vec<[u32; 5]>,
}

/// `n_s` as `(s, n_s)` in increasing `s`: the histogram's `hist[s]` (index 0 unused) and the
/// `sizes` counted one by one (those within the histogram's range go into it).
pub(crate) fn merge_counts(hist: &[u32], sizes: impl IntoIterator<Item = u64>) -> Vec<(u64, u64)> {
    let mut dense: Vec<u64> = hist.iter().map(|&c| u64::from(c)).collect();
    // (Grown as needed: most sizes of a whole table fall in the histogram's range.)
    let mut tail = Vec::new();
    for s in sizes {
        match dense.get_mut(s as usize) {
            Some(c) => *c += 1,
            None => tail.push(s),
        }
    }
    let mut out = SizeCounts::default();
    out.push_counts(&dense, &mut tail);
    out.counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The seams joined on the device equal those joined on the host from `ns_border`'s output
    /// (the overflow's path): random lattices of one to several tiles (from below to far above
    /// p_c, where clusters wrap), columns and rows, both connectivities, every wrapped boundary.
    /// (`tests/size_counts.rs` compares the device's counts with the CPU's.)
    #[test]
    #[ignore = "needs a CUDA device"]
    fn seams_joined_on_the_device_equal_the_hosts() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_mt::Mt64::seed_from_u64(7);
        let mut lattices = Vec::new();
        for (h, w) in [(1, 9), (7, 1), (2, 2), (33, 70), (300, 500), (1100, 2100)] {
            for p in [0.3, 0.5927, 0.7, 0.95] {
                lattices.push(Array2::from_shape_fn((h, w), |_| {
                    u8::from(rng.random::<f64>() < p)
                }));
            }
            lattices.push(Array2::from_shape_fn((h, w), |(y, _)| (y % 2) as u8));
            lattices.push(Array2::from_shape_fn((h, w), |(_, x)| (x % 3 != 1) as u8));
        }
        for c in [Connectivity::Four, Connectivity::Eight] {
            for b in [Boundary::Periodic, Boundary::PeriodicX, Boundary::PeriodicY] {
                let mut gpu = CudaAnalyzer::new(0, c, b).expect("a CUDA device");
                for (k, l) in lattices.iter().enumerate() {
                    let what = format!("lattice {k} {:?} {c:?} {b:?}", l.dim());
                    gpu.dev.host_seams = false;
                    let device = gpu.size_counts(l.view()).unwrap();
                    assert!(gpu.dev.seams_joined, "{what}");
                    assert!(!gpu.dev.seams_border, "{what}: ns_border skipped");
                    gpu.dev.host_seams = true;
                    let host = gpu.size_counts(l.view()).unwrap();
                    assert!(!gpu.dev.seams_joined && gpu.dev.seams_border, "{what}");
                    assert_eq!(device, host, "{what}");
                    assert_eq!(
                        device.counts.iter().map(|&(s, n)| s * n).sum::<u64>(),
                        l.iter().map(|&v| u64::from(v)).sum::<u64>(),
                        "{what}: every site counted"
                    );
                }
            }
        }
    }

    #[test]
    fn merged_counts_equal_an_ordered_map() {
        let hist = [0u32, 5, 0, 2, 1, 0];
        let sizes = vec![9, 3, 7, 3, 1, 9, 9, 2];
        let mut want: BTreeMap<u64, u64> = BTreeMap::new();
        for (s, &c) in hist.iter().enumerate().skip(1) {
            if c > 0 {
                want.insert(s as u64, u64::from(c));
            }
        }
        for &s in &sizes {
            *want.entry(s).or_insert(0) += 1;
        }
        let want: Vec<(u64, u64)> = want.into_iter().collect();
        assert_eq!(merge_counts(&hist, sizes), want);
        assert_eq!(merge_counts(&hist, vec![]), vec![(1, 5), (3, 2), (4, 1)]);
        assert_eq!(merge_counts(&[0, 0], vec![4, 4]), vec![(4, 2)]);
        assert!(merge_counts(&[0], vec![]).is_empty());
    }
}
