//! The Fortran lifecycle entry points of every binding: `MPI_INIT`,
//! `MPI_INIT_THREAD`, `MPI_FINALIZE`, `MPI_ABORT` and `MPI_PCONTROL`.

use super::convert::{Fint, int};
use super::{Binding, Inside, resolve};
use crate::tools;
use std::sync::atomic::AtomicUsize;

/// One lifecycle wrapper (see [`lifecycle!`]).
macro_rules! lifecycle_fn {
    ($export:expr, $real:expr, $fname:ident, ( $($arg:ident : $ty:ty),* ), [$($ierr:ident)?],
     { $($before:tt)* }, { $($after:tt)* }) => {
        #[unsafe(export_name = $export)]
        #[doc = concat!("Interposed Fortran `", $export, "`: forwards to `", $real, "`.")]
        pub unsafe extern "C" fn $fname($($arg: $ty),*) {
            static REAL: AtomicUsize = AtomicUsize::new(0);
            // SAFETY: the symbol is the MPI library's Fortran binding of
            // the same signature.
            let real: unsafe extern "C" fn($($ty),*) =
                unsafe { std::mem::transmute(resolve(&REAL, concat!($real, "\0"))) };
            let _inside = Inside::enter(Binding::Legacy);
            $(
                let mut own_ierr: Fint = 0;
                let $ierr: *mut Fint = if $ierr.is_null() { &mut own_ierr } else { $ierr };
            )?
            $($before)*
            // SAFETY: the caller's arguments.
            unsafe { real($($arg),*) };
            if true $(&& int($ierr) == 0)? {
                $($after)*
            }
        }
    };
}

/// MPI's start and end, each as `mpi_x_` (forwarding to
/// `pmpi_x_`) and as `use mpi_f08`'s `mpi_x_f08_` (forwarding to the next
/// `mpi_x_f08_`; its `ierror` may be absent). `before` runs before the
/// call, `after` once it has succeeded.
macro_rules! lifecycle {
    ($( $name:ident => $real:literal ( $($arg:ident : $ty:ty),* ) $(-> $ierr:ident)?
        { before: { $($before:tt)* } after: { $($after:tt)* } } )*) => {
        $(
            lifecycle_fn!(stringify!($name), $real, $name, ($($arg: $ty),*), [$($ierr)?],
                          { $($before)* }, { $($after)* });
            const _: () = {
                lifecycle_fn!(concat!(stringify!($name), "f08_"), concat!(stringify!($name), "f08_"), f08,
                              ($($arg: $ty),*), [$($ierr)?], { $($before)* }, { $($after)* });
            };
        )*
    };
}

lifecycle! {
    mpi_init_ => "pmpi_init_"(ierr: *mut Fint) -> ierr {
        before: {}
        after: { crate::wrappers::start(); }
    }
    mpi_init_thread_ => "pmpi_init_thread_"(required: *const Fint, provided: *mut Fint, ierr: *mut Fint) -> ierr {
        before: {}
        after: { crate::wrappers::start(); }
    }
    mpi_finalize_ => "pmpi_finalize_"(ierr: *mut Fint) -> ierr {
        before: { for t in tools::tools() { t.finalize(); } }
        after: {}
    }
    mpi_abort_ => "pmpi_abort_"(comm_: *const Fint, errorcode: *const Fint, ierr: *mut Fint) -> ierr {
        before: { for t in tools::tools() { t.emergency(false); } }
        after: {}
    }
}

// MPI_PCONTROL(LEVEL): no IERROR in `use mpi`. `use mpi_f08`'s takes an
// optional IERROR after LEVEL in MPICH and none in Open MPI: passed
// through unread.
lifecycle_fn!("mpi_pcontrol_", "pmpi_pcontrol_", mpi_pcontrol_, (level: *const Fint), [],
              { for t in tools::tools() { t.pcontrol(int(level)); } }, {});
const _: () = {
    lifecycle_fn!("mpi_pcontrol_f08_", "mpi_pcontrol_f08_", f08, (level: *const Fint, ierr: *mut Fint), [],
                  { for t in tools::tools() { t.pcontrol(int(level)); } }, {});
};
