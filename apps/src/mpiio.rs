//! The thin unsafe layer of the apps: MPI-IO on `MPI_COMM_SELF` (rsmpi has
//! no MPI-IO), page-aligned buffers, and direct I/O on the file MPI opened.
//! Everything above this module is safe Rust.
//!
//! Direct I/O: MPI-IO has no `O_DIRECT` mode, so after `MPI_File_open` we
//! find the descriptor Open MPI opened for our path in `/proc/self/fd` and
//! add `O_DIRECT` with `fcntl(F_SETFL)`. Reads and writes then bypass the
//! page cache and pass through the rank's `blkio` throttle. Every transfer
//! is then a multiple of [`ALIGN`] bytes at an aligned offset from an aligned
//! buffer, which the storage layer guarantees. Where the file system refuses
//! `O_DIRECT` (tmpfs on older kernels), [`File::direct`] is false and the
//! caller defeats the cache with `posix_fadvise(DONTNEED)` instead.

use mpi::ffi;
use std::ffi::CString;
use std::path::{Path, PathBuf};

/// Alignment of direct-I/O offsets, lengths and buffers.
pub const ALIGN: usize = 4096;

/// A zeroed buffer aligned to [`ALIGN`], its length a multiple of it.
pub struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer is owned memory like a Vec<u8>.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// At least `bytes` bytes, rounded up to a multiple of [`ALIGN`].
    pub fn new(bytes: usize) -> AlignedBuf {
        let len = round_up(bytes.max(1), ALIGN);
        let layout = std::alloc::Layout::from_size_align(len, ALIGN).expect("aligned layout");
        // SAFETY: layout has non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        AlignedBuf { ptr, len }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: ptr is valid for len bytes while self lives.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// `n` f64 from byte offset `at` (a multiple of 8).
    pub fn f64s_mut(&mut self, at: usize, n: usize) -> &mut [f64] {
        assert!(
            at.is_multiple_of(8) && at + 8 * n <= self.len,
            "f64 view out of the buffer"
        );
        // SAFETY: in bounds, 8-aligned (ptr is 4096-aligned), any bit pattern is an f64.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(at).cast::<f64>(), n) }
    }

    /// `n` u32 from byte offset `at` (a multiple of 4).
    pub fn u32s_mut(&mut self, at: usize, n: usize) -> &mut [u32] {
        assert!(
            at.is_multiple_of(4) && at + 4 * n <= self.len,
            "u32 view out of the buffer"
        );
        // SAFETY: in bounds, 4-aligned, any bit pattern is a u32.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(at).cast::<u32>(), n) }
    }

    /// Two disjoint views: `n` f64 from offset 0 and `n` u32 from `at`.
    pub fn f64s_and_u32s(&mut self, n: usize, at: usize) -> (&mut [f64], &mut [u32]) {
        assert!(
            8 * n <= at && at.is_multiple_of(4) && at + 4 * n <= self.len,
            "views overlap"
        );
        // SAFETY: the two ranges are disjoint and in bounds; alignment as above.
        unsafe {
            (
                std::slice::from_raw_parts_mut(self.ptr.cast::<f64>(), n),
                std::slice::from_raw_parts_mut(self.ptr.add(at).cast::<u32>(), n),
            )
        }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let layout = std::alloc::Layout::from_size_align(self.len, ALIGN).expect("aligned layout");
        // SAFETY: allocated in new() with this layout.
        unsafe { std::alloc::dealloc(self.ptr, layout) }
    }
}

pub fn round_up(x: usize, to: usize) -> usize {
    x.div_ceil(to) * to
}

/// An MPI-IO error, with the file and the call.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {call} failed: {msg}")]
pub struct IoError {
    pub path: PathBuf,
    pub call: &'static str,
    pub msg: String,
}

