//! The fused Swendsen–Wang cluster pass of the CPU: Philox blocks, bonds and a union-find that
//! links the larger root under the smaller site index, row by row in one go, so that every site
//! ends holding its cluster's smallest site index (the root the new spin is keyed by) with no
//! bond image, canonical numbering or root conversion in between.
//!
//! The lattice is cut into strips of rows, labeled independently (in parallel); the bonds across
//! the strips' seams (and the wrap from the last row to the first) are united afterwards in one
//! short sequential pass, and a last pass per strip flattens every site to its root and assigns
//! the new spins. A union-find that always links under the smaller index has one result, the
//! minimum index of each cluster, whatever the order of unions: so the roots, and the spins, do
//! not depend on the number of strips (threads).

use super::rng::SweepKey;

/// Philox 4×32-10 constants (Random123): the round multipliers and the key bumps.
const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

/// Sites whose Philox blocks are computed together (struct-of-arrays, so that it vectorises);
/// divides 64, so a group's bond bits fall in one word.
pub(crate) const LANES: usize = 64;

/// Words `w0, w1, w2` of the Philox blocks of sites `c0 .. c0 + LANES` (counter words 1..=3 and
/// key from `key`): exactly `philox4x32_10` of each site's counter, lane by lane.
#[inline(always)]
pub(crate) fn philox_lanes(c0: u32, key: &SweepKey) -> [[u32; LANES]; 3] {
    let mut x0 = [0u32; LANES];
    for (l, v) in x0.iter_mut().enumerate() {
        *v = c0.wrapping_add(l as u32);
    }
    let mut x1 = [key.hi[0]; LANES];
    let mut x2 = [key.hi[1]; LANES];
    let mut x3 = [key.hi[2]; LANES];
    let mut k = key.key;
    for r in 0..10 {
        if r > 0 {
            k[0] = k[0].wrapping_add(W0);
            k[1] = k[1].wrapping_add(W1);
        }
        for l in 0..LANES {
            let hi0 = ((u64::from(x0[l]) * u64::from(M0)) >> 32) as u32;
            let hi1 = ((u64::from(x2[l]) * u64::from(M1)) >> 32) as u32;
            let (a, c) = (x0[l], x2[l]);
            x0[l] = hi1 ^ x1[l] ^ k[0];
            x1[l] = c.wrapping_mul(M1);
            x2[l] = hi0 ^ x3[l] ^ k[1];
            x3[l] = a.wrapping_mul(M0);
        }
    }
    [x0, x1, x2]
}

/// What a sweep's cluster pass needs besides the spins.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Params {
    pub h: usize,
    pub w: usize,
    pub key: SweepKey,
    /// A bond is active when its word is `<= tm1` (and `on`): `t − 1` for the threshold `t`.
    pub tm1: u32,
    pub on: bool,
    pub q: u32,
    pub wraps_x: bool,
    pub wraps_y: bool,
}

impl Params {
    fn words(&self) -> usize {
        self.w.div_ceil(64)
    }
}

/// Per-strip scratch: bond bits of the previous and the current row (`r` bit x: bond to x + 1,
/// at x = w − 1 the wrap to 0; `d` bit x: bond down) and the strip's last row's down bonds.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    r: [Vec<u64>; 2],
    d: [Vec<u64>; 2],
    /// Down bonds of the strip's last row (to the next strip, or to row 0 across the wrap).
    pub seam: Vec<u64>,
}

/// Root of `x` (global index) with path halving, inside a strip whose first site is `off`.
#[inline(always)]
fn find(p: &mut [u32], off: usize, mut x: u32) -> u32 {
    loop {
        let px = p[x as usize - off];
        if px == x {
            return x;
        }
        let ppx = p[px as usize - off];
        p[x as usize - off] = ppx;
        x = ppx;
    }
}

/// Unites the clusters of global sites `a` and `b` of a strip: the larger root goes under the
/// smaller, so that every parent is at most its child (what the flattening passes rely on).
#[inline(always)]
fn union(p: &mut [u32], off: usize, a: u32, b: u32) {
    let ra = find(p, off, a);
    let rb = find(p, off, b);
    let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
    p[hi as usize - off] = lo;
}

