//! A rank's [`Program`]: its recorded iteration as model input, the
//! steps the replay prices ([`Step`], [`Peer`], [`SendMode`]), one
//! iteration's events read into steps ([`Program::from_events`]) and
//! several iterations of the same shape merged into their medians
//! ([`Program::from_trace`]).

use super::Shape;
use crate::iomodel::IoObs;
use mheta_trace::{Event, Op, RankTrace, What};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

mod merge;
use merge::{compute_by_iter, median_series, median_steps, reduce_tooks};

/// A message endpoint in a program.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Peer {
    pub rank: usize,
    pub tag: i32,
    pub bytes: f64,
}

/// When a send completes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum SendMode {
    /// `MPI_Send`, `MPI_Isend`, `MPI_Rsend`: at once when the message fits
    /// the pair's eager limit ([`mheta_profile::PairCost::eager_limit_bytes`]),
    /// else once the receiver has taken it.
    Standard,
    /// `MPI_Bsend`, `MPI_Ibsend`: at once, into the user's buffer.
    Buffered,
    /// `MPI_Ssend`, `MPI_Issend`: once the receiver has taken it.
    Synchronous,
}

/// One step of a rank's iteration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Step {
    /// Computation: `scaled` gaps lie inside a stage and scale with the
    /// rank's work on grid `level` (MHETA: T_Φ' = T_Φ · W'/W).
    Compute { s: f64, scaled: bool, level: u32 },
    /// The end of the iteration's `k`-th stage: its I/O (MHETA eqs. 1-2)
    /// under the predicted distribution is paid here.
    StageEnd(u32),
    /// Blocking or non-blocking send: costs `o_s`, the message is on its
    /// way. The sends of a program are numbered in order from 0 for
    /// [`Step::WaitSends`].
    Send(Peer, SendMode),
    /// Blocking receive.
    Recv(Peer),
    /// Completion of non-blocking receives.
    WaitRecvs(Vec<Peer>),
    /// Completion of sends, by their number: an eager send completed when
    /// it was posted; a larger one when its receiver has taken it
    /// ([`SendMode`]). A blocking send is a send and its completion.
    WaitSends(Vec<u32>),
    /// A matched probe: wait for the message and take it; the receive
    /// comes later.
    Probe(Peer),
    /// A plain probe: wait for the message, leave it for a receive.
    Peek(Peer),
    /// The receive of a probed message: costs `o_r`.
    MatchedRecv,
    /// A collective over all ranks of `bytes` per rank. `took`: the
    /// seconds this rank waited in it as recorded (a blocking one's call;
    /// for a non-blocking one, the tests and waits and the gaps after
    /// tests that found nothing done, from its start to its completion;
    /// over several recorded iterations, their median). [`Model::new`](super::Model::new)
    /// prices each collective from these ([`Model::calibrate_collectives`](super::Model::calibrate_collectives));
    /// `shape`, its messages' pattern.
    Reduce { bytes: f64, took: f64, shape: Shape },
}

