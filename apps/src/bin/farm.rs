//! farm: an MPI master/worker task farm, the application the work-rate
//! placement model (`mheta place`) describes (Shao, Berman and Wolski, section 2).
//!
//! A master (any rank, `--master`) hands tasks to a set of workers
//! (`--workers`, default every other rank) by self-scheduling: each
//! worker holds one task, or two with `--window 2` (the second arrives
//! while it computes the first), and on each result the master sends
//! that worker the next task, then checks the result and adds it in. The
//! master does no task work. When every result is in it sends each
//! worker a stop message. Ranks outside the set stay idle and exit.
//!
//! Tasks (`--task`): `mandel`, tiles of a Mandelbrot image whose counts
//! (64 KiB a 128-pixel tile) go back to the master, so a run is bound by
//! the transfers into the master's host; `ep`, batches of NPB EP's
//! Gaussian pairs (a 96-byte result), bound by compute. Every result is
//! verified by the master (see `mheta_apps::farm`); the run is verified
//! when every task's was and the totals match (EP: NPB's published sums;
//! mandel: the image's total, and with `--verify-serial` a serial
//! recomputation). `--calibrate K` runs no farm: each rank in turn times
//! K tasks as a worker and K master steps, the inputs T_SlaveCPU(i) and
//! T_MasterCPU(i) of the placement model.
//!
//! CPU power is emulated per rank from `--cluster` as in the other apps
//! (`mheta_apps::emulate`): a task's work and the master's work on a
//! result run inside `Emulation::work`.

use anyhow::{Context, Result, bail};
use clap::Parser;
use mheta_apps::emulate::{Clock, Emulation};
use mheta_apps::farm::{self, Kind, ep, mandel};
use mheta_apps::{Resolved, comm, main_with_mpi, parse_args};
use mheta_hosts::cluster::ClusterSpec;
use mpi::collective::{CommunicatorCollectives, Root};
use mpi::point_to_point::{Destination, MatchedReceiveVec, Message, Source, Status};
use mpi::topology::{Communicator, SimpleCommunicator};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// MPI master/worker task farm: Mandelbrot tiles or NPB EP batches.
#[derive(Parser, Debug)]
#[command(name = "farm", version)]
struct Args {
    /// Task kind: mandel (communication-heavy) or ep (compute-heavy).
    #[arg(long, default_value = "mandel", value_parser = ["mandel", "ep"])]
    task: String,
    /// EP class: S (2^24 pairs, 256 tasks), W (2^25, 512) or A (2^28, 4096).
    #[arg(long, default_value = "W")]
    class: String,
    /// Mandelbrot image side, pixels.
    #[arg(long, default_value_t = 2048)]
    size: u32,
    /// Mandelbrot tile side, pixels (a task).
    #[arg(long, default_value_t = 128)]
    tile: u32,
    /// Mandelbrot iteration limit.
    #[arg(long, default_value_t = 64)]
    max_iter: u32,
    /// Run only the first N tasks (default: all of the problem's). EP's
    /// published sums are then not compared (the per-task checks stand).
    #[arg(long, value_name = "N")]
    tasks: Option<u64>,
    /// The master's rank.
    #[arg(long, default_value_t = 0)]
    master: usize,
    /// Worker ranks, `r1,r2,...` (default: every rank but the master).
    #[arg(long)]
    workers: Option<String>,
    /// Choose the master and the workers with the work-rate model
    /// (`mheta_place::choose`): calibrate every rank on --auto-calibrate
    /// tasks, take the links from --cluster's hosts, then farm.
    #[arg(long, conflicts_with_all = ["master", "workers", "calibrate"])]
    auto_place: bool,
    /// With --auto-place: tasks each rank times.
    #[arg(long, value_name = "K", default_value_t = 16, requires = "auto_place")]
    auto_calibrate: u64,
    /// Tasks a worker holds at once: 1, or 2 (one prefetched).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=2))]
    window: u32,
    /// Mandel: recompute the whole image serially on the master after the
    /// run and compare its total.
    #[arg(long)]
    verify_serial: bool,
    /// No farm: each rank in turn times K tasks (spread over the run's) as
    /// a worker and K master steps; the report gives the means per rank.
    #[arg(long, value_name = "K")]
    calibrate: Option<u64>,
    /// For testing the master's checks: the worker that computes task K
    /// flips a bit of its result before sending it.
    #[arg(long, value_name = "K", hide = true)]
    corrupt: Option<u64>,
    /// Emulated cluster: a TOML spec or a built-in name (as the other apps).
    #[arg(long, default_value = "uniform")]
    cluster: String,
    /// How cpu_power is emulated (see the other apps' --help). Default:
    /// share, except where ranks outnumber a machine's cores (emulated
    /// hosts included) and their CPU powers differ: there every mode but
    /// clock is unfaithful, and the farm stops and says what to pass
    /// unless a mode is given by name.
    #[arg(long, value_name = "HOW", value_parser = ["share", "quota", "spin", "paced", "clock"])]
    cpu_emulation: Option<String>,
    /// With `--cpu-emulation clock`: ns per unit of work (a pixel, an EP
    /// pair) at cpu_power 1, or FILE, a farm report whose `ranks[].cpu_sites`
    /// give each call site's figure (times --cpu-headroom).
    #[arg(long, value_name = "NS|FILE")]
    cpu_ns_per_unit: Option<String>,
    /// With `--cpu-ns-per-unit FILE`: the factor over its figures.
    #[arg(long, value_name = "X", default_value_t = 2.5)]
    cpu_headroom: f64,
    /// How ranks wait for messages: poll, sleep, or auto (sleep when the
    /// machine, emulated hosts included, has more ranks than cores).
    #[arg(long, value_name = "HOW", default_value = "auto", value_parser = ["auto", "poll", "sleep"])]
    wait: String,
}

