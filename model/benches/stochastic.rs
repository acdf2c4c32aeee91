//! What stochastic values cost a prediction: on the model bench's
//! Jacobi-like synthetic trace of P ranks, one point-valued prediction
//! (`Model::predict`, dedicated), the same under a load (every fourth
//! rank's node with a CPU availability of two modes, Schopf and Berman), the
//! stochastic prediction (`risk::predict_stochastic`: the replay at the
//! mean slowdowns plus Clark's Max over the ranks), and the searches: GBS
//! dedicated against the risk-aware quantile search (GBS twice and a line
//! search). Run: `cargo bench -p mheta-model --bench stochastic`.
//! Times are medians of 15 batches measured in this run.

use mheta_model::slowdown::{LoadSpec, NodeLoad};
use mheta_model::stoch::{Mixture, ModeStat, Stoch};
use mheta_model::synthetic::{app, jacobi_trace, profile};
use mheta_model::{Dist, Model, risk, search};
use std::hint::black_box;
use std::time::Instant;

fn time_per<F: FnMut()>(reps: u32, mut f: F) -> f64 {
    let mut batches: Vec<f64> = (0..15)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..reps {
                f();
            }
            t.elapsed().as_secs_f64() / reps as f64
        })
        .collect();
    mheta_base::median(&mut batches).expect("15 batches")
}

fn main() {
    println!(
        "{:>6} {:>14} {:>14} {:>14} {:>10} {:>11} {:>13}",
        "ranks", "point (us)", "loaded (us)", "stoch (us)", "stoch/pt", "gbs (ms)", "q95 srch (ms)"
    );
    for p in [8u32, 64, 256, 1024] {
        let rows_per = 64u64;
        let traces: Vec<_> = (0..p)
            .map(|r| jacobi_trace(r, p, 1_000_000 + (r as u64 * 7919 % 13) * 150_000, 8 * 1026))
            .collect();
        let m = Model::new(&traces, app(vec![rows_per; p as usize]), &profile(p)).expect("model");
        let bursty = Mixture {
            modes: vec![
                ModeStat {
                    value: Stoch::new(1.0, 0.02),
                    share: 0.6,
                    mean_dwell_s: 2.0,
                },
                ModeStat {
                    value: Stoch::new(0.5, 0.02),
                    share: 0.4,
                    mean_dwell_s: 2.0,
                },
            ],
        };
        let spec = LoadSpec {
            nodes: (0..p as usize)
                .step_by(4)
                .map(|r| NodeLoad {
                    ranks: vec![r],
                    cpu_avail: Some(bursty.clone()),
                    ..NodeLoad::default()
                })
                .collect(),
            ..LoadSpec::default()
        };
        let s = spec.resolve(p as usize, 10.0, "bench").expect("load");
        let ml = m.clone().with_load(s);
        let d = Dist::block(p as usize, rows_per * p as u64);
        let reps = (20_000 / p).max(10);
        let point = time_per(reps, || {
            black_box(m.predict(black_box(&d)).expect("predict"));
        });
        let loaded = time_per(reps, || {
            black_box(ml.predict(black_box(&d)).expect("predict"));
        });
        let stoch = time_per(reps, || {
            black_box(risk::predict_stochastic(&ml, black_box(&d)).expect("predict"));
        });
        let gbs = time_per(3, || {
            black_box(search::gbs(&m.clone()).expect("gbs"));
        });
        let q = time_per(3, || {
            black_box(risk::quantile_search(&ml.clone(), 0.95).expect("search"));
        });
        println!(
            "{:>6} {:>14.2} {:>14.2} {:>14.2} {:>10.3} {:>11.3} {:>13.3}",
            p,
            point * 1e6,
            loaded * 1e6,
            stoch * 1e6,
            stoch / point,
            gbs * 1e3,
            q * 1e3
        );
    }
}
