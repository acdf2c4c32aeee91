//! One job of the study: the `mpirun` command, the kernel's arguments,
//! running it, and reading its JSON result (the median iteration, the
//! busiest rank's stages, out of core, the answer checked).

use super::{APPS, Args};
use anyhow::{Context, Result, bail};
use std::ffi::OsString;
use std::process::Command;

/// `mpirun` (or `$MHETA_MPIRUN`) for `np` ranks; Open MPI's gets
/// `--oversubscribe`, and `--allow-run-as-root` as root, as `mheta bench`.
/// On a cluster with hosts, across them.
pub(super) fn mpirun(np: usize, lab: Option<&mheta_hosts::Lab>) -> Result<Command> {
    if let Some(l) = lab {
        return crate::hosts::mpirun_across(l, &[]);
    }
    let launcher = std::env::var_os("MHETA_MPIRUN").unwrap_or_else(|| "mpirun".into());
    let mut c = Command::new(&launcher);
    if crate::is_open_mpi_launcher(&launcher) {
        c.arg("--oversubscribe");
        if crate::is_root() {
            c.arg("--allow-run-as-root");
        }
    }
    c.args(["-np", &np.to_string()]);
    Ok(c)
}

/// The kernel's sizes: the user's arguments, else the study's defaults.
pub(super) fn sizes(a: &Args) -> Vec<OsString> {
    if a.app_args.is_empty() {
        APPS.iter()
            .find(|(n, _)| *n == a.app)
            .map(|(_, d)| d.iter().map(OsString::from).collect())
            .unwrap_or_default()
    } else {
        a.app_args.clone()
    }
}

/// The app's own arguments: the defaults for the study unless the user
/// gave some, then the cluster, iterations, prefetching and the CPU
/// emulation's flags `cpu`.
pub(super) fn app_args(a: &Args, iters: u64, cpu: &[OsString]) -> Vec<OsString> {
    let mut v = sizes(a);
    v.extend(["--cluster", &a.cluster].iter().map(OsString::from));
    // cg runs its NPB class's iteration count, which its verification
    // value needs.
    if a.app != "cg" {
        v.extend(["--iters", &iters.to_string()].iter().map(OsString::from));
    }
    if a.prefetch {
        v.push("--prefetch".into());
    }
    v.extend(cpu.iter().cloned());
    v
}

/// Iterations of the instrumented run: enough for the skipped warm-up
/// iterations and the recorded ones, and one more.
pub(super) fn instrumented_iters(iters: u64) -> u64 {
    iters.max(mheta_trace::DEFAULT_INSTRUMENT_ITER + mheta_trace::DEFAULT_INSTRUMENT_COUNT + 1)
}

/// The last line of a run's stdout, as JSON.
pub(super) fn last_json(out: &[u8], what: &str) -> Result<serde_json::Value> {
    let text = String::from_utf8_lossy(out);
    let line = text
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .with_context(|| format!("{what}: no JSON result on stdout"))?;
    Ok(serde_json::from_str(line)?)
}

/// Run one job; its JSON result.
pub(super) fn run_job(mut c: Command, what: &str) -> Result<serde_json::Value> {
    // Write back what earlier runs left dirty (an out-of-core run leaves
    // ~100 MB of its files in the page cache) before this run starts,
    // rather than in the kernel's flusher threads during it, 30 s later.
    // (coreutils' sync(1); a failure to start it only loses that.)
    let _ = Command::new("sync").status();
    let out = c
        .output()
        .with_context(|| format!("{what}: cannot start {:?}", c.get_program()))?;
    if !out.status.success() {
        bail!(
            "{what} failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    last_json(&out.stdout, what)
}

/// A run's answer is right: the kernel verified it, or it matches the
/// `reference` run (sor, whose exact-solution check needs thousands of
/// iterations, computes the same grid bit for bit on every distribution):
/// the same max error, bit for bit (a max reduction does not depend on
/// the order), and the same checksum to 1e-12 (a sum does).
pub(super) fn check_answer(
    r: &serde_json::Value,
    what: &str,
    reference: Option<&serde_json::Value>,
) -> Result<()> {
    let verified = r["verified"] == serde_json::Value::Bool(true);
    let same = reference.is_some_and(|b| {
        let (c, c0) = (r["checksum"].as_f64(), b["checksum"].as_f64());
        r["error"].as_f64().is_some()
            && r["error"].as_f64() == b["error"].as_f64()
            && matches!((c, c0), (Some(c), Some(c0)) if (c - c0).abs() <= 1e-12 * c0.abs().max(1.0))
    });
    if !verified && !same {
        bail!("{what}: the kernel did not verify: {r}");
    }
    Ok(())
}

/// The run's median iteration, s.
pub(super) fn iter_median(r: &serde_json::Value) -> Result<f64> {
    r["iter_median_s"]
        .as_f64()
        .context("run result has no iter_median_s")
}

/// The busiest rank's median time in stages per iteration, s, of a run.
pub(super) fn busiest_stage(run: &serde_json::Value) -> Result<f64> {
    let ranks = run["ranks"]
        .as_array()
        .filter(|v| !v.is_empty())
        .context("run result has no ranks[]")?;
    ranks.iter().try_fold(0.0f64, |m, k| {
        let s = k["stage_s"]
            .as_f64()
            .context("run result has a rank without stage_s")?;
        Ok(m.max(s))
    })
}

/// Did some rank of a run keep an array out of core?
pub(super) fn out_of_core(run: &serde_json::Value) -> bool {
    run["ranks"].as_array().is_some_and(|ranks| {
        ranks
            .iter()
            .any(|k| k["out_of_core"].as_array().is_some_and(|v| !v.is_empty()))
    })
}

#[cfg(test)]
mod tests {
    use super::out_of_core;
    use serde_json::json;

    #[test]
    fn a_run_is_out_of_core_when_some_rank_kept_an_array_on_disk() {
        let run = |lists: serde_json::Value| json!({ "ranks": lists });
        assert!(!out_of_core(&run(
            json!([{ "out_of_core": [] }, { "out_of_core": [] }])
        )));
        assert!(out_of_core(&run(
            json!([{ "out_of_core": [] }, { "out_of_core": ["u"] }])
        )));
        // A report without per-rank lists says nothing of the kind.
        assert!(!out_of_core(&json!({ "iter_median_s": 0.1 })));
    }
}
