//! Small reads of MPI state the wrappers need to describe a call: sizes,
//! world ranks, statuses. All go through `PMPI_*` so they are never seen
//! by the tools themselves.

use mheta_trace::Msg;
use mpi_sys::{MPI_Comm, MPI_Count, MPI_Datatype, MPI_Group, MPI_Status};
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

/// `MPI_IN_PLACE`: Open MPI's `(void *) 1` or MPICH's `(void *) -1`;
/// neither can be a buffer's address. (mpi-sys exports no handle for it.)
pub fn in_place(p: *const std::os::raw::c_void) -> bool {
    p as usize == 1 || p as usize == usize::MAX
}

/// Bytes in `count` elements of `dt` (0 for `MPI_DATATYPE_NULL`, which a
/// caller may pass where the datatype is ignored). `count` is a C `int` or,
/// in MPI-4's large-count calls, an `MPI_Count`; the type's size is read as
/// an `MPI_Count` too, so a type past 2 GiB is not misread.
pub fn bytes(count: impl Into<i64>, dt: MPI_Datatype) -> u64 {
    let count = count.into();
    // SAFETY: reading an extern static handle.
    if count <= 0 || dt == unsafe { mpi_sys::RSMPI_DATATYPE_NULL } {
        return 0;
    }
    let mut size: MPI_Count = 0;
    // SAFETY: dt is the caller's datatype handle, size a valid local.
    unsafe { mpi_sys::PMPI_Type_size_x(dt, &mut size) };
    (count as u64).saturating_mul(size.max(0) as u64)
}

/// Bytes in `sum(counts[0..n])` elements of `dt` (`int` or `MPI_Count`
/// counts).
///
/// # Safety
/// `counts` points at `n` integers (or is null).
pub unsafe fn bytes_v<C: Copy + Into<i64>>(counts: *const C, n: u32, dt: MPI_Datatype) -> u64 {
    if counts.is_null() {
        return 0;
    }
    // SAFETY: as promised by the caller.
    let sum: i64 = (0..n as usize)
        .map(|i| unsafe { *counts.add(i) }.into().max(0))
        .sum();
    bytes(1, dt) * sum as u64
}

/// Bytes a completed receive or read delivered, from its status.
///
/// # Safety
/// `st` points at a status filled by a completed operation.
pub unsafe fn status_bytes(st: *const MPI_Status) -> u64 {
    let mut count: MPI_Count = 0;
    // SAFETY: as promised; counting in MPI_UINT8_T gives bytes whatever
    // the operation's datatype, and as an MPI_Count past 2 GiB too.
    let rc = unsafe { mpi_sys::PMPI_Get_elements_x(st, mpi_sys::RSMPI_UINT8_T, &mut count) };
    if rc != 0 || count < 0 {
        0
    } else {
        count as u64
    }
}

/// Whether `comm` is an intercommunicator (false for `MPI_COMM_NULL`).
pub fn is_inter(comm: MPI_Comm) -> bool {
    // SAFETY: reading an extern static handle.
    if comm == unsafe { mpi_sys::RSMPI_COMM_NULL } {
        return false;
    }
    let mut flag: c_int = 0;
    // SAFETY: comm is a communicator of the caller; flag a valid local.
    unsafe { mpi_sys::PMPI_Comm_test_inter(comm, &mut flag) };
    flag != 0
}

/// The number of ranks a peer or root argument of `comm` may name: the
/// remote group's size on an intercommunicator, else the size.
pub fn peer_size(comm: MPI_Comm) -> u32 {
    if !is_inter(comm) {
        return comm_size(comm);
    }
    let mut n = 0;
    // SAFETY: comm is a valid intercommunicator of the caller.
    unsafe { mpi_sys::PMPI_Comm_remote_size(comm, &mut n) };
    n.max(0) as u32
}

/// This process's rank in `comm` (its local group on an
/// intercommunicator).
pub fn comm_rank(comm: MPI_Comm) -> c_int {
    let mut r = 0;
    // SAFETY: comm is a valid communicator of the caller.
    unsafe { mpi_sys::PMPI_Comm_rank(comm, &mut r) };
    r
}

/// Translate a rank of `comm` into its `MPI_COMM_WORLD` rank. Negative
/// ranks (`MPI_PROC_NULL`, `MPI_ROOT`, `MPI_ANY_SOURCE`) are kept. On an
/// intercommunicator a peer or root names a rank of the remote group; a
/// process outside this `MPI_COMM_WORLD` (a spawned child or parent)
/// becomes `MPI_UNDEFINED`.
pub fn world_rank(comm: MPI_Comm, r: c_int) -> i32 {
    if r < 0 {
        return r;
    }
    let s = Sources::of(comm);
    let out = s.world_rank(r);
    s.release();
    out
}

