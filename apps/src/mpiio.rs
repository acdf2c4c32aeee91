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
pub use mheta_model::ooc::{ALIGN, round_up};

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

/// The bytes of f64s (native byte order: checkpoints are read back on the
/// same kind of machine).
pub fn as_bytes(v: &[f64]) -> &[u8] {
    // SAFETY: any f64 is 8 initialised bytes; u8 has alignment 1.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), std::mem::size_of_val(v)) }
}

/// The bytes of f64s, writable (any bit pattern is an f64).
pub fn as_bytes_mut(v: &mut [f64]) -> &mut [u8] {
    // SAFETY: as above; every byte pattern is a valid f64.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), std::mem::size_of_val(v)) }
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
    /// The descriptors the MPI library opened on the file.
    fds: Vec<i32>,
}

/// An outstanding `MPI_File_iread_at`.
pub struct Pending {
    req: ffi::MPI_Request,
}

impl File {
    /// Create (or truncate) `path` for reading and writing; try direct
    /// I/O; pace the MPI library's transfers on it at `seconds_per_byte`
    /// (0: not paced; see [`pace`]).
    pub fn create(path: &Path, seconds_per_byte: f64) -> Result<File, IoError> {
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
        let fds = fds_of(path);
        let direct = set_direct(&fds);
        if seconds_per_byte > 0.0 {
            for &fd in &fds {
                pace::register(fd, seconds_per_byte);
            }
        }
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
            fds,
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
        for &fd in &self.fds {
            pace::unregister(fd);
        }
        // SAFETY: fh is open (closing sets it to MPI_FILE_NULL).
        unsafe { ffi::MPI_File_close(&mut self.fh) };
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A file opened collectively with MPI-IO on a communicator (checkpoints
/// and out-of-core moves): every rank reads or writes its own rows at
/// explicit offsets (`MPI_File_write_at` / `MPI_File_read_at`, independent,
/// since ranks make different numbers of calls), then
/// [`Shared::sync`] and [`Shared::close`] (collective). Not paced, not
/// direct, and not removed on drop: it outlives the run.
pub struct Shared {
    fh: ffi::MPI_File,
    path: PathBuf,
}

/// The most bytes one MPI-IO call moves (its count is an `int`).
const MAX_CALL: usize = 1 << 30;

impl Shared {
    fn open(
        comm: &mpi::topology::SimpleCommunicator,
        path: &Path,
        mode: u32,
    ) -> Result<Shared, IoError> {
        use mpi::raw::AsRaw;
        let err = |msg: String| IoError {
            path: path.into(),
            call: "MPI_File_open",
            msg,
        };
        let c = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| err("path contains a NUL byte".into()))?;
        // SAFETY: a zeroed handle is a valid out-parameter.
        let mut fh: ffi::MPI_File = unsafe { std::mem::zeroed() };
        // SAFETY: collective open on a live communicator; c is NUL-terminated.
        let rc = unsafe {
            ffi::MPI_File_open(
                comm.as_raw(),
                c.as_ptr(),
                mode as i32,
                ffi::RSMPI_INFO_NULL,
                &mut fh,
            )
        };
        if rc != 0 {
            return Err(err(error_string(rc)));
        }
        // SAFETY: fh is open; MPI_ERRORS_RETURN is a constant handle.
        unsafe { ffi::MPI_File_set_errhandler(fh, ffi::RSMPI_ERRORS_RETURN) };
        Ok(Shared {
            fh,
            path: path.into(),
        })
    }

    /// Create `path` (collective; it must not exist).
    pub fn create(
        comm: &mpi::topology::SimpleCommunicator,
        path: &Path,
    ) -> Result<Shared, IoError> {
        Shared::open(
            comm,
            path,
            ffi::MPI_MODE_CREATE | ffi::MPI_MODE_EXCL | ffi::MPI_MODE_WRONLY,
        )
    }

    /// Open an existing `path` for reading (collective).
    pub fn open_read(
        comm: &mpi::topology::SimpleCommunicator,
        path: &Path,
    ) -> Result<Shared, IoError> {
        Shared::open(comm, path, ffi::MPI_MODE_RDONLY)
    }

    fn fail(&self, call: &'static str, msg: String) -> IoError {
        IoError {
            path: self.path.clone(),
            call,
            msg,
        }
    }

    fn moved(&self, st: &ffi::MPI_Status, want: usize, call: &'static str) -> Result<(), IoError> {
        let mut n = 0i32;
        // SAFETY: st was filled by a completed MPI-IO call of bytes.
        unsafe { ffi::MPI_Get_count(st, ffi::RSMPI_UINT8_T, &mut n) };
        if n as usize != want {
            return Err(self.fail(call, format!("moved {n} of {want} bytes")));
        }
        Ok(())
    }

    /// Write all of `buf` at `offset` (this rank only).
    pub fn write_at(&self, mut offset: u64, buf: &[u8]) -> Result<(), IoError> {
        for part in buf.chunks(MAX_CALL) {
            // SAFETY: a zeroed status is a valid out-parameter.
            let mut st: ffi::MPI_Status = unsafe { std::mem::zeroed() };
            // SAFETY: part is valid for its length; MPI only reads it.
            let rc = unsafe {
                ffi::MPI_File_write_at(
                    self.fh,
                    offset as ffi::MPI_Offset,
                    part.as_ptr().cast_mut().cast(),
                    part.len() as i32,
                    ffi::RSMPI_UINT8_T,
                    &mut st,
                )
            };
            if rc != 0 {
                return Err(self.fail("MPI_File_write_at", error_string(rc)));
            }
            self.moved(&st, part.len(), "MPI_File_write_at")?;
            offset += part.len() as u64;
        }
        Ok(())
    }

    /// Read all of `buf` from `offset` (this rank only).
    pub fn read_at(&self, mut offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        for part in buf.chunks_mut(MAX_CALL) {
            // SAFETY: a zeroed status is a valid out-parameter.
            let mut st: ffi::MPI_Status = unsafe { std::mem::zeroed() };
            let len = part.len();
            // SAFETY: part is valid for len bytes.
            let rc = unsafe {
                ffi::MPI_File_read_at(
                    self.fh,
                    offset as ffi::MPI_Offset,
                    part.as_mut_ptr().cast(),
                    len as i32,
                    ffi::RSMPI_UINT8_T,
                    &mut st,
                )
            };
            if rc != 0 {
                return Err(self.fail("MPI_File_read_at", error_string(rc)));
            }
            self.moved(&st, len, "MPI_File_read_at")?;
            offset += len as u64;
        }
        Ok(())
    }

    /// `MPI_File_sync` (collective): what was written is on disk.
    pub fn sync(&self) -> Result<(), IoError> {
        // SAFETY: fh is open.
        let rc = unsafe { ffi::MPI_File_sync(self.fh) };
        if rc != 0 {
            return Err(self.fail("MPI_File_sync", error_string(rc)));
        }
        Ok(())
    }

    /// Close (collective).
    pub fn close(mut self) -> Result<(), IoError> {
        let path = std::mem::take(&mut self.path);
        // SAFETY: fh is open; closing sets it to MPI_FILE_NULL.
        let rc = unsafe { ffi::MPI_File_close(&mut self.fh) };
        std::mem::forget(self);
        if rc != 0 {
            return Err(IoError {
                path,
                call: "MPI_File_close",
                msg: error_string(rc),
            });
        }
        Ok(())
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: fh is open (an error path that did not call close).
        unsafe { ffi::MPI_File_close(&mut self.fh) };
    }
}

/// The descriptors of this process open on `path`.
fn fds_of(path: &Path) -> Vec<i32> {
    let Ok(target) = path.canonicalize() else {
        return Vec::new();
    };
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    dir.flatten()
        .filter(|e| std::fs::read_link(e.path()).is_ok_and(|l| l == target))
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()))
        .collect()
}

