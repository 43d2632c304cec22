//! `clusterlab percolation`: a small study end to end, `report --json` keys, and bad arguments
//! refused with one line and every existing file left as it was.
#![cfg(all(feature = "cli", feature = "hdf5"))]

use std::path::Path;
use std::process::{Command, Output};

fn clusterlab(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_clusterlab"))
        .current_dir(dir)
        .arg("percolation")
        .args(args)
        .output()
        .unwrap()
}

const RUN: [&str; 10] = [
    "run",
    "--model",
    "site",
    "--sizes",
    "8,12",
    "--samples",
    "30",
    "--seed",
    "5",
    "--output",
];

#[test]
fn run_report_merge_and_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut args = RUN.to_vec();
    args.push("a.h5");
    let out = clusterlab(d, &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let before = std::fs::read(d.join("a.h5")).unwrap();

    let out = clusterlab(d, &["report", "a.h5", "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["samples"], 60);
    assert!(v["p_c"].is_number() && v["p_c_stderr"].is_number());
    let sizes = v["sizes"].as_array().unwrap();
    assert_eq!(sizes.len(), 2);
    for key in [
        "L",
        "samples",
        "R_h",
        "R_h_stderr",
        "R_v",
        "R_v_stderr",
        "R_e",
        "R_e_stderr",
        "R_b",
        "R_b_stderr",
        "R_1",
        "R_1_stderr",
    ] {
        assert!(sizes[0][key].is_number(), "{key}");
    }

    // An existing output without --resume/--force; a resume with another model; bad numbers.
    let refusals: Vec<Vec<&str>> = vec![
        args.clone(),
        vec![
            "run",
            "--model",
            "bond",
            "--sizes",
            "8,12",
            "--samples",
            "40",
            "--seed",
            "5",
            "--output",
            "a.h5",
            "--resume",
        ],
        vec![
            "run",
            "--model",
            "site",
            "--sizes",
            "0",
            "--samples",
            "3",
            "--output",
            "a.h5",
            "--force",
        ],
        vec![
            "run",
            "--model",
            "site",
            "--sizes",
            "8",
            "--samples",
            "3",
            "--p",
            "0.2:1.5:0.1",
            "--output",
            "a.h5",
            "--force",
        ],
        vec![
            "run",
            "--model",
            "site",
            "--sizes",
            "8",
            "--samples",
            "0",
            "--output",
            "a.h5",
            "--force",
        ],
        vec![
            "run",
            "--model",
            "bond",
            "--connectivity",
            "8",
            "--sizes",
            "8",
            "--samples",
            "3",
            "--method",
            "fixed-p",
            "--output",
            "a.h5",
            "--force",
        ],
    ];
    for r in refusals {
        let out = clusterlab(d, &r);
        assert!(!out.status.success(), "{r:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{r:?}: {err}");
        assert_eq!(
            std::fs::read(d.join("a.h5")).unwrap(),
            before,
            "{r:?} touched the file"
        );
    }

    // Fixed-p: run, resume to more samples (the same sums as one run), report.
    let fixed = |samples: &str, out: &str, extra: &[&str]| {
        let mut a = vec![
            "run",
            "--model",
            "site",
            "--sizes",
            "8,12",
            "--samples",
            samples,
            "--method",
            "fixed-p",
            "--p",
            "0.55:0.63:0.02",
            "--backend",
            "cpu",
            "--output",
            out,
        ];
        a.extend_from_slice(extra);
        let o = clusterlab(d, &a);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    fixed("40", "f.h5", &[]);
    fixed("90", "f.h5", &["--resume"]);
    fixed("90", "g.h5", &[]);
    let report = |f: &str| -> serde_json::Value {
        let out = clusterlab(d, &["report", f, "--json"]);
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let (f, g) = (report("f.h5"), report("g.h5"));
    assert_eq!(f["method"], "fixed-p");
    // Bond percolation in fixed-p, on its default grid around 1/2.
    let o = clusterlab(
        d,
        &[
            "run",
            "--model",
            "bond",
            "--sizes",
            "8,12",
            "--samples",
            "60",
            "--method",
            "fixed-p",
            "--backend",
            "cpu",
            "--output",
            "bond.h5",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let bond = report("bond.h5");
    assert_eq!(bond["model"], "bond");
    assert_eq!(bond["samples"], 120);
    assert!(bond["sizes"][1]["R_e"].as_f64().unwrap() > 0.3, "{bond}");
    assert_eq!(f["samples"], 180);
    assert_eq!(f["sizes"], g["sizes"]);
    assert_eq!(f["p_c"], g["p_c"]);

    // Fixed-p merge: another seed adds its samples, and R at p_c becomes the sample-weighted
    // mean (every grid point of a study has the same samples); the same seed or another method
    // is refused with one line.
    fixed("30", "h.h5", &["--seed", "9"]);
    let o = clusterlab(d, &["merge", "f.h5", "h.h5", "--output", "fh.h5"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (fh, h) = (report("fh.h5"), report("h.h5"));
    assert_eq!(fh["samples"], 180 + 60);
    for k in 0..2 {
        let (a, b, m) = (&f["sizes"][k], &h["sizes"][k], &fh["sizes"][k]);
        assert_eq!(m["samples"], 120);
        let want = (90.0 * a["R_h"].as_f64().unwrap() + 30.0 * b["R_h"].as_f64().unwrap()) / 120.0;
        assert!(
            (m["R_h"].as_f64().unwrap() - want).abs() < 1e-12,
            "{m} vs {want}"
        );
    }
    for (x, y) in [("f.h5", "g.h5"), ("f.h5", "a.h5")] {
        let o = clusterlab(d, &["merge", x, y, "--output", "bad.h5"]);
        assert!(!o.status.success(), "{x} + {y}");
        assert_eq!(
            String::from_utf8_lossy(&o.stderr)
                .trim_end()
                .lines()
                .count(),
            1
        );
        assert!(!d.join("bad.h5").exists());
    }

    // Resume to more samples, then merge with a disjoint seed.
    let mut more = RUN.to_vec();
    more[6] = "50";
    more.extend(["a.h5", "--resume"]);
    assert!(clusterlab(d, &more).status.success());
    let mut other = RUN.to_vec();
    other[8] = "6";
    other.push("b.h5");
    assert!(clusterlab(d, &other).status.success());
    let out = clusterlab(d, &["merge", "a.h5", "b.h5", "--output", "all.h5"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = clusterlab(d, &["report", "all.h5", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["samples"], 160);

    #[cfg(feature = "plot")]
    {
        let out = clusterlab(d, &["plot", "all.h5", "--output-dir", "figures"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for name in [
            "R_h",
            "R_e",
            "R_b",
            "R_1",
            "P_inf",
            "S",
            "ns",
            "pc_extrapolation",
        ] {
            let png = std::fs::read(d.join("figures").join(format!("{name}.png"))).unwrap();
            assert_eq!(&png[1..4], b"PNG", "{name}");
        }
    }
}
