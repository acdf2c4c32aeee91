//! Maximum flow (Shao et al. eqs. 1–5 as a flow-rate problem).
//!
//! [`MaxFlow`] is Edmonds–Karp (shortest augmenting paths by BFS) on
//! `f64` capacities: a short implementation rather than a crate, because
//! the graphs are a few nodes per host and the selection needs the flow
//! out of each source edge, which the general crates do not give as
//! cheaply. [`tree_flow`] is the paper's own procedure for a tree (its
//! figure 2): add workers one by one, each taking the least residual
//! capacity on its single path. On a tree the constraints (eqs. 3–5)
//! form a laminar family, so this greedy reaches the maximum flow in any
//! order; the tests check it against [`MaxFlow`] on random trees.

use crate::rates::Tree;
use std::collections::VecDeque;

/// Flows below this many tasks per second count as none.
pub const EPS: f64 = 1e-9;

/// A flow network with residual capacities.
#[derive(Clone, Debug, Default)]
pub struct MaxFlow {
    /// Per node, edge ids leaving it.
    adj: Vec<Vec<usize>>,
    /// Per edge: head node, residual capacity; edge `e ^ 1` is its reverse.
    to: Vec<usize>,
    cap: Vec<f64>,
}

impl MaxFlow {
    pub fn new(nodes: usize) -> Self {
        MaxFlow {
            adj: vec![Vec::new(); nodes],
            ..Default::default()
        }
    }

    /// Add an edge `a → b` of capacity `c`; returns its id.
    pub fn edge(&mut self, a: usize, b: usize, c: f64) -> usize {
        let e = self.to.len();
        self.to.extend([b, a]);
        self.cap.extend([c, 0.0]);
        self.adj[a].push(e);
        self.adj[b].push(e + 1);
        e
    }

    /// Flow on edge `e` (the reverse edge's residual).
    pub fn flow(&self, e: usize) -> f64 {
        self.cap[e ^ 1]
    }

    /// Push the maximum flow from `s` to `t`; returns the amount pushed.
    pub fn run(&mut self, s: usize, t: usize) -> f64 {
        let mut total = 0.0;
        while let Some(pred) = self.bfs(s, t) {
            let mut push = f64::INFINITY;
            let mut v = t;
            while v != s {
                push = push.min(self.cap[pred[v]]);
                v = self.to[pred[v] ^ 1];
            }
            let mut v = t;
            while v != s {
                self.cap[pred[v]] -= push;
                self.cap[pred[v] ^ 1] += push;
                v = self.to[pred[v] ^ 1];
            }
            total += push;
        }
        total
    }

    /// Shortest path `s → t` over edges with residual > EPS: the edge
    /// into each node.
    fn bfs(&self, s: usize, t: usize) -> Option<Vec<usize>> {
        let mut pred = vec![usize::MAX; self.adj.len()];
        let mut seen = vec![false; self.adj.len()];
        seen[s] = true;
        let mut q = VecDeque::from([s]);
        while let Some(v) = q.pop_front() {
            for &e in &self.adj[v] {
                let w = self.to[e];
                if !seen[w] && self.cap[e] > EPS {
                    seen[w] = true;
                    pred[w] = e;
                    if w == t {
                        return Some(pred);
                    }
                    q.push_back(w);
                }
            }
        }
        None
    }
}

/// The general max flow of the tree's graph for master `m` and workers
/// (eager results: the master's cost per task is the same for every
/// worker, so eq. 3 is a plain capacity)
/// `ws`: source → worker (W_SlaveCPU, [`Tree::slave_cap`]) → its path's resources (W_Net) →
/// master (W_MasterCPU) → sink. Returns AppRate and each worker's
/// SlaveRate (the flow on its source edge).
pub fn graph_flow(tree: &Tree, m: usize, ws: &[usize]) -> (f64, Vec<f64>) {
    let n = tree.names.len();
    let r = tree.caps.len();
    // Nodes: hosts 0..n, resources n..n+r, master's CPU, source, sink.
    let (cpu, src, snk) = (n + r, n + r + 1, n + r + 2);
    let mut g = MaxFlow::new(n + r + 3);
    let mut edges = Vec::new();
    let mut linked = std::collections::HashSet::new();
    for &s in ws {
        edges.push(g.edge(src, s, tree.slave_cap(s, m)));
        // A resource's capacity sits on its one edge out (a tree: each
        // resource has one successor toward the master).
        let mut prev = (s, f64::INFINITY);
        for &res in &tree.path(s, m) {
            if linked.insert(prev.0) {
                g.edge(prev.0, n + res, prev.1);
            }
            prev = (n + res, tree.caps[res]);
        }
        if linked.insert(prev.0) {
            g.edge(prev.0, cpu, prev.1);
        }
    }
    g.edge(cpu, snk, tree.w_master[m]);
    let rate = g.run(src, snk);
    (rate, edges.iter().map(|&e| g.flow(e)).collect())
}

/// The paper's greedy on a tree: workers in the order of `ws`, each
/// adding the least residual capacity on its path and at the master
/// (eqs. 3–5). With rendezvous results the master's constraint is
/// weighted per worker and the greedy is no longer exact in every order;
/// the order of [`crate::select::order`] takes the cheaper workers first.
/// Returns AppRate (eq. 1) and each worker's SlaveRate.
pub fn tree_flow(tree: &Tree, m: usize, ws: &[usize]) -> (f64, Vec<f64>) {
    let mut residual = tree.caps.clone();
    // Seconds of the master's time per second left (eq. 3, weighted per
    // worker by [`Tree::master_time`]).
    let mut budget = 1.0;
    let mut rates = Vec::with_capacity(ws.len());
    for &s in ws {
        let path = tree.path(s, m);
        let cost = tree.master_time(s, m);
        let add = path
            .iter()
            .fold(tree.slave_cap(s, m).min(budget / cost), |x, &r| {
                x.min(residual[r])
            })
            .max(0.0);
        for &r in &path {
            residual[r] -= add;
        }
        budget -= add * cost;
        rates.push(if add > EPS { add } else { 0.0 });
    }
    (rates.iter().sum(), rates)
}
