//! The free functions' one-shot calls: what they keep between calls (the labeler's scratch on the
//! calling thread, the image of a dropped `Labels`) is checked here to change nothing in the
//! results — a kept image's stale labels are all overwritten — and to spare the big allocations,
//! counted by a global allocator.

use clusterlab::generate::percolation;
use clusterlab::{
    free_cached_memory, label, label64, label_segments, Algorithm, Boundary, Connectivity, Labeler,
};
use ndarray::Array2;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

struct Counting;
/// Allocations of a MiB or more, on every thread.
static BIG: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator, counting.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= 1 << 20 {
            BIG.fetch_add(1, Relaxed);
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= 1 << 20 {
            BIG.fetch_add(1, Relaxed);
        }
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size >= 1 << 20 {
            BIG.fetch_add(1, Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// One test body, so that no other test of this binary takes the kept images in between.
#[test]
fn kept_images_and_labelers_change_nothing_and_spare_the_big_allocations() {
    // 512 × 512: 1 MiB of u32 labels, 2 MiB of u64, at and above the 1 MiB threshold.
    let (h, w) = (512, 512);
    let full = Array2::<u8>::ones((h, w));
    let empty = Array2::<u8>::zeros((h, w));
    let lattices = [
        percolation(h, w, 0.3, 1, 1),
        percolation(h, w, 0.592746, 1, 2),
        percolation(h, w, 0.8, 1, 3),
        percolation(h, w, 0.5, 8, 4),
    ];
    for conn in [Connectivity::Four, Connectivity::Eight] {
        for boundary in [Boundary::Open, Boundary::Periodic] {
            let mut labelers = [Algorithm::Bfs, Algorithm::HoshenKopelman, Algorithm::Strips]
                .map(|alg| (alg, Labeler::new(conn, boundary).algorithm(alg)));
            for lattice in &lattices {
                // The oracle, into a new image.
                let want = Labeler::new(conn, boundary)
                    .algorithm(Algorithm::Bfs)
                    .label(lattice.view())
                    .unwrap()
                    .into_array();
                // A kept image full of nonzero labels, then the lattice: the same labels.
                drop(label(full.view(), conn, boundary).unwrap());
                let again = label(lattice.view(), conn, boundary).unwrap();
                assert_eq!(again.array(), &want, "{conn:?} {boundary:?}");
                // And u64 labels.
                drop(label64(full.view(), conn, boundary).unwrap());
                let wide = label64(lattice.view(), conn, boundary).unwrap();
                assert_eq!(wide.count(), again.count());
                assert!(wide.array().iter().zip(&want).all(|(&a, &b)| a == b as u64));
                // Every CPU algorithm through Labeler::label, which takes kept images too.
                for (alg, labeler) in &mut labelers {
                    drop(labeler.label(full.view()).unwrap());
                    let got = labeler.label(lattice.view()).unwrap();
                    assert_eq!(got.array(), &want, "{alg:?} {conn:?} {boundary:?}");
                }
            }
            // An empty lattice into a kept full image: all zeros.
            drop(label(full.view(), conn, boundary).unwrap());
            let none = label(empty.view(), conn, boundary).unwrap();
            assert_eq!(none.count(), 0);
            assert!(none.array().iter().all(|&l| l == 0));
            // Bond labeling (4-connectivity only): all sites occupied.
            if conn == Connectivity::Eight {
                continue;
            }
            let right = percolation(h, w, 0.5, 1, 5);
            let down = percolation(h, w, 0.5, 1, 6);
            let mut labeler = Labeler::new(conn, boundary);
            let want = labeler
                .label_bonds(right.view(), down.view())
                .unwrap()
                .into_array();
            drop(label(full.view(), conn, boundary).unwrap());
            let got = labeler.label_bonds(right.view(), down.view()).unwrap();
            assert_eq!(got.array(), &want);
        }
    }
    // Segments: a kept image of occupancy labels, then segments of the same size.
    let segments = percolation(h, w, 0.5, 4, 7).mapv(|v| v * 3) + percolation(h, w, 0.5, 1, 8);
    let want = Labeler::new(Connectivity::Four, Boundary::Open)
        .segments(true)
        .algorithm(Algorithm::Bfs)
        .label(segments.view())
        .unwrap();
    drop(label(full.view(), Connectivity::Four, Boundary::Open).unwrap());
    let got = label_segments(segments.view(), Connectivity::Four, Boundary::Open).unwrap();
    assert_eq!(got, want);

    // After a warm-up call, a one-shot call of the same size and configuration makes no
    // allocation of a MiB or more: the image is the last dropped one, the scratch the kept
    // labeler's.
    let lattice = &lattices[1];
    for conn in [Connectivity::Four, Connectivity::Eight] {
        drop(label(lattice.view(), conn, Boundary::Periodic).unwrap());
        let before = BIG.load(Relaxed);
        for _ in 0..5 {
            let l = label(lattice.view(), conn, Boundary::Periodic).unwrap();
            assert!(l.count() > 0);
        }
        assert_eq!(BIG.load(Relaxed) - before, 0, "{conn:?}");
    }
    // A Labels taken apart keeps its image; freeing the cache makes the next call allocate.
    let kept = label(lattice.view(), Connectivity::Four, Boundary::Open).unwrap();
    let array = kept.into_array();
    assert_eq!(array.dim(), (h, w));
    free_cached_memory();
    let before = BIG.load(Relaxed);
    drop(label(lattice.view(), Connectivity::Four, Boundary::Open).unwrap());
    assert!(BIG.load(Relaxed) > before);
}
