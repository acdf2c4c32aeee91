//! Choosing the master and its workers (Shao et al. section 4).
//!
//! For a candidate master the workers are tried in the paper's order:
//! those on the master's local network first (the shorter path), then
//! the others one by one; within each group the worker with the higher
//! rate alone first (ties by name). Each takes what its path and the
//! master still allow ([`flow::tree_flow`]); the workers that took a
//! positive rate are the chosen set, and those that took nothing are the
//! ones the model says add nothing. The best master is the one with the
//! highest AppRate.

use crate::flow;
use crate::rates::Tree;
use std::collections::BTreeMap;

/// One master's selection.
#[derive(Clone, Debug, PartialEq)]
pub struct Selection {
    /// AppRate(m), tasks per second.
    pub rate: f64,
    /// SlaveRate(m, s) for every other host.
    pub slave_rates: BTreeMap<usize, f64>,
    /// Workers with a positive SlaveRate, in the order they were added.
    pub workers: Vec<usize>,
}

/// The rate worker `s` would get alone with master `m`.
pub fn alone(tree: &Tree, s: usize, m: usize) -> f64 {
    tree.path(s, m).iter().fold(
        tree.slave_cap(s, m).min(1.0 / tree.master_time(s, m)),
        |x, &r| x.min(tree.caps[r]),
    )
}

/// The other hosts in the order the paper adds them for master `m`.
pub fn order(tree: &Tree, m: usize) -> Vec<usize> {
    let mut ws: Vec<(usize, f64, usize)> = (0..tree.names.len())
        .filter(|&s| s != m)
        .map(|s| (tree.path(s, m).len(), alone(tree, s, m), s))
        .collect();
    ws.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then(b.1.total_cmp(&a.1))
            .then(tree.names[a.2].cmp(&tree.names[b.2]))
    });
    ws.into_iter().map(|w| w.2).collect()
}

/// Master `m`'s AppRate, SlaveRates and chosen workers.
pub fn select(tree: &Tree, m: usize) -> Selection {
    let ws = order(tree, m);
    let (rate, rates) = flow::tree_flow(tree, m, &ws);
    Selection {
        rate,
        workers: ws
            .iter()
            .zip(&rates)
            .filter(|(_, r)| **r > 0.0)
            .map(|(s, _)| *s)
            .collect(),
        slave_rates: ws.into_iter().zip(rates).collect(),
    }
}

/// The master with the highest AppRate (the first such host on a tie).
pub fn best_master(tree: &Tree) -> usize {
    let mut best = (0, f64::NEG_INFINITY);
    for m in 0..tree.names.len() {
        let r = select(tree, m).rate;
        if r > best.1 * (1.0 + 1e-12) {
            best = (m, r);
        }
    }
    best.0
}
