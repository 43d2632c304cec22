//! End-to-end tests of the `clusterlab` binary: file formats in and out, and clean failures.

use clusterlab::generate::percolation;
use clusterlab::io::{read_lattice, write_atomically, Lattice};
use clusterlab::{label, label_segments, Boundary, Connectivity, Error};
use ndarray::{Array2, Array3, ShapeBuilder};
use ndarray_npy::{read_npy, write_npy};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A temporary folder with `in/` for inputs and `out/` for outputs.
struct Dirs {
    _root: tempfile::TempDir,
    input: PathBuf,
    out: PathBuf,
}

fn dirs() -> Dirs {
    let root = tempfile::tempdir().unwrap();
    let input = root.path().join("in");
    let out = root.path().join("out");
    std::fs::create_dir(&input).unwrap();
    std::fs::create_dir(&out).unwrap();
    Dirs {
        _root: root,
        input,
        out,
    }
}

/// Runs the CLI. HDF5's file locks are off in the child: tests run in parallel threads, and a
/// child spawned by one test inherits the descriptor of an .h5 file another test has open at
/// that moment (HDF5 does not open with O_CLOEXEC), so its lock outlives the writer's close and
/// a later open of that file by a CLI child fails with EAGAIN.
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

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn assert_ok(o: &Output) {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        stdout(o),
        stderr(o)
    );
}

