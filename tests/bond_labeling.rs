//! Bond-masked labeling against an independent oracle: a breadth-first search over an explicit
//! edge list built from the masks here, on random bond configurations of many shapes (1×1, 1×N,
//! N×1, two-wide tori, widths around 64), bond densities 0…1 including p = 1/2, every boundary,
//! every CPU algorithm and several thread counts, and the CUDA backend (the same test body, on
//! shapes that also cross its 32 × 32 tiles); both numberings (canonical and roots), both
//! inputs (`u8` masks and bit-packed).

use clusterlab::{
    Algorithm, Backend, Boundary, Connectivity, Error, Labeler, Options, PackedBonds, Parallelism,
};
use ndarray::Array2;
use rand_mt::Mt64;
use std::collections::VecDeque;

const BOUNDARIES: [Boundary; 4] = [
    Boundary::Open,
    Boundary::Periodic,
    Boundary::PeriodicX,
    Boundary::PeriodicY,
];

/// Canonical labels and cluster count by BFS over the bonds' edges.
fn oracle(right: &Array2<u8>, down: &Array2<u8>, b: Boundary) -> (Array2<u32>, usize) {
    let (h, w) = right.dim();
    let mut adj = vec![Vec::new(); h * w];
    for y in 0..h {
        for x in 0..w {
            let s = y * w + x;
            if right[[y, x]] != 0 && (x + 1 < w || b.wraps_x()) {
                let t = y * w + (x + 1) % w;
                adj[s].push(t);
                adj[t].push(s);
            }
            if down[[y, x]] != 0 && (y + 1 < h || b.wraps_y()) {
                let t = ((y + 1) % h) * w + x;
                adj[s].push(t);
                adj[t].push(s);
            }
        }
    }
    let mut lab = vec![0u32; h * w];
    let mut n = 0;
    let mut q = VecDeque::new();
    for s in 0..h * w {
        if lab[s] != 0 {
            continue;
        }
        n += 1;
        lab[s] = n;
        q.push_back(s);
        while let Some(u) = q.pop_front() {
            for &v in &adj[u] {
                if lab[v] == 0 {
                    lab[v] = n;
                    q.push_back(v);
                }
            }
        }
    }
    (Array2::from_shape_vec((h, w), lab).unwrap(), n as usize)
}

/// Roots (smallest site index per cluster) from canonical labels.
fn roots_of(labels: &Array2<u32>, n: usize) -> Array2<u32> {
    let mut first = vec![u32::MAX; n + 1];
    for (i, &l) in labels.iter().enumerate() {
        first[l as usize] = first[l as usize].min(i as u32);
    }
    labels.mapv(|l| first[l as usize])
}

fn random_mask(rng: &mut Mt64, h: usize, w: usize, p: f64) -> Array2<u8> {
    Array2::from_shape_fn((h, w), |_| {
        ((rng.next_u64() as f64 / u64::MAX as f64) < p) as u8
    })
}

const SHAPES: [(usize, usize); 16] = [
    (1, 1),
    (1, 2),
    (2, 1),
    (2, 2),
    (1, 70),
    (70, 1),
    (3, 5),
    (2, 64),
    (5, 63),
    (6, 64),
    (4, 65),
    (7, 127),
    (3, 128),
    (17, 129),
    (40, 31),
    (48, 100),
];
const DENSITIES: [f64; 8] = [0.0, 0.1, 0.3, 0.45, 0.5, 0.55, 0.8, 1.0];

/// Shapes over several of the GPU's 32 × 32 tiles, with partial tiles on both axes.
const TILED_SHAPES: [(usize, usize); 6] =
    [(32, 32), (33, 31), (64, 96), (65, 97), (100, 33), (31, 200)];

fn check(algorithm: Algorithm, parallelism: Parallelism, seed: u64) -> usize {
    let what = format!("{algorithm:?} {parallelism:?}");
    let make = |b| {
        Labeler::new(Connectivity::Four, b)
            .algorithm(algorithm)
            .parallelism(parallelism)
    };
    check_with(make, &what, seed, &SHAPES)
}

/// The test body every backend runs: random bonds at every density and boundary against the
/// oracle, through `u8` masks, packed bonds and root numbering.
fn check_with(
    make: impl Fn(Boundary) -> Labeler,
    name: &str,
    seed: u64,
    shapes: &[(usize, usize)],
) -> usize {
    let mut rng = Mt64::new(seed);
    let mut cases = 0;
    for &b in &BOUNDARIES {
        let mut labeler = make(b);
        for &(h, w) in shapes {
            for &p in &DENSITIES {
                for _ in 0..2 {
                    let right = random_mask(&mut rng, h, w, p);
                    let down = random_mask(&mut rng, h, w, p);
                    let (want, n) = oracle(&right, &down, b);
                    let what = format!("{name} {b:?} {h}x{w} p={p}");
                    let got = labeler.label_bonds(right.view(), down.view()).unwrap();
                    assert_eq!(got.count(), n, "{what}");
                    assert_eq!(got.array(), &want, "{what}");
                    let packed = PackedBonds::from_masks(right.view(), down.view()).unwrap();
                    let mut out = Array2::zeros((h, w));
                    let m = labeler
                        .label_packed_bonds_into(&packed, out.view_mut())
                        .unwrap();
                    assert_eq!((m, &out), (n, &want), "packed {what}");
                    let m = labeler.bond_roots_into(&packed, out.view_mut()).unwrap();
                    assert_eq!((m, &out), (n, &roots_of(&want, n)), "roots {what}");
                    cases += 1;
                }
            }
        }
    }
    cases
}

