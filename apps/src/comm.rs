//! The kernels' communication, with a choice of how to wait (`--wait`).
//!
//! Open MPI's blocking calls spin while they wait. On a node with more
//! ranks than cores that spinning takes the CPU (or the cgroup quota) that
//! a computing rank needs, so an emulated slow rank slows its neighbours
//! too and no distribution behaves as the cluster spec says. With
//! `--wait sleep` (the default on an oversubscribed node, like Intel MPI's
//! `I_MPI_WAIT_MODE`) every call here posts the non-blocking form and tests
//! it, back to back for 30 µs and then with ~50 µs sleeps in between, so
//! a waiting rank leaves the core to the others. With `--wait poll` the
//! blocking calls are used as they are.
//! The interposer sees the non-blocking calls and their completions, which
//! the model reads like the blocking ones.

use mpi::collective::{CommunicatorCollectives, Operation};
use mpi::datatype::{Buffer, BufferMut, Equivalence, PartitionMut};
use mpi::point_to_point::{self as p2p, Destination, Source};
use mpi::request::{Request, Scope};
use mpi::topology::{Communicator, SimpleCommunicator};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

static SLEEP: AtomicBool = AtomicBool::new(false);

/// Wait by sleeping between tests (true) or in the blocking calls.
pub fn set_sleep(on: bool) {
    SLEEP.store(on, Ordering::Relaxed);
    if on {
        // Sleeps of a few microseconds, not the default 50 us of slack.
        // SAFETY: PR_SET_TIMERSLACK takes an integer; no pointers.
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong, 0, 0, 0);
        }
    }
}

pub fn sleeping() -> bool {
    SLEEP.load(Ordering::Relaxed)
}

/// Test without sleeping for this long first.
const SPIN: Duration = Duration::from_micros(30);

/// Complete `req`: test it back to back for [`SPIN`], then sleep ~50 µs
/// between tests. A message above the eager limit needs a test on each
/// side for each step of its handshake, so with sleeps alone every step
/// waited for the next test (the halo exchange then took a sizeable part
/// of a stage: docs/design/apps.md). The short spin finishes
/// such a handshake while both sides are in it; a rank whose peer still
/// computes goes to sleep after it.
fn settle<'a, D: ?Sized, S: Scope<'a>>(mut req: Request<'a, D, S>) {
    let start = std::time::Instant::now();
    loop {
        match req.test() {
            Ok(_) => return,
            Err(r) => {
                req = r;
                if start.elapsed() < SPIN {
                    std::hint::spin_loop();
                } else {
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
        }
    }
}

/// Complete a request posted by the caller: sleeping between tests, or
/// `MPI_Wait`.
pub fn complete<'a, D: ?Sized, S: Scope<'a>>(req: Request<'a, D, S>) {
    if sleeping() {
        settle(req);
    } else {
        req.wait();
    }
}

/// Send `send` to `to` and receive `recv` from `from` (either may be none),
/// as `MPI_Sendrecv` does.
pub fn shift(
    world: &SimpleCommunicator,
    send: &[f64],
    to: Option<usize>,
    recv: &mut [f64],
    from: Option<usize>,
) {
    if !sleeping() {
        match (to, from) {
            (Some(t), Some(f)) => {
                p2p::send_receive_into(
                    send,
                    &world.process_at_rank(t as i32),
                    recv,
                    &world.process_at_rank(f as i32),
                );
            }
            (Some(t), None) => world.process_at_rank(t as i32).send(send),
            (None, Some(f)) => {
                world.process_at_rank(f as i32).receive_into(recv);
            }
            (None, None) => {}
        }
        return;
    }
    mpi::request::scope(|scope| {
        let r = from.map(|f| {
            world
                .process_at_rank(f as i32)
                .immediate_receive_into(scope, recv)
        });
        let s = to.map(|t| world.process_at_rank(t as i32).immediate_send(scope, send));
        if let Some(r) = r {
            settle(r);
        }
        if let Some(s) = s {
            settle(s);
        }
    });
}

/// Send `data` to `to` with `tag`.
pub fn send_tagged(world: &SimpleCommunicator, data: &[f64], to: usize, tag: i32) {
    let p = world.process_at_rank(to as i32);
    if !sleeping() {
        p.send_with_tag(data, tag);
        return;
    }
    mpi::request::scope(|scope| settle(p.immediate_send_with_tag(scope, data, tag)));
}

/// Receive into `buf` from `from` with `tag`.
pub fn recv_tagged(world: &SimpleCommunicator, buf: &mut [f64], from: usize, tag: i32) {
    let p = world.process_at_rank(from as i32);
    if !sleeping() {
        p.receive_into_with_tag(buf, tag);
        return;
    }
    mpi::request::scope(|scope| settle(p.immediate_receive_into_with_tag(scope, buf, tag)));
}

/// `MPI_Allreduce`.
pub fn all_reduce<S, R, O>(world: &SimpleCommunicator, send: &S, recv: &mut R, op: O)
where
    S: Buffer + ?Sized,
    R: BufferMut + ?Sized,
    O: Operation,
{
    if !sleeping() {
        world.all_reduce_into(send, recv, op);
        return;
    }
    mpi::request::scope(|scope| settle(world.immediate_all_reduce_into(scope, send, recv, op)));
}

/// `MPI_Allgatherv`: `local` from every rank into `full`, rank i's part
/// `counts[i]` elements at `displs[i]`.
pub fn all_gather_varcount<T: Equivalence>(
    world: &SimpleCommunicator,
    local: &[T],
    full: &mut [T],
    counts: &[i32],
    displs: &[i32],
) {
    let mut part = PartitionMut::new(full, counts, displs);
    if !sleeping() {
        world.all_gather_varcount_into(local, &mut part);
        return;
    }
    mpi::request::scope(|scope| {
        settle(world.immediate_all_gather_varcount_into(scope, local, &mut part))
    });
}
