//! Emulating a heterogeneous cluster on one machine with the kernel's real
//! limits, one cgroup (v1) per rank, checked at start; where a controller
//! is missing or not writable the rank falls back to the MHETA paper's
//! method for that resource and the report says so.
//!
//! - **CPU** (`cpu_power`). The ranks of a node must not steal each
//!   other's time, so each gets a `cpu` cgroup quota of its base share of
//!   a core, `base = min(1, cores / ranks)` over the node's ranks (the
//!   report's `base_share`; no quota when base is 1), so the quotas fit
//!   the cores even while every rank computes or spins. Within that
//!   share the relative power is emulated by extra work, the paper's
//!   method: after each piece of real work that took CPU time c a rank
//!   of power p spins until the piece has taken c/p of its CPU time
//!   (wall time would count the time the rank was throttled or waited
//!   for its core as work, see [`Emulation::stretch`]). This is the default
//!   (`--cpu-emulation share`, reported as `cgroup-quota+spin` or `spin`)
//!   because a quota of `base × p` (`--cpu-emulation quota`) stops the
//!   rank in bursts of up to a period wherever it is, inside MPI calls
//!   too, and the quota also pays for Open MPI's busy polling, which a
//!   real slower CPU would not lose. Measured at 2 ranks on het2: under
//!   `quota` a rank at power 0.5 took 1.6–2.1× (jacobi) and 1.8–2.6× (cg)
//!   as long on the same rows, and `--auto` on cg could not see it (model
//!   8.5 ms against 22.4 ms measured); with extra work 1.8–2.1×, and the
//!   model within 5% on every app. The quota's period is the shortest
//!   that keeps every quota at or above the kernel's 1 ms minimum.
//!   When the node has more ranks than cores and mpirun left the ranks
//!   unbound (it does when oversubscribing), each rank also pins itself
//!   to one core (the report's `pinned_core`), so every core carries
//!   ranks whose quotas sum to at most one core; the ranks are spread so
//!   that each core's powers sum about alike ([`core_slots`]), which
//!   matters under `paced`, where a busy rank takes base × power of its
//!   core. Unpinned, the scheduler put three quota'd ranks on one core at
//!   times: at 4 ranks on 2 cores (DC, jacobi N = 8192) ranks of equal
//!   power computed equal rows in 96–132 ms and the study's mean diff was
//!   21%; pinned, 81–90 ms and 6.7%. On such a node a rank's work (real
//!   and extra) also runs under `SCHED_IDLE` and the rest of the rank
//!   under the normal policy (the report's `work_policy`, see
//!   [`Emulation::work`]), so that an MPI call never waits for the core
//!   while the rank beside it computes.
//!   `--cpu-emulation clock` times pieces by their size, not their CPU
//!   time: a piece of u units ([`Emulation::work`]'s measure, declared by
//!   the kernel: points, nonzeros) lasts u × ns / (base × power), waited
//!   out like `paced`, with ns one figure or one per call site ([`Clock`],
//!   from a calibration run's report). The other modes scale the real
//!   work's CPU time, and this host's speed changes by itself (the same
//!   cache-resident loop alone on a vCPU took 70 or 110–135 µs, switching
//!   within seconds, per vCPU): jacobi's rank at power 0.5 computed the
//!   same rows in 19–33 ms from run to run under `spin`, 66.08–66.09 ms
//!   by the clock. Pieces whose real work outlasted their time are counted
//!   (the report's `cpu_overruns`, `cpu_overrun_s`), and later pieces make
//!   the overrun up ([`repay`]; what they never did:
//!   `cpu_overrun_unpaid_s`).
//! - **Memory** (`mem_limit_mb`): the storage rule keeps the rank's arrays
//!   within the limit, and a `memory` cgroup enforces it. This kernel
//!   refuses `memory.move_charge_at_immigrate`, so pages charged before a
//!   rank joins stay outside; the rank joins right after its arrays are
//!   built, and the group bounds everything it allocates from then on,
//!   page cache included, to what the limit leaves (limit minus the
//!   memory the arrays took) plus 32 MiB of slack for MPI and the runtime.
//!   Fallback: the self-imposed limit of the storage rule alone (the
//!   paper's method).
//! - **Disk** (`io_factor`), `--disk-emulation paced` (the default): a
//!   rank's disk moves `R / io_factor` bytes per second (`--disk-mb-s R`,
//!   default 100 MB/s; every rank is paced when any io_factor differs).
//!   Out-of-core I/O is direct (`O_DIRECT`), so every transfer really
//!   reaches the disk (this machine kind: ~0.9 GB/s); then the MPI
//!   library's `pread`/`pwrite` (and asynchronous reads) on our files wait
//!   until `bytes × io_factor / R` has passed since they began
//!   ([`crate::mpiio::pace`]), so the extra time falls inside the MPI-IO
//!   calls (a prefetch's inside `MPI_Wait`), in proportion to the bytes.
//!   The two other methods are options because they are not exact here:
//!   - `throttle`: a `blkio` throttle of `R / io_factor` per rank (the
//!     kernel's limit). blk-throttle always allows a group `R × 100 ms`
//!     at once (its slice is fixed at 100 ms for this disk), so a rank
//!     that waited for slower ranks reads its next `R × 100 ms` bytes at
//!     disk speed: measured at 2 ranks on IO (io_factor 1 and 4), the
//!     read-time ratio was 4.5 for jacobi and lanczos, whose fast rank
//!     reads 19–67 MB per iteration, but 17–25 for sor, cg, wavefront and
//!     mg, whose fast rank reads a few MB between waits;
//!   - `scaled`: the paper's method, each read and write moves
//!     `io_factor / min(io_factor)` times its bytes; here the ranks share
//!     one disk queue and a slow-disk rank's larger requests delay the
//!     others' (measured: with 4× the bytes, both ranks of a 2-rank
//!     lanczos read for ~100 ms).

