//! `mheta load`: a contention generator to run beside any (MPI) job.
//!
//! It emulates the competing applications of Figueira and Berman's slowdown
//! model (section 3 and eq. 2): CPU-bound processes ("hogs"),
//! processes that alternate computation and communication cycles with a
//! given communication fraction, burst size (messages x bytes), cycle length
//! and peer, and bursty load that switches between levels with given dwell
//! times (random, exponential dwells from a seeded generator, or scripted).
//!
//! # Processes are threads
//!
//! Each competing "process" is a thread of the one `mheta load` process,
//! pinned with `sched_setaffinity(0, ...)` (0 = the calling thread) to one
//! core. Linux's CFS schedules threads as tasks exactly like processes, so a
//! thread competes for its core as a separate program would; being one
//! process guarantees that nothing is left behind when it stops (no
//! children, no files but the timeline, sockets closed). The signal
//! handlers (SIGINT, SIGTERM, SIGHUP) only set an atomic; every loop checks
//! it (socket reads and writes time out every 50 ms, condition-variable
//! waits too). They are installed with `SA_RESETHAND`: a second signal of the
//! same kind kills the process with the default action. One caveat: with
//! `sched_autogroup_enabled` = 1, CPU is first shared among *sessions*, then
//! among the tasks of a session; run `mheta load` in the same session as the
//! job (not under `setsid`) to get the per-task sharing of a plain time-shared
//! node, or in its own session to emulate a load that is capped as a group.
//!
//! # A cycle process
//!
//! A cycle of length `cycle` has a compute phase, then a communication phase:
//! - compute: spin on real arithmetic until this thread's CPU time
//!   (`CLOCK_THREAD_CPUTIME_ID`) has advanced by `(1 - comm) * cycle`. The
//!   phase is work-based: under contention it stretches in wall time as a
//!   real competing program would (the assumption behind Figueira and Berman's eq. 2).
//! - communication: bursts of `msgs` messages of `bytes` bytes each over TCP
//!   (`TCP_NODELAY`) to an echo peer, which reads the whole burst and answers
//!   one small ack; bursts are repeated until `comm * cycle` wall seconds
//!   have passed since the phase began (at least one burst).
//!
//! The echo peer of each cycle process is a thread of this process on the
//! loopback (pinned to `--peer-core` if given), or an external echo server
//! (`--peer HOST:PORT`, another `mheta load --echo-listen ADDR`, e.g. on
//! another host). The tool measures the CPU time its communicating threads
//! take during the communication phases: that is the CPU a communicating
//! competitor itself takes from a core (Figueira and Berman's `delay_comm`).
//!
//! Wire protocol (per burst): a 12-byte header `"MHL1"`, msgs (u32 LE), bytes
//! (u32 LE); then `msgs` writes of `bytes` bytes; the server answers the
//! 8-byte ack `"MHLA"` + the burst's sequence number (u32 LE).
//!
//! # Bursty load
//!
//! `--levels L1,L2,...` gives levels, each the number of the `--proc`
//! processes that are active (the first L of them); the inactive ones are
//! frozen, as if stopped: they block on a condition variable (no CPU) and
//! resume their phase where they left it. `--switch scripted` visits the
//! levels in order with exactly the `--dwell` times, cycling; `--switch
//! random` draws the next level uniformly among the other levels and its
//! dwell from an exponential distribution with that level's `--dwell` as the
//! mean (splitmix64 generator seeded with `--seed`).
//!
//! # The timeline (JSON), `"format": "mheta-load-timeline"`, `"version": 1`
//!
//! Written at exit (after `--duration`, on SIGINT/SIGTERM/SIGHUP, or after an
//! error), atomically: a temporary file in the same directory, then rename.
//!
//! ```text
//! {
//!   "format": "mheta-load-timeline", "version": 1,
//!   "mode": "load" | "echo-server",
//!   "argv": [..], "pid": 1234,
//!   "start_unix_s": f64,          // when every thread was pinned and running
//!   "end_unix_s": f64, "elapsed_s": f64,
//!   "stopped_by": "duration" | "SIGINT" | "SIGTERM" | "SIGHUP" | "error",
//!   "error": null | "message",
//!   "peer": "loopback" | "HOST:PORT" | null, "peer_core": null | N,
//!   "process_cpu_s": f64,         // the whole process (all threads)
//!   "procs": [{
//!     "index": 0, "kind": "hog" | "cycle", "spec": "cycle:comm=0.3,...",
//!     "core": null | N,
//!     "comm": f64|null, "cycle_s": f64|null, "msgs": u32|null, "bytes": u64|null,
//!     "active_s": f64,            // wall time it was active
//!     "cpu_s": f64,               // its thread's CPU time
//!     "cycles": u64,              // complete cycles
//!     "bursts": u64, "bytes_sent": u64,
//!     "compute_cpu_s": f64, "compute_wall_s": f64,
//!     "comm_wall_s": f64, "comm_cpu_s": f64, // CPU used during comm phases
//!     "comm_fraction": f64|null,  // comm_wall / (compute_wall + comm_wall)
//!     "comm_cpu_share": f64|null, // comm_cpu / comm_wall
//!     "peer_cpu_s": f64|null      // CPU of its local echo thread
//!   }],
//!   "bursty": null | {
//!     "switch": "random" | "scripted", "seed": u64|null,
//!     "levels": [..], "dwell_s": [..], "start_level_index": i,
//!     "switches": [{"t_s": f64 (since start), "index": i, "level": L}],
//!     "per_level": [{"index": i, "level": L, "dwell_s": f64, "visits": n,
//!                    "time_s": f64, "share": f64, "mean_dwell_s": f64|null}]
//!   },
//!   "echo": null | {"addr": "..", "connections": n, "bursts": n,
//!                   "bytes": n, "cpu_s": f64}          // --echo-listen mode
//! }
//! ```

use anyhow::{Context, Result, bail};
use mheta_model::search::Rng;
use mheta_load::sense::{pin_to_core, process_cpu_s, thread_cpu_s};
use serde::Serialize;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const EXAMPLES: &str = "\
Examples:
  # two CPU hogs on core 1, for 60 s, with a timeline
  mheta load --proc hog*2 --cores 1 --duration 60 --timeline load.json

  # a competitor communicating 30% of each 100 ms cycle, bursts of 4 x 64 KiB,
  # its echo peer on core 1; stop it with Ctrl-C or kill -TERM
  mheta load --proc cycle:comm=0.3,cycle=100ms,msgs=4,bytes=64K --cores 0 --peer-core 1

  # bursty: 0, 1 or 2 hogs active, exponential dwells of mean 2 s, 5 s, 1 s
  mheta load --proc hog*2 --cores 0 --levels 0,1,2 --dwell 2,5,1 --switch random --seed 7

  # scripted: 10 s idle, 20 s with one hog, cycling; wait until it runs
  mheta load --proc hog --cores 0 --levels 0,1 --dwell 10,20 --ready-file /tmp/ready &
  while [ ! -e /tmp/ready ]; do sleep 0.05; done

  # communicate with another host: there run
  mheta load --echo-listen 0.0.0.0:7000
  # and here
  mheta load --proc cycle*2:comm=0.5,cycle=50ms,msgs=1,bytes=1M --peer otherhost:7000

