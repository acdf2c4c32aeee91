//! The in-run CPU sensor and the load watch of `--auto --replan-on
//! sensed` (the default): has another job come to, or left, a rank's core
//! since its trace was recorded (Figueira and Berman's time-shared nodes)?
//!
//! **The sensor.** Each iteration, the main thread's *CPU availability*
//! ([`availability`]): the CPU time it got over the time it was
//! runnable, CPU time plus run-queue delay, from
//! `/proc/thread-self/schedstat` (one `pread` of the file kept open per
//! iteration, only with the load watch on: its time is each rank's
//! `load_sensor_s`, and `scripts/sensor-check.sh` prints it per
//! iteration). Alone on its core a thread
//! gets 1, beside k CPU-bound jobs 1/(k + 1), however long it sleeps or
//! waits in MPI. Without schedstat, the *CPU share in its stages*
//! ([`share_over`]: thread CPU time over the stages' wall time, two
//! `clock_gettime` calls per stage, summed over the last [`WINDOW`]
//! iterations; the report's `cpu_share` sums the whole run), which
//! reads the same on a rank that computes or polls all the time. The host
//! taking the vCPU away shows in neither (steal is 0 on such a guest, so
//! the thread's CPU time runs on): the sensor sees contention inside the
//! node, the drift watch (`adapt.rs`) everything else.
//!
//! **The load watch** ([`LoadWatch`]). Each rank's CPU slowdown since its
//! trace was recorded is `base / reading` per iteration (`base`: its
//! median reading over the recorded iterations; MHETA's computation times
//! then scale by it, Figueira and Berman eq. 1). Every [`WINDOW`]
//! iterations, over the last [`CI_ITERS`] ones since the plan in force,
//! each rank takes the median slowdown and its distribution-free 95%
//! interval ([`median_ci`]), and one `MPI_Allgather` of five doubles
//! shares them. A rank whose interval excludes the slowdown the plan in
//! force priced, by a median more than [`SENSE_PCT`] % away from it, at
//! two checks in a row, is a load change: the sensed state moved beyond
//! its own noise and stayed. The run then plans at once on the sensed
//! slowdowns (each changed rank's median over the last two windows, all
//! after the change; one within [`SENSE_PCT`] % of 1 is 1, so that a job
//! leaving gives back the dedicated plan), pricing the trace recorded on
//! a dedicated node: it never records again while a rank is time-shared.

use crate::adapt::{CI_ITERS, WINDOW, median_ci};
use mheta_base::median;
use mheta_model::stoch::Stoch;
use mpi::collective::CommunicatorCollectives;
use mpi::topology::{Communicator, SimpleCommunicator};
use serde::Serialize;
use std::ops::Range;

/// Least change of a rank's CPU slowdown, against the one the plan in
/// force priced, that plans again, percent. Below a second job on a core
/// (100%) and above what one rank's share wanders by alone (a few
/// percent: MPI's progress, kernel threads).
pub const SENSE_PCT: f64 = 15.0;

/// Apart by more than [`SENSE_PCT`], up or down alike (on the log scale:
/// a rank priced at 1.17 whose job left reads 1.0, 14.5% below it, and
/// counts as changed as 1.0 to 1.17 did).
fn far(x: f64, a: f64) -> bool {
    (x / a).ln().abs() > (1.0 + SENSE_PCT / 100.0).ln()
}

/// A rank's CPU share in a stage: CPU time over wall time, at most 1.
pub fn stage_share(cpu_s: f64, wall_s: f64) -> Option<f64> {
    (wall_s > 1e-6 && cpu_s > 0.0).then(|| (cpu_s / wall_s).min(1.0))
}

