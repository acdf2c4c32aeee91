//! The MHETA execution model (MHETA paper, section 4.2): predicts the time of
//! one iteration under any GEN_BLOCK distribution from one instrumented
//! iteration ([`mheta_trace`]) and the cluster profile ([`mheta_profile`]).
//!
//! Each rank's recorded iteration becomes a [`Program`]: compute gaps
//! (scaled by W'/W inside stages) and its communication steps. The model
//! replays all programs together, in time order, with the profile's costs:
//! a message posted at sender time `t` arrives at `t + o_s + L + b*G`
//! (MHETA eq. 3), the sender pays its own time in a send of that size
//! (`o_s` at 8 bytes, LogGP's o(m) where the profile measured sends by
//! size; collectives' messages pay `o_s`), and the receiver waits until the
//! arrival then pays `o_r` (eq. 5). A rank that slept between tests while
//! it waited (the apps' `--wait sleep`) notices a message that came after
//! its spin only at its next test, on average the mean residual of its
//! recorded sleeps later ([`Program::wake_s`]; what that costs an
//! oversubscribed node: docs/design/model.md). A send above the pair's
//! eager limit completes only once its receiver has taken the message
//! and the acknowledgement is back ([`SendMode`], [`Step::WaitSends`]); a
//! sender that waits for that pays its own wake-up too, and, when its
//! receiver was already waiting, the rank's handshake latency as the
//! recorded iteration measured it ([`Model::calibrate_collectives`]). An
//! all-reduce's ranks leave it as its algorithm's messages over each
//! pair's costs say (`collective.rs`), plus what the recorded iteration
//! spent there beyond them; every other collective synchronises all ranks
//! and costs what it cost in the recorded iteration past the last rank's
//! arrival, never less than the profile's pairwise figures give
//! ([`Model::calibrate_collectives`]). For two ranks and one exchange this
//! is exactly eqs. 3-5; for P ranks it is the replay the paper defers to
//! the dissertation.
//!
//! This file holds the [`Model`] itself (building it, the cost line GBS
//! bisects on, the work factors, the prediction's entry points); the rest
//! lives beside it: `program.rs` (a rank's [`Program`] and its steps),
//! `net.rs` (the pairs' costs and the wire time, eq. 3's T_{i->j}),
//! `calibrate.rs` (collectives' and handshakes' costs from the recorded
//! iteration), `replay.rs` (the replay, one function per step kind),
//! `fast.rs` (the same replay compiled for a search's many evaluations,
//! [`Evaluator`]) and `collective.rs` (an all-reduce's messages).

mod allgather;
mod calibrate;
mod collective;
mod exchange;
mod fast;
mod net;
mod program;
mod replay;
mod reused;
mod turns;

pub use collective::Shape;
pub use fast::Evaluator;
pub use program::{Peer, Program, SendMode, Step};

use crate::curve::RowCurve;
use crate::dist::Dist;
use crate::iomodel::{IoModel, IoObs};
use calibrate::{Calib, last_arrivals};
use mheta_profile::ClusterProfile;
use mheta_trace::{AppDecl, MsgScaling, RankTrace, Topology};
use net::Net;

/// A model input that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ModelError {
    #[error(
        "trace has {trace} ranks but the profile measured {profile}; run `mheta bench --np {trace}`"
    )]
    RankMismatch { trace: usize, profile: usize },
    #[error("app.json declares {decl} ranks in its dist but the trace has {trace}")]
    DeclMismatch { decl: usize, trace: usize },
    #[error(
        "rank {rank} had no rows in the instrumented iteration, so its per-row cost is unknown; instrument with every rank owning rows"
    )]
    NoRowsInTrace { rank: usize },
    #[error(
        "the recorded messages do not match up (rank {rank} waits forever at step {step}); traces from different runs?"
    )]
    Deadlock { rank: usize, step: usize },
    #[error(
        "rank {rank} cannot hold even one row of its on-disk arrays with {rows} rows (its memory budget is too small)"
    )]
    TooSmall { rank: usize, rows: u64 },
    #[error("the row-cost curve has {curve} ranks but the trace has {trace}")]
    CurveRanks { curve: usize, trace: usize },
    #[error("summary {at} is rank {rank}'s; the summaries must come in rank order")]
    SummaryOrder { at: usize, rank: u32 },
    #[error(transparent)]
    Dist(#[from] crate::dist::DistError),
}

