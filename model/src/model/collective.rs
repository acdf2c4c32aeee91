//! Each rank's exit from a full-world all-reduce, message by message over
//! the pairs its algorithm uses.
//!
//! Where the links differ, when a rank leaves an all-reduce depends on
//! who arrived last and on which pairs the algorithm's messages cross: on
//! net4-like clusters a rank behind a 1 ms link receives the result 1 ms
//! after the others, and a distribution that makes another rank arrive
//! last moves the whole collective. [`exits`] follows the algorithm's
//! rounds with each pair's own costs (MHETA eq. 3's per-pair transfer
//! plus the overheads); the replay adds to it what the recorded iteration
//! spent beyond that (wake-ups, progress), calibrated once
//! ([`super::Model::calibrate_collectives`]).
//!
//! The shapes are Open MPI's for the sizes our programs reduce: libnbc's
//! binomial schedule for `MPI_Iallreduce` below 64 KiB, and recursive
//! doubling for `MPI_Allreduce`; libnbc's linear schedule for
//! `MPI_Iallgather(v)`, whose blocks all travel at once and share each
//! host's link ([`Links`]). Every other full-world collective is
//! [`Shape::Together`]: all ranks leave together, a cost after the last
//! arrival.

use super::Model;
use super::net::HostLink;
use mheta_trace::Op;

/// The message pattern of a full-world collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Shape {
    /// Every rank leaves at the last arrival plus one cost.
    Together,
    /// libnbc's all-reduce below 64 KiB (`allred_sched_diss`): a binomial
    /// reduction to rank 0 (in round r, rank j with j mod 2^r = 0
    /// receives from j + 2^(r-1), which then leaves the reduction), then
    /// a binomial broadcast from rank 0 (rank v receives from v minus the
    /// largest power of two not above v and sends to v + 2^r for every
    /// 2^r > v).
    Binomial,
    /// Recursive doubling: ranks beyond the largest power of two first
    /// hand their value to a partner (rank 2i to 2i + 1, for the first
    /// 2·extra ranks) and get the result back from it at the end; the
    /// others exchange with rank XOR 2^r in round r.
    RecursiveDoubling,
    /// libnbc's all-gather (`nbc_iallgather(v).c`, linear): every rank
    /// posts its block to every other rank and a receive from each, all
    /// at once. A rank leaves when the last block reaches it; blocks
    /// that leave or enter one host share its link ([`Links`]).
    Linear,
    /// A blocking all-gather (Open MPI's tuned algorithms: two ranks
    /// exchange their blocks, more pass them along a ring or by
    /// doubling): every rank leaves at the last arrival plus one cost, as
    /// [`Shape::Together`], and that cost follows the blocks: P - 1
    /// times the change, from the recorded blocks to the replayed ones,
    /// of the largest block's transfer to the next rank (a ring's step),
    /// so a block that grows past the eager limit pays the rendezvous
    /// (the pair's fitted transfer has the jump); on two ranks the
    /// change of their exchange ([`two_rank_exchange`]).
    Gather,
}

impl Shape {
    /// The message pattern of a full-world collective `op` of `bytes` per
    /// rank, as Open MPI runs it: libnbc's binomial schedule for a
    /// non-blocking all-reduce below 64 KiB, recursive doubling for a
    /// blocking one of that size, libnbc's linear schedule for a
    /// non-blocking all-gather (a persistent collective as its
    /// non-blocking form), [`Shape::Gather`] for a blocking one; every
    /// other collective leaves together.
    pub fn of(op: Option<Op>, bytes: u64) -> Shape {
        match op {
            Some(Op::Iallreduce | Op::Allreduce_init) if bytes < 65536 => Shape::Binomial,
            Some(Op::Allreduce) if bytes < 65536 => Shape::RecursiveDoubling,
            Some(Op::Iallgather | Op::Iallgatherv | Op::Allgather_init | Op::Allgatherv_init) => {
                Shape::Linear
            }
            Some(Op::Allgather | Op::Allgatherv) => Shape::Gather,
            _ => Shape::Together,
        }
    }
}

