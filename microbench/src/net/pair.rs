//! One ordered pair's measurement ([`measure_pair`]): the ping-pong and
//! stream sweep over the sizes, the eager limit, the cold-buffer time and
//! the small figures, summarised as the profile's [`PairCost`].

use super::cold::{Cold, cold_one_way_within};
use super::eager::eager_limit;
use super::effort::{Effort, WINDOW};
use super::small::SmallSamples;
use super::stream::{bandwidth, ping_pong};
use super::{TAG, debug_counts, timer_cost};
use crate::budget::{self, StreamCounts};
use mheta_base::median;
use mheta_profile::{ModeChoice, PairCost, SampleStats, SendPoint, SizePoint, fit_segments};
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, SimpleCommunicator};
use std::time::Instant;

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
    let counts = pair.small_counts(rtt8, eager, &one_way);
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
    Some(summarise(
        a,
        b,
        &sweep,
        (&small, &counts.send_sizes),
        cold,
        eager,
    ))
}

/// One size of the sweep: its bytes, the ping-pong's RTT/2 samples (on
/// `a`) and the streaming bandwidth (MB/s).
type SweepPoint = (usize, Vec<f64>, f64);

/// The pair [`measure_pair`] measures, its plan and its buffers.
pub(super) struct PairRun<'a> {
    pub(super) world: &'a SimpleCommunicator,
    pub(super) plan: &'a Effort,
    pub(super) a: i32,
    pub(super) b: i32,
    /// Receive buffer.
    pub(super) buf: Vec<u8>,
    /// Send buffer.
    pub(super) sbuf: Vec<u8>,
    /// The median one-way time of the sweep's first (smallest) size, once
    /// measured (on `a`): the pair's small round trip is twice it.
    pub(super) one_way_small: Option<f64>,
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
        .map(|s| 2.0 * median(&mut s.1.clone()).unwrap_or(0.0))
        .unwrap_or(1e-5)
}

/// The sweep's (bytes, median one-way seconds) per size (on `a`).
fn one_way_curve(sweep: &[SweepPoint]) -> Vec<(f64, f64)> {
    sweep
        .iter()
        .map(|(size, s, _)| (*size as f64, median(&mut s.clone()).unwrap_or(0.0)))
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
            median(&mut samples.clone()).unwrap_or(0.0)
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
}

/// The pair's figures from its samples (on `a`): distributions of the
/// small figures, the sweep's points and their piecewise-linear fit, the
/// bandwidth at 1 MiB and out of the cache and the bytes a send leaves to
/// the transport (`cold`, of [`mheta_profile::COLD_BYTES`]), the
/// sender's time in the eager sends of `sizes`, and
/// L = one-way(8 B) − o_s − o_r.
fn summarise(
    a: i32,
    b: i32,
    sweep: &[SweepPoint],
    (small, sizes): (&SmallSamples, &[usize]),
    cold: Cold,
    eager: Option<u64>,
) -> PairCost {
    let floor = timer_cost();
    // The stored figures are ModeChoice's default (the share-weighted mean
    // of the modes that count); ClusterProfile::with_mode picks another.
    let dom = ModeChoice::default();
    let send_by_size: Vec<SendPoint> = sizes
        .iter()
        .zip(&small.by_size)
        .filter(|(_, rounds)| rounds.iter().any(|r| !r.is_empty()))
        .map(|(&bytes, rounds)| {
            let o_send = SampleStats::from_rounds(rounds, floor);
            SendPoint {
                bytes: bytes as u64,
                o_send_s: o_send.value(dom),
                o_send,
            }
        })
        .collect();
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
        bandwidth_cold_bps: if cold.one_way_s > 0.0 {
            mheta_profile::COLD_BYTES as f64 / cold.one_way_s
        } else {
            0.0
        },
        moves: cold.moves.clone(),
        send_buffer_bytes: (cold.one_way_s > 0.0).then_some(cold.send_buffer_bytes),
        send_buffer_first_bytes: None,
        direct_copy_bps: None,
        exchange: Vec::new(),
        send_by_size,
        o_send,
        o_recv,
        one_way_small: small,
        sweep: points,
        segments,
        eager_limit_bytes: eager,
    }
}