/// A thread's CPU availability between two schedstat readings: the CPU
/// time it got over the time it was runnable (CPU time plus run-queue
/// delay). 1 alone on a core, 1/(k + 1) beside k CPU-bound jobs, however
/// much of the time the thread sleeps; the host taking the vCPU away
/// does not count (the guest's scheduler does not see it).
pub fn availability(
    before: Option<&mheta_base::os::Schedstat>,
    after: Option<&mheta_base::os::Schedstat>,
) -> Option<f64> {
    let d = after?.since(before?);
    let runnable = d.cpu_s + d.runq_wait_s;
    (runnable > 1e-6 && d.cpu_s > 0.0).then(|| d.cpu_s / runnable)
}

/// The CPU a rank got a turn over iterations `range`, from each one's CPU
/// time and the times it was given the core (schedstat's timeslices):
/// their sums' ratio, where it was given the core at least twice.
pub fn turn_over(slices: &[Option<(f64, u64)>], range: Range<u64>) -> Option<f64> {
    let (cpu, n) = range
        .filter_map(|i| slices.get(i as usize).copied().flatten())
        .fold((0.0, 0u64), |(c, n), (dc, dn)| (c + dc, n + dn));
    (n >= 2 && cpu > 0.0).then(|| cpu / n as f64)
}

/// The CPU share of iterations `range` in their stages: their CPU time
/// over their wall time, summed ([`stage_share`] of the sums). Where a
/// stage is shorter than the scheduler's turns on a shared core, one
/// stage's share is quantized by how many of the competitor's turns it
/// happens to span (a stage that fits in the rank's own turn reads 1),
/// and the median of such readings leans to whichever count is the more
/// frequent; summed over several stages the turns' phases average out,
/// and the share reads the rank's part of the core.
pub fn share_over(cpu_s: &[f64], wall_s: &[f64], range: Range<u64>) -> Option<f64> {
    let (cpu, wall) = range
        .filter_map(|i| Some((*cpu_s.get(i as usize)?, *wall_s.get(i as usize)?)))
        .fold((0.0, 0.0), |(c, w), (dc, dw)| (c + dc, w + dw));
    stage_share(cpu, wall)
}

/// The median of the defined shares of iterations `range`.
pub fn median_share(shares: &[Option<f64>], range: Range<u64>) -> Option<f64> {
    let mut v: Vec<f64> = range
        .filter_map(|i| shares.get(i as usize).copied().flatten())
        .collect();
    median(&mut v)
}

/// A change of load the watch saw, and the plan that answered it.
#[derive(Serialize, Debug, Clone)]
pub struct LoadChange {
    /// The check after this iteration saw it.
    pub after: u64,
    /// When, seconds since the Unix epoch on this rank's clock.
    pub at_unix_s: f64,
    /// `arrived` (a rank's slowdown rose), `left` (fell) or `changed`
    /// (some rose, some fell).
    pub what: String,
    /// The ranks whose slowdown moved beyond its interval.
    pub ranks: Vec<usize>,
    /// Every rank's CPU slowdown since its trace was recorded: the one
    /// the plan in force priced, and the one the new plan prices.
    pub from: Vec<f64>,
    pub to: Vec<f64>,
    /// Every rank's median slowdown over the check's iterations and its
    /// 95% interval (empty for a calibration).
    pub ci: Vec<[f64; 3]>,
    /// Per rank, the factor the plan's slowdowns carry besides the
    /// sensed ones (empty: 1): measured over predicted busy time after a
    /// plan on the sensed load missed ([`LoadChange::calibrated`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub calibration: Vec<f64>,
    /// Per rank, the CPU it got a turn of the scheduler's round over the
    /// check's iterations ([`turn_over`]; NaN where it was not switched
    /// out twice): the plan replays a time-shared rank turn by turn
    /// (`mheta_model::slowdown::NodeLoad::turn_s`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub turn_s: Vec<f64>,
}

impl LoadChange {
    /// The slowdowns to plan on: mean the new level times its
    /// calibration, sd its spread over the last two windows (Schopf and
    /// Berman's stochastic value).
    pub fn slowdowns(&self, sd: &[f64]) -> Vec<Stoch> {
        self.to
            .iter()
            .zip(sd)
            .enumerate()
            .map(|(i, (&m, &s))| {
                let c = self.calibration.get(i).copied().unwrap_or(1.0);
                Stoch::new(m * c, if m == 1.0 { 0.0 } else { s * c })
            })
            .collect()
    }

