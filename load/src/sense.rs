//! Sensors, as the Network Weather Service supplied them to Figueira and Berman
//! and Schopf and Berman: per core, the CPU *availability* (the share of the core a new
//! CPU-bound process would get) and the *available bandwidth* to a peer,
//! sampled over time, kept as HdrHistogram distributions with their modes
//! ([`mheta_profile::SampleStats`]) and turned into the model's multi-modal
//! stochastic values ([`Mixture`]: per mode its mean ± sd, its share of the
//! time and its mean dwell; [`summarize`]). CPU availability is sensed by
//! the *active probe* ([`cpu_probe`], NWS's method, the default): a thread
//! pinned to the core spins for `probe_s` wall seconds and divides the CPU
//! time it got by the wall time, so it measures what the scheduler really
//! gives a newcomer (sched autogroups, nice levels, wake-up placement
//! included) at the cost of taking `probe_s/interval` of the core from its
//! co-runners while it spins. The *passive sensor* ([`passive_avail`])
//! spins not at all: it counts the runnable tasks whose last CPU is the
//! core (`/proc/*/task/*/stat`, state `R`, field 39) other than the
//! sensor's own process, and says `1/(1 + n)`; it agrees with the probe
//! when the competitors are CPU-bound tasks of the same scheduling group
//! as the newcomer, and is wrong where the kernel does not share per task:
//! with autogroup on, two hogs started in another session take half the
//! core together, not two thirds (the passive sensor says 1/3, the probe
//! 1/2), and a task that is runnable only part of the time is counted
//! whole or not at all. The bandwidth sensor ([`BwClient`]) times a TCP
//! transfer of `bw_bytes` (64 KiB, NWS's default) to an acknowledging
//! peer ([`EchoServer`], a thread pinned to another core, or
//! `mheta sense --serve` on another host); the best figure seen is the
//! dedicated bandwidth, and dedicated over available is Figueira and Berman's
//! communication slowdown (eq. 3). [`sense`] runs the whole sampling loop
//! (what `mheta sense` does) and [`SenseFile`] is its versioned JSON,
//! whose `load` object is a [`LoadSpec`] for `mheta predict --load`.

use mheta_model::slowdown::{LoadSpec, NodeLoad};
use mheta_model::stoch::{Mixture, ModeStat, Stoch};
use mheta_profile::SampleStats as Hist;
use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The `format` field of a sense file.
pub const FORMAT: &str = "mheta-sense";
/// Version of the sense file's layout.
pub const VERSION: u32 = 1;
/// NWS's default bandwidth probe: 64 KiB.
pub const DEFAULT_BW_BYTES: usize = 64 * 1024;
/// Availability is clamped to `[MIN_AVAIL, 1]` (a probe that got no CPU at
/// all still gives a positive share, so that modes and slowdowns exist).
pub const MIN_AVAIL: f64 = 1e-3;
/// How many of the last samples vote for the current mode.
pub const CURRENT_WINDOW: usize = 5;

// ---------------------------------------------------------------- clocks

fn clock_s(clock: libc::clockid_t) -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// CPU time of the calling thread, seconds (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu_s() -> f64 {
    clock_s(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time of the whole process, seconds (`CLOCK_PROCESS_CPUTIME_ID`).
pub fn process_cpu_s() -> f64 {
    clock_s(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// The calling thread's kernel task id.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// Pin the calling thread to `core` (`sched_setaffinity(0, ...)`).
pub fn pin_to_core(core: usize) -> io::Result<()> {
    if core >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("core {core} is out of range"),
        ));
    }
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET stays in bounds
    // (checked above); sched_setaffinity reads the set we own.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(core, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("pin to core {core}: {e}")));
        }
    }
    Ok(())
}

