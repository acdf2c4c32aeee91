//! `synthetic::grown`: a recording at a few ranks grown to many.

use mheta_model::Model;
use mheta_model::synthetic::{app, grown, jacobi_trace, pipeline_trace, profile};

/// Grown from 4 ranks with no stretch, the Jacobi-like and the pipelined
/// traces are the ones written for P ranks directly: the edges copied,
/// the interior ranks' peers moved, the all-reduce over P.
#[test]
fn a_grown_recording_is_the_trace_written_for_p_ranks() {
    for p in [3u32, 5, 64] {
        let jacobi = |r, n| jacobi_trace(r, n, 1_000_000, 8 * 1026);
        let pipe = |r, n| pipeline_trace(r, n, 4, 250_000, 8 * 64);
        for make in [&jacobi as &dyn Fn(u32, u32) -> _, &pipe] {
            let rec: Vec<_> = (0..4).map(|r| make(r, 4)).collect();
            let mut decl = app(vec![10, 11, 12, 13]);
            decl.work_per_row = Some((0..46).collect());
            let (t, d) = grown(&rec, &decl, p, |_| 1.0).expect("neighbours only");
            for r in 0..p {
                assert_eq!(t[r as usize], make(r, p), "rank {r} of {p}");
            }
            let mut dist = vec![11; p as usize];
            dist[0] = 10;
            dist[p as usize - 1] = 13;
            assert_eq!(d.dist, dist);
            assert_eq!(d.rows, dist.iter().sum::<u64>());
            // Each rank's rows carry the work of the rows it copies.
            let w = d.work_per_row.unwrap();
            assert_eq!(w.len() as u64, d.rows);
            assert_eq!(&w[..10], &(0..10).collect::<Vec<_>>()[..]);
            assert_eq!(&w[10..21], &(10..21).collect::<Vec<_>>()[..]);
            assert_eq!(&w[w.len() - 13..], &(33..46).collect::<Vec<_>>()[..]);
        }
    }
}

/// A stretch lengthens the gaps between calls, not the calls: the model
/// predicts a rank stretched 2x at twice its compute, and the grown
/// cluster's plan gives it fewer rows.
#[test]
fn a_stretched_rank_computes_longer_and_gets_fewer_rows() {
    let rec: Vec<_> = (0..4)
        .map(|r| jacobi_trace(r, 4, 1_000_000, 8 * 1026))
        .collect();
    let decl = app(vec![64; 4]);
    let p = 16;
    let (plain, d) = grown(&rec, &decl, p, |_| 1.0).unwrap();
    let (slow, _) = grown(&rec, &decl, p, |r| if r == 5 { 2.0 } else { 1.0 }).unwrap();
    for (a, b) in plain[5].iterations[0]
        .events
        .iter()
        .zip(&slow[5].iterations[0].events)
    {
        assert_eq!(a.t1_ns - a.t0_ns, b.t1_ns - b.t0_ns, "a call's own time");
    }
    assert_eq!(
        slow[5].iterations[0].duration_ns - plain[5].iterations[0].duration_ns,
        1_000_000 + 2 * 1000,
        "the stage's 1 ms and the two 1 us gaps before the calls, once more"
    );
    let prof = profile(p);
    let m = Model::new(&slow, d, &prof).expect("model");
    let best = mheta_model::search::gbs(&m).expect("gbs");
    let rows = &best.dist;
    assert!(rows[5] < rows[4] && rows[5] < rows[6], "{rows:?}");
}

/// A rank that talks beyond its neighbours is refused, named.
#[test]
fn a_recording_with_a_far_message_is_not_grown() {
    let mut rec: Vec<_> = (0..4).map(|r| jacobi_trace(r, 4, 1_000_000, 64)).collect();
    let far = rec[3].iterations[0]
        .events
        .iter_mut()
        .find(|e| matches!(e.what, mheta_trace::What::Sendrecv { .. }))
        .unwrap();
    far.what.peers_mut(|p| *p = 0);
    let err = grown(&rec, &app(vec![8; 4]), 16, |_| 1.0).unwrap_err();
    assert_eq!(err, "rank 3 talks to rank 0, beyond its neighbours");
}
