//! OSU's own method (`--osu-compat`): the loops of osu_latency and osu_bw
//! 7.4, with their buffers, so that the figures can be set beside the
//! reference benchmark's.
//!
//! What makes a loop OSU's, besides its iteration counts:
//! - **buffers**: one send and one receive buffer of the largest size,
//!   page-aligned (`posix_memalign`), allocated once; before each size the
//!   send buffer is filled with `'a'` and the receive buffer with `'b'`
//!   (`set_buffer_pt2pt`). A buffer that is allocated zeroed and never
//!   written maps the kernel's shared zero page: every send then reads one
//!   4 KiB page that stays in cache, and large messages look faster
//!   than OSU's (docs/design/microbench.md);
//! - **order**: every size of the latency test, then every size of the
//!   bandwidth test (two programs in OSU), each size after a barrier;
//! - **timing**: each timed iteration is timed alone and the times are
//!   summed (`t_total += t_end - t_start`), so time between iterations is
//!   not counted; the bandwidth test's acknowledgement is one `MPI_CHAR`.
//!
//! [`run`] takes OSU's counts where a size fits [`BUDGET_S`] (always on
//! shared memory) and fewer across a slow link, where OSU's own counts
//! take minutes a size; the windows stay 64.

use mpi::collective::CommunicatorCollectives;
use mpi::point_to_point::{Destination, Source};
use mpi::request::WaitGuard;
use mpi::topology::{Communicator, Process, SimpleCommunicator};
use std::time::Instant;

/// OSU's switch between small- and large-message loop counts.
pub const LARGE: usize = 8192;
/// osu_bw's default window.
pub const WINDOW: usize = 64;
/// OSU's default largest message (`MAX_MESSAGE_SIZE`, 4 MiB).
pub const MAX_SIZE: usize = 1 << 22;

/// A page-aligned buffer (OSU allocates with `posix_memalign` at the page
/// size), carved out of a slightly larger `Vec` so no unsafe code is needed.
pub struct PageBuf {
    v: Vec<u8>,
    off: usize,
    len: usize,
}

impl PageBuf {
    /// `len` bytes at a page boundary, every byte written with `fill`.
    pub fn new(len: usize, fill: u8) -> PageBuf {
        // SAFETY: sysconf only reads a system value.
        let page = (unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).max(4096) as usize;
        let v = vec![fill; len + page];
        let off = v.as_ptr().align_offset(page);
        PageBuf { v, off, len }
    }
    /// The first `n` bytes.
    pub fn get(&mut self, n: usize) -> &mut [u8] {
        &mut self.v[self.off..self.off + n.min(self.len)]
    }
    /// OSU's `set_buffer_pt2pt`: write `c` over the first `n` bytes.
    pub fn set(&mut self, c: u8, n: usize) {
        self.get(n).fill(c);
    }
}

/// The two buffers of a pair's rank, as OSU allocates them once.
pub struct Buffers {
    pub s: PageBuf,
    pub r: PageBuf,
}

impl Buffers {
    pub fn new(max: usize) -> Buffers {
        Buffers {
            s: PageBuf::new(max, b'a'),
            r: PageBuf::new(max, b'b'),
        }
    }
}

/// OSU's start of one size: both buffers filled (`set_buffer_pt2pt`), a
/// barrier of `comm`, then this rank's peer in pair (a, b), `None` for a
/// rank outside the pair.
fn begin<'c>(
    comm: &'c SimpleCommunicator,
    a: i32,
    b: i32,
    bufs: &mut Buffers,
    size: usize,
) -> Option<Process<'c>> {
    bufs.s.set(b'a', size);
    bufs.r.set(b'b', size);
    comm.barrier();
    let me = comm.rank();
    let p = (me == a).then_some(b).or((me == b).then_some(a))?;
    Some(comm.process_at_rank(p))
}

/// osu_latency for one size between ranks `a` (which times) and `b` of
/// `comm`; every rank of `comm` calls it (it starts with a barrier). OSU
/// defaults: 10000 iterations and 100 skipped up to 8 KiB, 1000 and 10
/// above. Returns the latency in µs on rank `a`, 0 elsewhere.
pub fn latency(comm: &SimpleCommunicator, a: i32, b: i32, bufs: &mut Buffers, size: usize) -> f64 {
    let (iters, skip) = latency_counts(size);
    latency_with(comm, a, b, bufs, size, iters, skip)
}

/// [`latency`] with `iters` timed round trips after `skip` untimed ones.
pub fn latency_with(
    comm: &SimpleCommunicator,
    a: i32,
    b: i32,
    bufs: &mut Buffers,
    size: usize,
    iters: usize,
    skip: usize,
) -> f64 {
    let me = comm.rank();
    let Some(peer) = begin(comm, a, b, bufs, size) else {
        return 0.0;
    };
    let mut total = 0.0;
    for i in 0..iters + skip {
        if me == a {
            let t = Instant::now();
            peer.send_with_tag(&bufs.s.get(size)[..], 1);
            peer.receive_into_with_tag(bufs.r.get(size), 1);
            if i >= skip {
                total += t.elapsed().as_secs_f64();
            }
        } else {
            peer.receive_into_with_tag(bufs.r.get(size), 1);
            peer.send_with_tag(&bufs.s.get(size)[..], 1);
        }
    }
    total * 1e6 / (2.0 * iters as f64)
}

