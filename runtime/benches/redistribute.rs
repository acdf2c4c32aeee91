//! Redistribution bench: how fast `RowBlock::redistribute` (what the apps'
//! in-core arrays move with) moves GEN_BLOCK rows between two ranks,
//! against what the pair can move otherwise.
//!
//! `cargo bench -p mheta-runtime --bench redistribute` launches itself under
//! `mpirun -np 2` (as root with `--allow-run-as-root`; `MHETA_MPIRUN`
//! overrides the launcher). For each size it moves that many bytes from
//! rank 1 to rank 0 and back (rows of 32 KiB; each rank starts with 64 MiB
//! of its own rows plus the moved ones), five times each way after a
//! warm-up move, and checks every value after every move. In the same
//! run, interleaved with the moves, it measures the pair four ways:
//! - **cold**: one message of the move's size between buffers out of the
//!   cache (`mheta_microbench::net::cold_one_way`, what the cluster
//!   profile's `bandwidth_cold_bps` measures at 8 MiB). A move reads rows
//!   last touched long ago and writes them where the receiver has not been
//!   lately, so this is the pair's bandwidth for the same work;
//! - **1 msg**: one message of the move's size, as osu_latency does (a
//!   ping-pong of the same two prefilled buffers, half the round trip;
//!   5 untimed round trips and one timed per rep): up to 16 MiB, buffers the last-level cache
//!   (32 MiB here) largely keeps;
//! - **osu_bw @size**: osu_bw's loop at the move's size (a window of 64
//!   non-blocking sends of one prefilled buffer, then an acknowledgement;
//!   `mheta_microbench::osu::bandwidth_with`, with fewer iterations than
//!   OSU's 22 so that 128 MiB fits a repetition), both directions: the
//!   pairwise bandwidth for messages this large, which
//!   `mheta bench --max-size 128M` (as `osu_bw -m 134217728`) records in
//!   the profile's sweep, and the ratio the target (0.8 for 8 MiB and
//!   more) is judged by;
//! - **osu_bw 1MiB**: the same loop at 1 MiB, the way the profile's
//!   `bandwidth_bps` is measured: the buffer stays in the cache, so it
//!   streams faster (9-13 GB/s here) than any message of 8 MiB or more.
//!
//! With `MHETA_PROFILE` set it also prints the ratio to that profile's
//! streaming bandwidth for pair 1 -> 0 at the largest size of its sweep
//! not above the move's (`PairCost::streaming_bps_at`), with that size.
//!
//! Every size runs twice, interleaved: with the row buffers in small
//! (4 KiB) pages, the default, and in huge pages (`MHETA_HUGE_PAGES=1`;
//! see `mheta_runtime::RowBuf`). Within each, moves go both ways by turns:
//! **both** (the default: the two ranks of the node each copy half of
//! the rows, see `mheta_runtime::set_on_node_copy`) and **mpi** (one MPI
//! message, `MHETA_ON_NODE_COPY=0`), and each prints its own line against
//! the same pair figures.
//!
//! Columns: bytes moved, the pages, the way, median seconds of a move
//! (slowest rank), GB/s (decimal), the GB/s of the first move (rank 0's
//! buffer grows into fresh memory, as in a run's first move; one sample,
//! on the default way), the GB/s of first touching a rank's rows
//! (`RowBlock::zeroed`, as an app's start pays it; one sample), then for
//! each way of measuring the pair its GB/s and the median move's ratio to
//! it.

use mheta_model::Dist;
use mheta_runtime::RowBlock;
use mpi::collective::{CommunicatorCollectives, SystemOperation};
use mpi::topology::{Communicator, SimpleCommunicator};
use std::process::Command;
use std::time::Instant;

const ROW: usize = 4096; // f64 values per row: 32 KiB
const BASE_ROWS: u64 = 2048; // 64 MiB per rank before the moved rows
const SIZES_MIB: [u64; 5] = [1, 8, 32, 64, 128];
const REPS: usize = 5;

fn main() {
    if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_none() && std::env::var_os("PMI_SIZE").is_none()
    {
        launch();
    }
    let Some(universe) = mpi::initialize() else {
        eprintln!("redistribute bench: MPI was already initialised");
        std::process::exit(2);
    };
    let world = universe.world();
    if world.size() != 2 {
        eprintln!(
            "redistribute bench: needs exactly 2 ranks, got {}",
            world.size()
        );
        std::process::exit(2);
    }
    run(&world);
}

/// Re-run this binary under mpirun with 2 ranks.
fn launch() -> ! {
    let me = std::env::current_exe().expect("own path");
    let launcher = std::env::var("MHETA_MPIRUN").unwrap_or_else(|_| "mpirun".into());
    let mut c = Command::new(&launcher);
    // SAFETY: geteuid only reads the process's credentials.
    if unsafe { libc::geteuid() } == 0 {
        c.arg("--allow-run-as-root");
    }
    c.args(["--oversubscribe", "-np", "2"]).arg(&me);
    let st = c.status().unwrap_or_else(|e| {
        eprintln!("redistribute bench: cannot start {launcher}: {e}");
        std::process::exit(2)
    });
    std::process::exit(st.code().unwrap_or(2));
}

