//! The in-job runtime of mheta, the only planning code that touches MPI:
//! the iteration and stage markers an application calls ([`markers`]),
//! gathering the ranks' summaries of their traces and choosing a
//! distribution inside the job
//! ([`plan_in_run`]: model + GBS on rank 0, broadcast to all), and moving
//! GEN_BLOCK rows among the live ranks ([`redistribute()`]). This file
//! holds what the others share: the on/off switches, the planner's error,
//! whether the interposer is loaded, and gathering the summaries; the
//! planner is in `plan.rs`, moving rows in `redistribute.rs`, and every
//! public item is re-exported here (`mheta_runtime::X`).

use mheta_model::summary::RankSummary;
use mpi::collective::{CommunicatorCollectives, Root};
use mpi::datatype::PartitionMut;
use mpi::topology::{Communicator, SimpleCommunicator};
use std::path::{Path, PathBuf};

pub mod cpu;
pub mod markers;
mod onnode;
mod plan;
mod redistribute;
mod rowbuf;

pub use onnode::{on_node_copy_wanted, on_node_peers, on_node_peers_known, set_on_node_copy};
pub use plan::{Inputs, Planned, RunPlan, SensedLoad, plan_at_root, plan_in_run};
pub use redistribute::{
    MovePlan, RowBlock, move_yield_wanted, redistribute, redistribute_in_place, set_move_yield,
};
pub use rowbuf::{RowBuf, huge_pages_wanted, set_huge_pages};

/// An on/off setting of this process: what the program last set, else
/// what an environment variable says (read once: `1`, `on`, `yes`, `true`
/// or `0`, `off`, `no`, `false`), else a default.
pub(crate) struct Switch {
    /// 0 unset, 1 off, 2 on.
    state: std::sync::atomic::AtomicU8,
    var: &'static str,
    default: bool,
}

impl Switch {
    pub(crate) const fn new(var: &'static str, default: bool) -> Switch {
        Switch {
            state: std::sync::atomic::AtomicU8::new(0),
            var,
            default,
        }
    }

    pub(crate) fn get(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        match self.state.load(Relaxed) {
            1 => false,
            2 => true,
            _ => {
                let on = std::env::var(self.var).map_or(self.default, |v| {
                    match v.trim().to_ascii_lowercase().as_str() {
                        "1" | "on" | "yes" | "true" => true,
                        "0" | "off" | "no" | "false" => false,
                        _ => self.default,
                    }
                });
                self.set(on);
                on
            }
        }
    }

