//! Moving GEN_BLOCK rows among the live ranks: each rank's part of a move
//! ([`MovePlan`]), the move in a rank's own buffer
//! ([`redistribute_in_place`], [`RowBlock`]), its pieces through MPI or
//! copied directly between ranks of one node (`onnode.rs`), and how a rank
//! waits for them.

use crate::rowbuf::{Prefault, RowBuf};
use crate::{Switch, onnode};
use mheta_model::Dist;
use mpi::datatype::Equivalence;
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, SimpleCommunicator};

/// Tag of redistribution messages.
const REDIST_TAG: i32 = 0x6d68; // "mh"

/// Rows `[start, end)` of rank `r` under `d`.
fn range(d: &Dist, r: usize) -> (u64, u64) {
    let start: u64 = d.0[..r].iter().sum();
    (start, start + d.0[r])
}

fn overlap(a: (u64, u64), b: (u64, u64)) -> Option<(u64, u64)> {
    let (s, e) = (a.0.max(b.0), a.1.min(b.1));
    (s < e).then_some((s, e))
}

/// Rows of the largest piece that changes rank in the move `old` -> `new`.
fn largest_piece(old: &Dist, new: &Dist) -> u64 {
    let (mut i, mut j, mut at, mut best) = (0, 0, 0u64, 0u64);
    let (mut oe, mut ne) = (old.0[0], new.0[0]);
    loop {
        let end = oe.min(ne);
        if i != j {
            best = best.max(end - at);
        }
        at = end;
        if oe == end {
            i += 1;
            if i == old.ranks() {
                return best;
            }
            oe += old.0[i];
        }
        if ne == end {
            j += 1;
            if j == new.ranks() {
                return best;
            }
            ne += new.0[j];
        }
    }
}

/// The ranks a move copies to and from directly (see [`onnode`]), when
/// some piece of the move is large enough and the user did not turn it
/// off. Collective over `world` (every rank decides the same from the
/// same distributions).
fn direct_peers<T>(
    world: &SimpleCommunicator,
    old: &Dist,
    new: &Dist,
    row_len: usize,
) -> Option<onnode::Peers> {
    let bytes = largest_piece(old, new) as usize * row_len * std::mem::size_of::<T>();
    (bytes >= onnode::MIN_BYTES && onnode::on_node_copy_wanted()).then(|| onnode::Peers::of(world))
}

/// Move a row-distributed array from `old` to `new` (GEN_BLOCK both):
/// `local` holds this rank's old rows of `row_len` values each; the result
/// holds its new rows. A copy for callers that keep the old rows; the apps
/// move in place with [`redistribute_in_place`]. Collective over `world`.
pub fn redistribute<T: Equivalence + Copy + Default>(
    world: &SimpleCommunicator,
    old: &Dist,
    new: &Dist,
    row_len: usize,
    local: &[T],
) -> Vec<T> {
    let mut v = local.to_vec();
    redistribute_in_place(world, old, new, row_len, &mut v);
    v
}

/// What a rank sends and receives in a GEN_BLOCK move, and the rows it
/// keeps. Positions are in rows: old-layout positions for sends and the
/// kept rows' source, new-layout positions for receives and their target.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MovePlan {
    /// (peer, first position in the old layout, rows).
    pub sends: Vec<(usize, u64, u64)>,
    /// (peer, first position in the new layout, rows).
    pub recvs: Vec<(usize, u64, u64)>,
    /// (old position, new position, rows) of the rows this rank keeps.
    pub keep: (u64, u64, u64),
    pub old_rows: u64,
    pub new_rows: u64,
}

impl MovePlan {
    /// The plan of rank `me` for the move `old` -> `new`.
    pub fn new(old: &Dist, new: &Dist, me: usize) -> MovePlan {
        let (mo, mn) = (range(old, me), range(new, me));
        let mut plan = MovePlan {
            old_rows: mo.1 - mo.0,
            new_rows: mn.1 - mn.0,
            ..Default::default()
        };
        for j in 0..old.ranks() {
            if j == me {
                if let Some(k) = overlap(mo, mn) {
                    plan.keep = (k.0 - mo.0, k.0 - mn.0, k.1 - k.0);
                }
                continue;
            }
            if let Some(o) = overlap(mo, range(new, j)) {
                plan.sends.push((j, o.0 - mo.0, o.1 - o.0));
            }
            if let Some(o) = overlap(range(old, j), mn) {
                plan.recvs.push((j, o.0 - mn.0, o.1 - o.0));
            }
        }
        plan
    }

