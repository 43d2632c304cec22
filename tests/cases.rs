//! Hand-made cases with their answers written out, views of every layout, labeler reuse and errors.

mod common;

use clusterlab::{
    label, label_segments, Algorithm, Backend, Boundary, Connectivity, Error, Labeler, Labels,
    Parallelism, SiteValue, MAX_SITES,
};
use common::{checkerboard, oracle_of, spiral, stripes};
use ndarray::{arr2, array, s, Array2, ArrayView2};

use Boundary::{Open, Periodic, PeriodicX, PeriodicY};
use Connectivity::{Eight, Four};

const BOUNDARIES: [Boundary; 4] = [Open, Periodic, PeriodicX, PeriodicY];
const CONNECTIVITIES: [Connectivity; 2] = [Four, Eight];

/// Every algorithm/parallelism combination under test.
const RUNS: [(Algorithm, Parallelism); 9] = [
    (Algorithm::Bfs, Parallelism::Sequential),
    (Algorithm::HoshenKopelman, Parallelism::Sequential),
    (Algorithm::Strips, Parallelism::Sequential),
    (Algorithm::Strips, Parallelism::Threads(1)),
    (Algorithm::Strips, Parallelism::Threads(2)),
    (Algorithm::Strips, Parallelism::Threads(7)),
    (Algorithm::Auto, Parallelism::Sequential),
    (Algorithm::Auto, Parallelism::Rayon),
    (Algorithm::Auto, Parallelism::Threads(3)),
];

fn labeler(c: Connectivity, b: Boundary, run: (Algorithm, Parallelism)) -> Labeler {
    Labeler::new(c, b).algorithm(run.0).parallelism(run.1)
}

/// Labels with every run and checks that all give `expected` (labels and count).
fn expect_all<T: SiteValue>(
    lattice: ArrayView2<'_, T>,
    c: Connectivity,
    b: Boundary,
    segments: bool,
    expected: &Array2<u32>,
    count: usize,
) {
    for run in RUNS {
        let got = labeler(c, b, run)
            .segments(segments)
            .label(lattice)
            .unwrap_or_else(|e| panic!("{run:?} {c:?} {b:?}: {e}"));
        assert_eq!(got.count(), count, "count: {run:?} {c:?} {b:?}");
        assert_eq!(got.array(), expected, "labels: {run:?} {c:?} {b:?}");
    }
}

/// Checks every run against written-out labels and against the oracle (which must agree).
fn expect<T: SiteValue + Into<u32>>(
    lattice: ArrayView2<'_, T>,
    c: Connectivity,
    b: Boundary,
    expected: &Array2<u32>,
    count: usize,
) {
    let (oracle, n) = oracle_of(lattice, c, b, false);
    assert_eq!((&oracle, n), (expected, count), "oracle: {c:?} {b:?}");
    expect_all(lattice, c, b, false, expected, count);
}

/// The labels of a lattice whose occupied sites are each their own cluster: 1, 2, ... in raster
/// order.
fn each_its_own(lattice: &Array2<u8>) -> (Array2<u32>, usize) {
    let mut n = 0;
    let labels = lattice.mapv(|v| {
        if v == 0 {
            0
        } else {
            n += 1;
            n
        }
    });
    (labels, n as usize)
}

#[test]
fn checkerboard_small_written_out() {
    let lat = checkerboard(3, 4);
    assert_eq!(lat, array![[1u8, 0, 1, 0], [0, 1, 0, 1], [1, 0, 1, 0]]);
    let four = array![[1u32, 0, 2, 0], [0, 3, 0, 4], [5, 0, 6, 0]];
    let eight = array![[1u32, 0, 1, 0], [0, 1, 0, 1], [1, 0, 1, 0]];
    expect(lat.view(), Four, Open, &four, 6);
    // Width 4 wraps (y, 3) to (y, 0): sites of different colour, still 4 apart.
    expect(lat.view(), Four, PeriodicX, &four, 6);
    // Height 3 is odd: on a y-wrapping torus (0, 0) and (2, 0) are neighbours.
    let four_torus = array![[1u32, 0, 2, 0], [0, 3, 0, 4], [1, 0, 2, 0]];
    expect(lat.view(), Four, Periodic, &four_torus, 4);
    expect(lat.view(), Four, PeriodicY, &four_torus, 4);
    for b in BOUNDARIES {
        expect(lat.view(), Eight, b, &eight, 1);
    }
}

