//! The reuse term in the model (`model/src/reuse.rs`): rows recorded in a
//! long iteration cost less in a shorter one, by the node's measured
//! curve, in `Model::predict` and the evaluator alike; no term for a run
//! timed by the clock, an app without arrays, or a profile without curves.

use mheta_model::synthetic::{app, ev, jacobi_trace, profile};
use mheta_model::{Dist, Model};
use mheta_profile::{ClusterProfile, ReusePoint, SampleStats};
use mheta_trace::{AppDecl, ArrayDecl, RankTrace, StageAccess, What};

const ROW_BYTES: u64 = 32 << 10;
const BASE: f64 = 1e-10;

/// Working sets of 1 and 4 MiB: a byte costs 1, 1.5 and 2 times its cost
/// right after a sweep when last touched 5, 20 and 50 ms ago (4 MiB: 1.2
/// times 1 MiB's throughout).
fn points() -> Vec<ReusePoint> {
    let mut v = Vec::new();
    for (ws, scale) in [(1u64 << 20, 1.0), (4 << 20, 1.2)] {
        for (t, rel) in [(0.005, 1.0), (0.020, 1.5), (0.050, 2.0)] {
            v.push(ReusePoint {
                ws_bytes: ws,
                reuse_s: t,
                per_byte: SampleStats::point(BASE * scale * rel),
                rel,
                rel_ci95: [rel, rel],
            });
        }
    }
    v
}

/// The curve by hand: linear in time between the points, 2 MiB halfway
/// in log2 between 1 and 4 MiB.
fn by_hand(ws: f64, t: f64) -> f64 {
    let rel = if t <= 0.020 {
        1.0 + 0.5 * ((t - 0.005) / 0.015).max(0.0)
    } else {
        1.5 + 0.5 * ((t - 0.020) / 0.030).min(1.0)
    };
    let a = ((ws.log2() - 20.0) / 2.0).clamp(0.0, 1.0);
    BASE * rel * (1.0 + 0.2 * a)
}

fn traces() -> Vec<RankTrace> {
    // Rank 1 four times slower a row, both on 64 rows.
    vec![
        jacobi_trace(0, 2, 10_000_000, ROW_BYTES),
        jacobi_trace(1, 2, 40_000_000, ROW_BYTES),
    ]
}

fn decl() -> AppDecl {
    let mut a = app(vec![64, 64]);
    a.arrays = vec![ArrayDecl::rows("u", ROW_BYTES, false, false)];
    a
}

/// The curve on both ranks' nodes, each on the host `hosts` names and
/// the machine `machines` names (None: not recorded).
fn curved_on(hosts: [&str; 2], machines: Option<[u32; 2]>) -> ClusterProfile {
    let mut prof = profile(2);
    prof.hosts = hosts.map(String::from).to_vec();
    for r in 0..2 {
        let n = mheta_profile::NodeCost {
            reuse_by: points(),
            machine: machines.map(|m| m[r as usize]),
            ..mheta_profile::NodeCost::bare(r, hosts[r as usize])
        };
        prof.nodes.push(n);
    }
    prof
}

/// Both ranks on one host.
fn curved() -> ClusterProfile {
    curved_on(["", ""], None)
}

#[test]
fn rows_recorded_in_a_long_iteration_cost_less_in_a_shorter_one() {
    // A rank's working set is its machine's bytes: on one host, on two
    // hosts of one machine (emulated hosts), and on two machines; a
    // profile that records no machine takes the host.
    for (hosts, machines, apart) in [
        (["", ""], None, false),
        (["a", "b"], None, true),
        (["a", "b"], Some([0, 0]), false),
        (["a", "a"], Some([0, 1]), true),
    ] {
        let prof = curved_on(hosts, machines);
        let m = Model::new(&traces(), decl(), &prof).unwrap();
        assert!(m.has_reuse());
        let flat = m.clone().without_reuse();
        assert!(!flat.has_reuse());
        // At the recorded distribution the period is the recorded one's: the
        // rows cost as recorded (up to the replay's own period against the
        // measured one).
        let block = Dist(vec![64, 64]);
        let (a, b) = (m.predict(&block).unwrap(), flat.predict(&block).unwrap());
        let r = a.per_iteration_s / b.per_iteration_s;
        assert!((r - 1.0).abs() < 0.02, "{r}");
        // Balanced for the recorded rows: about 16 ms at k = 1, and rows
        // cheaper in the shorter iteration.
        let split = Dist(vec![102, 26]);
        let (p, q) = (m.predict(&split).unwrap(), flat.predict(&split).unwrap());
        assert!(
            p.per_iteration_s < 0.85 * q.per_iteration_s,
            "{} vs {}",
            p.per_iteration_s,
            q.per_iteration_s
        );
        // Each rank's compute scaled by r(w', T) / r(w, T_rec) at the period
        // the prediction settled on (eq. R1), T_rec the recorded
        // distribution's iteration without the term, w its host's bytes (on
        // one host both ranks', always 128 rows); without `stage_access` a
        // rank sweeps all its bytes once an iteration.
        let t_rec = b.per_iteration_s;
        for (i, &rows) in split.0.iter().enumerate() {
            let (now, then) = if apart { (rows, 64) } else { (128, 128) };
            let k = by_hand((now * ROW_BYTES) as f64, p.per_iteration_s)
                / by_hand((then * ROW_BYTES) as f64, t_rec);
            let got = p.ranks[i].compute_s / q.ranks[i].compute_s;
            assert!(
                (got / k - 1.0).abs() < 0.03,
                "rank {i} (apart: {apart}): {got} vs {k}"
            );
        }
        // The evaluator a search uses gives the same prediction.
        let e = m.evaluator();
        for _ in 0..2 {
            let x = e.predict(&split).unwrap().per_iteration_s;
            assert!((x / p.per_iteration_s - 1.0).abs() < 1e-9, "{x}");
        }
    }
}