/// osu_bw for one size from rank `a` (which sends and times) to rank `b`
/// of `comm`; every rank of `comm` calls it (it starts with a barrier).
/// Window of 64; 100 iterations and 10 skipped up to 8 KiB, 20 and 2
/// above. Returns decimal MB/s on rank `a`, 0 elsewhere.
pub fn bandwidth(
    comm: &SimpleCommunicator,
    a: i32,
    b: i32,
    bufs: &mut Buffers,
    size: usize,
) -> f64 {
    let (iters, skip) = bandwidth_counts(size);
    bandwidth_with(comm, a, b, bufs, size, iters, skip)
}

/// osu_bw's loop for one size with `iters` timed and `skip` untimed
/// windows of 64 (a bench that sets large moves beside it cannot afford
/// OSU's 22 windows of 64 × 128 MiB at every repetition).
pub fn bandwidth_with(
    comm: &SimpleCommunicator,
    a: i32,
    b: i32,
    bufs: &mut Buffers,
    size: usize,
    iters: usize,
    skip: usize,
) -> f64 {
    let me = comm.rank();
    let Some(peer) = begin(comm, a, b, bufs, size) else {
        return 0.0;
    };
    let mut total = 0.0;
    let mut ack = [0u8; 1];
    for i in 0..iters + skip {
        if me == a {
            let t = Instant::now();
            let s = &bufs.s.get(size)[..];
            mpi::request::scope(|sc| {
                let _g: Vec<WaitGuard<[u8], _>> = (0..WINDOW)
                    .map(|_| WaitGuard::from(peer.immediate_send_with_tag(sc, s, 100)))
                    .collect();
            });
            peer.receive_into_with_tag(&mut ack[..], 101);
            if i >= skip {
                total += t.elapsed().as_secs_f64();
            }
        } else {
            let r = bufs.r.get(size);
            let (ptr, n) = (r.as_mut_ptr(), r.len());
            mpi::request::scope(|sc| {
                let _g: Vec<WaitGuard<[u8], _>> = (0..WINDOW)
                    .map(|_| {
                        // SAFETY: the window's receives all write the same
                        // bytes (osu_bw's single buffer; the data is
                        // discarded); no Rust code reads the buffer while
                        // they are pending.
                        let s = unsafe { std::slice::from_raw_parts_mut(ptr, n) };
                        WaitGuard::from(peer.immediate_receive_into_with_tag(sc, s, 100))
                    })
                    .collect();
            });
            peer.send_with_tag(&ack[..], 101);
        }
    }
    if me == a {
        (size * WINDOW * iters) as f64 / 1e6 / total.max(1e-12)
    } else {
        0.0
    }
}

/// The sizes OSU sweeps: 1 B to `max` (OSU's `-m`; its default is
/// [`MAX_SIZE`], 4 MiB), powers of two, and `max`.
pub fn sizes(max: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..usize::BITS)
        .map(|k| 1usize << k)
        .take_while(|&s| s <= max)
        .collect();
    if v.last() != Some(&max) {
        v.push(max);
    }
    v
}

/// osu_latency's (timed, skipped) round trips at `size`.
pub fn latency_counts(size: usize) -> (usize, usize) {
    if size > LARGE {
        (1000, 10)
    } else {
        (10000, 100)
    }
}

/// osu_bw's (timed, skipped) windows at `size`.
pub fn bandwidth_counts(size: usize) -> (usize, usize) {
    if size > LARGE { (20, 2) } else { (100, 10) }
}

/// Seconds each size of each OSU test may take in [`run`]: OSU's own
/// counts fit it on shared memory, not across a slow link (at 200 Mbit/s
/// osu_bw's 22 windows of 64 × 4 MiB move for four minutes).
pub const BUDGET_S: f64 = 3.0;

/// Counts decided by `a` (the rank that times) sent to its `peer`; both
/// return `a`'s `v`.
fn agree(comm: &SimpleCommunicator, a: i32, peer: &Process<'_>, v: usize) -> usize {
    if comm.rank() == a {
        peer.send_with_tag(&(v as u64), 102);
        v
    } else {
        let mut x = 0u64;
        peer.receive_into_with_tag(&mut x, 102);
        x as usize
    }
}

/// An OSU loop bounded by time: `skip` untimed then `iters` timed
/// iterations of `one` (which returns its time on `a`), summed as OSU
/// sums them. The first skipped iteration is timed on `a` to decide how
/// many more skipped ones fit in a fifth of `budget_s`, their median how
/// many timed ones fit in what is left (at least one); `a` sends each
/// count to its peer. Returns (total timed seconds, timed iterations).
fn bounded(
    comm: &SimpleCommunicator,
    a: i32,
    peer: &Process<'_>,
    (iters, skip): (usize, usize),
    budget_s: f64,
    mut one: impl FnMut() -> f64,
) -> (f64, usize) {
    let t0 = Instant::now();
    let first = one();
    let more = crate::budget::budgeted_count(skip.saturating_sub(1), 0, 0.2 * budget_s, first);
    let more = agree(comm, a, peer, more);
    let mut w = vec![first];
    for _ in 0..more {
        w.push(one());
    }
    w.sort_by(f64::total_cmp);
    let est = w[w.len() / 2];
    let left = budget_s - t0.elapsed().as_secs_f64();
    let n = agree(
        comm,
        a,
        peer,
        crate::budget::budgeted_count(iters, 1, left, est),
    );
    let total = (0..n).map(|_| one()).sum();
    (total, n)
}

