//! `mheta-microbench`: measures a cluster once, under `mpirun`, and writes
//! its cluster profile (format: `mheta-profile`). `mheta bench --np N`
//! launches it; it can also run under any launcher or batch system.
//!
//! For every ordered pair (i, j), one pair at a time while the other ranks
//! wait at a barrier:
//! - round trip: ping-pong of each size in the sweep, median of the reps;
//!   one-way time `ow(b) = RTT(b)/2`;
//! - send overhead `o_s`: time of an eager `MPI_Send` of 8 B at i;
//! - receive overhead `o_r`: time of `MPI_Recv` at j of an 8 B message that
//!   has already arrived (j waits two round trips before posting it), as in
//!   logp_mpi's overhead measurement;
//! - latency `L = ow(8) - o_s - o_r` (LogP: RTT = 2(o_s + L + o_r));
//! - per-byte cost `G`: least-squares slope of `ow(b)` over the sweep.

use anyhow::{Context, Result, bail};
use clap::Parser;
use mheta_profile::{ClusterProfile, PairCost};
use mpi::collective::{CommunicatorCollectives, Root};
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, SimpleCommunicator};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Measure every ordered pair of ranks and write a cluster profile.
#[derive(Parser, Debug)]
#[command(name = "mheta-microbench", version, about)]
struct Args {
    /// Fewer sizes and repetitions (seconds, for CI and smoke tests).
    #[arg(long)]
    quick: bool,
    /// Where to write the cluster profile (JSON).
    #[arg(short = 'o', long = "output", value_name = "PROFILE.json")]
    output: PathBuf,
}

const TAG: i32 = 0x4d42;

struct Plan {
    sizes: Vec<usize>,
    reps_small: usize,
    reps_large: usize,
    overhead_reps: usize,
}

impl Plan {
    fn new(quick: bool) -> Plan {
        if quick {
            Plan {
                sizes: vec![8, 64, 512, 4096, 32768, 262144, 1 << 20],
                reps_small: 200,
                reps_large: 20,
                overhead_reps: 100,
            }
        } else {
            Plan {
                sizes: (0..=22).map(|k| 1usize << k).collect(),
                reps_small: 2000,
                reps_large: 100,
                overhead_reps: 1000,
            }
        }
    }

