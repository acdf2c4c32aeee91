//! The in-run planner: every rank's summary of its trace gathered
//! ([`mheta_model::summary`]), MHETA's model and GBS
//! run on rank 0 with the cluster's profile (under the CPU slowdowns
//! sensed in the run, Figueira and Berman eq. 1), the move priced and
//! decided, and the distribution to run on broadcast to every rank.

use crate::{RuntimeError, gather_summaries};
use mheta_model::redist::{self, Decision, MoveCost};
use mheta_model::search::{self, Found};
use mheta_model::{Dist, Model};
use mheta_profile::ClusterProfile;
use mheta_trace::AppDecl;
use mpi::collective::Root;
use mpi::topology::{Communicator, SimpleCommunicator};
use std::path::Path;

/// What the in-run planner chose.
#[derive(Clone, Debug)]
pub struct RunPlan {
    /// The distribution to run on from now: the current one when the
    /// decision is not to move.
    pub dist: Dist,
    /// GBS result (rank 0's; other ranks get the distribution only).
    pub found: Option<Found>,
    /// Predicted iteration time of the distribution in force:
    /// the median of the recorded iterations replayed one by one
    /// ([`Model::predict_iterations`]), or the replay of their median
    /// with fewer than 3 recorded. GBS's `found.predicted_s` is the same
    /// figure for its choice.
    pub predicted_current_s: f64,
    /// The replay of the recorded iterations' median ([`Model::predict`],
    /// MHETA's one iteration) on the instrumented distribution and on
    /// GBS's choice (rank 0's; 0 elsewhere).
    pub point_current_s: f64,
    pub point_chosen_s: f64,
    /// Predicted cost of moving to GBS's choice (rank 0's).
    pub cost: Option<MoveCost>,
    /// Whether to move and why (rank 0's; every rank gets `dist`).
    pub decision: Option<Decision>,
    /// The model's busy time (T_τ: computation and I/O) of every rank on
    /// `dist`, seconds (rank 0's; empty elsewhere): what the drift watch
    /// holds each rank's measured stage time against.
    pub predicted_busy_s: Vec<f64>,
    /// The summaries' gather to rank 0, on this rank.
    pub gathered: crate::Gathered,
    /// Rank 0's time from having the summaries to the plan (model, GBS,
    /// the move's price); 0 elsewhere.
    pub model_s: f64,
    /// The model had the reuse term (a profile with a reuse curve,
    /// `mheta_model::reuse`); rank 0's.
    pub reuse_term: bool,
}

/// Gather every rank's summary of its trace, run model + GBS on rank 0
/// with the profile at `profile`,
/// price the move ([`Model::move_cost`]) and decide whether it pays over
/// the `remaining` iterations ([`redist::decide`]), and broadcast the
/// distribution to run on. Collective over `world`. `rebuild_s_per_row`:
/// what each rank took per row to build its arrays, for pricing a move
/// through disk ([`Model::rebuild_s_per_row`]); None when not measured.
/// `sensed`: what the load watch sensed since the trace was recorded
/// ([`SensedLoad`]); None: the nodes are as they were when recorded.
/// `given`: the distribution to move to instead of GBS's (`--auto-to`),
/// moved to whether or not it pays (the decision's reason says what the
/// model made of it).
///
/// `app.dist` is the distribution the traces in `dir` were recorded on;
/// `current` the one in force, which the plan moves from. They differ
/// when a plan on sensed slowdowns prices a trace recorded before an
/// earlier move.
#[allow(clippy::too_many_arguments)]
pub fn plan_in_run(
    world: &SimpleCommunicator,
    app: &AppDecl,
    current: &Dist,
    dir: &Path,
    profile: &Path,
    remaining: u64,
    rebuild_s_per_row: Option<&[f64]>,
    sensed: Option<&SensedLoad>,
    given: Option<&Dist>,
) -> Result<RunPlan, RuntimeError> {
    let (mut summaries, gathered) = gather_summaries(world, dir)?;
    let p = world.size() as usize;
    // Rank 0 plans; status and result travel in one broadcast so that every
    // rank fails or proceeds together.
    let mut msg: Vec<u8> = Vec::new();
    let mut plan = RunPlan {
        dist: Dist(Vec::new()),
        found: None,
        predicted_current_s: 0.0,
        point_current_s: 0.0,
        point_chosen_s: 0.0,
        cost: None,
        decision: None,
        predicted_busy_s: Vec::new(),
        gathered,
        model_s: 0.0,
        reuse_term: false,
    };
    if world.rank() == 0 {
        let t0 = std::time::Instant::now();
        let planned = ClusterProfile::load(profile)
            .map_err(|e| e.to_string())
            .and_then(|prof| {
                let inputs = Inputs {
                    app,
                    current,
                    profile: &prof,
                    rebuild_s_per_row,
                    sensed,
                    given,
                };
                plan_at_root(std::mem::take(&mut summaries), &inputs)
            });
        match planned {
            Ok(Planned {
                found: f,
                current_s: cur,
                cost: c,
                busy_now,
                busy_chosen,
                point,
                reuse_term,
            }) => {
                plan.reuse_term = reuse_term;
                let mut d = redist::decide(cur, f.predicted_s, c.total_s, remaining);
                if given.is_some() {
                    d.moved = f.dist != current.0;
                    d.reason = format!("given (--auto-to); the model's verdict: {}", d.reason);
                }
                msg.push(1);
                let to = if d.moved { &f.dist } else { &current.0 };
                for &s in to {
                    msg.extend_from_slice(&s.to_le_bytes());
                }
                plan.predicted_busy_s = if d.moved { busy_chosen } else { busy_now };
                plan.predicted_current_s = cur;
                (plan.point_current_s, plan.point_chosen_s) = point;
                plan.found = Some(f);
                plan.cost = Some(c);
                plan.decision = Some(d);
            }
            Err(e) => {
                msg.push(0);
                msg.extend_from_slice(e.as_bytes());
            }
        }
        plan.model_s = t0.elapsed().as_secs_f64();
    }
    plan.dist = broadcast_plan(world, msg)?;
    if plan.dist.ranks() != p || plan.dist.total() != app.rows {
        return Err(RuntimeError::Plan(format!(
            "planner returned {}, not a distribution of {} rows over {p} ranks",
            plan.dist, app.rows
        )));
    }
    Ok(plan)
}

