//! The backend seam: one `Options` value, a backend resolved once, builder methods in any order,
//! thread counts bounded before any thread starts, and `Backend::Auto`'s fallback.

mod common;

use clusterlab::regions::{Criterion, RegionGrower};
use clusterlab::{
    Algorithm, Analyzer, Backend, Boundary, Connectivity, Error, Labeler, Measures, Options,
    Parallelism, MAX_THREADS,
};
use common::{random_lattice, rng, segment_lattice};
use std::time::Instant;

/// Whether a GPU backend opens here (never on CI).
fn gpu_here() -> bool {
    Labeler::new(Connectivity::Four, Boundary::Open)
        .backend(Backend::Cuda { device: 0 })
        .is_ok()
}

#[test]
fn options_give_the_labels_of_the_builder() {
    let mut r = rng(17);
    let lattice = random_lattice(37, 41, 0.55, &mut r);
    for c in [Connectivity::Four, Connectivity::Eight] {
        for b in [Boundary::Open, Boundary::Periodic] {
            let options = Options::new(c, b)
                .algorithm(Algorithm::HoshenKopelman)
                .parallelism(Parallelism::Threads(2));
            let mut from_options = Labeler::with_options(options).unwrap();
            assert_eq!(from_options.options(), options);
            let mut built = Labeler::new(c, b)
                .algorithm(Algorithm::HoshenKopelman)
                .parallelism(Parallelism::Threads(2));
            assert_eq!(built.options(), options);
            assert_eq!(
                from_options.label(lattice.view()).unwrap(),
                built.label(lattice.view()).unwrap()
            );
        }
    }
}

#[test]
fn analyzer_builder_order_does_not_matter() {
    let mut r = rng(5);
    let lattice = segment_lattice(29, 31, 0.7, 3, &mut r);
    let base = || Analyzer::new(Connectivity::Four, Boundary::Periodic);
    let reference = base()
        .segments(true)
        .measures(Measures::All)
        .parallelism(Parallelism::Sequential)
        .analyze(lattice.view())
        .unwrap();
    let orders: Vec<Box<dyn Fn() -> Analyzer>> = vec![
        Box::new(|| {
            base()
                .backend(Backend::Auto)
                .unwrap()
                .segments(true)
                .parallelism(Parallelism::Threads(2))
        }),
        Box::new(|| {
            base()
                .parallelism(Parallelism::Threads(3))
                .segments(true)
                .backend(Backend::Cpu)
                .unwrap()
        }),
        Box::new(|| {
            base()
                .segments(true)
                .backend(Backend::Auto)
                .unwrap()
                .parallelism(Parallelism::Rayon)
        }),
    ];
    for (i, make) in orders.iter().enumerate() {
        let mut analyzer = make();
        // The same analyzer twice: its labelers are built once and reused.
        for _ in 0..2 {
            let table = analyzer.analyze(lattice.view()).unwrap();
            assert_eq!(table, reference, "order {i}");
        }
    }
}

#[test]
fn thread_counts_are_bounded_before_any_thread_starts() {
    let lattice = ndarray::Array2::<u8>::ones((8, 8));
    for n in [0, MAX_THREADS + 1, 100_000] {
        let p = Parallelism::Threads(n);
        let start = Instant::now();
        let e = Labeler::new(Connectivity::Four, Boundary::Open)
            .parallelism(p)
            .label(lattice.view())
            .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{n}: {e}");
        let e = Analyzer::new(Connectivity::Four, Boundary::Open)
            .parallelism(p)
            .analyze(lattice.view())
            .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{n}: {e}");
        assert!(p.check().is_err());
        // Refused at once, not after trying to start the threads.
        assert!(
            start.elapsed().as_secs_f64() < 1.0,
            "{n} threads: {:?}",
            start.elapsed()
        );
    }
    let e = Parallelism::Threads(MAX_THREADS + 1).check().unwrap_err();
    assert!(e.to_string().contains("cores"), "{e}");
    assert!(Parallelism::Threads(MAX_THREADS).check().is_ok());
}

#[test]
fn auto_places_gpu_only_algorithms_on_the_cpu_without_a_gpu() {
    let mut r = rng(9);
    let lattice = random_lattice(33, 65, 0.59, &mut r);
    let expected = Labeler::new(Connectivity::Eight, Boundary::Periodic)
        .label(lattice.view())
        .unwrap();
    let gpu = gpu_here();
    for algorithm in [Algorithm::BitRuns, Algorithm::Ha4, Algorithm::TileMerge] {
        // Both orders of the builder calls.
        let a = Labeler::new(Connectivity::Eight, Boundary::Periodic)
            .algorithm(algorithm)
            .backend(Backend::Auto)
            .unwrap();
        let b = Labeler::new(Connectivity::Eight, Boundary::Periodic)
            .backend(Backend::Auto)
            .unwrap()
            .algorithm(algorithm);
        for mut labeler in [a, b] {
            assert_eq!(labeler.backend_name().starts_with("cuda"), gpu);
            assert_eq!(labeler.label(lattice.view()).unwrap(), expected);
        }
        // An explicit CPU backend keeps the caller's choice, and says it cannot run it.
        let e = Labeler::new(Connectivity::Eight, Boundary::Periodic)
            .algorithm(algorithm)
            .backend(Backend::Cpu)
            .unwrap()
            .label(lattice.view())
            .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    }
}

#[test]
fn every_front_end_reports_where_it_runs() {
    let gpu = gpu_here();
    // `Auto` keeps calls on host arrays on the CPU (see `Backend`); only `Cuda` opens the GPU.
    let want = "cpu";
    let l = Labeler::new(Connectivity::Four, Boundary::Open)
        .backend(Backend::Auto)
        .unwrap();
    let a = Analyzer::new(Connectivity::Four, Boundary::Open)
        .backend(Backend::Auto)
        .unwrap();
    let g = RegionGrower::new(Criterion::new(0.5))
        .backend(Backend::Auto)
        .unwrap();
    assert!(l.backend_name().starts_with(want), "{}", l.backend_name());
    assert_eq!(a.backend_name(), want);
    assert_eq!(g.backend_name(), want);
    if !gpu {
        for e in [
            Labeler::new(Connectivity::Four, Boundary::Open)
                .backend(Backend::Cuda { device: 0 })
                .err(),
            Analyzer::new(Connectivity::Four, Boundary::Open)
                .backend(Backend::Cuda { device: 0 })
                .err(),
            RegionGrower::new(Criterion::new(0.5))
                .backend(Backend::Cuda { device: 0 })
                .err(),
        ] {
            assert!(matches!(e, Some(Error::CudaUnavailable(_))), "{e:?}");
        }
    }
}