/// Per-rank result of one predicted iteration.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct RankTime {
    /// Finish time of the rank's iteration.
    pub total_s: f64,
    /// Computation and I/O, T_τ.
    pub compute_s: f64,
    /// Of which I/O, Σ T_ψ(m).
    pub io_s: f64,
    /// Send and receive overheads.
    pub overhead_s: f64,
    /// Time blocked waiting for messages or for a reduction.
    pub wait_s: f64,
}

impl RankTime {
    /// Nothing yet: where a replay starts every rank.
    pub(crate) const ZERO: RankTime = RankTime {
        total_s: 0.0,
        compute_s: 0.0,
        io_s: 0.0,
        overhead_s: 0.0,
        wait_s: 0.0,
    };
}

/// A predicted iteration.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Prediction {
    /// Iteration time: the last rank to finish.
    pub per_iteration_s: f64,
    pub ranks: Vec<RankTime>,
}

/// A step as a rank's cost line reads it ([`Model::rank_cost`]).
#[derive(Clone, Copy, Debug)]
pub(crate) enum CostStep {
    /// Computation that scales with the rows, on grid level `level`.
    Scaled { s: f64, level: u32 },
    /// Computation that does not.
    Fixed(f64),
    /// A stage's end: its I/O.
    StageEnd(u32),
    /// Anything else: it clears the stage's compute.
    Clear,
}

impl CostStep {
    fn of(step: &Step) -> CostStep {
        match *step {
            Step::Compute {
                s,
                scaled: true,
                level,
            } => CostStep::Scaled { s, level },
            Step::Compute { s, .. } => CostStep::Fixed(s),
            Step::StageEnd(k) => CostStep::StageEnd(k),
            _ => CostStep::Clear,
        }
    }
}

/// The model of one application on one cluster: programs, declaration,
/// network costs. Cheap to evaluate many times.
#[derive(Clone, Debug)]
pub struct Model {
    pub programs: Vec<Program>,
    pub app: AppDecl,
    pub(crate) net: Net,
    /// Out-of-core arrays (None: everything always in core).
    pub io: Option<IoModel>,
    /// Work prefix sums (`work_per_row`), for sparse rows.
    pub(crate) work_prefix: Option<Vec<u64>>,
    /// Grid levels (1 unless multigrid).
    levels: u32,
    /// First row of each rank in the recorded distribution.
    inst_offsets: Vec<u64>,
    /// Seconds per row each rank took to build its arrays when the run
    /// started (the app's own measurement, passed in by the in-run
    /// planner): what rebuilding them costs in a move through disk
    /// ([`Model::move_cost`]). None: estimated from the disk lines.
    pub rebuild_s_per_row: Option<Vec<f64>>,
    /// Rows of each rank on each coarser level (1..levels) under the
    /// recorded distribution.
    inst_coarse: Vec<Dist>,
    /// The cost of each full-world collective of the iteration, in order,
    /// measured from the trace ([`Model::calibrate_collectives`]).
    collective_s: Vec<f64>,
    /// Per rank: how much longer than the replay a send completion took
    /// in the recorded iteration when its receiver was already waiting
    /// ([`Model::calibrate_collectives`]); added to every such
    /// completion.
    handshake_s: Vec<f64>,
    /// Per full-world collective, in order: the median over the recorded
    /// iterations of the shortest time a rank spent in it that iteration
    /// (that iteration's last arriver's). Empty when the ranks recorded
    /// different collectives or iteration counts.
    last_arrival_s: Vec<f64>,
    /// Replay two iterations back to back and price the second
    /// ([`Model::laps`]); false when every rank's iteration ends at a
    /// collective over all ranks, after which only its own computation
    /// follows.
    overlapping: bool,
    /// Per rank, per step, whether it is a send that goes both ways at
    /// once with one from its receiver ([`exchange::both_ways`]); empty
    /// where the profile measured no exchanges.
    pub(crate) both_ways: Vec<Vec<bool>>,
    /// Per rank, the mean CPU slowdown its computation and message
    /// overheads run under (Figueira and Berman eqs. 1-2; empty: dedicated).
    cpu_slow: Vec<f64>,
    /// Per pair `k(src, dst)`, the mean communication slowdown of its
    /// transfers (Figueira and Berman eq. 3; empty: dedicated).
    net_slow: Vec<f64>,
    /// The stochastic slowdowns the model was given ([`Model::with_load`]).
    pub load: Option<crate::slowdown::Slowdowns>,
    /// Each all-reduce's pair costs in its algorithm's order, recorded
    /// once ([`collective::Tape`]).
    tapes: collective::Tapes,
    /// Per rank, its cost a row over its rows ([`Model::with_row_curves`];
    /// empty: one cost a row, as MHETA section 4.2.1).
    row_curves: Vec<RowCurve>,
    /// The reuse term ([`crate::reuse`]; None: rows cost as recorded
    /// whatever the iteration's length).
    reuse: Option<crate::reuse::Reuse>,
    /// Per rank, its turns on a core it shares, where the load gives the
    /// scheduler's turn ([`turns`]; empty: no rank is replayed by them).
    turns: Vec<Option<turns::Turn>>,
}

