//! The cluster profile's format: the JSON layout ([`ClusterProfile`] and
//! what it holds per pair, [`PairCost`], and per node, [`NodeCost`],
//! [`DiskCost`]), its version, loading with errors that name the file
//! ([`ProfileError`]), validation (its rules in `format/validate.rs`)
//! and saving.

mod moves;
mod validate;
pub use moves::{MOVE_BYTES, MovePoint, move_scale_at};

use crate::samples::{ModeChoice, SampleStats};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use validate::{validate_node, validate_pair};

/// The `format` field of every profile.
pub const FORMAT: &str = "mheta-cluster-profile";
/// Version of the profile layout; bump on incompatible change.
pub const VERSION: u32 = 2;

/// One piece of the one-way time: for `from_bytes <= b <= to_bytes`,
/// `one_way(b) = base_s + per_byte_s * (b - from_bytes)`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Segment {
    pub from_bytes: u64,
    pub to_bytes: u64,
    pub base_s: f64,
    pub per_byte_s: f64,
}

/// One message size of the sweep.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct SizePoint {
    pub bytes: u64,
    /// Half a ping-pong round trip.
    pub one_way: SampleStats,
    /// Streaming bandwidth (window of 64 non-blocking sends), decimal MB/s.
    pub bandwidth_mbps: f64,
}

/// Message size of [`PairCost::bandwidth_cold_bps`]: 8 MiB, the smallest
/// move the redistribution target speaks of.
pub const COLD_BYTES: usize = 8 << 20;

/// Costs of messages from `src` to `dst` (MPI_COMM_WORLD ranks).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct PairCost {
    pub src: u32,
    pub dst: u32,
    /// Wire latency L: one-way time of a small message minus o_s and o_r.
    pub latency_s: f64,
    /// Per-byte cost G of the largest messages (the last segment).
    pub per_byte_s: f64,
    /// Sender overhead o_s (median).
    pub o_send_s: f64,
    /// Receiver overhead o_r (median).
    pub o_recv_s: f64,
    /// Median round trip of an 8-byte ping-pong.
    pub rtt_small_s: f64,
    /// Streaming bandwidth at 1 MiB (or the largest size), bytes/s.
    pub bandwidth_bps: f64,
    /// Bandwidth of one [`COLD_BYTES`] message between buffers out of the
    /// cache, bytes/s (`mheta_microbench::net::cold_one_way`): what moving
    /// megabytes of rows last touched long ago (a redistribution) can
    /// reach, where `bandwidth_bps` streams the same cached megabyte. 0:
    /// not measured (profiles from before it was).
    #[serde(default)]
    pub bandwidth_cold_bps: f64,
    /// Messages of [`MOVE_BYTES`] between buffers out of the cache (the
    /// cold round trips') with both ends waiting for them as a move
    /// does, polling and then napping (`mheta_base::nap`): what a move's
    /// piece across a link gets where the link's work needs the core a
    /// polling rank holds. Empty: not measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moves: Vec<MovePoint>,
    #[serde(default)]
    pub o_send: SampleStats,
    #[serde(default)]
    pub o_recv: SampleStats,
    /// One-way time of an 8-byte message.
    #[serde(default)]
    pub one_way_small: SampleStats,
    #[serde(default)]
    pub sweep: Vec<SizePoint>,
    #[serde(default)]
    pub segments: Vec<Segment>,
    /// The largest message, in bytes, whose send completes before the
    /// receiver has posted its receive (Open MPI's shared-memory BTL: about
    /// 4 KiB with its header; TCP: 64 KiB). A larger one goes by rendezvous:
    /// the sender's request completes only once the receiver has matched
    /// it and taken the data (`mheta_microbench::net::eager_limit`). None:
    /// not measured (no probe could keep the receiver out of MPI within
    /// its budget, as on ranks that share cores with a busy host; or a
    /// profile from before the probe); the model then takes every send as
    /// eager.
    #[serde(default)]
    pub eager_limit_bytes: Option<u64>,
    /// Bytes of a [`COLD_BYTES`] message still on their way to a receiver
    /// that had posted its receive when the sender's request completed
    /// (`mheta_microbench::net::Cold`): what the transport takes off the
    /// sender's hands past the rendezvous (TCP's socket buffers and the
    /// link's queue; about none on one node, where the receiver copies the
    /// message). A
    /// sender whose piece of a move is smaller goes on as soon as the
    /// receiver has matched it; a larger one, that many bytes before the
    /// receiver has it all. None: not measured (taken as 0). Measured
    /// after the pair's sweep: over TCP how much the socket holds depends
    /// on what the connection carried before (`scripts/send-hold.sh`).
    #[serde(default)]
    pub send_buffer_bytes: Option<u64>,
    /// The same for the first [`COLD_BYTES`] message the pair's connection
    /// carries, before the sweep (`mheta_microbench::net::first_bulk_held`):
    /// how a move finds a connection its application used for small
    /// messages only. The move model takes it over `send_buffer_bytes`.
    /// None: not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_buffer_first_bytes: Option<u64>,
    /// Bytes per second of one [`COLD_BYTES`] piece copied by both ends
    /// at once between two ranks of one host, as the runtime copies a
    /// move's large pieces there (`mheta_microbench::net::direct_copy`:
    /// the sender pushes half with `process_vm_writev`, the receiver
    /// pulls half with `process_vm_readv`, the rows out of the cache).
    /// None: not measured (ranks of different hosts, a copy the kernel
    /// refused, profiles from before it was); the move model then takes
    /// the ranks' `NodeCost::copy_per_byte`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct_copy_bps: Option<f64>,
    /// Both ranks sending each other a message at once, as a halo
    /// exchange does, back to back and after each has spent a while
    /// sweeping memory with no MPI call, as an iterative code's ranks do
    /// between exchanges (`mheta_microbench::net::exchange_after_gap`):
    /// the model prices a send that is one side of such an exchange from
    /// it ([`ExchangePoint`]). By increasing gap, each by increasing size;
    /// the same for both ways of a pair. Empty: not measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exchange: Vec<ExchangePoint>,
    /// The sender's time in a blocking eager send of each size, the
    /// receiver waiting in its receive (LogGP's o(m);
    /// `mheta_microbench::net` `send_by_size`): across hosts a send pays
    /// its bytes' way through the sender's network stack on its own core,
    /// so that o_s (`o_send_s`, at 8 bytes) does not carry to kilobytes.
    /// By increasing size, none above the eager limit. Empty: not
    /// measured; the model then takes `o_send_s` at every size.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub send_by_size: Vec<SendPoint>,
}

