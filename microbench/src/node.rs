//! Per-node measurements: CPU power from a reference kernel, the memory an
//! application may use, and disk per-call overheads and per-byte costs.

use mheta_profile::{DiskCost, SampleStats};
use std::io::Write as _;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::time::Instant;

/// One run of the reference kernel: a 3-point smoothing sweep over an
/// L1-resident array, 300 times (about a million flops of dependent
/// arithmetic), in seconds. Its result is kept so the work is not elided.
pub fn cpu_kernel() -> f64 {
    let mut a = [1.0f64; 2048];
    let t = Instant::now();
    for it in 0..300 {
        for i in 1..a.len() - 1 {
            a[i] = 0.25 * (a[i - 1] + 2.0 * a[i] + a[i + 1]) + 1e-9 * it as f64;
        }
    }
    std::hint::black_box(&a);
    t.elapsed().as_secs_f64()
}

/// Bytes [`copy_cost`] shifts: past the last-level cache of today's
/// nodes, as the rows a move keeps are.
pub const COPY_BYTES: usize = 32 << 20;

/// One shift of [`COPY_BYTES`] within a buffer by an eighth of its
/// length (an overlapping `memmove`, as a rank shifts the rows it keeps
/// when its block's first row changes), `reps` times after one untimed
/// shift that touches the pages. Returns seconds per byte of each.
pub fn copy_cost(reps: usize) -> Vec<f64> {
    let shift = COPY_BYTES / 8;
    let mut buf = vec![1u8; COPY_BYTES + shift];
    buf.copy_within(0..COPY_BYTES, shift);
    (0..reps)
        .map(|i| {
            let (from, to) = if i % 2 == 0 { (shift, 0) } else { (0, shift) };
            let t = Instant::now();
            buf.copy_within(from..from + COPY_BYTES, to);
            std::hint::black_box(&buf);
            t.elapsed().as_secs_f64() / COPY_BYTES as f64
        })
        .collect()
}

/// Distances [`shift_costs`] shifts by: from well inside a core's cache to
/// past it, a factor of 4 apart; the third is [`copy_cost`]'s eighth of
/// [`COPY_BYTES`].
pub const SHIFT_DISTANCES: [usize; 4] = [256 << 10, 1 << 20, 4 << 20, 16 << 20];

/// Shifts of [`COPY_BYTES`] by each of `distances` (`reps` each), as
/// [`copy_cost`]'s, but each in a region of its own out of a pool written
/// before the timing and together three times the last-level cache (at
/// most 512 MiB, and as many regions as shifts), the least recently used
/// next, so that
/// each shift reads and writes rows the cache has lost, as a move's shift
/// of the rows a rank keeps does (they were last touched an iteration
/// ago, with the rest of the rank's arrays). A shift through a buffer the
/// cache still holds runs faster, and a shift's rate falls with its
/// distance (it writes lines it has just read only while the distance is
/// inside the cache): on this development VM 9.2-9.7 GB/s by 128-512 KiB,
/// 7.3-7.7 by 4-8 MiB, 6.1 by 16 MiB from cold regions, 9.5-11 by 4 MiB
/// through one warm buffer. Returns, per distance, seconds per byte of
/// each shift.
pub fn shift_costs(reps: usize, distances: &[usize]) -> Vec<Vec<f64>> {
    let far = distances.iter().copied().max().unwrap_or(0);
    let region = COPY_BYTES + far;
    let shifts = reps.max(1) * distances.len();
    // At most 512 MiB (a cache reported larger than that is a host's,
    // shared with its other guests).
    let n = (3 * crate::net::last_level_cache_bytes())
        .min(512 << 20)
        .div_ceil(region)
        .clamp(1, shifts.max(1));
    let mut pool = vec![1u8; n * region];
    let mut next = 0;
    distances
        .iter()
        .map(|&d| {
            (0..reps)
                .map(|_| {
                    let at = (next % n) * region;
                    next += 1;
                    let buf = &mut pool[at..at + COPY_BYTES + d];
                    let t = Instant::now();
                    buf.copy_within(0..COPY_BYTES, d);
                    std::hint::black_box(&buf);
                    t.elapsed().as_secs_f64() / COPY_BYTES as f64
                })
                .collect()
        })
        .collect()
}

