//! Every kernel (jacobi, sor, cg, lanczos, wavefront, mg) verifies at 1, 2
//! and 4 ranks on Block and on skewed distributions (one with ranks that
//! own no rows), gives the same answer on every distribution, and does so
//! out of core with some rank making at least 3 ICLA passes, with and
//! without prefetching, leaving nothing in the scratch directory.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use mheta_tests::{app, cores, scratch};
use serde_json::Value;

/// One kernel's test configuration.
struct Case {
    name: &'static str,
    args: &'static [&'static str],
    rows: u64,
    /// The answer compared across distributions.
    key: &'static str,
    /// A memory limit (MB) under which rank 0 of the heavy distribution
    /// makes at least 3 passes.
    ooc_mb: f64,
}

const CASES: &[Case] = &[
    Case {
        name: "jacobi",
        args: &["--n", "96", "--iters", "20"],
        rows: 96,
        key: "checksum",
        ooc_mb: 0.06,
    },
    Case {
        name: "sor",
        args: &["--n", "64", "--iters", "300"],
        rows: 64,
        key: "checksum",
        ooc_mb: 0.024,
    },
    Case {
        name: "cg",
        args: &["--class", "S"],
        rows: 1400,
        key: "zeta",
        ooc_mb: 0.3,
    },
    Case {
        name: "lanczos",
        args: &["--n", "256", "--iters", "30"],
        rows: 256,
        key: "ritz_max",
        ooc_mb: 0.1,
    },
    Case {
        name: "wavefront",
        args: &["--n", "64", "--tiles", "4", "--iters", "10"],
        rows: 64,
        key: "checksum",
        ooc_mb: 0.024,
    },
    Case {
        name: "mg",
        args: &["--n", "63", "--iters", "8"],
        rows: 63,
        key: "checksum",
        ooc_mb: 0.1,
    },
];

fn join(d: &[u64]) -> String {
    d.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Three skewed distributions of `r` rows over `np` ranks; the last has
/// ranks with no rows.
fn skewed(np: usize, r: u64) -> Vec<Vec<u64>> {
    match np {
        2 => vec![vec![3 * r / 4, r - 3 * r / 4], vec![1, r - 1], vec![0, r]],
        4 => vec![
            vec![r / 2, r / 4, r / 8, r - r / 2 - r / 4 - r / 8],
            vec![r / 8, r / 3, r / 3, r - r / 8 - 2 * (r / 3)],
            vec![1, 0, 0, r - 1],
        ],
        _ => vec![],
    }
}

/// Most rows on rank 0, a few on each other rank.
fn heavy(np: usize, r: u64) -> Vec<u64> {
    let k = (r / 16).max(1);
    let mut d = vec![k; np];
    d[0] = r - k * (np as u64 - 1);
    d
}

fn value(r: &Value, key: &str) -> f64 {
    r[key].as_f64().unwrap_or_else(|| panic!("no {key} in {r}"))
}

fn same(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1e-300)
}

fn run(c: &Case, np: usize, extra: &[&str]) -> Value {
    let mut args: Vec<&str> = c.args.to_vec();
    args.extend_from_slice(extra);
    let r = app(c.name, np, &args);
    assert_eq!(r["app"], c.name);
    assert_eq!(
        r["verified"], true,
        "{} at {np} ranks {extra:?}: {r}",
        c.name
    );
    r
}

fn in_core(np: usize) {
    for c in CASES {
        let base = run(c, np, &[]);
        let v0 = value(&base, c.key);
        assert!(
            base["ranks"]
                .as_array()
                .unwrap()
                .iter()
                .all(|r| r["passes"] == 1)
        );
        for d in skewed(np, c.rows) {
            let ds = join(&d);
            let r = run(c, np, &["--dist", &ds]);
            assert_eq!(r["dist"], serde_json::json!(d), "{}", c.name);
            let v = value(&r, c.key);
            assert!(
                same(v, v0),
                "{} --dist {ds}: {} {v} vs {v0} on Block",
                c.name,
                c.key
            );
        }
    }
}

#[test]
fn every_kernel_verifies_in_core_at_one_rank() {
    in_core(1);
}

#[test]
fn every_kernel_verifies_in_core_at_two_ranks_on_block_and_skewed() {
    in_core(2);
}

#[test]
fn every_kernel_verifies_in_core_at_four_ranks_on_block_and_skewed() {
    in_core(4);
}