impl Args {
    /// `--cpu-emulation`, or its default.
    fn cpu_mode(&self) -> &str {
        self.cpu_emulation.as_deref().unwrap_or("share")
    }
}

/// Where the farm's clock figures come from (for `unfaithful_cpu`).
const CALIBRATE_FARM: &str = "NS the time of a unit of work (a pixel, an EP pair) at cpu_power 1, or FILE the report of an earlier farm run with a core per rank (its ranks[].cpu_sites)";

const TAG_TASK: i32 = 11;
const TAG_STOP: i32 = 12;
const TAG_RESULT: i32 = 13;

fn main() {
    let born = Instant::now();
    main_with_mpi("farm", |world| {
        let Some(args) = parse_args::<Args>(world)? else {
            return Ok(());
        };
        body(world, &args, born)
    })
}

/// Set up (checks, emulation, hosts), then calibrate or farm.
fn body(world: &SimpleCommunicator, args: &Args, born: Instant) -> Result<()> {
    let np = world.size() as usize;
    let kind = mheta_apps::agree(world, make_kind(args))?;
    let workers = mheta_apps::agree(
        world,
        farm::parse_workers(args.workers.as_deref(), np, args.master),
    )?;
    let cluster = mheta_apps::agree(world, check_cluster(args, np))?;
    let hosts = gather_hosts(world);
    let emu = start_emulation(world, args, &cluster)?;
    if let Some(k) = args.calibrate {
        return calibrate(world, args, kind, k, &emu, &hosts);
    }
    let (roles, placed) = if args.auto_place {
        let (m, w, p) = auto_place(world, args, &cluster.0, &emu, &hosts)?;
        ((m, w), Some(p))
    } else {
        ((args.master, workers), None)
    };
    barrier(world);
    let t0 = Instant::now();
    let startup_s = t0.duration_since(born).as_secs_f64();
    let me = world.rank() as usize;
    let (boss, workers) = roles;
    if me == boss {
        let tasks = args.tasks.unwrap_or(kind.tasks());
        let run = master(world, kind, (tasks, &workers), args.window, &emu, t0)?;
        let sites = gather_sites(world, &emu, boss);
        let (ok, mut report) = report(args, run, &hosts, &cluster, &emu, startup_s, sites);
        if let Some(p) = placed {
            report["auto_place"] = p;
        }
        println!("{report}");
        if !ok {
            bail!("verification failed");
        }
        return Ok(());
    }
    if workers.contains(&me) {
        worker(world, &kind, boss, &emu, args.corrupt);
    }
    gather_sites(world, &emu, boss);
    Ok(())
}

