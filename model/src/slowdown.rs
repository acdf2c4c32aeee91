//! The slowdown model of Figueira and Berman and the load a
//! prediction runs under.
//!
//! A node's *local slowdown* (eq. 2) follows from what its competing
//! processes do: each computes a fraction of its time and communicates
//! another; the probabilities that i of them compute, or communicate, at
//! once come from a dynamic programme over the processes in O(p²)
//! ([`activity_probabilities`]). The *communication slowdown* of a pair is
//! its dedicated over its available bandwidth (eq. 3), and the *aggregate
//! slowdown* of a parallel run combines the nodes' local slowdowns with
//! their weights and the work each holds (eqs. 5, 8 and 12).
//!
//! [`LoadSpec`] is the load a prediction runs under, per node: either a
//! description of the competing processes (eq. 2), or the CPU availability
//! sensed on the node (`mheta sense`), a stochastic value or a mixture of
//! modes (Schopf and Berman). [`LoadSpec::resolve`] turns it into per-rank
//! stochastic CPU slowdowns and per-pair communication slowdowns for the
//! model ([`crate::Model::with_load`]).

use crate::stoch::{Mixture, ModeStat, Stoch};
use serde::{Deserialize, Serialize};

/// One competing process on a node: the fractions of its time it computes
/// and communicates (the rest it is idle, blocked on something else).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Competitor {
    /// Fraction of time communicating, 0..=1.
    #[serde(default)]
    pub comm: f64,
    /// Fraction of time computing; default 1 - comm.
    #[serde(default)]
    pub compute: Option<f64>,
    /// CPU share this competitor itself takes on the node while it
    /// communicates (system calls, protocol processing): its own
    /// delay_comm, measured (`mheta load` reports it per process). When
    /// absent, the platform's [`DelayComm`] table serves.
    #[serde(default)]
    pub comm_cpu: Option<f64>,
}

impl Competitor {
    pub fn hog() -> Competitor {
        Competitor {
            comm: 0.0,
            compute: Some(1.0),
            comm_cpu: None,
        }
    }

    /// A competitor that computes `compute` and communicates `comm` of
    /// its time, taking `comm_cpu` of the CPU while it communicates.
    pub fn cycling(compute: f64, comm: f64, comm_cpu: Option<f64>) -> Competitor {
        Competitor {
            comm,
            compute: Some(compute),
            comm_cpu,
        }
    }

    pub fn compute(&self) -> f64 {
        self.compute.unwrap_or(1.0 - self.comm).clamp(0.0, 1.0)
    }
}

/// pp[i], pm[i] (i = 0..=p): the probabilities that exactly i of the
/// competitors compute, and that exactly i communicate, at the same time,
/// for independent competitors (Figueira and Berman section 4, computed "by dynamic
/// programming in O(p²)": adding competitor j updates the count
/// distribution of the first j in O(j)).
pub fn activity_probabilities(comps: &[Competitor]) -> (Vec<f64>, Vec<f64>) {
    let count = |prob: &dyn Fn(&Competitor) -> f64| {
        let mut dist = vec![1.0];
        for c in comps {
            let q = prob(c).clamp(0.0, 1.0);
            let mut next = vec![0.0; dist.len() + 1];
            for (i, &pi) in dist.iter().enumerate() {
                next[i] += pi * (1.0 - q);
                next[i + 1] += pi * q;
            }
            dist = next;
        }
        dist
    };
    (count(&|c| c.compute()), count(&|c| c.comm))
}

/// delay_comm^{i,k}: the delay one to i communicating competitors impose
/// on a computation (Figueira and Berman fig. 2), measured once per platform. The
/// paper fits it per i as a two-piece line in the available bandwidth k;
/// on a platform whose range is small one value serves (its section 4.2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum DelayComm {
    /// One value for every i and k.
    Constant(f64),
    /// Per i (from 1), a two-piece line in k: below `knee`,
    /// `a0 + a1 k`; at or above, `b0 + b1 k`. The last entry serves
    /// larger i.
    Piecewise(Vec<TwoPiece>),
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TwoPiece {
    pub knee: f64,
    pub a0: f64,
    pub a1: f64,
    pub b0: f64,
    pub b1: f64,
}

impl Default for DelayComm {
    fn default() -> Self {
        DelayComm::Constant(0.0)
    }
}

impl DelayComm {
    /// delay_comm^{i,k}.
    pub fn at(&self, i: usize, k: f64) -> f64 {
        match self {
            DelayComm::Constant(v) => *v,
            DelayComm::Piecewise(v) => match v.get(i.saturating_sub(1)).or(v.last()) {
                Some(t) if k < t.knee => t.a0 + t.a1 * k,
                Some(t) => t.b0 + t.b1 * k,
                None => 0.0,
            },
        }
    }
}

