//! Point-to-point measurements of one ordered pair, and OSU's loops.

use crate::budget::{self, StreamCounts, budgeted_count};
use mheta_profile::{SampleStats, ModeChoice, PairCost, SizePoint, fit_segments};
use mpi::point_to_point::{Destination, Source};
use mpi::request::WaitGuard;
use mpi::topology::{Communicator, Process, SimpleCommunicator};
use std::time::{Duration, Instant};

const TAG: i32 = 0x4d42;
/// Window of non-blocking sends in a bandwidth measurement (as osu_bw).
pub const WINDOW: usize = 64;
/// OSU's switch between small- and large-message loop counts.
pub const LARGE: usize = 8192;

/// How much to measure: nominal counts (what a pair on shared memory
/// takes), and the time budgets that bound them on a slow pair.
pub struct Effort {
    pub sizes: Vec<usize>,
    pub reps_small: usize,
    pub reps_medium: usize,
    pub reps_large: usize,
    /// o_s and o_r samples per round.
    pub overhead_reps: usize,
    pub bw_iters_small: usize,
    pub bw_iters_large: usize,
    /// Streams per size; the bandwidth is their median.
    pub bw_repeats: usize,
    /// Interleaved rounds of the small figures (o_s, o_r, 8-byte ping-pong).
    pub rounds: usize,
    /// 8-byte ping-pongs per round.
    pub pp_per_round: usize,
    /// Seconds of the sweep (ping-pongs and streams) per size of weight 1
    /// ([`budget::size_weight`]); each size gets its share of what is
    /// left ([`budget::share`]), so time that fast sizes do not use goes
    /// to the slow ones.
    pub sweep_s_per_size: f64,
    /// Timed round trips a size keeps however long they take.
    pub min_reps: usize,
    /// Seconds of the cold-buffer round trips ([`cold_one_way_within`]).
    pub cold_s: f64,
    /// Seconds of the interleaved small figures (o_s, o_r, 8 B one-way).
    pub small_s: f64,
    /// Seconds after which the eager-limit probe gives up ([`eager_limit`]).
    pub eager_s: f64,
}

impl Effort {
    pub fn new(quick: bool) -> Effort {
        if quick {
            Effort {
                sizes: vec![1, 8, 64, 512, 4096, 8192, 65536, 1 << 20, 4 << 20],
                reps_small: 200,
                reps_medium: 50,
                reps_large: 10,
                overhead_reps: 40,
                bw_iters_small: 20,
                bw_iters_large: 3,
                bw_repeats: 3,
                rounds: 5,
                pp_per_round: 100,
                sweep_s_per_size: 0.5,
                min_reps: 2,
                cold_s: 0.5,
                small_s: 1.0,
                eager_s: 3.0,
            }
        } else {
            Effort {
                sizes: (0..=22).map(|k| 1usize << k).collect(),
                reps_small: 2000,
                reps_medium: 200,
                reps_large: 50,
                overhead_reps: 100,
                bw_iters_small: 100,
                bw_iters_large: 20,
                bw_repeats: 5,
                rounds: 15,
                pp_per_round: 200,
                sweep_s_per_size: 1.0,
                min_reps: 5,
                cold_s: 3.0,
                small_s: 4.0,
                eager_s: 6.0,
            }
        }
    }

    /// The sweep's sizes up to `max` bytes, as OSU's `-m`: the default
    /// sizes not above it, then powers of two past the default's largest
    /// (4 MiB) and `max` itself. Sizes past 4 MiB take fewer ping-pongs
    /// and streams ([`Effort::reps`], [`Effort::bw_iters`]) so that each moves
    /// about what one at 4 MiB does.
    pub fn up_to(mut self, max: usize) -> Effort {
        let top = self.largest();
        self.sizes.retain(|&s| s <= max);
        let mut s = top * 2;
        while s < max {
            self.sizes.push(s);
            s *= 2;
        }
        if self.sizes.last() != Some(&max) {
            self.sizes.push(max);
        }
        self
    }

    fn reps(&self, size: usize) -> usize {
        if size <= LARGE {
            self.reps_small
        } else if size <= 65536 {
            self.reps_medium
        } else if size <= 4 << 20 {
            self.reps_large
        } else {
            (self.reps_large * (4 << 20) / size).max(3)
        }
    }

    /// Timed and skipped windows of one stream at `size`.
    fn bw_iters(&self, size: usize) -> (usize, usize) {
        if size <= LARGE {
            (self.bw_iters_small, self.bw_iters_small / 10 + 1)
        } else if size <= 4 << 20 {
            (self.bw_iters_large, 1)
        } else {
            ((self.bw_iters_large * (4 << 20) / size).max(2), 1)
        }
    }