Each process is a thread of this one process, pinned to its core (CFS
schedules threads as tasks exactly like processes); nothing is left behind
when it stops. With kernel.sched_autogroup_enabled=1 CPU is shared per session
first: run it in the job's session to get per-task sharing. SIGINT, SIGTERM
and SIGHUP stop it cleanly (threads joined, timeline written, ready file
removed, exit 0); a second one of the same kind kills it at once. See the
module documentation (runtime/src/bin/mheta/load.rs) for the timeline format.";

/// Generate competing load beside a job (Figueira and Berman's contention generator).
///
/// Each competing process is a thread of this process pinned to one core
/// (CFS schedules threads exactly like processes; nothing is left behind at
/// exit). Stops cleanly on SIGINT, SIGTERM and SIGHUP and after --duration,
/// writing the timeline (JSON) if asked.
#[derive(clap::Args, Debug)]
#[command(after_help = EXAMPLES)]
pub struct LoadArgs {
    /// A competing process (repeatable): `hog` (spins forever) or
    /// `cycle:comm=F,cycle=T,msgs=N,bytes=B`, which alternates computation
    /// and communication: comm = fraction of the cycle spent communicating
    /// (0..1, default 0.5), cycle = cycle length with a unit us/ms/s (default
    /// 100ms), msgs = messages per burst (default 1), bytes = bytes per
    /// message with an optional K/M/G suffix (powers of 1024, default 1K).
    /// `hog*3` and `cycle*2:...` repeat a process.
    #[arg(
        long = "proc",
        value_name = "SPEC",
        required_unless_present = "echo_listen"
    )]
    pub procs: Vec<String>,
    /// Cores to pin the processes to, e.g. `0` or `0,1` or `0-3`: process i
    /// runs on cores[i % len]. Default: no pinning.
    #[arg(long, value_name = "LIST")]
    pub cores: Option<String>,
    /// The core for the local echo peers of the cycle processes (and for the
    /// server threads of --echo-listen). Default: no pinning.
    #[arg(long, value_name = "N")]
    pub peer_core: Option<usize>,
    /// Use an external echo server (another `mheta load --echo-listen ADDR`)
    /// instead of local echo threads.
    #[arg(long, value_name = "HOST:PORT", conflicts_with_all = ["peer_core", "echo_listen"])]
    pub peer: Option<String>,
    /// Only run an echo server for cycle processes elsewhere, on ADDR (e.g.
    /// `0.0.0.0:7000`; port 0 picks one, printed on stderr), until signalled
    /// or --duration.
    #[arg(long, value_name = "ADDR", conflicts_with_all = ["procs", "levels", "cores"])]
    pub echo_listen: Option<String>,
    /// Bursty load: levels, each the number of the --proc processes that are
    /// active (the first L); inactive ones are frozen (no CPU). Without
    /// --levels all processes are active all the time.
    #[arg(
        long,
        value_name = "L1,L2,...",
        value_delimiter = ',',
        requires = "dwell"
    )]
    pub levels: Vec<usize>,
    /// Dwell time of each level in seconds (one per level, or one for all):
    /// the exact dwell (scripted) or the mean of an exponential (random).
    #[arg(
        long,
        value_name = "D1,D2,...",
        value_delimiter = ',',
        requires = "levels"
    )]
    pub dwell: Vec<f64>,
    /// How to switch levels: `scripted` (in order, exact dwells, cycling;
    /// the default) or `random` (next level uniform among the others,
    /// exponential dwells).
    #[arg(long = "switch", value_enum, value_name = "MODE", requires = "levels")]
    pub switch: Option<SwitchMode>,
    /// Seed of the random switching (default: from the clock; the timeline
    /// records it).
    #[arg(long, value_name = "N", requires = "levels")]
    pub seed: Option<u64>,
    /// Index (0-based) into --levels of the first level. Default 0.
    #[arg(long, value_name = "INDEX", requires = "levels")]
    pub start_level: Option<usize>,
    /// Stop after this many seconds (default: run until signalled).
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<f64>,
    /// Write the timeline (JSON, format mheta-load-timeline v1) here at exit.
    #[arg(long, value_name = "FILE.json")]
    pub timeline: Option<PathBuf>,
    /// Create this file (containing the pid) once every thread is pinned and
    /// running; it is removed at exit.
    #[arg(long, value_name = "PATH")]
    pub ready_file: Option<PathBuf>,
    /// No messages on stderr (errors excepted).
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SwitchMode {
    Scripted,
    Random,
}

// ---------------------------------------------------------------- specs

/// One competing process.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Kind {
    Hog,
    Cycle {
        /// Fraction of the cycle spent communicating, 0..=1.
        comm: f64,
        /// Cycle length in seconds.
        cycle_s: f64,
        msgs: u32,
        bytes: u64,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ProcSpec {
    pub kind: Kind,
    /// The spec as given (without the repeat count).
    pub text: String,
}

const MAX_BYTES: u64 = 256 << 20;

/// Parse one `--proc` value (possibly with a repeat count) into processes.
pub(crate) fn parse_proc_spec(spec: &str) -> Result<Vec<ProcSpec>> {
    parse_proc_inner(spec).with_context(|| format!("bad --proc spec {spec:?}"))
}

fn parse_proc_inner(spec: &str) -> Result<Vec<ProcSpec>> {
    let s = spec.trim();
    let (head, params) = match s.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (s, None),
    };
    let (name, count) = match head.split_once('*') {
        Some((n, c)) => {
            let c: usize = c
                .trim()
                .parse()
                .map_err(|_| anyhow::anyhow!("repeat count {c:?} is not a number"))?;
            if c == 0 || c > 4096 {
                bail!("repeat count {c} must be within 1..=4096");
            }
            (n.trim(), c)
        }
        None => (head.trim(), 1),
    };
    let kind = match name {
        "hog" => {
            if params.is_some_and(|p| !p.trim().is_empty()) {
                bail!("`hog` takes no parameters");
            }
            Kind::Hog
        }
        "cycle" => parse_cycle(params.unwrap_or(""))?,
        "" => bail!("empty process kind (expected `hog` or `cycle`)"),
        other => bail!("unknown process kind {other:?} (expected `hog` or `cycle`)"),
    };
    let text = match params {
        Some(p) if !p.trim().is_empty() => format!("{name}:{}", p.trim()),
        _ => name.to_string(),
    };
    Ok(vec![ProcSpec { kind, text }; count])
}

