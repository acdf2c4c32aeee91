//! Bad input gets a one-line error naming the culprit and a non-zero exit.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use mheta_tests::{app, bin, cores, fails, launch, mheta, mpirun, quick_profile, scratch};
use std::process::Output;

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The one line that starts with `prefix`; there must be exactly one.
fn one_error_line(o: &Output, prefix: &str) -> String {
    let err = stderr(o);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with(prefix)).collect();
    assert_eq!(lines.len(), 1, "expected one '{prefix}' line in:\n{err}");
    lines[0].to_string()
}

/// jacobi's one error line (from rank 0 only) for `args` on `np` ranks.
fn jacobi_error(np: usize, args: &[&str]) -> String {
    let o = fails(mpirun(np).arg(bin("jacobi")).args(args));
    one_error_line(&o, "jacobi: error:")
}

#[test]
fn jacobi_dist_of_wrong_length() {
    let l = jacobi_error(2, &["--n", "100", "--dist", "30,30,40"]);
    assert!(
        l.contains("--dist has 3 entries but there are 2 ranks"),
        "{l}"
    );
}

#[test]
fn jacobi_dist_of_wrong_sum() {
    let l = jacobi_error(2, &["--n", "100", "--dist", "30,60"]);
    assert!(l.contains("--dist sums to 90 rows but N = 100"), "{l}");
}

#[test]
fn jacobi_dist_not_a_number() {
    let l = jacobi_error(2, &["--n", "100", "--dist", "50,x"]);
    assert!(l.contains("\"x\" is not a non-negative row count"), "{l}");
}

#[test]
fn jacobi_cluster_of_wrong_rank_count_or_unknown() {
    let l = jacobi_error(4, &["--n", "100", "--cluster", "het2"]);
    assert!(
        l.contains("het2") && l.contains("2 ranks but the job has 4"),
        "{l}"
    );
    let l = jacobi_error(2, &["--n", "100", "--cluster", "nosuch"]);
    assert!(l.contains("nosuch") && l.contains("built-in"), "{l}");
}

#[test]
fn jacobi_auto_without_interposer_or_profile() {
    let o = fails(
        mpirun(2)
            .arg(bin("jacobi"))
            .args(["--n", "100", "--auto"])
            .env_remove("MHETA_PROFILE"),
    );
    let l = one_error_line(&o, "jacobi: error:");
    assert!(l.contains("mheta run"), "{l}");
}

#[test]
fn predict_with_missing_trace_directory() {
    let dir = scratch("err-trace");
    let profile = quick_profile(&dir, 2);
    let o = fails(mheta().args(["predict", "--profile"]).arg(&profile).args([
        "--trace",
        "/nonexistent/tr",
        "--dist",
        "1,1",
    ]));
    let l = one_error_line(&o, "mheta: error:");
    assert!(
        l.contains("/nonexistent/tr") && l.contains("no trace directory"),
        "{l}"
    );
}

/// `mheta predict`'s one error line for this profile, trace and --dist.
fn predict_error(profile: &std::path::Path, trace: &std::path::Path, dist: &str) -> String {
    let o = fails(
        mheta()
            .args(["predict", "--profile"])
            .arg(profile)
            .arg("--trace")
            .arg(trace)
            .args(["--dist", dist]),
    );
    one_error_line(&o, "mheta: error:")
}

fn recorded_trace(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = scratch(name);
    let profile = quick_profile(&dir, 2);
    let trace = dir.join("trace");
    mheta_tests::ok(
        mheta()
            .args(["run", "--trace-dir"])
            .arg(&trace)
            .arg("--")
            .args(launch(2))
            .arg(bin("jacobi"))
            .args(["--n", "64", "--iters", "8"]),
    );
    (profile, trace)
}

