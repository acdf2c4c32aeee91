//! The interposer in C and Rust programs: same results with and without it,
//! and the trace holds what the programs did.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use mheta_tests::{bin, mheta, mpirun, ok, root, scratch};
use mheta_trace::{Op, What};
use std::path::PathBuf;

fn ring(dir: &std::path::Path) -> PathBuf {
    let exe = dir.join("ring");
    ok(std::process::Command::new("mpicc")
        .args(["-O2", "-I"])
        .arg(root().join("interpose/include"))
        .arg(root().join("tests/c/ring.c"))
        .arg("-o")
        .arg(&exe));
    exe
}

#[test]
fn c_ring_same_output_and_full_trace() {
    let dir = scratch("ring");
    let exe = ring(&dir);
    for np in [2usize, 4] {
        let plain = ok(mpirun(np).arg(&exe));
        let trace = dir.join(format!("trace{np}"));
        let wrapped = ok(mheta()
            .args(["run", "--trace-dir"])
            .arg(&trace)
            .args(["--", "mpirun", "--oversubscribe", "-np", &np.to_string()])
            .arg(&exe));
        assert!(plain.contains("checksum="), "{plain}");
        assert_eq!(
            plain, wrapped,
            "output changed under the interposer at {np} ranks"
        );
        let traces = mheta_trace::read_dir(&trace).unwrap();
        assert_eq!(traces.len(), np);
        for t in &traces {
            let r = t.rank as i32;
            let (right, left) = ((r + 1) % np as i32, (r + np as i32 - 1) % np as i32);
            assert_eq!(t.iterations.len(), 3);
            assert_eq!(
                t.iterations.iter().map(|i| i.index).collect::<Vec<_>>(),
                vec![3, 4, 5]
            );
            for it in &t.iterations {
                let ops: Vec<Op> = it.events.iter().filter_map(|e| e.op).collect();
                let want = if r % 2 == 0 {
                    [
                        Op::Irecv,
                        Op::Isend,
                        Op::Waitall,
                        Op::Sendrecv,
                        Op::Send,
                        Op::Recv,
                        Op::Isend,
                        Op::Mprobe,
                        Op::Mrecv,
                        Op::Wait,
                        Op::Allreduce,
                    ]
                } else {
                    [
                        Op::Irecv,
                        Op::Isend,
                        Op::Waitall,
                        Op::Sendrecv,
                        Op::Recv,
                        Op::Send,
                        Op::Isend,
                        Op::Mprobe,
                        Op::Mrecv,
                        Op::Wait,
                        Op::Allreduce,
                    ]
                };
                assert_eq!(ops, want, "rank {r}");
                let w: Vec<&What> = it.events.iter().map(|e| &e.what).collect();
                // Isend of 1000 doubles to the right, matched by id in Waitall,
                // whose receive came from the left with 8000 bytes.
                let (isend_req, irecv_req) = match (w[0], w[1]) {
                    (What::Irecv { req: a }, What::Isend { msg, req: b }) => {
                        assert_eq!((msg.peer, msg.tag, msg.bytes), (right, 1, 8000));
                        (*b, *a)
                    }
                    other => panic!("{other:?}"),
                };
                match w[2] {
                    What::Complete(c) => {
                        assert_eq!(c.len(), 2);
                        assert_eq!(c[0].req, irecv_req);
                        let m = c[0].recv.unwrap();
                        assert_eq!((m.peer, m.tag, m.bytes), (left, 1, 8000));
                        assert_eq!((c[1].req, c[1].recv), (isend_req, None));
                    }
                    other => panic!("{other:?}"),
                }
                match w[3] {
                    What::Sendrecv { send, recv } => {
                        assert_eq!(
                            (send.peer, send.bytes, recv.peer, recv.bytes),
                            (right, 8000, left, 8000)
                        );
                    }
                    other => panic!("{other:?}"),
                }
                assert!(
                    it.events.iter().any(
                        |e| matches!(e.what, What::Probe(m) if m.peer == left && m.bytes == 40)
                    )
                );
                assert!(
                    it.events
                        .iter()
                        .any(|e| matches!(e.what, What::MatchedRecv { bytes: 40 }))
                );
                assert!(it.events.iter().any(|e| matches!(e.what, What::Collective { bytes: 8, comm_size, root: -1 } if comm_size == np as u32)));
                assert_eq!(
                    it.events
                        .iter()
                        .filter(|e| matches!(e.what, What::StageBegin))
                        .count(),
                    1
                );
            }
        }
    }
}

