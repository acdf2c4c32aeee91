//! `mheta hosts`: emulated hosts and links on this machine (network
//! namespaces on a bridge, shaped links), and launching Open MPI across
//! them. The work is done by the `mheta-hosts` crate; this is its command
//! line, and [`Lease`], which other subcommands use to bring a cluster's
//! hosts up for a job and leave them as they were found.

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use mheta_hosts::cluster::ClusterSpec;
use mheta_hosts::{Lab, agent, lab};
use std::ffi::OsString;
use std::process::Command;

/// `mheta hosts ...`
#[derive(Args, Debug)]
pub struct HostsArgs {
    #[command(subcommand)]
    cmd: HostsCmd,
}

#[derive(Subcommand, Debug)]
enum HostsCmd {
    /// Build the spec's hosts and links on this machine (root): one
    /// network namespace per host on a bridge, each link shaped on its own
    /// ends, a relay per host with added latency. Idempotent.
    Up {
        /// Cluster spec with [[host]] tables (a file or a built-in name:
        /// net2, net4, netcpu4, netdc2, netuniform2, nethy1-2).
        spec: String,
        /// Also start Slurm: munged, slurmctld, and one slurmd per host
        /// (in its namespace), in the background under mheta's
        /// supervision; `mheta hosts env` prints SLURM_CONF for srun and
        /// salloc.
        #[arg(long)]
        slurm: bool,
    },
    /// Remove everything `up` made for the spec (by name, also after a
    /// crash): daemons, relays, namespaces, interfaces, state.
    Down {
        /// Cluster spec, or the lab's name.
        spec: String,
    },
    /// Print each host's namespace, address, ranks, link and qdiscs,
    /// and whether the lab is up (exit 0), down (3) or partial (4).
    Status {
        /// Cluster spec with [[host]] tables.
        spec: String,
        /// One JSON object instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Run mpirun across the hosts. Open MPI's (the default): the spec's
    /// hosts and slots, the launcher agent, the TCP BTL on the lab's
    /// subnet, --bind-to none. MPICH's Hydra (MHETA_MPIRUN=mpiexec.mpich,
    /// or any mpiexec.hydra): its rsh launcher through the agent, the
    /// bridge as its interface, the hosts and slots, and UCX held to TCP
    /// on each host's interface. Brings the hosts up if they are down,
    /// and down again after.
    ///
    /// Example: mheta hosts mpirun net4 -- ./target/release/jacobi --n 2048
    Mpirun {
        /// Cluster spec with [[host]] tables.
        spec: String,
        /// mpirun's arguments (the program and its arguments included).
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "MPIRUN ARGS"
        )]
        args: Vec<OsString>,
    },
    /// Print the shell lines that make a plain mpirun (under salloc, or
    /// with your own hostfile) use the lab's subnet (OMPI_MCA_* settings),
    /// hold MPICH's UCX to TCP between hosts (UCX_TLS, for srun
    /// --mpi=pmi2) and point srun at the lab's Slurm (SLURM_CONF).
    Env {
        /// Cluster spec with [[host]] tables.
        spec: String,
    },
    /// The launcher agent (Open MPI's plm_rsh_agent, Hydra's
    /// -launcher-exec): run a command on a host of a lab that is up.
    #[command(hide = true)]
    Agent {
        lab: String,
        host: String,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        cmd: Vec<OsString>,
    },
    /// The latency relay between two interfaces (started by `up`).
    #[command(hide = true)]
    Relay {
        a: String,
        c: String,
        /// One-way delay, seconds.
        delay_s: f64,
        /// The CPU the relay's threads run on (default: any).
        #[arg(long)]
        cpu: Option<usize>,
    },
}

/// The lab of a cluster spec, or an error saying the spec has no hosts.
pub fn lab_of(spec: &str) -> Result<Lab> {
    let c = ClusterSpec::load(spec).map_err(|e| anyhow::anyhow!("{e}"))?;
    c.lab.ok_or_else(|| {
        anyhow::anyhow!("{spec}: has no [[host]] tables: `mheta hosts` needs hosts and links")
    })
}

/// The relay command `up` starts: this binary's `hosts relay`.
fn relay_cmd() -> Result<Vec<OsString>> {
    let exe = std::env::current_exe().context("cannot locate the mheta executable")?;
    Ok(vec![exe.into_os_string(), "hosts".into(), "relay".into()])
}

/// The agent command for Open MPI's rsh launcher.
pub fn agent_cmd(lab: &Lab) -> Result<Vec<String>> {
    let exe = std::env::current_exe().context("cannot locate the mheta executable")?;
    let exe = exe.display().to_string();
    if exe.contains(' ') || exe.contains(':') {
        bail!(
            "{exe}: Open MPI splits its launcher agent on spaces and colons; install mheta on a path without them"
        );
    }
    Ok(vec![exe, "hosts".into(), "agent".into(), lab.name.clone()])
}

