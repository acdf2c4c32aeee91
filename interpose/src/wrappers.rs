//! Every `MPI_*` entry point of the interposer.
//!
//! Communication wrappers are generated from the one table at the bottom of
//! this file by [`wrappers!`]: each entry names the MPI function, its
//! arguments, the `PMPI_*` function it forwards to, the [`Op`] it records,
//! an optional `pre` block (runs before the call; may substitute an ignored
//! status so the recorder can read it) and a `post` expression that builds
//! the recorded [`What`] from the arguments after the call. Outside the
//! instrumented iteration a wrapper is one relaxed load and the `PMPI_*` call.
//!
//! The lifecycle entry points (`Init`, `Init_thread`, `Finalize`,
//! `Pcontrol`) are written out below the macro: they change the recorder's
//! state rather than record a call.

#![allow(clippy::missing_safety_doc)]

use crate::recorder::{
    self, bytes, comm_size, msg, msg_from_status, now_ns, post_request, record, recording,
    status_bytes, take_request,
};
use mheta_trace::{Completion, Op, What};
use mpi_sys::{MPI_Comm, MPI_Datatype, MPI_Message, MPI_Op, MPI_Request, MPI_Status};
use std::os::raw::{c_char, c_int, c_void};

/// A zeroed status to stand in for `MPI_STATUS_IGNORE`.
fn blank_status() -> MPI_Status {
    // SAFETY: MPI_Status is a plain C struct of integers.
    unsafe { std::mem::zeroed() }
}

/// `status`, or `own` when the caller passed `MPI_STATUS_IGNORE`.
fn own_status(status: *mut MPI_Status, own: &mut MPI_Status) -> *mut MPI_Status {
    // SAFETY: reading an extern static constant.
    if status == unsafe { mpi_sys::RSMPI_STATUS_IGNORE } {
        own
    } else {
        status
    }
}

macro_rules! wrappers {
    ($(
        $name:ident => $pname:ident ( $($arg:ident : $ty:ty),* $(,)? ) as $op:ident {
            pre: { $($pre:tt)* }
            post: $post:expr $(,)?
        }
    )*) => {
        $(
            #[unsafe(no_mangle)]
            #[doc = concat!("Interposed `", stringify!($name), "`: forwards to `", stringify!($pname), "`.")]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
                if !recording() {
                    // SAFETY: the caller's arguments, passed through unchanged.
                    return unsafe { mpi_sys::$pname($($arg),*) };
                }
                $($pre)*
                let t0 = now_ns();
                // SAFETY: the caller's arguments; a status the caller ignored
                // is replaced by one of ours, which MPI may always write.
                let rc = unsafe { mpi_sys::$pname($($arg),*) };
                let t1 = now_ns();
                if rc == 0 {
                    record(Op::$op, t0, t1, $post);
                }
                rc
            }
        )*
    };
}

