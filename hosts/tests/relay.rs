//! The latency relay between two network namespaces: its added round
//! trip, its throughput, and its errors. Needs root (it builds namespaces
//! and veth pairs) and python3 (the TCP end points); skipped otherwise.
//!
//! Run it in release mode, alone:
//! `cargo test --release -p mheta-hosts --test relay -- --nocapture --test-threads=1`

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use mheta_hosts::relay::{self, Stats};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

const NS_A: &str = "mheta-relaytest-a";
const NS_B: &str = "mheta-relaytest-b";
/// The root-side ends that the relay joins.
const IF_A: &str = "mhrA";
const IF_C: &str = "mhrC";
const ADDR_A: &str = "10.66.9.1";
const ADDR_B: &str = "10.66.9.2";
const PORT: &str = "5701";

/// The TCP end points, run inside the namespaces:
/// - `server PORT`: accepts connections; the first byte of each chooses
///   `e` (echo until EOF) or `s` (sink until EOF, then reply the count).
/// - `pingpong HOST PORT COUNT SIZE`: prints `rtt_us MEDIAN P10 P90`.
/// - `bulk HOST PORT BYTES`: prints `bulk BITS_PER_SECOND BYTES_RECEIVED`.
const PY: &str = r#"
import socket, sys, time
T = socket.IPPROTO_TCP
mode = sys.argv[1]
if mode == "server":
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", int(sys.argv[2])))
    ls.listen(8)
    print("ready", flush=True)
    buf = bytearray(1 << 20)
    while True:
        c, _ = ls.accept()
        c.setsockopt(T, socket.TCP_NODELAY, 1)
        kind = c.recv(1)
        if kind == b"e":
            while True:
                d = c.recv(65536)
                if not d:
                    break
                c.sendall(d)
        elif kind == b"s":
            n = 0
            while True:
                k = c.recv_into(buf)
                if k == 0:
                    break
                n += k
            c.sendall(str(n).encode())
        c.close()
