//! `io::NpyOutput`: labels written in place into a `.npy` file equal, byte for byte, the file
//! `io::write_labels` writes from the same labels in memory; the parallel `sizes` equal a count.

use clusterlab::generate::percolation;
use clusterlab::io::{self, LabelMeta, NpyOutput};
use clusterlab::{Boundary, Connectivity, LabelValue, Labeler};
use ndarray::Array2;

fn check<L: LabelValue>(lattice: &Array2<u8>, labeler: &mut Labeler, map: bool) {
    let dir = tempfile::tempdir().unwrap();
    let mapped = dir.path().join("mapped.npy");
    let plain = dir.path().join("plain.npy");
    let mut out = if map {
        NpyOutput::<L>::create(&mapped, lattice.dim()).unwrap()
    } else {
        NpyOutput::<L>::in_memory(&mapped, lattice.dim()).unwrap()
    };
    // Linux filesystems reserve the blocks (ext4, xfs, tmpfs), so the file is mapped there.
    let sites = lattice.len();
    assert_eq!(
        out.is_mapped(),
        map && sites > 0 && cfg!(target_os = "linux")
    );
    // Nothing at the destination until `finish`.
    assert!(!mapped.exists());
    let count = labeler.label_into(lattice.view(), out.view_mut()).unwrap();

    let mut expected = Array2::<L>::default(lattice.dim());
    let n = labeler
        .label_into(lattice.view(), expected.view_mut())
        .unwrap();
    assert_eq!(n, count);
    assert_eq!(out.view(), expected.view());
    let mut sizes = vec![0u64; count + 1];
    for &l in expected.iter() {
        sizes[l.into() as usize] += 1;
    }
    assert_eq!(out.sizes(count).unwrap(), sizes);
    if count > 0 {
        assert!(out.sizes(count - 1).is_err());
    }
    out.finish().unwrap();

    let reference = labeler.label64(lattice.view()).unwrap();
    if L::DTYPE == "uint64" {
        io::write_labels(&plain, &reference, &LabelMeta::default(), None).unwrap();
    } else {
        let r32 = labeler.label(lattice.view()).unwrap();
        io::write_labels(&plain, &r32, &LabelMeta::default(), None).unwrap();
    }
    assert_eq!(
        std::fs::read(&mapped).unwrap(),
        std::fs::read(&plain).unwrap(),
        "{:?} {}",
        lattice.dim(),
        L::DTYPE
    );
    // Only the two outputs are left in the folder: no temporary.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}

#[test]
fn in_place_file_equals_written_file() {
    let shapes = [
        (0, 0),
        (0, 7),
        (5, 0),
        (1, 1),
        (3, 64),
        (17, 65),
        (129, 31),
        (300, 257),
        // Over a MiB of sites: `sizes` counts in parallel.
        (1100, 1031),
    ];
    for (i, &(h, w)) in shapes.iter().enumerate() {
        for (conn, boundary) in [
            (Connectivity::Four, Boundary::Open),
            (Connectivity::Eight, Boundary::Periodic),
        ] {
            let lattice = percolation(h, w, 0.55, 1, i as u32 + 1);
            let mut labeler = Labeler::new(conn, boundary);
            for map in [true, false] {
                check::<u32>(&lattice, &mut labeler, map);
                check::<u64>(&lattice, &mut labeler, map);
            }
        }
    }
}

#[test]
fn unfinished_output_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("labels.npy");
    std::fs::write(&path, b"old").unwrap();
    {
        let mut out = NpyOutput::<u32>::create(&path, (40, 50)).unwrap();
        out.view_mut().fill(7);
    }
    assert_eq!(std::fs::read(&path).unwrap(), b"old");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn too_many_sites_is_refused_before_any_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("labels.npy");
    let err = NpyOutput::<u32>::create(&path, (1 << 20, 1 << 20))
        .err()
        .unwrap();
    assert!(
        matches!(err, clusterlab::Error::TooManySites { .. }),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn sizes_in_parallel_equal_a_plain_count() {
    // Granular blocks and a percolating lattice: big and small clusters, in a pool of 3.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    for (p, grain, seed) in [(0.3, 1, 1u32), (0.6, 1, 2), (0.6, 8, 4), (0.9, 1, 3)] {
        let lattice = percolation(1200, 1000, p, grain, seed);
        let labels = clusterlab::label(lattice.view(), Connectivity::Four, Boundary::Open).unwrap();
        let mut plain = vec![0u64; labels.count() + 1];
        for &l in labels.array().iter() {
            plain[l as usize] += 1;
        }
        assert_eq!(pool.install(|| labels.sizes()), plain);
    }
}
