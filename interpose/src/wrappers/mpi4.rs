//! The MPI-4 C entry points that MPI-3 has no form of, on an MPI that has
//! them (`cfg(mpi4_calls)`, from `build.rs`: MPICH 4 does, Open MPI 4.1
//! does not): `MPI_Isendrecv(_replace)` and the persistent collectives
//! (`MPI_Bcast_init`, ...). A second table in the format of the first
//! ([`super`]), expanded by the same [`wrappers!`], `[c]` forms included.
//!
//! - `MPI_Isendrecv(_replace)` is recorded as a [`What::INeighbor`] of one
//!   send and one receive, begun here and completed with its request.
//! - A persistent collective's set-up keeps, even when no tool listens
//!   (`idle`), what one start of it stands for: the non-blocking
//!   collective's bytes, size and root, or the neighbourhood exchange's
//!   messages ([`Template`]). Each `MPI_Start(all)` then records it as that
//!   non-blocking collective with a fresh request id, as it does a
//!   persistent send or receive. The set-up itself moves nothing
//!   ([`What::PersistentCollectiveInit`]).
//! - A partitioned send or receive (`MPI_Psend_init`, `MPI_Precv_init`)
//!   is kept as the persistent send or receive of all its partitions, and
//!   each start records it as one `Isend` or `Irecv`, completed with its
//!   request. `MPI_Pready(_range, _list)` and `MPI_Parrived` pass through
//!   unrecorded: the time in them is the program's own, as between calls.

use super::helpers::neighbour_template;
use super::*;

/// The bytes of all `partitions` partitions of `count` elements each.
fn partitioned(partitions: c_int, count: mpi_sys::MPI_Count, datatype: MPI_Datatype) -> u64 {
    bytes(count, datatype).saturating_mul(partitions.max(0) as u64)
}

/// A persistent collective's template: what each start stands for.
fn coll(op: Op, bytes: u64, comm_size: u32, root: i32) -> Template {
    Template::Collective {
        op,
        bytes,
        comm_size,
        root,
    }
}

