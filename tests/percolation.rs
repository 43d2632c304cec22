//! Percolation study files: a study interrupted at a checkpoint and resumed from its file ends
//! with the same sums and estimates as one run without a break; disjoint studies merge to the
//! sums of both; overlapping ones are refused; a bad file is a typed error.
#![cfg(feature = "hdf5")]

use clusterlab::percolation::{merge_files, read_study, write_study, Model, Study, StudyConfig};
use clusterlab::{Boundary, Connectivity, Error, Options, Parallelism};
use std::time::Duration;

fn config(seed: u64, samples: u64) -> StudyConfig {
    let model = Model::Site(Connectivity::Four);
    StudyConfig {
        model,
        boundary: Boundary::Periodic,
        sizes: vec![(8, 8), (12, 12)],
        samples,
        seed,
        p_grid: vec![0.55, 0.59, 0.6, 0.65],
        command: "test".into(),
        method: Default::default(),
    }
}

fn options(threads: usize) -> Options {
    Options::default().parallelism(Parallelism::Threads(threads))
}

#[test]
fn resumed_study_equals_an_uninterrupted_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("study.h5");
    let mut whole = Study::new(config(3, 40)).unwrap();
    whole
        .run(&options(2), Duration::ZERO, |_, _| Ok(()))
        .unwrap();

    // Interrupted after its third checkpoint (batches of one round of threads).
    let mut part = Study::new(config(3, 40)).unwrap();
    let mut calls = 0;
    let err = part
        .run(&options(3), Duration::ZERO, |s, _| {
            write_study(&path, s, None)?;
            calls += 1;
            if calls == 3 {
                Err(Error::InvalidArgument("killed".into()))
            } else {
                Ok(())
            }
        })
        .unwrap_err();
    assert!(err.to_string().contains("killed"));
    let mut resumed = read_study(&path).unwrap();
    assert_eq!(resumed.sums[0].samples, 9);
    assert!(resumed.remaining() > 0);
    resumed
        .run(&options(1), Duration::ZERO, |_, _| Ok(()))
        .unwrap();
    assert_eq!(resumed, whole);
    assert_eq!(resumed.results().unwrap(), whole.results().unwrap());

    // The file with results reads back to the same study.
    let results = whole.results().unwrap();
    write_study(&path, &whole, Some(&results)).unwrap();
    assert_eq!(read_study(&path).unwrap(), whole);
}

#[test]
fn disjoint_studies_merge_and_overlapping_ones_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, c, out) = (
        dir.path().join("a.h5"),
        dir.path().join("b.h5"),
        dir.path().join("c.h5"),
        dir.path().join("all.h5"),
    );
    let mut sa = Study::new(config(1, 10)).unwrap();
    sa.run(&options(2), Duration::ZERO, |_, _| Ok(())).unwrap();
    let mut sb = Study::new(config(2, 15)).unwrap();
    sb.run(&options(2), Duration::ZERO, |_, _| Ok(())).unwrap();
    write_study(&a, &sa, None).unwrap();
    write_study(&b, &sb, None).unwrap();
    let merged = merge_files(&a, &b, &out).unwrap();
    for k in 0..2 {
        let mut expect = sa.sums[k].clone();
        expect.merge(&sb.sums[k]).unwrap();
        assert_eq!(merged.sums[k], expect);
        assert_eq!(merged.sums[k].samples, 25);
    }
    assert_eq!(read_study(&out).unwrap().sums, merged.sums);

    // Same seed, overlapping samples: refused, and no output written.
    let mut sc = Study::new(config(1, 5)).unwrap();
    sc.run(&options(1), Duration::ZERO, |_, _| Ok(())).unwrap();
    write_study(&c, &sc, None).unwrap();
    let bad = dir.path().join("bad.h5");
    let err = merge_files(&a, &c, &bad).unwrap_err();
    assert!(err.to_string().contains("overlap"), "{err}");
    assert!(!bad.exists());

    // Another model: refused.
    let mut other = config(9, 3);
    other.model = Model::Bond;
    let mut so = Study::new(other).unwrap();
    so.run(&options(1), Duration::ZERO, |_, _| Ok(())).unwrap();
    write_study(&c, &so, None).unwrap();
    assert!(matches!(
        merge_files(&a, &c, &bad),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn bad_study_files_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.h5");
    assert!(matches!(read_study(&missing), Err(Error::Io { .. })));
    let junk = dir.path().join("junk.h5");
    std::fs::write(&junk, b"not hdf5").unwrap();
    assert!(read_study(&junk).is_err());
}

#[test]
fn bad_settings_are_refused_before_work() {
    let mut c = config(1, 10);
    c.p_grid = vec![1.5];
    assert!(Study::new(c).is_err());
    let mut c = config(1, 0);
    c.samples = 0;
    assert!(Study::new(c).is_err());
    let mut c = config(1, 10);
    c.sizes = vec![(0, 4)];
    assert!(Study::new(c).is_err());
    let mut s = Study::new(config(1, 10)).unwrap();
    let cuda = Options::default().backend(clusterlab::Backend::Cuda { device: 0 });
    let err = s.run(&cuda, Duration::ZERO, |_, _| Ok(())).unwrap_err();
    assert!(err.to_string().contains("not yet implemented"), "{err}");
}
