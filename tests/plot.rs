//! `clusterlab::plot` and `clusterlab plot`: n_s against the naive analysis oracle, label images
//! pixel by pixel, PNG headers and sizes, atomic writes and one-line errors.

mod analysis_common;

use analysis_common::Oracle;
use clusterlab::generate::percolation;
use clusterlab::plot::{
    label_colour, plot_labels, plot_size_distribution, Background, LabelImageOptions,
    SizeDistribution, SizePlotOptions, MAX_IMAGE_SIDE, TAU_2D,
};
use clusterlab::{analyze, label, Boundary, Connectivity, Error};
use ndarray::{array, Array2, ArrayView2};
use ndarray_npy::write_npy;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BOUNDARIES: [Boundary; 4] = [
    Boundary::Open,
    Boundary::Periodic,
    Boundary::PeriodicX,
    Boundary::PeriodicY,
];
const CONNS: [Connectivity; 2] = [Connectivity::Four, Connectivity::Eight];

// ---------------------------------------------------------------------------------------------
// Helpers

/// A temporary folder with `in/` for inputs and `out/` for outputs.
struct Dirs {
    root: tempfile::TempDir,
    input: PathBuf,
    out: PathBuf,
}

fn dirs() -> Dirs {
    let root = tempfile::tempdir().unwrap();
    let input = root.path().join("in");
    let out = root.path().join("out");
    std::fs::create_dir(&input).unwrap();
    std::fs::create_dir(&out).unwrap();
    Dirs { root, input, out }
}

/// Names of the entries in `dir`, sorted (temporaries included: they start with a dot).
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn run_in(dir: Option<&Path>, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_clusterlab"));
    // No HDF5 file locks in the child (see tests/cli.rs `run`: descriptors inherited by
    // children of parallel tests keep locks alive).
    cmd.args(args).env("HDF5_USE_FILE_LOCKING", "FALSE");
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    cmd.output().expect("run clusterlab")
}

fn run(args: &[&str]) -> Output {
    run_in(None, args)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn assert_ok(o: &Output) {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        stdout(o),
        stderr(o)
    );
}

/// The run failed with a one-line `error: ...` naming `needle`, and `out` holds exactly `keep`.
fn assert_clean_failure(o: &Output, needle: &str, out: &Path, keep: &[&str]) {
    let err = stderr(o);
    assert!(!o.status.success(), "expected failure, got success: {err}");
    assert!(o.status.code().is_some(), "killed by a signal: {err}");
    assert_eq!(err.lines().count(), 1, "not one line:\n{err}");
    assert!(err.starts_with("error: "), "{err}");
    assert!(
        err.to_lowercase().contains(&needle.to_lowercase()),
        "{err:?} does not mention {needle:?}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(stdout(o).is_empty(), "stdout: {}", stdout(o));
    assert_eq!(entries(out), keep, "left behind in {out:?}");
}

/// Width and height from the PNG signature and IHDR chunk, read byte by byte.
fn png_header_size(bytes: &[u8]) -> (u32, u32) {
    assert!(
        bytes.len() > 33,
        "too short for a PNG: {} bytes",
        bytes.len()
    );
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG signature");
    assert_eq!(&bytes[8..12], &13u32.to_be_bytes(), "IHDR length");
    assert_eq!(&bytes[12..16], b"IHDR", "first chunk is not IHDR");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    assert_eq!(bytes[24], 8, "bit depth");
    (be(16), be(20))
}

/// The decoded image as RGB pixels, `[y][x]`, after checking the header.
fn decode_rgb(path: &Path) -> Array2<[u8; 3]> {
    let bytes = std::fs::read(path).unwrap();
    let (w, h) = png_header_size(&bytes);
    let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::EXPAND);
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0u8; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (w, h));
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let channels = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("unexpected colour type {other:?}"),
    };
    Array2::from_shape_fn((h as usize, w as usize), |(y, x)| {
        let i = y * info.line_size + x * channels;
        [buf[i], buf[i + 1], buf[i + 2]]
    })
}

fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

fn random_lattice(h: usize, w: usize, p: f64, rng: &mut StdRng) -> Array2<u8> {
    Array2::from_shape_fn((h, w), |_| u8::from(rng.random::<f64>() < p))
}

