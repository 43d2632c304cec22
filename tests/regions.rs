//! Seeded regions against an independent oracle: a breadth-first search per seed with that
//! seed's reference, the union, and for absorption a breadth-first search of the outside from
//! the open edges through the complement with the dual connectivity.
//!
//! GPU tests are `#[ignore = "needs a CUDA device"]`: run them with `--ignored` on a GPU machine.

mod common;

use clusterlab::regions::{region_from_seeds, Criterion, Method, Reference, RegionGrower};
use clusterlab::{Boundary, Connectivity, Error, Parallelism};
use common::{neighbour_list, rng, wraps};
use ndarray::{Array2, Array3, ArrayView3, Axis};
use rand::rngs::StdRng;
use rand::RngExt;
use std::collections::VecDeque;

const BOUNDARIES: [Boundary; 4] = [
    Boundary::Open,
    Boundary::Periodic,
    Boundary::PeriodicX,
    Boundary::PeriodicY,
];
const CONNS: [Connectivity; 2] = [Connectivity::Four, Connectivity::Eight];

/// The oracle's description of a request (written from the module docs, not the crate's code).
#[derive(Clone, Debug)]
struct Req {
    tol: Vec<f32>,
    reference: Option<Vec<f32>>,
    conn: Connectivity,
    boundary: Boundary,
    absorb: bool,
}

impl Req {
    fn criterion(&self) -> Criterion {
        let c = Criterion::per_channel(self.tol.clone())
            .connectivity(self.conn)
            .boundary(self.boundary)
            .absorb(self.absorb);
        match &self.reference {
            Some(r) => c.reference(Reference::Value(r.clone())),
            None => c,
        }
    }
}

fn expand(v: &[f32], c: usize) -> Vec<f32> {
    if v.len() == 1 {
        vec![v[0]; c]
    } else {
        v.to_vec()
    }
}

/// The oracle: plain BFS per seed, union, then absorption by BFS of the outside.
fn oracle(field: ArrayView3<'_, f32>, seeds: &[(usize, usize)], req: &Req) -> Array2<u8> {
    let (h, w, c) = field.dim();
    let tol = expand(&req.tol, c);
    let mut out = Array2::<u8>::zeros((h, w));
    for &(sy, sx) in seeds {
        let r: Vec<f32> = match &req.reference {
            Some(r) => expand(r, c),
            None => (0..c).map(|k| field[[sy, sx, k]]).collect(),
        };
        let ok = |y: usize, x: usize| (0..c).all(|k| (field[[y, x, k]] - r[k]).abs() <= tol[k]);
        if !ok(sy, sx) {
            continue;
        }
        let mut seen = Array2::<bool>::from_elem((h, w), false);
        let mut q = VecDeque::from([(sy, sx)]);
        seen[[sy, sx]] = true;
        while let Some((y, x)) = q.pop_front() {
            out[[y, x]] = 1;
            for (ny, nx) in neighbour_list(y, x, (h, w), req.conn, req.boundary) {
                if !seen[[ny, nx]] && ok(ny, nx) {
                    seen[[ny, nx]] = true;
                    q.push_back((ny, nx));
                }
            }
        }
    }
    if req.absorb {
        let dual = match req.conn {
            Connectivity::Four => Connectivity::Eight,
            Connectivity::Eight => Connectivity::Four,
        };
        let (wy, wx) = wraps(req.boundary);
        let mut outside = Array2::<bool>::from_elem((h, w), false);
        let mut q = VecDeque::new();
        for y in 0..h {
            for x in 0..w {
                let edge = (!wy && (y == 0 || y == h - 1)) || (!wx && (x == 0 || x == w - 1));
                if edge && out[[y, x]] == 0 {
                    outside[[y, x]] = true;
                    q.push_back((y, x));
                }
            }
        }
        while let Some((y, x)) = q.pop_front() {
            for (ny, nx) in neighbour_list(y, x, (h, w), dual, req.boundary) {
                if !outside[[ny, nx]] && out[[ny, nx]] == 0 {
                    outside[[ny, nx]] = true;
                    q.push_back((ny, nx));
                }
            }
        }
        out.zip_mut_with(&outside, |o, &out_| {
            if !out_ {
                *o = 1
            }
        });
    }
    out
}

