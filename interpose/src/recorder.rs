//! The mheta recorder: per-process state of the instrumented iteration.
//!
//! Wrappers call [`recording`] first (one relaxed atomic load); only while
//! the instrumented iteration runs do they take the state lock and append an
//! [`Event`].

use mheta_trace::{Event, Iteration, Msg, Op, RankTrace, What, pcontrol};
use mpi_sys::{MPI_Comm, MPI_Datatype, MPI_Request, MPI_Status};
use std::collections::HashMap;
use std::os::raw::c_int;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

static ACTIVE: AtomicBool = AtomicBool::new(false);
static STATE: Mutex<Option<State>> = Mutex::new(None);

struct State {
    rank: u32,
    size: u32,
    trace_dir: PathBuf,
    target_iter: u64,
    count: u64,
    iters_seen: u64,
    /// Index of the iteration being recorded.
    current: u64,
    done: Vec<Iteration>,
    enabled: bool,
    written: bool,
    base: Instant,
    events: Vec<Event>,
    next_req: u32,
    /// Open request handle (pointer value) -> (id, communicator of a
    /// receive as a pointer value, `None` for a send).
    reqs: HashMap<usize, (u32, Option<usize>)>,
}

/// True while the instrumented iteration is being recorded.
#[inline(always)]
pub fn recording() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Nanoseconds since the instrumented iteration began.
pub fn now_ns() -> u64 {
    let g = lock();
    g.as_ref()
        .map(|s| s.base.elapsed().as_nanos() as u64)
        .unwrap_or(0)
}

fn lock() -> std::sync::MutexGuard<'static, Option<State>> {
    // A panic while holding the lock must not take the host program down.
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Called once after `PMPI_Init*` succeeded.
pub fn init() {
    let (mut rank, mut size) = (0, 1);
    // SAFETY: MPI is initialised; the out-pointers are valid locals.
    unsafe {
        mpi_sys::PMPI_Comm_rank(mpi_sys::RSMPI_COMM_WORLD, &mut rank);
        mpi_sys::PMPI_Comm_size(mpi_sys::RSMPI_COMM_WORLD, &mut size);
    }
    let trace_dir = mheta_trace::env::trace_dir();
    let (iters, complaints) = mheta_trace::env::instrumented_iterations();
    if rank == 0 {
        for c in complaints {
            warn(format!("mheta: {c}"));
        }
    }
    let (target_iter, count) = (iters.start, iters.end - iters.start);
    *lock() = Some(State {
        rank: rank as u32,
        size: size as u32,
        trace_dir,
        target_iter,
        count,
        iters_seen: 0,
        current: 0,
        done: Vec::new(),
        enabled: true,
        written: false,
        base: Instant::now(),
        events: Vec::with_capacity(256),
        next_req: 1,
        reqs: HashMap::new(),
    });
}

/// Called from `MPI_Finalize` before `PMPI_Finalize`.
pub fn finalize() {
    ACTIVE.store(false, Ordering::Relaxed);
    let g = lock();
    if let Some(s) = g.as_ref()
        && !s.written
        && s.rank == 0
    {
        if s.iters_seen == 0 {
            warn(format!(
                "mheta: no iteration markers (MPI_Pcontrol({})) seen; nothing recorded",
                pcontrol::ITER_BEGIN
            ));
        } else {
            warn(format!(
                "mheta: the program marked {} iterations but iterations {}..{} were to be recorded; nothing written",
                s.iters_seen,
                s.target_iter,
                s.target_iter + s.count
            ));
        }
    }
}

/// Handle an `MPI_Pcontrol(level)`.
pub fn pcontrol(level: c_int) {
    let mut g = lock();
    let Some(s) = g.as_mut() else { return };
    match level {
        pcontrol::OFF => {
            s.enabled = false;
            ACTIVE.store(false, Ordering::Relaxed);
        }
        pcontrol::ON => s.enabled = true,
        pcontrol::RESET => {
            s.iters_seen = 0;
            s.written = false;
            s.events.clear();
            s.done.clear();
            ACTIVE.store(false, Ordering::Relaxed);
        }
        pcontrol::ITER_BEGIN => {
            let i = s.iters_seen;
            s.iters_seen += 1;
            if i >= s.target_iter && i < s.target_iter + s.count && s.enabled && !s.written {
                s.current = i;
                s.events.clear();
                s.reqs.clear();
                s.base = Instant::now();
                ACTIVE.store(true, Ordering::Relaxed);
            }
        }
        pcontrol::ITER_END if ACTIVE.swap(false, Ordering::Relaxed) => {
            let duration_ns = s.base.elapsed().as_nanos() as u64;
            let events = std::mem::take(&mut s.events);
            s.done.push(Iteration {
                index: s.current,
                duration_ns,
                events,
            });
            if s.current + 1 == s.target_iter + s.count {
                s.written = true;
                write_trace(s);
            }
        }
        pcontrol::STAGE_BEGIN | pcontrol::STAGE_END if recording() => {
            let t = s.base.elapsed().as_nanos() as u64;
            let what = if level == pcontrol::STAGE_BEGIN {
                What::StageBegin
            } else {
                What::StageEnd
            };
            s.events.push(Event {
                op: None,
                t0_ns: t,
                t1_ns: t,
                what,
            });
        }
        _ => {}
    }
}

