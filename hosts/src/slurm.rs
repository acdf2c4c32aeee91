//! Slurm on a lab: munged, slurmctld and one slurmd per host, so that
//! `srun` and `salloc` (and an Open MPI `mpirun` under `salloc`, which
//! starts its daemons with `srun`) run across the lab's hosts.
//!
//! What [`start`] runs, every daemon in the foreground in a session of its
//! own (`setsid`), its stdout and stderr in a file of the lab's:
//!
//! - `munged -F` as root, with its own key (1024 random bytes, mode 0400),
//!   socket, pid, seed and log files: nothing touches `/run/munge` or
//!   `/etc/munge`, and Slurm finds it through `AuthInfo=socket=...`.
//! - `slurmctld -D` in the root namespace, in a UTS namespace of its own
//!   whose hostname is `LAB-ctl` (slurmctld insists that its hostname be
//!   the `SlurmctldHost` name), reached at the bridge's address.
//! - `slurmd -D -N HOST` for each host, inside the host's network and UTS
//!   namespaces, entered with `nsenter --net=/run/netns/NS --uts=UTSFILE`,
//!   in a mount namespace where `/sys/class/net` lists the host's own
//!   interfaces (`agent::with_net_sysfs`: UCX, under `srun --mpi=pmi2`,
//!   finds its devices there). Not `ip netns exec`: that remounts all of
//!   `/sys` and hides the cgroup mounts, which slurmd then fails on.
//!
//! Everything is under `/run/mheta/hosts/LAB/slurm/` ([`slurm_dir`]):
//!
//! ```text
//! slurm.conf                    the one configuration (SLURM_CONF for clients)
//! munge.key munge.socket        munged's key and socket
//! munged.{pid,seed,log}         munged's files (its log is its stderr)
//! slurmctld.{log,out,pid} ctld/ slurmctld's log, stdout+stderr, pid, StateSaveLocation
//! slurmd-HOST.{log,out,pid}     each slurmd's (and its slurmstepds') log, stdout+stderr, pid
//! spool/HOST/                   each slurmd's SlurmdSpoolDir
//! ```
//!
//! The configuration, found to work on Debian 12's Slurm 22.05 without
//! systemd or cgroups: `ProctrackType=proctrack/linuxproc`,
//! `TaskPlugin=task/none`, `SlurmUser=root`, `SelectType=select/cons_tres`
//! with `CR_Core`, one node per host with `CPUs` = its ranks and its
//! address (`SlurmdParameters=config_overrides`: the nodes are not
//! drained for claiming more CPUs than the machine has), one default
//! partition `lab` of all nodes, `ReturnToService=2`. slurmctld listens in
//! the root namespace on a port picked from the lab's name (the next free
//! one if taken: two labs may run Slurm at once); each slurmd listens on
//! the next port, in its own namespace.
//!
//! Each daemon is added to the lab's state file as soon as it runs, so a
//! crash half-way leaves them for `mheta hosts down` to stop. When Slurm
//! does not come up (a daemon exits, or the nodes are not idle within
//! 20 s), what was started is stopped, the error quotes the end of the
//! failing daemon's output, and the logs and slurm.conf are copied to
//! `$TMPDIR/mheta-slurm-LAB-failed/` ([`failed_dir`]): `up` then takes the
//! lab down, and its directory with it.

use crate::lab::{
    LabError, State, alive, read_state, state_dir, stop_process, uts_file, write_state,
};
use crate::spec::Lab;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long [`start`] waits for every node to be idle.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// The lowest port [`base_port`] picks.
const PORT_BASE: u16 = 17000;

/// The directory of the lab's Slurm files.
pub fn slurm_dir(lab: &Lab) -> PathBuf {
    state_dir(&lab.name).join("slurm")
}

/// The lab's slurm.conf.
pub fn conf_path(lab: &Lab) -> PathBuf {
    slurm_dir(lab).join("slurm.conf")
}

/// The hostname slurmctld runs under (its own UTS namespace).
pub fn controller_name(lab: &Lab) -> String {
    format!("{}-ctl", lab.name)
}

