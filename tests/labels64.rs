//! 64-bit labels: the labeling battery against the independent oracle through `u64` labels,
//! `u64` labels equal to the `u32` ones widened on many shapes, densities, connectivities,
//! boundaries and in segment mode (and by proptest), the typed refusals (too many sites for
//! `u32`, more memory than the machine has), and — ignored here, run on the 128 GB machine — the
//! band oracle beyond 2^32 sites.

mod common;

use clusterlab::{
    label, label64, Algorithm, Backend, Boundary, Connectivity, Error, LabelValue, Labeler, Labels,
    Parallelism, Result, SiteValue, SizeCounts, MAX_SITES, MAX_SITES_64,
};
use common::battery::{battery, Scale, Subject, BOUNDARIES, CONNECTIVITIES};
use common::{random_lattice, rng, segment_lattice};
use ndarray::{s, Array2, ArrayView2, ShapeBuilder};
use proptest::prelude::*;

/// A labeler per configuration, labeling into `u64` and narrowing for the battery's checks
/// (each label must fit: the battery's lattices are small).
struct Wide {
    algorithm: Algorithm,
    parallelism: Parallelism,
    cache: Vec<((Connectivity, Boundary, bool), Labeler)>,
}

impl Subject for Wide {
    fn label<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        c: Connectivity,
        b: Boundary,
        segments: bool,
    ) -> Result<Labels> {
        let key = (c, b, segments);
        let i = match self.cache.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                let labeler = Labeler::new(c, b)
                    .segments(segments)
                    .algorithm(self.algorithm)
                    .parallelism(self.parallelism);
                self.cache.push((key, labeler));
                self.cache.len() - 1
            }
        };
        let wide = self.cache[i].1.label64(lattice)?;
        let (h, w) = lattice.dim();
        // Back to `u32` through `label_into`'s u32 path's output type, checking each label fits.
        let narrow = wide
            .array()
            .mapv(|l| u32::try_from(l).expect("a small lattice's label"));
        assert_eq!(narrow.dim(), (h, w));
        Ok(narrow_labels(narrow, wide.count()))
    }
}

/// `Labels` of a `u32` image, which must be a canonical labeling. `Labels` has no public
/// constructor: the image is labeled again in segment mode with 8-connectivity on a torus, which
/// joins every pair of neighbours any connectivity and boundary can (clusters stay connected) and
/// never two distinct labels (different values), numbering in raster order of first sites — so
/// it gives back the image exactly when the image is canonical, which is asserted; the battery
/// then checks the partition against the oracle.
fn narrow_labels(array: Array2<u32>, count: usize) -> Labels {
    let labels = Labeler::new(Connectivity::Eight, Boundary::Periodic)
        .segments(true)
        .label(array.view())
        .expect("relabeling");
    assert_eq!(labels.array(), &array, "u64 labels not in scipy numbering");
    assert_eq!(labels.count(), count);
    labels
}

fn wide(algorithm: Algorithm, parallelism: Parallelism) -> usize {
    let mut subject = Wide {
        algorithm,
        parallelism,
        cache: Vec::new(),
    };
    let name = format!("{algorithm:?} into u64 labels, {parallelism:?}");
    battery(&mut subject, &name, 64 + algorithm as u64, Scale::CI)
}

#[test]
fn battery_strips_u64() {
    assert!(wide(Algorithm::Strips, Parallelism::Threads(1)) >= 1000);
    assert!(wide(Algorithm::Auto, Parallelism::Threads(3)) >= 1000);
}

#[test]
fn battery_oracles_u64() {
    assert!(wide(Algorithm::Bfs, Parallelism::Sequential) >= 1000);
    assert!(wide(Algorithm::HoshenKopelman, Parallelism::Sequential) >= 1000);
}

