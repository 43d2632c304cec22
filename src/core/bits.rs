//! Rows of sites as bit masks: bit `j` of word `i` is column `64 i + j`.
//!
//! The one home of the crate's bit and SIMD helpers, shared by the strip labeler
//! ([`crate::rule`], `cpu::strips`) and the measuring pass (`analysis::scan`).

use crate::SiteValue;
use std::any::TypeId;

/// Bits of row words: bit `j` of word `i` is column `64 i + j`.
pub(crate) const WORD: usize = 64;

/// Number of 64-bit words for `w` columns.
#[inline]
pub(crate) fn words(w: usize) -> usize {
    w.div_ceil(WORD)
}

/// `n / d` for `n, d < 2³²` by a multiply (Lemire, Kaser & Kurz 2019: `c = ⌈2⁶⁴ / d⌉`,
/// `n / d = ⌊c · n / 2⁶⁴⌋`); `d = 1` is its own case (`c` would be `2⁶⁴`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Divisor {
    d: u32,
    c: u64,
}

impl Divisor {
    /// The divisor `d` (≥ 1).
    pub(crate) fn new(d: u32) -> Divisor {
        assert!(d > 0, "division by zero");
        let c = if d == 1 {
            0
        } else {
            u64::MAX / u64::from(d) + 1
        };
        Divisor { d, c }
    }

    /// `(n / d, n % d)`.
    #[inline(always)]
    pub(crate) fn div_rem(self, n: u32) -> (u32, u32) {
        if self.d == 1 {
            return (n, 0);
        }
        let q = ((u128::from(self.c) * u128::from(n)) >> 64) as u32;
        (q, n - q * self.d)
    }
}

