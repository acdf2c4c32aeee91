//! `mheta place`: where to put a task farm's master and which workers to
//! give it, by the work-rate model of Shao, Berman and Wolski (crate `mheta-place`).
//! T_SlaveCPU and T_MasterCPU come from the farm's own calibration (run
//! here across the cluster's hosts with `--calibrate K`, or read from a
//! saved report with `--calibration FILE`); the links from the cluster
//! spec's declared rates, or from a profile's measured pairs
//! (`--profile`). Prints every candidate master's row as a table, and
//! JSON with `--json`.

use crate::hosts::{Lease, lab_of, mpirun_across};
use crate::launch::exe_dir;
use anyhow::{Context, Result, bail};
use clap::Args;
use mheta_hosts::Lab;
use mheta_place::{Host, Inputs, MasterRow, rates::PAYLOAD_FRACTION};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// `mheta place ...`
#[derive(Args, Debug)]
pub struct PlaceArgs {
    /// Cluster spec with [[host]] tables (one rank per host).
    #[arg(long)]
    cluster: String,
    /// The application (the task farm is the one there is).
    #[arg(long, default_value = "farm", value_parser = ["farm"])]
    app: String,
    /// The farm's task kind.
    #[arg(long, default_value = "mandel", value_parser = ["mandel", "ep"])]
    task: String,
    /// A saved `farm --calibrate` report (one JSON line) instead of
    /// calibrating now.
    #[arg(long, value_name = "FILE", conflicts_with = "calibrate")]
    calibration: Option<PathBuf>,
    /// Calibrate now: run `farm --calibrate K` across the hosts.
    #[arg(long, value_name = "K", default_value_t = 4)]
    calibrate: u64,
    /// Take BW_Net from this cluster profile's measured pairs
    /// (`mheta bench --cluster`) rather than the spec's declared rates.
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
    /// Tasks in the run (default: the calibrated problem's).
    #[arg(long, value_name = "N")]
    tasks: Option<u64>,
    /// Tasks a worker holds at once (the farm's --window).
    #[arg(long, default_value_t = 2)]
    window: u32,
    /// Avail_CPU per host, `h1=0.5,h2=0.8` (default 1: calibration under
    /// the cluster's emulation already has each host's power in it).
    #[arg(long, value_name = "H=X,...")]
    avail: Option<String>,
    /// Seconds of start-up the simulated times include.
    #[arg(long, value_name = "S", default_value_t = 0.0)]
    startup: f64,
    /// Write the JSON report to FILE (`-`: stdout, instead of the table).
    #[arg(long, value_name = "FILE")]
    json: Option<String>,
    /// More arguments for the farm's calibration run (e.g.
    /// `--cpu-emulation quota`), one string.
    #[arg(
        long,
        value_name = "ARGS",
        allow_hyphen_values = true,
        default_value = ""
    )]
    farm_args: String,
}

pub fn main(a: PlaceArgs) -> Result<i32> {
    let lab = lab_of(&a.cluster)?;
    if lab.hosts.iter().any(|h| h.ranks != 1) {
        bail!("{}: mheta place needs one rank per host", a.cluster);
    }
    let cal = match &a.calibration {
        Some(p) => read_calibration(p)?,
        None => run_calibration(&a, &lab)?,
    };
    let (mut inputs, bw_source) = inputs_of(&a, &lab, &cal)?;
    if let Some(p) = &a.profile {
        apply_profile(&mut inputs, &lab, p)?;
    }
    let rows = mheta_place::place(&inputs).map_err(|e| anyhow::anyhow!("{e}"))?;
    let chosen = mheta_place::choose(&inputs).map_err(|e| anyhow::anyhow!("{e}"))?;
    let bw = if a.profile.is_some() {
        "profile"
    } else {
        bw_source
    };
    let report = json!({
        "app": a.app, "task": a.task, "cluster": a.cluster, "bandwidth_from": bw,
        "inputs": inputs, "rows": rows, "chosen": chosen,
    });
    match a.json.as_deref() {
        Some("-") => println!("{}", serde_json::to_string_pretty(&report)?),
        Some(f) => {
            std::fs::write(f, serde_json::to_string_pretty(&report)? + "\n")
                .with_context(|| format!("cannot write {f}"))?;
            print_table(&rows, &chosen, bw, &inputs);
        }
        None => print_table(&rows, &chosen, bw, &inputs),
    }
    Ok(0)
}

