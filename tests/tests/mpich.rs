//! The MPICH build (`target/mpich/`, made by `scripts/test.sh` with
//! `MHETA_MPI=both`, the default there) beside the Open MPI one: its
//! interposer records under Hydra's `mpiexec`, its rows move and the
//! answer verifies, its microbenchmark measures, and an interposer of one
//! MPI is refused, by name, in a program of the other.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use mheta_tests::{bin, fails, fortran_ring_ops, last_json, ok, root, scratch};
use std::path::PathBuf;
use std::process::Command;

/// A binary of the MPICH build; None only when the suite was told to run
/// on Open MPI alone (`MHETA_MPI=openmpi`).
fn mpich_bin(name: &str) -> Option<PathBuf> {
    if std::env::var("MHETA_MPI").is_ok_and(|v| v == "openmpi") {
        eprintln!("mpich: skipped (MHETA_MPI=openmpi)");
        return None;
    }
    let p = root().join("target/mpich/release").join(name);
    assert!(
        p.exists(),
        "{} is missing: build the MPICH side with `MHETA_MPI=both scripts/test.sh` (or MHETA_MPI=openmpi to leave it out)",
        p.display()
    );
    Some(p)
}

fn mheta_mpich() -> Option<Command> {
    let mut c = Command::new(mpich_bin("mheta")?);
    c.env("MHETA_MPIRUN", "mpiexec.mpich");
    Some(c)
}

#[test]
fn mpich_records_moves_rows_and_verifies() {
    let (Some(mut run), Some(jacobi)) = (mheta_mpich(), mpich_bin("jacobi")) else {
        return;
    };
    let dir = scratch("mpich-run");
    let trace = dir.join("trace");
    // A move of a third of the rows of a 3072 x 3072 grid: 8 MB pieces,
    // which UCX (MPICH's ch4:ucx) once sent from stale pages after the
    // row buffer grew.
    let out = ok(run
        .args(["run", "--tools", "recorder,summary", "--trace-dir"])
        .arg(&trace)
        .args(["--", "mpiexec.mpich", "-n", "2"])
        .arg(&jacobi)
        .args([
            "--n",
            "3072",
            "--iters",
            "30",
            "--move-to",
            "2048,1024",
            "--move-at",
            "10",
        ]));
    let r = last_json(&out);
    assert_eq!(r["verified"], true, "{r}");
    assert_eq!(r["dist"], serde_json::json!([2048, 1024]), "{r}");
    for rank in 0..2 {
        let t = mheta_trace::read_rank(&mheta_trace::rank_file(&trace, rank)).unwrap();
        let idx: Vec<u64> = t.iterations.iter().map(|i| i.index).collect();
        assert_eq!(idx, vec![3, 4, 5], "rank {rank}");
        // Halo exchanges and the residual's reduction, recorded.
        assert!(
            t.iterations[0].events.len() >= 3,
            "rank {rank}: {:?}",
            t.iterations[0].events
        );
    }
    assert!(trace.join("mheta-summary.txt").is_file());
}

#[test]
fn mpich_microbench_measures_a_profile() {
    let Some(mut bench) = mheta_mpich() else {
        return;
    };
    let dir = scratch("mpich-bench");
    let out = dir.join("p.json");
    ok(bench
        .args(["bench", "--np", "2", "--quick", "--no-disk", "-o"])
        .arg(&out));
    let p = mheta_profile::ClusterProfile::load(&out).unwrap();
    assert_eq!(p.pairs.len(), 2);
    for c in &p.pairs {
        assert!(c.bandwidth_bps > 0.0 && c.rtt_small_s > 0.0, "{c:?}");
    }
}

