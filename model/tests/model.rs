//! The model and the searches on synthetic traces whose answers are known
//! by hand (MHETA eqs. 3 and 5).

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use mheta_model::search;
use mheta_model::{Dist, Model, ModelError};

use mheta_model::synthetic::{G, L, OR, OS, app, jacobi_trace, profile};

#[test]
fn two_ranks_match_eqs_3_and_5() {
    // Rank 1 computes twice as long per row (CPU power 0.5).
    let traces = [
        jacobi_trace(0, 2, 1_000_000, 8000),
        jacobi_trace(1, 2, 2_000_000, 8000),
    ];
    let m = Model::new(&traces, app(vec![100, 100]), &profile(2)).unwrap();
    let pr = m.predict(&Dist(vec![100, 100])).unwrap();
    // Before the exchange both ranks computed 1 us of unscaled glue; both
    // send (o_s), the message arrives 1us + o_s + L + 8000 G later: eq. 3
    // gives no wait since both sent at the same time; then o_r (eq. 5).
    let arrive = 1e-6 + OS + L + 8000.0 * G;
    let after_exchange = arrive + OR;
    let reduce = OS + L + 8.0 * G + OR;
    let end1 = after_exchange + 2e-3;
    let want = end1 + reduce + 1e-6;
    assert!(
        (pr.per_iteration_s - want).abs() < 1e-12,
        "{} vs {want}",
        pr.per_iteration_s
    );
    // Rank 0 waits L + b*G for the halo (eq. 3) and 1 ms for rank 1 at the
    // reduction.
    let want_wait = (L + 8000.0 * G) + 1e-3;
    assert!(
        (pr.ranks[0].wait_s - want_wait).abs() < 1e-12,
        "{:?}",
        pr.ranks[0]
    );

    // W'/W scaling: 150/50 rows gives rank 0 1.5 ms and rank 1 1 ms.
    let pr = m.predict(&Dist(vec![150, 50])).unwrap();
    let want = after_exchange + 1.5e-3 + reduce + 1e-6;
    assert!(
        (pr.per_iteration_s - want).abs() < 1e-12,
        "{} vs {want}",
        pr.per_iteration_s
    );
}

#[test]
fn zero_rows_reroutes_neighbours() {
    let traces: Vec<_> = (0..3).map(|r| jacobi_trace(r, 3, 1_000_000, 800)).collect();
    let m = Model::new(&traces, app(vec![10, 10, 10]), &profile(3)).unwrap();
    // Rank 1 gets nothing: ranks 0 and 2 exchange directly and rank 1 only
    // joins the reduction, so no deadlock and ranks 0/2 carry 1.5 ms each.
    let pr = m.predict(&Dist(vec![15, 0, 15])).unwrap();
    assert!(pr.ranks[1].compute_s < 3e-6, "{:?}", pr.ranks[1]);
    assert!(
        (pr.ranks[0].compute_s - (1.5e-3 + 2e-6)).abs() < 1e-9,
        "{:?}",
        pr.ranks[0]
    );
    // Rank 1's overhead is its all-reduce alone; rank 0 also pays its
    // halo exchange (o_s + o_r) and, handing its value to rank 1 first and
    // getting the sum back last (recursive doubling on 3 ranks), leaves
    // the all-reduce later.
    assert!(
        pr.ranks[1].overhead_s + OS + OR < pr.ranks[0].overhead_s,
        "{:?}",
        pr.ranks
    );
}

#[test]
fn bad_distributions_rejected() {
    let traces = [jacobi_trace(0, 2, 1000, 8), jacobi_trace(1, 2, 1000, 8)];
    let m = Model::new(&traces, app(vec![5, 5]), &profile(2)).unwrap();
    assert!(matches!(
        m.predict(&Dist(vec![5, 4])),
        Err(ModelError::Dist(_))
    ));
    assert!(matches!(
        m.predict(&Dist(vec![10])),
        Err(ModelError::Dist(_))
    ));
    assert!(matches!(
        Model::new(&traces, app(vec![5, 5]), &profile(3)),
        Err(ModelError::RankMismatch { .. })
    ));
    assert!(matches!(
        Model::new(&traces, app(vec![10, 0]), &profile(2)),
        Err(ModelError::NoRowsInTrace { rank: 1 })
    ));
}

#[test]
fn gbs_finds_speed_proportional_split_and_beats_block() {
    let traces = [
        jacobi_trace(0, 2, 6_000_000, 8000),
        jacobi_trace(1, 2, 12_000_000, 8000),
    ];
    let m = Model::new(&traces, app(vec![600, 600]), &profile(2)).unwrap();
    let g = search::gbs(&m).unwrap();
    assert!((g.dist[0] as i64 - 800).abs() <= 2, "{:?}", g.dist);
    let b = search::block(&m).unwrap();
    assert!(
        g.predicted_s < 0.7 * b.predicted_s,
        "{} vs {}",
        g.predicted_s,
        b.predicted_s
    );
    let bal = search::balanced(&m).unwrap();
    assert_eq!(bal.dist, vec![800, 400]);
}