/// The cores this process may run on.
pub fn allowed_cores() -> Vec<usize> {
    // SAFETY: sched_getaffinity fills the set we own; CPU_ISSET reads it
    // within CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

// ------------------------------------------------------------ CPU sensors

/// The active probe: spin on the calling thread for `probe_s` wall
/// seconds and return the CPU time it got over the wall time, clamped to
/// `[MIN_AVAIL, 1]`. Pin the thread first ([`pin_to_core`]) to sense one
/// core.
pub fn cpu_probe(probe_s: f64) -> f64 {
    let w0 = Instant::now();
    let c0 = thread_cpu_s();
    let mut wall;
    loop {
        wall = w0.elapsed().as_secs_f64();
        if wall >= probe_s {
            break;
        }
        std::hint::spin_loop();
    }
    let cpu = thread_cpu_s() - c0;
    (cpu / wall.max(1e-9)).clamp(MIN_AVAIL, 1.0)
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

/// How CPU availability is sensed. Measured on this project's 2-core VM
/// (kernel 6.18, EEVDF, autogroup on; `yes` hogs pinned to core 0; 3 s
/// at 0.1 s intervals; mean of the samples; probe 20 ms):
///
/// | hogs on the core            | true share | probe | passive |
/// |-----------------------------|-----------:|------:|--------:|
/// | 0                           | 1          | 0.98  | 1.00 (0.72-0.75 while an unrelated task polled on the core) |
/// | 1, same session             | 1/2        | 0.52  | 0.50    |
/// | 1, another session          | 1/2        | 0.50  | 0.46    |
/// | 2, same session             | 1/3        | 0.36  | 0.33    |
/// | 2, both in another session  | 1/2        | 0.51  | 0.31    |
///
/// The passive count is exact for CPU-bound tasks of the probe's own
/// scheduling group, but misses by 40% when the hogs share another
/// session's autogroup, and counts a task that polls (runnable in 20% of
/// scans, 2.5% of the CPU) as a whole competitor: hence probe is the
/// default. The probe reads high when short (a waking thread gets about
/// a millisecond extra): with 2 hogs in the probe's own Unix session: 0.52 at 5 ms, 0.40 at
/// 10 ms, 0.375 at 20 ms, 0.336 at 50 ms. Costs: the probe takes
/// probe/interval of the core (its CPU time measured: 10.2% idle and
/// 5.8% beside one hog at 10 ms/100 ms); a passive sample is a /proc scan
/// of 2-4 ms of CPU (about 80 processes), 2-3% at 0.1 s intervals.
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

// ------------------------------------------------------- bandwidth sensor

/// The peer of the bandwidth probe: a thread of this process that reads
/// each probe's bytes and acknowledges them with one byte. The protocol:
/// the client sends the probe size as a little-endian u64 once per
/// connection, then per probe that many bytes; the server answers each
/// with one byte.
pub struct EchoServer {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl EchoServer {
    /// Listen on `bind` (e.g. `127.0.0.1:0`) with the acceptor and every
    /// connection's thread pinned to `core` (if given).
    pub fn start(bind: &str, core: Option<usize>) -> io::Result<EchoServer> {
        let l = TcpListener::bind(bind)?;
        let addr = l.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        std::thread::Builder::new()
            .name("mheta-sense-echo".into())
            .spawn(move || {
                if let Some(c) = core {
                    let _ = pin_to_core(c);
                }
                serve(l, core, &st);
            })?;
        Ok(EchoServer { addr, stop })
    }
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        // The acceptor polls this; connections end when their client goes.
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Accept connections on `l` until `stop`, each served by a thread pinned
/// to `core` (`mheta sense --serve` runs this on the calling thread).
pub fn serve(l: TcpListener, core: Option<usize>, stop: &AtomicBool) {
    // Poll, so that `stop` (set by a signal handler) ends the loop: a
    // blocking accept is restarted after EINTR.
    let _ = l.set_nonblocking(true);
    while !stop.load(Ordering::SeqCst) {
        let s = match l.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            Err(_) => continue,
        };
        let _ = s.set_nonblocking(false);
        let _ = std::thread::Builder::new()
            .name("mheta-sense-ack".into())
            .spawn(move || {
                if let Some(c) = core {
                    let _ = pin_to_core(c);
                }
                let _ = ack_loop(s);
            });
    }
}

fn ack_loop(mut s: TcpStream) -> io::Result<()> {
    s.set_nodelay(true)?;
    let mut hdr = [0u8; 8];
    s.read_exact(&mut hdr)?;
    let n = u64::from_le_bytes(hdr) as usize;
    if n == 0 || n > 1 << 30 {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "bad probe size"));
    }
    let mut buf = vec![0u8; n.min(1 << 20)];
    loop {
        let mut left = n;
        while left > 0 {
            let k = buf.len().min(left);
            s.read_exact(&mut buf[..k])?;
            left -= k;
        }
        s.write_all(&[1])?;
    }
}

/// The client side of the bandwidth probe: one connection, reused.
pub struct BwClient {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl BwClient {
    pub fn connect(addr: &str, bytes: usize) -> io::Result<BwClient> {
        let a = addr.to_socket_addrs()?.next().ok_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, format!("{addr}: no address"))
        })?;
        let mut stream = TcpStream::connect_timeout(&a, Duration::from_secs(5))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        stream.write_all(&(bytes as u64).to_le_bytes())?;
        Ok(BwClient {
            stream,
            buf: vec![0xA5; bytes],
        })
    }

    /// One probe: send the bytes, wait for the acknowledgement; returns
    /// (bytes/s, seconds taken).
    pub fn probe(&mut self) -> io::Result<(f64, f64)> {
        let t0 = Instant::now();
        self.stream.write_all(&self.buf)?;
        let mut ack = [0u8; 1];
        self.stream.read_exact(&mut ack)?;
        let dt = t0.elapsed().as_secs_f64().max(1e-9);
        Ok((self.buf.len() as f64 / dt, dt))
    }
}

