use super::*;

/// A profile of ranks on `hosts` whose pair (s, d) costs `g(s, d)` a
/// byte.
fn priced(hosts: &[&str], g: impl Fn(u32, u32) -> f64) -> ClusterProfile {
    let p = hosts.len() as u32;
    let names = hosts.iter().map(|h| h.to_string()).collect();
    let mut prof = ClusterProfile::new(p, names, "test");
    for s in 0..p {
        for d in (0..p).filter(|&d| d != s) {
            prof.pairs.push(mheta_profile::PairCost::logp(
                s,
                d,
                5e-6,
                g(s, d),
                1e-6,
                2e-6,
            ));
        }
    }
    prof
}

#[test]
fn an_exchange_is_priced_from_its_measured_points_by_size_and_gap() {
    // Pair 0 -> 1: one-way 8 us + 1 ns a byte (o_s 1 us, o_r 2 us).
    // Its exchanges: back to back 10 us over the one-way fit at 1 KB
    // and 30 at 16 KB; after 10 ms, 100 and 140.
    let mut prof = priced(&["a", "b"], |_, _| 1e-9);
    let one_way = |b: f64| 8e-6 + 1e-9 * b;
    let pt = |gap_s: f64, bytes: u64, over: f64| mheta_profile::ExchangePoint {
        gap_s,
        bytes,
        one_way: mheta_profile::SampleStats::point(one_way(bytes as f64) + over),
    };
    prof.pairs[0].exchange = vec![
        pt(0.0, 1000, 10e-6),
        pt(0.0, 16000, 30e-6),
        pt(0.01, 1000, 100e-6),
        pt(0.01, 16000, 140e-6),
    ];
    let net = Net::from_profile(&prof);
    assert!(net.has_exchanges());
    let (pr, back) = (net.pair(0, 1), net.pair(1, 0));
    let close = |x: f64, y: f64| (x - y).abs() < 1e-12;
    let both = |b: f64, g: f64| pr.exchange_transfer(b, g, true) - pr.transfer(b);
    let one = |b: f64, g: f64| pr.exchange_transfer(b, g, false) - pr.transfer(b);
    // At a measured point, its excess over the transfer; one way, its
    // excess over the exchange back to back.
    assert!(close(both(1000.0, 0.0), 10e-6) && close(one(1000.0, 0.0), 0.0));
    assert!(close(both(16000.0, 0.01), 140e-6) && close(one(16000.0, 0.01), 110e-6));
    // Linear in size between sizes, flat past them.
    assert!(close(both(8500.0, 0.0), 20e-6));
    assert!(close(both(1e6, 0.0), 30e-6));
    assert!(close(both(10.0, 0.01), 100e-6));
    // Linear in the gap between gaps, flat past the longest.
    assert!(close(both(1000.0, 0.005), 55e-6) && close(one(1000.0, 0.005), 45e-6));
    assert!(close(both(16000.0, 1.0), 140e-6));
    // A pair that measured none: its transfer.
    assert!(close(
        back.exchange_transfer(1000.0, 0.01, true),
        back.transfer(1000.0)
    ));
}

#[test]
fn a_sends_overhead_follows_its_size_and_its_message_arrives_as_measured() {
    // Pair 0 -> 1: o_s 1 us at 8 B, one-way 8 us + 1 ns a byte; its
    // sends took 3 us at 1000 B, 2.5 (below 3: taken as 3) at 2000 and
    // 50 us at 16008 B. Pair 1 -> 0 measured none.
    let mut prof = priced(&["a", "b"], |_, _| 1e-9);
    let pt = |bytes: u64, o: f64| mheta_profile::SendPoint {
        bytes,
        o_send_s: o,
        o_send: mheta_profile::SampleStats::point(o),
    };
    prof.pairs[0].send_by_size = vec![pt(1000, 3e-6), pt(2000, 2.5e-6), pt(16008, 50e-6)];
    let net = Net::from_profile(&prof);
    let (pr, back) = (net.pair(0, 1), net.pair(1, 0));
    let close = |x: f64, y: f64| (x - y).abs() < 1e-12;
    // o_s at and below 8 B; linear from (8 B, 1 us) to (1000 B, 3 us);
    // never below a smaller size's; linear up to the largest, flat past.
    assert!(close(pr.o_send_at(0.0), 1e-6) && close(pr.o_send_at(8.0), 1e-6));
    assert!(close(pr.o_send_at(504.0), 2e-6));
    assert!(close(pr.o_send_at(1500.0), 3e-6));
    assert!(close(pr.o_send_at(9004.0), 26.5e-6));
    assert!(close(pr.o_send_at(1e6), 50e-6));
    // The arrival (sender's time plus wire) is the one-way fit's less
    // o_r at every size, until the sender's time outlasts it.
    for b in [8.0, 504.0, 1500.0, 2500.0] {
        let (o, wire) = pr.send_costs(b, None, false);
        assert!(close(o + wire, 8e-6 + 1e-9 * b - 2e-6), "{b} B");
    }
    for b in [9004.0, 16008.0] {
        let (o, wire) = pr.send_costs(b, None, false);
        assert!(close(o, pr.o_send_at(b)) && wire == 0.0, "{b} B");
    }
    // A pair that measured no sizes: o_s and the transfer.
    let (o, wire) = back.send_costs(9004.0, Some(0.0), true);
    assert!(close(o, 1e-6) && close(wire, back.transfer(9004.0)));
}