/// The task kind from the options.
fn make_kind(args: &Args) -> Result<Kind> {
    let kind = match args.task.as_str() {
        "ep" => Kind::Ep {
            class: ep::class(&args.class)?,
            total: ep::Sums::default(),
        },
        _ => Kind::Mandel {
            m: mandel::Mandel::new(args.size, args.tile, args.max_iter)?,
            total: 0,
            image: touched_image(args.size),
        },
    };
    if let Some(n) = args.tasks
        && !(1..=kind.tasks()).contains(&n)
    {
        bail!(
            "--tasks {n}: this problem has {} tasks; run 1 to {}",
            kind.tasks(),
            kind.tasks()
        );
    }
    Ok(kind)
}

/// The master's image, allocated and its pages written once here, not
/// in timed steps: a first write to a fresh (huge) page costs its
/// zeroing, which a calibration's scattered tiles paid one band each
/// (docs/design/apps.md, "the farm").
fn touched_image(size: u32) -> Vec<u32> {
    let mut image = vec![0u32; size as usize * size as usize];
    for page in image.chunks_mut(1024) {
        page[0] = std::hint::black_box(0);
    }
    image
}

/// The cluster spec for `np` ranks, and the clock's figures.
fn check_cluster(args: &Args, np: usize) -> Result<(ClusterSpec, Option<Clock>)> {
    let spec = ClusterSpec::resolve(&args.cluster, np)?;
    let clock = match (args.cpu_mode(), &args.cpu_ns_per_unit) {
        ("clock", None) => bail!("--cpu-emulation clock needs --cpu-ns-per-unit NS|FILE"),
        ("clock", Some(v)) => Some(clock_figures(v, args.cpu_headroom)?),
        (_, None) => None,
        (mode, Some(_)) => bail!("--cpu-ns-per-unit is for --cpu-emulation clock, not {mode}"),
    };
    if let Some(c) = args.calibrate
        && c == 0
    {
        bail!("--calibrate must be at least 1 task");
    }
    Ok((spec, clock))
}

/// `--cpu-ns-per-unit NS|FILE`.
fn clock_figures(v: &str, headroom: f64) -> Result<Clock> {
    if let Ok(ns) = v.trim().parse::<f64>() {
        if !(ns.is_finite() && ns > 0.0) {
            bail!("--cpu-ns-per-unit {ns}: must be a positive number of nanoseconds");
        }
        return Ok(Clock::Every(ns));
    }
    if !(headroom.is_finite() && headroom > 0.0) {
        bail!("--cpu-headroom {headroom}: must be a positive factor");
    }
    let text = std::fs::read_to_string(v).with_context(|| {
        format!("--cpu-ns-per-unit {v}: neither a number nor a readable report")
    })?;
    Clock::from_report(&text, headroom).map_err(|e| anyhow::anyhow!("--cpu-ns-per-unit {v}: {e}"))
}

/// Every rank's host name, on every rank (64 bytes each at most).
fn gather_hosts(world: &SimpleCommunicator) -> Vec<String> {
    let mut mine = [0u8; 64];
    let h = mheta_base::os::hostname();
    let n = h.len().min(64);
    mine[..n].copy_from_slice(&h.as_bytes()[..n]);
    let mut all = vec![0u8; 64 * world.size() as usize];
    world.all_gather_into(&mine[..], &mut all[..]);
    all.chunks(64)
        .map(|c| {
            let end = c.iter().position(|&b| b == 0).unwrap_or(64);
            String::from_utf8_lossy(&c[..end]).into_owned()
        })
        .collect()
}

/// Start this rank's CPU emulation ([`mheta_apps::start_cpu_emulation`]:
/// by host, crowding and waiting by machine; where the emulation would not
/// be faithful every rank stops unless the mode was named). Collective.
fn start_emulation(
    world: &SimpleCommunicator,
    args: &Args,
    (spec, clock): &(ClusterSpec, Option<Clock>),
) -> Result<Emulation> {
    let me = world.rank() as usize;
    let r = Resolved {
        spec: spec.rank[me].clone(),
        mem_limit: None,
        io_factors_differ: false,
        min_io_factor: 1.0,
        throttle_always: false,
        cpu_mode: args.cpu_mode().into(),
        cpu_clock: clock.clone(),
        disk_mode: "paced".into(),
        disk_mb_s: mheta_apps::emulate::DEFAULT_DISK_MB_S,
    };
    let powers: Vec<f64> = spec.rank.iter().map(|r| r.cpu_power).collect();
    // A master that polls takes a core its workers need when the ranks
    // outnumber the cores: `--wait auto` sleeps there.
    let how = mheta_apps::CpuSetup {
        mode: args.cpu_mode(),
        named: args.cpu_emulation.is_some(),
        wait: &args.wait,
        calibrate: CALIBRATE_FARM,
    };
    mheta_apps::start_cpu_emulation(world, &r, &powers, &how, &std::env::temp_dir())
}

