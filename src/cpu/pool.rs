//! The CPU's threads as a value: [`Parallelism`] plus the pool it asks for, built once on first
//! use and shared by every clone (a `Labeler`'s backend, an `Analyzer` and its labelers).

use crate::{Parallelism, Result};
use std::sync::{Arc, OnceLock};

/// Runs work with the threads [`Parallelism`] asks for.
#[derive(Clone, Default)]
pub(crate) struct CpuPool {
    parallelism: Parallelism,
    /// The pool of `Parallelism::Threads(n)`, started on first use.
    pool: Arc<OnceLock<rayon::ThreadPool>>,
}

impl CpuPool {
    pub(crate) fn new(parallelism: Parallelism) -> Self {
        CpuPool {
            parallelism,
            pool: Arc::default(),
        }
    }

    pub(crate) fn parallelism(&self) -> Parallelism {
        self.parallelism
    }

    /// Whether work may fan out over threads (everything but `Sequential`, which stays on the
    /// caller's thread without touching rayon, so that it nests inside the caller's rayon jobs).
    pub(crate) fn parallel(&self) -> bool {
        self.parallelism != Parallelism::Sequential
    }

    /// The number of threads [`CpuPool::install`] runs on, without running anything there (a
    /// thread count of 0 counts as 1: `install` refuses it).
    pub(crate) fn threads(&self) -> usize {
        match self.parallelism {
            Parallelism::Sequential => 1,
            Parallelism::Rayon => rayon::current_num_threads(),
            Parallelism::Threads(n) => n.max(1),
        }
    }

    /// Runs `f(threads)` on the threads asked for: the caller's thread (`Sequential`, `threads`
    /// = 1), the current rayon pool (`Rayon`), or this pool's own threads (`Threads(n)`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a thread count of 0, above
    /// [`MAX_THREADS`](crate::MAX_THREADS), or threads that cannot be started.
    pub(crate) fn install<R: Send>(&self, f: impl FnOnce(usize) -> R + Send) -> Result<R> {
        self.parallelism.check()?;
        Ok(match self.parallelism {
            Parallelism::Sequential => f(1),
            Parallelism::Rayon => f(rayon::current_num_threads()),
            Parallelism::Threads(n) => {
                if self.pool.get().is_none() {
                    let pool = rayon::ThreadPoolBuilder::new()
                        .num_threads(n)
                        .build()
                        .map_err(|e| {
                            crate::Error::InvalidArgument(format!("cannot start {n} threads: {e}"))
                        })?;
                    // A clone that raced us may have set it first: either pool serves.
                    let _ = self.pool.set(pool);
                }
                self.pool.get().expect("set above").install(|| f(n))
            }
        })
    }
}