// ---------------------------------------------------------------- summary

/// A sensed time series summarised: its distribution with modes, the
/// mixture for the model, and the mode it is in now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Histogram and modes of the values ([`Hist::from_samples`]: a value
    /// is recorded as if it were seconds, so a CPU share of 0.5 is stored
    /// as 5e8 "ns").
    pub dist: Hist,
    /// One mode per mode of `dist`, by increasing value: value = mean ±
    /// sd of the samples classified to it, share = fraction of the time
    /// in it, mean_dwell_s = mean length of a visit.
    pub mixture: Mixture,
    /// The mode of the last [`CURRENT_WINDOW`] samples (majority; ties go
    /// to the latest), an index into `mixture.modes`.
    pub current_mode: Option<usize>,
}

/// The mode of each value: the modes of [`mheta_profile::modes`] are
/// consecutive runs of the sorted values, so the cut between mode k and
/// k+1 is midway between the last value of one and the first of the next.
pub fn classify(values: &[f64], modes: &[mheta_profile::Mode]) -> Vec<usize> {
    let mut xs: Vec<f64> = values
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    xs.sort_by(f64::total_cmp);
    let mut cuts = Vec::new();
    let mut at = 0usize;
    for m in modes.iter().take(modes.len().saturating_sub(1)) {
        at += m.count as usize;
        if at == 0 || at >= xs.len() {
            break;
        }
        cuts.push(0.5 * (xs[at - 1] + xs[at]));
    }
    values
        .iter()
        .map(|&v| cuts.partition_point(|&c| c < v))
        .collect()
}

