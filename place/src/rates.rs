//! Work rates (Shao et al. eqs. 6–8) and the resource tree a task flow
//! crosses between a worker and a master.
//!
//! Network resources come from the cluster's links. The emulation's tbf
//! shapes each direction of a link separately, so the two directions are
//! separate capacities, not one shared one: a task's request (master →
//! worker) crosses one direction of each link on its path, its result
//! (worker → master) the other, and every task crosses both. The
//! direction that binds is the one carrying the larger transfer, so a
//! link is one resource with Size_TaskXfer = max(request, result bytes).
//! A per-destination rate (`to`) is a further resource between the two
//! hosts. Every path ends in the master's link, which all flows share.

use crate::Inputs;

/// Payload share of a shaped link's bits: TCP over Ethernet with a
/// 1500-byte MTU carries 1448 payload bytes (timestamps on) in a
/// 1514-byte frame that tbf counts.
pub const PAYLOAD_FRACTION: f64 = 1448.0 / 1514.0;

/// W_SlaveCPU(i) = Avail_CPU(i) / T_SlaveCPU(i) (Shao et al. eq. 6).
pub fn w_slave(avail_cpu: f64, t_slave_s: f64) -> f64 {
    avail_cpu / t_slave_s
}

/// W_MasterCPU(i) = Avail_CPU(i) / T_MasterCPU(i) (Shao et al. eq. 7).
pub fn w_master(avail_cpu: f64, t_master_s: f64) -> f64 {
    avail_cpu / t_master_s
}

/// W_Net(n) = BW_Net(n) / Size_TaskXfer (Shao et al. eq. 8), with the
/// bandwidth in bits per second (payload share applied) and the
/// transfer size in bytes. A zero-byte transfer puts no bound.
pub fn w_net(bw_bps: f64, size_task_xfer_bytes: f64) -> f64 {
    if size_task_xfer_bytes <= 0.0 {
        return f64::INFINITY;
    }
    bw_bps * PAYLOAD_FRACTION / 8.0 / size_task_xfer_bytes
}

/// The resources of a cluster and the path each worker's tasks take to
/// each master. A path is the worker's own resources, then resources
/// between the two hosts, then the master's; the master's are shared by
/// every worker, so the union of the paths to one master is a tree.
#[derive(Clone, Debug)]
pub struct Tree {
    pub names: Vec<String>,
    /// W_SlaveCPU per host, tasks per second.
    pub w_slave: Vec<f64>,
    /// W_MasterCPU per host, tasks per second.
    pub w_master: Vec<f64>,
    /// Resource names and their W_Net capacities, tasks per second.
    pub res_names: Vec<String>,
    pub caps: Vec<f64>,
    /// Each host's own resources, worker side first.
    pub own: Vec<Vec<usize>>,
    /// Resources between a worker and a master beyond their own:
    /// `between(s, m)`.
    pub between: std::collections::HashMap<(usize, usize), Vec<usize>>,
    /// The farm's per-worker cycle, when the tree comes from [`Inputs`].
    pub cycle: Option<Cycle>,
}

/// What bounds one worker's rate beyond its CPU: it holds at most
/// `window` tasks, and each spends a cycle of request transfer, compute
/// and result transfer (latency both ways) before the next can start, so
/// SlaveRate(m, s) ≤ window / cycle(s, m) (Little's law). This tightens
/// eq. 4 for a self-scheduled farm; the paper's steady-state model
/// assumes the stages overlap.
#[derive(Clone, Debug)]
pub struct Cycle {
    pub window: f64,
    /// T_SlaveCPU / Avail_CPU per host, seconds.
    pub compute_s: Vec<f64>,
    /// One-way latency per host's link, seconds.
    pub latency_s: Vec<f64>,
    /// Payload bytes per second per host's link (unshaped: the fast rate).
    pub bytes_per_s: Vec<f64>,
    /// Payload bytes per second of a per-destination rate.
    pub pair_bytes_per_s: std::collections::HashMap<(usize, usize), f64>,
    /// Request plus result bytes.
    pub task_bytes: f64,
    /// Result bytes when results go by rendezvous (above
    /// [`crate::sim::EAGER_LIMIT_BYTES`]), else `None`.
    pub rendezvous_bytes: Option<f64>,
    /// T_MasterCPU / Avail_CPU per host, seconds.
    pub master_s: Vec<f64>,
}

impl Cycle {
    /// Payload bytes per second between `s` and `m`.
    fn bps(&self, s: usize, m: usize) -> f64 {
        let pair = self
            .pair_bytes_per_s
            .get(&(s, m))
            .copied()
            .unwrap_or(f64::INFINITY);
        self.bytes_per_s[s].min(self.bytes_per_s[m]).min(pair)
    }

    /// Seconds of the master's time a task from worker `s` takes: its
    /// T_MasterCPU, and for a rendezvous result also the handshake round
    /// trip and the transfer, which move only while the master receives
    /// (it takes results one at a time). This weights eq. 3 per worker:
    /// Σ SlaveRate(m, s) · master_time(s, m) ≤ 1.
    pub fn master_time(&self, s: usize, m: usize) -> f64 {
        self.master_s[m]
            + self.rendezvous_bytes.map_or(0.0, |b| {
                2.0 * (self.latency_s[s] + self.latency_s[m]) + b / self.bps(s, m)
            })
    }