/// A cycle process's `KEY=VALUE,...`: comm (fraction), cycle
/// (duration), msgs and bytes, each at most once, with their defaults.
fn parse_cycle(params: &str) -> Result<Kind> {
    let (mut comm, mut cycle_s, mut msgs, mut bytes) = (None, None, None, None);
    for kv in params.split(',').map(str::trim) {
        if kv.is_empty() {
            continue;
        }
        let Some((k, v)) = kv.split_once('=') else {
            bail!("{kv:?} is not KEY=VALUE");
        };
        let (k, v) = (k.trim(), v.trim());
        let dup = match k {
            "comm" => {
                let c: f64 = v
                    .parse()
                    .map_err(|_| anyhow::anyhow!("comm={v:?} is not a number"))?;
                if !(0.0..=1.0).contains(&c) {
                    bail!("comm={v} must be within 0..1");
                }
                comm.replace(c).is_some()
            }
            "cycle" => {
                let d = parse_duration(v).with_context(|| format!("cycle={v:?}"))?;
                if !(d > 0.0 && d <= 3600.0) {
                    bail!("cycle={v} must be more than 0 and at most 1 hour");
                }
                cycle_s.replace(d).is_some()
            }
            "msgs" => {
                let n: u32 = v
                    .parse()
                    .map_err(|_| anyhow::anyhow!("msgs={v:?} is not a whole number"))?;
                if n == 0 || n > 1_000_000 {
                    bail!("msgs={v} must be within 1..=1000000");
                }
                msgs.replace(n).is_some()
            }
            "bytes" => {
                let b = parse_bytes(v).with_context(|| format!("bytes={v:?}"))?;
                if b == 0 || b > MAX_BYTES {
                    bail!("bytes={v} must be within 1 and 256M");
                }
                bytes.replace(b).is_some()
            }
            _ => bail!("unknown key {k:?} (keys: comm, cycle, msgs, bytes)"),
        };
        if dup {
            bail!("key {k:?} given twice");
        }
    }
    Ok(Kind::Cycle {
        comm: comm.unwrap_or(0.5),
        cycle_s: cycle_s.unwrap_or(0.1),
        msgs: msgs.unwrap_or(1),
        bytes: bytes.unwrap_or(1024),
    })
}

/// `100ms`, `0.5s`, `250us` -> seconds. A unit is required.
pub(crate) fn parse_duration(v: &str) -> Result<f64> {
    let v = v.trim();
    let (num, mul) = if let Some(n) = v.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = v.strip_suffix("us").or_else(|| v.strip_suffix("µs")) {
        (n, 1e-6)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1.0)
    } else {
        bail!("give a unit: us, ms or s");
    };
    let x: f64 = num
        .trim()
        .parse()
        .map_err(|_| anyhow::anyhow!("{num:?} is not a number"))?;
    if !x.is_finite() || x < 0.0 {
        bail!("must be a non-negative number");
    }
    Ok(x * mul)
}

/// `64K`, `1M`, `512`, `2KiB` -> bytes (K, M, G are powers of 1024).
pub(crate) fn parse_bytes(v: &str) -> Result<u64> {
    let v = v.trim();
    let t = v
        .strip_suffix("iB")
        .or_else(|| v.strip_suffix('B'))
        .unwrap_or(v);
    let (num, mul) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('m' | 'M') => (&t[..t.len() - 1], 1 << 20),
        Some('g' | 'G') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let n: u64 = num
        .trim()
        .parse()
        .map_err(|_| anyhow::anyhow!("{num:?} is not a whole number"))?;
    n.checked_mul(mul)
        .ok_or_else(|| anyhow::anyhow!("too large"))
}

/// `0`, `0,1`, `0-3,6` -> cores.
pub(crate) fn parse_core_list(v: &str) -> Result<Vec<usize>> {
    let mut out = Vec::new();
    for part in v.split(',').map(str::trim) {
        if part.is_empty() {
            continue;
        }
        let bad = || anyhow::anyhow!("bad --cores {v:?}: {part:?} is not a core or a range A-B");
        if let Some((a, b)) = part.split_once('-') {
            let a: usize = a.trim().parse().map_err(|_| bad())?;
            let b: usize = b.trim().parse().map_err(|_| bad())?;
            if a > b {
                return Err(bad());
            }
            out.extend(a..=b);
        } else {
            out.push(part.parse().map_err(|_| bad())?);
        }
    }
    if out.is_empty() {
        bail!("bad --cores {v:?}: no core given");
    }
    Ok(out)
}

// ---------------------------------------------------------------- levels

/// The sequence of (level index, dwell seconds) of a bursty run.
pub(crate) struct Schedule {
    dwell: Vec<f64>,
    mode: SwitchMode,
    rng: Rng,
    cur: usize,
    started: bool,
}

impl Schedule {
    /// `dwell` has one entry per level.
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

// ---------------------------------------------------------------- OS glue

/// The signal that asked us to stop (0: none yet).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    SIGNAL.store(sig, Relaxed);
}

fn install_signal_handlers() -> Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: a zeroed sigaction is valid; the handler only stores an
        // atomic. SA_RESETHAND: a second signal of the same kind kills the
        // process with the default action, should the clean stop hang.
        let rc = unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            sa.sa_flags = libc::SA_RESETHAND;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut())
        };
        if rc != 0 {
            bail!("sigaction({sig}): {}", io::Error::last_os_error());
        }
    }
    Ok(())
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "signal",
    }
}

fn check_cores(cores: &[usize], allowed: &[usize], what: &str) -> Result<()> {
    for &c in cores {
        if !allowed.contains(&c) {
            bail!(
                "{what}: core {c} is not available; this process may run on cores {}",
                fmt_cores(allowed)
            );
        }
    }
    Ok(())
}

fn fmt_cores(c: &[usize]) -> String {
    c.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Write `bytes` to `path` atomically: a temporary file in the same
/// directory, then rename.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .with_context(|| format!("{} has no file name", path.display()))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = dir.join(tmp_name);
    let r = (|| -> io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = r {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("cannot write {}", path.display()));
    }
    Ok(())
}

fn check_dir_of(path: &Path, what: &str) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        bail!(
            "{what} {}: directory {} does not exist",
            path.display(),
            dir.display()
        );
    }
    Ok(())
}

/// Removes the ready file when dropped.
struct ReadyFile(Option<PathBuf>);

impl ReadyFile {
    fn create(&self) -> Result<()> {
        if let Some(p) = &self.0 {
            write_atomic(p, format!("{}\n", std::process::id()).as_bytes())?;
        }
        Ok(())
    }
}