    /// Can every receive land at once? True when the kept rows stay where
    /// they are and every receive falls past the old rows, so nothing a
    /// receive writes is still to be sent or kept.
    pub fn one_phase(&self) -> bool {
        (self.keep.2 == 0 || self.keep.0 == self.keep.1)
            && self.recvs.iter().all(|&(_, at, _)| at >= self.old_rows)
    }

    /// Rows this rank sends to other ranks.
    pub fn rows_sent(&self) -> u64 {
        self.sends.iter().map(|s| s.2).sum()
    }
}

/// Move a row-distributed array from `old` to `new` (GEN_BLOCK both) in
/// its own buffer: `v` holds this rank's old rows of `row_len` values on
/// entry and its new rows on return. No buffer is allocated beyond the
/// growth of `v` to its new length (a shrinking `v` returns memory only
/// when more than a quarter of its capacity is free). Rows this rank keeps
/// are shifted when its block's first row changes; [`RowBlock`] avoids
/// that for large arrays. Collective over `world`.
pub fn redistribute_in_place<T: Equivalence + Copy + Default>(
    world: &SimpleCommunicator,
    old: &Dist,
    new: &Dist,
    row_len: usize,
    v: &mut Vec<T>,
) {
    let me = world.rank() as usize;
    let plan = MovePlan::new(old, new, me);
    assert_eq!(
        v.len() as u64,
        plan.old_rows * row_len as u64,
        "local rows do not match the old distribution"
    );
    let old_len = v.len();
    let peers = direct_peers::<T>(world, old, new, row_len);
    move_rows(world, &plan, peers.as_ref(), row_len, v, 0, 0);
    let new_len = plan.new_rows as usize * row_len;
    v.truncate(new_len);
    if v.capacity() > new_len + new_len / 3 + 4096 && old_len > new_len {
        v.shrink_to_fit();
    }
}

/// A rank's block of GEN_BLOCK rows inside a larger buffer, so that a move
/// leaves the rows the rank keeps where they are: giving rows away from
/// the front only moves the block's start, and rows received at the front
/// land in the room that left. Reads as the slice of its rows.
///
/// The buffer is a [`RowBuf`] (its own mapping, which grows without a
/// copy and can hold huge pages, from which sends on one node run faster:
/// docs/design/runtime.md). It is kept between moves (the next move
/// usually needs it again) until it is more than four times the block,
/// when the block is copied to the front and the pages past it are
/// returned.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RowBlock<T: Copy + Default> {
    buf: RowBuf<T>,
    start: usize,
    len: usize,
}

impl<T: Copy + Default> RowBlock<T> {
    /// `len` values of `T::default()`, their pages backed now (no page
    /// fault in a later iteration).
    pub fn zeroed(len: usize) -> RowBlock<T> {
        RowBlock {
            buf: RowBuf::zeroed(len),
            start: 0,
            len,
        }
    }

    /// A block holding a copy of `v`.
    pub fn from_slice(v: &[T]) -> RowBlock<T> {
        RowBlock {
            buf: RowBuf::from_slice(v),
            start: 0,
            len: v.len(),
        }
    }

    /// Values the buffer holds, the block's and the room around it.
    pub fn buffer_len(&self) -> usize {
        self.buf.len()
    }

    /// Where the block starts in the buffer.
    pub fn start(&self) -> usize {
        self.start
    }

    /// Move this rank's rows from `old` to `new`, as
    /// [`redistribute_in_place`] does, without shifting the rows it keeps
    /// when the buffer has room for the new block around them. Collective
    /// over `world`.
    pub fn redistribute(
        &mut self,
        world: &SimpleCommunicator,
        old: &Dist,
        new: &Dist,
        row_len: usize,
    ) where
        T: Equivalence,
    {
        let me = world.rank() as usize;
        let plan = MovePlan::new(old, new, me);
        assert_eq!(
            self.len as u64,
            plan.old_rows * row_len as u64,
            "local rows do not match the old distribution"
        );
        let w = row_len;
        let new_len = plan.new_rows as usize * w;
        // Keep the kept rows in place: the new block starts keep.1 rows
        // before where they are now.
        let (from, to, kept) = plan.keep;
        let in_place = (self.start + from as usize * w).checked_sub(to as usize * w);
        let room = self.buf.len().max(2 * new_len);
        let place = match in_place {
            Some(p) if kept > 0 && p + new_len <= room => p,
            _ => 0,
        };
        let peers = direct_peers::<T>(world, old, new, w);
        move_rows(
            world,
            &plan,
            peers.as_ref(),
            w,
            &mut self.buf,
            self.start,
            place,
        );
        self.start = place;
        self.len = new_len;
        if self.buf.len() > 4 * new_len + 4096 {
            self.buf.copy_within(self.start..self.start + new_len, 0);
            self.start = 0;
            self.buf.resize(new_len);
            self.buf.release();
        }
    }
}

