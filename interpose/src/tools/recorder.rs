//! The mheta recorder: records the instrumented iterations (marked with
//! `MPI_Pcontrol`, see [`mheta_trace::pcontrol`]) and writes each rank's
//! trace as soon as the last of them ends.
//!
//! Events go to per-thread buffers ([`crate::threads`]); the iteration's
//! state below is touched only by `MPI_Pcontrol`. Non-blocking requests and
//! open files are matched through two small maps, used only while
//! recording.

use super::{Call, RECORDER, Tool, is_active, set_active};
use crate::mpi_util::Sources;
use crate::threads::{self, lock};
use mheta_trace::{Event, Iteration, RankTrace, What, pcontrol};
use mpi_sys::{MPI_File, MPI_Request};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

pub struct Recorder;
pub static RECORDER_TOOL: Recorder = Recorder;

struct State {
    rank: u32,
    size: u32,
    trace_dir: PathBuf,
    first: u64,
    count: u64,
    iters_seen: u64,
    enabled: bool,
    /// MHETA_RECORD_ALL: one iteration from MPI_Init to MPI_Finalize.
    whole_run: bool,
    /// MHETA_INSTRUMENT_SECONDS, in ns (0: the counted iterations only).
    min_ns: u64,
    /// The counted iterations are done and their trace written; with
    /// `min_ns`, recording goes on until `written`.
    counted: bool,
    /// The program asked to record on until it says it is done
    /// (`pcontrol::RECORD_ON`; kept across a reset).
    until_done: bool,
    /// Nothing more is recorded (until a reset).
    written: bool,
    current: u64,
    done: Vec<Iteration>,
    /// Time and events of `done`, kept as it grows.
    done_ns: u64,
    done_events: usize,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);
/// Clock (ticks) at the start of the iteration being recorded.
static BASE: AtomicU64 = AtomicU64::new(0);

/// Request handle -> (id, the ranks of a receive's communicator), as
/// pointer values. Several outstanding requests can share a handle: Open
/// MPI hands out its static `ompi_request_empty` for sends that completed
/// at once. They are matched to completions in posting order.
type ReqMap = HashMap<usize, std::collections::VecDeque<Posted>>;
static REQS: Mutex<Option<ReqMap>> = Mutex::new(None);
static NEXT_REQ: AtomicU64 = AtomicU64::new(1);
/// File handle -> variable id; names of variables by id.
type FileMap = (HashMap<usize, u32>, Vec<String>);
static FILES: Mutex<Option<FileMap>> = Mutex::new(None);

/// Is the recorder recording now?
#[inline(always)]
pub fn recording() -> bool {
    is_active(RECORDER)
}

/// A persistent request's template, set by `MPI_*_init`: a send's
/// message, a receive's communicator, a collective's bytes and size, or a
/// neighbourhood collective's messages.
#[derive(Clone)]
pub enum Template {
    Send(mheta_trace::Msg),
    /// The ranks of its communicator, owned by the template
    /// ([`Sources::of`] at `MPI_Recv_init`; each start borrows them).
    Recv(Sources),
    Collective {
        op: mheta_trace::Op,
        bytes: u64,
        comm_size: u32,
        root: i32,
    },
    Neighbor {
        sends: Vec<mheta_trace::Msg>,
        recvs: Vec<mheta_trace::Msg>,
    },
}

/// Persistent request handle -> its template. Kept even
/// while nothing is recorded, since programs set their persistent requests
/// up before the instrumented iterations. A freed handle's entry may stay
/// until the handle is reused; only `MPI_Start(all)` reads the map, and only
/// for handles the program set up with `MPI_*_init`, which overwrite.
/// A [`Template`] as the map keeps it.
enum Kept {
    Send(mheta_trace::Msg),
    Recv(Sources),
    Collective(mheta_trace::Op, u64, u32, i32),
    Neighbor(Vec<mheta_trace::Msg>, Vec<mheta_trace::Msg>),
}
static PERSIST: Mutex<Option<HashMap<usize, Kept>>> = Mutex::new(None);

