//! What the Fortran wrappers ([`super`]) convert: Fortran handles,
//! statuses and request arrays to C ones, the requests a `Wait*`/`Test*`
//! call completed, and Fortran's `MPI_IN_PLACE` to C's.

use super::{Binding, binding};
use crate::mpi_util::*;
use crate::wrappers::Pending;
use mheta_trace::What;
use mpi_sys::{MPI_Comm, MPI_Datatype, MPI_Request, MPI_Status};
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

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

/// The address of the loaded symbol `name` (NUL-terminated), 0 when no
/// loaded object has it; looked up once.
fn symbol(cache: &AtomicUsize, name: &str) -> usize {
    let mut v = cache.load(Ordering::Relaxed);
    if v == usize::MAX {
        // SAFETY: a NUL-terminated name; RTLD_DEFAULT searches every
        // loaded object.
        v = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr() as *const c_char) as usize };
        cache.store(v, Ordering::Relaxed);
    }
    v
}

/// The value of the loaded pointer variable `name` (see [`symbol`]), 0
/// when it is not loaded.
fn pointer(cache: &AtomicUsize, name: &str) -> usize {
    match symbol(cache, name) {
        0 => 0,
        // SAFETY: the symbol is a pointer variable the MPI library sets
        // before MPI_Init returns.
        a => unsafe { *(a as *const usize) },
    }
}

/// Is `status` Fortran's `MPI_STATUS_IGNORE`? That of `use mpi` (the
/// standard's `MPI_F_STATUS_IGNORE`) or of `use mpi_f08`
/// (`MPI_F08_STATUS_IGNORE`: its own object in MPICH, the same as
/// `use mpi`'s in Open MPI, which does not export the name).
fn status_ignored(status: *const Fint, statuses: bool) -> bool {
    static F08: AtomicUsize = AtomicUsize::new(usize::MAX);
    static F08S: AtomicUsize = AtomicUsize::new(usize::MAX);
    // SAFETY: the MPI library sets the pointers before MPI_Init returns.
    let (f, f08) = unsafe {
        if statuses {
            (
                MPI_F_STATUSES_IGNORE,
                pointer(&F08S, "MPI_F08_STATUSES_IGNORE\0"),
            )
        } else {
            (
                MPI_F_STATUS_IGNORE,
                pointer(&F08, "MPI_F08_STATUS_IGNORE\0"),
            )
        }
    };
    std::ptr::eq(status, f) || (f08 != 0 && status as usize == f08)
}

/// `status`, or `own` when the caller passed `MPI_STATUS_IGNORE`.
pub(super) fn own_fstatus(status: *mut Fint, own: &mut [Fint; STATUS_SIZE]) -> *mut Fint {
    if status_ignored(status, false) {
        own.as_mut_ptr()
    } else {
        status
    }
}

