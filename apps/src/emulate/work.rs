//! A rank's real work under the CPU emulation ([`Emulation::work`]):
//! extra work after it (spin), or pieces paced by their CPU time (paced)
//! or lasting their units by the clock ([`Clock`], with overruns repaid
//! by later pieces, [`repay`]); and what each call site's work cost,
//! reported.

use super::{Emulation, fifo_policy, idle_policy};
use mheta_base::os::thread_cpu_s as thread_cpu;
use mheta_runtime::cpu::spin_extra;
use serde::Serialize;
use std::collections::BTreeMap;
use std::panic::Location;

/// `--cpu-ns-per-unit` (`--cpu-emulation clock`): nanoseconds a unit of
/// work lasts at `cpu_power` 1 on a whole core, for every piece of work or
/// per call site of [`Emulation::work`] (`file:line`, from a calibration
/// run's report: see [`Clock::from_report`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Clock {
    Every(f64),
    Sites(BTreeMap<String, f64>),
}

impl Clock {
    /// Per-site figures from an app's JSON report (its last line that
    /// starts with `{`): each site's largest `ranks[].cpu_sites[site]
    /// .ns_per_unit` over the ranks, times `headroom`.
    pub fn from_report(text: &str, headroom: f64) -> Result<Clock, String> {
        let line = text
            .lines()
            .rev()
            .find(|l| l.trim_start().starts_with('{'))
            .ok_or("no JSON report line in it")?;
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("not a JSON report: {e}"))?;
        let mut m: BTreeMap<String, f64> = BTreeMap::new();
        for r in v["ranks"].as_array().ok_or("no ranks[] in the report")? {
            let Some(sites) = r["cpu_sites"].as_object() else {
                continue;
            };
            for (site, s) in sites {
                if let Some(ns) = s["ns_per_unit"].as_f64()
                    && ns.is_finite()
                    && ns > 0.0
                {
                    let e = m.entry(site.clone()).or_insert(0.0);
                    *e = e.max(ns * headroom);
                }
            }
        }
        if m.is_empty() {
            return Err("no ranks[].cpu_sites with a positive ns_per_unit (an app's --json report of a run that did work is expected)".into());
        }
        Ok(Clock::Sites(m))
    }
}

/// A call site's real work (per rank).
#[derive(Default)]
pub(super) struct Site {
    pieces: u64,
    units: u64,
    ns: u64,
    overruns: u64,
    overrun_s: f64,
    /// The clock's nanoseconds per unit for this site.
    clock_ns: Option<f64>,
}

/// A call site's real work, reported.
#[derive(Serialize, Clone, Debug)]
pub struct SiteReport {
    /// CPU nanoseconds of real work per unit.
    pub ns_per_unit: Option<f64>,
    pub pieces: u64,
    /// By the clock: pieces whose real work outlasted their time, and by
    /// how long in all, seconds.
    pub overruns: u64,
    pub overrun_s: f64,
    /// By the clock: the figure this site ran at (None: paced by CPU time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock_ns_per_unit: Option<f64>,
}

/// A rank's real work: per call site and in all.
#[derive(Serialize, Clone, Debug, Default)]
pub struct WorkStats {
    pub ns_per_unit: Option<f64>,
    pub pieces: u64,
    pub overruns: u64,
    pub overrun_s: f64,
    /// By the clock: overrun not yet made up by later pieces, seconds.
    pub overrun_unpaid_s: f64,
    pub sites: BTreeMap<String, SiteReport>,
}

fn site_name(at: &Location) -> String {
    format!("{}:{}", at.file(), at.line())
}

/// By the clock, how long a piece of time `t` whose real work took
/// `wall` lasts, given the rank's `debt` (seconds): a piece that overran
/// adds its overrun to the debt, and a later piece with time to spare
/// pays it back, ending that much sooner (never before its real work). A
/// rank whose pieces the machine delays now and then (more ranks than
/// cores, a burst of another rank's network work) thus keeps the clock's
/// power over its run, as a cluster's node would; without it a scaling
/// fit from few ranks reads the overruns of many crowded ranks as
/// communication (the grid2 case in docs/design/apps.md).
/// What is never paid back is the report's
/// `cpu_overrun_unpaid_s`.
fn repay(debt: &mut f64, t: f64, wall: f64) -> f64 {
    if wall > t {
        *debt += wall - t;
        return t;
    }
    let pay = debt.min(t - wall);
    *debt -= pay;
    t - pay
}

