//! A move with every array in core: the rows cross the network (or a
//! node's memory), one array after another, as the runtime's row buffers
//! move them (`RowBlock::redistribute`, `mheta_runtime::redistribute`).

use super::{DIRECT_COPY_MIN_BYTES, MoveCost, overlap, span};
use crate::{Dist, Model};

/// How one rank moves one array.
#[derive(Clone, Copy, Debug, Default)]
struct RankMove {
    /// Its receives are posted only once its sends are done and its kept
    /// rows shifted (the runtime's path when the kept rows cannot stay
    /// where they lie, or its old and new rows share no row).
    in_turn: bool,
    /// Seconds of shifting its kept rows (in turn only).
    shift_s: f64,
    /// Seconds of backing fresh memory before anything else (a sender on
    /// its host: the copy from a neighbour cannot wait for page faults).
    up_front_s: f64,
    /// Seconds of backing fresh memory while it waits for its receives.
    hidden_s: f64,
}

impl Model {
    /// Every array in core, the arrays one after another. For each array,
    /// a rank sends the rows it loses to their new owners and receives its
    /// new rows, each piece at the pair's transfer time (eq. 3's
    /// T_{i->j}), across a link with its part beyond a message's fixed
    /// cost at the rate the pair's 1 and 8 MiB messages got when both
    /// ends waited as a move waits, napping (`Pair::move_transfer`; the
    /// sweep's ranks poll, and where the link's work needs their cores
    /// it carries less); between two ranks of one host a piece of
    /// [`DIRECT_COPY_MIN_BYTES`] or more is the runtime's copy by both
    /// ends, at the slower end's measured rate for it, and a smaller one
    /// is no faster than the pair's rate between buffers out of the
    /// cache, as a move's rows are. What a rank does with its buffer
    /// decides when its receives can start:
    ///
    /// - when it keeps its rows where they lie (its block loses rows at
    ///   the top or gains none there), it posts its receives with its
    ///   sends, and they overlap;
    /// - when its block gains rows above the kept ones, the kept rows
    ///   shift by the rows gained (a copy at its measured rate for that
    ///   distance, `NodeCost::shift_by`), and when its old and new rows share
    ///   no row it has nothing to keep: either way it first sends, then
    ///   shifts, then receives, so a sender to it waits for that;
    /// - the rows its buffer grows by are fresh memory (its
    ///   `NodeCost::touch_per_byte`): backed up front when a sender
    ///   shares its host, while it waits for its receives otherwise.
    ///
    /// A sender serves its receivers in the order they post, each piece
    /// after the last (its link is one), and is done with a piece the
    /// pair's `Pair::send_buffer` bytes before its receiver has it all
    /// (the transport holds those bytes; all of a piece within a
    /// measured eager limit); a receiver takes its pieces one after
    /// another from when it posts. Those waits chain: a rank that
    /// receives in turn holds up its senders, which may in turn hold up
    /// theirs. Each rank starts on an array when it is done with the one
    /// before, so ranks at different arrays overlap, except at the first
    /// array with a piece of [`DIRECT_COPY_MIN_BYTES`] or more: there the
    /// runtime's probe of the on-node peers, a collective made once a
    /// communicator, starts it on every rank at once. A rank's buffer is taken to
    /// hold its old block exactly (a first move); the move ends when the
    /// slowest rank does.
    pub(super) fn network_move_cost(&self, on_level: &[(Dist, Dist)]) -> MoveCost {
        let p = self.ranks();
        let offs: Vec<(Vec<u64>, Vec<u64>)> = on_level
            .iter()
            .map(|(f, t)| (f.offsets(), t.offsets()))
            .collect();
        let mut rank_s = vec![0.0f64; p];
        // When each rank's link is done with what it sent.
        let mut link_s = vec![0.0f64; p];
        let mut bytes = 0u64;
        let mut synced = false;
        // A crowded machine's ranks copy at their share of its CPUs
        // (`Net::crowding`): a piece between two ranks of one host, at
        // the slower end's.
        let crowd = |i: usize, j: usize| self.net.crowding[i].max(self.net.crowding[j]);
        for (k, decl) in self.app.arrays.iter().enumerate() {
            let lv = decl.level.unwrap_or(0) as usize;
            let (f, t) = &on_level[lv];
            let (fo, to_) = &offs[lv];
            // Pieces in sender order.
            let mut pieces: Vec<Piece> = Vec::new();
            let mut local_peer = vec![false; p];
            let mut largest = 0.0f64;
            let ends: Vec<u64> = (0..p).map(|j| to_[j] + t.0[j]).collect();
            for i in 0..p {
                let mine = span(fo, f, i);
                // The new owners of its old rows: the ranks whose new
                // blocks end past its first row, up to the first whose
                // block starts at or past its end (GEN_BLOCK: in order).
                let from = ends.partition_point(|&e| e <= mine.0);
                for j in (from..p)
                    .take_while(|&j| to_[j] < mine.1)
                    .filter(|&j| j != i)
                {
                    let Some((a, e)) = overlap(mine, span(to_, t, j)) else {
                        continue;
                    };
                    let by = self.array_bytes(k, a, e);
                    largest = largest.max(by);
                    let same_host = self.net.host[i] == self.net.host[j];
                    let (s, lead) = if same_host && by >= DIRECT_COPY_MIN_BYTES as f64 {
                        // The runtime's copy by both ends, at the slower
                        // end's measured rate for it (`Net::direct_per_byte`),
                        // both ends busy to its end.
                        let c = self.net.direct_per_byte[i].max(self.net.direct_per_byte[j]);
                        (by * c * crowd(i, j), 0.0)
                    } else {
                        let pair = self.net.pair(i, j);
                        // A move's rows are out of the cache: between
                        // ranks of one host, whose transfer is a copy,
                        // no faster than the measured cold rate
                        // (`Net::cold_per_byte`); across a link the
                        // link's time is the larger, at the rate a
                        // move's napping waits get (`Pair::move_transfer`).
                        // On one host both ends copy, at their share of
                        // a crowded machine's CPUs.
                        let (cold, s) = if same_host {
                            let f = crowd(i, j);
                            let c = by * self.net.cold_per_byte[i].max(self.net.cold_per_byte[j]);
                            (c * f, pair.transfer(by) * f)
                        } else {
                            (0.0, pair.move_transfer(by))
                        };
                        let s = s.max(cold);
                        // The bytes the sender is done with before the
                        // receiver has them: all of an eager message (a
                        // measured limit), else what the transport holds,
                        // less the rendezvous's first fragment (up to the
                        // eager limit), which left before the receive was
                        // matched: of a 512 KiB message across 1 Gbit/s
                        // the transport held 0.39-0.45 MB, not its 0.52
                        // (`scripts/send-hold.sh SPEC 512`).
                        let limit = pair.eager();
                        let held = if limit == u64::MAX {
                            pair.send_buffer().min(by)
                        } else if by <= limit as f64 {
                            by
                        } else {
                            pair.send_buffer().min(by - limit as f64)
                        };
                        (s, s * held / by)
                    };
                    pieces.push(Piece {
                        from: i,
                        to: j,
                        s,
                        lead,
                    });
                    local_peer[j] |= same_host;
                    bytes += by as u64;
                }
            }
            // Without a piece for the on-node copy the runtime does not
            // probe where its peers are, and backs fresh memory up front.
            let probed = largest >= DIRECT_COPY_MIN_BYTES as f64;
            let how: Vec<RankMove> = (0..p)
                .map(|i| {
                    let up_front = local_peer[i] || !probed;
                    self.rank_move(k, span(fo, f, i), span(to_, t, i), i, up_front)
                })
                .collect();
            // The first piece large enough for the on-node copy makes
            // every rank probe its peers (`Peers::of`, collective once a
            // communicator; later arrays and moves read the answer kept):
            // that array starts when the slowest rank is done with the
            // one before.
            if probed && !synced {
                let all = rank_s.iter().copied().fold(0.0, f64::max);
                rank_s.fill(all);
                synced = true;
            }
            rank_s = schedule(&pieces, &how, &rank_s, &mut link_s);
        }
        MoveCost {
            total_s: rank_s.iter().copied().fold(0.0, f64::max),
            bytes,
            rank_s,
        }
    }

