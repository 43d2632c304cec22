//! Fixed-p batches: the CPU batch equals an independent path (the crate's `Analyzer` on the
//! same generated lattice; for bond percolation a breadth-first walk of the bonds that tracks
//! unwrapped positions) exactly, does not depend on the thread count, and agrees with
//! Newman–Ziff within 4σ; the GPU batch equals the CPU batch exactly (ignored without a device).

use clusterlab::percolation::{
    label_batch, BatchSampler, BatchSpec, Method, Model, SampleStats, Study, StudyConfig, Wrapping,
};
use clusterlab::{
    Analyzer, Backend, Boundary, Connectivity, Labeler, Measures, Options, Parallelism,
};
use ndarray::Array3;
use std::collections::VecDeque;
use std::time::Duration;

const BOUNDARIES: [Boundary; 4] = [
    Boundary::Open,
    Boundary::Periodic,
    Boundary::PeriodicX,
    Boundary::PeriodicY,
];
const CONNS: [Connectivity; 2] = [Connectivity::Four, Connectivity::Eight];

fn cpu(threads: usize) -> BatchSampler {
    let options = Options::default()
        .backend(Backend::Cpu)
        .parallelism(Parallelism::Threads(threads));
    BatchSampler::new(&options).unwrap()
}

fn spec(c: Connectivity, b: Boundary, w: usize, h: usize, p: f64, count: u64) -> BatchSpec {
    let mut s = BatchSpec::new(c, b, w, h, p, 0x5eed_0000_0000_0017, 40, count).unwrap();
    s.histogram = true;
    s
}

/// The statistics of one lattice from the analyzer's cluster table.
fn independent(spec: &BatchSpec, index: u64, ns: &mut [u64]) -> SampleStats {
    let lattice = spec.lattice(index);
    let table = Analyzer::new(spec.connectivity, spec.boundary)
        .backend(Backend::Cpu)
        .unwrap()
        .measures(Measures::Shape)
        .analyze(lattice.view())
        .unwrap();
    let mut s = SampleStats {
        occupied: lattice.iter().filter(|&&v| v != 0).count() as u32,
        ..SampleStats::default()
    };
    for row in table.rows() {
        let size = row.size as u32;
        let x = row.wraps_x || row.spans_x;
        let y = row.wraps_y || row.spans_y;
        s.largest = s.largest.max(size);
        if x || y {
            s.percolating += size;
            s.flags |= if x { SampleStats::X } else { 0 }
                | if y { SampleStats::Y } else { 0 }
                | if x && y { SampleStats::BOTH } else { 0 };
        } else {
            s.finite_s2 += u64::from(size) * u64::from(size);
            ns[size as usize] += 1;
        }
    }
    s
}

fn bond_spec(b: Boundary, w: usize, h: usize, p: f64, count: u64) -> BatchSpec {
    let mut s = BatchSpec::bond(b, w, h, p, 0x5eed_0000_0000_0018, 90, count).unwrap();
    s.histogram = true;
    s
}

