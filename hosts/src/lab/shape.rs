//! Shaping a host's link (`tbf` at its rate, or `htb` with a class per
//! destination) and choosing its namespace's TCP congestion control.

use super::{LabError, sh, tc};
use crate::spec::Lab;

/// The bucket of a tbf or htb class at `rate` bits/s: about 260 µs of
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

/// Shape one end of host `i`'s link: `dir` is `dst` on the host's side
/// (the peer is the packet's destination) and `src` on the root side.
pub(super) fn shape(
    lab: &Lab,
    i: usize,
    ns: Option<&str>,
    dev: &str,
    dir: &str,
) -> Result<(), LabError> {
    let h = &lab.hosts[i];
    let rate_arg = |r: f64| format!("{}bit", r.round() as u64);
    if h.to.is_empty() {
        if let Some(r) = h.rate {
            let burst = burst_bytes(r).to_string();
            tc(
                ns,
                &[
                    "qdisc",
                    "replace",
                    "dev",
                    dev,
                    "root",
                    "tbf",
                    "rate",
                    &rate_arg(r),
                    "burst",
                    &burst,
                    "latency",
                    "50ms",
                ],
            )?;
        }
        return Ok(());
    }
    // htb: class 1:1 the host's rate (or unshaped), 1:(10+k) per destination.
    let base = h.rate.unwrap_or(100e9);
    tc(
        ns,
        &[
            "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "1",
        ],
    )?;
    let class = |id: &str, r: f64| -> Result<(), LabError> {
        let burst = burst_bytes(r).to_string();
        tc(
            ns,
            &[
                "class",
                "add",
                "dev",
                dev,
                "parent",
                "1:",
                "classid",
                id,
                "htb",
                "rate",
                &rate_arg(r),
                "ceil",
                &rate_arg(r),
                "burst",
                &burst,
                "cburst",
                &burst,
            ],
        )?;
        Ok(())
    };
    class("1:1", base)?;
    for (k, (dst, r)) in h.to.iter().enumerate() {
        let Some(j) = lab.host_index(dst) else {
            continue;
        };
        let id = format!("1:{}", 10 + k);
        class(&id, *r)?;
        let peer = format!("{}/32", lab.host_ip(j));
        tc(
            ns,
            &[
                "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1", "u32",
                "match", "ip", dir, &peer, "flowid", &id,
            ],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::burst_bytes;

    #[test]
    fn bursts_stay_small() {
        assert_eq!(burst_bytes(1e9), 32_751);
        assert_eq!(burst_bytes(200e6), 16 * 1024);
        assert!(burst_bytes(10e9) > 300_000);
    }
}