/// Remember the template of persistent request `req`.
pub fn persist(req: MPI_Request, t: Template) {
    let k = match t {
        Template::Send(m) => Kept::Send(m),
        Template::Recv(c) => Kept::Recv(c),
        Template::Collective {
            op,
            bytes,
            comm_size,
            root,
        } => Kept::Collective(op, bytes, comm_size, root),
        Template::Neighbor { sends, recvs } => Kept::Neighbor(sends, recvs),
    };
    let old = lock(&PERSIST)
        .get_or_insert_with(HashMap::new)
        .insert(req.0 as usize, k);
    if let Some(Kept::Recv(s)) = old {
        s.release();
    }
}

/// The template of persistent request `req`, if it was set up.
pub fn persistent(req: MPI_Request) -> Option<Template> {
    let g = lock(&PERSIST);
    Some(match g.as_ref()?.get(&(req.0 as usize))? {
        Kept::Send(m) => Template::Send(*m),
        Kept::Recv(c) => Template::Recv(c.borrowed()),
        &Kept::Collective(op, bytes, comm_size, root) => Template::Collective {
            op,
            bytes,
            comm_size,
            root,
        },
        Kept::Neighbor(sends, recvs) => Template::Neighbor {
            sends: sends.clone(),
            recvs: recvs.clone(),
        },
    })
}

/// Forget persistent request `req` (freed).
pub fn unpersist(req: MPI_Request) {
    let old = lock(&PERSIST)
        .as_mut()
        .and_then(|m| m.remove(&(req.0 as usize)));
    if let Some(Kept::Recv(s)) = old {
        s.release();
    }
}

/// Give a newly posted request an id; `recv` holds the ranks of a
/// receive's communicator (`None` for anything else), released by
/// whoever takes the request out ([`take_request`], [`drop_request`]).
pub fn post_request(req: MPI_Request, recv: Option<Sources>) -> u32 {
    let id = NEXT_REQ.fetch_add(1, Ordering::Relaxed) as u32;
    lock(&REQS)
        .get_or_insert_with(HashMap::new)
        .entry(req.0 as usize)
        .or_default()
        .push_back((id, recv));
    id
}

/// A request's id and the ranks of its receive's communicator, as posted.
pub type Posted = (u32, Option<Sources>);

/// Forget the first posted request of handle `req` (freed by the
/// program: no completion will report it).
pub fn drop_request(req: MPI_Request) {
    if let Some((_, Some(s))) = take_request(req) {
        s.release();
    }
}

/// Take a request out of the map before a call that may complete it (its
/// handle may be reused by another thread as soon as it completes).
pub fn take_request(req: MPI_Request) -> Option<Posted> {
    let mut g = lock(&REQS);
    let m = g.as_mut()?;
    let key = req.0 as usize;
    let q = m.get_mut(&key)?;
    let posted = q.pop_front()?;
    if q.is_empty() {
        m.remove(&key);
    }
    Some(posted)
}

/// Put back a request that a call did not complete (first in line again).
pub fn restore_request(req: MPI_Request, posted: Posted) {
    lock(&REQS)
        .get_or_insert_with(HashMap::new)
        .entry(req.0 as usize)
        .or_default()
        .push_front(posted);
}

/// Name a newly opened file as a variable and return its id.
pub fn open_file(fh: MPI_File, name: &str) -> u32 {
    let mut g = lock(&FILES);
    let (map, names) = g.get_or_insert_with(Default::default);
    let id = match names.iter().position(|n| n == name) {
        Some(i) => i as u32,
        None => {
            names.push(name.to_string());
            (names.len() - 1) as u32
        }
    };
    map.insert(fh as usize, id);
    id
}

/// The variable id of an open file (`u32::MAX` when opened unseen).
pub fn file_id(fh: MPI_File) -> u32 {
    lock(&FILES)
        .as_ref()
        .and_then(|(m, _)| m.get(&(fh as usize)).copied())
        .unwrap_or(u32::MAX)
}

impl Recorder {
    /// Times are ticks until the iteration ends, then nanoseconds.
    fn push(&self, op: Option<mheta_trace::Op>, t0: u64, t1: u64, what: What) {
        let base = BASE.load(Ordering::Relaxed);
        threads::with(|events, _, thread| {
            events.push(Event {
                op,
                thread,
                t0_ns: t0.saturating_sub(base),
                t1_ns: t1.saturating_sub(base),
                what,
            })
        });
    }

