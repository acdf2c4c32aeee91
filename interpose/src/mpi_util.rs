//! Small reads of MPI state the wrappers need to describe a call: sizes,
//! world ranks, statuses. All go through `PMPI_*` so they are never seen
//! by the tools themselves.

use mheta_trace::Msg;
use mpi_sys::{MPI_Comm, MPI_Datatype, MPI_Status};
use std::os::raw::c_int;

/// A zeroed status to stand in for `MPI_STATUS_IGNORE`.
pub fn blank_status() -> MPI_Status {
    // SAFETY: MPI_Status is a plain C struct of integers.
    unsafe { std::mem::zeroed() }
}

/// `status`, or `own` when the caller passed `MPI_STATUS_IGNORE`.
pub fn own_status(status: *mut MPI_Status, own: &mut MPI_Status) -> *mut MPI_Status {
    // SAFETY: reading an extern static constant.
    if status == unsafe { mpi_sys::RSMPI_STATUS_IGNORE } {
        own
    } else {
        status
    }
}

/// Statuses for `n` requests: the caller's array, or `own` (resized to
/// `n`) when the caller passed `MPI_STATUSES_IGNORE`.
pub fn own_statuses(
    statuses: *mut MPI_Status,
    n: usize,
    own: &mut Vec<MPI_Status>,
) -> *mut MPI_Status {
    // SAFETY: reading an extern static constant.
    if statuses == unsafe { mpi_sys::RSMPI_STATUSES_IGNORE } {
        own.resize(n.max(1), blank_status());
        own.as_mut_ptr()
    } else {
        statuses
    }
}

/// Bytes in `count` elements of `dt`.
pub fn bytes(count: c_int, dt: MPI_Datatype) -> u64 {
    let mut size: c_int = 0;
    // SAFETY: dt is the caller's datatype handle, size a valid local.
    unsafe { mpi_sys::PMPI_Type_size(dt, &mut size) };
    (count.max(0) as u64) * (size.max(0) as u64)
}

/// Bytes in `sum(counts[0..n])` elements of `dt`.
///
/// # Safety
/// `counts` points at `n` integers (or is null).
pub unsafe fn bytes_v(counts: *const c_int, n: u32, dt: MPI_Datatype) -> u64 {
    if counts.is_null() {
        return 0;
    }
    // SAFETY: as promised by the caller.
    let sum: i64 = (0..n as usize)
        .map(|i| unsafe { *counts.add(i) }.max(0) as i64)
        .sum();
    bytes(1, dt) * sum as u64
}

/// Bytes a completed receive or read delivered, from its status.
///
/// # Safety
/// `st` points at a status filled by a completed operation.
pub unsafe fn status_bytes(st: *const MPI_Status) -> u64 {
    let mut count: c_int = 0;
    // SAFETY: as promised; counting in MPI_UINT8_T gives bytes whatever
    // the operation's datatype.
    let rc = unsafe { mpi_sys::PMPI_Get_count(st, mpi_sys::RSMPI_UINT8_T, &mut count) };
    if rc != 0 || count < 0 {
        0
    } else {
        count as u64
    }
}

/// Translate a rank of `comm` into its `MPI_COMM_WORLD` rank.
pub fn world_rank(comm: MPI_Comm, r: c_int) -> i32 {
    // SAFETY: reading an extern static handle.
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
    // SAFETY: as promised by the caller.
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
