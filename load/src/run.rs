//! A run of the load engine: its configuration ([`LoadConfig`],
//! [`EchoConfig`], [`RunOpts`]), checked before anything starts; the
//! threads (a worker per competing process, an echo peer per
//! communicating one); the control loop (level switches, the deadline,
//! signals, errors); and the end: threads joined, the timeline written
//! atomically, the ready file removed.
//!
//! Each competing "process" is a thread of this one process pinned to
//! one core: Linux's CFS schedules threads as tasks exactly like
//! processes, so a thread competes for its core as a separate program
//! would, and nothing is left behind when it stops.

use crate::echo;
use crate::error::{Context, LoadError, Result, bail, config};
use crate::schedule::{Bursty, BurstyPlan, Schedule};
use crate::signal;
use crate::spec::{Kind, ProcSpec};
use crate::timeline::{self, BurstyOut, EchoOut, ProcOut, SwitchOut, Timeline};
use crate::worker::{Ctl, ProcStats, echo_peer, worker};
use crate::{Notice, Notify};
use mheta_base::os::{allowed_cores, process_cpu_s};
use mheta_base::write_atomic;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

/// What every run takes: how long, where its files go, how it stops and
/// speaks.
#[derive(Clone, Default)]
pub struct RunOpts {
    /// Stop after this many seconds (None: until a signal or an error).
    pub duration_s: Option<f64>,
    /// Write the timeline here at exit.
    pub timeline: Option<PathBuf>,
    /// Create this file (holding the pid) once every thread is pinned and
    /// running; it is removed at exit.
    pub ready_file: Option<PathBuf>,
    /// The command line, recorded in the timeline.
    pub argv: Vec<String>,
    /// Install the SIGINT, SIGTERM and SIGHUP handlers ([`crate::signal`],
    /// process-wide) once the configuration is checked.
    pub catch_signals: bool,
    /// Where messages go while it runs (None: nowhere).
    pub notify: Option<Notify>,
}

impl RunOpts {
    fn tell(&self, n: Notice<'_>) {
        if let Some(f) = &self.notify {
            f(n);
        }
    }

    /// A valid duration, existing directories for the files; the cores
    /// this process may run on.
    fn check(&self) -> Result<Vec<usize>> {
        if let Some(d) = self.duration_s
            && !(d.is_finite() && d >= 0.0)
        {
            bail!("--duration {d}: must be a non-negative number of seconds");
        }
        if let Some(t) = &self.timeline {
            check_dir_of(t, "--timeline")?;
        }
        if let Some(r) = &self.ready_file {
            check_dir_of(r, "--ready-file")?;
        }
        let allowed = allowed_cores();
        if allowed.is_empty() {
            bail!("sched_getaffinity: cannot read the cores this process may run on");
        }
        Ok(allowed)
    }

    fn deadline(&self, t0: Instant) -> Option<Instant> {
        self.duration_s.map(|d| t0 + Duration::from_secs_f64(d))
    }
}

/// A competing load (`mheta load --proc ...`).
#[derive(Clone, Default)]
pub struct LoadConfig {
    /// The competing processes ([`crate::spec::parse_proc_spec`]).
    pub procs: Vec<ProcSpec>,
    /// Process i runs on `cores[i % len]`; None: no pinning.
    pub cores: Option<Vec<usize>>,
    /// The core of the local echo peers.
    pub peer_core: Option<usize>,
    /// An external echo server, `HOST:PORT`, instead of local echo peers.
    pub peer: Option<String>,
    /// Switch between levels of activity (None: all active all the time).
    pub bursty: Option<Bursty>,
    pub opts: RunOpts,
}

/// An echo server for cycle processes elsewhere (`mheta load
/// --echo-listen ADDR`).
#[derive(Clone, Default)]
pub struct EchoConfig {
    /// Listen here, e.g. `0.0.0.0:7000` (port 0 picks one).
    pub addr: String,
    /// The core of the serving threads.
    pub core: Option<usize>,
    pub opts: RunOpts,
}

/// A run that ended: its timeline (written if asked) and whether writing
/// it worked.
pub struct Finished {
    pub timeline: Timeline,
    /// Writing the timeline file failed.
    pub saved: Result<()>,
}