/// Add `O_DIRECT` to these descriptors; true when all took it.
fn set_direct(fds: &[i32]) -> bool {
    !fds.is_empty()
        && fds.iter().all(|&fd| {
            // SAFETY: fcntl on a descriptor of this process; F_GETFL/F_SETFL
            // only change its status flags.
            unsafe {
                let fl = libc::fcntl(fd, libc::F_GETFL);
                fl >= 0 && libc::fcntl(fd, libc::F_SETFL, fl | libc::O_DIRECT) == 0
            }
        })
}

/// A paced disk: the MPI library's own reads and writes of registered
/// descriptors take at least `bytes × seconds_per_byte`.
///
/// Open MPI's I/O component calls `pread`, `pwrite`, `preadv`, `pwritev`
/// and POSIX AIO (`aio_read`, `aio_error`) through the dynamic linker, so
/// the definitions below, exported from the app's executable (see
/// `apps/build.rs`), come first. Each forwards to libc's function
/// (`dlsym(RTLD_NEXT)`); for a registered descriptor it then waits until
/// the paced duration has passed since the call began, so the time falls
/// inside the MPI-IO call. A `pread` or `pwrite` that lasts 1 ms or more
/// paced goes to the real device in pieces spread over that time
/// (`spread`), so that the device is busy through it. The rank's disk is
/// one resource: transfers are served one after another (a write issued while a prefetch is in flight
/// starts when the prefetch ends). An asynchronous read (a prefetch)
/// reports "in progress" from `aio_error` until its paced completion time,
/// so what is not hidden by computation is spent inside `MPI_Wait`, as
/// MHETA eq. 2 has it. Unregistered descriptors pass straight through.
pub mod pace {
    use libc::{c_int, c_void, off_t, size_t, ssize_t};
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    const MAX_FD: usize = 4096;
    /// Seconds per byte (f64 bits) per descriptor; 0: not paced.
    static PACE: [AtomicU64; MAX_FD] = [const { AtomicU64::new(0) }; MAX_FD];
    /// Outstanding paced asynchronous requests: control block, completion time.
    static AIO: Mutex<Vec<(usize, Instant)>> = Mutex::new(Vec::new());
    /// When the emulated disk finishes the transfers already given to it.
    static FREE_AT: Mutex<Option<Instant>> = Mutex::new(None);

