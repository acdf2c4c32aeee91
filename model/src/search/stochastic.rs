//! The stochastic searches, each with a budget of evaluations and a
//! seed: [`annealing`], [`genetic`] and [`random`], and the generator they
//! share ([`Rng`]).

use super::{Found, balanced_dist, cost, found};
use crate::dist::Dist;
use crate::model::{Model, ModelError};

/// SplitMix64: a small, seedable generator for the stochastic searches
/// and `mheta load`'s random level switching.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in [0, n).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }
    /// Exponential with the given mean.
    pub fn exp(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.unit()).ln()
    }
}

/// A uniformly random distribution (cut points on [0, N]).
fn random_dist(rng: &mut Rng, p: usize, n: u64) -> Dist {
    let mut cuts: Vec<u64> = (0..p - 1).map(|_| rng.below(n + 1)).collect();
    cuts.sort_unstable();
    let mut prev = 0;
    let mut d = Vec::with_capacity(p);
    for c in cuts.into_iter().chain(std::iter::once(n)) {
        d.push(c - prev);
        prev = c;
    }
    Dist(d)
}

/// Move up to `k` rows from a random rank with rows to another.
fn neighbour(rng: &mut Rng, d: &Dist, k: u64) -> Dist {
    let p = d.0.len();
    let mut t = d.clone();
    let from: Vec<usize> = (0..p).filter(|&i| d.0[i] > 0).collect();
    if from.is_empty() || p < 2 {
        return t;
    }
    let i = from[rng.below(from.len() as u64) as usize];
    let mut j = rng.below(p as u64 - 1) as usize;
    if j >= i {
        j += 1;
    }
    let mv = 1 + rng.below(k.max(1).min(d.0[i]));
    t.0[i] -= mv;
    t.0[j] += mv;
    t
}

/// Simulated annealing from the balanced distribution: random row moves
/// whose size shrinks with the temperature, Metropolis acceptance on the
/// relative change of the predicted time, geometric cooling over `budget`
/// evaluations.
pub fn annealing(m: &Model, budget: u64, seed: u64) -> Result<Found, ModelError> {
    let ev = m.evaluator();
    let (p, n) = (m.ranks(), m.rows());
    let mut rng = Rng::new(seed);
    let mut cur = balanced_dist(m);
    let mut cur_t = cost(&ev, &cur)?;
    let (mut best, mut best_t) = (cur.clone(), cur_t);
    let budget = budget.max(2);
    let (t0, t1) = (0.05f64, 1e-5f64);
    let max_move = (n / p as u64).max(1);
    for e in 1..budget {
        let frac = e as f64 / budget as f64;
        let temp = t0 * (t1 / t0).powf(frac);
        let k = ((max_move as f64) * (1.0 - frac).powi(2)).max(1.0) as u64;
        let cand = neighbour(&mut rng, &cur, k);
        let t = cost(&ev, &cand)?;
        let rel = if cur_t.is_finite() {
            (t - cur_t) / cur_t
        } else {
            -1.0
        };
        if rel <= 0.0 || rng.unit() < (-rel / temp).exp() {
            cur = cand;
            cur_t = t;
            if t < best_t {
                best = cur.clone();
                best_t = t;
            }
        }
    }
    found("annealing", &ev, best, budget - 1, 0)
}

/// A genetic search: a population of 24 (block, balanced and random
/// members), tournament selection, crossover by averaging two parents'
/// shares, mutation by row moves, the best two kept; `budget` evaluations.
pub fn genetic(m: &Model, budget: u64, seed: u64) -> Result<Found, ModelError> {
    let ev = m.evaluator();
    let (p, n) = (m.ranks(), m.rows());
    let mut rng = Rng::new(seed);
    let size = 24usize;
    let mut pop: Vec<(f64, Dist)> = Vec::with_capacity(size);
    let mut evals = 0u64;
    for k in 0..size {
        let d = match k {
            0 => Dist::block(p, n),
            1 => balanced_dist(m),
            _ => random_dist(&mut rng, p, n),
        };
        evals += 1;
        pop.push((cost(&ev, &d)?, d));
    }
    let pick = |rng: &mut Rng, pop: &[(f64, Dist)]| -> usize {
        let a = rng.below(pop.len() as u64) as usize;
        let b = rng.below(pop.len() as u64) as usize;
        if pop[a].0 <= pop[b].0 { a } else { b }
    };
    while evals < budget {
        pop.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut next: Vec<(f64, Dist)> = pop[..2].to_vec();
        while next.len() < size && evals < budget {
            let (a, b) = (pick(&mut rng, &pop), pick(&mut rng, &pop));
            let w = rng.unit();
            let mix: Vec<f64> = (0..p)
                .map(|i| w * pop[a].1.0[i] as f64 + (1.0 - w) * pop[b].1.0[i] as f64)
                .collect();
            let mut child = Dist::proportional(&mix, n);
            if rng.unit() < 0.7 {
                let k = (n / (4 * p as u64)).max(1);
                child = neighbour(&mut rng, &child, k);
            }
            evals += 1;
            next.push((cost(&ev, &child)?, child));
        }
        pop = next;
    }
    pop.sort_by(|a, b| a.0.total_cmp(&b.0));
    let best = pop.swap_remove(0).1;
    found("genetic", &ev, best, evals, 0)
}

/// Random sampling: `budget` uniformly random distributions, the best kept
/// (block and balanced included as the first two).
pub fn random(m: &Model, budget: u64, seed: u64) -> Result<Found, ModelError> {
    let ev = m.evaluator();
    let (p, n) = (m.ranks(), m.rows());
    let mut rng = Rng::new(seed);
    let mut best = Dist::block(p, n);
    let mut best_t = cost(&ev, &best)?;
    let mut evals = 1u64;
    let bal = balanced_dist(m);
    let t = cost(&ev, &bal)?;
    evals += 1;
    if t < best_t {
        (best, best_t) = (bal, t);
    }
    while evals < budget {
        let d = random_dist(&mut rng, p, n);
        let t = cost(&ev, &d)?;
        evals += 1;
        if t < best_t {
            (best, best_t) = (d, t);
        }
    }
    found("random", &ev, best, evals, 0)
}