/// The mixture of a time series `(t, value)` (t in seconds, increasing)
/// sampled every `interval_s`, for the modes `modes` (of the same
/// values): each sample stands for the time to the next one (the last for
/// `interval_s`); a mode's share is its fraction of that time, its dwell
/// the mean time of a run of consecutive samples in it. Runs cut by the
/// start or end of the series are left out of the dwell when the mode has
/// a complete run (they are shorter than the visit); a mode seen only in
/// cut runs gets their mean, a lower bound. Returns the mixture and each
/// sample's mode.
pub fn mixture_from_series(
    series: &[(f64, f64)],
    interval_s: f64,
    modes: &[mheta_profile::Mode],
) -> (Mixture, Vec<usize>) {
    if series.is_empty() || modes.is_empty() {
        return (Mixture { modes: Vec::new() }, Vec::new());
    }
    let vals: Vec<f64> = series.iter().map(|s| s.1).collect();
    let cls = classify(&vals, modes);
    let k = modes.len();
    let w: Vec<f64> = (0..series.len())
        .map(|i| match series.get(i + 1) {
            Some(n) => (n.0 - series[i].0).max(0.0),
            None => interval_s,
        })
        .collect();
    let total: f64 = w.iter().sum::<f64>().max(1e-300);
    // Runs: (mode, time, censored).
    let mut runs: Vec<(usize, f64, bool)> = Vec::new();
    let mut i = 0;
    while i < series.len() {
        let mut j = i;
        let mut t = 0.0;
        while j < series.len() && cls[j] == cls[i] {
            t += w[j];
            j += 1;
        }
        runs.push((cls[i], t, i == 0 || j == series.len()));
        i = j;
    }
    let mut out = Vec::with_capacity(k);
    for m in 0..k {
        let xs: Vec<f64> = (0..series.len())
            .filter(|&i| cls[i] == m)
            .map(|i| vals[i])
            .collect();
        if xs.is_empty() {
            continue;
        }
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
        let time: f64 = (0..series.len())
            .filter(|&i| cls[i] == m)
            .map(|i| w[i])
            .sum();
        let full: Vec<f64> = runs
            .iter()
            .filter(|r| r.0 == m && !r.2)
            .map(|r| r.1)
            .collect();
        let all: Vec<f64> = runs.iter().filter(|r| r.0 == m).map(|r| r.1).collect();
        let pick = if full.is_empty() { &all } else { &full };
        let dwell = pick.iter().sum::<f64>() / pick.len().max(1) as f64;
        out.push(ModeStat {
            value: Stoch::new(mean, sd),
            share: time / total,
            mean_dwell_s: dwell,
        });
    }
    // Renumber the classes to the modes kept (a mode of the histogram
    // always holds samples, so this is the identity in practice).
    (Mixture { modes: out }, cls)
}

/// The majority mode of the last [`CURRENT_WINDOW`] classes (ties: the
/// latest sample's mode wins).
pub fn current_mode(classes: &[usize]) -> Option<usize> {
    let tail = &classes[classes.len().saturating_sub(CURRENT_WINDOW)..];
    let last = *tail.last()?;
    let count = |m: usize| tail.iter().filter(|&&c| c == m).count();
    let best = tail.iter().copied().max_by_key(|&m| count(m))?;
    Some(if count(best) > count(last) {
        best
    } else {
        last
    })
}

/// Summarise a time series `(t, value)` sampled every `interval_s`: the
/// histogram with its modes, the mixture ([`mixture_from_series`]) and
/// the current mode. Values must be positive and fit the histogram as
/// seconds (1e-9 .. 3600): CPU shares do; give bandwidths in GB/s.
pub fn summarize(series: &[(f64, f64)], interval_s: f64) -> Summary {
    let vals: Vec<f64> = series.iter().map(|s| s.1).collect();
    let dist = Hist::from_samples(&vals);
    let (mixture, cls) = mixture_from_series(series, interval_s, &dist.modes);
    Summary {
        current_mode: current_mode(&cls),
        dist,
        mixture,
    }
}

// ------------------------------------------------------------ the sampler

/// Where the bandwidth probe sends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BwPeer {
    /// An [`EchoServer`] thread of this process pinned to this core.
    Core(usize),
    /// `mheta sense --serve` at HOST:PORT.
    Addr(String),
}

impl std::fmt::Display for BwPeer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BwPeer::Core(c) => write!(f, "core {c}"),
            BwPeer::Addr(a) => f.write_str(a),
        }
    }
}

/// What to sense, how often, for how long.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub cores: Vec<usize>,
    pub duration_s: f64,
    pub interval_s: f64,
    /// Spin time of one CPU probe (method probe).
    pub probe_s: f64,
    pub method: Method,
    #[serde(default)]
    pub bw_peer: Option<BwPeer>,
    pub bw_bytes: usize,
    /// The `--ranks` map, as given.
    #[serde(default)]
    pub ranks: Option<String>,
}

