//! A stochastic prediction's band stays within what the load can
//! produce (`risk::range_within_load`): on the synthetic Jacobi trace, a
//! rank whose node switches between dedicated and half a CPU, over a run
//! short enough that the mixture's average spreads wide.

use mheta_model::slowdown::{LoadSpec, NodeLoad};
use mheta_model::stoch::{Mixture, ModeStat, Stoch};
use mheta_model::synthetic::{app, jacobi_trace, profile};
use mheta_model::{Dist, Model, risk};

#[test]
fn the_band_lies_between_the_replays_at_the_loads_bounds() {
    let p = 4u32;
    let traces: Vec<_> = (0..p)
        .map(|r| jacobi_trace(r, p, 1_000_000, 8 * 1026))
        .collect();
    let m = Model::new(&traces, app(vec![64; p as usize]), &profile(p)).expect("model");
    let mode = |mean, share| ModeStat {
        value: Stoch::new(mean, 0.01),
        share,
        mean_dwell_s: 1.0,
    };
    let spec = LoadSpec {
        nodes: vec![NodeLoad {
            ranks: vec![0],
            cpu_avail: Some(Mixture {
                modes: vec![mode(1.0, 0.5), mode(0.5, 0.5)],
            }),
            ..NodeLoad::default()
        }],
        ..LoadSpec::default()
    };
    let d = Dist::block(p as usize, 64 * p as u64);
    let ded = m.predict(&d).expect("dedicated").per_iteration_s;
    let ml = m
        .clone()
        .with_load(spec.resolve(p as usize, 0.2, "t").expect("load"));
    let sp = risk::predict_stochastic(&ml, &d).expect("stochastic");
    let (lo, hi) = sp.per_iteration.range2();
    let (clo, chi) = risk::range_within_load(&ml, &d, &sp).expect("range");
    // Rank 0 at the slowest mode less 2σ (0.48 of a CPU).
    let mut slow = spec.clone();
    slow.nodes[0].cpu_avail = Some(Mixture::single(Stoch::point(0.48)));
    let top = m
        .clone()
        .with_load(slow.resolve(p as usize, 0.2, "t").expect("load"))
        .predict(&d)
        .expect("slow")
        .per_iteration_s;
    assert!(
        lo < ded,
        "the unclipped band reaches below dedicated: {lo} < {ded}"
    );
    assert!(
        (clo - ded).abs() < 1e-9 * ded,
        "clipped at dedicated: {clo} {ded}"
    );
    assert!(
        chi <= top + 1e-12 && chi <= hi && clo < chi,
        "{clo} {chi} {top} {hi}"
    );
    // Without a load the band is the prediction's own.
    let sp0 = risk::predict_stochastic(&m, &d).expect("dedicated");
    assert_eq!(
        risk::range_within_load(&m, &d, &sp0).expect("range"),
        sp0.per_iteration.range2()
    );
}
