//! What a device-resident Swendsen–Wang sweeper needs and returns, in plain numbers: the physics
//! layer (`mc`) fills in [`SwParams`] from its model and turns each [`SwTally`] into a sample,
//! so that the backends below it know nothing of models.

use super::lattice::Boundary;

/// One Swendsen–Wang chain as a backend runs it (see `crate::mc` for the random-number layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SwParams {
    pub height: usize,
    pub width: usize,
    /// Spin states, 2..=255.
    pub q: u8,
    pub boundary: Boundary,
    /// `floor(p · 2³²)` for the bond probability p (2³² for p = 1).
    pub threshold: u64,
    pub seed: u64,
    /// The chain's number (< 2²⁸), in the counter's top word beside the update tag.
    pub stream: u64,
}

/// The integer tallies of one measured sweep, from which every observable follows exactly.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SwTally {
    /// The sweep (counted from 1) after which it was measured.
    pub sweep: u64,
    /// Equal-spin neighbour pairs (each bond once, wrapping where the boundary wraps).
    pub satisfied: u64,
    /// Σ_c |c|² over the sweep's clusters.
    pub sum_sq: u64,
    /// Sites per spin value, `q` entries.
    pub counts: Vec<u64>,
}

/// `floor(p · 2³²)` as a threshold: an event of probability `p` happens when a Philox word is
/// below it (exact for p = 0 and p = 1).
#[inline]
pub(crate) fn threshold(p: f64) -> u64 {
    if p <= 0.0 {
        0
    } else if p >= 1.0 {
        1 << 32
    } else {
        (p * 4_294_967_296.0) as u64
    }
}
