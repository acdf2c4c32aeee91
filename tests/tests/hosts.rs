//! Emulated hosts: a lab's shaped link and relay measured from inside its
//! namespaces, nothing left after `down`, and a 4-rank jacobi `--auto`
//! across net4. Root only (namespaces, tc): skipped otherwise.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose
use mheta_tests::*;
use std::process::Command;
use std::time::Duration;

/// A TCP peer for the measurements, run inside a host's namespace:
/// `serve PORT`, `rtt HOST PORT N` (median round trip of 8 bytes, µs) and
/// `bulk HOST PORT SECONDS` (goodput, Mbit/s).
const PEER: &str = r#"
import socket, sys, time
cmd = sys.argv[1]
if cmd == "serve":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", int(sys.argv[2]))); s.listen(4)
    for _ in range(2):
        c, _ = s.accept(); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        mode = c.recv(1)
        if mode == b"e":
            while True:
                b = c.recv(64)
                if not b: break
                c.sendall(b)
        else:
            while c.recv(1 << 20): pass
            c.sendall(b"k")
        c.close()
elif cmd == "rtt":
    s = socket.create_connection((sys.argv[2], int(sys.argv[3])))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1); s.sendall(b"e"); v = []
    for i in range(int(sys.argv[4])):
        t = time.perf_counter(); s.sendall(b"x" * 8)
        got = 0
        while got < 8: got += len(s.recv(64))
        v.append(time.perf_counter() - t)
    v.sort(); print(v[len(v) // 2] * 1e6)
else:
    s = socket.create_connection((sys.argv[2], int(sys.argv[3]))); s.sendall(b"b")
    buf = b"x" * (1 << 20); n = 0; t = time.perf_counter()
    while time.perf_counter() - t < float(sys.argv[4]): s.sendall(buf); n += len(buf)
    s.shutdown(socket.SHUT_WR); s.recv(1); dt = time.perf_counter() - t
    print(n * 8 / dt / 1e6)
"#;

/// Held by the tests that use net4: each leaves it as it found it, which
/// would take it down under the other when they run in parallel.
static NET4: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Whether net4's hosts are up (`mheta hosts status` succeeds).
fn net4_is_up() -> bool {
    mheta()
        .args(["hosts", "status", "net4"])
        .output()
        .unwrap()
        .status
        .success()
}

/// Takes the lab down when the test ends, pass or fail.
struct Down(String);
impl Drop for Down {
    fn drop(&mut self) {
        let _ = mheta().args(["hosts", "down", &self.0]).output();
    }
}

fn in_ns(ns: &str, script: &std::path::Path, args: &[&str]) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, "python3"])
        .arg(script)
        .args(args);
    c
}

/// Three runs of a peer measurement from `from` to `to` (its address
/// `to_ip`), each against a fresh server: the least round trip or the
/// greatest goodput.
fn measure(script: &std::path::Path, from: &str, to: &str, to_ip: &str, what: &[&str]) -> f64 {
    let mut v = vec![];
    for port in [5301, 5302, 5303] {
        let p = port.to_string();
        let mut server = in_ns(to, script, &["serve", &p]).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let mut args = vec![what[0], to_ip, &p];
        args.extend_from_slice(&what[1..]);
        let out = ok_within(&mut in_ns(from, script, &args), Duration::from_secs(60));
        v.push(out.trim().parse::<f64>().unwrap());
        // The server takes one echo and one bulk connection; it ends when
        // killed.
        let _ = server.kill();
        let _ = server.wait();
    }
    v.sort_by(f64::total_cmp);
    // Disturbances (this VM's vCPU stalls, a timer woken late, a peer
    // starved of CPU) only lengthen a round trip and only lower a shaped
    // link's goodput, which the shaper caps from above: the least round
    // trip and the greatest goodput are the path's.
    if what[0] == "rtt" { v[0] } else { v[2] }
}