/// Bonds of row `y` (into `r`, `d`) and the candidate new spin of each of its sites.
#[inline(always)]
fn bonds_row(
    pr: &Params,
    y: usize,
    row: &[u8],
    next: &[u8],
    fresh: &mut [u8],
    r: &mut [u64],
    d: &mut [u64],
) {
    let w = pr.w;
    let base = (y * w) as u32;
    let on = if pr.on { u64::MAX } else { 0 };
    // No bond down from the last row unless y wraps.
    let down_on = if y + 1 < pr.h || pr.wraps_y { on } else { 0 };
    r.fill(0);
    d.fill(0);
    let mut x = 0;
    // Whole groups whose right neighbours lie in the row.
    while x + LANES < w {
        let [a0, a1, a2] = philox_lanes(base + x as u32, &pr.key);
        let s: &[u8; LANES] = row[x..x + LANES].try_into().expect("in the row");
        let s1: &[u8; LANES] = row[x + 1..x + 1 + LANES].try_into().expect("in the row");
        let sn: &[u8; LANES] = next[x..x + LANES].try_into().expect("in the row");
        let f: &mut [u8; LANES] = (&mut fresh[x..x + LANES]).try_into().expect("in the row");
        let (mut rb, mut db) = (0u64, 0u64);
        for l in 0..LANES {
            rb |= u64::from((s[l] == s1[l]) & (a0[l] <= pr.tm1)) << l;
            db |= u64::from((s[l] == sn[l]) & (a1[l] <= pr.tm1)) << l;
            f[l] = ((u64::from(a2[l]) * u64::from(pr.q)) >> 32) as u8;
        }
        r[x / 64] |= (rb & on) << (x % 64);
        d[x / 64] |= (db & down_on) << (x % 64);
        x += LANES;
    }
    // The last group, with the row's end (and its wrap) lane by lane.
    let [a0, a1, a2] = philox_lanes(base + x as u32, &pr.key);
    for l in 0..w - x {
        let xx = x + l;
        let right = if xx + 1 < w {
            row[xx] == row[xx + 1]
        } else {
            pr.wraps_x && row[xx] == row[0]
        };
        let rb = right && a0[l] <= pr.tm1 && pr.on;
        let db = row[xx] == next[xx] && a1[l] <= pr.tm1 && down_on != 0;
        r[xx / 64] |= u64::from(rb) << (xx % 64);
        d[xx / 64] |= u64::from(db) << (xx % 64);
        fresh[xx] = ((u64::from(a2[l]) * u64::from(pr.q)) >> 32) as u8;
    }
}

/// Links the sites of row `lr` (local row within the strip) to the runs of right bonds and to
/// the row above through `up = (d, r)` of that row.
#[inline(always)]
fn scan_row(
    p: &mut [u32],
    off: usize,
    lr: usize,
    w: usize,
    r: &[u64],
    up: Option<(&[u64], &[u64])>,
) {
    let row0 = lr * w;
    let g0 = off + row0;
    // Each site first points at the start of its run of right bonds.
    let mut cur = 0u32;
    let mut carry = 0u64;
    for (k, &rk) in r.iter().enumerate() {
        // Bit x: bonded to the left (the wrap bond at w − 1 shifts out of the row).
        let left = (rk << 1) | carry;
        carry = rk >> 63;
        let x0 = k * 64;
        let n = (w - x0).min(64);
        let dst = &mut p[row0 + x0..row0 + x0 + n];
        for (j, v) in dst.iter_mut().enumerate() {
            let g = (g0 + x0 + j) as u32;
            cur = if (left >> j) & 1 != 0 { cur } else { g };
            *v = cur;
        }
    }
    // Bonds up; one is redundant when the sites to its left are bonded up and both rows bond
    // across (the two sites above and below are then already in one cluster).
    if let Some((du, ru)) = up {
        // The root of the run being joined up is tracked here: a run's start is a root until
        // the run's first union, so no search is needed on this row's side.
        let (mut start, mut root) = (u32::MAX, 0u32);
        let (mut carry, mut left_c, mut left_a) = (0u64, 0u64, 0u64);
        // Where the last run (of this row, of the row above) started before the current word.
        let (mut last_c, mut last_a) = (0usize, 0usize);
        for k in 0..r.len() {
            let u = du[k];
            let m = u & ru[k] & r[k];
            let redundant = (m << 1) | carry;
            carry = m >> 63;
            let mut need = u & !redundant;
            // Run starts from the bits (no load on the union's dependency chain).
            let starts_c = !((r[k] << 1) | left_c);
            let starts_a = !((ru[k] << 1) | left_a);
            (left_c, left_a) = (r[k] >> 63, ru[k] >> 63);
            let run_start = |starts: u64, j: u32, last: usize| {
                let m = starts & (u64::MAX >> (63 - j));
                if m != 0 {
                    k * 64 + 63 - m.leading_zeros() as usize
                } else {
                    last
                }
            };
            while need != 0 {
                let j = need.trailing_zeros();
                need &= need - 1;
                let s = (g0 + run_start(starts_c, j, last_c)) as u32;
                if s != start {
                    (start, root) = (s, s);
                }
                // The root above: two steps up from the run start above without a branch (the
                // usual depth); deeper trees are rare, and get their path halved.
                let t = g0 - w + run_start(starts_a, j, last_a);
                let a1 = p[t - off];
                let a2 = p[a1 as usize - off];
                let a = if p[a2 as usize - off] == a2 {
                    a2
                } else {
                    let a = find(p, off, a2);
                    p[t - off] = a;
                    a
                };
                let (lo, hi) = if a < root { (a, root) } else { (root, a) };
                p[hi as usize - off] = lo;
                root = lo;
            }
            last_c = run_start(starts_c, 63, last_c);
            last_a = run_start(starts_a, 63, last_a);
        }
    }
    // The wrap bond of the row.
    if (r[(w - 1) / 64] >> ((w - 1) % 64)) & 1 != 0 {
        union(p, off, (g0 + w - 1) as u32, g0 as u32);
    }
}

