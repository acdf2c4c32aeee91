//! A halo exchange as an iterative code's ranks do it
//! ([`exchange_after_gap`]): both ranks of a pair send each other a
//! message at once, back to back and after a while of sweeping memory
//! with no MPI call. Across a link both ways' messages share the hosts'
//! network stacks, and after a sweep the path's code and state are out
//! of the caches: a ping-pong's one-way time is neither
//! (`docs/design/fidelity.md`, "What a halo exchange costs").

use super::cold::{last_level_cache_bytes, ranks_on_this_host};
use mheta_profile::{ExchangePoint, SampleStats};
use mpi::point_to_point::{Destination, Source};
use mpi::request::WaitGuard;
use mpi::topology::{Communicator, SimpleCommunicator};
use std::time::{Duration, Instant};

/// Bytes each way: a small halo, a stencil row of 2048 doubles, and
/// four of them.
pub const EXCHANGE_BYTES: [usize; 3] = [1024, 16 << 10, 64 << 10];

/// Seconds without an MPI call before an exchange (0: back to back).
pub const EXCHANGE_GAPS_S: [f64; 3] = [0.0, 0.002, 0.01];

const TAG: i32 = 0x6578;

/// Sweep `a` (read and write) until `until`, a cache line at a time in
/// blocks, from where the last sweep left off.
fn sweep_until(a: &mut [f64], at: &mut usize, until: Instant) {
    const BLOCK: usize = 8192;
    while Instant::now() < until {
        let end = (*at + BLOCK).min(a.len());
        for x in a[*at..end].iter_mut().step_by(8) {
            *x = *x * 0.999_999 + 1e-9;
        }
        *at = if end == a.len() { 0 } else { end };
    }
    std::hint::black_box(&a);
}

/// The [`PairCost::exchange`](mheta_profile::PairCost::exchange) figures
/// of ranks `a` and `b`, both of which call it (the same on both; empty
/// on other ranks): for each gap of [`EXCHANGE_GAPS_S`] and size of
/// [`EXCHANGE_BYTES`], `reps` exchanges, each the mean of the two ranks'
/// times from posting both requests to completing both. Before each,
/// the two ranks meet with a one-byte exchange (back to back: it is the
/// previous exchange), then each sweeps an array of twice its share of
/// the last-level cache for the gap by its own clock.
pub fn exchange_after_gap(
    world: &SimpleCommunicator,
    a: i32,
    b: i32,
    reps: usize,
) -> Vec<ExchangePoint> {
    let me = world.rank();
    if me != a && me != b || a == b {
        return Vec::new();
    }
    let peer = world.process_at_rank(if me == a { b } else { a });
    let largest = EXCHANGE_BYTES.iter().copied().max().unwrap_or(0);
    let sbuf = vec![1u8; largest];
    let mut rbuf = vec![0u8; largest];
    let mut mem = vec![1.0f64; 2 * last_level_cache_bytes() / ranks_on_this_host() / 8];
    let mut at = 0;
    let reps = reps.max(1);
    let mut out = Vec::new();
    for &gap in &EXCHANGE_GAPS_S {
        for &bytes in &EXCHANGE_BYTES {
            let mut mine = Vec::with_capacity(reps);
            // One untimed exchange of the size first: the connection and
            // the buffers' pages are then set up.
            for rep in 0..=reps {
                let (one, mut one_in) = ([0u8; 1], [0u8; 1]);
                mpi::request::scope(|s| {
                    let _r = WaitGuard::from(peer.immediate_receive_into_with_tag(
                        s,
                        &mut one_in[..],
                        TAG,
                    ));
                    peer.send_with_tag(&one[..], TAG);
                });
                if gap > 0.0 {
                    sweep_until(
                        &mut mem,
                        &mut at,
                        Instant::now() + Duration::from_secs_f64(gap),
                    );
                }
                let t0 = Instant::now();
                mpi::request::scope(|s| {
                    let r = peer.immediate_receive_into_with_tag(s, &mut rbuf[..bytes], TAG + 1);
                    let q = peer.immediate_send_with_tag(s, &sbuf[..bytes], TAG + 1);
                    r.wait();
                    q.wait();
                });
                if rep > 0 {
                    mine.push(t0.elapsed().as_secs_f64());
                }
            }
            // Both ranks' times; each exchange's the mean of the two.
            let mut theirs = vec![0.0f64; reps];
            mpi::request::scope(|s| {
                let _r = WaitGuard::from(peer.immediate_receive_into_with_tag(
                    s,
                    &mut theirs[..],
                    TAG + 2,
                ));
                peer.send_with_tag(&mine[..], TAG + 2);
            });
            let both: Vec<f64> = mine
                .iter()
                .zip(&theirs)
                .map(|(x, y)| 0.5 * (x + y))
                .collect();
            out.push(ExchangePoint {
                gap_s: gap,
                bytes: bytes as u64,
                one_way: SampleStats::from_samples(&both),
            });
        }
    }
    out
}