fn write_trace(s: &mut State) {
    let trace = RankTrace {
        rank: s.rank,
        world_size: s.size,
        pid: std::process::id(),
        host: hostname(),
        iterations: std::mem::take(&mut s.done),
    };
    let result = std::fs::create_dir_all(&s.trace_dir)
        .map_err(|e| format!("{}: {e}", s.trace_dir.display()))
        .and_then(|_| mheta_trace::write_rank(&s.trace_dir, &trace).map_err(|e| e.to_string()));
    if let Err(e) = result {
        // Reported once: a trace is written at most once per run.
        warn(format!(
            "mheta[{}]: cannot write trace: {e}; the program continues",
            s.rank
        ));
    }
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buf is writable for its full length.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Append a call event (times from [`now_ns`]).
pub fn record(op: Op, t0_ns: u64, t1_ns: u64, what: What) {
    let mut g = lock();
    if let Some(s) = g.as_mut() {
        s.events.push(Event {
            op: Some(op),
            t0_ns,
            t1_ns,
            what,
        });
    }
}

/// Give a newly posted request an id and remember it; `recv_comm` is the
/// communicator of a receive (`None` for a send).
pub fn post_request(req: MPI_Request, recv_comm: Option<MPI_Comm>) -> u32 {
    let mut g = lock();
    let Some(s) = g.as_mut() else { return 0 };
    let id = s.next_req;
    s.next_req += 1;
    s.reqs
        .insert(req.0 as usize, (id, recv_comm.map(|c| c.0 as usize)));
    id
}

/// Forget a request that is being completed; `None` when it was posted
/// outside the instrumented iteration.
pub fn take_request(req: MPI_Request) -> Option<(u32, Option<MPI_Comm>)> {
    lock()
        .as_mut()
        .and_then(|s| s.reqs.remove(&(req.0 as usize)))
        .map(|(id, c)| (id, c.map(|c| mpi_sys::MPI_Comm(c as *mut _))))
}

/// Bytes in `count` elements of `dt`.
pub fn bytes(count: c_int, dt: MPI_Datatype) -> u64 {
    let mut size: c_int = 0;
    // SAFETY: dt is the caller's datatype handle, size a valid local.
    unsafe { mpi_sys::PMPI_Type_size(dt, &mut size) };
    (count.max(0) as u64) * (size.max(0) as u64)
}

/// Bytes actually received, from a completed receive's status.
///
/// # Safety
/// `st` points at a status filled by a completed receive.
pub unsafe fn status_bytes(st: *const MPI_Status) -> u64 {
    let mut count: c_int = 0;
    // SAFETY: st points at a status filled by a completed receive; counting
    // in MPI_UINT8_T gives bytes whatever the receive's datatype.
    let rc = unsafe { mpi_sys::PMPI_Get_count(st, mpi_sys::RSMPI_UINT8_T, &mut count) };
    if rc != 0 || count < 0 {
        0
    } else {
        count as u64
    }
}

/// Translate a rank of `comm` into its `MPI_COMM_WORLD` rank.
pub fn world_rank(comm: MPI_Comm, r: c_int) -> i32 {
    // SAFETY: reading the address of an extern static handle.
    let world = unsafe { mpi_sys::RSMPI_COMM_WORLD };
    if r < 0 || comm == world {
        return r;
    }
    let mut out = r;
    // SAFETY: comm is a valid communicator of the caller; the groups are
    // created and freed here.
    unsafe {
        let mut g = std::mem::zeroed();
        let mut wg = std::mem::zeroed();
        mpi_sys::PMPI_Comm_group(comm, &mut g);
        mpi_sys::PMPI_Comm_group(world, &mut wg);
        mpi_sys::PMPI_Group_translate_ranks(g, 1, &r, wg, &mut out);
        mpi_sys::PMPI_Group_free(&mut g);
        mpi_sys::PMPI_Group_free(&mut wg);
    }
    out
}

/// A message endpoint, with the peer translated to a world rank.
pub fn msg(comm: MPI_Comm, peer: c_int, tag: c_int, bytes: u64) -> Msg {
    Msg {
        peer: world_rank(comm, peer),
        tag,
        bytes,
    }
}

/// The matched message described by a completed receive's status.
///
/// # Safety
/// `st` points at a status filled by a completed receive on `comm`.
pub unsafe fn msg_from_status(comm: MPI_Comm, st: *const MPI_Status) -> Msg {
    // SAFETY: st points at a status filled by a completed receive.
    let (src, tag) = unsafe { ((*st).MPI_SOURCE, (*st).MPI_TAG) };
    // SAFETY: as above.
    msg(comm, src, tag, unsafe { status_bytes(st) })
}

/// `comm`'s size.
pub fn comm_size(comm: MPI_Comm) -> u32 {
    let mut n = 0;
    // SAFETY: comm is a valid communicator of the caller.
    unsafe { mpi_sys::PMPI_Comm_size(comm, &mut n) };
    n.max(0) as u32
}

/// One line on stderr in one write, so that lines of different ranks
/// forwarded by the launcher do not interleave.
fn warn(msg: String) {
    use std::io::Write;
    let mut line = msg;
    line.push('\n');
    let _ = std::io::stderr().write_all(line.as_bytes());
}
