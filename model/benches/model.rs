//! How fast the model evaluates a distribution and what a whole GBS search
//! costs, on synthetic traces of P ranks (the MHETA paper reports 5.4 ms
//! per distribution): a Jacobi-like iteration (exchange, stage,
//! reduction), the same with out-of-core I/O on a third of the ranks
//! (eqs. 1-2 and the out-of-core rule in every evaluation), and a
//! pipeline of 8 tiles (eq. 4), and the same pipeline without the
//! reduction ("wavefront": iterations overlap, so every evaluation replays
//! two); "jac+curve" is the Jacobi-like one with a row-cost curve of seven
//! knots per rank ([`mheta_model::curve`]), and "jac+reuse" the same
//! with a reuse curve on every node (six working sets, five times since
//! the last sweep: [`mheta_model::reuse`], two replays an evaluation).
//! Each evaluation is of a distribution off the recorded one (every even
//! rank an eighth more rows than Block, every odd rank as many fewer),
//! where the reuse term's second replay runs; it is timed
//! twice, batch for batch: `predict` interprets the replay
//! (`Model::predict`), `compiled` runs it compiled, as every search does
//! (`Model::evaluator`; the same answer, which the bench checks). Then the
//! cost against P up to 16384 ranks on profiles written by kind of pair
//! ([`scale`]). Run: `cargo bench -p mheta-model --bench model`. Times are
//! medians of 15 batches measured in this run unless a table says
//! otherwise.

use mheta_model::curve::RowCurve;
use mheta_model::synthetic::{
    app, hetero_cluster, jacobi_trace, pipeline_trace, profile, profile_by_host, wavefront_trace,
};
use mheta_model::{Dist, Model, search};
use std::hint::black_box;
use std::time::Instant;

fn main() {
    println!(
        "{:<10} {:>6} {:>8} {:>14} {:>14} {:>11} {:>10} {:>10}",
        "trace",
        "ranks",
        "rows",
        "predict (us)",
        "compiled (us)",
        "gbs (ms)",
        "gbs evals",
        "gbs/block"
    );
    for p in [8u32, 64, 256, 1024] {
        let rows_per = 64u64;
        let rows = rows_per * p as u64;
        let tiled = |trace: fn(u32, u32, u32, u64, u64) -> mheta_trace::RankTrace| {
            let traces: Vec<_> = (0..p)
                .map(|r| trace(r, p, 8, 100_000 + (r as u64 % 5) * 20_000, 8 * 128))
                .collect();
            let mut decl = app(vec![rows_per; p as usize]);
            decl.tiles = Some(8);
            Model::new(&traces, decl, &profile(p)).expect("model")
        };
        // Per-row costs spread over 1x..3x.
        let jacobi = {
            let traces: Vec<_> = (0..p)
                .map(|r| jacobi_trace(r, p, 1_000_000 + (r as u64 * 7919 % 13) * 150_000, 8 * 1026))
                .collect();
            Model::new(&traces, app(vec![rows_per; p as usize]), &profile(p)).expect("model")
        };
        // The same with a row-cost curve per rank: seven knots from 0.25
        // to 1.75 of its rows, as `mheta experiment --row-curve` measures.
        let curves = (0..p as usize)
            .map(|r| {
                let knots = [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75]
                    .iter()
                    .map(|f| ((f * rows_per as f64) as u64, 0.9 + 0.1 * f))
                    .collect();
                RowCurve::new(r, knots).expect("curve")
            })
            .collect();
        let reused = {
            let traces: Vec<_> = (0..p)
                .map(|r| jacobi_trace(r, p, 1_000_000 + (r as u64 * 7919 % 13) * 150_000, 8 * 1026))
                .collect();
            let mut decl = app(vec![rows_per; p as usize]);
            decl.arrays = vec![mheta_trace::ArrayDecl::rows("u", 8 * 1026, false, false)];
            let mut prof = profile(p);
            prof.nodes = (0..p).map(reuse_node).collect();
            Model::new(&traces, decl, &prof).expect("model")
        };
        assert!(reused.has_reuse());
        let kinds: [(&str, Model); 6] = [
            ("jacobi", jacobi.clone()),
            ("jac+reuse", reused),
            ("jac+curve", jacobi.with_row_curves(curves).expect("curves")),
            ("jacobi+io", {
                let (traces, decl) = hetero_cluster(42, p, rows_per);
                Model::new(&traces, decl, &profile(p)).expect("model")
            }),
            ("pipeline", tiled(pipeline_trace)),
            ("wavefront", tiled(wavefront_trace)),
        ];
        for (name, m) in &kinds {
            let mut d = Dist::block(p as usize, rows);
            let s = rows_per / 8;
            for (i, x) in d.0.iter_mut().enumerate() {
                *x = if i % 2 == 0 { *x + s } else { *x - s };
            }
            // Warm the out-of-core plan cache as a search would.
            m.predict(&d).expect("predict");
            let reps = (20_000 / p).max(10);
            let ev = m.evaluator();
            ev.predict(&d).expect("predict");
            // The interpreter and the compiled replay, batch by batch.
            let (mut per_eval, mut compiled): (Vec<f64>, Vec<f64>) = (0..15)
                .map(|_| {
                    let t = Instant::now();
                    for _ in 0..reps {
                        black_box(m.predict(black_box(&d)).expect("predict"));
                    }
                    let a = t.elapsed().as_secs_f64() / reps as f64;
                    let t = Instant::now();
                    for _ in 0..reps {
                        black_box(ev.predict(black_box(&d)).expect("predict"));
                    }
                    (a, t.elapsed().as_secs_f64() / reps as f64)
                })
                .unzip();
            assert_eq!(ev.predict(&d).ok(), m.predict(&d).ok(), "{name}");
            let mut gbs_t: Vec<f64> = (0..5)
                .map(|_| {
                    // A fresh model: no plans cached from earlier runs.
                    let m = m.clone();
                    let t = Instant::now();
                    black_box(search::gbs(&m).expect("gbs"));
                    t.elapsed().as_secs_f64()
                })
                .collect();
            let g = search::gbs(m).expect("gbs");
            let b = search::block(m).expect("block");
            println!(
                "{:<10} {:>6} {:>8} {:>14.2} {:>14.2} {:>11.3} {:>10} {:>10.3}",
                name,
                p,
                rows,
                mheta_base::median(&mut per_eval).expect("15 batches") * 1e6,
                mheta_base::median(&mut compiled).expect("15 batches") * 1e6,
                mheta_base::median(&mut gbs_t).expect("5 searches") * 1e3,
                g.evaluations,
                g.predicted_s / b.predicted_s
            );
        }
    }
    growth();
    moves();
    scale();
}

