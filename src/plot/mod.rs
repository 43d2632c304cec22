//! PNG figures (feature `plot`, on by default): the cluster-size distribution `n_s` on log–log
//! axes, label images with one colour per cluster, the figures of percolation studies
//! ([`plot_study`]) and of Monte Carlo runs ([`plot_run`]).
//!
//! - [`SizeDistribution`] (from [`crate::analysis`], re-exported here) accumulates cluster sizes
//!   over one or many lattices (optionally leaving out the clusters that wrap or span) and gives
//!   `n_s`, raw or [log-binned](SizeDistribution::log_binned).
//! - [`plot_size_distribution`] draws it on log–log axes with [plotters](https://docs.rs/plotters),
//!   with an optional guide line `n_s ∝ s^−τ` (by default τ = 187/91, [`TAU_2D`], the exponent of
//!   2-D percolation).
//! - [`plot_labels`] draws a label image: clusters in colours picked from a 255-colour palette by
//!   a hash of the label ([`label_colour`]), empty sites black or white, big lattices downscaled.
//!
//! Both write the PNG atomically (a temporary file in the same folder, renamed into place; see
//! [`write_atomically`](crate::io::write_atomically)): a failure leaves nothing behind and never a
//! half-written file. The text of the charts uses a subset of DejaVu Sans compiled into the crate
//! (`assets/fonts/`), so nothing is needed from the system: no fonts, no fontconfig.
//!
//! ```
//! use clusterlab::plot::{plot_labels, plot_size_distribution, LabelImageOptions, SizeDistribution,
//!     SizePlotOptions};
//! use clusterlab::{analyze, generate::percolation, Boundary, Connectivity};
//!
//! # let dir = tempfile::tempdir().unwrap();
//! let mut ns = SizeDistribution::new();
//! for seed in 1..=4 {
//!     let lattice = percolation(128, 128, 0.592746, 1, seed);
//!     let table = analyze(lattice.view(), Connectivity::Four, Boundary::Periodic)?;
//!     ns.add_table(&table, true); // leave out the wrapping clusters
//! }
//! plot_size_distribution(&dir.path().join("ns.png"), &ns, &SizePlotOptions::default())?;
//!
//! let lattice = percolation(128, 128, 0.592746, 1, 1);
//! let labels = clusterlab::label(lattice.view(), Connectivity::Four, Boundary::Periodic)?;
//! let image = plot_labels(&dir.path().join("labels.png"), labels.array().view(),
//!     &LabelImageOptions::default())?;
//! assert_eq!((image.width, image.height), (128, 128));
//! # Ok::<(), clusterlab::Error>(())
//! ```

mod axes;
mod encode;
mod font;
mod label_image;
mod line_chart;
mod mc_charts;
mod palette;
mod percolation_charts;
mod size_chart;

pub use crate::analysis::{SizeBin, SizeDistribution};
pub use label_image::{plot_labels, Background, LabelImage, LabelImageOptions};
pub use mc_charts::{plot_run, ChainPlot};
pub use palette::label_colour;
pub use percolation_charts::plot_study;
pub use size_chart::{guide_amplitude, plot_size_distribution, SizePlotOptions};

use crate::{Error, Result};

/// The cluster-size exponent τ = 187/91 of 2-D percolation (site or bond, 4- or
/// 8-connectivity: it is universal): at the threshold `n_s ∝ s^−τ` for `1 ≪ s ≪ L^D`.
pub const TAU_2D: f64 = 187.0 / 91.0;

/// The largest width or height of a PNG written here, in pixels: beyond it a chart or label
/// image is refused (it would take gigabytes) rather than attempted.
pub const MAX_IMAGE_SIDE: u32 = 16384;

fn plot_error(e: impl std::fmt::Display) -> Error {
    Error::Plot(e.to_string())
}

fn check_image_size(width: u32, height: u32, what: &str) -> Result<()> {
    if width == 0 || height == 0 || width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE {
        return Err(Error::InvalidArgument(format!(
            "{what} of {width}x{height} pixels: width and height must be from 1 to {MAX_IMAGE_SIDE}"
        )));
    }
    Ok(())
}
