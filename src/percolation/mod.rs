//! Percolation-threshold studies: Newman–Ziff microcanonical sweeps with wrapping detection by
//! winding, canonical curves by the binomial convolution, fixed-`p` sampling in batches on the
//! GPU or the CPU ([`BatchSampler`]: identical results on both; [`Method::FixedP`] studies),
//! `p_c` and `τ` with standard errors, and resumable, mergeable HDF5 study files.
//!
//! ```
//! use clusterlab::percolation::{Method, Model, Study, StudyConfig, Wrapping};
//! use clusterlab::{Boundary, Connectivity, Options};
//! use std::time::Duration;
//!
//! let model = Model::Site(Connectivity::Four);
//! let config = StudyConfig {
//!     model,
//!     boundary: Boundary::Periodic,
//!     sizes: vec![(16, 16)],
//!     samples: 200,
//!     seed: 1,
//!     p_grid: StudyConfig::default_grid(model),
//!     command: String::new(),
//!     method: Method::NewmanZiff,
//! };
//! let mut study = Study::new(config)?;
//! study.run(&Options::default(), Duration::from_secs(5), |_, _| Ok(()))?;
//! let results = study.results()?;
//! let r_e = results.sizes[0].at_pc[2]; // R^(e) at the reference p_c
//! assert!((r_e.value - Wrapping::E.torus_limit()).abs() < 5.0 * r_e.stderr + 0.05);
//! # Ok::<(), clusterlab::Error>(())
//! ```
//!
//! Definitions follow `CONVENTIONS.md` (Newman & Ziff, Phys. Rev. E 64, 016706, 2001): `R^(h)`
//! some cluster wraps along `x`, `R^(v)` along `y`, `R^(e)` either, `R^(b)` one cluster both,
//! `R^(1) = R^(h) − R^(b)`; on open axes "wraps" reads "spans". `P∞` is the fraction of sites in
//! percolating clusters; `S = Σ′ s² / Σ′ s` over the others.

mod batch;
mod binomial;
mod canonical;
mod estimate;
mod fixed;
mod forest;
mod model;
mod newman_ziff;
#[cfg(test)]
mod oracle;
pub(crate) mod runner;
mod study;
#[cfg(feature = "hdf5")]
mod study_file;
mod sums;
mod tau;
#[cfg(test)]
mod tests;
mod winding;

pub use batch::{
    label_batch, threshold, BatchSampler, BatchSpec, BatchStats, SampleStats, MAX_BATCH_SITES,
};
pub use binomial::BinomialWeights;
pub use canonical::{AtP, Curves, Estimate, Wrapping};
pub use estimate::{crossing, extrapolate, weighted_line, Crossing, LineFit, NU, TAU};
pub use fixed::{FixedSums, COUNT_NAMES, MOMENT_NAMES};
pub use model::{Geometry, Model, MAX_UNITS};
pub use newman_ziff::{sample_order, Sweeper};
pub use study::{Method, Progress, SizeResult, Study, StudyConfig, StudyResults, MAX_SAMPLES};
#[cfg(feature = "hdf5")]
pub use study_file::{merge_files, read_study, write_study};
pub use sums::{MicroSums, SampleRecord, EVENT_NAMES, NEVER};
pub use tau::{fit_tau, TauFit, OMEGA};