#[test]
fn an_interposer_of_the_other_mpi_is_refused_by_name() {
    let (Some(mut run), Some(jacobi)) = (mheta_mpich(), mpich_bin("jacobi")) else {
        return;
    };
    let dir = scratch("mpich-abi");
    // Open MPI's interposer in an MPICH program.
    let out = fails(
        run.env("MHETA_INTERPOSE_LIB", bin("libmheta_interpose.so"))
            .args(["run", "--trace-dir"])
            .arg(dir.join("a"))
            .args(["--", "mpiexec.mpich", "-n", "2"])
            .arg(&jacobi)
            .args(["--n", "256", "--iters", "8"]),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("built for Open MPI") && err.contains("libmpich.so"),
        "{err}"
    );
    // MPICH's interposer in an Open MPI program (when the suite has the
    // Open MPI build too: not under MHETA_MPI=mpich alone).
    if !root().join("target/release/jacobi").exists() {
        eprintln!("mpich: the Open MPI half skipped (no Open MPI build)");
        return;
    }
    let out = fails(
        mheta_tests::mheta()
            .env(
                "MHETA_INTERPOSE_LIB",
                mpich_bin("libmheta_interpose.so").unwrap(),
            )
            .args(["run", "--trace-dir"])
            .arg(dir.join("b"))
            .args(["--", "mpirun", "--oversubscribe", "-np", "2"])
            .arg(bin("jacobi"))
            .args(["--n", "256", "--iters", "8"]),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("built for the MPICH family") && err.contains("libmpi.so.40"),
        "{err}"
    );
}

/// Ranks' output of `exe` plainly and under the MPICH `mheta run`; the
/// two must be the same. Returns the trace directory.
fn same_under_mpich(dir: &std::path::Path, exe: &std::path::Path, extra: &[&str]) -> PathBuf {
    same_under(dir, (exe, &[]), 2, "recorder,summary", extra)
}

/// [`same_under_mpich`] of `exe args` on `np` ranks with `tools`.
fn same_under(
    dir: &std::path::Path,
    (exe, args): (&std::path::Path, &[&str]),
    np: usize,
    tools: &str,
    extra: &[&str],
) -> PathBuf {
    let n = np.to_string();
    let plain = ok(Command::new("mpiexec.mpich")
        .args(["-n", &n])
        .arg(exe)
        .args(args));
    let trace = dir.join(format!("trace-{np}-{tools}"));
    let wrapped = ok(mheta_mpich()
        .unwrap()
        .args(["run", "--tools", tools, "--trace-dir"])
        .arg(&trace)
        .args(extra)
        .args(["--", "mpiexec.mpich", "-n", &n])
        .arg(exe)
        .args(args));
    let sorted = |s: &str| {
        let mut v: Vec<String> = s.lines().map(str::to_string).collect();
        v.sort();
        v
    };
    assert_eq!(sorted(&plain), sorted(&wrapped));
    trace
}

fn mpif90(dir: &std::path::Path, name: &str) -> PathBuf {
    let exe = dir.join(name);
    ok(Command::new("mpif90.mpich")
        .arg("-O1")
        .arg(root().join(format!("tests/fortran/{name}.f90")))
        .arg("-o")
        .arg(&exe));
    exe
}

#[test]
fn mpich_fortran_calls_are_recorded_once() {
    if mpich_bin("mheta").is_none() {
        return;
    }
    // MPICH's Fortran bindings call the C MPI_* functions: each call must
    // still appear once, as on Open MPI (tests/tests/interpose.rs).
    let dir = scratch("mpich-fortran");
    let trace = same_under_mpich(&dir, &mpif90(&dir, "ring"), &[]);
    for rank in 0..2u32 {
        let t = mheta_trace::read_rank(&mheta_trace::rank_file(&trace, rank)).unwrap();
        assert_eq!(t.iterations.len(), 3, "rank {rank}");
        let ops: Vec<mheta_trace::Op> =
            t.iterations[0].events.iter().filter_map(|e| e.op).collect();
        assert_eq!(ops, fortran_ring_ops(rank), "rank {rank}");
    }
    // Persistent requests, the whole run as one iteration.
    let dir = scratch("mpich-fortran-persist");
    let trace = same_under_mpich(&dir, &mpif90(&dir, "persist"), &["--whole-run"]);
    for rank in 0..2u32 {
        let t = mheta_trace::read_rank(&mheta_trace::rank_file(&trace, rank)).unwrap();
        let ops: Vec<mheta_trace::Op> =
            t.iterations[0].events.iter().filter_map(|e| e.op).collect();
        use mheta_trace::Op;
        // One receive and one send set up, three rounds of Startall and
        // Start, both requests freed.
        for (op, n) in [
            (Op::Recv_init, 1),
            (Op::Send_init, 1),
            (Op::Startall, 3),
            (Op::Start, 3),
            (Op::Request_free, 2),
        ] {
            let seen = ops.iter().filter(|&&o| o == op).count();
            assert_eq!(seen, n, "rank {rank}: {op:?} in {ops:?}");
        }
    }
}

