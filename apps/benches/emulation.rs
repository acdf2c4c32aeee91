//! The emulated clusters at work: `cargo bench -p mheta-apps --bench
//! emulation` runs every kernel at 2 ranks, in core and out of core, on
//! Block and on a skewed distribution, under the built-in `DC` (CPU power
//! 1.0 and 0.5) and `IO` (rank 1's disk 4× slower) clusters, and prints per
//! iteration the job's time and each rank's computation (stage time minus
//! its reads and writes) and read times (medians), with the rank 1 / rank
//! 0 ratios: on Block under DC the computation ratio shows the CPU
//! emulation (≈ 2), under IO out of core the read ratio shows the disk
//! emulation (≈ 4). Out of core, `--mem-limit` applies to both ranks; in
//! core under IO, rank 1 still has the spec's 8 MB and may go out of core.
//! Our binaries must be built (`cargo build --release`). `EMU_APPS` picks
//! kernels (comma-separated).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release");
    // (app, args, out-of-core memory limit in MB)
    let cases: &[(&str, &[&str], &str)] = &[
        ("jacobi", &["--n", "1536", "--iters", "8"], "6"),
        ("sor", &["--n", "1024", "--iters", "8"], "3"),
        ("cg", &["--class", "W", "--iters", "6"], "1.5"),
        ("lanczos", &["--n", "3072", "--iters", "6"], "16"),
        (
            "wavefront",
            &["--n", "1024", "--tiles", "8", "--iters", "6"],
            "3",
        ),
        ("mg", &["--n", "511", "--iters", "6"], "2"),
    ];
    let only = std::env::var("EMU_APPS").ok();
    println!(
        "2 ranks on 2 cores; DC: cpu_power 1.0, 0.5 (extra work; no quota needed at 2 ranks); IO: io_factor 1, 4 (paced disk 100 MB/s / io_factor, O_DIRECT); comp = stage - reads - writes"
    );
    println!(
        "{:<10} {:<12} {:<11} {:<4} {:>9} {:>9} {:>9} {:>6} {:>9} {:>9} {:>6} {:>7}",
        "app",
        "storage",
        "dist",
        "clu",
        "iter ms",
        "comp0",
        "comp1",
        "c1/c0",
        "read0",
        "read1",
        "r1/r0",
        "passes"
    );
    for &(app, args, mb) in cases {
        if only
            .as_ref()
            .is_some_and(|o| !o.split(',').any(|a| a == app))
        {
            continue;
        }
        let rows: u64 = match app {
            "cg" => 7000,
            _ => args[1].parse().unwrap_or(0),
        };
        let skew = format!("{},{}", rows * 2 / 3, rows - rows * 2 / 3);
        for storage in ["spec memory", "out of core"] {
            for dist in ["block", skew.as_str()] {
                for cluster in ["DC", "IO"] {
                    let mut c = Command::new("mpirun");
                    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
                        .args(["-np", "2"])
                        .arg(bin.join(app))
                        .args(args)
                        .args(["--cluster", cluster]);
                    if dist != "block" {
                        c.args(["--dist", dist]);
                    }
                    if storage == "out of core" {
                        c.args(["--mem-limit", mb]);
                    }
                    let out = match c.output() {
                        Ok(o) if o.status.success() => {
                            String::from_utf8_lossy(&o.stdout).into_owned()
                        }
                        Ok(o) => {
                            eprintln!("{c:?}: {}", String::from_utf8_lossy(&o.stderr));
                            continue;
                        }
                        Err(e) => {
                            eprintln!("{c:?}: {e}");
                            continue;
                        }
                    };
                    let Some(v) = out
                        .lines()
                        .rev()
                        .find(|l| l.starts_with('{'))
                        .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                    else {
                        continue;
                    };
                    let r = &v["ranks"];
                    let ms = |x: &serde_json::Value| x.as_f64().unwrap_or(f64::NAN) * 1e3;
                    let (r0, r1) = (ms(&r[0]["read_s"]), ms(&r[1]["read_s"]));
                    let comp = |i: usize| {
                        ms(&r[i]["stage_s"]) - ms(&r[i]["read_s"]) - ms(&r[i]["write_s"])
                    };
                    let (s0, s1) = (comp(0), comp(1));
                    let ratio = |a: f64, b: f64| {
                        if a > 0.0 {
                            format!("{:.2}", b / a)
                        } else {
                            "-".into()
                        }
                    };
                    println!(
                        "{:<10} {:<12} {:<11} {:<4} {:>9.2} {:>9.2} {:>9.2} {:>6} {:>9.2} {:>9.2} {:>6} {:>7}",
                        app,
                        storage,
                        dist,
                        cluster,
                        ms(&v["iter_median_s"]),
                        s0,
                        s1,
                        ratio(s0, s1),
                        r0,
                        r1,
                        ratio(r0, r1),
                        format!("{}/{}", r[0]["passes"], r[1]["passes"]),
                    );
                }
            }
        }
    }
}