/// Figueira and Berman eq. 2: `sd_a = 1 + Σ_i pp_{a,i}·i + Σ_i pm_{a,i}·delay_comm^{i,k}`.
///
/// When every communicating competitor states its own `comm_cpu`, the
/// second sum is `Σ_j pm_j · comm_cpu_j` (the same expectation, with each
/// competitor's measured delay in place of the platform's curve).
pub fn local_slowdown(comps: &[Competitor], delay: &DelayComm, k: f64) -> f64 {
    let (pp, pm) = activity_probabilities(comps);
    let cpu: f64 = pp.iter().enumerate().map(|(i, p)| p * i as f64).sum();
    let own = comps
        .iter()
        .filter(|c| c.comm > 0.0)
        .all(|c| c.comm_cpu.is_some());
    let comm: f64 = if own {
        comps
            .iter()
            .map(|c| c.comm * c.comm_cpu.unwrap_or(0.0))
            .sum()
    } else {
        pm.iter()
            .enumerate()
            .skip(1)
            .map(|(i, p)| p * delay.at(i, k))
            .sum()
    };
    1.0 + cpu + comm
}

/// Which local-slowdown rule a load description uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LocalRule {
    /// Figueira and Berman eq. 2 as published ([`local_slowdown`]).
    Paper,
    /// Eq. 2's probabilities solved under processor sharing
    /// ([`local_slowdown_sharing`]); the default.
    #[default]
    Sharing,
}

impl std::str::FromStr for LocalRule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "paper" => Ok(LocalRule::Paper),
            "sharing" => Ok(LocalRule::Sharing),
            _ => Err(format!(
                "local slowdown rule {s:?}: expected paper or sharing"
            )),
        }
    }
}

/// The CPU a runnable task gets when tasks with `demands` (each at most
/// one CPU) share `cpus` CPUs fairly: max-min fair shares (water filling),
/// which is what Linux's CFS converges to, a task that wants less than
/// its fair share (one that sleeps between short bursts) getting all it
/// wants. Returns the water level: a task of demand d gets min(d, level).
fn fair_level(demands: &mut [f64], cpus: f64) -> f64 {
    demands.sort_by(f64::total_cmp);
    let mut left = cpus;
    for (i, &d) in demands.iter().enumerate() {
        let share = left / (demands.len() - i) as f64;
        if d > share {
            return share;
        }
        left -= d;
    }
    f64::INFINITY
}

/// Figueira and Berman eq. 2's question answered under fair CPU sharing (our
/// refinement): the probabilities that competitors compute are taken in
/// *loaded* time, where they are not the dedicated fractions, and a
/// communicating competitor takes the CPU it was measured to take while
/// communicating, or its fair share when that is less.
///
/// Eq. 2 adds the expected number of computing competitors to 1. That is
/// exact for one competitor whose communication takes no CPU (each
/// cycle's computation, run at half speed, delays the job by its
/// dedicated length), but with two or more it reads the dedicated
/// fractions as the share of time each computes, while under contention a
/// competitor's computation stretches (it shares the CPU with the job and
/// the others) and its communication does not, so each computes a larger
/// share of the loaded time and they overlap more than their dedicated
/// fractions say. And eq. 2 adds delay_comm on top, where a competitor
/// communicating over a CPU-bound path (loopback, shared memory) takes
/// its fair share, not more.
///
/// Each competitor is computing (demand one CPU), communicating (demand
/// `comm_cpu`) or idle; the job's ranks always run. In each state the
/// tasks get max-min fair shares ([`fair_level`]). With `q_j`, `s_j` the
/// shares of loaded time competitor j computes and communicates, its
/// computing rate `r_j` is the expected share over the others' states;
/// per cycle it computes `c_j / r_j`, communicates `m_j`, idles the rest,
/// so `q_j = (c_j / r_j) / (c_j / r_j + m_j + idle_j)`. A damped
/// fixed-point iteration from the dedicated fractions settles these; the
/// job's rate is its expected share, its slowdown the dedicated rate over
/// it. The expectations run over the 3^p states of p competitors (p ≤ 9;
/// beyond, over 20 000 states drawn with a fixed seed). It equals eq. 2
/// for one competitor without communication CPU and for hogs.
pub fn local_slowdown_sharing(comps: &[Competitor], delay: &DelayComm, k: f64) -> f64 {
    local_slowdown_shared_node(comps, delay, k, 1, 1.0)
}

