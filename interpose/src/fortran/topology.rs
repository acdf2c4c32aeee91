//! The Fortran entry points (every binding, as [`super`]'s table) of the
//! prefix reductions, the general all-to-all and the neighbourhood
//! collectives: `scan`, `exscan`, `alltoallw`, `neighbor_allgather(v)`,
//! `neighbor_alltoall(v,w)` and their non-blocking forms. Each records
//! what its C twin in `wrappers.rs` records.

use super::convert::*;
use super::{Binding, Inside, resolve};
use crate::clock::now;
use crate::mpi_util::*;
use crate::tools::recorder::post_request;
use crate::tools::{self, Call};
use crate::wrappers::{neighbour_exchange, neighbour_exchange_begun};
use mheta_trace::{Op, What};
use std::os::raw::c_void;
use std::sync::atomic::AtomicUsize;

/// Entry `k` of a Fortran array of counts.
fn at(counts: *const Fint, k: usize) -> i32 {
    // SAFETY: the caller's array has an entry per neighbour or peer.
    int(unsafe { counts.add(k) })
}

/// `counts[k] × size(types[k])` of Fortran arrays (the `w` forms).
fn at_w(counts: *const Fint, types: *const Fint, k: usize) -> u64 {
    // SAFETY: as in `at`.
    bytes(at(counts, k), dtype(unsafe { types.add(k) }))
}

/// `Σ counts[k] × size(types[k])` over the `n` peers of an all-to-all.
fn sum_w(counts: *const Fint, types: *const Fint, n: u32) -> u64 {
    (0..n as usize).map(|k| at_w(counts, types, k)).sum()
}

/// `Fortran MPI_ADDRESS_KIND` displacements: passed through unread.
type Aint = i64;

