//! Every C `MPI_*` entry point of the interposer.
//!
//! The wrappers are generated from the one table below by [`wrappers!`]
//! (`generate.rs`). An entry names the MPI function, its arguments (as
//! `mpi-sys` declares the `PMPI_*` function, with a count written `Count`
//! and a displacement array's entry `Displ`), the `PMPI_*` function and the
//! [`Op`], and `[c]` where MPI-4 has a large-count form (`MPI_Send_c`:
//! `Count` is `MPI_Count`, `Displ` is `MPI_Aint`), generated too on an MPI
//! that has them (`cfg(mpi_large_count)`, from `build.rs`); then,
//! optionally:
//! - `idle: { .. }` runs after a successful call even when no tool listens
//!   (`MPI_File_open` names its file this way);
//! - `pre: { .. }` runs before the call while a tool listens (it may swap
//!   an ignored status for one of ours so that the tools can read it);
//! - `call: expr` replaces the plain `PMPI_*` call (the prefetch trick);
//! - `post: expr` builds the recorded [`What`] after a successful call.
//!
//! MPI-4's calls that MPI-3 has no form of (`MPI_Isendrecv`, the
//! persistent collectives) are a second table in this format, in
//! [`mpi4`], on an MPI that has them (`cfg(mpi4_calls)`).
//!
//! Each wrapper is: fast path (one relaxed load, then `PMPI_*`) or pre hook,
//! timed `PMPI_*` call, post hook. The helpers the hooks call are in
//! [`helpers`]; the lifecycle entry points (`Init`, `Init_thread`,
//! `Finalize`, `Abort`, `Pcontrol`) in [`lifecycle`].

#![allow(clippy::missing_safety_doc)]

#[macro_use]
mod generate;
mod helpers;
mod lifecycle;
#[cfg(mpi4_calls)]
mod mpi4;

pub(crate) use helpers::{
    Pending, neighbour_exchange, neighbour_exchange_begun, own_part, own_part_v, root_of, rooted,
    start_one,
};
pub(crate) use lifecycle::start;
pub use lifecycle::{MPI_Abort, MPI_Finalize, MPI_Init, MPI_Init_thread, MPI_Pcontrol};

use crate::clock::now;
use crate::mpi_util::*;
use crate::tools::recorder::{self, Template, drop_request, file_id, open_file, unpersist};
use crate::tools::{self, Call};
use helpers::{CountArg, bytes_w, new_req, nth, nth_w, persist_init, prefetch};
use mheta_trace::{Op, What};
use mpi_sys::{
    MPI_Aint, MPI_Comm, MPI_Datatype, MPI_File, MPI_Info, MPI_Message, MPI_Offset, MPI_Op,
    MPI_Request, MPI_Status,
};
use std::os::raw::{c_char, c_int, c_void};

pub use int_count::*;
#[cfg(mpi_large_count)]
pub use large_count::*;
#[cfg(mpi4_calls)]
pub use mpi4::int_count::*;
#[cfg(all(mpi4_calls, mpi_large_count))]
pub use mpi4::large_count::*;

