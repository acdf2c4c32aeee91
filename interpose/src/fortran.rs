//! The Fortran entry points: `use mpi` and `mpif.h` (gfortran's
//! `mpi_send_` naming) and `use mpi_f08` (`mpi_send_f08_`, and MPICH's
//! `mpi_send_f08ts_` for calls with a choice buffer). Open MPI's Fortran
//! bindings call `PMPI_*` directly, and both MPIs' `use mpi_f08` bindings
//! call `PMPI_*` or the library's internals, so a C-only interposer never
//! sees a Fortran program. These wrappers are generated from the one table
//! below by [`fortran!`], three entry points an entry: each converts the
//! Fortran handles to C ones for the tools and forwards to the MPI
//! library's own Fortran function (`pmpi_x_` for `use mpi`; the next
//! `mpi_x_f08_`/`mpi_x_f08ts_` for `use mpi_f08`, which has no profiling
//! names in MPICH), found with `dlsym(RTLD_NEXT)` on first use (so the
//! interposer loads into C programs that lack the Fortran library).
//! MPICH's `use mpi` bindings call the C `MPI_*` functions, whose wrappers
//! then pass the call through ([`inside`]): each call is recorded once.
//!
//! Covered: init, init_thread, finalize, abort, pcontrol; send, ssend,
//! bsend, rsend, isend, issend, ibsend, irsend, recv, irecv, sendrecv,
//! sendrecv_replace, probe, iprobe; wait, waitall, waitany, waitsome,
//! test, testall, testany, testsome; barrier, bcast, reduce, allreduce,
//! gather(v), scatter(v), allgather(v), alltoall(v), reduce_scatter(_block)
//! and the non-blocking ibarrier, ibcast, ireduce, iallreduce,
//! igather(v), iscatter(v), iallgather(v), ialltoall(v),
//! ireduce_scatter(_block); persistent requests: send_init,
//! bsend_init, ssend_init, rsend_init, recv_init, start, startall,
//! request_free; and, in [`topology`]'s table, scan, exscan, alltoallw
//! and the neighbourhood collectives, blocking and not. Each records what
//! its C twin in `wrappers.rs` records.
//! Fortran's `MPI_IN_PLACE` is its own address (a common block), which
//! [`fbuf`] turns into C's. Not covered: MPI-4's large-count
//! `use mpi_f08` forms (`mpi_send_f08ts_large_`, counts of
//! `INTEGER(MPI_COUNT_KIND)`), which pass through unseen.

#![allow(clippy::missing_safety_doc)]

use crate::clock::now;
use crate::mpi_util::*;
use crate::tools::recorder::{
    Template, drop_request, persist, post_request, take_request, unpersist,
};
use crate::tools::{self, Call};
use crate::wrappers::{Pending, own_part, own_part_v, root_of, rooted, start_one};

mod convert;
use convert::*;
use mheta_trace::{Completion, Op, What};
use mpi_sys::MPI_Request;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

thread_local! {
    static DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    static BINDING: std::cell::Cell<Binding> = const { std::cell::Cell::new(Binding::Legacy) };
}

/// The Fortran binding a wrapper serves.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Binding {
    /// `use mpi` and `mpif.h` (`mpi_x_`): a choice buffer is its address.
    Legacy,
    /// `use mpi_f08` (`mpi_x_f08_`): every call on Open MPI, the calls
    /// without a choice buffer on MPICH; a choice buffer is its address.
    F08,
    /// MPICH's `use mpi_f08` calls with a choice buffer (`mpi_x_f08ts_`,
    /// `TYPE(*), DIMENSION(..)`): it arrives as the address of an array
    /// descriptor whose first word is the buffer's address.
    Descriptor,
}

/// The binding of the Fortran wrapper this thread is in.
pub(crate) fn binding() -> Binding {
    BINDING.with(|b| b.get())
}

/// Is this thread inside one of the Fortran wrappers? MPICH's Fortran
/// bindings call the C `MPI_*` functions (Open MPI's call `PMPI_*`), so
/// that a C wrapper would see the call again: it passes the call through
/// when this is true, and the Fortran wrapper alone records it.
pub(crate) fn inside() -> bool {
    DEPTH.with(|d| d.get() > 0)
}

/// Marks this thread inside a Fortran wrapper of one binding while it
/// lives.
struct Inside(Binding);

impl Inside {
    fn enter(b: Binding) -> Inside {
        DEPTH.with(|d| d.set(d.get() + 1));
        Inside(BINDING.with(|c| c.replace(b)))
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
        BINDING.with(|c| c.set(self.0));
    }
}

/// The next definition of `name` (NUL-terminated) after this library.
pub(crate) fn resolve(cache: &AtomicUsize, name: &str) -> usize {
    let f = cache.load(Ordering::Relaxed);
    if f != 0 {
        return f;
    }
    // SAFETY: name is NUL-terminated; RTLD_NEXT lookups only read.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr() as *const c_char) } as usize;
    if p == 0 {
        crate::warn(format!(
            "mheta: {} not found after libmheta_interpose.so; is the MPI library's Fortran binding loaded?",
            name.trim_end_matches('\0')
        ));
        std::process::abort();
    }
    cache.store(p, Ordering::Relaxed);
    p
}

