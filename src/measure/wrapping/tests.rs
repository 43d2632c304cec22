//! The joins of pieces across wrapped edges: winding and shifts on small cases, the edge-line
//! join against the generic one, the parallel numbering against the serial one.

use super::*;
use ndarray::array;

fn run(pieces: ArrayView2<'_, u32>, c: Connectivity, b: Boundary) -> Joined {
    let n = pieces.iter().copied().max().unwrap_or(0) as usize;
    let mut j = Joined::default();
    j.join(pieces, n, c, b, |s, t| pieces[s] != 0 && pieces[t] != 0);
    j
}

#[test]
fn straight_strip_wraps_in_x_only() {
    let p = array![[0, 0, 0], [1, 1, 1], [0, 0, 0]];
    let j = run(p.view(), Connectivity::Four, Boundary::Periodic);
    assert_eq!(j.count, 1);
    assert_eq!(j.wraps[1], WRAP_X);
}

#[test]
fn two_pieces_joined_across_the_edge_get_a_shift() {
    // Pieces 1 (column 0) and 2 (column 2) meet across the x edge: no winding.
    let p = array![[1, 0, 2], [0, 0, 0]];
    let j = run(p.view(), Connectivity::Four, Boundary::Periodic);
    assert_eq!(j.count, 1);
    assert_eq!(j.wraps[1], 0);
    // Piece 2 is reached from piece 1 by stepping left across the edge: one period back.
    assert_eq!(j.shift[2], [-1, 0]);
}

#[test]
fn diagonal_winding_wraps_both() {
    // One open piece (8-connected along the diagonal) that closes on itself across the corner.
    let p = array![[1, 0, 0], [0, 1, 0], [0, 0, 1]];
    let j = run(p.view(), Connectivity::Eight, Boundary::Periodic);
    assert_eq!(j.count, 1);
    assert_eq!(j.wraps[1], WRAP_X | WRAP_Y);
}

#[test]
fn width_one_torus_wraps_in_x() {
    let p = array![[1], [0]];
    let j = run(p.view(), Connectivity::Four, Boundary::Periodic);
    assert_eq!(j.wraps[1], WRAP_X);
    let j = run(p.view(), Connectivity::Four, Boundary::PeriodicY);
    assert_eq!(j.wraps[1], 0);
}

/// The numbering of a joined forest by a find from every piece, in increasing order: the
/// reference for `number`, which finds from the merged pieces only.
fn numbered_by_finds(j: &Joined, npieces: usize) -> Joined {
    let mut j = j.clone();
    j.map = vec![0; npieces + 1];
    j.shift = vec![[0, 0]; npieces + 1];
    j.wraps = vec![0];
    j.merged.clear();
    let mut n = 0;
    for p in 1..=npieces as u32 {
        j.meet(p);
        let (r, o) = j.find(p);
        if r == p {
            n += 1;
            j.map[p as usize] = n;
            j.wraps.push(j.flags[p as usize]);
        } else {
            j.map[p as usize] = j.map[r as usize];
            j.merged.push(p);
        }
        j.shift[p as usize] = o;
    }
    j.count = n as usize;
    j
}