use crate::Resolved;
use mheta_hosts::cores::{core_slots, free_cpus};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::panic::Location;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Throttled disk rate of a rank at `io_factor` 1, MB/s.
pub const DEFAULT_DISK_MB_S: f64 = 100.0;
/// Slack above the memory limit for MPI buffers and the runtime.
pub const MEM_SLACK: u64 = 32 << 20;

/// What ran, per resource; goes into the JSON report.
#[derive(Serialize, Clone, Debug, Default)]
pub struct EmulationReport {
    /// "cgroup-quota", "spin" (extra work) or "none".
    pub cpu: String,
    /// Share of a core for `cpu_power` 1.0.
    pub base_share: f64,
    pub cpu_period_us: u64,
    /// The core this rank pinned itself to (oversubscribed node, ranks
    /// left unbound by mpirun).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pinned_core: Option<usize>,
    /// "idle": the rank's real and extra work runs under `SCHED_IDLE`
    /// (oversubscribed node), everything else, MPI included, under the
    /// normal policy ([`Emulation::work`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work_policy: Option<String>,
    /// The `cpu` cgroup the machine's ranks of this job share, so that
    /// `SCHED_IDLE` work yields to every neighbour's MPI call (see
    /// [`Machine::job`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_group: Option<String>,
    /// `--cpu-emulation clock`: nanoseconds a unit of work lasts at
    /// `cpu_power` 1 and a whole core.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_ns_per_unit: Option<f64>,
    /// "cgroup-limit", "self-limit" (storage rule only) or "none".
    pub memory: String,
    /// "paced", "blkio-throttle", "scaled-io" or "none".
    pub disk: String,
    /// Paced or throttled: the rate of a rank at io_factor 1, MB/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_mb_s: Option<f64>,
    /// How the page cache is kept out of out-of-core I/O: "o_direct",
    /// "fadvise" or "n/a".
    pub cache: String,
    /// How ranks wait: "poll" or "sleep" (`--wait`).
    pub wait: String,
    /// Why a fallback was taken.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// `--cpu-ns-per-unit` (`--cpu-emulation clock`): nanoseconds a unit of
/// work lasts at `cpu_power` 1 on a whole core, for every piece of work or
/// per call site of [`Emulation::work`] (`file:line`, from a calibration
/// run's report: see [`Clock::from_report`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Clock {
    Every(f64),
    Sites(BTreeMap<String, f64>),
}

impl Clock {
    /// Per-site figures from an app's JSON report (its last line that
    /// starts with `{`): each site's largest `ranks[].cpu_sites[site]
    /// .ns_per_unit` over the ranks, times `headroom`.
    pub fn from_report(text: &str, headroom: f64) -> Result<Clock, String> {
        let line = text
            .lines()
            .rev()
            .find(|l| l.trim_start().starts_with('{'))
            .ok_or("no JSON report line in it")?;
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("not a JSON report: {e}"))?;
        let mut m: BTreeMap<String, f64> = BTreeMap::new();
        for r in v["ranks"].as_array().ok_or("no ranks[] in the report")? {
            let Some(sites) = r["cpu_sites"].as_object() else {
                continue;
            };
            for (site, s) in sites {
                if let Some(ns) = s["ns_per_unit"].as_f64()
                    && ns.is_finite()
                    && ns > 0.0
                {
                    let e = m.entry(site.clone()).or_insert(0.0);
                    *e = e.max(ns * headroom);
                }
            }
        }
        if m.is_empty() {
            return Err("no ranks[].cpu_sites with a positive ns_per_unit (an app's --json report of a run that did work is expected)".into());
        }
        Ok(Clock::Sites(m))
    }
}

/// A call site's real work (per rank).
#[derive(Default)]
struct Site {
    pieces: u64,
    units: u64,
    ns: u64,
    overruns: u64,
    overrun_s: f64,
    /// The clock's nanoseconds per unit for this site.
    clock_ns: Option<f64>,
}

