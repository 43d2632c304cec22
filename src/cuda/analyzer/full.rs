//! [`Measures::All`] tables on the GPU: the lattice's analysis with its label image, then the
//! complement's and the perimeter kernels ([`crate::cuda::perimeters`]), for occupancy lattices
//! with open boundaries. Periodic lattices keep the CPU's measuring passes (their filled areas
//! and hulls come from the region graph's articulation points, which has no GPU version yet).

use super::{CudaAnalyzer, Pending};
use crate::core::lattice::check_size;
use crate::cuda::family::SiteType;
use crate::cuda::perimeters::{DevicePerimeters, PerimRow};
use crate::measure::Measures;
use crate::{Boundary, ClusterTable, Error, Labels, Result, SiteValue};
use ndarray::{Array1, Array2, ArrayView2};
use rayon::prelude::*;

impl CudaAnalyzer {
    /// The [`Measures::All`] table of a host occupancy lattice (nonzero = occupied) with open
    /// boundaries, every column computed on the device; identical to the CPU's.
    ///
    /// Device memory: besides [`CudaAnalyzer::analyze`]'s, the label image (4 bytes per site),
    /// the complement's analysis (as much again, on byte sites), and 20 bytes per cluster or
    /// complement region.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an analyzer with periodic boundaries (use
    /// [`crate::Analyzer`], which measures them on the CPU), and as [`CudaAnalyzer::analyze`].
    pub fn analyze_all<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
    ) -> Result<ClusterTable> {
        self.all(lattice, false).map(|(table, _)| table)
    }

    /// [`CudaAnalyzer::analyze_all`] and the labels (`1..=n` in raster order, as the CPU's).
    ///
    /// # Errors
    /// As [`CudaAnalyzer::analyze_all`].
    pub fn analyze_all_labeled<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
    ) -> Result<(ClusterTable, Labels)> {
        let (table, labels) = self.all(lattice, true)?;
        Ok((table, labels.expect("asked for")))
    }

    /// Queues the [`Measures::All`] analysis of a `height × width` lattice already on this
    /// analyzer's device (row-major, open boundaries) and returns when the device has the last
    /// kernel (it waits once, for the piece counts); [`CudaAnalyzer::finish_all`] downloads
    /// and builds the table. Everything until then stays on the device, so that the caller can
    /// time the device work with events on [`CudaAnalyzer::stream`].
    ///
    /// # Errors
    /// As [`CudaAnalyzer::queue_table`] and [`CudaAnalyzer::analyze_all`].
    pub fn queue_all<T: SiteValue, I: cudarc::driver::DevicePtr<T>>(
        &mut self,
        input: &I,
        height: usize,
        width: usize,
    ) -> Result<()> {
        let ptr = self.device_input(input, height, width)?;
        self.queue_all_ptr::<T>(ptr, height, width, false)
    }

    /// With `labels`, the label image is left on the device for `all` to
    /// download; without, the perimeter kernels read the forest and no label pass runs.
    fn queue_all_ptr<T: SiteValue>(
        &mut self,
        input: u64,
        h: usize,
        w: usize,
        labels: bool,
    ) -> Result<()> {
        if self.dev.boundary != Boundary::Open {
            return Err(Error::InvalidArgument(
                "the GPU's perimeters and filled areas need open boundaries; \
                 clusterlab::Analyzer measures periodic lattices on the CPU"
                    .into(),
            ));
        }
        self.all_pending = false;
        // The perimeters read the label image (or, where no labels are wanted, the forest).
        self.dev.forest_labels = !labels;
        let queued = self.queue_ptr::<T>(input, h, w, Pending::Table { labels: true });
        let l_forest = self.dev.labels_are_forest();
        self.dev.forest_labels = false;
        queued?;
        if h * w > 0 {
            if self.perimeters.is_none() {
                self.perimeters = Some(DevicePerimeters::new(
                    self.stream().clone(),
                    self.dev.connectivity,
                )?);
            }
            let per = self.perimeters.as_mut().expect("made above");
            per.queue(&mut self.dev, SiteType::of::<T>(), input, (h, w), l_forest)?;
        }
        self.all_pending = true;
        Ok(())
    }

    /// Waits for [`CudaAnalyzer::queue_all`] and builds its table.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when no such analysis was queued, [`Error::Cuda`] when the
    /// kernels or the copies failed.
    pub fn finish_all(&mut self) -> Result<ClusterTable> {
        if !std::mem::take(&mut self.all_pending) {
            return Err(Error::InvalidArgument(
                "no Measures::All analysis was queued on this analyzer".into(),
            ));
        }
        let job = self
            .dev
            .job
            .ok_or_else(|| Error::InvalidArgument("nothing queued".into()))?;
        if job.sites() == 0 {
            self.pending = None;
            return Ok(ClusterTable::empty(
                (job.height, job.width),
                self.dev.connectivity,
                self.dev.boundary,
                false,
                Measures::All,
            ));
        }
        let per = self.perimeters.as_mut().expect("queued");
        per.queue_download()?;
        let table = self.finish_table()?;
        let per = self.perimeters.as_mut().expect("queued");
        let (rows, filled) = per.results()?;
        // Each column straight from the pinned rows, in parallel (fresh pages fault in on
        // every thread at once).
        let rows = &rows[1..];
        let column = |f: fn(&PerimRow) -> u64| -> Array1<u64> {
            Array1::from_vec(rows.par_iter().map(f).collect())
        };
        let (site, bond, hull) = (
            column(|r| u64::from(r.site)),
            column(|r| r.bond),
            column(|r| u64::from(r.hull)),
        );
        let filled = Array1::from_vec(filled[1..].par_iter().copied().collect());
        Ok(table.with_columns(site, bond, hull, filled))
    }

    /// Frees the complement's analysis and the perimeter buffers (after an
    /// [`Error::OutOfDeviceMemory`], so that other work fits).
    pub(crate) fn release_all(&mut self) {
        self.perimeters = None;
        self.all_pending = false;
        self.pending = None;
    }

    fn all<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        want_labels: bool,
    ) -> Result<(ClusterTable, Option<Labels>)> {
        let (h, w) = lattice.dim();
        check_size(h, w)?;
        if self.dev.boundary == Boundary::Open && h * w > 0 {
            self.upload(lattice, true)?;
        }
        let input = self.dev.input.ptr;
        self.queue_all_ptr::<T>(input, h, w, want_labels)?;
        let table = self.finish_all()?;
        let labels = if want_labels {
            let flat = if h * w == 0 {
                Vec::new()
            } else {
                self.dev.labels(h * w)?
            };
            let array = Array2::from_shape_vec((h, w), flat)
                .map_err(|e| Error::InvalidArgument(format!("label array: {e}")))?;
            Some(Labels {
                array,
                count: table.count(),
            })
        } else {
            None
        };
        Ok((table, labels))
    }
}
