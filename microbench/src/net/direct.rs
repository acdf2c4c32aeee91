//! The runtime's on-node copy of a move's piece, measured as it runs
//! ([`direct_copy`]): between two ranks of one host, each piece of a move
//! of at least `mheta_model::redist::DIRECT_COPY_MIN_BYTES` is copied by
//! both ends at once, the sender pushing the front half into the
//! receiver's rows (`process_vm_writev`) while the receiver pulls the
//! back half (`process_vm_readv`), and each end then tells the other its
//! half landed (`mheta_runtime`'s `onnode.rs`). Its rate is neither a
//! `memmove`'s (`NodeCost::copy_per_byte`) nor MPI's single-copy
//! transfer's (`PairCost::bandwidth_cold_bps`): the kernel pins each
//! remote page, and two cores copy.

use super::cold::{last_level_cache_bytes, ranks_on_this_host};
use super::{TAG, agree, round_trip};
use mheta_base::median;
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, SimpleCommunicator};
use std::time::Instant;

/// Bytes of the piece [`direct_copy`] moves: [`mheta_profile::COLD_BYTES`]
/// (8 MiB), twice the smallest piece the runtime copies this way.
pub const DIRECT_BYTES: usize = mheta_profile::COLD_BYTES;

/// Bytes per second of one [`DIRECT_BYTES`] piece from `a` to `b` (two
/// ranks of one host) copied by both ends as the runtime copies a move's
/// piece, on `a` (None on `b`, and on `a` when either end's copy failed:
/// another PID namespace, Yama's `ptrace_scope`, a container's rules).
/// Both call it. `a`'s rows are read from a pool of regions written
/// before the timing and together past the last-level cache (as
/// [`super::cold_one_way`]'s), so each piece reads rows the cache has
/// lost, as a move's rows are; `b`'s land in memory mapped afresh and
/// backed (`MADV_POPULATE_WRITE`) just before, untimed, as a move's
/// receiver grows its buffer and backs the new rows before an on-node
/// copy (the runtime's `grow_for_move`), each with pages not just given
/// back (`node::FreshRegions`). A piece's time runs on `a` from a
/// one-byte round trip that starts both ends to the other end's "my half
/// landed"; the figure is the median of `reps` pieces.
pub fn direct_copy(world: &SimpleCommunicator, a: i32, b: i32, reps: usize) -> Option<f64> {
    let size = DIRECT_BYTES;
    let me = world.rank();
    let reps = reps.max(1);
    // Regions a pool: 3 x the last-level cache over this host's ranks,
    // but no more than the pieces use (each piece a region of its own).
    let n = (3 * last_level_cache_bytes() / ranks_on_this_host())
        .div_ceil(size)
        .clamp(2, reps + 1);
    let n = agree(world, a, b, &[n as u64])[0] as usize;
    let pool = if me == a {
        vec![3u8; n * size]
    } else {
        Vec::new()
    };
    // a's PID and pool address, to b; b's PID, to a.
    let mine = [std::process::id() as u64, pool.as_ptr() as u64];
    let peer = world.process_at_rank(if me == a { b } else { a });
    let mut theirs = [0u64; 2];
    mpi::request::scope(|scope| {
        let req = peer.immediate_send_with_tag(scope, &mine[..], TAG);
        peer.receive_into_with_tag(&mut theirs[..], TAG);
        req.wait();
    });
    let (pid, base) = (theirs[0] as libc::pid_t, theirs[1]);
    let half = size / 2;
    let mut ok = true;
    let mut samples = Vec::with_capacity(reps);
    let mut one = [0u8; 1];
    let mut fresh = crate::node::FreshRegions::default();
    for r in 1..=reps {
        let k = (r % n) * size;
        // b's landing region, mapped and backed now; its address to a.
        let mut to = [0u64];
        if me == b {
            // Where the kernel cannot populate (before 5.14), the copy's
            // writes fault the pages in instead.
            to[0] = fresh.map(size).map_or(0, |p| {
                crate::node::populate(p, size);
                p.as_ptr() as u64
            });
            peer.send_with_tag(&to[..], TAG);
        } else {
            peer.receive_into_with_tag(&mut to[..], TAG);
        }
        // Both ends start together.
        round_trip(world, a, b, &[1u8], &mut one, 1);
        let t = Instant::now();
        let copied = if to[0] == 0 {
            Err(std::io::Error::other("no region to land in"))
        } else if me == a {
            // The front half of a's rows into b's region.
            mheta_base::os::write_to_process(pid, &pool[k..k + half], to[0])
        } else {
            // The back half of a's rows into b's region.
            // SAFETY: `to` is the start of b's own live mapping of `size`
            // bytes (`FreshRegions::map`), which nothing else refers to.
            let dst = unsafe { std::slice::from_raw_parts_mut(to[0] as *mut u8, size) };
            mheta_base::os::read_from_process(pid, &mut dst[half..], base + (k + half) as u64)
        };
        let landed = [u8::from(copied.is_ok())];
        let mut other = [0u8; 1];
        mpi::request::scope(|scope| {
            let req = peer.immediate_send_with_tag(scope, &landed[..], TAG);
            peer.receive_into_with_tag(&mut other[..], TAG);
            req.wait();
        });
        ok &= landed[0] == 1 && other[0] == 1;
        samples.push(t.elapsed().as_secs_f64());
    }
    std::hint::black_box(&pool);
    if me != a || !ok {
        return None;
    }
    median(&mut samples)
        .filter(|&s| s > 0.0)
        .map(|s| size as f64 / s)
}
