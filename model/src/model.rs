//! The MHETA execution model (MHETA paper, section 4.2): predicts the time of
//! one iteration under any GEN_BLOCK distribution from one instrumented
//! iteration ([`mheta_trace`]) and the cluster profile ([`mheta_profile`]).
//!
//! Each rank's recorded iteration becomes a [`Program`]: compute gaps
//! (scaled by W'/W inside stages) and its communication steps. The model
//! replays all programs together, in time order, with the profile's costs:
//! a message posted at sender time `t` arrives at `t + o_s + L + b*G`
//! (MHETA eq. 3), the sender pays `o_s`, and the receiver waits until the
//! arrival then pays `o_r` (eq. 5). A rank that slept between tests while
//! it waited (the apps' `--wait sleep`) notices a message that came after
//! its spin only at its next test, on average the mean residual of its
//! recorded sleeps later ([`Program::wake_s`]; at 4 ranks on 2 cores each
//! such wait cost mg ~100 us, and it has ~100 a V-cycle, where the
//! profile's figures give a few us). A send above the pair's eager limit
//! completes only once its receiver has taken the message and the
//! acknowledgement is back ([`SendMode`], [`Step::WaitSends`]); a sender
//! that waits for that pays its own wake-up too, and, when its receiver
//! was already waiting, the rank's handshake latency as the recorded
//! iteration measured it
//! ([`Model::calibrate_collectives`]). An all-reduce's ranks leave it as
//! its algorithm's messages over each pair's costs say (`collective.rs`),
//! plus what the recorded iteration spent there beyond them; every other
//! collective synchronises all ranks and costs what it cost in the
//! recorded iteration past the last rank's arrival, never less than the
//! profile's pairwise figures give ([`Model::calibrate_collectives`]).
//! For two ranks and one exchange this is exactly eqs. 3-5; for P ranks
//! it is the replay the paper defers to the dissertation.

mod collective;
mod program;
mod replay;

pub use collective::Shape;

use crate::dist::Dist;
use crate::iomodel::{IoModel, IoObs};
use mheta_profile::ClusterProfile;
use mheta_trace::{AppDecl, MsgScaling, RankTrace, Topology};
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

/// FxHash (rustc's): the replay's message map is keyed by small integers,
/// where SipHash would dominate an evaluation.
#[derive(Default, Clone, Copy)]
struct Fx(u64);

impl Hasher for Fx {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
    fn write_i32(&mut self, x: i32) {
        self.write_u64(x as u32 as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;

/// Messages in flight during one evaluation, by (src, dst, tag): the
/// arrival time and, for a send that completes only once the receiver has
/// taken the message, its number among the sender's sends (else
/// [`NO_ACK`]).
type Inflight = FastMap<(usize, usize, i32), VecDeque<(f64, u32)>>;
const NO_ACK: u32 = u32::MAX;

/// Per rank, the completion time of each send so far, in the order they
/// were posted (NaN: not yet taken by its receiver), and the time each was
/// posted.
#[derive(Default)]
struct Sends {
    done: Vec<Vec<f64>>,
    posted: Vec<Vec<f64>>,
    /// Whether the send's receiver was already waiting when the message
    /// reached it (a handshake with a waiting receiver, see
    /// [`Model::calibrate_collectives`]).
    met_waiting: Vec<Vec<bool>>,
}

thread_local! {
    /// [`Model::predict`]'s message map and send table, kept between
    /// evaluations.
    static INFLIGHT: std::cell::RefCell<(Inflight, Sends)> = std::cell::RefCell::new(Default::default());
}

/// A model input that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ModelError {
    #[error(
        "trace has {trace} ranks but the profile measured {profile}; run `mheta bench --np {trace}`"
    )]
    RankMismatch { trace: usize, profile: usize },
    #[error("app.json declares {decl} ranks in its dist but the trace has {trace}")]
    DeclMismatch { decl: usize, trace: usize },
    #[error(
        "rank {rank} had no rows in the instrumented iteration, so its per-row cost is unknown; instrument with every rank owning rows"
    )]
    NoRowsInTrace { rank: usize },
    #[error(
        "the recorded messages do not match up (rank {rank} waits forever at step {step}); traces from different runs?"
    )]
    Deadlock { rank: usize, step: usize },
    #[error(
        "rank {rank} cannot hold even one row of its on-disk arrays with {rows} rows (its memory budget is too small)"
    )]
    TooSmall { rank: usize, rows: u64 },
    #[error(transparent)]
    Dist(#[from] crate::dist::DistError),
}

/// A message endpoint in a program.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Peer {
    pub rank: usize,
    pub tag: i32,
    pub bytes: f64,
}

/// When a send completes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SendMode {
    /// `MPI_Send`, `MPI_Isend`, `MPI_Rsend`: at once when the message fits
    /// the pair's eager limit ([`mheta_profile::PairCost::eager_limit_bytes`]),
    /// else once the receiver has taken it.
    Standard,
    /// `MPI_Bsend`, `MPI_Ibsend`: at once, into the user's buffer.
    Buffered,
    /// `MPI_Ssend`, `MPI_Issend`: once the receiver has taken it.
    Synchronous,
}