pub(crate) fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// A lab held up for the length of a job: brought up if it was down, and
/// taken down again on drop only then.
pub struct Lease {
    pub lab: Lab,
    made: bool,
}

impl Lease {
    pub fn take(lab: &Lab) -> Result<Lease> {
        let made = match lab::up(lab, &relay_cmd()?, false)? {
            lab::Up::Built => {
                eprintln!(
                    "mheta: hosts of {} brought up for this job ({} hosts on {}); they go down after it",
                    lab.name,
                    lab.hosts.len(),
                    lab.cidr()
                );
                true
            }
            lab::Up::AlreadyUp => false,
        };
        Ok(Lease {
            lab: lab.clone(),
            made,
        })
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.made
            && let Err(e) = lab::down(&self.lab.name)
        {
            eprintln!(
                "mheta: could not take the hosts of {} down: {e}",
                self.lab.name
            );
        }
    }
}

/// Environment variables to set, in order.
pub type Env = Vec<(String, String)>;

/// Inside a Slurm allocation (`salloc`, `sbatch`), Open MPI's mpirun
/// takes its hosts from Slurm and starts its daemons with srun.
pub fn in_slurm() -> bool {
    std::env::var_os("SLURM_JOB_ID").is_some()
}

/// What an Open MPI `mpirun` needs to run across the lab, given the
/// user's own arguments: the hosts and the agent, or under Slurm only
/// what Slurm does not give (`--bind-to none`); and the `OMPI_MCA_*`
/// environment (the lab's subnet), which also reaches an mpirun started
/// by `salloc`.
pub fn launch(lab: &Lab, user: &[OsString]) -> Result<(Vec<String>, Env)> {
    let env = agent::mca_env(lab, cores());
    let args = if in_slurm() {
        let bound = user
            .iter()
            .any(|a| a.to_string_lossy().starts_with("--bind-to"));
        if bound {
            vec![]
        } else {
            vec!["--bind-to".into(), "none".into()]
        }
    } else {
        agent::mpirun_args(lab, &agent_cmd(lab)?, cores(), user)
    };
    Ok((args, env))
}

/// An mpirun command across the lab: `mpirun` (or $MHETA_MPIRUN) with
/// the lab's options for its kind (Open MPI's, or Hydra's:
/// [`hydra_launch`]), then `user`.
pub fn mpirun_across(lab: &Lab, user: &[OsString]) -> Result<Command> {
    let launcher = std::env::var_os("MHETA_MPIRUN").unwrap_or_else(|| "mpirun".into());
    let mut cmd = Command::new(&launcher);
    if crate::launch::launcher_kind(&launcher) == crate::launch::Launcher::Hydra {
        cmd.args(hydra_launch(lab, user)?);
    } else {
        let (args, env) = launch(lab, user)?;
        cmd.args(args).envs(env);
    }
    cmd.args(user);
    Ok(cmd)
}

/// What Hydra needs to run across the lab (`agent::hydra_args`): its
/// launcher is a script in the lab's state directory that runs this
/// binary's agent for the lab (Hydra takes one executable, no
/// arguments).
pub fn hydra_launch(lab: &Lab, user: &[OsString]) -> Result<Vec<String>> {
    let exe = std::env::current_exe().context("cannot locate the mheta executable")?;
    let script = lab::state_dir(&lab.name).join("hydra-agent");
    let text = format!(
        "#!/bin/sh\n# Hydra's rsh launcher for lab {0} (written by mheta hosts)\nexec '{1}' hosts agent '{0}' \"$@\"\n",
        lab.name,
        exe.display()
    );
    std::fs::write(&script, text)
        .and_then(|()| {
            std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        })
        .with_context(|| format!("cannot write {}", script.display()))?;
    Ok(agent::hydra_args(lab, &script.display().to_string(), user))
}

pub fn main(a: HostsArgs) -> Result<i32> {
    match a.cmd {
        HostsCmd::Up { spec, slurm } => up(&spec, slurm),
        HostsCmd::Down { spec } => down(spec),
        HostsCmd::Status { spec, json } => {
            let lab = lab_of(&spec)?;
            let s = lab::status(&lab)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&s)?);
            } else {
                print_status(&s);
            }
            Ok(match s.state.as_str() {
                "up" => 0,
                "down" => 3,
                _ => 4,
            })
        }
        HostsCmd::Mpirun { spec, args } => mpirun(&spec, args),
        HostsCmd::Env { spec } => {
            let lab = lab_of(&spec)?;
            for (k, v) in agent::mca_env(&lab, cores())
                .into_iter()
                .chain(mheta_hosts::slurm::client_env(&lab))
            {
                println!("export {k}={v}");
            }
            Ok(0)
        }
        HostsCmd::Agent { lab, host, cmd } => {
            agent::exec_on(&lab, &host, &cmd)?;
            Ok(1)
        }
        HostsCmd::Relay { a, c, delay_s, cpu } => relay(&a, &c, delay_s, cpu),
    }
}