fn out_of_core(np: usize) {
    let dir = scratch(&format!("ooc{np}"));
    let sdir = dir.to_string_lossy().to_string();
    for c in CASES {
        let d = join(&heavy(np, c.rows));
        let reference = value(&run(c, np, &["--dist", &d]), c.key);
        let mb = c.ooc_mb.to_string();
        for prefetch in [false, true] {
            let mut extra = vec!["--dist", &d, "--mem-limit", &mb, "--scratch", &sdir];
            if prefetch {
                extra.push("--prefetch");
            }
            let r = run(c, np, &extra);
            let ranks = r["ranks"].as_array().unwrap();
            let passes = ranks
                .iter()
                .map(|x| x["passes"].as_u64().unwrap())
                .max()
                .unwrap();
            assert!(
                passes >= 3,
                "{} at {np} ranks, prefetch {prefetch}: {passes} passes: {r}",
                c.name
            );
            assert!(
                !ranks[0]["out_of_core"].as_array().unwrap().is_empty(),
                "{r}"
            );
            assert!(
                ["o_direct", "fadvise"].contains(&r["emulation"]["cache"].as_str().unwrap()),
                "{r}"
            );
            assert_eq!(r["prefetch"], prefetch);
            let v = value(&r, c.key);
            assert!(
                same(v, reference),
                "{} out of core: {v} vs {reference} in core",
                c.name
            );
            // The per-rank files and the run directory are gone.
            let left: Vec<_> = std::fs::read_dir(&dir)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .collect();
            assert!(left.is_empty(), "{} left {left:?}", c.name);
        }
    }
}

#[test]
fn every_kernel_verifies_out_of_core_at_one_rank() {
    out_of_core(1);
}

#[test]
fn every_kernel_verifies_out_of_core_at_two_ranks() {
    out_of_core(2);
}

#[test]
fn every_kernel_verifies_out_of_core_at_four_ranks() {
    out_of_core(4);
}

#[test]
fn cg_classes_w_and_a_verify_against_npb_zeta() {
    for (class, na, nonzer) in [("W", 7000, 8), ("A", 14000, 11)] {
        let r = app("cg", 2, &["--class", class]);
        assert_eq!(r["verified"], true, "{r}");
        assert_eq!(r["na"], na);
        assert_eq!(r["nonzer"], nonzer);
        assert!(value(&r, "zeta_rel_error") <= 1e-10, "{r}");
        assert!(value(&r, "mops") > 0.0);
    }
    // With fewer iterations than NPB's the value cannot be checked, and
    // the report says so instead of claiming it.
    let r = app("cg", 2, &["--class", "S", "--iters", "3"]);
    assert_eq!(r["verified"], false);
    assert!(
        r["verification"].as_str().unwrap().contains("--iters 15"),
        "{r}"
    );
}

#[test]
fn mg_discretisation_error_is_second_order() {
    let a = app("mg", 2, &["--n", "63", "--iters", "10"]);
    let b = app("mg", 2, &["--n", "127", "--iters", "10"]);
    for r in [&a, &b] {
        assert_eq!(r["verified"], true, "{r}");
        assert!(value(r, "convergence_factor") <= 0.15, "{r}");
    }
    // h halves: the error falls about 4x.
    let ratio = value(&a, "disc_error") / value(&b, "disc_error");
    assert!((3.6..4.4).contains(&ratio), "O(h^2): ratio {ratio}");
}