    /// The load to plan on ([`LoadChange::slowdowns`]), with each
    /// time-shared rank's turn.
    pub fn sensed(&self, sd: &[f64]) -> mheta_runtime::SensedLoad {
        let shared = |i: usize| self.to.get(i).is_some_and(|&x| far(x, 1.0) && x > 1.0);
        mheta_runtime::SensedLoad {
            cpu: self.slowdowns(sd),
            turn_s: (0..self.to.len())
                .map(|i| {
                    let q = self.turn_s.get(i).copied()?;
                    (shared(i) && q.is_finite() && q > 0.0).then_some(q)
                })
                .collect(),
        }
    }

    /// A plan on the sensed load, after iteration `it`, missed: each
    /// rank's busy time ran `ratios[i]` times what it predicted (NaN: not
    /// watched). The sensed slowdowns `applied` stay; each watched rank's
    /// factor `calibration` is multiplied by its ratio, so that the next
    /// plan prices the ranks as they run (a dedicated trace from a
    /// disturbed window, or a rank slowed beyond its CPU share).
    pub fn calibrated(it: u64, applied: &[f64], calibration: &[f64], ratios: &[f64]) -> LoadChange {
        let c = |i: usize| calibration.get(i).copied().unwrap_or(1.0);
        let a = |i: usize| applied.get(i).copied().unwrap_or(1.0);
        let p = ratios.len();
        let watched = |i: usize| ratios[i].is_finite() && ratios[i] > 0.0;
        let ranks: Vec<usize> = (0..p).filter(|&i| watched(i)).collect();
        let new: Vec<f64> = (0..p)
            .map(|i| if watched(i) { c(i) * ratios[i] } else { c(i) })
            .collect();
        LoadChange {
            after: it,
            at_unix_s: crate::adapt::unix_now(),
            what: "calibrated".into(),
            ranks,
            from: (0..p).map(|i| a(i) * c(i)).collect(),
            to: (0..p).map(a).collect(),
            ci: Vec::new(),
            calibration: new,
            // The driver gives it the last change's turns.
            turn_s: Vec::new(),
        }
    }
}

/// What a check found, the same on every rank.
#[derive(Debug, Default)]
pub struct Sensed {
    /// A load change: plan on `to` now.
    pub change: Option<(LoadChange, Vec<f64>)>,
    /// Some rank's last two windows are more than [`SENSE_PCT`] % away
    /// from what the plan in force priced, though not yet beyond its
    /// interval: a change may be under way, so a drift is not recorded.
    pub moving: bool,
}

/// The load watch of one rank.
#[derive(Debug, Default)]
pub struct LoadWatch {
    /// This rank's median reading (availability, or the stage share)
    /// while the trace in use was recorded.
    base: Option<f64>,
    /// Every rank's sensed slowdown the plan in force priced (empty: 1,
    /// as recorded).
    pub applied: Vec<f64>,
    /// Iterations before this one are not judged.
    from: u64,
    /// The last check saw a change (a second in a row plans).
    struck: bool,
    /// Per rank, the lowest rank pinned to the same single core of the
    /// same host (itself when alone, or not pinned to one core; empty:
    /// every rank alone). See [`LoadWatch::new`].
    mates: Vec<usize>,
}