#[test]
fn corrupt_and_wrong_version_profiles() {
    let (profile, trace) = recorded_trace("err-profile");
    let dir = profile.parent().unwrap().to_path_buf();
    let corrupt = dir.join("corrupt.json");
    std::fs::write(
        &corrupt,
        "{\"format\": \"mheta-cluster-profile\", \"version\": 1, \"np\": ",
    )
    .unwrap();
    let l = predict_error(&corrupt, &trace, "32,32");
    assert!(
        l.contains("corrupt.json") && l.contains("not a valid cluster profile"),
        "{l}"
    );

    let text = std::fs::read_to_string(&profile).unwrap();
    let old = dir.join("old.json");
    std::fs::write(&old, text.replace("\"version\": 2", "\"version\": 99")).unwrap();
    let l = predict_error(&old, &trace, "32,32");
    assert!(l.contains("old.json") && l.contains("version 99"), "{l}");

    // Wrong length and sum through the CLI too.
    let l = predict_error(&profile, &trace, "32,31");
    assert!(l.contains("sums to 63 rows but N = 64"));
    let l = predict_error(&profile, &trace, "64");
    assert!(l.contains("1 entries but there are 2 ranks"));

    // A profile of another rank count.
    let p4 = quick_profile(&dir, 4);
    let l = predict_error(&p4, &trace, "32,32");
    assert!(
        l.contains("trace has 2 ranks but the profile measured 4"),
        "{l}"
    );
}

#[test]
fn implausible_profiles_traces_and_counts_are_refused() {
    let (profile, trace) = recorded_trace("err-implausible");
    let dir = profile.parent().unwrap().to_path_buf();
    let good: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&profile).unwrap()).unwrap();
    // Each edit makes one figure implausible; the error names the file,
    // the pair or node, the field and the bound.
    let cases: [(&str, &str, serde_json::Value, &str); 11] = [
        (
            "o_send_s",
            "/pairs/0/o_send_s",
            1e300.into(),
            "implausible (above 10 s)",
        ),
        (
            "o_recv_s",
            "/pairs/1/o_recv_s",
            (-1e-6).into(),
            "not a finite non-negative time",
        ),
        (
            "per_byte_s",
            "/pairs/0/per_byte_s",
            1e-15.into(),
            "above any memory bandwidth",
        ),
        (
            "bandwidth_bps",
            "/pairs/1/bandwidth_bps",
            5e12.into(),
            "bandwidth between 0 and",
        ),
        (
            "bandwidth_cold_bps",
            "/pairs/0/bandwidth_cold_bps",
            (-1.0).into(),
            "bandwidth between 0 and",
        ),
        (
            "moves",
            "/pairs/1/moves",
            serde_json::json!([{"bytes": 1048576, "one_way_s": 0.01}, {"bytes": 1048576, "one_way_s": 0.02}]),
            "is not above the size before it",
        ),
        (
            "send_buffer_bytes",
            "/pairs/1/send_buffer_bytes",
            9_000_000.into(),
            "more than the 8388608-byte message",
        ),
        (
            "send_buffer_first_bytes",
            "/pairs/1/send_buffer_first_bytes",
            9_000_000.into(),
            "send_buffer_first_bytes = 9000000 is more than",
        ),
        (
            "direct_copy_bps",
            "/pairs/0/direct_copy_bps",
            0.0.into(),
            "not a bandwidth above 0",
        ),
        (
            "shift_by",
            "/nodes/0/shift_by/1/distance_bytes",
            1.into(),
            "in increasing order",
        ),
        (
            "cpu_weight",
            "/nodes/1/cpu_weight",
            0.0.into(),
            "not a relative CPU power",
        ),
    ];
    for (field, ptr, value, why) in cases {
        let mut v = good.clone();
        // An optional figure the bench left out this time (one that
        // depends on what it measured) is added to its pair or node.
        match v.pointer_mut(ptr) {
            Some(x) => *x = value,
            None => {
                let (parent, key) = ptr.rsplit_once('/').unwrap();
                let obj = v.pointer_mut(parent).and_then(|o| o.as_object_mut());
                obj.unwrap_or_else(|| panic!("{field}: no {parent} in {profile:?}"))
                    .insert(key.to_string(), value);
            }
        }
        let bad = dir.join(format!("bad-{field}.json"));
        std::fs::write(&bad, serde_json::to_string(&v).unwrap()).unwrap();
        let l = predict_error(&bad, &trace, "32,32");
        assert!(
            l.contains(&format!("bad-{field}.json")) && l.contains(field) && l.contains(why),
            "{field}: {l}"
        );
    }
    // A trace whose iteration lasts longer than a day.
    let r1 = trace.join("rank-00001.mtrace");
    let saved = std::fs::read(&r1).unwrap();
    let mut t = mheta_trace::read_rank(&r1).unwrap();
    t.iterations[0].duration_ns = mheta_trace::MAX_ITERATION_NS * 2;
    mheta_trace::write_rank(&trace, &t).unwrap();
    let l = predict_error(&profile, &trace, "32,32");
    assert!(
        l.contains("rank-00001.mtrace") && l.contains("implausibly long"),
        "{l}"
    );
    std::fs::write(&r1, saved).unwrap();
    // Nonsense counts are refused by name, before anything runs.
    let exp = [
        "experiment",
        "--app",
        "jacobi",
        "--cluster",
        "het2",
        "--np",
        "2",
    ];
    for args in [
        vec!["predict", "--dist", "32,32", "--iters", "0"],
        vec!["search", "--budget", "0"],
        [&exp[..], &["--iters", "0"]].concat(),
        [&exp[..], &["--repeat", "0"]].concat(),
    ] {
        let o = fails(
            mheta()
                .args(&args[..1])
                .arg("--profile")
                .arg(&profile)
                .args(if args[0] == "experiment" {
                    vec![]
                } else {
                    vec!["--trace".to_string(), trace.display().to_string()]
                })
                .args(&args[1..]),
        );
        let err = stderr(&o);
        let flag = args[args.len() - 2];
        assert!(
            err.contains(flag) && err.contains("0 is not in 1.."),
            "{args:?}: {err}"
        );
    }
    // And the good profile still predicts.
    mheta_tests::ok(
        mheta()
            .args(["predict", "--profile"])
            .arg(&profile)
            .arg("--trace")
            .arg(&trace)
            .args(["--dist", "32,32", "--mode", "slow"]),
    );
}