/// A parallel join of enough pieces to take rayon's threads (`PAR_PIECES`) numbers them as
/// the serial one: a 300 × 500 torus whose edge sites hold pieces spread over 2^19 + 7, in
/// runs along the edges as real pieces are, every connectivity and boundary.
#[test]
fn parallel_join_of_many_pieces_is_the_serial_one() {
    use rand::{RngExt, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let (h, w) = (300, 500);
    let npieces = PAR_PIECES + 7;
    for c in [Connectivity::Four, Connectivity::Eight] {
        for b in [Boundary::Periodic, Boundary::PeriodicX, Boundary::PeriodicY] {
            let mut edge = vec![0u32; 2 * (h + w)];
            let mut piece = 0;
            for e in edge.iter_mut() {
                if rng.random::<f64>() < 0.3 {
                    piece = rng.random_range(1..=npieces as u32);
                }
                *e = if rng.random::<f64>() < 0.4 { 0 } else { piece };
            }
            let mut serial = Joined::default();
            serial.join_edges((h, w), npieces, c, b, &edge, true);
            let mut par = Joined::parallel();
            par.join_edges((h, w), npieces, c, b, &edge, true);
            let what = format!("{c:?} {b:?}");
            assert!(serial.count < npieces, "{what}: some pieces join");
            assert_eq!(par.count, serial.count, "{what}");
            assert_eq!(par.map, serial.map, "{what}");
            assert_eq!(par.shift, serial.shift, "{what}");
            assert_eq!(par.wraps, serial.wraps, "{what}");
            assert_eq!(par.merged, serial.merged, "{what}");
        }
    }
}

/// `join_edges` reads the edge lines directly; the generic join visits the same links
/// through `for_each_wrap_link`. Both must give the same clusters, shifts and flags, on
/// lattices down to one site wide (where a link and its twin are two links) and on pieces
/// made of runs along the edges, as real pieces are.
#[test]
fn edge_lines_join_as_the_generic_join() {
    use rand::{RngExt, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let shapes = [
        (1, 1),
        (1, 2),
        (2, 1),
        (2, 2),
        (1, 5),
        (5, 1),
        (2, 7),
        (3, 3),
        (4, 9),
    ];
    let shapes = shapes.into_iter().chain([(17, 13), (32, 5), (6, 40)]);
    // One join reused for every case, without dense maps: its stamps must forget each case.
    let mut reused = Joined::default();
    for (h, w) in shapes {
        for trial in 0..40 {
            let npieces = 1 + trial % 9;
            let fill = [0.3, 0.6, 0.9][trial % 3];
            let mut pieces = ndarray::Array2::<u32>::zeros((h, w));
            let mut cur = 1;
            for v in pieces.iter_mut() {
                if rng.random::<f64>() < 0.3 {
                    cur = rng.random_range(1..=npieces as u32);
                }
                if rng.random::<f64>() < fill {
                    *v = cur;
                }
            }
            let mut edge = vec![0u32; 2 * (h + w)];
            for y in 0..h {
                for x in 0..w {
                    if y == 0 || y == h - 1 || x == 0 || x == w - 1 {
                        edge[edge_index((h, w), (y, x))] = pieces[(y, x)];
                    }
                }
            }
            for c in [Connectivity::Four, Connectivity::Eight] {
                for b in [
                    Boundary::Periodic,
                    Boundary::PeriodicX,
                    Boundary::PeriodicY,
                    Boundary::Open,
                ] {
                    let mut want = Joined::default();
                    let v = pieces.view();
                    want.join(v, npieces, c, b, |s, t| v[s] != 0 && v[t] != 0);
                    let mut got = Joined::default();
                    got.join_edges((h, w), npieces, c, b, &edge, true);
                    let what = format!("{h}x{w} trial {trial} {c} {b}");
                    let reference = numbered_by_finds(&got, npieces);
                    assert_eq!(got.count, reference.count, "{what}");
                    assert_eq!(got.map, reference.map, "{what}");
                    assert_eq!(got.shift, reference.shift, "{what}");
                    assert_eq!(got.wraps, reference.wraps, "{what}");
                    assert_eq!(got.merged, reference.merged, "{what}");
                    assert_eq!(got.count, want.count, "{what}");
                    assert_eq!(got.map, want.map, "{what}");
                    assert_eq!(got.shift, want.shift, "{what}");
                    assert_eq!(got.wraps, want.wraps, "{what}");
                    assert_eq!(got.merged, want.merged, "{what}");
                    // Without dense maps: the same clusters, through the merged pieces'.
                    reused.join_edges((h, w), npieces, c, b, &edge, false);
                    assert!(reused.map.is_empty() && reused.shift.is_empty(), "{what}");
                    assert_eq!(reused.count, got.count, "{what}");
                    assert_eq!(reused.wraps, got.wraps, "{what}");
                    assert_eq!(reused.merged, got.merged, "{what}");
                    for (i, &p) in got.merged.iter().enumerate() {
                        assert_eq!(reused.merged_map[i], got.map[p as usize], "{what}");
                        assert_eq!(reused.merged_shift[i], got.shift[p as usize], "{what}");
                    }
                    for p in 1..=npieces as u32 {
                        assert_eq!(reused.is_root(p), !got.merged.contains(&p), "{what}");
                    }
                    reused.fill_map();
                    assert_eq!(reused.map, got.map, "{what}");
                }
            }
        }
    }
}