/// `u64` labels of `lattice` (through a reused labeler and `label_into`) and the `u32` labels,
/// widened, must be equal, with equal counts.
fn same_as_u32<T: SiteValue>(
    labeler: &mut Labeler,
    lattice: ArrayView2<'_, T>,
) -> std::result::Result<(), String> {
    let narrow = labeler.label(lattice).map_err(|e| e.to_string())?;
    let wide = labeler.label64(lattice).map_err(|e| e.to_string())?;
    let mut into = Array2::<u64>::from_elem(lattice.dim(), 7);
    let n = labeler
        .label_into(lattice, into.view_mut())
        .map_err(|e| e.to_string())?;
    let widened = narrow.array().mapv(u64::from);
    if wide.count() != narrow.count() || n != narrow.count() {
        return Err(format!(
            "counts: u64 {} / {n}, u32 {}",
            wide.count(),
            narrow.count()
        ));
    }
    if *wide.array() != widened || into != widened {
        return Err(format!("labels differ on a {:?} lattice", lattice.dim()));
    }
    if wide.sizes() != narrow.sizes() {
        return Err("sizes differ".into());
    }
    Ok(())
}

const SHAPES: [(usize, usize); 14] = [
    (1, 1),
    (1, 2),
    (2, 1),
    (1, 200),
    (200, 1),
    (2, 2),
    (3, 130),
    (130, 3),
    (17, 63),
    (64, 64),
    (65, 65),
    (33, 129),
    (100, 257),
    (257, 31),
];