/// Statuses for `n` requests (see [`own_fstatus`]).
pub(super) fn own_fstatuses(statuses: *mut Fint, n: usize, own: &mut Vec<Fint>) -> *mut Fint {
    if status_ignored(statuses, true) {
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

/// What a Fortran `Wait*`/`Test*` completed: the `count` `indices`
/// (`count` MPI_UNDEFINED or negative: none) with their statuses in
/// order. The indices count from 1, or from what `use mpi_f08`'s
/// `MPI_Waitany` was seen to report ([`f08_index_base`]).
pub(super) fn completed(
    pending: Pending,
    count: c_int,
    indices: *const Fint,
    statuses: *const Fint,
) -> What {
    if count <= 0 || count == mpi_sys::MPI_UNDEFINED {
        return pending.none();
    }
    let base = match binding() {
        Binding::Legacy => 1,
        Binding::F08 | Binding::Descriptor => f08_index_base(),
    };
    // SAFETY: MPI set `count` indices.
    let which: Vec<usize> = (0..count as usize)
        .map(|k| unsafe { *indices.add(k) })
        .filter(|&i| i >= base && i != mpi_sys::MPI_UNDEFINED)
        .map(|i| (i - base) as usize)
        .collect();
    let sts = c_statuses(statuses, which.len());
    pending.done(&which, sts.as_ptr())
}

/// A Fortran buffer argument as the C helpers read it: under MPICH's
/// `use mpi_f08` ([`Binding::Descriptor`]) the address in its descriptor;
/// and Fortran's `MPI_IN_PLACE` becomes C's. That is Open MPI's
/// `mpi_fortran_in_place_` common block (`use mpi` and `use mpi_f08`
/// alike), the address MPICH keeps in `MPIR_F_MPI_IN_PLACE` (`use mpi`),
/// or MPICH's `MPIR_F08_MPI_IN_PLACE` (`use mpi_f08`).
pub(super) fn fbuf(p: *const c_void) -> *const c_void {
    static OMPI: [AtomicUsize; 4] = [const { AtomicUsize::new(usize::MAX) }; 4];
    static MPICH: AtomicUsize = AtomicUsize::new(usize::MAX);
    static MPICH_F08: AtomicUsize = AtomicUsize::new(usize::MAX);
    let p = if binding() == Binding::Descriptor && !p.is_null() {
        // SAFETY: MPICH's f08ts entry points receive an array descriptor,
        // whose first member is the data's address.
        unsafe { *(p as *const *const c_void) }
    } else {
        p
    };
    let a = p as usize;
    if a == 0 {
        return p;
    }
    let ompi = [
        "mpi_fortran_in_place_\0",
        "mpi_fortran_in_place\0",
        "mpi_fortran_in_place__\0",
        "MPI_FORTRAN_IN_PLACE\0",
    ]
    .iter()
    .zip(&OMPI)
    .map(|(n, c)| symbol(c, n))
    .find(|&v| v != 0)
    .unwrap_or(0);
    if a == ompi
        || a == pointer(&MPICH, "MPIR_F_MPI_IN_PLACE\0")
        || a == symbol(&MPICH_F08, "MPIR_F08_MPI_IN_PLACE\0")
    {
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

/// [`recv_msg`] of a pending receive completed, from the ranks it kept
/// when posted ([`Sources`]), which it releases.
pub(super) fn recv_msg_of(s: Sources, f: *const Fint) -> mheta_trace::Msg {
    let st = c_status(f);
    // SAFETY: st is a filled status of a receive on the communicator
    // whose ranks `s` holds.
    let m = unsafe { s.msg_from_status(&st) };
    s.release();
    m
}

/// The index `use mpi_f08`'s `MPI_Waitany`, `MPI_Testany`,
/// `MPI_Waitsome` and `MPI_Testsome` give the first request. The standard
/// says 1, and Open MPI gives it; MPICH 4.0.x gives 0 in all four
/// (pmodels/mpich#6270, fixed in 4.1). Seen, not assumed: once a process,
/// the library's own `mpi_waitany_f08_` is given `[MPI_REQUEST_NULL, r]`,
/// where `r` is an `MPI_Ibarrier` on `MPI_COMM_SELF` (no message leaves
/// the process), and the index it reports for `r` less 1 is the base.
pub(super) fn f08_index_base() -> c_int {
    static BASE: AtomicI32 = AtomicI32::new(-1);
    static WAITANY: AtomicUsize = AtomicUsize::new(0);
    let b = BASE.load(Ordering::Relaxed);
    if b >= 0 {
        return b;
    }
    type WaitanyFn = unsafe extern "C" fn(*const Fint, *mut Fint, *mut Fint, *mut Fint, *mut Fint);
    // SAFETY: the MPI library's `use mpi_f08` MPI_Waitany(count,
    // array_of_requests, index, status, ierror).
    let waitany: WaitanyFn =
        unsafe { std::mem::transmute(super::resolve(&WAITANY, "mpi_waitany_f08_\0")) };
    let mut r: MPI_Request = unsafe { mpi_sys::RSMPI_REQUEST_NULL };
    // SAFETY: a non-blocking barrier of this process alone.
    let rc = unsafe { mpi_sys::PMPI_Ibarrier(mpi_sys::RSMPI_COMM_SELF, &mut r) };
    let mut base = 1;
    if rc == 0 {
        // SAFETY: C handles to Fortran ones.
        let mut reqs = unsafe {
            [
                mpi_sys::RSMPI_Request_c2f(mpi_sys::RSMPI_REQUEST_NULL),
                mpi_sys::RSMPI_Request_c2f(r),
            ]
        };
        let (count, mut index, mut ierr) = (2 as Fint, 0 as Fint, 0 as Fint);
        let mut st = [0 as Fint; STATUS_SIZE];
        // SAFETY: two Fortran requests, a status and an error code of ours.
        unsafe {
            waitany(
                &count,
                reqs.as_mut_ptr(),
                &mut index,
                st.as_mut_ptr(),
                &mut ierr,
            )
        };
        match (ierr, index) {
            (0, 1 | 2) => base = index - 1,
            _ => crate::warn(format!(
                "mheta: probing use mpi_f08's MPI_Waitany gave index {index} (error {ierr}) for the second of two requests; taking indices from 1"
            )),
        }
    } else {
        crate::warn(format!(
            "mheta: MPI_Ibarrier on MPI_COMM_SELF failed ({rc}) while probing use mpi_f08's MPI_Waitany; taking indices from 1"
        ));
    }
    BASE.store(base, Ordering::Relaxed);
    base
}
