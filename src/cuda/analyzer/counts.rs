//! The size-counts half of [`CudaAnalyzer`]: `n_s` and the wrapping / spanning flags without a
//! table, the periodic seams' pieces joined on the host; and the labeling backend's entry to it.

use super::*;

impl CudaAnalyzer {
    /// Waits for the work queued by [`CudaAnalyzer::queue_size_counts`] and collects `n_s` and
    /// the flags: the histogram (about 4 KiB), the listed large or spanning clusters and, on
    /// periodic lattices, the edge sites' pieces, which are joined here.
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
        if wx || wy {
            // Comes with the histogram's wait.
            self.dev.queue_border(true)?;
        }
        let (hist, tail) = self.dev.histogram()?;
        let mut counts: BTreeMap<u64, u64> = BTreeMap::new();
        for (s, &c) in hist.iter().enumerate().take(HIST_CAP + 1).skip(1) {
            if c > 0 {
                counts.insert(s as u64, u64::from(c));
            }
        }
        for pair in tail.chunks_exact(2) {
            let s = u64::from(pair[0]);
            *counts.entry(s).or_insert(0) += 1;
            if pair[1] != 0 {
                out.percolating.push(PercolatingCluster {
                    size: s,
                    wraps_x: false,
                    wraps_y: false,
                    spans_x: pair[1] & 1 != 0,
                    spans_y: pair[1] & 2 != 0,
                });
            }
        }
        if wx || wy {
            // The pieces on the seams, numbered densely. `border`: the edge sites' labels, then
            // five words per edge site: size, x_min, x_max, y_min, y_max.
            let b = self.dev.border(true)?;
            let (labels, boxes) = b.split_at(b.len() / BORDER_WORDS);
            let on_seam = |e: &[u32]| {
                (wx && (e[1] == 0 || e[2] as usize == w - 1))
                    || (wy && (e[3] == 0 || e[4] as usize == h - 1))
            };
            // Dense node numbers of the seam pieces, once per edge site (the join below asks for
            // each site from every wrap link that reaches it). Neighbouring edge sites mostly
            // share a piece, so the map is consulted only when the label changes.
            let mut node_of = vec![0u32; labels.len()];
            let mut nodes: HashMap<u32, u32> = HashMap::new();
            // [size, x_min, x_max, y_min, y_max] per node.
            let mut info = vec![[0u32; 5]];
            let (mut last, mut last_node) = (0u32, 0u32);
            for (i, (&l, e)) in labels.iter().zip(boxes.chunks_exact(5)).enumerate() {
                if l == 0 || !on_seam(e) {
                    continue;
                }
                if l != last {
                    last = l;
                    last_node = *nodes.entry(last).or_insert_with(|| {
                        info.push([e[0], e[1], e[2], e[3], e[4]]);
                        (info.len() - 1) as u32
                    });
                }
                node_of[i] = last_node;
            }
            let k = info.len() - 1;
            let at = |s: (usize, usize)| node_of[edge_index((h, w), s)];
            self.joined
                .join_edges((h, w), k, self.dev.connectivity, boundary, at);
            let n = self.joined.count;
            let mut merged = vec![(0u64, u32::MAX, 0u32, u32::MAX, 0u32); n + 1];
            for (i, inf) in info.iter().enumerate().skip(1) {
                let m = &mut merged[self.joined.map[i] as usize];
                m.0 += u64::from(inf[0]);
                m.1 = m.1.min(inf[1]);
                m.2 = m.2.max(inf[2]);
                m.3 = m.3.min(inf[3]);
                m.4 = m.4.max(inf[4]);
            }
            for (c, m) in merged.iter().enumerate().skip(1) {
                *counts.entry(m.0).or_insert(0) += 1;
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
        out.counts = counts.into_iter().collect();
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
