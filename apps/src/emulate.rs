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
//!   real slower CPU would not lose (the measurements are in
//!   docs/design/apps.md, "CPU emulation"). The quota's period is the shortest
//!   that keeps every quota at or above the kernel's 1 ms minimum.
//!   When the node has more ranks than cores and mpirun left the ranks
//!   unbound (it does when oversubscribing), each rank also pins itself
//!   to one core (the report's `pinned_core`), so every core carries
//!   ranks whose quotas sum to at most one core; the ranks are spread so
//!   that each core's powers sum about alike ([`core_slots`]), which
//!   matters under `paced`, where a busy rank takes base × power of its
//!   core. Unpinned, the scheduler put three quota'd ranks on one core at
//!   times, and ranks of equal power computed equal rows at unequal
//!   speeds. On such a node a rank's work (real
//!   and extra) also runs under `SCHED_IDLE` and the rest of the rank
//!   under the normal policy (the report's `work_policy`, see
//!   [`Emulation::work`]), so that an MPI call never waits for the core
//!   while the rank beside it computes. Ranks of the job's shared group
//!   (emulated hosts) that wait by sleeping (`--wait sleep`) run the rest
//!   under `SCHED_FIFO` instead where the kernel allows it (the report's
//!   `wait_policy`, [`Emulation::fifo_waits`]): EEVDF gives a thread that turns to
//!   `SCHED_IDLE` with time owed the core before a normal thread whose
//!   time is spent, for as long as was owed, and a rank's MPI test then
//!   waited 0.5-0.8 ms for its neighbour's work.
//!   `--cpu-emulation clock` times pieces by their size, not their CPU
//!   time: a piece of u units ([`Emulation::work`]'s measure, declared by
//!   the kernel: points, nonzeros) lasts u × ns / (base × power), waited
//!   out like `paced`, with ns one figure or one per call site ([`Clock`],
//!   from a calibration run's report). The other modes scale the real
//!   work's CPU time, and a time-shared host's speed changes by itself,
//!   which the clock does not follow. Pieces whose real work outlasted their time are counted
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
//!   reaches the disk; then the MPI
//!   library's `pread`/`pwrite` (and asynchronous reads) on our files wait
//!   until `bytes × io_factor / R` has passed since they began
//!   ([`crate::mpiio::pace`]; to the microsecond, [`wait_until`]), so the
//!   extra time falls inside the MPI-IO calls (a prefetch's inside
//!   `MPI_Wait`), in proportion to the bytes; a transfer of 1 ms or
//!   more reaches the real device in pieces spread over its paced time,
//!   as a slower disk would be busy through it. A call the real device
//!   serves slower than that takes the device's time.
//!   The two other methods are options because they are not exact here:
//!   - `throttle`: a `blkio` throttle of `R / io_factor` per rank (the
//!     kernel's limit). blk-throttle always allows a group `R × 100 ms`
//!     at once (its slice is fixed at 100 ms for this disk), so a rank
//!     that waited for slower ranks reads its next `R × 100 ms` bytes at
//!     disk speed, so apps that read a few MB between waits see far more
//!     than the io_factor's ratio;
//!   - `scaled`: the paper's method, each read and write moves
//!     `io_factor / min(io_factor)` times its bytes; here the ranks share
//!     one disk queue and a slow-disk rank's larger requests delay the
//!     others'.
//!
//! The measurements behind these choices are in docs/design/apps.md.
//! A rank's real work, pacing and the clock are in `emulate/work.rs`;
//! making and joining cgroups in `emulate/cgroup.rs`.

mod cgroup;
mod work;

use crate::Resolved;
use cgroup::{Group, join_group, make_group, throttle};
use mheta_hosts::cores::{core_slots, free_cpus};
use serde::Serialize;
use std::collections::HashMap;
use std::panic::Location;
use std::path::Path;
use std::sync::Mutex;
use work::Site;

pub use mheta_runtime::cpu::spin_extra;
pub use work::{Clock, SiteReport, WorkStats};

/// How long before a paced deadline a wait stops sleeping and spins: a
/// sleep of a few ms on this VM overshoots by 130-200 µs (p10-p90; the
/// vCPU's wake-up and the timer slack), so the last stretch is spun.
const WAIT_SPIN: std::time::Duration = std::time::Duration::from_micros(150);

/// Sleep until `t`, then spin until it is exactly `t`, as every paced
/// wait does (a piece of CPU work, a disk transfer): a plain sleep would
/// add its overshoot to every paced call, a fixed cost a call the real
/// device serves without sleeping does not have. Spin, not yield: a yield
/// hands the core to a neighbour that computes, which can keep it for a
/// scheduler tick.
pub(crate) fn wait_until(t: std::time::Instant) {
    let now = std::time::Instant::now();
    if t > now + WAIT_SPIN {
        std::thread::sleep(t - now - WAIT_SPIN);
    }
    while std::time::Instant::now() < t {
        std::hint::spin_loop();
    }
}

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
    /// "fifo": the rank's MPI calls and waits run under `SCHED_FIFO`
    /// (crowded node, sleeping waits; [`Emulation::fifo_waits`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_policy: Option<String>,
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
    /// the cores with them task by task. Without the shared group a rank
    /// waited for its neighbour's work now and then (docs/design/apps.md).
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
    /// Run the rest under `SCHED_FIFO` ([`Emulation::fifo_waits`]).
    fifo_rest: bool,
}