impl<T: Copy + Default> std::ops::Deref for RowBlock<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.buf[self.start..self.start + self.len]
    }
}

impl<T: Copy + Default> std::ops::DerefMut for RowBlock<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.buf[self.start..self.start + self.len]
    }
}

/// Grow `buf` to `need` values (the new ones `T::default()`). A large
/// growth populates the new part's pages in one call
/// (`MADV_POPULATE_WRITE`) before they are written: a fault per 4 KiB
/// page was most of a move's time (docs/design/runtime.md). No huge pages here: a
/// `Vec`'s growth reallocates and splits them (see [`RowBuf`]).
fn grow_vec<T: Copy + Default>(buf: &mut Vec<T>, need: usize) {
    const MIN: usize = 2 << 20;
    // Only memory the vector did not hold before is fresh: values between
    // its length and its old capacity were most likely written already.
    let old_cap = buf.capacity();
    if need <= old_cap {
        buf.resize(need, T::default());
        return;
    }
    buf.reserve_exact(need - buf.len());
    let size = std::mem::size_of::<T>();
    let (p, end) = (
        buf.as_ptr() as usize + old_cap * size,
        buf.as_ptr() as usize + need * size,
    );
    let (a, e) = ((p + 4095) & !4095, end & !4095);
    if e >= a + MIN {
        // SAFETY: [a, e) lies page-aligned inside the vector's allocation,
        // past its initialised values; populating only backs the pages
        // (with zeros), and `resize` below writes every value.
        unsafe {
            libc::madvise(a as *mut libc::c_void, e - a, libc::MADV_POPULATE_WRITE);
        }
    }
    buf.resize(need, T::default());
}

/// A buffer a move can write rows into: a slice that grows.
trait Growable<T>: std::ops::DerefMut<Target = [T]> {
    /// Grow to `need` values (new ones `T::default()`), leaving what the
    /// returned [`Prefault`] backs for later.
    fn grow(&mut self, need: usize) -> Prefault;
}

impl<T: Copy + Default> Growable<T> for Vec<T> {
    fn grow(&mut self, need: usize) -> Prefault {
        grow_vec(self, need);
        Prefault::NONE
    }
}

impl<T: Copy + Default> Growable<T> for RowBuf<T> {
    fn grow(&mut self, need: usize) -> Prefault {
        self.resize_unbacked(need)
    }
}

