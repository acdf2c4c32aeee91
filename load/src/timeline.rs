//! The timeline `mheta load` writes at exit (JSON, `"format":
//! "mheta-load-timeline"`, `"version": 1`; docs/FORMATS.md): what every
//! competing process did, the level switches of a bursty load, the echo
//! server's totals; and its summary for people.

use crate::echo::EchoStats;
use crate::schedule::SwitchMode;
use crate::spec::{Kind, ProcSpec};
use crate::worker::ProcStats;
use mheta_model::slowdown::Competitor;
use serde::Serialize;
use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

/// The name in the `format` field.
pub const FORMAT: &str = "mheta-load-timeline";
/// The version of the layout.
pub const VERSION: u32 = 1;

/// One competing process: its spec and what it did (field by field in
/// docs/FORMATS.md, "Load timeline").
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProcOut {
    pub index: usize,
    pub kind: &'static str,
    pub spec: String,
    pub core: Option<usize>,
    pub comm: Option<f64>,
    pub cycle_s: Option<f64>,
    pub msgs: Option<u32>,
    pub bytes: Option<u64>,
    pub active_s: f64,
    pub cpu_s: f64,
    pub cycles: u64,
    pub bursts: u64,
    pub bytes_sent: u64,
    pub compute_cpu_s: f64,
    pub compute_wall_s: f64,
    pub comm_wall_s: f64,
    pub comm_cpu_s: f64,
    pub comm_fraction: Option<f64>,
    pub comm_cpu_share: Option<f64>,
    pub peer_cpu_s: Option<f64>,
    /// The scheduler's account of the thread (`None` without schedstat):
    /// run-queue delay in all and inside each kind of phase, timeslices.
    pub runq_wait_s: Option<f64>,
    pub compute_wait_s: Option<f64>,
    pub comm_wait_s: Option<f64>,
    pub timeslices: Option<u64>,
    pub peer_runq_wait_s: Option<f64>,
    /// What the process did, as the slowdown model's competitor: its
    /// compute and communication fractions as if it had had a CPU to
    /// itself ([`measured_competitor`]); a load description takes it as
    /// it stands. `None` before it ran a cycle.
    pub as_competitor: Option<Competitor>,
    /// Its echo peer the same way (no compute; the CPU the peer took
    /// while the process communicated).
    pub peer_as_competitor: Option<Competitor>,
}

/// A competitor's behaviour measured, not declared (Figueira and Berman's
/// `p_comp`, `p_comm` and `delay_comm` for one process). Per cycle it
/// needed `c = compute_cpu_s` of CPU to compute, and communicated for
/// `m = comm_wall_s`: a cycle's communication phase lasts a wall time by
/// design, whatever the CPU lets it do meanwhile. On a CPU of its own it
/// computes `c / (c + m)` of its time and communicates `m / (c + m)`.
/// While communicating it takes `comm_cpu_s / m` of the CPU: what it took
/// over the window, beside whatever else ran (a round trip that waits
/// for the CPU sends less, so this is the day's figure, not a constant of
/// the process). A hog computes all the time. Its echo peer computes
/// nothing, communicates as much, and takes `peer_cpu_s / m`.
pub(crate) fn measured_competitor(
    kind: &str,
    st: &ProcStats,
    peer_cpu_s: Option<f64>,
) -> (Option<Competitor>, Option<Competitor>) {
    if kind == "hog" {
        return (Some(Competitor::hog()), None);
    }
    let c = st.compute_cpu_s.max(0.0);
    let m = st.comm_wall_s.max(0.0);
    if st.cycles == 0 || c + m <= 0.0 {
        return (None, None);
    }
    let share = |cpu: f64| (m > 0.0).then(|| (cpu / m).clamp(0.0, 1.0));
    let own = Competitor::cycling(c / (c + m), m / (c + m), share(st.comm_cpu_s));
    let peer = peer_cpu_s.map(|p| Competitor::cycling(0.0, m / (c + m), share(p)));
    (Some(own), peer)
}

/// A level switch, `t_s` seconds after the start.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SwitchOut {
    pub t_s: f64,
    pub index: usize,
    pub level: usize,
}

/// A level's visits and its share of the time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LevelOut {
    pub index: usize,
    pub level: usize,
    pub dwell_s: f64,
    pub visits: u64,
    pub time_s: f64,
    pub share: f64,
    pub mean_dwell_s: Option<f64>,
}

