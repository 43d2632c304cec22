//! Study files (HDF5). Every checkpoint rewrites the whole file into a temporary file beside it
//! and renames it over the old one ([`write_atomically`]): a study killed at any moment (SIGKILL,
//! Ctrl-C, a full disk) leaves either the previous checkpoint or the new one, never a torn file —
//! HDF5 writes in place are not crash-safe. The per-sample records are chunked, extendible
//! datasets, so other tools can append to them too.
//!
//! Layout (h5py reads every dataset as a plain array):
//! - root attributes: `kind` = `"percolation-study"`, `model` (`site`/`bond`), `connectivity`
//!   (4/8), `boundary`, `widths`, `heights` (per size), `samples` (asked per size), `seed`,
//!   `generator`, `method`, `backend`, `clusterlab_version`, `command`; dataset `p` (the grid).
//! - per size a group `L{width}x{height}` with attributes `width`, `height`, `units` (`N`),
//!   `sites`, `samples` (done), and
//!   - `records/seed`, `records/index` (`u64`, one per sample: its Philox stream),
//!     `records/first_h`, `first_v`, `first_b`, `first_e` (`u64`: the number of occupied units
//!     at which the event first happened; 2⁶⁴ − 1 = never);
//!   - `micro/<name>` for `largest`, `largest_sq`, `percolating`, `percolating_sq`, `finite_s2`,
//!     `finite_s2_sq`: exact sums over samples per `n = 0..=N`, stored as `(N + 1, 2)` `u64`
//!     (low word, high word of a 128-bit integer: `a[:, 0] + a[:, 1] * 2**64`);
//!   - `ns/n` (`u64`, the `n` of each histogram) and `ns/counts` (`len(n) × (sites + 1)`,
//!     clusters of size `s` that do not percolate, summed over samples);
//!   - with results: `canonical/<curve>` and `canonical/<curve>_stderr` on the grid `p` for
//!     `R_h R_v R_e R_b R_1 R_hv P_inf largest S`, and attributes `<R>_at_pc`,
//!     `<R>_at_pc_stderr`, `p_cross`, `p_cross_stderr`, `tau`, `tau_stderr`, `tau_s_min`,
//!     `tau_s_max` of the group `estimates`.
//! - fixed-`p` studies (`method` = `"fixed-p"`) hold instead, per size group, attributes `width`,
//!   `height`, `sites`, `samples` (done at every grid point: sample indices `0..samples`), and
//!   `fixed/n_h`, `n_v`, `n_b`, `n_e`, `n_hv` (`u64` per grid point: samples where some cluster
//!   percolates along x, y, one along both, either, and x and y), `fixed/<sum>` for
//!   `percolating`, `percolating_sq`, `largest`, `largest_sq`, `finite_s2`, `finite_s2_sq`,
//!   `occupied` (`(len(p), 2)` `u64`: low and high word of a 128-bit sum over samples), and
//!   `ns/counts` (`sites + 1`) at the grid point `ns/p_index` (attribute) nearest the reference
//!   `p_c`; the `canonical/` curves and `estimates` as below.
//! - with results: group `estimates` with attributes `p_c`, `p_c_stderr`, `a`, `a_stderr`,
//!   `chi2`, `dof`, `samples`, `reference_pc`.

use super::canonical::Wrapping;
use super::fixed::{FixedSums, COUNT_NAMES, MOMENT_NAMES};
use super::model::{Geometry, Model};
use super::study::{Method, Study, StudyConfig, StudyResults};
use super::sums::{MicroSums, SampleRecord};
use crate::io::hdf5_fd;
use crate::io::write_atomically;
use crate::{Boundary, Connectivity, Error, Result};
use ::hdf5::types::VarLenUnicode;
use ::hdf5::{Dataset, File, Group, Location};
use ndarray::Array2;
use std::path::Path;

/// The `kind` attribute of study files.
pub const KIND: &str = "percolation-study";

/// The generator named in study files.
const GENERATOR: &str =
    "Philox4x32-10 (rand_philox), key splitmix64(seed), stream = sample index; Fisher-Yates with Lemire bounded draws";

