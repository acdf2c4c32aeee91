//! Point-to-point measurements of one ordered pair, and OSU's loops.

use mheta_profile::{Dist, ModeChoice, PairCost, SizePoint, fit_segments};
use mpi::point_to_point::{Destination, Source};
use mpi::request::WaitGuard;
use mpi::topology::{Communicator, SimpleCommunicator};
use std::time::{Duration, Instant};

const TAG: i32 = 0x4d42;
/// Window of non-blocking sends in a bandwidth measurement (as osu_bw).
pub const WINDOW: usize = 64;
/// OSU's switch between small- and large-message loop counts.
pub const LARGE: usize = 8192;

/// How much to measure.
pub struct Plan {
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
}

impl Plan {
    pub fn new(quick: bool) -> Plan {
        if quick {
            Plan {
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
            }
        } else {
            Plan {
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
            }
        }
    }

    /// The sweep's sizes up to `max` bytes, as OSU's `-m`: the default
    /// sizes not above it, then powers of two past the default's largest
    /// (4 MiB) and `max` itself. Sizes past 4 MiB take fewer ping-pongs
    /// and streams ([`Plan::reps`], [`Plan::bw_iters`]) so that each moves
    /// about what one at 4 MiB does.
    pub fn up_to(mut self, max: usize) -> Plan {
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

/// Streaming bandwidth from `a` to `b` in decimal MB/s (window of
/// [`WINDOW`] non-blocking sends, then a 4-byte acknowledgement).
fn stream(
    world: &SimpleCommunicator,
    a: i32,
    b: i32,
    buf: &mut [u8],
    iters: usize,
    skip: usize,
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
                let _g: Vec<WaitGuard<[u8], _>> = (0..WINDOW)
                    .map(|_| WaitGuard::from(pb.immediate_send_with_tag(sc, &buf[..], TAG)))
                    .collect();
            });
            pb.receive_into_with_tag(&mut ack[..], TAG);
        } else {
            // All receives land in one buffer, as osu_bw's do.
            let ptr = buf.as_mut_ptr();
            mpi::request::scope(|sc| {
                let _g: Vec<WaitGuard<[u8], _>> = (0..WINDOW)
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
    (size * WINDOW * iters) as f64 / 1e6 / secs
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
pub fn cold_one_way(world: &SimpleCommunicator, a: i32, b: i32, size: usize) -> f64 {
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
    let sp = vec![3u8; n * size];
    let mut rp = vec![4u8; n * size];
    let reps = 3 * n + 1;
    let mut samples = Vec::with_capacity(reps);
    for r in 0..reps {
        let k = (r % n) * size;
        if me == a {
            let t = Instant::now();
            pb.send_with_tag(&sp[k..k + size], TAG);
            pb.receive_into_with_tag(&mut rp[k..k + size], TAG);
            if r > 0 {
                samples.push(t.elapsed().as_secs_f64() / 2.0);
            }
        } else {
            pa.receive_into_with_tag(&mut rp[k..k + size], TAG);
            pa.send_with_tag(&sp[k..k + size], TAG);
        }
    }
    if me == a { median(&mut samples) } else { 0.0 }
}

/// How long the eager-limit probe's sender tests its send for completion,
/// while the receiver stays out of MPI for [`EAGER_QUIET`].
const EAGER_HOLD: Duration = Duration::from_micros(250);
const EAGER_QUIET: Duration = Duration::from_micros(1000);
/// Probes of each size in [`eager_limit`].
const EAGER_PROBES: usize = 3;

/// The largest message, in bytes, that `a` can send to `b` and see
/// complete before `b` has posted its receive: the MPI library's eager
/// limit for the pair (above it, the sender always waits for the
/// receiver). Both ranks call it, each with its pair's send and receive
/// buffers (the sizes probed go up to the shorter); the result is on `a`
/// (None on `b`); `u64::MAX` when every size probed completed.
///
/// Each probe: `a` tells `b` the size, `b` answers and then stays out of
/// MPI for [`EAGER_QUIET`] (it spins, so nothing can progress a receive
/// on its side), `a` posts a non-blocking send of that size and tests it for
/// [`EAGER_HOLD`]. A send that completes then went to a buffer; any other
/// cannot complete until `b` takes it. A probe in which `a` lost its core
/// (fewer than 8 tests inside the hold, or a completion seen more than
/// [`EAGER_QUIET`] after `a` sent the size, when `b` may have left its
/// quiet) is taken again.
///
/// A size counts as eager when any of [`EAGER_PROBES`] probes completed
/// (`b` takes nothing while it spins). Sizes are scanned up a grid (powers
/// of two and the midpoints between them) to the first that never
/// completes, then bisected between it and the last that did.
pub fn eager_limit(
    world: &SimpleCommunicator,
    a: i32,
    b: i32,
    sbuf: &[u8],
    rbuf: &mut [u8],
) -> Option<u64> {
    let me = world.rank();
    let (pa, pb) = (world.process_at_rank(a), world.process_at_rank(b));
    let largest = sbuf.len().min(rbuf.len());
    if me == b {
        loop {
            let mut size = 0u64;
            pa.receive_into_with_tag(&mut size, TAG);
            if size == u64::MAX {
                return None;
            }
            // `a` sends only after this, so that no progress call of `b`
            // (the receive of the size) can take the probe.
            pa.send_with_tag(&1u8, TAG);
            spin(EAGER_QUIET);
            pa.receive_into_with_tag(&mut rbuf[..size as usize], TAG);
            pa.send_with_tag(&0u8, TAG);
        }
    }
    let completes_alone = |size: usize| -> bool {
        loop {
            let since = Instant::now();
            pb.send_with_tag(&(size as u64), TAG);
            let mut go = 0u8;
            pb.receive_into_with_tag(&mut go, TAG);
            // (completed within the hold, tests made, the hold was kept)
            let (done, tests, kept) = mpi::request::scope(|sc| {
                let mut req = pb.immediate_send_with_tag(sc, &sbuf[..size], TAG);
                let t = Instant::now();
                let mut tests = 0usize;
                loop {
                    if t.elapsed() >= EAGER_HOLD {
                        req.wait();
                        break (false, tests, true);
                    }
                    tests += 1;
                    match req.test() {
                        // `b`'s quiet began after `since` and lasts
                        // EAGER_QUIET: a test that returned later than
                        // that (`a` lost its core) proves nothing.
                        Ok(_) => break (true, tests, since.elapsed() < EAGER_QUIET),
                        Err(r) => req = r,
                    }
                }
            });
            let mut ack = 0u8;
            pb.receive_into_with_tag(&mut ack, TAG);
            if kept && (done || tests >= 8) {
                return done;
            }
        }
    };
    let eager = |size: usize| (0..EAGER_PROBES).any(|_| completes_alone(size));
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
    let mut limit = u64::MAX;
    let mut lo = 0usize;
    for &size in &grid {
        if !eager(size) {
            // eager(lo), !eager(hi)
            let mut hi = size;
            while lo + 1 < hi {
                let mid = lo + (hi - lo) / 2;
                if eager(mid) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            limit = lo as u64;
            break;
        }
        lo = size;
    }
    pb.send_with_tag(&u64::MAX, TAG);
    Some(limit)
}

/// Measure pair `a -> b`; both ranks call it; the result is on rank `a`.
pub fn measure_pair(world: &SimpleCommunicator, plan: &Plan, a: i32, b: i32) -> Option<PairCost> {
    let me = world.rank();
    let (pa, pb) = (world.process_at_rank(a), world.process_at_rank(b));
    // Separate send and receive buffers, written now so that no page is
    // first touched while being timed.
    let mut buf = vec![1u8; plan.largest()];
    let sbuf = vec![2u8; plan.largest()];
    let mut ack = 0u8;
    let eager = eager_limit(world, a, b, &sbuf, &mut buf);
    // Ping-pong sweep: one sample per round trip, RTT/2.
    let mut sweep: Vec<(usize, Vec<f64>, f64)> = Vec::new();
    for &size in &plan.sizes {
        let reps = plan.reps(size);
        let warm = (reps / 10).max(2);
        let mut samples = Vec::with_capacity(reps);
        for r in 0..reps + warm {
            if me == a {
                let t = Instant::now();
                pb.send_with_tag(&sbuf[..size], TAG);
                pb.receive_into_with_tag(&mut buf[..size], TAG);
                if r >= warm {
                    samples.push(t.elapsed().as_secs_f64() / 2.0);
                }
            } else {
                pa.receive_into_with_tag(&mut buf[..size], TAG);
                pa.send_with_tag(&sbuf[..size], TAG);
            }
        }
        let (iters, skip) = plan.bw_iters(size);
        // The median of several streams: one stream is easily disturbed.
        let mut bws: Vec<f64> = (0..plan.bw_repeats)
            .map(|_| stream(world, a, b, &mut buf[..size], iters, skip))
            .collect();
        let bw = median(&mut bws);
        sweep.push((size, samples, bw));
    }
    let cold = cold_one_way(world, a, b, mheta_profile::COLD_BYTES);
    // The small figures, in interleaved rounds: each round takes 8-byte
    // ping-pongs, then o_s, then o_r samples, so that a drift of the
    // machine shows as a difference between rounds (spread, modes) and
    // not as a difference between figures.
    // o_r: b posts the receive after the message has arrived; it first
    // waits four small round trips (from the sweep's 8-byte median).
    let mut delay = [0.0f64];
    if me == a {
        let rtt8 = sweep
            .iter_mut()
            .find(|s| s.0 >= 8)
            .map(|s| 2.0 * median(&mut s.1.clone()))
            .unwrap_or(1e-5);
        delay[0] = (4.0 * rtt8).max(20e-6);
        pb.send_with_tag(&delay[..], TAG);
    } else {
        pa.receive_into_with_tag(&mut delay[..], TAG);
    }
    let delay = Duration::from_secs_f64(delay[0]);
    let n_over = plan.overhead_reps;
    let (mut pp, mut os, mut or) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..plan.rounds {
        let mut round = Vec::with_capacity(plan.pp_per_round);
        for r in 0..plan.pp_per_round + 10 {
            if me == a {
                let t = Instant::now();
                pb.send_with_tag(&sbuf[..8], TAG);
                pb.receive_into_with_tag(&mut buf[..8], TAG);
                if r >= 10 {
                    round.push(t.elapsed().as_secs_f64() / 2.0);
                }
            } else {
                pa.receive_into_with_tag(&mut buf[..8], TAG);
                pa.send_with_tag(&sbuf[..8], TAG);
            }
        }
        pp.push(round);
        // Send overhead: an eager send returns once the data is buffered.
        let mut round = Vec::with_capacity(n_over);
        for _ in 0..n_over {
            if me == a {
                let t = Instant::now();
                pb.send_with_tag(&buf[..8], TAG);
                round.push(t.elapsed().as_secs_f64());
                pb.receive_into_with_tag(&mut ack, TAG);
            } else {
                pa.receive_into_with_tag(&mut buf[..8], TAG);
                pa.send_with_tag(&ack, TAG);
            }
        }
        os.push(round);
        let mut round = Vec::with_capacity(n_over);
        for _ in 0..n_over {
            if me == a {
                pb.send_with_tag(&buf[..8], TAG);
                pb.receive_into_with_tag(&mut ack, TAG);
            } else {
                spin(delay);
                let t = Instant::now();
                pa.receive_into_with_tag(&mut buf[..8], TAG);
                round.push(t.elapsed().as_secs_f64());
                pa.send_with_tag(&ack, TAG);
            }
        }
        or.push(round);
    }
    // o_r samples were taken at b: send them to a.
    if me == b {
        let flat: Vec<f64> = or.concat();
        pa.send_with_tag(&flat[..], TAG);
        return None;
    }
    let mut flat = vec![0.0f64; plan.rounds * n_over];
    pb.receive_into_with_tag(&mut flat[..], TAG);
    let or: Vec<Vec<f64>> = flat.chunks(n_over.max(1)).map(<[f64]>::to_vec).collect();

    let floor = timer_cost();
    let o_send = Dist::from_rounds(&os, floor);
    let o_recv = Dist::from_rounds(&or, floor);
    let small = Dist::from_rounds(&pp, floor);
    let points: Vec<SizePoint> = sweep
        .iter()
        .map(|(size, s, bw)| SizePoint {
            bytes: *size as u64,
            one_way: Dist::from_samples(s),
            bandwidth_mbps: *bw,
        })
        .collect();
    let segments = fit_segments(
        &points
            .iter()
            .map(|p| (p.bytes as f64, p.one_way.p50))
            .collect::<Vec<_>>(),
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
    Some(PairCost {
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
    })
}