/// [`latency`] within `budget_s` ([`bounded`]): (µs on rank `a`, 0
/// elsewhere; timed round trips).
pub fn latency_within(
    comm: &SimpleCommunicator,
    a: i32,
    b: i32,
    bufs: &mut Buffers,
    size: usize,
    budget_s: f64,
) -> (f64, usize) {
    let counts = latency_counts(size);
    let me = comm.rank();
    let Some(peer) = begin(comm, a, b, bufs, size) else {
        return (0.0, 0);
    };
    let (total, n) = bounded(comm, a, &peer, counts, budget_s, || {
        if me == a {
            let t = Instant::now();
            peer.send_with_tag(&bufs.s.get(size)[..], 1);
            peer.receive_into_with_tag(bufs.r.get(size), 1);
            t.elapsed().as_secs_f64()
        } else {
            peer.receive_into_with_tag(bufs.r.get(size), 1);
            peer.send_with_tag(&bufs.s.get(size)[..], 1);
            0.0
        }
    });
    (total * 1e6 / (2.0 * n.max(1) as f64), n)
}

/// [`bandwidth`] within `budget_s` ([`bounded`]; windows of 64 still):
/// (MB/s on rank `a`, 0 elsewhere; timed windows).
pub fn bandwidth_within(
    comm: &SimpleCommunicator,
    a: i32,
    b: i32,
    bufs: &mut Buffers,
    size: usize,
    budget_s: f64,
) -> (f64, usize) {
    let counts = bandwidth_counts(size);
    let me = comm.rank();
    let Some(peer) = begin(comm, a, b, bufs, size) else {
        return (0.0, 0);
    };
    let mut ack = [0u8; 1];
    let (total, n) = bounded(comm, a, &peer, counts, budget_s, || {
        if me == a {
            let t = Instant::now();
            let s = &bufs.s.get(size)[..];
            mpi::request::scope(|sc| {
                let _g: Vec<WaitGuard<[u8], _>> = (0..WINDOW)
                    .map(|_| WaitGuard::from(peer.immediate_send_with_tag(sc, s, 100)))
                    .collect();
            });
            peer.receive_into_with_tag(&mut ack[..], 101);
            t.elapsed().as_secs_f64()
        } else {
            let r = bufs.r.get(size);
            let (ptr, n) = (r.as_mut_ptr(), r.len());
            mpi::request::scope(|sc| {
                let _g: Vec<WaitGuard<[u8], _>> = (0..WINDOW)
                    .map(|_| {
                        // SAFETY: as in `bandwidth_with`: the window's
                        // receives all write the same discarded bytes.
                        let s = unsafe { std::slice::from_raw_parts_mut(ptr, n) };
                        WaitGuard::from(peer.immediate_receive_into_with_tag(sc, s, 100))
                    })
                    .collect();
            });
            peer.send_with_tag(&ack[..], 101);
            0.0
        }
    });
    let mbps = if me == a {
        (size * WINDOW * n) as f64 / 1e6 / total.max(1e-12)
    } else {
        0.0
    };
    (mbps, n)
}

/// Both OSU tests between ranks `a` and `b` of `comm`, in OSU's order
/// (every latency size, then every bandwidth size), each size within
/// [`BUDGET_S`] (OSU's counts where they fit); every rank calls it. The
/// tables, and the timed iterations of each size, are meaningful on `a`.
pub fn run(comm: &SimpleCommunicator, a: i32, b: i32, max: usize) -> OsuRun {
    let mut bufs = Buffers::new(max);
    let mut out = OsuRun::default();
    for s in sizes(max) {
        let (us, n) = latency_within(comm, a, b, &mut bufs, s, BUDGET_S);
        out.latency_us.push((s as u64, us));
        out.latency_iters.push((s as u64, n as u64));
    }
    for s in sizes(max) {
        let (mbps, n) = bandwidth_within(comm, a, b, &mut bufs, s, BUDGET_S);
        out.bandwidth_mbps.push((s as u64, mbps));
        out.bandwidth_iters.push((s as u64, n as u64));
    }
    out
}

/// What [`run`] measured: latency (µs) and bandwidth (MB/s) per size, and
/// the timed iterations (round trips, windows) each size took.
#[derive(Default, Debug, Clone)]
pub struct OsuRun {
    pub latency_us: Vec<(u64, f64)>,
    pub bandwidth_mbps: Vec<(u64, f64)>,
    pub latency_iters: Vec<(u64, u64)>,
    pub bandwidth_iters: Vec<(u64, u64)>,
}