/// `MPI_Barrier`, waiting as `--wait` says.
fn barrier(world: &SimpleCommunicator) {
    comm::complete(world.immediate_barrier());
}

/// Send `data` to rank `to` with `tag`, waiting as `--wait` says.
fn send(world: &SimpleCommunicator, to: usize, tag: i32, data: &[u8]) {
    let p = world.process_at_rank(to as i32);
    mpi::request::scope(|s| comm::complete(p.immediate_send_with_tag(s, data, tag)));
}

/// Wait for a message (from `from`, or anyone) with `tag` (or any tag)
/// and receive it as bytes.
fn receive(world: &SimpleCommunicator, from: Option<usize>, tag: Option<i32>) -> (Vec<u8>, Status) {
    let probe = || -> Option<(Message, Status)> {
        match (from, tag) {
            (Some(r), Some(t)) => world
                .process_at_rank(r as i32)
                .immediate_matched_probe_with_tag(t),
            (Some(r), None) => world.process_at_rank(r as i32).immediate_matched_probe(),
            (None, Some(t)) => world.any_process().immediate_matched_probe_with_tag(t),
            (None, None) => world.any_process().immediate_matched_probe(),
        }
    };
    let start = Instant::now();
    let matched = loop {
        if let Some(m) = probe() {
            break m;
        }
        if start.elapsed() < Duration::from_micros(30) {
            std::hint::spin_loop();
        } else if comm::sleeping() {
            std::thread::sleep(Duration::from_micros(50));
        } else {
            // Polling, but a rank that computes on this core goes first
            // (as Open MPI's mpi_yield_when_idle).
            std::thread::yield_now();
        }
    };
    matched.matched_receive_vec::<u8>()
}

/// The first u64 words of a message.
fn words<const N: usize>(b: &[u8]) -> Result<[u64; N]> {
    if b.len() < 8 * N {
        bail!(
            "a message of {} bytes, expected at least {}",
            b.len(),
            8 * N
        );
    }
    let mut out = [0u64; N];
    for (i, w) in out.iter_mut().enumerate() {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[8 * i..8 * i + 8]);
        *w = u64::from_le_bytes(a);
    }
    Ok(out)
}

/// A worker: compute each task the master sends, send its result with
/// the task's index and compute time, until the stop message.
fn worker(
    world: &SimpleCommunicator,
    kind: &Kind,
    master: usize,
    emu: &Emulation,
    corrupt: Option<u64>,
) {
    loop {
        let (buf, status) = receive(world, Some(master), None);
        if status.tag() == TAG_STOP {
            return;
        }
        let Ok([k]) = words::<1>(&buf) else {
            continue;
        };
        let t = Instant::now();
        let mut payload = emu.work(kind.units(k), || kind.compute(k));
        if corrupt == Some(k)
            && let Some(b) = payload.last_mut()
        {
            *b ^= 1;
        }
        let busy_ns = t.elapsed().as_nanos() as u64;
        let mut out = Vec::with_capacity(16 + payload.len());
        out.extend_from_slice(&k.to_le_bytes());
        out.extend_from_slice(&busy_ns.to_le_bytes());
        out.extend_from_slice(&payload);
        send(world, master, TAG_RESULT, &out);
    }
}

/// A worker's share of the run, as the master saw it.
#[derive(Default, Clone)]
struct Share {
    tasks: u64,
    busy_s: f64,
}

/// What the master's farm produced.
struct Run {
    kind: Kind,
    /// Tasks handed out (`--tasks`, default all).
    tasks: u64,
    master: usize,
    workers: Vec<usize>,
    shares: Vec<Share>,
    elapsed_s: f64,
    master_s: f64,
    /// The first result that failed its check, and how many did.
    failure: Option<String>,
    failed: u64,
}

