//! Shaping a host's link (`htb`: a class at its rate and one per
//! destination, small packets first in each) and choosing its
//! namespace's TCP congestion control.

use super::{LabError, sh, tc};
use crate::spec::Lab;

/// The bucket of an htb class at `rate` bits/s: about 260 µs of
/// the rate, at least 16 KiB (one GSO frame needs a few).
pub fn burst_bytes(rate: f64) -> u64 {
    ((rate / 8.0 * 262e-6).ceil() as u64).max(16 * 1024)
}

/// The TCP congestion controls a host namespace may get, in order of
/// preference: none of them paces.
pub const CONGESTION_CONTROLS: [&str; 2] = ["cubic", "reno"];

/// Where a namespace's TCP congestion control is read and set.
const CONGESTION_KEY: &str = "/proc/sys/net/ipv4/tcp_congestion_control";

/// Give namespace `ns` a TCP congestion control that does not pace
/// ([`CONGESTION_CONTROLS`]: cubic where the kernel allows it in a
/// namespace, else reno), whatever the machine's default. A namespace
/// starts with the root namespace's, and where that is BBR, every
/// connection is paced at BBR's estimate of its bandwidth, which for an
/// MPI code's small, application-limited messages differs from one run to
/// the next, and so do the run's times (figures: docs/design/hosts.md,
/// "Congestion control"). A cluster's Linux nodes run cubic by default.
pub(super) fn set_congestion_control(ns: &str) -> Result<(), LabError> {
    let mut last = None;
    for cc in CONGESTION_CONTROLS {
        let script = format!("echo {cc} > {CONGESTION_KEY}");
        match sh("ip", &["netns", "exec", ns, "sh", "-c", &script]) {
            Ok(_) => return Ok(()),
            Err(e) => last = Some(e),
        }
    }
    Err(last.expect("at least one congestion control is tried"))
}

/// The TCP congestion control of namespace `ns`, as `status` shows it.
pub fn congestion_control(ns: &str) -> Option<String> {
    sh("ip", &["netns", "exec", ns, "cat", CONGESTION_KEY])
        .ok()
        .map(|s| s.trim().to_string())
}

/// Packets whose IPv4 total length is below this many bytes (TCP's pure
/// acknowledgements, an MPI code's small messages) are sent before the
/// link's bulk data: see [`shape`].
pub const SMALL_PACKET_BYTES: u16 = 128;

/// How long a class's queue may take to drain at its rate (as a `tbf`
/// with `latency 50ms`).
const QUEUE_S: f64 = 0.05;

/// The byte limit of a class's queue at `rate` bits/s: [`QUEUE_S`] of the
/// rate, at least 64 KiB.
pub fn queue_bytes(rate: f64) -> u64 {
    ((rate / 8.0 * QUEUE_S).ceil() as u64).max(64 * 1024)
}

/// Rate of a host's link without one (its per-destination rates aside).
const UNSHAPED_BPS: f64 = 100e9;

/// Shape one end of host `i`'s link: `dir` is `dst` on the host's side
/// (the peer is the packet's destination) and `src` on the root side.
///
/// `htb`: one class at the host's rate (the default), and one per
/// destination with a rate of its own, each split into two leaves under
/// its rate, a FIFO of [`queue_bytes`] each: small packets (below
/// [`SMALL_PACKET_BYTES`]) first, bulk data after. A single FIFO at the
/// rate holds a host's acknowledgements for what it receives behind what
/// it sends, up to the queue's 50 ms, so a host that sends and receives
/// at once receives at a fraction of the rate; a switched full-duplex
/// link, and a host NIC under `fq_codel` (sparse flows first), does not. Figures:
/// docs/design/hosts.md, "Small packets first".
pub(super) fn shape(
    lab: &Lab,
    i: usize,
    ns: Option<&str>,
    dev: &str,
    dir: &str,
) -> Result<(), LabError> {
    let h = &lab.hosts[i];
    if h.rate.is_none() && h.to.is_empty() {
        return Ok(());
    }
    // Class minors (hex): the default link 1:1 with leaves 1:2 (small)
    // and 1:3 (bulk); destination k 1:(1000+k), leaves 1:(2000+k) and
    // 1:(3000+k).
    tc(
        ns,
        &[
            "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "3",
        ],
    )?;
    link(ns, dev, 0x1, 0x2, 0x3, h.rate.unwrap_or(UNSHAPED_BPS))?;
    for (k, (dst, r)) in h.to.iter().enumerate() {
        let Some(j) = lab.host_index(dst) else {
            continue;
        };
        let (small, bulk) = (0x2000 + k, 0x3000 + k);
        link(ns, dev, 0x1000 + k, small, bulk, *r)?;
        let peer = format!("{}/32", lab.host_ip(j));
        filter(ns, dev, "1", Some((dir, &peer)), true, small)?;
        filter(ns, dev, "2", Some((dir, &peer)), false, bulk)?;
    }
    filter(ns, dev, "3", None, true, 0x2)
}