/// The oracle's cluster sizes of `lattice`, split into (kept, left out) by `exclude`.
fn oracle_sizes(
    lattice: ArrayView2<'_, u8>,
    c: Connectivity,
    b: Boundary,
    exclude: bool,
) -> (Vec<u64>, u64) {
    let values = lattice.mapv(u32::from);
    let rows = Oracle::new(values.view(), c, b, false).table();
    let mut kept = Vec::new();
    let mut out = 0;
    for r in rows {
        if exclude && (r.wraps_x || r.wraps_y || r.spans_x || r.spans_y) {
            out += 1;
        } else {
            kept.push(r.size);
        }
    }
    (kept, out)
}

/// Whether `e` is ⌈10^(k/b)⌉ for some k, in exact integers: (e − 1)^b < 10^k ≤ e^b.
fn is_edge(e: u64, b: u32) -> bool {
    if e == 1 {
        return true;
    }
    let lo = u128::from(e - 1).pow(b);
    let hi = u128::from(e).pow(b);
    let mut p = 1u128;
    while p <= hi {
        if lo < p {
            return true;
        }
        p *= 10;
    }
    false
}

// ---------------------------------------------------------------------------------------------
// n_s

/// `clusterlab::plot::SizeDistribution` is the crate's one n_s type, not a copy.
#[test]
fn plot_uses_the_crate_n_s_type() {
    let mut d: clusterlab::SizeDistribution = SizeDistribution::new();
    d.add_sizes([2, 2], 8);
    let same: &clusterlab::analysis::SizeDistribution = &d;
    assert_eq!(same.ns(), vec![(2, 0.25)]);
}

#[test]
fn size_distribution_matches_the_oracle() {
    // Shapes from 1x1 to widths around 32 and 64, every density, both connectivities, every
    // boundary; three lattices per case, with and without the wrapping/spanning clusters.
    let shapes = [
        (1, 1),
        (1, 9),
        (9, 1),
        (2, 2),
        (5, 7),
        (13, 31),
        (6, 32),
        (7, 33),
        (4, 63),
        (3, 64),
        (5, 65),
        (33, 17),
    ];
    let mut r = rng(7);
    let mut cases = 0;
    for &(h, w) in &shapes {
        for p in [0.0, 0.2, 0.45, 0.6, 0.8, 1.0] {
            for c in CONNS {
                for b in BOUNDARIES {
                    let lattices: Vec<Array2<u8>> =
                        (0..3).map(|_| random_lattice(h, w, p, &mut r)).collect();
                    for exclude in [false, true] {
                        let mut got = SizeDistribution::new();
                        let mut counts = BTreeMap::<u64, u64>::new();
                        let mut excluded = 0;
                        for lattice in &lattices {
                            let table = analyze(lattice.view(), c, b).unwrap();
                            got.add_table(&table, exclude);
                            let (kept, out) = oracle_sizes(lattice.view(), c, b, exclude);
                            for s in kept {
                                *counts.entry(s).or_default() += 1;
                            }
                            excluded += out;
                        }
                        let sites = (3 * h * w) as u64;
                        let want: Vec<(u64, f64)> = counts
                            .iter()
                            .map(|(&s, &n)| (s, n as f64 / sites as f64))
                            .collect();
                        let ctx = format!("{h}x{w} p={p} {c:?} {b:?} exclude={exclude}");
                        assert_eq!(got.ns(), want, "{ctx}");
                        assert_eq!(got.excluded(), excluded, "{ctx}");
                        assert_eq!(got.samples(), 3, "{ctx}");
                        assert_eq!(got.sites(), sites, "{ctx}");
                        assert_eq!(got.clusters(), counts.values().sum::<u64>(), "{ctx}");
                        let largest = counts.keys().next_back().copied().unwrap_or(0);
                        assert_eq!(got.largest(), largest, "{ctx}");
                        cases += 1;
                    }
                }
            }
        }
    }
    assert_eq!(cases, shapes.len() * 6 * 2 * 4 * 2);
}

#[test]
fn one_lattice_agrees_with_the_table_distribution() {
    for (seed, b) in BOUNDARIES.iter().enumerate() {
        let lattice = percolation(61, 67, 0.5927, 1, seed as u32);
        let table = analyze(lattice.view(), Connectivity::Four, *b).unwrap();
        for exclude in [false, true] {
            let mut d = SizeDistribution::new();
            d.add_table(&table, exclude);
            assert_eq!(d.ns(), table.size_distribution(exclude), "{b:?} {exclude}");
        }
        // Labels carry no wrapping flags: add_labels counts every cluster.
        let labels = label(lattice.view(), Connectivity::Four, *b).unwrap();
        let mut d = SizeDistribution::new();
        d.add_labels(&labels);
        assert_eq!(d.ns(), table.size_distribution(false), "{b:?} labels");
    }
}