/// The master: hand out `window` tasks per worker, then one more per
/// result; check and absorb every result; stop the workers.
fn master(
    world: &SimpleCommunicator,
    kind: Kind,
    (tasks, workers): (u64, &[usize]),
    window: u32,
    emu: &Emulation,
    t0: Instant,
) -> Result<Run> {
    let mut next = 0u64;
    for _ in 0..window {
        for &w in workers {
            if next < tasks {
                send(world, w, TAG_TASK, &next.to_le_bytes());
                next += 1;
            }
        }
    }
    let mut run = Run {
        kind,
        tasks,
        master: world.rank() as usize,
        workers: workers.to_vec(),
        shares: vec![Share::default(); workers.len()],
        elapsed_s: 0.0,
        master_s: 0.0,
        failure: None,
        failed: 0,
    };
    let mut seen = vec![false; tasks as usize];
    for _ in 0..tasks {
        let (buf, status) = receive(world, None, Some(TAG_RESULT));
        let src = status.source_rank() as usize;
        if next < tasks {
            send(world, src, TAG_TASK, &next.to_le_bytes());
            next += 1;
        }
        let t = Instant::now();
        let checked = absorb(&mut run, &mut seen, src, &buf, emu);
        run.master_s += t.elapsed().as_secs_f64();
        if let Err(e) = checked {
            run.failed += 1;
            run.failure.get_or_insert(format!("{e:#}"));
        }
    }
    run.elapsed_s = t0.elapsed().as_secs_f64();
    for &w in workers {
        send(world, w, TAG_STOP, &[]);
    }
    Ok(run)
}

/// Check one result message from worker `src` and add it in.
fn absorb(run: &mut Run, seen: &mut [bool], src: usize, buf: &[u8], emu: &Emulation) -> Result<()> {
    let [k, busy_ns] = words::<2>(buf)?;
    let Some(i) = run.workers.iter().position(|&w| w == src) else {
        bail!("a result from rank {src}, not a worker");
    };
    run.shares[i].tasks += 1;
    run.shares[i].busy_s += busy_ns as f64 * 1e-9;
    match seen.get_mut(k as usize) {
        None => bail!("rank {src} returned task {k}, which does not exist"),
        Some(true) => bail!("rank {src} returned task {k} twice"),
        Some(s) => *s = true,
    }
    let payload = &buf[farm::RESULT_HEADER as usize..];
    let units = run.kind.master_units(k);
    emu.work(units, || run.kind.absorb(k, payload))
        .with_context(|| format!("the result of task {k} from rank {src}"))
}

/// Every rank's CPU work per call site, gathered on the master as JSON
/// (for `--cpu-ns-per-unit FILE`); empty elsewhere. Collective.
fn gather_sites(world: &SimpleCommunicator, emu: &Emulation, master: usize) -> Vec<Value> {
    let stats = emu.work_stats();
    let mine = json!({"rank": world.rank(), "cpu_sites": stats.sites, "emulation": emu.report});
    mheta_apps::gather_json_at(world, master, &mine).unwrap_or_default()
}

/// The master's one-line JSON report, and whether the run verified.
fn report(
    args: &Args,
    run: Run,
    hosts: &[String],
    (spec, _): &(ClusterSpec, Option<Clock>),
    emu: &Emulation,
    startup_s: f64,
    ranks: Vec<Value>,
) -> (bool, Value) {
    let (totals_ok, mut checked) = run.kind.verify(args.verify_serial, run.tasks);
    let ok = totals_ok && run.failed == 0;
    checked["failed_tasks"] = json!(run.failed);
    if let Some(f) = &run.failure {
        checked["first_failure"] = json!(f);
    }
    let per: Vec<Value> = run
        .workers
        .iter()
        .zip(&run.shares)
        .map(|(&w, s)| {
            json!({"rank": w, "host": hosts[w], "cpu_power": spec.rank[w].cpu_power,
                   "tasks": s.tasks, "busy_s": s.busy_s})
        })
        .collect();
    let v = json!({
        "app": "farm",
        "task": run.kind.name(),
        "problem": run.kind.problem(),
        "tasks": run.tasks,
        "problem_tasks": run.kind.tasks(),
        "master": run.master,
        "master_host": hosts[run.master],
        "workers": per,
        "window": args.window,
        "elapsed_s": run.elapsed_s,
        "startup_s": startup_s,
        "master_busy_s": run.master_s,
        "request_bytes": farm::REQUEST_BYTES,
        "result_bytes": run.kind.result_bytes(),
        "cluster": args.cluster,
        "cpu_emulation": args.cpu_mode(),
        "emulation": emu.report,
        "verified": ok,
        "verification": checked,
        "ranks": ranks,
    });
    (ok, v)
}