#[test]
fn gbs_agrees_with_exhaustive_on_small_cases() {
    for (c0, c1, c2) in [(1u64, 2u64, 3u64), (5, 1, 1), (2, 2, 7)] {
        let traces = [
            jacobi_trace(0, 3, c0 * 3_000_000, 80),
            jacobi_trace(1, 3, c1 * 3_000_000, 80),
            jacobi_trace(2, 3, c2 * 3_000_000, 80),
        ];
        let m = Model::new(&traces, app(vec![20, 20, 20]), &profile(3)).unwrap();
        let g = search::gbs(&m).unwrap();
        let e = search::exhaustive(&m, 1, 1_000_000).unwrap();
        assert!(
            g.predicted_s <= e.predicted_s * 1.0001,
            "{:?} vs {:?}",
            g,
            e
        );
        assert!(
            g.evaluations < e.evaluations,
            "{} vs {}",
            g.evaluations,
            e.evaluations
        );
    }
}

#[test]
fn several_iterations_give_median_compute() {
    // Three recorded iterations of rank 1: 2, 9 (disturbed) and 2.2 ms of
    // stage compute. The median, 2.2 ms, is what the model uses.
    let mut t1 = jacobi_trace(1, 2, 2_000_000, 8000);
    for c in [9_000_000u64, 2_200_000] {
        let mut it = jacobi_trace(1, 2, c, 8000).iterations.remove(0);
        it.index = t1.iterations.len() as u64 + 3;
        t1.iterations.push(it);
    }
    let traces = [jacobi_trace(0, 2, 1_000_000, 8000), t1];
    let m = Model::new(&traces, app(vec![100, 100]), &profile(2)).unwrap();
    assert!(
        (m.programs[1].scaled_s - 2.2e-3).abs() < 1e-12,
        "{}",
        m.programs[1].scaled_s
    );
    let pr = m.predict(&Dist(vec![100, 100])).unwrap();
    assert!(
        (pr.ranks[1].compute_s - (2.2e-3 + 2e-6)).abs() < 1e-9,
        "{:?}",
        pr.ranks[1]
    );
}

use mheta_model::synthetic::ev;
use mheta_trace::{ArrayDecl, Completion, Iteration, MemoryDecl, Msg, Op, RankTrace, What};

fn rank_trace(rank: u32, p: u32, events: Vec<mheta_trace::Event>, files: Vec<String>) -> RankTrace {
    let end = events.iter().map(|e| e.t1_ns).max().unwrap_or(0);
    RankTrace {
        rank,
        world_size: p,
        pid: 1,
        host: String::new(),
        files,
        iterations: vec![Iteration {
            index: 3,
            duration_ns: end,
            events,
        }],
    }
}

#[test]
fn three_tile_pipeline_matches_eq_4() {
    // Rank 0 computes each tile (2 ms) and sends it on; rank 1 receives
    // each tile and computes it (1 ms): a fast consumer waits every tile.
    let (c0, c1, bytes) = (2_000_000u64, 1_000_000u64, 800u64);
    let msg = |peer, tag| Msg { peer, tag, bytes };
    let mut e0 = Vec::new();
    let mut e1 = Vec::new();
    let (mut t0, mut t1) = (0u64, 0u64);
    for j in 0..3 {
        e0.push(ev(t0, t0, None, What::StageBegin));
        t0 += c0;
        e0.push(ev(t0, t0, None, What::StageEnd));
        e0.push(ev(t0, t0, Some(Op::Send), What::Send(msg(1, j))));
        e1.push(ev(t1, t1, Some(Op::Recv), What::Recv(msg(0, j))));
        e1.push(ev(t1, t1, None, What::StageBegin));
        t1 += c1;
        e1.push(ev(t1, t1, None, What::StageEnd));
    }
    let traces = [rank_trace(0, 2, e0, vec![]), rank_trace(1, 2, e1, vec![])];
    let mut decl = app(vec![10, 10]);
    decl.tiles = Some(3);
    let m = Model::new(&traces, decl, &profile(2)).unwrap();
    let pr = m.predict_first(&Dist(vec![10, 10])).unwrap();
    // MHETA eq. 4, tile by tile: the wait of rank 1 at tile j is what has
    // passed on rank 0 when tile j is on its way (its j+1 tiles and send
    // overheads) plus the transfer, minus what rank 1 has done before
    // (earlier waits, receive overheads and tiles); never negative.
    let (tau0, tau1, t) = (c0 as f64 * 1e-9, c1 as f64 * 1e-9, L + bytes as f64 * G);
    let mut waits = Vec::new();
    for j in 0..3 {
        let sent = (j as f64 + 1.0) * (tau0 + OS);
        let done: f64 = (0..j).map(|k| waits[k] + OR + tau1).sum();
        waits.push((sent + t - done).max(0.0));
    }
    let end1: f64 = waits.iter().sum::<f64>() + 3.0 * (OR + tau1);
    assert!(
        (pr.ranks[1].wait_s - waits.iter().sum::<f64>()).abs() < 1e-12,
        "{:?} vs {waits:?}",
        pr.ranks[1]
    );
    assert!(
        (pr.ranks[1].total_s - end1).abs() < 1e-12,
        "{:?}",
        pr.ranks[1]
    );
    // The producer never waits.
    assert_eq!(pr.ranks[0].wait_s, 0.0);
    // A run's iteration overlaps the previous one (no collective ends
    // it): the producer starts its next sweep at once, so the steady
    // iteration, the second of two back to back, is the producer's
    // period 3 (tau0 + o_s), and the consumer, who starts it late by its
    // last tile, waits tau0 + o_s - o_r - tau1 for each tile.
    let steady = m.predict(&Dist(vec![10, 10])).unwrap();
    let period = 3.0 * (tau0 + OS);
    assert!(period < end1);
    assert!(
        (steady.per_iteration_s - period).abs() < 1e-12,
        "{steady:?}"
    );
    assert!(
        (steady.ranks[1].total_s - period).abs() < 1e-12,
        "{steady:?}"
    );
    let each = tau0 + OS - OR - tau1;
    assert!(
        (steady.ranks[1].wait_s - 3.0 * each).abs() < 1e-12,
        "{steady:?}"
    );
    assert_eq!(steady.ranks[0].wait_s, 0.0);
}

