//! The risk-aware search offers a plan only when it lowers the quantile
//! at a mean no more than `risk::MEAN_COST` dearer, and says why when it
//! offers the mean plan instead: on the synthetic Jacobi trace under a
//! load without spread (no plan lowers the tail), and under a bursty one.

use mheta_model::slowdown::{LoadSpec, NodeLoad};
use mheta_model::stoch::{Mixture, ModeStat, Stoch};
use mheta_model::synthetic::{app, jacobi_trace, profile};
use mheta_model::{Model, risk};

fn model(p: u32) -> Model {
    let traces: Vec<_> = (0..p)
        .map(|r| jacobi_trace(r, p, 1_000_000, 8 * 1026))
        .collect();
    Model::new(&traces, app(vec![64; p as usize]), &profile(p)).expect("model")
}

/// Rank 0's node with CPU availability `mx`, the others dedicated.
fn on_rank0(mx: Mixture) -> LoadSpec {
    LoadSpec {
        nodes: vec![NodeLoad {
            ranks: vec![0],
            cpu_avail: Some(mx),
            ..NodeLoad::default()
        }],
        ..LoadSpec::default()
    }
}

#[test]
fn a_load_without_spread_gets_the_mean_plan_and_says_why() {
    let p = 4;
    let m = model(p);
    let steady = Mixture::single(Stoch::point(0.5));
    let s = on_rank0(steady)
        .resolve(p as usize, 10.0, "t")
        .expect("load");
    let r = risk::quantile_search(&m.clone().with_load(s), 0.95).expect("search");
    assert!(!r.differ, "{r:?}");
    assert!(r.note.contains("no plan lowers"), "{}", r.note);
    assert_eq!(r.mean_plan.dist, r.quantile_plan.dist);
    // No load at all: said too.
    let r = risk::quantile_search(&m, 0.95).expect("search");
    assert!(!r.differ && r.note.contains("no load"), "{}", r.note);
}

#[test]
fn an_offered_plan_lowers_the_tail_at_a_mean_within_the_bound() {
    let p = 4;
    let m = model(p);
    let mode = |mean, sd, share| ModeStat {
        value: Stoch::new(mean, sd),
        share,
        mean_dwell_s: 1.0,
    };
    let bursty = Mixture {
        modes: vec![mode(1.0, 0.02, 0.6), mode(0.4, 0.05, 0.4)],
    };
    let s = on_rank0(bursty)
        .resolve(p as usize, 0.5, "t")
        .expect("load");
    let r = risk::quantile_search(&m.clone().with_load(s), 0.95).expect("search");
    if r.differ {
        assert!(r.note.is_empty());
        assert!(r.quantile_plan.quantile_s < r.mean_plan.quantile_s * (1.0 - risk::QUANTILE_GAIN));
        assert!(
            r.quantile_plan.per_iteration.mean
                <= r.mean_plan.per_iteration.mean * (1.0 + risk::MEAN_COST) + 1e-15
        );
    } else {
        assert!(!r.note.is_empty(), "the mean plan offered without a reason");
    }
}