    pub(crate) fn set(&self, on: bool) {
        self.state
            .store(if on { 2 } else { 1 }, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Why the in-run planner could not run. Every rank gets the same error.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("rank {rank} has no trace of the instrumented iteration in {dir}: {why}")]
    NoTrace {
        rank: usize,
        dir: PathBuf,
        why: String,
    },
    #[error("{0}")]
    Plan(String),
}

/// Is `libmheta_interpose.so` loaded into this process?
pub fn interposer_loaded() -> bool {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only reads.
    unsafe { !libc_dlsym(c"mheta_interpose_version".as_ptr()).is_null() }
}

unsafe extern "C" {
    #[link_name = "dlsym"]
    fn dlsym(
        handle: *mut std::ffi::c_void,
        symbol: *const std::ffi::c_char,
    ) -> *mut std::ffi::c_void;
}

unsafe fn libc_dlsym(name: *const std::ffi::c_char) -> *mut std::ffi::c_void {
    // RTLD_DEFAULT is the null handle on glibc.
    // SAFETY: forwarded to the caller's contract.
    unsafe { dlsym(std::ptr::null_mut(), name) }
}

/// The trace directory the interposer writes to (`MHETA_TRACE_DIR`).
pub fn trace_dir() -> PathBuf {
    mheta_trace::env::trace_dir()
}

/// The iterations the interposer records (`MHETA_INSTRUMENT_ITER`,
/// `MHETA_INSTRUMENT_COUNT`; the interposer reports bad values).
pub fn instrumented_iterations() -> std::ops::Range<u64> {
    mheta_trace::env::instrumented_iterations().0
}

/// Every rank's summary of its trace ([`mheta_model::summary`]: what the
/// model reads of it, made on the rank), gathered to rank 0 (the
/// planner); the other ranks get an empty list and keep only their own
/// summary's bytes. A rank whose own trace is missing or stale (another
/// process wrote it) sends nothing, and all ranks fail alike: the sizes
/// go to every rank first (P integers), the summaries to rank 0 alone.
/// Also returns what the gather moved ([`Gathered`]).
pub fn gather_summaries(
    world: &SimpleCommunicator,
    dir: &Path,
) -> Result<(Vec<RankSummary>, Gathered), RuntimeError> {
    let t0 = std::time::Instant::now();
    let me = world.rank() as u32;
    let path = mheta_trace::rank_file(dir, me);
    let mine: Result<(Vec<u8>, u64), String> = match mheta_trace::read_rank(&path) {
        // The file is the trace as encoded.
        Ok(t) if t.pid == std::process::id() => Ok((
            RankSummary::from_trace(&t).encode(),
            std::fs::metadata(&path).map_or(0, |m| m.len()),
        )),
        Ok(t) => Err(format!(
            "{} was written by process {}, not this one (pid {}); stale trace",
            path.display(),
            t.pid,
            std::process::id()
        )),
        Err(e) => Err(e.to_string()),
    };
    let bytes = mine.as_ref().map(|b| b.0.as_slice()).unwrap_or(&[]);
    let p = world.size() as usize;
    let mut sizes = vec![0i32; p];
    world.all_gather_into(&(bytes.len() as i32), &mut sizes[..]);
    if let Some(rank) = sizes.iter().position(|&s| s == 0) {
        let why = match (&mine, rank as u32 == me) {
            (Err(e), true) => e.clone(),
            _ => "see that rank's error".into(),
        };
        return Err(RuntimeError::NoTrace {
            rank,
            dir: dir.into(),
            why,
        });
    }
    let total: u64 = sizes.iter().map(|&s| s as u64).sum();
    let mut summaries = Vec::new();
    if let Some(all) = gather_bytes_at(world, 0, bytes, Some(&sizes)) {
        summaries = (all.iter().enumerate())
            .map(|(r, b)| {
                RankSummary::decode(b)
                    .map_err(|e| RuntimeError::Plan(format!("from rank {r}: {e}")))
            })
            .collect::<Result<_, _>>()?;
    }
    let gathered = Gathered {
        s: t0.elapsed().as_secs_f64(),
        own_trace_bytes: mine.as_ref().map_or(0, |b| b.1),
        own_bytes: bytes.len() as u64,
        total_bytes: total,
        received_bytes: if me == 0 { total } else { 0 },
    };
    Ok((summaries, gathered))
}

/// Every rank's `bytes`, at rank `at`, one buffer a rank in rank order
/// (None elsewhere). `lens`: every rank's length where the ranks know
/// them already; None gathers them first. Collective.
pub fn gather_bytes_at(
    world: &SimpleCommunicator,
    at: usize,
    bytes: &[u8],
    lens: Option<&[i32]>,
) -> Option<Vec<Vec<u8>>> {
    let p = world.size() as usize;
    let root = world.process_at_rank(at as i32);
    if world.rank() as usize != at {
        if lens.is_none() {
            root.gather_into(&(bytes.len() as i32));
        }
        root.gather_varcount_into(bytes);
        return None;
    }
    let lens = match lens {
        Some(l) => l.to_vec(),
        None => {
            let mut l = vec![0i32; p];
            root.gather_into_root(&(bytes.len() as i32), &mut l[..]);
            l
        }
    };
    let displs: Vec<i32> = (lens.iter())
        .scan(0, |acc, &l| {
            let d = *acc;
            *acc += l;
            Some(d)
        })
        .collect();
    let mut all = vec![0u8; lens.iter().map(|&l| l as usize).sum()];
    {
        let mut part = PartitionMut::new(&mut all[..], &lens[..], &displs[..]);
        root.gather_varcount_into_root(bytes, &mut part);
    }
    Some(
        (0..p)
            .map(|r| all[displs[r] as usize..(displs[r] + lens[r]) as usize].to_vec())
            .collect(),
    )
}

/// What [`gather_summaries`] moved and took, on the calling rank.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Gathered {
    /// Seconds from reading its own trace to having them all (rank 0:
    /// decoded).
    pub s: f64,
    /// This rank's trace, encoded: what it would have sent whole.
    pub own_trace_bytes: u64,
    /// This rank's encoded summary: what it sent.
    pub own_bytes: u64,
    /// Every rank's together.
    pub total_bytes: u64,
    /// What this rank received: the total on rank 0, nothing elsewhere.
    pub received_bytes: u64,
}