#[test]
fn corrupt_trace_is_named() {
    let (profile, trace) = recorded_trace("err-corrupt-trace");
    let r1 = trace.join("rank-00001.mtrace");
    let bytes = std::fs::read(&r1).unwrap();
    std::fs::write(&r1, &bytes[..bytes.len() / 2]).unwrap();
    let l = predict_error(&profile, &trace, "32,32");
    assert!(
        l.contains("rank-00001.mtrace") && l.contains("corrupt"),
        "{l}"
    );
    std::fs::remove_file(&r1).unwrap();
    let l = predict_error(&profile, &trace, "32,32");
    assert!(l.contains("trace of rank 1 is missing"));
}

#[test]
fn run_without_launcher() {
    let o = fails(mheta().arg("run"));
    let l = one_error_line(&o, "mheta: error:");
    assert!(l.contains("no launcher given"), "{l}");
}

#[test]
fn bench_rejects_bad_input_before_measuring() {
    let o = fails(mheta().args(["bench", "--np", "1", "-o", "/tmp/x.json"]));
    assert!(one_error_line(&o, "mheta: error:").contains("at least 2"));
    let o = fails(mheta().args(["bench", "--np", "2", "-o", "/nonexistent/dir/p.json"]));
    assert!(one_error_line(&o, "mheta: error:").contains("/nonexistent/dir/p.json"));
    // A failed bench leaves an existing profile untouched.
    let dir = scratch("err-bench");
    let keep = dir.join("keep.json");
    std::fs::write(&keep, "precious").unwrap();
    fails(mheta().args(["bench", "--np", "1", "-o"]).arg(&keep));
    assert_eq!(std::fs::read_to_string(&keep).unwrap(), "precious");
}