/// Pin this process to one of the CPUs it may run on: local rank `local`
/// of the node's ranks (powers `powers`) gets the CPU of its
/// [`core_slots`] slot. Nothing when mpirun already bound it to fewer
/// than all online CPUs. Returns the CPU.
fn pin(local: usize, powers: &[f64]) -> Option<usize> {
    let cpus = free_cpus()?;
    let cpu = cpus[core_slots(powers, cpus.len())[local]];
    // Every thread of the rank (MPI's helper threads too).
    mheta_base::os::pin_process_to_core(cpu).ok().map(|()| cpu)
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

/// Put the calling thread under `SCHED_FIFO` at the lowest real-time
/// priority, its children (threads too) back under the normal policy
/// (`SCHED_RESET_ON_FORK`). The error when the kernel refuses.
fn fifo_policy() -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: pid 0 is the calling thread; `param` is read only.
    let rc = unsafe {
        libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &param)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Give the job's group real-time time in 10 ms periods: the most of 9,
/// 5, 2 and 0.5 ms a period (per core) that its parent leaves. The short
/// period bounds what a rank's spin under `SCHED_FIFO` (a blocking MPI
/// call yields only to real-time threads) can keep from its neighbour's
/// work: the rest of each 10 ms.
fn rt_budget(g: &cgroup::Group) -> Result<(), String> {
    g.set("cpu.rt_period_us", "10000")?;
    let mut last = String::new();
    for us in ["9000", "5000", "2000", "500"] {
        match g.set("cpu.rt_runtime_us", us) {
            Ok(()) => return Ok(()),
            Err(e) => last = e,
        }
    }
    Err(last)
}

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
            fifo_rest: false,
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

    /// On a crowded machine whose ranks wait by sleeping: run everything
    /// but the work ([`Emulation::work`]) under `SCHED_FIFO`, so that a
    /// rank that wakes for an MPI test or at the end of a timed piece
    /// takes its core at once from a neighbour's work.
    ///
    /// `SCHED_IDLE` alone does not give that under EEVDF: a thread that
    /// turns to `SCHED_IDLE` keeps the time it was owed (scaled to its
    /// new weight, so for as long in real time), and a normal thread
    /// whose time is spent is not eligible before it. 4 ranks of grid64's
    /// group c on 2 cores (clock, jacobi --n 1536, 256 rows a rank) lost
    /// 0.5-0.8 ms in one MPI test in about 40% of the iterations, as
    /// run-queue delay ([`crate::driver`]'s `sched`), so iterations took
    /// 16.7 or 17.4 ms and a run's median either (docs/design/scale.md,
    /// "A fitted configuration's two modes").
    ///
    /// Only the waits would not do: a rank that leaves `SCHED_FIFO` for
    /// the normal policy meets the same lag, and its iterations all took
    /// the slow mode (17.2 ms where `SCHED_FIFO` throughout gave 16.65).
    ///
    /// Only in the job's shared group ([`Machine::job`], ranks on
    /// emulated hosts), which is given real-time time in 10 ms periods
    /// first ([`rt_budget`]): a blocking MPI call spins with
    /// `sched_yield`, which under `SCHED_FIFO` hands the core to no
    /// normal or idle thread, so a rank spinning there keeps its
    /// neighbour's work off the core for the rest of the period's
    /// real-time time, at most 9 ms of each 10 (the machine's own
    /// real-time time comes in periods of a second). Not with polling
    /// waits (every wait spins), nor under a CFS quota (real-time threads
    /// are outside it). Where the kernel refuses (no privilege, no
    /// real-time time left), the report's notes say so and the normal
    /// policy stays.
    pub fn fifo_waits(&mut self) {
        if !self.idle_work || self.report.cpu_period_us > 0 {
            return;
        }
        let budget = match (&self.cpu, &self.report.shared_group) {
            (Some(g), Some(_)) => rt_budget(g),
            // The rank's own group (a quota), or none.
            _ => return,
        };
        match budget.and_then(|()| fifo_policy().map_err(|e| format!("SCHED_FIFO: {e}"))) {
            Ok(()) => {
                self.fifo_rest = true;
                self.report.wait_policy = Some("fifo".into());
            }
            Err(why) => self.report.notes.push(format!(
                "cpu: MPI calls and waits stay under the normal policy ({why}); a neighbour's work may hold a waking rank back for up to a millisecond"
            )),
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

    /// Leave the groups now (also done on drop).
    pub fn stop(&mut self) {
        self.cpu = None;
        self.mem = None;
        self._blkio = None;
    }
}
