//! `mheta`: the command line of the mheta system.

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use mheta_profile::{ClusterProfile, ModeChoice};
use mheta_runtime::slowdown::LocalRule;
use mheta_runtime::{Dist, Model};
use mheta_runtime::{analysis, search};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

mod experiment;
mod hosts;
mod load;
mod loaded;
mod sense;

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
    /// Generate competing load beside a job (seed 000's generator): CPU
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
    Bench {
        /// Ranks to measure (at least 2; default: the --cluster spec's).
        #[arg(long, required_unless_present = "cluster")]
        np: Option<u32>,
        /// A cluster spec with [[host]] tables: measure across its hosts.
        #[arg(long, value_name = "SPEC")]
        cluster: Option<String>,
        /// Fewer sizes and repetitions.
        #[arg(long)]
        quick: bool,
        /// Where to write the profile.
        #[arg(
            short = 'o',
            long = "output",
            value_name = "PROFILE.json",
            required_unless_present = "osu_only"
        )]
        output: Option<PathBuf>,
        /// Print the profile as JSON on stdout instead of the tables.
        #[arg(long)]
        json: bool,
        /// Also run OSU's osu_latency and osu_bw loops (pair 0 -> 1).
        #[arg(long)]
        osu_compat: bool,
        /// Run only OSU's loops (pair 0 -> 1) in a process that measures
        /// nothing else, as OSU's programs do; write no profile.
        #[arg(long, conflicts_with_all = ["json", "osu_compat", "output"])]
        osu_only: bool,
        /// Directory whose disk is measured (default: $TMPDIR or /tmp).
        #[arg(long, value_name = "DIR")]
        disk_dir: Option<PathBuf>,
        /// Do not measure disks.
        #[arg(long)]
        no_disk: bool,
        /// Largest message of the sweep and the OSU loops, as OSU's `-m`
        /// (bytes, or with K, M, G: `128M`; 64K to 1G). Default 4M.
        /// Redistributions move tens of megabytes; past the last-level
        /// cache a pair streams slower than at 1 MiB.
        #[arg(long, value_name = "SIZE", value_parser = mheta_profile::parse_max_size)]
        max_size: Option<u64>,
    },
    /// Run an MPI launcher with the interposer loaded, recording the
    /// instrumented iterations into the trace directory.
    ///
    /// Example: mheta run --trace-dir tr -- mpirun -np 4 ./jacobi --n 2048
    Run {
        /// Where each rank writes its trace and the summary its report
        /// (created if missing; old rank traces in it are removed first).
        #[arg(long, default_value = "mheta-trace")]
        trace_dir: PathBuf,
        /// Index (from 0) of the first iteration to record.
        #[arg(long, default_value_t = mheta_trace::DEFAULT_INSTRUMENT_ITER)]
        iteration: u64,
        /// Tools to load: recorder (the trace), summary (an mpiP-like
        /// report of calls, bytes and time per MPI function), or both.
        #[arg(long, default_value = "recorder", value_name = "LIST")]
        tools: String,
        /// Consecutive iterations to record (the model takes medians).
        #[arg(long, default_value_t = mheta_trace::DEFAULT_INSTRUMENT_COUNT, value_parser = clap::value_parser!(u64).range(1..))]
        count: u64,
        /// Record the whole run, MPI_Init to MPI_Finalize, as one
        /// iteration (iteration markers ignored): for programs that mark
        /// no iterations (MHETA_RECORD_ALL=1).
        #[arg(long, conflicts_with_all = ["iteration", "count"])]
        whole_run: bool,
        /// A cluster spec with [[host]] tables: run across its emulated
        /// hosts (brought up for the run if they are down). An Open MPI
        /// mpirun given as the launcher gets the hosts and the agent; any
        /// launcher (salloc ... mpirun) gets the lab's OMPI_MCA_* settings.
        #[arg(long, value_name = "SPEC")]
        cluster: Option<String>,
        /// The launcher and its arguments, after `--`.
        #[arg(last = true, value_name = "LAUNCHER ARGS")]
        launcher: Vec<OsString>,
    },
    /// Print a recorded trace directory (per rank, the instrumented
    /// iterations' compute, stages and every event as a table) or a
    /// cluster profile (per pair o_s, o_r, L, 8-byte round trip with their
    /// spread and modes; per node CPU, memory and disk).
    Show {
        /// Trace directory from `mheta run`.
        #[arg(long, required_unless_present = "profile", conflicts_with = "profile")]
        trace: Option<PathBuf>,
        /// Cluster profile from `mheta bench`.
        #[arg(long)]
        profile: Option<PathBuf>,
        /// JSON instead of tables (traces: one object with the app
        /// declaration and ranks; profile: the profile itself).
        #[arg(long)]
        json: bool,
    },
    /// Print the slowdowns a load description means for each rank, by both
    /// local-slowdown rules (seed 000 eq. 2 as published, and under
    /// processor sharing), without a trace: what a job's computation on
    /// each node is stretched by (eq. 1: X = X_ded · sd).
    ///
    /// Example: mheta slowdown --load load.toml --np 2
    Slowdown {
        /// Load description (TOML or JSON) or a `mheta sense` file.
        #[arg(long, value_name = "FILE")]
        load: PathBuf,
        /// Ranks of the job.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
        np: u64,
        /// Dedicated length of the run, seconds: a load that switches
        /// modes is averaged over it.
        #[arg(long, default_value_t = 60.0)]
        run_s: f64,
        /// One JSON object on stdout instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Predict the time of a distribution with the MHETA model.
    Predict {
        /// Cluster profile from `mheta bench`.
        #[arg(long)]
        profile: PathBuf,
        /// Trace directory from `mheta run`.
        #[arg(long)]
        trace: PathBuf,
        /// Rows per rank, s0,s1,... (sums to the app's rows).
        #[arg(long)]
        dist: String,
        /// Iterations in the run (total_s = iters * per_iteration_s).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
        iters: u64,
        /// Which mode of a multi-modal network figure (o_s, o_r, 8-byte
        /// latency) the model uses: mean (the modes holding at least 20%
        /// of the samples, weighted by their shares: what the profile
        /// stores), dominant (the largest share), fast or slow.
        #[arg(long, default_value = "mean")]
        mode: ModeChoice,
        /// Also price moving from this distribution (default: the one
        /// recorded) to --dist, and say whether the gain over --iters
        /// iterations pays for it, as `--auto` decides.
        #[arg(long, value_name = "DIST")]
        from: Option<String>,
        /// The load the run meets on a shared cluster: a load description
        /// (TOML or JSON: per node its ranks and competing processes, or
        /// its sensed CPU availability, and its links' slowdown) or a
        /// `mheta sense` file written with --ranks. Computation and message
        /// overheads are slowed per seed 000 eqs. 1-2, transfers per eq. 3;
        /// the prediction carries mean ± 2σ (seed 004).
        #[arg(long, value_name = "FILE")]
        load: Option<PathBuf>,
        /// Local-slowdown rule for competitors: sharing (eq. 2 under
        /// processor sharing, the default) or paper (eq. 2 as published).
        /// Overrides the file's `rule`.
        #[arg(long)]
        rule: Option<mheta_runtime::slowdown::LocalRule>,
        /// One JSON object on stdout instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Reproduce the MHETA paper's accuracy study (section 5) on real runs:
    /// one instrumented run on Block, then for each distribution of the
    /// figure 8 spectrum (Blk -> I-C -> I-C/Bal -> Bal -> Blk) and the GBS
    /// choice, a prediction and a real run. Prints predicted, actual and
    /// diff = |p - a| / min(p, a) per distribution, then min/avg/max diff
    /// and whether the predicted best is the actual best. Its "busy %"
    /// column is the diff of the busiest rank's time in stages alone
    /// (computation and I/O, predicted against measured): the rest of a
    /// diff is communication and waiting.
    ///
    /// Example: mheta experiment --app jacobi --cluster IO --np 4 --plot io.svg
    Experiment {
        /// Kernel: jacobi, sor, lanczos, cg, wavefront or mg.
        #[arg(long)]
        app: String,
        /// Emulated cluster: DC, IO, HY1, HY2, a built-in name or a TOML file.
        #[arg(long)]
        cluster: String,
        /// Ranks (must match the cluster).
        #[arg(long)]
        np: usize,
        /// Out-of-core sweeps prefetch (MHETA eq. 2).
        #[arg(long)]
        prefetch: bool,
        /// Distributions along the spectrum (at least 3; GBS's is added).
        #[arg(long, default_value_t = 9)]
        points: usize,
        /// Iterations of each real run (its median iteration is "actual");
        /// cg runs its NPB class's count.
        #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..))]
        iters: u64,
        /// Real runs per distribution, in interleaved rounds (every point
        /// once, then again): "actual" is the median of the runs' median
        /// iterations, and the JSON gives each run and the spread. A
        /// shared machine drifts between runs; one run per point shows
        /// that drift as model error.
        #[arg(long, default_value_t = 1, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        repeat: usize,
        /// Cluster profile from `mheta bench` (default: measure one now).
        #[arg(long)]
        profile: Option<PathBuf>,
        /// Working directory for the profile and trace.
        #[arg(long, default_value = "mheta-experiment")]
        dir: PathBuf,
        /// One JSON object on stdout instead of the table.
        #[arg(long)]
        json: bool,
        /// Also draw predicted and actual time over the spectrum as SVG.
        #[arg(long, value_name = "FILE.svg")]
        plot: Option<PathBuf>,
        /// Arguments for the kernel instead of the study's defaults (sizes).
        #[arg(last = true, value_name = "APP ARGS")]
        app_args: Vec<OsString>,
    },
    /// Search distributions with the model and print the best.
    Search {
        /// Cluster profile from `mheta bench`.
        #[arg(long)]
        profile: PathBuf,
        /// Trace directory from `mheta run`.
        #[arg(long)]
        trace: PathBuf,
        /// gbs (generalized binary search), block, balanced (by measured
        /// speed), exhaustive (every distribution on the finest grid of
        /// rows that fits --budget), annealing, genetic or random (stochastic,
        /// --budget evaluations, --seed).
        #[arg(long, default_value = "gbs", value_parser = clap::builder::PossibleValuesParser::new(search::STRATEGIES))]
        strategy: String,
        /// Model evaluations for the stochastic strategies, and the most
        /// distributions exhaustive search may visit.
        #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..))]
        budget: u64,
        /// Seed of the stochastic strategies.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Instead of searching, print the paper's figure 8 spectrum: K
        /// distributions along Blk -> I-C -> I-C/Bal -> Bal -> Blk with
        /// their predicted times.
        #[arg(long, value_name = "K")]
        spectrum: Option<usize>,
        /// The load the run meets on a shared cluster: a load description
        /// (TOML or JSON: per node its ranks and competing processes, or
        /// its sensed CPU availability, and its links' slowdown) or a
        /// `mheta sense` file written with --ranks. Computation and message
        /// overheads are slowed per seed 000 eqs. 1-2, transfers per eq. 3;
        /// the prediction carries mean ± 2σ (seed 004).
        #[arg(long, value_name = "FILE")]
        load: Option<PathBuf>,
        /// Local-slowdown rule for competitors: sharing (eq. 2 under
        /// processor sharing, the default) or paper (eq. 2 as published).
        /// Overrides the file's `rule`.
        #[arg(long)]
        rule: Option<mheta_runtime::slowdown::LocalRule>,
        /// With --load: also minimise this quantile of the iteration time
        /// (e.g. 0.95) and print both plans, the mean-optimal and the
        /// quantile-optimal, each at its mean and quantile.
        #[arg(long, value_name = "Q", requires = "load", value_parser = parse_quantile)]
        quantile: Option<f64>,
        /// Iterations of the run: a load that switches modes is averaged
        /// over the run's length (with --load).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
        iters: u64,
        /// One JSON object on stdout instead of text.
        #[arg(long)]
        json: bool,
    },
}

fn parse_quantile(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(q) if q > 0.0 && q < 1.0 => Ok(q),
        _ => Err(format!(
            "{s:?}: a quantile is a number strictly between 0 and 1"
        )),
    }
}

