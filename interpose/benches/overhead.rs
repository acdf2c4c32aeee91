//! What the interposer adds to each MPI call, against the same program
//! without it, measured in one run: `cargo bench -p mheta-interpose`.
//!
//! On the MPI scripts/setup.sh chose (`MHETA_MPI=mpich`: the MPICH build
//! in target/mpich/, `mpicc.mpich`, Hydra's `mpiexec`; else Open MPI).
//! `interpose/bench/overhead.c` (compiled here with the MPI's `mpicc`) times an
//! 8-byte ping-pong between 2 ranks and `MPI_Iprobe` on nothing (medians of
//! 21 batches). It runs under four configurations, in rotating order, for
//! ROUNDS rounds; the table gives the median over rounds:
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
    let exe = out.join("overhead");
    let st = Command::new(mpicc)
        .args(["-O2", "-I"])
        .arg(root.join("interpose/include"))
        .arg(root.join("interpose/bench/overhead.c"))
        .arg("-o")
        .arg(&exe)
        .status()
        .expect(mpicc);
    assert!(st.success(), "mpicc failed");
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
    let mut rtt: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    let mut iprobe: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    for round in 0..ROUNDS {
        for k in 0..configs.len() {
            let c = (round + k) % configs.len();
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
            let o = cmd.arg(&exe).output().expect(launcher);
            assert!(
                o.status.success(),
                "{}: {}",
                configs[c].0,
                String::from_utf8_lossy(&o.stderr)
            );
            let text = String::from_utf8_lossy(&o.stdout);
            let v: Vec<f64> = text
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            assert_eq!(v.len(), 2, "unexpected output: {text}");
            rtt[c].push(v[0]);
            iprobe[c].push(v[1]);
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
    println!(
        "{:<11} {:>14} {:>16} {:>10} {:>13} {:>16}",
        "config", "8B lat (ns)", "added/call (ns)", "lat ratio", "Iprobe (ns)", "added/call (ns)"
    );
    for (k, (name, _)) in configs.iter().enumerate() {
        println!(
            "{:<11} {:>14.1} {:>16.1} {:>10.3} {:>13.1} {:>16.1}",
            name,
            rtt[k] / 2.0,
            (rtt[k] - rtt[0]) / 4.0,
            rtt[k] / rtt[0],
            ip[k],
            ip[k] - ip[0]
        );
    }
}