/// A rank's instrumented iteration as model input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Program {
    pub steps: Vec<Step>,
    /// Sum of the scaled compute, seconds.
    pub scaled_s: f64,
    /// Sum of the unscaled compute, seconds.
    pub unscaled_s: f64,
    /// Measured iteration time of this rank, seconds.
    pub measured_s: f64,
    /// File calls of all recorded iterations (not part of the steps).
    pub io: Vec<IoObs>,
    /// How long the rank slept between tests while it waited: the 90th
    /// percentile of the gaps after tests that found nothing done (0 when
    /// it never polled: blocking waits). Bounds how late after a
    /// collective's last arrival a rank can notice its end
    /// ([`Model::calibrate_collectives`](super::Model::calibrate_collectives)).
    pub sleep_s: f64,
    /// How long a wait polls back to back before the rank starts to sleep
    /// between tests: the median, over the waits that slept, of the time
    /// from the first test that found nothing done to the first gap of
    /// over 10 us (0 when it never slept).
    pub spin_s: f64,
    /// How late a sleeping rank notices a message on average: the mean
    /// residual of its sleeps, E[G^2] / (2 E[G]) over the gaps G of over
    /// 10 us after tests that found nothing done, up to [`DESCHEDULED`]
    /// times their median (0 when it never slept).
    pub wake_s: f64,
    /// Seconds of file calls in each stage of the recorded iteration (by
    /// stage ordinal; the median over iterations of the same shape): what
    /// [`Model::calibrate_collectives`](super::Model::calibrate_collectives) replays in place of the I/O model.
    pub stage_io_s: Vec<f64>,
    /// When each stage of the recorded iteration began and ended,
    /// seconds from the iteration's start (by stage ordinal; the median
    /// over iterations of the same shape): how long a stage's arrays lay
    /// untouched before it ([`crate::reuse`], eq. R3).
    #[serde(default)]
    pub stage_begin_s: Vec<f64>,
    #[serde(default)]
    pub stage_end_s: Vec<f64>,
    /// Each full-world collective's time in it (`took`), in step order,
    /// one value per recorded iteration (iterations of the same shape;
    /// otherwise the program's own one): the per-iteration figures that
    /// [`Model::calibrate_collectives`](super::Model::calibrate_collectives) finds each iteration's last
    /// arriver with.
    pub reduce_tooks: Vec<Vec<f64>>,
    /// Seconds each send completion ([`Step::WaitSends`], in step order)
    /// took in the recorded iteration, from the first test that found it
    /// not done (NaN where not known: a blocking send or sendrecv; over
    /// several recorded iterations, their median): what
    /// [`Model::calibrate_collectives`](super::Model::calibrate_collectives) learns the rank's handshake
    /// latency from.
    pub send_waits_s: Vec<f64>,
    /// Per step (by index into `steps`): a compute step's seconds in each
    /// recorded iteration, in order (empty for other steps, and for all
    /// when fewer than 3 iterations of the same shape were recorded).
    /// What [`Model::predict_iterations`](super::Model::predict_iterations)
    /// replays one iteration at a time.
    pub compute_by_iter: Vec<Vec<f64>>,
}

/// A gap after a failed test longer than this is a sleep, not a spin.
const SLEPT_NS: u64 = 10_000;
/// A sleep gap longer than this many times the median sleep gap is a
/// rank that lost its core, left out of [`Program::wake_s`].
const DESCHEDULED: f64 = 3.0;

impl Program {
    /// Does the iteration end at a collective over all ranks, with only
    /// the rank's own computation after it? Then the next iteration
    /// starts together on every rank ([`Model::laps`](super::Model::laps)).
    pub(super) fn ends_at_a_collective(&self) -> bool {
        let last = self
            .steps
            .iter()
            .rposition(|s| matches!(s, Step::Reduce { .. }));
        last.is_some_and(|k| {
            self.steps[k..].iter().all(|s| {
                matches!(
                    s,
                    Step::Reduce { .. } | Step::Compute { .. } | Step::StageEnd(_)
                )
            })
        })
    }

    /// Does the rank take part in a collective whose ranks leave it at
    /// different times (an all-reduce, `collective.rs`)? Then the next
    /// iteration does not start together even after one ([`Model::laps`](super::Model::laps)).
    pub(super) fn leaves_collectives_apart(&self) -> bool {
        self.steps.iter().any(|s| {
            matches!(s, Step::Reduce { shape, .. }
                    if !matches!(shape, Shape::Together | Shape::Gather))
        })
    }

    /// How long the rank waits for something that happens `ahead` seconds
    /// from now: nothing if it is past; else until then and, when the rank
    /// sleeps between tests and the wait outlasts its spin, on average the
    /// residual of a sleep more ([`Program::wake_s`]): it notices only at
    /// its next test.
    pub(super) fn waited(&self, ahead: f64) -> f64 {
        let wait = ahead.max(0.0);
        if self.sleeps_through(ahead) {
            wait + self.wake_s
        } else {
            wait
        }
    }

    /// Whether a wait for something `ahead` seconds from now goes to
    /// sleep: the rank sleeps between tests and the wait outlasts the
    /// polling before its sleeps ([`Program::spin_s`]).
    pub(super) fn sleeps_through(&self, ahead: f64) -> bool {
        self.wake_s > 0.0 && ahead.max(0.0) > self.spin_s
    }
}

