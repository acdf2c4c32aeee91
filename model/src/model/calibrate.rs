//! Calibration of a [`Model`] on its own recorded distribution: each
//! full-world collective's cost past the last arrival and each rank's
//! handshake latency, measured by one replay of the recorded iteration
//! ([`Model::calibrate_collectives`]), and each collective's last arrival
//! over the recorded iterations ([`last_arrivals`]).

use super::{Model, Program};
use crate::dist::Dist;

/// What the calibrating replay of the recorded distribution measures
/// ([`Model::calibrate_collectives`]).
#[derive(Default)]
pub(crate) struct Calib {
    /// Each full-world collective's cost, in order.
    pub(super) collectives: Vec<f64>,
    /// Per rank: recorded minus replayed time of each send completion
    /// whose receiver was already waiting (clamped).
    pub(super) handshakes: Vec<Vec<f64>>,
    /// Per rank: send completions replayed so far (the index into its
    /// `send_waits_s`).
    pub(super) send_waits_seen: Vec<usize>,
}

/// A send completion whose receiver was already waiting, and that the
/// calibrating replay of the recorded distribution has waiting less than
/// this many of the rank's sleeps ([`Program::sleep_s`]), is a handshake;
/// its recorded excess over the replay, at most as many sleeps, is one
/// sample of the rank's handshake latency ([`Model::calibrate_collectives`]).
pub(super) const HANDSHAKE_SLEEPS: f64 = 4.0;

/// From a recording with file I/O a rank's handshake latency is learned
/// only from at least this many samples ([`handshake_latency`]).
const HANDSHAKE_MIN_SAMPLES_WITH_IO: usize = 8;

/// A rank's handshake latency from its samples ([`Calib::handshakes`]):
/// their mean (one slow wake-up in ten is part of what a handshake costs
/// on average, which a median would drop), 0 without samples. From a
/// recording with file I/O it takes at least
/// [`HANDSHAKE_MIN_SAMPLES_WITH_IO`]: there a handshake may meet a core
/// busy with another rank's file calls, and one or two of them (jacobi's
/// and sor's halo sends) say more about those calls than about the rank.
fn handshake_latency(samples: &[f64], with_io: bool) -> f64 {
    if samples.is_empty() || (with_io && samples.len() < HANDSHAKE_MIN_SAMPLES_WITH_IO) {
        0.0
    } else {
        samples.iter().sum::<f64>() / samples.len() as f64
    }
}

/// [`Model::last_arrival_s`]: for each full-world collective, the median
/// over the recorded iterations of the least time any rank spent in it
/// that iteration. The rank that arrived last waited for no one, so its
/// time there is the collective's own; which rank that is can change from
/// iteration to iteration (out-of-core ranks that take turns arriving
/// last, docs/design/model.md), which the median iteration of each rank,
/// replayed, does not show.
pub(super) fn last_arrivals(programs: &[Program]) -> Vec<f64> {
    let Some(first) = programs.first() else {
        return Vec::new();
    };
    let (colls, iters) = (
        first.reduce_tooks.len(),
        first.reduce_tooks.first().map_or(0, Vec::len),
    );
    let aligned = programs
        .iter()
        .all(|p| p.reduce_tooks.len() == colls && p.reduce_tooks.iter().all(|t| t.len() == iters));
    if !aligned || iters == 0 {
        return Vec::new();
    }
    (0..colls)
        .map(|k| {
            let mut v: Vec<f64> = (0..iters)
                .map(|it| {
                    programs
                        .iter()
                        .map(|p| p.reduce_tooks[k][it])
                        .fold(f64::INFINITY, f64::min)
                })
                .collect();
            mheta_base::median(&mut v).unwrap_or(0.0)
        })
        .collect()
}