/// The statistics of one bond configuration by a breadth-first walk over its bonds (literal:
/// on a torus one site wide a `right` bond joins a site to itself) that gives every site an
/// unwrapped position: a bond reaching a visited site at another position closes a loop that
/// winds along the axes where the positions differ. Spanning from the edges touched.
fn bond_walk(spec: &BatchSpec, index: u64, ns: &mut [u64]) -> SampleStats {
    let (right, down) = spec.bond_masks(index);
    let (h, w, b) = (spec.height, spec.width, spec.boundary);
    let (wx, wy) = (b.wraps_x(), b.wraps_y());
    let mut pos: Vec<Option<(i64, i64)>> = vec![None; h * w];
    let mut s = SampleStats {
        occupied: (h * w) as u32,
        ..SampleStats::default()
    };
    let mut clusters = 0;
    for start in 0..h * w {
        if pos[start].is_some() {
            continue;
        }
        clusters += 1;
        let (mut size, mut wrap, mut touch) = (0u32, [false; 2], [false; 4]);
        pos[start] = Some(((start % w) as i64, (start / w) as i64));
        let mut queue = VecDeque::from([start]);
        while let Some(u) = queue.pop_front() {
            size += 1;
            let (y, x) = (u / w, u % w);
            touch[0] |= x == 0;
            touch[1] |= x + 1 == w;
            touch[2] |= y == 0;
            touch[3] |= y + 1 == h;
            let (ux, uy) = pos[u].unwrap();
            let (xl, yu) = ((x + w - 1) % w, (y + h - 1) % h);
            let steps = [
                (
                    right[(y, x)] != 0 && (x + 1 < w || wx),
                    y,
                    (x + 1) % w,
                    1,
                    0,
                ),
                (right[(y, xl)] != 0 && (x > 0 || wx), y, xl, -1, 0),
                (down[(y, x)] != 0 && (y + 1 < h || wy), (y + 1) % h, x, 0, 1),
                (down[(yu, x)] != 0 && (y > 0 || wy), yu, x, 0, -1),
            ];
            for (open, vy, vx, dx, dy) in steps {
                if !open {
                    continue;
                }
                let (v, at) = (vy * w + vx, (ux + dx, uy + dy));
                match pos[v] {
                    None => {
                        pos[v] = Some(at);
                        queue.push_back(v);
                    }
                    Some(p) => {
                        wrap[0] |= p.0 != at.0;
                        wrap[1] |= p.1 != at.1;
                    }
                }
            }
        }
        let x = wrap[0] || (!wx && touch[0] && touch[1]);
        let y = wrap[1] || (!wy && touch[2] && touch[3]);
        s.largest = s.largest.max(size);
        if x || y {
            s.percolating += size;
            s.flags |= if x { SampleStats::X } else { 0 }
                | if y { SampleStats::Y } else { 0 }
                | if x && y { SampleStats::BOTH } else { 0 };
        } else {
            s.finite_s2 += u64::from(size) * u64::from(size);
            ns[size as usize] += 1;
        }
    }
    // The walk's clusters are the bond labeler's.
    let labels = Labeler::new(Connectivity::Four, b)
        .label_bonds(right.view(), down.view())
        .unwrap();
    assert_eq!(labels.count(), clusters);
    s
}

fn shapes() -> Vec<(usize, usize)> {
    vec![
        (1, 1),
        (1, 6),
        (6, 1),
        (2, 2),
        (2, 3),
        (3, 5),
        (31, 33),
        (33, 17),
        (64, 64),
        (65, 7),
    ]
}

#[test]
fn cpu_batch_equals_the_analyzer_on_the_same_lattices() {
    let mut sampler = cpu(2);
    for (w, h) in shapes() {
        for c in CONNS {
            for b in BOUNDARIES {
                for p in [0.2, 0.45, 0.5927, 0.75, 1.0] {
                    let s = spec(c, b, w, h, p, 5);
                    let got = sampler.sample(&s).unwrap();
                    let mut ns = vec![0u64; w * h + 1];
                    let want: Vec<SampleStats> = (0..5)
                        .map(|k| independent(&s, s.first + k, &mut ns))
                        .collect();
                    let ctx = format!("{w}x{h} {c:?} {b:?} p={p}");
                    assert_eq!(got.samples, want, "{ctx}");
                    assert_eq!(got.ns, ns, "{ctx}");
                }
            }
        }
    }
}