impl Model {
    /// Build from traces (rank order), the app declaration and a profile.
    pub fn new(
        traces: &[RankTrace],
        app: AppDecl,
        prof: &ClusterProfile,
    ) -> Result<Model, ModelError> {
        let summaries = traces
            .iter()
            .map(crate::summary::RankSummary::from_trace)
            .collect();
        Model::from_summaries(summaries, app, prof)
    }

    /// The model of the ranks' summaries ([`crate::summary`]), in rank
    /// order: what [`Model::new`] builds from their traces.
    pub fn from_summaries(
        summaries: Vec<crate::summary::RankSummary>,
        app: AppDecl,
        prof: &ClusterProfile,
    ) -> Result<Model, ModelError> {
        let p = summaries.len();
        if let Some((at, s)) = (summaries.iter().enumerate()).find(|(i, s)| s.rank as usize != *i) {
            return Err(ModelError::SummaryOrder { at, rank: s.rank });
        }
        if prof.np as usize != p {
            return Err(ModelError::RankMismatch {
                trace: p,
                profile: prof.np as usize,
            });
        }
        if app.dist.len() != p {
            return Err(ModelError::DeclMismatch {
                decl: app.dist.len(),
                trace: p,
            });
        }
        if let Some(rank) = app.dist.iter().position(|&s| s == 0) {
            return Err(ModelError::NoRowsInTrace { rank });
        }
        let (programs, files): (Vec<Program>, Vec<Vec<String>>) =
            summaries.into_iter().map(|s| (s.program, s.files)).unzip();
        let obs: Vec<Vec<IoObs>> = programs.iter().map(|p| p.io.clone()).collect();
        let io = IoModel::new(&app, &files, &obs, prof);
        let work_prefix = app.work_per_row.as_deref().map(crate::dist::prefix_sums);
        let levels = app.levels.unwrap_or(1).max(1);
        let inst_offsets = Dist(app.dist.clone()).offsets();
        let inst_coarse: Vec<Dist> = (1..levels)
            .scan(Dist(app.dist.clone()), |d, _| {
                *d = d.coarse_level();
                Some(d.clone())
            })
            .collect();
        let mut model = Model {
            inst_offsets,
            rebuild_s_per_row: None,
            inst_coarse,
            programs,
            app,
            net: Net::from_profile(prof),
            io,
            work_prefix,
            levels,
            collective_s: Vec::new(),
            handshake_s: Vec::new(),
            last_arrival_s: Vec::new(),
            overlapping: false,
            both_ways: Vec::new(),
            cpu_slow: Vec::new(),
            net_slow: Vec::new(),
            load: None,
            tapes: Default::default(),
            row_curves: Vec::new(),
            reuse: None,
            turns: Vec::new(),
        };
        model.last_arrival_s = last_arrivals(&model.programs);
        model.overlapping = !model.programs.iter().all(Program::ends_at_a_collective)
            || model.programs.iter().any(Program::leaves_collectives_apart);
        if model.net.has_exchanges() {
            let steps: Vec<&[program::Step]> =
                model.programs.iter().map(|p| &p.steps[..]).collect();
            model.both_ways = exchange::both_ways(&steps);
        }
        model.calibrate_collectives();
        model.reuse = model.reuse_of(prof);
        Ok(model)
    }

