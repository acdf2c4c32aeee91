use super::*;
use crate::curve::RowCurve;
use crate::search::Rng;
use crate::synthetic::{
    app, ev, hetero_cluster, jacobi_trace, pipeline_trace, profile, profile_by_host,
    wavefront_trace,
};
use mheta_trace::{Op as TraceOp, What};

/// A CG-like iteration: jacobi's, then two all-gathers of a vector
/// (`op`: `MPI_Iallgatherv`, libnbc's linear one, or a blocking
/// `MPI_Allgatherv`): one of 8 B a row (rows `rows` a rank when
/// recorded, so its blocks follow the rows), and one whose blocks do not
/// (8 B times the rank + 1).
fn gather_trace(
    rank: u32,
    p: u32,
    compute_ns: u64,
    rows: u64,
    op: TraceOp,
) -> mheta_trace::RankTrace {
    let mut t = jacobi_trace(rank, p, compute_ns, 8 * 1026);
    let events = &mut t.iterations[0].events;
    let mut at = events.last().map_or(0, |e| e.t1_ns);
    for bytes in [8 * rows, 8 * (rank as u64 + 1)] {
        let what = What::Collective {
            root: -1,
            bytes,
            comm_size: p,
        };
        events.push(ev(at, at + 300, Some(op), what));
        at += 300;
    }
    t.iterations[0].duration_ns = at + 1000;
    t
}

/// Distributions of `n` rows over `p` ranks: Block, random ones, and
/// random ones with some ranks at 0 rows.
fn dists(p: usize, n: u64, seed: u64) -> Vec<Dist> {
    let mut rng = Rng::new(seed);
    let mut out = vec![Dist::block(p, n)];
    for zeros in [false, false, false, true, true] {
        let w: Vec<f64> = (0..p)
            .map(|_| {
                if zeros && rng.unit() < 0.3 {
                    0.0
                } else {
                    0.2 + rng.unit()
                }
            })
            .collect();
        let total: f64 = w.iter().sum();
        let mut rows: Vec<u64> = w.iter().map(|x| (x / total * n as f64) as u64).collect();
        let short = n - rows.iter().sum::<u64>();
        let last = (0..p)
            .rev()
            .find(|&i| rows[i] > 0 || !zeros)
            .unwrap_or(p - 1);
        rows[last] += short;
        out.push(Dist(rows));
    }
    out
}

fn models(p: u32) -> Vec<(&'static str, Model)> {
    let rows = 64u64;
    let jacobi = {
        let traces: Vec<_> = (0..p)
            .map(|r| jacobi_trace(r, p, 1_000_000 + (r as u64 * 7919 % 13) * 150_000, 8 * 1026))
            .collect();
        Model::new(&traces, app(vec![rows; p as usize]), &profile(p)).expect("model")
    };
    let curves = (0..p as usize)
        .map(|r| {
            let knots = [0.5, 1.0, 1.5]
                .iter()
                .map(|f| ((f * rows as f64) as u64, 0.9 + 0.1 * f))
                .collect();
            RowCurve::new(r, knots).expect("curve")
        })
        .collect();
    let tiled = |trace: fn(u32, u32, u32, u64, u64) -> mheta_trace::RankTrace| {
        let traces: Vec<_> = (0..p)
            .map(|r| trace(r, p, 8, 100_000 + (r as u64 % 5) * 20_000, 8 * 128))
            .collect();
        let mut decl = app(vec![rows; p as usize]);
        decl.tiles = Some(8);
        Model::new(&traces, decl, &profile(p)).expect("model")
    };
    // Halos that scale with the sender's rows, across an eager limit
    // of 64 KB: a rank with more rows than recorded sends them in
    // rendezvous, and waits for its receiver.
    let scaled = {
        let traces: Vec<_> = (0..p)
            .map(|r| jacobi_trace(r, p, 1_000_000 + (r as u64 % 3) * 400_000, 60_000))
            .collect();
        let mut decl = app(vec![rows; p as usize]);
        decl.msg_scaling = MsgScaling::SenderRows;
        let mut prof = profile(p);
        for c in &mut prof.pairs {
            c.eager_limit_bytes = Some(64_000);
        }
        Model::new(&traces, decl, &with_sends(prof)).expect("model")
    };
    let eager = {
        let traces: Vec<_> = (0..p)
            .map(|r| jacobi_trace(r, p, 1_000_000 + (r as u64 % 3) * 400_000, 100_000))
            .collect();
        let mut prof = profile(p);
        for c in &mut prof.pairs {
            c.eager_limit_bytes = Some(64_000);
        }
        Model::new(&traces, app(vec![rows; p as usize]), &prof).expect("model")
    };
    let exchanges = Model::new(
        &(0..p)
            .map(|r| {
                stage_first(jacobi_trace(
                    r,
                    p,
                    1_000_000 + (r as u64 * 7919 % 13) * 150_000,
                    8 * 1026,
                ))
            })
            .collect::<Vec<_>>(),
        app(vec![rows; p as usize]),
        &with_sends(with_exchanges(profile(p))),
    )
    .expect("model");
    let gather = |prof: mheta_profile::ClusterProfile, op: TraceOp| {
        let traces: Vec<_> = (0..p)
            .map(|r| gather_trace(r, p, 1_000_000 + (r as u64 % 4) * 300_000, rows, op))
            .collect();
        Model::new(&traces, app(vec![rows; p as usize]), &prof).expect("model")
    };
    vec![
        ("jacobi", jacobi.clone()),
        ("all-gather", gather(profile(p), TraceOp::Iallgatherv)),
        (
            "all-gather by host",
            gather(profile_by_host(p, 2), TraceOp::Iallgatherv),
        ),
        (
            "blocking all-gather",
            gather(profile(p), TraceOp::Allgatherv),
        ),
        ("curve", jacobi.with_row_curves(curves).expect("curves")),
        ("io", {
            let (traces, decl) = hetero_cluster(7, p, rows);
            Model::new(&traces, decl, &profile(p)).expect("model")
        }),
        ("pipeline", tiled(pipeline_trace)),
        ("wavefront", tiled(wavefront_trace)),
        ("scaled", scaled),
        ("rendezvous", eager),
        ("exchanges", exchanges),
    ]
}