elif mode == "pingpong":
    host, port, count, size = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    s = socket.create_connection((host, port))
    s.setsockopt(T, socket.TCP_NODELAY, 1)
    s.sendall(b"e")
    msg = b"x" * size
    rtts = []
    for i in range(50 + count):
        t0 = time.perf_counter_ns()
        s.sendall(msg)
        got = 0
        while got < size:
            d = s.recv(size - got)
            if not d:
                sys.exit("echo server closed")
            got += len(d)
        rtts.append((time.perf_counter_ns() - t0) / 1000.0)
    rtts = sorted(rtts[50:])
    n = len(rtts)
    print("rtt_us %.1f %.1f %.1f" % (rtts[n // 2], rtts[n // 10], rtts[n * 9 // 10]))
elif mode == "bulk":
    host, port, total = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    s = socket.create_connection((host, port))
    s.sendall(b"s")
    chunk = b"\0" * (1 << 20)
    t0 = time.perf_counter()
    sent = 0
    while sent < total:
        s.sendall(chunk)
        sent += len(chunk)
    s.shutdown(socket.SHUT_WR)
    reply = b""
    while True:
        d = s.recv(64)
        if not d:
            break
        reply += d
    dt = time.perf_counter() - t0
    print("bulk %.0f %s" % (sent * 8 / dt, reply.decode()))
"#;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Run `ip ARGS`, panicking with its stderr on failure.
fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Run `ip ARGS`, ignoring the outcome (clean-up).
fn ip_quiet(args: &[&str]) {
    let _ = Command::new("ip")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

fn ip_output(args: &[&str]) -> String {
    let out = Command::new("ip").args(args).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A running relay, stopped on `finish` (or by the lab's drop).
struct Running {
    stop: Arc<AtomicBool>,
    stats: Arc<Stats>,
    thread: JoinHandle<std::io::Result<()>>,
}

impl Running {
    fn finish(self) -> Arc<Stats> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap().unwrap();
        self.stats
    }
}

/// The two namespaces joined by the relay; everything is removed on drop,
/// whether the test passed or not.
struct Lab {
    children: Vec<Child>,
    stops: Vec<Arc<AtomicBool>>,
}

impl Lab {
    fn build() -> Lab {
        // Leftovers of an interrupted run of this test (these names are
        // this test's own).
        Lab::remove();
        let lab = Lab {
            children: Vec::new(),
            stops: Vec::new(),
        };
        for (ns, root_end, ns_end, addr) in
            [(NS_A, IF_A, "mhra0", ADDR_A), (NS_B, IF_C, "mhrc0", ADDR_B)]
        {
            ip(&["netns", "add", ns]);
            ip(&[
                "link", "add", root_end, "type", "veth", "peer", "name", ns_end, "netns", ns,
            ]);
            ip(&[
                "-n",
                ns,
                "addr",
                "add",
                &format!("{addr}/24"),
                "dev",
                ns_end,
            ]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
            ip(&["-n", ns, "link", "set", ns_end, "up"]);
            ip(&["link", "set", root_end, "up"]);
        }
        lab
    }

    /// Start a relay between mhrA and mhrC.
    fn relay(&mut self, delay: Duration) -> Running {
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(Stats::default());
        self.stops.push(stop.clone());
        let (s, st) = (stop.clone(), stats.clone());
        let thread = std::thread::spawn(move || relay::run_with_stats(IF_A, IF_C, delay, &s, &st));
        Running {
            stop,
            stats,
            thread,
        }
    }

    /// Start the TCP server in namespace b and wait until it listens.
    fn server(&mut self) {
        let mut child = Command::new("ip")
            .args(["netns", "exec", NS_B, "python3", "-c", PY, "server", PORT])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        self.children.push(child);
        assert_eq!(line.trim(), "ready", "the echo server did not start");
    }

    /// Run a client in namespace a; its one line of output, split.
    fn client(&self, args: &[&str]) -> Vec<String> {
        let out = Command::new("ip")
            .args(["netns", "exec", NS_A, "python3", "-c", PY])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "client {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect()
    }

    /// The median TCP round trip of 64-byte messages, µs, and its 10th
    /// and 90th percentiles.
    fn rtt(&self) -> [f64; 3] {
        let f = self.client(&["pingpong", ADDR_B, PORT, "1000", "64"]);
        assert_eq!(f[0], "rtt_us", "{f:?}");
        [
            f[1].parse().unwrap(),
            f[2].parse().unwrap(),
            f[3].parse().unwrap(),
        ]
    }

    /// A bulk transfer of `bytes` from a to b: bits per second.
    fn bulk(&self, bytes: usize) -> f64 {
        let f = self.client(&["bulk", ADDR_B, PORT, &bytes.to_string()]);
        assert_eq!(f[0], "bulk", "{f:?}");
        assert_eq!(f[2], bytes.to_string(), "bytes received");
        f[1].parse().unwrap()
    }

    fn remove() {
        for ns in [NS_A, NS_B] {
            ip_quiet(&["netns", "del", ns]);
        }
        for link in [IF_A, IF_C] {
            ip_quiet(&["link", "del", link]);
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for stop in &self.stops {
            stop.store(true, Ordering::Relaxed);
        }
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        Lab::remove();
    }
}

fn traffic(stats: &Stats) -> String {
    let c = |c: &relay::Counters| {
        format!(
            "{} frames {} bytes {} dropped",
            c.frames.load(Ordering::Relaxed),
            c.bytes.load(Ordering::Relaxed),
            c.dropped.load(Ordering::Relaxed)
        )
    };
    format!("a->c {}; c->a {}", c(&stats.a_to_c), c(&stats.c_to_a))
}

#[test]
fn relay_adds_latency_and_carries_a_gigabit() {
    if !is_root() {
        eprintln!("relay: skipped (needs root for namespaces and raw sockets)");
        return;
    }
    {
        let mut lab = Lab::build();
        lab.server();

        let r = lab.relay(Duration::ZERO);
        let [base, b10, b90] = lab.rtt();
        eprintln!(
            "relay: delay 0: TCP round trip median {base:.0} µs (p10 {b10:.0}, p90 {b90:.0})"
        );
        let bps = lab.bulk(64 << 20);
        eprintln!(
            "relay: delay 0: 64 MiB bulk transfer {:.2} Gbit/s",
            bps / 1e9
        );
        let stats = r.finish();
        eprintln!("relay: delay 0: {}", traffic(&stats));

        let r = lab.relay(Duration::from_millis(1));
        let [rtt, r10, r90] = lab.rtt();
        eprintln!(
            "relay: delay 1 ms: TCP round trip median {rtt:.0} µs (p10 {r10:.0}, p90 {r90:.0})"
        );
        let bps_1ms = lab.bulk(64 << 20);
        eprintln!(
            "relay: delay 1 ms: 64 MiB bulk transfer {:.2} Gbit/s (not checked)",
            bps_1ms / 1e9
        );
        // An interface going down and up again does not end the relay.
        ip(&["link", "set", IF_C, "down"]);
        std::thread::sleep(Duration::from_millis(300));
        ip(&["link", "set", IF_C, "up"]);
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            !r.thread.is_finished(),
            "the relay ended with its interface down"
        );
        let [again, _, _] = lab.rtt();
        eprintln!("relay: delay 1 ms, after mhrC down and up: TCP round trip median {again:.0} µs");
        let stats = r.finish();
        eprintln!("relay: delay 1 ms: {}", traffic(&stats));

        // Each frame is held 1 ms from its kernel receive timestamp, so the
        // round trip is at least 2 ms; at most it is the baseline's plus
        // the 2 ms. Not exactly that sum: a baseline inflated by slow
        // wake-ups on a noisy host (medians of 450-560 µs seen, p10 150-320)
        // is partly hidden under the held frames, which the receiver is
        // already awake for.
        let (lo, hi) = (0.98 * 2000.0, 1.1 * (2000.0 + base));
        eprintln!(
            "relay: delay 1 ms adds {:.0} µs to the round trip (want 2000)",
            rtt - base
        );
        assert!(
            (lo..=hi).contains(&rtt),
            "round trip with 1 ms each way: {rtt:.0} µs, want {lo:.0} to {hi:.0} µs (2 ms, and at most the baseline {base:.0} µs more, + 10%)"
        );
        assert!(
            bps >= 1e9,
            "bulk transfer through the relay: {:.2} Gbit/s, want at least 1",
            bps / 1e9
        );
    }
    let links = ip_output(&["-o", "link", "show"]);
    assert!(!links.contains("mhr"), "links left behind:\n{links}");
    let netns = ip_output(&["netns", "list"]);
    assert!(
        !netns.contains("mheta-relaytest-"),
        "namespaces left behind:\n{netns}"
    );
}

#[test]
fn relay_names_a_missing_interface() {
    let stop = AtomicBool::new(false);
    let e = relay::run("mhrnone0", "mhrnone1", Duration::ZERO, &stop).unwrap_err();
    eprintln!("relay on a missing interface: {e}");
    assert_eq!(e.to_string(), "relay: interface mhrnone0: no such device");
}
