//! PNG encoding and writing.

use crate::{Error, Result};
use std::path::Path;

/// The PNG file of an 8-bit image, in memory (so that every write error surfaces when the file
/// is written, rather than in a buffered writer's drop).
pub(super) fn encode_png(
    width: u32,
    height: u32,
    color: png::ColorType,
    data: &[u8],
    palette: Option<Vec<u8>>,
) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut out, width, height);
        encoder.set_color(color);
        encoder.set_depth(png::BitDepth::Eight);
        if let Some(p) = palette {
            encoder.set_palette(p);
        }
        let mut writer = encoder.write_header().map_err(png_error)?;
        writer.write_image_data(data).map_err(png_error)?;
        writer.finish().map_err(png_error)?;
    }
    Ok(out)
}

fn png_error(e: png::EncodingError) -> Error {
    Error::Plot(format!("PNG encoder: {e}"))
}

pub(super) fn write_bytes(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })
}
