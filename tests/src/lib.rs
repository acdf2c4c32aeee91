//! Helpers for mheta's integration tests: they run the release binaries of
//! the workspace (built by `scripts/test.sh` before `cargo test`) under
//! real `mpirun` jobs and check what they print and write.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The launcher of the MPI this pass of the suite runs on: `MHETA_MPIRUN`
/// as `scripts/setup.sh` exports it (`mpirun` for Open MPI, the default;
/// `mpiexec.mpich` after `use_mpich`).
pub fn launcher() -> String {
    std::env::var("MHETA_MPIRUN")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "mpirun".into())
}

/// Does this pass run on MPICH (Hydra's `mpiexec`) rather than Open MPI?
pub fn on_mpich() -> bool {
    launcher().contains("mpiexec")
}

/// The cargo target directory of the build under test: `CARGO_TARGET_DIR`
/// (`target/mpich` after `use_mpich`), else `target`.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .filter(|v| !v.is_empty())
        .map_or_else(|| root().join("target"), PathBuf::from)
}

/// A release binary or library of the build under test.
pub fn bin(name: &str) -> PathBuf {
    let p = target_dir().join("release").join(name);
    assert!(
        p.exists(),
        "{} is missing: run `cargo build --release --workspace` first (scripts/test.sh does)",
        p.display()
    );
    p
}

/// The MPI compiler wrappers of the MPI under test: (C, Fortran).
pub fn compilers() -> (&'static str, &'static str) {
    if on_mpich() {
        ("mpicc.mpich", "mpif90.mpich")
    } else {
        ("mpicc", "mpifort")
    }
}

/// Cores of this machine: timing bounds hold only where every rank has one.
pub fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// A fresh scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let d = root().join("target/mheta-tests").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The launcher's words for `np` ranks, ready for root and for more ranks
/// than cores: `mpirun --oversubscribe -np N` (Open MPI) or
/// `mpiexec.mpich -n N` (Hydra), for `mheta run -- ...` lines.
pub fn launch(np: usize) -> Vec<String> {
    let n = np.to_string();
    if on_mpich() {
        vec![launcher(), "-n".into(), n]
    } else {
        vec![launcher(), "--oversubscribe".into(), "-np".into(), n]
    }
}

/// [`launch`] with its ranks bound one to a core (`--bind-to core`,
/// Hydra's `-bind-to core`).
pub fn launch_bound(np: usize) -> Vec<String> {
    let mut v = launch(np);
    v.extend(
        if on_mpich() {
            ["-bind-to", "core"]
        } else {
            ["--bind-to", "core"]
        }
        .map(String::from),
    );
    v
}

/// The launcher on `np` ranks ([`launch`]) as a command.
pub fn mpirun(np: usize) -> Command {
    launcher_command(&launch(np))
}

/// A launcher's command line (`argv[0]` and its options) as a Command,
/// with the environment Open MPI's `mpirun` needs as root.
pub fn launcher_command(argv: &[String]) -> Command {
    let mut c = Command::new(&argv[0]);
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .args(&argv[1..]);
    c
}

/// Give every rank of `c` (a [`mpirun`]) `var=value`: Open MPI's `-x`,
/// Hydra's `-genv`.
pub fn export<'c>(c: &'c mut Command, var: &str, value: &str) -> &'c mut Command {
    if on_mpich() {
        c.args(["-genv", var, value])
    } else {
        c.arg("-x").arg(format!("{var}={value}"))
    }
}

/// The `mheta` CLI, with the environment mpirun needs as root.
pub fn mheta() -> Command {
    let mut c = Command::new(bin("mheta"));
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    c
}

