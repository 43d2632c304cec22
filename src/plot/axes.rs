//! Log axes: tick positions and their labels.

/// `10ᵏ` with superscript digits.
pub(super) fn power_of_ten(k: i32) -> String {
    const SUP: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    let mut s = String::from("10");
    if k < 0 {
        s.push('⁻');
    }
    for d in k.unsigned_abs().to_string().bytes() {
        s.push(SUP[usize::from(d - b'0')]);
    }
    s
}

/// Tick values for a log axis over `[lo, hi]`: the powers of ten inside (every second, third …
/// decade when there are many), and the multiples 2…9 of each decade for the light grid.
pub(super) fn log_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let k0 = lo.log10().ceil() as i32;
    let k1 = hi.log10().floor() as i32;
    let decades = (k1 - k0 + 1).max(1);
    let step = (decades + 7) / 8;
    let bold: Vec<f64> = (k0..=k1)
        .filter(|k| (k - k0) % step == 0)
        .map(|k| 10f64.powi(k))
        .collect();
    let mut light = Vec::new();
    if step == 1 {
        for k in (k0 - 1)..=k1 {
            for m in 2..=9 {
                let v = f64::from(m) * 10f64.powi(k);
                if v >= lo && v <= hi {
                    light.push(v);
                }
            }
        }
    }
    (bold, light)
}

/// The label of a tick at a power of ten.
pub(super) fn tick_label(v: &f64) -> String {
    power_of_ten(v.log10().round() as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn superscript_powers() {
        assert_eq!(power_of_ten(0), "10⁰");
        assert_eq!(power_of_ten(3), "10³");
        assert_eq!(power_of_ten(-12), "10⁻¹²");
    }
}
