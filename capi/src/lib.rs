//! The C and Fortran API of mheta (`libmheta.so`, `capi/include/mheta.h`,
//! `capi/fortran/mheta.f90`): a user's own MPI program, started under
//! `mheta run`, declares its GEN_BLOCK arrays and exchanges, marks its
//! iterations, and gets `--auto` without our Rust harness: mheta plans
//! with the MHETA model on the recorded iterations, decides whether the
//! move pays, and moves every declared array among the ranks. This crate
//! is the thin `extern "C"` layer; the planning and the moves are
//! [`mheta_runtime`]'s, the same code the Rust apps use. Arrays are owned by
//! mheta (`mheta_data` gives the current pointer, which changes when rows
//! move). Every call returns a status (0, or -1 with `mheta_error()`
//! saying why); none aborts the program.

use mheta_hosts::cluster::ClusterSpec;
use mheta_model::Dist;
use mheta_runtime::RowBlock;
use mheta_trace::{AppDecl, ArrayDecl, ExchangeDecl, ExchangeKind, MsgScaling, Topology};
use mpi::topology::{Communicator, SimpleCommunicator};
use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char, c_int};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

/// One declared array: `width` doubles per row, this rank's rows.
struct Array {
    decl: ArrayDecl,
    width: usize,
    rows: RowBlock<f64>,
}

/// What mheta knows of the program between `mheta_init` and
/// `mheta_finalize`.
struct State {
    decl: AppDecl,
    dist: Dist,
    arrays: Vec<Array>,
    /// `1/power - 1` for this rank under `MHETA_CLUSTER` (0: no emulation).
    extra_work: f64,
    work_start: Option<f64>,
    app_written: bool,
    /// The last plan, as JSON (`mheta_report`).
    report: CString,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

/// `MPI_COMM_WORLD` (rsmpi's handles are not `Send`, so the state keeps
/// none).
fn world() -> SimpleCommunicator {
    SimpleCommunicator::world()
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_error(msg: String) -> c_int {
    let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
    -1
}

/// Run `f` on the state, or fail when `mheta_init` has not run.
fn with_state<R>(f: impl FnOnce(&mut State) -> Result<R, String>) -> Result<R, String> {
    let mut g = STATE
        .lock()
        .map_err(|_| "mheta's state is poisoned".to_string())?;
    let st = g
        .as_mut()
        .ok_or_else(|| "mheta_init has not been called".to_string())?;
    f(st)
}

fn status(r: Result<(), String>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => set_error(e),
    }
}

/// # Safety
/// `s` is null or a NUL-terminated string.
unsafe fn text(s: *const c_char, what: &str) -> Result<String, String> {
    if s.is_null() {
        return Err(format!("{what} is NULL"));
    }
    // SAFETY: the caller passes a NUL-terminated string.
    let c = unsafe { CStr::from_ptr(s) };
    c.to_str()
        .map(str::to_owned)
        .map_err(|_| format!("{what} is not UTF-8"))
}

/// Why the last call that returned -1 failed.
#[unsafe(no_mangle)]
pub extern "C" fn mheta_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// Start mheta on `MPI_COMM_WORLD` (after `MPI_Init`): the application's
/// name, its rows, and its GEN_BLOCK distribution (`dist`, one count per
/// rank; NULL: Block). `MHETA_CLUSTER` (a built-in name or a TOML file)
/// emulates this rank's `cpu_power` in `mheta_work_end`.
///
/// # Safety
/// `app` is a NUL-terminated string; `dist` is NULL or points to one
/// count per rank.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mheta_init(app: *const c_char, rows: u64, dist: *const u64) -> c_int {
    // SAFETY: forwarded from the caller.
    let app = match unsafe { text(app, "app") } {
        Ok(a) => a,
        Err(e) => return set_error(e),
    };
    status((|| {
        if !mpi::environment::is_initialized() {
            return Err("mheta_init: call MPI_Init first".into());
        }
        let world = SimpleCommunicator::world();
        let p = world.size() as usize;
        let me = world.rank() as usize;
        let dist = if dist.is_null() {
            Dist::block(p, rows)
        } else {
            // SAFETY: the caller passes one count per rank.
            let d = Dist(unsafe { std::slice::from_raw_parts(dist, p) }.to_vec());
            d.check(p, rows).map_err(|e| format!("mheta_init: {e}"))?;
            d
        };
        let extra_work = match std::env::var("MHETA_CLUSTER") {
            Ok(name) => {
                let c = ClusterSpec::resolve(&name, p)
                    .map_err(|e| format!("mheta_init: MHETA_CLUSTER={name}: {e}"))?;
                1.0 / c.rank[me].cpu_power - 1.0
            }
            Err(_) => 0.0,
        };
        let decl = AppDecl::new(&app, rows, dist.0.clone());
        let mut g = STATE
            .lock()
            .map_err(|_| "mheta's state is poisoned".to_string())?;
        if g.is_some() {
            return Err("mheta_init: already called".into());
        }
        *g = Some(State {
            decl,
            dist,
            arrays: Vec::new(),
            extra_work,
            work_start: None,
            app_written: false,
            report: CString::default(),
        });
        Ok(())
    })())
}

