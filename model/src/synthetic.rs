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

/// A profile of `p` ranks, `per_host` to a host, written by kind of pair
/// ([`ClusterProfile::unlisted`]) with no pair listed: the costs above
/// between ranks of one host, ten times their latency and per-byte cost
/// between hosts. How a profile of thousands of ranks is written.
pub fn profile_by_host(p: u32, per_host: u32) -> ClusterProfile {
    let hosts = (0..p)
        .map(|r| format!("n{}", r / per_host.max(1)))
        .collect();
    let mut prof = ClusterProfile::new(p, hosts, "synthetic");
    prof.unlisted = Some(mheta_profile::UnlistedPairs {
        same_host: Some(PairCost::logp(0, 0, L, G, OS, OR)),
        other_host: Some(PairCost::logp(0, 0, 10.0 * L, 10.0 * G, OS, OR)),
    });
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
    reduce_and_close(rank, p, events, t)
}

/// End a synthetic iteration at `t` with an 8-byte reduction over all `p`
/// ranks, and wrap it as rank `rank`'s trace.
fn reduce_and_close(rank: u32, p: u32, mut events: Vec<Event>, t: u64) -> RankTrace {
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
    close(rank, p, events, t + 100)
}

/// Wrap a synthetic iteration that ends at `t` as rank `rank`'s trace.
fn close(rank: u32, p: u32, events: Vec<Event>, t: u64) -> RankTrace {
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

/// A generated heterogeneous cluster of `p` ranks running a Jacobi-like
/// code on `rows_per_rank * p` rows, for the search-quality study: CPU
/// power in [0.2, 1] (compute per row of 10 us / power), memory budgets that
/// put about a third of the ranks out of core at Block, disk factors in
/// [1, 8] (reads and writes of 100 us + factor ns/byte), all recorded as one
/// instrumented iteration under Block. Returns the traces and the
/// declaration (the profile is [`profile`]).
pub fn hetero_cluster(seed: u64, p: u32, rows_per_rank: u64) -> (Vec<RankTrace>, AppDecl) {
    use crate::ooc::{Need, plan};
    use mheta_trace::{ArrayDecl, MemoryDecl};
    let mut rng = crate::search::Rng::new(seed);
    let row_bytes = 8 * 1026u64;
    let power: Vec<f64> = (0..p).map(|_| 0.2 + 0.8 * rng.unit()).collect();
    let factor: Vec<f64> = (0..p).map(|_| 1.0 + 7.0 * rng.unit()).collect();
    // Budgets: a third of the ranks hold 30-80% of a Block share of u.
    let budget: Vec<Option<u64>> = (0..p)
        .map(|_| {
            (rng.unit() < 0.34).then(|| {
                (row_bytes as f64 * rows_per_rank as f64 * (0.3 + 0.5 * rng.unit())) as u64
            })
        })
        .collect();
    let dist = vec![rows_per_rank; p as usize];
    let mut decl = app(dist);
    decl.arrays = vec![ArrayDecl::rows("u", row_bytes, false, true).with_halo()];
    decl.memory = Some(MemoryDecl {
        budget: budget.clone(),
        fixed_bytes: 0,
        fixed_per_row: 0,
        prefetch: false,
    });
    let mut traces = Vec::new();
    for r in 0..p {
        let mut t = jacobi_trace(
            r,
            p,
            (10_000.0 / power[r as usize]) as u64 * rows_per_rank,
            8 * 1026,
        );
        let need = [Need::fixed(
            "u",
            rows_per_rank as usize,
            row_bytes as usize,
            false,
            true,
        )];
        let pl = plan(budget[r as usize], 0, &need, false).expect("budget holds a row");
        if pl.out_of_core[0] {
            insert_sweep(&mut t, &pl, row_bytes, factor[r as usize]);
            t.files = vec![format!("/scratch/u.{r:05}")];
        }
        traces.push(t);
    }
    (traces, decl)
}

/// Insert an out-of-core sweep's reads and writes (per piece of `plan`,
/// a 4 KiB read, the piece's read and its write, each 100 us plus
/// `factor` ns a byte) inside the stage of `t`'s first iteration, after
/// shifting the events that follow it.
fn insert_sweep(t: &mut RankTrace, plan: &crate::ooc::MemPlan, row_bytes: u64, factor: f64) {
    let it = &mut t.iterations[0];
    let begin = it
        .events
        .iter()
        .position(|e| matches!(e.what, What::StageBegin))
        .expect("stage");
    let t0 = it.events[begin].t1_ns;
    let mut io = Vec::new();
    let mut at = t0;
    for piece in &plan.pieces {
        let b = piece.len() as u64 * row_bytes;
        for (write, bytes) in [(false, 4096u64), (false, b), (true, b)] {
            let d = 100_000 + (factor * bytes as f64) as u64;
            let what = if write {
                What::FileWrite {
                    file: 0,
                    bytes,
                    at: true,
                    collective: false,
                }
            } else {
                What::FileRead {
                    file: 0,
                    bytes,
                    at: true,
                    collective: false,
                }
            };
            io.push(ev(at, at + d, Some(Op::File_read_at), what));
            at += d;
        }
    }
    let shift = at - t0;
    for e in &mut it.events[begin + 1..] {
        e.t0_ns += shift;
        e.t1_ns += shift;
    }
    it.duration_ns += shift;
    it.events.splice(begin + 1..begin + 1, io);
}

/// A pipelined iteration of `tiles` tiles: rank r waits for each tile
/// from rank r-1, computes it (`compute_ns` per tile) and passes its last
/// row to rank r+1 (MHETA eq. 4), then a reduction.
pub fn pipeline_trace(rank: u32, p: u32, tiles: u32, compute_ns: u64, bytes: u64) -> RankTrace {
    let (events, t) = tiles_of(rank, p, tiles, compute_ns, bytes);
    reduce_and_close(rank, p, events, t)
}

/// The same pipeline without the reduction, like the wavefront kernel:
/// iterations overlap, so the model replays two ([`crate::Model::predict`]).
pub fn wavefront_trace(rank: u32, p: u32, tiles: u32, compute_ns: u64, bytes: u64) -> RankTrace {
    let (events, t) = tiles_of(rank, p, tiles, compute_ns, bytes);
    close(rank, p, events, t)
}

/// The tiles of a pipelined iteration, and when they end.
fn tiles_of(rank: u32, p: u32, tiles: u32, compute_ns: u64, bytes: u64) -> (Vec<Event>, u64) {
    let mut events = Vec::new();
    let mut t = 1000;
    for j in 0..tiles as i32 {
        let m = |peer| Msg {
            peer,
            tag: j,
            bytes,
        };
        if rank > 0 {
            events.push(ev(
                t,
                t + 200,
                Some(Op::Recv),
                What::Recv(m(rank as i32 - 1)),
            ));
            t += 200;
        }
        events.push(ev(t, t, None, What::StageBegin));
        t += compute_ns;
        events.push(ev(t, t, None, What::StageEnd));
        if rank + 1 < p {
            events.push(ev(
                t,
                t + 200,
                Some(Op::Send),
                What::Send(m(rank as i32 + 1)),
            ));
            t += 200;
        }
    }
    (events, t)
}

/// `p` ranks' traces and declaration grown from a recording at fewer
/// ranks of a code on 1-D GEN_BLOCK rows whose ranks talk to neighbours
/// at fixed offsets (every kernel in `apps/`): rank 0 and rank p - 1 copy
/// the recording's first and last ranks, every rank between them copies
/// recorded rank 1 (an interior rank), with each point-to-point peer
/// moved by the rank's offset from the rank it copies, each collective
/// over the recorded world made one over p ranks, and every gap between
/// calls stretched by `slow(r)` (the heterogeneity). Each rank holds the
/// rows of the rank it copies, with their work. How the planning bench
/// gets the kernels at thousands of ranks from real recordings.
///
/// A recording in which a rank sends to or receives from a rank beyond
/// its neighbours (mg's coarse levels, gathered onto fewer ranks) is not
/// such a code: the error says which rank talked to which.
///
/// # Panics
/// With fewer than 3 recorded ranks, or fewer than 3 asked for.
pub fn grown(
    recorded: &[RankTrace],
    decl: &AppDecl,
    p: u32,
    slow: impl Fn(u32) -> f64,
) -> Result<(Vec<RankTrace>, AppDecl), String> {
    let n = recorded.len() as u32;
    assert!(
        n >= 3 && p >= 3,
        "growing needs 3 recorded ranks and 3 asked for"
    );
    for t in recorded {
        for e in t.iterations.iter().flat_map(|i| &i.events) {
            let mut far = None;
            e.what.clone().peers_mut(|&mut peer| {
                if peer >= 0 && (peer - t.rank as i32).abs() > 1 {
                    far = Some(peer)
                }
            });
            if let Some(peer) = far {
                return Err(format!(
                    "rank {} talks to rank {peer}, beyond its neighbours",
                    t.rank
                ));
            }
        }
    }
    let copies = |r: u32| match r {
        0 => 0,
        r if r == p - 1 => n - 1,
        _ => 1,
    };
    let traces =
        (0..p)
            .map(|r| {
                let from = copies(r);
                let mut t = recorded[from as usize].clone();
                let shift = r as i32 - from as i32;
                t.rank = r;
                t.world_size = p;
                for it in &mut t.iterations {
                    stretch(it, slow(r));
                    for e in &mut it.events {
                        e.what.peers_mut(|peer| {
                            if *peer >= 0 {
                                *peer += shift
                            }
                        });
                        if let What::Collective { comm_size, .. }
                        | What::ICollective { comm_size, .. } = &mut e.what
                            && *comm_size == n
                        {
                            *comm_size = p;
                        }
                        if let What::Start(started) = &mut e.what {
                            for s in started {
                                if let mheta_trace::Started::Collective { comm_size, .. } = s
                                    && *comm_size == n
                                {
                                    *comm_size = p;
                                }
                            }
                        }
                    }
                }
                t
            })
            .collect();
    let mut d = decl.clone();
    d.dist = (0..p).map(|r| decl.dist[copies(r) as usize]).collect();
    d.rows = d.dist.iter().sum();
    if let Some(w) = &decl.work_per_row {
        let starts = crate::Dist(decl.dist.clone()).offsets();
        d.work_per_row = Some(
            (0..p)
                .flat_map(|r| {
                    let c = copies(r) as usize;
                    let at = starts[c] as usize;
                    w[at..at + decl.dist[c] as usize].iter().copied()
                })
                .collect(),
        );
    }
    if let Some(m) = &mut d.memory {
        let budget = m.budget.clone();
        m.budget = (0..p)
            .map(|r| budget.get(copies(r) as usize).copied().flatten())
            .collect();
    }
    Ok((traces, d))
}

/// Stretch every gap between one iteration's calls by `factor`, keeping
/// the calls' own durations.
fn stretch(it: &mut Iteration, factor: f64) {
    let (mut last_end, mut added) = (0u64, 0f64);
    for e in &mut it.events {
        let gap = e.t0_ns.saturating_sub(last_end);
        last_end = e.t1_ns;
        added += gap as f64 * (factor - 1.0);
        let by = added.round() as i64;
        e.t0_ns = e.t0_ns.saturating_add_signed(by);
        e.t1_ns = e.t1_ns.saturating_add_signed(by);
    }
    let tail = it.duration_ns.saturating_sub(last_end);
    added += tail as f64 * (factor - 1.0);
    it.duration_ns = it.duration_ns.saturating_add_signed(added.round() as i64);
}