impl Finished {
    /// The timeline, unless writing it failed or the load stopped on an
    /// error ([`LoadError::Run`]).
    pub fn into_result(self) -> Result<Timeline> {
        self.saved?;
        match &self.timeline.error {
            Some(e) => Err(LoadError::Run(e.clone())),
            None => Ok(self.timeline),
        }
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

/// Run the load of `cfg` until a signal, its duration, or an error.
/// Errors before anything started are returned; an error while it ran
/// is in the timeline ([`Finished::into_result`]).
pub fn run(cfg: &LoadConfig) -> Result<Finished> {
    let allowed = cfg.opts.check()?;
    if let Some(c) = cfg.peer_core {
        check_cores(&[c], &allowed, "--peer-core")?;
    }
    if cfg.procs.is_empty() {
        bail!("no competing process given (--proc)");
    }
    if let Some(c) = &cfg.cores {
        if c.is_empty() {
            bail!("--cores: no core given");
        }
        check_cores(c, &allowed, "--cores")?;
    }
    let peer = match &cfg.peer {
        Some(p) => Some(
            p.to_socket_addrs()
                .with_context(|| format!("--peer {p}: cannot resolve"))?
                .next()
                .with_context(|| format!("--peer {p}: no address"))?,
        ),
        None => None,
    };
    let bursty = match &cfg.bursty {
        Some(b) => Some(b.plan(cfg.procs.len())?),
        None => None,
    };
    if cfg.opts.catch_signals {
        signal::install()?;
    }
    run_load(cfg, peer, bursty)
}

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
    echo: Vec<Option<JoinHandle<Result<echo::EchoStats>>>>,
    workers: Vec<JoinHandle<Result<ProcStats>>>,
    expected: usize,
    start_err: Option<String>,
}

impl Threads {
    /// Wait for every thread: each worker's result, and each echo peer's
    /// account (None without a peer, or if it failed).
    fn join(self) -> (Vec<Result<ProcStats>>, Vec<Option<echo::EchoStats>>) {
        let stats = (self.workers.into_iter())
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(LoadError::Run("a load thread panicked".into())))
            })
            .collect();
        let peer_cpu = (self.echo.into_iter())
            .map(|h| {
                let r = h?.join().ok()?;
                r.ok()
            })
            .collect();
        (stats, peer_cpu)
    }
}

/// Start an echo peer for every cycle process that communicates (unless
/// an external peer answers), then one worker per process.
fn start_threads(
    cfg: &LoadConfig,
    ext_peer: Option<SocketAddr>,
    ctl: &Arc<Ctl>,
) -> Result<Threads> {
    let procs = &cfg.procs;
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
        let pc = cfg.peer_core;
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
        let (p2, core, addr) = (p.clone(), core_of(&cfg.cores, i), peer_addrs[i]);
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

/// The core process `i` is pinned to (round robin over the cores).
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

/// Run the load until a signal, the duration, or an error; the timeline.
fn run_load(
    cfg: &LoadConfig,
    ext_peer: Option<SocketAddr>,
    bursty: Option<BurstyPlan>,
) -> Result<Finished> {
    let procs = &cfg.procs;
    let ctl = Arc::new(Ctl::new(procs.len()));
    let ready = ReadyFile(cfg.opts.ready_file.clone());
    let threads = start_threads(cfg, ext_peer, &ctl)?;
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
        switcher = begin(&cfg.opts, &ctl, bursty.as_ref(), &ready, t0);
    }
    let deadline = cfg.opts.deadline(t0);
    let mut stopped_by = control_loop(&ctl, t0, deadline, switcher.as_mut());
    let switches = switcher.map(|s| s.done).unwrap_or_default();
    let elapsed = t0.elapsed().as_secs_f64();
    let end_wall = SystemTime::now();
    ctl.request_stop();
    let (stats, peers) = threads.join();
    let error = ctl.error();
    if error.is_some() {
        stopped_by = "error".into();
    }
    let procs_out: Vec<ProcOut> = procs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let st = stats.get(i).and_then(|r| r.as_ref().ok()).cloned();
            let peer = peers.get(i).copied().flatten();
            timeline::proc_out(i, p, st.unwrap_or_default(), core_of(&cfg.cores, i), peer)
        })
        .collect();
    let bursty_out = bursty.map(|b| BurstyOut {
        per_level: timeline::per_level(&b.levels, &b.dwell, &switches, elapsed),
        switch: b.mode,
        seed: b.seed,
        levels: b.levels,
        dwell_s: b.dwell,
        start_level_index: b.start,
        switches,
    });
    let tl = Timeline {
        format: timeline::FORMAT,
        version: timeline::VERSION,
        mode: "load",
        argv: cfg.opts.argv.clone(),
        pid: std::process::id(),
        start_unix_s: timeline::unix_s(start_wall),
        end_unix_s: timeline::unix_s(end_wall),
        elapsed_s: elapsed,
        stopped_by,
        error,
        peer: Some(cfg.peer.clone().unwrap_or_else(|| "loopback".into())),
        peer_core: cfg.peer_core,
        process_cpu_s: process_cpu_s(),
        procs: procs_out,
        bursty: bursty_out,
        echo: None,
    };
    Ok(finish(&cfg.opts, tl, ready))
}

