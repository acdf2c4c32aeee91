//! Launching Open MPI, or MPICH's Hydra, across a lab's hosts.
//!
//! `mpirun` (or `mpiexec.hydra`) stays in the root namespace. Its rsh
//! launcher runs the agent (`mheta hosts agent LAB`) with a host name and
//! the daemon's (Hydra: the proxy's) command; the agent enters that
//! host's network and UTS namespaces (`nsenter`) and a mount namespace
//! where `/sys/class/net` lists the host's own interfaces
//! ([`with_net_sysfs`]: UCX finds its devices there), sets the host's own TMPDIR (Open MPI's
//! session directories) and runs the command. The daemons reach the launcher at
//! the bridge's address, and ranks on different hosts talk TCP on the
//! lab's subnet, over the shaped links: Open MPI's TCP BTL, or UCX held
//! to TCP on the host's interface (`UCX_TLS`, `UCX_NET_DEVICES`, set by
//! the agent).
//!
//! Settings found necessary on a 2-core machine: `--bind-to none` (else
//! each host's daemon binds its rank to core 0 and all ranks share one
//! core), and `mpi_yield_when_idle 1` when ranks outnumber cores.

use crate::lab::{LabError, read_state, tmp_dir, uts_file};
use crate::spec::Lab;
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// The options `mpirun` needs to run across `lab`: `agent` is the agent's
/// command line (program and arguments, no spaces or colons inside
/// either: Open MPI splits the value on spaces), `cores` the machine's.
/// `user` is the user's own mpirun arguments: options already there
/// (`--map-by`, `--bind-to`, `-np`) are not added again.
pub fn mpirun_args(lab: &Lab, agent: &[String], cores: usize, user: &[OsString]) -> Vec<String> {
    let has = |flag: &str| {
        user.iter().any(|a| {
            let a = a.to_string_lossy();
            a == flag || a.starts_with(&format!("{flag}="))
        })
    };
    let hosts: Vec<String> = lab
        .hosts
        .iter()
        .map(|h| format!("{}:{}", h.name, h.ranks))
        .collect();
    let cidr = lab.cidr();
    let mut v = vec![
        "--host".to_string(),
        hosts.join(","),
        "--mca".into(),
        "plm_rsh_agent".into(),
        agent.join(" "),
        "--mca".into(),
        "plm_rsh_no_tree_spawn".into(),
        "1".into(),
        "--mca".into(),
        "btl".into(),
        "self,vader,tcp".into(),
        "--mca".into(),
        "btl_tcp_if_include".into(),
        cidr.clone(),
        "--mca".into(),
        "oob_tcp_if_include".into(),
        cidr,
    ];
    if !has("--bind-to") {
        v.extend(["--bind-to".into(), "none".into()]);
    }
    if !has("--map-by") {
        v.extend(["--map-by".into(), "slot".into()]);
    }
    if !has("-np") && !has("-n") && !has("--np") {
        v.extend(["-np".into(), lab.ranks().to_string()]);
    }
    if lab.ranks() > cores {
        v.extend(["--mca".into(), "mpi_yield_when_idle".into(), "1".into()]);
    }
    if crate::lab::is_root() {
        v.push("--allow-run-as-root".into());
    }
    v
}

/// The options MPICH's Hydra (`mpiexec.hydra`) needs to run across
/// `lab`: its rsh launcher through `agent` (one executable: Hydra calls it
/// with the host and the proxy's command), the bridge as the interface
/// the proxies reach it on, the hosts with their slots, and `-n` unless
/// `user` gives it.
pub fn hydra_args(lab: &Lab, agent: &str, user: &[OsString]) -> Vec<String> {
    let given = user
        .iter()
        .any(|a| matches!(a.to_string_lossy().as_ref(), "-n" | "-np"));
    let hosts: Vec<String> = (lab.hosts.iter())
        .map(|h| format!("{}:{}", h.name, h.ranks))
        .collect();
    let mut v = vec![
        "-iface".to_string(),
        crate::lab::bridge(lab),
        "-launcher".into(),
        "rsh".into(),
        "-launcher-exec".into(),
        agent.into(),
        "-hosts".into(),
        hosts.join(","),
    ];
    if !given {
        v.extend(["-n".into(), lab.ranks().to_string()]);
    }
    v
}

/// The environment that makes a plain `mpirun` (started by Slurm's
/// `salloc`, say) use the lab's subnet: `OMPI_MCA_*` settings; and
/// `UCX_TLS=tcp,self`, which holds an MPICH job started by `srun
/// --mpi=pmi2` to TCP, so that its messages between hosts cross the
/// shaped links (UCX finds each host's interface: `with_net_sysfs`).
pub fn mca_env(lab: &Lab, cores: usize) -> Vec<(String, String)> {
    let mut v = vec![
        ("UCX_TLS".into(), "tcp,self".into()),
        ("OMPI_MCA_btl".into(), "self,vader,tcp".into()),
        ("OMPI_MCA_btl_tcp_if_include".into(), lab.cidr()),
        ("OMPI_MCA_oob_tcp_if_include".into(), lab.cidr()),
        ("OMPI_MCA_hwloc_base_binding_policy".into(), "none".into()),
    ];
    if lab.ranks() > cores {
        v.push(("OMPI_MCA_mpi_yield_when_idle".into(), "1".into()));
    }
    v
}