    /// window / cycle(s, m), tasks per second.
    pub fn bound(&self, s: usize, m: usize) -> f64 {
        let bps = self.bps(s, m);
        let cycle = self.compute_s[s]
            + 2.0 * (self.latency_s[s] + self.latency_s[m])
            + self.task_bytes / bps;
        self.window / cycle
    }
}

impl Tree {
    /// The resources a worker `s`'s tasks cross to master `m`, worker
    /// side first; a resource both own (a shared local network) once.
    pub fn path(&self, s: usize, m: usize) -> Vec<usize> {
        let mut p: Vec<usize> = self.own[s]
            .iter()
            .filter(|r| !self.own[m].contains(r))
            .copied()
            .collect();
        if let Some(b) = self.between.get(&(s, m)) {
            p.extend(b);
        }
        p.extend(&self.own[m]);
        p
    }

    /// Worker `s`'s own bound with master `m`: W_SlaveCPU(s) (eq. 4),
    /// and the cycle bound when there is one.
    pub fn slave_cap(&self, s: usize, m: usize) -> f64 {
        self.cycle
            .as_ref()
            .map_or(self.w_slave[s], |c| self.w_slave[s].min(c.bound(s, m)))
    }

    /// Seconds of master `m`'s time a task from worker `s` takes:
    /// 1 / W_MasterCPU(m), or [`Cycle::master_time`].
    pub fn master_time(&self, s: usize, m: usize) -> f64 {
        self.cycle
            .as_ref()
            .map_or(1.0 / self.w_master[m], |c| c.master_time(s, m))
    }

    fn add(&mut self, name: String, cap: f64) -> Option<usize> {
        if !cap.is_finite() {
            return None;
        }
        self.res_names.push(name);
        self.caps.push(cap);
        Some(self.caps.len() - 1)
    }
}

/// The tree of a cluster described by `inputs` (links as in the module
/// doc). Unshaped directions put no bound and get no resource.
pub fn tree(inputs: &Inputs) -> Tree {
    let n = inputs.hosts.len();
    let mut t = Tree {
        names: inputs.hosts.iter().map(|h| h.name.clone()).collect(),
        w_slave: inputs
            .hosts
            .iter()
            .map(|h| w_slave(h.avail_cpu, h.t_slave_s))
            .collect(),
        w_master: inputs
            .hosts
            .iter()
            .map(|h| w_master(h.avail_cpu, h.t_master_s))
            .collect(),
        res_names: Vec::new(),
        caps: Vec::new(),
        own: vec![Vec::new(); n],
        between: Default::default(),
        cycle: None,
    };
    let (req, res) = (inputs.request_bytes, inputs.result_bytes);
    for (i, h) in inputs.hosts.iter().enumerate() {
        let Some(bw) = h.link_bps else { continue };
        t.own[i] = t
            .add(format!("{}:link", h.name), w_net(bw, req.max(res)))
            .into_iter()
            .collect();
    }
    pair_resources(inputs, &mut t);
    t.cycle = Some(cycle(inputs, &t));
    t
}

/// The farm's cycle terms of `inputs` ([`Cycle`]).
fn cycle(inputs: &Inputs, t: &Tree) -> Cycle {
    let pay = |bps: f64| bps * PAYLOAD_FRACTION / 8.0;
    let index: std::collections::HashMap<&str, usize> = t
        .names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let mut pair_bytes_per_s = std::collections::HashMap::new();
    for (a, h) in inputs.hosts.iter().enumerate() {
        for (to, r) in &h.to {
            if let Some(&b) = index.get(to.as_str()) {
                for key in [(a, b), (b, a)] {
                    let e = pair_bytes_per_s.entry(key).or_insert(f64::INFINITY);
                    *e = f64::min(*e, pay(*r));
                }
            }
        }
    }
    Cycle {
        window: inputs.window as f64,
        compute_s: inputs
            .hosts
            .iter()
            .map(|h| h.t_slave_s / h.avail_cpu)
            .collect(),
        latency_s: inputs.hosts.iter().map(|h| h.latency_s).collect(),
        bytes_per_s: inputs
            .hosts
            .iter()
            .map(|h| pay(h.link_bps.unwrap_or(inputs.unshaped_bps)))
            .collect(),
        pair_bytes_per_s,
        task_bytes: inputs.request_bytes + inputs.result_bytes,
        rendezvous_bytes: (inputs.result_bytes > crate::sim::EAGER_LIMIT_BYTES)
            .then_some(inputs.result_bytes),
        master_s: inputs
            .hosts
            .iter()
            .map(|h| h.t_master_s / h.avail_cpu)
            .collect(),
    }
}

/// Per-destination rates: host `a`'s `to = { b = rate }` bounds both
/// directions between `a` and `b` (the smaller of the two hosts' entries).
fn pair_resources(inputs: &Inputs, t: &mut Tree) {
    let bytes = inputs.request_bytes.max(inputs.result_bytes);
    for (a, ha) in inputs.hosts.iter().enumerate() {
        for (b, hb) in inputs.hosts.iter().enumerate().skip(a + 1) {
            let r = [ha.to.get(&hb.name), hb.to.get(&ha.name)]
                .into_iter()
                .flatten()
                .fold(f64::INFINITY, |x, y| x.min(*y));
            if let Some(id) = t.add(format!("{}-{}", ha.name, hb.name), w_net(r, bytes)) {
                t.between.insert((a, b), vec![id]);
                t.between.insert((b, a), vec![id]);
            }
        }
    }
}