#[test]
fn cpu_bond_batch_equals_a_walk_of_the_bonds() {
    let mut sampler = cpu(2);
    for (w, h) in shapes() {
        for b in BOUNDARIES {
            for p in [0.0, 0.25, 0.5, 0.75, 1.0] {
                let s = bond_spec(b, w, h, p, 4);
                let got = sampler.sample(&s).unwrap();
                let mut ns = vec![0u64; w * h + 1];
                let want: Vec<SampleStats> = (0..4)
                    .map(|k| bond_walk(&s, s.first + k, &mut ns))
                    .collect();
                let ctx = format!("bonds {w}x{h} {b:?} p={p}");
                assert_eq!(got.samples, want, "{ctx}");
                assert_eq!(got.ns, ns, "{ctx}");
            }
        }
    }
    // Every site is a cluster at p = 0; at p = 1 one cluster wraps both ways on a torus.
    let s = bond_spec(Boundary::Periodic, 7, 5, 0.0, 1);
    let none = sampler.sample(&s).unwrap();
    assert_eq!(none.ns[1], 35);
    assert_eq!(none.samples[0].finite_s2, 35);
    let all = sampler
        .sample(&bond_spec(Boundary::Periodic, 7, 5, 1.0, 1))
        .unwrap();
    assert_eq!(all.samples[0].flags, 7);
    assert_eq!(all.samples[0].percolating, 35);
}

#[test]
fn cpu_batch_does_not_depend_on_threads() {
    let s = spec(Connectivity::Eight, Boundary::Periodic, 37, 29, 0.41, 41);
    let one = cpu(1).sample(&s).unwrap();
    let three = cpu(3).sample(&s).unwrap();
    assert_eq!(one, three);
    // A batch split in two is the whole batch.
    let mut a = s;
    a.count = 17;
    let mut b = s;
    b.first = s.first + 17;
    b.count = 24;
    let (ra, rb) = (cpu(2).sample(&a).unwrap(), cpu(2).sample(&b).unwrap());
    let joined: Vec<SampleStats> = ra.samples.iter().chain(&rb.samples).copied().collect();
    assert_eq!(joined, one.samples);
    let bonds = bond_spec(Boundary::PeriodicY, 31, 22, 0.5, 29);
    assert_eq!(
        cpu(1).sample(&bonds).unwrap(),
        cpu(3).sample(&bonds).unwrap()
    );
}

#[test]
fn analyze_batch_takes_an_ensemble() {
    let s = spec(Connectivity::Four, Boundary::Periodic, 20, 12, 0.6, 9);
    let mut stack = Array3::<u8>::zeros((9, 12, 20));
    for k in 0..9 {
        stack
            .index_axis_mut(ndarray::Axis(0), k)
            .assign(&s.lattice(s.first + k as u64));
    }
    let mut sampler = cpu(2);
    let got = sampler
        .analyze_batch(stack.view(), s.connectivity, s.boundary, true)
        .unwrap();
    assert_eq!(got, sampler.sample(&s).unwrap());
}

/// `label_batch` labels every lattice of a stack as the labeler labels it alone.
#[test]
fn label_batch_labels_each_lattice() {
    let s = spec(Connectivity::Eight, Boundary::Periodic, 23, 17, 0.5, 7);
    let mut stack = Array3::<u8>::zeros((7, 17, 23));
    for k in 0..7 {
        stack
            .index_axis_mut(ndarray::Axis(0), k)
            .assign(&s.lattice(s.first + k as u64));
    }
    let options = Options::new(s.connectivity, s.boundary)
        .backend(Backend::Cpu)
        .parallelism(Parallelism::Threads(3));
    let (labels, counts) = label_batch(stack.view(), &options).unwrap();
    for (k, &count) in counts.iter().enumerate() {
        let one = clusterlab::label(
            stack.index_axis(ndarray::Axis(0), k),
            s.connectivity,
            s.boundary,
        )
        .unwrap();
        assert_eq!(labels.index_axis(ndarray::Axis(0), k), one.array());
        assert_eq!(count, one.count());
    }
}

/// Bad batches are typed errors.
#[test]
fn bad_batches_are_refused() {
    let c = Connectivity::Four;
    assert!(BatchSpec::new(c, Boundary::Open, 0, 4, 0.5, 1, 0, 1).is_err());
    assert!(BatchSpec::new(c, Boundary::Open, 4, 4, 1.5, 1, 0, 1).is_err());
    assert!(BatchSpec::new(c, Boundary::Open, 4, 4, 0.5, 1, u64::MAX, 2).is_err());
    assert!(BatchSpec::bond(Boundary::Open, 4, 0, 0.5, 1, 0, 1).is_err());
    let mut eight = BatchSpec::bond(Boundary::Open, 4, 4, 0.5, 1, 0, 1).unwrap();
    eight.connectivity = Connectivity::Eight;
    assert!(cpu(1).sample(&eight).is_err());
}