/// How a recorded send call completes.
fn send_mode(op: Option<mheta_trace::Op>) -> SendMode {
    use mheta_trace::Op;
    match op {
        Some(Op::Bsend | Op::Ibsend) => SendMode::Buffered,
        Some(Op::Ssend | Op::Issend) => SendMode::Synchronous,
        _ => SendMode::Standard,
    }
}

/// Same steps in the same order, compute durations aside.
fn same_shape(a: &[Step], b: &[Step]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (x, y) {
            (
                Step::Compute {
                    scaled: p,
                    level: a,
                    ..
                },
                Step::Compute {
                    scaled: q,
                    level: b,
                    ..
                },
            ) => p == q && a == b,
            (Step::Reduce { bytes: p, .. }, Step::Reduce { bytes: q, .. }) => p == q,
            _ => x == y,
        })
}

impl Program {
    /// A rank's program from its recorded iterations. With several
    /// iterations of the same shape (same steps in the same order), each
    /// compute gap is the median over the iterations, so one disturbed
    /// iteration does not skew the prediction; otherwise the iteration of
    /// median duration is used.
    pub fn from_trace(t: &RankTrace) -> Program {
        let progs: Vec<Program> = t
            .iterations
            .iter()
            .map(|it| Program::from_events(&it.events, it.duration_ns, t.world_size))
            .collect();
        let mut durations: Vec<f64> = progs.iter().map(|p| p.measured_s).collect();
        let measured_s = mheta_base::median(&mut durations).unwrap_or(0.0);
        let io: Vec<IoObs> = progs.iter().flat_map(|p| p.io.iter().copied()).collect();
        let same_shape = progs
            .windows(2)
            .all(|w| same_shape(&w[0].steps, &w[1].steps));
        if progs.len() == 1 || !same_shape {
            let mut by_time: Vec<&Program> = progs.iter().collect();
            by_time.sort_by(|a, b| a.measured_s.total_cmp(&b.measured_s));
            let mut p = by_time[by_time.len() / 2].clone();
            p.io = io;
            return p;
        }
        let over = |f: fn(&Program) -> f64| {
            mheta_base::median(&mut progs.iter().map(f).collect::<Vec<_>>()).unwrap_or(0.0)
        };
        let (steps, scaled_s, unscaled_s) = median_steps(&progs);
        Program {
            compute_by_iter: compute_by_iter(&progs),
            reduce_tooks: reduce_tooks(&progs, &steps),
            steps,
            scaled_s,
            unscaled_s,
            measured_s,
            io,
            sleep_s: over(|p| p.sleep_s),
            spin_s: over(|p| p.spin_s),
            wake_s: over(|p| p.wake_s),
            stage_io_s: median_series(&progs, |p| &p.stage_io_s),
            stage_begin_s: median_series(&progs, |p| &p.stage_begin_s),
            stage_end_s: median_series(&progs, |p| &p.stage_end_s),
            send_waits_s: median_series(&progs, |p| &p.send_waits_s),
        }
    }

    /// Turn one recorded iteration into steps: gaps between calls are
    /// compute; time inside communication calls is dropped (the model
    /// recomputes it); file I/O calls are kept apart as observations and
    /// the model recomputes a stage's I/O for any distribution (MHETA's
    /// T_γ = T_Φ + Σ T_ψ(m)). When the iteration has stage markers only
    /// gaps inside stages scale; without them every gap scales. Level
    /// markers put the stages that follow on a grid level. Only the thread
    /// that initialised MPI (thread 0) is modelled.
    /// Collectives over fewer than `world` ranks cost nothing here (their
    /// members are not recorded).
    pub fn from_events(events: &[Event], duration_ns: u64, world: u32) -> Program {
        let mut r = Reading::new(events.iter().any(|e| matches!(e.what, What::StageBegin)));
        for e in events.iter().filter(|e| e.thread == 0) {
            let waiting_since = r.time(e);
            r.event(e, waiting_since, world);
        }
        r.gap(duration_ns);
        r.finish(duration_ns)
    }

