//! The interposer's lifecycle entry points: `MPI_Init`,
//! `MPI_Init_thread`, `MPI_Finalize`, `MPI_Abort` and `MPI_Pcontrol`, and
//! [`start`], what runs after MPI is initialised (the Fortran bindings
//! call it too).

#![allow(clippy::missing_safety_doc)]

use crate::tools;
use mpi_sys::MPI_Comm;
use std::os::raw::{c_char, c_int};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set by [`start`]: MPI's initialisation passed through this library.
static STARTED: AtomicBool = AtomicBool::new(false);

/// When the process ends: if MPI was initialised without `MPI_Init`
/// passing through this library, its calls bypassed it (an MPI linked
/// statically into the program, or a binding this library does not wrap,
/// calling the library's `PMPI_*` or internals), so nothing was recorded. Says so on stderr instead of leaving an empty
/// trace directory unexplained. Silent for processes that never
/// initialised MPI (the launcher and its daemons carry the preload too).
extern "C" fn check_seen() {
    if STARTED.load(Ordering::Relaxed) || tools::tools().is_empty() {
        return;
    }
    let (mut init, mut fin) = (0, 0);
    // SAFETY: MPI_Initialized and MPI_Finalized may be called at any time,
    // before MPI_Init and after MPI_Finalize.
    unsafe {
        mpi_sys::PMPI_Initialized(&mut init);
        mpi_sys::PMPI_Finalized(&mut fin);
    }
    if init != 0 || fin != 0 {
        let msg = format!(
            "mheta: process {}: MPI was initialised without MPI_Init passing through mheta's \
             interposer (an MPI linked statically, or a binding it does not wrap?): none of its \
             MPI calls were seen. The interposer sees C, `use mpi`, `mpif.h` and `use mpi_f08` \
             calls.\n",
            std::process::id()
        );
        // SAFETY: a plain write of a valid buffer to stderr (the process is
        // ending: no Rust stdio).
        unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
    }
}

#[used]
#[unsafe(link_section = ".fini_array")]
static CHECK_SEEN_AT_EXIT: extern "C" fn() = check_seen;

/// After `PMPI_Init*`: register this thread first (it becomes thread 0),
/// then start the tools and the signal handlers.
pub(crate) fn start() {
    STARTED.store(true, Ordering::Relaxed);
    let (mut rank, mut size) = (0, 1);
    // SAFETY: MPI is initialised; the out-pointers are valid locals.
    unsafe {
        mpi_sys::PMPI_Comm_rank(mpi_sys::RSMPI_COMM_WORLD, &mut rank);
        mpi_sys::PMPI_Comm_size(mpi_sys::RSMPI_COMM_WORLD, &mut size);
    }
    // A job started by MPI_Comm_spawn numbers its ranks from 0 too: its
    // files go to a subdirectory named after its rank 0's pid (every rank
    // of the child job calls MPI_Init, so the broadcast is collective).
    // SAFETY: MPI is initialised; valid out-pointers and a one-int buffer.
    unsafe {
        let mut parent = mpi_sys::RSMPI_COMM_NULL;
        if mpi_sys::PMPI_Comm_get_parent(&mut parent) == 0 && parent.0 != mpi_sys::RSMPI_COMM_NULL.0
        {
            let mut pid = std::process::id() as c_int;
            mpi_sys::PMPI_Bcast(
                (&mut pid as *mut c_int).cast(),
                1,
                mpi_sys::RSMPI_INT32_T,
                0,
                mpi_sys::RSMPI_COMM_WORLD,
            );
            mheta_trace::env::set_spawned(&pid.to_string());
        }
    }
    crate::clock::init();
    crate::threads::register_this_thread();
    for t in tools::tools() {
        t.init(rank as u32, size as u32);
    }
    crate::signals::install();
}

/// Interposed `MPI_Init`: initialises MPI, then the tools.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    // SAFETY: the caller's arguments, passed through unchanged.
    let rc = unsafe { mpi_sys::PMPI_Init(argc, argv) };
    if rc == 0 && !crate::fortran::inside() {
        start();
    }
    rc
}

/// Interposed `MPI_Init_thread`: initialises MPI, then the tools.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    // SAFETY: the caller's arguments, passed through unchanged.
    let rc = unsafe { mpi_sys::PMPI_Init_thread(argc, argv, required, provided) };
    if rc == 0 && !crate::fortran::inside() {
        start();
    }
    rc
}

/// Interposed `MPI_Finalize`: the tools finish (the summary gathers its
/// report) while MPI still works.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    for t in tools::tools().iter().filter(|_| !crate::fortran::inside()) {
        t.finalize();
    }
    // SAFETY: plain forwarding.
    unsafe { mpi_sys::PMPI_Finalize() }
}

/// Interposed `MPI_Abort`: the tools write what they can without
/// communicating, then MPI aborts.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Abort(comm: MPI_Comm, errorcode: c_int) -> c_int {
    for t in tools::tools().iter().filter(|_| !crate::fortran::inside()) {
        t.emergency(false);
    }
    // SAFETY: plain forwarding.
    unsafe { mpi_sys::PMPI_Abort(comm, errorcode) }
}

/// Interposed `MPI_Pcontrol`: mheta's iteration and stage markers and the
/// tools' levels. The standard declares it variadic; no level we know
/// takes further arguments, and on the C ABIs we support the level arrives
/// in the same register either way, so the extra arguments are not read.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Pcontrol(level: c_int) -> c_int {
    for t in tools::tools().iter().filter(|_| !crate::fortran::inside()) {
        t.pcontrol(level);
    }
    // SAFETY: forwarding the level to the next profiling layer.
    unsafe { mpi_sys::PMPI_Pcontrol(level) }
}
