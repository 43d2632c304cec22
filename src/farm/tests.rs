//! The split and the packing, without MPI: a batch cut into ranks' shares, packed and added in
//! rank order, gives the sums of the whole batch computed at once.

use super::*;
use crate::percolation::runner::{BatchRunner, Local};
use crate::percolation::{BatchSampler, Geometry, Model};
use crate::{Backend, Boundary, Connectivity, Options, Parallelism};
use proptest::prelude::*;

proptest! {
    /// The shares are contiguous, in rank order, cover the range exactly and differ in length
    /// by at most one.
    #[test]
    fn shares_tile_the_range(start in 0u64..1 << 50, len in 0u64..10_000, ranks in 1usize..70) {
        let range = start..start + len;
        let mut at = start;
        let (mut shortest, mut longest) = (u64::MAX, 0);
        for r in 0..ranks {
            let s = split(range.clone(), r, ranks);
            prop_assert_eq!(s.start, at);
            prop_assert!(s.end >= s.start);
            shortest = shortest.min(s.end - s.start);
            longest = longest.max(s.end - s.start);
            at = s.end;
        }
        prop_assert_eq!(at, range.end);
        prop_assert!(longest - shortest <= 1);
    }
}

#[test]
fn shares_of_the_whole_u64_range() {
    let r = split(0..u64::MAX, 1, 2);
    assert_eq!(r, u64::MAX / 2..u64::MAX);
}

fn pool() -> crate::cpu::pool::CpuPool {
    crate::cpu::pool::CpuPool::new(Parallelism::Threads(2))
}

/// Shares of `samples` among `ranks`, each computed alone, packed, and added in rank order
/// into rank 0's share.
fn farmed_micro(
    g: Geometry,
    ns_at: &[u64],
    seed: u64,
    samples: Range<u64>,
    ranks: usize,
) -> MicroSums {
    let pool = pool();
    let part = |r| {
        Local
            .newman_ziff(g, ns_at, seed, split(samples.clone(), r, ranks), &pool)
            .unwrap()
    };
    let mut total = part(0);
    for r in 1..ranks {
        let mut words = Vec::new();
        part(r).pack(&mut words);
        let mut w = Words::new(&words);
        total.add_packed(&mut w).unwrap();
        assert!(w.is_empty());
    }
    total
}

#[test]
fn newman_ziff_shares_add_up_to_the_batch() {
    for (model, boundary, w, h) in [
        (Model::Site(Connectivity::Four), Boundary::Periodic, 8, 8),
        (Model::Site(Connectivity::Eight), Boundary::Open, 7, 5),
        (Model::Bond, Boundary::PeriodicX, 6, 9),
    ] {
        let g = Geometry::new(model, w, h, boundary).unwrap();
        let ns_at = [(g.units() / 2) as u64];
        let whole = Local.newman_ziff(g, &ns_at, 7, 3..40, &pool()).unwrap();
        assert_eq!(whole.samples, 37);
        for ranks in [1, 2, 3, 4, 50] {
            let farmed = farmed_micro(g, &ns_at, 7, 3..40, ranks);
            // Records in index order, every sum equal: the same sums bit for bit.
            assert_eq!(farmed, whole, "{model:?} {boundary:?} on {ranks} ranks");
        }
    }
}

#[test]
fn fixed_p_shares_add_up_to_the_batch() {
    let g = Geometry::new(Model::Site(Connectivity::Four), 9, 7, Boundary::Periodic).unwrap();
    let p = [0.5, 0.59, 0.6, 0.7];
    let opts = Options::default()
        .backend(Backend::Cpu)
        .parallelism(Parallelism::Threads(2));
    let mut sampler = BatchSampler::new(&opts).unwrap();
    let whole = Local.fixed_p(g, &p, 11, 5..70, &mut sampler).unwrap();
    assert_eq!(whole.samples, 65);
    assert!(whole.counts.iter().any(|c| c[3] > 0) && whole.ns.iter().any(|&n| n > 0));
    // 100 ranks: most shares are empty.
    for ranks in [2, 3, 4, 100] {
        let share = |r| split(5..70, r, ranks);
        let mut total = Local.fixed_p(g, &p, 11, share(0), &mut sampler).unwrap();
        for r in 1..ranks {
            let mut words = Vec::new();
            Local
                .fixed_p(g, &p, 11, share(r), &mut sampler)
                .unwrap()
                .pack(&mut words);
            total.add_packed(&mut Words::new(&words)).unwrap();
        }
        assert_eq!(total, whole, "{ranks} ranks");
    }
}

/// Truncated or mismatched messages are typed errors, never panics or huge allocations.
#[test]
fn garbled_messages_are_errors() {
    let g = Geometry::new(Model::Site(Connectivity::Four), 4, 4, Boundary::Periodic).unwrap();
    let sums = Local.newman_ziff(g, &[8], 1, 0..3, &pool()).unwrap();
    let mut words = Vec::new();
    sums.pack(&mut words);
    for cut in [0, 1, 5, words.len() - 1] {
        let mut into = MicroSums::new(g, &[8]).unwrap();
        let e = into.add_packed(&mut Words::new(&words[..cut])).unwrap_err();
        assert!(matches!(e, Error::Farm(_)), "{e}");
    }
    let other = Geometry::new(Model::Site(Connectivity::Four), 5, 4, Boundary::Periodic).unwrap();
    let mut into = MicroSums::new(other, &[8]).unwrap();
    assert!(matches!(
        into.add_packed(&mut Words::new(&words)),
        Err(Error::Farm(_))
    ));
    // A claimed length far beyond the shape is refused before anything is allocated.
    let mut huge = words.clone();
    huge[1] = u64::MAX;
    let mut into = MicroSums::new(g, &[8]).unwrap();
    assert!(matches!(
        into.add_packed(&mut Words::new(&huge)),
        Err(Error::Farm(_))
    ));
    let mut f = FixedSums::new(g, &[0.5], 0.5);
    assert!(matches!(
        f.add_packed(&mut Words::new(&[1, 2])),
        Err(Error::Farm(_))
    ));
}