/// The sensors' own cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct Overhead {
    /// probe_s / interval_s: the share of a core the probe spins for; a
    /// co-runner of the core loses up to this (0 for passive).
    pub probe_duty: f64,
    /// Per sensed core, the CPU time the sensor thread used (probe spin,
    /// /proc scan, bandwidth client) over the time sensed.
    pub measured_cpu_duty: Vec<f64>,
    /// Mean time of one CPU sample, seconds (probe: its spin; passive:
    /// the /proc scan).
    pub cpu_sample_s: f64,
    /// Bytes per second the bandwidth probes put on the link on average
    /// (bw_bytes / interval), 0 without them.
    pub bw_probe_bps: f64,
    /// Mean time of one bandwidth probe, seconds; over interval_s it is
    /// the share of the link's time the probe occupies.
    pub bw_probe_s: f64,
    pub bw_probe_duty: f64,
}

/// One core's CPU availability series and its summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CoreSense {
    pub core: usize,
    /// `[t, availability]`, t in seconds from the start.
    pub samples: Vec<[f64; 2]>,
    #[serde(flatten)]
    pub summary: Summary,
}

/// One bandwidth pair's series and summaries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairSense {
    /// The core the client ran on.
    pub core: usize,
    pub peer: BwPeer,
    /// `[t, bytes/s]`.
    pub samples: Vec<[f64; 2]>,
    /// The best bandwidth seen, bytes/s: the dedicated figure.
    pub dedicated_bps: f64,
    /// The unit of `dist` and `mixture`: "GB/s" (1e9 bytes/s), to fit
    /// the histogram.
    pub unit: String,
    #[serde(flatten)]
    pub summary: Summary,
    /// Dedicated over available (Figueira and Berman eq. 3): mean ± sd over the
    /// samples.
    pub slowdown: Stoch,
}

/// A `mheta sense` file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SenseFile {
    pub format: String,
    pub version: u32,
    pub settings: Settings,
    /// Seconds actually sensed (shorter when interrupted).
    pub elapsed_s: f64,
    pub interrupted: bool,
    pub overhead: Overhead,
    pub cores: Vec<CoreSense>,
    #[serde(default)]
    pub pairs: Vec<PairSense>,
    /// Sensors that stopped early, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// With `--ranks`: the load for `mheta predict --load`, one node per
    /// sensed core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadSpec>,
}

/// Errors reading a sense file; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum SenseError {
    #[error("{path}: {err}")]
    Io { path: String, err: io::Error },
    #[error("{path}: not a JSON sense file: {msg}")]
    Json { path: String, msg: String },
    #[error("{path}: format {found:?}, expected {FORMAT:?}")]
    Format { path: String, found: String },
    #[error("{path}: version {found} of {FORMAT}, this mheta reads version {VERSION}")]
    Version { path: String, found: String },
}

impl SenseFile {
    /// Parse the text of a sense file, naming `path` in errors.
    pub fn parse(text: &str, path: &str) -> Result<SenseFile, SenseError> {
        let json = |msg: String| SenseError::Json {
            path: path.into(),
            msg,
        };
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| json(e.to_string()))?;
        let format = v.get("format").and_then(|f| f.as_str());
        if format != Some(FORMAT) {
            return Err(SenseError::Format {
                path: path.into(),
                found: v.get("format").map_or("(none)".into(), |f| f.to_string()),
            });
        }
        if v.get("version").and_then(|f| f.as_u64()) != Some(VERSION as u64) {
            return Err(SenseError::Version {
                path: path.into(),
                found: v.get("version").map_or("(none)".into(), |f| f.to_string()),
            });
        }
        serde_json::from_value(v).map_err(|e| json(e.to_string()))
    }

    /// The file as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Write atomically: a temporary file beside `path`, then rename.
    pub fn save(&self, path: &Path) -> io::Result<()> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = path.with_file_name(format!(".{name}.tmp{}", std::process::id()));
        std::fs::write(&tmp, self.to_json() + "\n")?;
        std::fs::rename(&tmp, path).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    }
}

