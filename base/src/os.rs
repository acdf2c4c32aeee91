//! What mheta reads from and asks of the operating system: the host's
//! name, the cores a process may run on, pinning to a core, the CPU
//! clocks, the scheduler's account of a thread (schedstat), fresh
//! memory mappings at a huge-page boundary, and copies to and from another
//! process's memory (CMA: `process_vm_writev`, `process_vm_readv`).

use std::io;

/// This node's host name: inside an emulated host's network namespace (UTS
/// namespace) its own name; empty when it cannot be read.
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buf is writable for its full length; gethostname writes at
    // most that many bytes.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

fn clock_s(clock: libc::clockid_t) -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// CPU time of the calling thread, seconds (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu_s() -> f64 {
    clock_s(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time of the whole process, seconds (`CLOCK_PROCESS_CPUTIME_ID`).
pub fn process_cpu_s() -> f64 {
    clock_s(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// The calling thread's kernel task id.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// The scheduler's account of one thread (`/proc/thread-self/schedstat`):
/// its CPU time, its time runnable but waiting for a core (run-queue
/// delay), and how many times it ran, since the thread started.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Schedstat {
    pub cpu_s: f64,
    pub runq_wait_s: f64,
    pub timeslices: u64,
}

impl Schedstat {
    /// What the thread got between `earlier` and `self`.
    pub fn since(&self, earlier: &Schedstat) -> Schedstat {
        Schedstat {
            cpu_s: self.cpu_s - earlier.cpu_s,
            runq_wait_s: self.runq_wait_s - earlier.runq_wait_s,
            timeslices: self.timeslices.saturating_sub(earlier.timeslices),
        }
    }

    /// Parse the three fields of a `schedstat` file (nanoseconds,
    /// nanoseconds, count).
    pub fn parse(text: &str) -> Option<Schedstat> {
        let mut f = text.split_whitespace().map(|x| x.parse::<u64>().ok());
        let (cpu, wait, slices) = (f.next()??, f.next()??, f.next()??);
        Some(Schedstat {
            cpu_s: cpu as f64 * 1e-9,
            runq_wait_s: wait as f64 * 1e-9,
            timeslices: slices,
        })
    }
}

/// The calling thread's [`Schedstat`]; `None` where the kernel has no
/// schedstats (CONFIG_SCHEDSTATS off) or `/proc` is not mounted.
pub fn thread_schedstat() -> Option<Schedstat> {
    Schedstat::parse(&std::fs::read_to_string("/proc/thread-self/schedstat").ok()?)
}

/// The calling thread's schedstat file, kept open and read again from
/// offset 0 at each reading: no path lookup, open or close per reading
/// (one `pread`; `thread_schedstat` costs tens of microseconds on a
/// guest with slow system calls). The readings are those of the thread
/// that opened it, whichever thread reads.
pub struct SchedstatReader {
    file: std::fs::File,
}

impl SchedstatReader {
    /// Open the calling thread's file; `None` as for [`thread_schedstat`].
    pub fn open() -> Option<SchedstatReader> {
        let r = SchedstatReader {
            file: std::fs::File::open("/proc/thread-self/schedstat").ok()?,
        };
        r.read()?;
        Some(r)
    }

    /// The thread's [`Schedstat`] now.
    pub fn read(&self) -> Option<Schedstat> {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 128];
        let n = self.file.read_at(&mut buf, 0).ok()?;
        Schedstat::parse(std::str::from_utf8(&buf[..n]).ok()?)
    }
}

fn one_core(core: usize) -> io::Result<libc::cpu_set_t> {
    if core >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("core {core} is out of range"),
        ));
    }
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET stays in bounds
    // (checked above).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(core, &mut set);
        Ok(set)
    }
}

fn set_affinity(tid: i32, core: usize) -> io::Result<()> {
    let set = one_core(core)?;
    // SAFETY: sched_setaffinity reads the set we own, of the size we pass.
    let rc = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("pin to core {core}: {e}")));
    }
    Ok(())
}

/// Pin the calling thread, and the threads it starts from now on, to
/// `core` (`sched_setaffinity(0, ...)`).
pub fn pin_to_core(core: usize) -> io::Result<()> {
    set_affinity(0, core)
}

/// Pin every thread of this process (helper threads an MPI library
/// started too) and the calling thread to `core`. The other threads are
/// pinned where the kernel lets us; the calling thread's result is
/// returned.
pub fn pin_process_to_core(core: usize) -> io::Result<()> {
    let tids: Vec<i32> = std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    for t in tids {
        let _ = set_affinity(t, core);
    }
    pin_to_core(core)
}