/// `mheta hosts up SPEC`.
fn up(spec: &str, slurm: bool) -> Result<i32> {
    let lab = lab_of(spec)?;
    match lab::up(&lab, &relay_cmd()?, slurm)? {
        lab::Up::Built => println!(
            "{}: up: {} hosts, {} ranks, subnet {} (bridge {} at {})",
            lab.name,
            lab.hosts.len(),
            lab.ranks(),
            lab.cidr(),
            lab::bridge(&lab),
            lab.bridge_ip()
        ),
        lab::Up::AlreadyUp => println!("{}: already up", lab.name),
    }
    Ok(0)
}

/// `mheta hosts down SPEC` (a spec, or a lab's name).
fn down(spec: String) -> Result<i32> {
    let name = lab_of(&spec).map(|l| l.name).unwrap_or(spec);
    let d = lab::down(&name)?;
    if d.was_up {
        println!(
            "{name}: down: removed {} namespaces, {} interfaces, {} processes",
            d.namespaces.len(),
            d.interfaces.len(),
            d.processes.len()
        );
    } else {
        println!(
            "{name}: not up (no state in {})",
            lab::state_dir(&name).display()
        );
    }
    Ok(0)
}

/// `mheta hosts mpirun SPEC [--] ARGS`: mpirun across the hosts.
fn mpirun(spec: &str, args: Vec<OsString>) -> Result<i32> {
    let lab = lab_of(spec)?;
    let args: Vec<OsString> = match args.first() {
        Some(a) if a == "--" => args[1..].to_vec(),
        _ => args,
    };
    if args.is_empty() {
        bail!("no program given: mheta hosts mpirun SPEC [mpirun options] ./app [args]");
    }
    let _lease = Lease::take(&lab)?;
    let st = mpirun_across(&lab, &args)?
        .status()
        .context("cannot start mpirun")?;
    Ok(st.code().unwrap_or(1))
}

fn relay(a: &str, c: &str, delay_s: f64, cpu: Option<usize>) -> Result<i32> {
    use std::sync::atomic::{AtomicBool, Ordering};
    static STOP: AtomicBool = AtomicBool::new(false);
    extern "C" fn on_term(_: libc::c_int) {
        STOP.store(true, Ordering::SeqCst);
    }
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGTERM, on_term as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_term as *const () as libc::sighandler_t);
    }
    if !(delay_s.is_finite() && (0.0..=1.0).contains(&delay_s)) {
        bail!("relay: delay {delay_s} s: must be between 0 and 1");
    }
    let delay = std::time::Duration::from_secs_f64(delay_s);
    let on = match cpu {
        Some(n) => {
            mheta_base::os::pin_to_core(n)
                .with_context(|| format!("relay: cannot pin to CPU {n}"))?;
            format!(", on CPU {n}")
        }
        None => String::new(),
    };
    let sched = match mheta_hosts::relay::schedule_as_wire() {
        Ok(()) => format!("SCHED_FIFO {}", mheta_hosts::relay::WIRE_PRIORITY),
        Err(e) => format!(
            "normal scheduling (SCHED_FIFO refused: {e}; the added latency grows while the cores are busy)"
        ),
    };
    println!(
        "relay {a} <-> {c}: ready, holding frames {:.3} ms, {sched}{on}",
        delay_s * 1e3
    );
    mheta_hosts::relay::run(a, c, delay, &STOP)?;
    Ok(0)
}

fn print_status(s: &lab::Status) {
    println!(
        "lab {}: {} (subnet {}, bridge {})",
        s.lab, s.state, s.subnet, s.bridge
    );
    println!(
        "{:<10} {:<24} {:<15} {:>5} {:>10} {:>10} {:>8}",
        "host", "namespace", "address", "ranks", "rate", "latency", "present"
    );
    for h in &s.hosts {
        println!(
            "{:<10} {:<24} {:<15} {:>5} {:>10} {:>10} {:>8}",
            h.name,
            h.netns,
            h.ip,
            h.ranks,
            h.rate_bps
                .map_or("-".into(), |r| format!("{:.0}Mbit", r / 1e6)),
            h.latency_s
                .map_or("-".into(), |l| format!("{:.3}ms", l * 1e3)),
            if h.present { "yes" } else { "no" }
        );
        if let Some(p) = h.relay_pid {
            let cpus = std::fs::read_to_string(format!("/proc/{p}/status"))
                .ok()
                .and_then(|t| {
                    t.lines()
                        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                        .map(|c| format!(", CPUs {}", c.trim()))
                })
                .unwrap_or_default();
            println!(
                "    relay pid {p}: {}{cpus}",
                if h.relay_alive == Some(true) {
                    "running"
                } else {
                    "NOT running"
                }
            );
        }
        if let Some(cc) = &h.congestion_control {
            println!("    tcp congestion control: {cc}");
        }
        for q in &h.qdiscs {
            println!("    {q}");
        }
    }
    for (n, p, alive) in &s.daemons {
        println!(
            "daemon {n} pid {p}: {}",
            if *alive { "running" } else { "NOT running" }
        );
    }
}
