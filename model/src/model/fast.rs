//! The replay compiled ([`Evaluator`]): what one interpreted replay
//! ([`super::replay`]) did, in the order it did it, with each message's
//! route, pair and match fixed, run again with fresh clocks for the next
//! distribution. A search evaluates hundreds of distributions of one
//! model; the interpreter spends most of an evaluation finding what to
//! do (which rank can go on, where a message goes, which queued message a
//! receive takes, which pair prices it), and that depends only on which
//! ranks hold rows and on which sends wait for their receiver, not on the
//! clocks. The arithmetic is the interpreter's, operation for operation,
//! so a compiled evaluation gives the interpreter's prediction bit for
//! bit (`tests::compiled_equals_interpreted`).
//!
//! A distribution that changes which ranks hold rows, or a send between
//! eager and rendezvous (messages that scale with the sender's rows),
//! is replayed by the interpreter and compiled again. Programs with a
//! plain probe are always interpreted. An all-gather keeps what its
//! blocks follow ([`collective::Blocks`]) and takes them from each
//! distribution.

use super::collective;
use super::replay::{self, NONE, Replay};
use super::{CostStep, Model, ModelError, Prediction, RankTime, Shape, Step};
use crate::dist::Dist;
use mheta_trace::MsgScaling;
use std::cell::RefCell;

/// One thing a rank did, ready to redo.
#[derive(Clone, Copy, Debug)]
enum Op {
    /// A computation: `t = cpu · s · factor[slot]` when scaled.
    Compute {
        i: u32,
        s: f64,
        scaled: bool,
        slot: u32,
    },
    StageEnd {
        i: u32,
        k: u32,
    },
    /// Send number `g` of the replay; `msg` into [`Compiled::msgs`] (NONE:
    /// no message under this distribution). `pre`: the computation of
    /// fixed length just before it on its rank, its time already
    /// multiplied by the rank's CPU factor (0: none), done first.
    Send {
        i: u32,
        g: u32,
        msg: u32,
        pre: f64,
    },
    /// Receives `items` of [`Compiled::takes`], paying `o_recv` when
    /// `pay`.
    Recv {
        i: u32,
        pay: bool,
        from: u32,
        to: u32,
    },
    /// Completion of sends `from..to` of [`Compiled::waits`].
    WaitSends {
        i: u32,
        from: u32,
        to: u32,
    },
    MatchedRecv {
        i: u32,
        o: f64,
    },
    /// An arrival at a collective that waits for the others.
    Arrive {
        i: u32,
    },
    /// The last arrival at a collective, which completes it; `blocks`
    /// into [`Compiled::blocks`] for an all-gather (else NONE).
    Reduce {
        i: u32,
        bytes: f64,
        shape: Shape,
        blocks: u32,
    },
    /// Rank `i` begins its second lap: its clock and times so far are
    /// kept ([`Model::laps`]).
    LapEnd {
        i: u32,
    },
}

/// How many kinds of [`Op`] there are ([`Op::kind`]).
const KINDS: usize = 9;

impl Op {
    /// Its kind, as a small number below [`KINDS`]: [`schedule`] runs
    /// ops of one kind together.
    fn kind(&self) -> u8 {
        match self {
            Op::Compute { .. } => 0,
            Op::StageEnd { .. } => 1,
            Op::Send { .. } => 2,
            Op::Recv { .. } => 3,
            Op::WaitSends { .. } => 4,
            Op::MatchedRecv { .. } => 5,
            Op::Arrive { .. } => 6,
            Op::Reduce { .. } => 7,
            Op::LapEnd { .. } => 8,
        }
    }

    fn rank(&self) -> usize {
        match *self {
            Op::Compute { i, .. }
            | Op::StageEnd { i, .. }
            | Op::Send { i, .. }
            | Op::Recv { i, .. }
            | Op::WaitSends { i, .. }
            | Op::MatchedRecv { i, .. }
            | Op::Arrive { i }
            | Op::Reduce { i, .. }
            | Op::LapEnd { i } => i as usize,
        }
    }
}

