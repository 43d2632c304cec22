//! How a study's batches are computed: in this process ([`Local`]), or split over the ranks of
//! an MPI job (`crate::farm`). A batch is a range of sample indices; its sums are integers that
//! add up to the same numbers however the range is cut, so both give the same study.

use super::batch::{BatchSampler, BatchSpec};
use super::fixed::FixedSums;
use super::model::{Geometry, Model};
use super::newman_ziff::run_samples;
use super::sums::MicroSums;
use crate::cpu::pool::CpuPool;
use crate::Result;
use std::ops::Range;

/// Computes a study's batches: [`Local`] in this process, `farm`'s runner split over the ranks
/// of an MPI job. Either returns the sums of exactly the samples asked for.
pub(crate) trait BatchRunner {
    /// The Newman–Ziff sums of samples `samples` of `seed`'s stream on `g`.
    fn newman_ziff(
        &mut self,
        g: Geometry,
        ns_at: &[u64],
        seed: u64,
        samples: Range<u64>,
        pool: &CpuPool,
    ) -> Result<MicroSums>;
    /// The fixed-`p` sums of samples `samples` at every point of `p_grid` on `g`.
    fn fixed_p(
        &mut self,
        g: Geometry,
        p_grid: &[f64],
        seed: u64,
        samples: Range<u64>,
        sampler: &mut BatchSampler,
    ) -> Result<FixedSums>;
    /// Processes a batch is split over (batches grow in whole rounds of them).
    fn ranks(&self) -> u64 {
        1
    }
}

/// Every batch in this process.
pub(crate) struct Local;

impl BatchRunner for Local {
    fn newman_ziff(
        &mut self,
        g: Geometry,
        ns_at: &[u64],
        seed: u64,
        samples: Range<u64>,
        pool: &CpuPool,
    ) -> Result<MicroSums> {
        run_samples(g, ns_at, seed, samples, pool)
    }

    fn fixed_p(
        &mut self,
        g: Geometry,
        p_grid: &[f64],
        seed: u64,
        samples: Range<u64>,
        sampler: &mut BatchSampler,
    ) -> Result<FixedSums> {
        fixed_part(g, p_grid, seed, samples, sampler)
    }
}

/// The fixed-`p` sums of samples `samples` (the same indices at every grid point), with
/// `samples` set to their count.
pub(crate) fn fixed_part(
    g: Geometry,
    p_grid: &[f64],
    seed: u64,
    samples: Range<u64>,
    sampler: &mut BatchSampler,
) -> Result<FixedSums> {
    let mut part = FixedSums::new(g, p_grid, g.model.reference_pc());
    let count = samples.end.saturating_sub(samples.start);
    if count == 0 {
        // A farm's rank with no share of a short batch: nothing to launch.
        return Ok(part);
    }
    for (i, &p) in p_grid.iter().enumerate() {
        let spec = BatchSpec {
            bonds: g.model == Model::Bond,
            connectivity: g.model.connectivity(),
            boundary: g.boundary,
            width: g.width,
            height: g.height,
            p,
            seed,
            first: samples.start,
            count,
            histogram: i == part.ns_at,
        };
        let stats = sampler.sample(&spec)?;
        part.add(i, &stats);
    }
    part.samples = count;
    Ok(part)
}
