//! `clusterlab mc`: a small run end to end, `report --json` keys (the contract scripts rely
//! on) and `plot`'s figures.
#![cfg(all(feature = "cli", feature = "hdf5"))]

use std::path::Path;
use std::process::{Command, Output};

fn clusterlab(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_clusterlab"))
        .current_dir(dir)
        .arg("mc")
        .args(args)
        .output()
        .unwrap()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn run_report_json_and_plot() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(&clusterlab(
        d,
        &[
            "run",
            "--model",
            "ising",
            "--size",
            "8",
            "--temperature",
            "2.2,2.4",
            "--sweeps",
            "300",
            "--thermalize",
            "20",
            "--algorithm",
            "sw",
            "--seed",
            "3",
            "--output",
            "run.h5",
            "--quiet",
        ],
    ));
    let json: serde_json::Value =
        serde_json::from_str(&ok(&clusterlab(d, &["report", "run.h5", "--json"]))).unwrap();
    let chains = json["chains"].as_array().unwrap();
    assert_eq!(chains.len(), 2);
    for (c, t) in chains.iter().zip([2.2, 2.4]) {
        assert_eq!(c["temperature"].as_f64(), Some(t));
        assert_eq!(c["sweeps"].as_u64(), Some(300));
        for key in [
            "energy",
            "abs_magnetization",
            "specific_heat",
            "susceptibility",
            "binder",
        ] {
            assert!(c[key]["mean"].as_f64().is_some(), "{key}: {c}");
            assert!(c[key]["stderr"].as_f64().is_some(), "{key}: {c}");
            assert!(c[key].get("tau_int").is_some(), "{key}: {c}");
        }
        // Energy per site of the Ising model lies in [-2, 0] near T_c.
        let e = c["energy"]["mean"].as_f64().unwrap();
        assert!((-2.0..0.0).contains(&e), "{e}");
    }
    #[cfg(feature = "plot")]
    {
        ok(&clusterlab(d, &["plot", "run.h5", "--output-dir", "figs"]));
        for name in [
            "energy_series",
            "energy_hist",
            "abs_m_series",
            "abs_m_hist",
            "binder",
            "susceptibility",
            "specific_heat",
            "energy_vs_t",
        ] {
            let bytes = std::fs::read(d.join("figs").join(format!("{name}.png"))).unwrap();
            assert_eq!(&bytes[1..4], b"PNG", "{name}");
        }
        // A file that is not a run: one-line error, non-zero exit.
        std::fs::write(d.join("junk.h5"), b"junk").unwrap();
        let out = clusterlab(d, &["plot", "junk.h5", "--output-dir", "figs"]);
        assert!(!out.status.success());
    }
}