/// One figure of [`PairCost::send_by_size`].
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct SendPoint {
    pub bytes: u64,
    /// Seconds from the start of the send to its return, as `o_send_s`
    /// is taken from `o_send`: what the model reads.
    pub o_send_s: f64,
    /// Their distribution, in rounds.
    pub o_send: SampleStats,
}

/// One figure of [`PairCost::exchange`].
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ExchangePoint {
    /// Seconds each rank swept memory (twice its last-level cache) with
    /// no MPI call before the exchange; 0: exchanges back to back.
    pub gap_s: f64,
    /// Bytes each way.
    pub bytes: u64,
    /// Seconds from posting both requests to completing both, the mean
    /// of the two ranks' figures of one exchange (so that one rank's late
    /// start does not count), over the repeats.
    pub one_way: SampleStats,
}

impl PairCost {
    /// A pair described by LogP figures alone (tests, synthetic clusters).
    pub fn logp(
        src: u32,
        dst: u32,
        latency_s: f64,
        per_byte_s: f64,
        o_send_s: f64,
        o_recv_s: f64,
    ) -> PairCost {
        let small = o_send_s + latency_s + o_recv_s;
        PairCost {
            src,
            dst,
            latency_s,
            per_byte_s,
            o_send_s,
            o_recv_s,
            rtt_small_s: 2.0 * small,
            bandwidth_bps: if per_byte_s > 0.0 {
                1.0 / per_byte_s
            } else {
                f64::INFINITY
            },
            bandwidth_cold_bps: 0.0,
            moves: Vec::new(),
            o_send: SampleStats::point(o_send_s),
            o_recv: SampleStats::point(o_recv_s),
            one_way_small: SampleStats::point(small),
            sweep: Vec::new(),
            segments: vec![Segment {
                from_bytes: 0,
                to_bytes: u64::MAX,
                base_s: small,
                per_byte_s,
            }],
            eager_limit_bytes: None,
            send_buffer_bytes: None,
            send_buffer_first_bytes: None,
            direct_copy_bps: None,
            exchange: Vec::new(),
            send_by_size: Vec::new(),
        }
    }

