//! The sampling loop of `mheta sense`: one thread per sensed core,
//! pinned to it, takes a CPU sample at every tick and then, with a peer,
//! a bandwidth probe; the samples become a [`SenseFile`] with the
//! sensors' own overhead.

use super::bandwidth::{BwClient, BwPeer};
use super::cpu::{Method, cpu_probe_turns, passive_avail};
use super::file::{CoreSense, Overhead, PairSense, SenseFile, Settings};
use super::summary::summarize;
use super::{FORMAT, VERSION};
use crate::echo::EchoServer;
use mheta_base::os::{allowed_cores, pin_to_core, thread_cpu_s};
use mheta_model::stoch::Stoch;
use std::io;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// `x` to `digits` significant digits (the samples in the file).
fn round_sig(x: f64, digits: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let p = 10f64.powi(digits - 1 - x.abs().log10().floor() as i32);
    (x * p).round() / p
}

#[derive(Default)]
struct CoreRun {
    cpu: Vec<(f64, f64)>,
    /// The CPU each probe got a turn, where it was switched out
    /// ([`super::cpu::cpu_probe_turns`]), with its availability.
    turns: Vec<(f64, f64)>,
    bw: Vec<(f64, f64)>,
    cpu_sample_s: Vec<f64>,
    bw_s: Vec<f64>,
    thread_cpu_s: f64,
    err: Option<String>,
}

/// Sleep until `t`, waking every 50 ms to look at `stop`; false if
/// stopped.
fn sleep_until(t: Instant, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        let now = Instant::now();
        if now >= t {
            return true;
        }
        std::thread::sleep((t - now).min(Duration::from_millis(50)));
    }
}

/// Sense: one thread per core, pinned to it, takes a CPU sample every
/// `interval_s` (all cores at the same ticks, so probes on different
/// cores run concurrently) and then, if a peer is given, a bandwidth
/// probe (one at a time across cores, after the tick's CPU probes, so
/// that sensors do not measure each other); for `duration_s` or until
/// `stop` is set. The result has no `load` ([`load_spec`]).
pub fn sense(s: &Settings, stop: &AtomicBool) -> io::Result<SenseFile> {
    check_settings(s)?;
    let server = match &s.bw_peer {
        Some(BwPeer::Core(c)) => Some(EchoServer::start("127.0.0.1:0", Some(*c))?),
        _ => None,
    };
    let peer_addr = match (&s.bw_peer, &server) {
        (_, Some(sv)) => Some(sv.addr.to_string()),
        (Some(BwPeer::Addr(a)), None) => Some(a.clone()),
        _ => None,
    };
    let clients = connect(s, peer_addr.as_deref())?;
    let token = Mutex::new(());
    let t0 = Instant::now() + Duration::from_millis(20);
    let ticks = (s.duration_s / s.interval_s).ceil().max(1.0) as usize;
    let clock = Ticks { t0, ticks, stop };
    let runs: Vec<CoreRun> = std::thread::scope(|sc| {
        let hs: Vec<_> = (s.cores.iter().zip(clients))
            .map(|(&core, client)| {
                let (token, clock) = (&token, &clock);
                sc.spawn(move || sense_core(s, core, client, token, clock))
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| CoreRun {
                    err: Some("sensor thread panicked".into()),
                    ..CoreRun::default()
                })
            })
            .collect()
    });
    let elapsed = t0.elapsed().as_secs_f64().max(1e-9);
    drop(server);
    let warnings: Vec<String> = s
        .cores
        .iter()
        .zip(&runs)
        .filter_map(|(c, r)| r.err.as_ref().map(|e| format!("core {c}: {e}")))
        .collect();
    if let Some(e) = warnings.first()
        && runs.iter().all(|r| r.cpu.is_empty())
    {
        return Err(io::Error::other(e.clone()));
    }
    let mut cores = Vec::new();
    let mut pairs = Vec::new();
    for (&core, r) in s.cores.iter().zip(&runs) {
        cores.push(CoreSense {
            core,
            samples: r
                .cpu
                .iter()
                .map(|&(t, v)| [round_sig(t, 7), round_sig(v, 6)])
                .collect(),
            summary: summarize(&r.cpu, s.interval_s),
            turn_s: turn_of(&r.turns),
        });
        // No pair from the peer's own core (client and server would
        // share it).
        if let Some(peer) = s.bw_peer.as_ref().filter(|p| **p != BwPeer::Core(core)) {
            pairs.push(pair_sense(s, core, peer, r));
        }
    }
    let sensed = elapsed.min(ticks as f64 * s.interval_s).max(1e-9);
    Ok(SenseFile {
        format: FORMAT.into(),
        version: VERSION,
        settings: s.clone(),
        elapsed_s: elapsed,
        interrupted: stop.load(Ordering::SeqCst),
        overhead: overhead(s, &runs, sensed),
        cores,
        pairs,
        warnings,
        load: None,
    })
}