/// A send's message: its receiver, overhead, wire time (for messages of
/// fixed size) and whether it waits for its receiver.
#[derive(Clone, Copy, Debug)]
struct Msg {
    j: u32,
    /// The sender's time (`Pair::send_costs`, times its CPU factor); NaN:
    /// recomputed from `bytes` each time, with `wire`.
    o: f64,
    /// `transfer(b) · net factor`; NaN: recomputed from `bytes` each time
    /// (a message that scales with the sender's rows).
    wire: f64,
    bytes: f64,
    waits: bool,
    /// A standard send: whether it waits follows its size.
    standard: bool,
    /// It goes both ways at once with one from its receiver
    /// ([`super::net::Pair::exchange_transfer`]).
    both_ways: bool,
}

/// A receive: the send it takes (NONE: none was sent), its overhead and
/// the acknowledgement's latency back to its sender.
#[derive(Clone, Copy, Debug)]
struct Take {
    g: u32,
    o: f64,
    latency: f64,
}

/// A compiled replay and what it holds for.
struct Compiled {
    ops: Vec<Op>,
    msgs: Vec<Msg>,
    takes: Vec<Take>,
    /// Send numbers (NONE: beyond the rank's sends, completed at 0).
    waits: Vec<u32>,
    /// The all-gathers' blocks, one entry for a run of equal ones.
    blocks: Vec<collective::Blocks>,
    sends: usize,
    /// Per send number, whether it waits for its receiver (a run where
    /// one changes stops at that send).
    send_waits: Vec<bool>,
    /// Which ranks held rows when it was compiled.
    holds: Vec<bool>,
    /// Each rank's sleep residual and spin ([`super::Program::waited`]).
    wake: Vec<(f64, f64)>,
    /// Whether any rank sleeps in its waits (a `wake_s` above 0).
    sleeps: bool,
    /// Iterations replayed ([`Model::laps`]).
    laps: usize,
}

impl Compiled {
    /// [`super::Program::waited`] of rank `i`, from its copy of the
    /// program's two figures.
    ///
    /// `SLEEPS` false: no rank sleeps (every `wake_s` is 0), so a wait is
    /// what is ahead, or 0.
    #[inline]
    fn waited<const SLEEPS: bool>(&self, i: usize, ahead: f64) -> f64 {
        let wait = ahead.max(0.0);
        if !SLEEPS {
            return wait;
        }
        let (wake_s, spin_s) = self.wake[i];
        // Without a branch (whether a wait outlasts the spin follows the
        // clocks): adding 0 to a wait leaves it as it is.
        let sleeps = (wake_s > 0.0 && wait > spin_s) as u8 as f64;
        wait + sleeps * wake_s
    }
}

/// A rank's state in a compiled replay, kept together: an op reads and
/// writes its own rank's.
#[derive(Clone, Copy, Debug)]
struct Lane {
    clock: f64,
    /// The clock when the rank's last MPI call ended.
    quiet: f64,
    /// The scaled computation of the stage so far (for its I/O).
    stage: f64,
    out: RankTime,
}

impl Lane {
    const START: Lane = Lane {
        clock: 0.0,
        quiet: 0.0,
        stage: 0.0,
        out: RankTime::ZERO,
    };
}

/// The per-evaluation state, kept between evaluations.
#[derive(Default)]
struct Scratch {
    /// Each rank's clock, times and stage compute so far.
    lanes: Vec<Lane>,
    clock: Vec<f64>,
    first_lap: Vec<Option<(f64, RankTime)>>,
    at_reduce: Vec<Option<f64>>,
    arrive: Vec<f64>,
    /// An all-gather's blocks under the distribution evaluated, and which
    /// of [`Compiled::blocks`] they are.
    block: (Vec<f64>, u32),
    mail: Vec<f64>,
    done: Vec<f64>,
    met_waiting: Vec<bool>,
    factor: Vec<f64>,
    plans: Vec<Option<std::sync::Arc<crate::iomodel::PlanSummary>>>,
    /// Each rank's first row and rows that its plan in `plans` is for
    /// (u64::MAX: none yet): a plan is looked up again only when they
    /// change.
    plan_at: Vec<(u64, u64)>,
    /// Per rank and stage, the I/O of the sweeps its plan does not
    /// prefetch ([`crate::iomodel::IoModel::stage_io_swept`]; NaN: not
    /// yet), kept with the plan.
    swept: Vec<f64>,
}