/// The move itself: this rank's old rows are `buf[start..]` (rows of `w`
/// values, `plan.old_rows` of them) and its new rows go to `buf[place..]`,
/// the buffer growing as needed. Pieces to and from `peers` of at least
/// [`onnode::MIN_BYTES`] are copied by both ends ([`onnode::exchange`]),
/// the rest through MPI.
///
/// When the kept rows are already where the new block puts them and no
/// receive lands on an old row, the rank sends and receives at once.
/// Otherwise it first sends (and waits for its sends), then moves its kept
/// rows, then receives. Neither can deadlock, whichever ranks take which
/// way: rows never flow both ways between two ranks, nor round a cycle (a
/// row moving up passes every rank between; a cycle would need some rank's
/// new block to lie both above and below its old one), so the ranks that
/// wait for their sends form chains that end at a rank that only receives,
/// which posts its receives at once. A direct piece, too, completes only
/// once its receiver is receiving, as an MPI send may. Collective over
/// `world`.
fn move_rows<T: Equivalence + Copy + Default>(
    world: &SimpleCommunicator,
    plan: &MovePlan,
    peers: Option<&onnode::Peers>,
    w: usize,
    buf: &mut impl Growable<T>,
    start: usize,
    place: usize,
) {
    let w64 = w as u64;
    let row_bytes = w * std::mem::size_of::<T>();
    let direct =
        |peer: usize, rows: u64| peers.is_some_and(|p| p.direct(peer, rows as usize * row_bytes));
    let copy_direct = |sends: &[(usize, &[T])], recvs: &mut [(usize, &mut [T])]| {
        if let Some(p) = peers {
            onnode::exchange(world, p, sends, recvs);
        }
    };
    let at = |pos: u64, rows: u64| (pos * w64) as usize..((pos + rows) * w64) as usize;
    let old = start..start + plan.old_rows as usize * w;
    let need = old.end.max(place + plan.new_rows as usize * w);
    let mut fresh = grow_for_move(buf, need, plan, peers);
    let (from, to, kept) = plan.keep;
    let kept_in_place = kept == 0 || start + from as usize * w == place + to as usize * w;
    let lands_on_old = plan.recvs.iter().any(|&(_, pos, rows)| {
        let r = at(pos, rows);
        place + r.start < old.end && old.start < place + r.end
    });
    if kept_in_place && !lands_on_old {
        // The receives go to disjoint slices outside the old rows.
        let (lo, hi) = buf.split_at_mut(old.start);
        let (src, above) = hi.split_at_mut(old.len());
        let src: &[T] = src;
        mpi::request::scope(|scope| {
            let (reqs, dsends) = post_sends(world, scope, src, &plan.sends, w64, direct);
            // New rows below the old ones land in `lo`, the rest in `above`.
            let (below, over): (Vec<_>, Vec<_>) = plan
                .recvs
                .iter()
                .partition(|&&(_, pos, _)| place + ((pos * w64) as usize) < old.start);
            let (mut recvs, mut drecvs) = (Vec::new(), Vec::new());
            if !below.is_empty() {
                (recvs, drecvs) =
                    post_recvs(world, scope, &mut lo[place..], 0, &below, w64, direct);
            }
            if let Some(&(_, first, _)) = over.first() {
                let off = place + (first * w64) as usize - old.end;
                let (r, d) = post_recvs(world, scope, &mut above[off..], first, &over, w64, direct);
                recvs.extend(r);
                drecvs.extend(d);
            }
            copy_direct(&dsends, &mut drecvs);
            recvs.extend(reqs);
            wait_all(recvs, &mut || fresh.step(PREFAULT_STEP));
        });
    } else {
        mpi::request::scope(|scope| {
            let src: &[T] = &buf[old.clone()];
            let (reqs, dsends) = post_sends(world, scope, src, &plan.sends, w64, direct);
            copy_direct(&dsends, &mut []);
            wait_all(reqs, &mut || fresh.step(PREFAULT_STEP));
        });
        if kept > 0 && !kept_in_place {
            let r = at(from, kept);
            // The shift's far end may lie in the buffer's fresh pages:
            // backed in one call now, not a fault per page under the copy.
            let dst_end = place + ((to + kept) * w64) as usize;
            fresh.back_below(buf.as_ptr() as usize + dst_end * std::mem::size_of::<T>());
            buf.copy_within(start + r.start..start + r.end, place + (to * w64) as usize);
        }
        mpi::request::scope(|scope| {
            let (recvs, mut drecvs) =
                post_recvs(world, scope, &mut buf[place..], 0, &plan.recvs, w64, direct);
            copy_direct(&[], &mut drecvs);
            wait_all(recvs, &mut || fresh.step(PREFAULT_STEP));
        });
    }
    // What the waits left: backed now, not by the next iteration's writes.
    while fresh.step(usize::MAX) {}
}

/// Grow `buf` to `need` values for a move. New pages that only receives
/// from other hosts fill are left for the returned [`Prefault`] to back
/// while the move waits, so that the senders need not wait for the faults
/// (docs/design/runtime.md); those a shift of the kept rows writes are
/// backed just before it. When a
/// peer on this node (or one not known to be elsewhere: no probe for
/// moves without a piece of `onnode::MIN_BYTES`) sends, they are backed
/// now: its copy into unbacked pages faults one page at a time, which
/// slows the move.
fn grow_for_move<T>(
    buf: &mut impl Growable<T>,
    need: usize,
    plan: &MovePlan,
    peers: Option<&onnode::Peers>,
) -> Prefault {
    let mut fresh = if buf.len() < need {
        buf.grow(need)
    } else {
        Prefault::NONE
    };
    let remote_only = peers.is_some_and(|p| plan.recvs.iter().all(|&(j, _, _)| p.pid(j).is_none()));
    if !remote_only {
        while fresh.step(usize::MAX) {}
    }
    fresh
}

static YIELDING: Switch = Switch::new("MHETA_MOVE_YIELD", true);

/// Whether a move's ranks wait for their pieces by testing and sleeping
/// ([`wait_all`]): as [`set_move_yield`] said, else unless the environment
/// says `MHETA_MOVE_YIELD=0` (or `off`, `no`, `false`). On by default.
pub fn move_yield_wanted() -> bool {
    YIELDING.get()
}

/// Turn [`wait_all`]'s sleeping on or off for this process's later moves,
/// whatever the environment says.
pub fn set_move_yield(on: bool) {
    YIELDING.set(on)
}