/// [`local_slowdown_sharing`] on a node whose `cpus` CPUs (cores, or a
/// fraction of one) are shared by `ranks` of the job's processes and the
/// competitors; the job's dedicated rate is `min(1, cpus / ranks)`. One
/// rank on one CPU is Figueira and Berman's node; two ranks pinned to one core beside
/// a hog run at a third of it each instead of half (slowdown 1.5); four
/// ranks on a four-core node with one hog, `4/5` each (1.25).
pub fn local_slowdown_shared_node(
    comps: &[Competitor],
    delay: &DelayComm,
    k: f64,
    ranks: usize,
    cpus: f64,
) -> f64 {
    let p = comps.len();
    let own = ranks.max(1);
    let cpus = if cpus > 0.0 { cpus } else { own as f64 };
    if p == 0 {
        return 1.0;
    }
    let c: Vec<f64> = comps.iter().map(Competitor::compute).collect();
    let m: Vec<f64> = comps.iter().map(|x| x.comm.clamp(0.0, 1.0)).collect();
    let idle: Vec<f64> = (0..p).map(|j| (1.0 - c[j] - m[j]).max(0.0)).collect();
    let mut node = SharedNode {
        own,
        cpus,
        // Without measured figures, one communicating competitor's delay.
        u: comps
            .iter()
            .map(|x| x.comm_cpu.unwrap_or_else(|| delay.at(1, k)).clamp(0.0, 1.0))
            .collect(),
        states: if p <= 9 { all_states(p) } else { Vec::new() },
        rng: crate::search::Rng::new(0x5eed),
    };
    let (mut q, mut s) = (c.clone(), m.clone());
    for _ in 0..200 {
        let mut change: f64 = 0.0;
        let (mut nq, mut ns) = (q.clone(), s.clone());
        for j in 0..p {
            if c[j] <= 0.0 {
                continue;
            }
            let r = node.expect(&q, &s, Some(j)).max(1e-9);
            let busy = c[j] / r;
            let cycle = busy + m[j] + idle[j];
            nq[j] = busy / cycle;
            ns[j] = m[j] / cycle;
            change = change.max((nq[j] - q[j]).abs()).max((ns[j] - s[j]).abs());
        }
        // Damped: the map can overshoot with many heavy competitors.
        for j in 0..p {
            q[j] = 0.5 * (q[j] + nq[j]);
            s[j] = 0.5 * (s[j] + ns[j]);
        }
        if change < 1e-9 {
            break;
        }
    }
    (cpus / own as f64).min(1.0) / node.expect(&q, &s, None).max(1e-9)
}

/// Every state of `p` competitors: 0 computing, 1 communicating, 2 idle.
fn all_states(p: usize) -> Vec<Vec<u8>> {
    (0..3usize.pow(p as u32))
        .map(|mut x| {
            (0..p)
                .map(|_| {
                    let d = (x % 3) as u8;
                    x /= 3;
                    d
                })
                .collect()
        })
        .collect()
}

/// A node under processor sharing ([`local_slowdown_shared_node`]): the
/// job's `own` ranks on `cpus` CPUs, each competitor's CPU demand `u`
/// while it communicates, the competitors' states (p ≤ 9), and the seeded
/// generator that draws states beyond.
struct SharedNode {
    own: usize,
    cpus: f64,
    u: Vec<f64>,
    states: Vec<Vec<u8>>,
    rng: crate::search::Rng,
}

impl SharedNode {
    /// The rate of a task always runnable in state `st`: its max-min fair
    /// share ([`fair_level`]).
    fn rate_in(&self, st: &[u8]) -> f64 {
        let mut dem: Vec<f64> = vec![1.0; self.own];
        for (j, &x) in st.iter().enumerate() {
            match x {
                0 => dem.push(1.0),
                1 if self.u[j] > 0.0 => dem.push(self.u[j]),
                _ => {}
            }
        }
        fair_level(&mut dem, self.cpus).min(1.0)
    }

    /// E[rate of a task always runnable], with competitor `fixed`
    /// computing (or none), over the other competitors' states, which
    /// compute with probability `q` and communicate with `s`.
    fn expect(&mut self, q: &[f64], s: &[f64], fixed: Option<usize>) -> f64 {
        let p = self.u.len();
        if p > 9 {
            return self.sampled(q, s, fixed);
        }
        let prob = |j: usize, st: u8| match st {
            0 => q[j],
            1 => s[j],
            _ => (1.0 - q[j] - s[j]).max(0.0),
        };
        let mut e = 0.0;
        for st in &self.states {
            if fixed.is_some_and(|f| st[f] != 0) {
                continue;
            }
            let pr: f64 = (0..p)
                .filter(|&j| Some(j) != fixed)
                .map(|j| prob(j, st[j]))
                .product();
            if pr > 0.0 {
                e += pr * self.rate_in(st);
            }
        }
        e
    }