    fn reps(&self, size: usize) -> usize {
        if size <= 65536 {
            self.reps_small
        } else {
            self.reps_large
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        0.5 * (v[m - 1] + v[m])
    }
}

fn spin(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// Measurements of pair (a -> b); meaningful on rank a.
fn measure_pair(world: &SimpleCommunicator, plan: &Plan, a: i32, b: i32) -> Option<PairCost> {
    let me = world.rank();
    let pa = world.process_at_rank(a);
    let pb = world.process_at_rank(b);
    let big = *plan.sizes.iter().max().unwrap_or(&8);
    let mut buf = vec![0u8; big];
    let mut ack = 0u8;
    // Ping-pong sweep.
    let mut ow = Vec::new();
    for &size in &plan.sizes {
        let reps = plan.reps(size);
        let warm = (reps / 10).max(2);
        let mut samples = Vec::with_capacity(reps);
        for r in 0..reps + warm {
            if me == a {
                let t = Instant::now();
                pb.send_with_tag(&buf[..size], TAG);
                pb.receive_into_with_tag(&mut buf[..size], TAG);
                if r >= warm {
                    samples.push(t.elapsed().as_secs_f64() / 2.0);
                }
            } else {
                pa.receive_into_with_tag(&mut buf[..size], TAG);
                pa.send_with_tag(&buf[..size], TAG);
            }
        }
        if me == a {
            ow.push((size as f64, median(samples)));
        }
    }
    let rtt8 = 2.0 * ow.iter().find(|x| x.0 == 8.0).map_or(0.0, |x| x.1);
    // Send overhead: an eager send returns once the data is buffered.
    let mut os = Vec::new();
    for _ in 0..plan.overhead_reps {
        if me == a {
            let t = Instant::now();
            pb.send_with_tag(&buf[..8], TAG);
            os.push(t.elapsed().as_secs_f64());
            pb.receive_into_with_tag(&mut ack, TAG);
        } else {
            pa.receive_into_with_tag(&mut buf[..8], TAG);
            pa.send_with_tag(&ack, TAG);
        }
    }
    // Receive overhead: b posts the receive after the message has arrived.
    let mut or = Vec::new();
    let delay = Duration::from_secs_f64((4.0 * rtt8).max(20e-6));
    let mut delay_sync = [0.0f64; 1];
    if me == a {
        delay_sync[0] = delay.as_secs_f64();
        pb.send_with_tag(&delay_sync[..], TAG);
    } else {
        pa.receive_into_with_tag(&mut delay_sync[..], TAG);
    }
    let delay = Duration::from_secs_f64(delay_sync[0]);
    for _ in 0..plan.overhead_reps {
        if me == a {
            pb.send_with_tag(&buf[..8], TAG);
            pb.receive_into_with_tag(&mut ack, TAG);
        } else {
            spin(delay);
            let t = Instant::now();
            pa.receive_into_with_tag(&mut buf[..8], TAG);
            or.push(t.elapsed().as_secs_f64());
            pa.send_with_tag(&ack, TAG);
        }
    }
    // o_r was measured at b: send it to a.
    let mut or_med = [0.0f64];
    if me == b {
        or_med[0] = median(or);
        pa.send_with_tag(&or_med[..], TAG);
        return None;
    }
    pb.receive_into_with_tag(&mut or_med[..], TAG);
    let o_send_s = median(os);
    let o_recv_s = or_med[0];
    // Least-squares line through (bytes, one-way time).
    let n = ow.len() as f64;
    let (sx, sy) = ow.iter().fold((0.0, 0.0), |(a, b), p| (a + p.0, b + p.1));
    let (mx, my) = (sx / n, sy / n);
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for p in &ow {
        sxy += (p.0 - mx) * (p.1 - my);
        sxx += (p.0 - mx) * (p.0 - mx);
    }
    let per_byte_s = if sxx > 0.0 { (sxy / sxx).max(0.0) } else { 0.0 };
    let latency_s = (rtt8 / 2.0 - o_send_s - o_recv_s).max(0.0);
    let (bsize, btime) = *ow.last().unwrap_or(&(8.0, 1.0));
    Some(PairCost {
        src: a as u32,
        dst: b as u32,
        latency_s,
        per_byte_s,
        o_send_s,
        o_recv_s,
        rtt_small_s: rtt8,
        bandwidth_bps: bsize / btime,
    })
}

fn processor_name() -> String {
    mpi::environment::processor_name().unwrap_or_default()
}

fn run(world: &SimpleCommunicator, args: &Args) -> Result<Option<ClusterProfile>> {
    let p = world.size();
    let me = world.rank();
    if p < 2 {
        bail!("needs at least 2 ranks to measure pairs (got {p}); run with --np 2 or more");
    }
    // Check the output path before measuring anything; all ranks agree.
    let mut ok = [1u8];
    if me == 0 {
        let probe = args
            .output
            .with_extension(format!("probe.{}", std::process::id()));
        match std::fs::write(&probe, b"") {
            Ok(()) => {
                let _ = std::fs::remove_file(&probe);
            }
            Err(e) => {
                eprintln!(
                    "mheta-microbench: error: -o {}: cannot write there: {e}",
                    args.output.display()
                );
                ok[0] = 0;
            }
        }
    }
    world.process_at_rank(0).broadcast_into(&mut ok[..]);
    if ok[0] == 0 {
        bail!("");
    }
    let plan = Plan::new(args.quick);
    let name = processor_name();
    let mut hosts_flat = vec![0u8; 256 * p as usize];
    let mut mine = [0u8; 256];
    let nb = name.as_bytes();
    mine[..nb.len().min(255)].copy_from_slice(&nb[..nb.len().min(255)]);
    world.all_gather_into(&mine[..], &mut hosts_flat[..]);
    let hosts: Vec<String> = hosts_flat
        .chunks(256)
        .map(|c| {
            String::from_utf8_lossy(&c[..c.iter().position(|&x| x == 0).unwrap_or(256)])
                .into_owned()
        })
        .collect();
    let mut profile = ClusterProfile::new(
        p as u32,
        hosts,
        "logp-mpi-style: o_s = eager MPI_Send time, o_r = MPI_Recv time of an arrived message, L = RTT/2 - o_s - o_r, G = least-squares slope of RTT/2",
    );
    let t0 = Instant::now();
    for a in 0..p {
        for b in 0..p {
            if a == b {
                continue;
            }
            world.barrier();
            let cost = if me == a || me == b {
                measure_pair(world, &plan, a, b)
            } else {
                None
            };
            // Collect at rank 0: a sends its result.
            let mut v = [0.0f64; 6];
            if let Some(c) = &cost {
                v = [
                    c.latency_s,
                    c.per_byte_s,
                    c.o_send_s,
                    c.o_recv_s,
                    c.rtt_small_s,
                    c.bandwidth_bps,
                ];
                if a != 0 {
                    world.process_at_rank(0).send_with_tag(&v[..], TAG);
                }
            }
            if me == 0 {
                if a != 0 {
                    world
                        .process_at_rank(a)
                        .receive_into_with_tag(&mut v[..], TAG);
                }
                profile.pairs.push(PairCost {
                    src: a as u32,
                    dst: b as u32,
                    latency_s: v[0],
                    per_byte_s: v[1],
                    o_send_s: v[2],
                    o_recv_s: v[3],
                    rtt_small_s: v[4],
                    bandwidth_bps: v[5],
                });
            }
        }
    }
    world.barrier();
    if me != 0 {
        return Ok(None);
    }
    eprintln!(
        "mheta-microbench: measured {} pairs in {:.1} s",
        profile.pairs.len(),
        t0.elapsed().as_secs_f64()
    );
    Ok(Some(profile))
}

fn print_table(p: &ClusterProfile) {
    println!(
        "# mheta-microbench: {} ranks on {}",
        p.np,
        p.hosts.join(",")
    );
    println!(
        "# {:>4} {:>4} {:>12} {:>12} {:>12} {:>12} {:>14}",
        "src", "dst", "o_s (us)", "o_r (us)", "L (us)", "RTT8 (us)", "BW (MB/s)"
    );
    for c in &p.pairs {
        println!(
            "  {:>4} {:>4} {:>12.3} {:>12.3} {:>12.3} {:>12.3} {:>14.1}",
            c.src,
            c.dst,
            c.o_send_s * 1e6,
            c.o_recv_s * 1e6,
            c.latency_s * 1e6,
            c.rtt_small_s * 1e6,
            c.bandwidth_bps / 1e6
        );
    }
}

fn main() {
    let code = {
        let universe = mpi::initialize();
        let Some(universe) = universe else {
            eprintln!("mheta-microbench: error: MPI already initialised");
            std::process::exit(2);
        };
        let world = universe.world();
        let me = world.rank();
        let args = match Args::try_parse() {
            Ok(a) => a,
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
                print_table(&p);
                p.save(&args.output)?;
                eprintln!("mheta-microbench: wrote {}", args.output.display());
            }
            Ok(())
        }) {
            Ok(()) => 0,
            Err(e) => {
                let msg = format!("{e:#}");
                if me == 0 && !msg.is_empty() {
                    eprintln!("mheta-microbench: error: {msg}");
                }
                2
            }
        }
    };
    std::process::exit(code)
}
