//! The pair's eager limit ([`eager_limit`]): the largest message whose
//! send completes before its receive is posted, probed by a sender that
//! tests its send while the receiver stays out of MPI.

use super::{TAG, debug_counts, idle, spin};
use crate::budget;
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, Process, SimpleCommunicator};
use std::time::{Duration, Instant};

/// How long the eager-limit probe's sender tests its send for completion,
/// while the receiver stays out of MPI for [`EAGER_QUIET`] (the least of
/// each; [`budget::eager_times`] lengthens them on a slow pair).
const EAGER_HOLD: Duration = Duration::from_micros(250);
pub(super) const EAGER_QUIET: Duration = Duration::from_micros(1000);
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
