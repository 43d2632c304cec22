//! From the seam join's demotions to the values the strip kernels write (`kernels/strips.cu`):
//! global root ids for raw numbering, and for canonical numbering the exclusive scan of the
//! strips' root counts and the numbers of the demoted roots.

use super::seam::Demotion;
use crate::{Error, Result};

/// Marks a slot the strip kernels treat as final (`FLAG` in `kernels/common.cuh`).
pub(crate) const FLAG: u32 = 0x8000_0000;

/// Raw numbering: `(local root, value)` pairs for `st_mark`, before (`flagged`: `FLAG | root +
/// 1`, which `st_raw_final` follows) and after (`root + 1`) the elementwise pass. Raw numbering
/// across strips needs fewer than 2^31 sites, so the root ids fit below the flag.
pub(crate) fn raw_pairs(demotions: &[Demotion], flagged: bool) -> Vec<[u32; 2]> {
    let flag = if flagged { FLAG } else { 0 };
    demotions
        .iter()
        .map(|d| [d.local, flag | (d.root as u32 + 1)])
        .collect()
}

/// The strips' first cluster numbers (0-based) from their counts of global roots, and the total.
///
/// # Errors
/// [`Error::InvalidArgument`] when there are 2^31 clusters or more: the strip kernels carry
/// numbers in 31 bits.
pub(crate) fn exclusive_scan(counts: &[u64]) -> Result<(Vec<u64>, u64)> {
    let mut first = Vec::with_capacity(counts.len());
    let mut total = 0u64;
    for &c in counts {
        first.push(total);
        total += c;
    }
    if total >= u64::from(FLAG) {
        return Err(Error::InvalidArgument(format!(
            "{total} clusters: multi-GPU canonical labels number fewer than 2^31"
        )));
    }
    Ok((first, total))
}

/// The roots each strip must read back after ranking (sorted, distinct local indices): the
/// global roots that other strips' (or its own) demoted roots were put under.
pub(crate) fn targets(demotions: &[Vec<Demotion>]) -> Vec<Vec<u32>> {
    let mut t = vec![Vec::new(); demotions.len()];
    for d in demotions.iter().flatten() {
        t[d.root_strip].push(d.root_local);
    }
    for list in &mut t {
        list.sort_unstable();
        list.dedup();
    }
    t
}

/// Canonical numbering: `(local root, FLAG | (number - 1 - first[s]) mod 2^31)` pairs for strip
/// `s`'s demoted roots, where `number - 1 = first[root strip] + rank` and `rank` is the root's
/// rank within its strip, read back as `FLAG | rank` (`gathered[t][i]` for `targets[t][i]`).
pub(crate) fn canonical_pairs(
    s: usize,
    demotions: &[Demotion],
    targets: &[Vec<u32>],
    gathered: &[Vec<u32>],
    first: &[u64],
) -> Vec<[u32; 2]> {
    demotions
        .iter()
        .map(|d| {
            let t = d.root_strip;
            let i = targets[t]
                .binary_search(&d.root_local)
                .expect("every demotion's root is a target");
            let number = first[t] + u64::from(gathered[t][i] & !FLAG);
            // Modulo 2^31: st_final adds first[s] back in the same arithmetic.
            let value = number.wrapping_sub(first[s]) as u32 & !FLAG;
            [d.local, FLAG | value]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demotion(local: u32, root_strip: usize, root_local: u32, root: u64) -> Demotion {
        Demotion {
            local,
            root_strip,
            root_local,
            root,
        }
    }

    #[test]
    fn scan_and_limit() {
        assert_eq!(exclusive_scan(&[3, 0, 5]).unwrap(), (vec![0, 3, 3], 8));
        assert_eq!(exclusive_scan(&[]).unwrap(), (vec![], 0));
        assert!(exclusive_scan(&[1 << 30, 1 << 30]).is_err());
        assert!(exclusive_scan(&[(1 << 31) - 1]).is_ok());
    }

    #[test]
    fn raw_values() {
        let d = [demotion(4, 0, 1, 1), demotion(9, 1, 2, 12)];
        assert_eq!(raw_pairs(&d, false), [[4, 2], [9, 13]]);
        assert_eq!(raw_pairs(&d, true), [[4, FLAG | 2], [9, FLAG | 13]]);
    }

    /// A demoted root in strip 2 under a root of strip 0, and one in strip 0 under a root of
    /// strip 1: the value plus the demoted root's strip offset, modulo 2^31, is the number - 1.
    #[test]
    fn canonical_values_wrap_to_the_number() {
        let demotions = vec![
            vec![demotion(5, 1, 7, 0)],
            vec![],
            vec![demotion(3, 0, 2, 0)],
        ];
        let t = targets(&demotions);
        assert_eq!(t, [vec![2], vec![7], vec![]]);
        // Ranks read back: strip 0's root 2 is its 4th root, strip 1's root 7 its 1st.
        let gathered = vec![vec![FLAG | 3], vec![FLAG], vec![]];
        let first = [0u64, 10, 25];
        let st_number = |v: u32, offset: u64| ((v as u64 + offset) as u32 & !FLAG) + 1;
        let p0 = canonical_pairs(0, &demotions[0], &t, &gathered, &first);
        assert_eq!(p0[0][0], 5);
        assert_eq!(st_number(p0[0][1], first[0]), 11);
        let p2 = canonical_pairs(2, &demotions[2], &t, &gathered, &first);
        assert_eq!(p2[0][1] & FLAG, FLAG);
        assert_eq!(st_number(p2[0][1], first[2]), 4);
    }
}