/// Backing [`COPY_BYTES`] of memory freshly mapped, `reps` times, as the
/// runtime's row buffers back the rows a move brings: a new anonymous
/// mapping at a 2 MiB boundary ([`FreshRegions`]), populated for writing
/// (`MADV_POPULATE_WRITE`: the page faults and the kernel's zeroing,
/// without the write). Returns seconds per byte of each; empty where the
/// kernel cannot populate (before Linux 5.14).
pub fn touch_cost(reps: usize) -> Vec<f64> {
    let mut regions = FreshRegions::default();
    let mut out = Vec::with_capacity(reps);
    for _ in 0..reps {
        let Some(p) = regions.map(COPY_BYTES) else {
            return Vec::new();
        };
        let t = Instant::now();
        if !populate(p, COPY_BYTES) {
            return Vec::new();
        }
        out.push(t.elapsed().as_secs_f64() / COPY_BYTES as f64);
    }
    out
}

/// Fresh anonymous mappings at 2 MiB boundaries, the last [`FRESH_RING`]
/// kept mapped (the rest unmapped; all when dropped), so that each new
/// one is backed with pages other than the ones just given back: a
/// mapping unmapped and at once mapped again gets its own pages back,
/// still in the cache, and backs them faster with each repeat (4.0 to
/// 7.1 GB/s over five on the development VM, 2026-12-05) than a move's
/// growth backs pages it never had (about 4 there). [`touch_cost`]
/// times their backing; the on-node copy's bench lands pieces in them
/// (`net::direct_copy`).
#[derive(Default)]
pub(crate) struct FreshRegions {
    live: std::collections::VecDeque<(std::ptr::NonNull<u8>, usize)>,
}

/// Mappings [`FreshRegions`] keeps at once: with [`COPY_BYTES`] each,
/// more than the last-level cache holds.
const FRESH_RING: usize = 4;

impl FreshRegions {
    /// A new mapping of `bytes`, not backed yet; None where it cannot be
    /// made.
    pub(crate) fn map(&mut self, bytes: usize) -> Option<std::ptr::NonNull<u8>> {
        if self.live.len() == FRESH_RING
            && let Some((p, len)) = self.live.pop_front()
        {
            unmap(p, len);
        }
        let p = mheta_base::os::map_aligned(bytes, 2 << 20).ok()?;
        self.live.push_back((p, bytes));
        Some(p)
    }
}

impl Drop for FreshRegions {
    fn drop(&mut self) {
        for (p, len) in self.live.drain(..) {
            unmap(p, len);
        }
    }
}

/// Unmaps a mapping of `len` bytes that [`FreshRegions::map`] made.
fn unmap(p: std::ptr::NonNull<u8>, len: usize) {
    // SAFETY: a mapping of `len` bytes made by `FreshRegions::map`, which
    // nothing else refers to, unmapped once (it left the ring).
    unsafe { libc::munmap(p.as_ptr().cast(), len) };
}

/// Backs the `bytes` of a mapping from [`FreshRegions::map`] for writing
/// (`MADV_POPULATE_WRITE`); false where the kernel cannot.
pub(crate) fn populate(p: std::ptr::NonNull<u8>, bytes: usize) -> bool {
    // SAFETY: advice over a live mapping of ours, inside its bounds; its
    // contents (zeros) stay as they are.
    unsafe { libc::madvise(p.as_ptr().cast(), bytes, libc::MADV_POPULATE_WRITE) == 0 }
}