/// Labels strip `rows` (its sites `p`, first site `off = rows.start · w`) from `spins` (the
/// whole lattice, read-only): after it each site's parent chain, within the strip, leads to the
/// smallest index of its cluster's part in the strip; the last row's down bonds go to
/// `scratch.seam`, and each site's candidate new spin to `fresh` (the strip's part).
#[inline(always)]
fn strip_generic(
    pr: &Params,
    rows: std::ops::Range<usize>,
    spins: &[u8],
    p: &mut [u32],
    fresh: &mut [u8],
    scratch: &mut Scratch,
) {
    let (h, w, nw) = (pr.h, pr.w, pr.words());
    let off = rows.start * w;
    for v in scratch.r.iter_mut().chain(scratch.d.iter_mut()) {
        v.resize(nw, 0);
    }
    for y in rows.clone() {
        let lr = y - rows.start;
        let cur = lr % 2;
        let row = &spins[y * w..(y + 1) * w];
        let ny = if y + 1 < h { y + 1 } else { 0 };
        let next = &spins[ny * w..(ny + 1) * w];
        let [r0, r1] = &mut scratch.r;
        let [d0, d1] = &mut scratch.d;
        let (rc, rp, dc, dp) = if cur == 0 {
            (r0, &*r1, d0, &*d1)
        } else {
            (r1, &*r0, d1, &*d0)
        };
        bonds_row(pr, y, row, next, &mut fresh[lr * w..(lr + 1) * w], rc, dc);
        let up = (lr > 0).then_some((dp, rp));
        scan_row(
            p,
            off,
            lr,
            w,
            rc,
            up.map(|(d, r)| (d.as_slice(), r.as_slice())),
        );
    }
    let last = (rows.len() - 1) % 2;
    scratch.seam.clone_from(&scratch.d[last]);
}

/// Runs `$body` on the widest vector unit this CPU has (AVX-512, AVX2, or the build's
/// baseline): the Philox lanes and the bond masks vectorise, the rest gains BMI.
macro_rules! dispatch {
    ($name:ident, $generic:ident, ($($arg:ident: $ty:ty),*)) => {
        pub(crate) fn $name($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,bmi1,bmi2,lzcnt,popcnt,fma")]
                fn v4($($arg: $ty),*) { $generic($($arg),*) }
                #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt,fma")]
                fn v3($($arg: $ty),*) { $generic($($arg),*) }
                if std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512vl")
                    && std::arch::is_x86_feature_detected!("avx512dq")
                    && std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("bmi1")
                    && std::arch::is_x86_feature_detected!("bmi2")
                    && std::arch::is_x86_feature_detected!("lzcnt")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    // SAFETY: the CPU has every feature `v4` is compiled for (checked above).
                    return unsafe { v4($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("bmi1")
                    && std::arch::is_x86_feature_detected!("bmi2")
                    && std::arch::is_x86_feature_detected!("lzcnt")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    // SAFETY: the CPU has every feature `v3` is compiled for (checked above).
                    return unsafe { v3($($arg),*) };
                }
            }
            $generic($($arg),*)
        }
    };
}

dispatch!(
    label_strip,
    strip_generic,
    (
        pr: &Params,
        rows: std::ops::Range<usize>,
        spins: &[u8],
        p: &mut [u32],
        fresh: &mut [u8],
        scratch: &mut Scratch
    )
);

/// Root of global site `x` on the whole lattice (no compression: see [`join_seams`]).
fn find_all(p: &[u32], mut x: u32) -> u32 {
    while p[x as usize] != x {
        x = p[x as usize];
    }
    x
}