/// `--cpu-emulation clock`: a rank's compute is its units times the
/// figure over its power, whatever the host's speed (jacobi's unit is a
/// grid point).
#[test]
fn cpu_by_the_clock_lasts_units_times_the_figure() {
    let (n, ns) = (1024u64, 12.0);
    let r = app(
        "jacobi",
        2,
        &[
            "--n",
            &n.to_string(),
            "--iters",
            "12",
            "--cluster",
            "het2",
            "--cpu-emulation",
            "clock",
            "--cpu-ns-per-unit",
            "12",
        ],
    );
    assert_eq!(r["verified"], true, "{r}");
    assert_eq!(r["emulation"]["cpu"], "clock", "{r}");
    assert_eq!(r["emulation"]["cpu_ns_per_unit"], ns, "{r}");
    for (i, power) in [(0usize, 1.0), (1, 0.5)] {
        let rank = &r["ranks"][i];
        // The scheduler's account of the main loop: CPU time and run-queue
        // delay fit inside the loop's wall time.
        if std::path::Path::new("/proc/thread-self/schedstat").exists() {
            let (cpu, wait) = (
                value(&rank["sched"], "cpu_s"),
                value(&rank["sched"], "runq_wait_s"),
            );
            let wall = value(&r, "elapsed_s");
            assert!(
                cpu > 0.0 && wait >= 0.0 && cpu + wait <= 1.2 * wall + 0.05,
                "{rank}"
            );
        }
        let want = (n / 2 * n) as f64 * ns * 1e-9 / power;
        let got = value(rank, "compute_s");
        let over = rank["cpu_overruns"].as_u64().unwrap();
        let pieces = rank["work_pieces"].as_u64().unwrap();
        assert!(pieces >= 12, "{rank}");
        // A piece never ends before its time by the clock, so the stage
        // (a median over iterations) cannot be shorter. Above it, the
        // wall clock adds whatever the machine adds: pieces whose real
        // work ran over (counted), and late wake-ups from the pacing's
        // sleep when other tests' ranks hold the cores (CI, running this
        // beside the 4-rank tests, saw 1.64x on rank 0 with 0-3 of 12
        // pieces over). Reproducibility is measured in the session notes
        // (66.08-66.09 ms over three runs on an idle machine), not here.
        assert!(
            got >= want && got <= 3.0 * want,
            "rank {i}: compute {got} s, by the clock {want} s ({over} of {pieces} pieces over)"
        );
        // jacobi's one call site of its work, named file:line.
        let sites = rank["cpu_sites"].as_object().unwrap();
        assert_eq!(sites.len(), 1, "{rank}");
        let (name, site) = sites.iter().next().unwrap();
        assert!(name.starts_with("apps/src/bin/jacobi.rs:"), "{name}");
        assert_eq!(site["clock_ns_per_unit"], ns, "{rank}");
        assert_eq!(site["pieces"], pieces, "{rank}");
        // The real work's own cost is reported, and the figure had
        // headroom over it.
        let real = rank["cpu_ns_per_unit"].as_f64().unwrap();
        assert!(real > 0.0 && real < ns, "{rank}");
    }
}

#[test]
fn emulation_is_reported_per_resource() {
    let dir = scratch("emu");
    let sdir = dir.to_string_lossy().to_string();
    // IO at 2 ranks: equal CPUs; rank 1 has a 4x slower disk and 8 MB.
    let r = app(
        "lanczos",
        2,
        &[
            "--n",
            "256",
            "--iters",
            "20",
            "--cluster",
            "IO",
            "--mem-limit",
            "0.1",
            "--scratch",
            &sdir,
        ],
    );
    assert_eq!(r["verified"], true, "{r}");
    let e = &r["emulation"];
    assert_eq!(e["cpu"], "none", "{e}");
    assert_eq!(e["disk"], "paced", "{e}");
    assert_eq!(e["disk_mb_s"], 100.0, "{e}");
    assert!(
        ["cgroup-limit", "self-limit"].contains(&e["memory"].as_str().unwrap()),
        "{e}"
    );
    let ranks = r["ranks"].as_array().unwrap();
    assert_eq!(ranks[1]["io_factor"], 4.0);
    // Both ranks read the same bytes (Block, same limit); the paced disk
    // makes rank 1's reads at least 4x the paced minimum of rank 0's
    // (a lower bound: pacing only ever adds time).
    let bytes = |i: usize| ranks[i]["passes"].as_f64().unwrap();
    assert_eq!(bytes(0), bytes(1));
    let (r0, r1) = (value(&ranks[0], "read_s"), value(&ranks[1], "read_s"));
    assert!(r1 >= 3.0 * r0, "reads: rank 0 {r0} s, rank 1 {r1} s");
    // DC at 2 ranks: power 1.0 and 0.5; the quota only where ranks could
    // steal time, extra work for the relative power.
    let r = app(
        "jacobi",
        2,
        &["--n", "64", "--iters", "5", "--cluster", "DC"],
    );
    let ranks = r["ranks"].as_array().unwrap();
    assert_eq!(ranks[1]["cpu_power"], 0.5);
    assert!(ranks[1]["cpu"].as_str().unwrap().contains("spin"), "{r}");
    assert!((0.0..=1.0).contains(&value(&r["emulation"], "base_share")));
    // At 4 ranks the emulation is named: on fewer than 4 cores the
    // default would stop (errors.rs), and `share` runs with a note.
    let r = app(
        "jacobi",
        4,
        &[
            "--n",
            "64",
            "--iters",
            "5",
            "--cluster",
            "DC",
            "--cpu-emulation",
            "share",
        ],
    );
    assert_eq!(r["np"], 4);
    assert_eq!(r["verified"], true);
    let noted = r["emulation"]["notes"].to_string().contains("not faithful");
    assert_eq!(noted, cores() < 4, "{}", r["emulation"]);
}