    /// [`SharedNode::expect`] over 20 000 drawn states.
    fn sampled(&mut self, q: &[f64], s: &[f64], fixed: Option<usize>) -> f64 {
        let (n, p) = (20_000, self.u.len());
        let mut st = vec![2u8; p];
        let mut e = 0.0;
        for _ in 0..n {
            for j in 0..p {
                let x = self.rng.unit();
                st[j] = if Some(j) == fixed || x < q[j] {
                    0
                } else if x < q[j] + s[j] {
                    1
                } else {
                    2
                };
            }
            e += self.rate_in(&st);
        }
        e / n as f64
    }
}

/// Figueira and Berman eq. 3: `sd_{a->b} = ib_{a->b} / cb_{a->b}`.
pub fn comm_slowdown(dedicated_bw: f64, current_bw: f64) -> f64 {
    if current_bw > 0.0 && dedicated_bw > 0.0 {
        (dedicated_bw / current_bw).max(1.0)
    } else {
        1.0
    }
}

/// Figueira and Berman eq. 5 (load-dependent partitioning):
/// `sd = Σ w_a / Σ (w_a / sd_a)`.
pub fn aggregate_load_dependent(w: &[f64], sd: &[f64]) -> f64 {
    let ded: f64 = w.iter().sum();
    let now: f64 = w.iter().zip(sd).map(|(w, s)| w / s).sum();
    ded / now
}

/// Figueira and Berman eq. 7: the extra work `ew_a = f_a·n - 1` of a node holding
/// fraction `f_a` of the work.
pub fn extra_work(f: f64, n: usize) -> f64 {
    f * n as f64 - 1.0
}

/// Figueira and Berman eq. 9 (eq. 8 when both partitionings are the same): the
/// aggregate slowdown of a constraint-based partitioning with work
/// fractions `f_loaded` under load, against `f_ded` dedicated,
/// `max_a{(1 + ew_{a,1})·sd_a / w_a} / max_a{(1 + ew_{a,2}) / w_a}`.
pub fn aggregate_constraint(f_loaded: &[f64], f_ded: &[f64], w: &[f64], sd: &[f64]) -> f64 {
    let n = w.len();
    let top = (0..n)
        .map(|a| (1.0 + extra_work(f_loaded[a], n)) * sd[a] / w[a])
        .fold(0.0, f64::max);
    let bottom = (0..n)
        .map(|a| (1.0 + extra_work(f_ded[a], n)) / w[a])
        .fold(0.0, f64::max);
    top / bottom
}

/// What competes on one node, in a load description.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeLoad {
    /// The job's ranks on this node.
    pub ranks: Vec<usize>,
    /// CPUs (cores) the node's ranks and competitors share (default: one
    /// per listed rank). A node described as one core holding two ranks
    /// and a pinned competitor: `cpus = 1`.
    #[serde(default)]
    pub cpus: Option<f64>,
    /// Competing processes (Figueira and Berman eq. 2).
    #[serde(default)]
    pub competitors: Vec<Competitor>,
    /// Available bandwidth k of the competitors' links, for
    /// delay_comm^{i,k} (any unit the delay table was fitted in).
    #[serde(default)]
    pub competitor_bw: f64,
    /// Or the CPU share a CPU-bound process gets on the node, sensed
    /// (`mheta sense`): one value, or modes with shares and dwells.
    #[serde(default)]
    pub cpu_avail: Option<Mixture>,
    /// The mode the node is in now (index into `cpu_avail`'s modes), if
    /// known: a run shorter than that mode's dwell stays in it (Schopf and Berman
    /// section 3.1).
    #[serde(default)]
    pub current_mode: Option<usize>,
    /// Dedicated over available bandwidth of this node's links (eq. 3),
    /// applied to every message to or from its ranks (default 1).
    #[serde(default)]
    pub bw_slowdown: Option<Stoch>,
}

/// The load a prediction runs under (`mheta predict --load FILE`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSpec {
    /// The local-slowdown rule for nodes described by their competitors
    /// (default `sharing`; `paper` is eq. 2 as published).
    #[serde(default)]
    pub rule: LocalRule,
    /// delay_comm for eq. 2 (default 0: communicating competitors take no
    /// CPU from the job).
    #[serde(default)]
    pub delay_comm: DelayComm,
    #[serde(default, rename = "node")]
    pub nodes: Vec<NodeLoad>,
}

/// The slowdowns a run is priced with: per rank, its CPU slowdown over
/// the run (a stochastic value), and per node pair the communication
/// slowdown (`p x p`, row-major).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Slowdowns {
    pub cpu: Vec<Stoch>,
    /// Which node each rank is on (ranks on one node share its load:
    /// their slowdowns are related).
    pub node_of: Vec<usize>,
    pub net: Vec<Stoch>,
    /// Per node, how the CPU slowdown was formed: "dedicated",
    /// "competitors (eq. 2)", "single mode", "mixture over the run".
    pub how: Vec<String>,
}