/// One wrapper: exported as `$export`, forwarding to `$real` (found with
/// `dlsym(RTLD_NEXT)`). `$binding` says how its choice buffers arrive
/// ([`Binding`]). An absent `ierror` (optional in `use mpi_f08`) is
/// replaced by one of ours.
macro_rules! fortran_fn {
    ($export:expr, $real:expr, $binding:ident, $fname:ident,
     ( $($arg:ident : $ty:ty),* ), $ierr:ident, $op:ident,
     { $($idle:tt)* }, { $($pre:tt)* }, $post:expr) => {
        #[unsafe(export_name = $export)]
        #[allow(unused_variables, non_snake_case)]
        #[doc = concat!("Interposed Fortran `", $export, "`: forwards to `", $real, "`.")]
        pub unsafe extern "C" fn $fname($($arg: $ty),*) {
            static REAL: AtomicUsize = AtomicUsize::new(0);
            // SAFETY: the symbol is the MPI library's Fortran binding of
            // the same signature.
            let real: unsafe extern "C" fn($($ty),*) =
                unsafe { std::mem::transmute(resolve(&REAL, concat!($real, "\0"))) };
            let _inside = Inside::enter(Binding::$binding);
            let mut own_ierr: Fint = 0;
            let $ierr: *mut Fint = if $ierr.is_null() { &mut own_ierr } else { $ierr };
            if !tools::active() {
                // SAFETY: the caller's arguments, passed through.
                unsafe { real($($arg),*) };
                if int($ierr) == 0 { $($idle)* }
                return;
            }
            $($pre)*
            tools::pre(Op::$op);
            let t0 = now();
            // SAFETY: the caller's arguments; an ignored status is
            // replaced by one of ours.
            unsafe { real($($arg),*) };
            let t1 = now();
            if int($ierr) == 0 {
                $($idle)*
                let what = $post;
                tools::post(&Call { op: Op::$op, t0, t1, what: &what });
            }
        }
    };
}

/// MPICH's `mpi_x_f08ts_` twin of a table entry marked `[ts]`; nothing
/// for the others.
macro_rules! fortran_ts {
    ([] $($rest:tt)*) => {};
    ([ts] $name:ident, $args:tt, $ierr:ident, $op:ident, $idle:tt, $pre:tt, $post:expr) => {
        fortran_fn!(
            concat!(stringify!($name), "f08ts_"),
            concat!(stringify!($name), "f08ts_"),
            Descriptor,
            f08ts,
            $args,
            $ierr,
            $op,
            $idle,
            $pre,
            $post
        );
    };
}

/// The table's expansion: each entry `mpi_x_ => "pmpi_x_"` gives
/// - `mpi_x_` (`use mpi`, `mpif.h`), forwarding to `pmpi_x_`;
/// - `mpi_x_f08_` (`use mpi_f08`: every call on Open MPI, the calls
///   without a choice buffer on MPICH), forwarding to the next `mpi_x_f08_`;
/// - with `[ts]` (the calls with a choice buffer), `mpi_x_f08ts_`: MPICH's
///   `use mpi_f08` binding, whose buffers arrive as array descriptors.
macro_rules! fortran {
    ($(
        $name:ident $([$ts:ident])? => $real:literal ( $($arg:ident : $ty:ty),* $(,)? ) -> $ierr:ident as $op:ident {
            $(idle: { $($idle:tt)* })?
            pre: { $($pre:tt)* }
            post: $post:expr $(,)?
        }
    )*) => {
        $(
            fortran_fn!(stringify!($name), $real, Legacy, $name, ($($arg: $ty),*), $ierr, $op,
                        { $( $($idle)* )? }, { $($pre)* }, $post);
            const _: () = {
                fortran_fn!(concat!(stringify!($name), "f08_"), concat!(stringify!($name), "f08_"), F08, f08,
                            ($($arg: $ty),*), $ierr, $op, { $( $($idle)* )? }, { $($pre)* }, $post);
                fortran_ts!([$($ts)?] $name, ($($arg: $ty),*), $ierr, $op, { $( $($idle)* )? }, { $($pre)* }, $post);
            };
        )*
    };
}

