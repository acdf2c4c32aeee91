//! What the wrapper table ([`super`]) calls: request ids for posted and
//! persistent requests, the requests a `Wait*`/`Test*` call completes
//! ([`Pending`]), the bytes of rooted and in-place collectives, and the
//! MHETA prefetch trick ([`prefetch`]).

use crate::mpi_util::{Sources, bytes, comm_rank, in_place, msg, world_rank};
use crate::tools::recorder::{
    Posted, Template, persist, persistent, post_request, restore_request, take_request,
};
use mheta_trace::{Completion, Msg, NEIGHBOR_TAG, Started, What};
use mpi_sys::{MPI_Comm, MPI_Datatype, MPI_File, MPI_Offset, MPI_Request, MPI_Status};
use std::os::raw::{c_int, c_void};

/// The posted request `*request` gets an id; `recv_comm`: the
/// communicator of a receive, whose ranks it keeps ([`Sources`]).
pub(super) fn new_req(request: *mut MPI_Request, recv_comm: Option<MPI_Comm>) -> u32 {
    // SAFETY: the call that filled *request succeeded.
    post_request(unsafe { *request }, recv_comm.map(Sources::of))
}

/// The requests a `Wait*`/`Test*` call is given, taken out of the
/// recorder's map before the call (a completed request's handle may be
/// reused by another thread at once); [`Pending::done`] reports those that
/// completed and puts the others back.
pub(crate) struct Pending {
    hs: Vec<MPI_Request>,
    taken: Vec<Option<Posted>>,
}

impl Pending {
    pub(crate) fn take(reqs: *const MPI_Request, n: c_int) -> Pending {
        // SAFETY: the caller passes `n` request handles.
        let hs: Vec<MPI_Request> = (0..n.max(0) as usize)
            .map(|i| unsafe { *reqs.add(i) })
            .collect();
        let taken = hs.iter().map(|&h| take_request(h)).collect();
        Pending { hs, taken }
    }

    pub(crate) fn len(&self) -> usize {
        self.hs.len()
    }