/// What the blocks of a [`Shape::Linear`] all-gather share: each host's
/// link, one way out and one way in. Ranks of one host exchange without
/// it.
pub(crate) struct Links<'a> {
    /// Each rank's host (an index).
    pub host: &'a [usize],
    /// Each rank's block, bytes, under the distribution replayed.
    pub block: &'a [f64],
    /// Seconds for rank s's host link to push out `bytes` (its rate
    /// alone, no latency).
    pub egress: &'a dyn Fn(usize, f64) -> f64,
    /// Seconds for rank j's host link to take in `bytes`.
    pub ingress: &'a dyn Fn(usize, f64) -> f64,
    /// The pair's latency: from a byte leaving the sender's host to its
    /// arrival at the receiver.
    pub latency: &'a dyn Fn(usize, usize) -> f64,
    /// Each host's ranks (first, end), where every cost above and in
    /// [`Costs`] between two ranks goes by whether they share a host, and
    /// a host's ranks share its link's rates ([`super::net::Net::kind_spans`]
    /// under no load); None: per pair.
    pub spans: Option<&'a [(usize, usize)]>,
}

/// What the messages of a collective cost, per pair (src, dst).
pub(crate) struct Costs<'a> {
    /// A message's time from the start of its send to the end of its
    /// receive, when the receiver is already waiting.
    pub msg: &'a dyn Fn(usize, usize) -> f64,
    /// The sender's own part of it.
    pub o_send: &'a dyn Fn(usize, usize) -> f64,
    /// The receiver's own part of it: what a receive of a message that
    /// has already arrived costs.
    pub o_recv: &'a dyn Fn(usize, usize) -> f64,
}

/// The pair costs an algorithm reads, in the order it reads them: from
/// [`Costs`] directly, onto a [`Tape`] while doing so ([`Recorder`]), or
/// back off a tape ([`Player`]). A shape's algorithm reads the same
/// pairs in the same order whatever the arrival times, so a tape made
/// once per model replays every later evaluation without a pair lookup.
trait Pairs {
    fn msg(&mut self, s: usize, d: usize) -> f64;
    fn o_send(&mut self, s: usize, d: usize) -> f64;
    fn o_recv(&mut self, s: usize, d: usize) -> f64;

    /// When `dst`, ready at `ready`, has received a message that `src`
    /// sent at `sent`.
    fn received(&mut self, src: usize, dst: usize, sent: f64, ready: f64) -> f64 {
        let m = self.msg(src, dst);
        let r = self.o_recv(src, dst);
        (sent + m).max(ready + r)
    }
}

impl Pairs for &Costs<'_> {
    fn msg(&mut self, s: usize, d: usize) -> f64 {
        (self.msg)(s, d)
    }
    fn o_send(&mut self, s: usize, d: usize) -> f64 {
        (self.o_send)(s, d)
    }
    fn o_recv(&mut self, s: usize, d: usize) -> f64 {
        (self.o_recv)(s, d)
    }
}

/// The costs one shape's algorithm read over P ranks for one message
/// size, in its order ([`Tape::record`]); [`exits_taped`] replays them.
#[derive(Clone, Debug)]
pub(crate) struct Tape {
    shape: Shape,
    p: usize,
    costs: Vec<f64>,
    /// Recursive doubling: per power-of-two round, whether every rank
    /// read the same three costs (then the tape holds the three alone:
    /// [`uniform_rounds`]).
    uniform: Vec<bool>,
}

struct Recorder<'a, 'b> {
    c: &'a Costs<'b>,
    tape: Vec<f64>,
}

impl Pairs for Recorder<'_, '_> {
    fn msg(&mut self, s: usize, d: usize) -> f64 {
        let v = (self.c.msg)(s, d);
        self.tape.push(v);
        v
    }
    fn o_send(&mut self, s: usize, d: usize) -> f64 {
        let v = (self.c.o_send)(s, d);
        self.tape.push(v);
        v
    }
    fn o_recv(&mut self, s: usize, d: usize) -> f64 {
        let v = (self.c.o_recv)(s, d);
        self.tape.push(v);
        v
    }
}

