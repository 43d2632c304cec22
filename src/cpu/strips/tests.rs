//! Tests of the strip labeler's `u64` instantiations (`u64` indices and labels) against the
//! `u32` one.

use super::*;
use crate::core::rule::{Occupancy, Segments};
use ndarray::Array2;

/// A small xorshift: sites with `k` values, occupied with probability about `p`.
/// Nested one-site-wide rectangles two sites apart: long legs of single-site runs under
/// single-site runs and corners, as a spiral has (built here: `generate` is a higher layer).
fn rings(h: usize, w: usize) -> Array2<u32> {
    Array2::from_shape_fn((h, w), |(y, x)| {
        u32::from(y.min(x).min(h - 1 - y).min(w - 1 - x) % 2 == 0)
    })
}

/// The rings joined into one cluster by a column of sites through their gaps, with a gap
/// opened beside it in each ring so that the path winds: one cluster of single-site legs.
fn spiral_like(h: usize, w: usize) -> Array2<u32> {
    let mut a = rings(h, w);
    let cx = w / 2;
    for y in 0..h / 2 {
        a[[y, cx]] = 1;
        if cx + 1 < w && y % 2 == 0 && y > 0 {
            a[[y, cx + 1]] = 0;
        }
    }
    a
}

/// `g × g` blocks, each occupied with probability `p`.
fn granular(h: usize, w: usize, p: f64, g: usize, seed: &mut u64) -> Array2<u32> {
    let blocks = lattice(h.div_ceil(g), w.div_ceil(g), p, 1, seed);
    Array2::from_shape_fn((h, w), |(y, x)| blocks[[y / g, x / g]])
}

fn lattice(h: usize, w: usize, p: f64, k: u32, seed: &mut u64) -> Array2<u32> {
    Array2::from_shape_fn((h, w), |_| {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        let u = (*seed >> 11) as f64 / (1u64 << 53) as f64;
        if u < p {
            1 + (*seed % k as u64) as u32
        } else {
            0
        }
    })
}

/// Runs the labeler with index type `I` into labels `L`, widened to `u64`.
fn run<R: JoinRule, I: Index, L: Index>(
    rule: &R,
    c: Connectivity,
    b: Boundary,
    strips: usize,
) -> (usize, Array2<u64>) {
    let (h, w) = rule.dim();
    let mut scratch = Scratch::<I>::default();
    let mut out = Array2::<L>::default((h, w));
    let n = label(rule, c, b, strips, &mut scratch, out.view_mut());
    (n, out.mapv(|l| l.usize() as u64))
}