#[test]
fn two_hosts_shape_the_link_add_the_latency_and_leave_nothing() {
    if !is_root() {
        eprintln!("hosts: skipped (needs root)");
        return;
    }
    let dir = scratch("hosts-two");
    let spec = dir.join("ittwo.toml");
    // a: a 200 Mbit/s link; b: 1 Gbit/s with 1 ms added one way; c: 1 Gbit/s.
    std::fs::write(
        &spec,
        "[lab]\nname = \"ittwo\"\nsubnet = \"10.77.252.0/24\"\n\
         [[host]]\nname = \"a\"\ncpu_power = 1.0\nrate = \"200mbit\"\n\
         [[host]]\nname = \"b\"\ncpu_power = 1.0\nrate = \"1gbit\"\nlatency = \"1ms\"\n\
         [[host]]\nname = \"c\"\ncpu_power = 1.0\nrate = \"1gbit\"\n",
    )
    .unwrap();
    let script = dir.join("peer.py");
    std::fs::write(&script, PEER).unwrap();
    let spec_s = spec.to_str().unwrap().to_string();
    let guard = Down(spec_s.clone());
    ok(mheta().args(["hosts", "up", &spec_s]));
    // Idempotent.
    let again = ok(mheta().args(["hosts", "up", &spec_s]));
    assert!(again.contains("already up"), "{again}");
    let st = ok(mheta().args(["hosts", "status", &spec_s, "--json"]));
    let st: serde_json::Value = serde_json::from_str(&st).unwrap();
    assert_eq!(st["state"], "up");
    // Every host's TCP is one that does not pace, whatever the machine's
    // default.
    for h in st["hosts"].as_array().unwrap() {
        let cc = h["congestion_control"].as_str().unwrap_or("none");
        assert!(["cubic", "reno"].contains(&cc), "{}: {cc}", h["name"]);
    }
    // Each host has its own hostname.
    let h = ok(Command::new("nsenter")
        .arg("--uts=/run/mheta/hosts/ittwo/uts/b")
        .arg("hostname"));
    assert_eq!(h.trim(), "b");

    // The 200 Mbit/s link, c -> a: never over the rate (the bucket's
    // burst is a few frames against 3 s of sending), and at least 70% of
    // it. TCP/IP headers take ~4% of each frame; below that, only the
    // machine loses goodput (a stalled vCPU or a late timer lets the
    // bucket overflow and its tokens go unused), and a loaded CI machine
    // has shown 90% as the best of three.
    let mbit = measure(
        &script,
        "mheta-ittwo-c",
        "mheta-ittwo-a",
        "10.77.252.10",
        &["bulk", "3"],
    );
    eprintln!("hosts: c -> a over a 200 Mbit/s link: {mbit:.1} Mbit/s");
    assert!(
        (140.0..=202.0).contains(&mbit),
        "{mbit} Mbit/s on a 200 Mbit/s link"
    );
    // The relay: c <-> b round trip less c <-> a's is the 2 x 1 ms added.
    let near = measure(
        &script,
        "mheta-ittwo-c",
        "mheta-ittwo-a",
        "10.77.252.10",
        &["rtt", "300"],
    );
    let far = measure(
        &script,
        "mheta-ittwo-c",
        "mheta-ittwo-b",
        "10.77.252.11",
        &["rtt", "300"],
    );
    let added_us = far - near;
    eprintln!(
        "hosts: round trip c <-> a {near:.0} us, c <-> b {far:.0} us: added {added_us:.0} us (expected 2000)"
    );
    // The relay never lets a frame go early; its own copies and the
    // path's two more veth hops add 50-100 us a direction here
    // (docs/EMULATION.md), and a late wake-up on a loaded machine more.
    assert!((1850.0..=2600.0).contains(&added_us), "added {added_us} us");

    let down = ok(mheta().args(["hosts", "down", &spec_s]));
    assert!(down.contains("down"), "{down}");
    drop(guard);
    let ns = ok(Command::new("ip").args(["netns", "list"]));
    assert!(!ns.contains("mheta-ittwo-"), "namespaces left: {ns}");
    let tag = st["bridge"]
        .as_str()
        .unwrap()
        .trim_end_matches("br")
        .to_string();
    let links = ok(Command::new("ip").args(["-o", "link", "show"]));
    assert!(!links.contains(&tag), "interfaces {tag}* left: {links}");
    let relays = ok(Command::new("ps").args(["-eo", "args"]));
    assert!(
        !relays
            .lines()
            .any(|l| l.contains("hosts relay") && l.contains(&tag)),
        "a relay is left: {relays}"
    );
    assert!(!std::path::Path::new("/run/mheta/hosts/ittwo").exists());
    let st = mheta().args(["hosts", "status", &spec_s]).output().unwrap();
    assert_eq!(st.status.code(), Some(3), "status of a lab that is down");
}

