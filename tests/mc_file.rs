//! Run files: a run stopped at a checkpoint (rows written after it included) and resumed ends
//! with the same series and spins as an uninterrupted run.
#![cfg(feature = "hdf5")]

use clusterlab::mc::{checkpoint_path, read_run, run_to_file, Model, RunConfig, Update};
use clusterlab::{Backend, Error};

fn config(update: Update, sweeps: u64) -> RunConfig {
    RunConfig {
        model: Model::potts(3, 12, 10, 1.0).unwrap(),
        temperatures: vec![0.9, 1.0, 1.1],
        update,
        seed: 4,
        thermalize: 13,
        sweeps,
        every: 2,
        checkpoint_every: 7,
        backend: Backend::Cpu,
        command: "test".into(),
    }
}

#[test]
fn resumed_run_equals_uninterrupted_run() {
    let dir = tempfile::tempdir().unwrap();
    for update in [Update::SwendsenWang, Update::Wolff, Update::Metropolis] {
        let a = dir.path().join(format!("a-{update}.h5"));
        let b = dir.path().join(format!("b-{update}.h5"));
        let mut calls = 0;
        run_to_file(&config(update, 60), &a, false, false, &mut |_, _| {
            calls += 1
        })
        .unwrap();
        assert!(calls > 5);
        // Stopped early: 13 thermalisation + 21 sweeps, a checkpoint at the end.
        run_to_file(&config(update, 21), &b, false, false, &mut |_, _| {}).unwrap();
        // Rows a killed run wrote after its checkpoint: resume must drop them.
        {
            let f = hdf5::File::open_rw(&b).unwrap();
            let ds = f.group("chain_001").unwrap().dataset("energy").unwrap();
            let n = ds.shape()[0];
            ds.resize(n + 3).unwrap();
        }
        let e = run_to_file(&config(update, 60), &b, false, false, &mut |_, _| {}).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
        run_to_file(&config(update, 60), &b, true, false, &mut |_, _| {}).unwrap();
        let (ra, rb) = (read_run(&a).unwrap(), read_run(&b).unwrap());
        assert_eq!(ra.chains.len(), 3);
        for (ca, cb) in ra.chains.iter().zip(&rb.chains) {
            assert_eq!(ca.sweeps, cb.sweeps, "{update}");
            assert_eq!(ca.samples, cb.samples, "{update}");
            assert_eq!(ca.sweeps.len(), 30);
            assert_eq!(ca.sweeps[0], 14);
        }
        assert_eq!(ra.attribute("kind"), Some("mc-run"));
        assert_eq!(ra.attribute("algorithm"), Some(update.name()));
        let spins = |p: &std::path::Path| {
            let f = hdf5::File::open(checkpoint_path(p)).unwrap();
            f.group("chain_002")
                .unwrap()
                .dataset("spins")
                .unwrap()
                .read_raw::<u8>()
                .unwrap()
        };
        assert_eq!(spins(&a), spins(&b), "{update}");
        // Resuming with other parameters is refused.
        let mut other = config(update, 60);
        other.seed = 5;
        let e = run_to_file(&other, &b, true, false, &mut |_, _| {}).unwrap_err();
        assert!(e.to_string().contains("seed"), "{e}");
    }
}
