//! The small figures of a pair, in interleaved rounds: the 8-byte
//! ping-pong, the sender's overhead o_s and the receiver's overhead o_r
//! (LogP's), and the sender's time in eager sends of larger sizes
//! (LogGP's o(m), [`SEND_SIZES`]), each round taking some of each.

use super::pair::PairRun;
use super::{TAG, debug_counts, spin};
use crate::budget;
use mpi::point_to_point::{Destination, Source};
use mpi::topology::Communicator;
use std::time::{Duration, Instant};

/// Sizes at which the sender's time in an eager send is measured
/// (`PairCost::send_by_size`), those up to the pair's eager limit, and
/// the limit itself where it lies below the largest.
pub const SEND_SIZES: [usize; 5] = [256, 1 << 10, 4 << 10, 16 << 10, 64 << 10];

/// [`SEND_SIZES`] that are eager under `eager` (None: not measured, so
/// none is known to be).
fn send_sizes(eager: Option<u64>) -> Vec<usize> {
    let Some(e) = eager else {
        return Vec::new();
    };
    let mut sizes: Vec<usize> = SEND_SIZES
        .iter()
        .copied()
        .filter(|&s| s as u64 <= e)
        .collect();
    let largest = SEND_SIZES[SEND_SIZES.len() - 1] as u64;
    if e < largest && sizes.last().is_none_or(|&s| (s as u64) < e) && e > 8 {
        sizes.push(e as usize);
    }
    sizes
}

/// Counts of the interleaved small figures, decided on `a`.
pub(super) struct SmallCounts {
    /// How long `b` waits before posting an o_r receive.
    pub(super) delay: Duration,
    /// 8-byte ping-pongs per round.
    pub(super) pp_per_round: usize,
    /// o_s and o_r samples per round.
    pub(super) n_over: usize,
    /// Sizes of the sends timed beside o_s ([`send_sizes`]), half as
    /// many samples each per round, at least 10.
    pub(super) send_sizes: Vec<usize>,
    /// Per size, how long `a` stays away from MPI before each timed send
    /// ([`send_pause`]; on `a`; zero on `b`).
    pub(super) send_pauses: Vec<Duration>,
}

/// How long the sender stays away from MPI before each timed send of a
/// size whose one-way time is `one_way_s`: four of those, at least
/// 100 us and at most 10 ms. An iterative code sends its halo after a
/// stage, when the link has drained: sends back to back would each find
/// the last one's bytes still in the socket's buffer and the shaper's
/// bucket empty, and pay the link's rate (on two emulated hosts at 1
/// Gbit/s, 2026-12-05: 16 KiB sends back to back took 127-134 us, where
/// jacobi's 16 400-byte sends after its stage took 47 us).
fn send_pause(one_way_s: f64) -> Duration {
    let s = if one_way_s.is_finite() {
        4.0 * one_way_s
    } else {
        0.0
    };
    Duration::from_secs_f64(s.clamp(100e-6, 10e-3))
}

/// Samples of the small figures, one vector per round.
pub(super) struct SmallSamples {
    /// 8-byte RTT/2 (on `a`).
    pub(super) pp: Vec<Vec<f64>>,
    /// o_s (on `a`).
    pub(super) os: Vec<Vec<f64>>,
    /// o_r (taken on `b`; on `a` after [`PairRun::gather_o_r`]).
    pub(super) or: Vec<Vec<f64>>,
    /// Per size of [`SmallCounts::send_sizes`], the sender's time in its
    /// eager sends, one vector per round (on `a`).
    pub(super) by_size: Vec<Vec<Vec<f64>>>,
}

impl PairRun<'_> {
    /// The small figures' counts: `a` decides them (the delay before an
    /// o_r receive is four small round trips, at least 20 µs; the counts
    /// per round fit the small figures' budget, at least 20 each) and
    /// sends them to `b`, with the eager limit, which sets the sizes of
    /// the sends timed beside o_s.
    pub(super) fn small_counts(
        &self,
        rtt8: f64,
        eager: Option<u64>,
        one_way: &dyn Fn(usize) -> f64,
    ) -> SmallCounts {
        let (plan, a, b) = (self.plan, self.a, self.b);
        let mut small = [0.0f64; 4];
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
            small = [
                delay,
                pp as f64,
                over as f64,
                eager.map_or(-1.0, |e| e as f64),
            ];
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
        let send_sizes: Vec<usize> = send_sizes((small[3] >= 0.0).then_some(small[3] as u64))
            .into_iter()
            .filter(|&s| s <= self.plan.largest())
            .collect();
        let send_pauses = (send_sizes.iter())
            .map(|&s| {
                if self.world.rank() == a {
                    send_pause(one_way(s))
                } else {
                    Duration::ZERO
                }
            })
            .collect();
        SmallCounts {
            delay: Duration::from_secs_f64(small[0]),
            pp_per_round: small[1] as usize,
            n_over: small[2] as usize,
            send_sizes,
            send_pauses,
        }
    }

    /// The small figures, in interleaved rounds: each round takes 8-byte
    /// ping-pongs, then o_s, then o_r samples, then the sends of each
    /// larger size, so that a drift of the machine shows as a difference
    /// between rounds (spread, modes) and not as a difference between
    /// figures.
    pub(super) fn small_rounds(&mut self, counts: &SmallCounts) -> SmallSamples {
        let (mut pp, mut os, mut or) = (Vec::new(), Vec::new(), Vec::new());
        let mut by_size = vec![Vec::new(); counts.send_sizes.len()];
        let n_size = (counts.n_over / 2).max(10);
        for _ in 0..self.plan.rounds {
            pp.push(self.ping_pong_round(counts.pp_per_round));
            os.push(self.o_send_round(counts.n_over));
            or.push(self.o_recv_round(counts.n_over, counts.delay));
            for (k, &size) in counts.send_sizes.iter().enumerate() {
                // One untimed send of the size first.
                let mut round = self.send_round(size, n_size + 1, counts.send_pauses[k]);
                if !round.is_empty() {
                    round.remove(0);
                }
                by_size[k].push(round);
            }
        }
        SmallSamples {
            pp,
            os,
            or,
            by_size,
        }
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
        self.send_round(8, n, Duration::ZERO)
    }

    /// One round of `n` samples of the sender's time in a blocking send
    /// of `size` bytes (on `a`), `b` waiting in its receive; `b` answers
    /// each with a byte, so that the sends do not queue, and `a` spins
    /// for `pause` before each ([`send_pause`]).
    fn send_round(&mut self, size: usize, n: usize, pause: Duration) -> Vec<f64> {
        let (pa, pb) = (
            self.world.process_at_rank(self.a),
            self.world.process_at_rank(self.b),
        );
        let mut ack = 0u8;
        let mut round = Vec::with_capacity(n);
        for _ in 0..n {
            if self.world.rank() == self.a {
                if !pause.is_zero() {
                    spin(pause);
                }
                let t = Instant::now();
                pb.send_with_tag(&self.sbuf[..size], TAG);
                round.push(t.elapsed().as_secs_f64());
                pb.receive_into_with_tag(&mut ack, TAG);
            } else {
                pa.receive_into_with_tag(&mut self.buf[..size], TAG);
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
    pub(super) fn gather_o_r(&self, small: SmallSamples, n_over: usize) -> Option<SmallSamples> {
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