wrappers! {
    // ---- the non-blocking send-receive ----
    MPI_Isendrecv => PMPI_Isendrecv(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
                                    dest: c_int, sendtag: c_int,
                                    recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype,
                                    source: c_int, recvtag: c_int, comm: MPI_Comm,
                                    request: *mut MPI_Request) as Isendrecv [c] {
        pre: {}
        post: What::INeighbor {
            sends: vec![msg(comm, dest, sendtag, bytes(sendcount, sendtype))],
            recvs: vec![msg(comm, source, recvtag, bytes(recvcount, recvtype))],
            req: new_req(request, None),
        },
    }
    MPI_Isendrecv_replace => PMPI_Isendrecv_replace(buf: *mut c_void, count: Count, datatype: MPI_Datatype,
                                                    dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int,
                                                    comm: MPI_Comm, request: *mut MPI_Request) as Isendrecv_replace [c] {
        pre: {}
        post: What::INeighbor {
            sends: vec![msg(comm, dest, sendtag, bytes(count, datatype))],
            recvs: vec![msg(comm, source, recvtag, bytes(count, datatype))],
            req: new_req(request, None),
        },
    }

    // ---- persistent collectives: each start as its non-blocking form ----
    MPI_Barrier_init => PMPI_Barrier_init(comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) as Barrier_init {
        idle: { persist_init(request, coll(Op::Barrier_init, 0, comm_size(comm), -1)); }
        pre: {}
        post: What::PersistentCollectiveInit,
    }
    MPI_Bcast_init => PMPI_Bcast_init(buffer: *mut c_void, count: Count, datatype: MPI_Datatype, root: c_int,
                                      comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) as Bcast_init [c] {
        idle: { persist_init(request, coll(Op::Bcast_init, rooted(root, || bytes(count, datatype)), comm_size(comm), root_of(comm, root))); }
        pre: {}
        post: What::PersistentCollectiveInit,
    }
    MPI_Reduce_init => PMPI_Reduce_init(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count,
                                        datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm,
                                        info: MPI_Info, request: *mut MPI_Request) as Reduce_init [c] {
        idle: { persist_init(request, coll(Op::Reduce_init, rooted(root, || bytes(count, datatype)), comm_size(comm), root_of(comm, root))); }
        pre: {}
        post: What::PersistentCollectiveInit,
    }
    MPI_Allreduce_init => PMPI_Allreduce_init(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count,
                                              datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm,
                                              info: MPI_Info, request: *mut MPI_Request) as Allreduce_init [c] {
        idle: { persist_init(request, coll(Op::Allreduce_init, bytes(count, datatype), comm_size(comm), -1)); }
        pre: {}
        post: What::PersistentCollectiveInit,
    }
    MPI_Gather_init => PMPI_Gather_init(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
                                        recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype,
                                        root: c_int, comm: MPI_Comm, info: MPI_Info,
                                        request: *mut MPI_Request) as Gather_init [c] {
        idle: {
            let b = rooted(root, || own_part(sendbuf, sendcount, sendtype, recvcount, recvtype));
            persist_init(request, coll(Op::Gather_init, b, comm_size(comm), root_of(comm, root)));
        }
        pre: {}
        post: What::PersistentCollectiveInit,
    }
    MPI_Gatherv_init => PMPI_Gatherv_init(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
                                          recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Displ,
                                          recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, info: MPI_Info,
                                          request: *mut MPI_Request) as Gatherv_init [c] {
        idle: {
            // SAFETY: in place, recvcounts has one entry per rank of comm.
            let b = rooted(root, || unsafe { own_part_v(sendbuf, sendcount, sendtype, recvcounts, recvtype, comm) });
            persist_init(request, coll(Op::Gatherv_init, b, comm_size(comm), root_of(comm, root)));
        }
        pre: {}
        post: What::PersistentCollectiveInit,
    }
    MPI_Scatter_init => PMPI_Scatter_init(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
                                          recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype,
                                          root: c_int, comm: MPI_Comm, info: MPI_Info,
                                          request: *mut MPI_Request) as Scatter_init [c] {
        idle: {
            let b = rooted(root, || own_part(recvbuf, recvcount, recvtype, sendcount, sendtype));
            persist_init(request, coll(Op::Scatter_init, b, comm_size(comm), root_of(comm, root)));
        }
        pre: {}
        post: What::PersistentCollectiveInit,
    }
    MPI_Scatterv_init => PMPI_Scatterv_init(sendbuf: *const c_void, sendcounts: *const Count, displs: *const Displ,
                                            sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count,
                                            recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, info: MPI_Info,
                                            request: *mut MPI_Request) as Scatterv_init [c] {
        idle: {
            // SAFETY: in place, sendcounts has one entry per rank of comm.
            let b = rooted(root, || unsafe { own_part_v(recvbuf, recvcount, recvtype, sendcounts, sendtype, comm) });
            persist_init(request, coll(Op::Scatterv_init, b, comm_size(comm), root_of(comm, root)));
        }
        pre: {}
        post: What::PersistentCollectiveInit,
    }
    MPI_Allgather_init => PMPI_Allgather_init(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
                                              recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype,
                                              comm: MPI_Comm, info: MPI_Info,
                                              request: *mut MPI_Request) as Allgather_init [c] {
        idle: { persist_init(request, coll(Op::Allgather_init, own_part(sendbuf, sendcount, sendtype, recvcount, recvtype), comm_size(comm), -1)); }
        pre: {}
        post: What::PersistentCollectiveInit,
    }
    MPI_Allgatherv_init => PMPI_Allgatherv_init(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
                                                recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Displ,
                                                recvtype: MPI_Datatype, comm: MPI_Comm, info: MPI_Info,
                                                request: *mut MPI_Request) as Allgatherv_init [c] {
        idle: {
            // SAFETY: in place, recvcounts has one entry per rank of comm.
            let b = unsafe { own_part_v(sendbuf, sendcount, sendtype, recvcounts, recvtype, comm) };
            persist_init(request, coll(Op::Allgatherv_init, b, comm_size(comm), -1));
        }
        pre: {}
        post: What::PersistentCollectiveInit,
    }
    MPI_Alltoall_init => PMPI_Alltoall_init(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
                                            recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype,
                                            comm: MPI_Comm, info: MPI_Info,
                                            request: *mut MPI_Request) as Alltoall_init [c] {
        idle: {
            let n = peer_size(comm);
            persist_init(request, coll(Op::Alltoall_init, own_part(sendbuf, sendcount, sendtype, recvcount, recvtype) * n as u64, n, -1));
        }
        pre: {}
        post: What::PersistentCollectiveInit,
    }
    MPI_Alltoallv_init => PMPI_Alltoallv_init(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Displ,
                                              sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count,
                                              rdispls: *const Displ, recvtype: MPI_Datatype, comm: MPI_Comm,
                                              info: MPI_Info, request: *mut MPI_Request) as Alltoallv_init [c] {
        idle: {
            let n = peer_size(comm);
            // SAFETY: the counts have one entry per peer of comm.
            let b = unsafe { if in_place(sendbuf) { bytes_v(recvcounts, n, recvtype) } else { bytes_v(sendcounts, n, sendtype) } };
            persist_init(request, coll(Op::Alltoallv_init, b, n, -1));
        }
        pre: {}
        post: What::PersistentCollectiveInit,
    }
    MPI_Alltoallw_init => PMPI_Alltoallw_init(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Displ,
                                              sendtypes: *const MPI_Datatype, recvbuf: *mut c_void,
                                              recvcounts: *const Count, rdispls: *const Displ,
                                              recvtypes: *const MPI_Datatype, comm: MPI_Comm, info: MPI_Info,
                                              request: *mut MPI_Request) as Alltoallw_init [c] {
        idle: {
            let n = peer_size(comm);
            // SAFETY: the counts and types have one entry per peer of comm.
            let b = unsafe {
                if in_place(sendbuf) { bytes_w(recvcounts, recvtypes, n as usize) } else { bytes_w(sendcounts, sendtypes, n as usize) }
            };
            persist_init(request, coll(Op::Alltoallw_init, b, n, -1));
        }
        pre: {}
        post: What::PersistentCollectiveInit,
    }
    MPI_Reduce_scatter_init => PMPI_Reduce_scatter_init(sendbuf: *const c_void, recvbuf: *mut c_void,
                                                        recvcounts: *const Count, datatype: MPI_Datatype, op: MPI_Op,
                                                        comm: MPI_Comm, info: MPI_Info,
                                                        request: *mut MPI_Request) as Reduce_scatter_init [c] {
        idle: {
            let n = comm_size(comm);
            // SAFETY: recvcounts has one entry per rank of comm.
            persist_init(request, coll(Op::Reduce_scatter_init, unsafe { bytes_v(recvcounts, n, datatype) }, n, -1));
        }
        pre: {}
        post: What::PersistentCollectiveInit,
    }
    MPI_Reduce_scatter_block_init => PMPI_Reduce_scatter_block_init(sendbuf: *const c_void, recvbuf: *mut c_void,
                                                                    recvcount: Count, datatype: MPI_Datatype,
                                                                    op: MPI_Op, comm: MPI_Comm, info: MPI_Info,
                                                                    request: *mut MPI_Request) as Reduce_scatter_block_init [c] {
        idle: {
            let n = comm_size(comm);
            persist_init(request, coll(Op::Reduce_scatter_block_init, bytes(recvcount, datatype) * n as u64, n, -1));
        }
        pre: {}
        post: What::PersistentCollectiveInit,
    }
    MPI_Scan_init => PMPI_Scan_init(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype,
                                    op: MPI_Op, comm: MPI_Comm, info: MPI_Info,
                                    request: *mut MPI_Request) as Scan_init [c] {
        idle: { persist_init(request, coll(Op::Scan_init, bytes(count, datatype), comm_size(comm), -1)); }
        pre: {}
        post: What::PersistentCollectiveInit,
    }
    MPI_Exscan_init => PMPI_Exscan_init(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count,
                                        datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, info: MPI_Info,
                                        request: *mut MPI_Request) as Exscan_init [c] {
        idle: { persist_init(request, coll(Op::Exscan_init, bytes(count, datatype), comm_size(comm), -1)); }
        pre: {}
        post: What::PersistentCollectiveInit,
    }

    // ---- persistent neighbourhood collectives: the topology's messages,
    // taken when set up ----
    MPI_Neighbor_allgather_init => PMPI_Neighbor_allgather_init(sendbuf: *const c_void, sendcount: Count,
                                                                sendtype: MPI_Datatype, recvbuf: *mut c_void,
                                                                recvcount: Count, recvtype: MPI_Datatype,
                                                                comm: MPI_Comm, info: MPI_Info,
                                                                request: *mut MPI_Request) as Neighbor_allgather_init [c] {
        idle: { persist_init(request, neighbour_template(comm, |_| bytes(sendcount, sendtype), |_| bytes(recvcount, recvtype))); }
        pre: {}
        post: What::PersistentCollectiveInit,
    }
    MPI_Neighbor_allgatherv_init => PMPI_Neighbor_allgatherv_init(sendbuf: *const c_void, sendcount: Count,
                                                                  sendtype: MPI_Datatype, recvbuf: *mut c_void,
                                                                  recvcounts: *const Count, displs: *const Displ,
                                                                  recvtype: MPI_Datatype, comm: MPI_Comm,
                                                                  info: MPI_Info,
                                                                  request: *mut MPI_Request) as Neighbor_allgatherv_init [c] {
        // SAFETY: recvcounts has one entry per source.
        idle: { persist_init(request, neighbour_template(comm, |_| bytes(sendcount, sendtype), |k| bytes(unsafe { nth(recvcounts, k) }, recvtype))); }
        pre: {}
        post: What::PersistentCollectiveInit,
    }
    MPI_Neighbor_alltoall_init => PMPI_Neighbor_alltoall_init(sendbuf: *const c_void, sendcount: Count,
                                                              sendtype: MPI_Datatype, recvbuf: *mut c_void,
                                                              recvcount: Count, recvtype: MPI_Datatype,
                                                              comm: MPI_Comm, info: MPI_Info,
                                                              request: *mut MPI_Request) as Neighbor_alltoall_init [c] {
        idle: { persist_init(request, neighbour_template(comm, |_| bytes(sendcount, sendtype), |_| bytes(recvcount, recvtype))); }
        pre: {}
        post: What::PersistentCollectiveInit,
    }
    MPI_Neighbor_alltoallv_init => PMPI_Neighbor_alltoallv_init(sendbuf: *const c_void, sendcounts: *const Count,
                                                                sdispls: *const Displ, sendtype: MPI_Datatype,
                                                                recvbuf: *mut c_void, recvcounts: *const Count,
                                                                rdispls: *const Displ, recvtype: MPI_Datatype,
                                                                comm: MPI_Comm, info: MPI_Info,
                                                                request: *mut MPI_Request) as Neighbor_alltoallv_init [c] {
        // SAFETY: the counts have one entry per destination and source.
        idle: {
            persist_init(request, neighbour_template(comm, |k| bytes(unsafe { nth(sendcounts, k) }, sendtype),
                                                     |k| bytes(unsafe { nth(recvcounts, k) }, recvtype)));
        }
        pre: {}
        post: What::PersistentCollectiveInit,
    }
    MPI_Neighbor_alltoallw_init => PMPI_Neighbor_alltoallw_init(sendbuf: *const c_void, sendcounts: *const Count,
                                                                sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype,
                                                                recvbuf: *mut c_void, recvcounts: *const Count,
                                                                rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype,
                                                                comm: MPI_Comm, info: MPI_Info,
                                                                request: *mut MPI_Request) as Neighbor_alltoallw_init [c] {
        // SAFETY: the counts and types have one entry per destination and
        // source.
        idle: {
            persist_init(request, neighbour_template(comm, |k| unsafe { nth_w(sendcounts, sendtypes, k) },
                                                     |k| unsafe { nth_w(recvcounts, recvtypes, k) }));
        }
        pre: {}
        post: What::PersistentCollectiveInit,
    }

    // ---- partitioned point-to-point: each start as one Isend or Irecv ----
    MPI_Psend_init => PMPI_Psend_init(buf: *const c_void, partitions: c_int, count: mpi_sys::MPI_Count,
                                      datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm,
                                      info: MPI_Info, request: *mut MPI_Request) as Psend_init {
        idle: { persist_init(request, Template::Send(msg(comm, dest, tag, partitioned(partitions, count, datatype)))); }
        pre: {}
        post: What::PersistentInit { send: true, msg: msg(comm, dest, tag, partitioned(partitions, count, datatype)) },
    }
    MPI_Precv_init => PMPI_Precv_init(buf: *mut c_void, partitions: c_int, count: mpi_sys::MPI_Count,
                                      datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm,
                                      info: MPI_Info, request: *mut MPI_Request) as Precv_init {
        idle: { persist_init(request, Template::Recv(Sources::of(comm))); }
        pre: {}
        post: What::PersistentInit { send: false, msg: msg(comm, source, tag, partitioned(partitions, count, datatype)) },
    }
}