impl LoadWatch {
    /// The watch of this rank, knowing which ranks share a core
    /// (collective: one allgather of the host and the core each rank is
    /// pinned to). Ranks sharing a core take turns on it, so a rank's
    /// availability moves with its core-mates' work, which the plan
    /// itself moves: rows taken from one give the other more turns. A job
    /// arriving on the core lowers every mate's availability alike, so a
    /// change on a shared core counts only when all its ranks moved the
    /// same way, and each is priced at their geometric mean.
    pub fn new(world: &SimpleCommunicator) -> LoadWatch {
        let host = mheta_base::os::hostname()
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
        let cores = mheta_base::os::allowed_cores();
        let core = match cores.as_slice() {
            [c] => *c as u64,
            _ => u64::MAX,
        };
        let p = world.size() as usize;
        let mut all = vec![0u64; 2 * p];
        world.all_gather_into(&[host, core][..], &mut all[..]);
        LoadWatch {
            mates: core_mates(&all),
            ..LoadWatch::default()
        }
    }

    /// A plan on a fresh recording of iterations `recorded`, in force
    /// from iteration `from`: the base is this rank's median reading over
    /// them.
    pub fn recorded(&mut self, shares: &[Option<f64>], recorded: Range<u64>, from: u64) {
        self.base = median_share(shares, recorded);
        self.applied.clear();
        self.from = from;
        self.struck = false;
    }

    /// A plan on sensed slowdowns `to`, in force from iteration `from`.
    pub fn applied(&mut self, to: &[f64], from: u64) {
        self.applied = to.to_vec();
        self.from = from;
        self.struck = false;
    }

    /// Whether this rank's readings over the iterations `recorded` moved
    /// from the base its trace in use was recorded at: their median, or
    /// more than a third of them, more than [`SENSE_PCT`] % away (a job
    /// came or went while recording again, and the new trace mixes the
    /// two loads). False without a base or readings.
    pub fn moved_during(&self, readings: &[Option<f64>], recorded: Range<u64>) -> bool {
        let Some(b) = self.base else {
            return false;
        };
        let mut v: Vec<f64> = recorded
            .filter_map(|i| readings.get(i as usize).copied().flatten())
            .collect();
        let n = v.len();
        let moved = v.iter().filter(|&&x| far(x, b)).count();
        median(&mut v).is_some_and(|m| far(m, b) || 3 * moved > n)
    }

    /// Whether a rank runs time-shared under the plan in force.
    pub fn time_shared(&self) -> bool {
        self.applied.iter().any(|&a| a > 1.0 + SENSE_PCT / 100.0)
    }

    fn mate_of(&self, rank: usize) -> usize {
        self.mates.get(rank).copied().unwrap_or(rank)
    }

    fn applied_to(&self, rank: usize) -> f64 {
        self.applied.get(rank).copied().unwrap_or(1.0)
    }

    /// After iteration `it`, with this rank's readings so far: every
    /// [`WINDOW`] iterations once [`CI_ITERS`] are there since the plan,
    /// the check (collective: one allgather); None between checks.
    pub fn check(
        &mut self,
        world: &SimpleCommunicator,
        it: u64,
        shares: &[Option<f64>],
        slices: &[Option<(f64, u64)>],
    ) -> Option<Sensed> {
        let n = CI_ITERS as u64;
        if !(it + 1).is_multiple_of(WINDOW as u64) || it + 1 < self.from + n {
            return None;
        }
        let ratios = |r: Range<u64>| -> Vec<f64> {
            match self.base {
                Some(b) => r
                    .filter_map(|i| shares.get(i as usize).copied().flatten())
                    .map(|s| b / s)
                    .collect(),
                None => Vec::new(),
            }
        };
        let last = ratios(it + 1 - n..it + 1);
        let recent = ratios(it + 1 - 2 * WINDOW as u64..it + 1);
        // [lo, median, hi] over the check, the last two windows' median
        // and sd; NaN where this rank has no reading.
        let mut mine = [f64::NAN; 5];
        if let (Some((lo, m, hi)), Some(r)) = (median_ci(&last), median(&mut recent.clone())) {
            let k = recent.len() as f64;
            let mean = recent.iter().sum::<f64>() / k;
            let var = recent.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / k;
            mine = [lo, m, hi, r, var.sqrt()];
        }
        let p = world.size() as usize;
        let mut all = vec![0.0f64; 5 * p];
        world.all_gather_into(&mine[..], &mut all[..]);
        let s = self.judge(it, &all);
        let mut s = self.strike(s);
        // Every rank has the same verdict: each gives its turn.
        if let Some((c, _)) = s.change.as_mut() {
            let mine = turn_over(slices, it + 1 - n..it + 1).unwrap_or(f64::NAN);
            c.turn_s = vec![0.0; p];
            world.all_gather_into(&mine, &mut c.turn_s[..]);
        }
        Some(s)
    }