struct Player<'a> {
    tape: &'a [f64],
    at: usize,
}

impl Player<'_> {
    #[inline]
    fn next(&mut self) -> f64 {
        let v = self.tape[self.at];
        self.at += 1;
        v
    }
}

impl Pairs for Player<'_> {
    #[inline]
    fn msg(&mut self, _: usize, _: usize) -> f64 {
        self.next()
    }
    #[inline]
    fn o_send(&mut self, _: usize, _: usize) -> f64 {
        self.next()
    }
    #[inline]
    fn o_recv(&mut self, _: usize, _: usize) -> f64 {
        self.next()
    }
}

impl Tape {
    /// The tape of `shape` over `p` ranks under `c`; None for the shapes
    /// whose reads depend on the distribution ([`Shape::Linear`]'s blocks)
    /// or that read none ([`Shape::Together`]).
    pub(crate) fn record(shape: Shape, p: usize, c: &Costs<'_>) -> Option<Tape> {
        let mut r = Recorder {
            c,
            tape: Vec::new(),
        };
        let zero = vec![0.0; p];
        let mut uniform = Vec::new();
        match shape {
            Shape::Binomial => drop(binomial(&zero, &mut r)),
            Shape::RecursiveDoubling => {
                drop(recursive_doubling(&zero, &mut r));
                rounds_by_kind(p, &mut r.tape);
                uniform = uniform_rounds(p, &mut r.tape);
            }
            Shape::Linear | Shape::Together | Shape::Gather => return None,
        }
        Some(Tape {
            shape,
            p,
            costs: r.tape,
            uniform,
        })
    }
}

/// The tapes a model has recorded, by shape and message size: filled by
/// the first evaluation that reaches each collective, emptied when the
/// model's costs change ([`super::Model::with_load`]).
#[derive(Default)]
pub(crate) struct Tapes(std::sync::Mutex<Vec<(Shape, u64, std::sync::Arc<Tape>)>>);

impl Tapes {
    /// The tape of `shape` for messages of `bytes`, recorded by `record`
    /// the first time; None where `record` gives none.
    pub(crate) fn get_or_record(
        &self,
        shape: Shape,
        bytes: f64,
        record: impl FnOnce() -> Option<Tape>,
    ) -> Option<std::sync::Arc<Tape>> {
        let key = bytes.to_bits();
        let mut tapes = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, _, t)) = tapes.iter().find(|(s, b, _)| *s == shape && *b == key) {
            return Some(t.clone());
        }
        let t = std::sync::Arc::new(record()?);
        tapes.push((shape, key, t.clone()));
        Some(t)
    }

    pub(crate) fn clear(&mut self) {
        self.0.get_mut().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

impl Clone for Tapes {
    fn clone(&self) -> Tapes {
        Tapes(std::sync::Mutex::new(
            self.0.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        ))
    }
}

impl std::fmt::Debug for Tapes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.lock().map_or(0, |t| t.len());
        write!(f, "Tapes({n})")
    }
}

/// [`exits`] for the shape and ranks `tape` was recorded for, its pair
/// costs read off the tape.
pub(crate) fn exits_taped(tape: &Tape, arrive: &[f64]) -> Vec<f64> {
    assert_eq!(arrive.len(), tape.p, "a tape is for its own rank count");
    let mut play = Player {
        tape: &tape.costs,
        at: 0,
    };
    let out = match tape.shape {
        Shape::Binomial => binomial(arrive, &mut play),
        Shape::RecursiveDoubling => recursive_doubling_taped(arrive, &tape.uniform, &mut play),
        Shape::Linear | Shape::Together | Shape::Gather => unreachable!("never recorded"),
    };
    debug_assert_eq!(play.at, tape.costs.len());
    out
}

