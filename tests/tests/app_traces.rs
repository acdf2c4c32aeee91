//! Every kernel runs under `mheta run` with the interposer preloaded: its
//! trace shows the stages, the I/O per variable (named by the declared
//! file), the prefetches, and the messages the kernel sends; and `--auto`
//! on two ranks of CPU power 1 and 0.25 moves every kernel's rows toward
//! the faster rank while its answer still verifies.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use mheta_tests::{bin, last_json, launch, mheta, ok, quick_profile, scratch, two_speeds};
use mheta_trace::{Op, What};
use serde_json::Value;
use std::path::Path;

/// Run `name args` on 2 ranks under `mheta run`; returns the report.
fn traced(name: &str, trace: &Path, args: &[&str]) -> Value {
    let r = last_json(&ok(mheta()
        .args(["run", "--trace-dir"])
        .arg(trace)
        .arg("--")
        .args(launch(2))
        .arg(bin(name))
        .args(args)));
    assert_eq!(r["verified"], true, "{name}: {r}");
    r
}

fn count(it: &mheta_trace::Iteration, op: Op) -> usize {
    it.events.iter().filter(|e| e.op == Some(op)).count()
}

/// (app, args, stages per iteration on rank 0 (None: not checked), the
/// ops every iteration of rank 0 must contain, arrays written back)
type Expect = (
    &'static str,
    &'static [&'static str],
    Option<usize>,
    &'static [Op],
    &'static [&'static str],
);

const EXPECT: &[Expect] = &[
    (
        "jacobi",
        &[
            "--n",
            "96",
            "--iters",
            "8",
            "--dist",
            "90,6",
            "--mem-limit",
            "0.06",
        ],
        Some(1),
        &[Op::Send, Op::Recv, Op::Allreduce],
        &["u"],
    ),
    (
        "sor",
        &[
            "--n",
            "64",
            "--iters",
            "300",
            "--dist",
            "60,4",
            "--mem-limit",
            "0.024",
        ],
        Some(2),
        &[Op::Recv, Op::Send, Op::Allreduce],
        &["u"],
    ),
    (
        "cg",
        &["--class", "S", "--dist", "1300,100", "--mem-limit", "0.3"],
        None,
        &[Op::Allgatherv, Op::Allreduce],
        &[],
    ),
    (
        "lanczos",
        &[
            "--n",
            "256",
            "--iters",
            "8",
            "--dist",
            "240,16",
            "--mem-limit",
            "0.1",
        ],
        Some(2),
        &[Op::Allgatherv, Op::Allreduce],
        &[],
    ),
    (
        "wavefront",
        &[
            "--n",
            "64",
            "--tiles",
            "4",
            "--iters",
            "8",
            "--dist",
            "60,4",
            "--mem-limit",
            "0.024",
        ],
        Some(4),
        &[Op::Recv, Op::Send],
        &["u"],
    ),
    (
        "mg",
        &[
            "--n",
            "63",
            "--iters",
            "8",
            "--dist",
            "59,4",
            "--mem-limit",
            "0.1",
        ],
        None,
        &[Op::Recv, Op::Send, Op::Allreduce],
        &["u", "r"],
    ),
];