    /// A change counts at its second check in a row; at its first it is
    /// a change under way.
    fn strike(&mut self, mut s: Sensed) -> Sensed {
        if s.change.is_none() {
            self.struck = false;
        } else if !std::mem::replace(&mut self.struck, true) {
            s.change = None;
            s.moving = true;
        }
        s
    }

    /// The check's verdict on every rank's `[lo, median, hi, recent, sd]`.
    fn judge(&self, it: u64, all: &[f64]) -> Sensed {
        let (mut ranks, mut moved) = (Vec::new(), Vec::new());
        for (i, c) in all.chunks_exact(5).enumerate() {
            if c.iter().any(|x| !x.is_finite()) {
                continue;
            }
            let a = self.applied_to(i);
            if (a < c[0] || a > c[2]) && far(c[1], a) && far(c[3], a) {
                ranks.push(i);
            } else if far(c[3], a) {
                moved.push(i);
            }
        }
        let p = all.len() / 5;
        // Each core's ranks (keyed by its lowest rank), found once.
        let mut group: Vec<Vec<usize>> = vec![Vec::new(); p];
        for j in 0..p {
            group[self.mate_of(j).min(p.saturating_sub(1))].push(j);
        }
        let group_of = |i: usize| &group[self.mate_of(i).min(p.saturating_sub(1))];
        // On a shared core, every rank moved, the same way, or none counts.
        let dir = |i: usize, k: usize| (all[5 * i + k] / self.applied_to(i)).ln().signum();
        let mask = |set: &[usize]| {
            let mut m = vec![false; p];
            set.iter().for_each(|&i| m[i] = true);
            m
        };
        let whole = |i: usize, set: &[bool], k: usize| {
            group_of(i)
                .iter()
                .all(|&j| set[j] && dir(j, k) == dir(i, k))
        };
        let in_ranks = mask(&ranks);
        let moving = {
            let mut both = mask(&moved);
            ranks.iter().for_each(|&i| both[i] = true);
            moved.iter().any(|&i| whole(i, &both, 3))
        };
        let ranks: Vec<usize> = ranks
            .iter()
            .copied()
            .filter(|&i| whole(i, &in_ranks, 1))
            .collect();
        if ranks.is_empty() {
            return Sensed {
                change: None,
                moving,
            };
        }
        let from: Vec<f64> = (0..p).map(|i| self.applied_to(i)).collect();
        let mut to = from.clone();
        let mut sd = vec![0.0; p];
        for &i in &ranks {
            let r = all[5 * i + 3];
            to[i] = if !far(r, 1.0) { 1.0 } else { r };
            sd[i] = all[5 * i + 4];
        }
        // Ranks sharing a core: priced alike, at their geometric mean.
        for &i in &ranks {
            let g = group_of(i);
            if g.len() > 1 {
                let k = g.len() as f64;
                let r = (g.iter().map(|&j| all[5 * j + 3].ln()).sum::<f64>() / k).exp();
                to[i] = if !far(r, 1.0) { 1.0 } else { r };
                sd[i] = g.iter().map(|&j| all[5 * j + 4]).sum::<f64>() / k;
            }
        }
        let up = ranks.iter().any(|&i| to[i] > from[i]);
        let down = ranks.iter().any(|&i| to[i] < from[i]);
        let what = match (up, down) {
            (true, false) => "arrived",
            (false, true) => "left",
            _ => "changed",
        };
        let change = LoadChange {
            after: it,
            at_unix_s: crate::adapt::unix_now(),
            what: what.into(),
            ranks,
            from,
            to,
            ci: all.chunks_exact(5).map(|c| [c[0], c[1], c[2]]).collect(),
            calibration: Vec::new(),
            turn_s: Vec::new(),
        };
        Sensed {
            change: Some((change, sd)),
            moving,
        }
    }
}

