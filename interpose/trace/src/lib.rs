//! The mheta trace format: what `libmheta_interpose.so` records of one
//! instrumented iteration, one file per rank, plus the application's
//! declaration (`app.json`) that says how its work and messages scale with a
//! GEN_BLOCK distribution. This crate owns both formats and the
//! `MPI_Pcontrol` levels that mark iterations and stages; it is MPI-free so
//! that the analysis side (`mheta-model`) reads traces without linking MPI.
//!
//! A trace directory holds `rank-00000.mtrace` .. `rank-{P-1}.mtrace`
//! (an 8-byte magic, a little-endian `u32` version, then bincode) and
//! `app.json`.
//!
//! One function stays longer than 80 lines on purpose: `What`'s
//! `Display` (events.rs), one line of text per event kind in one `match`,
//! so that adding a kind to the enum and its words is one edit in one
//! place.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub mod env;
pub mod pcontrol;

/// First bytes of every rank trace file.
pub const MAGIC: [u8; 8] = *b"MHETATRC";
/// Version of the rank trace encoding; bump on any change to [`RankTrace`].
/// Versions 3 to 6 appended variants (`What::Level`; `What::Neighbor`,
/// `What::INeighbor` and the ops after `Request_free`; MPI-4's ops from
/// `Isendrecv` and `Started::Collective`, `Started::Neighbor`;
/// `Psend_init`, `Precv_init`), so version 2 to 5 traces decode unchanged
/// and are read too.
pub const TRACE_VERSION: u32 = 6;
/// Version of the `app.json` declaration (version 1, without files,
/// uneven work, exchanges, levels and tiles, and version 2, without halo
/// flags and the memory declaration, are read too).
pub const APP_VERSION: u32 = 3;
/// Iteration (from 0) recorded unless `MHETA_INSTRUMENT_ITER` says
/// otherwise: the first iterations run slow while caches, TLBs and clocks
/// warm up, so three are skipped.
pub const DEFAULT_INSTRUMENT_ITER: u64 = 3;
/// Consecutive iterations recorded unless `MHETA_INSTRUMENT_COUNT` says
/// otherwise.
pub const DEFAULT_INSTRUMENT_COUNT: u64 = 3;
/// The most iterations a rank records when `MHETA_INSTRUMENT_SECONDS`
/// extends the recording, and the most events: the recording stops at
/// either, whatever the seconds.
pub const MAX_EXTENDED_ITERATIONS: usize = 20_000;
pub const MAX_EXTENDED_EVENTS: usize = 2_000_000;
/// Name of the application declaration inside a trace directory.
pub const APP_FILE: &str = "app.json";

mod events;
pub use events::{Completion, Event, Msg, NEIGHBOR_TAG, OP_COUNT, Op, Started, What};

/// One instrumented iteration of one rank.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Iteration {
    /// Index (from 0) of the iteration in the run.
    pub index: u64,
    /// From the iteration-begin marker to the iteration-end marker.
    pub duration_ns: u64,
    pub events: Vec<Event>,
}

/// Everything one rank recorded: its instrumented iterations (consecutive;
/// by default [`DEFAULT_INSTRUMENT_COUNT`] of them, so that the model can
/// take medians instead of trusting one noisy iteration).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RankTrace {
    pub rank: u32,
    pub world_size: u32,
    pub pid: u32,
    pub host: String,
    /// Variables (files passed to `MPI_File_open`) by id, as used in the
    /// file events.
    #[serde(default)]
    pub files: Vec<String>,
    pub iterations: Vec<Iteration>,
}

/// How a message's size changes when the distribution changes.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum MsgScaling {
    /// Halo rows: the size does not depend on the distribution.
    #[default]
    Constant,
    /// Allgather of a block: proportional to the sender's rows.
    SenderRows,
}