#[test]
fn refuses_a_name_it_did_not_make() {
    if !is_root() {
        eprintln!("hosts: skipped (needs root)");
        return;
    }
    let dir = scratch("hosts-clash");
    let spec = dir.join("itclash.toml");
    std::fs::write(
        &spec,
        "[lab]\nname = \"itclash\"\nsubnet = \"10.77.253.0/24\"\n[[host]]\nname = \"x\"\ncpu_power = 1.0\n",
    )
    .unwrap();
    // Someone else's namespace with the lab's name.
    ok(Command::new("ip").args(["netns", "add", "mheta-itclash-x"]));
    let out = fails(mheta().args(["hosts", "up", spec.to_str().unwrap()]));
    let _ = Command::new("ip")
        .args(["netns", "del", "mheta-itclash-x"])
        .status();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("mheta-itclash-x") && err.contains("not made by mheta hosts"),
        "{err}"
    );
    // Nothing was made, and the foreign namespace was not touched by up.
    assert!(!std::path::Path::new("/run/mheta/hosts/itclash").exists());
    // A spec without hosts is refused with its name.
    let out = fails(mheta().args(["hosts", "up", "het2"]));
    assert!(String::from_utf8_lossy(&out.stderr).contains("het2"));
}

/// What a net4 profile measured outside the links' bounds (see
/// `jacobi_auto_runs_and_verifies_across_net4`).
fn net4_misses(p: &serde_json::Value) -> Vec<String> {
    let pair = |s: u64, d: u64| {
        p["pairs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["src"] == s && c["dst"] == d)
            .unwrap()
            .clone()
    };
    let mut misses = Vec::new();
    for (s, d) in [(0, 2), (2, 1), (3, 2)] {
        let mb_s = pair(s, d)["bandwidth_bps"].as_f64().unwrap() / 1e6;
        if !(0.7 * 25.0..=1.1 * 25.0).contains(&mb_s) {
            misses.push(format!("{s} -> {d}: {mb_s} MB/s"));
        }
    }
    let one_way = |s, d| pair(s, d)["one_way_small"]["p50"].as_f64().unwrap();
    for (s, d) in [(0, 3), (3, 1), (2, 3)] {
        let added = one_way(s, d) - one_way(0, 1);
        if !(0.9e-3..=1.3e-3).contains(&added) {
            misses.push(format!("{s} -> {d}: {added} s added"));
        }
    }
    misses
}

/// Jobs of 4 ranks across net4 run on Open MPI only. Here MPICH 4.0.2
/// over UCX 1.13.1's TCP transport can hang in `MPI_Finalize` after the
/// job's work is done: one rank spins in `ucp_worker_progress` on the
/// endpoints it closes while the others wait in the PMI barrier (gdb
/// stacks; 2 of 8 and 5 of 12 runs of a 4-rank jacobi, n 256, and 4 of 6
/// `mheta bench --cluster net4 --quick`, 2 of 6 with
/// `UCX_TCP_PUT_ENABLE=n`; the same hang over TCP is openucx/ucx#8738).
/// tests/tests/mpich.rs runs MPICH across two emulated hosts. True (and
/// says so) when this pass is on MPICH.
fn mpich_across_net4() -> bool {
    let skip = on_mpich();
    if skip {
        eprintln!(
            "hosts: skipped on MPICH (4 ranks across net4 can hang in MPI_Finalize here: UCX over TCP)"
        );
    }
    skip
}

#[test]
fn jacobi_auto_runs_and_verifies_across_net4() {
    if !is_root() {
        eprintln!("hosts: skipped (needs root)");
        return;
    }
    if mpich_across_net4() {
        return;
    }
    let _net4 = NET4.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch("hosts-net4");
    let was_up = net4_is_up();
    let profile = dir.join("net4.json");
    // Every pair over its link: through h2 the 200 Mbit/s link's 25 MB/s,
    // never more than 10% over it and at least 70% of it; through h3 its
    // 1 ms more, never 0.1 ms less and at most 0.3 ms more. A loaded
    // machine only lowers a shaped link's goodput (76% seen on CI, 39%
    // under two extra CPU hogs) and only delays the relay, never the
    // other way: a session outside the bounds is measured again, at most
    // three in all, and the last must be within them.
    let mut attempt = 0;
    let p = loop {
        attempt += 1;
        let out = ok_within(
            mheta()
                .args(["bench", "--cluster", "net4", "--quick", "--no-disk", "-o"])
                .arg(&profile),
            Duration::from_secs(400),
        );
        assert!(out.contains("h2"), "the profile names the hosts:\n{out}");
        let p: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&profile).unwrap()).unwrap();
        let misses = net4_misses(&p);
        if misses.is_empty() {
            break p;
        }
        assert!(attempt < 3, "{misses:?}");
        eprintln!("hosts: net4 session {attempt} outside the bounds, measured again: {misses:?}");
    };
    assert_eq!(p["links"].as_array().unwrap().len(), 16, "the spec's links");
    // The four emulated hosts are one machine (one kernel): rank 0's,
    // whose reuse curve every rank carries.
    let nodes = p["nodes"].as_array().unwrap();
    assert!(nodes.iter().all(|n| n["machine"] == 0), "{nodes:?}");
    assert!(
        (nodes.iter()).all(|n| n["reuse_by"] == nodes[0]["reuse_by"] && n["reuse_by"].is_array()),
        "{nodes:?}"
    );
    let trace = dir.join("trace");
    let out = ok_within(
        mheta()
            .args(["run", "--cluster", "net4", "--trace-dir"])
            .arg(&trace)
            .arg("--")
            .arg(launcher())
            .arg(bin("jacobi"))
            .args([
                "--n",
                "2048",
                "--iters",
                "40",
                "--cluster",
                "net4",
                "--auto",
                "--profile",
            ])
            .arg(&profile),
        Duration::from_secs(300),
    );
    let r = last_json(&out);
    assert_eq!(r["verified"], true, "{r}");
    let hosts: Vec<&str> = r["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["host"].as_str().unwrap())
        .collect();
    assert_eq!(hosts, ["h0", "h1", "h2", "h3"]);
    assert!(r["auto"]["chosen_dist"].as_array().is_some(), "{r}");
    assert_eq!(
        r["auto"]["chosen_dist"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .sum::<u64>(),
        2048
    );
    // The hosts were down before (as on a fresh machine): they are again.
    assert_eq!(net4_is_up(), was_up, "net4 left as it was found");
}

#[test]
fn a_checkpoint_from_net4_resumes_on_other_hosts_with_the_exact_answer() {
    if !is_root() {
        eprintln!("hosts: skipped (needs root)");
        return;
    }
    if mpich_across_net4() {
        return;
    }
    let _net4 = NET4.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch("hosts-checkpoint");
    // Two hosts of two ranks each: other hosts, another mapping of ranks.
    let spec = dir.join("itpairs.toml");
    std::fs::write(
        &spec,
        "[lab]\nname = \"itpairs\"\nsubnet = \"10.77.254.0/24\"\n\
         [[host]]\nname = \"p0\"\nranks = 2\ncpu_power = 1.0\nrate = \"1gbit\"\n\
         [[host]]\nname = \"p1\"\nranks = 2\ncpu_power = 1.0\nrate = \"200mbit\"\n",
    )
    .unwrap();
    let spec = spec.to_str().unwrap();
    let ck = dir.join("ck");
    let jacobi = bin("jacobi");
    let limit = Duration::from_secs(120);
    let first = last_json(&ok_within(
        mheta()
            .args(["hosts", "mpirun", "net4", "--"])
            .arg(&jacobi)
            .args([
                "--n",
                "1024",
                "--iters",
                "20",
                "--cluster",
                "net4",
                "--dist",
                "100,300,400,224",
            ])
            .args(["--checkpoint-every", "10", "--checkpoint-dir"])
            .arg(&ck),
        limit,
    ));
    assert_eq!(first["verified"], true, "{first}");
    let resumed = last_json(&ok_within(
        mheta()
            .args(["hosts", "mpirun", spec, "--"])
            .arg(&jacobi)
            .args([
                "--n",
                "1024",
                "--iters",
                "40",
                "--cluster",
                spec,
                "--resume",
            ])
            .arg(&ck),
        limit,
    ));
    let straight = last_json(&ok_within(
        mheta()
            .args(["hosts", "mpirun", spec, "--"])
            .arg(&jacobi)
            .args(["--n", "1024", "--iters", "40", "--cluster", spec]),
        limit,
    ));
    assert!(
        resumed["resumed_from"]["iteration"].as_u64().unwrap() >= 10,
        "{resumed}"
    );
    let hosts: Vec<&str> = resumed["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["host"].as_str().unwrap())
        .collect();
    assert_eq!(hosts, ["p0", "p0", "p1", "p1"]);
    assert_eq!(resumed["verified"], true, "{resumed}");
    // Bit for bit: jacobi's grid does not depend on the distribution.
    assert_eq!(resumed["checksum"], straight["checksum"]);
    assert_eq!(resumed["error"], straight["error"]);
}

#[test]
fn crowded_ranks_across_hosts_share_one_cpu_group_wait_under_fifo_and_leave_none() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if !is_root() || cores >= 4 || !std::path::Path::new("/sys/fs/cgroup/cpu/cgroup.procs").exists()
    {
        eprintln!("hosts: skipped (needs root, fewer than 4 cores and cgroup v1 cpu)");
        return;
    }
    if mpich_across_net4() {
        return;
    }
    let _net4 = NET4.lock().unwrap_or_else(|e| e.into_inner());
    let was_up = net4_is_up();
    // One launcher daemon per host: each rank starts in a session (and an
    // autogroup) of its own, and only a shared group lets one rank's
    // SCHED_IDLE work yield to another's MPI call.
    let out = ok_within(
        mheta()
            .args(["hosts", "mpirun", "net4", "-np", "4"])
            .arg(bin("jacobi"))
            .args(["--n", "256", "--iters", "5", "--cluster", "net4"])
            .args(["--cpu-emulation", "clock", "--cpu-ns-per-unit", "20"]),
        Duration::from_secs(120),
    );
    let r = last_json(&out);
    assert_eq!(r["verified"], true, "{r}");
    let group = r["emulation"]["shared_group"].as_str().unwrap_or_default();
    assert!(group.starts_with("mheta-job-"), "{r}");
    assert_eq!(r["emulation"]["work_policy"], "idle", "{r}");
    // Sleeping waits (the default here): the rest of each rank under
    // SCHED_FIFO, in the group's real-time time, with no fallback noted.
    assert_eq!(r["emulation"]["wait"], "sleep", "{r}");
    assert_eq!(r["emulation"]["wait_policy"], "fifo", "{r}");
    for k in r["ranks"].as_array().unwrap() {
        let notes = k["notes"].to_string();
        assert!(!notes.contains("normal policy"), "{notes}");
    }
    // Polling waits stay under the normal policy.
    let out = ok_within(
        mheta()
            .args(["hosts", "mpirun", "net4", "-np", "4"])
            .arg(bin("jacobi"))
            .args(["--n", "256", "--iters", "5", "--cluster", "net4"])
            .args(["--wait", "poll"])
            .args(["--cpu-emulation", "clock", "--cpu-ns-per-unit", "20"]),
        Duration::from_secs(120),
    );
    let r = last_json(&out);
    assert_eq!(r["verified"], true, "{r}");
    assert_eq!(r["emulation"]["wait"], "poll", "{r}");
    assert!(r["emulation"].get("wait_policy").is_none(), "{r}");
    let left: Vec<String> = std::fs::read_dir("/sys/fs/cgroup/cpu")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n == group)
        .collect();
    assert!(left.is_empty(), "the last rank out removes {group}");
    assert_eq!(net4_is_up(), was_up, "net4 left as it was found");
}