    /// [`Program::reduce_tooks`] from the program's own steps.
    fn with_own_tooks(mut self) -> Program {
        self.reduce_tooks = self
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Reduce { took, .. } => Some(vec![*took]),
                _ => None,
            })
            .collect();
        self
    }
}

/// One iteration's events read so far ([`Program::from_events`]).
struct Reading {
    has_stages: bool,
    steps: Vec<Step>,
    scaled_s: f64,
    unscaled_s: f64,
    in_stage: bool,
    level: u32,
    stage: u32,
    stage_begin_s: Vec<f64>,
    stage_end_s: Vec<f64>,
    io: Vec<IoObs>,
    /// End of the last event, ns.
    last: u64,
    irecv_open: HashMap<u32, ()>,
    /// Non-blocking sends in flight: request -> the send's number.
    isend_open: HashMap<u32, u32>,
    n_sends: u32,
    /// Non-blocking collectives in flight: request -> (step index,
    /// waiting so far). Only waiting counts as time in one: what the rank
    /// computed or read while it was in flight, the replay puts after it.
    icoll_open: HashMap<u32, (usize, u64)>,
    /// Non-blocking neighbourhood collectives in flight: request -> their
    /// sends' numbers and their receives.
    ineighbor_open: HashMap<u32, (Vec<u32>, Vec<Peer>)>,
    /// Nanoseconds spent so far in calls that test or wait for requests,
    /// and in the gaps after tests that found nothing done.
    waiting_ns: u64,
    sleeps: Vec<f64>,
    /// The current wait's first failed test, and whether it has slept.
    wait_from: Option<(u64, bool)>,
    /// The spin before each wait's first sleep.
    spins: Vec<f64>,
    send_waits_s: Vec<f64>,
    /// After a test that found nothing done, the rank is waiting (a
    /// polling loop, perhaps sleeping between tests): not computation.
    polling: bool,
}

fn peer(m: &mheta_trace::Msg) -> Peer {
    Peer {
        rank: m.peer.max(0) as usize,
        tag: m.tag,
        bytes: m.bytes as f64,
    }
}

impl Reading {
    fn new(has_stages: bool) -> Reading {
        Reading {
            has_stages,
            steps: Vec::new(),
            scaled_s: 0.0,
            unscaled_s: 0.0,
            in_stage: false,
            level: 0,
            stage: 0,
            stage_begin_s: Vec::new(),
            stage_end_s: Vec::new(),
            io: Vec::new(),
            last: 0,
            irecv_open: HashMap::new(),
            isend_open: HashMap::new(),
            n_sends: 0,
            icoll_open: HashMap::new(),
            ineighbor_open: HashMap::new(),
            waiting_ns: 0,
            sleeps: Vec::new(),
            wait_from: None,
            spins: Vec::new(),
            send_waits_s: Vec::new(),
            polling: false,
        }
    }

    /// The time from the last event to `to` is computation (MHETA T_Φ),
    /// scaled inside a stage (or everywhere without stage markers); it
    /// joins the previous compute step of the same kind and level.
    fn gap(&mut self, to: u64) {
        if to <= self.last {
            return;
        }
        let s = (to - self.last) as f64 * 1e-9;
        let scaled = self.in_stage || !self.has_stages;
        if scaled {
            self.scaled_s += s;
        } else {
            self.unscaled_s += s;
        }
        let level = self.level;
        match self.steps.last_mut() {
            Some(Step::Compute {
                s: prev,
                scaled: sc,
                level: l,
            }) if *sc == scaled && *l == level => *prev += s,
            _ => self.steps.push(Step::Compute { s, scaled, level }),
        }
    }

