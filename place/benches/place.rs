//! The cost of `mheta place`, for 10, 100 and 1000 hosts: `choose`
//! (every candidate master's maximum flow, the fewest workers, and one
//! simulation of the chosen placement), `select` for one master, one
//! simulation of 4096 tasks, and `place` (every master's row, each
//! simulated with its chosen workers and with all). Prints a table of
//! medians over repeated runs (`place` at most 3).

use mheta_place::{Host, Inputs, choose, place, rates, select, sim};
use std::time::Instant;

/// A cluster of `n` hosts with CPU powers and link rates that vary by
/// host (a deterministic spread, so every size has slow and fast ones).
fn cluster(n: usize) -> Inputs {
    let hosts = (0..n)
        .map(|i| {
            let power = 0.25 + 0.75 * ((i * 37) % 101) as f64 / 100.0;
            Host {
                name: format!("h{i}"),
                t_slave_s: 0.01 / power,
                t_master_s: 0.0005 / power,
                avail_cpu: 1.0,
                link_bps: Some([100e6, 200e6, 1e9][i % 3]),
                latency_s: if i % 5 == 0 { 1e-3 } else { 0.0 },
                to: Default::default(),
                burst_bytes: 0.0,
            }
        })
        .collect();
    Inputs {
        hosts,
        request_bytes: 8.0,
        result_bytes: 65_576.0,
        tasks: 4096,
        window: 1,
        startup_s: 0.0,
        unshaped_bps: 10e9,
    }
}

/// The median of a non-empty sample ([`mheta_base::median`]).
fn median(mut v: Vec<f64>) -> f64 {
    mheta_base::median(&mut v).unwrap_or(f64::NAN)
}

fn time<F: FnMut()>(reps: usize, mut f: F) -> f64 {
    median(
        (0..reps)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

fn main() {
    println!(
        "{:>6} {:>12} {:>15} {:>13} {:>15} {:>6}",
        "hosts", "choose (s)", "one master (s)", "simulate (s)", "place rows (s)", "reps"
    );
    for (n, reps) in [(10, 201), (100, 21), (1000, 5)] {
        let inputs = cluster(n);
        let tree = rates::tree(&inputs);
        let choose_s = time(reps, || {
            std::hint::black_box(choose(&inputs).map(|p| p.rate).unwrap_or(0.0));
        });
        let one_s = time(reps, || {
            std::hint::black_box(select::select(&tree, 0).rate);
        });
        let best = select::best_master(&tree);
        let ws = select::select(&tree, best).workers;
        let sim_s = time(reps, || {
            std::hint::black_box(
                sim::simulate(&inputs, best, &ws)
                    .map(|r| r.elapsed_s)
                    .unwrap_or(0.0),
            );
        });
        // Every master's row simulates twice (chosen and all workers).
        let rows_s = time(reps.min(3), || {
            std::hint::black_box(place(&inputs).map(|r| r.len()).unwrap_or(0));
        });
        println!("{n:>6} {choose_s:>12.6} {one_s:>15.6} {sim_s:>13.6} {rows_s:>15.6} {reps:>6}");
    }
}