/// `--calibrate K`: each rank in turn (the others wait) times K tasks
/// spread over the run's tasks as a worker (T_SlaveCPU) and K master
/// steps on their results (a request made, the result checked and
/// absorbed: T_MasterCPU), under its emulation; the master rank prints
/// the means.
fn calibrate(
    world: &SimpleCommunicator,
    args: &Args,
    mut kind: Kind,
    k: u64,
    emu: &Emulation,
    hosts: &[String],
) -> Result<()> {
    let np = world.size() as usize;
    let all = calibration(world, &mut kind, k, emu)?;
    let ranks = gather_sites(world, emu, args.master);
    if world.rank() as usize != args.master {
        return Ok(());
    }
    let per: Vec<Value> = (0..np)
        .map(|r| {
            json!({"rank": r, "host": hosts[r], "t_slave_s": all[2 * r], "t_master_s": all[2 * r + 1],
                   "cpu_sites": ranks.get(r).map_or(Value::Null, |v| v["cpu_sites"].clone())})
        })
        .collect();
    let v = json!({
        "app": "farm", "mode": "calibrate", "task": kind.name(), "problem": kind.problem(),
        "tasks": kind.tasks(), "calibrate_tasks": k, "cluster": args.cluster,
        "cpu_emulation": args.cpu_mode(), "emulation": emu.report,
        "request_bytes": farm::REQUEST_BYTES, "result_bytes": kind.result_bytes(),
        "size_task_xfer_bytes": farm::REQUEST_BYTES + kind.result_bytes(),
        "ranks": per,
    });
    println!("{v}");
    Ok(())
}

/// Each rank in turn (the others wait) times `k` tasks and master steps
/// ([`time_tasks`]); every rank's two means, rank by rank, on every rank.
/// Collective.
fn calibration(
    world: &SimpleCommunicator,
    kind: &mut Kind,
    k: u64,
    emu: &Emulation,
) -> Result<Vec<f64>> {
    let np = world.size() as usize;
    let mut mine = [0.0f64; 2];
    let mut failed = None;
    for r in 0..np {
        if r == world.rank() as usize {
            match time_tasks(kind, k, emu) {
                Ok(t) => mine = t,
                Err(e) => failed = Some(e),
            }
        }
        barrier(world);
    }
    mheta_apps::agree(world, failed.map_or(Ok(()), Err))?;
    let mut all = vec![0.0f64; 2 * np];
    world.all_gather_into(&mine[..], &mut all[..]);
    Ok(all)
}

/// The `i`-th task timed by a calibration: the golden-ratio sequence
/// over the run's tasks, so that any first k of them spread over the
/// image's rows and columns alike (an even stride of a row-major tiling
/// would time one column of tiles).
fn sample(i: u64, tasks: u64) -> u64 {
    let x = (i as f64 * 0.618_033_988_749_895).fract();
    ((x * tasks as f64) as u64).min(tasks - 1)
}

/// Mean seconds per task as a worker and per master step, over `k` tasks
/// spread over the run's ([`sample`]).
fn time_tasks(kind: &mut Kind, k: u64, emu: &Emulation) -> Result<[f64; 2]> {
    let tasks = kind.tasks();
    let (mut slave, mut master) = (0.0, 0.0);
    for i in 0..k {
        let task = sample(i, tasks);
        let t = Instant::now();
        let payload = emu.work(kind.units(task), || kind.compute(task));
        slave += t.elapsed().as_secs_f64();
        let t = Instant::now();
        let request = task.to_le_bytes();
        let [id] = words::<1>(&request)?;
        let units = kind.master_units(id);
        emu.work(units, || kind.absorb(id, &payload))?;
        master += t.elapsed().as_secs_f64();
    }
    Ok([slave / k as f64, master / k as f64])
}

