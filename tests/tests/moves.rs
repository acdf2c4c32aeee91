//! GEN_BLOCK moves in place (`mheta_runtime::redistribute_in_place`) through
//! every kernel's `redistribute`, by `--move-to`: a run that moves its rows
//! mid-run must end with the answer of a run that never moved. The
//! distributions cover growing and shrinking blocks on both sides, a rank
//! whose new block does not overlap its old one, and ranks with no rows.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use mheta_tests::{bin, fails, last_json, mpirun, ok};

fn run(np: usize, app: &str, args: &[&str]) -> serde_json::Value {
    last_json(&ok(mpirun(np).arg(bin(app)).args(args)))
}

/// The fields that must match, with their relative tolerance: 1e-12,
/// but lanczos's smallest Ritz value after a few steps is ill-conditioned
/// (runs on 100,100,100 and 250,10,40 that never move differ by 4e-8,
/// from the order of the dot products' partial sums), so 1e-6 there.
fn answer(app: &str, r: &serde_json::Value) -> Vec<(f64, f64)> {
    let keys: &[(&str, f64)] = match app {
        "lanczos" => &[("ritz_max", 1e-12), ("ritz_min", 1e-6)],
        "cg" => &[("zeta", 1e-12)],
        _ => &[("checksum", 1e-12)],
    };
    keys.iter()
        .map(|(k, tol)| {
            let v = r[*k]
                .as_f64()
                .unwrap_or_else(|| panic!("{app}: no {k}: {r}"));
            (v, *tol)
        })
        .collect()
}

#[test]
fn every_kernel_moves_rows_mid_run_without_changing_its_answer() {
    // (app, args, [from, to] pairs over 3 ranks)
    type Case<'a> = (&'a str, &'a [&'a str], &'a [(&'a str, &'a str)]);
    let cases: &[Case] = &[
        (
            "jacobi",
            &["--n", "300", "--iters", "12"],
            &[
                ("100,100,100", "10,250,40"),
                ("150,0,150", "0,300,0"),
                ("20,260,20", "200,50,50"),
            ],
        ),
        (
            "lanczos",
            &["--n", "300", "--iters", "12"],
            &[("100,100,100", "250,10,40"), ("10,10,280", "280,10,10")],
        ),
        (
            "cg",
            &["--class", "S"],
            &[
                ("467,467,466", "800,100,500"),
                ("100,1200,100", "700,0,700"),
            ],
        ),
        (
            "sor",
            &["--n", "300", "--iters", "12"],
            &[("100,100,100", "30,30,240")],
        ),
        (
            "wavefront",
            &["--n", "300", "--iters", "6"],
            &[("100,100,100", "200,60,40")],
        ),
        (
            "mg",
            &["--n", "255", "--iters", "4"],
            &[("85,85,85", "150,60,45")],
        ),
    ];
    for &(app, args, pairs) in cases {
        for &(from, to) in pairs {
            let mut plain: Vec<&str> = args.to_vec();
            plain.extend(["--dist", from]);
            let a = run(3, app, &plain);
            let mut moved = plain.clone();
            moved.extend(["--move-to", to, "--move-at", "2"]);
            let b = run(3, app, &moved);
            let want: Vec<u64> = to.split(',').map(|x| x.parse().unwrap()).collect();
            assert_eq!(
                b["dist"],
                serde_json::json!(want),
                "{app} {from} -> {to}: {b}"
            );
            for ((x, tol), (y, _)) in answer(app, &a).into_iter().zip(answer(app, &b)) {
                assert!(
                    (x - y).abs() <= tol * x.abs().max(1e-300),
                    "{app} {from} -> {to}: {y} after the move, {x} without"
                );
            }
            if a["verified"] == true {
                assert_eq!(b["verified"], true, "{app} {from} -> {to}: {b}");
            }
        }
    }
}

#[test]
fn move_to_rejects_a_bad_distribution_in_one_line() {
    let out = fails(mpirun(2).arg(bin("jacobi")).args([
        "--n",
        "100",
        "--iters",
        "5",
        "--move-to",
        "50,49",
        "--move-at",
        "2",
    ]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--move-to") && err.contains("99"), "{err}");
}