impl Drop for ReadyFile {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

// ---------------------------------------------------------------- control

/// State shared by the main thread and the workers.
struct Ctl {
    stop: AtomicBool,
    active: Vec<AtomicBool>,
    lock: Mutex<()>,
    cv: Condvar,
    ready: AtomicUsize,
    error: Mutex<Option<String>>,
}

impl Ctl {
    fn new(n: usize) -> Self {
        Ctl {
            stop: AtomicBool::new(false),
            active: (0..n).map(|_| AtomicBool::new(false)).collect(),
            lock: Mutex::new(()),
            cv: Condvar::new(),
            ready: AtomicUsize::new(0),
            error: Mutex::new(None),
        }
    }
    fn stopping(&self) -> bool {
        self.stop.load(Relaxed) || SIGNAL.load(Relaxed) != 0
    }
    /// Make the first `level` processes active, the others inactive.
    fn set_level(&self, level: usize) {
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        for (i, a) in self.active.iter().enumerate() {
            a.store(i < level, Relaxed);
        }
        self.cv.notify_all();
    }
    fn request_stop(&self) {
        self.stop.store(true, Relaxed);
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.cv.notify_all();
    }
    fn fail(&self, msg: String) {
        self.error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(msg);
        self.request_stop();
    }
    fn error(&self) -> Option<String> {
        self.error.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// A worker's view of its active flag; accounts its active wall time.
struct Gate<'a> {
    ctl: &'a Ctl,
    i: usize,
    active_s: f64,
    since: Option<Instant>,
}

impl<'a> Gate<'a> {
    fn new(ctl: &'a Ctl, i: usize) -> Self {
        Gate {
            ctl,
            i,
            active_s: 0.0,
            since: None,
        }
    }
    /// `None`: stop. `Some(paused)`: go on; `paused` is the wall time spent
    /// frozen (inactive) in this call.
    fn pass(&mut self) -> Option<Duration> {
        if self.ctl.stopping() {
            return None;
        }
        if self.ctl.active[self.i].load(Relaxed) {
            if self.since.is_none() {
                self.since = Some(Instant::now());
            }
            return Some(Duration::ZERO);
        }
        let t = Instant::now();
        if let Some(s) = self.since.take() {
            self.active_s += (t - s).as_secs_f64();
        }
        let mut g = self.ctl.lock.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if self.ctl.stopping() {
                return None;
            }
            if self.ctl.active[self.i].load(Relaxed) {
                break;
            }
            g = self
                .ctl
                .cv
                .wait_timeout(g, Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        drop(g);
        let t2 = Instant::now();
        self.since = Some(t2);
        Some(t2 - t)
    }
    fn finish(&mut self) {
        if let Some(s) = self.since.take() {
            self.active_s += s.elapsed().as_secs_f64();
        }
    }
}

/// A chunk of real arithmetic (about 10 us).
#[inline(never)]
fn spin_chunk(state: &mut [f64; 4]) {
    let mut a = *state;
    for _ in 0..4096 {
        for x in a.iter_mut() {
            *x = *x * 0.999_999_9 + 1e-3;
        }
        a = std::hint::black_box(a);
    }
    *state = a;
}

// ---------------------------------------------------------------- wire

const IO_TIMEOUT: Duration = Duration::from_millis(50);
const HDR_MAGIC: &[u8; 4] = b"MHL1";
const ACK_MAGIC: &[u8; 4] = b"MHLA";

enum Xfer {
    Done,
    Eof,
    Stopped,
}

fn is_retry(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Read exactly `buf.len()` bytes, checking `stop` at least every
/// IO_TIMEOUT. `Eof` only when the peer closed before the first byte.
fn read_full(s: &mut TcpStream, buf: &mut [u8], stop: &dyn Fn() -> bool) -> io::Result<Xfer> {
    let mut got = 0;
    while got < buf.len() {
        if stop() {
            return Ok(Xfer::Stopped);
        }
        match s.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(Xfer::Eof),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if is_retry(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Xfer::Done)
}

/// Write all of `buf` (send with MSG_NOSIGNAL: no SIGPIPE), checking `stop`.
fn write_full(s: &mut TcpStream, buf: &[u8], stop: &dyn Fn() -> bool) -> io::Result<Xfer> {
    let mut put = 0;
    while put < buf.len() {
        if stop() {
            return Ok(Xfer::Stopped);
        }
        match s.write(&buf[put..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => put += n,
            Err(e) if is_retry(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Xfer::Done)
}

fn setup_stream(s: &TcpStream) -> io::Result<()> {
    s.set_nonblocking(false)?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(IO_TIMEOUT))?;
    s.set_write_timeout(Some(IO_TIMEOUT))
}

/// One burst: header, `msgs` messages of `buf.len()` bytes, then the ack.
fn burst(s: &mut TcpStream, msgs: u32, buf: &[u8], stop: &dyn Fn() -> bool) -> io::Result<Xfer> {
    let mut hdr = [0u8; 12];
    hdr[..4].copy_from_slice(HDR_MAGIC);
    hdr[4..8].copy_from_slice(&msgs.to_le_bytes());
    hdr[8..].copy_from_slice(&(buf.len() as u32).to_le_bytes());
    if let Xfer::Stopped = write_full(s, &hdr, stop)? {
        return Ok(Xfer::Stopped);
    }
    for _ in 0..msgs {
        if let Xfer::Stopped = write_full(s, buf, stop)? {
            return Ok(Xfer::Stopped);
        }
    }
    let mut ack = [0u8; 8];
    match read_full(s, &mut ack, stop)? {
        Xfer::Done if &ack[..4] == ACK_MAGIC => Ok(Xfer::Done),
        Xfer::Done => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "bad ack from the echo peer",
        )),
        Xfer::Eof => Err(io::Error::new(
            io::ErrorKind::ConnectionAborted,
            "the echo peer closed the connection",
        )),
        Xfer::Stopped => Ok(Xfer::Stopped),
    }
}

#[derive(Default, Clone, Copy, Debug)]
struct EchoStats {
    bursts: u64,
    bytes: u64,
    cpu_s: f64,
}

/// Serve one connection of the echo protocol until the client closes it
/// (also in the middle of a burst, which is not counted) or stop. The
/// statistics are returned also after an error.
fn serve_echo(mut s: TcpStream, stop: &dyn Fn() -> bool) -> (EchoStats, io::Result<()>) {
    let cpu0 = thread_cpu_s();
    let mut st = EchoStats::default();
    if let Err(e) = setup_stream(&s) {
        return (st, Err(e));
    }
    let mut buf = vec![0u8; 256 << 10];
    let r = (|| -> io::Result<()> {
        loop {
            let mut hdr = [0u8; 12];
            match read_full(&mut s, &mut hdr, stop)? {
                Xfer::Done => {}
                Xfer::Eof | Xfer::Stopped => return Ok(()),
            }
            if &hdr[..4] != HDR_MAGIC {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "not an mheta load client (bad header)",
                ));
            }
            let msgs = u32::from_le_bytes([hdr[4], hdr[5], hdr[6], hdr[7]]) as u64;
            let bytes = u32::from_le_bytes([hdr[8], hdr[9], hdr[10], hdr[11]]) as u64;
            let mut left = msgs * bytes;
            while left > 0 {
                let n = left.min(buf.len() as u64) as usize;
                match read_full(&mut s, &mut buf[..n], stop)? {
                    Xfer::Done => left -= n as u64,
                    Xfer::Stopped | Xfer::Eof => return Ok(()),
                }
            }
            st.bursts += 1;
            st.bytes += msgs * bytes;
            let mut ack = [0u8; 8];
            ack[..4].copy_from_slice(ACK_MAGIC);
            ack[4..].copy_from_slice(&(st.bursts as u32).to_le_bytes());
            if let Xfer::Stopped = write_full(&mut s, &ack, stop)? {
                return Ok(());
            }
        }
    })();
    st.cpu_s = thread_cpu_s() - cpu0;
    match r {
        // The client may close first when we stop.
        Err(_) if stop() => (st, Ok(())),
        r => (st, r),
    }
}

// ---------------------------------------------------------------- workers

#[derive(Default, Clone, Debug)]
struct ProcStats {
    active_s: f64,
    cpu_s: f64,
    cycles: u64,
    bursts: u64,
    bytes_sent: u64,
    compute_cpu_s: f64,
    compute_wall_s: f64,
    comm_wall_s: f64,
    comm_cpu_s: f64,
}

fn worker(
    i: usize,
    spec: &ProcSpec,
    core: Option<usize>,
    peer: Option<SocketAddr>,
    ctl: &Ctl,
) -> Result<ProcStats> {
    if let Some(c) = core {
        pin_to_core(c).with_context(|| format!("process {i}: cannot pin to core {c}"))?;
    }
    let mut conn = match (&spec.kind, peer) {
        (Kind::Cycle { comm, .. }, Some(addr)) if *comm > 0.0 => {
            let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
                .with_context(|| format!("process {i}: cannot connect to the echo peer {addr}"))?;
            setup_stream(&s)?;
            Some(s)
        }
        _ => None,
    };
    ctl.ready.fetch_add(1, Relaxed);
    let cpu0 = thread_cpu_s();
    let mut st = ProcStats::default();
    let mut gate = Gate::new(ctl, i);
    let mut state = [1.0f64; 4];
    match spec.kind {
        Kind::Hog => {
            while gate.pass().is_some() {
                spin_chunk(&mut state);
            }
        }
        Kind::Cycle {
            comm,
            cycle_s,
            msgs,
            bytes,
        } => {
            let buf = vec![0x5au8; bytes as usize];
            let compute_cpu = (1.0 - comm) * cycle_s;
            let comm_wall = comm * cycle_s;
            while gate.pass().is_some() {
                if compute_cpu > 0.0 && compute(&mut gate, &mut state, compute_cpu, &mut st) {
                    break;
                }
                if let Some(s) = conn.as_mut() {
                    match communicate(s, &mut gate, msgs, &buf, comm_wall, &mut st) {
                        Ok(false) => {}
                        Ok(true) => break,
                        Err(e) => {
                            gate.finish();
                            return Err(e).context(format!("process {i}: communication failed"));
                        }
                    }
                }
                st.cycles += 1;
            }
        }
    }
    gate.finish();
    st.active_s = gate.active_s;
    st.cpu_s = thread_cpu_s() - cpu0;
    Ok(st)
}

/// A cycle's computation: spin until `cpu_s` of CPU time (pauses of the
/// gate not counted as wall time); whether the load stopped meanwhile.
fn compute(gate: &mut Gate, state: &mut [f64; 4], cpu_s: f64, st: &mut ProcStats) -> bool {
    let (c0, w0) = (thread_cpu_s(), Instant::now());
    let mut paused = Duration::ZERO;
    let mut stopped = false;
    loop {
        spin_chunk(state);
        if thread_cpu_s() - c0 >= cpu_s {
            break;
        }
        match gate.pass() {
            Some(p) => paused += p,
            None => {
                stopped = true;
                break;
            }
        }
    }
    st.compute_cpu_s += thread_cpu_s() - c0;
    st.compute_wall_s += w0.elapsed().saturating_sub(paused).as_secs_f64();
    stopped
}

/// A cycle's communication: bursts of `msgs` messages of `buf` to the
/// echo peer for `wall_s` (pauses not counted); whether the load stopped
/// meanwhile (the peer may close first when it does), or the failure.
fn communicate(
    s: &mut TcpStream,
    gate: &mut Gate,
    msgs: u32,
    buf: &[u8],
    wall_s: f64,
    st: &mut ProcStats,
) -> io::Result<bool> {
    let ctl = gate.ctl;
    let stop = || ctl.stopping();
    let (c0, w0) = (thread_cpu_s(), Instant::now());
    let mut paused = Duration::ZERO;
    let mut result = Ok(false);
    loop {
        match burst(s, msgs, buf, &stop) {
            Ok(Xfer::Done) => {
                st.bursts += 1;
                st.bytes_sent += msgs as u64 * buf.len() as u64;
            }
            Ok(_) => {
                result = Ok(true);
                break;
            }
            Err(_) if ctl.stopping() => {
                result = Ok(true);
                break;
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
        if w0.elapsed().saturating_sub(paused).as_secs_f64() >= wall_s {
            break;
        }
        match gate.pass() {
            Some(p) => paused += p,
            None => {
                result = Ok(true);
                break;
            }
        }
    }
    st.comm_cpu_s += thread_cpu_s() - c0;
    st.comm_wall_s += w0.elapsed().saturating_sub(paused).as_secs_f64();
    result
}

/// The local echo peer of cycle process `i`: accept one connection, serve it.
fn echo_peer(listener: TcpListener, core: Option<usize>, ctl: &Ctl) -> Result<EchoStats> {
    if let Some(c) = core {
        pin_to_core(c).with_context(|| format!("echo peer: cannot pin to core {c}"))?;
    }
    ctl.ready.fetch_add(1, Relaxed);
    listener.set_nonblocking(true)?;
    let s = loop {
        if ctl.stopping() {
            return Ok(EchoStats::default());
        }
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(e) if is_retry(&e) => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => return Err(e).context("echo peer: accept"),
        }
    };
    drop(listener);
    let (st, r) = serve_echo(s, &|| ctl.stopping());
    r.context("echo peer")?;
    Ok(st)
}

// ---------------------------------------------------------------- output

#[derive(Serialize)]
struct ProcOut {
    index: usize,
    kind: &'static str,
    spec: String,
    core: Option<usize>,
    comm: Option<f64>,
    cycle_s: Option<f64>,
    msgs: Option<u32>,
    bytes: Option<u64>,
    active_s: f64,
    cpu_s: f64,
    cycles: u64,
    bursts: u64,
    bytes_sent: u64,
    compute_cpu_s: f64,
    compute_wall_s: f64,
    comm_wall_s: f64,
    comm_cpu_s: f64,
    comm_fraction: Option<f64>,
    comm_cpu_share: Option<f64>,
    peer_cpu_s: Option<f64>,
}

#[derive(Serialize)]
struct SwitchOut {
    t_s: f64,
    index: usize,
    level: usize,
}

#[derive(Serialize)]
struct LevelOut {
    index: usize,
    level: usize,
    dwell_s: f64,
    visits: u64,
    time_s: f64,
    share: f64,
    mean_dwell_s: Option<f64>,
}

#[derive(Serialize)]
struct BurstyOut {
    switch: SwitchMode,
    seed: Option<u64>,
    levels: Vec<usize>,
    dwell_s: Vec<f64>,
    start_level_index: usize,
    switches: Vec<SwitchOut>,
    per_level: Vec<LevelOut>,
}

#[derive(Serialize)]
struct EchoOut {
    addr: String,
    connections: u64,
    bursts: u64,
    bytes: u64,
    cpu_s: f64,
}

#[derive(Serialize)]
struct Timeline {
    format: &'static str,
    version: u32,
    mode: &'static str,
    argv: Vec<String>,
    pid: u32,
    start_unix_s: f64,
    end_unix_s: f64,
    elapsed_s: f64,
    stopped_by: String,
    error: Option<String>,
    peer: Option<String>,
    peer_core: Option<usize>,
    process_cpu_s: f64,
    procs: Vec<ProcOut>,
    bursty: Option<BurstyOut>,
    echo: Option<EchoOut>,
}

fn unix_s(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn per_level(levels: &[usize], dwell: &[f64], switches: &[SwitchOut], end_s: f64) -> Vec<LevelOut> {
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

fn print_summary(tl: &Timeline) {
    eprintln!(
        "mheta load: stopped by {} after {:.2} s; process CPU {:.2} s",
        tl.stopped_by, tl.elapsed_s, tl.process_cpu_s
    );
    if !tl.procs.is_empty() {
        eprintln!(
            "  {:>3} {:<5} {:>4} {:>8} {:>8} {:>7} {:>8} {:>9} {:>9} {:>9} {:>9}",
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
            "peer_cpu"
        );
    }
    let opt = |x: Option<f64>, p: usize| x.map_or("-".to_string(), |v| format!("{v:.p$}"));
    for p in &tl.procs {
        eprintln!(
            "  {:>3} {:<5} {:>4} {:>8.2} {:>8.2} {:>7} {:>8} {:>9} {:>9} {:>9} {:>9}",
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
        );
    }
    if let Some(b) = &tl.bursty {
        eprintln!(
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
        eprintln!(
            "  echo server {}: {} connections, {} bursts, {} bytes, CPU {:.3} s",
            e.addr, e.connections, e.bursts, e.bytes, e.cpu_s
        );
    }
}

// ---------------------------------------------------------------- main

pub fn main(a: LoadArgs) -> Result<i32> {
    let argv: Vec<String> = std::env::args().collect();
    // Validate everything before starting anything.
    if let Some(d) = a.duration
        && !(d.is_finite() && d >= 0.0)
    {
        bail!("--duration {d}: must be a non-negative number of seconds");
    }
    if let Some(t) = &a.timeline {
        check_dir_of(t, "--timeline")?;
    }
    if let Some(r) = &a.ready_file {
        check_dir_of(r, "--ready-file")?;
    }
    let allowed = mheta_load::sense::allowed_cores();
    if allowed.is_empty() {
        bail!("sched_getaffinity: cannot read the cores this process may run on");
    }
    if let Some(c) = a.peer_core {
        check_cores(&[c], &allowed, "--peer-core")?;
    }
    if let Some(addr) = &a.echo_listen {
        install_signal_handlers()?;
        return echo_server(&a, addr, argv);
    }
    let mut procs = Vec::new();
    for s in &a.procs {
        procs.extend(parse_proc_spec(s)?);
    }
    let cores = match &a.cores {
        Some(c) => {
            let c = parse_core_list(c)?;
            check_cores(&c, &allowed, "--cores")?;
            Some(c)
        }
        None => None,
    };
    let peer = match &a.peer {
        Some(p) => Some(
            p.to_socket_addrs()
                .with_context(|| format!("--peer {p}: cannot resolve"))?
                .next()
                .with_context(|| format!("--peer {p}: no address"))?,
        ),
        None => None,
    };
    let bursty = bursty_cfg(&a, procs.len())?;
    install_signal_handlers()?;
    run_load(&a, argv, procs, cores, peer, bursty)
}

/// The bursty load of `--levels` over `n` processes: levels, dwells,
/// switching mode, seed (random switching) and the first level's index;
/// None without `--levels`.
fn bursty_cfg(a: &LoadArgs, n: usize) -> Result<Option<BurstyCfg>> {
    if a.levels.is_empty() {
        return Ok(None);
    }
    if let Some(l) = a.levels.iter().find(|&&l| l > n) {
        bail!("--levels: level {l} is more than the {n} --proc processes");
    }
    let dwell = match a.dwell.len() {
        1 => vec![a.dwell[0]; a.levels.len()],
        k if k == a.levels.len() => a.dwell.clone(),
        k => bail!(
            "--dwell: {k} dwell times for {} levels (give one per level, or one for all)",
            a.levels.len()
        ),
    };
    if let Some(d) = dwell.iter().find(|d| !(d.is_finite() && **d > 0.0)) {
        bail!("--dwell {d}: dwell times must be positive seconds");
    }
    let start = a.start_level.unwrap_or(0);
    if start >= a.levels.len() {
        bail!(
            "--start-level {start}: there are only {} levels (indices from 0)",
            a.levels.len()
        );
    }
    let mode = a.switch.unwrap_or(SwitchMode::Scripted);
    let seed = match mode {
        SwitchMode::Random => Some(a.seed.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
                ^ (std::process::id() as u64) << 32
        })),
        SwitchMode::Scripted => None,
    };
    Ok(Some((a.levels.clone(), dwell, mode, seed, start)))
}

type BurstyCfg = (Vec<usize>, Vec<f64>, SwitchMode, Option<u64>, usize);

/// Spawn thread `name` running `f`; its error stops the whole load.
fn spawn_guarded<T: Send + 'static>(
    name: String,
    ctl: &Arc<Ctl>,
    f: impl FnOnce(&Ctl) -> Result<T> + Send + 'static,
) -> Result<JoinHandle<Result<T>>, String> {
    let c = ctl.clone();
    std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            let r = f(&c);
            if let Err(e) = &r {
                c.fail(format!("{e:#}"));
            }
            r
        })
        .map_err(|e| format!("cannot start a thread: {e}"))
}

/// The threads of a load: the echo peers (their listeners give the
/// workers' addresses) and the workers; how many must report ready; the
/// first failure to start one.
struct Threads {
    echo: Vec<Option<JoinHandle<Result<EchoStats>>>>,
    workers: Vec<JoinHandle<Result<ProcStats>>>,
    expected: usize,
    start_err: Option<String>,
}

impl Threads {
    /// Wait for every thread: each worker's result, and each echo peer's
    /// CPU seconds (None without a peer, or if it failed).
    fn join(self) -> (Vec<Result<ProcStats>>, Vec<Option<f64>>) {
        let stats = (self.workers.into_iter())
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a load thread panicked")))
            })
            .collect();
        let peer_cpu = (self.echo.into_iter())
            .map(|h| {
                let r = h?.join().ok()?;
                r.ok().map(|e| e.cpu_s)
            })
            .collect();
        (stats, peer_cpu)
    }
}

