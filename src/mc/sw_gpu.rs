//! Swendsen–Wang on a GPU, device-resident: the spins stay on the device between sweeps, the
//! sweeps are queued without waiting, and the integer tallies of the measured sweeps come back
//! a few hundred at a time. The random numbers and the observables' arithmetic are the CPU's
//! ([`super::sw`], [`super::measure`]), so the spins and samples equal the CPU path's.

use super::chain::Sink;
use super::measure::{bond_count, Sample, Tally};
use super::model::Model;
use super::rng::threshold;
use crate::core::sweep::SwParams;
use crate::device::{Device, GpuSwendsenWang, SwTally};
use crate::{Options, Result};
use ndarray::Array2;

/// A device chain and which copy of the spins is current.
pub(crate) struct GpuSw {
    chain: GpuSwendsenWang,
    /// The host's spins changed (new chain, restore) and must be uploaded before a sweep.
    upload: bool,
}

impl GpuSw {
    /// The device chain of `model` when `options` resolve to a GPU; `None` on the CPU.
    ///
    /// # Errors
    /// [`crate::Error::CudaUnavailable`] when [`crate::Backend::Cuda`] cannot open its GPU,
    /// and those of the device chain's construction.
    pub(crate) fn open(
        model: &Model,
        seed: u64,
        stream: u64,
        options: Options,
    ) -> Result<Option<GpuSw>> {
        let device = Device::resolve(&options)?;
        let (height, width) = model.dim();
        let params = SwParams {
            height,
            width,
            q: model.q(),
            boundary: model.boundary(),
            threshold: threshold(model.bond_probability()),
            seed,
            stream,
        };
        Ok(device.swendsen_wang(params)?.map(|chain| GpuSw {
            chain,
            upload: true,
        }))
    }

    /// The host's spins are newer than the device's (a restored chain).
    pub(crate) fn spins_changed(&mut self) {
        self.upload = true;
    }

    /// The sample of one measured sweep, from its tallies, exactly as the CPU computes it.
    fn sample(model: &Model, t: SwTally) -> Sample {
        let tally = Tally {
            counts: t.counts,
            satisfied: t.satisfied,
            bonds: bond_count(model),
        };
        let mut sample = tally.sample(model);
        let sites = model.sites() as f64;
        sample.cluster_num = t.sum_sq as f64 / (sites * sites);
        sample.cluster_den = 1.0;
        sample
    }

    /// Sweeps numbered `first..first + sweeps` (0-based), measuring those whose number counted
    /// from 1 is a multiple of `every` into `sink`; afterwards `spins` holds the device's.
    ///
    /// # Errors
    /// Those of the device and of the sink.
    pub(crate) fn run(
        &mut self,
        model: &Model,
        spins: &mut Array2<u8>,
        first: u64,
        sweeps: u64,
        every: u64,
        sink: &mut dyn Sink,
    ) -> Result<()> {
        let host = spins
            .as_slice_mut()
            .expect("a chain's spins are owned and standard-layout");
        if self.upload {
            self.chain.upload_spins(host)?;
            self.upload = false;
        }
        let mut flush = |chain: &mut GpuSwendsenWang| -> Result<()> {
            for t in chain.take_tallies()? {
                sink.record(t.sweep, &Self::sample(model, t))?;
            }
            Ok(())
        };
        for k in first..first + sweeps {
            let measure = (k + 1) % every == 0;
            if measure && self.chain.tallies_full() {
                flush(&mut self.chain)?;
            }
            self.chain.queue_sweep(k, measure)?;
        }
        flush(&mut self.chain)?;
        self.chain.download_spins(host)
    }
}
