//! The emulated clusters at work: `cargo bench -p mheta-apps --bench
//! emulation` runs every kernel at 2 ranks, in core and out of core, on
//! Block and on a skewed distribution, under the built-in `DC` (CPU power
//! 1.0 and 0.5) and `IO` (rank 1's disk 4× slower) clusters, and prints per
//! iteration the job's time and each rank's computation (`compute_s`:
//! stage time outside its reads and writes) and read times, with the rank
//! 1 / rank 0 ratios: on Block under DC the computation ratio shows the CPU
//! emulation (≈ 2), under IO out of core the read ratio shows the disk
//! emulation (≈ 4). Out of core, `--mem-limit` applies to both ranks; in
//! core under IO, rank 1 still has the spec's 8 MB and may go out of core.
//!
//! A rank's speed on this shared VM moves from run to run (a kernel of a
//! few MB runs from cache or from memory depending on the neighbours), so
//! every configuration runs `EMU_ROUNDS` times (default 3), the rounds
//! interleaved over all configurations, and the table gives the median of
//! each figure and of each per-run ratio. Our binaries must be built
//! (`cargo build --release`). `EMU_APPS` picks kernels (comma-separated).

use mheta_apps::median;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One configuration of the table.
struct Config {
    app: &'static str,
    args: &'static [&'static str],
    iters: &'static str,
    storage: &'static str,
    dist: String,
    cluster: &'static str,
    mem_mb: &'static str,
}

/// One run's figures, in ms.
struct Figures {
    iter: f64,
    comp: [f64; 2],
    read: [f64; 2],
    passes: String,
}

fn run(bin: &Path, c: &Config) -> Option<Figures> {
    let mut cmd = Command::new("mpirun");
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .args(["-np", "2"])
        .arg(bin.join(c.app))
        .args(c.args)
        .args(["--iters", c.iters, "--cluster", c.cluster]);
    if c.dist != "block" {
        cmd.args(["--dist", &c.dist]);
    }
    if c.storage == "out of core" {
        cmd.args(["--mem-limit", c.mem_mb]);
    }
    let out = match cmd.output() {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        Ok(o) => {
            eprintln!("{cmd:?}: {}", String::from_utf8_lossy(&o.stderr));
            return None;
        }
        Err(e) => {
            eprintln!("{cmd:?}: {e}");
            return None;
        }
    };
    let v: Value = out
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .and_then(|l| serde_json::from_str(l).ok())?;
    let r = &v["ranks"];
    let ms = |x: &Value| x.as_f64().unwrap_or(f64::NAN) * 1e3;
    Some(Figures {
        iter: ms(&v["iter_median_s"]),
        comp: [ms(&r[0]["compute_s"]), ms(&r[1]["compute_s"])],
        read: [ms(&r[0]["read_s"]), ms(&r[1]["read_s"])],
        passes: format!("{}/{}", r[0]["passes"], r[1]["passes"]),
    })
}

fn med(v: impl Iterator<Item = f64>) -> f64 {
    median(v.collect()).unwrap_or(f64::NAN)
}

/// The median of the per-run ratios b/a, over the runs where a > 0.
fn ratio(runs: &[Figures], f: impl Fn(&Figures) -> [f64; 2]) -> String {
    let r: Vec<f64> = runs
        .iter()
        .map(&f)
        .filter(|x| x[0] > 0.0)
        .map(|x| x[1] / x[0])
        .collect();
    median(r).map_or("-".into(), |m| format!("{m:.2}"))
}

fn main() {
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release");
    // (app, args, rows, out-of-core memory limit in MB, iterations in
    // core on DC, iterations otherwise): the in-core DC runs take a few ms
    // per iteration and get more of them, since a rank's speed on this VM
    // jumps between runs and within one (cache or memory).
    type Case = (
        &'static str,
        &'static [&'static str],
        u64,
        &'static str,
        &'static str,
        &'static str,
    );
    let cases: &[Case] = &[
        ("jacobi", &["--n", "1536"], 1536, "6", "30", "8"),
        ("sor", &["--n", "1024"], 1024, "3", "40", "8"),
        ("cg", &["--class", "W"], 7000, "1.5", "15", "6"),
        ("lanczos", &["--n", "3072"], 3072, "16", "20", "6"),
        (
            "wavefront",
            &["--n", "1024", "--tiles", "8"],
            1024,
            "3",
            "30",
            "6",
        ),
        ("mg", &["--n", "511"], 511, "2", "30", "6"),
    ];
    let only = std::env::var("EMU_APPS").ok();
    let rounds: usize = std::env::var("EMU_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3)
        .max(1);
    let mut configs = Vec::new();
    for &(app, args, rows, mem_mb, iters_dc, iters) in cases {
        if only
            .as_ref()
            .is_some_and(|o| !o.split(',').any(|a| a == app))
        {
            continue;
        }
        let skew = format!("{},{}", rows * 2 / 3, rows - rows * 2 / 3);
        for storage in ["spec memory", "out of core"] {
            for dist in ["block".to_string(), skew.clone()] {
                for cluster in ["DC", "IO"] {
                    let iters = if storage == "spec memory" && cluster == "DC" {
                        iters_dc
                    } else {
                        iters
                    };
                    configs.push(Config {
                        app,
                        args,
                        iters,
                        storage,
                        dist: dist.clone(),
                        cluster,
                        mem_mb,
                    });
                }
            }
        }
    }
    let mut runs: Vec<Vec<Figures>> = configs.iter().map(|_| Vec::new()).collect();
    for round in 0..rounds {
        for (i, c) in configs.iter().enumerate() {
            eprint!(
                "\rround {}/{rounds}, run {}/{}   ",
                round + 1,
                i + 1,
                configs.len()
            );
            runs[i].extend(run(&bin, c));
        }
    }
    eprintln!();
    println!(
        "2 ranks on 2 cores; DC: cpu_power 1.0, 0.5 (extra work; no quota needed at 2 ranks); IO: io_factor 1, 4 (paced disk 100 MB/s / io_factor, O_DIRECT)"
    );
    println!(
        "comp = stage - reads - writes per iteration (median over iterations); medians over {rounds} interleaved runs; ratios are medians of per-run ratios"
    );
    println!(
        "{:<10} {:<12} {:<11} {:<4} {:>5} {:>5} {:>9} {:>9} {:>9} {:>6} {:>9} {:>9} {:>6} {:>7}",
        "app",
        "storage",
        "dist",
        "clu",
        "iters",
        "runs",
        "iter ms",
        "comp0",
        "comp1",
        "c1/c0",
        "read0",
        "read1",
        "r1/r0",
        "passes"
    );
    for (c, r) in configs.iter().zip(&runs) {
        if r.is_empty() {
            println!(
                "{:<10} {:<12} {:<11} {:<4} no run succeeded",
                c.app, c.storage, c.dist, c.cluster
            );
            continue;
        }
        println!(
            "{:<10} {:<12} {:<11} {:<4} {:>5} {:>5} {:>9.2} {:>9.2} {:>9.2} {:>6} {:>9.2} {:>9.2} {:>6} {:>7}",
            c.app,
            c.storage,
            c.dist,
            c.cluster,
            c.iters,
            r.len(),
            med(r.iter().map(|f| f.iter)),
            med(r.iter().map(|f| f.comp[0])),
            med(r.iter().map(|f| f.comp[1])),
            ratio(r, |f| f.comp),
            med(r.iter().map(|f| f.read[0])),
            med(r.iter().map(|f| f.read[1])),
            ratio(r, |f| f.read),
            r[0].passes,
        );
    }
}