fortran! {
    mpi_send_ [ts] => "pmpi_send_"(buf: *const c_void, count: *const Fint, datatype: *const Fint, dest: *const Fint,
                              tag: *const Fint, comm_: *const Fint, ierr: *mut Fint) -> ierr as Send {
        pre: {}
        post: What::Send(msg(comm(comm_), int(dest), int(tag), bytes(int(count), dtype(datatype)))),
    }
    mpi_ssend_ [ts] => "pmpi_ssend_"(buf: *const c_void, count: *const Fint, datatype: *const Fint, dest: *const Fint,
                                tag: *const Fint, comm_: *const Fint, ierr: *mut Fint) -> ierr as Ssend {
        pre: {}
        post: What::Send(msg(comm(comm_), int(dest), int(tag), bytes(int(count), dtype(datatype)))),
    }
    mpi_recv_ [ts] => "pmpi_recv_"(buf: *mut c_void, count: *const Fint, datatype: *const Fint, source: *const Fint,
                              tag: *const Fint, comm_: *const Fint, status: *mut Fint, ierr: *mut Fint) -> ierr as Recv {
        pre: { let mut own = [0; STATUS_SIZE]; let status = own_fstatus(status, &mut own); }
        post: What::Recv(recv_msg(comm(comm_), status)),
    }
    mpi_isend_ [ts] => "pmpi_isend_"(buf: *const c_void, count: *const Fint, datatype: *const Fint, dest: *const Fint,
                                tag: *const Fint, comm_: *const Fint, req: *mut Fint, ierr: *mut Fint) -> ierr as Isend {
        pre: {}
        post: What::Isend {
            msg: msg(comm(comm_), int(dest), int(tag), bytes(int(count), dtype(datatype))),
            req: post_request(request(req), None),
        },
    }
    mpi_irecv_ [ts] => "pmpi_irecv_"(buf: *mut c_void, count: *const Fint, datatype: *const Fint, source: *const Fint,
                                tag: *const Fint, comm_: *const Fint, req: *mut Fint, ierr: *mut Fint) -> ierr as Irecv {
        pre: {}
        post: What::Irecv { req: post_request(request(req), Some(Sources::of(comm(comm_)))) },
    }
    mpi_wait_ => "pmpi_wait_"(req: *mut Fint, status: *mut Fint, ierr: *mut Fint) -> ierr as Wait {
        pre: {
            // Taken before the call: a completed handle may be reused at once.
            let taken = take_request(request(req));
            let mut own = [0; STATUS_SIZE];
            let status = own_fstatus(status, &mut own);
        }
        post: What::Complete(
            taken.map(|(id, s)| Completion { req: id, recv: s.map(|s| recv_msg_of(s, status)) }).into_iter().collect(),
        ),
    }
    mpi_waitall_ => "pmpi_waitall_"(count: *const Fint, reqs: *mut Fint, statuses: *mut Fint, ierr: *mut Fint) -> ierr as Waitall {
        pre: {
            let n = int(count).max(0) as usize;
            // SAFETY: the caller passes `count` Fortran request handles.
            let taken: Vec<_> = (0..n).map(|i| take_request(request(unsafe { reqs.add(i) }))).collect();
            let mut own = Vec::new();
            let statuses = own_fstatuses(statuses, n, &mut own);
        }
        post: What::Complete(
            taken
                .iter()
                .enumerate()
                .filter_map(|(i, t)| {
                    let (id, s) = (*t)?;
                    // SAFETY: status i of the `count` statuses just filled.
                    Some(Completion { req: id, recv: s.map(|s| recv_msg_of(s, unsafe { statuses.add(i * STATUS_SIZE) })) })
                })
                .collect(),
        ),
    }
    mpi_sendrecv_ [ts] => "pmpi_sendrecv_"(sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
                                      dest: *const Fint, sendtag: *const Fint, recvbuf: *mut c_void,
                                      recvcount: *const Fint, recvtype: *const Fint, source: *const Fint,
                                      recvtag: *const Fint, comm_: *const Fint, status: *mut Fint,
                                      ierr: *mut Fint) -> ierr as Sendrecv {
        pre: { let mut own = [0; STATUS_SIZE]; let status = own_fstatus(status, &mut own); }
        post: What::Sendrecv {
            send: msg(comm(comm_), int(dest), int(sendtag), bytes(int(sendcount), dtype(sendtype))),
            recv: recv_msg(comm(comm_), status),
        },
    }
    mpi_sendrecv_replace_ [ts] => "pmpi_sendrecv_replace_"(buf: *mut c_void, count: *const Fint, datatype: *const Fint,
                                                      dest: *const Fint, sendtag: *const Fint, source: *const Fint,
                                                      recvtag: *const Fint, comm_: *const Fint, status: *mut Fint,
                                                      ierr: *mut Fint) -> ierr as Sendrecv_replace {
        pre: { let mut own = [0; STATUS_SIZE]; let status = own_fstatus(status, &mut own); }
        post: What::Sendrecv {
            send: msg(comm(comm_), int(dest), int(sendtag), bytes(int(count), dtype(datatype))),
            recv: recv_msg(comm(comm_), status),
        },
    }
    mpi_bsend_ [ts] => "pmpi_bsend_"(buf: *const c_void, count: *const Fint, datatype: *const Fint, dest: *const Fint,
                                tag: *const Fint, comm_: *const Fint, ierr: *mut Fint) -> ierr as Bsend {
        pre: {}
        post: What::Send(msg(comm(comm_), int(dest), int(tag), bytes(int(count), dtype(datatype)))),
    }
    mpi_rsend_ [ts] => "pmpi_rsend_"(buf: *const c_void, count: *const Fint, datatype: *const Fint, dest: *const Fint,
                                tag: *const Fint, comm_: *const Fint, ierr: *mut Fint) -> ierr as Rsend {
        pre: {}
        post: What::Send(msg(comm(comm_), int(dest), int(tag), bytes(int(count), dtype(datatype)))),
    }
    mpi_issend_ [ts] => "pmpi_issend_"(buf: *const c_void, count: *const Fint, datatype: *const Fint, dest: *const Fint,
                                  tag: *const Fint, comm_: *const Fint, req: *mut Fint, ierr: *mut Fint) -> ierr as Issend {
        pre: {}
        post: What::Isend {
            msg: msg(comm(comm_), int(dest), int(tag), bytes(int(count), dtype(datatype))),
            req: post_request(request(req), None),
        },
    }
    mpi_ibsend_ [ts] => "pmpi_ibsend_"(buf: *const c_void, count: *const Fint, datatype: *const Fint, dest: *const Fint,
                                  tag: *const Fint, comm_: *const Fint, req: *mut Fint, ierr: *mut Fint) -> ierr as Ibsend {
        pre: {}
        post: What::Isend {
            msg: msg(comm(comm_), int(dest), int(tag), bytes(int(count), dtype(datatype))),
            req: post_request(request(req), None),
        },
    }
    mpi_irsend_ [ts] => "pmpi_irsend_"(buf: *const c_void, count: *const Fint, datatype: *const Fint, dest: *const Fint,
                                  tag: *const Fint, comm_: *const Fint, req: *mut Fint, ierr: *mut Fint) -> ierr as Irsend {
        pre: {}
        post: What::Isend {
            msg: msg(comm(comm_), int(dest), int(tag), bytes(int(count), dtype(datatype))),
            req: post_request(request(req), None),
        },
    }
    mpi_probe_ => "pmpi_probe_"(source: *const Fint, tag: *const Fint, comm_: *const Fint, status: *mut Fint,
                                ierr: *mut Fint) -> ierr as Probe {
        pre: { let mut own = [0; STATUS_SIZE]; let status = own_fstatus(status, &mut own); }
        post: What::Peek(recv_msg(comm(comm_), status)),
    }
    mpi_iprobe_ => "pmpi_iprobe_"(source: *const Fint, tag: *const Fint, comm_: *const Fint, flag: *mut Fint,
                                  status: *mut Fint, ierr: *mut Fint) -> ierr as Iprobe {
        pre: { let mut own = [0; STATUS_SIZE]; let status = own_fstatus(status, &mut own); }
        // A LOGICAL: .TRUE. is nonzero.
        post: What::Poll((int(flag) != 0).then(|| recv_msg(comm(comm_), status))),
    }
    // ---- completion (the requests taken before the call: a completed
    // handle may be reused at once; Fortran's indices count from 1) ----
    mpi_waitany_ => "pmpi_waitany_"(count: *const Fint, reqs: *mut Fint, index: *mut Fint, status: *mut Fint,
                                    ierr: *mut Fint) -> ierr as Waitany {
        pre: {
            let hs = c_requests(reqs, count);
            let pending = Pending::take(hs.as_ptr(), hs.len() as c_int);
            let mut own = [0; STATUS_SIZE];
            let status = own_fstatus(status, &mut own);
        }
        post: completed(pending, if int(index) == mpi_sys::MPI_UNDEFINED { 0 } else { 1 }, index, status),
    }
    mpi_waitsome_ => "pmpi_waitsome_"(incount: *const Fint, reqs: *mut Fint, outcount: *mut Fint, indices: *mut Fint,
                                      statuses: *mut Fint, ierr: *mut Fint) -> ierr as Waitsome {
        pre: {
            let hs = c_requests(reqs, incount);
            let pending = Pending::take(hs.as_ptr(), hs.len() as c_int);
            let mut own = Vec::new();
            let statuses = own_fstatuses(statuses, hs.len(), &mut own);
        }
        post: completed(pending, int(outcount), indices, statuses),
    }
    mpi_test_ => "pmpi_test_"(req: *mut Fint, flag: *mut Fint, status: *mut Fint, ierr: *mut Fint) -> ierr as Test {
        pre: {
            let hs = [request(req)];
            let pending = Pending::take(hs.as_ptr(), 1);
            let mut own = [0; STATUS_SIZE];
            let status = own_fstatus(status, &mut own);
        }
        post: if int(flag) != 0 { pending.all(&c_status(status)) } else { pending.none() },
    }
    mpi_testall_ => "pmpi_testall_"(count: *const Fint, reqs: *mut Fint, flag: *mut Fint, statuses: *mut Fint,
                                    ierr: *mut Fint) -> ierr as Testall {
        pre: {
            let hs = c_requests(reqs, count);
            let pending = Pending::take(hs.as_ptr(), hs.len() as c_int);
            let mut own = Vec::new();
            let statuses = own_fstatuses(statuses, hs.len(), &mut own);
        }
        post: if int(flag) != 0 { pending.all(c_statuses(statuses, hs.len()).as_ptr()) } else { pending.none() },
    }
    mpi_testany_ => "pmpi_testany_"(count: *const Fint, reqs: *mut Fint, index: *mut Fint, flag: *mut Fint,
                                    status: *mut Fint, ierr: *mut Fint) -> ierr as Testany {
        pre: {
            let hs = c_requests(reqs, count);
            let pending = Pending::take(hs.as_ptr(), hs.len() as c_int);
            let mut own = [0; STATUS_SIZE];
            let status = own_fstatus(status, &mut own);
        }
        post: completed(pending, if int(flag) != 0 && int(index) != mpi_sys::MPI_UNDEFINED { 1 } else { 0 }, index, status),
    }
    mpi_testsome_ => "pmpi_testsome_"(incount: *const Fint, reqs: *mut Fint, outcount: *mut Fint, indices: *mut Fint,
                                      statuses: *mut Fint, ierr: *mut Fint) -> ierr as Testsome {
        pre: {
            let hs = c_requests(reqs, incount);
            let pending = Pending::take(hs.as_ptr(), hs.len() as c_int);
            let mut own = Vec::new();
            let statuses = own_fstatuses(statuses, hs.len(), &mut own);
        }
        post: completed(pending, int(outcount), indices, statuses),
    }
    // ---- persistent requests (as the C table: set-up is remembered even
    // while nothing is recorded; each start is the send or receive it
    // stands for) ----
    mpi_send_init_ [ts] => "pmpi_send_init_"(buf: *const c_void, count: *const Fint, datatype: *const Fint, dest: *const Fint,
                                        tag: *const Fint, comm_: *const Fint, req: *mut Fint, ierr: *mut Fint) -> ierr as Send_init {
        idle: { persist(request(req), Template::Send(msg(comm(comm_), int(dest), int(tag), bytes(int(count), dtype(datatype))))); }
        pre: {}
        post: What::PersistentInit { send: true, msg: msg(comm(comm_), int(dest), int(tag), bytes(int(count), dtype(datatype))) },
    }
    mpi_bsend_init_ [ts] => "pmpi_bsend_init_"(buf: *const c_void, count: *const Fint, datatype: *const Fint, dest: *const Fint,
                                          tag: *const Fint, comm_: *const Fint, req: *mut Fint, ierr: *mut Fint) -> ierr as Bsend_init {
        idle: { persist(request(req), Template::Send(msg(comm(comm_), int(dest), int(tag), bytes(int(count), dtype(datatype))))); }
        pre: {}
        post: What::PersistentInit { send: true, msg: msg(comm(comm_), int(dest), int(tag), bytes(int(count), dtype(datatype))) },
    }
    mpi_ssend_init_ [ts] => "pmpi_ssend_init_"(buf: *const c_void, count: *const Fint, datatype: *const Fint, dest: *const Fint,
                                          tag: *const Fint, comm_: *const Fint, req: *mut Fint, ierr: *mut Fint) -> ierr as Ssend_init {
        idle: { persist(request(req), Template::Send(msg(comm(comm_), int(dest), int(tag), bytes(int(count), dtype(datatype))))); }
        pre: {}
        post: What::PersistentInit { send: true, msg: msg(comm(comm_), int(dest), int(tag), bytes(int(count), dtype(datatype))) },
    }
    mpi_rsend_init_ [ts] => "pmpi_rsend_init_"(buf: *const c_void, count: *const Fint, datatype: *const Fint, dest: *const Fint,
                                          tag: *const Fint, comm_: *const Fint, req: *mut Fint, ierr: *mut Fint) -> ierr as Rsend_init {
        idle: { persist(request(req), Template::Send(msg(comm(comm_), int(dest), int(tag), bytes(int(count), dtype(datatype))))); }
        pre: {}
        post: What::PersistentInit { send: true, msg: msg(comm(comm_), int(dest), int(tag), bytes(int(count), dtype(datatype))) },
    }
    mpi_recv_init_ [ts] => "pmpi_recv_init_"(buf: *mut c_void, count: *const Fint, datatype: *const Fint, source: *const Fint,
                                        tag: *const Fint, comm_: *const Fint, req: *mut Fint, ierr: *mut Fint) -> ierr as Recv_init {
        idle: { persist(request(req), Template::Recv(Sources::of(comm(comm_)))); }
        pre: {}
        post: What::PersistentInit { send: false, msg: msg(comm(comm_), int(source), int(tag), bytes(int(count), dtype(datatype))) },
    }
    mpi_start_ => "pmpi_start_"(req: *mut Fint, ierr: *mut Fint) -> ierr as Start {
        pre: { let h = request(req); }
        post: What::Start(start_one(h).into_iter().collect()),
    }
    mpi_startall_ => "pmpi_startall_"(count: *const Fint, reqs: *mut Fint, ierr: *mut Fint) -> ierr as Startall {
        pre: {
            // SAFETY: the caller passes `count` Fortran request handles.
            let hs: Vec<MPI_Request> = (0..int(count).max(0) as usize).map(|i| request(unsafe { reqs.add(i) })).collect();
        }
        post: What::Start(hs.iter().filter_map(|&h| start_one(h)).collect()),
    }
    mpi_request_free_ => "pmpi_request_free_"(req: *mut Fint, ierr: *mut Fint) -> ierr as Request_free {
        pre: {
            // Read before MPI nulls the handle.
            let h = request(req);
            unpersist(h);
            drop_request(h);
        }
        post: What::RequestFree,
    }
    mpi_barrier_ => "pmpi_barrier_"(comm_: *const Fint, ierr: *mut Fint) -> ierr as Barrier {
        pre: {}
        post: What::Collective { bytes: 0, comm_size: comm_size(comm(comm_)), root: -1 },
    }
    mpi_bcast_ [ts] => "pmpi_bcast_"(buf: *mut c_void, count: *const Fint, datatype: *const Fint, root: *const Fint,
                                comm_: *const Fint, ierr: *mut Fint) -> ierr as Bcast {
        pre: {}
        post: What::Collective {
            bytes: rooted(int(root), || bytes(int(count), dtype(datatype))),
            comm_size: comm_size(comm(comm_)),
            root: root_of(comm(comm_), int(root)),
        },
    }
    mpi_reduce_ [ts] => "pmpi_reduce_"(sendbuf: *const c_void, recvbuf: *mut c_void, count: *const Fint,
                                  datatype: *const Fint, op: *const Fint, root: *const Fint, comm_: *const Fint,
                                  ierr: *mut Fint) -> ierr as Reduce {
        pre: {}
        post: What::Collective {
            bytes: rooted(int(root), || bytes(int(count), dtype(datatype))),
            comm_size: comm_size(comm(comm_)),
            root: root_of(comm(comm_), int(root)),
        },
    }
    mpi_allreduce_ [ts] => "pmpi_allreduce_"(sendbuf: *const c_void, recvbuf: *mut c_void, count: *const Fint,
                                        datatype: *const Fint, op: *const Fint, comm_: *const Fint,
                                        ierr: *mut Fint) -> ierr as Allreduce {
        pre: {}
        post: What::Collective { bytes: bytes(int(count), dtype(datatype)), comm_size: comm_size(comm(comm_)), root: -1 },
    }
    mpi_gather_ [ts] => "pmpi_gather_"(sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
                                  recvbuf: *mut c_void, recvcount: *const Fint, recvtype: *const Fint,
                                  root: *const Fint, comm_: *const Fint, ierr: *mut Fint) -> ierr as Gather {
        pre: {}
        post: What::Collective {
            bytes: rooted(int(root), || own_part(fbuf(sendbuf), int(sendcount), dtype(sendtype), int(recvcount), dtype(recvtype))),
            comm_size: comm_size(comm(comm_)),
            root: root_of(comm(comm_), int(root)),
        },
    }
    mpi_gatherv_ [ts] => "pmpi_gatherv_"(sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
                                    recvbuf: *mut c_void, recvcounts: *const Fint, displs: *const Fint,
                                    recvtype: *const Fint, root: *const Fint, comm_: *const Fint,
                                    ierr: *mut Fint) -> ierr as Gatherv {
        pre: {}
        post: What::Collective {
            // SAFETY: in place, recvcounts has one entry per rank of comm.
            bytes: rooted(int(root), || unsafe {
                own_part_v(fbuf(sendbuf), int(sendcount), dtype(sendtype), recvcounts, dtype(recvtype), comm(comm_))
            }),
            comm_size: comm_size(comm(comm_)),
            root: root_of(comm(comm_), int(root)),
        },
    }
    mpi_scatter_ [ts] => "pmpi_scatter_"(sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
                                    recvbuf: *mut c_void, recvcount: *const Fint, recvtype: *const Fint,
                                    root: *const Fint, comm_: *const Fint, ierr: *mut Fint) -> ierr as Scatter {
        pre: {}
        post: What::Collective {
            bytes: rooted(int(root), || own_part(fbuf(recvbuf), int(recvcount), dtype(recvtype), int(sendcount), dtype(sendtype))),
            comm_size: comm_size(comm(comm_)),
            root: root_of(comm(comm_), int(root)),
        },
    }
    mpi_scatterv_ [ts] => "pmpi_scatterv_"(sendbuf: *const c_void, sendcounts: *const Fint, displs: *const Fint,
                                      sendtype: *const Fint, recvbuf: *mut c_void, recvcount: *const Fint,
                                      recvtype: *const Fint, root: *const Fint, comm_: *const Fint,
                                      ierr: *mut Fint) -> ierr as Scatterv {
        pre: {}
        post: What::Collective {
            // SAFETY: in place, sendcounts has one entry per rank of comm.
            bytes: rooted(int(root), || unsafe {
                own_part_v(fbuf(recvbuf), int(recvcount), dtype(recvtype), sendcounts, dtype(sendtype), comm(comm_))
            }),
            comm_size: comm_size(comm(comm_)),
            root: root_of(comm(comm_), int(root)),
        },
    }
    mpi_allgather_ [ts] => "pmpi_allgather_"(sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
                                        recvbuf: *mut c_void, recvcount: *const Fint, recvtype: *const Fint,
                                        comm_: *const Fint, ierr: *mut Fint) -> ierr as Allgather {
        pre: {}
        post: What::Collective {
            bytes: own_part(fbuf(sendbuf), int(sendcount), dtype(sendtype), int(recvcount), dtype(recvtype)),
            comm_size: comm_size(comm(comm_)),
            root: -1,
        },
    }
    mpi_allgatherv_ [ts] => "pmpi_allgatherv_"(sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
                                          recvbuf: *mut c_void, recvcounts: *const Fint, displs: *const Fint,
                                          recvtype: *const Fint, comm_: *const Fint, ierr: *mut Fint) -> ierr as Allgatherv {
        pre: {}
        post: What::Collective {
            // SAFETY: in place, recvcounts has one entry per rank of comm.
            bytes: unsafe { own_part_v(fbuf(sendbuf), int(sendcount), dtype(sendtype), recvcounts, dtype(recvtype), comm(comm_)) },
            comm_size: comm_size(comm(comm_)),
            root: -1,
        },
    }
    mpi_alltoall_ [ts] => "pmpi_alltoall_"(sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
                                      recvbuf: *mut c_void, recvcount: *const Fint, recvtype: *const Fint,
                                      comm_: *const Fint, ierr: *mut Fint) -> ierr as Alltoall {
        pre: { let n = peer_size(comm(comm_)); }
        post: What::Collective {
            bytes: own_part(fbuf(sendbuf), int(sendcount), dtype(sendtype), int(recvcount), dtype(recvtype)) * n as u64,
            comm_size: n,
            root: -1,
        },
    }
    mpi_alltoallv_ [ts] => "pmpi_alltoallv_"(sendbuf: *const c_void, sendcounts: *const Fint, sdispls: *const Fint,
                                        sendtype: *const Fint, recvbuf: *mut c_void, recvcounts: *const Fint,
                                        rdispls: *const Fint, recvtype: *const Fint, comm_: *const Fint,
                                        ierr: *mut Fint) -> ierr as Alltoallv {
        pre: { let n = peer_size(comm(comm_)); }
        post: What::Collective {
            // SAFETY: the counts have one entry per peer of comm.
            bytes: unsafe {
                if in_place(fbuf(sendbuf)) { bytes_v(recvcounts, n, dtype(recvtype)) } else { bytes_v(sendcounts, n, dtype(sendtype)) }
            },
            comm_size: n,
            root: -1,
        },
    }
    mpi_reduce_scatter_ [ts] => "pmpi_reduce_scatter_"(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const Fint,
                                                  datatype: *const Fint, op: *const Fint, comm_: *const Fint,
                                                  ierr: *mut Fint) -> ierr as Reduce_scatter {
        pre: { let n = comm_size(comm(comm_)); }
        // SAFETY: recvcounts has one entry per rank of comm.
        post: What::Collective { bytes: unsafe { bytes_v(recvcounts, n, dtype(datatype)) }, comm_size: n, root: -1 },
    }
    mpi_reduce_scatter_block_ [ts] => "pmpi_reduce_scatter_block_"(sendbuf: *const c_void, recvbuf: *mut c_void,
                                                              recvcount: *const Fint, datatype: *const Fint,
                                                              op: *const Fint, comm_: *const Fint,
                                                              ierr: *mut Fint) -> ierr as Reduce_scatter_block {
        pre: { let n = comm_size(comm(comm_)); }
        post: What::Collective { bytes: bytes(int(recvcount), dtype(datatype)) * n as u64, comm_size: n, root: -1 },
    }
    // ---- non-blocking collectives ----
    mpi_ibarrier_ => "pmpi_ibarrier_"(comm_: *const Fint, req: *mut Fint, ierr: *mut Fint) -> ierr as Ibarrier {
        pre: {}
        post: What::ICollective { bytes: 0, comm_size: comm_size(comm(comm_)), root: -1, req: post_request(request(req), None) },
    }
    mpi_ibcast_ [ts] => "pmpi_ibcast_"(buf: *mut c_void, count: *const Fint, datatype: *const Fint, root: *const Fint,
                                  comm_: *const Fint, req: *mut Fint, ierr: *mut Fint) -> ierr as Ibcast {
        pre: {}
        post: What::ICollective {
            bytes: rooted(int(root), || bytes(int(count), dtype(datatype))),
            comm_size: comm_size(comm(comm_)),
            root: root_of(comm(comm_), int(root)),
            req: post_request(request(req), None),
        },
    }
    mpi_ireduce_ [ts] => "pmpi_ireduce_"(sendbuf: *const c_void, recvbuf: *mut c_void, count: *const Fint,
                                    datatype: *const Fint, op: *const Fint, root: *const Fint, comm_: *const Fint,
                                    req: *mut Fint, ierr: *mut Fint) -> ierr as Ireduce {
        pre: {}
        post: What::ICollective {
            bytes: rooted(int(root), || bytes(int(count), dtype(datatype))),
            comm_size: comm_size(comm(comm_)),
            root: root_of(comm(comm_), int(root)),
            req: post_request(request(req), None),
        },
    }
    mpi_iallreduce_ [ts] => "pmpi_iallreduce_"(sendbuf: *const c_void, recvbuf: *mut c_void, count: *const Fint,
                                          datatype: *const Fint, op: *const Fint, comm_: *const Fint,
                                          req: *mut Fint, ierr: *mut Fint) -> ierr as Iallreduce {
        pre: {}
        post: What::ICollective {
            bytes: bytes(int(count), dtype(datatype)),
            comm_size: comm_size(comm(comm_)),
            root: -1,
            req: post_request(request(req), None),
        },
    }
    mpi_iallgather_ [ts] => "pmpi_iallgather_"(sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
                                          recvbuf: *mut c_void, recvcount: *const Fint, recvtype: *const Fint,
                                          comm_: *const Fint, req: *mut Fint, ierr: *mut Fint) -> ierr as Iallgather {
        pre: {}
        post: What::ICollective {
            bytes: own_part(fbuf(sendbuf), int(sendcount), dtype(sendtype), int(recvcount), dtype(recvtype)),
            comm_size: comm_size(comm(comm_)),
            root: -1,
            req: post_request(request(req), None),
        },
    }
    mpi_iallgatherv_ [ts] => "pmpi_iallgatherv_"(sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
                                            recvbuf: *mut c_void, recvcounts: *const Fint, displs: *const Fint,
                                            recvtype: *const Fint, comm_: *const Fint, req: *mut Fint,
                                            ierr: *mut Fint) -> ierr as Iallgatherv {
        pre: {}
        post: What::ICollective {
            // SAFETY: in place, recvcounts has one entry per rank of comm.
            bytes: unsafe { own_part_v(fbuf(sendbuf), int(sendcount), dtype(sendtype), recvcounts, dtype(recvtype), comm(comm_)) },
            comm_size: comm_size(comm(comm_)),
            root: -1,
            req: post_request(request(req), None),
        },
    }
    mpi_ialltoall_ [ts] => "pmpi_ialltoall_"(sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
                                        recvbuf: *mut c_void, recvcount: *const Fint, recvtype: *const Fint,
                                        comm_: *const Fint, req: *mut Fint, ierr: *mut Fint) -> ierr as Ialltoall {
        pre: { let n = peer_size(comm(comm_)); }
        post: What::ICollective {
            bytes: own_part(fbuf(sendbuf), int(sendcount), dtype(sendtype), int(recvcount), dtype(recvtype)) * n as u64,
            comm_size: n,
            root: -1,
            req: post_request(request(req), None),
        },
    }
    mpi_igather_ [ts] => "pmpi_igather_"(sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
                                    recvbuf: *mut c_void, recvcount: *const Fint, recvtype: *const Fint,
                                    root: *const Fint, comm_: *const Fint, req: *mut Fint, ierr: *mut Fint) -> ierr as Igather {
        pre: {}
        post: What::ICollective {
            bytes: rooted(int(root), || own_part(fbuf(sendbuf), int(sendcount), dtype(sendtype), int(recvcount), dtype(recvtype))),
            comm_size: comm_size(comm(comm_)),
            root: root_of(comm(comm_), int(root)),
            req: post_request(request(req), None),
        },
    }
    mpi_igatherv_ [ts] => "pmpi_igatherv_"(sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
                                      recvbuf: *mut c_void, recvcounts: *const Fint, displs: *const Fint,
                                      recvtype: *const Fint, root: *const Fint, comm_: *const Fint,
                                      req: *mut Fint, ierr: *mut Fint) -> ierr as Igatherv {
        pre: {}
        post: What::ICollective {
            // SAFETY: in place, recvcounts has one entry per rank of comm.
            bytes: rooted(int(root), || unsafe {
                own_part_v(fbuf(sendbuf), int(sendcount), dtype(sendtype), recvcounts, dtype(recvtype), comm(comm_))
            }),
            comm_size: comm_size(comm(comm_)),
            root: root_of(comm(comm_), int(root)),
            req: post_request(request(req), None),
        },
    }
    mpi_iscatter_ [ts] => "pmpi_iscatter_"(sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
                                      recvbuf: *mut c_void, recvcount: *const Fint, recvtype: *const Fint,
                                      root: *const Fint, comm_: *const Fint, req: *mut Fint, ierr: *mut Fint) -> ierr as Iscatter {
        pre: {}
        post: What::ICollective {
            bytes: rooted(int(root), || own_part(fbuf(recvbuf), int(recvcount), dtype(recvtype), int(sendcount), dtype(sendtype))),
            comm_size: comm_size(comm(comm_)),
            root: root_of(comm(comm_), int(root)),
            req: post_request(request(req), None),
        },
    }
    mpi_iscatterv_ [ts] => "pmpi_iscatterv_"(sendbuf: *const c_void, sendcounts: *const Fint, displs: *const Fint,
                                        sendtype: *const Fint, recvbuf: *mut c_void, recvcount: *const Fint,
                                        recvtype: *const Fint, root: *const Fint, comm_: *const Fint,
                                        req: *mut Fint, ierr: *mut Fint) -> ierr as Iscatterv {
        pre: {}
        post: What::ICollective {
            // SAFETY: in place, sendcounts has one entry per rank of comm.
            bytes: rooted(int(root), || unsafe {
                own_part_v(fbuf(recvbuf), int(recvcount), dtype(recvtype), sendcounts, dtype(sendtype), comm(comm_))
            }),
            comm_size: comm_size(comm(comm_)),
            root: root_of(comm(comm_), int(root)),
            req: post_request(request(req), None),
        },
    }
    mpi_ireduce_scatter_ [ts] => "pmpi_ireduce_scatter_"(sendbuf: *const c_void, recvbuf: *mut c_void,
                                                    recvcounts: *const Fint, datatype: *const Fint, op: *const Fint,
                                                    comm_: *const Fint, req: *mut Fint, ierr: *mut Fint) -> ierr as Ireduce_scatter {
        pre: { let n = comm_size(comm(comm_)); }
        post: What::ICollective {
            // SAFETY: recvcounts has one entry per rank of comm.
            bytes: unsafe { bytes_v(recvcounts, n, dtype(datatype)) },
            comm_size: n,
            root: -1,
            req: post_request(request(req), None),
        },
    }
    mpi_ireduce_scatter_block_ [ts] => "pmpi_ireduce_scatter_block_"(sendbuf: *const c_void, recvbuf: *mut c_void,
                                                                recvcount: *const Fint, datatype: *const Fint,
                                                                op: *const Fint, comm_: *const Fint, req: *mut Fint,
                                                                ierr: *mut Fint) -> ierr as Ireduce_scatter_block {
        pre: { let n = comm_size(comm(comm_)); }
        post: What::ICollective {
            bytes: bytes(int(recvcount), dtype(datatype)) * n as u64,
            comm_size: n,
            root: -1,
            req: post_request(request(req), None),
        },
    }
    mpi_ialltoallv_ [ts] => "pmpi_ialltoallv_"(sendbuf: *const c_void, sendcounts: *const Fint, sdispls: *const Fint,
                                          sendtype: *const Fint, recvbuf: *mut c_void, recvcounts: *const Fint,
                                          rdispls: *const Fint, recvtype: *const Fint, comm_: *const Fint,
                                          req: *mut Fint, ierr: *mut Fint) -> ierr as Ialltoallv {
        pre: { let n = peer_size(comm(comm_)); }
        post: What::ICollective {
            // SAFETY: the counts have one entry per peer of comm.
            bytes: unsafe {
                if in_place(fbuf(sendbuf)) { bytes_v(recvcounts, n, dtype(recvtype)) } else { bytes_v(sendcounts, n, dtype(sendtype)) }
            },
            comm_size: n,
            root: -1,
            req: post_request(request(req), None),
        },
    }
}

mod lifecycle;
mod topology;