/// Per rank, the lowest rank on the same host pinned to the same single
/// core, from every rank's `[host hash, core]` (core `u64::MAX`: not
/// pinned to one core, alone).
fn core_mates(all: &[u64]) -> Vec<usize> {
    let p = all.len() / 2;
    (0..p)
        .map(|i| {
            let me = &all[2 * i..2 * i + 2];
            if me[1] == u64::MAX {
                return i;
            }
            (0..p).find(|&j| &all[2 * j..2 * j + 2] == me).unwrap_or(i)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_is_the_cpu_a_time_given_the_core() {
        let s = [Some((4e-3, 1)), Some((4e-3, 1)), None, Some((8e-3, 2))];
        assert_eq!(turn_over(&s, 0..4), Some(4e-3));
        // Given the core once (or never): no turn to tell.
        assert_eq!(turn_over(&s, 0..1), None);
        assert_eq!(turn_over(&[Some((1e-3, 0))], 0..1), None);
    }

    #[test]
    fn only_a_time_shared_rank_is_planned_by_its_turns() {
        let c = LoadChange {
            after: 10,
            at_unix_s: 0.0,
            what: "arrived".into(),
            ranks: vec![1],
            from: vec![1.0, 1.0, 1.0],
            to: vec![1.0, 2.0, 2.0],
            ci: Vec::new(),
            calibration: Vec::new(),
            turn_s: vec![3e-3, 3e-3, f64::NAN],
        };
        let s = c.sensed(&[0.0, 0.1, 0.1]);
        assert_eq!(s.turn_s, vec![None, Some(3e-3), None]);
        assert_eq!(s.cpu[1].mean, 2.0);
    }

    #[test]
    fn shares() {
        assert_eq!(stage_share(0.5, 1.0), Some(0.5));
        assert_eq!(stage_share(1.2, 1.0), Some(1.0));
        assert_eq!(stage_share(0.0, 1.0), None);
        let sh = [
            Some(1.0),
            Some(0.9),
            None,
            Some(0.5),
            Some(0.52),
            Some(0.48),
        ];
        // Two defined shares: the mean of the middle two (mheta_base::median).
        assert_eq!(median_share(&sh, 0..3), Some(0.95));
        assert_eq!(median_share(&sh, 3..6), Some(0.5));
        assert_eq!(median_share(&sh, 2..3), None);
        // Stages of 10 ms of CPU beside one hog whose turns are 3.6 ms:
        // four of five span two of its turns (share 0.58), one spans
        // three (0.48); the rank got 50 of 89.6 ms (0.56), not the median's 0.58.
        let cpu = [0.01; 5];
        let wall = [0.0172, 0.0172, 0.0208, 0.0172, 0.0172];
        let per_stage: Vec<_> = (0..5).map(|i| stage_share(cpu[i], wall[i])).collect();
        assert!((median_share(&per_stage, 0..5).unwrap() - 0.0100 / 0.0172).abs() < 1e-12);
        let all = share_over(&cpu, &wall, 0..5).unwrap();
        assert!((all - 0.05 / 0.0896).abs() < 1e-12, "{all}");
        // Out of range or no CPU: none.
        assert_eq!(share_over(&cpu, &wall, 5..7), None);
        assert_eq!(share_over(&[0.0], &[0.01], 0..1), None);
    }

    fn rank(lo: f64, m: f64, hi: f64, recent: f64) -> [f64; 5] {
        [lo, m, hi, recent, 0.05]
    }

    #[test]
    fn a_job_arriving_is_a_change_beyond_the_interval() {
        let w = LoadWatch::default();
        // Rank 1 at twice its recorded time, its interval well above 1.
        let all = [rank(0.97, 1.0, 1.03, 1.0), rank(1.8, 1.95, 2.1, 2.0)].concat();
        let s = w.judge(40, &all);
        let (c, sd) = s.change.expect("a change");
        assert_eq!(c.what, "arrived");
        assert_eq!(c.ranks, vec![1]);
        assert_eq!(c.from, vec![1.0, 1.0]);
        assert_eq!(c.to, vec![1.0, 2.0]);
        let sl = c.slowdowns(&sd);
        assert_eq!((sl[0].mean, sl[0].sd), (1.0, 0.0));
        assert_eq!((sl[1].mean, sl[1].sd), (2.0, 0.05));
    }

    #[test]
    fn ranks_sharing_a_core_change_together_or_not_at_all() {
        // Ranks 0 and 1 pinned to core 3 of one host, rank 2 alone, rank 3
        // not pinned to one core.
        let h = 42u64;
        let mates = core_mates(&[h, 3, h, 3, h, 4, h, u64::MAX]);
        assert_eq!(mates, vec![0, 0, 2, 3]);
        let w = LoadWatch {
            mates,
            ..LoadWatch::default()
        };
        let calm = rank(0.97, 1.0, 1.03, 1.0);
        // The plan moved rows from rank 0 to rank 1: rank 0 gets more turns
        // of their core, rank 1 fewer. Not a load.
        let shift = [
            rank(0.7, 0.78, 0.85, 0.78),
            rank(1.2, 1.3, 1.4, 1.3),
            calm,
            calm,
        ]
        .concat();
        assert!(w.judge(40, &shift).change.is_none());
        // One of them alone beyond its interval: not a load either.
        let one = [rank(1.2, 1.3, 1.4, 1.3), calm, calm, calm].concat();
        assert!(w.judge(40, &one).change.is_none());
        // A job on their core: both slower; each priced at the geometric mean.
        let job = [
            rank(1.3, 1.4, 1.5, 1.44),
            rank(1.5, 1.6, 1.7, 1.6),
            calm,
            calm,
        ]
        .concat();
        let (c, _) = w.judge(40, &job).change.expect("a change");
        assert_eq!(c.ranks, vec![0, 1]);
        let g = (1.44f64 * 1.6).sqrt();
        assert!(
            (c.to[0] - g).abs() < 1e-12 && (c.to[1] - g).abs() < 1e-12,
            "{:?}",
            c.to
        );
        assert_eq!((c.to[2], c.to[3]), (1.0, 1.0));
        // A rank alone on its core changes alone, as before.
        let alone = [calm, calm, rank(1.8, 1.95, 2.1, 2.0), calm].concat();
        assert_eq!(
            w.judge(40, &alone).change.expect("a change").0.ranks,
            vec![2]
        );
    }

    #[test]
    fn a_change_counts_at_its_second_check_in_a_row() {
        let mut w = LoadWatch::default();
        let up = [rank(0.97, 1.0, 1.03, 1.0), rank(1.8, 1.95, 2.1, 2.0)].concat();
        let calm = [rank(0.97, 1.0, 1.03, 1.0), rank(0.97, 1.0, 1.03, 1.0)].concat();
        let first = w.strike(w.judge(40, &up));
        assert!(first.change.is_none() && first.moving);
        // A blip: gone at the next check, and the count starts again.
        assert!(w.strike(w.judge(45, &calm)).change.is_none());
        assert!(w.strike(w.judge(50, &up)).change.is_none());
        assert!(w.strike(w.judge(55, &up)).change.is_some());
        // A plan resets it.
        w.applied(&[1.0, 2.0], 56);
        assert!(w.strike(w.judge(75, &calm)).change.is_none());
    }

    #[test]
    fn a_change_inside_the_interval_or_below_the_threshold_is_none() {
        let w = LoadWatch::default();
        // 20% up, but the interval holds 1: noise; the last windows moved.
        let all = [rank(0.9, 1.2, 1.4, 1.25), rank(0.97, 1.0, 1.03, 1.0)].concat();
        let s = w.judge(40, &all);
        assert!(s.change.is_none());
        assert!(s.moving);
        // Beyond the interval but by 8%: not worth a plan.
        let all = [rank(1.05, 1.08, 1.1, 1.08), rank(0.97, 1.0, 1.03, 1.0)].concat();
        let s = w.judge(40, &all);
        assert!(s.change.is_none() && !s.moving);
        // A rank without readings is left alone.
        let all = [[f64::NAN; 5], rank(0.97, 1.0, 1.03, 1.0)].concat();
        assert!(w.judge(40, &all).change.is_none());
    }

    #[test]
    fn a_calibration_scales_the_watched_ranks_and_keeps_the_sensed_load() {
        let c = LoadChange::calibrated(90, &[1.0, 2.0], &[], &[0.85, 1.1]);
        assert_eq!(c.what, "calibrated");
        assert_eq!(c.ranks, vec![0, 1]);
        assert_eq!(c.to, vec![1.0, 2.0]);
        assert_eq!(c.from, vec![1.0, 2.0]);
        assert_eq!(c.calibration, vec![0.85, 1.1]);
        let s = c.slowdowns(&[0.0, 0.1]);
        assert_eq!(s[0].mean, 0.85);
        assert!((s[1].mean - 2.2).abs() < 1e-12 && (s[1].sd - 0.11).abs() < 1e-12);
        // A rank not watched keeps its factor; factors compound.
        let c = LoadChange::calibrated(120, &[1.0, 2.0], &[0.85, 1.1], &[f64::NAN, 0.9]);
        assert_eq!(c.ranks, vec![1]);
        assert_eq!(c.from, vec![0.85, 2.2]);
        assert!((c.calibration[1] - 0.99).abs() < 1e-12 && c.calibration[0] == 0.85);
    }

    #[test]
    fn a_recording_under_a_new_load_is_seen() {
        let mut w = LoadWatch::default();
        let r = [
            Some(1.0),
            Some(0.99),
            Some(1.0),
            Some(0.5),
            Some(0.52),
            Some(1.0),
        ];
        assert!(!w.moved_during(&r, 0..3), "no base yet");
        w.recorded(&r, 0..3, 3);
        assert!(!w.moved_during(&r, 0..3));
        // A job arrived during the recording: two of three readings at
        // half the base.
        assert!(w.moved_during(&r, 3..6));
        // One reading of four off is a blip, not a new load.
        assert!(!w.moved_during(&[Some(1.0), Some(1.0), Some(0.5), Some(1.0)], 0..4));
    }

    #[test]
    fn a_job_leaving_gives_back_the_dedicated_slowdown() {
        let mut w = LoadWatch::default();
        w.applied(&[1.0, 2.0], 10);
        assert!(w.time_shared());
        let all = [rank(0.97, 1.0, 1.03, 1.0), rank(1.0, 1.04, 1.1, 1.06)].concat();
        let (c, _) = w.judge(80, &all).change.expect("a change");
        assert_eq!(c.what, "left");
        // 1.06 is within SENSE_PCT of 1: the dedicated plan, exactly.
        assert_eq!(c.to, vec![1.0, 1.0]);
        w.applied(&c.to, 81);
        assert!(!w.time_shared());
        // Down by 14.7% is as far as up by 17.3%: a rank priced at 1.173
        // that reads 1.0 again is back to 1.
        w.applied(&[1.173, 1.0], 90);
        let all = [rank(0.98, 1.0, 1.02, 1.0), rank(0.97, 1.0, 1.03, 1.0)].concat();
        let (c, _) = w.judge(120, &all).change.expect("a change");
        assert_eq!((c.what.as_str(), c.to), ("left", vec![1.0, 1.0]));
    }
}
