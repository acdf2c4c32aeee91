//! What the interposer adds to each MPI call, against the same program
//! without it, measured in one run: `cargo bench -p mheta-interpose`.
//!
//! On the MPI scripts/setup.sh chose (`MHETA_MPI=mpich`: the MPICH build
//! in target/mpich/, `mpicc.mpich`, Hydra's `mpiexec`; else Open MPI).
//! `interpose/bench/overhead.c` (compiled here with the MPI's `mpicc`) times an
//! 8-byte ping-pong between 2 ranks and `MPI_Iprobe` on nothing (medians of
//! 21 batches); `interpose/bench/overhead.F90` does the same from Fortran,
//! built for `use mpi` and for `use mpi_f08`. Each program runs under four
//! configurations, programs and configurations in rotating order, for
//! ROUNDS rounds; the tables give the median over rounds:
//! - none: no preload;
//! - idle: the interposer loaded, recorder waiting (outside the
//!   instrumented iteration);
//! - recording: inside an instrumented iteration;
//! - summary: the summary profiler counting every call.
//!
//! A ping-pong round trip has four MPI calls on its critical path, so the
//! added ns per call is the round-trip difference / 4. 2 ranks on 2 cores,
//! no oversubscription.

use std::path::{Path, PathBuf};
use std::process::Command;

const ROUNDS: usize = 9;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

/// The median of a non-empty sample ([`mheta_base::median`]).
fn median(mut v: Vec<f64>) -> f64 {
    mheta_base::median(&mut v).unwrap_or(f64::NAN)
}

fn main() {
    let root = root();
    // The MPI scripts/setup.sh chose: MHETA_MPI=mpich builds into
    // target/mpich/ and runs Hydra's mpiexec.
    let mpich = std::env::var("MHETA_MPI").is_ok_and(|v| v == "mpich");
    let (target, mpicc, launcher) = if mpich {
        ("target/mpich/release", "mpicc.mpich", "mpiexec.mpich")
    } else {
        ("target/release", "mpicc.openmpi", "mpirun")
    };
    let lib = root.join(target).join("libmheta_interpose.so");
    assert!(
        lib.is_file(),
        "{} missing: cargo build --release -p mheta-interpose",
        lib.display()
    );
    let out = root.join(target).join("../mheta-bench");
    std::fs::create_dir_all(&out).expect("target dir");
    let mpifort = if mpich {
        "mpif90.mpich"
    } else {
        "mpifort.openmpi"
    };
    let build = |compiler: &str, src: &str, exe: &str, flags: &[&str]| {
        let exe = out.join(exe);
        let st = Command::new(compiler)
            .arg("-O2")
            .args(flags)
            .arg("-I")
            .arg(root.join("interpose/include"))
            .arg("-I")
            .arg(root.join("tests/fortran"))
            .arg(root.join(src))
            .arg("-o")
            .arg(&exe)
            .status()
            .expect(compiler);
        assert!(st.success(), "{compiler} {src} failed");
        exe
    };
    let programs = [
        (
            "C",
            build(mpicc, "interpose/bench/overhead.c", "overhead", &[]),
        ),
        (
            "Fortran, use mpi",
            build(mpifort, "interpose/bench/overhead.F90", "overhead-f", &[]),
        ),
        (
            "Fortran, use mpi_f08",
            build(
                mpifort,
                "interpose/bench/overhead.F90",
                "overhead-f08",
                &["-DF08"],
            ),
        ),
    ];
    let trace = out.join("trace");
    let configs: [(&str, Vec<String>); 4] = [
        ("none", vec![]),
        (
            "idle",
            vec![
                format!("LD_PRELOAD={}", lib.display()),
                format!("MHETA_TRACE_DIR={}", trace.display()),
            ],
        ),
        (
            "recording",
            vec![
                format!("LD_PRELOAD={}", lib.display()),
                format!("MHETA_TRACE_DIR={}", trace.display()),
                "MHETA_INSTRUMENT_ITER=0".into(),
                "MHETA_INSTRUMENT_COUNT=1".into(),
                "MARK=1".into(),
            ],
        ),
        (
            "summary",
            vec![
                format!("LD_PRELOAD={}", lib.display()),
                format!("MHETA_TRACE_DIR={}", trace.display()),
                "MHETA_TOOLS=summary".into(),
            ],
        ),
    ];
    let runs = programs.len() * configs.len();
    let mut rtt: Vec<Vec<f64>> = vec![Vec::new(); runs];
    let mut iprobe: Vec<Vec<f64>> = vec![Vec::new(); runs];
    for round in 0..ROUNDS {
        for k in 0..runs {
            let x = (round + k) % runs;
            let (exe, c) = (&programs[x / configs.len()].1, x % configs.len());
            let mut cmd = Command::new(launcher);
            cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
                .args(["-np", "2"]);
            for x in &configs[c].1 {
                if mpich {
                    let (k, v) = x.split_once('=').expect("NAME=VALUE");
                    cmd.arg("-genv").arg(k).arg(v);
                } else {
                    cmd.arg("-x").arg(x);
                }
            }
            let o = cmd.arg(exe).output().expect(launcher);
            assert!(
                o.status.success(),
                "{} {}: {}",
                exe.display(),
                configs[c].0,
                String::from_utf8_lossy(&o.stderr)
            );
            let text = String::from_utf8_lossy(&o.stdout);
            let v: Vec<f64> = text
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            assert_eq!(v.len(), 2, "unexpected output: {text}");
            rtt[x].push(v[0]);
            iprobe[x].push(v[1]);
        }
    }
    let rtt: Vec<f64> = rtt.into_iter().map(median).collect();
    let ip: Vec<f64> = iprobe.into_iter().map(median).collect();
    println!(
        "interposer overhead, {}, 2 ranks on 2 cores, medians of {ROUNDS} interleaved rounds",
        if mpich {
            "MPICH (mpiexec.mpich)"
        } else {
            "Open MPI (mpirun)"
        }
    );
    for (p, (program, _)) in programs.iter().enumerate() {
        println!("\n{program}");
        println!(
            "{:<11} {:>14} {:>16} {:>10} {:>13} {:>16}",
            "config",
            "8B lat (ns)",
            "added/call (ns)",
            "lat ratio",
            "Iprobe (ns)",
            "added/call (ns)"
        );
        let base = p * configs.len();
        for (k, (name, _)) in configs.iter().enumerate() {
            let x = base + k;
            println!(
                "{:<11} {:>14.1} {:>16.1} {:>10.3} {:>13.1} {:>16.1}",
                name,
                rtt[x] / 2.0,
                (rtt[x] - rtt[base]) / 4.0,
                rtt[x] / rtt[base],
                ip[x],
                ip[x] - ip[base]
            );
        }
    }
}