/// One step of a rank's iteration.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Computation: `scaled` gaps lie inside a stage and scale with the
    /// rank's work on grid `level` (MHETA: T_Φ' = T_Φ · W'/W).
    Compute { s: f64, scaled: bool, level: u32 },
    /// The end of the iteration's `k`-th stage: its I/O (MHETA eqs. 1-2)
    /// under the predicted distribution is paid here.
    StageEnd(u32),
    /// Blocking or non-blocking send: costs `o_s`, the message is on its
    /// way. The sends of a program are numbered in order from 0 for
    /// [`Step::WaitSends`].
    Send(Peer, SendMode),
    /// Blocking receive.
    Recv(Peer),
    /// Completion of non-blocking receives.
    WaitRecvs(Vec<Peer>),
    /// Completion of sends, by their number: an eager send completed when
    /// it was posted; a larger one when its receiver has taken it
    /// ([`SendMode`]). A blocking send is a send and its completion.
    WaitSends(Vec<u32>),
    /// A matched probe: wait for the message and take it; the receive
    /// comes later.
    Probe(Peer),
    /// A plain probe: wait for the message, leave it for a receive.
    Peek(Peer),
    /// The receive of a probed message: costs `o_r`.
    MatchedRecv,
    /// A collective over all ranks of `bytes` per rank. `took`: the
    /// seconds this rank waited in it as recorded (a blocking one's call;
    /// for a non-blocking one, the tests and waits and the gaps after
    /// tests that found nothing done, from its start to its completion;
    /// over several recorded iterations, their median). [`Model::new`]
    /// prices each collective from these ([`Model::calibrate_collectives`]);
    /// `shape`, its messages' pattern.
    Reduce { bytes: f64, took: f64, shape: Shape },
}

/// What the calibrating replay of the recorded distribution measures
/// ([`Model::calibrate_collectives`]).
#[derive(Default)]
pub(crate) struct Calib {
    /// Each full-world collective's cost, in order.
    collectives: Vec<f64>,
    /// Per rank: recorded minus replayed time of each send completion
    /// whose receiver was already waiting (clamped).
    handshakes: Vec<Vec<f64>>,
    /// Per rank: send completions replayed so far (the index into its
    /// `send_waits_s`).
    send_waits_seen: Vec<usize>,
}

/// A rank's instrumented iteration as model input.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub steps: Vec<Step>,
    /// Sum of the scaled compute, seconds.
    pub scaled_s: f64,
    /// Sum of the unscaled compute, seconds.
    pub unscaled_s: f64,
    /// Measured iteration time of this rank, seconds.
    pub measured_s: f64,
    /// File calls of all recorded iterations (not part of the steps).
    pub io: Vec<IoObs>,
    /// How long the rank slept between tests while it waited: the 90th
    /// percentile of the gaps after tests that found nothing done (0 when
    /// it never polled: blocking waits). Bounds how late after a
    /// collective's last arrival a rank can notice its end
    /// ([`Model::calibrate_collectives`]).
    pub sleep_s: f64,
    /// How long a wait polls back to back before the rank starts to sleep
    /// between tests: the median, over the waits that slept, of the time
    /// from the first test that found nothing done to the first gap of
    /// over 10 us (0 when it never slept).
    pub spin_s: f64,
    /// How late a sleeping rank notices a message on average: the mean
    /// residual of its sleeps, E[G^2] / (2 E[G]) over the gaps G of over
    /// 10 us after tests that found nothing done, up to [`DESCHEDULED`]
    /// times their median (0 when it never slept).
    pub wake_s: f64,
    /// Seconds of file calls in each stage of the recorded iteration (by
    /// stage ordinal; the median over iterations of the same shape): what
    /// [`Model::calibrate_collectives`] replays in place of the I/O model.
    pub stage_io_s: Vec<f64>,
    /// Each full-world collective's time in it (`took`), in step order,
    /// one value per recorded iteration (iterations of the same shape;
    /// otherwise the program's own one): the per-iteration figures that
    /// [`Model::calibrate_collectives`] finds each iteration's last
    /// arriver with.
    pub reduce_tooks: Vec<Vec<f64>>,
    /// Seconds each send completion ([`Step::WaitSends`], in step order)
    /// took in the recorded iteration, from the first test that found it
    /// not done (NaN where not known: a blocking send or sendrecv; over
    /// several recorded iterations, their median): what
    /// [`Model::calibrate_collectives`] learns the rank's handshake
    /// latency from.
    pub send_waits_s: Vec<f64>,
}

/// A send completion whose receiver was already waiting, and that the
/// calibrating replay of the recorded distribution has waiting less than
/// this many of the rank's sleeps ([`Program::sleep_s`]), is a handshake;
/// its recorded excess over the replay, at most as many sleeps, is one
/// sample of the rank's handshake latency ([`Model::calibrate_collectives`]).
const HANDSHAKE_SLEEPS: f64 = 4.0;

/// From a recording with file I/O a rank's handshake latency is learned
/// only from at least this many samples ([`handshake_latency`]).
const HANDSHAKE_MIN_SAMPLES_WITH_IO: usize = 8;

/// A rank's handshake latency from its samples ([`Calib::handshakes`]):
/// their mean (one slow wake-up in ten is part of what a handshake costs
/// on average, which a median would drop), 0 without samples. From a
/// recording with file I/O it takes at least
/// [`HANDSHAKE_MIN_SAMPLES_WITH_IO`]: there a handshake may meet a core
/// busy with another rank's file calls, and one or two of them (jacobi's
/// and sor's halo sends) say more about those calls than about the rank.
fn handshake_latency(samples: &[f64], with_io: bool) -> f64 {
    if samples.is_empty() || (with_io && samples.len() < HANDSHAKE_MIN_SAMPLES_WITH_IO) {
        0.0
    } else {
        samples.iter().sum::<f64>() / samples.len() as f64
    }
}

/// A gap after a failed test longer than this is a sleep, not a spin.
const SLEPT_NS: u64 = 10_000;
/// A sleep gap longer than this many times the median sleep gap is a
/// rank that lost its core, left out of [`Program::wake_s`].
const DESCHEDULED: f64 = 3.0;

impl Program {
    /// Does the iteration end at a collective over all ranks, with only
    /// the rank's own computation after it? Then the next iteration
    /// starts together on every rank ([`Model::laps`]).
    fn ends_at_a_collective(&self) -> bool {
        let last = self
            .steps
            .iter()
            .rposition(|s| matches!(s, Step::Reduce { .. }));
        last.is_some_and(|k| {
            self.steps[k..].iter().all(|s| {
                matches!(
                    s,
                    Step::Reduce { .. } | Step::Compute { .. } | Step::StageEnd(_)
                )
            })
        })
    }

