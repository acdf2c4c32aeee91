//! The harness shared by mheta's MPI kernels, so that a kernel's file holds
//! only its numerics and its verification (as PETSc keeps `DM` apart from
//! `KSP`). The harness owns the common command line and the checks that
//! fail alike on every rank ([`Common`], [`agree`]); the emulated cluster
//! ([`emulate`]: cgroup CPU quotas, memory limits and disk throttles, with
//! the paper's fallbacks); storage in core or out of core ([`storage`]:
//! the out-of-core rule, ICLA pieces, MPI-IO, prefetching; [`mpiio`]: the
//! thin unsafe layer); 1-D row neighbours and halo exchange ([`grid`]); and
//! the run itself ([`run`], in `driver.rs` as set-up, iterate, move,
//! checkpoint and report steps): iteration and stage markers, timing,
//! `--auto` (`auto.rs`: plan with the model inside the job, then
//! redistribute) and the one-line JSON report, which notes a CPU emulation
//! that is not faithful where a node's ranks outnumber its cores. The
//! options and their checks are in `options.rs`.

use anyhow::{Context, Result, anyhow, bail};
use mheta_model::Dist;
use mheta_trace::AppDecl;
use mpi::collective::{CommunicatorCollectives, Root};
use mpi::topology::{Communicator, SimpleCommunicator};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

pub mod adapt;
pub mod checkpoint;
pub mod comm;
pub mod emulate;
pub mod farm;
pub mod grid;
pub mod harmonic;
pub mod mpiio;
pub mod sensor;
pub mod storage;
pub mod touches;

mod auto;
mod cpu_setup;
mod driver;
mod options;
pub use auto::AutoReport;
pub use cpu_setup::{CpuSetup, cpu_faithful_or_stop, start_cpu_emulation, unfaithful_cpu};
pub use driver::run;
pub use options::{Common, Resolved};

use emulate::Emulation;
use storage::Storage;

/// If any rank failed, every rank returns the first failing rank's error
/// (so that all ranks stop alike and rank 0 can print it). Collective.
pub fn agree<T>(world: &SimpleCommunicator, r: Result<T>) -> Result<T> {
    let msg = match &r {
        Ok(_) => String::new(),
        Err(e) => format!("{e:#}"),
    };
    let p = world.size() as usize;
    let mut lens = vec![0i32; p];
    world.all_gather_into(&(msg.len() as i32), &mut lens[..]);
    let Some(k) = lens.iter().position(|&l| l > 0) else {
        return r;
    };
    let mut buf = if k == world.rank() as usize {
        msg.into_bytes()
    } else {
        vec![0u8; lens[k] as usize]
    };
    world.process_at_rank(k as i32).broadcast_into(&mut buf[..]);
    let text = String::from_utf8_lossy(&buf).into_owned();
    Err(if p > 1 {
        anyhow!("rank {k}: {text}")
    } else {
        anyhow!("{text}")
    })
}

/// Every rank's JSON value, at rank 0 (None elsewhere). Collective.
pub fn gather_json(world: &SimpleCommunicator, v: &Value) -> Option<Vec<Value>> {
    gather_json_at(world, 0, v)
}

/// Every rank's JSON value, at rank `at` (None elsewhere); a value that
/// does not parse arrives as null. Collective.
pub fn gather_json_at(world: &SimpleCommunicator, at: usize, v: &Value) -> Option<Vec<Value>> {
    let bytes = v.to_string().into_bytes();
    let all = mheta_runtime::gather_bytes_at(world, at, &bytes, None)?;
    Some(
        (all.iter())
            .map(|b| serde_json::from_slice(b).unwrap_or(Value::Null))
            .collect(),
    )
}