/// One rank that sweeps an out-of-core, read-only array of 100 rows of
/// 4096 bytes in one stage: `pieces` reads of `piece_rows` rows, each
/// taking 100 us + 1 ns/byte.
fn ooc_model(budget: u64, pieces: u64, piece_rows: u64, prefetch: bool) -> Model {
    let mut ev_ = vec![ev(0, 0, None, What::StageBegin)];
    let mut t = 0;
    for _ in 0..pieces {
        let b = piece_rows * 4096;
        let d = 100_000 + b;
        ev_.push(ev(
            t,
            t + d,
            Some(Op::File_read_at),
            What::FileRead {
                file: 0,
                bytes: b,
                at: true,
                collective: false,
            },
        ));
        t += d + 1_000_000; // 1 ms of computation per piece
    }
    ev_.push(ev(t, t, None, What::StageEnd));
    let tr = rank_trace(0, 1, ev_, vec!["/scratch/a.00000".into()]);
    let mut decl = app(vec![100]);
    decl.arrays = vec![ArrayDecl::rows("a", 4096, true, true)];
    decl.memory = Some(MemoryDecl {
        budget: vec![Some(budget)],
        fixed_bytes: 0,
        fixed_per_row: 0,
        prefetch,
    });
    let mut prof = profile(1);
    prof.pairs.clear();
    Model::new(&[tr], decl, &prof).unwrap()
}

#[test]
fn out_of_core_sweep_follows_eq_1_and_n_l() {
    // Budget 10 rows + one 4 KiB pad: N_L = ceil(100 / 10) = 10 pieces of
    // 10 rows (the rule's plan), recorded as such.
    let m = ooc_model(10 * 4096 + 4096, 10, 10, false);
    let io = m.io.as_ref().unwrap();
    let plan = io.plan(0, 0, 100).unwrap();
    assert_eq!(plan.pieces[0].len(), 10, "N_L");
    assert!(plan.pieces[0].iter().all(|&b| b == 10 * 4096), "M_i");
    // The fit from the trace's calls is exact (one size: all per byte
    // after the profile's overhead, here none; so 100 us/40960 B + 1 ns).
    let pr = m.predict(&Dist(vec![100])).unwrap();
    let per_call = 100e-6 + 40960e-9;
    assert!(
        (pr.ranks[0].io_s - 10.0 * per_call).abs() < 1e-9,
        "eq. 1: {} vs {}",
        pr.ranks[0].io_s,
        10.0 * per_call
    );
    // Computation excludes the I/O: 10 ms.
    assert!((pr.ranks[0].compute_s - pr.ranks[0].io_s - 10e-3).abs() < 1e-9);
}

#[test]
fn prefetch_follows_eq_2() {
    // Two buffers of 25 rows fit: N_L = 4 pieces of 102400 B; reads take
    // 100 us + 1 ns/B = 202.4 us against 1 ms of computation per piece, so
    // T_A >= T_r.
    let m = ooc_model(2 * (25 * 4096 + 4096), 4, 25, true);
    let pr = m.predict(&Dist(vec![100])).unwrap();
    let io = m.io.as_ref().unwrap();
    assert_eq!(io.plan(0, 0, 100).unwrap().pieces[0].len(), 4);
    let line = io.read[0][0];
    let t_r = line.per_byte_s * 102400.0;
    // Every issue overhead, the first read in full, the others hidden.
    let want = 4.0 * line.overhead_s + t_r;
    assert!(
        (pr.ranks[0].io_s - want).abs() < 1e-12,
        "{} vs {want}",
        pr.ranks[0].io_s
    );
    // Without prefetching the same plan pays every read (eq. 1).
    let plain = mheta_model::iomodel::t_psi(&[102400; 4], line, Default::default(), false);
    assert!((plain - 4.0 * (line.overhead_s + t_r)).abs() < 1e-12);
    assert!(plain > pr.ranks[0].io_s + 2.9 * t_r);
}

#[test]
fn sparse_rows_scale_by_their_work() {
    // Rows 0..10 carry 1 unit of work, rows 10..20 carry 9: recorded with
    // 10 rows each, rank 0 (light rows) and rank 1 (heavy rows) both took
    // 1 ms. Moving 5 heavy rows to rank 0 gives it 10 + 45 units against
    // 10 before: 5.5 ms.
    let traces = [
        jacobi_trace(0, 2, 1_000_000, 8),
        jacobi_trace(1, 2, 1_000_000, 8),
    ];
    let mut decl = app(vec![10, 10]);
    decl.work_per_row = Some((0..20).map(|r| if r < 10 { 1 } else { 9 }).collect());
    let m = Model::new(&traces, decl, &profile(2)).unwrap();
    let pr = m.predict(&Dist(vec![15, 5])).unwrap();
    let stage0 = pr.ranks[0].compute_s - 2e-6;
    assert!((stage0 - 5.5e-3).abs() < 1e-9, "{}", stage0);
    // Rank 1 keeps 5 heavy rows of its 90 units: 0.5 ms.
    let stage1 = pr.ranks[1].compute_s - 2e-6;
    assert!((stage1 - 0.5e-3).abs() < 1e-9, "{}", stage1);
}

