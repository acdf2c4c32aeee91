//! A move's predicted cost (`Model::move_cost`, every array in core) on
//! synthetic profiles whose answers are known by hand: each pair's
//! transfer L + b·G (MHETA eq. 3's T_{i->j}), each rank's measured copy,
//! shift and first-touch costs, and the buffer rules of the runtime's
//! `RowBlock::redistribute`.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use mheta_model::synthetic::{G, L, jacobi_trace, profile};
use mheta_model::{Dist, Model};
use mheta_profile::{ClusterProfile, NodeCost, SampleStats, ShiftPoint};
use mheta_trace::{AppDecl, ArrayDecl};

/// Bytes of a row of the one array.
const ROW: u64 = 1000;
/// A rank's costs, seconds per byte: a copy with its node's other ranks
/// copying (the on-node copy's), a shift alone, and first touch.
const COPY: f64 = 2e-10;
const SHIFT: f64 = 1.5e-10;
const TOUCH: f64 = 5e-10;

/// Two ranks on `hosts`, 100 rows each of one 1000-byte array; the nodes
/// measured their copy and touch costs when `measured`.
fn model(hosts: [&str; 2], measured: bool) -> Model {
    model_rows_of(&hosts, measured, ROW)
}

/// One rank on each of `hosts`, 100 rows each of one array of `row`-byte
/// rows.
fn model_rows_of(hosts: &[&str], measured: bool, row: u64) -> Model {
    model_edited(hosts, measured, row, |_| {})
}

/// [`model_rows_of`] with its profile changed by `edit` first.
fn model_edited(
    hosts: &[&str],
    measured: bool,
    row: u64,
    edit: impl Fn(&mut ClusterProfile),
) -> Model {
    let p = hosts.len();
    let mut prof = profile(p as u32);
    prof.hosts = hosts.iter().map(|h| h.to_string()).collect();
    for rank in 0..p as u32 {
        prof.nodes.push(NodeCost {
            rank,
            host: hosts[rank as usize].into(),
            cpu_weight: 1.0,
            cpu_kernel: SampleStats::from_samples(&[1.0]),
            mem_available_bytes: 1 << 30,
            disk: None,
            copy_per_byte: measured.then(|| SampleStats::from_samples(&[COPY])),
            shift_per_byte: measured.then(|| SampleStats::from_samples(&[SHIFT])),
            touch_per_byte: measured.then(|| SampleStats::from_samples(&[TOUCH])),
            reuse_by: Vec::new(),
            machine: None,
            machine_cpus: None,
            shift_by: Vec::new(),
        });
    }
    edit(&mut prof);
    let mut app = AppDecl::new("test", 100 * p as u64, vec![100; p]);
    app.arrays = vec![ArrayDecl::rows("u", row, false, false)];
    let traces: Vec<_> = (0..p as u32)
        .map(|r| jacobi_trace(r, p as u32, 1_000_000, 8000))
        .collect();
    Model::new(&traces, app, &prof).unwrap()
}

/// Rows of 100 KB: 50 of them (5 MB) are a piece for the runtime's
/// on-node copy, so the runtime learns where its peers are.
const BIG_ROW: u64 = 100_000;

/// Four ranks of 100 rows of the one array on four hosts, each pair's
/// transport holding `held` bytes of a sender's message.
fn chain(held: Option<u64>) -> Model {
    chain_with(held, None)
}

/// [`chain`] with each pair's measured eager limit `eager`.
fn chain_with(held: Option<u64>, eager: Option<u64>) -> Model {
    let mut prof = profile(4);
    prof.hosts = ["a", "b", "c", "d"].iter().map(|h| h.to_string()).collect();
    for c in &mut prof.pairs {
        c.send_buffer_bytes = held;
        c.eager_limit_bytes = eager;
    }
    let mut app = AppDecl::new("test", 400, vec![100; 4]);
    app.arrays = vec![ArrayDecl::rows("u", ROW, false, false)];
    let traces: Vec<_> = (0..4)
        .map(|r| jacobi_trace(r, 4, 1_000_000, 8000))
        .collect();
    Model::new(&traces, app, &prof).unwrap()
}

/// Each rank of a [`chain`] move done at `want` pieces' time `w`, the
/// move when the last is.
fn chain_ends(c: &mheta_model::redist::MoveCost, want: [f64; 4], w: f64) {
    for (got, want) in c.rank_s.iter().zip(want) {
        close(*got, want * w);
    }
    close(c.total_s, want.iter().copied().fold(0.0, f64::max) * w);
}

