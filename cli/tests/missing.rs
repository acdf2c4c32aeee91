//! An input `mheta` cannot use (a file that is not there, an address it
//! cannot bind): the error names it and says why once, and `mheta` exits
//! non-zero.
#![allow(clippy::unwrap_used)]

use std::process::Command;

/// stderr of `mheta ARGS`, which must fail.
fn refused(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_mheta"))
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{args:?} succeeded: {err}");
    err
}

#[test]
fn a_file_that_cannot_be_read_is_named_and_its_reason_said_once() {
    let dir = std::env::temp_dir().join(format!("mheta-missing-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // A profile that is not there.
    std::fs::create_dir_all(&dir).unwrap();
    let nope = dir.join("nope.json");
    let err = refused(&["show", "--profile", nope.to_str().unwrap()]);
    assert!(err.contains(nope.to_str().unwrap()), "{err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
    // A trace directory whose rank file is a directory.
    let rank = dir.join("trace").join("rank-00000.mtrace");
    std::fs::create_dir_all(&rank).unwrap();
    let err = refused(&["show", "--trace", dir.join("trace").to_str().unwrap()]);
    assert!(err.contains(rank.to_str().unwrap()), "{err}");
    assert_eq!(err.matches("Is a directory").count(), 1, "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_address_that_cannot_be_bound_is_named_and_its_reason_said_once() {
    // 192.0.2.1 (TEST-NET-1) is no interface of this machine: bind fails
    // at once, without a name lookup.
    let err = refused(&["load", "--echo-listen", "192.0.2.1:0", "--duration", "0.1"]);
    assert!(err.contains("192.0.2.1:0"), "{err}");
    assert_eq!(err.matches("cannot bind").count(), 1, "{err}");
}