/// The model of `trace` on `profile`'s figures in the chosen mode, and the
/// profile as measured.
fn load_model(profile: &Path, trace: &Path, mode: ModeChoice) -> Result<(Model, ClusterProfile)> {
    let traces = mheta_trace::read_dir(trace)?;
    let app = mheta_trace::read_app(trace)?;
    let prof = ClusterProfile::load(profile)?;
    Ok((Model::new(&traces, app, &prof.with_mode(mode))?, prof))
}

/// The line `predict` prints about the network figures' modes.
fn mode_note(p: &ClusterProfile, mode: ModeChoice) -> String {
    let mm = p.multi_modal();
    if mm.is_empty() {
        format!(
            "network: o_s, o_r and 8-byte latency are unimodal in every pair (--mode {mode} changes nothing)"
        )
    } else {
        let list: Vec<String> = mm
            .iter()
            .map(|(s, d, n, t)| format!("{s}->{d} {n}: {t}"))
            .collect();
        let which = if mode == ModeChoice::Mean {
            mheta_profile::MEAN_TEXT.to_string()
        } else {
            format!("the {mode} mode")
        };
        format!(
            "network: {which} of each multi-modal figure ({})",
            list.join("; ")
        )
    }
}

/// `mheta show --profile`: the profile as tables.
fn show_profile(p: &ClusterProfile) {
    println!(
        "# cluster profile: {} ranks on {}{}; timer reading {:.0} ns",
        p.np,
        p.hosts.join(","),
        if p.quick { " (quick)" } else { "" },
        p.timer_s * 1e9
    );
    println!("# method: {}", p.method);
    println!("# schedule: {}", p.schedule);
    println!(
        "# per pair, us ({}); spread = interquartile range of the round medians, % of the median; eager B = the largest send that completes before its receive is posted",
        mheta_profile::MEAN_TEXT
    );
    println!(
        "{:>5} {:>5} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7} {:>7} {:>7} {:>12} {:>13} {:>8}",
        "src",
        "dst",
        "o_s",
        "o_r",
        "L",
        "RTT8",
        "rounds",
        "o_s±%",
        "o_r±%",
        "RTT8±%",
        "MB/s (1 MiB)",
        "MB/s (8M cold)",
        "eager B"
    );
    for c in &p.pairs {
        println!(
            "{:>5} {:>5} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>7} {:>7.1} {:>7.1} {:>7.1} {:>12.0} {:>13} {:>8}",
            c.src,
            c.dst,
            c.o_send_s * 1e6,
            c.o_recv_s * 1e6,
            c.latency_s * 1e6,
            c.rtt_small_s * 1e6,
            c.one_way_small.rounds.len(),
            c.o_send.spread_pct,
            c.o_recv.spread_pct,
            c.one_way_small.spread_pct,
            c.bandwidth_bps / 1e6,
            if c.bandwidth_cold_bps > 0.0 {
                format!("{:.0}", c.bandwidth_cold_bps / 1e6)
            } else {
                "-".into()
            },
            c.eager_text()
        );
    }
    let mm = p.multi_modal();
    if mm.is_empty() {
        println!("# modes: every o_s, o_r and 8-byte one-way time is unimodal");
    } else {
        println!(
            "# modes: the stored figure is {} (`mheta predict --mode dominant|fast|slow` picks one mode)",
            mheta_profile::MEAN_TEXT
        );
        for (s, d, n, t) in mm {
            println!("#   {s} -> {d} {n}: {t}");
        }
    }
    println!(
        "{:>5} {:<12} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "rank", "host", "cpu w", "mem MB", "O_r us", "r ns/B", "O_w us", "w ns/B"
    );
    for n in &p.nodes {
        let d = n.disk.as_ref();
        let f = |x: Option<f64>, k: f64| x.map_or("-".to_string(), |v| format!("{:.3}", v * k));
        println!(
            "{:>5} {:<12} {:>8.3} {:>10.0} {:>10} {:>10} {:>10} {:>10}",
            n.rank,
            n.host,
            n.cpu_weight,
            n.mem_available_bytes as f64 / 1e6,
            f(d.map(|d| d.read_overhead_s), 1e6),
            f(d.map(|d| d.read_per_byte_s), 1e9),
            f(d.map(|d| d.write_overhead_s), 1e6),
            f(d.map(|d| d.write_per_byte_s), 1e9),
        );
    }
    print!("{}", p.link_tables());
}