fn error_string(code: i32) -> String {
    let mut buf = vec![0u8; ffi::MPI_MAX_ERROR_STRING as usize + 1];
    let mut len = 0i32;
    // SAFETY: buf holds MPI_MAX_ERROR_STRING bytes as the call requires.
    unsafe { ffi::MPI_Error_string(code, buf.as_mut_ptr().cast(), &mut len) };
    String::from_utf8_lossy(&buf[..len.max(0) as usize]).into_owned()
}

/// A file opened with MPI-IO on `MPI_COMM_SELF`, read and written at
/// explicit offsets.
pub struct File {
    fh: ffi::MPI_File,
    path: PathBuf,
    /// Reads and writes bypass the page cache (`O_DIRECT` took).
    pub direct: bool,
    /// A plain descriptor on the same file for `posix_fadvise` when not
    /// direct.
    plain: Option<std::fs::File>,
}

/// An outstanding `MPI_File_iread_at`.
pub struct Pending {
    req: ffi::MPI_Request,
}

impl File {
    /// Create (or truncate) `path` for reading and writing; try direct I/O.
    pub fn create(path: &Path) -> Result<File, IoError> {
        let err = |call, msg: String| IoError {
            path: path.into(),
            call,
            msg,
        };
        let _ = std::fs::remove_file(path);
        let c = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| err("MPI_File_open", "path contains a NUL byte".into()))?;
        // SAFETY: a zeroed handle is a valid out-parameter.
        let mut fh: ffi::MPI_File = unsafe { std::mem::zeroed() };
        // SAFETY: c is a NUL-terminated path; the handles are MPI's constants;
        // fh receives the new handle.
        let rc = unsafe {
            ffi::MPI_File_open(
                ffi::RSMPI_COMM_SELF,
                c.as_ptr(),
                (ffi::MPI_MODE_CREATE | ffi::MPI_MODE_RDWR) as i32,
                ffi::RSMPI_INFO_NULL,
                &mut fh,
            )
        };
        if rc != 0 {
            return Err(err("MPI_File_open", error_string(rc)));
        }
        // Errors on this file come back as codes instead of aborting.
        // SAFETY: fh is open; MPI_ERRORS_RETURN is a constant handle.
        unsafe { ffi::MPI_File_set_errhandler(fh, ffi::RSMPI_ERRORS_RETURN) };
        let direct = set_direct(path);
        let plain = if direct {
            None
        } else {
            std::fs::File::open(path).ok()
        };
        Ok(File {
            fh,
            path: path.into(),
            direct,
            plain,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn check(&self, rc: i32, call: &'static str) -> Result<(), IoError> {
        if rc == 0 {
            Ok(())
        } else {
            Err(IoError {
                path: self.path.clone(),
                call,
                msg: error_string(rc),
            })
        }
    }

    fn check_count(
        &self,
        st: &ffi::MPI_Status,
        want: usize,
        call: &'static str,
    ) -> Result<(), IoError> {
        let mut n = 0i32;
        // SAFETY: st was filled by a completed MPI-IO call of bytes.
        unsafe { ffi::MPI_Get_count(st, ffi::RSMPI_UINT8_T, &mut n) };
        if n as usize != want {
            return Err(IoError {
                path: self.path.clone(),
                call,
                msg: format!("moved {n} of {want} bytes"),
            });
        }
        Ok(())
    }

    /// Blocking read of `buf` (its whole length) at `offset`.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        self.evict();
        // SAFETY: a zeroed status is a valid out-parameter.
        let mut st: ffi::MPI_Status = unsafe { std::mem::zeroed() };
        // SAFETY: buf is valid for buf.len() bytes; fh is open.
        let rc = unsafe {
            ffi::MPI_File_read_at(
                self.fh,
                offset as ffi::MPI_Offset,
                buf.as_mut_ptr().cast(),
                buf.len() as i32,
                ffi::RSMPI_UINT8_T,
                &mut st,
            )
        };
        self.check(rc, "MPI_File_read_at")?;
        self.check_count(&st, buf.len(), "MPI_File_read_at")
    }

    /// Start a read of `buf` at `offset`; [`File::wait`] completes it. The
    /// caller keeps `buf` untouched until then (the storage layer owns
    /// both).
    pub fn iread_at(&self, offset: u64, buf: &mut [u8]) -> Result<Pending, IoError> {
        self.evict();
        // SAFETY: a zeroed handle is a valid out-parameter.
        let mut req: ffi::MPI_Request = unsafe { std::mem::zeroed() };
        // SAFETY: buf outlives the request (the caller waits before reuse).
        let rc = unsafe {
            ffi::MPI_File_iread_at(
                self.fh,
                offset as ffi::MPI_Offset,
                buf.as_mut_ptr().cast(),
                buf.len() as i32,
                ffi::RSMPI_UINT8_T,
                &mut req,
            )
        };
        self.check(rc, "MPI_File_iread_at")?;
        Ok(Pending { req })
    }

    /// Complete a prefetch of `want` bytes with `MPI_Wait`.
    pub fn wait(&self, mut p: Pending, want: usize) -> Result<(), IoError> {
        // SAFETY: a zeroed status is a valid out-parameter.
        let mut st: ffi::MPI_Status = unsafe { std::mem::zeroed() };
        // SAFETY: p.req is an active request of this file.
        let rc = unsafe { ffi::MPI_Wait(&mut p.req, &mut st) };
        self.check(rc, "MPI_Wait")?;
        self.check_count(&st, want, "MPI_File_iread_at")
    }

    /// Blocking write of `buf` at `offset`.
    pub fn write_at(&self, offset: u64, buf: &[u8]) -> Result<(), IoError> {
        // SAFETY: a zeroed status is a valid out-parameter.
        let mut st: ffi::MPI_Status = unsafe { std::mem::zeroed() };
        // SAFETY: buf is valid for buf.len() bytes; MPI only reads it.
        let rc = unsafe {
            ffi::MPI_File_write_at(
                self.fh,
                offset as ffi::MPI_Offset,
                buf.as_ptr().cast_mut().cast(),
                buf.len() as i32,
                ffi::RSMPI_UINT8_T,
                &mut st,
            )
        };
        self.check(rc, "MPI_File_write_at")?;
        self.check_count(&st, buf.len(), "MPI_File_write_at")?;
        if !self.direct {
            // Written pages go to disk and leave the cache, so the next
            // read of them is a disk read (the cache must not hide I/O).
            // SAFETY: fh is open.
            let rc = unsafe { ffi::MPI_File_sync(self.fh) };
            self.check(rc, "MPI_File_sync")?;
        }
        Ok(())
    }

    /// Without direct I/O: drop the file's cached pages before a read.
    fn evict(&self) {
        if let Some(f) = &self.plain {
            use std::os::fd::AsRawFd;
            // SAFETY: advisory call on an open descriptor.
            unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        }
    }
}

impl Drop for File {
    fn drop(&mut self) {
        // SAFETY: fh is open (closing sets it to MPI_FILE_NULL).
        unsafe { ffi::MPI_File_close(&mut self.fh) };
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Add `O_DIRECT` to every descriptor of this process open on `path`.
/// True when at least one took it (and none refused).
fn set_direct(path: &Path) -> bool {
    let Ok(target) = path.canonicalize() else {
        return false;
    };
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return false;
    };
    let mut any = false;
    for e in dir.flatten() {
        let Ok(link) = std::fs::read_link(e.path()) else {
            continue;
        };
        if link != target {
            continue;
        }
        let Some(fd) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        // SAFETY: fcntl on a descriptor of this process; F_GETFL/F_SETFL
        // only change its status flags.
        let ok = unsafe {
            let fl = libc::fcntl(fd, libc::F_GETFL);
            fl >= 0 && libc::fcntl(fd, libc::F_SETFL, fl | libc::O_DIRECT) == 0
        };
        if !ok {
            return false;
        }
        any = true;
    }
    any
}
