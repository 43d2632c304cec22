//! The pass's view of the lattice: the grid, a window of three padded label rows, and the
//! neighbour slots of a site.

/// The lattice as the pass sees it.
pub(crate) struct Grid<'a> {
    pub h: usize,
    pub w: usize,
    pub wraps_x: bool,
    pub wraps_y: bool,
    /// The clusters' connectivity is 8 (else 4); the complement's is the other one.
    pub eight: bool,
    /// Same-value segments: a site of another cluster counts as outside a cluster.
    pub segments: bool,
    /// Final cluster labels, row-major.
    pub labels: &'a [u32],
    /// Final labels of the complement's regions (0 on clusters), when measured.
    pub empties: Option<&'a [u32]>,
    /// The number of clusters: the complement's region `e` is graph node `clusters + e - 1`.
    pub clusters: u32,
}

impl Grid<'_> {
    pub(super) fn above(&self, y: usize) -> Option<usize> {
        if y > 0 {
            Some(y - 1)
        } else if self.wraps_y {
            Some(self.h - 1)
        } else {
            None
        }
    }
    pub(super) fn below(&self, y: usize) -> Option<usize> {
        if y + 1 < self.h {
            Some(y + 1)
        } else if self.wraps_y {
            Some(0)
        } else {
            None
        }
    }
}

/// Copies row `y` of `src` into `dst` with one padding column each side: the wrapped-around
/// column on a periodic `x` axis, else 0. A missing row (beyond an open edge) is all 0.
fn load_row(src: &[u32], w: usize, y: Option<usize>, wraps_x: bool, dst: &mut Vec<u32>) {
    dst.resize(w + 2, 0);
    match y {
        None => dst.fill(0),
        Some(y) => {
            let row = &src[y * w..(y + 1) * w];
            dst[1..=w].copy_from_slice(row);
            dst[0] = if wraps_x { row[w - 1] } else { 0 };
            dst[w + 1] = if wraps_x { row[0] } else { 0 };
        }
    }
}

/// Three padded rows (above, current, below) of labels and of the complement's labels.
#[derive(Default)]
pub(crate) struct Window {
    pub(super) lu: Vec<u32>,
    pub(super) lc: Vec<u32>,
    pub(super) ld: Vec<u32>,
    pub(super) ec: Vec<u32>,
    pub(super) ed: Vec<u32>,
}

impl Window {
    /// Loads the rows around `y`; when `next` is true, `y − 1` was the previous call's row and
    /// the rows are shifted rather than copied again.
    pub(super) fn load(&mut self, g: &Grid<'_>, y: usize, next: bool, with_empties: bool) {
        if next && g.h > 2 {
            std::mem::swap(&mut self.lu, &mut self.lc);
            std::mem::swap(&mut self.lc, &mut self.ld);
            load_row(g.labels, g.w, g.below(y), g.wraps_x, &mut self.ld);
            if with_empties {
                std::mem::swap(&mut self.ec, &mut self.ed);
            }
        } else {
            load_row(g.labels, g.w, g.above(y), g.wraps_x, &mut self.lu);
            load_row(g.labels, g.w, Some(y), g.wraps_x, &mut self.lc);
            load_row(g.labels, g.w, g.below(y), g.wraps_x, &mut self.ld);
            if with_empties {
                load_row(
                    g.empties.unwrap_or(&[]),
                    g.w,
                    Some(y),
                    g.wraps_x,
                    &mut self.ec,
                );
            }
        }
        if with_empties {
            load_row(
                g.empties.unwrap_or(&[]),
                g.w,
                g.below(y),
                g.wraps_x,
                &mut self.ed,
            );
        }
    }
}

/// For each site of the current row that is outside some neighbouring cluster, calls
/// `f(i, own, labels, mults)`: `i` is the padded column (`x + 1`), `own` the site's label (0 when
/// empty), `labels[..]` the distinct neighbouring clusters it is outside of, `mults[j]` how many
/// of the site's neighbour slots hold `labels[j]`.
#[inline(always)]
pub(super) fn incidences(
    g: &Grid<'_>,
    win: &Window,
    mut f: impl FnMut(usize, u32, &[u32], &[u32]),
) {
    let (lu, lc, ld) = (&win.lu[..], &win.lc[..], &win.ld[..]);
    let mut nb = [0u32; 8];
    let mut ls = [0u32; 8];
    let mut ms = [0u32; 8];
    for i in 1..=g.w {
        let own = lc[i];
        if own != 0 && !g.segments {
            continue;
        }
        nb[0] = lu[i];
        nb[1] = lc[i - 1];
        nb[2] = lc[i + 1];
        nb[3] = ld[i];
        let k = if g.eight {
            nb[4] = lu[i - 1];
            nb[5] = lu[i + 1];
            nb[6] = ld[i - 1];
            nb[7] = ld[i + 1];
            8
        } else {
            4
        };
        let nb = &nb[..k];
        if own == 0 {
            if nb.iter().fold(0, |a, &v| a | v) == 0 {
                continue;
            }
        } else if nb.iter().all(|&v| v == 0 || v == own) {
            continue;
        }
        let mut nd = 0;
        for &v in nb {
            if v == 0 || v == own {
                continue;
            }
            match ls[..nd].iter().position(|&l| l == v) {
                Some(j) => ms[j] += 1,
                None => {
                    ls[nd] = v;
                    ms[nd] = 1;
                    nd += 1;
                }
            }
        }
        f(i, own, &ls[..nd], &ms[..nd]);
    }
}

/// Bit `j` set when slot `j` holds a cluster (nonzero) that an earlier slot holds too.
#[inline(always)]
pub(super) fn repeats<const K: usize>(s: &[u32; 8]) -> u32 {
    let mut rep = 0u32;
    for j in 1..K {
        let v = s[j];
        let mut r = false;
        for &u in &s[..j] {
            r |= u == v;
        }
        rep |= u32::from(r & (v != 0)) << j;
    }
    rep
}

/// The neighbour slots of padded column `i` (4 or 8 of them).
#[inline(always)]
pub(super) fn neighbour_slots(win: &Window, i: usize, eight: bool, slots: &mut [u32; 8]) -> usize {
    slots[0] = win.lu[i];
    slots[1] = win.lc[i - 1];
    slots[2] = win.lc[i + 1];
    slots[3] = win.ld[i];
    if eight {
        slots[4] = win.lu[i - 1];
        slots[5] = win.lu[i + 1];
        slots[6] = win.ld[i - 1];
        slots[7] = win.ld[i + 1];
        8
    } else {
        4
    }
}

/// Bits of the slots that hold a cluster no earlier slot holds (each neighbouring cluster once).
#[inline(always)]
pub(super) fn first_slots(slots: &[u32; 8], k: usize, rep: u32) -> u32 {
    let mut nonzero = 0u32;
    for (j, &v) in slots[..k].iter().enumerate() {
        nonzero |= u32::from(v != 0) << j;
    }
    nonzero & !rep
}