/// Names of the entries in `dir`, sorted (temporaries included: they start with a dot).
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The run failed with a one-line `error: ...` naming `needle`, and `out` is still empty.
fn assert_clean_failure(o: &Output, needle: &str, out: &Path) {
    let err = stderr(o);
    assert!(!o.status.success(), "expected failure, got success: {err}");
    assert!(o.status.code().is_some(), "killed by a signal: {err}");
    assert_eq!(err.lines().count(), 1, "not one line:\n{err}");
    assert!(err.starts_with("error: "), "{err}");
    assert!(
        err.to_lowercase().contains(&needle.to_lowercase()),
        "{err:?} does not mention {needle:?}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(stdout(o).is_empty(), "stdout: {}", stdout(o));
    assert_eq!(entries(out), Vec::<String>::new(), "left behind in {out:?}");
}

fn read_h5<T: hdf5::H5Type>(path: &Path, name: &str) -> Array2<T> {
    hdf5::File::open(path)
        .unwrap()
        .dataset(name)
        .unwrap()
        .read_2d()
        .unwrap()
}

fn write_h5<T: hdf5::H5Type>(path: &Path, name: &str, a: &Array2<T>) {
    let file = hdf5::File::create(path).unwrap();
    let (group, leaf) = match name.trim_start_matches('/').rsplit_once('/') {
        Some((g, leaf)) => (file.create_group(g).unwrap(), leaf),
        None => ((*file).clone(), name.trim_start_matches('/')),
    };
    group
        .new_dataset_builder()
        .with_data(a)
        .create(leaf)
        .unwrap();
}

#[test]
fn npy_in_npy_out() {
    let d = dirs();
    let lattice = percolation(57, 43, 0.55, 1, 11);
    let input = d.input.join("lattice.npy");
    write_npy(&input, &lattice).unwrap();
    let output = d.out.join("labels.npy");
    let o = run(&[
        "label",
        s(&input),
        "--output",
        s(&output),
        "--connectivity",
        "8",
        "--boundary",
        "periodic",
    ]);
    assert_ok(&o);
    let got: Array2<u32> = read_npy(&output).unwrap();
    let want = label(lattice.view(), Connectivity::Eight, Boundary::Periodic).unwrap();
    assert_eq!(&got, want.array());
    let summary = stdout(&o);
    assert!(summary.contains("57x43 uint8"), "{summary}");
    assert!(summary.contains("8-connectivity, periodic"), "{summary}");
    assert!(
        summary.contains(&format!("clusters   {}\n", want.count())),
        "{summary}"
    );
    let largest = want.sizes()[1..].iter().copied().max().unwrap();
    assert!(
        summary.contains(&format!("largest    {largest} sites")),
        "{summary}"
    );
    assert!(summary.contains(" ms"), "{summary}");
    assert!(summary.contains(s(&output)), "{summary}");
    assert!(o.stderr.is_empty(), "{}", stderr(&o));
    assert_eq!(entries(&d.out), ["labels.npy"]);
}

#[test]
fn every_algorithm_and_thread_count_agrees() {
    let d = dirs();
    let lattice = percolation(40, 70, 0.6, 1, 3);
    let input = d.input.join("lattice.npy");
    write_npy(&input, &lattice).unwrap();
    let want = label(lattice.view(), Connectivity::Four, Boundary::PeriodicY).unwrap();
    for (algorithm, threads) in [
        ("auto", None),
        ("bfs", None),
        ("hoshen-kopelman", Some("1")),
        ("strips", Some("3")),
    ] {
        let output = d.out.join(format!("{algorithm}.npy"));
        let mut args = vec![
            "label",
            s(&input),
            "-o",
            s(&output),
            "-b",
            "periodic-y",
            "--algorithm",
            algorithm,
            "--quiet",
        ];
        if let Some(t) = threads {
            args.extend(["--threads", t]);
        }
        let o = run(&args);
        assert_ok(&o);
        assert!(o.stdout.is_empty(), "--quiet printed {}", stdout(&o));
        let got: Array2<u32> = read_npy(&output).unwrap();
        assert_eq!(&got, want.array(), "{algorithm}");
    }
}

#[test]
fn h5_in_h5_out_with_attributes() {
    let d = dirs();
    let lattice = percolation(33, 65, 0.5, 2, 5);
    let input = d.input.join("lattice.h5");
    write_h5(&input, "/lattice", &lattice);
    let output = d.out.join("labels.h5");
    let o = run(&[
        "label",
        s(&input),
        "-o",
        s(&output),
        "--boundary",
        "periodic-x",
    ]);
    assert_ok(&o);
    let want = label(lattice.view(), Connectivity::Four, Boundary::PeriodicX).unwrap();
    let file = hdf5::File::open(&output).unwrap();
    let ds = file.dataset("/labels").unwrap();
    assert_eq!(ds.read_2d::<u32>().unwrap(), want.array());
    assert_eq!(
        ds.dtype().unwrap().to_descriptor().unwrap(),
        hdf5::types::TypeDescriptor::Unsigned(hdf5::types::IntSize::U4)
    );
    let conn: u32 = ds.attr("connectivity").unwrap().read_scalar().unwrap();
    assert_eq!(conn, 4);
    let boundary: hdf5::types::VarLenUnicode = ds.attr("boundary").unwrap().read_scalar().unwrap();
    assert_eq!(boundary.as_str(), "periodic-x");
    let count: u64 = ds.attr("count").unwrap().read_scalar().unwrap();
    assert_eq!(count, want.count() as u64);
    let segments: u8 = ds.attr("segments").unwrap().read_scalar().unwrap();
    assert_eq!(segments, 0);
    assert_eq!(read_h5::<u8>(&output, "/lattice"), lattice);
    assert_eq!(entries(&d.out), ["labels.h5"]);
}

#[test]
fn h5_named_dataset_and_bool() {
    let d = dirs();
    let lattice = percolation(20, 31, 0.6, 1, 8);
    let input = d.input.join("run.hdf5");
    write_h5(&input, "/data/occupied", &lattice.mapv(|v| v == 1));
    let output = d.out.join("labels.npy");
    let o = run(&[
        "label",
        s(&input),
        "-o",
        s(&output),
        "--dataset",
        "/data/occupied",
        "-c",
        "8",
    ]);
    assert_ok(&o);
    let got: Array2<u32> = read_npy(&output).unwrap();
    let want = label(lattice.view(), Connectivity::Eight, Boundary::Open).unwrap();
    assert_eq!(&got, want.array());
}

#[test]
fn segments_of_a_u16_image() {
    let d = dirs();
    let mut state = 12345u32;
    let image = Array2::from_shape_fn((30, 41), |_| {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
        [0u16, 7, 300, 60_000][(state >> 16) as usize % 4]
    });
    let input = d.input.join("image.npy");
    write_npy(&input, &image).unwrap();
    for (output, periodic) in [(d.out.join("seg.npy"), false), (d.out.join("seg.h5"), true)] {
        let mut args = vec!["label", s(&input), "-o", s(&output), "--segments"];
        if periodic {
            args.extend(["--boundary", "periodic"]);
        }
        let o = run(&args);
        assert_ok(&o);
        assert!(stdout(&o).contains("uint16"), "{}", stdout(&o));
        let boundary = if periodic {
            Boundary::Periodic
        } else {
            Boundary::Open
        };
        let want = label_segments(image.view(), Connectivity::Four, boundary).unwrap();
        let got: Array2<u32> = if periodic {
            let file = hdf5::File::open(&output).unwrap();
            let ds = file.dataset("labels").unwrap();
            let segments: u8 = ds.attr("segments").unwrap().read_scalar().unwrap();
            assert_eq!(segments, 1);
            assert_eq!(read_h5::<u16>(&output, "/lattice"), image);
            ds.read_2d().unwrap()
        } else {
            read_npy(&output).unwrap()
        };
        assert_eq!(&got, want.array());
        // Occupancy labels differ: the segments split the occupied clusters.
        let occupancy = label(
            image.mapv(|v| u8::from(v != 0)).view(),
            Connectivity::Four,
            boundary,
        )
        .unwrap();
        assert!(want.count() > occupancy.count());
    }
}

#[test]
fn fortran_order_npy() {
    let d = dirs();
    let lattice = percolation(19, 26, 0.55, 1, 4);
    let fortran = Array2::from_shape_vec((19, 26).f(), vec![0u8; 19 * 26]).unwrap();
    let mut fortran = fortran;
    fortran.assign(&lattice);
    assert!(!fortran.is_standard_layout());
    let input = d.input.join("fortran.npy");
    write_npy(&input, &fortran).unwrap();
    let header = std::fs::read(&input).unwrap();
    assert!(
        String::from_utf8_lossy(&header[..128]).contains("'fortran_order': True"),
        "the test input is not in Fortran order"
    );
    let output = d.out.join("labels.npy");
    assert_ok(&run(&["label", s(&input), "-o", s(&output)]));
    let got: Array2<u32> = read_npy(&output).unwrap();
    let want = label(lattice.view(), Connectivity::Four, Boundary::Open).unwrap();
    assert_eq!(&got, want.array());
    // The library reads the array the file describes, in row-major layout.
    match read_lattice(&input, None).unwrap() {
        Lattice::U8(a) => {
            assert_eq!(a, lattice);
            assert!(a.is_standard_layout());
        }
        other => panic!("read as {}", other.dtype()),
    }
}

#[test]
fn int64_input_is_narrowed() {
    let d = dirs();
    let small = percolation(25, 25, 0.5, 1, 2).mapv(i64::from);
    let wide = Array2::from_shape_fn((12, 17), |(y, x)| ((y * 17 + x) % 5) as i64 * 1000);
    let huge = Array2::from_shape_fn((4, 4), |(y, _)| if y == 3 { 70_000i64 } else { 1 });
    for (name, array, dtype) in [
        ("small.npy", &small, "uint8"),
        ("wide.npy", &wide, "uint16"),
        ("huge.npy", &huge, "uint32"),
    ] {
        let input = d.input.join(name);
        write_npy(&input, array).unwrap();
        let lattice = read_lattice(&input, None).unwrap();
        assert_eq!(lattice.dtype(), dtype, "{name}");
        let output = d.out.join(name);
        let o = run(&["label", s(&input), "-o", s(&output), "--segments"]);
        assert_ok(&o);
        assert!(stdout(&o).contains(dtype), "{}", stdout(&o));
        let got: Array2<u32> = read_npy(&output).unwrap();
        let image = array.mapv(|v| v as u32);
        let want = label_segments(image.view(), Connectivity::Four, Boundary::Open).unwrap();
        assert_eq!(&got, want.array(), "{name}");
    }
}

#[test]
fn out_of_range_integers_are_refused() {
    let d = dirs();
    let negative = Array2::from_shape_fn((3, 4), |(y, x)| if (y, x) == (1, 2) { -3i32 } else { 1 });
    let input = d.input.join("negative.npy");
    write_npy(&input, &negative).unwrap();
    let o = run(&["label", s(&input), "-o", s(&d.out.join("l.npy"))]);
    assert_clean_failure(&o, "negative value -3 at [1, 2]", &d.out);

    let big = Array2::from_elem((2, 2), u64::from(u32::MAX) + 1);
    let input = d.input.join("big.npy");
    write_npy(&input, &big).unwrap();
    let o = run(&["label", s(&input), "-o", s(&d.out.join("l.npy"))]);
    assert_clean_failure(&o, "4294967296", &d.out);
}

#[test]
fn missing_input_file() {
    let d = dirs();
    let input = d.input.join("nowhere.npy");
    let o = run(&["label", s(&input), "-o", s(&d.out.join("l.npy"))]);
    assert_clean_failure(&o, "nowhere.npy", &d.out);
    assert!(stderr(&o).contains("No such file"), "{}", stderr(&o));
    let input = d.input.join("nowhere.h5");
    let o = run(&["label", s(&input), "-o", s(&d.out.join("l.h5"))]);
    assert_clean_failure(&o, "nowhere.h5", &d.out);
    assert!(matches!(
        read_lattice(&input, None),
        Err(Error::Io { path, .. }) if path == input
    ));
}

#[test]
fn missing_dataset_lists_the_others() {
    let d = dirs();
    let input = d.input.join("other.h5");
    let file = hdf5::File::create(&input).unwrap();
    file.new_dataset_builder()
        .with_data(&Array2::<u8>::zeros((3, 3)))
        .create("spins")
        .unwrap();
    file.create_group("run")
        .unwrap()
        .new_dataset_builder()
        .with_data(&Array2::<u8>::zeros((3, 3)))
        .create("t0")
        .unwrap();
    drop(file);
    let o = run(&["label", s(&input), "-o", s(&d.out.join("l.h5"))]);
    assert_clean_failure(&o, "/lattice", &d.out);
    let err = stderr(&o);
    assert!(err.contains("/spins") && err.contains("/run/t0"), "{err}");
    let o = run(&[
        "label",
        s(&input),
        "-o",
        s(&d.out.join("l.h5")),
        "-d",
        "/ghost",
    ]);
    assert_clean_failure(&o, "/ghost", &d.out);
}

#[test]
fn three_dimensional_array() {
    let d = dirs();
    let input = d.input.join("cube.npy");
    write_npy(&input, &Array3::<u8>::zeros((2, 3, 4))).unwrap();
    let o = run(&["label", s(&input), "-o", s(&d.out.join("l.npy"))]);
    assert_clean_failure(&o, "3-D", &d.out);
    assert!(stderr(&o).contains("(2, 3, 4)"), "{}", stderr(&o));
    // A stack: the message says how to take its frames.
    assert!(stderr(&o).contains("--frames"), "{}", stderr(&o));

    let input = d.input.join("cube.h5");
    let file = hdf5::File::create(&input).unwrap();
    file.new_dataset_builder()
        .with_data(&Array3::<u8>::zeros((2, 3, 4)))
        .create("lattice")
        .unwrap();
    drop(file);
    let o = run(&["label", s(&input), "-o", s(&d.out.join("l.h5"))]);
    assert_clean_failure(&o, "3-D", &d.out);
}

#[test]
fn float_array() {
    let d = dirs();
    let input = d.input.join("float.npy");
    write_npy(&input, &Array2::<f64>::zeros((3, 3))).unwrap();
    let o = run(&["label", s(&input), "-o", s(&d.out.join("l.npy"))]);
    assert_clean_failure(&o, "unsupported dtype float64", &d.out);

    let input = d.input.join("float.h5");
    write_h5(&input, "lattice", &Array2::<f32>::zeros((3, 3)));
    let o = run(&["label", s(&input), "-o", s(&d.out.join("l.h5"))]);
    assert_clean_failure(&o, "unsupported dtype float32", &d.out);
}

#[test]
fn unknown_extension() {
    let d = dirs();
    let input = d.input.join("lattice.txt");
    std::fs::write(&input, "0 1\n1 0\n").unwrap();
    let o = run(&["label", s(&input), "-o", s(&d.out.join("l.npy"))]);
    assert_clean_failure(&o, ".txt", &d.out);

    let input = d.input.join("lattice.npy");
    write_npy(&input, &Array2::<u8>::ones((3, 3))).unwrap();
    let o = run(&["label", s(&input), "-o", s(&d.out.join("labels.csv"))]);
    assert_clean_failure(&o, ".csv", &d.out);
}

#[test]
fn bad_arguments() {
    let d = dirs();
    let input = d.input.join("lattice.npy");
    write_npy(&input, &Array2::<u8>::ones((3, 3))).unwrap();
    let output = d.out.join("l.npy");
    for (args, needle) in [
        (vec!["--connectivity", "6"], "connectivity"),
        (vec!["--boundary", "mobius"], "boundary"),
        (vec!["--threads", "0"], "threads"),
        (vec!["--algorithm", "magic"], "algorithm"),
    ] {
        let mut all = vec!["label", s(&input), "-o", s(&output)];
        all.extend(args);
        let o = run(&all);
        assert_clean_failure(&o, needle, &d.out);
    }
    // Without --output: the summary only, no file.
    let o = run(&["label", s(&input)]);
    assert_ok(&o);
    assert!(stdout(&o).contains("summary only"), "{}", stdout(&o));
    assert_eq!(entries(&d.out), Vec::<String>::new());
    let o = run(&["label", s(&input), "-o", s(&d.out.join("missing/l.npy"))]);
    assert_clean_failure(&o, "missing", &d.out);
    let o = run(&["generate", "--size", "0x4", "--p", "0.5", "-o", s(&output)]);
    assert_clean_failure(&o, "size", &d.out);
    let o = run(&["generate", "--size", "4", "--p", "1.5", "-o", s(&output)]);
    assert_clean_failure(&o, "probability", &d.out);
}

#[test]
fn help_explains_every_option() {
    let o = run(&["label", "--help"]);
    assert_ok(&o);
    let help = stdout(&o);
    for option in [
        "--output",
        "--connectivity",
        "--boundary",
        "--segments",
        "--dataset",
        "--algorithm",
        "--threads",
        "--quiet",
        "periodic-x",
        "hoshen-kopelman",
    ] {
        assert!(help.contains(option), "--help lacks {option}:\n{help}");
    }
    let o = run(&["generate", "--help"]);
    assert_ok(&o);
    let help = stdout(&o);
    for option in ["--size", "--p", "--grain", "--seed", "--output"] {
        assert!(help.contains(option), "--help lacks {option}:\n{help}");
    }
}

#[test]
fn generate_then_label() {
    let d = dirs();
    let lattice_path = d.out.join("perc.h5");
    let o = run(&[
        "generate",
        "--size",
        "48x64",
        "--p",
        "0.59",
        "--grain",
        "3",
        "--seed",
        "42",
        "--output",
        s(&lattice_path),
    ]);
    assert_ok(&o);
    let expected = percolation(48, 64, 0.59, 3, 42);
    assert_eq!(read_h5::<u8>(&lattice_path, "/lattice"), expected);

    let npy_path = d.out.join("square.npy");
    assert_ok(&run(&[
        "generate",
        "--size",
        "50",
        "--p",
        "0.3",
        "-o",
        s(&npy_path),
        "-q",
    ]));
    let square: Array2<u8> = read_npy(&npy_path).unwrap();
    assert_eq!(square, percolation(50, 50, 0.3, 1, 1));

    let labels_path = d.out.join("labels.h5");
    let o = run(&[
        "label",
        s(&lattice_path),
        "-o",
        s(&labels_path),
        "-b",
        "periodic",
    ]);
    assert_ok(&o);
    let want = label(expected.view(), Connectivity::Four, Boundary::Periodic).unwrap();
    assert_eq!(&read_h5::<u32>(&labels_path, "/labels"), want.array());
    assert_eq!(entries(&d.out), ["labels.h5", "perc.h5", "square.npy"]);
}

#[test]
fn atomic_writes_leave_nothing_on_failure() {
    let d = dirs();
    let path = d.out.join("table.csv");
    // A writer that fails half-way.
    let r = write_atomically(&path, |tmp| {
        std::fs::write(tmp, "label,size\n1,").unwrap();
        Err(Error::InvalidArgument("disk full".into()))
    });
    assert!(matches!(r, Err(Error::InvalidArgument(_))));
    assert_eq!(entries(&d.out), Vec::<String>::new());

    // An existing file survives a failed rewrite and is replaced by a successful one.
    std::fs::write(&path, "old").unwrap();
    let r = write_atomically(&path, |_| Err(Error::InvalidArgument("no".into())));
    assert!(r.is_err());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
    write_atomically(&path, |tmp| {
        assert_eq!(tmp.parent(), path.parent());
        assert!(!tmp.exists() || std::fs::read(tmp).unwrap().is_empty());
        std::fs::write(tmp, "new").map_err(|source| Error::Io {
            path: tmp.to_owned(),
            source,
        })
    })
    .unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
    assert_eq!(entries(&d.out), ["table.csv"]);

    // A folder that does not exist: an I/O error, nothing created.
    let lattice = Lattice::U8(Array2::ones((2, 2)));
    let r = clusterlab::io::write_lattice(&d.out.join("nope/l.h5"), &lattice);
    assert!(matches!(r, Err(Error::Io { .. })), "{r:?}");
    assert_eq!(entries(&d.out), ["table.csv"]);
}

#[test]
fn output_must_not_replace_input() {
    let d = dirs();
    let input = d.input.join("lattice.npy");
    let lattice = Array2::<u8>::ones((3, 3));
    write_npy(&input, &lattice).unwrap();
    let o = run(&["label", s(&input), "-o", s(&input)]);
    assert_clean_failure(&o, "replace the input", &d.out);
    assert_eq!(read_npy::<_, Array2<u8>>(&input).unwrap(), lattice);
    assert_eq!(entries(&d.input), ["lattice.npy"]);
}

#[test]
fn backend_cuda_without_a_gpu_is_a_one_line_error() {
    // This machine class has no GPU: `--backend cuda` must fail cleanly, `auto` must fall back.
    if clusterlab::Labeler::new(clusterlab::Connectivity::Four, clusterlab::Boundary::Open)
        .backend(clusterlab::Backend::Cuda { device: 0 })
        .is_ok()
    {
        return; // a GPU is present: covered by the GPU tests instead
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.npy");
    ndarray_npy::write_npy(&input, &ndarray::Array2::<u8>::ones((4, 5))).unwrap();
    let bin = env!("CARGO_BIN_EXE_clusterlab");
    let out = dir.path().join("out.npy");
    let run = |backend: &str| {
        std::process::Command::new(bin)
            .args(["label", input.to_str().unwrap(), "--output"])
            .arg(&out)
            .args(["--backend", backend])
            .output()
            .unwrap()
    };
    let cuda = run("cuda");
    assert!(!cuda.status.success());
    let err = String::from_utf8_lossy(&cuda.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error:") && err.contains("CUDA unavailable"),
        "{err}"
    );
    assert!(!out.exists());
    let auto = run("auto");
    assert!(
        auto.status.success(),
        "{}",
        String::from_utf8_lossy(&auto.stderr)
    );
    assert!(String::from_utf8_lossy(&auto.stdout).contains("cpu"));
    assert!(run("tpu").status.code() == Some(2));
}

/// The three cases of the hardening issue, each an immediate one-line error: an argument that
/// only shapes a chart, an oversized header (read from the header, not the data), and a thread
/// count that would start 100,000 threads.
#[test]
fn arguments_are_bounded_before_any_work() {
    let d = dirs();
    let started = std::time::Instant::now();
    let png = d.out.join("ns.png");
    let o = run(&[
        "plot",
        "--size",
        "16",
        "--p",
        "0.5",
        "--bins-per-decade",
        "4294967295",
        "-o",
        s(&png),
    ]);
    assert_clean_failure(&o, "bins-per-decade", &d.out);
    let o = run(&[
        "plot",
        "--size",
        "16",
        "--p",
        "0.5",
        "--title",
        &"t".repeat(201),
    ]);
    assert_clean_failure(&o, "200 characters", &d.out);

    let input = d.input.join("lattice.npy");
    write_npy(&input, &Array2::<u8>::ones((3, 3))).unwrap();
    for sub in ["label", "analyze"] {
        let o = run(&[sub, s(&input), "-o", s(&d.out.join("l.h5")), "-j", "100000"]);
        assert_clean_failure(&o, "4096", &d.out);
        assert!(stderr(&o).contains("cores"), "{}", stderr(&o));
    }

    // A header claiming 70000 × 70000 on a sparse file of 4.9 GB.
    let big = d.input.join("big.npy");
    let dict = "{'descr': '|u1', 'fortran_order': False, 'shape': (70000, 70000), }";
    let mut header = b"\x93NUMPY\x01\x00".to_vec();
    let pad = (64 - (10 + dict.len() + 1) % 64) % 64;
    header.extend_from_slice(&((dict.len() + pad + 1) as u16).to_le_bytes());
    header.extend_from_slice(dict.as_bytes());
    header.extend(std::iter::repeat_n(b' ', pad));
    header.push(b'\n');
    let file = std::fs::File::create(&big).unwrap();
    file.set_len(header.len() as u64 + 70000 * 70000).unwrap();
    let mut f = std::fs::OpenOptions::new().write(true).open(&big).unwrap();
    std::io::Write::write_all(&mut f, &header).unwrap();
    drop(f);
    // uint32 labels cannot number it: refused from the header (auto would take uint64).
    let o = run(&[
        "label",
        s(&big),
        "-o",
        s(&d.out.join("l.npy")),
        "--label-dtype",
        "uint32",
    ]);
    assert_clean_failure(&o, "too large", &d.out);
    assert!(
        stderr(&o).contains("--label-dtype uint64"),
        "{}",
        stderr(&o)
    );
    // 200000 × 200000 (a sparse 40 GB file) takes uint64 labels: 320 GB of them, refused from
    // the header with the estimate on any machine with less.
    let dict = dict.replace("70000, 70000", "200000, 200000");
    let huge = d.input.join("huge.npy");
    let mut header = b"\x93NUMPY\x01\x00".to_vec();
    let pad = (64 - (10 + dict.len() + 1) % 64) % 64;
    header.extend_from_slice(&((dict.len() + pad + 1) as u16).to_le_bytes());
    header.extend_from_slice(dict.as_bytes());
    header.extend(std::iter::repeat_n(b' ', pad));
    header.push(b'\n');
    let file = std::fs::File::create(&huge).unwrap();
    file.set_len(header.len() as u64 + 200000 * 200000).unwrap();
    let mut f = std::fs::OpenOptions::new().write(true).open(&huge).unwrap();
    std::io::Write::write_all(&mut f, &header).unwrap();
    drop(f);
    let o = run(&["label", s(&huge), "-o", s(&d.out.join("l.npy"))]);
    assert_clean_failure(&o, "64-bit labeling of 200000 × 200000 sites", &d.out);
    assert!(stderr(&o).contains("available"), "{}", stderr(&o));
    std::fs::remove_file(&huge).unwrap();
    // Every case above in well under a second each (no work was started).
    assert!(
        started.elapsed().as_secs_f64() < 10.0,
        "{:?}",
        started.elapsed()
    );
}

/// Every numeric argument just outside its documented range is an immediate one-line error
/// that names it, and its bounds are in `--help`.
#[test]
fn every_numeric_argument_is_bounded() {
    let d = dirs();
    let input = d.input.join("lattice.npy");
    write_npy(&input, &Array2::<u8>::ones((3, 3))).unwrap();
    let lat = s(&input).to_string();
    let npy = s(&d.out.join("l.npy")).to_string();
    let png = s(&d.out.join("p.png")).to_string();
    let gen = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["generate", "--size", "8", "--p", "0.5", "-o", &npy]
            .iter()
            .map(|x| x.to_string())
            .collect();
        v.extend(extra.iter().map(|x| x.to_string()));
        v
    };
    let plot = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["plot", "--size", "8", "--p", "0.5", "-o", &png]
            .iter()
            .map(|x| x.to_string())
            .collect();
        v.extend(extra.iter().map(|x| x.to_string()));
        v
    };
    let label = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["label", &lat, "-o", &npy]
            .iter()
            .map(|x| x.to_string())
            .collect();
        v.extend(extra.iter().map(|x| x.to_string()));
        v
    };
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "generate".into(),
                "--size".into(),
                "0".into(),
                "--p".into(),
                "0.5".into(),
                "-o".into(),
                npy.clone(),
            ],
            "--size",
        ),
        (
            vec![
                "generate".into(),
                "--size".into(),
                "65536x65536".into(),
                "--p".into(),
                "0.5".into(),
                "-o".into(),
                npy.clone(),
            ],
            "too large",
        ),
        (
            vec![
                "generate".into(),
                "--size".into(),
                "8".into(),
                "--p".into(),
                "-0.1".into(),
                "-o".into(),
                npy.clone(),
            ],
            "probability",
        ),
        (
            vec![
                "generate".into(),
                "--size".into(),
                "8".into(),
                "--p".into(),
                "1.01".into(),
                "-o".into(),
                npy.clone(),
            ],
            "probability",
        ),
        (gen(&["--grain", "0"]), "--grain"),
        (gen(&["--grain", "65537"]), "--grain"),
        (gen(&["--seed", "4294967296"]), "--seed"),
        (label(&["--threads", "0"]), "--threads"),
        (label(&["--threads", "4097"]), "--threads"),
        (plot(&["--samples", "0"]), "--samples"),
        (plot(&["--samples", "1000000001"]), "--samples"),
        (plot(&["--bins-per-decade", "101"]), "--bins-per-decade"),
        (plot(&["--tau", "0"]), "--tau"),
        (plot(&["--tau", "10.5"]), "--tau"),
        (plot(&["--chart", "15x600"]), "--chart"),
        (plot(&["--chart", "800x16385"]), "--chart"),
        (plot(&["--kind", "labels", "--max-side", "0"]), "--max-side"),
        (plot(&["--kind", "labels", "--scale", "16385"]), "--scale"),
    ];
    for (args, needle) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let start = std::time::Instant::now();
        let o = run(&args);
        assert_clean_failure(&o, needle, &d.out);
        assert!(start.elapsed().as_secs_f64() < 2.0, "{args:?}");
    }
    // The bounds are documented.
    let help = stdout(&run(&["generate", "--help"]));
    assert!(
        help.contains("65536") && help.contains("4294967295"),
        "{help}"
    );
    let help = stdout(&run(&["plot", "--help"]));
    for text in [
        "1000000000",
        "from 0 to 100",
        "at most 10",
        "16384",
        "200 characters",
    ] {
        assert!(help.contains(text), "plot --help lacks {text}");
    }
    let help = stdout(&run(&["label", "--help"]));
    assert!(help.contains("4096"), "{help}");
    // At the bounds, accepted: --p 0 and 1, --grain 1, --tau 10, --bins-per-decade 100.
    for extra in [&["--p", "0"][..], &["--p", "1", "--grain", "1"][..]] {
        let mut v = vec!["generate", "--size", "4", "-o", &npy, "-q"];
        v.extend_from_slice(extra);
        if !v.contains(&"--p") {
            v.extend_from_slice(&["--p", "0.5"]);
        }
        assert_ok(&run(&v));
    }
    assert_ok(&run(&[
        "plot",
        "--size",
        "8",
        "--p",
        "0.5",
        "-o",
        &png,
        "--tau",
        "10",
        "--bins-per-decade",
        "100",
        "-q",
    ]));
}