/// A `farm --calibrate` report: the last JSON line with `mode: calibrate`.
fn parse_calibration(text: &str, from: &str) -> Result<Value> {
    text.lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .find(|v| v["mode"] == "calibrate")
        .with_context(|| {
            format!("{from}: no `farm --calibrate` report (a JSON line with mode \"calibrate\")")
        })
}

fn read_calibration(p: &Path) -> Result<Value> {
    let text =
        std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?;
    parse_calibration(&text, &p.display().to_string())
}

/// Run `farm --calibrate K` across the lab's hosts (brought up for it if
/// they are down) and return its report.
fn run_calibration(a: &PlaceArgs, lab: &Lab) -> Result<Value> {
    let farm = exe_dir()?.join("farm");
    if !farm.is_file() {
        bail!(
            "{}: no farm binary (cargo build --release -p mheta-apps)",
            farm.display()
        );
    }
    let mut user: Vec<OsString> = vec![
        "-np".into(),
        lab.hosts.len().to_string().into(),
        farm.into(),
    ];
    for s in [
        "--task",
        &a.task,
        "--calibrate",
        &a.calibrate.to_string(),
        "--cluster",
        &a.cluster,
    ] {
        user.push(s.into());
    }
    user.extend(a.farm_args.split_whitespace().map(OsString::from));
    let _lease = Lease::take(lab)?;
    let out = mpirun_across(lab, &user)?
        .output()
        .context("cannot start mpirun")?;
    if !out.status.success() {
        // The farm's own error line, not mpirun's banner after it.
        let err = String::from_utf8_lossy(&out.stderr);
        let line = err
            .lines()
            .find(|l| l.starts_with("farm: error:"))
            .or_else(|| {
                err.lines()
                    .rfind(|l| !l.trim_matches('-').trim().is_empty())
            })
            .unwrap_or("");
        let how = if line.contains("--cpu-emulation") {
            " (give the farm its options with --farm-args \"...\")"
        } else {
            ""
        };
        bail!("farm --calibrate failed ({}): {line}{how}", out.status);
    }
    parse_calibration(&String::from_utf8_lossy(&out.stdout), "farm --calibrate")
}

/// `h1=0.5,h2=0.8` into a map, checking host names and values.
fn parse_avail(s: &str, lab: &Lab) -> Result<BTreeMap<String, f64>> {
    let mut m = BTreeMap::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        let (h, x) = part
            .split_once('=')
            .with_context(|| format!("--avail {part}: expected HOST=X"))?;
        let x: f64 = x
            .parse()
            .with_context(|| format!("--avail {part}: {x} is not a number"))?;
        if lab.host_index(h).is_none() {
            bail!("--avail {part}: no host {h} in the cluster");
        }
        m.insert(h.to_string(), x);
    }
    Ok(m)
}

