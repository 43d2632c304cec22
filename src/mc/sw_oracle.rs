//! The previous Swendsen–Wang path as the oracle of the fused one: one scalar Philox block per
//! site, the bonds into [`PackedBonds`], clusters by [`Labeler::bond_roots_into`] and the new
//! spins from the roots' blocks — the layout documented in [`crate::mc`], written plainly.

use super::super::model::Model;
use super::super::rng::{below, threshold, SweepKey, TAG_SW};
use super::super::sw_label::{philox_lanes, LANES};
use super::SwendsenWang;
use crate::{Backend, Boundary, Connectivity, Labeler, Options, PackedBonds, Parallelism};
use ndarray::Array2;
use rand_philox::philox4x32_10;

/// One sweep the old way; returns the roots.
fn oracle_sweep(model: &Model, spins: &mut Array2<u8>, seed: u64, sweep: u64) -> Array2<u32> {
    let (h, w) = model.dim();
    let key = SweepKey::new(seed, 3, sweep, TAG_SW);
    let thr = threshold(model.bond_probability());
    let b = model.boundary();
    let mut bonds = PackedBonds::new(h, w).unwrap();
    let mut fresh = vec![0u8; h * w];
    for y in 0..h {
        for x in 0..w {
            let blk = key.block((y * w + x) as u32);
            let s = spins[[y, x]];
            let right = (x + 1 < w || b.wraps_x()) && s == spins[[y, (x + 1) % w]];
            let down = (y + 1 < h || b.wraps_y()) && s == spins[[(y + 1) % h, x]];
            bonds.set_right(y, x, right && u64::from(blk[0]) < thr);
            bonds.set_down(y, x, down && u64::from(blk[1]) < thr);
            fresh[y * w + x] = below(blk[2], u32::from(model.q())) as u8;
        }
    }
    let opts = Options::new(Connectivity::Four, b).backend(Backend::Cpu);
    let mut labeler = Labeler::with_options(opts).unwrap();
    let mut roots = Array2::zeros((h, w));
    labeler.bond_roots_into(&bonds, roots.view_mut()).unwrap();
    spins.zip_mut_with(&roots, |s, &r| *s = fresh[r as usize]);
    roots
}

/// The vectorised lanes are the scalar Philox of each site's counter.
#[test]
fn lanes_are_the_site_blocks() {
    let key = SweepKey::new(0xdead_beef_0123_4567, 9, (5u64 << 32) | 77, TAG_SW);
    for c0 in [0u32, 1000, u32::MAX - 3] {
        let got = philox_lanes(c0, &key);
        for (l, g) in (0..LANES).map(|l| (l, [got[0][l], got[1][l], got[2][l]])) {
            let want = philox4x32_10(
                [c0.wrapping_add(l as u32), 77, 5, (9 << 4) | TAG_SW],
                [0x0123_4567, 0xdead_beef],
            );
            assert_eq!(g, [want[0], want[1], want[2]]);
        }
    }
}

/// The fused path gives the old path's roots and spins, sweep after sweep, on any shape,
/// boundary, q and thread count; and its Σ|c|² and histogram are the roots' cluster sizes.
#[test]
fn fused_equals_the_labeler_path() {
    let shapes = [
        (2, 2),
        (2, 3),
        (3, 2),
        (5, 16),
        (17, 17),
        (13, 64),
        (23, 65),
        (40, 130),
    ];
    let boundaries = [
        Boundary::Periodic,
        Boundary::Open,
        Boundary::PeriodicX,
        Boundary::PeriodicY,
    ];
    for (n, &(h, w)) in shapes.iter().enumerate() {
        for (m, &b) in boundaries.iter().enumerate() {
            let q = [2u8, 3, 7, 2][(n + m) % 4];
            // Near each model's T_c, and one case with every bond on (p = 1).
            let model = Model::potts(q, h, w, super::super::potts_tc(q))
                .unwrap()
                .with_boundary(b)
                .unwrap();
            let model = if n == 4 && m == 0 {
                model.with_temperature(1e-9).unwrap()
            } else {
                model
            };
            let seed = 11 + n as u64;
            let mut old = Array2::zeros((h, w));
            let mut sws: Vec<_> = [
                Parallelism::Sequential,
                Parallelism::Threads(2),
                Parallelism::Threads(3),
            ]
            .into_iter()
            .map(|t| {
                let mut u = SwendsenWang::new(&model, Options::default().parallelism(t)).unwrap();
                u.record_cluster_sizes(true);
                (u, Array2::<u8>::zeros((h, w)))
            })
            .collect();
            let mut hist = vec![0u64; h * w + 1];
            for sweep in 0..50 {
                let roots = oracle_sweep(&model, &mut old, seed, sweep);
                let mut sizes = vec![0u64; h * w];
                roots.iter().for_each(|&r| sizes[r as usize] += 1);
                let sq: u64 = sizes.iter().map(|s| s * s).sum();
                sizes
                    .iter()
                    .filter(|&&s| s > 0)
                    .for_each(|&s| hist[s as usize] += 1);
                for (u, spins) in &mut sws {
                    let sample = u
                        .sweep(&model, spins, seed, 3, sweep, true)
                        .unwrap()
                        .unwrap();
                    let case = format!("{h}×{w} {b:?} q={q} sweep {sweep}");
                    assert_eq!(u.roots(), &roots, "{case}");
                    assert_eq!(spins, &old, "{case}");
                    let n2 = ((h * w) as f64).powi(2);
                    assert_eq!(sample.cluster_num, sq as f64 / n2, "{case}");
                }
            }
            let end = hist.iter().rposition(|&c| c > 0).unwrap();
            for (u, _) in &sws {
                assert_eq!(u.cluster_sizes().unwrap(), &hist[..=end]);
            }
        }
    }
}
