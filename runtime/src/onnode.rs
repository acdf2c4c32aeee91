//! On-node moves copied by both ends.
//!
//! On one node, Open MPI moves a large message as one cross-process copy
//! (CMA: the receiver's `process_vm_readv` of the sender's buffer). Only
//! the receiver's core copies; the sender's waits. A move of rows between
//! two ranks of one node therefore runs at one core's copy rate, below
//! osu_bw's figure for the same size (whose buffers the cache keeps;
//! docs/design/runtime.md has the rates).
//!
//! Here both ends copy at once, each a disjoint half, straight from rows
//! to rows: the sender pushes the front half into the receiver's rows with
//! `process_vm_writev` while the receiver pulls the back half with
//! `process_vm_readv`. The ends learn each other's addresses, and then
//! that the other half landed, from four small MPI messages per piece.
//!
//! A pair takes this way only when it can: [`Peers::probe`] (collective)
//! has every rank read a token from, and write one into, every other rank
//! with these calls, and a pair qualifies only when all four worked both
//! ways, and only between ranks of one network namespace: ranks on
//! other nodes, on other emulated hosts (`mheta hosts`: one machine, but
//! each host its own network namespace, whose moves must cross its link),
//! in another PID namespace, or forbidden by `ptrace` rules (Yama
//! `ptrace_scope`, containers) move through MPI as before. Pieces under
//! [`MIN_BYTES`] always move through MPI.
//! `MHETA_ON_NODE_COPY=0` (or [`set_on_node_copy`]) turns the whole way
//! off; the redistribution bench sets both side by side.
//!
//! The two system calls are `mheta_base::os`'s; the module's own `unsafe`
//! is the view of rows as bytes.

use crate::Switch;
use mheta_base::os::{read_from_process, write_to_process};
use mpi::collective::CommunicatorCollectives;
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, SimpleCommunicator};

/// Tag of the address messages.
const ADDR_TAG: i32 = 0x6d69;
/// Tag of the "my half landed" messages.
const DONE_TAG: i32 = 0x6d6a;

/// Pieces smaller than this move through MPI: below it the probe and the
/// four messages cost more than the second copier saves (the
/// redistribution bench; docs/design/runtime.md). The move-cost model
/// prices pieces by the same threshold.
pub const MIN_BYTES: usize = mheta_model::redist::DIRECT_COPY_MIN_BYTES;

static WANTED: Switch = Switch::new("MHETA_ON_NODE_COPY", true);

/// Whether moves between ranks of one node are copied by both ends: as
/// [`set_on_node_copy`] said, else unless the environment says
/// `MHETA_ON_NODE_COPY=0` (or `off`, `no`, `false`). On by default.
pub fn on_node_copy_wanted() -> bool {
    WANTED.get()
}

/// Turn on-node copying by both ends on or off for this process's later
/// moves, whatever the environment says. Every rank must say the same.
pub fn set_on_node_copy(on: bool) {
    WANTED.set(on);
}

/// How many ranks of `world` this rank can copy to and from directly (as
/// large moves would, were on-node copying wanted). Collective on its
/// first call for `world` (or a large move's), local after it.
pub fn on_node_peers(world: &SimpleCommunicator) -> usize {
    Peers::of(world).pids.iter().flatten().count()
}

/// [`on_node_peers`] as kept on `world` by an earlier probe, without
/// probing: None when none was made on it (a new communicator, or no
/// large move yet). Local.
pub fn on_node_peers_known(world: &SimpleCommunicator) -> Option<usize> {
    cached::get(world).map(|p| p.pids.iter().flatten().count())
}

/// The ranks this rank can copy to and from directly, with their PIDs.
#[derive(Clone, Debug, PartialEq)]
pub struct Peers {
    pids: Vec<Option<libc::pid_t>>,
}