const SHAPES: [(usize, usize); 14] = [
    (1, 1),
    (1, 17),
    (23, 1),
    (2, 2),
    (7, 9),
    (13, 31),
    (16, 32),
    (9, 33),
    (40, 63),
    (21, 64),
    (33, 65),
    (64, 64),
    (100, 37),
    (3, 130),
];

/// A field of few levels (so that regions are large and interesting) plus, for f32, small noise.
fn random_field(
    h: usize,
    w: usize,
    c: usize,
    levels: u32,
    noise: bool,
    rng: &mut StdRng,
) -> Array3<f32> {
    Array3::from_shape_fn((h, w, c), |_| {
        let v = rng.random_range(0..levels) as f32;
        if noise {
            v + rng.random_range(0.0f32..0.5)
        } else {
            v
        }
    })
}

fn random_seeds(h: usize, w: usize, k: usize, rng: &mut StdRng) -> Vec<(usize, usize)> {
    let mut s: Vec<_> = (0..k)
        .map(|_| (rng.random_range(0..h), rng.random_range(0..w)))
        .collect();
    if k > 1 {
        // A duplicate.
        s.push(s[0]);
    }
    s
}

fn random_req(
    c: usize,
    conn: Connectivity,
    boundary: Boundary,
    absorb: bool,
    rng: &mut StdRng,
) -> Req {
    let tol = match rng.random_range(0..4) {
        0 => vec![0.0],
        1 => vec![1.0],
        2 => vec![1.5],
        _ => (0..c).map(|_| rng.random_range(0..3) as f32).collect(),
    };
    let reference = if rng.random_range(0..3) == 0 {
        Some((0..c).map(|_| rng.random_range(0..4) as f32).collect())
    } else {
        None
    };
    Req {
        tol,
        reference,
        conn,
        boundary,
        absorb,
    }
}

/// Runs the grower on `field` as u8 (when integral) and f32 and compares with the oracle.
fn check_case(
    grower: &mut impl FnMut(&Criterion) -> RegionGrower,
    field: &Array3<f32>,
    integral: bool,
    seeds: &[(usize, usize)],
    req: &Req,
) -> usize {
    let expect = oracle(field.view(), seeds, req);
    let crit = req.criterion();
    let got = grower(&crit).grow(field.view(), seeds).unwrap();
    assert_eq!(
        got,
        expect,
        "f32 {:?} seeds {seeds:?} {req:?}\n{field:?}",
        field.dim()
    );
    let mut n = 1;
    if integral {
        let f8 = field.mapv(|v| v as u8);
        let got = grower(&crit).grow(f8.view(), seeds).unwrap();
        assert_eq!(got, expect, "u8 {:?} seeds {seeds:?} {req:?}", field.dim());
        n += 1;
    }
    if field.dim().2 == 1 {
        // The 2-D view gives the same mask.
        let f2 = field.index_axis(Axis(2), 0);
        let got = grower(&crit).grow(f2, seeds).unwrap();
        assert_eq!(got, expect);
        n += 1;
    }
    n
}

/// Every shape, connectivity, boundary, absorption, channel count and seed count, on `make`.
fn sweep(mut make: impl FnMut(&Criterion) -> RegionGrower, open_only: bool, seed: u64) -> usize {
    let mut r = rng(seed);
    let mut cases = 0;
    for &(h, w) in &SHAPES {
        for conn in CONNS {
            for boundary in BOUNDARIES {
                if open_only && boundary != Boundary::Open {
                    continue;
                }
                for absorb in [false, true] {
                    if absorb && boundary == Boundary::Periodic {
                        continue;
                    }
                    for c in [1, 3] {
                        let integral = r.random_range(0..2) == 0;
                        let levels = if c == 1 { 3 } else { 2 };
                        let field = random_field(h, w, c, levels, !integral, &mut r);
                        let k = [1, 3, 40][r.random_range(0..3)];
                        let seeds = random_seeds(h, w, k, &mut r);
                        let req = random_req(c, conn, boundary, absorb, &mut r);
                        cases += check_case(&mut make, &field, integral, &seeds, &req);
                    }
                }
            }
        }
    }
    cases
}

#[test]
fn cpu_auto_matches_the_oracle() {
    let n = sweep(|c| RegionGrower::new(c.clone()), false, 1);
    eprintln!("{n} cases");
}