/// A bursty load: its levels, the switches and the time at each level.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BurstyOut {
    pub switch: SwitchMode,
    pub seed: Option<u64>,
    pub levels: Vec<usize>,
    pub dwell_s: Vec<f64>,
    pub start_level_index: usize,
    pub switches: Vec<SwitchOut>,
    pub per_level: Vec<LevelOut>,
}

/// The totals of an echo server (`--echo-listen`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EchoOut {
    pub addr: String,
    pub connections: u64,
    pub bursts: u64,
    pub bytes: u64,
    pub cpu_s: f64,
    pub runq_wait_s: Option<f64>,
}

/// The whole timeline of a run (`mode` "load" or "echo-server").
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Timeline {
    pub format: &'static str,
    pub version: u32,
    pub mode: &'static str,
    pub argv: Vec<String>,
    pub pid: u32,
    pub start_unix_s: f64,
    pub end_unix_s: f64,
    pub elapsed_s: f64,
    pub stopped_by: String,
    pub error: Option<String>,
    pub peer: Option<String>,
    pub peer_core: Option<usize>,
    pub process_cpu_s: f64,
    pub procs: Vec<ProcOut>,
    pub bursty: Option<BurstyOut>,
    pub echo: Option<EchoOut>,
}

/// Seconds since the Unix epoch.
pub(crate) fn unix_s(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Each level's visits, time and share from the `switches` of a run
/// that ended `end_s` seconds after its start.
pub(crate) fn per_level(
    levels: &[usize],
    dwell: &[f64],
    switches: &[SwitchOut],
    end_s: f64,
) -> Vec<LevelOut> {
    let mut time = vec![0.0; levels.len()];
    let mut visits = vec![0u64; levels.len()];
    for (k, sw) in switches.iter().enumerate() {
        let until = switches.get(k + 1).map_or(end_s, |n| n.t_s);
        time[sw.index] += (until - sw.t_s).max(0.0);
        visits[sw.index] += 1;
    }
    (0..levels.len())
        .map(|i| LevelOut {
            index: i,
            level: levels[i],
            dwell_s: dwell[i],
            visits: visits[i],
            time_s: time[i],
            share: if end_s > 0.0 { time[i] / end_s } else { 0.0 },
            mean_dwell_s: (visits[i] > 0).then(|| time[i] / visits[i] as f64),
        })
        .collect()
}

/// Process `i`'s part of the timeline: its spec and what it did.
pub(crate) fn proc_out(
    i: usize,
    p: &ProcSpec,
    st: ProcStats,
    core: Option<usize>,
    peer: Option<EchoStats>,
) -> ProcOut {
    let peer_cpu_s = peer.map(|e| e.cpu_s);
    let (kind, comm, cycle_s, msgs, bytes) = match p.kind {
        Kind::Hog => ("hog", None, None, None, None),
        Kind::Cycle {
            comm,
            cycle_s,
            msgs,
            bytes,
        } => ("cycle", Some(comm), Some(cycle_s), Some(msgs), Some(bytes)),
    };
    let busy = st.compute_wall_s + st.comm_wall_s;
    let (as_competitor, peer_as_competitor) = measured_competitor(kind, &st, peer_cpu_s);
    let sched = st.sched.is_some();
    let cycle = kind == "cycle";
    ProcOut {
        index: i,
        kind,
        spec: p.text.clone(),
        core,
        comm,
        cycle_s,
        msgs,
        bytes,
        active_s: st.active_s,
        cpu_s: st.cpu_s,
        cycles: st.cycles,
        bursts: st.bursts,
        bytes_sent: st.bytes_sent,
        compute_cpu_s: st.compute_cpu_s,
        compute_wall_s: st.compute_wall_s,
        comm_wall_s: st.comm_wall_s,
        comm_cpu_s: st.comm_cpu_s,
        comm_fraction: (kind == "cycle" && busy > 0.0).then(|| st.comm_wall_s / busy),
        comm_cpu_share: (st.comm_wall_s > 0.0).then(|| st.comm_cpu_s / st.comm_wall_s),
        peer_cpu_s,
        runq_wait_s: st.sched.map(|x| x.runq_wait_s),
        compute_wait_s: (sched && cycle).then_some(st.compute_wait_s),
        comm_wait_s: (sched && cycle).then_some(st.comm_wait_s),
        timeslices: st.sched.map(|x| x.timeslices),
        peer_runq_wait_s: peer.and_then(|e| e.runq_wait_s),
        as_competitor,
        peer_as_competitor,
    }
}

impl Timeline {
    /// The summary `mheta load` prints at exit (on stderr): what stopped
    /// it, each process, the levels, the echo server; lines ending in `\n`.
    pub fn summary(&self) -> String {
        let tl = self;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "mheta load: stopped by {} after {:.2} s; process CPU {:.2} s",
            tl.stopped_by, tl.elapsed_s, tl.process_cpu_s
        );
        if !tl.procs.is_empty() {
            let _ = writeln!(
                o,
                "  {:>3} {:<5} {:>4} {:>8} {:>8} {:>7} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9}",
                "#",
                "kind",
                "core",
                "active_s",
                "cpu_s",
                "cycles",
                "bursts",
                "comm_frac",
                "comm_wall",
                "comm_cpu",
                "peer_cpu",
                "runq_wait"
            );
        }
        let opt = |x: Option<f64>, p: usize| x.map_or("-".to_string(), |v| format!("{v:.p$}"));
        for p in &tl.procs {
            let _ = writeln!(
                o,
                "  {:>3} {:<5} {:>4} {:>8.2} {:>8.2} {:>7} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9}",
                p.index,
                p.kind,
                p.core.map_or("-".into(), |c| c.to_string()),
                p.active_s,
                p.cpu_s,
                p.cycles,
                p.bursts,
                opt(p.comm_fraction, 3),
                opt((p.kind == "cycle").then_some(p.comm_wall_s), 3),
                opt((p.kind == "cycle").then_some(p.comm_cpu_s), 3),
                opt(p.peer_cpu_s, 3),
                opt(p.runq_wait_s, 3),
            );
        }
        if let Some(b) = &tl.bursty {
            let _ = writeln!(
                o,
                "  levels ({}, {} switches): {}",
                match b.switch {
                    SwitchMode::Random => "random",
                    SwitchMode::Scripted => "scripted",
                },
                b.switches.len().saturating_sub(1),
                b.per_level
                    .iter()
                    .map(|l| format!(
                        "L={} {:.1}% ({} visits, mean {})",
                        l.level,
                        100.0 * l.share,
                        l.visits,
                        opt(l.mean_dwell_s, 2)
                    ))
                    .collect::<Vec<_>>()
                    .join("; ")
            );
        }
        if let Some(e) = &tl.echo {
            let _ = writeln!(
                o,
                "  echo server {}: {} connections, {} bursts, {} bytes, CPU {:.3} s",
                e.addr, e.connections, e.bursts, e.bytes, e.cpu_s
            );
        }
        o
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn per_level_accounts_time_and_visits() {
        let sw = vec![
            SwitchOut {
                t_s: 0.0,
                index: 0,
                level: 0,
            },
            SwitchOut {
                t_s: 1.0,
                index: 1,
                level: 2,
            },
            SwitchOut {
                t_s: 4.0,
                index: 0,
                level: 0,
            },
        ];
        let p = per_level(&[0, 2], &[1.0, 3.0], &sw, 5.0);
        assert_eq!(p[0].visits, 2);
        assert!((p[0].time_s - 2.0).abs() < 1e-12);
        assert!((p[1].time_s - 3.0).abs() < 1e-12);
        assert!((p[0].share - 0.4).abs() < 1e-12);
        assert_eq!(p[1].mean_dwell_s, Some(3.0));
    }

    #[test]
    fn a_competitor_is_what_it_did_net_of_waiting_for_the_cpu() {
        // 10 cycles: 0.25 s of CPU computing, 0.25 s communicating
        // (0.15 s of it waiting in the run queue), 0.05 s of CPU then.
        let st = ProcStats {
            cycles: 10,
            compute_cpu_s: 0.25,
            compute_wall_s: 0.6,
            comm_wall_s: 0.25,
            comm_wait_s: 0.15,
            comm_cpu_s: 0.05,
            ..ProcStats::default()
        };
        let (own, peer) = measured_competitor("cycle", &st, Some(0.1));
        let own = own.unwrap();
        assert!((own.compute() - 0.5).abs() < 1e-12);
        assert!((own.comm - 0.5).abs() < 1e-12);
        assert!((own.comm_cpu.unwrap() - 0.2).abs() < 1e-12);
        let peer = peer.unwrap();
        assert_eq!(peer.compute(), 0.0);
        assert!((peer.comm - 0.5).abs() < 1e-12);
        assert!((peer.comm_cpu.unwrap() - 0.4).abs() < 1e-12);
        assert_eq!(
            measured_competitor("hog", &st, None).0,
            Some(Competitor::hog())
        );
        let idle = ProcStats::default();
        assert_eq!(measured_competitor("cycle", &idle, None), (None, None));
    }
}
