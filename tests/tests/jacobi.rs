//! jacobi verifies against its closed-form iterate on any GEN_BLOCK
//! distribution, and its result does not depend on the distribution.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use mheta_tests::jacobi;

fn check(np: usize, n: u64, dists: &[&str]) {
    let iters = "40";
    let ns = n.to_string();
    let base = jacobi(np, &["--n", &ns, "--iters", iters]);
    assert_eq!(base["verified"], true, "{base}");
    assert_eq!(base["np"], np as u64);
    let c0 = base["checksum"].as_f64().unwrap();
    let e0 = base["error"].as_f64().unwrap();
    assert!(e0 <= 1e-10, "{base}");
    // The iterate is non-trivial: the checksum is far from zero.
    assert!(c0 > 1.0, "{base}");
    for d in dists {
        let r = jacobi(np, &["--n", &ns, "--iters", iters, "--dist", d]);
        let got: Vec<u64> = r["dist"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect();
        assert_eq!(
            got.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(","),
            *d
        );
        assert_eq!(r["verified"], true, "dist {d}: {r}");
        let c = r["checksum"].as_f64().unwrap();
        assert!(
            (c - c0).abs() <= 1e-12 * c0.abs(),
            "dist {d}: checksum {c} vs {c0}"
        );
        let e = r["error"].as_f64().unwrap();
        assert!(
            (e - e0).abs() <= 1e-12 * c0.abs(),
            "dist {d}: error {e} vs {e0}"
        );
    }
}

#[test]
fn two_ranks_block_and_skewed_including_an_empty_rank() {
    check(2, 200, &["150,50", "1,199", "0,200"]);
}

#[test]
fn four_ranks_block_and_skewed_including_empty_ranks() {
    check(4, 200, &["100,50,30,20", "10,0,150,40", "0,0,1,199"]);
}

#[test]
fn residual_falls_as_iterations_grow() {
    // The closed-form iterate c_k·φ converges to φ/μ; the residual (size of
    // the last update) must fall as k grows, as Jacobi's does.
    let a = jacobi(2, &["--n", "32", "--iters", "50"]);
    let b = jacobi(2, &["--n", "32", "--iters", "400"]);
    let ra = a["residual"].as_f64().unwrap();
    let rb = b["residual"].as_f64().unwrap();
    assert!(rb < 0.5 * ra, "{ra} -> {rb}");
    assert_eq!(b["verified"], true);
}
