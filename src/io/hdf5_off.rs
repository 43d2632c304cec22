//! Stands in for the HDF5 reader and writers when the crate is built without the `hdf5`
//! feature: `.h5` paths are a typed error that says how to get them.

use super::{LabelMeta, WriteOptions};
use crate::io::Lattice;
use crate::{ClusterTable, Error, Labels, Result};
use std::path::Path;

fn off(path: &Path) -> Error {
    Error::InvalidArgument(format!(
        "{}: HDF5 files need clusterlab's `hdf5` feature (on by default), which this build lacks",
        path.display()
    ))
}

pub(crate) fn read_lattice(path: &Path, _dataset: &str) -> Result<Lattice> {
    Err(off(path))
}

pub(crate) fn write_labels<L: crate::LabelValue>(
    path: &Path,
    _labels: &Labels<L>,
    _meta: &LabelMeta,
    _lattice: Option<&Lattice>,
    _options: &WriteOptions,
) -> Result<()> {
    Err(off(path))
}

pub(crate) fn write_lattice(
    path: &Path,
    _lattice: &Lattice,
    _options: &WriteOptions,
) -> Result<()> {
    Err(off(path))
}

pub(crate) fn write_table(
    path: &Path,
    _table: &ClusterTable,
    _labels: Option<&Labels>,
    _lattice: Option<&Lattice>,
    _options: &WriteOptions,
) -> Result<()> {
    Err(off(path))
}