    /// The time before event `e` (computation, or waiting while polling)
    /// and the waiting inside it; the start of the wait it belongs to.
    fn time(&mut self, e: &Event) -> Option<u64> {
        if !self.polling {
            self.gap(e.t0_ns);
        } else {
            let g = e.t0_ns.saturating_sub(self.last);
            self.waiting_ns += g;
            self.sleeps.push(g as f64 * 1e-9);
            if g > SLEPT_NS
                && let Some((from, slept @ false)) = &mut self.wait_from
            {
                self.spins
                    .push(self.last.saturating_sub(*from) as f64 * 1e-9);
                *slept = true;
            }
        }
        if matches!(e.what, What::Complete(_) | What::ICollective { .. }) || starts_collective(e) {
            self.waiting_ns += e.t1_ns.saturating_sub(e.t0_ns);
        }
        let waiting_since = self.wait_from.map(|(from, _)| from);
        self.polling = matches!(&e.what, What::Complete(c) if c.is_empty())
            || matches!(&e.what, What::Poll(None) | What::NoMatch);
        if !self.polling {
            self.wait_from = None;
        } else if self.wait_from.is_none() {
            self.wait_from = Some((e.t0_ns, false));
        }
        self.last = e.t1_ns;
        waiting_since
    }

    /// The step (or I/O observation, or marker) event `e` stands for.
    fn event(&mut self, e: &Event, waiting_since: Option<u64>, world: u32) {
        let secs = e.t1_ns.saturating_sub(e.t0_ns) as f64 * 1e-9;
        match &e.what {
            What::FileRead { file, bytes, .. } | What::FileIread { file, bytes, .. } => {
                self.file(*file, false, *bytes, secs)
            }
            What::FileWrite { file, bytes, .. } | What::FileIwrite { file, bytes, .. } => {
                self.file(*file, true, *bytes, secs)
            }
            What::StageBegin => {
                if !self.in_stage {
                    self.stage_begin_s.push(e.t0_ns as f64 * 1e-9);
                }
                self.in_stage = true
            }
            What::StageEnd => {
                if self.in_stage {
                    self.steps.push(Step::StageEnd(self.stage));
                    self.stage_end_s.push(e.t0_ns as f64 * 1e-9);
                    self.stage += 1;
                }
                self.in_stage = false;
            }
            What::Level(l) => self.level = *l,
            What::Complete(done) => self.complete(e, done, waiting_since),
            What::Collective {
                bytes, comm_size, ..
            } if *comm_size == world => self.steps.push(Step::Reduce {
                bytes: *bytes as f64,
                took: secs,
                shape: Shape::of(e.op, *bytes),
            }),
            // Non-blocking collectives are taken as blocking ones at
            // their start; their time runs until their completion.
            What::ICollective {
                bytes,
                comm_size,
                req,
                ..
            } if *comm_size == world => {
                let w0 = self.waiting_ns - e.t1_ns.saturating_sub(e.t0_ns);
                self.icollective(e.op, *bytes, *req, w0)
            }
            // The waiting before the call: a Start that begins a
            // collective counted its own time as waiting (`time`).
            What::Start(started) => self.start(
                started,
                world,
                self.waiting_ns - starts_collective(e) as u64 * e.t1_ns.saturating_sub(e.t0_ns),
            ),
            _ => self.point_to_point(e),
        }
    }

    /// A file call: an I/O observation of the current stage (MHETA
    /// T_r(m), T_w(m)), not a step.
    fn file(&mut self, file: u32, write: bool, bytes: u64, secs: f64) {
        self.io.push(IoObs {
            stage: self.in_stage.then_some(self.stage),
            file,
            write,
            bytes,
            secs,
        });
    }