#[test]
fn strips_match_the_oracle() {
    assert!(check(Algorithm::Strips, Parallelism::Sequential, 1) > 1000);
    check(Algorithm::Strips, Parallelism::Threads(3), 2);
}

/// The CUDA backend through the same body, on the CPU test's shapes and on shapes across tiles.
#[test]
#[ignore = "needs a CUDA device"]
fn cuda_matches_the_oracle() {
    let make = |b| {
        Labeler::with_options(
            Options::new(Connectivity::Four, b).backend(Backend::Cuda { device: 0 }),
        )
        .unwrap()
    };
    let shapes: Vec<_> = SHAPES.iter().chain(&TILED_SHAPES).copied().collect();
    assert!(check_with(make, "cuda", 7, &shapes) > 1000);
    // Large lattices at bond p_c, many tiles and long cross-tile chains.
    let mut rng = Mt64::new(8);
    for &b in &BOUNDARIES {
        let mut gpu = make(b);
        let mut cpu = Labeler::new(Connectivity::Four, b);
        for &(h, w) in &[(1000, 999), (513, 2049)] {
            for &p in &[0.45, 0.5, 0.55] {
                let right = random_mask(&mut rng, h, w, p);
                let down = random_mask(&mut rng, h, w, p);
                let want = cpu.label_bonds(right.view(), down.view()).unwrap();
                let got = gpu.label_bonds(right.view(), down.view()).unwrap();
                assert_eq!(got, want, "{b:?} {h}x{w} {p}");
                let packed = PackedBonds::from_masks(right.view(), down.view()).unwrap();
                let (mut r1, mut r2) = (Array2::zeros((h, w)), Array2::zeros((h, w)));
                let n1 = cpu.bond_roots_into(&packed, r1.view_mut()).unwrap();
                let n2 = gpu.bond_roots_into(&packed, r2.view_mut()).unwrap();
                assert_eq!((n2, &r2), (n1, &r1), "roots {b:?} {h}x{w} {p}");
            }
        }
    }
}

#[test]
fn hoshen_kopelman_and_bfs_match_the_oracle() {
    check(Algorithm::HoshenKopelman, Parallelism::Sequential, 3);
    check(Algorithm::Bfs, Parallelism::Sequential, 4);
}

/// Tall lattices, so that the strip labeler cuts many strips and merges their seams.
#[test]
fn many_strips_match_the_oracle() {
    let mut rng = Mt64::new(5);
    for &b in &BOUNDARIES {
        let mut labeler = Labeler::new(Connectivity::Four, b).parallelism(Parallelism::Threads(4));
        for &(h, w) in &[(200, 67), (129, 64), (300, 5)] {
            for &p in &[0.4, 0.5, 0.6] {
                let right = random_mask(&mut rng, h, w, p);
                let down = random_mask(&mut rng, h, w, p);
                let (want, n) = oracle(&right, &down, b);
                let got = labeler.label_bonds(right.view(), down.view()).unwrap();
                assert_eq!((got.count(), got.array()), (n, &want), "{b:?} {h}x{w} {p}");
            }
        }
    }
}

#[test]
fn strided_output_and_bad_input() {
    let mut rng = Mt64::new(6);
    let right = random_mask(&mut rng, 9, 11, 0.5);
    let down = random_mask(&mut rng, 9, 11, 0.5);
    let (want, _) = oracle(&right, &down, Boundary::Periodic);
    let mut labeler = Labeler::new(Connectivity::Four, Boundary::Periodic);
    let mut t = Array2::zeros((11, 9));
    labeler
        .label_bonds_into(right.view(), down.view(), t.view_mut().reversed_axes())
        .unwrap();
    assert_eq!(t.t(), want);

    let small = Array2::<u8>::zeros((9, 10));
    let e = labeler.label_bonds(right.view(), small.view()).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
    let mut wrong = Array2::zeros((9, 10));
    let e = labeler
        .label_bonds_into(right.view(), down.view(), wrong.view_mut())
        .unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
    let mut eight = Labeler::new(Connectivity::Eight, Boundary::Open);
    let e = eight.label_bonds(right.view(), down.view()).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    let e = PackedBonds::from_words(2, 3, vec![0; 1], vec![0; 2]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    // Padding bits beyond the last column are ignored.
    let bonds = PackedBonds::from_words(1, 3, vec![!0], vec![!0]).unwrap();
    let mut open = Labeler::new(Connectivity::Four, Boundary::Open);
    let mut out = Array2::zeros((1, 3));
    assert_eq!(
        open.label_packed_bonds_into(&bonds, out.view_mut())
            .unwrap(),
        1
    );
}