fn h5err(path: &Path) -> impl Fn(::hdf5::Error) -> Error + '_ {
    move |e| Error::Hdf5 {
        path: path.to_owned(),
        message: e
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    }
}

fn bad(path: &Path, reason: impl Into<String>) -> Error {
    Error::BadInput {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

fn group_name(g: &Geometry) -> String {
    format!("L{}x{}", g.width, g.height)
}

fn text(s: &str) -> ::hdf5::Result<VarLenUnicode> {
    s.parse().map_err(|e| ::hdf5::Error::from(format!("{e}")))
}

fn attr_str(loc: &Location, name: &str, value: &str) -> ::hdf5::Result<()> {
    loc.new_attr::<VarLenUnicode>()
        .create(name)?
        .write_scalar(&text(value)?)
}

fn attr_u64(loc: &Location, name: &str, value: u64) -> ::hdf5::Result<()> {
    loc.new_attr::<u64>().create(name)?.write_scalar(&value)
}

fn attr_f64(loc: &Location, name: &str, value: f64) -> ::hdf5::Result<()> {
    loc.new_attr::<f64>().create(name)?.write_scalar(&value)
}

fn attr_u64s(loc: &Location, name: &str, values: &[u64]) -> ::hdf5::Result<()> {
    loc.new_attr_builder().with_data(values).create(name)?;
    Ok(())
}

/// A chunked, extendible 1-D dataset holding `data`.
fn extendible(g: &Group, name: &str, data: &[u64]) -> ::hdf5::Result<Dataset> {
    let ds = g.new_dataset::<u64>().chunk(4096).shape(0..).create(name)?;
    ds.resize(data.len())?;
    if !data.is_empty() {
        ds.write(data)?;
    }
    Ok(ds)
}

fn write_sums(g: &Group, sums: &MicroSums) -> ::hdf5::Result<()> {
    attr_u64(g, "width", sums.geometry.width as u64)?;
    attr_u64(g, "height", sums.geometry.height as u64)?;
    attr_u64(g, "units", sums.units() as u64)?;
    attr_u64(g, "sites", sums.geometry.sites() as u64)?;
    attr_u64(g, "samples", sums.samples)?;
    let rec = g.create_group("records")?;
    let col =
        |f: &dyn Fn(&SampleRecord) -> u64| -> Vec<u64> { sums.records.iter().map(f).collect() };
    extendible(&rec, "seed", &col(&|r| r.seed))?;
    extendible(&rec, "index", &col(&|r| r.index))?;
    for (k, name) in super::sums::EVENT_NAMES.iter().enumerate() {
        extendible(&rec, &format!("first_{name}"), &col(&|r| r.first[k]))?;
    }
    let micro = g.create_group("micro")?;
    for (name, data) in sums.columns() {
        let words: Vec<u64> = data
            .iter()
            .flat_map(|&v| [v as u64, (v >> 64) as u64])
            .collect();
        let a = Array2::from_shape_vec((data.len(), 2), words).expect("two words per n");
        micro
            .new_dataset_builder()
            .chunk((65536.min(data.len()), 2))
            .with_data(&a)
            .create(name)?;
    }
    let ns = g.create_group("ns")?;
    ns.new_dataset_builder()
        .with_data(&sums.ns_at[..])
        .create("n")?;
    let rows = sums.ns_counts.len();
    let width = sums.geometry.sites() + 1;
    let flat: Vec<u64> = sums.ns_counts.iter().flatten().copied().collect();
    let counts = Array2::from_shape_vec((rows, width), flat).expect("rows of sites + 1");
    ns.new_dataset_builder()
        .with_data(&counts)
        .create("counts")?;
    Ok(())
}

/// A fixed-`p` size: `samples`, `fixed/<count>` (`u64` per grid point), `fixed/<moment>`
/// (`(len(p), 2)` words of a 128-bit sum), `ns/p_index` and `ns/counts` (`sites + 1`).
fn write_fixed(g: &Group, f: &FixedSums) -> ::hdf5::Result<()> {
    attr_u64(g, "width", f.geometry.width as u64)?;
    attr_u64(g, "height", f.geometry.height as u64)?;
    attr_u64(g, "sites", f.geometry.sites() as u64)?;
    attr_u64(g, "samples", f.samples)?;
    let fx = g.create_group("fixed")?;
    for (k, name) in COUNT_NAMES.iter().enumerate() {
        let v: Vec<u64> = f.counts.iter().map(|c| c[k]).collect();
        fx.new_dataset_builder().with_data(&v[..]).create(*name)?;
    }
    for (k, name) in MOMENT_NAMES.iter().enumerate() {
        let words: Vec<u64> = f
            .moments
            .iter()
            .flat_map(|m| [m[k] as u64, (m[k] >> 64) as u64])
            .collect();
        let a = Array2::from_shape_vec((f.moments.len(), 2), words).expect("two words per p");
        fx.new_dataset_builder().with_data(&a).create(*name)?;
    }
    let ns = g.create_group("ns")?;
    attr_u64(&ns, "p_index", f.ns_at as u64)?;
    ns.new_dataset_builder()
        .with_data(&f.ns[..])
        .create("counts")?;
    Ok(())
}

fn read_fixed(
    path: &Path,
    g: &Group,
    geometry: Geometry,
    config: &StudyConfig,
) -> Result<FixedSums> {
    let e = h5err(path);
    let mut f = FixedSums::new(geometry, &config.p_grid, config.model.reference_pc());
    f.samples = read_u64(g, "samples").map_err(&e)?;
    let np = config.p_grid.len();
    for (k, name) in COUNT_NAMES.iter().enumerate() {
        let v: Vec<u64> = g
            .dataset(&format!("fixed/{name}"))
            .and_then(|d| d.read_raw())
            .map_err(&e)?;
        if v.len() != np {
            return Err(bad(path, format!("fixed/{name} does not match the p grid")));
        }
        for (c, x) in f.counts.iter_mut().zip(v) {
            c[k] = x;
        }
    }
    for (k, name) in MOMENT_NAMES.iter().enumerate() {
        let a: Array2<u64> = g
            .dataset(&format!("fixed/{name}"))
            .and_then(|d| d.read_2d())
            .map_err(&e)?;
        if a.dim() != (np, 2) {
            return Err(bad(path, format!("fixed/{name} does not match the p grid")));
        }
        for (m, row) in f.moments.iter_mut().zip(a.rows()) {
            m[k] = u128::from(row[0]) | (u128::from(row[1]) << 64);
        }
    }
    let ns = g.group("ns").map_err(&e)?;
    f.ns_at = read_u64(&ns, "p_index").map_err(&e)? as usize;
    f.ns = ns
        .dataset("counts")
        .and_then(|d| d.read_raw())
        .map_err(&e)?;
    if f.ns_at >= np || f.ns.len() != geometry.sites() + 1 {
        return Err(bad(path, "ns does not match the grid and the lattice"));
    }
    Ok(f)
}

fn write_results(
    file: &File,
    results: &StudyResults,
    geometries: &[Geometry],
) -> ::hdf5::Result<()> {
    for (r, geometry) in results.sizes.iter().zip(geometries) {
        let g = file.group(&group_name(geometry))?;
        let c = g.create_group("canonical")?;
        let curve = |name: &str, est: &[super::Estimate]| -> ::hdf5::Result<()> {
            let v: Vec<f64> = est.iter().map(|e| e.value).collect();
            let e: Vec<f64> = est.iter().map(|e| e.stderr).collect();
            c.new_dataset_builder().with_data(&v[..]).create(name)?;
            c.new_dataset_builder()
                .with_data(&e[..])
                .create(format!("{name}_stderr").as_str())?;
            Ok(())
        };
        for (k, kind) in Wrapping::ALL.iter().enumerate() {
            curve(kind.name(), &r.curves.wrapping[k])?;
        }
        curve("P_inf", &r.curves.p_infinity)?;
        curve("largest", &r.curves.largest)?;
        curve("S", &r.curves.mean_size)?;
        let e = g.create_group("estimates")?;
        for (k, kind) in Wrapping::ALL.iter().enumerate() {
            attr_f64(&e, &format!("{}_at_pc", kind.name()), r.at_pc[k].value)?;
            attr_f64(
                &e,
                &format!("{}_at_pc_stderr", kind.name()),
                r.at_pc[k].stderr,
            )?;
        }
        if let Some(x) = r.crossing {
            attr_f64(&e, "p_cross", x.p.value)?;
            attr_f64(&e, "p_cross_stderr", x.p.stderr)?;
        }
        if let Some(t) = &r.tau {
            attr_f64(&e, "tau", t.tau.value)?;
            attr_f64(&e, "tau_stderr", t.tau.stderr)?;
            attr_u64(&e, "tau_s_min", t.range.0)?;
            attr_u64(&e, "tau_s_max", t.range.1)?;
        }
    }
    let e = file.create_group("estimates")?;
    attr_u64(&e, "samples", results.samples)?;
    attr_f64(&e, "reference_pc", results.reference_pc)?;
    if let Some(fit) = &results.p_c {
        attr_f64(&e, "p_c", fit.intercept.value)?;
        attr_f64(&e, "p_c_stderr", fit.intercept.stderr)?;
        attr_f64(&e, "a", fit.slope.value)?;
        attr_f64(&e, "a_stderr", fit.slope.stderr)?;
        attr_f64(&e, "chi2", fit.chi2)?;
        attr_u64(&e, "dof", fit.dof as u64)?;
    }
    Ok(())
}

fn write_file(path: &Path, study: &Study, results: Option<&StudyResults>) -> ::hdf5::Result<()> {
    let c = &study.config;
    let file = hdf5_fd::create(path)?;
    attr_str(&file, "kind", KIND)?;
    attr_str(&file, "model", c.model.name())?;
    attr_u64(
        &file,
        "connectivity",
        c.model.connectivity().neighbours() as u64,
    )?;
    attr_str(&file, "boundary", c.boundary.name())?;
    let widths: Vec<u64> = c.sizes.iter().map(|s| s.0 as u64).collect();
    let heights: Vec<u64> = c.sizes.iter().map(|s| s.1 as u64).collect();
    attr_u64s(&file, "widths", &widths)?;
    attr_u64s(&file, "heights", &heights)?;
    attr_u64(&file, "samples", c.samples)?;
    attr_u64(&file, "seed", c.seed)?;
    attr_str(&file, "generator", GENERATOR)?;
    attr_str(&file, "method", c.method.name())?;
    attr_str(&file, "backend", &study.backend)?;
    attr_str(&file, "clusterlab_version", env!("CARGO_PKG_VERSION"))?;
    attr_str(&file, "command", &c.command)?;
    file.new_dataset_builder()
        .with_data(&c.p_grid[..])
        .create("p")?;
    for sums in &study.sums {
        let g = file.create_group(&group_name(&sums.geometry))?;
        write_sums(&g, sums)?;
    }
    for f in &study.fixed {
        let g = file.create_group(&group_name(&f.geometry))?;
        write_fixed(&g, f)?;
    }
    if let Some(r) = results {
        let geometries: Vec<Geometry> = match c.method {
            Method::NewmanZiff => study.sums.iter().map(|s| s.geometry).collect(),
            Method::FixedP => study.fixed.iter().map(|f| f.geometry).collect(),
        };
        write_results(&file, r, &geometries)?;
    }
    file.flush()?;
    file.close()
}

/// Writes `study` to `path` atomically (temporary file in the same folder, then rename), with the
/// estimates when `results` is given.
///
/// # Errors
/// [`Error::Hdf5`] or [`Error::Io`] when the file cannot be written; `path` is then unchanged.
pub fn write_study(path: &Path, study: &Study, results: Option<&StudyResults>) -> Result<()> {
    write_atomically(path, |tmp| {
        write_file(tmp, study, results).map_err(h5err(path))
    })
}

fn read_str(loc: &Location, name: &str) -> ::hdf5::Result<String> {
    Ok(loc
        .attr(name)?
        .read_scalar::<VarLenUnicode>()?
        .as_str()
        .to_owned())
}

fn read_u64(loc: &Location, name: &str) -> ::hdf5::Result<u64> {
    loc.attr(name)?.read_scalar::<u64>()
}

fn read_sums(path: &Path, g: &Group, geometry: Geometry) -> Result<MicroSums> {
    let e = h5err(path);
    let ns_at: Vec<u64> = g.dataset("ns/n").and_then(|d| d.read_raw()).map_err(&e)?;
    let mut sums = MicroSums::new(geometry, &ns_at)?;
    sums.samples = read_u64(g, "samples").map_err(&e)?;
    let n = sums.units() + 1;
    for (k, column) in sums.columns_mut().into_iter().enumerate() {
        let name = [
            "largest",
            "largest_sq",
            "percolating",
            "percolating_sq",
            "finite_s2",
            "finite_s2_sq",
        ][k];
        let a: Array2<u64> = g
            .dataset(&format!("micro/{name}"))
            .and_then(|d| d.read_2d())
            .map_err(&e)?;
        if a.dim() != (n, 2) {
            return Err(bad(
                path,
                format!("micro/{name} has shape {:?}, not ({n}, 2)", a.dim()),
            ));
        }
        for (v, row) in column.iter_mut().zip(a.rows()) {
            *v = u128::from(row[0]) | (u128::from(row[1]) << 64);
        }
    }
    let counts: Array2<u64> = g
        .dataset("ns/counts")
        .and_then(|d| d.read_2d())
        .map_err(&e)?;
    if counts.dim() != (ns_at.len(), geometry.sites() + 1) {
        return Err(bad(path, "ns/counts does not match ns/n and the lattice"));
    }
    for (row, out) in counts.rows().into_iter().zip(&mut sums.ns_counts) {
        out.copy_from_slice(&row.to_vec());
    }
    let col = |name: &str| -> Result<Vec<u64>> {
        g.dataset(&format!("records/{name}"))
            .and_then(|d| d.read_raw())
            .map_err(&e)
    };
    let seeds = col("seed")?;
    let index = col("index")?;
    let firsts = [
        col("first_h")?,
        col("first_v")?,
        col("first_b")?,
        col("first_e")?,
    ];
    let m = seeds.len();
    if index.len() != m || firsts.iter().any(|f| f.len() != m) || m as u64 != sums.samples {
        return Err(bad(
            path,
            "the sample records do not match the sample count",
        ));
    }
    sums.records = (0..m)
        .map(|i| SampleRecord {
            seed: seeds[i],
            index: index[i],
            first: [firsts[0][i], firsts[1][i], firsts[2][i], firsts[3][i]],
        })
        .collect();
    Ok(sums)
}

/// Reads a study file back (settings and sums; the estimates are recomputed from the sums).
///
/// # Errors
/// [`Error::Io`] when the file cannot be opened, [`Error::BadInput`] when it is not a
/// percolation study or is inconsistent, [`Error::Hdf5`] on a read error.
pub fn read_study(path: &Path) -> Result<Study> {
    if !path.exists() {
        return Err(Error::Io {
            path: path.to_owned(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
        });
    }
    let e = h5err(path);
    let file = hdf5_fd::open(path).map_err(&e)?;
    let kind = read_str(&file, "kind").unwrap_or_default();
    if kind != KIND {
        return Err(bad(path, format!("not a {KIND} file (kind = {kind:?})")));
    }
    let model_name = read_str(&file, "model").map_err(&e)?;
    let conn = match read_u64(&file, "connectivity").map_err(&e)? {
        4 => Connectivity::Four,
        8 => Connectivity::Eight,
        c => return Err(bad(path, format!("connectivity {c}"))),
    };
    let model = Model::from_parts(&model_name, conn).map_err(|x| bad(path, x.to_string()))?;
    let boundary: Boundary = read_str(&file, "boundary")
        .map_err(&e)?
        .parse()
        .map_err(|x: Error| bad(path, x.to_string()))?;
    let widths: Vec<u64> = file.attr("widths").and_then(|a| a.read_raw()).map_err(&e)?;
    let heights: Vec<u64> = file
        .attr("heights")
        .and_then(|a| a.read_raw())
        .map_err(&e)?;
    if widths.len() != heights.len() {
        return Err(bad(path, "widths and heights differ in length"));
    }
    let config = StudyConfig {
        model,
        boundary,
        sizes: widths
            .iter()
            .zip(&heights)
            .map(|(&w, &h)| (w as usize, h as usize))
            .collect(),
        samples: read_u64(&file, "samples").map_err(&e)?,
        seed: read_u64(&file, "seed").map_err(&e)?,
        p_grid: file.dataset("p").and_then(|d| d.read_raw()).map_err(&e)?,
        command: read_str(&file, "command").unwrap_or_default(),
        method: read_str(&file, "method")
            .unwrap_or_else(|_| "newman-ziff".into())
            .parse()
            .map_err(|x: Error| bad(path, x.to_string()))?,
    };
    config.check().map_err(|x| bad(path, x.to_string()))?;
    let (mut sums, mut fixed) = (Vec::new(), Vec::new());
    for k in 0..config.sizes.len() {
        let g = config.geometry(k)?;
        let group = file.group(&group_name(&g)).map_err(&e)?;
        match config.method {
            Method::NewmanZiff => sums.push(read_sums(path, &group, g)?),
            Method::FixedP => fixed.push(read_fixed(path, &group, g, &config)?),
        }
    }
    let backend = read_str(&file, "backend").unwrap_or_else(|_| "cpu".into());
    Ok(Study {
        config,
        sums,
        fixed,
        backend,
    })
}

/// Merges studies `a` and `b` (same method, model, boundary and sizes; disjoint samples:
/// different seeds, or for Newman–Ziff disjoint ranges of one seed's stream) into `output`, with
/// the estimates. The settings (grid, seed, command) are `a`'s; Newman–Ziff records keep each
/// sample's seed and index. Fixed-p studies must have distinct seeds and the same p grid.
///
/// # Errors
/// As [`read_study`] and [`write_study`]; [`Error::InvalidArgument`] when the studies differ in
/// method, model, boundary, sizes or (fixed-p) grid, or share a sample (fixed-p: a seed).
pub fn merge_files(a: &Path, b: &Path, output: &Path) -> Result<Study> {
    let mut sa = read_study(a)?;
    let sb = read_study(b)?;
    let (ca, cb) = (&sa.config, &sb.config);
    if ca.method != cb.method {
        return Err(Error::InvalidArgument(format!(
            "cannot merge {} ({}) with {} ({}): the methods differ",
            a.display(),
            ca.method,
            b.display(),
            cb.method
        )));
    }
    if ca.method == Method::FixedP {
        // Fixed-p sums keep no per-sample records: distinct seeds make the streams disjoint.
        // The merged study keeps a's seed, so a resumed run continues a's stream past every
        // index either study used.
        if ca.seed == cb.seed {
            return Err(Error::InvalidArgument(format!(
                "{} and {} both use seed {}: their samples overlap",
                a.display(),
                b.display(),
                ca.seed
            )));
        }
        if ca.p_grid != cb.p_grid {
            return Err(Error::InvalidArgument(format!(
                "cannot merge {} with {}: their p grids differ",
                a.display(),
                b.display()
            )));
        }
    }
    if ca.model != cb.model || ca.boundary != cb.boundary || ca.sizes != cb.sizes {
        return Err(Error::InvalidArgument(format!(
            "cannot merge {} ({} {} {:?}) with {} ({} {} {:?}): model, boundary and sizes must agree",
            a.display(),
            ca.model,
            ca.boundary,
            ca.sizes,
            b.display(),
            cb.model,
            cb.boundary,
            cb.sizes
        )));
    }
    for (x, y) in sa.sums.iter_mut().zip(&sb.sums) {
        x.merge(y)?;
    }
    for (x, y) in sa.fixed.iter_mut().zip(&sb.fixed) {
        x.merge(y)?;
    }
    sa.config.samples = sa
        .sums
        .iter()
        .map(|s| s.samples)
        .chain(sa.fixed.iter().map(|f| f.samples))
        .max()
        .unwrap_or(0);
    let results = sa.results()?;
    write_study(output, &sa, Some(&results))?;
    Ok(sa)
}