fn mpicc(dir: &std::path::Path, name: &str) -> PathBuf {
    let exe = dir.join(name);
    ok(Command::new("mpicc.mpich")
        .args(["-O2", "-pthread", "-I"])
        .arg(root().join("interpose/include"))
        .arg(root().join(format!("tests/c/{name}.c")))
        .arg("-o")
        .arg(&exe));
    exe
}

#[test]
fn mpich_c_programs_run_the_same_under_every_tool() {
    if mpich_bin("mheta").is_none() {
        return;
    }
    // The interposer's edge cases (MPI_IN_PLACE, MPI_STATUS_IGNORE,
    // zero-size and persistent requests, ...), whose constants differ
    // between the two ABIs, on 1 to 4 ranks; collectives and threads on 2.
    let dir = scratch("mpich-c");
    let edge = mpicc(&dir, "edge");
    for np in 1..=4usize {
        for (tools, extra) in [
            ("recorder", &[][..]),
            ("summary", &[][..]),
            ("recorder,summary", &["--whole-run"][..]),
        ] {
            let trace = same_under(&dir, (&edge, &[]), np, tools, extra);
            if extra.is_empty() {
                continue;
            }
            for rank in 0..np as u32 {
                let t = mheta_trace::read_rank(&mheta_trace::rank_file(&trace, rank)).unwrap();
                let ops: Vec<mheta_trace::Op> =
                    t.iterations[0].events.iter().filter_map(|e| e.op).collect();
                use mheta_trace::Op;
                for op in [
                    Op::Allgather,
                    Op::Bcast,
                    Op::Alltoall,
                    Op::Waitall,
                    Op::Startall,
                ] {
                    assert!(
                        ops.contains(&op),
                        "np {np} rank {rank}: no {op:?} in {ops:?}"
                    );
                }
            }
        }
    }
    let collectives = mpicc(&dir, "collectives");
    same_under(
        &dir,
        (&collectives, &[]),
        2,
        "recorder,summary",
        &["--whole-run"],
    );
    // 8 threads a rank sending 400 messages each (MPI_THREAD_MULTIPLE).
    let threads = mpicc(&dir, "threads");
    same_under(
        &dir,
        (&threads, &["8", "400"]),
        2,
        "recorder,summary",
        &["--whole-run"],
    );
}

/// mpi4py's own tests (intercommunicators, collectives, point-to-point,
/// requests), with mpi4py built against MPICH, at 2 ranks without mheta
/// and under every tool: the same results (`MHETA_MPI=mpich
/// scripts/mpi4py-suite.sh --quick`).
#[test]
fn mpich_mpi4py_suite_same_under_every_tool() {
    if mpich_bin("mheta").is_none() {
        return;
    }
    mheta_tests::mpi4py_quick_same("mpich", 2);
}