/// Newman–Ziff (binomial convolution of microcanonical sweeps) and fixed-p batches are two
/// independent estimates of R(p) and P∞(p): they agree within 4 combined standard errors
/// (σ = sqrt(σ_NZ² + σ_fixed²); 12 comparisons, a false alarm about 1e-3).
#[test]
fn newman_ziff_and_fixed_p_agree() {
    agree(Model::Site(Connectivity::Four), vec![0.55, 0.59, 0.63]);
}

/// The same for bond percolation at L = 16 around p_c = 1/2 (3000 sweeps of the 512 bonds,
/// 6000 configurations per point; σ of R about 0.008).
#[test]
fn newman_ziff_and_fixed_p_agree_for_bonds() {
    agree(Model::Bond, vec![0.46, 0.5, 0.54]);
}

fn agree(model: Model, grid: Vec<f64>) {
    let run = |method: Method, samples: u64| {
        let mut study = Study::new(StudyConfig {
            model,
            boundary: Boundary::Periodic,
            sizes: vec![(16, 16)],
            samples,
            seed: 3,
            p_grid: grid.clone(),
            command: String::new(),
            method,
        })
        .unwrap();
        let options = Options::default().backend(Backend::Cpu);
        study.run(&options, Duration::ZERO, |_, _| Ok(())).unwrap();
        study.results().unwrap()
    };
    let nz = run(Method::NewmanZiff, 3000);
    let fp = run(Method::FixedP, 6000);
    let (a, b) = (&nz.sizes[0].curves, &fp.sizes[0].curves);
    for (i, p) in grid.iter().enumerate() {
        let mut pairs = vec![(a.p_infinity[i], b.p_infinity[i])];
        for k in [Wrapping::H, Wrapping::E, Wrapping::B] {
            let idx = Wrapping::ALL.iter().position(|&w| w == k).unwrap();
            pairs.push((a.wrapping[idx][i], b.wrapping[idx][i]));
        }
        for (x, y) in pairs {
            let sigma = (x.stderr.powi(2) + y.stderr.powi(2)).sqrt();
            assert!(
                (x.value - y.value).abs() < 4.0 * sigma,
                "p = {p}: {x:?} vs {y:?}"
            );
        }
    }
}

#[cfg(feature = "cuda")]
mod gpu {
    use super::*;

    fn gpu() -> BatchSampler {
        BatchSampler::new(&Options::default().backend(Backend::Cuda { device: 0 })).unwrap()
    }

    fn same(gpu: &mut BatchSampler, cpu: &mut BatchSampler, s: &BatchSpec) {
        let g: clusterlab::percolation::BatchStats = gpu.sample(s).unwrap();
        let c = cpu.sample(s).unwrap();
        let ctx = format!(
            "{}x{} {:?} {:?} p={}",
            s.width, s.height, s.connectivity, s.boundary, s.p
        );
        if let Some(k) = (0..c.samples.len()).find(|&k| g.samples[k] != c.samples[k]) {
            panic!(
                "{ctx}: sample {k}: gpu {:?} cpu {:?}",
                g.samples[k], c.samples[k]
            );
        }
        assert_eq!(g.ns, c.ns, "{ctx}: n_s");
    }

    #[test]
    #[ignore = "needs a CUDA device"]
    fn gpu_batch_equals_cpu_batch_on_small_lattices() {
        let (mut g, mut c) = (gpu(), cpu(16));
        for (w, h) in shapes()
            .into_iter()
            .chain([(100, 37), (127, 129), (256, 256)])
        {
            for conn in CONNS {
                for b in BOUNDARIES {
                    for p in [0.3, 0.5927, 0.4073, 0.8] {
                        same(&mut g, &mut c, &spec(conn, b, w, h, p, 24));
                    }
                }
            }
        }
    }

