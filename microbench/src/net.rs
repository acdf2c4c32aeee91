//! Point-to-point measurements of one ordered pair, and OSU's loops.

use mheta_profile::{Dist, PairCost, SizePoint, fit_segments};
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
    pub overhead_reps: usize,
    pub bw_iters_small: usize,
    pub bw_iters_large: usize,
    /// Streams per size; the bandwidth is their median.
    pub bw_repeats: usize,
}

impl Plan {
    pub fn new(quick: bool) -> Plan {
        if quick {
            Plan {
                sizes: vec![1, 8, 64, 512, 4096, 8192, 65536, 1 << 20, 4 << 20],
                reps_small: 200,
                reps_medium: 50,
                reps_large: 10,
                overhead_reps: 100,
                bw_iters_small: 20,
                bw_iters_large: 3,
                bw_repeats: 3,
            }
        } else {
            Plan {
                sizes: (0..=22).map(|k| 1usize << k).collect(),
                reps_small: 2000,
                reps_medium: 200,
                reps_large: 50,
                overhead_reps: 1000,
                bw_iters_small: 100,
                bw_iters_large: 20,
                bw_repeats: 5,
            }
        }
    }

    fn reps(&self, size: usize) -> usize {
        if size <= LARGE {
            self.reps_small
        } else if size <= 65536 {
            self.reps_medium
        } else {
            self.reps_large
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

/// Measure pair `a -> b`; both ranks call it; the result is on rank `a`.
pub fn measure_pair(world: &SimpleCommunicator, plan: &Plan, a: i32, b: i32) -> Option<PairCost> {
    let me = world.rank();
    let (pa, pb) = (world.process_at_rank(a), world.process_at_rank(b));
    // Separate send and receive buffers, written now so that no page is
    // first touched while being timed.
    let mut buf = vec![1u8; plan.largest()];
    let sbuf = vec![2u8; plan.largest()];
    let mut ack = 0u8;
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
        let (iters, skip) = if size <= LARGE {
            (plan.bw_iters_small, plan.bw_iters_small / 10 + 1)
        } else {
            (plan.bw_iters_large, 1)
        };
        // The median of several streams: one stream is easily disturbed.
        let mut bws: Vec<f64> = (0..plan.bw_repeats)
            .map(|_| stream(world, a, b, &mut buf[..size], iters, skip))
            .collect();
        let bw = median(&mut bws);
        sweep.push((size, samples, bw));
    }
    // Send overhead: an eager send returns once the data is buffered.
    let mut os = Vec::new();
    for _ in 0..plan.overhead_reps {
        if me == a {
            let t = Instant::now();
            pb.send_with_tag(&buf[..8], TAG);
            os.push(t.elapsed().as_secs_f64());
            pb.receive_into_with_tag(&mut ack, TAG);
        } else {
            pa.receive_into_with_tag(&mut buf[..8], TAG);
            pa.send_with_tag(&ack, TAG);
        }
    }
    // Receive overhead: b posts the receive after the message has arrived
    // (it waits four small round trips first).
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
    let mut or = Vec::new();
    for _ in 0..plan.overhead_reps {
        if me == a {
            pb.send_with_tag(&buf[..8], TAG);
            pb.receive_into_with_tag(&mut ack, TAG);
        } else {
            spin(delay);
            let t = Instant::now();
            pa.receive_into_with_tag(&mut buf[..8], TAG);
            or.push(t.elapsed().as_secs_f64());
            pa.send_with_tag(&ack, TAG);
        }
    }
    // o_r samples were taken at b: send them to a.
    if me == b {
        pa.send_with_tag(&or[..], TAG);
        return None;
    }
    let mut or = vec![0.0f64; plan.overhead_reps];
    pb.receive_into_with_tag(&mut or[..], TAG);

    let o_send = Dist::from_samples(&os);
    let o_recv = Dist::from_samples(&or);
    let points: Vec<SizePoint> = sweep
        .iter()
        .map(|(size, s, bw)| SizePoint {
            bytes: *size as u64,
            one_way: Dist::from_samples(s),
            bandwidth_mbps: *bw,
        })
        .collect();
    let small = points
        .iter()
        .find(|p| p.bytes >= 8)
        .or(points.first())
        .map(|p| p.one_way.clone())
        .unwrap_or_default();
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
    Some(PairCost {
        src: a as u32,
        dst: b as u32,
        latency_s: (small.p50 - o_send.p50 - o_recv.p50).max(0.0),
        per_byte_s: segments.last().map_or(0.0, |s| s.per_byte_s),
        o_send_s: o_send.p50,
        o_recv_s: o_recv.p50,
        rtt_small_s: 2.0 * small.p50,
        bandwidth_bps: bw_at,
        o_send,
        o_recv,
        one_way_small: small,
        sweep: points,
        segments,
    })
}
