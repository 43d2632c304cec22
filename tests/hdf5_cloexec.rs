//! HDF5 files that clusterlab opens are close-on-exec, so that a process spawned meanwhile (by
//! any thread) does not inherit the descriptor and with it HDF5's flock, which would make
//! reopening a file just written fail with "unable to lock file, errno = 11" until the child
//! exits.
//!
//! Every file here is written by clusterlab itself: a file opened by plain `hdf5` in this binary
//! is not close-on-exec, and a process spawned by a test running beside it would lock it.
#![cfg(unix)]

use clusterlab::io::{Format, FrameReader, LabelLayout, LabelMeta, LabelSink, WriteOptions};
use clusterlab::{Boundary, Connectivity};
use ndarray::Array2;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};

/// One test at a time: a child spawned by one test must not land in the open of another (the
/// short window between HDF5's open(2) and the close-on-exec mark).
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn meta() -> LabelMeta {
    LabelMeta {
        connectivity: Connectivity::Four,
        boundary: Boundary::Open,
        segments: false,
    }
}

/// A `(2, 4, 5)` stack of label frames at `path`, as `/labels`.
fn write_stack(path: &Path) {
    let layout = LabelLayout::frames(0..2, (4, 5));
    let mut sink = LabelSink::create(
        path,
        Format::Hdf5,
        layout,
        &meta(),
        &WriteOptions::default(),
    )
    .unwrap();
    let lattice = Array2::from_shape_fn((4, 5), |(y, x)| u8::from((x + y) % 3 == 0));
    let labels = clusterlab::label(lattice.view(), Connectivity::Four, Boundary::Open).unwrap();
    sink.push(&labels).unwrap();
    sink.push(&labels).unwrap();
    sink.finish(&[]).unwrap();
}

/// A child that outlives the test's next open (killed by [`reap`]).
fn spawn_child() -> Child {
    Command::new("sleep")
        .arg("10")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn sleep")
}

fn reap(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// The descriptors of this process open on files under `dir`, with whether each is
/// close-on-exec.
#[cfg(target_os = "linux")]
fn descriptors_under(dir: &Path) -> Vec<(i32, bool)> {
    let dir = std::fs::canonicalize(dir).unwrap();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc/self/fd").unwrap() {
        let entry = entry.unwrap();
        let Ok(target) = std::fs::read_link(entry.path()) else {
            continue; // closed meanwhile (e.g. read_dir's own descriptor)
        };
        if !target.starts_with(&dir) {
            continue;
        }
        let fd: i32 = entry.file_name().to_str().unwrap().parse().unwrap();
        // SAFETY: reads the flags of a descriptor number.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
        assert!(
            flags >= 0,
            "fcntl(F_GETFD) on fd {fd} ({})",
            target.display()
        );
        found.push((fd, flags & libc::FD_CLOEXEC != 0));
    }
    found
}

/// Deterministic: the descriptor of an HDF5 file that a writer and a reader hold open is marked
/// close-on-exec.
#[cfg(target_os = "linux")]
#[test]
fn open_hdf5_files_are_close_on_exec() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();

    // A writer (clusterlab's own create).
    let out = dir.path().join("tables.h5");
    let sink = LabelSink::create_tables_only(&out, &meta()).unwrap();
    let fds = descriptors_under(dir.path());
    assert!(!fds.is_empty(), "no descriptor open on {}", out.display());
    assert!(fds.iter().all(|&(_, c)| c), "writer: {fds:?}");
    sink.finish(&[]).unwrap();
    assert!(descriptors_under(dir.path()).is_empty());

    // A reader (clusterlab's own open).
    let stack = dir.path().join("stack.h5");
    write_stack(&stack);
    let reader = FrameReader::open(&stack, Some("/labels")).unwrap();
    assert_eq!(reader.len(), 2);
    let fds = descriptors_under(dir.path());
    assert!(!fds.is_empty(), "no descriptor open on {}", stack.display());
    assert!(fds.iter().all(|&(_, c)| c), "reader: {fds:?}");
}

/// The bug, deterministically: a process spawned while clusterlab writes an HDF5 file must not
/// keep the writer's exclusive lock once the file is closed. (Before the fix the child held it
/// until it exited, and the reopen failed with EAGAIN.)
#[test]
fn a_child_spawned_while_writing_does_not_keep_the_lock() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tables.h5");
    let sink = LabelSink::create_tables_only(&out, &meta()).unwrap();
    let child = spawn_child();
    sink.finish(&[]).unwrap();
    let reopened = hdf5::File::open(&out);
    reap(child);
    if let Err(e) = reopened {
        panic!("reopen {}: {e}", out.display());
    }
}

/// Likewise a reader's shared lock: a file read while a process was spawned must open for
/// writing once the reader is done.
#[test]
fn a_child_spawned_while_reading_does_not_keep_the_lock() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let stack = dir.path().join("stack.h5");
    write_stack(&stack);
    let reader = FrameReader::open(&stack, Some("/labels")).unwrap();
    assert_eq!(reader.len(), 2);
    let child = spawn_child();
    drop(reader);
    let reopened = hdf5::File::open_rw(&stack);
    reap(child);
    if let Err(e) = reopened {
        panic!("reopen {} for writing: {e}", stack.display());
    }
}
