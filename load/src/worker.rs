//! The competing processes at work: the control state the run shares
//! with its threads ([`Ctl`]: stop, which processes are active, errors),
//! each worker's gate (frozen while inactive), a hog's spinning, a cycle
//! process's compute and communication phases, and the local echo peer of
//! a cycle process.
//!
//! A cycle of length `cycle` has a compute phase, then a communication
//! phase. Compute spins on real arithmetic until this thread's CPU time
//! has advanced by `(1 - comm) * cycle`: the phase is work-based, so under
//! contention it stretches in wall time as a real competing program would
//! (the assumption behind Figueira and Berman's eq. 2). Communication
//! sends bursts to the echo peer until `comm * cycle` wall seconds have
//! passed since the phase began (at least one burst); the CPU it takes is
//! Figueira and Berman's `delay_comm`.
//!
//! Each worker also keeps the scheduler's account of its thread
//! (`/proc/thread-self/schedstat`, read at each phase's ends): the
//! run-queue delay of its compute and its communication phases, so that
//! what it did can be told from what the CPU it shared let it do.

use crate::echo::{Burst, EchoStats, Xfer, is_retry, serve_conn, setup_stream};
use crate::error::{Context, Result};
use crate::signal;
use crate::spec::{Kind, ProcSpec};
use mheta_base::os::{Schedstat, SchedstatReader, pin_to_core, thread_cpu_s};
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// State shared by the main thread and the workers.
pub(crate) struct Ctl {
    stop: AtomicBool,
    /// Whether each process is active (the others are frozen).
    pub active: Vec<AtomicBool>,
    lock: Mutex<()>,
    cv: Condvar,
    /// How many threads are pinned and running.
    pub ready: AtomicUsize,
    error: Mutex<Option<String>>,
}

impl Ctl {
    pub fn new(n: usize) -> Self {
        Ctl {
            stop: AtomicBool::new(false),
            active: (0..n).map(|_| AtomicBool::new(false)).collect(),
            lock: Mutex::new(()),
            cv: Condvar::new(),
            ready: AtomicUsize::new(0),
            error: Mutex::new(None),
        }
    }
    /// Asked to stop, by the run or by a signal.
    pub fn stopping(&self) -> bool {
        self.stop.load(Relaxed) || signal::received().is_some()
    }
    /// Make the first `level` processes active, the others inactive.
    pub fn set_level(&self, level: usize) {
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        for (i, a) in self.active.iter().enumerate() {
            a.store(i < level, Relaxed);
        }
        self.cv.notify_all();
    }
    /// Stop every thread.
    pub fn request_stop(&self) {
        self.stop.store(true, Relaxed);
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.cv.notify_all();
    }
    /// Record the first error and stop.
    pub fn fail(&self, msg: String) {
        self.error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(msg);
        self.request_stop();
    }
    /// The first error recorded.
    pub fn error(&self) -> Option<String> {
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

/// What one competing process did.
#[derive(Default, Clone, Debug)]
pub(crate) struct ProcStats {
    pub active_s: f64,
    pub cpu_s: f64,
    pub cycles: u64,
    pub bursts: u64,
    pub bytes_sent: u64,
    pub compute_cpu_s: f64,
    pub compute_wall_s: f64,
    pub comm_wall_s: f64,
    pub comm_cpu_s: f64,
    /// The thread's scheduler account over the run (None without
    /// schedstat), and its run-queue delay inside each kind of phase.
    pub sched: Option<Schedstat>,
    pub compute_wait_s: f64,
    pub comm_wait_s: f64,
}

/// The run-queue delay on `r`'s thread since the reading `from`.
fn wait_since(r: Option<&SchedstatReader>, from: Option<Schedstat>) -> f64 {
    match (r.and_then(SchedstatReader::read), from) {
        (Some(now), Some(from)) => now.since(&from).runq_wait_s.max(0.0),
        _ => 0.0,
    }
}

/// Competing process `i`: pin it, connect it to its echo peer, report
/// it ready, then run its kind until the load stops.
pub(crate) fn worker(
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
    let sched = SchedstatReader::open();
    let sched0 = sched.as_ref().and_then(SchedstatReader::read);
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
            let burst = Burst::new(msgs, bytes as u32);
            let compute_cpu = (1.0 - comm) * cycle_s;
            let comm_wall = comm * cycle_s;
            while gate.pass().is_some() {
                let at = sched.as_ref().and_then(SchedstatReader::read);
                let stop =
                    compute_cpu > 0.0 && compute(&mut gate, &mut state, compute_cpu, &mut st);
                st.compute_wait_s += wait_since(sched.as_ref(), at);
                if stop {
                    break;
                }
                if let Some(s) = conn.as_mut() {
                    let at = sched.as_ref().and_then(SchedstatReader::read);
                    let r = communicate(s, &mut gate, &burst, comm_wall, &mut st);
                    st.comm_wait_s += wait_since(sched.as_ref(), at);
                    match r {
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
    st.sched = match (sched.as_ref().and_then(SchedstatReader::read), sched0) {
        (Some(now), Some(from)) => Some(now.since(&from)),
        _ => None,
    };
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

/// A cycle's communication: `burst` after burst to the
/// echo peer for `wall_s` (pauses not counted); whether the load stopped
/// meanwhile (the peer may close first when it does), or the failure.
fn communicate(
    s: &mut TcpStream,
    gate: &mut Gate,
    burst: &Burst,
    wall_s: f64,
    st: &mut ProcStats,
) -> io::Result<bool> {
    let ctl = gate.ctl;
    let stop = || ctl.stopping();
    let (c0, w0) = (thread_cpu_s(), Instant::now());
    let mut paused = Duration::ZERO;
    let mut result = Ok(false);
    loop {
        match burst.send(s, &stop) {
            Ok(Xfer::Done) => {
                st.bursts += 1;
                st.bytes_sent += burst.payload();
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
pub(crate) fn echo_peer(
    listener: TcpListener,
    core: Option<usize>,
    ctl: &Ctl,
) -> Result<EchoStats> {
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
    let (st, r) = serve_conn(s, &|| ctl.stopping());
    r.context("echo peer")?;
    Ok(st)
}