#[test]
fn time_after_a_failed_test_is_waiting_not_computation() {
    // A receive completed by a polling loop: Irecv, two failed tests with
    // 40 us sleeps after them, then the test that completes it.
    let m = Msg {
        peer: 1,
        tag: 0,
        bytes: 8,
    };
    let events = vec![
        ev(0, 1_000, Some(Op::Irecv), What::Irecv { req: 1 }),
        ev(1_000, 2_000, Some(Op::Test), What::Complete(vec![])),
        ev(42_000, 43_000, Some(Op::Test), What::Complete(vec![])),
        ev(
            83_000,
            84_000,
            Some(Op::Test),
            What::Complete(vec![Completion {
                req: 1,
                recv: Some(m),
            }]),
        ),
        ev(84_000, 84_000, None, What::StageBegin),
        ev(1_084_000, 1_084_000, None, What::StageEnd),
    ];
    let p = mheta_model::model::Program::from_events(&events, 1_084_000, 2);
    assert!((p.scaled_s - 1e-3).abs() < 1e-12, "{}", p.scaled_s);
    assert!(p.unscaled_s < 1e-12, "{}", p.unscaled_s);
}

#[test]
fn a_neighbourhood_collective_is_read_as_the_exchange_it_stands_for() {
    // MPI_Neighbor_alltoall on a line's first rank: to and from rank 1
    // only (the other neighbour is MPI_PROC_NULL), and the same begun by
    // MPI_Ineighbor_alltoall, against the exchange made of MPI_Isend,
    // MPI_Irecv and MPI_Waitall.
    use mheta_trace::NEIGHBOR_TAG;
    let m = |peer: i32| Msg {
        peer,
        tag: NEIGHBOR_TAG,
        bytes: 64,
    };
    let neighbour = vec![
        ev(0, 1_000, None, What::StageBegin),
        ev(1_000, 1_000, None, What::StageEnd),
        ev(
            1_000,
            9_000,
            Some(Op::Neighbor_alltoall),
            What::Neighbor {
                sends: vec![m(-2), m(1)],
                recvs: vec![m(-2), m(1)],
            },
        ),
    ];
    let by_hand = vec![
        ev(0, 1_000, None, What::StageBegin),
        ev(1_000, 1_000, None, What::StageEnd),
        ev(
            1_000,
            1_000,
            Some(Op::Isend),
            What::Isend { msg: m(1), req: 1 },
        ),
        ev(1_000, 1_000, Some(Op::Irecv), What::Irecv { req: 2 }),
        ev(
            1_000,
            9_000,
            Some(Op::Waitall),
            What::Complete(vec![
                Completion {
                    req: 2,
                    recv: Some(m(1)),
                },
                Completion { req: 1, recv: None },
            ]),
        ),
    ];
    // MPI_Ineighbor_alltoall and its MPI_Wait.
    let begun = vec![
        ev(0, 1_000, None, What::StageBegin),
        ev(1_000, 1_000, None, What::StageEnd),
        ev(
            1_000,
            1_000,
            Some(Op::Ineighbor_alltoall),
            What::INeighbor {
                sends: vec![m(-2), m(1)],
                recvs: vec![m(-2), m(1)],
                req: 7,
            },
        ),
        ev(
            1_000,
            9_000,
            Some(Op::Wait),
            What::Complete(vec![Completion { req: 7, recv: None }]),
        ),
    ];
    let a = mheta_model::model::Program::from_events(&neighbour, 9_000, 2);
    let b = mheta_model::model::Program::from_events(&by_hand, 9_000, 2);
    let c = mheta_model::model::Program::from_events(&begun, 9_000, 2);
    assert_eq!(a.steps, b.steps);
    assert_eq!(c.steps, b.steps);
    assert_eq!(a.steps.len(), 4, "{:?}", a.steps);
}

#[test]
fn a_move_through_disk_prices_the_rebuild_as_measured() {
    // One rank with its array out of core: a move goes through disk.
    // Without a measurement the rebuild is one more write of the new
    // out-of-core rows; with one, it is the measured seconds per row.
    let mut m = ooc_model(10 * 4096 + 4096, 10, 10, false);
    // The trace only reads: give the array a write line.
    let line = &mut m.io.as_mut().unwrap().write[0][0];
    line.overhead_s = 1e-4;
    line.per_byte_s = 1e-9;
    let d = Dist(vec![100]);
    let estimated = m.move_cost(&d, &d).total_s;
    let w = m.io.as_ref().unwrap().write[0][0];
    let one_write = w.time(100.0 * 4096.0);
    assert!(one_write > 0.0);
    m.rebuild_s_per_row = Some(vec![2e-5]);
    let measured = m.move_cost(&d, &d).total_s;
    assert!(
        (measured - (estimated - one_write + 100.0 * 2e-5)).abs() < 1e-12,
        "{measured} vs {estimated} - {one_write} + 2 ms"
    );
}