#[test]
fn every_kernel_traces_stages_io_per_variable_and_messages() {
    let dir = scratch("app-traces");
    let sdir = dir.join("scratch");
    std::fs::create_dir_all(&sdir).unwrap();
    for &(name, args, stages, ops, written) in EXPECT {
        for prefetch in [false, true] {
            let trace = dir.join(format!("{name}-{prefetch}"));
            let mut a: Vec<&str> = args.to_vec();
            let s = sdir.to_string_lossy().to_string();
            a.extend(["--scratch", &s]);
            if prefetch {
                a.push("--prefetch");
            }
            let r = traced(name, &trace, &a);
            let decl = mheta_trace::read_app(&trace).unwrap();
            assert_eq!(decl.app, name);
            let traces = mheta_trace::read_dir(&trace).unwrap();
            assert_eq!(traces.len(), 2);
            let ooc: Vec<String> = r["ranks"][0]["out_of_core"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect();
            assert!(!ooc.is_empty(), "{name}: rank 0 should be out of core: {r}");
            let t0 = &traces[0];
            assert_eq!(t0.iterations.len(), 3, "{name}");
            for it in &t0.iterations {
                let begins = it
                    .events
                    .iter()
                    .filter(|e| matches!(e.what, What::StageBegin))
                    .count();
                let ends = it
                    .events
                    .iter()
                    .filter(|e| matches!(e.what, What::StageEnd))
                    .count();
                assert_eq!(begins, ends, "{name}");
                assert!(begins >= 1, "{name}: no stages");
                if let Some(s) = stages {
                    assert_eq!(begins, s, "{name}: stages per iteration");
                }
                for &op in ops {
                    assert!(
                        count(it, op) >= 1,
                        "{name}: no {} in an iteration",
                        op.name()
                    );
                }
                // I/O per variable: every out-of-core array's file is read
                // (prefetches recorded as blocking reads), and written back
                // when the kernel changes it.
                for v in &ooc {
                    let decl_file = decl
                        .arrays
                        .iter()
                        .find(|a| a.file.as_deref() == Some(v.as_str()))
                        .unwrap_or_else(|| panic!("{name}: {v} not declared with a file"));
                    assert!(decl_file.bytes_per_row > 0);
                    let id = t0
                        .files
                        .iter()
                        .position(|f| {
                            Path::new(f).file_name().unwrap().to_string_lossy()
                                == format!("{v}.00000")
                        })
                        .unwrap_or_else(|| panic!("{name}: no file for {v} in {:?}", t0.files))
                        as u32;
                    let reads = it
                        .events
                        .iter()
                        .filter(|e| match e.what {
                            What::FileRead { file, .. } => file == id,
                            What::FileIread { file, blocking, .. } => {
                                assert!(blocking, "prefetches are recorded as blocking reads");
                                file == id
                            }
                            _ => false,
                        })
                        .count();
                    assert!(reads >= 3, "{name}: {reads} reads of {v}");
                    let prefetches = it
                        .events
                        .iter()
                        .filter(|e| matches!(e.what, What::FileIread { file, .. } if file == id))
                        .count();
                    assert_eq!(prefetches > 0, prefetch, "{name}: prefetches of {v}");
                    let writes = it
                        .events
                        .iter()
                        .filter(|e| matches!(e.what, What::FileWrite { file, .. } if file == id))
                        .count();
                    assert_eq!(
                        writes > 0,
                        written.contains(&v.as_str()),
                        "{name}: writes of {v}"
                    );
                }
            }
        }
    }
    assert_eq!(
        std::fs::read_dir(&sdir).unwrap().count(),
        0,
        "scratch left behind"
    );
}

#[test]
fn auto_on_two_speeds_moves_every_kernel_toward_the_faster_rank() {
    let dir = scratch("app-auto");
    let profile = quick_profile(&dir, 2);
    let p = profile.to_string_lossy().to_string();
    // Rank 1 at a quarter of the CPU power (`two_speeds`: at half power
    // CI saw sor's ranks 1.35x apart a row, three runs in a row).
    let spec = two_speeds(&dir).to_string_lossy().to_string();
    let cases: &[(&str, &[&str])] = &[
        // jacobi's iterations take 3 ms: 3 of them are one moment of the
        // host, which can slow a rank's CPU time a row 2.5x for that long
        // and turn the plan toward the slow rank; it plans on the 11
        // up to --auto-at 14, as mg does.
        (
            "jacobi",
            &["--n", "1024", "--iters", "40", "--auto-at", "14"],
        ),
        // sor's iterations take 0.15 ms: even 11 of them are one moment
        // of the host (CI saw rank 0 at 2.5x its later CPU time a row
        // across 3, which turned the plan toward the slow rank); it
        // plans on the 97 up to --auto-at 100, about 15 ms.
        (
            "sor",
            &["--n", "256", "--iters", "1500", "--auto-at", "100"],
        ),
        ("cg", &["--class", "W"]),
        ("lanczos", &["--n", "2048", "--iters", "20"]),
        (
            "wavefront",
            &["--n", "512", "--tiles", "8", "--iters", "20"],
        ),
        // mg's iterations take 4 ms: a plan on 3 of them sees the host's
        // moment (CI once saw rank 1 at 1.4x instead of 2x, three runs in
        // a row); it plans on the 11 up to --auto-at 14.
        ("mg", &["--n", "511", "--iters", "24", "--auto-at", "14"]),
    ];
    for &(name, args) in cases {
        let trace = dir.join(format!("trace-{name}"));
        let mut a: Vec<&str> = args.to_vec();
        a.extend(["--cluster", &spec, "--auto", "--profile", &p]);
        // A recording window the host disturbed (this 2-vCPU VM's cores
        // are time-shared: rank 0 has been seen at 1.3x its own time per
        // row, so that a rank at half speed looked 1.1x slower) makes the
        // plan "already balanced", and runs of mg's 4 ms iterations are
        // too short for the drift watch to re-plan. Such a run is tried
        // again, at most twice; a kernel that never moves fails.
        let mut r = traced(name, &trace, &a);
        for attempt in 2..=3 {
            if r["auto"]["moved"] == true {
                break;
            }
            eprintln!(
                "{name}: attempt {attempt}: the last did not move ({})",
                r["auto"]["reason"]
            );
            let _ = std::fs::remove_dir_all(&trace);
            r = traced(name, &trace, &a);
        }
        let auto = &r["auto"];
        let chosen: Vec<u64> = auto["chosen_dist"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: no plan: {r}"))
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect();
        // The first plan pays at 4x; the run ends on the last plan that
        // moved (a re-plan may follow a drift of the iteration time).
        assert_eq!(auto["moved"], true, "{name}: {r}");
        let plans: Vec<&serde_json::Value> = std::iter::once(auto)
            .chain(auto["replans"].as_array().into_iter().flatten())
            .collect();
        let last = plans.iter().rev().find(|p| p["moved"] == true).unwrap();
        assert_eq!(r["dist"], last["chosen_dist"], "{name}: {r}");
        assert!(
            r["dist"][0].as_u64() > r["dist"][1].as_u64(),
            "{name}: ended on {}: {r}",
            r["dist"]
        );
        assert_eq!(chosen.iter().sum::<u64>(), r["rows"].as_u64().unwrap());
        // Rank 1 runs at a quarter of the CPU power: rows move to rank 0.
        assert!(chosen[0] > chosen[1], "{name}: chose {chosen:?}: {r}");
    }
}
