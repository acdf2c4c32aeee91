//! What the recorder writes about each MPI call.

use serde::{Deserialize, Serialize};

macro_rules! ops {
    ($($op:ident),* $(,)?) => {
        /// The MPI functions the interposer wraps; `MPI_` + the variant name
        /// is the C function.
        #[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        #[allow(non_camel_case_types)]
        pub enum Op { $($op),* }

        /// Number of [`Op`]s.
        pub const OP_COUNT: usize = [$(Op::$op),*].len();

        impl Op {
            /// Every op, in declaration order (`Op::ALL[op as usize] == op`).
            pub const ALL: [Op; OP_COUNT] = [$(Op::$op),*];

            /// The MPI function's name, e.g. `MPI_Send`.
            pub fn name(self) -> &'static str {
                match self { $(Op::$op => concat!("MPI_", stringify!($op))),* }
            }
        }
    };
}

ops! {
    // point-to-point
    Send, Ssend, Bsend, Rsend, Isend, Issend, Ibsend, Irsend,
    Recv, Irecv, Sendrecv, Sendrecv_replace,
    Probe, Iprobe, Mprobe, Improbe, Mrecv, Imrecv,
    Wait, Waitall, Waitany, Waitsome, Test, Testall, Testany, Testsome,
    // collectives
    Barrier, Bcast, Reduce, Allreduce, Gather, Gatherv, Scatter, Scatterv,
    Allgather, Allgatherv, Alltoall, Alltoallv, Reduce_scatter, Reduce_scatter_block,
    Ibarrier, Ibcast, Ireduce, Iallreduce, Igather, Igatherv, Iscatter, Iscatterv,
    Iallgather, Iallgatherv, Ialltoall, Ialltoallv, Ireduce_scatter, Ireduce_scatter_block,
    // MPI-IO
    File_open, File_close, File_seek,
    File_read, File_write, File_read_at, File_write_at,
    File_read_all, File_write_all, File_read_at_all, File_write_at_all,
    File_iread, File_iwrite, File_iread_at, File_iwrite_at,
    // Persistent requests (appended: an op's number is its place here).
    Send_init, Bsend_init, Ssend_init, Rsend_init, Recv_init,
    Start, Startall, Request_free,
    // Prefix reductions, the general all-to-all, and the neighbourhood
    // collectives of a virtual topology (appended).
    Scan, Exscan, Alltoallw,
    Neighbor_allgather, Neighbor_allgatherv, Neighbor_alltoall, Neighbor_alltoallv, Neighbor_alltoallw,
    Iscan, Iexscan, Ialltoallw,
    Ineighbor_allgather, Ineighbor_allgatherv, Ineighbor_alltoall, Ineighbor_alltoallv,
    Ineighbor_alltoallw,
    // MPI-4 (appended): the non-blocking send-receive and the persistent
    // collectives.
    Isendrecv, Isendrecv_replace,
    Barrier_init, Bcast_init, Reduce_init, Allreduce_init, Gather_init, Gatherv_init,
    Scatter_init, Scatterv_init, Allgather_init, Allgatherv_init, Alltoall_init,
    Alltoallv_init, Alltoallw_init, Reduce_scatter_init, Reduce_scatter_block_init,
    Scan_init, Exscan_init,
    Neighbor_allgather_init, Neighbor_allgatherv_init, Neighbor_alltoall_init,
    Neighbor_alltoallv_init, Neighbor_alltoallw_init,
    // MPI-4's partitioned point-to-point (appended).
    Psend_init, Precv_init,
}

/// The tag of the messages a neighbourhood collective stands for
/// ([`What::Neighbor`]): negative, so no program's own tag.
pub const NEIGHBOR_TAG: i32 = -1000;

/// One message endpoint as seen by the recording rank. Ranks are
/// `MPI_COMM_WORLD` ranks (negative: none, e.g. `MPI_PROC_NULL`); `bytes`
/// is `count * MPI_Type_size(datatype)`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Msg {
    pub peer: i32,
    pub tag: i32,
    pub bytes: u64,
}

