//! Union-find over `u32` labels that are indices into a parent array.
//!
//! Every algorithm links the larger root under the smaller one, so a root is always the smallest
//! label of its set, `parent[x] <= x` holds throughout, and numbering roots in increasing order
//! gives scipy's raster-order labels when provisional labels are issued in raster order.

/// The root of `x`, halving the path on the way (each visited node skips to its grandparent).
#[inline]
pub(crate) fn find(parent: &mut [u32], mut x: u32) -> u32 {
    loop {
        let p = parent[x as usize];
        if p == x {
            return x;
        }
        let gp = parent[p as usize];
        parent[x as usize] = gp;
        if gp == p {
            return p;
        }
        x = gp;
    }
}

/// The root of `x` without changing the forest (for concurrent readers).
#[inline]
pub(crate) fn find_readonly(parent: &[u32], mut x: u32) -> u32 {
    loop {
        let p = parent[x as usize];
        if p == x {
            return x;
        }
        x = p;
    }
}

/// Joins the sets of `a` and `b`; the smaller root becomes the root of both.
///
/// Rem's algorithm with splicing (Patwary, Blair and Manne 2010; Wu, Otoo and Suzuki found it
/// the fastest union-find for labeling): the two paths are climbed together, each node on the way
/// is pointed at the other path's smaller parent, and the climb stops as soon as the parents meet —
/// at once for the many unions of a raster scan whose two runs are already joined. Parents only
/// ever decrease, so `parent[x] <= x` holds.
#[inline]
pub(crate) fn union(parent: &mut [u32], a: u32, b: u32) {
    let (mut x, mut y) = (a as usize, b as usize);
    loop {
        let (px, py) = (parent[x], parent[y]);
        if px == py {
            return;
        }
        if px > py {
            parent[x] = py;
            if px as usize == x {
                return;
            }
            x = px as usize;
        } else {
            parent[y] = px;
            if py as usize == y {
                return;
            }
            y = py as usize;
        }
    }
}

/// Numbers the roots `1..=n` in increasing order and maps every label to its root's number,
/// writing `number[label + offset]`; returns `n`. Needs `parent[x] <= x` (see the module docs), so
/// one forward pass suffices.
pub(crate) fn number_roots(parent: &[u32], number: &mut [u32], offset: usize) -> u32 {
    let mut n = 0u32;
    for (x, &p) in parent.iter().enumerate() {
        number[x + offset] = if p as usize == x {
            n += 1;
            n
        } else {
            number[p as usize + offset]
        };
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smaller_root_wins_and_numbering_is_increasing() {
        let mut p: Vec<u32> = (0..6).collect();
        union(&mut p, 4, 2);
        union(&mut p, 5, 4);
        union(&mut p, 3, 1);
        assert_eq!(find(&mut p, 5), 2);
        assert_eq!(find(&mut p, 3), 1);
        assert!(p.iter().enumerate().all(|(x, &q)| q as usize <= x));
        let mut num = vec![0; 7];
        let n = number_roots(&p, &mut num, 1);
        assert_eq!(n, 3);
        assert_eq!(&num[1..], &[1, 2, 3, 2, 3, 3]);
    }
}