impl Slowdowns {
    pub fn dedicated(p: usize) -> Slowdowns {
        Slowdowns {
            cpu: vec![Stoch::point(1.0); p],
            node_of: (0..p).collect(),
            net: vec![Stoch::point(1.0); p * p],
            how: vec!["dedicated".into(); p],
        }
    }

    pub fn is_dedicated(&self) -> bool {
        self.cpu
            .iter()
            .chain(&self.net)
            .all(|s| *s == Stoch::point(1.0))
    }
}

/// Errors in a load description.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: {msg}")]
    Parse { path: String, msg: String },
    #[error("{path}: rank {rank} is listed on two nodes")]
    Twice { path: String, rank: usize },
    #[error("{path}: rank {rank} is out of range (the job has {ranks} ranks)")]
    Range {
        path: String,
        rank: usize,
        ranks: usize,
    },
    #[error("{path}: node {node}: {msg}")]
    Node {
        path: String,
        node: usize,
        msg: String,
    },
}

impl LoadSpec {
    /// Parse TOML or JSON (by the first non-blank character), naming
    /// `path` in every error.
    pub fn parse(text: &str, path: &str) -> Result<LoadSpec, LoadError> {
        let err = |msg: String| LoadError::Parse {
            path: path.into(),
            msg,
        };
        let spec: LoadSpec = if text.trim_start().starts_with('{') {
            serde_json::from_str(text).map_err(|e| err(e.to_string()))?
        } else {
            toml::from_str(text).map_err(|e| err(e.to_string()))?
        };
        Ok(spec)
    }

    /// Per-rank and per-pair slowdowns for a job of `p` ranks whose run
    /// lasts about `run_s` seconds (dedicated): a node's sensed mixture
    /// becomes its single current mode when the run likely stays in it
    /// (probability ≥ 0.9 of no switch, from the mode's dwell), else its
    /// average over the run's window ([`Mixture::over_window`]).
    pub fn resolve(&self, p: usize, run_s: f64, path: &str) -> Result<Slowdowns, LoadError> {
        let mut s = Slowdowns::dedicated(p);
        let mut seen = vec![false; p];
        for (n, node) in self.nodes.iter().enumerate() {
            let (cpu, how) = self.node_cpu(node, run_s).map_err(|msg| LoadError::Node {
                path: path.into(),
                node: n,
                msg,
            })?;
            for &r in &node.ranks {
                if r >= p {
                    return Err(LoadError::Range {
                        path: path.into(),
                        rank: r,
                        ranks: p,
                    });
                }
                if std::mem::replace(&mut seen[r], true) {
                    return Err(LoadError::Twice {
                        path: path.into(),
                        rank: r,
                    });
                }
                s.cpu[r] = cpu;
                s.node_of[r] = p + n;
                s.how[r] = how.clone();
            }
        }
        // A message is moved by its ends' CPUs as well as the link
        // (shared-memory copies, protocol processing, and a rank that is
        // not running does not take its message): a transfer runs at the
        // slower of the two ends' CPU slowdowns and the links' (eq. 3),
        // whichever is larger. A sensed bandwidth already includes the
        // CPU's part, so the larger, not the product.
        for a in 0..p {
            for b in 0..p {
                let f = |r: usize| self.bw_of(s.node_of[r], p);
                s.net[a * p + b] = f(a)
                    .max_corr(f(b), 1.0)
                    .max_corr(s.cpu[a], 1.0)
                    .max_corr(s.cpu[b], 1.0);
            }
        }
        Ok(s)
    }

    fn bw_of(&self, node: usize, p: usize) -> Stoch {
        node.checked_sub(p)
            .and_then(|n| self.nodes.get(n))
            .and_then(|n| n.bw_slowdown)
            .unwrap_or(Stoch::point(1.0))
    }

    /// A node's CPU slowdown over a run of `run_s` seconds.
    fn node_cpu(&self, node: &NodeLoad, run_s: f64) -> Result<(Stoch, String), String> {
        match (&node.cpu_avail, node.competitors.is_empty()) {
            (Some(_), false) => Err("give competitors or cpu_avail, not both".into()),
            (None, true) => Ok((Stoch::point(1.0), "dedicated".into())),
            (None, false) => {
                let (sd, how) = match self.rule {
                    LocalRule::Paper => (
                        local_slowdown(&node.competitors, &self.delay_comm, node.competitor_bw),
                        "competitors (eq. 2)",
                    ),
                    LocalRule::Sharing => (
                        local_slowdown_shared_node(
                            &node.competitors,
                            &self.delay_comm,
                            node.competitor_bw,
                            node.ranks.len().max(1),
                            node.cpus.unwrap_or(node.ranks.len().max(1) as f64),
                        ),
                        "competitors (eq. 2, shared CPU)",
                    ),
                };
                Ok((Stoch::point(sd), how.into()))
            }
            (Some(mx), true) => avail_slowdown(mx, node.current_mode, run_s),
        }
    }
}