fn close(got: f64, want: f64) {
    assert!((got - want).abs() < 1e-15, "{got} vs {want}");
}

#[test]
fn rows_kept_in_place_cost_no_copy_and_fresh_memory_hides_under_the_network() {
    let m = model_rows_of(&["a", "b"], true, BIG_ROW);
    // 50 rows (5 MB) from rank 1 to rank 0: rank 1 loses its top rows
    // and keeps the rest where they lie; rank 0's buffer grows by 50
    // rows, touched while it waits for them from the other host.
    let by = 50.0 * BIG_ROW as f64;
    let c = m.move_cost(&Dist(vec![100, 100]), &Dist(vec![150, 50]));
    let wire = L + by * G;
    assert!(by * TOUCH < wire);
    close(c.rank_s[0], wire);
    close(c.rank_s[1], wire);
    close(c.total_s, wire);
    assert_eq!(c.bytes, 50 * BIG_ROW);
}

#[test]
fn without_a_piece_for_the_on_node_copy_fresh_memory_is_backed_up_front() {
    // The same move in rows of 1000 B: no piece is large enough for the
    // on-node copy, so the runtime does not look for its peers and backs
    // rank 0's fresh rows before it posts; rank 1's piece waits for that.
    let m = model(["a", "b"], true);
    let c = m.move_cost(&Dist(vec![100, 100]), &Dist(vec![150, 50]));
    let wire = L + 50.0 * ROW as f64 * G;
    let touch = 50.0 * ROW as f64 * TOUCH;
    close(c.rank_s[0], touch + wire);
    close(c.rank_s[1], touch + wire);
}

#[test]
fn a_block_that_gains_rows_above_its_own_shifts_them_between_sends_and_receives() {
    let m = model(["a", "b"], true);
    // 50 rows from rank 0 to rank 1: rank 1's block now starts 50 rows
    // earlier, so its 100 kept rows shift by 50 before it receives, into
    // a buffer grown by 50 rows (backed up front: no piece for the
    // on-node copy). Rank 0's piece waits for rank 1 to post its receive.
    let c = m.move_cost(&Dist(vec![100, 100]), &Dist(vec![50, 150]));
    let wire = L + 50.0 * ROW as f64 * G;
    let shift = 100.0 * ROW as f64 * SHIFT;
    let touch = 50.0 * ROW as f64 * TOUCH;
    close(c.rank_s[0], touch + shift + wire);
    close(c.rank_s[1], touch + shift + wire);
}

#[test]
fn a_shift_backs_the_fresh_rows_it_writes_and_the_receives_hide_the_rest() {
    // Three hosts, rows of 100 KB. Rank 1 gains 50 rows above its own
    // (from rank 0) and 50 below (from rank 2): its 100 kept rows shift
    // by 50, and the last 50 of them land in fresh memory, backed before
    // the copy; the 50 fresh rows below them are backed while its two
    // receives wait. Ranks 0 and 2 keep their rows where they lie and
    // send as soon as rank 1 has posted.
    let m = model_rows_of(&["a", "b", "c"], true, BIG_ROW);
    let c = m.move_cost(&Dist(vec![100; 3]), &Dist(vec![50, 200, 50]));
    let by = 50.0 * BIG_ROW as f64;
    let wire = L + by * G;
    let post = 100.0 * BIG_ROW as f64 * SHIFT + by * TOUCH;
    assert!(by * TOUCH < 2.0 * wire);
    close(c.rank_s[0], post + wire);
    close(c.rank_s[2], post + wire);
    close(c.rank_s[1], post + 2.0 * wire);
}

#[test]
fn ranks_that_receive_in_turn_hold_up_their_senders_along_a_chain() {
    // Four ranks of 100 rows on four hosts, each block moved whole one
    // rank down: ranks 1 and 2 keep no row, so each sends, then receives;
    // rank 3's piece waits for rank 2, whose receive waits for its own
    // send to rank 1: three pieces one after another.
    let c = chain(None).move_cost(&Dist(vec![100; 4]), &Dist(vec![200, 100, 100, 0]));
    let wire = L + 100.0 * ROW as f64 * G;
    chain_ends(&c, [1.0, 2.0, 3.0, 3.0], wire);
}

