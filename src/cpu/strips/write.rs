//! The strip labeler's last phases: the strips' forests concatenated, the roots numbered in
//! raster order in parallel, and the labels written run by run.

use super::*;
use crate::core::stream::Streamer;
use crate::cpu::union_find::find;

/// Concatenates the strips' forests into `dst`, shifting labels by each strip's offset; splits
/// `dst` recursively so that no list of chunks is allocated.
pub(super) fn copy_forests<I: Index>(strips: &[Strip<I>], dst: &mut [I]) {
    if let [s] = strips {
        for (d, &p) in dst.iter_mut().zip(&s.parent) {
            *d = p + s.offset;
        }
        return;
    }
    let mid = strips.len() / 2;
    let split = (strips[mid].offset - strips[0].offset).usize();
    let (lo, hi) = dst.split_at_mut(split);
    rayon::join(
        || copy_forests(&strips[..mid], lo),
        || copy_forests(&strips[mid..], hi),
    );
}

/// Numbers the roots of `parent` in raster order with one pass per strip in parallel: count the
/// strips' roots, give each strip its first number, number the roots, then map every other
/// label to its root's number (reading other strips' roots: hence the atomics).
///
/// The labels whose parent lies in an earlier strip (the strips' local roots that the seams
/// joined) are pointed straight at their roots first, strip by strip in order: the seams can
/// chain such roots through every strip (a spiral joins its rings at each seam), and each strip
/// climbing those chains on its own would cost as much as the whole numbering. That climb halves
/// the paths it takes: the seams' unions leave chains as long as a spiral's rings inside the
/// first strips, and climbing each one whole from every later root cost 1.4 ms of a 6 ms
/// 8-connected 4096² spiral on two threads.
pub(super) fn number_parallel<I: Index>(
    strips: &mut [Strip<I>],
    parent: &mut [I],
    number: &[I::Atomic],
) -> I {
    let range = |s: &Strip<I>| s.offset.usize()..s.offset.usize() + s.parent.len();
    {
        let parent = &*parent;
        strips.par_iter_mut().for_each(|s| {
            let lo = s.offset;
            let mut roots = 0usize;
            s.outside.clear();
            for x in range(s) {
                let p = parent[x];
                roots += usize::from(p.usize() == x);
                if p < lo {
                    s.outside.push(I::from_usize(x));
                }
            }
            s.roots = I::from_usize(roots);
        });
    }
    // In order: a parent in an earlier strip leads, within that strip, to a root or to a label
    // of that strip's list, already pointed at its root. Halving keeps `parent[x] <= x` and
    // changes no root, so the passes below read the same forest.
    for s in strips.iter() {
        for &x in &s.outside {
            let r = find(parent, parent[x.usize()]);
            parent[x.usize()] = r;
        }
    }
    let parent = &*parent;
    let mut acc = I::default();
    for s in strips.iter_mut() {
        s.first_number = acc;
        acc = acc + s.roots;
    }
    I::store(&number[0], I::default());
    strips.par_iter().for_each(|s| {
        let mut k = s.first_number;
        for x in range(s) {
            if parent[x].usize() == x {
                k = k + I::ONE;
                I::store(&number[x + 1], k);
            }
        }
    });
    strips.par_iter().for_each(|s| {
        let lo = s.offset;
        for x in range(s) {
            let p = parent[x];
            if p.usize() != x {
                // Parents precede their children: a parent inside the strip is already numbered.
                let r = if p >= lo { p } else { find_readonly(parent, p) };
                I::store(&number[x + 1], I::load(&number[r.usize() + 1]));
            }
        }
    });
    acc
}

/// A cluster number as a label: the label type is at least as wide as the numbers it receives
/// (`u32` labels come only with `u32` indices), so this is a zero extension or nothing.
#[inline(always)]
pub(super) fn widen<I: Index, L: Index>(v: I) -> L {
    L::from_usize(v.usize())
}

/// The one label of all the runs that a word's occupied sites `o` (run starts `st`) belong to,
/// if they share one; `k` is the row's run before the word's first start, `value` a run's label.
/// (For a band's lattice row, `o` is the band's occupancy: all the runs the word meets.)
#[inline]
pub(super) fn uniform<L: Index>(
    k: usize,
    o: u64,
    st: u64,
    value: impl Fn(usize) -> L,
) -> Option<L> {
    let continues = o & 1 != 0 && st & 1 == 0;
    let lo = if continues { k } else { k.wrapping_add(1) };
    let n = st.count_ones() as usize + usize::from(continues);
    let v = value(lo);
    (1..n).all(|j| value(lo.wrapping_add(j)) == v).then_some(v)
}

