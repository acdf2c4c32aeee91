//! The processes a lab runs: starting a host's latency relay, and
//! checking and stopping a process by pid.

use super::{LabError, sh, state_dir};
use crate::spec::Lab;
use std::ffi::OsString;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Start host `i`'s relay, pinned to its [`crate::cores::relay_cpu`]
/// where it has one.
pub(super) fn start_relay(
    lab: &Lab,
    i: usize,
    relay: &[OsString],
    a: &str,
    c: &str,
    latency: f64,
) -> Result<u32, LabError> {
    let Some((prog, args)) = relay.split_first() else {
        return Err(LabError::Command {
            cmd: "relay".into(),
            detail: "no relay command given".into(),
        });
    };
    let host = &lab.hosts[i].name;
    let log = state_dir(&lab.name).join(format!("relay-{host}.log"));
    let io = |e: std::io::Error| LabError::State {
        path: log.display().to_string(),
        detail: e.to_string(),
    };
    let out = std::fs::File::create(&log).map_err(io)?;
    let err = out.try_clone().map_err(io)?;
    // setsid: the relay outlives this command, in a session of its own.
    let child = Command::new("setsid")
        .arg(prog)
        .args(args)
        .arg(a)
        .arg(c)
        .arg(format!("{latency}"))
        .args(crate::cores::relay_cpu(lab, i).map(|c| format!("--cpu={c}")))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| LabError::Command {
            cmd: format!("setsid {}", prog.to_string_lossy()),
            detail: e.to_string(),
        })?;
    let pid = child.id();
    // The relay says "ready" once its sockets are bound.
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(5) {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("ready") {
            return Ok(pid);
        }
        if !alive(pid) {
            return Err(LabError::Command {
                cmd: format!("relay for host {host}"),
                detail: format!("exited: {}", text.trim()),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(LabError::Command {
        cmd: format!("relay for host {host}"),
        detail: format!("not ready after 5 s (log {})", log.display()),
    })
}

/// Is `pid` a live process (not a zombie)?
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|st| st != "Z" && st != "X"),
        Err(_) => false,
    }
}

/// The command line of `pid`, arguments joined by spaces.
fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|&c| c == 0)
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// Stop `pid` if it is alive and its command line contains `must`
/// (a recycled pid is left alone): SIGTERM, then SIGKILL after 3 s.
pub fn stop_process(pid: u32, must: &str) {
    if !alive(pid) || !cmdline(pid).contains(must) {
        return;
    }
    let p = pid.to_string();
    let _ = sh("kill", &["-TERM", &p]);
    let t = Instant::now();
    while alive(pid) && t.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(20));
    }
    if alive(pid) {
        let _ = sh("kill", &["-KILL", &p]);
    }
}