/// Asks the cache for the line of `slice[i]` (nothing when `i` is out of bounds, or off
/// x86-64): a hint with no effect on any value, for loops that know their next random
/// accesses a few steps ahead.
#[inline(always)]
pub(crate) fn prefetch<T>(slice: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(r) = slice.get(i) {
        // SAFETY: a prefetch reads nothing architecturally and cannot fault; the pointer is
        // into `slice` anyway.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                (r as *const T).cast::<i8>(),
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (slice, i);
}

/// `out = bits shifted towards higher columns by one` (bit x ← bit x − 1).
#[inline]
pub(crate) fn shl1(bits: &[u64], out: &mut [u64]) {
    let mut carry = 0u64;
    for (o, &b) in out.iter_mut().zip(bits) {
        *o = (b << 1) | carry;
        carry = b >> 63;
    }
}

/// `out = bits shifted towards lower columns by one` (bit x ← bit x + 1).
#[inline]
pub(crate) fn shr1(bits: &[u64], out: &mut [u64]) {
    let n = bits.len();
    for i in 0..n {
        let next = if i + 1 < n { bits[i + 1] << 63 } else { 0 };
        out[i] = (bits[i] >> 1) | next;
    }
}

/// Bit `x` of `out` set when `row[x]` is nonzero; words of `out` past the row are cleared.
///
/// `u8` and `u32` rows take an SSE2 kernel on x86-64 (SSE2 is part of x86-64), 64 sites per
/// word; other types and the last partial word go site by site.
#[inline]
pub(crate) fn pack_nonzero<T: SiteValue>(row: &[T], out: &mut [u64]) {
    if let Some(bytes) = same_type::<T, u8>(row) {
        pack_with(bytes, out, pack64_u8);
    } else if let Some(ints) = same_type::<T, u32>(row) {
        pack_with(ints, out, pack64_u32);
    } else {
        for (o, chunk) in out.iter_mut().zip(row.chunks(WORD)) {
            *o = pack_scalar(chunk);
        }
    }
    let n = words(row.len()).min(out.len());
    out[n..].fill(0);
}

/// `row` as a `&[U]` when `T` is `U`.
#[inline]
fn same_type<T: 'static, U: 'static>(row: &[T]) -> Option<&[U]> {
    if TypeId::of::<T>() == TypeId::of::<U>() {
        // SAFETY: T is U, so the slice is a `[U]` of the same length.
        Some(unsafe { std::slice::from_raw_parts(row.as_ptr().cast::<U>(), row.len()) })
    } else {
        None
    }
}

/// Packs the full words with `full` and the last partial one site by site.
#[inline(always)]
fn pack_with<T: SiteValue>(row: &[T], out: &mut [u64], full: impl Fn(&[T; WORD]) -> u64) {
    for (o, chunk) in out.iter_mut().zip(row.chunks(WORD)) {
        *o = match chunk.try_into() {
            Ok(c) => full(c),
            Err(_) => pack_scalar(chunk),
        };
    }
}

/// The reference: one site at a time.
#[inline]
fn pack_scalar<T: SiteValue>(chunk: &[T]) -> u64 {
    let mut m = 0u64;
    for (j, &v) in chunk.iter().enumerate() {
        m |= u64::from(v.is_occupied()) << j;
    }
    m
}

/// 64 bytes: 16 per compare.
#[inline(always)]
fn pack64_u8(c: &[u8; WORD]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let p = c.as_ptr();
        // SAFETY: 64 bytes from p are in bounds; SSE2 is always present on x86-64.
        unsafe {
            let zero = _mm_setzero_si128();
            let mut m = 0u64;
            for k in 0..4 {
                let v = _mm_loadu_si128(p.add(16 * k).cast());
                let z = _mm_movemask_epi8(_mm_cmpeq_epi8(v, zero)) as u32 as u64;
                m |= (!z & 0xffff) << (16 * k);
            }
            m
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    pack_scalar(c)
}

/// 64 `u32`: 4 per compare, the compare masks narrowed to bytes by two saturating packs
/// (all-ones stays all-ones) so that one `movemask` takes 16 sites.
#[inline(always)]
fn pack64_u32(c: &[u32; WORD]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let p = c.as_ptr();
        // SAFETY: 64 u32 from p are in bounds; SSE2 is always present on x86-64.
        unsafe {
            let zero = _mm_setzero_si128();
            let mut m = 0u64;
            for k in 0..4 {
                let q = p.add(16 * k);
                let a = _mm_cmpeq_epi32(_mm_loadu_si128(q.cast()), zero);
                let b = _mm_cmpeq_epi32(_mm_loadu_si128(q.add(4).cast()), zero);
                let c = _mm_cmpeq_epi32(_mm_loadu_si128(q.add(8).cast()), zero);
                let d = _mm_cmpeq_epi32(_mm_loadu_si128(q.add(12).cast()), zero);
                let ab = _mm_packs_epi32(a, b);
                let cd = _mm_packs_epi32(c, d);
                let z = _mm_movemask_epi8(_mm_packs_epi16(ab, cd)) as u32 as u64;
                m |= (!z & 0xffff) << (16 * k);
            }
            m
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    pack_scalar(c)
}

/// Number of set bits of `bits` at positions `lo..=hi`.
#[inline]
pub(crate) fn pop_range(bits: &[u64], lo: usize, hi: usize) -> u32 {
    let (wl, wh) = (lo / WORD, hi / WORD);
    let low_mask = u64::MAX << (lo % WORD);
    let high_mask = u64::MAX >> (63 - hi % WORD);
    if wl == wh {
        return (bits[wl] & low_mask & high_mask).count_ones();
    }
    let mut n = (bits[wl] & low_mask).count_ones() + (bits[wh] & high_mask).count_ones();
    for &b in &bits[wl + 1..wh] {
        n += b.count_ones();
    }
    n
}

/// Bit `i` of `bits`, as 0 or 1.
#[inline]
pub(crate) fn bit(bits: &[u64], i: usize) -> u32 {
    ((bits[i / WORD] >> (i % WORD)) & 1) as u32
}

/// Set bits in increasing order.
pub(crate) struct Ones<'a> {
    bits: &'a [u64],
    word: usize,
    cur: u64,
}

impl<'a> Ones<'a> {
    /// The set bits of `bits`.
    pub(crate) fn new(bits: &'a [u64]) -> Self {
        Ones {
            bits,
            word: 0,
            cur: bits.first().copied().unwrap_or(0),
        }
    }
}

impl Iterator for Ones<'_> {
    type Item = usize;
    #[inline]
    fn next(&mut self) -> Option<usize> {
        while self.cur == 0 {
            self.word += 1;
            if self.word >= self.bits.len() {
                return None;
            }
            self.cur = self.bits[self.word];
        }
        let t = self.cur.trailing_zeros() as usize;
        self.cur &= self.cur - 1;
        Some(self.word * WORD + t)
    }
}

/// Starts and ends of the runs of set bits of `x` (no run continues across the ends of `x`).
pub(crate) fn run_bounds(x: &[u64], tmp: &mut [u64], starts: &mut [u64], ends: &mut [u64]) {
    shl1(x, tmp);
    for ((s, &v), &t) in starts.iter_mut().zip(x).zip(tmp.iter()) {
        *s = v & !t;
    }
    shr1(x, tmp);
    for ((e, &v), &t) in ends.iter_mut().zip(x).zip(tmp.iter()) {
        *e = v & !t;
    }
}

#[cfg(test)]
mod tests {
    /// The multiply gives the quotient and remainder of a division for every divisor tried,
    /// at the ends of the range and in between.
    #[test]
    fn divisor_divides() {
        let mut x = 0x9e37_79b9u32;
        for d in (1..300u32).chain([511, 512, 513, 2047, 2048, 32768, 65535, 1 << 29, u32::MAX]) {
            let div = super::Divisor::new(d);
            for n in [0, 1, d - 1, d, d.wrapping_add(1), u32::MAX, u32::MAX - 1] {
                assert_eq!(div.div_rem(n), (n / d, n % d), "{n} / {d}");
            }
            for _ in 0..2000 {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                assert_eq!(div.div_rem(x), (x / d, x % d), "{x} / {d}");
            }
        }
    }

    use super::*;

    /// A pseudo-random row with about a third of its sites zero.
    fn row<T: From<u8>>(len: usize, seed: u32) -> Vec<T> {
        let mut x = seed;
        (0..len)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                let v = (x >> 16) as u8;
                T::from(if v % 3 == 0 { 0 } else { v | 1 })
            })
            .collect()
    }

    fn bits_of(bits: &[u64], len: usize) -> Vec<bool> {
        (0..len).map(|i| bit(bits, i) == 1).collect()
    }

    #[test]
    fn pack_nonzero_matches_scalar_for_every_type() {
        for len in [0usize, 1, 15, 16, 63, 64, 65, 127, 128, 200, 1000] {
            let a: Vec<u8> = row(len, len as u32 + 1);
            let want: Vec<bool> = a.iter().map(|&v| v != 0).collect();
            // Stale bits in `out`, one word too many: the extra word must come back cleared.
            let mut out = vec![u64::MAX; words(len) + 1];
            pack_nonzero(&a, &mut out);
            assert_eq!(bits_of(&out, len), want, "u8, len {len}");
            assert_eq!(out[words(len)], 0);
            if len % WORD != 0 {
                assert_eq!(out[len / WORD] >> (len % WORD), 0, "u8 tail, len {len}");
            }
            let b: Vec<u16> = a.iter().map(|&v| u16::from(v) << 8).collect();
            out.fill(u64::MAX);
            pack_nonzero(&b, &mut out);
            assert_eq!(bits_of(&out, len), want, "u16, len {len}");
            // Values with only high bits set must count as nonzero (the packs saturate).
            let c: Vec<u32> = a.iter().map(|&v| u32::from(v) << 24).collect();
            out.fill(u64::MAX);
            pack_nonzero(&c, &mut out);
            assert_eq!(bits_of(&out, len), want, "u32, len {len}");
            for (i, w) in out[..words(len)].iter().enumerate() {
                let lo = i * WORD;
                assert_eq!(*w, pack_scalar(&c[lo..len.min(lo + WORD)]), "word {i}");
            }
        }
    }

    #[test]
    fn simd_kernels_match_scalar_on_edge_values() {
        let mut a = [0u8; WORD];
        let mut c = [0u32; WORD];
        for j in 0..WORD {
            a[j] = [0, 1, 0x80, 0xff][j % 4];
            c[j] = [0, 1, 0x8000_0000, u32::MAX, 0x0001_0000][j % 5];
        }
        assert_eq!(pack64_u8(&a), pack_scalar(&a));
        assert_eq!(pack64_u32(&c), pack_scalar(&c));
        assert_eq!(pack64_u8(&[0; WORD]), 0);
        assert_eq!(pack64_u32(&[7; WORD]), u64::MAX);
    }

    #[test]
    fn shifts_carry_across_words() {
        let x = [0x8000_0000_0000_0001u64, 0x1];
        let mut out = [0u64; 2];
        shl1(&x, &mut out);
        assert_eq!(out, [0x2, 0x3]);
        shr1(&x, &mut out);
        assert_eq!(out, [0xC000_0000_0000_0000, 0]);
    }

    #[test]
    fn ones_pop_range_and_runs_match_a_scan_of_the_bits() {
        let r: Vec<u8> = row(300, 9);
        let mut x = vec![0u64; words(300)];
        pack_nonzero(&r, &mut x);
        let set: Vec<usize> = (0..300).filter(|&i| r[i] != 0).collect();
        assert_eq!(Ones::new(&x).collect::<Vec<_>>(), set);
        for (lo, hi) in [(0, 0), (3, 70), (64, 127), (5, 299), (130, 131)] {
            let want = set.iter().filter(|&&i| i >= lo && i <= hi).count() as u32;
            assert_eq!(pop_range(&x, lo, hi), want, "{lo}..={hi}");
        }
        let n = x.len();
        let (mut tmp, mut starts, mut ends) = (vec![0; n], vec![0; n], vec![0; n]);
        run_bounds(&x, &mut tmp, &mut starts, &mut ends);
        let on = |i: usize| i < 300 && r[i] != 0;
        let want_starts: Vec<usize> = (0..300)
            .filter(|&i| on(i) && (i == 0 || !on(i - 1)))
            .collect();
        let want_ends: Vec<usize> = (0..300).filter(|&i| on(i) && !on(i + 1)).collect();
        assert_eq!(Ones::new(&starts).collect::<Vec<_>>(), want_starts);
        assert_eq!(Ones::new(&ends).collect::<Vec<_>>(), want_ends);
        assert_eq!(Ones::new(&[]).next(), None);
    }
}