#[test]
fn no_reuse_term_under_the_clock_without_arrays_or_without_curves() {
    let mut clocked = decl();
    clocked.cpu_clock = true;
    let split = Dist(vec![102, 26]);
    let flat = Model::new(&traces(), decl(), &profile(2)).unwrap();
    assert!(!flat.has_reuse());
    for a in [clocked, app(vec![64, 64])] {
        let m = Model::new(&traces(), a, &curved()).unwrap();
        assert!(!m.has_reuse());
        assert_eq!(
            m.predict(&split).unwrap().per_iteration_s,
            flat.predict(&split).unwrap().per_iteration_s
        );
    }
}

/// `t` with its one stage cut into `n` equal ones: `n` sweeps an
/// iteration.
fn cut(mut t: RankTrace, n: u64) -> RankTrace {
    for it in &mut t.iterations {
        let is = |w: fn(&What) -> bool| it.events.iter().position(|e| w(&e.what)).expect("a stage");
        let b = is(|w| matches!(w, What::StageBegin));
        let e = is(|w| matches!(w, What::StageEnd));
        let (t0, t1) = (it.events[b].t1_ns, it.events[e].t0_ns);
        for j in (1..n).rev() {
            let at = t0 + (t1 - t0) * j / n;
            it.events.insert(e, ev(at, at, None, What::StageBegin));
            it.events.insert(e, ev(at, at, None, What::StageEnd));
        }
    }
    t
}

#[test]
fn each_stage_finds_its_arrays_as_old_as_the_last_stage_that_swept_them() {
    // Four equal stages that sweep "u": the first finds it swept at the
    // last one's beginning in the previous iteration, the others at the
    // stage before theirs (eq. R3).
    let traces: Vec<RankTrace> = traces().into_iter().map(|t| cut(t, 4)).collect();
    let mut a = decl();
    a.arrays = vec![ArrayDecl::rows("u", ROW_BYTES, false, true)];
    let file = a.arrays[0].file.clone().unwrap();
    let touch = StageAccess {
        file,
        read: true,
        write: true,
    };
    a.stage_access = Some(vec![vec![touch]; 4]);
    let m = Model::new(&traces, a, &curved()).unwrap();
    let flat = m.clone().without_reuse();
    let block = Dist(vec![64, 64]);
    let t_rec = flat.predict(&block).unwrap().per_iteration_s;
    let split = Dist(vec![102, 26]);
    let (p, q) = (m.predict(&split).unwrap(), flat.predict(&split).unwrap());
    // Both ranks on one host: each sweeps the host's 128 rows.
    let (t, rec) = (p.per_iteration_s, (128 * ROW_BYTES) as f64);
    for i in 0..2 {
        let prog = &m.programs[i];
        let b = &prog.stage_begin_s;
        let it = prog.measured_s;
        let ages = [b[0] + it - b[3], b[1] - b[0], b[2] - b[1], b[3] - b[2]].map(|x| x / it);
        let ws = rec;
        let k: f64 = (ages.iter())
            .map(|f| 0.25 * by_hand(ws, f * t) / by_hand(rec, f * t_rec))
            .sum();
        let once = by_hand(ws, t) / by_hand(rec, t_rec);
        let got = p.ranks[i].compute_s / q.ranks[i].compute_s;
        assert!(
            (got / k - 1.0).abs() < 0.02,
            "rank {i}: {got} vs {k} ({ages:?})"
        );
        assert!(
            (got / once - 1.0).abs() > 0.05,
            "rank {i}: {got} vs one sweep's {once}"
        );
    }
    // The evaluator agrees.
    let x = m.evaluator().predict(&split).unwrap().per_iteration_s;
    assert!((x / p.per_iteration_s - 1.0).abs() < 1e-9, "{x}");
}