#[test]
fn a_transport_that_holds_a_senders_bytes_lets_the_chain_overlap() {
    // The chain above, with each pair's transport holding half a piece
    // for its sender (`send_buffer_bytes`): a sender's request completes
    // half a piece's time before its receiver has the piece, so the rank
    // that waited for it posts its own receive that much sooner. Rank 1
    // sends to rank 0 in [0, w] and is done at w/2; rank 2's piece runs in
    // [w/2, 3w/2] and it is done at w; rank 3's in [w, 2w].
    let to = Dist(vec![200, 100, 100, 0]);
    let c = chain(Some(50 * ROW)).move_cost(&Dist(vec![100; 4]), &to);
    let w = L + 100.0 * ROW as f64 * G;
    chain_ends(&c, [1.0, 1.5, 2.0, 1.5], w);
    // A transport that holds a whole piece: every sender goes on at once
    // and the three pieces run side by side.
    let c = chain(Some(100 * ROW)).move_cost(&Dist(vec![100; 4]), &to);
    close(c.total_s, w);
}

#[test]
fn a_rendezvous_pieces_first_fragment_is_not_held_for_its_sender() {
    // The chain above, each transport able to hold a whole piece, but
    // each pair's eager limit 20 rows: a piece's first 20 rows leave
    // before its receive is matched, so the sender is done 80 rows'
    // share of the piece (0.8 w) before its receiver has it. Rank 1 is
    // done sending at 0.2 w, rank 2's piece runs in [0.2 w, 1.2 w] and
    // it is done sending at 0.4 w, rank 3's in [0.4 w, 1.4 w].
    let to = Dist(vec![200, 100, 100, 0]);
    let c = chain_with(Some(100 * ROW), Some(20 * ROW)).move_cost(&Dist(vec![100; 4]), &to);
    let w = L + 100.0 * ROW as f64 * G;
    for (got, want) in c.rank_s.iter().zip([1.0, 1.2, 1.4, 0.6]) {
        assert!((got - want * w).abs() < 1e-12 * w, "{got} vs {}", want * w);
    }
    // A piece within the eager limit is the sender's at once.
    let c = chain_with(Some(0), Some(200 * ROW)).move_cost(&Dist(vec![100; 4]), &to);
    close(c.total_s, w);
}

#[test]
fn fresh_memory_is_paid_up_front_when_the_sender_shares_the_host() {
    let m = model(["a", "a"], true);
    // Rank 1's piece waits for rank 0 to back its fresh rows.
    let c = m.move_cost(&Dist(vec![100, 100]), &Dist(vec![150, 50]));
    let wire = L + 50.0 * ROW as f64 * G;
    close(c.rank_s[0], 50.0 * ROW as f64 * TOUCH + wire);
    close(c.rank_s[1], 50.0 * ROW as f64 * TOUCH + wire);
}

#[test]
fn a_profile_without_memory_costs_never_prices_a_copy_at_a_links_rate() {
    // One rank a host and no copy measured: the shift is unpriced, not
    // priced at the link's G (which would add 100 us here).
    let m = model(["a", "b"], false);
    let c = m.move_cost(&Dist(vec![100, 100]), &Dist(vec![50, 150]));
    close(c.rank_s[1], L + 50.0 * ROW as f64 * G);
}

#[test]
fn a_large_piece_between_ranks_of_one_host_moves_at_the_copy_rate_where_no_direct_rate_was_measured()
 {
    // 50 rows of 100 KB: 5 MB, above the runtime's cross-process copy
    // threshold, so the runtime copies it directly, not through MPI.
    let row = 100_000u64;
    let by = 50.0 * row as f64;
    assert!(by >= mheta_model::redist::DIRECT_COPY_MIN_BYTES as f64);
    let m = model_rows_of(&["a", "a"], true, row);
    let c = m.move_cost(&Dist(vec![100, 100]), &Dist(vec![150, 50]));
    close(c.rank_s[0], by * TOUCH + by * COPY);
    close(c.rank_s[1], by * TOUCH + by * COPY);
    // On two hosts the same piece crosses the link.
    let m = model_rows_of(&["a", "b"], true, row);
    let c = m.move_cost(&Dist(vec![100, 100]), &Dist(vec![150, 50]));
    close(c.rank_s[1], L + by * G);
}

#[test]
fn a_large_piece_between_ranks_of_one_host_moves_at_their_measured_direct_rate() {
    // The profile timed the runtime's copy by both ends for each pair of
    // the host (`direct_copy_bps`): the piece moves at the slower end's
    // rate (each rank's median over its pairs), not the memmove's COPY.
    let (fast, slow) = (3e-10, 4e-10);
    let m = model_edited(&["a", "a"], true, BIG_ROW, |p| {
        for c in &mut p.pairs {
            c.direct_copy_bps = Some(1.0 / if c.src == 0 { fast } else { slow });
        }
    });
    let by = 50.0 * BIG_ROW as f64;
    let c = m.move_cost(&Dist(vec![100, 100]), &Dist(vec![150, 50]));
    // Each rank's median over its two pairs (0->1, 1->0): (fast + slow) / 2.
    close(c.total_s, by * TOUCH + by * (fast + slow) / 2.0);
}