wrappers! {
    // ---- point-to-point: sends ----
    MPI_Send => PMPI_Send(buf: *const c_void, count: Count, datatype: MPI_Datatype,
                          dest: c_int, tag: c_int, comm: MPI_Comm) as Send [c] {
        pre: {}
        post: What::Send(msg(comm, dest, tag, bytes(count, datatype))),
    }
    MPI_Ssend => PMPI_Ssend(buf: *const c_void, count: Count, datatype: MPI_Datatype,
                            dest: c_int, tag: c_int, comm: MPI_Comm) as Ssend [c] {
        pre: {}
        post: What::Send(msg(comm, dest, tag, bytes(count, datatype))),
    }
    MPI_Bsend => PMPI_Bsend(buf: *const c_void, count: Count, datatype: MPI_Datatype,
                            dest: c_int, tag: c_int, comm: MPI_Comm) as Bsend [c] {
        pre: {}
        post: What::Send(msg(comm, dest, tag, bytes(count, datatype))),
    }
    MPI_Rsend => PMPI_Rsend(ibuf: *const c_void, count: Count, datatype: MPI_Datatype,
                            dest: c_int, tag: c_int, comm: MPI_Comm) as Rsend [c] {
        pre: {}
        post: What::Send(msg(comm, dest, tag, bytes(count, datatype))),
    }
    MPI_Isend => PMPI_Isend(buf: *const c_void, count: Count, datatype: MPI_Datatype,
                            dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Isend [c] {
        pre: {}
        post: What::Isend { msg: msg(comm, dest, tag, bytes(count, datatype)), req: new_req(request, None) },
    }
    MPI_Issend => PMPI_Issend(buf: *const c_void, count: Count, datatype: MPI_Datatype,
                              dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Issend [c] {
        pre: {}
        post: What::Isend { msg: msg(comm, dest, tag, bytes(count, datatype)), req: new_req(request, None) },
    }
    MPI_Ibsend => PMPI_Ibsend(buf: *const c_void, count: Count, datatype: MPI_Datatype,
                              dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Ibsend [c] {
        pre: {}
        post: What::Isend { msg: msg(comm, dest, tag, bytes(count, datatype)), req: new_req(request, None) },
    }
    MPI_Irsend => PMPI_Irsend(buf: *const c_void, count: Count, datatype: MPI_Datatype,
                              dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Irsend [c] {
        pre: {}
        post: What::Isend { msg: msg(comm, dest, tag, bytes(count, datatype)), req: new_req(request, None) },
    }

    // ---- point-to-point: receives and probes ----
    MPI_Recv => PMPI_Recv(buf: *mut c_void, count: Count, datatype: MPI_Datatype,
                          source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) as Recv [c] {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        // SAFETY: the receive completed and filled `status`.
        post: What::Recv(unsafe { msg_from_status(comm, status) }),
    }
    MPI_Irecv => PMPI_Irecv(buf: *mut c_void, count: Count, datatype: MPI_Datatype,
                            source: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Irecv [c] {
        pre: {}
        post: What::Irecv { req: new_req(request, Some(comm)) },
    }
    MPI_Sendrecv => PMPI_Sendrecv(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
                                  dest: c_int, sendtag: c_int,
                                  recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype,
                                  source: c_int, recvtag: c_int, comm: MPI_Comm,
                                  status: *mut MPI_Status) as Sendrecv [c] {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        post: What::Sendrecv {
            send: msg(comm, dest, sendtag, bytes(sendcount, sendtype)),
            // SAFETY: the receive half completed and filled `status`.
            recv: unsafe { msg_from_status(comm, status) },
        },
    }
    MPI_Sendrecv_replace => PMPI_Sendrecv_replace(buf: *mut c_void, count: Count, datatype: MPI_Datatype,
                                                  dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int,
                                                  comm: MPI_Comm, status: *mut MPI_Status) as Sendrecv_replace [c] {
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
    MPI_Mrecv => PMPI_Mrecv(buf: *mut c_void, count: Count, type_: MPI_Datatype,
                            message: *mut MPI_Message, status: *mut MPI_Status) as Mrecv [c] {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        // SAFETY: the matched receive completed and filled `status`.
        post: What::MatchedRecv { bytes: unsafe { status_bytes(status) } },
    }
    MPI_Imrecv => PMPI_Imrecv(buf: *mut c_void, count: Count, type_: MPI_Datatype,
                              message: *mut MPI_Message, request: *mut MPI_Request) as Imrecv [c] {
        pre: {}
        post: What::Irecv { req: new_req(request, None) },
    }

    // ---- persistent requests ----
    MPI_Send_init => PMPI_Send_init(buf: *const c_void, count: Count, datatype: MPI_Datatype,
                                      dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Send_init [c] {
        idle: { persist_init(request, Template::Send(msg(comm, dest, tag, bytes(count, datatype)))); }
        pre: {}
        post: What::PersistentInit { send: true, msg: msg(comm, dest, tag, bytes(count, datatype)) },
    }
    MPI_Bsend_init => PMPI_Bsend_init(buf: *const c_void, count: Count, datatype: MPI_Datatype,
                                      dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Bsend_init [c] {
        idle: { persist_init(request, Template::Send(msg(comm, dest, tag, bytes(count, datatype)))); }
        pre: {}
        post: What::PersistentInit { send: true, msg: msg(comm, dest, tag, bytes(count, datatype)) },
    }
    MPI_Ssend_init => PMPI_Ssend_init(buf: *const c_void, count: Count, datatype: MPI_Datatype,
                                      dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Ssend_init [c] {
        idle: { persist_init(request, Template::Send(msg(comm, dest, tag, bytes(count, datatype)))); }
        pre: {}
        post: What::PersistentInit { send: true, msg: msg(comm, dest, tag, bytes(count, datatype)) },
    }
    MPI_Rsend_init => PMPI_Rsend_init(buf: *const c_void, count: Count, datatype: MPI_Datatype,
                                      dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Rsend_init [c] {
        idle: { persist_init(request, Template::Send(msg(comm, dest, tag, bytes(count, datatype)))); }
        pre: {}
        post: What::PersistentInit { send: true, msg: msg(comm, dest, tag, bytes(count, datatype)) },
    }
    MPI_Recv_init => PMPI_Recv_init(buf: *mut c_void, count: Count, datatype: MPI_Datatype,
                                    source: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Recv_init [c] {
        idle: { persist_init(request, Template::Recv(Sources::of(comm))); }
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
            drop_request(h);
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
    MPI_Bcast => PMPI_Bcast(buffer: *mut c_void, count: Count, datatype: MPI_Datatype, root: c_int,
                            comm: MPI_Comm) as Bcast [c] {
        pre: {}
        post: What::Collective { bytes: rooted(root, || bytes(count, datatype)), comm_size: comm_size(comm), root: root_of(comm, root) },
    }
    MPI_Reduce => PMPI_Reduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype,
                              op: MPI_Op, root: c_int, comm: MPI_Comm) as Reduce [c] {
        pre: {}
        post: What::Collective { bytes: rooted(root, || bytes(count, datatype)), comm_size: comm_size(comm), root: root_of(comm, root) },
    }
    MPI_Allreduce => PMPI_Allreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count,
                                    datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) as Allreduce [c] {
        pre: {}
        post: What::Collective { bytes: bytes(count, datatype), comm_size: comm_size(comm), root: -1 },
    }
    MPI_Gather => PMPI_Gather(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
                              recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype,
                              root: c_int, comm: MPI_Comm) as Gather [c] {
        pre: {}
        post: What::Collective { bytes: rooted(root, || own_part(sendbuf, sendcount, sendtype, recvcount, recvtype)), comm_size: comm_size(comm), root: root_of(comm, root) },
    }
    MPI_Gatherv => PMPI_Gatherv(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
                                recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Displ,
                                recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) as Gatherv [c] {
        pre: {}
        // SAFETY: in place, recvcounts has one entry per rank of comm.
        post: What::Collective { bytes: rooted(root, || unsafe { own_part_v(sendbuf, sendcount, sendtype, recvcounts, recvtype, comm) }), comm_size: comm_size(comm), root: root_of(comm, root) },
    }
    MPI_Scatter => PMPI_Scatter(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
                                recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype,
                                root: c_int, comm: MPI_Comm) as Scatter [c] {
        pre: {}
        post: What::Collective { bytes: rooted(root, || own_part(recvbuf, recvcount, recvtype, sendcount, sendtype)), comm_size: comm_size(comm), root: root_of(comm, root) },
    }
    MPI_Scatterv => PMPI_Scatterv(sendbuf: *const c_void, sendcounts: *const Count, displs: *const Displ,
                                  sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count,
                                  recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) as Scatterv [c] {
        pre: {}
        // SAFETY: in place, sendcounts has one entry per rank of comm.
        post: What::Collective { bytes: rooted(root, || unsafe { own_part_v(recvbuf, recvcount, recvtype, sendcounts, sendtype, comm) }), comm_size: comm_size(comm), root: root_of(comm, root) },
    }
    MPI_Allgather => PMPI_Allgather(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
                                    recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype,
                                    comm: MPI_Comm) as Allgather [c] {
        pre: {}
        post: What::Collective { bytes: own_part(sendbuf, sendcount, sendtype, recvcount, recvtype), comm_size: comm_size(comm), root: -1 },
    }
    MPI_Allgatherv => PMPI_Allgatherv(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
                                      recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Displ,
                                      recvtype: MPI_Datatype, comm: MPI_Comm) as Allgatherv [c] {
        pre: {}
        // SAFETY: in place, recvcounts has one entry per rank of comm.
        post: What::Collective { bytes: unsafe { own_part_v(sendbuf, sendcount, sendtype, recvcounts, recvtype, comm) }, comm_size: comm_size(comm), root: -1 },
    }
    MPI_Alltoall => PMPI_Alltoall(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
                                  recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype,
                                  comm: MPI_Comm) as Alltoall [c] {
        pre: { let n = peer_size(comm); }
        post: What::Collective { bytes: own_part(sendbuf, sendcount, sendtype, recvcount, recvtype) * n as u64, comm_size: n, root: -1 },
    }
    MPI_Alltoallv => PMPI_Alltoallv(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Displ,
                                    sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count,
                                    rdispls: *const Displ, recvtype: MPI_Datatype, comm: MPI_Comm) as Alltoallv [c] {
        pre: { let n = peer_size(comm); }
        // SAFETY: the counts have one entry per peer of comm.
        post: What::Collective { bytes: unsafe { if in_place(sendbuf) { bytes_v(recvcounts, n, recvtype) } else { bytes_v(sendcounts, n, sendtype) } }, comm_size: n, root: -1 },
    }
    MPI_Reduce_scatter => PMPI_Reduce_scatter(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const Count,
                                              datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) as Reduce_scatter [c] {
        pre: { let n = comm_size(comm); }
        // SAFETY: recvcounts has one entry per rank of comm.
        post: What::Collective { bytes: unsafe { bytes_v(recvcounts, n, datatype) }, comm_size: n, root: -1 },
    }
    MPI_Reduce_scatter_block => PMPI_Reduce_scatter_block(sendbuf: *const c_void, recvbuf: *mut c_void,
                                                          recvcount: Count, datatype: MPI_Datatype, op: MPI_Op,
                                                          comm: MPI_Comm) as Reduce_scatter_block [c] {
        pre: { let n = comm_size(comm); }
        post: What::Collective { bytes: bytes(recvcount, datatype) * n as u64, comm_size: n, root: -1 },
    }

    MPI_Scan => PMPI_Scan(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype,
                          op: MPI_Op, comm: MPI_Comm) as Scan [c] {
        pre: {}
        post: What::Collective { bytes: bytes(count, datatype), comm_size: comm_size(comm), root: -1 },
    }
    MPI_Exscan => PMPI_Exscan(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype,
                              op: MPI_Op, comm: MPI_Comm) as Exscan [c] {
        pre: {}
        post: What::Collective { bytes: bytes(count, datatype), comm_size: comm_size(comm), root: -1 },
    }
    MPI_Alltoallw => PMPI_Alltoallw(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Displ,
                                    sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count,
                                    rdispls: *const Displ, recvtypes: *const MPI_Datatype, comm: MPI_Comm) as Alltoallw [c] {
        pre: { let n = peer_size(comm); }
        // SAFETY: the counts and types have one entry per peer of comm.
        post: What::Collective {
            bytes: unsafe {
                if in_place(sendbuf) { bytes_w(recvcounts, recvtypes, n as usize) } else { bytes_w(sendcounts, sendtypes, n as usize) }
            },
            comm_size: n,
            root: -1,
        },
    }

    // ---- neighbourhood collectives: a message to each destination and
    // one from each source of the topology ----
    MPI_Neighbor_allgather => PMPI_Neighbor_allgather(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
                                                      recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype,
                                                      comm: MPI_Comm) as Neighbor_allgather [c] {
        pre: {}
        post: neighbour_exchange(comm, |_| bytes(sendcount, sendtype), |_| bytes(recvcount, recvtype)),
    }
    MPI_Neighbor_allgatherv => PMPI_Neighbor_allgatherv(sendbuf: *const c_void, sendcount: Count,
                                                        sendtype: MPI_Datatype, recvbuf: *mut c_void,
                                                        recvcounts: *const Count, displs: *const Displ,
                                                        recvtype: MPI_Datatype, comm: MPI_Comm) as Neighbor_allgatherv [c] {
        pre: {}
        // SAFETY: recvcounts has one entry per source.
        post: neighbour_exchange(comm, |_| bytes(sendcount, sendtype), |k| bytes(unsafe { nth(recvcounts, k) }, recvtype)),
    }
    MPI_Neighbor_alltoall => PMPI_Neighbor_alltoall(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
                                                    recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype,
                                                    comm: MPI_Comm) as Neighbor_alltoall [c] {
        pre: {}
        post: neighbour_exchange(comm, |_| bytes(sendcount, sendtype), |_| bytes(recvcount, recvtype)),
    }
    MPI_Neighbor_alltoallv => PMPI_Neighbor_alltoallv(sendbuf: *const c_void, sendcounts: *const Count,
                                                      sdispls: *const Displ, sendtype: MPI_Datatype,
                                                      recvbuf: *mut c_void, recvcounts: *const Count,
                                                      rdispls: *const Displ, recvtype: MPI_Datatype,
                                                      comm: MPI_Comm) as Neighbor_alltoallv [c] {
        pre: {}
        // SAFETY: the counts have one entry per destination and source.
        post: neighbour_exchange(comm, |k| bytes(unsafe { nth(sendcounts, k) }, sendtype),
                                 |k| bytes(unsafe { nth(recvcounts, k) }, recvtype)),
    }
    MPI_Neighbor_alltoallw => PMPI_Neighbor_alltoallw(sendbuf: *const c_void, sendcounts: *const Count,
                                                      sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype,
                                                      recvbuf: *mut c_void, recvcounts: *const Count,
                                                      rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype,
                                                      comm: MPI_Comm) as Neighbor_alltoallw [c] {
        pre: {}
        // SAFETY: the counts and types have one entry per destination and
        // source.
        post: neighbour_exchange(comm, |k| unsafe { nth_w(sendcounts, sendtypes, k) },
                                 |k| unsafe { nth_w(recvcounts, recvtypes, k) }),
    }

    // ---- non-blocking collectives ----
    MPI_Ibarrier => PMPI_Ibarrier(comm: MPI_Comm, request: *mut MPI_Request) as Ibarrier {
        pre: {}
        post: What::ICollective { bytes: 0, comm_size: comm_size(comm), root: -1, req: new_req(request, None) },
    }
    MPI_Ibcast => PMPI_Ibcast(buffer: *mut c_void, count: Count, datatype: MPI_Datatype, root: c_int,
                              comm: MPI_Comm, request: *mut MPI_Request) as Ibcast [c] {
        pre: {}
        post: What::ICollective { bytes: rooted(root, || bytes(count, datatype)), comm_size: comm_size(comm), root: root_of(comm, root), req: new_req(request, None) },
    }
    MPI_Ireduce => PMPI_Ireduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype,
                                op: MPI_Op, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Ireduce [c] {
        pre: {}
        post: What::ICollective { bytes: rooted(root, || bytes(count, datatype)), comm_size: comm_size(comm), root: root_of(comm, root), req: new_req(request, None) },
    }
    MPI_Iallreduce => PMPI_Iallreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count,
                                      datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm,
                                      request: *mut MPI_Request) as Iallreduce [c] {
        pre: {}
        post: What::ICollective { bytes: bytes(count, datatype), comm_size: comm_size(comm), root: -1, req: new_req(request, None) },
    }
    MPI_Igather => PMPI_Igather(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
                                recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype,
                                root: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Igather [c] {
        pre: {}
        post: What::ICollective { bytes: rooted(root, || own_part(sendbuf, sendcount, sendtype, recvcount, recvtype)), comm_size: comm_size(comm), root: root_of(comm, root), req: new_req(request, None) },
    }
    MPI_Igatherv => PMPI_Igatherv(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
                                  recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Displ,
                                  recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm,
                                  request: *mut MPI_Request) as Igatherv [c] {
        pre: {}
        // SAFETY: in place, recvcounts has one entry per rank of comm.
        post: What::ICollective { bytes: rooted(root, || unsafe { own_part_v(sendbuf, sendcount, sendtype, recvcounts, recvtype, comm) }), comm_size: comm_size(comm), root: root_of(comm, root), req: new_req(request, None) },
    }
    MPI_Iscatter => PMPI_Iscatter(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
                                  recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype,
                                  root: c_int, comm: MPI_Comm, request: *mut MPI_Request) as Iscatter [c] {
        pre: {}
        post: What::ICollective { bytes: rooted(root, || own_part(recvbuf, recvcount, recvtype, sendcount, sendtype)), comm_size: comm_size(comm), root: root_of(comm, root), req: new_req(request, None) },
    }
    MPI_Iscatterv => PMPI_Iscatterv(sendbuf: *const c_void, sendcounts: *const Count, displs: *const Displ,
                                    sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count,
                                    recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm,
                                    request: *mut MPI_Request) as Iscatterv [c] {
        pre: {}
        // SAFETY: in place, sendcounts has one entry per rank of comm.
        post: What::ICollective { bytes: rooted(root, || unsafe { own_part_v(recvbuf, recvcount, recvtype, sendcounts, sendtype, comm) }), comm_size: comm_size(comm), root: root_of(comm, root), req: new_req(request, None) },
    }
    MPI_Iallgather => PMPI_Iallgather(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
                                      recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype,
                                      comm: MPI_Comm, request: *mut MPI_Request) as Iallgather [c] {
        pre: {}
        post: What::ICollective { bytes: own_part(sendbuf, sendcount, sendtype, recvcount, recvtype), comm_size: comm_size(comm), root: -1, req: new_req(request, None) },
    }
    MPI_Iallgatherv => PMPI_Iallgatherv(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
                                        recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Displ,
                                        recvtype: MPI_Datatype, comm: MPI_Comm,
                                        request: *mut MPI_Request) as Iallgatherv [c] {
        pre: {}
        // SAFETY: in place, recvcounts has one entry per rank of comm.
        post: What::ICollective { bytes: unsafe { own_part_v(sendbuf, sendcount, sendtype, recvcounts, recvtype, comm) }, comm_size: comm_size(comm), root: -1, req: new_req(request, None) },
    }
    MPI_Ialltoall => PMPI_Ialltoall(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
                                    recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype,
                                    comm: MPI_Comm, request: *mut MPI_Request) as Ialltoall [c] {
        pre: { let n = peer_size(comm); }
        post: What::ICollective { bytes: own_part(sendbuf, sendcount, sendtype, recvcount, recvtype) * n as u64, comm_size: n, root: -1, req: new_req(request, None) },
    }
    MPI_Ialltoallv => PMPI_Ialltoallv(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Displ,
                                      sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count,
                                      rdispls: *const Displ, recvtype: MPI_Datatype, comm: MPI_Comm,
                                      request: *mut MPI_Request) as Ialltoallv [c] {
        pre: { let n = peer_size(comm); }
        // SAFETY: the counts have one entry per peer of comm.
        post: What::ICollective { bytes: unsafe { if in_place(sendbuf) { bytes_v(recvcounts, n, recvtype) } else { bytes_v(sendcounts, n, sendtype) } }, comm_size: n, root: -1, req: new_req(request, None) },
    }
    MPI_Ireduce_scatter => PMPI_Ireduce_scatter(sendbuf: *const c_void, recvbuf: *mut c_void,
                                                recvcounts: *const Count, datatype: MPI_Datatype, op: MPI_Op,
                                                comm: MPI_Comm, request: *mut MPI_Request) as Ireduce_scatter [c] {
        pre: { let n = comm_size(comm); }
        // SAFETY: recvcounts has one entry per rank of comm.
        post: What::ICollective { bytes: unsafe { bytes_v(recvcounts, n, datatype) }, comm_size: n, root: -1, req: new_req(request, None) },
    }
    MPI_Ireduce_scatter_block => PMPI_Ireduce_scatter_block(sendbuf: *const c_void, recvbuf: *mut c_void,
                                                            recvcount: Count, datatype: MPI_Datatype, op: MPI_Op,
                                                            comm: MPI_Comm, request: *mut MPI_Request) as Ireduce_scatter_block [c] {
        pre: { let n = comm_size(comm); }
        post: What::ICollective { bytes: bytes(recvcount, datatype) * n as u64, comm_size: n, root: -1, req: new_req(request, None) },
    }

    MPI_Iscan => PMPI_Iscan(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype,
                            op: MPI_Op, comm: MPI_Comm, request: *mut MPI_Request) as Iscan [c] {
        pre: {}
        post: What::ICollective { bytes: bytes(count, datatype), comm_size: comm_size(comm), root: -1, req: new_req(request, None) },
    }
    MPI_Iexscan => PMPI_Iexscan(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype,
                                op: MPI_Op, comm: MPI_Comm, request: *mut MPI_Request) as Iexscan [c] {
        pre: {}
        post: What::ICollective { bytes: bytes(count, datatype), comm_size: comm_size(comm), root: -1, req: new_req(request, None) },
    }
    MPI_Ialltoallw => PMPI_Ialltoallw(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Displ,
                                      sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count,
                                      rdispls: *const Displ, recvtypes: *const MPI_Datatype, comm: MPI_Comm,
                                      request: *mut MPI_Request) as Ialltoallw [c] {
        pre: { let n = peer_size(comm); }
        // SAFETY: the counts and types have one entry per peer of comm.
        post: What::ICollective {
            bytes: unsafe {
                if in_place(sendbuf) { bytes_w(recvcounts, recvtypes, n as usize) } else { bytes_w(sendcounts, sendtypes, n as usize) }
            },
            comm_size: n,
            root: -1,
            req: new_req(request, None),
        },
    }
    MPI_Ineighbor_allgather => PMPI_Ineighbor_allgather(sendbuf: *const c_void, sendcount: Count,
                                                        sendtype: MPI_Datatype, recvbuf: *mut c_void,
                                                        recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm,
                                                        request: *mut MPI_Request) as Ineighbor_allgather [c] {
        pre: {}
        post: neighbour_exchange_begun(comm, |_| bytes(sendcount, sendtype), |_| bytes(recvcount, recvtype),
                                       new_req(request, None)),
    }
    MPI_Ineighbor_allgatherv => PMPI_Ineighbor_allgatherv(sendbuf: *const c_void, sendcount: Count,
                                                          sendtype: MPI_Datatype, recvbuf: *mut c_void,
                                                          recvcounts: *const Count, displs: *const Displ,
                                                          recvtype: MPI_Datatype, comm: MPI_Comm,
                                                          request: *mut MPI_Request) as Ineighbor_allgatherv [c] {
        pre: {}
        // SAFETY: recvcounts has one entry per source.
        post: neighbour_exchange_begun(comm, |_| bytes(sendcount, sendtype),
                                       |k| bytes(unsafe { nth(recvcounts, k) }, recvtype), new_req(request, None)),
    }
    MPI_Ineighbor_alltoall => PMPI_Ineighbor_alltoall(sendbuf: *const c_void, sendcount: Count,
                                                      sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count,
                                                      recvtype: MPI_Datatype, comm: MPI_Comm,
                                                      request: *mut MPI_Request) as Ineighbor_alltoall [c] {
        pre: {}
        post: neighbour_exchange_begun(comm, |_| bytes(sendcount, sendtype), |_| bytes(recvcount, recvtype),
                                       new_req(request, None)),
    }
    MPI_Ineighbor_alltoallv => PMPI_Ineighbor_alltoallv(sendbuf: *const c_void, sendcounts: *const Count,
                                                        sdispls: *const Displ, sendtype: MPI_Datatype,
                                                        recvbuf: *mut c_void, recvcounts: *const Count,
                                                        rdispls: *const Displ, recvtype: MPI_Datatype,
                                                        comm: MPI_Comm, request: *mut MPI_Request) as Ineighbor_alltoallv [c] {
        pre: {}
        // SAFETY: the counts have one entry per destination and source.
        post: neighbour_exchange_begun(comm, |k| bytes(unsafe { nth(sendcounts, k) }, sendtype),
                                       |k| bytes(unsafe { nth(recvcounts, k) }, recvtype), new_req(request, None)),
    }
    MPI_Ineighbor_alltoallw => PMPI_Ineighbor_alltoallw(sendbuf: *const c_void, sendcounts: *const Count,
                                                        sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype,
                                                        recvbuf: *mut c_void, recvcounts: *const Count,
                                                        rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype,
                                                        comm: MPI_Comm, request: *mut MPI_Request) as Ineighbor_alltoallw [c] {
        pre: {}
        // SAFETY: the counts and types have one entry per destination and
        // source.
        post: neighbour_exchange_begun(comm, |k| unsafe { nth_w(sendcounts, sendtypes, k) },
                                       |k| unsafe { nth_w(recvcounts, recvtypes, k) }, new_req(request, None)),
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
    MPI_File_read => PMPI_File_read(fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype,
                                    status: *mut MPI_Status) as File_read [c] {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        // SAFETY: the read completed and filled `status`.
        post: What::FileRead { file: file_id(fh), bytes: unsafe { status_bytes(status) }, at: false, collective: false },
    }
    MPI_File_write => PMPI_File_write(fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype,
                                      status: *mut MPI_Status) as File_write [c] {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        // SAFETY: the write completed and filled `status`.
        post: What::FileWrite { file: file_id(fh), bytes: unsafe { status_bytes(status) }, at: false, collective: false },
    }
    MPI_File_read_at => PMPI_File_read_at(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: Count,
                                          datatype: MPI_Datatype, status: *mut MPI_Status) as File_read_at [c] {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        // SAFETY: the read completed and filled `status`.
        post: What::FileRead { file: file_id(fh), bytes: unsafe { status_bytes(status) }, at: true, collective: false },
    }
    MPI_File_write_at => PMPI_File_write_at(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: Count,
                                            datatype: MPI_Datatype, status: *mut MPI_Status) as File_write_at [c] {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        // SAFETY: the write completed and filled `status`.
        post: What::FileWrite { file: file_id(fh), bytes: unsafe { status_bytes(status) }, at: true, collective: false },
    }
    MPI_File_read_all => PMPI_File_read_all(fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype,
                                            status: *mut MPI_Status) as File_read_all [c] {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        // SAFETY: the read completed and filled `status`.
        post: What::FileRead { file: file_id(fh), bytes: unsafe { status_bytes(status) }, at: false, collective: true },
    }
    MPI_File_write_all => PMPI_File_write_all(fh: MPI_File, buf: *const c_void, count: Count,
                                              datatype: MPI_Datatype, status: *mut MPI_Status) as File_write_all [c] {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        // SAFETY: the write completed and filled `status`.
        post: What::FileWrite { file: file_id(fh), bytes: unsafe { status_bytes(status) }, at: false, collective: true },
    }
    MPI_File_read_at_all => PMPI_File_read_at_all(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: Count,
                                                  datatype: MPI_Datatype, status: *mut MPI_Status) as File_read_at_all [c] {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        // SAFETY: the read completed and filled `status`.
        post: What::FileRead { file: file_id(fh), bytes: unsafe { status_bytes(status) }, at: true, collective: true },
    }
    MPI_File_write_at_all => PMPI_File_write_at_all(fh: MPI_File, offset: MPI_Offset, buf: *const c_void,
                                                    count: Count, datatype: MPI_Datatype,
                                                    status: *mut MPI_Status) as File_write_at_all [c] {
        pre: { let mut own = blank_status(); let status = own_status(status, &mut own); }
        // SAFETY: the write completed and filled `status`.
        post: What::FileWrite { file: file_id(fh), bytes: unsafe { status_bytes(status) }, at: true, collective: true },
    }
    MPI_File_iread => PMPI_File_iread(fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype,
                                      request: *mut MPI_Request) as File_iread [c] {
        pre: { let trick = recorder::recording(); let mut read_bytes = 0; }
        call: if trick {
            let (rc, b) = prefetch::blocking(
                // SAFETY: the caller's arguments; the status is the trick's own.
                |st| unsafe { Count::file_read(fh, None, buf, count, datatype, st) },
                request,
            );
            read_bytes = b;
            rc
        } else {
            // SAFETY: the caller's arguments.
            unsafe { Count::file_iread(fh, None, buf, count, datatype, request) }
        },
        post: What::FileIread {
            file: file_id(fh),
            bytes: if trick { read_bytes } else { bytes(count, datatype) },
            req: new_req(request, None),
            blocking: trick,
        },
    }
    MPI_File_iread_at => PMPI_File_iread_at(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: Count,
                                            datatype: MPI_Datatype, request: *mut MPI_Request) as File_iread_at [c] {
        pre: { let trick = recorder::recording(); let mut read_bytes = 0; }
        call: if trick {
            let (rc, b) = prefetch::blocking(
                // SAFETY: the caller's arguments; the status is the trick's own.
                |st| unsafe { Count::file_read(fh, Some(offset), buf, count, datatype, st) },
                request,
            );
            read_bytes = b;
            rc
        } else {
            // SAFETY: the caller's arguments.
            unsafe { Count::file_iread(fh, Some(offset), buf, count, datatype, request) }
        },
        post: What::FileIread {
            file: file_id(fh),
            bytes: if trick { read_bytes } else { bytes(count, datatype) },
            req: new_req(request, None),
            blocking: trick,
        },
    }
    MPI_File_iwrite => PMPI_File_iwrite(fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype,
                                        request: *mut MPI_Request) as File_iwrite [c] {
        pre: {}
        post: What::FileIwrite { file: file_id(fh), bytes: bytes(count, datatype), req: new_req(request, None) },
    }
    MPI_File_iwrite_at => PMPI_File_iwrite_at(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: Count,
                                              datatype: MPI_Datatype, request: *mut MPI_Request) as File_iwrite_at [c] {
        pre: {}
        post: What::FileIwrite { file: file_id(fh), bytes: bytes(count, datatype), req: new_req(request, None) },
    }
}