/// What rank 0 plans from, besides the summaries ([`plan_in_run`]'s
/// arguments).
pub struct Inputs<'a> {
    pub app: &'a AppDecl,
    pub current: &'a Dist,
    pub profile: &'a ClusterProfile,
    pub rebuild_s_per_row: Option<&'a [f64]>,
    pub sensed: Option<&'a SensedLoad>,
    /// A distribution to plan for instead of searching (`--auto-to`).
    pub given: Option<&'a Dist>,
}

/// The load the ranks sensed in the run, the same on every rank.
#[derive(Clone, Debug, Default)]
pub struct SensedLoad {
    /// Per rank, its CPU slowdown since the trace was recorded (Figueira
    /// and Berman eq. 1: its computation and message overheads run that
    /// many times slower; mean ± sd over the sensing window).
    pub cpu: Vec<mheta_model::stoch::Stoch>,
    /// Per rank, the CPU it got a turn of the scheduler's round where it
    /// shared its core: the model replays such a rank turn by turn
    /// (`mheta_model::slowdown::NodeLoad::turn_s`). Empty or None:
    /// smoothly, at its share.
    pub turn_s: Vec<Option<f64>>,
}

/// Rank 0's plan.
pub struct Planned {
    /// GBS's choice, its `predicted_s` the median of the recorded
    /// iterations replayed on it where there are 3 or more.
    pub found: Found,
    /// The same figure on the current distribution.
    pub current_s: f64,
    pub cost: MoveCost,
    /// The busy times on the current and on the chosen distribution.
    pub busy_now: Vec<f64>,
    pub busy_chosen: Vec<f64>,
    /// The replay of the median iteration on the current and the chosen.
    pub point: (f64, f64),
    /// The model had the reuse term (`mheta_model::reuse`).
    pub reuse_term: bool,
}

/// Rank 0's side of [`plan_in_run`] once it holds every rank's summary
/// of its trace, without MPI: the model of the summaries
/// ([`Model::from_summaries`]) on the profile (under the sensed
/// CPU slowdowns, Figueira and Berman eq. 1), GBS, and the move's cost
/// (`runtime/benches/planning.rs` times it at up to 16384 ranks).
pub fn plan_at_root(
    summaries: Vec<mheta_model::summary::RankSummary>,
    x: &Inputs,
) -> Result<Planned, String> {
    let busy = |p: &mheta_model::Prediction| p.ranks.iter().map(|r| r.compute_s).collect();
    let p = summaries.len();
    let mut m =
        Model::from_summaries(summaries, x.app.clone(), x.profile).map_err(|e| e.to_string())?;
    m.rebuild_s_per_row = x.rebuild_s_per_row.map(<[f64]>::to_vec);
    if let Some(sensed) = x.sensed {
        let sd = &sensed.cpu;
        let mut load = mheta_model::slowdown::Slowdowns::dedicated(p);
        load.cpu = sd.to_vec();
        load.cpu_bounds = sd.iter().map(|s| s.range2()).collect();
        if sensed.turn_s.len() == p {
            load.turn_s = sensed.turn_s.clone();
        }
        for h in &mut load.how {
            *h = "sensed in the run".into();
        }
        m = m.with_load(load);
    }
    let now = x.current.clone();
    let cur = m.predict(&now).map_err(|e| e.to_string())?;
    let mut f = match x.given {
        Some(g) => search::Found {
            strategy: "given".into(),
            dist: g.0.clone(),
            predicted_s: m.predict(g).map_err(|e| e.to_string())?.per_iteration_s,
            evaluations: 1,
            bisection_steps: 0,
        },
        None => search::gbs(&m).map_err(|e| e.to_string())?,
    };
    let to = Dist(f.dist.clone());
    let c = m.move_cost(&now, &to);
    let chosen = m.predict(&to).map_err(|e| e.to_string())?;
    let point = (cur.per_iteration_s, f.predicted_s);
    let each = |d: &Dist, at: f64| -> Result<f64, String> {
        let it = m.predict_iterations(d).map_err(|e| e.to_string())?;
        Ok(it.map_or(at, |(med, _)| med))
    };
    let current_s = each(&now, point.0)?;
    f.predicted_s = each(&to, point.1)?;
    Ok(Planned {
        found: f,
        current_s,
        cost: c,
        busy_now: busy(&cur),
        busy_chosen: busy(&chosen),
        point,
        reuse_term: m.has_reuse(),
    })
}

/// Rank 0's status and distribution (`msg`), to every rank
/// (collective): the distribution, or rank 0's error.
fn broadcast_plan(world: &SimpleCommunicator, mut msg: Vec<u8>) -> Result<Dist, RuntimeError> {
    let root = world.process_at_rank(0);
    let mut len = msg.len() as u64;
    root.broadcast_into(&mut len);
    msg.resize(len as usize, 0);
    root.broadcast_into(&mut msg[..]);
    if msg.first() != Some(&1) {
        return Err(RuntimeError::Plan(
            String::from_utf8_lossy(&msg[1..]).into_owned(),
        ));
    }
    Ok(Dist(
        msg[1..]
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect(),
    ))
}