/// The port slurmctld first tries for `lab` (slurmd uses the next one):
/// an even port in 17000..18998 from the lab's name.
pub fn base_port(lab: &Lab) -> u16 {
    PORT_BASE + ((crate::spec::fnv(&lab.name) % 1000) * 2) as u16
}

/// The slurm.conf text for `lab`, with slurmctld on `port` and each slurmd
/// on `port + 1`, its files under `dir`.
pub fn conf_text(lab: &Lab, dir: &Path, port: u16) -> String {
    let d = dir.display();
    let mut s = format!(
        "# Written by mheta hosts up --slurm for lab {name}; removed by mheta hosts down.\n\
         ClusterName={cluster}\n\
         SlurmctldHost={ctl}({bridge})\n\
         SlurmctldPort={port}\n\
         SlurmdPort={dport}\n\
         AuthType=auth/munge\n\
         CredType=cred/munge\n\
         AuthInfo=socket={d}/munge.socket\n\
         SlurmUser=root\n\
         SlurmdUser=root\n\
         StateSaveLocation={d}/ctld\n\
         SlurmdSpoolDir={d}/spool/%n\n\
         SlurmctldPidFile={d}/slurmctld.pid\n\
         SlurmdPidFile={d}/slurmd-%n.pid\n\
         SlurmctldLogFile={d}/slurmctld.log\n\
         SlurmdLogFile={d}/slurmd-%n.log\n\
         SlurmctldSyslogDebug=quiet\n\
         SlurmdSyslogDebug=quiet\n\
         ProctrackType=proctrack/linuxproc\n\
         TaskPlugin=task/none\n\
         JobAcctGatherType=jobacct_gather/none\n\
         AccountingStorageType=accounting_storage/none\n\
         MpiDefault=none\n\
         SwitchType=switch/none\n\
         SchedulerType=sched/backfill\n\
         SelectType=select/cons_tres\n\
         SelectTypeParameters=CR_Core\n\
         ReturnToService=2\n\
         SlurmdParameters=config_overrides\n\
         MailProg=/bin/true\n",
        name = lab.name,
        cluster = lab.name.to_lowercase(),
        ctl = controller_name(lab),
        bridge = lab.bridge_ip(),
        dport = port + 1,
    );
    for (i, h) in lab.hosts.iter().enumerate() {
        s.push_str(&format!(
            "NodeName={} NodeAddr={} CPUs={} State=UNKNOWN\n",
            h.name,
            lab.host_ip(i),
            h.ranks.max(1)
        ));
    }
    let nodes: Vec<&str> = lab.hosts.iter().map(|h| h.name.as_str()).collect();
    s.push_str(&format!(
        "PartitionName=lab Nodes={} Default=YES MaxTime=INFINITE State=UP\n",
        nodes.join(",")
    ));
    s
}

/// The local TCP ports in use in `/proc/net/tcp` (or `tcp6`) text.
pub fn ports_in_use(proc_net_tcp: &str) -> Vec<u16> {
    proc_net_tcp
        .lines()
        .skip(1)
        .filter_map(|l| {
            let local = l.split_whitespace().nth(1)?;
            let port = local.rsplit_once(':')?.1;
            u16::from_str_radix(port, 16).ok()
        })
        .collect()
}

/// The first port pair (`p`, `p + 1`) from [`base_port`] on that no TCP
/// socket of the root namespace uses.
fn free_port(lab: &Lab) -> Result<u16, LabError> {
    let mut used = vec![];
    for f in ["/proc/net/tcp", "/proc/net/tcp6"] {
        used.extend(ports_in_use(
            &std::fs::read_to_string(f).unwrap_or_default(),
        ));
    }
    let mut p = base_port(lab);
    for _ in 0..100 {
        if !used.contains(&p) && !used.contains(&(p + 1)) {
            return Ok(p);
        }
        p = if p >= 18996 { PORT_BASE } else { p + 2 };
    }
    Err(LabError::Command {
        cmd: "slurmctld".into(),
        detail: format!(
            "no free port pair near {} for slurmctld and slurmd",
            base_port(lab)
        ),
    })
}

/// The nodes of `sinfo -h -N -o "%N %t"` output that are not idle, among
/// `nodes` (a node missing from the output is not idle).
pub fn not_idle<'a>(sinfo: &str, nodes: &[&'a str]) -> Vec<&'a str> {
    nodes
        .iter()
        .filter(|n| {
            !sinfo.lines().any(|l| {
                let mut w = l.split_whitespace();
                w.next() == Some(n) && w.next() == Some("idle")
            })
        })
        .copied()
        .collect()
}