    /// How rank `i` moves array `k` from rows `old` to rows `new`, as
    /// `RowBlock::redistribute` places them: the kept rows stay where
    /// they lie when the new block fits around them in its room (the
    /// larger of the old block and twice the new), else everything starts
    /// at the buffer's front. The rows its buffer grows by are backed
    /// before anything else when `up_front` (the runtime's
    /// `grow_for_move`), else those a shift writes are backed just before
    /// it and the rest while the receives wait.
    fn rank_move(
        &self,
        k: usize,
        old: (u64, u64),
        new: (u64, u64),
        i: usize,
        up_front: bool,
    ) -> RankMove {
        let (old_n, new_n) = (old.1 - old.0, new.1 - new.0);
        let kept = overlap(old, new);
        let (lost_top, gained_top) = kept.map_or((0, 0), |(a, _)| (a - old.0, a - new.0));
        let in_place = kept.is_some()
            && lost_top >= gained_top
            && lost_top - gained_top + new_n <= old_n.max(2 * new_n);
        let place = if in_place { lost_top - gained_top } else { 0 };
        let need = old_n.max(place + new_n);
        // Seconds of backing `rows` rows past the old block's end, at the
        // block's mean row size (rows of sparse arrays differ).
        let per_row = if old_n > 0 {
            self.array_bytes(k, old.0, old.1) / old_n as f64
        } else {
            self.array_bytes(k, new.0, new.1) / new_n.max(1) as f64
        };
        // Backing and shifting are the rank's CPU work, at its share of a
        // crowded machine (`Net::crowding`).
        let crowd = self.net.crowding[i];
        let touch = |rows: u64| rows as f64 * per_row * self.net.touch_per_byte[i] * crowd;
        let grown = need.saturating_sub(old_n);
        let in_turn = match kept {
            Some(_) => !in_place,
            None => old_n > 0 && new_n > 0,
        };
        let (shift_s, shift_grown) = match kept {
            Some((a, e)) if in_turn => {
                // The kept rows land at `place + (a - new.0)` onward; the
                // part past the old block's end is fresh memory.
                let end = place + (e - new.0);
                let fresh = if up_front {
                    0
                } else {
                    end.saturating_sub(old_n).min(grown)
                };
                // They lie at `a - old.0` in the old block (its first
                // move: at the buffer's front).
                let distance = (a - old.0).abs_diff(place + (a - new.0)) as f64 * per_row;
                let copy = self.array_bytes(k, a, e) * self.net.shift_at(i, distance) * crowd;
                (copy + touch(fresh), fresh)
            }
            _ => (0.0, 0),
        };
        RankMove {
            in_turn,
            shift_s,
            up_front_s: if up_front { touch(grown) } else { 0.0 },
            hidden_s: if up_front {
                0.0
            } else {
                touch(grown - shift_grown)
            },
        }
    }
}

