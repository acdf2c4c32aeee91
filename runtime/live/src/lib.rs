//! The in-run side of mheta, the only runtime code that touches MPI:
//! the iteration and stage markers an application calls ([`markers`]),
//! gathering the ranks' traces and choosing a distribution inside the job
//! ([`plan_in_run`]: model + GBS on rank 0, broadcast to all), and moving
//! GEN_BLOCK rows among the live ranks ([`redistribute`]).

use mheta_profile::ClusterProfile;
use mheta_runtime::search::{self, Found};
use mheta_runtime::{Dist, Model};
use mheta_trace::{AppDecl, RankTrace};
use mpi::collective::{CommunicatorCollectives, Root};
use mpi::datatype::PartitionMut;
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, SimpleCommunicator};
use std::path::{Path, PathBuf};

pub mod markers;

/// Tag of redistribution messages.
const REDIST_TAG: i32 = 0x6d68; // "mh"

/// Why the in-run planner could not run. Every rank gets the same error.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
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

/// Every rank's trace, on every rank. A rank whose own trace is missing or
/// stale (another process wrote it) sends nothing, and all ranks fail alike.
pub fn gather_traces(world: &SimpleCommunicator, dir: &Path) -> Result<Vec<RankTrace>, LiveError> {
    let me = world.rank() as u32;
    let path = mheta_trace::rank_file(dir, me);
    let mine: Result<Vec<u8>, String> = match mheta_trace::read_rank(&path) {
        Ok(t) if t.pid == std::process::id() => Ok(mheta_trace::encode(&t)),
        Ok(t) => Err(format!(
            "{} was written by process {}, not this one (pid {}); stale trace",
            path.display(),
            t.pid,
            std::process::id()
        )),
        Err(e) => Err(e.to_string()),
    };
    let bytes = mine.as_ref().map(|b| b.as_slice()).unwrap_or(&[]);
    let p = world.size() as usize;
    let mut sizes = vec![0i32; p];
    world.all_gather_into(&(bytes.len() as i32), &mut sizes[..]);
    if let Some(rank) = sizes.iter().position(|&s| s == 0) {
        let why = match (&mine, rank as u32 == me) {
            (Err(e), true) => e.clone(),
            _ => "see that rank's error".into(),
        };
        return Err(LiveError::NoTrace {
            rank,
            dir: dir.into(),
            why,
        });
    }
    let displs: Vec<i32> = sizes
        .iter()
        .scan(0, |acc, &s| {
            let d = *acc;
            *acc += s;
            Some(d)
        })
        .collect();
    let mut all = vec![0u8; sizes.iter().map(|&s| s as usize).sum()];
    {
        let mut part = PartitionMut::new(&mut all[..], &sizes[..], &displs[..]);
        world.all_gather_varcount_into(bytes, &mut part);
    }
    (0..p)
        .map(|r| {
            let a = displs[r] as usize;
            let b = a + sizes[r] as usize;
            mheta_trace::decode(&all[a..b], &mheta_trace::rank_file(dir, r as u32))
                .map_err(|e| LiveError::Plan(e.to_string()))
        })
        .collect()
}

/// What the in-run planner chose.
#[derive(Clone, Debug)]
pub struct Plan {
    pub dist: Dist,
    /// GBS result (rank 0's; other ranks get the distribution only).
    pub found: Option<Found>,
    /// Predicted iteration time of the distribution that was instrumented.
    pub predicted_current_s: f64,
}