impl Emulation {
    /// Count a piece of real work at `at` of `units` that took `cpu`
    /// seconds of CPU time and, paced, `wall` seconds so far; by the
    /// clock, how long it lasts (None: the clock has no figure for this
    /// site), and an overrun when the work alone took longer.
    fn count(
        &self,
        at: &'static Location<'static>,
        units: u64,
        cpu: f64,
        wall: Option<f64>,
    ) -> Option<f64> {
        let mut sites = self.sites.lock().unwrap_or_else(|p| p.into_inner());
        let site = sites.entry(at).or_insert_with(|| Site {
            clock_ns: match &self.clock {
                Some(Clock::Every(ns)) => Some(*ns),
                Some(Clock::Sites(m)) => m.get(&site_name(at)).copied(),
                None => None,
            },
            ..Site::default()
        });
        site.pieces += 1;
        site.units += units;
        site.ns += (cpu.max(0.0) * 1e9) as u64;
        let lasts = site
            .clock_ns
            .map(|ns| units as f64 * ns * 1e-9 * self.cpu_pace);
        if let (Some(t), Some(w)) = (lasts, wall)
            && w > t
        {
            site.overruns += 1;
            site.overrun_s += w - t;
        }
        lasts
    }

    /// The real work so far, per call site (`file:line`) and in all.
    pub fn work_stats(&self) -> WorkStats {
        let sites = self.sites.lock().unwrap_or_else(|p| p.into_inner());
        let mut w = WorkStats::default();
        let (mut units, mut ns) = (0u64, 0u64);
        for (at, s) in sites.iter() {
            units += s.units;
            ns += s.ns;
            w.pieces += s.pieces;
            w.overruns += s.overruns;
            w.overrun_s += s.overrun_s;
            w.sites.insert(
                site_name(at),
                SiteReport {
                    ns_per_unit: (s.units > 0).then(|| s.ns as f64 / s.units as f64),
                    pieces: s.pieces,
                    overruns: s.overruns,
                    overrun_s: s.overrun_s,
                    clock_ns_per_unit: s.clock_ns,
                },
            );
        }
        w.ns_per_unit = (units > 0).then(|| ns as f64 / units as f64);
        w.overrun_unpaid_s = *self.debt_s.lock().unwrap_or_else(|p| p.into_inner());
        w
    }

    /// Extra work for a relative power p < 1: after real work that took
    /// `c` of this thread's CPU time since `start_cpu` (from
    /// [`thread_cpu`]), spin until it has taken `c / p`.
    ///
    /// CPU time, not wall time: under a quota, or on a core shared with
    /// other ranks, a piece's wall time includes the time the rank was
    /// throttled or waited for the core, and stretching that as if it were
    /// work made the slow ranks slower still, by chance
    /// (docs/design/apps.md).
    pub fn stretch(&self, start_cpu: f64) {
        spin_extra(start_cpu, self.extra_per_unit);
    }