/// Read and check a sense file ([`SenseFile::parse`]).
pub fn read_sense_file(path: &Path) -> Result<SenseFile, SenseError> {
    let p = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|err| SenseError::Io {
        path: p.clone(),
        err,
    })?;
    SenseFile::parse(&text, &p)
}

/// Parse a rank map `CORE:RANKS;CORE:RANKS`, RANKS a comma list of ranks
/// or ranges `a-b`, e.g. `0:0,1;1:2-3`. Every core must be one of
/// `cores`, and no core or rank may appear twice.
pub fn parse_ranks(s: &str, cores: &[usize]) -> Result<Vec<(usize, Vec<usize>)>, String> {
    let mut out: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for part in s.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let (c, rs) = part
            .split_once(':')
            .ok_or_else(|| format!("{part:?}: expected CORE:RANKS (e.g. 0:0,1)"))?;
        let core: usize = c
            .trim()
            .parse()
            .map_err(|_| format!("{part:?}: core {c:?} is not a number"))?;
        if !cores.contains(&core) {
            return Err(format!(
                "{part:?}: core {core} is not sensed (--cores {cores:?})"
            ));
        }
        if out.iter().any(|o| o.0 == core) {
            return Err(format!("{part:?}: core {core} is listed twice"));
        }
        let mut ranks = Vec::new();
        for r in rs.split(',').map(str::trim).filter(|r| !r.is_empty()) {
            let num = |x: &str| {
                x.trim()
                    .parse::<usize>()
                    .map_err(|_| format!("{part:?}: rank {x:?} is not a number"))
            };
            let (a, b) = match r.split_once('-') {
                Some((a, b)) => (num(a)?, num(b)?),
                None => (num(r)?, num(r)?),
            };
            if b < a {
                return Err(format!("{part:?}: empty range {r:?}"));
            }
            for x in a..=b {
                if !seen.insert(x) {
                    return Err(format!("{part:?}: rank {x} is listed twice"));
                }
                ranks.push(x);
            }
        }
        if ranks.is_empty() {
            return Err(format!("{part:?}: no ranks"));
        }
        out.push((core, ranks));
    }
    if out.is_empty() {
        return Err(format!("{s:?}: no CORE:RANKS entries"));
    }
    Ok(out)
}

