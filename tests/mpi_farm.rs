//! MPI sample farms (feature `mpi`): `clusterlab percolation run` and `clusterlab mc run` under
//! `mpirun -np 1, 2, 4` (oversubscribed on a small machine) write the file one process writes
//! with the same seed, bit for bit (every dataset and attribute but `command`), and a farm
//! killed partway and resumed with another number of ranks ends with that file too.
//!
//! Needs Open MPI's `mpirun` on the PATH (`scripts/setup-mpi.sh`).
#![cfg(feature = "mpi")]

use hdf5::types::{FloatSize, TypeDescriptor, VarLenUnicode};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_clusterlab");

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// `mpirun -np N clusterlab ARGS`: allowed as root (CI), oversubscribed (2 cores, 4 ranks),
/// shared-memory transport without the single-copy mechanism containers often forbid.
fn mpirun(np: usize, args: &[&str]) -> Command {
    let mut c = Command::new("mpirun");
    c.args([
        "--oversubscribe",
        "--bind-to",
        "none",
        "-np",
        &np.to_string(),
        BIN,
    ])
    .args(args)
    .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
    .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none");
    c
}

/// The same binary as one process (no launcher: no farm).
fn single(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args);
    c
}

fn ok(mut c: Command) -> Output {
    let out = c
        .output()
        .expect("the command starts (is mpirun installed?)");
    assert!(
        out.status.success(),
        "{c:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every value of an attribute or dataset as comparable words: integers as they are, floats
/// by their bits, text as bytes.
fn words(
    dtype: TypeDescriptor,
    read: &dyn Fn(&TypeDescriptor) -> hdf5::Result<Vec<u64>>,
) -> Vec<u64> {
    read(&dtype).unwrap_or_else(|e| panic!("cannot read a {dtype:?}: {e}"))
}

fn attr_words(a: &hdf5::Attribute) -> Vec<u64> {
    words(a.dtype().unwrap().to_descriptor().unwrap(), &|d| match d {
        TypeDescriptor::Float(FloatSize::U8) | TypeDescriptor::Float(FloatSize::U4) => {
            Ok(a.read_raw::<f64>()?.iter().map(|v| v.to_bits()).collect())
        }
        TypeDescriptor::VarLenUnicode => Ok(a
            .read_raw::<VarLenUnicode>()?
            .iter()
            .flat_map(|t| t.as_str().bytes().map(u64::from))
            .collect()),
        _ => a.read_raw::<u64>(),
    })
}

fn dataset_words(d: &hdf5::Dataset) -> Vec<u64> {
    words(d.dtype().unwrap().to_descriptor().unwrap(), &|t| match t {
        TypeDescriptor::Float(_) => Ok(d.read_raw::<f64>()?.iter().map(|v| v.to_bits()).collect()),
        _ => d.read_raw::<u64>(),
    })
}

/// Every attribute (but the root's `command`) and dataset of `a`'s tree, by path, with its shape
/// and words.
fn contents(g: &hdf5::Group, out: &mut Vec<(String, Vec<usize>, Vec<u64>)>) {
    let mut names = g.attr_names().unwrap();
    names.sort();
    for n in names {
        if g.name() == "/" && n == "command" {
            continue;
        }
        let a = g.attr(&n).unwrap();
        out.push((format!("{}@{n}", g.name()), a.shape(), attr_words(&a)));
    }
    let mut datasets = g.datasets().unwrap();
    datasets.sort_by_key(|d| d.name());
    for d in datasets {
        let mut names = d.attr_names().unwrap();
        names.sort();
        for n in names {
            let a = d.attr(&n).unwrap();
            out.push((format!("{}@{n}", d.name()), a.shape(), attr_words(&a)));
        }
        out.push((d.name(), d.shape(), dataset_words(&d)));
    }
    let mut groups = g.groups().unwrap();
    groups.sort_by_key(|g| g.name());
    for sub in groups {
        contents(&sub, out);
    }
}

fn file_contents(path: &Path) -> Vec<(String, Vec<usize>, Vec<u64>)> {
    let f = hdf5::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    contents(&f, &mut out);
    out
}

/// `a` and `b` hold the same datasets and attributes bit for bit (`command` aside).
fn assert_same_file(a: &Path, b: &Path) {
    let (x, y) = (file_contents(a), file_contents(b));
    assert!(x.len() > 5, "{} holds almost nothing", a.display());
    let names =
        |v: &[(String, Vec<usize>, Vec<u64>)]| v.iter().map(|e| e.0.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&x),
        names(&y),
        "{} and {} differ in layout",
        a.display(),
        b.display()
    );
    for (p, q) in x.iter().zip(&y) {
        assert_eq!(
            p,
            q,
            "{} differs between {} and {}",
            p.0,
            a.display(),
            b.display()
        );
    }
}

const NEWMAN_ZIFF: &[&str] = &[
    "percolation",
    "run",
    "--model",
    "site",
    "--sizes",
    "8,12x6",
    "--samples",
    "150",
    "--seed",
    "11",
    "-j",
    "1",
    "--checkpoint-every",
    "0",
];

const BOND_OPEN: &[&str] = &[
    "percolation",
    "run",
    "--model",
    "bond",
    "--boundary",
    "open",
    "--sizes",
    "7",
    "--samples",
    "90",
    "--seed",
    "3",
    "-j",
    "2",
];

const FIXED_P: &[&str] = &[
    "percolation",
    "run",
    "--model",
    "site",
    "-c",
    "8",
    "--method",
    "fixed-p",
    "--backend",
    "cpu",
    "--p",
    "0.38:0.44:0.02",
    "--sizes",
    "8,10",
    "--samples",
    "200",
    "--seed",
    "7",
    "-j",
    "1",
];

fn with_output<'a>(args: &[&'a str], output: &'a Path) -> Vec<&'a str> {
    let mut v = args.to_vec();
    v.extend(["--output", s(output)]);
    v
}