    /// Does the rank take part in a collective whose ranks leave it at
    /// different times (an all-reduce, `collective.rs`)? Then the next
    /// iteration does not start together even after one ([`Model::laps`]).
    fn leaves_collectives_apart(&self) -> bool {
        self.steps
            .iter()
            .any(|s| matches!(s, Step::Reduce { shape, .. } if *shape != Shape::Together))
    }

    /// How long the rank waits for something that happens `ahead` seconds
    /// from now: nothing if it is past; else until then and, when the rank
    /// sleeps between tests and the wait outlasts its spin, on average the
    /// residual of a sleep more ([`Program::wake_s`]): it notices only at
    /// its next test.
    fn waited(&self, ahead: f64) -> f64 {
        let wait = ahead.max(0.0);
        if self.wake_s > 0.0 && wait > self.spin_s {
            wait + self.wake_s
        } else {
            wait
        }
    }
}

/// How a recorded send call completes.
fn send_mode(op: Option<mheta_trace::Op>) -> SendMode {
    use mheta_trace::Op;
    match op {
        Some(Op::Bsend | Op::Ibsend) => SendMode::Buffered,
        Some(Op::Ssend | Op::Issend) => SendMode::Synchronous,
        _ => SendMode::Standard,
    }
}

fn median(v: &mut [f64]) -> f64 {
    mheta_base::median(v).unwrap_or(0.0)
}

/// Same steps in the same order, compute durations aside.
fn same_shape(a: &[Step], b: &[Step]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (x, y) {
            (
                Step::Compute {
                    scaled: p,
                    level: a,
                    ..
                },
                Step::Compute {
                    scaled: q,
                    level: b,
                    ..
                },
            ) => p == q && a == b,
            (Step::Reduce { bytes: p, .. }, Step::Reduce { bytes: q, .. }) => p == q,
            _ => x == y,
        })
}

/// Per-rank result of one predicted iteration.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct RankTime {
    /// Finish time of the rank's iteration.
    pub total_s: f64,
    /// Computation and I/O, T_τ.
    pub compute_s: f64,
    /// Of which I/O, Σ T_ψ(m).
    pub io_s: f64,
    /// Send and receive overheads.
    pub overhead_s: f64,
    /// Time blocked waiting for messages or for a reduction.
    pub wait_s: f64,
}

/// A predicted iteration.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Prediction {
    /// Iteration time: the last rank to finish.
    pub per_iteration_s: f64,
    pub ranks: Vec<RankTime>,
}

/// Costs of point-to-point messages, from the profile, as flat arrays.
#[derive(Clone, Debug)]
pub(crate) struct Net {
    p: usize,
    /// What the replay reads of each pair, by `k(src, dst)`.
    wires: Vec<Wire>,
    /// The pairs' piecewise one-way fits, one run of segments per pair.
    segs: Vec<mheta_profile::Segment>,
    /// Mean costs, for reductions.
    pub(crate) mean: [f64; 4],
    /// Each rank's host (an index; one host when the profile does not
    /// name them): ranks of one host do not share a link.
    pub(crate) host: Vec<usize>,
    /// Per rank, its host's link out and in: the pair to another host
    /// that carries a mebibyte soonest and the seconds a byte adds to its
    /// large messages (the slope of its fit past a mebibyte), which a
    /// [`Shape::Linear`] collective's blocks share; None: no such pair.
    pub(crate) link_out: Vec<Option<HostLink>>,
    pub(crate) link_in: Vec<Option<HostLink>>,
    /// Per rank, seconds per byte of a copy within its memory
    /// ([`Net::find_copy_costs`]).
    pub(crate) copy_per_byte: Vec<f64>,
}

/// A host's link as [`Net::link_out`] and [`Net::link_in`] hold it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HostLink {
    /// The pair that shows the link's rate (its load slowdown applies).
    pub(crate) pair: usize,
    /// Seconds a byte takes on the link.
    pub(crate) per_byte_s: f64,
}

/// One pair's costs, in one record of a few words: the replay reads a
/// pair at every message, and at P = 1024 the profile's own records
/// (~0.5 KB each, with their samples) made that a cache miss per field
/// and the P x P table half a gigabyte.
#[derive(Clone, Copy, Debug)]
struct Wire {
    measured: bool,
    o_send: f64,
    o_recv: f64,
    latency: f64,
    per_byte: f64,
    /// Eager limit, bytes (`u64::MAX`: not measured, every send eager).
    eager: u64,
    /// The pair's segments in [`Net::segs`]: first, count (0: the linear
    /// fit).
    seg: (u32, u32),
}

impl Wire {
    const NONE: Wire = Wire {
        measured: false,
        o_send: 0.0,
        o_recv: 0.0,
        latency: 0.0,
        per_byte: 0.0,
        eager: u64::MAX,
        seg: (0, 0),
    };
}

impl Net {
    fn from_profile(prof: &ClusterProfile) -> Net {
        let p = prof.np as usize;
        let mut net = Net {
            p,
            wires: vec![Wire::NONE; p * p],
            segs: Vec::new(),
            mean: [0.0; 4],
            host: vec![0; p],
            link_out: vec![None; p],
            link_in: vec![None; p],
            copy_per_byte: Vec::new(),
        };
        for c in &prof.pairs {
            let k = c.src as usize * p + c.dst as usize;
            net.wires[k] = Wire {
                measured: true,
                o_send: c.o_send_s,
                o_recv: c.o_recv_s,
                latency: c.latency_s,
                per_byte: c.per_byte_s,
                eager: c.eager_limit_bytes.unwrap_or(u64::MAX),
                seg: (net.segs.len() as u32, c.segments.len() as u32),
            };
            net.segs.extend(c.segments.iter().cloned());
        }
        let n = prof.pairs.len().max(1) as f64;
        for c in &prof.pairs {
            net.mean[0] += c.o_send_s / n;
            net.mean[1] += c.o_recv_s / n;
            net.mean[2] += c.latency_s / n;
            net.mean[3] += c.per_byte_s / n;
        }
        if prof.hosts.len() == p {
            let mut names: Vec<&str> = Vec::new();
            for (r, h) in prof.hosts.iter().enumerate() {
                net.host[r] = names.iter().position(|n| n == h).unwrap_or_else(|| {
                    names.push(h);
                    names.len() - 1
                });
            }
        }
        net.find_host_links();
        net.find_copy_costs();
        net
    }