/// Each core's bandwidth client to `peer` (none on the peer's own core),
/// connected first, so that a wrong peer fails at once.
fn connect(s: &Settings, peer: Option<&str>) -> io::Result<Vec<Option<BwClient>>> {
    let mut clients = Vec::new();
    for &core in &s.cores {
        clients.push(match peer {
            Some(_) if s.bw_peer == Some(BwPeer::Core(core)) => None,
            Some(a) => Some(
                BwClient::connect(a, s.bw_bytes)
                    .map_err(|e| io::Error::new(e.kind(), format!("bandwidth peer {a}: {e}")))?,
            ),
            None => None,
        });
    }
    Ok(clients)
}

/// The sensors' common ticks: the first, how many, and the stop flag.
struct Ticks<'a> {
    t0: Instant,
    ticks: usize,
    stop: &'a AtomicBool,
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

/// Cores to sense, a positive interval, a probe of at least 0, and every
/// core (the peer's too) available to this process.
fn check_settings(s: &Settings) -> io::Result<()> {
    let invalid = |m: String| Err(io::Error::new(io::ErrorKind::InvalidInput, m));
    if s.cores.is_empty() {
        return invalid("no cores to sense".into());
    }
    if s.interval_s.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater)
        || s.probe_s
            .partial_cmp(&0.0)
            .is_none_or(|o| o == std::cmp::Ordering::Less)
    {
        return invalid("interval must be > 0 and probe >= 0".into());
    }
    let allowed = allowed_cores();
    for &c in s.cores.iter().chain(match &s.bw_peer {
        Some(BwPeer::Core(c)) => Some(c),
        _ => None,
    }) {
        if !allowed.contains(&c) {
            return invalid(format!("core {c} is not available (allowed: {allowed:?})"));
        }
    }
    Ok(())
}

/// One core's sensor, pinned to it: at every tick a CPU sample, then,
/// with a `client`, a bandwidth probe holding `token` (one at a time
/// across cores, after the tick's CPU probes).
fn sense_core(
    s: &Settings,
    core: usize,
    mut client: Option<BwClient>,
    token: &Mutex<()>,
    clock: &Ticks,
) -> CoreRun {
    let mut r = CoreRun::default();
    if let Err(e) = pin_to_core(core) {
        r.err = Some(e.to_string());
        return r;
    }
    let c0 = thread_cpu_s();
    for k in 0..clock.ticks {
        let tick = clock.t0 + Duration::from_secs_f64(k as f64 * s.interval_s);
        if !sleep_until(tick, clock.stop) {
            break;
        }
        let t = tick.duration_since(clock.t0).as_secs_f64();
        let a = Instant::now();
        let v = match s.method {
            Method::Probe => {
                let (v, turn) = cpu_probe_turns(s.probe_s);
                r.turns.extend(turn.map(|q| (v, q)));
                v
            }
            Method::Passive => match passive_avail(core) {
                Ok(v) => v,
                Err(e) => {
                    r.err = Some(format!("/proc scan: {e}"));
                    break;
                }
            },
        };
        r.cpu_sample_s.push(a.elapsed().as_secs_f64());
        r.cpu.push((t, v));
        if let Some(cl) = client.as_mut() {
            // After every core's probe of this tick.
            let after = tick + Duration::from_secs_f64(s.probe_s.max(0.002));
            if !sleep_until(after, clock.stop) {
                break;
            }
            let _g = token.lock().unwrap_or_else(|e| e.into_inner());
            match cl.probe() {
                Ok((bps, dt)) => {
                    r.bw.push((t, bps));
                    r.bw_s.push(dt);
                }
                Err(e) => {
                    r.err = Some(format!("bandwidth probe: {e}"));
                    break;
                }
            }
        }
    }
    r.thread_cpu_s = thread_cpu_s() - c0;
    r
}