/// One rank's iteration: a stage of `stage_ns`, then a non-blocking
/// allreduce entered at the stage's end and completed `inside_ns` later
/// by a polling loop (a failed test, then the completing one).
fn allreduce_after_stage(rank: u32, stage_ns: u64, inside_ns: u64) -> RankTrace {
    let s = stage_ns;
    let events = vec![
        ev(0, 0, None, What::StageBegin),
        ev(s, s, None, What::StageEnd),
        ev(
            s,
            s + 1_000,
            Some(Op::Iallreduce),
            What::ICollective {
                bytes: 8,
                comm_size: 2,
                root: -1,
                req: 1,
            },
        ),
        ev(s + 1_000, s + 2_000, Some(Op::Test), What::Complete(vec![])),
        ev(
            s + inside_ns - 1_000,
            s + inside_ns,
            Some(Op::Test),
            What::Complete(vec![Completion { req: 1, recv: None }]),
        ),
    ];
    rank_trace(rank, 2, events, vec![])
}

/// MPI-4's persistent all-reduce (`MPI_Allreduce_init`, begun by
/// `MPI_Start`) is replayed as the non-blocking one it stands for: the same
/// traces with each `MPI_Iallreduce` recorded as that predict the same
/// times, rank by rank, at any distribution.
#[test]
fn a_started_persistent_collective_is_its_non_blocking_form() {
    let persistent = |mut t: RankTrace| {
        for e in &mut t.iterations[0].events {
            if let What::ICollective {
                bytes,
                comm_size,
                root,
                req,
            } = e.what
            {
                e.op = Some(Op::Start);
                e.what = What::Start(vec![mheta_trace::Started::Collective {
                    op: Op::Allreduce_init,
                    bytes,
                    comm_size,
                    root,
                    req,
                }]);
            }
        }
        t
    };
    let plain = [
        allreduce_after_stage(0, 1_000_000, 1_300_000),
        allreduce_after_stage(1, 2_000_000, 300_000),
    ];
    let started = plain.clone().map(persistent);
    assert!(matches!(
        started[0].iterations[0].events[2].what,
        What::Start(_)
    ));
    let m = Model::new(&plain, app(vec![150, 150]), &profile(2)).unwrap();
    let n = Model::new(&started, app(vec![150, 150]), &profile(2)).unwrap();
    for d in [vec![150, 150], vec![200, 100], vec![90, 210]] {
        let (a, b) = (
            m.predict(&Dist(d.clone())).unwrap(),
            n.predict(&Dist(d.clone())).unwrap(),
        );
        assert!(a.per_iteration_s > 0.0);
        assert_eq!(a.per_iteration_s, b.per_iteration_s, "{d:?}");
        for (x, y) in a.ranks.iter().zip(&b.ranks) {
            assert_eq!((x.compute_s, x.wait_s), (y.compute_s, y.wait_s), "{d:?}");
        }
    }
}

#[test]
fn a_collective_costs_what_it_cost_past_the_last_arrival() {
    // Rank 1 computes 2 ms, rank 0 1 ms, on 150 rows each. Rank 0 is
    // inside the allreduce for 1.3 ms: 1 ms waiting for rank 1, then
    // 0.3 ms; rank 1 for 0.3 ms. The collective costs 0.3 ms (far above
    // the pairwise figures' L + o_s + o_r + 8 G), for any distribution.
    let traces = [
        allreduce_after_stage(0, 1_000_000, 1_300_000),
        allreduce_after_stage(1, 2_000_000, 300_000),
    ];
    let m = Model::new(&traces, app(vec![150, 150]), &profile(2)).unwrap();
    let pr = m.predict(&Dist(vec![150, 150])).unwrap();
    assert!(
        (pr.per_iteration_s - 2.3e-3).abs() < 1e-9,
        "{}",
        pr.per_iteration_s
    );
    // libnbc's binomial all-reduce: rank 1's value to rank 0, the sum
    // back to rank 1, so rank 1 leaves one message (less rank 0's send
    // overhead) after rank 0, and rank 0 waits that much more for it in
    // the next iteration.
    let msg = OS + L + 8.0 * G + OR;
    assert!(
        (pr.ranks[0].wait_s - (1e-3 + msg - OS)).abs() < 1e-9,
        "{:?}",
        pr.ranks[0]
    );
    // Balanced (speed-proportional): 4/3 ms of compute each, then 0.3 ms.
    let pr = m.predict(&Dist(vec![200, 100])).unwrap();
    let want = 2e-3 * (100.0 / 150.0) + 0.3e-3;
    assert!(
        (pr.per_iteration_s - want).abs() < 1e-9,
        "{} vs {want}",
        pr.per_iteration_s
    );
    // A collective that the recording shows cheaper than the pairwise
    // figures give (3 us past the last arrival, against the 16 us of its
    // two messages: rank 1's value to rank 0, the sum back), timed by
    // rank 0, which waited in it: priced below the pairwise figures, and
    // never before the last arrival.
    let reduce = 2.0 * (OS + L + 8.0 * G + OR);
    let traces = [
        allreduce_after_stage(0, 1_000_000, 1_003_000),
        allreduce_after_stage(1, 2_000_000, 3_000),
    ];
    let m = Model::new(&traces, app(vec![100, 100]), &profile(2)).unwrap();
    let pr = m.predict(&Dist(vec![100, 100])).unwrap();
    assert!(
        pr.per_iteration_s > 2e-3 && pr.per_iteration_s < 2e-3 + reduce - 1e-6,
        "{} against {} pairwise",
        pr.per_iteration_s,
        2e-3 + reduce
    );
}