/// A call site's real work, reported.
#[derive(Serialize, Clone, Debug)]
pub struct SiteReport {
    /// CPU nanoseconds of real work per unit.
    pub ns_per_unit: Option<f64>,
    pub pieces: u64,
    /// By the clock: pieces whose real work outlasted their time, and by
    /// how long in all, seconds.
    pub overruns: u64,
    pub overrun_s: f64,
    /// By the clock: the figure this site ran at (None: paced by CPU time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock_ns_per_unit: Option<f64>,
}

/// A rank's real work: per call site and in all.
#[derive(Serialize, Clone, Debug, Default)]
pub struct WorkStats {
    pub ns_per_unit: Option<f64>,
    pub pieces: u64,
    pub overruns: u64,
    pub overrun_s: f64,
    /// By the clock: overrun not yet made up by later pieces, seconds.
    pub overrun_unpaid_s: f64,
    pub sites: BTreeMap<String, SiteReport>,
}

fn site_name(at: &Location) -> String {
    format!("{}:{}", at.file(), at.line())
}

/// One controller's group for this rank; removed on drop (the rank
/// moves itself back to the parent first).
struct Group {
    dir: PathBuf,
    parent: PathBuf,
}

impl Drop for Group {
    fn drop(&mut self) {
        let pid = std::process::id().to_string();
        let _ = std::fs::write(self.parent.join("cgroup.procs"), &pid);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The mount point of a v1 controller plus this process's path in it.
fn own_cgroup(controller: &str) -> Option<PathBuf> {
    let mount = Path::new("/sys/fs/cgroup").join(controller);
    if !mount.join("cgroup.procs").exists() {
        return None;
    }
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let rel = text.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, ctrls, path) = (f.next()?, f.next()?, f.next()?);
        ctrls
            .split(',')
            .any(|c| c == controller)
            .then(|| path.to_string())
    })?;
    Some(mount.join(rel.trim_start_matches('/')))
}

fn pid_alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// A new group `mheta-<pid>` under this process's own group of
/// `controller`, after removing empty groups of dead mheta processes.
fn make_group(controller: &str, settings: &[(&str, String)]) -> Result<Group, String> {
    join_group(
        controller,
        &format!("mheta-{}", std::process::id()),
        settings,
    )
}