/// An app's one error line (from rank 0 only) for `args` on `np` ranks.
fn app_error(name: &str, np: usize, args: &[&str]) -> String {
    let o = fails(mpirun(np).arg(bin(name)).args(args));
    one_error_line(&o, &format!("{name}: error:"))
}

#[test]
fn a_crowded_machine_stops_the_default_cpu_emulation_and_says_what_to_pass() {
    if cores() >= 4 {
        eprintln!("skipped: 4 ranks fit this machine's {} cores", cores());
        return;
    }
    // DC at 4 ranks: powers differ, more ranks than cores.
    let l = app_error(
        "jacobi",
        4,
        &["--n", "64", "--iters", "2", "--cluster", "DC"],
    );
    assert!(
        l.contains("not faithful")
            && l.contains("--cpu-emulation clock --cpu-ns-per-unit")
            && l.contains("`--cpu-emulation share` runs anyway"),
        "{l}"
    );
    // Equal powers emulate nothing: the default runs.
    let r = app(
        "jacobi",
        4,
        &["--n", "64", "--iters", "2", "--cluster", "uniform"],
    );
    assert_eq!(r["verified"], true);
    // The task farm stops alike, and says where its clock's figure comes from.
    let l = app_error(
        "farm",
        4,
        &["--task", "ep", "--class", "S", "--cluster", "het4"],
    );
    assert!(
        l.contains("not faithful") && l.contains("a pixel, an EP pair"),
        "{l}"
    );
}

#[test]
fn apps_refuse_unknown_or_mismatched_clusters() {
    let l = app_error("cg", 2, &["--cluster", "nosuch"]);
    assert!(
        l.contains("nosuch") && l.contains("DC, IO, HY1, HY2"),
        "{l}"
    );
    let l = app_error("lanczos", 4, &["--n", "64", "--cluster", "het2"]);
    assert!(
        l.contains("het2: describes 2 ranks but the job has 4"),
        "{l}"
    );
    let l = app_error("sor", 3, &["--n", "64", "--cluster", "DC"]);
    assert!(
        l.contains("defined for 2, 4 and 8 ranks, but the job has 3"),
        "{l}"
    );
}

#[test]
fn apps_refuse_a_memory_limit_below_one_row_and_leave_scratch_empty() {
    let dir = scratch("err-mem");
    let s = dir.to_string_lossy().to_string();
    for (name, args) in [
        ("jacobi", &["--n", "64"][..]),
        ("cg", &["--class", "S"][..]),
        ("mg", &["--n", "63"][..]),
    ] {
        let mut a = args.to_vec();
        a.extend(["--mem-limit", "0.001", "--scratch", &s]);
        let l = app_error(name, 2, &a);
        assert!(
            l.contains("memory limit 0.001 MB is smaller than one row"),
            "{l}"
        );
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            0,
            "{name} left files"
        );
    }
}

#[test]
fn apps_refuse_a_dist_of_the_wrong_sum_and_an_unknown_cg_class() {
    let l = app_error("cg", 2, &["--class", "S", "--dist", "700,600"]);
    assert!(l.contains("--dist sums to 1300 rows but N = 1400"), "{l}");
    let l = app_error("wavefront", 2, &["--n", "64", "--dist", "60,5"]);
    assert!(l.contains("--dist sums to 65 rows but N = 64"), "{l}");
    let l = app_error("cg", 2, &["--class", "Z"]);
    assert!(l.contains("--class Z: unknown NPB CG class"), "{l}");
    let l = app_error("mg", 2, &["--n", "100"]);
    assert!(l.contains("N = 2^k - 1"), "{l}");
}

#[test]
fn apps_refuse_an_unwritable_or_missing_scratch_directory() {
    let l = app_error("sor", 2, &["--n", "64", "--scratch", "/proc"]);
    assert!(l.contains("--scratch /proc: cannot create"), "{l}");
    let l = app_error("lanczos", 2, &["--n", "64", "--scratch", "/nonexistent/x"]);
    assert!(
        l.contains("--scratch /nonexistent/x: no such directory"),
        "{l}"
    );
    // A file where a directory should be.
    let dir = scratch("err-scratch");
    let f = dir.join("file");
    std::fs::write(&f, "x").unwrap();
    let l = app_error(
        "jacobi",
        2,
        &["--n", "64", "--scratch", &f.to_string_lossy()],
    );
    assert!(l.contains("no such directory"), "{l}");
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "x");
}