/// Each rank's exit time from a collective of shape `shape` whose ranks
/// arrive at `arrive` (`links`: what a [`Shape::Linear`] one's blocks
/// share; without it, none). None for [`Shape::Together`], which has no
/// per-rank pattern.
pub(crate) fn exits(
    shape: Shape,
    arrive: &[f64],
    c: &Costs<'_>,
    links: Option<&Links<'_>>,
) -> Option<Vec<f64>> {
    match shape {
        Shape::Together | Shape::Gather => None,
        Shape::Binomial => Some(binomial(arrive, &mut { c })),
        Shape::RecursiveDoubling => Some(recursive_doubling(arrive, &mut { c })),
        Shape::Linear => Some(super::allgather::linear(arrive, c, links)),
    }
}

/// [`Shape::Binomial`].
fn binomial(arrive: &[f64], c: &mut impl Pairs) -> Vec<f64> {
    let p = arrive.len();
    // The reduction: `t[j]` is when rank j holds its subtree's sum;
    // `ready[j]` when it is done with the reduction (a sender's send
    // posted).
    let mut t = arrive.to_vec();
    let mut ready = arrive.to_vec();
    let mut half = 1;
    while half < p {
        for j in (0..p).step_by(2 * half) {
            let peer = j + half;
            if peer < p {
                t[j] = c.received(peer, j, t[peer], t[j]);
                ready[peer] = t[peer] + c.o_send(peer, j);
            }
        }
        half *= 2;
    }
    ready[0] = t[0];
    // The broadcast, parents before children (a parent's rank is lower):
    // `sent[v]` is when v's parent posted its send to v.
    let mut sent = vec![0.0; p];
    let mut leave = vec![0.0; p];
    for v in 0..p {
        let mut clock = if v == 0 {
            t[0]
        } else {
            let parent = v - (1 << (usize::BITS - 1 - v.leading_zeros()));
            c.received(parent, v, sent[v], ready[v])
        };
        let mut step = 1;
        while step < p {
            let child = v + step;
            if v < step && child < p {
                sent[child] = clock;
                clock += c.o_send(v, child);
            }
            step *= 2;
        }
        leave[v] = clock;
    }
    leave
}

/// [`Shape::RecursiveDoubling`].
fn recursive_doubling(arrive: &[f64], c: &mut impl Pairs) -> Vec<f64> {
    let p = arrive.len();
    let adj = if p == 0 {
        0
    } else {
        1 << (usize::BITS - 1 - p.leading_zeros())
    };
    let extra = p - adj;
    let mut t = arrive.to_vec();
    hand_over(&mut t, extra, c);
    let rank_of = |n: usize| if n < extra { 2 * n + 1 } else { n + extra };
    let mut dist = 1;
    let mut before = t.clone();
    while dist < adj {
        before.copy_from_slice(&t);
        for n in 0..adj {
            let (me, peer) = (rank_of(n), rank_of(n ^ dist));
            let o = c.o_send(me, peer);
            t[me] = c.received(peer, me, before[peer], before[me] + o);
        }
        dist *= 2;
    }
    hand_back(&mut t, extra, c);
    t
}

/// A recursive doubling's tape with each power-of-two round's reads,
/// recorded as (o_send, msg, o_recv) per renumbered rank, laid out as
/// all its o_send, then all its msg, then all its o_recv
/// ([`recursive_doubling_taped`] reads them so).
fn rounds_by_kind(p: usize, tape: &mut [f64]) {
    if p == 0 {
        return;
    }
    let adj = 1usize << (usize::BITS - 1 - p.leading_zeros());
    let pre = 3 * (p - adj);
    let rounds = adj.trailing_zeros() as usize;
    for k in 0..rounds {
        let round = &mut tape[pre + 3 * adj * k..pre + 3 * adj * (k + 1)];
        let read: Vec<f64> = round.to_vec();
        for n in 0..adj {
            for j in 0..3 {
                round[j * adj + n] = read[3 * n + j];
            }
        }
    }
}