/// The per-run scratch directory `<dir>/mheta-<app>-<tag>`; each rank
/// removes it on drop (the last one to leave succeeds).
pub struct Scratch {
    pub dir: PathBuf,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

pub(crate) fn make_scratch(base: &Path, app: &str, tag: u32) -> Result<Scratch> {
    if !base.is_dir() {
        bail!("--scratch {}: no such directory", base.display());
    }
    let dir = base.join(format!("mheta-{app}-{tag}"));
    std::fs::create_dir_all(&dir).with_context(|| {
        format!(
            "--scratch {}: cannot create {} there",
            base.display(),
            dir.display()
        )
    })?;
    let probe = dir.join(format!(".probe.{}", std::process::id()));
    std::fs::write(&probe, b"")
        .with_context(|| format!("--scratch {}: not writable", base.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(Scratch { dir })
}

/// Per-iteration seconds this rank spent in out-of-core reads and writes
/// (the storage layer adds to them), and in stages.
pub static READ_NS: AtomicU64 = AtomicU64::new(0);
pub static WRITE_NS: AtomicU64 = AtomicU64::new(0);
pub(crate) static STAGE_NS: AtomicU64 = AtomicU64::new(0);
/// This rank's thread CPU time in stages (the in-run CPU sensor,
/// [`sensor::share_over`]).
pub(crate) static STAGE_CPU_NS: AtomicU64 = AtomicU64::new(0);

/// What a kernel reports about its storage.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct StorageReport {
    /// ICLA passes per sweep (1: in core).
    pub passes: usize,
    pub out_of_core: Vec<String>,
    pub icla_bytes: u64,
    /// Out-of-core files bypass the page cache with O_DIRECT (None: in core).
    #[serde(skip)]
    pub direct: Option<bool>,
}

impl StorageReport {
    /// The report of a storage plan for the arrays `names` (in the plan's
    /// order); `direct`: the direct-I/O state of any out-of-core file.
    pub fn new(plan: &storage::MemPlan, names: &[&str], direct: Option<bool>) -> StorageReport {
        StorageReport {
            passes: plan.passes(),
            out_of_core: names
                .iter()
                .zip(&plan.out_of_core)
                .filter(|(_, o)| **o)
                .map(|(n, _)| n.to_string())
                .collect(),
            icla_bytes: plan.icla_bytes,
            direct,
        }
    }
}

/// Everything a kernel sees of the harness.
pub struct Ctx<'w> {
    pub world: &'w SimpleCommunicator,
    pub rank: usize,
    pub np: usize,
    pub dist: Dist,
    pub emu: Emulation,
    /// Where out-of-core arrays go, and how.
    pub storage: Storage,
    /// Memory for this rank's arrays, bytes (None: unlimited).
    pub mem_budget: Option<u64>,
    pub prefetch: bool,
    pub iters: u64,
    /// The fixed data of the last [`Ctx::plan`], for the declaration.
    fixed: std::cell::Cell<Option<Fixed>>,
}

/// Data a kernel keeps in memory besides its on-disk arrays:
/// `bytes + per_row * rows` (vectors, ghost rows, row pointers).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fixed {
    pub bytes: u64,
    pub per_row: u64,
}

impl Ctx<'_> {
    /// Run `f` as one stage (computation and I/O whose time scales with the
    /// rank's rows): the interposer's stage markers around it, timed.
    pub fn stage<R>(&self, f: impl FnOnce() -> R) -> R {
        let t = Instant::now();
        let cpu = mheta_base::os::thread_cpu_s();
        mheta_runtime::markers::stage_begin();
        let r = f();
        checkpoint::kill_point("iteration", self.rank);
        mheta_runtime::markers::stage_end();
        touches::stage_done();
        STAGE_CPU_NS.fetch_add(
            ((mheta_base::os::thread_cpu_s() - cpu).max(0.0) * 1e9) as u64,
            Ordering::Relaxed,
        );
        STAGE_NS.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        r
    }

    /// The stages that follow run on grid level `l` (multigrid): the
    /// model scales their time with the rows of that level.
    pub fn level(&self, l: usize) {
        mheta_runtime::markers::level(l as u32);
    }

    /// Real work of `units` (the kernel's measure: points, nonzeros): a
    /// rank of relative power p < 1 follows it with extra work until it
    /// has taken 1/p of its CPU time, or, by the clock, it lasts `units`
    /// times the clock's figure (see `emulate`).
    #[track_caller]
    pub fn work<R>(&self, units: u64, f: impl FnOnce() -> R) -> R {
        self.emu.work(units, f)
    }

    /// My rows `[first, first + rows)`.
    pub fn my_rows(&self) -> (usize, usize) {
        let first = self.dist.offsets()[self.rank] as usize;
        (first, self.dist.0[self.rank] as usize)
    }

    /// The out-of-core rule for this rank's arrays (in the order the
    /// kernel declares its on-disk arrays); `fixed` goes into the
    /// declaration so that the model applies the same rule to any
    /// distribution.
    pub fn plan(&self, fixed: Fixed, needs: &[storage::Need]) -> Result<storage::MemPlan> {
        self.fixed.set(Some(fixed));
        let rows = self.dist.0[self.rank];
        let bytes = fixed.bytes + fixed.per_row * rows;
        Ok(storage::plan(self.mem_budget, bytes, needs, self.prefetch)?)
    }

    /// The storage to put array `i` of `plan` on (None: in core).
    pub fn disk_for(&self, plan: &storage::MemPlan, i: usize) -> Option<&Storage> {
        plan.out_of_core[i].then_some(&self.storage)
    }
}