#[test]
fn merge_equals_adding_in_one() {
    let mut r = rng(11);
    let tables: Vec<_> = (0..6)
        .map(|i| {
            let lattice = random_lattice(20 + i, 30 - i, 0.55, &mut r);
            analyze(lattice.view(), Connectivity::Eight, Boundary::Periodic).unwrap()
        })
        .collect();
    let mut all = SizeDistribution::new();
    let (mut a, mut b) = (SizeDistribution::new(), SizeDistribution::new());
    for (i, t) in tables.iter().enumerate() {
        all.add_table(t, true);
        if i % 2 == 0 { &mut a } else { &mut b }.add_table(t, true);
    }
    a.merge(&b);
    assert_eq!(a.ns(), all.ns());
    assert_eq!(
        (a.samples(), a.sites(), a.excluded()),
        (all.samples(), all.sites(), all.excluded())
    );
}

#[test]
fn log_bins_against_exact_integer_edges() {
    // Sizes of a few hundred percolation lattices plus a long tail, binned with 0..=5 bins per
    // decade; each bin checked against the counts directly.
    let mut d = SizeDistribution::new();
    let mut counts = BTreeMap::<u64, u64>::new();
    for seed in 0..40 {
        let lattice = percolation(64, 64, 0.5927, 1, seed);
        let table = analyze(lattice.view(), Connectivity::Four, Boundary::Periodic).unwrap();
        d.add_table(&table, false);
        for &s in &table.size {
            *counts.entry(s).or_default() += 1;
        }
    }
    let sites = 40.0 * 64.0 * 64.0;
    for b in 0..=5u32 {
        let bins = d.log_binned(b);
        assert!(!bins.is_empty());
        let mut prev_max = 0;
        for bin in &bins {
            assert!(
                bin.s_min > prev_max && bin.s_min <= bin.s_max,
                "b={b} {bin:?}"
            );
            prev_max = bin.s_max;
            let n: u64 = counts.range(bin.s_min..=bin.s_max).map(|(_, &n)| n).sum();
            assert!(n > 0, "empty bin {bin:?}");
            assert_eq!(bin.clusters, n, "b={b} {bin:?}");
            let width = (bin.s_max - bin.s_min + 1) as f64;
            assert_eq!(bin.ns, n as f64 / width / sites, "b={b} {bin:?}");
            assert!((bin.s - (bin.s_min as f64 * bin.s_max as f64).sqrt()).abs() < 1e-9);
            if b == 0 {
                assert_eq!(bin.s_min, bin.s_max);
            } else {
                assert!(is_edge(bin.s_min, b), "b={b}: {} is no edge", bin.s_min);
                assert!(
                    is_edge(bin.s_max + 1, b),
                    "b={b}: {} is no edge",
                    bin.s_max + 1
                );
                // No edge strictly inside the bin.
                for e in bin.s_min + 1..=bin.s_max {
                    assert!(!is_edge(e, b), "b={b}: edge {e} inside {bin:?}");
                }
            }
        }
        // Every counted size is in some bin.
        let binned: u64 = bins.iter().map(|b| b.clusters).sum();
        assert_eq!(binned, counts.values().sum::<u64>(), "b={b}");
    }
}

// ---------------------------------------------------------------------------------------------
// Label images

/// Every pixel of an image of `labels` drawn with `scale` and no downscaling.
fn assert_label_pixels(
    img: &Array2<[u8; 3]>,
    labels: ArrayView2<'_, u32>,
    scale: usize,
    bg: Background,
) {
    let (h, w) = labels.dim();
    assert_eq!(img.dim(), (h * scale, w * scale));
    for ((py, px), &rgb) in img.indexed_iter() {
        let l = labels[[py / scale, px / scale]];
        let want = if l == 0 {
            bg.rgb()
        } else {
            label_colour(l, bg)
        };
        assert_eq!(rgb, want, "pixel ({py}, {px}) of label {l}");
    }
}