/// Who talks to whom when a rank owns no rows.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Topology {
    /// Messages go to the nearest rank above/below that owns rows; ranks
    /// with no rows take part in collectives only.
    #[default]
    Neighbour1d,
    /// Point-to-point partners are fixed whatever the distribution.
    Fixed,
}

/// A distributed array of the application.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ArrayDecl {
    pub name: String,
    /// Bytes of one row; with `per_work`, bytes per unit of the row's work
    /// (a sparse row of w nonzeros has `w * bytes_per_row` bytes).
    pub bytes_per_row: u64,
    pub read_only: bool,
    /// Stem of the per-rank file that holds the array out of core
    /// (`<scratch>/<file>.<rank:05>`, as `MPI_File_open` names it in the
    /// trace); None for arrays that never leave memory.
    #[serde(default)]
    pub file: Option<String>,
    /// Row size follows the row's work (`AppDecl::work_per_row`).
    #[serde(default)]
    pub per_work: bool,
    /// Grid level (multigrid; 0 = finest); None for single-level apps.
    #[serde(default)]
    pub level: Option<u32>,
    /// A stencil array: a sweep of it out of core also reads the row just
    /// below each piece (one aligned block per piece).
    #[serde(default)]
    pub halo: bool,
}

/// What the out-of-core rule (`mheta_model::ooc`) needs besides the
/// arrays, to decide for any distribution what each rank keeps on disk.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct MemoryDecl {
    /// Each rank's memory for the application's data, bytes (None:
    /// unlimited), from `--mem-limit` or the cluster's `mem_limit_mb`.
    pub budget: Vec<Option<u64>>,
    /// Data that always stays in memory besides the on-disk arrays:
    /// `fixed_bytes + fixed_per_row * rows` on a rank with `rows` rows.
    pub fixed_bytes: u64,
    pub fixed_per_row: u64,
    /// Out-of-core sweeps prefetch the next piece (two piece buffers).
    pub prefetch: bool,
}

/// What kind of communication ends a parallel section.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ExchangeKind {
    /// Rows to the nearest neighbours above and below.
    Halo,
    /// Every rank's block to every rank (`MPI_Allgather(v)`).
    Allgather,
    /// A reduction over all ranks (`MPI_Allreduce`).
    Reduction,
    /// A pipeline: rank i waits for rank i-1 once per tile (MHETA eq. 4).
    Pipeline,
}

/// One exchange of the iteration and how its size scales.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ExchangeDecl {
    pub kind: ExchangeKind,
    pub scaling: MsgScaling,
    /// Bytes per message in the declaring run (per row for `sender_rows`).
    pub bytes: u64,
    /// How many times per iteration.
    pub per_iteration: u32,
    /// Grid level (multigrid), None otherwise.
    #[serde(default)]
    pub level: Option<u32>,
}

/// The application's declaration, written by rank 0 as `app.json`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct AppDecl {
    pub version: u32,
    pub app: String,
    /// Rows distributed by GEN_BLOCK.
    pub rows: u64,
    /// The distribution in force during the instrumented iteration.
    pub dist: Vec<u64>,
    #[serde(default)]
    pub arrays: Vec<ArrayDecl>,
    #[serde(default)]
    pub msg_scaling: MsgScaling,
    #[serde(default)]
    pub topology: Topology,
    /// Work units (nonzeros) of every global row when rows are uneven; None
    /// when every row has the same work. Compute scales with the work of a
    /// rank's rows, not their count.
    #[serde(default)]
    pub work_per_row: Option<Vec<u64>>,
    /// The exchanges of one iteration.
    #[serde(default)]
    pub exchanges: Vec<ExchangeDecl>,
    /// Grid levels (multigrid); a coarse level's rows come from halving the
    /// fine level's GEN_BLOCK boundaries.
    #[serde(default)]
    pub levels: Option<u32>,
    /// Tiles per pipelined section (MHETA eq. 4).
    #[serde(default)]
    pub tiles: Option<u32>,
    /// Memory budgets and fixed data (None: every array always in core).
    #[serde(default)]
    pub memory: Option<MemoryDecl>,
    /// Which arrays each stage of an iteration sweeps, and how, in stage
    /// order (the stages between `MPI_Pcontrol` stage markers), as the
    /// harness saw them in one iteration. The model takes from here how
    /// an array that no rank had out of core while recorded would be
    /// read and written once on disk, and how long each stage's arrays
    /// lay untouched before it (`mheta_model::reuse`, eq. R3). None: not
    /// declared.
    #[serde(default)]
    pub stage_access: Option<Vec<Vec<StageAccess>>>,
    /// The computation was timed by `--cpu-emulation clock` from its
    /// declared units, so its time does not depend on the caches: the
    /// model leaves out what the time between two sweeps of a rank's
    /// arrays costs (`mheta_model::reuse`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cpu_clock: bool,
}

