//! Synthetic inputs with known answers: a uniform cluster profile and
//! Jacobi-shaped traces (exchange with neighbours, one stage, a reduction).
//! Used by the model's tests and by the model benchmark.

use mheta_profile::{ClusterProfile, PairCost};
use mheta_trace::{AppDecl, Event, Iteration, Msg, Op, RankTrace, What};

/// Send overhead o_s of every pair.
pub const OS: f64 = 1e-6;
/// Receive overhead o_r of every pair.
pub const OR: f64 = 2e-6;
/// Latency L of every pair.
pub const L: f64 = 5e-6;
/// Per-byte cost G of every pair.
pub const G: f64 = 1e-9;

/// A profile of `p` ranks with the costs above on every pair.
pub fn profile(p: u32) -> ClusterProfile {
    let mut prof = ClusterProfile::new(p, vec![String::new(); p as usize], "synthetic");
    for s in 0..p {
        for d in 0..p {
            if s != d {
                prof.pairs.push(PairCost::logp(s, d, L, G, OS, OR));
            }
        }
    }
    prof
}

/// An event of thread 0.
pub fn ev(t0: u64, t1: u64, op: Option<Op>, what: What) -> Event {
    Event {
        op,
        thread: 0,
        t0_ns: t0,
        t1_ns: t1,
        what,
    }
}

/// A 1-D Jacobi-like iteration: exchange with neighbours, a stage of
/// `compute_ns`, then a reduction of 8 bytes.
pub fn jacobi_trace(rank: u32, p: u32, compute_ns: u64, halo: u64) -> RankTrace {
    let mut events = Vec::new();
    let mut t = 1000;
    for peer in [rank as i32 - 1, rank as i32 + 1] {
        if peer >= 0 && peer < p as i32 {
            let m = Msg {
                peer,
                tag: 7,
                bytes: halo,
            };
            events.push(ev(
                t,
                t + 500,
                Some(Op::Sendrecv),
                What::Sendrecv { send: m, recv: m },
            ));
            t += 500;
        }
    }
    events.push(ev(t, t, None, What::StageBegin));
    t += compute_ns;
    events.push(ev(t, t, None, What::StageEnd));
    events.push(ev(
        t,
        t + 100,
        Some(Op::Allreduce),
        What::Collective {
            root: -1,
            bytes: 8,
            comm_size: p,
        },
    ));
    t += 100;
    RankTrace {
        rank,
        world_size: p,
        pid: 1,
        host: String::new(),
        files: vec![],
        iterations: vec![Iteration {
            index: 3,
            duration_ns: t + 1000,
            events,
        }],
    }
}

/// A `neighbour1d` declaration of `sum(dist)` rows recorded under `dist`.
pub fn app(dist: Vec<u64>) -> AppDecl {
    let rows = dist.iter().sum();
    AppDecl::new("test", rows, dist)
}