#[test]
fn label_image_of_a_known_lattice() {
    let d = dirs();
    let lattice = array![
        [1u8, 1, 0, 0, 1],
        [0, 1, 0, 1, 1],
        [0, 0, 0, 0, 0],
        [1, 0, 1, 1, 0],
    ];
    let labels = label(lattice.view(), Connectivity::Four, Boundary::Open).unwrap();
    assert_eq!(labels.count(), 4);
    for (bg, bg_rgb) in [
        (Background::Black, [0u8; 3]),
        (Background::White, [255u8; 3]),
    ] {
        for scale in [1u32, 3] {
            let path = d.out.join(format!("{bg:?}-{scale}.png"));
            let mut options = LabelImageOptions::default();
            options.background = bg;
            options.scale = scale;
            let image = plot_labels(&path, labels.array().view(), &options).unwrap();
            assert_eq!(
                (image.width, image.height, image.block),
                (5 * scale, 4 * scale, 1)
            );
            let img = decode_rgb(&path);
            assert_label_pixels(&img, labels.array().view(), scale as usize, bg);
            let k = scale as usize;
            // Background, exactly; clusters not the background, and distinct from one another.
            assert_eq!(img[[2 * k, 0]], bg_rgb);
            let colours: Vec<[u8; 3]> = [(0, 0), (0, 4), (3, 0), (3, 2)]
                .iter()
                .map(|&(y, x)| img[[y * k, x * k]])
                .collect();
            for (i, a) in colours.iter().enumerate() {
                assert_ne!(*a, bg_rgb, "cluster {} drawn as background", i + 1);
                for b in &colours[i + 1..] {
                    assert_ne!(a, b, "two clusters share a colour");
                }
            }
            // The same cluster, the same colour everywhere.
            assert_eq!(img[[0, k]], img[[k, k]]);
            assert_eq!(img[[k, 3 * k]], img[[0, 4 * k]]);
        }
    }
    assert_eq!(entries(&d.out).len(), 4);
}

#[test]
fn label_colours_are_stable_and_never_a_background() {
    for l in 1..=5000u32 {
        let c = label_colour(l, Background::Black);
        assert_eq!(c, label_colour(l, Background::White));
        assert_eq!(c, label_colour(l, Background::Black));
        assert_ne!(c, [0, 0, 0], "label {l}");
        assert_ne!(c, [255, 255, 255], "label {l}");
    }
    assert_eq!(label_colour(0, Background::Black), [0, 0, 0]);
    assert_eq!(label_colour(0, Background::White), [255, 255, 255]);
    // Neighbouring labels spread over the palette: 1000 consecutive labels use most of it.
    let distinct: std::collections::HashSet<[u8; 3]> = (1..=1000)
        .map(|l| label_colour(l, Background::Black))
        .collect();
    assert!(distinct.len() > 200, "{} colours", distinct.len());
}

/// The label a block is drawn as, computed directly: the most common nonzero label (smallest on
/// ties) when at least half the block is occupied.
fn block_oracle(labels: ArrayView2<'_, u32>, y0: usize, x0: usize, f: usize) -> u32 {
    let (h, w) = labels.dim();
    let mut counts = HashMap::<u32, usize>::new();
    let mut total = 0;
    for y in y0..(y0 + f).min(h) {
        for x in x0..(x0 + f).min(w) {
            total += 1;
            *counts.entry(labels[[y, x]]).or_default() += 1;
        }
    }
    let empty = counts.remove(&0).unwrap_or(0);
    if 2 * (total - empty) < total {
        return 0;
    }
    let best = counts.values().copied().max().unwrap_or(0);
    counts
        .iter()
        .filter(|&(_, &n)| n == best)
        .map(|(&l, _)| l)
        .min()
        .unwrap_or(0)
}

#[test]
fn downscaled_label_images_use_the_block_majority() {
    let d = dirs();
    let mut r = rng(3);
    for (h, w, max_side, scale) in [
        (100, 70, 30, 1),
        (70, 100, 30, 2),
        (33, 65, 32, 1),
        (64, 64, 16, 3),
        (1, 200, 7, 1),
        (200, 1, 64, 1),
    ] {
        for p in [0.3, 0.5927, 0.8] {
            let lattice = random_lattice(h, w, p, &mut r);
            let values = lattice.mapv(u32::from);
            let (labels, _) = Oracle::new(
                values.view(),
                Connectivity::Eight,
                Boundary::Periodic,
                false,
            )
            .labels();
            let path = d.out.join("down.png");
            let mut options = LabelImageOptions::default();
            options.max_side = Some(max_side);
            options.scale = scale;
            let image = plot_labels(&path, labels.view(), &options).unwrap();
            let f = h.max(w).div_ceil(max_side as usize);
            assert_eq!(image.block, f);
            let (bh, bw) = (h.div_ceil(f), w.div_ceil(f));
            assert!(bh.max(bw) <= max_side as usize);
            let k = scale as usize;
            let img = decode_rgb(&path);
            assert_eq!(img.dim(), (bh * k, bw * k), "{h}x{w} max {max_side}");
            for ((py, px), &rgb) in img.indexed_iter() {
                let l = block_oracle(labels.view(), py / k * f, px / k * f, f);
                let want = label_colour(l, Background::Black);
                assert_eq!(rgb, want, "{h}x{w} p={p} pixel ({py},{px})");
            }
        }
    }
    assert_eq!(entries(&d.out), ["down.png"]);
}