impl Peers {
    /// Find them. Collective over `world`: every rank reads a token from
    /// every other rank and writes its own into a slot the other keeps for
    /// it; a pair qualifies when both ends read the right token and found
    /// the right one written.
    pub fn probe(world: &SimpleCommunicator) -> Peers {
        let n = world.size() as usize;
        let me = world.rank() as usize;
        let pid = std::process::id() as libc::pid_t;
        // A token no other process holds at the same address by chance.
        let token: Box<u64> = Box::new(
            (u64::from(pid as u32) << 32)
                ^ std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64)
                ^ 0x6d68_6574_6100_0000,
        );
        let mut slots = vec![0u64; n];
        let mine = [
            pid as u64,
            &*token as *const u64 as u64,
            *token,
            slots.as_mut_ptr() as u64,
            net_namespace(),
        ];
        let mut all = vec![0u64; 5 * n];
        world.all_gather_into(&mine[..], &mut all[..]);
        let info = |j: usize| {
            (
                all[5 * j] as libc::pid_t,
                all[5 * j + 1],
                all[5 * j + 2],
                all[5 * j + 3],
            )
        };
        let same_host = |j: usize| all[5 * j + 4] == all[5 * me + 4];
        let mut ok = vec![0u8; n];
        for (j, o) in ok.iter_mut().enumerate() {
            if j == me || !same_host(j) {
                continue;
            }
            let (p, taddr, tval, saddr) = info(j);
            let mut got = 0u64;
            let read = read_from_process(p, bytes_of_mut(std::slice::from_mut(&mut got)), taddr)
                .is_ok()
                && got == tval;
            let wrote = write_to_process(
                p,
                bytes_of(std::slice::from_ref(&*token)),
                saddr + 8 * me as u64,
            )
            .is_ok();
            *o = u8::from(read && wrote);
        }
        // Everyone has written (or failed to) before anyone looks.
        world.barrier();
        for (j, o) in ok.iter_mut().enumerate() {
            // SAFETY: another rank may have written `slots` behind the
            // compiler's back; read it fresh.
            let got = unsafe { std::ptr::read_volatile(slots.as_ptr().add(j)) };
            if j != me && got != info(j).2 {
                *o = 0;
            }
        }
        let mut rows = vec![0u8; n * n];
        world.all_gather_into(&ok[..], &mut rows[..]);
        let pids = (0..n)
            .map(|j| {
                (j != me && rows[me * n + j] == 1 && rows[j * n + me] == 1).then_some(info(j).0)
            })
            .collect();
        drop(token);
        Peers { pids }
    }

    /// [`Peers::probe`] once per communicator: the first call on `world`
    /// probes (collective) and keeps the answer on `world` as an MPI
    /// attribute (freed with it); later calls read it back without a
    /// message. A job's ranks keep their processes, so the answer holds
    /// for every later move on the same communicator. Every rank of
    /// `world` calls it at the same moves, so all probe on the first.
    pub fn of(world: &SimpleCommunicator) -> Peers {
        if let Some(p) = cached::get(world) {
            return p;
        }
        let p = Peers::probe(world);
        cached::set(world, &p);
        p
    }

    /// The PID of `rank` when this rank can copy to and from it directly.
    pub fn pid(&self, rank: usize) -> Option<libc::pid_t> {
        self.pids.get(rank).copied().flatten()
    }

    /// Does a piece of `bytes` to or from `rank` move this way?
    pub fn direct(&self, rank: usize, bytes: usize) -> bool {
        bytes >= MIN_BYTES && self.pid(rank).is_some()
    }
}

/// [`Peers`] kept on a communicator: an attribute (MPI 4.1 section 7.7)
/// under one key of this process, holding a boxed copy that the
/// communicator's free drops and that its duplicates do not inherit.
mod cached {
    use super::Peers;
    use mpi::ffi;
    use mpi::raw::AsRaw;
    use mpi::topology::SimpleCommunicator;
    use std::ffi::{c_int, c_void};
    use std::sync::OnceLock;

