//! `mheta slowdown` and `--load` end to end: a load description's
//! slowdowns by both rules, a sense file without a load object, and bad
//! load files named in the errors.

use std::path::PathBuf;
use std::process::Command;

fn mheta() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mheta"))
}

fn tmp(name: &str, text: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mheta-load-desc-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    let p = d.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

fn json(out: std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

#[test]
fn slowdowns_of_a_load_description() {
    let f = tmp(
        "l.toml",
        r#"
        delay_comm = 0.25
        [[node]]
        ranks = [0]
        competitors = [{ comm = 0.24 }, { comm = 0.24 }]
        [[node]]
        ranks = [1, 2]
        cpus = 1
        competitors = [{ comm = 0.0 }]
        "#,
    );
    let v = json(
        mheta()
            .args(["slowdown", "--np", "4", "--json", "--load"])
            .arg(&f)
            .output()
            .expect("run"),
    );
    let r = &v["ranks"];
    // Figueira and Berman fig. 4: eq. 2 gives 2.6; shared CPU more (overlap).
    let paper = r[0]["paper"]["mean"].as_f64().expect("mean");
    let sharing = r[0]["sharing"]["mean"].as_f64().expect("mean");
    assert!((paper - 2.6256).abs() < 1e-3, "{paper}");
    assert!(sharing > paper && sharing < 3.0, "{sharing}");
    // Two ranks on one core beside a hog: a third each, not a half.
    for k in [1, 2] {
        assert!((r[k]["sharing"]["mean"].as_f64().expect("mean") - 1.5).abs() < 1e-6);
    }
    assert_eq!(r[3]["sharing"]["mean"].as_f64(), Some(1.0));
}

#[test]
fn bad_loads_are_named() {
    let missing = std::env::temp_dir().join("mheta-no-such-load.toml");
    let out = mheta()
        .args(["slowdown", "--load"])
        .arg(&missing)
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("mheta-no-such-load.toml"));
    let f = tmp("bad.toml", "[[node]]\nrankz = [0]\n");
    let out = mheta()
        .args(["slowdown", "--load"])
        .arg(&f)
        .output()
        .expect("run");
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("bad.toml") && e.contains("rankz"), "{e}");
    let f = tmp("r.toml", "[[node]]\nranks = [3]\n");
    let out = mheta()
        .args(["slowdown", "--np", "2", "--load"])
        .arg(&f)
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("rank 3"));
    let f = tmp("s.json", r#"{"format": "mheta-sense", "version": 1}"#);
    let out = mheta()
        .args(["slowdown", "--load"])
        .arg(&f)
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no load object"));
}
