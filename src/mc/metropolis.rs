//! The checkerboard Metropolis sweep, the local baseline: sites with (x + y) even, then odd,
//! each half-sweep's rows in parallel (sites of one colour never neighbour each other, so the
//! order within a half does not matter and the result does not depend on thread count). Each
//! site proposes a new spin (Ising: the other; Potts: one of the q − 1 others, uniformly) and
//! accepts it with probability min(1, e^(−βΔE)).

use super::measure::{tally, Sample};
use super::model::{Model, ModelKind};
use super::rng::{below, threshold, SweepKey, TAG_METROPOLIS};
use crate::cpu::pool::CpuPool;
use crate::{Error, Options, Parallelism, Result};
use ndarray::Array2;
use rayon::prelude::*;

/// Metropolis state reused across sweeps: the acceptance thresholds and per-row random words.
pub struct Metropolis {
    pool: CpuPool,
    parallel: bool,
    /// Thresholds by (n_new − n_old + 4) · 3 + (δ(new, 0) − δ(old, 0) + 1).
    accept: [u64; 27],
    model: Option<Model>,
}

/// The spins, shared by the threads of one half-sweep: each writes only its own rows' sites of
/// the colour being updated and reads only sites of the other colour.
struct Shared(*mut u8);
// SAFETY: see the type's docs: within a half-sweep no byte is both written by one thread and
// accessed by another.
unsafe impl Sync for Shared {}
unsafe impl Send for Shared {}

impl Metropolis {
    /// A Metropolis updater for `model` with the CPU threads of `options`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an odd side along a periodic axis (the checkerboard would
    /// put equal colours next to each other across the edge) or a thread count of 0.
    pub fn new(model: &Model, options: Options) -> Result<Self> {
        options.parallelism.check()?;
        let (h, w) = model.dim();
        let b = model.boundary();
        if (b.wraps_x() && w % 2 == 1) || (b.wraps_y() && h % 2 == 1) {
            return Err(Error::InvalidArgument(format!(
                "checkerboard Metropolis needs even sides along periodic axes, not {h}×{w}"
            )));
        }
        Ok(Metropolis {
            pool: CpuPool::new(options.parallelism),
            parallel: options.parallelism != Parallelism::Sequential,
            accept: [0; 27],
            model: None,
        })
    }

    fn tables(&mut self, model: &Model) {
        if self.model.as_ref() == Some(model) {
            return;
        }
        // The Ising model is the q = 2 Potts model with J_P = 2J and a field 2h on state 0.
        let (jp, hp) = match model.kind() {
            ModelKind::Ising => (2.0 * model.coupling(), 2.0 * model.field()),
            ModelKind::Potts => (model.coupling(), model.field()),
        };
        for dn in -4i32..=4 {
            for dd in -1i32..=1 {
                let de = -jp * f64::from(dn) - hp * f64::from(dd);
                self.accept[((dn + 4) * 3 + dd + 1) as usize] =
                    threshold((-model.beta() * de).exp().min(1.0));
            }
        }
        self.model = Some(*model);
    }

    /// One sweep (both colours); with `measure`, the sample of the new configuration.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a thread count the pool cannot start.
    pub fn sweep(
        &mut self,
        model: &Model,
        spins: &mut Array2<u8>,
        seed: u64,
        stream: u64,
        sweep: u64,
        measure: bool,
    ) -> Result<Option<Sample>> {
        self.tables(model);
        let key = SweepKey::new(seed, stream, sweep, TAG_METROPOLIS);
        let (h, w) = model.dim();
        let b = model.boundary();
        let q = u32::from(model.q());
        let accept = &self.accept;
        let parallel = self.parallel;
        let pool = self.pool.clone();
        let ptr = Shared(spins.as_mut_ptr());
        let ptr = &ptr;
        pool.install(|_| {
            for colour in 0..2 {
                let row = |y: usize| {
                    let mut buf = vec![0u32; 4 * w];
                    key.stream_at((y * w) as u32).fill_u32(&mut buf);
                    let at = |yy: usize, xx: usize| {
                        // SAFETY: in bounds; only other-colour sites are read (see `Shared`).
                        unsafe { *ptr.0.add(yy * w + xx) }
                    };
                    let up = if y > 0 {
                        Some(y - 1)
                    } else {
                        b.wraps_y().then(|| h - 1)
                    };
                    let dn = if y + 1 < h {
                        Some(y + 1)
                    } else {
                        b.wraps_y().then_some(0)
                    };
                    for x in ((y + colour) % 2..w).step_by(2) {
                        let old = at(y, x);
                        let blk = &buf[4 * x..4 * x + 4];
                        let new = ((u32::from(old) + 1 + below(blk[0], q - 1)) % q) as u8;
                        let lf = if x > 0 {
                            Some(x - 1)
                        } else {
                            b.wraps_x().then(|| w - 1)
                        };
                        let rt = if x + 1 < w {
                            Some(x + 1)
                        } else {
                            b.wraps_x().then_some(0)
                        };
                        let mut dn_ = 0i32;
                        let mut look = |v: u8| dn_ += i32::from(v == new) - i32::from(v == old);
                        if let Some(xx) = lf {
                            look(at(y, xx));
                        }
                        if let Some(xx) = rt {
                            look(at(y, xx));
                        }
                        if let Some(yy) = up {
                            look(at(yy, x));
                        }
                        if let Some(yy) = dn {
                            look(at(yy, x));
                        }
                        let dd = i32::from(new == 0) - i32::from(old == 0);
                        if u64::from(blk[1]) < accept[((dn_ + 4) * 3 + dd + 1) as usize] {
                            // SAFETY: this site has this half's colour and belongs to this row.
                            unsafe { *ptr.0.add(y * w + x) = new };
                        }
                    }
                };
                if parallel {
                    (0..h).into_par_iter().for_each(row);
                } else {
                    (0..h).for_each(row);
                }
            }
        })?;
        if !measure {
            return Ok(None);
        }
        Ok(Some(
            tally(model, spins.view(), self.parallel).sample(model),
        ))
    }
}