/// The model's inputs from the calibration and the spec's links; the
/// second value names where BW_Net came from.
fn inputs_of(a: &PlaceArgs, lab: &Lab, cal: &Value) -> Result<(Inputs, &'static str)> {
    let ranks = cal["ranks"]
        .as_array()
        .context("calibration: no `ranks` array")?;
    if ranks.len() != lab.hosts.len() {
        bail!(
            "calibration has {} ranks, the cluster {} hosts",
            ranks.len(),
            lab.hosts.len()
        );
    }
    if cal["task"].as_str().is_some_and(|t| t != a.task) {
        bail!("calibration is of task {}, not {}", cal["task"], a.task);
    }
    let avail = parse_avail(a.avail.as_deref().unwrap_or(""), lab)?;
    let num = |v: &Value, k: &str| {
        v[k].as_f64()
            .with_context(|| format!("calibration: no number `{k}`"))
    };
    let mut hosts = Vec::new();
    for (r, h) in lab.hosts.iter().enumerate() {
        hosts.push(Host {
            name: h.name.clone(),
            t_slave_s: num(&ranks[r], "t_slave_s")?,
            t_master_s: num(&ranks[r], "t_master_s")?,
            avail_cpu: avail.get(&h.name).copied().unwrap_or(1.0),
            link_bps: h.rate,
            latency_s: h.latency.unwrap_or(0.0),
            to: h.to.clone(),
            burst_bytes: h.shaper_burst_bytes().unwrap_or(0.0),
        });
    }
    let tasks = a.tasks.map_or_else(
        || cal["tasks"].as_u64().context("calibration: no `tasks`"),
        Ok,
    )?;
    let inputs = Inputs {
        hosts,
        request_bytes: num(cal, "request_bytes")?,
        result_bytes: num(cal, "result_bytes")?,
        tasks,
        window: a.window,
        startup_s: a.startup,
        unshaped_bps: 10e9,
    };
    inputs.check().map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok((inputs, "spec"))
}

/// BW_Net from a profile's measured pairs: a host's link is the fastest
/// pair it is in (payload bytes/s back to the shaped bits), and a pair
/// measured more than 10% below both hosts' links gets a `to` rate.
fn apply_profile(inputs: &mut Inputs, lab: &Lab, p: &Path) -> Result<()> {
    let prof = mheta_profile::ClusterProfile::load(p).map_err(|e| anyhow::anyhow!("{e}"))?;
    if prof.np as usize != lab.hosts.len() {
        bail!(
            "{}: profile of {} ranks, the cluster has {} hosts",
            p.display(),
            prof.np,
            lab.hosts.len()
        );
    }
    let bits = |bytes_per_s: f64| bytes_per_s * 8.0 / PAYLOAD_FRACTION;
    let n = lab.hosts.len();
    let mut link = vec![0.0f64; n];
    for pc in &prof.pairs {
        for h in [pc.src as usize, pc.dst as usize] {
            link[h] = link[h].max(bits(pc.bandwidth_bps));
        }
    }
    for (h, host) in inputs.hosts.iter_mut().enumerate() {
        host.link_bps = Some(link[h]);
        host.to.clear();
    }
    for pc in &prof.pairs {
        let (a, b) = (pc.src as usize, pc.dst as usize);
        let r = bits(pc.bandwidth_bps);
        if r < 0.9 * link[a].min(link[b]) {
            let name = inputs.hosts[b].name.clone();
            let e = inputs.hosts[a].to.entry(name).or_insert(r);
            *e = e.min(r);
        }
    }
    Ok(())
}

fn print_table(rows: &[MasterRow], chosen: &mheta_place::Placement, bw: &str, inputs: &Inputs) {
    println!(
        "{} tasks, {} B request, {} B result, window {}; BW_Net from the {bw}",
        inputs.tasks, inputs.request_bytes, inputs.result_bytes, inputs.window
    );
    println!(
        "{:<8} {:>12} {:>12} {:>10} {:>12} {:>12}  workers (SlaveRate)",
        "master", "W_Master/s", "AppRate/s", "model s", "sim s", "sim all s"
    );
    for r in rows {
        let ws: Vec<String> = r
            .workers
            .iter()
            .map(|w| format!("{w} ({:.1})", r.slave_rates[w]))
            .collect();
        println!(
            "{:<8} {:>12.1} {:>12.2} {:>10.3} {:>12.3} {:>12.3}  {}",
            r.master,
            r.w_master,
            r.rate,
            inputs.tasks as f64 / r.rate,
            r.simulated_s,
            r.simulated_all_s,
            ws.join(", ")
        );
    }
    println!(
        "chosen: master {} with {} of {} workers ({}), {:.2} tasks/s, simulated {:.3} s",
        chosen.master,
        chosen.workers.len(),
        inputs.hosts.len() - 1,
        chosen.workers.join(","),
        chosen.rate,
        chosen.simulated_s
    );
}
