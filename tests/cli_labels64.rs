//! `clusterlab label --label-dtype`: uint64 label files (.npy and .h5) forced on small lattices,
//! read back and compared with the library's u32 labels widened; the `label_dtype` JSON key;
//! uint64 label files read back as lattices; the clean refusals of --frames and --append.

use clusterlab::generate::percolation;
use clusterlab::{label, Boundary, Connectivity};
use ndarray::{Array2, Array3};
use ndarray_npy::{read_npy, write_npy};
use std::path::Path;
use std::process::{Command, Output};

/// Runs the CLI (HDF5 file locks off in the child, as in `tests/cli.rs`).
fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_clusterlab"))
        .args(args)
        .env("HDF5_USE_FILE_LOCKING", "FALSE")
        .output()
        .expect("run clusterlab")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn assert_ok(o: &Output) {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn json(o: &Output) -> serde_json::Value {
    assert_ok(o);
    serde_json::from_slice(&o.stdout).expect("one JSON document")
}

/// The run failed with one `error:` line naming `needle`, without a panic.
fn assert_refused(o: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "expected failure: {err}");
    assert!(
        err.starts_with("error: ") && !err.contains("panicked"),
        "{err}"
    );
    assert!(err.contains(needle), "{err:?} does not mention {needle:?}");
}

#[test]
fn uint64_npy_equals_the_u32_labels_widened() {
    let dir = tempfile::tempdir().unwrap();
    let lattice = percolation(71, 53, 0.6, 1, 9);
    let input = dir.path().join("lattice.npy");
    write_npy(&input, &lattice).unwrap();
    for (c, b, cs, bs) in [
        (Connectivity::Four, Boundary::Open, "4", "open"),
        (Connectivity::Eight, Boundary::Periodic, "8", "periodic"),
        (Connectivity::Four, Boundary::PeriodicY, "4", "periodic-y"),
    ] {
        let output = dir.path().join(format!("labels-{cs}-{bs}.npy"));
        let doc = json(&run(&[
            "label",
            s(&input),
            "-o",
            s(&output),
            "--connectivity",
            cs,
            "--boundary",
            bs,
            "--label-dtype",
            "uint64",
            "--json",
        ]));
        let want = label(lattice.view(), c, b).unwrap();
        let got: Array2<u64> = read_npy(&output).unwrap();
        assert_eq!(got, want.array().mapv(u64::from));
        assert_eq!(doc["label_dtype"], "uint64");
        assert_eq!(doc["clusters"].as_u64(), Some(want.count() as u64));
        // The file is a uint64 .npy (a u32 read fails on the dtype).
        assert!(read_npy::<_, Array2<u32>>(&output).is_err());

        // Read back as a lattice, its labels as segments are the same.
        let again = json(&run(&[
            "label",
            s(&output),
            "--segments",
            "--connectivity",
            cs,
            "--boundary",
            bs,
            "--json",
        ]));
        // Narrowed to the narrowest type that holds every label.
        let narrowest = if want.count() < 256 {
            "uint8"
        } else {
            "uint16"
        };
        assert_eq!(again["dtype"], narrowest);
        assert_eq!(again["clusters"].as_u64(), Some(want.count() as u64));
    }
    // auto and uint32 keep uint32 below MAX_SITES, and say so.
    for dtype in ["auto", "uint32"] {
        let output = dir.path().join(format!("{dtype}.npy"));
        let doc = json(&run(&[
            "label",
            s(&input),
            "-o",
            s(&output),
            "--label-dtype",
            dtype,
            "--json",
        ]));
        assert_eq!(doc["label_dtype"], "uint32");
        let got: Array2<u32> = read_npy(&output).unwrap();
        assert_eq!(
            &got,
            label(lattice.view(), Connectivity::Four, Boundary::Open)
                .unwrap()
                .array()
        );
    }
    let doc = json(&run(&["label", s(&input), "--json"]));
    assert_eq!(doc["label_dtype"], "uint32");
}