/// Start an echo peer for every cycle process that communicates (unless
/// an external peer answers), then one worker per process.
fn start_threads(
    a: &LoadArgs,
    procs: &[ProcSpec],
    cores: &Option<Vec<usize>>,
    ext_peer: Option<SocketAddr>,
    ctl: &Arc<Ctl>,
) -> Result<Threads> {
    let mut t = Threads {
        echo: Vec::new(),
        workers: Vec::new(),
        expected: procs.len(),
        start_err: None,
    };
    let mut peer_addrs = Vec::new();
    for (i, p) in procs.iter().enumerate() {
        let needs_peer = matches!(p.kind, Kind::Cycle { comm, .. } if comm > 0.0);
        if !needs_peer || ext_peer.is_some() {
            t.echo.push(None);
            peer_addrs.push(ext_peer);
            continue;
        }
        let l = TcpListener::bind(("127.0.0.1", 0)).context("cannot open a loopback socket")?;
        peer_addrs.push(Some(l.local_addr()?));
        let pc = a.peer_core;
        match spawn_guarded(format!("echo{i}"), ctl, move |c| echo_peer(l, pc, c)) {
            Ok(h) => {
                t.echo.push(Some(h));
                t.expected += 1;
            }
            Err(e) => {
                t.start_err = Some(e);
                t.echo.push(None);
                return Ok(t);
            }
        }
    }
    for (i, p) in procs.iter().enumerate() {
        let (p2, core, addr) = (p.clone(), core_of(cores, i), peer_addrs[i]);
        match spawn_guarded(format!("load{i}"), ctl, move |c| {
            worker(i, &p2, core, addr, c)
        }) {
            Ok(h) => t.workers.push(h),
            Err(e) => {
                t.start_err = Some(e);
                break;
            }
        }
    }
    Ok(t)
}