/// The CPU slowdown of a run of `run_s` dedicated seconds on a node whose
/// CPU availability is the mixture `mx`: 1 / (the availability averaged
/// over the run), its spread by the delta method. The run's own length
/// under load is the window (one fixed-point step: T = run_s · sd).
fn avail_slowdown(
    mx: &Mixture,
    current: Option<usize>,
    run_s: f64,
) -> Result<(Stoch, String), String> {
    if mx.modes.is_empty() {
        return Err("cpu_avail has no modes".into());
    }
    if mx
        .modes
        .iter()
        .any(|m| !(m.value.mean > 0.0 && m.value.mean <= 1.5))
    {
        return Err("cpu_avail values must be CPU shares in (0, 1]".into());
    }
    let stays = current
        .and_then(|c| mx.modes.get(c))
        .filter(|m: &&ModeStat| {
            m.mean_dwell_s <= 0.0 || (-run_s / (m.value.mean * m.mean_dwell_s)).exp() >= 0.9
        });
    if let Some(m) = stays.filter(|_| mx.modes.len() > 1) {
        return Ok((m.value.recip(), "single mode (Schopf and Berman sec. 3.1)".into()));
    }
    let rough = mx.moments().mean;
    let window = run_s / rough.max(1e-3);
    let avg = mx.over_window(window);
    let how = if mx.modes.len() > 1 {
        format!("mixture over a {window:.1} s run")
    } else {
        "one mode".into()
    };
    Ok((avg.recip(), how))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comm(c: f64) -> Competitor {
        Competitor {
            comm: c,
            compute: None,
            comm_cpu: None,
        }
    }

    /// Figueira and Berman section 4: the two-application example's probabilities.
    #[test]
    fn probabilities_of_the_papers_example() {
        let (pp, pm) = activity_probabilities(&[comm(0.4), comm(0.3)]);
        assert!((pp[1] - (0.6 * 0.3 + 0.7 * 0.4)).abs() < 1e-12);
        assert!((pp[2] - 0.6 * 0.7).abs() < 1e-12);
        assert!((pm[2] - 0.4 * 0.3).abs() < 1e-12);
        assert!((pp.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }

    /// Figueira and Berman section 4.1: one competitor communicating 45% of the time,
    /// delay_comm = -0.20 + 0.49 k at k = 0.45 -> sd = 1.56.
    #[test]
    fn local_slowdown_of_fig3() {
        let delay = DelayComm::Piecewise(vec![TwoPiece {
            knee: 2.37,
            a0: -0.20,
            a1: 0.49,
            b0: 1.38,
            b1: -0.06,
        }]);
        assert!((delay.at(1, 0.45) - 0.0205).abs() < 1e-9);
        let sd = local_slowdown(&[comm(0.45)], &delay, 0.45);
        assert!((sd - 1.56).abs() < 0.005, "{sd}");
    }

    /// Figueira and Berman section 4.2: two competitors communicating 24% of the
    /// time, delay_comm = 0.25 -> sd = 1 + 0.58·2 + 0.36·1 + 0.42·0.25 =
    /// 2.625, which the paper prints as 2.6.
    #[test]
    fn local_slowdown_of_fig4() {
        let sd = local_slowdown(&[comm(0.24), comm(0.24)], &DelayComm::Constant(0.25), 0.0);
        assert!((sd - 2.6256).abs() < 1e-4, "{sd}");
        // Pure hogs: round robin gives 1 + k.
        let hogs = [Competitor::hog(); 3];
        assert!((local_slowdown(&hogs, &DelayComm::Constant(0.25), 0.0) - 4.0).abs() < 1e-12);
    }

    /// Processor sharing reduces to eq. 2 for one competitor whose
    /// communication takes no CPU, and for hogs; with `comm_cpu` u it is
    /// the exact cycle count `(2c + m) / (c + (1 - u) m)`, which eq. 2's
    /// `1 + c + m u` approaches from below.
    #[test]
    fn sharing_reduces_to_eq2() {
        let d = DelayComm::Constant(0.0);
        for m in [0.1, 0.45, 0.8] {
            let c = 1.0 - m;
            let one = [Competitor::cycling(c, m, Some(0.0))];
            let a = local_slowdown(&one, &d, 0.0);
            let b = local_slowdown_sharing(&one, &d, 0.0);
            assert!((a - b).abs() < 1e-6, "comm {m}: eq. 2 {a}, sharing {b}");
            let one = [Competitor::cycling(c, m, Some(0.3))];
            let b = local_slowdown_sharing(&one, &d, 0.0);
            let exact = (2.0 * c + m) / (c + 0.7 * m);
            assert!(
                (b - exact).abs() < 1e-6,
                "comm {m}: exact {exact}, sharing {b}"
            );
            assert!(local_slowdown(&one, &d, 0.0) <= exact + 1e-12);
            // Communication that would take 90% of the CPU gets its fair
            // half beside the job.
            let one = [Competitor::cycling(c, m, Some(0.9))];
            let b = local_slowdown_sharing(&one, &d, 0.0);
            let exact = (2.0 * c + m) / (c + 0.5 * m);
            assert!(
                (b - exact).abs() < 1e-6,
                "comm {m}: exact {exact}, sharing {b}"
            );
        }
        for k in 1..4 {
            let hogs = vec![Competitor::hog(); k];
            assert!((local_slowdown_sharing(&hogs, &d, 0.0) - (k as f64 + 1.0)).abs() < 1e-9);
        }
    }

    /// A time-stepped simulation of a CPU shared fairly (max-min) among
    /// runnable tasks: the job always runnable, each competitor computing
    /// a fixed amount of CPU work then communicating a fixed wall time
    /// (wanting `comm_cpu` of the CPU), cycles jittered so that
    /// competitors drift apart. Returns the job's slowdown.
    fn simulate(comps: &[(f64, f64, f64)], rng: &mut crate::search::Rng) -> f64 {
        let dt = 1e-3;
        // (computing?, work or wall left)
        let mut st: Vec<(bool, f64)> = comps
            .iter()
            .map(|&(c, _, _)| (true, c * rng.unit()))
            .collect();
        let (mut t, mut job) = (0.0, 0.0);
        while t < 1500.0 {
            let mut dem = vec![1.0];
            for (x, c) in st.iter().zip(comps) {
                dem.push(if x.0 { 1.0 } else { c.2 });
            }
            // Water filling by bisection, independent of fair_level.
            let (mut lo, mut hi) = (0.0f64, 1.0f64);
            for _ in 0..50 {
                let mid = 0.5 * (lo + hi);
                if dem.iter().map(|d| d.min(mid)).sum::<f64>() > 1.0 {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            let share = lo;
            job += share * dt;
            for (x, &(c, m, _)) in st.iter_mut().zip(comps) {
                x.1 -= if x.0 { share * dt } else { dt };
                if x.1 <= 0.0 {
                    let j = 0.8 + 0.4 * rng.unit();
                    *x = if x.0 { (false, m * j) } else { (true, c * j) };
                }
            }
            t += dt;
        }
        t / job
    }

    /// Ranks sharing a node's CPUs with competitors.
    #[test]
    fn shared_node() {
        let d = DelayComm::Constant(0.0);
        let hog = [Competitor::hog()];
        // Two ranks pinned to one core beside a hog: 1/3 each, not 1/2.
        let s = local_slowdown_shared_node(&hog, &d, 0.0, 2, 1.0);
        assert!((s - 1.5).abs() < 1e-9, "{s}");
        // Four ranks on four cores, one hog: 4/5 each.
        let s = local_slowdown_shared_node(&hog, &d, 0.0, 4, 4.0);
        assert!((s - 1.25).abs() < 1e-9, "{s}");
        // Two ranks on four cores: the hog takes a spare core.
        assert!((local_slowdown_shared_node(&hog, &d, 0.0, 2, 4.0) - 1.0).abs() < 1e-9);
        // The default node is Figueira and Berman's.
        let one = [Competitor::cycling(0.6, 0.4, Some(0.3))];
        assert_eq!(
            local_slowdown_shared_node(&one, &d, 0.0, 1, 1.0),
            local_slowdown_sharing(&one, &d, 0.0)
        );
    }

    /// Against the simulation, over the study's range of mixes: the
    /// sharing rule within 3% everywhere; eq. 2 is exact for one
    /// competitor only and falls short with several whose communication
    /// takes little CPU.
    #[test]
    fn sharing_matches_a_simulated_shared_cpu() {
        let mut rng = crate::search::Rng::new(3);
        let cases: [&[(f64, f64, f64)]; 5] = [
            &[(0.85, 0.15, 0.1), (0.5, 0.5, 0.1)],
            &[(0.5, 0.5, 0.3), (0.5, 0.5, 0.3)],
            &[(0.4, 0.6, 0.2), (0.7, 0.3, 0.2), (0.5, 0.5, 0.2)],
            &[(0.76, 0.24, 0.0), (0.76, 0.24, 0.0)],
            &[(0.4, 0.6, 0.9), (0.7, 0.3, 0.9), (0.5, 0.5, 0.87)],
        ];
        let d = DelayComm::Constant(0.0);
        for cs in cases {
            let comps: Vec<Competitor> = cs
                .iter()
                .map(|&(c, m, u)| Competitor::cycling(c, m, Some(u)))
                .collect();
            let sim = simulate(cs, &mut rng);
            let ours = local_slowdown_sharing(&comps, &d, 0.0);
            let paper = local_slowdown(&comps, &d, 0.0);
            assert!(
                (ours / sim - 1.0).abs() < 0.03,
                "{cs:?}: sim {sim}, sharing {ours}"
            );
            if cs.iter().all(|c| c.2 <= 0.3) {
                assert!(paper < sim, "{cs:?}: sim {sim}, eq. 2 {paper}");
            }
        }
    }

    /// Figueira and Berman eq. 5, fig. 11: sd = 7 / 3.67 = 1.9.
    #[test]
    fn aggregate_fig11() {
        let sd = aggregate_load_dependent(&[2.0, 2.0, 2.0, 1.0], &[2.0, 2.0, 3.0, 1.0]);
        assert!((sd - 7.0 / (1.0 + 1.0 + 2.0 / 3.0 + 1.0)).abs() < 1e-12);
        assert!((sd - 1.9).abs() < 0.01);
    }

    /// Figueira and Berman eq. 12 on figs. 12-13.
    #[test]
    fn aggregate_fig12_13() {
        let u = [0.25; 4];
        // Homogeneous, node 1 loaded by two more applications: sd = 3.
        let sd = aggregate_constraint(&u, &u, &[1.0; 4], &[3.0, 2.0, 2.0, 2.0]);
        assert!((sd - 3.0).abs() < 1e-12);
        // Fig. 13: f = 1/12, 3/12, 3/12, 5/12, node 4 twice as slow (w = 1
        // for the slowest, 2 for the others), against uniform dedicated.
        let f = [1.0 / 12.0, 3.0 / 12.0, 3.0 / 12.0, 5.0 / 12.0];
        let w = [2.0, 2.0, 2.0, 1.0];
        let sd = aggregate_constraint(&f, &u, &w, &[1.0; 4]);
        // Eq. 12 gives (1 + 0.67)/1 over a dedicated max of 1/w = 1.
        assert!((sd - 5.0 / 3.0).abs() < 1e-9, "{sd}");
    }

    #[test]
    fn load_spec_parses_and_resolves() {
        let text = r#"
            rule = "paper"
            delay_comm = 0.25
            [[node]]
            ranks = [0]
            competitors = [{ comm = 0.24 }, { comm = 0.24 }]
            [[node]]
            ranks = [1]
            cpu_avail = { modes = [{ value = { mean = 0.5, sd = 0.02 }, share = 1.0 }] }
            bw_slowdown = { mean = 2.0, sd = 0.0 }
        "#;
        let spec = LoadSpec::parse(text, "l.toml").expect("parses");
        let s = spec.resolve(3, 10.0, "l.toml").expect("resolves");
        assert!((s.cpu[0].mean - 2.6256).abs() < 1e-4);
        assert!((s.cpu[1].mean - 2.0).abs() < 0.01 && s.cpu[1].sd > 0.0);
        assert_eq!(s.cpu[2], Stoch::point(1.0));
        // 1 -> 2: its link's 2.0, or its CPU's about 2.0, whichever larger.
        assert!(s.net[3 + 2].mean >= 2.0 && s.net[3 + 2].mean < 2.2);
        // 0 -> 2: a dedicated link, but rank 0's CPU runs 2.63 times slower.
        assert!((s.net[2].mean - 2.6256).abs() < 1e-4);
        assert_eq!(s.net[2 * 3 + 2], Stoch::point(1.0));
        let bad = "[[node]]\nranks = [5]\n";
        let e = LoadSpec::parse(bad, "b.toml")
            .expect("parses")
            .resolve(2, 1.0, "b.toml")
            .expect_err("rank 5 of 2");
        assert!(e.to_string().contains("b.toml") && e.to_string().contains("rank 5"));
        let e = LoadSpec::parse("[[node]]\nrank = [0]\n", "c.toml").expect_err("unknown field");
        assert!(e.to_string().contains("c.toml"));
    }

    #[test]
    fn single_mode_when_the_run_stays() {
        let mx = Mixture {
            modes: vec![
                ModeStat {
                    value: Stoch::new(1.0, 0.02),
                    share: 0.5,
                    mean_dwell_s: 100.0,
                },
                ModeStat {
                    value: Stoch::new(0.5, 0.02),
                    share: 0.5,
                    mean_dwell_s: 100.0,
                },
            ],
        };
        let (s, how) = avail_slowdown(&mx, Some(1), 2.0).expect("ok");
        assert!((s.mean - 2.0).abs() < 1e-9 && how.contains("single"));
        // A long run switches: the mixture's mean, 1/0.75.
        let (s, how) = avail_slowdown(&mx, Some(1), 2000.0).expect("ok");
        assert!(
            (s.mean - 1.0 / 0.75).abs() < 1e-9 && how.contains("mixture"),
            "{how}"
        );
    }
}
