//! Whether a profile's figures are physical: each pair's times and
//! bandwidths, each node's CPU weight, shifts, reuse curve and disk
//! ([`super::ClusterProfile::validate`]).

use super::{COLD_BYTES, MAX_BANDWIDTH_BPS, MAX_TIME_S, NodeCost, PairCost, ReusePoint};

/// `Ok` for a finite time in [0, [`MAX_TIME_S`]]; else why not.
fn plausible_time(x: f64) -> Result<(), String> {
    if !x.is_finite() || x < 0.0 {
        Err("is not a finite non-negative time".into())
    } else if x > MAX_TIME_S {
        Err(format!("is implausible (above {MAX_TIME_S} s)"))
    } else {
        Ok(())
    }
}

/// One pair's costs are plausible times ([`MAX_TIME_S`]) and bandwidths
/// ([`MAX_BANDWIDTH_BPS`]), its segments in order.
pub(super) fn validate_pair(c: &PairCost) -> Result<(), String> {
    for (name, x) in [
        ("latency_s", c.latency_s),
        ("per_byte_s", c.per_byte_s),
        ("o_send_s", c.o_send_s),
        ("o_recv_s", c.o_recv_s),
        ("rtt_small_s", c.rtt_small_s),
    ] {
        plausible_time(x).map_err(|e| format!("{name} = {x} s {e}"))?;
    }
    if c.per_byte_s < 1.0 / MAX_BANDWIDTH_BPS {
        return Err(format!(
            "per_byte_s = {} s/B is {:.3e} B/s, above any memory bandwidth ({MAX_BANDWIDTH_BPS:.0e} B/s)",
            c.per_byte_s,
            1.0 / c.per_byte_s
        ));
    }
    if !(c.bandwidth_bps.is_finite() && c.bandwidth_bps <= MAX_BANDWIDTH_BPS)
        || c.bandwidth_bps < 0.0
    {
        return Err(format!(
            "bandwidth_bps = {} is not a bandwidth between 0 and {MAX_BANDWIDTH_BPS:.0e} B/s",
            c.bandwidth_bps
        ));
    }
    if !(c.bandwidth_cold_bps.is_finite()
        && (0.0..=MAX_BANDWIDTH_BPS).contains(&c.bandwidth_cold_bps))
    {
        return Err(format!(
            "bandwidth_cold_bps = {} is not a bandwidth between 0 and {MAX_BANDWIDTH_BPS:.0e} B/s",
            c.bandwidth_cold_bps
        ));
    }
    let mut last = 0;
    for m in &c.moves {
        if m.bytes <= last {
            return Err(format!(
                "moves: {} B is not above the size before it ({last} B)",
                m.bytes
            ));
        }
        last = m.bytes;
        plausible_time(m.one_way_s)
            .map_err(|e| format!("moves at {} B: one_way_s {e}", m.bytes))?;
    }
    if let Some(d) = c.direct_copy_bps
        && !(d.is_finite() && d > 0.0 && d <= MAX_BANDWIDTH_BPS)
    {
        return Err(format!(
            "direct_copy_bps = {d} is not a bandwidth above 0 and at most {MAX_BANDWIDTH_BPS:.0e} B/s"
        ));
    }
    for (name, v) in [
        ("send_buffer_bytes", c.send_buffer_bytes),
        ("send_buffer_first_bytes", c.send_buffer_first_bytes),
    ] {
        if let Some(b) = v
            && b > COLD_BYTES as u64
        {
            return Err(format!(
                "{name} = {b} is more than the {COLD_BYTES}-byte message it is measured on"
            ));
        }
    }
    let mut last: Option<(f64, u64)> = None;
    for x in &c.exchange {
        let at = format!("exchange at gap {} s, {} B", x.gap_s, x.bytes);
        plausible_time(x.gap_s).map_err(|e| format!("{at}: gap_s {e}"))?;
        plausible_time(x.one_way.p50).map_err(|e| format!("{at}: one_way.p50 {e}"))?;
        if let Some((g, b)) = last
            && (x.gap_s < g || (x.gap_s == g && x.bytes <= b))
        {
            return Err(format!(
                "{at}: does not follow gap {g} s, {b} B (gaps increasing, each by increasing bytes)"
            ));
        }
        last = Some((x.gap_s, x.bytes));
    }
    let mut last = 0u64;
    for x in &c.send_by_size {
        let at = format!("send_by_size at {} B", x.bytes);
        plausible_time(x.o_send_s).map_err(|e| format!("{at}: o_send_s {e}"))?;
        if x.bytes <= last {
            return Err(format!(
                "{at}: does not follow {last} B (bytes increasing, above 0)"
            ));
        }
        if let Some(e) = c.eager_limit_bytes
            && x.bytes > e
        {
            return Err(format!("{at}: above the pair's eager limit ({e} B)"));
        }
        last = x.bytes;
    }
    for w in c.segments.windows(2) {
        if w[1].from_bytes < w[0].to_bytes.min(w[0].from_bytes.max(1)) {
            return Err("segments out of order".into());
        }
    }
    for g in &c.segments {
        for (name, x) in [("base_s", g.base_s), ("per_byte_s", g.per_byte_s)] {
            plausible_time(x)
                .map_err(|e| format!("segment from {} B: {name} = {x} s {e}", g.from_bytes))?;
        }
    }
    Ok(())
}