/// A non-blocking request that completed inside a `Wait*` or `Test*` call.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// Id given to the request when it was posted.
    pub req: u32,
    /// For receives: the matched message (source and size from the status).
    pub recv: Option<Msg>,
}

/// What happened during one interval of the instrumented iteration.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub enum What {
    /// `MPI_Pcontrol(STAGE_BEGIN)`: computation and I/O until `StageEnd`.
    StageBegin,
    StageEnd,
    /// Blocking send (any mode).
    Send(Msg),
    /// Non-blocking send posted, completed later by a `Complete` with `req`.
    Isend {
        msg: Msg,
        req: u32,
    },
    /// Blocking receive; `peer` is the actual source from the status.
    Recv(Msg),
    /// Non-blocking receive posted (also `MPI_Imrecv`); the matched source
    /// is in the completion.
    Irecv {
        req: u32,
    },
    /// `MPI_Sendrecv(_replace)`: a send and a receive that proceed together.
    Sendrecv {
        send: Msg,
        recv: Msg,
    },
    /// `MPI_Wait*`/`MPI_Test*`: these requests completed (none: a test that
    /// found nothing done).
    Complete(Vec<Completion>),
    /// `MPI_Probe`: blocks until `msg` has arrived, does not receive it.
    Peek(Msg),
    /// `MPI_Iprobe`: a message was there (`Some`) or not.
    Poll(Option<Msg>),
    /// `MPI_Mprobe`, or `MPI_Improbe` that matched: `msg` is taken off
    /// the queue; `MPI_Mrecv`/`MPI_Imrecv` receives it.
    Probe(Msg),
    /// `MPI_Improbe` that matched nothing.
    NoMatch,
    /// `MPI_Mrecv` of a message matched by a probe.
    MatchedRecv {
        bytes: u64,
    },
    /// A blocking collective over `comm_size` ranks with `bytes` sent by
    /// this rank; `root` is the root rank (world) or -1.
    Collective {
        bytes: u64,
        comm_size: u32,
        root: i32,
    },
    /// A non-blocking collective, completed by a `Complete` with `req`.
    ICollective {
        bytes: u64,
        comm_size: u32,
        root: i32,
        req: u32,
    },
    /// `MPI_File_open` of the file that names variable `file`.
    FileOpen {
        file: u32,
        name: String,
    },
    FileClose {
        file: u32,
    },
    FileSeek {
        file: u32,
    },
    /// A blocking read (`at`: explicit offset; `collective`: `_all`).
    FileRead {
        file: u32,
        bytes: u64,
        at: bool,
        collective: bool,
    },
    FileWrite {
        file: u32,
        bytes: u64,
        at: bool,
        collective: bool,
    },
    /// `MPI_File_iread(_at)`. With `blocking` the recorder performed it as
    /// a blocking read (the prefetch trick of MHETA fig. 5): the event's
    /// duration is the read latency, and the time until the matching
    /// `Complete` is the overlapped computation T_A.
    FileIread {
        file: u32,
        bytes: u64,
        req: u32,
        blocking: bool,
    },
    FileIwrite {
        file: u32,
        bytes: u64,
        req: u32,
    },
    /// The stages that follow run on grid level `l` (multigrid).
    Level(u32),
    /// `MPI_{,B,S,R}send_init` (`send`) or `MPI_Recv_init`: a persistent
    /// request is set up; nothing moves until it is started. `msg` as
    /// given (a receive's peer may be `MPI_ANY_SOURCE`, negative).
    PersistentInit {
        send: bool,
        msg: Msg,
    },
    /// `MPI_Start(all)`: persistent requests begin, each as the `Isend` or
    /// `Irecv` it stands for, with a fresh request id.
    Start(Vec<Started>),
    /// `MPI_Request_free`.
    RequestFree,
    /// A blocking neighbourhood collective (`MPI_Neighbor_*`): a message
    /// to each destination and one from each source of the communicator's
    /// topology, in its order, all at once, as `Isend`s and `Irecv`s
    /// completed together (how Open MPI and MPICH run them). Tags are
    /// [`NEIGHBOR_TAG`]; a peer off a non-periodic edge is negative.
    Neighbor {
        sends: Vec<Msg>,
        recvs: Vec<Msg>,
    },
    /// A non-blocking neighbourhood collective (`MPI_Ineighbor_*`): as
    /// [`What::Neighbor`], its messages all begun here and completed by
    /// the `Complete` with `req`. MPI-4's `MPI_Isendrecv(_replace)` is
    /// recorded so too: one send and one receive, with their own tags (the
    /// receive as posted: its source may be `MPI_ANY_SOURCE`, negative,
    /// and its bytes are the most it may take).
    INeighbor {
        sends: Vec<Msg>,
        recvs: Vec<Msg>,
        req: u32,
    },
    /// An MPI-4 persistent collective is set up (`MPI_Bcast_init`, ...;
    /// the op says which): nothing moves until `MPI_Start` begins it, which
    /// records what it stands for (appended).
    PersistentCollectiveInit,
}

