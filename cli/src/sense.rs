//! `mheta sense`: the sensors of `mheta_load::sense` on the command
//! line, with a table, a JSON file and a load description.

use anyhow::{Context, Result, bail};
use mheta_base::os::{allowed_cores, pin_to_core};
use mheta_load::Notice;
use mheta_load::sense::{self, BwPeer, Method, SenseFile, Settings};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

/// Sense CPU availability and available bandwidth over time.
///
/// Every --interval seconds, a thread pinned to each core of --cores takes
/// a CPU availability sample: with --method probe (the default, the
/// Network Weather Service's method) it spins and reports the CPU time it
/// got over the wall time across --probe seconds of whole turns of the
/// scheduler's round, from its first return to the core after it was
/// switched out (a waking thread is first given extra CPU, which this
/// leaves out), i.e. the share of the core a CPU-bound process gets;
/// with --method passive it spins not
/// at all and reports 1/(1+n) for the n runnable tasks of other processes
/// whose last CPU is the core (/proc/*/task/*/stat). The probe is right
/// where the passive count is not (sched autogroups, nice levels, tasks
/// runnable part of the time) and costs --probe/--interval of the core
/// while sensing (up to twice that on a shared core). With --bw-peer-core or --bw-peer, each sample is
/// followed by a TCP transfer of --bw-bytes to an acknowledging peer:
/// available bandwidth; the best seen is the dedicated bandwidth and
/// dedicated/available the communication slowdown.
///
/// Runs for --duration seconds, or until SIGINT/SIGTERM (then it stops
/// cleanly and reports what it has). Prints per core the samples, the
/// mean ± 2σ, the modes (value ± 2σ, share of the time, mean dwell) and
/// the current mode; per bandwidth pair the same; and the sensors'
/// overhead. -o writes the JSON file ("format": "mheta-sense",
/// "version": 1) atomically; with --ranks it holds a "load" object for
/// `mheta predict --load`. --json prints that object instead of the table.
#[derive(clap::Args, Debug)]
pub struct SenseArgs {
    /// Cores to sense, comma-separated (default: every core this process
    /// may run on).
    #[arg(long, value_delimiter = ',')]
    cores: Vec<usize>,
    /// Seconds to sense.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Seconds between samples.
    #[arg(long, default_value_t = 0.25)]
    interval: f64,
    /// Seconds one CPU probe measures (method probe), after its first
    /// switch-out; it spins at most twice that. Its overhead is about
    /// probe/interval of the core (8% by default). Shorter probes catch
    /// fewer turns of the scheduler's round (measurements in
    /// docs/design/load.md).
    #[arg(long, default_value_t = 0.02)]
    probe: f64,
    /// probe (spin and measure the CPU share got) or passive (count the
    /// runnable tasks on the core: 1/(1+n)).
    #[arg(long, default_value_t = Method::Probe)]
    method: Method,
    /// Measure bandwidth to an acknowledging thread of this process
    /// pinned to this core, over loopback, from each sensed core.
    #[arg(long, conflicts_with = "bw_peer")]
    bw_peer_core: Option<usize>,
    /// Measure bandwidth to `mheta sense --serve HOST:PORT` (or `mheta
    /// load --echo-listen HOST:PORT`) running on another host.
    #[arg(long, value_name = "HOST:PORT")]
    bw_peer: Option<String>,
    /// Bytes per bandwidth probe (K, M, G suffixes; NWS used 64 KiB).
    #[arg(long, default_value = "64K", value_parser = parse_size)]
    bw_bytes: u64,
    /// The job's ranks on the sensed cores, `CORE:RANKS;CORE:RANKS` with
    /// RANKS a comma list or ranges (`0:0,1;1:2-3`): writes the "load"
    /// object (one node per listed core) for `mheta predict --load`.
    #[arg(long, value_name = "MAP")]
    ranks: Option<String>,
    /// Write the samples, distributions, mixtures and overhead (JSON).
    #[arg(short = 'o', long)]
    output: Option<PathBuf>,
    /// Print the JSON object on stdout instead of the table.
    #[arg(long)]
    json: bool,
    /// Instead of sensing: serve bandwidth probes of other hosts on
    /// HOST:PORT until SIGINT/SIGTERM (pinned to --bw-peer-core if given).
    #[arg(long, value_name = "HOST:PORT", conflicts_with_all = ["bw_peer", "ranks", "output", "json"])]
    serve: Option<String>,
}

