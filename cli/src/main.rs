//! `mheta`: the command line of the mheta system. One module per
//! subcommand owns its flags (a `clap::Args` struct) and its `main`;
//! this file names the subcommands and dispatches to them.

use anyhow::Result;
use clap::{Parser, Subcommand};

mod bench;
mod experiment;
mod hosts;
mod launch;
mod load;
mod load_desc;
mod place;
mod predict;
mod run;
mod scale;
mod search;
mod sense;
mod show;
mod slowdown;

use launch::{exe_dir, is_open_mpi_launcher, is_root};

/// mheta: find and apply the best GEN_BLOCK row distribution for iterative
/// MPI codes on heterogeneous or shared clusters, with the MHETA execution
/// model.
///
/// A session: `mheta bench` measures the cluster once; `mheta run -- mpirun
/// ...` records a few instrumented iterations of your program; `mheta predict`
/// and `mheta search` evaluate distributions from the two.
#[derive(Parser, Debug)]
#[command(name = "mheta", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Emulated hosts and links on this machine (network namespaces on a
    /// bridge, shaped links, added latency), and mpirun across them:
    /// `mheta hosts up|down|status|mpirun|env SPEC`.
    Hosts(hosts::HostsArgs),
    /// Generate competing load beside a job (Figueira and Berman's generator): CPU
    /// hogs, processes that alternate computation and communication
    /// cycles, and bursty load that switches between levels. Pinned to
    /// chosen cores; writes its timeline (JSON); stops cleanly on SIGINT
    /// or SIGTERM.
    Load(load::LoadArgs),
    /// Sense the CPU availability and the available bandwidth of cores
    /// over time, as the Network Weather Service did: samples,
    /// HdrHistogram distributions with their modes, dwell times, and the
    /// sensors' own overhead; optionally a load description for
    /// `mheta predict --load`.
    Sense(sense::SenseArgs),
    /// Measure the cluster: run mheta-microbench on N ranks under mpirun and
    /// write the cluster profile (JSON). With `--cluster` naming a spec with
    /// hosts, the ranks run across its emulated hosts (brought up for the
    /// measurement if they are down) and every pair is measured over its
    /// link.
    Bench(bench::BenchArgs),
    /// Run an MPI launcher with the interposer loaded, recording the
    /// instrumented iterations into the trace directory.
    ///
    /// Example: mheta run --trace-dir tr -- mpirun -np 4 ./jacobi --n 2048
    Run(run::RunArgs),
    /// Print a recorded trace directory (per rank, the instrumented
    /// iterations' compute, stages and every event as a table) or a
    /// cluster profile (per pair o_s, o_r, L, 8-byte round trip with their
    /// spread and modes; per node CPU, memory and disk).
    Show(show::ShowArgs),
    /// Print the slowdowns a load description means for each rank, by both
    /// local-slowdown rules (Figueira and Berman eq. 2 as published, and under
    /// processor sharing), without a trace: what a job's computation on
    /// each node is stretched by (eq. 1: X = X_ded · sd).
    ///
    /// Example: mheta slowdown --load load.toml --np 2
    Slowdown(slowdown::SlowdownArgs),
    /// Predict the time of a distribution with the MHETA model.
    Predict(predict::PredictArgs),
    /// Reproduce the MHETA paper's accuracy study (section 5) on real runs:
    /// one instrumented run on Block, then for each distribution of the
    /// figure 8 spectrum (Blk -> I-C -> I-C/Bal -> Bal -> Blk) and the GBS
    /// choice, a prediction and a real run. Prints predicted, actual and
    /// diff = |p - a| / min(p, a) per distribution, then min/avg/max diff
    /// and whether the predicted best is the actual best. Its "busy %"
    /// column is the diff of the busiest rank's time in stages alone
    /// (computation and I/O, predicted against measured): the rest of a
    /// diff is communication and waiting. Its "CPU/unit" column is each
    /// rank's CPU time per unit of work over its own on Blk's runs (median
    /// over the runs and ranks): the model prices a row as recorded on
    /// Block, so a point off 1 has its compute off by as much (on a cache
    /// shared with other guests, a rank's rows cost more after long waits,
    /// and more when its arrays grow past what stays cached). With a
    /// profile that has a reuse curve (`mheta bench`'s default) the model prices that (the reuse
    /// term), and the summary gives the paper's model on the same runs.
    ///
    /// Example: mheta experiment --app jacobi --cluster IO --np 4 --plot io.svg
    Experiment(experiment::Args),
    /// Search distributions with the model and print the best.
    Search(search::SearchArgs),
    /// Romanazzi and Jimack's scaling model: fit T = T_comp(work) + α(np) + γ·work on
    /// runs at few processes, predict many, on one host group or split
    /// over two: `mheta scale fit|predict|fastest|budget|check`.
    Scale(scale::ScaleArgs),
    /// Place a task farm's master and workers by the work-rate model
    /// (Shao, Berman and Wolski): every candidate master's flow rate, simulated time and
    /// chosen workers.
    Place(place::PlaceArgs),
}

fn main() {
    // Die quietly on a closed pipe (`mheta show | head`), as Unix tools do.
    // SAFETY: setting a signal disposition before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let r: Result<i32> = match Cli::parse().cmd {
        Cmd::Hosts(a) => hosts::main(a),
        Cmd::Load(a) => load::main(a),
        Cmd::Sense(a) => sense::main(a),
        Cmd::Bench(a) => bench::main(a),
        Cmd::Run(a) => run::main(a),
        Cmd::Show(a) => show::main(a),
        Cmd::Slowdown(a) => slowdown::main(a),
        Cmd::Predict(a) => predict::main(a),
        Cmd::Experiment(a) => experiment::main(a),
        Cmd::Search(a) => search::main(a),
        Cmd::Scale(a) => scale::main(a),
        Cmd::Place(a) => place::main(a),
    };
    match r {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("mheta: error: {e:#}");
            std::process::exit(2);
        }
    }
}