#[test]
fn a_small_piece_between_ranks_of_one_host_is_no_faster_than_its_cold_rate() {
    // 50 rows of 1000 B through MPI: the sweep's fit gives L + b G, but
    // the profile's cold rate (`bandwidth_cold_bps`, rows out of the
    // cache) is slower, and a move's rows are out of the cache.
    let cold = 2.5e-9;
    let cold_model = |hosts: [&str; 2]| {
        model_edited(&hosts, true, ROW, |p| {
            for c in &mut p.pairs {
                c.bandwidth_cold_bps = 1.0 / cold;
            }
        })
    };
    let by = 50.0 * ROW as f64;
    assert!(by * cold > L + by * G);
    let c = cold_model(["a", "a"]).move_cost(&Dist(vec![100, 100]), &Dist(vec![150, 50]));
    close(c.total_s, by * TOUCH + by * cold);
    // Across a link the link's fit stands (the backing is up front: no
    // piece for the on-node copy, so the runtime does not probe).
    let c = cold_model(["a", "b"]).move_cost(&Dist(vec![100, 100]), &Dist(vec![150, 50]));
    close(c.total_s, by * TOUCH + L + by * G);
}

#[test]
fn a_host_with_more_ranks_than_cpus_copies_shifts_and_backs_at_its_share() {
    // The block-gains-rows move of the test above, both ranks on one
    // host. Its machine recorded one CPU: the apps give each of the two
    // ranks half a core, and the shift, the backing and the piece (a copy
    // by MPI on the host) take twice as long as measured with a core
    // each. Two CPUs, or none recorded: as measured.
    let crowded = |cpus: Option<u32>| {
        model_edited(&["a", "a"], true, ROW, |p| {
            for n in &mut p.nodes {
                n.machine_cpus = cpus;
            }
        })
    };
    let (from, to) = (Dist(vec![100, 100]), Dist(vec![50, 150]));
    let alone = crowded(None).move_cost(&from, &to);
    assert_eq!(crowded(Some(2)).move_cost(&from, &to), alone);
    let halved = crowded(Some(1)).move_cost(&from, &to);
    close(halved.total_s, 2.0 * alone.total_s);
    // One rank a host: each keeps its core, whatever the machine has.
    let apart = |cpus: Option<u32>| {
        model_edited(&["a", "b"], true, ROW, |p| {
            for n in &mut p.nodes {
                n.machine_cpus = cpus;
            }
        })
        .move_cost(&from, &to)
    };
    assert_eq!(apart(Some(1)), apart(None));
}

#[test]
fn a_shift_is_priced_at_its_distance() {
    // Rank 1's 100 kept rows shift by 50 rows (50 KB). Its shifts were
    // measured at 25 KB and 100 KB, whose log2 midpoint 50 KB is: the
    // rate there is the two points' mean.
    let (near, far) = (1e-10, 4e-10);
    let measured_at = |points: [u64; 2]| {
        model_edited(&["a", "b"], true, ROW, move |p| {
            for n in &mut p.nodes {
                n.shift_by = [(points[0], near), (points[1], far)]
                    .map(|(d, x)| ShiftPoint {
                        distance_bytes: d,
                        per_byte: SampleStats::from_samples(&[x]),
                    })
                    .to_vec();
            }
        })
    };
    let wire = L + 50.0 * ROW as f64 * G;
    let touch = 50.0 * ROW as f64 * TOUCH;
    let with_rate = |x: f64| touch + 100.0 * ROW as f64 * x + wire;
    let (from, to) = (Dist(vec![100, 100]), Dist(vec![50, 150]));
    for (points, rate) in [
        ([25_000, 100_000], (near + far) / 2.0),
        // Beyond the points the nearest one holds.
        ([5_000, 25_000], far),
        ([100_000, 400_000], near),
    ] {
        let c = measured_at(points).move_cost(&from, &to);
        let want = with_rate(rate);
        assert!(
            (c.total_s - want).abs() < 1e-12 * want,
            "{points:?}: {} vs {want}",
            c.total_s
        );
    }
}