/// Writes row `r` of strip `s` (labeled with `copy`): each occupied site gets its run's node's
/// cluster number, empty sites 0. For bands, the sites of the band's lattice row `half` (0, its
/// first; 1, its second).
///
/// A word with few pieces (stretches of occupied sites cut at run starts) is written with one
/// fill per piece; a fragmented one (random lattices near p_c) site by occupied site, each site's
/// run found by counting the run starts up to it. `above`: the words that repeat the row above
/// (`Strip::same`), and where that row is (see [`Above`]).
#[allow(clippy::too_many_arguments)]
#[inline]
pub(super) fn write_row<I: Index, L: Index>(
    s: &Strip<I>,
    copy: bool,
    r: usize,
    half: usize,
    nw: usize,
    number: &[I::Atomic],
    dst: &mut [L],
    above: Option<Above<'_, L>>,
    sink: Option<&mut Streamer<'_, L>>,
) {
    let row = s.row_local(r, nw);
    let sites = match s.edges(r, nw) {
        Some((top, bottom)) => [top, bottom][half],
        None => row.occ,
    };
    // `number` of node `x` of the strip is at `offset + x + 1`; the nodes are the runs' `lab`
    // with `copy`, else the runs themselves.
    let number = &number[s.offset.usize() + 1..];
    if copy {
        let lab = &s.lab[row.base.usize()..][..row.runs.usize()];
        write_runs(
            &row,
            sites,
            |k| widen(I::load(&number[lab[k].usize()])),
            dst,
            above,
            sink,
        );
    } else {
        let number = &number[row.base.usize()..][..row.runs.usize()];
        write_runs(
            &row,
            sites,
            |k| widen(I::load(&number[k])),
            dst,
            above,
            sink,
        );
    }
}

/// The row above a label row being written, for the words that repeat it.
pub(super) enum Above<'a, L> {
    /// In another buffer, copied from: the row above, and the words that repeat it.
    Copy(&'a [L], &'a [bool]),
    /// Already in the row's own buffer, a staging row written in place row after row: the
    /// words that repeat the row above (none in a strip's first row), and which of the buffer's
    /// words hold only zeros (kept up to date here). Such words are left as they are.
    InPlace {
        same: Option<&'a [bool]>,
        zero: &'a mut [bool],
    },
}

/// [`write_row`] with `value(k)`, the label of the row's run `k`, into the sites `sites` (the
/// row's occupancy, or a lattice row of a band: a band's run may start at a site empty there).
#[inline(always)]
pub(super) fn write_runs<I: Index, L: Index>(
    row: &Row<'_, I>,
    sites: &[u64],
    value: impl Fn(usize) -> L,
    dst: &mut [L],
    mut above: Option<Above<'_, L>>,
    mut sink: Option<&mut Streamer<'_, L>>,
) {
    // `k` is the row's run of the current piece, counted from the run starts (wrapping: before
    // the row's first run it is -1, never read: the row's first piece starts a run).
    let mut k = usize::MAX;
    let w = dst.len();
    // Tries of `uniform` left: a miss costs a few lookups, so a row of many clusters (p_c,
    // 4-connected) stops trying after two misses more than hits.
    let mut credit = 2i32;
    for i in 0..row.occ.len() {
        let x0 = i * WORD;
        'word: {
            let (o, st) = (sites[i], row.starts[i]);
            let out = &mut dst[x0..(x0 + WORD).min(w)];
            let mut pieces = st | (o & !(o << 1));
            let few = pieces.count_ones() <= 4;
            match &mut above {
                // (A few fills are cheaper than reading the row above.)
                Some(Above::Copy(prev, same)) if !few && same[i] => {
                    out.copy_from_slice(&prev[i * WORD..][..out.len()]);
                    k = k.wrapping_add(st.count_ones() as usize);
                    break 'word;
                }
                Some(Above::InPlace { same, zero }) => {
                    // The staging row still holds the row above's word: kept where this word
                    // repeats it (zeros or not, as it was), or where both are zeros.
                    if same.is_some_and(|same| same[i]) || (o == 0 && zero[i]) {
                        k = k.wrapping_add(st.count_ones() as usize);
                        break 'word;
                    }
                    zero[i] = o == 0;
                }
                _ => {}
            }
            if o == 0 {
                out.fill(L::default());
                k = k.wrapping_add(st.count_ones() as usize);
                break 'word;
            }
            let len = out.len();
            if few {
                if o != u64::MAX {
                    out.fill(L::default());
                }
                while pieces != 0 {
                    let b = pieces.trailing_zeros() as usize;
                    k = k.wrapping_add(((st >> b) & 1) as usize);
                    pieces &= pieces - 1;
                    let gap = !o & (u64::MAX << b);
                    let end = pieces.trailing_zeros().min(gap.trailing_zeros()) as usize;
                    out[b..end.min(len)].fill(value(k));
                }
            } else if let Some(v) = (credit > 0 && o.count_ones() >= 32)
                .then(|| {
                    let v = uniform(k, row.occ[i], st, &value);
                    credit = if v.is_some() {
                        (credit + 1).min(4)
                    } else {
                        credit - 1
                    };
                    v
                })
                .flatten()
            {
                // Fragmented, but dense and all of one cluster (a giant cluster's sites, tried where
                // at least half the word is occupied, while such words keep coming in the row):
                // masked stores.
                L::masked_fill(out, o, v);
                k = k.wrapping_add(st.count_ones() as usize);
            } else {
                // Occupied sites only: each one's run is the count of starts up to it.
                out.fill(L::default());
                let mut m = o;
                while m != 0 {
                    let j = m.trailing_zeros() as usize;
                    let run = k.wrapping_add((st & (u64::MAX >> (63 - j))).count_ones() as usize);
                    out[j] = value(run);
                    m &= m - 1;
                }
                k = k.wrapping_add(st.count_ones() as usize);
            }
        }
        // The word is made: send what is ready.
        if let Some(sink) = sink.as_deref_mut() {
            sink.upto(dst, x0 + WORD);
        }
    }
}
