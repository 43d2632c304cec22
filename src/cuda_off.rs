//! Stands in for the `cuda` module when the crate is built without the `cuda` feature (as
//! candle's dummy backend does): the same crate-internal names, whose only constructor,
//! [`CudaDevice::open`], says why there is no GPU. Nothing else can be built, so every other
//! method is unreachable and front ends need no `cfg` of their own.

use crate::core::backend::LabelBackend;
use crate::core::region::{Criterion, Plan, Sample};
use crate::core::sweep::{SwParams, SwTally};
use crate::measure::fixed_p::{BatchSpec, BatchStats};
use crate::{Boundary, ClusterTable, Connectivity, Error, Labels, Result, SiteValue};
use ndarray::ArrayView2;

/// The one message for a GPU asked of a build without one.
const NO_CUDA: &str = "clusterlab was built without the `cuda` feature";

/// No value of this type exists.
#[derive(Clone, Copy)]
enum Never {}

/// A GPU that opened: never, in this build.
#[derive(Clone)]
pub(crate) struct CudaDevice(Never);

impl CudaDevice {
    pub(crate) fn open(_ordinal: usize) -> Result<CudaDevice> {
        Err(Error::CudaUnavailable(NO_CUDA.into()))
    }
    pub(crate) fn name(&self) -> String {
        match self.0 {}
    }
    pub(crate) fn label_backend(&self) -> Result<Box<dyn LabelBackend + Send>> {
        match self.0 {}
    }
}

/// The GPU cluster analyzer: never, in this build.
pub(crate) struct CudaAnalyzer(Never);

impl CudaAnalyzer {
    pub(crate) fn on(
        device: &CudaDevice,
        _connectivity: Connectivity,
        _boundary: Boundary,
    ) -> Result<Self> {
        match device.0 {}
    }
    pub(crate) fn analyze_labeled<T: SiteValue>(
        &mut self,
        _: ArrayView2<'_, T>,
    ) -> Result<(ClusterTable, Labels)> {
        match self.0 {}
    }
    pub(crate) fn analyze_reusing<T: SiteValue>(
        &mut self,
        _: ArrayView2<'_, T>,
        _: Option<&mut ClusterTable>,
    ) -> Result<ClusterTable> {
        match self.0 {}
    }
    pub(crate) fn analyze_all<T: SiteValue>(
        &mut self,
        _: ArrayView2<'_, T>,
    ) -> Result<ClusterTable> {
        match self.0 {}
    }
    pub(crate) fn analyze_all_labeled<T: SiteValue>(
        &mut self,
        _: ArrayView2<'_, T>,
    ) -> Result<(ClusterTable, Labels)> {
        match self.0 {}
    }
    pub(crate) fn release_all(&mut self) {
        match self.0 {}
    }
}

/// The GPU region grower: never, in this build.
pub(crate) struct CudaRegionGrower(Never);

impl CudaRegionGrower {
    pub(crate) fn on(device: &CudaDevice, _criterion: Criterion) -> Result<Self> {
        match device.0 {}
    }
    pub(crate) fn name(&self) -> String {
        match self.0 {}
    }
    pub(crate) fn grow_host<T: Sample>(&mut self, _: &[T], _: &Plan, _: &mut [u8]) -> Result<()> {
        match self.0 {}
    }
}

/// Fixed-p batches on the GPU: never, in this build.
pub(crate) struct PercolationBatch(Never);

impl PercolationBatch {
    pub(crate) fn on(device: &CudaDevice) -> Result<Self> {
        match device.0 {}
    }
    pub(crate) fn run(&mut self, _: &BatchSpec, _: Option<&[u8]>) -> Result<BatchStats> {
        match self.0 {}
    }
}

/// The device-resident Swendsen–Wang chain: never, in this build.
pub(crate) struct CudaSwendsenWang(Never);

impl CudaSwendsenWang {
    pub(crate) fn on(device: &CudaDevice, _params: SwParams) -> Result<Self> {
        match device.0 {}
    }
    pub(crate) fn upload_spins(&mut self, _: &[u8]) -> Result<()> {
        match self.0 {}
    }
    pub(crate) fn download_spins(&mut self, _: &mut [u8]) -> Result<()> {
        match self.0 {}
    }
    pub(crate) fn tallies_full(&self) -> bool {
        match self.0 {}
    }
    pub(crate) fn queue_sweep(&mut self, _sweep: u64, _measure: bool) -> Result<()> {
        match self.0 {}
    }
    pub(crate) fn take_tallies(&mut self) -> Result<Vec<SwTally>> {
        match self.0 {}
    }
}