#[test]
fn cpu_scanline_matches_the_oracle() {
    let n = sweep(
        |c| RegionGrower::new(c.clone()).method(Method::Scanline),
        true,
        2,
    );
    eprintln!("{n} cases");
}

#[test]
fn cpu_labeling_matches_the_oracle() {
    for (seed, par) in [
        (3, Parallelism::Rayon),
        (4, Parallelism::Sequential),
        (5, Parallelism::Threads(3)),
    ] {
        let n = sweep(
            |c| {
                RegionGrower::new(c.clone())
                    .method(Method::Labeling)
                    .parallelism(par)
            },
            false,
            seed,
        );
        eprintln!("{par:?}: {n} cases");
    }
}

#[test]
fn larger_fields_and_many_seeds() {
    let mut r = rng(9);
    for (h, w) in [(300, 257), (257, 300), (512, 512)] {
        for conn in CONNS {
            for method in [Method::Scanline, Method::Labeling] {
                let field = random_field(h, w, 1, 2, false, &mut r);
                let seeds = random_seeds(h, w, 200, &mut r);
                let req = Req {
                    tol: vec![0.0],
                    reference: None,
                    conn,
                    boundary: Boundary::Open,
                    absorb: true,
                };
                let expect = oracle(field.view(), &seeds, &req);
                let got = RegionGrower::new(req.criterion())
                    .method(method)
                    .grow(field.view(), &seeds)
                    .unwrap();
                assert_eq!(got, expect, "{h}x{w} {conn:?} {method:?}");
            }
        }
    }
}

/// Rings within rings: a 4-connected ring around an empty moat around a ring around an island;
/// absorbing fills everything inside the outer ring, nested levels included.
#[test]
fn nested_holes_are_absorbed() {
    let n = 21;
    let field = Array2::<u8>::from_shape_fn((n, n), |(y, x)| {
        let d = (y as isize - 10).abs().max((x as isize - 10).abs());
        match d {
            9 => 1, // outer ring
            5 => 1, // inner ring, not connected to the outer
            0 => 1, // island
            _ => 0,
        }
    });
    for conn in CONNS {
        let c = Criterion::new(0.0).connectivity(conn);
        let plain = region_from_seeds(field.view(), &[(1, 1)], &c).unwrap();
        assert_eq!(plain.sum() as usize, 4 * 18);
        let filled = region_from_seeds(field.view(), &[(1, 1)], &c.clone().absorb(true)).unwrap();
        let expect = Array2::from_shape_fn((n, n), |(y, x)| {
            ((1..=19).contains(&y) && (1..=19).contains(&x)) as u8
        });
        assert_eq!(filled, expect, "{conn:?}");
        let req = Req {
            tol: vec![0.0],
            reference: None,
            conn,
            boundary: Boundary::Open,
            absorb: true,
        };
        assert_eq!(
            filled,
            oracle(
                field.mapv(f32::from).insert_axis(Axis(2)).view(),
                &[(1, 1)],
                &req
            )
        );
    }
    // A diagonal gap: open for an 8-connected outside (4-connected ring), closed for a
    // 4-connected outside (8-connected ring).
    let mut ring = Array2::<u8>::zeros((7, 7));
    for i in 1..6 {
        ring[[1, i]] = 1;
        ring[[5, i]] = 1;
        ring[[i, 1]] = 1;
        ring[[i, 5]] = 1;
    }
    ring[[1, 1]] = 0; // the corner: 8-connected ring still closed
    let c4 = Criterion::new(0.0)
        .reference(Reference::Value(vec![1.0]))
        .absorb(true);
    let m4 = region_from_seeds(ring.view(), &[(1, 2), (2, 1)], &c4).unwrap();
    assert_eq!(
        m4[[3, 3]],
        0,
        "the 4-connected ring leaks through its corner"
    );
    let m8 = region_from_seeds(
        ring.view(),
        &[(1, 2)],
        &c4.connectivity(Connectivity::Eight),
    )
    .unwrap();
    assert_eq!(m8[[3, 3]], 1, "the 8-connected ring is closed");
    assert_eq!(m8[[1, 1]], 0, "the corner touches the outside");
}

