//! `mheta load`: the contention generator of `mheta_load` on the command
//! line (Figueira and Berman's competing applications: CPU hogs, processes
//! alternating computation and communication, bursty levels). This module
//! owns the flags, builds a [`mheta_load::LoadConfig`] or
//! [`mheta_load::EchoConfig`], runs it and prints its summary; the engine
//! is in load/src, the timeline and wire formats in docs/FORMATS.md.

use anyhow::Result;
use mheta_load::spec::{parse_core_list, parse_proc_spec};
use mheta_load::{Bursty, EchoConfig, Finished, LoadConfig, Notice, Notify, RunOpts};
use std::path::PathBuf;
use std::sync::Arc;

const EXAMPLES: &str = "\
Examples:
  # two CPU hogs on core 1, for 60 s, with a timeline
  mheta load --proc hog*2 --cores 1 --duration 60 --timeline load.json

  # a competitor communicating 30% of each 100 ms cycle, bursts of 4 x 64 KiB,
  # its echo peer on core 1; stop it with Ctrl-C or kill -TERM
  mheta load --proc cycle:comm=0.3,cycle=100ms,msgs=4,bytes=64K --cores 0 --peer-core 1

  # bursty: 0, 1 or 2 hogs active, exponential dwells of mean 2 s, 5 s, 1 s
  mheta load --proc hog*2 --cores 0 --levels 0,1,2 --dwell 2,5,1 --switch random --seed 7

  # scripted: 10 s idle, 20 s with one hog, cycling; wait until it runs
  mheta load --proc hog --cores 0 --levels 0,1 --dwell 10,20 --ready-file /tmp/ready &
  while [ ! -e /tmp/ready ]; do sleep 0.05; done

  # communicate with another host: there run
  mheta load --echo-listen 0.0.0.0:7000
  # and here
  mheta load --proc cycle*2:comm=0.5,cycle=50ms,msgs=1,bytes=1M --peer otherhost:7000

Each process is a thread of this one process, pinned to its core (CFS
schedules threads as tasks exactly like processes); nothing is left behind
when it stops. With kernel.sched_autogroup_enabled=1 CPU is shared per session
first: run it in the job's session to get per-task sharing. SIGINT, SIGTERM
and SIGHUP stop it cleanly (threads joined, timeline written, ready file
removed, exit 0); a second one of the same kind kills it at once. The
timeline and the echo wire protocol are documented in docs/FORMATS.md.";

