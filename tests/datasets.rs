//! The reference datasets: every file listed in `datasets/expected.csv` labels to the count and
//! largest cluster size written there (answers checked independently by
//! `datasets/check_scipy.py`).

use clusterlab::{Algorithm, Boundary, Connectivity, Labeler, Parallelism, SiteValue};
use ndarray::{Array2, ArrayView2};
use ndarray_npy::read_npy;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets")
}

/// A row of `expected.csv`.
#[derive(Debug)]
struct Row {
    file: String,
    connectivity: Connectivity,
    boundary: Boundary,
    segments: bool,
    count: usize,
    largest: u64,
}

fn rows() -> Vec<Row> {
    let text = std::fs::read_to_string(dir().join("expected.csv")).expect("datasets/expected.csv");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("file,connectivity,boundary,segments,count,largest")
    );
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), 6, "bad row {l:?}");
            Row {
                file: f[0].to_string(),
                connectivity: f[1].parse().unwrap(),
                boundary: f[2].parse().unwrap(),
                segments: match f[3] {
                    "0" => false,
                    "1" => true,
                    s => panic!("bad segments flag {s:?}"),
                },
                count: f[4].parse().unwrap(),
                largest: f[5].parse().unwrap(),
            }
        })
        .collect()
}

/// A lattice file of any supported site type.
enum Lattice {
    U8(Array2<u8>),
    U16(Array2<u16>),
    U32(Array2<u32>),
}

fn load(file: &str) -> Lattice {
    let path = dir().join(file);
    if let Ok(a) = read_npy(&path) {
        return Lattice::U8(a);
    }
    if let Ok(a) = read_npy(&path) {
        return Lattice::U16(a);
    }
    Lattice::U32(read_npy(&path).unwrap_or_else(|e| panic!("{file}: {e}")))
}

const RUNS: [(Algorithm, Parallelism); 5] = [
    (Algorithm::Auto, Parallelism::Rayon),
    (Algorithm::Bfs, Parallelism::Sequential),
    (Algorithm::HoshenKopelman, Parallelism::Sequential),
    (Algorithm::Strips, Parallelism::Sequential),
    (Algorithm::Strips, Parallelism::Threads(3)),
];

/// `(count, largest)` from every run, checked to agree.
fn answer<T: SiteValue>(lattice: ArrayView2<'_, T>, row: &Row) -> (usize, u64) {
    let mut first = None;
    for (alg, par) in RUNS {
        let l = Labeler::new(row.connectivity, row.boundary)
            .segments(row.segments)
            .algorithm(alg)
            .parallelism(par)
            .label(lattice)
            .unwrap();
        let got = (l.count(), l.sizes()[1..].iter().copied().max().unwrap_or(0));
        match first {
            None => first = Some(got),
            Some(f) => assert_eq!(got, f, "{row:?}: {alg:?} {par:?} disagrees"),
        }
    }
    first.unwrap()
}

#[test]
fn datasets_match_expected_csv() {
    let rows = rows();
    assert!(
        rows.len() >= 28,
        "expected.csv has only {} rows",
        rows.len()
    );
    for row in &rows {
        let got = match load(&row.file) {
            Lattice::U8(a) => answer(a.view(), row),
            Lattice::U16(a) => answer(a.view(), row),
            Lattice::U32(a) => answer(a.view(), row),
        };
        assert_eq!(got, (row.count, row.largest), "{row:?}");
    }
}

#[test]
fn every_dataset_has_open_and_periodic_rows_for_both_connectivities() {
    let rows = rows();
    let listed: BTreeSet<String> = rows.iter().map(|r| r.file.clone()).collect();
    let on_disk: BTreeSet<String> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".npy"))
        .collect();
    assert_eq!(listed, on_disk, "expected.csv and the .npy files differ");
    for file in &listed {
        for c in [Connectivity::Four, Connectivity::Eight] {
            for b in [Boundary::Open, Boundary::Periodic] {
                assert!(
                    rows.iter()
                        .any(|r| &r.file == file && r.connectivity == c && r.boundary == b),
                    "{file}: no row for {c:?} {b:?}"
                );
            }
        }
    }
    // The torus file only joins across the wrapping edges: fewer clusters on the torus.
    let wrap = |b: Boundary| {
        rows.iter()
            .find(|r| r.file == "torus_wrap_32.npy" && r.boundary == b && !r.segments)
            .map(|r| r.count)
            .unwrap()
    };
    assert!(wrap(Boundary::Periodic) < wrap(Boundary::Open));
}

/// Compressed HDF5 as h5py writes simulation output (`datasets/make_filtered_h5.py`): every
/// filter built into clusterlab reads back the lattice exactly, with nothing installed beside.
#[test]
fn compressed_hdf5_files_read_as_written() {
    let want: Array2<u8> = read_npy(dir().join("percolation_128_pc.npy")).unwrap();
    for name in [
        "gzip",
        "shuffle_gzip",
        "fletcher32",
        "lzf",
        "blosc_lz4",
        "blosc_zstd",
    ] {
        let path = dir().join(format!("filtered_{name}.h5"));
        match clusterlab::io::read_lattice(&path, None) {
            Ok(clusterlab::io::Lattice::U8(got)) => assert_eq!(got, want, "{name}"),
            other => panic!("{name}: {other:?}"),
        }
    }
}

/// A filter that is not built in (bzip2, id 307) is a typed error that names it and says what
/// to do, not the HDF5 library's message about a plugin folder.
#[test]
fn a_missing_hdf5_filter_is_named() {
    let path = dir().join("filtered_bzip2.h5");
    let e = clusterlab::io::read_lattice(&path, None).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, clusterlab::Error::BadInput { .. }), "{e}");
    assert!(text.contains("bzip2") && text.contains("307"), "{text}");
    assert!(
        text.contains("h5repack") && !text.contains("plugin"),
        "{text}"
    );
}