#[test]
fn rust_jacobi_trace_has_halos_and_reduction() {
    let dir = scratch("jtrace");
    let trace = dir.join("trace");
    let n = 100u64;
    let plain = mheta_tests::jacobi(3, &["--n", "100", "--iters", "10"]);
    let out = ok(mheta()
        .args(["run", "--trace-dir"])
        .arg(&trace)
        .args(["--", "mpirun", "--oversubscribe", "-np", "3"])
        .arg(bin("jacobi"))
        .args(["--n", "100", "--iters", "10"]));
    let wrapped = mheta_tests::last_json(&out);
    assert_eq!(plain["checksum"], wrapped["checksum"]);
    assert_eq!(plain["error"], wrapped["error"]);
    let app = mheta_trace::read_app(&trace).unwrap();
    assert_eq!(
        (app.app.as_str(), app.rows, app.dist.clone()),
        ("jacobi", n, vec![34, 33, 33])
    );
    let traces = mheta_trace::read_dir(&trace).unwrap();
    let row = 8 * (n + 2);
    // The middle rank exchanges with both neighbours through MPI_Sendrecv.
    let mid = &traces[1].iterations[0];
    let srs: Vec<_> = mid
        .events
        .iter()
        .filter_map(|e| match &e.what {
            What::Sendrecv { send, recv } => Some((send.peer, send.bytes, recv.peer, recv.bytes)),
            _ => None,
        })
        .collect();
    assert_eq!(srs, vec![(0, row, 2, row), (2, row, 0, row)]);
    // The edge ranks send or receive one row each way.
    let first = &traces[0].iterations[0];
    assert!(
        first
            .events
            .iter()
            .any(|e| matches!(e.what, What::Recv(m) if m.peer == 1 && m.bytes == row))
    );
    assert!(
        first
            .events
            .iter()
            .any(|e| matches!(e.what, What::Send(m) if m.peer == 1 && m.bytes == row))
    );
    for t in &traces {
        let it = &t.iterations[0];
        assert!(it.events.iter().any(|e| matches!(
            e.what,
            What::Collective {
                bytes: 8,
                comm_size: 3,
                root: -1
            }
        )));
        // The stage holds the sweep: it takes most of the iteration's compute.
        let begin = it
            .events
            .iter()
            .find(|e| matches!(e.what, What::StageBegin))
            .unwrap()
            .t0_ns;
        let end = it
            .events
            .iter()
            .find(|e| matches!(e.what, What::StageEnd))
            .unwrap()
            .t0_ns;
        assert!(end > begin);
    }
}

#[test]
fn unwritable_trace_dir_is_reported_and_the_program_runs_on() {
    let exe = ring(&scratch("ring-unwritable"));
    let plain = ok(mpirun(2).arg(&exe));
    let lib = bin("libmheta_interpose.so");
    let out = mpirun(2)
        .arg("-x")
        .arg(format!("LD_PRELOAD={}", lib.display()))
        .args(["-x", "MHETA_TRACE_DIR=/proc/mheta-cannot-write-here"])
        .arg(&exe)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), plain);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("cannot write trace").count(), 2, "{err}");
    assert!(
        err.contains("mheta[0]") && err.contains("mheta[1]"),
        "{err}"
    );
}