/// Run, require success, and return stdout.
pub fn ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{:?} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        cmd,
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Run, require failure, and return the whole output.
pub fn fails(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap();
    assert!(
        !out.status.success(),
        "{:?} should have failed:\nstdout:\n{}\nstderr:\n{}",
        cmd,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The last line of `stdout` as JSON (apps print one JSON line at exit).
pub fn last_json(stdout: &str) -> serde_json::Value {
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON line in:\n{stdout}"));
    serde_json::from_str(line).unwrap()
}

/// Run app `name` on `np` ranks with `args`; returns its report.
pub fn app(name: &str, np: usize, args: &[&str]) -> serde_json::Value {
    last_json(&ok(mpirun(np).arg(bin(name)).args(args)))
}

/// Run jacobi on `np` ranks with extra arguments; returns its report.
pub fn jacobi(np: usize, args: &[&str]) -> serde_json::Value {
    last_json(&ok(mpirun(np).arg(bin("jacobi")).args(args)))
}

/// A cluster spec of two ranks at CPU powers 1 and 0.25, written into
/// `dir`, for the tests that check that `--auto` moves rows toward the
/// faster rank. A vCPU of this shared host can step about 1.6x in speed
/// and stay there for seconds, on either core (docs/design/fidelity.md,
/// the host's own speed), so at het2's half power a run can see its
/// ranks only 1.2-1.35x apart from start to end, and a plan rightly
/// "already balanced"; a 4x difference stays 2.5x at the worst step.
pub fn two_speeds(dir: &Path) -> PathBuf {
    let spec = dir.join("two-speeds.toml");
    std::fs::write(
        &spec,
        "[[rank]]\ncpu_power = 1.0\n\n[[rank]]\ncpu_power = 0.25\n",
    )
    .expect("write the two-speeds spec");
    spec
}

/// A quick cluster profile of `np` local ranks in `dir`: measured by
/// `mheta bench --np NP --quick` once per build under test and rank
/// count, and copied for each later caller. The tests that take one
/// check what is done with a profile (predictions, plans, errors), and
/// each copy is a real session's; tests/microbench.rs measures its own
/// sessions to check the measurement itself.
pub fn quick_profile(dir: &Path, np: usize) -> PathBuf {
    let p = dir.join(format!("profile{np}.json"));
    // A build's binaries are known by their modification times: a new
    // build measures afresh.
    let stamp: u128 = ["mheta", "mheta-microbench"]
        .iter()
        .map(|b| {
            let m = std::fs::metadata(bin(b))
                .and_then(|m| m.modified())
                .unwrap();
            m.duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
        })
        .sum();
    let cache = target_dir().join("mheta-tests-profiles");
    let kept = cache.join(format!("quick-np{np}-{stamp}.json"));
    if !kept.exists() {
        std::fs::create_dir_all(&cache).unwrap();
        let fresh = cache.join(format!("measuring-np{np}.json"));
        ok(mheta()
            .args(["bench", "--np", &np.to_string(), "--quick", "-o"])
            .arg(&fresh));
        std::fs::rename(&fresh, &kept).unwrap();
    }
    std::fs::copy(&kept, &p).unwrap();
    p
}

/// Run with a time limit: on expiry the whole process group (mpirun,
/// its daemons and ranks) is killed and the test fails, instead of
/// hanging the suite. Requires success; returns stdout.
pub fn ok_within(cmd: &mut Command, limit: std::time::Duration) -> String {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    let mut child = cmd
        .process_group(0)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = so.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = se.read_to_string(&mut s);
        s
    });
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if start.elapsed() > limit {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let (out, err) = (t_out.join().unwrap(), t_err.join().unwrap());
    match status {
        Some(st) if st.success() => out,
        Some(st) => panic!("{cmd:?} failed ({st}):\nstdout:\n{out}\nstderr:\n{err}"),
        None => panic!(
            "{cmd:?} did not finish within {limit:?}; killed:\nstdout:\n{out}\nstderr:\n{err}"
        ),
    }
}

/// True when this process runs as root (network namespaces, tc, cgroups).
pub use mheta_hosts::lab::is_root;

/// `scripts/mpi4py-suite.sh --quick` on the MPI `mpi` (`MHETA_MPI`:
/// openmpi or mpich), whose quick runs have `np` ranks: every tool's
/// results the same as without mheta, and every rank ran the selected
/// tests (not an empty selection).
pub fn mpi4py_quick_same(mpi: &str, np: usize) {
    let out = Command::new(root().join("scripts/mpi4py-suite.sh"))
        .arg("--quick")
        .env("MHETA_MPI", mpi)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text.matches(" same").count(), 5, "{text}");
    assert!(text.contains("without mheta              rc=0"), "{text}");
    let ran_by = format!(" {np} Ran ");
    let ran: Vec<u32> = text
        .lines()
        .filter_map(|l| l.split(&ran_by).nth(1)?.split(' ').next()?.parse().ok())
        .collect();
    assert_eq!(ran.len(), 6, "{text}");
    assert!(ran.iter().all(|&n| n >= 100), "{text}");
}

/// The MPI calls one iteration of `tests/fortran/ring.F90` makes on
/// `rank`, in order: the ring's non-blocking exchange and sendrecv, the
/// even ranks' send before receive (the odd ones' receive first), then
/// the collectives.
pub fn fortran_ring_ops(rank: u32) -> Vec<mheta_trace::Op> {
    use mheta_trace::Op;
    let send_recv = if rank.is_multiple_of(2) {
        [Op::Send, Op::Recv]
    } else {
        [Op::Recv, Op::Send]
    };
    [
        vec![Op::Irecv, Op::Isend, Op::Waitall, Op::Sendrecv],
        send_recv.to_vec(),
        vec![Op::Bcast, Op::Reduce, Op::Allreduce],
    ]
    .concat()
}

/// A trace directory's recorded window, computed here apart from mheta's
/// own code: per iteration every rank recorded, the slowest rank's
/// duration (s); the median of those.
pub fn recorded_window_s(trace: &Path) -> f64 {
    let traces = mheta_trace::read_dir(trace).expect("the trace");
    let mut w: Vec<f64> = traces[0]
        .iterations
        .iter()
        .filter_map(|it| {
            traces.iter().try_fold(0.0f64, |m, t| {
                let o = t.iterations.iter().find(|o| o.index == it.index)?;
                Some(m.max(o.duration_ns as f64 * 1e-9))
            })
        })
        .collect();
    assert!(!w.is_empty(), "no iteration every rank recorded");
    w.sort_by(f64::total_cmp);
    let k = w.len();
    if k % 2 == 1 {
        w[k / 2]
    } else {
        0.5 * (w[k / 2 - 1] + w[k / 2])
    }
}
