//! Tests of the profile's layout, loading and validation.

use super::*;
use crate::samples::Mode;

pub(crate) fn two() -> ClusterProfile {
    let mut p = ClusterProfile::new(2, vec!["a".into(), "b".into()], "test");
    p.pairs.push(PairCost::logp(0, 1, 1e-6, 1e-10, 2e-7, 3e-7));
    p.pairs.push(PairCost::logp(1, 0, 1e-6, 1e-10, 2e-7, 3e-7));
    p
}

#[test]
fn streaming_bandwidth_is_read_at_the_largest_size_below() {
    let mut c = PairCost::logp(0, 1, 1e-6, 1e-10, 1e-7, 1e-7);
    assert_eq!(c.streaming_bps_at(8 << 20), None);
    c.sweep = [(1u64 << 20, 9000.0), (8 << 20, 5500.0), (32 << 20, 4400.0)]
        .into_iter()
        .map(|(bytes, mbps)| SizePoint {
            bytes,
            one_way: SampleStats::point(1e-3),
            bandwidth_mbps: mbps,
        })
        .collect();
    assert_eq!(c.streaming_bps_at(8 << 20), Some((8 << 20, 5.5e9)));
    assert_eq!(c.streaming_bps_at(20 << 20), Some((8 << 20, 5.5e9)));
    assert_eq!(c.streaming_bps_at(1 << 30), Some((32 << 20, 4.4e9)));
    assert_eq!(c.streaming_bps_at(4096), Some((1 << 20, 9.0e9)));
}

#[test]
fn a_move_scales_the_part_of_a_piece_beyond_the_fixed_cost() {
    // 500 us one way at 0 bytes, 17 ns a byte.
    let mut c = PairCost::logp(0, 1, 480e-6, 17e-9, 10e-6, 10e-6);
    assert_eq!(c.move_scale(4e6), 1.0, "not measured");
    let fixed = c.one_way_s(0.0);
    // Napped, 1 MiB took the fixed cost and all of the rest, 8 MiB the
    // fixed cost and two thirds of the rest.
    c.moves = [(MOVE_BYTES[0], 1.0), (MOVE_BYTES[1], 2.0 / 3.0)]
        .into_iter()
        .map(|(bytes, k)| MovePoint {
            bytes,
            one_way_s: fixed + k * (c.one_way_s(bytes as f64) - fixed),
        })
        .collect();
    let near = |a: f64, b: f64| (a - b).abs() < 1e-6;
    assert!(near(c.move_scale(1e3), 1.0));
    assert!(near(c.move_scale((1 << 20) as f64), 1.0));
    // Half way in log2 between 1 and 8 MiB.
    let mid = (1u64 << 20) as f64 * 8f64.sqrt();
    assert!(near(c.move_scale(mid), 5.0 / 6.0), "{}", c.move_scale(mid));
    assert!(near(c.move_scale(64e6), 2.0 / 3.0));
    // Faster than its own fixed cost is no measurement of a rate.
    c.moves[1].one_way_s = 0.5 * fixed;
    assert_eq!(c.move_scales(), vec![(MOVE_BYTES[0], c.move_scale(0.0))]);
}

#[test]
fn round_trip() {
    let p = two();
    assert_eq!(
        ClusterProfile::parse(&p.to_json(), Path::new("p")).unwrap(),
        p
    );
}