#[test]
fn uint64_h5_with_its_attributes() {
    let dir = tempfile::tempdir().unwrap();
    let lattice = percolation(40, 66, 0.5, 2, 4);
    let input = dir.path().join("lattice.npy");
    write_npy(&input, &lattice).unwrap();
    let output = dir.path().join("labels.h5");
    let o = run(&[
        "label",
        s(&input),
        "-o",
        s(&output),
        "--boundary",
        "periodic-x",
        "--label-dtype",
        "uint64",
    ]);
    assert_ok(&o);
    assert!(String::from_utf8_lossy(&o.stdout).contains("(uint64 labels)"));
    let want = label(lattice.view(), Connectivity::Four, Boundary::PeriodicX).unwrap();
    let file = hdf5::File::open(&output).unwrap();
    let ds = file.dataset("/labels").unwrap();
    assert_eq!(
        ds.dtype().unwrap().to_descriptor().unwrap(),
        hdf5::types::TypeDescriptor::Unsigned(hdf5::types::IntSize::U8)
    );
    assert_eq!(ds.read_2d::<u64>().unwrap(), want.array().mapv(u64::from));
    let count: u64 = ds.attr("count").unwrap().read_scalar().unwrap();
    assert_eq!(count, want.count() as u64);
    let lat: Array2<u8> = file.dataset("/lattice").unwrap().read_2d().unwrap();
    assert_eq!(lat, lattice);
}

#[test]
fn frames_and_append_refuse_uint64() {
    let dir = tempfile::tempdir().unwrap();
    let stack = Array3::<u8>::from_shape_fn((3, 8, 9), |(t, y, x)| ((t + y * x) % 3 == 0) as u8);
    let input = dir.path().join("stack.npy");
    write_npy(&input, &stack).unwrap();
    let out = dir.path().join("labels.npy");
    assert_refused(
        &run(&[
            "label",
            s(&input),
            "--frames",
            "all",
            "-o",
            s(&out),
            "--label-dtype",
            "uint64",
        ]),
        "--frames writes uint32 labels only",
    );
    assert!(!out.exists());
    let h5 = dir.path().join("lattice.h5");
    let file = hdf5::File::create(&h5).unwrap();
    file.new_dataset_builder()
        .with_data(&percolation(10, 12, 0.5, 1, 1))
        .create("lattice")
        .unwrap();
    file.close().unwrap();
    assert_refused(
        &run(&["label", s(&h5), "--append", "--label-dtype", "uint64"]),
        "--append writes uint32 labels only",
    );
    let file = hdf5::File::open(&h5).unwrap();
    assert!(file.dataset("labels").is_err(), "nothing appended");
    assert_refused(
        &run(&["label", s(&h5), "--label-dtype", "uint16"]),
        "uint16",
    );
}

/// A `.npy` header claiming 70000 × 70000 `uint8` on a sparse file (nothing is read).
fn sparse_70000(dir: &Path) -> std::path::PathBuf {
    let dict = "{'descr': '|u1', 'fortran_order': False, 'shape': (70000, 70000), }";
    let mut header = b"\x93NUMPY\x01\x00".to_vec();
    let pad = (64 - (10 + dict.len() + 1) % 64) % 64;
    header.extend_from_slice(&((dict.len() + pad + 1) as u16).to_le_bytes());
    header.extend_from_slice(dict.as_bytes());
    header.extend(std::iter::repeat_n(b' ', pad));
    header.push(b'\n');
    let path = dir.join("big.npy");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(header.len() as u64 + 70000 * 70000).unwrap();
    std::io::Write::write_all(&mut &file, &header).unwrap();
    path
}

/// The commands that stay within uint32 (the cluster table, the plots) refuse a lattice beyond
/// MAX_SITES from its header, at once, naming `clusterlab label`.
#[test]
fn analyze_and_plot_refuse_beyond_max_sites_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let big = sparse_70000(dir.path());
    let started = std::time::Instant::now();
    for args in [
        vec!["analyze", s(&big)],
        vec!["plot", s(&big), "--kind", "labels"],
        vec!["plot", s(&big)],
    ] {
        let o = run(&args);
        assert_refused(&o, "too large");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("clusterlab label"),
            "{args:?}"
        );
    }
    assert!(started.elapsed().as_secs_f64() < 10.0);
}