/// Each rank's plan under `d` into `s.plans` (None for a rank without a
/// memory budget), as [`Model::plans_into`] gives them, looked up only for
/// the ranks whose rows moved since the last evaluation; a rank whose
/// budget cannot hold its rows is [`ModelError::TooSmall`].
fn plans_kept(m: &Model, d: &Dist, s: &mut Scratch) -> Result<(), ModelError> {
    let Some(io) = &m.io else {
        s.plans.clear();
        return Ok(());
    };
    let (p, stages) = (d.0.len(), io.stages());
    if s.plans.len() != p || s.plan_at.len() != p || s.swept.len() != p * stages {
        reset(&mut s.plans, p, None);
        reset(&mut s.plan_at, p, (u64::MAX, u64::MAX));
        reset(&mut s.swept, p * stages, f64::NAN);
    }
    let mut first = 0;
    for (i, &rows) in d.0.iter().enumerate() {
        let at = (first, rows);
        first += rows;
        if s.plan_at[i] == at {
            continue;
        }
        s.plans[i] = if io.unbudgeted(i) {
            None
        } else {
            io.plan(i, at.0, rows)
        };
        s.plan_at[i] = at;
        s.swept[i * stages..(i + 1) * stages].fill(f64::NAN);
    }
    match (0..p).find(|&i| s.plans[i].is_none() && !io.unbudgeted(i)) {
        Some(rank) => Err(ModelError::TooSmall {
            rank,
            rows: d.0[rank],
        }),
        None => Ok(()),
    }
}

/// Evaluates many distributions of one model, compiling its replay
/// ([`Model::evaluator`]).
pub struct Evaluator<'a> {
    m: &'a Model,
    /// None: not compiled yet, or this model's programs are always
    /// interpreted.
    compiled: RefCell<Option<std::sync::Arc<Compiled>>>,
    /// The programs have a step the compiled replay does not do.
    interpret_only: bool,
    scratch: RefCell<Scratch>,
    /// Evaluations the compiled replay gave.
    compiled_runs: std::cell::Cell<u64>,
    /// Every rank's cost-line steps, one after another, and where each
    /// rank's begin there ([`Evaluator::rank_cost`]).
    costs: std::cell::OnceCell<(Vec<CostStep>, Vec<usize>)>,
}

impl Model {
    /// An evaluator of this model's predictions: [`Model::predict`]'s
    /// answers, two to three times faster after the first (the replay
    /// compiled: `model/fast.rs`).
    pub fn evaluator(&self) -> Evaluator<'_> {
        // A rank replayed by its turns is interpreted ([`super::turns`]).
        let interpret_only = !self.turns.is_empty()
            || (self.programs.iter()).any(|p| p.steps.iter().any(|s| matches!(s, Step::Peek(_))));
        Evaluator {
            m: self,
            compiled: RefCell::new(None),
            interpret_only,
            scratch: RefCell::new(Scratch::default()),
            compiled_runs: std::cell::Cell::new(0),
            costs: std::cell::OnceCell::new(),
        }
    }
}

