//! Writes the reference lattices in `datasets/` and their answers, `datasets/expected.csv`.
//!
//! ```text
//! cargo run --release --example make_datasets [-- OUTPUT_DIR]
//! ```
//!
//! The random lattices come from a 64-bit Mersenne Twister (`rand_mt::Mt64`), whose output is
//! fixed by its specification, so the same seeds give the same files on every platform and
//! version. The answers (cluster count and largest cluster size, for 4- and 8-connectivity and
//! open and periodic boundaries) are computed with clusterlab's breadth-first reference labeler;
//! `datasets/check_scipy.py` recomputes them independently with scipy and a Python BFS.

use anyhow::{Context, Result};
use clusterlab::{Algorithm, Boundary, Connectivity, Labeler, SiteValue};
use ndarray::{Array2, ArrayView2};
use ndarray_npy::{write_npy, WritableElement};
use rand_mt::Mt64;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A uniform number in [0, 1) from the top 53 bits of the generator's output.
fn uniform(rng: &mut Mt64) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Sites occupied (1) with probability `p`, in raster order.
fn percolation(n: usize, p: f64, seed: u64) -> Array2<u8> {
    let mut rng = Mt64::new(seed);
    Array2::from_shape_fn((n, n), |_| u8::from(uniform(&mut rng) < p))
}

/// `g × g` blocks occupied as a whole with probability `p`, blocks in raster order.
fn granular(n: usize, g: usize, p: f64, seed: u64) -> Array2<u8> {
    let mut rng = Mt64::new(seed);
    let blocks = Array2::from_shape_fn((n / g, n / g), |_| u8::from(uniform(&mut rng) < p));
    Array2::from_shape_fn((n, n), |(y, x)| blocks[[y / g, x / g]])
}

/// Values 0..=3 (0 empty), each equally likely.
fn segments(n: usize, seed: u64) -> Array2<u16> {
    let mut rng = Mt64::new(seed);
    Array2::from_shape_fn((n, n), |_| (rng.next_u64() >> 62) as u16)
}

/// A square spiral: one 4-connected path from the top-left corner, clockwise along the edges
/// and inwards, its arms one empty row or column apart.
fn spiral(n: usize) -> Array2<u8> {
    let mut a = Array2::<u8>::zeros((n, n));
    let dirs = [(0isize, 1isize), (1, 0), (0, -1), (-1, 0)];
    let inside = |y: isize, x: isize| (0..n as isize).contains(&y) && (0..n as isize).contains(&x);
    let (mut y, mut x, mut d, mut stuck) = (0isize, 0isize, 0usize, 0);
    a[[0, 0]] = 1;
    while stuck < 2 {
        let (dy, dx) = dirs[d];
        let (ny, nx) = (y + dy, x + dx);
        let free = inside(ny, nx) && a[[ny as usize, nx as usize]] == 0;
        let (fy, fx) = (ny + dy, nx + dx);
        let gap = !inside(fy, fx) || a[[fy as usize, fx as usize]] == 0;
        if free && gap {
            (y, x, stuck) = (ny, nx, 0);
            a[[y as usize, x as usize]] = 1;
        } else {
            d = (d + 1) % 4;
            stuck += 1;
        }
    }
    a
}

/// 1 where `y + x` is even.
fn checkerboard(n: usize) -> Array2<u8> {
    Array2::from_shape_fn((n, n), |(y, x)| u8::from((y + x) % 2 == 0))
}

/// Pieces that join only across the wrapping edges: a ring of radius 7 (two sites thick)
/// centred on the corner (0, 0), so that each corner holds a quarter of it; a bar along row 16
/// through the x edge (columns 26..32 and 0..6); a bar along column 16 through the y edge
/// (rows 27..32 and 0..5, clear of the ring); and a few isolated sites in the middle.
fn torus_wrap(n: usize) -> Array2<u8> {
    let mut a = Array2::<u8>::zeros((n, n));
    let torus = |d: usize| d.min(n - d) as f64;
    for y in 0..n {
        for x in 0..n {
            let r = (torus(y).powi(2) + torus(x).powi(2)).sqrt();
            if (6.0..8.0).contains(&r) {
                a[[y, x]] = 1;
            }
        }
    }
    for x in (26..n).chain(0..6) {
        a[[16, x]] = 1;
    }
    for y in (27..n).chain(0..5) {
        a[[y, 16]] = 1;
    }
    for (y, x) in [(10, 10), (12, 22), (22, 11), (24, 24)] {
        a[[y, x]] = 1;
    }
    a
}

/// One row per (connectivity, boundary) of `file`, in the CSV format.
fn answers<T: SiteValue>(
    csv: &mut String,
    file: &str,
    lattice: ArrayView2<'_, T>,
    segments: bool,
) -> Result<()> {
    for (c, cname) in [(Connectivity::Four, "4"), (Connectivity::Eight, "8")] {
        for b in [Boundary::Open, Boundary::Periodic] {
            let labels = Labeler::new(c, b)
                .segments(segments)
                .algorithm(Algorithm::Bfs)
                .label(lattice)?;
            let largest = labels.sizes()[1..].iter().copied().max().unwrap_or(0);
            writeln!(
                csv,
                "{file},{cname},{},{},{},{largest}",
                b.name(),
                u8::from(segments),
                labels.count()
            )?;
        }
    }
    Ok(())
}

fn save<T: SiteValue + WritableElement>(
    dir: &Path,
    csv: &mut String,
    file: &str,
    lattice: &Array2<T>,
    segment_rows: bool,
) -> Result<()> {
    write_npy(dir.join(file), lattice).with_context(|| format!("writing {file}"))?;
    answers(csv, file, lattice.view(), false)?;
    if segment_rows {
        answers(csv, file, lattice.view(), true)?;
    }
    Ok(())
}

/// Writes the reference lattices and their answers.
#[derive(Debug, clap::Parser)]
#[command(max_term_width = 100)]
struct Args {
    /// The folder to write into (default: the repository's datasets/).
    output_dir: Option<PathBuf>,
}

fn main() -> Result<()> {
    // --help and bad arguments: clap prints them and exits (0, or 2 for errors).
    let dir = <Args as clap::Parser>::parse()
        .output_dir
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets"));
    std::fs::create_dir_all(&dir)?;
    let mut csv = String::from("file,connectivity,boundary,segments,count,largest\n");
    let d = dir.as_path();
    save(
        d,
        &mut csv,
        "percolation_128_pc.npy",
        &percolation(128, 0.5927, 20_240_601),
        false,
    )?;
    save(
        d,
        &mut csv,
        "percolation_256_p040.npy",
        &percolation(256, 0.40, 20_240_602),
        false,
    )?;
    save(d, &mut csv, "spiral_64.npy", &spiral(64), false)?;
    save(d, &mut csv, "checkerboard_16.npy", &checkerboard(16), false)?;
    save(d, &mut csv, "torus_wrap_32.npy", &torus_wrap(32), false)?;
    save(
        d,
        &mut csv,
        "segments_48_u16.npy",
        &segments(48, 20_240_603),
        true,
    )?;
    save(
        d,
        &mut csv,
        "granular_128_g4.npy",
        &granular(128, 4, 0.55, 20_240_604),
        false,
    )?;
    let path = dir.join("expected.csv");
    std::fs::write(&path, csv).with_context(|| format!("writing {}", path.display()))?;
    println!("wrote the datasets and {}", path.display());
    Ok(())
}
