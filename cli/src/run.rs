//! `mheta run`: start an MPI launcher with the interposer preloaded into
//! every rank, recording the instrumented iterations into a trace
//! directory.

use super::hosts;
use super::launch::{Launcher, interposer, is_open_mpi_launcher, launcher_kind, status_code};
use anyhow::{Context, Result, bail};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(clap::Args, Debug)]
pub struct RunArgs {
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
    /// After the counted iterations, go on recording whole iterations
    /// until the recorded ones span at least this many seconds (or the
    /// run ends; at most 20,000 iterations). The model takes each piece's
    /// median over them: on a host whose cores change speed over hundreds
    /// of milliseconds, a few iterations catch the moment's speed, not
    /// the rank's. The trace is written after the counted iterations and
    /// again when the seconds are reached (MHETA_INSTRUMENT_SECONDS).
    #[arg(long, default_value_t = 0.0, value_name = "SECONDS", value_parser = non_negative_seconds)]
    seconds: f64,
    /// Record the whole run, MPI_Init to MPI_Finalize, as one
    /// iteration (iteration markers ignored): for programs that mark
    /// no iterations (MHETA_RECORD_ALL=1).
    #[arg(long, conflicts_with_all = ["iteration", "count", "seconds"])]
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
}

/// The variables the interposer reads, forwarded to every rank.
const FORWARDED: [&str; 6] = [
    "MHETA_TRACE_DIR",
    "MHETA_TOOLS",
    "MHETA_INSTRUMENT_ITER",
    "MHETA_INSTRUMENT_COUNT",
    "MHETA_INSTRUMENT_SECONDS",
    "MHETA_RECORD_ALL",
];

/// `mheta run`: check the tools, empty the trace directory of old rank
/// traces, and run the launcher with the interposer in every rank.
pub fn main(a: RunArgs) -> Result<i32> {
    let lab = a.cluster.as_deref().map(hosts::lab_of).transpose()?;
    for t in a.tools.split(',').map(str::trim) {
        if !matches!(t, "recorder" | "summary") {
            bail!(
                "--tools {}: unknown tool {t:?}; known: recorder, summary",
                a.tools
            );
        }
    }
    let Some((prog, rest)) = a.launcher.split_first() else {
        bail!("no launcher given: use `mheta run [--trace-dir DIR] -- mpirun -np N ./app ARGS`");
    };
    let lib = interposer()?;
    let dir = fresh_trace_dir(&a.trace_dir)?;
    let _lease = lab.as_ref().map(hosts::Lease::take).transpose()?;
    let mut cmd = Command::new(prog);
    if let Some(l) = &lab {
        if launcher_kind(prog) == Launcher::Hydra {
            cmd.args(hosts::hydra_launch(l, rest)?);
        } else {
            let (args, env) = hosts::launch(l, rest)?;
            cmd.envs(env);
            if is_open_mpi_launcher(prog) {
                cmd.args(args);
            }
        }
    }
    cmd.env("MHETA_TRACE_DIR", &dir)
        .env("MHETA_TOOLS", &a.tools)
        .env("MHETA_INSTRUMENT_ITER", a.iteration.to_string())
        .env("MHETA_INSTRUMENT_COUNT", a.count.to_string())
        .env("MHETA_INSTRUMENT_SECONDS", a.seconds.to_string())
        .env("MHETA_RECORD_ALL", if a.whole_run { "1" } else { "" });
    let preload = preload_with(&lib);
    match launcher_kind(prog) {
        Launcher::OpenMpi => forward(&mut cmd, &preload),
        Launcher::Hydra => forward_hydra(&mut cmd, &preload),
        Launcher::Other => {
            cmd.env("LD_PRELOAD", &preload);
        }
    }
    cmd.args(rest);
    let st = cmd
        .status()
        .with_context(|| format!("cannot start {}", prog.to_string_lossy()))?;
    Ok(status_code(st))
}

/// Create the trace directory and remove the rank traces and app file an
/// older run left there (they would mix with this run's); its full path.
fn fresh_trace_dir(trace_dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(trace_dir)
        .with_context(|| format!("--trace-dir {}: cannot create", trace_dir.display()))?;
    let dir = trace_dir
        .canonicalize()
        .unwrap_or_else(|_| trace_dir.to_path_buf());
    if let Ok(rd) = std::fs::read_dir(&dir) {
        for e in rd.flatten() {
            let n = e.file_name();
            let n = n.to_string_lossy();
            if (n.starts_with("rank-") && n.ends_with(".mtrace")) || n == mheta_trace::APP_FILE {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    Ok(dir)
}

/// LD_PRELOAD with the interposer first, then what was preloaded already.
fn preload_with(lib: &Path) -> OsString {
    match std::env::var_os("LD_PRELOAD") {
        Some(old) if !old.is_empty() => {
            let mut s = lib.as_os_str().to_owned();
            s.push(":");
            s.push(old);
            s
        }
        _ => lib.as_os_str().to_owned(),
    }
}

/// Open MPI's `-x`: preload the interposer and pass its settings to every
/// rank (also on other hosts) without preloading it into mpirun itself.
fn forward(cmd: &mut Command, preload: &OsString) {
    let mut x = OsString::from("LD_PRELOAD=");
    x.push(preload);
    cmd.arg("-x").arg(x);
    for v in FORWARDED {
        cmd.arg("-x").arg(v);
    }
    for v in ["MHETA_PROFILE", "MHETA_SUMMARY_DIR"] {
        if std::env::var_os(v).is_some() {
            cmd.arg("-x").arg(v);
        }
    }
}

/// Hydra's way (`mpiexec.hydra`, `mpiexec.mpich`): `-genv NAME VALUE`
/// for the preload and every variable the interposer reads, so that they
/// reach ranks on other hosts too and the launcher itself runs without
/// the interposer.
fn forward_hydra(cmd: &mut Command, preload: &OsString) {
    cmd.arg("-genv").arg("LD_PRELOAD").arg(preload);
    let set: Vec<(String, OsString)> = cmd
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_str()?.to_string(), v?.to_owned())))
        .filter(|(k, _)| FORWARDED.contains(&k.as_str()))
        .collect();
    for (k, v) in set {
        cmd.arg("-genv").arg(k).arg(v);
    }
    for v in ["MHETA_PROFILE", "MHETA_SUMMARY_DIR"] {
        if let Some(x) = std::env::var_os(v) {
            cmd.arg("-genv").arg(v).arg(x);
        }
    }
}

/// `--seconds`: a finite number of seconds, at least 0.
fn non_negative_seconds(v: &str) -> Result<f64, String> {
    mheta_trace::env::parse_seconds(v)
        .ok_or_else(|| format!("{v:?} is not a number of seconds >= 0"))
}