    pub fn ranks(&self) -> usize {
        self.programs.len()
    }

    /// Whether rank `i`'s step `k` is a send that goes both ways at once
    /// ([`Model::both_ways`]).
    #[inline]
    pub(crate) fn both_ways(&self, i: usize, k: usize) -> bool {
        (self.both_ways.get(i)).is_some_and(|v| v.get(k).copied().unwrap_or(false))
    }

    /// The same model under a load: every rank's computation and message
    /// overheads run `sd_i` times slower and every transfer `sd_{i->j}`
    /// times (Figueira and Berman eqs. 1 and 3), at the slowdowns' means;
    /// [`risk::predict_stochastic`](crate::risk::predict_stochastic)
    /// carries their spread. A time-shared rank whose node gives the
    /// scheduler's turn ([`crate::slowdown::Slowdowns::turn_s`]) is
    /// replayed turn by turn instead ([`turns`]): at its dedicated speed
    /// in its turns, its transfers slowed by the links only.
    pub fn with_load(mut self, load: crate::slowdown::Slowdowns) -> Model {
        let p = self.ranks();
        assert_eq!(load.cpu.len(), p, "one CPU slowdown per rank");
        self.turns = (0..p)
            .map(|i| {
                let q = load.turn_s.get(i).copied().flatten()?;
                turns::Turn::of(q, load.cpu[i].mean)
            })
            .collect();
        if self.turns.iter().all(Option::is_none) {
            self.turns.clear();
        }
        let priced = if self.turns.is_empty() {
            load.clone()
        } else {
            let one = crate::stoch::Stoch::point(1.0);
            let cpu = (load.cpu.iter().zip(&self.turns))
                .map(|(c, t)| if t.is_some() { one } else { *c })
                .collect();
            load.with_cpu(cpu)
        };
        if priced.is_dedicated() {
            self.cpu_slow.clear();
            self.net_slow.clear();
        } else {
            self.cpu_slow = priced.cpu.iter().map(|s| s.mean).collect();
            // The load lists pairs as `src * P + dst`; the replay reads
            // them by `Net::k`.
            self.net_slow = (0..priced.net.len())
                .map(|k| priced.net[self.net.row_major(k)].mean)
                .collect();
        }
        self.load = Some(load);
        self.tapes.clear();
        self.rebase_reuse();
        self
    }

    /// Rank `i`'s turns on its shared core, if it is replayed by them.
    fn turn(&self, i: usize) -> Option<turns::Turn> {
        self.turns.get(i).copied().flatten()
    }

    /// Rank `i`'s mean turn and time away, seconds, where the load's turn
    /// has it replayed turn by turn ([`turns`]).
    pub fn turn_of(&self, i: usize) -> Option<(f64, f64)> {
        self.turn(i).map(|t| (t.on, t.off))
    }