/// Memory available to one of `local_ranks` ranks on this node: the
/// smaller of /proc/meminfo's MemAvailable and the cgroup's free limit,
/// divided among the node's ranks.
pub fn mem_available(local_ranks: usize) -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let avail = meminfo
        .lines()
        .find(|l| l.starts_with("MemAvailable:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|k| k.parse::<u64>().ok())
        .map(|k| k * 1024)
        .unwrap_or(0);
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
    };
    let cgroup = match (
        read("/sys/fs/cgroup/memory.max"),
        read("/sys/fs/cgroup/memory.current"),
    ) {
        (Some(max), Some(cur)) => Some(max.saturating_sub(cur)),
        _ => match (
            read("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
            read("/sys/fs/cgroup/memory/memory.usage_in_bytes"),
        ) {
            (Some(max), Some(cur)) if max < (1 << 60) => Some(max.saturating_sub(cur)),
            _ => None,
        },
    };
    let node = cgroup.map_or(avail, |c| c.min(avail));
    node / local_ranks.max(1) as u64
}

/// A buffer aligned for O_DIRECT.
struct Aligned {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl Aligned {
    fn new(len: usize) -> Aligned {
        let layout = std::alloc::Layout::from_size_align(len.max(4096), 4096).expect("layout");
        // SAFETY: non-zero size; freed in Drop with the same layout.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory");
        Aligned { ptr, layout }
    }

    fn slice(&mut self, len: usize) -> &mut [u8] {
        // SAFETY: ptr holds layout.size() >= len initialised bytes.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, len) }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

/// Per-call overhead and per-byte cost through the medians.
fn fit(points: &[(u64, SampleStats)]) -> (f64, f64) {
    let pts: Vec<(f64, f64)> = points.iter().map(|(b, d)| (*b as f64, d.p50)).collect();
    mheta_profile::line_fit(&pts).unwrap_or((pts.first().map_or(0.0, |p| p.1), 0.0))
}

/// Disk read and write costs in `dir`, per call, over a sweep of block
/// sizes. The page cache is bypassed with `O_DIRECT` where the file system
/// allows it; otherwise it is defeated: each write is followed by
/// `fdatasync` (timed with it), and before each read the file's cached
/// pages are dropped with `posix_fadvise(POSIX_FADV_DONTNEED)`.
pub fn disk(dir: &Path, sizes: &[usize], reps: usize) -> Result<DiskCost, String> {
    let path = dir.join(format!(".mheta-disk-{}.tmp", std::process::id()));
    let direct = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path);
    let (file, method) = match direct {
        Ok(f) => (f, "O_DIRECT"),
        Err(_) => {
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&path)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            (f, "buffered + fdatasync + posix_fadvise(DONTNEED)")
        }
    };
    let direct = method == "O_DIRECT";
    let big = sizes.iter().copied().max().unwrap_or(4096);
    let mut buf = Aligned::new(big);
    for (i, b) in buf.slice(big).iter_mut().enumerate() {
        *b = i as u8;
    }
    let mut read = Vec::new();
    let mut write = Vec::new();
    let result = (|| -> std::io::Result<()> {
        for &size in sizes {
            let mut w = Vec::with_capacity(reps);
            for r in 0..reps {
                let off = (r * size) as u64;
                let t = Instant::now();
                file.write_all_at(buf.slice(size), off)?;
                if !direct {
                    file.sync_data()?;
                }
                w.push(t.elapsed().as_secs_f64());
            }
            file.sync_all()?;
            let mut rd = Vec::with_capacity(reps);
            for r in 0..reps {
                let off = (r * size) as u64;
                if !direct {
                    use std::os::fd::AsRawFd;
                    // SAFETY: advising the kernel about our own open file.
                    unsafe {
                        libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED)
                    };
                }
                let t = Instant::now();
                file.read_exact_at(buf.slice(size), off)?;
                rd.push(t.elapsed().as_secs_f64());
            }
            write.push((size as u64, SampleStats::from_samples(&w)));
            read.push((size as u64, SampleStats::from_samples(&rd)));
        }
        Ok(())
    })();
    let _ = std::fs::remove_file(&path);
    result.map_err(|e| format!("{}: {e}", path.display()))?;
    let (ro, rb) = fit(&read);
    let (wo, wb) = fit(&write);
    let _ = std::io::stderr().flush();
    Ok(DiskCost {
        dir: dir.display().to_string(),
        method: method.into(),
        read_overhead_s: ro,
        read_per_byte_s: rb,
        write_overhead_s: wo,
        write_per_byte_s: wb,
        read,
        write,
    })
}
