//! CG against the reference NPB 3.4 MPI CG, side by side: `cargo bench -p
//! mheta-apps --bench cg_npb` runs `mpirun -np 2` of our `cg` and of NPB's
//! `cg.<class>.x` in alternating order for several rounds on the same
//! machine and prints each round's Mop/s (NPB's formula, both) and the
//! median of the per-round ratios.
//!
//! Environment: `NPB_BIN` (directory with NPB's `cg.A.x`, ...; without it
//! only ours runs), `CG_CLASSES` (default `A`), `CG_ROUNDS` (default 5),
//! `CG_NP` (default 2). Our binary must be built (`cargo build --release`).
//! Build NPB outside this tree: `make cg CLASS=A` in NPB3.4-MPI with
//! gfortran -O3 (newer gfortran also needs -fallow-argument-mismatch).

use mheta_apps::median;
use std::path::{Path, PathBuf};
use std::process::Command;

fn mpirun(np: &str) -> Command {
    let mut c = Command::new("mpirun");
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .args(["-np", np]);
    c
}

fn stdout(c: &mut Command) -> Option<String> {
    let out = c.output().ok()?;
    if !out.status.success() {
        eprintln!("{c:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn ours(bin: &Path, np: &str, class: &str) -> Option<f64> {
    let out = stdout(mpirun(np).arg(bin).args(["--class", class]))?;
    let line = out.lines().rev().find(|l| l.starts_with('{'))?;
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    if v["verified"] != true {
        eprintln!("ours did not verify: {line}");
        return None;
    }
    v["mops"].as_f64()
}

fn npb(bin: &Path, np: &str, dir: &Path) -> Option<f64> {
    // NPB's checkpointing build writes `cg.<class>.x.<time>.checkpoint/`
    // into its working directory: run it in a scratch directory.
    let out = stdout(mpirun(np).arg(bin).current_dir(dir))?;
    if !out.contains("SUCCESSFUL") {
        eprintln!("NPB did not verify:\n{out}");
        return None;
    }
    out.lines()
        .find(|l| l.contains("Mop/s total"))
        .and_then(|l| l.split('=').nth(1))
        .and_then(|v| v.trim().parse().ok())
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let ours_bin = root.join("target/release/cg");
    if !ours_bin.exists() {
        eprintln!(
            "{} missing: cargo build --release first",
            ours_bin.display()
        );
        std::process::exit(1);
    }
    let npb_dir = std::env::var_os("NPB_BIN").map(PathBuf::from);
    let classes = std::env::var("CG_CLASSES").unwrap_or_else(|_| "A".into());
    let rounds: usize = std::env::var("CG_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let np = std::env::var("CG_NP").unwrap_or_else(|_| "2".into());
    let scratch = std::env::temp_dir().join(format!("mheta-cg-npb-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&scratch) {
        eprintln!("{}: {e}", scratch.display());
        std::process::exit(1);
    }
    println!(
        "CG, {np} ranks, uniform cluster (no emulation), rounds interleaved (order alternates)"
    );
    println!(
        "{:<6} {:>6} {:>14} {:>14} {:>8}",
        "class", "round", "mheta Mop/s", "NPB Mop/s", "ratio"
    );
    for class in classes.split(',') {
        let npb_bin = npb_dir.as_ref().map(|d| d.join(format!("cg.{class}.x")));
        let (mut a, mut b, mut ratios) = (vec![], vec![], vec![]);
        for round in 0..rounds {
            let x;
            let mut y = None;
            let run_npb = |y: &mut Option<f64>| {
                if let Some(p) = &npb_bin {
                    *y = npb(p, &np, &scratch);
                }
            };
            if round % 2 == 0 {
                x = ours(&ours_bin, &np, class);
                run_npb(&mut y);
            } else {
                run_npb(&mut y);
                x = ours(&ours_bin, &np, class);
            }
            let ratio = match (x, y) {
                (Some(x), Some(y)) => Some(x / y),
                _ => None,
            };
            let f = |v: Option<f64>, p: usize| v.map_or("-".to_string(), |v| format!("{v:.p$}"));
            println!(
                "{:<6} {:>6} {:>14} {:>14} {:>8}",
                class,
                round + 1,
                f(x, 1),
                f(y, 1),
                f(ratio, 3)
            );
            a.extend(x);
            b.extend(y);
            ratios.extend(ratio);
        }
        println!(
            "{:<6} {:>6} {:>14.1} {:>14.1} {:>8.3}",
            class,
            "median",
            median(a).unwrap_or(f64::NAN),
            median(b).unwrap_or(f64::NAN),
            median(ratios).unwrap_or(f64::NAN)
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
}
