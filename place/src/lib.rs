//! mheta-place: where to put the master of a master/worker task farm and
//! which workers to give it, by the work-rate model of Shao, Berman and
//! Wolski. It owns the model's inputs ([`Inputs`]: per host
//! the benchmarked task times T_SlaveCPU and T_MasterCPU, the CPU
//! availability, the access link and per-destination rates; per task the
//! bytes each way), the work rates of eqs. 6–8 ([`rates`]), the resource
//! tree and its maximum flow (eqs. 1–5, [`flow`]), the choice of the best
//! master and the fewest workers that reach its rate ([`select`]), and an
//! event-driven simulator of the farm's run ([`sim`]). The one call for
//! an application is [`choose`]`(&Inputs) -> Result<Placement>`; [`place`]
//! gives every candidate master's row. MPI-free.

pub mod flow;
pub mod rates;
pub mod select;
pub mod sim;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A bad input, naming the culprit.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PlaceError {
    #[error("host {host}: {detail}")]
    Host { host: String, detail: String },
    #[error("{0}")]
    Input(String),
}

/// One host: its benchmarked task times and its links.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Host {
    pub name: String,
    /// T_SlaveCPU: seconds a task takes as a worker, unloaded.
    pub t_slave_s: f64,
    /// T_MasterCPU: seconds the master spends per result, unloaded.
    pub t_master_s: f64,
    /// Avail_CPU: fraction of the CPU the process gets (1 = all).
    #[serde(default = "one")]
    pub avail_cpu: f64,
    /// Access link rate, bits per second, each direction (`None`: unshaped).
    #[serde(default)]
    pub link_bps: Option<f64>,
    /// One-way latency the host's link adds, seconds.
    #[serde(default)]
    pub latency_s: f64,
    /// Per-destination rates, bits per second, by host name (each direction).
    #[serde(default)]
    pub to: BTreeMap<String, f64>,
    /// The bytes the link's shaper lets through at once after it has been
    /// idle (an emulated link's token bucket: `mheta hosts`' tbf and htb);
    /// 0 for a real link. The simulator's rendezvous transfers use it.
    #[serde(default)]
    pub burst_bytes: f64,
}

fn one() -> f64 {
    1.0
}

/// The model's inputs: hosts and the task's transfer sizes.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Inputs {
    pub hosts: Vec<Host>,
    /// Bytes master → worker per task (the request).
    pub request_bytes: f64,
    /// Bytes worker → master per task (the result).
    pub result_bytes: f64,
    /// Tasks in the run (for the simulated time).
    pub tasks: u64,
    /// Tasks a worker holds at once (the farm's `--window`).
    #[serde(default = "one_u32")]
    pub window: u32,
    /// Seconds before the first task is sent (start-up), added to the
    /// simulated time.
    #[serde(default)]
    pub startup_s: f64,
    /// Rate of an unshaped link, bits per second.
    #[serde(default = "unshaped")]
    pub unshaped_bps: f64,
}

fn one_u32() -> u32 {
    1
}

fn unshaped() -> f64 {
    10e9
}

/// A placement: the master, its workers, the model's rate and the
/// simulated run time.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Placement {
    pub master: String,
    pub workers: Vec<String>,
    /// AppRate(m, S), tasks per second (eq. 1 at the maximum flow).
    pub rate: f64,
    /// Tasks / rate (eq. 2), seconds.
    pub model_s: f64,
    /// The simulator's time for this master and these workers, seconds.
    pub simulated_s: f64,
}

/// One candidate master's row: its rate with every worker, SlaveRate
/// per worker, the chosen workers, and simulated times.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct MasterRow {
    pub master: String,
    /// W_MasterCPU(m), tasks per second.
    pub w_master: f64,
    /// SlaveRate(m, s) for every other host, tasks per second.
    pub slave_rates: BTreeMap<String, f64>,
    /// AppRate(m), tasks per second.
    pub rate: f64,
    /// The fewest workers reaching `rate` (in the order they were added),
    /// checked by the simulator ([`checked`]).
    pub workers: Vec<String>,
    /// Simulated time with `workers`, seconds.
    pub simulated_s: f64,
    /// Simulated time with every other host as a worker, seconds.
    pub simulated_all_s: f64,
}