    /// The requests at positions `which` completed, with statuses `sts[k]`
    /// for the k-th of them; the rest are put back.
    pub(crate) fn done(mut self, which: &[usize], sts: *const MPI_Status) -> What {
        let mut out = Vec::new();
        for (k, &i) in which.iter().enumerate() {
            if let Some(Some((req, sources))) = self.taken.get_mut(i).map(Option::take) {
                // SAFETY: MPI filled status k for this completed request.
                let recv = sources.map(|s| unsafe { s.msg_from_status(sts.add(k)) });
                if let Some(s) = sources {
                    s.release();
                }
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
    pub(crate) fn all(self, sts: *const MPI_Status) -> What {
        let which: Vec<usize> = (0..self.len()).collect();
        self.done(&which, sts)
    }

    /// None completed.
    pub(crate) fn none(self) -> What {
        self.done(&[], std::ptr::null())
    }

    /// The `count` requests at `indices` completed (MPI_UNDEFINED: none).
    pub(crate) fn some(self, count: c_int, indices: *const c_int, sts: *const MPI_Status) -> What {
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
pub(super) fn persist_init(request: *mut MPI_Request, t: Template) {
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
        Template::Collective {
            op,
            bytes,
            comm_size,
            root,
        } => Started::Collective {
            op,
            bytes,
            comm_size,
            root,
            req: post_request(h, None),
        },
        Template::Neighbor { sends, recvs } => Started::Neighbor {
            sends,
            recvs,
            req: post_request(h, None),
        },
    })
}

pub(crate) fn root_of(comm: MPI_Comm, root: c_int) -> i32 {
    world_rank(comm, root)
}

/// A rooted collective's bytes, 0 for a process that passes
/// `MPI_PROC_NULL` (the idle side of an intercommunicator's root group,
/// whose other arguments MPI ignores).
pub(crate) fn rooted(root: c_int, f: impl FnOnce() -> u64) -> u64 {
    if root == mpi_sys::MPI_PROC_NULL {
        0
    } else {
        f()
    }
}

/// This process's part of a gather or scatter: `count` × `dt` of `buf`,
/// or, when `buf` is `MPI_IN_PLACE` (whose count and type MPI ignores),
/// `other_count` × `other_dt`.
pub(crate) fn own_part(
    buf: *const c_void,
    count: impl Into<i64>,
    dt: MPI_Datatype,
    other_count: impl Into<i64>,
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
pub(crate) unsafe fn own_part_v<C: Copy + Into<i64>>(
    buf: *const c_void,
    count: impl Into<i64>,
    dt: MPI_Datatype,
    other_counts: *const C,
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

/// The neighbours of this process in `comm`'s virtual topology, in the
/// order the neighbourhood collectives take them: (sources,
/// destinations), ranks of `comm`. A Cartesian topology's are, for each
/// dimension, `MPI_Cart_shift(comm, d, 1)`'s source then destination,
/// for both (`MPI_PROC_NULL` off a non-periodic edge); a graph's are its
/// neighbours, for both; a distributed graph's are its sources and its
/// destinations. None: no topology.
pub(crate) fn neighbours(comm: MPI_Comm) -> (Vec<c_int>, Vec<c_int>) {
    let mut kind = mpi_sys::MPI_UNDEFINED;
    // SAFETY: comm is a valid communicator of the caller; every buffer is
    // sized by the counts MPI gave just before.
    unsafe {
        mpi_sys::PMPI_Topo_test(comm, &mut kind);
        if kind == mpi_sys::RSMPI_CART {
            let mut nd = 0;
            mpi_sys::PMPI_Cartdim_get(comm, &mut nd);
            let mut v = Vec::with_capacity(2 * nd.max(0) as usize);
            for d in 0..nd {
                let (mut src, mut dst) = (0, 0);
                mpi_sys::PMPI_Cart_shift(comm, d, 1, &mut src, &mut dst);
                v.extend([src, dst]);
            }
            (v.clone(), v)
        } else if kind == mpi_sys::RSMPI_GRAPH {
            let (me, mut n) = (comm_rank(comm), 0);
            mpi_sys::PMPI_Graph_neighbors_count(comm, me, &mut n);
            let mut v = vec![0; n.max(0) as usize];
            mpi_sys::PMPI_Graph_neighbors(comm, me, n, v.as_mut_ptr());
            (v.clone(), v)
        } else if kind == mpi_sys::RSMPI_DIST_GRAPH {
            let (mut ins, mut outs, mut weighted) = (0, 0, 0);
            mpi_sys::PMPI_Dist_graph_neighbors_count(comm, &mut ins, &mut outs, &mut weighted);
            let (ins, outs) = (ins.max(0), outs.max(0));
            let (mut src, mut dst) = (vec![0; ins as usize], vec![0; outs as usize]);
            // Room for weights too, whether or not the graph has them.
            let (mut sw, mut dw) = (vec![0; ins as usize + 1], vec![0; outs as usize + 1]);
            mpi_sys::PMPI_Dist_graph_neighbors(
                comm,
                ins,
                src.as_mut_ptr(),
                sw.as_mut_ptr(),
                outs,
                dst.as_mut_ptr(),
                dw.as_mut_ptr(),
            );
            (src, dst)
        } else {
            (Vec::new(), Vec::new())
        }
    }
}

/// A neighbourhood collective's messages on `comm`: to destination k
/// `send(k)` bytes, from source k `recv(k)` bytes (sends, receives).
fn neighbour_msgs(
    comm: MPI_Comm,
    send: impl Fn(usize) -> u64,
    recv: impl Fn(usize) -> u64,
) -> (Vec<Msg>, Vec<Msg>) {
    let (srcs, dsts) = neighbours(comm);
    let sends = (dsts.iter().enumerate())
        .map(|(k, &d)| msg(comm, d, NEIGHBOR_TAG, send(k)))
        .collect();
    let recvs = (srcs.iter().enumerate())
        .map(|(k, &r)| msg(comm, r, NEIGHBOR_TAG, recv(k)))
        .collect();
    (sends, recvs)
}

/// A blocking neighbourhood collective ([`What::Neighbor`]; see
/// [`neighbour_msgs`]).
pub(crate) fn neighbour_exchange(
    comm: MPI_Comm,
    send: impl Fn(usize) -> u64,
    recv: impl Fn(usize) -> u64,
) -> What {
    let (sends, recvs) = neighbour_msgs(comm, send, recv);
    What::Neighbor { sends, recvs }
}

/// A persistent one's template (`MPI_Neighbor_*_init`), its messages
/// taken from the topology when it is set up.
#[cfg(mpi4_calls)]
pub(crate) fn neighbour_template(
    comm: MPI_Comm,
    send: impl Fn(usize) -> u64,
    recv: impl Fn(usize) -> u64,
) -> Template {
    let (sends, recvs) = neighbour_msgs(comm, send, recv);
    Template::Neighbor { sends, recvs }
}

/// A non-blocking one, begun as request `req` ([`What::INeighbor`]).
pub(crate) fn neighbour_exchange_begun(
    comm: MPI_Comm,
    send: impl Fn(usize) -> u64,
    recv: impl Fn(usize) -> u64,
    req: u32,
) -> What {
    let (sends, recvs) = neighbour_msgs(comm, send, recv);
    What::INeighbor { sends, recvs, req }
}

/// Entry `k` of a C array of counts, `int` or `MPI_Count` (0 for a null
/// array).
///
/// # Safety
/// `counts` is null or has more than `k` entries.
pub(crate) unsafe fn nth<C: Copy + Into<i64>>(counts: *const C, k: usize) -> i64 {
    if counts.is_null() {
        0
    } else {
        // SAFETY: as promised by the caller.
        unsafe { *counts.add(k) }.into()
    }
}

/// `counts[k] × size(types[k])` (the `w` forms; 0 for null arrays).
///
/// # Safety
/// `counts` and `types` are null or have more than `k` entries each.
pub(crate) unsafe fn nth_w<C: Copy + Into<i64>>(
    counts: *const C,
    types: *const MPI_Datatype,
    k: usize,
) -> u64 {
    if counts.is_null() || types.is_null() {
        0
    } else {
        // SAFETY: as promised by the caller.
        unsafe { bytes(*counts.add(k), *types.add(k)) }
    }
}

/// `Σ counts[k] × size(types[k])` over `n` entries (the `w` forms).
///
/// # Safety
/// `counts` and `types` are null or have `n` entries each.
pub(crate) unsafe fn bytes_w<C: Copy + Into<i64>>(
    counts: *const C,
    types: *const MPI_Datatype,
    n: usize,
) -> u64 {
    // SAFETY: as promised by the caller.
    (0..n).map(|k| unsafe { nth_w(counts, types, k) }).sum()
}

/// A count argument of the table's entry points: C `int`, or MPI-4's
/// `MPI_Count` in the large-count forms. It names the file reads the
/// prefetch trick ([`prefetch`]) makes in place of a non-blocking read, so
/// that `MPI_File_iread_c` reads with `PMPI_File_read_c`.
pub(crate) trait CountArg: Copy + Into<i64> {
    /// `PMPI_File_read` (or `_read_at` at `offset`) of this count type.
    ///
    /// # Safety
    /// The arguments of a valid call.
    unsafe fn file_read(
        fh: MPI_File,
        offset: Option<MPI_Offset>,
        buf: *mut c_void,
        count: Self,
        dt: MPI_Datatype,
        st: *mut MPI_Status,
    ) -> c_int;

    /// `PMPI_File_iread` (or `_iread_at` at `offset`) of this count type.
    ///
    /// # Safety
    /// The arguments of a valid call.
    unsafe fn file_iread(
        fh: MPI_File,
        offset: Option<MPI_Offset>,
        buf: *mut c_void,
        count: Self,
        dt: MPI_Datatype,
        req: *mut MPI_Request,
    ) -> c_int;
}

/// One [`CountArg`] impl: the count type, then each method with the
/// `PMPI_*` read it makes without and with an offset.
macro_rules! count_arg {
    ($t:ty: $( $f:ident($last:ident: $lt:ty) => $plain:ident, $at:ident; )*) => {
        impl CountArg for $t {
            $(
                unsafe fn $f(
                    fh: MPI_File,
                    offset: Option<MPI_Offset>,
                    buf: *mut c_void,
                    count: Self,
                    dt: MPI_Datatype,
                    $last: $lt,
                ) -> c_int {
                    // SAFETY: as promised by the caller.
                    unsafe {
                        match offset {
                            Some(off) => mpi_sys::$at(fh, off, buf, count, dt, $last),
                            None => mpi_sys::$plain(fh, buf, count, dt, $last),
                        }
                    }
                }
            )*
        }
    };
}

count_arg!(c_int:
    file_read(st: *mut MPI_Status) => PMPI_File_read, PMPI_File_read_at;
    file_iread(req: *mut MPI_Request) => PMPI_File_iread, PMPI_File_iread_at;
);
#[cfg(mpi_large_count)]
count_arg!(mpi_sys::MPI_Count:
    file_read(st: *mut MPI_Status) => PMPI_File_read_c, PMPI_File_read_at_c;
    file_iread(req: *mut MPI_Request) => PMPI_File_iread_c, PMPI_File_iread_at_c;
);

/// The MHETA prefetch trick (paper, fig. 5): while recording, a
/// non-blocking read is performed as a blocking read, and the program gets
/// an already completed generalized request, so its wait returns at once.
/// The program still sees valid MPI: its buffer filled, a request handle,
/// a status with the right count.
pub(super) mod prefetch {
    use crate::mpi_util::{blank_status, status_bytes};
    use mpi_sys::{MPI_Request, MPI_Status};
    use std::os::raw::{c_int, c_void};

    struct Done {
        status: MPI_Status,
    }

    unsafe extern "C" fn query(extra: *mut c_void, status: *mut MPI_Status) -> c_int {
        // SAFETY: extra is the Box<Done> given to Grequest_start; status is
        // MPI's status to fill.
        unsafe {
            let d = &*(extra as *const Done);
            let bytes = status_bytes(&d.status);
            mpi_sys::PMPI_Status_set_elements_x(status, mpi_sys::RSMPI_UINT8_T, bytes as _);
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

    /// Read now with `read` (the blocking form of the caller's read, given
    /// the status to fill); hand back a completed generalized request.
    pub fn blocking(
        read: impl FnOnce(*mut MPI_Status) -> c_int,
        request: *mut MPI_Request,
    ) -> (c_int, u64) {
        let mut d = Box::new(Done {
            status: blank_status(),
        });
        let rc = read(&mut d.status);
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