/// `--json` prints one JSON object with the documented keys, on generate, label and analyze.
#[test]
fn json_summaries_have_stable_keys() {
    let d = dirs();
    let lattice = d.out.join("pc.npy");
    let parse = |o: &Output| -> serde_json::Value {
        assert_ok(o);
        serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
    };
    let g = parse(&run(&[
        "generate",
        "--size",
        "64x48",
        "--p",
        "0.6",
        "--seed",
        "3",
        "-o",
        s(&lattice),
        "--json",
    ]));
    assert_eq!(g["command"], "generate");
    assert_eq!(
        (g["height"].as_u64(), g["width"].as_u64()),
        (Some(64), Some(48))
    );
    for key in [
        "p",
        "grain",
        "seed",
        "occupied",
        "occupied_fraction",
        "output",
    ] {
        assert!(!g[key].is_null(), "generate lacks {key}: {g}");
    }
    let want = clusterlab::label(
        ndarray_npy::read_npy::<_, Array2<u8>>(&lattice)
            .unwrap()
            .view(),
        clusterlab::Connectivity::Four,
        clusterlab::Boundary::Periodic,
    )
    .unwrap();
    let l = parse(&run(&[
        "label",
        s(&lattice),
        "--boundary",
        "periodic",
        "--json",
    ]));
    assert_eq!(l["command"], "label");
    assert_eq!(l["clusters"].as_u64(), Some(want.count() as u64));
    assert_eq!(l["boundary"], "periodic");
    assert!(l["output"].is_null());
    for key in [
        "input",
        "dtype",
        "connectivity",
        "segments",
        "algorithm",
        "backend",
        "largest",
        "largest_fraction",
        "occupied",
        "occupied_fraction",
        "time_ms",
    ] {
        assert!(!l[key].is_null(), "label lacks {key}: {l}");
    }
    let a = parse(&run(&[
        "analyze",
        s(&lattice),
        "--boundary",
        "periodic",
        "--json",
    ]));
    assert_eq!(a["command"], "analyze");
    assert_eq!(a["clusters"].as_u64(), Some(want.count() as u64));
    for key in [
        "largest",
        "mean_size",
        "p_infinity",
        "percolating",
        "wraps_x",
        "wraps_y",
        "wraps_both",
        "wraps_either",
        "spans_x",
        "spans_y",
        "time_ms",
        "threads",
        "backend",
    ] {
        assert!(!a[key].is_null(), "analyze lacks {key}: {a}");
    }
}