    fn begin() {
        threads::collect(|events, _| events.clear());
        if let Some(m) = lock(&REQS).as_mut() {
            m.clear();
        }
        BASE.store(crate::clock::now(), Ordering::Relaxed);
        set_active(RECORDER, true);
    }

    fn end(s: &mut State) {
        set_active(RECORDER, false);
        let ticks = crate::clock::now().saturating_sub(BASE.load(Ordering::Relaxed));
        let scale = crate::clock::ns_per_tick();
        let duration_ns = (ticks as f64 * scale) as u64;
        let mut events: Vec<Event> = Vec::new();
        threads::collect(|evs, _| events.append(evs));
        // To ns, keeping each thread's calls in order and disjoint even if
        // the thread moved between cores whose clocks differ by a few
        // ticks; then merge the threads by start time (the sort is stable,
        // so a thread's own order stays).
        let mut thread_end: std::collections::HashMap<u16, u64> = Default::default();
        for e in &mut events {
            let end = thread_end.entry(e.thread).or_insert(0);
            let t0 = ((e.t0_ns as f64 * scale) as u64).clamp(*end, duration_ns.max(*end));
            let t1 = ((e.t1_ns as f64 * scale) as u64).clamp(t0, duration_ns.max(t0));
            (e.t0_ns, e.t1_ns) = (t0.min(duration_ns), t1.min(duration_ns));
            *end = e.t1_ns;
        }
        events.sort_by_key(|e| e.t0_ns);
        s.done_ns += duration_ns;
        s.done_events += events.len();
        s.done.push(Iteration {
            index: s.current,
            duration_ns,
            events,
        });
        if !s.counted && s.current + 1 >= s.first + s.count {
            // The counted iterations' trace is written now, whatever
            // follows: the in-job runtime reads it at this point.
            s.counted = true;
            s.written = s.min_ns == 0 && !s.until_done;
            write_trace(s);
        }
        if s.counted && !s.written && extension_done(s) {
            s.written = true;
            write_trace(s);
        }
    }
}

