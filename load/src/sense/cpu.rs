//! CPU availability sensors: the active probe ([`cpu_probe`], the
//! Network Weather Service's method, the default) and the passive count of
//! runnable tasks ([`passive_avail`]).
//!
//! The probe spins on a thread pinned to the core and divides the CPU
//! time it got by the wall time over whole turns of the scheduler's
//! round (its wake-up credit left out, [`cpu_probe`]): it measures
//! what the scheduler really gives a newcomer (sched autogroups, nice
//! levels, wake-up placement included), at the cost of taking
//! `probe_s/interval` of the core from its co-runners. The passive sensor
//! spins not at all: it counts the runnable tasks whose last CPU is the
//! core other than the sensor's own process and says `1/(1 + n)`; it is
//! right only when the competitors are CPU-bound tasks of the newcomer's
//! scheduling group (docs/design/load.md has the comparison).

use super::MIN_AVAIL;
use mheta_base::os::thread_cpu_s;
use serde::{Deserialize, Serialize};
use std::io::{self, Read};
use std::time::Instant;

/// The active probe: spin on the calling thread and return the CPU share
/// it got in steady state, clamped to `[MIN_AVAIL, 1]`. Pin the thread
/// first ([`mheta_base::os::pin_to_core`]) to sense one core.
///
/// A thread that wakes from a sleep gets placed ahead of the tasks that
/// kept the core (the scheduler's wake-up credit), so the first
/// milliseconds of a spin read high: beside one hog a plain 20 ms spin
/// reads about 0.52-0.55, beside two 0.36-0.38. So the probe measures
/// between the times it is given the core again (the timeslice count of
/// `/proc/thread-self/schedstat`): from its first return after being
/// switched out to its last return before `probe_s` has passed since
/// then, whole turns of the scheduler's round only. A probe never
/// switched out in `probe_s` had the core to itself and reads its CPU
/// over wall time (1 but for interrupts); so does one without
/// schedstat. It spins at most `2·probe_s`.
pub fn cpu_probe(probe_s: f64) -> f64 {
    cpu_probe_turns(probe_s).0
}

/// [`cpu_probe`], and the CPU the probe got a turn: its CPU between its
/// first and its last return over the turns between them, the scheduler's
/// turn on this core (`NodeLoad::turn_s`, what the model replays a
/// time-shared rank by); None where it was never switched out twice.
pub fn cpu_probe_turns(probe_s: f64) -> (f64, Option<f64>) {
    let sched = mheta_base::os::SchedstatReader::open();
    let slices = || sched.as_ref().and_then(|r| r.read()).map(|s| s.timeslices);
    let w0 = Instant::now();
    let c0 = thread_cpu_s();
    let plain = |w: f64, c: f64| (c / w.max(1e-9)).clamp(MIN_AVAIL, 1.0);
    let Some(mut seen) = slices() else {
        return (spin_plain(w0, c0, probe_s), None);
    };
    // (wall, cpu) at the first return, and at the latest one, and the
    // returns between them.
    let mut first: Option<(f64, f64)> = None;
    let mut last: Option<(f64, f64)> = None;
    let mut turns = 0u64;
    let mut checked = 0.0;
    loop {
        let wall = w0.elapsed().as_secs_f64();
        let end = first.map_or(probe_s, |(w, _)| w + probe_s);
        if wall >= end {
            return match (first, last) {
                (Some(f), Some(l)) if l.0 - f.0 >= probe_s / 2.0 => (
                    plain(l.0 - f.0, l.1 - f.1),
                    Some((l.1 - f.1) / turns as f64),
                ),
                (Some(f), Some(l)) => (
                    plain(wall, thread_cpu_s() - c0),
                    Some((l.1 - f.1) / turns as f64),
                ),
                _ => (plain(wall, thread_cpu_s() - c0), None),
            };
        }
        // Read the count every 50 us: a turn of the round is milliseconds.
        if wall - checked >= 50e-6 {
            checked = wall;
            if let Some(n) = slices()
                && n != seen
            {
                let back = n.saturating_sub(seen);
                seen = n;
                let at = (w0.elapsed().as_secs_f64(), thread_cpu_s() - c0);
                if first.is_none() {
                    first = Some(at);
                } else {
                    last = Some(at);
                    turns += back;
                }
            }
        }
        std::hint::spin_loop();
    }
}

