//! The sweep's two loops at one message size: the ping-pong (one-way
//! time as half a round trip, [`ping_pong`]) and the streaming bandwidth
//! (windows of non-blocking sends, as osu_bw, [`bandwidth`]).

use super::{TAG, agree, debug_counts, round_trip};
use crate::budget::{self, StreamCounts, budgeted_count};
use mheta_base::median;
use mpi::point_to_point::{Destination, Source};
use mpi::request::WaitGuard;
use mpi::topology::{Communicator, SimpleCommunicator};
use std::time::Instant;

/// Ping-pong of `size` bytes: `warm` untimed round trips, then `reps`
/// timed ones, of which `a` keeps RTT/2 (empty on `b`). Within
/// `budget_s`: the first round trip is timed to decide how many of the
/// other warm-ups fit in a fifth of the budget, the median warm-up to
/// decide how many timed ones fit in what is left (at least `min_reps`).
#[allow(clippy::too_many_arguments)]
pub(super) fn ping_pong(
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
    let n = budgeted_count(reps, min_reps, left, median(&mut w).unwrap_or(0.0));
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
pub(super) fn bandwidth(
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
    median(&mut bws).unwrap_or(0.0)
}