/// The environment Slurm's clients (srun, salloc, sinfo) need for `lab`:
/// `SLURM_CONF`, once Slurm has been started for the lab (before, or
/// without `--slurm`, nothing: a user's own Slurm is left alone).
pub fn client_env(lab: &Lab) -> Vec<(String, String)> {
    let conf = conf_path(lab);
    if conf.exists() {
        vec![("SLURM_CONF".into(), conf.display().to_string())]
    } else {
        vec![]
    }
}

/// `prog` on $PATH (or in /usr/sbin, /sbin: the daemons live there).
fn find_program(prog: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into(), "/usr/bin".into()])
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
}

/// The last `n` lines of a file (empty if unreadable).
fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> LabError + '_ {
    move |e| LabError::State {
        path: path.display().to_string(),
        detail: e.to_string(),
    }
}

/// One daemon being started: its name in the state file, what it runs,
/// and its stdout+stderr file.
struct Daemon {
    name: String,
    args: Vec<String>,
    out: PathBuf,
}

/// What `start` has started so far; stopped on drop unless kept.
struct Started {
    lab: String,
    daemons: Vec<(String, u32)>,
    /// This process's children, reaped once stopped.
    children: Vec<Child>,
    keep: bool,
}

impl Started {
    /// Record the daemons in the lab's state file.
    fn record(&self) -> Result<(), LabError> {
        if let Some(mut st) = read_state(&self.lab)? {
            st.daemons = self.daemons.clone();
            write_state(&st)?;
        }
        Ok(())
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        for (name, pid) in self.daemons.iter().rev() {
            stop_process(*pid, name.split(':').next().unwrap_or(name));
        }
        self.daemons.clear();
        for c in &mut self.children {
            let _ = c.try_wait();
        }
        if let Ok(Some(st)) = read_state(&self.lab) {
            let st: State = State {
                daemons: vec![],
                ..st
            };
            let _ = write_state(&st);
        }
    }
}

/// Spawn `d` detached (`setsid`, stdin from /dev/null, stdout and stderr
/// appended to its file). setsid execs, so the child's pid is the daemon's.
fn spawn(d: &Daemon, conf: &Path) -> Result<Child, LabError> {
    let out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&d.out)
        .map_err(io_err(&d.out))?;
    let err = out.try_clone().map_err(io_err(&d.out))?;
    Command::new("setsid")
        .args(&d.args)
        .env("SLURM_CONF", conf)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| LabError::Command {
            cmd: format!("setsid {}", d.args.join(" ")),
            detail: e.to_string(),
        })
}

/// The error for daemon `name` that failed (`what`), with its output's tail.
fn daemon_err(name: &str, what: &str, out: &Path) -> LabError {
    LabError::Command {
        cmd: name.to_string(),
        detail: format!("{what}; the end of {}:\n{}", file_name(out), tail(out, 12)),
    }
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(
        || p.display().to_string(),
        |f| f.to_string_lossy().into_owned(),
    )
}

/// Where the Slurm files of a lab whose Slurm failed to start are kept:
/// the lab's own directory goes when `up` takes the lab down again.
pub fn failed_dir(lab: &Lab) -> PathBuf {
    std::env::temp_dir().join(format!("mheta-slurm-{}-failed", lab.name))
}

/// Copy the lab's Slurm logs and slurm.conf to [`failed_dir`], and say
/// where in `e`.
fn keep_logs(lab: &Lab, e: LabError) -> LabError {
    let from = slurm_dir(lab);
    let to = failed_dir(lab);
    let _ = std::fs::remove_dir_all(&to);
    let copied = std::fs::create_dir_all(&to).is_ok()
        && std::fs::read_dir(&from).is_ok_and(|rd| {
            rd.flatten()
                .filter(|f| {
                    let n = f.file_name().to_string_lossy().into_owned();
                    n.ends_with(".log") || n.ends_with(".out") || n.ends_with(".conf")
                })
                .all(|f| std::fs::copy(f.path(), to.join(f.file_name())).is_ok())
        });
    let note = if copied {
        format!(
            "\n(Slurm's logs and slurm.conf are kept in {})",
            to.display()
        )
    } else {
        format!("\n(Slurm's logs are in {})", from.display())
    };
    match e {
        LabError::Command { cmd, detail } => LabError::Command {
            cmd,
            detail: detail + &note,
        },
        LabError::State { path, detail } => LabError::State {
            path,
            detail: detail + &note,
        },
        e => e,
    }
}