#[test]
fn reference_seed_uses_each_seeds_own_value() {
    // Two seeds with different values: each grows its own level only.
    let field = ndarray::array![[1u8, 1, 5, 5], [1, 3, 5, 5], [9, 9, 9, 9]];
    let m = region_from_seeds(field.view(), &[(0, 0), (0, 3)], &Criterion::new(0.0)).unwrap();
    assert_eq!(m, ndarray::array![[1, 1, 1, 1], [1, 0, 1, 1], [0, 0, 0, 0]]);
    // With tolerance 2 the first seed's region reaches 3 but not 5; the second's reaches 3 too.
    let m = region_from_seeds(field.view(), &[(0, 0)], &Criterion::new(2.0)).unwrap();
    assert_eq!(m, ndarray::array![[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 0, 0]]);
    // A seed outside its criterion grows nothing.
    let c = Criterion::new(0.5).reference(Reference::Value(vec![9.0]));
    let m = region_from_seeds(field.view(), &[(0, 0), (2, 1)], &c).unwrap();
    assert_eq!(m, ndarray::array![[0, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1]]);
}

#[test]
fn nan_values_never_match() {
    let mut field = Array2::<f32>::zeros((5, 5));
    field[[2, 2]] = f32::NAN;
    field[[0, 4]] = f32::NAN;
    let m = region_from_seeds(field.view(), &[(0, 0)], &Criterion::new(f32::INFINITY)).unwrap();
    assert_eq!(m.sum(), 23);
    let m = region_from_seeds(field.view(), &[(0, 0)], &Criterion::new(1.0).absorb(true)).unwrap();
    assert_eq!(
        m.sum(),
        24,
        "the enclosed NaN site is absorbed, the edge one not"
    );
    // A NaN seed grows nothing.
    let m = region_from_seeds(field.view(), &[(2, 2)], &Criterion::new(1.0)).unwrap();
    assert_eq!(m.sum(), 0);
}

#[test]
fn strided_inputs_and_outputs() {
    let mut r = rng(11);
    let field = random_field(40, 50, 3, 2, false, &mut r);
    let t = field.view().permuted_axes([1, 0, 2]);
    let seeds = random_seeds(50, 40, 5, &mut r);
    let req = Req {
        tol: vec![0.0],
        reference: None,
        conn: Connectivity::Eight,
        boundary: Boundary::Open,
        absorb: true,
    };
    let expect = oracle(t, &seeds, &req);
    let mut g = RegionGrower::new(req.criterion());
    assert_eq!(g.grow(t, &seeds).unwrap(), expect);
    let mut out = Array2::<u8>::from_elem((40, 50), 7);
    g.grow_into(t, &seeds, out.view_mut().reversed_axes())
        .unwrap();
    assert_eq!(out.t(), expect);
}

#[test]
fn bad_input_is_an_error() {
    let f = Array2::<u8>::zeros((4, 5));
    let f3 = Array3::<f32>::zeros((4, 5, 3));
    let c = Criterion::new(1.0);
    let bad = |r: clusterlab::Result<Array2<u8>>| {
        assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    };
    bad(region_from_seeds(f.view(), &[], &c));
    bad(region_from_seeds(f.view(), &[(4, 0)], &c));
    bad(region_from_seeds(f.view(), &[(0, 5)], &c));
    bad(region_from_seeds(
        f.view(),
        &[(0, 0)],
        &Criterion::new(f32::NAN),
    ));
    bad(region_from_seeds(
        f.view(),
        &[(0, 0)],
        &Criterion::new(-1.0),
    ));
    bad(region_from_seeds(
        f3.view(),
        &[(0, 0)],
        &Criterion::per_channel(vec![1.0, 2.0]),
    ));
    bad(region_from_seeds(
        f3.view(),
        &[(0, 0)],
        &c.clone().reference(Reference::Value(vec![1.0, 2.0])),
    ));
    bad(region_from_seeds(
        f.view(),
        &[(0, 0)],
        &c.clone().reference(Reference::Value(vec![f32::NAN])),
    ));
    bad(region_from_seeds(
        f.view(),
        &[(0, 0)],
        &c.clone().boundary(Boundary::Periodic).absorb(true),
    ));
    bad(region_from_seeds(
        Array3::<u8>::zeros((4, 5, 0)).view(),
        &[(0, 0)],
        &c,
    ));
    bad(region_from_seeds(
        Array2::<u8>::zeros((0, 3)).view(),
        &[(0, 0)],
        &c,
    ));
    bad(RegionGrower::new(c.clone().boundary(Boundary::PeriodicX))
        .method(Method::Scanline)
        .grow(f.view(), &[(0, 0)]));
    let mut out = Array2::<u8>::zeros((5, 4));
    let r = RegionGrower::new(c).grow_into(f.view(), &[(0, 0)], out.view_mut());
    assert!(matches!(r, Err(Error::ShapeMismatch { .. })), "{r:?}");
    // Per-channel tolerance of the right length is fine.
    region_from_seeds(
        f3.view(),
        &[(0, 0)],
        &Criterion::per_channel(vec![1.0, 2.0, 3.0]),
    )
    .unwrap();
}

