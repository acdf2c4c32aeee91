//! A profile that gives the unlisted pairs' costs by kind
//! (`ClusterProfile::unlisted`) against the same costs written pair by
//! pair: the model must not tell them apart.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use mheta_model::synthetic::{app, hetero_cluster, jacobi_trace, profile_by_host};
use mheta_model::{Dist, Model, search};
use mheta_profile::{ClusterProfile, PairCost};

/// `prof` with every pair listed: its own listed pairs, and each unlisted
/// one as its kind's costs.
fn written_out(prof: &ClusterProfile) -> ClusterProfile {
    let mut full = prof.clone();
    full.unlisted = None;
    full.pairs.clear();
    for s in 0..prof.np {
        for d in (0..prof.np).filter(|&d| d != s) {
            let mut c = prof.pair(s, d).clone();
            (c.src, c.dst) = (s, d);
            full.pairs.push(c);
        }
    }
    full.validate().unwrap();
    full
}

#[test]
fn costs_by_kind_predict_what_the_full_table_does() {
    // 11 ranks, 3 to a host (the last host has 2), with one listed pair
    // slower than its kind.
    let p = 11;
    let mut prof = profile_by_host(p, 3);
    prof.pairs
        .push(PairCost::logp(4, 5, 1e-3, 1e-7, 1e-6, 2e-6));
    prof.validate().unwrap();
    let full = written_out(&prof);
    let traces: Vec<_> = (0..p)
        .map(|r| jacobi_trace(r, p, 1_000_000 + 250_000 * (r as u64 % 4), 8 * 1026))
        .collect();
    let mut decl = app(vec![64; p as usize]);
    decl.arrays = vec![mheta_trace::ArrayDecl::rows("u", 8 * 1026, false, false)];
    let by_kind = Model::new(&traces, decl.clone(), &prof).unwrap();
    let listed = Model::new(&traces, decl, &full).unwrap();
    let block = Dist::block(p as usize, 64 * p as u64);
    let mut skew = vec![64u64; p as usize];
    (skew[0], skew[5], skew[10]) = (20, 140, 32);
    let skew = Dist(skew);
    for d in [&block, &skew] {
        assert_eq!(by_kind.predict(d).unwrap(), listed.predict(d).unwrap());
    }
    assert_eq!(
        by_kind.move_cost(&block, &skew),
        listed.move_cost(&block, &skew)
    );
    let (a, b) = (
        search::gbs(&by_kind).unwrap(),
        search::gbs(&listed).unwrap(),
    );
    assert_eq!((a.dist, a.predicted_s), (b.dist, b.predicted_s));
    // The listed pair is slower than its kind: it shows.
    let mut none = prof.clone();
    none.pairs.clear();
    let plain = Model::new(&traces, app(vec![64; p as usize]), &none).unwrap();
    assert!(
        plain.predict(&block).unwrap().per_iteration_s
            < by_kind.predict(&block).unwrap().per_iteration_s
    );
}

#[test]
fn a_kind_neither_listed_nor_given_is_an_error_that_names_a_pair() {
    let mut prof = profile_by_host(6, 3);
    prof.unlisted.as_mut().unwrap().other_host = None;
    let err = prof.validate().unwrap_err();
    assert_eq!(err, "pair 0->3 is missing");
    // Listing every pair between hosts completes it.
    for s in 0..6u32 {
        for d in (0..6u32).filter(|&d| d / 3 != s / 3) {
            prof.pairs
                .push(PairCost::logp(s, d, 5e-5, 1e-8, 1e-6, 2e-6));
        }
    }
    prof.validate().unwrap();
    // `mheta show --profile` prints the kind it gives.
    let rows: Vec<String> = (prof.tables().lines())
        .filter(|l| l.split_whitespace().next() == Some("*"))
        .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(rows, ["* same"]);
    prof.pairs
        .push(PairCost::logp(0, 3, 5e-5, 1e-8, 1e-6, 2e-6));
    assert_eq!(prof.validate().unwrap_err(), "pair 0->3 appears twice");
}

#[test]
fn thousands_of_ranks_build_and_plan_without_a_pair_table() {
    // 4096 ranks, 64 to a host: the full table would be 16.8 million
    // pairs.
    let p = 4096;
    let (traces, decl) = hetero_cluster(7, p, 64);
    let m = Model::new(&traces, decl, &profile_by_host(p, 64)).unwrap();
    let g = search::gbs(&m).unwrap();
    let b = search::block(&m).unwrap();
    assert_eq!(g.dist.iter().sum::<u64>(), 64 * p as u64);
    assert!(
        g.predicted_s < b.predicted_s,
        "{} vs {}",
        g.predicted_s,
        b.predicted_s
    );
}
