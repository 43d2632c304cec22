//! Cluster Monte Carlo of the 2-D Ising and q-state Potts models: Swendsen–Wang (all cores),
//! Wolff (sequential) and checkerboard Metropolis, with observables, τ_int and error bars.
//!
//! ```
//! use clusterlab::mc::{summarize, Chain, MemorySink, Model, Update, ISING_TC};
//! use clusterlab::Options;
//!
//! let model = Model::ising(16, 16, ISING_TC)?;
//! let mut chain = Chain::new(model, Update::SwendsenWang, 42, 0, Options::default())?;
//! chain.run(200, 1, &mut clusterlab::mc::NullSink)?; // thermalise
//! let mut sink = MemorySink::default();
//! chain.run(2000, 1, &mut sink)?;
//! let s = summarize(&sink.values(), model.beta(), model.sites());
//! assert!((s.energy.mean + 1.4531).abs() < 5.0 * s.energy.stderr + 1e-3);
//! # Ok::<(), clusterlab::Error>(())
//! ```
//!
//! # Units
//! CONVENTIONS.md, "Spin models": [`ModelKind::Ising`] is H = −J Σ s_i s_j − h Σ s_i with
//! s = ±1 (T_c = 2/ln(1+√2), [`ISING_TC`]); its Swendsen–Wang/Wolff bond probability between
//! equal spins is 1 − e^(−2βJ). [`ModelKind::Potts`] is H = −J Σ δ(σ_i, σ_j) − h Σ δ(σ_i, 0)
//! (T_c = 1/ln(1+√q), [`potts_tc`]), bond probability 1 − e^(−βJ). Spins are `u8` in `0..q`;
//! the Ising spin value 0 is s = +1 and 1 is s = −1. Energies and magnetisations are per site.
//!
//! # Random numbers (the layout a GPU kernel reproduces)
//! Philox 4×32-10 (`rand_philox`), key = `[seed mod 2³², seed >> 32]` (the seed verbatim, no
//! mixing), counter = `[c0, sweep mod 2³², sweep >> 32, stream << 4 | tag]` where `sweep` is the
//! 0-based number of the sweep being made, `stream` the chain's number (< 2²⁸) and `tag` 1 for
//! Swendsen–Wang, 2 Metropolis, 3 Wolff (4 its calibration). From a block's four words `w0..w3`:
//! - **Swendsen–Wang**: `c0` = site index `y · w + x`. The bond to the right neighbour is active
//!   when the spins are equal and `w0 < t`, the bond down when equal and `w1 < t`, with
//!   `t = floor(p · 2³²)` (p the bond probability; `t = 2³²` for p = 1). The new spin of a cluster
//!   is `(w2 · q) >> 32` of the block of its smallest site index (its root). `w3` is unused.
//! - **Metropolis** (one block per site and sweep, sites with (x + y) even first, then odd):
//!   `c0` = site index; proposed spin `(old + 1 + ((w0 · (q − 1)) >> 32)) mod q`, accepted when
//!   `w1 < floor(min(1, e^(−βΔE)) · 2³²)`.
//! - **Wolff** (sequential): `c0` counts blocks from 0 within the sweep, words used in order
//!   (w0, w1, w2, w3, then the next block). Per cluster: two words `hi, lo` for the seed site
//!   `((hi · 2³² + lo) · N) >> 64`, one word for the new spin (as Metropolis's proposal), then one
//!   word per bond tested (stack order: left, right, up, down of each popped site, a bond tested
//!   only towards a site still holding the old spin), active when below `t`. A sweep is a fixed
//!   number of clusters, calibrated when the chain is made by 20 rounds of clusters (each until
//!   N sites flipped) from the ordered state with tag 4 and `sweep` = the round: the mean count
//!   of the last 10 rounds, rounded up.
//!
//! So a chain's state is its spins and sweep counter: the same seed gives the same spins on any
//! number of threads, and a restored chain continues bit-identically.

mod autocorr;
mod chain;
mod measure;
mod metropolis;
mod model;
mod rng;
#[cfg(feature = "hdf5")]
pub(crate) mod run_file;
mod stats;
mod sw;
mod sw_gpu;
mod sw_label;
mod wolff;

pub use autocorr::{estimate, tau_int, Estimate, SOKAL_C};
pub use chain::{run_chains, Chain, MemorySink, NullSink, Sink, Update};
pub use measure::Sample;
pub use metropolis::Metropolis;
pub use model::{potts_tc, Model, ModelKind, ISING_TC};
pub use rng::MAX_STREAMS;
#[cfg(feature = "hdf5")]
pub use run_file::{
    checkpoint_path, read_run, run_to_file, ChainSeries, Progress, RunConfig, RunData,
    MAX_TEMPERATURES, SERIES,
};
pub use stats::{summarize, Summary, JACKKNIFE_BLOCKS};
pub use sw::SwendsenWang;
pub use wolff::Wolff;

use crate::{Error, Result};

/// Cluster updates (Swendsen–Wang, Wolff) need h = 0: a field does not factor over clusters.
fn check_cluster_model(model: &Model) -> Result<()> {
    if model.field() != 0.0 {
        return Err(Error::InvalidArgument(
            "Swendsen–Wang and Wolff need h = 0: use metropolis for a field".into(),
        ));
    }
    Ok(())
}