    /// The key, made on first use (None: MPI refused one; nothing is kept).
    fn key() -> Option<c_int> {
        static KEY: OnceLock<Option<c_int>> = OnceLock::new();
        *KEY.get_or_init(|| {
            let mut k: c_int = 0;
            // SAFETY: the callbacks below match MPI's signatures; no extra
            // state.
            let rc = unsafe {
                ffi::MPI_Comm_create_keyval(
                    Some(no_copy),
                    Some(drop_peers),
                    &mut k,
                    std::ptr::null_mut(),
                )
            };
            (rc == ffi::MPI_SUCCESS as c_int).then_some(k)
        })
    }

    /// A duplicate of the communicator probes afresh.
    unsafe extern "C" fn no_copy(
        _comm: ffi::MPI_Comm,
        _key: c_int,
        _extra: *mut c_void,
        _val_in: *mut c_void,
        _val_out: *mut c_void,
        flag: *mut c_int,
    ) -> c_int {
        // SAFETY: MPI passes a valid flag to set.
        unsafe { *flag = 0 };
        ffi::MPI_SUCCESS as c_int
    }

    /// The communicator is freed (or the attribute replaced): drop the box.
    unsafe extern "C" fn drop_peers(
        _comm: ffi::MPI_Comm,
        _key: c_int,
        val: *mut c_void,
        _extra: *mut c_void,
    ) -> c_int {
        // SAFETY: every value set under the key is a `Box<Peers>` from
        // `set`, and MPI deletes each once.
        drop(unsafe { Box::from_raw(val.cast::<Peers>()) });
        ffi::MPI_SUCCESS as c_int
    }

    /// The answer kept on `world`, if any.
    pub(super) fn get(world: &SimpleCommunicator) -> Option<Peers> {
        let k = key()?;
        let mut val: *mut Peers = std::ptr::null_mut();
        let mut flag: c_int = 0;
        // SAFETY: MPI writes the attribute's pointer into `val` when it is
        // set (flag 1); every value under the key is a live `Box<Peers>`
        // owned by the communicator.
        unsafe {
            ffi::MPI_Comm_get_attr(
                world.as_raw(),
                k,
                (&mut val as *mut *mut Peers).cast(),
                &mut flag,
            );
            (flag != 0 && !val.is_null()).then(|| (*val).clone())
        }
    }

    /// Keep a copy of `p` on `world`.
    pub(super) fn set(world: &SimpleCommunicator, p: &Peers) {
        let Some(k) = key() else { return };
        let b = Box::into_raw(Box::new(p.clone()));
        // SAFETY: the box's ownership passes to the communicator, which
        // drops it through `drop_peers`; on failure it is ours again.
        unsafe {
            if ffi::MPI_Comm_set_attr(world.as_raw(), k, b.cast()) != ffi::MPI_SUCCESS as c_int {
                drop(Box::from_raw(b));
            }
        }
    }
}

/// The inode of this process's network namespace (0 when unknown): ranks
/// in different ones are on different hosts, real or emulated.
fn net_namespace() -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/net").map_or(0, |m| m.ino())
}

fn bytes_of<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: rows are plain `Copy` values (MPI datatypes); any byte view
    // of them is valid to read.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), std::mem::size_of_val(v)) }
}

fn bytes_of_mut<T: Copy>(v: &mut [T]) -> &mut [u8] {
    // SAFETY: as above; the bytes written are a peer's copy of values of
    // the same type, sent from the same program.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), std::mem::size_of_val(v)) }
}

