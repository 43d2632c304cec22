//! The spin models: Ising (q = 2, ±1 units) and q-state Potts, on an L × M lattice.

use crate::core::lattice::check_size;
use crate::{Boundary, Error, Result};

/// Which Hamiltonian (CONVENTIONS.md, "Spin models").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModelKind {
    /// H = −J Σ s_i s_j − h Σ s_i with s = ±1 (spin value 0 is s = +1, 1 is s = −1).
    Ising,
    /// H = −J Σ δ(σ_i, σ_j) − h Σ δ(σ_i, 0) with σ ∈ 0..q.
    Potts,
}

impl ModelKind {
    /// `"ising"` or `"potts"`, as on the command line and in files.
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Ising => "ising",
            ModelKind::Potts => "potts",
        }
    }
}

/// A spin model on a `height × width` lattice: kind, number of states `q`, coupling `J`,
/// temperature `T` (k_B = 1, so β = 1/T) and uniform field `h`, and the boundary (periodic by
/// default). Spins are `u8` values `0..q`.
///
/// ```
/// use clusterlab::mc::Model;
/// let ising = Model::ising(32, 32, 2.269185314213022)?;
/// assert!((ising.bond_probability() - (1.0 - (-2.0 / 2.269185314213022f64).exp())).abs() < 1e-15);
/// let potts = Model::potts(3, 16, 16, 1.0 / (1.0 + 3f64.sqrt()).ln())?;
/// assert_eq!(potts.q(), 3);
/// # Ok::<(), clusterlab::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Model {
    kind: ModelKind,
    q: u8,
    coupling: f64,
    temperature: f64,
    field: f64,
    height: usize,
    width: usize,
    boundary: Boundary,
}

/// The exact critical temperature of the square-lattice Ising model, 2/ln(1 + √2) (J = 1).
pub const ISING_TC: f64 = 2.269_185_314_213_022;

/// The exact critical temperature of the square-lattice q-state Potts model, 1/ln(1 + √q) (J = 1).
pub fn potts_tc(q: u8) -> f64 {
    1.0 / (1.0 + f64::from(q).sqrt()).ln()
}

impl Model {
    /// The Ising model, J = 1, h = 0, periodic.
    ///
    /// # Errors
    /// As [`Model::check`].
    pub fn ising(height: usize, width: usize, temperature: f64) -> Result<Self> {
        Model {
            kind: ModelKind::Ising,
            q: 2,
            coupling: 1.0,
            temperature,
            field: 0.0,
            height,
            width,
            boundary: Boundary::Periodic,
        }
        .check()
    }

    /// The q-state Potts model, J = 1, h = 0, periodic.
    ///
    /// # Errors
    /// As [`Model::check`].
    pub fn potts(q: u8, height: usize, width: usize, temperature: f64) -> Result<Self> {
        Model {
            kind: ModelKind::Potts,
            q,
            coupling: 1.0,
            temperature,
            field: 0.0,
            height,
            width,
            boundary: Boundary::Periodic,
        }
        .check()
    }

    /// The same model at another temperature.
    ///
    /// # Errors
    /// As [`Model::check`].
    pub fn with_temperature(mut self, temperature: f64) -> Result<Self> {
        self.temperature = temperature;
        self.check()
    }

    /// The same model with coupling `J` (ferromagnetic: J > 0).
    ///
    /// # Errors
    /// As [`Model::check`].
    pub fn with_coupling(mut self, coupling: f64) -> Result<Self> {
        self.coupling = coupling;
        self.check()
    }

    /// The same model with a uniform field `h` (Metropolis only).
    ///
    /// # Errors
    /// As [`Model::check`].
    pub fn with_field(mut self, field: f64) -> Result<Self> {
        self.field = field;
        self.check()
    }

    /// The same model with another boundary.
    ///
    /// # Errors
    /// As [`Model::check`].
    pub fn with_boundary(mut self, boundary: Boundary) -> Result<Self> {
        self.boundary = boundary;
        self.check()
    }

    /// Checks the parameters.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for q outside 2..=255 (2 for Ising), a temperature that is not
    /// finite and positive, a coupling that is not finite and positive, a field that is not
    /// finite, a side below 2; [`Error::TooManySites`] beyond [`MAX_SITES`](crate::MAX_SITES).
    pub fn check(self) -> Result<Self> {
        let bad = |m: String| Err(Error::InvalidArgument(m));
        if self.q < 2 || (self.kind == ModelKind::Ising && self.q != 2) {
            return bad(format!(
                "q must be in 2..=255 (2 for Ising), not {}",
                self.q
            ));
        }
        if !(self.temperature.is_finite() && self.temperature > 0.0) {
            return bad(format!(
                "temperature must be finite and > 0, not {}",
                self.temperature
            ));
        }
        if !(self.coupling.is_finite() && self.coupling > 0.0) {
            return bad(format!(
                "coupling J must be finite and > 0, not {}",
                self.coupling
            ));
        }
        if !self.field.is_finite() {
            return bad(format!("field h must be finite, not {}", self.field));
        }
        if self.height < 2 || self.width < 2 {
            return bad(format!(
                "lattice must be at least 2×2, not {}×{}",
                self.height, self.width
            ));
        }
        check_size(self.height, self.width)?;
        Ok(self)
    }

    /// Ising or Potts.
    pub fn kind(&self) -> ModelKind {
        self.kind
    }
    /// Number of spin states.
    pub fn q(&self) -> u8 {
        self.q
    }
    /// Coupling J.
    pub fn coupling(&self) -> f64 {
        self.coupling
    }
    /// Temperature T.
    pub fn temperature(&self) -> f64 {
        self.temperature
    }
    /// β = 1/T.
    pub fn beta(&self) -> f64 {
        1.0 / self.temperature
    }
    /// Field h.
    pub fn field(&self) -> f64 {
        self.field
    }
    /// `(height, width)`.
    pub fn dim(&self) -> (usize, usize) {
        (self.height, self.width)
    }
    /// Number of sites.
    pub fn sites(&self) -> usize {
        self.height * self.width
    }
    /// The boundary.
    pub fn boundary(&self) -> Boundary {
        self.boundary
    }

    /// The Potts coupling K = β J_Potts that equal neighbours gain: an Ising pair (s s' = ±1)
    /// differs by 2J between equal and unequal spins, so the Ising model is the q = 2 Potts model
    /// with J_Potts = 2J.
    pub(crate) fn potts_k(&self) -> f64 {
        match self.kind {
            ModelKind::Ising => 2.0 * self.coupling * self.beta(),
            ModelKind::Potts => self.coupling * self.beta(),
        }
    }

    /// The Swendsen–Wang / Wolff bond probability between equal neighbours: 1 − e^(−2βJ) for
    /// Ising (±1 units), 1 − e^(−βJ) for Potts.
    pub fn bond_probability(&self) -> f64 {
        -(-self.potts_k()).exp_m1()
    }
}