/// One persistent request begun by `MPI_Start(all)`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum Started {
    /// A send, as `What::Isend`.
    Send { msg: Msg, req: u32 },
    /// A receive, as `What::Irecv`; its message is in the `Complete`.
    Recv { req: u32 },
    /// A persistent collective (`MPI_Bcast_init`, ...: `op`), as
    /// `What::ICollective` (appended).
    Collective {
        op: Op,
        bytes: u64,
        comm_size: u32,
        root: i32,
        req: u32,
    },
    /// A persistent neighbourhood collective (`MPI_Neighbor_*_init`), as
    /// `What::INeighbor` (appended).
    Neighbor {
        sends: Vec<Msg>,
        recvs: Vec<Msg>,
        req: u32,
    },
}

/// One recorded call (or marker): times are ns from the iteration's start.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Event {
    pub op: Option<Op>,
    /// Recording thread: 0 is the thread that initialised MPI, others are
    /// numbered as they first call MPI during recording.
    pub thread: u16,
    pub t0_ns: u64,
    pub t1_ns: u64,
    pub what: What,
}

impl What {
    /// The largest peer (world rank) the event names, if any.
    pub fn peer(&self) -> Option<i32> {
        match self {
            What::Send(m) | What::Recv(m) | What::Probe(m) | What::Peek(m) => Some(m.peer),
            What::Poll(m) => m.map(|m| m.peer),
            What::Isend { msg, .. } => Some(msg.peer),
            What::Sendrecv { send, recv } => Some(send.peer.max(recv.peer)),
            What::Complete(c) => c.iter().filter_map(|c| c.recv.map(|m| m.peer)).max(),
            What::Collective { root, .. } | What::ICollective { root, .. } => Some(*root),
            What::PersistentInit { msg, .. } => Some(msg.peer),
            What::Neighbor { sends, recvs } | What::INeighbor { sends, recvs, .. } => {
                sends.iter().chain(recvs).map(|m| m.peer).max()
            }
            What::Start(v) => v
                .iter()
                .filter_map(|s| match s {
                    Started::Send { msg, .. } => Some(msg.peer),
                    Started::Recv { .. } => None,
                    Started::Collective { root, .. } => Some(*root),
                    Started::Neighbor { sends, recvs, .. } => {
                        sends.iter().chain(recvs).map(|m| m.peer).max()
                    }
                })
                .max(),
            _ => None,
        }
    }

    /// Apply `f` to every point-to-point peer the event names (not a
    /// collective's root): how a trace is moved to another rank.
    pub fn peers_mut(&mut self, mut f: impl FnMut(&mut i32)) {
        match self {
            What::Send(m) | What::Recv(m) | What::Probe(m) | What::Peek(m) => f(&mut m.peer),
            What::Poll(Some(m)) => f(&mut m.peer),
            What::Isend { msg, .. } | What::PersistentInit { msg, .. } => f(&mut msg.peer),
            What::Sendrecv { send, recv } => {
                f(&mut send.peer);
                f(&mut recv.peer)
            }
            What::Complete(c) => c
                .iter_mut()
                .filter_map(|c| c.recv.as_mut())
                .for_each(|m| f(&mut m.peer)),
            What::Start(v) => v.iter_mut().for_each(|s| match s {
                Started::Send { msg, .. } => f(&mut msg.peer),
                Started::Neighbor { sends, recvs, .. } => {
                    sends.iter_mut().chain(recvs).for_each(|m| f(&mut m.peer))
                }
                Started::Recv { .. } | Started::Collective { .. } => {}
            }),
            What::Neighbor { sends, recvs } | What::INeighbor { sends, recvs, .. } => {
                sends.iter_mut().chain(recvs).for_each(|m| f(&mut m.peer))
            }
            _ => {}
        }
    }