/// Move the direct pieces of one move: `sends` (peer, rows this rank
/// gives) and `recvs` (peer, where the rows it gets go). For each piece
/// the giving end pushes the front half and the getting end pulls the
/// back half. Returns when every piece of this rank has landed both
/// halves. Both ends of every piece must call it with the same sizes; it
/// waits only for addresses and "landed" messages, so it cannot deadlock
/// where the same sends and receives through MPI would not.
///
/// Panics when a copy the probe allowed fails: the rows are then neither
/// here nor there, and `MHETA_ON_NODE_COPY=0` is the way around.
pub fn exchange<T: Copy>(
    world: &SimpleCommunicator,
    peers: &Peers,
    sends: &[(usize, &[T])],
    recvs: &mut [(usize, &mut [T])],
) {
    if sends.is_empty() && recvs.is_empty() {
        return;
    }
    // What each end tells the other: its rows' address.
    let my_addr: Vec<u64> = sends
        .iter()
        .map(|(_, s)| s.as_ptr() as u64)
        .chain(recvs.iter().map(|(_, r)| r.as_ptr() as u64))
        .collect();
    let peer: Vec<usize> = sends
        .iter()
        .map(|s| s.0)
        .chain(recvs.iter().map(|r| r.0))
        .collect();
    let peer_of = |k: usize| peer[k];
    let one = 1u64;
    mpi::request::scope(|scope| {
        let mut tells = Vec::with_capacity(2 * my_addr.len());
        for (k, a) in my_addr.iter().enumerate() {
            tells.push(
                world
                    .process_at_rank(peer_of(k) as i32)
                    .immediate_send_with_tag(scope, a, ADDR_TAG),
            );
        }
        // Copy each piece's half as soon as its peer's address is here.
        let mut pending: Vec<usize> = (0..my_addr.len()).collect();
        while !pending.is_empty() {
            let Some(i) = address_arrived(world, &pending, &peer) else {
                std::thread::yield_now();
                continue;
            };
            let k = pending.swap_remove(i);
            let peer = peer_of(k);
            let (at, _): (u64, _) = world
                .process_at_rank(peer as i32)
                .receive_with_tag(ADDR_TAG);
            copy_half(peers, sends, recvs, k, peer, at);
            tells.push(
                world
                    .process_at_rank(peer as i32)
                    .immediate_send_with_tag(scope, &one, DONE_TAG),
            );
        }
        // Each piece is whole once its peer's half has landed too.
        for k in 0..my_addr.len() {
            let (_, _): (u64, _) = world
                .process_at_rank(peer_of(k) as i32)
                .receive_with_tag(DONE_TAG);
        }
        for t in tells {
            t.wait();
        }
    });
}

/// Where in `pending` (pieces, whose peers are in `peer`) the first piece
/// is whose peer's address has arrived. Probing peer by peer, not any
/// source: a peer that is done with this rank may already have sent the
/// next move's address.
fn address_arrived(world: &SimpleCommunicator, pending: &[usize], peer: &[usize]) -> Option<usize> {
    pending.iter().position(|&k| {
        world
            .process_at_rank(peer[k] as i32)
            .immediate_probe_with_tag(ADDR_TAG)
            .is_some()
    })
}

/// This end's half of piece `k` of [`exchange`], whose other end is rank
/// `peer` with its rows at `at`: the front half pushed when the piece is
/// one of `sends`, the back half pulled when it is one of `recvs`.
/// Panics when the copy fails.
fn copy_half<T: Copy>(
    peers: &Peers,
    sends: &[(usize, &[T])],
    recvs: &mut [(usize, &mut [T])],
    k: usize,
    peer: usize,
    at: u64,
) {
    let pid = peers.pid(peer).expect("a direct piece's peer was probed");
    let r = if k < sends.len() {
        let b = bytes_of(sends[k].1);
        write_to_process(pid, &b[..b.len() / 2], at)
    } else {
        let b = bytes_of_mut(&mut *recvs[k - sends.len()].1);
        let h = b.len() / 2;
        read_from_process(pid, &mut b[h..], at + h as u64)
    };
    if let Err(e) = r {
        panic!(
            "mheta: on-node copy with rank {peer} (pid {pid}) failed: {e}; \
             set MHETA_ON_NODE_COPY=0 to move through MPI"
        );
    }
}