/// The C API (`libmheta.so`, `mheta.h`) and its Fortran module
/// (`capi/fortran/mheta.f90`) built against MPICH: the examples
/// `apps/c/jacobi.c` and `apps/c/jacobi.f90` on het2 under `mheta run`
/// with `--auto` move rows toward the faster rank 0 and end with the
/// answer of a run that never moved. The host changes its own speed
/// (tests/tests/capi.rs), so a recording that saw no difference is
/// retried, three runs at most.
#[test]
fn mpich_c_and_fortran_api_move_toward_the_faster_rank_and_verify() {
    let (Some(lib), Some(mut bench)) = (mpich_bin("libmheta.so"), mheta_mpich()) else {
        return;
    };
    let dir = scratch("mpich-capi");
    let libdir = lib.parent().unwrap();
    let link = [
        "-L".to_string(),
        libdir.display().to_string(),
        "-lmheta".to_string(),
        format!("-Wl,-rpath,{}", libdir.display()),
    ];
    let c = dir.join("jacobi-c");
    ok(Command::new("mpicc.mpich")
        .args(["-O2", "-I"])
        .arg(root().join("capi/include"))
        .arg(root().join("apps/c/jacobi.c"))
        .args(&link)
        .args(["-lm", "-o"])
        .arg(&c));
    let f = dir.join("jacobi-f");
    ok(Command::new("mpif90.mpich")
        .args(["-O2", "-J"])
        .arg(&dir)
        .arg(root().join("capi/fortran/mheta.f90"))
        .arg(root().join("apps/c/jacobi.f90"))
        .args(&link)
        .arg("-o")
        .arg(&f));
    let profile = dir.join("p.json");
    ok(bench
        .args(["bench", "--np", "2", "--quick", "--no-disk", "-o"])
        .arg(&profile));
    // Open MPI's libmheta.so found first (as LD_LIBRARY_PATH makes it) is
    // refused at load, by name (when the suite has the Open MPI build).
    if root().join("target/release/libmheta.so").exists() {
        let out = fails(
            Command::new("mpiexec.mpich")
                .env("LD_LIBRARY_PATH", root().join("target/release"))
                .args(["-n", "1"])
                .arg(&c)
                .args(["--n", "64", "--iters", "2"]),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("libmheta.so was built for Open MPI") && err.contains("libmpich.so"),
            "{err}"
        );
    }
    for (name, exe, args, auto) in [
        ("C", &c, vec!["--n", "1536", "--iters", "60"], "--auto"),
        ("Fortran", &f, vec!["1536", "60"], "auto"),
    ] {
        // cargo test puts target/release (Open MPI's libmheta.so) on
        // LD_LIBRARY_PATH, which outranks the example's runpath.
        let plain = last_json(&ok(Command::new("mpiexec.mpich")
            .env_remove("LD_LIBRARY_PATH")
            .env("MHETA_CLUSTER", "het2")
            .args(["-n", "2"])
            .arg(exe)
            .args(&args)));
        assert_eq!(plain["verified"], true, "{name}: {plain}");
        let moved = (1..=3).find_map(|attempt| {
            let r = last_json(&ok(mheta_mpich()
                .unwrap()
                .env_remove("LD_LIBRARY_PATH")
                .env("MHETA_CLUSTER", "het2")
                .env("MHETA_PROFILE", &profile)
                .args(["run", "--trace-dir"])
                .arg(dir.join(format!("trace-{name}-{attempt}")))
                .args(["--", "mpiexec.mpich", "-n", "2"])
                .arg(exe)
                .args(&args)
                .arg(auto)));
            assert_eq!(r["verified"], true, "{name}: {r}");
            let (a, b) = (
                r["checksum"].as_f64().unwrap(),
                plain["checksum"].as_f64().unwrap(),
            );
            assert!(
                (a - b).abs() <= 1e-12 * b.abs(),
                "{name}: checksum {a} after moving, {b} without"
            );
            let to_rank0 =
                r["auto"]["moved"] == true && r["dist"][0].as_u64().unwrap() > 768 + 768 / 10;
            if !to_rank0 {
                eprintln!("mpich {name} API: attempt {attempt}: {}", r["dist"]);
            }
            to_rank0.then_some(r)
        });
        assert!(
            moved.is_some(),
            "{name}: rank 0 (the faster) never got more rows in 3 runs"
        );
    }
}