#[test]
fn wrong_version_named() {
    let s = two().to_json().replace("\"version\": 2", "\"version\": 7");
    let e = ClusterProfile::parse(&s, Path::new("prof.json"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("prof.json") && e.contains("version 7"), "{e}");
}

#[test]
fn missing_pair_named() {
    let mut p = two();
    p.pairs.pop();
    let e = ClusterProfile::parse(&p.to_json(), Path::new("p"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("pair 1->0 is missing"), "{e}");
}

#[test]
fn garbage_is_corrupt() {
    let e = ClusterProfile::parse("{not json", Path::new("p")).unwrap_err();
    assert!(matches!(e, ProfileError::Corrupt { .. }));
}

#[test]
fn with_mode_moves_overheads_latency_and_the_curve() {
    let mut p = two();
    let bimodal = |fast: f64, slow: f64| SampleStats {
        modes: vec![
            Mode {
                value: fast,
                share: 0.7,
                ..Mode::default()
            },
            Mode {
                value: slow,
                share: 0.3,
                ..Mode::default()
            },
        ],
        ..SampleStats::default()
    };
    let c = &mut p.pairs[0];
    c.one_way_small = bimodal(1.5e-6, 3.0e-6);
    c.o_recv = bimodal(3e-7, 6e-7);
    let before = c.one_way_s(1e6);
    let dom = p.with_mode(ModeChoice::Dominant);
    assert_eq!(dom.pairs[0].o_send_s, 2e-7, "no modes: kept");
    assert!((dom.pairs[0].one_way_s(1e6) - before).abs() < 1e-15);
    let mean = p.with_mode(ModeChoice::Mean);
    let c = &mean.pairs[0];
    assert!((c.o_recv_s - (0.7 * 3e-7 + 0.3 * 6e-7)).abs() < 1e-18);
    assert!((c.rtt_small_s - 2.0 * (0.7 * 1.5e-6 + 0.3 * 3.0e-6)).abs() < 1e-15);
    let slow = p.with_mode(ModeChoice::Slow);
    let c = &slow.pairs[0];
    assert_eq!(c.o_recv_s, 6e-7);
    assert!((c.rtt_small_s - 6e-6).abs() < 1e-15);
    assert!((c.latency_s - (3e-6 - 2e-7 - 6e-7)).abs() < 1e-15);
    assert!((c.one_way_s(1e6) - before - 1.5e-6).abs() < 1e-12);
    assert_eq!(slow.pairs[1], p.pairs[1], "a pair without modes is kept");
    assert_eq!(p.multi_modal().len(), 2);
}

/// A node of `two()` with the reuse points `pts`.
fn with_reuse(pts: Vec<ReusePoint>) -> ClusterProfile {
    let mut p = two();
    for rank in 0..2 {
        p.nodes.push(NodeCost {
            reuse_by: pts.clone(),
            ..NodeCost::bare(rank, if rank == 0 { "a" } else { "b" })
        });
    }
    p
}

#[test]
fn a_reuse_curve_out_of_order_or_implausible_is_named() {
    let pt = |ws: u64, t: f64, rel: f64| ReusePoint {
        ws_bytes: ws,
        reuse_s: t,
        per_byte: SampleStats::point(5e-11 * rel),
        rel,
        rel_ci95: [rel * 0.9, rel * 1.1],
    };
    let good = vec![
        pt(4 << 20, 0.001, 1.0),
        pt(4 << 20, 0.02, 2.0),
        pt(16 << 20, 0.002, 1.0),
    ];
    let p = with_reuse(good.clone());
    assert_eq!(
        ClusterProfile::parse(&p.to_json(), Path::new("p")).unwrap(),
        p
    );
    let bad = |pts: Vec<ReusePoint>| {
        ClusterProfile::parse(&with_reuse(pts).to_json(), Path::new("prof.json"))
            .unwrap_err()
            .to_string()
    };
    // A shorter time after a longer one of the same working set.
    let mut v = good.clone();
    v.swap(0, 1);
    let e = bad(v);
    assert!(
        e.contains("prof.json") && e.contains("reuse_by at 4194304 B, 0.001 s: does not follow"),
        "{e}"
    );
    // A smaller working set after a larger one.
    let mut v = good.clone();
    v.push(pt(4 << 20, 0.05, 2.5));
    assert!(bad(v).contains("does not follow 16777216 B"));
    // A ratio outside its interval, a time of 0, no bytes.
    let mut v = good.clone();
    v[1].rel_ci95 = [0.5, 1.5];
    assert!(bad(v).contains("is not a ratio of costs inside its interval"));
    let mut v = good.clone();
    v[0].reuse_s = 0.0;
    assert!(bad(v).contains("reuse_s is not a time"));
    let mut v = good;
    v[2].ws_bytes = 0;
    assert!(bad(v).contains("ws_bytes is 0"));
}
