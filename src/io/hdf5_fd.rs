//! Opening and creating HDF5 files with their descriptor marked close-on-exec.
//!
//! Every HDF5 file this crate opens or creates goes through [`create`], [`open`] or [`open_rw`].
//!
//! Why: the HDF5 C library opens a file with plain open(2), without `O_CLOEXEC`, and (file locking
//! being on by default) takes an flock(2) on it. A process spawned by another thread while the
//! file is open (`std::process::Command` in a test harness, or in a program that writes HDF5 files
//! in one thread and runs tools in another) inherits the descriptor across exec, and with it the
//! lock: flock locks belong to the open file description, which the child then shares, so the
//! lock outlives our own close until the child exits, and reopening the file we have just written
//! fails with "unable to lock file, errno = 11" (EAGAIN). Marking the descriptor close-on-exec
//! right after the open makes the child drop it at exec.
//!
//! HDF5 has no way to pass `O_CLOEXEC` to its open(2), so a window remains between that open and
//! our fcntl(2), during which a fork would still inherit the descriptor (and the lock HDF5 takes
//! on it meanwhile). It is not just the syscalls but the rest of `H5Fcreate`/`H5Fopen` after the
//! open (lock, superblock): about 50–150 µs on a desktop, against the whole time the file is
//! open before. Marking is best effort: where it fails, or the file is not on the default `sec2`
//! driver (whose handle is an `int` file descriptor), the file is used as it is.

use ::hdf5::file::FileDriver;
use ::hdf5::File;
use std::path::Path;

/// [`hdf5::File::create`], its descriptor marked close-on-exec.
pub(crate) fn create(path: &Path) -> ::hdf5::Result<File> {
    File::create(path).inspect(mark_cloexec)
}

/// [`hdf5::File::open`] (read-only), its descriptor marked close-on-exec.
pub(crate) fn open(path: &Path) -> ::hdf5::Result<File> {
    File::open(path).inspect(mark_cloexec)
}

/// [`hdf5::File::open_rw`], its descriptor marked close-on-exec.
pub(crate) fn open_rw(path: &Path) -> ::hdf5::Result<File> {
    File::open_rw(path).inspect(mark_cloexec)
}

/// Marks the descriptor of `file` close-on-exec; ignores any failure (see the module's doc).
fn mark_cloexec(file: &File) {
    let _ = set_cloexec(file);
}

/// Marks the descriptor of `file` close-on-exec: `Some(fd)` when it is marked, `None` when
/// there is no descriptor to mark (not the `sec2` driver, not unix) or a call failed.
pub(crate) fn set_cloexec(file: &File) -> Option<i32> {
    if !matches!(
        file.fapl().and_then(|fapl| fapl.get_driver()),
        Ok(FileDriver::Sec2)
    ) {
        return None;
    }
    // Raw HDF5 calls run under hdf5-metno's global (reentrant) lock, as its own calls do. The
    // fcntl runs under it too, so that no HDF5 call of another thread can close the file (and
    // let its descriptor number be reused) in between.
    let _guard = hdf5_sys::LOCK.lock();
    let mut handle: *mut std::ffi::c_void = std::ptr::null_mut();
    // SAFETY: `file` is an open file (we borrow it), `handle` a valid place for the pointer.
    let rc = unsafe {
        hdf5_sys::h5f::H5Fget_vfd_handle(file.id(), hdf5_sys::h5p::H5P_DEFAULT, &mut handle)
    };
    if rc < 0 || handle.is_null() {
        return None;
    }
    // SAFETY: for the sec2 driver the handle points at the driver's `int fd`, alive while the
    // file is open.
    let fd = unsafe { *handle.cast::<std::ffi::c_int>() };
    cloexec(fd).then_some(fd)
}

#[cfg(unix)]
fn cloexec(fd: std::ffi::c_int) -> bool {
    if fd < 0 {
        return false;
    }
    // SAFETY: fcntl on a descriptor number reads or sets its flags, nothing else.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        flags >= 0
            && (flags & libc::FD_CLOEXEC != 0
                || libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) == 0)
    }
}

/// No fork/exec inheritance to guard against.
#[cfg(not(unix))]
fn cloexec(_fd: std::ffi::c_int) -> bool {
    false
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn is_cloexec(fd: i32) -> bool {
        // SAFETY: reads the flags of a descriptor number.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
        assert!(flags >= 0, "fcntl(F_GETFD) on fd {fd} failed");
        flags & libc::FD_CLOEXEC != 0
    }

    /// The descriptor of a file opened by HDF5 itself, without the helper.
    fn raw_fd(file: &File) -> i32 {
        let _guard = hdf5_sys::LOCK.lock();
        let mut handle: *mut std::ffi::c_void = std::ptr::null_mut();
        let rc = unsafe {
            hdf5_sys::h5f::H5Fget_vfd_handle(file.id(), hdf5_sys::h5p::H5P_DEFAULT, &mut handle)
        };
        assert!(rc >= 0 && !handle.is_null());
        unsafe { *handle.cast::<std::ffi::c_int>() }
    }

    #[test]
    fn plain_hdf5_open_leaves_the_descriptor_inheritable() {
        // What the helper is for: without it the descriptor survives exec.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plain.h5");
        let file = File::create(&path).unwrap();
        assert!(!is_cloexec(raw_fd(&file)));
    }

    #[test]
    fn create_open_and_open_rw_mark_the_descriptor_cloexec() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.h5");
        {
            let file = create(&path).unwrap();
            let fd = raw_fd(&file);
            assert!(is_cloexec(fd), "create: fd {fd} not close-on-exec");
            assert_eq!(set_cloexec(&file), Some(fd));
            file.new_attr::<u32>()
                .create("x")
                .unwrap()
                .write_scalar(&7)
                .unwrap();
            file.close().unwrap();
        }
        {
            let file = open(&path).unwrap();
            let fd = raw_fd(&file);
            assert!(is_cloexec(fd), "open: fd {fd} not close-on-exec");
            let x: u32 = file.attr("x").unwrap().read_scalar().unwrap();
            assert_eq!(x, 7);
        }
        {
            let file = open_rw(&path).unwrap();
            let fd = raw_fd(&file);
            assert!(is_cloexec(fd), "open_rw: fd {fd} not close-on-exec");
        }
    }

    #[test]
    fn other_drivers_are_left_alone() {
        // The core (in-memory) driver has no descriptor: nothing is marked, nothing fails.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("core.h5");
        let file = File::with_options()
            .with_fapl(|p| p.core_filebacked(false))
            .create(&path)
            .unwrap();
        assert_eq!(set_cloexec(&file), None);
    }
}
