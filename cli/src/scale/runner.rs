//! Running one configuration of `mheta scale` (processes per host group,
//! grid rows) as a real MPI run across the lab's hosts: a spec of just
//! those hosts, the app's median time per iteration, and every
//! configuration repeated in interleaved rounds.

use super::{RunOpts, group_of};
use crate::hosts::{Lease, lab_of, mpirun_across};
use crate::launch::exe_dir;
use anyhow::{Context, Result, bail};
use mheta_hosts::Lab;
use mheta_scale::{Parts, parse_parts};
use serde_json::Value;
use std::ffi::OsString;
use std::path::PathBuf;

/// One configuration to run: processes per group and the grid's rows.
#[derive(Clone, Debug)]
pub(super) struct Config {
    pub(super) parts: Parts,
    pub(super) rows: u64,
}

impl Config {
    pub(super) fn np(&self) -> u32 {
        self.parts.iter().map(|p| p.1).sum()
    }
    pub(super) fn label(&self) -> String {
        let p: Vec<String> = self.parts.iter().map(|(g, n)| format!("{g}={n}")).collect();
        format!("{}@{}", p.join(","), self.rows)
    }
}

/// A configuration from `PARTS@ROWS` (e.g. `a=4,b=4@1023`).
pub(super) fn parse_config(s: &str) -> Result<Config> {
    let (p, r) = s
        .split_once('@')
        .with_context(|| format!("--config {s:?}: not PARTS@ROWS (e.g. a=4,b=4@1023)"))?;
    let rows = r
        .parse()
        .ok()
        .filter(|&r: &u64| r > 0)
        .with_context(|| format!("--config {s:?}: {r:?} is not a row count"))?;
    Ok(Config {
        parts: parse_parts(p).map_err(|e| anyhow::anyhow!("--config {s:?}: {e}"))?,
        rows,
    })
}

/// Runs configurations across a lab's hosts.
pub(super) struct Runner {
    pub(super) lab: Lab,
    spec: toml::Value,
    app: String,
    exe: PathBuf,
    n: u64,
    opts: RunOpts,
    dir: PathBuf,
    /// The emulation the apps reported (rank 0's job report).
    pub(super) emulation: String,
}

/// `--cpu-emulation auto` for a lab of `ranks` on `cores`: clock at
/// [`AUTO_CLOCK_NS`] (or the given figure) when the ranks outnumber the
/// cores, else paced. Says which on stderr.
fn resolve_emulation(mut opts: RunOpts, ranks: usize, cores: usize) -> RunOpts {
    if opts.cpu_emulation != "auto" {
        return opts;
    }
    if ranks > cores {
        opts.cpu_emulation = "clock".into();
        let ns = opts
            .cpu_ns_per_unit
            .get_or_insert_with(|| AUTO_CLOCK_NS.to_string());
        eprintln!(
            "mheta scale: --cpu-emulation auto: the spec's {ranks} ranks outnumber this host's {cores} cores; clock at {ns} ns a unit"
        );
    } else {
        opts.cpu_emulation = "paced".into();
    }
    opts
}

/// Nanoseconds a unit (a grid point's update) lasts at cpu_power 1 under
/// `--cpu-emulation auto`'s clock: about twice a unit's real cost for mg
/// and jacobi, so that the real work fits inside (docs/design/scale.md).
const AUTO_CLOCK_NS: &str = "10";