/// A study on 1, 2 and 4 ranks is the one-process study.
fn same_on_1_2_4_ranks(args: &[&str]) {
    let dir = tempdir();
    let one = dir.path().join("one.h5");
    ok(single(&with_output(args, &one)));
    for np in [1, 2, 4] {
        let farmed = dir.path().join(format!("np{np}.h5"));
        let out = ok(mpirun(np, &with_output(args, &farmed)));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("× {np} MPI ranks")),
            "not a farm of {np}: {err}"
        );
        assert_same_file(&one, &farmed);
    }
}

#[test]
fn newman_ziff_study_on_1_2_4_ranks() {
    same_on_1_2_4_ranks(NEWMAN_ZIFF);
}

#[test]
fn bond_study_with_threads_on_1_2_4_ranks() {
    same_on_1_2_4_ranks(BOND_OPEN);
}

#[test]
fn fixed_p_study_on_1_2_4_ranks() {
    same_on_1_2_4_ranks(FIXED_P);
}

/// Three temperatures: on 4 ranks one rank has no chain.
const MC_SW: &[&str] = &[
    "mc",
    "run",
    "--model",
    "ising",
    "--size",
    "12",
    "--height",
    "10",
    "--temperature",
    "2.0,2.3,2.6",
    "--sweeps",
    "120",
    "--thermalize",
    "30",
    "--algorithm",
    "sw",
    "--seed",
    "5",
    "--backend",
    "cpu",
    "--checkpoint-every",
    "25",
    "--every",
    "2",
    "--quiet",
];

const MC_WOLFF: &[&str] = &[
    "mc",
    "run",
    "--model",
    "potts",
    "--q",
    "3",
    "--size",
    "10",
    "--temperature",
    "0.9,1.0,1.1,1.2,1.3",
    "--sweeps",
    "80",
    "--thermalize",
    "10",
    "--algorithm",
    "wolff",
    "--seed",
    "9",
    "--checkpoint-every",
    "30",
    "--quiet",
];

fn mc_same_on_1_2_4_ranks(args: &[&str]) {
    let dir = tempdir();
    let one = dir.path().join("one.h5");
    ok(single(&with_output(args, &one)));
    for np in [1, 2, 4] {
        let farmed = dir.path().join(format!("np{np}.h5"));
        ok(mpirun(np, &with_output(args, &farmed)));
        assert_same_file(&one, &farmed);
        // The checkpoint too: spins and counters of every chain.
        let ckpt = |p: &Path| PathBuf::from(format!("{}.checkpoint", p.display()));
        assert_same_file(&ckpt(&one), &ckpt(&farmed));
    }
}

#[test]
fn mc_swendsen_wang_run_on_1_2_4_ranks() {
    mc_same_on_1_2_4_ranks(MC_SW);
}

