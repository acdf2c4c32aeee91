//! The collectives' shapes and pricing, against hand-worked cases.

use super::*;

/// No cost, for the pairs' overheads a test leaves out.
pub(crate) const ZERO: &dyn Fn(usize, usize) -> f64 = &|_, _| 0.0;

/// A blocking all-gather's ranks leave together, after a cost that
/// follows its blocks: P - 1 ring steps of the change in the largest
/// block's transfer from the recorded blocks; blocks as recorded
/// change nothing, and a collective of another shape ignores them.
#[test]
fn a_blocking_all_gather_pays_the_change_of_its_largest_block() {
    use crate::synthetic::{app, jacobi_trace, profile};
    let p = 4u32;
    let traces: Vec<_> = (0..p).map(|r| jacobi_trace(r, p, 1_000_000, 64)).collect();
    let m = Model::new(&traces, app(vec![64; 4]), &profile(p)).expect("model");
    let (arrive, entry) = ([0.0, 1e-3, 2e-3, 5e-4], 2e-3);
    let rec = [512.0; 4];
    let grown = [896.0, 384.0, 384.0, 384.0];
    let at = |shape, b: &[f64]| priced_exits(&m, shape, &arrive, 512.0, entry, (b, &rec));
    let (same, more) = (at(Shape::Gather, &rec), at(Shape::Gather, &grown));
    assert_eq!(same, at(Shape::Together, &rec));
    assert_eq!(at(Shape::Together, &grown), same);
    let pr = m.net.pair(0, 1);
    let want = 3.0 * (pr.transfer(896.0) - pr.transfer(512.0));
    assert!(want > 0.0);
    for (a, b) in same.iter().zip(&more) {
        assert!(
            (b - a - want).abs() < 1e-12 * want.max(1e-9),
            "{a} {b} {want}"
        );
        assert_eq!(*b, more[0]);
    }
}

/// Two ranks: an all-gather's blocks that stay eager cost the larger
/// transfer; a block past the eager limit waits, before its own
/// transfer, for the reverse block (its acknowledgement follows it),
/// or for the handshake when the reverse block is itself rendezvous.
/// Blocks as recorded change nothing.
#[test]
fn a_two_rank_all_gathers_rendezvous_block_waits_for_the_reverse_block() {
    use crate::synthetic::{app, jacobi_trace, profile};
    let mut prof = profile(2);
    for c in &mut prof.pairs {
        c.eager_limit_bytes = Some(65_536);
    }
    let traces: Vec<_> = (0..2).map(|r| jacobi_trace(r, 2, 1_000_000, 64)).collect();
    let m = Model::new(&traces, app(vec![64; 2]), &prof).expect("model");
    let (arrive, entry) = ([0.0, 1e-3], 1e-3);
    let rec = [56_000.0, 56_000.0];
    let at = |b: &[f64]| priced_exits(&m, Shape::Gather, &arrive, 8.0, entry, (b, &rec))[0];
    let t = |b: f64| m.net.pair(0, 1).transfer(b);
    let base = at(&rec);
    // Both eager: the larger block's transfer.
    let eager = at(&[60_000.0, 40_000.0]) - base;
    assert!(
        (eager - (t(60_000.0) - t(56_000.0))).abs() < 1e-12,
        "{eager}"
    );
    // Rank 0's block by rendezvous: rank 1's block, then rank 0's.
    let rndv = at(&[70_000.0, 40_000.0]) - base;
    let want = t(40_000.0) + t(70_000.0) - t(56_000.0);
    assert!((rndv - want).abs() < 1e-12, "{rndv} {want}");
    assert!(rndv > t(70_000.0) - t(56_000.0) + 0.5 * t(40_000.0));
    // Both by rendezvous: the handshake, then the larger transfer.
    let both = at(&[70_000.0, 80_000.0]) - base;
    let want = 2.0 * t(0.0) + t(80_000.0) - t(56_000.0);
    assert!((both - want).abs() < 1e-12, "{both} {want}");
    assert_eq!(
        base,
        priced_exits(&m, Shape::Together, &arrive, 8.0, entry, (&rec, &rec))[0]
    );
}

/// 1 µs per message and no overheads, except the pairs with rank
/// `far`, which take 1 ms.
fn far_link(far: usize) -> impl Fn(usize, usize) -> f64 {
    move |s, d| if s == far || d == far { 1e-3 } else { 1e-6 }
}

/// Asserts that `got` is `want` to 1e-12, each entry.
pub(crate) fn close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (a, b) in got.iter().zip(want) {
        assert!((a - b).abs() < 1e-12, "got {got:?}, want {want:?}");
    }
}

#[test]
fn binomial_on_four_ranks_follows_libnbcs_rounds() {
    // Rank 3 behind a 1 ms link, all arrive at 0: 1 -> 0 and 3 -> 2
    // (1 ms), 2 -> 0, then 0 -> 1, 0 -> 2 and 1 -> 3 (1 ms).
    let far = far_link(3);
    let c = Costs {
        msg: &far,
        o_send: ZERO,
        o_recv: ZERO,
    };
    let x = exits(Shape::Binomial, &[0.0; 4], &c, None).unwrap();
    close(&x, &[1.001e-3, 1.002e-3, 1.002e-3, 2.002e-3]);
    // Rank 1 arriving 5 ms late: everyone waits for it, rank 3 still
    // a link behind.
    let x = exits(Shape::Binomial, &[0.0, 5e-3, 0.0, 0.0], &c, None).unwrap();
    close(&x, &[5.001e-3, 5.002e-3, 5.002e-3, 6.002e-3]);
}