/// One array's rows from one rank to another.
#[derive(Clone, Copy, Debug)]
struct Piece {
    from: usize,
    to: usize,
    /// Seconds from the first byte sent to the last received.
    s: f64,
    /// Seconds before the last byte is received that the sender's request
    /// completes (the bytes the transport holds for it, `Pair::send_buffer`,
    /// or the whole of an eager piece).
    lead: f64,
}

/// When each rank is done with one array's pieces, each rank starting
/// on them when it was done with the array before (`ready`; module docs
/// of [`Model::network_move_cost`]) and sending once its link is done
/// with what it sent before (`link`, updated). A sender's request
/// completes its piece's `lead` before the receiver has the piece. A rank
/// that receives in turn posts when its own sends are done, which wait
/// for their receivers' posts: the posts are found depth first along
/// those waits (a chain of P ranks in one pass, linear in the pieces).
/// Where the waits would close a circle, the rank met again is taken to
/// have posted when it started.
fn schedule(pieces: &[Piece], how: &[RankMove], ready: &[f64], link: &mut [f64]) -> Vec<f64> {
    let p = how.len();
    let start: Vec<f64> = (how.iter().zip(ready))
        .map(|(h, r)| r + h.up_front_s)
        .collect();
    // Each sender's pieces, by index into `pieces`.
    let mut first = vec![0usize; p + 1];
    for x in pieces {
        first[x.from + 1] += 1;
    }
    for i in 0..p {
        first[i + 1] += first[i];
    }
    let mut by_sender = vec![0usize; pieces.len()];
    let mut fill = first.clone();
    for (x, c) in pieces.iter().enumerate() {
        by_sender[fill[c.from]] = x;
        fill[c.from] += 1;
    }
    let mine = |i: usize| &by_sender[first[i]..first[i + 1]];
    let free: Vec<f64> = start
        .iter()
        .zip(link.iter())
        .map(|(s, l)| s.max(*l))
        .collect();
    // Senders serve their receivers in the order those post, each piece
    // after the last on the link; a rank's sends are done when its last
    // request completes. Returns that, and when the link is free.
    let sends = |i: usize, post: &[f64], ends: &mut [f64]| -> (f64, f64) {
        let mut order: Vec<usize> = mine(i).to_vec();
        order.sort_by(|&a, &b| post[pieces[a].to].total_cmp(&post[pieces[b].to]));
        let mut busy = free[i];
        let mut done = start[i];
        for x in order {
            let c = &pieces[x];
            let from = busy.max(post[c.to]);
            busy = from + c.s;
            ends[x] = busy;
            done = done.max(busy - c.lead).max(from);
        }
        (done, busy)
    };
    // Posts: a rank not in turn posts when it starts; one in turn once
    // its sends are done and its kept rows shifted.
    let mut post = start.clone();
    let mut ends = vec![0.0f64; pieces.len()];
    let mut state = vec![0u8; p]; // 0: not yet, 1: on the stack, 2: known
    for r in 0..p {
        if state[r] == 2 {
            continue;
        }
        let mut stack = vec![r];
        while let Some(&i) = stack.last() {
            if state[i] == 2 || !how[i].in_turn {
                state[i] = 2;
                stack.pop();
                continue;
            }
            state[i] = 1;
            let before = stack.len();
            for &x in mine(i) {
                let j = pieces[x].to;
                if state[j] == 0 {
                    stack.push(j);
                }
            }
            if stack.len() == before {
                post[i] = sends(i, &post, &mut ends).0 + how[i].shift_s;
                state[i] = 2;
                stack.pop();
            }
        }
    }
    let mut send_done = vec![0.0f64; p];
    for i in 0..p {
        (send_done[i], link[i]) = sends(i, &post, &mut ends);
    }
    // Each receiver takes its pieces one after another from its post,
    // none before its sender sent it, its fresh memory backed under them.
    let mut taken = post.clone();
    let mut last = vec![f64::NEG_INFINITY; p];
    for (x, c) in pieces.iter().enumerate() {
        taken[c.to] += c.s;
        last[c.to] = last[c.to].max(ends[x]);
    }
    (0..p)
        .map(|j| {
            let recv_done = if last[j].is_finite() {
                taken[j].max(last[j]).max(post[j] + how[j].hidden_s)
            } else {
                post[j]
            };
            send_done[j].max(recv_done)
        })
        .collect()
}