    /// [`Net::link_out`] and [`Net::link_in`] of every rank.
    fn find_host_links(&mut self) {
        let p = self.p;
        let mib = (1u64 << 20) as f64;
        let (mut out_t, mut in_t) = (vec![f64::INFINITY; p], vec![f64::INFINITY; p]);
        let (mut best_out, mut best_in) = (vec![None; p], vec![None; p]);
        for k in 0..p * p {
            let (s, d) = (k / p, k % p);
            if self.host[d] == self.host[s] || !self.wires[k].measured {
                continue;
            }
            let t = self.transfer(k, mib);
            if t < out_t[s] {
                (out_t[s], best_out[s]) = (t, Some(k));
            }
            if t < in_t[d] {
                (in_t[d], best_in[d]) = (t, Some(k));
            }
        }
        let link = |k: Option<usize>| {
            k.map(|k| HostLink {
                pair: k,
                per_byte_s: (self.transfer(k, 2.0 * mib) - self.transfer(k, mib)) / mib,
            })
        };
        let (link_out, link_in) = (
            best_out.into_iter().map(link).collect(),
            best_in.into_iter().map(link).collect(),
        );
        (self.link_out, self.link_in) = (link_out, link_in);
    }

    /// Time on the wire from `k`'s sender to its receiver (eq. 3's
    /// T_{i->j}(q)), from the pair's piecewise one-way fit.
    /// ([`mheta_profile::PairCost::transfer_s`], the same arithmetic.)
    pub(crate) fn transfer(&self, k: usize, bytes: f64) -> f64 {
        let w = &self.wires[k];
        if !w.measured {
            return 0.0;
        }
        let (first, n) = (w.seg.0 as usize, w.seg.1 as usize);
        let one_way = if n == 0 {
            w.o_send + w.latency + w.o_recv + w.per_byte * bytes
        } else {
            let segs = &self.segs[first..first + n];
            let s = segs
                .iter()
                .find(|s| bytes <= s.to_bytes as f64)
                .unwrap_or(&segs[n - 1]);
            s.base_s + s.per_byte_s * (bytes - s.from_bytes as f64).max(0.0)
        };
        (one_way - w.o_send - w.o_recv).max(0.0)
    }

    fn o_send(&self, k: usize) -> f64 {
        self.wires[k].o_send
    }

    fn o_recv(&self, k: usize) -> f64 {
        self.wires[k].o_recv
    }

    fn eager(&self, k: usize) -> u64 {
        self.wires[k].eager
    }

    /// Wire latency of `k`'s pair: what the receiver's acknowledgement
    /// of a rendezvous message takes back to its sender.
    fn latency(&self, k: usize) -> f64 {
        self.wires[k].latency
    }

    pub(crate) fn k(&self, src: usize, dst: usize) -> usize {
        src * self.p + dst
    }

    /// [`Net::copy_per_byte`] of every rank: the fastest measured pair of
    /// its host (a shared-memory transfer is a copy), else of any host,
    /// else the fastest pair at all, an upper bound where every host
    /// carries one rank (the profile measures no copy of its own); the
    /// mean per byte when no pair was measured.
    fn find_copy_costs(&mut self) {
        let hosts = self.host.iter().max().map_or(1, |h| h + 1);
        let mut on_host = vec![f64::INFINITY; hosts];
        let mut any = f64::INFINITY;
        for k in (0..self.p * self.p).filter(|&k| self.wires[k].measured) {
            let (a, b, g) = (k / self.p, k % self.p, self.wires[k].per_byte);
            if a == b {
                continue;
            }
            any = any.min(g);
            if self.host[a] == self.host[b] {
                on_host[self.host[a]] = on_host[self.host[a]].min(g);
            }
        }
        let some_host = on_host.iter().copied().fold(f64::INFINITY, f64::min);
        self.copy_per_byte = self
            .host
            .iter()
            .map(|&h| {
                [on_host[h], some_host, any, self.mean[3]]
                    .into_iter()
                    .find(|v| v.is_finite())
                    .unwrap_or(0.0)
            })
            .collect();
    }

    /// Cost of a reduction of `bytes` over `p` ranks: recursive doubling,
    /// ceil(log2 p) rounds of one exchange each.
    fn reduce(&self, bytes: f64) -> f64 {
        let rounds = (self.p as f64).log2().ceil();
        let [os, or, l, g] = self.mean;
        rounds * (os + l + bytes * g + or)
    }
}

/// The model of one application on one cluster: programs, declaration,
/// network costs. Cheap to evaluate many times.
#[derive(Clone, Debug)]
pub struct Model {
    pub programs: Vec<Program>,
    pub app: AppDecl,
    pub(crate) net: Net,
    /// Out-of-core arrays (None: everything always in core).
    pub io: Option<IoModel>,
    /// Work prefix sums (`work_per_row`), for sparse rows.
    pub(crate) work_prefix: Option<Vec<u64>>,
    /// Grid levels (1 unless multigrid).
    levels: u32,
    /// First row of each rank in the recorded distribution.
    inst_offsets: Vec<u64>,
    /// Seconds per row each rank took to build its arrays when the run
    /// started (the app's own measurement, passed in by the in-run
    /// planner): what rebuilding them costs in a move through disk
    /// ([`Model::move_cost`]). None: estimated from the disk lines.
    pub rebuild_s_per_row: Option<Vec<f64>>,
    /// Rows of each rank on each coarser level (1..levels) under the
    /// recorded distribution.
    inst_coarse: Vec<Dist>,
    /// The cost of each full-world collective of the iteration, in order,
    /// measured from the trace ([`Model::calibrate_collectives`]).
    collective_s: Vec<f64>,
    /// Per rank: how much longer than the replay a send completion took
    /// in the recorded iteration when its receiver was already waiting
    /// ([`Model::calibrate_collectives`]); added to every such
    /// completion.
    handshake_s: Vec<f64>,
    /// Per full-world collective, in order: the median over the recorded
    /// iterations of the shortest time a rank spent in it that iteration
    /// (that iteration's last arriver's). Empty when the ranks recorded
    /// different collectives or iteration counts.
    last_arrival_s: Vec<f64>,
    /// Replay two iterations back to back and price the second
    /// ([`Model::laps`]); false when every rank's iteration ends at a
    /// collective over all ranks, after which only its own computation
    /// follows.
    overlapping: bool,
    /// Per rank, the mean CPU slowdown its computation and message
    /// overheads run under (Figueira and Berman eqs. 1-2; empty: dedicated).
    cpu_slow: Vec<f64>,
    /// Per pair `k(src, dst)`, the mean communication slowdown of its
    /// transfers (Figueira and Berman eq. 3; empty: dedicated).
    net_slow: Vec<f64>,
    /// The stochastic slowdowns the model was given ([`Model::with_load`]).
    pub load: Option<crate::slowdown::Slowdowns>,
}

