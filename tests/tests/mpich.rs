//! The MPICH build (`target/mpich/`, made by `scripts/test.sh` with
//! `MHETA_MPI=both`, the default there) beside the Open MPI one, where a
//! check needs both builds or MPICH's own tools: an interposer of one MPI
//! refused, by name, in a program of the other; a checkpoint of one MPI
//! resumed under the other; an 8 MB move under UCX; mpi4py built against
//! MPICH under the preload; the C API and its Fortran module with
//! `mpif90.mpich`; Hydra across emulated hosts.
//!
//! These checks name both builds by their paths (`target/release`,
//! `target/mpich/release`). The rest of the suite runs whole on whichever
//! MPI its pass is on (`mheta_tests::launcher`); under `MHETA_MPI=both`
//! the MPICH pass leaves this file out, which the Open MPI pass ran.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use mheta_tests::{fails, last_json, launcher_command, ok, on_mpich, root, scratch, two_speeds};
use std::path::PathBuf;
use std::process::Command;

/// A binary of the MPICH build; None when the suite was told to run on
/// Open MPI alone (`MHETA_MPI=openmpi`), or in the MPICH pass of
/// `MHETA_MPI=both`, whose Open MPI pass ran this file.
fn mpich_bin(name: &str) -> Option<PathBuf> {
    let mpi = std::env::var("MHETA_MPI").unwrap_or_default();
    if mpi == "openmpi" {
        eprintln!("mpich: skipped (MHETA_MPI=openmpi)");
        return None;
    }
    if mpi == "both" && on_mpich() {
        eprintln!("mpich: skipped in the MPICH pass (the Open MPI pass ran it)");
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

/// A binary of the Open MPI build; None when there is none
/// (`MHETA_MPI=mpich` alone).
fn openmpi_bin(name: &str) -> Option<PathBuf> {
    let p = root().join("target/release").join(name);
    let there = p.exists() && std::env::var("MHETA_MPI").as_deref() != Ok("mpich");
    if !there {
        eprintln!("mpich: the Open MPI half skipped (no Open MPI build)");
    }
    there.then_some(p)
}

/// Open MPI's `mpirun` on `np` ranks, whatever MPI this pass is on.
fn openmpi_run(np: usize) -> Command {
    launcher_command(&["mpirun", "--oversubscribe", "-np", &np.to_string()].map(String::from))
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
fn an_interposer_of_the_other_mpi_is_refused_by_name() {
    let (Some(mut run), Some(jacobi)) = (mheta_mpich(), mpich_bin("jacobi")) else {
        return;
    };
    let (Some(ompi_lib), Some(ompi_jacobi), Some(ompi_mheta)) = (
        openmpi_bin("libmheta_interpose.so"),
        openmpi_bin("jacobi"),
        openmpi_bin("mheta"),
    ) else {
        return;
    };
    let dir = scratch("mpich-abi");
    // Open MPI's interposer in an MPICH program.
    let out = fails(
        run.env("MHETA_INTERPOSE_LIB", &ompi_lib)
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
    // MPICH's interposer in an Open MPI program.
    let out = fails(
        Command::new(&ompi_mheta)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("MHETA_MPIRUN", "mpirun")
            .env(
                "MHETA_INTERPOSE_LIB",
                mpich_bin("libmheta_interpose.so").unwrap(),
            )
            .args(["run", "--trace-dir"])
            .arg(dir.join("b"))
            .args(["--", "mpirun", "--oversubscribe", "-np", "2"])
            .arg(&ompi_jacobi)
            .args(["--n", "256", "--iters", "8"]),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("built for the MPICH family") && err.contains("libmpi.so.40"),
        "{err}"
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
/// `apps/c/jacobi.c` and `apps/c/jacobi.f90` on two ranks at CPU powers
/// 1 and 0.25 ([`two_speeds`]: at het2's half power CI saw the Fortran
/// example's ranks too close to move far, three runs in a row) under
/// `mheta run` with `--auto` move rows toward the faster rank 0 and end
/// with the answer of a run that never moved. The host changes its own
/// speed (tests/tests/capi.rs), so a run that did not move is retried,
/// three runs at most.
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
    let spec = two_speeds(&dir);
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
            .env("MHETA_CLUSTER", &spec)
            .args(["-n", "2"])
            .arg(exe)
            .args(&args)));
        assert_eq!(plain["verified"], true, "{name}: {plain}");
        let moved = (1..=3).find_map(|attempt| {
            let r = last_json(&ok(mheta_mpich()
                .unwrap()
                .env_remove("LD_LIBRARY_PATH")
                .env("MHETA_CLUSTER", &spec)
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
    let Some(openmpi_jacobi) = openmpi_bin("jacobi") else {
        return;
    };
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
        let mut c = openmpi_run(np);
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