/// `reuse_by` is grouped by increasing working set, each by increasing
/// `reuse_s`, with plausible costs.
fn validate_reuse(pts: &[ReusePoint]) -> Result<(), String> {
    let mut last: Option<(u64, f64)> = None;
    for pt in pts {
        let at = format!("reuse_by at {} B, {} s", pt.ws_bytes, pt.reuse_s);
        if pt.ws_bytes == 0 {
            return Err(format!("{at}: ws_bytes is 0"));
        }
        if !(pt.reuse_s.is_finite() && pt.reuse_s > 0.0 && pt.reuse_s <= MAX_TIME_S) {
            return Err(format!(
                "{at}: reuse_s is not a time in (0, {MAX_TIME_S}] s"
            ));
        }
        if let Some((ws, r)) = last
            && (pt.ws_bytes < ws || (pt.ws_bytes == ws && pt.reuse_s <= r))
        {
            return Err(format!(
                "{at}: does not follow {ws} B, {r} s (working sets increasing, each by increasing reuse_s)"
            ));
        }
        last = Some((pt.ws_bytes, pt.reuse_s));
        let [lo, hi] = pt.rel_ci95;
        let ok = |x: f64| x.is_finite() && (1e-3..=1e3).contains(&x);
        if !(ok(pt.rel) && ok(lo) && ok(hi) && lo <= pt.rel && pt.rel <= hi) {
            return Err(format!(
                "{at}: rel = {} with rel_ci95 [{lo}, {hi}] is not a ratio of costs inside its interval",
                pt.rel
            ));
        }
        let x = pt.per_byte.p50;
        if !(x.is_finite() && (1.0 / MAX_BANDWIDTH_BPS..=MAX_TIME_S).contains(&x)) {
            return Err(format!(
                "{at}: per_byte p50 = {x} s/B is not a sweep's cost a byte"
            ));
        }
    }
    Ok(())
}

/// A node's CPU weight and disk figures are plausible.
pub(super) fn validate_node(nd: &NodeCost) -> Result<(), String> {
    if !(nd.cpu_weight.is_finite() && nd.cpu_weight > 0.0 && nd.cpu_weight <= 1e6) {
        return Err(format!(
            "cpu_weight = {} is not a relative CPU power in (0, 1e6]",
            nd.cpu_weight
        ));
    }
    let mut last = 0;
    for pt in &nd.shift_by {
        if pt.distance_bytes <= last {
            return Err(format!(
                "shift_by: distance_bytes {} does not follow {last} in increasing order",
                pt.distance_bytes
            ));
        }
        last = pt.distance_bytes;
        let x = pt.per_byte.p50;
        if !(x.is_finite() && (1.0 / MAX_BANDWIDTH_BPS..=MAX_TIME_S).contains(&x)) {
            return Err(format!(
                "shift_by at {} B: per_byte p50 = {x} s/B is not a copy's cost a byte",
                pt.distance_bytes
            ));
        }
    }
    validate_reuse(&nd.reuse_by)?;
    let Some(dk) = &nd.disk else {
        return Ok(());
    };
    for (name, x) in [
        ("read_overhead_s", dk.read_overhead_s),
        ("write_overhead_s", dk.write_overhead_s),
        ("read_per_byte_s", dk.read_per_byte_s),
        ("write_per_byte_s", dk.write_per_byte_s),
    ] {
        plausible_time(x).map_err(|e| format!("disk {name} = {x} s {e}"))?;
    }
    for (name, x) in [
        ("read_per_byte_s", dk.read_per_byte_s),
        ("write_per_byte_s", dk.write_per_byte_s),
    ] {
        // 0 is what the fit gives when per-byte cost was not resolved; a
        // positive figure must be a real bandwidth.
        if x > 0.0 && x < 1.0 / MAX_BANDWIDTH_BPS {
            return Err(format!(
                "disk {name} = {x} s/B is {:.3e} B/s, above any memory bandwidth ({MAX_BANDWIDTH_BPS:.0e} B/s)",
                1.0 / x
            ));
        }
    }
    Ok(())
}
