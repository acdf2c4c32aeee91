//! The time-ordered replay behind [`Model::predict`]: every rank's program
//! stepped in turn, each step kind priced by its own function with the
//! MHETA equation (MHETA paper, section 4.2) or Figueira and Berman equation it
//! implements. A rank that cannot go on (a receive whose message has not
//! been sent, a collective not everyone reached) yields to the next.

use super::calibrate::{Calib, HANDSHAKE_SLEEPS};
use super::{Model, ModelError, Peer, Prediction, RankTime, SendMode, Step};
use crate::dist::Dist;
use crate::iomodel::PlanSummary;
use mheta_trace::Topology;
use std::collections::VecDeque;
use std::sync::Arc;

/// A message in flight: its sender, tag and arrival time and, for a send
/// that completes only once the receiver has taken it, its number among
/// the sender's sends (else [`NO_ACK`]).
#[derive(Clone, Copy)]
struct Mail {
    src: usize,
    tag: i32,
    arrive: f64,
    ack: u32,
    /// The send's number among all ranks' sends of this replay, in the
    /// order they ran ([`Log`]).
    id: u32,
}

/// Messages in flight during one evaluation, per receiver, in the order
/// they were sent: a receive takes the first from its source with its tag
/// (MPI's non-overtaking rule), which is near the front of a short queue.
type Inflight = Vec<VecDeque<Mail>>;
const NO_ACK: u32 = u32::MAX;

/// What one replay did, in order, for [`super::fast`] to compile: each
/// step a rank completed, each arrival at a collective that had to wait
/// for others, and before a receiving step's completion the message each
/// of its receives took ([`NONE`]: none under this distribution).
#[derive(Default)]
pub(super) struct Log {
    pub(super) events: Vec<LogEvent>,
    /// False when the replay released a held send ([`Replay::release_held`]):
    /// its order then depended on when sends were posted.
    pub(super) ok: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum LogEvent {
    Step(u32),
    Arrive(u32),
    Took(u32),
}

/// No message, no send.
pub(super) const NONE: u32 = u32::MAX;

/// Per rank, the completion time of each send so far, in the order they
/// were posted (NaN: not yet taken by its receiver), and the time each was
/// posted.
#[derive(Default)]
struct Sends {
    done: Vec<Vec<f64>>,
    posted: Vec<Vec<f64>>,
    /// Whether the send's receiver was already waiting when the message
    /// reached it (a handshake with a waiting receiver, see
    /// [`Model::calibrate_collectives`]).
    met_waiting: Vec<Vec<bool>>,
}

thread_local! {
    /// [`Model::predict`]'s message map and send table, kept between
    /// evaluations.
    static INFLIGHT: std::cell::RefCell<(Inflight, Sends)> = std::cell::RefCell::new(Default::default());
}

/// The state of one replay: each rank's clock, times and program counter,
/// the messages in flight and the sends' completions.
pub(super) struct Replay<'a> {
    m: &'a Model,
    d: &'a Dist,
    /// With it, each collective's cost is measured and pushed there
    /// instead of looked up ([`Model::calibrate_collectives`]).
    calib: Option<&'a mut Calib>,
    laps: usize,
    p: usize,
    /// Each rank's program's steps.
    steps: Vec<&'a [Step]>,
    /// Each rank's clock and times at the end of its first lap.
    first_lap: Vec<Option<(f64, RankTime)>>,
    /// Each rank's sends before the lap it is in (a WaitSends numbers
    /// them per lap).
    send_base: Vec<usize>,
    /// Work factors W'/W per rank and level.
    factor: Vec<f64>,
    plans: Vec<Option<Arc<PlanSummary>>>,
    /// Calibrating on the recorded distribution, each stage's synchronous
    /// I/O is taken as recorded: a disturbed file call the fit leaves out
    /// is the recorded run's, not a collective's.
    recorded_io: bool,
    /// Scaled computation since the last non-compute step (the current
    /// stage's T_Φ, for the prefetch overlap of eq. 2).
    stage_acc: Vec<f64>,
    clock: Vec<f64>,
    /// Per rank, its clock when its last MPI call ended (a send's gap).
    quiet: Vec<f64>,
    out: Vec<RankTime>,
    pc: Vec<usize>,
    /// Messages in flight, per receiver.
    inflight: Inflight,
    sends: Sends,
    /// Ranks blocked at a collective, with their entry time, and how many
    /// are there (a count, so that each arrival is O(1)).
    at_reduce: Vec<Option<f64>>,
    n_at_reduce: usize,
    /// Collectives completed so far (the index into `collective_s`).
    nth_collective: usize,
    /// Replay recorded iteration `j`'s computation instead of the median
    /// over the recorded iterations ([`Model::predict_iterations`]).
    iteration: Option<usize>,
    /// Sends so far, all ranks (each message's [`Mail::id`]).
    sent: u32,
    /// With it, what the replay did is written there ([`Replay::logged`]).
    log: Option<Log>,
    /// Per rank replayed by its turns, where it is in them
    /// ([`super::turns`]; empty: none is).
    turns: Vec<Option<super::turns::Cursor>>,
}