/// The cores this process may run on (empty when the kernel will not say).
pub fn allowed_cores() -> Vec<usize> {
    // SAFETY: sched_getaffinity fills the set we own; CPU_ISSET reads it
    // within CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// A fresh private anonymous mapping of `bytes` at an address that is a
/// multiple of `align` (a power of two, e.g. a huge page's 2 MiB): maps
/// `align` more, then unmaps the ends. Readable and writable, backed only
/// where touched (`MAP_NORESERVE`); the caller owns it and unmaps it with
/// `munmap(ptr, bytes)`.
pub fn map_aligned(bytes: usize, align: usize) -> io::Result<std::ptr::NonNull<u8>> {
    let over = bytes + align;
    // SAFETY: a new private anonymous mapping; nothing else refers to it.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            over,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let start = p as usize;
    let a = start.next_multiple_of(align);
    // SAFETY: both ranges lie inside the mapping just made and are unused.
    unsafe {
        if a > start {
            libc::munmap(p, a - start);
        }
        let tail = start + over - (a + bytes);
        if tail > 0 {
            libc::munmap((a + bytes) as *mut libc::c_void, tail);
        }
    }
    std::ptr::NonNull::new(a as *mut u8).ok_or_else(|| io::Error::other("mmap returned null"))
}

/// Copy `src` of this process to address `at` of process `pid`
/// (`process_vm_writev`, looping over partial copies). The kernel checks
/// the remote range (EFAULT) and the right to write there (EPERM under
/// Yama's `ptrace_scope` or in another PID namespace); nothing of this
/// process is written.
pub fn write_to_process(pid: libc::pid_t, src: &[u8], at: u64) -> io::Result<()> {
    cross_copy(pid, src.as_ptr().cast_mut(), src.len(), at, true)
}

/// Copy from address `at` of process `pid` into `dst`
/// (`process_vm_readv`, looping over partial copies); checked by the
/// kernel as [`write_to_process`] is.
pub fn read_from_process(pid: libc::pid_t, dst: &mut [u8], at: u64) -> io::Result<()> {
    cross_copy(pid, dst.as_mut_ptr(), dst.len(), at, false)
}

/// `len` bytes between `local` here and `at` in process `pid`: written
/// there when `write`, else read from there.
fn cross_copy(
    pid: libc::pid_t,
    local: *mut u8,
    len: usize,
    at: u64,
    write: bool,
) -> io::Result<()> {
    let mut done = 0;
    while done < len {
        let here = libc::iovec {
            // SAFETY: `done < len`, inside the caller's slice.
            iov_base: unsafe { local.add(done) }.cast(),
            iov_len: len - done,
        };
        let there = libc::iovec {
            iov_base: (at as usize + done) as *mut libc::c_void,
            iov_len: len - done,
        };
        // SAFETY: the local range is the caller's live slice (only read
        // when writing there, written only when reading from there, as
        // the two public functions borrow it); the remote range is the
        // other process's, checked by the kernel (EFAULT), never ours.
        let n = unsafe {
            if write {
                libc::process_vm_writev(pid, &here, 1, &there, 1, 0)
            } else {
                libc::process_vm_readv(pid, &here, 1, &there, 1, 0)
            }
        };
        if n <= 0 {
            return Err(io::Error::last_os_error());
        }
        done += n as usize;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_schedstat_file_reads_the_thread_afresh() {
        let Some(r) = SchedstatReader::open() else {
            // No schedstats on this kernel: nothing to read.
            assert!(thread_schedstat().is_none());
            return;
        };
        let a = r.read().unwrap();
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed().as_secs_f64() < 0.02 {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        std::hint::black_box(x);
        let b = r.read().unwrap();
        // 20 ms of spinning shows in the kept file's second reading, as
        // in a fresh one.
        assert!(b.cpu_s - a.cpu_s >= 0.01, "{a:?} then {b:?}");
        let c = thread_schedstat().unwrap();
        assert!(
            c.cpu_s >= b.cpu_s && c.cpu_s - b.cpu_s < 0.01,
            "{b:?} then {c:?}"
        );
    }

    #[test]
    fn clocks_advance_and_pinning_checks_its_core() {
        let t0 = thread_cpu_s();
        let mut x = 0u64;
        while thread_cpu_s() - t0 < 0.002 {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        assert!(process_cpu_s() >= thread_cpu_s() - t0);
        assert!(gettid() > 0);
        assert!(pin_to_core(libc::CPU_SETSIZE as usize).is_err());
        let cores = allowed_cores();
        assert!(!cores.is_empty());
    }

    #[test]
    fn schedstat_parses_and_counts_this_threads_cpu() {
        let s = Schedstat::parse("2000000000 500000000 42\n");
        assert_eq!(
            s,
            Some(Schedstat {
                cpu_s: 2.0,
                runq_wait_s: 0.5,
                timeslices: 42
            })
        );
        assert_eq!(Schedstat::parse("12 x 3"), None);
        assert_eq!(Schedstat::parse("12 3"), None);
        // On a kernel with schedstats, a spin of 20 ms of CPU shows in it.
        if let Some(a) = thread_schedstat() {
            let t0 = thread_cpu_s();
            while thread_cpu_s() - t0 < 0.02 {
                std::hint::spin_loop();
            }
            let d = thread_schedstat().map(|b| b.since(&a)).unwrap_or_default();
            // A thread that kept its core gets no new timeslice; the CPU
            // time is what must show.
            assert!(d.cpu_s >= 0.019 && d.runq_wait_s >= 0.0, "{d:?}");
        }
    }
}
