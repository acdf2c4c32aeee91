//! What the Fortran wrappers ([`super`]) convert: Fortran handles,
//! statuses and request arrays to C ones, the requests a `Wait*`/`Test*`
//! call completed, and Fortran's `MPI_IN_PLACE` to C's.

use crate::mpi_util::*;
use crate::wrappers::Pending;
use mheta_trace::What;
use mpi_sys::{MPI_Comm, MPI_Datatype, MPI_Request, MPI_Status};
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Fortran INTEGER (`MPI_Fint`).
pub(super) type Fint = c_int;
/// Fortran's `MPI_STATUS_SIZE`: a C status in INTEGERs (6 in Open MPI,
/// 5 in MPICH and its family).
pub(super) const STATUS_SIZE: usize =
    std::mem::size_of::<MPI_Status>() / std::mem::size_of::<Fint>();

unsafe extern "C" {
    // The standard's C names of Fortran's MPI_STATUS(ES)_IGNORE (MPI-2.2),
    // exported alike by Open MPI and MPICH.
    static MPI_F_STATUS_IGNORE: *mut Fint;
    static MPI_F_STATUSES_IGNORE: *mut Fint;
}

pub(super) fn comm(f: *const Fint) -> MPI_Comm {
    // SAFETY: f points at the caller's Fortran handle.
    unsafe { mpi_sys::RSMPI_Comm_f2c(*f) }
}

pub(super) fn dtype(f: *const Fint) -> MPI_Datatype {
    // SAFETY: f points at the caller's Fortran handle.
    unsafe { mpi_sys::RSMPI_Type_f2c(*f) }
}

pub(super) fn request(f: *const Fint) -> MPI_Request {
    // SAFETY: f points at the caller's Fortran handle.
    unsafe { mpi_sys::RSMPI_Request_f2c(*f) }
}

pub(super) fn int(f: *const Fint) -> c_int {
    // SAFETY: f points at the caller's INTEGER.
    unsafe { *f }
}

/// `status`, or `own` when the caller passed `MPI_STATUS_IGNORE`.
pub(super) fn own_fstatus(status: *mut Fint, own: &mut [Fint; STATUS_SIZE]) -> *mut Fint {
    // SAFETY: the MPI library sets the pointer before MPI_Init returns.
    if std::ptr::eq(status, unsafe { MPI_F_STATUS_IGNORE }) {
        own.as_mut_ptr()
    } else {
        status
    }
}

/// Statuses for `n` requests (see [`own_fstatus`]).
pub(super) fn own_fstatuses(statuses: *mut Fint, n: usize, own: &mut Vec<Fint>) -> *mut Fint {
    // SAFETY: as in own_fstatus.
    if std::ptr::eq(statuses, unsafe { MPI_F_STATUSES_IGNORE }) {
        own.resize(STATUS_SIZE * n.max(1), 0);
        own.as_mut_ptr()
    } else {
        statuses
    }
}

/// A Fortran status as a C one.
pub(super) fn c_status(f: *const Fint) -> MPI_Status {
    let mut st = blank_status();
    // SAFETY: f points at a filled Fortran status.
    unsafe { mpi_sys::PMPI_Status_f2c(f, &mut st) };
    st
}

/// `n` Fortran request handles as C ones (read before the call that may
/// complete and null them).
pub(super) fn c_requests(reqs: *const Fint, n: *const Fint) -> Vec<MPI_Request> {
    // SAFETY: the caller passes `n` Fortran request handles.
    (0..int(n).max(0) as usize)
        .map(|i| request(unsafe { reqs.add(i) }))
        .collect()
}

/// The first `n` Fortran statuses as C ones.
pub(super) fn c_statuses(f: *const Fint, n: usize) -> Vec<MPI_Status> {
    // SAFETY: MPI filled `n` statuses at f.
    (0..n)
        .map(|k| c_status(unsafe { f.add(k * STATUS_SIZE) }))
        .collect()
}

/// What a Fortran `Wait*`/`Test*` completed: the `count` 1-based
/// `indices` (`count` MPI_UNDEFINED or negative: none) with their
/// statuses in order.
pub(super) fn completed(
    pending: Pending,
    count: c_int,
    indices: *const Fint,
    statuses: *const Fint,
) -> What {
    if count <= 0 || count == mpi_sys::MPI_UNDEFINED {
        return pending.none();
    }
    // SAFETY: MPI set `count` indices.
    let which: Vec<usize> = (0..count as usize)
        .map(|k| unsafe { *indices.add(k) })
        .filter(|&i| i >= 1)
        .map(|i| i as usize - 1)
        .collect();
    let sts = c_statuses(statuses, which.len());
    pending.done(&which, sts.as_ptr())
}

/// A Fortran buffer argument as the C helpers read it: Fortran's
/// `MPI_IN_PLACE` (Open MPI's `mpi_fortran_in_place_` common block, or
/// the address MPICH keeps in `MPIR_F_MPI_IN_PLACE`) becomes C's.
pub(super) fn fbuf(p: *const c_void) -> *const c_void {
    static OMPI: AtomicUsize = AtomicUsize::new(usize::MAX);
    static MPICH: AtomicUsize = AtomicUsize::new(usize::MAX);
    let find = |cache: &AtomicUsize, names: &[&str]| {
        let mut v = cache.load(Ordering::Relaxed);
        if v == usize::MAX {
            v = names
                .iter()
                .map(|n| {
                    // SAFETY: a NUL-terminated name; RTLD_DEFAULT searches
                    // every loaded object.
                    unsafe { libc::dlsym(libc::RTLD_DEFAULT, n.as_ptr() as *const c_char) as usize }
                })
                .find(|&a| a != 0)
                .unwrap_or(0);
            cache.store(v, Ordering::Relaxed);
        }
        v
    };
    let ompi = find(
        &OMPI,
        &[
            "mpi_fortran_in_place_\0",
            "mpi_fortran_in_place\0",
            "mpi_fortran_in_place__\0",
            "MPI_FORTRAN_IN_PLACE\0",
        ],
    );
    let mpich = find(&MPICH, &["MPIR_F_MPI_IN_PLACE\0"]);
    // SAFETY: MPICH's variable holds the address of its Fortran
    // MPI_IN_PLACE once MPI_Init has run (null before).
    let mpich_in_place = if mpich != 0 {
        unsafe { *(mpich as *const usize) }
    } else {
        0
    };
    let a = p as usize;
    if a != 0 && (a == ompi || a == mpich_in_place) {
        usize::MAX as *const c_void
    } else {
        p
    }
}

pub(super) fn recv_msg(c: MPI_Comm, f: *const Fint) -> mheta_trace::Msg {
    let st = c_status(f);
    // SAFETY: st is a filled status.
    unsafe { msg_from_status(c, &st) }
}