#[test]
fn checkerboard_every_site_its_own_cluster_with_four_one_with_eight() {
    // Even sides: on every boundary the colours alternate across the wrapping edges too.
    for (h, w) in [(2, 2), (16, 16), (64, 64), (70, 130), (130, 66)] {
        let lat = checkerboard(h, w);
        let (own, n) = each_its_own(&lat);
        assert_eq!(n, h * w / 2);
        let one = lat.mapv(u32::from);
        for b in BOUNDARIES {
            expect(lat.view(), Four, b, &own, n);
            expect(lat.view(), Eight, b, &one, 1);
        }
    }
}

#[test]
fn stripes_horizontal_and_vertical() {
    // Rows 0, 2, 4 of 5 occupied: three stripes, except where rows 4 and 0 meet across y.
    let h = stripes(5, 7, true);
    let open = Array2::from_shape_fn(
        (5, 7),
        |(y, _)| if y % 2 == 0 { y as u32 / 2 + 1 } else { 0 },
    );
    let wrapped = Array2::from_shape_fn((5, 7), |(y, _)| match y {
        0 | 4 => 1,
        2 => 2,
        _ => 0,
    });
    for c in CONNECTIVITIES {
        expect(h.view(), c, Open, &open, 3);
        expect(h.view(), c, PeriodicX, &open, 3);
        expect(h.view(), c, PeriodicY, &wrapped, 2);
        expect(h.view(), c, Periodic, &wrapped, 2);
    }
    // Columns 0, 2, 4, 6 of 7 occupied: each row meets the stripes in raster order.
    let v = stripes(4, 7, false);
    let open = Array2::from_shape_fn(
        (4, 7),
        |(_, x)| if x % 2 == 0 { x as u32 / 2 + 1 } else { 0 },
    );
    let wrapped = Array2::from_shape_fn((4, 7), |(_, x)| match x {
        0 | 6 => 1,
        2 => 2,
        4 => 3,
        _ => 0,
    });
    for c in CONNECTIVITIES {
        expect(v.view(), c, Open, &open, 4);
        expect(v.view(), c, PeriodicY, &open, 4);
        expect(v.view(), c, PeriodicX, &wrapped, 3);
        expect(v.view(), c, Periodic, &wrapped, 3);
    }
    // Even counts never meet across the edges; tall enough for several strips.
    let tall = stripes(200, 33, true);
    let labels = Array2::from_shape_fn(
        (200, 33),
        |(y, _)| {
            if y % 2 == 0 {
                y as u32 / 2 + 1
            } else {
                0
            }
        },
    );
    for c in CONNECTIVITIES {
        for b in BOUNDARIES {
            expect(tall.view(), c, b, &labels, 100);
        }
    }
}

#[test]
fn spiral_is_one_cluster() {
    let seven = spiral(7);
    assert_eq!(
        seven,
        array![
            [1u8, 1, 1, 1, 1, 1, 1],
            [0, 0, 0, 0, 0, 0, 1],
            [1, 1, 1, 1, 1, 0, 1],
            [1, 0, 0, 0, 1, 0, 1],
            [1, 0, 1, 1, 1, 0, 1],
            [1, 0, 0, 0, 0, 0, 1],
            [1, 1, 1, 1, 1, 1, 1],
        ]
    );
    for n in [1, 2, 3, 5, 7, 8, 31, 64, 65, 129] {
        let lat = spiral(n);
        let one = lat.mapv(u32::from);
        for c in CONNECTIVITIES {
            for b in BOUNDARIES {
                expect(lat.view(), c, b, &one, 1);
            }
        }
    }
    // Cut once: the spiral's two halves are separate on the open lattice.
    let mut cut = spiral(9);
    cut[[0, 4]] = 0;
    let l = label(cut.view(), Four, Open).unwrap();
    assert_eq!(l.count(), 2);
    assert_eq!(l.sizes(), vec![81 - 48, 4, 44]);
}