    /// A send, receive, probe or request start: its steps (MHETA eqs.
    /// 3-5 price them).
    fn point_to_point(&mut self, e: &Event) {
        match &e.what {
            What::Send(m) if m.peer >= 0 => {
                self.steps.push(Step::Send(peer(m), send_mode(e.op)));
                self.blocking_send_done();
            }
            What::Isend { msg: m, req } if m.peer >= 0 => {
                self.isend(peer(m), send_mode(e.op), *req)
            }
            What::Recv(m) if m.peer >= 0 => self.steps.push(Step::Recv(peer(m))),
            What::Irecv { req } => {
                self.irecv_open.insert(*req, ());
            }
            // MPI_Sendrecv: the send is posted, then the receive waits
            // (both nodes send before blocking, as eq. 5 assumes).
            What::Sendrecv { send, recv } => {
                if send.peer >= 0 {
                    self.steps.push(Step::Send(peer(send), SendMode::Standard));
                }
                if recv.peer >= 0 {
                    self.steps.push(Step::Recv(peer(recv)));
                }
                if send.peer >= 0 {
                    self.blocking_send_done();
                }
            }
            What::Probe(m) if m.peer >= 0 => self.steps.push(Step::Probe(peer(m))),
            What::Peek(m) if m.peer >= 0 => self.steps.push(Step::Peek(peer(m))),
            What::MatchedRecv { .. } => self.steps.push(Step::MatchedRecv),
            // A neighbourhood collective: its sends posted, then its
            // receives and sends completed together, as `Isend`s and
            // `Irecv`s with one `MPI_Waitall`.
            What::Neighbor { sends, recvs } => {
                let (sends, recvs) = self.neighbour_sends(sends, recvs);
                if !recvs.is_empty() {
                    self.steps.push(Step::WaitRecvs(recvs));
                }
                if !sends.is_empty() {
                    self.steps.push(Step::WaitSends(sends));
                    self.send_waits_s.push(f64::NAN);
                }
            }
            // Begun here, waited for with its request's completion.
            What::INeighbor { sends, recvs, req } => {
                let open = self.neighbour_sends(sends, recvs);
                self.ineighbor_open.insert(*req, open);
            }
            _ => {}
        }
    }

    /// A non-blocking collective (`op`, request `req`) begins: taken as a
    /// blocking one here, its time running until its completion (`w0`:
    /// the rank's waiting so far).
    fn icollective(&mut self, op: Option<Op>, bytes: u64, req: u32, w0: u64) {
        self.icoll_open.insert(req, (self.steps.len(), w0));
        self.steps.push(Step::Reduce {
            bytes: bytes as f64,
            took: 0.0,
            shape: Shape::of(op, bytes),
        })
    }

    /// `MPI_Start(all)`: persistent requests begin as the `Isend`,
    /// `Irecv`, non-blocking collective or neighbourhood exchange they
    /// stand for (`w0`: the rank's waiting before the call).
    fn start(&mut self, started: &[mheta_trace::Started], world: u32, w0: u64) {
        use mheta_trace::Started;
        for s in started {
            match s {
                Started::Send { msg, req } if msg.peer >= 0 => {
                    self.isend(peer(msg), SendMode::Standard, *req)
                }
                Started::Recv { req } => {
                    self.irecv_open.insert(*req, ());
                }
                Started::Collective {
                    op,
                    bytes,
                    comm_size,
                    req,
                    ..
                } if *comm_size == world => self.icollective(Some(*op), *bytes, *req, w0),
                Started::Neighbor { sends, recvs, req } => {
                    let open = self.neighbour_sends(sends, recvs);
                    self.ineighbor_open.insert(*req, open);
                }
                _ => {}
            }
        }
    }

    /// A neighbourhood collective's sends to real peers posted (numbered):
    /// their numbers, and its receives from real peers.
    fn neighbour_sends(
        &mut self,
        sends: &[mheta_trace::Msg],
        recvs: &[mheta_trace::Msg],
    ) -> (Vec<u32>, Vec<Peer>) {
        let first = self.n_sends;
        for m in sends.iter().filter(|m| m.peer >= 0) {
            self.steps.push(Step::Send(peer(m), SendMode::Standard));
            self.n_sends += 1;
        }
        let recvs = recvs.iter().filter(|m| m.peer >= 0).map(peer).collect();
        ((first..self.n_sends).collect(), recvs)
    }

    /// A non-blocking send posted: numbered, open until its completion.
    fn isend(&mut self, to: Peer, mode: SendMode, req: u32) {
        self.steps.push(Step::Send(to, mode));
        self.isend_open.insert(req, self.n_sends);
        self.n_sends += 1;
    }

    /// The completion of the blocking send just posted (its time is not
    /// known apart from the call's).
    fn blocking_send_done(&mut self) {
        self.steps.push(Step::WaitSends(vec![self.n_sends]));
        self.send_waits_s.push(f64::NAN);
        self.n_sends += 1;
    }

