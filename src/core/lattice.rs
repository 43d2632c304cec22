//! What a lattice is: neighbourhoods, boundaries and the site types that can be labeled.

use ndarray::{Array2, ArrayView2};
use std::fmt;
use std::str::FromStr;

/// A lattice of any supported site type, borrowed: what front ends hand to backends.
#[derive(Clone, Copy)]
pub(crate) enum Input<'a> {
    U8(ArrayView2<'a, u8>),
    U16(ArrayView2<'a, u16>),
    U32(ArrayView2<'a, u32>),
}

impl Input<'_> {
    /// `(height, width)`.
    pub(crate) fn dim(&self) -> (usize, usize) {
        match self {
            Input::U8(a) => a.dim(),
            Input::U16(a) => a.dim(),
            Input::U32(a) => a.dim(),
        }
    }
}

/// An owned lattice of one of the site types that can be labeled. Zero is empty, anything else
/// occupied (or, in segment mode, the site's segment value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lattice {
    /// 8-bit sites (also what boolean arrays become).
    U8(Array2<u8>),
    /// 16-bit sites.
    U16(Array2<u16>),
    /// 32-bit sites.
    U32(Array2<u32>),
}

impl Lattice {
    /// The shape `(height, width)`.
    pub fn dim(&self) -> (usize, usize) {
        match self {
            Lattice::U8(a) => a.dim(),
            Lattice::U16(a) => a.dim(),
            Lattice::U32(a) => a.dim(),
        }
    }

    /// The site type's NumPy name: `"uint8"`, `"uint16"` or `"uint32"`.
    pub fn dtype(&self) -> &'static str {
        match self {
            Lattice::U8(_) => "uint8",
            Lattice::U16(_) => "uint16",
            Lattice::U32(_) => "uint32",
        }
    }

    /// The number of occupied (nonzero) sites.
    pub fn occupied(&self) -> usize {
        match self {
            Lattice::U8(a) => a.iter().filter(|&&v| v != 0).count(),
            Lattice::U16(a) => a.iter().filter(|&&v| v != 0).count(),
            Lattice::U32(a) => a.iter().filter(|&&v| v != 0).count(),
        }
    }
}

impl From<Array2<u8>> for Lattice {
    fn from(a: Array2<u8>) -> Self {
        Lattice::U8(a)
    }
}
impl From<Array2<u16>> for Lattice {
    fn from(a: Array2<u16>) -> Self {
        Lattice::U16(a)
    }
}
impl From<Array2<u32>> for Lattice {
    fn from(a: Array2<u32>) -> Self {
        Lattice::U32(a)
    }
}
impl From<Array2<bool>> for Lattice {
    fn from(a: Array2<bool>) -> Self {
        Lattice::U8(a.mapv(u8::from))
    }
}

/// Which neighbours of a site can join its cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Connectivity {
    /// The four edge neighbours (von Neumann neighbourhood): site percolation on the square lattice.
    #[default]
    Four,
    /// The four edge neighbours and the four diagonals (Moore neighbourhood).
    Eight,
}

impl Connectivity {
    /// The number of neighbours a site has: 4 or 8.
    pub fn neighbours(self) -> usize {
        match self {
            Connectivity::Four => 4,
            Connectivity::Eight => 8,
        }
    }

    /// The dual neighbourhood, through which a cluster's outside is reached: the complement of
    /// 4-connected clusters is 8-connected, and back.
    pub(crate) fn dual(self) -> Connectivity {
        match self {
            Connectivity::Four => Connectivity::Eight,
            Connectivity::Eight => Connectivity::Four,
        }
    }

    /// The neighbourhood as `(dy, dx)` offsets, in raster order.
    pub fn offsets(self) -> &'static [(isize, isize)] {
        const FOUR: [(isize, isize); 4] = [(-1, 0), (0, -1), (0, 1), (1, 0)];
        const EIGHT: [(isize, isize); 8] = [
            (-1, -1),
            (-1, 0),
            (-1, 1),
            (0, -1),
            (0, 1),
            (1, -1),
            (1, 0),
            (1, 1),
        ];
        match self {
            Connectivity::Four => &FOUR,
            Connectivity::Eight => &EIGHT,
        }
    }
}

impl fmt::Display for Connectivity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.neighbours())
    }
}

impl FromStr for Connectivity {
    type Err = crate::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "4" | "four" => Ok(Connectivity::Four),
            "8" | "eight" => Ok(Connectivity::Eight),
            _ => Err(crate::Error::InvalidArgument(format!(
                "connectivity must be 4 or 8, not {s:?}"
            ))),
        }
    }
}

