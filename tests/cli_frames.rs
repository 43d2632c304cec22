//! End-to-end tests of `clusterlab` on (T, H, W) stacks: `--frames`, `--append` (also under
//! SIGKILL), `analyze --ns` and `plot --data`. The oracle is the BFS labeling of each frame
//! through the library (scipy is not assumed).

use clusterlab::generate::percolation;
use clusterlab::{Algorithm, Boundary, Connectivity, Labeler};
use ndarray::{Array2, Array3, Axis};
use ndarray_npy::{read_npy, write_npy};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_clusterlab"))
        .args(args)
        .env("HDF5_USE_FILE_LOCKING", "FALSE")
        .output()
        .expect("run clusterlab")
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn assert_ok(o: &Output) {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        text(&o.stdout),
        text(&o.stderr)
    );
}

/// A failure with one `error:` line that mentions `needle`.
fn assert_error(o: &Output, needle: &str) {
    let err = text(&o.stderr);
    assert!(!o.status.success(), "expected failure: {}", text(&o.stdout));
    assert_eq!(err.lines().count(), 1, "not one line:\n{err}");
    assert!(err.starts_with("error: "), "{err}");
    assert!(err.contains(needle), "{err:?} does not mention {needle:?}");
}

/// Frames of site percolation at densities around p_c, each a different seed.
fn stack(t: usize, h: usize, w: usize) -> Array3<u8> {
    let mut a = Array3::<u8>::zeros((t, h, w));
    for k in 0..t {
        let frame = percolation(h, w, 0.45 + 0.05 * k as f64, 1, 100 + k as u32);
        a.index_axis_mut(Axis(0), k).assign(&frame);
    }
    a
}

fn oracle(frame: ndarray::ArrayView2<'_, u8>, c: Connectivity, b: Boundary) -> Array2<u32> {
    let mut bfs = Labeler::new(c, b).algorithm(Algorithm::Bfs);
    bfs.label(frame).unwrap().array().clone()
}

/// Opens an HDF5 file without HDF5's file lock: a CLI child that another test spawns can inherit
/// this process's descriptor of the file (HDF5 does not open with O_CLOEXEC) and hold the lock
/// past our close, so that a locked open here fails at random.
fn open_h5(path: &Path) -> hdf5::Result<hdf5::File> {
    hdf5::File::with_options()
        .with_fapl(|p| p.file_locking(false))
        .open(path)
}

fn write_h5_stack(path: &Path, a: &Array3<u8>, extra: bool) {
    let file = hdf5::File::with_options()
        .with_fapl(|p| p.file_locking(false))
        .create(path)
        .unwrap();
    let (_, h, w) = a.dim();
    file.new_dataset_builder()
        .with_data(a)
        .chunk((1, h, w))
        .create("lattice")
        .unwrap();
    if extra {
        let other = Array2::<f64>::from_shape_fn((5, 7), |(y, x)| (y * 7 + x) as f64 * 0.5);
        file.new_dataset_builder()
            .with_data(&other)
            .create("other")
            .unwrap();
    }
}

fn h5_u32_3d(path: &Path, name: &str) -> Array3<u32> {
    open_h5(path)
        .unwrap()
        .dataset(name)
        .unwrap()
        .read()
        .unwrap()
}

fn tempdir() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().to_owned();
    (d, path)
}