#[test]
fn work_done_while_a_collective_is_in_flight_is_not_its_cost() {
    // Rank 0 starts the allreduce, computes 1 ms (overlapped, no tests),
    // then completes it with one test of 1 us; rank 1 likewise after 1 ms
    // of stage. Neither waited: the collective is priced by the pairwise
    // figures (libnbc's binomial all-reduce on 2 ranks: two messages, the
    // last rank's period), and the overlapped millisecond stays
    // computation.
    let overlapped = |rank: u32| {
        let events = vec![
            ev(0, 0, None, What::StageBegin),
            ev(1_000_000, 1_000_000, None, What::StageEnd),
            ev(
                1_000_000,
                1_001_000,
                Some(Op::Iallreduce),
                What::ICollective {
                    bytes: 8,
                    comm_size: 2,
                    root: -1,
                    req: 1,
                },
            ),
            ev(
                2_001_000,
                2_002_000,
                Some(Op::Test),
                What::Complete(vec![Completion { req: 1, recv: None }]),
            ),
        ];
        rank_trace(rank, 2, events, vec![])
    };
    let m = Model::new(
        &[overlapped(0), overlapped(1)],
        app(vec![150, 150]),
        &profile(2),
    )
    .unwrap();
    let pr = m.predict(&Dist(vec![150, 150])).unwrap();
    let reduce = 2.0 * (OS + L + 8.0 * G + OR);
    // 1 ms of stage, the collective, then 1 ms of unscaled work.
    assert!(
        (pr.per_iteration_s - (2e-3 + reduce)).abs() < 1e-12,
        "{}",
        pr.per_iteration_s
    );
}

/// Rank 0 computes 1 ms and sends 8 B to rank 1, which posted its receive
/// at once and polls for it: back to back (`gap_ns` 1 us) or sleeping 40
/// us after each failed test after the first 1 us (`gap_ns` 40 us). Then
/// both end the stage.
fn late_message(gap_ns: u64) -> [RankTrace; 2] {
    let m = |peer: i32| Msg {
        peer,
        tag: 0,
        bytes: 8,
    };
    let sender = vec![
        ev(0, 0, None, What::StageBegin),
        ev(1_000_000, 1_000_000, None, What::StageEnd),
        ev(1_000_000, 1_000_000, Some(Op::Send), What::Send(m(1))),
    ];
    let mut receiver = vec![
        ev(0, 1_000, Some(Op::Irecv), What::Irecv { req: 1 }),
        ev(1_000, 2_000, Some(Op::Test), What::Complete(vec![])),
    ];
    let mut t = 2_000 + gap_ns;
    while t + 1_000 < 1_000_000 {
        receiver.push(ev(t, t + 1_000, Some(Op::Test), What::Complete(vec![])));
        t += 1_000 + gap_ns;
    }
    receiver.push(ev(
        t,
        t + 1_000,
        Some(Op::Test),
        What::Complete(vec![Completion {
            req: 1,
            recv: Some(m(0)),
        }]),
    ));
    [
        rank_trace(0, 2, sender, vec![]),
        rank_trace(1, 2, receiver, vec![]),
    ]
}

#[test]
fn a_sleeping_rank_notices_a_late_message_at_its_next_test() {
    let [s0, s1] = late_message(40_000);
    let p = mheta_model::model::Program::from_trace(&s1);
    // It polled back to back for 1 us (the first failed test) before its
    // first sleep, and every sleep was 40 us: a message arriving at a
    // random time is noticed E[G^2] / 2E[G] = 20 us late on average.
    assert!((p.spin_s - 1e-6).abs() < 1e-12, "{}", p.spin_s);
    assert!((p.wake_s - 20e-6).abs() < 1e-12, "{}", p.wake_s);
    let sleeping = Model::new(&[s0, s1], app(vec![100, 100]), &profile(2)).unwrap();
    let [b0, b1] = late_message(1_000);
    let q = mheta_model::model::Program::from_trace(&b1);
    assert_eq!((q.spin_s, q.wake_s), (0.0, 0.0), "a rank that never slept");
    let spinning = Model::new(&[b0, b1], app(vec![100, 100]), &profile(2)).unwrap();
    for d in [vec![100, 100], vec![150, 50]] {
        let a = sleeping.predict_first(&Dist(d.clone())).unwrap();
        let b = spinning.predict_first(&Dist(d.clone())).unwrap();
        // The message comes long after the spin: the sleeper waits 20 us
        // more, the rest is the same.
        assert!(
            (a.ranks[1].wait_s - b.ranks[1].wait_s - 20e-6).abs() < 1e-12,
            "{d:?}: {:?} vs {:?}",
            a.ranks[1],
            b.ranks[1]
        );
        assert!((a.per_iteration_s - b.per_iteration_s - 20e-6).abs() < 1e-12);
    }
}