/// [`Model::last_arrival_s`]: for each full-world collective, the median
/// over the recorded iterations of the least time any rank spent in it
/// that iteration. The rank that arrived last waited for no one, so its
/// time there is the collective's own; which rank that is can change from
/// iteration to iteration (jacobi on HY1: the two out-of-core ranks took
/// turns, one waiting 6.9 ms for the other), which the median iteration
/// of each rank, replayed, does not show.
fn last_arrivals(programs: &[Program]) -> Vec<f64> {
    let Some(first) = programs.first() else {
        return Vec::new();
    };
    let (colls, iters) = (
        first.reduce_tooks.len(),
        first.reduce_tooks.first().map_or(0, Vec::len),
    );
    let aligned = programs
        .iter()
        .all(|p| p.reduce_tooks.len() == colls && p.reduce_tooks.iter().all(|t| t.len() == iters));
    if !aligned || iters == 0 {
        return Vec::new();
    }
    (0..colls)
        .map(|k| {
            let mut v: Vec<f64> = (0..iters)
                .map(|it| {
                    programs
                        .iter()
                        .map(|p| p.reduce_tooks[k][it])
                        .fold(f64::INFINITY, f64::min)
                })
                .collect();
            median(&mut v)
        })
        .collect()
}

impl Model {
    /// Build from traces (rank order), the app declaration and a profile.
    pub fn new(
        traces: &[RankTrace],
        app: AppDecl,
        prof: &ClusterProfile,
    ) -> Result<Model, ModelError> {
        let p = traces.len();
        if prof.np as usize != p {
            return Err(ModelError::RankMismatch {
                trace: p,
                profile: prof.np as usize,
            });
        }
        if app.dist.len() != p {
            return Err(ModelError::DeclMismatch {
                decl: app.dist.len(),
                trace: p,
            });
        }
        if let Some(rank) = app.dist.iter().position(|&s| s == 0) {
            return Err(ModelError::NoRowsInTrace { rank });
        }
        let programs: Vec<Program> = traces.iter().map(Program::from_trace).collect();
        let files: Vec<Vec<String>> = traces.iter().map(|t| t.files.clone()).collect();
        let obs: Vec<Vec<IoObs>> = programs.iter().map(|p| p.io.clone()).collect();
        let io = IoModel::new(&app, &files, &obs, prof);
        let work_prefix = app.work_per_row.as_deref().map(crate::dist::prefix_sums);
        let levels = app.levels.unwrap_or(1).max(1);
        let inst_offsets = Dist(app.dist.clone()).offsets();
        let inst_coarse: Vec<Dist> = (1..levels)
            .scan(Dist(app.dist.clone()), |d, _| {
                *d = d.coarse_level();
                Some(d.clone())
            })
            .collect();
        let mut model = Model {
            inst_offsets,
            rebuild_s_per_row: None,
            inst_coarse,
            programs,
            app,
            net: Net::from_profile(prof),
            io,
            work_prefix,
            levels,
            collective_s: Vec::new(),
            handshake_s: Vec::new(),
            last_arrival_s: Vec::new(),
            overlapping: false,
            cpu_slow: Vec::new(),
            net_slow: Vec::new(),
            load: None,
        };
        model.last_arrival_s = last_arrivals(&model.programs);
        model.overlapping = !model.programs.iter().all(Program::ends_at_a_collective)
            || model.programs.iter().any(Program::leaves_collectives_apart);
        model.calibrate_collectives();
        Ok(model)
    }

