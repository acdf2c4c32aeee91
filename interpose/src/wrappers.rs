//! Every C `MPI_*` entry point of the interposer.
//!
//! The wrappers are generated from the one table below by [`wrappers!`].
//! An entry names the MPI function, its arguments (exactly as `mpi-sys`
//! declares the `PMPI_*` function), the `PMPI_*` function and the [`Op`];
//! then, optionally:
//! - `idle: { .. }` runs after a successful call even when no tool listens
//!   (`MPI_File_open` names its file this way);
//! - `pre: { .. }` runs before the call while a tool listens (it may swap
//!   an ignored status for one of ours so that the tools can read it);
//! - `call: expr` replaces the plain `PMPI_*` call (the prefetch trick);
//! - `post: expr` builds the recorded [`What`] after a successful call.
//!
//! Each wrapper is: fast path (one relaxed load, then `PMPI_*`) or pre hook,
//! timed `PMPI_*` call, post hook. The lifecycle entry points (`Init`,
//! `Init_thread`, `Finalize`, `Abort`, `Pcontrol`) follow the table.

#![allow(clippy::missing_safety_doc)]

use crate::clock::now;
use crate::mpi_util::*;
use crate::tools::recorder::{
    self, Posted, Template, file_id, open_file, persist, persistent, post_request, restore_request,
    take_request, unpersist,
};
use crate::tools::{self, Call};
use mheta_trace::{Completion, Op, Started, What};
use mpi_sys::{
    MPI_Comm, MPI_Datatype, MPI_File, MPI_Info, MPI_Message, MPI_Offset, MPI_Op, MPI_Request,
    MPI_Status,
};
use std::os::raw::{c_char, c_int, c_void};

macro_rules! call_or {
    ($call:expr ; $default:expr) => {
        $call
    };
    ( ; $default:expr) => {
        $default
    };
}