/// A rank that sleeps 40 us between tests but once lost its core for 2 ms
/// (more than 3 times its median sleep): that gap is the recorded run's,
/// not its way of waiting, and does not enter the wake residual (with it,
/// E[G^2] / 2E[G] would be 347 us instead of 20).
#[test]
fn a_gap_where_the_rank_lost_its_core_is_not_a_sleep() {
    let mut events = vec![
        ev(0, 1_000, Some(Op::Irecv), What::Irecv { req: 1 }),
        ev(1_000, 2_000, Some(Op::Test), What::Complete(vec![])),
    ];
    let mut t = 2_000;
    for k in 0..100 {
        t += if k == 50 { 2_000_000 } else { 40_000 };
        events.push(ev(t, t + 1_000, Some(Op::Test), What::Complete(vec![])));
        t += 1_000;
    }
    let p = mheta_model::model::Program::from_trace(&rank_trace(1, 2, events, vec![]));
    assert!((p.wake_s - 20e-6).abs() < 1e-12, "{}", p.wake_s);
}

/// Rank 0 posts a non-blocking send of `bytes` to rank 1 (by `op`) and
/// waits for it, then computes 1 ms; rank 1 computes 2 ms, then receives.
fn send_then_compute(bytes: u64, op: Op) -> [RankTrace; 2] {
    let m = |peer: i32| Msg {
        peer,
        tag: 0,
        bytes,
    };
    let sender = vec![
        ev(0, 0, Some(op), What::Isend { msg: m(1), req: 7 }),
        ev(
            0,
            0,
            Some(Op::Wait),
            What::Complete(vec![Completion { req: 7, recv: None }]),
        ),
        ev(0, 0, None, What::StageBegin),
        ev(1_000_000, 1_000_000, None, What::StageEnd),
    ];
    let receiver = vec![
        ev(0, 0, None, What::StageBegin),
        ev(2_000_000, 2_000_000, None, What::StageEnd),
        ev(2_000_000, 2_000_000, Some(Op::Recv), What::Recv(m(0))),
    ];
    [
        rank_trace(0, 2, sender, vec![]),
        rank_trace(1, 2, receiver, vec![]),
    ]
}

#[test]
fn a_send_above_the_eager_limit_waits_for_its_receiver() {
    let mut prof = profile(2);
    for c in &mut prof.pairs {
        c.eager_limit_bytes = Some(256);
    }
    let end0 = |bytes: u64, op: Op, prof: &mheta_profile::ClusterProfile| {
        let m = Model::new(&send_then_compute(bytes, op), app(vec![10, 10]), prof).unwrap();
        m.predict_first(&Dist(vec![10, 10])).unwrap().ranks[0].total_s
    };
    // 256 B fits: the send completes once posted, rank 0 computes at once.
    let eager = OS + 1e-3;
    assert!((end0(256, Op::Isend, &prof) - eager).abs() < 1e-12);
    // 257 B does not: rank 0 waits until rank 1 takes it at 2 ms and the
    // acknowledgement has come back (L), then computes.
    let rendezvous = 2e-3 + L + 1e-3;
    assert!((end0(257, Op::Isend, &prof) - rendezvous).abs() < 1e-12);
    // A synchronous send always waits, a buffered one never.
    assert!((end0(8, Op::Issend, &prof) - rendezvous).abs() < 1e-12);
    assert!((end0(1 << 20, Op::Ibsend, &prof) - eager).abs() < 1e-12);
    // A profile without the limit (measured before it was) takes every
    // send as eager.
    assert!((end0(1 << 20, Op::Isend, &profile(2)) - eager).abs() < 1e-12);
}

/// Rank 0 computes 1 ms, posts a 4 KiB send to rank 1 (above the eager
/// limit) and tests it every 41 us (1 us tests, 40 us sleeps) until it is
/// done at `done_ns`. Rank 1 computes `recv_stage_ns`, then receives.
fn handshake_pair(recv_stage_ns: u64, done_ns: u64) -> [RankTrace; 2] {
    let m = |peer: i32| Msg {
        peer,
        tag: 0,
        bytes: 4096,
    };
    let mut sender = vec![
        ev(0, 0, None, What::StageBegin),
        ev(1_000_000, 1_000_000, None, What::StageEnd),
        ev(
            1_000_000,
            1_000_000,
            Some(Op::Isend),
            What::Isend { msg: m(1), req: 7 },
        ),
    ];
    let mut t = 1_000_000;
    while t + 1_000 < done_ns - 1_000 {
        sender.push(ev(t, t + 1_000, Some(Op::Test), What::Complete(vec![])));
        t += 41_000;
    }
    sender.push(ev(
        done_ns - 1_000,
        done_ns,
        Some(Op::Test),
        What::Complete(vec![Completion { req: 7, recv: None }]),
    ));
    let receiver = vec![
        ev(0, 0, None, What::StageBegin),
        ev(recv_stage_ns, recv_stage_ns, None, What::StageEnd),
        ev(
            recv_stage_ns,
            done_ns.max(recv_stage_ns),
            Some(Op::Recv),
            What::Recv(m(0)),
        ),
    ];
    [
        rank_trace(0, 2, sender, vec![]),
        rank_trace(1, 2, receiver, vec![]),
    ]
}

