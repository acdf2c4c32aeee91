//! What a byte of a rank's arrays costs by how long ago the rank last
//! touched it ([`mheta_profile::NodeCost::reuse_by`]): a five-point sweep
//! (a stencil rank's stage) over two arrays, timed right after another
//! sweep and after waits that touch nothing, in interleaved rounds. On a
//! node whose caches others share (other jobs, a VM host's other guests),
//! the rows are evicted while the rank waits, and its next sweep reads
//! them from memory; on a node of its own the ratios stay at 1.

use mheta_base::os::thread_cpu_s;
use mheta_profile::{ReusePoint, SampleStats};
use std::time::{Duration, Instant};

/// Working sets measured, bytes of the two arrays: from about a core's
/// cache to past a last-level cache's share (this VM's lay between 48
/// and 64 MiB on 2026-12-01: docs/design/fidelity.md).
pub const WORKING_SETS: [usize; 6] = [4 << 20, 16 << 20, 32 << 20, 48 << 20, 64 << 20, 96 << 20];

/// Waits after the sweep before the timed one, seconds (the first, 0, is
/// the reference every round's ratios are taken to).
pub const WAITS_S: [f64; 5] = [0.0, 0.005, 0.01, 0.02, 0.05];

/// Columns of a row (jacobi's at n 2048).
const COLS: usize = 2048;

/// Resamples of the bootstrap interval of a ratio.
const RESAMPLES: usize = 2000;

/// One sweep of the five-point stencil from `a` into `b` (rows of
/// [`COLS`]), boundary rows and columns kept.
fn sweep(a: &[f64], b: &mut [f64]) {
    let rows = a.len() / COLS;
    for r in 1..rows.saturating_sub(1) {
        let (up, mid, down) = (
            &a[(r - 1) * COLS..r * COLS],
            &a[r * COLS..(r + 1) * COLS],
            &a[(r + 1) * COLS..(r + 2) * COLS],
        );
        let out = &mut b[r * COLS..(r + 1) * COLS];
        for c in 1..COLS - 1 {
            out[c] = 0.25 * (up[c] + down[c] + mid[c - 1] + mid[c + 1]) - 1e-9 * mid[c];
        }
    }
    std::hint::black_box(&b);
}

/// Read the clock until `t`, touching nothing: how a rank polls MPI.
fn wait_until(t: Instant) {
    while Instant::now() < t {
        std::hint::spin_loop();
    }
}

/// The median of `v` (not empty).
fn median(v: &[f64]) -> f64 {
    mheta_base::median(&mut v.to_vec()).unwrap_or(f64::NAN)
}

/// The percentile bootstrap 95% interval of the median of `v`.
fn median_ci(v: &[f64], seed: u64) -> [f64; 2] {
    let mut x = seed | 1;
    let mut next = || {
        // xorshift64
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % v.len() as u64) as usize
    };
    let mut meds: Vec<f64> = (0..RESAMPLES)
        .map(|_| median(&(0..v.len()).map(|_| v[next()]).collect::<Vec<_>>()))
        .collect();
    meds.sort_by(f64::total_cmp);
    [
        mheta_base::quantile(&meds, 0.025),
        mheta_base::quantile(&meds, 0.975),
    ]
}

/// Measure [`NodeCost::reuse_by`](mheta_profile::NodeCost::reuse_by):
/// for each working set of `sets`, `rounds` rounds, each timing sweeps
/// after each wait of `waits_s` (the first must be 0) in an order that
/// turns with the round: an untimed sweep, the wait, then the timed
/// sweep's thread CPU time a byte, the median of `samples`. The ratio to
/// the same round's sweep after no wait is taken within the round, so a
/// change of the machine's speed between rounds cancels. A point's time
/// since the last sweep is the working set's median untimed sweep (all
/// its rounds and waits: a byte is touched, on average, half a sweep
/// before the sweep ends and half a sweep after the next one starts)
/// plus the median of its own measured waits, so the points of a set go
/// by increasing reuse as their waits do, whatever one sweep's wall time
/// did on a shared host.
pub fn reuse_costs(
    sets: &[usize],
    waits_s: &[f64],
    rounds: usize,
    samples: usize,
) -> Vec<ReusePoint> {
    assert_eq!(
        waits_s.first(),
        Some(&0.0),
        "the first wait is the reference"
    );
    assert!(
        waits_s.windows(2).all(|w| w[0] < w[1]),
        "the waits go up: {waits_s:?}"
    );
    let mut out = Vec::new();
    for (k, &ws) in sets.iter().enumerate() {
        let len = (ws / 2 / 8 / COLS).max(3) * COLS;
        let mut a = vec![1.0f64; len];
        let mut b = vec![0.5f64; len];
        sweep(&a, &mut b);
        let mut cost = vec![Vec::with_capacity(rounds); waits_s.len()];
        let mut waited = vec![Vec::with_capacity(rounds); waits_s.len()];
        let mut swept = Vec::with_capacity(rounds * waits_s.len());
        for round in 0..rounds.max(1) {
            // The waits' order turns with the round.
            for j in 0..waits_s.len() {
                let g = (j + round) % waits_s.len();
                let (mut c, mut w) = (vec![0.0; samples.max(1)], vec![0.0; samples.max(1)]);
                for s in 0..samples.max(1) {
                    let t0 = Instant::now();
                    sweep(&a, &mut b);
                    let t1 = Instant::now();
                    wait_until(t1 + Duration::from_secs_f64(waits_s[g]));
                    let start = Instant::now();
                    let c0 = thread_cpu_s();
                    sweep(&b, &mut a);
                    c[s] = (thread_cpu_s() - c0) / (2 * len * 8) as f64;
                    w[s] = (start - t1).as_secs_f64();
                    swept.push((t1 - t0).as_secs_f64());
                }
                cost[g].push(median(&c));
                waited[g].push(median(&w));
            }
        }
        for g in 0..waits_s.len() {
            let rel: Vec<f64> = (0..cost[g].len())
                .map(|r| cost[g][r] / cost[0][r])
                .collect();
            let ci = if g == 0 {
                [1.0, 1.0]
            } else {
                median_ci(&rel, 0x7265_7573_6500 + (k * 16 + g) as u64)
            };
            out.push(ReusePoint {
                ws_bytes: (2 * len * 8) as u64,
                reuse_s: median(&swept) + median(&waited[g]),
                per_byte: SampleStats::from_samples(&cost[g]),
                rel: median(&rel),
                rel_ci95: ci,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::reuse_costs;

    #[test]
    fn each_working_set_gets_one_point_a_wait_by_increasing_reuse() {
        let pts = reuse_costs(&[1 << 20, 2 << 20], &[0.0, 0.001, 0.004], 3, 2);
        assert_eq!(pts.len(), 6);
        for w in pts.chunks(3) {
            assert!(w.iter().all(|p| p.ws_bytes == w[0].ws_bytes));
            assert!(w.windows(2).all(|x| x[0].reuse_s < x[1].reuse_s));
            assert_eq!(w[0].rel, 1.0);
            // The reuse time is the sweep's own time and the wait.
            assert!(w[2].reuse_s >= 0.004 && w[2].reuse_s < w[0].reuse_s + 0.05);
            for p in w {
                assert!(p.per_byte.p50 > 0.0 && p.rel_ci95[0] <= p.rel && p.rel <= p.rel_ci95[1]);
            }
        }
        assert!(pts[0].ws_bytes < pts[3].ws_bytes);
    }
}