impl<'a> Replay<'a> {
    /// A replay of `laps` iterations of `m` under `d`, every rank at 0.
    pub(super) fn new(
        m: &'a Model,
        d: &'a Dist,
        mut calib: Option<&'a mut Calib>,
        laps: usize,
    ) -> Result<Replay<'a>, ModelError> {
        let p = m.ranks();
        let recorded_io = calib.is_some() && !m.io.as_ref().is_some_and(|io| io.prefetching());
        if let Some(c) = calib.as_deref_mut() {
            c.handshakes = vec![Vec::new(); p];
            c.send_waits_seen = vec![0; p];
        }
        let (inflight, sends) = warm_maps(p);
        Ok(Replay {
            steps: m.programs.iter().map(|pr| &pr.steps[..]).collect(),
            factor: m.work_factors(d),
            plans: m.plans(d)?,
            m,
            d,
            calib,
            laps,
            p,
            first_lap: vec![None; p],
            send_base: vec![0; p],
            recorded_io,
            stage_acc: vec![0.0; p],
            clock: vec![0.0; p],
            quiet: vec![0.0; p],
            out: vec![RankTime::ZERO; p],
            pc: vec![0; p],
            inflight,
            sends,
            at_reduce: vec![None; p],
            n_at_reduce: 0,
            nth_collective: 0,
            iteration: None,
            sent: 0,
            log: None,
            turns: (0..p)
                .map(|i| {
                    m.turn(i)
                        .map(|t| super::turns::Cursor::new(t, 0x5eed ^ i as u64))
                })
                .collect(),
        })
    }

    /// The same replay with each rank's scaled computation times its
    /// reuse factor (`k`, [`crate::reuse`]; None: as recorded).
    pub(super) fn reused(mut self, k: Option<&[f64]>) -> Replay<'a> {
        if let Some(k) = k {
            self.m.apply_reuse(&mut self.factor, k);
        }
        self
    }

    /// The same replay with every rank's computation as in its recorded
    /// iteration `j` (each compute step's own seconds then), where the
    /// rank recorded it.
    pub(super) fn iteration(mut self, j: usize) -> Replay<'a> {
        self.iteration = Some(j);
        self
    }

    /// The same replay, logging what it does for [`super::fast`].
    pub(super) fn logged(mut self) -> Replay<'a> {
        self.log = Some(Log {
            events: Vec::new(),
            ok: true,
        });
        self
    }

    /// [`Replay::run`] with its log (None unless [`Replay::logged`]).
    pub(super) fn run_logged(mut self) -> Result<(Prediction, Option<Log>), ModelError> {
        self.drive()?;
        let log = self.log.take();
        Ok((self.finish(), log))
    }

    /// Step every rank as far as it can go, round after round, until all
    /// finished their laps; a round where none moved releases a held send
    /// or is a deadlock.
    pub(super) fn run(mut self) -> Result<Prediction, ModelError> {
        self.drive()?;
        Ok(self.finish())
    }

    fn drive(&mut self) -> Result<(), ModelError> {
        loop {
            let mut progress = false;
            for i in 0..self.p {
                progress |= self.advance(i);
            }
            if (0..self.p).all(|i| self.pc[i] >= self.laps * self.steps[i].len()) {
                return Ok(());
            }
            if !progress && !self.release_held() {
                let rank = (0..self.p)
                    .find(|&i| self.pc[i] < self.laps * self.steps[i].len())
                    .unwrap_or(0);
                return Err(ModelError::Deadlock {
                    rank,
                    step: self.pc[rank],
                });
            }
        }
    }

    /// Run rank `i` until it blocks or finishes; whether it moved.
    fn advance(&mut self, i: usize) -> bool {
        let mut progress = false;
        let len = self.steps[i].len();
        while self.pc[i] < self.laps * len {
            if self.pc[i] == len && self.first_lap[i].is_none() {
                self.first_lap[i] = Some((self.clock[i], self.out[i]));
                self.send_base[i] = self.sends.done[i].len();
            }
            let k = self.at(i);
            if !self.step(i) {
                break;
            }
            if !matches!(self.steps[i][k], Step::Compute { .. } | Step::StageEnd(_)) {
                self.quiet[i] = self.clock[i];
            }
            if let Some(l) = &mut self.log {
                l.events.push(LogEvent::Step(i as u32));
            }
            self.pc[i] += 1;
            progress = true;
        }
        progress
    }

    /// Rank `i`'s current step; false when it must wait for another rank.
    fn step(&mut self, i: usize) -> bool {
        let m = self.m;
        let k = self.at(i);
        let step = &self.steps[i][k];
        if !matches!(step, Step::Compute { .. } | Step::StageEnd(_)) {
            self.stage_acc[i] = 0.0;
        }
        match step {
            Step::Compute { s, scaled, level } => {
                let s = self
                    .iteration
                    .and_then(|j| m.programs[i].compute_by_iter.get(k)?.get(j))
                    .unwrap_or(s);
                self.compute(i, *s, *scaled, *level)
            }
            Step::StageEnd(k) => self.stage_end(i, *k as usize),
            Step::Send(to, mode) => self.send(i, to, *mode, m.both_ways(i, k)),
            Step::Recv(from) => return self.receive_all(i, std::slice::from_ref(from), true),
            Step::WaitRecvs(froms) => return self.receive_all(i, froms, true),
            Step::WaitSends(ns) => return self.wait_sends(i, ns),
            Step::Probe(from) => return self.receive_all(i, std::slice::from_ref(from), false),
            Step::Peek(from) => return self.peek(i, from),
            Step::MatchedRecv => self.matched_recv(i),
            Step::Reduce { bytes, shape, .. } => return self.reduce(i, *bytes, *shape),
        }
        true
    }

    /// Rank `i`'s step within its lap (its program counter modulo its
    /// program's length; 0 for an empty program).
    #[inline]
    fn at(&self, i: usize) -> usize {
        let (pc, len) = (self.pc[i], self.steps[i].len());
        if pc < len { pc } else { pc % len.max(1) }
    }

    fn active(&self, i: usize) -> bool {
        self.d.0[i] > 0 || self.m.app.topology == Topology::Fixed
    }

    /// Computation: MHETA T_Φ' = T_Φ · W'/W inside a stage, stretched by
    /// the rank's CPU slowdown (Figueira and Berman eq. 1: X = X_ded · sd_i).
    fn compute(&mut self, i: usize, s: f64, scaled: bool, level: u32) {
        let levels = self.m.levels as usize;
        let lv = (level as usize).min(levels - 1);
        let w = if scaled {
            s * self.factor[i * levels + lv]
        } else {
            s
        };
        let t = self.m.cpu_factor(i) * w;
        if scaled {
            self.stage_acc[i] += t;
        }
        let took = self.spend(i, t);
        self.out[i].compute_s += took;
    }

    /// [`super::turns::spend`] of rank `i`: the wall time `t` of its CPU took.
    fn spend(&mut self, i: usize, t: f64) -> f64 {
        super::turns::spend(self.turns.get_mut(i), &mut self.clock[i], t)
    }

    /// [`super::turns::in_turn`] of rank `i`, the wait counted as one.
    fn in_turn(&mut self, i: usize) {
        self.out[i].wait_s += super::turns::in_turn(self.turns.get_mut(i), &mut self.clock[i]);
    }

    /// [`super::turns::after_wait`] of rank `i` after a wait from `from`
    /// for something `ahead` seconds off, the time it adds counted as
    /// waiting.
    fn after_wait(&mut self, i: usize, from: f64, ahead: f64) {
        let slept = self.m.programs[i].sleeps_through(ahead);
        self.out[i].wait_s +=
            super::turns::after_wait(self.turns.get_mut(i), &mut self.clock[i], from, slept);
    }

    /// The end of stage `k`: its I/O under the plan, MHETA eq. 1
    /// (synchronous) or eq. 2 (prefetching, T_A = the stage's T_Φ so
    /// far); T_γ = T_Φ + Σ_m T_ψ(m).
    fn stage_end(&mut self, i: usize, k: usize) {
        if let (Some(io), Some(Some(plan))) = (&self.m.io, self.plans.get(i)) {
            let recorded = self
                .recorded_io
                .then(|| self.m.programs[i].stage_io_s.get(k))
                .flatten();
            let t = match recorded {
                Some(&t) => t,
                None => io.stage_io(i, k, plan, self.stage_acc[i]),
            };
            self.clock[i] += t;
            self.out[i].compute_s += t;
            self.out[i].io_s += t;
        }
        self.stage_acc[i] = 0.0;
    }

    /// A message of rank `i` to recorded peer `to`, rerouted under the
    /// distribution: MHETA eq. 3, arrival = T_τ(i) + O_send + T_{i→j}(q),
    /// the sender's part of it by size (LogGP's o(m),
    /// [`super::net::Pair::send_costs`]) and the transfer slowed by sd_{i→j} (Figueira and Berman eq. 3). Its number
    /// among i's sends is the count so far; it completes at once unless
    /// the receiver must take it ([`SendMode`]). Its transfer follows i's
    /// time away from MPI and whether it goes `both_ways` at once
    /// ([`super::net::Pair::exchange_transfer`]).
    fn send(&mut self, i: usize, to: &Peer, mode: SendMode, both_ways: bool) {
        let m = self.m;
        let net = &m.net;
        let n = self.sends.done[i].len() as u32;
        let id = self.sent;
        self.sent += 1;
        let j = if self.active(i) {
            m.route(self.d, i, to.rank)
        } else {
            None
        };
        let mut ack = NO_ACK;
        if let Some(j) = j {
            let pr = net.pair(i, j);
            let b = m.msg_bytes(self.d, i, to.bytes);
            let gap = self.clock[i] - self.quiet[i];
            let (o, wire) = pr.send_costs(b, Some(gap), both_ways);
            let took = self.spend(i, o * m.cpu_factor(i));
            let arrive = self.clock[i] + wire * m.net_factor(pr.k);
            self.out[i].overhead_s += took;
            let waits = match mode {
                SendMode::Buffered => false,
                SendMode::Synchronous => true,
                SendMode::Standard => b > pr.eager() as f64,
            };
            if waits {
                ack = n;
            }
            self.inflight[j].push_back(Mail {
                src: i,
                tag: to.tag,
                arrive,
                ack,
                id,
            });
        }
        let t = self.clock[i];
        self.sends.posted[i].push(t);
        self.sends.met_waiting[i].push(false);
        self.sends.done[i].push(if ack == NO_ACK { t } else { f64::NAN });
    }

    /// The recorded source of a receive of rank `i`, rerouted; None: no
    /// message under this distribution.
    fn source(&self, i: usize, from: &Peer) -> Option<usize> {
        if !self.active(i) {
            return None;
        }
        self.m.route(self.d, i, from.rank)
    }

    /// Where in rank `i`'s queue the first message from `src` with `tag`
    /// is; None: not sent yet.
    fn mail(&self, i: usize, src: usize, tag: i32) -> Option<usize> {
        self.inflight[i]
            .iter()
            .position(|m| m.src == src && m.tag == tag)
    }

    /// The message rank `i` receives from `from` has been sent (or none
    /// comes).
    fn ready(&self, i: usize, from: &Peer) -> bool {
        match self.source(i, from) {
            None => true,
            Some(j) => self.mail(i, j, from.tag).is_some(),
        }
    }

    /// Receives of `froms` once all were sent (Recv, WaitRecvs; Probe
    /// without `pay`); false while one is missing.
    fn receive_all(&mut self, i: usize, froms: &[Peer], pay: bool) -> bool {
        if !froms.iter().all(|f| self.ready(i, f)) {
            return false;
        }
        for f in froms {
            self.receive(i, f, pay);
        }
        true
    }

    /// MHETA eqs. 3 and 5: wait T_w for the arrival, then pay O_recv
    /// (slowed by the rank's CPU slowdown) when `pay`. A send that waited
    /// for its receiver completes when the receiver's acknowledgement
    /// reaches it.
    fn receive(&mut self, i: usize, from: &Peer, pay: bool) {
        let Some(j) = self.source(i, from) else {
            if let Some(l) = &mut self.log {
                l.events.push(LogEvent::Took(NONE));
            }
            return;
        };
        let m = self.m;
        let net = &m.net;
        let (arrive, ack, id) = (self.mail(i, j, from.tag))
            .and_then(|at| self.inflight[i].remove(at))
            .map_or((self.clock[i], NO_ACK, NONE), |m| (m.arrive, m.ack, m.id));
        if let Some(l) = &mut self.log {
            l.events.push(LogEvent::Took(id));
        }
        let (waiting, from) = (arrive > self.clock[i], self.clock[i]);
        let wait = m.programs[i].waited(arrive - from);
        self.clock[i] += wait;
        self.out[i].wait_s += wait;
        self.after_wait(i, from, arrive - from);
        if ack != NO_ACK
            && let Some(t) = self.sends.done[j].get_mut(ack as usize)
        {
            *t = self.clock[i] + net.pair(i, j).latency();
            self.sends.met_waiting[j][ack as usize] = waiting;
        }
        if pay {
            let o = net.pair(j, i).o_recv() * m.cpu_factor(i);
            let took = self.spend(i, o);
            self.out[i].overhead_s += took;
        }
    }

    /// Completion of sends `ns`: wait until the last completed (MHETA
    /// eq. 3's T_w on the sender's side for a send its receiver must
    /// take), plus the rank's handshake latency when a receiver was
    /// already waiting; false while one is not yet taken.
    fn wait_sends(&mut self, i: usize, ns: &[u32]) -> bool {
        let base = self.send_base[i];
        let done = &self.sends.done[i];
        let at = |n: &u32| done.get(base + *n as usize).copied().unwrap_or(0.0);
        if ns.iter().any(|n| at(n).is_nan()) {
            return false;
        }
        let last = ns.iter().map(at).fold(f64::NEG_INFINITY, f64::max);
        let wait = self.m.programs[i].waited(last - self.clock[i]);
        let handshake = ns.iter().any(|n| {
            self.sends.met_waiting[i]
                .get(base + *n as usize)
                .copied()
                .unwrap_or(false)
        });
        let (from, ahead) = (self.clock[i], last - self.clock[i]);
        let wait = wait + self.handshake(i, wait, handshake);
        self.clock[i] += wait;
        self.out[i].wait_s += wait;
        self.after_wait(i, from, ahead);
        true
    }

    /// What a send completion whose receiver was already waiting adds:
    /// the rank's handshake latency ([`Model::calibrate_collectives`]);
    /// calibrating, nothing, but the recorded excess is kept.
    fn handshake(&mut self, i: usize, wait: f64, handshake: bool) -> f64 {
        let prog = &self.m.programs[i];
        match self.calib.as_deref_mut() {
            Some(c) => {
                let nth = c.send_waits_seen[i];
                c.send_waits_seen[i] += 1;
                let bound = HANDSHAKE_SLEEPS * prog.sleep_s;
                let took = prog.send_waits_s.get(nth).copied();
                if handshake
                    && let Some(took) = took.filter(|t| !t.is_nan())
                    && wait < bound
                {
                    c.handshakes[i].push((took - wait).clamp(0.0, bound));
                }
                0.0
            }
            None if handshake => self.m.handshake_s.get(i).copied().unwrap_or(0.0),
            None => 0.0,
        }
    }

    /// A plain probe: wait for the message's arrival (MHETA eq. 3's T_w)
    /// and leave it for a receive; false while it is not sent.
    fn peek(&mut self, i: usize, from: &Peer) -> bool {
        if !self.ready(i, from) {
            return false;
        }
        if let Some(j) = self.source(i, from)
            && let Some(at) = self.mail(i, j, from.tag)
        {
            let arrive = self.inflight[i][at].arrive;
            let wait = (arrive - self.clock[i]).max(0.0);
            self.clock[i] += wait;
            self.out[i].wait_s += wait;
            self.in_turn(i);
        }
        true
    }

    /// The receive of a probed message: MHETA eq. 5's O_recv (the
    /// profile's mean).
    fn matched_recv(&mut self, i: usize) {
        if self.active(i) {
            let o = self.m.net.mean[1];
            let took = self.spend(i, o);
            self.out[i].overhead_s += took;
        }
    }

    /// No rank could move. The recorded run finished, so a send its rank
    /// waits for here was not held by its receiver there (a persistent
    /// buffered send, a larger eager limit than the profile's): let the
    /// earliest such send complete when it was posted. False when there
    /// is none (a deadlock).
    fn release_held(&mut self) -> bool {
        let sends = &self.sends;
        let held = (0..self.p)
            .filter_map(|i| match self.steps[i].get(self.at(i)) {
                Some(Step::WaitSends(ns)) => ns
                    .iter()
                    .map(|&n| self.send_base[i] + n as usize)
                    .find(|&n| sends.done[i].get(n).is_some_and(|t| t.is_nan()))
                    .map(|n| (i, n)),
                _ => None,
            })
            .min_by(|a, b| sends.posted[a.0][a.1].total_cmp(&sends.posted[b.0][b.1]));
        match held {
            Some((i, n)) => {
                self.sends.done[i][n] = self.sends.posted[i][n];
                if let Some(l) = &mut self.log {
                    l.ok = false;
                }
                true
            }
            None => false,
        }
    }

    /// Each rank's times over its last lap, and the iteration: the last
    /// rank to finish. The message maps go back for the next replay.
    fn finish(mut self) -> Prediction {
        let maps = (
            std::mem::take(&mut self.inflight),
            std::mem::take(&mut self.sends),
        );
        INFLIGHT.with(|m| *m.borrow_mut() = maps);
        last_lap(self.out, &self.clock, &self.first_lap, self.laps)
    }
}