/// The temporaries of output `out` in its folder (`.NAME.PID.XXXXXX.tmp`).
fn temporaries_of(out: &Path) -> Vec<String> {
    let name = out.file_name().unwrap().to_str().unwrap();
    entries(out.parent().unwrap())
        .into_iter()
        .filter(|e| e.starts_with(&format!(".{name}.")) && e.ends_with(".tmp"))
        .collect()
}

/// Sends SIGINT, SIGTERM and SIGKILL to `clusterlab ARGS` once the temporary of its output `out`
/// appears (the run is writing): the old output stays intact, SIGINT and SIGTERM exit with 130
/// and 143 leaving no temporary. A run that finished first must have written the whole output
/// (`complete(len)`).
fn interrupt_each_way(args: &[&str], out: &Path, complete: impl Fn(u64) -> bool) {
    use std::process::Stdio;
    std::fs::write(out, b"old output").unwrap();
    let temporaries = || temporaries_of(out);
    for (signal, code) in [("INT", Some(130)), ("TERM", Some(143)), ("KILL", None)] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_clusterlab"))
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Wait for the temporary to appear: the run is writing.
        let start = std::time::Instant::now();
        while temporaries().is_empty() {
            assert!(start.elapsed().as_secs() < 60, "no temporary appeared");
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let killed = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = child.wait().unwrap();
        if status.success() {
            // The write finished before the signal: the new output is complete.
            assert!(
                complete(std::fs::metadata(out).unwrap().len()),
                "SIG{signal}"
            );
            std::fs::write(out, b"old output").unwrap();
            continue;
        }
        eprintln!("SIG{signal} during the write: {status}");
        assert_eq!(status.code(), code, "SIG{signal}");
        assert_eq!(std::fs::read(out).unwrap(), b"old output", "SIG{signal}");
        if code.is_some() {
            assert_eq!(temporaries(), Vec::<String>::new(), "SIG{signal}");
        }
    }
}