/// Shortens a recursive doubling's tape laid out by [`rounds_by_kind`]:
/// a power-of-two round whose ranks all read the same o_send, msg and
/// o_recv (every pair of the round of one kind, as in a profile written
/// by kind of pair) keeps those three alone. Returns, per round, whether
/// it did. The replay then reads three numbers a round instead of three
/// a rank, the same values in the same arithmetic.
fn uniform_rounds(p: usize, tape: &mut Vec<f64>) -> Vec<bool> {
    if p == 0 {
        return Vec::new();
    }
    let adj = 1usize << (usize::BITS - 1 - p.leading_zeros());
    let pre = 3 * (p - adj);
    let rounds = adj.trailing_zeros() as usize;
    let mut out = tape[..pre].to_vec();
    let mut uniform = Vec::with_capacity(rounds);
    for k in 0..rounds {
        let round = &tape[pre + 3 * adj * k..pre + 3 * adj * (k + 1)];
        let same = round
            .chunks_exact(adj)
            .all(|c| c.iter().all(|v| v.to_bits() == c[0].to_bits()));
        if same {
            out.extend(round.chunks_exact(adj).map(|c| c[0]));
        } else {
            out.extend_from_slice(round);
        }
        uniform.push(same);
    }
    out.extend_from_slice(&tape[pre + 3 * adj * rounds..]);
    *tape = out;
    uniform
}

/// [`recursive_doubling`] from its tape: the same reads in the same
/// order and the same arithmetic, so the same exits bit for bit, with the
/// power-of-two rounds run on the ranks renumbered (`n`, as the algorithm
/// pairs them) in place, one contiguous half-block against the other,
/// which the compiler vectorizes.
fn recursive_doubling_taped(arrive: &[f64], uniform: &[bool], play: &mut Player<'_>) -> Vec<f64> {
    let p = arrive.len();
    if p == 0 {
        return Vec::new();
    }
    let adj = 1 << (usize::BITS - 1 - p.leading_zeros());
    let extra = p - adj;
    let mut t = arrive.to_vec();
    hand_over(&mut t, extra, play);
    let rank_of = |n: usize| if n < extra { 2 * n + 1 } else { n + extra };
    // The power-of-two rounds run in place, on the ranks renumbered: `t`
    // itself when there are no extra ranks (then `n` is the rank).
    let mut renumbered = Vec::new();
    let cur: &mut [f64] = if extra == 0 {
        &mut t
    } else {
        renumbered.extend((0..adj).map(|n| t[rank_of(n)]));
        &mut renumbered
    };
    let mut dist = 1;
    let mut nth = 0;
    while dist < adj {
        if uniform[nth] {
            let (o, m, r) = (play.next(), play.next(), play.next());
            for block in cur.chunks_exact_mut(2 * dist) {
                let (lo, hi) = block.split_at_mut(dist);
                for (a, b) in lo.iter_mut().zip(hi.iter_mut()) {
                    let (x, y) = (*a, *b);
                    *a = later(y + m, (x + o) + r);
                    *b = later(x + m, (y + o) + r);
                }
            }
            dist *= 2;
            nth += 1;
            continue;
        }
        // Each n's o_send(n, peer), msg(peer, n) and o_recv(peer, n), as
        // `received` reads them ([`rounds_by_kind`]).
        let round = &play.tape[play.at..play.at + 3 * adj];
        play.at += 3 * adj;
        let (o, rest) = round.split_at(adj);
        let (msg, r) = rest.split_at(adj);
        let costs = o.chunks_exact(2 * dist).zip(msg.chunks_exact(2 * dist));
        for ((block, (o, msg)), r) in (cur.chunks_exact_mut(2 * dist))
            .zip(costs)
            .zip(r.chunks_exact(2 * dist))
        {
            let (lo, hi) = block.split_at_mut(dist);
            let ((o_lo, o_hi), (m_lo, m_hi)) = (o.split_at(dist), msg.split_at(dist));
            let (r_lo, r_hi) = r.split_at(dist);
            for k in 0..dist {
                let (x, y) = (lo[k], hi[k]);
                lo[k] = later(y + m_lo[k], (x + o_lo[k]) + r_lo[k]);
                hi[k] = later(x + m_hi[k], (y + o_hi[k]) + r_hi[k]);
            }
        }
        dist *= 2;
        nth += 1;
    }
    if extra > 0 {
        for (n, &v) in renumbered.iter().enumerate() {
            t[rank_of(n)] = v;
        }
    }
    hand_back(&mut t, extra, play);
    t
}