/// A core's bandwidth samples to `peer`: the dedicated bandwidth (the
/// best sample) and the slowdown of each sample against it, mean ± sd
/// (Figueira and Berman eq. 3's sd_{i->j}).
fn pair_sense(s: &Settings, core: usize, peer: &BwPeer, r: &CoreRun) -> PairSense {
    let ded = r.bw.iter().map(|b| b.1).fold(0.0, f64::max);
    let sl: Vec<f64> = r.bw.iter().map(|b| ded / b.1).collect();
    let m = mean(&sl);
    let sd = (sl.iter().map(|x| (x - m).powi(2)).sum::<f64>() / sl.len().max(1) as f64).sqrt();
    let gb: Vec<(f64, f64)> = r.bw.iter().map(|&(t, b)| (t, b * 1e-9)).collect();
    PairSense {
        core,
        peer: peer.clone(),
        samples: r
            .bw
            .iter()
            .map(|&(t, v)| [round_sig(t, 7), round_sig(v, 6)])
            .collect(),
        dedicated_bps: ded,
        unit: "GB/s".into(),
        summary: summarize(&gb, s.interval_s),
        slowdown: if sl.is_empty() {
            Stoch::point(1.0)
        } else {
            Stoch::new(m, sd)
        },
    }
}

/// The sensors' own cost over `sensed` seconds.
fn overhead(s: &Settings, runs: &[CoreRun], sensed: f64) -> Overhead {
    let all_cpu_s: Vec<f64> = runs.iter().flat_map(|r| r.cpu_sample_s.clone()).collect();
    let all_bw_s: Vec<f64> = runs.iter().flat_map(|r| r.bw_s.clone()).collect();
    Overhead {
        probe_duty: match s.method {
            Method::Probe => s.probe_s / s.interval_s,
            Method::Passive => 0.0,
        },
        measured_cpu_duty: runs.iter().map(|r| r.thread_cpu_s / sensed).collect(),
        cpu_sample_s: mean(&all_cpu_s),
        bw_probe_bps: if s.bw_peer.is_some() {
            s.bw_bytes as f64 / s.interval_s
        } else {
            0.0
        },
        bw_probe_s: mean(&all_bw_s),
        bw_probe_duty: mean(&all_bw_s) / s.interval_s,
    }
}

/// A core's turn: the median CPU a turn over the probes that shared the
/// core (availability below [`SHARED`]); None where none did.
fn turn_of(turns: &[(f64, f64)]) -> Option<f64> {
    let mut q: Vec<f64> = (turns.iter())
        .filter(|(v, q)| *v < SHARED && q.is_finite() && *q > 0.0)
        .map(|t| t.1)
        .collect();
    if q.is_empty() {
        return None;
    }
    q.sort_by(f64::total_cmp);
    Some(round_sig(q[q.len() / 2], 4))
}

/// A probe that got less of its core than this shared it.
const SHARED: f64 = 0.9;