macro_rules! wrappers {
    ($(
        $name:ident => $pname:ident ( $($arg:ident : $ty:ty),* $(,)? ) as $op:ident {
            $(idle: { $($idle:tt)* })?
            pre: { $($pre:tt)* }
            $(call: $call:expr,)?
            post: $post:expr $(,)?
        }
    )*) => {
        $(
            #[unsafe(no_mangle)]
            #[allow(unused_variables, unused_mut)]
            #[doc = concat!("Interposed `", stringify!($name), "`: forwards to `", stringify!($pname), "`.")]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
                if !tools::active() {
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
        )*
    };
}

/// The posted request `*request` gets an id.
fn new_req(request: *mut MPI_Request, recv_comm: Option<MPI_Comm>) -> u32 {
    // SAFETY: the call that filled *request succeeded.
    post_request(unsafe { *request }, recv_comm)
}

/// The requests a `Wait*`/`Test*` call is given, taken out of the
/// recorder's map before the call (a completed request's handle may be
/// reused by another thread at once); [`Pending::done`] reports those that
/// completed and puts the others back.
struct Pending {
    hs: Vec<MPI_Request>,
    taken: Vec<Option<Posted>>,
}

impl Pending {
    fn take(reqs: *const MPI_Request, n: c_int) -> Pending {
        // SAFETY: the caller passes `n` request handles.
        let hs: Vec<MPI_Request> = (0..n.max(0) as usize)
            .map(|i| unsafe { *reqs.add(i) })
            .collect();
        let taken = hs.iter().map(|&h| take_request(h)).collect();
        Pending { hs, taken }
    }

    fn len(&self) -> usize {
        self.hs.len()
    }

    /// The requests at positions `which` completed, with statuses `sts[k]`
    /// for the k-th of them; the rest are put back.
    fn done(mut self, which: &[usize], sts: *const MPI_Status) -> What {
        let mut out = Vec::new();
        for (k, &i) in which.iter().enumerate() {
            if let Some(Some((req, comm))) = self.taken.get_mut(i).map(Option::take) {
                // SAFETY: MPI filled status k for this completed request.
                let recv = comm.map(|c| unsafe { msg_from_status(c, sts.add(k)) });
                out.push(Completion { req, recv });
            }
        }
        for (h, t) in self.hs.iter().zip(self.taken) {
            if let Some(t) = t {
                restore_request(*h, t);
            }
        }
        What::Complete(out)
    }

    /// All completed, statuses in request order.
    fn all(self, sts: *const MPI_Status) -> What {
        let which: Vec<usize> = (0..self.len()).collect();
        self.done(&which, sts)
    }

    /// None completed.
    fn none(self) -> What {
        self.done(&[], std::ptr::null())
    }

    /// The `count` requests at `indices` completed (MPI_UNDEFINED: none).
    fn some(self, count: c_int, indices: *const c_int, sts: *const MPI_Status) -> What {
        let n = if count < 0 || count == mpi_sys::MPI_UNDEFINED {
            0
        } else {
            count as usize
        };
        // SAFETY: MPI filled `count` indices.
        let which: Vec<usize> = (0..n)
            .map(|k| unsafe { *indices.add(k) } as usize)
            .collect();
        self.done(&which, sts)
    }
}

/// Remember persistent request `*request` (just set up by a successful
/// `MPI_*_init`) so that `MPI_Start(all)` can record what it begins.
fn persist_init(request: *mut MPI_Request, t: Template) {
    // SAFETY: the call that filled *request succeeded.
    persist(unsafe { *request }, t)
}

/// Persistent request `h` begins: record it as the send or receive it
/// stands for, with a fresh id (`None` for a handle not set up by
/// `MPI_*_init`, such as `MPI_REQUEST_NULL`).
pub(crate) fn start_one(h: MPI_Request) -> Option<Started> {
    Some(match persistent(h)? {
        Template::Send(msg) => Started::Send {
            msg,
            req: post_request(h, None),
        },
        Template::Recv(c) => Started::Recv {
            req: post_request(h, Some(c)),
        },
    })
}

fn root_of(comm: MPI_Comm, root: c_int) -> i32 {
    world_rank(comm, root)
}

/// A rooted collective's bytes, 0 for a process that passes
/// `MPI_PROC_NULL` (the idle side of an intercommunicator's root group,
/// whose other arguments MPI ignores).
fn rooted(root: c_int, f: impl FnOnce() -> u64) -> u64 {
    if root == mpi_sys::MPI_PROC_NULL {
        0
    } else {
        f()
    }
}

/// This process's part of a gather or scatter: `count` × `dt` of `buf`,
/// or, when `buf` is `MPI_IN_PLACE` (whose count and type MPI ignores),
/// `other_count` × `other_dt`.
fn own_part(
    buf: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
    other_count: c_int,
    other_dt: MPI_Datatype,
) -> u64 {
    if in_place(buf) {
        bytes(other_count, other_dt)
    } else {
        bytes(count, dt)
    }
}

/// As [`own_part`] for the vector forms: in place, this rank's entry of
/// `other_counts` × `other_dt`.
///
/// # Safety
/// When `buf` is `MPI_IN_PLACE`, `other_counts` has an entry per rank of
/// `comm`.
unsafe fn own_part_v(
    buf: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
    other_counts: *const c_int,
    other_dt: MPI_Datatype,
    comm: MPI_Comm,
) -> u64 {
    if !in_place(buf) {
        return bytes(count, dt);
    }
    let me = comm_rank(comm);
    if other_counts.is_null() || me < 0 {
        return 0;
    }
    // SAFETY: as promised by the caller.
    bytes(unsafe { *other_counts.add(me as usize) }, other_dt)
}

/// The MHETA prefetch trick (paper, fig. 5): while recording, a
/// non-blocking read is performed as a blocking read, and the program gets
/// an already completed generalized request, so its wait returns at once.
/// The program still sees valid MPI: its buffer filled, a request handle,
/// a status with the right count.
mod prefetch {
    use super::*;

    struct Done {
        status: MPI_Status,
    }

    unsafe extern "C" fn query(extra: *mut c_void, status: *mut MPI_Status) -> c_int {
        // SAFETY: extra is the Box<Done> given to Grequest_start; status is
        // MPI's status to fill.
        unsafe {
            let d = &*(extra as *const Done);
            let bytes = status_bytes(&d.status);
            mpi_sys::PMPI_Status_set_elements(status, mpi_sys::RSMPI_UINT8_T, bytes as c_int);
            mpi_sys::PMPI_Status_set_cancelled(status, 0);
            (*status).MPI_SOURCE = mpi_sys::MPI_UNDEFINED;
            (*status).MPI_TAG = mpi_sys::MPI_UNDEFINED;
        }
        0
    }

    unsafe extern "C" fn free(extra: *mut c_void) -> c_int {
        // SAFETY: extra is the Box<Done> leaked in `blocking`; freed once.
        drop(unsafe { Box::from_raw(extra as *mut Done) });
        0
    }

    unsafe extern "C" fn cancel(_extra: *mut c_void, _complete: c_int) -> c_int {
        0
    }

    /// Read now; hand back a completed generalized request.
    pub fn blocking(
        fh: MPI_File,
        offset: Option<MPI_Offset>,
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        request: *mut MPI_Request,
    ) -> (c_int, u64) {
        let mut d = Box::new(Done {
            status: blank_status(),
        });
        // SAFETY: the caller's arguments; our own status.
        let rc = unsafe {
            match offset {
                Some(off) => {
                    mpi_sys::PMPI_File_read_at(fh, off, buf, count, datatype, &mut d.status)
                }
                None => mpi_sys::PMPI_File_read(fh, buf, count, datatype, &mut d.status),
            }
        };
        if rc != 0 {
            return (rc, 0);
        }
        // SAFETY: the read completed and filled the status.
        let bytes = unsafe { status_bytes(&d.status) };
        let extra = Box::into_raw(d) as *mut c_void;
        // SAFETY: valid callbacks and out-pointer; `extra` lives until free.
        unsafe {
            let rc =
                mpi_sys::PMPI_Grequest_start(Some(query), Some(free), Some(cancel), extra, request);
            if rc != 0 {
                drop(Box::from_raw(extra as *mut Done));
                return (rc, 0);
            }
            (mpi_sys::PMPI_Grequest_complete(*request), bytes)
        }
    }
}

wrappers! {
    // ---- point-to-point: sends ----
    MPI_Send => PMPI_Send(buf: *const c_void, count: c_int, datatype: MPI_Datatype,
                          dest: c_int, tag: c_int, comm: MPI_Comm) as Send {
        pre: {}
        post: What::Send(msg(comm, dest, tag, bytes(count, datatype))),
    }
    MPI_Ssend => PMPI_Ssend(buf: *const c_void, count: c_int, datatype: MPI_Datatype,
                            dest: c_int, tag: c_int, comm: MPI_Comm) as Ssend {
        pre: {}
        post: What::Send(msg(comm, dest, tag, bytes(count, datatype))),
    }
    MPI_Bsend => PMPI_Bsend(buf: *const c_void, count: c_int, datatype: MPI_Datatype,
                            dest: c_int, tag: c_int, comm: MPI_Comm) as Bsend {
        pre: {}
        post: What::Send(msg(comm, dest, tag, bytes(count, datatype))),
    }
    MPI_Rsend => PMPI_Rsend(ibuf: *const c_void, count: c_int, datatype: MPI_Datatype,
                            dest: c_int, tag: c_int, comm: MPI_Comm) as Rsend {
        pre: {}
        post: What::Send(msg(comm, dest, tag, bytes(count, datatype))),
    }
    MPI_Isend => PMPI_Isend(buf: *const c_void, count: c_int, datatype: MPI_Datatype,
                            dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Isend {
        pre: {}
        post: What::Isend { msg: msg(comm, dest, tag, bytes(count, datatype)), req: new_req(request, None) },
    }
    MPI_Issend => PMPI_Issend(buf: *const c_void, count: c_int, datatype: MPI_Datatype,
                              dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Issend {
        pre: {}
        post: What::Isend { msg: msg(comm, dest, tag, bytes(count, datatype)), req: new_req(request, None) },
    }
    MPI_Ibsend => PMPI_Ibsend(buf: *const c_void, count: c_int, datatype: MPI_Datatype,
                              dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Ibsend {
        pre: {}
        post: What::Isend { msg: msg(comm, dest, tag, bytes(count, datatype)), req: new_req(request, None) },
    }
    MPI_Irsend => PMPI_Irsend(buf: *const c_void, count: c_int, datatype: MPI_Datatype,
                              dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Irsend {
        pre: {}
        post: What::Isend { msg: msg(comm, dest, tag, bytes(count, datatype)), req: new_req(request, None) },
    }

    // ---- point-to-point: receives and probes ----
    MPI_Recv => PMPI_Recv(buf: *mut c_void, count: c_int, datatype: MPI_Datatype,
                          source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) as Recv {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        // SAFETY: the receive completed and filled `status`.
        post: What::Recv(unsafe { msg_from_status(comm, status) }),
    }
    MPI_Irecv => PMPI_Irecv(buf: *mut c_void, count: c_int, datatype: MPI_Datatype,
                            source: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Irecv {
        pre: {}
        post: What::Irecv { req: new_req(request, Some(comm)) },
    }
    MPI_Sendrecv => PMPI_Sendrecv(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                                  dest: c_int, sendtag: c_int,
                                  recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype,
                                  source: c_int, recvtag: c_int, comm: MPI_Comm,
                                  status: *mut MPI_Status) as Sendrecv {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        post: What::Sendrecv {
            send: msg(comm, dest, sendtag, bytes(sendcount, sendtype)),
            // SAFETY: the receive half completed and filled `status`.
            recv: unsafe { msg_from_status(comm, status) },
        },
    }
    MPI_Sendrecv_replace => PMPI_Sendrecv_replace(buf: *mut c_void, count: c_int, datatype: MPI_Datatype,
                                                  dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int,
                                                  comm: MPI_Comm, status: *mut MPI_Status) as Sendrecv_replace {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        post: What::Sendrecv {
            send: msg(comm, dest, sendtag, bytes(count, datatype)),
            // SAFETY: the receive half completed and filled `status`.
            recv: unsafe { msg_from_status(comm, status) },
        },
    }
    MPI_Probe => PMPI_Probe(source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) as Probe {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        // SAFETY: the probe matched and filled `status`.
        post: What::Peek(unsafe { msg_from_status(comm, status) }),
    }
    MPI_Iprobe => PMPI_Iprobe(source: c_int, tag: c_int, comm: MPI_Comm, flag: *mut c_int,
                              status: *mut MPI_Status) as Iprobe {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        // SAFETY: flag was set; with it, status was filled.
        post: What::Poll(if unsafe { *flag } != 0 { Some(unsafe { msg_from_status(comm, status) }) } else { None }),
    }
    MPI_Mprobe => PMPI_Mprobe(source: c_int, tag: c_int, comm: MPI_Comm,
                              message: *mut MPI_Message, status: *mut MPI_Status) as Mprobe {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        // SAFETY: the probe matched a message and filled `status`.
        post: What::Probe(unsafe { msg_from_status(comm, status) }),
    }
    MPI_Improbe => PMPI_Improbe(source: c_int, tag: c_int, comm: MPI_Comm, flag: *mut c_int,
                                message: *mut MPI_Message, status: *mut MPI_Status) as Improbe {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        // SAFETY: flag was set; with it, status was filled.
        post: if unsafe { *flag } != 0 { What::Probe(unsafe { msg_from_status(comm, status) }) } else { What::NoMatch },
    }
    MPI_Mrecv => PMPI_Mrecv(buf: *mut c_void, count: c_int, type_: MPI_Datatype,
                            message: *mut MPI_Message, status: *mut MPI_Status) as Mrecv {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        // SAFETY: the matched receive completed and filled `status`.
        post: What::MatchedRecv { bytes: unsafe { status_bytes(status) } },
    }
    MPI_Imrecv => PMPI_Imrecv(buf: *mut c_void, count: c_int, type_: MPI_Datatype,
                              message: *mut MPI_Message, request: *mut MPI_Request) as Imrecv {
        pre: {}
        post: What::Irecv { req: new_req(request, None) },
    }

    // ---- persistent requests ----
    MPI_Send_init => PMPI_Send_init(buf: *const c_void, count: c_int, datatype: MPI_Datatype,
                                      dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Send_init {
        idle: { persist_init(request, Template::Send(msg(comm, dest, tag, bytes(count, datatype)))); }
        pre: {}
        post: What::PersistentInit { send: true, msg: msg(comm, dest, tag, bytes(count, datatype)) },
    }
    MPI_Bsend_init => PMPI_Bsend_init(buf: *const c_void, count: c_int, datatype: MPI_Datatype,
                                      dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Bsend_init {
        idle: { persist_init(request, Template::Send(msg(comm, dest, tag, bytes(count, datatype)))); }
        pre: {}
        post: What::PersistentInit { send: true, msg: msg(comm, dest, tag, bytes(count, datatype)) },
    }
    MPI_Ssend_init => PMPI_Ssend_init(buf: *const c_void, count: c_int, datatype: MPI_Datatype,
                                      dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Ssend_init {
        idle: { persist_init(request, Template::Send(msg(comm, dest, tag, bytes(count, datatype)))); }
        pre: {}
        post: What::PersistentInit { send: true, msg: msg(comm, dest, tag, bytes(count, datatype)) },
    }
    MPI_Rsend_init => PMPI_Rsend_init(buf: *const c_void, count: c_int, datatype: MPI_Datatype,
                                      dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Rsend_init {
        idle: { persist_init(request, Template::Send(msg(comm, dest, tag, bytes(count, datatype)))); }
        pre: {}
        post: What::PersistentInit { send: true, msg: msg(comm, dest, tag, bytes(count, datatype)) },
    }
    MPI_Recv_init => PMPI_Recv_init(buf: *mut c_void, count: c_int, datatype: MPI_Datatype,
                                    source: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Recv_init {
        idle: { persist_init(request, Template::Recv(comm)); }
        pre: {}
        post: What::PersistentInit { send: false, msg: msg(comm, source, tag, bytes(count, datatype)) },
    }
    MPI_Start => PMPI_Start(request: *mut MPI_Request) as Start {
        // SAFETY: the caller's request handle (MPI started it).
        pre: { let h = unsafe { *request }; }
        post: What::Start(start_one(h).into_iter().collect()),
    }
    MPI_Startall => PMPI_Startall(count: c_int, array_of_requests: *mut MPI_Request) as Startall {
        // SAFETY: the caller passes `count` request handles.
        pre: { let hs: Vec<MPI_Request> = (0..count.max(0) as usize).map(|i| unsafe { *array_of_requests.add(i) }).collect(); }
        post: What::Start(hs.iter().filter_map(|&h| start_one(h)).collect()),
    }
    MPI_Request_free => PMPI_Request_free(request: *mut MPI_Request) as Request_free {
        pre: {
            // SAFETY: the caller's request handle, read before MPI nulls it.
            let h = unsafe { *request };
            unpersist(h);
            let _ = take_request(h);
        }
        post: What::RequestFree,
    }

    // ---- completion ----
    MPI_Wait => PMPI_Wait(request: *mut MPI_Request, status: *mut MPI_Status) as Wait {
        pre: {
            let pending = Pending::take(request, 1);
            let mut own = blank_status();
            let status = own_status(status, &mut own);
        }
        post: pending.all(status),
    }
    MPI_Waitall => PMPI_Waitall(count: c_int, array_of_requests: *mut MPI_Request,
                                array_of_statuses: *mut MPI_Status) as Waitall {
        pre: {
            let pending = Pending::take(array_of_requests, count);
            let mut own = Vec::new();
            let array_of_statuses = own_statuses(array_of_statuses, pending.len(), &mut own);
        }
        post: pending.all(array_of_statuses),
    }
    MPI_Waitany => PMPI_Waitany(count: c_int, array_of_requests: *mut MPI_Request, index: *mut c_int,
                                status: *mut MPI_Status) as Waitany {
        pre: {
            let pending = Pending::take(array_of_requests, count);
            let mut own = blank_status();
            let status = own_status(status, &mut own);
        }
        // MPI set *index (MPI_UNDEFINED when nothing was active).
        post: pending.some(1, index, status),
    }
    MPI_Waitsome => PMPI_Waitsome(incount: c_int, array_of_requests: *mut MPI_Request, outcount: *mut c_int,
                                  array_of_indices: *mut c_int, array_of_statuses: *mut MPI_Status) as Waitsome {
        pre: {
            let pending = Pending::take(array_of_requests, incount);
            let mut own = Vec::new();
            let array_of_statuses = own_statuses(array_of_statuses, pending.len(), &mut own);
        }
        // SAFETY: MPI set *outcount.
        post: pending.some(unsafe { *outcount }, array_of_indices, array_of_statuses),
    }
    MPI_Test => PMPI_Test(request: *mut MPI_Request, flag: *mut c_int, status: *mut MPI_Status) as Test {
        pre: {
            let pending = Pending::take(request, 1);
            let mut own = blank_status();
            let status = own_status(status, &mut own);
        }
        // SAFETY: MPI set *flag.
        post: if unsafe { *flag } != 0 { pending.all(status) } else { pending.none() },
    }
    MPI_Testall => PMPI_Testall(count: c_int, array_of_requests: *mut MPI_Request, flag: *mut c_int,
                                array_of_statuses: *mut MPI_Status) as Testall {
        pre: {
            let pending = Pending::take(array_of_requests, count);
            let mut own = Vec::new();
            let array_of_statuses = own_statuses(array_of_statuses, pending.len(), &mut own);
        }
        // SAFETY: MPI set *flag; with it, every status.
        post: if unsafe { *flag } != 0 { pending.all(array_of_statuses) } else { pending.none() },
    }
    MPI_Testany => PMPI_Testany(count: c_int, array_of_requests: *mut MPI_Request, index: *mut c_int,
                                flag: *mut c_int, status: *mut MPI_Status) as Testany {
        pre: {
            let pending = Pending::take(array_of_requests, count);
            let mut own = blank_status();
            let status = own_status(status, &mut own);
        }
        // SAFETY: MPI set *flag and, with it, *index.
        post: if unsafe { *flag } != 0 { pending.some(1, index, status) } else { pending.none() },
    }
    MPI_Testsome => PMPI_Testsome(incount: c_int, array_of_requests: *mut MPI_Request, outcount: *mut c_int,
                                  array_of_indices: *mut c_int, array_of_statuses: *mut MPI_Status) as Testsome {
        pre: {
            let pending = Pending::take(array_of_requests, incount);
            let mut own = Vec::new();
            let array_of_statuses = own_statuses(array_of_statuses, pending.len(), &mut own);
        }
        // SAFETY: MPI set *outcount.
        post: pending.some(unsafe { *outcount }, array_of_indices, array_of_statuses),
    }

    // ---- blocking collectives ----
    MPI_Barrier => PMPI_Barrier(comm: MPI_Comm) as Barrier {
        pre: {}
        post: What::Collective { bytes: 0, comm_size: comm_size(comm), root: -1 },
    }
    MPI_Bcast => PMPI_Bcast(buffer: *mut c_void, count: c_int, datatype: MPI_Datatype, root: c_int,
                            comm: MPI_Comm) as Bcast {
        pre: {}
        post: What::Collective { bytes: rooted(root, || bytes(count, datatype)), comm_size: comm_size(comm), root: root_of(comm, root) },
    }
    MPI_Reduce => PMPI_Reduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype,
                              op: MPI_Op, root: c_int, comm: MPI_Comm) as Reduce {
        pre: {}
        post: What::Collective { bytes: rooted(root, || bytes(count, datatype)), comm_size: comm_size(comm), root: root_of(comm, root) },
    }
    MPI_Allreduce => PMPI_Allreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int,
                                    datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) as Allreduce {
        pre: {}
        post: What::Collective { bytes: bytes(count, datatype), comm_size: comm_size(comm), root: -1 },
    }
    MPI_Gather => PMPI_Gather(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                              recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype,
                              root: c_int, comm: MPI_Comm) as Gather {
        pre: {}
        post: What::Collective { bytes: rooted(root, || own_part(sendbuf, sendcount, sendtype, recvcount, recvtype)), comm_size: comm_size(comm), root: root_of(comm, root) },
    }
    MPI_Gatherv => PMPI_Gatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                                recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int,
                                recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) as Gatherv {
        pre: {}
        // SAFETY: in place, recvcounts has one entry per rank of comm.
        post: What::Collective { bytes: rooted(root, || unsafe { own_part_v(sendbuf, sendcount, sendtype, recvcounts, recvtype, comm) }), comm_size: comm_size(comm), root: root_of(comm, root) },
    }
    MPI_Scatter => PMPI_Scatter(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                                recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype,
                                root: c_int, comm: MPI_Comm) as Scatter {
        pre: {}
        post: What::Collective { bytes: rooted(root, || own_part(recvbuf, recvcount, recvtype, sendcount, sendtype)), comm_size: comm_size(comm), root: root_of(comm, root) },
    }
    MPI_Scatterv => PMPI_Scatterv(sendbuf: *const c_void, sendcounts: *const c_int, displs: *const c_int,
                                  sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int,
                                  recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) as Scatterv {
        pre: {}
        // SAFETY: in place, sendcounts has one entry per rank of comm.
        post: What::Collective { bytes: rooted(root, || unsafe { own_part_v(recvbuf, recvcount, recvtype, sendcounts, sendtype, comm) }), comm_size: comm_size(comm), root: root_of(comm, root) },
    }
    MPI_Allgather => PMPI_Allgather(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                                    recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype,
                                    comm: MPI_Comm) as Allgather {
        pre: {}
        post: What::Collective { bytes: own_part(sendbuf, sendcount, sendtype, recvcount, recvtype), comm_size: comm_size(comm), root: -1 },
    }
    MPI_Allgatherv => PMPI_Allgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                                      recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int,
                                      recvtype: MPI_Datatype, comm: MPI_Comm) as Allgatherv {
        pre: {}
        // SAFETY: in place, recvcounts has one entry per rank of comm.
        post: What::Collective { bytes: unsafe { own_part_v(sendbuf, sendcount, sendtype, recvcounts, recvtype, comm) }, comm_size: comm_size(comm), root: -1 },
    }
    MPI_Alltoall => PMPI_Alltoall(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                                  recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype,
                                  comm: MPI_Comm) as Alltoall {
        pre: { let n = peer_size(comm); }
        post: What::Collective { bytes: own_part(sendbuf, sendcount, sendtype, recvcount, recvtype) * n as u64, comm_size: n, root: -1 },
    }
    MPI_Alltoallv => PMPI_Alltoallv(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int,
                                    sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int,
                                    rdispls: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm) as Alltoallv {
        pre: { let n = peer_size(comm); }
        // SAFETY: the counts have one entry per peer of comm.
        post: What::Collective { bytes: unsafe { if in_place(sendbuf) { bytes_v(recvcounts, n, recvtype) } else { bytes_v(sendcounts, n, sendtype) } }, comm_size: n, root: -1 },
    }
    MPI_Reduce_scatter => PMPI_Reduce_scatter(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int,
                                              datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) as Reduce_scatter {
        pre: { let n = comm_size(comm); }
        // SAFETY: recvcounts has one entry per rank of comm.
        post: What::Collective { bytes: unsafe { bytes_v(recvcounts, n, datatype) }, comm_size: n, root: -1 },
    }
    MPI_Reduce_scatter_block => PMPI_Reduce_scatter_block(sendbuf: *const c_void, recvbuf: *mut c_void,
                                                          recvcount: c_int, datatype: MPI_Datatype, op: MPI_Op,
                                                          comm: MPI_Comm) as Reduce_scatter_block {
        pre: { let n = comm_size(comm); }
        post: What::Collective { bytes: bytes(recvcount, datatype) * n as u64, comm_size: n, root: -1 },
    }

    // ---- non-blocking collectives ----
    MPI_Ibarrier => PMPI_Ibarrier(comm: MPI_Comm, request: *mut MPI_Request) as Ibarrier {
        pre: {}
        post: What::ICollective { bytes: 0, comm_size: comm_size(comm), root: -1, req: new_req(request, None) },
    }
    MPI_Ibcast => PMPI_Ibcast(buffer: *mut c_void, count: c_int, datatype: MPI_Datatype, root: c_int,
                              comm: MPI_Comm, request: *mut MPI_Request) as Ibcast {
        pre: {}
        post: What::ICollective { bytes: rooted(root, || bytes(count, datatype)), comm_size: comm_size(comm), root: root_of(comm, root), req: new_req(request, None) },
    }
    MPI_Ireduce => PMPI_Ireduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype,
                                op: MPI_Op, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Ireduce {
        pre: {}
        post: What::ICollective { bytes: rooted(root, || bytes(count, datatype)), comm_size: comm_size(comm), root: root_of(comm, root), req: new_req(request, None) },
    }
    MPI_Iallreduce => PMPI_Iallreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int,
                                      datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm,
                                      request: *mut MPI_Request) as Iallreduce {
        pre: {}
        post: What::ICollective { bytes: bytes(count, datatype), comm_size: comm_size(comm), root: -1, req: new_req(request, None) },
    }
    MPI_Igather => PMPI_Igather(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                                recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype,
                                root: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Igather {
        pre: {}
        post: What::ICollective { bytes: rooted(root, || own_part(sendbuf, sendcount, sendtype, recvcount, recvtype)), comm_size: comm_size(comm), root: root_of(comm, root), req: new_req(request, None) },
    }
    MPI_Igatherv => PMPI_Igatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                                  recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int,
                                  recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm,
                                  request: *mut MPI_Request) as Igatherv {
        pre: {}
        // SAFETY: in place, recvcounts has one entry per rank of comm.
        post: What::ICollective { bytes: rooted(root, || unsafe { own_part_v(sendbuf, sendcount, sendtype, recvcounts, recvtype, comm) }), comm_size: comm_size(comm), root: root_of(comm, root), req: new_req(request, None) },
    }
    MPI_Iscatter => PMPI_Iscatter(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                                  recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype,
                                  root: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Iscatter {
        pre: {}
        post: What::ICollective { bytes: rooted(root, || own_part(recvbuf, recvcount, recvtype, sendcount, sendtype)), comm_size: comm_size(comm), root: root_of(comm, root), req: new_req(request, None) },
    }
    MPI_Iscatterv => PMPI_Iscatterv(sendbuf: *const c_void, sendcounts: *const c_int, displs: *const c_int,
                                    sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int,
                                    recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm,
                                    request: *mut MPI_Request) as Iscatterv {
        pre: {}
        // SAFETY: in place, sendcounts has one entry per rank of comm.
        post: What::ICollective { bytes: rooted(root, || unsafe { own_part_v(recvbuf, recvcount, recvtype, sendcounts, sendtype, comm) }), comm_size: comm_size(comm), root: root_of(comm, root), req: new_req(request, None) },
    }
    MPI_Iallgather => PMPI_Iallgather(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                                      recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype,
                                      comm: MPI_Comm, request: *mut MPI_Request) as Iallgather {
        pre: {}
        post: What::ICollective { bytes: own_part(sendbuf, sendcount, sendtype, recvcount, recvtype), comm_size: comm_size(comm), root: -1, req: new_req(request, None) },
    }
    MPI_Iallgatherv => PMPI_Iallgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                                        recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int,
                                        recvtype: MPI_Datatype, comm: MPI_Comm,
                                        request: *mut MPI_Request) as Iallgatherv {
        pre: {}
        // SAFETY: in place, recvcounts has one entry per rank of comm.
        post: What::ICollective { bytes: unsafe { own_part_v(sendbuf, sendcount, sendtype, recvcounts, recvtype, comm) }, comm_size: comm_size(comm), root: -1, req: new_req(request, None) },
    }
    MPI_Ialltoall => PMPI_Ialltoall(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                                    recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype,
                                    comm: MPI_Comm, request: *mut MPI_Request) as Ialltoall {
        pre: { let n = peer_size(comm); }
        post: What::ICollective { bytes: own_part(sendbuf, sendcount, sendtype, recvcount, recvtype) * n as u64, comm_size: n, root: -1, req: new_req(request, None) },
    }
    MPI_Ialltoallv => PMPI_Ialltoallv(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int,
                                      sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int,
                                      rdispls: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm,
                                      request: *mut MPI_Request) as Ialltoallv {
        pre: { let n = peer_size(comm); }
        // SAFETY: the counts have one entry per peer of comm.
        post: What::ICollective { bytes: unsafe { if in_place(sendbuf) { bytes_v(recvcounts, n, recvtype) } else { bytes_v(sendcounts, n, sendtype) } }, comm_size: n, root: -1, req: new_req(request, None) },
    }
    MPI_Ireduce_scatter => PMPI_Ireduce_scatter(sendbuf: *const c_void, recvbuf: *mut c_void,
                                                recvcounts: *const c_int, datatype: MPI_Datatype, op: MPI_Op,
                                                comm: MPI_Comm, request: *mut MPI_Request) as Ireduce_scatter {
        pre: { let n = comm_size(comm); }
        // SAFETY: recvcounts has one entry per rank of comm.
        post: What::ICollective { bytes: unsafe { bytes_v(recvcounts, n, datatype) }, comm_size: n, root: -1, req: new_req(request, None) },
    }
    MPI_Ireduce_scatter_block => PMPI_Ireduce_scatter_block(sendbuf: *const c_void, recvbuf: *mut c_void,
                                                            recvcount: c_int, datatype: MPI_Datatype, op: MPI_Op,
                                                            comm: MPI_Comm, request: *mut MPI_Request) as Ireduce_scatter_block {
        pre: { let n = comm_size(comm); }
        post: What::ICollective { bytes: bytes(recvcount, datatype) * n as u64, comm_size: n, root: -1, req: new_req(request, None) },
    }

    // ---- MPI-IO: a variable is named by the file it lives in ----
    MPI_File_open => PMPI_File_open(comm: MPI_Comm, filename: *const c_char, amode: c_int, info: MPI_Info,
                                    fh: *mut MPI_File) as File_open {
        idle: {
            // SAFETY: the open succeeded: filename is the caller's C string
            // and *fh the new handle.
            let name = unsafe { std::ffi::CStr::from_ptr(filename) }.to_string_lossy();
            let file = open_file(unsafe { *fh }, &name);
        }
        pre: {}
        post: What::FileOpen { file, name: name.into_owned() },
    }
    MPI_File_close => PMPI_File_close(fh: *mut MPI_File) as File_close {
        // SAFETY: fh points at the caller's open handle.
        pre: { let file = file_id(unsafe { *fh }); }
        post: What::FileClose { file },
    }
    MPI_File_seek => PMPI_File_seek(fh: MPI_File, offset: MPI_Offset, whence: c_int) as File_seek {
        pre: {}
        post: What::FileSeek { file: file_id(fh) },
    }
    MPI_File_read => PMPI_File_read(fh: MPI_File, buf: *mut c_void, count: c_int, datatype: MPI_Datatype,
                                    status: *mut MPI_Status) as File_read {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        // SAFETY: the read completed and filled `status`.
        post: What::FileRead { file: file_id(fh), bytes: unsafe { status_bytes(status) }, at: false, collective: false },
    }
    MPI_File_write => PMPI_File_write(fh: MPI_File, buf: *const c_void, count: c_int, datatype: MPI_Datatype,
                                      status: *mut MPI_Status) as File_write {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        // SAFETY: the write completed and filled `status`.
        post: What::FileWrite { file: file_id(fh), bytes: unsafe { status_bytes(status) }, at: false, collective: false },
    }
    MPI_File_read_at => PMPI_File_read_at(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: c_int,
                                          datatype: MPI_Datatype, status: *mut MPI_Status) as File_read_at {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        // SAFETY: the read completed and filled `status`.
        post: What::FileRead { file: file_id(fh), bytes: unsafe { status_bytes(status) }, at: true, collective: false },
    }
    MPI_File_write_at => PMPI_File_write_at(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: c_int,
                                            datatype: MPI_Datatype, status: *mut MPI_Status) as File_write_at {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        // SAFETY: the write completed and filled `status`.
        post: What::FileWrite { file: file_id(fh), bytes: unsafe { status_bytes(status) }, at: true, collective: false },
    }
    MPI_File_read_all => PMPI_File_read_all(fh: MPI_File, buf: *mut c_void, count: c_int, datatype: MPI_Datatype,
                                            status: *mut MPI_Status) as File_read_all {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        // SAFETY: the read completed and filled `status`.
        post: What::FileRead { file: file_id(fh), bytes: unsafe { status_bytes(status) }, at: false, collective: true },
    }
    MPI_File_write_all => PMPI_File_write_all(fh: MPI_File, buf: *const c_void, count: c_int,
                                              datatype: MPI_Datatype, status: *mut MPI_Status) as File_write_all {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        // SAFETY: the write completed and filled `status`.
        post: What::FileWrite { file: file_id(fh), bytes: unsafe { status_bytes(status) }, at: false, collective: true },
    }
    MPI_File_read_at_all => PMPI_File_read_at_all(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: c_int,
                                                  datatype: MPI_Datatype, status: *mut MPI_Status) as File_read_at_all {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        // SAFETY: the read completed and filled `status`.
        post: What::FileRead { file: file_id(fh), bytes: unsafe { status_bytes(status) }, at: true, collective: true },
    }
    MPI_File_write_at_all => PMPI_File_write_at_all(fh: MPI_File, offset: MPI_Offset, buf: *const c_void,
                                                    count: c_int, datatype: MPI_Datatype,
                                                    status: *mut MPI_Status) as File_write_at_all {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        // SAFETY: the write completed and filled `status`.
        post: What::FileWrite { file: file_id(fh), bytes: unsafe { status_bytes(status) }, at: true, collective: true },
    }
    MPI_File_iread => PMPI_File_iread(fh: MPI_File, buf: *mut c_void, count: c_int, datatype: MPI_Datatype,
                                      request: *mut MPI_Request) as File_iread {
        pre: { let trick = recorder::recording(); let mut read_bytes = 0; }
        call: if trick {
            let (rc, b) = prefetch::blocking(fh, None, buf, count, datatype, request);
            read_bytes = b;
            rc
        } else {
            // SAFETY: the caller's arguments.
            unsafe { mpi_sys::PMPI_File_iread(fh, buf, count, datatype, request) }
        },
        post: What::FileIread {
            file: file_id(fh),
            bytes: if trick { read_bytes } else { bytes(count, datatype) },
            req: new_req(request, None),
            blocking: trick,
        },
    }
    MPI_File_iread_at => PMPI_File_iread_at(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: c_int,
                                            datatype: MPI_Datatype, request: *mut MPI_Request) as File_iread_at {
        pre: { let trick = recorder::recording(); let mut read_bytes = 0; }
        call: if trick {
            let (rc, b) = prefetch::blocking(fh, Some(offset), buf, count, datatype, request);
            read_bytes = b;
            rc
        } else {
            // SAFETY: the caller's arguments.
            unsafe { mpi_sys::PMPI_File_iread_at(fh, offset, buf, count, datatype, request) }
        },
        post: What::FileIread {
            file: file_id(fh),
            bytes: if trick { read_bytes } else { bytes(count, datatype) },
            req: new_req(request, None),
            blocking: trick,
        },
    }
    MPI_File_iwrite => PMPI_File_iwrite(fh: MPI_File, buf: *const c_void, count: c_int, datatype: MPI_Datatype,
                                        request: *mut MPI_Request) as File_iwrite {
        pre: {}
        post: What::FileIwrite { file: file_id(fh), bytes: bytes(count, datatype), req: new_req(request, None) },
    }
    MPI_File_iwrite_at => PMPI_File_iwrite_at(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: c_int,
                                              datatype: MPI_Datatype, request: *mut MPI_Request) as File_iwrite_at {
        pre: {}
        post: What::FileIwrite { file: file_id(fh), bytes: bytes(count, datatype), req: new_req(request, None) },
    }
}

/// After `PMPI_Init*`: register this thread first (it becomes thread 0),
/// then start the tools and the signal handlers.
pub(crate) fn start() {
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
    if rc == 0 {
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
    if rc == 0 {
        start();
    }
    rc
}

/// Interposed `MPI_Finalize`: the tools finish (the summary gathers its
/// report) while MPI still works.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    for t in tools::tools() {
        t.finalize();
    }
    // SAFETY: plain forwarding.
    unsafe { mpi_sys::PMPI_Finalize() }
}

/// Interposed `MPI_Abort`: the tools write what they can without
/// communicating, then MPI aborts.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Abort(comm: MPI_Comm, errorcode: c_int) -> c_int {
    for t in tools::tools() {
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
    for t in tools::tools() {
        t.pcontrol(level);
    }
    // SAFETY: forwarding the level to the next profiling layer.
    unsafe { mpi_sys::PMPI_Pcontrol(level) }
}