    #[test]
    #[ignore = "needs a CUDA device"]
    fn gpu_batch_equals_cpu_batch_on_large_lattices() {
        let (mut g, mut c) = (gpu(), cpu(16));
        for (w, h) in [(300, 250), (513, 1000), (1024, 1024)] {
            for conn in CONNS {
                for b in [Boundary::Periodic, Boundary::Open, Boundary::PeriodicY] {
                    same(&mut g, &mut c, &spec(conn, b, w, h, 0.5927, 6));
                }
            }
        }
    }

    /// Bond percolation: shared-memory (L ≤ 256) and global-scratch lattices, every boundary.
    #[test]
    #[ignore = "needs a CUDA device"]
    fn gpu_bond_batch_equals_cpu_batch() {
        let (mut g, mut c) = (gpu(), cpu(16));
        for (w, h) in shapes()
            .into_iter()
            .chain([(100, 37), (127, 129), (256, 256)])
        {
            for b in BOUNDARIES {
                for p in [0.0, 0.3, 0.5, 0.7, 1.0] {
                    same(&mut g, &mut c, &bond_spec(b, w, h, p, 24));
                }
            }
        }
        for (w, h) in [(257, 256), (300, 250), (513, 1000), (1024, 1024)] {
            for b in BOUNDARIES {
                same(&mut g, &mut c, &bond_spec(b, w, h, 0.5, 6));
            }
        }
    }

    /// Site lattices whose edge tables do not fit in a 227 KiB block (these five, by
    /// `plans_refuse_what_a_block_cannot_hold` in `src/cuda/percolation_batch.rs`) go through
    /// the full-lattice analyzer: still equal to the CPU batch, generated or given. Bond
    /// configurations that large are refused.
    #[test]
    #[ignore = "needs a CUDA device"]
    fn gpu_batch_beyond_a_block_equals_cpu_batch() {
        let (mut g, mut c) = (gpu(), cpu(16));
        let four = Connectivity::Four;
        let eight = Connectivity::Eight;
        for (conn, b, w, h) in [
            (four, Boundary::Periodic, 1600, 1500),
            (eight, Boundary::Periodic, 1200, 1201),
            (four, Boundary::Open, 2000, 1700),
            (eight, Boundary::PeriodicY, 1700, 1300),
            (four, Boundary::PeriodicX, 3700, 5),
        ] {
            for p in [0.4073, 0.5927] {
                same(&mut g, &mut c, &spec(conn, b, w, h, p, 3));
            }
        }
        let s = spec(four, Boundary::Periodic, 1600, 1500, 0.5927, 2);
        let mut stack = Array3::<u8>::zeros((2, 1500, 1600));
        for k in 0..2 {
            stack
                .index_axis_mut(ndarray::Axis(0), k)
                .assign(&s.lattice(s.first + k as u64));
        }
        let given = g
            .analyze_batch(stack.view(), s.connectivity, s.boundary, true)
            .unwrap();
        assert_eq!(given, c.sample(&s).unwrap());
        assert!(g
            .sample(&bond_spec(Boundary::Periodic, 1600, 1500, 0.5, 1))
            .is_err());
    }

    #[test]
    #[ignore = "needs a CUDA device"]
    fn gpu_analyze_batch_equals_cpu() {
        let s = spec(Connectivity::Eight, Boundary::Periodic, 45, 70, 0.45, 33);
        let mut stack = Array3::<u8>::zeros((33, 70, 45));
        for k in 0..33 {
            stack
                .index_axis_mut(ndarray::Axis(0), k)
                .assign(&s.lattice(s.first + k as u64));
        }
        let got = gpu()
            .analyze_batch(stack.view(), s.connectivity, s.boundary, true)
            .unwrap();
        assert_eq!(got, cpu(4).sample(&s).unwrap());
    }
}