/// The core process `i` is pinned to (round robin over `--cores`).
fn core_of(cores: &Option<Vec<usize>>, i: usize) -> Option<usize> {
    cores.as_ref().map(|c| c[i % c.len()])
}

/// The level switches of a bursty load: its schedule, when the next
/// switch is due, and the switches so far.
struct Switcher<'a> {
    levels: &'a [usize],
    sched: Schedule,
    next: Instant,
    done: Vec<SwitchOut>,
}

impl Switcher<'_> {
    /// Switch to the schedule's next level if it is due at `now` (`t0`:
    /// the start); whether it switched.
    fn switch(&mut self, ctl: &Ctl, t0: Instant, now: Instant) -> bool {
        if now < self.next {
            return false;
        }
        let Some((idx, d)) = self.sched.next() else {
            return false;
        };
        ctl.set_level(self.levels[idx]);
        self.done.push(SwitchOut {
            t_s: (now - t0).as_secs_f64(),
            index: idx,
            level: self.levels[idx],
        });
        self.next += Duration::from_secs_f64(d);
        true
    }
}

/// Run the load until a signal, `--duration`, or an error; the timeline.
fn run_load(
    a: &LoadArgs,
    argv: Vec<String>,
    procs: Vec<ProcSpec>,
    cores: Option<Vec<usize>>,
    ext_peer: Option<SocketAddr>,
    bursty: Option<BurstyCfg>,
) -> Result<i32> {
    let n = procs.len();
    let ctl = Arc::new(Ctl::new(n));
    let ready = ReadyFile(a.ready_file.clone());
    let threads = start_threads(a, &procs, &cores, ext_peer, &ctl)?;
    if let Some(e) = &threads.start_err {
        ctl.fail(e.clone());
    }
    // Wait until every thread is pinned and running.
    while ctl.ready.load(Relaxed) < threads.expected && !ctl.stopping() {
        std::thread::sleep(Duration::from_millis(1));
    }
    let t0 = Instant::now();
    let start_wall = SystemTime::now();
    let mut switcher = None;
    if !ctl.stopping() {
        switcher = begin(a, &ctl, bursty.as_ref(), &ready, t0);
    }
    let deadline = a.duration.map(|d| t0 + Duration::from_secs_f64(d));
    let mut stopped_by = control_loop(&ctl, t0, deadline, switcher.as_mut());
    let switches = switcher.map(|s| s.done).unwrap_or_default();
    let elapsed = t0.elapsed().as_secs_f64();
    let end_wall = SystemTime::now();
    ctl.request_stop();
    let (stats, peer_cpu) = threads.join();
    let error = ctl.error();
    if error.is_some() {
        stopped_by = "error".into();
    }
    let procs_out: Vec<ProcOut> = procs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let st = stats.get(i).and_then(|r| r.as_ref().ok()).cloned();
            let peer = peer_cpu.get(i).copied().flatten();
            proc_out(i, p, st.unwrap_or_default(), core_of(&cores, i), peer)
        })
        .collect();
    let bursty_out = bursty.map(|(levels, dwell, mode, seed, start)| BurstyOut {
        per_level: per_level(&levels, &dwell, &switches, elapsed),
        switch: mode,
        seed,
        levels,
        dwell_s: dwell,
        start_level_index: start,
        switches,
    });
    let tl = Timeline {
        format: "mheta-load-timeline",
        version: 1,
        mode: "load",
        argv,
        pid: std::process::id(),
        start_unix_s: unix_s(start_wall),
        end_unix_s: unix_s(end_wall),
        elapsed_s: elapsed,
        stopped_by,
        error: error.clone(),
        peer: Some(a.peer.clone().unwrap_or_else(|| "loopback".into())),
        peer_core: a.peer_core,
        process_cpu_s: process_cpu_s(),
        procs: procs_out,
        bursty: bursty_out,
        echo: None,
    };
    finish(a, &tl, ready, error)
}