    /// Run `f`, real work of `units`: followed by extra work when the
    /// rank's relative power is below 1 (spin, share), or paced by its
    /// CPU time (paced) or by its units (clock).
    ///
    /// On a node with more ranks than cores the work runs under
    /// `SCHED_IDLE`, and the rest under the normal policy or `SCHED_FIFO`
    /// ([`Emulation::fifo_waits`]), so a rank of the same core that needs
    /// the CPU for anything else (an MPI call, a test between sleeps)
    /// takes it at once. Without that, ranks sharing a core held each other off for
    /// a scheduler slice (docs/design/apps.md), time no cluster with a CPU
    /// per rank would lose and the model does not predict. Work is CPU time
    /// either way, and the pacing and extra work count CPU time.
    #[track_caller]
    pub fn work<R>(&self, units: u64, f: impl FnOnce() -> R) -> R {
        let at = Location::caller();
        let idle = |on: bool| {
            if self.idle_work {
                // Back from the work: FIFO where the rank waits under it
                // (`fifo_waits`; it was allowed once, so it is again).
                if on || !self.fifo_rest || fifo_policy().is_err() {
                    idle_policy(on);
                }
                if on {
                    // A thread that woke under the normal policy keeps the
                    // slice it was given then, SCHED_IDLE or not, and a
                    // neighbour waking for an MPI test waited for it.
                    // Yielding ends that slice, so the next wake-up
                    // preempts the work (docs/design/apps.md).
                    // SAFETY: no arguments; it only reschedules.
                    unsafe { libc::sched_yield() };
                }
            }
        };
        if self.cpu_pace > 0.0 {
            let (c0, w0) = (thread_cpu(), std::time::Instant::now());
            idle(true);
            let r = f();
            let c = thread_cpu() - c0;
            // By the clock, or by its CPU time (paced, and a site the
            // clock has no figure for).
            let wall = w0.elapsed().as_secs_f64();
            let lasts = match self.count(at, units, c, Some(wall)) {
                Some(t) => repay(
                    &mut self.debt_s.lock().unwrap_or_else(|p| p.into_inner()),
                    t,
                    wall,
                ),
                None => c * self.cpu_pace,
            };
            // The paced rest is waited out under the normal policy (or
            // FIFO), so the rank takes its core back on time from a
            // neighbour that computes.
            idle(false);
            super::wait_until(w0 + std::time::Duration::from_secs_f64(lasts));
            return r;
        }
        idle(true);
        let t = thread_cpu();
        let r = f();
        self.count(at, units, thread_cpu() - t, None);
        if self.extra_per_unit > 0.0 {
            self.stretch(t);
        }
        idle(false);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::{Clock, repay};

    #[test]
    fn a_piece_that_overran_is_made_up_by_the_pieces_after_it() {
        let mut debt = 0.0;
        // 1 ms of time, 1.3 ms of real work: it lasts what it took.
        assert_eq!(repay(&mut debt, 1e-3, 1.3e-3), 1e-3);
        assert!((debt - 0.3e-3).abs() < 1e-12);
        // 1 ms with 0.9 ms to spare pays all 0.3 ms back.
        assert!((repay(&mut debt, 1e-3, 0.1e-3) - 0.7e-3).abs() < 1e-12);
        assert!(debt.abs() < 1e-12);
        // Overruns add up; a piece never ends before its real work.
        repay(&mut debt, 1e-3, 1.5e-3);
        repay(&mut debt, 1e-3, 1.5e-3);
        assert!((repay(&mut debt, 1e-3, 0.6e-3) - 0.6e-3).abs() < 1e-12);
        assert!((debt - 0.6e-3).abs() < 1e-12);
        // With no debt a piece lasts its time.
        let mut none = 0.0;
        assert_eq!(repay(&mut none, 2e-3, 0.5e-3), 2e-3);
    }

    #[test]
    fn the_clock_takes_each_sites_largest_figure_times_the_headroom() {
        let report = concat!(
            r#"{"app":"x","ranks":["#,
            r#"{"cpu_sites":{"a.rs:1":{"ns_per_unit":2.0},"b.rs:9":{"ns_per_unit":5.0}}},"#,
            r#"{"cpu_sites":{"a.rs:1":{"ns_per_unit":3.0},"b.rs:9":{"ns_per_unit":null}}},"#,
            r#"{"rank":2}]}"#
        );
        let c = Clock::from_report(&format!("a progress line\n{report}\n"), 2.5).unwrap();
        let Clock::Sites(m) = c else { panic!("{c:?}") };
        assert_eq!(m.len(), 2);
        assert_eq!(m["a.rs:1"], 7.5);
        assert_eq!(m["b.rs:9"], 12.5);
        for bad in [
            "",
            "no json here",
            "{\"ranks\":[{\"cpu_sites\":{}}]}",
            "{\"app\":1}",
            "{not json",
        ] {
            assert!(Clock::from_report(bad, 2.5).is_err(), "{bad}");
        }
    }
}