/// One array swept by a stage: its file stem (`ArrayDecl::file`) and
/// whether the stage reads and writes it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct StageAccess {
    pub file: String,
    pub read: bool,
    pub write: bool,
}

impl ArrayDecl {
    /// An array of fixed-size rows; `on_disk`: it may go out of core, in
    /// the file named after it.
    pub fn rows(name: &str, bytes_per_row: u64, read_only: bool, on_disk: bool) -> ArrayDecl {
        ArrayDecl {
            name: name.into(),
            bytes_per_row,
            read_only,
            file: on_disk.then(|| name.to_string()),
            per_work: false,
            level: None,
            halo: false,
        }
    }

    /// The same array, marked as a stencil array (see [`ArrayDecl::halo`]).
    pub fn with_halo(mut self) -> ArrayDecl {
        self.halo = true;
        self
    }
}

impl ExchangeDecl {
    /// An exchange of a single-level app.
    pub fn new(
        kind: ExchangeKind,
        scaling: MsgScaling,
        bytes: u64,
        per_iteration: u32,
    ) -> ExchangeDecl {
        ExchangeDecl {
            kind,
            scaling,
            bytes,
            per_iteration,
            level: None,
        }
    }
}

impl AppDecl {
    /// A declaration with the common fields; the rest empty.
    pub fn new(app: &str, rows: u64, dist: Vec<u64>) -> AppDecl {
        AppDecl {
            version: APP_VERSION,
            app: app.into(),
            rows,
            dist,
            arrays: Vec::new(),
            msg_scaling: MsgScaling::Constant,
            topology: Topology::Neighbour1d,
            work_per_row: None,
            exchanges: Vec::new(),
            levels: None,
            tiles: None,
            memory: None,
            stage_access: None,
            cpu_clock: false,
        }
    }
}

/// Errors reading or writing traces. Each names the file at fault.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The OS error is in the message, so it is not also the source
    /// (a chain printer such as anyhow's `{:#}` would print it twice).
    #[error("{path}: {err}")]
    Io { path: PathBuf, err: std::io::Error },
    /// A write failed; the message ([`mheta_base::write_atomic`]'s) names
    /// the file.
    #[error("{0}")]
    Write(std::io::Error),
    #[error("{path}: not an mheta trace (bad magic); was it written by libmheta_interpose?")]
    BadMagic { path: PathBuf },
    #[error(
        "{path}: trace version {found}, this mheta reads version {expected}; re-record the trace"
    )]
    Version {
        path: PathBuf,
        found: u32,
        expected: u32,
    },
    #[error("{path}: corrupt trace: {detail}")]
    Corrupt { path: PathBuf, detail: String },
    #[error(
        "{dir}: no trace directory; record one with `mheta run --trace-dir {dir} -- mpirun ...`"
    )]
    NoDir { dir: PathBuf },
    #[error(
        "{dir}: no rank traces (rank-*.mtrace) found; did the program call the iteration markers?"
    )]
    Empty { dir: PathBuf },
    #[error("{dir}: trace of rank {rank} is missing ({expected} ranks expected)")]
    MissingRank {
        dir: PathBuf,
        rank: u32,
        expected: u32,
    },
    #[error("{path}: {detail}")]
    Invalid { path: PathBuf, detail: String },
}