    /// Requests completed: the collectives' times, then the receives and
    /// the sends waited for, with the sends' wait since the first test.
    fn complete(
        &mut self,
        e: &Event,
        done: &[mheta_trace::Completion],
        waiting_since: Option<u64>,
    ) {
        for c in done {
            if let Some((k, w0)) = self.icoll_open.remove(&c.req)
                && let Step::Reduce { took, .. } = &mut self.steps[k]
            {
                *took = (self.waiting_ns - w0) as f64 * 1e-9;
            }
        }
        let mut recvs: Vec<Peer> = done
            .iter()
            .filter(|c| self.irecv_open.remove(&c.req).is_some())
            .filter_map(|c| c.recv.as_ref().filter(|m| m.peer >= 0).map(peer))
            .collect();
        let mut sends: Vec<u32> = done
            .iter()
            .filter(|c| c.recv.is_none())
            .filter_map(|c| self.isend_open.remove(&c.req))
            .collect();
        for c in done {
            if let Some((s, r)) = self.ineighbor_open.remove(&c.req) {
                sends.extend(s);
                recvs.extend(r);
            }
        }
        if !recvs.is_empty() {
            self.steps.push(Step::WaitRecvs(recvs));
        }
        if !sends.is_empty() {
            self.steps.push(Step::WaitSends(sends));
            let from = waiting_since.unwrap_or(e.t0_ns);
            self.send_waits_s
                .push(e.t1_ns.saturating_sub(from) as f64 * 1e-9);
        }
    }

    /// The program: the steps, the I/O per stage, and how the rank waits
    /// (its sleeps, spin and wake-up).
    fn finish(mut self, duration_ns: u64) -> Program {
        let (sleep_s, wake_s) = sleep_and_wake(&mut self.sleeps);
        let spin_s = mheta_base::median(&mut self.spins).unwrap_or(0.0);
        let mut stage_io_s = vec![0.0; self.stage as usize];
        for o in &self.io {
            if let Some(x) = o.stage.and_then(|k| stage_io_s.get_mut(k as usize)) {
                *x += o.secs;
            }
        }
        Program {
            steps: self.steps,
            scaled_s: self.scaled_s,
            unscaled_s: self.unscaled_s,
            measured_s: duration_ns as f64 * 1e-9,
            io: self.io,
            sleep_s,
            spin_s,
            wake_s,
            stage_io_s,
            stage_begin_s: self.stage_begin_s,
            stage_end_s: self.stage_end_s,
            reduce_tooks: Vec::new(),
            send_waits_s: self.send_waits_s,
            compute_by_iter: Vec::new(),
        }
        .with_own_tooks()
    }
}

/// [`Program::sleep_s`] (the 90th percentile of the gaps after failed
/// tests) and [`Program::wake_s`] (the mean residual E[G^2] / (2 E[G]) of
/// the sleeps). A gap of more than DESCHEDULED times the median sleep is
/// not the rank's own sleep: the core was taken (on the emulated nodes,
/// by a neighbour's disk I/O) and the rank's next test came late. Such
/// gaps belong to the recorded run, not to the rank's way of waiting, and
/// left in they would dominate E[G^2] / (2 E[G]).
fn sleep_and_wake(sleeps: &mut [f64]) -> (f64, f64) {
    sleeps.sort_by(f64::total_cmp);
    let sleep_s = sleeps.get(sleeps.len() * 9 / 10).copied().unwrap_or(0.0);
    let slept: Vec<f64> = sleeps
        .iter()
        .copied()
        .filter(|&g| g * 1e9 > SLEPT_NS as f64)
        .collect();
    let cap = slept.get(slept.len() / 2).map_or(0.0, |m| DESCHEDULED * m);
    let (g2, g1) = slept
        .iter()
        .filter(|&&g| g <= cap)
        .fold((0.0, 0.0), |(g2, g1), &g| (g2 + g * g, g1 + g));
    let wake_s = if g1 > 0.0 { g2 / (2.0 * g1) } else { 0.0 };
    (sleep_s, wake_s)
}

/// Does `e` begin a persistent collective? Its time is waiting, as a
/// non-blocking collective's call is.
fn starts_collective(e: &Event) -> bool {
    matches!(&e.what, What::Start(v)
        if v.iter().any(|s| matches!(s, mheta_trace::Started::Collective { .. })))
}