/// A stack in .npy and in .h5, labeled frame by frame, equals the BFS labeling of each frame;
/// the HDF5 output is chunked one frame per chunk and carries one summary row per frame.
#[test]
fn stacks_are_labeled_frame_by_frame() {
    let (_d, dir) = tempdir();
    let a = stack(5, 37, 53);
    let npy = dir.join("stack.npy");
    let h5 = dir.join("stack.h5");
    write_npy(&npy, &a).unwrap();
    write_h5_stack(&h5, &a, false);
    let (c, b) = (Connectivity::Eight, Boundary::Periodic);
    for input in [&npy, &h5] {
        let out_npy = dir.join("labels.npy");
        let out_h5 = dir.join("labels.h5");
        for out in [&out_npy, &out_h5] {
            assert_ok(&run(&[
                "label",
                p(input),
                "--frames",
                "all",
                "-c",
                "8",
                "-b",
                "periodic",
                "-q",
                "-o",
                p(out),
            ]));
        }
        let got_npy: Array3<u32> = read_npy(&out_npy).unwrap();
        let got_h5 = h5_u32_3d(&out_h5, "labels");
        for t in 0..5 {
            let want = oracle(a.index_axis(Axis(0), t), c, b);
            assert_eq!(got_npy.index_axis(Axis(0), t), want, "{input:?} frame {t}");
            assert_eq!(got_h5.index_axis(Axis(0), t), want, "{input:?} frame {t}");
        }
        let file = open_h5(&out_h5).unwrap();
        let ds = file.dataset("labels").unwrap();
        assert_eq!(ds.chunk().unwrap(), vec![1, 37, 53]);
        let clusters: Vec<u64> = file.dataset("frames/clusters").unwrap().read_raw().unwrap();
        let frames: Vec<u64> = file.dataset("frames/frame").unwrap().read_raw().unwrap();
        assert_eq!(frames, vec![0, 1, 2, 3, 4]);
        for (t, &n) in clusters.iter().enumerate() {
            let want = oracle(a.index_axis(Axis(0), t), c, b);
            assert_eq!(n, *want.iter().max().unwrap() as u64);
        }
        assert!(file.dataset("lattice").is_err(), "no /lattice for stacks");
    }

    // A range: frames 1..4, recorded as frame_start; JSON with one object per frame.
    let out = dir.join("part.h5");
    let o = run(&["label", p(&h5), "--frames", "1:4", "--json", "-o", p(&out)]);
    assert_ok(&o);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let frames = json["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 3);
    assert_eq!(json["frame_start"], 1);
    assert_eq!(json["frames_in_file"], 5);
    let got = h5_u32_3d(&out, "labels");
    for (i, t) in (1..4).enumerate() {
        let want = oracle(a.index_axis(Axis(0), t), Connectivity::Four, Boundary::Open);
        assert_eq!(got.index_axis(Axis(0), i), want);
        assert_eq!(frames[i]["frame"], t);
        assert_eq!(frames[i]["clusters"], *want.iter().max().unwrap());
    }
    let start: u64 = open_h5(&out)
        .unwrap()
        .dataset("labels")
        .unwrap()
        .attr("frame_start")
        .unwrap()
        .read_scalar()
        .unwrap();
    assert_eq!(start, 1);

    // One frame, K: the same as labeling that 2-D frame.
    let one = dir.join("one.npy");
    assert_ok(&run(&[
        "label",
        p(&npy),
        "--frames",
        "4",
        "-q",
        "-o",
        p(&one),
    ]));
    let got: Array3<u32> = read_npy(&one).unwrap();
    assert_eq!(got.dim(), (1, 37, 53));
    let want = oracle(a.index_axis(Axis(0), 4), Connectivity::Four, Boundary::Open);
    assert_eq!(got.index_axis(Axis(0), 0), want);
}

/// `analyze --frames`: the per-frame tables one after another with their frame, the summary per
/// frame, and the same clusters as the labels.
#[test]
fn stacks_are_analyzed_frame_by_frame() {
    let (_d, dir) = tempdir();
    let a = stack(3, 24, 31);
    let npy = dir.join("stack.npy");
    write_npy(&npy, &a).unwrap();
    let csv = dir.join("t.csv");
    let h5 = dir.join("t.h5");
    for out in [&csv, &h5] {
        assert_ok(&run(&[
            "analyze",
            p(&npy),
            "--frames",
            "all",
            "-q",
            "-o",
            p(out),
        ]));
    }
    let table = std::fs::read_to_string(&csv).unwrap();
    let mut lines = table.lines();
    assert!(lines.next().unwrap().starts_with("frame,label,size,"));
    let file = open_h5(&h5).unwrap();
    let frame_col: Vec<u64> = file.dataset("clusters/frame").unwrap().read_raw().unwrap();
    let size_col: Vec<u64> = file.dataset("clusters/size").unwrap().read_raw().unwrap();
    let labels = h5_u32_3d(&h5, "labels");
    let clusters: Vec<u64> = file.dataset("frames/clusters").unwrap().read_raw().unwrap();
    let mut rows = 0;
    assert_eq!(clusters.len(), 3);
    for (t, &count) in clusters.iter().enumerate() {
        let want = oracle(a.index_axis(Axis(0), t), Connectivity::Four, Boundary::Open);
        assert_eq!(labels.index_axis(Axis(0), t), want);
        let n = *want.iter().max().unwrap() as usize;
        assert_eq!(count, n as u64);
        let occupied = want.iter().filter(|&&l| l > 0).count() as u64;
        let sizes: u64 = size_col[rows..rows + n].iter().sum();
        assert_eq!(sizes, occupied, "frame {t}");
        assert!(frame_col[rows..rows + n].iter().all(|&f| f == t as u64));
        rows += n;
    }
    assert_eq!(frame_col.len(), rows);
    // The CSV's frames (each table filled into the last frame's) give the HDF5 tables' rows
    // (labeled frames, each table fresh): frame and size per row.
    let csv_rows: Vec<(u64, u64)> = lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect();
    let h5_rows: Vec<(u64, u64)> = frame_col.into_iter().zip(size_col).collect();
    assert_eq!(csv_rows, h5_rows);
}

/// A 3-D array without --frames is refused naming --frames; --frames needs a 3-D array; bad
/// and out-of-range selections are one-line errors.
#[test]
fn frames_are_checked() {
    let (_d, dir) = tempdir();
    let npy = dir.join("stack.npy");
    write_npy(&npy, &stack(4, 6, 7)).unwrap();
    let flat = dir.join("flat.npy");
    write_npy(&flat, &percolation(6, 7, 0.5, 1, 1)).unwrap();
    for cmd in ["label", "analyze"] {
        let o = run(&[cmd, p(&npy)]);
        assert_error(&o, "--frames");
        assert_error(&o, "(4, 6, 7)");
        assert_error(&run(&[cmd, p(&flat), "--frames", "all"]), "3-D");
        assert_error(&run(&[cmd, p(&npy), "--frames", "4"]), "4 frames");
        assert_error(&run(&[cmd, p(&npy), "--frames", "2:9"]), "4 frames");
    }
    for bad in ["5:2", "x", "1:2:3", "-1", "2:2"] {
        let o = run(&["label", p(&npy), "--frames", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", text(&o.stderr));
        assert!(text(&o.stderr).contains("frames"), "{}", text(&o.stderr));
    }
    for ok in ["all", "0", "3", "1:", ":2", "0:4"] {
        assert_ok(&run(&["label", p(&npy), "--frames", ok, "-q"]));
    }
}

/// The datasets of a file as (name, raw bytes as f64 or u8), for comparisons.
fn originals(path: &Path) -> (Vec<u8>, Vec<f64>) {
    let file = open_h5(path).unwrap();
    let lattice: Vec<u8> = file.dataset("lattice").unwrap().read_raw().unwrap();
    let other: Vec<f64> = file.dataset("other").unwrap().read_raw().unwrap();
    (lattice, other)
}

fn members(path: &Path) -> Vec<String> {
    let mut v = open_h5(path).unwrap().member_names().unwrap();
    v.sort();
    v
}

/// `--append` adds /labels to the input file, leaves its other datasets as they were, needs
/// --force to replace, and never replaces the lattice being read.
#[test]
fn append_adds_labels_to_the_input() {
    let (_d, dir) = tempdir();
    let a = stack(3, 20, 30);
    let h5 = dir.join("sim.h5");
    write_h5_stack(&h5, &a, true);
    let before = originals(&h5);
    assert_ok(&run(&[
        "label",
        p(&h5),
        "--frames",
        "all",
        "--append",
        "-q",
    ]));
    assert_eq!(originals(&h5), before);
    assert_eq!(members(&h5), vec!["labels", "lattice", "other"]);
    let got = h5_u32_3d(&h5, "labels");
    for t in 0..3 {
        let want = oracle(a.index_axis(Axis(0), t), Connectivity::Four, Boundary::Open);
        assert_eq!(got.index_axis(Axis(0), t), want);
    }
    let o = run(&["label", p(&h5), "--frames", "all", "--append", "-q"]);
    assert_error(&o, "--force");
    let o = run(&[
        "label",
        p(&h5),
        "--frames",
        "0",
        "--append",
        "--force",
        "-q",
        "-c",
        "8",
    ]);
    assert_ok(&o);
    let got = h5_u32_3d(&h5, "labels");
    assert_eq!(got.dim(), (1, 20, 30));
    let want = oracle(
        a.index_axis(Axis(0), 0),
        Connectivity::Eight,
        Boundary::Open,
    );
    assert_eq!(got.index_axis(Axis(0), 0), want);
    let o = run(&[
        "label",
        p(&h5),
        "--frames",
        "all",
        "--append",
        "--labels-dataset",
        "/lattice",
        "--force",
    ]);
    assert_error(&o, "lattice being read");
    assert_eq!(originals(&h5), before);
    // A 2-D lattice: /labels is its 2-D label image, with its cluster count.
    let flat = dir.join("flat.h5");
    let lattice = percolation(33, 21, 0.55, 1, 5);
    let file = hdf5::File::with_options()
        .with_fapl(|p| p.file_locking(false))
        .create(&flat)
        .unwrap();
    file.new_dataset_builder()
        .with_data(&lattice)
        .create("lattice")
        .unwrap();
    drop(file);
    assert_ok(&run(&["label", p(&flat), "--append", "-q"]));
    let file = open_h5(&flat).unwrap();
    let ds = file.dataset("labels").unwrap();
    let got: Array2<u32> = ds.read_2d().unwrap();
    let want = oracle(lattice.view(), Connectivity::Four, Boundary::Open);
    assert_eq!(got, want);
    let count: u64 = ds.attr("count").unwrap().read_scalar().unwrap();
    assert_eq!(count, *want.iter().max().unwrap() as u64);
    let back: Array2<u8> = file.dataset("lattice").unwrap().read_2d().unwrap();
    assert_eq!(back, lattice);
    // Not HDF5: refused before any work.
    let npy = dir.join("s.npy");
    write_npy(&npy, &a).unwrap();
    assert_error(
        &run(&["label", p(&npy), "--frames", "all", "--append"]),
        "HDF5",
    );
}

/// SIGKILL (and SIGTERM, SIGINT) in the middle of `label --append`: the file opens, its original datasets are
/// unchanged, and the next run removes the temporary dataset the killed run left.
#[cfg(unix)]
#[test]
fn append_survives_sigkill() {
    use std::process::Stdio;
    let (_d, dir) = tempdir();
    let h5 = dir.join("sim.h5");
    // 64 frames of 512²: long enough to be killed in the middle.
    write_h5_stack(&h5, &stack(64, 512, 512), true);
    let before = originals(&h5);
    let mut interrupted = 0;
    let mut temporaries_seen = 0;
    let plan = [
        (0u64, "KILL"),
        (5, "KILL"),
        (15, "TERM"),
        (30, "KILL"),
        (60, "INT"),
        (100, "KILL"),
    ];
    for (delay_ms, signal) in plan {
        let mut child = Command::new(env!("CARGO_BIN_EXE_clusterlab"))
            .args([
                "label",
                p(&h5),
                "--frames",
                "all",
                "--append",
                "--force",
                "-q",
            ])
            .env("HDF5_USE_FILE_LOCKING", "FALSE")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The run's temporary dataset appears (it is flushed before any frame is written):
        // from then on the run is writing label frames.
        let temp = format!(".clusterlab-tmp.{}.", child.id());
        let writing = || {
            open_h5(&h5)
                .and_then(|f| f.member_names())
                .is_ok_and(|names| names.iter().any(|n| n.starts_with(&temp)))
        };
        let start = std::time::Instant::now();
        while !writing() && start.elapsed().as_secs() < 60 {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status();
        let status = child.wait().unwrap();
        eprintln!("SIG{signal} after {delay_ms} ms: {status}");
        if !status.success() {
            interrupted += 1;
            match signal {
                "TERM" => assert_eq!(status.code(), Some(143)),
                "INT" => assert_eq!(status.code(), Some(130)),
                _ => {}
            }
        }
        // The file opens and its own datasets are whole, whatever the moment.
        assert_eq!(
            originals(&h5),
            before,
            "after a kill {delay_ms} ms into the write"
        );
        let names = members(&h5);
        assert!(names.contains(&"lattice".to_string()) && names.contains(&"other".to_string()));
        for n in &names {
            assert!(
                n == "lattice"
                    || n == "other"
                    || n == "labels"
                    || n.starts_with(".clusterlab-tmp."),
                "{names:?}"
            );
        }
        if names.iter().any(|n| n.starts_with(".clusterlab-tmp.")) {
            temporaries_seen += 1;
        }
        // The crate's own reader opens the file and reads the stack as it was.
        let mut reader = clusterlab::io::FrameReader::open(&h5, None).unwrap();
        assert_eq!((reader.len(), reader.dim()), (64, (512, 512)));
        let frame = reader.read(63).unwrap();
        assert_eq!(frame.dtype(), "uint8");
        if let Ok(file) = open_h5(&h5) {
            // A /labels there is always a whole stack.
            if let Ok(ds) = file.dataset("labels") {
                assert_eq!(ds.shape(), vec![64, 512, 512]);
            }
        }
    }
    // A temporary from an earlier kill is removed by the next run, so at most one is there.
    assert!(members(&h5).iter().filter(|n| n.starts_with('.')).count() <= 1);
    assert!(
        temporaries_seen > 0,
        "no run was killed in the middle of its write ({interrupted} killed)"
    );
    eprintln!("{interrupted} of 6 runs killed, {temporaries_seen} in the middle of the write");
    // The next run completes and removes what the killed runs left.
    assert_ok(&run(&[
        "label",
        p(&h5),
        "--frames",
        "0:2",
        "--append",
        "--force",
        "-q",
    ]));
    assert_eq!(members(&h5), vec!["labels", "lattice", "other"]);
    assert_eq!(originals(&h5), before);
    assert_eq!(h5_u32_3d(&h5, "labels").dim(), (2, 512, 512));
}

/// `analyze --ns`: every size with its count (Σ s·count = occupied sites), log bins covering
/// the same clusters, standard errors only over several frames.
#[test]
fn ns_numbers() {
    let (_d, dir) = tempdir();
    let lattice = percolation(64, 64, 0.59, 1, 3);
    let npy = dir.join("l.npy");
    write_npy(&npy, &lattice).unwrap();
    let ns = dir.join("ns.csv");
    assert_ok(&run(&["analyze", p(&npy), "-q", "--ns", p(&ns)]));
    let occupied = lattice.iter().filter(|&&v| v > 0).count() as u64;
    let clusters = *oracle(lattice.view(), Connectivity::Four, Boundary::Open)
        .iter()
        .max()
        .unwrap() as u64;
    let table = std::fs::read_to_string(&ns).unwrap();
    let mut lines = table.lines();
    assert_eq!(
        lines.next().unwrap(),
        "binning,s_min,s_max,s,count,n_s,stderr"
    );
    let (mut mass, mut counted, mut binned) = (0u64, 0u64, 0u64);
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        let (s, count): (u64, u64) = (f[1].parse().unwrap(), f[4].parse().unwrap());
        let n_s: f64 = f[5].parse().unwrap();
        assert_eq!(f[6], "", "no standard error for one lattice: {line}");
        match f[0] {
            "none" => {
                mass += s * count;
                counted += count;
                assert!((n_s - count as f64 / 4096.0).abs() < 1e-15);
            }
            "log" => binned += count,
            other => panic!("binning {other}"),
        }
    }
    assert_eq!(mass, occupied);
    assert_eq!(counted, clusters);
    assert_eq!(binned, clusters);

    // Several frames: HDF5 groups, standard errors present.
    let stack_path = dir.join("stack.npy");
    let a = stack(4, 32, 32);
    write_npy(&stack_path, &a).unwrap();
    let ns_h5 = dir.join("ns.h5");
    assert_ok(&run(&[
        "analyze",
        p(&stack_path),
        "--frames",
        "all",
        "-q",
        "--ns",
        p(&ns_h5),
        "--bins-per-decade",
        "3",
    ]));
    let file = open_h5(&ns_h5).unwrap();
    let s: Vec<u64> = file.dataset("ns/s").unwrap().read_raw().unwrap();
    let count: Vec<u64> = file.dataset("ns/count").unwrap().read_raw().unwrap();
    let se: Vec<f64> = file.dataset("ns_log/stderr").unwrap().read_raw().unwrap();
    let occupied = a.iter().filter(|&&v| v > 0).count() as u64;
    assert_eq!(
        s.iter().zip(&count).map(|(s, c)| s * c).sum::<u64>(),
        occupied
    );
    assert!(se.iter().all(|v| v.is_finite() && *v >= 0.0), "{se:?}");
    // A bad extension is refused before any work.
    assert_error(
        &run(&["analyze", p(&npy), "--ns", p(&dir.join("ns.txt"))]),
        "--ns",
    );
}

/// `plot --data`: the numbers behind the n_s chart (one row per point, the counts adding up to
/// the clusters the JSON summary reports) and behind the label image (one row per cluster).
#[cfg(feature = "plot")]
#[test]
fn plot_data_and_json() {
    let (_d, dir) = tempdir();
    let data = dir.join("ns.csv");
    let o = run(&[
        "plot",
        "--size",
        "64",
        "--p",
        "0.59",
        "--samples",
        "3",
        "-o",
        p(&dir.join("ns.png")),
        "--data",
        p(&data),
        "--json",
    ]);
    assert_ok(&o);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["command"], "plot");
    assert_eq!(json["kind"], "sizes");
    let table = std::fs::read_to_string(&data).unwrap();
    let mut lines = table.lines();
    assert_eq!(lines.next().unwrap(), "chart,s_min,s_max,s,count,n_s,guide");
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len() as u64, json["points"].as_u64().unwrap());
    let clusters: u64 = rows.iter().map(|r| r[4].parse::<u64>().unwrap()).sum();
    assert_eq!(clusters, json["clusters"].as_u64().unwrap());
    assert!(rows
        .iter()
        .all(|r| r[0] == "sizes" && r[6].parse::<f64>().is_ok()));

    let lattice = percolation(30, 40, 0.5, 1, 9);
    let npy = dir.join("l.npy");
    write_npy(&npy, &lattice).unwrap();
    let data = dir.join("labels.csv");
    let o = run(&[
        "plot",
        p(&npy),
        "--kind",
        "labels",
        "-o",
        p(&dir.join("l.png")),
        "--data",
        p(&data),
        "--json",
    ]);
    assert_ok(&o);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let want = oracle(lattice.view(), Connectivity::Four, Boundary::Open);
    assert_eq!(json["clusters"], *want.iter().max().unwrap());
    let table = std::fs::read_to_string(&data).unwrap();
    assert!(table.starts_with("chart,label,size,r,g,b\n"));
    let sizes: u64 = table
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(2).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(sizes, want.iter().filter(|&&l| l > 0).count() as u64);
    assert_error(
        &run(&["plot", p(&npy), "--data", p(&dir.join("x.txt"))]),
        "--data",
    );
}

/// A Fortran-order .npy stack has no contiguous frames: refused with what to do.
#[test]
fn fortran_order_stacks_are_refused() {
    use ndarray::ShapeBuilder;
    let (_d, dir) = tempdir();
    let a = stack(3, 5, 6);
    let mut f = Array3::<u8>::zeros((3, 5, 6).f());
    f.assign(&a);
    let npy = dir.join("f.npy");
    write_npy(&npy, &f).unwrap();
    assert_error(
        &run(&["label", p(&npy), "--frames", "all"]),
        "ascontiguousarray",
    );
}

/// One default backend for the command line: auto, on label and analyze alike.
#[test]
fn backend_default_is_auto_everywhere() {
    for cmd in ["label", "analyze"] {
        let help = text(&run(&[cmd, "--help"]).stdout);
        assert!(
            help.contains("auto (the default of every subcommand"),
            "{cmd} --help:\n{help}"
        );
        assert!(help.contains("[default: auto]"), "{cmd} --help:\n{help}");
    }
}

/// Frames are converted as 2-D lattices are: int16 frames are narrowed, and a negative value is
/// refused naming its frame.
#[test]
fn frames_are_converted_one_by_one() {
    let (_d, dir) = tempdir();
    let a = stack(3, 9, 11);
    let mut wide = a.mapv(|v| i16::from(v) * 300);
    let npy = dir.join("wide.npy");
    write_npy(&npy, &wide).unwrap();
    let out = dir.join("l.npy");
    assert_ok(&run(&[
        "label",
        p(&npy),
        "--frames",
        "all",
        "-q",
        "-o",
        p(&out),
    ]));
    let got: Array3<u32> = read_npy(&out).unwrap();
    for t in 0..3 {
        let want = oracle(a.index_axis(Axis(0), t), Connectivity::Four, Boundary::Open);
        assert_eq!(got.index_axis(Axis(0), t), want);
    }
    wide[[2, 4, 5]] = -7;
    write_npy(&npy, &wide).unwrap();
    let o = run(&["label", p(&npy), "--frames", "all", "-o", p(&out)]);
    assert_error(&o, "frame 2");
    assert_error(&o, "-7");
}