    /// [`PairCost::eager_limit_bytes`] as a table prints it: `-` when not
    /// measured, `inf` when every size measured was eager.
    pub fn eager_text(&self) -> String {
        match self.eager_limit_bytes {
            None => "-".into(),
            Some(u64::MAX) => "inf".into(),
            Some(b) => b.to_string(),
        }
    }

    /// One-way time of a `bytes`-byte message, send start to receive end.
    pub fn one_way_s(&self, bytes: f64) -> f64 {
        let segs = &self.segments;
        if segs.is_empty() {
            return self.o_send_s + self.latency_s + self.o_recv_s + self.per_byte_s * bytes;
        }
        let s = segs
            .iter()
            .find(|s| bytes <= s.to_bytes as f64)
            .unwrap_or(&segs[segs.len() - 1]);
        let from = s.from_bytes as f64;
        s.base_s + s.per_byte_s * (bytes - from).max(0.0)
    }

    /// The streaming bandwidth (window of 64, as osu_bw) the sweep
    /// measured at the largest size not above `bytes`, as (size, bytes/s);
    /// the smallest size when every size is above; `None` without a sweep.
    /// A profile measured with `--max-size` reaches the sizes a
    /// redistribution moves, where the 1 MiB figure
    /// ([`PairCost::bandwidth_bps`]) streams one cached buffer.
    pub fn streaming_bps_at(&self, bytes: u64) -> Option<(u64, f64)> {
        let at = self
            .sweep
            .iter()
            .filter(|p| p.bytes <= bytes)
            .max_by_key(|p| p.bytes)
            .or_else(|| self.sweep.iter().min_by_key(|p| p.bytes))?;
        Some((at.bytes, at.bandwidth_mbps * 1e6))
    }

    /// Time on the wire: the one-way time without the two overheads
    /// (MHETA eq. 3's T_{i->j}(q)).
    pub fn transfer_s(&self, bytes: f64) -> f64 {
        (self.one_way_s(bytes) - self.o_send_s - self.o_recv_s).max(0.0)
    }
}

/// Per-node disk costs (MHETA's O_r, O_w and per-byte read/write costs).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct DiskCost {
    /// Directory measured.
    pub dir: String,
    /// How the page cache was kept out (`O_DIRECT`, or buffered I/O with
    /// `fdatasync` and `posix_fadvise(DONTNEED)`).
    pub method: String,
    pub read_overhead_s: f64,
    pub read_per_byte_s: f64,
    pub write_overhead_s: f64,
    pub write_per_byte_s: f64,
    /// Per block size: time of one call.
    pub read: Vec<(u64, SampleStats)>,
    pub write: Vec<(u64, SampleStats)>,
}