/// A checkpoint holds raw rows and a JSON manifest, written with MPI-IO
/// at explicit offsets (apps/src/checkpoint.rs): one written under one
/// MPI resumes under the other, on another rank count, to the answer of
/// a run never stopped. Each direction kills a rank in iteration 6 of 12
/// after the checkpoint of iteration 4.
#[test]
fn a_checkpoint_of_one_mpi_resumes_under_the_other() {
    let Some(mpich_jacobi) = mpich_bin("jacobi") else {
        return;
    };
    let openmpi_jacobi = root().join("target/release/jacobi");
    if !openmpi_jacobi.exists() {
        eprintln!("cross-MPI resume: skipped (no Open MPI build)");
        return;
    }
    let dir = scratch("mpich-cross-resume");
    let args = ["--n", "300", "--iters", "12"];
    let mpich = |np: usize| {
        let mut c = Command::new("mpiexec.mpich");
        c.env_remove("LD_LIBRARY_PATH")
            .args(["-n", &np.to_string()])
            .arg(&mpich_jacobi);
        c
    };
    let openmpi = |np: usize| {
        let mut c = mheta_tests::mpirun(np);
        c.arg(&openmpi_jacobi);
        c
    };
    let reference = last_json(&ok(openmpi(2).args(args)));
    assert_eq!(reference["verified"], true, "{reference}");
    let mpich_ref = last_json(&ok(mpich(2).args(args)));
    let sums = |r: &serde_json::Value| r["checksum"].as_f64().unwrap();
    assert!((sums(&reference) - sums(&mpich_ref)).abs() <= 1e-12 * sums(&reference).abs());
    type Launch<'a> = &'a dyn Fn(usize) -> Command;
    let ways: [(&str, Launch, Launch); 2] = [
        ("Open MPI -> MPICH", &openmpi, &mpich),
        ("MPICH -> Open MPI", &mpich, &openmpi),
    ];
    for (way, write, read) in ways {
        let ck = dir.join(way.replace(' ', "").replace("->", "-to-"));
        let ck_s = ck.to_str().unwrap();
        let out = write(2)
            .env("MHETA_KILL", "iteration:1:6")
            .args(args)
            .args(["--checkpoint-every", "4", "--checkpoint-dir", ck_s])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains("MHETA_KILL"),
            "{way}: the writer was not killed ({}): {err}",
            out.status
        );
        let r = last_json(&ok(read(3).args(args).args(["--resume", ck_s])));
        assert_eq!(r["resumed_from"]["iteration"], 4, "{way}: {r}");
        assert_eq!(r["verified"], true, "{way}: {r}");
        let (a, b) = (sums(&r), sums(&reference));
        assert!(
            (a - b).abs() <= 1e-12 * b.abs(),
            "{way}: checksum {a} resumed on 3 ranks, {b} never stopped"
        );
    }
}

/// MPICH across emulated hosts: `mheta hosts mpirun` with Hydra
/// (`MHETA_MPIRUN=mpiexec.mpich`: its rsh launcher through the lab's
/// agent, the proxies reaching it on the bridge, UCX held to TCP on each
/// host's interface) runs jacobi to the same answer as on one node, and
/// the MPICH microbench across net2slow's 200 Mbit/s link measures that
/// link, not shared memory. Root only (namespaces, tc).
#[test]
fn mpich_runs_across_emulated_hosts_over_their_links() {
    let Some(mheta) = mpich_bin("mheta") else {
        return;
    };
    if !mheta_tests::is_root() {
        eprintln!("mpich hosts: skipped (needs root)");
        return;
    }
    let dir = scratch("mpich-hosts");
    let jacobi = mpich_bin("jacobi").unwrap();
    let args = ["--n", "512", "--iters", "20"];
    let one_node = last_json(&ok(Command::new("mpiexec.mpich")
        .env_remove("LD_LIBRARY_PATH")
        .args(["-n", "2"])
        .arg(&jacobi)
        .args(args)));
    let spec = root().join("clusters/net2slow.toml");
    let across = last_json(&ok(Command::new(&mheta)
        .env("MHETA_MPIRUN", "mpiexec.mpich")
        .env_remove("LD_LIBRARY_PATH")
        .args(["hosts", "mpirun"])
        .arg(&spec)
        .arg("--")
        .arg(&jacobi)
        .args(args)));
    assert_eq!(across["verified"], true, "{across}");
    assert_eq!(across["checksum"], one_node["checksum"], "{across}");
    let profile = dir.join("p.json");
    ok(Command::new(&mheta)
        .env("MHETA_MPIRUN", "mpiexec.mpich")
        .env_remove("LD_LIBRARY_PATH")
        .args(["bench", "--quick", "--no-disk", "--cluster"])
        .arg(&spec)
        .arg("-o")
        .arg(&profile));
    let p: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&profile).unwrap()).unwrap();
    // 200 Mbit/s is 25 MB/s; shared memory would be hundreds of times
    // that.
    for c in p["pairs"].as_array().unwrap() {
        let mbs = c["bandwidth_bps"].as_f64().unwrap() / 1e6;
        assert!(
            (18.0..=26.0).contains(&mbs),
            "{} -> {}: {mbs:.1} MB/s",
            c["src"],
            c["dst"]
        );
    }
}