    /// Bytes this call moves (sent, received, read or written).
    pub fn bytes(&self) -> u64 {
        match self {
            What::Send(m) | What::Recv(m) | What::Probe(m) | What::Peek(m) => m.bytes,
            What::Isend { msg, .. } => msg.bytes,
            What::Sendrecv { send, recv } => send.bytes + recv.bytes,
            What::Neighbor { sends, recvs } | What::INeighbor { sends, recvs, .. } => sends
                .iter()
                .chain(recvs)
                .filter(|m| m.peer >= 0)
                .map(|m| m.bytes)
                .sum(),
            What::Complete(c) => c.iter().filter_map(|c| c.recv.map(|m| m.bytes)).sum(),
            What::MatchedRecv { bytes }
            | What::Collective { bytes, .. }
            | What::ICollective { bytes, .. }
            | What::FileRead { bytes, .. }
            | What::FileWrite { bytes, .. }
            | What::FileIread { bytes, .. }
            | What::FileIwrite { bytes, .. } => *bytes,
            What::Start(v) => v
                .iter()
                .map(|s| match s {
                    Started::Send { msg, .. } => msg.bytes,
                    Started::Recv { .. } => 0,
                    Started::Collective { bytes, .. } => *bytes,
                    Started::Neighbor { sends, recvs, .. } => sends
                        .iter()
                        .chain(recvs)
                        .filter(|m| m.peer >= 0)
                        .map(|m| m.bytes)
                        .sum(),
                })
                .sum(),
            _ => 0,
        }
    }
}

/// A peer for people: a world rank, or a negative value (none, e.g.
/// `MPI_PROC_NULL` or no root) as "-".
fn peer(p: i32) -> String {
    if p >= 0 { p.to_string() } else { "-".into() }
}

impl std::fmt::Display for Msg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "rank {} tag {} {} B",
            peer(self.peer),
            self.tag,
            self.bytes
        )
    }
}

/// `completes request R (from M), ...` of a completion event.
fn fmt_completions(f: &mut std::fmt::Formatter<'_>, c: &[Completion]) -> std::fmt::Result {
    let parts: Vec<String> = c
        .iter()
        .map(|c| match c.recv {
            Some(m) => format!("request {} (from {m})", c.req),
            None => format!("request {}", c.req),
        })
        .collect();
    write!(f, "completes {}", parts.join(", "))
}

/// `B B over P ranks[, root R]` of a (non-blocking) collective.
fn fmt_collective(
    f: &mut std::fmt::Formatter<'_>,
    bytes: u64,
    comm_size: u32,
    root: i32,
) -> std::fmt::Result {
    write!(f, "{bytes} B over {comm_size} ranks")?;
    if root >= 0 {
        write!(f, ", root {root}")?;
    }
    Ok(())
}

/// `variable F, B B[, explicit offset][, collective]` of a file read or
/// write.
fn fmt_file_io(
    f: &mut std::fmt::Formatter<'_>,
    file: u32,
    bytes: u64,
    at: bool,
    collective: bool,
) -> std::fmt::Result {
    write!(f, "variable {file}, {bytes} B")?;
    if at {
        write!(f, ", explicit offset")?;
    }
    if collective {
        write!(f, ", collective")?;
    }
    Ok(())
}