#[test]
fn a_handshake_costs_what_it_cost_in_the_recorded_iteration() {
    let mut prof = profile(2);
    for c in &mut prof.pairs {
        c.eager_limit_bytes = Some(256);
    }
    // Both ranks reach the exchange at 1 ms, and the send took 100 us to
    // complete where the replay gives the transfer, the acknowledgement
    // and the sender's wake residual: the rest is the pair's handshake,
    // and predicting the recorded distribution gives the recorded 100 us.
    let m = Model::new(
        &handshake_pair(1_000_000, 1_100_000),
        app(vec![10, 10]),
        &prof,
    )
    .unwrap();
    let r0 = m.predict_first(&Dist(vec![10, 10])).unwrap().ranks[0];
    assert!((r0.total_s - (1.1e-3 + OS)).abs() < 1e-9, "{r0:?}");
    // On [12, 8] rank 0 computes 1.2 ms and rank 1, done at 0.8 ms, is
    // waiting for the message: a handshake again. The acknowledgement is
    // back after the transfer and L (2L + 4096 G), rank 0 notices it a
    // wake residual later, plus the handshake: the recorded 100 us less
    // what the replay gave, so the send takes 100 us again.
    let p = mheta_model::model::Program::from_trace(&handshake_pair(1_000_000, 1_100_000)[0]);
    let wake = p.wake_s;
    assert!(wake > 0.0 && p.sleep_s == 40e-6, "{p:?}");
    let handshake = 100e-6 - (2.0 * L + 4096.0 * G) - wake;
    assert!(handshake > 0.0);
    let r0 = m.predict_first(&Dist(vec![12, 8])).unwrap().ranks[0];
    let want = 1.2e-3 + OS + 100e-6;
    assert!((r0.total_s - want).abs() < 1e-9, "{r0:?} vs {want}");
    // On [8, 12] rank 1 computes 1.2 ms and finds the message there: no
    // one to wake, no handshake. The acknowledgement comes L later and
    // rank 0 notices it a wake residual after that.
    let r0 = m.predict_first(&Dist(vec![8, 12])).unwrap().ranks[0];
    let want = 1.2e-3 + L + wake;
    assert!((r0.total_s - want).abs() < 1e-9, "{r0:?} vs {want}");
    // When the receiver computed 1 ms longer the send waited for it, not
    // for a handshake: nothing is learned, the replay stands.
    let late = handshake_pair(2_000_000, 2_050_000);
    let wake = mheta_model::model::Program::from_trace(&late[0]).wake_s;
    let m = Model::new(&late, app(vec![10, 10]), &prof).unwrap();
    let r0 = m.predict_first(&Dist(vec![10, 10])).unwrap().ranks[0];
    assert!((r0.total_s - (2e-3 + L + wake)).abs() < 1e-9, "{r0:?}");
}

/// The compiled replay ([`Model::evaluator`]) gives the interpreter's
/// prediction bit for bit on this file's hand-made programs: eager and
/// rendezvous sends, handshakes, late messages, a collective after
/// tests, out-of-core stages with and without prefetch, one rank with no
/// rows.
#[test]
fn the_compiled_replay_gives_the_interpreters_answers() {
    let mut limited = profile(2);
    for c in &mut limited.pairs {
        c.eager_limit_bytes = Some(256);
    }
    let two = |traces: &[RankTrace], prof: &mheta_profile::ClusterProfile| {
        Model::new(traces, app(vec![10, 10]), prof).unwrap()
    };
    let mut models = vec![
        two(&send_then_compute(257, Op::Isend), &limited),
        two(&send_then_compute(8, Op::Issend), &limited),
        two(&send_then_compute(1 << 20, Op::Ibsend), &limited),
        two(&handshake_pair(3_000_000, 3_100_000), &limited),
        two(&late_message(500_000), &profile(2)),
        two(
            &[
                allreduce_after_stage(0, 1_000_000, 1_500_000),
                allreduce_after_stage(1, 2_000_000, 20_000),
            ],
            &profile(2),
        ),
        ooc_model(10 * 4096 + 4096, 10, 10, false),
        ooc_model(10 * 4096 + 4096, 10, 10, true),
    ];
    let traces: Vec<_> = (0..4)
        .map(|r| jacobi_trace(r, 4, 1_000_000, 8192))
        .collect();
    models.push(Model::new(&traces, app(vec![25; 4]), &profile(4)).unwrap());
    for (k, m) in models.iter().enumerate() {
        let ev = m.evaluator();
        let n = m.rows();
        let p = m.ranks();
        let mut dists = vec![Dist::block(p, n)];
        if p > 1 {
            let mut skew = vec![n / p as u64; p];
            skew[0] += n - skew.iter().sum::<u64>();
            skew[0] += skew[p - 1] / 2;
            skew[p - 1] -= skew[p - 1] / 2;
            dists.push(Dist(skew));
            let mut none = vec![0u64; p];
            none[0] = n;
            dists.push(Dist(none));
        }
        for d in &dists {
            for _ in 0..2 {
                assert_eq!(
                    m.predict(d).map_err(|e| e.to_string()),
                    ev.predict(d).map_err(|e| e.to_string()),
                    "model {k}, {d:?}"
                );
            }
        }
        assert!(
            ev.compiled_evaluations() > 0,
            "model {k} never ran compiled"
        );
    }
}