/// What was measured of the node a rank runs on.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct NodeCost {
    pub rank: u32,
    pub host: String,
    /// Relative CPU power: w_a = t_s / t_a (Figueira and Berman, section 6), the
    /// slowest rank has 1.
    pub cpu_weight: f64,
    /// Time of one run of the reference kernel.
    pub cpu_kernel: SampleStats,
    /// Memory this rank may use: the node's available memory (and cgroup
    /// limit) shared among its ranks.
    pub mem_available_bytes: u64,
    /// `None` when disks were not measured (`--no-disk`).
    pub disk: Option<DiskCost>,
    /// Seconds per byte of a copy within this rank's memory with every
    /// rank of the node copying at once (an overlapping `memmove` of 32
    /// MiB): what the runtime's on-node copy of a move's piece gets, both
    /// of its ends copying. `None`: not measured (a profile from before
    /// it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy_per_byte: Option<SampleStats>,
    /// Seconds per byte of the same shift with the rest of its machine
    /// quiet (the ranks of one kernel in turn): what a move costs for the
    /// rows a rank keeps when its block's first row changes, a shift that
    /// runs while the ranks around it wait. `None`: not measured (the
    /// model then takes `copy_per_byte`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shift_per_byte: Option<SampleStats>,
    /// Seconds per byte of shifting 32 MiB of rows the cache has lost, by
    /// each of several distances, in increasing order (the ranks of one
    /// kernel in turn, each shift in a region of its own): a shift by
    /// less than the core's cache writes lines it has just read, a
    /// farther one must fetch them first, and the rate falls with the
    /// distance. The model takes the rate at a move's distance, linear
    /// in log2(distance) between points and flat beyond them. Empty: not
    /// measured (the model then takes `shift_per_byte`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shift_by: Vec<ShiftPoint>,
    /// Seconds per byte of backing memory the process has not touched yet
    /// (32 MiB freshly mapped, populated for writing as the runtime's row
    /// buffers are: the page faults and the kernel's zeroing; the ranks of
    /// one kernel in turn): what a rank pays for the rows a move adds to
    /// its block. `None`: not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub touch_per_byte: Option<SampleStats>,
    /// What a byte of a rank's arrays costs by how long ago the rank last
    /// touched it: a five-point sweep over two arrays of `ws_bytes` in
    /// all, right after another sweep and after waits of a few to 50 ms
    /// that touch nothing (as a rank polling MPI for a slower one), by
    /// working set and then by `reuse_s`, increasing (the first rank of
    /// each kernel, the others quiet). Where the node's caches are shared
    /// with others (other jobs, other guests of the host), a rank's rows
    /// are evicted while it waits and its next sweep reads them from
    /// memory (docs/design/fidelity.md). Empty: not measured (the model
    /// then prices a row as recorded, whatever the time between sweeps).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reuse_by: Vec<ReusePoint>,
    /// The first rank of the machine this rank runs on: one kernel's
    /// cores, caches and memory, whatever host names its ranks give (the
    /// emulated hosts of one machine are one). The ranks of one machine
    /// share its last-level cache, so the reuse term takes their arrays
    /// together. `None`: not recorded (a profile from before it was; the
    /// model then takes the ranks of one host name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<u32>,
    /// The online CPUs of that machine when it was measured. With more
    /// ranks on a machine than it has CPUs the ranks take turns (the
    /// apps give each a quota of its share, `base_share`), and a move's
    /// copies, shifts and first touches, measured here with a core each,
    /// run at that share (`mheta_model::redist`). `None`: not recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_cpus: Option<u32>,
}

impl NodeCost {
    /// A node of CPU weight 1 and 1 GiB for the application, nothing
    /// else measured: what tests and benches add their figures to.
    pub fn bare(rank: u32, host: &str) -> NodeCost {
        NodeCost {
            rank,
            host: host.into(),
            cpu_weight: 1.0,
            cpu_kernel: SampleStats::point(1e-3),
            mem_available_bytes: 1 << 30,
            disk: None,
            copy_per_byte: None,
            shift_per_byte: None,
            shift_by: Vec::new(),
            touch_per_byte: None,
            reuse_by: Vec::new(),
            machine: None,
            machine_cpus: None,
        }
    }
}

/// One working set and time since the last sweep of
/// [`NodeCost::reuse_by`].
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ReusePoint {
    /// Bytes of the two arrays swept.
    pub ws_bytes: u64,
    /// Seconds from the start of the sweep before to the start of this
    /// one (that sweep's own time and the wait): how long ago this sweep's
    /// bytes were last touched, the median over the rounds.
    pub reuse_s: f64,
    /// CPU seconds a byte of this sweep.
    pub per_byte: SampleStats,
    /// This sweep's cost a byte over the one right after a sweep in the
    /// same round (1 for that one): the median over the rounds.
    pub rel: f64,
    /// The percentile bootstrap 95% interval of `rel`.
    pub rel_ci95: [f64; 2],
}

impl ReusePoint {
    /// `rel` where its 95% interval excludes 1, else 1: a cost the rounds
    /// did not tell apart from a sweep right after a sweep is taken to be
    /// that one's.
    pub fn resolved(&self) -> f64 {
        let [lo, hi] = self.rel_ci95;
        if lo <= 1.0 && 1.0 <= hi {
            1.0
        } else {
            self.rel
        }
    }
}