/// What the recorded iterations took, s: per iteration every rank
/// recorded, the slowest rank's duration (as the kernels time an
/// iteration), then the median over those iterations. None without an
/// iteration common to every rank.
pub fn recorded_window_s(traces: &[RankTrace]) -> Option<f64> {
    let first = traces.first()?;
    let mut v: Vec<f64> = first
        .iterations
        .iter()
        .filter_map(|it| {
            traces.iter().try_fold(0.0f64, |m, t| {
                let same = t.iterations.iter().find(|o| o.index == it.index)?;
                Some(m.max(same.duration_ns as f64 * 1e-9))
            })
        })
        .collect();
    mheta_base::median(&mut v)
}

/// File name of rank `rank`'s trace inside a trace directory.
pub fn rank_file(dir: &Path, rank: u32) -> PathBuf {
    dir.join(format!("rank-{rank:05}.mtrace"))
}

/// Encode a rank trace to bytes (magic, version, bincode body).
pub fn encode(trace: &RankTrace) -> Vec<u8> {
    let events: usize = trace.iterations.iter().map(|i| i.events.len()).sum();
    let mut out = Vec::with_capacity(64 + events * 48);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&TRACE_VERSION.to_le_bytes());
    // Serialising plain owned data into a Vec cannot fail.
    bincode::serialize_into(&mut out, trace).expect("bincode into Vec");
    out
}

/// Decode a rank trace; `path` only names the source in errors.
pub fn decode(bytes: &[u8], path: &Path) -> Result<RankTrace, TraceError> {
    if bytes.len() < 12 || bytes[..8] != MAGIC {
        return Err(TraceError::BadMagic { path: path.into() });
    }
    let found = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    if !(2..=TRACE_VERSION).contains(&found) {
        return Err(TraceError::Version {
            path: path.into(),
            found,
            expected: TRACE_VERSION,
        });
    }
    let trace: RankTrace = bincode::deserialize(&bytes[12..]).map_err(|e| TraceError::Corrupt {
        path: path.into(),
        detail: e.to_string(),
    })?;
    validate(&trace, path)?;
    Ok(trace)
}

/// The longest instrumented iteration a trace may hold: a day. Longer is a
/// corrupt or hand-edited trace, not a measurement.
pub const MAX_ITERATION_NS: u64 = 86_400 * 1_000_000_000;
/// The most bytes one event may move or read: 1 PiB.
pub const MAX_EVENT_BYTES: u64 = 1 << 50;

fn validate(t: &RankTrace, path: &Path) -> Result<(), TraceError> {
    let bad = |detail: String| TraceError::Invalid {
        path: path.into(),
        detail,
    };
    if t.world_size == 0 || t.rank >= t.world_size {
        return Err(bad(format!(
            "rank {} outside world of size {}",
            t.rank, t.world_size
        )));
    }
    if t.iterations.is_empty() {
        return Err(bad("no iterations recorded".into()));
    }
    for it in &t.iterations {
        if it.duration_ns > MAX_ITERATION_NS {
            return Err(bad(format!(
                "iteration {} lasts {} ns, implausibly long (over a day)",
                it.index, it.duration_ns
            )));
        }
        for (i, e) in it.events.iter().enumerate() {
            let b = e.what.bytes();
            if b > MAX_EVENT_BYTES {
                return Err(bad(format!(
                    "iteration {}: event {i} moves {b} bytes, implausibly many (over 1 PiB)",
                    it.index
                )));
            }
            if let Some(p) = e.what.peer()
                && p >= t.world_size as i32
            {
                return Err(bad(format!(
                    "iteration {}: event {i} names rank {p}, outside the world of {}",
                    it.index, t.world_size
                )));
            }
        }
        // Events are in start order; each thread's calls do not overlap.
        let mut start = 0;
        let mut ends: std::collections::HashMap<u16, u64> = Default::default();
        for (i, e) in it.events.iter().enumerate() {
            let end = ends.entry(e.thread).or_insert(0);
            if e.t1_ns < e.t0_ns || e.t0_ns < start || e.t0_ns < *end || e.t1_ns > it.duration_ns {
                return Err(bad(format!(
                    "iteration {}: event {i} (thread {}, {}..{} ns) is out of order \
                     (previous start {start} ns, the thread's previous end {} ns, iteration {} ns)",
                    it.index, e.thread, e.t0_ns, e.t1_ns, *end, it.duration_ns
                )));
            }
            start = e.t0_ns;
            *end = e.t1_ns;
        }
    }
    Ok(())
}