impl<'a> Evaluator<'a> {
    /// An evaluator of the same model that starts from this one's
    /// compiled replay (shared, not copied), with scratch of its own: one
    /// for each thread of a parallel search (`search.rs`). It gives the
    /// same answers.
    pub fn fork(&self) -> Evaluator<'a> {
        Evaluator {
            m: self.m,
            compiled: RefCell::new(self.compiled.borrow().clone()),
            interpret_only: self.interpret_only,
            scratch: RefCell::new(Scratch::default()),
            compiled_runs: std::cell::Cell::new(0),
            costs: std::cell::OnceCell::new(),
        }
    }

    /// [`Model::predict`] of `d`.
    pub fn predict(&self, d: &Dist) -> Result<Prediction, ModelError> {
        let m = self.m;
        if self.interpret_only {
            return m.predict(d);
        }
        d.check(m.ranks(), m.rows())?;
        m.settled(d, |k| self.predict_at(d, k))
    }

    /// The replay under `d` with reuse factors `k` ([`crate::reuse`]),
    /// compiled where it can be.
    fn predict_at(&self, d: &Dist, k: Option<&[f64]>) -> Result<Prediction, ModelError> {
        let m = self.m;
        if let Some(c) = self.compiled.borrow().as_ref()
            && c.holds.iter().zip(&d.0).all(|(h, &r)| *h == (r > 0))
            && let Some(p) = self.run(c, d, k)?
        {
            self.compiled_runs.set(self.compiled_runs.get() + 1);
            return Ok(p);
        }
        let (pred, log) = (Replay::new(m, d, None, m.laps())?.reused(k))
            .logged()
            .run_logged()?;
        *self.compiled.borrow_mut() = log
            .filter(|l| l.ok)
            .and_then(|l| compile(m, d, &l.events))
            .map(std::sync::Arc::new);
        Ok(pred)
    }

    /// [`Model::rank_cost`], bit for bit, along each rank's steps with
    /// the communication left out (`Model::cost_steps`), which a search
    /// reads many times a rank.
    pub fn rank_cost(&self, i: usize, rows: u64) -> f64 {
        let (steps, at) = self.costs.get_or_init(|| {
            let mut steps = Vec::new();
            let mut at = vec![0];
            for i in 0..self.m.ranks() {
                steps.extend(self.m.cost_steps(i));
                at.push(steps.len());
            }
            (steps, at)
        });
        (self.m).cost_along(i, rows, steps[at[i]..at[i + 1]].iter().copied())
    }

    /// The model it evaluates.
    pub fn model(&self) -> &Model {
        self.m
    }

    /// How many evaluations so far the compiled replay gave (the others
    /// were interpreted, and compiled).
    pub fn compiled_evaluations(&self) -> u64 {
        self.compiled_runs.get()
    }

    /// The compiled replay under `d`; None where a send changed between
    /// eager and rendezvous.
    fn run(
        &self,
        c: &Compiled,
        d: &Dist,
        k: Option<&[f64]>,
    ) -> Result<Option<Prediction>, ModelError> {
        self.run_tracked(c, d, k, &mut NoTrack)
    }

    /// The ranks whose work under `d` lies on the replay's critical path:
    /// a rank's computation or stage I/O, or a send whose size follows
    /// its rows, on the chain of operations and waits that ends at the
    /// last rank to finish. Only such a rank's rows can shorten the
    /// iteration (less work off the path leaves the path as it is). None
    /// where the replay is not compiled for `d`.
    pub fn critical(&self, d: &Dist) -> Result<Option<Vec<bool>>, ModelError> {
        let m = self.m;
        if self.interpret_only {
            return Ok(None);
        }
        d.check(m.ranks(), m.rows())?;
        let compiled = self.compiled.borrow();
        let Some(c) = compiled.as_ref() else {
            return Ok(None);
        };
        if !c.holds.iter().zip(&d.0).all(|(h, &r)| *h == (r > 0)) {
            return Ok(None);
        }
        let mut t = PathTrack::new(c, m.ranks());
        let Some(pred) = self.run_tracked(c, d, None, &mut t)? else {
            return Ok(None);
        };
        let last = (0..m.ranks())
            .max_by(|&a, &b| pred.ranks[a].total_s.total_cmp(&pred.ranks[b].total_s))
            .unwrap_or(0);
        let scaled = m.app.msg_scaling != MsgScaling::Constant;
        let mut on = vec![false; m.ranks()];
        let mut x = t.last[last];
        while x != NONE {
            let op = &c.ops[x as usize];
            let rows_dependent = match op {
                Op::Compute { scaled, .. } => *scaled,
                Op::StageEnd { .. } => true,
                Op::Send { msg, .. } => scaled && *msg != NONE,
                _ => false,
            };
            if rows_dependent {
                on[op.rank()] = true;
            }
            x = t.pred[x as usize];
        }
        Ok(Some(on))
    }

    /// [`Evaluator::run`], telling `track` which operation each one's
    /// clock followed.
    fn run_tracked<T: Track>(
        &self,
        c: &Compiled,
        d: &Dist,
        k: Option<&[f64]>,
        track: &mut T,
    ) -> Result<Option<Prediction>, ModelError> {
        // Whether a stage's I/O reads its compute, and whether a send's
        // gap is read, are fixed for the model: one loop for each, so
        // that no operation tests them.
        // So is whether any rank sleeps in its waits (most never do: MPI
        // libraries poll), which every receive and wait would test.
        match (self.m.io.is_some(), self.m.net.has_exchanges(), c.sleeps) {
            (false, false, false) => self.run_as::<T, false, false, false>(c, d, k, track),
            (false, false, true) => self.run_as::<T, false, false, true>(c, d, k, track),
            (false, true, false) => self.run_as::<T, false, true, false>(c, d, k, track),
            (false, true, true) => self.run_as::<T, false, true, true>(c, d, k, track),
            (true, false, false) => self.run_as::<T, true, false, false>(c, d, k, track),
            (true, false, true) => self.run_as::<T, true, false, true>(c, d, k, track),
            (true, true, false) => self.run_as::<T, true, true, false>(c, d, k, track),
            (true, true, true) => self.run_as::<T, true, true, true>(c, d, k, track),
        }
    }

    /// [`Evaluator::run_tracked`] where `STAGED` says whether the model
    /// has I/O, `GAPS` whether its pairs measured exchanges and `SLEEPS`
    /// whether a rank sleeps in its waits.
    fn run_as<T: Track, const STAGED: bool, const GAPS: bool, const SLEEPS: bool>(
        &self,
        c: &Compiled,
        d: &Dist,
        k: Option<&[f64]>,
        track: &mut T,
    ) -> Result<Option<Prediction>, ModelError> {
        let m = self.m;
        let p = m.ranks();
        let mut guard = self.scratch.borrow_mut();
        let s = &mut *guard;
        m.work_factors_into(d, &mut s.factor);
        if let Some(k) = k {
            m.apply_reuse(&mut s.factor, k);
        }
        // A rank without a memory budget does no I/O: no plan looked up.
        plans_kept(m, d, s)?;
        reset(&mut s.lanes, p, Lane::START);
        if c.laps > 1 || s.first_lap.len() != p {
            reset(&mut s.first_lap, p, None);
        }
        reset(&mut s.at_reduce, p, None);
        // Each send writes its own entries before anything reads them.
        s.mail.resize(c.sends, f64::NAN);
        s.done.resize(c.sends, f64::NAN);
        s.met_waiting.resize(c.sends, false);
        // Apart, so that a store to one is known not to move another.
        let Scratch {
            lanes,
            clock,
            first_lap,
            at_reduce,
            arrive: arrive_buf,
            block,
            mail,
            done,
            met_waiting,
            factor,
            plans,
            plan_at: _,
            swept,
        } = s;
        let (factor, plans) = (&factor[..], &plans[..]);
        let stages = m.io.as_ref().map_or(0, |io| io.stages());
        let lanes = &mut lanes[..];
        // Only a stage's I/O reads its compute.
        let staged = STAGED;
        let (mail, done, met_waiting) = (&mut mail[..], &mut done[..], &mut met_waiting[..]);
        let send_waits = &c.send_waits[..];
        // A send's gap is read only where the pairs measured exchanges.
        let gaps = GAPS;
        let mut nth_collective = 0usize;
        block.1 = NONE;
        for (x, op) in c.ops.iter().enumerate() {
            let x = x as u32;
            let i = op.rank();
            track.begin(x, i);
            if staged
                && !matches!(
                    op,
                    Op::Compute { .. } | Op::StageEnd { .. } | Op::LapEnd { .. }
                )
            {
                lanes[i].stage = 0.0;
            }
            match *op {
                Op::Compute {
                    s: secs,
                    scaled,
                    slot,
                    ..
                } => {
                    let w = if scaled {
                        secs * factor[slot as usize]
                    } else {
                        secs
                    };
                    let t = m.cpu_factor(i) * w;
                    if scaled {
                        lanes[i].stage += t;
                    }
                    lanes[i].clock += t;
                    lanes[i].out.compute_s += t;
                }
                Op::StageEnd { k, .. } => {
                    if let (Some(io), Some(Some(plan))) = (&m.io, plans.get(i)) {
                        let k = k as usize;
                        // `IoModel::stage_io`, its part that the compute
                        // does not change kept while the plan stays.
                        let kept = if k < stages {
                            let at = &mut swept[i * stages + k];
                            if at.is_nan() {
                                *at = io.stage_io_swept(i, k, plan);
                            }
                            *at
                        } else {
                            0.0
                        };
                        let t = kept + io.stage_io_prefetched(i, k, plan, lanes[i].stage);
                        lanes[i].clock += t;
                        lanes[i].out.compute_s += t;
                        lanes[i].out.io_s += t;
                    }
                    lanes[i].stage = 0.0;
                }
                Op::Send { g, msg, pre, .. } => {
                    // x + 0 is x: a send without a computation before it
                    // keeps its clock.
                    lanes[i].clock += pre;
                    lanes[i].out.compute_s += pre;
                    let g = g as usize;
                    let mut waits = false;
                    if msg != NONE {
                        let mg = &c.msgs[msg as usize];
                        let (o, wire) = if mg.wire.is_nan() {
                            let pr = m.net.pair(i, mg.j as usize);
                            let b = m.msg_bytes(d, i, mg.bytes);
                            if mg.standard && (b > pr.eager() as f64) != mg.waits {
                                return Ok(None);
                            }
                            let gap = gaps.then(|| lanes[i].clock - lanes[i].quiet);
                            let (o, t) = pr.send_costs(b, gap, mg.both_ways);
                            let o = if mg.o.is_nan() {
                                o * m.cpu_factor(i)
                            } else {
                                mg.o
                            };
                            (o, t * m.net_factor(pr.k))
                        } else {
                            (mg.o, mg.wire)
                        };
                        mail[g] = lanes[i].clock + o + wire;
                        track.sent(g, x);
                        lanes[i].clock += o;
                        lanes[i].out.overhead_s += o;
                        waits = mg.waits;
                    }
                    let t = lanes[i].clock;
                    done[g] = if waits { f64::NAN } else { t };
                    track.done(g, x);
                }
                Op::Recv { pay, from, to, .. } => {
                    for t in &c.takes[from as usize..to as usize] {
                        let (arrive, a) = if t.g == NONE {
                            (lanes[i].clock, NONE)
                        } else {
                            let g = t.g as usize;
                            (mail[g], if send_waits[g] { t.g } else { NONE })
                        };
                        let waiting = arrive > lanes[i].clock;
                        if waiting {
                            track.waited_for_mail(x, t.g);
                        }
                        let wait = c.waited::<SLEEPS>(i, arrive - lanes[i].clock);
                        lanes[i].clock += wait;
                        lanes[i].out.wait_s += wait;
                        if a != NONE {
                            done[a as usize] = lanes[i].clock + t.latency;
                            met_waiting[a as usize] = waiting;
                            track.done(a as usize, x);
                        }
                        if pay {
                            lanes[i].clock += t.o;
                            lanes[i].out.overhead_s += t.o;
                        }
                    }
                }
                Op::WaitSends { from, to, .. } => {
                    let ws = &c.waits[from as usize..to as usize];
                    let at = |g: u32| if g == NONE { 0.0 } else { done[g as usize] };
                    if ws.iter().any(|&g| at(g).is_nan()) {
                        return Ok(None);
                    }
                    let last = ws.iter().map(|&g| at(g)).fold(f64::NEG_INFINITY, f64::max);
                    if last > lanes[i].clock
                        && let Some(&g) = ws.iter().find(|&&g| g != NONE && at(g) == last)
                    {
                        track.waited_for_done(x, g as usize);
                    }
                    let wait = c.waited::<SLEEPS>(i, last - lanes[i].clock);
                    // Only a send that waits has its receive's word on it.
                    let handshake = ws
                        .iter()
                        .any(|&g| g != NONE && send_waits[g as usize] && met_waiting[g as usize]);
                    let extra = if handshake {
                        m.handshake_s.get(i).copied().unwrap_or(0.0)
                    } else {
                        0.0
                    };
                    let wait = wait + extra;
                    lanes[i].clock += wait;
                    lanes[i].out.wait_s += wait;
                }
                Op::MatchedRecv { o, .. } => {
                    lanes[i].clock += o;
                    lanes[i].out.overhead_s += o;
                }
                Op::Arrive { .. } => {
                    at_reduce[i] = Some(lanes[i].clock);
                    track.arrived(i, x);
                }
                Op::LapEnd { .. } => first_lap[i] = Some((lanes[i].clock, lanes[i].out)),
                Op::Reduce {
                    bytes,
                    shape,
                    blocks,
                    ..
                } => {
                    if at_reduce[i].is_none() {
                        at_reduce[i] = Some(lanes[i].clock);
                        track.arrived(i, x);
                    }
                    arrive_buf.clear();
                    arrive_buf.extend(at_reduce.iter().map(|a| a.unwrap_or(0.0)));
                    let arrive = &arrive_buf[..];
                    let entry = arrive.iter().fold(0.0f64, |a, &b| a.max(b));
                    track.completed(x, arrive.iter().position(|&a| a == entry).unwrap_or(i));
                    if blocks != NONE && block.1 != blocks {
                        c.blocks[blocks as usize].fill(d, &mut block.0);
                        block.1 = blocks;
                    }
                    let (b, rec) = if blocks == NONE {
                        (&[][..], &[][..])
                    } else {
                        (&block.0[..], c.blocks[blocks as usize].recorded())
                    };
                    let exits = collective::priced_exits(m, shape, arrive, bytes, entry, (b, rec));
                    let costs = &m.collective_s;
                    let extra = costs
                        .get(nth_collective % costs.len().max(1))
                        .copied()
                        .unwrap_or(0.0);
                    nth_collective += 1;
                    for j in 0..p {
                        let done = (exits[j] + extra).max(entry);
                        at_reduce[j] = None;
                        let l = &mut lanes[j];
                        l.out.wait_s += entry - arrive[j];
                        l.out.overhead_s += done - entry;
                        l.clock = done;
                        l.quiet = done;
                    }
                }
            }
            if gaps
                && matches!(
                    op,
                    Op::Send { .. }
                        | Op::Recv { .. }
                        | Op::WaitSends { .. }
                        | Op::MatchedRecv { .. }
                )
            {
                lanes[i].quiet = lanes[i].clock;
            }
            track.end(x, i);
        }
        clock.clear();
        clock.extend(lanes.iter().map(|l| l.clock));
        let out = lanes.iter().map(|l| l.out).collect();
        Ok(Some(replay::last_lap(out, clock, first_lap, c.laps)))
    }
}

/// `v` holding `n` copies of `x`, keeping its allocation.
fn reset<T: Clone>(v: &mut Vec<T>, n: usize, x: T) {
    v.clear();
    v.resize(n, x);
}

mod compile;
use compile::compile;
mod track;
use track::{NoTrack, PathTrack, Track};

#[cfg(test)]
mod tests;