    /// The same model with each rank's row-cost curve (rank order): a
    /// rank's finest-level computation under `d` scales by
    /// `W'/W · c(W')/c(W)` instead of `W'/W` (beyond MHETA section 4.2.1;
    /// [`crate::curve`]).
    pub fn with_row_curves(mut self, curves: Vec<RowCurve>) -> Result<Model, ModelError> {
        if curves.len() != self.ranks() {
            return Err(ModelError::CurveRanks {
                curve: curves.len(),
                trace: self.ranks(),
            });
        }
        self.row_curves = curves;
        if let Some(r) = &mut self.reuse {
            r.relative();
            // Eq. R4: each rank's knots, measured at other periods, say how
            // much of the probe's change its rows follow.
            for (i, c) in self.row_curves.iter().enumerate() {
                let rec = self.app.dist[i] as f64;
                let (Some(knots), Some(t_rec)) = (c.knots_with_periods(), c.period(rec)) else {
                    continue;
                };
                let c_rec = c.per_row(rec);
                let pts: Vec<(f64, f64)> = (knots.iter())
                    .filter(|k| k.0 != rec)
                    .map(|&(_, cost, t)| (cost / c_rec, t))
                    .collect();
                let ws = r.recorded_ws(i);
                r.fit_sensitivity(i, ws, t_rec, &pts);
            }
        }
        Ok(self)
    }

    /// `c(W')/c(W)` of rank `i` at `rows` (1 without curves).
    fn row_factor(&self, i: usize, rows: u64) -> f64 {
        self.row_curves
            .get(i)
            .map_or(1.0, |c| c.factor(rows as f64, self.app.dist[i] as f64))
    }

    fn cpu_factor(&self, i: usize) -> f64 {
        self.cpu_slow.get(i).copied().unwrap_or(1.0)
    }

    fn net_factor(&self, k: usize) -> f64 {
        self.net_slow.get(k).copied().unwrap_or(1.0)
    }

    pub fn rows(&self) -> u64 {
        self.app.rows
    }

    /// Seconds per row of scaled work of each rank, as measured.
    pub fn per_row_s(&self) -> Vec<f64> {
        self.programs
            .iter()
            .zip(&self.app.dist)
            .map(|(p, &w)| p.scaled_s / w as f64)
            .collect()
    }

    /// Whether a rank's replayed work under any distribution is its cost
    /// line at its rows ([`Model::rank_cost`]), as GBS's refine bounds a
    /// move by it: not with the reuse term (a rank's rows cost less as
    /// the iteration shortens), rows of unequal work (the work follows
    /// which rows a rank holds) or coarse grid levels (their rows follow
    /// the distribution's offsets, not rows in proportion).
    pub fn work_is_cost_line(&self) -> bool {
        !self.has_reuse() && self.work_prefix.is_none() && self.levels <= 1
    }

    /// Rank `i`'s own time for `rows` rows, messages aside: its scaled
    /// computation scaled by `rows / recorded rows` on every level (and
    /// on the finest by its row-cost curve, [`Model::with_row_curves`]), its
    /// unscaled computation, and its I/O under the out-of-core rule (eqs.
    /// 1-2). Infinite when its memory cannot hold one row. The cost line
    /// GBS bisects on.
    pub fn rank_cost(&self, i: usize, rows: u64) -> f64 {
        let steps = self.programs[i].steps.iter().map(CostStep::of);
        self.cost_along(i, rows, steps)
    }

    /// Rank `i`'s steps as its cost line reads them, the ones that change
    /// nothing left out: a run of communication steps is one clearing of
    /// the stage's compute, none where it is already clear, and none at
    /// all (nor a stage's end) for a rank that never goes out of core.
    /// [`Model::cost_along`] over them gives [`Model::rank_cost`] bit for
    /// bit ([`Evaluator::rank_cost`]).
    pub(crate) fn cost_steps(&self, i: usize) -> Vec<CostStep> {
        let staged = self.io.as_ref().is_some_and(|io| !io.unbudgeted(i));
        let mut out: Vec<CostStep> = Vec::new();
        for step in self.programs[i].steps.iter().map(CostStep::of) {
            let clear = matches!(
                out.last(),
                None | Some(CostStep::Clear | CostStep::StageEnd(_))
            );
            match step {
                CostStep::Clear | CostStep::StageEnd(_) if !staged => {}
                CostStep::Clear if clear => {}
                _ => out.push(step),
            }
        }
        out
    }

