//! Slurm on a lab, end to end: `mheta hosts up SPEC --slurm` on a 2-host
//! lab, `srun` across both hosts with the environment `mheta hosts env`
//! prints (and MPICH's jacobi through `srun --mpi=pmi2` when its build
//! is there), then `mheta hosts down`, which must stop every daemon and
//! remove the namespaces. Needs root, Slurm (slurmctld, slurmd, munge,
//! slurm-client) and a built `target/release/mheta`; skipped otherwise.
//!
//! `cargo build --release -p mheta-cli -p mheta-hosts`, then
//! `cargo test --release -p mheta-hosts --test slurm -- --nocapture`

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use mheta_hosts::lab;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

const LAB: &str = "slurmit";
const HOSTS: [&str; 2] = ["it0", "it1"];

fn mheta() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("target/release/mheta")
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    eprintln!(
        "$ {cmd:?}: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn installed(prog: &str) -> bool {
    Command::new("sh")
        .args([
            "-c",
            &format!("command -v {prog} || test -x /usr/sbin/{prog}"),
        ])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Takes the lab down on drop (also when an assertion fails).
struct Down {
    spec: PathBuf,
}

impl Drop for Down {
    fn drop(&mut self) {
        let _ = Command::new(mheta())
            .args(["hosts", "down"])
            .arg(&self.spec)
            .output();
        let _ = std::fs::remove_file(&self.spec);
    }
}

fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

#[test]
fn srun_runs_on_every_host_and_down_stops_the_daemons() {
    if !lab::is_root() {
        eprintln!("skipped: Slurm on a lab needs root (network namespaces)");
        return;
    }
    if !installed("slurmctld") || !installed("srun") {
        eprintln!(
            "skipped: Slurm is not installed (scripts/setup.sh installs slurmctld slurmd munge slurm-client)"
        );
        return;
    }
    // It runs the Open MPI build (and MPICH's, under srun --mpi=pmi2) by
    // their paths: the MPICH pass of MHETA_MPI=both leaves it to the
    // Open MPI pass.
    if std::env::var("MHETA_MPI").as_deref() == Ok("both")
        && std::env::var("MHETA_MPIRUN").is_ok_and(|l| l.contains("mpiexec"))
    {
        eprintln!("skipped in the MPICH pass (the Open MPI pass ran it)");
        return;
    }
    let exe = mheta();
    if !exe.is_file() {
        eprintln!(
            "skipped: {} is missing: build it first (cargo build --release -p mheta-cli -p mheta-hosts)",
            exe.display()
        );
        return;
    }
    let spec = std::env::temp_dir().join(format!("mheta-slurmit-{}.toml", std::process::id()));
    let mut text = format!("[lab]\nname = \"{LAB}\"\nsubnet = \"10.77.251.0/24\"\n");
    for h in HOSTS {
        text.push_str(&format!("\n[[host]]\nname = \"{h}\"\ncpu_power = 1.0\n"));
    }
    std::fs::write(&spec, text).unwrap();
    let guard = Down { spec: spec.clone() };

    let t = Instant::now();
    let up = run(Command::new(&exe)
        .args(["hosts", "up"])
        .arg(&spec)
        .arg("--slurm"));
    assert!(up.status.success(), "hosts up --slurm failed");
    eprintln!("hosts up --slurm: {:.2} s", t.elapsed().as_secs_f64());

    let st = lab::read_state(LAB).unwrap().expect("no state after up");
    let names: Vec<&str> = st.daemons.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["munged", "slurmctld", "slurmd:it0", "slurmd:it1"]);
    for (n, pid) in &st.daemons {
        assert!(lab::alive(*pid), "{n} (pid {pid}) is not running");
        let want = n.split(':').next().unwrap();
        assert!(cmdline(*pid).contains(want), "pid {pid}: {}", cmdline(*pid));
    }

    let env = run(Command::new(&exe).args(["hosts", "env"]).arg(&spec));
    assert!(env.status.success());
    let vars: Vec<(String, String)> = String::from_utf8_lossy(&env.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("export "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert!(vars.iter().any(|(k, _)| k == "SLURM_CONF"), "{vars:?}");

    let t = Instant::now();
    let out = run(Command::new("timeout")
        .args(["60", "srun", "-N", "2", "-n", "2", "hostname"])
        .envs(vars.iter().map(|(k, v)| (k, v))));
    eprintln!("srun: {:.2} s", t.elapsed().as_secs_f64());
    assert!(out.status.success(), "srun failed");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut got: Vec<&str> = text.lines().map(str::trim).collect();
    got.sort_unstable();
    assert_eq!(got, HOSTS, "srun ran on the wrong hosts");

    // MPICH through Slurm's PMI-2, when the suite built it
    // (`MHETA_MPI=both`): jacobi across both hosts, held to TCP by the
    // environment `mheta hosts env` prints.
    let jacobi = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("mpich/release/jacobi");
    if jacobi.is_file() {
        let out = run(Command::new("timeout")
            .args(["60", "srun", "--mpi=pmi2", "-N", "2", "-n", "2"])
            .arg(&jacobi)
            .args(["--n", "512", "--iters", "20"])
            .env_remove("LD_LIBRARY_PATH")
            .envs(vars.iter().map(|(k, v)| (k, v))));
        assert!(
            out.status.success(),
            "srun --mpi=pmi2 of MPICH's jacobi failed"
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let r: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(r["verified"], true, "{r}");
        assert_eq!(r["np"], 2, "{r}");
    } else {
        eprintln!("MPICH under srun: skipped ({} not built)", jacobi.display());
    }

    let t = Instant::now();
    let down = run(Command::new(&exe).args(["hosts", "down"]).arg(&spec));
    eprintln!("hosts down: {:.2} s", t.elapsed().as_secs_f64());
    assert!(down.status.success());
    for (n, pid) in &st.daemons {
        let want = n.split(':').next().unwrap();
        assert!(
            !(lab::alive(*pid) && cmdline(*pid).contains(want)),
            "{n} (pid {pid}) still runs after down"
        );
    }
    let ns = lab::namespaces();
    assert!(
        !ns.iter().any(|n| n.starts_with(&format!("mheta-{LAB}-"))),
        "namespaces left: {ns:?}"
    );
    assert!(lab::read_state(LAB).unwrap().is_none(), "state left");
    drop(guard);
}