/// The load a job with `map` (core → its ranks) runs under, one node per
/// mapped core: its availability mixture and current mode, and the
/// slowdown of its bandwidth pair if measured.
pub fn load_spec(file: &SenseFile, map: &[(usize, Vec<usize>)]) -> LoadSpec {
    let nodes = map
        .iter()
        .map(|(core, ranks)| {
            let c = file.cores.iter().find(|c| c.core == *core);
            let p = file
                .pairs
                .iter()
                .find(|p| p.core == *core && !p.samples.is_empty());
            NodeLoad {
                ranks: ranks.clone(),
                cpu_avail: c
                    .map(|c| c.summary.mixture.clone())
                    .filter(|m| !m.modes.is_empty()),
                current_mode: c.and_then(|c| c.summary.current_mode),
                bw_slowdown: p.map(|p| p.slowdown),
                ..NodeLoad::default()
            }
        })
        .collect();
    LoadSpec {
        nodes,
        ..LoadSpec::default()
    }
}

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
            Method::Probe => cpu_probe(s.probe_s),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A series alternating between levels: (value, dwell) visits
    /// repeated, sampled every dt, with deterministic jitter of ±2%.
    fn levels(visits: &[(f64, f64)], repeat: usize, dt: f64) -> Vec<(f64, f64)> {
        let mut out = Vec::new();
        let mut t = 0.0;
        let mut k = 0u64;
        for _ in 0..repeat {
            for &(v, d) in visits {
                let n = (d / dt).round() as usize;
                for _ in 0..n {
                    k = k
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let u = (k >> 11) as f64 / (1u64 << 53) as f64;
                    out.push((t, v * (1.0 + 0.04 * (u - 0.5))));
                    t += dt;
                }
            }
        }
        out
    }

    #[test]
    fn two_levels_give_two_modes_with_shares_and_dwells() {
        // 1.0 for 2 s, 0.5 for 1 s, 20 times, sampled every 0.1 s.
        let s = levels(&[(1.0, 2.0), (0.5, 1.0)], 20, 0.1);
        let sm = summarize(&s, 0.1);
        assert_eq!(sm.dist.modes.len(), 2, "{:?}", sm.dist.modes);
        let m = &sm.mixture.modes;
        assert_eq!(m.len(), 2);
        // By increasing value: the loaded mode first.
        assert!((m[0].value.mean - 0.5).abs() < 0.01 && (m[1].value.mean - 1.0).abs() < 0.02);
        assert!((m[0].share - 1.0 / 3.0).abs() < 0.05, "{m:?}");
        assert!((m[1].share - 2.0 / 3.0).abs() < 0.05, "{m:?}");
        assert!((m[0].mean_dwell_s - 1.0).abs() < 0.2, "{m:?}");
        assert!((m[1].mean_dwell_s - 2.0).abs() < 0.4, "{m:?}");
        assert!(m[0].value.sd > 0.0 && m[0].value.sd < 0.02);
        // The series ends in the loaded level.
        assert_eq!(sm.current_mode, Some(0));
    }

    #[test]
    fn uneven_sampling_weights_time() {
        // 1.0 sampled densely (every 0.05 s) for 1 s, 0.5 sparsely
        // (every 0.2 s) for 1 s: half the time each, though 4:1 in samples.
        let mut s = Vec::new();
        for r in 0..15 {
            let t0 = r as f64 * 2.0;
            for i in 0..20 {
                s.push((t0 + i as f64 * 0.05, 1.0 + 0.001 * (i % 3) as f64));
            }
            for i in 0..5 {
                s.push((t0 + 1.0 + i as f64 * 0.2, 0.5 + 0.001 * (i % 3) as f64));
            }
        }
        let sm = summarize(&s, 0.2);
        let m = &sm.mixture.modes;
        assert_eq!(m.len(), 2);
        assert!(
            (m[0].share - 0.5).abs() < 0.05 && (m[1].share - 0.5).abs() < 0.05,
            "{m:?}"
        );
        assert!((m[0].mean_dwell_s - 1.0).abs() < 0.2 && (m[1].mean_dwell_s - 1.0).abs() < 0.2);
    }

    #[test]
    fn flat_series_is_one_mode() {
        let s = levels(&[(0.97, 1.0)], 30, 0.1);
        let sm = summarize(&s, 0.1);
        assert_eq!(sm.mixture.modes.len(), 1);
        let m = sm.mixture.modes[0];
        assert!((m.share - 1.0).abs() < 1e-9);
        assert!((m.value.mean - 0.97).abs() < 0.01);
        // One visit cut by both ends: its length, a lower bound.
        assert!((m.mean_dwell_s - 30.0).abs() < 0.2, "{m:?}");
        assert_eq!(sm.current_mode, Some(0));
        // Few samples: one mode too.
        let few = summarize(&s[..5], 0.1);
        assert_eq!(few.mixture.modes.len(), 1);
        let none = summarize(&[], 0.1);
        assert!(none.mixture.modes.is_empty() && none.current_mode.is_none());
    }

    #[test]
    fn three_levels_and_current_mode() {
        let s = levels(&[(1.0, 1.5), (0.5, 1.0), (0.33, 0.5)], 12, 0.05);
        let sm = summarize(&s, 0.05);
        let m = &sm.mixture.modes;
        assert_eq!(m.len(), 3, "{:?}", sm.dist.modes);
        for (mode, (share, dwell)) in m
            .iter()
            .zip([(0.5 / 3.0, 0.5), (1.0 / 3.0, 1.0), (0.5, 1.5)])
        {
            assert!((mode.share - share).abs() < 0.05, "{m:?}");
            assert!((mode.mean_dwell_s - dwell).abs() < 0.2 * dwell, "{m:?}");
        }
        assert_eq!(sm.current_mode, Some(0));
        assert_eq!(current_mode(&[1, 1, 1, 0, 0]), Some(1));
        assert_eq!(current_mode(&[2, 1, 1, 0, 0]), Some(0));
        assert_eq!(current_mode(&[]), None);
    }

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

    #[test]
    fn ranks_parse_and_reject() {
        let m = parse_ranks("0:0,1;1:2-3", &[0, 1]).expect("valid");
        assert_eq!(m, vec![(0, vec![0, 1]), (1, vec![2, 3])]);
        for bad in ["0:0;0:1", "2:0", "0:0,0", "x:1", "0:a", "0", "", "0:3-1"] {
            assert!(parse_ranks(bad, &[0, 1]).is_err(), "{bad}");
        }
    }

    #[test]
    fn file_round_trip_and_errors() {
        let s = levels(&[(1.0, 2.0), (0.5, 1.0)], 10, 0.1);
        let f = SenseFile {
            format: FORMAT.into(),
            version: VERSION,
            settings: Settings {
                cores: vec![0],
                duration_s: 30.0,
                interval_s: 0.1,
                probe_s: 0.01,
                method: Method::Probe,
                bw_peer: Some(BwPeer::Core(1)),
                bw_bytes: DEFAULT_BW_BYTES,
                ranks: Some("0:0,1".into()),
            },
            elapsed_s: 30.0,
            interrupted: false,
            overhead: Overhead::default(),
            cores: vec![CoreSense {
                core: 0,
                samples: s.iter().map(|&(t, v)| [t, v]).collect(),
                summary: summarize(&s, 0.1),
            }],
            pairs: Vec::new(),
            warnings: Vec::new(),
            load: None,
        };
        let mut f2 = f.clone();
        f2.load = Some(load_spec(&f, &parse_ranks("0:0,1", &[0]).expect("map")));
        let back = SenseFile::parse(&f2.to_json(), "x.json").expect("round trip");
        // serde_json's float parsing may move the last bit: compare shapes.
        assert_eq!(back.settings, f2.settings);
        assert_eq!(back.cores[0].samples.len(), 300);
        let (a, b) = (&back.cores[0].summary.mixture, &f2.cores[0].summary.mixture);
        assert_eq!(a.modes.len(), 2);
        for (x, y) in a.modes.iter().zip(&b.modes) {
            assert!(
                (x.share - y.share).abs() < 1e-12 && (x.value.mean - y.value.mean).abs() < 1e-12
            );
        }
        assert_eq!(back.cores[0].summary.dist.modes.len(), 2);
        assert!(back.load.is_some());
        // The load object is a LoadSpec that resolves.
        let v: serde_json::Value = serde_json::from_str(&f2.to_json()).expect("json");
        let load = LoadSpec::parse(&v["load"].to_string(), "x.json").expect("LoadSpec");
        let sl = load.resolve(2, 1.0, "x.json").expect("resolve");
        assert!(sl.cpu[0].mean > 1.0 && sl.cpu[1] == sl.cpu[0]);
        let e = SenseFile::parse("{", "bad.json").expect_err("garbled");
        assert!(e.to_string().starts_with("bad.json: not a JSON"), "{e}");
        let e = SenseFile::parse(r#"{"format":"other","version":1}"#, "o.json").expect_err("fmt");
        assert!(
            e.to_string().contains("o.json") && e.to_string().contains("format"),
            "{e}"
        );
        let e =
            SenseFile::parse(r#"{"format":"mheta-sense","version":9}"#, "v.json").expect_err("v");
        assert!(e.to_string().contains("version 9"), "{e}");
        let e = read_sense_file(Path::new("/nonexistent/s.json")).expect_err("missing");
        assert!(e.to_string().starts_with("/nonexistent/s.json:"), "{e}");
    }
}