/// Join group `name` under this process's own group of `controller`,
/// made (with `settings`) if it is not there yet, after removing empty
/// groups of dead mheta processes (`mheta-PID`, `mheta-job-PID`). The
/// last member to leave removes it ([`Group`]'s drop).
fn join_group(controller: &str, name: &str, settings: &[(&str, String)]) -> Result<Group, String> {
    let parent =
        own_cgroup(controller).ok_or_else(|| format!("cgroup v1 {controller} not mounted"))?;
    if let Ok(rd) = std::fs::read_dir(&parent) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name
                .strip_prefix("mheta-")
                .map(|p| p.strip_prefix("job-").unwrap_or(p))
                .and_then(|p| p.parse::<u32>().ok())
                && !pid_alive(pid)
            {
                let _ = std::fs::remove_dir(e.path());
            }
        }
    }
    let dir = parent.join(name);
    let g = Group {
        dir: dir.clone(),
        parent,
    };
    // Twice: a member of another job may remove an empty group between
    // its making and the joining.
    let mut last = String::new();
    for _ in 0..2 {
        let joined = std::fs::create_dir_all(&dir)
            .map_err(|e| format!("{}: {e}", dir.display()))
            .and_then(|()| {
                for (file, value) in settings {
                    std::fs::write(dir.join(file), value)
                        .map_err(|e| format!("{}: {e}", dir.join(file).display()))?;
                }
                std::fs::write(dir.join("cgroup.procs"), std::process::id().to_string())
                    .map_err(|e| format!("{}: {e}", dir.join("cgroup.procs").display()))
            });
        match joined {
            Ok(()) => return Ok(g),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// This rank's machine: the ranks of the job that share its cores.
pub struct Machine<'a> {
    /// Their CPU powers, in rank order.
    pub powers: &'a [f64],
    /// This rank's index among them.
    pub local: usize,
    /// The job's key (rank 0's pid) when the machine's ranks started in
    /// different sessions (one launcher daemon per emulated host), each
    /// in an autogroup of its own; None when they share one. Crowded
    /// ranks with a key and without a `cpu` group of their own share the
    /// group `mheta-job-KEY`: `SCHED_IDLE` work yields to a neighbour's
    /// MPI call only within one task group. Ranks of one session stay in
    /// it, so that load started beside them (`mheta load`) still shares
    /// the cores with them task by task. On net4 (jacobi N = 2048,
    /// `clock`, 4 ranks on 2 cores, 2026-11-27) a rank waited 2.6-3.7 ms
    /// for its neighbour's work in about one iteration in five, and the
    /// median iteration of the search's distribution went from
    /// 13.8-14.2 ms to 12.8-13.0 ms in one group.
    pub job: Option<u64>,
}

/// This rank's emulation: the groups it joined and the fallbacks.
pub struct Emulation {
    pub report: EmulationReport,
    /// Spin fallback: extra work per unit of real work.
    extra_per_unit: f64,
    /// Paced CPU (paced and clock): a piece of work that took CPU time c
    /// lasts c × this, 1 / (base × power); by the clock, a piece of u
    /// units lasts u × ns × this.
    cpu_pace: f64,
    /// CPU by the clock: nanoseconds per unit at power 1 on a whole core.
    clock: Option<Clock>,
    /// Real work so far, per call site of [`Emulation::work`].
    sites: Mutex<HashMap<&'static Location<'static>, Site>>,
    /// By the clock: seconds the rank's pieces have overrun their time
    /// and not yet made up ([`repay`]).
    debt_s: Mutex<f64>,
    /// Scaled-I/O factor.
    pub io_scale: f64,
    /// Paced disk: seconds per byte.
    pub pace: f64,
    cpu: Option<Group>,
    mem: Option<Group>,
    _blkio: Option<Group>,
    mem_limit: Option<u64>,
    /// Run work under `SCHED_IDLE` (more ranks than cores).
    idle_work: bool,
}

/// Pin this process to one of the CPUs it may run on: local rank `local`
/// of the node's ranks (powers `powers`) gets the CPU of its
/// [`core_slots`] slot. Nothing when mpirun already bound it to fewer
/// than all online CPUs. Returns the CPU.
fn pin(local: usize, powers: &[f64]) -> Option<usize> {
    let cpus = free_cpus()?;
    let cpu = cpus[core_slots(powers, cpus.len())[local]];
    // SAFETY: cpu_set_t is plain data; sched_setaffinity reads only the
    // set whose size we pass.
    unsafe {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut one);
        // Every thread of the rank (MPI's helper threads too).
        let tids: Vec<i32> = std::fs::read_dir("/proc/self/task")
            .map(|d| {
                d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        for t in tids {
            libc::sched_setaffinity(t, size, &one);
        }
        (libc::sched_setaffinity(0, size, &one) == 0).then_some(cpu)
    }
}

/// Put the calling thread under `SCHED_IDLE` (true) or back under the
/// normal policy (false); whether the kernel took it.
fn idle_policy(on: bool) -> bool {
    let param = libc::sched_param { sched_priority: 0 };
    let policy = if on {
        libc::SCHED_IDLE
    } else {
        libc::SCHED_OTHER
    };
    // SAFETY: pid 0 is the calling thread; `param` is read only.
    unsafe { libc::sched_setscheduler(0, policy, &param) == 0 }
}

/// By the clock, how long a piece of time `t` whose real work took
/// `wall` lasts, given the rank's `debt` (seconds): a piece that overran
/// adds its overrun to the debt, and a later piece with time to spare
/// pays it back, ending that much sooner (never before its real work). A
/// rank whose pieces the machine delays now and then (more ranks than
/// cores, a burst of another rank's network work) thus keeps the clock's
/// power over its run, as a cluster's node would; without it a scaling
/// fit from few ranks reads the overruns of many crowded ranks as
/// communication. On grid2 (mg N = 2047 on 1023 rows, ranks at power
/// 0.2, 2 cores, 2026-11-27) every rank overran by 13-14 ms per
/// iteration at 8 ranks and 1-2 ms at 4; with the debt paid back its
/// time in stages was 126 ms per iteration at 8 ranks and 124 ms at 4.
/// What is never paid back is the report's
/// `cpu_overrun_unpaid_s`.
fn repay(debt: &mut f64, t: f64, wall: f64) -> f64 {
    if wall > t {
        *debt += wall - t;
        return t;
    }
    let pay = debt.min(t - wall);
    *debt -= pay;
    t - pay
}

/// Sleep until `t`, then spin until it is exactly `t` (sleeps overshoot
/// by tens of microseconds here). Spin, not yield: a yield hands the core
/// to a neighbour that computes, which can keep it for a scheduler tick
/// (4 ms here).
fn wait_until(t: std::time::Instant) {
    const SPIN: std::time::Duration = std::time::Duration::from_micros(150);
    let now = std::time::Instant::now();
    if t > now + SPIN {
        std::thread::sleep(t - now - SPIN);
    }
    while std::time::Instant::now() < t {
        std::hint::spin_loop();
    }
}

pub use mheta_runtime::cpu::{spin_extra, thread_cpu};

fn vm_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Block device (major:minor) holding `dir`; partitions map to their disk.
fn block_device(dir: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    if !sys.exists() {
        return None;
    }
    // A partition's parent directory in sysfs is its disk.
    if sys.join("partition").exists() {
        let disk = std::fs::canonicalize(&sys).ok()?.parent()?.join("dev");
        return std::fs::read_to_string(disk)
            .ok()
            .map(|s| s.trim().to_string());
    }
    Some(format!("{major}:{minor}"))
}

/// A blkio cgroup throttling reads and writes on the block device under
/// `scratch` to `bps` bytes a second.
fn throttle(scratch: &Path, bps: u64) -> Result<Group, String> {
    let dev = block_device(scratch)
        .ok_or_else(|| format!("no block device under {}", scratch.display()))?;
    make_group(
        "blkio",
        &[
            ("blkio.throttle.read_bps_device", format!("{dev} {bps}")),
            ("blkio.throttle.write_bps_device", format!("{dev} {bps}")),
        ],
    )
}

impl Emulation {
    /// Set up this rank's emulation. `node_powers`: the `cpu_power` of the
    /// ranks that share this rank's node (itself included); `local`: this
    /// rank's index among them.
    /// `node_powers` and `local`: the CPU powers of the ranks on this
    /// rank's node (its host) and its place among them, which set its
    /// base share; `machine`: the same on the machine whose cores they
    /// all share (emulated hosts of one machine included), which says
    /// whether the ranks are crowded (pinned, work under `SCHED_IDLE`).
    pub fn start(
        r: &Resolved,
        node_powers: &[f64],
        local: usize,
        machine: Machine<'_>,
        scratch: &Path,
    ) -> Emulation {
        let mut rep = EmulationReport {
            cache: "n/a".into(),
            ..Default::default()
        };
        // Online CPUs, not this process's affinity (mpirun binds ranks).
        // SAFETY: sysconf only reads a system value.
        let cores = (unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }).max(1) as f64;
        // "share": every rank of the node may be busy at once (a slower
        // rank spins), so the quotas split the cores evenly. "quota": a
        // rank's quota is base × power, and those fit the cores when
        // base = cores / Σ power.
        let base = if r.cpu_mode == "quota" {
            (cores / node_powers.iter().sum::<f64>()).min(1.0)
        } else {
            (cores / node_powers.len() as f64).min(1.0)
        };
        let mut e = Emulation {
            report: rep.clone(),
            extra_per_unit: 0.0,
            cpu_pace: 0.0,
            clock: None,
            sites: Mutex::new(HashMap::new()),
            debt_s: Mutex::new(0.0),
            io_scale: 1.0,
            pace: 0.0,
            cpu: None,
            mem: None,
            _blkio: None,
            mem_limit: None,
            idle_work: false,
        };
        rep.base_share = base;
        let methods = e.start_cpu(r, node_powers, base, &mut rep);
        // Crowded by the machine: one rank per emulated host on a 2-core
        // machine still has its neighbours' ranks on its cores.
        if machine.powers.len() as f64 > cores {
            e.crowded(machine.powers, machine.local, &mut rep);
            e.share_group(&machine, &mut rep);
        } else if node_powers.len() as f64 > cores {
            e.crowded(node_powers, local, &mut rep);
        }
        rep.cpu = if methods.is_empty() {
            "none".into()
        } else {
            methods.join("+")
        };
        rep.memory = if r.mem_limit.is_some() {
            "self-limit".into()
        } else {
            "none".into()
        };
        e.mem_limit = r.mem_limit;
        e.start_disk(r, scratch, &mut rep);
        e.report = rep;
        e
    }

    /// The CPU emulation of `--cpu-emulation`: "share" (default) gives
    /// every rank its base share of a core with a quota (only needed when
    /// the node's ranks could otherwise steal each other's time) and
    /// emulates the relative power by extra work; "quota" puts base ×
    /// power in the quota; "spin" uses extra work only; "paced" and
    /// "clock" time the pieces of work. The methods used.
    fn start_cpu(
        &mut self,
        r: &Resolved,
        node_powers: &[f64],
        base: f64,
        rep: &mut EmulationReport,
    ) -> Vec<&'static str> {
        let spec = &r.spec;
        let powers_differ = node_powers.iter().any(|&p| p != 1.0);
        let (want_quota, share) = match r.cpu_mode.as_str() {
            "quota" => (powers_differ || base < 1.0, base * spec.cpu_power),
            "spin" | "paced" | "clock" => (false, 1.0),
            _ => (base < 1.0, base),
        };
        let spin = (r.cpu_mode == "share" || r.cpu_mode == "spin") && spec.cpu_power != 1.0;
        let mut methods = self.timed_cpu(r, base, rep);
        if want_quota {
            let min_share = if r.cpu_mode == "quota" {
                node_powers.iter().fold(f64::MAX, |a, &p| a.min(p)) * base
            } else {
                base
            };
            methods.push(self.cpu_quota(share, min_share, spec.cpu_power, rep));
        } else {
            rep.base_share = if r.cpu_mode == "spin" { 1.0 } else { base };
        }
        if spin && !methods.contains(&"spin") {
            self.extra_per_unit = (1.0 / spec.cpu_power - 1.0).max(0.0);
            methods.push("spin");
        }
        methods
    }

    /// "paced": MHETA-style emulation by time, like the paced disk: a
    /// piece of work that took CPU time c lasts c / (base × power).
    /// "clock": a piece of u units lasts u × ns / (base × power), whatever
    /// the host's speed did meanwhile.
    fn timed_cpu(
        &mut self,
        r: &Resolved,
        base: f64,
        rep: &mut EmulationReport,
    ) -> Vec<&'static str> {
        let power = r.spec.cpu_power;
        let mut methods = Vec::new();
        if r.cpu_mode == "paced" {
            let f = 1.0 / (base * power);
            if f > 1.0 + 1e-12 {
                self.cpu_pace = f;
                methods.push("paced");
            }
        }
        if r.cpu_mode == "clock" {
            self.clock = r.cpu_clock.clone();
            self.cpu_pace = 1.0 / (base * power);
            rep.cpu_ns_per_unit = match &r.cpu_clock {
                Some(Clock::Every(ns)) => Some(*ns),
                _ => None,
            };
            methods.push("clock");
        }
        methods
    }

    /// A `cpu` cgroup with `share` of a core (its period fits the
    /// smallest share `min_share` of the node); without one, extra work
    /// for the relative `power` and ranks time-share the cores. The
    /// method used.
    fn cpu_quota(
        &mut self,
        share: f64,
        min_share: f64,
        power: f64,
        rep: &mut EmulationReport,
    ) -> &'static str {
        let period = ((1000.0 / min_share).ceil() as u64).clamp(1000, 100_000);
        let quota = ((share * period as f64).round() as u64).max(1000);
        match make_group(
            "cpu",
            &[
                ("cpu.cfs_period_us", period.to_string()),
                ("cpu.cfs_quota_us", quota.to_string()),
            ],
        ) {
            Ok(g) => {
                rep.cpu_period_us = period;
                self.cpu = Some(g);
                "cgroup-quota"
            }
            Err(why) => {
                rep.notes.push(format!(
                    "cpu: {why}; extra work instead, and ranks time-share the cores"
                ));
                rep.base_share = 1.0;
                self.extra_per_unit = (1.0 / power - 1.0).max(0.0);
                "spin"
            }
        }
    }

    /// More ranks than cores on the node: a quota'd or timed rank pins
    /// itself to one core, and work runs under `SCHED_IDLE` (only when the
    /// way back is allowed too: an unprivileged thread may be refused the
    /// normal policy by RLIMIT_NICE).
    fn crowded(&mut self, node_powers: &[f64], local: usize, rep: &mut EmulationReport) {
        if rep.cpu_period_us > 0 || self.cpu_pace > 0.0 {
            rep.pinned_core = pin(local, node_powers);
        }
        if idle_policy(true) && idle_policy(false) {
            self.idle_work = true;
            rep.work_policy = Some("idle".into());
        } else {
            idle_policy(false);
            rep.notes.push(
                "cpu: cannot switch between SCHED_IDLE and the normal policy; work runs under the normal policy".into(),
            );
        }
    }

    /// A crowded machine's ranks from different sessions, without a `cpu`
    /// group of their own, join one group for the job ([`Machine::job`]),
    /// weighted as many ranks.
    fn share_group(&mut self, m: &Machine<'_>, rep: &mut EmulationReport) {
        let Some(job) = m.job else { return };
        if self.cpu.is_some() || !self.idle_work {
            return;
        }
        let name = format!("mheta-job-{job}");
        let shares = (1024 * m.powers.len()).to_string();
        match join_group("cpu", &name, &[("cpu.shares", shares)]) {
            Ok(g) => {
                self.cpu = Some(g);
                rep.shared_group = Some(name);
            }
            Err(why) => rep.notes.push(format!(
                "cpu: {why}; ranks started in other sessions (emulated hosts) keep their own autogroups, and a neighbour's work may hold an MPI call back"
            )),
        }
    }

    /// The disk emulation of `--disk-emulation` when the ranks' disks
    /// differ or `--disk-mb-s` was given: scaled I/O, a blkio throttle, or
    /// paced I/O (the default, and the throttle's fallback).
    fn start_disk(&mut self, r: &Resolved, scratch: &Path, rep: &mut EmulationReport) {
        let spec = &r.spec;
        let rate = r.disk_mb_s;
        let wanted = r.io_factors_differ || r.throttle_always;
        let paced = |rep: &mut EmulationReport, e: &mut Emulation| {
            rep.disk = "paced".into();
            rep.disk_mb_s = Some(rate);
            e.pace = spec.io_factor / (rate * 1e6);
        };
        match r.disk_mode.as_str() {
            _ if !wanted => rep.disk = "none".into(),
            "scaled" => {
                rep.disk = "scaled-io".into();
                self.io_scale = spec.io_factor / r.min_io_factor;
            }
            "throttle" => match throttle(scratch, (rate * 1e6 / spec.io_factor) as u64) {
                Ok(g) => {
                    rep.disk = "blkio-throttle".into();
                    rep.disk_mb_s = Some(rate);
                    self._blkio = Some(g);
                }
                Err(why) => {
                    rep.notes.push(format!("disk: {why}; paced I/O instead"));
                    paced(rep, self);
                }
            },
            _ => paced(rep, self),
        }
    }

    /// After the arrays are built: join a memory cgroup bounding what this
    /// rank allocates from now on to what the limit leaves plus slack
    /// (module docs).
    pub fn limit_memory(&mut self, rss_at_start: u64) {
        let Some(limit) = self.mem_limit else {
            return;
        };
        let taken = vm_rss().saturating_sub(rss_at_start);
        let bound = limit.saturating_sub(taken) + MEM_SLACK;
        match make_group("memory", &[("memory.limit_in_bytes", bound.to_string())]) {
            Ok(g) => {
                self.report.memory = "cgroup-limit".into();
                self.mem = Some(g);
            }
            Err(why) => self
                .report
                .notes
                .push(format!("memory: {why}; the storage rule's limit only")),
        }
    }

    /// Resident memory now (for [`Emulation::limit_memory`]).
    pub fn rss() -> u64 {
        vm_rss()
    }

    /// Note how out-of-core files bypass the page cache.
    pub fn set_cache(&mut self, direct: Option<bool>) {
        self.report.cache = match direct {
            None => "n/a".into(),
            Some(true) => "o_direct".into(),
            Some(false) => "fadvise".into(),
        };
    }

    /// Count a piece of real work at `at` of `units` that took `cpu`
    /// seconds of CPU time and, paced, `wall` seconds so far; by the
    /// clock, how long it lasts (None: the clock has no figure for this
    /// site), and an overrun when the work alone took longer.
    fn count(
        &self,
        at: &'static Location<'static>,
        units: u64,
        cpu: f64,
        wall: Option<f64>,
    ) -> Option<f64> {
        let mut sites = self.sites.lock().unwrap_or_else(|p| p.into_inner());
        let site = sites.entry(at).or_insert_with(|| Site {
            clock_ns: match &self.clock {
                Some(Clock::Every(ns)) => Some(*ns),
                Some(Clock::Sites(m)) => m.get(&site_name(at)).copied(),
                None => None,
            },
            ..Site::default()
        });
        site.pieces += 1;
        site.units += units;
        site.ns += (cpu.max(0.0) * 1e9) as u64;
        let lasts = site
            .clock_ns
            .map(|ns| units as f64 * ns * 1e-9 * self.cpu_pace);
        if let (Some(t), Some(w)) = (lasts, wall)
            && w > t
        {
            site.overruns += 1;
            site.overrun_s += w - t;
        }
        lasts
    }

    /// The real work so far, per call site (`file:line`) and in all.
    pub fn work_stats(&self) -> WorkStats {
        let sites = self.sites.lock().unwrap_or_else(|p| p.into_inner());
        let mut w = WorkStats::default();
        let (mut units, mut ns) = (0u64, 0u64);
        for (at, s) in sites.iter() {
            units += s.units;
            ns += s.ns;
            w.pieces += s.pieces;
            w.overruns += s.overruns;
            w.overrun_s += s.overrun_s;
            w.sites.insert(
                site_name(at),
                SiteReport {
                    ns_per_unit: (s.units > 0).then(|| s.ns as f64 / s.units as f64),
                    pieces: s.pieces,
                    overruns: s.overruns,
                    overrun_s: s.overrun_s,
                    clock_ns_per_unit: s.clock_ns,
                },
            );
        }
        w.ns_per_unit = (units > 0).then(|| ns as f64 / units as f64);
        w.overrun_unpaid_s = *self.debt_s.lock().unwrap_or_else(|p| p.into_inner());
        w
    }

    /// Extra work for a relative power p < 1: after real work that took
    /// `c` of this thread's CPU time since `start_cpu` (from
    /// [`thread_cpu`]), spin until it has taken `c / p`.
    ///
    /// CPU time, not wall time: under a quota, or on a core shared with
    /// other ranks, a piece's wall time includes the time the rank was
    /// throttled or waited for the core, and stretching that as if it were
    /// work made the slow ranks slower still, by chance. Measured at 4
    /// ranks on 2 cores (jacobi N = 2048, every rank at power 0.5 and a
    /// 0.5-core quota): the same 512 rows took 4.2–9.1 ms per rank when
    /// stretched by wall time, where 4.2 ms is right.
    pub fn stretch(&self, start_cpu: f64) {
        spin_extra(start_cpu, self.extra_per_unit);
    }

    /// Run `f`, real work of `units`: followed by extra work when the
    /// rank's relative power is below 1 (spin, share), or paced by its
    /// CPU time (paced) or by its units (clock).
    ///
    /// On a node with more ranks than cores the work runs under
    /// `SCHED_IDLE`, so a rank of the same core that needs the CPU for
    /// anything else (an MPI call, a test between sleeps) takes it at
    /// once. Without that, ranks sharing a core held each other off for
    /// a scheduler slice: at 4 ranks on 2 cores (DC, jacobi N = 8192,
    /// paced) the slowest rank's halo `MPI_Test` took 1.7 and 3.3 ms in
    /// two recorded iterations, time no cluster with a CPU per rank
    /// would lose and the model does not predict. Work is CPU time
    /// either way, and the pacing and extra work count CPU time.
    #[track_caller]
    pub fn work<R>(&self, units: u64, f: impl FnOnce() -> R) -> R {
        let at = Location::caller();
        let idle = |on: bool| {
            if self.idle_work {
                idle_policy(on);
                if on {
                    // A thread that woke under the normal policy keeps the
                    // slice it was given then, SCHED_IDLE or not, and a
                    // neighbour waking for an MPI test waited for it: ranks
                    // sleeping in a halo wait woke 1.3-2.3 ms late (4 ranks
                    // on 2 cores, DC, jacobi, paced). Yielding ends that
                    // slice, so the next wake-up preempts the work. Measured
                    // with a 2 ms SCHED_IDLE piece after a 4 ms sleep on a
                    // shared core: a neighbour's 50 us sleeps ran over 1 ms
                    // 153 times in 20000 without the yield, 5 times with it.
                    // SAFETY: no arguments; it only reschedules.
                    unsafe { libc::sched_yield() };
                }
            }
        };
        if self.cpu_pace > 0.0 {
            let (c0, w0) = (thread_cpu(), std::time::Instant::now());
            idle(true);
            let r = f();
            let c = thread_cpu() - c0;
            // By the clock, or by its CPU time (paced, and a site the
            // clock has no figure for).
            let wall = w0.elapsed().as_secs_f64();
            let lasts = match self.count(at, units, c, Some(wall)) {
                Some(t) => repay(
                    &mut self.debt_s.lock().unwrap_or_else(|p| p.into_inner()),
                    t,
                    wall,
                ),
                None => c * self.cpu_pace,
            };
            // The paced rest is waited out under the normal policy, so
            // the rank takes its core back on time from a neighbour that
            // computes.
            idle(false);
            wait_until(w0 + std::time::Duration::from_secs_f64(lasts));
            return r;
        }
        idle(true);
        let t = thread_cpu();
        let r = f();
        self.count(at, units, thread_cpu() - t, None);
        if self.extra_per_unit > 0.0 {
            self.stretch(t);
        }
        idle(false);
        r
    }

    /// Leave the groups now (also done on drop).
    pub fn stop(&mut self) {
        self.cpu = None;
        self.mem = None;
        self._blkio = None;
    }
}

