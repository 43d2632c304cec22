//! The counter-based random numbers of the Monte Carlo updates (see the module docs of
//! [`crate::mc`] for the exact key and counter layout, which a GPU kernel reproduces).

#[cfg(test)]
use rand_philox::philox4x32_10;
use rand_philox::Philox;

/// Update tags in the counter's top word, so that algorithms never share random numbers.
pub(crate) const TAG_SW: u32 = 1;
pub(crate) const TAG_METROPOLIS: u32 = 2;
pub(crate) const TAG_WOLFF: u32 = 3;
pub(crate) const TAG_WOLFF_CALIBRATION: u32 = 4;

/// The most chains (streams) a seed keys: the stream shares the counter's top word with a tag.
pub const MAX_STREAMS: u64 = 1 << 28;

/// Philox key and the fixed counter words of one sweep of one chain.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SweepKey {
    pub key: [u32; 2],
    /// Counter words 1..=3: sweep (low, high), `stream << 4 | tag`.
    pub hi: [u32; 3],
}

impl SweepKey {
    pub(crate) fn new(seed: u64, stream: u64, sweep: u64, tag: u32) -> Self {
        debug_assert!(stream < MAX_STREAMS);
        SweepKey {
            key: [seed as u32, (seed >> 32) as u32],
            hi: [
                sweep as u32,
                (sweep >> 32) as u32,
                ((stream as u32) << 4) | tag,
            ],
        }
    }

    /// The block of site `site` (counter word 0).
    #[inline]
    #[cfg(test)]
    pub(crate) fn block(&self, site: u32) -> [u32; 4] {
        philox4x32_10([site, self.hi[0], self.hi[1], self.hi[2]], self.key)
    }

    /// A sequential stream starting at block `site`: the blocks of sites `site, site + 1, …`
    /// (word 0 must not carry, which holds for site indices below 2³²).
    pub(crate) fn stream_at(&self, site: u32) -> Philox {
        let c = u128::from(site)
            | u128::from(self.hi[0]) << 32
            | u128::from(self.hi[1]) << 64
            | u128::from(self.hi[2]) << 96;
        Philox::new(self.key, c)
    }
}

/// `floor(p · 2³²)` (shared with the device sweeper, which takes the threshold ready-made).
pub(crate) use crate::core::sweep::threshold;

/// `floor(word · n / 2³²)`, a value in `0..n` (bias below n / 2³², negligible for n ≤ 255).
#[inline]
pub(crate) fn below(word: u32, n: u32) -> u32 {
    ((u64::from(word) * u64::from(n)) >> 32) as u32
}

/// `floor(w · n / 2⁶⁴)` with `w = hi · 2³² + lo`: a site index in `0..n` (bias below n / 2⁶⁴).
#[inline]
pub(crate) fn below64(hi: u32, lo: u32, n: u64) -> u64 {
    let w = (u64::from(hi) << 32) | u64::from(lo);
    ((u128::from(w) * u128::from(n)) >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vectorised row fill gives each site the block the documented counter names.
    #[test]
    fn stream_blocks_are_the_site_blocks() {
        let key = SweepKey::new(0x1234_5678_9abc_def0, 5, (7u64 << 32) | 3, TAG_SW);
        let mut buf = vec![0u32; 4 * 37];
        key.stream_at(1000).fill_u32(&mut buf);
        for (i, b) in buf.chunks(4).enumerate() {
            let want = philox4x32_10(
                [1000 + i as u32, 3, 7, (5 << 4) | TAG_SW],
                [0x9abc_def0, 0x1234_5678],
            );
            assert_eq!(b, want);
            assert_eq!(key.block(1000 + i as u32), want);
        }
        assert_eq!(threshold(1.0), 1 << 32);
        assert_eq!(threshold(0.0), 0);
        assert_eq!(below(u32::MAX, 3), 2);
        assert_eq!(below64(u32::MAX, u32::MAX, 10), 9);
    }
}
