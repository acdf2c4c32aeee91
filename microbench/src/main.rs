//! `mheta-microbench`: measures a cluster once, under `mpirun` (or any
//! launcher), and writes its cluster profile (format: `mheta-profile`).
//! `mheta bench --np N` launches it.
//!
//! Per ordered pair (i, j): a ping-pong sweep (1 B to 4 MiB, or to
//! `--max-size` as OSU's `-m`; one sample per round trip), a streaming
//! bandwidth per size (windows of 64, as osu_bw, or fewer sends where a
//! window would outlast its share of the time),
//! and the overheads by the logp_mpi method: o_s is the time of an eager
//! 8-byte `MPI_Send`; o_r the time of an `MPI_Recv` whose 8-byte message
//! has already arrived (the receiver first waits four round trips);
//! L = one-way(8 B) − o_s − o_r. The one-way times (and one more at the
//! pair's eager limit) are fitted piecewise linear, the eager and the
//! rendezvous sizes apart, with breakpoints at protocol changes. Pairs are scheduled in
//! rounds of disjoint pairs (round-robin shifts, as mpiGraph): no rank is
//! in two measurements at once; when a node (a kernel, which emulated
//! hosts share) runs more ranks than it has cores the pairs of a round go
//! one at a time, and waiting ranks sleep. Every loop is bounded by time
//! as well as by count (`mheta_microbench::budget`): on shared memory the
//! nominal counts fit and are taken, across a slow link what fits.
//!
//! Per node: CPU power from a reference kernel (weights w = t_slowest /
//! t, the slowest rank has 1, as in Figueira and Berman), the memory an
//! application may use, disk per-call overheads and per-byte costs
//! (one rank per host), the costs of a move's copies, and (unless
//! `--no-reuse`) what a byte costs by the time since its last sweep (one
//! rank per machine, `mheta_microbench::reuse`).

use mheta_microbench::{net, node, osu, reuse};

use anyhow::{Context, Result, bail};
use clap::Parser;
use mheta_profile::cli::{Measure as Args, OsuTest};
use mheta_profile::{ClusterProfile, NodeCost, OsuCompat, PairCost, SampleStats, ShiftPoint};
use mpi::collective::{CommunicatorCollectives, Root};
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, SimpleCommunicator};
use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Measure every ordered pair of ranks and every node, and write a
/// cluster profile.
#[derive(Parser, Debug)]
#[command(name = "mheta-microbench", version)]
struct Cli {
    #[command(flatten)]
    measure: Args,
}

const TAG: i32 = 0x4d43;

/// Rounds of disjoint unordered pairs covering every pair once (the
/// circle method; with an odd rank count one rank sits each round out).
fn rounds(p: usize) -> Vec<Vec<(usize, usize)>> {
    let n = p + p % 2;
    let mut ring: Vec<usize> = (1..n).collect();
    let mut out = Vec::new();
    for _ in 0..n - 1 {
        let mut round = Vec::new();
        let all: Vec<usize> = std::iter::once(0).chain(ring.iter().copied()).collect();
        for k in 0..n / 2 {
            let (a, b) = (all[k], all[n - 1 - k]);
            if a < p && b < p {
                round.push((a.min(b), a.max(b)));
            }
        }
        out.push(round);
        ring.rotate_right(1);
    }
    out
}