/// Every thread runs: set the first level (of the bursty schedule, else
/// all processes), create the ready file, say so; the switcher.
fn begin<'a>(
    a: &LoadArgs,
    ctl: &Ctl,
    bursty: Option<&'a BurstyCfg>,
    ready: &ReadyFile,
    t0: Instant,
) -> Option<Switcher<'a>> {
    let switcher = match bursty {
        Some((levels, dwell, mode, seed, start)) => {
            let sched = Schedule::new(dwell.clone(), *mode, seed.unwrap_or(0), *start);
            let mut s = Switcher {
                levels,
                sched,
                next: t0,
                done: Vec::new(),
            };
            s.switch(ctl, t0, t0);
            Some(s)
        }
        None => {
            ctl.set_level(ctl.active.len());
            None
        }
    };
    if let Err(e) = ready.create() {
        ctl.fail(format!("{e:#}"));
    } else if !a.quiet {
        eprintln!(
            "mheta load: {} process(es) running as threads of pid {}; stop with Ctrl-C or kill -TERM {}",
            ctl.active.len(),
            std::process::id(),
            std::process::id()
        );
    }
    switcher
}

/// The control loop: level switches, the deadline, signals, errors; what
/// stopped the load.
fn control_loop(
    ctl: &Ctl,
    t0: Instant,
    deadline: Option<Instant>,
    mut switcher: Option<&mut Switcher>,
) -> String {
    loop {
        let sig = SIGNAL.load(Relaxed);
        if sig != 0 {
            return signal_name(sig).to_string();
        }
        if ctl.stopping() {
            return "error".to_string();
        }
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            return "duration".to_string();
        }
        if let Some(s) = switcher.as_deref_mut()
            && s.switch(ctl, t0, now)
        {
            continue;
        }
        let mut wait = Duration::from_millis(10);
        if let Some(d) = deadline {
            wait = wait.min(d.saturating_duration_since(now));
        }
        if let Some(s) = switcher.as_deref() {
            wait = wait.min(s.next.saturating_duration_since(now));
        }
        std::thread::sleep(wait);
    }
}

/// Process `i`'s part of the timeline: its spec and what it did.
fn proc_out(
    i: usize,
    p: &ProcSpec,
    st: ProcStats,
    core: Option<usize>,
    peer_cpu_s: Option<f64>,
) -> ProcOut {
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
    }
}

/// Write the timeline, remove the ready file, print the summary.
fn finish(a: &LoadArgs, tl: &Timeline, ready: ReadyFile, error: Option<String>) -> Result<i32> {
    let written = match &a.timeline {
        Some(p) => serde_json::to_vec_pretty(tl)
            .context("cannot encode the timeline")
            .and_then(|j| write_atomic(p, &j)),
        None => Ok(()),
    };
    drop(ready);
    if !a.quiet {
        print_summary(tl);
    }
    written?;
    if let Some(e) = error {
        bail!("{e}");
    }
    Ok(0)
}

/// `--echo-listen ADDR`: serve echo connections until signalled.
fn echo_server(a: &LoadArgs, addr: &str, argv: Vec<String>) -> Result<i32> {
    let l =
        TcpListener::bind(addr).with_context(|| format!("--echo-listen {addr}: cannot bind"))?;
    let local = l.local_addr()?;
    l.set_nonblocking(true)?;
    let ctl = Arc::new(Ctl::new(0));
    let ready = ReadyFile(a.ready_file.clone());
    let t0 = Instant::now();
    let start_wall = SystemTime::now();
    let deadline = a.duration.map(|d| t0 + Duration::from_secs_f64(d));
    ready.create()?;
    if !a.quiet {
        eprintln!(
            "mheta load: echo server listening on {local} (pid {}); stop with Ctrl-C or kill -TERM {}",
            std::process::id(),
            std::process::id()
        );
    }
    let mut conns: Vec<JoinHandle<io::Result<EchoStats>>> = Vec::new();
    let stopped_by = accept_echo(a, &l, &ctl, deadline, &mut conns)?;
    let elapsed = t0.elapsed().as_secs_f64();
    let end_wall = SystemTime::now();
    ctl.request_stop();
    drop(l);
    let echo = join_echo(local.to_string(), conns);
    let tl = Timeline {
        format: "mheta-load-timeline",
        version: 1,
        mode: "echo-server",
        argv,
        pid: std::process::id(),
        start_unix_s: unix_s(start_wall),
        end_unix_s: unix_s(end_wall),
        elapsed_s: elapsed,
        stopped_by,
        error: None,
        peer: None,
        peer_core: a.peer_core,
        process_cpu_s: process_cpu_s(),
        procs: Vec::new(),
        bursty: None,
        echo: Some(echo),
    };
    finish(a, &tl, ready, None)
}

