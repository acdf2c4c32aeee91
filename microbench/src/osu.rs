//! OSU's own method (`--osu-compat`): the loops of osu_latency and osu_bw
//! 7.4, with their buffers, so that the figures can be set beside the
//! reference benchmark's.
//!
//! What makes a loop OSU's, besides its iteration counts:
//! - **buffers**: one send and one receive buffer of the largest size,
//!   page-aligned (`posix_memalign`), allocated once and not written;
//!   before each size the send buffer's first `size` bytes are filled with
//!   `'a'` and the receive buffer's with `'b'` (`set_buffer_pt2pt`), so
//!   the pages are first touched size by size ([`PageBuf`]). A buffer
//!   that is never written maps the kernel's shared zero page (every send
//!   reads one 4 KiB page that stays in cache); one written whole at
//!   allocation gets its pages in one burst. Either way large messages
//!   measured faster than OSU's (docs/design/microbench.md);
//! - **order**: every size of the latency test, then every size of the
//!   bandwidth test (two programs in OSU), each size after a barrier;
//! - **timing**: each iteration is one round trip (or one window and its
//!   acknowledgement), timed alone; the times are summed (`t_total +=
//!   t_end - t_start`), so time between timed ones is not counted. OSU's
//!   warm-up round trips inside an iteration (`-u`) run only when it
//!   validates (`-c`), which these loops do not. The bandwidth test's
//!   acknowledgement is one byte, received into the receive buffer and
//!   sent from the send buffer.
//!
//! [`run`] takes OSU's counts where a size fits [`BUDGET_S`] (always on
//! shared memory) and fewer across a slow link, where OSU's own counts
//! take minutes a size; the windows stay 64.

use mheta_profile::cli::OsuTest;
use mpi::collective::CommunicatorCollectives;
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, Process, SimpleCommunicator};
use std::time::Instant;

/// OSU's switch between small- and large-message loop counts.
pub const LARGE: usize = 8192;
/// osu_bw's default window.
pub const WINDOW: usize = 64;
/// OSU's default largest message (`MAX_MESSAGE_SIZE`, 4 MiB).
pub const MAX_SIZE: usize = 1 << 22;

/// A page-aligned buffer, as OSU's `posix_memalign` at the page size
/// gives it: reserved once, its pages first touched when a size first
/// writes them (OSU's `set_buffer_pt2pt` writes `size` bytes before each
/// size, so a sweep faults its pages in size by size, between the MPI
/// library's own allocations). A buffer written whole at allocation gets
/// its pages in one burst, and messages of 64-512 KiB then measured
/// faster than OSU's (docs/design/microbench.md; why is not known).
/// Carved out of a `Vec` whose capacity is reserved and whose length
/// grows, so no unsafe code is needed and no page moves.
pub struct PageBuf {
    v: Vec<u8>,
    off: usize,
    len: usize,
}