#[test]
fn a_moves_on_host_rates_come_from_the_pairs_of_the_ranks_host_alone() {
    // Ranks 0, 1 and 2 on host a, 3 alone on b. Each pair's cold and
    // direct rates differ; a rank takes the median over its host's
    // pairs either way, and rank 3 has none (cold unpriced, direct
    // its copy figure).
    let mut prof = priced(&["a", "a", "a", "b"], |_, _| 1e-9);
    for c in &mut prof.pairs {
        let k = f64::from(1 + c.src + c.dst);
        c.bandwidth_cold_bps = 1e9 * k;
        c.direct_copy_bps = Some(2e9 * k);
    }
    let net = Net::from_profile(&prof);
    // Rank 0's pairs on a: with 1 (k = 2) and 2 (k = 3), both ways:
    // the median of 1/2, 1/2, 1/3, 1/3 ns.
    let want0 = (0.5e-9 + 1e-9 / 3.0) / 2.0;
    assert!((net.cold_per_byte[0] - want0).abs() < 1e-24);
    assert!((net.direct_per_byte[0] - want0 / 2.0).abs() < 1e-24);
    // Rank 1's: with 0 (k = 2) and 2 (k = 4).
    assert!((net.cold_per_byte[1] - (0.5e-9 + 0.25e-9) / 2.0).abs() < 1e-24);
    assert_eq!(net.cold_per_byte[3], 0.0);
    assert_eq!(net.direct_per_byte[3], net.copy_per_byte[3]);
}

#[test]
fn a_copy_costs_what_the_rank_measured_else_its_hosts_fastest_pair() {
    // Ranks 0 and 1 share host a (shared memory, 0.1 ns a byte); 2 is
    // alone on b; links cost 8 ns a byte, 40 into b.
    let g = |s: u32, d: u32| match (s, d) {
        (0, 1) | (1, 0) => 0.1e-9,
        (_, 2) => 40e-9,
        _ => 8e-9,
    };
    let net = Net::from_profile(&priced(&["a", "a", "b"], g));
    let c = &net.copy_per_byte;
    assert_eq!(c.len(), 3);
    assert!(
        (c[0] - 0.1e-9).abs() < 1e-15 && (c[1] - 0.1e-9).abs() < 1e-15,
        "{c:?}"
    );
    // Alone on b: the fastest pair of any host.
    assert!((c[2] - 0.1e-9).abs() < 1e-15, "{c:?}");
    // One rank per host and no copy measured: unpriced, never a
    // link's rate (8 ns a byte here, 100 times a memory's).
    let links = |_: u32, d: u32| if d == 2 { 40e-9 } else { 8e-9 };
    let mut prof = priced(&["a", "b", "c"], links);
    let net = Net::from_profile(&prof);
    assert_eq!(net.copy_per_byte, vec![0.0; 3]);
    // Each rank's own measured copy, where the node measured it.
    for r in 0..3u32 {
        let mut n = mheta_profile::NodeCost {
            rank: r,
            host: String::new(),
            cpu_weight: 1.0,
            cpu_kernel: mheta_profile::SampleStats::from_samples(&[1.0]),
            mem_available_bytes: 1 << 30,
            disk: None,
            copy_per_byte: None,
            shift_per_byte: None,
            touch_per_byte: None,
            reuse_by: Vec::new(),
            machine: None,
            machine_cpus: None,
            shift_by: Vec::new(),
        };
        if r != 1 {
            let s = [0.1e-9, 0.12e-9, 0.11e-9].map(|x| x * (1 + r) as f64);
            n.copy_per_byte = Some(mheta_profile::SampleStats::from_samples(&s));
        }
        if r == 2 {
            n.shift_per_byte = Some(mheta_profile::SampleStats::from_samples(&[0.2e-9]));
        }
        prof.nodes.push(n);
    }
    let net = Net::from_profile(&prof);
    let c = &net.copy_per_byte;
    assert!((c[0] - 0.11e-9).abs() < 1e-18, "{c:?}");
    assert_eq!(c[1], 0.0, "{c:?}");
    assert!((c[2] - 0.33e-9).abs() < 1e-18, "{c:?}");
    // A shift alone at its own figure where measured, else the copy's.
    assert_eq!(net.shift_per_byte[0], c[0]);
    assert_eq!(net.shift_per_byte[1], 0.0);
    assert_eq!(net.shift_per_byte[2], 0.2e-9);
}