/// `starts send to M, request R; receive, request R` of `MPI_Start(all)`.
fn fmt_starts(f: &mut std::fmt::Formatter<'_>, v: &[Started]) -> std::fmt::Result {
    let parts: Vec<String> = v
        .iter()
        .map(|s| match s {
            Started::Send { msg, req } => format!("send to {msg}, request {req}"),
            Started::Recv { req } => format!("receive, request {req}"),
            Started::Collective {
                op,
                bytes,
                comm_size,
                root,
                req,
            } => {
                let root = if *root >= 0 {
                    format!(", root {root}")
                } else {
                    String::new()
                };
                let op = op.name();
                format!("{op} of {bytes} B over {comm_size} ranks{root}, request {req}")
            }
            Started::Neighbor { sends, recvs, req } => format!(
                "neighbour exchange to {}; from {}, request {req}",
                msg_list(sends),
                msg_list(recvs)
            ),
        })
        .collect();
    write!(f, "starts {}", parts.join("; "))
}

/// `to M, M; from M, M` of a neighbourhood collective.
fn fmt_neighbours(
    f: &mut std::fmt::Formatter<'_>,
    sends: &[Msg],
    recvs: &[Msg],
) -> std::fmt::Result {
    write!(f, "to {}; from {}", msg_list(sends), msg_list(recvs))
}

/// `M, M, M`.
fn msg_list(v: &[Msg]) -> String {
    v.iter()
        .map(|m| m.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// One line of `mheta show`: what the event did, in words.
impl std::fmt::Display for What {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            What::StageBegin => write!(f, "stage begins"),
            What::StageEnd => write!(f, "stage ends"),
            What::Send(m) => write!(f, "to {m}"),
            What::Isend { msg, req } => write!(f, "to {msg}, request {req}"),
            What::Recv(m) => write!(f, "from {m}"),
            What::Irecv { req } => write!(f, "request {req}"),
            What::Sendrecv { send, recv } => write!(f, "to {send}; from {recv}"),
            What::Complete(c) if c.is_empty() => write!(f, "nothing completed"),
            What::Complete(c) => fmt_completions(f, c),
            What::Peek(m) => write!(f, "a message waits from {m}"),
            What::Poll(Some(m)) => write!(f, "found from {m}"),
            What::Poll(None) => write!(f, "found nothing"),
            What::Probe(m) => write!(f, "matched from {m}"),
            What::NoMatch => write!(f, "no message"),
            What::MatchedRecv { bytes } => write!(f, "{bytes} B"),
            What::Collective {
                bytes,
                comm_size,
                root,
            } => fmt_collective(f, *bytes, *comm_size, *root),
            What::ICollective {
                bytes,
                comm_size,
                root,
                req,
            } => {
                fmt_collective(f, *bytes, *comm_size, *root)?;
                write!(f, ", request {req}")
            }
            What::FileOpen { file, name } => write!(f, "variable {file} = {name}"),
            What::FileClose { file } => write!(f, "variable {file}"),
            What::FileSeek { file } => write!(f, "variable {file}"),
            What::FileRead {
                file,
                bytes,
                at,
                collective,
            }
            | What::FileWrite {
                file,
                bytes,
                at,
                collective,
            } => fmt_file_io(f, *file, *bytes, *at, *collective),
            What::FileIread {
                file,
                bytes,
                req,
                blocking,
            } => write!(
                f,
                "variable {file}, {bytes} B, request {req}{}",
                if *blocking { ", blocking read" } else { "" }
            ),
            What::FileIwrite { file, bytes, req } => {
                write!(f, "variable {file}, {bytes} B, request {req}")
            }
            What::Level(l) => write!(f, "multigrid level {l}"),
            What::PersistentInit { send: true, msg } => write!(f, "persistent send to {msg}"),
            What::PersistentInit { send: false, msg } => {
                write!(f, "persistent receive from {msg}")
            }
            What::Start(v) => fmt_starts(f, v),
            What::RequestFree => write!(f, "request freed"),
            What::PersistentCollectiveInit => write!(f, "persistent collective set up"),
            What::Neighbor { sends, recvs } => fmt_neighbours(f, sends, recvs),
            What::INeighbor { sends, recvs, req } => {
                fmt_neighbours(f, sends, recvs)?;
                write!(f, ", request {req}")
            }
        }
    }
}