    /// [`Model::rank_cost`] along `steps`.
    pub(crate) fn cost_along(
        &self,
        i: usize,
        rows: u64,
        steps: impl Iterator<Item = CostStep>,
    ) -> f64 {
        let f = rows as f64 / self.app.dist[i].max(1) as f64;
        // A rank without a memory budget is in core at any rows: no plan
        // to look up, no I/O.
        let plan = match &self.io {
            Some(io) if !io.unbudgeted(i) => {
                let first = self.inst_offsets[i].min(self.rows() - rows.min(self.rows()));
                match io.plan(i, first, rows) {
                    Some(p) => Some(p),
                    None => return f64::INFINITY,
                }
            }
            _ => None,
        };
        let (mut t, mut stage) = (0.0, 0.0);
        let slow = self.cpu_factor(i);
        let f0 = f * self.row_factor(i, rows);
        for step in steps {
            match step {
                CostStep::Scaled { s, level } => {
                    let f = if level == 0 { f0 } else { f };
                    t += s * f * slow;
                    stage += s * f;
                }
                CostStep::Fixed(s) => t += s * slow,
                CostStep::StageEnd(k) => {
                    if let (Some(io), Some(p)) = (&self.io, &plan) {
                        t += io.stage_io(i, k as usize, p, stage);
                    }
                    stage = 0.0;
                }
                CostStep::Clear => stage = 0.0,
            }
        }
        t
    }

