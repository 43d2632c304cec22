//! How a lattice is cut into horizontal strips, and which device labels each strip.

use crate::{Error, Result};

/// The most sites one strip may hold: canonical numbering ranks a strip's roots in 31-bit slot
/// values (`FLAG | rank`, `kernels/canonical.cu`), so a site index must stay below 2^31.
pub(crate) const MAX_STRIP_SITES: usize = super::super::engine::MAX_CANONICAL_SITES;

/// How the user asked the rows to be split.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum Split {
    /// One strip per device, or more (a multiple of the device count) when a strip would pass
    /// [`MAX_STRIP_SITES`].
    #[default]
    Auto,
    /// This many strips of (nearly) equal heights.
    Count(usize),
    /// Strips of exactly these heights, top to bottom.
    Rows(Vec<usize>),
}

/// One strip: rows `y0..y0 + rows` of the lattice, labeled on `devices[slot]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Strip {
    pub y0: usize,
    pub rows: usize,
    /// Index into the labeler's device list.
    pub slot: usize,
}

impl Strip {
    /// The global index of the strip's first site.
    pub(crate) fn offset(&self, width: usize) -> u64 {
        (self.y0 * width) as u64
    }
}

/// The strips of an `h × w` lattice (`h, w > 0`) over `devices` devices.
///
/// # Errors
/// [`Error::InvalidArgument`] for no devices, 0 strips, more strips than rows, strip heights
/// that are 0 or do not add up to `h`, or a strip of more than [`MAX_STRIP_SITES`] sites.
pub(crate) fn plan(h: usize, w: usize, devices: usize, split: &Split) -> Result<Vec<Strip>> {
    if devices == 0 {
        return Err(Error::InvalidArgument(
            "multi-GPU labeling needs at least one device".into(),
        ));
    }
    let rows: Vec<usize> = match split {
        Split::Auto => {
            // Enough strips that each fits, rounded up to a multiple of the devices so that every
            // device gets the same share; never more strips than rows.
            let needed = (h * w).div_ceil(MAX_STRIP_SITES).max(1);
            even(h, needed.next_multiple_of(devices).min(h))
        }
        Split::Count(0) => {
            return Err(Error::InvalidArgument(
                "multi-GPU labeling needs at least one strip".into(),
            ))
        }
        Split::Count(s) if *s > h => {
            return Err(Error::InvalidArgument(format!(
                "{s} strips asked of a lattice of {h} rows: a strip needs at least one row"
            )))
        }
        Split::Count(s) => even(h, *s),
        Split::Rows(r) => {
            if r.is_empty() || r.contains(&0) {
                return Err(Error::InvalidArgument(format!(
                    "strip heights {r:?}: every strip needs at least one row"
                )));
            }
            if r.iter().sum::<usize>() != h {
                return Err(Error::InvalidArgument(format!(
                    "strip heights {r:?} add up to {} rows; the lattice has {h}",
                    r.iter().sum::<usize>()
                )));
            }
            r.clone()
        }
    };
    let s = rows.len();
    let mut strips = Vec::with_capacity(s);
    let mut y0 = 0;
    for (i, &r) in rows.iter().enumerate() {
        if r * w > MAX_STRIP_SITES {
            return Err(Error::InvalidArgument(format!(
                "a strip of {r} × {w} sites passes the {MAX_STRIP_SITES} sites one strip may \
                 hold; use more strips"
            )));
        }
        strips.push(Strip {
            y0,
            rows: r,
            // Contiguous blocks of strips per device, so that seams between devices are few.
            slot: i * devices / s,
        });
        y0 += r;
    }
    Ok(strips)
}

/// `s` heights adding up to `h`, the first `h % s` one row taller.
fn even(h: usize, s: usize) -> Vec<usize> {
    (0..s).map(|i| h / s + usize::from(i < h % s)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heights(strips: &[Strip]) -> Vec<usize> {
        strips.iter().map(|s| s.rows).collect()
    }

    #[test]
    fn even_split_and_devices() {
        let s = plan(10, 7, 2, &Split::Count(3)).unwrap();
        assert_eq!(heights(&s), [4, 3, 3]);
        assert_eq!(s.iter().map(|s| s.y0).collect::<Vec<_>>(), [0, 4, 7]);
        assert_eq!(s.iter().map(|s| s.slot).collect::<Vec<_>>(), [0, 0, 1]);
        assert_eq!(s[2].offset(7), 49);
        let s = plan(5, 3, 1, &Split::Count(5)).unwrap();
        assert_eq!(heights(&s), [1; 5]);
        assert!(s.iter().all(|s| s.slot == 0));
        let s = plan(9, 3, 4, &Split::Auto).unwrap();
        assert_eq!(heights(&s), [3, 2, 2, 2]);
        assert_eq!(s.iter().map(|s| s.slot).collect::<Vec<_>>(), [0, 1, 2, 3]);
        // Fewer rows than devices: one strip per row.
        assert_eq!(plan(2, 3, 4, &Split::Auto).unwrap().len(), 2);
    }

    #[test]
    fn auto_keeps_strips_under_the_limit() {
        let w = 65536;
        let s = plan(65536, w, 2, &Split::Auto).unwrap();
        assert_eq!(s.len(), 4);
        assert!(s.iter().all(|s| s.rows * w <= MAX_STRIP_SITES));
        let s = plan(98304, 98304, 2, &Split::Auto).unwrap();
        assert_eq!(s.len(), 6);
        assert_eq!(s.iter().filter(|s| s.slot == 1).count(), 3);
        assert!(plan(65536, w, 1, &Split::Count(2)).is_err());
    }

    #[test]
    fn bad_splits_are_errors() {
        for (h, d, split) in [
            (4, 0, Split::Auto),
            (4, 1, Split::Count(0)),
            (4, 1, Split::Count(5)),
            (4, 1, Split::Rows(vec![])),
            (4, 1, Split::Rows(vec![2, 0, 2])),
            (4, 1, Split::Rows(vec![2, 1])),
        ] {
            assert!(
                matches!(plan(h, 3, d, &split), Err(Error::InvalidArgument(_))),
                "{h} {d} {split:?}"
            );
        }
        let s = plan(4, 3, 2, &Split::Rows(vec![1, 3])).unwrap();
        assert_eq!(heights(&s), [1, 3]);
        assert_eq!(s[1].slot, 1);
    }
}