// ---------------------------------------------------------------- GPU

// Built with the `cuda` feature only: the module and its entry points exist only then.
#[cfg(feature = "cuda")]
mod gpu {
    use super::*;
    use clusterlab::Backend;

    fn gpu_or_skip() -> bool {
        match clusterlab::cuda::cuda_available() {
            Ok(_) => true,
            Err(e) => {
                eprintln!("no GPU: {e}");
                false
            }
        }
    }

    #[test]
    #[ignore = "needs a CUDA device"]
    fn gpu_matches_the_oracle() {
        assert!(gpu_or_skip());
        let n = sweep(
            |c| {
                RegionGrower::new(c.clone())
                    .backend(Backend::Cuda { device: 0 })
                    .unwrap()
            },
            false,
            21,
        );
        eprintln!("{n} cases");
    }

    #[test]
    #[ignore = "needs a CUDA device"]
    fn gpu_mask_equals_cpu_mask_on_large_fields() {
        assert!(gpu_or_skip());
        let mut r = rng(22);
        let mut cases = 0;
        for (h, w) in [(1000, 1001), (2048, 2048), (777, 1500)] {
            for conn in CONNS {
                for absorb in [false, true] {
                    for c in [1, 3] {
                        let integral = c == 1;
                        let field =
                            random_field(h, w, c, if c == 1 { 3 } else { 2 }, !integral, &mut r);
                        let seeds = random_seeds(h, w, [1, 5, 100][cases % 3], &mut r);
                        let req = random_req(c, conn, Boundary::Open, absorb, &mut r);
                        let crit = req.criterion();
                        let cpu = RegionGrower::new(crit.clone())
                            .grow(field.view(), &seeds)
                            .unwrap();
                        let mut gpu = RegionGrower::new(crit)
                            .backend(Backend::Cuda { device: 0 })
                            .unwrap();
                        assert_eq!(
                            gpu.grow(field.view(), &seeds).unwrap(),
                            cpu,
                            "{h}x{w} {req:?}"
                        );
                        if integral {
                            let f8 = field.mapv(|v| v as u8);
                            assert_eq!(gpu.grow(f8.view(), &seeds).unwrap(), cpu);
                        }
                        cases += 1;
                    }
                }
            }
        }
        eprintln!("{cases} cases");
    }

    #[test]
    #[ignore = "needs a CUDA device"]
    fn gpu_device_resident_entry_point() {
        use clusterlab::cuda::CudaRegionGrower;
        assert!(gpu_or_skip());
        let mut r = rng(23);
        let (h, w, c) = (300, 200, 3);
        let field = random_field(h, w, c, 2, true, &mut r);
        let seeds = random_seeds(h, w, 10, &mut r);
        for reference in [None, Some(vec![0.5, 1.0, 0.5])] {
            let req = Req {
                tol: vec![0.6],
                reference,
                conn: Connectivity::Eight,
                boundary: Boundary::PeriodicY,
                absorb: true,
            };
            let expect = oracle(field.view(), &seeds, &req);
            let mut g = CudaRegionGrower::new(0, req.criterion()).unwrap();
            let stream = g.stream().clone();
            let dev = stream.clone_htod(field.as_slice().unwrap()).unwrap();
            let mut out = stream.alloc_zeros::<u8>(h * w).unwrap();
            g.grow_device(&dev, h, w, c, &seeds, &mut out).unwrap();
            let host = stream.clone_dtoh(&out).unwrap();
            assert_eq!(
                Array2::from_shape_vec((h, w), host).unwrap(),
                expect,
                "{req:?}"
            );
            // Wrong buffer lengths are an error.
            let r = g.grow_device(&dev, h, w + 1, c, &seeds, &mut out);
            assert!(matches!(r, Err(Error::InvalidArgument(_))));
        }
    }
}