    pub(super) fn register(fd: c_int, seconds_per_byte: f64) {
        if let Some(p) = usize::try_from(fd).ok().and_then(|i| PACE.get(i)) {
            p.store(seconds_per_byte.to_bits(), Ordering::Relaxed);
        }
    }

    pub(super) fn unregister(fd: c_int) {
        register(fd, 0.0);
    }

    fn pace_of(fd: c_int) -> f64 {
        usize::try_from(fd)
            .ok()
            .and_then(|i| PACE.get(i))
            .map_or(0.0, |p| f64::from_bits(p.load(Ordering::Relaxed)))
    }

    /// Give the disk a transfer of `bytes` that arrived at `start`: its
    /// (begin, end), from when the disk is free, `bytes × pace` long.
    fn claim(start: Instant, bytes: isize, pace: f64) -> (Instant, Instant) {
        let mut free = FREE_AT.lock().unwrap_or_else(|e| e.into_inner());
        let begin = free.map_or(start, |f| f.max(start));
        let end = begin + Duration::from_secs_f64(bytes.max(0) as f64 * pace);
        *free = Some(end);
        (begin, end)
    }

    /// The disk is free from `t` (a claimed transfer ended early).
    fn free_at(t: Instant) {
        *FREE_AT.lock().unwrap_or_else(|e| e.into_inner()) = Some(t);
    }

    /// When a transfer that arrived at `start` ends ([`claim`]).
    fn deadline(start: Instant, bytes: isize, pace: f64) -> Instant {
        claim(start, bytes, pace).1
    }

    /// How long, paced, each piece of a spread transfer lasts.
    const PIECE_S: f64 = 0.5e-3;

    /// A paced transfer of `n` bytes, served by the real device in pieces
    /// of about [`PIECE_S`] each, one at the start of its share of the
    /// paced duration (a late piece does not delay the next): a slower
    /// disk is busy for the whole of a transfer, and a device left idle
    /// for the rest of it serves the next call slower (a 12 KiB direct
    /// read here: 86 us back to back, 148 us after 10 ms idle;
    /// docs/design/fidelity.md, "The paced disk's calls"). `one(done,
    /// len)` moves `len` bytes at `done` from the start (the pieces'
    /// lengths are multiples of 4 KiB, as direct I/O needs); the bytes
    /// moved, or the first piece's error.
    fn spread(n: size_t, pace: f64, mut one: impl FnMut(usize, usize) -> ssize_t) -> ssize_t {
        let start = Instant::now();
        let whole = n as f64 * pace;
        if whole < 2.0 * PIECE_S {
            let r = one(0, n);
            crate::emulate::wait_until(deadline(start, r, pace));
            return r;
        }
        let (begin, end) = claim(start, n as isize, pace);
        let step = (n / (whole / PIECE_S).ceil() as usize)
            .div_ceil(4096)
            .max(1)
            * 4096;
        let mut done = 0;
        while done < n {
            let at = begin + Duration::from_secs_f64(done as f64 * pace);
            let now = Instant::now();
            if at > now {
                std::thread::sleep(at - now);
            }
            let len = step.min(n - done);
            let r = one(done, len);
            if r < 0 && done == 0 {
                free_at(begin);
                return r;
            }
            done += r.max(0) as usize;
            if r < len as ssize_t {
                break;
            }
        }
        let end = if done < n {
            let short = begin + Duration::from_secs_f64(done as f64 * pace);
            free_at(short);
            short
        } else {
            end
        };
        crate::emulate::wait_until(end);
        done as ssize_t
    }

