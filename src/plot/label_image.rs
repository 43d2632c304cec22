//! Label images: [`plot_labels`].

use super::encode::{encode_png, write_bytes};
use super::palette::{palette, palette_index};
use super::MAX_IMAGE_SIDE;
use crate::io::write_atomically;
use crate::{Error, Result};
use ndarray::ArrayView2;
use rayon::prelude::*;
use std::path::Path;

/// The colour of empty sites in a label image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Background {
    /// Black, `#000000` (the default).
    #[default]
    Black,
    /// White, `#ffffff`.
    White,
}

impl Background {
    /// The colour as RGB.
    pub fn rgb(self) -> [u8; 3] {
        match self {
            Background::Black => [0, 0, 0],
            Background::White => [255, 255, 255],
        }
    }
}

/// How [`plot_labels`] draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LabelImageOptions {
    /// The colour of empty sites (label 0).
    pub background: Background,
    /// Downscale lattices larger than this (default `Some(2048)`): sites are grouped in `f × f`
    /// blocks, `f` the smallest whole factor that brings both sides to at most `max_side`, and
    /// each block becomes one pixel (see [`plot_labels`]). `None`: one pixel per site.
    pub max_side: Option<u32>,
    /// Pixels per site (or per block) along each axis, to enlarge small lattices (default 1).
    pub scale: u32,
}

impl Default for LabelImageOptions {
    fn default() -> Self {
        LabelImageOptions {
            background: Background::Black,
            max_side: Some(2048),
            scale: 1,
        }
    }
}

/// What [`plot_labels`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct LabelImage {
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
    /// Sites per block side: 1 unless the lattice was downscaled.
    pub block: usize,
    /// Pixels per block side.
    pub scale: u32,
}

/// The value a block of labels is drawn as: its most common cluster (the smaller label on a tie)
/// when at least half of its sites are occupied, else 0.
fn block_label(values: &mut Vec<u32>) -> u32 {
    let total = values.len();
    values.retain(|&l| l != 0);
    if values.len() * 2 < total || values.is_empty() {
        return 0;
    }
    values.sort_unstable();
    let (mut best, mut best_n) = (0u32, 0usize);
    let mut i = 0;
    while i < values.len() {
        let mut j = i;
        while j < values.len() && values[j] == values[i] {
            j += 1;
        }
        if j - i > best_n {
            (best, best_n) = (values[i], j - i);
        }
        i = j;
    }
    best
}

/// Draws a label image — 0 = empty, any other value a cluster — and writes it as a PNG to
/// `path`, atomically. Row `y` of `labels` is pixel row `y` (top to bottom), column `x` pixel
/// column `x`.
///
/// Each cluster gets [`label_colour`](super::label_colour), empty sites `options.background`.
/// The PNG is indexed (palette entry 0 the background, entries 1–255 the cluster colours), 8 bits
/// per pixel.
///
/// A lattice with a side above `options.max_side` is downscaled: sites are grouped in `f × f`
/// blocks (`f` the smallest factor that brings both sides within `max_side`; the last row and
/// column of blocks may be cut short) and a block is drawn in the colour of its most common
/// cluster (the smaller label on a tie) when at least half of its sites are occupied, else as
/// background. Then each block (or site) becomes `options.scale × options.scale` pixels.
///
/// # Errors
/// [`Error::InvalidArgument`] when the lattice has no sites, `max_side` or `scale` is 0, or the
/// image would be wider or taller than [`MAX_IMAGE_SIDE`] (lower `scale` or set `max_side`);
/// [`Error::Plot`] if the PNG encoder fails; [`Error::Io`] when the file cannot be written.
/// Nothing is left at `path` (or in its folder) on error; a file already there is kept.
pub fn plot_labels(
    path: &Path,
    labels: ArrayView2<'_, u32>,
    options: &LabelImageOptions,
) -> Result<LabelImage> {
    let (h, w) = labels.dim();
    if h == 0 || w == 0 {
        return Err(Error::InvalidArgument(format!(
            "a {h}x{w} lattice has no sites to draw"
        )));
    }
    if options.scale == 0 {
        return Err(Error::InvalidArgument(
            "label image scale must be at least 1 pixel per site".into(),
        ));
    }
    let block = match options.max_side {
        Some(0) => {
            return Err(Error::InvalidArgument(
                "label image max_side must be at least 1 pixel".into(),
            ))
        }
        Some(m) => h.max(w).div_ceil(m as usize),
        None => 1,
    };
    let (bh, bw) = (h.div_ceil(block), w.div_ceil(block));
    let scale = options.scale as usize;
    let too_big = |n: usize| {
        n.checked_mul(scale)
            .is_none_or(|p| p > MAX_IMAGE_SIDE as usize)
    };
    if too_big(bh) || too_big(bw) {
        return Err(Error::InvalidArgument(format!(
            "a label image of {}x{} pixels ({h}x{w} sites, {block}x{block} sites per block, \
             scale {scale}) is larger than {MAX_IMAGE_SIDE} pixels a side: lower the scale or \
             the maximum side",
            bh.saturating_mul(scale),
            bw.saturating_mul(scale)
        )));
    }
    let (ph, pw) = (bh * scale, bw * scale);
    let mut pixels = vec![0u8; ph * pw];
    // One band of `scale` pixel rows per row of blocks, in parallel.
    pixels
        .par_chunks_mut(pw * scale)
        .enumerate()
        .for_each_init(Vec::new, |values, (by, band)| {
            let (row, rest) = band.split_at_mut(pw);
            for bx in 0..bw {
                let label = if block == 1 {
                    labels[[by, bx]]
                } else {
                    values.clear();
                    let ys = by * block..((by + 1) * block).min(h);
                    let xs = bx * block..((bx + 1) * block).min(w);
                    for y in ys {
                        values.extend(xs.clone().map(|x| labels[[y, x]]));
                    }
                    block_label(values)
                };
                let index = if label == 0 {
                    0
                } else {
                    palette_index(label) as u8 + 1
                };
                row[bx * scale..(bx + 1) * scale].fill(index);
            }
            for copy in rest.chunks_mut(pw) {
                copy.copy_from_slice(row);
            }
        });
    let mut plte = Vec::with_capacity(256 * 3);
    plte.extend_from_slice(&options.background.rgb());
    for c in palette() {
        plte.extend_from_slice(c);
    }
    let png = encode_png(
        pw as u32,
        ph as u32,
        png::ColorType::Indexed,
        &pixels,
        Some(plte),
    )?;
    write_atomically(path, |tmp| write_bytes(tmp, &png))?;
    Ok(LabelImage {
        width: pw as u32,
        height: ph as u32,
        block,
        scale: options.scale,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_label_is_majority_of_the_occupied() {
        assert_eq!(block_label(&mut vec![0, 0, 0, 5]), 0);
        assert_eq!(block_label(&mut vec![0, 0, 5, 5]), 5);
        assert_eq!(block_label(&mut vec![0, 7, 5, 7]), 7);
        assert_eq!(block_label(&mut vec![9, 7, 9, 7]), 7);
        assert_eq!(block_label(&mut vec![3]), 3);
        assert_eq!(block_label(&mut vec![0]), 0);
    }
}