impl Runner {
    pub(super) fn new(spec: &str, app: &str, n: u64, opts: RunOpts) -> Result<Runner> {
        let lab = lab_of(spec)?;
        let opts = resolve_emulation(opts, lab.ranks(), crate::hosts::cores());
        let text = std::fs::read_to_string(spec).with_context(|| format!("{spec}: cannot read"))?;
        let spec: toml::Value =
            toml::from_str(&text).with_context(|| format!("{spec}: not TOML"))?;
        let exe = exe_dir()?.join(app);
        if !exe.is_file() {
            bail!(
                "{}: not found; build it with `cargo build --release -p mheta-apps`",
                exe.display()
            );
        }
        let dir = std::env::temp_dir().join(format!("mheta-scale-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("{}: cannot create", dir.display()))?;
        Ok(Runner {
            lab,
            spec,
            app: app.into(),
            exe,
            n,
            opts,
            dir,
            emulation: String::new(),
        })
    }

    /// The hosts of a configuration: the first `np` hosts of each group,
    /// in the parts' order.
    fn hosts(&self, c: &Config) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for (g, np) in &c.parts {
            let mine: Vec<&str> = self
                .lab
                .hosts
                .iter()
                .map(|h| h.name.as_str())
                .filter(|h| group_of(h) == g)
                .collect();
            if mine.len() < *np as usize {
                bail!(
                    "{}: group {g:?} has {} hosts, {} needs {np}",
                    self.lab.name,
                    mine.len(),
                    c.label()
                );
            }
            out.extend(mine[..*np as usize].iter().map(|h| h.to_string()));
        }
        Ok(out)
    }

    /// A spec of the same lab with only `hosts`, in order (the apps give
    /// rank r the spec's r-th host's CPU power).
    fn sub_spec(&self, hosts: &[String]) -> Result<PathBuf> {
        let mut v = self.spec.clone();
        let t = v.as_table_mut().context("spec is not a table")?;
        let all = t
            .get("host")
            .and_then(toml::Value::as_array)
            .cloned()
            .unwrap_or_default();
        let name_of = |h: &toml::Value| {
            h.get("name")
                .and_then(toml::Value::as_str)
                .map(String::from)
        };
        let mut picked: Vec<toml::Value> = hosts
            .iter()
            .filter_map(|n| {
                all.iter()
                    .find(|h| name_of(h).as_deref() == Some(n))
                    .cloned()
            })
            .collect();
        // Per-destination rates only to the hosts that are there.
        for h in &mut picked {
            if let Some(to) = h.get_mut("to").and_then(toml::Value::as_table_mut) {
                to.retain(|k, _| hosts.iter().any(|h| h == k));
            }
        }
        t.insert("host".into(), toml::Value::Array(picked));
        let lab = t
            .entry("lab")
            .or_insert_with(|| toml::Value::Table(Default::default()));
        if let Some(l) = lab.as_table_mut() {
            l.insert("name".into(), toml::Value::String(self.lab.name.clone()));
        }
        let p = self.dir.join(format!("{}.toml", hosts.join("-")));
        std::fs::write(&p, toml::to_string(&v)?)
            .with_context(|| format!("{}: cannot write", p.display()))?;
        Ok(p)
    }

    /// One run: the app's median time per iteration, seconds.
    fn run(&mut self, c: &Config) -> Result<f64> {
        let hosts = self.hosts(c)?;
        let spec = self.sub_spec(&hosts)?;
        let mut lab = self.lab.clone();
        lab.hosts.retain(|h| hosts.contains(&h.name));
        lab.hosts
            .sort_by_key(|h| hosts.iter().position(|n| n == &h.name));
        let user: Vec<OsString> = [
            "-np".to_string(),
            c.np().to_string(),
            self.exe.display().to_string(),
            "--n".into(),
            self.n.to_string(),
            "--rows".into(),
            c.rows.to_string(),
            "--iters".into(),
            self.opts.iters.to_string(),
            "--cluster".into(),
            spec.display().to_string(),
            "--cpu-emulation".into(),
            self.opts.cpu_emulation.clone(),
            "--wait".into(),
            "sleep".into(),
        ]
        .into_iter()
        .chain(
            self.opts
                .cpu_ns_per_unit
                .iter()
                .flat_map(|ns| ["--cpu-ns-per-unit".to_string(), ns.clone()]),
        )
        .map(OsString::from)
        .collect();
        let out = mpirun_across(&lab, &user)?
            .output()
            .with_context(|| format!("{}: cannot start mpirun", c.label()))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            bail!(
                "{} ({}): {} failed: {}",
                c.label(),
                hosts.join(","),
                self.app,
                app_error(&String::from_utf8_lossy(&out.stderr))
            );
        }
        let rep: Value = stdout
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str(l).ok())
            .with_context(|| format!("{}: {} printed no JSON report", c.label(), self.app))?;
        self.note_emulation(&rep);
        rep.get("iter_median_s")
            .and_then(Value::as_f64)
            .with_context(|| format!("{}: report has no iter_median_s", c.label()))
    }

    fn note_emulation(&mut self, rep: &Value) {
        let e = &rep["emulation"];
        let cpu = e["cpu"].as_str().unwrap_or("?");
        let ns = self
            .opts
            .cpu_ns_per_unit
            .as_ref()
            .map(|n| format!(" --cpu-ns-per-unit {n}"))
            .unwrap_or_default();
        let text = format!(
            "--cpu-emulation {}{ns} (ranks report cpu: {cpu}), --wait sleep",
            self.opts.cpu_emulation
        );
        if !self.emulation.contains(&text) {
            if !self.emulation.is_empty() {
                self.emulation.push_str("; ");
            }
            self.emulation.push_str(&text);
        }
    }

    /// Every configuration `repeat` times, interleaved (round by round);
    /// each configuration's times.
    pub(super) fn measure(&mut self, configs: &[Config]) -> Result<Vec<Vec<f64>>> {
        let _lease = Lease::take(&self.lab)?;
        let mut times = vec![Vec::new(); configs.len()];
        for round in 0..self.opts.repeat {
            for (i, c) in configs.iter().enumerate() {
                let t = self.run(c)?;
                eprintln!("round {} {:<16} {:.3} ms", round + 1, c.label(), t * 1e3);
                times[i].push(t);
            }
        }
        Ok(times)
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The line of a failed run's stderr that says why: the first that names
/// an error, else the first that is not mpirun's banner of dashes or empty.
fn app_error(stderr: &str) -> &str {
    let useful = |l: &&str| {
        let t = l.trim();
        !t.is_empty() && !t.chars().all(|c| c == '-')
    };
    stderr
        .lines()
        .find(|l| l.contains("error"))
        .or_else(|| stderr.lines().find(useful))
        .unwrap_or("(no message on stderr)")
        .trim()
}

#[cfg(test)]
mod tests {
    use super::{RunOpts, parse_config, resolve_emulation};

    #[test]
    fn auto_emulation_takes_the_clock_when_ranks_outnumber_cores() {
        let opts = |e: &str, ns: Option<&str>| RunOpts {
            iters: 1,
            repeat: 1,
            cpu_emulation: e.into(),
            cpu_ns_per_unit: ns.map(String::from),
        };
        let r = resolve_emulation(opts("auto", None), 12, 2);
        assert_eq!(
            (r.cpu_emulation.as_str(), r.cpu_ns_per_unit.as_deref()),
            ("clock", Some("10"))
        );
        let r = resolve_emulation(opts("auto", Some("25")), 12, 2);
        assert_eq!(r.cpu_ns_per_unit.as_deref(), Some("25"));
        let r = resolve_emulation(opts("auto", None), 4, 8);
        assert_eq!(
            (r.cpu_emulation.as_str(), r.cpu_ns_per_unit),
            ("paced", None)
        );
        // An explicit choice is kept.
        let r = resolve_emulation(opts("quota", None), 12, 2);
        assert_eq!(r.cpu_emulation, "quota");
    }

    #[test]
    fn configs_parse_and_name_their_culprit() {
        let c = parse_config("a=4,b=4@1023").expect("config");
        assert_eq!(
            (c.np(), c.rows, c.label()),
            (8, 1023, "a=4,b=4@1023".into())
        );
        for bad in ["a=4", "a=4@x", "a=4@0", "a4@1023"] {
            let e = parse_config(bad).expect_err(bad).to_string();
            assert!(e.contains(bad), "{bad}: {e}");
        }
    }

    #[test]
    fn a_failed_run_is_named_by_the_apps_own_error() {
        let e = "mg: error: --rows 383: multigrid needs M = 2^j - 1\n-----\nPrimary job terminated\n-----\n";
        assert_eq!(
            super::app_error(e),
            "mg: error: --rows 383: multigrid needs M = 2^j - 1"
        );
        assert_eq!(super::app_error("----\n\nkilled\n"), "killed");
        assert_eq!(super::app_error(""), "(no message on stderr)");
    }
}