wrappers! {
    MPI_Send => PMPI_Send(buf: *const c_void, count: c_int, datatype: MPI_Datatype,
                          dest: c_int, tag: c_int, comm: MPI_Comm) as Send {
        pre: {}
        post: What::Send(msg(comm, dest, tag, bytes(count, datatype))),
    }
    MPI_Isend => PMPI_Isend(buf: *const c_void, count: c_int, datatype: MPI_Datatype,
                            dest: c_int, tag: c_int, comm: MPI_Comm,
                            request: *mut MPI_Request) as Isend {
        pre: {}
        post: What::Isend {
            msg: msg(comm, dest, tag, bytes(count, datatype)),
            // SAFETY: MPI_Isend succeeded, so *request is the new handle.
            req: post_request(unsafe { *request }, None),
        },
    }
    MPI_Recv => PMPI_Recv(buf: *mut c_void, count: c_int, datatype: MPI_Datatype,
                          source: c_int, tag: c_int, comm: MPI_Comm,
                          status: *mut MPI_Status) as Recv {
        pre: {
            let mut own = blank_status();
            let status = own_status(status, &mut own);
        }
        // SAFETY: the receive completed and filled `status`.
        post: What::Recv(unsafe { msg_from_status(comm, status) }),
    }
    MPI_Irecv => PMPI_Irecv(buf: *mut c_void, count: c_int, datatype: MPI_Datatype,
                            source: c_int, tag: c_int, comm: MPI_Comm,
                            request: *mut MPI_Request) as Irecv {
        pre: {}
        // SAFETY: MPI_Irecv succeeded, so *request is the new handle.
        post: What::Irecv { req: post_request(unsafe { *request }, Some(comm)) },
    }
    MPI_Sendrecv => PMPI_Sendrecv(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                                  dest: c_int, sendtag: c_int,
                                  recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype,
                                  source: c_int, recvtag: c_int, comm: MPI_Comm,
                                  status: *mut MPI_Status) as Sendrecv {
        pre: {
            let mut own = blank_status();
            let status = own_status(status, &mut own);
        }
        post: What::Sendrecv {
            send: msg(comm, dest, sendtag, bytes(sendcount, sendtype)),
            // SAFETY: the receive half completed and filled `status`.
            recv: unsafe { msg_from_status(comm, status) },
        },
    }
    MPI_Wait => PMPI_Wait(request: *mut MPI_Request, status: *mut MPI_Status) as Wait {
        pre: {
            // SAFETY: request points at the caller's request handle.
            let taken = take_request(unsafe { *request });
            let mut own = blank_status();
            let status = own_status(status, &mut own);
        }
        post: What::Complete(
            taken
                // SAFETY: the request completed and filled `status`.
                .map(|(req, comm)| Completion { req, recv: comm.map(|c| unsafe { msg_from_status(c, status) }) })
                .into_iter()
                .collect(),
        ),
    }
    MPI_Waitall => PMPI_Waitall(count: c_int, array_of_requests: *mut MPI_Request,
                                array_of_statuses: *mut MPI_Status) as Waitall {
        pre: {
            let n = count.max(0) as usize;
            // SAFETY: the caller passes `count` request handles.
            let taken: Vec<_> = (0..n).map(|i| take_request(unsafe { *array_of_requests.add(i) })).collect();
            // SAFETY: reading an extern static constant.
            let ignored = array_of_statuses == unsafe { mpi_sys::RSMPI_STATUSES_IGNORE };
            let mut own: Vec<MPI_Status> = (0..if ignored { n } else { 0 }).map(|_| blank_status()).collect();
            let array_of_statuses = if ignored { own.as_mut_ptr() } else { array_of_statuses };
        }
        post: What::Complete(
            taken
                .iter()
                .enumerate()
                .filter_map(|(i, t)| {
                    t.map(|(req, comm)| Completion {
                        req,
                        // SAFETY: status i of the `count` statuses just filled.
                        recv: comm.map(|c| unsafe { msg_from_status(c, array_of_statuses.add(i)) }),
                    })
                })
                .collect(),
        ),
    }
    MPI_Mprobe => PMPI_Mprobe(source: c_int, tag: c_int, comm: MPI_Comm,
                              message: *mut MPI_Message, status: *mut MPI_Status) as Mprobe {
        pre: {
            let mut own = blank_status();
            let status = own_status(status, &mut own);
        }
        // SAFETY: the probe matched a message and filled `status`.
        post: What::Probe(unsafe { msg_from_status(comm, status) }),
    }
    MPI_Mrecv => PMPI_Mrecv(buf: *mut c_void, count: c_int, type_: MPI_Datatype,
                            message: *mut MPI_Message, status: *mut MPI_Status) as Mrecv {
        pre: {
            let mut own = blank_status();
            let status = own_status(status, &mut own);
        }
        // SAFETY: the matched receive completed and filled `status`.
        post: What::MatchedRecv { bytes: unsafe { status_bytes(status) } },
    }
    MPI_Allreduce => PMPI_Allreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int,
                                    datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) as Allreduce {
        pre: {}
        post: What::Collective { bytes: bytes(count, datatype), comm_size: comm_size(comm) },
    }
}

/// Interposed `MPI_Init`: initialises MPI, then the recorder.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    // SAFETY: the caller's arguments, passed through unchanged.
    let rc = unsafe { mpi_sys::PMPI_Init(argc, argv) };
    if rc == 0 {
        recorder::init();
    }
    rc
}

/// Interposed `MPI_Init_thread`: initialises MPI, then the recorder.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    // SAFETY: the caller's arguments, passed through unchanged.
    let rc = unsafe { mpi_sys::PMPI_Init_thread(argc, argv, required, provided) };
    if rc == 0 {
        recorder::init();
    }
    rc
}

/// Interposed `MPI_Finalize`: reports an iteration that was never recorded.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    recorder::finalize();
    // SAFETY: plain forwarding.
    unsafe { mpi_sys::PMPI_Finalize() }
}

/// Interposed `MPI_Pcontrol`: mheta's iteration and stage markers. The
/// standard declares it variadic; mheta's levels take no further argument,
/// and on the C ABIs we support the level arrives in the same register
/// either way, so the extra arguments are simply not read.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Pcontrol(level: c_int) -> c_int {
    recorder::pcontrol(level);
    // SAFETY: forwarding the level to the next profiling layer.
    unsafe { mpi_sys::PMPI_Pcontrol(level) }
}