/// Global value of element `k` of row `g`: every move is checked.
fn value(g: u64, k: usize) -> f64 {
    (g * ROW as u64 + k as u64) as f64
}

fn check(v: &[f64], first: u64, what: &str) {
    for (i, row) in v.chunks_exact(ROW).enumerate() {
        let g = first + i as u64;
        if row[0] != value(g, 0) || row[ROW - 1] != value(g, ROW - 1) {
            panic!("{what}: row {g} holds wrong values");
        }
    }
}

/// One move; returns the slowest rank's seconds.
fn timed_move(world: &SimpleCommunicator, old: &Dist, new: &Dist, v: &mut RowBlock<f64>) -> f64 {
    world.barrier();
    let t = Instant::now();
    v.redistribute(world, old, new, ROW);
    let mine = t.elapsed().as_secs_f64();
    let mut worst = 0.0;
    world.all_reduce_into(&mine, &mut worst, SystemOperation::max());
    let me = world.rank() as usize;
    check(v, new.offsets()[me], "after a move");
    worst
}

/// One-way time of one `bytes` message between ranks 1 and 0, as
/// osu_latency measures it (half a ping-pong round trip, buffers prefilled
/// by `Buffers`): one timed round trip after 5 untimed ones.
fn one_message(
    world: &SimpleCommunicator,
    bufs: &mut mheta_microbench::osu::Buffers,
    bytes: usize,
) -> f64 {
    world.barrier();
    let us = mheta_microbench::osu::latency_with(world, 1, 0, bufs, bytes, 1, 5);
    let mut y = 0.0;
    world.all_reduce_into(&us, &mut y, SystemOperation::max());
    y * 1e-6
}

/// One-way time of one `bytes` message from rank 1 to rank 0 between
/// buffers out of the cache (the profile's cold bandwidth, at this size).
fn cold_message(world: &SimpleCommunicator, bytes: usize) -> f64 {
    world.barrier();
    let s = mheta_microbench::net::cold_one_way(world, 1, 0, bytes);
    let mut y = 0.0;
    world.all_reduce_into(&s, &mut y, SystemOperation::max());
    y
}

fn median(mut v: Vec<f64>) -> f64 {
    mheta_base::median(&mut v).unwrap_or(f64::NAN)
}

fn run(world: &SimpleCommunicator) {
    let me = world.rank() as usize;
    let profile = std::env::var_os("MHETA_PROFILE").map(|p| {
        let prof =
            mheta_profile::ClusterProfile::load(std::path::Path::new(&p)).unwrap_or_else(|e| {
                eprintln!("redistribute bench: MHETA_PROFILE: {e:#}");
                std::process::exit(2)
            });
        prof.pairs
            .into_iter()
            .find(|c| c.src == 1 && c.dst == 0)
            .unwrap_or_else(|| {
                eprintln!("redistribute bench: MHETA_PROFILE has no pair 1 -> 0");
                std::process::exit(2)
            })
    });
    if me == 0 {
        println!(
            "# RowBlock::redistribute, 2 ranks (no emulation: one core each), rows of {} KiB",
            ROW * 8 / 1024
        );
        println!(
            "# moves rank 1 -> 0 and back, median of {REPS} each way after a warm-up; every value checked"
        );
        println!("# pages: the row buffers' (4K, or 2M: MHETA_HUGE_PAGES=1), interleaved per size");
        println!(
            "# way: both (each rank of the node copies half, the default) or mpi (one message), by turns"
        );
        println!(
            "{:>10} {:>5} {:>5} {:>10} {:>8} {:>10} {:>10} {:>10} {:>7} {:>10} {:>7} {:>12} {:>7} {:>12} {:>7} {:>15}",
            "bytes",
            "pages",
            "way",
            "seconds",
            "GB/s",
            "first GB/s",
            "alloc GB/s",
            "cold GB/s",
            "ratio",
            "1 msg GB/s",
            "ratio",
            "osu_bw @size",
            "ratio",
            "osu_bw 1MiB",
            "ratio",
            "profile ratio"
        );
    }
    for mib in SIZES_MIB {
        for huge in [false, true] {
            mheta_runtime::set_huge_pages(huge);
            one_row(world, mib, huge, profile.as_ref());
        }
    }
}

/// osu_bw's loop at `bytes` in both directions (1 -> 0, 0 -> 1), GB/s
/// each: windows enough to move about 2 GiB, at least one, after one
/// untimed window.
fn osu_bw_both(
    world: &SimpleCommunicator,
    bufs: &mut mheta_microbench::osu::Buffers,
    bytes: usize,
) -> [f64; 2] {
    let per_iter = mheta_microbench::osu::WINDOW * bytes;
    let iters = ((2usize << 30) / per_iter).max(1);
    let mut bw = [0.0f64; 2];
    for (i, (s, d)) in [(1, 0), (0, 1)].into_iter().enumerate() {
        world.barrier();
        let x = mheta_microbench::osu::bandwidth_with(world, s, d, bufs, bytes, iters, 1);
        let mut y = 0.0;
        world.all_reduce_into(&x, &mut y, SystemOperation::max());
        bw[i] = y * 1e-3;
    }
    bw
}