/// Declare a distributed array of `values_per_row` doubles per row, zeroed;
/// `read_only` when the iterations do not change it, `halo` when a stencil
/// reads its neighbours' edge rows. Returns its id (0, 1, ...) or -1.
///
/// # Safety
/// `name` is a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mheta_array(
    name: *const c_char,
    values_per_row: u64,
    read_only: c_int,
    halo: c_int,
) -> c_int {
    // SAFETY: forwarded from the caller.
    let name = match unsafe { text(name, "name") } {
        Ok(n) => n,
        Err(e) => return set_error(e),
    };
    let r = with_state(|st| {
        if values_per_row == 0 {
            return Err(format!("mheta_array {name}: 0 values per row"));
        }
        if st.arrays.iter().any(|a| a.decl.name == name) {
            return Err(format!("mheta_array {name}: declared twice"));
        }
        let me = world().rank() as usize;
        let width = values_per_row as usize;
        let mut decl = ArrayDecl::rows(&name, 8 * values_per_row, read_only != 0, false);
        if halo != 0 {
            decl = decl.with_halo();
        }
        st.decl.arrays.push(decl.clone());
        st.arrays.push(Array {
            decl,
            width,
            rows: RowBlock::zeroed(st.dist.0[me] as usize * width),
        });
        Ok(st.arrays.len() as c_int - 1)
    });
    r.unwrap_or_else(set_error)
}

/// This rank's rows of array `id` (row-major, `values_per_row` each);
/// NULL for an unknown id. The pointer changes when rows move.
#[unsafe(no_mangle)]
pub extern "C" fn mheta_data(id: c_int) -> *mut f64 {
    with_state(|st| {
        let a = usize::try_from(id)
            .ok()
            .and_then(|i| st.arrays.get_mut(i))
            .ok_or_else(|| format!("mheta_data: no array {id}"))?;
        Ok(a.rows.as_mut_ptr())
    })
    .unwrap_or_else(|e| {
        set_error(e);
        std::ptr::null_mut()
    })
}

/// This rank's first global row (0-based) under the distribution in force.
#[unsafe(no_mangle)]
pub extern "C" fn mheta_first_row() -> u64 {
    with_state(|st| Ok(st.dist.offsets()[world().rank() as usize])).unwrap_or(0)
}

/// This rank's rows under the distribution in force.
#[unsafe(no_mangle)]
pub extern "C" fn mheta_local_rows() -> u64 {
    with_state(|st| Ok(st.dist.0[world().rank() as usize])).unwrap_or(0)
}

/// The distribution in force: writes one count per rank into `dist`.
///
/// # Safety
/// `dist` points to room for one count per rank.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mheta_dist(dist: *mut u64) -> c_int {
    status(with_state(|st| {
        if dist.is_null() {
            return Err("mheta_dist: dist is NULL".into());
        }
        // SAFETY: the caller gives room for one count per rank.
        let out = unsafe { std::slice::from_raw_parts_mut(dist, st.dist.0.len()) };
        out.copy_from_slice(&st.dist.0);
        Ok(())
    }))
}

/// Exchange kinds and scalings of `mheta_exchange` (mheta.h's
/// `MHETA_HALO` ... and `MHETA_CONSTANT`, `MHETA_SENDER_ROWS`).
fn kind(k: c_int) -> Option<ExchangeKind> {
    Some(match k {
        0 => ExchangeKind::Halo,
        1 => ExchangeKind::Allgather,
        2 => ExchangeKind::Reduction,
        3 => ExchangeKind::Pipeline,
        _ => return None,
    })
}

/// Declare one exchange of the iteration: its kind, how its size scales
/// with the distribution, its bytes (per row for `MHETA_SENDER_ROWS`) and
/// how many per iteration.
#[unsafe(no_mangle)]
pub extern "C" fn mheta_exchange(
    k: c_int,
    scaling: c_int,
    bytes: u64,
    per_iteration: u32,
) -> c_int {
    status(with_state(|st| {
        let kind = kind(k).ok_or_else(|| format!("mheta_exchange: unknown kind {k}"))?;
        let scaling = match scaling {
            0 => MsgScaling::Constant,
            1 => MsgScaling::SenderRows,
            s => return Err(format!("mheta_exchange: unknown scaling {s}")),
        };
        if scaling == MsgScaling::SenderRows {
            st.decl.msg_scaling = MsgScaling::SenderRows;
        }
        if kind == ExchangeKind::Allgather {
            st.decl.topology = Topology::Fixed;
        }
        st.decl
            .exchanges
            .push(ExchangeDecl::new(kind, scaling, bytes, per_iteration));
        Ok(())
    }))
}