/// Unites the clusters across the seams: strip `k`'s last row (ending at row `ends[k]`) with the
/// row below it (row 0 after the last). Every root linked here is then pointed straight at its
/// final root, so that the flattening pass of each strip reads only its own sites.
pub(crate) fn join_seams(
    p: &mut [u32],
    w: usize,
    h: usize,
    seams: &[(usize, &[u64])],
    touched: &mut Vec<u32>,
) {
    touched.clear();
    for &(end, bits) in seams {
        let y = end - 1;
        let ny = if end < h { end } else { 0 };
        for (k, &word) in bits.iter().enumerate() {
            let mut m = word;
            while m != 0 {
                let x = k * 64 + m.trailing_zeros() as usize;
                m &= m - 1;
                let a = find_all(p, (y * w + x) as u32);
                let b = find_all(p, (ny * w + x) as u32);
                if a != b {
                    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
                    p[hi as usize] = lo;
                    touched.push(hi);
                }
            }
        }
    }
    for &t in touched.iter() {
        p[t as usize] = find_all(p, t);
    }
}

/// Where the finishing pass counts each cluster's sites (at its root): a plain array when one
/// strip covers the lattice, shared counters when strips meet roots of other strips.
pub(crate) enum Sizes<'a> {
    Plain(&'a mut [u32]),
    Shared(&'a [std::sync::atomic::AtomicU32]),
}

impl Sizes<'_> {
    #[inline(always)]
    fn add(&mut self, root: u32, count: u32) {
        match self {
            Sizes::Plain(s) => s[root as usize] += count,
            Sizes::Shared(s) => {
                s[root as usize].fetch_add(count, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
}

/// The last pass of a strip (sites `p`, first site `off`): every site takes its root (parents
/// are never above their child, so a raster pass finds each parent already flattened; a parent
/// outside the strip is already a root) and the new spin drawn at it. With `sizes`, counts each
/// cluster's sites at its root.
#[inline(always)]
fn finish_generic(
    p: &mut [u32],
    off: usize,
    spins: &mut [u8],
    fresh: &[u8],
    sizes: Option<Sizes<'_>>,
) {
    let n = p.len();
    for i in 0..n {
        let v = p[i];
        let loc = (v as usize).wrapping_sub(off);
        let r = if loc < n { p[loc] } else { v };
        p[i] = r;
        spins[i] = fresh[r as usize];
    }
    let Some(mut sizes) = sizes else {
        return;
    };
    // Runs of equal roots add once; their ends come from a compared mask, 64 sites at a time,
    // so that no branch depends on where a run ends.
    let (mut last, mut start) = (p[0], 0usize);
    let mut i = 1;
    while i < n {
        let end = (i + 64).min(n);
        let mut m = 0u64;
        for j in i..end {
            m |= u64::from(p[j] != p[j - 1]) << (j - i);
        }
        while m != 0 {
            let b = i + m.trailing_zeros() as usize;
            m &= m - 1;
            sizes.add(last, (b - start) as u32);
            (last, start) = (p[b], b);
        }
        i = end;
    }
    sizes.add(last, (n - start) as u32);
}

dispatch!(
    finish_strip,
    finish_generic,
    (
        p: &mut [u32],
        off: usize,
        spins: &mut [u8],
        fresh: &[u8],
        sizes: Option<Sizes<'_>>
    )
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mc::rng::TAG_SW;

    /// The build's baseline code (what CPUs without AVX2 run) equals the dispatched one.
    #[test]
    fn baseline_equals_dispatched() {
        let (h, w) = (37, 150);
        let mut state = 12345u64;
        let spins: Vec<u8> = (0..h * w)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((state >> 33) % 3) as u8
            })
            .collect();
        let pr = Params {
            h,
            w,
            key: SweepKey::new(77, 1, 5, TAG_SW),
            tm1: (0.63 * 4_294_967_296.0) as u32,
            on: true,
            q: 3,
            wraps_x: true,
            wraps_y: true,
        };
        let run = |generic: bool| {
            let (mut p, mut fresh, mut sc) =
                (vec![0u32; h * w], vec![0u8; h * w], Scratch::default());
            let mut s = spins.clone();
            let mut sizes = vec![0u32; h * w];
            if generic {
                strip_generic(&pr, 0..h, &spins, &mut p, &mut fresh, &mut sc);
            } else {
                label_strip(&pr, 0..h, &spins, &mut p, &mut fresh, &mut sc);
            }
            let mut touched = Vec::new();
            join_seams(&mut p, w, h, &[(h, sc.seam.as_slice())], &mut touched);
            if generic {
                finish_generic(&mut p, 0, &mut s, &fresh, Some(Sizes::Plain(&mut sizes)));
            } else {
                finish_strip(&mut p, 0, &mut s, &fresh, Some(Sizes::Plain(&mut sizes)));
            }
            (p, s, sizes)
        };
        assert_eq!(run(true), run(false));
    }
}
