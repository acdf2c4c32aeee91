//! Cost of Romanazzi and Jimack's predictions, as a table: `FitFile::predict` of a
//! run split over 10, 100 and 1000 one-process host groups (a host each);
//! scenario 1 (`fastest`) over 10, 100 and 1000 candidate process counts;
//! scenario 2 (`budget`) over fits for 10 grid sizes, each with those
//! candidates. Medians of 7 timed batches.

use mheta_scale::{FIT_VERSION, FitFile, GroupFit, Line, budget, fastest};
use std::hint::black_box;
use std::time::Instant;

fn group(k: usize) -> GroupFit {
    let p = 1.0 + k as f64 * 0.01;
    GroupFit {
        comp: Line {
            intercept: 0.01 * p,
            slope: 0.002 * p,
        },
        per_np: vec![],
        gamma: 0.0005,
        c: 0.003,
        d: 0.0015,
        as_published: None,
    }
}

fn fit(groups: usize, n: u64) -> FitFile {
    FitFile {
        version: FIT_VERSION,
        app: "mg".into(),
        n,
        bytes_per_point: 32.0,
        iters: 10,
        spec: "bench".into(),
        emulation: "none".into(),
        groups: (0..groups).map(|k| (format!("g{k}"), group(k))).collect(),
        link_s: Some(0.004),
        link_s_as_published: None,
        samples: vec![],
    }
}

/// Median seconds per call of `f` over 7 timed batches of `per_batch` calls.
fn time<F: FnMut()>(mut f: F, per_batch: u32) -> f64 {
    let mut v: Vec<f64> = (0..7)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..per_batch {
                f();
            }
            t.elapsed().as_secs_f64() / f64::from(per_batch)
        })
        .collect();
    mheta_base::median(&mut v).unwrap_or(f64::NAN)
}

fn main() {
    println!("| operation | size | median per call |");
    println!("|---|---|---|");
    for hosts in [10usize, 100, 1000] {
        // 1000 hosts, one process each, as 1000 one-host groups.
        let f = fit(hosts, 1023);
        let parts: Vec<(String, u32)> = (0..hosts).map(|k| (format!("g{k}"), 1)).collect();
        let t = time(
            || {
                black_box(f.predict(black_box(&parts), 65535).ok());
            },
            200,
        );
        println!(
            "| predict (split over every host) | {hosts} hosts | {:.2} us |",
            t * 1e6
        );
    }
    for cands in [10u32, 100, 1000] {
        // One group with `cands` candidate process counts.
        let f = fit(1, 1023);
        let avail = vec![("g0".to_string(), cands)];
        let t = time(
            || {
                black_box(fastest(&f, 65535, black_box(&avail)).ok());
            },
            20,
        );
        println!(
            "| fastest (scenario 1) | {cands} candidates | {:.2} us |",
            t * 1e6
        );
    }
    for cands in [10u32, 100, 1000] {
        let fits: Vec<FitFile> = (0..10).map(|k| fit(1, 255 << k)).collect();
        let avail = vec![("g0".to_string(), cands)];
        let t = time(
            || {
                black_box(budget(&fits, black_box(&avail), 100, 1e3).ok());
            },
            5,
        );
        println!(
            "| budget (scenario 2, 10 grid sizes) | {cands} candidates each | {:.2} us |",
            t * 1e6
        );
    }
}