/// The prediction from each rank's times `out` and clock at the end of
/// `laps` iterations: over the laps after its first where `first_lap`
/// kept the end of its first (their mean, where there are more than one:
/// [`super::turns`]); the iteration is the last rank to finish.
pub(super) fn last_lap(
    mut out: Vec<RankTime>,
    clock: &[f64],
    first_lap: &[Option<(f64, RankTime)>],
    laps: usize,
) -> Prediction {
    // x / 1 is x: two laps price their second as they are.
    let n = laps.saturating_sub(1).max(1) as f64;
    for ((o, &clock), first) in out.iter_mut().zip(clock).zip(first_lap) {
        o.total_s = clock;
        if let Some((t, f)) = first {
            *o = RankTime {
                total_s: (clock - t) / n,
                compute_s: (o.compute_s - f.compute_s) / n,
                io_s: (o.io_s - f.io_s) / n,
                overhead_s: (o.overhead_s - f.overhead_s) / n,
                wait_s: (o.wait_s - f.wait_s) / n,
            };
        }
    }
    let per_iteration_s = out.iter().fold(0.0f64, |a, r| a.max(r.total_s));
    Prediction {
        per_iteration_s,
        ranks: out,
    }
}

/// The thread's message map and send table, emptied for `p` ranks. They
/// are kept per thread between evaluations (a search evaluates many
/// distributions on the same channels), so that an evaluation allocates
/// nothing once warm.
fn warm_maps(p: usize) -> (Inflight, Sends) {
    let (mut inflight, mut sends) = INFLIGHT.with(|m| std::mem::take(&mut *m.borrow_mut()));
    inflight.resize_with(p, VecDeque::new);
    for q in &mut inflight[..p] {
        q.clear();
    }
    sends.done.resize_with(p, Vec::new);
    sends.posted.resize_with(p, Vec::new);
    sends.met_waiting.resize_with(p, Vec::new);
    for i in 0..p {
        sends.done[i].clear();
        sends.posted[i].clear();
        sends.met_waiting[i].clear();
    }
    (inflight, sends)
}

mod reduce;