/// How a receive's source, a rank of its communicator, becomes an
/// `MPI_COMM_WORLD` rank ([`world_rank`]'s rule), taken when the receive
/// is posted and read when it completes. MPI lets a program free a
/// communicator while receives on it are pending, so a pending receive
/// keeps its communicator's group (the remote group on an
/// intercommunicator), which stays valid, rather than the communicator's
/// handle, which does not (and may be handed out again).
#[derive(Clone, Copy)]
pub enum Sources {
    /// Ranks are world ranks already (`MPI_COMM_WORLD`, `MPI_COMM_NULL`).
    Same,
    /// Ranks of this group; `owned`: [`Sources::release`] frees it (a
    /// persistent receive's template owns its group, and each start of it
    /// borrows it).
    Group { group: MPI_Group, owned: bool },
}

// SAFETY: a group handle is never dereferenced here, only handed back to
// MPI, which takes it from any thread of the process.
unsafe impl Send for Sources {}

impl Sources {
    /// The ranks of `comm`, owned.
    pub fn of(comm: MPI_Comm) -> Sources {
        // SAFETY: reading extern static handles.
        let (world, null) = unsafe { (mpi_sys::RSMPI_COMM_WORLD, mpi_sys::RSMPI_COMM_NULL) };
        if comm == world || comm == null {
            return Sources::Same;
        }
        // SAFETY: comm is a valid communicator of the caller; the group
        // is freed by `release`.
        let mut group = unsafe { std::mem::zeroed() };
        unsafe {
            if is_inter(comm) {
                mpi_sys::PMPI_Comm_remote_group(comm, &mut group);
            } else {
                mpi_sys::PMPI_Comm_group(comm, &mut group);
            }
        }
        Sources::Group { group, owned: true }
    }

    /// The same ranks, borrowed: releasing it leaves the group to its
    /// owner.
    pub fn borrowed(self) -> Sources {
        match self {
            Sources::Group { group, .. } => Sources::Group {
                group,
                owned: false,
            },
            Sources::Same => Sources::Same,
        }
    }

    /// Rank `r`'s `MPI_COMM_WORLD` rank (negative ranks kept; a rank past
    /// the group, or a process outside this `MPI_COMM_WORLD`:
    /// `MPI_UNDEFINED`).
    pub fn world_rank(self, r: c_int) -> i32 {
        let Sources::Group { group, .. } = self else {
            return r;
        };
        if r < 0 {
            return r;
        }
        let mut out = mpi_sys::MPI_UNDEFINED;
        // SAFETY: group is a valid group (freed only by `release`); r is
        // checked against its size before the translation (Open MPI does
        // not check it); the world group is created and freed here.
        unsafe {
            let mut n = 0;
            mpi_sys::PMPI_Group_size(group, &mut n);
            if r < n {
                let mut wg = std::mem::zeroed();
                mpi_sys::PMPI_Comm_group(mpi_sys::RSMPI_COMM_WORLD, &mut wg);
                mpi_sys::PMPI_Group_translate_ranks(group, 1, &r, wg, &mut out);
                mpi_sys::PMPI_Group_free(&mut wg);
            }
        }
        out
    }

    /// The matched message a completed receive's status describes.
    ///
    /// # Safety
    /// `st` points at a status filled by a completed receive whose
    /// communicator these are the ranks of.
    pub unsafe fn msg_from_status(self, st: *const MPI_Status) -> Msg {
        // SAFETY: as promised by the caller.
        let (src, tag) = unsafe { ((*st).MPI_SOURCE, (*st).MPI_TAG) };
        Msg {
            peer: self.world_rank(src),
            tag,
            // SAFETY: as above.
            bytes: unsafe { status_bytes(st) },
        }
    }

    /// Done with these ranks: an owned group is freed.
    pub fn release(self) {
        if let Sources::Group {
            mut group,
            owned: true,
        } = self
        {
            // SAFETY: an owned group, freed once (a `Sources` is released
            // by whoever took it out of the recorder's maps).
            unsafe { mpi_sys::PMPI_Group_free(&mut group) };
        }
    }
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
    let src = unsafe { (*st).MPI_SOURCE };
    // A negative source (`MPI_PROC_NULL`) needs no group.
    let s = if src < 0 {
        Sources::Same
    } else {
        Sources::of(comm)
    };
    // SAFETY: as above; `s` holds `comm`'s ranks.
    let m = unsafe { s.msg_from_status(st) };
    s.release();
    m
}

/// `comm`'s size.
pub fn comm_size(comm: MPI_Comm) -> u32 {
    let mut n = 0;
    // SAFETY: comm is a valid communicator of the caller.
    unsafe { mpi_sys::PMPI_Comm_size(comm, &mut n) };
    n.max(0) as u32
}