/// Wait for `req` by testing it and sleeping 50 µs between tests, so
/// that a waiting rank leaves the cores to the ranks being measured.
fn wait_quietly<'a, D: ?Sized, S: mpi::request::Scope<'a>>(
    mut req: mpi::request::Request<'a, D, S>,
) {
    loop {
        match req.test() {
            Ok(_) => return,
            Err(r) => {
                req = r;
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    }
}

/// A barrier whose waiting ranks sleep ([`wait_quietly`]).
fn quiet_barrier(world: &SimpleCommunicator) {
    wait_quietly(world.immediate_barrier());
}

/// Send a serialised value to rank 0 (rank 0 itself just keeps it).
fn to_root<T: serde::Serialize>(world: &SimpleCommunicator, v: &T) {
    let bytes = serde_json::to_vec(v).expect("serialise");
    let len = bytes.len() as u64;
    let root = world.process_at_rank(0);
    root.send_with_tag(&len, TAG);
    root.send_with_tag(&bytes[..], TAG);
}

/// A serialised value from rank `r`, on rank 0. Rank 0 waits for it
/// quietly ([`wait_quietly`]): while two other ranks
/// measure their pair, a rank 0 polling in `MPI_Recv` would hold a core
/// that, where a kernel runs more ranks than it has cores (emulated
/// hosts), the pair's link needs (its shaping, the bridge, TCP's
/// receive path), and the pairs without rank 0 would read slower than
/// the others.
fn from_rank<T: serde::de::DeserializeOwned>(world: &SimpleCommunicator, r: i32) -> Result<T> {
    let p = world.process_at_rank(r);
    let mut len = 0u64;
    mpi::request::scope(|scope| {
        wait_quietly(p.immediate_receive_into_with_tag(scope, &mut len, TAG));
    });
    let mut bytes = vec![0u8; len as usize];
    p.receive_into_with_tag(&mut bytes[..], TAG);
    serde_json::from_slice(&bytes).context("result from a rank does not decode")
}

fn host_names(world: &SimpleCommunicator) -> Vec<String> {
    let name = mpi::environment::processor_name().unwrap_or_default();
    gather_strings(world, &name)
}

/// The kernel each rank runs on (its boot id; the host name where there
/// is none): ranks on one kernel share its cores, whatever their host
/// names (hosts emulated as network and UTS namespaces share a kernel).
fn kernel_ids(world: &SimpleCommunicator, host: &str) -> Vec<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    gather_strings(world, if id.is_empty() { host } else { &id })
}

/// Every rank's `name` (up to 255 bytes), on every rank.
fn gather_strings(world: &SimpleCommunicator, name: &str) -> Vec<String> {
    let mut mine = [0u8; 256];
    let nb = name.as_bytes();
    mine[..nb.len().min(255)].copy_from_slice(&nb[..nb.len().min(255)]);
    let mut all = vec![0u8; 256 * world.size() as usize];
    world.all_gather_into(&mine[..], &mut all[..]);
    all.chunks(256)
        .map(|c| {
            String::from_utf8_lossy(&c[..c.iter().position(|&x| x == 0).unwrap_or(256)])
                .into_owned()
        })
        .collect()
}

/// Everything rank 0 needs to check before measuring, decided there and
/// shared so that every rank stops alike.
fn preflight(world: &SimpleCommunicator, args: &Args) -> Result<PathBuf> {
    args.check().map_err(anyhow::Error::msg)?;
    let p = world.size();
    if p < 2 {
        bail!("needs at least 2 ranks to measure pairs (got {p}); run with --np 2 or more");
    }
    let disk_dir = args
        .disk_dir
        .clone()
        .or_else(|| std::env::var_os("TMPDIR").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    let mut msg = String::new();
    if world.rank() == 0
        && let Some(output) = &args.output
    {
        let probe = output.with_extension(format!("probe.{}", std::process::id()));
        match std::fs::write(&probe, b"") {
            Ok(()) => {
                let _ = std::fs::remove_file(&probe);
            }
            Err(e) => msg = format!("-o {}: cannot write there: {e}", output.display()),
        }
        if msg.is_empty() && !args.no_disk && !disk_dir.is_dir() {
            msg = format!("--disk-dir {}: not a directory", disk_dir.display());
        }
    }
    let mut len = msg.len() as u64;
    let root = world.process_at_rank(0);
    root.broadcast_into(&mut len);
    if len > 0 {
        let mut bytes = msg.into_bytes();
        bytes.resize(len as usize, 0);
        root.broadcast_into(&mut bytes[..]);
        bail!("{}", String::from_utf8_lossy(&bytes));
    }
    Ok(disk_dir)
}

/// OSU's own loops and buffers, pair 0 -> 1, up to `max` bytes
/// (mheta_microbench::osu::run); meaningful on rank 0.
fn osu_compat(world: &SimpleCommunicator, max: usize, only: Option<OsuTest>) -> OsuCompat {
    let r = osu::run(world, 0, 1, max, only);
    OsuCompat {
        src: 0,
        dst: 1,
        latency_us: r.latency_us,
        bandwidth_mbps: r.bandwidth_mbps,
        latency_iters: r.latency_iters,
        bandwidth_iters: r.bandwidth_iters,
    }
}

/// Where the ranks run, as every rank sees it.
struct Layout {
    /// Ranks.
    p: usize,
    /// This rank.
    me: usize,
    /// Every rank's host name.
    hosts: Vec<String>,
    /// The ranks on this rank's host.
    local: Vec<usize>,
    /// Some kernel runs more ranks than it has cores: pairs go one at a time.
    serial: bool,
    /// This rank's place among the ranks that share its kernel (one
    /// machine's cores and memory, whatever host names they give), and
    /// the most ranks any kernel runs.
    turn: usize,
    turns: usize,
    /// Per rank, the first rank of its kernel (which measures what the
    /// kernel's ranks share).
    kernel_first: Vec<usize>,
    /// The online CPUs of this rank's machine.
    cores: usize,
}

/// Every rank's host and kernel, and whether any kernel is
/// oversubscribed; every rank calls it.
fn layout(world: &SimpleCommunicator) -> Layout {
    let p = world.size() as usize;
    let me = world.rank() as usize;
    let hosts = host_names(world);
    let local: Vec<usize> = (0..p).filter(|&r| hosts[r] == hosts[me]).collect();
    let kernels = kernel_ids(world, &hosts[me]);
    let sharing = (0..p).filter(|&r| kernels[r] == kernels[me]).count();
    let turn = (0..me).filter(|&r| kernels[r] == kernels[me]).count();
    let turns = (0..p)
        .map(|q| (0..p).filter(|&r| kernels[r] == kernels[q]).count())
        .max()
        .unwrap_or(1);
    let kernel_first = (0..p)
        .map(|r| (0..p).find(|&q| kernels[q] == kernels[r]).unwrap_or(r))
        .collect();
    // Online CPUs of the node (not this rank's affinity: mpirun binds
    // each rank to one core).
    // SAFETY: sysconf only reads a system value.
    let cores = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
    // Oversubscribed anywhere (more ranks on a kernel than it has cores,
    // whether or not they name one host): measure one pair at a time.
    let mut over = [u8::from(sharing > cores)];
    let mut any = [0u8];
    world.all_reduce_into(
        &over[..],
        &mut any[..],
        mpi::collective::SystemOperation::max(),
    );
    over[0] = any[0];
    let serial = over[0] == 1;
    Layout {
        p,
        me,
        hosts,
        local,
        serial,
        turn,
        turns,
        kernel_first,
        cores,
    }
}

/// Rank 0's progress bar over `total_pairs` pairs and the nodes, when
/// stderr is a terminal.
fn progress_bar(me: usize, total_pairs: usize) -> Option<indicatif::ProgressBar> {
    (me == 0 && std::io::stderr().is_terminal()).then(|| {
        let b = indicatif::ProgressBar::new(total_pairs as u64 + 1);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{msg:>12} [{bar:30}] {pos}/{len} pairs {elapsed}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b.set_message("pairs");
        b
    })
}

fn run(world: &SimpleCommunicator, args: &Args) -> Result<Option<ClusterProfile>> {
    let disk_dir = preflight(world, args)?;
    if args.osu_only {
        let max = args
            .max_size
            .map_or(mheta_microbench::osu::MAX_SIZE, |m| m as usize);
        let o = osu_compat(world, max, args.osu_test);
        if world.rank() == 0 {
            print_osu(&o);
        }
        return Ok(None);
    }
    let lay = layout(world);
    let mut plan = net::Effort::new(args.quick);
    if let Some(max) = args.max_size {
        plan = plan.up_to(max as usize);
    }
    let bar = progress_bar(lay.me, lay.p * (lay.p - 1));
    let t0 = Instant::now();
    let pairs = measure_pairs(world, &plan, &lay, bar.as_ref())?;
    quiet_barrier(world);
    if let Some(b) = &bar {
        b.set_message("nodes");
    }
    let nodes = measure_nodes(world, args, &lay, &disk_dir)?;

    // OSU's own loops and buffers, pair 0 -> 1 (mheta_microbench::osu).
    let osu = if args.osu_compat {
        quiet_barrier(world);
        let max = args
            .max_size
            .map_or(mheta_microbench::osu::MAX_SIZE, |m| m as usize);
        Some(osu_compat(world, max, None))
    } else {
        None
    };
    world.barrier();
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    if lay.me != 0 {
        return Ok(None);
    }
    Ok(Some(assemble(args, lay, pairs, nodes, osu, t0)))
}

/// Pieces [`net::direct_copy`] times a pair: 11 of 8 MiB, a few
/// milliseconds each.
const DIRECT_REPS: usize = 11;

/// Shifts [`node::shift_costs`] times at each distance.
const SHIFT_REPS: usize = 9;

/// Every ordered pair, in rounds of disjoint pairs (each pair of a round
/// alone when `lay.serial`); the costs, on rank 0 (empty elsewhere).
fn measure_pairs(
    world: &SimpleCommunicator,
    plan: &net::Effort,
    lay: &Layout,
    bar: Option<&indicatif::ProgressBar>,
) -> Result<Vec<PairCost>> {
    let me = lay.me;
    let mut pairs: Vec<PairCost> = Vec::new();
    for round in &rounds(lay.p) {
        let groups: Vec<Vec<(usize, usize)>> = if lay.serial {
            round.iter().map(|&pr| vec![pr]).collect()
        } else {
            vec![round.clone()]
        };
        for group in groups {
            quiet_barrier(world);
            if let Some(&(a, b)) = group.iter().find(|&&(a, b)| a == me || b == me) {
                // Both ways' first large message, before either way's sweep.
                let first =
                    [(a, b), (b, a)].map(|(s, d)| net::first_bulk_held(world, s as i32, d as i32));
                // Both at once, as a halo exchange: one figure for both ways.
                let exchange =
                    net::exchange_after_gap(world, a as i32, b as i32, plan.exchange_reps);
                for (k, (s, d)) in [(a, b), (b, a)].into_iter().enumerate() {
                    let c = net::measure_pair(world, plan, s as i32, d as i32);
                    // Ranks of one host: the runtime's copy of a move's
                    // piece by both ends.
                    let direct = (lay.hosts[s] == lay.hosts[d])
                        .then(|| net::direct_copy(world, s as i32, d as i32, DIRECT_REPS))
                        .flatten();
                    if let Some(mut c) = c {
                        c.send_buffer_first_bytes = first[k];
                        c.direct_copy_bps = direct;
                        c.exchange = exchange.clone();
                        if me == 0 {
                            pairs.push(c);
                        } else {
                            to_root(world, &c);
                        }
                    }
                }
            }
            if me == 0 {
                for &(a, b) in &group {
                    for s in [a, b] {
                        if s != 0 {
                            pairs.push(from_rank(world, s as i32)?);
                        }
                    }
                }
                if let Some(b) = bar {
                    b.inc(2 * group.len() as u64);
                }
            }
        }
    }
    Ok(pairs)
}

/// Every rank's node figures, on rank 0 (empty elsewhere), where ranks
/// that did not measure their host's disk get the figures of the one
/// that did.
fn measure_nodes(
    world: &SimpleCommunicator,
    args: &Args,
    lay: &Layout,
    disk_dir: &Path,
) -> Result<Vec<NodeCost>> {
    let mine = node_cost(world, args, lay, disk_dir)?;
    let (p, hosts) = (lay.p, &lay.hosts);
    let mut nodes: Vec<NodeCost> = Vec::new();
    if lay.me == 0 {
        nodes.push(mine);
        for r in 1..p {
            nodes.push(from_rank(world, r as i32)?);
        }
        for r in 0..p {
            if nodes[r].disk.is_none() && !args.no_disk {
                let first = (0..p).find(|&q| hosts[q] == hosts[r]).unwrap_or(r);
                nodes[r].disk = nodes[first].disk.clone();
            }
            if nodes[r].reuse_by.is_empty() {
                nodes[r].reuse_by = nodes[lay.kernel_first[r]].reuse_by.clone();
            }
            nodes[r].machine = Some(lay.kernel_first[r] as u32);
        }
    } else {
        to_root(world, &mine);
    }
    Ok(nodes)
}

/// This rank's node figures: the CPU kernel (every rank runs it at once,
/// as an application would; its weight against the slowest rank), the
/// memory available to it, its costs of copying within its memory (every
/// rank at once, as the two ends of an on-node copy run) and of shifting
/// rows and backing fresh memory alone, and its host's disk when it is
/// the host's first rank. The ranks of one kernel measure the last two in
/// turn (other kernels at once), waiting quietly: a move's shifts run one
/// after another along its chains of ranks, each on a machine otherwise
/// waiting, and ranks that share a machine's cores in an emulation of
/// several hosts would otherwise measure each other.
fn node_cost(
    world: &SimpleCommunicator,
    args: &Args,
    lay: &Layout,
    disk_dir: &Path,
) -> Result<NodeCost> {
    let me = lay.me;
    let reps = if args.quick { 11 } else { 51 };
    let mut cpu = Vec::with_capacity(reps);
    for _ in 0..reps {
        world.barrier();
        cpu.push(node::cpu_kernel());
    }
    let cpu = SampleStats::from_samples(&cpu);
    let mut medians = vec![0.0f64; lay.p];
    world.all_gather_into(&cpu.p50, &mut medians[..]);
    let slowest = medians.iter().copied().fold(0.0, f64::max);
    let mem = node::mem_available(lay.local.len());
    // A shift of 32 MiB takes a few milliseconds: 21 even when quick.
    let reps = 21;
    world.barrier();
    let copy = SampleStats::from_samples(&node::copy_cost(reps));
    let (mut shifts, mut touch, mut reuse_by) = (Vec::new(), Vec::new(), Vec::new());
    for t in 0..lay.turns {
        quiet_barrier(world);
        if t == lay.turn {
            shifts = node::shift_costs(SHIFT_REPS, &node::SHIFT_DISTANCES);
            touch = node::touch_cost(reps);
            // The caches' sharing is the kernel's: its first rank measures
            // it for all (about 6 s quick, 15 s otherwise).
            if t == 0 && !args.no_reuse {
                let (rounds, samples) = if args.quick { (3, 3) } else { (7, 3) };
                reuse_by =
                    reuse::reuse_costs(&reuse::WORKING_SETS, &reuse::WAITS_S, rounds, samples);
            }
        }
    }
    quiet_barrier(world);
    let shift_by: Vec<ShiftPoint> = (node::SHIFT_DISTANCES.iter().zip(&shifts))
        .map(|(&d, s)| ShiftPoint {
            distance_bytes: d as u64,
            per_byte: SampleStats::from_samples(s),
        })
        .collect();
    // The figure of one distance: copy_cost's, an eighth of its bytes.
    let shift = (shift_by.iter())
        .find(|pt| pt.distance_bytes == (node::COPY_BYTES / 8) as u64)
        .map(|pt| pt.per_byte.clone());
    let touch = (!touch.is_empty()).then(|| SampleStats::from_samples(&touch));
    // Disk: the first rank of each host measures it; the others copy.
    let first_local = lay.local[0];
    let disk = if args.no_disk || me != first_local {
        None
    } else {
        let (sizes, reps): (Vec<usize>, usize) = if args.quick {
            (vec![4096, 65536, 1 << 20], 8)
        } else {
            (vec![4096, 16384, 65536, 262144, 1 << 20, 4 << 20], 32)
        };
        Some(
            node::disk(disk_dir, &sizes, reps)
                .map_err(|e| anyhow::anyhow!("disk measurement failed: {e}"))?,
        )
    };
    Ok(NodeCost {
        rank: me as u32,
        host: lay.hosts[me].clone(),
        cpu_weight: if cpu.p50 > 0.0 {
            slowest / cpu.p50
        } else {
            1.0
        },
        cpu_kernel: cpu,
        mem_available_bytes: mem,
        disk,
        copy_per_byte: Some(copy),
        shift_per_byte: shift,
        shift_by,
        touch_per_byte: touch,
        reuse_by,
        // Rank 0 fills it in for every rank (`Layout::kernel_first`).
        machine: None,
        machine_cpus: Some(lay.cores as u32),
    })
}

/// Rank 0's cluster profile from the measured pairs and nodes (and OSU's
/// loops); says on stderr how long the measurement took since `t0`.
fn assemble(
    args: &Args,
    lay: Layout,
    mut pairs: Vec<PairCost>,
    nodes: Vec<NodeCost>,
    osu: Option<OsuCompat>,
    t0: Instant,
) -> ClusterProfile {
    let serial = lay.serial;
    eprintln!(
        "mheta-microbench: {} pairs and {} nodes in {:.1} s ({})",
        pairs.len(),
        nodes.len(),
        t0.elapsed().as_secs_f64(),
        if serial {
            "one pair at a time: a node (a kernel) runs more ranks than it has cores"
        } else {
            "rounds of disjoint pairs in parallel"
        }
    );
    let mut profile = ClusterProfile::new(
        lay.p as u32,
        lay.hosts,
        "logp_mpi: o_s = eager 8 B MPI_Send time, o_r = MPI_Recv time of an arrived 8 B message, L = one-way(8 B) - o_s - o_r; one-way = RTT/2 fitted piecewise linear",
    );
    profile.schedule = if serial {
        "round-robin rounds of disjoint pairs, one pair at a time (oversubscribed)".into()
    } else {
        "round-robin rounds of disjoint pairs, in parallel".into()
    };
    profile.quick = args.quick;
    profile.timer_s = net::timer_cost();
    pairs.sort_by_key(|c| (c.src, c.dst));
    profile.pairs = pairs;
    profile.nodes = nodes;
    profile.osu = osu;
    profile
}

/// What a session prints: pair 0 -> 1's sweep in OSU's format, the
/// profile's tables ([`ClusterProfile::tables`], as `mheta show --profile`
/// prints them), and OSU's tables.
fn print_tables(p: &ClusterProfile) {
    let c01 = p.pair(0, 1);
    println!("# Latency, pair 0 -> 1 (half round trip, median)");
    println!("{:<10}{:>20}", "# Size", "Latency (us)");
    for s in &c01.sweep {
        println!("{:<10}{:>20.2}", s.bytes, s.one_way.p50 * 1e6);
    }
    println!("# Bandwidth, pair 0 -> 1 (window of {})", net::WINDOW);
    println!("{:<10}{:>20}", "# Size", "Bandwidth (MB/s)");
    for s in &c01.sweep {
        println!("{:<10}{:>20.2}", s.bytes, s.bandwidth_mbps);
    }
    print!("{}", p.tables());
    if let Some(o) = &p.osu {
        print_osu(o);
    }
}

/// OSU's own tables (`--osu-compat`, `--osu-only`), in OSU's format.
fn print_osu(o: &OsuCompat) {
    // A test not run (`--osu-test`) prints nothing.
    if !o.latency_us.is_empty() {
        println!(
            "# OSU MPI Latency Test (mheta --osu-compat: osu_latency's loop and buffers, pair {} -> {})",
            o.src, o.dst
        );
        println!("{:<10}{:>20}", "# Size", "Latency (us)");
        for (s, l) in &o.latency_us {
            println!("{s:<10}{l:>20.2}");
        }
    }
    if !o.bandwidth_mbps.is_empty() {
        println!(
            "# OSU MPI Bandwidth Test (mheta --osu-compat: osu_bw's loop and buffers, window 64)"
        );
        println!("{:<10}{:>20}", "# Size", "Bandwidth (MB/s)");
        for (s, b) in &o.bandwidth_mbps {
            println!("{s:<10}{b:>20.2}");
        }
    }
    let cut = |name: &str, iters: &[(u64, u64)], nominal: &dyn Fn(u64) -> u64| {
        let v: Vec<String> = iters
            .iter()
            .filter(|&&(s, n)| n < nominal(s))
            .map(|&(s, n)| format!("{s} ({n} of {})", nominal(s)))
            .collect();
        if !v.is_empty() {
            println!(
                "# {name}: fewer timed iterations than OSU's, to fit {} s a size: {}",
                mheta_microbench::osu::BUDGET_S,
                v.join(", ")
            );
        }
    };
    cut("latency", &o.latency_iters, &|s| {
        mheta_microbench::osu::latency_counts(s as usize).0 as u64
    });
    cut("bandwidth", &o.bandwidth_iters, &|s| {
        mheta_microbench::osu::bandwidth_counts(s as usize).0 as u64
    });
}

fn main() {
    let code = {
        let Some(universe) = mpi::initialize() else {
            eprintln!("mheta-microbench: error: MPI already initialised");
            std::process::exit(2);
        };
        let world = universe.world();
        let me = world.rank();
        let args = match Cli::try_parse() {
            Ok(c) => c.measure,
            Err(e) => {
                if me == 0 {
                    let _ = e.print();
                }
                let code = if e.use_stderr() { 2 } else { 0 };
                drop(universe);
                std::process::exit(code);
            }
        };
        match run(&world, &args).and_then(|p| {
            if let Some(p) = p {
                p.validate()
                    .map_err(anyhow::Error::msg)
                    .context("measured profile failed its own checks")?;
                if args.json {
                    print!("{}", p.to_json());
                } else {
                    print_tables(&p);
                }
                if let Some(out) = &args.output {
                    p.save(out)?;
                    eprintln!("mheta-microbench: wrote {}", out.display());
                }
            }
            Ok(())
        }) {
            Ok(()) => 0,
            Err(e) => {
                if me == 0 {
                    eprintln!("mheta-microbench: error: {e:#}");
                }
                2
            }
        }
    };
    std::process::exit(code)
}

#[cfg(test)]
mod tests {
    use super::rounds;

    #[test]
    fn rounds_cover_every_pair_once_with_disjoint_ranks() {
        for p in 2..=9 {
            let r = rounds(p);
            let mut seen = std::collections::HashSet::new();
            for round in &r {
                let mut busy = std::collections::HashSet::new();
                for &(a, b) in round {
                    assert!(
                        busy.insert(a) && busy.insert(b),
                        "rank twice in a round: {round:?}"
                    );
                    assert!(seen.insert((a, b)), "pair twice: {a},{b}");
                }
            }
            assert_eq!(seen.len(), p * (p - 1) / 2, "p = {p}");
        }
    }
}
