//! What `Labeler::label_into` allocates call after call, counted by a global allocator: the
//! claim in its docs is checked here, not assumed.

use clusterlab::generate::percolation;
use clusterlab::{Boundary, Connectivity, Labeler, Parallelism};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

struct Counting;
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    // Only the test's own thread is counted: rayon's idle workers (left from generating the
    // lattices) may allocate at any moment for their own bookkeeping.
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

fn count() {
    if COUNTED.try_with(Cell::get).unwrap_or(false) {
        ALLOCATIONS.fetch_add(1, Relaxed);
    }
}

// SAFETY: forwards to the system allocator, counting.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// After a first call on a lattice with at least as many clusters, `label_into` on the same
/// shape allocates nothing: 200 timesteps of a simulation at p_c, each a new lattice, on a torus
/// and an open lattice, sequential (a thread pool's own bookkeeping is rayon's).
#[test]
fn label_into_allocates_nothing_after_warm_up() {
    for (c, b) in [
        (Connectivity::Four, Boundary::Periodic),
        (Connectivity::Eight, Boundary::Open),
    ] {
        let (h, w) = (128, 160);
        let lattices: Vec<_> = (0..200)
            .map(|seed| percolation(h, w, 0.5927, 1, seed))
            .collect();
        let mut labeler = Labeler::new(c, b).parallelism(Parallelism::Sequential);
        let mut out = ndarray::Array2::<u32>::zeros((h, w));
        // Warm-up: a lattice with more clusters than any of the timesteps (a checkerboard has
        // the most a lattice can have), so that no buffer needs to grow later.
        let board = ndarray::Array2::from_shape_fn((h, w), |(y, x)| ((x + y) % 2) as u8);
        labeler.label_into(board.view(), out.view_mut()).unwrap();
        COUNTED.with(|c| c.set(true));
        let before = ALLOCATIONS.load(Relaxed);
        for lattice in &lattices {
            labeler.label_into(lattice.view(), out.view_mut()).unwrap();
        }
        let after = ALLOCATIONS.load(Relaxed);
        COUNTED.with(|c| c.set(false));
        assert_eq!(after - before, 0, "{c:?} {b:?}: allocations over 200 calls");
    }
}
