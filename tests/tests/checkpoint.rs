//! Checkpoint/resume and crash safety (`apps/src/checkpoint.rs`): one rank
//! is killed with SIGKILL (the `MHETA_KILL` hook) during an iteration,
//! during a checkpoint write and during a move, in core and out of core;
//! `--resume` must then end with the answer of a run that was never
//! interrupted, to 1e-12 relative. Resuming on another rank count and
//! distribution, and bad input (empty, partial, foreign or damaged
//! directories, another app's or size's checkpoint, an unwritable
//! directory), are checked too; a refused run must leave the checkpoint
//! directory exactly as it was.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use mheta_tests::{bin, fails, last_json, mpirun, ok, scratch};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

fn run(np: usize, app: &str, args: &[&str]) -> Value {
    last_json(&ok(mpirun(np).arg(bin(app)).args(args)))
}

/// Run with `MHETA_KILL=kill`; the job must die of it.
fn killed(np: usize, app: &str, args: &[&str], kill: &str) {
    // A killed run cannot remove its scratch directory: keep it here, not
    // in /tmp.
    let scr = scratch(&format!("killed-{app}-{}", kill.replace(':', "-")));
    let mut c = mpirun(np);
    c.env("MHETA_KILL", kill).arg(bin(app)).args(args);
    if !args.contains(&"--scratch") {
        c.arg("--scratch").arg(&scr);
    }
    let out = c.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("MHETA_KILL"),
        "{app} with MHETA_KILL={kill} should have been killed ({}):\n{err}",
        out.status
    );
}

/// The fields that carry each app's answer (as in tests/tests/moves.rs:
/// errors and residuals near rounding level are left out, since their
/// relative value is rounding noise on another distribution).
fn keys(app: &str) -> &'static [&'static str] {
    match app {
        "lanczos" => &["ritz_max", "ritz_min"],
        "cg" => &["zeta"],
        _ => &["checksum"],
    }
}

fn same_answer(app: &str, a: &Value, b: &Value, tol: f64) {
    for k in keys(app) {
        let (x, y) = (a[k].as_f64().unwrap(), b[k].as_f64().unwrap());
        let rel = (x - y).abs() / x.abs().max(y.abs()).max(1e-300);
        assert!(
            rel <= tol || (x - y).abs() < 1e-300,
            "{app}: {k} {x} resumed against {y} uninterrupted (relative {rel:e} > {tol:e})"
        );
    }
}

/// Names and contents of every file under `dir`.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in walk(dir) {
        out.insert(
            e.strip_prefix(dir).unwrap().display().to_string(),
            std::fs::read(&e).unwrap(),
        );
    }
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            v.extend(walk(&p));
        } else {
            v.push(p);
        }
    }
    v
}

/// Checkpoint directories in `dir`: (name, complete).
fn checkpoints(dir: &Path) -> Vec<(String, bool)> {
    let mut v: Vec<(String, bool)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.path().join("manifest.json").is_file(),
            )
        })
        .collect();
    v.sort();
    v
}

const CASES: &[(&str, &[&str])] = &[
    ("jacobi", &["--n", "200", "--iters", "12"]),
    ("sor", &["--n", "200", "--iters", "12"]),
    ("cg", &["--class", "S", "--iters", "12"]),
    ("lanczos", &["--n", "200", "--iters", "12"]),
    ("wavefront", &["--n", "200", "--iters", "12"]),
    ("mg", &["--n", "127", "--iters", "6"]),
];