/// The later of two times: `f64::max` for any two that are not NaN (times
/// never are), as one compare, which the compiler vectorizes (`max`'s NaN
/// handling costs three more instructions an element).
#[inline]
fn later(a: f64, b: f64) -> f64 {
    if a > b { a } else { b }
}

/// Recursive doubling's pre-step over the `extra` ranks beyond a power
/// of two: rank 2i hands its value to 2i + 1 and waits for the end.
fn hand_over(t: &mut [f64], extra: usize, c: &mut impl Pairs) {
    for i in 0..extra {
        let (e, o) = (2 * i, 2 * i + 1);
        t[o] = c.received(e, o, t[e], t[o]);
        t[e] += c.o_send(e, o);
    }
}

/// Its post-step: 2i + 1 sends the result back to 2i.
fn hand_back(t: &mut [f64], extra: usize, c: &mut impl Pairs) {
    for i in 0..extra {
        let (e, o) = (2 * i, 2 * i + 1);
        t[e] = c.received(o, e, t[o], t[e]);
        t[o] += c.o_send(o, e);
    }
}

/// Each rank's block in a [`Shape::Linear`] all-gather: the recorded
/// block scaled by the rank's rows when the recorded blocks were in
/// proportion to the recorded rows (a row-distributed vector), else as
/// recorded. What decides which is fixed by the recording, so a compiled
/// replay keeps one of these per all-gather and fills it for each
/// distribution.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Blocks {
    recorded: Vec<f64>,
    /// Bytes a row, when the recorded blocks followed the rows.
    per_row: Option<f64>,
}

impl Blocks {
    /// The blocks every rank recorded at one all-gather of `m`.
    pub(crate) fn new(m: &Model, recorded: Vec<f64>) -> Blocks {
        let rows = &m.app.dist;
        let total_rows: u64 = rows.iter().sum();
        let per_row = recorded.iter().sum::<f64>() / total_rows.max(1) as f64;
        let in_proportion = per_row > 0.0
            && recorded.iter().zip(rows).all(|(&b, &r)| {
                let want = per_row * r as f64;
                (b - want).abs() <= 0.01 * want + 1.0
            });
        Blocks {
            recorded,
            per_row: in_proportion.then_some(per_row),
        }
    }

    /// Each rank's block as recorded.
    pub(crate) fn recorded(&self) -> &[f64] {
        &self.recorded
    }

    /// Each rank's block under `d`, into `out`.
    pub(crate) fn fill(&self, d: &crate::dist::Dist, out: &mut Vec<f64>) {
        out.clear();
        match self.per_row {
            Some(b) => out.extend(d.0.iter().map(|&r| b * r as f64)),
            None => out.extend_from_slice(&self.recorded),
        }
    }
}

