//! `mheta bench`: run mheta-microbench on N ranks under mpirun (or across
//! a spec's emulated hosts) and write the cluster profile.

use super::hosts;
use super::launch::{exe_dir, is_open_mpi_launcher, is_root, status_code};
use anyhow::{Context, Result, bail};
use mheta_profile::ClusterProfile;
use mheta_profile::cli::OsuTest;
use std::path::Path;
use std::process::Command;

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Ranks to measure (at least 2; default: the --cluster spec's).
    #[arg(long, required_unless_present = "cluster")]
    np: Option<u32>,
    /// A cluster spec with [[host]] tables: measure across its hosts.
    #[arg(long, value_name = "SPEC")]
    cluster: Option<String>,
    #[command(flatten)]
    measure: mheta_profile::cli::Measure,
}

/// `mheta bench`: check the arguments, run the microbenchmarks, and add
/// the spec's links to the profile when the ranks ran across hosts.
pub fn main(a: BenchArgs) -> Result<i32> {
    a.measure.check().map_err(anyhow::Error::msg)?;
    let lab = a.cluster.as_deref().map(hosts::lab_of).transpose()?;
    let np = ranks(a.np, lab.as_ref())?;
    let output = a.measure.output.as_deref();
    if let Some(out) = output {
        check_writable(out)?;
    }
    if let Some(d) = &a.measure.disk_dir
        && !a.measure.no_disk
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
    // OSU's two tests are two programs, each in fresh processes: so are
    // they here (`--osu-test`).
    let runs: Vec<mheta_profile::cli::Measure> = match a.measure.osu_test {
        None if a.measure.osu_only => [OsuTest::Latency, OsuTest::Bandwidth]
            .into_iter()
            .map(|t| mheta_profile::cli::Measure {
                osu_test: Some(t),
                ..a.measure.clone()
            })
            .collect(),
        _ => vec![a.measure.clone()],
    };
    for m in runs {
        let mut cmd = match &lab {
            Some(l) => hosts::mpirun_across(l, &[])?,
            None => local_mpirun(&launcher, np),
        };
        cmd.arg(&exe);
        cmd.args(m.to_args());
        let st = cmd
            .status()
            .with_context(|| format!("cannot start {}", launcher.to_string_lossy()))?;
        if !st.success() {
            return Ok(status_code(st));
        }
    }
    if let (Some(l), Some(out)) = (&lab, output) {
        record_links(l, out)?;
    }
    Ok(0)
}

/// The ranks to measure: `--np`, or the spec's, which must agree.
fn ranks(np: Option<u32>, lab: Option<&mheta_hosts::Lab>) -> Result<u32> {
    let np = match (np, lab) {
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
    Ok(np)
}

/// `launcher -np N` on this machine; Open MPI's gets `--oversubscribe`
/// when the ranks outnumber the cores, and `--allow-run-as-root` as root.
fn local_mpirun(launcher: &std::ffi::OsString, np: u32) -> Command {
    let mut c = Command::new(launcher);
    c.arg("-np").arg(np.to_string());
    if is_open_mpi_launcher(launcher) {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        if np as usize > cores {
            c.arg("--oversubscribe");
        }
        if is_root() {
            c.arg("--allow-run-as-root");
        }
    }
    c
}

/// Refuse an `-o` path that cannot be written, before measuring.
fn check_writable(path: &Path) -> Result<()> {
    let probe = path.with_extension(format!("probe.{}", std::process::id()));
    std::fs::write(&probe, b"")
        .with_context(|| format!("-o {}: cannot write there", path.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
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
