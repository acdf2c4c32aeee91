//! Figueira and Berman's slowdown equations as published: a competing
//! process ([`Competitor`]), the probabilities that i of them compute or
//! communicate at once ([`activity_probabilities`]), the local slowdown
//! (eq. 2, [`local_slowdown`]) with its delay_comm table ([`DelayComm`]),
//! the communication slowdown (eq. 3) and the aggregate slowdowns of a
//! parallel run (eqs. 5, 7 and 8-9).

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
}