    /// Price each collective from what it cost in the recorded iteration.
    ///
    /// The profile's pairwise figures price a collective whose ranks all
    /// sit inside MPI, progressing it. A real program's collective also
    /// costs its algorithm's rounds and, when its ranks wait by sleeping on
    /// an oversubscribed node (the apps' `--wait sleep`), the wake-ups each
    /// round waits for: cg at 4 ranks on 2 cores spends ~0.25 ms in an
    /// 8-byte allreduce after the last rank has reached it, against 4 us
    /// from the pairwise figures. Each rank recorded how long it was inside
    /// the collective (`took`); replaying the recorded distribution gives
    /// how long it waited there for the last rank to arrive. What remains
    /// is the time from the last arrival to the rank's leaving; the
    /// collective's cost is its mean over the ranks, and never less than
    /// the pairwise figures give. A rank's part is bounded by the last
    /// arriver's time there (the replay's, or the median over the recorded
    /// iterations of each one's last arriver, [`Model::last_arrival_s`],
    /// whichever is less: jacobi on HY1 at 4 ranks, whose out-of-core ranks
    /// took turns arriving last, goes from 5.2% to 2.3% mean diff with
    /// it) plus 4 of the rank's sleeps ([`Program::sleep_s`])
    /// per round (⌈log₂P⌉ rounds): past that, the replay put the last
    /// arrival too early (the I/O model missed by 1% of a 1 s iteration,
    /// say), and charging that to the collective would add it to every
    /// in-core prediction. (The bound was chosen from 1, 2 and 4 sleeps a
    /// round on the 4-rank study's traces: tighter ones lost cg's and
    /// lanczos's wake-ups, none let jacobi `--prefetch` charge 7-12 ms of
    /// I/O to its allreduce.) The calibrating replay takes each stage's
    /// synchronous I/O as recorded, not from the I/O model: the model's fit
    /// leaves out a disturbed call, and the time that call took in the
    /// recorded run would otherwise be charged to the collective (jacobi
    /// on HY1 at 4 ranks: 6.8 ms more per allreduce once the fit took each
    /// size's median, and every in-core point over-predicted by as much).
    /// Without a clock common to the ranks this
    /// is the one way to separate a collective's own time from the load
    /// imbalance before it.
    ///
    /// The same replay prices each rank's handshakes. A send above the
    /// eager limit whose receiver was already waiting completes, in the
    /// replay, after the transfer, the receiver's wake residual, the
    /// acknowledgement and the sender's own wait; on a recorded node with
    /// more ranks than cores it took longer (mg at 4 ranks on 2 cores on
    /// DC: each halo phase of the slowest rank took 0.25-0.5
    /// ms, and its V-cycle spent 33-39 ms outside its stages against 18
    /// replayed). Over those send completions that the replay has waiting
    /// less than [`HANDSHAKE_SLEEPS`] of the rank's sleeps, the mean of
    /// recorded minus replayed time (each clamped to 0 and that many
    /// sleeps) is the rank's handshake latency ([`handshake_latency`]),
    /// added to every send completion whose receiver was already waiting.
    /// Which sends met a waiting receiver is the replay's verdict, not the
    /// sender's wait: a send posted before the sender's own receive often
    /// has its acknowledgement in the replay by the time the sender asks,
    /// while the recorded one was still waking its receiver (mg's slowest
    /// rank on DC: 210 send completions, 82 of them not waiting at all in
    /// the replay, 24 ms recorded against 13 replayed). From a recording
    /// with file I/O a rank needs [`HANDSHAKE_MIN_SAMPLES_WITH_IO`]
    /// samples. On four stored 4-rank clock studies (`scripts/repredict.py`)
    /// this rule gives sums of the cells' means of 34.0 / 55.7 / 6.3 / 86.4
    /// where the median over the sends the sender waited for, from
    /// recordings without file I/O only, gives 42.0 / 57.9 / 8.3 / 90.7 (mg
    /// cells 0.8-1.7 against 2.8-3.8; that rule learns nothing for mg on
    /// IO, HY1 and HY2). The costs are kept in
    /// order, one per collective of the iteration; a trace that cannot be
    /// replayed keeps the pairwise pricing (its prediction will say what
    /// is wrong).
    fn calibrate_collectives(&mut self) {
        let d = Dist(self.app.dist.clone());
        let mut calib = Calib::default();
        let laps = self.laps();
        if self.replay(&d, Some(&mut calib), laps).is_ok() {
            // The last lap's, as the prediction prices the last lap.
            let per_lap = calib.collectives.len() / laps;
            self.collective_s = calib.collectives.split_off(per_lap * (laps - 1));
            let with_io = self.programs.iter().any(|p| !p.io.is_empty());
            self.handshake_s = calib
                .handshakes
                .iter()
                .map(|v| handshake_latency(v, with_io))
                .collect();
        }
    }

    pub fn ranks(&self) -> usize {
        self.programs.len()
    }

    /// The same model under a load: every rank's computation and message
    /// overheads run `sd_i` times slower and every transfer `sd_{i->j}`
    /// times (Figueira and Berman eqs. 1 and 3), at the slowdowns' means;
    /// [`Model::predict_stochastic`] carries their spread.
    pub fn with_load(mut self, load: crate::slowdown::Slowdowns) -> Model {
        let p = self.ranks();
        assert_eq!(load.cpu.len(), p, "one CPU slowdown per rank");
        if load.is_dedicated() {
            self.cpu_slow.clear();
            self.net_slow.clear();
        } else {
            self.cpu_slow = load.cpu.iter().map(|s| s.mean).collect();
            self.net_slow = load.net.iter().map(|s| s.mean).collect();
        }
        self.load = Some(load);
        self
    }

    fn cpu_factor(&self, i: usize) -> f64 {
        self.cpu_slow.get(i).copied().unwrap_or(1.0)
    }

    fn net_factor(&self, k: usize) -> f64 {
        self.net_slow.get(k).copied().unwrap_or(1.0)
    }

    pub fn rows(&self) -> u64 {
        self.app.rows
    }

    /// Seconds per row of scaled work of each rank, as measured.
    pub fn per_row_s(&self) -> Vec<f64> {
        self.programs
            .iter()
            .zip(&self.app.dist)
            .map(|(p, &w)| p.scaled_s / w as f64)
            .collect()
    }

    /// Rank `i`'s own time for `rows` rows, messages aside: its scaled
    /// computation scaled by `rows / recorded rows` on every level, its
    /// unscaled computation, and its I/O under the out-of-core rule (eqs.
    /// 1-2). Infinite when its memory cannot hold one row. The cost line
    /// GBS bisects on.
    pub fn rank_cost(&self, i: usize, rows: u64) -> f64 {
        let prog = &self.programs[i];
        let f = rows as f64 / self.app.dist[i].max(1) as f64;
        let plan = match &self.io {
            Some(io) => {
                let first = self.app.dist[..i]
                    .iter()
                    .sum::<u64>()
                    .min(self.rows() - rows.min(self.rows()));
                match io.plan(i, first, rows) {
                    Some(p) => Some(p),
                    None => return f64::INFINITY,
                }
            }
            None => None,
        };
        let (mut t, mut stage) = (0.0, 0.0);
        let slow = self.cpu_factor(i);
        for step in &prog.steps {
            match step {
                Step::Compute {
                    s, scaled: true, ..
                } => {
                    t += s * f * slow;
                    stage += s * f;
                }
                Step::Compute { s, .. } => t += s * slow,
                Step::StageEnd(k) => {
                    if let (Some(io), Some(p)) = (&self.io, &plan) {
                        t += io.stage_io(i, *k as usize, p, stage);
                    }
                    stage = 0.0;
                }
                _ => stage = 0.0,
            }
        }
        t
    }