/// What lies beyond the lattice's edges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Boundary {
    /// Nothing: edge sites have fewer neighbours.
    #[default]
    Open,
    /// A torus: both axes wrap (row 0 neighbours row h−1, column 0 neighbours column w−1, and,
    /// for 8-connectivity, the corners neighbour each other diagonally).
    Periodic,
    /// A cylinder that wraps in `x` only (column 0 neighbours column w−1).
    PeriodicX,
    /// A cylinder that wraps in `y` only (row 0 neighbours row h−1).
    PeriodicY,
}

impl Boundary {
    /// Every boundary: open, the torus and both cylinders.
    pub const ALL: [Boundary; 4] = [
        Boundary::Open,
        Boundary::Periodic,
        Boundary::PeriodicX,
        Boundary::PeriodicY,
    ];

    /// Whether column 0 neighbours column w−1.
    pub fn wraps_x(self) -> bool {
        matches!(self, Boundary::Periodic | Boundary::PeriodicX)
    }
    /// Whether row 0 neighbours row h−1.
    pub fn wraps_y(self) -> bool {
        matches!(self, Boundary::Periodic | Boundary::PeriodicY)
    }
    /// The name used on the command line and in files: `open`, `periodic`, `periodic-x`, `periodic-y`.
    pub fn name(self) -> &'static str {
        match self {
            Boundary::Open => "open",
            Boundary::Periodic => "periodic",
            Boundary::PeriodicX => "periodic-x",
            Boundary::PeriodicY => "periodic-y",
        }
    }
}

impl fmt::Display for Boundary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Boundary {
    type Err = crate::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "open" => Ok(Boundary::Open),
            "periodic" | "torus" => Ok(Boundary::Periodic),
            "periodic-x" => Ok(Boundary::PeriodicX),
            "periodic-y" => Ok(Boundary::PeriodicY),
            _ => Err(crate::Error::InvalidArgument(format!(
                "boundary must be open, periodic, periodic-x or periodic-y, not {s:?}"
            ))),
        }
    }
}

pub(crate) mod sealed {
    use super::Input;
    use ndarray::ArrayView2;

    /// Seals [`SiteValue`](super::SiteValue) and converts a typed view to the backends' input.
    #[allow(private_interfaces)]
    pub trait Sealed: Sized {
        fn input(view: ArrayView2<'_, Self>) -> Input<'_>;
    }
    macro_rules! sealed {
        ($t:ty, $v:ident) => {
            #[allow(private_interfaces)]
            impl Sealed for $t {
                fn input(view: ArrayView2<'_, Self>) -> Input<'_> {
                    Input::$v(view)
                }
            }
        };
    }
    sealed!(u8, U8);
    sealed!(u16, U16);
    sealed!(u32, U32);
}

/// A site type that can be labeled: `u8`, `u16` or `u32`. Zero is empty, anything else occupied;
/// in segment mode, neighbours join only when they hold the same nonzero value.
///
/// Sealed: the backends have a fast path for each of these types.
pub trait SiteValue: sealed::Sealed + Copy + Eq + Send + Sync + fmt::Debug + 'static {
    /// The empty value.
    const ZERO: Self;
    /// Whether the site is occupied (nonzero).
    #[inline]
    fn is_occupied(self) -> bool {
        self != Self::ZERO
    }
}

impl SiteValue for u8 {
    const ZERO: Self = 0;
}
impl SiteValue for u16 {
    const ZERO: Self = 0;
}
impl SiteValue for u32 {
    const ZERO: Self = 0;
}

/// The most sites a lattice with `u32` labels may have: labels and provisional labels are `u32`,
/// and 0 means empty. Larger lattices take `u64` labels ([`label64`](crate::label64),
/// [`Labeler::label64`](crate::Labeler::label64)) up to [`MAX_SITES_64`].
pub const MAX_SITES: usize = u32::MAX as usize - 1;

/// The most sites a lattice with `u64` labels may have: the label image's bytes (8 a site) must
/// fit one allocation (`isize::MAX` bytes). Memory is the real limit long before this: the
/// labeling refuses, with its estimate of the bytes, what the machine cannot give.
pub const MAX_SITES_64: usize = isize::MAX as usize / 8;

/// Checks the site count against [`MAX_SITES`].
pub(crate) fn check_size(h: usize, w: usize) -> crate::Result<()> {
    check_size_for(h, w, MAX_SITES)
}

/// Checks the site count against `max` ([`MAX_SITES`] or [`MAX_SITES_64`]).
pub(crate) fn check_size_for(h: usize, w: usize, max: usize) -> crate::Result<()> {
    match h.checked_mul(w) {
        Some(n) if n <= max => Ok(()),
        n => Err(crate::Error::TooManySites {
            sites: n.unwrap_or(usize::MAX),
            max,
        }),
    }
}