#[test]
fn label_image_errors_leave_nothing() {
    let d = dirs();
    let path = d.out.join("l.png");
    let ones = Array2::<u32>::ones((3, 4));
    let options = LabelImageOptions::default();

    let empty = Array2::<u32>::zeros((0, 5));
    let e = plot_labels(&path, empty.view(), &options).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");

    let mut o = options;
    o.scale = 0;
    assert!(matches!(
        plot_labels(&path, ones.view(), &o),
        Err(Error::InvalidArgument(_))
    ));
    let mut o = options;
    o.max_side = Some(0);
    assert!(matches!(
        plot_labels(&path, ones.view(), &o),
        Err(Error::InvalidArgument(_))
    ));
    let mut o = options;
    o.scale = MAX_IMAGE_SIDE / 3;
    assert!(matches!(
        plot_labels(&path, ones.view(), &o),
        Err(Error::InvalidArgument(_))
    ));
    // A folder that does not exist.
    let e = plot_labels(&d.out.join("nope/l.png"), ones.view(), &options).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
    assert_eq!(entries(&d.out), Vec::<String>::new());

    // The rename fails (a folder is in the way): the temporary is removed.
    std::fs::create_dir(d.out.join("taken.png")).unwrap();
    let e = plot_labels(&d.out.join("taken.png"), ones.view(), &options).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
    assert_eq!(entries(&d.out), ["taken.png"]);

    // An existing image survives a failed rewrite.
    plot_labels(&path, ones.view(), &options).unwrap();
    let before = std::fs::read(&path).unwrap();
    let mut o = options;
    o.scale = 0;
    assert!(plot_labels(&path, ones.view(), &o).is_err());
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert_eq!(entries(&d.out), ["l.png", "taken.png"]);
}

// ---------------------------------------------------------------------------------------------
// n_s charts

const MARKER: [u8; 3] = [31, 90, 180];
const GUIDE: [u8; 3] = [200, 40, 40];

fn count_colour(img: &Array2<[u8; 3]>, c: [u8; 3]) -> usize {
    img.iter().filter(|&&p| p == c).count()
}

fn pc_distribution(samples: u32, l: usize) -> SizeDistribution {
    let mut d = SizeDistribution::new();
    for seed in 0..samples {
        let lattice = percolation(l, l, 0.5927, 1, seed);
        let table = analyze(lattice.view(), Connectivity::Four, Boundary::Periodic).unwrap();
        d.add_table(&table, true);
    }
    d
}

#[test]
fn size_chart_is_a_png_of_the_requested_size() {
    let d = dirs();
    let ns = pc_distribution(8, 96);
    for (w, h) in [(800, 600), (320, 240), (1200, 500)] {
        for guide in [Some(TAU_2D), None] {
            let path = d.out.join(format!("ns-{w}x{h}-{}.png", guide.is_some()));
            let mut options = SizePlotOptions::default();
            options.width = w;
            options.height = h;
            options.guide = guide;
            plot_size_distribution(&path, &ns, &options).unwrap();
            let img = decode_rgb(&path);
            assert_eq!(img.dim(), (h as usize, w as usize));
            // Mostly white paper, the points in their colour, the guide only when asked for.
            let white = count_colour(&img, [255, 255, 255]);
            assert!(white * 2 > img.len(), "{w}x{h}: only {white} white pixels");
            assert!(count_colour(&img, MARKER) > 50, "{w}x{h}: no points drawn");
            let red = count_colour(&img, GUIDE);
            if guide.is_some() {
                assert!(red > 20, "{w}x{h}: no guide line ({red} pixels)");
            } else {
                assert_eq!(red, 0, "{w}x{h}: a guide line without asking");
            }
            // Text is drawn (dark anti-aliased pixels left of the plot, where the y labels are).
            let dark = img
                .slice(ndarray::s![.., ..(w as usize / 8)])
                .iter()
                .filter(|p| p.iter().all(|&v| v < 100))
                .count();
            assert!(dark > 30, "{w}x{h}: no tick labels ({dark} dark pixels)");
        }
    }
    // Every size on its own (no binning) and an empty distribution both draw.
    let mut options = SizePlotOptions::default();
    options.bins_per_decade = 0;
    plot_size_distribution(&d.out.join("raw.png"), &ns, &options).unwrap();
    assert!(count_colour(&decode_rgb(&d.out.join("raw.png")), MARKER) > 50);
    plot_size_distribution(
        &d.out.join("empty.png"),
        &SizeDistribution::new(),
        &SizePlotOptions::default(),
    )
    .unwrap();
    let empty = decode_rgb(&d.out.join("empty.png"));
    assert_eq!(empty.dim(), (600, 800));
    assert_eq!(count_colour(&empty, MARKER), 0);
}