/// `prof` with every pair's sends measured by size (LogGP's o(m)):
/// twice o_s at 1 KB, 20 us at 16 KB and 60 us at 64 000 B.
fn with_sends(mut prof: mheta_profile::ClusterProfile) -> mheta_profile::ClusterProfile {
    for c in &mut prof.pairs {
        let o_s = c.o_send_s;
        c.send_by_size = [(1024u64, 2.0 * o_s), (16384, 20e-6), (64_000, 60e-6)]
            .map(|(bytes, o)| mheta_profile::SendPoint {
                bytes,
                o_send_s: o,
                o_send: mheta_profile::SampleStats::point(o),
            })
            .to_vec();
    }
    prof
}

/// `prof` with every pair's exchanges measured: 5 us over its one-way
/// fit back to back, 40 us after 1 ms away from MPI and 90 us after 4 ms
/// at 1 KB, twice that at 64 KB.
fn with_exchanges(mut prof: mheta_profile::ClusterProfile) -> mheta_profile::ClusterProfile {
    for c in &mut prof.pairs {
        let mut pts = Vec::new();
        for (gap_s, over) in [(0.0, 5e-6), (1e-3, 40e-6), (4e-3, 90e-6)] {
            for (bytes, k) in [(1024u64, 1.0), (65536, 2.0)] {
                pts.push(mheta_profile::ExchangePoint {
                    gap_s,
                    bytes,
                    one_way: mheta_profile::SampleStats::point(
                        c.one_way_s(bytes as f64) + k * over,
                    ),
                });
            }
        }
        c.exchange = pts;
    }
    prof
}

/// Jacobi's iteration with its stage first and its halo exchanges after
/// it, before the all-reduce.
fn stage_first(mut t: mheta_trace::RankTrace) -> mheta_trace::RankTrace {
    let it = &mut t.iterations[0];
    let (mut stage, mut rest): (Vec<_>, Vec<_>) =
        (it.events.drain(..)).partition(|e| matches!(e.what, What::StageBegin | What::StageEnd));
    let (halos, reduce): (Vec<_>, Vec<_>) = rest
        .drain(..)
        .partition(|e| matches!(e.what, What::Sendrecv { .. }));
    let mut at = 1000;
    let c = stage[1].t1_ns - stage[0].t0_ns;
    stage[0].t0_ns = at;
    stage[0].t1_ns = at;
    at += c;
    stage[1].t0_ns = at;
    stage[1].t1_ns = at;
    let mut events = stage;
    for mut e in halos.into_iter().chain(reduce) {
        let d = e.t1_ns - e.t0_ns;
        (e.t0_ns, e.t1_ns) = (at, at + d);
        at += d;
        events.push(e);
    }
    it.events = events;
    it.duration_ns = at + 1000;
    t
}