    /// libc's definition of `name`, looked up once.
    fn real(name: &std::ffi::CStr, cache: &AtomicUsize) -> usize {
        let f = cache.load(Ordering::Relaxed);
        if f != 0 {
            return f;
        }
        // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name only reads.
        let f = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) } as usize;
        assert!(f != 0, "libc has no {name:?}");
        cache.store(f, Ordering::Relaxed);
        f
    }

    macro_rules! paced_io {
        ($($name:ident($($arg:ident: $ty:ty),*) via $fd:ident;)*) => {$(
            #[unsafe(no_mangle)]
            /// Paced wrapper of libc's function of the same name (module docs).
            ///
            /// # Safety
            /// The caller's contract is libc's.
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> ssize_t {
                static REAL: AtomicUsize = AtomicUsize::new(0);
                let f = real(cstr(concat!(stringify!($name), "\0")), &REAL);
                // SAFETY: f is libc's function of this exact signature.
                let f: unsafe extern "C" fn($($ty),*) -> ssize_t = unsafe { std::mem::transmute(f) };
                let pace = pace_of($fd);
                let start = Instant::now();
                // SAFETY: forwarded with the caller's arguments.
                let r = unsafe { f($($arg),*) };
                if pace > 0.0 {
                    crate::emulate::wait_until(deadline(start, r, pace));
                }
                r
            }
        )*};
    }

    fn cstr(s: &'static str) -> &'static std::ffi::CStr {
        std::ffi::CStr::from_bytes_with_nul(s.as_bytes()).expect("NUL-terminated")
    }

    paced_io! {
        preadv(fd: c_int, iov: *const libc::iovec, cnt: c_int, off: off_t) via fd;
        pwritev(fd: c_int, iov: *const libc::iovec, cnt: c_int, off: off_t) via fd;
    }

    /// Paced and spread ([`spread`]) wrappers of libc's `pread` and
    /// `pwrite`, the calls Open MPI's I/O makes for a contiguous buffer.
    macro_rules! spread_io {
        ($($name:ident($buf:ty);)*) => {$(
            #[unsafe(no_mangle)]
            /// Paced wrapper of libc's function of the same name (module docs).
            ///
            /// # Safety
            /// The caller's contract is libc's.
            pub unsafe extern "C" fn $name(fd: c_int, buf: $buf, n: size_t, off: off_t) -> ssize_t {
                static REAL: AtomicUsize = AtomicUsize::new(0);
                let f = real(cstr(concat!(stringify!($name), "\0")), &REAL);
                // SAFETY: f is libc's function of this exact signature.
                let f: unsafe extern "C" fn(c_int, $buf, size_t, off_t) -> ssize_t =
                    unsafe { std::mem::transmute(f) };
                let pace = pace_of(fd);
                if pace <= 0.0 {
                    // SAFETY: forwarded with the caller's arguments.
                    return unsafe { f(fd, buf, n, off) };
                }
                spread(n, pace, |done, len| {
                    // SAFETY: `done + len <= n`: a part of the caller's
                    // buffer and of the file range it named.
                    unsafe { f(fd, (buf as *mut u8).add(done) as $buf, len, off + done as off_t) }
                })
            }
        )*};
    }

    spread_io! {
        pread(*mut c_void);
        pwrite(*const c_void);
    }

    #[cfg(test)]
    mod tests;

    #[unsafe(no_mangle)]
    /// Paced wrapper of libc's `aio_read` (module docs).
    ///
    /// # Safety
    /// The caller's contract is libc's.
    pub unsafe extern "C" fn aio_read(cb: *mut libc::aiocb) -> c_int {
        static REAL: AtomicUsize = AtomicUsize::new(0);
        let f = real(c"aio_read", &REAL);
        // SAFETY: f is libc's aio_read.
        let f: unsafe extern "C" fn(*mut libc::aiocb) -> c_int = unsafe { std::mem::transmute(f) };
        // SAFETY: cb is the caller's valid control block.
        let (fd, n) = unsafe { ((*cb).aio_fildes, (*cb).aio_nbytes) };
        let pace = pace_of(fd);
        let start = Instant::now();
        // SAFETY: forwarded.
        let r = unsafe { f(cb) };
        if pace > 0.0 && r == 0 {
            let mut q = AIO.lock().unwrap_or_else(|e| e.into_inner());
            q.retain(|&(c, _)| c != cb as usize);
            q.push((cb as usize, deadline(start, n as isize, pace)));
        }
        r
    }

    #[unsafe(no_mangle)]
    /// Paced wrapper of libc's `aio_error`: a paced read stays in progress
    /// until its paced completion time (module docs).
    ///
    /// # Safety
    /// The caller's contract is libc's.
    pub unsafe extern "C" fn aio_error(cb: *const libc::aiocb) -> c_int {
        static REAL: AtomicUsize = AtomicUsize::new(0);
        let f = real(c"aio_error", &REAL);
        // SAFETY: f is libc's aio_error.
        let f: unsafe extern "C" fn(*const libc::aiocb) -> c_int =
            unsafe { std::mem::transmute(f) };
        // SAFETY: forwarded.
        let r = unsafe { f(cb) };
        if r == libc::EINPROGRESS {
            return r;
        }
        let mut q = AIO.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = q.iter().position(|&(c, _)| c == cb as usize) {
            if Instant::now() < q[k].1 {
                return libc::EINPROGRESS;
            }
            q.swap_remove(k);
        }
        r
    }
}