#[test]
fn full_and_empty_lattices() {
    for (h, w) in [(1, 1), (1, 9), (9, 1), (2, 2), (17, 64), (100, 65)] {
        let full = Array2::<u8>::ones((h, w));
        let empty = Array2::<u8>::zeros((h, w));
        for c in CONNECTIVITIES {
            for b in BOUNDARIES {
                expect(full.view(), c, b, &Array2::ones((h, w)), 1);
                expect(empty.view(), c, b, &Array2::zeros((h, w)), 0);
            }
        }
    }
}

#[test]
fn zero_sized_lattices() {
    for (h, w) in [(0, 0), (0, 1), (0, 7), (0, 200), (1, 0), (7, 0), (200, 0)] {
        let lat = Array2::<u8>::zeros((h, w));
        for c in CONNECTIVITIES {
            for b in BOUNDARIES {
                for run in RUNS {
                    let l = labeler(c, b, run).label(lat.view()).unwrap();
                    assert_eq!(l.count(), 0);
                    assert_eq!(l.array().dim(), (h, w));
                    assert_eq!(l.sizes(), vec![0]);
                    let mut out = Array2::<u32>::zeros((h, w));
                    let n = labeler(c, b, run)
                        .label_into(lat.view(), out.view_mut())
                        .unwrap();
                    assert_eq!(n, 0);
                }
                let l = label_segments(Array2::<u16>::zeros((h, w)).view(), c, b).unwrap();
                assert_eq!((l.count(), l.array().dim()), (0, (h, w)));
            }
        }
    }
}

#[test]
fn one_by_one() {
    for c in CONNECTIVITIES {
        for b in BOUNDARIES {
            expect(arr2(&[[1u8]]).view(), c, b, &arr2(&[[1]]), 1);
            expect(arr2(&[[7u8]]).view(), c, b, &arr2(&[[1]]), 1);
            expect(arr2(&[[0u8]]).view(), c, b, &arr2(&[[0]]), 0);
            expect_all(arr2(&[[300u16]]).view(), c, b, true, &arr2(&[[1]]), 1);
            expect_all(arr2(&[[0u32]]).view(), c, b, true, &arr2(&[[0]]), 0);
        }
    }
}

#[test]
fn cluster_joined_only_across_the_x_edge() {
    // Two halves touching the left and the right edge.
    let lat = array![
        [0u8, 0, 0, 0, 0, 0],
        [1, 1, 0, 0, 1, 1],
        [1, 0, 0, 0, 0, 1],
        [0, 0, 0, 0, 0, 0],
    ];
    let two = array![
        [0u32, 0, 0, 0, 0, 0],
        [1, 1, 0, 0, 2, 2],
        [1, 0, 0, 0, 0, 2],
        [0, 0, 0, 0, 0, 0],
    ];
    let one = lat.mapv(u32::from);
    for c in CONNECTIVITIES {
        expect(lat.view(), c, Open, &two, 2);
        expect(lat.view(), c, PeriodicY, &two, 2);
        expect(lat.view(), c, PeriodicX, &one, 1);
        expect(lat.view(), c, Periodic, &one, 1);
    }
}