impl Inputs {
    /// Check every input, naming the culprit.
    pub fn check(&self) -> Result<(), PlaceError> {
        if self.hosts.len() < 2 {
            return Err(PlaceError::Input(format!(
                "a farm needs at least 2 hosts (a master and a worker), got {}",
                self.hosts.len()
            )));
        }
        let pos = |x: f64| x.is_finite() && x > 0.0;
        let nonneg = |x: f64| x.is_finite() && x >= 0.0;
        if !nonneg(self.request_bytes) || !nonneg(self.result_bytes) {
            return Err(PlaceError::Input(
                "task transfer sizes must be ≥ 0 bytes".into(),
            ));
        }
        if self.window == 0 || self.tasks == 0 || !pos(self.unshaped_bps) {
            return Err(PlaceError::Input(
                "window, tasks and unshaped rate must be > 0".into(),
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for h in &self.hosts {
            let bad = |d: &str| PlaceError::Host {
                host: h.name.clone(),
                detail: d.into(),
            };
            if !seen.insert(h.name.as_str()) {
                return Err(bad("named twice"));
            }
            if !pos(h.t_slave_s) || !pos(h.t_master_s) {
                return Err(bad("task times must be > 0 seconds"));
            }
            if !pos(h.avail_cpu) || h.avail_cpu > 1.0 {
                return Err(bad("avail_cpu must be in (0, 1]"));
            }
            if h.link_bps.is_some_and(|r| !pos(r)) || !nonneg(h.latency_s) {
                return Err(bad("link rate must be > 0 and latency ≥ 0"));
            }
            for (to, r) in &h.to {
                if !self.hosts.iter().any(|o| &o.name == to) || !pos(*r) {
                    return Err(bad(&format!("`to` names unknown host {to} or a rate ≤ 0")));
                }
            }
        }
        Ok(())
    }
}

/// A chosen worker set may be slower than every worker by at most this
/// share of the simulated time.
pub const SIM_TOLERANCE: f64 = 0.02;

/// Master `m`'s selection with its workers checked by the simulator:
/// the model's fewest workers, then further workers in the model's order
/// while the simulated time with them exceeds the time with every worker
/// by more than [`SIM_TOLERANCE`] (the steady-state model does not see
/// start-up and the tail). Returns the selection, the workers, and the
/// simulated times with them and with all.
pub fn checked(
    inputs: &Inputs,
    tree: &rates::Tree,
    m: usize,
) -> Result<(select::Selection, Vec<usize>, f64, f64), PlaceError> {
    let sel = select::select(tree, m);
    let order = select::order(tree, m);
    let all_s = sim::simulate(inputs, m, &order)?.elapsed_s;
    let mut ws = sel.workers.clone();
    let mut ws_s = sim::simulate(inputs, m, &ws)?.elapsed_s;
    let mut rest = order.iter().filter(|w| !sel.workers.contains(w));
    while ws_s > (1.0 + SIM_TOLERANCE) * all_s {
        let Some(&w) = rest.next() else { break };
        ws.push(w);
        ws_s = sim::simulate(inputs, m, &ws)?.elapsed_s;
    }
    Ok((sel, ws, ws_s, all_s))
}

/// Every candidate master's row, best first (highest AppRate, then the
/// shorter simulated time).
pub fn place(inputs: &Inputs) -> Result<Vec<MasterRow>, PlaceError> {
    inputs.check()?;
    let tree = rates::tree(inputs);
    let name = |i: &usize| inputs.hosts[*i].name.clone();
    let mut rows = Vec::with_capacity(inputs.hosts.len());
    for m in 0..inputs.hosts.len() {
        let (sel, workers, simulated_s, simulated_all_s) = checked(inputs, &tree, m)?;
        rows.push(MasterRow {
            master: name(&m),
            w_master: tree.w_master[m],
            slave_rates: sel.slave_rates.iter().map(|(i, r)| (name(i), *r)).collect(),
            rate: sel.rate,
            workers: workers.iter().map(name).collect(),
            simulated_s,
            simulated_all_s,
        });
    }
    rows.sort_by(|a, b| {
        b.rate
            .total_cmp(&a.rate)
            .then(a.simulated_s.total_cmp(&b.simulated_s))
    });
    Ok(rows)
}

/// The best placement: the master with the highest AppRate (on a tie the
/// first such host), with its checked workers ([`checked`]).
pub fn choose(inputs: &Inputs) -> Result<Placement, PlaceError> {
    inputs.check()?;
    let tree = rates::tree(inputs);
    let best = select::best_master(&tree);
    let (sel, workers, simulated_s, _) = checked(inputs, &tree, best)?;
    Ok(Placement {
        master: inputs.hosts[best].name.clone(),
        workers: workers
            .iter()
            .map(|&i| inputs.hosts[i].name.clone())
            .collect(),
        rate: sel.rate,
        model_s: inputs.tasks as f64 / sel.rate,
        simulated_s,
    })
}