/// Rank 0 writes `app.json` into the trace directory once, under `mheta
/// run`, so that `mheta predict` can read the run.
fn write_app(st: &mut State) -> Result<(), String> {
    if st.app_written || !mheta_runtime::interposer_loaded() {
        return Ok(());
    }
    st.app_written = true;
    st.decl.dist = st.dist.0.clone();
    if world().rank() == 0 {
        let dir = mheta_runtime::trace_dir();
        mheta_trace::write_app(&dir, &st.decl).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Mark the start of an iteration (`MPI_Pcontrol(100)`).
#[unsafe(no_mangle)]
pub extern "C" fn mheta_iteration_begin() -> c_int {
    status(with_state(write_app));
    mheta_runtime::markers::iteration_begin();
    0
}

/// Mark the end of an iteration (`MPI_Pcontrol(101)`).
#[unsafe(no_mangle)]
pub extern "C" fn mheta_iteration_end() -> c_int {
    mheta_runtime::markers::iteration_end();
    0
}

/// Mark the start of a stage, the computation whose time scales with the
/// rows (`MPI_Pcontrol(110)`).
#[unsafe(no_mangle)]
pub extern "C" fn mheta_stage_begin() -> c_int {
    mheta_runtime::markers::stage_begin();
    0
}

/// Mark the end of a stage (`MPI_Pcontrol(111)`).
#[unsafe(no_mangle)]
pub extern "C" fn mheta_stage_end() -> c_int {
    mheta_runtime::markers::stage_end();
    0
}

/// Start a piece of real work (for `MHETA_CLUSTER`'s CPU emulation).
#[unsafe(no_mangle)]
pub extern "C" fn mheta_work_begin() -> c_int {
    status(with_state(|st| {
        st.work_start = Some(mheta_base::os::thread_cpu_s());
        Ok(())
    }))
}

/// End a piece of real work: a rank of `cpu_power` p spins until the piece
/// has taken 1/p of its CPU time (the paper's extra work).
#[unsafe(no_mangle)]
pub extern "C" fn mheta_work_end() -> c_int {
    let r = with_state(|st| Ok((st.work_start.take(), st.extra_work)));
    match r {
        Ok((Some(t), extra)) => {
            mheta_runtime::cpu::spin_extra(t, extra);
            0
        }
        Ok((None, _)) => set_error("mheta_work_end without mheta_work_begin".into()),
        Err(e) => set_error(e),
    }
}

/// Plan on the iterations the interposer recorded (collective; an
/// extended recording ends here, `MPI_Pcontrol(103)`): the model
/// and GBS on rank 0 with the cluster profile (`MHETA_PROFILE`), the cost
/// of the move, and whether it pays over `remaining` iterations. `*moves`
/// becomes 1 when it does, and `dist` (one count per rank) the
/// distribution to run on. Needs `mheta run` (the interposer recording).
///
/// # Safety
/// `moves` points to an int; `dist` to room for one count per rank.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mheta_plan(remaining: u64, moves: *mut c_int, dist: *mut u64) -> c_int {
    status(with_state(|st| {
        if moves.is_null() || dist.is_null() {
            return Err("mheta_plan: NULL argument".into());
        }
        let (plan, report) = plan(st, remaining)?;
        // SAFETY: the caller gives an int and one count per rank.
        unsafe {
            *moves = c_int::from(plan.dist != st.dist);
            std::slice::from_raw_parts_mut(dist, st.dist.0.len()).copy_from_slice(&plan.dist.0);
        }
        st.report = report;
        Ok(())
    }))
}

fn plan(st: &mut State, remaining: u64) -> Result<(mheta_runtime::RunPlan, CString), String> {
    if !mheta_runtime::interposer_loaded() {
        return Err("mheta_plan needs the interposer: start the program under `mheta run`".into());
    }
    let profile = std::env::var_os("MHETA_PROFILE")
        .map(PathBuf::from)
        .ok_or("mheta_plan: set MHETA_PROFILE to a cluster profile (`mheta bench`)")?;
    // An extended recording (MHETA_INSTRUMENT_SECONDS) ends here: the
    // plan reads what was recorded on these rows.
    mheta_runtime::markers::recording_done();
    st.decl.dist = st.dist.0.clone();
    if world().rank() == 0 {
        mheta_trace::write_app(&mheta_runtime::trace_dir(), &st.decl).map_err(|e| e.to_string())?;
    }
    let t = Instant::now();
    let plan = mheta_runtime::plan_in_run(
        &world(),
        &st.decl,
        &st.dist,
        &mheta_runtime::trace_dir(),
        &profile,
        remaining,
        None,
        None,
        None,
    )
    .map_err(|e| e.to_string())?;
    let mut j = serde_json::json!({
        "from_dist": st.dist.0,
        "dist": plan.dist.0,
        "moved": plan.dist != st.dist,
        "plan_s": t.elapsed().as_secs_f64(),
        "predicted_from_s": plan.predicted_current_s,
        "predicted_from_point_s": plan.point_current_s,
    });
    if let (Some(f), Some(d), Some(c)) = (&plan.found, &plan.decision, &plan.cost) {
        j["chosen_dist"] = serde_json::json!(f.dist);
        j["predicted_chosen_s"] = serde_json::json!(f.predicted_s);
        j["predicted_chosen_point_s"] = serde_json::json!(plan.point_chosen_s);
        j["reason"] = serde_json::json!(d.reason);
        j["predicted_gain_s"] = serde_json::json!(d.gain_s);
        j["predicted_move_s"] = serde_json::json!(c.total_s);
        j["move_bytes"] = serde_json::json!(c.bytes);
    }
    Ok((plan, CString::new(j.to_string()).unwrap_or_default()))
}

/// Move every declared array to `dist` (one count per rank; collective).
/// Afterwards `mheta_first_row`, `mheta_local_rows` and `mheta_data`
/// describe the new rows.
///
/// # Safety
/// `dist` points to one count per rank.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mheta_move(dist: *const u64) -> c_int {
    status(with_state(|st| {
        if dist.is_null() {
            return Err("mheta_move: dist is NULL".into());
        }
        // SAFETY: the caller passes one count per rank.
        let new = Dist(unsafe { std::slice::from_raw_parts(dist, st.dist.0.len()) }.to_vec());
        new.check(st.dist.0.len(), st.decl.rows)
            .map_err(|e| format!("mheta_move: {e}"))?;
        move_to(st, new);
        Ok(())
    }))
}