/// Start munged, slurmctld and one slurmd per host of `lab` (which is
/// up), and wait until every node is idle; returns the daemons as
/// (name, pid), in start order: `munged`, `slurmctld`, `slurmd:HOST`...
/// (the part before ':' is in the daemon's command line). On an error,
/// what was started is stopped again, and the logs are copied to
/// [`failed_dir`] (the error names it).
pub fn start(lab: &Lab) -> Result<Vec<(String, u32)>, LabError> {
    start_daemons(lab).map_err(|e| keep_logs(lab, e))
}

fn start_daemons(lab: &Lab) -> Result<Vec<(String, u32)>, LabError> {
    check_programs()?;
    let dir = slurm_dir(lab);
    make_dir(lab, &dir)?;
    let port = free_port(lab)?;
    let conf = conf_path(lab);
    std::fs::write(&conf, conf_text(lab, &dir, port)).map_err(io_err(&conf))?;

    let mut started = Started {
        lab: lab.name.clone(),
        daemons: vec![],
        children: vec![],
        keep: false,
    };

    // munged, and its socket.
    let munged = munged_daemon(&dir);
    let pid = launch(&munged, &conf, &mut started)?;
    wait_for_socket(&munged, pid, &dir.join("munge.socket"))?;

    let all = slurm_daemons(lab, &dir, &conf);
    for d in &all {
        launch(d, &conf, &mut started)?;
    }
    wait_idle(lab, &conf, &munged, &all, &started)?;
    started.keep = true;
    Ok(std::mem::take(&mut started.daemons))
}

/// Fails, naming the program, when a program a lab's Slurm needs is not
/// installed.
fn check_programs() -> Result<(), LabError> {
    for prog in [
        "munged",
        "slurmctld",
        "slurmd",
        "sinfo",
        "nsenter",
        "unshare",
        "setsid",
    ] {
        if find_program(prog).is_none() {
            return Err(LabError::Command {
                cmd: prog.into(),
                detail: "not installed: Slurm on a lab needs the Debian packages munge, slurmctld, slurmd and slurm-client (scripts/setup.sh installs them)".into(),
            });
        }
    }
    Ok(())
}

/// A fresh Slurm directory `dir` for `lab`: the controller's and every
/// host's spool directories, and a new munge key.
fn make_dir(lab: &Lab, dir: &Path) -> Result<(), LabError> {
    // A fresh directory: what an earlier, crashed start left is not reused.
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(io_err(dir))?;
    }
    for d in [dir.to_path_buf(), dir.join("ctld"), dir.join("spool")] {
        std::fs::create_dir_all(&d).map_err(io_err(&d))?;
    }
    for h in &lab.hosts {
        let d = dir.join("spool").join(&h.name);
        std::fs::create_dir_all(&d).map_err(io_err(&d))?;
    }
    // munged wants its socket's directory searchable by all, and not
    // writable by group or others.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).map_err(io_err(dir))?;
    let key = dir.join("munge.key");
    let mut bytes = vec![0u8; 1024];
    File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(io_err(Path::new("/dev/urandom")))?;
    // Made with mode 0400 (never readable by others, not even briefly).
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o400)
        .open(&key)
        .and_then(|mut f| f.write_all(&bytes))
        .map_err(io_err(&key))
}

/// munged with its socket, key, pid, log and seed files in `dir`.
fn munged_daemon(dir: &Path) -> Daemon {
    let p = |f: &str| dir.join(f).display().to_string();
    Daemon {
        name: "munged".into(),
        args: vec![
            "munged".into(),
            "-F".into(),
            format!("--socket={}", p("munge.socket")),
            format!("--key-file={}", p("munge.key")),
            format!("--pid-file={}", p("munged.pid")),
            format!("--log-file={}", p("munged.log")),
            format!("--seed-file={}", p("munged.seed")),
        ],
        out: dir.join("munged.log"),
    }
}

