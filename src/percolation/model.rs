//! What is percolating: site percolation (4- or 8-connected) or bond percolation on an `L × M`
//! square lattice with open, cylinder or torus boundaries, and how its units (sites or bonds) are
//! numbered for the Newman–Ziff sweep.

use crate::{Boundary, Connectivity, Error, Result};
use std::fmt;
use std::str::FromStr;

/// Site or bond percolation on the square lattice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Model {
    /// Sites occupied with probability `p`; occupied neighbours (4 or 8) join.
    Site(Connectivity),
    /// Every site present; each of the 4-neighbour bonds open with probability `p`.
    Bond,
}

impl Model {
    /// `"site"` or `"bond"`, as on the command line and in study files.
    pub fn name(self) -> &'static str {
        match self {
            Model::Site(_) => "site",
            Model::Bond => "bond",
        }
    }

    /// 4 or 8 for site percolation, 4 for bond percolation (bonds join edge neighbours).
    pub fn connectivity(self) -> Connectivity {
        match self {
            Model::Site(c) => c,
            Model::Bond => Connectivity::Four,
        }
    }

    /// The model's threshold on the infinite square lattice: 0.59274605079 (site, 4-connected;
    /// Jacobsen 2015), 0.40725394921 (site, 8-connected: 1 − the 4-connected value, by
    /// matching), 1/2 (bond, exact).
    pub fn reference_pc(self) -> f64 {
        match self {
            Model::Site(Connectivity::Four) => 0.592_746_050_79,
            Model::Site(Connectivity::Eight) => 0.407_253_949_21,
            Model::Bond => 0.5,
        }
    }

    /// Builds a model from its name and connectivity.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a name other than `site` or `bond`, or bond percolation
    /// with 8-connectivity.
    pub fn from_parts(name: &str, connectivity: Connectivity) -> Result<Model> {
        match (name, connectivity) {
            ("site", c) => Ok(Model::Site(c)),
            ("bond", Connectivity::Four) => Ok(Model::Bond),
            ("bond", Connectivity::Eight) => Err(Error::InvalidArgument(
                "bond percolation is defined on the 4-neighbour square lattice: use --connectivity 4"
                    .into(),
            )),
            (other, _) => Err(Error::InvalidArgument(format!(
                "model must be site or bond, not {other:?}"
            ))),
        }
    }
}

impl fmt::Display for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.name(), self.connectivity())
    }
}

impl FromStr for Model {
    type Err = Error;
    /// `site` (4-connected), `site-4`, `site-8` or `bond`.
    fn from_str(s: &str) -> Result<Model> {
        match s {
            "site" | "site-4" => Ok(Model::Site(Connectivity::Four)),
            "site-8" => Ok(Model::Site(Connectivity::Eight)),
            "bond" | "bond-4" => Ok(Model::Bond),
            _ => Err(Error::InvalidArgument(format!(
                "model must be site, site-4, site-8 or bond, not {s:?}"
            ))),
        }
    }
}

/// The most units (sites or bonds) a Newman–Ziff sweep handles: indices and sizes are `u32`,
/// and the second moments of the per-`n` sums stay far inside `u128` below it.
pub const MAX_UNITS: usize = 1 << 30;

/// A model on a `width × height` lattice with a boundary: everything a sweep needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Geometry {
    /// Site or bond percolation.
    pub model: Model,
    /// Columns (`L`, the `x` extent).
    pub width: usize,
    /// Rows (`M`, the `y` extent).
    pub height: usize,
    /// Open, cylinder (`PeriodicX`/`PeriodicY`) or torus (`Periodic`).
    pub boundary: Boundary,
}

impl Geometry {
    /// Checks and builds a geometry.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero extent or more than [`MAX_UNITS`] sites or bonds.
    pub fn new(model: Model, width: usize, height: usize, boundary: Boundary) -> Result<Geometry> {
        if width == 0 || height == 0 {
            return Err(Error::InvalidArgument(format!(
                "lattice extents must be at least 1, not {width} × {height}"
            )));
        }
        let g = Geometry {
            model,
            width,
            height,
            boundary,
        };
        let units = width
            .checked_mul(height)
            .and_then(|s| s.checked_mul(2))
            .unwrap_or(usize::MAX);
        if units > MAX_UNITS {
            return Err(Error::InvalidArgument(format!(
                "a {width} × {height} lattice is too large for a Newman–Ziff sweep (at most {MAX_UNITS} sites and bonds)"
            )));
        }
        Ok(g)
    }

    /// Sites, `width · height`.
    pub fn sites(&self) -> usize {
        self.width * self.height
    }

    /// Right bonds per row: `width` when `x` wraps, `width − 1` otherwise.
    fn right_bonds_per_row(&self) -> usize {
        if self.boundary.wraps_x() {
            self.width
        } else {
            self.width - 1
        }
    }

    /// Rows of down bonds: `height` when `y` wraps, `height − 1` otherwise.
    fn down_bond_rows(&self) -> usize {
        if self.boundary.wraps_y() {
            self.height
        } else {
            self.height - 1
        }
    }

    /// `N`, the number of units occupied one by one: sites for site percolation, bonds for bond
    /// percolation (on a torus `2 · width · height`).
    pub fn units(&self) -> usize {
        match self.model {
            Model::Site(_) => self.sites(),
            Model::Bond => {
                self.height * self.right_bonds_per_row() + self.down_bond_rows() * self.width
            }
        }
    }

    /// Occupied sites once `n` units are occupied (`n` for site percolation; every site for bond
    /// percolation).
    pub fn occupied_sites(&self, n: usize) -> usize {
        match self.model {
            Model::Site(_) => n,
            Model::Bond => self.sites(),
        }
    }

    /// Bond `b` as `(from, to, dx, dy)`: the site indices (`y · width + x`) and the unwrapped step
    /// from `from` to `to`. Right bonds come first, row by row, then down bonds. (The sweep's
    /// forest numbers them the same way with multiplies; this is the tests' plain version.)
    #[cfg(test)]
    pub(crate) fn bond(&self, b: usize) -> (usize, usize, i32, i32) {
        let w = self.width;
        let per_row = self.right_bonds_per_row();
        let right = self.height * per_row;
        if b < right {
            let (y, x) = (b / per_row, b % per_row);
            let to = y * w + if x + 1 == w { 0 } else { x + 1 };
            (y * w + x, to, 1, 0)
        } else {
            let b = b - right;
            let (y, x) = (b / w, b % w);
            let ty = if y + 1 == self.height { 0 } else { y + 1 };
            (y * w + x, ty * w + x, 0, 1)
        }
    }
}
