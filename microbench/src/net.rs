//! Point-to-point measurements of one ordered pair: the plan of how much
//! to measure ([`Effort`]), what the transport holds of the pair's first
//! large message (`first`), the ping-pong sweep and streams (`stream`),
//! the cold-buffer one-way time (`cold`), the eager limit (`eager`),
//! the small figures o_s, o_r and the 8-byte round trip (`small`), the
//! runtime's on-node copy of a move's piece (`direct`), and the whole
//! pair ([`measure_pair`]). This module keeps what they share:
//! the tag, the count agreement, one round trip, the timer's cost and
//! the ways of staying out of MPI.

mod cold;
mod direct;
mod eager;
mod effort;
mod exchange;
mod first;
mod pair;
mod small;
mod stream;

pub use cold::{Cold, cold_one_way, cold_one_way_within, last_level_cache_bytes};
pub use direct::{DIRECT_BYTES, direct_copy};
pub use eager::eager_limit;
pub use effort::{Effort, LARGE, WINDOW};
pub use exchange::{EXCHANGE_BYTES, EXCHANGE_GAPS_S, exchange_after_gap};
pub use first::first_bulk_held;
pub use pair::measure_pair;

use eager::EAGER_QUIET;
use mheta_base::median;
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, SimpleCommunicator};
use std::time::{Duration, Instant};

/// The tag of every message of the measurements.
const TAG: i32 = 0x4d42;

/// Cost of one timer reading: the median of 1001 back-to-back differences
/// (seconds). Every timed sample includes one such reading.
pub fn timer_cost() -> f64 {
    let mut v: Vec<f64> = (0..1001)
        .map(|_| {
            let t = Instant::now();
            t.elapsed().as_secs_f64()
        })
        .collect();
    median(&mut v).unwrap_or(0.0)
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

/// `MHETA_DEBUG_COUNTS` set: the counts each loop took go to stderr.
fn debug_counts() -> bool {
    std::env::var_os("MHETA_DEBUG_COUNTS").is_some()
}