/// A kernel on GEN_BLOCK rows, driven by [`run`].
pub trait Kernel {
    /// The declaration written to `app.json` for the model.
    fn declare(&self, ctx: &Ctx) -> AppDecl;
    /// One iteration of the main loop (between the iteration markers).
    fn iterate(&mut self, ctx: &Ctx) -> Result<()>;
    /// Move every distributed array from `old` to `new` (in core).
    /// Collective; `ctx.dist` is still `old`.
    fn redistribute(&mut self, ctx: &Ctx, new: &Dist) -> Result<()>;
    /// Where the arrays live.
    fn storage(&self) -> StorageReport;
    /// Name the state a checkpoint holds, for saving and loading alike:
    /// every distributed array that changes between iterations, and the
    /// values that carry over ([`checkpoint::State`]). Collective.
    fn state(&mut self, s: &mut checkpoint::State) -> Result<()>;
    /// Verify and report: an object with at least `verified`. Collective.
    fn finish(&mut self, ctx: &Ctx) -> Result<Value>;
}

/// Median of the finite values (None when there are none): one home,
/// [`mheta_base::stats::finite_median`]; kept here for the benches.
pub use mheta_base::stats::finite_median as median;

/// Parse an app's arguments on every rank; `--help`/`--version` print on
/// rank 0 and end the run cleanly (`Ok(None)`).
pub fn parse_args<A: clap::Parser>(world: &SimpleCommunicator) -> Result<Option<A>> {
    match A::try_parse() {
        Ok(a) => Ok(Some(a)),
        Err(e) => {
            if world.rank() == 0 {
                let _ = e.print();
            }
            if e.use_stderr() {
                Err(anyhow!("invalid arguments"))
            } else {
                Ok(None)
            }
        }
    }
}

/// This rank's host: a hash of its host name (an emulated host's own).
pub(crate) fn host_hash() -> u64 {
    fnv(mheta_base::os::hostname().into_bytes().into_iter())
}

fn fnv(bytes: impl Iterator<Item = u8>) -> u64 {
    bytes.fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}

/// Which machine's cores this rank runs on: a hash of the kernel's boot
/// id, which every network and UTS namespace of one kernel shares, so
/// that ranks on emulated hosts of one machine count as sharing its cores
/// (for `--wait` and whether an emulation is faithful); the host name
/// where the boot id cannot be read.
pub fn machine_hash() -> u64 {
    match std::fs::read("/proc/sys/kernel/random/boot_id") {
        Ok(id) => fnv(id.into_iter()),
        Err(_) => host_hash(),
    }
}

/// Run `body` with MPI initialised; print errors from rank 0 and exit
/// non-zero on every rank when it fails.
pub fn main_with_mpi(app: &str, body: impl FnOnce(&SimpleCommunicator) -> Result<()>) -> ! {
    let code = {
        let Some(universe) = mpi::initialize() else {
            eprintln!("{app}: error: MPI was already initialised");
            std::process::exit(2);
        };
        let world = universe.world();
        match body(&world) {
            Ok(()) => 0,
            Err(e) => {
                let text = format!("{e:#}");
                if world.rank() == 0 && !text.is_empty() {
                    eprintln!("{app}: error: {text}");
                }
                2
            }
        }
    };
    std::process::exit(code)
}