/// SIGINT, SIGTERM and SIGKILL sent to a real run in the middle of writing its output: the old
/// output stays intact, SIGINT and SIGTERM exit with 130 and 143 leaving no temporary, and the
/// temporary a SIGKILL leaves is removed by the next run that writes the same output.
#[cfg(unix)]
#[test]
fn signals_in_the_middle_of_a_write_leave_nothing_behind() {
    let d = dirs();
    let out = d.out.join("big.npy");
    // Large enough that the write takes a while: 8000² bytes.
    let args = [
        "generate",
        "--size",
        "8000",
        "--p",
        "0.5",
        "-q",
        "-o",
        s(&out),
    ];
    interrupt_each_way(&args, &out, |len| len == 8000 * 8000 + 128);
    // The next run of the same output removes what SIGKILL left, and writes it whole.
    assert_ok(&run(&[
        "generate",
        "--size",
        "64",
        "--p",
        "0.5",
        "-q",
        "-o",
        s(&out),
    ]));
    assert_eq!(temporaries_of(&out), Vec::<String>::new());
    assert_eq!(entries(&d.out), vec!["big.npy".to_string()]);
}

/// `--compress [LEVEL]`: HDF5 outputs stored with shuffle + deflate in chunks of whole rows, much
/// smaller on a sparse lattice, and read back exactly.
#[test]
fn compressed_hdf5_output() {
    let d = dirs();
    let plain = d.out.join("plain.h5");
    let packed = d.out.join("packed.h5");
    let lattice = d.out.join("lat.npy");
    assert_ok(&run(&[
        "generate",
        "--size",
        "512",
        "--p",
        "0.05",
        "-q",
        "-o",
        s(&lattice),
    ]));
    assert_ok(&run(&["label", s(&lattice), "-q", "-o", s(&plain)]));
    assert_ok(&run(&[
        "label",
        s(&lattice),
        "-q",
        "-o",
        s(&packed),
        "--compress",
    ]));
    let (a, b) = (
        std::fs::metadata(&plain).unwrap().len(),
        std::fs::metadata(&packed).unwrap().len(),
    );
    assert!(b * 4 < a, "compressed {b} bytes, plain {a}");
    let file = hdf5::File::open(&packed).unwrap();
    let ds = file.dataset("labels").unwrap();
    let filters = ds.filters();
    assert!(
        filters.contains(&hdf5::filters::Filter::Shuffle)
            && filters.contains(&hdf5::filters::Filter::Deflate(4)),
        "{filters:?}"
    );
    assert_eq!(ds.chunk().unwrap()[1], 512, "chunks of whole rows");
    assert_eq!(
        read_h5::<u32>(&packed, "labels"),
        read_h5::<u32>(&plain, "labels")
    );
    // The lattice reads back through clusterlab's own reader too, and levels are bounded.
    let back = clusterlab::io::read_lattice(&packed, None).unwrap();
    assert_eq!(back.dim(), (512, 512));
    let o = run(&["label", s(&lattice), "-o", s(&packed), "--compress", "10"]);
    assert_clean_failure(&o, "--compress", &d.input);
}

