//! How `mheta experiment`'s runs emulate CPU power. When the ranks
//! outnumber this host's cores, every mode that runs the real work at the
//! host's own speed (`share`, `quota`, `spin`, `paced`) inherits that
//! speed's changes and the contention of ranks sharing a core, and the
//! model's diffs grow with them (figures: docs/EMULATION.md, "More ranks
//! than cores"). `clock` times each piece of work by its declared units and
//! is what the published figures hold under (docs/EMULATION.md); it needs
//! each call site's nanoseconds per unit, which one uniform calibration
//! run measures.

use super::Args;
use anyhow::{Result, bail};
use std::ffi::OsString;

/// The runs' CPU emulation.
#[derive(Debug, PartialEq)]
pub struct CpuChoice {
    /// The mode, or None for the apps' default (`share`).
    pub mode: Option<String>,
    /// Flags to add to the kernel's arguments.
    pub flags: Vec<OsString>,
    /// A calibration run must give the clock its figures.
    pub calibrate: bool,
    /// Why, in one sentence, for the report.
    pub why: String,
}

/// The value of `--flag V` or `--flag=V` among the kernel's arguments.
fn given(args: &[OsString], flag: &str) -> Option<String> {
    let eq = format!("{flag}=");
    args.iter().enumerate().find_map(|(i, x)| {
        let x = x.to_string_lossy();
        if x == flag {
            Some(
                args.get(i + 1)
                    .map_or(String::new(), |v| v.to_string_lossy().into()),
            )
        } else {
            x.strip_prefix(&eq).map(String::from)
        }
    })
}

/// The kernel's arguments without its CPU emulation flags (for the
/// calibration run).
pub fn without_cpu_flags(args: &[OsString]) -> Vec<OsString> {
    let flags = ["--cpu-emulation", "--cpu-ns-per-unit", "--cpu-headroom"];
    let mut out = Vec::new();
    let mut skip = false;
    for x in args {
        let s = x.to_string_lossy();
        if skip {
            skip = false;
        } else if flags.contains(&s.as_ref()) {
            skip = true;
        } else if !flags.iter().any(|f| s.starts_with(&format!("{f}="))) {
            out.push(x.clone());
        }
    }
    out
}

/// Choose the runs' CPU emulation for `np` ranks on `cores` cores: the
/// mode given (to `--cpu-emulation` or the kernel after `--`), else
/// `clock` when the ranks outnumber the cores, else the apps' default.
/// `clock` without `--cpu-ns-per-unit` is calibrated.
pub fn choose(a: &Args, cores: usize) -> Result<CpuChoice> {
    let in_app = given(&a.app_args, "--cpu-emulation");
    let from_app = in_app.is_some();
    let has_ns = given(&a.app_args, "--cpu-ns-per-unit").is_some();
    let crowded = a.np > cores;
    let here = format!("{} ranks on {cores} cores", a.np);
    let (mode, why) = match (in_app, a.cpu_emulation.as_str()) {
        (Some(m), "auto") => (Some(m.clone()), format!("{m}, given to the kernel")),
        (Some(m), own) => bail!(
            "--cpu-emulation {own} and the kernel's --cpu-emulation {m}: give the CPU emulation once"
        ),
        (None, "auto") if crowded => (
            Some("clock".to_string()),
            format!(
                "clock (chosen: {here}; share, quota, spin and paced inherit the host's speed and the ranks' contention for the cores)"
            ),
        ),
        (None, "auto") => (None, format!("share (the apps' default: {here})")),
        (None, m) => (Some(m.to_string()), format!("{m}, as asked")),
    };
    if has_ns && mode.as_deref() != Some("clock") {
        bail!(
            "--cpu-ns-per-unit is given to the kernel but the CPU emulation is {}: it times pieces only with --cpu-emulation clock",
            mode.as_deref().unwrap_or("share")
        );
    }
    let mut flags: Vec<OsString> = Vec::new();
    if let (false, Some(m)) = (from_app, &mode) {
        flags.extend(["--cpu-emulation".into(), m.into()]);
    }
    let calibrate = mode.as_deref() == Some("clock") && !has_ns;
    let faithful = !crowded || mode.as_deref() == Some("clock");
    let why = if faithful {
        why
    } else {
        format!(
            "{why}: not faithful at {here} (the real work runs at the host's changing speed, ranks contend for cores); --cpu-emulation clock is"
        )
    };
    Ok(CpuChoice {
        mode,
        flags,
        calibrate,
        why,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(np: usize, own: &str, app: &[&str]) -> Args {
        Args {
            app: "jacobi".into(),
            cluster: "DC".into(),
            np,
            prefetch: false,
            points: 3,
            iters: 2,
            repeat: 2,
            flag_runq_pct: 5.0,
            flag_cpu_pct: 15.0,
            run_seconds: 0.0,
            learn_each_round: false,
            row_curve: 0,
            json: false,
            plot: None,
            profile: None,
            dir: "x".into(),
            cpu_emulation: own.into(),
            app_args: app.iter().map(OsString::from).collect(),
        }
    }

    #[test]
    fn more_ranks_than_cores_take_the_calibrated_clock() {
        let c = choose(&args(4, "auto", &["--n", "512"]), 2).unwrap();
        assert_eq!(c.mode.as_deref(), Some("clock"));
        assert!(c.calibrate);
        assert_eq!(
            c.flags,
            vec![OsString::from("--cpu-emulation"), "clock".into()]
        );
        // Enough cores: the apps' default, nothing added.
        let c = choose(&args(2, "auto", &[]), 2).unwrap();
        assert_eq!((c.mode, c.calibrate, c.flags.len()), (None, false, 0));
    }

    #[test]
    fn a_mode_given_is_kept_and_said_unfaithful_when_crowded() {
        let c = choose(&args(4, "auto", &["--cpu-emulation", "paced"]), 2).unwrap();
        assert_eq!(c.mode.as_deref(), Some("paced"));
        assert!(c.flags.is_empty() && !c.calibrate);
        assert!(c.why.contains("not faithful"), "{}", c.why);
        let c = choose(
            &args(
                4,
                "auto",
                &["--cpu-emulation=clock", "--cpu-ns-per-unit", "7"],
            ),
            2,
        )
        .unwrap();
        assert!(!c.calibrate && c.flags.is_empty());
        assert!(choose(&args(4, "share", &["--cpu-emulation", "paced"]), 2).is_err());
        assert!(choose(&args(4, "paced", &["--cpu-ns-per-unit", "7"]), 2).is_err());
    }

    #[test]
    fn calibration_drops_the_cpu_flags() {
        let v: Vec<OsString> = ["--n", "64", "--cpu-emulation", "clock", "--cpu-headroom=2"]
            .iter()
            .map(OsString::from)
            .collect();
        assert_eq!(
            without_cpu_flags(&v),
            vec![OsString::from("--n"), "64".into()]
        );
    }
}