/// Accept echo connections on `l`, each served by its own thread in
/// `conns`, until a signal or the `deadline`; returns what stopped it. On
/// an accept error the connections are stopped and joined first.
fn accept_echo(
    a: &LoadArgs,
    l: &TcpListener,
    ctl: &Arc<Ctl>,
    deadline: Option<Instant>,
    conns: &mut Vec<JoinHandle<io::Result<EchoStats>>>,
) -> Result<String> {
    loop {
        let sig = SIGNAL.load(Relaxed);
        if sig != 0 {
            return Ok(signal_name(sig).to_string());
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok("duration".to_string());
        }
        match l.accept() {
            Ok((s, from)) => match spawn_echo(s, from, ctl.clone(), a.peer_core, a.quiet) {
                Ok(h) => conns.push(h),
                Err(e) => eprintln!("mheta load: cannot start a thread for {from}: {e}"),
            },
            Err(e) if is_retry(&e) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => {
                ctl.request_stop();
                for h in conns.drain(..) {
                    let _ = h.join();
                }
                return Err(e).context("--echo-listen: accept");
            }
        }
    }
}

/// A thread (pinned to `peer_core` if given) that serves echo connection
/// `s` from `from` until `ctl` stops; says on stderr how a connection
/// failed unless `quiet`.
fn spawn_echo(
    s: TcpStream,
    from: SocketAddr,
    c: Arc<Ctl>,
    peer_core: Option<usize>,
    quiet: bool,
) -> io::Result<JoinHandle<io::Result<EchoStats>>> {
    std::thread::Builder::new()
        .name("echo".into())
        .spawn(move || {
            if let Some(core) = peer_core {
                pin_to_core(core)?;
            }
            let (st, r) = serve_echo(s, &|| c.stopping());
            if let Err(e) = &r
                && !quiet
            {
                eprintln!("mheta load: echo connection from {from}: {e}");
            }
            Ok(st)
        })
}

/// The echo server's totals at `addr`: its connections, and the bursts,
/// bytes and CPU time of those whose threads ended well.
fn join_echo(addr: String, conns: Vec<JoinHandle<io::Result<EchoStats>>>) -> EchoOut {
    let mut echo = EchoOut {
        addr,
        connections: conns.len() as u64,
        bursts: 0,
        bytes: 0,
        cpu_s: 0.0,
    };
    for h in conns {
        if let Ok(Ok(s)) = h.join() {
            echo.bursts += s.bursts;
            echo.bytes += s.bytes;
            echo.cpu_s += s.cpu_s;
        }
    }
    echo
}

// ---------------------------------------------------------------- tests

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn parses_hog_and_repeat() {
        let v = parse_proc_spec("hog").unwrap();
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].kind, Kind::Hog);
        let v = parse_proc_spec("hog*3").unwrap();
        assert_eq!(v.len(), 3);
        assert!(v.iter().all(|p| p.kind == Kind::Hog && p.text == "hog"));
    }

    #[test]
    fn parses_cycle() {
        let v = parse_proc_spec("cycle:comm=0.3,cycle=100ms,msgs=4,bytes=64K").unwrap();
        assert_eq!(
            v[0].kind,
            Kind::Cycle {
                comm: 0.3,
                cycle_s: 0.1,
                msgs: 4,
                bytes: 65536
            }
        );
        let v = parse_proc_spec("cycle*2:bytes=1M,cycle=2s").unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(
            v[1].kind,
            Kind::Cycle {
                comm: 0.5,
                cycle_s: 2.0,
                msgs: 1,
                bytes: 1 << 20
            }
        );
        assert_eq!(v[1].text, "cycle:bytes=1M,cycle=2s");
        let v = parse_proc_spec("cycle").unwrap();
        assert!(matches!(v[0].kind, Kind::Cycle { comm, .. } if comm == 0.5));
        let v = parse_proc_spec("cycle:cycle=250us,comm=1").unwrap();
        assert!(
            matches!(v[0].kind, Kind::Cycle { comm, cycle_s, .. } if comm == 1.0 && (cycle_s - 250e-6).abs() < 1e-12)
        );
    }

    #[test]
    fn rejects_bad_specs_naming_them() {
        for bad in [
            "hogg",
            "",
            "hog:comm=0.1",
            "hog*0",
            "hog*x",
            "cycle:comm=1.5",
            "cycle:comm=-0.1",
            "cycle:comm=abc",
            "cycle:cycle=100",
            "cycle:cycle=0ms",
            "cycle:msgs=0",
            "cycle:bytes=0",
            "cycle:bytes=12Q",
            "cycle:bytes=1G",
            "cycle:foo=1",
            "cycle:comm",
            "cycle:comm=0.1,comm=0.2",
        ] {
            let e = parse_proc_spec(bad).unwrap_err();
            let msg = format!("{e:#}");
            assert!(msg.contains(&format!("{bad:?}")), "{bad}: {msg}");
        }
    }

    #[test]
    fn parses_units_and_cores() {
        assert_eq!(parse_duration("100ms").unwrap(), 0.1);
        assert_eq!(parse_duration("2s").unwrap(), 2.0);
        assert!((parse_duration("50us").unwrap() - 50e-6).abs() < 1e-15);
        assert!(parse_duration("5").is_err());
        assert_eq!(parse_bytes("64K").unwrap(), 65536);
        assert_eq!(parse_bytes("2KiB").unwrap(), 2048);
        assert_eq!(parse_bytes("3M").unwrap(), 3 << 20);
        assert_eq!(parse_bytes("100").unwrap(), 100);
        assert!(parse_bytes("K").is_err());
        assert_eq!(parse_core_list("0").unwrap(), vec![0]);
        assert_eq!(parse_core_list("0,1").unwrap(), vec![0, 1]);
        assert_eq!(parse_core_list("0-2,5").unwrap(), vec![0, 1, 2, 5]);
        assert!(parse_core_list("2-1").is_err());
        assert!(parse_core_list("a").is_err());
    }

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
    fn echo_protocol_round_trip() {
        let l = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let addr = l.local_addr().unwrap();
        let srv = std::thread::spawn(move || {
            let (s, _) = l.accept().unwrap();
            let (st, r) = serve_echo(s, &|| false);
            r.unwrap();
            st
        });
        let mut c = TcpStream::connect(addr).unwrap();
        setup_stream(&c).unwrap();
        let buf = vec![1u8; 70_000];
        for _ in 0..3 {
            assert!(matches!(
                burst(&mut c, 4, &buf, &|| false).unwrap(),
                Xfer::Done
            ));
        }
        drop(c);
        let st = srv.join().unwrap();
        assert_eq!(st.bursts, 3);
        assert_eq!(st.bytes, 3 * 4 * 70_000);
    }
}