fn parse_size(s: &str) -> Result<u64, String> {
    let n = mheta_base::parse_bytes(s)?;
    if n == 0 || n > 1 << 30 {
        return Err(format!("{s:?}: between 1 byte and 1 GiB"));
    }
    Ok(n)
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

fn catch_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: installing a handler that only stores to an atomic.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

pub fn main(a: SenseArgs) -> Result<i32> {
    catch_signals();
    if let Some(addr) = &a.serve {
        return serve(&a, addr);
    }
    let cores = if a.cores.is_empty() {
        allowed_cores()
    } else {
        a.cores.clone()
    };
    check(&a, &cores)?;
    let map = match &a.ranks {
        Some(r) => Some(sense::parse_ranks(r, &cores).map_err(|e| anyhow::anyhow!("--ranks {e}"))?),
        None => None,
    };
    let settings = Settings {
        cores,
        duration_s: a.duration,
        interval_s: a.interval,
        probe_s: if a.method == Method::Probe {
            a.probe
        } else {
            0.0
        },
        method: a.method,
        bw_peer: match (&a.bw_peer_core, &a.bw_peer) {
            (Some(c), _) => Some(BwPeer::Core(*c)),
            (None, Some(p)) => Some(BwPeer::Addr(p.clone())),
            _ => None,
        },
        bw_bytes: a.bw_bytes as usize,
        ranks: a.ranks.clone(),
    };
    let mut f = sense::sense(&settings, &STOP).context("mheta sense")?;
    for w in &f.warnings {
        eprintln!("mheta sense: warning: {w}");
    }
    if let Some(m) = &map {
        f.load = Some(sense::load_spec(&f, m));
    }
    if let Some(o) = &a.output {
        // The error names the file.
        f.save(o)?;
    }
    if a.json {
        println!("{}", f.to_json());
    } else {
        print!("{}", table(&f));
        if let Some(o) = &a.output {
            println!("wrote {}", o.display());
        }
    }
    Ok(0)
}

/// `--serve ADDR`: answer bandwidth probes (the echo protocol of
/// `mheta_load::echo`) until signalled.
fn serve(a: &SenseArgs, addr: &str) -> Result<i32> {
    let l = std::net::TcpListener::bind(addr).with_context(|| format!("--serve {addr}"))?;
    eprintln!(
        "mheta sense: serving bandwidth probes on {}{} until SIGINT/SIGTERM",
        l.local_addr()?,
        a.bw_peer_core
            .map_or(String::new(), |c| format!(", pinned to core {c}"))
    );
    if let Some(c) = a.bw_peer_core {
        pin_to_core(c)?;
    }
    let stop = || STOP.load(Ordering::SeqCst);
    mheta_load::echo::serve(&l, a.bw_peer_core, &stop, &|n| {
        if let Notice::Warn(m) = n {
            eprintln!("mheta sense: {m}");
        }
    })
    .with_context(|| format!("--serve {addr}: accept"))?;
    Ok(0)
}

/// Each core once, a positive interval and duration, and a probe shorter
/// than the interval.
fn check(a: &SenseArgs, cores: &[usize]) -> Result<()> {
    let mut uniq = cores.to_vec();
    uniq.sort_unstable();
    uniq.dedup();
    if uniq.len() != cores.len() {
        bail!("--cores {cores:?}: a core is listed twice");
    }
    if !(a.interval > 0.0 && a.interval.is_finite()) {
        bail!("--interval {}: must be > 0", a.interval);
    }
    if !(a.duration > 0.0 && a.duration.is_finite()) {
        bail!("--duration {}: must be > 0", a.duration);
    }
    if a.method == Method::Probe && !(a.probe > 0.0 && a.probe < a.interval) {
        bail!(
            "--probe {}: must be > 0 and below --interval {}",
            a.probe,
            a.interval
        );
    }
    Ok(())
}

fn modes_text(f: &sense::Summary, scale: f64, unit: &str) -> String {
    f.mixture
        .modes
        .iter()
        .map(|m| {
            format!(
                "{:.3} ± {:.3}{unit} ({:.0}%, {:.2} s)",
                m.value.mean * scale,
                2.0 * m.value.sd * scale,
                100.0 * m.share,
                m.mean_dwell_s
            )
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The sensed cores, links and overhead as text.
fn table(f: &SenseFile) -> String {
    use std::fmt::Write as _;
    let s = &f.settings;
    let mut o = String::new();
    let how = match s.method {
        Method::Probe => format!(
            "probe: spin, CPU time got / wall time over {:.3} s of whole scheduler turns",
            s.probe_s
        ),
        Method::Passive => "passive: 1/(1 + runnable tasks on the core)".into(),
    };
    let _ = writeln!(
        o,
        "mheta sense: {} core(s), {:.1} s{} at {:.3} s intervals; CPU availability by {how}",
        s.cores.len(),
        f.elapsed_s,
        if f.interrupted { " (interrupted)" } else { "" },
        s.interval_s
    );
    let _ = writeln!(
        o,
        "{:>5} {:>8} {:>16}  {:<60} {:>4}",
        "core", "samples", "avail ± 2σ", "modes: value ± 2σ (share of time, mean dwell)", "now"
    );
    for c in &f.cores {
        let d = &c.summary.dist;
        let _ = writeln!(
            o,
            "{:>5} {:>8} {:>16}  {:<60} {:>4}",
            c.core,
            c.samples.len(),
            format!("{:.3} ± {:.3}", d.mean, 2.0 * d.stdev),
            modes_text(&c.summary, 1.0, ""),
            c.summary.current_mode.map_or("-".into(), |m| m.to_string())
        );
    }
    pair_rows(&mut o, f);
    overhead_rows(&mut o, f);
    if let Some(l) = &f.load {
        let _ = writeln!(
            o,
            "load for `mheta predict --load`: {} node(s) (in the JSON file's \"load\")",
            l.nodes.len()
        );
    }
    o
}

/// The links' rows: available and dedicated bandwidth, slowdown, modes.
fn pair_rows(o: &mut String, f: &SenseFile) {
    use std::fmt::Write as _;
    if !f.pairs.is_empty() {
        let _ = writeln!(
            *o,
            "{:>14} {:>8} {:>22} {:>12} {:>14}  modes (GB/s)",
            "bandwidth", "samples", "available ± 2σ", "dedicated", "slowdown ± 2σ"
        );
        for p in &f.pairs {
            let d = &p.summary.dist;
            let _ = writeln!(
                *o,
                "{:>14} {:>8} {:>22} {:>12} {:>14}  {}  now {}",
                format!("{} -> {}", p.core, p.peer),
                p.samples.len(),
                format!("{:.3} ± {:.3} GB/s", d.mean, 2.0 * d.stdev),
                format!("{:.3} GB/s", p.dedicated_bps * 1e-9),
                format!("{:.3} ± {:.3}", p.slowdown.mean, 2.0 * p.slowdown.sd),
                modes_text(&p.summary, 1.0, ""),
                p.summary.current_mode.map_or("-".into(), |m| m.to_string())
            );
        }
    }
}

/// The sensors' own cost.
fn overhead_rows(o: &mut String, f: &SenseFile) {
    use std::fmt::Write as _;
    let s = &f.settings;
    let oh = &f.overhead;
    let measured = oh
        .measured_cpu_duty
        .iter()
        .map(|d| format!("{:.1}%", 100.0 * d))
        .collect::<Vec<_>>()
        .join(", ");
    match s.method {
        Method::Probe => {
            let _ = writeln!(
                *o,
                "overhead: the probe measures {:.3} s every {:.3} s = {:.1}% of each core's time \
                 (up to twice that on a shared core; a co-runner loses up to that); sensor threads' CPU: {measured}",
                s.probe_s,
                s.interval_s,
                100.0 * oh.probe_duty
            );
        }
        Method::Passive => {
            let _ = writeln!(
                *o,
                "overhead: a /proc scan of {:.2} ms every {:.3} s, no spinning; sensor threads' CPU: {measured}",
                1e3 * oh.cpu_sample_s,
                s.interval_s
            );
        }
    }
    if s.bw_peer.is_some() {
        let _ = writeln!(
            *o,
            "          bandwidth probe: {} bytes every {:.3} s = {:.0} bytes/s on the link, \
             {:.3} ms each ({:.2}% of the time)",
            s.bw_bytes,
            s.interval_s,
            oh.bw_probe_bps,
            1e3 * oh.bw_probe_s,
            100.0 * oh.bw_probe_duty
        );
    }
}