#[test]
fn cluster_joined_only_across_the_y_edge() {
    let lat = array![[0u8, 1, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 1, 0]];
    let two = array![[0u32, 1, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 2, 0]];
    let one = lat.mapv(u32::from);
    for c in CONNECTIVITIES {
        expect(lat.view(), c, Open, &two, 2);
        expect(lat.view(), c, PeriodicX, &two, 2);
        expect(lat.view(), c, PeriodicY, &one, 1);
        expect(lat.view(), c, Periodic, &one, 1);
    }
    // Diagonally across the y edge: only 8-connectivity joins (3, 0) and (0, 1).
    let diag = array![[0u8, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [1, 0, 0, 0]];
    let two = array![[0u32, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [2, 0, 0, 0]];
    let one = diag.mapv(u32::from);
    expect(diag.view(), Four, Periodic, &two, 2);
    expect(diag.view(), Eight, Periodic, &one, 1);
    expect(diag.view(), Eight, PeriodicY, &one, 1);
    expect(diag.view(), Eight, PeriodicX, &two, 2);
    expect(diag.view(), Eight, Open, &two, 2);
}

#[test]
fn diagonal_join_across_the_torus_corner() {
    for (h, w) in [(3, 3), (4, 5), (5, 4), (40, 70), (70, 129)] {
        // (0, 0) and (h − 1, w − 1): neighbours only diagonally across both edges at once.
        let mut lat = Array2::<u8>::zeros((h, w));
        lat[[0, 0]] = 1;
        lat[[h - 1, w - 1]] = 1;
        let mut two = Array2::<u32>::zeros((h, w));
        two[[0, 0]] = 1;
        two[[h - 1, w - 1]] = 2;
        let one = lat.mapv(u32::from);
        expect(lat.view(), Eight, Periodic, &one, 1);
        expect(lat.view(), Four, Periodic, &two, 2);
        for b in [Open, PeriodicX, PeriodicY] {
            expect(lat.view(), Eight, b, &two, 2);
            expect(lat.view(), Four, b, &two, 2);
        }
        // The other diagonal: (0, w − 1) and (h − 1, 0).
        let mut anti = Array2::<u8>::zeros((h, w));
        anti[[0, w - 1]] = 1;
        anti[[h - 1, 0]] = 1;
        let mut two = Array2::<u32>::zeros((h, w));
        two[[0, w - 1]] = 1;
        two[[h - 1, 0]] = 2;
        expect(anti.view(), Eight, Periodic, &anti.mapv(u32::from), 1);
        expect(anti.view(), Four, Periodic, &two, 2);
        expect(anti.view(), Eight, PeriodicX, &two, 2);
    }
}

#[test]
fn narrow_tori() {
    // Width 1: (y, 0) is its own left and right neighbour; rows wrap for PeriodicY/Periodic.
    let col = array![[1u8], [1], [0], [1], [1]];
    let two = array![[1u32], [1], [0], [2], [2]];
    let one = array![[1u32], [1], [0], [1], [1]];
    for c in CONNECTIVITIES {
        expect(col.view(), c, Open, &two, 2);
        expect(col.view(), c, PeriodicX, &two, 2);
        expect(col.view(), c, PeriodicY, &one, 1);
        expect(col.view(), c, Periodic, &one, 1);
    }
    // Height 1.
    let row = array![[1u8, 0, 1, 1, 0, 1]];
    let three = array![[1u32, 0, 2, 2, 0, 3]];
    let two = array![[1u32, 0, 2, 2, 0, 1]];
    for c in CONNECTIVITIES {
        expect(row.view(), c, Open, &three, 3);
        expect(row.view(), c, PeriodicY, &three, 3);
        expect(row.view(), c, PeriodicX, &two, 2);
        expect(row.view(), c, Periodic, &two, 2);
    }
    // 2 × 2: the diagonal pair is joined by 8-connectivity only, on every boundary.
    let d = array![[1u8, 0], [0, 1]];
    for b in BOUNDARIES {
        expect(d.view(), Four, b, &array![[1, 0], [0, 2]], 2);
        expect(d.view(), Eight, b, &array![[1, 0], [0, 1]], 1);
    }
    // Width 2: (y, 0) and (y, 1) are neighbours twice over. A diagonal zigzag that closes
    // across the y edge: (2, 1)–(3, 0)–(4, 1) diagonally, then (4, 1)–(0, 0) across y.
    let w2 = array![[1u8, 0], [0, 0], [0, 1], [1, 0], [0, 1]];
    let singles = array![[1u32, 0], [0, 0], [0, 2], [3, 0], [0, 4]];
    let split = array![[1u32, 0], [0, 0], [0, 2], [2, 0], [0, 2]];
    let one = w2.mapv(u32::from);
    for b in BOUNDARIES {
        expect(w2.view(), Four, b, &singles, 4);
    }
    expect(w2.view(), Eight, Open, &split, 2);
    expect(w2.view(), Eight, PeriodicX, &split, 2);
    expect(w2.view(), Eight, PeriodicY, &one, 1);
    expect(w2.view(), Eight, Periodic, &one, 1);
    // Height 2, the same zigzag transposed.
    let h2 = w2.t().to_owned();
    for b in BOUNDARIES {
        expect(
            h2.view(),
            Four,
            b,
            &array![[1u32, 0, 0, 2, 0], [0, 0, 3, 0, 4]],
            4,
        );
    }
    let split = array![[1u32, 0, 0, 2, 0], [0, 0, 2, 0, 2]];
    expect(h2.view(), Eight, Open, &split, 2);
    expect(h2.view(), Eight, PeriodicY, &split, 2);
    expect(h2.view(), Eight, PeriodicX, &h2.mapv(u32::from), 1);
    expect(h2.view(), Eight, Periodic, &h2.mapv(u32::from), 1);
    // Segments on a 1 × 3 torus: equal values join across the edge, different ones do not.
    let seg = array![[5u16, 6, 5]];
    expect_all(seg.view(), Four, Periodic, true, &array![[1, 2, 1]], 2);
    expect_all(seg.view(), Four, Open, true, &array![[1, 2, 3]], 3);
    let seg = array![[5u32, 5, 6]];
    expect_all(seg.view(), Eight, PeriodicX, true, &array![[1, 1, 2]], 2);
}

#[test]
fn segments_written_out() {
    let image = array![
        [3u16, 3, 5, 0, 300],
        [0, 5, 5, 0, 44],
        [3, 0, 0, 300, 300],
        [3, 3, 0, 0, 3],
    ];
    let four = array![
        [1u32, 1, 2, 0, 3],
        [0, 2, 2, 0, 4],
        [5, 0, 0, 6, 6],
        [5, 5, 0, 0, 7],
    ];
    expect_all(image.view(), Four, Open, true, &four, 7);
    let l = label_segments(image.view(), Four, Open).unwrap();
    assert_eq!(l.array(), &four);
    // 8-connectivity joins (0, 4) and (2, 3)? No: they are two rows apart; (1, 4)=44 differs.
    // It joins (1, 1)=5 and (0, 2)=5 already joined; (2, 3)=300 and (1, 4)=44 differ.
    expect_all(image.view(), Eight, Open, true, &four, 7);
    // Periodic: (3, 4)=3 meets (3, 0)=3 across x, and (3, 0) meets (0, 0)=3 across y.
    let torus = array![
        [1u32, 1, 2, 0, 3],
        [0, 2, 2, 0, 4],
        [1, 0, 0, 5, 5],
        [1, 1, 0, 0, 1],
    ];
    expect_all(image.view(), Four, Periodic, true, &torus, 5);
    // As occupancy, the same image is three clusters on the open lattice.
    let occ = image.mapv(|v| u32::from(v != 0));
    let (o, n) = oracle_of(occ.view(), Four, Open, false);
    assert_eq!(n, 3);
    expect_all(image.view(), Four, Open, false, &o, n);
}

/// Random lattices for the view tests.
fn random(h: usize, w: usize, p: f64, seed: u64) -> Array2<u8> {
    common::random_lattice(h, w, p, &mut common::rng(seed))
}

#[test]
fn views_equal_owned_copies() {
    let big = random(60, 90, 0.6, 7);
    let seg = common::segment_lattice(60, 90, 0.8, 3, &mut common::rng(8)).mapv(|v| v as u16);
    let views: Vec<(&str, ArrayView2<'_, u8>, ArrayView2<'_, u16>)> = vec![
        (
            "strided",
            big.slice(s![..;2, ..;3]),
            seg.slice(s![..;2, ..;3]),
        ),
        ("transposed", big.t(), seg.t()),
        (
            "rows reversed",
            big.slice(s![..;-1, ..]),
            seg.slice(s![..;-1, ..]),
        ),
        (
            "columns reversed",
            big.slice(s![.., ..;-1]),
            seg.slice(s![.., ..;-1]),
        ),
        (
            "sub-slice",
            big.slice(s![3..50, 5..80]),
            seg.slice(s![3..50, 5..80]),
        ),
        ("column", big.slice(s![.., 9..10]), seg.slice(s![.., 9..10])),
        (
            "strided row",
            big.slice(s![4..5, ..;2]),
            seg.slice(s![4..5, ..;2]),
        ),
        (
            "transposed, strided, reversed",
            big.slice(s![..;-3, 1..;2]).reversed_axes(),
            seg.slice(s![..;-3, 1..;2]).reversed_axes(),
        ),
    ];
    for (name, v, sv) in views {
        let owned = v.as_standard_layout().into_owned();
        let sowned = sv.as_standard_layout().into_owned();
        assert!(owned.is_standard_layout());
        for c in CONNECTIVITIES {
            for b in BOUNDARIES {
                let (o, n) = oracle_of(owned.view(), c, b, false);
                let (so, sn) = oracle_of(sowned.view(), c, b, true);
                for run in RUNS {
                    let want = labeler(c, b, run).label(owned.view()).unwrap();
                    let got = labeler(c, b, run).label(v).unwrap();
                    assert_eq!(got, want, "{name} {c:?} {b:?} {run:?}");
                    assert_eq!((got.array(), got.count()), (&o, n), "{name}: oracle");
                    let want = labeler(c, b, run)
                        .segments(true)
                        .label(sowned.view())
                        .unwrap();
                    let got = labeler(c, b, run).segments(true).label(sv).unwrap();
                    assert_eq!(got, want, "{name} segments {c:?} {b:?} {run:?}");
                    assert_eq!((got.array(), got.count()), (&so, sn), "{name}: oracle");
                }
            }
        }
    }
}

#[test]
fn non_contiguous_output_views() {
    let lat = random(90, 70, 0.55, 11);
    for c in CONNECTIVITIES {
        for b in BOUNDARIES {
            for run in RUNS {
                let want = labeler(c, b, run).label(lat.view()).unwrap();
                let mut l = labeler(c, b, run);
                // Every other row and column of a larger array, prefilled with garbage.
                let mut big = Array2::<u32>::from_elem((180, 141), 0xdead_beef);
                let n = l
                    .label_into(lat.view(), big.slice_mut(s![..;2, 1..;2]))
                    .unwrap();
                assert_eq!(n, want.count());
                assert_eq!(
                    big.slice(s![..;2, 1..;2]),
                    want.array(),
                    "{c:?} {b:?} {run:?}"
                );
                // The sites in between are untouched.
                assert!(big.slice(s![1..;2, ..]).iter().all(|&v| v == 0xdead_beef));
                assert!(big.slice(s![.., ..;2]).iter().all(|&v| v == 0xdead_beef));
                // A transposed (column-major) output.
                let mut t = Array2::<u32>::from_elem((70, 90), 7);
                let n = l
                    .label_into(lat.view(), t.view_mut().reversed_axes())
                    .unwrap();
                assert_eq!(n, want.count());
                assert_eq!(t.t(), want.array());
                // Rows reversed: contiguous rows, negative row stride.
                let mut r = Array2::<u32>::from_elem((90, 70), 7);
                let n = l
                    .label_into(lat.view(), r.slice_mut(s![..;-1, ..]))
                    .unwrap();
                assert_eq!(n, want.count());
                assert_eq!(r.slice(s![..;-1, ..]), want.array());
                // A one-column output cut from a wider array.
                let col = lat.slice(s![.., 3..4]);
                let want_col = labeler(c, b, run).label(col).unwrap();
                let mut wide = Array2::<u32>::from_elem((180, 5), 9);
                let n = l.label_into(col, wide.slice_mut(s![..;2, 2..3])).unwrap();
                assert_eq!(n, want_col.count());
                assert_eq!(wide.slice(s![..;2, 2..3]), want_col.array());
            }
        }
    }
}

#[test]
fn labeler_reuse_matches_fresh_labelers() {
    let shapes = [
        (50, 70, 0.6),
        (3, 3, 0.5),
        (200, 10, 0.7),
        (0, 5, 0.5),
        (64, 64, 0.59),
        (1, 1, 1.0),
        (150, 129, 0.41),
        (17, 1, 0.8),
        (50, 70, 0.3),
        (1, 130, 0.9),
    ];
    let lattices: Vec<(Array2<u8>, Array2<u8>)> = shapes
        .iter()
        .enumerate()
        .map(|(i, &(h, w, p))| {
            let seg = common::segment_lattice(h, w, p, 3, &mut common::rng(i as u64));
            (random(h, w, p, 100 + i as u64), seg.mapv(|v| v as u8))
        })
        .collect();
    for c in CONNECTIVITIES {
        for b in BOUNDARIES {
            let expected: Vec<_> = lattices
                .iter()
                .map(|(lat, seg)| {
                    (
                        oracle_of(lat.view(), c, b, false),
                        oracle_of(seg.view(), c, b, true),
                    )
                })
                .collect();
            for run in RUNS {
                let mut reused = labeler(c, b, run);
                let mut reused_seg = labeler(c, b, run).segments(true);
                for (i, ((lat, seg), ((o, n), (so, sn)))) in
                    lattices.iter().zip(&expected).enumerate()
                {
                    let fresh = labeler(c, b, run).label(lat.view()).unwrap();
                    assert_eq!((fresh.array(), fresh.count()), (o, *n), "fresh {i}");
                    let got = reused.label(lat.view()).unwrap();
                    assert_eq!(got, fresh, "{c:?} {b:?} {run:?} lattice {i}");
                    // label_into through the staging buffer (non-contiguous output), reused too.
                    let (h, w) = lat.dim();
                    let mut out = Array2::<u32>::from_elem((w, h), 5);
                    let k = reused
                        .label_into(lat.view(), out.view_mut().reversed_axes())
                        .unwrap();
                    assert_eq!((out.t(), k), (o.view(), *n), "staging {i}");

                    let fresh = labeler(c, b, run).segments(true).label(seg.view()).unwrap();
                    assert_eq!((fresh.array(), fresh.count()), (so, *sn), "fresh seg {i}");
                    let got = reused_seg.label(seg.view()).unwrap();
                    assert_eq!(got, fresh, "segments {c:?} {b:?} {run:?} lattice {i}");
                }
            }
        }
    }
}

#[test]
fn labels_accessors_agree() {
    let lat = array![[1u8, 1, 0, 0], [0, 0, 0, 1], [1, 0, 1, 1]];
    let l: Labels = label(lat.view(), Four, Open).unwrap();
    assert_eq!(l.count(), 3);
    assert_eq!(l.array(), &array![[1, 1, 0, 0], [0, 0, 0, 2], [3, 0, 2, 2]]);
    assert_eq!(l.sizes(), vec![6, 2, 3, 1]);
    assert_eq!(l.clone().into_array(), l.array().clone());
    let t = label(lat.view(), Four, Periodic).unwrap();
    // (0, 0) wraps to (2, 0) across y, and (2, 0) to (2, 3) across x.
    assert_eq!(t.count(), 1);
    assert_eq!(t.sizes(), vec![6, 6]);
}

#[test]
fn wrong_output_shape_is_shape_mismatch() {
    let lat = Array2::<u8>::ones((4, 5));
    for run in RUNS {
        for shape in [(5, 4), (4, 4), (0, 0), (4, 6)] {
            let mut out = Array2::<u32>::zeros(shape);
            let err = labeler(Four, Open, run)
                .label_into(lat.view(), out.view_mut())
                .unwrap_err();
            match err {
                Error::ShapeMismatch { expected, found } => {
                    assert_eq!(expected, [4, 5]);
                    assert_eq!(found, [shape.0, shape.1]);
                }
                e => panic!("expected ShapeMismatch, got {e:?}"),
            }
        }
    }
    // The shape is checked before the size: a huge broadcast lattice with a small output.
    let huge = arr2(&[[1u8]]);
    let huge = huge.broadcast((70_000, 70_000)).unwrap();
    let mut out = Array2::<u32>::zeros((2, 2));
    assert!(matches!(
        Labeler::new(Four, Open).label_into(huge, out.view_mut()),
        Err(Error::ShapeMismatch { .. })
    ));
}

#[test]
fn too_many_sites_without_allocating() {
    let one = arr2(&[[1u8]]);
    let huge = one.broadcast((70_000, 70_000)).unwrap();
    let sites = 70_000usize * 70_000;
    assert!(sites > MAX_SITES);
    let check = |r: clusterlab::Result<Labels>| match r {
        Err(Error::TooManySites { sites: s, max }) => {
            assert_eq!(s, sites);
            assert_eq!(max, MAX_SITES);
        }
        Err(e) => panic!("expected TooManySites, got {e:?}"),
        Ok(_) => panic!("expected TooManySites, got labels"),
    };
    check(label(huge, Four, Open));
    check(label(huge, Eight, Periodic));
    let one16 = arr2(&[[1u16]]);
    check(label_segments(
        one16.broadcast((70_000, 70_000)).unwrap(),
        Four,
        Open,
    ));
    for run in RUNS {
        check(labeler(Eight, PeriodicX, run).label(huge));
    }
    // One site more than MAX_SITES = 2^32 − 2: 65537 × 65535 = 2^32 − 1.
    assert_eq!(65_537 * 65_535, MAX_SITES + 1);
    let just_over = one.broadcast((65_537, 65_535)).unwrap();
    assert!(matches!(
        label(just_over, Four, Open),
        Err(Error::TooManySites { sites, .. }) if sites == MAX_SITES + 1
    ));
    // A long thin one (2^33 sites).
    let long = one.broadcast((1 << 32, 2)).unwrap();
    assert!(matches!(
        label(long.t(), Eight, Periodic),
        Err(Error::TooManySites { .. })
    ));
}

#[test]
fn zero_threads_is_an_error() {
    // Documented on `Labeler::label_into`: "[`Error::InvalidArgument`] for ... a thread count of 0".
    let lat = random(40, 40, 0.6, 3);
    for alg in [
        Algorithm::Auto,
        Algorithm::Strips,
        Algorithm::HoshenKopelman,
        Algorithm::Bfs,
    ] {
        let r = Labeler::new(Four, Open)
            .algorithm(alg)
            .parallelism(Parallelism::Threads(0))
            .label(lat.view());
        assert!(
            matches!(r, Err(Error::InvalidArgument(_))),
            "Threads(0) with {alg:?}: expected InvalidArgument, got {:?}",
            r.map(|l| l.count())
        );
    }
}

#[test]
fn gpu_algorithms_on_the_cpu_are_invalid_arguments() {
    // Documented on `Algorithm`: asking a backend for an algorithm it lacks is InvalidArgument.
    let lat = random(8, 8, 0.6, 4);
    for alg in [
        Algorithm::Ha4,
        Algorithm::LabelEquivalence,
        Algorithm::TileMerge,
        Algorithm::BlockUnionFind,
    ] {
        // Named explicitly: the default backend, `Auto`, would run them on the CPU's `Auto`.
        let mut l = Labeler::new(Four, Open)
            .backend(Backend::Cpu)
            .unwrap()
            .algorithm(alg);
        assert_eq!(l.backend_name(), "cpu");
        let r = l.label(lat.view());
        assert!(
            matches!(r, Err(Error::InvalidArgument(_))),
            "{alg:?}: {:?}",
            r.map(|l| l.count())
        );
        let mut out = Array2::<u32>::zeros((8, 8));
        assert!(matches!(
            l.label_into(lat.view(), out.view_mut()),
            Err(Error::InvalidArgument(_))
        ));
    }
}