/// The wide instantiations (`u64` indices, which only lattices beyond `u32`'s runs take, and
/// `u32` indices into `u64` labels) give the `u32` labels, widened: on every connectivity,
/// boundary, segment mode and strip count, over shapes around the word width.
#[test]
fn wide_indices_and_labels_equal_the_narrow_ones() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut cases = 0;
    for &(h, w) in &[
        (1, 1),
        (1, 130),
        (130, 1),
        (2, 2),
        (17, 63),
        (40, 64),
        (33, 65),
        (70, 129),
    ] {
        for &p in &[0.3, 0.6, 0.95] {
            for k in [1, 3] {
                let a = lattice(h, w, p, k, &mut seed);
                for c in [Connectivity::Four, Connectivity::Eight] {
                    for b in Boundary::ALL {
                        for strips in [1, 3] {
                            let occ = Occupancy { lattice: a.view() };
                            let seg = Segments { lattice: a.view() };
                            let narrow = run::<_, u32, u32>(&occ, c, b, strips);
                            assert_eq!(narrow, run::<_, u64, u64>(&occ, c, b, strips));
                            assert_eq!(narrow, run::<_, u32, u64>(&occ, c, b, strips));
                            let narrow = run::<_, u32, u32>(&seg, c, b, strips);
                            assert_eq!(narrow, run::<_, u64, u64>(&seg, c, b, strips));
                            assert_eq!(narrow, run::<_, u32, u64>(&seg, c, b, strips));
                            cases += 1;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(cases, 8 * 3 * 2 * 2 * 4 * 2);
}

#[test]
fn the_most_runs_a_shape_can_have() {
    assert_eq!(max_runs(3, 5, false), 9);
    assert_eq!(max_runs(3, 5, true), 15);
    assert_eq!(max_runs(70_000, 70_000, false), 2_450_000_000);
    assert!(max_runs(70_000, 70_000, false) <= <u32 as Index>::MAX_NODES);
    assert!(max_runs(70_000, 70_000, true) > <u32 as Index>::MAX_NODES);
    assert_eq!(max_runs(usize::MAX, 4, true), usize::MAX);
}

/// Runs the labeler into `u32` labels with the BFS oracle's labels beside it.
fn against_oracle<R: JoinRule>(rule: &R, c: Connectivity, b: Boundary, strips: usize, what: &str) {
    let (h, w) = rule.dim();
    let mut want = Array2::<u32>::zeros((h, w));
    let n = crate::cpu::bfs::label(rule, c, b, &mut Default::default(), want.view_mut());
    let want = (n, want.mapv(u64::from));
    // Both scans, whichever `copies_pay` picks for the shape, and the wide indices and labels.
    // The label image written in place and streamed out of a staging row alike.
    for (copy, stream) in [(false, false), (true, false), (false, true), (true, true)] {
        let got = run_with::<_, u32, u32>(rule, c, b, strips, Some(copy), stream);
        assert_eq!(
            got.0, want.0,
            "{what} {h}×{w} {c} {b} {strips} strips {copy} {stream}: count"
        );
        assert!(
            got == want,
            "{what} {h}×{w} {c} {b} {strips} strips, copy {copy}, stream {stream}: labels"
        );
        assert!(
            run_with::<_, u64, u64>(rule, c, b, strips, Some(copy), stream) == want,
            "{what} {copy} {stream} wide"
        );
        assert!(
            run_with::<_, u32, u64>(rule, c, b, strips, Some(copy), stream) == want,
            "{what} {copy} {stream} wide labels"
        );
    }
}

/// [`run`] with the scan forced (`Some(copy)`) or judged (`None`), and the label image streamed
/// out or not.
fn run_with<R: JoinRule, I: Index, L: Index>(
    rule: &R,
    c: Connectivity,
    b: Boundary,
    strips: usize,
    copy: Option<bool>,
    stream: bool,
) -> (usize, Array2<u64>) {
    let (h, w) = rule.dim();
    let mut scratch = Scratch::<I>::default();
    let mut out = Array2::<L>::default((h, w));
    let n = label_with(
        rule,
        c,
        b,
        strips,
        copy,
        Some(stream),
        &mut scratch,
        out.view_mut(),
    );
    (n, out.mapv(|l| l.usize() as u64))
}

/// The scan is judged on the lattice: node copying for a spiral and vertical stripes, a node
/// per run for random lattices.
#[test]
fn copying_is_chosen_where_runs_repeat() {
    let judge = |a: Array2<u32>| {
        let (h, w) = a.dim();
        let rule = Occupancy { lattice: a.view() };
        copies_pay(&rule, h, w, &mut RowTemps::<u32>::default())
    };
    assert!(judge(rings(256, 256)));
    assert!(judge(spiral_like(256, 256)));
    assert!(judge(Array2::from_shape_fn(
        (100, 300),
        |(_, x)| u32::from(x % 2 == 0)
    )));
    for p in [0.3, 0.41, 0.59, 0.8] {
        let mut seed = 7u64;
        assert!(!judge(lattice(256, 256, p, 1, &mut seed)), "{p}");
    }
    assert!(!judge(Array2::zeros((1, 10))));
    assert!(!judge(Array2::zeros((0, 0))));
}

/// The shapes the node-copying scan and the repeated-word write take their shortcuts on
/// (spirals: single-site runs under single-site runs; vertical stripes and granular blocks:
/// rows that repeat the row above; a lattice dense enough that nearly every run copies a node),
/// and random ones beside them, against the BFS oracle: both connectivities, all boundaries,
/// widths around the word, one to many strips, occupancy and segments.
#[test]
fn copied_nodes_and_repeated_words_match_the_oracle() {
    let mut seed = 0x5851_f42d_4c95_7f2du64;
    let mut shapes: Vec<(String, Array2<u32>)> = Vec::new();
    for &(h, w) in &[
        (1, 64),
        (2, 63),
        (37, 63),
        (64, 64),
        (65, 65),
        (50, 127),
        (70, 128),
        (33, 129),
        (130, 200),
    ] {
        shapes.push(("rings".into(), rings(h, w)));
        shapes.push(("spiral-like".into(), spiral_like(h, w)));
        shapes.push((
            "stripes".into(),
            Array2::from_shape_fn((h, w), |(y, x)| u32::from(x % 3 != 1 || y % 17 == 5)),
        ));
        for g in [2, 5, 16] {
            shapes.push((format!("granular {g}"), granular(h, w, 0.5, g, &mut seed)));
        }
        for p in [0.2, 0.45, 0.6, 0.8, 0.97] {
            shapes.push((format!("p={p}"), lattice(h, w, p, 1, &mut seed)));
        }
        shapes.push(("p=0.8 3 values".into(), lattice(h, w, 0.8, 3, &mut seed)));
    }
    for (what, a) in &shapes {
        for c in [Connectivity::Four, Connectivity::Eight] {
            for b in Boundary::ALL {
                for strips in [1, 2, 3, 8] {
                    let occ = Occupancy { lattice: a.view() };
                    against_oracle(&occ, c, b, strips, what);
                    let seg = Segments { lattice: a.view() };
                    against_oracle(&seg, c, b, strips, &format!("{what} segments"));
                }
            }
        }
    }
}

/// The node copying's per-row run bits: ranges set within a word, across a word boundary and a
/// whole word, each bit read back against a plain model.
#[test]
fn run_bits_set_and_read() {
    use super::scan::{bit, set_bits};
    for (k, n) in [
        (0, 1),
        (5, 8),
        (60, 8),
        (63, 1),
        (64, 64),
        (3, 64),
        (100, 28),
    ] {
        let mut bits = vec![0u64; 4];
        set_bits(&mut bits, k, n);
        for j in 0..256 {
            assert_eq!(
                bit(&bits, j),
                (k..k + n).contains(&j),
                "k {k}, n {n}, bit {j}"
            );
        }
    }
}

/// Bands of two rows into labels `L` with indices `I`, the lattice `a` as given (any view).
fn bands_run<I: Index, L: Index>(
    a: ndarray::ArrayView2<'_, u32>,
    b: Boundary,
    strips: usize,
    stream: bool,
    scratch: &mut Scratch<I>,
) -> (usize, Array2<u64>) {
    let mut out = Array2::<L>::default(a.dim());
    let n = label_with(
        &Bands { lattice: a },
        Connectivity::Eight,
        b,
        strips,
        None,
        Some(stream),
        scratch,
        out.view_mut(),
    );
    (n, out.mapv(|l| l.usize() as u64))
}

/// A band's runs whose first site lies in its second row, left of runs with a site in its first
/// row, in every band: the clusters they start must still be numbered in raster order of their
/// first sites (second-row runs after first-row ones), whether the clusters end in the band or
/// reach on below it.
fn second_rows_first(h: usize, w: usize, phase: usize) -> Array2<u32> {
    Array2::from_shape_fn((h, w), |(y, x)| {
        let (row, col) = ((y + phase) % 2, x % 6);
        // Columns 0–1: a second-row pair; 3–4: a first-row pair; some go on down a column.
        u32::from(
            (row == 1 && col < 2)
                || (row == 0 && (3..5).contains(&col))
                || (col == 1 && y % 5 == 0),
        )
    })
}

/// Bands of two rows (8-connected occupancy lattices, what the CPU backend labels them with)
/// against the BFS oracle on the lattice itself: odd and even heights (a last band of one row),
/// widths around the word, random lattices from sparse to nearly full, granular blocks, rings,
/// a spiral, stripes, bands whose second row starts clusters left of its first row's, all four
/// boundaries, one to many strips, `u32` and `u64` indices and labels, and reversed views
/// (strided rows: the write pass's other path). One scratch serves every call, a 4-connected row
/// labeling among them, as a reused labeler's does.
#[test]
fn bands_match_the_oracle() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut shapes: Vec<(String, Array2<u32>)> = Vec::new();
    for &(h, w) in &[
        (1, 1),
        (1, 65),
        (2, 2),
        (2, 64),
        (3, 3),
        (4, 63),
        (5, 129),
        (33, 65),
        (64, 64),
        (65, 63),
        (131, 130),
    ] {
        for p in [0.1, 0.3, 0.41, 0.6, 0.8, 0.97] {
            shapes.push((format!("p={p}"), lattice(h, w, p, 1, &mut seed)));
        }
        shapes.push(("granular 3".into(), granular(h, w, 0.5, 3, &mut seed)));
        shapes.push(("rings".into(), rings(h, w)));
        shapes.push(("spiral-like".into(), spiral_like(h, w)));
        shapes.push((
            "stripes".into(),
            Array2::from_shape_fn((h, w), |(y, x)| u32::from(x % 3 != 1 || y % 17 == 5)),
        ));
        for phase in [0, 1] {
            shapes.push((
                format!("second rows first {phase}"),
                second_rows_first(h, w, phase),
            ));
        }
    }
    let (mut narrow, mut wide) = (Scratch::<u32>::default(), Scratch::<u64>::default());
    let mut cases = 0;
    for (what, a) in &shapes {
        let (h, w) = a.dim();
        let rev = a.slice(ndarray::s![..;-1, ..;-1]);
        for b in Boundary::ALL {
            let oracle = |v: ndarray::ArrayView2<'_, u32>| {
                let mut want = Array2::<u32>::zeros((h, w));
                let rule = Occupancy { lattice: v };
                let n = crate::cpu::bfs::label(
                    &rule,
                    Connectivity::Eight,
                    b,
                    &mut Default::default(),
                    want.view_mut(),
                );
                (n, want.mapv(u64::from))
            };
            let (want, want_rev) = (oracle(a.view()), oracle(rev));
            for (strips, stream) in [1, 2, 3, 8]
                .into_iter()
                .flat_map(|s| [(s, false), (s, true)])
            {
                let at = format!("{what} {h}×{w} {b} {strips} strips, stream {stream}");
                let got = bands_run::<u32, u32>(a.view(), b, strips, stream, &mut narrow);
                assert_eq!(got.0, want.0, "{at}: count");
                assert!(got == want, "{at}: labels");
                assert!(
                    bands_run::<u64, u64>(a.view(), b, strips, stream, &mut wide) == want,
                    "{at}: wide"
                );
                assert!(
                    bands_run::<u32, u64>(a.view(), b, strips, stream, &mut narrow) == want,
                    "{at}: u64 labels"
                );
                assert!(
                    bands_run::<u32, u32>(rev, b, strips, stream, &mut narrow) == want_rev,
                    "{at}: reversed"
                );
                // A plain-row labeling with the same scratch between band labelings.
                let occ = Occupancy { lattice: a.view() };
                let mut four = Array2::<u32>::zeros((h, w));
                label(
                    &occ,
                    Connectivity::Four,
                    b,
                    strips,
                    &mut narrow,
                    four.view_mut(),
                );
                let mut want4 = Array2::<u32>::zeros((h, w));
                crate::cpu::bfs::label(
                    &occ,
                    Connectivity::Four,
                    b,
                    &mut Default::default(),
                    want4.view_mut(),
                );
                assert!(four == want4, "{at}: 4-connected rows after bands");
                cases += 1;
            }
        }
    }
    assert_eq!(cases, 11 * 12 * 4 * 4 * 2);
}
