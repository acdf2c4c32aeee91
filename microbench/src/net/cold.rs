//! The one-way time of a large message between buffers out of the cache
//! ([`cold_one_way`]): what a redistribution's moves of rows see; and, from
//! the same round trips, how much of it the transport still held when the
//! sender's request completed ([`Cold::send_buffer_bytes`]); and the same
//! round trips at a move's sizes waited for as a move waits, napping
//! ([`Cold::moves`]).

use super::{TAG, agree, debug_counts, round_trip};
use crate::budget::budgeted_count;
use mheta_base::median;
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, SimpleCommunicator};
use std::time::Instant;

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

/// Ranks of this job on this host, as the launcher says (Open MPI's
/// `OMPI_COMM_WORLD_LOCAL_SIZE`, Hydra's `MPI_LOCALNRANKS`; 1 when it says
/// neither): the cache a pool must pass is shared among them.
pub fn ranks_on_this_host() -> usize {
    ["OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"]
        .iter()
        .find_map(|k| std::env::var(k).ok()?.parse().ok())
        .unwrap_or(1usize)
        .max(1)
}

/// What [`cold_one_way_within`] measures (on rank `a`; zeros on `b`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cold {
    /// One-way time of the message, seconds (median of half round trips).
    pub one_way_s: f64,
    /// Bytes of the message still on their way to `b`, whose receive was
    /// posted, when `a`'s send returned (median over the round trips):
    /// what the transport took off the sender's hands (TCP's socket
    /// buffers, a link's queue; about none where the receiver copies the
    /// message itself, as on one node). A round trip's `b` is taken to
    /// have the message half-way through it, so a round trip of t whose
    /// send returned after s left (t/2 - s) of its t/2 to go: that share
    /// of the bytes.
    pub send_buffer_bytes: u64,
    /// Messages of each of [`mheta_profile::MOVE_BYTES`] not above the
    /// size, through the same pools, with both ends waiting for them as a
    /// move does (non-blocking, polling and then napping:
    /// [`mheta_base::nap`]): one-way times, the medians of half round
    /// trips. Where a link's work needs the core a polling rank holds,
    /// less than the polled round trips'.
    pub moves: Vec<mheta_profile::MovePoint>,
}

/// Wait for one request as a move waits ([`mheta_base::nap`]).
fn nap_wait<'a, S: mpi::request::Scope<'a>>(r: mpi::request::Request<'a, [u8], S>) {
    let mut r = Some(r);
    let progress = || match r.take().map(|q| q.test()) {
        Some(Err(back)) => {
            r = Some(back);
            (false, false)
        }
        _ => (true, true),
    };
    mheta_base::nap::wait_napping(progress, &mut || false, true);
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
    cold_one_way_within(world, a, b, size, f64::INFINITY, 3, 0.0).one_way_s
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
) -> Cold {
    let me = world.rank();
    let (pa, pb) = (world.process_at_rank(a), world.process_at_rank(b));
    let want = 3 * last_level_cache_bytes() / ranks_on_this_host();
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
    let mut held = Vec::with_capacity(timed);
    for r in 1..=timed {
        let k = (r % n) * size;
        if me == a {
            let t = Instant::now();
            pb.send_with_tag(&sp[k..k + size], TAG);
            let sent = t.elapsed().as_secs_f64();
            pb.receive_into_with_tag(&mut rp[k..k + size], TAG);
            let half = t.elapsed().as_secs_f64() / 2.0;
            samples.push(half);
            if half > 0.0 {
                held.push(((half - sent) / half).clamp(0.0, 1.0));
            }
        } else {
            pa.receive_into_with_tag(&mut rp[k..k + size], TAG);
            pa.send_with_tag(&sp[k..k + size], TAG);
        }
    }
    // The same round trips at each move size, waited for as a move waits.
    let sizes: Vec<usize> = (mheta_profile::MOVE_BYTES.iter())
        .map(|&b| b as usize)
        .filter(|&b| b <= size)
        .collect();
    // At least 3 round trips (a median, where the polled ones may be one
    // on a slow link), 5 where they fit in a second.
    let trips = budgeted_count(timed.max(5), 3, budget_s.max(1.0), trip_s);
    let trips = agree(world, a, b, &[trips as u64])[0] as usize;
    let mut napped = vec![Vec::with_capacity(trips); sizes.len()];
    for r in 1..=trips {
        let k = (r % n) * size;
        for (&m, out) in sizes.iter().zip(&mut napped) {
            let t = Instant::now();
            mpi::request::scope(|sc| {
                let (send, recv) = (&sp[k..k + m], &mut rp[k..k + m]);
                if me == a {
                    nap_wait(pb.immediate_send_with_tag(sc, send, TAG));
                    nap_wait(pb.immediate_receive_into_with_tag(sc, recv, TAG));
                } else {
                    nap_wait(pa.immediate_receive_into_with_tag(sc, recv, TAG));
                    nap_wait(pa.immediate_send_with_tag(sc, send, TAG));
                }
            });
            out.push(t.elapsed().as_secs_f64() / 2.0);
        }
    }
    if me != a {
        return Cold::default();
    }
    Cold {
        one_way_s: median(&mut samples).unwrap_or(0.0),
        send_buffer_bytes: (median(&mut held).unwrap_or(0.0) * size as f64).round() as u64,
        moves: (sizes.iter().zip(&mut napped))
            .filter_map(|(&m, v)| {
                Some(mheta_profile::MovePoint {
                    bytes: m as u64,
                    one_way_s: median(v).filter(|&t| t > 0.0)?,
                })
            })
            .collect(),
    }
}
