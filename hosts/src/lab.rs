//! Building, inspecting and removing a lab: one network namespace per
//! host, all on one bridge in the root namespace through veth pairs, each
//! host's link shaped on its own two ends.
//!
//! ```text
//!  root namespace                              host namespace mheta-LAB-HOST
//!  bridge TAGbr (A.B.C.1) -- TAGhIa  ======  TAGhIb (A.B.C.10+I)
//!                 with latency:  TAGhId == TAGhIc <relay> TAGhIa == TAGhIb
//! ```
//!
//! - The host's sending direction is shaped on `TAGhIb` (inside the host),
//!   its receiving direction on `TAGhIa` (the root side): `htb` with a
//!   class at the host's rate, and one per destination picked by `u32`
//!   filters on the peer's address when the host has per-destination
//!   rates; in each class small packets (acknowledgements) go before bulk
//!   data (`shape::shape`). The bursts stay small (32 KiB at 1 Gbit/s,
//!   16 KiB at most rates below): a large burst lets a 1 MiB message pass
//!   above the rate.
//! - Added latency: a relay process ([`crate::relay`]) holds every frame
//!   between `TAGhIa` and `TAGhIc` for the latency, both ways.
//! - Each host has its own UTS namespace (its hostname is the host's name),
//!   bind-mounted under the lab's state directory, and its own TMPDIR.
//!
//! Everything a lab makes is named from its name (namespaces
//! `mheta-LAB-HOST`) or its tag (interfaces `TAG...`, see [`Lab::tag`]),
//! and listed in its state file, `/run/mheta/hosts/LAB/state.json`, which
//! is written before anything is made: `down` removes what the state file
//! lists and what carries those names, and nothing else, also after a
//! crash.
//!
//! The state file is in [`state`], the shaping and congestion control in
//! [`shape`], the relay and other processes in [`process`].

mod process;
mod shape;
mod state;

pub use process::{alive, stop_process};
pub use shape::{CONGESTION_CONTROLS, burst_bytes, congestion_control};
pub use state::{
    STATE_ROOT, State, is_root, read_state, state_dir, tmp_dir, uts_file, write_state,
};

use crate::spec::Lab;
use process::start_relay;
use serde::Serialize;
use shape::{set_congestion_control, shape};
use state::STATE_VERSION;
use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Stdio};

/// A lab operation that failed.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error(
        "mheta hosts: needs root (it makes network namespaces and tc qdiscs); run it with sudo or as root"
    )]
    NotRoot,
    #[error("mheta hosts: {0}")]
    Clash(String),
    #[error(
        "mheta hosts: the kernel has no `{qdisc}` qdisc ({detail}); the lab shapes links with htb, bfifo leaves and u32 filters"
    )]
    MissingQdisc { qdisc: String, detail: String },
    #[error("mheta hosts: `{cmd}` failed: {detail}")]
    Command { cmd: String, detail: String },
    #[error("mheta hosts: {path}: {detail}")]
    State { path: String, detail: String },
}