#[test]
fn show_prints_readable_tables_of_traces_and_profiles() {
    let (profile, trace) = recorded_trace("show-tables");
    let out = |args: &[&std::ffi::OsStr]| mheta_tests::ok(mheta().arg("show").args(args));
    let t = out(&["--trace".as_ref(), trace.as_os_str()]);
    assert!(t.contains("start us") && t.contains("detail"), "{t}");
    // jacobi's halo exchange and its residual reduction, in words.
    assert!(t.contains("MPI_Sendrecv") || t.contains("MPI_Send"), "{t}");
    assert!(
        t.contains("to rank 1 tag") || t.contains("to rank 0 tag"),
        "{t}"
    );
    assert!(
        t.contains("MPI_Allreduce") && t.contains("B over 2 ranks"),
        "{t}"
    );
    for debug in ["Msg {", "Some(", "Collective {", "StageBegin"] {
        assert!(!t.contains(debug), "Rust debug syntax {debug:?} in:\n{t}");
    }
    let p = out(&["--profile".as_ref(), profile.as_os_str()]);
    assert!(p.contains("o_s") && p.contains("RTT8±%"), "{p}");
    assert!(p.contains("# Modes:"), "{p}");
    assert!(p.contains("# Exchange, both ranks sending at once"), "{p}");
    assert!(
        p.contains("# Sender's time in a blocking eager send by size"),
        "{p}"
    );
    // Pair 0->1, its exchanges, its sends by size, node 0, and the header
    // and rank 0's row of each of the four matrices.
    assert_eq!(
        p.lines()
            .filter(|l| l.trim_start().starts_with("0 "))
            .count(),
        12,
        "pair 0->1, its exchanges and sends by size, node 0 and four matrices' header and first row:\n{p}"
    );
    // Exactly one of --trace and --profile.
    fails(mheta().arg("show"));
}

/// jacobi's error line for `--cpu-emulation clock --cpu-ns-per-unit=NS`
/// (or without the figure).
fn clock_error(ns: Option<&str>) -> String {
    let arg = ns.map(|v| format!("--cpu-ns-per-unit={v}"));
    let mut args = vec!["--n", "64", "--cpu-emulation", "clock"];
    args.extend(arg.as_deref());
    jacobi_error(2, &args)
}

#[test]
fn jacobi_cpu_by_the_clock_needs_a_positive_figure_and_only_then() {
    let l = clock_error(None);
    assert!(
        l.contains("--cpu-emulation clock needs --cpu-ns-per-unit NS"),
        "{l}"
    );
    let l = clock_error(Some("-3"));
    assert!(
        l.contains("--cpu-ns-per-unit -3: must be a positive"),
        "{l}"
    );
    let l = jacobi_error(2, &["--n", "64", "--cpu-ns-per-unit", "5"]);
    assert!(
        l.contains("--cpu-ns-per-unit is for --cpu-emulation clock, not share"),
        "{l}"
    );
}

#[test]
fn jacobi_cpu_clock_from_a_missing_or_foreign_report_is_refused() {
    let dir = scratch("clock-bad");
    let l = clock_error(Some("/nonexistent/cal.json"));
    assert!(
        l.contains(
            "--cpu-ns-per-unit /nonexistent/cal.json: neither a number nor a readable report"
        ),
        "{l}"
    );
    let foreign = dir.join("profile.json");
    std::fs::write(&foreign, "{\"version\":1,\"pairs\":[]}\n").unwrap();
    let f = foreign.to_string_lossy().to_string();
    let l = clock_error(Some(&f));
    assert!(l.contains(&f) && l.contains("no ranks[]"), "{l}");
}