#[test]
fn binomial_sends_in_turn_and_covers_odd_counts() {
    // 10 µs a message, 1 µs a send's and a receive's own part; 5 ranks.
    let c = Costs {
        msg: &|_, _| 1e-5,
        o_send: &|_, _| 1e-6,
        o_recv: &|_, _| 1e-6,
    };
    let x = exits(Shape::Binomial, &[0.0; 5], &c, None).unwrap();
    // Reduction: 1 -> 0 and 3 -> 2 at 10 µs, 2 -> 0 at 20; 4's value
    // arrived at 10, received at 21. Broadcast from 21: sends to 1, 2
    // and 4 posted at 21, 22, 23 (rank 0 leaves at 24); 1 receives at
    // 31 and sends to 3 (leaves at 32), 3 receives at 41; 2 at 32, 4
    // at 33.
    close(&x, &[24e-6, 32e-6, 32e-6, 41e-6, 33e-6]);
}

#[test]
fn recursive_doubling_pairs_and_non_powers_of_two() {
    let far = far_link(3);
    let c = Costs {
        msg: &far,
        o_send: ZERO,
        o_recv: ZERO,
    };
    let x = exits(Shape::RecursiveDoubling, &[0.0; 4], &c, None).unwrap();
    // Round 1: 0 <-> 1 (1 µs), 2 <-> 3 (1 ms); round 2: 0 <-> 2, 1 <-> 3.
    close(&x, &[1.001e-3, 2e-3, 1e-3, 1.001e-3]);
    // 3 ranks, 1 s a message: 0 hands to 1 (at 1); 1 <-> 2 (1 gets
    // 2's value at 1, 2 gets 1's at 2); 1 hands back to 0 (at 2).
    let one = |_: usize, _: usize| 1.0;
    let c = Costs {
        msg: &one,
        o_send: ZERO,
        o_recv: ZERO,
    };
    let x = exits(Shape::RecursiveDoubling, &[0.0; 3], &c, None).unwrap();
    close(&x, &[2.0, 1.0, 2.0]);
}

#[test]
fn a_tape_replays_what_the_pairs_give() {
    // Every pair its own costs; arrivals apart; rank counts around
    // powers of two.
    let msg = |s: usize, d: usize| 1e-6 * (1 + (s * 7 + d * 3) % 11) as f64;
    let o_send = |s: usize, d: usize| 1e-7 * (1 + (s + 2 * d) % 5) as f64;
    let o_recv = |s: usize, d: usize| 1e-7 * (1 + (3 * s + d) % 4) as f64;
    let c = Costs {
        msg: &msg,
        o_send: &o_send,
        o_recv: &o_recv,
    };
    for shape in [Shape::Binomial, Shape::RecursiveDoubling] {
        for p in 1..=13 {
            let tape = Tape::record(shape, p, &c).expect("a pattern");
            for a in 0..3 {
                let arrive: Vec<f64> = (0..p)
                    .map(|j| 1e-6 * ((j * 5 + a * 3) % 7) as f64)
                    .collect();
                let live = exits(shape, &arrive, &c, None).expect("a pattern");
                assert_eq!(exits_taped(&tape, &arrive), live, "{shape:?} at {p}");
            }
        }
    }
    assert!(Tape::record(Shape::Linear, 4, &c).is_none());
    assert!(Tape::record(Shape::Together, 4, &c).is_none());
}

#[test]
fn a_tape_keeps_a_round_of_alike_pairs_once() {
    // Costs by kind of pair, four ranks a host: recursive doubling's
    // first two rounds stay within hosts and its later ones cross them,
    // so each of those rounds reads one cost for every rank; with a slow
    // rank 5, the rounds it takes part in do not.
    for slow in [false, true] {
        let host = |s: usize, d: usize| s / 4 == d / 4;
        let extra = move |s: usize, d: usize| if slow && (s == 5 || d == 5) { 3.0 } else { 1.0 };
        let msg = move |s: usize, d: usize| extra(s, d) * if host(s, d) { 1e-6 } else { 9e-6 };
        let o_send = move |s: usize, d: usize| extra(s, d) * 2e-7;
        let o_recv = |_: usize, _: usize| 3e-7;
        let c = Costs {
            msg: &msg,
            o_send: &o_send,
            o_recv: &o_recv,
        };
        for p in [8, 11, 16, 19] {
            let tape = Tape::record(Shape::RecursiveDoubling, p, &c).expect("a pattern");
            let adj = 1usize << (usize::BITS - 1 - p.leading_zeros());
            let rounds = adj.trailing_zeros() as usize;
            let kept = tape.uniform.iter().filter(|&&u| u).count();
            // Slow or not, a round is kept once only when every rank
            // read alike; the tape holds three numbers for such a round.
            assert_eq!(tape.uniform.len(), rounds, "at {p}");
            assert_eq!(kept == rounds, !slow && p == adj, "{slow} at {p}");
            assert_eq!(
                tape.costs.len(),
                6 * (p - adj) + 3 * adj * (rounds - kept) + 3 * kept,
                "{slow} at {p}"
            );
            for a in 0..3 {
                let arrive: Vec<f64> = (0..p)
                    .map(|j| 1e-6 * ((j * 5 + a * 3) % 7) as f64)
                    .collect();
                let live = exits(Shape::RecursiveDoubling, &arrive, &c, None).expect("a pattern");
                assert_eq!(exits_taped(&tape, &arrive), live, "{slow} at {p}");
            }
        }
    }
}

#[test]
fn together_has_no_pattern() {
    let c = Costs {
        msg: ZERO,
        o_send: ZERO,
        o_recv: ZERO,
    };
    assert!(exits(Shape::Together, &[0.0; 4], &c, None).is_none());
}