/// Wait for all of a move's requests, doing `idle` (a piece of other work,
/// false once there is none) between tests. MPI_Wait polls, so a rank
/// waiting for a large piece holds a core the whole time; when the piece
/// crosses a TCP link, that core is the one the kernel needs for the
/// link's work (shaping, the bridge, TCP's receive path). So the tests
/// nap once they have polled a while ([`mheta_base::nap`], unless
/// [`set_move_yield`] or `MHETA_MOVE_YIELD=0` turned that off): napping
/// moved pieces across an emulated link at least as fast as polling
/// (`scripts/move-rate.sh`; docs/design/runtime.md), and a nap is small
/// beside a piece's time.
fn wait_all<'a, T: 'a, S: mpi::request::Scope<'a>>(
    reqs: Vec<mpi::request::Request<'a, [T], S>>,
    idle: &mut dyn FnMut() -> bool,
) {
    let mut left = reqs;
    let progress = || {
        let before = left.len();
        left = std::mem::take(&mut left)
            .into_iter()
            .filter_map(|r| r.test().err())
            .collect();
        (left.is_empty(), left.len() < before)
    };
    mheta_base::nap::wait_napping(progress, idle, move_yield_wanted());
}

/// How much of a receive buffer a move backs between two tests of its
/// requests: 64 pages, short beside a piece's time.
const PREFAULT_STEP: usize = 256 << 10;

/// The MPI requests of a move's pieces, and the pieces copied directly.
type Posted<'a, T, S, P> = (Vec<mpi::request::Request<'a, [T], S>>, Vec<(usize, P)>);

/// Post a send of each `(peer, position, rows)` from `src`, whose first
/// element is old-layout row 0 of this rank, except those `direct` says
/// are copied directly: those are returned, each with its rows.
fn post_sends<'a, T: Equivalence, S: mpi::request::Scope<'a> + Copy>(
    world: &SimpleCommunicator,
    scope: S,
    src: &'a [T],
    sends: &[(usize, u64, u64)],
    w: u64,
    direct: impl Fn(usize, u64) -> bool,
) -> Posted<'a, T, S, &'a [T]> {
    let (mut reqs, mut out) = (Vec::new(), Vec::new());
    for &(j, pos, rows) in sends {
        let piece = &src[(pos * w) as usize..((pos + rows) * w) as usize];
        if direct(j, rows) {
            out.push((j, piece));
        } else {
            reqs.push(
                world
                    .process_at_rank(j as i32)
                    .immediate_send_with_tag(scope, piece, REDIST_TAG),
            );
        }
    }
    (reqs, out)
}

/// Split `buf`, whose first element is row position `base` (new layout),
/// into the disjoint slices the receives `(peer, position, rows)` land in,
/// and post a receive into each, except those `direct` says are copied
/// directly: those slices are returned, each with its peer. Receives come
/// in rank order, hence in row order.
fn post_recvs<'a, T: Equivalence, S: mpi::request::Scope<'a> + Copy>(
    world: &SimpleCommunicator,
    scope: S,
    mut buf: &'a mut [T],
    mut base: u64,
    recvs: &[(usize, u64, u64)],
    w: u64,
    direct: impl Fn(usize, u64) -> bool,
) -> Posted<'a, T, S, &'a mut [T]> {
    let (mut reqs, mut out) = (Vec::with_capacity(recvs.len()), Vec::new());
    for &(j, pos, rows) in recvs {
        let (piece, rest) = std::mem::take(&mut buf)[((pos - base) * w) as usize..]
            .split_at_mut((rows * w) as usize);
        buf = rest;
        base = pos + rows;
        if direct(j, rows) {
            out.push((j, piece));
        } else {
            reqs.push(
                world
                    .process_at_rank(j as i32)
                    .immediate_receive_into_with_tag(scope, piece, REDIST_TAG),
            );
        }
    }
    (reqs, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn largest_piece_is_the_longest_run_of_rows_that_changes_rank() {
        let d = |v: &[u64]| Dist(v.to_vec());
        // Rank 1 gives 5 rows to rank 0.
        assert_eq!(largest_piece(&d(&[10, 10]), &d(&[15, 5])), 5);
        // Nothing moves.
        assert_eq!(largest_piece(&d(&[3, 4, 5]), &d(&[3, 4, 5])), 0);
        // Rows 0..10 go 0 -> 1, 10..14 go 0 -> 2 and 14..20 go 1 -> 2;
        // rank 2's own rows stay.
        assert_eq!(largest_piece(&d(&[14, 6, 4]), &d(&[0, 10, 14])), 10);
        // Empty ranks on either side.
        assert_eq!(largest_piece(&d(&[0, 12, 0]), &d(&[4, 0, 8])), 8);
    }
}
