//! The colours of the clusters in a label image.

use super::Background;
use std::sync::OnceLock;

/// Colours of the clusters: 255 entries, hues spread by the golden angle, saturation and value
/// varied in small cycles so that neighbouring entries differ in more than hue. Every entry has
/// a value ≥ 0.62 and a saturation ≥ 0.5, so none is near black or white (the backgrounds).
pub(super) fn palette() -> &'static [[u8; 3]; 255] {
    static PALETTE: OnceLock<[[u8; 3]; 255]> = OnceLock::new();
    PALETTE.get_or_init(|| {
        let mut p = [[0u8; 3]; 255];
        for (i, c) in p.iter_mut().enumerate() {
            let i = i as u32;
            let hue = (f64::from(i) * 0.381_966_011_250_105).fract() * 6.0;
            let s = [0.95, 0.7, 0.5][(i % 3) as usize];
            let v = [0.98, 0.8, 0.62, 0.9][(i % 4) as usize];
            // HSV to RGB with plain arithmetic (identical on every platform).
            let sector = hue.floor();
            let f = hue - sector;
            let (pv, qv, tv) = (v * (1.0 - s), v * (1.0 - s * f), v * (1.0 - s * (1.0 - f)));
            let (r, g, b) = match sector as u32 {
                0 => (v, tv, pv),
                1 => (qv, v, pv),
                2 => (pv, v, tv),
                3 => (pv, qv, v),
                4 => (tv, pv, v),
                _ => (v, pv, qv),
            };
            let byte = |x: f64| (x * 255.0).round().clamp(0.0, 255.0) as u8;
            *c = [byte(r), byte(g), byte(b)];
        }
        p
    })
}

/// The palette entry (0..255) of cluster `label` ≥ 1: a 64-bit mix of the label (SplitMix64's
/// finalizer), so that clusters with neighbouring labels get unrelated colours, and the same
/// label the same colour in every image and on every platform.
pub(super) fn palette_index(label: u32) -> usize {
    let mut z = u64::from(label).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z % 255) as usize
}

/// The colour [`plot_labels`](super::plot_labels) gives cluster `label` (RGB); label 0, the empty
/// sites, gets `background`'s colour. Cluster colours come from a fixed palette of 255 colours,
/// none of them near black or white, chosen by a hash of the label: stable across images and
/// platforms, unrelated for neighbouring labels. Two clusters can share a colour (1 chance in 255
/// for two given clusters).
pub fn label_colour(label: u32, background: Background) -> [u8; 3] {
    if label == 0 {
        background.rgb()
    } else {
        palette()[palette_index(label)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn palette_avoids_the_backgrounds() {
        for c in palette() {
            let max = *c.iter().max().unwrap();
            let min = *c.iter().min().unwrap();
            assert!(max >= 150, "{c:?} is near black");
            assert!(min <= max / 2 + 1, "{c:?} is near white or grey");
        }
    }
}