/// [`mheta_base::write_atomic`], its error as [`TraceError::Write`].
fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), TraceError> {
    mheta_base::write_atomic(path, bytes).map_err(TraceError::Write)
}

/// Write one rank's trace into `dir`.
pub fn write_rank(dir: &Path, trace: &RankTrace) -> Result<PathBuf, TraceError> {
    let path = rank_file(dir, trace.rank);
    write_whole(&path, &encode(trace))?;
    Ok(path)
}

/// Read one rank trace file.
pub fn read_rank(path: &Path) -> Result<RankTrace, TraceError> {
    let bytes = std::fs::read(path).map_err(|err| TraceError::Io {
        path: path.into(),
        err,
    })?;
    decode(&bytes, path)
}

/// Read every rank of a trace directory, checking that all ranks are there.
pub fn read_dir(dir: &Path) -> Result<Vec<RankTrace>, TraceError> {
    if !dir.is_dir() {
        return Err(TraceError::NoDir { dir: dir.into() });
    }
    let first = rank_file(dir, 0);
    if !first.exists() {
        return Err(TraceError::Empty { dir: dir.into() });
    }
    let t0 = read_rank(&first)?;
    let p = t0.world_size;
    let mut out = vec![t0];
    for r in 1..p {
        let path = rank_file(dir, r);
        if !path.exists() {
            return Err(TraceError::MissingRank {
                dir: dir.into(),
                rank: r,
                expected: p,
            });
        }
        let t = read_rank(&path)?;
        if t.rank != r || t.world_size != p {
            return Err(TraceError::Invalid {
                path,
                detail: format!(
                    "claims rank {} of {}, expected rank {r} of {p}; traces from different runs are mixed",
                    t.rank, t.world_size
                ),
            });
        }
        out.push(t);
    }
    Ok(out)
}

/// Write the application declaration into `dir`.
pub fn write_app(dir: &Path, app: &AppDecl) -> Result<(), TraceError> {
    let mut json = serde_json::to_string_pretty(app).expect("AppDecl serialises");
    json.push('\n');
    write_whole(&dir.join(APP_FILE), json.as_bytes())
}