#[test]
fn size_chart_errors_leave_nothing() {
    let d = dirs();
    let ns = pc_distribution(1, 32);
    let path = d.out.join("ns.png");
    for (w, h) in [(0, 600), (800, 0), (MAX_IMAGE_SIDE + 1, 100)] {
        let mut o = SizePlotOptions::default();
        o.width = w;
        o.height = h;
        let e = plot_size_distribution(&path, &ns, &o).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    }
    for tau in [0.0, -2.0, f64::NAN, f64::INFINITY] {
        let mut o = SizePlotOptions::default();
        o.guide = Some(tau);
        let e = plot_size_distribution(&path, &ns, &o).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    }
    let e = plot_size_distribution(&d.out.join("no/ns.png"), &ns, &SizePlotOptions::default())
        .unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
    assert_eq!(entries(&d.out), Vec::<String>::new());
    std::fs::create_dir(&path).unwrap();
    let e = plot_size_distribution(&path, &ns, &SizePlotOptions::default()).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
    assert_eq!(entries(&d.out), ["ns.png"]);
    assert!(path.is_dir());
}

// ---------------------------------------------------------------------------------------------
// The command

/// The number in `text` right after `key` (e.g. "n_s of " → clusters).
fn number_after(text: &str, key: &str) -> u64 {
    let rest = &text[text
        .find(key)
        .unwrap_or_else(|| panic!("{key:?} not in {text:?}"))
        + key.len()..];
    rest.split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn cli_sizes_of_generated_samples() {
    let d = dirs();
    let out = d.out.join("ns.png");
    let o = run(&[
        "plot",
        "--size",
        "48x40",
        "--p",
        "0.5927",
        "--samples",
        "5",
        "--seed",
        "9",
        "--boundary",
        "periodic",
        "--exclude-percolating",
        "--chart",
        "640x480",
        "--output",
        s(&out),
    ]);
    assert_ok(&o);
    let text = stdout(&o);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.starts_with(s(&out)), "{text}");
    // The same samples through the oracle.
    let (mut kept, mut excluded) = (0u64, 0u64);
    let mut largest = 0;
    for i in 0..5 {
        let lattice = percolation(48, 40, 0.5927, 1, 9 + i);
        let (k, x) = oracle_sizes(lattice.view(), Connectivity::Four, Boundary::Periodic, true);
        kept += k.len() as u64;
        largest = largest.max(k.iter().copied().max().unwrap_or(0));
        excluded += x;
    }
    assert_eq!(number_after(&text, "n_s of "), kept, "{text}");
    assert_eq!(number_after(&text, "clusters ("), excluded, "{text}");
    assert_eq!(number_after(&text, "s up to "), largest, "{text}");
    assert!(text.contains("4-connectivity, periodic boundary"), "{text}");
    assert_eq!(png_header_size(&std::fs::read(&out).unwrap()), (640, 480));
    assert_eq!(decode_rgb(&out).dim(), (480, 640));
    assert_eq!(entries(&d.out), ["ns.png"]);
}

#[test]
fn cli_sizes_averaged_over_files() {
    let d = dirs();
    let a = percolation(30, 20, 0.6, 1, 1);
    let b = percolation(25, 25, 0.45, 1, 2);
    let c = percolation(17, 33, 0.4, 1, 3).mapv(u16::from);
    write_npy(d.input.join("a.npy"), &a).unwrap();
    write_npy(d.input.join("b.npy"), &b).unwrap();
    {
        let file = hdf5::File::create(d.input.join("c.h5")).unwrap();
        file.new_dataset_builder()
            .with_data(&c)
            .create("lattice")
            .unwrap();
    }
    let out = d.out.join("files.png");
    let o = run(&[
        "plot",
        s(&d.input.join("a.npy")),
        s(&d.input.join("b.npy")),
        s(&d.input.join("c.h5")),
        "-c",
        "8",
        "-o",
        s(&out),
    ]);
    assert_ok(&o);
    let text = stdout(&o);
    let mut want = 0;
    for l in [a.view(), b.view(), c.mapv(|v| v as u8).view()] {
        want += oracle_sizes(l, Connectivity::Eight, Boundary::Open, false)
            .0
            .len() as u64;
    }
    assert_eq!(number_after(&text, "n_s of "), want, "{text}");
    assert!(text.contains("3 lattice files"), "{text}");
    assert!(text.contains("8-connectivity, open boundary"), "{text}");
    assert_eq!(png_header_size(&std::fs::read(&out).unwrap()), (800, 600));
}