/// Start daemon `d` and record it in `started` (and the lab's state);
/// returns its pid.
fn launch(d: &Daemon, conf: &Path, started: &mut Started) -> Result<u32, LabError> {
    let child = spawn(d, conf)?;
    let pid = child.id();
    started.daemons.push((d.name.clone(), pid));
    started.children.push(child);
    started.record()?;
    Ok(pid)
}

/// Wait up to 5 s for munged (`pid`) to make its `socket`.
fn wait_for_socket(munged: &Daemon, pid: u32, socket: &Path) -> Result<(), LabError> {
    let t = Instant::now();
    while !socket.exists() {
        if !alive(pid) {
            return Err(daemon_err("munged", "exited", &munged.out));
        }
        if t.elapsed() > Duration::from_secs(5) {
            return Err(daemon_err("munged", "no socket after 5 s", &munged.out));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// slurmctld, under the hostname its SlurmctldHost names, then one slurmd
/// per host of `lab`, in the host's network and UTS namespaces.
fn slurm_daemons(lab: &Lab, dir: &Path, conf: &Path) -> Vec<Daemon> {
    let conf_s = conf.display().to_string();
    let ctld = Daemon {
        name: "slurmctld".into(),
        args: vec![
            "unshare".into(),
            "--uts".into(),
            "--".into(),
            "sh".into(),
            "-c".into(),
            "hostname \"$0\" && exec \"$@\"".into(),
            controller_name(lab),
            "slurmctld".into(),
            "-D".into(),
            "-f".into(),
            conf_s.clone(),
        ],
        out: dir.join("slurmctld.out"),
    };
    let mut all = vec![ctld];
    for (i, h) in lab.hosts.iter().enumerate() {
        all.push(Daemon {
            name: format!("slurmd:{}", h.name),
            args: [
                "nsenter".into(),
                format!("--net=/run/netns/{}", lab.netns(i)),
                format!("--uts={}", uts_file(&lab.name, &h.name).display()),
                "--".into(),
            ]
            .into_iter()
            .chain(crate::agent::with_net_sysfs(&[
                "slurmd".into(),
                "-D".into(),
                "-N".into(),
                h.name.clone(),
                "-f".into(),
                conf_s.clone(),
            ]))
            .collect(),
            out: dir.join(format!("slurmd-{}.out", h.name)),
        });
    }
    all
}

/// Wait until every node is idle (slurmctld is up, and every slurmd
/// registered), for at most [`READY_TIMEOUT`]; fails when a daemon of
/// `started` (`munged`, then `all`) exits.
fn wait_idle(
    lab: &Lab,
    conf: &Path,
    munged: &Daemon,
    all: &[Daemon],
    started: &Started,
) -> Result<(), LabError> {
    let nodes: Vec<&str> = lab.hosts.iter().map(|h| h.name.as_str()).collect();
    let t = Instant::now();
    let mut last = String::new();
    loop {
        for (d, (_, pid)) in std::iter::once(munged).chain(all).zip(&started.daemons) {
            if !alive(*pid) {
                return Err(daemon_err(&d.name, "exited", &d.out));
            }
        }
        let out = Command::new("timeout")
            .args(["5", "sinfo", "-h", "-N", "-o", "%N %t"])
            .env("SLURM_CONF", conf)
            .stdin(Stdio::null())
            .output();
        if let Ok(o) = out {
            last = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            if o.status.success() && not_idle(&last, &nodes).is_empty() {
                return Ok(());
            }
        }
        if t.elapsed() > READY_TIMEOUT {
            return Err(not_idle_err(&not_idle(&last, &nodes), &last, all));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The error for nodes still `waiting` after [`READY_TIMEOUT`]: sinfo's
/// `last` answer and the end of slurmctld's output and of each waiting
/// node's slurmd's (`all`: slurmctld, then the slurmds).
fn not_idle_err(waiting: &[&str], last: &str, all: &[Daemon]) -> LabError {
    let mut detail = format!(
        "nodes not idle after {} s: {} (sinfo: {})\nthe end of slurmctld's {}:\n{}",
        READY_TIMEOUT.as_secs(),
        waiting.join(", "),
        last.trim(),
        file_name(&all[0].out),
        tail(&all[0].out, 8)
    );
    for d in all.iter().skip(1) {
        let host = d.name.split(':').nth(1).unwrap_or_default();
        if waiting.contains(&host) {
            detail.push_str(&format!(
                "\nthe end of {}'s {}:\n{}",
                d.name,
                file_name(&d.out),
                tail(&d.out, 8)
            ));
        }
    }
    LabError::Command {
        cmd: "slurm".into(),
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lab() -> Lab {
        let hosts = ["a0", "b1", "c2"]
            .iter()
            .enumerate()
            .map(|(i, n)| crate::spec::plain_host(n, i + 1))
            .collect();
        Lab::new(None, hosts, "x.toml", "MyLab").unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn conf_names_every_node_with_its_address_and_ranks() {
        let l = lab();
        let dir = slurm_dir(&l);
        let c = conf_text(&l, &dir, 17010);
        for (i, h) in l.hosts.iter().enumerate() {
            let line = format!(
                "NodeName={} NodeAddr={} CPUs={} State=UNKNOWN",
                h.name,
                l.host_ip(i),
                h.ranks
            );
            assert!(c.lines().any(|x| x == line), "{line} missing in\n{c}");
        }
        assert!(
            c.contains("PartitionName=lab Nodes=a0,b1,c2 Default=YES"),
            "{c}"
        );
        assert!(
            c.contains(&format!("SlurmctldHost=MyLab-ctl({})", l.bridge_ip())),
            "{c}"
        );
        assert!(c.contains("ClusterName=mylab\n"), "{c}");
        assert!(c.contains("SlurmctldPort=17010\nSlurmdPort=17011\n"), "{c}");
        assert!(
            c.contains(&format!("AuthInfo=socket={}/munge.socket", dir.display())),
            "{c}"
        );
        assert!(
            c.contains(&format!("SlurmdSpoolDir={}/spool/%n", dir.display())),
            "{c}"
        );
        assert!(c.contains("ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"));
        // Nothing of the machine's own Slurm or munge.
        assert!(
            !c.contains("/var/") && !c.contains("/etc/") && !c.contains("/run/munge"),
            "{c}"
        );
        // One setting a line, each once.
        let mut keys: Vec<&str> = c
            .lines()
            .filter(|x| !x.starts_with('#') && !x.starts_with("NodeName="))
            .filter_map(|x| x.split('=').next())
            .collect();
        let n = keys.len();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), n, "a setting twice in\n{c}");
    }

    #[test]
    fn ports_are_even_in_range_and_from_the_name() {
        let l = lab();
        let p = base_port(&l);
        assert_eq!(p, base_port(&lab()));
        assert!((17000..19000).contains(&p) && p.is_multiple_of(2), "{p}");
    }

    #[test]
    fn ports_in_use_read_proc_net_tcp() {
        let text = "  sl  local_address rem_address   st tx_queue\n   0: 00000000:07E8 00000000:0000 0A 00000000:00000000\n   1: 0100007F:4269 0100007F:D431 01 0\n";
        assert_eq!(ports_in_use(text), vec![2024, 17001]);
        let six = "  sl  local_address                         remote_address\n   0: 00000000000000000000000000000000:1A85 00000000000000000000000000000000:0000 0A\n";
        assert_eq!(ports_in_use(six), vec![6789]);
    }

    #[test]
    fn idle_means_every_node_idle() {
        let nodes = ["a0", "b1", "c2"];
        assert!(not_idle("a0 idle\nb1 idle\nc2 idle\n", &nodes).is_empty());
        assert_eq!(not_idle("a0 idle\nb1 down*\nc2 idle\n", &nodes), vec!["b1"]);
        assert_eq!(not_idle("a0 idle\nc2 unk*\n", &nodes), vec!["b1", "c2"]);
        assert_eq!(not_idle("", &nodes).len(), 3);
    }

    #[test]
    fn clients_get_no_slurm_conf_before_slurm_runs() {
        let mut l = lab();
        l.name = "no-such-lab-ever".into();
        assert!(client_env(&l).is_empty());
    }
}