/// Read and check the application declaration of a trace directory.
pub fn read_app(dir: &Path) -> Result<AppDecl, TraceError> {
    let path = dir.join(APP_FILE);
    if !dir.is_dir() {
        return Err(TraceError::NoDir { dir: dir.into() });
    }
    let text = std::fs::read_to_string(&path).map_err(|err| TraceError::Io {
        path: path.clone(),
        err,
    })?;
    let app: AppDecl = serde_json::from_str(&text).map_err(|e| TraceError::Corrupt {
        path: path.clone(),
        detail: e.to_string(),
    })?;
    if app.version == 0 || app.version > APP_VERSION {
        return Err(TraceError::Version {
            path,
            found: app.version,
            expected: APP_VERSION,
        });
    }
    let sum: u64 = app.dist.iter().sum();
    if sum != app.rows {
        return Err(TraceError::Invalid {
            path,
            detail: format!("dist sums to {sum}, but rows = {}", app.rows),
        });
    }
    if let Some(m) = &app.memory
        && m.budget.len() != app.dist.len()
    {
        return Err(TraceError::Invalid {
            path,
            detail: format!(
                "memory.budget has {} entries, but dist has {} ranks",
                m.budget.len(),
                app.dist.len()
            ),
        });
    }
    if let Some(w) = &app.work_per_row
        && w.len() as u64 != app.rows
    {
        return Err(TraceError::Invalid {
            path,
            detail: format!(
                "work_per_row has {} entries, but rows = {}",
                w.len(),
                app.rows
            ),
        });
    }
    Ok(app)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> RankTrace {
        RankTrace {
            rank: 1,
            world_size: 2,
            pid: 42,
            host: "h".into(),
            files: vec![],
            iterations: vec![Iteration {
                index: 1,
                duration_ns: 100,
                events: vec![
                    Event {
                        op: None,
                        thread: 0,
                        t0_ns: 5,
                        t1_ns: 5,
                        what: What::StageBegin,
                    },
                    Event {
                        op: Some(Op::Send),
                        thread: 0,
                        t0_ns: 10,
                        t1_ns: 20,
                        what: What::Send(Msg {
                            peer: 0,
                            tag: 3,
                            bytes: 800,
                        }),
                    },
                ],
            }],
        }
    }

    #[test]
    fn round_trip() {
        let t = sample();
        let b = encode(&t);
        assert_eq!(&b[..8], b"MHETATRC");
        assert_eq!(decode(&b, Path::new("x")).unwrap(), t);
    }

    #[test]
    fn wrong_version_is_named() {
        let mut b = encode(&sample());
        b[8] = 99;
        let e = decode(&b, Path::new("r.mtrace")).unwrap_err().to_string();
        assert!(e.contains("r.mtrace") && e.contains("version 99"), "{e}");
    }

    #[test]
    fn op_names_and_order() {
        assert_eq!(Op::Send.name(), "MPI_Send");
        assert_eq!(Op::File_iread_at.name(), "MPI_File_iread_at");
        assert!(Op::ALL.iter().enumerate().all(|(i, &o)| o as usize == i));
    }

    #[test]
    fn truncated_is_corrupt() {
        let b = encode(&sample());
        let e = decode(&b[..b.len() - 3], Path::new("r")).unwrap_err();
        assert!(matches!(e, TraceError::Corrupt { .. }), "{e}");
    }

    #[test]
    fn out_of_order_events_rejected() {
        let mut t = sample();
        t.iterations[0].events[1].t1_ns = 1;
        let e = decode(&encode(&t), Path::new("r")).unwrap_err();
        assert!(matches!(e, TraceError::Invalid { .. }), "{e}");
    }

    #[test]
    fn implausible_traces_rejected() {
        let mut t = sample();
        t.iterations[0].duration_ns = MAX_ITERATION_NS + 1;
        let e = decode(&encode(&t), Path::new("r7"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("r7") && e.contains("implausibly long"), "{e}");
        let mut t = sample();
        t.iterations[0].events[1].what = What::Send(Msg {
            peer: 0,
            tag: 3,
            bytes: MAX_EVENT_BYTES + 1,
        });
        let e = decode(&encode(&t), Path::new("r")).unwrap_err().to_string();
        assert!(e.contains("implausibly many"), "{e}");
        let mut t = sample();
        t.iterations[0].events[1].what = What::Send(Msg {
            peer: 2,
            tag: 3,
            bytes: 8,
        });
        let e = decode(&encode(&t), Path::new("r")).unwrap_err().to_string();
        assert!(e.contains("rank 2, outside the world of 2"), "{e}");
    }

    #[test]
    fn read_dir_names_missing_rank() {
        let dir = std::env::temp_dir().join(format!("mheta-trace-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut t = sample();
        t.rank = 0;
        t.world_size = 3;
        write_rank(&dir, &t).unwrap();
        let e = read_dir(&dir).unwrap_err().to_string();
        assert!(e.contains("rank 1 is missing"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