impl PageBuf {
    /// `len` bytes at a page boundary, none written yet.
    pub fn new(len: usize) -> PageBuf {
        // SAFETY: sysconf only reads a system value.
        let page = (unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).max(4096) as usize;
        let mut v: Vec<u8> = Vec::with_capacity(len + page);
        let off = v.as_ptr().align_offset(page);
        v.resize(off, 0);
        PageBuf { v, off, len }
    }
    /// The first `n` bytes (at most the buffer's length); bytes never
    /// written before read as 0.
    pub fn get(&mut self, n: usize) -> &mut [u8] {
        let end = self.off + n.min(self.len);
        if self.v.len() < end {
            // Within the reserved capacity: the buffer does not move.
            self.v.resize(end, 0);
        }
        &mut self.v[self.off..end]
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
            s: PageBuf::new(max),
            r: PageBuf::new(max),
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

/// One round trip of osu_latency from `a`: send then receive on `a`,
/// receive then send on its peer.
fn round_trip(me: i32, a: i32, peer: &Process<'_>, bufs: &mut Buffers, size: usize) {
    if me == a {
        peer.send_with_tag(&bufs.s.get(size)[..], 1);
        peer.receive_into_with_tag(bufs.r.get(size), 1);
    } else {
        peer.receive_into_with_tag(bufs.r.get(size), 1);
        peer.send_with_tag(&bufs.s.get(size)[..], 1);
    }
}

/// One window of osu_bw from `a`: [`WINDOW`] nonblocking sends of the
/// send buffer completed by one `MPI_Waitall`, then a one-byte
/// acknowledgement received into the receive buffer, on `a`; as many
/// receives into the receive buffer completed by one `MPI_Waitall`, then
/// the acknowledgement sent from the send buffer, on its peer.
fn window(me: i32, a: i32, peer: &Process<'_>, bufs: &mut Buffers, size: usize) {
    if me == a {
        let s = &bufs.s.get(size)[..];
        mpi::request::multiple_scope(WINDOW, |sc, all| {
            for _ in 0..WINDOW {
                all.add(peer.immediate_send_with_tag(sc, s, 100));
            }
            all.wait_all(&mut Vec::with_capacity(WINDOW));
        });
        peer.receive_into_with_tag(&mut bufs.r.get(1)[..], 101);
    } else {
        let r = bufs.r.get(size);
        let (ptr, n) = (r.as_mut_ptr(), r.len());
        mpi::request::multiple_scope(WINDOW, |sc, all| {
            for _ in 0..WINDOW {
                // SAFETY: the window's receives all write the same bytes
                // (osu_bw's single buffer; the data is discarded); no Rust
                // code reads the buffer while they are pending.
                let s = unsafe { std::slice::from_raw_parts_mut(ptr, n) };
                all.add(peer.immediate_receive_into_with_tag(sc, s, 100));
            }
            all.wait_all(&mut Vec::with_capacity(WINDOW));
        });
        peer.send_with_tag(&bufs.s.get(1)[..], 101);
    }
}

/// One of OSU's iterations: `op` once, timed on `a`. OSU 7.4 runs
/// `warmup_validation + 1` round trips (windows) an iteration and times
/// the last, but `process_options` (c/util/osu_util.c) sets
/// `warmup_validation` to 0 unless it validates (`-c`): one, as here.
/// Returns the seconds on `a`, 0 elsewhere.
fn timed(me: i32, a: i32, op: impl FnOnce()) -> f64 {
    let t = Instant::now();
    op();
    if me == a {
        t.elapsed().as_secs_f64()
    } else {
        0.0
    }
}

/// How many iterations a loop runs: OSU's (timed, skipped) counts, or
/// as many as fit a budget of seconds ([`bounded`]).
#[derive(Clone, Copy)]
enum Counts {
    Fixed(usize, usize),
    Within((usize, usize), f64),
}

/// One of OSU's loops for one size between ranks `a` (which times) and
/// `b` of `comm`: both buffers filled and a barrier ([`begin`]), then
/// `op` ([`round_trip`] or [`window`]) `counts` times. Returns (total
/// timed seconds on `a`, timed iterations); `None` on a rank outside the
/// pair.
fn osu_loop(
    comm: &SimpleCommunicator,
    (a, b): (i32, i32),
    bufs: &mut Buffers,
    size: usize,
    counts: Counts,
    op: fn(i32, i32, &Process<'_>, &mut Buffers, usize),
) -> Option<(f64, usize)> {
    let me = comm.rank();
    let peer = begin(comm, a, b, bufs, size)?;
    let mut one = || timed(me, a, || op(me, a, &peer, bufs, size));
    Some(match counts {
        Counts::Fixed(iters, skip) => {
            for _ in 0..skip {
                one();
            }
            ((0..iters).map(|_| one()).sum(), iters)
        }
        Counts::Within(c, budget_s) => bounded(comm, a, &peer, c, budget_s, one),
    })
}

/// µs one way from a loop's (total seconds, round trips) on `a`.
fn one_way_us(me: i32, a: i32, (total, n): (f64, usize)) -> f64 {
    if me == a {
        total * 1e6 / (2.0 * n.max(1) as f64)
    } else {
        0.0
    }
}

/// Decimal MB/s from a loop's (total seconds, windows) on `a`.
fn window_mbps(me: i32, a: i32, size: usize, (total, n): (f64, usize)) -> f64 {
    if me == a {
        (size * WINDOW * n) as f64 / 1e6 / total.max(1e-12)
    } else {
        0.0
    }
}

/// osu_latency for one size between ranks `a` (which times) and `b` of
/// `comm`; every rank of `comm` calls it (it starts with a barrier). OSU
/// defaults: 10000 round trips and 100 skipped up to 8 KiB, 1000 and 10
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
    osu_loop(
        comm,
        (a, b),
        bufs,
        size,
        Counts::Fixed(iters, skip),
        round_trip,
    )
    .map_or(0.0, |r| one_way_us(comm.rank(), a, r))
}

/// osu_bw for one size from rank `a` (which sends and times) to rank `b`
/// of `comm`; every rank of `comm` calls it (it starts with a barrier).
/// Window of 64; 100 windows and 10 skipped up to 8 KiB, 20 and 2
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
/// windows (a bench that sets large moves beside it cannot afford OSU's
/// 22 windows of 64 × 128 MiB at every repetition).
pub fn bandwidth_with(
    comm: &SimpleCommunicator,
    a: i32,
    b: i32,
    bufs: &mut Buffers,
    size: usize,
    iters: usize,
    skip: usize,
) -> f64 {
    osu_loop(comm, (a, b), bufs, size, Counts::Fixed(iters, skip), window)
        .map_or(0.0, |r| window_mbps(comm.rank(), a, size, r))
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
/// counts fit it on shared memory (its slowest size, osu_latency's 1010
/// round trips of 4 MiB at about 0.4 ms each way, takes about 1 s
/// there), not across a slow link (at 200 Mbit/s osu_bw's 22 windows of
/// 64 × 4 MiB would move for about 4 minutes).
pub const BUDGET_S: f64 = 6.0;

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
    let counts = Counts::Within(latency_counts(size), budget_s);
    osu_loop(comm, (a, b), bufs, size, counts, round_trip)
        .map_or((0.0, 0), |r| (one_way_us(comm.rank(), a, r), r.1))
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
    let counts = Counts::Within(bandwidth_counts(size), budget_s);
    osu_loop(comm, (a, b), bufs, size, counts, window)
        .map_or((0.0, 0), |r| (window_mbps(comm.rank(), a, size, r), r.1))
}

/// OSU's tests between ranks `a` and `b` of `comm` (`only`: that one;
/// OSU runs each in a program of its own, and bandwidth loops run after
/// the latency loops in one process read faster than osu_bw on Open MPI:
/// docs/design/microbench.md), in OSU's order (every latency size, then
/// every bandwidth size), each size within
/// [`BUDGET_S`] (OSU's counts where they fit); every rank calls it. The
/// tables, and the timed iterations of each size, are meaningful on `a`.
pub fn run(comm: &SimpleCommunicator, a: i32, b: i32, max: usize, only: Option<OsuTest>) -> OsuRun {
    let mut bufs = Buffers::new(max);
    let mut out = OsuRun::default();
    for s in sizes(max)
        .into_iter()
        .filter(|_| only != Some(OsuTest::Bandwidth))
    {
        let (us, n) = latency_within(comm, a, b, &mut bufs, s, BUDGET_S);
        out.latency_us.push((s as u64, us));
        out.latency_iters.push((s as u64, n as u64));
    }
    for s in sizes(max)
        .into_iter()
        .filter(|_| only != Some(OsuTest::Latency))
    {
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