#[test]
fn every_kernel_killed_in_an_iteration_resumes_to_the_same_answer() {
    for &(app, args) in CASES {
        let dir = scratch(&format!("ckpt-iter-{app}"));
        let ck = dir.join("ck");
        let plain = run(2, app, args);
        let mut with: Vec<&str> = args.to_vec();
        let ck_s = ck.to_str().unwrap();
        with.extend(["--checkpoint-every", "2", "--checkpoint-dir", ck_s]);
        // Killed inside iteration 5: the checkpoint after 4 is the newest.
        killed(2, app, &with, "iteration:1:5");
        let cks = checkpoints(&ck);
        assert!(
            cks.iter()
                .any(|(n, c)| *c && n.starts_with("ckpt-00000004-")),
            "{app}: no complete checkpoint after 4 iterations: {cks:?}"
        );
        let mut again: Vec<&str> = args.to_vec();
        again.extend(["--resume", ck_s]);
        let r = run(2, app, &again);
        assert_eq!(r["resumed_from"]["iteration"], 4, "{app}: {r}");
        assert_eq!(r["verified"], plain["verified"], "{app}: {r}");
        same_answer(app, &r, &plain, 1e-12);
    }
}

#[test]
fn a_kill_during_a_checkpoint_write_leaves_the_previous_one_whole() {
    for (app, args) in [CASES[0], CASES[2]] {
        let dir = scratch(&format!("ckpt-write-{app}"));
        let ck = dir.join("ck");
        let ck_s = ck.to_str().unwrap();
        let plain = run(2, app, args);
        let mut with: Vec<&str> = args.to_vec();
        with.extend(["--checkpoint-every", "3", "--checkpoint-dir", ck_s]);
        // The second checkpoint (after 6 iterations) is cut short.
        killed(2, app, &with, "checkpoint:0:2");
        let cks = checkpoints(&ck);
        assert!(
            cks.iter()
                .any(|(n, c)| *c && n.starts_with("ckpt-00000003-")),
            "{app}: {cks:?}"
        );
        assert!(
            cks.iter()
                .any(|(n, c)| !*c && n.starts_with("ckpt-00000006-")),
            "{app}: the cut checkpoint should be there, incomplete: {cks:?}"
        );
        let mut again: Vec<&str> = args.to_vec();
        again.extend(["--resume", ck_s, "--checkpoint-every", "3"]);
        let r = run(2, app, &again);
        assert_eq!(r["resumed_from"]["iteration"], 3, "{app}: {r}");
        same_answer(app, &r, &plain, 1e-12);
        // The next commit cleared the incomplete one and the older one.
        let cks = checkpoints(&ck);
        assert_eq!(cks.len(), 1, "{app}: {cks:?}");
        assert!(
            cks[0].0.starts_with("ckpt-00000009-") && cks[0].1,
            "{cks:?}"
        );
    }
}

#[test]
fn a_kill_during_a_move_resumes_from_a_whole_state() {
    let dir = scratch("ckpt-move");
    let base = ["--n", "300", "--iters", "12"];
    // A move after 5 iterations, checkpoints every 4 (into the directory
    // pushed after these).
    const MOVE_AT_5: [&str; 7] = [
        "--move-to",
        "10,250,40",
        "--move-at",
        "5",
        "--checkpoint-every",
        "4",
        "--checkpoint-dir",
    ];
    let plain = run(3, "jacobi", &base);
    // In core: killed after u moved, before f; the checkpoint after 4
    // iterations is the newest whole state.
    let ck = dir.join("in-core");
    let ck_s = ck.to_str().unwrap();
    let mut with: Vec<&str> = base.to_vec();
    with.extend(MOVE_AT_5);
    with.push(ck_s);
    killed(3, "jacobi", &with, "redistribute:1:1");
    let r = run(3, "jacobi", &[&base[..], &["--resume", ck_s]].concat());
    assert_eq!(r["resumed_from"]["iteration"], 4, "{r}");
    same_answer("jacobi", &r, &plain, 1e-12);

    // Out of core: the move is a committed checkpoint after 5 iterations;
    // killed after the old files are gone, the run resumes from it, here
    // on 2 ranks, still out of core.
    let ck = dir.join("ooc");
    let ck_s = ck.to_str().unwrap();
    let scr = dir.join("scratch");
    std::fs::create_dir_all(&scr).unwrap();
    let scr_s = scr.to_str().unwrap();
    let ooc = [&base[..], &["--mem-limit", "0.3", "--scratch", scr_s]].concat();
    let plain_ooc = run(3, "jacobi", &ooc);
    assert!(plain_ooc["ranks"][0]["passes"].as_u64().unwrap() > 1);
    same_answer("jacobi", &plain_ooc, &plain, 1e-12);
    let mut with: Vec<&str> = ooc.clone();
    with.extend(MOVE_AT_5);
    with.push(ck_s);
    killed(3, "jacobi", &with, "redistribute:1:1");
    let cks = checkpoints(&ck);
    assert!(
        cks.len() == 1 && cks[0].0.starts_with("ckpt-00000005-") && cks[0].1,
        "{cks:?}"
    );
    let r = run(2, "jacobi", &[&ooc[..], &["--resume", ck_s]].concat());
    assert_eq!(r["resumed_from"]["iteration"], 5, "{r}");
    assert!(r["ranks"][0]["passes"].as_u64().unwrap() > 1, "{r}");
    same_answer("jacobi", &r, &plain, 1e-12);
}

