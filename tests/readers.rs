//! The file readers under hostile input: arbitrary bytes, valid files with bytes flipped or cut
//! off, and headers that lie about the shape. Each must give a lattice or a typed error — never
//! a panic, a hang or an allocation the header alone asked for. (proptest, bounded case counts;
//! `PROPTEST_CASES` raises them for a longer hunt.)

use clusterlab::io::{read_lattice, write_lattice, Lattice};
use clusterlab::Error;
use ndarray::Array2;
use proptest::prelude::*;
use proptest::test_runner::Config;
use std::path::Path;
use std::time::Instant;

fn config(cases: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(cases);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// A typed error of the kinds a reader may give.
fn acceptable(r: &clusterlab::Result<Lattice>) -> bool {
    match r {
        Ok(l) => l.dim().0 * l.dim().1 <= 1 << 20,
        Err(
            Error::BadInput { .. }
            | Error::Io { .. }
            | Error::Hdf5 { .. }
            | Error::TooManySites { .. }
            | Error::InvalidArgument(_),
        ) => true,
        Err(_) => false,
    }
}

/// The bytes of a valid `.npy` (or `.h5`) file holding a small lattice.
fn valid_file(dir: &Path, ext: &str, h: usize, w: usize, wide: bool) -> Vec<u8> {
    let path = dir.join(format!("valid.{ext}"));
    let lattice = if wide {
        Lattice::U32(Array2::from_shape_fn((h, w), |(y, x)| {
            (y * 7 + x * 3) as u32 % 70000
        }))
    } else {
        Lattice::U8(Array2::from_shape_fn((h, w), |(y, x)| ((y + x) % 2) as u8))
    };
    write_lattice(&path, &lattice).unwrap();
    std::fs::read(&path).unwrap()
}

/// A `.npy` header (version 1.0) for `descr` and `shape`, padded as NumPy pads it.
fn npy_header(descr: &str, shape: &str) -> Vec<u8> {
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let mut len = 10 + dict.len() + 1;
    let pad = (64 - len % 64) % 64;
    len += pad;
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&((len - 10) as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend(std::iter::repeat_n(b' ', pad));
    out.push(b'\n');
    out
}

fn read_bytes(dir: &Path, ext: &str, bytes: &[u8]) -> clusterlab::Result<Lattice> {
    let path = dir.join(format!("fuzz.{ext}"));
    std::fs::write(&path, bytes).unwrap();
    read_lattice(&path, None)
}

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn arbitrary_bytes_are_refused(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let dir = tempfile::tempdir().unwrap();
        for ext in ["npy", "h5"] {
            let r = read_bytes(dir.path(), ext, &bytes);
            prop_assert!(acceptable(&r), "{ext}: {r:?}");
        }
        // Arbitrary bytes after a valid magic string.
        let mut npy = b"\x93NUMPY\x01\x00".to_vec();
        npy.extend_from_slice(&bytes);
        let r = read_bytes(dir.path(), "npy", &npy);
        prop_assert!(acceptable(&r), "{r:?}");
    }

    #[test]
    fn mutated_npy_files_give_a_lattice_or_an_error(
        h in 1usize..20, w in 1usize..20, wide in any::<bool>(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(), truncate in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = valid_file(dir.path(), "npy", h, w, wide);
        for (at, v) in &flips {
            let i = at.index(bytes.len());
            bytes[i] = *v;
        }
        if truncate {
            bytes.truncate(cut.index(bytes.len()));
        }
        let r = read_bytes(dir.path(), "npy", &bytes);
        prop_assert!(acceptable(&r), "{r:?}");
    }

    #[test]
    fn lying_npy_headers_are_refused_before_reading(
        h in 1usize..100_000, w in 1usize..100_000,
        descr in prop::sample::select(vec!["|u1", "<u2", "<u4", "<i8", "|b1", "<f4", "|O"]),
        data in 0usize..64,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = npy_header(descr, &format!("({h}, {w})"));
        bytes.extend(std::iter::repeat_n(1u8, data));
        let start = Instant::now();
        let r = read_bytes(dir.path(), "npy", &bytes);
        prop_assert!(acceptable(&r), "{r:?}");
        // Only a header that its data fills can give a lattice.
        if let Ok(l) = &r {
            prop_assert!(l.dim() == (h, w) && h * w <= data, "{:?}", l.dim());
        }
        prop_assert!(start.elapsed().as_secs_f64() < 1.0);
    }
}

proptest! {
    // The HDF5 library's own checks do the work here; fewer cases (each opens a file).
    #![proptest_config(config(32))]

    #[test]
    fn mutated_hdf5_files_give_a_lattice_or_an_error(
        h in 1usize..12, w in 1usize..12,
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        cut in any::<prop::sample::Index>(), truncate in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = valid_file(dir.path(), "h5", h, w, false);
        for (at, v) in &flips {
            let i = at.index(bytes.len());
            bytes[i] = *v;
        }
        if truncate {
            bytes.truncate(cut.index(bytes.len()));
        }
        let r = read_bytes(dir.path(), "h5", &bytes);
        prop_assert!(acceptable(&r), "{r:?}");
    }
}

/// The case of the hardening issue: a header claiming more sites than any labels number
/// (2^61, beyond `MAX_SITES_64`) is refused from the header, at once; one claiming 70000 × 70000
/// (4.9·10⁹ sites: u64 labels number it since issue 14) on a file that holds less is refused
/// at once too, by the file's length.
#[test]
fn oversized_headers_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.npy");
    let header = npy_header("|u1", "(2147483648, 1073741824)");
    std::fs::write(&path, &header).unwrap();
    let start = Instant::now();
    let e = read_lattice(&path, None).unwrap_err();
    let took = start.elapsed();
    assert!(
        matches!(e, Error::TooManySites { max, .. } if max == clusterlab::MAX_SITES_64),
        "{e}"
    );
    assert!(took.as_millis() < 100, "{took:?}");

    let path = dir.path().join("big.npy");
    let header = npy_header("|u1", "(70000, 70000)");
    let mut bytes = header.clone();
    bytes.extend(std::iter::repeat_n(0u8, 1 << 20));
    std::fs::write(&path, &bytes).unwrap();
    let start = Instant::now();
    let e = read_lattice(&path, None).unwrap_err();
    assert!(start.elapsed().as_millis() < 100);
    assert!(
        matches!(e, Error::BadInput { .. }) && e.to_string().contains("70000 × 70000"),
        "{e}"
    );

    // Within the label limit (65000² < 2^32 − 1) but 50.7 GB to read: refused from the header
    // where the machine has less memory (the 2-core development machine and CI have 24 GB).
    let path = dir.path().join("wide.npy");
    let header = npy_header("<u8", "(65000, 65000)");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len((header.len() + 8 * 65000 * 65000) as u64)
        .unwrap();
    drop(file);
    let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    std::io::Write::write_all(&mut f, &header).unwrap();
    drop(f);
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let line = m.lines().find(|l| l.starts_with("MemTotal:"))?.to_string();
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map(|kib| kib * 1024);
    if memory.is_some_and(|m| m < 8 * 65000 * 65000) {
        let start = Instant::now();
        let e = read_lattice(&path, None).unwrap_err();
        assert!(start.elapsed().as_millis() < 100);
        let text = e.to_string();
        assert!(matches!(e, Error::BadInput { .. }), "{e}");
        assert!(
            text.contains("50700000000 bytes") && text.contains("memory"),
            "{text}"
        );
    }
}

/// A small Monte Carlo run file (`clusterlab mc run`), for mutating.
fn run_file_bytes(dir: &Path) -> Vec<u8> {
    use clusterlab::mc::{run_to_file, Model, RunConfig, Update};
    let cfg = RunConfig {
        model: Model::ising(8, 8, 1.0).unwrap(),
        temperatures: vec![2.2, 2.4],
        update: Update::SwendsenWang,
        seed: 1,
        thermalize: 2,
        sweeps: 10,
        every: 1,
        checkpoint_every: 5,
        backend: clusterlab::Backend::Cpu,
        command: "fuzz".into(),
    };
    let path = dir.join("run.h5");
    run_to_file(&cfg, &path, false, true, &mut |_, _| {}).unwrap();
    std::fs::read(&path).unwrap()
}

/// A small percolation study file (`clusterlab percolation run`), for mutating.
fn study_file_bytes(dir: &Path) -> Vec<u8> {
    use clusterlab::percolation::{write_study, Model, Study, StudyConfig};
    let mut study = Study::new(StudyConfig {
        model: Model::Site(clusterlab::Connectivity::Four),
        boundary: clusterlab::Boundary::Periodic,
        sizes: vec![(8, 8)],
        samples: 8,
        seed: 1,
        p_grid: vec![0.55, 0.6],
        command: "fuzz".into(),
        method: Default::default(),
    })
    .unwrap();
    let options = clusterlab::Options::default().parallelism(clusterlab::Parallelism::Sequential);
    study
        .run(&options, std::time::Duration::ZERO, |_, _| Ok(()))
        .unwrap();
    let path = dir.join("study.h5");
    write_study(&path, &study, None).unwrap();
    std::fs::read(&path).unwrap()
}

/// `bytes` with `flips` applied and, when `truncate`, cut at `cut`.
fn mutate(
    mut bytes: Vec<u8>,
    flips: &[(prop::sample::Index, u8)],
    cut: prop::sample::Index,
    truncate: bool,
) -> Vec<u8> {
    for (at, v) in flips {
        let i = at.index(bytes.len());
        bytes[i] = *v;
    }
    if truncate {
        bytes.truncate(cut.index(bytes.len()));
    }
    bytes
}

/// Whether a study or run file reader's error is one of the typed ones it may give.
fn typed<T>(r: &clusterlab::Result<T>) -> bool {
    matches!(
        r,
        Ok(_)
            | Err(Error::BadInput { .. }
                | Error::Io { .. }
                | Error::Hdf5 { .. }
                | Error::InvalidArgument(_))
    )
}

proptest! {
    // Monte Carlo run files and percolation study files are HDF5 too: mutated or cut ones give
    // a run (study) or a typed error.
    #![proptest_config(config(24))]

    #[test]
    fn mutated_run_and_study_files_give_a_result_or_an_error(
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        cut in any::<prop::sample::Index>(), truncate in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fuzz.h5");
        let run = mutate(run_file_bytes(dir.path()), &flips, cut, truncate);
        std::fs::write(&path, &run).unwrap();
        let r = clusterlab::mc::read_run(&path);
        prop_assert!(typed(&r), "{:?}", r.err());
        let study = mutate(study_file_bytes(dir.path()), &flips, cut, truncate);
        std::fs::write(&path, &study).unwrap();
        let r = clusterlab::percolation::read_study(&path);
        prop_assert!(typed(&r), "{:?}", r.err());
    }
}

/// `.npy` lattices of every native type read back as written (u8, u16 and u32 are read in
/// parallel chunks, here over several 4 MiB chunks); a big-endian file and one with bytes after
/// its data take the general reader, which converts the first and refuses the second.
#[test]
fn npy_lattices_read_back_in_every_type() {
    use ndarray_npy::write_npy;
    let dir = tempfile::tempdir().unwrap();
    let (h, w) = (1500, 1700);
    let make = |m: u64| Array2::from_shape_fn((h, w), |(y, x)| (y * 31 + x * 7) as u64 % m);
    let p = dir.path().join("a.npy");
    write_npy(&p, &make(256).mapv(|v| v as u8)).unwrap();
    assert_eq!(
        read_lattice(&p, None).unwrap(),
        Lattice::U8(make(256).mapv(|v| v as u8))
    );
    write_npy(&p, &make(60000).mapv(|v| v as u16)).unwrap();
    assert_eq!(
        read_lattice(&p, None).unwrap(),
        Lattice::U16(make(60000).mapv(|v| v as u16))
    );
    write_npy(&p, &make(1 << 31).mapv(|v| v as u32 + 70000)).unwrap();
    assert_eq!(
        read_lattice(&p, None).unwrap(),
        Lattice::U32(make(1 << 31).mapv(|v| v as u32 + 70000))
    );
    // Big-endian uint16, 2 × 3.
    let mut bytes = npy_header(">u2", "(2, 3)");
    for v in [1u16, 2, 300, 0, 5, 6] {
        bytes.extend_from_slice(&v.to_be_bytes());
    }
    assert_eq!(
        read_bytes(dir.path(), "npy", &bytes).unwrap(),
        Lattice::U16(ndarray::array![[1, 2, 300], [0, 5, 6]])
    );
    // A byte after the data.
    let mut bytes = npy_header("|u1", "(2, 3)");
    bytes.extend_from_slice(&[1, 0, 1, 0, 1, 0, 9]);
    assert!(read_bytes(dir.path(), "npy", &bytes).is_err());
}