/// Every shape × density × connectivity × boundary, occupancy and segments, with the strip
/// labeler on 1 and 3 threads and with the oracle algorithms.
#[test]
fn u64_equals_u32_widened_everywhere() {
    let mut rng = rng(64);
    let mut cases = 0;
    let runs = [
        (Algorithm::Auto, Parallelism::Threads(1)),
        (Algorithm::Auto, Parallelism::Threads(3)),
        (Algorithm::Bfs, Parallelism::Sequential),
        (Algorithm::HoshenKopelman, Parallelism::Sequential),
    ];
    for (algorithm, parallelism) in runs {
        {
            for c in CONNECTIVITIES {
                for b in BOUNDARIES {
                    for segments in [false, true] {
                        let mut labeler = Labeler::new(c, b)
                            .segments(segments)
                            .algorithm(algorithm)
                            .parallelism(parallelism);
                        for (h, w) in SHAPES {
                            for p in [0.0, 0.2, 0.5927, 0.8, 1.0] {
                                let r = if segments {
                                    let a = segment_lattice(h, w, p, 3, &mut rng);
                                    same_as_u32(&mut labeler, a.view())
                                } else {
                                    let a = random_lattice(h, w, p, &mut rng);
                                    same_as_u32(&mut labeler, a.view())
                                };
                                if let Err(e) = r {
                                    panic!("{algorithm:?} {parallelism:?} {c} {b} seg={segments} {h}×{w} p={p}: {e}");
                                }
                                cases += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    assert_eq!(cases, runs.len() * 2 * 4 * 2 * SHAPES.len() * 5);
}

/// Strided, transposed and sliced inputs and outputs whose rows are not contiguous.
#[test]
fn views_that_are_not_contiguous() {
    let mut rng = rng(7);
    let a = random_lattice(90, 70, 0.6, &mut rng);
    for b in BOUNDARIES {
        let mut labeler = Labeler::new(Connectivity::Eight, b);
        for view in [a.t(), a.slice(s![..;2, 1..;3]), a.slice(s![5..80, ..])] {
            let narrow = labeler.label(view).unwrap();
            // A column-major output: rows not contiguous, labeled through the staging buffer.
            let mut out = Array2::<u64>::zeros(view.dim().f());
            let n = labeler.label_into(view, out.view_mut()).unwrap();
            assert_eq!(n, narrow.count());
            assert_eq!(out, narrow.array().mapv(u64::from));
        }
    }
}

/// The one-shot functions agree, and `Lattice::label64_with` for every site type.
#[test]
fn one_shot_and_lattice() {
    let mut rng = rng(11);
    let a = random_lattice(61, 77, 0.55, &mut rng);
    for c in CONNECTIVITIES {
        for b in BOUNDARIES {
            let narrow = label(a.view(), c, b).unwrap();
            let wide = label64(a.view(), c, b).unwrap();
            assert_eq!(wide.count(), narrow.count());
            assert_eq!(wide.array(), &narrow.array().mapv(u64::from));
        }
    }
    let seg = segment_lattice(40, 50, 0.7, 4, &mut rng);
    let mut labeler = Labeler::new(Connectivity::Four, Boundary::Open).segments(true);
    for lattice in [
        clusterlab::io::Lattice::U8(seg.mapv(|v| v as u8)),
        clusterlab::io::Lattice::U16(seg.mapv(|v| v as u16)),
        clusterlab::io::Lattice::U32(seg.clone()),
    ] {
        let narrow = lattice.label_with(&mut labeler).unwrap();
        let wide = lattice.label64_with(&mut labeler).unwrap();
        assert_eq!(wide.array(), &narrow.array().mapv(u64::from));
    }
    assert_eq!(<u64 as LabelValue>::DTYPE, "uint64");
    assert_eq!(<u32 as LabelValue>::MAX_SITES, MAX_SITES);
    assert_eq!(<u64 as LabelValue>::MAX_SITES, MAX_SITES_64);
}

/// A view of `h × w` sites all occupied, backed by one byte (zero strides): a lattice of any
/// size without its memory.
fn broadcast(h: usize, w: usize, one: &[u8; 1]) -> ArrayView2<'_, u8> {
    ArrayView2::from_shape((h, w).strides((0, 0)), one).unwrap()
}

/// Beyond `MAX_SITES`, `u32` labels are a typed error that names the `u64` alternative, before
/// anything is allocated.
#[test]
fn u32_beyond_max_sites_names_u64() {
    let one = [1u8];
    let big = broadcast(70_000, 70_000, &one);
    let mut labeler = Labeler::new(Connectivity::Four, Boundary::Open);
    match labeler.label(big) {
        Err(e @ Error::TooManySites { sites, max }) => {
            assert_eq!((sites, max), (4_900_000_000, MAX_SITES));
            let msg = e.to_string();
            assert!(msg.contains("label64") && msg.contains("uint64"), "{msg}");
        }
        other => panic!("{other:?}"),
    }
    // Through `label_into` with u32 output: the site count is checked before the output.
    let mut small = Array2::<u32>::zeros((2, 2));
    assert!(matches!(
        labeler.label_into(broadcast(1, 5, &one), small.view_mut()),
        Err(Error::ShapeMismatch { .. })
    ));
    match label64(
        broadcast(1 << 31, 1 << 29, &one),
        Connectivity::Four,
        Boundary::Open,
    ) {
        Err(e @ Error::TooManySites { max, .. }) => {
            assert_eq!(max, MAX_SITES_64);
            assert!(e.to_string().contains("u64 labels"), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

/// A `u64` labeling that cannot fit is refused before it allocates, with the estimate of the
/// bytes: 10^12 sites need 8 TB of labels alone, more than any machine this runs on.
#[test]
fn more_than_memory_is_refused_with_the_estimate() {
    let one = [1u8];
    let big = broadcast(1_000_000, 1_000_000, &one);
    for segments in [false, true] {
        let mut labeler = Labeler::new(Connectivity::Four, Boundary::Open)
            .segments(segments)
            .parallelism(Parallelism::Threads(2));
        match labeler.label64(big) {
            Err(e @ Error::OutOfMemory { bytes, .. }) => {
                // Labels (8 a site) + the zero-stride input's contiguous copy (1 a site) + the
                // input (1 a site) + scratch (masks, a forest of at least 16 bytes a run).
                assert!(bytes >= 10_000_000_000_000 + 2 * 125_000_000_000, "{bytes}");
                let msg = e.to_string();
                assert!(
                    msg.contains("64-bit labeling of 1000000 × 1000000 sites"),
                    "{msg}"
                );
                assert!(msg.contains("available"), "{msg}");
            }
            other => panic!("{other:?}"),
        }
        // Into the caller's own array: the backend checks its scratch. An output of the shape
        // with zero strides would alias; instead check the shape error comes first.
        let mut out = Array2::<u64>::zeros((1, 1));
        assert!(matches!(
            labeler.label_into(big, out.view_mut()),
            Err(Error::ShapeMismatch { .. })
        ));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Random shapes, densities, connectivities, boundaries and segment mode: `u64` labels are the
    /// `u32` labels widened.
    #[test]
    fn proptest_u64_equals_u32(
        h in 1usize..90,
        w in 1usize..150,
        p in 0.0f64..1.0,
        eight in any::<bool>(),
        b in 0usize..4,
        segments in any::<bool>(),
        threads in 1usize..4,
        seed in any::<u64>(),
    ) {
        let c = if eight { Connectivity::Eight } else { Connectivity::Four };
        let mut labeler = Labeler::new(c, BOUNDARIES[b])
            .segments(segments)
            .parallelism(Parallelism::Threads(threads));
        let mut rng = rng(seed);
        let r = if segments {
            same_as_u32(&mut labeler, segment_lattice(h, w, p, 2, &mut rng).view())
        } else {
            same_as_u32(&mut labeler, random_lattice(h, w, p, &mut rng).view())
        };
        prop_assert!(r.is_ok(), "{:?}", r);
    }
}

/// The band oracle beyond 2^32 sites: bands of full width, each a copy of one random lattice
/// (`band_h − 1` rows) and an empty row. Clusters never cross bands and band `k`'s clusters all
/// come before band `k + 1`'s in raster order, so the expected labels are the band's own (`u32`)
/// labels plus `k ×` its cluster count. Checked on the output without a second image.
fn band_oracle(
    h: usize,
    w: usize,
    band_h: usize,
    c: Connectivity,
    b: Boundary,
    threads: usize,
    backend: Backend,
) {
    assert!(matches!(b, Boundary::Open | Boundary::PeriodicX));
    let mut rng = rng(h as u64 ^ w as u64);
    let mut band = random_lattice(band_h, w, 0.5927, &mut rng);
    band.row_mut(band_h - 1).fill(0);
    let expected = label(band.view(), c, b).unwrap();
    let per_band = expected.count();
    let mut lattice = Array2::<u8>::zeros((h, w));
    for (y, mut row) in lattice.rows_mut().into_iter().enumerate() {
        row.assign(&band.row(y % band_h));
    }
    let mut labeler = Labeler::new(c, b)
        .parallelism(Parallelism::Threads(threads))
        .backend(backend)
        .unwrap();
    let started = std::time::Instant::now();
    let labels = labeler.label64(lattice.view()).unwrap();
    eprintln!(
        "{h} × {w} {c} {b}: {} clusters in {:.1} s on {} ({threads} threads)",
        labels.count(),
        started.elapsed().as_secs_f64(),
        labeler.backend_name()
    );
    drop(lattice);
    let bands = h.div_ceil(band_h);
    let full = h / band_h;
    let last = h - full * band_h;
    // The last, partial band: its clusters are those of the band's first `last` rows.
    let tail = if last > 0 {
        label(band.slice(s![..last, ..]), c, b).unwrap().count()
    } else {
        0
    };
    assert_eq!(labels.count(), full * per_band + tail);
    let image = labels.array();
    for y in 0..h {
        let k = (y / band_h) as u64;
        let r = y % band_h;
        let shift = k * per_band as u64;
        let want = expected.array().row(r);
        for (x, &l) in image.row(y).iter().enumerate() {
            let e = want[x] as u64;
            if k as usize == bands - 1 && last > 0 {
                // The partial band is labeled like the band's top rows: compare by partition.
                assert_eq!(l == 0, e == 0, "({y}, {x})");
                continue;
            }
            assert_eq!(l, if e == 0 { 0 } else { e + shift }, "({y}, {x})");
        }
    }
}

/// The band oracle's own check, run here below 2^32 sites (full bands and a partial one, open
/// and periodic in x, both connectivities, 1 and 3 threads), so that the big-memory test's
/// logic is itself tested.
#[test]
fn band_oracle_logic_small() {
    for c in CONNECTIVITIES {
        for b in [Boundary::Open, Boundary::PeriodicX] {
            band_oracle(300, 97, 40, c, b, 1, Backend::Cpu);
            band_oracle(320, 130, 40, c, b, 3, Backend::Cpu);
        }
    }
}

#[test]
#[ignore = "needs ~64 GB of RAM (the GPU machine)"]
fn band_oracle_70000_squared() {
    assert!(70_000usize * 70_000 > u32::MAX as usize);
    let (c, b) = (Connectivity::Four, Boundary::Open);
    band_oracle(70_000, 70_000, 1000, c, b, 16, Backend::Cpu);
}

#[test]
#[ignore = "needs ~64 GB of RAM (the GPU machine)"]
fn band_oracle_65536_by_65600_eight_periodic_x() {
    assert!(65_536usize * 65_600 > u32::MAX as usize);
    band_oracle(
        65_536,
        65_600,
        4097,
        Connectivity::Eight,
        Boundary::PeriodicX,
        16,
        Backend::Cpu,
    );
}

/// The same band oracle on GPU 0 (through `Labeler`, host arrays): with the CPU tests above,
/// the GPU's and the CPU's labels of the 70000² lattice are the same (both equal the oracle's).
#[test]
#[ignore = "needs a CUDA device"]
fn band_oracle_70000_squared_cuda() {
    for c in CONNECTIVITIES {
        let cuda = Backend::Cuda { device: 0 };
        band_oracle(70_000, 70_000, 1000, c, Boundary::Open, 16, cuda);
    }
}

/// Size counts beyond `MAX_SITES` on the CPU: what 32-bit run indices cannot number is refused
/// with a typed error before the input is copied (a zero-stride view would be).
#[test]
fn size_counts_beyond_max_sites_refuse_what_they_cannot_count() {
    let one = [1u8];
    let mut counts = SizeCounts::new();
    let mut labeler = Labeler::new(Connectivity::Four, Boundary::Open).segments(true);
    match labeler.size_counts_into(broadcast(70_000, 70_000, &one), &mut counts) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("segment mode"), "{m}"),
        other => panic!("{other:?}"),
    }
    let mut labeler = Labeler::new(Connectivity::Four, Boundary::Open);
    match labeler.size_counts_into(broadcast(100_000, 100_000, &one), &mut counts) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("32-bit"), "{m}"),
        other => panic!("{other:?}"),
    }
    let mut analyzer = clusterlab::Analyzer::new(Connectivity::Eight, Boundary::Open);
    assert!(matches!(
        analyzer.size_counts_into(broadcast(100_000, 100_000, &one), &mut counts),
        Err(Error::InvalidArgument(_))
    ));
}

/// Size counts of the band lattice beyond 2^32 sites: each full band's clusters (n_s and the
/// spanning ones) once per band.
#[test]
#[ignore = "needs ~64 GB of RAM (the GPU machine)"]
fn band_size_counts_70000_squared() {
    let (h, w, band_h) = (70_000, 70_000, 1000);
    for c in CONNECTIVITIES {
        let mut rng = rng(5);
        let mut band = random_lattice(band_h, w, 0.5927, &mut rng);
        band.row_mut(band_h - 1).fill(0);
        let mut want = SizeCounts::new();
        let mut labeler = Labeler::new(c, Boundary::Open);
        labeler.size_counts_into(band.view(), &mut want).unwrap();
        let lattice = Array2::from_shape_fn((h, w), |(y, x)| band[[y % band_h, x]]);
        let mut got = SizeCounts::new();
        labeler.size_counts_into(lattice.view(), &mut got).unwrap();
        let bands = (h / band_h) as u64;
        let counts: Vec<(u64, u64)> = want.counts.iter().map(|&(s, n)| (s, n * bands)).collect();
        assert_eq!(got.counts, counts);
        let mut percolating = Vec::new();
        for _ in 0..bands {
            percolating.extend(want.percolating.iter().copied());
        }
        percolating.sort_unstable();
        assert_eq!(got.percolating, percolating);
        assert_eq!(got.clusters(), want.clusters() * bands as usize);
    }
}

/// Site percolation at `p` from a counter-based hash of (seed, site), on every core (the crate's
/// generator is sequential: too slow at 4.9·10⁹ sites).
fn hashed_lattice(h: usize, w: usize, p: f64, seed: u64) -> Array2<u8> {
    use rayon::prelude::*;
    let threshold = (p * 2f64.powi(32)) as u64;
    let mut v = vec![0u8; h * w];
    v.par_chunks_mut(1 << 20)
        .enumerate()
        .for_each(|(c, chunk)| {
            for (i, s) in chunk.iter_mut().enumerate() {
                let mut z = seed ^ (((c << 20) + i) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^= z >> 31;
                *s = u8::from((z >> 32) < threshold);
            }
        });
    Array2::from_shape_vec((h, w), v).unwrap()
}

/// The check: one random 70000 × 70000 lattice (4.9·10⁹ sites) at p_c on a torus,
/// labeled with 64-bit labels on the CPU (all cores) and on GPU 0 through the same `Labeler`
/// front end, gives identical labels and counts, with both connectivities. About 90 GB of host
/// memory at the peak (the lattice, the CPU's labels and the GPU's), so the CPU's labeler and its
/// scratch are dropped before the GPU labels.
#[test]
#[ignore = "needs a CUDA device and ~96 GB of RAM (the GPU machine)"]
fn random_70000_squared_cpu_equals_gpu() {
    let (h, w) = (70_000, 70_000);
    let lattice = hashed_lattice(h, w, 0.5927, 70_000);
    for c in CONNECTIVITIES {
        let b = Boundary::Periodic;
        let started = std::time::Instant::now();
        let cpu = Labeler::new(c, b).label64(lattice.view()).unwrap();
        let cpu_s = started.elapsed().as_secs_f64();
        let started = std::time::Instant::now();
        let mut gpu = Labeler::new(c, b)
            .backend(Backend::Cuda { device: 0 })
            .unwrap();
        let got = gpu.label64(lattice.view()).unwrap();
        eprintln!(
            "{h} × {w} {c} {b}: {} clusters; CPU {cpu_s:.1} s, {} {:.1} s (host path)",
            cpu.count(),
            gpu.backend_name(),
            started.elapsed().as_secs_f64()
        );
        assert_eq!(got.count(), cpu.count(), "{c}: counts");
        // Row by row, so that a difference names its place without a 39 GB temporary.
        for (y, (a, b)) in got
            .array()
            .rows()
            .into_iter()
            .zip(cpu.array().rows())
            .enumerate()
        {
            if a != b {
                let x = a.iter().zip(b.iter()).position(|(p, q)| p != q).unwrap();
                panic!(
                    "{c}: labels differ first at ({y}, {x}): GPU {} CPU {}",
                    a[x], b[x]
                );
            }
        }
        let top = got.array().iter().copied().max().unwrap();
        assert_eq!(top as usize, got.count(), "{c}: labels number 1..=count");
    }
}