fn exe_dir() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot locate the mheta executable")?;
    Ok(exe.parent().map(Path::to_path_buf).unwrap_or_default())
}

/// The interposer library: $MHETA_INTERPOSE_LIB, or next to this binary.
fn interposer() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("MHETA_INTERPOSE_LIB") {
        let p = PathBuf::from(p);
        if !p.is_file() {
            bail!("MHETA_INTERPOSE_LIB={}: no such file", p.display());
        }
        return Ok(p);
    }
    let dir = exe_dir()?;
    for cand in [
        dir.join("libmheta_interpose.so"),
        dir.join("../lib/libmheta_interpose.so"),
    ] {
        if cand.is_file() {
            return Ok(cand.canonicalize().unwrap_or(cand));
        }
    }
    bail!(
        "libmheta_interpose.so not found next to {}; build it with `cargo build --release -p mheta-interpose` or set MHETA_INTERPOSE_LIB",
        dir.display()
    )
}

fn is_open_mpi_launcher(prog: &OsString) -> bool {
    let name = Path::new(prog)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    matches!(
        name,
        "mpirun" | "mpiexec" | "orterun" | "mpirun.openmpi" | "mpiexec.openmpi"
    )
}

fn is_root() -> bool {
    std::env::var("USER").map(|u| u == "root").unwrap_or(false)
        || std::env::var("HOME").map(|h| h == "/root").unwrap_or(false)
}