/// `cmd` run in a mount namespace of its own where the host's network
/// devices are in `/sys/class/net` and `/sys/devices/virtual/net`, from a
/// sysfs mounted inside its network namespace (the caller is in it),
/// where UCX looks for them; the rest of `/sys` (the cgroup hierarchies
/// the CPU emulation and slurmd use) as it is. `ip netns exec` remounts
/// all of `/sys` and hides them. Best effort: `cmd` runs either way, and
/// replaces the shell (its pid is the caller's child's).
pub fn with_net_sysfs(cmd: &[String]) -> Vec<String> {
    const SETUP: &str = r#"{ d=$(mktemp -d) && mount -t sysfs sysfs "$d" && mount --bind "$d/class/net" /sys/class/net && mount --bind "$d/devices/virtual/net" /sys/devices/virtual/net; umount "$d"; rmdir "$d"; } 2>/dev/null; exec "$@""#;
    let head = [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        SETUP,
        "sh",
    ];
    head.iter()
        .map(|s| s.to_string())
        .chain(cmd.iter().cloned())
        .collect()
}

/// The agent: run `cmd` (one shell command line, as the rsh launcher
/// passes it) on `host` of lab `name`. Replaces this process.
pub fn exec_on(
    name: &str,
    host: &str,
    cmd: &[OsString],
) -> Result<std::convert::Infallible, LabError> {
    let Some(st) = read_state(name)? else {
        return Err(LabError::State {
            path: crate::lab::state_dir(name).display().to_string(),
            detail: format!("lab {name} is not up: run `mheta hosts up` with its spec"),
        });
    };
    let lab = &st.lab;
    // The launcher may name a host by name or by address.
    let Some(i) = lab
        .host_index(host)
        .or_else(|| (0..lab.hosts.len()).find(|&i| lab.host_ip(i) == host))
    else {
        return Err(LabError::State {
            path: crate::lab::state_dir(name).display().to_string(),
            detail: format!(
                "no host {host:?} in lab {name} (hosts: {})",
                lab.hosts
                    .iter()
                    .map(|h| h.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    };
    let h = &lab.hosts[i].name;
    let tmp = tmp_dir(name, h);
    let _ = std::fs::create_dir_all(&tmp);
    let line = cmd
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let err = Command::new("nsenter")
        .arg(format!("--net=/run/netns/{}", lab.netns(i)))
        .arg(format!("--uts={}", uts_file(name, h).display()))
        .arg("--")
        .args(with_net_sysfs(&["sh".into(), "-c".into(), line]))
        .env("TMPDIR", &tmp)
        .env("UCX_TLS", "tcp,self")
        .env("UCX_NET_DEVICES", &crate::lab::host_ifaces(lab, i)[1])
        .exec();
    Err(LabError::Command {
        cmd: "nsenter".into(),
        detail: err.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lab `x`: hosts h0 and h1, two ranks each.
    fn two_hosts_of_two() -> Lab {
        let hosts = (0..2).map(|i| crate::spec::plain_host(&format!("h{i}"), 2));
        Lab::new(None, hosts.collect(), "x.toml", "x").unwrap()
    }

    #[test]
    fn mpirun_args_name_the_hosts_and_the_subnet() {
        let lab = two_hosts_of_two();
        let a = mpirun_args(
            &lab,
            &[
                "/bin/mheta".into(),
                "hosts".into(),
                "agent".into(),
                "x".into(),
            ],
            2,
            &[],
        );
        let s = a.join(" ");
        assert!(s.contains("--host h0:2,h1:2"), "{s}");
        assert!(
            s.contains(&format!("btl_tcp_if_include {}", lab.cidr())),
            "{s}"
        );
        assert!(s.contains("plm_rsh_agent /bin/mheta hosts agent x"), "{s}");
        assert!(s.contains("--bind-to none") && s.contains("-np 4"), "{s}");
        assert!(
            s.contains("mpi_yield_when_idle 1"),
            "4 ranks on 2 cores: {s}"
        );
        let a = mpirun_args(
            &lab,
            &["m".into()],
            8,
            &["-np".into(), "2".into(), "--bind-to=core".into()],
        );
        let s = a.join(" ");
        assert!(
            !s.contains("-np") && !s.contains("--bind-to") && !s.contains("yield"),
            "{s}"
        );
    }

    #[test]
    fn hydra_args_name_the_hosts_the_bridge_and_the_agent() {
        let lab = two_hosts_of_two();
        let s = hydra_args(&lab, "/run/x/hydra-agent", &[]).join(" ");
        let bridge = crate::lab::bridge(&lab);
        assert_eq!(
            s,
            format!(
                "-iface {bridge} -launcher rsh -launcher-exec /run/x/hydra-agent -hosts h0:2,h1:2 -n 4"
            )
        );
        let s = hydra_args(&lab, "a", &["-n".into(), "2".into()]).join(" ");
        assert!(!s.contains("-n "), "{s}");
    }
}