/// Spin `probe_s` wall seconds from `w0` and return CPU over wall time.
fn spin_plain(w0: Instant, c0: f64, probe_s: f64) -> f64 {
    let mut wall;
    loop {
        wall = w0.elapsed().as_secs_f64();
        if wall >= probe_s {
            break;
        }
        std::hint::spin_loop();
    }
    ((thread_cpu_s() - c0) / wall.max(1e-9)).clamp(MIN_AVAIL, 1.0)
}

/// The runnable tasks (state `R`) whose last CPU (field 39 of
/// `/proc/PID/task/TID/stat`) is `core`, other than the tasks of process
/// `skip_pid` (the sensor's own). Tasks that vanish during the scan are
/// skipped.
pub fn runnable_on(core: usize, skip_pid: Option<u32>) -> io::Result<usize> {
    let mut n = 0;
    let mut buf = String::with_capacity(512);
    for p in std::fs::read_dir("/proc")? {
        let Ok(p) = p else { continue };
        let name = p.file_name();
        let Some(pid) = name.to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if Some(pid) == skip_pid {
            continue;
        }
        let Ok(tasks) = std::fs::read_dir(p.path().join("task")) else {
            continue;
        };
        for t in tasks.flatten() {
            buf.clear();
            let Ok(mut f) = std::fs::File::open(t.path().join("stat")) else {
                continue;
            };
            if f.read_to_string(&mut buf).is_err() {
                continue;
            }
            if let Some((state, cpu)) = parse_stat(&buf)
                && state == 'R'
                && cpu == core
            {
                n += 1;
            }
        }
    }
    Ok(n)
}

/// State (field 3) and processor (field 39) of a `/proc/.../stat` line;
/// the command (field 2) may hold spaces and parentheses, so the fields
/// are counted from its last `)`.
pub fn parse_stat(line: &str) -> Option<(char, usize)> {
    let rest = &line[line.rfind(')')? + 1..];
    let mut f = rest.split_ascii_whitespace();
    let state = f.next()?.chars().next()?;
    let cpu = f.nth(39 - 4)?.parse().ok()?;
    Some((state, cpu))
}

/// The passive sensor: `1/(1 + n)` for the `n` tasks of other processes
/// runnable on `core` now ([`runnable_on`]).
pub fn passive_avail(core: usize) -> io::Result<f64> {
    let n = runnable_on(core, Some(std::process::id()))?;
    Ok(1.0 / (1.0 + n as f64))
}

/// How CPU availability is sensed. The probe is the default: the passive
/// count misses when the competitors share another session's autogroup
/// and counts a task runnable part of the time whole or not at all
/// (measurements: docs/design/load.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Spin for the probe time and measure the CPU share got (NWS).
    #[default]
    Probe,
    /// Count the runnable tasks on the core: 1/(1 + n).
    Passive,
}

impl std::str::FromStr for Method {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "probe" => Ok(Method::Probe),
            "passive" => Ok(Method::Passive),
            _ => Err(format!("method {s:?}: expected probe or passive")),
        }
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Method::Probe => "probe",
            Method::Passive => "passive",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mheta_base::os::allowed_cores;

    #[test]
    fn stat_lines_parse() {
        let l = "1234 (a (weird) name) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 \
                 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 1 0 0";
        assert_eq!(parse_stat(l), Some(('R', 1)));
        let me = std::fs::read_to_string("/proc/thread-self/stat").expect("own stat");
        let (st, cpu) = parse_stat(&me).expect("parse own stat");
        assert_eq!(st, 'R');
        assert!(allowed_cores().contains(&cpu));
    }
}