/// One distance of [`NodeCost::shift_by`].
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ShiftPoint {
    /// How far the rows move, bytes.
    pub distance_bytes: u64,
    /// Seconds per byte shifted.
    pub per_byte: SampleStats,
}

/// OSU-compatible results (`--osu-compat`): osu_latency and osu_bw loops.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct OsuCompat {
    pub src: u32,
    pub dst: u32,
    pub latency_us: Vec<(u64, f64)>,
    pub bandwidth_mbps: Vec<(u64, f64)>,
    /// Timed round trips of each latency size: OSU's counts where they
    /// fit the time budget of a size, fewer on a slow link. Empty: not
    /// recorded (profiles from before it was).
    #[serde(default)]
    pub latency_iters: Vec<(u64, u64)>,
    /// Timed windows of each bandwidth size, likewise.
    #[serde(default)]
    pub bandwidth_iters: Vec<(u64, u64)>,
}

/// A measured cluster.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ClusterProfile {
    pub format: String,
    pub version: u32,
    /// Ranks measured.
    pub np: u32,
    /// Host of each rank.
    pub hosts: Vec<String>,
    /// How overheads were separated from latency.
    pub method: String,
    /// How the pairs were scheduled.
    #[serde(default)]
    pub schedule: String,
    #[serde(default)]
    pub quick: bool,
    /// Every ordered pair (src != dst), in any order.
    pub pairs: Vec<PairCost>,
    /// One per rank (may be empty in synthetic profiles).
    #[serde(default)]
    pub nodes: Vec<NodeCost>,
    #[serde(default)]
    pub osu: Option<OsuCompat>,
    /// Cost of one timer reading (median of back-to-back readings) on rank
    /// 0: every timed sample includes it, and modes closer than three of
    /// it are not told apart.
    #[serde(default)]
    pub timer_s: f64,
    /// The links the cluster spec gave, when the profile was measured
    /// across emulated hosts (`mheta bench --cluster`): what the measured
    /// link matrix is held against. Empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<SpecLink>,
    /// The costs of every ordered pair that `pairs` does not list, by
    /// whether its two ranks share a host: how a profile of thousands of
    /// ranks is written, where a table of every pair (P^2 - P entries)
    /// is out of reach. None: `pairs` lists every pair.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unlisted: Option<UnlistedPairs>,
}

/// [`ClusterProfile::unlisted`]: one pair's costs standing for every
/// unlisted pair of its kind (their `src` and `dst` are not read).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct UnlistedPairs {
    /// Two ranks of one host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_host: Option<PairCost>,
    /// Two ranks on different hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_host: Option<PairCost>,
}

/// One ordered pair of hosts as the cluster spec shaped it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct SpecLink {
    pub src: String,
    pub dst: String,
    /// The pair's rate, bits per second (None: not shaped).
    pub rate_bps: Option<f64>,
    /// One-way latency added on the pair, seconds.
    pub added_latency_s: f64,
}

/// The largest time any single profile figure may take: an overhead,
/// latency or one-way time above 10 s (or a negative or non-finite one)
/// is a corrupt or hand-edited profile, not a measurement.
pub const MAX_TIME_S: f64 = 10.0;
/// The largest bandwidth a pair or disk may show: 1 TB/s is above the
/// memory bandwidth that any one pair of processes can use.
pub const MAX_BANDWIDTH_BPS: f64 = 1e12;

/// Errors loading or saving a profile; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The OS error is in the message, so it is not also the source
    /// (a chain printer such as anyhow's `{:#}` would print it twice).
    #[error("{path}: {err}")]
    Io { path: PathBuf, err: std::io::Error },
    #[error("{path}: not a valid cluster profile: {detail}")]
    Corrupt { path: PathBuf, detail: String },
    #[error(
        "{path}: profile version {found}, this mheta reads version {expected}; re-run `mheta bench`"
    )]
    Version {
        path: PathBuf,
        found: u32,
        expected: u32,
    },
    #[error("{path}: {detail}")]
    Invalid { path: PathBuf, detail: String },
    /// Saving failed; the message ([`mheta_base::write_atomic`]'s) names
    /// the file.
    #[error("{err}")]
    Write { path: PathBuf, err: std::io::Error },
}