/// `label --timings`: the phases on stderr, and under "timings" with --json; without the flag
/// the JSON has no "timings" key.
#[test]
fn label_timings() {
    let d = dirs();
    let input = d.input.join("lattice.npy");
    write_npy(&input, &percolation(64, 80, 0.59, 1, 3)).unwrap();
    let output = d.out.join("labels.npy");
    let o = run(&["label", s(&input), "-o", s(&output), "--timings", "--json"]);
    assert_ok(&o);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let t = &v["timings"];
    for key in ["read_ms", "open_ms", "label_ms", "write_ms", "total_ms"] {
        assert!(t[key].as_f64().is_some_and(|x| x >= 0.0), "{key}: {t}");
    }
    let sum: f64 = ["read_ms", "open_ms", "label_ms", "write_ms"]
        .iter()
        .map(|k| t[*k].as_f64().unwrap())
        .sum();
    assert!(sum <= t["total_ms"].as_f64().unwrap() + 1e-6, "{t}");
    assert!(stderr(&o).contains("timings (ms): read "), "{}", stderr(&o));
    let o = run(&["label", s(&input), "--json"]);
    assert_ok(&o);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v.get("timings").is_none());
}

/// The same for `label` into a `.npy` file, whose labels go straight into the mapped temporary:
/// a signal while labeling leaves the old output intact and, for SIGINT and SIGTERM, no
/// temporary; the next run writes the labels whole.
#[test]
fn signals_while_labeling_into_a_mapped_file_leave_nothing_behind() {
    let d = dirs();
    let input = d.out.join("lattice.npy");
    assert_ok(&run(&[
        "generate",
        "--size",
        "3000",
        "--p",
        "0.59",
        "-q",
        "-o",
        s(&input),
    ]));
    let out = d.out.join("labels.npy");
    let args = ["label", s(&input), "--backend", "cpu", "-q", "-o", s(&out)];
    // Done before the signal: a header and 3000² u32.
    interrupt_each_way(&args, &out, |len| len > 3000 * 3000 * 4);
    assert_ok(&run(&[
        "label",
        s(&input),
        "--backend",
        "cpu",
        "-q",
        "-o",
        s(&out),
    ]));
    assert_eq!(temporaries_of(&out), Vec::<String>::new());
    let labels: ndarray::Array2<u32> = ndarray_npy::read_npy(&out).unwrap();
    assert_eq!(labels.dim(), (3000, 3000));
}