impl Tool for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }

    fn init(&self, rank: u32, size: u32) {
        let (iters, mut complaints) = mheta_trace::env::instrumented_iterations();
        let (secs, complaint) = mheta_trace::env::instrumented_seconds();
        complaints.extend(complaint);
        if rank == 0 {
            for c in complaints {
                crate::warn(format!("mheta: {c}"));
            }
        }
        // MHETA_RECORD_ALL=1: the whole run, MPI_Init to MPI_Finalize, is
        // one recorded iteration (markers ignored): for programs that do
        // not mark iterations, and for testing the recorder on any program.
        let all = std::env::var_os("MHETA_RECORD_ALL").is_some_and(|v| v == "1");
        *lock(&STATE) = Some(State {
            rank,
            size,
            trace_dir: mheta_trace::env::trace_dir(),
            first: if all { 0 } else { iters.start },
            count: if all { 1 } else { iters.end - iters.start },
            iters_seen: if all { 1 } else { 0 },
            enabled: true,
            whole_run: all,
            min_ns: if all { 0 } else { (secs * 1e9) as u64 },
            counted: false,
            until_done: false,
            written: false,
            current: 0,
            done: Vec::new(),
            done_ns: 0,
            done_events: 0,
        });
        if all {
            Recorder::begin();
        }
    }

    fn post(&self, call: &Call) {
        if recording() {
            self.push(Some(call.op), call.t0, call.t1, call.what.clone());
        }
    }

    fn pcontrol(&self, level: i32) {
        let mut g = lock(&STATE);
        let Some(s) = g.as_mut() else { return };
        if s.whole_run
            && matches!(
                level,
                pcontrol::OFF
                    | pcontrol::ON
                    | pcontrol::RESET
                    | pcontrol::ITER_BEGIN
                    | pcontrol::ITER_END
            )
        {
            return;
        }
        match level {
            pcontrol::OFF => {
                s.enabled = false;
                set_active(RECORDER, false);
            }
            pcontrol::ON => s.enabled = true,
            pcontrol::RESET => {
                set_active(RECORDER, false);
                s.iters_seen = 0;
                s.counted = false;
                s.written = false;
                s.done.clear();
                (s.done_ns, s.done_events) = (0, 0);
            }
            pcontrol::ITER_BEGIN => {
                let i = s.iters_seen;
                s.iters_seen += 1;
                let wanted = i < s.first + s.count || s.counted;
                if i >= s.first && wanted && s.enabled && !s.written {
                    s.current = i;
                    Recorder::begin();
                }
            }
            pcontrol::ITER_END if recording() => Recorder::end(s),
            pcontrol::RECORD_ON => s.until_done = true,
            pcontrol::RECORD_DONE if s.counted && !s.written => {
                // Between iterations: nothing is being recorded.
                set_active(RECORDER, false);
                s.written = true;
                write_trace(s);
            }
            pcontrol::STAGE_BEGIN | pcontrol::STAGE_END if recording() => {
                let t = crate::clock::now();
                let what = if level == pcontrol::STAGE_BEGIN {
                    What::StageBegin
                } else {
                    What::StageEnd
                };
                drop(g);
                self.push(None, t, t, what);
            }
            l if recording()
                && (pcontrol::LEVEL_BASE..pcontrol::LEVEL_BASE + pcontrol::LEVELS).contains(&l) =>
            {
                let t = crate::clock::now();
                drop(g);
                self.push(None, t, t, What::Level((l - pcontrol::LEVEL_BASE) as u32));
            }
            _ => {}
        }
    }

    fn finalize(&self) {
        let mut g = lock(&STATE);
        if recording()
            && let Some(s) = g.as_mut()
            && s.whole_run
        {
            // MHETA_RECORD_ALL: the run's one iteration ends here.
            Recorder::end(s);
        }
        set_active(RECORDER, false);
        if let Some(s) = g.as_mut()
            && s.counted
            && !s.written
        {
            // The run ended before MHETA_INSTRUMENT_SECONDS were
            // recorded, or before the program said it was done: the
            // trace holds what was.
            s.written = true;
            let (n, span) = (s.done.len(), s.done_ns as f64 * 1e-9);
            write_trace(s);
            if s.rank == 0 && s.done_ns < s.min_ns {
                crate::warn(format!(
                    "mheta: the run ended after {n} recorded iterations spanning {span:.3} s, short of MHETA_INSTRUMENT_SECONDS={}; the trace holds those",
                    s.min_ns as f64 * 1e-9
                ));
            }
        }
        if let Some(s) = g.as_ref()
            && !s.written
            && s.rank == 0
        {
            if s.iters_seen == 0 {
                crate::warn(format!(
                    "mheta: no iteration markers (MPI_Pcontrol({})) seen; nothing recorded",
                    pcontrol::ITER_BEGIN
                ));
            } else if s.enabled {
                crate::warn(format!(
                    "mheta: the program marked {} iterations but iterations {}..{} were to be recorded; nothing written",
                    s.iters_seen,
                    s.first,
                    s.first + s.count
                ));
            }
        }
    }
}

/// Has an extended recording (MHETA_INSTRUMENT_SECONDS) enough: the
/// seconds, or the most iterations or events it may hold?
fn extension_done(s: &State) -> bool {
    (!s.until_done && s.done_ns >= s.min_ns)
        || s.done.len() >= mheta_trace::MAX_EXTENDED_ITERATIONS
        || s.done_events >= mheta_trace::MAX_EXTENDED_EVENTS
}

/// Write this rank's trace of the iterations recorded so far: handed
/// over once the recording is `written`, else copied, as an extended
/// recording adds to them and writes again.
fn write_trace(s: &mut State) {
    let trace = RankTrace {
        rank: s.rank,
        world_size: s.size,
        pid: std::process::id(),
        host: mheta_base::os::hostname(),
        files: lock(&FILES)
            .as_ref()
            .map(|(_, names)| names.clone())
            .unwrap_or_default(),
        iterations: if s.written {
            std::mem::take(&mut s.done)
        } else {
            s.done.clone()
        },
    };
    let result = std::fs::create_dir_all(&s.trace_dir)
        .map_err(|e| format!("{}: {e}", s.trace_dir.display()))
        .and_then(|_| mheta_trace::write_rank(&s.trace_dir, &trace).map_err(|e| e.to_string()));
    if let Err(e) = result {
        // Reported for each write (at most twice per recording).
        crate::warn(format!(
            "mheta[{}]: cannot write trace: {e}; the program continues",
            s.rank
        ));
    }
}