impl ClusterProfile {
    /// A profile with no pairs yet.
    pub fn new(np: u32, hosts: Vec<String>, method: &str) -> Self {
        ClusterProfile {
            format: FORMAT.into(),
            version: VERSION,
            np,
            hosts,
            method: method.into(),
            schedule: String::new(),
            quick: false,
            pairs: Vec::new(),
            nodes: Vec::new(),
            osu: None,
            timer_s: 0.0,
            links: Vec::new(),
            unlisted: None,
        }
    }

    /// Whether ranks `a` and `b` share a host (every rank does when the
    /// profile does not name one host per rank).
    pub fn same_host(&self, a: u32, b: u32) -> bool {
        let n = self.np as usize;
        self.hosts.len() != n || self.hosts[a as usize] == self.hosts[b as usize]
    }

    /// The unlisted pairs' costs for a pair of this kind
    /// ([`ClusterProfile::unlisted`]).
    pub fn unlisted_pair(&self, same_host: bool) -> Option<&PairCost> {
        let u = self.unlisted.as_ref()?;
        if same_host {
            u.same_host.as_ref()
        } else {
            u.other_host.as_ref()
        }
    }

    /// Read, version-check and validate a profile file.
    pub fn load(path: &Path) -> Result<Self, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|err| ProfileError::Io {
            path: path.into(),
            err,
        })?;
        Self::parse(&text, path)
    }

    /// Parse profile JSON; `path` only names the source in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ProfileError> {
        let corrupt = |detail: String| ProfileError::Corrupt {
            path: path.into(),
            detail,
        };
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| corrupt(e.to_string()))?;
        if v.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
            return Err(corrupt(format!("missing \"format\": \"{FORMAT}\"")));
        }
        let found = v
            .get("version")
            .and_then(|x| x.as_u64())
            .ok_or_else(|| corrupt("missing \"version\"".into()))?;
        if found != VERSION as u64 {
            return Err(ProfileError::Version {
                path: path.into(),
                found: found as u32,
                expected: VERSION,
            });
        }
        let p: ClusterProfile = serde_json::from_value(v).map_err(|e| corrupt(e.to_string()))?;
        p.validate().map_err(|detail| ProfileError::Invalid {
            path: path.into(),
            detail,
        })?;
        Ok(p)
    }

    /// Check that every ordered pair is listed once, or is of a kind
    /// [`ClusterProfile::unlisted`] covers, with physically plausible
    /// costs ([`MAX_TIME_S`], [`MAX_BANDWIDTH_BPS`]), and that every
    /// node's figures are plausible.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.np as usize;
        if n == 0 {
            return Err("np is 0".into());
        }
        let mut keys = Vec::with_capacity(self.pairs.len());
        let mut listed_same = 0u64;
        for c in &self.pairs {
            let (s, d) = (c.src as usize, c.dst as usize);
            if s >= n || d >= n || s == d {
                return Err(format!(
                    "pair {s}->{d} is not an ordered pair of distinct ranks below np={n}"
                ));
            }
            keys.push((s as u64) * n as u64 + d as u64);
            listed_same += u64::from(self.same_host(c.src, c.dst));
            validate_pair(c).map_err(|e| format!("pair {s}->{d}: {e}"))?;
        }
        keys.sort_unstable();
        if let Some(w) = keys.windows(2).find(|w| w[0] == w[1]) {
            let (s, d) = (w[0] / n as u64, w[0] % n as u64);
            return Err(format!("pair {s}->{d} appears twice"));
        }
        for (kind, c) in [
            ("same-host", self.unlisted_pair(true)),
            ("other-host", self.unlisted_pair(false)),
        ] {
            if let Some(c) = c {
                validate_pair(c).map_err(|e| format!("unlisted {kind} pairs: {e}"))?;
            }
        }
        // Each kind is complete when all its pairs are listed (none is
        // listed twice) or the unlisted pairs cover it.
        let mut per_host = std::collections::HashMap::new();
        if self.hosts.len() == n {
            for h in &self.hosts {
                *per_host.entry(h.as_str()).or_insert(0u64) += 1;
            }
        } else {
            per_host.insert("", n as u64);
        }
        let all_same: u64 = per_host.values().map(|c| c * (c - 1)).sum();
        let all = (n as u64) * (n as u64 - 1);
        let listed = keys.len() as u64;
        let missing_same = listed_same < all_same && self.unlisted_pair(true).is_none();
        let missing_other =
            listed - listed_same < all - all_same && self.unlisted_pair(false).is_none();
        if missing_same || missing_other {
            for s in 0..n as u32 {
                for d in (0..n as u32).filter(|&d| d != s) {
                    let same = self.same_host(s, d);
                    let want = if same { missing_same } else { missing_other };
                    if want
                        && keys
                            .binary_search(&(s as u64 * n as u64 + d as u64))
                            .is_err()
                    {
                        return Err(format!("pair {s}->{d} is missing"));
                    }
                }
            }
        }
        if !self.nodes.is_empty() && self.nodes.len() != n {
            return Err(format!("{} nodes for np={n}", self.nodes.len()));
        }
        for nd in &self.nodes {
            validate_node(nd).map_err(|e| format!("node {}: {e}", nd.rank))?;
        }
        Ok(())
    }

    /// Costs from `src` to `dst`: the pair as listed, else the unlisted
    /// pairs' of its kind. Panics if neither has it, which a validated
    /// profile rules out for `src != dst < np`.
    pub fn pair(&self, src: u32, dst: u32) -> &PairCost {
        self.pairs
            .iter()
            .find(|c| c.src == src && c.dst == dst)
            .or_else(|| self.unlisted_pair(self.same_host(src, dst)))
            .unwrap_or_else(|| panic!("profile has no pair {src}->{dst}"))
    }

    /// The profile with every pair's o_s, o_r and 8-byte one-way time taken
    /// from the chosen mode of its samples ([`SampleStats::value`]); L follows as
    /// one-way − o_s − o_r, and the fitted one-way curve is shifted by the
    /// change of the 8-byte time (a latency mode moves every size alike).
    /// Pairs measured without modes keep their figures. `mheta bench`
    /// stores [`ModeChoice::Mean`], so `with_mode(Mean)` changes nothing.
    pub fn with_mode(&self, choice: ModeChoice) -> ClusterProfile {
        let mut p = self.clone();
        for c in &mut p.pairs {
            if c.one_way_small.modes.is_empty() {
                continue;
            }
            let pick = |d: &SampleStats, old: f64| {
                if d.modes.is_empty() {
                    old
                } else {
                    d.value(choice)
                }
            };
            let os = pick(&c.o_send, c.o_send_s);
            let or = pick(&c.o_recv, c.o_recv_s);
            let small = c.one_way_small.value(choice);
            let delta = small - c.rtt_small_s / 2.0;
            for g in &mut c.segments {
                g.base_s = (g.base_s + delta).max(0.0);
            }
            for x in &mut c.send_by_size {
                x.o_send_s = pick(&x.o_send, x.o_send_s);
            }
            c.o_send_s = os;
            c.o_recv_s = or;
            c.rtt_small_s = 2.0 * small;
            c.latency_s = (small - os - or).max(0.0);
        }
        p
    }
    /// Every multi-modal figure: (src, dst, figure, its modes as text).
    pub fn multi_modal(&self) -> Vec<(u32, u32, &'static str, String)> {
        let mut out = Vec::new();
        for c in &self.pairs {
            for (name, d) in [
                ("o_s", &c.o_send),
                ("o_r", &c.o_recv),
                ("one-way 8 B", &c.one_way_small),
            ] {
                if let Some(t) = d.modes_text() {
                    out.push((c.src, c.dst, name, t));
                }
            }
        }
        out
    }

    /// Serialise to pretty JSON.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("profile serialises");
        s.push('\n');
        s
    }

    /// Write to `path` through a temporary file and a rename
    /// ([`mheta_base::write_atomic`]).
    pub fn save(&self, path: &Path) -> Result<(), ProfileError> {
        mheta_base::write_atomic(path, self.to_json().as_bytes()).map_err(|err| {
            ProfileError::Write {
                path: path.into(),
                err,
            }
        })
    }
}

#[cfg(test)]
pub(crate) mod tests;