/// A link class `1:inner` at `rate` bits/s under the root, with its two
/// leaves: `1:small` (priority 0, a tenth of the rate assured) and
/// `1:bulk` (priority 1, the rest), each borrowing up to the rate, each a
/// FIFO of [`queue_bytes`].
fn link(
    ns: Option<&str>,
    dev: &str,
    inner: usize,
    small: usize,
    bulk: usize,
    rate: f64,
) -> Result<(), LabError> {
    let bits = |r: f64| format!("{}bit", r.round().max(8.0) as u64);
    let burst = burst_bytes(rate).to_string();
    let class = |parent: String, id: usize, assured: f64, prio: &str| {
        let id = format!("1:{id:x}");
        tc(
            ns,
            &[
                "class",
                "add",
                "dev",
                dev,
                "parent",
                &parent,
                "classid",
                &id,
                "htb",
                "rate",
                &bits(assured),
                "ceil",
                &bits(rate),
                "burst",
                &burst,
                "cburst",
                &burst,
                "quantum",
                &burst,
                "prio",
                prio,
            ],
        )
    };
    class("1:".into(), inner, rate, "0")?;
    let parent = format!("1:{inner:x}");
    class(parent.clone(), small, rate / 10.0, "0")?;
    class(parent, bulk, rate * 0.9, "1")?;
    let limit = queue_bytes(rate).to_string();
    for leaf in [small, bulk] {
        tc(
            ns,
            &[
                "qdisc",
                "add",
                "dev",
                dev,
                "parent",
                &format!("1:{leaf:x}"),
                "bfifo",
                "limit",
                &limit,
            ],
        )?;
    }
    Ok(())
}

/// A u32 filter at `prio` (lower first) sending to class `1:to` the IPv4
/// packets to or from `peer` (`(dir, address)`; None: any), and with
/// `small` only those below [`SMALL_PACKET_BYTES`].
fn filter(
    ns: Option<&str>,
    dev: &str,
    prio: &str,
    peer: Option<(&str, &str)>,
    small: bool,
    to: usize,
) -> Result<(), LabError> {
    let flow = format!("1:{to:x}");
    let mask = format!("0x{:04x}", !(SMALL_PACKET_BYTES - 1));
    let mut a = vec![
        "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", prio, "u32",
    ];
    if let Some((dir, addr)) = peer {
        a.extend_from_slice(&["match", "ip", dir, addr]);
    }
    if small {
        // IPv4's total length (bytes 2-3) below SMALL_PACKET_BYTES.
        a.extend_from_slice(&["match", "u16", "0x0000", &mask, "at", "2"]);
    }
    a.extend_from_slice(&["flowid", &flow]);
    tc(ns, &a).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::burst_bytes;

    #[test]
    fn queues_hold_fifty_milliseconds() {
        assert_eq!(super::queue_bytes(1e9), 6_250_000);
        assert_eq!(super::queue_bytes(100e6), 625_000);
        assert_eq!(super::queue_bytes(1e6), 64 * 1024);
    }

    #[test]
    fn bursts_stay_small() {
        assert_eq!(burst_bytes(1e9), 32_751);
        assert_eq!(burst_bytes(200e6), 16 * 1024);
        assert!(burst_bytes(10e9) > 300_000);
    }
}