/// Every thread runs: set the first level (of the bursty schedule, else
/// all processes), create the ready file, say so; the switcher.
fn begin<'a>(
    opts: &RunOpts,
    ctl: &Ctl,
    bursty: Option<&'a BurstyPlan>,
    ready: &ReadyFile,
    t0: Instant,
) -> Option<Switcher<'a>> {
    let switcher = match bursty {
        Some(b) => {
            let sched = Schedule::new(b.dwell.clone(), b.mode, b.seed.unwrap_or(0), b.start);
            let mut s = Switcher {
                levels: &b.levels,
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
    } else {
        let pid = std::process::id();
        opts.tell(Notice::Info(&format!(
            "{} process(es) running as threads of pid {pid}; stop with Ctrl-C or kill -TERM {pid}",
            ctl.active.len(),
        )));
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
        if let Some(sig) = signal::received() {
            return signal::name(sig).to_string();
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

/// Write the timeline (if asked), then remove the ready file.
fn finish(opts: &RunOpts, timeline: Timeline, ready: ReadyFile) -> Finished {
    let saved = match &opts.timeline {
        Some(p) => serde_json::to_vec_pretty(&timeline)
            .map_err(|e| config(format!("cannot encode the timeline: {e}")))
            .and_then(|j| write_atomic(p, &j).map_err(LoadError::from)),
        None => Ok(()),
    };
    drop(ready);
    Finished { timeline, saved }
}

/// Serve the echo protocol for cycle processes elsewhere until a signal
/// or the duration; the timeline (mode `echo-server`).
pub fn serve_echo(cfg: &EchoConfig) -> Result<Finished> {
    let allowed = cfg.opts.check()?;
    if let Some(c) = cfg.core {
        check_cores(&[c], &allowed, "--peer-core")?;
    }
    if cfg.opts.catch_signals {
        signal::install()?;
    }
    let addr = &cfg.addr;
    let l = TcpListener::bind(addr.as_str())
        .with_context(|| format!("--echo-listen {addr}: cannot bind"))?;
    let local = l.local_addr()?;
    let ready = ReadyFile(cfg.opts.ready_file.clone());
    let t0 = Instant::now();
    let start_wall = SystemTime::now();
    let deadline = cfg.opts.deadline(t0);
    ready.create()?;
    let pid = std::process::id();
    cfg.opts.tell(Notice::Info(&format!(
        "echo server listening on {local} (pid {pid}); stop with Ctrl-C or kill -TERM {pid}"
    )));
    let stop = || signal::received().is_some() || deadline.is_some_and(|d| Instant::now() >= d);
    let tell = |n: Notice<'_>| cfg.opts.tell(n);
    let served = echo::serve(&l, cfg.core, &stop, &tell).context("--echo-listen: accept")?;
    let stopped_by = match signal::received() {
        Some(sig) => signal::name(sig).to_string(),
        None => "duration".to_string(),
    };
    let elapsed = t0.elapsed().as_secs_f64();
    let end_wall = SystemTime::now();
    drop(l);
    let tl = Timeline {
        format: timeline::FORMAT,
        version: timeline::VERSION,
        mode: "echo-server",
        argv: cfg.opts.argv.clone(),
        pid,
        start_unix_s: timeline::unix_s(start_wall),
        end_unix_s: timeline::unix_s(end_wall),
        elapsed_s: elapsed,
        stopped_by,
        error: None,
        peer: None,
        peer_core: cfg.core,
        process_cpu_s: process_cpu_s(),
        procs: Vec::new(),
        bursty: None,
        echo: Some(EchoOut {
            addr: local.to_string(),
            connections: served.connections,
            bursts: served.stats.bursts,
            bytes: served.stats.bytes,
            cpu_s: served.stats.cpu_s,
            runq_wait_s: served.stats.runq_wait_s,
        }),
    };
    Ok(finish(&cfg.opts, tl, ready))
}