    pub fn largest(&self) -> usize {
        self.sizes.iter().copied().max().unwrap_or(8)
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Cost of one timer reading: the median of 1001 back-to-back differences
/// (seconds). Every timed sample includes one such reading.
pub fn timer_cost() -> f64 {
    let mut v: Vec<f64> = (0..1001)
        .map(|_| {
            let t = Instant::now();
            t.elapsed().as_secs_f64()
        })
        .collect();
    median(&mut v)
}

fn spin(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// Stay out of MPI for `d`: spinning up to [`EAGER_QUIET`] (as long as
/// shared memory needs), sleeping beyond it so that a longer quiet leaves
/// the core to the ranks that share it.
fn idle(d: Duration) {
    if d <= EAGER_QUIET {
        spin(d);
    } else {
        std::thread::sleep(d);
    }
}

/// Counts decided by `a` (the rank that times), sent to `b`: both ranks
/// return `a`'s `v`.
fn agree(world: &SimpleCommunicator, a: i32, b: i32, v: &[u64]) -> Vec<u64> {
    if world.rank() == a {
        world.process_at_rank(b).send_with_tag(v, TAG);
        v.to_vec()
    } else {
        let mut out = vec![0u64; v.len()];
        world
            .process_at_rank(a)
            .receive_into_with_tag(&mut out[..], TAG);
        out
    }
}

/// One round trip of `size` bytes a -> b -> a; its time on `a` (0 on `b`).
fn round_trip(
    world: &SimpleCommunicator,
    a: i32,
    b: i32,
    sbuf: &[u8],
    buf: &mut [u8],
    size: usize,
) -> f64 {
    if world.rank() == a {
        let pb = world.process_at_rank(b);
        let t = Instant::now();
        pb.send_with_tag(&sbuf[..size], TAG);
        pb.receive_into_with_tag(&mut buf[..size], TAG);
        t.elapsed().as_secs_f64()
    } else {
        let pa = world.process_at_rank(a);
        pa.receive_into_with_tag(&mut buf[..size], TAG);
        pa.send_with_tag(&sbuf[..size], TAG);
        0.0
    }
}

/// Ping-pong of `size` bytes: `warm` untimed round trips, then `reps`
/// timed ones, of which `a` keeps RTT/2 (empty on `b`). Within
/// `budget_s`: the first round trip is timed to decide how many of the
/// other warm-ups fit in a fifth of the budget, the median warm-up to
/// decide how many timed ones fit in what is left (at least `min_reps`).
#[allow(clippy::too_many_arguments)]
fn ping_pong(
    world: &SimpleCommunicator,
    a: i32,
    b: i32,
    sbuf: &[u8],
    buf: &mut [u8],
    size: usize,
    (warm, reps, min_reps): (usize, usize, usize),
    budget_s: f64,
) -> Vec<f64> {
    let t0 = Instant::now();
    let first = round_trip(world, a, b, sbuf, buf, size);
    let more = budgeted_count(warm.saturating_sub(1), 0, 0.2 * budget_s, first);
    let more = agree(world, a, b, &[more as u64])[0] as usize;
    let mut w = vec![first];
    for _ in 0..more {
        w.push(round_trip(world, a, b, sbuf, buf, size));
    }
    let left = budget_s - t0.elapsed().as_secs_f64();
    let n = budgeted_count(reps, min_reps, left, median(&mut w));
    let n = agree(world, a, b, &[n as u64])[0] as usize;
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let t = round_trip(world, a, b, sbuf, buf, size);
        if world.rank() == a {
            samples.push(t / 2.0);
        }
    }
    samples
}

/// `MHETA_DEBUG_COUNTS` set: the counts each loop took go to stderr.
fn debug_counts() -> bool {
    std::env::var_os("MHETA_DEBUG_COUNTS").is_some()
}

/// Streaming bandwidth from `a` to `b` in decimal MB/s (windows of
/// `window` non-blocking sends, then a 4-byte acknowledgement).
fn stream(
    world: &SimpleCommunicator,
    a: i32,
    b: i32,
    buf: &mut [u8],
    (window, iters, skip): (usize, usize, usize),
) -> f64 {
    let me = world.rank();
    let size = buf.len();
    let (pa, pb) = (world.process_at_rank(a), world.process_at_rank(b));
    let mut ack = [0u8; 4];
    let mut t0 = Instant::now();
    for i in 0..iters + skip {
        if i == skip {
            t0 = Instant::now();
        }
        if me == a {
            mpi::request::scope(|sc| {
                let _g: Vec<WaitGuard<[u8], _>> = (0..window)
                    .map(|_| WaitGuard::from(pb.immediate_send_with_tag(sc, &buf[..], TAG)))
                    .collect();
            });
            pb.receive_into_with_tag(&mut ack[..], TAG);
        } else {
            // All receives land in one buffer, as osu_bw's do.
            let ptr = buf.as_mut_ptr();
            mpi::request::scope(|sc| {
                let _g: Vec<WaitGuard<[u8], _>> = (0..window)
                    .map(|_| {
                        // SAFETY: the window's receives write the same bytes
                        // (the data is discarded, as in osu_bw); no Rust code
                        // reads the buffer while they are pending.
                        let s = unsafe { std::slice::from_raw_parts_mut(ptr, size) };
                        WaitGuard::from(pa.immediate_receive_into_with_tag(sc, s, TAG))
                    })
                    .collect();
            });
            pa.send_with_tag(&ack[..], TAG);
        }
    }
    let secs = t0.elapsed().as_secs_f64().max(1e-12);
    (size * window * iters) as f64 / 1e6 / secs
}

/// The streaming bandwidth at `buf.len()` bytes (MB/s, the median of the
/// streams; meaningful on `a`), `nominal` counts within `budget_s`. A
/// message of this size took `per_msg_s` one way in the ping-pong (on
/// `a`): a window holds at most what takes a quarter of the budget, but
/// never less than what spans 64 of the pair's small round trips `rtt_s`
/// ([`budget::stream_window`]; fewer, longer windows measure a slow or far
/// link better than many short ones, each of which ends in a handshake); one
/// window is sent and timed, then the streams are cut to fit
/// ([`budget::stream_counts`]).
fn bandwidth(
    world: &SimpleCommunicator,
    a: i32,
    b: i32,
    buf: &mut [u8],
    nominal: StreamCounts,
    (per_msg_s, rtt_s): (f64, f64),
    budget_s: f64,
) -> f64 {
    let window = budget::stream_window(nominal.window, per_msg_s, budget_s / 4.0, rtt_s);
    let window = agree(world, a, b, &[window as u64])[0] as usize;
    let t = Instant::now();
    stream(world, a, b, buf, (window, 1, 0));
    let w_s = t.elapsed().as_secs_f64();
    let c = budget::stream_counts(StreamCounts { window, ..nominal }, w_s, budget_s - w_s);
    let v = agree(
        world,
        a,
        b,
        &[c.iters as u64, c.skip as u64, c.repeats as u64],
    );
    let (iters, skip, repeats) = (v[0] as usize, v[1] as usize, v[2] as usize);
    if world.rank() == a && debug_counts() {
        eprintln!(
            "mheta-microbench: {a}->{b} {} B: {repeats} streams of {skip}+{iters} windows of {window} (a window took {:.6} s)",
            buf.len(),
            w_s
        );
    }
    // The median of several streams: one stream is easily disturbed.
    let mut bws: Vec<f64> = (0..repeats)
        .map(|_| stream(world, a, b, buf, (window, iters, skip)))
        .collect();
    median(&mut bws)
}

/// Bytes of the largest CPU cache (sysfs; 32 MiB when it cannot be read).
pub fn last_level_cache_bytes() -> usize {
    let parse = |t: &str| -> Option<usize> {
        let t = t.trim();
        let (n, mult) = match t.chars().last()? {
            'K' => (&t[..t.len() - 1], 1 << 10),
            'M' => (&t[..t.len() - 1], 1 << 20),
            'G' => (&t[..t.len() - 1], 1 << 30),
            _ => (t, 1),
        };
        n.parse::<usize>().ok().map(|n| n * mult)
    };
    (0..8)
        .filter_map(|i| {
            std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu0/cache/index{i}/size"))
                .ok()
                .and_then(|t| parse(&t))
        })
        .max()
        .unwrap_or(32 << 20)
}

/// One-way time of a `size`-byte message between buffers out of the
/// cache, a -> b, seconds (median of half round trips; on rank `a`, 0 on
/// `b`); both ranks call it. Each rank cycles its sends and receives
/// through pools of `size`-byte regions, together at least three times the
/// last-level cache shared by this node's ranks, written before the
/// timing, so that every message reads a region the cache has lost since
/// it was last touched and lands in another. A redistribution moves rows
/// like that; `bandwidth_bps`'s stream resends one cached buffer.
/// Unbounded in time: [`cold_one_way_within`] with no budget.
pub fn cold_one_way(world: &SimpleCommunicator, a: i32, b: i32, size: usize) -> f64 {
    cold_one_way_within(world, a, b, size, f64::INFINITY, 3, 0.0)
}

/// [`cold_one_way`] within `budget_s` when a round trip takes about
/// `trip_s` (known on `a`; 0: unknown): three passes through the pools
/// when they fit, else as many round trips as fit, at least
/// `min_samples` (`a` decides and tells `b`). A rank whose pools hold
/// more regions than the round trips use writes only those it uses (one
/// more than the round trips): on a link slow enough to cut the count the
/// transfer, not the cache, sets the time.
pub fn cold_one_way_within(
    world: &SimpleCommunicator,
    a: i32,
    b: i32,
    size: usize,
    budget_s: f64,
    min_samples: usize,
    trip_s: f64,
) -> f64 {
    let me = world.rank();
    let (pa, pb) = (world.process_at_rank(a), world.process_at_rank(b));
    let local: usize = std::env::var("OMPI_COMM_WORLD_LOCAL_SIZE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1);
    let want = 3 * last_level_cache_bytes() / local;
    // Regions per pool (one pool to send from, one to receive into).
    let n = want.div_ceil(2 * size).max(2);
    let timed = budgeted_count(3 * n, min_samples.max(1), budget_s, trip_s);
    let timed = agree(world, a, b, &[timed as u64])[0] as usize;
    let n = n.min(timed + 1);
    let sp = vec![3u8; n * size];
    let mut rp = vec![4u8; n * size];
    // A one-byte round trip waits for both ranks' pools to be written.
    let mut one = [0u8; 1];
    round_trip(world, a, b, &[5u8], &mut one, 1);
    if me == a && debug_counts() {
        eprintln!(
            "mheta-microbench: {a}->{b} cold {size} B: {timed} round trips (about {trip_s:.6} s each), {n} regions a pool"
        );
    }
    let mut samples = Vec::with_capacity(timed);
    for r in 1..=timed {
        let k = (r % n) * size;
        if me == a {
            let t = Instant::now();
            pb.send_with_tag(&sp[k..k + size], TAG);
            pb.receive_into_with_tag(&mut rp[k..k + size], TAG);
            samples.push(t.elapsed().as_secs_f64() / 2.0);
        } else {
            pa.receive_into_with_tag(&mut rp[k..k + size], TAG);
            pa.send_with_tag(&sp[k..k + size], TAG);
        }
    }
    if me == a { median(&mut samples) } else { 0.0 }
}

/// How long the eager-limit probe's sender tests its send for completion,
/// while the receiver stays out of MPI for [`EAGER_QUIET`] (the least of
/// each; [`budget::eager_times`] lengthens them on a slow pair).
const EAGER_HOLD: Duration = Duration::from_micros(250);
const EAGER_QUIET: Duration = Duration::from_micros(1000);
/// Probes of each size in [`eager_limit`].
const EAGER_PROBES: usize = 3;
/// Takes of one probe before [`eager_limit`] gives up.
const EAGER_TRIES: usize = 8;

/// The largest message, in bytes, that `a` can send to `b` and see
/// complete before `b` has posted its receive: the MPI library's eager
/// limit for the pair (above it, the sender always waits for the
/// receiver). Both ranks call it, each with its pair's send and receive
/// buffers (the sizes probed go up to the shorter); the result is on `a`
/// (None on `b`); `u64::MAX` when every size probed completed.
///
/// Each probe: `a` tells `b` the size and the quiet, `b` answers
/// (synchronously: the answer has reached `a` when `b` goes on) and then
/// stays out of MPI for the quiet (it spins, or sleeps when the quiet is
/// longer than [`EAGER_QUIET`], so nothing can progress a receive on its
/// side), `a` waits a small round trip, posts a non-blocking send of that
/// size and tests it for the hold. A send that completes then went to a
/// buffer; any other cannot complete until `b` takes it. The hold and
/// quiet scale with the pair: at least [`EAGER_HOLD`] and
/// [`EAGER_QUIET`], the hold four one-way times of the size (`one_way`,
/// from the sweep) and the quiet the hold and eight small round trips
/// (`rtt_s`) ([`budget::eager_times`]). A probe in which `a` lost its
/// core (fewer than 8 tests inside the hold, or a completion, or the end
/// of the hold, seen after the quiet since `a` sent the size, when `b`
/// may have left its quiet) is taken again with a longer quiet
/// ([`budget::next_slack`]: at least twice what the take overran; later
/// probes start from that quiet); after
/// [`EAGER_TRIES`] takes, or when a take would end past `budget_s`, the
/// probe gives up and the limit is unknown (None on `a` too).
///
/// A size counts as eager when any of [`EAGER_PROBES`] probes completed
/// (`b` takes nothing while it stays out). Sizes are scanned up a grid
/// (powers of two and the midpoints between them) to the first that never
/// completes, then bisected between it and the last that did.
#[allow(clippy::too_many_arguments)]
pub fn eager_limit(
    world: &SimpleCommunicator,
    a: i32,
    b: i32,
    sbuf: &[u8],
    rbuf: &mut [u8],
    one_way: &dyn Fn(usize) -> f64,
    rtt_s: f64,
    budget_s: f64,
) -> Option<u64> {
    let (pa, pb) = (world.process_at_rank(a), world.process_at_rank(b));
    let largest = sbuf.len().min(rbuf.len());
    if world.rank() == b {
        eager_receiver(pa, rbuf);
        return None;
    }
    let probe = EagerProbe {
        a,
        b,
        pb,
        sbuf,
        one_way,
        rtt_s,
        budget_s,
        start: Instant::now(),
        learned: std::cell::Cell::new(0.0f64),
    };
    let limit = scan_limit(&eager_grid(largest), |size| probe.eager(size));
    pb.send_with_tag(&[u64::MAX, 0][..], TAG);
    limit
}

/// Rank `b`'s side of [`eager_limit`]: answer each probe, stay out of MPI
/// for its quiet, then take the probe's message, until `a` sends the end.
fn eager_receiver(pa: Process<'_>, rbuf: &mut [u8]) {
    loop {
        // (size, quiet in ns)
        let mut msg = [0u64; 2];
        pa.receive_into_with_tag(&mut msg[..], TAG);
        if msg[0] == u64::MAX {
            return;
        }
        // `a` sends only after this, so that no progress call of `b`
        // (the receive of the size) can take the probe. Synchronous:
        // it returns once `a` has matched it, so the answer has left
        // before `b` stays out (a library may write a small message
        // only at its next progress call: Open MPI's TCP BTL does).
        pa.synchronous_send_with_tag(&1u8, TAG);
        idle(Duration::from_nanos(msg[1]));
        pa.receive_into_with_tag(&mut rbuf[..msg[0] as usize], TAG);
        pa.send_with_tag(&0u8, TAG);
    }
}

/// The sizes [`eager_limit`] scans up to `largest`: powers of two and the
/// midpoints between them, then `largest`.
fn eager_grid(largest: usize) -> Vec<usize> {
    let mut grid: Vec<usize> = Vec::new();
    let mut s = 1usize;
    while s < largest {
        grid.push(s);
        if s >= 2 {
            grid.push(s + s / 2);
        }
        s *= 2;
    }
    grid.push(largest);
    grid
}

/// The largest eager size: `grid` scanned up to the first size that is
/// not `eager`, then bisected between it and the last that was;
/// `u64::MAX` when every size is, None when a probe gave up.
fn scan_limit(grid: &[usize], mut eager: impl FnMut(usize) -> Option<bool>) -> Option<u64> {
    let mut lo = 0usize;
    for &size in grid {
        if !eager(size)? {
            // eager(lo), !eager(hi)
            let mut hi = size;
            while lo + 1 < hi {
                let mid = lo + (hi - lo) / 2;
                if eager(mid)? {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            return Some(lo as u64);
        }
        lo = size;
    }
    Some(u64::MAX)
}

/// Rank `a`'s side of [`eager_limit`]: the pair, the send buffer, the
/// times that scale the hold and quiet, and the budget.
struct EagerProbe<'a> {
    a: i32,
    b: i32,
    pb: Process<'a>,
    sbuf: &'a [u8],
    one_way: &'a dyn Fn(usize) -> f64,
    rtt_s: f64,
    budget_s: f64,
    start: Instant,
    /// The slack the last take that could not be kept called for: the
    /// next probes start from it.
    learned: std::cell::Cell<f64>,
}

/// What `a` saw in one take of a probe.
struct Take {
    /// The send completed within the hold.
    done: bool,
    /// Tests made.
    tests: usize,
    /// The hold was kept (it ended inside `b`'s quiet).
    kept: bool,
    /// Time from sending the size to the end of the hold or the completion.
    end: Duration,
}

impl EagerProbe<'_> {
    /// Whether `size` is eager: any of [`EAGER_PROBES`] probes completed
    /// alone (None: a probe gave up).
    fn eager(&self, size: usize) -> Option<bool> {
        for _ in 0..EAGER_PROBES {
            if self.completes_alone(size)? {
                return Some(true);
            }
        }
        Some(false)
    }

    /// One probe of `size`, taken again with a longer quiet while `a`
    /// lost its core: Some(completed alone), None: no take could be kept.
    fn completes_alone(&self, size: usize) -> Option<bool> {
        let (a, b) = (self.a, self.b);
        let (hold, slack) = budget::eager_times(
            (self.one_way)(size),
            self.rtt_s,
            EAGER_HOLD.as_secs_f64(),
            EAGER_QUIET.as_secs_f64(),
        );
        let mut slack = slack.max(self.learned.get());
        for _ in 0..EAGER_TRIES {
            if self.start.elapsed().as_secs_f64() + hold + slack > self.budget_s {
                return None;
            }
            let quiet = Duration::from_secs_f64(hold + slack);
            let hold_d = Duration::from_secs_f64(hold);
            let Take {
                done,
                tests,
                kept,
                end,
            } = self.take(size, hold_d, quiet);
            if kept && (done || tests >= 8) {
                return Some(done);
            }
            if debug_counts() {
                eprintln!(
                    "mheta-microbench: {a}->{b} eager probe of {size} B taken again: done {done}, {tests} tests, kept {kept}, hold {hold_d:?}, quiet {quiet:?}, {end:?} since the size was sent"
                );
            }
            slack = budget::next_slack(slack, end.as_secs_f64() - hold);
            self.learned.set(slack);
        }
        None
    }

    /// One take: tell `b` the size and the quiet, wait for its answer and
    /// a round trip, then send `size` bytes and test the send for `hold`.
    fn take(&self, size: usize, hold: Duration, quiet: Duration) -> Take {
        let pb = self.pb;
        let since = Instant::now();
        pb.send_with_tag(&[size as u64, quiet.as_nanos() as u64][..], TAG);
        let mut go = 0u8;
        pb.receive_into_with_tag(&mut go, TAG);
        // `b` leaves MPI once the match reaches it, a round trip.
        spin(Duration::from_secs_f64(self.rtt_s.max(0.0)));
        let take = mpi::request::scope(|sc| {
            let mut req = pb.immediate_send_with_tag(sc, &self.sbuf[..size], TAG);
            let t = Instant::now();
            let mut tests = 0usize;
            loop {
                if t.elapsed() >= hold {
                    let end = since.elapsed();
                    req.wait();
                    break Take {
                        done: false,
                        tests,
                        kept: end < quiet,
                        end,
                    };
                }
                tests += 1;
                match req.test() {
                    // `b`'s quiet began after `since` and lasts
                    // `quiet`: a test that returned later than
                    // that (`a` lost its core) proves nothing.
                    Ok(_) => {
                        let end = since.elapsed();
                        break Take {
                            done: true,
                            tests,
                            kept: end < quiet,
                            end,
                        };
                    }
                    Err(r) => req = r,
                }
            }
        });
        let mut ack = 0u8;
        pb.receive_into_with_tag(&mut ack, TAG);
        take
    }
}

/// Measure pair `a -> b`; both ranks call it; the result is on rank `a`.
///
/// Every loop is bounded by time as well as by count (`plan`'s budgets;
/// [`budget`]): on shared memory the nominal counts fit and are taken,
/// on a slow link each loop takes what fits, never fewer than its
/// minimum. The rank that times (`a`) decides each count and sends it to
/// `b`.
pub fn measure_pair(world: &SimpleCommunicator, plan: &Effort, a: i32, b: i32) -> Option<PairCost> {
    let me = world.rank();
    // Separate send and receive buffers, written now so that no page is
    // first touched while being timed.
    let mut pair = PairRun {
        world,
        plan,
        a,
        b,
        buf: vec![1u8; plan.largest()],
        sbuf: vec![2u8; plan.largest()],
        one_way_small: None,
    };
    let sweep_s = sweep_budget(plan);
    let t_sweep = Instant::now();
    let sweep = pair.sweep(sweep_s, t_sweep);
    // The small round trip (from the sweep's 8-byte median; on `a`).
    let rtt8 = if me == a { small_rtt(&sweep) } else { 0.0 };
    let curve: Vec<(f64, f64)> = if me == a {
        one_way_curve(&sweep)
    } else {
        Vec::new()
    };
    let one_way = |size: usize| budget::interpolate(&curve, size as f64).unwrap_or(0.0);
    let t_eager = Instant::now();
    let eager = eager_limit(
        world,
        a,
        b,
        &pair.sbuf,
        &mut pair.buf,
        &one_way,
        rtt8,
        plan.eager_s,
    );
    if me == a && debug_counts() {
        eprintln!(
            "mheta-microbench: {a}->{b} sweep {:.3} s, eager limit {eager:?} in {:.3} s",
            t_eager.duration_since(t_sweep).as_secs_f64(),
            t_eager.elapsed().as_secs_f64()
        );
    }
    let sweep = pair.with_eager_point(sweep, eager);
    let cold = cold_one_way_within(
        world,
        a,
        b,
        mheta_profile::COLD_BYTES,
        plan.cold_s,
        plan.min_reps - 1,
        2.0 * one_way(mheta_profile::COLD_BYTES),
    );
    let counts = pair.small_counts(rtt8, eager);
    let t_small = Instant::now();
    let small = pair.small_rounds(&counts);
    if me == a && debug_counts() {
        eprintln!(
            "mheta-microbench: {a}->{b} small figures in {:.3} s; the pair in {:.3} s",
            t_small.elapsed().as_secs_f64(),
            t_sweep.elapsed().as_secs_f64()
        );
    }
    let small = pair.gather_o_r(small, counts.n_over)?;
    Some(summarise(a, b, &sweep, &small, cold, eager))
}

/// One size of the sweep: its bytes, the ping-pong's RTT/2 samples (on
/// `a`) and the streaming bandwidth (MB/s).
type SweepPoint = (usize, Vec<f64>, f64);

/// Counts of the interleaved small figures, decided on `a`.
struct SmallCounts {
    /// How long `b` waits before posting an o_r receive.
    delay: Duration,
    /// 8-byte ping-pongs per round.
    pp_per_round: usize,
    /// o_s and o_r samples per round.
    n_over: usize,
}

/// Samples of the small figures, one vector per round.
struct SmallSamples {
    /// 8-byte RTT/2 (on `a`).
    pp: Vec<Vec<f64>>,
    /// o_s (on `a`).
    os: Vec<Vec<f64>>,
    /// o_r (taken on `b`; on `a` after [`PairRun::gather_o_r`]).
    or: Vec<Vec<f64>>,
}

/// The pair [`measure_pair`] measures, its plan and its buffers.
struct PairRun<'a> {
    world: &'a SimpleCommunicator,
    plan: &'a Effort,
    a: i32,
    b: i32,
    /// Receive buffer (and o_s's send buffer).
    buf: Vec<u8>,
    /// Send buffer.
    sbuf: Vec<u8>,
    /// The median one-way time of the sweep's first (smallest) size, once
    /// measured (on `a`): the pair's small round trip is twice it.
    one_way_small: Option<f64>,
}

/// Seconds of the whole sweep: `plan`'s seconds per size of weight 1
/// times the sizes' weights.
fn sweep_budget(plan: &Effort) -> f64 {
    plan.sweep_s_per_size
        * plan
            .sizes
            .iter()
            .map(|&s| budget::size_weight(s))
            .sum::<f64>()
}

/// The small round trip: twice the median one-way time of the sweep's
/// first size of at least 8 bytes (on `a`).
fn small_rtt(sweep: &[SweepPoint]) -> f64 {
    sweep
        .iter()
        .find(|s| s.0 >= 8)
        .map(|s| 2.0 * median(&mut s.1.clone()))
        .unwrap_or(1e-5)
}

/// The sweep's (bytes, median one-way seconds) per size (on `a`).
fn one_way_curve(sweep: &[SweepPoint]) -> Vec<(f64, f64)> {
    sweep
        .iter()
        .map(|(size, s, _)| (*size as f64, median(&mut s.clone())))
        .collect()
}

impl PairRun<'_> {
    /// Ping-pong sweep: one sample per round trip, RTT/2; then streams.
    /// Each size gets its share of what is left of `sweep_s` since
    /// `t_sweep`.
    fn sweep(&mut self, sweep_s: f64, t_sweep: Instant) -> Vec<SweepPoint> {
        let sizes = &self.plan.sizes;
        let mut sweep: Vec<SweepPoint> = Vec::new();
        for (i, &size) in sizes.iter().enumerate() {
            let share = budget::share(sweep_s - t_sweep.elapsed().as_secs_f64(), &sizes[i..]);
            sweep.push(self.sweep_size(size, share));
        }
        sweep
    }

    /// `sweep` with one size more, the pair's eager limit (known on `a`,
    /// which tells `b`), where the sweep lacks it and it lies inside the
    /// sweep's sizes: the largest eager message is the eager side's last
    /// knot in [`mheta_profile::fit_segments`], which otherwise would
    /// stretch the last eager size's slope up to the limit. The point gets
    /// a weight-1 size's share of the sweep's seconds.
    fn with_eager_point(
        &mut self,
        mut sweep: Vec<SweepPoint>,
        eager: Option<u64>,
    ) -> Vec<SweepPoint> {
        let (world, a, b) = (self.world, self.a, self.b);
        let mut limit = [eager.unwrap_or(0)];
        if world.rank() == a {
            world.process_at_rank(b).send_with_tag(&limit[..], TAG);
        } else {
            world
                .process_at_rank(a)
                .receive_into_with_tag(&mut limit[..], TAG);
        }
        let e = limit[0];
        let at = sweep.partition_point(|s| (s.0 as u64) < e);
        if e == 0 || at == 0 || at == sweep.len() || sweep[at].0 as u64 == e {
            return sweep;
        }
        let point = self.sweep_size(e as usize, self.plan.sweep_s_per_size);
        sweep.insert(at, point);
        sweep
    }

    /// One size of the sweep within `share` seconds: 40% of it for the
    /// ping-pong, the rest (at least half) for the streams.
    fn sweep_size(&mut self, size: usize, share: f64) -> SweepPoint {
        let (world, plan, a, b) = (self.world, self.plan, self.a, self.b);
        let me = world.rank();
        let t_size = Instant::now();
        let reps = plan.reps(size);
        let warm = (reps / 10).max(2);
        let samples = ping_pong(
            world,
            a,
            b,
            &self.sbuf,
            &mut self.buf,
            size,
            (warm, reps, plan.min_reps),
            0.4 * share,
        );
        let per_msg = if me == a {
            median(&mut samples.clone())
        } else {
            0.0
        };
        let (iters, skip) = plan.bw_iters(size);
        let nominal = StreamCounts {
            window: WINDOW,
            iters,
            skip,
            repeats: plan.bw_repeats,
        };
        let left = (share - t_size.elapsed().as_secs_f64()).max(0.5 * share);
        let rtt = 2.0 * self.one_way_small.unwrap_or(per_msg);
        let bw = bandwidth(
            world,
            a,
            b,
            &mut self.buf[..size],
            nominal,
            (per_msg, rtt),
            left,
        );
        if self.one_way_small.is_none() && me == a {
            self.one_way_small = Some(per_msg);
        }
        if me == a && debug_counts() {
            eprintln!(
                "mheta-microbench: {a}->{b} {size} B: {} round trips, streams in {:.3} s of a {:.3} s share",
                samples.len(),
                t_size.elapsed().as_secs_f64(),
                share
            );
        }
        (size, samples, bw)
    }

    /// The small figures' counts: `a` decides them (the delay before an
    /// o_r receive is four small round trips, at least 20 µs; the counts
    /// per round fit the small figures' budget, at least 20 each) and
    /// sends them to `b`.
    fn small_counts(&self, rtt8: f64, eager: Option<u64>) -> SmallCounts {
        let (plan, a, b) = (self.plan, self.a, self.b);
        let mut small = [0.0f64; 3];
        if self.world.rank() == a {
            let delay = (4.0 * rtt8).max(20e-6);
            let (pp, over) = budget::small_counts(
                (plan.pp_per_round, plan.overhead_reps, 10),
                plan.rounds,
                rtt8,
                delay,
                plan.small_s,
                20,
            );
            small = [delay, pp as f64, over as f64];
            if debug_counts() {
                eprintln!(
                    "mheta-microbench: {a}->{b} small figures: {} rounds of {pp} ping-pongs, {over} o_s and o_r (RTT {rtt8:.6} s); eager limit {eager:?}",
                    plan.rounds
                );
            }
            self.world.process_at_rank(b).send_with_tag(&small[..], TAG);
        } else {
            self.world
                .process_at_rank(a)
                .receive_into_with_tag(&mut small[..], TAG);
        }
        SmallCounts {
            delay: Duration::from_secs_f64(small[0]),
            pp_per_round: small[1] as usize,
            n_over: small[2] as usize,
        }
    }

    /// The small figures, in interleaved rounds: each round takes 8-byte
    /// ping-pongs, then o_s, then o_r samples, so that a drift of the
    /// machine shows as a difference between rounds (spread, modes) and
    /// not as a difference between figures.
    fn small_rounds(&mut self, counts: &SmallCounts) -> SmallSamples {
        let (mut pp, mut os, mut or) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..self.plan.rounds {
            pp.push(self.ping_pong_round(counts.pp_per_round));
            os.push(self.o_send_round(counts.n_over));
            or.push(self.o_recv_round(counts.n_over, counts.delay));
        }
        SmallSamples { pp, os, or }
    }

    /// One round of 8-byte ping-pongs: 10 untimed, then `n` RTT/2
    /// samples (on `a`).
    fn ping_pong_round(&mut self, n: usize) -> Vec<f64> {
        let (pa, pb) = (
            self.world.process_at_rank(self.a),
            self.world.process_at_rank(self.b),
        );
        let me = self.world.rank();
        let mut round = Vec::with_capacity(n);
        for r in 0..n + 10 {
            if me == self.a {
                let t = Instant::now();
                pb.send_with_tag(&self.sbuf[..8], TAG);
                pb.receive_into_with_tag(&mut self.buf[..8], TAG);
                if r >= 10 {
                    round.push(t.elapsed().as_secs_f64() / 2.0);
                }
            } else {
                pa.receive_into_with_tag(&mut self.buf[..8], TAG);
                pa.send_with_tag(&self.sbuf[..8], TAG);
            }
        }
        round
    }

    /// One round of `n` o_s samples (on `a`): an eager send returns once
    /// the data is buffered.
    fn o_send_round(&mut self, n: usize) -> Vec<f64> {
        let (pa, pb) = (
            self.world.process_at_rank(self.a),
            self.world.process_at_rank(self.b),
        );
        let mut ack = 0u8;
        let mut round = Vec::with_capacity(n);
        for _ in 0..n {
            if self.world.rank() == self.a {
                let t = Instant::now();
                pb.send_with_tag(&self.buf[..8], TAG);
                round.push(t.elapsed().as_secs_f64());
                pb.receive_into_with_tag(&mut ack, TAG);
            } else {
                pa.receive_into_with_tag(&mut self.buf[..8], TAG);
                pa.send_with_tag(&ack, TAG);
            }
        }
        round
    }

    /// One round of `n` o_r samples (on `b`): `b` waits `delay` so that
    /// the message has arrived, then times its receive.
    fn o_recv_round(&mut self, n: usize, delay: Duration) -> Vec<f64> {
        let (pa, pb) = (
            self.world.process_at_rank(self.a),
            self.world.process_at_rank(self.b),
        );
        let mut ack = 0u8;
        let mut round = Vec::with_capacity(n);
        for _ in 0..n {
            if self.world.rank() == self.a {
                pb.send_with_tag(&self.buf[..8], TAG);
                pb.receive_into_with_tag(&mut ack, TAG);
            } else {
                spin(delay);
                let t = Instant::now();
                pa.receive_into_with_tag(&mut self.buf[..8], TAG);
                round.push(t.elapsed().as_secs_f64());
                pa.send_with_tag(&ack, TAG);
            }
        }
        round
    }

    /// The o_r samples were taken at `b`: `b` sends them to `a` (and gets
    /// None); `a` gets `small` with them in place of its empty rounds.
    fn gather_o_r(&self, small: SmallSamples, n_over: usize) -> Option<SmallSamples> {
        let (pa, pb) = (
            self.world.process_at_rank(self.a),
            self.world.process_at_rank(self.b),
        );
        if self.world.rank() == self.b {
            let flat: Vec<f64> = small.or.concat();
            pa.send_with_tag(&flat[..], TAG);
            return None;
        }
        let mut flat = vec![0.0f64; self.plan.rounds * n_over];
        pb.receive_into_with_tag(&mut flat[..], TAG);
        let or: Vec<Vec<f64>> = flat.chunks(n_over.max(1)).map(<[f64]>::to_vec).collect();
        Some(SmallSamples { or, ..small })
    }
}

/// The pair's figures from its samples (on `a`): distributions of the
/// small figures, the sweep's points and their piecewise-linear fit, the
/// bandwidth at 1 MiB and out of the cache (`cold`: one-way seconds of
/// [`mheta_profile::COLD_BYTES`]), and L = one-way(8 B) − o_s − o_r.
fn summarise(
    a: i32,
    b: i32,
    sweep: &[SweepPoint],
    small: &SmallSamples,
    cold: f64,
    eager: Option<u64>,
) -> PairCost {
    let floor = timer_cost();
    let o_send = SampleStats::from_rounds(&small.os, floor);
    let o_recv = SampleStats::from_rounds(&small.or, floor);
    let small = SampleStats::from_rounds(&small.pp, floor);
    let points: Vec<SizePoint> = sweep
        .iter()
        .map(|(size, s, bw)| SizePoint {
            bytes: *size as u64,
            one_way: SampleStats::from_samples(s),
            bandwidth_mbps: *bw,
        })
        .collect();
    let segments = fit_segments(
        &points
            .iter()
            .map(|p| (p.bytes as f64, p.one_way.p50))
            .collect::<Vec<_>>(),
        eager,
    );
    let bw_at = points
        .iter()
        .find(|p| p.bytes == 1 << 20)
        .or(points.last())
        .map(|p| p.bandwidth_mbps * 1e6)
        .unwrap_or(0.0);
    // The stored figures are ModeChoice's default (the share-weighted mean
    // of the modes that count); ClusterProfile::with_mode picks another.
    let dom = ModeChoice::default();
    let (o_s, o_r, one) = (o_send.value(dom), o_recv.value(dom), small.value(dom));
    PairCost {
        src: a as u32,
        dst: b as u32,
        latency_s: (one - o_s - o_r).max(0.0),
        per_byte_s: segments.last().map_or(0.0, |s| s.per_byte_s),
        o_send_s: o_s,
        o_recv_s: o_r,
        rtt_small_s: 2.0 * one,
        bandwidth_bps: bw_at,
        bandwidth_cold_bps: if cold > 0.0 {
            mheta_profile::COLD_BYTES as f64 / cold
        } else {
            0.0
        },
        o_send,
        o_recv,
        one_way_small: small,
        sweep: points,
        segments,
        eager_limit_bytes: eager,
    }
}