/// Each rank's exit from a collective of `shape` in a replay of `m`
/// ([`super::replay`]'s `exits`), with each rank's all-gather block in
/// `block` (empty: `bytes` for every rank) and, for a [`Shape::Gather`],
/// as recorded in `recorded`.
pub(super) fn priced_exits(
    m: &Model,
    shape: Shape,
    arrive: &[f64],
    bytes: f64,
    entry: f64,
    (block, recorded): (&[f64], &[f64]),
) -> Vec<f64> {
    let (net, p) = (&m.net, arrive.len());
    let tape = |c: &Costs<'_>| {
        m.tapes
            .get_or_record(shape, bytes, || Tape::record(shape, p, c))
    };
    let size = |s: usize| block.get(s).copied().unwrap_or(bytes);
    let o_send = |s: usize, d: usize| net.pair(s, d).o_send();
    let o_recv = |s: usize, d: usize| net.pair(s, d).o_recv();
    let msg = |s: usize, d: usize| {
        let pr = net.pair(s, d);
        pr.o_send() + pr.transfer(size(s)) * m.net_factor(pr.k) + pr.o_recv()
    };
    let costs = Costs {
        msg: &msg,
        o_send: &o_send,
        o_recv: &o_recv,
    };
    let link =
        |l: &Option<HostLink>, b: f64| l.map_or(0.0, |l| l.per_byte_s * b * m.net_factor(l.pair));
    let egress = |s: usize, b: f64| link(&net.link_out[s], b);
    let ingress = |j: usize, b: f64| link(&net.link_in[j], b);
    let latency = |s: usize, d: usize| {
        let pr = net.pair(s, d);
        pr.transfer(0.0) * m.net_factor(pr.k)
    };
    let links = Links {
        host: &net.host,
        block,
        egress: &egress,
        ingress: &ingress,
        latency: &latency,
        spans: net.kind_spans.as_deref().filter(|_| m.net_slow.is_empty()),
    };
    if let Some(t) = matches!(shape, Shape::Binomial | Shape::RecursiveDoubling)
        .then(|| tape(&costs))
        .flatten()
    {
        return exits_taped(&t, arrive);
    }
    let links = (shape == Shape::Linear).then_some(&links);
    exits(shape, arrive, &costs, links).unwrap_or_else(|| {
        let follows = if shape == Shape::Gather && p == 2 && block.len() == 2 && recorded.len() == 2
        {
            two_rank_exchange(m, block) - two_rank_exchange(m, recorded)
        } else if shape == Shape::Gather && block.len() == p && recorded.len() == p {
            // A ring's step: the largest block's transfer to the next rank.
            let step = |b: &[f64]| {
                (0..p)
                    .map(|s| {
                        let pr = net.pair(s, (s + 1) % p);
                        pr.transfer(b[s]) * m.net_factor(pr.k)
                    })
                    .fold(0.0f64, f64::max)
            };
            (p.saturating_sub(1)) as f64 * (step(block) - step(recorded))
        } else {
            0.0
        };
        vec![entry + net.reduce(bytes) + follows; p]
    })
}

/// Open MPI's blocking all-gather on two ranks (`ompi_coll_base_
/// allgather(v)_intra_two_procs`: each rank posts its receive, sends its
/// block with a blocking standard send and waits): the time until both
/// blocks have arrived, the ranks starting together. A block past its
/// pair's eager limit goes by rendezvous, and its data leaves only once
/// the receiver's acknowledgement is back; that acknowledgement follows
/// the receiver's own block on the one connection between them, so it
/// waits out that block's transfer when the block went eagerly (the wire
/// latency both ways at least). Measured across netdc2's two hosts
/// (docs/design/model.md, "Two-rank all-gathers"): the exchange takes
/// the rendezvous block's transfer after the reverse block's, where the
/// ping-pong figures alone price the larger of the two.
pub(crate) fn two_rank_exchange(m: &Model, block: &[f64]) -> f64 {
    let net = &m.net;
    let way = |s: usize, d: usize| {
        let (pr, back) = (net.pair(s, d), net.pair(d, s));
        let (f, b) = (m.net_factor(pr.k), m.net_factor(back.k));
        let data = pr.transfer(block[s]) * f;
        if block[s] <= pr.eager() as f64 {
            return data;
        }
        let handshake = pr.transfer(0.0) * f + back.transfer(0.0) * b;
        let ahead = if block[d] <= back.eager() as f64 {
            back.transfer(block[d]) * b
        } else {
            0.0
        };
        handshake.max(ahead) + data
    };
    way(0, 1).max(way(1, 0))
}

#[cfg(test)]
pub(super) mod tests;
