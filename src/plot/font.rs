//! The chart font, compiled into the crate so that nothing is needed from the system.

use crate::{Error, Result};
use plotters::style::FontStyle;
use std::sync::OnceLock;

/// The chart font: DejaVu Sans, cut down to the characters the charts need (`assets/fonts/`).
const FONT_BYTES: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans-subset.ttf");
/// Our own family name, so that a program registering its own "sans-serif" with plotters is not
/// overridden (and does not override ours).
pub(super) const FONT_FAMILY: &str = "clusterlab-sans";

/// Registers the embedded font with plotters once per process.
pub(super) fn register_font() -> Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FONT_FAMILY, FontStyle::Normal, FONT_BYTES).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(Error::Plot(
            "the embedded chart font could not be loaded".into(),
        ))
    }
}
