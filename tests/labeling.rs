//! One labeling battery (`tests/common/battery.rs`) run for every algorithm on every backend that
//! has it, against the independent oracle: `<algorithm>::cpu` (and `cpu_threads`) in CI,
//! `<algorithm>::cuda` on a GPU machine — `#[ignore = "needs a CUDA device"]`, run there with
//! `--ignored --test-threads=1`. On the GPU both numberings are checked: canonical, and raw
//! root-index labels.

mod common;

#[cfg(feature = "cuda")]
use clusterlab::Backend;
use clusterlab::{Algorithm, Labeler, Parallelism};
use common::battery::{battery, Labelers, Scale};

/// The battery for `algorithm` on the CPU with `parallelism`.
fn on_cpu(algorithm: Algorithm, parallelism: Parallelism) {
    let mut subject = Labelers::new(|c, b, seg| {
        Labeler::new(c, b)
            .segments(seg)
            .algorithm(algorithm)
            .parallelism(parallelism)
    });
    let name = format!("{algorithm:?} on the CPU, {parallelism:?}");
    let cases = battery(&mut subject, &name, algorithm as u64, Scale::CI);
    assert!(cases >= 1000, "{cases}");
}

/// The battery for `algorithm` on GPU 0, canonical labels through `Labeler` and raw ones through
/// `CudaLabeler`.
#[cfg(feature = "cuda")]
fn on_cuda(algorithm: Algorithm) {
    use clusterlab::cuda::{CudaLabeler, Numbering};
    use clusterlab::{Boundary, Connectivity, Labels, Result, SiteValue};
    use common::battery::Subject;
    use ndarray::{Array2, ArrayView2};

    struct Gpu<F: FnMut(Connectivity, Boundary, bool) -> Labeler> {
        canonical: Labelers<F>,
        raw: Vec<((Connectivity, Boundary, bool), CudaLabeler)>,
        algorithm: Algorithm,
    }
    impl<F: FnMut(Connectivity, Boundary, bool) -> Labeler> Subject for Gpu<F> {
        fn label<T: SiteValue>(
            &mut self,
            lattice: ArrayView2<'_, T>,
            c: Connectivity,
            b: Boundary,
            seg: bool,
        ) -> Result<Labels> {
            self.canonical.label(lattice, c, b, seg)
        }
        fn label_raw<T: SiteValue>(
            &mut self,
            lattice: ArrayView2<'_, T>,
            c: Connectivity,
            b: Boundary,
            seg: bool,
            out: &mut Array2<u32>,
        ) -> Option<Result<usize>> {
            let key = (c, b, seg);
            let i = match self.raw.iter().position(|(k, _)| *k == key) {
                Some(i) => i,
                None => {
                    let l = CudaLabeler::new(0, c, b)
                        .expect("a CUDA device")
                        .segments(seg)
                        .algorithm(self.algorithm)
                        .numbering(Numbering::Raw);
                    self.raw.push((key, l));
                    self.raw.len() - 1
                }
            };
            Some(self.raw[i].1.label_host_into(lattice, out.view_mut()))
        }
    }
    let mut subject = Gpu {
        canonical: Labelers::new(|c, b, seg| {
            Labeler::new(c, b)
                .segments(seg)
                .algorithm(algorithm)
                .backend(Backend::Cuda { device: 0 })
                .expect("a CUDA device")
        }),
        raw: Vec::new(),
        algorithm,
    };
    let name = format!("{algorithm:?} on cuda:0");
    let cases = battery(&mut subject, &name, algorithm as u64, Scale::FULL);
    assert!(cases >= 5000, "{cases}");
}

#[cfg(not(feature = "cuda"))]
fn on_cuda(algorithm: Algorithm) {
    panic!("{algorithm:?}: built without the cuda feature");
}

/// A module per algorithm stem (as in `src/cpu/<stem>.rs`, `src/cuda/<stem>.rs`,
/// `kernels/<stem>.cu`), with a test per backend that runs it.
macro_rules! every_backend {
    (cpu: $($cpu:ident => $calg:ident),* ; cuda: $($gpu:ident => $galg:ident),* $(;)?) => {
        $(mod $cpu {
            #[test]
            fn cpu() {
                super::on_cpu(clusterlab::Algorithm::$calg, clusterlab::Parallelism::Sequential);
            }
            #[test]
            fn cpu_threads() {
                super::on_cpu(clusterlab::Algorithm::$calg, clusterlab::Parallelism::Threads(3));
            }
        })*
        $(mod $gpu {
            #[test]
            #[ignore = "needs a CUDA device"]
            fn cuda() {
                super::on_cuda(clusterlab::Algorithm::$galg);
            }
        })*
    };
}

every_backend! {
    cpu: bfs => Bfs, hoshen_kopelman => HoshenKopelman, strips => Strips, auto => Auto;
    cuda: bit_runs => BitRuns, block_union_find => BlockUnionFind, ha4 => Ha4,
        tile_merge => TileMerge, label_equivalence => LabelEquivalence
}

/// `Algorithm::Auto` on the GPU (what users get by default there).
#[test]
#[ignore = "needs a CUDA device"]
fn auto_cuda() {
    on_cuda(Algorithm::Auto);
}