#[test]
fn cli_label_image_pixels() {
    let d = dirs();
    let lattice = array![
        [1u8, 0, 0, 1, 1, 0, 1],
        [1, 0, 1, 0, 0, 0, 1],
        [0, 0, 1, 1, 0, 1, 0],
    ];
    let input = d.input.join("tiny.npy");
    write_npy(&input, &lattice).unwrap();
    let out = d.out.join("tiny.png");
    for (boundary, conn) in [("open", "4"), ("periodic", "4"), ("periodic-x", "8")] {
        let o = run(&[
            "plot",
            s(&input),
            "--kind",
            "labels",
            "-b",
            boundary,
            "-c",
            conn,
            "--scale",
            "4",
            "--background",
            "white",
            "-o",
            s(&out),
        ]);
        assert_ok(&o);
        let c = if conn == "8" {
            Connectivity::Eight
        } else {
            Connectivity::Four
        };
        let b = match boundary {
            "open" => Boundary::Open,
            "periodic" => Boundary::Periodic,
            _ => Boundary::PeriodicX,
        };
        let values = lattice.mapv(u32::from);
        let (labels, count) = Oracle::new(values.view(), c, b, false).labels();
        let text = stdout(&o);
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains(&format!(": {count} clusters of ")), "{text}");
        assert!(
            text.contains("image 28x12 (WxH), 4x4 pixels per site"),
            "{text}"
        );
        let img = decode_rgb(&out);
        assert_label_pixels(&img, labels.view(), 4, Background::White);
    }
    // Open: (0,0) and (0,3) are different clusters; on the torus (0,6) joins (0,0) across x.
    let open = label(lattice.view(), Connectivity::Four, Boundary::Open).unwrap();
    assert_ne!(open.array()[[0, 0]], open.array()[[0, 6]]);
    let torus = label(lattice.view(), Connectivity::Four, Boundary::Periodic).unwrap();
    assert_eq!(torus.array()[[0, 0]], torus.array()[[0, 6]]);
    assert_eq!(entries(&d.out), ["tiny.png"]);
}

#[test]
fn cli_labels_of_a_large_lattice_are_downscaled() {
    let d = dirs();
    let out = d.out.join("big.png");
    let o = run(&[
        "plot",
        "--kind",
        "labels",
        "--size",
        "300x200",
        "--p",
        "0.6",
        "--seed",
        "4",
        "--max-side",
        "100",
        "-o",
        s(&out),
    ]);
    assert_ok(&o);
    let text = stdout(&o);
    assert!(
        text.contains("image 67x100 (WxH), 3x3 sites per pixel"),
        "{text}"
    );
    let lattice = percolation(300, 200, 0.6, 1, 4);
    let labels = label(lattice.view(), Connectivity::Four, Boundary::Open).unwrap();
    assert!(
        text.contains(&format!(": {} clusters of ", labels.count())),
        "{text}"
    );
    let img = decode_rgb(&out);
    assert_eq!(img.dim(), (100, 67));
    for ((py, px), &rgb) in img.indexed_iter() {
        let l = block_oracle(labels.array().view(), py * 3, px * 3, 3);
        assert_eq!(rgb, label_colour(l, Background::Black), "pixel ({py},{px})");
    }
}

#[test]
fn cli_default_output_names() {
    let d = dirs();
    let o = run_in(Some(&d.out), &["plot", "--size", "16", "--p", "0.5", "-q"]);
    assert_ok(&o);
    assert!(o.stdout.is_empty(), "--quiet printed {}", stdout(&o));
    let o = run_in(
        Some(&d.out),
        &["plot", "--size", "16", "--p", "0.5", "--kind", "labels"],
    );
    assert_ok(&o);
    assert!(stdout(&o).starts_with("labels.png: "), "{}", stdout(&o));
    assert_eq!(entries(&d.out), ["labels.png", "sizes.png"]);
    assert_eq!(
        png_header_size(&std::fs::read(d.out.join("labels.png")).unwrap()),
        (16, 16)
    );
    assert_eq!(
        png_header_size(&std::fs::read(d.out.join("sizes.png")).unwrap()),
        (800, 600)
    );
}