    /// The most rows rank `i` can hold with every array in core (all rows
    /// when it has no memory limit or nothing can go out of core).
    pub fn in_core_capacity(&self, i: usize) -> u64 {
        let n = self.rows();
        let Some(io) = &self.io else {
            return n;
        };
        let first = self.inst_offsets[i];
        let in_core = |s: u64| {
            io.plan(i, first.min(n - s), s)
                .is_some_and(|p| p.out_of_core.iter().all(|&o| !o))
        };
        if in_core(n) {
            return n;
        }
        let (mut lo, mut hi) = (0u64, n);
        while lo + 1 < hi {
            let mid = (lo + hi) / 2;
            if in_core(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Where rank `from`'s message to recorded peer `to` goes under `d`:
    /// the nearest rank in that direction that owns rows (1-D neighbour
    /// topology), or `to` itself (fixed topology). A 1-D message to a
    /// rank beyond the adjacent one (mg's rows gathered onto fewer ranks
    /// on a coarse level, its halo between those ranks) keeps its peer
    /// while the peer owns rows under `d`.
    fn route(&self, d: &Dist, from: usize, to: usize) -> Option<usize> {
        match self.app.topology {
            Topology::Fixed => Some(to),
            Topology::Neighbour1d => {
                if from.abs_diff(to) > 1 && d.0.get(to).is_some_and(|&r| r > 0) {
                    Some(to)
                } else if to > from {
                    (from + 1..self.ranks()).find(|&j| d.0[j] > 0)
                } else if to < from {
                    (0..from).rev().find(|&j| d.0[j] > 0)
                } else {
                    Some(to)
                }
            }
        }
    }

    fn msg_bytes(&self, d: &Dist, sender: usize, bytes: f64) -> f64 {
        match self.app.msg_scaling {
            MsgScaling::Constant => bytes,
            MsgScaling::SenderRows => bytes * d.0[sender] as f64 / self.app.dist[sender] as f64,
        }
    }

    /// Per rank and grid level, the ratio W'/W of the work under `d` to the
    /// work recorded (MHETA section 4.2.1: T_Φ' = T_Φ · W'/W). Work is the
    /// rows, or their nonzeros when the app declares `work_per_row`; a
    /// coarse level's rows come from [`Dist::coarse_level`], as mg's do.
    fn work_factors(&self, d: &Dist) -> Vec<f64> {
        let p = self.ranks();
        let l = self.levels as usize;
        let mut f = vec![0.0; p * l];
        let inst = &self.app.dist;
        match &self.work_prefix {
            Some(w) => {
                let (oa, ob) = (&self.inst_offsets, d.offsets());
                for i in 0..p {
                    let was = w[(oa[i] + inst[i]) as usize] - w[oa[i] as usize];
                    let now = w[(ob[i] + d.0[i]) as usize] - w[ob[i] as usize];
                    f[i * l] = if was > 0 {
                        now as f64 / was as f64
                    } else {
                        0.0
                    };
                }
            }
            None => {
                for i in 0..p {
                    f[i * l] = d.0[i] as f64 / inst[i] as f64;
                }
            }
        }
        let mut b = d.clone();
        for (lv, a) in (1..l).zip(&self.inst_coarse) {
            b = b.coarse_level();
            for i in 0..p {
                f[i * l + lv] = if a.0[i] > 0 {
                    b.0[i] as f64 / a.0[i] as f64
                } else {
                    0.0
                };
            }
        }
        f
    }

    /// Each rank's out-of-core plan under `d`; an error names a rank whose
    /// memory cannot hold one row.
    fn plans(
        &self,
        d: &Dist,
    ) -> Result<Vec<Option<std::sync::Arc<crate::iomodel::PlanSummary>>>, ModelError> {
        let Some(io) = &self.io else {
            return Ok(Vec::new());
        };
        let offs = d.offsets();
        (0..self.ranks())
            .map(|i| {
                io.plan(i, offs[i], d.0[i])
                    .map(Some)
                    .ok_or(ModelError::TooSmall {
                        rank: i,
                        rows: d.0[i],
                    })
            })
            .collect()
    }

    /// Predict one iteration under `d` (rows per rank).
    pub fn predict(&self, d: &Dist) -> Result<Prediction, ModelError> {
        self.replay(d, None, self.laps())
    }

    /// One iteration under `d` replayed from a common start, as MHETA's
    /// section 4 prices it: its equations' own reading, which the unit
    /// tests check by hand. [`Model::predict`] differs only where
    /// iterations overlap or start apart ([`Model::laps`]).
    pub fn predict_first(&self, d: &Dist) -> Result<Prediction, ModelError> {
        self.replay(d, None, 1)
    }

    /// How many iterations the replay runs back to back: 1 when every
    /// rank's iteration ends at a collective over all ranks that they
    /// leave together (the next one starts together, so it repeats the
    /// first), else 2. An all-reduce's ranks leave it apart: one behind a
    /// slow link gets the result later and starts its next iteration
    /// later.
    ///
    /// Without such a collective, iterations overlap: in a pipeline
    /// (MHETA eq. 4) the first rank starts its next sweep while the last
    /// one still finishes this one, so a run's iteration lasts the
    /// pipeline's period, not the fill of a cold start that a single
    /// replay from a common start prices (wavefront at 4 ranks: a 166 ms
    /// cold iteration against the 148-151 ms recorded). Each rank times
    /// its own iteration, and the run's iteration is the longest of them
    /// (the apps' `iter_median_s`), so the prediction is the longest
    /// rank's second lap, from the end of its first to the end of its
    /// second. Collectives' costs are measured on the last lap too
    /// ([`Model::calibrate_collectives`]).
    fn laps(&self) -> usize {
        if self.overlapping { 2 } else { 1 }
    }

    /// The time-ordered replay behind [`Model::predict`], `laps`
    /// iterations back to back (the last priced), one function per step
    /// kind ([`replay::Replay`]). With `calib`, each collective's cost is
    /// measured instead of looked up, and pushed there
    /// ([`Model::calibrate_collectives`]).
    fn replay(
        &self,
        d: &Dist,
        calib: Option<&mut Calib>,
        laps: usize,
    ) -> Result<Prediction, ModelError> {
        d.check(self.ranks(), self.rows())?;
        replay::Replay::new(self, d, calib, laps)?.run()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program that records only its collectives' times, per iteration.
    fn tooks(reduce_tooks: Vec<Vec<f64>>) -> Program {
        Program {
            steps: Vec::new(),
            scaled_s: 0.0,
            unscaled_s: 0.0,
            measured_s: 0.0,
            io: Vec::new(),
            sleep_s: 0.0,
            spin_s: 0.0,
            wake_s: 0.0,
            stage_io_s: Vec::new(),
            reduce_tooks,
            send_waits_s: Vec::new(),
        }
    }

    /// A profile of ranks on `hosts` whose pair (s, d) costs `g(s, d)` a
    /// byte.
    fn priced(hosts: &[&str], g: impl Fn(u32, u32) -> f64) -> ClusterProfile {
        let p = hosts.len() as u32;
        let names = hosts.iter().map(|h| h.to_string()).collect();
        let mut prof = ClusterProfile::new(p, names, "test");
        for s in 0..p {
            for d in (0..p).filter(|&d| d != s) {
                prof.pairs.push(mheta_profile::PairCost::logp(
                    s,
                    d,
                    5e-6,
                    g(s, d),
                    1e-6,
                    2e-6,
                ));
            }
        }
        prof
    }

    #[test]
    fn a_copy_costs_what_its_hosts_fastest_pair_costs() {
        // Ranks 0 and 1 share host a (shared memory, 0.1 ns a byte); 2 is
        // alone on b; links cost 8 ns a byte, 40 into b.
        let g = |s: u32, d: u32| match (s, d) {
            (0, 1) | (1, 0) => 0.1e-9,
            (_, 2) => 40e-9,
            _ => 8e-9,
        };
        let net = Net::from_profile(&priced(&["a", "a", "b"], g));
        let c = &net.copy_per_byte;
        assert_eq!(c.len(), 3);
        assert!(
            (c[0] - 0.1e-9).abs() < 1e-15 && (c[1] - 0.1e-9).abs() < 1e-15,
            "{c:?}"
        );
        // Alone on b: the fastest pair of any host.
        assert!((c[2] - 0.1e-9).abs() < 1e-15, "{c:?}");
        // One rank per host: the fastest pair at all (8 ns), not the mean
        // (18.7 ns).
        let links = |_: u32, d: u32| if d == 2 { 40e-9 } else { 8e-9 };
        let net = Net::from_profile(&priced(&["a", "b", "c"], links));
        for &v in &net.copy_per_byte {
            assert!((v - 8e-9).abs() < 1e-15, "{v}");
        }
    }

    #[test]
    fn a_handshake_latency_is_the_mean_and_needs_samples_beside_file_io() {
        // The mean, slow wake-up included (a median would give 40 us).
        let mut v = vec![40e-6; 9];
        v.push(400e-6);
        let mean = (9.0 * 40e-6 + 400e-6) / 10.0;
        assert!((handshake_latency(&v, false) - mean).abs() < 1e-15);
        assert!((handshake_latency(&v, true) - mean).abs() < 1e-15);
        // Two samples count without file I/O, not beside it; 8 do.
        assert!((handshake_latency(&[150e-6, 170e-6], false) - 160e-6).abs() < 1e-18);
        assert_eq!(handshake_latency(&[150e-6, 170e-6], true), 0.0);
        let eight = [50e-6; HANDSHAKE_MIN_SAMPLES_WITH_IO];
        assert!((handshake_latency(&eight, true) - 50e-6).abs() < 1e-18);
        assert_eq!(handshake_latency(&eight[1..], true), 0.0);
        assert_eq!(handshake_latency(&[], false), 0.0);
    }

    #[test]
    fn the_last_arrival_is_found_in_each_iteration() {
        // Two collectives, four iterations. In the first collective ranks 2
        // and 3 take turns arriving last (0.3 ms inside) while the other
        // waits 7 ms for it: each rank's median time there is 3.65 ms, the
        // last arrival's 0.3 ms in every iteration.
        let progs = [
            tooks(vec![vec![7.3, 7.3, 7.3, 7.3], vec![1.0, 1.0, 1.0, 1.0]]),
            tooks(vec![vec![7.3, 7.3, 7.3, 7.3], vec![2.0, 0.5, 2.0, 0.5]]),
            tooks(vec![vec![0.3, 7.3, 0.3, 7.3], vec![0.2, 0.2, 0.2, 0.2]]),
            tooks(vec![vec![7.3, 0.3, 7.3, 0.3], vec![0.9, 0.1, 0.9, 0.1]]),
        ];
        let got = last_arrivals(&progs);
        assert_eq!(got.len(), 2);
        assert!((got[0] - 0.3).abs() < 1e-12, "{got:?}");
        // Second: per-iteration minima 0.2, 0.1, 0.2, 0.1.
        assert!((got[1] - 0.15).abs() < 1e-12, "{got:?}");
        // Ranks that recorded different collectives or iteration counts
        // give nothing (the replay's own last arrivers are used).
        let mut short = progs.clone();
        short[1].reduce_tooks[0].pop();
        assert!(last_arrivals(&short).is_empty());
        let mut fewer = progs.clone();
        fewer[3].reduce_tooks.pop();
        assert!(last_arrivals(&fewer).is_empty());
    }
}