#[cfg(test)]
mod tests {
    use super::{Clock, repay};

    #[test]
    fn a_piece_that_overran_is_made_up_by_the_pieces_after_it() {
        let mut debt = 0.0;
        // 1 ms of time, 1.3 ms of real work: it lasts what it took.
        assert_eq!(repay(&mut debt, 1e-3, 1.3e-3), 1e-3);
        assert!((debt - 0.3e-3).abs() < 1e-12);
        // 1 ms with 0.9 ms to spare pays all 0.3 ms back.
        assert!((repay(&mut debt, 1e-3, 0.1e-3) - 0.7e-3).abs() < 1e-12);
        assert!(debt.abs() < 1e-12);
        // Overruns add up; a piece never ends before its real work.
        repay(&mut debt, 1e-3, 1.5e-3);
        repay(&mut debt, 1e-3, 1.5e-3);
        assert!((repay(&mut debt, 1e-3, 0.6e-3) - 0.6e-3).abs() < 1e-12);
        assert!((debt - 0.6e-3).abs() < 1e-12);
        // With no debt a piece lasts its time.
        let mut none = 0.0;
        assert_eq!(repay(&mut none, 2e-3, 0.5e-3), 2e-3);
    }

    #[test]
    fn the_clock_takes_each_sites_largest_figure_times_the_headroom() {
        let report = concat!(
            r#"{"app":"x","ranks":["#,
            r#"{"cpu_sites":{"a.rs:1":{"ns_per_unit":2.0},"b.rs:9":{"ns_per_unit":5.0}}},"#,
            r#"{"cpu_sites":{"a.rs:1":{"ns_per_unit":3.0},"b.rs:9":{"ns_per_unit":null}}},"#,
            r#"{"rank":2}]}"#
        );
        let c = Clock::from_report(&format!("a progress line\n{report}\n"), 2.5).unwrap();
        let Clock::Sites(m) = c else { panic!("{c:?}") };
        assert_eq!(m.len(), 2);
        assert_eq!(m["a.rs:1"], 7.5);
        assert_eq!(m["b.rs:9"], 12.5);
        for bad in [
            "",
            "no json here",
            "{\"ranks\":[{\"cpu_sites\":{}}]}",
            "{\"app\":1}",
            "{not json",
        ] {
            assert!(Clock::from_report(bad, 2.5).is_err(), "{bad}");
        }
    }
}