#[test]
fn mc_wolff_potts_run_on_1_2_4_ranks() {
    mc_same_on_1_2_4_ranks(MC_WOLFF);
}

/// Starts `c`, waits until `ready` holds (polling), then stops the whole farm with SIGTERM
/// through `mpirun`, which forwards it to every rank.
fn interrupt(mut c: Command, ready: impl Fn() -> bool) {
    let mut child: Child = c
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !ready() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the farm ended before it could be interrupted"
        );
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no checkpoint came"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let status = child.wait().unwrap();
    assert!(
        !status.success(),
        "the farm finished before the signal: {status}"
    );
}

fn study_samples(path: &Path) -> Option<u64> {
    let study = clusterlab::percolation::read_study(path).ok()?;
    Some(study.sums.iter().map(|s| s.samples).sum())
}

/// Killed on 2 ranks after a few checkpoints, resumed on 4 (and then on 1 to a larger total):
/// the one-process study of the same total.
#[test]
fn killed_study_resumes_on_other_rank_counts() {
    let dir = tempdir();
    let path = dir.path().join("farm.h5");
    let args = |n: &'static str| -> Vec<&'static str> {
        vec![
            "percolation",
            "run",
            "--model",
            "site",
            "--sizes",
            "24",
            "--samples",
            n,
            "--seed",
            "21",
            "-j",
            "1",
        ]
    };
    // Checkpoint after every round of samples: the kill lands between many checkpoints.
    let mut first = args("1500");
    first.extend(["--checkpoint-every", "0", "--output", s(&path)]);
    interrupt(mpirun(2, &first), || {
        study_samples(&path).is_some_and(|n| n >= 20)
    });
    let done = study_samples(&path).expect("a valid study after the kill");
    assert!(
        done < 1500,
        "the study was complete before the kill ({done} samples)"
    );
    let mut resume = args("1500");
    resume.extend(["--resume", "--output", s(&path)]);
    ok(mpirun(4, &resume));
    let one = dir.path().join("one.h5");
    ok(single(&with_output(&args("1500"), &one)));
    assert_same_file(&one, &path);
    // More samples later, in one process this time.
    let mut more = args("1700");
    more.extend(["--resume", "--output", s(&path)]);
    ok(single(&more));
    let one_more = dir.path().join("one_more.h5");
    ok(single(&with_output(&args("1700"), &one_more)));
    assert_same_file(&one_more, &path);
}

/// A Monte Carlo farm killed on 4 ranks after some blocks, resumed on 2: the one-process run.
#[test]
fn killed_mc_run_resumes_on_other_rank_counts() {
    let dir = tempdir();
    let path = dir.path().join("farm.h5");
    let ckpt = PathBuf::from(format!("{}.checkpoint", path.display()));
    let args: Vec<&str> = vec![
        "mc",
        "run",
        "--model",
        "ising",
        "--size",
        "16",
        "--temperature",
        "1.8,2.1,2.27,2.5",
        "--sweeps",
        "3000",
        "--thermalize",
        "100",
        "--algorithm",
        "metropolis",
        "--seed",
        "4",
        "--backend",
        "cpu",
        "--checkpoint-every",
        "10",
        "--quiet",
    ];
    // The checkpoint (written whole and renamed; the run file stays open while the run goes).
    let rows = || -> u64 {
        let read = || {
            hdf5::File::open(&ckpt)?
                .group("chain_000")?
                .attr("rows")?
                .read_scalar()
        };
        read().unwrap_or(0)
    };
    interrupt(mpirun(4, &with_output(&args, &path)), || rows() >= 100);
    assert!(rows() < 3000, "the run was complete before the kill");
    let mut resume = with_output(&args, &path);
    resume.push("--resume");
    ok(mpirun(2, &resume));
    let one = dir.path().join("one.h5");
    ok(single(&with_output(&args, &one)));
    assert_same_file(&one, &path);
}

/// An error on one rank of a farm (here rank 0's: the output exists) ends the whole job with a
/// message instead of leaving the other ranks waiting, and touches no file.
#[test]
fn errors_end_the_whole_farm() {
    let dir = tempdir();
    let path = dir.path().join("x.h5");
    std::fs::write(&path, b"not a study").unwrap();
    let out = mpirun(3, &with_output(NEWMAN_ZIFF, &path))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("exists"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), b"not a study");
}