/// Planning against P up to 16384 ranks, 64 to a host, on profiles
/// written by kind of pair (`ClusterProfile::unlisted`; a full table
/// would be 268 million pairs at 16384): building the model from the
/// traces, one evaluation by the compiled replay as GBS runs it
/// ([`mheta_model::Evaluator`]; the fastest of 3 batches) and a whole GBS
/// on one thread and on every core (`search::gbs_on`, the same answer;
/// each the fastest of up to 3, interleaved, each on a fresh model), for
/// the Jacobi-like trace and for the same with out-of-core I/O on a third
/// of the ranks.
fn scale() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "{:>6} {:>10} | {:>12} {:>10} {:>10} | {:>12} {:>10} {:>10}  (64 ranks a host; profile by kind; gbs on 1 thread, on {cores})",
        "ranks",
        "build (ms)",
        "jacobi (us)",
        "gbs (ms)",
        "gbs/N (ms)",
        "+io (us)",
        "gbs (ms)",
        "gbs/N (ms)"
    );
    let mut last = Vec::new();
    for p in [256u32, 1024, 4096, 16384] {
        let prof = profile_by_host(p, 64);
        let t = Instant::now();
        let traces: Vec<_> = (0..p)
            .map(|r| jacobi_trace(r, p, 1_000_000 + (r as u64 * 7919 % 13) * 150_000, 8 * 1026))
            .collect();
        let jacobi = Model::new(&traces, app(vec![64; p as usize]), &prof).expect("model");
        let build = t.elapsed().as_secs_f64();
        let (traces, decl) = hetero_cluster(42, p, 64);
        let io = Model::new(&traces, decl, &prof).expect("model");
        let d = Dist::block(p as usize, 64 * p as u64);
        let mut cells = Vec::new();
        for m in [&jacobi, &io] {
            let ev = m.evaluator();
            ev.predict(&d).expect("predict");
            let reps = (20_000 / p as usize).max(3);
            let eval = (0..3)
                .map(|_| {
                    let t = Instant::now();
                    for _ in 0..reps {
                        black_box(ev.predict(black_box(&d)).expect("predict"));
                    }
                    t.elapsed().as_secs_f64() / reps as f64
                })
                .fold(f64::INFINITY, f64::min);
            let runs = if p >= 16384 { 1 } else { 3 };
            let gbs = |threads: usize| {
                let m = (*m).clone();
                let t = Instant::now();
                let f = black_box(search::gbs_on(&m, threads).expect("gbs"));
                (t.elapsed().as_secs_f64(), f)
            };
            let (mut one, mut many) = (f64::INFINITY, f64::INFINITY);
            for _ in 0..runs {
                let (a, fa) = gbs(1);
                let (b, fb) = gbs(cores);
                assert_eq!(fa.dist, fb.dist, "the same plan on {cores} threads");
                (one, many) = (one.min(a), many.min(b));
            }
            cells.push((eval, one, many));
        }
        println!(
            "{:>6} {:>10.1} | {:>12.1} {:>10.1} {:>10.1} | {:>12.1} {:>10.1} {:>10.1}",
            p,
            build * 1e3,
            cells[0].0 * 1e6,
            cells[0].1 * 1e3,
            cells[0].2 * 1e3,
            cells[1].0 * 1e6,
            cells[1].1 * 1e3,
            cells[1].2 * 1e3
        );
        last = cells;
    }
    println!(
        "# planning at 16384 ranks: one evaluation {:.1} ms, GBS {:.0} ms ({:.0} ms on {cores} threads); with I/O {:.1} ms and {:.0} ms ({:.0} ms)",
        last[0].0 * 1e3,
        last[0].1 * 1e3,
        last[0].2 * 1e3,
        last[1].0 * 1e3,
        last[1].1 * 1e3,
        last[1].2 * 1e3
    );
}