/// Generate competing load beside a job (Figueira and Berman's contention generator).
///
/// Each competing process is a thread of this process pinned to one core
/// (CFS schedules threads exactly like processes; nothing is left behind at
/// exit). Stops cleanly on SIGINT, SIGTERM and SIGHUP and after --duration,
/// writing the timeline (JSON) if asked.
#[derive(clap::Args, Debug)]
#[command(after_help = EXAMPLES)]
pub struct LoadArgs {
    /// A competing process (repeatable): `hog` (spins forever) or
    /// `cycle:comm=F,cycle=T,msgs=N,bytes=B`, which alternates computation
    /// and communication: comm = fraction of the cycle spent communicating
    /// (0..1, default 0.5), cycle = cycle length with a unit us/ms/s (default
    /// 100ms), msgs = messages per burst (default 1), bytes = bytes per
    /// message with an optional K/M/G suffix (powers of 1024, default 1K).
    /// `hog*3` and `cycle*2:...` repeat a process.
    #[arg(
        long = "proc",
        value_name = "SPEC",
        required_unless_present = "echo_listen"
    )]
    pub procs: Vec<String>,
    /// Cores to pin the processes to, e.g. `0` or `0,1` or `0-3`: process i
    /// runs on cores[i % len]. Default: no pinning.
    #[arg(long, value_name = "LIST")]
    pub cores: Option<String>,
    /// The core for the local echo peers of the cycle processes (and for the
    /// server threads of --echo-listen). Default: no pinning.
    #[arg(long, value_name = "N")]
    pub peer_core: Option<usize>,
    /// Use an external echo server (another `mheta load --echo-listen ADDR`)
    /// instead of local echo threads.
    #[arg(long, value_name = "HOST:PORT", conflicts_with_all = ["peer_core", "echo_listen"])]
    pub peer: Option<String>,
    /// Only run an echo server for cycle processes elsewhere, on ADDR (e.g.
    /// `0.0.0.0:7000`; port 0 picks one, printed on stderr), until signalled
    /// or --duration.
    #[arg(long, value_name = "ADDR", conflicts_with_all = ["procs", "levels", "cores"])]
    pub echo_listen: Option<String>,
    /// Bursty load: levels, each the number of the --proc processes that are
    /// active (the first L); inactive ones are frozen (no CPU). Without
    /// --levels all processes are active all the time.
    #[arg(
        long,
        value_name = "L1,L2,...",
        value_delimiter = ',',
        requires = "dwell"
    )]
    pub levels: Vec<usize>,
    /// Dwell time of each level in seconds (one per level, or one for all):
    /// the exact dwell (scripted) or the mean of an exponential (random).
    #[arg(
        long,
        value_name = "D1,D2,...",
        value_delimiter = ',',
        requires = "levels"
    )]
    pub dwell: Vec<f64>,
    /// How to switch levels: `scripted` (in order, exact dwells, cycling;
    /// the default) or `random` (next level uniform among the others,
    /// exponential dwells).
    #[arg(long = "switch", value_enum, value_name = "MODE", requires = "levels")]
    pub switch: Option<SwitchMode>,
    /// Seed of the random switching (default: from the clock; the timeline
    /// records it).
    #[arg(long, value_name = "N", requires = "levels")]
    pub seed: Option<u64>,
    /// Index (0-based) into --levels of the first level. Default 0.
    #[arg(long, value_name = "INDEX", requires = "levels")]
    pub start_level: Option<usize>,
    /// Stop after this many seconds (default: run until signalled).
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<f64>,
    /// Write the timeline (JSON, format mheta-load-timeline v1) here at exit.
    #[arg(long, value_name = "FILE.json")]
    pub timeline: Option<PathBuf>,
    /// Create this file (containing the pid) once every thread is pinned and
    /// running; it is removed at exit.
    #[arg(long, value_name = "PATH")]
    pub ready_file: Option<PathBuf>,
    /// No messages on stderr (errors excepted).
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwitchMode {
    Scripted,
    Random,
}

impl From<SwitchMode> for mheta_load::SwitchMode {
    fn from(m: SwitchMode) -> Self {
        match m {
            SwitchMode::Scripted => mheta_load::SwitchMode::Scripted,
            SwitchMode::Random => mheta_load::SwitchMode::Random,
        }
    }
}

/// Messages on stderr: progress unless `quiet`, failures always.
fn notify(quiet: bool) -> Notify {
    Arc::new(move |n: Notice<'_>| match n {
        Notice::Info(m) if !quiet => eprintln!("mheta load: {m}"),
        Notice::Info(_) => {}
        Notice::Warn(m) => eprintln!("mheta load: {m}"),
    })
}

pub fn main(a: LoadArgs) -> Result<i32> {
    let opts = RunOpts {
        duration_s: a.duration,
        timeline: a.timeline.clone(),
        ready_file: a.ready_file.clone(),
        argv: std::env::args().collect(),
        catch_signals: true,
        notify: Some(notify(a.quiet)),
    };
    let finished = if let Some(addr) = &a.echo_listen {
        mheta_load::serve_echo(&EchoConfig {
            addr: addr.clone(),
            core: a.peer_core,
            opts,
        })?
    } else {
        let mut procs = Vec::new();
        for s in &a.procs {
            procs.extend(parse_proc_spec(s)?);
        }
        let cores = a.cores.as_deref().map(parse_core_list).transpose()?;
        let bursty = (!a.levels.is_empty()).then(|| Bursty {
            levels: a.levels.clone(),
            dwell_s: a.dwell.clone(),
            switch: a.switch.map(Into::into).unwrap_or_default(),
            seed: a.seed,
            start_level: a.start_level.unwrap_or(0),
        });
        mheta_load::run(&LoadConfig {
            procs,
            cores,
            peer_core: a.peer_core,
            peer: a.peer.clone(),
            bursty,
            opts,
        })?
    };
    finish(finished, a.quiet)
}

/// Print the summary (unless `quiet`), then fail if writing the timeline
/// failed or the load stopped on an error.
fn finish(f: Finished, quiet: bool) -> Result<i32> {
    if !quiet {
        eprint!("{}", f.timeline.summary());
    }
    f.into_result()?;
    Ok(0)
}