/// Run a command; its stderr on failure.
pub(crate) fn sh(prog: &str, args: &[&str]) -> Result<String, LabError> {
    let out = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| LabError::Command {
            cmd: format!("{prog} {}", args.join(" ")),
            detail: e.to_string(),
        })?;
    if !out.status.success() {
        return Err(LabError::Command {
            cmd: format!("{prog} {}", args.join(" ")),
            detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `ip` inside namespace `ns` (or the root namespace).
fn ip(ns: Option<&str>, args: &[&str]) -> Result<String, LabError> {
    match ns {
        Some(n) => {
            let mut a = vec!["-n", n];
            a.extend_from_slice(args);
            sh("ip", &a)
        }
        None => sh("ip", args),
    }
}

/// `tc` inside namespace `ns` (or the root namespace).
fn tc(ns: Option<&str>, args: &[&str]) -> Result<String, LabError> {
    match ns {
        Some(n) => {
            let mut a = vec!["netns", "exec", n, "tc"];
            a.extend_from_slice(args);
            sh("ip", &a)
        }
        None => sh("tc", args),
    }
}

/// Names of the network namespaces on this machine.
pub fn namespaces() -> Vec<String> {
    sh("ip", &["netns", "list"])
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// Names of the root namespace's interfaces.
pub fn interfaces() -> Vec<String> {
    sh("ip", &["-o", "link", "show"])
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let name = l.split(':').nth(1)?.trim();
            Some(name.split('@').next().unwrap_or(name).to_string())
        })
        .collect()
}

/// Interface names of host `i`: (root side, host side, relay's bridge
/// side, bridge port) — the last two only with latency.
pub fn host_ifaces(lab: &Lab, i: usize) -> [String; 4] {
    let t = lab.tag();
    [
        format!("{t}h{i}a"),
        format!("{t}h{i}b"),
        format!("{t}h{i}c"),
        format!("{t}h{i}d"),
    ]
}

/// The bridge's name.
pub fn bridge(lab: &Lab) -> String {
    format!("{}br", lab.tag())
}

/// What `up` did.
#[derive(Debug, PartialEq)]
pub enum Up {
    /// Built now.
    Built,
    /// Already up with this spec: nothing done.
    AlreadyUp,
}

/// Is the lab up with exactly this spec, and everything present (with
/// its Slurm daemons when `slurm`)?
pub fn is_up(lab: &Lab, slurm: bool) -> Result<bool, LabError> {
    let Some(st) = read_state(&lab.name)? else {
        return Ok(false);
    };
    if !st.complete || &st.lab != lab {
        return Ok(false);
    }
    if slurm && (st.daemons.is_empty() || !st.daemons.iter().all(|(_, p)| alive(*p))) {
        return Ok(false);
    }
    let ns = namespaces();
    let ifs = interfaces();
    let all_ns = (0..lab.hosts.len()).all(|i| ns.contains(&lab.netns(i)));
    let relays_alive = st.relays.iter().all(|(_, pid)| alive(*pid));
    Ok(all_ns && ifs.contains(&bridge(lab)) && relays_alive)
}

/// Bring the lab up (as root). `relay` is the command that runs a relay,
/// to which `A C DELAY_SECONDS` are appended (`mheta hosts relay`).
/// With `slurm`, also munged, slurmctld and a slurmd per host
/// ([`crate::slurm`]). Idempotent: a lab already up with this spec (and
/// Slurm, if asked) is left alone; one up with another spec, or half
/// made, is taken down first.
pub fn up(lab: &Lab, relay: &[OsString], slurm: bool) -> Result<Up, LabError> {
    if !is_root() {
        return Err(LabError::NotRoot);
    }
    if is_up(lab, slurm)? {
        // Its namespaces get the unpaced congestion control here too,
        // whatever they ran before.
        for i in 0..lab.hosts.len() {
            set_congestion_control(&lab.netns(i))?;
        }
        return Ok(Up::AlreadyUp);
    }
    if slurm
        && let Some(st) = read_state(&lab.name)?
        && st.complete
        && &st.lab == lab
        && st.daemons.is_empty()
        && is_up(lab, false)?
    {
        // Up without Slurm: add it.
        let mut st = st;
        return match crate::slurm::start(lab) {
            Ok(d) => {
                st.daemons = d;
                write_state(&st)?;
                Ok(Up::Built)
            }
            Err(e) => Err(e),
        };
    }
    if read_state(&lab.name)?.is_some() {
        down(&lab.name)?;
    }
    check_clashes(lab)?;
    let mut st = State {
        version: STATE_VERSION,
        lab: lab.clone(),
        complete: false,
        relays: vec![],
        daemons: vec![],
    };
    write_state(&st)?;
    let built = build(lab, relay, &mut st).and_then(|()| {
        if slurm {
            st.daemons = crate::slurm::start(lab)?;
        }
        Ok(())
    });
    match built {
        Ok(()) => {
            st.complete = true;
            write_state(&st)?;
            Ok(Up::Built)
        }
        Err(e) => {
            let _ = write_state(&st);
            let _ = down(&lab.name);
            Err(e)
        }
    }
}

/// Refuse when a name the lab would make is taken by something it did not
/// make, or its subnet is in use.
fn check_clashes(lab: &Lab) -> Result<(), LabError> {
    let ns = namespaces();
    for i in 0..lab.hosts.len() {
        if ns.contains(&lab.netns(i)) {
            return Err(LabError::Clash(format!(
                "network namespace {} exists but lab {} is not up (no {}); it was not made by mheta hosts, or its state was lost: remove it (`ip netns del {}`) or rename the lab ([lab] name)",
                lab.netns(i),
                lab.name,
                state_dir(&lab.name).join("state.json").display(),
                lab.netns(i)
            )));
        }
    }
    let tag = lab.tag();
    if let Some(f) = interfaces().into_iter().find(|f| f.starts_with(&tag)) {
        return Err(LabError::Clash(format!(
            "interface {f} exists and lab {} would use names starting with {tag}; it was not made by mheta hosts for this lab: remove it or rename the lab ([lab] name)",
            lab.name
        )));
    }
    let cidr_prefix = {
        let [a, b, c] = lab.subnet;
        format!("{a}.{b}.{c}.")
    };
    let addrs = sh("ip", &["-o", "-4", "addr", "show"]).unwrap_or_default();
    if let Some(l) = addrs
        .lines()
        .find(|l| l.contains(&format!("inet {cidr_prefix}")))
    {
        return Err(LabError::Clash(format!(
            "subnet {} is in use on this machine ({}); set another in the spec's [lab] subnet",
            lab.cidr(),
            l.split_whitespace().take(4).collect::<Vec<_>>().join(" ")
        )));
    }
    Ok(())
}

fn build(lab: &Lab, relay: &[OsString], st: &mut State) -> Result<(), LabError> {
    let br = bridge(lab);
    ip(None, &["link", "add", &br, "type", "bridge"])?;
    // The qdiscs the lab needs, tried on its own bridge first.
    for (q, args) in [
        ("htb", vec!["default", "1"]),
        ("bfifo", vec!["limit", "65536"]),
    ] {
        let mut a = vec!["qdisc", "add", "dev", &br, "root", "handle", "1:", q];
        a.extend(args);
        tc(None, &a).map_err(|e| LabError::MissingQdisc {
            qdisc: q.into(),
            detail: e.to_string(),
        })?;
        tc(None, &["qdisc", "del", "dev", &br, "root"])?;
    }
    let bridge_cidr = format!("{}/24", lab.bridge_ip());
    ip(None, &["addr", "add", &bridge_cidr, "dev", &br])?;
    ip(None, &["link", "set", &br, "up"])?;
    for i in 0..lab.hosts.len() {
        build_host(lab, i, relay, st)?;
        write_state(st)?;
    }
    Ok(())
}

/// Host `i` of `lab`: its namespace, hostname, veth pair (and the
/// relay's, with added latency), address, shaping and congestion
/// control.
///
/// Every veth end carries one TCP segment a frame (`gso_max_segs 1`).
/// With segmentation offload a veth passes a message of up to 64 KiB as
/// one frame, and `htb` lets a frame through whenever its bucket is not
/// empty: a 56 KB message after an idle gap crossed a "1 Gbit/s" link in
/// 26-35 µs (NPB CG's all-gathers on netdc2, 2026-12-02), where the
/// wire takes 448 µs. Frames of one segment are paced as a NIC sends
/// them (244 µs there: the bucket's 32 KB, then the rate).
fn build_host(lab: &Lab, i: usize, relay: &[OsString], st: &mut State) -> Result<(), LabError> {
    let h = &lab.hosts[i];
    let ns = lab.netns(i);
    let [a, b, c, d] = host_ifaces(lab, i);
    let br = bridge(lab);
    ip(None, &["netns", "add", &ns])?;
    // The host's own hostname.
    let uts = uts_file(&lab.name, &h.name);
    let io = |e: std::io::Error| LabError::State {
        path: uts.display().to_string(),
        detail: e.to_string(),
    };
    std::fs::create_dir_all(uts.parent().unwrap_or(Path::new("/"))).map_err(io)?;
    std::fs::write(&uts, b"").map_err(io)?;
    let uts_arg = format!("--uts={}", uts.display());
    sh("unshare", &[&uts_arg, "hostname", &h.name])?;
    std::fs::create_dir_all(tmp_dir(&lab.name, &h.name)).map_err(|e| LabError::State {
        path: tmp_dir(&lab.name, &h.name).display().to_string(),
        detail: e.to_string(),
    })?;
    ip(
        None,
        &["link", "add", &a, "type", "veth", "peer", "name", &b],
    )?;
    ip(None, &["link", "set", &b, "netns", &ns])?;
    // One segment a frame (above).
    ip(None, &["link", "set", "dev", &a, "gso_max_segs", "1"])?;
    ip(Some(&ns), &["link", "set", "dev", &b, "gso_max_segs", "1"])?;
    let addr = format!("{}/24", lab.host_ip(i));
    ip(Some(&ns), &["link", "set", "lo", "up"])?;
    set_congestion_control(&ns)?;
    ip(Some(&ns), &["addr", "add", &addr, "dev", &b])?;
    ip(Some(&ns), &["link", "set", &b, "up"])?;
    // Sending direction, inside the host; receiving, on the root side.
    shape(lab, i, Some(&ns), &b, "dst")?;
    shape(lab, i, None, &a, "src")?;
    match h.latency {
        Some(lat) if lat > 0.0 => {
            ip(
                None,
                &["link", "add", &c, "type", "veth", "peer", "name", &d],
            )?;
            for f in [&c, &d] {
                ip(None, &["link", "set", "dev", f, "gso_max_segs", "1"])?;
            }
            for f in [&a, &c, &d] {
                ip(None, &["link", "set", f, "up"])?;
            }
            ip(None, &["link", "set", &d, "master", &br])?;
            let pid = start_relay(lab, i, relay, &a, &c, lat)?;
            st.relays.push((h.name.clone(), pid));
        }
        _ => {
            ip(None, &["link", "set", &a, "master", &br])?;
            ip(None, &["link", "set", &a, "up"])?;
        }
    }
    Ok(())
}

/// What `down` removed.
#[derive(Debug, Default)]
pub struct Down {
    pub namespaces: Vec<String>,
    pub interfaces: Vec<String>,
    pub processes: Vec<(String, u32)>,
    /// False when the lab was not up (nothing to do).
    pub was_up: bool,
}

/// Take lab `name` down: its daemons and relays (by pid, checked against
/// their command lines), its namespaces, its interfaces (by its tag), its
/// UTS mounts, its state and TMPDIRs. Without a state file, nothing is
/// touched.
pub fn down(name: &str) -> Result<Down, LabError> {
    if !is_root() {
        return Err(LabError::NotRoot);
    }
    let mut done = Down::default();
    let Some(st) = read_state(name)? else {
        return Ok(done);
    };
    done.was_up = true;
    let lab = &st.lab;
    for (d, pid) in st.daemons.iter().rev() {
        stop_process(*pid, d.split(':').next().unwrap_or(d));
        done.processes.push((d.clone(), *pid));
    }
    for (h, pid) in &st.relays {
        stop_process(*pid, &lab.tag());
        done.processes.push((format!("relay:{h}"), *pid));
    }
    let ns = namespaces();
    for i in 0..lab.hosts.len() {
        let n = lab.netns(i);
        if ns.contains(&n) {
            ip(None, &["netns", "del", &n])?;
            done.namespaces.push(n);
        }
    }
    let tag = lab.tag();
    // A veth's peer goes with it; list again after each removal. The
    // kernel removes a deleted namespace's interfaces, and their peers out
    // here, a moment later: one that vanished between the listing and its
    // removal is gone, not an error.
    for _ in 0..4 * (lab.hosts.len() + 1) {
        let Some(f) = interfaces().into_iter().find(|f| f.starts_with(&tag)) else {
            break;
        };
        match ip(None, &["link", "del", &f]) {
            Ok(_) => done.interfaces.push(f),
            Err(_) if !interfaces().contains(&f) => {}
            Err(e) => return Err(e),
        }
    }
    for h in &lab.hosts {
        let uts = uts_file(name, &h.name);
        if uts.exists() {
            let _ = sh("umount", &[&uts.display().to_string()]);
        }
    }
    let _ = std::fs::remove_dir_all(std::env::temp_dir().join(format!("mheta-hosts-{name}")));
    let dir = state_dir(name);
    // The state file goes last: a crash before this leaves it for the next down.
    if let Err(e) = std::fs::remove_dir_all(&dir)
        && dir.exists()
    {
        return Err(LabError::State {
            path: dir.display().to_string(),
            detail: e.to_string(),
        });
    }
    Ok(done)
}

/// One host's status.
#[derive(Serialize, Debug)]
pub struct HostStatus {
    pub name: String,
    pub netns: String,
    pub ip: String,
    pub ranks: usize,
    pub present: bool,
    pub rate_bps: Option<f64>,
    pub latency_s: Option<f64>,
    pub relay_pid: Option<u32>,
    pub relay_alive: Option<bool>,
    /// The namespace's TCP congestion control ([`set_congestion_control`]).
    pub congestion_control: Option<String>,
    /// The qdiscs on the host's two ends, as `tc qdisc show` gives them.
    pub qdiscs: Vec<String>,
}

/// A lab's status.
#[derive(Serialize, Debug)]
pub struct Status {
    pub lab: String,
    /// "up", "down" or "partial".
    pub state: String,
    pub subnet: String,
    pub bridge: String,
    pub hosts: Vec<HostStatus>,
    pub daemons: Vec<(String, u32, bool)>,
}

/// The status of `lab` (read-only; any user).
pub fn status(lab: &Lab) -> Result<Status, LabError> {
    let st = read_state(&lab.name)?;
    let ns = namespaces();
    let ifs = interfaces();
    let mut hosts = vec![];
    for (i, h) in lab.hosts.iter().enumerate() {
        let n = lab.netns(i);
        let present = ns.contains(&n);
        let relay = st
            .as_ref()
            .and_then(|s| s.relays.iter().find(|(r, _)| r == &h.name).map(|x| x.1));
        let [a, b, ..] = host_ifaces(lab, i);
        let mut qdiscs = vec![];
        if present {
            for (nsx, dev) in [(Some(n.as_str()), &b), (None, &a)] {
                if let Ok(q) = tc(nsx, &["qdisc", "show", "dev", dev]) {
                    qdiscs.extend(q.lines().map(|l| format!("{dev}: {}", l.trim())));
                }
            }
        }
        hosts.push(HostStatus {
            name: h.name.clone(),
            netns: n,
            ip: lab.host_ip(i),
            ranks: h.ranks,
            present,
            rate_bps: h.rate,
            latency_s: h.latency,
            relay_pid: relay,
            relay_alive: relay.map(alive),
            congestion_control: if present {
                congestion_control(&lab.netns(i))
            } else {
                None
            },
            qdiscs,
        });
    }
    let all = hosts
        .iter()
        .all(|h| h.present && h.relay_alive != Some(false))
        && ifs.contains(&bridge(lab));
    let any = hosts.iter().any(|h| h.present) || ifs.iter().any(|f| f.starts_with(&lab.tag()));
    let state = match (&st, all, any) {
        (Some(s), true, _) if s.complete && &s.lab == lab => "up",
        (Some(s), true, _) if s.complete => "up (another spec)",
        (None, _, false) => "down",
        _ => "partial",
    };
    Ok(Status {
        lab: lab.name.clone(),
        state: state.into(),
        subnet: lab.cidr(),
        bridge: bridge(lab),
        hosts,
        daemons: st
            .map(|s| {
                s.daemons
                    .iter()
                    .map(|(n, p)| (n.clone(), *p, alive(*p)))
                    .collect()
            })
            .unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::{Lab, bridge, host_ifaces};

    #[test]
    fn names_fit_linux_limits() {
        let hosts: Vec<crate::HostSpec> = (0..100)
            .map(|i| crate::spec::plain_host(&format!("host{i}"), 1))
            .collect();
        let lab = Lab::new(None, hosts, "x.toml", "a-rather-long-lab-name").unwrap();
        for i in [0, 99] {
            for f in host_ifaces(&lab, i) {
                assert!(f.len() <= 15, "{f}");
            }
        }
        assert!(bridge(&lab).len() <= 15);
    }
}
