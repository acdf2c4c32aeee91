//! The macros that expand the wrapper table ([`super`]) into entry
//! points: [`wrappers!`] expands it once with C `int` counts and once, for
//! the entries marked `[c]` and on an MPI that has them, into MPI-4's
//! large-count forms; [`wrapper!`] writes one entry point.

macro_rules! call_or {
    ($call:expr ; $default:expr) => {
        $call
    };
    ( ; $default:expr) => {
        $default
    };
}

/// One entry point: fast path or pre hook, timed `PMPI_*` call, post hook.
macro_rules! wrapper {
    (
        $name:ident => $pname:ident ( $($arg:ident : $ty:ty),* ) as $op:ident {
            $(idle: { $($idle:tt)* })?
            pre: { $($pre:tt)* }
            $(call: $call:expr,)?
            post: $post:expr
        }
    ) => {
        #[unsafe(no_mangle)]
        #[allow(unused_variables, unused_mut)]
        #[doc = concat!("Interposed `", stringify!($name), "`: forwards to `", stringify!($pname), "`.")]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            if !tools::active() || crate::fortran::inside() {
                // SAFETY: the caller's arguments, passed through unchanged.
                let rc = unsafe { mpi_sys::$pname($($arg),*) };
                $( if rc == 0 { $($idle)* } )?
                return rc;
            }
            $($pre)*
            tools::pre(Op::$op);
            let t0 = now();
            // SAFETY: the caller's arguments; a status the caller ignored
            // is replaced by one of ours, which MPI may always write.
            let rc = call_or!($($call)? ; unsafe { mpi_sys::$pname($($arg),*) });
            let t1 = now();
            if rc == 0 {
                $( $($idle)* )?
                let what = $post;
                tools::post(&Call { op: Op::$op, t0, t1, what: &what });
            }
            rc
        }
    };
}

/// An entry marked `[c]` also has MPI-4's large-count form, `MPI_X_c`
/// forwarding to `PMPI_X_c`, when the MPI has them (`cfg(mpi_large_count)`).
#[cfg_attr(not(mpi_large_count), allow(unused_macros))]
macro_rules! large_form {
    ( ; $($entry:tt)*) => {};
    (c ; $name:ident => $pname:ident $($rest:tt)*) => {
        paste::paste! { wrapper! { [<$name _c>] => [<$pname _c>] $($rest)* } }
    };
}

/// The wrapper table (`wrappers.rs`), expanded twice: once with `int`
/// counts (every MPI), once, for the entries marked `[c]`, with MPI-4's
/// `MPI_Count` counts and `MPI_Aint` displacements. In the table a count
/// is written `Count` and a displacement array's entry `Displ`; each
/// module gives them their types.
macro_rules! wrappers {
    ($(
        $name:ident => $pname:ident ( $($arg:ident : $ty:ty),* $(,)? ) as $op:ident $([$large:ident])? {
            $(idle: { $($idle:tt)* })?
            pre: { $($pre:tt)* }
            $(call: $call:expr,)?
            post: $post:expr $(,)?
        }
    )*) => {
        /// The entry points with C `int` counts.
        pub mod int_count {
            use super::*;
            type Count = c_int;
            type Displ = c_int;
            $(
                wrapper! {
                    $name => $pname ( $($arg: $ty),* ) as $op {
                        $(idle: { $($idle)* })?
                        pre: { $($pre)* }
                        $(call: $call,)?
                        post: $post
                    }
                }
            )*
        }

        /// MPI-4's large-count entry points (`MPI_Send_c`, ...).
        #[cfg(mpi_large_count)]
        pub mod large_count {
            use super::*;
            type Count = mpi_sys::MPI_Count;
            type Displ = MPI_Aint;
            $(
                large_form! {
                    $($large)? ; $name => $pname ( $($arg: $ty),* ) as $op {
                        $(idle: { $($idle)* })?
                        pre: { $($pre)* }
                        $(call: $call,)?
                        post: $post
                    }
                }
            )*
        }
    };
}