/// A move's predicted cost (`Model::move_cost`) at P = 256 and 1024, two
/// ways: every block's rows shifted toward rank 0 (each rank keeps its
/// rows in place) and toward the last rank (each receives in turn: one
/// chain of waits along all P ranks). Linear growth is 4.
fn moves() {
    let model = |p: u32| {
        let traces: Vec<_> = (0..p)
            .map(|r| jacobi_trace(r, p, 1_000_000, 8 * 1026))
            .collect();
        let mut decl = app(vec![64; p as usize]);
        decl.arrays = vec![mheta_trace::ArrayDecl::rows("u", 8 * 1026, false, false)];
        Model::new(&traces, decl, &profile(p)).expect("model")
    };
    let time = |m: &Model, from: &Dist, to: &Dist| {
        let reps = 20;
        let t = Instant::now();
        for _ in 0..reps {
            black_box(m.move_cost(black_box(from), black_box(to)));
        }
        t.elapsed().as_secs_f64() / reps as f64
    };
    let mut line = Vec::new();
    for p in [256u32, 1024] {
        let m = model(p);
        let from = Dist::block(p as usize, 64 * p as u64);
        let mut up = vec![64u64; p as usize];
        (up[0], up[p as usize - 1]) = (96, 32);
        let down: Vec<u64> = up.iter().rev().copied().collect();
        line.push((p, time(&m, &from, &Dist(up)), time(&m, &from, &Dist(down))));
    }
    for (p, up, down) in &line {
        println!(
            "move cost, P={p}: toward rank 0 {:.1} us, toward the last rank (a chain of {p}) {:.1} us",
            up * 1e6,
            down * 1e6
        );
    }
}

/// One evaluation at P = 1024 over one at P = 256, per trace, timed
/// interleaved (the fastest of 9 batches each): linear growth is 4, the
/// all-reduce's log P rounds add to it, quadratic growth is 16
/// (`tests/growth.rs` guards the jacobi figure).
fn growth() {
    let model = |p: u32| {
        let traces: Vec<_> = (0..p)
            .map(|r| jacobi_trace(r, p, 1_000_000 + (r as u64 * 7919 % 13) * 150_000, 8 * 1026))
            .collect();
        let m = Model::new(&traces, app(vec![64; p as usize]), &profile(p)).expect("model");
        (m, Dist::block(p as usize, 64 * p as u64))
    };
    let batch = |(m, d): &(Model, Dist), reps: usize| {
        let t = Instant::now();
        for _ in 0..reps {
            black_box(m.predict(black_box(d)).expect("predict"));
        }
        t.elapsed().as_secs_f64() / reps as f64
    };
    let (small, large) = (model(256), model(1024));
    let (mut s, mut l) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..9 {
        s = s.min(batch(&small, 40));
        l = l.min(batch(&large, 10));
    }
    println!(
        "growth, jacobi: P=1024 {:.1} us over P=256 {:.1} us = {:.2} (interleaved, fastest of 9 batches each; linear 4, quadratic 16)",
        l * 1e6,
        s * 1e6,
        l / s
    );
}

/// A node with a reuse curve of six working sets (4 to 96 MiB) and five
/// times since the last sweep each, a byte 1 to 2.5 times dearer.
fn reuse_node(rank: u32) -> mheta_profile::NodeCost {
    use mheta_profile::{ReusePoint, SampleStats};
    let mut reuse_by = Vec::new();
    for ws in [4u64, 16, 32, 48, 64, 96] {
        for (t, rel) in [
            (0.0005, 1.0),
            (0.002, 1.2),
            (0.005, 1.6),
            (0.02, 2.0),
            (0.05, 2.5),
        ] {
            reuse_by.push(ReusePoint {
                ws_bytes: ws << 20,
                reuse_s: t,
                per_byte: SampleStats::point(4e-11 * rel),
                rel,
                rel_ci95: [rel, rel],
            });
        }
    }
    mheta_profile::NodeCost {
        reuse_by,
        ..mheta_profile::NodeCost::bare(rank, "")
    }
}