/// `--auto-place`: every rank is calibrated in turn ([`calibration`]);
/// rank 0 builds the model's inputs and chooses the master and workers
/// (`mheta_place::choose`, Shao et al.'s best master by maximum flow and
/// the fewest workers reaching its rate) and broadcasts the choice, with
/// the model's figures as JSON for the report. Collective.
fn auto_place(
    world: &SimpleCommunicator,
    args: &Args,
    spec: &ClusterSpec,
    emu: &Emulation,
    hosts: &[String],
) -> Result<(usize, Vec<usize>, Value)> {
    let mut kind = make_kind(args)?;
    if args.auto_calibrate == 0 {
        bail!("--auto-calibrate must be at least 1 task");
    }
    let times = calibration(world, &mut kind, args.auto_calibrate, emu)?;
    let chosen = if world.rank() == 0 {
        let tasks = args.tasks.unwrap_or(kind.tasks());
        choose(spec, &times, &kind, (tasks, args.window), hosts).map(|v| v.to_string())
    } else {
        Ok(String::new())
    };
    let mut text = mheta_apps::agree(world, chosen)?.into_bytes();
    let mut len = text.len() as u64;
    let root = world.process_at_rank(0);
    root.broadcast_into(&mut len);
    text.resize(len as usize, 0);
    root.broadcast_into(&mut text[..]);
    let v: Value = serde_json::from_slice(&text).context("the placement broadcast")?;
    let rank = |x: &Value| x.as_u64().map(|r| r as usize);
    let master = rank(&v["master_rank"]).context("the placement names no master")?;
    let workers: Vec<usize> = v["worker_ranks"]
        .as_array()
        .map(|a| a.iter().filter_map(rank).collect())
        .unwrap_or_default();
    Ok((master, workers, v))
}

/// The model's inputs, one host per rank: the calibrated task times
/// (under the rank's emulation, so Avail_CPU is 1), the links of the
/// rank's host in the cluster spec (unshaped without hosts), the bytes
/// of a task each way; then `mheta_place::choose`, as ranks.
fn choose(
    spec: &ClusterSpec,
    times: &[f64],
    kind: &Kind,
    (tasks, window): (u64, u32),
    hosts: &[String],
) -> Result<Value> {
    let np = times.len() / 2;
    let mut names = Vec::with_capacity(np);
    let mut inputs = Vec::with_capacity(np);
    let rank_hosts = spec.lab.as_ref().map(|l| l.rank_hosts());
    for r in 0..np {
        let mut h = mheta_place::Host {
            name: format!("rank{r}"),
            t_slave_s: times[2 * r],
            t_master_s: times[2 * r + 1],
            avail_cpu: 1.0,
            link_bps: None,
            latency_s: 0.0,
            to: Default::default(),
            burst_bytes: 0.0,
        };
        if let (Some(lab), Some(rh)) = (&spec.lab, &rank_hosts) {
            let host = &lab.hosts[rh[r]];
            if rh.iter().filter(|&&i| i == rh[r]).count() > 1 {
                bail!(
                    "--auto-place places one rank per host, but host {} of --cluster has {} ranks",
                    host.name,
                    host.ranks
                );
            }
            h.name = host.name.clone();
            h.link_bps = host.rate;
            h.latency_s = host.latency.unwrap_or(0.0);
            h.to = host.to.clone();
            h.burst_bytes = host.shaper_burst_bytes().unwrap_or(0.0);
        }
        names.push(h.name.clone());
        inputs.push(h);
    }
    let inputs = mheta_place::Inputs {
        hosts: inputs,
        request_bytes: farm::REQUEST_BYTES as f64,
        result_bytes: kind.result_bytes() as f64,
        tasks,
        window,
        startup_s: 0.0,
        unshaped_bps: 10e9,
    };
    let p = mheta_place::choose(&inputs).map_err(|e| anyhow::anyhow!("--auto-place: {e}"))?;
    let rank_of = |n: &str| names.iter().position(|x| x == n);
    let master = rank_of(&p.master).context("--auto-place: the model chose an unknown host")?;
    let workers: Vec<usize> = p.workers.iter().filter_map(|w| rank_of(w)).collect();
    let mut v = serde_json::to_value(&p)?;
    v["master_rank"] = json!(master);
    v["master_host"] = json!(hosts[master]);
    v["worker_ranks"] = json!(workers);
    v["calibrated_tasks"] = json!(times.len() / 2);
    v["inputs"] = serde_json::to_value(&inputs)?;
    Ok(v)
}