#[test]
fn a_halo_exchange_after_a_stage_costs_what_its_pair_measured() {
    // Jacobi's halos (8 KB) go after each rank's 1 ms stage: the first
    // side of each rank's exchanges costs the plain transfer and about
    // 44 us more (1 ms away from MPI), the second about 6 us.
    let p = 4u32;
    let traces: Vec<_> = (0..p)
        .map(|r| stage_first(jacobi_trace(r, p, 1_000_000, 8 * 1026)))
        .collect();
    let plain = Model::new(&traces, app(vec![16; 4]), &profile(p)).expect("model");
    let exch = Model::new(&traces, app(vec![16; 4]), &with_exchanges(profile(p))).expect("model");
    let d = Dist::block(4, 64);
    let (a, b) = (
        plain.predict(&d).expect("plain").per_iteration_s,
        exch.predict(&d).expect("exchanges").per_iteration_s,
    );
    assert!(b > a + 30e-6 && b < a + 110e-6, "{a} against {b}");
    // Rank 3 with 52 rows computes 3.25 ms: its send's excess grows
    // toward the 4 ms point's.
    let d2 = Dist(vec![4, 4, 4, 52]);
    let (a2, b2) = (
        plain.predict(&d2).expect("plain").per_iteration_s,
        exch.predict(&d2).expect("exchanges").per_iteration_s,
    );
    assert!(b2 - a2 > b - a + 15e-6, "{} against {}", b2 - a2, b - a);
}

#[test]
fn the_critical_path_runs_through_the_last_arrivers_work() {
    // Four ranks exchange halos, compute 1, 1, 3 and 1 ms, and
    // all-reduce: the iteration waits for rank 2's computation alone.
    let traces: Vec<_> = (0..4u32)
        .map(|r| jacobi_trace(r, 4, if r == 2 { 3_000_000 } else { 1_000_000 }, 8192))
        .collect();
    let m = Model::new(&traces, app(vec![16; 4]), &profile(4)).expect("model");
    let ev = m.evaluator();
    let d = Dist::block(4, 64);
    assert_eq!(ev.critical(&d).expect("ok"), None, "not compiled yet");
    ev.predict(&d).expect("predict");
    let on = ev.critical(&d).expect("ok");
    assert_eq!(on, Some(vec![false, false, true, false]));
    // With rank 2 at a third of its rows, rank 3 (which took them) is
    // the last.
    let d = Dist(vec![16, 16, 5, 27]);
    ev.predict(&d).expect("predict");
    assert_eq!(
        ev.critical(&d).expect("ok"),
        Some(vec![false, false, false, true])
    );
}

#[test]
fn compiled_equals_interpreted() {
    for p in [2u32, 5, 16] {
        for (name, m) in models(p) {
            let ev = m.evaluator();
            assert!(!ev.interpret_only, "{name}");
            let mut evals = 0;
            for _ in 0..2 {
                for d in dists(p as usize, m.rows(), 11 + p as u64) {
                    let want = m.predict(&d);
                    // The second of two in a row runs compiled.
                    for _ in 0..2 {
                        let got = ev.predict(&d);
                        match (&want, &got) {
                            (Ok(w), Ok(g)) => assert_eq!(w, g, "{name} P={p} {d:?}"),
                            (Err(w), Err(g)) => assert_eq!(w.to_string(), g.to_string()),
                            _ => panic!("{name} P={p} {d:?}: {want:?} against {got:?}"),
                        }
                        evals += 1;
                    }
                }
            }
            let fast = ev.compiled_evaluations();
            assert!(
                fast >= evals / 2,
                "{name} P={p}: {fast} of {evals} compiled"
            );
            eprintln!("{name} P={p}: {fast} of {evals} compiled");
        }
    }
}

#[test]
fn an_evaluators_cost_line_is_the_models() {
    for p in [2u32, 5, 16] {
        for (name, m) in models(p) {
            let ev = m.evaluator();
            let n = m.rows();
            for i in 0..p as usize {
                let had = m.app.dist[i];
                for rows in [0, 1, had / 2, had, had + 7, 3 * had, n / 2, n] {
                    let (want, got) = (m.rank_cost(i, rows), ev.rank_cost(i, rows));
                    assert_eq!(
                        want.to_bits(),
                        got.to_bits(),
                        "{name} P={p} rank {i} {rows} rows"
                    );
                }
            }
        }
    }
}