/// Gather traces, run model + GBS on rank 0 with the profile at `profile`,
/// and broadcast the chosen distribution. Collective over `world`.
pub fn plan_in_run(
    world: &SimpleCommunicator,
    app: &AppDecl,
    dir: &Path,
    profile: &Path,
) -> Result<Plan, LiveError> {
    let traces = gather_traces(world, dir)?;
    let p = world.size() as usize;
    let root = world.process_at_rank(0);
    // Rank 0 plans; status and result travel in one broadcast so that every
    // rank fails or proceeds together.
    let mut msg: Vec<u8> = Vec::new();
    let mut found = None;
    let mut current = 0.0;
    if world.rank() == 0 {
        let r = (|| -> Result<(Found, f64), String> {
            let prof = ClusterProfile::load(profile).map_err(|e| e.to_string())?;
            let m = Model::new(&traces, app.clone(), &prof).map_err(|e| e.to_string())?;
            let cur = m
                .predict(&Dist(app.dist.clone()))
                .map_err(|e| e.to_string())?
                .per_iteration_s;
            Ok((search::gbs(&m).map_err(|e| e.to_string())?, cur))
        })();
        match r {
            Ok((f, cur)) => {
                msg.push(1);
                for &s in &f.dist {
                    msg.extend_from_slice(&s.to_le_bytes());
                }
                current = cur;
                found = Some(f);
            }
            Err(e) => {
                msg.push(0);
                msg.extend_from_slice(e.as_bytes());
            }
        }
    }
    let mut len = msg.len() as u64;
    root.broadcast_into(&mut len);
    msg.resize(len as usize, 0);
    root.broadcast_into(&mut msg[..]);
    if msg.first() != Some(&1) {
        return Err(LiveError::Plan(
            String::from_utf8_lossy(&msg[1..]).into_owned(),
        ));
    }
    let dist = Dist(
        msg[1..]
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect(),
    );
    if dist.ranks() != p || dist.total() != app.rows {
        return Err(LiveError::Plan(format!(
            "planner returned {dist}, not a distribution of {} rows over {p} ranks",
            app.rows
        )));
    }
    Ok(Plan {
        dist,
        found,
        predicted_current_s: current,
    })
}

/// Rows `[start, end)` of rank `r` under `d`.
fn range(d: &Dist, r: usize) -> (u64, u64) {
    let start: u64 = d.0[..r].iter().sum();
    (start, start + d.0[r])
}

fn overlap(a: (u64, u64), b: (u64, u64)) -> Option<(u64, u64)> {
    let (s, e) = (a.0.max(b.0), a.1.min(b.1));
    (s < e).then_some((s, e))
}

/// Move a row-distributed array from `old` to `new` (GEN_BLOCK both):
/// `local` holds this rank's old rows of `row_len` values each; the result
/// holds its new rows. Each rank sends every overlap of its old block with
/// another rank's new block, non-blocking, and keeps its own overlap.
/// Collective over `world`.
pub fn redistribute(
    world: &SimpleCommunicator,
    old: &Dist,
    new: &Dist,
    row_len: usize,
    local: &[f64],
) -> Vec<f64> {
    let me = world.rank() as usize;
    let mut out = vec![0.0f64; new.0[me] as usize * row_len];
    redistribute_into(world, old, new, row_len, local, &mut out);
    out
}

/// [`redistribute`] into `out`, which holds exactly this rank's new rows
/// (reuse of an existing buffer spares the page faults of a fresh one).
pub fn redistribute_into(
    world: &SimpleCommunicator,
    old: &Dist,
    new: &Dist,
    row_len: usize,
    local: &[f64],
    out: &mut [f64],
) {
    let me = world.rank() as usize;
    let p = world.size() as usize;
    let mine_old = range(old, me);
    let mine_new = range(new, me);
    assert_eq!(
        local.len() as u64,
        (mine_old.1 - mine_old.0) * row_len as u64,
        "local rows do not match the old distribution"
    );
    assert_eq!(
        out.len() as u64,
        (mine_new.1 - mine_new.0) * row_len as u64,
        "output does not match the new distribution"
    );
    let slice = |rows: (u64, u64), base: u64| {
        ((rows.0 - base) as usize * row_len)..((rows.1 - base) as usize * row_len)
    };
    mpi::request::scope(|scope| {
        let mut sends = Vec::new();
        for j in (0..p).filter(|&j| j != me) {
            if let Some(ov) = overlap(mine_old, range(new, j)) {
                let buf = &local[slice(ov, mine_old.0)];
                sends.push(
                    world
                        .process_at_rank(j as i32)
                        .immediate_send_with_tag(scope, buf, REDIST_TAG),
                );
            }
        }
        let mut recvs = Vec::new();
        let mut rest: &mut [f64] = out;
        for j in 0..p {
            if let Some(ov) = overlap(range(old, j), mine_new) {
                let (head, tail) =
                    std::mem::take(&mut rest).split_at_mut((ov.1 - ov.0) as usize * row_len);
                rest = tail;
                if j == me {
                    head.copy_from_slice(&local[slice(ov, mine_old.0)]);
                } else {
                    recvs.push(
                        world
                            .process_at_rank(j as i32)
                            .immediate_receive_into_with_tag(scope, head, REDIST_TAG),
                    );
                }
            }
        }
        for r in recvs {
            r.wait();
        }
        for s in sends {
            s.wait();
        }
    });
}