    /// The most rows rank `i` can hold with every array in core (all rows
    /// when it has no memory limit or nothing can go out of core).
    pub fn in_core_capacity(&self, i: usize) -> u64 {
        let n = self.rows();
        let Some(io) = &self.io else {
            return n;
        };
        let first = self.inst_offsets[i];
        let in_core = |s: u64| {
            io.plan(i, first.min(n - s), s)
                .is_some_and(|p| p.out_of_core.iter().all(|&o| !o))
        };
        if in_core(n) {
            return n;
        }
        let (mut lo, mut hi) = (0u64, n);
        while lo + 1 < hi {
            let mid = (lo + hi) / 2;
            if in_core(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Where rank `from`'s message to recorded peer `to` goes under `d`:
    /// the nearest rank in that direction that owns rows (1-D neighbour
    /// topology), or `to` itself (fixed topology). A 1-D message to a
    /// rank beyond the adjacent one (mg's rows gathered onto fewer ranks
    /// on a coarse level, its halo between those ranks) keeps its peer
    /// while the peer owns rows under `d`.
    fn route(&self, d: &Dist, from: usize, to: usize) -> Option<usize> {
        match self.app.topology {
            Topology::Fixed => Some(to),
            Topology::Neighbour1d => {
                if from.abs_diff(to) > 1 && d.0.get(to).is_some_and(|&r| r > 0) {
                    Some(to)
                } else if to > from {
                    (from + 1..self.ranks()).find(|&j| d.0[j] > 0)
                } else if to < from {
                    (0..from).rev().find(|&j| d.0[j] > 0)
                } else {
                    Some(to)
                }
            }
        }
    }

    fn msg_bytes(&self, d: &Dist, sender: usize, bytes: f64) -> f64 {
        match self.app.msg_scaling {
            MsgScaling::Constant => bytes,
            MsgScaling::SenderRows => bytes * d.0[sender] as f64 / self.app.dist[sender] as f64,
        }
    }

    /// Per rank and grid level, the ratio W'/W of the work under `d` to the
    /// work recorded (MHETA section 4.2.1: T_Φ' = T_Φ · W'/W). Work is the
    /// rows, or their nonzeros when the app declares `work_per_row`; a
    /// coarse level's rows come from [`Dist::coarse_level`], as mg's do.
    fn work_factors(&self, d: &Dist) -> Vec<f64> {
        let mut f = Vec::new();
        self.work_factors_into(d, &mut f);
        f
    }

    /// [`Model::work_factors`] into `f`, keeping its allocation.
    fn work_factors_into(&self, d: &Dist, f: &mut Vec<f64>) {
        let p = self.ranks();
        let l = self.levels as usize;
        f.clear();
        f.resize(p * l, 0.0);
        let inst = &self.app.dist;
        match &self.work_prefix {
            Some(w) => {
                let (oa, ob) = (&self.inst_offsets, d.offsets());
                for i in 0..p {
                    let was = w[(oa[i] + inst[i]) as usize] - w[oa[i] as usize];
                    let now = w[(ob[i] + d.0[i]) as usize] - w[ob[i] as usize];
                    f[i * l] = if was > 0 {
                        now as f64 / was as f64
                    } else {
                        0.0
                    };
                }
            }
            None => {
                for i in 0..p {
                    f[i * l] = d.0[i] as f64 / inst[i] as f64;
                }
            }
        }
        if !self.row_curves.is_empty() {
            for i in 0..p {
                f[i * l] *= self.row_factor(i, d.0[i]);
            }
        }
        let mut b = if l > 1 { d.clone() } else { Dist(Vec::new()) };
        for (lv, a) in (1..l).zip(&self.inst_coarse) {
            b = b.coarse_level();
            for i in 0..p {
                f[i * l + lv] = if a.0[i] > 0 {
                    b.0[i] as f64 / a.0[i] as f64
                } else {
                    0.0
                };
            }
        }
    }

    /// Each rank's out-of-core plan under `d`; an error names a rank whose
    /// memory cannot hold one row.
    fn plans(
        &self,
        d: &Dist,
    ) -> Result<Vec<Option<std::sync::Arc<crate::iomodel::PlanSummary>>>, ModelError> {
        let mut plans = Vec::new();
        self.plans_into(d, &mut plans, false)?;
        Ok(plans)
    }

    /// [`Model::plans`] into `plans`, keeping its allocation (empty
    /// without out-of-core arrays); with `budgeted_only`, None for each
    /// rank without a memory budget, which holds every array in core
    /// whatever its rows, so that its stages do no I/O.
    fn plans_into(
        &self,
        d: &Dist,
        plans: &mut Vec<Option<std::sync::Arc<crate::iomodel::PlanSummary>>>,
        budgeted_only: bool,
    ) -> Result<(), ModelError> {
        plans.clear();
        let Some(io) = &self.io else {
            return Ok(());
        };
        io.plans_into(&d.offsets(), &d.0, plans, budgeted_only);
        let infeasible = |(i, p): &(usize, &Option<_>)| p.is_none() && !io.unbudgeted(*i);
        match plans.iter().enumerate().position(|x| infeasible(&x)) {
            Some(rank) => Err(ModelError::TooSmall {
                rank,
                rows: d.0[rank],
            }),
            None => Ok(()),
        }
    }

    /// Predict one iteration under `d` (rows per rank).
    pub fn predict(&self, d: &Dist) -> Result<Prediction, ModelError> {
        d.check(self.ranks(), self.rows())?;
        self.settled(d, |k| {
            replay::Replay::new(self, d, None, self.laps())?
                .reused(k)
                .run()
        })
    }

    /// The median over the recorded iterations of each one replayed under
    /// `d` (every rank's compute steps as in its recorded iteration `j`,
    /// scaled to `d` as [`Model::predict`] scales the median), with the
    /// per-iteration times in recorded order; None when a rank recorded
    /// fewer than 3 iterations of one shape.
    ///
    /// Beyond MHETA: the paper prices one iteration from one recorded
    /// program per rank, here the median over the recorded ones, so the
    /// prediction is the slowest rank's median. A run's median iteration
    /// is the median over its iterations of the slowest rank in each;
    /// when ranks are close, which rank is slowest changes from one
    /// iteration to the next and that median is the larger one (the
    /// expected maximum of jittered times exceeds the maximum of their
    /// centres). Replaying the recorded iterations keeps each one's
    /// ranks together, so their correlation is the recorded one, and
    /// costs one evaluation per recorded iteration.
    pub fn predict_iterations(&self, d: &Dist) -> Result<Option<(f64, Vec<f64>)>, ModelError> {
        let k = self
            .programs
            .iter()
            .map(|p| p.compute_by_iter.iter().map(Vec::len).max().unwrap_or(0))
            .min()
            .unwrap_or(0);
        if k < 3 {
            return Ok(None);
        }
        d.check(self.ranks(), self.rows())?;
        let times = (0..k)
            .map(|j| {
                self.settled(d, |k| {
                    replay::Replay::new(self, d, None, self.laps())?
                        .reused(k)
                        .iteration(j)
                        .run()
                })
                .map(|p| p.per_iteration_s)
            })
            .collect::<Result<Vec<f64>, _>>()?;
        Ok(mheta_base::median(&mut times.clone()).map(|m| (m, times)))
    }

    /// One iteration under `d` replayed from a common start, as MHETA's
    /// section 4 prices it: its equations' own reading, which the unit
    /// tests check by hand. [`Model::predict`] differs only where
    /// iterations overlap or start apart ([`Model::laps`]).
    pub fn predict_first(&self, d: &Dist) -> Result<Prediction, ModelError> {
        d.check(self.ranks(), self.rows())?;
        self.settled(d, |k| {
            replay::Replay::new(self, d, None, 1)?.reused(k).run()
        })
    }

    /// How many iterations the replay runs back to back: 1 when every
    /// rank's iteration ends at a collective over all ranks that they
    /// leave together (the next one starts together, so it repeats the
    /// first), else 2. An all-reduce's ranks leave it apart: one behind a
    /// slow link gets the result later and starts its next iteration
    /// later.
    ///
    /// Without such a collective, iterations overlap: in a pipeline
    /// (MHETA eq. 4) the first rank starts its next sweep while the last
    /// one still finishes this one, so a run's iteration lasts the
    /// pipeline's period, not the fill of a cold start that a single
    /// replay from a common start prices (docs/design/model.md). Each
    /// rank times its own iteration, and the run's iteration is the longest of them
    /// (the apps' `iter_median_s`), so the prediction is the longest
    /// rank's second lap, from the end of its first to the end of its
    /// second. Collectives' costs are measured on the last lap too
    /// ([`Model::calibrate_collectives`]). With a rank replayed by its
    /// turns, as many as span [`turns::SPAN`] of its rounds
    /// ([`turns::laps`]), and the prediction is the mean of all but the
    /// first.
    fn laps(&self) -> usize {
        let round = (self.turns.iter().flatten())
            .map(turns::Turn::round)
            .reduce(f64::max);
        if let Some(round) = round {
            let iter_s = (self.programs.iter()).fold(0.0f64, |a, p| a.max(p.measured_s));
            let steps = self.programs.iter().map(|p| p.steps.len()).sum();
            return turns::laps(round, iter_s, steps);
        }
        if self.overlapping { 2 } else { 1 }
    }

    /// The time-ordered replay behind [`Model::predict`], `laps`
    /// iterations back to back (the last priced), one function per step
    /// kind ([`replay::Replay`]). With `calib`, each collective's cost is
    /// measured instead of looked up, and pushed there
    /// ([`Model::calibrate_collectives`]).
    fn replay(
        &self,
        d: &Dist,
        calib: Option<&mut Calib>,
        laps: usize,
    ) -> Result<Prediction, ModelError> {
        d.check(self.ranks(), self.rows())?;
        replay::Replay::new(self, d, calib, laps)?.run()
    }
}
