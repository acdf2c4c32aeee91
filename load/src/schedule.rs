//! Bursty load: levels (how many of the processes are active) and the
//! switching between them, scripted (in order, exact dwells, cycling) or
//! random (the next level uniform among the others, exponential dwells
//! from a seeded generator).

use crate::error::{Result, bail};
use mheta_model::search::Rng;
use serde::Serialize;
use std::time::{SystemTime, UNIX_EPOCH};

/// How levels switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SwitchMode {
    /// In order, with exactly the dwell times, cycling.
    #[default]
    Scripted,
    /// The next level uniform among the others; exponential dwells with
    /// the level's dwell as the mean.
    Random,
}

/// A bursty load as asked for (`--levels`, `--dwell`, `--switch`,
/// `--seed`, `--start-level`).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Bursty {
    /// Each level is the number of processes active (the first L).
    pub levels: Vec<usize>,
    /// Dwell of each level in seconds: one per level, or one for all.
    pub dwell_s: Vec<f64>,
    pub switch: SwitchMode,
    /// Seed of random switching; None: from the clock (the timeline
    /// records it).
    pub seed: Option<u64>,
    /// Index into `levels` of the first level.
    pub start_level: usize,
}

/// A checked [`Bursty`]: one dwell per level, and the seed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct BurstyPlan {
    pub levels: Vec<usize>,
    pub dwell: Vec<f64>,
    pub mode: SwitchMode,
    /// The seed of random switching (None when scripted).
    pub seed: Option<u64>,
    pub start: usize,
}

impl Bursty {
    /// Check the levels against the `n` processes and resolve the dwells
    /// and the seed.
    pub(crate) fn plan(&self, n: usize) -> Result<BurstyPlan> {
        if let Some(l) = self.levels.iter().find(|&&l| l > n) {
            bail!("--levels: level {l} is more than the {n} --proc processes");
        }
        if self.levels.is_empty() {
            bail!("--levels: no level given");
        }
        let dwell = match self.dwell_s.len() {
            1 => vec![self.dwell_s[0]; self.levels.len()],
            k if k == self.levels.len() => self.dwell_s.clone(),
            k => bail!(
                "--dwell: {k} dwell times for {} levels (give one per level, or one for all)",
                self.levels.len()
            ),
        };
        if let Some(d) = dwell.iter().find(|d| !(d.is_finite() && **d > 0.0)) {
            bail!("--dwell {d}: dwell times must be positive seconds");
        }
        let start = self.start_level;
        if start >= self.levels.len() {
            bail!(
                "--start-level {start}: there are only {} levels (indices from 0)",
                self.levels.len()
            );
        }
        let seed = match self.switch {
            SwitchMode::Random => Some(self.seed.unwrap_or_else(|| {
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(1)
                    ^ (std::process::id() as u64) << 32
            })),
            SwitchMode::Scripted => None,
        };
        Ok(BurstyPlan {
            levels: self.levels.clone(),
            dwell,
            mode: self.switch,
            seed,
            start,
        })
    }
}

/// The sequence of (level index, dwell seconds) of a bursty run.
pub struct Schedule {
    dwell: Vec<f64>,
    mode: SwitchMode,
    rng: Rng,
    cur: usize,
    started: bool,
}

impl Schedule {
    /// `dwell` has one entry per level; `start` is the first level's index.
    pub fn new(dwell: Vec<f64>, mode: SwitchMode, seed: u64, start: usize) -> Self {
        Schedule {
            dwell,
            mode,
            rng: Rng::new(seed),
            cur: start,
            started: false,
        }
    }
}

impl Iterator for Schedule {
    type Item = (usize, f64);
    fn next(&mut self) -> Option<(usize, f64)> {
        let n = self.dwell.len();
        if self.started {
            self.cur = match self.mode {
                SwitchMode::Scripted => (self.cur + 1) % n,
                SwitchMode::Random if n == 1 => self.cur,
                SwitchMode::Random => {
                    let k = self.rng.below((n - 1) as u64) as usize;
                    if k >= self.cur { k + 1 } else { k }
                }
            };
        }
        self.started = true;
        let d = match self.mode {
            SwitchMode::Scripted => self.dwell[self.cur],
            SwitchMode::Random => self.rng.exp(self.dwell[self.cur]),
        };
        Some((self.cur, d))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn scripted_schedule_cycles_with_exact_dwells() {
        let s = Schedule::new(vec![1.0, 2.0, 3.0], SwitchMode::Scripted, 0, 1);
        let v: Vec<_> = s.take(7).collect();
        assert_eq!(
            v,
            vec![
                (1, 2.0),
                (2, 3.0),
                (0, 1.0),
                (1, 2.0),
                (2, 3.0),
                (0, 1.0),
                (1, 2.0)
            ]
        );
    }

    #[test]
    fn random_schedule_is_seeded_switches_and_has_exponential_means() {
        let means = [0.5, 2.0, 8.0];
        let a: Vec<_> = Schedule::new(means.to_vec(), SwitchMode::Random, 42, 0)
            .take(100)
            .collect();
        let b: Vec<_> = Schedule::new(means.to_vec(), SwitchMode::Random, 42, 0)
            .take(100)
            .collect();
        assert_eq!(a, b, "same seed, same sequence");
        let c: Vec<_> = Schedule::new(means.to_vec(), SwitchMode::Random, 43, 0)
            .take(100)
            .collect();
        assert_ne!(a, c);
        assert_eq!(a[0].0, 0, "starts at the start level");

        let n = 60_000;
        let v: Vec<_> = Schedule::new(means.to_vec(), SwitchMode::Random, 7, 2)
            .take(n)
            .collect();
        let mut sum = [0.0; 3];
        let mut sumsq = [0.0; 3];
        let mut cnt = [0usize; 3];
        let mut trans = [[0usize; 3]; 3];
        for w in v.windows(2) {
            assert_ne!(w[0].0, w[1].0, "random switches go to another level");
            trans[w[0].0][w[1].0] += 1;
        }
        for &(i, d) in &v {
            assert!(d >= 0.0);
            sum[i] += d;
            sumsq[i] += d * d;
            cnt[i] += 1;
        }
        for i in 0..3 {
            // Each level is visited about a third of the time.
            let share = cnt[i] as f64 / n as f64;
            assert!((share - 1.0 / 3.0).abs() < 0.02, "level {i}: share {share}");
            let mean = sum[i] / cnt[i] as f64;
            assert!(
                (mean / means[i] - 1.0).abs() < 0.05,
                "level {i}: mean {mean} vs {}",
                means[i]
            );
            // Exponential: the standard deviation equals the mean.
            let sd = (sumsq[i] / cnt[i] as f64 - mean * mean).sqrt();
            assert!(
                (sd / mean - 1.0).abs() < 0.07,
                "level {i}: sd {sd} mean {mean}"
            );
            // The next level is uniform among the two others.
            let (x, y) = match i {
                0 => (trans[0][1], trans[0][2]),
                1 => (trans[1][0], trans[1][2]),
                _ => (trans[2][0], trans[2][1]),
            };
            let f = x as f64 / (x + y) as f64;
            assert!((f - 0.5).abs() < 0.03, "level {i}: transition split {f}");
        }
        // One level: random stays on it.
        let one: Vec<_> = Schedule::new(vec![1.0], SwitchMode::Random, 1, 0)
            .take(5)
            .collect();
        assert!(one.iter().all(|&(i, _)| i == 0));
    }
}