#[test]
fn out_of_core_arrays_move_through_mpi_io() {
    let dir = scratch("ckpt-ooc-move");
    let scr = dir.join("scratch");
    std::fs::create_dir_all(&scr).unwrap();
    let scr_s = scr.to_str().unwrap();
    for (app, args) in [CASES[0], CASES[3], CASES[2]] {
        let ooc = [args, &["--mem-limit", "0.08", "--scratch", scr_s]].concat();
        let np = 3;
        let plain = run(np, app, &ooc);
        let rows = plain["rows"].as_u64().unwrap();
        let to = format!("{},{},{}", rows / 10, rows - rows / 10 - rows / 5, rows / 5);
        let moved = run(
            np,
            app,
            &[&ooc[..], &["--move-to", &to, "--move-at", "4"]].concat(),
        );
        let d: Vec<u64> = serde_json::from_value(moved["dist"].clone()).unwrap();
        assert_eq!(
            d.iter().map(u64::to_string).collect::<Vec<_>>().join(","),
            to
        );
        assert!(
            moved["ranks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| !r["out_of_core"].as_array().unwrap().is_empty()),
            "{app}: nothing was out of core: {moved}"
        );
        // lanczos's smallest Ritz value depends on the order of partial sums
        // (tests/tests/moves.rs); everything else to 1e-12.
        let tol = if app == "lanczos" { 1e-6 } else { 1e-12 };
        same_answer(app, &moved, &plain, tol);
        assert_eq!(
            std::fs::read_dir(&scr).unwrap().count(),
            0,
            "{app}: scratch left behind"
        );
    }
}

#[test]
fn a_checkpoint_resumes_on_another_rank_count_and_distribution() {
    for &(app, args) in CASES {
        let dir = scratch(&format!("ckpt-np-{app}"));
        let ck = dir.join("ck");
        let ck_s = ck.to_str().unwrap();
        let plain = run(2, app, args);
        let mut with: Vec<&str> = args.to_vec();
        with.extend(["--checkpoint-every", "4", "--checkpoint-dir", ck_s]);
        let full = run(2, app, &with);
        same_answer(app, &full, &plain, 1e-12);
        let rows = plain["rows"].as_u64().unwrap();
        let dist = format!("{},{},{}", rows / 2, rows / 8, rows - rows / 2 - rows / 8);
        let mut again: Vec<&str> = args.to_vec();
        again.extend(["--resume", ck_s, "--dist", &dist]);
        let r = run(3, app, &again);
        assert_eq!(r["resumed_from"]["np"], 2, "{app}: {r}");
        assert_eq!(r["np"], 3);
        let tol = if app == "lanczos" { 1e-6 } else { 1e-12 };
        same_answer(app, &r, &plain, tol);
    }
}

#[test]
fn bad_resumes_and_checkpoint_dirs_are_refused_without_touching_anything() {
    let dir = scratch("ckpt-bad");
    let ck = dir.join("ck");
    let ck_s = ck.to_str().unwrap();
    let args = ["--n", "200", "--iters", "8"];
    run(
        2,
        "jacobi",
        &[
            &args[..],
            &["--checkpoint-every", "4", "--checkpoint-dir", ck_s],
        ]
        .concat(),
    );
    let before = snapshot(&ck);
    assert!(!before.is_empty());
    let refuse = |app: &str, extra: &[&str], want: &str| {
        let out = fails(mpirun(2).arg(bin(app)).args(extra));
        let err = String::from_utf8_lossy(&out.stderr);
        let line = err
            .lines()
            .find(|l| l.contains("error:"))
            .unwrap_or_else(|| panic!("no error line for {extra:?}:\n{err}"));
        assert!(line.contains(want), "{extra:?}: {line}");
    };
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let foreign = dir.join("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "not a checkpoint").unwrap();
    let partial = dir.join("partial");
    std::fs::create_dir_all(partial.join("ckpt-00000004-1")).unwrap();
    std::fs::write(partial.join("ckpt-00000004-1/u.f64"), [0u8; 64]).unwrap();
    let file = dir.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let p = |d: &Path| d.to_str().unwrap().to_string();
    let cases: Vec<(&str, Vec<String>, &str)> = vec![
        ("jacobi", vec!["--resume".into(), p(&empty)], "empty"),
        (
            "jacobi",
            vec!["--resume".into(), p(&foreign)],
            "not a checkpoint directory",
        ),
        (
            "jacobi",
            vec!["--resume".into(), p(&partial)],
            "no complete checkpoint",
        ),
        (
            "jacobi",
            vec!["--resume".into(), p(&dir.join("nowhere"))],
            "no such directory",
        ),
        (
            "sor",
            vec!["--resume".into(), p(&ck)],
            "of app jacobi, not sor",
        ),
        (
            "jacobi",
            vec!["--n".into(), "300".into(), "--resume".into(), p(&ck)],
            "different problem",
        ),
        (
            "jacobi",
            vec!["--iters".into(), "4".into(), "--resume".into(), p(&ck)],
            "leaves none to run",
        ),
        (
            "jacobi",
            vec![
                "--checkpoint-every".into(),
                "2".into(),
                "--checkpoint-dir".into(),
                p(&file.join("ck")),
            ],
            "--checkpoint-dir",
        ),
        (
            "jacobi",
            vec![
                "--checkpoint-every".into(),
                "0".into(),
                "--resume".into(),
                p(&ck),
            ],
            "at least 1",
        ),
        (
            "jacobi",
            vec!["--checkpoint-every".into(), "2".into()],
            "needs --checkpoint-dir",
        ),
    ];
    for (app, extra, want) in &cases {
        let mut all: Vec<String> = if extra.iter().any(|a| a == "--n" || a == "--iters") {
            vec![]
        } else {
            args.iter().map(|s| s.to_string()).collect()
        };
        if extra.iter().any(|a| a == "--iters") {
            all.extend(["--n".into(), "200".into()]);
        }
        if extra.iter().any(|a| a == "--n") {
            all.extend(["--iters".into(), "8".into()]);
        }
        all.extend(extra.iter().cloned());
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        refuse(app, &refs, want);
        assert_eq!(snapshot(&ck), before, "{extra:?} touched the checkpoint");
    }
    // A damaged array file (truncated after the commit) is named.
    let newest = walk(&ck)
        .into_iter()
        .find(|f| f.extension().is_some_and(|e| e == "f64"))
        .unwrap();
    let bytes = std::fs::read(&newest).unwrap();
    std::fs::write(&newest, &bytes[..bytes.len() / 2]).unwrap();
    let damaged = snapshot(&ck);
    refuse(
        "jacobi",
        &[&args[..], &["--resume", ck_s]].concat(),
        "damaged",
    );
    assert_eq!(snapshot(&ck), damaged);
}