/// Measure and print one row of the table: moves of `mib` MiB between
/// buffers of huge pages or not, and the pair beside them.
fn one_row(
    world: &SimpleCommunicator,
    mib: u64,
    huge: bool,
    profile: Option<&mheta_profile::PairCost>,
) {
    let me = world.rank() as usize;
    let moved_rows = mib * 1024 * 1024 / (ROW as u64 * 8);
    let total = 2 * BASE_ROWS + moved_rows;
    // a: rank 1 holds the moved rows; b: rank 0 does.
    let a = Dist(vec![BASE_ROWS, BASE_ROWS + moved_rows]);
    let b = Dist(vec![BASE_ROWS + moved_rows, BASE_ROWS]);
    assert_eq!(b.total(), total);
    let first = a.offsets()[me];
    // The first touch of the rows, as an app's start pays it.
    world.barrier();
    let t = Instant::now();
    let mut v = RowBlock::zeroed(a.0[me] as usize * ROW);
    let alloc = t.elapsed().as_secs_f64();
    let mut worst_alloc = 0.0;
    world.all_reduce_into(&alloc, &mut worst_alloc, SystemOperation::max());
    let alloc_bytes = (a.0[0].max(a.0[1]) * ROW as u64 * 8) as f64;
    for (i, row) in v.chunks_exact_mut(ROW).enumerate() {
        for (k, x) in row.iter_mut().enumerate() {
            *x = value(first + i as u64, k);
        }
    }
    // Warm-up: one move each way, each way of copying. The first grows
    // rank 0's buffer into memory never touched before, as a run's first
    // move does.
    mheta_runtime::set_on_node_copy(true);
    let first = timed_move(world, &a, &b, &mut v);
    timed_move(world, &b, &a, &mut v);
    mheta_runtime::set_on_node_copy(false);
    timed_move(world, &a, &b, &mut v);
    timed_move(world, &b, &a, &mut v);
    let mut secs = [Vec::new(), Vec::new()];
    let mut bws = Vec::new();
    let mut one = Vec::new();
    let mut cold = Vec::new();
    let mut at_size = Vec::new();

    let mut osu_bufs = mheta_microbench::osu::Buffers::new(1 << 20);
    let bytes = (moved_rows * ROW as u64 * 8) as usize;
    let mut msg_bufs = mheta_microbench::osu::Buffers::new(bytes);
    for _ in 0..REPS {
        for (k, on) in [true, false].into_iter().enumerate() {
            mheta_runtime::set_on_node_copy(on);
            secs[k].push(timed_move(world, &a, &b, &mut v));
            secs[k].push(timed_move(world, &b, &a, &mut v));
        }
        one.push(one_message(world, &mut msg_bufs, bytes));
        cold.push(cold_message(world, bytes));
        at_size.extend(osu_bw_both(world, &mut msg_bufs, bytes));
        // The profile's way (window of 64 × 1 MiB).
        bws.extend(osu_bw_both(world, &mut osu_bufs, 1 << 20));
    }
    mheta_runtime::set_on_node_copy(true);
    if me == 0 {
        let bw = median(bws);
        let at_size = median(at_size);
        let msg = bytes as f64 / median(one) / 1e9;
        let cold = bytes as f64 / median(cold) / 1e9;

        for (k, way) in ["both", "mpi"].into_iter().enumerate() {
            let s = median(std::mem::take(&mut secs[k]));
            let gbs = bytes as f64 / s / 1e9;
            let prof = profile
                .and_then(|c| c.streaming_bps_at(bytes as u64))
                .map_or("-".to_string(), |(at, bps)| {
                    format!("{:.2} @{}M", gbs * 1e9 / bps, at >> 20)
                });
            let (first, alloc) = if k == 0 {
                (
                    format!("{:.2}", bytes as f64 / first / 1e9),
                    format!("{:.2}", alloc_bytes / worst_alloc / 1e9),
                )
            } else {
                ("-".into(), "-".into())
            };
            println!(
                "{:>10} {:>5} {:>5} {:>10.6} {:>8.2} {:>10} {:>10} {:>10.2} {:>7.2} {:>10.2} {:>7.2} {:>12.2} {:>7.2} {:>12.2} {:>7.2} {:>15}",
                bytes,
                if huge { "2M" } else { "4K" },
                way,
                s,
                gbs,
                first,
                alloc,
                cold,
                gbs / cold,
                msg,
                gbs / msg,
                at_size,
                gbs / at_size,
                bw,
                gbs / bw,
                prof
            );
        }
    }
}