fortran! {
    mpi_scan_ [ts] => "pmpi_scan_"(sendbuf: *const c_void, recvbuf: *mut c_void, count: *const Fint,
                                   datatype: *const Fint, op: *const Fint, comm_: *const Fint,
                                   ierr: *mut Fint) -> ierr as Scan {
        pre: {}
        post: What::Collective { bytes: bytes(int(count), dtype(datatype)), comm_size: comm_size(comm(comm_)), root: -1 },
    }
    mpi_exscan_ [ts] => "pmpi_exscan_"(sendbuf: *const c_void, recvbuf: *mut c_void, count: *const Fint,
                                       datatype: *const Fint, op: *const Fint, comm_: *const Fint,
                                       ierr: *mut Fint) -> ierr as Exscan {
        pre: {}
        post: What::Collective { bytes: bytes(int(count), dtype(datatype)), comm_size: comm_size(comm(comm_)), root: -1 },
    }
    mpi_alltoallw_ [ts] => "pmpi_alltoallw_"(sendbuf: *const c_void, sendcounts: *const Fint, sdispls: *const Fint,
                                             sendtypes: *const Fint, recvbuf: *mut c_void, recvcounts: *const Fint,
                                             rdispls: *const Fint, recvtypes: *const Fint, comm_: *const Fint,
                                             ierr: *mut Fint) -> ierr as Alltoallw {
        pre: { let n = peer_size(comm(comm_)); }
        post: What::Collective {
            bytes: if in_place(fbuf(sendbuf)) { sum_w(recvcounts, recvtypes, n) } else { sum_w(sendcounts, sendtypes, n) },
            comm_size: n,
            root: -1,
        },
    }
    mpi_iscan_ [ts] => "pmpi_iscan_"(sendbuf: *const c_void, recvbuf: *mut c_void, count: *const Fint,
                                     datatype: *const Fint, op: *const Fint, comm_: *const Fint, req: *mut Fint,
                                     ierr: *mut Fint) -> ierr as Iscan {
        pre: {}
        post: What::ICollective {
            bytes: bytes(int(count), dtype(datatype)),
            comm_size: comm_size(comm(comm_)),
            root: -1,
            req: post_request(request(req), None),
        },
    }
    mpi_iexscan_ [ts] => "pmpi_iexscan_"(sendbuf: *const c_void, recvbuf: *mut c_void, count: *const Fint,
                                         datatype: *const Fint, op: *const Fint, comm_: *const Fint, req: *mut Fint,
                                         ierr: *mut Fint) -> ierr as Iexscan {
        pre: {}
        post: What::ICollective {
            bytes: bytes(int(count), dtype(datatype)),
            comm_size: comm_size(comm(comm_)),
            root: -1,
            req: post_request(request(req), None),
        },
    }
    mpi_ialltoallw_ [ts] => "pmpi_ialltoallw_"(sendbuf: *const c_void, sendcounts: *const Fint, sdispls: *const Fint,
                                               sendtypes: *const Fint, recvbuf: *mut c_void, recvcounts: *const Fint,
                                               rdispls: *const Fint, recvtypes: *const Fint, comm_: *const Fint,
                                               req: *mut Fint, ierr: *mut Fint) -> ierr as Ialltoallw {
        pre: { let n = peer_size(comm(comm_)); }
        post: What::ICollective {
            bytes: if in_place(fbuf(sendbuf)) { sum_w(recvcounts, recvtypes, n) } else { sum_w(sendcounts, sendtypes, n) },
            comm_size: n,
            root: -1,
            req: post_request(request(req), None),
        },
    }
    // ---- neighbourhood collectives ----
    mpi_neighbor_allgather_ [ts] => "pmpi_neighbor_allgather_"(sendbuf: *const c_void, sendcount: *const Fint,
                                                               sendtype: *const Fint, recvbuf: *mut c_void,
                                                               recvcount: *const Fint, recvtype: *const Fint,
                                                               comm_: *const Fint, ierr: *mut Fint) -> ierr as Neighbor_allgather {
        pre: {}
        post: neighbour_exchange(comm(comm_), |_| bytes(int(sendcount), dtype(sendtype)),
                                 |_| bytes(int(recvcount), dtype(recvtype))),
    }
    mpi_neighbor_allgatherv_ [ts] => "pmpi_neighbor_allgatherv_"(sendbuf: *const c_void, sendcount: *const Fint,
                                                                 sendtype: *const Fint, recvbuf: *mut c_void,
                                                                 recvcounts: *const Fint, displs: *const Fint,
                                                                 recvtype: *const Fint, comm_: *const Fint,
                                                                 ierr: *mut Fint) -> ierr as Neighbor_allgatherv {
        pre: {}
        post: neighbour_exchange(comm(comm_), |_| bytes(int(sendcount), dtype(sendtype)),
                                 |k| bytes(at(recvcounts, k), dtype(recvtype))),
    }
    mpi_neighbor_alltoall_ [ts] => "pmpi_neighbor_alltoall_"(sendbuf: *const c_void, sendcount: *const Fint,
                                                             sendtype: *const Fint, recvbuf: *mut c_void,
                                                             recvcount: *const Fint, recvtype: *const Fint,
                                                             comm_: *const Fint, ierr: *mut Fint) -> ierr as Neighbor_alltoall {
        pre: {}
        post: neighbour_exchange(comm(comm_), |_| bytes(int(sendcount), dtype(sendtype)),
                                 |_| bytes(int(recvcount), dtype(recvtype))),
    }
    mpi_neighbor_alltoallv_ [ts] => "pmpi_neighbor_alltoallv_"(sendbuf: *const c_void, sendcounts: *const Fint,
                                                               sdispls: *const Fint, sendtype: *const Fint,
                                                               recvbuf: *mut c_void, recvcounts: *const Fint,
                                                               rdispls: *const Fint, recvtype: *const Fint,
                                                               comm_: *const Fint, ierr: *mut Fint) -> ierr as Neighbor_alltoallv {
        pre: {}
        post: neighbour_exchange(comm(comm_), |k| bytes(at(sendcounts, k), dtype(sendtype)),
                                 |k| bytes(at(recvcounts, k), dtype(recvtype))),
    }
    mpi_neighbor_alltoallw_ [ts] => "pmpi_neighbor_alltoallw_"(sendbuf: *const c_void, sendcounts: *const Fint,
                                                               sdispls: *const Aint, sendtypes: *const Fint,
                                                               recvbuf: *mut c_void, recvcounts: *const Fint,
                                                               rdispls: *const Aint, recvtypes: *const Fint,
                                                               comm_: *const Fint, ierr: *mut Fint) -> ierr as Neighbor_alltoallw {
        pre: {}
        post: neighbour_exchange(comm(comm_), |k| at_w(sendcounts, sendtypes, k), |k| at_w(recvcounts, recvtypes, k)),
    }
    mpi_ineighbor_allgather_ [ts] => "pmpi_ineighbor_allgather_"(sendbuf: *const c_void, sendcount: *const Fint,
                                                                 sendtype: *const Fint, recvbuf: *mut c_void,
                                                                 recvcount: *const Fint, recvtype: *const Fint,
                                                                 comm_: *const Fint, req: *mut Fint,
                                                                 ierr: *mut Fint) -> ierr as Ineighbor_allgather {
        pre: {}
        post: neighbour_exchange_begun(comm(comm_), |_| bytes(int(sendcount), dtype(sendtype)),
                                       |_| bytes(int(recvcount), dtype(recvtype)), post_request(request(req), None)),
    }
    mpi_ineighbor_allgatherv_ [ts] => "pmpi_ineighbor_allgatherv_"(sendbuf: *const c_void, sendcount: *const Fint,
                                                                   sendtype: *const Fint, recvbuf: *mut c_void,
                                                                   recvcounts: *const Fint, displs: *const Fint,
                                                                   recvtype: *const Fint, comm_: *const Fint,
                                                                   req: *mut Fint, ierr: *mut Fint) -> ierr as Ineighbor_allgatherv {
        pre: {}
        post: neighbour_exchange_begun(comm(comm_), |_| bytes(int(sendcount), dtype(sendtype)),
                                       |k| bytes(at(recvcounts, k), dtype(recvtype)), post_request(request(req), None)),
    }
    mpi_ineighbor_alltoall_ [ts] => "pmpi_ineighbor_alltoall_"(sendbuf: *const c_void, sendcount: *const Fint,
                                                               sendtype: *const Fint, recvbuf: *mut c_void,
                                                               recvcount: *const Fint, recvtype: *const Fint,
                                                               comm_: *const Fint, req: *mut Fint,
                                                               ierr: *mut Fint) -> ierr as Ineighbor_alltoall {
        pre: {}
        post: neighbour_exchange_begun(comm(comm_), |_| bytes(int(sendcount), dtype(sendtype)),
                                       |_| bytes(int(recvcount), dtype(recvtype)), post_request(request(req), None)),
    }
    mpi_ineighbor_alltoallv_ [ts] => "pmpi_ineighbor_alltoallv_"(sendbuf: *const c_void, sendcounts: *const Fint,
                                                                 sdispls: *const Fint, sendtype: *const Fint,
                                                                 recvbuf: *mut c_void, recvcounts: *const Fint,
                                                                 rdispls: *const Fint, recvtype: *const Fint,
                                                                 comm_: *const Fint, req: *mut Fint,
                                                                 ierr: *mut Fint) -> ierr as Ineighbor_alltoallv {
        pre: {}
        post: neighbour_exchange_begun(comm(comm_), |k| bytes(at(sendcounts, k), dtype(sendtype)),
                                       |k| bytes(at(recvcounts, k), dtype(recvtype)), post_request(request(req), None)),
    }
    mpi_ineighbor_alltoallw_ [ts] => "pmpi_ineighbor_alltoallw_"(sendbuf: *const c_void, sendcounts: *const Fint,
                                                                 sdispls: *const Aint, sendtypes: *const Fint,
                                                                 recvbuf: *mut c_void, recvcounts: *const Fint,
                                                                 rdispls: *const Aint, recvtypes: *const Fint,
                                                                 comm_: *const Fint, req: *mut Fint,
                                                                 ierr: *mut Fint) -> ierr as Ineighbor_alltoallw {
        pre: {}
        post: neighbour_exchange_begun(comm(comm_), |k| at_w(sendcounts, sendtypes, k),
                                       |k| at_w(recvcounts, recvtypes, k), post_request(request(req), None)),
    }
}