fn move_to(st: &mut State, new: Dist) {
    let world = world();
    for a in &mut st.arrays {
        a.rows.redistribute(&world, &st.dist, &new, a.width);
    }
    st.dist = new;
}

/// `--auto` in one call, after `mheta_iteration_end` of iteration `it` (0-based)
/// of `iters`: right after the interposer's recorded iterations, plan and
/// move if it pays. Returns 1 when rows moved, 0 when not (or not yet), -1
/// on error.
#[unsafe(no_mangle)]
pub extern "C" fn mheta_auto(it: u64, iters: u64) -> c_int {
    let r = with_state(|st| {
        if it + 1 != mheta_runtime::instrumented_iterations().end {
            return Ok(0);
        }
        let (plan, report) = plan(st, iters.saturating_sub(it + 1))?;
        st.report = report;
        if plan.dist == st.dist {
            return Ok(0);
        }
        let t = Instant::now();
        move_to(st, plan.dist);
        let mut j: serde_json::Value =
            serde_json::from_str(st.report.to_str().unwrap_or("{}")).unwrap_or_default();
        j["measured_move_s"] = serde_json::json!(t.elapsed().as_secs_f64());
        st.report = CString::new(j.to_string()).unwrap_or_default();
        Ok(1)
    });
    r.unwrap_or_else(set_error)
}

/// The last plan as one JSON line (`from_dist`, `dist`, `moved`,
/// `reason`, the predicted figures, `measured_move_s`); "" before any
/// plan. Rank 0 has every field; other ranks the distributions.
#[unsafe(no_mangle)]
pub extern "C" fn mheta_report() -> *const c_char {
    static EMPTY: &CStr = c"";
    let g = STATE.lock();
    match g.as_ref().ok().and_then(|g| g.as_ref()) {
        // The state lives until mheta_finalize; so does the string.
        Some(st) => st.report.as_ptr(),
        None => EMPTY.as_ptr(),
    }
}

/// Free mheta's arrays and state (before `MPI_Finalize`).
#[unsafe(no_mangle)]
pub extern "C" fn mheta_finalize() -> c_int {
    match STATE.lock() {
        Ok(mut g) => {
            *g = None;
            0
        }
        Err(_) => set_error("mheta's state is poisoned".into()),
    }
}

/// Before the program's `main`: an MPI library of the other family than
/// the one this library was built for stops the process with a message
/// naming both ([`mheta_base::mpi_abi`]).
extern "C" fn check_mpi_family() {
    let built_for =
        mheta_base::mpi_abi::Family::of_handle_size(std::mem::size_of::<mpi::ffi::MPI_Comm>());
    mheta_base::mpi_abi::stop_on_foreign("libmheta.so", built_for);
}

#[used]
#[unsafe(link_section = ".init_array")]
static CHECK_MPI_FAMILY: extern "C" fn() = check_mpi_family;