fn check_writable(path: &Path) -> Result<()> {
    let probe = path.with_extension(format!("probe.{}", std::process::id()));
    std::fs::write(&probe, b"")
        .with_context(|| format!("-o {}: cannot write there", path.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

fn status_code(st: std::process::ExitStatus) -> i32 {
    st.code().unwrap_or(1)
}

/// What `mheta bench` passes on to mheta-microbench.
struct BenchOpts {
    cluster: Option<String>,
    quick: bool,
    json: bool,
    osu_compat: bool,
    osu_only: bool,
    disk_dir: Option<PathBuf>,
    no_disk: bool,
    max_size: Option<u64>,
}

fn bench(np: Option<u32>, o: &BenchOpts, output: Option<&Path>) -> Result<i32> {
    let lab = o.cluster.as_deref().map(hosts::lab_of).transpose()?;
    let np = match (np, &lab) {
        (Some(n), Some(l)) if n as usize != l.ranks() => bail!(
            "--np {n}: the cluster {} has {} ranks on its hosts",
            l.name,
            l.ranks()
        ),
        (Some(n), _) => n,
        (None, Some(l)) => l.ranks() as u32,
        (None, None) => bail!("--np N or --cluster SPEC is needed"),
    };
    if np < 2 {
        bail!("--np {np}: the microbenchmarks measure pairs of ranks and need at least 2");
    }
    if let Some(out) = output {
        check_writable(out)?;
    }
    if let Some(d) = &o.disk_dir
        && !o.no_disk
        && !d.is_dir()
    {
        bail!("--disk-dir {}: not a directory", d.display());
    }
    let exe = exe_dir()?.join("mheta-microbench");
    if !exe.is_file() {
        bail!(
            "{} not found; build it with `cargo build --release -p mheta-microbench`",
            exe.display()
        );
    }
    let _lease = lab.as_ref().map(hosts::Lease::take).transpose()?;
    let launcher = std::env::var_os("MHETA_MPIRUN").unwrap_or_else(|| "mpirun".into());
    let mut cmd = match &lab {
        Some(l) => hosts::mpirun_across(l, &[])?,
        None => {
            let mut c = Command::new(&launcher);
            c.arg("-np").arg(np.to_string());
            c
        }
    };
    if lab.is_none() && is_open_mpi_launcher(&launcher) {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        if np as usize > cores {
            cmd.arg("--oversubscribe");
        }
        if is_root() {
            cmd.arg("--allow-run-as-root");
        }
    }
    cmd.arg(&exe);
    for (on, flag) in [
        (o.quick, "--quick"),
        (o.json, "--json"),
        (o.osu_compat, "--osu-compat"),
        (o.osu_only, "--osu-only"),
        (o.no_disk, "--no-disk"),
    ] {
        if on {
            cmd.arg(flag);
        }
    }
    if let Some(d) = &o.disk_dir {
        cmd.arg("--disk-dir").arg(d);
    }
    if let Some(m) = o.max_size {
        cmd.arg("--max-size").arg(m.to_string());
    }
    if let Some(out) = output {
        cmd.arg("-o").arg(out);
    }
    let st = cmd
        .status()
        .with_context(|| format!("cannot start {}", launcher.to_string_lossy()))?;
    if let (true, Some(l), Some(out)) = (st.success(), &lab, output) {
        record_links(l, out)?;
    }
    Ok(status_code(st))
}

/// Add the spec's links to a profile measured across its hosts.
fn record_links(lab: &mheta_hosts::Lab, path: &Path) -> Result<()> {
    let mut p = ClusterProfile::load(path)?;
    p.links = (0..lab.hosts.len())
        .flat_map(|a| (0..lab.hosts.len()).map(move |b| (a, b)))
        .map(|(a, b)| mheta_profile::SpecLink {
            src: lab.hosts[a].name.clone(),
            dst: lab.hosts[b].name.clone(),
            rate_bps: if a == b { None } else { lab.pair_rate(a, b) },
            added_latency_s: lab.pair_latency(a, b),
        })
        .collect();
    p.save(path)?;
    Ok(())
}

/// What `mheta run` was asked to record.
struct RunOpts<'a> {
    trace_dir: &'a Path,
    iteration: u64,
    count: u64,
    whole_run: bool,
    tools: &'a str,
    cluster: Option<&'a str>,
}

fn run(o: &RunOpts, launcher: &[OsString]) -> Result<i32> {
    let RunOpts {
        trace_dir,
        iteration,
        count,
        whole_run,
        tools,
        cluster,
    } = *o;
    let lab = cluster.map(hosts::lab_of).transpose()?;
    for t in tools.split(',').map(str::trim) {
        if !matches!(t, "recorder" | "summary") {
            bail!("--tools {tools}: unknown tool {t:?}; known: recorder, summary");
        }
    }
    let Some((prog, rest)) = launcher.split_first() else {
        bail!("no launcher given: use `mheta run [--trace-dir DIR] -- mpirun -np N ./app ARGS`");
    };
    let lib = interposer()?;
    std::fs::create_dir_all(trace_dir)
        .with_context(|| format!("--trace-dir {}: cannot create", trace_dir.display()))?;
    let dir = trace_dir
        .canonicalize()
        .unwrap_or_else(|_| trace_dir.to_path_buf());
    // Old rank traces would mix with this run's.
    if let Ok(rd) = std::fs::read_dir(&dir) {
        for e in rd.flatten() {
            let n = e.file_name();
            let n = n.to_string_lossy();
            if (n.starts_with("rank-") && n.ends_with(".mtrace")) || n == mheta_trace::APP_FILE {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    let preload = match std::env::var_os("LD_PRELOAD") {
        Some(old) if !old.is_empty() => {
            let mut s = lib.clone().into_os_string();
            s.push(":");
            s.push(old);
            s
        }
        _ => lib.clone().into_os_string(),
    };
    let _lease = lab.as_ref().map(hosts::Lease::take).transpose()?;
    let mut cmd = Command::new(prog);
    if let Some(l) = &lab {
        let (args, env) = hosts::launch(l, rest)?;
        cmd.envs(env);
        if is_open_mpi_launcher(prog) {
            cmd.args(args);
        }
    }
    cmd.env("MHETA_TRACE_DIR", &dir)
        .env("MHETA_TOOLS", tools)
        .env("MHETA_INSTRUMENT_ITER", iteration.to_string())
        .env("MHETA_INSTRUMENT_COUNT", count.to_string())
        .env("MHETA_RECORD_ALL", if whole_run { "1" } else { "" });
    if is_open_mpi_launcher(prog) {
        // Forward to every rank (also on other hosts) without preloading
        // into mpirun itself.
        let mut x = OsString::from("LD_PRELOAD=");
        x.push(&preload);
        cmd.arg("-x").arg(x);
        for v in [
            "MHETA_TRACE_DIR",
            "MHETA_TOOLS",
            "MHETA_INSTRUMENT_ITER",
            "MHETA_INSTRUMENT_COUNT",
            "MHETA_RECORD_ALL",
        ] {
            cmd.arg("-x").arg(v);
        }
        for v in ["MHETA_PROFILE", "MHETA_SUMMARY_DIR"] {
            if std::env::var_os(v).is_some() {
                cmd.arg("-x").arg(v);
            }
        }
    } else {
        cmd.env("LD_PRELOAD", &preload);
    }
    cmd.args(rest);
    let st = cmd
        .status()
        .with_context(|| format!("cannot start {}", prog.to_string_lossy()))?;
    Ok(status_code(st))
}

fn main() {
    // Die quietly on a closed pipe (`mheta show | head`), as Unix tools do.
    // SAFETY: setting a signal disposition before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let r = (|| -> Result<i32> {
        match cli.cmd {
            Cmd::Hosts(a) => hosts::main(a),
            Cmd::Load(a) => load::main(a),
            Cmd::Sense(a) => sense::main(a),
            Cmd::Bench {
                np,
                cluster,
                quick,
                output,
                json,
                osu_compat,
                osu_only,
                disk_dir,
                no_disk,
                max_size,
            } => bench(
                np,
                &BenchOpts {
                    cluster,
                    quick,
                    json,
                    osu_compat,
                    osu_only,
                    disk_dir,
                    no_disk,
                    max_size,
                },
                output.as_deref(),
            ),
            Cmd::Run {
                trace_dir,
                iteration,
                count,
                whole_run,
                tools,
                cluster,
                launcher,
            } => run(
                &RunOpts {
                    trace_dir: &trace_dir,
                    iteration,
                    count,
                    whole_run,
                    tools: &tools,
                    cluster: cluster.as_deref(),
                },
                &launcher,
            ),
            Cmd::Experiment {
                app,
                cluster,
                np,
                prefetch,
                points,
                iters,
                repeat,
                profile,
                dir,
                json,
                plot,
                app_args,
            } => {
                let args = experiment::Args {
                    app,
                    cluster,
                    np,
                    prefetch,
                    points,
                    iters,
                    repeat,
                    json,
                    plot,
                    profile,
                    dir,
                    app_args,
                };
                let r = experiment::run(&args)?;
                if let Some(p) = &args.plot {
                    experiment::plot(&r, p)?;
                }
                if args.json {
                    println!("{}", serde_json::to_string(&r)?);
                } else {
                    experiment::print(&r);
                    if let Some(p) = &args.plot {
                        println!("plot:           {}", p.display());
                    }
                }
                Ok(0)
            }
            Cmd::Show {
                profile: Some(profile),
                json,
                ..
            } => {
                let p = ClusterProfile::load(&profile)?;
                if json {
                    print!("{}", p.to_json());
                } else {
                    show_profile(&p);
                }
                Ok(0)
            }
            Cmd::Show {
                trace: None,
                profile: None,
                ..
            } => bail!("give --trace DIR or --profile FILE"),
            Cmd::Show {
                trace: Some(trace),
                json,
                ..
            } => {
                let traces = mheta_trace::read_dir(&trace)?;
                let app = mheta_trace::read_app(&trace).ok();
                if json {
                    let analysis: Vec<_> = traces
                        .iter()
                        .map(|t| {
                            serde_json::json!({
                                "rank": t.rank,
                                "stages": t.iterations.iter().map(analysis::stages).collect::<Vec<_>>(),
                                "io": analysis::io(t),
                            })
                        })
                        .collect();
                    println!(
                        "{}",
                        serde_json::json!({ "app": app, "ranks": traces, "analysis": analysis })
                    );
                } else {
                    if let Some(a) = &app {
                        println!(
                            "app {} rows {} dist {}",
                            a.app,
                            a.rows,
                            Dist(a.dist.clone())
                        );
                    }
                    for t in &traces {
                        let p = mheta_runtime::model::Program::from_trace(t);
                        println!(
                            "rank {} ({} pid {}): {} iterations, median {:.3} ms: {:.3} ms scaled compute, {:.3} ms unscaled",
                            t.rank,
                            t.host,
                            t.pid,
                            t.iterations.len(),
                            p.measured_s * 1e3,
                            p.scaled_s * 1e3,
                            p.unscaled_s * 1e3,
                        );
                        for v in analysis::io(t) {
                            let fit = |c: &analysis::Calls| match (c.overhead_s, c.per_byte_s) {
                                (Some(o), Some(b)) => {
                                    format!("O = {:.3} us, {:.3} ns/byte", o * 1e6, b * 1e9)
                                }
                                _ => "one size: O and per-byte not separable".into(),
                            };
                            println!(
                                "  variable {}: {} reads ({} B, {:.3} ms; {}), {} writes ({} B, {:.3} ms; {}), {} seeks",
                                v.name,
                                v.reads.calls,
                                v.reads.bytes,
                                v.reads.time_s * 1e3,
                                fit(&v.reads),
                                v.writes.calls,
                                v.writes.bytes,
                                v.writes.time_s * 1e3,
                                fit(&v.writes),
                                v.seeks
                            );
                            for p in &v.prefetches {
                                println!(
                                    "    prefetch {} B: T_r {:.3} us, T_A {:.3} us",
                                    p.bytes,
                                    p.read_s * 1e6,
                                    p.overlap_s * 1e6
                                );
                            }
                        }
                        for it in &t.iterations {
                            println!(
                                "  iteration {}: {:.3} ms, {} events",
                                it.index,
                                it.duration_ns as f64 / 1e6,
                                it.events.len()
                            );
                            for (k, st) in analysis::stages(it).iter().enumerate() {
                                println!(
                                    "    stage {k}: {:.3} ms = {:.3} ms compute (T_phi) + {:.3} ms I/O",
                                    st.total_s * 1e3,
                                    st.compute_s * 1e3,
                                    st.io_s * 1e3
                                );
                            }
                            println!(
                                "    {:>12} {:>10} {:>6}  {:<24} detail",
                                "start us", "took us", "thread", "call"
                            );
                            for e in &it.events {
                                let op = e.op.map_or("(marker)", |o| o.name());
                                println!(
                                    "    {:>12.3} {:>10.3} {:>6}  {op:<24} {}",
                                    e.t0_ns as f64 / 1e3,
                                    e.t1_ns.saturating_sub(e.t0_ns) as f64 / 1e3,
                                    e.thread,
                                    e.what
                                );
                            }
                        }
                    }
                }
                Ok(0)
            }
            Cmd::Slowdown {
                load,
                np,
                run_s,
                json,
            } => {
                let name = load.display().to_string();
                let mut out = Vec::new();
                for rule in [LocalRule::Sharing, LocalRule::Paper] {
                    let spec = loaded::read(&load, Some(rule))?;
                    out.push(spec.resolve(np as usize, run_s, &name)?);
                }
                if json {
                    let ranks: Vec<serde_json::Value> = (0..np as usize)
                        .map(|r| {
                            serde_json::json!({
                                "rank": r,
                                "sharing": loaded::json(out[0].cpu[r]),
                                "paper": loaded::json(out[1].cpu[r]),
                                "how": out[0].how[r],
                            })
                        })
                        .collect();
                    println!("{}", serde_json::json!({"load": name, "ranks": ranks}));
                } else {
                    println!(
                        "{:>5} {:>22} {:>22}  how",
                        "rank", "sharing (mean ± 2σ)", "eq. 2 (mean ± 2σ)"
                    );
                    for r in 0..np as usize {
                        println!(
                            "{:>5} {:>22} {:>22}  {}",
                            r,
                            format!("{:.4}", out[0].cpu[r]),
                            format!("{:.4}", out[1].cpu[r]),
                            out[0].how[r]
                        );
                    }
                }
                Ok(0)
            }
            Cmd::Predict {
                profile,
                trace,
                dist,
                iters,
                mode,
                from,
                load,
                rule,
                json,
            } => {
                let (mut m, prof) = load_model(&profile, &trace, mode)?;
                if let Some(l) = &load {
                    let spec = loaded::read(l, rule)?;
                    m = loaded::apply(m, &spec, iters, l)?;
                }
                let note = mode_note(&prof, mode);
                let d = Dist::parse(&dist, m.ranks(), m.rows())?;
                let sp = mheta_runtime::risk::predict_stochastic(&m, &d)?;
                let p = sp.point.clone();
                let total_s = p.per_iteration_s * iters as f64;
                let src = match &from {
                    Some(f) => Dist::parse(f, m.ranks(), m.rows())?,
                    None => Dist(m.app.dist.clone()),
                };
                let cost = m.move_cost(&src, &d);
                let cur = m.predict(&src)?.per_iteration_s;
                let decision =
                    mheta_runtime::redist::decide(cur, p.per_iteration_s, cost.total_s, iters);
                if json {
                    let v = serde_json::json!({
                        "dist": d.0,
                        "iters": iters,
                        "mode": mode.to_string(),
                        "network": note,
                        "per_iteration_s": p.per_iteration_s,
                        "total_s": total_s,
                        "ranks": p.ranks,
                        "load": m.load.as_ref().filter(|_| load.is_some()),
                        "per_iteration": loaded::json(sp.per_iteration),
                        "total": loaded::json(sp.total(iters)),
                        "move": {
                            "from": src.0,
                            "cost_s": cost.total_s,
                            "bytes": cost.bytes,
                            "rank_s": cost.rank_s,
                            "from_per_iteration_s": cur,
                            "gain_s": decision.gain_s,
                            "pays": decision.moved,
                            "reason": decision.reason,
                        },
                    });
                    println!("{v}");
                } else {
                    println!(
                        "{:>5} {:>10} {:>12} {:>12} {:>12} {:>12}",
                        "rank", "rows", "compute ms", "overhead ms", "wait ms", "finish ms"
                    );
                    for (i, r) in p.ranks.iter().enumerate() {
                        println!(
                            "{:>5} {:>10} {:>12.3} {:>12.3} {:>12.3} {:>12.3}",
                            i,
                            d.0[i],
                            r.compute_s * 1e3,
                            r.overhead_s * 1e3,
                            r.wait_s * 1e3,
                            r.total_s * 1e3
                        );
                    }
                    println!(
                        "per iteration: {:.6} s   total ({iters} iterations): {:.6} s",
                        p.per_iteration_s, total_s
                    );
                    if let (Some(l), Some(s)) = (&load, &m.load) {
                        let (it, tot) = (sp.per_iteration, sp.total(iters));
                        println!(
                            "under load ({}): per iteration {:.6} ± {:.6} s (±2σ: {:.6} .. {:.6}); total {:.6} ± {:.6} s",
                            l.display(),
                            it.mean,
                            2.0 * it.sd,
                            it.range2().0,
                            it.range2().1,
                            tot.mean,
                            2.0 * tot.sd
                        );
                        for line in loaded::describe(s) {
                            println!("  {line}");
                        }
                    }
                    println!("{note}");
                    println!(
                        "move from {src}: {} bytes, predicted {:.6} s; gain over {iters} iterations {:.6} s: {}",
                        cost.bytes, cost.total_s, decision.gain_s, decision.reason
                    );
                }
                Ok(0)
            }
            Cmd::Search {
                profile,
                trace,
                strategy,
                budget,
                seed,
                spectrum,
                load,
                rule,
                quantile,
                iters,
                json,
            } => {
                let (mut m, _) = load_model(&profile, &trace, ModeChoice::default())?;
                if let Some(l) = &load {
                    let spec = loaded::read(l, rule)?;
                    m = loaded::apply(m, &spec, iters, l)?;
                }
                if let Some(q) = quantile {
                    let r = mheta_runtime::risk::quantile_search(&m, q)?;
                    if json {
                        println!("{}", serde_json::to_string(&r)?);
                        return Ok(0);
                    }
                    let show = |name: &str, p: &mheta_runtime::risk::Plan| {
                        println!(
                            "{name:<16} {:<28} mean {:.6} s  ±2σ {:.6}  q{:.0} {:.6} s",
                            Dist(p.dist.clone()).to_string(),
                            p.per_iteration.mean,
                            2.0 * p.per_iteration.sd,
                            q * 100.0,
                            p.quantile_s
                        );
                    };
                    println!(
                        "per iteration, under load ({}):",
                        load.as_ref()
                            .map(|l| l.display().to_string())
                            .unwrap_or_default()
                    );
                    show("mean-optimal", &r.mean_plan);
                    show("quantile-optimal", &r.quantile_plan);
                    if r.differ {
                        let (a, b) = (&r.mean_plan, &r.quantile_plan);
                        println!(
                            "the plans differ: the quantile plan's q{:.0} is {:.2}% lower, its mean {:.2}% higher",
                            q * 100.0,
                            100.0 * (1.0 - b.quantile_s / a.quantile_s),
                            100.0 * (b.per_iteration.mean / a.per_iteration.mean - 1.0)
                        );
                    } else {
                        println!("the plans are the same distribution");
                    }
                    if let Some(s) = &m.load {
                        for line in loaded::describe(s) {
                            println!("  {line}");
                        }
                    }
                    println!("evaluations:    {}", r.evaluations);
                    return Ok(0);
                }
                if let Some(k) = spectrum {
                    let c = search::corners(&m);
                    let rows: Vec<serde_json::Value> = search::spectrum(&m, k)
                        .into_iter()
                        .map(|d| {
                            let t = m.predict(&d).map(|p| p.per_iteration_s).ok();
                            serde_json::json!({"dist": d, "predicted_s": t})
                        })
                        .collect();
                    if json {
                        println!("{}", serde_json::json!({"corners": c, "spectrum": rows}));
                    } else {
                        println!(
                            "Blk {}  Bal {}  I-C {}  I-C/Bal {}",
                            c.blk, c.bal, c.ic, c.ic_bal
                        );
                        println!("{:<40} {:>14}", "distribution", "predicted (s)");
                        for r in &rows {
                            let d: Vec<u64> = serde_json::from_value(r["dist"].clone())?;
                            println!(
                                "{:<40} {:>14.6}",
                                Dist(d).to_string(),
                                r["predicted_s"].as_f64().unwrap_or(f64::INFINITY)
                            );
                        }
                    }
                    return Ok(0);
                }
                let f = search::by_name(&m, &strategy, budget, seed).map_err(anyhow::Error::msg)?;
                let block = search::block(&m)?;
                if json {
                    println!("{}", serde_json::to_string(&f)?);
                } else {
                    println!("strategy:       {}", f.strategy);
                    println!("dist:           {}", Dist(f.dist.clone()));
                    println!("predicted:      {:.6} s per iteration", f.predicted_s);
                    println!(
                        "block:          {:.6} s per iteration ({})",
                        block.predicted_s,
                        Dist(block.dist.clone())
                    );
                    println!(
                        "speedup:        {:.3}x over block (predicted)",
                        block.predicted_s / f.predicted_s
                    );
                    println!(
                        "evaluations:    {} full model, {} bisection steps",
                        f.evaluations, f.bisection_steps
                    );
                }
                Ok(0)
            }
        }
    })();
    match r {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("mheta: error: {e:#}");
            std::process::exit(2);
        }
    }
}