#[test]
fn cli_bad_arguments_are_one_line_errors() {
    let d = dirs();
    let input = d.input.join("l.npy");
    write_npy(&input, &Array2::<u8>::ones((4, 4))).unwrap();
    let floats = d.input.join("f.npy");
    write_npy(&floats, &Array2::<f64>::ones((4, 4))).unwrap();
    let out = d.out.join("x.png");
    let o_s = s(&out);
    let in_s = s(&input);
    let missing = d.input.join("missing.npy");
    let no_folder = d.out.join("no/x.png");
    let jpg = d.out.join("x.jpg");
    let bare = d.out.join("x");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["plot"], "required"),
        (vec!["plot", "--size", "16", "-o", o_s], "--p"),
        (vec!["plot", "--p", "0.5", "-o", o_s], "--size"),
        (
            vec!["plot", in_s, "--size", "16", "--p", "0.5", "-o", o_s],
            "cannot be used",
        ),
        (
            vec!["plot", "--size", "0", "--p", "0.5", "-o", o_s],
            "positive",
        ),
        (
            vec!["plot", "--size", "16", "--p", "1.5", "-o", o_s],
            "probability",
        ),
        (
            vec![
                "plot",
                "--size",
                "16",
                "--p",
                "0.5",
                "--samples",
                "0",
                "-o",
                o_s,
            ],
            "sample",
        ),
        (
            vec!["plot", in_s, "--kind", "histogram", "-o", o_s],
            "histogram",
        ),
        (vec!["plot", in_s, "--chart", "10x10", "-o", o_s], "WxH"),
        (vec!["plot", in_s, "--chart", "800", "-o", o_s], "WxH"),
        (
            vec!["plot", in_s, "--scale", "0", "--kind", "labels", "-o", o_s],
            "whole number",
        ),
        (vec!["plot", in_s, "--tau=-1", "-o", o_s], "tau"),
        (
            vec!["plot", in_s, "--tau", "2", "--no-guide", "-o", o_s],
            "cannot be used",
        ),
        (vec!["plot", in_s, "-o", s(&jpg)], "extension"),
        (vec!["plot", in_s, "-o", s(&bare)], "extension"),
        (vec!["plot", in_s, "-o", s(&no_folder)], "folder"),
        (vec!["plot", s(&missing), "-o", o_s], "missing.npy"),
        (vec!["plot", s(&floats), "-o", o_s], "f.npy"),
        (
            vec!["plot", in_s, in_s, "--kind", "labels", "-o", o_s],
            "one input",
        ),
        (
            vec![
                "plot",
                "--size",
                "8",
                "--p",
                "0.5",
                "--samples",
                "3",
                "--kind",
                "labels",
                "-o",
                o_s,
            ],
            "--samples",
        ),
        (
            vec![
                "plot",
                "--size",
                "8",
                "--p",
                "0.5",
                "--dataset",
                "/x",
                "-o",
                o_s,
            ],
            "cannot be used",
        ),
        (
            vec![
                "plot", "--kind", "labels", "--size", "4", "--p", "0.5", "--scale", "5000", "-o",
                o_s,
            ],
            "larger than",
        ),
    ];
    for (args, needle) in &cases {
        let o = run(args);
        assert_clean_failure(&o, needle, &d.out, &[]);
        assert_ne!(o.status.code(), Some(0), "{args:?}");
    }
    // A folder where the image would go: the rename fails and the temporary is removed.
    std::fs::create_dir(&out).unwrap();
    for kind in ["sizes", "labels"] {
        let o = run(&["plot", in_s, "--kind", kind, "-o", o_s]);
        assert_clean_failure(&o, "x.png", &d.out, &["x.png"]);
    }
    // An existing image is kept when a run fails.
    std::fs::remove_dir(&out).unwrap();
    assert_ok(&run(&["plot", in_s, "-o", o_s, "-q"]));
    let before = std::fs::read(&out).unwrap();
    let o = run(&["plot", s(&floats), "-o", o_s]);
    assert_clean_failure(&o, "f.npy", &d.out, &["x.png"]);
    assert_eq!(std::fs::read(&out).unwrap(), before);
    let _ = &d.root;
}