impl Model {
    /// Price each collective from what it cost in the recorded iteration,
    /// and each rank's handshakes.
    ///
    /// The profile's pairwise figures price a collective whose ranks all
    /// sit inside MPI; a real one also costs its algorithm's rounds and,
    /// where ranks sleep while they wait (`--wait sleep`), each round's
    /// wake-ups. Replaying the recorded distribution (each stage's
    /// synchronous I/O as recorded) gives how long each rank waited for the
    /// last arrival; the rest of its recorded time inside (`took`) is the
    /// collective's. The cost is its mean over the ranks, never below the
    /// pairwise figures; a rank's part is bounded by the last arriver's
    /// time there (the replay's or [`Model::last_arrival_s`], the lesser)
    /// plus 4 of its sleeps ([`Program::sleep_s`]) a round (⌈log₂P⌉
    /// rounds): beyond that the replay misplaced the last arrival. Without
    /// a clock common to the ranks this is the one way to tell a
    /// collective's own time from the imbalance before it.
    ///
    /// The same replay prices handshakes: over the send completions whose
    /// receiver was already waiting (the replay's verdict) and that it has
    /// waiting less than [`HANDSHAKE_SLEEPS`] sleeps, the mean of recorded
    /// minus replayed time, each clamped, is the rank's handshake latency
    /// ([`handshake_latency`]), added to every such completion. A trace
    /// that cannot be replayed keeps the pairwise pricing (its prediction
    /// will say what is wrong). Why these rules, with the figures that
    /// chose them: docs/design/model.md.
    pub(super) fn calibrate_collectives(&mut self) {
        let d = Dist(self.app.dist.clone());
        let mut calib = Calib::default();
        let laps = self.laps();
        if self.replay(&d, Some(&mut calib), laps).is_ok() {
            // The last lap's, as the prediction prices the last lap.
            let per_lap = calib.collectives.len() / laps;
            self.collective_s = calib.collectives.split_off(per_lap * (laps - 1));
            let with_io = self.programs.iter().any(|p| !p.io.is_empty());
            self.handshake_s = calib
                .handshakes
                .iter()
                .map(|v| handshake_latency(v, with_io))
                .collect();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program that records only its collectives' times, per iteration.
    fn tooks(reduce_tooks: Vec<Vec<f64>>) -> Program {
        Program {
            steps: Vec::new(),
            scaled_s: 0.0,
            unscaled_s: 0.0,
            measured_s: 0.0,
            io: Vec::new(),
            sleep_s: 0.0,
            spin_s: 0.0,
            wake_s: 0.0,
            stage_io_s: Vec::new(),
            stage_begin_s: Vec::new(),
            stage_end_s: Vec::new(),
            compute_by_iter: Vec::new(),
            reduce_tooks,
            send_waits_s: Vec::new(),
        }
    }

    #[test]
    fn a_wait_sleeps_only_past_the_spin_of_a_sleeping_rank() {
        // A rank that polls never sleeps; one that sleeps after 30 ms of
        // polling sleeps through a longer wait only, and pays its wake-up.
        let polling = tooks(Vec::new());
        let sleeping = Program {
            spin_s: 30e-3,
            wake_s: 50e-6,
            ..tooks(Vec::new())
        };
        assert!(!polling.sleeps_through(1.0));
        assert_eq!(polling.waited(1.0), 1.0);
        assert!(!sleeping.sleeps_through(20e-3));
        assert_eq!(sleeping.waited(20e-3), 20e-3);
        assert!(sleeping.sleeps_through(40e-3));
        assert_eq!(sleeping.waited(40e-3), 40e-3 + 50e-6);
        assert!(!sleeping.sleeps_through(-1.0));
        assert_eq!(sleeping.waited(-1.0), 0.0);
    }

    #[test]
    fn a_handshake_latency_is_the_mean_and_needs_samples_beside_file_io() {
        // The mean, slow wake-up included (a median would give 40 us).
        let mut v = vec![40e-6; 9];
        v.push(400e-6);
        let mean = (9.0 * 40e-6 + 400e-6) / 10.0;
        assert!((handshake_latency(&v, false) - mean).abs() < 1e-15);
        assert!((handshake_latency(&v, true) - mean).abs() < 1e-15);
        // Two samples count without file I/O, not beside it; 8 do.
        assert!((handshake_latency(&[150e-6, 170e-6], false) - 160e-6).abs() < 1e-18);
        assert_eq!(handshake_latency(&[150e-6, 170e-6], true), 0.0);
        let eight = [50e-6; HANDSHAKE_MIN_SAMPLES_WITH_IO];
        assert!((handshake_latency(&eight, true) - 50e-6).abs() < 1e-18);
        assert_eq!(handshake_latency(&eight[1..], true), 0.0);
        assert_eq!(handshake_latency(&[], false), 0.0);
    }

    #[test]
    fn the_last_arrival_is_found_in_each_iteration() {
        // Two collectives, four iterations. In the first collective ranks 2
        // and 3 take turns arriving last (0.3 ms inside) while the other
        // waits 7 ms for it: each rank's median time there is 3.65 ms, the
        // last arrival's 0.3 ms in every iteration.
        let progs = [
            tooks(vec![vec![7.3, 7.3, 7.3, 7.3], vec![1.0, 1.0, 1.0, 1.0]]),
            tooks(vec![vec![7.3, 7.3, 7.3, 7.3], vec![2.0, 0.5, 2.0, 0.5]]),
            tooks(vec![vec![0.3, 7.3, 0.3, 7.3], vec![0.2, 0.2, 0.2, 0.2]]),
            tooks(vec![vec![7.3, 0.3, 7.3, 0.3], vec![0.9, 0.1, 0.9, 0.1]]),
        ];
        let got = last_arrivals(&progs);
        assert_eq!(got.len(), 2);
        assert!((got[0] - 0.3).abs() < 1e-12, "{got:?}");
        // Second: per-iteration minima 0.2, 0.1, 0.2, 0.1.
        assert!((got[1] - 0.15).abs() < 1e-12, "{got:?}");
        // Ranks that recorded different collectives or iteration counts
        // give nothing (the replay's own last arrivers are used).
        let mut short = progs.clone();
        short[1].reduce_tooks[0].pop();
        assert!(last_arrivals(&short).is_empty());
        let mut fewer = progs.clone();
        fewer[3].reduce_tooks.pop();
        assert!(last_arrivals(&fewer).is_empty());
    }
}
